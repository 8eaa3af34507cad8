//! The cluster state a scheduling cycle reads: every node with its pods, indexed by name,
//! plus namespace labels. It is owned by the scheduling loop (or the simulator) and updated
//! in place, one event at a time, between cycles: never rebuilt or copied whole per pod.
//!
//! Every placement change is also written to a short journal, so that plugins whose
//! PreFilter or PreScore state is a function of the placed pods (InterPodAffinity,
//! PodTopologySpread) can bring a cached state up to date with the few changes since their
//! last cycle instead of scanning every pod again (see [`super::cache::IncrementalCache`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use berth_model::model::{LabelSelector, Node, StringMap};

use super::hash::FastHashMap;
use super::types::{NodeInfo, PodInfo};
use crate::dra::state::DraState;

/// Journal entries kept: a cached state more than this many changes behind is recomputed.
const JOURNAL_CAPACITY: usize = 4096;

/// Source of snapshot identities (see [`Snapshot::id`]).
static NEXT_SNAPSHOT_ID: AtomicU64 = AtomicU64::new(1);

fn next_snapshot_id() -> u64 {
    NEXT_SNAPSHOT_ID.fetch_add(1, Ordering::Relaxed)
}

/// One change of a pod's placement, as recorded in the snapshot's journal.
#[derive(Clone, Debug)]
pub struct PodChange {
    /// The pod placed or removed.
    pub pod: Arc<PodInfo>,
    /// Index of its node in [`Snapshot::nodes`] (valid while [`Snapshot::epoch`] is
    /// unchanged: node indices move only when nodes change, which bumps the epoch).
    pub node: usize,
    /// 1 when the pod was placed, -1 when it left.
    pub delta: i64,
}

/// Nodes and the pods placed on them. Its maps hash with [`FastHashMap`]'s hasher: node
/// names, pod uids, namespaces and image names come from the cluster's own objects, and
/// the loop looks them up on every placement.
#[derive(Debug)]
pub struct Snapshot {
    nodes: Vec<NodeInfo>,
    /// Each node's [`NodeInfo::generation`], by index: eight nodes to a cache line, for a
    /// pass that needs no more of a node than whether it changed (the cycle's memo).
    generations: Vec<u64>,
    index: FastHashMap<String, usize>,
    /// uid → node index of every placed pod.
    pod_locations: FastHashMap<String, usize>,
    /// Labels of each namespace, for namespaceSelector.
    namespaces: FastHashMap<String, StringMap>,
    /// Number of placed pods with any inter-pod affinity term (0 lets plugins skip work).
    pods_with_affinity: usize,
    /// Number of placed pods with required anti-affinity.
    pods_with_required_anti_affinity: usize,
    /// PodDisruptionBudgets, for preemption's choice of victims.
    disruption_budgets: Vec<DisruptionBudget>,
    /// DeviceClasses, ResourceSlices and ResourceClaims, with the allocations in flight.
    dra: Arc<DraState>,
    /// Every image name in the nodes' `status.images`, with its size and how many nodes
    /// have it (ImageLocality's spread).
    images: FastHashMap<String, ImageSpread>,
    /// Unique per snapshot value (a clone gets a new one), so caches never mix snapshots.
    id: u64,
    /// Bumped on every change other than a pod's placement (nodes, namespace labels).
    epoch: u64,
    /// Number of placement changes ever recorded; `journal` holds the latest ones.
    generation: u64,
    /// The latest placement changes; entry `i` is change number `generation - len + i`.
    journal: Vec<PodChange>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            nodes: Vec::new(),
            generations: Vec::new(),
            index: FastHashMap::default(),
            pod_locations: FastHashMap::default(),
            namespaces: FastHashMap::default(),
            pods_with_affinity: 0,
            pods_with_required_anti_affinity: 0,
            disruption_budgets: Vec::new(),
            dra: Arc::default(),
            images: FastHashMap::default(),
            id: next_snapshot_id(),
            epoch: 0,
            generation: 0,
            journal: Vec::new(),
        }
    }
}

