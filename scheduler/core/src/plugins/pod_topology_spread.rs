//! PodTopologySpread: kube-scheduler's topology spread constraints. `DoNotSchedule`
//! constraints filter (a node is rejected when placing the pod there would make its domain
//! exceed the global minimum by more than maxSkew); `ScheduleAnyway` constraints score (fewer
//! matching pods in a node's domains is better). Pods without constraints of their own get
//! the configured default constraints when a workload controller owns them.
//!
//! Counting follows kube: only pods in the incoming pod's namespace, matching the
//! constraint's selector (with matchLabelKeys values taken from the incoming pod) and not
//! terminating count; a node takes part only if it has every constraint's topology key and
//! passes the constraint's node inclusion policies (nodeAffinityPolicy, default Honor;
//! nodeTaintsPolicy, default Ignore).

use std::collections::HashSet;
use std::sync::Arc;

use berth_model::model::{
    LabelSelector, LabelSelectorOperator, LabelSelectorRequirement, NodeInclusionPolicy, Pod,
    StringMap, TopologySpreadConstraint, UnsatisfiableConstraintAction,
};
use berth_model::names;
use berth_model::validate::validate_topology_spread_constraints;
use serde::{Deserialize, Serialize};

use super::node_affinity::{required_node_selector, RequiredNodeAffinity};
use super::taint_toleration::{find_untolerated_taint, is_do_not_schedule};
use super::InvalidArgs;
use crate::framework::cache::IncrementalCache;
use crate::framework::hash::FastHashMap;
use crate::framework::topology::{domain_bound, key_id, DomainId, KeyId};
use crate::framework::{
    CycleState, Filter, Fit, NodeInfo, Plugin, PluginError, PodInfo, PreFilter, PreFilterOutcome,
    PreScore, PreScoreInput, Rejection, Score, Snapshot, MAX_NODE_SCORE,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "PodTopologySpread";

/// Placing the pod on the node would break a DoNotSchedule constraint's maxSkew.
pub const REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// The node lacks a DoNotSchedule constraint's topology key.
pub const REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// Owner kinds whose pods get the default constraints. kube applies them to pods selected by
/// a Service, ReplicationController, ReplicaSet or StatefulSet; Berth has no Services and
/// goes by the pod's owner references.
const WORKLOAD_OWNER_KINDS: &[&str] = &["ReplicaSet", "ReplicationController", "StatefulSet"];

/// Raw score of a node that lacks a topology key of a pod's own constraints; normalize turns
/// it into 0. Real raw scores are never negative (maxSkew is at least 1).
const IGNORED_NODE_SCORE: i64 = -1;

/// Where the default constraints come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DefaultingType {
    /// kube's built-in defaults: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway.
    #[default]
    System,
    /// The `defaultConstraints` list of the args (possibly empty: no defaults).
    List,
}

/// The plugin's `pluginConfig` args (kube's `PodTopologySpreadArgs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Constraints for pods that have none, used with `defaultingType: List`. They may not
    /// have a labelSelector: it is derived from each pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// System (default) or List.
    #[serde(default)]
    pub defaulting_type: DefaultingType,
}

impl Args {
    /// Checks the args as kube does: System defaulting takes no list; each default
    /// constraint has maxSkew ≥ 1, a topology key, no labelSelector, and no two share a
    /// topologyKey and whenUnsatisfiable.
    pub fn validate(&self) -> Result<(), InvalidArgs> {
        if self.defaulting_type == DefaultingType::System && !self.default_constraints.is_empty() {
            return Err(InvalidArgs::new(
                "defaultingType",
                "must be List when defaultConstraints are set",
            ));
        }
        if let Some(e) =
            validate_topology_spread_constraints(&self.default_constraints, "defaultConstraints")
                .into_iter()
                .next()
        {
            return Err(InvalidArgs::new(e.path, e.message));
        }
        if let Some(i) = self
            .default_constraints
            .iter()
            .position(|c| c.label_selector.is_some())
        {
            return Err(InvalidArgs::new(
                format!("defaultConstraints[{i}].labelSelector"),
                "constraint must not define a selector, as they deduced for each pod",
            ));
        }
        Ok(())
    }
}

/// kube's system default constraints.
fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    let schedule_anyway = |key: &str, max_skew| TopologySpreadConstraint {
        max_skew,
        topology_key: key.to_string(),
        when_unsatisfiable: UnsatisfiableConstraintAction::ScheduleAnyway,
        label_selector: None,
        min_domains: None,
        node_affinity_policy: None,
        node_taints_policy: None,
        match_label_keys: Vec::new(),
    };
    vec![
        schedule_anyway(names::LABEL_HOSTNAME, 3),
        schedule_anyway(names::LABEL_TOPOLOGY_ZONE, 5),
    ]
}

/// The PodTopologySpread plugin (PreFilter, Filter, PreScore, Score).
#[derive(Clone, Debug)]
pub struct PodTopologySpread {
    default_constraints: Vec<TopologySpreadConstraint>,
    /// Whether the defaults are kube's system ones; then nodes lacking a default key are not
    /// left out of scoring (a cluster without zone labels still spreads by hostname).
    system_defaulted: bool,
    /// PreFilter's counts for the latest pod key, kept up to date across cycles from the
    /// snapshot's journal (the same update preemption applies).
    pre_filter_cache: IncrementalCache<PreFilterKey, PreFilterState>,
}

impl Default for PodTopologySpread {
    fn default() -> Self {
        PodTopologySpread {
            default_constraints: system_default_constraints(),
            system_defaulted: true,
            pre_filter_cache: IncrementalCache::default(),
        }
    }
}

/// What PreFilter's counts depend on in the incoming pod (the cluster aside): its
/// constraints (selectors included), its node affinity and tolerations (node inclusion
/// policies) and its namespace.
#[derive(PartialEq)]
struct PreFilterKey {
    constraints: Vec<Constraint>,
    node_selector: StringMap,
    required_node_affinity: Option<berth_model::model::NodeSelector>,
    tolerations: Vec<berth_model::model::Toleration>,
    namespace: String,
}

