//! `berth describe pod|node|priorityclass|job [NAME...]`: kubectl-style detail of objects, with
//! the events about them (for a pending pod, the FailedScheduling event says why) and, for a
//! node, the pods on it and what they request of its allocatable resources.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::SystemTime;

use anyhow::bail;
use berth_proto::model::{
    Container, ContainerImage, ContainerState, Event, Kind, Node, Object, Pod, PodPhase,
    PreemptionPolicy, PriorityClass, ResourceClaim, ResourceList, RestartPolicy, StringMap, Time,
};
use berth_proto::names;
use berth_proto::qos::pod_qos;
use berth_proto::{pb, Quantity};
use berth_scheduler::framework::resources::pod_requests;
use clap::Args;

use super::{parse_targets, sort_objects, Context, Targets};

mod generic;
use crate::output::{age, format_taint, format_toleration, node_roles, tabulate, DESCRIBE_PADDING};

/// Flags of `berth describe`.
#[derive(Args, Debug, Clone)]
pub struct DescribeArgs {
    /// What to describe: `pods [NAME...]`, `nodes [NAME...]`, `priorityclasses [NAME...]`,
    /// or `pod/NAME`. Without names, every object of the type (in the namespace).
    #[arg(required = true, value_name = "TYPE [NAME]...")]
    pub resources: Vec<String>,
    /// Describe the objects matching this label selector.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// With no names, describe objects of every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

/// Runs `berth describe`.
pub async fn run(args: DescribeArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let targets = parse_targets(&args.resources)?;
    let selector = args.selector.clone().unwrap_or_default();
    berth_proto::selector::parse(&selector)?;
    let namespace = if args.all_namespaces {
        String::new()
    } else {
        ctx.namespace().to_string()
    };
    let kinds: Vec<Kind> = match &targets {
        Targets::Kinds { kinds, .. } => kinds.clone(),
        Targets::Named(named) => named.iter().map(|(k, _)| *k).collect(),
    };
    if let Some(kind) = kinds.iter().find(|k| **k == Kind::Event) {
        bail!(
            "describe does not support {}; use `berth get events`",
            kind.as_str()
        );
    }
    let mut client = ctx.connect().await?;

    let mut objects = Vec::new();
    let mut failures = Vec::new();
    match &targets {
        Targets::Kinds { kinds, names } if names.is_empty() => {
            for &kind in kinds {
                let mut listed = client.list(kind, &namespace, &selector, "").await?;
                sort_objects(&mut listed);
                objects.extend(listed);
            }
        }
        _ => {
            for (kind, name) in super::named_objects(&targets) {
                match client.get(kind, &namespace, &name).await {
                    Ok(object) => objects.push(object),
                    Err(e) => failures.push(e.to_string()),
                }
            }
        }
    }

    let now = SystemTime::now();
    let mut sections = Vec::new();
    for object in &objects {
        let text = match object {
            Object::Pod(pod) => {
                let events = client
                    .list(Kind::Event, &pod.metadata.namespace, "", "")
                    .await?;
                let mut text = describe_pod(pod, &events_about(&events, "Pod", &pod.metadata), now);
                if !pod.spec.resource_claims.is_empty() {
                    let mut claims = BTreeMap::new();
                    for r in berth_scheduler::dra::convert::pod_claim_refs(pod) {
                        let Some(name) = &r.claim_name else { continue };
                        let got = client
                            .get(Kind::ResourceClaim, &pod.metadata.namespace, name)
                            .await;
                        if let Ok(Object::ResourceClaim(c)) = got {
                            claims.insert(r.name.clone(), *c);
                        }
                    }
                    text.push_str(&resource_claims(pod, &claims));
                }
                if pod.spec.node_name.is_empty() && pod.status.phase == PodPhase::Pending {
                    // Best effort: an older or busy server simply shows no verdicts.
                    if let Ok(answer) = explain(ctx, pod).await {
                        text.push_str(&node_verdicts(&answer));
                    }
                }
                text
            }
            Object::Node(node) => {
                let pods = client.list(Kind::Pod, "", "", &node.metadata.name).await?;
                let pods: Vec<Pod> = pods
                    .into_iter()
                    .filter_map(|o| match o {
                        Object::Pod(p) if p.spec.node_name == node.metadata.name => Some(*p),
                        _ => None,
                    })
                    .collect();
                let events = client.list(Kind::Event, "", "", "").await?;
                describe_node(
                    node,
                    &pods,
                    &events_about(&events, "Node", &node.metadata),
                    now,
                )
            }
            Object::PriorityClass(pc) => describe_priority_class(pc),
            Object::Job(job) => {
                let events = client
                    .list(Kind::Event, &job.metadata.namespace, "", "")
                    .await?;
                let events = events_about(&events, "Job", &job.metadata);
                super::job::describe_job(job, &events, now)
            }
            Object::Event(_) => continue,
            Object::Namespace(_)
            | Object::RuntimeClass(_)
            | Object::PodDisruptionBudget(_)
            | Object::Deployment(_)
            | Object::ReplicaSet(_)
            | Object::DaemonSet(_)
            | Object::ResourceQuota(_) => {
                serde_yaml_ng::to_string(&crate::output::object_value(object))?
            }
            Object::DeviceClass(_)
            | Object::ResourceClaim(_)
            | Object::ResourceClaimTemplate(_)
            | Object::ResourceSlice(_) => {
                let meta = object.meta();
                let events = client.list(Kind::Event, &meta.namespace, "", "").await?;
                let about = events_about(&events, object.kind().as_str(), meta);
                generic::describe_generic(object, &about, now)
            }
        };
        sections.push(text);
    }
    ctx.print(&sections.join("\n\n"))?;
    if objects.is_empty() && failures.is_empty() {
        ctx.note(
            &if args.all_namespaces || !kinds.iter().any(Kind::is_namespaced) {
                "No resources found".to_string()
            } else {
                format!("No resources found in {namespace} namespace.")
            },
        )?;
    }
    ctx.finish(&failures)
}

/// The events about one object, oldest first.
fn events_about(
    events: &[Object],
    kind: &str,
    meta: &berth_proto::model::ObjectMeta,
) -> Vec<Event> {
    let mut about: Vec<Event> = events
        .iter()
        .filter_map(|o| match o {
            Object::Event(e) => Some(&**e),
            _ => None,
        })
        .filter(|e| {
            let r = &e.involved_object;
            r.kind == kind
                && r.name == meta.name
                && (meta.namespace.is_empty() || r.namespace == meta.namespace)
                && (r.uid.is_empty() || meta.uid.is_empty() || r.uid == meta.uid)
        })
        .cloned()
        .collect();
    about.sort_by(|a, b| {
        super::get::event_time(a)
            .cmp(&super::get::event_time(b))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    about
}

/// `key=value` lines under a label (`Labels:`, `Node-Selectors:`), or `<none>`.
pub(super) fn write_map(out: &mut String, title: &str, map: &StringMap) {
    write_lines(
        out,
        title,
        map.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    );
}

/// Lines under a label: the first beside it, the rest below, aligned; `<none>` when empty.
fn write_lines(out: &mut String, title: &str, lines: Vec<String>) {
    if lines.is_empty() {
        let _ = writeln!(out, "{title}:\t<none>");
        return;
    }
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "{title}:\t{line}");
        } else {
            let _ = writeln!(out, "\t{line}");
        }
    }
}

