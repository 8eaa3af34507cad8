//! Output formatting shared by the verbs: kubectl-style aligned columns, ages, the STATUS and
//! READY columns of pods and nodes, and objects as YAML or JSON.

use std::time::SystemTime;

use berth_proto::model::{Kind, Node, Object, Pod, Taint, Time, Toleration, TolerationOperator};
pub use berth_proto::printers::{node_status, pod_status};

/// Column padding of `get` tables (kubectl's tabwriter: padding 3, minimum cell width 6).
pub const TABLE_PADDING: usize = 3;
/// Minimum cell width of `get` tables, padding included.
pub const TABLE_MIN_WIDTH: usize = 6;
/// Column padding of `describe` output (kubectl's describe tabwriter).
pub const DESCRIBE_PADDING: usize = 2;

/// Aligns tab-separated text the way Go's `text/tabwriter` does, which is what kubectl prints
/// through: a cell ended by a tab belongs to a column, and a column spans a run of consecutive
/// lines that all have that cell, so a line without tabs (a section heading) starts new
/// columns below it. The last cell of a line is never padded.
pub fn tabulate(text: &str, min_width: usize, padding: usize) -> String {
    let lines: Vec<Vec<&str>> = text
        .split_terminator('\n')
        .map(|l| l.split('\t').collect())
        .collect();
    let mut widths: Vec<Vec<usize>> = lines.iter().map(|l| vec![0; l.len()]).collect();
    size_columns(&lines, &mut widths, 0, lines.len(), 0, min_width, padding);
    let mut out = String::with_capacity(text.len() * 2);
    for (line, line_widths) in lines.iter().zip(&widths) {
        for (i, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < line.len() {
                let used = cell.chars().count();
                out.extend(std::iter::repeat_n(
                    ' ',
                    line_widths[i].saturating_sub(used),
                ));
            }
        }
        out.push('\n');
    }
    out
}

/// Sets the width of column `col` for each block of consecutive lines in `start..end` that
/// have a tab-terminated cell at `col`, then recurses into the next column of each block.
fn size_columns(
    lines: &[Vec<&str>],
    widths: &mut [Vec<usize>],
    start: usize,
    end: usize,
    col: usize,
    min_width: usize,
    padding: usize,
) {
    let mut i = start;
    while i < end {
        if lines[i].len() <= col + 1 {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut width = 0;
        while j < end && lines[j].len() > col + 1 {
            width = width.max(lines[j][col].chars().count());
            j += 1;
        }
        let width = (width + padding).max(min_width);
        for w in &mut widths[i..j] {
            w[col] = width;
        }
        size_columns(lines, widths, i, j, col + 1, min_width, padding);
        i = j;
    }
}

/// A `get`-style table: a header row and rows of cells, printed with kubectl's alignment.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; it should have as many cells as the header.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Puts a column before the others, with one cell per row in order.
    pub fn prepend_column(&mut self, title: &str, cells: impl IntoIterator<Item = String>) {
        self.header.insert(0, title.to_string());
        let mut cells = cells.into_iter();
        for row in &mut self.rows {
            row.insert(0, cells.next().unwrap_or_default());
        }
    }

    /// Adds a column after the others, with one cell per row in order.
    pub fn append_column(&mut self, title: &str, cells: impl IntoIterator<Item = String>) {
        self.header.push(title.to_string());
        let mut cells = cells.into_iter();
        for row in &mut self.rows {
            row.push(cells.next().unwrap_or_default());
        }
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The aligned text, with or without the header line.
    pub fn render(&self, headers: bool) -> String {
        let mut text = String::new();
        let all = headers
            .then_some(&self.header)
            .into_iter()
            .chain(self.rows.iter());
        for row in all {
            // A tab in a cell would break the alignment; kubectl prints such values as spaces.
            let cells: Vec<String> = row.iter().map(|c| c.replace(['\t', '\n'], " ")).collect();
            text.push_str(&cells.join("\t"));
            text.push('\n');
        }
        tabulate(&text, TABLE_MIN_WIDTH, TABLE_PADDING)
    }
}

/// A duration the way kubectl prints ages (`HumanDuration`): `45s`, `3m12s`, `15m`, `5h3m`,
/// `20h`, `3d4h`, `50d`, `2y30d`, `9y`. A time slightly in the future (clock skew up to a
/// second) is `0s`; further in the future is `<invalid>`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return two_units(minutes, "m", seconds % 60, "s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return two_units(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return two_units(days, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return two_units(years, "y", days % 365, "d");
    }
    format!("{years}y")
}

