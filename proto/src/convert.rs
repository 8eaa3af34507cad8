//! Conversions between the gRPC messages ([`crate::pb`]) and the object model
//! ([`crate::model`]), in one place.
//!
//! Model to message is infallible: `impl From<&model::X> for pb::X`. Quantities travel as
//! their canonical string ([`Quantity`]'s `Display`), enums as their Kubernetes name
//! (`"NoSchedule"`, `"In"`, `"Running"`), an absent optional enum as `""`, times as seconds
//! and nanoseconds since the Unix epoch.
//!
//! Message to model can fail (`impl TryFrom<pb::X> for model::X`, by value): a quantity that
//! does not parse, an enum name that does not exist, a required enum left empty. The
//! [`ConvertError`] names the field as written in YAML
//! (`spec.containers[0].resources.requests.cpu`). Empty strings for optional enums become
//! `None`; for enums with a default (`PodPhase`) they become the default. A missing
//! sub-message becomes the model's default value. Top-level objects get their `apiVersion`
//! and `kind` filled in, so that printing them looks like Kubernetes.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::model::{self, Kind, Object};
use crate::pb;
use crate::quantity::{Quantity, QuantityError};
use berth_model::validate::map_key_path;

/// A message that cannot be turned into the object model: which field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct ConvertError {
    /// The field, as written in YAML: `spec.tolerations[1].effect`,
    /// `spec.containers[0].resources.requests.cpu`, `metadata.creationTimestamp`.
    pub path: String,
    /// What is wrong with it.
    pub problem: ConvertProblem,
}

/// What is wrong with a field of a message (see [`ConvertError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertProblem {
    /// A quantity string that does not parse.
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    /// An enum string that names no value of the enum.
    #[error("unknown value {value:?}, expected one of {}", .expected.join(", "))]
    UnknownValue {
        /// The string received.
        value: String,
        /// The accepted strings.
        expected: &'static [&'static str],
    },
    /// A required field (an enum such as a taint's effect, an object's kind) was left empty.
    #[error("required value")]
    Required,
    /// A time whose nanoseconds are outside `0..1_000_000_000`, or beyond what the system
    /// clock can represent.
    #[error("invalid time {seconds}s {nanos}ns (nanos must be in 0..1000000000)")]
    InvalidTime {
        /// Seconds since the Unix epoch.
        seconds: i64,
        /// Nanoseconds within the second.
        nanos: i32,
    },
    /// A `Kind` number that this version does not know.
    #[error("unknown kind {value}")]
    UnknownKind {
        /// The enum number received.
        value: i32,
    },
}

// ------------------------------------------------------------------------- field paths

/// Where a conversion is in a message, built as it descends and rendered only on error, so
/// that a successful conversion allocates no path strings.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'static str),
    Index(&'a Path<'a>, usize),
    Key(&'a Path<'a>, &'a str),
}

impl<'a> Path<'a> {
    fn field(&'a self, name: &'static str) -> Path<'a> {
        Path::Field(self, name)
    }

    fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }

    fn key(&'a self, key: &'a str) -> Path<'a> {
        Path::Key(self, key)
    }

    fn render(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Field(parent, name) => {
                let mut s = parent.render();
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(name);
                s
            }
            Path::Index(parent, i) => format!("{}[{i}]", parent.render()),
            Path::Key(parent, key) => map_key_path(&parent.render(), key),
        }
    }

    fn error(&self, problem: ConvertProblem) -> ConvertError {
        ConvertError {
            path: self.render(),
            problem,
        }
    }
}

// ------------------------------------------------------------------------- enums

/// An enum that travels as its Kubernetes name.
trait ApiEnum: Copy + Sized + 'static {
    /// Every name, in declaration order.
    const NAMES: &'static [&'static str];
    /// The name of this value.
    fn name(self) -> &'static str;
    /// The value with this name.
    fn from_name(s: &str) -> Option<Self>;
}

/// Implements [`ApiEnum`] for a model enum whose variants are named as in Kubernetes. The
/// `match` in `name` is exhaustive, so a variant added to the model without being listed
/// here does not compile.
macro_rules! api_enum {
    ($ty:ident { $($variant:ident),+ $(,)? }) => {
        impl ApiEnum for model::$ty {
            const NAMES: &'static [&'static str] = &[$(stringify!($variant)),+];
            fn name(self) -> &'static str {
                match self {
                    $(model::$ty::$variant => stringify!($variant),)+
                }
            }
            fn from_name(s: &str) -> Option<Self> {
                match s {
                    $(stringify!($variant) => Some(model::$ty::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

api_enum!(PreemptionPolicy {
    PreemptLowerPriority,
    Never
});
api_enum!(RestartPolicy {
    Always,
    OnFailure,
    Never
});
api_enum!(PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown
});
api_enum!(LabelSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist
});
api_enum!(NodeSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt
});
api_enum!(TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute
});
api_enum!(TolerationOperator { Equal, Exists });
api_enum!(UnsatisfiableConstraintAction {
    DoNotSchedule,
    ScheduleAnyway
});
api_enum!(NodeInclusionPolicy { Honor, Ignore });
api_enum!(DeploymentStrategyType {
    Recreate,
    RollingUpdate
});
api_enum!(ResourceQuotaScope {
    Terminating,
    NotTerminating,
    BestEffort,
    NotBestEffort,
    PriorityClass,
    CrossNamespacePodAffinity,
    VolumeAttributesClass
});
api_enum!(ScopeSelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist
});

fn opt_enum_to_pb<E: ApiEnum>(value: Option<E>) -> String {
    value.map(|v| v.name().to_string()).unwrap_or_default()
}

fn parse_enum<E: ApiEnum>(s: &str, path: &Path<'_>) -> Result<E, ConvertError> {
    E::from_name(s).ok_or_else(|| {
        path.error(ConvertProblem::UnknownValue {
            value: s.to_string(),
            expected: E::NAMES,
        })
    })
}

/// An enum that may be left out: `""` is `None`.
fn optional_enum<E: ApiEnum>(s: &str, path: &Path<'_>) -> Result<Option<E>, ConvertError> {
    if s.is_empty() {
        Ok(None)
    } else {
        parse_enum(s, path).map(Some)
    }
}

/// An enum that must be given: `""` is an error.
fn required_enum<E: ApiEnum>(s: &str, path: &Path<'_>) -> Result<E, ConvertError> {
    if s.is_empty() {
        Err(path.error(ConvertProblem::Required))
    } else {
        parse_enum(s, path)
    }
}

/// An enum with a default: `""` is the default.
fn defaulted_enum<E: ApiEnum + Default>(s: &str, path: &Path<'_>) -> Result<E, ConvertError> {
    Ok(optional_enum(s, path)?.unwrap_or_default())
}

// ------------------------------------------------------------------------- helpers

/// Conversion from a message, reporting errors at `path`.
trait FromPb<P>: Sized {
    fn from_pb(msg: P, path: &Path<'_>) -> Result<Self, ConvertError>;
}

fn vec_from_pb<P, T: FromPb<P>>(msgs: Vec<P>, path: &Path<'_>) -> Result<Vec<T>, ConvertError> {
    msgs.into_iter()
        .enumerate()
        .map(|(i, m)| T::from_pb(m, &path.index(i)))
        .collect()
}

fn opt_from_pb<P, T: FromPb<P>>(
    msg: Option<P>,
    path: &Path<'_>,
) -> Result<Option<T>, ConvertError> {
    msg.map(|m| T::from_pb(m, path)).transpose()
}

/// A sub-message the model always has: a missing one converts as the empty message.
fn msg_from_pb<P: Default, T: FromPb<P>>(
    msg: Option<P>,
    path: &Path<'_>,
) -> Result<T, ConvertError> {
    T::from_pb(msg.unwrap_or_default(), path)
}

fn map_to_model(map: HashMap<String, String>) -> model::StringMap {
    map.into_iter().collect()
}

fn map_to_pb(map: &model::StringMap) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn resources_to_pb(list: &model::ResourceList) -> HashMap<String, String> {
    list.iter()
        .map(|(k, q)| (k.clone(), q.to_string()))
        .collect()
}

fn resources_from_pb(
    map: HashMap<String, String>,
    path: &Path<'_>,
) -> Result<model::ResourceList, ConvertError> {
    // Sorted first, so that with several bad quantities the one reported is always the same.
    let sorted: BTreeMap<String, String> = map.into_iter().collect();
    sorted
        .into_iter()
        .map(|(name, text)| {
            let q = Quantity::parse(&text).map_err(|e| path.key(&name).error(e.into()))?;
            Ok((name, q))
        })
        .collect()
}

/// Implements `TryFrom<pb::X> for model::X` through [`FromPb`] at the root path.
macro_rules! try_from_pb {
    ($($name:ident),+ $(,)?) => {
        $(
            impl TryFrom<pb::$name> for model::$name {
                type Error = ConvertError;
                fn try_from(msg: pb::$name) -> Result<Self, ConvertError> {
                    <model::$name as FromPb<pb::$name>>::from_pb(msg, &Path::Root)
                }
            }
        )+
    };
}

try_from_pb!(
    Time,
    OwnerReference,
    ObjectMeta,
    LabelSelectorRequirement,
    LabelSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSelector,
    PreferredSchedulingTerm,
    NodeAffinity,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
    PodAffinity,
    Affinity,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    ResourceRequirements,
    EnvVar,
    Container,
    PodSchedulingGate,
    PodSpec,
    PodCondition,
    ContainerStatus,
    PodStatus,
    Pod,
    NodeSpec,
    NodeCondition,
    NodeAddress,
    NodeStatus,
    Node,
    PriorityClass,
    ObjectReference,
    Event,
    Namespace,
    Overhead,
    Scheduling,
    RuntimeClass,
    IntOrString,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
    PodDisruptionBudget,
    PodTemplateSpec,
    RollingUpdateDeployment,
    DeploymentStrategy,
    DeploymentSpec,
    DeploymentStatus,
    Deployment,
    ReplicaSetSpec,
    ReplicaSetStatus,
    ReplicaSet,
    DaemonSetSpec,
    DaemonSetStatus,
    DaemonSet,
    ScopedResourceSelectorRequirement,
    ScopeSelector,
    ResourceQuotaSpec,
    ResourceQuotaStatus,
    ResourceQuota,
);

// ------------------------------------------------------------------------- metadata

impl From<&model::Time> for pb::Time {
    fn from(t: &model::Time) -> Self {
        // Protobuf's convention: nanos are always non-negative, so a time before the epoch
        // borrows one second.
        match t.0.duration_since(UNIX_EPOCH) {
            Ok(d) => pb::Time {
                seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                nanos: d.subsec_nanos() as i32,
            },
            Err(before) => {
                let d = before.duration();
                let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                if d.subsec_nanos() == 0 {
                    pb::Time {
                        seconds: -secs,
                        nanos: 0,
                    }
                } else {
                    pb::Time {
                        seconds: (-secs).saturating_sub(1),
                        nanos: (1_000_000_000 - d.subsec_nanos()) as i32,
                    }
                }
            }
        }
    }
}

impl FromPb<pb::Time> for model::Time {
    fn from_pb(t: pb::Time, path: &Path<'_>) -> Result<Self, ConvertError> {
        let invalid = || {
            path.error(ConvertProblem::InvalidTime {
                seconds: t.seconds,
                nanos: t.nanos,
            })
        };
        let nanos = u32::try_from(t.nanos)
            .ok()
            .filter(|n| *n < 1_000_000_000)
            .ok_or_else(invalid)?;
        let at: Option<SystemTime> = if t.seconds >= 0 {
            UNIX_EPOCH.checked_add(Duration::new(t.seconds.unsigned_abs(), nanos))
        } else {
            UNIX_EPOCH
                .checked_sub(Duration::from_secs(t.seconds.unsigned_abs()))
                .and_then(|s| s.checked_add(Duration::from_nanos(u64::from(nanos))))
        };
        at.map(model::Time).ok_or_else(invalid)
    }
}

fn time_to_pb(t: &Option<model::Time>) -> Option<pb::Time> {
    t.as_ref().map(pb::Time::from)
}

impl From<&model::OwnerReference> for pb::OwnerReference {
    fn from(o: &model::OwnerReference) -> Self {
        pb::OwnerReference {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            name: o.name.clone(),
            uid: o.uid.clone(),
            controller: o.controller,
        }
    }
}

impl FromPb<pb::OwnerReference> for model::OwnerReference {
    fn from_pb(o: pb::OwnerReference, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::OwnerReference {
            api_version: o.api_version,
            kind: o.kind,
            name: o.name,
            uid: o.uid,
            controller: o.controller,
            block_owner_deletion: None,
        })
    }
}

