//! InterPodAffinity: kube-scheduler's pod affinity and anti-affinity, as a filter (required
//! terms of the incoming pod, and existing pods' required anti-affinity by symmetry) and as a
//! score (preferred terms both ways, and existing pods' required affinity).
//!
//! A topology domain is a `(topologyKey, value)` pair of node labels; a node without a term's
//! topology key belongs to no domain of that term. PreFilter and PreScore count, over every
//! node of the [`Snapshot`], how many existing pods match each term per domain, so that Filter
//! and Score are map look-ups. Namespace selectors are evaluated against the labels of the
//! matched pod's namespace, as kube does after resolving selectors into namespace lists.
//!
//! Those counts are kept across cycles ([`IncrementalCache`]): consecutive pods with the same
//! terms, labels and namespace reuse the previous counts, updated with the placements made
//! since (the same update preemption applies), so a cycle costs the changes, not the cluster.

use std::sync::Arc;

use berth_model::model::{Pod, StringMap};
use serde::{Deserialize, Serialize};

use super::InvalidArgs;
use crate::framework::cache::IncrementalCache;
use crate::framework::topology::{domain_bound, intern_key, DomainId, KeyId};
use crate::framework::{
    AffinityTerm, CycleState, Filter, Fit, NodeInfo, Plugin, PluginError, PodInfo, PreFilter,
    PreFilterOutcome, PreScore, PreScoreInput, Rejection, Score, Snapshot, WeightedAffinityTerm,
    MAX_NODE_SCORE,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "InterPodAffinity";

/// The node is in a domain where an existing pod's required anti-affinity matches the pod.
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
/// The node is outside every domain holding pods that match the pod's required affinity.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// The node is in a domain holding pods that match the pod's required anti-affinity.
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";

/// Largest `hardPodAffinityWeight` kube accepts.
const MAX_HARD_POD_AFFINITY_WEIGHT: i64 = 100;

/// The plugin's `pluginConfig` args (kube's `InterPodAffinityArgs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Score weight of an existing pod's *required* affinity term that the incoming pod
    /// matches (0..=100; 0 turns that part of scoring off).
    #[serde(default = "default_hard_pod_affinity_weight")]
    pub hard_pod_affinity_weight: i64,
    /// Skip existing pods' affinity terms when scoring a pod that has no preferred inter-pod
    /// terms of its own.
    #[serde(default)]
    pub ignore_preferred_terms_of_existing_pods: bool,
}

fn default_hard_pod_affinity_weight() -> i64 {
    1
}

impl Default for Args {
    fn default() -> Self {
        Args {
            hard_pod_affinity_weight: default_hard_pod_affinity_weight(),
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

impl Args {
    /// Checks the ranges kube enforces.
    pub fn validate(&self) -> Result<(), InvalidArgs> {
        if !(0..=MAX_HARD_POD_AFFINITY_WEIGHT).contains(&self.hard_pod_affinity_weight) {
            return Err(InvalidArgs::new(
                "hardPodAffinityWeight",
                format!(
                    "{} is not in the range 0-{MAX_HARD_POD_AFFINITY_WEIGHT}",
                    self.hard_pod_affinity_weight
                ),
            ));
        }
        Ok(())
    }
}

/// The InterPodAffinity plugin (PreFilter, Filter, PreScore, Score).
#[derive(Clone, Debug, Default)]
pub struct InterPodAffinity {
    args: Args,
    /// PreFilter's counts for the latest pod key, kept up to date across cycles.
    pre_filter_cache: IncrementalCache<PreFilterKey, PreFilterState>,
    /// PreScore's weights for the latest pod key, kept up to date across cycles.
    pre_score_cache: IncrementalCache<PreScoreKey, TopologyCounts>,
}

impl InterPodAffinity {
    /// The plugin with validated args.
    pub fn try_new(args: Args) -> Result<Self, InvalidArgs> {
        args.validate()?;
        Ok(InterPodAffinity {
            args,
            ..InterPodAffinity::default()
        })
    }
}

/// What PreFilter's counts depend on in the incoming pod (the cluster aside).
#[derive(PartialEq)]
struct PreFilterKey {
    namespace: String,
    labels: StringMap,
    required_affinity: Vec<AffinityTerm>,
    required_anti_affinity: Vec<AffinityTerm>,
}

impl PreFilterKey {
    fn new(pod: &PodInfo) -> Self {
        PreFilterKey {
            namespace: pod.pod.metadata.namespace.clone(),
            labels: pod.pod.metadata.labels.clone(),
            required_affinity: pod.required_affinity().to_vec(),
            required_anti_affinity: pod.required_anti_affinity().to_vec(),
        }
    }
}

/// What PreScore's weights depend on in the incoming pod (the cluster aside).
#[derive(PartialEq)]
struct PreScoreKey {
    namespace: String,
    labels: StringMap,
    preferred_affinity: Vec<WeightedAffinityTerm>,
    preferred_anti_affinity: Vec<WeightedAffinityTerm>,
}

impl PreScoreKey {
    fn new(pod: &PodInfo) -> Self {
        PreScoreKey {
            namespace: pod.pod.metadata.namespace.clone(),
            labels: pod.pod.metadata.labels.clone(),
            preferred_affinity: pod.preferred_affinity().to_vec(),
            preferred_anti_affinity: pod.preferred_anti_affinity().to_vec(),
        }
    }
}

/// The plugin can sit behind `Arc<dyn Trait>` and cross threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<InterPodAffinity>();
};

/// Numbers per topology domain: per label key (interned, [`crate::framework::topology`]),
/// a dense array indexed by the domain's number. A key whose numbers are all zero is
/// dropped, so an empty list means no domain holds anything. Shared copy-on-write: a cycle's
/// copy of the cached counts costs a reference count, and only preemption's changes copy
/// them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct TopologyCounts(Arc<Vec<KeyCounts>>);

/// The numbers of one key's domains.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyCounts {
    key: KeyId,
    counts: Vec<i64>,
    /// How many of `counts` are not zero.
    nonzero: usize,
}

impl TopologyCounts {
    /// Adds `delta` to the node's domain of `key`, if the node has the key.
    fn add(&mut self, key: KeyId, node: &NodeInfo, delta: i64) {
        if delta == 0 {
            return;
        }
        let Some(domain) = node.topology.domain(key) else {
            return;
        };
        let keys = Arc::make_mut(&mut self.0);
        let i = match keys.iter().position(|k| k.key == key) {
            Some(i) => i,
            None => {
                keys.push(KeyCounts {
                    key,
                    counts: vec![0; domain_bound(key)],
                    nonzero: 0,
                });
                keys.len() - 1
            }
        };
        let entry = &mut keys[i];
        let d = domain as usize;
        if d >= entry.counts.len() {
            entry.counts.resize(d + 1, 0);
        }
        let count = &mut entry.counts[d];
        let was_zero = *count == 0;
        *count += delta;
        match (was_zero, *count == 0) {
            (true, false) => entry.nonzero += 1,
            (false, true) => entry.nonzero -= 1,
            _ => {}
        }
        if entry.nonzero == 0 {
            keys.swap_remove(i);
        }
    }

