//! kubectl's JSONPath templates (`-o jsonpath=...`, `wait --for=jsonpath=...`,
//! `-o custom-columns=...`): text with `{...}` expressions — fields `.a.b` and `['a']`,
//! indexes and slices `[0]`, `[-1]`, `[1:3]`, `[*]`, unions `[0,2]`, recursive descent `..name`,
//! filters `[?(@.type=="Ready")]` (`==`, `!=`, `<`, `<=`, `>`, `>=`, or a path alone for
//! "exists"), quoted literals `{"\n"}`, and `{range ...}...{end}` loops. As kubectl prints
//! results: strings bare, other values as compact JSON, several results of one expression
//! separated by spaces.

use serde_json::Value;

/// Why a template does not parse or cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    /// The template is malformed.
    #[error("error parsing jsonpath {template:?}: {problem}")]
    Parse {
        /// The template.
        template: String,
        /// What is wrong.
        problem: String,
    },
    /// A field the template names is missing (only when missing keys are not allowed).
    #[error("{0} is not found")]
    NotFound(String),
}

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// `.name` or `['name']`.
    Field(String),
    /// `.*` or `[*]`.
    Wildcard,
    /// `..name` (or `..*`): every descendant's field.
    Descend(Option<String>),
    /// `[i]`, `[a:b]`, `[a:b:s]`.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
        single: bool,
    },
    /// `[a,b]`: several fields or indexes.
    Union(Vec<Step>),
    /// `[?(...)]`.
    Filter(Filter),
}

