//! `berth get`: objects as kubectl prints them.
//!
//! Tables: pods `NAME READY STATUS RESTARTS AGE` (wide: `IP NODE NOMINATED NODE`; IP is the
//! node's address, since Berth's pods share their node's network); nodes
//! `NAME STATUS ROLES AGE CPU MEMORY PODS`, where Berth shows the node's allocatable cpu,
//! memory and pod count in place of kubectl's kubelet VERSION (wide adds `INTERNAL-IP` and
//! `TAINTS`); priority classes `NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY`; events
//! `LAST SEEN TYPE REASON OBJECT MESSAGE`, oldest first (wide adds `SOURCE FIRST SEEN COUNT
//! NAME`); namespaces `NAME STATUS AGE`; runtime classes `NAME HANDLER AGE`; disruption
//! budgets `NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE`; deployments
//! `NAME READY UP-TO-DATE AVAILABLE AGE`; replica sets and daemon sets
//! `NAME DESIRED CURRENT READY AGE` (wide, for all three: `CONTAINERS IMAGES SELECTOR`);
//! resource quotas `NAME AGE REQUEST LIMIT`. `-A` adds `NAMESPACE` first for namespaced
//! kinds. `-o yaml|json` prints the objects (a `List` for several), `-o name` prints
//! `pod/web`.

use std::time::SystemTime;

use anyhow::bail;
use berth_proto::model::{
    Event, IntOrString, Kind, LabelSelector, LabelSelectorOperator, Namespace, Node, Object, Pod,
    PodDisruptionBudget, PriorityClass, ResourceQuota, RuntimeClass, Time,
};
use clap::Args;

use super::fields::FieldSelector;
use super::{object_ref, parse_targets, sort_objects, Context, Targets};
use crate::client::WatchEventType;
use crate::jsonpath::Template;
use crate::output::{
    age, format_taint, node_internal_ip, node_roles, node_status, pod_ready, pod_restarts,
    pod_status, render_objects, Format, Table,
};

/// Flags of `berth get`.
#[derive(Args, Debug, Clone)]
pub struct GetArgs {
    /// What to get: `TYPE[,TYPE...] [NAME...]` or `TYPE/NAME...`. Types: pods (po), nodes
    /// (no), priorityclasses (pc), events (ev), namespaces (ns), runtimeclasses,
    /// poddisruptionbudgets (pdb), deployments (deploy), replicasets (rs), daemonsets (ds),
    /// resourcequotas (quota).
    #[arg(required = true, value_name = "TYPE [NAME]...")]
    pub resources: Vec<String>,
    /// Output format: wide, yaml, json, name, `jsonpath=TEMPLATE` or
    /// `custom-columns=HEADER:PATH,...`.
    #[arg(short = 'o', long, value_parser = parse_output, value_name = "FORMAT")]
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
    /// Add a column per label key with the objects' values (`-L app,tier`).
    #[arg(
        short = 'L',
        long = "label-columns",
        value_delimiter = ',',
        value_name = "KEY"
    )]
    pub label_columns: Vec<String>,
    /// Sort the objects by this JSONPath (`{.metadata.creationTimestamp}`, braces optional).
    #[arg(long, value_name = "PATH")]
    pub sort_by: Option<String>,
    /// Leave out the header line.
    #[arg(long)]
    pub no_headers: bool,
    /// After printing the objects, print each change to them until Ctrl-C.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Print only the changes, not the objects as they are now.
    #[arg(long)]
    pub watch_only: bool,
    /// With --watch, say what happened (ADDED, MODIFIED, DELETED) before each object.
    #[arg(long)]
    pub output_watch_events: bool,
}

/// `-o` formats of `berth get`.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputFormat {
    /// The table with more columns.
    Wide,
    /// YAML.
    Yaml,
    /// JSON.
    Json,
    /// `kind/name` per object.
    Name,
    /// `jsonpath=TEMPLATE`: the template over the object (or the List).
    JsonPath(Template),
    /// `custom-columns=HEADER:PATH,...`: a table of these columns.
    CustomColumns(Vec<(String, Template)>),
}

