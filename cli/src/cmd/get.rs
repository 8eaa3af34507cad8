//! `berth get`: objects as kubectl prints them.
//!
//! Tables: pods `NAME READY STATUS RESTARTS AGE` (wide: `IP NODE NOMINATED NODE`; IP is the
//! node's address, since Berth's pods share their node's network); nodes
//! `NAME STATUS ROLES AGE CPU MEMORY PODS`, where Berth shows the node's allocatable cpu,
//! memory and pod count in place of kubectl's kubelet VERSION (wide adds `INTERNAL-IP` and
//! `TAINTS`); priority classes `NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY`; events
//! `LAST SEEN TYPE REASON OBJECT MESSAGE`, oldest first (wide adds `SOURCE FIRST SEEN COUNT
//! NAME`). `-A` adds `NAMESPACE` first for namespaced kinds. `-o yaml|json` prints the
//! objects (a `List` for several), `-o name` prints `pod/web`.

use std::time::SystemTime;

use anyhow::bail;
use berth_proto::model::{Event, Kind, Node, Object, Pod, PriorityClass, Time};
use clap::{Args, ValueEnum};

use super::fields::FieldSelector;
use super::{object_ref, parse_targets, sort_objects, Context, Reported, Targets};
use crate::output::{
    age, format_taint, node_internal_ip, node_roles, node_status, pod_ready, pod_restarts,
    pod_status, render_objects, Format, Table,
};

/// Flags of `berth get`.
#[derive(Args, Debug, Clone)]
pub struct GetArgs {
    /// What to get: `TYPE[,TYPE...] [NAME...]` or `TYPE/NAME...`. Types: pods (po), nodes
    /// (no), priorityclasses (pc), events (ev).
    #[arg(required = true, value_name = "TYPE [NAME]...")]
    pub resources: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    pub output: Option<OutputFormat>,
    /// List objects in every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Label selector, e.g. `app=web,tier!=db,env in (a,b),!legacy`.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Field selector, e.g. `spec.nodeName=node-1,status.phase!=Running`.
    #[arg(long, value_name = "SELECTOR")]
    pub field_selector: Option<String>,
    /// Add a LABELS column.
    #[arg(long)]
    pub show_labels: bool,
    /// Leave out the header line.
    #[arg(long)]
    pub no_headers: bool,
}

/// `-o` formats of `berth get`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The table with more columns.
    Wide,
    /// YAML.
    Yaml,
    /// JSON.
    Json,
    /// `kind/name` per object.
    Name,
}

/// How a table is printed.
#[derive(Clone, Copy, Debug, Default)]
pub struct TableOptions {
    /// More columns (`-o wide`).
    pub wide: bool,
    /// A NAMESPACE column first.
    pub namespace_column: bool,
    /// Names as `kind/name` (when several kinds are printed).
    pub kind_prefix: bool,
    /// A LABELS column last.
    pub show_labels: bool,
}