/// A filter's test.
#[derive(Clone, Debug, PartialEq)]
struct Filter {
    left: Operand,
    comparison: Option<(Comparison, Operand)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Operand {
    Path(Path),
    Literal(Value),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A path: from the root (`$`) or the current element (`@`, or a leading `.`: inside a
/// `range` the item, elsewhere the root).
#[derive(Clone, Debug, PartialEq)]
struct Path {
    current: bool,
    steps: Vec<Step>,
}

/// A parsed template.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Text(String),
    Expr(Path),
    Range(Path, Vec<Node>),
}

/// A parsed JSONPath template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    nodes: Vec<Node>,
    allow_missing: bool,
}

impl Template {
    /// Parses a template (`{.metadata.name}`, `{range .items[*]}{.metadata.name}{"\n"}{end}`).
    /// A missing field yields nothing, as `kubectl get` (allow-missing-template-keys).
    pub fn parse(source: &str) -> Result<Self, JsonPathError> {
        let err = |problem: String| JsonPathError::Parse {
            template: source.to_string(),
            problem,
        };
        let mut stack: Vec<(Option<Path>, Vec<Node>)> = vec![(None, Vec::new())];
        let mut rest = source;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                stack
                    .last_mut()
                    .expect("root")
                    .1
                    .push(Node::Text(rest.to_string()));
                break;
            };
            if open > 0 {
                let text = rest[..open].to_string();
                stack.last_mut().expect("root").1.push(Node::Text(text));
            }
            let close =
                matching_close(&rest[open..]).ok_or_else(|| err("unclosed action".into()))?;
            let inner = rest[open + 1..open + close].trim();
            rest = &rest[open + close + 1..];
            if inner == "end" {
                if stack.len() == 1 {
                    return Err(err("{end} without a {range}".into()));
                }
                let (path, body) = stack.pop().expect("a range");
                let path = path.expect("ranges have a path");
                stack
                    .last_mut()
                    .expect("root")
                    .1
                    .push(Node::Range(path, body));
            } else if let Some(path) = inner.strip_prefix("range ") {
                let path = parse_path(path.trim()).map_err(err)?;
                stack.push((Some(path), Vec::new()));
            } else if let Some(text) = quoted(inner) {
                stack
                    .last_mut()
                    .expect("root")
                    .1
                    .push(Node::Text(text.map_err(err)?));
            } else {
                let path = parse_path(inner).map_err(err)?;
                stack.last_mut().expect("root").1.push(Node::Expr(path));
            }
        }
        if stack.len() != 1 {
            return Err(err("{range} without an {end}".into()));
        }
        Ok(Template {
            nodes: stack.pop().expect("root").1,
            allow_missing: true,
        })
    }

    /// The same template, failing on a missing field (`wait --for=jsonpath`).
    pub fn strict(mut self) -> Self {
        self.allow_missing = false;
        self
    }

    /// The text of the template over `data`.
    pub fn render(&self, data: &Value) -> Result<String, JsonPathError> {
        let mut out = String::new();
        self.render_nodes(&self.nodes, data, data, &mut out)?;
        Ok(out)
    }

    /// The values of a template that is a single expression (`{.status.phase}`), for
    /// comparisons; text parts count as string values.
    pub fn values(&self, data: &Value) -> Result<Vec<Value>, JsonPathError> {
        let mut values = Vec::new();
        for node in &self.nodes {
            match node {
                Node::Text(t) => values.push(Value::String(t.clone())),
                Node::Expr(path) => values.extend(self.eval(path, data, data)?),
                Node::Range(..) => {
                    values.push(Value::String(self.render(data)?));
                    return Ok(values);
                }
            }
        }
        Ok(values)
    }

    fn render_nodes(
        &self,
        nodes: &[Node],
        root: &Value,
        current: &Value,
        out: &mut String,
    ) -> Result<(), JsonPathError> {
        for node in nodes {
            match node {
                Node::Text(t) => out.push_str(t),
                Node::Expr(path) => {
                    let values = self.eval(path, root, current)?;
                    let texts: Vec<String> = values.iter().map(value_text).collect();
                    out.push_str(&texts.join(" "));
                }
                Node::Range(path, body) => {
                    for value in self.eval(path, root, current)? {
                        self.render_nodes(body, root, &value, out)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn eval(
        &self,
        path: &Path,
        root: &Value,
        current: &Value,
    ) -> Result<Vec<Value>, JsonPathError> {
        let start = if path.current { current } else { root };
        let mut values = vec![start.clone()];
        for step in &path.steps {
            let mut next = Vec::new();
            for value in &values {
                apply(step, value, root, &mut next);
            }
            if next.is_empty() && !matches!(step, Step::Filter(_) | Step::Wildcard) {
                if self.allow_missing {
                    return Ok(Vec::new());
                }
                return Err(JsonPathError::NotFound(step_name(step)));
            }
            values = next;
        }
        Ok(values)
    }
}

fn step_name(step: &Step) -> String {
    match step {
        Step::Field(name) => name.clone(),
        Step::Descend(Some(name)) => name.clone(),
        _ => "array index".to_string(),
    }
}

/// A result as kubectl prints it: a string bare, anything else as compact JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Applies one step to a value, adding what it selects to `out`.
fn apply(step: &Step, value: &Value, root: &Value, out: &mut Vec<Value>) {
    match step {
        Step::Field(name) => {
            if let Some(v) = value.get(name) {
                out.push(v.clone());
            }
        }
        Step::Wildcard => match value {
            Value::Array(items) => out.extend(items.iter().cloned()),
            Value::Object(map) => out.extend(map.values().cloned()),
            _ => {}
        },
        Step::Descend(name) => descend(value, name.as_deref(), out),
        Step::Slice {
            start,
            end,
            step,
            single,
        } => {
            let Value::Array(items) = value else { return };
            let len = items.len() as i64;
            let at = |i: i64| if i < 0 { (len + i).max(0) } else { i.min(len) };
            if *single {
                let i = start.unwrap_or(0);
                let i = if i < 0 { len + i } else { i };
                if (0..len).contains(&i) {
                    out.push(items[i as usize].clone());
                }
                return;
            }
            let (from, to) = (at(start.unwrap_or(0)), at(end.unwrap_or(len)));
            let step = step.unwrap_or(1).max(1) as usize;
            if from < to {
                out.extend(
                    items[from as usize..to as usize]
                        .iter()
                        .step_by(step)
                        .cloned(),
                );
            }
        }
        Step::Union(steps) => {
            for s in steps {
                apply(s, value, root, out);
            }
        }
        Step::Filter(filter) => {
            let Value::Array(items) = value else { return };
            for item in items {
                if filter_holds(filter, item, root) {
                    out.push(item.clone());
                }
            }
        }
    }
}

fn descend(value: &Value, name: Option<&str>, out: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            match name {
                Some(name) => {
                    if let Some(v) = map.get(name) {
                        out.push(v.clone());
                    }
                }
                None => out.extend(map.values().cloned()),
            }
            for v in map.values() {
                descend(v, name, out);
            }
        }
        Value::Array(items) => {
            if name.is_none() {
                out.extend(items.iter().cloned());
            }
            for v in items {
                descend(v, name, out);
            }
        }
        _ => {}
    }
}

fn operand_value(operand: &Operand, item: &Value, root: &Value) -> Option<Value> {
    match operand {
        Operand::Literal(v) => Some(v.clone()),
        Operand::Path(path) => {
            let template = Template {
                nodes: Vec::new(),
                allow_missing: true,
            };
            template
                .eval(path, root, item)
                .ok()
                .and_then(|values| values.into_iter().next())
        }
    }
}

fn filter_holds(filter: &Filter, item: &Value, root: &Value) -> bool {
    let left = operand_value(&filter.left, item, root);
    let Some((comparison, right)) = &filter.comparison else {
        return left.is_some();
    };
    let (Some(left), Some(right)) = (left, operand_value(right, item, root)) else {
        return false;
    };
    let ordering = match (&left, &right) {
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match comparison {
        Comparison::Eq => left == right,
        Comparison::Ne => left != right,
        Comparison::Lt => ordering == Some(std::cmp::Ordering::Less),
        Comparison::Le => ordering.is_some_and(|o| o != std::cmp::Ordering::Greater),
        Comparison::Gt => ordering == Some(std::cmp::Ordering::Greater),
        Comparison::Ge => ordering.is_some_and(|o| o != std::cmp::Ordering::Less),
    }
}

/// The length of an action from its `{` to its matching `}`, skipping quoted text.
fn matching_close(text: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '}' => return Some(i),
            _ => {}
        }
    }
    None
}

/// A quoted literal action (`"\n"`, `'x'`), with Go's escapes; `None` if not quoted.
fn quoted(inner: &str) -> Option<Result<String, String>> {
    let first = inner.chars().next()?;
    if !matches!(first, '"' | '\'') || inner.len() < 2 || !inner.ends_with(first) {
        return None;
    }
    let body = &inner[1..inner.len() - 1];
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(c @ ('\\' | '"' | '\'')) => out.push(c),
            Some(other) => return Some(Err(format!("unknown escape sequence \\{other}"))),
            None => return Some(Err("unterminated escape".into())),
        }
    }
    Some(Ok(out))
}