    /// The number of `domain` of `key`.
    #[inline]
    fn get(&self, key: KeyId, domain: DomainId) -> i64 {
        self.0
            .iter()
            .find(|k| k.key == key)
            .and_then(|k| k.counts.get(domain as usize).copied())
            .unwrap_or(0)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a domain the node belongs to has a positive number.
    #[inline]
    fn any_positive_on(&self, node: &NodeInfo) -> bool {
        self.0.iter().any(|k| {
            node.topology
                .domain(k.key)
                .and_then(|d| k.counts.get(d as usize))
                .is_some_and(|&n| n > 0)
        })
    }

    /// Sum of the numbers of the domains the node belongs to.
    fn sum_on(&self, node: &NodeInfo) -> i64 {
        self.0
            .iter()
            .filter_map(|k| {
                let domain = node.topology.domain(k.key)?;
                k.counts.get(domain as usize).copied()
            })
            .sum()
    }

    /// Adds `delta` to the node's domain of each term that `target` matches (anti-affinity:
    /// each term counts on its own).
    fn add_each_matching(
        &mut self,
        terms: &[AffinityTerm],
        target: &Pod,
        target_ns_labels: Option<&StringMap>,
        node: &NodeInfo,
        delta: i64,
    ) {
        for term in terms {
            if term.matches(target, target_ns_labels) {
                self.add(intern_key(&term.topology_key), node, delta);
            }
        }
    }

    /// Adds `delta` to the node's domain of every term, if `target` matches all of them
    /// (affinity: a pod counts only when it satisfies the whole set of terms).
    fn add_if_all_match(
        &mut self,
        terms: &[AffinityTerm],
        target: &Pod,
        target_ns_labels: Option<&StringMap>,
        node: &NodeInfo,
        delta: i64,
    ) {
        if !matches_all(terms, target, target_ns_labels) {
            return;
        }
        for term in terms {
            self.add(intern_key(&term.topology_key), node, delta);
        }
    }

    /// Adds `sign * weight` to the node's domain of each weighted term that `target` matches.
    fn add_weighted(
        &mut self,
        terms: &[WeightedAffinityTerm],
        target: &Pod,
        target_ns_labels: Option<&StringMap>,
        node: &NodeInfo,
        sign: i64,
    ) {
        for t in terms {
            if t.term.matches(target, target_ns_labels) {
                self.add(intern_key(&t.term.topology_key), node, sign * t.weight);
            }
        }
    }
}

/// The interned keys of `terms`, in order.
fn term_keys(terms: &[AffinityTerm]) -> Vec<KeyId> {
    terms.iter().map(|t| intern_key(&t.topology_key)).collect()
}

/// Whether `pod` matches every term; false for no terms.
fn matches_all(terms: &[AffinityTerm], pod: &Pod, ns_labels: Option<&StringMap>) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, ns_labels))
}

/// What PreFilter computes for Filter.
#[derive(Clone, Debug, Default)]
struct PreFilterState {
    /// Domains where existing pods' required anti-affinity terms match the incoming pod.
    existing_anti_affinity: TopologyCounts,
    /// Existing pods that match all the incoming pod's required affinity terms, per domain.
    affinity: TopologyCounts,
    /// Existing pods that match each of the incoming pod's required anti-affinity terms.
    anti_affinity: TopologyCounts,
    /// Labels of the incoming pod's namespace.
    namespace_labels: Option<StringMap>,
    /// Whether the incoming pod matches all its own required affinity terms.
    matches_own_affinity: bool,
    /// The interned topology keys of the incoming pod's required affinity terms.
    affinity_keys: Vec<KeyId>,
    /// The interned topology keys of the incoming pod's required anti-affinity terms.
    anti_affinity_keys: Vec<KeyId>,
}

