//! Admission: what the API server does to an object before it is stored — defaults,
//! validation, priority resolution — and what may change when an object is re-applied.

use berth_proto::model::{
    Kind, Object, ObjectKey, Pod, PodPhase, PreemptionPolicy, PriorityClass, RestartPolicy,
};
use berth_proto::validate;
use berth_store::ObjectStore;

use super::error::{Error, Result};
use crate::profile::DEFAULT_SCHEDULER_NAME;

/// Default `terminationGracePeriodSeconds` of a pod, as in Kubernetes.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;

/// Describes an object for error messages: `pod "web"`.
pub fn describe(obj: &Object) -> String {
    format!(
        "{} {:?}",
        obj.kind().as_str().to_ascii_lowercase(),
        obj.meta().name
    )
}

/// Applies defaults and validates a new or re-applied object. Pods get their namespace,
/// schedulerName, restartPolicy, grace period and priority; status written by a client on a
/// pod is dropped (the scheduler and agents own it).
pub fn admit(store: &dyn ObjectStore, obj: Object) -> Result<Object> {
    admit_with(store, obj, &[])
}

/// As [`admit`], also seeing the PriorityClasses of the same request (`pending`), so that a
/// manifest may hold a class and the pods that use it, as with kubectl.
pub fn admit_with(
    store: &dyn ObjectStore,
    mut obj: Object,
    pending: &[PriorityClass],
) -> Result<Object> {
    if obj.kind().is_namespaced() && obj.meta().namespace.is_empty() {
        obj.meta_mut().namespace = "default".to_string();
    }
    if obj.meta().name.is_empty() && !obj.meta().generate_name.is_empty() {
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{}{}", obj.meta().generate_name, &suffix[..5]);
        obj.meta_mut().name = name;
    }
    validate::validate_object(&obj).map_err(|source| Error::Invalid {
        context: describe(&obj),
        source,
    })?;
    if let Object::Pod(pod) = &mut obj {
        default_pod(pod);
        resolve_priority(store, pod, pending)?;
    }
    if let Object::PriorityClass(pc) = &obj {
        check_priority_class(store, pc, pending)?;
    }
    Ok(obj)
}

fn default_pod(pod: &mut Pod) {
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

/// Looks a class up among the built-in system classes and the stored ones.
pub fn priority_class(store: &dyn ObjectStore, name: &str) -> Result<Option<PriorityClass>> {
    priority_class_with(store, name, &[])
}

/// As [`priority_class`], the classes of the current request (`pending`) first.
fn priority_class_with(
    store: &dyn ObjectStore,
    name: &str,
    pending: &[PriorityClass],
) -> Result<Option<PriorityClass>> {
    if let Some(pc) = PriorityClass::system_classes()
        .into_iter()
        .chain(pending.iter().cloned())
        .find(|pc| pc.metadata.name == name)
    {
        return Ok(Some(pc));
    }
    match store.get(&ObjectKey::new(Kind::PriorityClass, "", name))? {
        Some(Object::PriorityClass(pc)) => Ok(Some(pc)),
        _ => Ok(None),
    }
}

/// Kubernetes' Priority admission: `priorityClassName` becomes `spec.priority` and
/// `spec.preemptionPolicy`; without a class, the globalDefault class applies, else 0.
fn resolve_priority(store: &dyn ObjectStore, pod: &mut Pod, pending: &[PriorityClass]) -> Result<()> {
    let class = if pod.spec.priority_class_name.is_empty() {
        let default = pending
            .iter()
            .find(|pc| pc.global_default)
            .cloned()
            .map_or_else(|| global_default(store), |pc| Ok(Some(pc)))?;
        if let Some(pc) = &default {
            pod.spec.priority_class_name = pc.metadata.name.clone();
        }
        default
    } else {
        let name = pod.spec.priority_class_name.clone();
        Some(priority_class_with(store, &name, pending)?.ok_or_else(|| Error::Forbidden {
            context: format!("pod {:?}", pod.metadata.name),
            reason: format!("no PriorityClass with name {name} was found"),
        })?)
    };
    let value = class.as_ref().map_or(0, |pc| pc.value);
    if let Some(given) = pod.spec.priority {
        if given != value {
            return Err(Error::Forbidden {
                context: format!("pod {:?}", pod.metadata.name),
                reason: format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; \
                     priority admission controller computed {value} from the given PriorityClass name"
                ),
            });
        }
    }
    pod.spec.priority = Some(value);
    if pod.spec.preemption_policy.is_none() {
        pod.spec.preemption_policy = Some(
            class
                .and_then(|pc| pc.preemption_policy)
                .unwrap_or(PreemptionPolicy::PreemptLowerPriority),
        );
    }
    Ok(())
}