/// A container's `State:` or `Last State:` lines, as kubectl's describer writes them.
fn describe_container_state(out: &mut String, title: &str, state: &ContainerState) {
    if let Some(running) = &state.running {
        let _ = writeln!(out, "    {title}:\tRunning");
        if let Some(at) = &running.started_at {
            let _ = writeln!(out, "      Started:\t{at}");
        }
    } else if let Some(waiting) = &state.waiting {
        let _ = writeln!(out, "    {title}:\tWaiting");
        if !waiting.reason.is_empty() {
            let _ = writeln!(out, "      Reason:\t{}", waiting.reason);
        }
    } else if let Some(t) = &state.terminated {
        let _ = writeln!(out, "    {title}:\tTerminated");
        if !t.reason.is_empty() {
            let _ = writeln!(out, "      Reason:\t{}", t.reason);
        }
        if !t.message.is_empty() {
            let _ = writeln!(out, "      Message:\t{}", t.message);
        }
        let _ = writeln!(out, "      Exit Code:\t{}", t.exit_code);
        if t.signal > 0 {
            let _ = writeln!(out, "      Signal:\t{}", t.signal);
        }
        for (label, at) in [("Started", &t.started_at), ("Finished", &t.finished_at)] {
            if let Some(at) = at {
                let _ = writeln!(out, "      {label}:\t{at}");
            }
        }
    } else {
        let _ = writeln!(out, "    {title}:\tWaiting");
    }
}

