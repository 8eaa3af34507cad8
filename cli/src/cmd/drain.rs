//! `berth drain NODE`: cordons the node, then evicts every pod on it through the Eviction
//! API, as `kubectl drain` does: refused evictions (a PodDisruptionBudget at its limit) are
//! retried every few seconds until they succeed or `--timeout` passes, with progress lines.
//!
//! As with kubectl, DaemonSet-managed pods block the drain unless `--ignore-daemonsets`
//! (then they stay: their controller would put them back at once), and pods that no
//! controller would replace block it unless `--force`. Finished pods are always removed.

use std::time::{Duration, Instant};

use berth_proto::model::{Kind, Object, Pod};
use clap::Args;
use tokio::sync::mpsc;

use super::cordon::cordon_update;
use super::evict::{evict_pod, grace_period};
use super::{read_modify_write, Context, Reported};
use crate::client::{Api, Client};

/// How long to wait before retrying an eviction a budget refused (kubectl's 5 s).
pub const EVICTION_RETRY_DELAY: Duration = Duration::from_secs(5);

/// kubectl's message for DaemonSet pods without `--ignore-daemonsets`.
pub const DAEMONSET_FATAL: &str =
    "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)";
/// kubectl's warning for DaemonSet pods left in place.
pub const DAEMONSET_WARNING: &str = "ignoring DaemonSet-managed Pods";
/// kubectl's message for pods without a controller, without `--force`.
pub const UNMANAGED_FATAL: &str =
    "cannot delete Pods that declare no controller (use --force to override)";
/// kubectl's warning for pods without a controller, evicted with `--force`.
pub const UNMANAGED_WARNING: &str = "deleting Pods that declare no controller";

/// Flags of `berth drain`.
#[derive(Args, Debug, Clone)]
pub struct DrainArgs {
    /// The node to drain.
    #[arg(value_name = "NODE")]
    pub node: String,
    /// Leave DaemonSet-managed pods on the node instead of refusing to drain.
    #[arg(long)]
    pub ignore_daemonsets: bool,
    /// Also evict pods that no controller manages (they will not come back).
    #[arg(long)]
    pub force: bool,
    /// Give up after this long (0: wait forever).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    pub timeout: Duration,
    /// Seconds each pod gets to stop (negative: its terminationGracePeriodSeconds).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub grace_period: i64,
    /// Accepted for kubectl compatibility; Berth does not model emptyDir volumes.
    #[arg(long)]
    pub delete_emptydir_data: bool,
}

/// Which pods a drain evicts, and what it warns or refuses about.
#[derive(Debug, Default, PartialEq)]
pub struct DrainPlan {
    /// Pods to evict.
    pub evict: Vec<Pod>,
    /// `message: ns/a, ns/b` warnings.
    pub warnings: Vec<String>,
    /// `message: ns/a, ns/b` errors; the drain stops if there are any.
    pub errors: Vec<String>,
}

/// A pod's owner as drain judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// No controller.
    None,
    /// Controlled by a DaemonSet that exists.
    DaemonSet,
    /// Controlled by a DaemonSet that is gone.
    MissingDaemonSet,
    /// Controlled by something else.
    Other,
}

fn add(groups: &mut Vec<(String, Vec<String>)>, message: &str, pod: &Pod) {
    let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
    match groups.iter_mut().find(|(m, _)| m == message) {
        Some((_, pods)) => pods.push(name),
        None => groups.push((message.to_string(), vec![name])),
    }
}

fn render(groups: Vec<(String, Vec<String>)>) -> Vec<String> {
    groups
        .into_iter()
        .map(|(m, pods)| format!("{m}: {}", pods.join(", ")))
        .collect()
}

/// Applies kubectl's drain filters (DaemonSet, then unreplicated) to the pods of a node.
pub fn plan(
    pods: Vec<Pod>,
    owner: &dyn Fn(&Pod) -> Owner,
    ignore_daemonsets: bool,
    force: bool,
) -> DrainPlan {
    let mut out = DrainPlan::default();
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    for pod in pods {
        let finished = pod.status.phase.is_terminal();
        match owner(&pod) {
            Owner::DaemonSet if !ignore_daemonsets => add(&mut errors, DAEMONSET_FATAL, &pod),
            Owner::DaemonSet => add(&mut warnings, DAEMONSET_WARNING, &pod),
            Owner::MissingDaemonSet if force => {
                add(&mut warnings, "deleting Pods whose DaemonSet is gone", &pod);
                out.evict.push(pod);
            }
            Owner::MissingDaemonSet => add(
                &mut errors,
                "Pods whose DaemonSet is gone (use --force to override)",
                &pod,
            ),
            Owner::None if finished => out.evict.push(pod),
            Owner::None if force => {
                add(&mut warnings, UNMANAGED_WARNING, &pod);
                out.evict.push(pod);
            }
            Owner::None => add(&mut errors, UNMANAGED_FATAL, &pod),
            Owner::Other => out.evict.push(pod),
        }
    }
    out.warnings = render(warnings);
    out.errors = render(errors);
    out
}