impl PodTopologySpread {
    /// The plugin with validated args.
    pub fn try_new(args: Args) -> Result<Self, InvalidArgs> {
        args.validate()?;
        Ok(match args.defaulting_type {
            DefaultingType::System => PodTopologySpread::default(),
            DefaultingType::List => PodTopologySpread {
                default_constraints: args.default_constraints,
                system_defaulted: false,
                pre_filter_cache: IncrementalCache::default(),
            },
        })
    }

    /// The pod's constraints with this action: its own, or (only when it has none) the
    /// default ones with a selector made of its labels, if a workload controller owns it.
    fn constraints(&self, pod: &Pod, action: UnsatisfiableConstraintAction) -> Vec<Constraint> {
        let own = &pod.spec.topology_spread_constraints;
        if !own.is_empty() {
            return own
                .iter()
                .filter(|c| c.when_unsatisfiable == action)
                .map(|c| Constraint::new(c, &pod.metadata.labels))
                .collect();
        }
        let owned_by_workload = pod
            .metadata
            .owner_references
            .iter()
            .any(|o| WORKLOAD_OWNER_KINDS.contains(&o.kind.as_str()));
        // kube selects with the owning Services', ReplicaSets'... selectors; their pods
        // carry the same template labels, so the pod's own labels stand in for them.
        if !owned_by_workload || pod.metadata.labels.is_empty() {
            return Vec::new();
        }
        let selector = LabelSelector {
            match_labels: pod.metadata.labels.clone(),
            match_expressions: Vec::new(),
        };
        self.default_constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == action)
            .map(|c| Constraint {
                selector: Some(selector.clone()),
                ..Constraint::new(c, &pod.metadata.labels)
            })
            .collect()
    }
}

/// The plugin can sit behind `Arc<dyn Trait>` and cross threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PodTopologySpread>();
};

/// A constraint resolved for the incoming pod.
#[derive(Clone, Debug, PartialEq)]
struct Constraint {
    max_skew: i64,
    topology_key: String,
    /// With matchLabelKeys folded in; `None` matches no pod.
    selector: Option<LabelSelector>,
    min_domains: i64,
    honor_node_affinity: bool,
    honor_node_taints: bool,
}

impl Constraint {
    fn new(c: &TopologySpreadConstraint, pod_labels: &StringMap) -> Self {
        let mut selector = c.label_selector.clone();
        // Each matchLabelKeys value is ANDed with the selector; a nil selector stays one that
        // matches nothing.
        if let Some(sel) = selector.as_mut() {
            for key in &c.match_label_keys {
                if let Some(value) = pod_labels.get(key) {
                    sel.match_expressions.push(LabelSelectorRequirement {
                        key: key.clone(),
                        operator: LabelSelectorOperator::In,
                        values: vec![value.clone()],
                    });
                }
            }
        }
        Constraint {
            max_skew: i64::from(c.max_skew),
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: i64::from(c.min_domains.unwrap_or(1)),
            honor_node_affinity: c.node_affinity_policy.unwrap_or(NodeInclusionPolicy::Honor)
                == NodeInclusionPolicy::Honor,
            honor_node_taints: c.node_taints_policy.unwrap_or(NodeInclusionPolicy::Ignore)
                == NodeInclusionPolicy::Honor,
        }
    }

    /// Whether an existing pod counts toward its domain. As in kube, an empty selector
    /// (`labelSelector: {}` and no matchLabelKeys values) counts no pod.
    fn counts(&self, existing: &Pod, namespace: &str) -> bool {
        existing.metadata.deletion_timestamp.is_none()
            && existing.metadata.namespace == namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|s| !s.is_empty() && s.matches(&existing.metadata.labels))
    }

    /// Matching pods on one node.
    fn count_on(&self, node: &NodeInfo, namespace: &str) -> i64 {
        node.pods
            .iter()
            .filter(|p| self.counts(&p.pod, namespace))
            .count() as i64
    }

    /// Whether the incoming pod adds 1 to the domain it goes to.
    fn self_match(&self, pod: &Pod) -> bool {
        self.selector
            .as_ref()
            .is_some_and(|s| s.matches(&pod.metadata.labels))
    }

    /// Whether the node passes the constraint's node inclusion policies for `pod`, whose
    /// nodeSelector and required node affinity are `required`.
    fn includes(&self, pod: &Pod, required: &RequiredNodeAffinity, node: &NodeInfo) -> bool {
        (!self.honor_node_affinity || required.matches_node(node))
            && (!self.honor_node_taints
                || find_untolerated_taint(&node.node.spec.taints, &pod.spec.tolerations, |t| {
                    is_do_not_schedule(t)
                })
                .is_none())
    }
}

