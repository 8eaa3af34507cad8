//! RuntimeClass (`node.k8s.io/v1`): a named container runtime configuration, with the pod
//! overhead it adds and the nodes it can run on.

use serde::{Deserialize, Serialize};

use super::{ObjectMeta, ResourceList, StringMap, Toleration};

/// A runtime class (`node.k8s.io/v1` RuntimeClass), cluster-scoped. Pods name it in
/// `spec.runtimeClassName`; its overhead is added to their requests and its scheduling
/// constraints to their node selection (Kubernetes' RuntimeClass admission).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeClass {
    /// `node.k8s.io/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `RuntimeClass`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name (cluster-scoped).
    pub metadata: ObjectMeta,
    /// The runtime configuration on the node that runs these pods (a DNS label such as
    /// `runc` or `kata`).
    pub handler: String,
    /// Resources a pod of this class uses beyond its containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overhead: Option<Overhead>,
    /// Where pods of this class may run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<Scheduling>,
}

/// `overhead` of a [`RuntimeClass`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Overhead {
    /// Fixed resources every pod of the class uses, copied into the pod's `spec.overhead`.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub pod_fixed: ResourceList,
}

/// `scheduling` of a [`RuntimeClass`]: merged into each pod of the class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Scheduling {
    /// Labels the node must have, ANDed with the pod's own nodeSelector.
    #[serde(skip_serializing_if = "StringMap::is_empty")]
    pub node_selector: StringMap,
    /// Tolerations added to the pod's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}
