//! The scheduling framework: kube-scheduler's extension points as traits, and the typed data
//! they work on. Nothing here does IO, takes a lock (but [`topology`]'s interner, once per
//! PreFilter and never per node) or is async: plugins are pure functions of
//! the pod and the [`Snapshot`], so the cycle, `berth sim`, the tests and the benchmarks all
//! drive them the same way.
//!
//! # Layout
//!
//! - [`resources`]: resource vectors and the effective-request rules.
//! - [`types`]: [`PodInfo`] and [`NodeInfo`], the per-object data kept ready for plugins.
//! - [`snapshot`]: the cluster state a cycle reads, updated incrementally.
//! - [`cache`]: per-pod plugin state kept across cycles, updated from the snapshot's journal.
//! - [`topology`]: node labels interned to numbers, for per-node look-ups without strings.
//! - [`hash`]: a fast hasher for the per-node lookups of plugin state.
//! - [`nominated`]: running the filters with nominated pods' room counted.
//! - [`CycleState`], [`Rejection`], [`Diagnosis`] and the plugin traits, below.

pub mod cache;
pub mod hash;
pub mod nominated;
pub mod resources;
pub mod snapshot;
pub mod topology;
pub mod types;

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

pub use nominated::{run_filters, run_filters_with_nominated_pods, NominatedPods};
pub use resources::Resources;
pub use snapshot::{DisruptionBudget, ImageSpread, Snapshot};
pub use types::{
    prefetch_line, scalar_resource_bit, AffinityTerm, NodeHot, NodeInfo, PodInfo, SharedPod,
    WeightedAffinityTerm,
};

/// Highest score a plugin gives one node (kube's MaxNodeScore).
pub const MAX_NODE_SCORE: i64 = 100;

/// Per-cycle scratch space keyed by type: each plugin keeps its own typed value (computed in
/// PreFilter or PreScore) without string keys.
///
/// The values sit in a short vector searched linearly: a cycle holds a handful of them, and
/// every plugin looks its own up once per node, where hashing a key would cost more than the
/// scan. Values are shared between a state and its clones and copied on the first write
/// ([`CycleState::get_mut`]), so that filtering a node with nominated pods (which needs a
/// state of its own, as kube's `state.Clone()`) costs a few reference counts.
#[derive(Default, Clone)]
pub struct CycleState {
    values: Vec<StateValue>,
    /// Whether every node must be evaluated (no early stop), as `berth sim --explain` asks.
    pub evaluate_all_nodes: bool,
    /// Plugins whose PreFilter found nothing to check (kube's Skip status): their Filter
    /// does not run in this cycle.
    skipped_filters: Vec<&'static str>,
    /// Plugins whose PreScore found nothing to score (kube's Skip status): their Score does
    /// not run in this cycle and adds nothing to any node.
    skipped_scores: Vec<&'static str>,
}

/// One typed value of a [`CycleState`], with the function that copies it on write.
#[derive(Clone)]
struct StateValue {
    id: TypeId,
    value: Arc<dyn Any + Send + Sync>,
    copy: fn(&(dyn Any + Send + Sync)) -> Arc<dyn Any + Send + Sync>,
}

/// Copies a value of type `T` behind a `dyn Any` (the type is known from the `TypeId`).
fn copy_value<T: Any + Clone + Send + Sync>(
    value: &(dyn Any + Send + Sync),
) -> Arc<dyn Any + Send + Sync> {
    let value: &T = value
        .downcast_ref()
        .expect("a state value is stored under its own TypeId");
    Arc::new(value.clone())
}

