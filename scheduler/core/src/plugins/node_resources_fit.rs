//! NodeResourcesFit: a pod fits a node only if every resource it requests (and one pod slot)
//! is still free there; among feasible nodes it scores by a configurable strategy
//! (LeastAllocated, MostAllocated, RequestedToCapacityRatio). The resource-allocation scoring
//! helpers here are shared with NodeResourcesBalancedAllocation.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::InvalidArgs;
use crate::framework::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS};
use crate::framework::{
    scalar_resource_bit, Code, CycleState, Filter, Fit, NodeInfo, Plugin, PluginError, PodInfo,
    PreFilter, PreFilterOutcome, PreScore, PreScoreInput, Reason, Reasons, Rejection, Resources,
    Score, Snapshot, MAX_NODE_SCORE,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "NodeResourcesFit";

/// Reason when the node has no free pod slot.
pub const REASON_TOO_MANY_PODS: &str = "Too many pods";
/// Reason when the node lacks cpu.
pub const REASON_INSUFFICIENT_CPU: &str = "Insufficient cpu";
/// Reason when the node lacks memory.
pub const REASON_INSUFFICIENT_MEMORY: &str = "Insufficient memory";
/// Reason when the node lacks ephemeral storage.
pub const REASON_INSUFFICIENT_EPHEMERAL_STORAGE: &str = "Insufficient ephemeral-storage";
/// Start of the reason for any other resource: `Insufficient <resource name>`.
pub const REASON_INSUFFICIENT_PREFIX: &str = "Insufficient ";

/// Largest score of a RequestedToCapacityRatio shape point (kube's MaxCustomPriorityScore).
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;

/// Highest utilization, in percent, of a RequestedToCapacityRatio shape.
const MAX_UTILIZATION: i64 = 100;

/// A resource and its weight in a scoring strategy (kube's `ResourceSpec`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSpec {
    /// Resource name (`cpu`, `memory`, `example.com/gpu`).
    pub name: String,
    /// Weight; 0 (or absent) means 1.
    #[serde(default)]
    pub weight: i64,
}

/// The resources scored when none are configured: cpu and memory, weight 1 each.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: CPU.into(),
            weight: 1,
        },
        ResourceSpec {
            name: MEMORY.into(),
            weight: 1,
        },
    ]
}

/// How NodeResourcesFit scores nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScoringStrategyType {
    /// Prefer nodes with more free capacity (spreading).
    LeastAllocated,
    /// Prefer nodes with less free capacity (bin packing).
    MostAllocated,
    /// Score utilization through a piecewise-linear shape.
    RequestedToCapacityRatio,
}

/// One point of a RequestedToCapacityRatio shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UtilizationShapePoint {
    /// Utilization in percent, 0..=100, strictly increasing along the shape.
    pub utilization: i32,
    /// Score at that utilization, 0..=10 (scaled by 10 to kube's 0..=100).
    pub score: i32,
}

/// Parameters of the RequestedToCapacityRatio strategy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedToCapacityRatioParam {
    /// The scoring function's points.
    #[serde(default)]
    pub shape: Vec<UtilizationShapePoint>,
}

/// `scoringStrategy` of the args.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategy {
    /// The strategy.
    #[serde(rename = "type")]
    pub type_: ScoringStrategyType,
    /// Resources scored and their weights; empty means cpu and memory, weight 1.
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// Required with RequestedToCapacityRatio, forbidden otherwise.
    #[serde(default)]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

/// `NodeResourcesFitArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Extended resources the Filter does not check.
    #[serde(default)]
    pub ignored_resources: Vec<String>,
    /// Groups (the part before `/`) of extended resources the Filter does not check.
    #[serde(default)]
    pub ignored_resource_groups: Vec<String>,
    /// Scoring; absent means LeastAllocated over cpu and memory.
    #[serde(default)]
    pub scoring_strategy: Option<ScoringStrategy>,
}

impl Args {
    /// The args with kube's defaults applied: LeastAllocated when no strategy is given,
    /// cpu and memory when no resources are listed, weight 1 where the weight is 0.
    pub fn with_defaults(mut self) -> Self {
        let strategy = self
            .scoring_strategy
            .get_or_insert_with(|| ScoringStrategy {
                type_: ScoringStrategyType::LeastAllocated,
                resources: Vec::new(),
                requested_to_capacity_ratio: None,
            });
        if strategy.resources.is_empty() {
            strategy.resources = default_resources();
        }
        for r in &mut strategy.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
        self
    }
}

/// Whether `name` is an extended resource (`example.com/gpu`): it has a domain, and the
/// domain is not kubernetes.io's.
pub fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Whether kube accounts `name` as a scalar resource: extended resources, hugepages,
/// kubernetes.io-prefixed resources and attachable volumes. Other unknown names are ignored
/// by both fitting and scoring.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// One resource the node cannot give the pod (kube's `InsufficientResource`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsufficientResource {
    /// Resource name (`pods`, `cpu`, `example.com/gpu`).
    pub resource: String,
    /// kube's reason string (`Insufficient cpu`, `Too many pods`).
    pub reason: Reason,
    /// What the pod asks for (1 for pods).
    pub requested: i64,
    /// What the node's pods already use.
    pub used: i64,
    /// What the node has.
    pub capacity: i64,
    /// The pod asks for more than the whole node has, so evicting pods cannot help.
    pub unresolvable: bool,
}

/// Every resource `request` does not fit on `node` (kube's `Fits`), in kube's order: pods,
/// cpu, memory, ephemeral storage, then other resources by name. Extended resources named in
/// `ignored` or whose group is in `ignored_groups` are skipped; a request of 0 never fails.
pub fn insufficient_resources(
    request: &Resources,
    node: &NodeInfo,
    ignored: &BTreeSet<String>,
    ignored_groups: &BTreeSet<String>,
) -> Vec<InsufficientResource> {
    let checked = CheckedRequest::new(request, ignored, ignored_groups);
    let mut out = Vec::new();
    for_each_insufficient(&checked, node, |m| {
        out.push(InsufficientResource {
            resource: m.resource.to_string(),
            reason: m.reason.clone(),
            requested: m.requested,
            used: m.used,
            capacity: m.capacity,
            unresolvable: m.unresolvable,
        });
    });
    out
}

/// One resource short, as [`for_each_insufficient`] reports it: [`InsufficientResource`]
/// with the resource's name and reason borrowed.
struct Shortfall<'a> {
    resource: &'a str,
    reason: &'a Reason,
    requested: i64,
    used: i64,
    capacity: i64,
    unresolvable: bool,
}

/// A scalar resource of a request that fitting checks, with its reason made once.
#[derive(Clone, Debug)]
struct CheckedScalar {
    name: String,
    /// The name's [`scalar_resource_bit`].
    bit: u64,
    want: i64,
    /// `Insufficient <name>`, shared by every node that lacks it.
    reason: Reason,
}