/// `3m12s`-style: a count of the larger unit, then the remainder in the smaller one unless it
/// is zero (`5h`, not `5h0m`).
fn two_units(large: i64, large_unit: &str, small: i64, small_unit: &str) -> String {
    if small == 0 {
        format!("{large}{large_unit}")
    } else {
        format!("{large}{large_unit}{small}{small_unit}")
    }
}

/// The age of a timestamp at `now`, as kubectl prints it; `<unknown>` when there is none.
pub fn age(time: Option<&Time>, now: SystemTime) -> String {
    match time {
        None => "<unknown>".into(),
        Some(t) => {
            let seconds = match now.duration_since(t.0) {
                Ok(d) => d.as_secs() as i64,
                Err(e) => -(e.duration().as_secs_f64().ceil() as i64),
            };
            human_duration(seconds)
        }
    }
}

/// The READY column of `get pods`: ready containers over containers (app containers and
/// sidecars).
pub fn pod_ready(pod: &Pod) -> String {
    let sidecars = pod
        .spec
        .init_containers
        .iter()
        .filter(|c| c.restart_policy == Some(berth_proto::model::RestartPolicy::Always));
    let names: Vec<&str> = pod
        .spec
        .containers
        .iter()
        .chain(sidecars)
        .map(|c| c.name.as_str())
        .collect();
    let ready = pod
        .status
        .container_statuses
        .iter()
        .filter(|cs| cs.ready && cs.state.is_running() && names.contains(&cs.name.as_str()))
        .count();
    format!("{ready}/{}", names.len())
}

/// The RESTARTS column of `get pods`: restarts summed over containers.
pub fn pod_restarts(pod: &Pod) -> i64 {
    pod.status
        .container_statuses
        .iter()
        .map(|cs| i64::from(cs.restart_count))
        .sum()
}

/// The ROLES column of `get nodes`: the `node-role.kubernetes.io/<role>` labels and the
/// `kubernetes.io/role` label, sorted and comma-separated, or `<none>`.
pub fn node_roles(node: &Node) -> String {
    let mut roles: Vec<&str> = Vec::new();
    for (key, value) in &node.metadata.labels {
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.push(role);
            }
        } else if key == "kubernetes.io/role" && !value.is_empty() {
            roles.push(value);
        }
    }
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() {
        "<none>".into()
    } else {
        roles.join(",")
    }
}

/// The node's first `InternalIP` address, if any.
pub fn node_internal_ip(node: &Node) -> Option<&str> {
    node.status
        .addresses
        .iter()
        .find(|a| a.type_ == "InternalIP")
        .map(|a| a.address.as_str())
}

/// A taint as kubectl prints it: `key=value:Effect` or `key:Effect`.
pub fn format_taint(taint: &Taint) -> String {
    taint.to_string()
}

/// A toleration as `kubectl describe` prints it: `key=value:Effect`, `key:Effect op=Exists`,
/// `op=Exists` (tolerates everything), with ` for 300s` when it has tolerationSeconds.
pub fn format_toleration(t: &Toleration) -> String {
    let mut s = t.key.clone();
    if !t.value.is_empty() {
        s.push('=');
        s.push_str(&t.value);
    }
    if let Some(effect) = t.effect {
        s.push(':');
        s.push_str(effect.as_str());
    }
    if t.operator == Some(TolerationOperator::Exists) && t.value.is_empty() {
        if s.is_empty() {
            s.push_str("op=Exists");
        } else {
            s.push_str(" op=Exists");
        }
    }
    if let Some(seconds) = t.toleration_seconds {
        s.push_str(&format!(" for {seconds}s"));
    }
    s
}

/// How kubectl names a kind in messages: `pod`, `node`, `priorityclass.scheduling.k8s.io`,
/// `event` (the resource's singular name, with its API group when it has one).
pub fn kind_display(kind: Kind) -> &'static str {
    match kind {
        Kind::Pod => "pod",
        Kind::Node => "node",
        Kind::PriorityClass => "priorityclass.scheduling.k8s.io",
        Kind::Event => "event",
        Kind::Namespace => "namespace",
        Kind::RuntimeClass => "runtimeclass.node.k8s.io",
        Kind::PodDisruptionBudget => "poddisruptionbudget.policy",
        Kind::Deployment => "deployment.apps",
        Kind::ReplicaSet => "replicaset.apps",
        Kind::DaemonSet => "daemonset.apps",
        Kind::ResourceQuota => "resourcequota",
        Kind::Job => "job.batch",
        Kind::DeviceClass => "deviceclass.resource.k8s.io",
        Kind::ResourceClaim => "resourceclaim.resource.k8s.io",
        Kind::ResourceClaimTemplate => "resourceclaimtemplate.resource.k8s.io",
        Kind::ResourceSlice => "resourceslice.resource.k8s.io",
    }
}

