//! kube's structured allocator (k8s.io/dynamic-resource-allocation/structured), over Berth's
//! flattened device inventory: for one node, find devices for every request of every claim
//! a pod still needs allocated, first fit in kube's order (pools, their slices, each slice's
//! devices in order), backtracking over earlier choices when a later request or a
//! `matchAttribute` constraint cannot be met. Devices with `allowMultipleAllocations` are
//! shared by capacity (DRAConsumableCapacity): each allocation consumes what its request asks
//! for, rounded up by the capacity's `requestPolicy`, and records it.
//!
//! A selector that fails at runtime (a CEL error, such as an attribute the device lacks
//! without a guard) fails the whole allocation with an error, as kube's allocator does: the
//! scheduling attempt then ends with that error rather than treating the device as a
//! non-match.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use berth_model::cel::{self, SelectorSource};
use berth_model::model::{
    CapacityRequestPolicy, CapacityRequestPolicyRange, Device, DeviceAttribute, DeviceCapacity,
};
use berth_model::quantity::Quantity;

use crate::framework::hash::{FastBuildHasher, FastHashMap};

/// A set with [`crate::framework::hash::FastHasher`]: device ids are looked up per device
/// per node in every cycle.
type FastHashSet<T> = HashSet<T, FastBuildHasher>;

/// kube's AllocationResultsMaxSize: most devices one claim may be allocated.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

/// A device's identity: driver, pool and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// The driver (`gpu.berth.dev`).
    pub driver: Arc<str>,
    /// The pool within the driver (for node-local slices, the node name).
    pub pool: Arc<str>,
    /// The device within the pool (`gpu-0`).
    pub device: Arc<str>,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// kube's lookupAttribute: the attribute by fully qualified name, or by its bare name when
/// the domain is the device's driver.
pub fn lookup_attribute<'a>(
    device: &'a Device,
    driver: &str,
    qualified: &str,
) -> Option<&'a DeviceAttribute> {
    if let Some(a) = device.attributes.get(qualified) {
        return Some(a);
    }
    let (domain, name) = qualified.split_once('/')?;
    (domain == driver)
        .then(|| device.attributes.get(name))
        .flatten()
}

/// The capacity by fully qualified name, or by bare name in the driver's domain, with the
/// name the device uses for it.
fn capacity_named<'a>(
    device: &'a Device,
    driver: &str,
    qualified: &str,
) -> Option<(&'a String, &'a DeviceCapacity)> {
    if let Some(entry) = device.capacity.get_key_value(qualified) {
        return Some(entry);
    }
    match qualified.split_once('/') {
        Some((domain, name)) if domain == driver => device.capacity.get_key_value(name),
        _ => None,
    }
}

/// Devices of one pool that a node can reach, in kube's iteration order.
#[derive(Clone, Debug)]
pub struct Pool {
    /// The driver.
    pub driver: Arc<str>,
    /// The pool's name.
    pub name: Arc<str>,
    /// Devices of the pool's current generation, slice by slice, in order.
    pub devices: Vec<Arc<Device>>,
    /// Their identities, index for index (built once, not per allocation).
    pub ids: Vec<DeviceId>,
    /// Not every slice of the current generation has been published yet.
    pub incomplete: bool,
    /// Why the pool cannot be used (duplicate device names), if it cannot.
    pub invalid: Option<String>,
    /// Whether its slices are local to one node (an allocation from it pins the claim to
    /// that node).
    pub node_local: bool,
    /// Selector verdicts on its devices, kept as long as the pool (its devices never change).
    pub selections: Arc<SelectionMemo>,
}

/// What selectors said of a pool's devices: by [`DeviceSelector::cache_key`], a verdict per
/// device index. Errors are not kept.
#[derive(Debug, Default)]
pub struct SelectionMemo(Mutex<FastHashMap<String, Vec<Option<bool>>>>);

impl SelectionMemo {
    /// Whether the selector matches device `di` of `pool`, remembered per selector key.
    fn matches(
        pool: &Pool,
        selector: &dyn DeviceSelector,
        di: usize,
    ) -> Result<bool, SelectorError> {
        let Some(key) = selector.cache_key() else {
            return selector.matches(&pool.driver, &pool.devices[di]);
        };
        let lock = || pool.selections.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&Some(known)) = lock().get(key).and_then(|v| v.get(di)) {
            return Ok(known);
        }
        let verdict = selector.matches(&pool.driver, &pool.devices[di])?;
        let mut memo = lock();
        let verdicts = match memo.get_mut(key) {
            Some(v) => v,
            None => memo
                .entry(key.to_string())
                .or_insert_with(|| vec![None; pool.devices.len()]),
        };
        if let Some(slot) = verdicts.get_mut(di) {
            *slot = Some(verdict);
        }
        Ok(verdict)
    }
}

impl Pool {
    fn id(&self) -> String {
        format!("{}/{}", self.driver, self.name)
    }
}

/// Why a selector could not say whether a device matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectorError {
    /// The expression does not compile (validation refuses that at apply; kube reports it
    /// when the selector is used).
    Compile(String),
    /// Evaluating it on this device failed (an attribute the device lacks, a result that
    /// is not a bool).
    Runtime(String),
}

/// Evaluates one selector of a class or a request against a device.
pub trait DeviceSelector: Send + Sync + fmt::Debug {
    /// Whether the device of `driver` matches.
    fn matches(&self, driver: &str, device: &Device) -> Result<bool, SelectorError>;

    /// A text that determines the verdicts: two selectors with the same key match the same
    /// devices (a CEL selector's expression). None: the verdicts may not be remembered.
    fn cache_key(&self) -> Option<&str> {
        None
    }
}

/// kube's message for a selector that failed: `class gpu: selector #0: CEL runtime error:
/// ...` or `claim default/c: selector #1: CEL compile error: ...`.
fn selector_failure(source: SelectorSource<'_>, index: usize, e: SelectorError) -> AllocationError {
    AllocationError(match e {
        SelectorError::Runtime(message) => {
            cel::runtime_error_message(source, index, &cel::EvalError { message })
        }
        SelectorError::Compile(message) => match source {
            SelectorSource::Class { name } => {
                format!("class {name}: selector #{index}: CEL compile error: {message}")
            }
            SelectorSource::Claim { namespace, name } => {
                format!("claim {namespace}/{name}: selector #{index}: CEL compile error: {message}")
            }
        },
    })
}

/// A DeviceClass: its name and selectors.
#[derive(Clone, Debug)]
pub struct Class {
    /// The class's name.
    pub name: String,
    /// Selectors every device of the class must match.
    pub selectors: Vec<Arc<dyn DeviceSelector>>,
}

/// How many devices a request wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationMode {
    /// Exactly this many.
    ExactCount(u32),
    /// Every matching device the node can reach (at least one).
    All,
}

