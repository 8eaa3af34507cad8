//! What the web view shows, as the JSON the page renders: the cluster summary, nodes with
//! their allocation, pods (with the latest FailedScheduling message of pending ones), recent
//! events, and the history of the charts. Built from the watched objects by pure functions,
//! so that every rule here is unit-tested without a server.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{SystemTime, UNIX_EPOCH};

use berth_proto::model::{Event, Node, Pod, PodPhase, ResourceClaim, ResourceSlice, Time};
use berth_proto::printers::{node_status, pod_status};
use berth_proto::resources::{self, pod_requests, Resources};
use serde::Serialize;

/// Most nodes the page lists (the summary and the charts count them all).
pub const MAX_NODES: usize = 500;
/// Most pods the page lists: pending ones first, then the newest.
pub const MAX_PODS: usize = 500;
/// How many of the latest events the page lists.
pub const MAX_EVENTS: usize = 50;
/// Samples the charts keep: at one every [`super::SAMPLE_INTERVAL`], ten minutes.
pub const HISTORY_SAMPLES: usize = 300;

/// The scheduler's event reason for a pod it could not place.
const FAILED_SCHEDULING: &str = "FailedScheduling";

/// The objects a view is built from.
#[derive(Clone, Debug, Default)]
pub struct Cluster<'a> {
    /// Nodes.
    pub nodes: Vec<&'a Node>,
    /// Pods.
    pub pods: Vec<&'a Pod>,
    /// Events.
    pub events: Vec<&'a Event>,
    /// ResourceSlices: the nodes' devices.
    pub slices: Vec<&'a ResourceSlice>,
    /// ResourceClaims: which devices are allocated.
    pub claims: Vec<&'a ResourceClaim>,
}

/// Everything the page shows.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// When it was built, in milliseconds since the Unix epoch.
    pub generated_ms: u64,
    /// Counts and cluster-wide allocation.
    pub summary: Summary,
    /// Nodes by name, at most [`MAX_NODES`].
    pub nodes: Vec<NodeView>,
    /// Pending pods first (oldest first), then the others (newest first); at most
    /// [`MAX_PODS`].
    pub pods: Vec<PodView>,
    /// The latest events, newest first; at most [`MAX_EVENTS`].
    pub events: Vec<EventView>,
    /// The charts' samples, oldest first.
    pub history: Vec<Sample>,
}

/// Counts over the whole cluster.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Nodes.
    pub nodes: usize,
    /// Nodes whose Ready condition is True.
    pub ready_nodes: usize,
    /// Pods.
    pub pods: usize,
    /// Pods not yet bound to a node (and not ended).
    pub unscheduled: usize,
    /// Pods by phase: Pending, Running, Succeeded, Failed, Unknown (in that order).
    pub phases: Vec<(String, usize)>,
    /// Requests of the pods on nodes against the nodes' allocatable, summed over nodes.
    pub allocation: Vec<Bar>,
}

/// One resource's allocation: what the pods bound to a node request, against what the node
/// offers. Amounts are in the resource's base unit: millicores for `cpu`, bytes for
/// `memory`, a count otherwise. A node's devices (ResourceSlices) get a bar per driver,
/// named by the driver: its devices held by allocated claims, against all of them.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Bar {
    /// Resource name (`cpu`, `memory`, `pods`, `example.com/gpu`).
    pub resource: String,
    /// Requested by the pods bound to the node(s), terminal pods left out.
    pub allocated: i64,
    /// The node's (or the nodes') allocatable amount.
    pub allocatable: i64,
}

/// A node as the page lists it.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    /// Name.
    pub name: String,
    /// `get nodes`' STATUS (`Ready`, `NotReady,SchedulingDisabled`).
    pub status: String,
    /// Whether the Ready condition is True.
    pub ready: bool,
    /// cpu, memory, pods, the extended resources the node offers, then its devices by
    /// driver.
    pub bars: Vec<Bar>,
    /// Taints as kubectl prints them (`key=value:Effect`).
    pub taints: Vec<String>,
    /// Conditions as reported.
    pub conditions: Vec<ConditionView>,
}

/// A node condition.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ConditionView {
    /// Type (`Ready`, `MemoryPressure`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
}

/// A pod as the page lists it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PodView {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Phase.
    pub phase: String,
    /// `get pods`' STATUS (`Running`, `Terminating`, `OutOfcpu`).
    pub status: String,
    /// The node it is bound to, if any.
    pub node: Option<String>,
    /// For a pod not yet bound: the message of its latest FailedScheduling event.
    pub message: Option<String>,
    /// Creation time, in milliseconds since the Unix epoch.
    pub created_ms: Option<u64>,
}