impl From<&model::ObjectMeta> for pb::ObjectMeta {
    fn from(m: &model::ObjectMeta) -> Self {
        pb::ObjectMeta {
            name: m.name.clone(),
            generate_name: m.generate_name.clone(),
            namespace: m.namespace.clone(),
            labels: map_to_pb(&m.labels),
            annotations: map_to_pb(&m.annotations),
            uid: m.uid.clone(),
            resource_version: m.resource_version.clone(),
            creation_timestamp: time_to_pb(&m.creation_timestamp),
            deletion_timestamp: time_to_pb(&m.deletion_timestamp),
            owner_references: m.owner_references.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::ObjectMeta> for model::ObjectMeta {
    fn from_pb(m: pb::ObjectMeta, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ObjectMeta {
            name: m.name,
            generate_name: m.generate_name,
            namespace: m.namespace,
            labels: map_to_model(m.labels),
            annotations: map_to_model(m.annotations),
            uid: m.uid,
            resource_version: m.resource_version,
            creation_timestamp: opt_from_pb(
                m.creation_timestamp,
                &path.field("creationTimestamp"),
            )?,
            deletion_timestamp: opt_from_pb(
                m.deletion_timestamp,
                &path.field("deletionTimestamp"),
            )?,
            owner_references: vec_from_pb(m.owner_references, &path.field("ownerReferences"))?,
            ..Default::default()
        })
    }
}

// ------------------------------------------------------------------------- selectors

impl From<&model::LabelSelectorRequirement> for pb::LabelSelectorRequirement {
    fn from(r: &model::LabelSelectorRequirement) -> Self {
        pb::LabelSelectorRequirement {
            key: r.key.clone(),
            operator: r.operator.name().to_string(),
            values: r.values.clone(),
        }
    }
}

impl FromPb<pb::LabelSelectorRequirement> for model::LabelSelectorRequirement {
    fn from_pb(r: pb::LabelSelectorRequirement, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::LabelSelectorRequirement {
            operator: required_enum(&r.operator, &path.field("operator"))?,
            key: r.key,
            values: r.values,
        })
    }
}

impl From<&model::LabelSelector> for pb::LabelSelector {
    fn from(s: &model::LabelSelector) -> Self {
        pb::LabelSelector {
            match_labels: map_to_pb(&s.match_labels),
            match_expressions: s.match_expressions.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::LabelSelector> for model::LabelSelector {
    fn from_pb(s: pb::LabelSelector, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::LabelSelector {
            match_labels: map_to_model(s.match_labels),
            match_expressions: vec_from_pb(s.match_expressions, &path.field("matchExpressions"))?,
        })
    }
}

impl From<&model::NodeSelectorRequirement> for pb::NodeSelectorRequirement {
    fn from(r: &model::NodeSelectorRequirement) -> Self {
        pb::NodeSelectorRequirement {
            key: r.key.clone(),
            operator: r.operator.name().to_string(),
            values: r.values.clone(),
        }
    }
}

impl FromPb<pb::NodeSelectorRequirement> for model::NodeSelectorRequirement {
    fn from_pb(r: pb::NodeSelectorRequirement, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeSelectorRequirement {
            operator: required_enum(&r.operator, &path.field("operator"))?,
            key: r.key,
            values: r.values,
        })
    }
}

impl From<&model::NodeSelectorTerm> for pb::NodeSelectorTerm {
    fn from(t: &model::NodeSelectorTerm) -> Self {
        pb::NodeSelectorTerm {
            match_expressions: t.match_expressions.iter().map(Into::into).collect(),
            match_fields: t.match_fields.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::NodeSelectorTerm> for model::NodeSelectorTerm {
    fn from_pb(t: pb::NodeSelectorTerm, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeSelectorTerm {
            match_expressions: vec_from_pb(t.match_expressions, &path.field("matchExpressions"))?,
            match_fields: vec_from_pb(t.match_fields, &path.field("matchFields"))?,
        })
    }
}

impl From<&model::NodeSelector> for pb::NodeSelector {
    fn from(s: &model::NodeSelector) -> Self {
        pb::NodeSelector {
            node_selector_terms: s.node_selector_terms.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::NodeSelector> for model::NodeSelector {
    fn from_pb(s: pb::NodeSelector, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeSelector {
            node_selector_terms: vec_from_pb(
                s.node_selector_terms,
                &path.field("nodeSelectorTerms"),
            )?,
        })
    }
}

impl From<&model::PreferredSchedulingTerm> for pb::PreferredSchedulingTerm {
    fn from(t: &model::PreferredSchedulingTerm) -> Self {
        pb::PreferredSchedulingTerm {
            weight: t.weight,
            preference: Some((&t.preference).into()),
        }
    }
}

impl FromPb<pb::PreferredSchedulingTerm> for model::PreferredSchedulingTerm {
    fn from_pb(t: pb::PreferredSchedulingTerm, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PreferredSchedulingTerm {
            weight: t.weight,
            preference: msg_from_pb(t.preference, &path.field("preference"))?,
        })
    }
}

// ------------------------------------------------------------------------- affinity

impl From<&model::NodeAffinity> for pb::NodeAffinity {
    fn from(a: &model::NodeAffinity) -> Self {
        pb::NodeAffinity {
            required_during_scheduling_ignored_during_execution: a
                .required_during_scheduling_ignored_during_execution
                .as_ref()
                .map(Into::into),
            preferred_during_scheduling_ignored_during_execution: a
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .map(Into::into)
                .collect(),
        }
    }
}

impl FromPb<pb::NodeAffinity> for model::NodeAffinity {
    fn from_pb(a: pb::NodeAffinity, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeAffinity {
            required_during_scheduling_ignored_during_execution: opt_from_pb(
                a.required_during_scheduling_ignored_during_execution,
                &path.field("requiredDuringSchedulingIgnoredDuringExecution"),
            )?,
            preferred_during_scheduling_ignored_during_execution: vec_from_pb(
                a.preferred_during_scheduling_ignored_during_execution,
                &path.field("preferredDuringSchedulingIgnoredDuringExecution"),
            )?,
        })
    }
}

impl From<&model::PodAffinityTerm> for pb::PodAffinityTerm {
    fn from(t: &model::PodAffinityTerm) -> Self {
        pb::PodAffinityTerm {
            label_selector: t.label_selector.as_ref().map(Into::into),
            namespaces: t.namespaces.clone(),
            topology_key: t.topology_key.clone(),
            namespace_selector: t.namespace_selector.as_ref().map(Into::into),
            match_label_keys: t.match_label_keys.clone(),
            mismatch_label_keys: t.mismatch_label_keys.clone(),
        }
    }
}

impl FromPb<pb::PodAffinityTerm> for model::PodAffinityTerm {
    fn from_pb(t: pb::PodAffinityTerm, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodAffinityTerm {
            label_selector: opt_from_pb(t.label_selector, &path.field("labelSelector"))?,
            namespaces: t.namespaces,
            topology_key: t.topology_key,
            namespace_selector: opt_from_pb(
                t.namespace_selector,
                &path.field("namespaceSelector"),
            )?,
            match_label_keys: t.match_label_keys,
            mismatch_label_keys: t.mismatch_label_keys,
        })
    }
}

impl From<&model::WeightedPodAffinityTerm> for pb::WeightedPodAffinityTerm {
    fn from(t: &model::WeightedPodAffinityTerm) -> Self {
        pb::WeightedPodAffinityTerm {
            weight: t.weight,
            pod_affinity_term: Some((&t.pod_affinity_term).into()),
        }
    }
}

impl FromPb<pb::WeightedPodAffinityTerm> for model::WeightedPodAffinityTerm {
    fn from_pb(t: pb::WeightedPodAffinityTerm, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::WeightedPodAffinityTerm {
            weight: t.weight,
            pod_affinity_term: msg_from_pb(t.pod_affinity_term, &path.field("podAffinityTerm"))?,
        })
    }
}

impl From<&model::PodAffinity> for pb::PodAffinity {
    fn from(a: &model::PodAffinity) -> Self {
        pb::PodAffinity {
            required_during_scheduling_ignored_during_execution: a
                .required_during_scheduling_ignored_during_execution
                .iter()
                .map(Into::into)
                .collect(),
            preferred_during_scheduling_ignored_during_execution: a
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .map(Into::into)
                .collect(),
        }
    }
}

impl FromPb<pb::PodAffinity> for model::PodAffinity {
    fn from_pb(a: pb::PodAffinity, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodAffinity {
            required_during_scheduling_ignored_during_execution: vec_from_pb(
                a.required_during_scheduling_ignored_during_execution,
                &path.field("requiredDuringSchedulingIgnoredDuringExecution"),
            )?,
            preferred_during_scheduling_ignored_during_execution: vec_from_pb(
                a.preferred_during_scheduling_ignored_during_execution,
                &path.field("preferredDuringSchedulingIgnoredDuringExecution"),
            )?,
        })
    }
}

impl From<&model::Affinity> for pb::Affinity {
    fn from(a: &model::Affinity) -> Self {
        pb::Affinity {
            node_affinity: a.node_affinity.as_ref().map(Into::into),
            pod_affinity: a.pod_affinity.as_ref().map(Into::into),
            pod_anti_affinity: a.pod_anti_affinity.as_ref().map(Into::into),
        }
    }
}

impl FromPb<pb::Affinity> for model::Affinity {
    fn from_pb(a: pb::Affinity, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Affinity {
            node_affinity: opt_from_pb(a.node_affinity, &path.field("nodeAffinity"))?,
            pod_affinity: opt_from_pb(a.pod_affinity, &path.field("podAffinity"))?,
            pod_anti_affinity: opt_from_pb(a.pod_anti_affinity, &path.field("podAntiAffinity"))?,
        })
    }
}

// ------------------------------------------------------------------------- taints, spread

impl From<&model::Taint> for pb::Taint {
    fn from(t: &model::Taint) -> Self {
        pb::Taint {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.name().to_string(),
            time_added: time_to_pb(&t.time_added),
        }
    }
}

impl FromPb<pb::Taint> for model::Taint {
    fn from_pb(t: pb::Taint, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Taint {
            effect: required_enum(&t.effect, &path.field("effect"))?,
            time_added: opt_from_pb(t.time_added, &path.field("timeAdded"))?,
            key: t.key,
            value: t.value,
        })
    }
}

