//! [`PodInfo`] and [`NodeInfo`]: pods and nodes with what plugins need computed once
//! (effective requests, parsed affinity terms, per-node sums), so filters are arithmetic.

use std::collections::BTreeSet;
use std::fmt;
use std::hash::Hasher;
use std::ops::Deref;
use std::sync::Arc;

use berth_model::host_ports::{pod_host_ports, HostPort, HostPortUsage};
use berth_model::model::{
    LabelSelector, LabelSelectorOperator, LabelSelectorRequirement, Node, Object, Pod,
    PodAffinityTerm, StringMap,
};

use super::hash::{FastHashMap, FastHasher};
use super::resources::{pod_non_zero_requests, pod_requests, Resources};
use super::topology::NodeTopology;

/// One inter-pod (anti-)affinity term, resolved against its owning pod: the namespaces it
/// covers and a selector with matchLabelKeys/mismatchLabelKeys folded in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffinityTerm {
    /// Explicit namespaces; when both this is empty and `namespace_selector` is `None`, the
    /// owning pod's namespace has been put here.
    pub namespaces: BTreeSet<String>,
    /// Namespaces selected by label (`Some(empty)` selects all namespaces).
    pub namespace_selector: Option<LabelSelector>,
    /// Pods the term is about; `None` matches no pod.
    pub selector: Option<LabelSelector>,
    /// Node label that defines the topology domain.
    pub topology_key: String,
}

impl AffinityTerm {
    /// Resolves a term of `owner`'s spec.
    pub fn new(owner: &Pod, term: &PodAffinityTerm) -> Self {
        let mut namespaces: BTreeSet<String> = term.namespaces.iter().cloned().collect();
        if namespaces.is_empty() && term.namespace_selector.is_none() {
            namespaces.insert(owner.metadata.namespace.clone());
        }
        let mut selector = term.label_selector.clone();
        if let Some(sel) = selector.as_mut() {
            let keyed = [
                (&term.match_label_keys, LabelSelectorOperator::In),
                (&term.mismatch_label_keys, LabelSelectorOperator::NotIn),
            ];
            for (keys, operator) in keyed {
                for key in keys {
                    if let Some(v) = owner.metadata.labels.get(key) {
                        sel.match_expressions.push(LabelSelectorRequirement {
                            key: key.clone(),
                            operator,
                            values: vec![v.clone()],
                        });
                    }
                }
            }
        }
        AffinityTerm {
            namespaces,
            namespace_selector: term.namespace_selector.clone(),
            selector,
            topology_key: term.topology_key.clone(),
        }
    }

    /// Whether `pod` (whose namespace has labels `ns_labels`) is one of the pods this term
    /// is about.
    pub fn matches(&self, pod: &Pod, ns_labels: Option<&StringMap>) -> bool {
        let ns = &pod.metadata.namespace;
        let in_namespace = self.namespaces.contains(ns)
            || self.namespace_selector.as_ref().is_some_and(|sel| {
                sel.is_empty() || ns_labels.is_some_and(|labels| sel.matches(labels))
            });
        in_namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|sel| sel.matches(&pod.metadata.labels))
    }
}

/// An [`AffinityTerm`] with its weight (1..=100), for preferences.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedAffinityTerm {
    /// Weight.
    pub weight: i64,
    /// The term.
    pub term: AffinityTerm,
}

/// A pod shared, not copied: the live loop hands the core the store's own version (the
/// `Arc<Object>` its informer and every other cache hold), so each stored pod is in memory
/// once; it reads as a [`Pod`]. Cloning it clones the `Arc`.
#[derive(Clone, PartialEq)]
pub struct SharedPod(Arc<Object>);

impl SharedPod {
    /// Shares a stored object; `None` unless it is a pod.
    pub fn from_object(object: Arc<Object>) -> Option<Self> {
        matches!(*object, Object::Pod(_)).then_some(SharedPod(object))
    }

    /// The shared object (always an [`Object::Pod`]).
    pub fn object(&self) -> &Arc<Object> {
        &self.0
    }
}