/// An event as the page lists it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    /// When it last happened, in milliseconds since the Unix epoch.
    pub time_ms: Option<u64>,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Reason.
    pub reason: String,
    /// The object it is about (`pod/default/web`, `node/node-1`).
    pub object: String,
    /// Message.
    pub message: String,
    /// How many times it happened.
    pub count: i32,
    /// The component that reported it.
    pub from: String,
}

/// One point of the charts.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Requested cpu as a percentage of the nodes' allocatable cpu.
    pub cpu: f64,
    /// Requested memory as a percentage of the nodes' allocatable memory.
    pub memory: f64,
    /// Pods on nodes as a percentage of the nodes' pod slots.
    pub pods: f64,
    /// Pods not yet bound to a node.
    pub unscheduled: usize,
    /// Pods bound per second since the previous sample.
    pub scheduled_per_second: f64,
}

/// The charts' ring of samples, and the count of bindings seen, from which the scheduling
/// rate is taken.
#[derive(Debug)]
pub struct History {
    samples: VecDeque<Sample>,
    capacity: usize,
    /// Pods seen going from unbound to bound since the view started.
    bound: u64,
    /// `bound` and the time at the previous sample.
    last: Option<(u64, SystemTime)>,
}

impl History {
    /// An empty history of at most `capacity` samples.
    pub fn new(capacity: usize) -> Self {
        History {
            samples: VecDeque::with_capacity(capacity),
            capacity,
            bound: 0,
            last: None,
        }
    }

    /// Notes a change of a pod, with the state held before: a pod that had no node and now
    /// has one was scheduled. A pod seen for the first time is not counted: after a list it
    /// may have been bound long ago, and one created with a node was never scheduled.
    pub fn observe(&mut self, pod: &Pod, previous: Option<&Pod>) {
        let was_bound = previous.is_some_and(|p| !p.spec.node_name.is_empty());
        if previous.is_some() && !was_bound && !pod.spec.node_name.is_empty() {
            self.bound += 1;
        }
    }

    /// Adds a sample of `summary` taken at `now`, dropping the oldest beyond the capacity.
    pub fn sample(&mut self, summary: &Summary, now: SystemTime) {
        let rate = match self.last {
            Some((bound, at)) => {
                let seconds = now.duration_since(at).unwrap_or_default().as_secs_f64();
                if seconds > 0.0 {
                    (self.bound - bound) as f64 / seconds
                } else {
                    0.0
                }
            }
            None => 0.0,
        };
        self.last = Some((self.bound, now));
        let percent = |resource: &str| {
            summary
                .allocation
                .iter()
                .find(|b| b.resource == resource)
                .filter(|b| b.allocatable > 0)
                .map_or(0.0, |b| b.allocated as f64 * 100.0 / b.allocatable as f64)
        };
        if self.samples.len() == self.capacity {
            self.samples.pop_front();
        }
        self.samples.push_back(Sample {
            at_ms: unix_ms(now),
            cpu: percent(resources::CPU),
            memory: percent(resources::MEMORY),
            pods: percent(resources::PODS),
            unscheduled: summary.unscheduled,
            scheduled_per_second: rate,
        });
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter()
    }
}

/// Milliseconds since the Unix epoch (0 before it).
fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn time_ms(t: Option<&Time>) -> Option<u64> {
    t.map(|t| unix_ms(t.0))
}

/// What the pods bound to each node request, and how many they are (terminal pods hold
/// nothing, as in the scheduler's accounting).
fn requests_by_node<'a>(pods: &[&'a Pod]) -> HashMap<&'a str, Resources> {
    let mut by_node: HashMap<&str, Resources> = HashMap::new();
    for pod in pods {
        if pod.spec.node_name.is_empty() || pod.is_terminal() {
            continue;
        }
        let requested = by_node.entry(pod.spec.node_name.as_str()).or_default();
        requested.add(&pod_requests(pod));
        requested.allowed_pods += 1;
    }
    by_node
}

/// Devices by node and driver: how many node-local devices the newest generation of each
/// pool has, and how many of them allocated claims hold (allocated, total).
type Devices<'a> = HashMap<&'a str, BTreeMap<&'a str, (i64, i64)>>;