/// A pod's request as fitting checks it: the fixed resources, and the scalar resources
/// that count (nonzero, scalar, not ignored) with their reasons, worked out once per cycle
/// instead of once per node.
#[derive(Clone, Debug)]
struct CheckedRequest {
    milli_cpu: i64,
    memory: i64,
    ephemeral_storage: i64,
    scalars: Vec<CheckedScalar>,
}

impl CheckedRequest {
    fn new(
        request: &Resources,
        ignored: &BTreeSet<String>,
        ignored_groups: &BTreeSet<String>,
    ) -> Self {
        let scalars = request
            .scalar
            .iter()
            .filter(|(name, want)| {
                if *want == 0 || !is_scalar_resource_name(name) {
                    return false;
                }
                if is_extended_resource_name(name) {
                    let group = name.split('/').next().unwrap_or_default();
                    if ignored.contains(name) || ignored_groups.contains(group) {
                        return false;
                    }
                }
                true
            })
            .map(|(name, want)| CheckedScalar {
                name: name.clone(),
                bit: scalar_resource_bit(name),
                want: *want,
                reason: format!("{REASON_INSUFFICIENT_PREFIX}{name}").into(),
            })
            .collect();
        CheckedRequest {
            milli_cpu: request.milli_cpu,
            memory: request.memory,
            ephemeral_storage: request.ephemeral_storage,
            scalars,
        }
    }
}

static REASON_TOO_MANY_PODS_R: Reason = Reason::Static(REASON_TOO_MANY_PODS);
static REASON_INSUFFICIENT_CPU_R: Reason = Reason::Static(REASON_INSUFFICIENT_CPU);
static REASON_INSUFFICIENT_MEMORY_R: Reason = Reason::Static(REASON_INSUFFICIENT_MEMORY);
static REASON_INSUFFICIENT_EPHEMERAL_STORAGE_R: Reason =
    Reason::Static(REASON_INSUFFICIENT_EPHEMERAL_STORAGE);

/// [`insufficient_resources`], handing each resource short to `f` in kube's order instead
/// of collecting them: the Filter builds its reasons from them without an intermediate
/// list, and without making a string (the filter runs on every node in every cycle).
fn for_each_insufficient<'a>(
    request: &'a CheckedRequest,
    node: &NodeInfo,
    mut f: impl FnMut(Shortfall<'a>),
) {
    let hot = node.hot();
    let pods_on_node = i64::from(hot.pods);
    if pods_on_node + 1 > hot.allowed_pods {
        f(Shortfall {
            resource: PODS,
            reason: &REASON_TOO_MANY_PODS_R,
            requested: 1,
            used: pods_on_node,
            capacity: hot.allowed_pods,
            unresolvable: false,
        });
    }
    let mut check = |resource: &'a str, reason: &'a Reason, want: i64, used: i64, cap: i64| {
        if want > 0 && want > cap - used {
            f(Shortfall {
                resource,
                reason,
                requested: want,
                used,
                capacity: cap,
                unresolvable: want > cap,
            });
        }
    };
    check(
        CPU,
        &REASON_INSUFFICIENT_CPU_R,
        request.milli_cpu,
        hot.requested_milli_cpu,
        hot.allocatable_milli_cpu,
    );
    check(
        MEMORY,
        &REASON_INSUFFICIENT_MEMORY_R,
        request.memory,
        hot.requested_memory,
        hot.allocatable_memory,
    );
    check(
        EPHEMERAL_STORAGE,
        &REASON_INSUFFICIENT_EPHEMERAL_STORAGE_R,
        request.ephemeral_storage,
        hot.requested_ephemeral_storage,
        hot.allocatable_ephemeral_storage,
    );
    for scalar in &request.scalars {
        // A node whose bits lack the resource neither has it nor hands it out.
        let (used, cap) = if hot.scalar_resource_bits & scalar.bit != 0 {
            (
                node.requested.scalar(&scalar.name),
                node.allocatable.scalar(&scalar.name),
            )
        } else {
            (0, 0)
        };
        check(&scalar.name, &scalar.reason, scalar.want, used, cap);
    }
}

/// A scored resource, resolved from its name once when the plugin is built, so that scoring
/// a node is a match on this instead of string compares per resource and node.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ScoredResource {
    /// `cpu`, in millicores.
    Cpu,
    /// `memory`, in bytes.
    Memory,
    /// `ephemeral-storage`, in bytes.
    EphemeralStorage,
    /// A scalar resource (extended, hugepages, kubernetes.io-prefixed, attachable volumes):
    /// scored only for pods that request it.
    Scalar(String),
    /// Any other name: kube neither fits nor scores it.
    Ignored,
}

impl ScoredResource {
    fn resolve(name: &str) -> Self {
        match name {
            CPU => ScoredResource::Cpu,
            MEMORY => ScoredResource::Memory,
            EPHEMERAL_STORAGE => ScoredResource::EphemeralStorage,
            other if is_scalar_resource_name(other) => ScoredResource::Scalar(other.to_string()),
            _ => ScoredResource::Ignored,
        }
    }
}

/// The inputs of kube's resource-allocation scorers: per configured resource, what the pod
/// asks for and what the node has and will have. Shared by NodeResourcesFit and
/// NodeResourcesBalancedAllocation.
#[derive(Clone, Debug)]
pub(crate) struct ResourceAllocation {
    /// Resources scored, with weights (defaults applied).
    pub resources: Vec<ResourceSpec>,
    /// `resources` resolved, in the same order.
    kinds: Vec<ScoredResource>,
    /// Count cpu and memory as requested (BalancedAllocation) rather than with the non-zero
    /// defaults of 100m and 200Mi per container (NodeResourcesFit).
    pub use_requested: bool,
}

impl ResourceAllocation {
    /// Scores `resources` (weights already defaulted), counting cpu and memory as requested
    /// when `use_requested`, else with the non-zero defaults.
    pub fn new(resources: Vec<ResourceSpec>, use_requested: bool) -> Self {
        let kinds = resources
            .iter()
            .map(|r| ScoredResource::resolve(&r.name))
            .collect();
        ResourceAllocation {
            resources,
            kinds,
            use_requested,
        }
    }

