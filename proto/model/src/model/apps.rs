//! Workload controllers (`apps/v1`): Deployments, ReplicaSets and DaemonSets, and the pod
//! template they stamp pods from.

use serde::{Deserialize, Serialize};

use super::{Ignored, IntOrString, LabelSelector, ObjectMeta, PodSpec};

/// Replicas of a Deployment or ReplicaSet that leaves `spec.replicas` out.
pub const DEFAULT_REPLICAS: i32 = 1;

fn default_replicas() -> i32 {
    DEFAULT_REPLICAS
}

/// The pods a controller creates: their metadata (labels, annotations) and spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTemplateSpec {
    /// Labels (which the controller's selector must match) and annotations of each pod.
    pub metadata: ObjectMeta,
    /// Spec of each pod.
    pub spec: PodSpec,
}

// ------------------------------------------------------------------------- Deployment

/// A deployment (`apps/v1` Deployment), namespaced: keeps `replicas` pods of its template
/// running through ReplicaSets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Deployment {
    /// `apps/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Deployment`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// Desired state.
    pub spec: DeploymentSpec,
    /// Observed state.
    pub status: DeploymentStatus,
}

/// `spec` of a [`Deployment`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentSpec {
    /// Pods wanted; 1 when left out.
    #[serde(default = "default_replicas")]
    pub replicas: i32,
    /// The pods the deployment owns; required, and must match the template's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// How old pods are replaced by new ones; Kubernetes defaults it to RollingUpdate with
    /// 25% maxUnavailable and 25% maxSurge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<DeploymentStrategy>,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub min_ready_seconds: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub revision_history_limit: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub progress_deadline_seconds: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub paused: Ignored,
}

impl Default for DeploymentSpec {
    /// An empty spec with the default replica count (1), as a manifest without `replicas`.
    fn default() -> Self {
        DeploymentSpec {
            replicas: DEFAULT_REPLICAS,
            selector: None,
            template: PodTemplateSpec::default(),
            strategy: None,
            min_ready_seconds: None,
            revision_history_limit: None,
            progress_deadline_seconds: None,
            paused: None,
        }
    }
}

/// Kind of a [`DeploymentStrategy`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeploymentStrategyType {
    /// Kill every old pod before creating new ones.
    Recreate,
    /// Replace pods gradually, within maxUnavailable and maxSurge (the default).
    #[default]
    RollingUpdate,
}

/// `spec.strategy` of a [`Deployment`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentStrategy {
    /// Recreate or RollingUpdate; RollingUpdate when left out.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<DeploymentStrategyType>,
    /// Limits of a rolling update; only with type RollingUpdate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateDeployment>,
}

/// `spec.strategy.rollingUpdate` of a [`Deployment`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RollingUpdateDeployment {
    /// Pods that may be unavailable during the update, a count or a percentage of replicas
    /// (rounded down); 25% when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Pods that may exist above replicas during the update, a count or a percentage of
    /// replicas (rounded up); 25% when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
}

/// `status` of a [`Deployment`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentStatus {
    /// Pods the deployment owns (not terminating).
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub replicas: i32,
    /// Pods with the ready condition.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub ready_replicas: i32,
    /// Pods ready for at least minReadySeconds.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub available_replicas: i32,
    /// Pods of the current template.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub updated_replicas: i32,
    /// The metadata generation the status reflects.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub observed_generation: i64,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub unavailable_replicas: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub terminating_replicas: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub conditions: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub collision_count: Ignored,
}

// ------------------------------------------------------------------------- ReplicaSet

/// A replica set (`apps/v1` ReplicaSet), namespaced: keeps `replicas` pods matching its
/// selector running, creating them from its template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSet {
    /// `apps/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ReplicaSet`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name, namespace, and the owning Deployment if any.
    pub metadata: ObjectMeta,
    /// Desired state.
    pub spec: ReplicaSetSpec,
    /// Observed state.
    pub status: ReplicaSetStatus,
}

