//! `berth rollout status|restart|undo|history deployment/NAME`: kubectl's rollout verbs over
//! Deployments. Revisions are the `deployment.kubernetes.io/revision` annotations the
//! Deployment controller gives its ReplicaSets; `status` follows the Deployment through a
//! watch until it is rolled out, with kubectl's messages.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::bail;
use berth_proto::model::{Deployment, Kind, Object, PodTemplateSpec, ReplicaSet};
use berth_proto::names;
use clap::{Args, Subcommand};

use super::{named_objects_required, object_ref, parse_targets, Context, Update};
use crate::client::{Client, WatchEventType};
use crate::progress::Progress;

/// The pod-template-hash label the controller adds to a ReplicaSet's template.
const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// Flags of `berth rollout`.
#[derive(Args, Debug, Clone)]
pub struct RolloutArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RolloutCommand,
}

/// The `rollout` subcommands.
#[derive(Subcommand, Debug, Clone)]
pub enum RolloutCommand {
    /// Wait until a deployment is rolled out, printing its progress.
    Status(StatusArgs),
    /// Restart a deployment's pods with a rollout (sets the restartedAt annotation).
    Restart(TargetArgs),
    /// Roll a deployment back to an earlier revision (default: the previous one).
    Undo(UndoArgs),
    /// List a deployment's revisions, or show one.
    History(HistoryArgs),
}

/// `deployment/NAME` or `deployment NAME`.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// The deployments: `deployment/NAME...` or `deployment NAME...`.
    #[arg(required = true, value_name = "TYPE/NAME")]
    pub resources: Vec<String>,
}

/// Flags of `rollout status`.
#[derive(Args, Debug, Clone)]
pub struct StatusArgs {
    /// The deployment.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Follow the rollout until it is done (`--watch=false`: print the status once).
    #[arg(short = 'w', long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub watch: bool,
    /// Give up after this long (`0s`: never).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    pub timeout: Duration,
    /// Wait for this revision rather than the current one (refused when it is not the
    /// newest).
    #[arg(long, default_value_t = 0)]
    pub revision: i64,
}

/// Flags of `rollout undo`.
#[derive(Args, Debug, Clone)]
pub struct UndoArgs {
    /// The deployment.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The revision to roll back to (0: the previous one).
    #[arg(long, default_value_t = 0)]
    pub to_revision: i64,
}

/// Flags of `rollout history`.
#[derive(Args, Debug, Clone)]
pub struct HistoryArgs {
    /// The deployment.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Show the pod template of this revision.
    #[arg(long, default_value_t = 0)]
    pub revision: i64,
}

/// Runs `berth rollout`.
pub async fn run(args: RolloutArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    match args.command {
        RolloutCommand::Status(a) => status(a, ctx).await,
        RolloutCommand::Restart(a) => restart(a, ctx).await,
        RolloutCommand::Undo(a) => undo(a, ctx).await,
        RolloutCommand::History(a) => history(a, ctx).await,
    }
}

/// The deployments named by the arguments; other kinds are refused as kubectl refuses them
/// (`what`: "status viewer", "history viewer", "rollbacker", "restarter").
fn deployments(target: &TargetArgs, what: &str) -> anyhow::Result<Vec<String>> {
    let named = named_objects_required(&parse_targets(&target.resources)?)?;
    named
        .into_iter()
        .map(|(kind, name)| {
            if kind != Kind::Deployment {
                bail!(
                    "no {what} has been implemented for {}",
                    crate::output::kind_display(kind)
                );
            }
            Ok(name)
        })
        .collect()
}

/// kubectl's rollout status of a Deployment: the message, and whether it is rolled out.
pub fn deployment_status(d: &Deployment) -> (String, bool) {
    let name = &d.metadata.name;
    let s = &d.status;
    if d.metadata.generation > s.observed_generation {
        return (
            "Waiting for deployment spec update to be observed...".into(),
            false,
        );
    }
    let replicas = d.spec.replicas;
    if s.updated_replicas < replicas {
        let message = format!(
            "Waiting for deployment {name:?} rollout to finish: {} out of {replicas} new replicas have been updated...",
            s.updated_replicas
        );
        return (message, false);
    }
    if s.replicas > s.updated_replicas {
        let message = format!(
            "Waiting for deployment {name:?} rollout to finish: {} old replicas are pending termination...",
            s.replicas - s.updated_replicas
        );
        return (message, false);
    }
    if s.available_replicas < s.updated_replicas {
        let message = format!(
            "Waiting for deployment {name:?} rollout to finish: {} of {} updated replicas are available...",
            s.available_replicas, s.updated_replicas
        );
        return (message, false);
    }
    (format!("deployment {name:?} successfully rolled out"), true)
}