    /// The pod's request of each configured resource (cpu in millicores).
    pub fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        self.kinds
            .iter()
            .map(|kind| match kind {
                ScoredResource::Cpu if self.use_requested => pod.requests.milli_cpu,
                ScoredResource::Cpu => pod.non_zero_milli_cpu,
                ScoredResource::Memory if self.use_requested => pod.requests.memory,
                ScoredResource::Memory => pod.non_zero_memory,
                ScoredResource::EphemeralStorage => pod.requests.ephemeral_storage,
                ScoredResource::Scalar(name) => pod.requests.scalar(name),
                ScoredResource::Ignored => 0,
            })
            .collect()
    }

    /// Per configured resource, `(requested after placing the pod, allocatable)`; both 0 for
    /// a resource that is not scored on this node (the node lacks it, or it is a scalar
    /// resource the pod does not request).
    pub fn node_vectors(&self, node: &NodeInfo, pod_requests: &[i64]) -> (Vec<i64>, Vec<i64>) {
        let mut requested = vec![0; self.kinds.len()];
        let mut allocatable = vec![0; self.kinds.len()];
        self.fill_node_vectors(node, pod_requests, &mut requested, &mut allocatable);
        (requested, allocatable)
    }

    /// As [`ResourceAllocation::node_vectors`], handing the vectors to `f` instead of
    /// returning them: on the scoring path (every feasible node, every cycle) they live on
    /// the stack when there are at most [`INLINE_RESOURCES`] scored resources.
    pub fn with_node_vectors<R>(
        &self,
        node: &NodeInfo,
        pod_requests: &[i64],
        f: impl FnOnce(&[i64], &[i64]) -> R,
    ) -> R {
        match self.kinds.len() {
            // kube's default (cpu and memory) and the one-resource case in arrays of their
            // own size: nothing to clear or slice beyond what is scored.
            1 => self.with_fixed_vectors::<1, R>(node, pod_requests, f),
            2 => self.with_fixed_vectors::<2, R>(node, pod_requests, f),
            n if n <= INLINE_RESOURCES => {
                let mut requested = [0i64; INLINE_RESOURCES];
                let mut allocatable = [0i64; INLINE_RESOURCES];
                self.fill_node_vectors(
                    node,
                    pod_requests,
                    &mut requested[..n],
                    &mut allocatable[..n],
                );
                f(&requested[..n], &allocatable[..n])
            }
            _ => {
                let (requested, allocatable) = self.node_vectors(node, pod_requests);
                f(&requested, &allocatable)
            }
        }
    }

    /// [`ResourceAllocation::with_node_vectors`] for exactly `N` scored resources.
    #[inline]
    fn with_fixed_vectors<const N: usize, R>(
        &self,
        node: &NodeInfo,
        pod_requests: &[i64],
        f: impl FnOnce(&[i64], &[i64]) -> R,
    ) -> R {
        let mut requested = [0i64; N];
        let mut allocatable = [0i64; N];
        self.fill_node_vectors(node, pod_requests, &mut requested, &mut allocatable);
        f(&requested, &allocatable)
    }

    // Inlined into each fixed size, so that the loop over kube's two resources unrolls.
    #[inline(always)]
    fn fill_node_vectors(
        &self,
        node: &NodeInfo,
        pod_requests: &[i64],
        requested: &mut [i64],
        allocatable: &mut [i64],
    ) {
        let slots = requested.iter_mut().zip(allocatable.iter_mut());
        for ((kind, &pod_req), (req_slot, alloc_slot)) in
            self.kinds.iter().zip(pod_requests).zip(slots)
        {
            let (alloc, req) = self.allocatable_requested(node, kind, pod_req);
            if alloc != 0 {
                *alloc_slot = alloc;
                *req_slot = req;
            }
        }
    }

    #[inline(always)]
    fn allocatable_requested(
        &self,
        node: &NodeInfo,
        kind: &ScoredResource,
        pod_req: i64,
    ) -> (i64, i64) {
        let hot = node.hot();
        match kind {
            ScoredResource::Cpu => {
                let used = if self.use_requested {
                    hot.requested_milli_cpu
                } else {
                    hot.non_zero_milli_cpu
                };
                (hot.allocatable_milli_cpu, used + pod_req)
            }
            ScoredResource::Memory => {
                let used = if self.use_requested {
                    hot.requested_memory
                } else {
                    hot.non_zero_memory
                };
                (hot.allocatable_memory, used + pod_req)
            }
            ScoredResource::EphemeralStorage => (
                hot.allocatable_ephemeral_storage,
                hot.requested_ephemeral_storage + pod_req,
            ),
            ScoredResource::Scalar(name) => scalar_allocatable_requested(node, name, pod_req),
            ScoredResource::Ignored => (0, 0),
        }
    }
}

/// [`ResourceAllocation::allocatable_requested`] of a scalar resource, out of line: kube's
/// default scores none.
#[inline(never)]
fn scalar_allocatable_requested(node: &NodeInfo, name: &str, pod_req: i64) -> (i64, i64) {
    if pod_req == 0 {
        // A scalar resource the pod does not request is not scored.
        (0, 0)
    } else if !node.hot().has_scalar_resources {
        (0, pod_req)
    } else {
        (
            node.allocatable.scalar(name),
            node.requested.scalar(name) + pod_req,
        )
    }
}

/// Scored resources kept on the stack while scoring a node (kube's default scores two).
pub const INLINE_RESOURCES: usize = 8;

/// Checks weights are in `(0, 100]` (kube's `validateResources`).
fn validate_weights(resources: &[ResourceSpec], path: &str) -> Result<(), InvalidArgs> {
    for (i, r) in resources.iter().enumerate() {
        if r.weight <= 0 || r.weight > 100 {
            return Err(InvalidArgs::new(
                format!("{path}[{i}].weight"),
                format!(
                    "invalid value {}: resource weight of {} not in valid range (0, 100]",
                    r.weight, r.name
                ),
            ));
        }
    }
    Ok(())
}

/// Checks a RequestedToCapacityRatio shape (kube's `validateFunctionShape`).
fn validate_shape(shape: &[UtilizationShapePoint], path: &str) -> Result<(), InvalidArgs> {
    if shape.is_empty() {
        return Err(InvalidArgs::new(
            path,
            "at least one point must be specified",
        ));
    }
    for (i, pair) in shape.windows(2).enumerate() {
        if pair[0].utilization >= pair[1].utilization {
            return Err(InvalidArgs::new(
                format!("{path}[{}].utilization", i + 1),
                format!(
                    "invalid value {}: values must be sorted in increasing order",
                    pair[1].utilization
                ),
            ));
        }
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            return Err(InvalidArgs::new(
                format!("{path}[{i}].utilization"),
                format!(
                    "invalid value {}: not in valid range [0, 100]",
                    p.utilization
                ),
            ));
        }
        if !(0..=10).contains(&p.score) {
            return Err(InvalidArgs::new(
                format!("{path}[{i}].score"),
                format!("invalid value {}: not in valid range [0, 10]", p.score),
            ));
        }
    }
    Ok(())
}

/// The plugin, built from validated [`Args`].
#[derive(Clone, Debug)]
pub struct NodeResourcesFit {
    ignored_resources: BTreeSet<String>,
    ignored_resource_groups: BTreeSet<String>,
    strategy: ScoringStrategyType,
    allocation: ResourceAllocation,
    /// RequestedToCapacityRatio points as `(utilization, score scaled to 0..=100)`.
    shape: Vec<(i64, i64)>,
}