/// Reads `-o` as kubectl does.
pub fn parse_output(text: &str) -> anyhow::Result<OutputFormat> {
    Ok(match text {
        "wide" => OutputFormat::Wide,
        "yaml" => OutputFormat::Yaml,
        "json" => OutputFormat::Json,
        "name" => OutputFormat::Name,
        _ => {
            if let Some(template) = text.strip_prefix("jsonpath=") {
                OutputFormat::JsonPath(Template::parse(template)?)
            } else if let Some(spec) = text.strip_prefix("custom-columns=") {
                OutputFormat::CustomColumns(parse_custom_columns(spec)?)
            } else {
                bail!("unable to match a printer suitable for the output format {text:?}, allowed formats are: custom-columns,json,jsonpath,name,wide,yaml");
            }
        }
    })
}

/// `NAME:.metadata.name,NODE:.spec.nodeName` (braces around a path are optional).
fn parse_custom_columns(spec: &str) -> anyhow::Result<Vec<(String, Template)>> {
    let mut columns = Vec::new();
    for column in spec.split(',').filter(|c| !c.is_empty()) {
        let Some((header, path)) = column.split_once(':') else {
            bail!("unexpected custom-columns spec: {column}, expected <header>:<json-path-expr>");
        };
        let path = if path.starts_with('{') {
            path.to_string()
        } else {
            format!("{{{path}}}")
        };
        columns.push((header.to_string(), Template::parse(&path)?));
    }
    if columns.is_empty() {
        bail!("custom-columns format specified but no custom columns given");
    }
    Ok(columns)
}

/// kubectl's `-L` columns: one per key, titled with the key's last segment in capitals,
/// each cell the object's value of that label (empty when it has none).
pub fn add_label_columns(table: &mut Table, keys: &[String], objects: &[Object]) {
    for key in keys {
        let title = key.rsplit('/').next().unwrap_or(key).to_uppercase();
        let cells = objects
            .iter()
            .map(|o| o.meta().labels.get(key).cloned().unwrap_or_default());
        table.append_column(&title, cells);
    }
}

/// Sorts objects by a JSONPath's value, as `--sort-by`: numbers by value, other values by
/// their text; an object without the field comes first. The sort is stable.
pub fn sort_by_path(objects: &mut [Object], template: &Template) {
    let key = |o: &Object| {
        let values = template
            .values(&crate::output::object_value(o))
            .unwrap_or_default();
        match values.first() {
            None => (0, 0.0, String::new()),
            Some(serde_json::Value::Number(n)) => (1, n.as_f64().unwrap_or(0.0), String::new()),
            Some(serde_json::Value::String(s)) => (2, 0.0, s.clone()),
            Some(other) => (2, 0.0, other.to_string()),
        }
    };
    objects.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then_with(|| ka.2.cmp(&kb.2))
    });
}

/// The custom-columns table of objects: each cell the path's values joined by commas,
/// `<none>` when it has none.
pub fn custom_columns_table(columns: &[(String, Template)], objects: &[Object]) -> Table {
    let mut table = Table::new(columns.iter().map(|(h, _)| h.clone()));
    for object in objects {
        let value = crate::output::object_value(object);
        let cells = columns
            .iter()
            .map(|(_, template)| {
                let values = template.values(&value).unwrap_or_default();
                let texts: Vec<String> = values
                    .iter()
                    .map(|v| match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect();
                if texts.is_empty() {
                    "<none>".to_string()
                } else {
                    texts.join(",")
                }
            })
            .collect();
        table.row(cells);
    }
    table
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
    if args.watch || args.watch_only {
        let target = super::watch::WatchTarget::from_targets(
            &targets,
            namespace,
            label_selector,
            field_selector,
        )?;
        return super::watch::run(&args, target, ctx).await;
    }
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

    if let Some(path) = &args.sort_by {
        let path = if path.starts_with('{') {
            path.clone()
        } else {
            format!("{{{path}}}")
        };
        let template = Template::parse(&path)?;
        for (_, objects) in &mut groups {
            sort_by_path(objects, &template);
        }
    }
    let total: usize = groups.iter().map(|(_, objects)| objects.len()).sum();
    let all_cluster_scoped = groups.iter().all(|(k, _)| !k.is_namespaced());
    let text = match &args.output {
        Some(OutputFormat::JsonPath(template)) => {
            let objects: Vec<Object> = groups.into_iter().flat_map(|(_, o)| o).collect();
            let single = by_name && failures.is_empty() && total == 1 && names_count(&targets) == 1;
            template.render(&crate::output::objects_value(&objects, single))?
        }
        Some(OutputFormat::CustomColumns(columns)) => {
            let objects: Vec<Object> = groups.into_iter().flat_map(|(_, o)| o).collect();
            custom_columns_table(columns, &objects).render(!args.no_headers)
        }
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
                let mut table = table(*kind, objects, options, now);
                add_label_columns(&mut table, &args.label_columns, objects);
                text.push_str(&table.render(!args.no_headers));
            }
            text
        }
    };
    ctx.print(&text)?;
    let table_output = matches!(
        args.output,
        None | Some(OutputFormat::Wide | OutputFormat::CustomColumns(_))
    );
    if total == 0 && failures.is_empty() && !by_name && table_output {
        let message = if args.all_namespaces || all_cluster_scoped {
            "No resources found".to_string()
        } else {
            format!("No resources found in {namespace} namespace.")
        };
        ctx.note(&message)?;
    }
    ctx.finish(&failures)
}