async fn status(args: StatusArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let names = deployments(&args.target, "status viewer")?;
    let [name] = names.as_slice() else {
        bail!("rollout status is only supported on individual resources and resource collections, but {} resources were found", names.len());
    };
    let namespace = ctx.namespace().to_string();
    let mut client = ctx.connect().await?;
    let follow = async {
        let (objects, mut watch) = client
            .list_and_watch(Kind::Deployment, &namespace, "")
            .await?;
        let Some(Object::Deployment(mut d)) = objects.into_iter().find(|o| &o.meta().name == name)
        else {
            bail!("deployments.apps {name:?} not found");
        };
        let mut progress = Progress::new(ctx.io_is_terminal());
        loop {
            if args.revision > 0 {
                let current = current_revision(&mut client, &d).await?;
                if current != args.revision {
                    bail!(
                        "desired revision ({}) is different from the running revision ({current})",
                        args.revision
                    );
                }
            }
            let (message, done) = deployment_status(&d);
            if done {
                progress.finish(ctx)?;
                ctx.print(&format!("{message}\n"))?;
                return Ok(());
            }
            progress.line(ctx, &message)?;
            if !args.watch {
                progress.finish(ctx)?;
                return Ok(());
            }
            loop {
                let Some(event) = watch.next().await else {
                    bail!("the server ended the watch");
                };
                let (event, object) = event?;
                if &object.meta().name != name {
                    continue;
                }
                if event == WatchEventType::Deleted {
                    bail!("object has been deleted");
                }
                if let Object::Deployment(next) = object {
                    d = next;
                    break;
                }
            }
        }
    };
    if args.timeout.is_zero() {
        follow.await
    } else {
        match tokio::time::timeout(args.timeout, follow).await {
            Ok(result) => result,
            Err(_) => bail!("timed out waiting for the condition"),
        }
    }
}

async fn restart(args: TargetArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let names = deployments(&args, "restarter")?;
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let objects = names.into_iter().map(|n| (Kind::Deployment, n)).collect();
    super::update_each(ctx, objects, |object| {
        let Object::Deployment(d) = object else {
            bail!("not a deployment");
        };
        d.spec
            .template
            .metadata
            .annotations
            .insert(names::ANNOTATION_RESTARTED_AT.to_string(), now.clone());
        Ok(Update::Write(format!(
            "{} restarted",
            object_ref(Kind::Deployment, &d.metadata.name)
        )))
    })
    .await
}

/// The ReplicaSets a Deployment controls, by revision.
async fn history_of(
    client: &mut Client,
    d: &Deployment,
) -> anyhow::Result<BTreeMap<i64, ReplicaSet>> {
    let sets = client
        .list(Kind::ReplicaSet, &d.metadata.namespace, "", "")
        .await?;
    let mut by_revision = BTreeMap::new();
    for object in sets {
        let Object::ReplicaSet(rs) = object else {
            continue;
        };
        let owned = rs
            .metadata
            .owner_references
            .iter()
            .any(|r| r.controller == Some(true) && r.uid == d.metadata.uid);
        let revision = rs
            .metadata
            .annotations
            .get(names::ANNOTATION_REVISION)
            .and_then(|v| v.parse::<i64>().ok());
        if let (true, Some(revision)) = (owned, revision) {
            by_revision.insert(revision, *rs);
        }
    }
    Ok(by_revision)
}

/// The revision of the ReplicaSet that has the Deployment's current template (0: none yet).
async fn current_revision(client: &mut Client, d: &Deployment) -> anyhow::Result<i64> {
    let history = history_of(client, d).await?;
    Ok(history
        .iter()
        .rev()
        .find(|(_, rs)| without_hash(&rs.spec.template) == d.spec.template)
        .map_or(0, |(revision, _)| *revision))
}

