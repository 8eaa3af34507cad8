//! Nodes: capacity, allocatable resources, conditions, taints.

use crate::names;
use serde::{Deserialize, Serialize};

use super::{Ignored, ObjectMeta, ResourceList, Taint, Time};

/// A node (`v1/Node`), registered by its agent or written in a manifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Node {
    /// `v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Node`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// Desired state: cordon and taints.
    pub spec: NodeSpec,
    /// Observed state: resources and conditions.
    pub status: NodeStatus,
}

/// `spec` of a node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSpec {
    /// Cordoned: no new pods unless they tolerate `node.kubernetes.io/unschedulable`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
    /// Taints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// Accepted and ignored.
    #[serde(rename = "podCIDR", skip_serializing_if = "crate::model::skip_ignored")]
    pub pod_cidr: Ignored,
    /// Accepted and ignored.
    #[serde(
        rename = "podCIDRs",
        skip_serializing_if = "crate::model::skip_ignored"
    )]
    pub pod_cidrs: Ignored,
    /// Accepted and ignored.
    #[serde(
        rename = "providerID",
        skip_serializing_if = "crate::model::skip_ignored"
    )]
    pub provider_id: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub config_source: Ignored,
    /// Accepted and ignored.
    #[serde(
        rename = "externalID",
        skip_serializing_if = "crate::model::skip_ignored"
    )]
    pub external_id: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub pod_preemption_policy: Ignored,
}

/// A condition of a node (`Ready`, `MemoryPressure`, ...).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeCondition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Last heartbeat that reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<Time>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// An address of a node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAddress {
    /// `InternalIP`, `Hostname`, ...
    #[serde(rename = "type")]
    pub type_: String,
    /// The address.
    pub address: String,
}

/// A container image present on a node (`v1.ContainerImage`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerImage {
    /// The names the image is known by (`docker.io/library/nginx:1.27`, digests, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Size in bytes.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub size_bytes: i64,
}

/// `status` of a node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeStatus {
    /// Total resources of the node.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub capacity: ResourceList,
    /// Resources available to pods; the scheduler fits pods against these. Defaults to
    /// capacity when left out.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub allocatable: ResourceList,
    /// Conditions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<NodeCondition>,
    /// Addresses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<NodeAddress>,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub node_info: Ignored,
    /// Container images on the node, as its runtime reports them (ImageLocality scores
    /// nodes that already have a pod's images).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ContainerImage>,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub daemon_endpoints: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub phase: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub volumes_attached: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub volumes_in_use: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub config: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub runtime_handlers: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub features: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub declared_features: Ignored,
}

impl Node {
    /// The condition of the given type, if reported.
    pub fn condition(&self, type_: &str) -> Option<&NodeCondition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Whether the node reports `Ready=True`. A node with no Ready condition at all (one
    /// written in a manifest, as in `berth sim`) counts as ready.
    pub fn is_ready(&self) -> bool {
        self.condition(names::CONDITION_READY)
            .is_none_or(|c| c.status == names::STATUS_TRUE)
    }

    /// Allocatable resources, falling back to capacity where allocatable is left out.
    pub fn allocatable(&self) -> &super::ResourceList {
        if self.status.allocatable.is_empty() {
            &self.status.capacity
        } else {
            &self.status.allocatable
        }
    }
}