/// Whether the node has every constraint's topology key.
fn has_all_keys(labels: &StringMap, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

/// Matching pods per eligible domain of one constraint's key, indexed by the domain's
/// interned number ([`crate::framework::topology`]): Filter reads a node's count with an
/// index instead of hashing its label value.
#[derive(Clone, Debug, Default)]
struct DenseCounts {
    /// `None` for a domain that is not eligible (no node counted for it has it).
    counts: Vec<Option<i64>>,
    /// Number of eligible domains.
    domains: usize,
    /// The smallest count of an eligible domain (0 when there is none).
    min: i64,
}

impl DenseCounts {
    fn with_bound(bound: usize) -> Self {
        DenseCounts {
            counts: vec![None; bound],
            ..DenseCounts::default()
        }
    }

    /// Adds `n` to the domain, making it eligible; the minimum is left to the caller
    /// ([`DenseCounts::recompute_min`] or [`DenseCounts::update`]).
    fn add(&mut self, domain: DomainId, n: i64) {
        let d = domain as usize;
        if d >= self.counts.len() {
            self.counts.resize(d + 1, None);
        }
        let slot = &mut self.counts[d];
        if slot.is_none() {
            self.domains += 1;
        }
        *slot.get_or_insert(0) += n;
    }

    fn recompute_min(&mut self) {
        self.min = self.counts.iter().flatten().copied().min().unwrap_or(0);
    }

    /// Adds `delta` to the domain and keeps the minimum exact, rescanning only when the
    /// domain that held it grows.
    fn update(&mut self, domain: DomainId, delta: i64) {
        let before = self.counts.get(domain as usize).copied().flatten();
        self.add(domain, delta);
        let after = before.unwrap_or(0) + delta;
        match before {
            Some(before) if before == self.min && delta > 0 => self.recompute_min(),
            Some(_) => self.min = self.min.min(after),
            None => self.recompute_min(),
        }
    }

    /// Matching pods in the domain (0 for a domain that is not eligible).
    #[inline]
    fn get(&self, domain: DomainId) -> i64 {
        self.counts
            .get(domain as usize)
            .copied()
            .flatten()
            .unwrap_or(0)
    }
}

/// The node's domain of each key, or `None` when it lacks one (or a key is on no node).
fn domains_of(keys: &[Option<KeyId>], node: &NodeInfo) -> Option<Vec<DomainId>> {
    keys.iter()
        .map(|k| k.and_then(|k| node.topology.domain(k)))
        .collect()
}

/// What Filter reads: the (cached) counts, and what the incoming pod adds to its own domain
/// per constraint (1 when it matches the constraint's selector), computed once per cycle.
#[derive(Clone, Debug)]
struct FilterState {
    counts: Arc<PreFilterState>,
    self_match: Vec<i64>,
}

/// What PreFilter computes for Filter (cached across cycles for pods of one key).
#[derive(Clone, Debug)]
struct PreFilterState {
    /// The pod's DoNotSchedule constraints.
    constraints: Vec<Constraint>,
    /// Each constraint's topology key, interned (`None` when no node has it).
    keys: Vec<Option<KeyId>>,
    /// The pod's nodeSelector and required node affinity.
    required_node_affinity: RequiredNodeAffinity,
    /// Per constraint: matching pods per eligible domain (a domain with none is present
    /// with 0), and their minimum.
    counts: Vec<DenseCounts>,
}

impl PreFilterState {
    /// The global minimum of constraint `i`: 0 when there are fewer eligible domains than
    /// minDomains.
    fn global_min(&self, i: usize) -> i64 {
        let counts = &self.counts[i];
        if (counts.domains as i64) < self.constraints[i].min_domains {
            0
        } else {
            counts.min
        }
    }

    /// Accounts for `other` placed on (`delta` 1) or removed from (`delta` -1) `node`.
    fn update(&mut self, pod: &Pod, other: &Pod, node: &NodeInfo, delta: i64) {
        if other.metadata.namespace != pod.metadata.namespace {
            return;
        }
        let Some(domains) = domains_of(&self.keys, node) else {
            return;
        };
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.includes(pod, &self.required_node_affinity, node)
                || !c.counts(other, &pod.metadata.namespace)
            {
                continue;
            }
            self.counts[i].update(domains[i], delta);
        }
    }
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreFilter for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<PreFilterOutcome, PluginError> {
        let constraints = self.constraints(&pod.pod, UnsatisfiableConstraintAction::DoNotSchedule);
        if constraints.is_empty() {
            // kube's Skip: no hard constraint for Filter to check.
            state.skip_filter(NAME);
            return Ok(PreFilterOutcome::AllNodes);
        }
        let required_node_affinity = RequiredNodeAffinity::from_pod(&pod.pod).interned();
        let key = PreFilterKey {
            constraints: constraints.clone(),
            node_selector: pod.pod.spec.node_selector.clone(),
            required_node_affinity: required_node_selector(&pod.pod).cloned(),
            tolerations: pod.pod.spec.tolerations.clone(),
            namespace: pod.pod.metadata.namespace.clone(),
        };
        let keys: Vec<Option<KeyId>> = constraints
            .iter()
            .map(|c| key_id(&c.topology_key))
            .collect();
        let compute = || {
            let namespace = &pod.pod.metadata.namespace;
            let mut counts: Vec<DenseCounts> = keys
                .iter()
                .map(|k| DenseCounts::with_bound(k.map_or(0, domain_bound)))
                .collect();
            for node in snapshot.nodes() {
                let Some(domains) = domains_of(&keys, node) else {
                    continue;
                };
                for (i, c) in constraints.iter().enumerate() {
                    if !c.includes(&pod.pod, &required_node_affinity, node) {
                        continue;
                    }
                    counts[i].add(domains[i], c.count_on(node, namespace));
                }
            }
            for c in &mut counts {
                c.recompute_min();
            }
            PreFilterState {
                constraints: constraints.clone(),
                keys: keys.clone(),
                required_node_affinity: required_node_affinity.clone(),
                counts,
            }
        };
        let cached = self
            .pre_filter_cache
            .get(snapshot, key, compute, |s, change, node| {
                s.update(&pod.pod, &change.pod.pod, node, change.delta)
            });
        let self_match = cached
            .constraints
            .iter()
            .map(|c| i64::from(c.self_match(&pod.pod)))
            .collect();
        state.insert(FilterState {
            counts: cached,
            self_match,
        });
        Ok(PreFilterOutcome::AllNodes)
    }

    fn add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &NodeInfo,
        _snapshot: &Snapshot,
    ) {
        if let Some(s) = state.get_mut::<FilterState>() {
            Arc::make_mut(&mut s.counts).update(&pod.pod, &added.pod, node, 1);
        }
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &NodeInfo,
        _snapshot: &Snapshot,
    ) {
        if let Some(s) = state.get_mut::<FilterState>() {
            Arc::make_mut(&mut s.counts).update(&pod.pod, &removed.pod, node, -1);
        }
    }
}

impl Filter for PodTopologySpread {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        let Some(FilterState {
            counts: s,
            self_match,
        }) = state.get::<FilterState>()
        else {
            return Fit::Yes;
        };
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(domain) = s.keys[i].and_then(|k| node.topology.domain(k)) else {
                return Fit::No(Rejection::unresolvable(NAME, REASON_NODE_LABEL_NOT_MATCH));
            };
            let count = s.counts[i].get(domain);
            let skew = count + self_match[i] - s.global_min(i);
            if skew > c.max_skew {
                tracing::trace!(
                    pod = %pod.key(),
                    node = node.name(),
                    topology_key = %c.topology_key,
                    count,
                    skew,
                    max_skew = c.max_skew,
                    "topology spread rejects node"
                );
                return Fit::No(Rejection::unschedulable(NAME, REASON_CONSTRAINTS_NOT_MATCH));
            }
        }
        Fit::Yes
    }
}

