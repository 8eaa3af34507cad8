//! NodeAffinity: a pod goes only to nodes matching its `nodeSelector` and required node
//! affinity (plus any scheduler-enforced `addedAffinity`), and prefers nodes matching its
//! weighted preferred terms. Also home of node-selector matching (kube's
//! component-helpers `nodeaffinity`), reused by preemption, DaemonSets and topology spread.

use std::collections::HashSet;

use berth_model::model::{
    Node, NodeAffinity, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PreferredSchedulingTerm, StringMap,
};
use serde::{Deserialize, Serialize};

use super::{default_normalize_score, InvalidArgs};
use crate::framework::topology::{domain_id, key_id, DomainId, KeyId};
use crate::framework::{
    CycleState, Filter, Fit, NodeInfo, Plugin, PluginError, PodInfo, PreFilter, PreFilterOutcome,
    PreScore, PreScoreInput, Rejection, Score, Snapshot, MAX_NODE_SCORE,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "NodeAffinity";

/// Filter reason when the pod's nodeSelector or required node affinity does not match.
pub const REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";

/// Filter reason when the profile's `addedAffinity` does not match.
pub const REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";

/// PreFilter reason when every required term pins the pod to an empty set of node names.
pub const REASON_CONFLICT: &str = "pod affinity terms conflict";

/// The only field `matchFields` can select on.
pub const FIELD_METADATA_NAME: &str = "metadata.name";

/// A requirement of a node selector that cannot be evaluated (kube's parse errors). A term
/// holding one never matches.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct SelectorError {
    /// Where the requirement is (`nodeSelectorTerms[0].matchExpressions[1]`).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

/// A label requirement, checked and with Gt/Lt bounds parsed once.
#[derive(Clone, Debug)]
enum LabelRequirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    Gt(String, i64),
    Lt(String, i64),
}

impl LabelRequirement {
    fn parse(r: &NodeSelectorRequirement) -> Result<Self, String> {
        use NodeSelectorOperator::*;
        let key = r.key.clone();
        match r.operator {
            In | NotIn if r.values.is_empty() => {
                Err("for 'in', 'notin' operators, values set can't be empty".into())
            }
            Exists | DoesNotExist if !r.values.is_empty() => {
                Err("values set must be empty for exists and does not exist".into())
            }
            Gt | Lt if r.values.len() != 1 => {
                Err("for 'Gt', 'Lt' operators, exactly one value is required".into())
            }
            In => Ok(Self::In(key, r.values.clone())),
            NotIn => Ok(Self::NotIn(key, r.values.clone())),
            Exists => Ok(Self::Exists(key)),
            DoesNotExist => Ok(Self::DoesNotExist(key)),
            Gt | Lt => {
                let bound: i64 = r.values[0].parse().map_err(|_| {
                    "for 'Gt', 'Lt' operators, the value must be an integer".to_string()
                })?;
                Ok(if r.operator == Gt {
                    Self::Gt(key, bound)
                } else {
                    Self::Lt(key, bound)
                })
            }
        }
    }

    fn matches(&self, labels: &StringMap) -> bool {
        match self {
            Self::In(k, values) => labels.get(k).is_some_and(|v| values.contains(v)),
            Self::NotIn(k, values) => labels.get(k).is_none_or(|v| !values.contains(v)),
            Self::Exists(k) => labels.contains_key(k),
            Self::DoesNotExist(k) => !labels.contains_key(k),
            // A label that is not a base-10 integer never satisfies Gt or Lt.
            Self::Gt(k, bound) => int_label(labels, k).is_some_and(|v| v > *bound),
            Self::Lt(k, bound) => int_label(labels, k).is_some_and(|v| v < *bound),
        }
    }
}

fn int_label(labels: &StringMap, key: &str) -> Option<i64> {
    labels.get(key).and_then(|v| v.parse().ok())
}

/// A field requirement: kube supports In and NotIn with exactly one value.
#[derive(Clone, Debug)]
enum FieldRequirement {
    Equals(String, String),
    NotEquals(String, String),
}

impl FieldRequirement {
    fn parse(r: &NodeSelectorRequirement) -> Result<Self, String> {
        match r.operator {
            NodeSelectorOperator::In | NodeSelectorOperator::NotIn if r.values.len() != 1 => {
                Err(format!(
                    "unexpected number of value ({}) for node field selector operator {:?}",
                    r.values.len(),
                    r.operator
                ))
            }
            NodeSelectorOperator::In => Ok(Self::Equals(r.key.clone(), r.values[0].clone())),
            NodeSelectorOperator::NotIn => Ok(Self::NotEquals(r.key.clone(), r.values[0].clone())),
            op => Err(format!(
                "{op:?} is not a valid node field selector operator"
            )),
        }
    }

    /// Fields other than `metadata.name` read as empty, as kube's field sets do.
    fn matches(&self, node_name: &str) -> bool {
        let value = |key: &str| {
            if key == FIELD_METADATA_NAME {
                node_name
            } else {
                ""
            }
        };
        match self {
            Self::Equals(k, v) => value(k) == v,
            Self::NotEquals(k, v) => value(k) != v,
        }
    }
}

/// One node selector term, parsed: expressions and fields ANDed.
#[derive(Clone, Debug)]
struct ParsedTerm {
    labels: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
}