/// Prints objects of one kind a batch at a time, in a `get` output format, as kubectl's
/// printers do over a watch: a table's header comes once, with the first row; YAML documents
/// after the first are separated by `---`.
pub struct Printer {
    output: Option<OutputFormat>,
    options: TableOptions,
    headers: bool,
    events_column: bool,
    label_columns: Vec<String>,
    printed_header: bool,
    documents: usize,
}

impl Printer {
    /// The printer `get --watch` uses for `kind` with these flags.
    pub fn for_watch(args: &GetArgs, kind: Kind) -> Self {
        Printer {
            output: args.output.clone(),
            options: TableOptions {
                wide: args.output == Some(OutputFormat::Wide),
                namespace_column: args.all_namespaces && kind.is_namespaced(),
                kind_prefix: false,
                show_labels: args.show_labels,
            },
            headers: !args.no_headers,
            events_column: args.output_watch_events,
            label_columns: args.label_columns.clone(),
            printed_header: false,
            documents: 0,
        }
    }

    /// The text for these changes (objects with what happened to them).
    pub fn print(
        &mut self,
        kind: Kind,
        items: &[(WatchEventType, Object)],
        now: SystemTime,
    ) -> anyhow::Result<String> {
        if items.is_empty() {
            return Ok(String::new());
        }
        let mut text = String::new();
        match &self.output {
            Some(OutputFormat::JsonPath(template)) => {
                for (_, object) in items {
                    text.push_str(&template.render(&crate::output::object_value(object))?);
                }
            }
            Some(OutputFormat::CustomColumns(columns)) => {
                let objects: Vec<Object> = items.iter().map(|(_, o)| o.clone()).collect();
                text = custom_columns_table(columns, &objects)
                    .render(self.headers && !self.printed_header);
                self.printed_header = true;
            }
            Some(OutputFormat::Wide) | None => {
                let objects: Vec<Object> = items.iter().map(|(_, o)| o.clone()).collect();
                let mut table = table(kind, &objects, self.options, now);
                add_label_columns(&mut table, &self.label_columns, &objects);
                if self.events_column {
                    let events = items.iter().map(|(e, _)| e.as_str().to_string());
                    table.prepend_column("EVENT", events);
                }
                text = table.render(self.headers && !self.printed_header);
                self.printed_header = true;
            }
            Some(OutputFormat::Name) => {
                for (_, object) in items {
                    text.push_str(&object_ref(kind, &object.meta().name));
                    text.push('\n');
                }
            }
            Some(format @ (OutputFormat::Yaml | OutputFormat::Json)) => {
                for (event, object) in items {
                    let value = if self.events_column {
                        serde_json::json!({
                            "type": event.as_str(),
                            "object": crate::output::object_value(object),
                        })
                    } else {
                        crate::output::object_value(object)
                    };
                    if *format == OutputFormat::Yaml {
                        if self.documents > 0 {
                            text.push_str("---\n");
                        }
                        text.push_str(&serde_yaml_ng::to_string(&value)?);
                    } else {
                        text.push_str(&crate::output::pretty_json(&value));
                    }
                    self.documents += 1;
                }
            }
        }
        Ok(text)
    }
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
        Kind::Namespace => &["NAME", "STATUS", "AGE"],
        Kind::RuntimeClass => &["NAME", "HANDLER", "AGE"],
        Kind::PodDisruptionBudget => &[
            "NAME",
            "MIN AVAILABLE",
            "MAX UNAVAILABLE",
            "ALLOWED DISRUPTIONS",
            "AGE",
        ],
        Kind::Deployment if options.wide => &[
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR",
        ],
        Kind::Deployment => &["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        Kind::ReplicaSet | Kind::DaemonSet if options.wide => &[
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR",
        ],
        Kind::ReplicaSet | Kind::DaemonSet => &["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
        Kind::ResourceQuota => &["NAME", "AGE", "REQUEST", "LIMIT"],
        Kind::Job if options.wide => &[
            "NAME",
            "STATUS",
            "COMPLETIONS",
            "DURATION",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR",
        ],
        Kind::Job => &["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        Kind::DeviceClass | Kind::ResourceClaimTemplate => &["NAME", "AGE"],
        Kind::ResourceClaim => &["NAME", "STATE", "AGE"],
        Kind::ResourceSlice => &["NAME", "NODE", "DRIVER", "POOL", "AGE"],
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
            Object::Namespace(ns) => namespace_row(&mut row, name, ns, now),
            Object::RuntimeClass(rc) => runtime_class_row(&mut row, name, rc, now),
            Object::PodDisruptionBudget(pdb) => pdb_row(&mut row, name, pdb, now),
            Object::Deployment(_)
            | Object::ReplicaSet(_)
            | Object::DaemonSet(_)
            | Object::Job(_) => workload_row(&mut row, name, object, options.wide, now),
            Object::ResourceQuota(q) => quota_row(&mut row, name, q, now),
            Object::DeviceClass(_) | Object::ResourceClaimTemplate(_) => {
                row.push(name);
                row.push(age(meta.creation_timestamp.as_ref(), now));
            }
            Object::ResourceClaim(claim) => {
                row.push(name);
                row.push(claim.state());
                row.push(age(meta.creation_timestamp.as_ref(), now));
            }
            Object::ResourceSlice(slice) => {
                row.push(name);
                row.push(or_none(slice.spec.node_name.as_deref().unwrap_or("")));
                row.push(slice.spec.driver.clone());
                row.push(slice.spec.pool.name.clone());
                row.push(age(meta.creation_timestamp.as_ref(), now));
            }
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

/// A label selector as kubectl prints it: requirements sorted by key, `k=v`, `k in (a,b)`,
/// `k notin (a,b)`, `k`, `!k`, joined by commas; `<none>` when absent or empty.
fn selector_cell(selector: Option<&LabelSelector>) -> String {
    let Some(selector) = selector else {
        return "<none>".into();
    };
    let mut requirements: Vec<(&str, String)> = selector
        .match_labels
        .iter()
        .map(|(k, v)| (k.as_str(), format!("{k}={v}")))
        .collect();
    for r in &selector.match_expressions {
        let mut values = r.values.clone();
        values.sort();
        let text = match r.operator {
            LabelSelectorOperator::In => format!("{} in ({})", r.key, values.join(",")),
            LabelSelectorOperator::NotIn => format!("{} notin ({})", r.key, values.join(",")),
            LabelSelectorOperator::Exists => r.key.clone(),
            LabelSelectorOperator::DoesNotExist => format!("!{}", r.key),
        };
        requirements.push((r.key.as_str(), text));
    }
    requirements.sort_by(|a, b| a.0.cmp(b.0));
    let joined: Vec<String> = requirements.into_iter().map(|(_, text)| text).collect();
    or_none(&joined.join(","))
}

/// The row of a Deployment (`READY UP-TO-DATE AVAILABLE`), ReplicaSet (`DESIRED CURRENT
/// READY`), DaemonSet (`DESIRED CURRENT READY`) or Job (`STATUS COMPLETIONS DURATION`),
/// then `AGE`, and with `wide` the columns
/// `CONTAINERS IMAGES SELECTOR`. Other kinds add no cells.
fn workload_row(row: &mut Vec<String>, name: String, object: &Object, wide: bool, now: SystemTime) {
    let (counts, template, selector) = match object {
        Object::Deployment(d) => (
            [
                format!("{}/{}", d.status.ready_replicas, d.spec.replicas),
                d.status.updated_replicas.to_string(),
                d.status.available_replicas.to_string(),
            ],
            &d.spec.template,
            d.spec.selector.as_ref(),
        ),
        Object::ReplicaSet(rs) => {
            let s = &rs.status;
            let counts = [rs.spec.replicas, s.replicas, s.ready_replicas];
            let cells = counts.map(|n| n.to_string());
            (cells, &rs.spec.template, rs.spec.selector.as_ref())
        }
        Object::DaemonSet(ds) => {
            let s = &ds.status;
            let (desired, current) = (s.desired_number_scheduled, s.current_number_scheduled);
            let cells = [desired, current, s.number_ready].map(|n| n.to_string());
            (cells, &ds.spec.template, ds.spec.selector.as_ref())
        }
        Object::Job(job) => (
            super::job::job_cells(job, now),
            &job.spec.template,
            job.spec.selector.as_ref(),
        ),
        _ => return,
    };
    row.push(name);
    row.extend(counts);
    row.push(age(object.meta().creation_timestamp.as_ref(), now));
    if wide {
        let containers = &template.spec.containers;
        let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
        let images: Vec<&str> = containers.iter().map(|c| c.image.as_str()).collect();
        row.push(or_none(&names.join(",")));
        row.push(or_none(&images.join(",")));
        row.push(selector_cell(selector));
    }
}

fn pdb_row(row: &mut Vec<String>, name: String, pdb: &PodDisruptionBudget, now: SystemTime) {
    let bound = |v: &Option<IntOrString>| v.as_ref().map_or("N/A".to_string(), ToString::to_string);
    row.push(name);
    row.push(bound(&pdb.spec.min_available));
    row.push(bound(&pdb.spec.max_unavailable));
    row.push(pdb.status.disruptions_allowed.to_string());
    row.push(age(pdb.metadata.creation_timestamp.as_ref(), now));
}

fn namespace_row(row: &mut Vec<String>, name: String, ns: &Namespace, now: SystemTime) {
    row.push(name);
    row.push(ns.phase().to_string());
    row.push(age(ns.metadata.creation_timestamp.as_ref(), now));
}

fn runtime_class_row(row: &mut Vec<String>, name: String, rc: &RuntimeClass, now: SystemTime) {
    row.push(name);
    row.push(rc.handler.clone());
    row.push(age(rc.metadata.creation_timestamp.as_ref(), now));
}

/// kubectl's `REQUEST` and `LIMIT` cells of a quota: `resource: used/hard` for each limit,
/// `limits.*` ones in LIMIT and the rest in REQUEST. The limits are the status's (what is
/// enforced), or the spec's while no status has been written.
fn quota_cells(quota: &ResourceQuota) -> (String, String) {
    let hard = if quota.status.hard.is_empty() {
        &quota.spec.hard
    } else {
        &quota.status.hard
    };
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    for (resource, limit) in hard {
        let used = quota.status.used.get(resource).copied().unwrap_or_default();
        let cell = format!("{resource}: {used}/{limit}");
        if resource.starts_with("limits") {
            limits.push(cell);
        } else {
            requests.push(cell);
        }
    }
    (requests.join(", "), limits.join(", "))
}

fn quota_row(row: &mut Vec<String>, name: String, quota: &ResourceQuota, now: SystemTime) {
    let (requests, limits) = quota_cells(quota);
    row.push(name);
    row.push(age(quota.metadata.creation_timestamp.as_ref(), now));
    row.push(requests);
    row.push(limits);
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{
        DaemonSet, Deployment, ObjectMeta, PodPhase, PodSpec, PodStatus, PodTemplateSpec,
        ReplicaSet, TaintEffect,
    };
    use berth_proto::Quantity;
    use std::time::Duration;

    #[test]
    fn sort_by_and_label_columns_follow_kubectl() {
        use berth_model::testing::PodBuilder;
        let pod = |name: &str, app: Option<&str>, cpu: i64| {
            let mut b = PodBuilder::new(name).cpu_millis(cpu);
            if let Some(app) = app {
                b = b.label("app.kubernetes.io/name", app);
            }
            Object::Pod(Box::new(b.build()))
        };
        let objects = vec![
            pod("c", Some("web"), 500),
            pod("a", None, 1500),
            pod("b", Some("db"), 250),
        ];
        // (--sort-by, names in order)
        let cases = [
            ("{.metadata.name}", ["a", "b", "c"]),
            (
                "{.metadata.labels['app.kubernetes.io/name']}",
                ["a", "b", "c"],
            ),
            ("{.spec.priority}", ["c", "a", "b"]),
            ("{.spec.containers[0].name}", ["c", "a", "b"]),
        ];
        let mut reversed = objects.clone();
        reversed.reverse();
        for (path, want) in cases {
            let mut sorted = objects.clone();
            sort_by_path(&mut sorted, &Template::parse(path).expect("a path"));
            let names: Vec<&str> = sorted.iter().map(|o| o.meta().name.as_str()).collect();
            assert_eq!(names, want, "{path}");
        }
        // Labels "web" and "db": the unlabelled pod first, then by value.
        let mut labelled = reversed;
        sort_by_path(
            &mut labelled,
            &Template::parse("{.metadata.labels['app.kubernetes.io/name']}").expect("a path"),
        );
        let names: Vec<&str> = labelled.iter().map(|o| o.meta().name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let mut table = Table::new(["NAME"]);
        for o in &objects {
            table.row(vec![o.meta().name.clone()]);
        }
        add_label_columns(
            &mut table,
            &["app.kubernetes.io/name".to_string()],
            &objects,
        );
        assert_eq!(
            table.render(true),
            "NAME   NAME\nc      web\na      \nb      db\n"
        );
    }

    #[test]
    fn tables_have_kubectl_columns() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let created = Some(Time(now - Duration::from_secs(192)));
        let pod = Object::Pod(Box::new(Pod {
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
        }));
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
        let got = table(Kind::Node, &[Object::Node(Box::new(node))], options, now).render(true);
        assert_eq!(
            got,
            "NAME   STATUS                       ROLES    AGE     CPU   MEMORY   PODS   INTERNAL-IP   TAINTS\n\
             n1     Unknown,SchedulingDisabled   <none>   3m12s   4     8Gi      110    <none>        dedicated=gpu:NoSchedule\n"
        );
    }

    #[test]
    fn workload_and_policy_tables_have_kubectl_columns() {
        use berth_proto::model::{
            Container, DaemonSetSpec, DaemonSetStatus, DeploymentSpec, DeploymentStatus,
            LabelSelectorRequirement, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus, PodSpec,
            ReplicaSetSpec, ReplicaSetStatus, ResourceQuotaSpec, ResourceQuotaStatus,
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let meta = |name: &str| ObjectMeta {
            name: name.into(),
            creation_timestamp: Some(Time(now - Duration::from_secs(192))),
            ..Default::default()
        };
        let q = |s: &str| Quantity::parse(s).expect("quantity");
        let selector = LabelSelector {
            match_labels: [("tier".to_string(), "front".to_string())].into(),
            match_expressions: vec![LabelSelectorRequirement {
                key: "app".into(),
                operator: LabelSelectorOperator::In,
                values: vec!["web".into(), "api".into()],
            }],
        };
        let template = PodTemplateSpec {
            metadata: Default::default(),
            spec: PodSpec {
                containers: vec![
                    Container {
                        name: "app".into(),
                        image: "nginx:1.27".into(),
                        ..Default::default()
                    },
                    Container {
                        name: "log".into(),
                        image: "busybox".into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        };
        struct Case {
            name: &'static str,
            object: Object,
            wide: bool,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "namespace",
                object: Object::Namespace(Box::new(Namespace {
                    metadata: meta("shop"),
                    ..Default::default()
                })),
                wide: false,
                want: "NAME   STATUS   AGE\n\
                       shop   Active   3m12s\n",
            },
            Case {
                name: "runtime class",
                object: Object::RuntimeClass(Box::new(RuntimeClass {
                    metadata: meta("kata"),
                    handler: "kata-fc".into(),
                    ..Default::default()
                })),
                wide: false,
                want: "NAME   HANDLER   AGE\n\
                       kata   kata-fc   3m12s\n",
            },
            Case {
                name: "pdb",
                object: Object::PodDisruptionBudget(Box::new(PodDisruptionBudget {
                    metadata: meta("web"),
                    spec: PodDisruptionBudgetSpec {
                        max_unavailable: Some(IntOrString::String("25%".into())),
                        ..Default::default()
                    },
                    status: PodDisruptionBudgetStatus {
                        disruptions_allowed: 1,
                        ..Default::default()
                    },
                    ..Default::default()
                })),
                wide: false,
                want: "NAME   MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE\n\
                       web    N/A             25%               1                     3m12s\n",
            },
            Case {
                name: "deployment",
                object: Object::Deployment(Box::new(Deployment {
                    metadata: meta("web"),
                    spec: DeploymentSpec {
                        replicas: 3,
                        ..Default::default()
                    },
                    status: DeploymentStatus {
                        ready_replicas: 2,
                        updated_replicas: 3,
                        available_replicas: 1,
                        ..Default::default()
                    },
                    ..Default::default()
                })),
                wide: false,
                want: "NAME   READY   UP-TO-DATE   AVAILABLE   AGE\n\
                       web    2/3     3            1           3m12s\n",
            },
            Case {
                name: "deployment, wide",
                object: Object::Deployment(Box::new(Deployment {
                    metadata: meta("web"),
                    spec: DeploymentSpec {
                        selector: Some(selector.clone()),
                        template: template.clone(),
                        ..Default::default()
                    },
                    ..Default::default()
                })),
                wide: true,
                want: "NAME   READY   UP-TO-DATE   AVAILABLE   AGE     CONTAINERS   IMAGES               SELECTOR\n\
                       web    0/1     0            0           3m12s   app,log      nginx:1.27,busybox   app in (api,web),tier=front\n",
            },
            Case {
                name: "replica set",
                object: Object::ReplicaSet(Box::new(ReplicaSet {
                    metadata: meta("web-abc"),
                    spec: ReplicaSetSpec {
                        replicas: 3,
                        ..Default::default()
                    },
                    status: ReplicaSetStatus {
                        replicas: 3,
                        ready_replicas: 2,
                        ..Default::default()
                    },
                    ..Default::default()
                })),
                wide: false,
                want: "NAME      DESIRED   CURRENT   READY   AGE\n\
                       web-abc   3         3         2       3m12s\n",
            },
            Case {
                name: "daemon set, wide, no selector",
                object: Object::DaemonSet(Box::new(DaemonSet {
                    metadata: meta("agent"),
                    spec: DaemonSetSpec {
                        selector: None,
                        template: template.clone(),
                        ..Default::default()
                    },
                    status: DaemonSetStatus {
                        desired_number_scheduled: 4,
                        current_number_scheduled: 4,
                        number_ready: 3,
                        ..Default::default()
                    },
                    ..Default::default()
                })),
                wide: true,
                want: "NAME    DESIRED   CURRENT   READY   AGE     CONTAINERS   IMAGES               SELECTOR\n\
                       agent   4         4         3       3m12s   app,log      nginx:1.27,busybox   <none>\n",
            },
            Case {
                name: "resource quota",
                object: Object::ResourceQuota(Box::new(ResourceQuota {
                    metadata: meta("compute"),
                    spec: ResourceQuotaSpec {
                        hard: [("pods".to_string(), q("99"))].into(),
                        ..Default::default()
                    },
                    status: ResourceQuotaStatus {
                        hard: [
                            ("limits.cpu".to_string(), q("2")),
                            ("pods".to_string(), q("10")),
                            ("requests.cpu".to_string(), q("1")),
                        ]
                        .into(),
                        used: [("requests.cpu".to_string(), q("250m"))].into(),
                    },
                    ..Default::default()
                })),
                wide: false,
                want: "NAME      AGE     REQUEST                            LIMIT\n\
                       compute   3m12s   pods: 0/10, requests.cpu: 250m/1   limits.cpu: 0/2\n",
            },
            Case {
                name: "resource quota before its status is written",
                object: Object::ResourceQuota(Box::new(ResourceQuota {
                    metadata: meta("pods"),
                    spec: ResourceQuotaSpec {
                        hard: [("pods".to_string(), q("10"))].into(),
                        ..Default::default()
                    },
                    ..Default::default()
                })),
                wide: false,
                want: "NAME   AGE     REQUEST      LIMIT\n\
                       pods   3m12s   pods: 0/10   \n",
            },
        ];
        for case in cases {
            let options = TableOptions {
                wide: case.wide,
                ..Default::default()
            };
            let kind = case.object.kind();
            let got = table(kind, std::slice::from_ref(&case.object), options, now).render(true);
            assert_eq!(got, case.want, "{}", case.name);
        }
    }
}