impl From<&model::Toleration> for pb::Toleration {
    fn from(t: &model::Toleration) -> Self {
        pb::Toleration {
            key: t.key.clone(),
            operator: opt_enum_to_pb(t.operator),
            value: t.value.clone(),
            effect: opt_enum_to_pb(t.effect),
            toleration_seconds: t.toleration_seconds,
        }
    }
}

impl FromPb<pb::Toleration> for model::Toleration {
    fn from_pb(t: pb::Toleration, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Toleration {
            operator: optional_enum(&t.operator, &path.field("operator"))?,
            effect: optional_enum(&t.effect, &path.field("effect"))?,
            key: t.key,
            value: t.value,
            toleration_seconds: t.toleration_seconds,
        })
    }
}

impl From<&model::TopologySpreadConstraint> for pb::TopologySpreadConstraint {
    fn from(c: &model::TopologySpreadConstraint) -> Self {
        pb::TopologySpreadConstraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.clone(),
            when_unsatisfiable: c.when_unsatisfiable.name().to_string(),
            label_selector: c.label_selector.as_ref().map(Into::into),
            min_domains: c.min_domains,
            node_affinity_policy: opt_enum_to_pb(c.node_affinity_policy),
            node_taints_policy: opt_enum_to_pb(c.node_taints_policy),
            match_label_keys: c.match_label_keys.clone(),
        }
    }
}

impl FromPb<pb::TopologySpreadConstraint> for model::TopologySpreadConstraint {
    fn from_pb(c: pb::TopologySpreadConstraint, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::TopologySpreadConstraint {
            max_skew: c.max_skew,
            when_unsatisfiable: required_enum(
                &c.when_unsatisfiable,
                &path.field("whenUnsatisfiable"),
            )?,
            label_selector: opt_from_pb(c.label_selector, &path.field("labelSelector"))?,
            min_domains: c.min_domains,
            node_affinity_policy: optional_enum(
                &c.node_affinity_policy,
                &path.field("nodeAffinityPolicy"),
            )?,
            node_taints_policy: optional_enum(
                &c.node_taints_policy,
                &path.field("nodeTaintsPolicy"),
            )?,
            topology_key: c.topology_key,
            match_label_keys: c.match_label_keys,
        })
    }
}

// ------------------------------------------------------------------------- pods

impl From<&model::ResourceRequirements> for pb::ResourceRequirements {
    fn from(r: &model::ResourceRequirements) -> Self {
        pb::ResourceRequirements {
            requests: resources_to_pb(&r.requests),
            limits: resources_to_pb(&r.limits),
        }
    }
}

impl FromPb<pb::ResourceRequirements> for model::ResourceRequirements {
    fn from_pb(r: pb::ResourceRequirements, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ResourceRequirements {
            requests: resources_from_pb(r.requests, &path.field("requests"))?,
            limits: resources_from_pb(r.limits, &path.field("limits"))?,
            claims: None,
        })
    }
}

impl From<&model::EnvVar> for pb::EnvVar {
    fn from(e: &model::EnvVar) -> Self {
        pb::EnvVar {
            name: e.name.clone(),
            value: e.value.clone(),
        }
    }
}

impl FromPb<pb::EnvVar> for model::EnvVar {
    fn from_pb(e: pb::EnvVar, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::EnvVar {
            name: e.name,
            value: e.value,
            value_from: None,
        })
    }
}

impl From<&model::Container> for pb::Container {
    fn from(c: &model::Container) -> Self {
        pb::Container {
            name: c.name.clone(),
            image: c.image.clone(),
            command: c.command.clone(),
            args: c.args.clone(),
            env: c.env.iter().map(Into::into).collect(),
            resources: Some((&c.resources).into()),
            restart_policy: opt_enum_to_pb(c.restart_policy),
        }
    }
}

impl FromPb<pb::Container> for model::Container {
    fn from_pb(c: pb::Container, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Container {
            env: vec_from_pb(c.env, &path.field("env"))?,
            resources: msg_from_pb(c.resources, &path.field("resources"))?,
            restart_policy: optional_enum(&c.restart_policy, &path.field("restartPolicy"))?,
            name: c.name,
            image: c.image,
            command: c.command,
            args: c.args,
            ..Default::default()
        })
    }
}

impl From<&model::PodSchedulingGate> for pb::PodSchedulingGate {
    fn from(g: &model::PodSchedulingGate) -> Self {
        pb::PodSchedulingGate {
            name: g.name.clone(),
        }
    }
}

impl FromPb<pb::PodSchedulingGate> for model::PodSchedulingGate {
    fn from_pb(g: pb::PodSchedulingGate, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodSchedulingGate { name: g.name })
    }
}

impl From<&model::PodSpec> for pb::PodSpec {
    fn from(s: &model::PodSpec) -> Self {
        pb::PodSpec {
            containers: s.containers.iter().map(Into::into).collect(),
            init_containers: s.init_containers.iter().map(Into::into).collect(),
            node_name: s.node_name.clone(),
            node_selector: map_to_pb(&s.node_selector),
            affinity: s.affinity.as_ref().map(Into::into),
            tolerations: s.tolerations.iter().map(Into::into).collect(),
            scheduler_name: s.scheduler_name.clone(),
            priority: s.priority,
            priority_class_name: s.priority_class_name.clone(),
            preemption_policy: opt_enum_to_pb(s.preemption_policy),
            overhead: resources_to_pb(&s.overhead),
            topology_spread_constraints: s
                .topology_spread_constraints
                .iter()
                .map(Into::into)
                .collect(),
            scheduling_gates: s.scheduling_gates.iter().map(Into::into).collect(),
            restart_policy: opt_enum_to_pb(s.restart_policy),
            termination_grace_period_seconds: s.termination_grace_period_seconds,
            resources: s.resources.as_ref().map(Into::into),
            runtime_class_name: s.runtime_class_name.clone(),
        }
    }
}

impl FromPb<pb::PodSpec> for model::PodSpec {
    fn from_pb(s: pb::PodSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodSpec {
            containers: vec_from_pb(s.containers, &path.field("containers"))?,
            init_containers: vec_from_pb(s.init_containers, &path.field("initContainers"))?,
            node_name: s.node_name,
            node_selector: map_to_model(s.node_selector),
            affinity: opt_from_pb(s.affinity, &path.field("affinity"))?,
            tolerations: vec_from_pb(s.tolerations, &path.field("tolerations"))?,
            scheduler_name: s.scheduler_name,
            priority: s.priority,
            priority_class_name: s.priority_class_name,
            preemption_policy: optional_enum(
                &s.preemption_policy,
                &path.field("preemptionPolicy"),
            )?,
            overhead: resources_from_pb(s.overhead, &path.field("overhead"))?,
            topology_spread_constraints: vec_from_pb(
                s.topology_spread_constraints,
                &path.field("topologySpreadConstraints"),
            )?,
            scheduling_gates: vec_from_pb(s.scheduling_gates, &path.field("schedulingGates"))?,
            restart_policy: optional_enum(&s.restart_policy, &path.field("restartPolicy"))?,
            termination_grace_period_seconds: s.termination_grace_period_seconds,
            resources: opt_from_pb(s.resources, &path.field("resources"))?,
            runtime_class_name: s.runtime_class_name,
            ..Default::default()
        })
    }
}

impl From<&model::PodCondition> for pb::PodCondition {
    fn from(c: &model::PodCondition) -> Self {
        pb::PodCondition {
            r#type: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: time_to_pb(&c.last_transition_time),
        }
    }
}

impl FromPb<pb::PodCondition> for model::PodCondition {
    fn from_pb(c: pb::PodCondition, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodCondition {
            last_transition_time: opt_from_pb(
                c.last_transition_time,
                &path.field("lastTransitionTime"),
            )?,
            type_: c.r#type,
            status: c.status,
            reason: c.reason,
            message: c.message,
            last_probe_time: None,
        })
    }
}

impl From<&model::ContainerStatus> for pb::ContainerStatus {
    fn from(c: &model::ContainerStatus) -> Self {
        pb::ContainerStatus {
            name: c.name.clone(),
            ready: c.ready,
            restart_count: c.restart_count,
            state: c.state.clone(),
            exit_code: c.exit_code,
            reason: c.reason.clone(),
        }
    }
}

impl FromPb<pb::ContainerStatus> for model::ContainerStatus {
    fn from_pb(c: pb::ContainerStatus, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ContainerStatus {
            name: c.name,
            ready: c.ready,
            restart_count: c.restart_count,
            state: c.state,
            exit_code: c.exit_code,
            reason: c.reason,
            image: None,
        })
    }
}

