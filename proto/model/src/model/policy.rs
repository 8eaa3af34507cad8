//! PodDisruptionBudget (`policy/v1`): how many pods of a set may be down at once through
//! voluntary disruptions (evictions, preemption).

use serde::{Deserialize, Serialize};

use super::{Ignored, IntOrString, LabelSelector, ObjectMeta};

/// A pod disruption budget (`policy/v1` PodDisruptionBudget), namespaced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodDisruptionBudget {
    /// `policy/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `PodDisruptionBudget`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// The budget.
    pub spec: PodDisruptionBudgetSpec,
    /// How the budget stands now.
    pub status: PodDisruptionBudgetStatus,
}

/// `spec` of a [`PodDisruptionBudget`]. At most one of `minAvailable` and `maxUnavailable`
/// is set; each is a count or a percentage of the expected pods, resolved rounding up
/// ([`IntOrString::resolve`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodDisruptionBudgetSpec {
    /// Pods that must stay available after an eviction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// Pods that may be unavailable after an eviction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// The pods the budget covers, in its namespace. Absent selects no pod; `{}` selects
    /// every pod of the namespace (`policy/v1` semantics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub unhealthy_pod_eviction_policy: Ignored,
}

/// `status` of a [`PodDisruptionBudget`], kept by the disruption controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodDisruptionBudgetStatus {
    /// Selected pods that are healthy now.
    pub current_healthy: i32,
    /// Healthy pods the budget requires.
    pub desired_healthy: i32,
    /// Evictions allowed now (`currentHealthy - desiredHealthy`, at least 0).
    pub disruptions_allowed: i32,
    /// Pods the budget counts (from the owners' replica counts, or the selected pods).
    pub expected_pods: i32,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub observed_generation: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub disrupted_pods: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub conditions: Ignored,
}