impl Clone for Snapshot {
    /// A copy with its own identity: the two may then change apart, so a state cached for
    /// one must not be taken for the other.
    fn clone(&self) -> Self {
        Snapshot {
            nodes: self.nodes.clone(),
            generations: self.generations.clone(),
            index: self.index.clone(),
            pod_locations: self.pod_locations.clone(),
            namespaces: self.namespaces.clone(),
            pods_with_affinity: self.pods_with_affinity,
            pods_with_required_anti_affinity: self.pods_with_required_anti_affinity,
            disruption_budgets: self.disruption_budgets.clone(),
            dra: self.dra.clone(),
            images: self.images.clone(),
            id: next_snapshot_id(),
            epoch: self.epoch,
            generation: self.generation,
            journal: self.journal.clone(),
        }
    }
}

/// How far an image has spread: its size and the number of nodes that have it (kube's
/// `ImageStateSummary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageSpread {
    /// Size in bytes, as the first node still holding it reported it (kube keeps the size
    /// of the node that reported the name first).
    pub size_bytes: i64,
    /// Nodes whose `status.images` list the name.
    pub nodes: usize,
}

/// What preemption needs of a PodDisruptionBudget: which pods it covers and how many of them
/// may still be disrupted now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisruptionBudget {
    /// Namespace of the budget; it covers only pods of this namespace.
    pub namespace: String,
    /// Name of the budget.
    pub name: String,
    /// Pods covered; `None` covers none (kube treats a null selector as matching nothing).
    pub selector: Option<LabelSelector>,
    /// `status.disruptionsAllowed`: how many covered pods may be evicted now.
    pub disruptions_allowed: i32,
}

impl Snapshot {
    /// An empty cluster.
    pub fn new() -> Self {
        Self::default()
    }

