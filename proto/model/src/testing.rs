//! Test builders for Berth's objects, in the manner of kube's `MakePod()`/`MakeNode()`:
//! [`PodBuilder`], [`NodeBuilder`], and toleration and container helpers; the DRA kinds'
//! builders are in `testing/dra.rs`. Compiled only with
//! the `testing` feature, which the workspace's crates enable for their tests.

use crate::model::{
    Container, ContainerImage, ContainerPort, Event, Node, NodeAffinity, NodeSelector,
    NodeSelectorTerm, ObjectMeta, ObjectReference, OwnerReference, Pod, PodAffinity,
    PodAffinityTerm, PodCondition, PodPhase, PreferredSchedulingTerm, Protocol,
    ResourceRequirements, RestartPolicy, Taint, TaintEffect, Time, Toleration, TolerationOperator,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use crate::names::{CONDITION_READY, STATUS_TRUE};
use crate::Quantity;

mod dra;
pub use dra::*;

/// Parses a quantity written in a test.
pub fn qty(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("test quantity {s:?}: {e}"))
}

/// A taint with no timeAdded.
pub fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
    Taint {
        key: key.into(),
        value: value.into(),
        effect,
        time_added: None,
    }
}

/// A Warning FailedScheduling event from default-scheduler about pod `name` (uid `uid`) in
/// `namespace`, seen once at `at`, named `<name>.1`.
pub fn failed_scheduling_event(
    namespace: &str,
    name: &str,
    uid: &str,
    message: &str,
    at: Time,
) -> Event {
    Event {
        metadata: ObjectMeta {
            name: format!("{name}.1"),
            namespace: namespace.into(),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            kind: "Pod".into(),
            namespace: namespace.into(),
            name: name.into(),
            uid: uid.into(),
            ..ObjectReference::default()
        },
        reason: "FailedScheduling".into(),
        message: message.into(),
        type_: "Warning".into(),
        count: 1,
        last_timestamp: Some(at),
        reporting_component: "default-scheduler".into(),
        ..Event::default()
    }
}

/// A toleration with operator Equal.
pub fn equal_toleration(key: &str, value: &str, effect: Option<TaintEffect>) -> Toleration {
    Toleration {
        key: key.into(),
        operator: Some(TolerationOperator::Equal),
        value: value.into(),
        effect,
        toleration_seconds: None,
    }
}

/// A toleration with operator Exists (an empty key tolerates every taint).
pub fn exists_toleration(key: &str, effect: Option<TaintEffect>) -> Toleration {
    Toleration {
        key: key.into(),
        operator: Some(TolerationOperator::Exists),
        value: String::new(),
        effect,
        toleration_seconds: None,
    }
}

/// A container with the given requests (`[("cpu", "500m")]`) and no limits.
pub fn container(name: &str, requests: &[(&str, &str)]) -> Container {
    container_with_limits(name, requests, &[])
}

/// A container with the given requests and limits (`[("cpu", "500m")]`).
pub fn container_with_limits(
    name: &str,
    requests: &[(&str, &str)],
    limits: &[(&str, &str)],
) -> Container {
    let list =
        |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), qty(v))).collect();
    Container {
        name: name.into(),
        resources: ResourceRequirements {
            requests: list(requests),
            limits: list(limits),
            ..ResourceRequirements::default()
        },
        ..Container::default()
    }
}

/// Builds a [`Pod`] in namespace `default`. Resource setters act on the
/// first app container, created on demand; the uid defaults to `<namespace>-<name>`.
#[derive(Clone, Debug)]
pub struct PodBuilder {
    pod: Pod,
}

impl PodBuilder {
    /// A pod with no containers.
    pub fn new(name: &str) -> Self {
        let mut pod = Pod::default();
        pod.metadata.name = name.into();
        pod.metadata.namespace = "default".into();
        PodBuilder { pod }
    }

    fn main_container(&mut self) -> &mut Container {
        if self.pod.spec.containers.is_empty() {
            self.pod.spec.containers.push(Container {
                name: "main".into(),
                ..Container::default()
            });
        }
        &mut self.pod.spec.containers[0]
    }

    /// Sets the namespace.
    pub fn namespace(mut self, ns: &str) -> Self {
        self.pod.metadata.namespace = ns.into();
        self
    }

    /// Sets the uid.
    pub fn uid(mut self, uid: &str) -> Self {
        self.pod.metadata.uid = uid.into();
        self
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.pod.metadata.labels.insert(key.into(), value.into());
        self
    }

    /// Requests cpu on the main container, in millicores.
    pub fn cpu_millis(self, millis: i64) -> Self {
        self.request("cpu", &format!("{millis}m"))
    }

    /// Requests memory on the main container, in MiB.
    pub fn memory_mib(self, mib: i64) -> Self {
        self.request("memory", &format!("{mib}Mi"))
    }

    /// Requests any resource on the main container.
    pub fn request(mut self, name: &str, quantity: &str) -> Self {
        self.main_container()
            .resources
            .requests
            .insert(name.into(), qty(quantity));
        self
    }