impl From<&model::PodStatus> for pb::PodStatus {
    fn from(s: &model::PodStatus) -> Self {
        pb::PodStatus {
            phase: s.phase.name().to_string(),
            conditions: s.conditions.iter().map(Into::into).collect(),
            reason: s.reason.clone(),
            message: s.message.clone(),
            nominated_node_name: s.nominated_node_name.clone(),
            start_time: time_to_pb(&s.start_time),
            host_ip: s.host_ip.clone(),
            container_statuses: s.container_statuses.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::PodStatus> for model::PodStatus {
    fn from_pb(s: pb::PodStatus, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodStatus {
            phase: defaulted_enum(&s.phase, &path.field("phase"))?,
            conditions: vec_from_pb(s.conditions, &path.field("conditions"))?,
            reason: s.reason,
            message: s.message,
            nominated_node_name: s.nominated_node_name,
            start_time: opt_from_pb(s.start_time, &path.field("startTime"))?,
            host_ip: s.host_ip,
            container_statuses: vec_from_pb(
                s.container_statuses,
                &path.field("containerStatuses"),
            )?,
            ..Default::default()
        })
    }
}

impl From<&model::Pod> for pb::Pod {
    fn from(p: &model::Pod) -> Self {
        pb::Pod {
            metadata: Some((&p.metadata).into()),
            spec: Some((&p.spec).into()),
            status: Some((&p.status).into()),
        }
    }
}

impl FromPb<pb::Pod> for model::Pod {
    fn from_pb(p: pb::Pod, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Pod {
            api_version: Kind::Pod.api_version().to_string(),
            kind: Kind::Pod.as_str().to_string(),
            metadata: msg_from_pb(p.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(p.spec, &path.field("spec"))?,
            status: msg_from_pb(p.status, &path.field("status"))?,
        })
    }
}

// ------------------------------------------------------------------------- nodes

impl From<&model::NodeSpec> for pb::NodeSpec {
    fn from(s: &model::NodeSpec) -> Self {
        pb::NodeSpec {
            unschedulable: s.unschedulable,
            taints: s.taints.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::NodeSpec> for model::NodeSpec {
    fn from_pb(s: pb::NodeSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeSpec {
            unschedulable: s.unschedulable,
            taints: vec_from_pb(s.taints, &path.field("taints"))?,
            ..Default::default()
        })
    }
}

impl From<&model::NodeCondition> for pb::NodeCondition {
    fn from(c: &model::NodeCondition) -> Self {
        pb::NodeCondition {
            r#type: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_heartbeat_time: time_to_pb(&c.last_heartbeat_time),
            last_transition_time: time_to_pb(&c.last_transition_time),
        }
    }
}

impl FromPb<pb::NodeCondition> for model::NodeCondition {
    fn from_pb(c: pb::NodeCondition, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeCondition {
            last_heartbeat_time: opt_from_pb(
                c.last_heartbeat_time,
                &path.field("lastHeartbeatTime"),
            )?,
            last_transition_time: opt_from_pb(
                c.last_transition_time,
                &path.field("lastTransitionTime"),
            )?,
            type_: c.r#type,
            status: c.status,
            reason: c.reason,
            message: c.message,
        })
    }
}

impl From<&model::NodeAddress> for pb::NodeAddress {
    fn from(a: &model::NodeAddress) -> Self {
        pb::NodeAddress {
            r#type: a.type_.clone(),
            address: a.address.clone(),
        }
    }
}

impl FromPb<pb::NodeAddress> for model::NodeAddress {
    fn from_pb(a: pb::NodeAddress, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeAddress {
            type_: a.r#type,
            address: a.address,
        })
    }
}

impl From<&model::NodeStatus> for pb::NodeStatus {
    fn from(s: &model::NodeStatus) -> Self {
        pb::NodeStatus {
            capacity: resources_to_pb(&s.capacity),
            allocatable: resources_to_pb(&s.allocatable),
            conditions: s.conditions.iter().map(Into::into).collect(),
            addresses: s.addresses.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::NodeStatus> for model::NodeStatus {
    fn from_pb(s: pb::NodeStatus, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::NodeStatus {
            capacity: resources_from_pb(s.capacity, &path.field("capacity"))?,
            allocatable: resources_from_pb(s.allocatable, &path.field("allocatable"))?,
            conditions: vec_from_pb(s.conditions, &path.field("conditions"))?,
            addresses: vec_from_pb(s.addresses, &path.field("addresses"))?,
            ..Default::default()
        })
    }
}

impl From<&model::Node> for pb::Node {
    fn from(n: &model::Node) -> Self {
        pb::Node {
            metadata: Some((&n.metadata).into()),
            spec: Some((&n.spec).into()),
            status: Some((&n.status).into()),
        }
    }
}

impl FromPb<pb::Node> for model::Node {
    fn from_pb(n: pb::Node, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Node {
            api_version: Kind::Node.api_version().to_string(),
            kind: Kind::Node.as_str().to_string(),
            metadata: msg_from_pb(n.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(n.spec, &path.field("spec"))?,
            status: msg_from_pb(n.status, &path.field("status"))?,
        })
    }
}

// ------------------------------------------------------------------------- other kinds

impl From<&model::PriorityClass> for pb::PriorityClass {
    fn from(c: &model::PriorityClass) -> Self {
        pb::PriorityClass {
            metadata: Some((&c.metadata).into()),
            value: c.value,
            global_default: c.global_default,
            description: c.description.clone(),
            preemption_policy: opt_enum_to_pb(c.preemption_policy),
        }
    }
}

impl FromPb<pb::PriorityClass> for model::PriorityClass {
    fn from_pb(c: pb::PriorityClass, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PriorityClass {
            api_version: Kind::PriorityClass.api_version().to_string(),
            kind: Kind::PriorityClass.as_str().to_string(),
            metadata: msg_from_pb(c.metadata, &path.field("metadata"))?,
            value: c.value,
            global_default: c.global_default,
            description: c.description,
            preemption_policy: optional_enum(
                &c.preemption_policy,
                &path.field("preemptionPolicy"),
            )?,
        })
    }
}

impl From<&model::ObjectReference> for pb::ObjectReference {
    fn from(r: &model::ObjectReference) -> Self {
        pb::ObjectReference {
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
        }
    }
}

impl FromPb<pb::ObjectReference> for model::ObjectReference {
    fn from_pb(r: pb::ObjectReference, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ObjectReference {
            kind: r.kind,
            namespace: r.namespace,
            name: r.name,
            uid: r.uid,
            ..Default::default()
        })
    }
}

impl From<&model::Event> for pb::Event {
    fn from(e: &model::Event) -> Self {
        pb::Event {
            metadata: Some((&e.metadata).into()),
            involved_object: Some((&e.involved_object).into()),
            reason: e.reason.clone(),
            message: e.message.clone(),
            r#type: e.type_.clone(),
            count: e.count,
            first_timestamp: time_to_pb(&e.first_timestamp),
            last_timestamp: time_to_pb(&e.last_timestamp),
            reporting_component: e.reporting_component.clone(),
        }
    }
}

impl FromPb<pb::Event> for model::Event {
    fn from_pb(e: pb::Event, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Event {
            api_version: Kind::Event.api_version().to_string(),
            kind: Kind::Event.as_str().to_string(),
            metadata: msg_from_pb(e.metadata, &path.field("metadata"))?,
            involved_object: msg_from_pb(e.involved_object, &path.field("involvedObject"))?,
            reason: e.reason,
            message: e.message,
            type_: e.r#type,
            count: e.count,
            first_timestamp: opt_from_pb(e.first_timestamp, &path.field("firstTimestamp"))?,
            last_timestamp: opt_from_pb(e.last_timestamp, &path.field("lastTimestamp"))?,
            reporting_component: e.reporting_component,
            source: None,
        })
    }
}

// ------------------------------------------------------------------------- namespaces

impl From<&model::Namespace> for pb::Namespace {
    fn from(n: &model::Namespace) -> Self {
        pb::Namespace {
            metadata: Some((&n.metadata).into()),
        }
    }
}

impl FromPb<pb::Namespace> for model::Namespace {
    fn from_pb(n: pb::Namespace, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Namespace {
            api_version: Kind::Namespace.api_version().to_string(),
            kind: Kind::Namespace.as_str().to_string(),
            metadata: msg_from_pb(n.metadata, &path.field("metadata"))?,
            ..Default::default()
        })
    }
}

// ------------------------------------------------------------------------- runtime classes

impl From<&model::Overhead> for pb::Overhead {
    fn from(o: &model::Overhead) -> Self {
        pb::Overhead {
            pod_fixed: resources_to_pb(&o.pod_fixed),
        }
    }
}

impl FromPb<pb::Overhead> for model::Overhead {
    fn from_pb(o: pb::Overhead, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Overhead {
            pod_fixed: resources_from_pb(o.pod_fixed, &path.field("podFixed"))?,
        })
    }
}

impl From<&model::Scheduling> for pb::Scheduling {
    fn from(s: &model::Scheduling) -> Self {
        pb::Scheduling {
            node_selector: map_to_pb(&s.node_selector),
            tolerations: s.tolerations.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::Scheduling> for model::Scheduling {
    fn from_pb(s: pb::Scheduling, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Scheduling {
            node_selector: map_to_model(s.node_selector),
            tolerations: vec_from_pb(s.tolerations, &path.field("tolerations"))?,
        })
    }
}

impl From<&model::RuntimeClass> for pb::RuntimeClass {
    fn from(c: &model::RuntimeClass) -> Self {
        pb::RuntimeClass {
            metadata: Some((&c.metadata).into()),
            handler: c.handler.clone(),
            overhead: c.overhead.as_ref().map(Into::into),
            scheduling: c.scheduling.as_ref().map(Into::into),
        }
    }
}

impl FromPb<pb::RuntimeClass> for model::RuntimeClass {
    fn from_pb(c: pb::RuntimeClass, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::RuntimeClass {
            api_version: Kind::RuntimeClass.api_version().to_string(),
            kind: Kind::RuntimeClass.as_str().to_string(),
            metadata: msg_from_pb(c.metadata, &path.field("metadata"))?,
            handler: c.handler,
            overhead: opt_from_pb(c.overhead, &path.field("overhead"))?,
            scheduling: opt_from_pb(c.scheduling, &path.field("scheduling"))?,
        })
    }
}

// ------------------------------------------------------------------------- disruption budgets

impl From<&model::IntOrString> for pb::IntOrString {
    fn from(v: &model::IntOrString) -> Self {
        let value = match v {
            model::IntOrString::Int(i) => pb::int_or_string::Value::IntVal(*i),
            model::IntOrString::String(s) => pb::int_or_string::Value::StrVal(s.clone()),
        };
        pb::IntOrString { value: Some(value) }
    }
}

impl FromPb<pb::IntOrString> for model::IntOrString {
    fn from_pb(v: pb::IntOrString, path: &Path<'_>) -> Result<Self, ConvertError> {
        match v.value {
            Some(pb::int_or_string::Value::IntVal(i)) => Ok(model::IntOrString::Int(i)),
            Some(pb::int_or_string::Value::StrVal(s)) => Ok(model::IntOrString::String(s)),
            None => Err(path.error(ConvertProblem::Required)),
        }
    }
}

impl From<&model::PodDisruptionBudgetSpec> for pb::PodDisruptionBudgetSpec {
    fn from(s: &model::PodDisruptionBudgetSpec) -> Self {
        pb::PodDisruptionBudgetSpec {
            min_available: s.min_available.as_ref().map(Into::into),
            max_unavailable: s.max_unavailable.as_ref().map(Into::into),
            selector: s.selector.as_ref().map(Into::into),
        }
    }
}

impl FromPb<pb::PodDisruptionBudgetSpec> for model::PodDisruptionBudgetSpec {
    fn from_pb(s: pb::PodDisruptionBudgetSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodDisruptionBudgetSpec {
            min_available: opt_from_pb(s.min_available, &path.field("minAvailable"))?,
            max_unavailable: opt_from_pb(s.max_unavailable, &path.field("maxUnavailable"))?,
            selector: opt_from_pb(s.selector, &path.field("selector"))?,
            unhealthy_pod_eviction_policy: None,
        })
    }
}

impl From<&model::PodDisruptionBudgetStatus> for pb::PodDisruptionBudgetStatus {
    fn from(s: &model::PodDisruptionBudgetStatus) -> Self {
        pb::PodDisruptionBudgetStatus {
            current_healthy: s.current_healthy,
            desired_healthy: s.desired_healthy,
            disruptions_allowed: s.disruptions_allowed,
            expected_pods: s.expected_pods,
        }
    }
}

impl FromPb<pb::PodDisruptionBudgetStatus> for model::PodDisruptionBudgetStatus {
    fn from_pb(s: pb::PodDisruptionBudgetStatus, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodDisruptionBudgetStatus {
            current_healthy: s.current_healthy,
            desired_healthy: s.desired_healthy,
            disruptions_allowed: s.disruptions_allowed,
            expected_pods: s.expected_pods,
            ..Default::default()
        })
    }
}

impl From<&model::PodDisruptionBudget> for pb::PodDisruptionBudget {
    fn from(p: &model::PodDisruptionBudget) -> Self {
        pb::PodDisruptionBudget {
            metadata: Some((&p.metadata).into()),
            spec: Some((&p.spec).into()),
            status: Some((&p.status).into()),
        }
    }
}

impl FromPb<pb::PodDisruptionBudget> for model::PodDisruptionBudget {
    fn from_pb(p: pb::PodDisruptionBudget, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodDisruptionBudget {
            api_version: Kind::PodDisruptionBudget.api_version().to_string(),
            kind: Kind::PodDisruptionBudget.as_str().to_string(),
            metadata: msg_from_pb(p.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(p.spec, &path.field("spec"))?,
            status: msg_from_pb(p.status, &path.field("status"))?,
        })
    }
}

// ------------------------------------------------------------------------- workloads

impl From<&model::PodTemplateSpec> for pb::PodTemplateSpec {
    fn from(t: &model::PodTemplateSpec) -> Self {
        pb::PodTemplateSpec {
            metadata: Some((&t.metadata).into()),
            spec: Some((&t.spec).into()),
        }
    }
}