impl NodeResourcesFit {
    /// Applies kube's defaults to `args` and validates them as kube does.
    pub fn try_new(args: Args) -> Result<Self, InvalidArgs> {
        let args = args.with_defaults();
        for (i, r) in args.ignored_resources.iter().enumerate() {
            if r.is_empty() {
                return Err(InvalidArgs::new(
                    format!("ignoredResources[{i}]"),
                    "name part must be non-empty",
                ));
            }
        }
        for (i, g) in args.ignored_resource_groups.iter().enumerate() {
            if g.contains('/') {
                return Err(InvalidArgs::new(
                    format!("ignoredResourceGroups[{i}]"),
                    format!("invalid value {g:?}: resource group name can't contain '/'"),
                ));
            }
            if g.is_empty() {
                return Err(InvalidArgs::new(
                    format!("ignoredResourceGroups[{i}]"),
                    "name part must be non-empty",
                ));
            }
        }
        let strategy = args
            .scoring_strategy
            .expect("with_defaults always sets a scoring strategy");
        validate_weights(&strategy.resources, "scoringStrategy.resources")?;
        let mut shape = Vec::new();
        match (strategy.type_, &strategy.requested_to_capacity_ratio) {
            (ScoringStrategyType::RequestedToCapacityRatio, None) => {
                return Err(InvalidArgs::new(
                    "scoringStrategy.requestedToCapacityRatio",
                    "must be specified when type is RequestedToCapacityRatio",
                ))
            }
            (ScoringStrategyType::RequestedToCapacityRatio, Some(param)) => {
                validate_shape(
                    &param.shape,
                    "scoringStrategy.requestedToCapacityRatio.shape",
                )?;
                shape = param
                    .shape
                    .iter()
                    .map(|p| {
                        (
                            i64::from(p.utilization),
                            i64::from(p.score) * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
                        )
                    })
                    .collect();
            }
            (_, Some(_)) => {
                return Err(InvalidArgs::new(
                    "scoringStrategy.requestedToCapacityRatio",
                    "must be nil when type is not RequestedToCapacityRatio",
                ))
            }
            (_, None) => {}
        }
        Ok(NodeResourcesFit {
            ignored_resources: args.ignored_resources.into_iter().collect(),
            ignored_resource_groups: args.ignored_resource_groups.into_iter().collect(),
            strategy: strategy.type_,
            allocation: ResourceAllocation::new(strategy.resources, false),
            shape,
        })
    }

    fn score_vectors(&self, requested: &[i64], allocatable: &[i64]) -> i64 {
        let resources = &self.allocation.resources;
        match self.strategy {
            ScoringStrategyType::LeastAllocated => {
                weighted_average(requested, allocatable, resources, least_requested_score)
            }
            ScoringStrategyType::MostAllocated => {
                weighted_average(requested, allocatable, resources, most_requested_score)
            }
            ScoringStrategyType::RequestedToCapacityRatio => {
                requested_to_capacity_ratio_score(requested, allocatable, resources, &self.shape)
            }
        }
    }
}

/// Integer weighted average of per-resource scores over the resources the node has.
fn weighted_average(
    requested: &[i64],
    allocatable: &[i64],
    resources: &[ResourceSpec],
    per_resource: impl Fn(i64, i64) -> i64,
) -> i64 {
    let (mut total, mut weights) = (0i64, 0i64);
    for ((&req, &alloc), r) in requested.iter().zip(allocatable).zip(resources) {
        if alloc == 0 {
            continue;
        }
        total += per_resource(req, alloc) * r.weight;
        weights += r.weight;
    }
    if weights == 0 {
        0
    } else {
        total / weights
    }
}

/// LeastAllocated for one resource: the free share, `(capacity - requested) * 100 / capacity`.
fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    scale(capacity - requested, MAX_NODE_SCORE, capacity)
}

/// MostAllocated for one resource: the used share, `requested * 100 / capacity`, capped at
/// 100 (non-zero defaults can push requests past capacity).
fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    scale(requested.min(capacity), MAX_NODE_SCORE, capacity)
}

/// `a * b / c` without overflow, truncated toward zero as Go's integer division. In 64 bits
/// when the product fits (every real node: a 128-bit division costs ten times more, on every
/// scored resource of every feasible node), else in 128.
fn scale(a: i64, b: i64, c: i64) -> i64 {
    match a.checked_mul(b) {
        Some(product) if c != -1 => product / c,
        _ => i64::try_from(i128::from(a) * i128::from(b) / i128::from(c)).unwrap_or(i64::MAX),
    }
}

/// kube's `BuildBrokenLinearFunction`: linear interpolation between shape points, flat
/// before the first and after the last.
fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for (i, &(util, score)) in shape.iter().enumerate() {
        if p <= util {
            if i == 0 {
                return score;
            }
            let (prev_util, prev_score) = shape[i - 1];
            return prev_score + (score - prev_score) * (p - prev_util) / (util - prev_util);
        }
    }
    shape.last().map_or(0, |&(_, score)| score)
}

/// RequestedToCapacityRatio: the shape applied to each resource's utilization in percent
/// (integer), averaged by weight over resources scoring above 0, rounded half away from
/// zero.
fn requested_to_capacity_ratio_score(
    requested: &[i64],
    allocatable: &[i64],
    resources: &[ResourceSpec],
    shape: &[(i64, i64)],
) -> i64 {
    let (mut total, mut weights) = (0i64, 0i64);
    for ((&req, &alloc), r) in requested.iter().zip(allocatable).zip(resources) {
        if alloc == 0 {
            continue;
        }
        let utilization = if req > alloc {
            MAX_UTILIZATION
        } else if req <= 0 {
            0
        } else {
            scale(req, MAX_UTILIZATION, alloc)
        };
        let score = broken_linear(shape, utilization);
        if score > 0 {
            total += score * r.weight;
            weights += r.weight;
        }
    }
    if weights == 0 {
        0
    } else {
        // Rounding as Go's math.Round on the float quotient.
        (total as f64 / weights as f64).round() as i64
    }
}

/// The pod's effective request as fitting checks it, worked out once in PreFilter.
#[derive(Clone)]
struct PreFilterState {
    request: CheckedRequest,
}

/// The pod's request of each scored resource, computed once in PreScore.
#[derive(Clone)]
struct PreScoreState {
    pod_requests: Vec<i64>,
}

