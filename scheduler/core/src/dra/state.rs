//! The DRA objects a scheduling cycle reads, kept in the [`crate::framework::Snapshot`]:
//! DeviceClasses (compiled), ResourceSlices grouped into the pools each node can reach,
//! ResourceClaims with their allocations, and the devices those allocations hold. The
//! scheduler's own allocations enter at once, before they are written (kube's assume cache
//! with in-flight allocations), so two pods in a row never get the same device; the stored
//! claim replaces the assumed one when it arrives.
//!
//! The parts a cycle reads are behind `Arc`s that the cycle clones; between cycles nobody
//! else holds them, so updating them in place costs no copy.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use berth_model::model::{Node, NodeSelector};

use berth_model::model::Device;

use super::allocator::{
    Allocated, ClaimAllocation, Class, Constraint, DeviceId, DeviceResult, Pool, Request,
};
use crate::plugins::node_affinity::NodeSelectorMatcher;

/// Most consumers a claim may be reserved for (kube's ResourceClaimReservedForMaxSize).
pub const RESERVED_FOR_MAX_SIZE: usize = 256;

/// Which nodes a slice's devices are reachable from.
#[derive(Clone, Debug)]
pub enum NodeSelection {
    /// One node (`spec.nodeName`).
    Node(String),
    /// Every node (`spec.allNodes`).
    All,
    /// Nodes matching `spec.nodeSelector`.
    Selector(NodeSelector),
}

/// A ResourceSlice as the allocator needs it.
#[derive(Clone, Debug)]
pub struct SliceInfo {
    /// The slice's name.
    pub name: String,
    /// `spec.driver`.
    pub driver: Arc<str>,
    /// `spec.pool.name`.
    pub pool: Arc<str>,
    /// `spec.pool.generation`.
    pub generation: i64,
    /// `spec.pool.resourceSliceCount`.
    pub slice_count: i64,
    /// Where its devices are reachable.
    pub nodes: NodeSelection,
    /// Its devices, in order.
    pub devices: Vec<Arc<Device>>,
}

/// A pod (or other consumer) a claim is reserved for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    /// `resource` (`pods`).
    pub resource: String,
    /// Name.
    pub name: String,
    /// uid.
    pub uid: String,
}

/// A claim's allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocationInfo {
    /// The devices.
    pub devices: Vec<DeviceResult>,
    /// `status.allocation.nodeSelector`: where pods using the claim may run.
    pub node_selector: Option<NodeSelector>,
}

/// A ResourceClaim as the plugin needs it.
#[derive(Clone, Debug)]
pub struct ClaimInfo {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// uid.
    pub uid: String,
    /// The requests; their classes are looked up when the claim is allocated.
    pub requests: Vec<Request>,
    /// `matchAttribute` constraints.
    pub constraints: Vec<Constraint>,
    /// `status.allocation`.
    pub allocation: Option<AllocationInfo>,
    /// `status.reservedFor`.
    pub reserved_for: Vec<Consumer>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// uid of the controlling owner (the pod of a template claim), if any.
    pub owner_uid: Option<String>,
    /// `metadata.resourceVersion` of the stored claim this was read from.
    pub resource_version: String,
}

impl ClaimInfo {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether `uid` is among the consumers.
    pub fn is_reserved_for(&self, uid: &str) -> bool {
        self.reserved_for.iter().any(|c| c.uid == uid)
    }
}

/// A claim held in the state: the claim, and whether its allocation or reservation is the
/// scheduler's own, not yet stored.
#[derive(Clone, Debug)]
struct ClaimEntry {
    claim: Arc<ClaimInfo>,
    /// The resourceVersion the assumed change was made on; the stored claim at that
    /// version (an older event) does not replace it.
    assumed_on: Option<String>,
}

/// What the scheduler decided for one claim of a pod it placed (kube's Reserve), to be
/// written before the pod binds (kube's PreBind).
#[derive(Clone, Debug)]
pub struct ClaimUpdate {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The claim's name in the pod's `spec.resourceClaims`.
    pub pod_claim_name: String,
    /// Set when the scheduler allocated the claim now.
    pub allocation: Option<AllocationInfo>,
    /// The claim with the new allocation and the pod among its consumers.
    pub claim: Arc<ClaimInfo>,
}

/// Every DRA object the scheduler knows of.
#[derive(Clone, Debug, Default)]
pub struct DraState {
    classes: HashMap<String, Arc<Class>>,
    slices: BTreeMap<String, Arc<SliceInfo>>,
    /// Node name → names of the slices local to it.
    node_slices: HashMap<String, Vec<String>>,
    /// Names of the slices for all nodes or a node selector.
    shared_slices: Vec<String>,
    /// Node name → the pools it reaches through node-local slices, built on demand.
    node_pools: HashMap<String, Arc<Vec<Pool>>>,
    claims: HashMap<String, ClaimEntry>,
    allocated: Arc<Allocated>,
}