impl ParsedTerm {
    /// `None` for an empty term, which matches nothing and is dropped.
    fn parse(term: &NodeSelectorTerm, path: &str) -> Option<Result<Self, SelectorError>> {
        if term.match_expressions.is_empty() && term.match_fields.is_empty() {
            return None;
        }
        let err = |kind: &str, i: usize, problem: String| SelectorError {
            field: format!("{path}.{kind}[{i}]"),
            problem,
        };
        let parsed = (|| {
            let labels = term
                .match_expressions
                .iter()
                .enumerate()
                .map(|(i, r)| LabelRequirement::parse(r).map_err(|p| err("matchExpressions", i, p)))
                .collect::<Result<_, _>>()?;
            let fields = term
                .match_fields
                .iter()
                .enumerate()
                .map(|(i, r)| FieldRequirement::parse(r).map_err(|p| err("matchFields", i, p)))
                .collect::<Result<_, _>>()?;
            Ok(ParsedTerm { labels, fields })
        })();
        Some(parsed)
    }

    fn matches(&self, node: &Node) -> bool {
        let name = node.metadata.name.as_str();
        self.labels.iter().all(|r| r.matches(&node.metadata.labels))
            // A node without a name has no fields, and kube then skips matchFields.
            && (name.is_empty() || self.fields.iter().all(|r| r.matches(name)))
    }
}

/// A label requirement with its key and values resolved to the interned numbers of the
/// nodes' labels ([`crate::framework::topology`]), so a node is matched by comparing
/// integers. Resolved for one set of nodes (a cycle's snapshot): a value no node has then
/// resolves to nothing, which is what it matches.
#[derive(Clone, Debug)]
enum InternedLabel {
    /// The node's value of the key is one of these (never empty).
    In(KeyId, Vec<DomainId>),
    /// The node lacks the key or its value is none of these (never empty).
    NotIn(KeyId, Vec<DomainId>),
    Exists(KeyId),
    DoesNotExist(KeyId),
    /// Gt and Lt read the value as a number.
    Text(LabelRequirement),
    /// No node has the key or any listed value: the verdict is the same on every node.
    Always(bool),
}

impl InternedLabel {
    fn resolve(r: &LabelRequirement) -> Self {
        let domains = |key: KeyId, values: &[String]| -> Vec<DomainId> {
            values.iter().filter_map(|v| domain_id(key, v)).collect()
        };
        match r {
            LabelRequirement::In(k, values) => {
                match key_id(k).map(|id| (id, domains(id, values))) {
                    Some((id, ds)) if !ds.is_empty() => Self::In(id, ds),
                    _ => Self::Always(false),
                }
            }
            LabelRequirement::NotIn(k, values) => {
                match key_id(k).map(|id| (id, domains(id, values))) {
                    Some((id, ds)) if !ds.is_empty() => Self::NotIn(id, ds),
                    _ => Self::Always(true),
                }
            }
            LabelRequirement::Exists(k) => key_id(k).map_or(Self::Always(false), Self::Exists),
            LabelRequirement::DoesNotExist(k) => {
                key_id(k).map_or(Self::Always(true), Self::DoesNotExist)
            }
            LabelRequirement::Gt(..) | LabelRequirement::Lt(..) => Self::Text(r.clone()),
        }
    }

    #[inline]
    fn matches(&self, node: &NodeInfo) -> bool {
        match self {
            Self::In(k, ds) => node.topology.domain(*k).is_some_and(|d| ds.contains(&d)),
            Self::NotIn(k, ds) => node.topology.domain(*k).is_none_or(|d| !ds.contains(&d)),
            Self::Exists(k) => node.topology.domain(*k).is_some(),
            Self::DoesNotExist(k) => node.topology.domain(*k).is_none(),
            Self::Text(r) => r.matches(node.labels()),
            Self::Always(verdict) => *verdict,
        }
    }
}

/// A [`ParsedTerm`] with its label requirements resolved ([`InternedLabel`]).
#[derive(Clone, Debug)]
struct InternedTerm {
    labels: Vec<InternedLabel>,
    fields: Vec<FieldRequirement>,
}

impl InternedTerm {
    fn resolve(term: &ParsedTerm) -> Self {
        InternedTerm {
            labels: term.labels.iter().map(InternedLabel::resolve).collect(),
            fields: term.fields.clone(),
        }
    }

    /// As [`ParsedTerm::matches`].
    fn matches(&self, node: &NodeInfo) -> bool {
        // The name only when a field requirement asks for it: it is in the node object, a
        // pointer away from the hot block that the resource and taint Filters read.
        self.labels.iter().all(|r| r.matches(node))
            && (self.fields.is_empty() || {
                let name = node.name();
                name.is_empty() || self.fields.iter().all(|r| r.matches(name))
            })
    }
}

/// [`RequiredNodeAffinity`] resolved to the interned node labels.
#[derive(Clone, Debug)]
struct InternedNodeAffinity {
    /// The nodeSelector's pairs; `None` when a pair is on no node (nothing matches).
    node_selector: Option<Vec<(KeyId, DomainId)>>,
    /// The required terms (ORed), if the pod has required node affinity.
    required: Option<Vec<InternedTerm>>,
}

