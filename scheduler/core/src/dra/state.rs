//! The DRA objects a scheduling cycle reads, kept in the [`crate::framework::Snapshot`]:
//! DeviceClasses (compiled), ResourceSlices grouped into the pools each node can reach,
//! ResourceClaims with their allocations, and the devices those allocations hold. The
//! scheduler's own allocations enter at once, before they are written (kube's assume cache
//! with in-flight allocations), so two pods in a row never get the same device; the stored
//! claim replaces the assumed one when it arrives.
//!
//! The parts a cycle reads are behind `Arc`s that the cycle clones; between cycles nobody
//! else holds them, so updating them in place costs no copy.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use berth_model::model::{Node, NodeSelector};

use berth_model::model::Device;

use super::allocator::{
    self, Allocated, ClaimAllocation, ClaimSpec, Class, Constraint, DeviceId, DeviceResult,
    Outcome, Pool, Request, SpecKey,
};
use crate::framework::hash::FastHashMap;
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

/// Source of [`NodeDevices::stamp`] values: unique in the process, so that a stamp names
/// one state of one node's devices even across copies of a [`DraState`].
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

fn next_stamp() -> u64 {
    NEXT_STAMP.fetch_add(1, Ordering::Relaxed)
}

/// Most verdicts remembered per node (distinct claim shapes at one state of its devices).
const VERDICTS_PER_NODE: usize = 64;

/// The pools a node reaches through its node-local slices, and what the allocator said of
/// them for claims of a given shape while their allocations stood as `stamp` says.
#[derive(Clone, Debug)]
struct NodeDevices {
    pools: Arc<Vec<Pool>>,
    /// Renewed (from [`NEXT_STAMP`]) whenever the pools are rebuilt or an allocation of
    /// one of their devices is counted or taken back.
    stamp: u64,
    /// What the allocator said at one stamp. Shared by copies of the state, which is sound
    /// because a stamp is never given to two different states.
    verdicts: Arc<Mutex<Verdicts>>,
}

/// The verdicts remembered for one node at one stamp: per claim shape
/// ([`SpecKey::id`]), whether the claims can be allocated, packed as `id << 1 | fits` so
/// that a lookup scans a few words.
#[derive(Debug, Default)]
struct Verdicts {
    stamp: u64,
    packed: Vec<u64>,
}

impl Verdicts {
    /// The verdict for `key` at `stamp`, if remembered.
    fn get(&self, stamp: u64, key: SpecKey) -> Option<bool> {
        if self.stamp != stamp {
            return None;
        }
        let id = key.id();
        self.packed
            .iter()
            .find(|&&v| v >> 1 == id)
            .map(|&v| v & 1 == 1)
    }

    /// Remembers the verdict for `key` at `stamp`, forgetting those of other stamps (and
    /// all of them once [`VERDICTS_PER_NODE`] are held).
    fn put(&mut self, stamp: u64, key: SpecKey, fits: bool) {
        if self.stamp != stamp || self.packed.len() >= VERDICTS_PER_NODE {
            self.stamp = stamp;
            self.packed.clear();
        }
        self.packed.push(key.id() << 1 | u64::from(fits));
    }
}