impl DraState {
    /// Whether no DRA object is known (pods without claims then cost nothing).
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.slices.is_empty() && self.claims.is_empty()
    }

    /// Adds or replaces a DeviceClass.
    pub fn upsert_class(&mut self, class: Class) {
        self.classes.insert(class.name.clone(), Arc::new(class));
    }

    /// Removes a DeviceClass.
    pub fn remove_class(&mut self, name: &str) {
        self.classes.remove(name);
    }

    /// The DeviceClass with this name.
    pub fn class(&self, name: &str) -> Option<&Arc<Class>> {
        self.classes.get(name)
    }

    /// Adds or replaces a ResourceSlice.
    pub fn upsert_slice(&mut self, slice: SliceInfo) {
        self.remove_slice(&slice.name.clone());
        let name = slice.name.clone();
        let local = match &slice.nodes {
            NodeSelection::Node(node) => Some(node.clone()),
            NodeSelection::All | NodeSelection::Selector(_) => None,
        };
        self.slices.insert(name.clone(), Arc::new(slice));
        match local {
            Some(node) => {
                self.node_slices.entry(node.clone()).or_default().push(name);
                self.rebuild_node(&node);
            }
            None => self.shared_slices.push(name),
        }
    }

    /// Removes a ResourceSlice.
    pub fn remove_slice(&mut self, name: &str) {
        let Some(old) = self.slices.remove(name) else {
            return;
        };
        match &old.nodes {
            NodeSelection::Node(node) => {
                if let Some(names) = self.node_slices.get_mut(node) {
                    names.retain(|n| n != name);
                    if names.is_empty() {
                        self.node_slices.remove(node);
                    }
                }
                self.rebuild_node(node);
            }
            NodeSelection::All | NodeSelection::Selector(_) => {
                self.shared_slices.retain(|n| n != name);
            }
        }
    }

    /// Adds or replaces a claim as stored. An assumed version made on this same
    /// resourceVersion stands (the event is older than the scheduler's own change).
    pub fn upsert_claim(&mut self, claim: ClaimInfo) {
        let key = claim.key();
        if let Some(entry) = self.claims.get(&key) {
            if entry.assumed_on.as_deref() == Some(claim.resource_version.as_str()) {
                return;
            }
        }
        self.put_claim(key, Arc::new(claim), None);
    }

    /// Removes a claim; its devices are free again.
    pub fn remove_claim(&mut self, namespace: &str, name: &str) {
        let key = format!("{namespace}/{name}");
        if let Some(old) = self.claims.remove(&key) {
            self.count(&old.claim, false);
        }
    }

    /// The claim `namespace/name`.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<ClaimInfo>> {
        self.claims
            .get(&format!("{namespace}/{name}"))
            .map(|e| &e.claim)
    }

    /// Every claim, in no particular order.
    pub fn claims(&self) -> impl Iterator<Item = &Arc<ClaimInfo>> {
        self.claims.values().map(|e| &e.claim)
    }

    /// Devices held by allocated claims (stored or assumed).
    pub fn allocated(&self) -> &Arc<Allocated> {
        &self.allocated
    }

    /// Assumes the scheduler's decisions for a pod's claims: allocations and reservations
    /// count at once.
    pub fn assume(&mut self, updates: &[ClaimUpdate]) {
        for update in updates {
            let key = update.claim.key();
            let on = update.claim.resource_version.clone();
            self.put_claim(key, update.claim.clone(), Some(on));
        }
    }

    /// Drops the scheduler's assumed version of a claim (its write failed), putting back
    /// `stored` (the claim as stored now, None when it is gone).
    pub fn forget_assumed(&mut self, namespace: &str, name: &str, stored: Option<ClaimInfo>) {
        let key = format!("{namespace}/{name}");
        match stored {
            Some(claim) => self.put_claim(key, Arc::new(claim), None),
            None => self.remove_claim(namespace, name),
        }
    }

    fn put_claim(&mut self, key: String, claim: Arc<ClaimInfo>, assumed_on: Option<String>) {
        if let Some(old) = self.claims.remove(&key) {
            self.count(&old.claim, false);
        }
        self.count(&claim, true);
        self.claims.insert(key, ClaimEntry { claim, assumed_on });
    }

    /// Counts (or takes back) the devices of a claim's allocation.
    fn count(&mut self, claim: &ClaimInfo, add: bool) {
        let Some(allocation) = &claim.allocation else {
            return;
        };
        let allocated = Arc::make_mut(&mut self.allocated);
        for result in &allocation.devices {
            let shared = result.share_id.is_some();
            if add {
                allocated.add(result.id.clone(), shared, &result.consumed_capacity);
            } else {
                allocated.remove(&result.id, shared, &result.consumed_capacity);
            }
        }
    }

    /// The pools `node` can reach, in kube's order: node-local pools, then pools of slices
    /// for all nodes or a matching selector, grouped by (driver, pool) and sorted so; within
    /// a pool, slices by name and devices in order; only each pool's newest generation.
    /// (kube iterates pools in Go map order, which is unspecified; Berth sorts them by
    /// driver and pool name so that runs are reproducible.)
    pub fn pools_for(&self, node: &Node) -> Arc<Vec<Pool>> {
        let local = self
            .node_pools
            .get(&node.metadata.name)
            .cloned()
            .unwrap_or_default();
        if self.shared_slices.is_empty() {
            return local;
        }
        self.with_shared(node, &local)
    }

    /// Rebuilds the pools a node reaches through its node-local slices.
    fn rebuild_node(&mut self, node: &str) {
        let slices: Vec<&SliceInfo> = self
            .node_slices
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|s| self.slices.get(s).map(|s| s.as_ref()))
            .collect();
        if slices.is_empty() {
            self.node_pools.remove(node);
        } else {
            let pools = Arc::new(gather_pools(&slices));
            self.node_pools.insert(node.to_string(), pools);
        }
    }

    fn with_shared(&self, node: &Node, local: &[Pool]) -> Arc<Vec<Pool>> {
        let mut slices: Vec<&SliceInfo> = self
            .node_slices
            .get(&node.metadata.name)
            .into_iter()
            .flatten()
            .filter_map(|s| self.slices.get(s).map(|s| s.as_ref()))
            .collect();
        let before = slices.len();
        for s in &self.shared_slices {
            let Some(slice) = self.slices.get(s) else {
                continue;
            };
            let reaches = match &slice.nodes {
                NodeSelection::All => true,
                NodeSelection::Selector(sel) => NodeSelectorMatcher::new(sel).matches(node),
                NodeSelection::Node(n) => *n == node.metadata.name,
            };
            if reaches {
                slices.push(slice);
            }
        }
        if slices.len() == before {
            return Arc::new(local.to_vec());
        }
        Arc::new(gather_pools(&slices))
    }
}