/// One request, or one alternative of a `firstAvailable` request.
#[derive(Clone, Debug)]
pub struct ExactRequest {
    /// The request's (or subrequest's) name.
    pub name: String,
    /// Its class, None when the class does not exist.
    pub class: Option<Arc<Class>>,
    /// The class's name, for messages.
    pub class_name: String,
    /// Its own selectors, ANDed with the class's.
    pub selectors: Vec<Arc<dyn DeviceSelector>>,
    /// How many devices.
    pub mode: AllocationMode,
    /// `adminAccess`: devices in use by others may be allocated too.
    pub admin_access: bool,
    /// `capacity.requests`: what the request consumes of each named capacity.
    pub capacity: BTreeMap<String, Quantity>,
}

/// A request of a claim: `exactly`, or `firstAvailable` alternatives in order.
#[derive(Clone, Debug)]
pub enum Request {
    /// `exactly`.
    Exactly(ExactRequest),
    /// `firstAvailable`: the first alternative that can be allocated wins.
    FirstAvailable {
        /// The request's name.
        name: String,
        /// The alternatives, in order.
        alternatives: Vec<ExactRequest>,
    },
}

impl Request {
    /// The request's name.
    pub fn name(&self) -> &str {
        match self {
            Request::Exactly(r) => &r.name,
            Request::FirstAvailable { name, .. } => name,
        }
    }
}

/// A `matchAttribute` constraint of a claim.
#[derive(Clone, Debug)]
pub struct Constraint {
    /// The requests it applies to (empty: all of them); `req` or `req/sub`.
    pub requests: Vec<String>,
    /// The fully qualified attribute that must be equal on all their devices.
    pub match_attribute: String,
}

/// A claim to allocate.
#[derive(Clone, Debug)]
pub struct ClaimSpec {
    /// `namespace/name`, for messages.
    pub key: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The claim's uid, which seeds share ids.
    pub uid: String,
    /// Its requests, in order.
    pub requests: Vec<Request>,
    /// Its constraints.
    pub constraints: Vec<Constraint>,
}

/// The shape of a set of claims: everything of them that decides whether a node's devices
/// can satisfy them (requests, classes, selectors, counts, capacities, constraints), but
/// not their names or uids. Equal keys, equal verdicts on the same devices.
///
/// A key is a number: the shape's text is interned once (per pod per cycle, when the key is
/// made), so that the per-node lookups compare one word instead of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpecKey(u64);

impl SpecKey {
    /// The key as a number, unique to its shape within the process.
    pub fn id(self) -> u64 {
        self.0
    }

    /// A key of this number, for tests of what is remembered under keys.
    #[cfg(test)]
    pub(crate) fn for_test(id: u64) -> Self {
        SpecKey(id)
    }
}

/// Most shapes the interner holds; when full it starts afresh (see [`intern_shape`]).
const MAX_INTERNED_SHAPES: usize = 4096;

/// Shape texts and their numbers. Numbers are never given twice, so forgetting the texts
/// (when the table is full) only makes the same shape get a new number, whose verdicts are
/// then computed again: never a wrong verdict.
struct ShapeTable {
    ids: FastHashMap<Box<str>, u64>,
    next: u64,
}

static SHAPES: Mutex<ShapeTable> = Mutex::new(ShapeTable {
    ids: std::collections::HashMap::with_hasher(FastBuildHasher::new()),
    next: 1,
});

/// The number of the shape `text`.
fn intern_shape(text: &str) -> SpecKey {
    let mut table = SHAPES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&id) = table.ids.get(text) {
        return SpecKey(id);
    }
    if table.ids.len() >= MAX_INTERNED_SHAPES {
        table.ids.clear();
    }
    let id = table.next;
    table.next += 1;
    table.ids.insert(text.into(), id);
    SpecKey(id)
}

/// The shape of `claims`, or None when one of their selectors has no
/// [`DeviceSelector::cache_key`].
pub fn spec_key(claims: &[ClaimSpec]) -> Option<SpecKey> {
    use std::fmt::Write as _;
    fn piece(out: &mut String, s: &str) {
        let _ = write!(out, "{}:{s}", s.len());
    }
    fn selectors(out: &mut String, list: &[Arc<dyn DeviceSelector>]) -> Option<()> {
        let _ = write!(out, "[{}", list.len());
        for s in list {
            piece(out, s.cache_key()?);
        }
        out.push(']');
        Some(())
    }
    fn exact(out: &mut String, r: &ExactRequest) -> Option<()> {
        piece(out, &r.name);
        let class = r.class.as_ref()?;
        piece(out, &class.name);
        selectors(out, &class.selectors)?;
        selectors(out, &r.selectors)?;
        let _ = write!(out, "{:?}{}[", r.mode, r.admin_access);
        for (name, q) in &r.capacity {
            piece(out, name);
            let _ = write!(out, "={q:?}");
        }
        out.push(']');
        Some(())
    }
    let mut out = String::new();
    for claim in claims {
        let _ = write!(out, "C{}", claim.requests.len());
        for request in &claim.requests {
            match request {
                Request::Exactly(r) => {
                    out.push('E');
                    exact(&mut out, r)?;
                }
                Request::FirstAvailable { name, alternatives } => {
                    out.push('F');
                    piece(&mut out, name);
                    let _ = write!(out, "{}", alternatives.len());
                    for a in alternatives {
                        exact(&mut out, a)?;
                    }
                }
            }
        }
        let _ = write!(out, "K{}", claim.constraints.len());
        for c in &claim.constraints {
            piece(&mut out, &c.match_attribute);
            let _ = write!(out, "{}", c.requests.len());
            for r in &c.requests {
                piece(&mut out, r);
            }
        }
    }
    Some(intern_shape(&out))
}

/// Devices other claims hold: exclusively, or part of their capacity.
#[derive(Clone, Debug, Default)]
pub struct Allocated {
    /// Devices allocated whole (results without a share id).
    pub exclusive: FastHashSet<DeviceId>,
    /// Capacity consumed of shared devices, per capacity name as in the device.
    pub consumed: FastHashMap<DeviceId, BTreeMap<String, Quantity>>,
}

impl Allocated {
    /// Counts one allocation result.
    pub fn add(&mut self, id: DeviceId, shared: bool, consumed: &BTreeMap<String, Quantity>) {
        if !shared {
            self.exclusive.insert(id);
            return;
        }
        let entry = self.consumed.entry(id).or_default();
        for (name, q) in consumed {
            let slot = entry.entry(name.clone()).or_default();
            *slot = Quantity::from_millis(slot.millis().saturating_add(q.millis()));
        }
    }

    /// Takes back one allocation result counted by [`Allocated::add`].
    pub fn remove(&mut self, id: &DeviceId, shared: bool, consumed: &BTreeMap<String, Quantity>) {
        if !shared {
            self.exclusive.remove(id);
            return;
        }
        let Some(entry) = self.consumed.get_mut(id) else {
            return;
        };
        for (name, q) in consumed {
            if let Some(slot) = entry.get_mut(name) {
                *slot = Quantity::from_millis(slot.millis().saturating_sub(q.millis()));
            }
        }
        if entry.values().all(|q| q.millis() <= 0) {
            self.consumed.remove(id);
        }
    }
}

