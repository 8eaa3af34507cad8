//! ResourceQuota (`v1`): per-namespace limits on object counts and summed resources,
//! optionally restricted to pods of some priority classes.

use serde::{Deserialize, Serialize};

use super::{ObjectMeta, ResourceList};

/// A resource quota (`v1/ResourceQuota`), namespaced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceQuota {
    /// `v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ResourceQuota`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// The limits.
    pub spec: ResourceQuotaSpec,
    /// The limits enforced and what is used of them.
    pub status: ResourceQuotaStatus,
}

/// `spec` of a [`ResourceQuota`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceQuotaSpec {
    /// Limits by quota resource name: `pods`, `cpu` and `requests.cpu` (the same thing),
    /// `memory`/`requests.memory`, `limits.cpu`, `limits.memory`, `requests.example.com/gpu`,
    /// `count/deployments.apps`, ...
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub hard: ResourceList,
    /// Scopes every counted object must match (ANDed with scopeSelector).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ResourceQuotaScope>,
    /// Scope requirements every counted object must match; Berth acts on the PriorityClass
    /// scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope_selector: Option<ScopeSelector>,
}

/// `status` of a [`ResourceQuota`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceQuotaStatus {
    /// The limits being enforced.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub hard: ResourceList,
    /// What the namespace uses of each.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub used: ResourceList,
}

/// Which objects a quota counts (Kubernetes' ResourceQuotaScope).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ResourceQuotaScope {
    /// Pods with an activeDeadlineSeconds.
    Terminating,
    /// Pods without an activeDeadlineSeconds.
    NotTerminating,
    /// Pods with best-effort quality of service.
    BestEffort,
    /// Pods without best-effort quality of service.
    NotBestEffort,
    /// Pods whose priorityClassName matches the requirement.
    PriorityClass,
    /// Pods with cross-namespace pod (anti-)affinity terms.
    CrossNamespacePodAffinity,
    /// Persistent volume claims by volume attributes class.
    VolumeAttributesClass,
}

impl ResourceQuotaScope {
    /// The scope as written in manifests.
    pub fn as_str(&self) -> &'static str {
        match self {
            ResourceQuotaScope::Terminating => "Terminating",
            ResourceQuotaScope::NotTerminating => "NotTerminating",
            ResourceQuotaScope::BestEffort => "BestEffort",
            ResourceQuotaScope::NotBestEffort => "NotBestEffort",
            ResourceQuotaScope::PriorityClass => "PriorityClass",
            ResourceQuotaScope::CrossNamespacePodAffinity => "CrossNamespacePodAffinity",
            ResourceQuotaScope::VolumeAttributesClass => "VolumeAttributesClass",
        }
    }
}

/// `spec.scopeSelector` of a [`ResourceQuota`]: requirements are ANDed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeSelector {
    /// The requirements.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<ScopedResourceSelectorRequirement>,
}

/// One requirement of a [`ScopeSelector`]: for the PriorityClass scope, a condition on the
/// pod's priorityClassName.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopedResourceSelectorRequirement {
    /// The scope the requirement is about.
    pub scope_name: ResourceQuotaScope,
    /// How the values are compared.
    pub operator: ScopeSelectorOperator,
    /// Values for In and NotIn; empty for Exists and DoesNotExist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// Operators of a [`ScopedResourceSelectorRequirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScopeSelectorOperator {
    /// The scope's value is one of `values`.
    In,
    /// The scope's value is none of `values`.
    NotIn,
    /// The scope applies (for PriorityClass: the pod names a class).
    Exists,
    /// The scope does not apply.
    DoesNotExist,
}

impl ScopeSelectorOperator {
    /// The operator as written in manifests.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScopeSelectorOperator::In => "In",
            ScopeSelectorOperator::NotIn => "NotIn",
            ScopeSelectorOperator::Exists => "Exists",
            ScopeSelectorOperator::DoesNotExist => "DoesNotExist",
        }
    }
}