/// An object as a JSON value, with `apiVersion` and `kind` first and filled in if they are
/// empty.
pub fn object_value(obj: &Object) -> serde_json::Value {
    serde_json::to_value(obj).expect("model objects serialize to JSON")
}

/// Output formats of objects, shared by `get -o` and `apply --dry-run -o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Pretty JSON (four-space indent, as kubectl).
    Json,
    /// YAML.
    Yaml,
}

/// Renders objects as kubectl does: one object alone, several as a `List`.
pub fn render_objects(objects: &[Object], single: bool, format: Format) -> String {
    render_value(&objects_value(objects, single), format)
}

/// A JSON value as `-o json` (kubectl's four-space indent) or `-o yaml` prints it.
pub fn render_value(value: &serde_json::Value, format: Format) -> String {
    match format {
        Format::Json => pretty_json(value),
        Format::Yaml => serde_yaml_ng::to_string(value).expect("JSON values serialize to YAML"),
    }
}

/// Objects as the JSON value kubectl prints: one object alone, several as a `List`.
pub fn objects_value(objects: &[Object], single: bool) -> serde_json::Value {
    if single && objects.len() == 1 {
        object_value(&objects[0])
    } else {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": objects.iter().map(object_value).collect::<Vec<_>>(),
            "metadata": {"resourceVersion": ""},
        })
    }
}

