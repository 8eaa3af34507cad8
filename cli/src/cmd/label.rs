//! `berth label TYPE NAME... KEY=VALUE... KEY-...`: changes labels as kubectl does, refusing
//! to change an existing value without `--overwrite`, through read, modify and a conditional
//! apply.

use std::collections::BTreeMap;

use anyhow::bail;
use berth_proto::model::{Object, StringMap};
use berth_proto::validate::{validate_label_key, validate_label_value};
use clap::Args;

use super::{named_objects_required, object_ref, parse_targets, update_each, Context, Update};

/// Flags of `berth label`.
#[derive(Args, Debug, Clone)]
pub struct LabelArgs {
    /// Objects, then label changes: `nodes n1 n2 disk=ssd zone-`, or `node/n1 disk=ssd`.
    #[arg(required = true, value_name = "TYPE NAME... KEY=VALUE... KEY-")]
    pub args: Vec<String>,
    /// Allow changing the value of a label that is already set.
    #[arg(long)]
    pub overwrite: bool,
}

/// Label changes from the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelChanges {
    /// Labels to set.
    pub set: BTreeMap<String, String>,
    /// Label keys to remove.
    pub remove: Vec<String>,
}

/// Splits `label`/`taint` arguments into objects and changes: a change contains `=` or ends
/// in `-`, and all objects come first.
pub fn split_changes(args: &[String], what: &str) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let mut resources = Vec::new();
    let mut changes = Vec::new();
    for arg in args {
        let is_change =
            arg.contains('=') || arg.ends_with('-') || (what == "taint" && arg.contains(':'));
        match (is_change, changes.is_empty()) {
            (true, _) => changes.push(arg.clone()),
            (false, true) => resources.push(arg.clone()),
            (false, false) => {
                bail!("all resources must be specified before {what} changes: {arg}")
            }
        }
    }
    if resources.is_empty() {
        bail!("one or more resources must be specified as <resource> <name> or <resource>/<name>");
    }
    if changes.is_empty() {
        bail!("at least one {what} update is required");
    }
    Ok((resources, changes))
}

/// Parses `key=value` and `key-` specs as kubectl does.
pub fn parse_label_changes(specs: &[String]) -> anyhow::Result<LabelChanges> {
    let mut changes = LabelChanges::default();
    for spec in specs {
        if spec.contains('=') {
            let parts: Vec<&str> = spec.split('=').collect();
            let [key, value] = parts[..] else {
                bail!("invalid label spec: {spec}");
            };
            if let Err(problems) = validate_label_key(key) {
                bail!("invalid label key {key:?}: {}", problems.join("; "));
            }
            if let Err(problems) = validate_label_value(value) {
                bail!("invalid label value: {spec:?}: {}", problems.join("; "));
            }
            changes.set.insert(key.to_string(), value.to_string());
        } else if let Some(key) = spec.strip_suffix('-') {
            changes.remove.push(key.to_string());
        } else {
            bail!("unknown label spec: {spec}");
        }
    }
    if changes.remove.iter().any(|k| changes.set.contains_key(k)) {
        bail!("can not both modify and remove a label in the same command");
    }
    Ok(changes)
}

/// Applies label changes to `labels`. Returns whether anything changed and the notes to print
/// (`label "x" not found.`); errors, as kubectl, when a value would change without
/// `overwrite`.
pub fn change_labels(
    labels: &mut StringMap,
    changes: &LabelChanges,
    overwrite: bool,
) -> anyhow::Result<(bool, Vec<String>)> {
    if !overwrite {
        let conflicts: Vec<String> = changes
            .set
            .iter()
            .filter_map(|(k, v)| {
                labels
                    .get(k)
                    .filter(|current| *current != v)
                    .map(|current| {
                        format!("'{k}' already has a value ({current}), and --overwrite is false")
                    })
            })
            .collect();
        if !conflicts.is_empty() {
            bail!("{}", conflicts.join("\n"));
        }
    }
    let before = labels.clone();
    let mut notes = Vec::new();
    for key in &changes.remove {
        if labels.remove(key).is_none() {
            notes.push(format!("label {key:?} not found."));
        }
    }
    for (k, v) in &changes.set {
        labels.insert(k.clone(), v.clone());
    }
    Ok((*labels != before, notes))
}