/// Whether two pods request the same: effective requests and the non-zero amounts scoring
/// counts (what the resource Scores read of a pod).
pub fn same_requests(a: &PodInfo, b: &PodInfo) -> bool {
    a.requests == b.requests
        && a.non_zero_milli_cpu == b.non_zero_milli_cpu
        && a.non_zero_memory == b.non_zero_memory
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreFilter for NodeResourcesFit {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> Result<PreFilterOutcome, PluginError> {
        state.insert(PreFilterState {
            request: CheckedRequest::new(
                &pod.requests,
                &self.ignored_resources,
                &self.ignored_resource_groups,
            ),
        });
        Ok(PreFilterOutcome::AllNodes)
    }
}

impl Filter for NodeResourcesFit {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        let computed;
        let request = match state.get::<PreFilterState>() {
            Some(s) => &s.request,
            None => {
                computed = CheckedRequest::new(
                    &pod.requests,
                    &self.ignored_resources,
                    &self.ignored_resource_groups,
                );
                &computed
            }
        };
        let mut reasons = Reasons::default();
        let mut unresolvable = false;
        for_each_insufficient(request, node, |m| {
            unresolvable |= m.unresolvable;
            reasons.push(m.reason.clone());
        });
        if reasons.is_empty() {
            return Fit::Yes;
        }
        let code = if unresolvable {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        };
        Fit::No(Rejection {
            plugin: NAME,
            reasons,
            code,
        })
    }

    /// The verdict reads the node's allocatable, requested and pod count, and the pod's
    /// effective requests.
    fn same_verdict(&self, a: &PodInfo, b: &PodInfo) -> bool {
        a.requests == b.requests
    }
}

impl PreScore for NodeResourcesFit {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let pod = input.pod;
        state.insert(PreScoreState {
            pod_requests: self.allocation.pod_requests(pod),
        });
        Ok(())
    }
}

impl NodeResourcesFit {
    /// The pod's request of each scored resource: PreScore's, or computed now.
    fn scored_requests<'a>(&self, state: &'a CycleState, pod: &PodInfo) -> Cow<'a, [i64]> {
        match state.get::<PreScoreState>() {
            Some(s) => Cow::Borrowed(&s.pod_requests),
            None => Cow::Owned(self.allocation.pod_requests(pod)),
        }
    }

    fn score_node(&self, pod_requests: &[i64], node: &NodeInfo) -> i64 {
        self.allocation
            .with_node_vectors(node, pod_requests, |requested, allocatable| {
                let score = self.score_vectors(requested, allocatable);
                tracing::trace!(
                    plugin = NAME,
                    node = node.name(),
                    ?requested,
                    ?allocatable,
                    score,
                    "resource allocation score"
                );
                score
            })
    }
}