impl FromPb<pb::PodTemplateSpec> for model::PodTemplateSpec {
    fn from_pb(t: pb::PodTemplateSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::PodTemplateSpec {
            metadata: msg_from_pb(t.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(t.spec, &path.field("spec"))?,
        })
    }
}

impl From<&model::RollingUpdateDeployment> for pb::RollingUpdateDeployment {
    fn from(r: &model::RollingUpdateDeployment) -> Self {
        pb::RollingUpdateDeployment {
            max_unavailable: r.max_unavailable.as_ref().map(Into::into),
            max_surge: r.max_surge.as_ref().map(Into::into),
        }
    }
}

impl FromPb<pb::RollingUpdateDeployment> for model::RollingUpdateDeployment {
    fn from_pb(r: pb::RollingUpdateDeployment, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::RollingUpdateDeployment {
            max_unavailable: opt_from_pb(r.max_unavailable, &path.field("maxUnavailable"))?,
            max_surge: opt_from_pb(r.max_surge, &path.field("maxSurge"))?,
        })
    }
}

impl From<&model::DeploymentStrategy> for pb::DeploymentStrategy {
    fn from(s: &model::DeploymentStrategy) -> Self {
        pb::DeploymentStrategy {
            r#type: opt_enum_to_pb(s.type_),
            rolling_update: s.rolling_update.as_ref().map(Into::into),
        }
    }
}

impl FromPb<pb::DeploymentStrategy> for model::DeploymentStrategy {
    fn from_pb(s: pb::DeploymentStrategy, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::DeploymentStrategy {
            type_: optional_enum(&s.r#type, &path.field("type"))?,
            rolling_update: opt_from_pb(s.rolling_update, &path.field("rollingUpdate"))?,
        })
    }
}

impl From<&model::DeploymentSpec> for pb::DeploymentSpec {
    fn from(s: &model::DeploymentSpec) -> Self {
        pb::DeploymentSpec {
            replicas: Some(s.replicas),
            selector: s.selector.as_ref().map(Into::into),
            template: Some((&s.template).into()),
            strategy: s.strategy.as_ref().map(Into::into),
        }
    }
}

impl FromPb<pb::DeploymentSpec> for model::DeploymentSpec {
    fn from_pb(s: pb::DeploymentSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::DeploymentSpec {
            replicas: s.replicas.unwrap_or(model::DEFAULT_REPLICAS),
            selector: opt_from_pb(s.selector, &path.field("selector"))?,
            template: msg_from_pb(s.template, &path.field("template"))?,
            strategy: opt_from_pb(s.strategy, &path.field("strategy"))?,
            ..Default::default()
        })
    }
}

impl From<&model::DeploymentStatus> for pb::DeploymentStatus {
    fn from(s: &model::DeploymentStatus) -> Self {
        pb::DeploymentStatus {
            replicas: s.replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            updated_replicas: s.updated_replicas,
            observed_generation: s.observed_generation,
        }
    }
}

impl FromPb<pb::DeploymentStatus> for model::DeploymentStatus {
    fn from_pb(s: pb::DeploymentStatus, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::DeploymentStatus {
            replicas: s.replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            updated_replicas: s.updated_replicas,
            observed_generation: s.observed_generation,
            ..Default::default()
        })
    }
}

impl From<&model::Deployment> for pb::Deployment {
    fn from(d: &model::Deployment) -> Self {
        pb::Deployment {
            metadata: Some((&d.metadata).into()),
            spec: Some((&d.spec).into()),
            status: Some((&d.status).into()),
        }
    }
}

impl FromPb<pb::Deployment> for model::Deployment {
    fn from_pb(d: pb::Deployment, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::Deployment {
            api_version: Kind::Deployment.api_version().to_string(),
            kind: Kind::Deployment.as_str().to_string(),
            metadata: msg_from_pb(d.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(d.spec, &path.field("spec"))?,
            status: msg_from_pb(d.status, &path.field("status"))?,
        })
    }
}

impl From<&model::ReplicaSetSpec> for pb::ReplicaSetSpec {
    fn from(s: &model::ReplicaSetSpec) -> Self {
        pb::ReplicaSetSpec {
            replicas: Some(s.replicas),
            selector: s.selector.as_ref().map(Into::into),
            template: Some((&s.template).into()),
        }
    }
}

impl FromPb<pb::ReplicaSetSpec> for model::ReplicaSetSpec {
    fn from_pb(s: pb::ReplicaSetSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ReplicaSetSpec {
            replicas: s.replicas.unwrap_or(model::DEFAULT_REPLICAS),
            selector: opt_from_pb(s.selector, &path.field("selector"))?,
            template: msg_from_pb(s.template, &path.field("template"))?,
            min_ready_seconds: None,
        })
    }
}

impl From<&model::ReplicaSetStatus> for pb::ReplicaSetStatus {
    fn from(s: &model::ReplicaSetStatus) -> Self {
        pb::ReplicaSetStatus {
            replicas: s.replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
        }
    }
}

impl FromPb<pb::ReplicaSetStatus> for model::ReplicaSetStatus {
    fn from_pb(s: pb::ReplicaSetStatus, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ReplicaSetStatus {
            replicas: s.replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            ..Default::default()
        })
    }
}

impl From<&model::ReplicaSet> for pb::ReplicaSet {
    fn from(r: &model::ReplicaSet) -> Self {
        pb::ReplicaSet {
            metadata: Some((&r.metadata).into()),
            spec: Some((&r.spec).into()),
            status: Some((&r.status).into()),
        }
    }
}

impl FromPb<pb::ReplicaSet> for model::ReplicaSet {
    fn from_pb(r: pb::ReplicaSet, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ReplicaSet {
            api_version: Kind::ReplicaSet.api_version().to_string(),
            kind: Kind::ReplicaSet.as_str().to_string(),
            metadata: msg_from_pb(r.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(r.spec, &path.field("spec"))?,
            status: msg_from_pb(r.status, &path.field("status"))?,
        })
    }
}

impl From<&model::DaemonSetSpec> for pb::DaemonSetSpec {
    fn from(s: &model::DaemonSetSpec) -> Self {
        pb::DaemonSetSpec {
            selector: s.selector.as_ref().map(Into::into),
            template: Some((&s.template).into()),
        }
    }
}

impl FromPb<pb::DaemonSetSpec> for model::DaemonSetSpec {
    fn from_pb(s: pb::DaemonSetSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::DaemonSetSpec {
            selector: opt_from_pb(s.selector, &path.field("selector"))?,
            template: msg_from_pb(s.template, &path.field("template"))?,
            ..Default::default()
        })
    }
}

impl From<&model::DaemonSetStatus> for pb::DaemonSetStatus {
    fn from(s: &model::DaemonSetStatus) -> Self {
        pb::DaemonSetStatus {
            desired_number_scheduled: s.desired_number_scheduled,
            current_number_scheduled: s.current_number_scheduled,
            number_ready: s.number_ready,
        }
    }
}

impl FromPb<pb::DaemonSetStatus> for model::DaemonSetStatus {
    fn from_pb(s: pb::DaemonSetStatus, _path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::DaemonSetStatus {
            desired_number_scheduled: s.desired_number_scheduled,
            current_number_scheduled: s.current_number_scheduled,
            number_ready: s.number_ready,
            ..Default::default()
        })
    }
}

impl From<&model::DaemonSet> for pb::DaemonSet {
    fn from(d: &model::DaemonSet) -> Self {
        pb::DaemonSet {
            metadata: Some((&d.metadata).into()),
            spec: Some((&d.spec).into()),
            status: Some((&d.status).into()),
        }
    }
}

impl FromPb<pb::DaemonSet> for model::DaemonSet {
    fn from_pb(d: pb::DaemonSet, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::DaemonSet {
            api_version: Kind::DaemonSet.api_version().to_string(),
            kind: Kind::DaemonSet.as_str().to_string(),
            metadata: msg_from_pb(d.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(d.spec, &path.field("spec"))?,
            status: msg_from_pb(d.status, &path.field("status"))?,
        })
    }
}

// ------------------------------------------------------------------------- quotas

impl From<&model::ScopedResourceSelectorRequirement> for pb::ScopedResourceSelectorRequirement {
    fn from(r: &model::ScopedResourceSelectorRequirement) -> Self {
        pb::ScopedResourceSelectorRequirement {
            scope_name: r.scope_name.name().to_string(),
            operator: r.operator.name().to_string(),
            values: r.values.clone(),
        }
    }
}

impl FromPb<pb::ScopedResourceSelectorRequirement> for model::ScopedResourceSelectorRequirement {
    fn from_pb(
        r: pb::ScopedResourceSelectorRequirement,
        path: &Path<'_>,
    ) -> Result<Self, ConvertError> {
        Ok(model::ScopedResourceSelectorRequirement {
            scope_name: required_enum(&r.scope_name, &path.field("scopeName"))?,
            operator: required_enum(&r.operator, &path.field("operator"))?,
            values: r.values,
        })
    }
}

impl From<&model::ScopeSelector> for pb::ScopeSelector {
    fn from(s: &model::ScopeSelector) -> Self {
        pb::ScopeSelector {
            match_expressions: s.match_expressions.iter().map(Into::into).collect(),
        }
    }
}

impl FromPb<pb::ScopeSelector> for model::ScopeSelector {
    fn from_pb(s: pb::ScopeSelector, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ScopeSelector {
            match_expressions: vec_from_pb(s.match_expressions, &path.field("matchExpressions"))?,
        })
    }
}

impl From<&model::ResourceQuotaSpec> for pb::ResourceQuotaSpec {
    fn from(s: &model::ResourceQuotaSpec) -> Self {
        pb::ResourceQuotaSpec {
            hard: resources_to_pb(&s.hard),
            scopes: s.scopes.iter().map(|sc| sc.name().to_string()).collect(),
            scope_selector: s.scope_selector.as_ref().map(Into::into),
        }
    }
}

impl FromPb<pb::ResourceQuotaSpec> for model::ResourceQuotaSpec {
    fn from_pb(s: pb::ResourceQuotaSpec, path: &Path<'_>) -> Result<Self, ConvertError> {
        let scopes_path = path.field("scopes");
        Ok(model::ResourceQuotaSpec {
            hard: resources_from_pb(s.hard, &path.field("hard"))?,
            scopes: s
                .scopes
                .iter()
                .enumerate()
                .map(|(i, sc)| required_enum(sc, &scopes_path.index(i)))
                .collect::<Result<_, _>>()?,
            scope_selector: opt_from_pb(s.scope_selector, &path.field("scopeSelector"))?,
        })
    }
}

impl From<&model::ResourceQuotaStatus> for pb::ResourceQuotaStatus {
    fn from(s: &model::ResourceQuotaStatus) -> Self {
        pb::ResourceQuotaStatus {
            hard: resources_to_pb(&s.hard),
            used: resources_to_pb(&s.used),
        }
    }
}

impl FromPb<pb::ResourceQuotaStatus> for model::ResourceQuotaStatus {
    fn from_pb(s: pb::ResourceQuotaStatus, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ResourceQuotaStatus {
            hard: resources_from_pb(s.hard, &path.field("hard"))?,
            used: resources_from_pb(s.used, &path.field("used"))?,
        })
    }
}

impl From<&model::ResourceQuota> for pb::ResourceQuota {
    fn from(q: &model::ResourceQuota) -> Self {
        pb::ResourceQuota {
            metadata: Some((&q.metadata).into()),
            spec: Some((&q.spec).into()),
            status: Some((&q.status).into()),
        }
    }
}

