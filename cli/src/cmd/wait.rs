//! `berth wait --for=condition=Ready[=true] | delete | create | jsonpath='{...}'=VALUE
//! KIND/NAME... [-l SELECTOR] [--timeout 30s]`: waits, through a watch, until every object
//! meets the condition, printing `pod/web condition met` for each, as kubectl does; past the
//! timeout it fails with `timed out waiting for the condition on pods/web`.

use std::time::{Duration, Instant};

use anyhow::bail;
use berth_proto::model::{Kind, Object};
use clap::Args;
use serde_json::Value;

use super::{object_ref, parse_targets, Context, Targets};
use crate::client::WatchEventType;
use crate::jsonpath::Template;
use crate::output::object_value;
use crate::progress::{Progress, REDRAW};

/// Flags of `berth wait`.
#[derive(Args, Debug, Clone)]
pub struct WaitArgs {
    /// The objects: `TYPE/NAME...`, `TYPE NAME...`, or `TYPE` with `-l` or `--all`.
    #[arg(required = true, value_name = "TYPE/NAME")]
    pub resources: Vec<String>,
    /// What to wait for: `condition=TYPE[=STATUS]`, `delete`, `create` or
    /// `jsonpath={PATH}[=VALUE]`.
    #[arg(long = "for", required = true, value_name = "CONDITION")]
    pub condition: String,
    /// Give up after this long (`0s`: check once); default 30s.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub timeout: Duration,
    /// Label selector of the objects.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Every object of the type.
    #[arg(long)]
    pub all: bool,
    /// In every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

/// A parsed `--for`.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// `condition=TYPE[=STATUS]`: status.conditions has TYPE with STATUS (case-insensitive).
    Condition {
        /// The condition type.
        type_: String,
        /// The wanted status (`true` when left out).
        status: String,
    },
    /// `delete`: the object is gone.
    Delete,
    /// `create`: the object exists.
    Create,
    /// `jsonpath={...}[=VALUE]`: the path has VALUE (or, without one, exists).
    JsonPath {
        /// The template as given.
        template: String,
        /// The wanted value.
        value: Option<String>,
    },
}

impl Condition {
    /// Parses `--for` as kubectl does.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        if text.eq_ignore_ascii_case("delete") {
            return Ok(Condition::Delete);
        }
        if text.eq_ignore_ascii_case("create") {
            return Ok(Condition::Create);
        }
        if let Some(rest) = text.strip_prefix("condition=") {
            let (type_, status) = match rest.split_once('=') {
                Some((t, s)) => (t, s),
                None => (rest, "true"),
            };
            if type_.is_empty() {
                bail!("condition name cannot be empty");
            }
            return Ok(Condition::Condition {
                type_: type_.to_string(),
                status: status.to_string(),
            });
        }
        if let Some(rest) = text.strip_prefix("jsonpath=") {
            // The path is `{...}` (braces optional); `=VALUE` follows its closing brace.
            let (template, value) = match rest.rfind('}') {
                Some(close) => {
                    let value = rest[close + 1..].strip_prefix('=').map(str::to_string);
                    if !rest[close + 1..].is_empty() && value.is_none() {
                        bail!("jsonpath wait format must be --for=jsonpath='{{.status.readyReplicas}}'=3 or --for=jsonpath='{{.status.readyReplicas}}'");
                    }
                    (rest[..=close].to_string(), value)
                }
                None if rest.starts_with('{') => bail!("unclosed {{ in jsonpath {rest:?}"),
                None => match rest.split_once('=') {
                    Some((p, v)) => (format!("{{{p}}}"), Some(v.to_string())),
                    None => (format!("{{{rest}}}"), None),
                },
            };
            Template::parse(&template)?;
            return Ok(Condition::JsonPath { template, value });
        }
        bail!("unrecognized condition: {text:?}")
    }

    /// Whether `object` (None: it does not exist) meets the condition.
    pub fn met(&self, object: Option<&Object>) -> anyhow::Result<bool> {
        let Some(object) = object else {
            return Ok(*self == Condition::Delete);
        };
        let value = object_value(object);
        Ok(match self {
            Condition::Delete => false,
            Condition::Create => true,
            Condition::Condition { type_, status } => value
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| {
                    let text = |key: &str| c.get(key).and_then(Value::as_str).unwrap_or("");
                    text("type").eq_ignore_ascii_case(type_)
                        && text("status").eq_ignore_ascii_case(status)
                }),
            Condition::JsonPath {
                template,
                value: want,
            } => {
                let template = Template::parse(template)?.strict();
                let Ok(values) = template.values(&value) else {
                    return Ok(false);
                };
                match want {
                    None => !values.is_empty(),
                    Some(want) => {
                        let [got] = values.as_slice() else {
                            return Ok(false);
                        };
                        match got {
                            Value::String(s) => s == want,
                            Value::Array(_) | Value::Object(_) => false,
                            other => &other.to_string() == want,
                        }
                    }
                }
            }
        })
    }
}

