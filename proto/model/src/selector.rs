//! Label selectors: matching the structured [`LabelSelector`], and parsing kubectl's `-l`
//! strings (`app=web,tier!=db,env in (a,b),!legacy`) into the same form.

use crate::model::{LabelSelector, LabelSelectorOperator, LabelSelectorRequirement, StringMap};

impl LabelSelector {
    /// Whether `labels` satisfy every matchLabels pair and every matchExpressions requirement.
    /// An empty selector matches everything.
    pub fn matches(&self, labels: &StringMap) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector has no requirement at all (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }
}

impl LabelSelectorRequirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &StringMap) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            LabelSelectorOperator::In => value.is_some_and(|v| self.values.contains(v)),
            LabelSelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            LabelSelectorOperator::Exists => value.is_some(),
            LabelSelectorOperator::DoesNotExist => value.is_none(),
        }
    }
}

/// Why a `-l` selector string does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {input:?}: {problem}")]
pub struct SelectorParseError {
    /// The selector text.
    pub input: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Parses kubectl's label selector syntax: comma-separated requirements, each one of
/// `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists) or `!k` (does not
/// exist). The empty string selects everything.
pub fn parse(input: &str) -> Result<LabelSelector, SelectorParseError> {
    let err = |problem: String| SelectorParseError {
        input: input.to_string(),
        problem,
    };
    let mut selector = LabelSelector::default();
    for part in split_top_level(input).map_err(err)? {
        let part = part.trim();
        if part.is_empty() {
            return Err(err("empty requirement".into()));
        }
        let requirement = parse_requirement(part).map_err(err)?;
        selector.match_expressions.push(requirement);
    }
    Ok(selector)
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(input: &str) -> Result<Vec<&str>, String> {
    if input.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1).ok_or("unbalanced ')'")?,
            ',' if depth == 0 => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced '('".into());
    }
    parts.push(&input[start..]);
    Ok(parts)
}

fn parse_requirement(part: &str) -> Result<LabelSelectorRequirement, String> {
    let req = |key: &str, operator, values: Vec<String>| -> Result<_, String> {
        let key = key.trim();
        check_key(key)?;
        for value in &values {
            crate::validate::validate_label_value(value)
                .map_err(|problems| format!("invalid value {value:?}: {}", problems.join("; ")))?;
        }
        Ok(LabelSelectorRequirement {
            key: key.to_string(),
            operator,
            values,
        })
    };
    if let Some(key) = part.strip_prefix('!') {
        return req(key, LabelSelectorOperator::DoesNotExist, vec![]);
    }
    if let Some((key, value)) = part.split_once("!=") {
        return req(
            key,
            LabelSelectorOperator::NotIn,
            vec![value.trim().to_string()],
        );
    }
    if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return req(
            key,
            LabelSelectorOperator::In,
            vec![value.trim().to_string()],
        );
    }
    if let Some(open) = part.find('(') {
        let head = part[..open].trim();
        let close = part.rfind(')').ok_or("missing ')'")?;
        if !part[close + 1..].trim().is_empty() {
            return Err(format!("unexpected text after ')' in {part:?}"));
        }
        let values: Vec<String> = part[open + 1..close]
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        let (key, op) = head
            .rsplit_once(char::is_whitespace)
            .ok_or_else(|| format!("expected `key in (...)` or `key notin (...)`, got {part:?}"))?;
        let operator = match op {
            "in" => LabelSelectorOperator::In,
            "notin" => LabelSelectorOperator::NotIn,
            other => return Err(format!("unknown operator {other:?}, expected in or notin")),
        };
        if values.is_empty() {
            return Err(format!("{part:?} needs at least one value"));
        }
        return req(key, operator, values);
    }
    req(part, LabelSelectorOperator::Exists, vec![])
}

fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("empty key".into());
    }
    crate::validate::validate_label_key(key)
        .map_err(|problems| format!("invalid key {key:?}: {}", problems.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::string_map;

    #[test]
    fn string_selectors_match_like_kubectl() {
        struct Case {
            selector: &'static str,
            labels: &'static [(&'static str, &'static str)],
            want: bool,
        }
        let cases = [
            Case {
                selector: "",
                labels: &[],
                want: true,
            },
            Case {
                selector: "app=web",
                labels: &[("app", "web")],
                want: true,
            },
            Case {
                selector: "app==web",
                labels: &[("app", "web")],
                want: true,
            },
            Case {
                selector: "app=web",
                labels: &[("app", "db")],
                want: false,
            },
            Case {
                selector: "app!=web",
                labels: &[],
                want: true,
            },
            Case {
                selector: "app!=web",
                labels: &[("app", "web")],
                want: false,
            },
            Case {
                selector: "env in (a, b)",
                labels: &[("env", "b")],
                want: true,
            },
            Case {
                selector: "env notin (a,b)",
                labels: &[("env", "c")],
                want: true,
            },
            Case {
                selector: "env notin (a,b)",
                labels: &[],
                want: true,
            },
            Case {
                selector: "legacy",
                labels: &[("legacy", "")],
                want: true,
            },
            Case {
                selector: "!legacy",
                labels: &[("legacy", "x")],
                want: false,
            },
            Case {
                selector: "app=web,!legacy",
                labels: &[("app", "web")],
                want: true,
            },
            Case {
                selector: "app=web,env in (a,b)",
                labels: &[("app", "web"), ("env", "c")],
                want: false,
            },
        ];
        for case in cases {
            let sel = parse(case.selector).unwrap_or_else(|e| panic!("{}: {e}", case.selector));
            assert_eq!(
                sel.matches(&string_map(case.labels)),
                case.want,
                "{}",
                case.selector
            );
        }
    }

    #[test]
    fn malformed_selectors_are_rejected() {
        for bad in [
            "app=web,",
            "env in (a",
            "env in ()",
            "env within (a)",
            "=x",
            "a b",
            " in ===",
            "app=a b",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