/// Runs `berth label`.
pub async fn run(args: LabelArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let (resources, specs) = split_changes(&args.args, "label")?;
    let changes = parse_label_changes(&specs)?;
    let objects = named_objects_required(&parse_targets(&resources)?)?;
    let overwrite = args.overwrite;
    update_each(ctx, objects, |object: &mut Object| {
        let kind = object.kind();
        let name = object.meta().name.clone();
        let (changed, mut notes) =
            change_labels(&mut object.meta_mut().labels, &changes, overwrite)?;
        let outcome = if !changed {
            "not labeled"
        } else if changes.set.is_empty() {
            "unlabeled"
        } else {
            "labeled"
        };
        notes.push(format!("{} {outcome}", object_ref(kind, &name)));
        let message = notes.join("\n");
        Ok(if changed {
            Update::Write(message)
        } else {
            Update::Unchanged(message)
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Labels set and keys removed.
    type Want = (
        &'static [(&'static str, &'static str)],
        &'static [&'static str],
    );

    #[test]
    fn label_specs_parse_like_kubectl() {
        struct Case {
            name: &'static str,
            specs: &'static [&'static str],
            want: Result<Want, &'static str>,
        }
        let cases = [
            Case {
                name: "set and remove",
                specs: &["app=web", "tier-"],
                want: Ok((&[("app", "web")], &["tier"])),
            },
            Case {
                name: "empty value",
                specs: &["flag="],
                want: Ok((&[("flag", "")], &[])),
            },
            Case {
                name: "prefixed key",
                specs: &["example.com/zone=a"],
                want: Ok((&[("example.com/zone", "a")], &[])),
            },
            Case {
                name: "two equals",
                specs: &["a=b=c"],
                want: Err("invalid label spec: a=b=c"),
            },
            Case {
                name: "bad value",
                specs: &["app=we b"],
                want: Err("invalid label value: \"app=we b\": a valid label must be"),
            },
            Case {
                name: "bad key",
                specs: &["-x=1"],
                want: Err("invalid label key \"-x\""),
            },
            Case {
                name: "modify and remove",
                specs: &["app=web", "app-"],
                want: Err("can not both modify and remove a label in the same command"),
            },
            Case {
                name: "neither",
                specs: &["app"],
                want: Err("unknown label spec: app"),
            },
        ];
        for case in cases {
            let got = parse_label_changes(&strings(case.specs));
            match (got, case.want) {
                (Ok(got), Ok((set, remove))) => {
                    let want_set: BTreeMap<String, String> = set
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                    assert_eq!(got.set, want_set, "{}", case.name);
                    assert_eq!(got.remove, strings(remove), "{}", case.name);
                }
                (Err(e), Err(want)) => {
                    assert!(e.to_string().starts_with(want), "{}: {e}", case.name)
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn label_changes_respect_overwrite() {
        struct Case {
            name: &'static str,
            specs: &'static [&'static str],
            overwrite: bool,
            want: Result<(bool, &'static [&'static str]), &'static str>,
            want_labels: &'static [(&'static str, &'static str)],
        }
        let cases = [
            Case {
                name: "add",
                specs: &["zone=a"],
                overwrite: false,
                want: Ok((true, &[])),
                want_labels: &[("app", "web"), ("zone", "a")],
            },
            Case {
                name: "same value is no change",
                specs: &["app=web"],
                overwrite: false,
                want: Ok((false, &[])),
                want_labels: &[("app", "web")],
            },
            Case {
                name: "change refused",
                specs: &["app=db"],
                overwrite: false,
                want: Err("'app' already has a value (web), and --overwrite is false"),
                want_labels: &[("app", "web")],
            },
            Case {
                name: "change allowed",
                specs: &["app=db"],
                overwrite: true,
                want: Ok((true, &[])),
                want_labels: &[("app", "db")],
            },
            Case {
                name: "remove",
                specs: &["app-"],
                overwrite: false,
                want: Ok((true, &[])),
                want_labels: &[],
            },
            Case {
                name: "remove missing",
                specs: &["zone-"],
                overwrite: false,
                want: Ok((false, &["label \"zone\" not found."])),
                want_labels: &[("app", "web")],
            },
        ];
        for case in cases {
            let mut labels: StringMap = [("app".to_string(), "web".to_string())].into();
            let changes = parse_label_changes(&strings(case.specs)).expect(case.name);
            let got = change_labels(&mut labels, &changes, case.overwrite);
            match (got, case.want) {
                (Ok((changed, notes)), Ok((want_changed, want_notes))) => {
                    assert_eq!(changed, want_changed, "{}", case.name);
                    assert_eq!(notes, strings(want_notes), "{}", case.name);
                    let want: StringMap = case
                        .want_labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                    assert_eq!(labels, want, "{}", case.name);
                }
                (Err(e), Err(want)) => assert_eq!(e.to_string(), want, "{}", case.name),
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn objects_come_before_changes() {
        let (resources, changes) =
            split_changes(&strings(&["nodes", "n1", "a=b", "c-"]), "label").expect("valid");
        assert_eq!(resources, strings(&["nodes", "n1"]));
        assert_eq!(changes, strings(&["a=b", "c-"]));
        let err = split_changes(&strings(&["nodes", "a=b", "n1"]), "label")
            .expect_err("object after change");
        assert_eq!(
            err.to_string(),
            "all resources must be specified before label changes: n1"
        );
        let err = split_changes(&strings(&["nodes", "n1"]), "label").expect_err("no change");
        assert_eq!(err.to_string(), "at least one label update is required");
    }
}