/// Parses a path: `.a.b[0]`, `$.a`, `@.a`, `a.b` (a bare first field), `..name`.
fn parse_path(text: &str) -> Result<Path, String> {
    let mut chars = text.trim();
    // Paths are relative to the current element (inside `range`, the item), `$` to the root.
    let mut current = true;
    if let Some(rest) = chars.strip_prefix('@') {
        chars = rest;
    } else if let Some(rest) = chars.strip_prefix('$') {
        current = false;
        chars = rest;
    }
    let mut steps = Vec::new();
    let bytes: Vec<char> = chars.chars().collect();
    let mut i = 0;
    let ident_end = |from: usize| {
        let mut j = from;
        while j < bytes.len() && !matches!(bytes[j], '.' | '[') {
            j += 1;
        }
        j
    };
    if i < bytes.len() && !matches!(bytes[i], '.' | '[') {
        // kubectl accepts `{metadata.name}` as `{.metadata.name}`.
        let j = ident_end(i);
        steps.push(Step::Field(bytes[i..j].iter().collect()));
        i = j;
    }
    while i < bytes.len() {
        match bytes[i] {
            '.' if bytes.get(i + 1) == Some(&'.') => {
                let j = ident_end(i + 2);
                let name: String = bytes[i + 2..j].iter().collect();
                steps.push(Step::Descend(
                    (!name.is_empty() && name != "*").then_some(name),
                ));
                i = j;
            }
            '.' => {
                let j = ident_end(i + 1);
                let name: String = bytes[i + 1..j].iter().collect();
                if name.is_empty() {
                    if j == bytes.len() && steps.is_empty() {
                        // `{.}`: the whole object.
                        i = j;
                        continue;
                    }
                    return Err(format!("empty field name in {text:?}"));
                }
                steps.push(if name == "*" {
                    Step::Wildcard
                } else {
                    Step::Field(name)
                });
                i = j;
            }
            '[' => {
                let close =
                    bracket_end(&bytes, i).ok_or_else(|| format!("unclosed [ in {text:?}"))?;
                let inner: String = bytes[i + 1..close].iter().collect();
                steps.push(parse_bracket(inner.trim())?);
                i = close + 1;
            }
            c => return Err(format!("unexpected {c:?} in {text:?}")),
        }
    }
    Ok(Path { current, steps })
}