impl PreFilterState {
    /// Accounts for `other` being placed on (`delta` 1) or leaving (`delta` -1) `node`.
    fn update(
        &mut self,
        pod: &PodInfo,
        other: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
        delta: i64,
    ) {
        self.existing_anti_affinity.add_each_matching(
            other.required_anti_affinity(),
            &pod.pod,
            self.namespace_labels.as_ref(),
            node,
            delta,
        );
        let other_ns_labels = snapshot.namespace_labels(&other.pod.metadata.namespace);
        self.affinity.add_if_all_match(
            pod.required_affinity(),
            &other.pod,
            other_ns_labels,
            node,
            delta,
        );
        self.anti_affinity.add_each_matching(
            pod.required_anti_affinity(),
            &other.pod,
            other_ns_labels,
            node,
            delta,
        );
    }

    /// The incoming pod's required affinity holds on the node: every term's topology key is
    /// on the node and every term's domain holds a matching pod, or no pod matches anywhere
    /// and the pod matches its own terms (the first pod of a group).
    fn satisfies_pod_affinity(&self, node: &NodeInfo) -> bool {
        let mut pods_exist = true;
        for &key in &self.affinity_keys {
            let Some(domain) = node.topology.domain(key) else {
                return false;
            };
            if self.affinity.get(key, domain) <= 0 {
                pods_exist = false;
            }
        }
        pods_exist || (self.affinity.is_empty() && self.matches_own_affinity)
    }

    /// No domain of the node holds a pod the incoming pod's anti-affinity matches.
    fn satisfies_pod_anti_affinity(&self, node: &NodeInfo) -> bool {
        self.anti_affinity.is_empty()
            || self.anti_affinity_keys.iter().all(|&key| {
                node.topology
                    .domain(key)
                    .is_none_or(|domain| self.anti_affinity.get(key, domain) <= 0)
            })
    }

    /// No existing pod's required anti-affinity covers a domain of the node.
    fn satisfies_existing_anti_affinity(&self, node: &NodeInfo) -> bool {
        !self.existing_anti_affinity.any_positive_on(node)
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl InterPodAffinity {
    /// PreFilter's counts computed from scratch, over every placed pod.
    fn compute_pre_filter(pod: &PodInfo, snapshot: &Snapshot) -> PreFilterState {
        let namespace_labels = snapshot
            .namespace_labels(&pod.pod.metadata.namespace)
            .cloned();
        let mut s = PreFilterState {
            matches_own_affinity: matches_all(
                pod.required_affinity(),
                &pod.pod,
                namespace_labels.as_ref(),
            ),
            namespace_labels,
            affinity_keys: term_keys(pod.required_affinity()),
            anti_affinity_keys: term_keys(pod.required_anti_affinity()),
            ..PreFilterState::default()
        };
        if snapshot.has_pods_with_required_anti_affinity() {
            for node in snapshot.nodes() {
                for existing in &node.pods_with_required_anti_affinity {
                    s.existing_anti_affinity.add_each_matching(
                        existing.required_anti_affinity(),
                        &pod.pod,
                        s.namespace_labels.as_ref(),
                        node,
                        1,
                    );
                }
            }
        }
        let has_required_terms =
            !(pod.required_affinity().is_empty() && pod.required_anti_affinity().is_empty());
        if has_required_terms {
            for node in snapshot.nodes() {
                for existing in &node.pods {
                    let ns_labels = snapshot.namespace_labels(&existing.pod.metadata.namespace);
                    s.affinity.add_if_all_match(
                        pod.required_affinity(),
                        &existing.pod,
                        ns_labels,
                        node,
                        1,
                    );
                    s.anti_affinity.add_each_matching(
                        pod.required_anti_affinity(),
                        &existing.pod,
                        ns_labels,
                        node,
                        1,
                    );
                }
            }
        }
        s
    }
}

impl PreFilter for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<PreFilterOutcome, PluginError> {
        let has_required_terms =
            !(pod.required_affinity().is_empty() && pod.required_anti_affinity().is_empty());
        // Nothing to count at all: no cache work either.
        if !has_required_terms && !snapshot.has_pods_with_required_anti_affinity() {
            state.skip_filter(NAME);
            return Ok(PreFilterOutcome::AllNodes);
        }
        let cached = self.pre_filter_cache.get(
            snapshot,
            PreFilterKey::new(pod),
            || Self::compute_pre_filter(pod, snapshot),
            |s, change, node| s.update(pod, &change.pod, node, snapshot, change.delta),
        );
        // Like kube's Skip: with nothing to check, no state is kept and Filter (and the
        // preemption updates) have nothing to do.
        if cached.existing_anti_affinity.is_empty() && !has_required_terms {
            state.skip_filter(NAME);
            return Ok(PreFilterOutcome::AllNodes);
        }
        // A copy of the counts' handles; preemption's updates copy on write.
        state.insert(PreFilterState::clone(&cached));
        Ok(PreFilterOutcome::AllNodes)
    }

    fn add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) {
        if let Some(s) = state.get_mut::<PreFilterState>() {
            s.update(pod, added, node, snapshot, 1);
        }
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) {
        if let Some(s) = state.get_mut::<PreFilterState>() {
            s.update(pod, removed, node, snapshot, -1);
        }
    }
}

impl Filter for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        let Some(s) = state.get::<PreFilterState>() else {
            return Fit::Yes;
        };
        // kube's order: the pod's own affinity (no eviction can create a matching pod), then
        // its anti-affinity, then existing pods' anti-affinity (evicting them may help).
        let rejection = if !s.satisfies_pod_affinity(node) {
            Rejection::unresolvable(NAME, REASON_AFFINITY)
        } else if !s.satisfies_pod_anti_affinity(node) {
            Rejection::unschedulable(NAME, REASON_ANTI_AFFINITY)
        } else if !s.satisfies_existing_anti_affinity(node) {
            Rejection::unschedulable(NAME, REASON_EXISTING_ANTI_AFFINITY)
        } else {
            return Fit::Yes;
        };
        tracing::trace!(pod = %pod.key(), node = node.name(), reason = %rejection.reasons[0], "inter-pod affinity rejects node");
        Fit::No(rejection)
    }
}