impl CycleState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores a value, replacing the previous value of the same type.
    pub fn insert<T: Any + Clone + Send + Sync>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        let entry = StateValue {
            id,
            value: Arc::new(value),
            copy: copy_value::<T>,
        };
        match self.values.iter_mut().find(|v| v.id == id) {
            Some(slot) => *slot = entry,
            None => self.values.push(entry),
        }
    }

    /// kube's Skip status from a PreFilter: `plugin` has nothing to check for this pod, so
    /// its Filter does not run in this cycle (every node passes it).
    pub fn skip_filter(&mut self, plugin: &'static str) {
        if !self.skipped_filters.contains(&plugin) {
            self.skipped_filters.push(plugin);
        }
    }

    /// kube's Skip status from a PreScore: `plugin` has nothing to score for this pod, so
    /// its Score does not run in this cycle (it adds nothing to any node).
    pub fn skip_score(&mut self, plugin: &'static str) {
        if !self.skipped_scores.contains(&plugin) {
            self.skipped_scores.push(plugin);
        }
    }

    /// Whether this cycle skips `plugin`'s Score ([`CycleState::skip_score`]).
    pub fn skips_score(&self, plugin: &str) -> bool {
        self.skipped_scores.contains(&plugin)
    }

    /// The filters this cycle runs: `filters` without those skipped
    /// ([`CycleState::skip_filter`]). Borrowed when none is skipped; computed once per cycle
    /// (or preemption dry run), never per node.
    pub fn filters_to_run<'a>(&self, filters: &'a [Arc<dyn Filter>]) -> Cow<'a, [Arc<dyn Filter>]> {
        if self.skipped_filters.is_empty() {
            return Cow::Borrowed(filters);
        }
        Cow::Owned(
            filters
                .iter()
                .filter(|f| !self.skipped_filters.contains(&f.name()))
                .cloned()
                .collect(),
        )
    }

    /// The stored value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.values
            .iter()
            .find(|v| v.id == id)
            .and_then(|v| v.value.downcast_ref())
    }

    /// The stored value of type `T`, mutable; copied first if a clone of this state shares it.
    pub fn get_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        let id = TypeId::of::<T>();
        let slot = self.values.iter_mut().find(|v| v.id == id)?;
        if Arc::get_mut(&mut slot.value).is_none() {
            slot.value = (slot.copy)(&*slot.value);
        }
        Arc::get_mut(&mut slot.value)
            .expect("a freshly copied value is not shared")
            .downcast_mut()
    }
}

/// Whether removing pods (preemption) could make a rejected node fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The node does not fit now; evicting pods might help (kube's Unschedulable).
    Unschedulable,
    /// No eviction can help: node affinity, taints, cordon (UnschedulableAndUnresolvable).
    UnschedulableAndUnresolvable,
    /// The filter failed (kube's Error status, such as a CEL runtime error in a device
    /// selector): the cycle stops and the attempt ends with this error.
    Error,
}

/// One reason of a [`Rejection`]: one of kube's fixed strings, or a string built once and
/// shared (cloning either allocates nothing, so a filter pass that rejects thousands of
/// nodes for the same reason does not copy it per node). Compared and hashed by its text,
/// however held.
#[derive(Clone)]
pub enum Reason {
    /// A fixed string (`Insufficient cpu`).
    Static(&'static str),
    /// A string made at run time (`Insufficient example.com/gpu`), shared.
    Shared(Arc<str>),
}

impl Reason {
    /// The reason's text.
    pub fn as_str(&self) -> &str {
        match self {
            Reason::Static(s) => s,
            Reason::Shared(s) => s,
        }
    }
}

impl std::ops::Deref for Reason {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Reason {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Reason {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Reason {}

impl PartialOrd for Reason {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Reason {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for Reason {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for Reason {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<&'static str> for Reason {
    fn from(s: &'static str) -> Self {
        Reason::Static(s)
    }
}

impl From<String> for Reason {
    fn from(s: String) -> Self {
        Reason::Shared(s.into())
    }
}

impl From<Arc<str>> for Reason {
    fn from(s: Arc<str>) -> Self {
        Reason::Shared(s)
    }
}

impl From<Cow<'static, str>> for Reason {
    fn from(s: Cow<'static, str>) -> Self {
        match s {
            Cow::Borrowed(s) => Reason::Static(s),
            Cow::Owned(s) => s.into(),
        }
    }
}

/// The reasons of a [`Rejection`], in order; read as a slice. Nearly every rejection has
/// one reason, which is held inline: rejecting a node allocates nothing.
#[derive(Clone)]
pub enum Reasons {
    /// Exactly one reason.
    One(Reason),
    /// Any number (none, or more than one).
    Many(Vec<Reason>),
}

impl Reasons {
    /// Appends a reason.
    pub fn push(&mut self, reason: Reason) {
        match self {
            Reasons::Many(v) if v.is_empty() => *self = Reasons::One(reason),
            Reasons::Many(v) => v.push(reason),
            Reasons::One(_) => {
                let Reasons::One(first) = std::mem::take(self) else {
                    unreachable!("matched One")
                };
                *self = Reasons::Many(vec![first, reason]);
            }
        }
    }
}

impl Default for Reasons {
    fn default() -> Self {
        Reasons::Many(Vec::new())
    }
}

impl std::ops::Deref for Reasons {
    type Target = [Reason];