impl Deref for SharedPod {
    type Target = Pod;

    fn deref(&self) -> &Pod {
        match &*self.0 {
            Object::Pod(pod) => pod,
            _ => unreachable!("SharedPod is only built around a pod"),
        }
    }
}

impl From<Pod> for SharedPod {
    fn from(pod: Pod) -> Self {
        SharedPod(Arc::new(Object::Pod(Box::new(pod))))
    }
}

/// Takes the pod out of its `Arc` when this is the only holder, else copies it.
impl From<Arc<Pod>> for SharedPod {
    fn from(pod: Arc<Pod>) -> Self {
        SharedPod::from(Arc::unwrap_or_clone(pod))
    }
}

impl fmt::Debug for SharedPod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Pod::fmt(self, f)
    }
}

/// A pod as plugins see it: the object plus everything derived from it once.
#[derive(Clone, Debug)]
pub struct PodInfo {
    /// The pod.
    pub pod: SharedPod,
    /// Effective request (fit).
    pub requests: Resources,
    /// CPU counted by scoring (containers without a request count 100m).
    pub non_zero_milli_cpu: i64,
    /// Memory counted by scoring (containers without a request count 200Mi).
    pub non_zero_memory: i64,
    /// `spec.priority`, 0 when unset.
    pub priority: i32,
    /// The pod's inter-pod (anti-)affinity terms, `None` when it has none. Boxed: most pods
    /// have none, and the snapshot holds a `PodInfo` for every placed pod (four empty
    /// vectors inline were 96 bytes a pod); read through [`PodInfo::required_affinity`] and
    /// its siblings.
    affinity_terms: Option<Box<AffinityTerms>>,
    /// The ports the pod takes on its node (NodePorts).
    pub host_ports: Vec<HostPort>,
}

/// A pod's inter-pod affinity and anti-affinity terms, parsed once ([`PodInfo`]).
#[derive(Clone, Debug, Default, PartialEq)]
struct AffinityTerms {
    required_affinity: Vec<AffinityTerm>,
    required_anti_affinity: Vec<AffinityTerm>,
    preferred_affinity: Vec<WeightedAffinityTerm>,
    preferred_anti_affinity: Vec<WeightedAffinityTerm>,
}

impl PodInfo {
    /// Derives everything from the pod.
    pub fn new(pod: impl Into<SharedPod>) -> Self {
        let pod = pod.into();
        let requests = pod_requests(&pod);
        let (non_zero_milli_cpu, non_zero_memory) = pod_non_zero_requests(&pod);
        let affinity = pod.spec.affinity.as_ref();
        let pod_affinity = affinity.and_then(|a| a.pod_affinity.as_ref());
        let anti = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let required = |a: Option<&berth_model::model::PodAffinity>| -> Vec<AffinityTerm> {
            a.map(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .iter()
                    .map(|t| AffinityTerm::new(&pod, t))
                    .collect()
            })
            .unwrap_or_default()
        };
        let preferred = |a: Option<&berth_model::model::PodAffinity>| -> Vec<WeightedAffinityTerm> {
            a.map(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .iter()
                    .map(|w| WeightedAffinityTerm {
                        weight: i64::from(w.weight),
                        term: AffinityTerm::new(&pod, &w.pod_affinity_term),
                    })
                    .collect()
            })
            .unwrap_or_default()
        };
        let terms = AffinityTerms {
            required_affinity: required(pod_affinity),
            required_anti_affinity: required(anti),
            preferred_affinity: preferred(pod_affinity),
            preferred_anti_affinity: preferred(anti),
        };
        PodInfo {
            requests,
            non_zero_milli_cpu,
            non_zero_memory,
            priority: pod.spec.priority.unwrap_or(0),
            affinity_terms: (terms != AffinityTerms::default()).then(|| Box::new(terms)),
            host_ports: pod_host_ports(&pod),
            pod,
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.pod.metadata.namespace, self.pod.metadata.name)
    }

    /// The pod's uid.
    pub fn uid(&self) -> &str {
        &self.pod.metadata.uid
    }

    /// Whether the pod has any inter-pod affinity or anti-affinity term.
    pub fn has_affinity(&self) -> bool {
        self.affinity_terms.is_some()
    }

    /// Required pod affinity terms.
    pub fn required_affinity(&self) -> &[AffinityTerm] {
        self.affinity_terms
            .as_deref()
            .map_or(&[], |t| &t.required_affinity)
    }

    /// Required pod anti-affinity terms.
    pub fn required_anti_affinity(&self) -> &[AffinityTerm] {
        self.affinity_terms
            .as_deref()
            .map_or(&[], |t| &t.required_anti_affinity)
    }

    /// Preferred pod affinity terms.
    pub fn preferred_affinity(&self) -> &[WeightedAffinityTerm] {
        self.affinity_terms
            .as_deref()
            .map_or(&[], |t| &t.preferred_affinity)
    }

    /// Preferred pod anti-affinity terms.
    pub fn preferred_anti_affinity(&self) -> &[WeightedAffinityTerm] {
        self.affinity_terms
            .as_deref()
            .map_or(&[], |t| &t.preferred_anti_affinity)
    }
}