impl FromPb<pb::ResourceQuota> for model::ResourceQuota {
    fn from_pb(q: pb::ResourceQuota, path: &Path<'_>) -> Result<Self, ConvertError> {
        Ok(model::ResourceQuota {
            api_version: Kind::ResourceQuota.api_version().to_string(),
            kind: Kind::ResourceQuota.as_str().to_string(),
            metadata: msg_from_pb(q.metadata, &path.field("metadata"))?,
            spec: msg_from_pb(q.spec, &path.field("spec"))?,
            status: msg_from_pb(q.status, &path.field("status"))?,
        })
    }
}

// ------------------------------------------------------------------------- any object

/// The message for any stored object.
pub fn object_to_pb(obj: &Object) -> pb::Object {
    let kind = match obj {
        Object::Pod(p) => pb::object::Kind::Pod(p.into()),
        Object::Node(n) => pb::object::Kind::Node(n.into()),
        Object::PriorityClass(c) => pb::object::Kind::PriorityClass(c.into()),
        Object::Event(e) => pb::object::Kind::Event(e.into()),
        Object::Namespace(n) => pb::object::Kind::Namespace(n.into()),
        Object::RuntimeClass(c) => pb::object::Kind::RuntimeClass(c.into()),
        Object::PodDisruptionBudget(p) => pb::object::Kind::PodDisruptionBudget(p.into()),
        Object::Deployment(d) => pb::object::Kind::Deployment(d.into()),
        Object::ReplicaSet(r) => pb::object::Kind::ReplicaSet(r.into()),
        Object::DaemonSet(d) => pb::object::Kind::DaemonSet(d.into()),
        Object::ResourceQuota(q) => pb::object::Kind::ResourceQuota(q.into()),
    };
    pb::Object { kind: Some(kind) }
}

/// The object a message carries. Errors name fields relative to the object
/// (`spec.containers[0]...`); a message with no object set is an error at `kind`.
pub fn object_from_pb(msg: pb::Object) -> Result<Object, ConvertError> {
    let root = Path::Root;
    match msg.kind {
        None => Err(root.field("kind").error(ConvertProblem::Required)),
        Some(pb::object::Kind::Pod(p)) => model::Pod::from_pb(p, &root).map(Object::Pod),
        Some(pb::object::Kind::Node(n)) => model::Node::from_pb(n, &root).map(Object::Node),
        Some(pb::object::Kind::PriorityClass(c)) => {
            model::PriorityClass::from_pb(c, &root).map(Object::PriorityClass)
        }
        Some(pb::object::Kind::Event(e)) => model::Event::from_pb(e, &root).map(Object::Event),
        Some(pb::object::Kind::Namespace(n)) => {
            model::Namespace::from_pb(n, &root).map(Object::Namespace)
        }
        Some(pb::object::Kind::RuntimeClass(c)) => {
            model::RuntimeClass::from_pb(c, &root).map(Object::RuntimeClass)
        }
        Some(pb::object::Kind::PodDisruptionBudget(p)) => {
            model::PodDisruptionBudget::from_pb(p, &root).map(Object::PodDisruptionBudget)
        }
        Some(pb::object::Kind::Deployment(d)) => {
            model::Deployment::from_pb(d, &root).map(Object::Deployment)
        }
        Some(pb::object::Kind::ReplicaSet(r)) => {
            model::ReplicaSet::from_pb(r, &root).map(Object::ReplicaSet)
        }
        Some(pb::object::Kind::DaemonSet(d)) => {
            model::DaemonSet::from_pb(d, &root).map(Object::DaemonSet)
        }
        Some(pb::object::Kind::ResourceQuota(q)) => {
            model::ResourceQuota::from_pb(q, &root).map(Object::ResourceQuota)
        }
    }
}

impl From<&Object> for pb::Object {
    fn from(obj: &Object) -> Self {
        object_to_pb(obj)
    }
}

impl TryFrom<pb::Object> for Object {
    type Error = ConvertError;
    fn try_from(msg: pb::Object) -> Result<Self, ConvertError> {
        object_from_pb(msg)
    }
}

/// The wire enum for a kind.
pub fn kind_to_pb(kind: Kind) -> pb::Kind {
    match kind {
        Kind::Pod => pb::Kind::Pod,
        Kind::Node => pb::Kind::Node,
        Kind::PriorityClass => pb::Kind::PriorityClass,
        Kind::Event => pb::Kind::Event,
        Kind::Namespace => pb::Kind::Namespace,
        Kind::RuntimeClass => pb::Kind::RuntimeClass,
        Kind::PodDisruptionBudget => pb::Kind::PodDisruptionBudget,
        Kind::Deployment => pb::Kind::Deployment,
        Kind::ReplicaSet => pb::Kind::ReplicaSet,
        Kind::DaemonSet => pb::Kind::DaemonSet,
        Kind::ResourceQuota => pb::Kind::ResourceQuota,
    }
}

/// The kind a wire enum number names (as prost stores it in a message's `kind` field).
/// `KIND_UNSPECIFIED` is a required-value error at `kind`; a number this version does not
/// know is an unknown-kind error.
pub fn kind_from_pb(value: i32) -> Result<Kind, ConvertError> {
    let path = Path::Root;
    let path = path.field("kind");
    match pb::Kind::try_from(value) {
        Ok(pb::Kind::Pod) => Ok(Kind::Pod),
        Ok(pb::Kind::Node) => Ok(Kind::Node),
        Ok(pb::Kind::PriorityClass) => Ok(Kind::PriorityClass),
        Ok(pb::Kind::Event) => Ok(Kind::Event),
        Ok(pb::Kind::Namespace) => Ok(Kind::Namespace),
        Ok(pb::Kind::RuntimeClass) => Ok(Kind::RuntimeClass),
        Ok(pb::Kind::PodDisruptionBudget) => Ok(Kind::PodDisruptionBudget),
        Ok(pb::Kind::Deployment) => Ok(Kind::Deployment),
        Ok(pb::Kind::ReplicaSet) => Ok(Kind::ReplicaSet),
        Ok(pb::Kind::DaemonSet) => Ok(Kind::DaemonSet),
        Ok(pb::Kind::ResourceQuota) => Ok(Kind::ResourceQuota),
        Ok(pb::Kind::Unspecified) => Err(path.error(ConvertProblem::Required)),
        Err(_) => Err(path.error(ConvertProblem::UnknownKind { value })),
    }
}

impl From<Kind> for pb::Kind {
    fn from(kind: Kind) -> Self {
        kind_to_pb(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect("test quantity parses")
    }

    fn resources(pairs: &[(&str, &str)]) -> ResourceList {
        pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
    }

    fn strings(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn time(nanos: i64) -> Option<Time> {
        Some(Time::from_unix_nanos(nanos))
    }

    fn meta(name: &str, namespace: &str) -> ObjectMeta {
        ObjectMeta {
            name: name.into(),
            generate_name: format!("{name}-"),
            namespace: namespace.into(),
            labels: strings(&[("app", "web"), ("example.com/tier", "front")]),
            annotations: strings(&[("note", "hello")]),
            uid: "0b7c5e0e-uid".into(),
            resource_version: "42".into(),
            creation_timestamp: time(1_700_000_000_123_456_789),
            deletion_timestamp: time(1_700_000_100_000_000_000),
            owner_references: vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "web-abc".into(),
                uid: "rs-uid".into(),
                controller: Some(true),
                block_owner_deletion: None,
            }],
            ..Default::default()
        }
    }