/// The stored class marked globalDefault, if any.
fn global_default(store: &dyn ObjectStore) -> Result<Option<PriorityClass>> {
    Ok(store
        .list(Kind::PriorityClass, None)?
        .into_iter()
        .find_map(|o| match o {
            Object::PriorityClass(pc) if pc.global_default => Some(pc),
            _ => None,
        }))
}

/// At most one class may be the global default, counting the stored ones and those of the
/// same request.
fn check_priority_class(
    store: &dyn ObjectStore,
    pc: &PriorityClass,
    pending: &[PriorityClass],
) -> Result<()> {
    if pc.global_default {
        let stored = global_default(store)?.into_iter();
        let other = stored
            .chain(pending.iter().cloned())
            .filter(|other| other.global_default && other.metadata.name != pc.metadata.name)
            .map(|other| other.metadata.name)
            .next();
        if let Some(other) = other {
            return Err(Error::Forbidden {
                context: format!("priorityclass {:?}", pc.metadata.name),
                reason: format!("PriorityClass {other} is already marked as default; only one default can exist"),
            });
        }
    }
    Ok(())
}

/// What an apply of `incoming` over `stored` amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyAction {
    /// Nothing changes.
    Unchanged,
    /// The object is updated.
    Configured,
}

/// Merges a re-applied object into the stored one, as the API server's update rules allow,
/// and says whether anything changed. The server owns uid, creationTimestamp, status and a
/// pod's binding; a pod's spec may change only in its scheduling gates (which may only be
/// removed) and tolerations (which may only be added), as in Kubernetes; a PriorityClass's
/// value may not change.
pub fn merge_update(stored: &Object, incoming: Object) -> Result<(Object, ApplyAction)> {
    let mut merged = incoming;
    {
        let meta = merged.meta_mut();
        let old = stored.meta();
        meta.uid = old.uid.clone();
        meta.creation_timestamp = old.creation_timestamp;
        meta.deletion_timestamp = old.deletion_timestamp;
        if meta.owner_references.is_empty() {
            meta.owner_references = old.owner_references.clone();
        }
        meta.resource_version = String::new();
    }
    match (stored, &mut merged) {
        (Object::Pod(old), Object::Pod(new)) => {
            new.status = old.status.clone();
            if new.spec.node_name.is_empty() {
                new.spec.node_name = old.spec.node_name.clone();
            }
            let gates_removed_only = new
                .spec
                .scheduling_gates
                .iter()
                .all(|g| old.spec.scheduling_gates.contains(g));
            let tolerations_added_only = old
                .spec
                .tolerations
                .iter()
                .all(|t| new.spec.tolerations.contains(t));
            let mut comparable = new.spec.clone();
            comparable.scheduling_gates = old.spec.scheduling_gates.clone();
            comparable.tolerations = old.spec.tolerations.clone();
            if comparable != old.spec || !gates_removed_only || !tolerations_added_only {
                return Err(Error::Forbidden {
                    context: format!("pod {:?}", new.metadata.name),
                    reason: "pod updates may not change fields other than labels, annotations, \
                             spec.schedulingGates (removal only) and spec.tolerations (additions only); \
                             delete the pod and apply it again"
                        .to_string(),
                });
            }
            if !old.spec.node_name.is_empty() && old.spec.scheduling_gates != new.spec.scheduling_gates {
                return Err(Error::Forbidden {
                    context: format!("pod {:?}", new.metadata.name),
                    reason: "scheduling gates may not be changed on a bound pod".to_string(),
                });
            }
            if old.status.phase == PodPhase::Pending && new.spec.scheduling_gates.is_empty() {
                new.status.conditions.retain(|c| c.reason != "SchedulingGated");
            }
        }
        (Object::PriorityClass(old), Object::PriorityClass(new)) => {
            if old.value != new.value {
                return Err(Error::Forbidden {
                    context: format!("priorityclass {:?}", new.metadata.name),
                    reason: format!(
                        "value: may not be changed in an update (stored {}, given {})",
                        old.value, new.value
                    ),
                });
            }
        }
        (Object::Node(old), Object::Node(new)) => {
            // A manifest that leaves status out keeps what the agent reported.
            if new.status == Default::default() {
                new.status = old.status.clone();
            }
        }
        _ => {}
    }
    let mut unchanged = stored.clone();
    unchanged.meta_mut().resource_version = String::new();
    let action = if unchanged == merged {
        ApplyAction::Unchanged
    } else {
        ApplyAction::Configured
    };
    Ok((merged, action))
}