/// Matching pods per topology domain (the value of the constraint's key), hashed with the
/// fast hasher (PreScore's, computed over the feasible nodes' domains each cycle).
type DomainCounts = FastHashMap<String, i64>;

/// What PreScore computes for Score.
#[derive(Clone, Debug)]
struct PreScoreState {
    /// The pod's ScheduleAnyway constraints.
    constraints: Vec<Constraint>,
    /// Feasible nodes that lack a topology key of the pod's own constraints.
    ignored_nodes: HashSet<String>,
    /// Per constraint: matching pods per domain of a feasible node (hostname constraints
    /// are counted per node at Score instead).
    counts: Vec<DomainCounts>,
    /// Per constraint: ln(number of domains + 2), so that counts in a topology with few
    /// domains weigh more than in one with many.
    weights: Vec<f64>,
}

impl PreScore for PodTopologySpread {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let PreScoreInput {
            pod,
            snapshot,
            feasible,
        } = *input;
        if snapshot.is_empty() {
            return Ok(());
        }
        let constraints = self.constraints(&pod.pod, UnsatisfiableConstraintAction::ScheduleAnyway);
        if constraints.is_empty() {
            // kube's Skip: no soft constraint (of the pod's or the defaults) to score.
            state.skip_score(NAME);
            return Ok(());
        }
        // kube requires every key only for the pod's own or listed defaults, so that the
        // system defaults still spread by hostname where nodes have no zone label.
        let require_all_keys =
            !pod.pod.spec.topology_spread_constraints.is_empty() || !self.system_defaulted;
        let mut ignored_nodes = HashSet::new();
        let mut counts: Vec<DomainCounts> = vec![DomainCounts::default(); constraints.len()];
        for node in feasible {
            let labels = node.labels();
            if require_all_keys && !has_all_keys(labels, &constraints) {
                ignored_nodes.insert(node.name().to_string());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == names::LABEL_HOSTNAME {
                    continue;
                }
                // A missing key reads as the empty value, as in kube: it only sizes the
                // topology, since Score skips constraints whose key the node lacks.
                let value = labels.get(&c.topology_key).cloned().unwrap_or_default();
                counts[i].entry(value).or_insert(0);
            }
        }
        let weights = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let domains = if c.topology_key == names::LABEL_HOSTNAME {
                    feasible.len() - ignored_nodes.len()
                } else {
                    counts[i].len()
                };
                (domains as f64 + 2.0).ln()
            })
            .collect();
        let namespace = &pod.pod.metadata.namespace;
        let required_node_affinity = RequiredNodeAffinity::from_pod(&pod.pod).interned();
        for node in snapshot.nodes() {
            let labels = node.labels();
            if require_all_keys && !has_all_keys(labels, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.includes(&pod.pod, &required_node_affinity, node) {
                    continue;
                }
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                // Only domains of feasible nodes matter (hostname domains have no entry).
                if let Some(count) = counts[i].get_mut(value) {
                    *count += c.count_on(node, namespace);
                }
            }
        }
        state.insert(PreScoreState {
            constraints,
            ignored_nodes,
            counts,
            weights,
        });
        Ok(())
    }
}