/// What the Filter and Score plugins read of a node on every visit, copied out of the node
/// object and the sums of [`NodeInfo`] into one block at the start of the 64-byte-aligned
/// [`NodeInfo`] (the filters' part in its first cache line, scoring's non-zero sums in the
/// second, beside the node's pointer), so that a cycle's pass over hundreds of nodes reads
/// no `Arc<Node>` and no scattered fields. [`NodeInfo`] refreshes it on every change; it is
/// read-only to everyone else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct NodeHot {
    /// Allocatable cpu, in millicores.
    pub allocatable_milli_cpu: i64,
    /// Allocatable memory, in bytes.
    pub allocatable_memory: i64,
    /// Allocatable ephemeral storage, in bytes.
    pub allocatable_ephemeral_storage: i64,
    /// Pod slots.
    pub allowed_pods: i64,
    /// Requested cpu of the node's pods, in millicores.
    pub requested_milli_cpu: i64,
    /// Requested memory of the node's pods, in bytes.
    pub requested_memory: i64,
    /// Requested ephemeral storage of the node's pods, in bytes.
    pub requested_ephemeral_storage: i64,
    /// Number of pods on the node (saturating).
    pub pods: u32,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// Whether any taint has effect NoSchedule or NoExecute.
    pub has_do_not_schedule_taints: bool,
    /// Whether any taint has effect PreferNoSchedule.
    pub has_prefer_no_schedule_taints: bool,
    /// Whether the node advertises any scalar (extended) resource, or its pods request one.
    pub has_scalar_resources: bool,
    /// Sum of the pods' non-zero cpu (scoring), in millicores.
    pub non_zero_milli_cpu: i64,
    /// Sum of the pods' non-zero memory (scoring), in bytes.
    pub non_zero_memory: i64,
    /// The [`scalar_resource_bit`]s of every scalar resource the node advertises or its pods
    /// request: a resource whose bit is clear is neither (0 of it allocatable, 0 requested),
    /// so fitting need not look it up by name; a set bit proves nothing.
    pub scalar_resource_bits: u64,
}

/// One bit of a 64-bit set standing for the scalar resource `name` (a hash of the name): see
/// [`NodeHot::scalar_resource_bits`].
pub fn scalar_resource_bit(name: &str) -> u64 {
    let mut hasher = FastHasher::default();
    hasher.write(name.as_bytes());
    1 << (hasher.finish() >> 58)
}