/// `spec` of a [`ReplicaSet`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSetSpec {
    /// Pods wanted; 1 when left out.
    #[serde(default = "default_replicas")]
    pub replicas: i32,
    /// The pods the set owns; required, and must match the template's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub min_ready_seconds: Ignored,
}

impl Default for ReplicaSetSpec {
    /// An empty spec with the default replica count (1), as a manifest without `replicas`.
    fn default() -> Self {
        ReplicaSetSpec {
            replicas: DEFAULT_REPLICAS,
            selector: None,
            template: PodTemplateSpec::default(),
            min_ready_seconds: None,
        }
    }
}

/// `status` of a [`ReplicaSet`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSetStatus {
    /// Pods the set owns (not terminating).
    pub replicas: i32,
    /// Pods with the ready condition.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub ready_replicas: i32,
    /// Pods ready for at least minReadySeconds.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub available_replicas: i32,
    /// The metadata generation the status reflects.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub observed_generation: i64,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub fully_labeled_replicas: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub terminating_replicas: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub conditions: Ignored,
}

// ------------------------------------------------------------------------- DaemonSet

/// A daemon set (`apps/v1` DaemonSet), namespaced: one pod of its template on every node
/// the template can run on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSet {
    /// `apps/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `DaemonSet`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// Desired state.
    pub spec: DaemonSetSpec,
    /// Observed state.
    pub status: DaemonSetStatus,
}

/// `spec` of a [`DaemonSet`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSetSpec {
    /// The pods the set owns; required, non-empty, and must match the template's labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pod to run on each node.
    pub template: PodTemplateSpec,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub update_strategy: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub min_ready_seconds: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub revision_history_limit: Ignored,
}

/// `status` of a [`DaemonSet`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSetStatus {
    /// Nodes that should run the daemon pod.
    pub desired_number_scheduled: i32,
    /// Nodes that run at least one daemon pod and should.
    pub current_number_scheduled: i32,
    /// Nodes whose daemon pod is ready.
    pub number_ready: i32,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub number_misscheduled: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub observed_generation: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub updated_number_scheduled: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub number_available: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub number_unavailable: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub collision_count: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub conditions: Ignored,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_default_to_one_and_zero_is_kept() {
        struct Case {
            name: &'static str,
            json: &'static str,
            want: i32,
        }
        let cases = [
            Case {
                name: "left out",
                json: r#"{}"#,
                want: 1,
            },
            Case {
                name: "zero",
                json: r#"{"replicas":0}"#,
                want: 0,
            },
            Case {
                name: "three",
                json: r#"{"replicas":3}"#,
                want: 3,
            },
        ];
        for case in cases {
            let d: DeploymentSpec = serde_json::from_str(case.json).expect(case.name);
            assert_eq!(d.replicas, case.want, "{}: deployment", case.name);
            let r: ReplicaSetSpec = serde_json::from_str(case.json).expect(case.name);
            assert_eq!(r.replicas, case.want, "{}: replicaset", case.name);
            let back: DeploymentSpec =
                serde_json::from_value(serde_json::to_value(&d).expect("serializes"))
                    .expect("parses back");
            assert_eq!(back.replicas, case.want, "{}: round trip", case.name);
        }
        assert_eq!(Deployment::default().spec.replicas, 1);
        assert_eq!(ReplicaSet::default().spec.replicas, 1);
    }

    #[test]
    fn strategy_is_kept() {
        let json =
            r#"{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":1}}"#;
        let s: DeploymentStrategy = serde_json::from_str(json).expect("parses");
        assert_eq!(s.type_, Some(DeploymentStrategyType::RollingUpdate));
        let ru = s.rolling_update.as_ref().expect("rollingUpdate");
        assert_eq!(ru.max_surge, Some(IntOrString::Int(1)));
        assert_eq!(ru.max_unavailable, Some(IntOrString::String("25%".into())));
        assert_eq!(serde_json::to_string(&s).expect("serializes"), json);
        assert!(serde_json::from_str::<DeploymentStrategy>(r#"{"type":"Rolling"}"#).is_err());
    }
}