/// The index of the `]` closing the `[` at `open`, skipping quotes and nested brackets.
fn bracket_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '(' => depth += 1,
            ']' | ')' => {
                depth -= 1;
                if depth == 0 && c == ']' {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_bracket(inner: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::Wildcard);
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        return Ok(Step::Filter(parse_filter(filter.trim())?));
    }
    let parts = split_top(inner, ',');
    if parts.len() > 1 {
        return parts
            .iter()
            .map(|p| parse_bracket(p.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(Step::Union);
    }
    if let Some(Ok(name)) = quoted(inner) {
        return Ok(Step::Field(name));
    }
    let number = |s: &str| -> Result<Option<i64>, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        s.parse()
            .map(Some)
            .map_err(|_| format!("invalid array index {s:?}"))
    };
    let pieces: Vec<&str> = inner.split(':').collect();
    match pieces.as_slice() {
        [one] => Ok(Step::Slice {
            start: number(one)?,
            end: None,
            step: None,
            single: true,
        }),
        [a, b] => Ok(Step::Slice {
            start: number(a)?,
            end: number(b)?,
            step: None,
            single: false,
        }),
        [a, b, c] => Ok(Step::Slice {
            start: number(a)?,
            end: number(b)?,
            step: number(c)?,
            single: false,
        }),
        _ => Err(format!("invalid array index {inner:?}")),
    }
}

/// Splits on `sep` outside quotes.
fn split_top(text: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == sep => {
                parts.push(String::new());
                continue;
            }
            None => {}
        }
        parts.last_mut().expect("one part").push(c);
    }
    parts
}

fn parse_filter(text: &str) -> Result<Filter, String> {
    for (token, comparison) in [
        ("==", Comparison::Eq),
        ("!=", Comparison::Ne),
        ("<=", Comparison::Le),
        (">=", Comparison::Ge),
        ("<", Comparison::Lt),
        (">", Comparison::Gt),
    ] {
        if let Some((left, right)) = split_operator(text, token) {
            return Ok(Filter {
                left: parse_operand(&left)?,
                comparison: Some((comparison, parse_operand(&right)?)),
            });
        }
    }
    Ok(Filter {
        left: parse_operand(text)?,
        comparison: None,
    })
}