impl InternedNodeAffinity {
    fn resolve(affinity: &RequiredNodeAffinity) -> Self {
        let node_selector = affinity
            .node_selector
            .iter()
            .map(|(k, v)| {
                let key = key_id(k)?;
                Some((key, domain_id(key, v)?))
            })
            .collect();
        let required = affinity
            .required
            .as_ref()
            .map(|m| m.terms.iter().map(InternedTerm::resolve).collect());
        InternedNodeAffinity {
            node_selector,
            required,
        }
    }

    fn matches(&self, node: &NodeInfo) -> bool {
        self.node_selector
            .as_ref()
            .is_some_and(|pairs| pairs.iter().all(|&(k, d)| node.topology.has(k, d)))
            && self
                .required
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches(node)))
    }
}

/// Required node selector terms, parsed once (kube's `LazyErrorNodeSelector`): terms are
/// ORed; an empty term, or one with an invalid requirement, matches no node; no terms at all
/// match no node.
#[derive(Clone, Debug, Default)]
pub struct NodeSelectorMatcher {
    terms: Vec<ParsedTerm>,
}

impl NodeSelectorMatcher {
    /// Parses `selector`, dropping terms that can never match.
    pub fn new(selector: &NodeSelector) -> Self {
        Self::from_terms(&selector.node_selector_terms)
    }

    /// As [`NodeSelectorMatcher::new`], from the terms alone.
    pub fn from_terms(terms: &[NodeSelectorTerm]) -> Self {
        let terms = terms
            .iter()
            .enumerate()
            .filter_map(|(i, t)| ParsedTerm::parse(t, &format!("nodeSelectorTerms[{i}]")))
            .filter_map(Result::ok)
            .collect();
        NodeSelectorMatcher { terms }
    }

    /// Parses `selector`, failing on the first invalid requirement (kube's `NewNodeSelector`,
    /// used to validate configuration).
    pub fn try_new(selector: &NodeSelector) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        for (i, t) in selector.node_selector_terms.iter().enumerate() {
            if let Some(parsed) = ParsedTerm::parse(t, &format!("nodeSelectorTerms[{i}]")) {
                terms.push(parsed?);
            }
        }
        Ok(NodeSelectorMatcher { terms })
    }

    /// Whether any term matches the node's labels and name.
    pub fn matches(&self, node: &Node) -> bool {
        self.terms.iter().any(|t| t.matches(node))
    }
}

/// Whether `node` matches any of `terms` (ORed; see [`NodeSelectorMatcher`]).
pub fn node_matches_selector_terms(terms: &[NodeSelectorTerm], node: &Node) -> bool {
    NodeSelectorMatcher::from_terms(terms).matches(node)
}

/// Weighted preferred terms, parsed once; terms with weight 0 or no requirements are
/// dropped.
#[derive(Clone, Debug, Default)]
pub struct PreferredTerms {
    terms: Vec<(i64, ParsedTerm)>,
}

impl PreferredTerms {
    /// Parses the terms; an invalid requirement is an error (kube fails the pod's PreScore).
    pub fn try_new(terms: &[PreferredSchedulingTerm]) -> Result<Self, SelectorError> {
        let mut parsed = Vec::new();
        for (i, t) in terms.iter().enumerate() {
            if t.weight == 0 {
                continue;
            }
            let path = format!("preferredDuringSchedulingIgnoredDuringExecution[{i}].preference");
            if let Some(term) = ParsedTerm::parse(&t.preference, &path) {
                parsed.push((i64::from(t.weight), term?));
            }
        }
        Ok(PreferredTerms { terms: parsed })
    }

    /// Sum of the weights of the terms the node matches.
    pub fn score(&self, node: &Node) -> i64 {
        self.terms
            .iter()
            .filter(|(_, t)| t.matches(node))
            .map(|(w, _)| w)
            .sum()
    }

    /// Whether there is no term.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// The pod's `spec.affinity.nodeAffinity`, if it has one.
fn pod_node_affinity(pod: &Pod) -> Option<&NodeAffinity> {
    pod.spec.affinity.as_ref()?.node_affinity.as_ref()
}

/// The pod's required node affinity (`requiredDuringSchedulingIgnoredDuringExecution`), if any.
pub fn required_node_selector(pod: &Pod) -> Option<&NodeSelector> {
    pod_node_affinity(pod)?
        .required_during_scheduling_ignored_during_execution
        .as_ref()
}

/// A pod's hard node constraints: `nodeSelector` ANDed with required node affinity (kube's
/// `RequiredNodeAffinity`).
#[derive(Clone, Debug, Default)]
pub struct RequiredNodeAffinity {
    node_selector: StringMap,
    required: Option<NodeSelectorMatcher>,
    /// The same, resolved to the nodes' interned labels by [`RequiredNodeAffinity::interned`].
    interned: Option<InternedNodeAffinity>,
}

impl RequiredNodeAffinity {
    /// The pod's constraints, parsed.
    pub fn from_pod(pod: &Pod) -> Self {
        let required = required_node_selector(pod).map(NodeSelectorMatcher::new);
        RequiredNodeAffinity {
            node_selector: pod.spec.node_selector.clone(),
            required,
            interned: None,
        }
    }

    /// The constraints with their keys and values resolved to the numbers of the nodes'
    /// interned labels, for [`RequiredNodeAffinity::matches_node`]: valid for the nodes as
    /// they are now (a cycle's snapshot), as a value no node has resolves to nothing.
    pub fn interned(mut self) -> Self {
        self.interned = Some(InternedNodeAffinity::resolve(&self));
        self
    }