    fn deref(&self) -> &[Reason] {
        match self {
            Reasons::One(r) => std::slice::from_ref(r),
            Reasons::Many(v) => v,
        }
    }
}

impl<'a> IntoIterator for &'a Reasons {
    type Item = &'a Reason;
    type IntoIter = std::slice::Iter<'a, Reason>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Reasons {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Reasons {}

impl fmt::Debug for Reasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<R: Into<Reason>> FromIterator<R> for Reasons {
    fn from_iter<I: IntoIterator<Item = R>>(iter: I) -> Self {
        let mut out = Reasons::default();
        for r in iter {
            out.push(r.into());
        }
        out
    }
}

impl<R: Into<Reason>> From<Vec<R>> for Reasons {
    fn from(v: Vec<R>) -> Self {
        v.into_iter().collect()
    }
}

/// Why a node (or, from PreFilter, every node) cannot take the pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The plugin that rejected.
    pub plugin: &'static str,
    /// kube's reason strings (`Insufficient cpu`, `node(s) didn't match Pod's node affinity/selector`).
    pub reasons: Reasons,
    /// Whether preemption may help.
    pub code: Code,
}

impl Rejection {
    /// A rejection that eviction may resolve.
    pub fn unschedulable(plugin: &'static str, reason: impl Into<Reason>) -> Self {
        Rejection {
            plugin,
            reasons: Reasons::One(reason.into()),
            code: Code::Unschedulable,
        }
    }

    /// A filter's failure (kube's Error status): the cycle ends with it.
    pub fn error(plugin: &'static str, message: impl Into<Reason>) -> Self {
        Rejection {
            plugin,
            reasons: Reasons::One(message.into()),
            code: Code::Error,
        }
    }

    /// A rejection that no eviction can resolve.
    pub fn unresolvable(plugin: &'static str, reason: impl Into<Reason>) -> Self {
        Rejection {
            plugin,
            reasons: Reasons::One(reason.into()),
            code: Code::UnschedulableAndUnresolvable,
        }
    }
}

/// A filter's verdict on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The pod may go there.
    Yes,
    /// It may not, and why.
    No(Rejection),
}

impl Fit {
    /// Whether the verdict is [`Fit::Yes`].
    pub fn is_yes(&self) -> bool {
        matches!(self, Fit::Yes)
    }
}

/// A plugin failed (a bug or bad configuration), as opposed to rejecting a node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin {plugin}: {message}")]
pub struct PluginError {
    /// The plugin.
    pub plugin: &'static str,
    /// What went wrong.
    pub message: String,
}

/// What PreFilter concluded for the whole cycle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PreFilterOutcome {
    /// Go on with every node.
    #[default]
    AllNodes,
    /// Only these nodes can fit (NodeName, NodeAffinity on metadata.name); the others are
    /// rejected as unresolvable without running filters.
    Nodes(HashSet<String>),
    /// The pod fits nowhere, whatever the node (for example, an unknown schedulerName or an
    /// affinity that can never hold); the rejection explains it for every node.
    Reject(Rejection),
}

/// Every plugin has a name, unique in a profile.
pub trait Plugin: Send + Sync {
    /// kube-scheduler's name for the plugin (`NodeResourcesFit`).
    fn name(&self) -> &'static str;
}

/// PreFilter: computes per-pod data once per cycle, may narrow or reject all nodes. Plugins
/// whose PreFilter state depends on the pods placed on nodes also update that state when the
/// preemption search adds or removes a pod ([`PreFilter::add_pod`], [`PreFilter::remove_pod`]).
pub trait PreFilter: Plugin {
    /// Runs once per cycle before any Filter.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<PreFilterOutcome, PluginError>;

    /// `added` is now on `node` (a hypothetical placement during preemption).
    fn add_pod(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _added: &PodInfo,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) {
    }

    /// `removed` has left `node` (a hypothetical victim during preemption).
    fn remove_pod(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _removed: &PodInfo,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) {
    }
}

/// Filter: may the pod go on this node? Runs in parallel across nodes.
pub trait Filter: Plugin {
    /// The verdict for one node.
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit;