/// One allocated device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceResult {
    /// The request (`req`, or `req/sub` for a firstAvailable alternative).
    pub request: String,
    /// The device.
    pub id: DeviceId,
    /// Set for requests with adminAccess.
    pub admin_access: bool,
    /// For a shared device: what this allocation consumes of each capacity.
    pub consumed_capacity: BTreeMap<String, Quantity>,
    /// For a shared device: the share's id (a UUID, unique per allocation).
    pub share_id: Option<String>,
}

/// A claim's allocation on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimAllocation {
    /// Devices, in the order they were picked.
    pub devices: Vec<DeviceResult>,
}

/// Why allocation stopped with an error (a broken claim or class, not a lack of devices):
/// the message is kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AllocationError(pub String);

/// The allocator's outcome on one node.
pub type Outcome = Result<Option<Vec<ClaimAllocation>>, AllocationError>;

/// Allocates `claims` (all of them, or none) from `pools` for one node, leaving what
/// `allocated` holds to its owners. Ok(None): the node cannot satisfy them.
pub fn allocate(claims: &[ClaimSpec], pools: &[Pool], allocated: &Allocated) -> Outcome {
    allocate_preferring(claims, pools, allocated, &[])
}

/// [`allocate`], trying the `preferred` devices first (in that order) wherever a request
/// takes a device, then the others in kube's order. Whether the claims can be allocated
/// does not depend on the preference (the search is exhaustive), only which devices they
/// get.
pub fn allocate_preferring(
    claims: &[ClaimSpec],
    pools: &[Pool],
    allocated: &Allocated,
    preferred: &[DeviceId],
) -> Outcome {
    let mut run = Run::new(claims, pools, allocated)?;
    for id in preferred {
        let found = pools.iter().enumerate().find_map(|(pi, pool)| {
            let usable = !pool.incomplete && pool.invalid.is_none();
            let di = pool.ids.iter().position(|d| d == id)?;
            usable.then_some((pi, di))
        });
        if let Some(at) = found {
            if !run.preferred.contains(&at) {
                run.preferred.push(at);
            }
        }
    }
    let done = match run.allocate_one(Cursor::default(), false) {
        Ok(done) => done,
        Err(Stop::MaxSize) => false,
        Err(Stop::Error(e)) => return Err(e),
    };
    if !done {
        if pools.iter().any(|p| p.invalid.is_some()) {
            // kube surfaces invalid pools only when nothing could be allocated.
            return Err(AllocationError(
                "invalid resource pools were encountered".to_string(),
            ));
        }
        return Ok(None);
    }
    // Share ids are made once the search has succeeded (its dead ends need none): the
    // n-th shared device of the run's result gets counter n, unique within the run.
    let mut n = 0;
    for (claim, devices) in claims.iter().zip(&mut run.results) {
        for result in devices.iter_mut().filter(|r| r.share_id.is_some()) {
            n += 1;
            result.share_id = Some(share_id(&claim.uid, &result.request, &result.id, n));
        }
    }
    Ok(Some(
        run.results
            .into_iter()
            .map(|devices| ClaimAllocation { devices })
            .collect(),
    ))
}

/// Where the search stands: claim, request, alternative and device within the request,
/// and the first candidate (by its place in the order devices are tried) this device may
/// take.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    claim: usize,
    request: usize,
    alternative: usize,
    device: usize,
    /// The devices of one request are taken in the order they are tried: the n-th device
    /// is never tried before the (n-1)-th's place. This is exact: every device of a
    /// request is checked against the same request, its consumption does not depend on
    /// what else was taken, and constraints compare values with no regard to order, so a
    /// way to satisfy the claims with two devices of a request in the other order is
    /// also a way with them in this order, found earlier; the first way found is the
    /// same as without the rule, only the dead ends that are the same set of devices
    /// again (n! of them for n devices) are not walked.
    from: usize,
}

/// Why the recursion unwinds.
enum Stop {
    /// kube's errAllocationResultMaxSizeExceeded: try another alternative.
    MaxSize,
    /// A broken claim or class.
    Error(AllocationError),
}

impl From<AllocationError> for Stop {
    fn from(e: AllocationError) -> Self {
        Stop::Error(e)
    }
}

/// A request (or alternative) prepared for the search.
struct RequestData<'a> {
    request: &'a ExactRequest,
    /// Set for alternatives: the parent request's name.
    parent: Option<&'a str>,
    num_devices: usize,
    /// For mode All: the devices to take, found up front.
    all_devices: Vec<(usize, usize)>,
}

impl RequestData<'_> {
    fn full_name(&self) -> String {
        match self.parent {
            Some(parent) => format!("{parent}/{}", self.request.name),
            None => self.request.name.clone(),
        }
    }
}

/// State of one constraint during the search.
struct ConstraintState<'a> {
    constraint: &'a Constraint,
    value: Option<&'a DeviceAttribute>,
    count: usize,
}

impl<'a> ConstraintState<'a> {
    fn applies(&self, base: &str, full: &str) -> bool {
        self.constraint.requests.is_empty()
            || self
                .constraint
                .requests
                .iter()
                .any(|r| r == base || r == full)
    }

    fn add(&mut self, base: &str, full: &str, driver: &str, device: &'a Device) -> bool {
        if !self.applies(base, full) {
            return true;
        }
        let Some(attribute) = lookup_attribute(device, driver, &self.constraint.match_attribute)
        else {
            return false;
        };
        if self.count == 0 {
            self.value = Some(attribute);
            self.count = 1;
            return true;
        }
        // Values of different types never match.
        if self.value != Some(attribute) {
            return false;
        }
        self.count += 1;
        true
    }

    fn remove(&mut self, base: &str, full: &str) {
        if self.applies(base, full) {
            self.count -= 1;
        }
    }
}

struct Run<'a> {
    claims: &'a [ClaimSpec],
    pools: &'a [Pool],
    allocated: &'a Allocated,
    /// (claim, request, alternative) → prepared data.
    requests: FastHashMap<(usize, usize, usize), RequestData<'a>>,
    constraints: Vec<Vec<ConstraintState<'a>>>,
    /// Per claim, the devices chosen so far.
    results: Vec<Vec<DeviceResult>>,
    /// Devices taken whole in this run, by claim index.
    allocating: FastHashMap<DeviceId, HashSet<usize>>,
    /// Capacity consumed of shared devices in this run.
    allocating_capacity: Allocated,
    /// (pool, device, claim, request, alternative) → selector verdict.
    matches: FastHashMap<(usize, usize, usize, usize, usize), bool>,
    /// (pool, device) to try first, in order.
    preferred: Vec<(usize, usize)>,
    /// How many candidates were tried (the size of the search).
    tried: usize,
}

