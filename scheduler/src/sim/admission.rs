//! What the API server does to a pod before the scheduler sees it, for `berth sim`: defaults
//! (namespace, schedulerName), Priority admission, RuntimeClass admission,
//! DefaultTolerationSeconds and validation, with kube's messages when a pod is refused.
//!
//! These are pure functions over the classes the input declares. The live server's
//! `server::admission` resolves priorities against its store; the rules are the same.

use std::collections::BTreeMap;

use berth_proto::model::{
    Pod, PodSpec, PreemptionPolicy, PriorityClass, RuntimeClass, TaintEffect, Toleration,
    TolerationOperator, DEFAULT_NAMESPACE,
};
use berth_proto::validate::{self, ValidationErrors};

use crate::profile::DEFAULT_SCHEDULER_NAME;

/// Seconds a pod tolerates a not-ready or unreachable node before eviction, added to every
/// pod that does not say (kube's DefaultTolerationSeconds admission).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The taints DefaultTolerationSeconds adds a toleration for.
const DEFAULT_TOLERATED_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// Why the API server would refuse a pod; displays as kube's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// An admission plugin refused the pod.
    #[error("pods {name:?} is forbidden: {reason}")]
    Forbidden {
        /// The pod's name.
        name: String,
        /// Why (`no PriorityClass with name X was found`).
        reason: String,
    },
    /// The pod fails validation.
    #[error("Pod {name:?} is invalid: {source}")]
    Invalid {
        /// The pod's name.
        name: String,
        /// Every invalid field.
        #[source]
        source: ValidationErrors,
    },
}

/// The cluster-scoped classes pods refer to.
#[derive(Clone, Debug, Default)]
pub struct Classes {
    /// PriorityClasses by name, including the built-in system classes.
    pub priority: BTreeMap<String, PriorityClass>,
    /// The name of the class with `globalDefault: true`, if any.
    pub global_default: Option<String>,
    /// RuntimeClasses by name.
    pub runtime: BTreeMap<String, RuntimeClass>,
}

impl Classes {
    /// The built-in PriorityClasses and nothing else.
    pub fn new() -> Self {
        Classes {
            priority: PriorityClass::system_classes()
                .into_iter()
                .map(|pc| (pc.metadata.name.clone(), pc))
                .collect(),
            global_default: None,
            runtime: BTreeMap::new(),
        }
    }
}

fn forbidden(pod: &Pod, reason: String) -> AdmissionError {
    AdmissionError::Forbidden {
        name: pod.metadata.name.clone(),
        reason,
    }
}

/// Admits a pod that is to be scheduled: drops the status a client wrote, applies the
/// defaults, resolves its priority and RuntimeClass, adds the default tolerations and
/// validates it, in the API server's order (mutating admission, then validation).
pub fn admit_pending_pod(pod: &mut Pod, classes: &Classes) -> Result<(), AdmissionError> {
    pod.status = Default::default();
    apply_defaults(pod);
    resolve_priority(pod, classes)?;
    apply_runtime_class(pod, classes)?;
    add_default_toleration_seconds(&mut pod.spec);
    validate::validate_pod(pod).map_err(|source| AdmissionError::Invalid {
        name: pod.metadata.name.clone(),
        source,
    })
}

/// Namespace `default` and schedulerName `default-scheduler` when left out.
pub fn apply_defaults(pod: &mut Pod) {
    if pod.metadata.namespace.is_empty() {
        pod.metadata.namespace = DEFAULT_NAMESPACE.to_string();
    }
    if pod.spec.scheduler_name.is_empty() {
        pod.spec.scheduler_name = DEFAULT_SCHEDULER_NAME.to_string();
    }
}