/// A node with the sums plugins need, kept current as pods come and go.
///
/// Laid out as written and aligned to a cache line: the hot block first, then the node's
/// pointer and its interned labels, which end inside the hot block's second line. A pass
/// over thousands of nodes then touches two lines of each ([`NodeInfo::prefetch`] asks for
/// both), even where a plugin reads the node object's pointer, as the compiler may load it
/// ahead of a check of the hot block (TaintToleration's Score, a trace of
/// NodeResourcesFit's), or matches labels (NodeAffinity, the topology plugins).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct NodeInfo {
    /// The hot per-node data, refreshed with every change (see [`NodeInfo::hot`]).
    hot: NodeHot,
    /// The node.
    pub node: Arc<Node>,
    /// The node's labels interned (NodeAffinity and the topology plugins read them), in
    /// the second line with the node's pointer.
    pub topology: NodeTopology,
    /// Renewed on every change, from a counter shared by every NodeInfo of the process:
    /// two NodeInfos with the same generation are copies of one state (caches may key on
    /// it). In the second line too: the cycle's memo checks it on every visit.
    pub generation: u64,
    /// What pods may use (allocatable, or capacity where allocatable is unset).
    pub allocatable: Resources,
    /// Sum of the effective requests of the pods on the node.
    pub requested: Resources,
    /// Sum of the pods' non-zero cpu (scoring).
    pub non_zero_milli_cpu: i64,
    /// Sum of the pods' non-zero memory (scoring).
    pub non_zero_memory: i64,
    /// Pods on the node (bound or assumed).
    pub pods: Vec<Arc<PodInfo>>,
    /// The subset of `pods` with any inter-pod affinity term.
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    /// The subset of `pods` with required anti-affinity.
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    /// Host ports the pods hold (kube's `UsedPorts`).
    pub used_ports: HostPortUsage,
    /// Where each pod is in `pods`, once the node holds more than [`POD_INDEX_FROM`] pods
    /// (a DaemonSet's node, or one node with tens of thousands of pods): a removal then
    /// finds its pod without scanning the node.
    pod_index: Option<PodIndex>,
}

/// From how many pods on a node [`NodeInfo`] indexes them by uid: below it a scan is as
/// cheap as a look-up, and the index would cost memory on every node.
pub const POD_INDEX_FROM: usize = 64;

/// A pod's uid, hashed, to its position in [`NodeInfo::pods`]. Positions are hints: a
/// look-up checks the uid at the position, and two uids with one hash leave one of them
/// to the scan, so a collision costs time, never a wrong pod.
#[derive(Clone, Debug, Default)]
struct PodIndex(FastHashMap<u64, u32>);

impl PodIndex {
    fn key(uid: &str) -> u64 {
        let mut hasher = FastHasher::default();
        hasher.write(uid.as_bytes());
        hasher.finish()
    }

    fn of(pods: &[Arc<PodInfo>]) -> Self {
        let mut index = PodIndex::default();
        for (i, pod) in pods.iter().enumerate() {
            index.set(pod.uid(), i);
        }
        index
    }

    fn set(&mut self, uid: &str, position: usize) {
        if let Ok(position) = u32::try_from(position) {
            self.0.insert(Self::key(uid), position);
        }
    }

    fn find(&self, pods: &[Arc<PodInfo>], uid: &str) -> Option<usize> {
        let i = *self.0.get(&Self::key(uid))? as usize;
        (pods.get(i)?.uid() == uid).then_some(i)
    }

    fn forget(&mut self, uid: &str, position: usize) {
        let key = Self::key(uid);
        if self.0.get(&key) == Some(&(position as u32)) {
            self.0.remove(&key);
        }
    }
}

/// Asks the processor to start loading the cache line at `at` (on x86_64; elsewhere
/// nothing). Only a hint: it never faults, changes nothing and costs one instruction.
#[inline]
pub fn prefetch_line<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of every x86_64 processor, and a prefetch never faults nor
        // changes memory, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Source of [`NodeInfo::generation`] values.