impl<'a> Run<'a> {
    fn new(
        claims: &'a [ClaimSpec],
        pools: &'a [Pool],
        allocated: &'a Allocated,
    ) -> Result<Self, AllocationError> {
        let mut run = Run {
            claims,
            pools,
            allocated,
            requests: FastHashMap::default(),
            constraints: Vec::with_capacity(claims.len()),
            results: vec![Vec::new(); claims.len()],
            allocating: FastHashMap::default(),
            allocating_capacity: Allocated::default(),
            matches: FastHashMap::default(),
            preferred: Vec::new(),
            tried: 0,
        };
        for (ci, claim) in claims.iter().enumerate() {
            let mut min_devices = 0usize;
            for (ri, request) in claim.requests.iter().enumerate() {
                match request {
                    Request::Exactly(r) => {
                        let data = run.prepare(ci, ri, 0, r, None)?;
                        min_devices += data.num_devices;
                        run.requests.insert((ci, ri, 0), data);
                    }
                    Request::FirstAvailable { name, alternatives } => {
                        let mut min = usize::MAX;
                        for (ai, alt) in alternatives.iter().enumerate() {
                            let data = run.prepare(ci, ri, ai, alt, Some(name))?;
                            min = min.min(data.num_devices);
                            run.requests.insert((ci, ri, ai), data);
                        }
                        if min != usize::MAX {
                            min_devices += min;
                        }
                    }
                }
            }
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
                return Err(AllocationError(format!(
                    "claim {}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}",
                    claim.key
                )));
            }
            run.constraints.push(
                claim
                    .constraints
                    .iter()
                    .map(|constraint| ConstraintState {
                        constraint,
                        value: None,
                        count: 0,
                    })
                    .collect(),
            );
        }
        Ok(run)
    }

    /// kube's validateDeviceRequest: the class must exist; mode All finds its devices now.
    fn prepare(
        &mut self,
        ci: usize,
        ri: usize,
        ai: usize,
        request: &'a ExactRequest,
        parent: Option<&'a str>,
    ) -> Result<RequestData<'a>, AllocationError> {
        let claims: &'a [ClaimSpec] = self.claims;
        let pools: &'a [Pool] = self.pools;
        let claim = &claims[ci];
        if request.class.is_none() {
            return Err(AllocationError(format!(
                "claim {}, request {}: could not retrieve device class {}: deviceclass.resource.k8s.io \"{}\" not found",
                claim.key, request.name, request.class_name, request.class_name
            )));
        }
        let mut data = RequestData {
            request,
            parent,
            num_devices: 0,
            all_devices: Vec::new(),
        };
        match request.mode {
            AllocationMode::ExactCount(n) => data.num_devices = n as usize,
            AllocationMode::All => {
                for (pi, pool) in pools.iter().enumerate() {
                    if pool.incomplete {
                        return Err(AllocationError(format!(
                            "claim {}, request {}: asks for all devices, but resource pool {} is currently being updated",
                            claim.key, request.name, pool.id()
                        )));
                    }
                    if pool.invalid.is_some() {
                        return Err(AllocationError(format!(
                            "claim {}, request {}: asks for all devices, but resource pool {} is currently invalid",
                            claim.key, request.name, pool.id()
                        )));
                    }
                    for di in 0..pool.devices.len() {
                        if self.is_selectable((ci, ri, ai), request, pi, di)? {
                            data.all_devices.push((pi, di));
                        }
                    }
                }
                data.num_devices = data.all_devices.len();
            }
        }
        Ok(data)
    }

    /// kube's isSelectable: class selectors, then the request's own, cached per pair.
    fn is_selectable(
        &mut self,
        (ci, ri, ai): (usize, usize, usize),
        request: &ExactRequest,
        pi: usize,
        di: usize,
    ) -> Result<bool, AllocationError> {
        let key = (pi, di, ci, ri, ai);
        if let Some(&known) = self.matches.get(&key) {
            return Ok(known);
        }
        let pools: &'a [Pool] = self.pools;
        let claims: &'a [ClaimSpec] = self.claims;
        let pool = &pools[pi];
        let claim = &claims[ci];
        let mut verdict = true;
        if let Some(class) = &request.class {
            for (i, selector) in class.selectors.iter().enumerate() {
                match SelectionMemo::matches(pool, selector.as_ref(), di) {
                    Ok(true) => {}
                    Ok(false) => {
                        verdict = false;
                        break;
                    }
                    Err(e) => {
                        let source = SelectorSource::Class { name: &class.name };
                        return Err(selector_failure(source, i, e));
                    }
                }
            }
        }
        if verdict {
            for (i, selector) in request.selectors.iter().enumerate() {
                match SelectionMemo::matches(pool, selector.as_ref(), di) {
                    Ok(true) => {}
                    Ok(false) => {
                        verdict = false;
                        break;
                    }
                    Err(e) => {
                        let source = SelectorSource::Claim {
                            namespace: &claim.namespace,
                            name: &claim.name,
                        };
                        return Err(selector_failure(source, i, e));
                    }
                }
            }
        }
        self.matches.insert(key, verdict);
        Ok(verdict)
    }

    fn device_id(&self, pi: usize, di: usize) -> DeviceId {
        self.pools[pi].ids[di].clone()
    }

    fn in_use(&self, id: &DeviceId) -> bool {
        self.allocated.exclusive.contains(id)
            || self.allocating.get(id).is_some_and(|c| !c.is_empty())
    }

    /// kube's allocateOne: the device at `at`, then the rest, recursively; true once every
    /// claim has all its devices.
    fn allocate_one(&mut self, at: Cursor, in_alternative: bool) -> Result<bool, Stop> {
        if at.claim >= self.claims.len() {
            return Ok(true);
        }
        let claims: &'a [ClaimSpec] = self.claims;
        let pools: &'a [Pool] = self.pools;
        let claim = &claims[at.claim];
        if at.request >= claim.requests.len() {
            let next = Cursor {
                claim: at.claim + 1,
                ..Cursor::default()
            };
            return match self.allocate_one(next, false) {
                Err(Stop::MaxSize) => Ok(false),
                other => other,
            };
        }
        if !in_alternative {
            if let Request::FirstAvailable { alternatives, .. } = &claim.requests[at.request] {
                let mut all_exceeded = true;
                for ai in 0..alternatives.len() {
                    let at = Cursor {
                        alternative: ai,
                        ..at
                    };
                    match self.allocate_one(at, true) {
                        Err(Stop::MaxSize) => continue,
                        Err(e) => return Err(e),
                        Ok(true) => return Ok(true),
                        Ok(false) => all_exceeded = false,
                    }
                }
                return if all_exceeded && !alternatives.is_empty() {
                    Err(Stop::MaxSize)
                } else {
                    Ok(false)
                };
            }
        }
        let key = (at.claim, at.request, at.alternative);
        let data = &self.requests[&key];
        let request: &'a ExactRequest = data.request;
        let num_devices = data.num_devices;
        let all = request.mode == AllocationMode::All;
        if all && data.all_devices.is_empty() {
            return Ok(false);
        }
        let next_all = data.all_devices.get(at.device).copied();
        if at.device >= num_devices {
            let next = Cursor {
                claim: at.claim,
                request: at.request + 1,
                ..Cursor::default()
            };
            return self.allocate_one(next, false);
        }
        if self.results[at.claim].len() + num_devices - at.device > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(Stop::MaxSize);
        }
        let next = Cursor {
            device: at.device + 1,
            ..at
        };
        if let (true, Some((pi, di))) = (all, next_all) {
            let Some(undo) = self.allocate_device(at, pi, di, true)? else {
                return Ok(false);
            };
            let done = self.allocate_one(next, in_alternative);
            if !matches!(done, Ok(true)) {
                self.deallocate(undo);
            }
            return done;
        }
        let preferred = self.preferred.clone();
        let in_order = pools
            .iter()
            .enumerate()
            .filter(|(_, pool)| !pool.incomplete && pool.invalid.is_none())
            .flat_map(|(pi, pool)| (0..pool.devices.len()).map(move |di| (pi, di)))
            .filter(|at| !preferred.contains(at));
        let candidates = preferred.iter().copied().chain(in_order).enumerate();
        for (place, (pi, di)) in candidates.skip(at.from) {
            let next = Cursor {
                from: place,
                ..next
            };
            let pool = &pools[pi];
            {
                let id = self.device_id(pi, di);
                let shareable = pool.devices[di].allows_multiple_allocations();
                if request.admin_access {
                    if !shareable && self.allocating_for_claim(&id, at.claim) {
                        continue;
                    }
                } else if self.in_use(&id) {
                    continue;
                }
                if !self.is_selectable(key, request, pi, di)? {
                    continue;
                }
                let Some(undo) = self.allocate_device(at, pi, di, false)? else {
                    continue;
                };
                match self.allocate_one(next, in_alternative) {
                    Ok(true) => return Ok(true),
                    Ok(false) => self.deallocate(undo),
                    Err(e) => {
                        self.deallocate(undo);
                        return Err(e);
                    }
                }
            }
        }
        Ok(false)
    }

    fn allocating_for_claim(&self, id: &DeviceId, claim: usize) -> bool {
        self.allocating.get(id).is_some_and(|c| c.contains(&claim))
    }

    /// kube's allocateDevice: availability, capacity and constraints for one candidate;
    /// on success the device is counted as taken and the undo record returned.
    fn allocate_device(
        &mut self,
        at: Cursor,
        pi: usize,
        di: usize,
        must: bool,
    ) -> Result<Option<Undo>, AllocationError> {
        self.tried += 1;
        let key = (at.claim, at.request, at.alternative);
        let data = &self.requests[&key];
        let request: &'a ExactRequest = data.request;
        let full = data.full_name();
        let base = data.parent.unwrap_or(&request.name).to_string();
        let pools: &'a [Pool] = self.pools;
        let pool = &pools[pi];
        let device: &'a Device = &pool.devices[di];
        let id = self.device_id(pi, di);
        let shareable = device.allows_multiple_allocations();
        if !shareable && request.admin_access && self.allocating_for_claim(&id, at.claim) {
            return Ok(None);
        }
        if !request.admin_access && self.in_use(&id) {
            return Ok(None);
        }
        for i in 0..self.constraints[at.claim].len() {
            if !self.constraints[at.claim][i].add(&base, &full, &pool.driver, device) {
                if must {
                    return Err(AllocationError(format!(
                        "claim {}, request {}: cannot add device {id} because a claim constraint would not be satisfied",
                        self.claims[at.claim].key, request.name
                    )));
                }
                for earlier in &mut self.constraints[at.claim][..i] {
                    earlier.remove(&base, &full);
                }
                return Ok(None);
            }
        }
        let undo_constraints = |run: &mut Run<'a>| {
            for c in &mut run.constraints[at.claim] {
                c.remove(&base, &full);
            }
        };
        let consumed = match consumed_capacity(
            request,
            &pool.driver,
            device,
            self.allocated.consumed.get(&id),
            self.allocating_capacity.consumed.get(&id),
        ) {
            Some(consumed) => consumed,
            None => {
                undo_constraints(self);
                return Ok(None);
            }
        };
        let (consumed, share_id) = if shareable {
            self.allocating_capacity.add(id.clone(), true, &consumed);
            // The id itself is made when the search succeeds.
            (consumed, Some(String::new()))
        } else {
            self.allocating
                .entry(id.clone())
                .or_default()
                .insert(at.claim);
            (BTreeMap::new(), None)
        };
        self.results[at.claim].push(DeviceResult {
            request: full,
            id: id.clone(),
            admin_access: request.admin_access,
            consumed_capacity: consumed,
            share_id,
        });
        Ok(Some(Undo {
            claim: at.claim,
            id,
            shared: shareable,
        }))
    }

    fn deallocate(&mut self, undo: Undo) {
        let result = self.results[undo.claim]
            .pop()
            .expect("an undo record follows its result");
        let base = result
            .request
            .split_once('/')
            .map_or(result.request.as_str(), |(b, _)| b)
            .to_string();
        for c in &mut self.constraints[undo.claim] {
            c.remove(&base, &result.request);
        }
        if undo.shared {
            self.allocating_capacity
                .remove(&undo.id, true, &result.consumed_capacity);
        } else if let Some(claims) = self.allocating.get_mut(&undo.id) {
            claims.remove(&undo.claim);
        }
    }
}