/// Runs `berth get`.
pub async fn run(args: GetArgs, ctx: &mut Context<'_>) -> anyhow::Result<()> {
    let targets = parse_targets(&args.resources)?;
    let label_selector = args.selector.clone().unwrap_or_default();
    // Check the selector here, so a typo is reported without a round trip.
    berth_proto::selector::parse(&label_selector)?;
    let field_selector = FieldSelector::parse(args.field_selector.as_deref().unwrap_or(""))?;
    let by_name = match &targets {
        Targets::Named(_) => true,
        Targets::Kinds { names, .. } => !names.is_empty(),
    };
    if by_name && args.all_namespaces {
        bail!("a resource cannot be retrieved by name across all namespaces");
    }
    if by_name && (args.selector.is_some() || args.field_selector.is_some()) {
        bail!("when specifying names, selectors (-l, --field-selector) are not allowed");
    }
    let namespace = if args.all_namespaces {
        String::new()
    } else {
        ctx.namespace().to_string()
    };
    let mut client = ctx.connect().await?;

    // Objects grouped by kind, in the order the kinds were asked for.
    let mut groups: Vec<(Kind, Vec<Object>)> = Vec::new();
    let mut failures = Vec::new();
    match &targets {
        Targets::Kinds { kinds, names } if names.is_empty() => {
            for &kind in kinds {
                field_selector.check(kind)?;
                let node = if kind == Kind::Pod {
                    field_selector.node_name().unwrap_or("")
                } else {
                    ""
                };
                let mut objects = client.list(kind, &namespace, &label_selector, node).await?;
                objects.retain(|o| field_selector.matches(o));
                if kind == Kind::Event {
                    sort_events(&mut objects);
                } else {
                    sort_objects(&mut objects);
                }
                groups.push((kind, objects));
            }
        }
        _ => {
            for (kind, name) in super::named_objects(&targets) {
                match client.get(kind, &namespace, &name).await {
                    Ok(object) => match groups.iter_mut().find(|(k, _)| *k == kind) {
                        Some((_, objects)) => objects.push(object),
                        None => groups.push((kind, vec![object])),
                    },
                    Err(e) => failures.push(e.to_string()),
                }
            }
        }
    }

    let total: usize = groups.iter().map(|(_, objects)| objects.len()).sum();
    let all_cluster_scoped = groups.iter().all(|(k, _)| !k.is_namespaced());
    let text = match args.output {
        Some(OutputFormat::Yaml | OutputFormat::Json) => {
            let format = if args.output == Some(OutputFormat::Json) {
                Format::Json
            } else {
                Format::Yaml
            };
            let objects: Vec<Object> = groups.into_iter().flat_map(|(_, o)| o).collect();
            // A single object asked for by name prints alone; anything else is a List.
            let single = by_name && failures.is_empty() && total == 1 && names_count(&targets) == 1;
            // An empty list still prints as an empty List, as kubectl does.
            if objects.is_empty() && by_name {
                String::new()
            } else {
                render_objects(&objects, single, format)
            }
        }
        Some(OutputFormat::Name) => groups
            .iter()
            .flat_map(|(kind, objects)| {
                objects
                    .iter()
                    .map(move |o| format!("{}\n", object_ref(*kind, &o.meta().name)))
            })
            .collect(),
        Some(OutputFormat::Wide) | None => {
            let options = TableOptions {
                wide: args.output == Some(OutputFormat::Wide),
                namespace_column: args.all_namespaces,
                kind_prefix: groups.len() > 1,
                show_labels: args.show_labels,
            };
            let now = SystemTime::now();
            let mut text = String::new();
            for (kind, objects) in groups.iter().filter(|(_, o)| !o.is_empty()) {
                if !text.is_empty() {
                    text.push('\n');
                }
                let table = table(*kind, objects, options, now);
                text.push_str(&table.render(!args.no_headers));
            }
            text
        }
    };
    ctx.print(&text)?;
    let table_output = matches!(args.output, None | Some(OutputFormat::Wide));
    if total == 0 && failures.is_empty() && !by_name && table_output {
        let message = if args.all_namespaces || all_cluster_scoped {
            "No resources found".to_string()
        } else {
            format!("No resources found in {namespace} namespace.")
        };
        ctx.note(&message)?;
    }
    if !failures.is_empty() {
        for failure in &failures {
            ctx.error_line(failure)?;
        }
        return Err(Reported {
            failed: failures.len(),
        }
        .into());
    }
    Ok(())
}

fn names_count(targets: &Targets) -> usize {
    super::named_objects(targets).len()
}

/// The time an event last happened: lastTimestamp, else firstTimestamp, else creation.
pub fn event_time(event: &Event) -> Option<&Time> {
    event
        .last_timestamp
        .as_ref()
        .or(event.first_timestamp.as_ref())
        .or(event.metadata.creation_timestamp.as_ref())
}

/// Sorts events oldest first, as `kubectl events` does.
pub fn sort_events(objects: &mut [Object]) {
    objects.sort_by(|a, b| {
        let time = |o: &Object| match o {
            Object::Event(e) => event_time(e).copied(),
            _ => None,
        };
        time(a)
            .cmp(&time(b))
            .then_with(|| a.meta().name.cmp(&b.meta().name))
    });
}

