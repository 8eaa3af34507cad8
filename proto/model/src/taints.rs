//! kubectl's taint syntax, parsed once for `berth taint` and the agent's
//! `--register-with-taints`: `key[=value]:Effect` adds a taint, `key[=value][:Effect]-`
//! removes one (every effect of the key when the effect is left out). The error texts are
//! kubectl's.

use crate::model::{Taint, TaintEffect};
use crate::validate::{validate_label_key, validate_label_value};

/// Why a taint spec is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaintSpecError {
    /// The spec is not `key[=value]:Effect`, or its key or value is not a valid label's.
    #[error("invalid taint spec: {spec}{}", .reason.as_deref().map(|r| format!(", {r}")).unwrap_or_default())]
    Invalid {
        /// The spec as written.
        spec: String,
        /// What is wrong, when more can be said.
        reason: Option<String>,
    },
    /// The effect is not NoSchedule, PreferNoSchedule or NoExecute.
    #[error("invalid taint effect: {effect}, unsupported taint effect")]
    Effect {
        /// The effect as written.
        effect: String,
    },
    /// Two taints share a key and an effect; Kubernetes requires the pair to be unique.
    #[error("duplicated taints with the same key and effect: {taint}")]
    Duplicate {
        /// The second of the two, as `key[=value]:Effect`.
        taint: String,
    },
}

/// A taint to remove: every effect of a key, or one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaintRemoval {
    /// The key.
    pub key: String,
    /// The effect; `None` removes the key's taints of every effect.
    pub effect: Option<TaintEffect>,
}

impl std::fmt::Display for TaintRemoval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.effect {
            Some(effect) => write!(f, "{}:{}", self.key, effect.as_str()),
            None => f.write_str(&self.key),
        }
    }
}

impl std::fmt::Display for Taint {
    /// `key=value:Effect`, or `key:Effect` without a value, as kubectl writes taints.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect.as_str())
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect.as_str())
        }
    }
}

impl std::str::FromStr for TaintEffect {
    type Err = TaintSpecError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "NoSchedule" => Ok(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Ok(TaintEffect::PreferNoSchedule),
            "NoExecute" => Ok(TaintEffect::NoExecute),
            _ => Err(TaintSpecError::Effect {
                effect: text.to_string(),
            }),
        }
    }
}

/// Splits `key[=value][:Effect]` and checks the key and value as label ones.
fn parse_parts(spec: &str) -> Result<(String, String, Option<TaintEffect>), TaintSpecError> {
    let invalid = |reason: Option<String>| TaintSpecError::Invalid {
        spec: spec.to_string(),
        reason,
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let (key_value, effect) = match parts[..] {
        [key_value] => (key_value, None),
        [key_value, effect] => (key_value, Some(effect.parse::<TaintEffect>()?)),
        _ => return Err(invalid(None)),
    };
    let (key, value) = match key_value.split('=').collect::<Vec<_>>()[..] {
        [key] => (key, ""),
        [key, value] => (key, value),
        _ => return Err(invalid(None)),
    };
    validate_label_key(key)
        .and_then(|()| validate_label_value(value))
        .map_err(|problems| invalid(Some(problems.join("; "))))?;
    Ok((key.to_string(), value.to_string(), effect))
}

/// Parses a taint to add, `key[=value]:Effect` (the effect is required).
pub fn parse_taint(spec: &str) -> Result<Taint, TaintSpecError> {
    let (key, value, effect) = parse_parts(spec)?;
    let Some(effect) = effect else {
        return Err(TaintSpecError::Invalid {
            spec: spec.to_string(),
            reason: Some("expected key=value:Effect or key:Effect".to_string()),
        });
    };
    Ok(Taint {
        key,
        value,
        effect,
        time_added: None,
    })
}

/// Checks that no two taints share a key and an effect.
pub fn check_unique(taints: &[Taint]) -> Result<(), TaintSpecError> {
    for (i, taint) in taints.iter().enumerate() {
        if taints[..i]
            .iter()
            .any(|t| t.key == taint.key && t.effect == taint.effect)
        {
            return Err(TaintSpecError::Duplicate {
                taint: taint.to_string(),
            });
        }
    }
    Ok(())
}

/// Parses kubectl's taint arguments into taints to add (unique by key and effect) and
/// taints to remove (those ending in `-`).
pub fn parse_taint_changes<S: AsRef<str>>(
    specs: &[S],
) -> Result<(Vec<Taint>, Vec<TaintRemoval>), TaintSpecError> {
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for spec in specs {
        let spec = spec.as_ref();
        match spec.strip_suffix('-') {
            Some(removal) => {
                let (key, _, effect) = parse_parts(removal)?;
                remove.push(TaintRemoval { key, effect });
            }
            None => add.push(parse_taint(spec)?),
        }
    }
    check_unique(&add)?;
    Ok((add, remove))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::taint;

    fn removal(key: &str, effect: Option<TaintEffect>) -> TaintRemoval {
        TaintRemoval {
            key: key.into(),
            effect,
        }
    }

    #[test]
    fn taint_specs_parse_like_kubectl() {
        use TaintEffect::*;
        type Want = Result<(Vec<Taint>, Vec<TaintRemoval>), &'static str>;
        let cases: Vec<(&str, &[&str], Want)> = vec![
            ("key=value:Effect", &["dedicated=gpu:NoSchedule"], Ok((vec![taint("dedicated", "gpu", NoSchedule)], vec![]))),
            ("key:Effect", &["spot:PreferNoSchedule"], Ok((vec![taint("spot", "", PreferNoSchedule)], vec![]))),
            ("empty value", &["k=:NoExecute"], Ok((vec![taint("k", "", NoExecute)], vec![]))),
            ("prefixed key", &["example.com/role=db:NoSchedule"], Ok((vec![taint("example.com/role", "db", NoSchedule)], vec![]))),
            ("removals", &["dedicated:NoSchedule-", "gpu-", "k=v-"], Ok((vec![], vec![removal("dedicated", Some(NoSchedule)), removal("gpu", None), removal("k", None)]))),
            ("no effect", &["dedicated=gpu"], Err("invalid taint spec: dedicated=gpu, expected key=value:Effect or key:Effect")),
            ("bad effect", &["k=v:Sometimes"], Err("invalid taint effect: Sometimes, unsupported taint effect")),
            ("bad effect in a removal", &["k:Sometimes-"], Err("invalid taint effect: Sometimes, unsupported taint effect")),
            ("two colons", &["a:b:c"], Err("invalid taint spec: a:b:c")),
            ("two equals", &["k=v=w:NoSchedule"], Err("invalid taint spec: k=v=w:NoSchedule")),
            ("empty key", &["=v:NoSchedule"], Err("invalid taint spec: =v:NoSchedule, name part must be non-empty")),
            ("bad key", &["bad key=v:NoSchedule"], Err("invalid taint spec: bad key=v:NoSchedule, name part must consist of alphanumeric")),
            ("bad value", &["k=a b:NoSchedule"], Err("invalid taint spec: k=a b:NoSchedule, a valid label must be")),
            ("uppercase prefix", &["Example.com/k:NoSchedule"], Err("prefix part a lowercase RFC 1123 subdomain")),
            ("duplicate", &["k=a:NoSchedule", "k=b:NoSchedule"], Err("duplicated taints with the same key and effect: k=b:NoSchedule")),
            ("same key, other effect", &["k=a:NoSchedule", "k=a:NoExecute"], Ok((vec![taint("k", "a", NoSchedule), taint("k", "a", NoExecute)], vec![]))),
        ];
        for (name, specs, want) in cases {
            match (parse_taint_changes(specs), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}