    /// All nodes, in a stable order (insertion order, with removals swapped in).
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// Each node's [`NodeInfo::generation`], in the order of [`Snapshot::nodes`].
    pub fn generations(&self) -> &[u64] {
        &self.generations
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node with this name.
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    /// Index of the node with this name in [`Snapshot::nodes`].
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The node a placed pod is on.
    pub fn pod_node(&self, uid: &str) -> Option<&NodeInfo> {
        self.pod_locations.get(uid).map(|&i| &self.nodes[i])
    }

    /// Labels of a namespace (None when the namespace is unknown).
    pub fn namespace_labels(&self, namespace: &str) -> Option<&StringMap> {
        self.namespaces.get(namespace)
    }

    /// Sets the labels of a namespace.
    pub fn set_namespace(&mut self, namespace: &str, labels: StringMap) {
        self.epoch += 1;
        self.namespaces.insert(namespace.to_string(), labels);
    }

    /// This snapshot's identity, unique in the process (clones get their own).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bumped by every change that is not a pod's placement: nodes added, changed or removed,
    /// namespace labels. A state cached at another epoch must be recomputed.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Number of placement changes so far.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The placement changes made after the first `generation` ones, oldest first; `None`
    /// when the journal no longer reaches back that far (or `generation` is in the future).
    pub fn changes_since(&self, generation: u64) -> Option<&[PodChange]> {
        let behind = usize::try_from(self.generation.checked_sub(generation)?).ok()?;
        let len = self.journal.len();
        (behind <= len).then(|| &self.journal[len - behind..])
    }

    fn record(&mut self, pod: Arc<PodInfo>, node: usize, delta: i64) {
        if self.journal.len() >= 2 * JOURNAL_CAPACITY {
            self.journal.drain(..JOURNAL_CAPACITY);
        }
        self.journal.push(PodChange { pod, node, delta });
        self.generation += 1;
    }

    /// The PodDisruptionBudgets.
    pub fn disruption_budgets(&self) -> &[DisruptionBudget] {
        &self.disruption_budgets
    }

    /// Replaces the PodDisruptionBudgets.
    pub fn set_disruption_budgets(&mut self, budgets: Vec<DisruptionBudget>) {
        self.disruption_budgets = budgets;
    }

    /// The DRA objects (shared with the cycles that read them).
    pub fn dra(&self) -> &Arc<DraState> {
        &self.dra
    }

    /// The DRA objects, to change; copied first only if a cycle still holds them.
    pub fn dra_mut(&mut self) -> &mut DraState {
        Arc::make_mut(&mut self.dra)
    }

    /// Whether any placed pod has an inter-pod affinity term.
    pub fn has_pods_with_affinity(&self) -> bool {
        self.pods_with_affinity > 0
    }

    /// Whether any placed pod has required anti-affinity.
    pub fn has_pods_with_required_anti_affinity(&self) -> bool {
        self.pods_with_required_anti_affinity > 0
    }

    /// How far the image known by `name` has spread, if any node has it.
    pub fn image_spread(&self, name: &str) -> Option<&ImageSpread> {
        self.images.get(name)
    }

    /// Counts (`add`) or uncounts a node's images in [`Snapshot::image_spread`]; a name the
    /// node lists twice counts once.
    fn count_images(&mut self, node: &Node, add: bool) {
        let mut seen = std::collections::HashSet::new();
        for image in &node.status.images {
            for name in &image.names {
                if !seen.insert(name.as_str()) {
                    continue;
                }
                if add {
                    self.images
                        .entry(name.clone())
                        .or_insert(ImageSpread {
                            size_bytes: image.size_bytes,
                            nodes: 0,
                        })
                        .nodes += 1;
                } else if let Some(spread) = self.images.get_mut(name) {
                    spread.nodes -= 1;
                    if spread.nodes == 0 {
                        self.images.remove(name);
                    }
                }
            }
        }
    }

    /// Adds a node, or replaces the object of an existing one (keeping its pods).
    pub fn upsert_node(&mut self, node: Arc<Node>) {
        self.epoch += 1;
        // As kube's cache: the old object's images leave before the new one's arrive.
        if let Some(&i) = self.index.get(&node.metadata.name) {
            let old = self.nodes[i].node.clone();
            self.count_images(&old, false);
        }
        self.count_images(&node, true);
        match self.index.get(&node.metadata.name) {
            Some(&i) => {
                self.nodes[i].set_node(node);
                self.generations[i] = self.nodes[i].generation;
            }
            None => {
                self.index
                    .insert(node.metadata.name.clone(), self.nodes.len());
                let info = NodeInfo::new(node);
                self.generations.push(info.generation);
                self.nodes.push(info);
            }
        }
    }

    /// Removes a node and forgets its pods; returns the pods that were on it.
    pub fn remove_node(&mut self, name: &str) -> Vec<Arc<PodInfo>> {
        let Some(i) = self.index.remove(name) else {
            return Vec::new();
        };
        self.epoch += 1;
        let removed = self.nodes.swap_remove(i);
        self.generations.swap_remove(i);
        self.count_images(&removed.node, false);
        for p in &removed.pods {
            self.pod_locations.remove(p.uid());
            self.count_affinity(p, -1);
        }
        if i < self.nodes.len() {
            let moved = self.nodes[i].name().to_string();
            self.index.insert(moved, i);
            for p in &self.nodes[i].pods {
                self.pod_locations.insert(p.uid().to_string(), i);
            }
        }
        removed.pods
    }

    /// Places a pod on a node. Returns false (and changes nothing) if the node is unknown.
    /// A pod already placed elsewhere is moved.
    pub fn add_pod(&mut self, node: &str, pod: Arc<PodInfo>) -> bool {
        let Some(&i) = self.index.get(node) else {
            return false;
        };
        self.remove_pod(pod.uid());
        self.count_affinity(&pod, 1);
        self.pod_locations.insert(pod.uid().to_string(), i);
        self.record(pod.clone(), i, 1);
        self.nodes[i].add_pod(pod);
        self.generations[i] = self.nodes[i].generation;
        true
    }

    /// Removes a placed pod by uid; returns it and its node's name.
    pub fn remove_pod(&mut self, uid: &str) -> Option<(String, Arc<PodInfo>)> {
        let i = self.pod_locations.remove(uid)?;
        let pod = self.nodes[i].remove_pod(uid)?;
        self.generations[i] = self.nodes[i].generation;
        self.count_affinity(&pod, -1);
        self.record(pod.clone(), i, -1);
        Some((self.nodes[i].name().to_string(), pod))
    }

    fn count_affinity(&mut self, pod: &PodInfo, delta: isize) {
        if pod.has_affinity() {
            self.pods_with_affinity = self.pods_with_affinity.saturating_add_signed(delta);
        }
        if !pod.required_anti_affinity().is_empty() {
            self.pods_with_required_anti_affinity = self
                .pods_with_required_anti_affinity
                .saturating_add_signed(delta);
        }
    }
}