/// Every DRA object the scheduler knows of. The maps looked up per node or per pod in a
/// cycle hash with [`crate::framework::hash::FastHasher`].
#[derive(Clone, Debug, Default)]
pub struct DraState {
    classes: FastHashMap<String, Arc<Class>>,
    slices: BTreeMap<String, Arc<SliceInfo>>,
    /// Node name → names of the slices local to it.
    node_slices: FastHashMap<String, Vec<String>>,
    /// Names of the slices for all nodes or a node selector.
    shared_slices: Vec<String>,
    /// Node name → the pools it reaches through node-local slices, built on demand.
    node_pools: FastHashMap<String, NodeDevices>,
    /// (driver, pool) of a node-local pool → the nodes whose slices publish it.
    pool_nodes: FastHashMap<(Arc<str>, Arc<str>), Vec<String>>,
    /// Namespace → claim name → the claim (two levels, so that a lookup by namespace and
    /// name builds no key).
    claims: FastHashMap<String, FastHashMap<String, ClaimEntry>>,
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
        if let Some(entry) = self.claim_entry(&claim.namespace, &claim.name) {
            if entry.assumed_on.as_deref() == Some(claim.resource_version.as_str()) {
                return;
            }
        }
        self.put_claim(Arc::new(claim), None);
    }

    /// Removes a claim; its devices are free again.
    pub fn remove_claim(&mut self, namespace: &str, name: &str) {
        if let Some(old) = self.take_claim(namespace, name) {
            self.count(&old.claim, false);
        }
    }

    /// The claim `namespace/name`.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<ClaimInfo>> {
        self.claim_entry(namespace, name).map(|e| &e.claim)
    }

    fn claim_entry(&self, namespace: &str, name: &str) -> Option<&ClaimEntry> {
        self.claims.get(namespace)?.get(name)
    }

    /// Removes the entry of `namespace/name` (and the namespace's map once empty).
    fn take_claim(&mut self, namespace: &str, name: &str) -> Option<ClaimEntry> {
        let in_namespace = self.claims.get_mut(namespace)?;
        let entry = in_namespace.remove(name);
        if in_namespace.is_empty() {
            self.claims.remove(namespace);
        }
        entry
    }

    /// Every claim, in no particular order.
    pub fn claims(&self) -> impl Iterator<Item = &Arc<ClaimInfo>> {
        self.claims
            .values()
            .flat_map(|m| m.values())
            .map(|e| &e.claim)
    }

    /// Devices held by allocated claims (stored or assumed).
    pub fn allocated(&self) -> &Arc<Allocated> {
        &self.allocated
    }

    /// Assumes the scheduler's decisions for a pod's claims: allocations and reservations
    /// count at once.
    pub fn assume(&mut self, updates: &[ClaimUpdate]) {
        for update in updates {
            let on = update.claim.resource_version.clone();
            self.put_claim(update.claim.clone(), Some(on));
        }
    }

    /// Drops the scheduler's assumed version of a claim (its write failed), putting back
    /// `stored` (the claim as stored now, None when it is gone).
    pub fn forget_assumed(&mut self, namespace: &str, name: &str, stored: Option<ClaimInfo>) {
        match stored {
            Some(claim) => self.put_claim(Arc::new(claim), None),
            None => self.remove_claim(namespace, name),
        }
    }

    fn put_claim(&mut self, claim: Arc<ClaimInfo>, assumed_on: Option<String>) {
        let old = self
            .claims
            .entry(claim.namespace.clone())
            .or_default()
            .insert(
                claim.name.clone(),
                ClaimEntry {
                    claim: claim.clone(),
                    assumed_on,
                },
            );
        if let Some(old) = old {
            self.count(&old.claim, false);
        }
        self.count(&claim, true);
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
        for result in &allocation.devices {
            let pool = (result.id.driver.clone(), result.id.pool.clone());
            for node in self.pool_nodes.get(&pool).into_iter().flatten() {
                if let Some(devices) = self.node_pools.get_mut(node) {
                    devices.stamp = next_stamp();
                }
            }
        }
    }

    /// A value that names the present state of the devices `node` reaches and of their
    /// allocations: it changes whenever either does, and no other state ever has it (not
    /// even in another copy of this state). None when the node reaches no device or
    /// reaches devices of slices for several nodes, which have no such value.
    pub fn node_stamp(&self, node: &str) -> Option<u64> {
        if !self.shared_slices.is_empty() {
            return None;
        }
        self.node_pools.get(node).map(|d| d.stamp)
    }

    /// The allocator's outcome for `claims` on `node` (see [`allocator::allocate`]), with
    /// what it found remembered for claims of the same shape (`key`, from
    /// [`allocator::spec_key`]) until the node's devices or their allocations change. Only
    /// whether the claims fit is remembered: Ok(Some) holds no allocations when it comes
    /// from memory. Errors are never remembered.
    pub fn allocate_on(&self, node: &Node, claims: &[ClaimSpec], key: Option<&SpecKey>) -> Outcome {
        let devices = self.node_pools.get(&node.metadata.name);
        let (Some(key), Some(devices), true) = (key, devices, self.shared_slices.is_empty()) else {
            return allocator::allocate(claims, &self.pools_for(node), &self.allocated);
        };
        let remembered = devices
            .verdicts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(devices.stamp, *key);
        if let Some(fits) = remembered {
            return Ok(fits.then(Vec::new));
        }
        let outcome = allocator::allocate(claims, &devices.pools, &self.allocated)?;
        devices
            .verdicts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put(devices.stamp, *key, outcome.is_some());
        Ok(outcome)
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
            .map(|d| d.pools.clone())
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
        let pools = (!slices.is_empty()).then(|| Arc::new(gather_pools(&slices)));
        if let Some(old) = self.node_pools.remove(node) {
            for pool in old.pools.iter() {
                let key = (pool.driver.clone(), pool.name.clone());
                if let Some(nodes) = self.pool_nodes.get_mut(&key) {
                    nodes.retain(|n| n != node);
                    if nodes.is_empty() {
                        self.pool_nodes.remove(&key);
                    }
                }
            }
        }
        if let Some(pools) = pools {
            for pool in pools.iter() {
                self.pool_nodes
                    .entry((pool.driver.clone(), pool.name.clone()))
                    .or_default()
                    .push(node.to_string());
            }
            let devices = NodeDevices {
                pools,
                stamp: next_stamp(),
                verdicts: Arc::default(),
            };
            self.node_pools.insert(node.to_string(), devices);
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
                selections: Arc::default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_hold_for_their_stamp_only() {
        let (a, b) = (SpecKey::for_test(7), SpecKey::for_test(8));
        let mut v = Verdicts::default();
        assert_eq!(v.get(1, a), None);
        v.put(1, a, true);
        v.put(1, b, false);
        assert_eq!(v.get(1, a), Some(true));
        assert_eq!(v.get(1, b), Some(false));
        // Another stamp sees none of them, and remembering under it forgets them.
        assert_eq!(v.get(2, a), None);
        v.put(2, b, true);
        assert_eq!(v.get(2, b), Some(true));
        assert_eq!(v.get(2, a), None);
        assert_eq!(v.get(1, a), None);
    }

    #[test]
    fn verdicts_start_afresh_when_full() {
        let mut v = Verdicts::default();
        for id in 0..VERDICTS_PER_NODE as u64 {
            v.put(5, SpecKey::for_test(id), id % 2 == 0);
        }
        assert_eq!(v.get(5, SpecKey::for_test(3)), Some(false));
        v.put(5, SpecKey::for_test(1000), true);
        assert_eq!(v.get(5, SpecKey::for_test(3)), None);
        assert_eq!(v.get(5, SpecKey::for_test(1000)), Some(true));
    }

    fn claim(namespace: &str, name: &str, version: &str) -> ClaimInfo {
        ClaimInfo {
            namespace: namespace.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            requests: Vec::new(),
            constraints: Vec::new(),
            allocation: None,
            reserved_for: Vec::new(),
            deleting: false,
            owner_uid: None,
            resource_version: version.into(),
        }
    }

    #[test]
    fn claims_are_found_by_namespace_and_name() {
        let mut state = DraState::default();
        state.upsert_claim(claim("a", "c", "1"));
        state.upsert_claim(claim("b", "c", "1"));
        assert_eq!(
            state.claim("a", "c").map(|c| c.namespace.as_str()),
            Some("a")
        );
        assert_eq!(
            state.claim("b", "c").map(|c| c.namespace.as_str()),
            Some("b")
        );
        assert!(state.claim("a", "d").is_none());
        assert!(state.claim("c", "c").is_none());
        assert_eq!(state.claims().count(), 2);
        state.remove_claim("a", "c");
        assert!(state.claim("a", "c").is_none());
        assert!(state.claim("b", "c").is_some());
        assert!(!state.claims.contains_key("a"));
        state.remove_claim("b", "c");
        assert!(state.is_empty());
    }

    #[test]
    fn an_assumed_claim_stands_against_the_event_of_its_own_version() {
        let mut state = DraState::default();
        state.upsert_claim(claim("ns", "c", "1"));
        let mut assumed = claim("ns", "c", "1");
        assumed.reserved_for.push(Consumer {
            resource: "pods".into(),
            name: "p".into(),
            uid: "uid-p".into(),
        });
        let assumed = Arc::new(assumed);
        state.assume(&[ClaimUpdate {
            namespace: "ns".into(),
            name: "c".into(),
            pod_claim_name: "gpu".into(),
            allocation: None,
            claim: assumed,
        }]);
        state.upsert_claim(claim("ns", "c", "1"));
        assert!(state
            .claim("ns", "c")
            .is_some_and(|c| c.is_reserved_for("uid-p")));
        state.upsert_claim(claim("ns", "c", "2"));
        assert!(state
            .claim("ns", "c")
            .is_some_and(|c| !c.is_reserved_for("uid-p")));
    }
}