static NEXT_NODE_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_node_generation() -> u64 {
    NEXT_NODE_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl NodeInfo {
    /// A node with no pods.
    pub fn new(node: Arc<Node>) -> Self {
        let allocatable = Resources::from_list(node.allocatable());
        let mut info = NodeInfo {
            hot: NodeHot::default(),
            topology: NodeTopology::of(&node.metadata.labels),
            generation: next_node_generation(),
            node,
            allocatable,
            requested: Resources::default(),
            non_zero_milli_cpu: 0,
            non_zero_memory: 0,
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            used_ports: HostPortUsage::new(),
            pod_index: None,
        };
        info.refresh_hot();
        info
    }

    /// What Filter and Score read on every visit, in one block (see [`NodeHot`]).
    #[inline]
    pub fn hot(&self) -> &NodeHot {
        &self.hot
    }

    /// Asks the processor to start loading the node's first two cache lines (the hot block,
    /// the node's pointer and its interned labels), so that a pass over many nodes can have the next nodes'
    /// lines in flight while it works on this one. Only a hint: it changes nothing and
    /// costs two instructions.
    #[inline]
    pub fn prefetch(&self) {
        prefetch_line(self);
        prefetch_line((self as *const NodeInfo).cast::<u8>().wrapping_add(64));
    }

    /// Copies the hot data out of the node object and the sums: the one place it is
    /// computed, called after every change.
    fn refresh_hot(&mut self) {
        use crate::plugins::taint_toleration::is_do_not_schedule;
        use berth_model::model::TaintEffect;
        let taints = &self.node.spec.taints;
        self.hot = NodeHot {
            allocatable_milli_cpu: self.allocatable.milli_cpu,
            allocatable_memory: self.allocatable.memory,
            allocatable_ephemeral_storage: self.allocatable.ephemeral_storage,
            allowed_pods: self.allocatable.allowed_pods,
            requested_milli_cpu: self.requested.milli_cpu,
            requested_memory: self.requested.memory,
            requested_ephemeral_storage: self.requested.ephemeral_storage,
            pods: u32::try_from(self.pods.len()).unwrap_or(u32::MAX),
            unschedulable: self.node.spec.unschedulable,
            has_do_not_schedule_taints: taints.iter().any(is_do_not_schedule),
            has_prefer_no_schedule_taints: taints
                .iter()
                .any(|t| t.effect == TaintEffect::PreferNoSchedule),
            has_scalar_resources: !self.allocatable.scalar.is_empty()
                || !self.requested.scalar.is_empty(),
            non_zero_milli_cpu: self.non_zero_milli_cpu,
            non_zero_memory: self.non_zero_memory,
            scalar_resource_bits: self
                .allocatable
                .scalar
                .iter()
                .chain(&self.requested.scalar)
                .fold(0, |bits, (name, _)| bits | scalar_resource_bit(name)),
        };
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.node.metadata.name
    }

    /// The node's labels.
    pub fn labels(&self) -> &StringMap {
        &self.node.metadata.labels
    }

    /// Replaces the node object (labels, taints, allocatable), keeping its pods.
    pub fn set_node(&mut self, node: Arc<Node>) {
        self.allocatable = Resources::from_list(node.allocatable());
        // Heartbeats change a node's status, rarely its labels.
        if node.metadata.labels != self.node.metadata.labels {
            self.topology = NodeTopology::of(&node.metadata.labels);
        }
        self.node = node;
        self.refresh_hot();
        self.generation = next_node_generation();
    }

    /// Accounts for a pod placed on the node.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.non_zero_milli_cpu += pod.non_zero_milli_cpu;
        self.non_zero_memory += pod.non_zero_memory;
        if pod.has_affinity() {
            self.pods_with_affinity.push(pod.clone());
        }
        if !pod.required_anti_affinity().is_empty() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.used_ports.add(&pod.host_ports);
        self.pods.push(pod);
        match &mut self.pod_index {
            Some(index) => index.set(self.pods[self.pods.len() - 1].uid(), self.pods.len() - 1),
            None if self.pods.len() > POD_INDEX_FROM => {
                self.pod_index = Some(PodIndex::of(&self.pods));
            }
            None => {}
        }
        self.refresh_hot();
        self.generation = next_node_generation();
    }

    /// Removes the pod with this uid; returns it if it was there. The last pod takes its
    /// place (kube's `RemovePod` too). Nodes with many pods find it through their index;
    /// others scan from the most recently added pods, as the pod removed is most often one
    /// just assumed, whose bind echo replaces it.
    pub fn remove_pod(&mut self, uid: &str) -> Option<Arc<PodInfo>> {
        let i = match self
            .pod_index
            .as_ref()
            .and_then(|index| index.find(&self.pods, uid))
        {
            Some(i) => i,
            None => self.pods.iter().rposition(|p| p.uid() == uid)?,
        };
        let pod = self.pods.swap_remove(i);
        if let Some(index) = &mut self.pod_index {
            index.forget(uid, i);
            if let Some(moved) = self.pods.get(i) {
                index.set(moved.uid(), i);
            }
        }
        self.pods_with_affinity.retain(|p| p.uid() != uid);
        self.pods_with_required_anti_affinity
            .retain(|p| p.uid() != uid);
        self.requested.sub(&pod.requests);
        self.used_ports.remove(&pod.host_ports);
        self.non_zero_milli_cpu -= pod.non_zero_milli_cpu;
        self.non_zero_memory -= pod.non_zero_memory;
        self.refresh_hot();
        self.generation = next_node_generation();
        Some(pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_pod_is_the_stored_object_not_a_copy() {
        let mut pod = Pod::default();
        pod.metadata.name = "web".into();
        let stored = Arc::new(Object::Pod(Box::new(pod.clone())));
        let shared = SharedPod::from_object(stored.clone()).expect("a pod");
        assert!(Arc::ptr_eq(shared.object(), &stored));
        assert_eq!(*shared, pod);
        let info = PodInfo::new(shared);
        assert!(Arc::ptr_eq(info.pod.object(), &stored));
        assert_eq!(info.pod.metadata.name, "web");
        let node = Arc::new(Object::Node(Box::new(Node::default())));
        assert!(SharedPod::from_object(node).is_none());
    }

    #[test]
    fn a_pod_holds_affinity_terms_only_when_it_has_some() {
        use berth_model::model::PodAffinityTerm;
        use berth_model::testing::PodBuilder;
        let term = PodAffinityTerm {
            topology_key: "kubernetes.io/hostname".into(),
            ..PodAffinityTerm::default()
        };
        let plain = PodInfo::new(PodBuilder::new("plain").build());
        assert!(!plain.has_affinity());
        assert!(plain.affinity_terms.is_none());
        let preferring = PodInfo::new(
            PodBuilder::new("preferring")
                .preferred_pod_anti_affinity(3, term.clone())
                .build(),
        );
        assert!(preferring.has_affinity());
        assert!(preferring.required_affinity().is_empty());
        assert!(preferring.required_anti_affinity().is_empty());
        assert!(preferring.preferred_affinity().is_empty());
        assert_eq!(preferring.preferred_anti_affinity().len(), 1);
        assert_eq!(preferring.preferred_anti_affinity()[0].weight, 3);
        let requiring = PodInfo::new(
            PodBuilder::new("requiring")
                .required_pod_affinity(term)
                .build(),
        );
        assert_eq!(requiring.required_affinity().len(), 1);
        assert!(requiring.preferred_anti_affinity().is_empty());
    }

    fn pod_info(uid: &str) -> Arc<PodInfo> {
        let mut pod = Pod::default();
        pod.metadata.name = format!("p-{uid}");
        pod.metadata.uid = uid.to_string();
        Arc::new(PodInfo::new(pod))
    }

    fn uids(node: &NodeInfo) -> Vec<&str> {
        node.pods.iter().map(|p| p.uid()).collect()
    }

    /// The index only speeds removal up: after any sequence of adds and removes, the pods
    /// and their order are those of the plain scan with `swap_remove`, on either side of
    /// the size from which the node keeps an index.
    #[test]
    fn removal_through_the_pod_index_matches_the_scan() {
        struct Case {
            name: &'static str,
            pods: usize,
            // Removes every `step`-th uid of the ones added, from `first`, then re-adds some.
            first: usize,
            step: usize,
        }
        let cases = [
            Case {
                name: "small node, no index",
                pods: POD_INDEX_FROM / 2,
                first: 0,
                step: 3,
            },
            Case {
                name: "just past the threshold",
                pods: POD_INDEX_FROM + 1,
                first: 1,
                step: 2,
            },
            Case {
                name: "many pods, oldest first",
                pods: 1_000,
                first: 0,
                step: 1,
            },
            Case {
                name: "many pods, scattered",
                pods: 1_000,
                first: 7,
                step: 13,
            },
        ];
        for case in cases {
            let mut node = NodeInfo::new(Arc::new(Node::default()));
            let mut scan: Vec<Arc<PodInfo>> = Vec::new();
            for i in 0..case.pods {
                let pod = pod_info(&format!("uid-{i}"));
                node.add_pod(pod.clone());
                scan.push(pod);
            }
            assert_eq!(
                node.pod_index.is_some(),
                case.pods > POD_INDEX_FROM,
                "{}",
                case.name
            );
            let mut removed = 0;
            for i in (case.first..case.pods).step_by(case.step) {
                let uid = format!("uid-{i}");
                let want = scan
                    .iter()
                    .rposition(|p| p.uid() == uid)
                    .map(|at| scan.swap_remove(at));
                let got = node.remove_pod(&uid);
                assert_eq!(
                    got.map(|p| p.uid().to_string()),
                    want.map(|p| p.uid().to_string()),
                    "{}: {uid}",
                    case.name
                );
                assert_eq!(
                    uids(&node),
                    scan.iter().map(|p| p.uid()).collect::<Vec<_>>(),
                    "{}: after {uid}",
                    case.name
                );
                removed += 1;
                if removed % 5 == 0 {
                    let again = pod_info(&format!("again-{i}"));
                    node.add_pod(again.clone());
                    scan.push(again);
                }
            }
            assert!(node.remove_pod("not-there").is_none(), "{}", case.name);
            for pod in &scan {
                let found = node.remove_pod(pod.uid()).expect("every pod left is found");
                assert_eq!(found.uid(), pod.uid(), "{}", case.name);
            }
            assert!(node.pods.is_empty(), "{}", case.name);
            assert_eq!(node.requested, Resources::default(), "{}", case.name);
        }
    }

    /// The hot block follows every change of the node and its pods, equal to the fields
    /// it is copied from, and the filters' part of it fits one cache line.
    #[test]
    fn the_hot_block_follows_the_node_and_its_pods() {
        use berth_model::model::TaintEffect;
        use berth_model::testing::{NodeBuilder, PodBuilder};
        fn check(info: &NodeInfo, case: &str) {
            let hot = info.hot();
            let node = &info.node;
            let want = NodeHot {
                allocatable_milli_cpu: info.allocatable.milli_cpu,
                allocatable_memory: info.allocatable.memory,
                allocatable_ephemeral_storage: info.allocatable.ephemeral_storage,
                allowed_pods: info.allocatable.allowed_pods,
                requested_milli_cpu: info.requested.milli_cpu,
                requested_memory: info.requested.memory,
                requested_ephemeral_storage: info.requested.ephemeral_storage,
                pods: info.pods.len() as u32,
                unschedulable: node.spec.unschedulable,
                has_do_not_schedule_taints: node.spec.taints.iter().any(|t| {
                    t.effect == TaintEffect::NoSchedule || t.effect == TaintEffect::NoExecute
                }),
                has_prefer_no_schedule_taints: node
                    .spec
                    .taints
                    .iter()
                    .any(|t| t.effect == TaintEffect::PreferNoSchedule),
                has_scalar_resources: !info.allocatable.scalar.is_empty()
                    || !info.requested.scalar.is_empty(),
                non_zero_milli_cpu: info.non_zero_milli_cpu,
                non_zero_memory: info.non_zero_memory,
                scalar_resource_bits: hot.scalar_resource_bits,
            };
            assert_eq!(*hot, want, "{case}");
            for (name, _) in info.allocatable.scalar.iter().chain(&info.requested.scalar) {
                let bit = scalar_resource_bit(name);
                assert_ne!(hot.scalar_resource_bits & bit, 0, "{case}: {name}");
            }
            assert_eq!(
                hot.scalar_resource_bits == 0,
                !hot.has_scalar_resources,
                "{case}"
            );
        }
        assert_eq!(std::mem::align_of::<NodeInfo>(), 64);
        assert_eq!(std::mem::offset_of!(NodeInfo, hot), 0);
        assert!(std::mem::offset_of!(NodeHot, has_scalar_resources) < 64);
        assert!(std::mem::offset_of!(NodeInfo, node) + std::mem::size_of::<Arc<Node>>() <= 128);
        assert!(
            std::mem::offset_of!(NodeInfo, topology) + std::mem::size_of::<NodeTopology>() <= 128
        );
        assert!(std::mem::offset_of!(NodeInfo, generation) + 8 <= 128);

        let plain = NodeBuilder::new("n")
            .cpu_millis(4000)
            .memory_mib(8192)
            .pods(10);
        let mut info = NodeInfo::new(Arc::new(plain.clone().build()));
        check(&info, "new");
        assert_eq!(info.hot().allocatable_milli_cpu, 4000);
        let web = Arc::new(PodInfo::new(
            PodBuilder::new("web").uid("u1").cpu_millis(500).build(),
        ));
        let gpu = Arc::new(PodInfo::new(
            PodBuilder::new("gpu")
                .uid("u2")
                .request("example.com/gpu", "1")
                .build(),
        ));
        info.add_pod(web);
        check(&info, "one pod");
        assert_eq!(info.hot().requested_milli_cpu, 500);
        info.add_pod(gpu);
        check(&info, "a pod with an extended resource");
        assert!(info.hot().has_scalar_resources);
        let copy = info.clone();
        info.remove_pod("u1");
        check(&info, "removed");
        check(&copy, "the copy keeps its own");
        assert_eq!(copy.hot().pods, 2);
        info.set_node(Arc::new(
            plain
                .clone()
                .unschedulable()
                .taint("a", "", TaintEffect::PreferNoSchedule)
                .allocatable("example.com/gpu", "2")
                .build(),
        ));
        check(&info, "cordoned, tainted, with a gpu");
        assert!(info.hot().unschedulable && info.hot().has_prefer_no_schedule_taints);
        assert!(!info.hot().has_do_not_schedule_taints);
        info.set_node(Arc::new(
            plain.taint("b", "", TaintEffect::NoExecute).build(),
        ));
        check(&info, "NoExecute");
        assert!(info.hot().has_do_not_schedule_taints && !info.hot().unschedulable);
    }

    /// A position the index has wrong (as two uids with one hash leave it) sends the
    /// removal to the scan: the right pod still goes.
    #[test]
    fn a_wrong_index_hint_falls_back_to_the_scan() {
        let mut node = NodeInfo::new(Arc::new(Node::default()));
        for i in 0..=POD_INDEX_FROM {
            node.add_pod(pod_info(&format!("uid-{i}")));
        }
        let index = node.pod_index.as_mut().expect("past the threshold");
        index.0.insert(PodIndex::key("uid-3"), 5);
        index.0.remove(&PodIndex::key("uid-4"));
        assert_eq!(
            node.remove_pod("uid-3").expect("found by the scan").uid(),
            "uid-3"
        );
        assert_eq!(
            node.remove_pod("uid-4").expect("found by the scan").uid(),
            "uid-4"
        );
        assert_eq!(
            node.remove_pod("uid-5").expect("still indexed").uid(),
            "uid-5"
        );
        assert_eq!(node.pods.len(), POD_INDEX_FROM - 2);
    }
}