impl Score for NodeResourcesFit {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        self.score_node(&self.scored_requests(state, pod), node)
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        let pod_requests = self.scored_requests(state, pod);
        for (score, node) in scores.iter_mut().zip(nodes) {
            *score = self.score_node(&pod_requests, node);
        }
    }

    /// The raw score reads the node's sums and the pod's requests (effective and non-zero).
    fn same_raw_score(&self, a: &PodInfo, b: &PodInfo) -> bool {
        same_requests(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::parse_args;
    use crate::plugins::testing::{
        check_args, check_score, container, ArgsCase, Info, NodeBuilder, PodBuilder,
    };

    const MIB: i64 = 1024 * 1024;

    fn filter(plugin: &NodeResourcesFit, pod: &PodInfo, node: &NodeInfo) -> Fit {
        let mut state = CycleState::new();
        plugin
            .pre_filter(&mut state, pod, &Snapshot::new())
            .expect("pre_filter never fails");
        plugin.filter(&state, pod, node)
    }

    fn default_plugin() -> NodeResourcesFit {
        NodeResourcesFit::try_new(Args::default()).expect("default args are valid")
    }

    fn node_4cpu_8gi() -> NodeBuilder {
        NodeBuilder::new("n1")
            .cpu_millis(4000)
            .memory_mib(8192)
            .pods(110)
    }

    #[test]
    fn filter_lists_every_insufficient_resource() {
        use Code::*;
        struct Case {
            name: &'static str,
            args: Args,
            pod: PodBuilder,
            node: NodeBuilder,
            want: Option<(Vec<&'static str>, Code)>,
        }
        let existing = PodBuilder::new("existing")
            .cpu_millis(1000)
            .memory_mib(2048);
        // A resource whose bit in NodeHot is the gpu's: having it must not pass for the gpu.
        let gpu_bit = scalar_resource_bit("example.com/gpu");
        let twin: &'static str = (0..)
            .map(|i| format!("example.com/twin-{i}"))
            .find(|name| scalar_resource_bit(name) == gpu_bit)
            .map(|name| &*Box::leak(name.into_boxed_str()))
            .expect("some name shares the bit");
        let cases = vec![
            Case {
                name: "a resource sharing the requested one's bit is not it",
                args: Args::default(),
                pod: PodBuilder::new("p").request("example.com/gpu", "1"),
                node: node_4cpu_8gi().allocatable(twin, "4"),
                want: Some((
                    vec!["Insufficient example.com/gpu"],
                    UnschedulableAndUnresolvable,
                )),
            },
            Case {
                name: "the requested resource next to one sharing its bit",
                args: Args::default(),
                pod: PodBuilder::new("p").request("example.com/gpu", "2"),
                node: node_4cpu_8gi()
                    .allocatable(twin, "1")
                    .allocatable("example.com/gpu", "2"),
                want: None,
            },
            Case {
                name: "a resource the node no longer has but its pods still hold",
                args: Args::default(),
                pod: PodBuilder::new("p").request("example.com/gpu", "1"),
                node: node_4cpu_8gi()
                    .with_pod(PodBuilder::new("holder").request("example.com/gpu", "1")),
                want: Some((
                    vec!["Insufficient example.com/gpu"],
                    UnschedulableAndUnresolvable,
                )),
            },
            Case {
                name: "fits with room to spare",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(1024),
                node: node_4cpu_8gi().with_pod(existing.clone()),
                want: None,
            },
            Case {
                name: "an exact fit passes",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(3000).memory_mib(6144),
                node: node_4cpu_8gi().with_pod(existing.clone()),
                want: None,
            },
            Case {
                name: "one millicore too many",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(3001),
                node: node_4cpu_8gi().with_pod(existing.clone()),
                want: Some((vec!["Insufficient cpu"], Unschedulable)),
            },
            Case {
                name: "cpu and memory both listed",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(3500).memory_mib(7000),
                node: node_4cpu_8gi().with_pod(existing.clone()),
                want: Some((
                    vec!["Insufficient cpu", "Insufficient memory"],
                    Unschedulable,
                )),
            },
            Case {
                name: "more than the whole node is unresolvable",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(5000).memory_mib(1024),
                node: node_4cpu_8gi(),
                want: Some((vec!["Insufficient cpu"], UnschedulableAndUnresolvable)),
            },
            Case {
                name: "pod slots full rejects even an empty pod",
                args: Args::default(),
                pod: PodBuilder::new("p"),
                node: node_4cpu_8gi().pods(1).with_pod(existing.clone()),
                want: Some((vec!["Too many pods"], Unschedulable)),
            },
            Case {
                name: "a node with no pod slots",
                args: Args::default(),
                pod: PodBuilder::new("p"),
                node: node_4cpu_8gi().pods(0),
                want: Some((vec!["Too many pods"], Unschedulable)),
            },
            Case {
                name: "reasons in kube's order",
                args: Args::default(),
                pod: PodBuilder::new("p")
                    .cpu_millis(3500)
                    .memory_mib(7000)
                    .request("ephemeral-storage", "2Gi")
                    .request("example.com/gpu", "1")
                    .request("example.com/fpga", "1"),
                node: node_4cpu_8gi()
                    .pods(1)
                    .allocatable("ephemeral-storage", "1Gi")
                    .with_pod(existing.clone()),
                want: Some((
                    vec![
                        "Too many pods",
                        "Insufficient cpu",
                        "Insufficient memory",
                        "Insufficient ephemeral-storage",
                        "Insufficient example.com/fpga",
                        "Insufficient example.com/gpu",
                    ],
                    UnschedulableAndUnresolvable,
                )),
            },
            Case {
                name: "an extended resource the node does not advertise",
                args: Args::default(),
                pod: PodBuilder::new("p").request("example.com/gpu", "1"),
                node: node_4cpu_8gi(),
                want: Some((
                    vec!["Insufficient example.com/gpu"],
                    UnschedulableAndUnresolvable,
                )),
            },
            Case {
                name: "an advertised extended resource, used up",
                args: Args::default(),
                pod: PodBuilder::new("p").request("example.com/gpu", "1"),
                node: node_4cpu_8gi()
                    .allocatable("example.com/gpu", "2")
                    .with_pod(PodBuilder::new("gpu-user").request("example.com/gpu", "2")),
                want: Some((vec!["Insufficient example.com/gpu"], Unschedulable)),
            },
            Case {
                name: "an advertised extended resource with room",
                args: Args::default(),
                pod: PodBuilder::new("p").request("example.com/gpu", "1"),
                node: node_4cpu_8gi().allocatable("example.com/gpu", "2"),
                want: None,
            },
            Case {
                name: "a zero request never fails",
                args: Args::default(),
                pod: PodBuilder::new("p")
                    .request("example.com/gpu", "0")
                    .request("cpu", "0"),
                node: NodeBuilder::new("n1"),
                want: None,
            },
            Case {
                name: "ignored extended resource",
                args: Args {
                    ignored_resources: vec!["example.com/gpu".into()],
                    ..Args::default()
                },
                pod: PodBuilder::new("p").request("example.com/gpu", "1"),
                node: node_4cpu_8gi(),
                want: None,
            },
            Case {
                name: "ignored resource group",
                args: Args {
                    ignored_resource_groups: vec!["example.com".into()],
                    ..Args::default()
                },
                pod: PodBuilder::new("p")
                    .request("example.com/gpu", "1")
                    .request("other.io/fpga", "1"),
                node: node_4cpu_8gi(),
                want: Some((
                    vec!["Insufficient other.io/fpga"],
                    UnschedulableAndUnresolvable,
                )),
            },
            Case {
                name: "hugepages are not extended resources and cannot be ignored",
                args: Args {
                    ignored_resources: vec!["hugepages-2Mi".into()],
                    ..Args::default()
                },
                pod: PodBuilder::new("p").request("hugepages-2Mi", "4Mi"),
                node: node_4cpu_8gi().allocatable("hugepages-2Mi", "2Mi"),
                want: Some((
                    vec!["Insufficient hugepages-2Mi"],
                    UnschedulableAndUnresolvable,
                )),
            },
        ];
        for case in cases {
            let plugin = NodeResourcesFit::try_new(case.args).expect("valid args");
            let pod = case.pod.info();
            let node = case.node.info();
            let got = filter(&plugin, &pod, &node);
            let want = match case.want {
                None => Fit::Yes,
                Some((reasons, code)) => Fit::No(Rejection {
                    plugin: NAME,
                    reasons: reasons.into_iter().collect(),
                    code,
                }),
            };
            assert_eq!(got, want, "{}", case.name);
        }
    }

    /// The effective-request rules of `framework::resources`, checked through the Filter: the
    /// pod must fit a node of exactly its request and not one a millicore (or byte) smaller.
    #[test]
    fn filter_uses_kube_effective_requests() {
        struct Case {
            name: &'static str,
            pod: PodBuilder,
            want_cpu_millis: i64,
            want_memory: i64,
            want_non_zero: (i64, i64),
        }
        let cases = vec![
            Case {
                name: "sum of app containers",
                pod: PodBuilder::new("p")
                    .container(container("a", &[("cpu", "200m"), ("memory", "100Mi")]))
                    .container(container("b", &[("cpu", "300m"), ("memory", "50Mi")])),
                want_cpu_millis: 500,
                want_memory: 150 * MIB,
                want_non_zero: (500, 150 * MIB),
            },
            Case {
                name: "largest init container wins over a smaller sum",
                pod: PodBuilder::new("p")
                    .init_container(container("init", &[("cpu", "2"), ("memory", "10Mi")]))
                    .container(container("a", &[("cpu", "500m"), ("memory", "100Mi")])),
                want_cpu_millis: 2000,
                want_memory: 100 * MIB,
                want_non_zero: (2000, 100 * MIB),
            },
            Case {
                name: "sidecars run beside the app containers",
                pod: PodBuilder::new("p")
                    .sidecar(container("proxy", &[("cpu", "100m"), ("memory", "64Mi")]))
                    .container(container("a", &[("cpu", "200m"), ("memory", "128Mi")])),
                want_cpu_millis: 300,
                want_memory: 192 * MIB,
                want_non_zero: (300, 192 * MIB),
            },
            Case {
                name: "an init container after a sidecar runs beside it",
                pod: PodBuilder::new("p")
                    .sidecar(container("proxy", &[("cpu", "100m")]))
                    .init_container(container("migrate", &[("cpu", "500m"), ("memory", "1Mi")]))
                    .container(container("a", &[("cpu", "200m"), ("memory", "1Mi")])),
                want_cpu_millis: 600,
                want_memory: MIB,
                // The sidecar's missing memory request counts 200Mi when scoring.
                want_non_zero: (600, 201 * MIB),
            },
            Case {
                name: "overhead is added",
                pod: PodBuilder::new("p")
                    .cpu_millis(500)
                    .memory_mib(100)
                    .overhead("cpu", "250m")
                    .overhead("memory", "20Mi"),
                want_cpu_millis: 750,
                want_memory: 120 * MIB,
                want_non_zero: (750, 120 * MIB),
            },
            Case {
                name: "limits stand in for missing requests",
                pod: PodBuilder::new("p")
                    .limit("cpu", "700m")
                    .limit("memory", "1Gi"),
                want_cpu_millis: 700,
                want_memory: 1024 * MIB,
                want_non_zero: (700, 1024 * MIB),
            },
            Case {
                name: "a request wins over its limit",
                pod: PodBuilder::new("p").cpu_millis(100).limit("cpu", "2"),
                want_cpu_millis: 100,
                want_memory: 0,
                want_non_zero: (100, 200 * MIB),
            },
            Case {
                name: "no requests: nothing to fit, non-zero defaults for scoring",
                pod: PodBuilder::new("p").container(container("a", &[])),
                want_cpu_millis: 0,
                want_memory: 0,
                want_non_zero: (100, 200 * MIB),
            },
        ];
        let plugin = default_plugin();
        for case in cases {
            let pod = case.pod.info();
            assert_eq!(
                pod.requests.milli_cpu, case.want_cpu_millis,
                "{}: cpu",
                case.name
            );
            assert_eq!(
                pod.requests.memory, case.want_memory,
                "{}: memory",
                case.name
            );
            assert_eq!(
                (pod.non_zero_milli_cpu, pod.non_zero_memory),
                case.want_non_zero,
                "{}: non-zero",
                case.name
            );
            let exact = NodeBuilder::new("exact")
                .allocatable("cpu", &format!("{}m", case.want_cpu_millis))
                .allocatable("memory", &case.want_memory.to_string())
                .info();
            assert_eq!(
                filter(&plugin, &pod, &exact),
                Fit::Yes,
                "{}: exact fit",
                case.name
            );
            if case.want_cpu_millis > 0 {
                let smaller = NodeBuilder::new("smaller")
                    .allocatable("cpu", &format!("{}m", case.want_cpu_millis - 1))
                    .allocatable("memory", &case.want_memory.to_string())
                    .info();
                let got = filter(&plugin, &pod, &smaller);
                assert!(
                    matches!(&got, Fit::No(r) if *r.reasons == [REASON_INSUFFICIENT_CPU]),
                    "{}: one millicore short: {got:?}",
                    case.name
                );
            }
        }
    }

    fn strategy(type_: ScoringStrategyType, resources: &[(&str, i64)]) -> Args {
        Args {
            scoring_strategy: Some(ScoringStrategy {
                type_,
                resources: resources
                    .iter()
                    .map(|(n, w)| ResourceSpec {
                        name: n.to_string(),
                        weight: *w,
                    })
                    .collect(),
                requested_to_capacity_ratio: None,
            }),
            ..Args::default()
        }
    }

    fn rtc(shape: &[(i32, i32)], resources: &[(&str, i64)]) -> Args {
        let mut args = strategy(ScoringStrategyType::RequestedToCapacityRatio, resources);
        args.scoring_strategy
            .as_mut()
            .expect("strategy set above")
            .requested_to_capacity_ratio = Some(RequestedToCapacityRatioParam {
            shape: shape
                .iter()
                .map(|&(utilization, score)| UtilizationShapePoint { utilization, score })
                .collect(),
        });
        args
    }

    #[test]
    fn score_strategies_match_kube_arithmetic() {
        use ScoringStrategyType::*;
        struct Case {
            name: &'static str,
            args: Args,
            pod: PodBuilder,
            node: NodeBuilder,
            want: i64,
        }
        let cases = vec![
            Case {
                // cpu (4000-1000)*100/4000 = 75; memory (8192-2048)*100/8192 = 75.
                name: "LeastAllocated, 1 cpu and 2Gi on 4 cpu / 8Gi",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(2048),
                node: node_4cpu_8gi(),
                want: 75,
            },
            Case {
                // cpu 75; memory counts the 200Mi default: (8192-200)*100/8192 = 97.
                name: "LeastAllocated counts 200Mi for a missing memory request",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(1000),
                node: node_4cpu_8gi(),
                want: 86,
            },
            Case {
                // The existing best-effort pod counts 100m and 200Mi:
                // cpu (4000-1100)*100/4000 = 72; memory (8192-2248)*100/8192 = 72.
                name: "LeastAllocated counts non-zero requests of existing pods",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(2048),
                node: node_4cpu_8gi()
                    .with_pod(PodBuilder::new("be").container(container("c", &[]))),
                want: 72,
            },
            Case {
                // cpu over capacity scores 0; memory 75.
                name: "LeastAllocated: over capacity scores 0",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(5000).memory_mib(2048),
                node: node_4cpu_8gi(),
                want: 37,
            },
            Case {
                name: "MostAllocated, 1 cpu and 2Gi on 4 cpu / 8Gi",
                args: strategy(MostAllocated, &[]),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(2048),
                node: node_4cpu_8gi(),
                want: 25,
            },
            Case {
                // cpu 25 * 2 + memory 50 * 1 = 100; / 3 = 33.
                name: "MostAllocated with weights",
                args: strategy(MostAllocated, &[("cpu", 2), ("memory", 1)]),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(4096),
                node: node_4cpu_8gi(),
                want: 33,
            },
            Case {
                name: "MostAllocated caps requests at capacity",
                args: strategy(MostAllocated, &[("cpu", 1)]),
                pod: PodBuilder::new("p").cpu_millis(6000),
                node: node_4cpu_8gi(),
                want: 100,
            },
            Case {
                // gpu (4-1)*100/4 = 75, weight 3; cpu 75, memory 75.
                name: "an extended resource the pod requests is scored",
                args: strategy(
                    LeastAllocated,
                    &[("cpu", 1), ("memory", 1), ("example.com/gpu", 3)],
                ),
                pod: PodBuilder::new("p")
                    .cpu_millis(2000)
                    .memory_mib(4096)
                    .request("example.com/gpu", "1"),
                node: node_4cpu_8gi().allocatable("example.com/gpu", "4"),
                // cpu 50, memory 50, gpu 75*3: (50 + 50 + 225) / 5 = 65.
                want: 65,
            },
            Case {
                name: "an extended resource the pod does not request is skipped",
                args: strategy(
                    LeastAllocated,
                    &[("cpu", 1), ("memory", 1), ("example.com/gpu", 3)],
                ),
                pod: PodBuilder::new("p").cpu_millis(2000).memory_mib(4096),
                node: node_4cpu_8gi()
                    .allocatable("example.com/gpu", "4")
                    .with_pod(PodBuilder::new("g").request("example.com/gpu", "4")),
                // Only cpu and memory, where the existing pod's container counts its
                // defaults of 100m and 200Mi: (4000-2100)*100/4000 = 47 and
                // (8192-4296)*100/8192 = 47.
                want: 47,
            },
            Case {
                name: "a resource the node lacks is skipped",
                args: strategy(
                    LeastAllocated,
                    &[("cpu", 1), ("memory", 1), ("example.com/gpu", 3)],
                ),
                pod: PodBuilder::new("p")
                    .cpu_millis(2000)
                    .memory_mib(4096)
                    .request("example.com/gpu", "1"),
                node: node_4cpu_8gi(),
                want: 50,
            },
            Case {
                name: "pods is not a scored resource",
                args: strategy(LeastAllocated, &[("cpu", 1), ("pods", 5)]),
                pod: PodBuilder::new("p").cpu_millis(1000),
                node: node_4cpu_8gi(),
                want: 75,
            },
            Case {
                name: "RTC, identity shape",
                args: rtc(&[(0, 0), (100, 10)], &[]),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(2048),
                node: node_4cpu_8gi(),
                want: 25,
            },
            Case {
                // 100 + (0 - 100) * 25 / 100 = 75 for both.
                name: "RTC, decreasing shape behaves like LeastAllocated",
                args: rtc(&[(0, 10), (100, 0)], &[]),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(2048),
                node: node_4cpu_8gi(),
                want: 75,
            },
            Case {
                // cpu 40%: 0 + 80 * (40 - 20) / 40 = 40; memory 80%: 80 + 20 * 20 / 40 = 90.
                name: "RTC, interpolation between points",
                args: rtc(&[(20, 0), (60, 8), (100, 10)], &[]),
                pod: PodBuilder::new("p").cpu_millis(1600).memory_mib(6554),
                node: node_4cpu_8gi(),
                want: 65,
            },
            Case {
                // (40 * 1 + 90 * 2) / 3 = 73.33, rounded to 73.
                name: "RTC, weighted and rounded",
                args: rtc(&[(20, 0), (60, 8), (100, 10)], &[("cpu", 1), ("memory", 2)]),
                pod: PodBuilder::new("p").cpu_millis(1600).memory_mib(6554),
                node: node_4cpu_8gi(),
                want: 73,
            },
            Case {
                // (50 * 1 + 75 * 2) / 3 = 66.67, rounded to 67.
                name: "RTC rounds to the nearest integer",
                args: rtc(&[(0, 0), (100, 10)], &[("cpu", 1), ("memory", 2)]),
                pod: PodBuilder::new("p").cpu_millis(2000).memory_mib(6144),
                node: node_4cpu_8gi(),
                want: 67,
            },
            Case {
                // cpu 10% scores 0 and is left out of the average; memory 80% scores 90.
                name: "RTC leaves zero-scoring resources out of the average",
                args: rtc(&[(20, 0), (60, 8), (100, 10)], &[]),
                pod: PodBuilder::new("p").cpu_millis(400).memory_mib(6554),
                node: node_4cpu_8gi(),
                want: 90,
            },
            Case {
                name: "RTC, over capacity is 100% utilization",
                args: rtc(&[(0, 0), (50, 5), (100, 2)], &[("cpu", 1)]),
                pod: PodBuilder::new("p").cpu_millis(9000),
                node: node_4cpu_8gi(),
                want: 20,
            },
            Case {
                name: "RTC, flat before the first point",
                args: rtc(&[(50, 3), (100, 10)], &[("cpu", 1)]),
                pod: PodBuilder::new("p").cpu_millis(400),
                node: node_4cpu_8gi(),
                want: 30,
            },
        ];
        for case in cases {
            let plugin = NodeResourcesFit::try_new(case.args)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            check_score(case.name, &plugin, case.pod, case.node, case.want);
        }
    }

    #[test]
    fn args_defaults_and_validation() {
        check_args(NAME, &[
            ArgsCase {
                name: "empty args",
                yaml: "{}",
                want_err: None,
            },
            ArgsCase {
                name: "strategy without resources gets cpu and memory",
                yaml: "scoringStrategy: {type: MostAllocated}",
                want_err: None,
            },
            ArgsCase {
                name: "type is required",
                yaml: "scoringStrategy: {resources: [{name: cpu, weight: 1}]}",
                want_err: Some("missing field `type`"),
            },
            ArgsCase {
                name: "unknown type",
                yaml: "scoringStrategy: {type: Balanced}",
                want_err: Some("unknown variant `Balanced`"),
            },
            ArgsCase {
                name: "weight above 100",
                yaml: "scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 101}]}",
                want_err: Some("scoringStrategy.resources[0].weight: invalid value 101: resource weight of cpu not in valid range (0, 100]"),
            },
            ArgsCase {
                name: "negative weight",
                yaml: "scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: -1}]}",
                want_err: Some("scoringStrategy.resources[0].weight"),
            },
            ArgsCase {
                name: "RTC without its parameters",
                yaml: "scoringStrategy: {type: RequestedToCapacityRatio}",
                want_err: Some("must be specified when type is RequestedToCapacityRatio"),
            },
            ArgsCase {
                name: "RTC with an empty shape",
                yaml: "scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: []}}",
                want_err: Some("at least one point must be specified"),
            },
            ArgsCase {
                name: "RTC shape out of order",
                yaml: "scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 50, score: 1}, {utilization: 50, score: 2}]}}",
                want_err: Some("shape[1].utilization: invalid value 50: values must be sorted in increasing order"),
            },
            ArgsCase {
                name: "RTC score above 10",
                yaml: "scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 0, score: 11}]}}",
                want_err: Some("shape[0].score: invalid value 11: not in valid range [0, 10]"),
            },
            ArgsCase {
                name: "RTC utilization above 100",
                yaml: "scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 101, score: 1}]}}",
                want_err: Some("shape[0].utilization: invalid value 101: not in valid range [0, 100]"),
            },
            ArgsCase {
                name: "RTC parameters with another strategy",
                yaml: "scoringStrategy: {type: MostAllocated, requestedToCapacityRatio: {shape: [{utilization: 0, score: 1}]}}",
                want_err: Some("must be nil when type is not RequestedToCapacityRatio"),
            },
            ArgsCase {
                name: "ignored resources accepted",
                yaml: "ignoredResources: [example.com/gpu]\nignoredResourceGroups: [example.com]",
                want_err: None,
            },
            ArgsCase {
                name: "resource group with a slash",
                yaml: "ignoredResourceGroups: [example.com/gpu]",
                want_err: Some("ignoredResourceGroups[0]: invalid value \"example.com/gpu\": resource group name can't contain '/'"),
            },
        ]);
    }

    #[test]
    fn defaults_are_least_allocated_over_cpu_and_memory() {
        let parsed: Args = parse_args(NAME, None).expect("no args means defaults");
        let args = parsed.with_defaults();
        let strategy = args.scoring_strategy.expect("defaulted");
        assert_eq!(strategy.type_, ScoringStrategyType::LeastAllocated);
        assert_eq!(strategy.resources, default_resources());
        let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(
            "scoringStrategy: {type: MostAllocated, resources: [{name: cpu}, {name: memory, weight: 3}]}",
        )
        .expect("test yaml parses");
        let parsed: Args = parse_args(NAME, Some(&value)).expect("valid");
        let weights: Vec<i64> = parsed
            .with_defaults()
            .scoring_strategy
            .expect("given")
            .resources
            .iter()
            .map(|r| r.weight)
            .collect();
        assert_eq!(weights, vec![1, 3], "a missing weight defaults to 1");
    }
}