/// What PreScore computes for Score: the summed weight per topology domain.
#[derive(Clone, Debug, Default)]
struct PreScoreState {
    topology_score: TopologyCounts,
}

impl InterPodAffinity {
    /// Adds to `scores` what one existing pod (on `node`) contributes,
    /// times `delta` (1 for a pod placed, -1 for a pod that left).
    #[allow(clippy::too_many_arguments)] // The pods, their namespaces' labels, and the node.
    fn score_existing_pod(
        &self,
        scores: &mut TopologyCounts,
        pod: &PodInfo,
        pod_ns_labels: Option<&StringMap>,
        existing: &PodInfo,
        existing_ns_labels: Option<&StringMap>,
        node: &NodeInfo,
        delta: i64,
    ) {
        if node.labels().is_empty() {
            return;
        }
        // The incoming pod's preferences about the existing pod.
        scores.add_weighted(
            pod.preferred_affinity(),
            &existing.pod,
            existing_ns_labels,
            node,
            delta,
        );
        scores.add_weighted(
            pod.preferred_anti_affinity(),
            &existing.pod,
            existing_ns_labels,
            node,
            -delta,
        );
        // The existing pod's terms about the incoming pod (symmetry).
        let hard_weight = self.args.hard_pod_affinity_weight;
        if hard_weight > 0 {
            for term in existing.required_affinity() {
                if term.matches(&pod.pod, pod_ns_labels) {
                    scores.add(intern_key(&term.topology_key), node, hard_weight * delta);
                }
            }
        }
        scores.add_weighted(
            existing.preferred_affinity(),
            &pod.pod,
            pod_ns_labels,
            node,
            delta,
        );
        scores.add_weighted(
            existing.preferred_anti_affinity(),
            &pod.pod,
            pod_ns_labels,
            node,
            -delta,
        );
    }
}

impl PreScore for InterPodAffinity {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let PreScoreInput {
            pod,
            snapshot,
            feasible,
        } = *input;
        if feasible.is_empty() {
            return Ok(());
        }
        let has_preferences =
            !(pod.preferred_affinity().is_empty() && pod.preferred_anti_affinity().is_empty());
        if self.args.ignore_preferred_terms_of_existing_pods && !has_preferences {
            state.skip_score(NAME);
            return Ok(());
        }
        // Without preferences of its own, only existing pods' terms can score the pod.
        if !has_preferences && !snapshot.has_pods_with_affinity() {
            state.skip_score(NAME);
            return Ok(());
        }
        let pod_ns_labels = snapshot.namespace_labels(&pod.pod.metadata.namespace);
        // Every node counts, not only the feasible ones, so the weights are a function of
        // the placed pods and can be kept up to date across cycles. A pod without affinity
        // terms contributes nothing unless the incoming pod has preferences, so applying
        // every placement change equals scanning `pods_with_affinity` only.
        let compute = || {
            let mut scores = TopologyCounts::default();
            for node in snapshot.nodes() {
                let existing_pods = if has_preferences {
                    &node.pods
                } else {
                    &node.pods_with_affinity
                };
                for existing in existing_pods {
                    let existing_ns_labels =
                        snapshot.namespace_labels(&existing.pod.metadata.namespace);
                    self.score_existing_pod(
                        &mut scores,
                        pod,
                        pod_ns_labels,
                        existing,
                        existing_ns_labels,
                        node,
                        1,
                    );
                }
            }
            scores
        };
        let scores = self.pre_score_cache.get(
            snapshot,
            PreScoreKey::new(pod),
            compute,
            |scores, change, node| {
                let existing_ns_labels =
                    snapshot.namespace_labels(&change.pod.pod.metadata.namespace);
                self.score_existing_pod(
                    scores,
                    pod,
                    pod_ns_labels,
                    &change.pod,
                    existing_ns_labels,
                    node,
                    change.delta,
                );
            },
        );
        if !scores.is_empty() {
            state.insert(PreScoreState {
                topology_score: TopologyCounts::clone(&scores),
            });
        }
        Ok(())
    }
}

impl Score for InterPodAffinity {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> i64 {
        state
            .get::<PreScoreState>()
            .map_or(0, |s| s.topology_score.sum_on(node))
    }

    /// kube's min-max scaling into `0..=MAX_NODE_SCORE`, in floating point and truncated as
    /// kube does; every node gets 0 when all raw scores are equal.
    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) {
        if state.get::<PreScoreState>().is_none() {
            return;
        }
        let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
            return;
        };
        let spread = max - min;
        for score in scores.iter_mut() {
            *score = if spread > 0 {
                (MAX_NODE_SCORE as f64 * ((*score - min) as f64 / spread as f64)) as i64
            } else {
                0
            };
        }
    }
}

#[cfg(test)]
mod tests {

    use berth_model::model::{LabelSelector, PodAffinityTerm};

    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{
        check_typed_args, filter_verdicts, scores, snapshot_with, zoned, Info, NodeBuilder,
        PodBuilder, TypedArgsCase, Verdict,
    };

    const ZONE: &str = "topology.kubernetes.io/zone";
    const HOST: &str = "kubernetes.io/hostname";

    const AFF: Verdict = Some((REASON_AFFINITY, Code::UnschedulableAndUnresolvable));
    const ANTI: Verdict = Some((REASON_ANTI_AFFINITY, Code::Unschedulable));
    const EXISTING: Verdict = Some((REASON_EXISTING_ANTI_AFFINITY, Code::Unschedulable));