    /// Whether [`Filter::filter`] gives `a` and `b` the same verdict on any one state of any
    /// node. A plugin answers true only when its verdict depends on nothing but the
    /// [`NodeInfo`] (whose `generation` changes with every change to it), its own args and
    /// fields of the pod that are equal in `a` and `b`: never on other nodes, nominated pods
    /// or objects outside the node. The cycle then reuses its verdict on a node across pods
    /// for as long as the node's generation holds (`cycle`'s memo); where any filter of a
    /// cycle answers false, the cycle runs them all. Default: false.
    fn same_verdict(&self, _a: &PodInfo, _b: &PodInfo) -> bool {
        false
    }
}

/// A proposal from PostFilter (preemption): evict these pods so the pod fits on `node`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nomination {
    /// The node to nominate.
    pub node: String,
    /// Pods to evict, as `namespace/name` keys with their uids.
    pub victims: Vec<Victim>,
}

/// A pod chosen for eviction by preemption.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Victim {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// uid.
    pub uid: String,
}

/// What PostFilter concluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PostFilterOutcome {
    /// Evicting these pods lets the pod fit.
    Nominate(Nomination),
    /// Nothing can be done; the message says why (kube's preemption message). An earlier
    /// nomination of the pod ends.
    NoHelp(String),
    /// The pod may not preempt now (kube's PodEligibleToPreemptOthers said no); the message
    /// says why. An earlier nomination of the pod stands.
    NotEligible(String),
}

/// What a PostFilter reads: the pod no node fitted, the cluster, why each node failed, and
/// the profile whose filters it may run again on a node with victims removed.
#[derive(Clone, Copy)]
pub struct PostFilterInput<'a> {
    /// The pod that fits nowhere.
    pub pod: &'a PodInfo,
    /// The cluster the cycle filtered.
    pub snapshot: &'a Snapshot,
    /// Each node's rejection.
    pub diagnosis: &'a Diagnosis,
    /// The profile the cycle ran.
    pub profile: &'a Profile,
}

/// PostFilter: runs when no node fits; proposes, never acts.
pub trait PostFilter: Plugin {
    /// Proposes a nomination, or says why none helps.
    fn post_filter(&self, state: &CycleState, input: &PostFilterInput) -> PostFilterOutcome;
}

/// What a PreScore reads: the pod, the cluster and the nodes that passed filtering.
#[derive(Clone, Copy)]
pub struct PreScoreInput<'a> {
    /// The pod being scheduled.
    pub pod: &'a PodInfo,
    /// The cluster the cycle filtered.
    pub snapshot: &'a Snapshot,
    /// The feasible nodes, which Score will rank.
    pub feasible: &'a [&'a NodeInfo],
}

/// PreScore: computes per-pod data for scoring once, over the feasible nodes.
pub trait PreScore: Plugin {
    /// Runs once per cycle, after filtering, before any Score.
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError>;
}

/// Score: ranks a feasible node; `normalize` then maps raw scores into `0..=MAX_NODE_SCORE`.
pub trait Score: Plugin {
    /// The raw score of one node.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64;

    /// The raw scores of `nodes`, into `scores` (as long as `nodes`), each equal to
    /// [`Score::score`] of its node. The cycle scores through this, a slice at a time, so a
    /// plugin may look its state up once per slice instead of once per node (default: one
    /// [`Score::score`] per node).
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        for (score, node) in scores.iter_mut().zip(nodes) {
            *score = self.score(state, pod, node);
        }
    }

    /// Rescales the raw scores of all feasible nodes, in place (default: unchanged).
    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [i64]) {}

    /// Whether [`Score::score`] gives `a` and `b` the same raw score on any one state of any
    /// node: as [`Filter::same_verdict`], only when the raw score depends on nothing but the
    /// [`NodeInfo`], the plugin's args and pod fields equal in `a` and `b` (never on the
    /// other feasible nodes: normalizing, which may, runs every cycle). The cycle then
    /// reuses a node's raw score across pods while its generation holds. Default: false.
    fn same_raw_score(&self, _a: &PodInfo, _b: &PodInfo) -> bool {
        false
    }
}