/// Runs `berth wait`.
pub async fn run(args: WaitArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let condition = Condition::parse(&args.condition)?;
    let targets = parse_targets(&args.resources)?;
    let selector = args.selector.clone().unwrap_or_default();
    let labels = berth_proto::selector::parse(&selector)?;
    let (kinds, names) = match &targets {
        Targets::Kinds { kinds, names } => (kinds.clone(), names.clone()),
        Targets::Named(named) => (
            named.iter().map(|(k, _)| *k).collect(),
            named.iter().map(|(_, n)| n.clone()).collect(),
        ),
    };
    let by_name = !names.is_empty();
    if !by_name && args.selector.is_none() && !args.all {
        bail!("resource(s) were provided, but no name was specified");
    }
    let namespace = if args.all_namespaces {
        String::new()
    } else {
        ctx.namespace().to_string()
    };
    let deadline = Instant::now() + args.timeout;
    let mut client = ctx.connect().await?;
    // (kind, namespace, name) of each object waited for, in order.
    let mut pending: Vec<(Kind, String, String)> = Vec::new();
    let mut failed = 0;
    let mut progress = Progress::terminal_only(ctx.io_is_terminal());
    for kind in kinds
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<Kind>>()
    {
        let (objects, mut watch) = client.list_and_watch(kind, &namespace, &selector).await?;
        let mut live: Vec<Object> = objects
            .into_iter()
            .filter(|o| labels.matches(&o.meta().labels))
            .collect();
        let wanted: Vec<String> = if by_name {
            let wanted: Vec<String> = match &targets {
                Targets::Named(named) => named
                    .iter()
                    .filter(|(k, _)| *k == kind)
                    .map(|(_, n)| n.clone())
                    .collect(),
                Targets::Kinds { .. } => names.clone(),
            };
            for name in &wanted {
                let exists = live.iter().any(|o| &o.meta().name == name);
                if !exists && condition != Condition::Delete && condition != Condition::Create {
                    bail!("{} {name:?} not found", kind.plural());
                }
            }
            wanted
        } else {
            live.iter().map(|o| o.meta().name.clone()).collect()
        };
        if wanted.is_empty() {
            bail!("no matching resources found");
        }
        for name in wanted {
            pending.push((kind, namespace.clone(), name));
        }
        // Follow this kind's watch until each of its objects meets the condition.
        loop {
            let mut still = Vec::new();
            for (k, ns, name) in std::mem::take(&mut pending) {
                let object = live
                    .iter()
                    .find(|o| o.meta().name == name && (ns.is_empty() || o.meta().namespace == ns));
                if k == kind && condition.met(object)? {
                    progress.finish(ctx)?;
                    ctx.print(&format!("{} condition met\n", object_ref(kind, &name)))?;
                } else {
                    still.push((k, ns, name));
                }
            }
            pending = still;
            if !pending.iter().any(|(k, _, _)| *k == kind) {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let next = if left.is_zero() {
                None
            } else if progress.is_terminal() {
                let waiting: Vec<String> = pending
                    .iter()
                    .map(|(k, _, name)| format!("{}/{name}", k.plural()))
                    .collect();
                progress.line(
                    ctx,
                    &format!("waiting for {} ({})", waiting.join(", "), args.condition),
                )?;
                match tokio::time::timeout(left.min(REDRAW), watch.next()).await {
                    Ok(next) => next,
                    // Only a redraw; the deadline is checked above.
                    Err(_) => continue,
                }
            } else {
                tokio::time::timeout(left, watch.next())
                    .await
                    .ok()
                    .flatten()
            };
            let Some(event) = next else {
                progress.finish(ctx)?;
                for (k, _, name) in pending.iter().filter(|(k, _, _)| *k == kind) {
                    failed += 1;
                    ctx.error_line(&format!(
                        "timed out waiting for the condition on {}/{name}",
                        k.plural()
                    ))?;
                }
                pending.retain(|(k, _, _)| *k != kind);
                break;
            };
            let (event, object) = event?;
            let key = (object.meta().namespace.clone(), object.meta().name.clone());
            live.retain(|o| (o.meta().namespace.clone(), o.meta().name.clone()) != key);
            if event != WatchEventType::Deleted {
                live.push(object);
            }
        }
    }
    super::Reported::check(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::PodBuilder;

    #[test]
    fn conditions_parse_and_match_as_kubectl() {
        let mut pod = PodBuilder::new("web").ready(true).build();
        pod.status.phase = berth_proto::model::PodPhase::Running;
        let pod = Object::Pod(Box::new(pod));
        // (--for, object exists, met)
        let cases = [
            ("condition=Ready", true, true),
            ("condition=ready=True", true, true),
            ("condition=Ready=false", true, false),
            ("condition=PodScheduled", true, false),
            ("delete", true, false),
            ("delete", false, true),
            ("create", true, true),
            ("create", false, false),
            ("jsonpath={.status.phase}=Running", true, true),
            ("jsonpath='{.status.phase}'=Pending", true, false),
            ("jsonpath={.status.phase}", true, true),
            ("jsonpath={.status.nothing}", true, false),
            ("jsonpath={.metadata.name}=web", true, true),
            ("jsonpath=.status.phase=Running", true, true),
        ];
        for (text, exists, want) in cases {
            let text = text.replace('\'', "");
            let condition = Condition::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let object = exists.then_some(&pod);
            assert_eq!(condition.met(object).expect("evaluated"), want, "{text}");
        }
        for bad in ["ready", "condition=", "jsonpath={.a}x", "jsonpath={.a"] {
            assert!(Condition::parse(bad).is_err(), "{bad} should be refused");
        }
    }
}