    fn selector() -> LabelSelector {
        LabelSelector {
            match_labels: strings(&[("app", "web")]),
            match_expressions: vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: LabelSelectorOperator::NotIn,
                values: vec!["db".into(), "cache".into()],
            }],
        }
    }

    fn pod_affinity_term(key: &str) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: Some(selector()),
            namespaces: vec!["default".into(), "other".into()],
            topology_key: key.into(),
            namespace_selector: Some(LabelSelector::default()),
            match_label_keys: vec!["pod-template-hash".into()],
            mismatch_label_keys: vec!["tenant".into()],
        }
    }

    fn container(name: &str, restart: Option<RestartPolicy>) -> Container {
        Container {
            name: name.into(),
            image: "busybox:1.36".into(),
            command: vec!["sleep".into()],
            args: vec!["3600".into()],
            env: vec![EnvVar {
                name: "MODE".into(),
                value: "fast".into(),
                value_from: None,
            }],
            resources: ResourceRequirements {
                requests: resources(&[
                    ("cpu", "250m"),
                    ("memory", "64Mi"),
                    ("example.com/gpu", "1"),
                ]),
                limits: resources(&[("cpu", "1"), ("memory", "128Mi"), ("example.com/gpu", "1")]),
                claims: None,
            },
            restart_policy: restart,
            ..Default::default()
        }
    }

    /// A pod with every field Berth keeps set to a non-default value.
    fn rich_pod() -> Pod {
        Pod {
            api_version: "v1".into(),
            kind: "Pod".into(),
            metadata: meta("web-1", "default"),
            spec: PodSpec {
                containers: vec![container("app", None), container("log", None)],
                init_containers: vec![container("init", Some(RestartPolicy::Always))],
                node_name: "node-1".into(),
                node_selector: strings(&[("disk", "ssd")]),
                affinity: Some(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: vec![NodeSelectorTerm {
                                match_expressions: vec![
                                    NodeSelectorRequirement {
                                        key: "zone".into(),
                                        operator: NodeSelectorOperator::In,
                                        values: vec!["a".into(), "b".into()],
                                    },
                                    NodeSelectorRequirement {
                                        key: "cores".into(),
                                        operator: NodeSelectorOperator::Gt,
                                        values: vec!["4".into()],
                                    },
                                ],
                                match_fields: vec![NodeSelectorRequirement {
                                    key: "metadata.name".into(),
                                    operator: NodeSelectorOperator::NotIn,
                                    values: vec!["node-9".into()],
                                }],
                            }],
                        }),
                        preferred_during_scheduling_ignored_during_execution: vec![
                            PreferredSchedulingTerm {
                                weight: 30,
                                preference: NodeSelectorTerm {
                                    match_expressions: vec![NodeSelectorRequirement {
                                        key: "gpu".into(),
                                        operator: NodeSelectorOperator::Exists,
                                        values: vec![],
                                    }],
                                    match_fields: vec![],
                                },
                            },
                        ],
                    }),
                    pod_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![
                            pod_affinity_term("zone"),
                        ],
                        preferred_during_scheduling_ignored_during_execution: vec![
                            WeightedPodAffinityTerm {
                                weight: 10,
                                pod_affinity_term: pod_affinity_term("rack"),
                            },
                        ],
                    }),
                    pod_anti_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![
                            pod_affinity_term("kubernetes.io/hostname"),
                        ],
                        preferred_during_scheduling_ignored_during_execution: vec![],
                    }),
                }),
                tolerations: vec![
                    Toleration {
                        key: "dedicated".into(),
                        operator: Some(TolerationOperator::Equal),
                        value: "gpu".into(),
                        effect: Some(TaintEffect::NoSchedule),
                        toleration_seconds: None,
                    },
                    Toleration {
                        key: "node.kubernetes.io/not-ready".into(),
                        operator: Some(TolerationOperator::Exists),
                        value: String::new(),
                        effect: Some(TaintEffect::NoExecute),
                        toleration_seconds: Some(300),
                    },
                    Toleration::default(),
                ],
                scheduler_name: "my-scheduler".into(),
                priority: Some(1000),
                priority_class_name: "high".into(),
                preemption_policy: Some(PreemptionPolicy::Never),
                overhead: resources(&[("cpu", "100m"), ("memory", "20Mi")]),
                topology_spread_constraints: vec![TopologySpreadConstraint {
                    max_skew: 2,
                    topology_key: "zone".into(),
                    when_unsatisfiable: UnsatisfiableConstraintAction::DoNotSchedule,
                    label_selector: Some(selector()),
                    min_domains: Some(3),
                    node_affinity_policy: Some(NodeInclusionPolicy::Ignore),
                    node_taints_policy: Some(NodeInclusionPolicy::Honor),
                    match_label_keys: vec!["pod-template-hash".into()],
                }],
                scheduling_gates: vec![PodSchedulingGate {
                    name: "example.com/wait".into(),
                }],
                restart_policy: Some(RestartPolicy::OnFailure),
                termination_grace_period_seconds: Some(10),
                resources: Some(ResourceRequirements {
                    requests: resources(&[("cpu", "2")]),
                    limits: resources(&[("cpu", "4"), ("memory", "1Gi")]),
                    claims: None,
                }),
                runtime_class_name: "kata".into(),
                ..Default::default()
            },
            status: PodStatus {
                phase: PodPhase::Running,
                conditions: vec![PodCondition {
                    type_: "PodScheduled".into(),
                    status: "True".into(),
                    reason: "Scheduled".into(),
                    message: "bound".into(),
                    last_transition_time: time(1_700_000_001_000_000_000),
                    last_probe_time: None,
                }],
                reason: "Started".into(),
                message: "all good".into(),
                nominated_node_name: "node-2".into(),
                start_time: time(1_700_000_002_500_000_000),
                host_ip: "10.0.0.1".into(),
                container_statuses: vec![ContainerStatus {
                    name: "app".into(),
                    ready: true,
                    restart_count: 3,
                    state: "terminated".into(),
                    exit_code: Some(137),
                    reason: "OOMKilled".into(),
                    image: None,
                }],
                ..Default::default()
            },
        }
    }

    fn rich_node() -> Node {
        Node {
            api_version: "v1".into(),
            kind: "Node".into(),
            metadata: meta("node-1", ""),
            spec: NodeSpec {
                unschedulable: true,
                taints: vec![
                    Taint {
                        key: "dedicated".into(),
                        value: "gpu".into(),
                        effect: TaintEffect::NoSchedule,
                        time_added: None,
                    },
                    Taint {
                        key: "node.kubernetes.io/unreachable".into(),
                        value: String::new(),
                        effect: TaintEffect::NoExecute,
                        time_added: time(1_700_000_003_000_000_001),
                    },
                ],
                ..Default::default()
            },
            status: NodeStatus {
                capacity: resources(&[("cpu", "8"), ("memory", "32Gi"), ("pods", "110")]),
                allocatable: resources(&[("cpu", "7500m"), ("memory", "30Gi"), ("pods", "110")]),
                conditions: vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    reason: "KubeletReady".into(),
                    message: "agent is posting ready status".into(),
                    last_heartbeat_time: time(1_700_000_004_000_000_000),
                    last_transition_time: time(1_700_000_000_000_000_000),
                }],
                addresses: vec![NodeAddress {
                    type_: "InternalIP".into(),
                    address: "10.0.0.1".into(),
                }],
                ..Default::default()
            },
        }
    }

    fn rich_priority_class() -> PriorityClass {
        PriorityClass {
            api_version: "scheduling.k8s.io/v1".into(),
            kind: "PriorityClass".into(),
            metadata: meta("high", ""),
            value: 100_000,
            global_default: true,
            description: "important things".into(),
            preemption_policy: Some(PreemptionPolicy::PreemptLowerPriority),
        }
    }

    fn rich_event() -> Event {
        Event {
            api_version: "v1".into(),
            kind: "Event".into(),
            metadata: meta("web-1.17a", "default"),
            involved_object: ObjectReference {
                kind: "Pod".into(),
                namespace: "default".into(),
                name: "web-1".into(),
                uid: "pod-uid".into(),
                ..Default::default()
            },
            reason: "FailedScheduling".into(),
            message: "0/3 nodes are available".into(),
            type_: "Warning".into(),
            count: 4,
            first_timestamp: time(1_700_000_000_000_000_000),
            last_timestamp: time(1_700_000_060_000_000_000),
            reporting_component: "default-scheduler".into(),
            source: None,
        }
    }

    fn template() -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: ObjectMeta {
                labels: strings(&[("app", "web")]),
                annotations: strings(&[("note", "template")]),
                ..Default::default()
            },
            spec: rich_pod().spec,
        }
    }

    fn rich_namespace() -> Namespace {
        Namespace {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            metadata: meta("team-a", ""),
            ..Default::default()
        }
    }

    fn rich_runtime_class() -> RuntimeClass {
        RuntimeClass {
            api_version: "node.k8s.io/v1".into(),
            kind: "RuntimeClass".into(),
            metadata: meta("kata", ""),
            handler: "kata".into(),
            overhead: Some(Overhead {
                pod_fixed: resources(&[("cpu", "250m"), ("memory", "120Mi")]),
            }),
            scheduling: Some(Scheduling {
                node_selector: strings(&[("runtime", "kata")]),
                tolerations: vec![Toleration {
                    key: "kata".into(),
                    operator: Some(TolerationOperator::Exists),
                    effect: Some(TaintEffect::NoSchedule),
                    ..Default::default()
                }],
            }),
        }
    }

    fn rich_pdb(
        min_available: Option<IntOrString>,
        max_unavailable: Option<IntOrString>,
    ) -> PodDisruptionBudget {
        PodDisruptionBudget {
            api_version: "policy/v1".into(),
            kind: "PodDisruptionBudget".into(),
            metadata: meta("web-pdb", "default"),
            spec: PodDisruptionBudgetSpec {
                min_available,
                max_unavailable,
                selector: Some(selector()),
                unhealthy_pod_eviction_policy: None,
            },
            status: PodDisruptionBudgetStatus {
                current_healthy: 3,
                desired_healthy: 2,
                disruptions_allowed: 1,
                expected_pods: 3,
                ..Default::default()
            },
        }
    }

    fn rich_deployment() -> Deployment {
        Deployment {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            metadata: meta("web", "default"),
            spec: DeploymentSpec {
                replicas: 0,
                selector: Some(selector()),
                template: template(),
                strategy: Some(DeploymentStrategy {
                    type_: Some(DeploymentStrategyType::RollingUpdate),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_unavailable: Some(IntOrString::String("25%".into())),
                        max_surge: Some(IntOrString::Int(2)),
                    }),
                }),
                ..Default::default()
            },
            status: DeploymentStatus {
                replicas: 3,
                ready_replicas: 2,
                available_replicas: 1,
                updated_replicas: 3,
                observed_generation: 7,
                ..Default::default()
            },
        }
    }

    fn rich_replica_set() -> ReplicaSet {
        ReplicaSet {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            metadata: meta("web-abc", "default"),
            spec: ReplicaSetSpec {
                replicas: 5,
                selector: Some(selector()),
                template: template(),
                min_ready_seconds: None,
            },
            status: ReplicaSetStatus {
                replicas: 5,
                ready_replicas: 4,
                available_replicas: 3,
                observed_generation: 2,
                ..Default::default()
            },
        }
    }

    fn rich_daemon_set() -> DaemonSet {
        DaemonSet {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            metadata: meta("agent", "kube-system"),
            spec: DaemonSetSpec {
                selector: Some(selector()),
                template: template(),
                ..Default::default()
            },
            status: DaemonSetStatus {
                desired_number_scheduled: 4,
                current_number_scheduled: 3,
                number_ready: 2,
                ..Default::default()
            },
        }
    }

    fn rich_resource_quota() -> ResourceQuota {
        ResourceQuota {
            api_version: "v1".into(),
            kind: "ResourceQuota".into(),
            metadata: meta("pods-high", "default"),
            spec: ResourceQuotaSpec {
                hard: resources(&[
                    ("pods", "10"),
                    ("requests.cpu", "1"),
                    ("limits.memory", "2Gi"),
                ]),
                scopes: vec![ResourceQuotaScope::NotTerminating],
                scope_selector: Some(ScopeSelector {
                    match_expressions: vec![ScopedResourceSelectorRequirement {
                        scope_name: ResourceQuotaScope::PriorityClass,
                        operator: ScopeSelectorOperator::In,
                        values: vec!["high".into()],
                    }],
                }),
            },
            status: ResourceQuotaStatus {
                hard: resources(&[("pods", "10")]),
                used: resources(&[("pods", "3")]),
            },
        }
    }

    #[test]
    fn objects_round_trip_through_messages() {
        struct Case {
            name: &'static str,
            object: Object,
        }
        let cases = [
            Case {
                name: "pod",
                object: Object::Pod(rich_pod()),
            },
            Case {
                name: "node",
                object: Object::Node(rich_node()),
            },
            Case {
                name: "priority class",
                object: Object::PriorityClass(rich_priority_class()),
            },
            Case {
                name: "event",
                object: Object::Event(rich_event()),
            },
            Case {
                name: "empty pod",
                object: Object::Pod(Pod {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    ..Default::default()
                }),
            },
            Case {
                name: "namespace",
                object: Object::Namespace(rich_namespace()),
            },
            Case {
                name: "runtime class",
                object: Object::RuntimeClass(rich_runtime_class()),
            },
            Case {
                name: "runtime class without overhead or scheduling",
                object: Object::RuntimeClass(RuntimeClass {
                    overhead: None,
                    scheduling: None,
                    ..rich_runtime_class()
                }),
            },
            Case {
                name: "pdb with a percentage",
                object: Object::PodDisruptionBudget(rich_pdb(
                    Some(IntOrString::String("50%".into())),
                    None,
                )),
            },
            Case {
                name: "pdb with a count",
                object: Object::PodDisruptionBudget(rich_pdb(None, Some(IntOrString::Int(1)))),
            },
            Case {
                name: "pdb with neither and no selector",
                object: Object::PodDisruptionBudget(PodDisruptionBudget {
                    spec: PodDisruptionBudgetSpec::default(),
                    ..rich_pdb(None, None)
                }),
            },
            Case {
                name: "deployment with zero replicas",
                object: Object::Deployment(rich_deployment()),
            },
            Case {
                name: "deployment with defaults",
                object: Object::Deployment(Deployment {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    ..Default::default()
                }),
            },
            Case {
                name: "replica set",
                object: Object::ReplicaSet(rich_replica_set()),
            },
            Case {
                name: "daemon set",
                object: Object::DaemonSet(rich_daemon_set()),
            },
            Case {
                name: "resource quota",
                object: Object::ResourceQuota(rich_resource_quota()),
            },
        ];
        for case in cases {
            let msg = object_to_pb(&case.object);
            // Through the wire encoding too, so that nothing relies on in-memory state.
            let bytes = prost::Message::encode_to_vec(&msg);
            let decoded: pb::Object = prost::Message::decode(bytes.as_slice()).expect("decodes");
            let back = object_from_pb(decoded).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(back, case.object, "{}", case.name);
        }
    }

    #[test]
    fn typed_conversions_round_trip_and_fill_in_type_meta() {
        let mut pod = rich_pod();
        pod.api_version.clear();
        pod.kind.clear();
        let back = Pod::try_from(pb::Pod::from(&pod)).expect("converts");
        assert_eq!(back.api_version, "v1");
        assert_eq!(back.kind, "Pod");
        assert_eq!(back.spec, pod.spec);
        let pc = PriorityClass::try_from(pb::PriorityClass::default()).expect("converts");
        assert_eq!(
            (pc.api_version.as_str(), pc.kind.as_str()),
            ("scheduling.k8s.io/v1", "PriorityClass")
        );
    }

    #[test]
    fn missing_replicas_default_to_one() {
        let d = Deployment::try_from(pb::Deployment::default()).expect("converts");
        assert_eq!(d.spec.replicas, 1);
        assert_eq!(
            (d.api_version.as_str(), d.kind.as_str()),
            ("apps/v1", "Deployment")
        );
        let rs = ReplicaSet::try_from(pb::ReplicaSet {
            spec: Some(pb::ReplicaSetSpec::default()),
            ..Default::default()
        })
        .expect("converts");
        assert_eq!(rs.spec.replicas, 1);
        let zero = pb::DeploymentSpec::from(&DeploymentSpec {
            replicas: 0,
            ..Default::default()
        });
        assert_eq!(zero.replicas, Some(0), "an explicit 0 travels as set");
        let ns = Namespace::try_from(pb::Namespace::default()).expect("converts");
        assert_eq!(
            (ns.api_version.as_str(), ns.kind.as_str()),
            ("v1", "Namespace")
        );
    }

    #[test]
    fn messages_carry_kubernetes_strings() {
        let msg = pb::Pod::from(&rich_pod());
        let spec = msg.spec.expect("spec set");
        assert_eq!(
            spec.containers[0].resources.as_ref().unwrap().requests["cpu"],
            "250m"
        );
        assert_eq!(
            spec.containers[0].resources.as_ref().unwrap().limits["memory"],
            "128Mi"
        );
        assert_eq!(spec.tolerations[0].effect, "NoSchedule");
        assert_eq!(spec.tolerations[1].operator, "Exists");
        assert_eq!(spec.tolerations[2].operator, "");
        assert_eq!(spec.tolerations[2].effect, "");
        assert_eq!(spec.preemption_policy, "Never");
        assert_eq!(
            spec.topology_spread_constraints[0].when_unsatisfiable,
            "DoNotSchedule"
        );
        assert_eq!(msg.status.expect("status set").phase, "Running");
    }

    #[test]
    fn empty_enums_take_their_defaults() {
        let status = PodStatus::try_from(pb::PodStatus::default()).expect("converts");
        assert_eq!(status.phase, PodPhase::Pending);
        let tol = Toleration::try_from(pb::Toleration::default()).expect("converts");
        assert_eq!((tol.operator, tol.effect), (None, None));
    }

    #[test]
    fn times_round_trip_around_the_epoch() {
        for nanos in [
            0i64,
            1,
            999_999_999,
            1_000_000_000,
            -1,
            -999_999_999,
            -1_000_000_000,
            -1_500_000_000,
            1_700_000_000_123_456_789,
        ] {
            let t = Time::from_unix_nanos(nanos);
            let msg = pb::Time::from(&t);
            assert!(
                (0..1_000_000_000).contains(&msg.nanos),
                "{nanos}: nanos {}",
                msg.nanos
            );
            assert_eq!(msg.seconds, nanos.div_euclid(1_000_000_000), "{nanos}");
            assert_eq!(Time::try_from(msg).expect("converts"), t, "{nanos}");
        }
    }

    #[test]
    fn bad_fields_are_reported_with_their_path() {
        struct Case {
            name: &'static str,
            object: pb::Object,
            want_path: &'static str,
            want_message: &'static str,
        }
        let pod_with = |edit: &dyn Fn(&mut pb::PodSpec)| {
            let mut msg = pb::Pod::from(&rich_pod());
            edit(msg.spec.as_mut().expect("spec set"));
            pb::Object {
                kind: Some(pb::object::Kind::Pod(msg)),
            }
        };
        let cases = [
            Case {
                name: "bad request quantity",
                object: pod_with(&|s| {
                    s.containers[0].resources.as_mut().unwrap().requests.insert("cpu".into(), "abc".into());
                }),
                want_path: "spec.containers[0].resources.requests.cpu",
                want_message: "spec.containers[0].resources.requests.cpu: \"abc\" is not a valid quantity",
            },
            Case {
                name: "bad extended resource quantity",
                object: pod_with(&|s| {
                    s.init_containers[0].resources.as_mut().unwrap().limits.insert("example.com/gpu".into(), "1x".into());
                }),
                want_path: "spec.initContainers[0].resources.limits[\"example.com/gpu\"]",
                want_message: "\"1x\" is not a valid quantity",
            },
            Case {
                name: "bad toleration effect",
                object: pod_with(&|s| s.tolerations[1].effect = "NoSchedul".into()),
                want_path: "spec.tolerations[1].effect",
                want_message: "spec.tolerations[1].effect: unknown value \"NoSchedul\", expected one of NoSchedule, PreferNoSchedule, NoExecute",
            },
            Case {
                name: "empty label selector operator",
                object: pod_with(&|s| {
                    s.topology_spread_constraints[0].label_selector.as_mut().unwrap().match_expressions[0].operator.clear();
                }),
                want_path: "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator",
                want_message: "required value",
            },
            Case {
                name: "bad node affinity operator",
                object: pod_with(&|s| {
                    let na = s.affinity.as_mut().unwrap().node_affinity.as_mut().unwrap();
                    na.required_during_scheduling_ignored_during_execution.as_mut().unwrap().node_selector_terms[0].match_expressions[1].operator = "Gte".into();
                }),
                want_path: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator",
                want_message: "expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt",
            },
            Case {
                name: "bad restart policy",
                object: pod_with(&|s| s.restart_policy = "Sometimes".into()),
                want_path: "spec.restartPolicy",
                want_message: "unknown value \"Sometimes\"",
            },
            Case {
                name: "missing taint effect",
                object: {
                    let mut msg = pb::Node::from(&rich_node());
                    msg.spec.as_mut().unwrap().taints[1].effect.clear();
                    pb::Object { kind: Some(pb::object::Kind::Node(msg)) }
                },
                want_path: "spec.taints[1].effect",
                want_message: "spec.taints[1].effect: required value",
            },
            Case {
                name: "bad capacity",
                object: {
                    let mut msg = pb::Node::from(&rich_node());
                    msg.status.as_mut().unwrap().capacity.insert("memory".into(), "".into());
                    pb::Object { kind: Some(pb::object::Kind::Node(msg)) }
                },
                want_path: "status.capacity.memory",
                want_message: "quantity is empty",
            },
            Case {
                name: "bad time",
                object: {
                    let mut msg = pb::Event::from(&rich_event());
                    msg.last_timestamp = Some(pb::Time { seconds: 1, nanos: -5 });
                    pb::Object { kind: Some(pb::object::Kind::Event(msg)) }
                },
                want_path: "lastTimestamp",
                want_message: "invalid time",
            },
            Case {
                name: "bad priority class preemption policy",
                object: {
                    let mut msg = pb::PriorityClass::from(&rich_priority_class());
                    msg.preemption_policy = "never".into();
                    pb::Object { kind: Some(pb::object::Kind::PriorityClass(msg)) }
                },
                want_path: "preemptionPolicy",
                want_message: "expected one of PreemptLowerPriority, Never",
            },
            Case {
                name: "int-or-string with no value",
                object: {
                    let mut msg = pb::PodDisruptionBudget::from(&rich_pdb(Some(IntOrString::Int(1)), None));
                    msg.spec.as_mut().unwrap().min_available = Some(pb::IntOrString { value: None });
                    pb::Object { kind: Some(pb::object::Kind::PodDisruptionBudget(msg)) }
                },
                want_path: "spec.minAvailable",
                want_message: "spec.minAvailable: required value",
            },
            Case {
                name: "bad deployment strategy type",
                object: {
                    let mut msg = pb::Deployment::from(&rich_deployment());
                    msg.spec.as_mut().unwrap().strategy.as_mut().unwrap().r#type = "Rolling".into();
                    pb::Object { kind: Some(pb::object::Kind::Deployment(msg)) }
                },
                want_path: "spec.strategy.type",
                want_message: "expected one of Recreate, RollingUpdate",
            },
            Case {
                name: "bad quantity in a template",
                object: {
                    let mut msg = pb::ReplicaSet::from(&rich_replica_set());
                    let spec = msg.spec.as_mut().unwrap().template.as_mut().unwrap().spec.as_mut().unwrap();
                    spec.containers[1].resources.as_mut().unwrap().requests.insert("cpu".into(), "lots".into());
                    pb::Object { kind: Some(pb::object::Kind::ReplicaSet(msg)) }
                },
                want_path: "spec.template.spec.containers[1].resources.requests.cpu",
                want_message: "\"lots\" is not a valid quantity",
            },
            Case {
                name: "bad quota scope",
                object: {
                    let mut msg = pb::ResourceQuota::from(&rich_resource_quota());
                    msg.spec.as_mut().unwrap().scopes.push("Everything".into());
                    pb::Object { kind: Some(pb::object::Kind::ResourceQuota(msg)) }
                },
                want_path: "spec.scopes[1]",
                want_message: "unknown value \"Everything\"",
            },
            Case {
                name: "empty scope selector operator",
                object: {
                    let mut msg = pb::ResourceQuota::from(&rich_resource_quota());
                    let sel = msg.spec.as_mut().unwrap().scope_selector.as_mut().unwrap();
                    sel.match_expressions[0].operator.clear();
                    pb::Object { kind: Some(pb::object::Kind::ResourceQuota(msg)) }
                },
                want_path: "spec.scopeSelector.matchExpressions[0].operator",
                want_message: "required value",
            },
            Case {
                name: "bad runtime class overhead",
                object: {
                    let mut msg = pb::RuntimeClass::from(&rich_runtime_class());
                    msg.overhead.as_mut().unwrap().pod_fixed.insert("memory".into(), "1Q".into());
                    pb::Object { kind: Some(pb::object::Kind::RuntimeClass(msg)) }
                },
                want_path: "overhead.podFixed.memory",
                want_message: "is not a valid quantity",
            },
            Case {
                name: "no kind",
                object: pb::Object { kind: None },
                want_path: "kind",
                want_message: "kind: required value",
            },
        ];
        for case in cases {
            let err = object_from_pb(case.object).expect_err(case.name);
            assert_eq!(err.path, case.want_path, "{}", case.name);
            assert!(
                err.to_string().contains(case.want_message),
                "{}: {err}",
                case.name
            );
        }
    }

    #[test]
    fn kinds_convert_both_ways() {
        for kind in Kind::ALL {
            assert_eq!(kind_from_pb(kind_to_pb(kind) as i32), Ok(kind), "{kind}");
            assert_eq!(pb::Kind::from(kind), kind_to_pb(kind), "{kind}");
        }
        let unspecified = kind_from_pb(pb::Kind::Unspecified as i32).expect_err("unspecified");
        assert_eq!(unspecified.problem, ConvertProblem::Required);
        let unknown = kind_from_pb(99).expect_err("unknown");
        assert_eq!(unknown.to_string(), "kind: unknown kind 99");
    }

    #[test]
    fn map_keys_render_as_yaml_paths() {
        assert_eq!(map_key_path("spec.overhead", "cpu"), "spec.overhead.cpu");
        assert_eq!(
            map_key_path("metadata.labels", "app/x"),
            "metadata.labels[\"app/x\"]"
        );
        assert_eq!(map_key_path("", "hugepages-2Mi"), "hugepages-2Mi");
        assert_eq!(map_key_path("m", ""), "m[\"\"]");
    }
}