fn devices_by_node<'a>(slices: &[&'a ResourceSlice], claims: &[&'a ResourceClaim]) -> Devices<'a> {
    let mut newest: HashMap<(&str, &str), i64> = HashMap::new();
    for slice in slices {
        let pool = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
        let generation = newest.entry(pool).or_insert(slice.spec.pool.generation);
        *generation = (*generation).max(slice.spec.pool.generation);
    }
    let held: HashSet<(&str, &str, &str)> = claims
        .iter()
        .filter_map(|claim| claim.status.allocation.as_ref())
        .flat_map(|allocation| &allocation.devices.results)
        .map(|r| (r.driver.as_str(), r.pool.as_str(), r.device.as_str()))
        .collect();
    let mut by_node: Devices = HashMap::new();
    for slice in slices {
        let (driver, pool) = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
        if newest.get(&(driver, pool)) != Some(&slice.spec.pool.generation) {
            continue;
        }
        for device in &slice.spec.devices {
            // Devices reachable from many nodes (a selector, all nodes) belong to none.
            let node = if slice.spec.per_device_node_selection == Some(true) {
                device.node_name.as_deref()
            } else {
                slice.spec.node_name.as_deref()
            };
            let Some(node) = node else { continue };
            let counts = by_node.entry(node).or_default().entry(driver).or_default();
            counts.1 += 1;
            if held.contains(&(driver, pool, device.name.as_str())) {
                counts.0 += 1;
            }
        }
    }
    by_node
}

/// A node's bars: cpu, memory and pods, then each extended resource it offers
/// (`example.com/gpu`, hugepages) in name order, then its devices by driver.
fn node_bars(
    node: &Node,
    requested: Option<&Resources>,
    devices: Option<&BTreeMap<&str, (i64, i64)>>,
) -> Vec<Bar> {
    let allocatable = Resources::from_list(node.allocatable());
    let zero = Resources::default();
    let requested = requested.unwrap_or(&zero);
    let mut names = vec![resources::CPU, resources::MEMORY, resources::PODS];
    names.extend(allocatable.scalar.iter().map(|(name, _)| name.as_str()));
    let mut bars: Vec<Bar> = names
        .into_iter()
        .map(|name| Bar {
            resource: name.to_string(),
            allocated: requested.get(name),
            allocatable: allocatable.get(name),
        })
        .collect();
    for (driver, (allocated, total)) in devices.into_iter().flatten() {
        bars.push(Bar {
            resource: driver.to_string(),
            allocated: *allocated,
            allocatable: *total,
        });
    }
    bars
}

/// Whether a pod still waits for a node: unbound and not ended.
fn is_unscheduled(pod: &Pod) -> bool {
    pod.spec.node_name.is_empty() && !pod.is_terminal()
}

/// The summary of the cluster: counts, and the allocation summed over all nodes.
pub fn summarize(cluster: &Cluster<'_>) -> Summary {
    let devices = devices_by_node(&cluster.slices, &cluster.claims);
    summarize_with(cluster, &requests_by_node(&cluster.pods), &devices)
}

fn summarize_with(
    cluster: &Cluster<'_>,
    requested: &HashMap<&str, Resources>,
    devices: &Devices<'_>,
) -> Summary {
    let (nodes, pods) = (&cluster.nodes, &cluster.pods);
    let mut allocation: Vec<Bar> = [resources::CPU, resources::MEMORY, resources::PODS]
        .into_iter()
        .map(|name| Bar {
            resource: name.to_string(),
            allocated: 0,
            allocatable: 0,
        })
        .collect();
    for node in nodes {
        let name = node.metadata.name.as_str();
        for bar in node_bars(node, requested.get(name), devices.get(name)) {
            match allocation.iter_mut().find(|b| b.resource == bar.resource) {
                Some(total) => {
                    total.allocated += bar.allocated;
                    total.allocatable += bar.allocatable;
                }
                None => allocation.push(bar),
            }
        }
    }
    let phases = [
        PodPhase::Pending,
        PodPhase::Running,
        PodPhase::Succeeded,
        PodPhase::Failed,
        PodPhase::Unknown,
    ]
    .into_iter()
    .map(|phase| {
        let count = pods.iter().filter(|p| p.status.phase == phase).count();
        (phase.as_str().to_string(), count)
    })
    .collect();
    Summary {
        nodes: nodes.len(),
        ready_nodes: nodes.iter().filter(|n| n.is_ready()).count(),
        pods: pods.len(),
        unscheduled: pods.iter().filter(|p| is_unscheduled(p)).count(),
        phases,
        allocation,
    }
}

/// The latest FailedScheduling message of each pod, by uid.
fn failed_scheduling<'a>(events: &[&'a Event]) -> HashMap<&'a str, &'a Event> {
    let mut latest: HashMap<&str, &Event> = HashMap::new();
    for event in events {
        if event.reason != FAILED_SCHEDULING || event.involved_object.kind != "Pod" {
            continue;
        }
        let uid = event.involved_object.uid.as_str();
        let newer = latest
            .get(uid)
            .is_none_or(|held| last_seen(held) <= last_seen(event));
        if newer {
            latest.insert(uid, event);
        }
    }
    latest
}