/// A JSON value as kubectl prints it: four-space indent, a newline at the end.
pub fn pretty_json(value: &serde_json::Value) -> String {
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    serde::Serialize::serialize(value, &mut ser).expect("JSON values serialize");
    let mut s = String::from_utf8(buf).expect("serde_json writes UTF-8");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{
        Container, ContainerState, ContainerStatus, NodeCondition, ObjectMeta, PodCondition,
        PodPhase, PodSpec, PodStatus, RestartPolicy, TaintEffect,
    };
    use std::time::Duration;

    #[test]
    fn human_duration_matches_kubectl() {
        struct Case {
            seconds: i64,
            want: &'static str,
        }
        let cases = [
            Case {
                seconds: -5,
                want: "<invalid>",
            },
            Case {
                seconds: -1,
                want: "0s",
            },
            Case {
                seconds: 0,
                want: "0s",
            },
            Case {
                seconds: 5,
                want: "5s",
            },
            Case {
                seconds: 119,
                want: "119s",
            },
            Case {
                seconds: 120,
                want: "2m",
            },
            Case {
                seconds: 192,
                want: "3m12s",
            },
            Case {
                seconds: 599,
                want: "9m59s",
            },
            Case {
                seconds: 600,
                want: "10m",
            },
            Case {
                seconds: 179 * 60 + 59,
                want: "179m",
            },
            Case {
                seconds: 3 * 3600,
                want: "3h",
            },
            Case {
                seconds: 5 * 3600 + 3 * 60,
                want: "5h3m",
            },
            Case {
                seconds: 20 * 3600,
                want: "20h",
            },
            Case {
                seconds: 47 * 3600,
                want: "47h",
            },
            Case {
                seconds: 48 * 3600,
                want: "2d",
            },
            Case {
                seconds: 3 * 86400 + 4 * 3600,
                want: "3d4h",
            },
            Case {
                seconds: 50 * 86400,
                want: "50d",
            },
            Case {
                seconds: 2 * 365 * 86400 + 30 * 86400,
                want: "2y30d",
            },
            Case {
                seconds: 3 * 365 * 86400,
                want: "3y",
            },
            Case {
                seconds: 9 * 365 * 86400,
                want: "9y",
            },
        ];
        for case in cases {
            assert_eq!(human_duration(case.seconds), case.want, "{}s", case.seconds);
        }
    }

    #[test]
    fn age_of_missing_time_is_unknown() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        assert_eq!(age(None, now), "<unknown>");
        let t = Time(now - Duration::from_secs(65));
        assert_eq!(age(Some(&t), now), "65s");
    }

    fn container(name: &str) -> Container {
        Container {
            name: name.into(),
            ..Default::default()
        }
    }

    fn status(name: &str, state: ContainerState, ready: bool) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            ready,
            state,
            ..Default::default()
        }
    }

    fn pod(phase: PodPhase, reason: &str) -> Pod {
        Pod {
            spec: PodSpec {
                containers: vec![container("app")],
                ..Default::default()
            },
            status: PodStatus {
                phase,
                reason: reason.into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn pod_status_column_follows_kubectl() {
        struct Case {
            name: &'static str,
            pod: Pod,
            want: &'static str,
        }
        let gated = {
            let mut p = pod(PodPhase::Pending, "");
            p.status.conditions.push(PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: "SchedulingGated".into(),
                ..Default::default()
            });
            p
        };
        let running = {
            let mut p = pod(PodPhase::Running, "");
            p.status.container_statuses =
                vec![status("app", ContainerState::running(Time::now()), true)];
            p
        };
        let crashing = {
            let mut p = pod(PodPhase::Running, "");
            p.status.container_statuses = vec![status(
                "app",
                ContainerState::waiting("CrashLoopBackOff"),
                false,
            )];
            p
        };
        let exited = {
            let mut p = pod(PodPhase::Failed, "");
            let cs = status("app", ContainerState::terminated(3, "", Time::now()), false);
            p.status.container_statuses = vec![cs];
            p
        };
        let terminating = {
            let mut p = running.clone();
            p.metadata.deletion_timestamp = Some(Time::now());
            p
        };
        let failed_deleted = {
            let mut p = pod(PodPhase::Failed, "Evicted");
            p.metadata.deletion_timestamp = Some(Time::now());
            p
        };
        let cases = vec![
            Case {
                name: "pending",
                pod: pod(PodPhase::Pending, ""),
                want: "Pending",
            },
            Case {
                name: "gated",
                pod: gated,
                want: "SchedulingGated",
            },
            Case {
                name: "running",
                pod: running,
                want: "Running",
            },
            Case {
                name: "evicted",
                pod: pod(PodPhase::Failed, "Evicted"),
                want: "Evicted",
            },
            Case {
                name: "out of cpu",
                pod: pod(PodPhase::Failed, "OutOfcpu"),
                want: "OutOfcpu",
            },
            Case {
                name: "crash loop",
                pod: crashing,
                want: "CrashLoopBackOff",
            },
            Case {
                name: "exit code",
                pod: exited,
                want: "ExitCode:3",
            },
            Case {
                name: "terminating",
                pod: terminating,
                want: "Terminating",
            },
            Case {
                name: "failed and deleted",
                pod: failed_deleted,
                want: "Evicted",
            },
            Case {
                name: "succeeded",
                pod: pod(PodPhase::Succeeded, ""),
                want: "Succeeded",
            },
        ];
        for case in cases {
            assert_eq!(pod_status(&case.pod), case.want, "{}", case.name);
        }
    }

    #[test]
    fn pod_ready_counts_app_containers_and_sidecars() {
        let mut p = pod(PodPhase::Running, "");
        p.spec.containers.push(container("second"));
        let mut sidecar = container("proxy");
        sidecar.restart_policy = Some(RestartPolicy::Always);
        p.spec.init_containers = vec![sidecar, container("init")];
        p.status.container_statuses = vec![
            status("app", ContainerState::running(Time::now()), true),
            status(
                "second",
                ContainerState::waiting("ContainerCreating"),
                false,
            ),
            status("proxy", ContainerState::running(Time::now()), true),
        ];
        p.status.container_statuses[0].restart_count = 2;
        p.status.container_statuses[2].restart_count = 1;
        assert_eq!(pod_ready(&p), "2/3");
        assert_eq!(pod_restarts(&p), 3);
    }

    #[test]
    fn node_status_and_roles() {
        struct Case {
            name: &'static str,
            ready: Option<&'static str>,
            unschedulable: bool,
            labels: &'static [(&'static str, &'static str)],
            want_status: &'static str,
            want_roles: &'static str,
        }
        let cases = [
            Case {
                name: "ready",
                ready: Some("True"),
                unschedulable: false,
                labels: &[],
                want_status: "Ready",
                want_roles: "<none>",
            },
            Case {
                name: "not ready",
                ready: Some("False"),
                unschedulable: false,
                labels: &[],
                want_status: "NotReady",
                want_roles: "<none>",
            },
            Case {
                name: "unknown",
                ready: Some("Unknown"),
                unschedulable: false,
                labels: &[],
                want_status: "NotReady",
                want_roles: "<none>",
            },
            Case {
                name: "no condition",
                ready: None,
                unschedulable: false,
                labels: &[],
                want_status: "Unknown",
                want_roles: "<none>",
            },
            Case {
                name: "cordoned control plane",
                ready: Some("True"),
                unschedulable: true,
                labels: &[
                    ("node-role.kubernetes.io/control-plane", ""),
                    ("kubernetes.io/role", "infra"),
                ],
                want_status: "Ready,SchedulingDisabled",
                want_roles: "control-plane,infra",
            },
        ];
        for case in cases {
            let mut node = Node::default();
            if let Some(status) = case.ready {
                node.status.conditions.push(NodeCondition {
                    type_: "Ready".into(),
                    status: status.into(),
                    ..Default::default()
                });
            }
            node.spec.unschedulable = case.unschedulable;
            node.metadata = ObjectMeta {
                labels: case
                    .labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Default::default()
            };
            assert_eq!(node_status(&node), case.want_status, "{}", case.name);
            assert_eq!(node_roles(&node), case.want_roles, "{}", case.name);
        }
    }

    #[test]
    fn tolerations_and_taints_print_like_kubectl() {
        struct Case {
            name: &'static str,
            toleration: Toleration,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "equal with effect",
                toleration: Toleration {
                    key: "k".into(),
                    value: "v".into(),
                    effect: Some(TaintEffect::NoSchedule),
                    ..Default::default()
                },
                want: "k=v:NoSchedule",
            },
            Case {
                name: "exists with seconds",
                toleration: Toleration {
                    key: "node.kubernetes.io/not-ready".into(),
                    operator: Some(TolerationOperator::Exists),
                    effect: Some(TaintEffect::NoExecute),
                    toleration_seconds: Some(300),
                    ..Default::default()
                },
                want: "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
            },
            Case {
                name: "tolerate everything",
                toleration: Toleration {
                    operator: Some(TolerationOperator::Exists),
                    ..Default::default()
                },
                want: "op=Exists",
            },
        ];
        for case in cases {
            assert_eq!(
                format_toleration(&case.toleration),
                case.want,
                "{}",
                case.name
            );
        }
        let taint = Taint {
            key: "dedicated".into(),
            value: "gpu".into(),
            effect: TaintEffect::NoSchedule,
            time_added: None,
        };
        assert_eq!(format_taint(&taint), "dedicated=gpu:NoSchedule");
    }

    #[test]
    fn tabulate_aligns_blocks_like_tabwriter() {
        struct Case {
            name: &'static str,
            input: &'static str,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "table",
                input: "NAME\tREADY\tSTATUS\nweb-1\t1/1\tRunning\n",
                want: "NAME    READY   STATUS\nweb-1   1/1     Running\n",
            },
            Case {
                name: "heading breaks the block",
                input: "Name:\tweb\nNamespace:\tdefault\nContainers:\n  app:\n    Image:\tnginx\n",
                want: "Name:        web\nNamespace:   default\nContainers:\n  app:\n    Image:   nginx\n",
            },
        ];
        for case in cases {
            assert_eq!(
                tabulate(case.input, TABLE_MIN_WIDTH, TABLE_PADDING),
                case.want,
                "{}",
                case.name
            );
        }
        let mut table = Table::new(["NAME", "AGE"]);
        table.row(vec!["a".into(), "5s".into()]);
        assert_eq!(table.render(false), "a     5s\n", "minimum width 6");
    }

    #[test]
    fn objects_render_with_api_version_and_kind() {
        let pod = Object::Pod(Box::new(Pod {
            metadata: ObjectMeta {
                name: "web".into(),
                namespace: "default".into(),
                ..Default::default()
            },
            ..Default::default()
        }));
        let single = render_objects(std::slice::from_ref(&pod), true, Format::Yaml);
        assert!(
            single.starts_with("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"),
            "{single}"
        );
        let list = render_objects(&[pod.clone(), pod], false, Format::Json);
        let value: serde_json::Value = serde_json::from_str(&list).expect("valid JSON");
        assert_eq!(value["kind"], "List");
        assert_eq!(value["items"][1]["metadata"]["name"], "web");
        assert!(
            list.contains("\n    \"items\""),
            "four-space indent: {list}"
        );
    }
}