/// A ReplicaSet's template as its Deployment had it: without the pod-template-hash label.
fn without_hash(template: &PodTemplateSpec) -> PodTemplateSpec {
    let mut template = template.clone();
    template.metadata.labels.remove(POD_TEMPLATE_HASH_LABEL);
    template
}

async fn get_deployment(
    client: &mut Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Deployment> {
    match client.get(Kind::Deployment, namespace, name).await? {
        Object::Deployment(d) => Ok(*d),
        _ => bail!("deployments.apps {name:?} is not a deployment"),
    }
}

/// Which ReplicaSet `rollout undo --to-revision` rolls back to (kube's `deploymentRevision`):
/// the given revision, or with 0 the newest before the current one.
pub fn rollback_target<'a, T>(
    history: &'a BTreeMap<i64, T>,
    to_revision: i64,
    name: &str,
) -> anyhow::Result<(i64, &'a T)> {
    if to_revision > 0 {
        return match history.get(&to_revision) {
            Some(rs) => Ok((to_revision, rs)),
            None => bail!("unable to find specified revision {to_revision} in history"),
        };
    }
    match history.iter().rev().nth(1) {
        Some((revision, rs)) => Ok((*revision, rs)),
        None => bail!("no rollout history found for deployment {name:?}"),
    }
}

async fn undo(args: UndoArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let names = deployments(&args.target, "rollbacker")?;
    let namespace = ctx.namespace().to_string();
    let mut client = ctx.connect().await?;
    let mut failed = 0;
    for name in names {
        let outcome = async {
            let mut d = get_deployment(&mut client, &namespace, &name).await?;
            let history = history_of(&mut client, &d).await?;
            let (revision, rs) = rollback_target(&history, args.to_revision, &name)?;
            let template = without_hash(&rs.spec.template);
            let reference = object_ref(Kind::Deployment, &name);
            if template == d.spec.template {
                return Ok(format!(
                    "{reference} skipped rollback (current template already matches revision {revision})"
                ));
            }
            d.spec.template = template;
            // Conditional on the version read: a change meanwhile is a conflict, not lost.
            client.apply(&[Object::Deployment(Box::new(d))], false).await?;
            anyhow::Ok(format!("{reference} rolled back"))
        }
        .await;
        ctx.report(outcome, &mut failed)?;
    }
    super::Reported::check(failed)
}

/// kubectl's revision table: `REVISION  CHANGE-CAUSE`, one line per revision.
pub fn history_table(history: &BTreeMap<i64, ReplicaSet>) -> String {
    if history.is_empty() {
        return "No rollout history found.".into();
    }
    let mut text = String::from("REVISION\tCHANGE-CAUSE\n");
    for (revision, rs) in history {
        let cause = rs
            .metadata
            .annotations
            .get(names::ANNOTATION_CHANGE_CAUSE)
            .filter(|c| !c.is_empty())
            .map_or("<none>", String::as_str);
        text.push_str(&format!("{revision}\t{cause}\n"));
    }
    crate::output::tabulate(&text, 0, 2)
}

/// A revision's pod template, as `rollout history --revision` prints it.
pub fn template_text(template: &PodTemplateSpec) -> String {
    let pairs = |map: &berth_proto::model::StringMap| {
        if map.is_empty() {
            return "<none>".to_string();
        }
        let items: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
        items.join("\n\t")
    };
    let mut text = String::from("Pod Template:\n");
    text.push_str(&format!(
        "  Labels:\t{}\n",
        pairs(&template.metadata.labels)
    ));
    if !template.metadata.annotations.is_empty() {
        text.push_str(&format!(
            "  Annotations:\t{}\n",
            pairs(&template.metadata.annotations)
        ));
    }
    text.push_str("  Containers:\n");
    for c in &template.spec.containers {
        text.push_str(&format!("   {}:\n", c.name));
        text.push_str(&format!("    Image:\t{}\n", c.image));
        for (title, list) in [
            ("Requests", &c.resources.requests),
            ("Limits", &c.resources.limits),
        ] {
            if !list.is_empty() {
                text.push_str(&format!("    {title}:\n"));
                for (resource, q) in list {
                    text.push_str(&format!("      {resource}:\t{q}\n"));
                }
            }
        }
    }
    crate::output::tabulate(&text, 0, crate::output::DESCRIBE_PADDING)
}