/// When an event last happened: its lastTimestamp, else its firstTimestamp, else its
/// creation.
fn last_seen(event: &Event) -> Option<SystemTime> {
    event
        .last_timestamp
        .as_ref()
        .or(event.first_timestamp.as_ref())
        .or(event.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
}

/// The whole view at `now`.
pub fn build(cluster: &Cluster<'_>, history: &History, now: SystemTime) -> View {
    let (nodes, pods, events) = (&cluster.nodes, &cluster.pods, &cluster.events);
    let requested = requests_by_node(pods);
    let devices = devices_by_node(&cluster.slices, &cluster.claims);
    let summary = summarize_with(cluster, &requested, &devices);

    let mut node_views: Vec<NodeView> = nodes
        .iter()
        .map(|node| NodeView {
            name: node.metadata.name.clone(),
            status: node_status(node),
            ready: node.is_ready(),
            bars: node_bars(
                node,
                requested.get(node.metadata.name.as_str()),
                devices.get(node.metadata.name.as_str()),
            ),
            taints: node.spec.taints.iter().map(|t| t.to_string()).collect(),
            conditions: node
                .status
                .conditions
                .iter()
                .map(|c| ConditionView {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect(),
        })
        .collect();
    node_views.sort_by(|a, b| a.name.cmp(&b.name));
    node_views.truncate(MAX_NODES);

    let failures = failed_scheduling(events);
    let mut listed: Vec<&Pod> = pods.clone();
    // Waiting pods first, longest waiting first; then the newest of the others.
    listed.sort_by(|a, b| {
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        is_unscheduled(b)
            .cmp(&is_unscheduled(a))
            .then_with(|| {
                if is_unscheduled(a) {
                    created(a).cmp(&created(b))
                } else {
                    created(b).cmp(&created(a))
                }
            })
            .then_with(|| a.metadata.namespace.cmp(&b.metadata.namespace))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    let pod_views = listed
        .into_iter()
        .take(MAX_PODS)
        .map(|pod| {
            let unscheduled = is_unscheduled(pod);
            PodView {
                namespace: pod.metadata.namespace.clone(),
                name: pod.metadata.name.clone(),
                phase: pod.status.phase.as_str().to_string(),
                status: pod_status(pod),
                node: (!pod.spec.node_name.is_empty()).then(|| pod.spec.node_name.clone()),
                message: failures
                    .get(pod.metadata.uid.as_str())
                    .filter(|_| unscheduled)
                    .map(|e| e.message.clone()),
                created_ms: time_ms(pod.metadata.creation_timestamp.as_ref()),
            }
        })
        .collect();

    let mut recent: Vec<&Event> = events.clone();
    recent.sort_by(|a, b| {
        last_seen(b)
            .cmp(&last_seen(a))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    let event_views = recent
        .into_iter()
        .take(MAX_EVENTS)
        .map(|e| {
            let object = &e.involved_object;
            let object = if object.namespace.is_empty() {
                format!("{}/{}", object.kind.to_lowercase(), object.name)
            } else {
                format!(
                    "{}/{}/{}",
                    object.kind.to_lowercase(),
                    object.namespace,
                    object.name
                )
            };
            EventView {
                time_ms: last_seen(e).map(unix_ms),
                type_: e.type_.clone(),
                reason: e.reason.clone(),
                object,
                message: e.message.clone(),
                count: e.count,
                from: e.reporting_component.clone(),
            }
        })
        .collect();

    View {
        generated_ms: unix_ms(now),
        summary,
        nodes: node_views,
        pods: pod_views,
        events: event_views,
        history: history.samples().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use berth_model::testing::{
        failed_scheduling_event, DeviceBuilder, NodeBuilder, PodBuilder, ResourceClaimBuilder,
        ResourceSliceBuilder,
    };
    use berth_proto::model::TaintEffect;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn bar(resource: &str, allocated: i64, allocatable: i64) -> Bar {
        Bar {
            resource: resource.into(),
            allocated,
            allocatable,
        }
    }

    #[test]
    fn nodes_show_what_their_pods_request_against_allocatable() {
        struct Case {
            name: &'static str,
            node: Node,
            pods: Vec<Pod>,
            want: Vec<Bar>,
        }
        let node = || {
            NodeBuilder::new("n1")
                .cpu_millis(4000)
                .memory_mib(8192)
                .pods(110)
        };
        let mib = 1024 * 1024;
        let cases = [
            Case {
                name: "an empty node",
                node: node().build(),
                pods: vec![],
                want: vec![
                    bar("cpu", 0, 4000),
                    bar("memory", 0, 8192 * mib),
                    bar("pods", 0, 110),
                ],
            },
            Case {
                name: "bound pods add up; pending, terminal and other nodes' pods do not",
                node: node().build(),
                pods: vec![
                    PodBuilder::new("a")
                        .cpu_millis(500)
                        .memory_mib(256)
                        .node_name("n1")
                        .build(),
                    PodBuilder::new("b").cpu_millis(250).node_name("n1").build(),
                    PodBuilder::new("pending").cpu_millis(1000).build(),
                    PodBuilder::new("done")
                        .cpu_millis(1000)
                        .node_name("n1")
                        .phase(PodPhase::Succeeded)
                        .build(),
                    PodBuilder::new("elsewhere")
                        .cpu_millis(1000)
                        .node_name("n2")
                        .build(),
                ],
                want: vec![
                    bar("cpu", 750, 4000),
                    bar("memory", 256 * mib, 8192 * mib),
                    bar("pods", 2, 110),
                ],
            },
            Case {
                name: "devices offered as extended resources get a bar each",
                node: node().allocatable("example.com/gpu", "4").build(),
                pods: vec![PodBuilder::new("train")
                    .request("example.com/gpu", "3")
                    .node_name("n1")
                    .build()],
                want: vec![
                    bar("cpu", 0, 4000),
                    bar("memory", 0, 8192 * mib),
                    bar("pods", 1, 110),
                    bar("example.com/gpu", 3, 4),
                ],
            },
        ];
        for case in cases {
            let cluster = Cluster {
                nodes: vec![&case.node],
                pods: case.pods.iter().collect(),
                ..Cluster::default()
            };
            let view = build(&cluster, &History::new(1), at(0));
            assert_eq!(view.nodes[0].bars, case.want, "{}", case.name);
        }
    }

    #[test]
    fn devices_of_resource_slices_count_per_driver_with_what_claims_hold() {
        let node = NodeBuilder::new("n1").build();
        let gpus = |generation| {
            ResourceSliceBuilder::new("n1", "gpu.example.com")
                .generation(generation)
                .device(DeviceBuilder::new("gpu-0"))
                .device(DeviceBuilder::new("gpu-1"))
                .device(DeviceBuilder::new("gpu-2"))
                .build()
        };
        let (current, stale) = (gpus(2), gpus(1));
        let mut elsewhere = ResourceSliceBuilder::new("n2", "gpu.example.com")
            .device(DeviceBuilder::new("gpu-0"))
            .build();
        elsewhere.spec.pool.name = "n2".into();
        let mut shared = ResourceSliceBuilder::new("n1", "net.example.com")
            .device(DeviceBuilder::new("nic-0"))
            .build();
        shared.spec.node_name = None;
        shared.spec.all_nodes = Some(true);
        let held = ResourceClaimBuilder::new("train")
            .allocated(
                "n1",
                &[
                    ("gpu", "gpu.example.com", "n1", "gpu-0"),
                    ("gpu", "gpu.example.com", "n1", "gpu-2"),
                ],
            )
            .build();
        let unallocated = ResourceClaimBuilder::new("waiting").build();
        let cluster = Cluster {
            nodes: vec![&node],
            slices: vec![&stale, &current, &elsewhere, &shared],
            claims: vec![&held, &unallocated],
            ..Cluster::default()
        };
        let view = build(&cluster, &History::new(1), at(0));
        // The newest generation only; devices on other nodes or shared by many are not
        // this node's.
        assert_eq!(view.nodes[0].bars[3..], [bar("gpu.example.com", 2, 3)]);
        assert!(
            view.summary
                .allocation
                .contains(&bar("gpu.example.com", 2, 3)),
            "{:?}",
            view.summary.allocation
        );
    }

    #[test]
    fn nodes_carry_status_taints_and_conditions_in_name_order() {
        let cordoned = NodeBuilder::new("b")
            .taint("dedicated", "gpu", TaintEffect::NoSchedule)
            .unschedulable()
            .build();
        let plain = NodeBuilder::new("a").build();
        let cluster = Cluster {
            nodes: vec![&cordoned, &plain],
            ..Cluster::default()
        };
        let view = build(&cluster, &History::new(1), at(0));
        let names: Vec<&str> = view.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(view.nodes[1].status, node_status(&cordoned));
        assert!(
            view.nodes[1].status.ends_with(",SchedulingDisabled"),
            "{}",
            view.nodes[1].status
        );
        assert_eq!(view.nodes[1].taints, ["dedicated=gpu:NoSchedule"]);
    }

    #[test]
    fn pending_pods_come_first_with_their_latest_failed_scheduling_message() {
        let waiting = PodBuilder::new("waiting").uid("u1").created(10).build();
        let older = PodBuilder::new("older").uid("u2").created(5).build();
        let running = PodBuilder::new("running")
            .uid("u3")
            .created(20)
            .node_name("n1")
            .phase(PodPhase::Running)
            .build();
        let newest = PodBuilder::new("newest")
            .uid("u4")
            .created(30)
            .node_name("n1")
            .build();
        let events = [
            failed_scheduling_event("default", "waiting", "u1", "0/1 nodes: first", Time(at(11))),
            failed_scheduling_event(
                "default",
                "waiting",
                "u1",
                "0/1 nodes: latest",
                Time(at(12)),
            ),
            // Once bound, a pod's old failure is no longer shown.
            failed_scheduling_event("default", "running", "u3", "0/1 nodes: gone", Time(at(21))),
        ];
        let cluster = Cluster {
            pods: vec![&running, &waiting, &newest, &older],
            events: events.iter().collect(),
            ..Cluster::default()
        };
        let view = build(&cluster, &History::new(1), at(40));
        let rows: Vec<(&str, Option<&str>, Option<&str>)> = view
            .pods
            .iter()
            .map(|p| (p.name.as_str(), p.node.as_deref(), p.message.as_deref()))
            .collect();
        assert_eq!(
            rows,
            [
                ("older", None, None),
                ("waiting", None, Some("0/1 nodes: latest")),
                ("newest", Some("n1"), None),
                ("running", Some("n1"), None),
            ]
        );
        assert_eq!(view.summary.unscheduled, 2);
        assert_eq!(view.summary.phases[0], ("Pending".to_string(), 3));
        assert_eq!(view.summary.phases[1], ("Running".to_string(), 1));
        // The latest event first.
        assert_eq!(view.events[0].message, "0/1 nodes: gone");
        assert_eq!(view.events[0].object, "pod/default/running");
    }

    #[test]
    fn history_keeps_a_bounded_ring_and_the_scheduling_rate() {
        let node = NodeBuilder::new("n1").cpu_millis(1000).pods(10).build();
        let unbound = PodBuilder::new("p").cpu_millis(500).build();
        let bound = PodBuilder::new("p").cpu_millis(500).node_name("n1").build();
        let mut history = History::new(2);

        let on = |pod| Cluster {
            nodes: vec![&node],
            pods: vec![pod],
            ..Cluster::default()
        };
        history.sample(&summarize(&on(&unbound)), at(0));
        // A first sight of a bound pod (a list) is not a scheduling; a binding is.
        history.observe(&bound, None);
        history.observe(&bound, Some(&unbound));
        history.observe(&bound, Some(&bound));
        history.sample(&summarize(&on(&bound)), at(2));
        history.sample(&summarize(&on(&bound)), at(4));

        let samples: Vec<(u64, f64, f64, usize, f64)> = history
            .samples()
            .map(|s| {
                (
                    s.at_ms,
                    s.cpu,
                    s.pods,
                    s.unscheduled,
                    s.scheduled_per_second,
                )
            })
            .collect();
        assert_eq!(
            samples,
            [(2000, 50.0, 10.0, 0, 0.5), (4000, 50.0, 10.0, 0, 0.0)],
            "the oldest sample is dropped at capacity"
        );
    }
}
