//! What the API server does to a pod before the scheduler sees it: defaults (namespace,
//! schedulerName, restartPolicy, grace period), Priority admission, RuntimeClass admission,
//! DefaultTolerationSeconds and validation, with kube's messages when a pod is refused.
//!
//! These are pure functions over the classes in force ([`Classes`]): `berth sim` builds them
//! from its input, the live server (`server::admission`) from its store, so both admit pods
//! by the same rules.

use std::collections::BTreeMap;

use berth_model::model::{
    Pod, PodSpec, PreemptionPolicy, PriorityClass, RestartPolicy, RuntimeClass, TaintEffect,
    Toleration, TolerationOperator, DEFAULT_NAMESPACE,
};
use berth_model::names;
use berth_model::validate::{self, ValidationErrors};

use crate::profile::DEFAULT_SCHEDULER_NAME;

/// Seconds a pod tolerates a not-ready or unreachable node before eviction, added to every
/// pod that does not say (kube's DefaultTolerationSeconds admission).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// Default `terminationGracePeriodSeconds` of a pod, as in Kubernetes.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;

/// Settings of pod admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// tolerationSeconds of the not-ready toleration added to every pod without one
    /// (`--default-not-ready-toleration-seconds`).
    pub not_ready_toleration_seconds: i64,
    /// tolerationSeconds of the unreachable toleration added to every pod without one
    /// (`--default-unreachable-toleration-seconds`).
    pub unreachable_toleration_seconds: i64,
}

impl Default for AdmissionConfig {
    /// Kubernetes' defaults (300 s for both tolerations).
    fn default() -> Self {
        AdmissionConfig {
            not_ready_toleration_seconds: DEFAULT_TOLERATION_SECONDS,
            unreachable_toleration_seconds: DEFAULT_TOLERATION_SECONDS,
        }
    }
}

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
pub fn admit_pending_pod(
    pod: &mut Pod,
    classes: &Classes,
    config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    pod.status = Default::default();
    mutate(pod, classes, config)?;
    validate::validate_pod(pod).map_err(|source| AdmissionError::Invalid {
        name: pod.metadata.name.clone(),
        source,
    })
}

/// The mutating admission of a pod, in the API server's order: defaults, Priority,
/// RuntimeClass, DefaultTolerationSeconds.
pub fn mutate(
    pod: &mut Pod,
    classes: &Classes,
    config: &AdmissionConfig,
) -> Result<(), AdmissionError> {
    apply_defaults(pod);
    resolve_priority(pod, classes)?;
    apply_runtime_class(pod, classes)?;
    add_default_toleration_seconds(&mut pod.spec, config);
    Ok(())
}

/// The API server's defaults: namespace `default`, schedulerName `default-scheduler`,
/// restartPolicy `Always` and a 30 s grace period when left out.
pub fn apply_defaults(pod: &mut Pod) {
    if pod.metadata.namespace.is_empty() {
        pod.metadata.namespace = DEFAULT_NAMESPACE.to_string();
    }
    let spec = &mut pod.spec;
    if spec.scheduler_name.is_empty() {
        spec.scheduler_name = DEFAULT_SCHEDULER_NAME.to_string();
    }
    if spec.restart_policy.is_none() {
        spec.restart_policy = Some(RestartPolicy::Always);
    }
    if spec.termination_grace_period_seconds.is_none() {
        spec.termination_grace_period_seconds = Some(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
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
/// the not-ready and unreachable NoExecute taints for the configured seconds. The taint
/// eviction controller then lets the pod stay that long on a failed node.
pub fn add_default_toleration_seconds(spec: &mut PodSpec, config: &AdmissionConfig) {
    for (key, seconds) in [
        (
            names::TAINT_NODE_NOT_READY,
            config.not_ready_toleration_seconds,
        ),
        (
            names::TAINT_NODE_UNREACHABLE,
            config.unreachable_toleration_seconds,
        ),
    ] {
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
                toleration_seconds: Some(seconds),
            });
        }
    }
}