/// What [`Run::deallocate`] takes back.
struct Undo {
    claim: usize,
    id: DeviceId,
    shared: bool,
}

/// kube's CmpRequestOverCapacity and GetConsumedCapacityFromRequest: what the request
/// consumes of each of the device's capacities (rounded up by each policy), or None when a
/// requested capacity does not exist, an amount violates its policy, or the device has not
/// enough left beside what is `held` by others and `pending` in this run.
fn consumed_capacity(
    request: &ExactRequest,
    driver: &str,
    device: &Device,
    held: Option<&BTreeMap<String, Quantity>>,
    pending: Option<&BTreeMap<String, Quantity>>,
) -> Option<BTreeMap<String, Quantity>> {
    let mut requested: BTreeMap<&str, Quantity> = BTreeMap::new();
    for (name, q) in &request.capacity {
        let (own, _) = capacity_named(device, driver, name)?;
        requested.insert(own.as_str(), *q);
    }
    let mut consumed = BTreeMap::new();
    for (name, capacity) in &device.capacity {
        let amount = match requested.get(name.as_str()) {
            Some(q) => round_up(*q, capacity.request_policy.as_ref()),
            None => capacity
                .request_policy
                .as_ref()
                .and_then(|p| p.default)
                .unwrap_or(capacity.value),
        };
        if violates_policy(amount, capacity.request_policy.as_ref()) {
            return None;
        }
        let used = |m: Option<&BTreeMap<String, Quantity>>| {
            m.and_then(|m| m.get(name)).map_or(0, |q| q.millis())
        };
        let total = amount
            .millis()
            .saturating_add(used(held))
            .saturating_add(used(pending));
        if total > capacity.value.millis() {
            return None;
        }
        consumed.insert(name.clone(), amount);
    }
    Some(consumed)
}

/// kube's calculateConsumedCapacity for a requested amount.
fn round_up(requested: Quantity, policy: Option<&CapacityRequestPolicy>) -> Quantity {
    let Some(policy) = policy else {
        return requested;
    };
    if let Some(range) = &policy.valid_range {
        if let Some(min) = range.min {
            if requested < min {
                return min;
            }
            let Some(step) = range.step else {
                return requested;
            };
            let (req, min, step) = (requested.value(), min.value(), step.value());
            if step <= 0 {
                return requested;
            }
            let added = req - min;
            let n = added / step + i64::from(added % step != 0);
            return Quantity::from_value(min + step * n);
        }
    }
    if !policy.valid_values.is_empty() {
        return policy
            .valid_values
            .iter()
            .find(|v| requested <= **v)
            .copied()
            .unwrap_or(requested);
    }
    requested
}

