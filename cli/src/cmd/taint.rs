//! `berth taint nodes NODE key=value:Effect... key:Effect- key-`: changes a node's taints as
//! kubectl does, through read, modify and a conditional apply.

use anyhow::bail;
use berth_proto::model::{Kind, Object, Taint};
use berth_proto::taints::{self, TaintRemoval};
use clap::Args;

use super::label::split_changes;
use super::{named_objects_required, object_ref, parse_targets, update_each, Context, Update};

/// Flags of `berth taint`.
#[derive(Args, Debug, Clone)]
pub struct TaintArgs {
    /// Nodes, then taint changes: `nodes n1 dedicated=gpu:NoSchedule`, `node/n1 dedicated:NoSchedule-`,
    /// `nodes n1 dedicated-` (every effect).
    #[arg(
        required = true,
        value_name = "nodes NAME... KEY=VALUE:EFFECT... KEY[:EFFECT]-"
    )]
    pub args: Vec<String>,
    /// Allow replacing the value of a taint with the same key and effect.
    #[arg(long)]
    pub overwrite: bool,
}

/// kubectl's outcome words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaintOutcome {
    /// Taints were only added.
    Tainted,
    /// Taints were only removed.
    Untainted,
    /// Taints were both added and removed, or replaced with `--overwrite`.
    Modified,
}

impl TaintOutcome {
    fn as_str(self) -> &'static str {
        match self {
            TaintOutcome::Tainted => "tainted",
            TaintOutcome::Untainted => "untainted",
            TaintOutcome::Modified => "modified",
        }
    }
}

/// Computes a node's new taints: the added ones first, then the old ones they do not
/// replace, less the removed ones. Errors as kubectl: a key and effect already present
/// without `overwrite`, a removal that matches nothing.
pub fn change_taints(
    node_name: &str,
    current: &[Taint],
    add: &[Taint],
    remove: &[TaintRemoval],
    overwrite: bool,
) -> anyhow::Result<(TaintOutcome, Vec<Taint>)> {
    if !overwrite {
        let existing: Vec<&str> = add
            .iter()
            .filter(|a| {
                current
                    .iter()
                    .any(|t| t.key == a.key && t.effect == a.effect)
            })
            .map(|a| a.key.as_str())
            .collect();
        if !existing.is_empty() {
            bail!(
                "node {node_name} already has {} taint(s) with same effect(s) and --overwrite is false",
                existing.join(",")
            );
        }
    }
    let mut taints: Vec<Taint> = add.to_vec();
    for old in current {
        if !taints
            .iter()
            .any(|t| t.key == old.key && t.effect == old.effect)
        {
            taints.push(old.clone());
        }
    }
    let added = taints.len() != current.len();
    let mut missing = Vec::new();
    let mut deleted = false;
    for r in remove {
        let before = taints.len();
        taints.retain(|t| !(t.key == r.key && r.effect.is_none_or(|e| e == t.effect)));
        if taints.len() == before {
            missing.push(format!("taint {:?} not found", r.to_string()));
        } else {
            deleted = true;
        }
    }
    if !missing.is_empty() {
        bail!("{}", missing.join("\n"));
    }
    let outcome = if (added && deleted) || overwrite {
        TaintOutcome::Modified
    } else if added {
        TaintOutcome::Tainted
    } else {
        TaintOutcome::Untainted
    };
    Ok((outcome, taints))
}

/// Runs `berth taint`.
pub async fn run(args: TaintArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let (resources, specs) = split_changes(&args.args, "taint")?;
    let (add, remove) = taints::parse_taint_changes(&specs)?;
    let targets = parse_targets(&resources)?;
    let objects = named_objects_required(&targets)?;
    if let Some((kind, _)) = objects.iter().find(|(k, _)| *k != Kind::Node) {
        bail!(
            "invalid resource type {}, only node types are supported",
            kind.plural()
        );
    }
    let overwrite = args.overwrite;
    update_each(ctx, objects, |object: &mut Object| {
        let Object::Node(node) = object else {
            bail!("only nodes have taints");
        };
        let (outcome, taints) = change_taints(
            &node.metadata.name,
            &node.spec.taints,
            &add,
            &remove,
            overwrite,
        )?;
        let message = format!(
            "{} {}",
            object_ref(Kind::Node, &node.metadata.name),
            outcome.as_str()
        );
        if taints == node.spec.taints {
            return Ok(Update::Unchanged(message));
        }
        node.spec.taints = taints;
        Ok(Update::Write(message))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::taint;
    use berth_proto::model::TaintEffect;

    #[test]
    fn taint_changes_follow_kubectl() {
        struct Case {
            name: &'static str,
            specs: &'static [&'static str],
            overwrite: bool,
            want: Result<(TaintOutcome, Vec<Taint>), &'static str>,
        }
        let existing = vec![
            taint("dedicated", "web", TaintEffect::NoSchedule),
            taint("dedicated", "web", TaintEffect::NoExecute),
        ];
        let cases = vec![
            Case {
                name: "add new",
                specs: &["gpu=yes:PreferNoSchedule"],
                overwrite: false,
                want: Ok((
                    TaintOutcome::Tainted,
                    vec![taint("gpu", "yes", TaintEffect::PreferNoSchedule), existing[0].clone(), existing[1].clone()],
                )),
            },
            Case {
                name: "same key and effect refused",
                specs: &["dedicated=db:NoSchedule"],
                overwrite: false,
                want: Err("node n1 already has dedicated taint(s) with same effect(s) and --overwrite is false"),
            },
            Case {
                name: "overwrite",
                specs: &["dedicated=db:NoSchedule"],
                overwrite: true,
                want: Ok((TaintOutcome::Modified, vec![taint("dedicated", "db", TaintEffect::NoSchedule), existing[1].clone()])),
            },
            Case {
                name: "remove one effect",
                specs: &["dedicated:NoExecute-"],
                overwrite: false,
                want: Ok((TaintOutcome::Untainted, vec![existing[0].clone()])),
            },
            Case { name: "remove every effect", specs: &["dedicated-"], overwrite: false, want: Ok((TaintOutcome::Untainted, vec![])) },
            Case { name: "remove missing", specs: &["gpu:NoSchedule-"], overwrite: false, want: Err("taint \"gpu:NoSchedule\" not found") },
            Case {
                name: "add and remove",
                specs: &["gpu=yes:NoSchedule", "dedicated:NoExecute-"],
                overwrite: false,
                want: Ok((TaintOutcome::Modified, vec![taint("gpu", "yes", TaintEffect::NoSchedule), existing[0].clone()])),
            },
        ];
        for case in cases {
            let (add, remove) = taints::parse_taint_changes(case.specs).expect(case.name);
            let got = change_taints("n1", &existing, &add, &remove, case.overwrite);
            match (got, case.want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{}", case.name),
                (Err(e), Err(want)) => assert_eq!(e.to_string(), want, "{}", case.name),
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }
}
