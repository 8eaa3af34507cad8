//! The scheduling vocabulary of pod and node specs: affinity, label and node selectors,
//! taints and tolerations, topology spread constraints.

use serde::{Deserialize, Serialize};

use super::StringMap;

/// A label query over a set of objects (Kubernetes' LabelSelector). An empty selector
/// matches everything; an absent one (`None` where it is optional) matches nothing.
/// Matching lives in [`crate::selector`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Every pair must be present in the labels.
    #[serde(skip_serializing_if = "StringMap::is_empty")]
    pub match_labels: StringMap,
    /// Every requirement must hold.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One requirement of a [`LabelSelector`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    /// Label key.
    pub key: String,
    /// How the key's value is compared.
    pub operator: LabelSelectorOperator,
    /// Values for In and NotIn; empty for Exists and DoesNotExist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// Operators of a [`LabelSelectorRequirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LabelSelectorOperator {
    /// The label's value is one of `values`.
    In,
    /// The label is absent or its value is none of `values`.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

/// Node selector (the required part of node affinity): terms are ORed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelector {
    /// A node matches when any term matches.
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// One term of a [`NodeSelector`]: expressions and fields are ANDed; an empty term matches
/// no node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelectorTerm {
    /// Requirements on node labels.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Requirements on node fields (only `metadata.name` is supported, as in Kubernetes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// A requirement on a node label or field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelectorRequirement {
    /// Label key, or field path for matchFields.
    pub key: String,
    /// How the value is compared.
    pub operator: NodeSelectorOperator,
    /// Values: several for In/NotIn, none for Exists/DoesNotExist, one integer for Gt/Lt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// Operators of a [`NodeSelectorRequirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeSelectorOperator {
    /// The value is one of `values`.
    In,
    /// The key is absent or its value is none of `values`.
    NotIn,
    /// The key is present.
    Exists,
    /// The key is absent.
    DoesNotExist,
    /// The value, read as an integer, is greater than the single value.
    Gt,
    /// The value, read as an integer, is less than the single value.
    Lt,
}

/// A weighted preference for nodes matching a term.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreferredSchedulingTerm {
    /// Weight in 1..=100.
    pub weight: i32,
    /// Term a node should match.
    pub preference: NodeSelectorTerm,
}

/// Node affinity of a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAffinity {
    /// Hard requirement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    /// Soft preferences, weights summed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
}

/// A set of pods (selected by labels in some namespaces) and the topology they must share
/// (or avoid) with the incoming pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodAffinityTerm {
    /// Pods this term is about; absent matches no pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Namespaces to look in (ORed with namespaceSelector); neither means the pod's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Node label whose value defines a topology domain.
    pub topology_key: String,
    /// Namespaces by label; `{}` means every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Label keys whose values, taken from the incoming pod, are ANDed into labelSelector
    /// with In.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    /// Label keys whose values, taken from the incoming pod, are ANDed into labelSelector
    /// with NotIn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatch_label_keys: Vec<String>,
}

/// A [`PodAffinityTerm`] with a weight, for preferences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightedPodAffinityTerm {
    /// Weight in 1..=100.
    pub weight: i32,
    /// The term.
    pub pod_affinity_term: PodAffinityTerm,
}

/// Pod affinity or anti-affinity (the same shape serves both).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodAffinity {
    /// Hard terms, all of which must hold.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    /// Soft terms, weights summed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

/// `spec.affinity` of a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Affinity {
    /// Constraints on nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    /// Co-location with other pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    /// Separation from other pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAffinity>,
}

/// Effect of a taint, or the effect a toleration matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TaintEffect {
    /// New pods that do not tolerate the taint are not scheduled.
    NoSchedule,
    /// The scheduler avoids the node for pods that do not tolerate the taint.
    PreferNoSchedule,
    /// As NoSchedule, and running pods that do not tolerate it are evicted.
    NoExecute,
}

impl TaintEffect {
    /// The effect as written in manifests.
    pub fn as_str(&self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// What the taint does.
    pub effect: TaintEffect,
    /// When a NoExecute taint was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<super::Time>,
}

/// Operator of a [`Toleration`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TolerationOperator {
    /// Key and value must be equal (the default).
    #[default]
    Equal,
    /// Key must match; any value.
    Exists,
}

/// A pod's toleration of taints.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// Taint key; empty with Exists matches every taint.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Equal (default) or Exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<TolerationOperator>,
    /// Value compared by Equal.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Effect matched; absent matches every effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    /// For NoExecute: how long the pod stays bound after the taint appears.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// What to do with a pod that would break a topology spread constraint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnsatisfiableConstraintAction {
    /// A filter: the pod is not placed where the skew would be too large.
    #[default]
    DoNotSchedule,
    /// A score: such placements are only ranked lower.
    ScheduleAnyway,
}

/// Whether node affinity or taints decide which nodes count for spreading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeInclusionPolicy {
    /// Only nodes that the pod's nodeAffinity/nodeSelector (or tolerations) admit count.
    Honor,
    /// All nodes count.
    Ignore,
}

/// A pod topology spread constraint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologySpreadConstraint {
    /// Largest allowed difference between a domain's count and the global minimum; ≥ 1.
    pub max_skew: i32,
    /// Node label that defines domains.
    pub topology_key: String,
    /// Filter (DoNotSchedule) or score (ScheduleAnyway).
    pub when_unsatisfiable: UnsatisfiableConstraintAction,
    /// Pods counted; absent counts none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Minimum number of eligible domains (DoNotSchedule only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    /// Honor (default) or Ignore the pod's node affinity when counting domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<NodeInclusionPolicy>,
    /// Honor or Ignore (default) node taints when counting domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<NodeInclusionPolicy>,
    /// Label keys whose values, from the incoming pod, are ANDed into the selector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
}