/// kube's violatesPolicy.
fn violates_policy(amount: Quantity, policy: Option<&CapacityRequestPolicy>) -> bool {
    let Some(policy) = policy else {
        return false;
    };
    if policy.default == Some(amount) {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if range.max.is_some_and(|max| amount > max) {
            return true;
        }
        if let Some(step) = range.step {
            let range: &CapacityRequestPolicyRange = range;
            let min = range.min.map_or(0, |m| m.value());
            let step = step.value();
            return step > 0 && (amount.value() - min) % step != 0;
        }
        return false;
    }
    if !policy.valid_values.is_empty() {
        return !policy.valid_values.contains(&amount);
    }
    false
}

/// A share id: a UUID-shaped value derived from the claim, request, device and a counter,
/// so that reruns (and `berth sim`) are reproducible. kube draws a random UUID.
fn share_id(claim_uid: &str, request: &str, device: &DeviceId, n: u64) -> String {
    use std::hash::{Hash, Hasher};
    let mut words = [0u64; 2];
    for (i, word) in words.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (i, claim_uid, request, device, n).hash(&mut h);
        *word = h.finish();
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    // Version 4 and RFC 4122 variant bits, so the value validates as a UUID.
    let version = format!("4{}", &hex[13..16]);
    let variant = ["8", "9", "a", "b"][usize::from(bytes[8] & 3)];
    format!(
        "{}-{}-{version}-{variant}{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A selector on one attribute's value; `Missing` fails at runtime when the device
    /// lacks the attribute (as a CEL expression without a guard does).
    #[derive(Debug)]
    enum Sel {
        Is(&'static str, &'static str),
        Missing(&'static str),
    }

    impl DeviceSelector for Sel {
        fn matches(&self, _driver: &str, device: &Device) -> Result<bool, SelectorError> {
            match self {
                Sel::Is(name, value) => {
                    Ok(device.attributes.get(*name) == Some(&DeviceAttribute::string(value)))
                }
                Sel::Missing(name) => match device.attributes.get(*name) {
                    Some(_) => Ok(true),
                    None => Err(SelectorError::Runtime(format!("no such key: {name}"))),
                },
            }
        }
    }

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect("quantity")
    }

    fn gpu(name: &str, model: &str) -> Device {
        Device {
            name: name.into(),
            attributes: BTreeMap::from([("model".to_string(), DeviceAttribute::string(model))]),
            ..Device::default()
        }
    }

    fn shared(name: &str, memory: &str, policy: Option<CapacityRequestPolicy>) -> Device {
        Device {
            capacity: BTreeMap::from([(
                "memory".to_string(),
                DeviceCapacity {
                    value: q(memory),
                    request_policy: policy,
                },
            )]),
            allow_multiple_allocations: Some(true),
            ..gpu(name, "a100")
        }
    }

    fn pool(name: &str, devices: Vec<Device>) -> Pool {
        Pool {
            driver: "gpu.berth.dev".into(),
            name: name.into(),
            ids: devices.iter().map(|d| id(name, &d.name)).collect(),
            devices: devices.into_iter().map(Arc::new).collect(),
            incomplete: false,
            invalid: None,
            node_local: true,
            selections: Arc::default(),
        }
    }

    fn class(selectors: Vec<Sel>) -> Arc<Class> {
        Arc::new(Class {
            name: "gpu".into(),
            selectors: selectors
                .into_iter()
                .map(|s| Arc::new(s) as Arc<dyn DeviceSelector>)
                .collect(),
        })
    }

    fn request(name: &str, mode: AllocationMode, selectors: Vec<Sel>) -> ExactRequest {
        ExactRequest {
            name: name.into(),
            class: Some(class(Vec::new())),
            class_name: "gpu".into(),
            selectors: selectors
                .into_iter()
                .map(|s| Arc::new(s) as Arc<dyn DeviceSelector>)
                .collect(),
            mode,
            admin_access: false,
            capacity: BTreeMap::new(),
        }
    }

    fn claim(requests: Vec<Request>) -> ClaimSpec {
        ClaimSpec {
            key: "default/c".into(),
            namespace: "default".into(),
            name: "c".into(),
            uid: "uid-c".into(),
            requests,
            constraints: Vec::new(),
        }
    }

    fn one(mode: AllocationMode, selectors: Vec<Sel>) -> ClaimSpec {
        claim(vec![Request::Exactly(request("r", mode, selectors))])
    }

    fn id(pool: &str, device: &str) -> DeviceId {
        DeviceId {
            driver: "gpu.berth.dev".into(),
            pool: pool.into(),
            device: device.into(),
        }
    }

    /// The devices picked, as `pool/device` per claim; or the error; or "none".
    fn picked(out: &Outcome) -> String {
        match out {
            Err(e) => format!("error: {e}"),
            Ok(None) => "none".to_string(),
            Ok(Some(claims)) => claims
                .iter()
                .map(|c| {
                    c.devices
                        .iter()
                        .map(|d| format!("{}:{}/{}", d.request, d.id.pool, d.id.device))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect::<Vec<_>>()
                .join(" | "),
        }
    }

    #[test]
    fn first_fit_in_pool_and_device_order() {
        struct Case {
            name: &'static str,
            claims: Vec<ClaimSpec>,
            pools: Vec<Pool>,
            allocated: Allocated,
            want: &'static str,
        }
        let two_pools = || {
            vec![
                pool("n1", vec![gpu("gpu-0", "t4"), gpu("gpu-1", "a100")]),
                pool("n1-extra", vec![gpu("gpu-0", "a100")]),
            ]
        };
        let exact = AllocationMode::ExactCount;
        let cases = vec![
            Case {
                name: "count defaults to one: the first device of the first pool",
                claims: vec![one(exact(1), vec![])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "r:n1/gpu-0",
            },
            Case {
                name: "claim selector narrows the devices",
                claims: vec![one(exact(1), vec![Sel::Is("model", "a100")])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "r:n1/gpu-1",
            },
            Case {
                name: "devices allocated to other claims are skipped",
                claims: vec![one(exact(2), vec![])],
                pools: two_pools(),
                allocated: Allocated {
                    exclusive: FastHashSet::from_iter([id("n1", "gpu-0")]),
                    ..Allocated::default()
                },
                want: "r:n1/gpu-1 r:n1-extra/gpu-0",
            },
            Case {
                name: "not enough matching devices",
                claims: vec![one(exact(3), vec![Sel::Is("model", "a100")])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "none",
            },
            Case {
                name: "All takes every matching device",
                claims: vec![one(AllocationMode::All, vec![Sel::Is("model", "a100")])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "r:n1/gpu-1 r:n1-extra/gpu-0",
            },
            Case {
                name: "All with no matching device fails",
                claims: vec![one(AllocationMode::All, vec![Sel::Is("model", "h100")])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "none",
            },
            Case {
                name: "All with one matching device in use fails",
                claims: vec![one(AllocationMode::All, vec![Sel::Is("model", "a100")])],
                pools: two_pools(),
                allocated: Allocated {
                    exclusive: FastHashSet::from_iter([id("n1-extra", "gpu-0")]),
                    ..Allocated::default()
                },
                want: "none",
            },
            Case {
                name: "All refuses an incomplete pool",
                claims: vec![one(AllocationMode::All, vec![])],
                pools: vec![Pool {
                    incomplete: true,
                    ..pool("n1", vec![gpu("gpu-0", "t4")])
                }],
                allocated: Allocated::default(),
                want: "error: claim default/c, request r: asks for all devices, but resource pool gpu.berth.dev/n1 is currently being updated",
            },
            Case {
                name: "two claims of a pod never share a device",
                claims: vec![one(exact(1), vec![]), one(exact(1), vec![])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "r:n1/gpu-0 | r:n1/gpu-1",
            },
            Case {
                name: "a selector's runtime error fails the allocation",
                claims: vec![one(exact(1), vec![Sel::Missing("memory")])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "error: claim default/c: selector #0: CEL runtime error: no such key: memory",
            },
            Case {
                name: "more devices than a claim may hold",
                claims: vec![one(exact(33), vec![])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "error: claim default/c: number of requested devices 33 exceeds the claim limit of 32",
            },
            Case {
                name: "firstAvailable: the first alternative that fits",
                claims: vec![claim(vec![Request::FirstAvailable {
                    name: "r".into(),
                    alternatives: vec![
                        request("big", exact(4), vec![]),
                        request("small", exact(1), vec![Sel::Is("model", "a100")]),
                    ],
                }])],
                pools: two_pools(),
                allocated: Allocated::default(),
                want: "r/small:n1/gpu-1",
            },
            Case {
                name: "an invalid pool is reported when nothing fits",
                claims: vec![one(exact(1), vec![])],
                pools: vec![Pool {
                    invalid: Some("duplicate device name gpu-0".into()),
                    ..pool("n1", vec![gpu("gpu-0", "t4"), gpu("gpu-0", "t4")])
                }],
                allocated: Allocated::default(),
                want: "error: invalid resource pools were encountered",
            },
        ];
        for case in cases {
            let got = picked(&allocate(&case.claims, &case.pools, &case.allocated));
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn preferred_devices_are_tried_first_and_change_no_verdict() {
        let pools = || {
            vec![
                pool("n1", vec![gpu("gpu-0", "t4"), gpu("gpu-1", "a100")]),
                pool("n2", vec![gpu("gpu-0", "a100")]),
            ]
        };
        let exact = AllocationMode::ExactCount;
        let held = Allocated {
            exclusive: FastHashSet::from_iter([id("n2", "gpu-0")]),
            ..Allocated::default()
        };
        let none = Allocated::default();
        let cases: Vec<(&str, ClaimSpec, Vec<DeviceId>, &Allocated, &str)> = vec![
            (
                "no preference: first fit",
                one(exact(1), vec![]),
                vec![],
                &none,
                "r:n1/gpu-0",
            ),
            (
                "the preferred device",
                one(exact(1), vec![]),
                vec![id("n2", "gpu-0")],
                &none,
                "r:n2/gpu-0",
            ),
            (
                "preferred first, then kube's order",
                one(exact(2), vec![]),
                vec![id("n1", "gpu-1")],
                &none,
                "r:n1/gpu-1 r:n1/gpu-0",
            ),
            (
                "a preferred device in use is passed over",
                one(exact(1), vec![]),
                vec![id("n2", "gpu-0")],
                &held,
                "r:n1/gpu-0",
            ),
            (
                "a preferred device the selector refuses is passed over",
                one(exact(1), vec![Sel::Is("model", "a100")]),
                vec![id("n1", "gpu-0")],
                &none,
                "r:n1/gpu-1",
            ),
            (
                "an unknown preferred device is ignored",
                one(exact(1), vec![]),
                vec![id("n9", "gpu-0")],
                &none,
                "r:n1/gpu-0",
            ),
            (
                "no verdict changes: too many devices",
                one(exact(4), vec![]),
                vec![id("n1", "gpu-1")],
                &none,
                "none",
            ),
        ];
        for (name, claim, preferred, allocated, want) in cases {
            let got = picked(&allocate_preferring(
                &[claim],
                &pools(),
                allocated,
                &preferred,
            ));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn spec_keys_tell_shapes_apart_but_not_names() {
        let exact = AllocationMode::ExactCount;
        let renamed = ClaimSpec {
            key: "default/d".into(),
            name: "d".into(),
            uid: "uid-d".into(),
            ..one(exact(1), vec![])
        };
        // Test selectors have no cache key: no key at all.
        assert_eq!(
            spec_key(&[one(exact(1), vec![Sel::Is("model", "a100")])]),
            None
        );
        assert_eq!(spec_key(&[one(exact(1), vec![])]), spec_key(&[renamed]));
        assert_ne!(
            spec_key(&[one(exact(1), vec![])]),
            spec_key(&[one(exact(2), vec![])])
        );
        assert_ne!(
            spec_key(&[one(exact(1), vec![])]),
            spec_key(&[one(exact(1), vec![]), one(exact(1), vec![])])
        );
        let mut capacity = one(exact(1), vec![]);
        if let Request::Exactly(r) = &mut capacity.requests[0] {
            r.capacity.insert("memory".into(), q("1Gi"));
        }
        assert_ne!(spec_key(&[one(exact(1), vec![])]), spec_key(&[capacity]));
    }

    #[test]
    fn shape_numbers_are_never_given_twice() {
        let first = intern_shape("shape-numbers-test:a");
        assert_eq!(intern_shape("shape-numbers-test:a"), first);
        assert_ne!(intern_shape("shape-numbers-test:b"), first);
        // Filling the table forgets the texts: the shape gets a new number, not another's.
        let mut seen = std::collections::HashSet::new();
        for i in 0..=MAX_INTERNED_SHAPES {
            assert!(seen.insert(intern_shape(&format!("shape-numbers-test:{i}"))));
        }
        let again = intern_shape("shape-numbers-test:a");
        assert!(again == first || !seen.contains(&again));
    }

    #[test]
    fn class_and_claim_selectors_are_anded() {
        let mut spec = one(
            AllocationMode::ExactCount(1),
            vec![Sel::Is("model", "a100")],
        );
        if let Request::Exactly(r) = &mut spec.requests[0] {
            r.class = Some(class(vec![Sel::Is("model", "t4")]));
        }
        let pools = vec![pool("n1", vec![gpu("gpu-0", "t4"), gpu("gpu-1", "a100")])];
        assert_eq!(
            picked(&allocate(&[spec], &pools, &Allocated::default())),
            "none"
        );
    }

    #[test]
    fn match_attribute_backtracks_to_a_consistent_set() {
        let mut spec = claim(vec![
            Request::Exactly(request("a", AllocationMode::ExactCount(1), vec![])),
            Request::Exactly(request("b", AllocationMode::ExactCount(1), vec![])),
        ]);
        spec.constraints.push(Constraint {
            requests: Vec::new(),
            match_attribute: "gpu.berth.dev/model".into(),
        });
        // The first device (t4) has no partner: the search backtracks to the two a100s.
        let pools = vec![pool(
            "n1",
            vec![
                gpu("gpu-0", "t4"),
                gpu("gpu-1", "a100"),
                gpu("gpu-2", "a100"),
            ],
        )];
        let got = picked(&allocate(&[spec.clone()], &pools, &Allocated::default()));
        assert_eq!(got, "a:n1/gpu-1 b:n1/gpu-2");
        // A constraint limited to other requests does not apply.
        spec.constraints[0].requests = vec!["c".into()];
        let got = picked(&allocate(&[spec], &pools, &Allocated::default()));
        assert_eq!(got, "a:n1/gpu-0 b:n1/gpu-1");
    }

    fn memory_request(amount: &str) -> ClaimSpec {
        let mut r = request("r", AllocationMode::ExactCount(1), vec![]);
        r.capacity.insert("memory".into(), q(amount));
        claim(vec![Request::Exactly(r)])
    }

    #[test]
    fn consumable_capacity_shares_a_device_up_to_its_capacity() {
        struct Case {
            name: &'static str,
            request: &'static str,
            policy: Option<CapacityRequestPolicy>,
            held: Option<&'static str>,
            /// The memory consumed, or None when the device cannot take the request.
            want: Option<&'static str>,
        }
        let step = Some(CapacityRequestPolicy {
            default: Some(q("1Gi")),
            valid_range: Some(CapacityRequestPolicyRange {
                min: Some(q("1Gi")),
                max: Some(q("40Gi")),
                step: Some(q("1Gi")),
            }),
            ..CapacityRequestPolicy::default()
        });
        let values = Some(CapacityRequestPolicy {
            valid_values: vec![q("10Gi"), q("20Gi"), q("40Gi")],
            ..CapacityRequestPolicy::default()
        });
        let cases = [
            Case {
                name: "no policy: the amount asked",
                request: "30Gi",
                policy: None,
                held: None,
                want: Some("30Gi"),
            },
            Case {
                name: "room left beside another share",
                request: "40Gi",
                policy: None,
                held: Some("40Gi"),
                want: Some("40Gi"),
            },
            Case {
                name: "over what is left",
                request: "41Gi",
                policy: None,
                held: Some("40Gi"),
                want: None,
            },
            Case {
                name: "rounded up to the step",
                request: "1500Mi",
                policy: step.clone(),
                held: None,
                want: Some("2Gi"),
            },
            Case {
                name: "below the minimum: the minimum",
                request: "10Mi",
                policy: step.clone(),
                held: None,
                want: Some("1Gi"),
            },
            Case {
                name: "above the maximum",
                request: "41Gi",
                policy: step,
                held: None,
                want: None,
            },
            Case {
                name: "rounded up to a valid value",
                request: "15Gi",
                policy: values.clone(),
                held: None,
                want: Some("20Gi"),
            },
            Case {
                name: "beyond every valid value",
                request: "50Gi",
                policy: values,
                held: None,
                want: None,
            },
        ];
        for case in cases {
            let pools = vec![pool(
                "n1",
                vec![shared("gpu-0", "80Gi", case.policy.clone())],
            )];
            let mut allocated = Allocated::default();
            if let Some(held) = case.held {
                allocated.add(
                    id("n1", "gpu-0"),
                    true,
                    &BTreeMap::from([("memory".to_string(), q(held))]),
                );
            }
            let out =
                allocate(&[memory_request(case.request)], &pools, &allocated).expect("no error");
            let got = out.map(|claims| {
                let d = &claims[0].devices[0];
                assert!(d.share_id.is_some(), "{}: a share has an id", case.name);
                d.consumed_capacity["memory"].to_string()
            });
            assert_eq!(got.as_deref(), case.want, "{}", case.name);
        }
    }

    #[test]
    fn shares_of_one_pod_add_up_and_get_distinct_ids() {
        let pools = vec![pool("n1", vec![shared("gpu-0", "80Gi", None)])];
        let claims = [memory_request("40Gi"), memory_request("40Gi")];
        let out = allocate(&claims, &pools, &Allocated::default())
            .expect("no error")
            .expect("both fit");
        assert_ne!(out[0].devices[0].share_id, out[1].devices[0].share_id);
        let three = [
            memory_request("40Gi"),
            memory_request("40Gi"),
            memory_request("1Gi"),
        ];
        assert_eq!(
            picked(&allocate(&three, &pools, &Allocated::default())),
            "none"
        );
        // A request for a capacity the device does not have never fits.
        let mut odd = request("r", AllocationMode::ExactCount(1), vec![]);
        odd.capacity.insert("cores".into(), q("1"));
        let spec = claim(vec![Request::Exactly(odd)]);
        assert_eq!(
            picked(&allocate(&[spec], &pools, &Allocated::default())),
            "none"
        );
    }

    #[test]
    fn a_request_takes_its_devices_in_the_order_tried_and_walks_each_set_once() {
        let gpus: Vec<Device> = (0..8)
            .map(|i| shared(&format!("gpu-{i}"), "1000", None))
            .collect();
        let pools = vec![pool("n1", gpus)];
        let whole = |n: u32| {
            let mut r = request("r", AllocationMode::ExactCount(n), vec![]);
            r.capacity.insert("memory".into(), q("1000"));
            claim(vec![Request::Exactly(r)])
        };
        let mut held = Allocated::default();
        let one = BTreeMap::from([("memory".to_string(), q("1"))]);
        held.add(id("n1", "gpu-7"), true, &one);
        // Seven whole GPUs are left: eight cannot be had, and finding that out walks each
        // set of at most seven of them once (2^7 sets, a few hundred candidates tried), not
        // each sequence (13,700 sequences, about 110,000 candidates).
        let claims = [whole(8)];
        let mut run = Run::new(&claims, &pools, &held).unwrap();
        assert!(matches!(
            run.allocate_one(Cursor::default(), false),
            Ok(false)
        ));
        assert!(run.tried <= 1 << 9, "{} candidates tried", run.tried);
        // The devices that are found are those of the search without the rule.
        let got = allocate_preferring(&[whole(3)], &pools, &held, &[id("n1", "gpu-5")]);
        assert_eq!(picked(&got), "r:n1/gpu-5 r:n1/gpu-0 r:n1/gpu-1");
        let mut two = whole(2);
        two.requests.push(two.requests[0].clone());
        let got = allocate_preferring(&[two], &pools, &held, &[id("n1", "gpu-6")]);
        assert_eq!(
            picked(&got),
            "r:n1/gpu-6 r:n1/gpu-0 r:n1/gpu-1 r:n1/gpu-2",
            "a later request starts from the first device again"
        );
    }

    #[test]
    fn share_ids_are_uuids() {
        let s = share_id("uid", "r", &id("n1", "gpu-0"), 1);
        let parts: Vec<usize> = s.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{s}");
        assert!(s.chars().all(|c| c == '-' || c.is_ascii_hexdigit()), "{s}");
        assert_eq!(&s[14..15], "4", "{s}");
    }
}