/// kube's GatherPools over the slices reaching one node: grouped by (driver, pool), only
/// the newest generation kept, incomplete when fewer slices than `resourceSliceCount`,
/// invalid when a device name repeats.
fn gather_pools(slices: &[&SliceInfo]) -> Vec<Pool> {
    let mut by_pool: BTreeMap<(Arc<str>, Arc<str>), Vec<&SliceInfo>> = BTreeMap::new();
    for slice in slices {
        let entry = by_pool
            .entry((slice.driver.clone(), slice.pool.clone()))
            .or_default();
        match entry.first().map(|s| s.generation) {
            Some(g) if slice.generation < g => {}
            Some(g) if slice.generation > g => *entry = vec![slice],
            _ => entry.push(slice),
        }
    }
    by_pool
        .into_iter()
        .map(|((driver, name), mut slices)| {
            slices.sort_by(|a, b| a.name.cmp(&b.name));
            let incomplete = slices.len() as i64 != slices[0].slice_count;
            let node_local = slices
                .iter()
                .any(|s| matches!(s.nodes, NodeSelection::Node(_)));
            let devices: Vec<Arc<Device>> = slices
                .iter()
                .flat_map(|s| s.devices.iter().cloned())
                .collect();
            let mut seen = std::collections::HashSet::new();
            let invalid = devices
                .iter()
                .find(|d| !seen.insert(d.name.as_str()))
                .map(|d| format!("duplicate device name {}", d.name));
            let ids = devices
                .iter()
                .map(|d| DeviceId {
                    driver: driver.clone(),
                    pool: name.clone(),
                    device: d.name.as_str().into(),
                })
                .collect();
            Pool {
                driver,
                name,
                devices,
                ids,
                incomplete,
                invalid,
                node_local,
            }
        })
        .collect()
}

/// The allocation record of a claim allocated on `node` (its node selector names the node
/// when any device came from a node-local pool, as kube's createNodeSelector does).
pub fn allocation_on(node: &str, allocation: ClaimAllocation, local: bool) -> AllocationInfo {
    use berth_model::model::{NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm};
    let node_selector = local.then(|| NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Vec::new(),
            match_fields: vec![NodeSelectorRequirement {
                key: "metadata.name".to_string(),
                operator: NodeSelectorOperator::In,
                values: vec![node.to_string()],
            }],
        }],
    });
    AllocationInfo {
        devices: allocation.devices,
        node_selector,
    }
}