/// Splits `text` at the first `token` outside quotes.
fn split_operator(text: &str, token: &str) -> Option<(String, String)> {
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if text[i..].starts_with(token) => {
                return Some((text[..i].to_string(), text[i + token.len()..].to_string()));
            }
            None => {}
        }
    }
    None
}

fn parse_operand(text: &str) -> Result<Operand, String> {
    let text = text.trim();
    if let Some(literal) = quoted(text) {
        return Ok(Operand::Literal(Value::String(literal?)));
    }
    if text.starts_with('@') || text.starts_with('$') || text.starts_with('.') {
        return parse_path(text).map(Operand::Path);
    }
    match text {
        "true" => return Ok(Operand::Literal(Value::Bool(true))),
        "false" => return Ok(Operand::Literal(Value::Bool(false))),
        "nil" | "null" => return Ok(Operand::Literal(Value::Null)),
        _ => {}
    }
    serde_json::from_str::<serde_json::Number>(text)
        .map(|n| Operand::Literal(Value::Number(n)))
        .map_err(|_| format!("unrecognized filter operand {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Value {
        serde_json::json!({
            "kind": "List",
            "items": [
                {"metadata": {"name": "web", "labels": {"app": "web"}},
                 "spec": {"nodeName": "n1", "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]},
                 "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}},
                {"metadata": {"name": "db"},
                 "spec": {"priority": 10, "containers": [{"name": "c", "image": "postgres"}]},
                 "status": {"phase": "Pending"}}
            ]
        })
    }

    #[test]
    fn templates_print_as_kubectl() {
        let cases = [
            ("{.kind}", "List"),
            ("{.items[*].metadata.name}", "web db"),
            ("{.items[0].metadata.name}", "web"),
            ("{.items[-1].metadata.name}", "db"),
            ("{.items[0:1].metadata.name}", "web"),
            ("{items[1].status.phase}", "Pending"),
            ("{.items[0].metadata.labels}", "{\"app\":\"web\"}"),
            ("{.items[0].metadata['labels']['app']}", "web"),
            (
                "{.items[*].spec.containers[*].image}",
                "nginx redis postgres",
            ),
            ("{..image}", "nginx redis postgres"),
            (
                "{.items[?(@.status.phase==\"Running\")].metadata.name}",
                "web",
            ),
            ("{.items[?(@.status.phase!='Running')].metadata.name}", "db"),
            ("{.items[?(@.spec.priority>5)].metadata.name}", "db"),
            ("{.items[?(@.spec.nodeName)].metadata.name}", "web"),
            (
                "{.items[0].status.conditions[?(@.type==\"Ready\")].status}",
                "True",
            ),
            (
                "{range .items[*]}{.metadata.name}{\"\\t\"}{.status.phase}{\"\\n\"}{end}",
                "web\tRunning\ndb\tPending\n",
            ),
            ("{range .items[*]}[{.metadata.name}]{end}", "[web][db]"),
            ("names: {.items[*].metadata.name}!", "names: web db!"),
            ("{.items[0].missing}", ""),
            ("{.items[0,1].metadata.name}", "web db"),
            (
                "{.items[0].spec.containers[*]['name','image']}",
                "a nginx b redis",
            ),
        ];
        for (template, want) in cases {
            let parsed = Template::parse(template).unwrap_or_else(|e| panic!("{template}: {e}"));
            assert_eq!(parsed.render(&data()).as_deref(), Ok(want), "{template}");
        }
    }

    #[test]
    fn bad_templates_and_missing_keys_are_errors() {
        for template in [
            "{.items[0]",
            "{range .items[*]}{.a}",
            "{end}",
            "{.items[x]}",
            "{\"\\q\"}",
        ] {
            assert!(
                Template::parse(template).is_err(),
                "{template} should not parse"
            );
        }
        let strict = Template::parse("{.items[0].missing}")
            .expect("parses")
            .strict();
        assert_eq!(
            strict.render(&data()),
            Err(JsonPathError::NotFound("missing".into()))
        );
    }
}