/// A Score plugin's choice of devices on the node the cycle chose: the DynamicResources
/// plugin's allocation (its Reserve) tries them first, in this order, then the rest in the
/// allocator's own order. A Berth extension: kube's allocator always takes the first
/// devices that fit. The profile consults the first Score plugin that has one.
pub trait DevicePreference: Plugin {
    /// The devices to try first for `pod` on `node`.
    fn preferred_devices(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Vec<crate::dra::allocator::DeviceId>;
}

/// Why a pod fits nowhere: each rejected node's rejection, plus any PreFilter verdict.
#[derive(Clone, Debug, Default)]
pub struct Diagnosis {
    /// Rejection per node name, ordered by name.
    pub node_rejections: BTreeMap<String, Rejection>,
    /// Set when PreFilter rejected every node at once.
    pub pre_filter_rejection: Option<Rejection>,
    /// Plugins that rejected at least one node (for queueing hints).
    pub unschedulable_plugins: HashSet<&'static str>,
    /// Number of nodes in the cluster.
    pub num_all_nodes: usize,
}

impl Diagnosis {
    /// kube's aggregated message: `0/3 nodes are available: 1 node(s) had untolerated taint
    /// {dedicated: gpu}, 2 Insufficient cpu.` — counts per reason, sorted as strings. When
    /// PreFilter rejected the pod outright, its reason stands alone, without a count
    /// (`0/3 nodes are available: pod affinity terms conflict.`), as in kube's FitError.
    pub fn message(&self) -> String {
        if let Some(r) = &self.pre_filter_rejection {
            return format!(
                "0/{} nodes are available: {}.",
                self.num_all_nodes,
                r.reasons.join(", ")
            );
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in self.node_rejections.values() {
            for reason in &r.reasons {
                *counts.entry(reason.as_ref()).or_default() += 1;
            }
        }
        let mut parts: Vec<String> = counts
            .into_iter()
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        parts.sort();
        if parts.is_empty() {
            format!("0/{} nodes are available.", self.num_all_nodes)
        } else {
            format!(
                "0/{} nodes are available: {}.",
                self.num_all_nodes,
                parts.join(", ")
            )
        }
    }
}

/// One profile: the plugins of each extension point, in order. Built from configuration by
/// the profile module; defined here because PostFilter (preemption) runs the profile's
/// filters again.
#[derive(Clone)]
pub struct Profile {
    /// The `schedulerName` pods use to pick this profile.
    pub scheduler_name: String,
    /// PreFilter plugins.
    pub pre_filters: Vec<Arc<dyn PreFilter>>,
    /// Filter plugins, cheapest first.
    pub filters: Vec<Arc<dyn Filter>>,
    /// PostFilter (preemption), if enabled.
    pub post_filter: Option<Arc<dyn PostFilter>>,
    /// PreScore plugins.
    pub pre_scores: Vec<Arc<dyn PreScore>>,
    /// Score plugins with their weights.
    pub scores: Vec<(Arc<dyn Score>, i64)>,
    /// `percentageOfNodesToScore`; None (or 0) means kube's adaptive default.
    pub percentage_of_nodes_to_score: Option<u32>,
    /// How a tie between nodes of the same total score is broken.
    pub tie_break: TieBreak,
    /// The devices to allocate first on the chosen node, from the first Score plugin with
    /// a [`DevicePreference`].
    pub device_preference: Option<Arc<dyn DevicePreference>>,
}

/// How the cycle chooses among the nodes with the highest total score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TieBreak {
    /// kube's selectHost: each of them with equal probability, drawn afresh for every
    /// decision from the scheduler's seeded generator.
    #[default]
    Random,
    /// One ranking of all nodes drawn from the seed and kept for the whole run (a node's
    /// rank depends only on the seed and its name): a tie goes to the best-ranked node, as
    /// in the FGD paper's artifact (lab.md). A Berth extension (profile field `tieBreak`).
    Ranked,
}

impl Profile {
    /// A profile with no plugins at all: every node fits and none is preferred. A base for
    /// tests and hand-built profiles.
    pub fn empty(scheduler_name: impl Into<String>) -> Self {
        Profile {
            scheduler_name: scheduler_name.into(),
            pre_filters: Vec::new(),
            filters: Vec::new(),
            post_filter: None,
            pre_scores: Vec::new(),
            scores: Vec::new(),
            percentage_of_nodes_to_score: None,
            tie_break: TieBreak::Random,
            device_preference: None,
        }
    }

    /// Names of the plugins at each extension point, in order, with score weights: for logs
    /// and tests.
    pub fn describe(&self) -> ProfileSummary {
        ProfileSummary {
            pre_filters: self.pre_filters.iter().map(|p| p.name()).collect(),
            filters: self.filters.iter().map(|p| p.name()).collect(),
            post_filter: self.post_filter.as_ref().map(|p| p.name()),
            pre_scores: self.pre_scores.iter().map(|p| p.name()).collect(),
            scores: self.scores.iter().map(|(p, w)| (p.name(), *w)).collect(),
        }
    }
}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Profile")
            .field("scheduler_name", &self.scheduler_name)
            .field("plugins", &self.describe())
            .field(
                "percentage_of_nodes_to_score",
                &self.percentage_of_nodes_to_score,
            )
            .field("tie_break", &self.tie_break)
            .finish()
    }
}

/// The plugin names of a [`Profile`], per extension point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileSummary {
    /// PreFilter plugins, in order.
    pub pre_filters: Vec<&'static str>,
    /// Filter plugins, in order.
    pub filters: Vec<&'static str>,
    /// The PostFilter plugin.
    pub post_filter: Option<&'static str>,
    /// PreScore plugins, in order.
    pub pre_scores: Vec<&'static str>,
    /// Score plugins with their weights, in order.
    pub scores: Vec<(&'static str, i64)>,
}