fn time_or_none(time: Option<&Time>) -> String {
    time.map_or("<unset>".into(), ToString::to_string)
}

/// The `Events:` section.
pub(super) fn write_events(out: &mut String, events: &[Event], now: SystemTime) {
    if events.is_empty() {
        out.push_str("Events:\t<none>\n");
        return;
    }
    out.push_str("Events:\n");
    out.push_str("  Type\tReason\tAge\tFrom\tMessage\n");
    out.push_str("  ----\t------\t----\t----\t-------\n");
    for e in events {
        let when = if e.count > 1 {
            format!(
                "{} (x{} over {})",
                age(super::get::event_time(e), now),
                e.count,
                age(
                    e.first_timestamp
                        .as_ref()
                        .or(e.metadata.creation_timestamp.as_ref()),
                    now
                )
            )
        } else {
            age(super::get::event_time(e), now)
        };
        let _ = writeln!(
            out,
            "  {}\t{}\t{}\t{}\t{}",
            e.type_,
            e.reason,
            when,
            e.reporting_component,
            e.message.replace('\n', " ")
        );
    }
}

pub(super) fn write_container(out: &mut String, pod: &Pod, c: &Container) {
    let _ = writeln!(out, "  {}:", c.name);
    let _ = writeln!(
        out,
        "    Image:\t{}",
        if c.image.is_empty() {
            "<none>"
        } else {
            &c.image
        }
    );
    for (title, items) in [("Command", &c.command), ("Args", &c.args)] {
        if !items.is_empty() {
            let _ = writeln!(out, "    {title}:");
            for item in items {
                let _ = writeln!(out, "      {item}");
            }
        }
    }
    if c.restart_policy == Some(RestartPolicy::Always) {
        out.push_str("    Restart Policy:\tAlways\n");
    }
    if let Some(status) = pod
        .status
        .container_statuses
        .iter()
        .find(|s| s.name == c.name)
    {
        describe_container_state(out, "State", &status.state);
        if status.last_state.is_terminated() {
            describe_container_state(out, "Last State", &status.last_state);
        }
        let _ = writeln!(out, "    Ready:\t{}", names::status_of(status.ready));
        let _ = writeln!(out, "    Restart Count:\t{}", status.restart_count);
    }
    for (title, list) in [
        ("Limits", &c.resources.limits),
        ("Requests", &c.resources.requests),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "    {title}:");
            for (name, q) in list {
                let _ = writeln!(out, "      {name}:\t{q}");
            }
        }
    }
    if c.env.is_empty() {
        out.push_str("    Environment:\t<none>\n");
    } else {
        out.push_str("    Environment:\n");
        for env in &c.env {
            let value = if env.value_from.is_some() && env.value.is_empty() {
                "(set from a reference; not resolved by Berth)"
            } else {
                &env.value
            };
            let _ = writeln!(out, "      {}:\t{value}", env.name);
        }
    }
}