impl Score for PodTopologySpread {
    /// Sum over the constraints whose key the node has of `count * weight + maxSkew - 1`,
    /// rounded; a node lacking a key of the pod's own constraints gets a marker that
    /// [`Score::normalize`] turns into 0.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let Some(s) = state.get::<PreScoreState>() else {
            return 0;
        };
        if s.ignored_nodes.contains(node.name()) {
            return IGNORED_NODE_SCORE;
        }
        let namespace = &pod.pod.metadata.namespace;
        let mut score = 0.0;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = node.labels().get(&c.topology_key) else {
                continue;
            };
            let count = if c.topology_key == names::LABEL_HOSTNAME {
                c.count_on(node, namespace)
            } else {
                s.counts[i].get(value).copied().unwrap_or(0)
            };
            score += count as f64 * s.weights[i] + (c.max_skew - 1) as f64;
        }
        score.round() as i64
    }

    /// kube's inversion: `MAX * (max + min - score) / max` over the scored nodes (fewer
    /// matching pods is better), every node `MAX` when the maximum is 0, ignored nodes 0.
    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) {
        if state.get::<PreScoreState>().is_none() {
            return;
        }
        let valid = || scores.iter().copied().filter(|&s| s != IGNORED_NODE_SCORE);
        let min = valid().min().unwrap_or(0);
        let max = valid().max().unwrap_or(0).max(0);
        for score in scores.iter_mut() {
            *score = if *score == IGNORED_NODE_SCORE {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *score) / max
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use berth_model::model::TaintEffect;

    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{
        check_typed_args, exists_toleration, filter_verdicts, scores, snapshot_with, zoned, Info,
        NodeBuilder, PodBuilder, TypedArgsCase, Verdict,
    };

    const ZONE: &str = names::LABEL_TOPOLOGY_ZONE;
    const HOST: &str = names::LABEL_HOSTNAME;
    const DO_NOT_SCHEDULE: UnsatisfiableConstraintAction =
        UnsatisfiableConstraintAction::DoNotSchedule;
    const SCHEDULE_ANYWAY: UnsatisfiableConstraintAction =
        UnsatisfiableConstraintAction::ScheduleAnyway;

    const OK: Verdict = None;
    const SKEW: Verdict = Some((REASON_CONSTRAINTS_NOT_MATCH, Code::Unschedulable));
    const LABEL: Verdict = Some((
        REASON_NODE_LABEL_NOT_MATCH,
        Code::UnschedulableAndUnresolvable,
    ));

    /// A constraint spreading pods labelled `app=web`.
    fn spread(
        key: &str,
        max_skew: i32,
        action: UnsatisfiableConstraintAction,
    ) -> TopologySpreadConstraint {
        TopologySpreadConstraint {
            max_skew,
            topology_key: key.to_string(),
            when_unsatisfiable: action,
            label_selector: Some(LabelSelector {
                match_labels: [("app".to_string(), "web".to_string())].into(),
                match_expressions: Vec::new(),
            }),
            min_domains: None,
            node_affinity_policy: None,
            node_taints_policy: None,
            match_label_keys: Vec::new(),
        }
    }

    /// a1 and a2 in zone a, b1 in zone b.
    fn zone_nodes() -> Vec<NodeBuilder> {
        vec![
            zoned("a1", Some("a")),
            zoned("a2", Some("a")),
            zoned("b1", Some("b")),
        ]
    }

    /// A pod labelled `app=web` in `default`.
    fn web(name: &str) -> PodBuilder {
        PodBuilder::new(name).label("app", "web")
    }

    fn run_filter(
        plugin: &PodTopologySpread,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
    ) -> Vec<Verdict> {
        let known = [REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH];
        filter_verdicts(plugin, state, pod, snap, &known)
    }

    #[test]
    fn filter() {
        struct Case {
            name: &'static str,
            nodes: Vec<NodeBuilder>,
            existing: Vec<(&'static str, PodBuilder)>,
            pod: PodBuilder,
            want: Vec<Verdict>,
        }
        let zone1 = || spread(ZONE, 1, DO_NOT_SCHEDULE);
        let cases = vec![
            Case {
                name: "a domain ahead of the minimum by maxSkew is rejected",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1"))],
                pod: web("new").topology_spread(zone1()),
                want: vec![SKEW, SKEW, OK],
            },
            Case {
                name: "a larger maxSkew allows it",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1"))],
                pod: web("new").topology_spread(spread(ZONE, 2, DO_NOT_SCHEDULE)),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "a pod outside its own selector adds nothing to the domain",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1"))],
                pod: PodBuilder::new("new")
                    .label("app", "other")
                    .topology_spread(zone1()),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "a node without the topology key is unresolvable",
                nodes: vec![
                    zoned("a1", Some("a")),
                    zoned("b1", Some("b")),
                    zoned("x", None),
                ],
                existing: vec![("x", web("web-1")), ("x", web("web-2"))],
                pod: web("new").topology_spread(zone1()),
                want: vec![OK, OK, LABEL],
            },
            Case {
                name: "a node without every key is no domain of any constraint",
                nodes: vec![
                    zoned("a1", Some("a")),
                    zoned("b1", Some("b")),
                    zoned("x", None),
                ],
                existing: vec![("a1", web("web-1")), ("b1", web("web-2"))],
                pod: web("new")
                    .topology_spread(spread(HOST, 1, DO_NOT_SCHEDULE))
                    .topology_spread(spread(ZONE, 5, DO_NOT_SCHEDULE)),
                want: vec![OK, OK, LABEL],
            },
            Case {
                name: "pods of other namespaces do not count",
                nodes: zone_nodes(),
                existing: vec![
                    ("a1", web("web-1").namespace("other")),
                    ("a2", web("web-2").namespace("other")),
                ],
                pod: web("new").topology_spread(zone1()),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "terminating pods do not count",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1").terminating())],
                pod: web("new").topology_spread(zone1()),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "a constraint without labelSelector matches no pods",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("a2", web("web-2"))],
                pod: web("new").topology_spread(TopologySpreadConstraint {
                    label_selector: None,
                    ..zone1()
                }),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "an empty labelSelector counts no pods, as in kube",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("a2", web("web-2"))],
                pod: web("new").topology_spread(TopologySpreadConstraint {
                    label_selector: Some(LabelSelector::default()),
                    ..zone1()
                }),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "a tainted empty node still counts as a domain (nodeTaintsPolicy Ignore)",
                nodes: vec![
                    zoned("a1", Some("a")),
                    zoned("a2", Some("a")),
                    zoned("b1", Some("b")).taint("dedicated", "gpu", TaintEffect::NoSchedule),
                ],
                existing: vec![("a1", web("web-1"))],
                pod: web("new").topology_spread(zone1()),
                want: vec![SKEW, SKEW, OK],
            },
            Case {
                name: "nodeTaintsPolicy Honor leaves the untolerated node out",
                nodes: vec![
                    zoned("a1", Some("a")),
                    zoned("a2", Some("a")),
                    zoned("b1", Some("b")).taint("dedicated", "gpu", TaintEffect::NoSchedule),
                ],
                existing: vec![("a1", web("web-1"))],
                pod: web("new").topology_spread(TopologySpreadConstraint {
                    node_taints_policy: Some(NodeInclusionPolicy::Honor),
                    ..zone1()
                }),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "nodeTaintsPolicy Honor keeps a tolerated node",
                nodes: vec![
                    zoned("a1", Some("a")),
                    zoned("a2", Some("a")),
                    zoned("b1", Some("b")).taint("dedicated", "gpu", TaintEffect::NoSchedule),
                ],
                existing: vec![("a1", web("web-1"))],
                pod: web("new")
                    .toleration(exists_toleration("dedicated", None))
                    .topology_spread(TopologySpreadConstraint {
                        node_taints_policy: Some(NodeInclusionPolicy::Honor),
                        ..zone1()
                    }),
                want: vec![SKEW, SKEW, OK],
            },
            Case {
                name: "nodeAffinityPolicy Honor (default) counts only nodes the pod may use",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1"))],
                pod: web("new").node_selector(ZONE, "a").topology_spread(zone1()),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "nodeAffinityPolicy Ignore counts every node",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1"))],
                pod: web("new").node_selector(ZONE, "a").topology_spread(
                    TopologySpreadConstraint {
                        node_affinity_policy: Some(NodeInclusionPolicy::Ignore),
                        ..zone1()
                    },
                ),
                want: vec![SKEW, SKEW, OK],
            },
            Case {
                name: "minDomains met: the global minimum is the smallest count",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("b1", web("web-2"))],
                pod: web("new").topology_spread(TopologySpreadConstraint {
                    min_domains: Some(2),
                    ..zone1()
                }),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "fewer domains than minDomains: the global minimum is 0",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("b1", web("web-2"))],
                pod: web("new").topology_spread(TopologySpreadConstraint {
                    min_domains: Some(3),
                    ..zone1()
                }),
                want: vec![SKEW, SKEW, SKEW],
            },
            Case {
                name: "matchLabelKeys narrow the selector to the pod's values",
                nodes: zone_nodes(),
                existing: vec![
                    ("a1", web("v1-a").label("version", "v1")),
                    ("a2", web("v1-b").label("version", "v1")),
                    ("b1", web("v2-a").label("version", "v2")),
                ],
                pod: web("new")
                    .label("version", "v2")
                    .topology_spread(TopologySpreadConstraint {
                        match_label_keys: vec!["version".into()],
                        ..zone1()
                    }),
                want: vec![OK, OK, SKEW],
            },
            Case {
                name: "matchLabelKeys are ANDed with a selector on the same key",
                nodes: zone_nodes(),
                existing: vec![
                    ("a1", web("v1-a").label("version", "v1")),
                    ("a2", web("v1-b").label("version", "v1")),
                ],
                pod: web("new")
                    .label("version", "v2")
                    .topology_spread(TopologySpreadConstraint {
                        label_selector: Some(LabelSelector {
                            match_labels: [("version".to_string(), "v1".to_string())].into(),
                            match_expressions: Vec::new(),
                        }),
                        match_label_keys: vec!["version".into()],
                        ..zone1()
                    }),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "without matchLabelKeys every version counts",
                nodes: zone_nodes(),
                existing: vec![
                    ("a1", web("v1-a").label("version", "v1")),
                    ("a2", web("v1-b").label("version", "v1")),
                    ("b1", web("v2-a").label("version", "v2")),
                ],
                pod: web("new").label("version", "v2").topology_spread(zone1()),
                want: vec![SKEW, SKEW, OK],
            },
            Case {
                name: "ScheduleAnyway constraints never filter",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("a1", web("web-2"))],
                pod: web("new").topology_spread(spread(ZONE, 1, SCHEDULE_ANYWAY)),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "default constraints (ScheduleAnyway) never filter",
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("a1", web("web-2"))],
                pod: web("new").owner("ReplicaSet", "web-abc"),
                want: vec![OK, OK, OK],
            },
        ];
        let plugin = PodTopologySpread::default();
        for case in cases {
            let snap = snapshot_with(&case.nodes, &case.existing);
            let pod = case.pod.info();
            let mut state = CycleState::new();
            let outcome = plugin
                .pre_filter(&mut state, &pod, &snap)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(outcome, PreFilterOutcome::AllNodes, "{}", case.name);
            assert_eq!(
                run_filter(&plugin, &state, &pod, &snap),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// Preemption's hypothetical removals and additions change the verdict.
    #[test]
    fn dense_counts_keep_the_minimum_exact() {
        // (domain, delta) steps; after each, the kept minimum must equal a rescan's.
        let steps: &[(DomainId, i64)] = &[
            (0, 0),
            (2, 3),
            (0, 1),
            (0, 1),
            (2, -1),
            (2, -1),
            (2, -1),
            (5, 0),
            (5, 2),
            (0, -2),
            (5, -2),
        ];
        let mut counts = DenseCounts::with_bound(3);
        for (n, &(domain, delta)) in steps.iter().enumerate() {
            counts.update(domain, delta);
            let mut rescanned = counts.clone();
            rescanned.recompute_min();
            assert_eq!(counts.min, rescanned.min, "after step {n}");
        }
        assert_eq!(counts.domains, 3);
        assert_eq!(counts.get(1), 0, "never eligible");
        assert_eq!(counts.get(9), 0, "past the bound");
    }

    #[test]
    fn add_and_remove_pod() {
        enum Step {
            Remove(&'static str, &'static str),
            Add(&'static str, Box<PodBuilder>),
        }
        struct Case {
            name: &'static str,
            pod: PodBuilder,
            step: Step,
            want: Vec<Verdict>,
        }
        let zone1 = || spread(ZONE, 1, DO_NOT_SCHEDULE);
        let cases = vec![
            Case {
                name: "removing the pod ahead frees its zone",
                pod: web("new").topology_spread(zone1()),
                step: Step::Remove("a1", "web-1"),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "adding a pod to the emptiest zone raises the minimum",
                pod: web("new").topology_spread(zone1()),
                step: Step::Add("b1", Box::new(web("web-2"))),
                want: vec![OK, OK, OK],
            },
            Case {
                name: "adding a pod to the fuller zone widens the gap",
                pod: web("new").topology_spread(spread(ZONE, 2, DO_NOT_SCHEDULE)),
                step: Step::Add("a2", Box::new(web("web-2"))),
                want: vec![SKEW, SKEW, OK],
            },
            Case {
                name: "a pod of another namespace changes nothing",
                pod: web("new").topology_spread(zone1()),
                step: Step::Add("b1", Box::new(web("web-2").namespace("other"))),
                want: vec![SKEW, SKEW, OK],
            },
            Case {
                name: "a pod on a node outside the pod's node affinity changes nothing",
                pod: web("new")
                    .node_selector("pool", "x")
                    .topology_spread(spread(ZONE, 2, DO_NOT_SCHEDULE)),
                step: Step::Add("a2", Box::new(web("web-2"))),
                want: vec![OK, OK, OK],
            },
        ];
        let plugin = PodTopologySpread::default();
        let nodes = vec![
            zoned("a1", Some("a")).label("pool", "x"),
            zoned("a2", Some("a")),
            zoned("b1", Some("b")).label("pool", "x"),
        ];
        for case in cases {
            let snap = snapshot_with(&nodes, &[("a1", web("web-1"))]);
            let pod = case.pod.info();
            let mut state = CycleState::new();
            plugin
                .pre_filter(&mut state, &pod, &snap)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let before = run_filter(&plugin, &state, &pod, &snap);
            let (node_name, changed) = match &case.step {
                Step::Remove(node_name, pod_name) => {
                    let node = snap.node(node_name).expect("node");
                    let removed = node
                        .pods
                        .iter()
                        .find(|p| p.pod.metadata.name == *pod_name)
                        .expect("pod on node")
                        .clone();
                    plugin.remove_pod(&mut state, &pod, &removed, node, &snap);
                    (*node_name, removed)
                }
                Step::Add(node_name, p) => {
                    let node = snap.node(node_name).expect("node");
                    let added = Arc::new(p.clone().node_name(node_name).info());
                    plugin.add_pod(&mut state, &pod, &added, node, &snap);
                    (*node_name, added)
                }
            };
            assert_eq!(
                run_filter(&plugin, &state, &pod, &snap),
                case.want,
                "{}",
                case.name
            );
            // Undoing the step restores the first verdict.
            let node = snap.node(node_name).expect("node");
            match case.step {
                Step::Remove(..) => plugin.add_pod(&mut state, &pod, &changed, node, &snap),
                Step::Add(..) => plugin.remove_pod(&mut state, &pod, &changed, node, &snap),
            }
            assert_eq!(
                run_filter(&plugin, &state, &pod, &snap),
                before,
                "{}: undone",
                case.name
            );
        }
    }

    #[test]
    fn score() {
        struct Case {
            name: &'static str,
            args: Args,
            nodes: Vec<NodeBuilder>,
            existing: Vec<(&'static str, PodBuilder)>,
            pod: PodBuilder,
            /// Names of the feasible nodes, scored in this order.
            feasible: Vec<&'static str>,
            raw: Vec<i64>,
            want: Vec<i64>,
        }
        let list = |c: TopologySpreadConstraint| Args {
            default_constraints: vec![TopologySpreadConstraint {
                label_selector: None,
                ..c
            }],
            defaulting_type: DefaultingType::List,
        };
        let hosts = || {
            vec![
                NodeBuilder::new("h1").label(HOST, "h1"),
                NodeBuilder::new("h2").label(HOST, "h2"),
                NodeBuilder::new("h3").label(HOST, "h3"),
            ]
        };
        let cases = vec![
            Case {
                name: "fewer matching pods in the zone scores higher",
                args: Args::default(),
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("a1", web("web-2"))],
                pod: web("new").topology_spread(spread(ZONE, 1, SCHEDULE_ANYWAY)),
                feasible: vec!["a1", "a2", "b1"],
                // 2 * ln(2 + 2) = 2.77
                raw: vec![3, 3, 0],
                want: vec![0, 0, 100],
            },
            Case {
                name: "maxSkew - 1 is added to every counted constraint",
                args: Args::default(),
                nodes: zone_nodes(),
                existing: vec![("a1", web("web-1")), ("a1", web("web-2"))],
                pod: web("new").topology_spread(spread(ZONE, 3, SCHEDULE_ANYWAY)),
                feasible: vec!["a1", "a2", "b1"],
                raw: vec![5, 5, 2],
                want: vec![40, 40, 100],
            },
            Case {
                name: "hostname constraints count per node",
                args: Args::default(),
                nodes: zone_nodes(),
                existing: vec![
                    ("a1", web("web-1")),
                    ("a1", web("web-2")),
                    ("a2", web("web-3")),
                ],
                pod: web("new").topology_spread(spread(HOST, 1, SCHEDULE_ANYWAY)),
                feasible: vec!["a1", "a2", "b1"],
                // ln(3 + 2) = 1.61 per pod
                raw: vec![3, 2, 0],
                want: vec![0, 33, 100],
            },
            Case {
                name: "a node lacking a key of the pod's own constraints scores 0",
                args: Args::default(),
                nodes: vec![
                    zoned("a1", Some("a")),
                    zoned("a2", Some("a")),
                    zoned("x", None),
                ],
                existing: vec![("a1", web("web-1")), ("x", web("web-2"))],
                pod: web("new").topology_spread(spread(ZONE, 1, SCHEDULE_ANYWAY)),
                feasible: vec!["a1", "a2", "x"],
                // ln(1 + 2) = 1.10
                raw: vec![1, 1, IGNORED_NODE_SCORE],
                want: vec![100, 100, 0],
            },
            Case {
                name: "system defaults spread a ReplicaSet's pods by hostname without zones",
                args: Args::default(),
                nodes: hosts(),
                existing: vec![("h1", web("web-1")), ("h1", web("web-2"))],
                pod: web("new").owner("ReplicaSet", "web-abc"),
                feasible: vec!["h1", "h2", "h3"],
                // 2 * ln(5) + (3 - 1) = 5.22
                raw: vec![5, 2, 2],
                want: vec![40, 100, 100],
            },
            Case {
                name: "system defaults also apply to StatefulSet pods",
                args: Args::default(),
                nodes: hosts(),
                existing: vec![("h2", web("web-0"))],
                pod: web("new").owner("StatefulSet", "web"),
                feasible: vec!["h1", "h2", "h3"],
                // ln(5) + 2 = 3.61
                raw: vec![2, 4, 2],
                want: vec![100, 50, 100],
            },
            Case {
                name: "no defaults for a pod without a workload owner",
                args: Args::default(),
                nodes: hosts(),
                existing: vec![("h1", web("web-1")), ("h1", web("web-2"))],
                pod: web("new"),
                feasible: vec!["h1", "h2", "h3"],
                raw: vec![0, 0, 0],
                want: vec![0, 0, 0],
            },
            Case {
                name: "no defaults for a pod owned by a DaemonSet",
                args: Args::default(),
                nodes: hosts(),
                existing: vec![("h1", web("web-1")), ("h1", web("web-2"))],
                pod: web("new").owner("DaemonSet", "agent"),
                feasible: vec!["h1", "h2", "h3"],
                raw: vec![0, 0, 0],
                want: vec![0, 0, 0],
            },
            Case {
                name: "no defaults for a pod with constraints of its own",
                args: Args::default(),
                nodes: hosts(),
                existing: vec![("h1", web("web-1")), ("h1", web("web-2"))],
                pod: web("new")
                    .owner("ReplicaSet", "web-abc")
                    .topology_spread(spread(HOST, 1, DO_NOT_SCHEDULE)),
                feasible: vec!["h1", "h2", "h3"],
                raw: vec![0, 0, 0],
                want: vec![0, 0, 0],
            },
            Case {
                name: "List defaults: nodes lacking a key are ignored",
                args: list(spread(ZONE, 1, SCHEDULE_ANYWAY)),
                nodes: vec![
                    zoned("a1", Some("a")),
                    zoned("b1", Some("b")),
                    zoned("x", None),
                ],
                existing: vec![("a1", web("web-1"))],
                pod: web("new").owner("ReplicaSet", "web-abc"),
                feasible: vec!["a1", "b1", "x"],
                raw: vec![1, 0, IGNORED_NODE_SCORE],
                want: vec![0, 100, 0],
            },
            Case {
                name: "List defaulting with no constraints: no defaults",
                args: Args {
                    default_constraints: Vec::new(),
                    defaulting_type: DefaultingType::List,
                },
                nodes: hosts(),
                existing: vec![("h1", web("web-1"))],
                pod: web("new").owner("ReplicaSet", "web-abc"),
                feasible: vec!["h1", "h2", "h3"],
                raw: vec![0, 0, 0],
                want: vec![0, 0, 0],
            },
            Case {
                name: "all raw scores 0: every node gets the maximum",
                args: Args::default(),
                nodes: zone_nodes(),
                existing: vec![],
                pod: web("new").topology_spread(spread(ZONE, 1, SCHEDULE_ANYWAY)),
                feasible: vec!["a1", "a2", "b1"],
                raw: vec![0, 0, 0],
                want: vec![100, 100, 100],
            },
            Case {
                name: "pods on nodes outside the pod's node affinity do not count (Honor)",
                args: Args::default(),
                nodes: vec![
                    zoned("a1", Some("a")).label("pool", "x"),
                    zoned("a2", Some("a")),
                    zoned("b1", Some("b")).label("pool", "x"),
                ],
                existing: vec![("a2", web("web-1")), ("a2", web("web-2"))],
                pod: web("new")
                    .node_selector("pool", "x")
                    .topology_spread(spread(ZONE, 1, SCHEDULE_ANYWAY)),
                feasible: vec!["a1", "b1"],
                raw: vec![0, 0],
                want: vec![100, 100],
            },
            Case {
                name: "with nodeAffinityPolicy Ignore they do",
                args: Args::default(),
                nodes: vec![
                    zoned("a1", Some("a")).label("pool", "x"),
                    zoned("a2", Some("a")),
                    zoned("b1", Some("b")).label("pool", "x"),
                ],
                existing: vec![("a2", web("web-1")), ("a2", web("web-2"))],
                pod: web("new").node_selector("pool", "x").topology_spread(
                    TopologySpreadConstraint {
                        node_affinity_policy: Some(NodeInclusionPolicy::Ignore),
                        ..spread(ZONE, 1, SCHEDULE_ANYWAY)
                    },
                ),
                feasible: vec!["a1", "b1"],
                raw: vec![3, 0],
                want: vec![0, 100],
            },
        ];
        for case in cases {
            let plugin = PodTopologySpread::try_new(case.args.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let snap = snapshot_with(&case.nodes, &case.existing);
            let pod = case.pod.info();
            let feasible: Vec<&NodeInfo> = case
                .feasible
                .iter()
                .map(|n| snap.node(n).expect("feasible node exists"))
                .collect();
            let (raw, normalized) = scores(&plugin, &pod, &snap, &feasible)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(raw, case.raw, "{}: raw", case.name);
            assert_eq!(normalized, case.want, "{}: normalized", case.name);
        }
    }

    #[test]
    fn args() {
        check_typed_args(NAME, PodTopologySpread::try_new, vec![
            TypedArgsCase {
                name: "absent args: System defaulting",
                yaml: "",
                want: Ok(Args::default()),
            },
            TypedArgsCase {
                name: "a List of default constraints",
                yaml: "kind: PodTopologySpreadArgs\ndefaultingType: List\ndefaultConstraints:\n- maxSkew: 2\n  topologyKey: topology.kubernetes.io/zone\n  whenUnsatisfiable: ScheduleAnyway\n",
                want: Ok(Args {
                    default_constraints: vec![TopologySpreadConstraint {
                        label_selector: None,
                        ..spread(ZONE, 2, SCHEDULE_ANYWAY)
                    }],
                    defaulting_type: DefaultingType::List,
                }),
            },
            TypedArgsCase {
                name: "System defaulting takes no list",
                yaml: "defaultConstraints:\n- maxSkew: 2\n  topologyKey: zone\n  whenUnsatisfiable: ScheduleAnyway\n",
                want: Err("defaultingType: must be List when defaultConstraints are set"),
            },
            TypedArgsCase {
                name: "a default constraint may not have a selector",
                yaml: "defaultingType: List\ndefaultConstraints:\n- maxSkew: 2\n  topologyKey: zone\n  whenUnsatisfiable: ScheduleAnyway\n  labelSelector: {matchLabels: {app: web}}\n",
                want: Err("defaultConstraints[0].labelSelector"),
            },
            TypedArgsCase {
                name: "maxSkew at least 1",
                yaml: "defaultingType: List\ndefaultConstraints:\n- maxSkew: 0\n  topologyKey: zone\n  whenUnsatisfiable: ScheduleAnyway\n",
                want: Err("defaultConstraints[0].maxSkew"),
            },
            TypedArgsCase {
                name: "no duplicate key and action",
                yaml: "defaultingType: List\ndefaultConstraints:\n- {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n- {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n",
                want: Err("Duplicate value"),
            },
            TypedArgsCase {
                name: "unknown defaulting type",
                yaml: "defaultingType: Sometimes\n",
                want: Err("unknown variant `Sometimes`"),
            },
        ]);
    }
}