    /// As [`RequiredNodeAffinity::matches`], by comparing numbers when the constraints were
    /// [interned](RequiredNodeAffinity::interned).
    #[inline]
    pub fn matches_node(&self, node: &NodeInfo) -> bool {
        match &self.interned {
            Some(interned) => interned.matches(node),
            None => self.matches(&node.node),
        }
    }

    /// Whether the node has every nodeSelector pair and matches the required terms.
    pub fn matches(&self, node: &Node) -> bool {
        let labels = &node.metadata.labels;
        self.node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.required.as_ref().is_none_or(|r| r.matches(node))
    }
}

/// Whether `node` satisfies `pod`'s nodeSelector and required node affinity.
pub fn required_node_affinity_matches(pod: &Pod, node: &Node) -> bool {
    RequiredNodeAffinity::from_pod(pod).matches(node)
}

/// `NodeAffinityArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Node affinity applied to every pod of the profile, in addition to the pod's own (both
    /// the required and the preferred part).
    #[serde(default)]
    pub added_affinity: Option<NodeAffinity>,
}

/// The plugin, built from validated [`Args`].
#[derive(Clone, Debug, Default)]
pub struct NodeAffinityPlugin {
    added_required: Option<NodeSelectorMatcher>,
    added_preferred: Option<PreferredTerms>,
}

impl NodeAffinityPlugin {
    /// Parses `addedAffinity`; an invalid requirement is an error.
    pub fn try_new(args: Args) -> Result<Self, InvalidArgs> {
        let Some(added) = args.added_affinity else {
            return Ok(Self::default());
        };
        let added_required = added
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(NodeSelectorMatcher::try_new)
            .transpose()
            .map_err(|e| {
                InvalidArgs::new(
                    format!(
                        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.{}",
                        e.field
                    ),
                    e.problem,
                )
            })?;
        let preferred = &added.preferred_during_scheduling_ignored_during_execution;
        let added_preferred =
            if preferred.is_empty() {
                None
            } else {
                Some(PreferredTerms::try_new(preferred).map_err(|e| {
                    InvalidArgs::new(format!("addedAffinity.{}", e.field), e.problem)
                })?)
            };
        Ok(NodeAffinityPlugin {
            added_required,
            added_preferred,
        })
    }
}

/// The pod's parsed hard constraints, from PreFilter.
#[derive(Clone)]
struct PreFilterState {
    required: RequiredNodeAffinity,
}

/// The pod's parsed preferences, from PreScore.
#[derive(Clone)]
struct PreScoreState {
    preferred: PreferredTerms,
}

fn pod_preferred_terms(pod: &Pod) -> Result<PreferredTerms, SelectorError> {
    match pod_node_affinity(pod) {
        Some(na) => {
            PreferredTerms::try_new(&na.preferred_during_scheduling_ignored_during_execution)
        }
        None => Ok(PreferredTerms::default()),
    }
}

/// Node names the required terms pin the pod to through `matchFields` `metadata.name In`:
/// `None` when some term leaves the name open (terms are ORed).
fn pinned_node_names(selector: &NodeSelector) -> Option<HashSet<String>> {
    let mut names: Option<HashSet<String>> = None;
    for term in &selector.node_selector_terms {
        let mut term_names: Option<HashSet<String>> = None;
        for r in &term.match_fields {
            if r.key == FIELD_METADATA_NAME && r.operator == NodeSelectorOperator::In {
                let values: HashSet<String> = r.values.iter().cloned().collect();
                // Requirements within a term are ANDed: intersect.
                term_names = Some(match term_names {
                    None => values,
                    Some(prev) => prev.intersection(&values).cloned().collect(),
                });
            }
        }
        let term_names = term_names?;
        names.get_or_insert_with(HashSet::new).extend(term_names);
    }
    names
}

/// Whether two pods ask the same of a node's labels: equal `nodeSelector`s and node
/// affinities (what the Filter and the Score read of a pod).
fn same_node_affinity(a: &PodInfo, b: &PodInfo) -> bool {
    fn node_affinity(p: &PodInfo) -> Option<&NodeAffinity> {
        p.pod.spec.affinity.as_ref()?.node_affinity.as_ref()
    }
    a.pod.spec.node_selector == b.pod.spec.node_selector && node_affinity(a) == node_affinity(b)
}

impl Plugin for NodeAffinityPlugin {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreFilter for NodeAffinityPlugin {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> Result<PreFilterOutcome, PluginError> {
        let Some(required) = required_node_selector(&pod.pod) else {
            if self.added_required.is_none() && pod.pod.spec.node_selector.is_empty() {
                // kube's Skip: no nodeSelector, no required affinity, none added by args.
                state.skip_filter(NAME);
            } else {
                state.insert(PreFilterState {
                    required: RequiredNodeAffinity::from_pod(&pod.pod).interned(),
                });
            }
            return Ok(PreFilterOutcome::AllNodes);
        };
        state.insert(PreFilterState {
            required: RequiredNodeAffinity::from_pod(&pod.pod).interned(),
        });
        Ok(match pinned_node_names(required) {
            None => PreFilterOutcome::AllNodes,
            Some(names) if names.is_empty() => {
                PreFilterOutcome::Reject(Rejection::unresolvable(NAME, REASON_CONFLICT))
            }
            Some(names) => PreFilterOutcome::Nodes(names),
        })
    }
}

impl Filter for NodeAffinityPlugin {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        if self
            .added_required
            .as_ref()
            .is_some_and(|added| !added.matches(&node.node))
        {
            return Fit::No(Rejection::unresolvable(NAME, REASON_ENFORCED));
        }
        let matches = match state.get::<PreFilterState>() {
            Some(s) => s.required.matches_node(node),
            None => RequiredNodeAffinity::from_pod(&pod.pod).matches(&node.node),
        };
        if matches {
            Fit::Yes
        } else {
            Fit::No(Rejection::unresolvable(NAME, REASON_POD))
        }
    }