/// The text of `berth describe pod`.
pub fn describe_pod(pod: &Pod, events: &[Event], now: SystemTime) -> String {
    let meta = &pod.metadata;
    let spec = &pod.spec;
    let status = &pod.status;
    let mut out = String::new();
    let _ = writeln!(out, "Name:\t{}", meta.name);
    let _ = writeln!(out, "Namespace:\t{}", meta.namespace);
    let _ = writeln!(out, "Priority:\t{}", spec.priority.unwrap_or(0));
    if !spec.priority_class_name.is_empty() {
        let _ = writeln!(out, "Priority Class Name:\t{}", spec.priority_class_name);
    }
    if let Some(PreemptionPolicy::Never) = spec.preemption_policy {
        out.push_str("Preemption Policy:\tNever\n");
    }
    if !spec.runtime_class_name.is_empty() {
        let _ = writeln!(out, "Runtime Class Name:\t{}", spec.runtime_class_name);
    }
    if !spec.scheduler_name.is_empty() && spec.scheduler_name != "default-scheduler" {
        let _ = writeln!(out, "Scheduler:\t{}", spec.scheduler_name);
    }
    let node = if spec.node_name.is_empty() {
        "<none>".to_string()
    } else if status.host_ip.is_empty() {
        spec.node_name.clone()
    } else {
        format!("{}/{}", spec.node_name, status.host_ip)
    };
    let _ = writeln!(out, "Node:\t{node}");
    if let Some(start) = &status.start_time {
        let _ = writeln!(out, "Start Time:\t{start}");
    }
    write_map(&mut out, "Labels", &meta.labels);
    write_map(&mut out, "Annotations", &meta.annotations);
    if meta.deletion_timestamp.is_some() && !status.phase.is_terminal() {
        let grace = spec.termination_grace_period_seconds.unwrap_or(30);
        let _ = writeln!(
            out,
            "Status:\tTerminating (lasts {})",
            crate::output::human_duration(grace)
        );
    } else {
        let _ = writeln!(out, "Status:\t{}", status.phase.as_str());
    }
    if !status.reason.is_empty() {
        let _ = writeln!(out, "Reason:\t{}", status.reason);
    }
    if !status.message.is_empty() {
        let _ = writeln!(out, "Message:\t{}", status.message);
    }
    let _ = writeln!(out, "IP:\t{}", status.host_ip);
    if let Some(owner) = meta
        .owner_references
        .iter()
        .find(|o| o.controller == Some(true))
    {
        let _ = writeln!(out, "Controlled By:\t{}/{}", owner.kind, owner.name);
    }
    if !status.nominated_node_name.is_empty() {
        let _ = writeln!(out, "NominatedNodeName:\t{}", status.nominated_node_name);
    }
    if !spec.init_containers.is_empty() {
        out.push_str("Init Containers:\n");
        for c in &spec.init_containers {
            write_container(&mut out, pod, c);
        }
    }
    out.push_str("Containers:\n");
    for c in &spec.containers {
        write_container(&mut out, pod, c);
    }
    if !status.conditions.is_empty() {
        out.push_str("Conditions:\n  Type\tStatus\n");
        for c in &status.conditions {
            let _ = writeln!(out, "  {}\t{}", c.type_, c.status);
        }
    }
    let _ = writeln!(out, "QoS Class:\t{}", pod_qos(pod));
    write_map(&mut out, "Node-Selectors", &spec.node_selector);
    write_lines(
        &mut out,
        "Tolerations",
        spec.tolerations.iter().map(format_toleration).collect(),
    );
    if !spec.topology_spread_constraints.is_empty() {
        let lines = spec
            .topology_spread_constraints
            .iter()
            .map(|c| {
                let action = match c.when_unsatisfiable {
                    berth_proto::model::UnsatisfiableConstraintAction::DoNotSchedule => {
                        "DoNotSchedule"
                    }
                    berth_proto::model::UnsatisfiableConstraintAction::ScheduleAnyway => {
                        "ScheduleAnyway"
                    }
                };
                let selector = c
                    .label_selector
                    .as_ref()
                    .map_or("<none>".to_string(), format_label_selector);
                format!(
                    "{}:{action} when max skew {} is exceeded for selector {selector}",
                    c.topology_key, c.max_skew
                )
            })
            .collect();
        write_lines(&mut out, "Topology Spread Constraints", lines);
    }
    if !spec.scheduling_gates.is_empty() {
        write_lines(
            &mut out,
            "Scheduling Gates",
            spec.scheduling_gates
                .iter()
                .map(|g| g.name.clone())
                .collect(),
        );
    }
    write_events(&mut out, events, now);
    tabulate(&out, 0, DESCRIBE_PADDING)
}