/// Kubernetes' Priority admission: `priorityClassName` (or, without one, the globalDefault
/// class) becomes `spec.priority` and `spec.preemptionPolicy`; without any class the
/// priority is 0 and the policy PreemptLowerPriority. A priority or policy written in the
/// spec must equal the computed one.
pub fn resolve_priority(pod: &mut Pod, classes: &Classes) -> Result<(), AdmissionError> {
    let class = if pod.spec.priority_class_name.is_empty() {
        let default = classes
            .global_default
            .as_ref()
            .and_then(|name| classes.priority.get(name));
        if let Some(pc) = default {
            pod.spec.priority_class_name = pc.metadata.name.clone();
        }
        default
    } else {
        let name = &pod.spec.priority_class_name;
        Some(classes.priority.get(name).ok_or_else(|| {
            forbidden(pod, format!("no PriorityClass with name {name} was found"))
        })?)
    };
    let value = class.map_or(0, |pc| pc.value);
    if let Some(given) = pod.spec.priority {
        if given != value {
            return Err(forbidden(
                pod,
                format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; \
                     priority admission controller computed {value} from the given PriorityClass name"
                ),
            ));
        }
    }
    let policy = class
        .and_then(|pc| pc.preemption_policy)
        .unwrap_or(PreemptionPolicy::PreemptLowerPriority);
    if let Some(given) = pod.spec.preemption_policy {
        if given != policy {
            return Err(forbidden(
                pod,
                format!(
                    "the string value of PreemptionPolicy ({given:?}) must not be provided in pod \
                     spec; priority admission controller computed {policy:?} from the given \
                     PriorityClass name"
                ),
            ));
        }
    }
    pod.spec.priority = Some(value);
    pod.spec.preemption_policy = Some(policy);
    Ok(())
}

/// Kubernetes' RuntimeClass admission: a pod naming a RuntimeClass gets its
/// `overhead.podFixed` as `spec.overhead` (a different overhead already in the spec is
/// refused) and its `scheduling.nodeSelector` (a conflicting value is refused) and
/// `scheduling.tolerations` merged in.
pub fn apply_runtime_class(pod: &mut Pod, classes: &Classes) -> Result<(), AdmissionError> {
    let name = &pod.spec.runtime_class_name;
    if name.is_empty() {
        return Ok(());
    }
    let Some(rc) = classes.runtime.get(name) else {
        return Err(forbidden(
            pod,
            format!("pod rejected: RuntimeClass {name:?} not found"),
        ));
    };
    if let Some(overhead) = &rc.overhead {
        if !pod.spec.overhead.is_empty() && pod.spec.overhead != overhead.pod_fixed {
            return Err(forbidden(
                pod,
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
                    .to_string(),
            ));
        }
        pod.spec.overhead = overhead.pod_fixed.clone();
    }
    if let Some(scheduling) = &rc.scheduling {
        for (key, value) in &scheduling.node_selector {
            match pod.spec.node_selector.get(key) {
                Some(existing) if existing != value => {
                    return Err(forbidden(
                        pod,
                        format!(
                            "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; \
                             pod.spec.nodeSelector[{key}] = {existing}"
                        ),
                    ));
                }
                _ => {
                    pod.spec.node_selector.insert(key.clone(), value.clone());
                }
            }
        }
        for toleration in &scheduling.tolerations {
            if !pod.spec.tolerations.contains(toleration) {
                pod.spec.tolerations.push(toleration.clone());
            }
        }
    }
    Ok(())
}

/// kube's DefaultTolerationSeconds admission: unless the pod already tolerates them (a
/// toleration with that key, or no key, and effect NoExecute or none), adds tolerations of
/// the not-ready and unreachable NoExecute taints for [`DEFAULT_TOLERATION_SECONDS`].
pub fn add_default_toleration_seconds(spec: &mut PodSpec) {
    for key in DEFAULT_TOLERATED_TAINTS {
        let tolerated = spec.tolerations.iter().any(|t| {
            (t.key.is_empty() || t.key == key)
                && t.effect.is_none_or(|e| e == TaintEffect::NoExecute)
        });
        if !tolerated {
            spec.tolerations.push(Toleration {
                key: key.to_string(),
                operator: Some(TolerationOperator::Exists),
                value: String::new(),
                effect: Some(TaintEffect::NoExecute),
                toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
            });
        }
    }
}