    /// The verdict reads the node's labels and name, the args' added affinity, and the pod's
    /// `nodeSelector` and node affinity.
    fn same_verdict(&self, a: &PodInfo, b: &PodInfo) -> bool {
        same_node_affinity(a, b)
    }
}

impl PreScore for NodeAffinityPlugin {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let pod = input.pod;
        let preferred = pod_preferred_terms(&pod.pod).map_err(|e| PluginError {
            plugin: NAME,
            message: format!(
                "parsing the pod's preferred node affinity: {}: {}",
                e.field, e.problem
            ),
        })?;
        if preferred.is_empty() && self.added_preferred.is_none() {
            // kube's Skip: no preferred term, neither the pod's nor added by args.
            state.skip_score(NAME);
            return Ok(());
        }
        state.insert(PreScoreState { preferred });
        Ok(())
    }
}

impl Score for NodeAffinityPlugin {
    /// Sum of the weights of the matching preferred terms, the pod's and the added ones.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let added = self
            .added_preferred
            .as_ref()
            .map_or(0, |p| p.score(&node.node));
        let own = match state.get::<PreScoreState>() {
            Some(s) => s.preferred.score(&node.node),
            // Without PreScore an invalid term scores nothing; PreScore reports it.
            None => pod_preferred_terms(&pod.pod).map_or(0, |p| p.score(&node.node)),
        };
        added + own
    }

    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
    }

    /// The raw score reads the node's labels and name, the args' added preferences, and the
    /// pod's node affinity.
    fn same_raw_score(&self, a: &PodInfo, b: &PodInfo) -> bool {
        same_node_affinity(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{check_args, scores, ArgsCase, Info, NodeBuilder, PodBuilder};

    fn req(key: &str, op: NodeSelectorOperator, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn term(exprs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: exprs,
            match_fields: vec![],
        }
    }

    fn fields_term(fields: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: vec![],
            match_fields: fields,
        }
    }

    fn run_filter(plugin: &NodeAffinityPlugin, pod: &PodInfo, node: &NodeInfo) -> Fit {
        let mut state = CycleState::new();
        let outcome = plugin
            .pre_filter(&mut state, pod, &Snapshot::new())
            .expect("pre_filter never fails");
        match outcome {
            PreFilterOutcome::Reject(r) => Fit::No(r),
            PreFilterOutcome::Nodes(names) if !names.contains(node.name()) => Fit::No(
                Rejection::unresolvable(NAME, "outside PreFilter's node set"),
            ),
            _ => plugin.filter(&state, pod, node),
        }
    }

    #[test]
    fn filter_matches_selector_and_required_terms() {
        use NodeSelectorOperator::*;
        struct Case {
            name: &'static str,
            pod: PodBuilder,
            node: NodeBuilder,
            want: bool,
        }
        let p = || PodBuilder::new("p");
        let n = || NodeBuilder::new("n1");
        let cases = vec![
            Case {
                name: "no constraints",
                pod: p(),
                node: n(),
                want: true,
            },
            Case {
                name: "nodeSelector matches",
                pod: p().node_selector("disk", "ssd").node_selector("zone", "a"),
                node: n()
                    .label("disk", "ssd")
                    .label("zone", "a")
                    .label("extra", "x"),
                want: true,
            },
            Case {
                name: "nodeSelector needs every pair",
                pod: p().node_selector("disk", "ssd").node_selector("zone", "a"),
                node: n().label("disk", "ssd"),
                want: false,
            },
            Case {
                name: "nodeSelector value differs",
                pod: p().node_selector("disk", "ssd"),
                node: n().label("disk", "hdd"),
                want: false,
            },
            Case {
                name: "In",
                pod: p().required_node_terms(vec![term(vec![req("zone", In, &["a", "b"])])]),
                node: n().label("zone", "b"),
                want: true,
            },
            Case {
                name: "In on a missing key",
                pod: p().required_node_terms(vec![term(vec![req("zone", In, &["a"])])]),
                node: n(),
                want: false,
            },
            Case {
                name: "NotIn matches a node without the key",
                pod: p().required_node_terms(vec![term(vec![req("zone", NotIn, &["a"])])]),
                node: n(),
                want: true,
            },
            Case {
                name: "NotIn rejects a listed value",
                pod: p().required_node_terms(vec![term(vec![req("zone", NotIn, &["a"])])]),
                node: n().label("zone", "a"),
                want: false,
            },
            Case {
                name: "Exists",
                pod: p().required_node_terms(vec![term(vec![req("gpu", Exists, &[])])]),
                node: n().label("gpu", ""),
                want: true,
            },
            Case {
                name: "DoesNotExist matches a node without the key",
                pod: p().required_node_terms(vec![term(vec![req("gpu", DoesNotExist, &[])])]),
                node: n(),
                want: true,
            },
            Case {
                name: "DoesNotExist rejects a node with the key",
                pod: p().required_node_terms(vec![term(vec![req("gpu", DoesNotExist, &[])])]),
                node: n().label("gpu", "1"),
                want: false,
            },
            Case {
                name: "Gt on an integer label",
                pod: p().required_node_terms(vec![term(vec![req("cores", Gt, &["8"])])]),
                node: n().label("cores", "16"),
                want: true,
            },
            Case {
                name: "Gt is strict",
                pod: p().required_node_terms(vec![term(vec![req("cores", Gt, &["8"])])]),
                node: n().label("cores", "8"),
                want: false,
            },
            Case {
                name: "Gt never matches a non-integer label",
                pod: p().required_node_terms(vec![term(vec![req("cores", Gt, &["8"])])]),
                node: n().label("cores", "sixteen"),
                want: false,
            },
            Case {
                name: "Gt never matches a decimal label",
                pod: p().required_node_terms(vec![term(vec![req("cores", Gt, &["8"])])]),
                node: n().label("cores", "16.5"),
                want: false,
            },
            Case {
                name: "Gt on a missing key",
                pod: p().required_node_terms(vec![term(vec![req("cores", Gt, &["8"])])]),
                node: n(),
                want: false,
            },
            Case {
                name: "Lt with negative numbers",
                pod: p().required_node_terms(vec![term(vec![req("temp", Lt, &["-5"])])]),
                node: n().label("temp", "-10"),
                want: true,
            },
            Case {
                name: "Lt with a non-integer requirement value never matches",
                pod: p().required_node_terms(vec![term(vec![req("temp", Lt, &["ten"])])]),
                node: n().label("temp", "1"),
                want: false,
            },
            Case {
                name: "Gt with two values never matches",
                pod: p().required_node_terms(vec![term(vec![req("cores", Gt, &["1", "2"])])]),
                node: n().label("cores", "16"),
                want: false,
            },
            Case {
                name: "In with no values never matches",
                pod: p().required_node_terms(vec![term(vec![req("zone", In, &[])])]),
                node: n().label("zone", "a"),
                want: false,
            },
            Case {
                name: "expressions within a term are ANDed",
                pod: p().required_node_terms(vec![term(vec![
                    req("zone", In, &["a"]),
                    req("disk", In, &["ssd"]),
                ])]),
                node: n().label("zone", "a").label("disk", "hdd"),
                want: false,
            },
            Case {
                name: "terms are ORed",
                pod: p().required_node_terms(vec![
                    term(vec![req("zone", In, &["b"])]),
                    term(vec![req("disk", In, &["hdd"])]),
                ]),
                node: n().label("zone", "a").label("disk", "hdd"),
                want: true,
            },
            Case {
                name: "an invalid term does not spoil a valid one",
                pod: p().required_node_terms(vec![
                    term(vec![req("cores", Gt, &["x"])]),
                    term(vec![req("zone", In, &["a"])]),
                ]),
                node: n().label("zone", "a"),
                want: true,
            },
            Case {
                name: "an empty term matches nothing",
                pod: p().required_node_terms(vec![NodeSelectorTerm::default()]),
                node: n().label("zone", "a"),
                want: false,
            },
            Case {
                name: "an empty term next to a matching one",
                pod: p().required_node_terms(vec![
                    NodeSelectorTerm::default(),
                    term(vec![req("zone", In, &["a"])]),
                ]),
                node: n().label("zone", "a"),
                want: true,
            },
            Case {
                name: "no terms match nothing",
                pod: p().required_node_terms(vec![]),
                node: n(),
                want: false,
            },
            Case {
                name: "nodeSelector is ANDed with affinity",
                pod: p()
                    .node_selector("disk", "ssd")
                    .required_node_terms(vec![term(vec![req("zone", In, &["a"])])]),
                node: n().label("zone", "a"),
                want: false,
            },
            Case {
                name: "matchFields metadata.name In",
                pod: p().required_node_terms(vec![fields_term(vec![req(
                    FIELD_METADATA_NAME,
                    In,
                    &["n1"],
                )])]),
                node: n(),
                want: true,
            },
            Case {
                name: "matchFields metadata.name In another node",
                pod: p().required_node_terms(vec![fields_term(vec![req(
                    FIELD_METADATA_NAME,
                    In,
                    &["n2"],
                )])]),
                node: n(),
                want: false,
            },
            Case {
                name: "matchFields metadata.name NotIn",
                pod: p().required_node_terms(vec![fields_term(vec![req(
                    FIELD_METADATA_NAME,
                    NotIn,
                    &["n1"],
                )])]),
                node: n(),
                want: false,
            },
            Case {
                name: "matchFields ANDed with expressions",
                pod: p().required_node_terms(vec![NodeSelectorTerm {
                    match_expressions: vec![req("zone", In, &["a"])],
                    match_fields: vec![req(FIELD_METADATA_NAME, In, &["n1"])],
                }]),
                node: n().label("zone", "b"),
                want: false,
            },
            Case {
                name: "matchFields with Exists is invalid",
                pod: p().required_node_terms(vec![fields_term(vec![req(
                    FIELD_METADATA_NAME,
                    Exists,
                    &[],
                )])]),
                node: n(),
                want: false,
            },
        ];
        let plugin = NodeAffinityPlugin::default();
        for case in cases {
            let pod = case.pod.info();
            let node = case.node.info();
            let got = run_filter(&plugin, &pod, &node);
            assert_eq!(got.is_yes(), case.want, "{}: {got:?}", case.name);
            if let Fit::No(r) = &got {
                assert_eq!(
                    r.code,
                    crate::framework::Code::UnschedulableAndUnresolvable,
                    "{}",
                    case.name
                );
            }
            assert_eq!(
                required_node_affinity_matches(&pod.pod, &node.node),
                case.want,
                "{}: required_node_affinity_matches",
                case.name
            );
        }
    }

    #[test]
    fn filter_reason_is_kubes() {
        let pod = PodBuilder::new("p").node_selector("disk", "ssd").info();
        let node = NodeBuilder::new("n1").info();
        assert_eq!(
            run_filter(&NodeAffinityPlugin::default(), &pod, &node),
            Fit::No(Rejection::unresolvable(NAME, REASON_POD))
        );
    }

    #[test]
    fn pre_filter_narrows_to_named_nodes() {
        use NodeSelectorOperator::*;
        let set =
            |names: &[&str]| -> HashSet<String> { names.iter().map(|n| n.to_string()).collect() };
        struct Case {
            name: &'static str,
            terms: Option<Vec<NodeSelectorTerm>>,
            want: PreFilterOutcome,
        }
        let cases = vec![
            Case {
                name: "no affinity",
                terms: None,
                want: PreFilterOutcome::AllNodes,
            },
            Case {
                name: "a term without name fields leaves all nodes",
                terms: Some(vec![
                    fields_term(vec![req(FIELD_METADATA_NAME, In, &["n1"])]),
                    term(vec![req("zone", In, &["a"])]),
                ]),
                want: PreFilterOutcome::AllNodes,
            },
            Case {
                name: "one term",
                terms: Some(vec![fields_term(vec![req(
                    FIELD_METADATA_NAME,
                    In,
                    &["n1", "n2"],
                )])]),
                want: PreFilterOutcome::Nodes(set(&["n1", "n2"])),
            },
            Case {
                name: "terms are unioned",
                terms: Some(vec![
                    fields_term(vec![req(FIELD_METADATA_NAME, In, &["n1"])]),
                    fields_term(vec![req(FIELD_METADATA_NAME, In, &["n3"])]),
                ]),
                want: PreFilterOutcome::Nodes(set(&["n1", "n3"])),
            },
            Case {
                name: "requirements in a term are intersected",
                terms: Some(vec![fields_term(vec![
                    req(FIELD_METADATA_NAME, In, &["n1", "n2"]),
                    req(FIELD_METADATA_NAME, In, &["n2", "n3"]),
                ])]),
                want: PreFilterOutcome::Nodes(set(&["n2"])),
            },
            Case {
                name: "conflicting requirements reject every node",
                terms: Some(vec![fields_term(vec![
                    req(FIELD_METADATA_NAME, In, &["n1"]),
                    req(FIELD_METADATA_NAME, In, &["n2"]),
                ])]),
                want: PreFilterOutcome::Reject(Rejection::unresolvable(NAME, REASON_CONFLICT)),
            },
            Case {
                name: "NotIn does not narrow",
                terms: Some(vec![fields_term(vec![req(
                    FIELD_METADATA_NAME,
                    NotIn,
                    &["n1"],
                )])]),
                want: PreFilterOutcome::AllNodes,
            },
        ];
        for case in cases {
            let mut pod = PodBuilder::new("p");
            if let Some(terms) = case.terms {
                pod = pod.required_node_terms(terms);
            }
            let pod = pod.info();
            let got = NodeAffinityPlugin::default()
                .pre_filter(&mut CycleState::new(), &pod, &Snapshot::new())
                .expect("pre_filter never fails");
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn added_affinity_is_enforced_and_scored() {
        use NodeSelectorOperator::*;
        let args: Args = serde_yaml_ng::from_str(
            r#"
addedAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
    - matchExpressions:
      - {key: pool, operator: In, values: [batch]}
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 10
    preference:
      matchExpressions:
      - {key: zone, operator: In, values: [a]}
"#,
        )
        .expect("test yaml parses");
        let plugin = NodeAffinityPlugin::try_new(args).expect("valid args");
        struct Case {
            name: &'static str,
            node: NodeBuilder,
            want_fit: Fit,
            want_score: i64,
        }
        let cases = vec![
            Case {
                name: "outside the enforced pool",
                node: NodeBuilder::new("n1").label("zone", "a"),
                want_fit: Fit::No(Rejection::unresolvable(NAME, REASON_ENFORCED)),
                want_score: 10 + 5,
            },
            Case {
                name: "in the pool, in the preferred zone",
                node: NodeBuilder::new("n2")
                    .label("pool", "batch")
                    .label("zone", "a"),
                want_fit: Fit::Yes,
                want_score: 10 + 5,
            },
            Case {
                name: "in the pool, other zone, pod preference only",
                node: NodeBuilder::new("n3")
                    .label("pool", "batch")
                    .label("disk", "ssd"),
                want_fit: Fit::Yes,
                want_score: 0,
            },
        ];
        let pod = PodBuilder::new("p")
            .preferred_node_term(5, term(vec![req("zone", In, &["a"])]))
            .info();
        for case in cases {
            let node = case.node.info();
            assert_eq!(
                run_filter(&plugin, &pod, &node),
                case.want_fit,
                "{}",
                case.name
            );
            let (raw, _) = scores(&plugin, &pod, &Snapshot::new(), &[&node]).expect("valid terms");
            assert_eq!(raw, vec![case.want_score], "{}", case.name);
        }
    }

    #[test]
    fn score_sums_matching_weights_and_normalizes() {
        use NodeSelectorOperator::*;
        struct Case {
            name: &'static str,
            preferred: Vec<(i32, NodeSelectorTerm)>,
            nodes: Vec<NodeBuilder>,
            want_raw: Vec<i64>,
            want: Vec<i64>,
        }
        let cases = vec![
            Case {
                name: "weights of matching terms add up",
                preferred: vec![
                    (20, term(vec![req("zone", In, &["a"])])),
                    (30, term(vec![req("disk", In, &["ssd"])])),
                ],
                nodes: vec![
                    NodeBuilder::new("n1")
                        .label("zone", "a")
                        .label("disk", "ssd"),
                    NodeBuilder::new("n2").label("zone", "a"),
                    NodeBuilder::new("n3"),
                ],
                want_raw: vec![50, 20, 0],
                want: vec![100, 40, 0],
            },
            Case {
                name: "zero weights and empty terms are ignored",
                preferred: vec![
                    (0, term(vec![req("zone", In, &["a"])])),
                    (40, NodeSelectorTerm::default()),
                    (7, term(vec![req("disk", Exists, &[])])),
                ],
                nodes: vec![
                    NodeBuilder::new("n1").label("zone", "a"),
                    NodeBuilder::new("n2").label("disk", "hdd"),
                ],
                want_raw: vec![0, 7],
                want: vec![0, 100],
            },
            Case {
                name: "no preferences: all zero",
                preferred: vec![],
                nodes: vec![NodeBuilder::new("n1"), NodeBuilder::new("n2")],
                want_raw: vec![0, 0],
                want: vec![0, 0],
            },
            Case {
                name: "integer scaling truncates",
                preferred: vec![
                    (1, term(vec![req("a", Exists, &[])])),
                    (2, term(vec![req("b", Exists, &[])])),
                ],
                nodes: vec![
                    NodeBuilder::new("n1").label("a", ""),
                    NodeBuilder::new("n2").label("a", "").label("b", ""),
                ],
                want_raw: vec![1, 3],
                want: vec![33, 100],
            },
        ];
        let plugin = NodeAffinityPlugin::default();
        for case in cases {
            let mut pod = PodBuilder::new("p");
            for (w, t) in case.preferred {
                pod = pod.preferred_node_term(w, t);
            }
            let pod = pod.info();
            let nodes: Vec<NodeInfo> = case.nodes.into_iter().map(Info::info).collect();
            let feasible: Vec<&NodeInfo> = nodes.iter().collect();
            let (raw, normalized) =
                scores(&plugin, &pod, &Snapshot::new(), &feasible).expect("valid terms");
            assert_eq!(raw, case.want_raw, "{}: raw", case.name);
            assert_eq!(normalized, case.want, "{}: normalized", case.name);
        }
    }

    #[test]
    fn invalid_preferred_term_fails_pre_score() {
        let pod = PodBuilder::new("p")
            .preferred_node_term(
                10,
                term(vec![req("cores", NodeSelectorOperator::Gt, &["many"])]),
            )
            .info();
        let err = NodeAffinityPlugin::default()
            .pre_score(
                &mut CycleState::new(),
                &PreScoreInput {
                    pod: &pod,
                    snapshot: &Snapshot::new(),
                    feasible: &[],
                },
            )
            .expect_err("an unparsable Gt value is an error");
        assert!(err.message.contains("must be an integer"), "{err}");
    }

    #[test]
    fn args_validation() {
        check_args(NAME, &[
            ArgsCase { name: "no args", yaml: "{}", want_err: None },
            ArgsCase {
                name: "invalid Gt value in added required terms",
                yaml: "addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Gt, values: [x]}]}]}}",
                want_err: Some("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: for 'Gt', 'Lt' operators, the value must be an integer"),
            },
            ArgsCase {
                name: "Exists with values in added preferred terms",
                yaml: "addedAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: a, operator: Exists, values: [x]}]}}]}",
                want_err: Some("values set must be empty for exists and does not exist"),
            },
            ArgsCase {
                name: "matchFields with two values",
                yaml: "addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [a, b]}]}]}}",
                want_err: Some("unexpected number of value (2)"),
            },
            ArgsCase {
                name: "unknown field",
                yaml: "addedAffinities: {}",
                want_err: Some("unknown field `addedAffinities`"),
            },
        ]);
    }

    #[test]
    fn node_matches_selector_terms_is_reusable() {
        use NodeSelectorOperator::*;
        let node = NodeBuilder::new("n1").label("zone", "a").build();
        assert!(node_matches_selector_terms(
            &[term(vec![req("zone", In, &["a"])])],
            &node
        ));
        assert!(!node_matches_selector_terms(&[], &node));
        assert!(!node_matches_selector_terms(
            &[NodeSelectorTerm::default()],
            &node
        ));
    }
}