/// The table of objects of one kind.
pub fn table(kind: Kind, objects: &[Object], options: TableOptions, now: SystemTime) -> Table {
    let mut header: Vec<&str> = Vec::new();
    if options.namespace_column && kind.is_namespaced() {
        header.push("NAMESPACE");
    }
    let columns: &[&str] = match kind {
        Kind::Pod if options.wide => &[
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
        ],
        Kind::Pod => &["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        Kind::Node if options.wide => &[
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "CPU",
            "MEMORY",
            "PODS",
            "INTERNAL-IP",
            "TAINTS",
        ],
        Kind::Node => &["NAME", "STATUS", "ROLES", "AGE", "CPU", "MEMORY", "PODS"],
        Kind::PriorityClass => &["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
        Kind::Event if options.wide => &[
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME",
        ],
        Kind::Event => &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
    };
    header.extend_from_slice(columns);
    if options.show_labels {
        header.push("LABELS");
    }
    let mut table = Table::new(header);
    for object in objects {
        let meta = object.meta();
        let mut row = Vec::new();
        if options.namespace_column && kind.is_namespaced() {
            row.push(meta.namespace.clone());
        }
        let name = if options.kind_prefix {
            object_ref(kind, &meta.name)
        } else {
            meta.name.clone()
        };
        match object {
            Object::Pod(pod) => pod_row(&mut row, name, pod, options.wide, now),
            Object::Node(node) => node_row(&mut row, name, node, options.wide, now),
            Object::PriorityClass(pc) => priority_class_row(&mut row, name, pc, now),
            Object::Event(event) => event_row(&mut row, name, event, options.wide, now),
        }
        if options.show_labels {
            row.push(labels_cell(&meta.labels));
        }
        table.row(row);
    }
    table
}

fn or_none(value: &str) -> String {
    if value.is_empty() {
        "<none>".into()
    } else {
        value.to_string()
    }
}

fn labels_cell(labels: &berth_proto::model::StringMap) -> String {
    if labels.is_empty() {
        return "<none>".into();
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn pod_row(row: &mut Vec<String>, name: String, pod: &Pod, wide: bool, now: SystemTime) {
    row.push(name);
    row.push(pod_ready(pod));
    row.push(pod_status(pod));
    row.push(pod_restarts(pod).to_string());
    row.push(age(pod.metadata.creation_timestamp.as_ref(), now));
    if wide {
        row.push(or_none(&pod.status.host_ip));
        row.push(or_none(&pod.spec.node_name));
        row.push(or_none(&pod.status.nominated_node_name));
    }
}

fn node_row(row: &mut Vec<String>, name: String, node: &Node, wide: bool, now: SystemTime) {
    let allocatable = node.allocatable();
    let resource = |r: &str| {
        allocatable
            .get(r)
            .map_or("<none>".into(), |q| q.to_string())
    };
    row.push(name);
    row.push(node_status(node));
    row.push(node_roles(node));
    row.push(age(node.metadata.creation_timestamp.as_ref(), now));
    row.push(resource("cpu"));
    row.push(resource("memory"));
    row.push(resource("pods"));
    if wide {
        row.push(or_none(node_internal_ip(node).unwrap_or("")));
        let taints: Vec<String> = node.spec.taints.iter().map(format_taint).collect();
        row.push(or_none(&taints.join(",")));
    }
}

fn priority_class_row(row: &mut Vec<String>, name: String, pc: &PriorityClass, now: SystemTime) {
    row.push(name);
    row.push(pc.value.to_string());
    row.push(pc.global_default.to_string());
    row.push(age(pc.metadata.creation_timestamp.as_ref(), now));
    let policy = match pc.preemption_policy.unwrap_or_default() {
        berth_proto::model::PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
        berth_proto::model::PreemptionPolicy::Never => "Never",
    };
    row.push(policy.to_string());
}

fn event_row(row: &mut Vec<String>, name: String, event: &Event, wide: bool, now: SystemTime) {
    let involved = &event.involved_object;
    let object = format!("{}/{}", involved.kind.to_lowercase(), involved.name);
    row.push(age(event_time(event), now));
    row.push(event.type_.clone());
    row.push(event.reason.clone());
    row.push(object);
    if wide {
        row.push(or_none(&event.reporting_component));
        row.push(event.message.clone());
        row.push(age(
            event
                .first_timestamp
                .as_ref()
                .or(event.metadata.creation_timestamp.as_ref()),
            now,
        ));
        row.push(event.count.max(1).to_string());
        row.push(name);
    } else {
        row.push(event.message.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{ObjectMeta, PodPhase, PodSpec, PodStatus, TaintEffect};
    use berth_proto::Quantity;
    use std::time::Duration;

    #[test]
    fn tables_have_kubectl_columns() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let created = Some(Time(now - Duration::from_secs(192)));
        let pod = Object::Pod(Pod {
            metadata: ObjectMeta {
                name: "web-1".into(),
                namespace: "shop".into(),
                creation_timestamp: created,
                ..Default::default()
            },
            spec: PodSpec {
                containers: vec![Default::default()],
                ..Default::default()
            },
            status: PodStatus {
                phase: PodPhase::Failed,
                reason: "OutOfcpu".into(),
                ..Default::default()
            },
            ..Default::default()
        });
        let options = TableOptions {
            wide: true,
            namespace_column: true,
            ..Default::default()
        };
        let got = table(Kind::Pod, std::slice::from_ref(&pod), options, now).render(true);
        assert_eq!(
            got,
            "NAMESPACE   NAME    READY   STATUS     RESTARTS   AGE     IP       NODE     NOMINATED NODE\n\
             shop        web-1   0/1     OutOfcpu   0          3m12s   <none>   <none>   <none>\n"
        );

        let mut node = Node {
            metadata: ObjectMeta {
                name: "n1".into(),
                creation_timestamp: created,
                ..Default::default()
            },
            ..Default::default()
        };
        node.status
            .capacity
            .insert("cpu".into(), Quantity::from_millis(4000));
        node.status
            .capacity
            .insert("memory".into(), Quantity::parse("8Gi").expect("quantity"));
        node.status
            .capacity
            .insert("pods".into(), Quantity::from_value(110));
        node.spec.unschedulable = true;
        node.spec.taints.push(berth_proto::model::Taint {
            key: "dedicated".into(),
            value: "gpu".into(),
            effect: TaintEffect::NoSchedule,
            time_added: None,
        });
        let options = TableOptions {
            wide: true,
            ..Default::default()
        };
        let got = table(Kind::Node, &[Object::Node(node)], options, now).render(true);
        assert_eq!(
            got,
            "NAME   STATUS                       ROLES    AGE     CPU   MEMORY   PODS   INTERNAL-IP   TAINTS\n\
             n1     Unknown,SchedulingDisabled   <none>   3m12s   4     8Gi      110    <none>        dedicated=gpu:NoSchedule\n"
        );
    }
}