    /// Sets a limit on the main container.
    pub fn limit(mut self, name: &str, quantity: &str) -> Self {
        self.main_container()
            .resources
            .limits
            .insert(name.into(), qty(quantity));
        self
    }

    /// Adds a host port to the main container (`hostIP` `ip`, empty for all addresses; the
    /// container port is the host port).
    pub fn host_port(mut self, port: i32, protocol: Protocol, ip: &str) -> Self {
        self.main_container().ports.push(ContainerPort {
            container_port: port,
            host_port: port,
            protocol,
            host_ip: ip.into(),
            ..ContainerPort::default()
        });
        self
    }

    /// Sets the image of the main container.
    pub fn image(mut self, image: &str) -> Self {
        self.main_container().image = image.into();
        self
    }

    /// Adds an app container.
    pub fn container(mut self, c: Container) -> Self {
        self.pod.spec.containers.push(c);
        self
    }

    /// Adds an init container that runs to completion.
    pub fn init_container(mut self, c: Container) -> Self {
        self.pod.spec.init_containers.push(c);
        self
    }

    /// Adds a sidecar: an init container with `restartPolicy: Always`.
    pub fn sidecar(mut self, mut c: Container) -> Self {
        c.restart_policy = Some(RestartPolicy::Always);
        self.pod.spec.init_containers.push(c);
        self
    }

    /// Sets pod-level `spec.resources`.
    pub fn pod_resources(mut self, resources: ResourceRequirements) -> Self {
        self.pod.spec.resources = Some(Box::new(resources));
        self
    }

    /// Adds pod overhead.
    pub fn overhead(mut self, name: &str, quantity: &str) -> Self {
        self.pod.spec.overhead.insert(name.into(), qty(quantity));
        self
    }

    /// Adds a toleration.
    pub fn toleration(mut self, t: Toleration) -> Self {
        self.pod.spec.tolerations.push(t);
        self
    }

    /// Adds several tolerations, in order.
    pub fn tolerations(mut self, ts: impl IntoIterator<Item = Toleration>) -> Self {
        self.pod.spec.tolerations.extend(ts);
        self
    }

    /// Adds a nodeSelector pair.
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.pod.spec.node_selector.insert(key.into(), value.into());
        self
    }

    fn node_affinity_mut(&mut self) -> &mut NodeAffinity {
        self.pod
            .spec
            .affinity
            .get_or_insert_with(Box::default)
            .node_affinity
            .get_or_insert_with(NodeAffinity::default)
    }

    /// Sets the required node affinity terms (ORed).
    pub fn required_node_terms(mut self, terms: Vec<NodeSelectorTerm>) -> Self {
        self.node_affinity_mut()
            .required_during_scheduling_ignored_during_execution = Some(NodeSelector {
            node_selector_terms: terms,
        });
        self
    }

    /// Adds a preferred node affinity term.
    pub fn preferred_node_term(mut self, weight: i32, term: NodeSelectorTerm) -> Self {
        self.node_affinity_mut()
            .preferred_during_scheduling_ignored_during_execution
            .push(PreferredSchedulingTerm {
                weight,
                preference: term,
            });
        self
    }

    fn pod_affinity_mut(&mut self, anti: bool) -> &mut PodAffinity {
        let affinity = self.pod.spec.affinity.get_or_insert_with(Box::default);
        let slot = if anti {
            &mut affinity.pod_anti_affinity
        } else {
            &mut affinity.pod_affinity
        };
        slot.get_or_insert_with(PodAffinity::default)
    }

    /// Adds a required pod affinity term.
    pub fn required_pod_affinity(mut self, term: PodAffinityTerm) -> Self {
        self.pod_affinity_mut(false)
            .required_during_scheduling_ignored_during_execution
            .push(term);
        self
    }

    /// Adds a required pod anti-affinity term.
    pub fn required_pod_anti_affinity(mut self, term: PodAffinityTerm) -> Self {
        self.pod_affinity_mut(true)
            .required_during_scheduling_ignored_during_execution
            .push(term);
        self
    }

    /// Adds a preferred pod affinity term.
    pub fn preferred_pod_affinity(mut self, weight: i32, term: PodAffinityTerm) -> Self {
        self.pod_affinity_mut(false)
            .preferred_during_scheduling_ignored_during_execution
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: term,
            });
        self
    }

    /// Adds a preferred pod anti-affinity term.
    pub fn preferred_pod_anti_affinity(mut self, weight: i32, term: PodAffinityTerm) -> Self {
        self.pod_affinity_mut(true)
            .preferred_during_scheduling_ignored_during_execution
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: term,
            });
        self
    }

    /// Adds a topology spread constraint.
    pub fn topology_spread(mut self, c: TopologySpreadConstraint) -> Self {
        self.pod.spec.topology_spread_constraints.push(c);
        self
    }

    /// Sets `spec.nodeName`.
    pub fn node_name(mut self, node: &str) -> Self {
        self.pod.spec.node_name = node.into();
        self
    }

    /// Sets `spec.priority`.
    pub fn priority(mut self, priority: i32) -> Self {
        self.pod.spec.priority = Some(priority);
        self
    }

    /// Adds a controller owner reference (`ReplicaSet`, `StatefulSet`, ...); its uid is the
    /// owner's name.
    pub fn owner(mut self, kind: &str, name: &str) -> Self {
        self.pod.metadata.owner_references.push(OwnerReference {
            kind: kind.into(),
            name: name.into(),
            uid: name.into(),
            controller: Some(true),
            ..OwnerReference::default()
        });
        self
    }

    /// Sets `status.phase`.
    pub fn phase(mut self, phase: PodPhase) -> Self {
        self.pod.status.phase = phase;
        self
    }

    /// Sets `metadata.creationTimestamp`, in seconds since the epoch.
    pub fn created(mut self, unix_seconds: i64) -> Self {
        self.pod.metadata.creation_timestamp =
            Some(Time::from_unix_nanos(unix_seconds * 1_000_000_000));
        self
    }

    /// When `ready`, adds a Ready=True condition, which turned True at the creation time
    /// (when set).
    pub fn ready(mut self, ready: bool) -> Self {
        if ready {
            self.pod.status.conditions.push(PodCondition {
                type_: CONDITION_READY.into(),
                status: STATUS_TRUE.into(),
                last_transition_time: self.pod.metadata.creation_timestamp,
                ..PodCondition::default()
            });
        }
        self
    }

    /// Marks the pod as terminating (sets a deletion timestamp).
    pub fn terminating(mut self) -> Self {
        self.pod.metadata.deletion_timestamp = Some(Time::from_unix_nanos(0));
        self
    }

    /// Sets `status.startTime`, in seconds since the epoch.
    pub fn start_time(mut self, unix_seconds: i64) -> Self {
        self.pod.status.start_time = Some(Time::from_unix_nanos(unix_seconds * 1_000_000_000));
        self
    }

    /// The pod object.
    pub fn build(mut self) -> Pod {
        if self.pod.metadata.uid.is_empty() {
            self.pod.metadata.uid =
                format!("{}-{}", self.pod.metadata.namespace, self.pod.metadata.name);
        }
        self.pod
    }
}