    fn labels(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
        LabelSelector {
            match_labels: labels(pairs),
            ..LabelSelector::default()
        }
    }

    /// A term about pods labelled `pairs`, in the owner's namespace.
    fn term(pairs: &[(&str, &str)], topology_key: &str) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: Some(selector(pairs)),
            topology_key: topology_key.to_string(),
            ..PodAffinityTerm::default()
        }
    }

    /// n1 and n2 in zone a, n3 in zone b.
    fn three_nodes() -> Vec<NodeBuilder> {
        vec![
            zoned("n1", Some("a")),
            zoned("n2", Some("a")),
            zoned("n3", Some("b")),
        ]
    }

    /// The incoming pod of most cases: `default/web`, labelled `app=web`.
    fn web() -> PodBuilder {
        PodBuilder::new("web").label("app", "web")
    }

    /// An existing pod labelled `app=db` in `default`.
    fn db(name: &str) -> PodBuilder {
        PodBuilder::new(name).label("app", "db")
    }

    fn snapshot(
        namespaces: &[(&str, &[(&str, &str)])],
        nodes: &[NodeBuilder],
        existing: &[(&str, PodBuilder)],
    ) -> Snapshot {
        let mut snap = snapshot_with(nodes, existing);
        for (ns, pairs) in namespaces {
            snap.set_namespace(ns, labels(pairs));
        }
        snap
    }

    /// Filter's verdict on every node of the snapshot, in order.
    fn run_filter(
        plugin: &InterPodAffinity,
        state: &CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
    ) -> Vec<Verdict> {
        let known = [
            REASON_AFFINITY,
            REASON_ANTI_AFFINITY,
            REASON_EXISTING_ANTI_AFFINITY,
        ];
        filter_verdicts(plugin, state, pod, snap, &known)
    }

    #[test]
    fn filter() {
        struct Case {
            name: &'static str,
            namespaces: Vec<(&'static str, &'static [(&'static str, &'static str)])>,
            nodes: Vec<NodeBuilder>,
            existing: Vec<(&'static str, PodBuilder)>,
            pod: PodBuilder,
            want: [Verdict; 3],
        }
        let cases = vec![
            Case {
                name: "no terms anywhere: every node fits",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n1", db("db-1"))],
                pod: web(),
                want: [None, None, None],
            },
            Case {
                name: "required affinity holds in the zone of a matching pod",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n1", db("db-1"))],
                pod: web().required_pod_affinity(term(&[("app", "db")], ZONE)),
                want: [None, None, AFF],
            },
            Case {
                name: "affinity sees only the pod's own namespace by default",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n1", db("db-1").namespace("other"))],
                pod: web().required_pod_affinity(term(&[("app", "db")], ZONE)),
                want: [AFF, AFF, AFF],
            },
            Case {
                name: "namespaceSelector {} sees every namespace",
                namespaces: vec![("other", &[])],
                nodes: three_nodes(),
                existing: vec![("n1", db("db-1").namespace("other"))],
                pod: web().required_pod_affinity(PodAffinityTerm {
                    namespace_selector: Some(LabelSelector::default()),
                    ..term(&[("app", "db")], ZONE)
                }),
                want: [None, None, AFF],
            },
            Case {
                name: "namespaceSelector matches the namespace's labels",
                namespaces: vec![("other", &[("team", "x")])],
                nodes: three_nodes(),
                existing: vec![("n3", db("db-1").namespace("other"))],
                pod: web().required_pod_affinity(PodAffinityTerm {
                    namespace_selector: Some(selector(&[("team", "x")])),
                    ..term(&[("app", "db")], ZONE)
                }),
                want: [AFF, AFF, None],
            },
            Case {
                name: "namespaceSelector not matching the namespace's labels",
                namespaces: vec![("other", &[("team", "y")])],
                nodes: three_nodes(),
                existing: vec![("n3", db("db-1").namespace("other"))],
                pod: web().required_pod_affinity(PodAffinityTerm {
                    namespace_selector: Some(selector(&[("team", "x")])),
                    ..term(&[("app", "db")], ZONE)
                }),
                want: [AFF, AFF, AFF],
            },
            Case {
                name: "explicit namespaces list",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n3", db("db-1").namespace("other"))],
                pod: web().required_pod_affinity(PodAffinityTerm {
                    namespaces: vec!["other".into()],
                    ..term(&[("app", "db")], ZONE)
                }),
                want: [AFF, AFF, None],
            },
            Case {
                name: "first pod of a group may go wherever the topology key exists",
                namespaces: vec![],
                nodes: vec![
                    zoned("n1", Some("a")),
                    zoned("n2", Some("b")),
                    zoned("n3", None),
                ],
                existing: vec![],
                pod: web().required_pod_affinity(term(&[("app", "web")], ZONE)),
                want: [None, None, AFF],
            },
            Case {
                name: "a pod that does not match its own terms is not a group's first",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![],
                pod: web().required_pod_affinity(term(&[("app", "db")], ZONE)),
                want: [AFF, AFF, AFF],
            },
            Case {
                name: "once a group member exists, only its domain fits",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n3", PodBuilder::new("web-0").label("app", "web"))],
                pod: web().required_pod_affinity(term(&[("app", "web")], ZONE)),
                want: [AFF, AFF, None],
            },
            Case {
                name: "a node without the topology key is in no domain",
                namespaces: vec![],
                nodes: vec![
                    zoned("n1", None),
                    zoned("n2", Some("a")),
                    zoned("n3", Some("b")),
                ],
                existing: vec![("n1", db("db-1"))],
                pod: web().required_pod_affinity(term(&[("app", "db")], ZONE)),
                want: [AFF, AFF, AFF],
            },
            Case {
                name: "an existing pod counts only if it matches all affinity terms",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![
                    ("n1", db("both").label("tier", "back")),
                    ("n3", db("db-only")),
                ],
                pod: web()
                    .required_pod_affinity(term(&[("app", "db")], ZONE))
                    .required_pod_affinity(term(&[("tier", "back")], HOST)),
                want: [None, AFF, AFF],
            },
            Case {
                name: "required anti-affinity of the incoming pod, per host",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n1", db("db-1"))],
                pod: web().required_pod_anti_affinity(term(&[("app", "db")], HOST)),
                want: [ANTI, None, None],
            },
            Case {
                name: "required anti-affinity of the incoming pod, per zone",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n2", db("db-1"))],
                pod: web().required_pod_anti_affinity(term(&[("app", "db")], ZONE)),
                want: [ANTI, ANTI, None],
            },
            Case {
                name: "anti-affinity: a node without the topology key is in no domain",
                namespaces: vec![],
                nodes: vec![
                    zoned("n1", Some("a")),
                    zoned("n2", None),
                    zoned("n3", Some("b")),
                ],
                existing: vec![("n2", db("db-1")), ("n3", db("db-2"))],
                pod: web().required_pod_anti_affinity(term(&[("app", "db")], ZONE)),
                want: [None, None, ANTI],
            },
            Case {
                name: "existing pods' anti-affinity applies to the incoming pod (symmetry)",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![(
                    "n1",
                    db("db-1").required_pod_anti_affinity(term(&[("app", "web")], ZONE)),
                )],
                pod: web(),
                want: [EXISTING, EXISTING, None],
            },
            Case {
                name: "existing pods' anti-affinity is scoped to their own namespace",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![(
                    "n1",
                    db("db-1")
                        .namespace("other")
                        .required_pod_anti_affinity(term(&[("app", "web")], ZONE)),
                )],
                pod: web(),
                want: [None, None, None],
            },
            Case {
                name: "existing pods' anti-affinity with namespaceSelector {}",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![(
                    "n3",
                    db("db-1")
                        .namespace("other")
                        .required_pod_anti_affinity(PodAffinityTerm {
                            namespace_selector: Some(LabelSelector::default()),
                            ..term(&[("app", "web")], HOST)
                        }),
                )],
                pod: web(),
                want: [None, None, EXISTING],
            },
            Case {
                name: "existing pods' required affinity never filters",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![(
                    "n1",
                    db("db-1").required_pod_affinity(term(&[("app", "cache")], ZONE)),
                )],
                pod: web(),
                want: [None, None, None],
            },
            Case {
                name: "affinity is checked before anti-affinity",
                namespaces: vec![],
                nodes: three_nodes(),
                existing: vec![("n1", db("db-1"))],
                pod: web()
                    .required_pod_affinity(term(&[("app", "db")], ZONE))
                    .required_pod_anti_affinity(term(&[("app", "db")], HOST)),
                want: [ANTI, None, AFF],
            },
        ];
        let plugin = InterPodAffinity::default();
        for case in cases {
            let snap = snapshot(&case.namespaces, &case.nodes, &case.existing);
            let pod = case.pod.info();
            let mut state = CycleState::new();
            let outcome = plugin
                .pre_filter(&mut state, &pod, &snap)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(outcome, PreFilterOutcome::AllNodes, "{}", case.name);
            let got = run_filter(&plugin, &state, &pod, &snap);
            assert_eq!(got, case.want.to_vec(), "{}", case.name);
        }
    }

    /// Preemption's hypothetical removals and additions change the verdict.
    #[test]
    fn add_and_remove_pod() {
        enum Step {
            Remove(&'static str, &'static str),
            Add(&'static str, Box<PodBuilder>),
        }
        struct Case {
            name: &'static str,
            existing: Vec<(&'static str, PodBuilder)>,
            pod: PodBuilder,
            before: [Verdict; 3],
            step: Step,
            after: [Verdict; 3],
        }
        let cases = vec![
            Case {
                name: "removing the pod the anti-affinity matches frees its node",
                existing: vec![("n1", db("db-1"))],
                pod: web().required_pod_anti_affinity(term(&[("app", "db")], HOST)),
                before: [ANTI, None, None],
                step: Step::Remove("n1", "db-1"),
                after: [None, None, None],
            },
            Case {
                name: "removing an existing pod with anti-affinity frees its zone",
                existing: vec![(
                    "n1",
                    db("db-1").required_pod_anti_affinity(term(&[("app", "web")], ZONE)),
                )],
                pod: web(),
                before: [EXISTING, EXISTING, None],
                step: Step::Remove("n1", "db-1"),
                after: [None, None, None],
            },
            Case {
                name: "adding a pod with anti-affinity to the incoming pod closes its zone",
                existing: vec![(
                    "n1",
                    db("db-1").required_pod_anti_affinity(term(&[("app", "web")], HOST)),
                )],
                pod: web(),
                before: [EXISTING, None, None],
                step: Step::Add(
                    "n3",
                    Box::new(db("db-2").required_pod_anti_affinity(term(&[("app", "web")], ZONE))),
                ),
                after: [EXISTING, None, EXISTING],
            },
            Case {
                name: "adding a matching pod opens its zone to the affinity",
                existing: vec![("n3", db("db-1"))],
                pod: web().required_pod_affinity(term(&[("app", "db")], ZONE)),
                before: [AFF, AFF, None],
                step: Step::Add("n1", Box::new(db("db-2"))),
                after: [None, None, None],
            },
            Case {
                name: "removing the only member brings back the first-of-group rule",
                existing: vec![("n3", PodBuilder::new("web-0").label("app", "web"))],
                pod: web().required_pod_affinity(term(&[("app", "web")], ZONE)),
                before: [AFF, AFF, None],
                step: Step::Remove("n3", "web-0"),
                after: [None, None, None],
            },
        ];
        let plugin = InterPodAffinity::default();
        for case in cases {
            let snap = snapshot(&[], &three_nodes(), &case.existing);
            let pod = case.pod.info();
            let mut state = CycleState::new();
            plugin
                .pre_filter(&mut state, &pod, &snap)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let before = run_filter(&plugin, &state, &pod, &snap);
            assert_eq!(before, case.before.to_vec(), "{}: before", case.name);
            match case.step {
                Step::Remove(node_name, pod_name) => {
                    let node = snap.node(node_name).expect("node");
                    let removed = node
                        .pods
                        .iter()
                        .find(|p| p.pod.metadata.name == pod_name)
                        .expect("pod on node")
                        .clone();
                    plugin.remove_pod(&mut state, &pod, &removed, node, &snap);
                }
                Step::Add(node_name, p) => {
                    let node = snap.node(node_name).expect("node");
                    plugin.add_pod(&mut state, &pod, &p.info(), node, &snap);
                }
            }
            let after = run_filter(&plugin, &state, &pod, &snap);
            assert_eq!(after, case.after.to_vec(), "{}: after", case.name);
        }
    }

    /// Adding then removing the same pod restores every count exactly.
    #[test]
    fn add_then_remove_restores_state() {
        let plugin = InterPodAffinity::default();
        let snap = snapshot(&[], &three_nodes(), &[("n1", db("db-1"))]);
        let pod = web()
            .required_pod_affinity(term(&[("app", "db")], ZONE))
            .required_pod_anti_affinity(term(&[("app", "db")], HOST))
            .info();
        let mut state = CycleState::new();
        plugin
            .pre_filter(&mut state, &pod, &snap)
            .expect("prefilter");
        let initial = state.get::<PreFilterState>().expect("state").clone();
        let other = db("db-2")
            .required_pod_anti_affinity(term(&[("app", "web")], ZONE))
            .info();
        let node = snap.node("n3").expect("node");
        plugin.add_pod(&mut state, &pod, &other, node, &snap);
        let added = state.get::<PreFilterState>().expect("state").clone();
        assert_ne!(
            added.affinity, initial.affinity,
            "add changes affinity counts"
        );
        assert_ne!(
            added.anti_affinity, initial.anti_affinity,
            "add changes anti counts"
        );
        assert_ne!(
            added.existing_anti_affinity, initial.existing_anti_affinity,
            "add changes existing anti-affinity counts"
        );
        plugin.remove_pod(&mut state, &pod, &other, node, &snap);
        let restored = state.get::<PreFilterState>().expect("state");
        assert_eq!(restored.affinity, initial.affinity);
        assert_eq!(restored.anti_affinity, initial.anti_affinity);
        assert_eq!(
            restored.existing_anti_affinity,
            initial.existing_anti_affinity
        );
    }

    #[test]
    fn score() {
        struct Case {
            name: &'static str,
            args: Args,
            namespaces: Vec<(&'static str, &'static [(&'static str, &'static str)])>,
            existing: Vec<(&'static str, PodBuilder)>,
            pod: PodBuilder,
            /// Raw scores of n1, n2, n3.
            raw: [i64; 3],
            /// Normalized scores of n1, n2, n3.
            want: [i64; 3],
        }
        let cases = vec![
            Case {
                name: "no terms: every node scores 0",
                args: Args::default(),
                namespaces: vec![],
                existing: vec![("n1", db("db-1"))],
                pod: web(),
                raw: [0, 0, 0],
                want: [0, 0, 0],
            },
            Case {
                name: "preferred affinity adds its weight over the zone",
                args: Args::default(),
                namespaces: vec![],
                existing: vec![("n1", db("db-1"))],
                pod: web().preferred_pod_affinity(5, term(&[("app", "db")], ZONE)),
                raw: [5, 5, 0],
                want: [100, 100, 0],
            },
            Case {
                name: "preferred anti-affinity subtracts its weight",
                args: Args::default(),
                namespaces: vec![],
                existing: vec![("n1", db("db-1"))],
                pod: web().preferred_pod_anti_affinity(7, term(&[("app", "db")], HOST)),
                raw: [-7, 0, 0],
                want: [0, 100, 100],
            },
            Case {
                name: "weights add up across terms and pods",
                args: Args::default(),
                namespaces: vec![],
                existing: vec![("n1", db("db-1")), ("n3", db("db-2")), ("n3", db("db-3"))],
                pod: web()
                    .preferred_pod_affinity(10, term(&[("app", "db")], ZONE))
                    .preferred_pod_anti_affinity(4, term(&[("app", "db")], HOST)),
                raw: [10 - 4, 10, 20 - 8],
                want: [0, 66, 100],
            },
            Case {
                name: "existing pods' preferred terms about the incoming pod count (symmetry)",
                args: Args::default(),
                namespaces: vec![],
                existing: vec![
                    (
                        "n1",
                        db("db-1").preferred_pod_affinity(3, term(&[("app", "web")], ZONE)),
                    ),
                    (
                        "n3",
                        db("db-2").preferred_pod_anti_affinity(2, term(&[("app", "web")], ZONE)),
                    ),
                ],
                pod: web(),
                raw: [3, 3, -2],
                want: [100, 100, 0],
            },
            Case {
                name: "existing pods' required affinity counts 1 by default",
                args: Args::default(),
                namespaces: vec![],
                existing: vec![(
                    "n1",
                    db("db-1").required_pod_affinity(term(&[("app", "web")], ZONE)),
                )],
                pod: web(),
                raw: [1, 1, 0],
                want: [100, 100, 0],
            },
            Case {
                name: "existing pods' required affinity counts hardPodAffinityWeight",
                args: Args {
                    hard_pod_affinity_weight: 4,
                    ..Args::default()
                },
                namespaces: vec![],
                existing: vec![(
                    "n2",
                    db("db-1").required_pod_affinity(term(&[("app", "web")], HOST)),
                )],
                pod: web(),
                raw: [0, 4, 0],
                want: [0, 100, 0],
            },
            Case {
                name: "hardPodAffinityWeight 0 ignores existing pods' required affinity",
                args: Args {
                    hard_pod_affinity_weight: 0,
                    ..Args::default()
                },
                namespaces: vec![],
                existing: vec![(
                    "n2",
                    db("db-1").required_pod_affinity(term(&[("app", "web")], HOST)),
                )],
                pod: web(),
                raw: [0, 0, 0],
                want: [0, 0, 0],
            },
            Case {
                name: "ignorePreferredTermsOfExistingPods skips a pod without preferences",
                args: Args {
                    ignore_preferred_terms_of_existing_pods: true,
                    ..Args::default()
                },
                namespaces: vec![],
                existing: vec![(
                    "n1",
                    db("db-1").preferred_pod_affinity(3, term(&[("app", "web")], ZONE)),
                )],
                pod: web(),
                raw: [0, 0, 0],
                want: [0, 0, 0],
            },
            Case {
                name: "ignorePreferredTermsOfExistingPods keeps them for a pod with preferences",
                args: Args {
                    ignore_preferred_terms_of_existing_pods: true,
                    ..Args::default()
                },
                namespaces: vec![],
                existing: vec![(
                    "n1",
                    db("db-1").preferred_pod_affinity(3, term(&[("app", "web")], ZONE)),
                )],
                pod: web().preferred_pod_affinity(1, term(&[("app", "db")], HOST)),
                raw: [4, 3, 0],
                want: [100, 75, 0],
            },
            Case {
                name: "preferred terms see other namespaces only through their selectors",
                args: Args::default(),
                namespaces: vec![("other", &[("team", "x")])],
                existing: vec![
                    ("n1", db("db-1").namespace("other")),
                    ("n3", db("db-2").namespace("other")),
                ],
                pod: web()
                    .preferred_pod_affinity(
                        6,
                        PodAffinityTerm {
                            namespace_selector: Some(selector(&[("team", "x")])),
                            ..term(&[("app", "db")], HOST)
                        },
                    )
                    .preferred_pod_affinity(9, term(&[("app", "db")], ZONE)),
                raw: [6, 0, 6],
                want: [100, 0, 100],
            },
        ];
        for case in cases {
            let plugin = InterPodAffinity::try_new(case.args.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let snap = snapshot(&case.namespaces, &three_nodes(), &case.existing);
            let pod = case.pod.info();
            let feasible: Vec<&NodeInfo> = snap.nodes().iter().collect();
            let (raw, normalized) = scores(&plugin, &pod, &snap, &feasible)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(raw, case.raw.to_vec(), "{}: raw", case.name);
            assert_eq!(normalized, case.want.to_vec(), "{}: normalized", case.name);
        }
    }

    #[test]
    fn normalize_matches_kube() {
        struct Case {
            name: &'static str,
            raw: Vec<i64>,
            want: Vec<i64>,
        }
        let cases = vec![
            Case {
                name: "min-max scaling",
                raw: vec![-3, 2, 7],
                want: vec![0, 50, 100],
            },
            Case {
                name: "100 * 0.29 truncates to 28 in floating point, as in kube",
                raw: vec![0, 29, 100],
                want: vec![0, 28, 100],
            },
            Case {
                name: "equal scores all become 0",
                raw: vec![4, 4],
                want: vec![0, 0],
            },
        ];
        let plugin = InterPodAffinity::default();
        let mut state = CycleState::new();
        let mut topology_score = TopologyCounts::default();
        let node = NodeBuilder::new("n1").label(ZONE, "a").info();
        topology_score.add(intern_key(ZONE), &node, 1);
        state.insert(PreScoreState { topology_score });
        let pod = web().info();
        for case in cases {
            let mut scores = case.raw.clone();
            plugin.normalize(&state, &pod, &mut scores);
            assert_eq!(scores, case.want, "{}", case.name);
        }
    }

    #[test]
    fn args() {
        check_typed_args(NAME, InterPodAffinity::try_new, vec![
            TypedArgsCase {
                name: "absent args take kube's defaults",
                yaml: "",
                want: Ok(Args::default()),
            },
            TypedArgsCase {
                name: "both fields, with apiVersion and kind",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: InterPodAffinityArgs\nhardPodAffinityWeight: 7\nignorePreferredTermsOfExistingPods: true\n",
                want: Ok(Args {
                    hard_pod_affinity_weight: 7,
                    ignore_preferred_terms_of_existing_pods: true,
                }),
            },
            TypedArgsCase {
                name: "weight above 100",
                yaml: "hardPodAffinityWeight: 101\n",
                want: Err("hardPodAffinityWeight: 101 is not in the range 0-100"),
            },
            TypedArgsCase {
                name: "negative weight",
                yaml: "hardPodAffinityWeight: -1\n",
                want: Err("hardPodAffinityWeight: -1 is not in the range 0-100"),
            },
            TypedArgsCase {
                name: "unknown field",
                yaml: "hardPodAffinityWieght: 1\n",
                want: Err("unknown field `hardPodAffinityWieght`"),
            },
        ]);
    }
}