/// A duration as Go prints it (`5m0s`, `30s`, `1h0m0s`, `500ms`), as kubectl's messages do.
pub fn go_duration(d: Duration) -> String {
    let total = d.as_secs();
    if total == 0 {
        return format!("{}ms", d.as_millis());
    }
    let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
    let frac = d.subsec_millis();
    let secs = if frac == 0 {
        format!("{s}s")
    } else {
        let digits = format!("{frac:03}");
        format!("{s}.{}s", digits.trim_end_matches('0'))
    };
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

/// kubectl's aggregate of errors: one as is, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A progress line from an eviction task.
enum Line {
    Out(String),
    Err(String),
}

/// Evicts one pod, retrying refusals until `deadline`; sends progress lines.
async fn evict_until_done(
    mut api: Api,
    pod: Pod,
    grace: Option<i64>,
    deadline: Option<Instant>,
    timeout: Duration,
    lines: mpsc::UnboundedSender<Line>,
) -> Result<(), String> {
    let (ns, name) = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
    loop {
        let _ = lines.send(Line::Out(format!("evicting pod {ns}/{name}")));
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(format!(
                "error when evicting pods/{name:?} -n {ns:?}: global timeout reached: {}",
                go_duration(timeout)
            ));
        }
        match evict_pod(&mut api, &ns, &name, grace).await {
            Ok(()) => break,
            Err(e) if e.is_not_found() => break,
            Err(e) if e.code() == Some(tonic::Code::ResourceExhausted) => {
                let _ = lines.send(Line::Err(format!(
                    "error when evicting pods/{name:?} -n {ns:?} (will retry after {}): {e}",
                    go_duration(EVICTION_RETRY_DELAY)
                )));
                let wait = match deadline {
                    Some(d) => {
                        EVICTION_RETRY_DELAY.min(d.saturating_duration_since(Instant::now()))
                    }
                    None => EVICTION_RETRY_DELAY,
                };
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(format!("error when evicting pods/{name:?} -n {ns:?}: {e}")),
        }
    }
    let _ = lines.send(Line::Out(format!("pod/{name} evicted")));
    Ok(())
}

/// How drain judges each pod's owner, asking the server whether DaemonSets exist.
async fn owners(client: &mut Client, pods: &[Pod]) -> anyhow::Result<Vec<Owner>> {
    let mut out = Vec::with_capacity(pods.len());
    for pod in pods {
        let controller = pod
            .metadata
            .owner_references
            .iter()
            .find(|r| r.controller == Some(true));
        let owner = match controller {
            None => Owner::None,
            Some(r) if r.kind == "DaemonSet" => {
                match client
                    .get(Kind::DaemonSet, &pod.metadata.namespace, &r.name)
                    .await
                {
                    Ok(Object::DaemonSet(ds)) if ds.metadata.uid == r.uid || r.uid.is_empty() => {
                        Owner::DaemonSet
                    }
                    Ok(_) => Owner::MissingDaemonSet,
                    Err(e) if e.is_not_found() => Owner::MissingDaemonSet,
                    Err(e) => return Err(e.into()),
                }
            }
            Some(_) => Owner::Other,
        };
        out.push(owner);
    }
    Ok(out)
}

/// Runs `berth drain`.
pub async fn run(args: DrainArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let node = args
        .node
        .strip_prefix("node/")
        .or(args.node.strip_prefix("nodes/"))
        .unwrap_or(&args.node)
        .to_string();
    let mut client = ctx.connect().await?;
    let message = read_modify_write(&mut client, Kind::Node, "", &node, |object| {
        cordon_update(object, true)
    })
    .await?;
    ctx.print(&format!("{message}\n"))?;

    let pods: Vec<Pod> = client
        .list(Kind::Pod, "", "", &node)
        .await?
        .into_iter()
        .filter_map(|o| match o {
            Object::Pod(p) => Some(*p),
            _ => None,
        })
        .collect();
    let kinds = owners(&mut client, &pods).await?;
    let by_uid: std::collections::HashMap<String, Owner> = pods
        .iter()
        .map(|p| p.metadata.uid.clone())
        .zip(kinds)
        .collect();
    let plan = plan(
        pods,
        &|p| by_uid.get(&p.metadata.uid).copied().unwrap_or(Owner::Other),
        args.ignore_daemonsets,
        args.force,
    );
    if !plan.errors.is_empty() {
        let mut text = format!(
            "error: unable to drain node {node:?} due to error: {}, continuing command...\n\
             There are pending nodes to be drained:\n {node}\n",
            aggregate(&plan.errors)
        );
        for e in &plan.errors {
            text.push_str(e);
            text.push('\n');
        }
        ctx.note(text.trim_end())?;
        return Err(Reported { failed: 1 }.into());
    }
    if !plan.warnings.is_empty() {
        ctx.note(&format!("Warning: {}", plan.warnings.join("; ")))?;
    }

    let deadline = (!args.timeout.is_zero()).then(|| Instant::now() + args.timeout);
    let api = ctx.connect_api().await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    let pod_names: Vec<String> = plan.evict.iter().map(|p| p.metadata.name.clone()).collect();
    for pod in plan.evict {
        tasks.spawn(evict_until_done(
            api.clone(),
            pod,
            grace_period(args.grace_period),
            deadline,
            args.timeout,
            tx.clone(),
        ));
    }
    drop(tx);
    while let Some(line) = rx.recv().await {
        match line {
            Line::Out(text) => ctx.print(&format!("{text}\n"))?,
            Line::Err(text) => ctx.note(&text)?,
        }
    }
    let mut errors = Vec::new();
    while let Some(result) = tasks.join_next().await {
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(e),
            Err(e) => errors.push(format!("eviction task failed: {e}")),
        }
    }
    if errors.is_empty() {
        ctx.print(&format!("node/{node} drained\n"))?;
        return Ok(());
    }
    errors.sort();
    let agg = aggregate(&errors);
    let mut text =
        format!("There are pending pods in node {node:?} when an error occurred: {agg}\n");
    for name in &pod_names {
        if errors.iter().any(|e| e.contains(&format!("pods/{name:?}"))) {
            text.push_str(&format!("pod/{name}\n"));
        }
    }
    text.push_str(&format!(
        "error: unable to drain node {node:?} due to error: {agg}, continuing command...\n\
         There are pending nodes to be drained:\n {node}\n"
    ));
    for e in &errors {
        text.push_str(e);
        text.push('\n');
    }
    ctx.note(text.trim_end())?;
    Err(Reported {
        failed: errors.len(),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{ObjectMeta, PodPhase};

    fn pod(name: &str, phase: PodPhase) -> Pod {
        let mut p = Pod {
            metadata: ObjectMeta {
                name: name.into(),
                namespace: "default".into(),
                uid: name.into(),
                ..Default::default()
            },
            ..Default::default()
        };
        p.status.phase = phase;
        p
    }

    #[test]
    fn filters_follow_kubectl() {
        struct Case {
            name: &'static str,
            ignore_daemonsets: bool,
            force: bool,
            want_evict: Vec<&'static str>,
            want_warnings: Vec<&'static str>,
            want_errors: Vec<&'static str>,
        }
        // web-1: ReplicaSet; ds-1: DaemonSet; bare: none; done: none, finished.
        let owner = |p: &Pod| match p.metadata.name.as_str() {
            "web-1" => Owner::Other,
            "ds-1" => Owner::DaemonSet,
            _ => Owner::None,
        };
        let pods = || {
            vec![
                pod("web-1", PodPhase::Running),
                pod("ds-1", PodPhase::Running),
                pod("bare", PodPhase::Running),
                pod("done", PodPhase::Succeeded),
            ]
        };
        let cases = vec![
            Case {
                name: "no flags",
                ignore_daemonsets: false,
                force: false,
                want_evict: vec!["web-1", "done"],
                want_warnings: vec![],
                want_errors: vec![
                    "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/ds-1",
                    "cannot delete Pods that declare no controller (use --force to override): default/bare",
                ],
            },
            Case {
                name: "both flags",
                ignore_daemonsets: true,
                force: true,
                want_evict: vec!["web-1", "bare", "done"],
                want_warnings: vec![
                    "ignoring DaemonSet-managed Pods: default/ds-1",
                    "deleting Pods that declare no controller: default/bare",
                ],
                want_errors: vec![],
            },
        ];
        for case in cases {
            let got = plan(pods(), &owner, case.ignore_daemonsets, case.force);
            let evict: Vec<&str> = got.evict.iter().map(|p| p.metadata.name.as_str()).collect();
            assert_eq!(evict, case.want_evict, "{}", case.name);
            assert_eq!(got.warnings, case.want_warnings, "{}", case.name);
            assert_eq!(got.errors, case.want_errors, "{}", case.name);
        }
    }

    #[test]
    fn durations_print_as_go_does() {
        struct Case {
            d: Duration,
            want: &'static str,
        }
        let cases = [
            Case {
                d: Duration::from_secs(5),
                want: "5s",
            },
            Case {
                d: Duration::from_secs(300),
                want: "5m0s",
            },
            Case {
                d: Duration::from_secs(90),
                want: "1m30s",
            },
            Case {
                d: Duration::from_secs(3600),
                want: "1h0m0s",
            },
            Case {
                d: Duration::from_millis(500),
                want: "500ms",
            },
            Case {
                d: Duration::from_millis(1500),
                want: "1.5s",
            },
        ];
        for case in cases {
            assert_eq!(go_duration(case.d), case.want, "{:?}", case.d);
        }
    }
}