/// Builds a [`Node`] (and the pods placed on it): allocatable `pods: 110` unless set, no cpu or
/// memory unless set, and no labels beyond those given.
#[derive(Clone, Debug)]
pub struct NodeBuilder {
    node: Node,
    pods: Vec<PodBuilder>,
}

impl NodeBuilder {
    /// A node named `name`.
    pub fn new(name: &str) -> Self {
        let mut node = Node::default();
        node.metadata.name = name.into();
        node.status.allocatable.insert("pods".into(), qty("110"));
        NodeBuilder {
            node,
            pods: Vec::new(),
        }
    }

    /// Sets an allocatable resource.
    pub fn allocatable(mut self, name: &str, quantity: &str) -> Self {
        self.node
            .status
            .allocatable
            .insert(name.into(), qty(quantity));
        self
    }

    /// Allocatable cpu, in millicores.
    pub fn cpu_millis(self, millis: i64) -> Self {
        self.allocatable("cpu", &format!("{millis}m"))
    }

    /// Allocatable memory, in MiB.
    pub fn memory_mib(self, mib: i64) -> Self {
        self.allocatable("memory", &format!("{mib}Mi"))
    }

    /// Allocatable pod slots.
    pub fn pods(self, n: i64) -> Self {
        self.allocatable("pods", &n.to_string())
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.node.metadata.labels.insert(key.into(), value.into());
        self
    }

    /// Adds a taint.
    pub fn taint(mut self, key: &str, value: &str, effect: TaintEffect) -> Self {
        self.node.spec.taints.push(taint(key, value, effect));
        self
    }

    /// Reports an image of `size_bytes` known by `names` in `status.images`.
    pub fn image(mut self, names: &[&str], size_bytes: i64) -> Self {
        self.node.status.images.push(ContainerImage {
            names: names.iter().map(|n| n.to_string()).collect(),
            size_bytes,
        });
        self
    }

    /// Cordons the node.
    pub fn unschedulable(mut self) -> Self {
        self.node.spec.unschedulable = true;
        self
    }

    /// Places a pod on the node (its `spec.nodeName` is set to the node when built).
    pub fn with_pod(mut self, pod: PodBuilder) -> Self {
        self.pods.push(pod);
        self
    }

    /// The node object (the pods placed on it are left out: see [`NodeBuilder::build_with_pods`]).
    pub fn build(self) -> Node {
        self.node
    }

    /// The node and the pods placed on it, each bound to the node.
    pub fn build_with_pods(self) -> (Node, Vec<Pod>) {
        let name = self.node.metadata.name.clone();
        let pods = self
            .pods
            .into_iter()
            .map(|p| p.node_name(&name).build())
            .collect();
        (self.node, pods)
    }
}
