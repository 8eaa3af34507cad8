//! PriorityClass (`scheduling.k8s.io/v1`): named pod priorities.

use serde::{Deserialize, Serialize};

use super::{ObjectMeta, PreemptionPolicy};

/// Value of the built-in `system-cluster-critical` class.
pub const SYSTEM_CLUSTER_CRITICAL: i32 = 2_000_000_000;
/// Value of the built-in `system-node-critical` class.
pub const SYSTEM_NODE_CRITICAL: i32 = 2_000_001_000;
/// Highest value a user-defined class may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;

/// A priority class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriorityClass {
    /// `scheduling.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `PriorityClass`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name (cluster-scoped).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The priority of pods of this class.
    pub value: i32,
    /// Whether pods without a class get this one's value (at most one class).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global_default: bool,
    /// Free text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether pods of this class may preempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
}

impl PriorityClass {
    /// A class `name` of priority `value`, with its apiVersion and kind set.
    pub fn new(name: &str, value: i32) -> PriorityClass {
        PriorityClass {
            api_version: "scheduling.k8s.io/v1".into(),
            kind: "PriorityClass".into(),
            metadata: ObjectMeta {
                name: name.into(),
                ..Default::default()
            },
            value,
            ..Default::default()
        }
    }

    /// The built-in classes that always exist.
    pub fn system_classes() -> Vec<PriorityClass> {
        [
            ("system-cluster-critical", SYSTEM_CLUSTER_CRITICAL),
            ("system-node-critical", SYSTEM_NODE_CRITICAL),
        ]
        .into_iter()
        .map(|(name, value)| PriorityClass {
            description: "Built-in priority class for critical system pods.".into(),
            ..PriorityClass::new(name, value)
        })
        .collect()
    }
}