/// A label selector as kubectl prints one: `app=web,tier in (a,b)`.
pub(super) fn format_label_selector(selector: &berth_proto::model::LabelSelector) -> String {
    use berth_proto::model::LabelSelectorOperator as Op;
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for r in &selector.match_expressions {
        parts.push(match r.operator {
            Op::In => format!("{} in ({})", r.key, r.values.join(",")),
            Op::NotIn => format!("{} notin ({})", r.key, r.values.join(",")),
            Op::Exists => r.key.clone(),
            Op::DoesNotExist => format!("!{}", r.key),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// A pod's limits per resource in thousandths, as Kubernetes sums them: app containers and
/// sidecars together, or any init container (with the sidecars started before it) if more,
/// plus the pod overhead for the resources that have a limit.
pub fn pod_limits(pod: &Pod) -> BTreeMap<String, i128> {
    fn add(into: &mut BTreeMap<String, i128>, list: &ResourceList) {
        for (name, q) in list {
            *into.entry(name.clone()).or_default() += i128::from(q.millis());
        }
    }
    fn max_with(into: &mut BTreeMap<String, i128>, other: &BTreeMap<String, i128>) {
        for (name, v) in other {
            let cur = into.entry(name.clone()).or_default();
            *cur = (*cur).max(*v);
        }
    }
    let mut limits = BTreeMap::new();
    for c in &pod.spec.containers {
        add(&mut limits, &c.resources.limits);
    }
    let mut sidecars = BTreeMap::new();
    let mut init_max = BTreeMap::new();
    for c in &pod.spec.init_containers {
        if c.restart_policy == Some(RestartPolicy::Always) {
            add(&mut sidecars, &c.resources.limits);
            max_with(&mut init_max, &sidecars);
        } else {
            let mut during = sidecars.clone();
            add(&mut during, &c.resources.limits);
            max_with(&mut init_max, &during);
        }
    }
    for (name, v) in &sidecars {
        *limits.entry(name.clone()).or_default() += v;
    }
    max_with(&mut limits, &init_max);
    for (name, q) in &pod.spec.overhead {
        if let Some(v) = limits.get_mut(name) {
            if *v > 0 {
                *v += i128::from(q.millis());
            }
        }
    }
    limits
}

/// `500m (12%)`: an amount and its share of what is allocatable.
fn amount_with_percent(resource: &str, millis: i128, allocatable: Option<&Quantity>) -> String {
    let amount = if resource == "cpu" {
        Quantity::from_millis(clamp(millis)).to_string()
    } else {
        Quantity::from_value(clamp(millis.div_euclid(1000))).to_string()
    };
    let total = allocatable.map_or(0, |q| i128::from(q.millis()));
    let percent = if total > 0 { millis * 100 / total } else { 0 };
    format!("{amount} ({percent}%)")
}

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// A pod's requests per resource in thousandths, from the scheduler's own accounting.
fn pod_request_millis(pod: &Pod) -> BTreeMap<String, i128> {
    let r = pod_requests(pod);
    let mut map = BTreeMap::new();
    map.insert("cpu".to_string(), i128::from(r.milli_cpu));
    map.insert("memory".to_string(), i128::from(r.memory) * 1000);
    if r.ephemeral_storage > 0 {
        map.insert(
            "ephemeral-storage".to_string(),
            i128::from(r.ephemeral_storage) * 1000,
        );
    }
    for (name, v) in &r.scalar {
        map.insert(name.clone(), i128::from(*v) * 1000);
    }
    map
}

/// Images shown by `describe node`; the rest are counted.
const DESCRIBED_IMAGES: usize = 5;

/// A node's `status.images`, briefly (kubectl shows none): how many, and the first few as
/// the node lists them (the largest first), each by its first name with its size in MiB.
fn write_images(out: &mut String, images: &[ContainerImage]) {
    if images.is_empty() {
        return;
    }
    let _ = writeln!(out, "Images:\t({} in total)", images.len());
    for image in images.iter().take(DESCRIBED_IMAGES) {
        let name = image.names.first().map_or("<none>", String::as_str);
        let _ = writeln!(out, "  {name}\t{}Mi", image.size_bytes / (1024 * 1024));
    }
    if images.len() > DESCRIBED_IMAGES {
        let _ = writeln!(out, "  ...\t({} more)", images.len() - DESCRIBED_IMAGES);
    }
}

/// The text of `berth describe node`; `pods` are the pods bound to it.
pub fn describe_node(node: &Node, pods: &[Pod], events: &[Event], now: SystemTime) -> String {
    let meta = &node.metadata;
    let mut out = String::new();
    let _ = writeln!(out, "Name:\t{}", meta.name);
    let _ = writeln!(out, "Roles:\t{}", node_roles(node));
    write_map(&mut out, "Labels", &meta.labels);
    write_map(&mut out, "Annotations", &meta.annotations);
    let _ = writeln!(
        out,
        "CreationTimestamp:\t{}",
        time_or_none(meta.creation_timestamp.as_ref())
    );
    write_lines(
        &mut out,
        "Taints",
        node.spec.taints.iter().map(format_taint).collect(),
    );
    let _ = writeln!(out, "Unschedulable:\t{}", node.spec.unschedulable);
    if !node.status.conditions.is_empty() {
        out.push_str("Conditions:\n");
        out.push_str("  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n");
        out.push_str("  ----\t------\t-----------------\t------------------\t------\t-------\n");
        for c in &node.status.conditions {
            let _ = writeln!(
                out,
                "  {}\t{}\t{}\t{}\t{}\t{}",
                c.type_,
                c.status,
                time_or_none(c.last_heartbeat_time.as_ref()),
                time_or_none(c.last_transition_time.as_ref()),
                c.reason,
                c.message
            );
        }
    }
    if !node.status.addresses.is_empty() {
        out.push_str("Addresses:\n");
        for a in &node.status.addresses {
            let _ = writeln!(out, "  {}:\t{}", a.type_, a.address);
        }
    }
    for (title, list) in [
        ("Capacity", &node.status.capacity),
        ("Allocatable", node.allocatable()),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "{title}:");
            for (name, q) in list {
                let _ = writeln!(out, "  {name}:\t{q}");
            }
        }
    }
    write_images(&mut out, &node.status.images);
    let allocatable = node.allocatable();
    let active: Vec<&Pod> = pods.iter().filter(|p| !p.is_terminal()).collect();
    let _ = writeln!(out, "Non-terminated Pods:\t({} in total)", active.len());
    out.push_str(
        "  Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n",
    );
    out.push_str(
        "  ---------\t----\t------------\t----------\t---------------\t-------------\t---\n",
    );
    let mut total_requests: BTreeMap<String, i128> = BTreeMap::new();
    let mut total_limits: BTreeMap<String, i128> = BTreeMap::new();
    for pod in &active {
        let requests = pod_request_millis(pod);
        let limits = pod_limits(pod);
        let cell = |map: &BTreeMap<String, i128>, r: &str| {
            amount_with_percent(r, map.get(r).copied().unwrap_or(0), allocatable.get(r))
        };
        let _ = writeln!(
            out,
            "  {}\t{}\t{}\t{}\t{}\t{}\t{}",
            pod.metadata.namespace,
            pod.metadata.name,
            cell(&requests, "cpu"),
            cell(&limits, "cpu"),
            cell(&requests, "memory"),
            cell(&limits, "memory"),
            age(pod.metadata.creation_timestamp.as_ref(), now)
        );
        for (k, v) in requests {
            *total_requests.entry(k).or_default() += v;
        }
        for (k, v) in limits {
            *total_limits.entry(k).or_default() += v;
        }
    }
    out.push_str("Allocated resources:\n");
    out.push_str("  (Total limits may be over 100 percent, i.e., overcommitted.)\n");
    out.push_str("  Resource\tRequests\tLimits\n");
    out.push_str("  --------\t--------\t------\n");
    let mut resources = vec!["cpu".to_string(), "memory".to_string()];
    for name in allocatable.keys() {
        if !matches!(name.as_str(), "cpu" | "memory" | "pods") {
            resources.push(name.clone());
        }
    }
    for r in &resources {
        let _ = writeln!(
            out,
            "  {r}\t{}\t{}",
            amount_with_percent(
                r,
                total_requests.get(r).copied().unwrap_or(0),
                allocatable.get(r)
            ),
            amount_with_percent(
                r,
                total_limits.get(r).copied().unwrap_or(0),
                allocatable.get(r)
            )
        );
    }
    write_events(&mut out, events, now);
    tabulate(&out, 0, DESCRIBE_PADDING)
}

/// The text of `berth describe priorityclass`.
pub fn describe_priority_class(pc: &PriorityClass) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Name:\t{}", pc.metadata.name);
    let _ = writeln!(out, "Value:\t{}", pc.value);
    let _ = writeln!(out, "GlobalDefault:\t{}", pc.global_default);
    let policy = match pc.preemption_policy.unwrap_or_default() {
        PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
        PreemptionPolicy::Never => "Never",
    };
    let _ = writeln!(out, "PreemptionPolicy:\t{policy}");
    let _ = writeln!(out, "Description:\t{}", pc.description);
    write_map(&mut out, "Annotations", &pc.metadata.annotations);
    out.push_str("Events:\t<none>\n");
    tabulate(&out, 0, DESCRIBE_PADDING)
}

/// Most node verdicts `describe` lists; the rest are counted.
const MAX_NODE_VERDICTS: usize = 100;

/// Asks the scheduler where the pending pod could go, node by node.
async fn explain(ctx: &Context<'_>, pod: &Pod) -> anyhow::Result<pb::ExplainResponse> {
    let mut telemetry = super::top::connect_telemetry(ctx).await?;
    Ok(telemetry
        .explain(pb::ExplainRequest {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
        })
        .await?
        .into_inner())
}

/// The `Resource Claims:` section of a pod with claims: each entry, its claim, and the
/// devices allocated to it (`driver/pool/device`, with the capacity a shared device gives
/// it). `claims` maps entry names to the claims found.
pub fn resource_claims(pod: &Pod, claims: &BTreeMap<String, ResourceClaim>) -> String {
    let mut out = String::from("Resource Claims:\n");
    for r in berth_scheduler::dra::convert::pod_claim_refs(pod) {
        let Some(name) = r.claim_name else {
            let _ = writeln!(out, "  {}:\t<not created yet>", r.name);
            continue;
        };
        let Some(claim) = claims.get(&r.name) else {
            let _ = writeln!(out, "  {}:\t{name} <not found>", r.name);
            continue;
        };
        let Some(allocation) = &claim.status.allocation else {
            let _ = writeln!(out, "  {}:\t{name} (pending)", r.name);
            continue;
        };
        let _ = writeln!(out, "  {}:\t{name} ({})", r.name, claim.state());
        for d in &allocation.devices.results {
            let consumed: Vec<String> = d
                .consumed_capacity
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let consumed = if consumed.is_empty() {
                String::new()
            } else {
                format!(" ({})", consumed.join(", "))
            };
            let _ = writeln!(
                out,
                "    {}:\t{}/{}/{}{consumed}",
                d.request, d.driver, d.pool, d.device
            );
        }
    }
    tabulate(&out, 0, DESCRIBE_PADDING)
}

/// The `Node verdicts:` section: each node's filter verdict and, for feasible nodes, the
/// final score — the live counterpart of `berth sim --explain`.
pub fn node_verdicts(answer: &pb::ExplainResponse) -> String {
    let mut out = String::from("Node verdicts (the cluster as the next attempt sees it):\n");
    if answer.nodes.is_empty() {
        out.push_str("  <no nodes>\n");
    }
    let width = answer
        .nodes
        .iter()
        .take(MAX_NODE_VERDICTS)
        .map(|v| v.node.len())
        .max()
        .unwrap_or(0);
    for v in answer.nodes.iter().take(MAX_NODE_VERDICTS) {
        let verdict = if v.feasible {
            format!("feasible, score {}", v.score)
        } else {
            format!("rejected by {}: {}", v.plugin, v.reasons.join(", "))
        };
        out.push_str(&format!("  {:width$}  {verdict}\n", v.node));
    }
    if answer.nodes.len() > MAX_NODE_VERDICTS {
        out.push_str(&format!(
            "  ... and {} more nodes\n",
            answer.nodes.len() - MAX_NODE_VERDICTS
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::failed_scheduling_event;
    use berth_proto::model::{
        NodeCondition, ObjectMeta, ObjectReference, PodCondition, PodPhase, PodSpec, PodStatus,
        ResourceRequirements, TaintEffect, Toleration, TolerationOperator,
    };
    use std::time::Duration;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect("test quantity")
    }

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: name.into(),
            image: "busybox".into(),
            resources: ResourceRequirements {
                requests: requests
                    .iter()
                    .map(|(k, v)| (k.to_string(), q(v)))
                    .collect(),
                limits: limits.iter().map(|(k, v)| (k.to_string(), q(v))).collect(),
                claims: Vec::new(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn pending_pod_shows_why() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let pod = Pod {
            metadata: ObjectMeta {
                name: "web".into(),
                namespace: "default".into(),
                uid: "u1".into(),
                labels: [
                    ("app".to_string(), "web".to_string()),
                    ("tier".to_string(), "fe".to_string()),
                ]
                .into(),
                ..Default::default()
            },
            spec: PodSpec {
                containers: vec![container("app", &[("cpu", "2")], &[])],
                tolerations: vec![Toleration {
                    key: "node.kubernetes.io/not-ready".into(),
                    operator: Some(TolerationOperator::Exists),
                    effect: Some(TaintEffect::NoExecute),
                    toleration_seconds: Some(300),
                    ..Default::default()
                }],
                ..Default::default()
            },
            status: PodStatus {
                phase: PodPhase::Pending,
                conditions: vec![PodCondition {
                    type_: "PodScheduled".into(),
                    status: "False".into(),
                    reason: "Unschedulable".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            ..Default::default()
        };
        let event = failed_scheduling_event(
            "default",
            "web",
            "u1",
            "0/3 nodes are available: 3 Insufficient cpu.",
            Time(now - Duration::from_secs(5)),
        );
        let other = Event {
            involved_object: ObjectReference {
                kind: "Pod".into(),
                namespace: "default".into(),
                name: "db".into(),
                ..Default::default()
            },
            ..event.clone()
        };
        let events = events_about(
            &[
                Object::Event(Box::new(event)),
                Object::Event(Box::new(other)),
            ],
            "Pod",
            &pod.metadata,
        );
        let text = describe_pod(&pod, &events, now);
        let want = "\
Name:         web
Namespace:    default
Priority:     0
Node:         <none>
Labels:       app=web
              tier=fe
Annotations:  <none>
Status:       Pending
IP:           
Containers:
  app:
    Image:  busybox
    Requests:
      cpu:        2
    Environment:  <none>
Conditions:
  Type           Status
  PodScheduled   False
QoS Class:       Burstable
Node-Selectors:  <none>
Tolerations:     node.kubernetes.io/not-ready:NoExecute op=Exists for 300s
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  5s    default-scheduler  0/3 nodes are available: 3 Insufficient cpu.
";
        assert_eq!(text, want, "got:\n{text}");
    }

    #[test]
    fn node_shows_allocated_resources() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut node = Node {
            metadata: ObjectMeta {
                name: "n1".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        node.status.capacity = [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]
            .iter()
            .map(|(k, v)| (k.to_string(), q(v)))
            .collect();
        node.status.conditions.push(NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        });
        node.status.images = (1..=6)
            .map(|i| ContainerImage {
                names: vec![format!("app-{i}:v1"), format!("app@sha256:{i}")],
                size_bytes: (7 - i) * 100 << 20,
            })
            .collect();
        let pod = |name: &str, phase: PodPhase| Pod {
            metadata: ObjectMeta {
                name: name.into(),
                namespace: "default".into(),
                ..Default::default()
            },
            spec: PodSpec {
                node_name: "n1".into(),
                containers: vec![container(
                    "app",
                    &[("cpu", "500m"), ("memory", "1Gi")],
                    &[("cpu", "1")],
                )],
                ..Default::default()
            },
            status: PodStatus {
                phase,
                ..Default::default()
            },
            ..Default::default()
        };
        let pods = vec![
            pod("a", PodPhase::Running),
            pod("b", PodPhase::Running),
            pod("done", PodPhase::Succeeded),
        ];
        let text = describe_node(&node, &pods, &[], now);
        assert!(
            text.contains("\nNon-terminated Pods:  (2 in total)\n"),
            "{text}"
        );
        assert!(text.contains("\n  default             a     500m (12%)    1 (25%)     1Gi (12%)        0 (0%)         <unknown>\n"), "{text}");
        assert!(
            !text.contains(" done "),
            "finished pods hold nothing: {text}"
        );
        assert!(
            text.contains("\n  cpu       1 (25%)    2 (50%)\n"),
            "{text}"
        );
        assert!(text.contains("\n  memory    2Gi (25%)  0 (0%)\n"), "{text}");
        assert!(text.ends_with("\nEvents:     <none>\n"), "{text}");
        // Columns align across sections: compare the words.
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains(" pods: 110 Images: (6 in total) app-1:v1 600Mi app-2:v1 500Mi "),
            "{text}"
        );
        assert!(
            words.contains(" app-5:v1 200Mi ... (1 more) Non-terminated Pods: "),
            "{text}"
        );
    }
}