async fn history(args: HistoryArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let names = deployments(&args.target, "history viewer")?;
    let namespace = ctx.namespace().to_string();
    let mut client = ctx.connect().await?;
    let mut failed = 0;
    for name in names {
        let outcome = async {
            let d = get_deployment(&mut client, &namespace, &name).await?;
            let history = history_of(&mut client, &d).await?;
            let reference = object_ref(Kind::Deployment, &name);
            if args.revision > 0 {
                let Some(rs) = history.get(&args.revision) else {
                    bail!("unable to find the specified revision");
                };
                let template = template_text(&without_hash(&rs.spec.template));
                return Ok(format!(
                    "{reference} with revision #{}\n{template}",
                    args.revision
                ));
            }
            anyhow::Ok(format!("{reference} \n{}", history_table(&history)))
        }
        .await;
        ctx.report(outcome, &mut failed)?;
    }
    super::Reported::check(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{DeploymentSpec, DeploymentStatus, ObjectMeta};

    #[test]
    fn status_messages_are_kubectls() {
        // (generation, observed, spec replicas, [replicas, updated, available], message, done)
        let cases = [
            (2, 1, 3, [3, 3, 3], "Waiting for deployment spec update to be observed...", false),
            (1, 1, 3, [3, 1, 1], "Waiting for deployment \"web\" rollout to finish: 1 out of 3 new replicas have been updated...", false),
            (1, 1, 3, [5, 3, 3], "Waiting for deployment \"web\" rollout to finish: 2 old replicas are pending termination...", false),
            (1, 1, 3, [3, 3, 1], "Waiting for deployment \"web\" rollout to finish: 1 of 3 updated replicas are available...", false),
            (1, 1, 3, [3, 3, 3], "deployment \"web\" successfully rolled out", true),
            (3, 3, 0, [0, 0, 0], "deployment \"web\" successfully rolled out", true),
        ];
        for (generation, observed, replicas, [have, updated, available], want, done) in cases {
            let d = Deployment {
                metadata: ObjectMeta {
                    name: "web".into(),
                    generation,
                    ..Default::default()
                },
                spec: DeploymentSpec {
                    replicas,
                    ..Default::default()
                },
                status: DeploymentStatus {
                    replicas: have,
                    updated_replicas: updated,
                    available_replicas: available,
                    observed_generation: observed,
                    ..Default::default()
                },
                ..Default::default()
            };
            assert_eq!(deployment_status(&d), (want.to_string(), done));
        }
    }

    #[test]
    fn rollback_targets_follow_kube() {
        let history: BTreeMap<i64, &str> = [(1, "a"), (2, "b"), (4, "c")].into();
        let one: BTreeMap<i64, &str> = [(1, "a")].into();
        let cases: [(&BTreeMap<i64, &str>, i64, Result<(i64, &str), &str>); 4] = [
            (&history, 0, Ok((2, "b"))),
            (&history, 1, Ok((1, "a"))),
            (
                &history,
                3,
                Err("unable to find specified revision 3 in history"),
            ),
            (
                &one,
                0,
                Err("no rollout history found for deployment \"web\""),
            ),
        ];
        for (history, to, want) in cases {
            let got = rollback_target(history, to, "web")
                .map(|(r, rs)| (r, *rs))
                .map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "to {to}");
        }
    }

    #[test]
    fn history_lists_revisions_with_their_change_cause() {
        let rs = |cause: Option<&str>| {
            let mut rs = ReplicaSet::default();
            if let Some(cause) = cause {
                rs.metadata
                    .annotations
                    .insert(names::ANNOTATION_CHANGE_CAUSE.into(), cause.into());
            }
            rs
        };
        let history: BTreeMap<i64, ReplicaSet> =
            [(1, rs(None)), (12, rs(Some("image nginx:1.27")))].into();
        assert_eq!(
            history_table(&history),
            "REVISION  CHANGE-CAUSE\n1         <none>\n12        image nginx:1.27\n"
        );
        assert_eq!(history_table(&BTreeMap::new()), "No rollout history found.");
    }
}
