//! The cluster state a scheduling cycle reads: every node with its pods, indexed by name,
//! plus namespace labels. It is owned by the scheduling loop (or the simulator) and updated
//! in place, one event at a time, between cycles: never rebuilt or copied whole per pod.

use std::collections::HashMap;
use std::sync::Arc;

use berth_proto::model::{LabelSelector, Node, StringMap};

use super::types::{NodeInfo, PodInfo};

/// Nodes and the pods placed on them.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    nodes: Vec<NodeInfo>,
    index: HashMap<String, usize>,
    /// uid → node index of every placed pod.
    pod_locations: HashMap<String, usize>,
    /// Labels of each namespace, for namespaceSelector.
    namespaces: HashMap<String, StringMap>,
    /// Number of placed pods with any inter-pod affinity term (0 lets plugins skip work).
    pods_with_affinity: usize,
    /// Number of placed pods with required anti-affinity.
    pods_with_required_anti_affinity: usize,
    /// PodDisruptionBudgets, for preemption's choice of victims.
    disruption_budgets: Vec<DisruptionBudget>,
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
        self.namespaces.insert(namespace.to_string(), labels);
    }

    /// The PodDisruptionBudgets.
    pub fn disruption_budgets(&self) -> &[DisruptionBudget] {
        &self.disruption_budgets
    }

    /// Replaces the PodDisruptionBudgets.
    pub fn set_disruption_budgets(&mut self, budgets: Vec<DisruptionBudget>) {
        self.disruption_budgets = budgets;
    }

    /// Whether any placed pod has an inter-pod affinity term.
    pub fn has_pods_with_affinity(&self) -> bool {
        self.pods_with_affinity > 0
    }

    /// Whether any placed pod has required anti-affinity.
    pub fn has_pods_with_required_anti_affinity(&self) -> bool {
        self.pods_with_required_anti_affinity > 0
    }

    /// Adds a node, or replaces the object of an existing one (keeping its pods).
    pub fn upsert_node(&mut self, node: Arc<Node>) {
        match self.index.get(&node.metadata.name) {
            Some(&i) => self.nodes[i].set_node(node),
            None => {
                self.index
                    .insert(node.metadata.name.clone(), self.nodes.len());
                self.nodes.push(NodeInfo::new(node));
            }
        }
    }

    /// Removes a node and forgets its pods; returns the pods that were on it.
    pub fn remove_node(&mut self, name: &str) -> Vec<Arc<PodInfo>> {
        let Some(i) = self.index.remove(name) else {
            return Vec::new();
        };
        let removed = self.nodes.swap_remove(i);
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
        self.nodes[i].add_pod(pod);
        true
    }

    /// Removes a placed pod by uid; returns it and its node's name.
    pub fn remove_pod(&mut self, uid: &str) -> Option<(String, Arc<PodInfo>)> {
        let i = self.pod_locations.remove(uid)?;
        let pod = self.nodes[i].remove_pod(uid)?;
        self.count_affinity(&pod, -1);
        Some((self.nodes[i].name().to_string(), pod))
    }

    fn count_affinity(&mut self, pod: &PodInfo, delta: isize) {
        if pod.has_affinity() {
            self.pods_with_affinity = self.pods_with_affinity.saturating_add_signed(delta);
        }
        if !pod.required_anti_affinity.is_empty() {
            self.pods_with_required_anti_affinity = self
                .pods_with_required_anti_affinity
                .saturating_add_signed(delta);
        }
    }
}
