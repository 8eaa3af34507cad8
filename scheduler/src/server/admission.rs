//! Admission: what the API server does to an object before it is stored — defaults,
//! validation, priority resolution — and what may change when an object is re-applied.

use berth_proto::model::{Kind, Object, ObjectKey, Pod, PodPhase, PriorityClass};
use berth_proto::names;
use berth_proto::validate;
use berth_store::ObjectStore;

use super::error::{Error, Result};
pub use crate::admission::AdmissionConfig;
use crate::admission::{self as rules, AdmissionError, Classes};

/// Describes an object for error messages: `pod "web"`.
pub fn describe(obj: &Object) -> String {
    format!(
        "{} {:?}",
        obj.kind().as_str().to_ascii_lowercase(),
        obj.meta().name
    )
}

/// Applies defaults and validates a new or re-applied object. Pods go through the API
/// server's pod admission ([`crate::admission`]: defaults, priority, RuntimeClass, default
/// tolerations) and ResourceQuota; status written by a client on a pod is dropped on create
/// (the scheduler and agents own it).
pub fn admit(store: &dyn ObjectStore, obj: Object, config: &AdmissionConfig) -> Result<Object> {
    admit_with(store, obj, &[], config)
}

/// As [`admit`], also seeing the PriorityClasses of the same request (`pending`), so that a
/// manifest may hold a class and the pods that use it, as with kubectl.
pub fn admit_with(
    store: &dyn ObjectStore,
    mut obj: Object,
    pending: &[PriorityClass],
    config: &AdmissionConfig,
) -> Result<Object> {
    // Stored objects carry apiVersion and kind, so that they encode as is (and controllers'
    // objects look like everyone else's).
    obj.fill_type_meta();
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
    if let Object::Job(job) = &mut obj {
        job.spec.set_defaults();
    }
    if let Object::Pod(pod) = &mut obj {
        let classes = classes(store, pending)?;
        rules::mutate(pod, &classes, config).map_err(|e| match e {
            AdmissionError::Forbidden { name, reason } => Error::Forbidden {
                context: format!("pods {name:?}"),
                reason,
            },
            AdmissionError::Invalid { name, source } => Error::Invalid {
                context: format!("pod {name:?}"),
                source,
            },
        })?;
        check_quotas(store, pod)?;
    }
    if let Object::PriorityClass(pc) = &obj {
        check_priority_class(store, pc, pending)?;
    }
    if let Object::Deployment(d) = &mut obj {
        // A create starts at 1; an update's generation comes from `merge_update`.
        d.metadata.generation = 1;
    }
    Ok(obj)
}

/// The PriorityClasses (built-in, stored, and those of the current request) and
/// RuntimeClasses pods may name.
fn classes(store: &dyn ObjectStore, pending: &[PriorityClass]) -> Result<Classes> {
    let mut classes = Classes::new();
    let stored = store.list(Kind::PriorityClass, None)?.into_iter();
    let stored = stored.filter_map(|o| match o {
        Object::PriorityClass(pc) => Some(*pc),
        _ => None,
    });
    for pc in stored.chain(pending.iter().cloned()) {
        if pc.global_default {
            classes.global_default = Some(pc.metadata.name.clone());
        }
        classes.priority.insert(pc.metadata.name.clone(), pc);
    }
    for obj in store.list(Kind::RuntimeClass, None)? {
        if let Object::RuntimeClass(rc) = obj {
            classes.runtime.insert(rc.metadata.name.clone(), *rc);
        }
    }
    Ok(classes)
}

/// Looks a class up among the built-in system classes and the stored ones.
pub fn priority_class(store: &dyn ObjectStore, name: &str) -> Result<Option<PriorityClass>> {
    if let Some(pc) = PriorityClass::system_classes()
        .into_iter()
        .find(|pc| pc.metadata.name == name)
    {
        return Ok(Some(pc));
    }
    match store.get(&ObjectKey::new(Kind::PriorityClass, "", name))? {
        Some(Object::PriorityClass(pc)) => Ok(Some(*pc)),
        _ => Ok(None),
    }
}

/// The stored class marked globalDefault, if any.
fn global_default(store: &dyn ObjectStore) -> Result<Option<PriorityClass>> {
    Ok(store
        .list(Kind::PriorityClass, None)?
        .into_iter()
        .find_map(|o| match o {
            Object::PriorityClass(pc) if pc.global_default => Some(*pc),
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

/// ResourceQuota admission of a new pod (see [`super::quota`]): refused when a quota of
/// its namespace whose scope covers it would be exceeded. A pod already stored (a
/// re-apply) is not charged again.
fn check_quotas(store: &dyn ObjectStore, pod: &Pod) -> Result<()> {
    let ns = &pod.metadata.namespace;
    let quotas = store.list(Kind::ResourceQuota, Some(ns))?;
    if quotas.is_empty() {
        return Ok(());
    }
    let key = ObjectKey::new(Kind::Pod, ns, &pod.metadata.name);
    if store.get(&key)?.is_some() {
        return Ok(());
    }
    let pods: Vec<Pod> = store
        .list(Kind::Pod, Some(ns))?
        .into_iter()
        .filter_map(|o| match o {
            Object::Pod(p) => Some(*p),
            _ => None,
        })
        .collect();
    let existing: Vec<&Pod> = pods.iter().collect();
    for quota in quotas {
        if let Object::ResourceQuota(quota) = quota {
            super::quota::check(&quota, pod, &existing).map_err(|e| Error::Forbidden {
                context: format!("pods {:?}", pod.metadata.name),
                reason: e.to_string(),
            })?;
        }
    }
    Ok(())
}

/// Refuses to delete a PriorityClass that pods still use, naming them (Berth's rule: a class
/// in use cannot be deleted silently). Finished pods do not count.
pub fn check_priority_class_unused(store: &dyn ObjectStore, name: &str) -> Result<()> {
    let users: Vec<String> = store
        .list(Kind::Pod, None)?
        .into_iter()
        .filter_map(|o| match o {
            Object::Pod(p)
                if p.spec.priority_class_name == name && !p.status.phase.is_terminal() =>
            {
                Some(format!("{}/{}", p.metadata.namespace, p.metadata.name))
            }
            _ => None,
        })
        .collect();
    if users.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 10;
    let mut listed = users
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if users.len() > SHOWN {
        listed.push_str(&format!(" and {} more", users.len() - SHOWN));
    }
    Err(Error::Forbidden {
        context: format!("priorityclasses {name:?}"),
        reason: format!(
            "PriorityClass {name} is in use by {} pod(s): {listed}; delete them first",
            users.len()
        ),
    })
}

/// What an apply of `incoming` over `stored` amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyAction {
    /// Nothing changes.
    Unchanged,
    /// The object is updated.
    Configured,
}

/// What the API server does to an admitted object that is new, before it is stored: a Job
/// gets its uid now and, unless `manualSelector` is true, its generated selector and pod
/// labels ([`berth_proto::model::Job::generate_selector`]).
pub fn prepare_create(mut obj: Object) -> Object {
    if let Object::Job(job) = &mut obj {
        if job.metadata.uid.is_empty() {
            job.metadata.uid = uuid::Uuid::new_v4().to_string();
        }
        job.generate_selector();
    }
    obj
}

/// Keeps what a re-applied Job may not change: its status (the job controller's), its
/// generated selector and pod labels; refuses a change of the fields kube makes immutable
/// (selector, template, completions, completionMode).
fn merge_job(old: &berth_proto::model::Job, new: &mut berth_proto::model::Job) -> Result<()> {
    new.status = old.status.clone();
    if !new.has_manual_selector() {
        new.spec.selector = new
            .spec
            .selector
            .take()
            .or_else(|| old.spec.selector.clone());
        if let Some(selector) = &mut new.spec.selector {
            for (k, v) in &old.spec.selector.clone().unwrap_or_default().match_labels {
                selector.match_labels.entry(k.clone()).or_insert(v.clone());
            }
        }
        let mut generated = new.clone();
        generated.metadata.uid = old.metadata.uid.clone();
        let labels = generated.generated_labels();
        for (k, v) in labels {
            new.spec.template.metadata.labels.entry(k).or_insert(v);
        }
    }
    let immutable = [
        ("spec.selector", old.spec.selector != new.spec.selector),
        ("spec.template", old.spec.template != new.spec.template),
        (
            "spec.completions",
            old.spec.completions != new.spec.completions,
        ),
        (
            "spec.completionMode",
            old.spec.completion_mode != new.spec.completion_mode,
        ),
    ];
    let errors: Vec<validate::FieldError> = immutable
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(path, _)| validate::FieldError::new(path, "field is immutable"))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid {
            context: format!("job {:?}", new.metadata.name),
            source: validate::ValidationErrors(errors),
        })
    }
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
            if !old.spec.node_name.is_empty()
                && old.spec.scheduling_gates != new.spec.scheduling_gates
            {
                return Err(Error::Forbidden {
                    context: format!("pod {:?}", new.metadata.name),
                    reason: "scheduling gates may not be changed on a bound pod".to_string(),
                });
            }
            if old.status.phase == PodPhase::Pending && new.spec.scheduling_gates.is_empty() {
                new.status
                    .conditions
                    .retain(|c| c.reason != names::REASON_SCHEDULING_GATED);
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
        // Controllers own these statuses; an apply changes only the spec.
        (Object::Deployment(old), Object::Deployment(new)) => {
            new.status = old.status.clone();
            new.metadata.generation = old.metadata.generation;
            if new.spec != old.spec {
                // One stored before generations were counted starts from 1.
                new.metadata.generation = old.metadata.generation.max(1) + 1;
            }
        }
        (Object::ReplicaSet(old), Object::ReplicaSet(new)) => new.status = old.status.clone(),
        (Object::DaemonSet(old), Object::DaemonSet(new)) => new.status = old.status.clone(),
        (Object::PodDisruptionBudget(old), Object::PodDisruptionBudget(new)) => {
            new.status = old.status.clone()
        }
        (Object::ResourceQuota(old), Object::ResourceQuota(new)) => new.status = old.status.clone(),
        (Object::Job(old), Object::Job(new)) => merge_job(old, new)?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{
        Container, ObjectMeta, PodSchedulingGate, PreemptionPolicy, RestartPolicy, TaintEffect,
        Toleration, TolerationOperator,
    };
    use berth_store::{Op, SledStore};

    fn pod(name: &str, class: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: name.into(),
                ..Default::default()
            },
            spec: berth_proto::model::PodSpec {
                containers: vec![Container {
                    name: "main".into(),
                    image: "nginx".into(),
                    ..Default::default()
                }],
                priority_class_name: class.into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn class(name: &str, value: i32, global_default: bool, never: bool) -> PriorityClass {
        PriorityClass {
            metadata: ObjectMeta {
                name: name.into(),
                ..Default::default()
            },
            value,
            global_default,
            preemption_policy: never.then_some(PreemptionPolicy::Never),
            ..Default::default()
        }
    }

    fn store_with(classes: Vec<PriorityClass>) -> SledStore {
        let store = SledStore::temporary().expect("temporary store");
        let ops = classes
            .into_iter()
            .map(|c| Op::Create(Object::PriorityClass(Box::new(c))))
            .collect::<Vec<_>>();
        if !ops.is_empty() {
            store.commit(ops).expect("storing classes");
        }
        store
    }

    /// Admits `obj` with the default admission settings.
    fn admitted(store: &SledStore, obj: Object) -> Result<Object> {
        admit(store, obj, &AdmissionConfig::default())
    }

    fn admitted_pod(store: &SledStore, p: Pod) -> Result<Pod> {
        match admitted(store, Object::Pod(Box::new(p)))? {
            Object::Pod(p) => Ok(*p),
            other => panic!("admission changed the kind: {other:?}"),
        }
    }

    #[test]
    fn pods_get_kubernetes_defaults() {
        let store = store_with(vec![]);
        let p = admitted_pod(&store, pod("web", "")).unwrap();
        assert_eq!(p.metadata.namespace, "default");
        assert_eq!(p.spec.scheduler_name, "default-scheduler");
        assert_eq!(p.spec.restart_policy, Some(RestartPolicy::Always));
        assert_eq!(p.spec.termination_grace_period_seconds, Some(30));
        assert_eq!(p.spec.priority, Some(0));
        assert_eq!(
            p.spec.preemption_policy,
            Some(PreemptionPolicy::PreemptLowerPriority)
        );
        let defaults: Vec<(&str, Option<i64>)> = p
            .spec
            .tolerations
            .iter()
            .map(|t| {
                assert_eq!(t.operator, Some(TolerationOperator::Exists), "{t:?}");
                assert_eq!(t.effect, Some(TaintEffect::NoExecute), "{t:?}");
                (t.key.as_str(), t.toleration_seconds)
            })
            .collect();
        assert_eq!(
            defaults,
            vec![
                ("node.kubernetes.io/not-ready", Some(300)),
                ("node.kubernetes.io/unreachable", Some(300)),
            ]
        );
    }

    #[test]
    fn default_toleration_seconds_fill_in_what_the_pod_lacks() {
        fn tol(key: &str, effect: Option<TaintEffect>, seconds: Option<i64>) -> Toleration {
            Toleration {
                key: key.into(),
                operator: Some(TolerationOperator::Exists),
                effect,
                toleration_seconds: seconds,
                ..Default::default()
            }
        }
        const NOT_READY: &str = "node.kubernetes.io/not-ready";
        const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
        let no_exec = Some(TaintEffect::NoExecute);
        struct Case {
            name: &'static str,
            given: Vec<Toleration>,
            want: Vec<Toleration>,
        }
        let cases = vec![
            Case {
                name: "no tolerations: both added",
                given: vec![],
                want: vec![
                    tol(NOT_READY, no_exec, Some(300)),
                    tol(UNREACHABLE, no_exec, Some(300)),
                ],
            },
            Case {
                name: "an own not-ready toleration is kept, unreachable added",
                given: vec![tol(NOT_READY, no_exec, Some(5))],
                want: vec![
                    tol(NOT_READY, no_exec, Some(5)),
                    tol(UNREACHABLE, no_exec, Some(300)),
                ],
            },
            Case {
                name: "a toleration with no effect counts",
                given: vec![tol(UNREACHABLE, None, None)],
                want: vec![
                    tol(UNREACHABLE, None, None),
                    tol(NOT_READY, no_exec, Some(300)),
                ],
            },
            Case {
                name: "an empty key tolerates both",
                given: vec![tol("", None, None)],
                want: vec![tol("", None, None)],
            },
            Case {
                name: "an empty key with effect NoExecute tolerates both",
                given: vec![tol("", no_exec, Some(10))],
                want: vec![tol("", no_exec, Some(10))],
            },
            Case {
                name: "a NoSchedule toleration of the key does not count",
                given: vec![tol(NOT_READY, Some(TaintEffect::NoSchedule), None)],
                want: vec![
                    tol(NOT_READY, Some(TaintEffect::NoSchedule), None),
                    tol(NOT_READY, no_exec, Some(300)),
                    tol(UNREACHABLE, no_exec, Some(300)),
                ],
            },
            Case {
                name: "other keys do not count",
                given: vec![tol("dedicated", None, None)],
                want: vec![
                    tol("dedicated", None, None),
                    tol(NOT_READY, no_exec, Some(300)),
                    tol(UNREACHABLE, no_exec, Some(300)),
                ],
            },
        ];
        let with_defaults = |given: Vec<Toleration>, config: &AdmissionConfig| {
            let mut spec = pod("web", "").spec;
            spec.tolerations = given;
            rules::add_default_toleration_seconds(&mut spec, config);
            spec.tolerations
        };
        for case in cases {
            let got = with_defaults(case.given, &AdmissionConfig::default());
            assert_eq!(got, case.want, "{}", case.name);
        }
        // The flags set the seconds.
        let configured = AdmissionConfig {
            not_ready_toleration_seconds: 2,
            unreachable_toleration_seconds: 7,
        };
        assert_eq!(
            with_defaults(vec![], &configured),
            vec![
                tol(NOT_READY, no_exec, Some(2)),
                tol(UNREACHABLE, no_exec, Some(7)),
            ]
        );
    }

    #[test]
    fn re_applying_a_pod_with_default_tolerations_changes_nothing() {
        let store = store_with(vec![]);
        let stored = admitted(&store, Object::Pod(Box::new(pod("web", "")))).unwrap();
        let again = admitted(&store, Object::Pod(Box::new(pod("web", "")))).unwrap();
        let (_, action) = merge_update(&stored, again).unwrap();
        assert_eq!(action, ApplyAction::Unchanged);
    }

    #[test]
    fn priority_comes_from_the_class() {
        use PreemptionPolicy::{Never, PreemptLowerPriority};
        let high = || vec![class("high", 1000, false, false)];
        // (case, stored classes, the pod's class, its explicit priority, the admitted priority,
        // policy and class or the refusal)
        type Row = (
            &'static str,
            Vec<PriorityClass>,
            &'static str,
            Option<i32>,
            std::result::Result<(i32, PreemptionPolicy, &'static str), &'static str>,
        );
        let cases: Vec<Row> = vec![
            (
                "named class",
                high(),
                "high",
                None,
                Ok((1000, PreemptLowerPriority, "high")),
            ),
            (
                "class with preemptionPolicy Never",
                vec![class("batch", 10, false, true)],
                "batch",
                None,
                Ok((10, Never, "batch")),
            ),
            (
                "global default applies to pods without a class",
                vec![class("normal", 50, true, false)],
                "",
                None,
                Ok((50, PreemptLowerPriority, "normal")),
            ),
            (
                "built-in system class",
                vec![],
                "system-node-critical",
                None,
                Ok((2_000_001_000, PreemptLowerPriority, "system-node-critical")),
            ),
            (
                "unknown class is refused",
                vec![],
                "nope",
                None,
                Err("no PriorityClass with name nope was found"),
            ),
            (
                "explicit priority that disagrees with the class is refused",
                high(),
                "high",
                Some(7),
                Err("must not be provided in pod spec"),
            ),
            (
                "explicit priority equal to the computed one is accepted",
                high(),
                "high",
                Some(1000),
                Ok((1000, PreemptLowerPriority, "high")),
            ),
        ];
        for (name, classes, class, explicit, want) in cases {
            let store = store_with(classes);
            let mut p = pod("web", class);
            p.spec.priority = explicit;
            match (admitted_pod(&store, p), want) {
                (Ok(p), Ok((value, policy, class))) => {
                    assert_eq!(p.spec.priority, Some(value), "{name}");
                    assert_eq!(p.spec.preemption_policy, Some(policy), "{name}");
                    assert_eq!(p.spec.priority_class_name, class, "{name}");
                }
                (Err(e), Err(want)) => {
                    assert!(e.to_string().contains(want), "{name}: got {e}")
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn pods_may_use_classes_of_the_same_request() {
        let store = store_with(vec![]);
        let pending = vec![class("high", 1000, false, false)];
        let obj = admit_with(
            &store,
            Object::Pod(Box::new(pod("web", "high"))),
            &pending,
            &AdmissionConfig::default(),
        )
        .unwrap();
        let Object::Pod(p) = obj else {
            panic!("not a pod")
        };
        assert_eq!(p.spec.priority, Some(1000));
    }

    #[test]
    fn only_one_global_default() {
        let store = store_with(vec![class("a", 1, true, false)]);
        let err = admitted(
            &store,
            Object::PriorityClass(Box::new(class("b", 2, true, false))),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("already marked as default"),
            "{err}"
        );
        // Re-applying the same default class is fine.
        admitted(
            &store,
            Object::PriorityClass(Box::new(class("a", 1, true, false))),
        )
        .unwrap();
    }

    #[test]
    fn invalid_objects_name_the_field() {
        let store = store_with(vec![]);
        let mut p = pod("Bad_Name", "");
        p.spec.containers.clear();
        let err = admitted_pod(&store, p).unwrap_err().to_string();
        assert!(err.contains("metadata.name"), "{err}");
        assert!(err.contains("spec.containers"), "{err}");
    }

    #[test]
    fn pod_updates_follow_kubernetes_rules() {
        let store = store_with(vec![]);
        let mut base = pod("web", "");
        base.spec.scheduling_gates = vec![PodSchedulingGate {
            name: "wait".into(),
        }];
        let stored = admitted(&store, Object::Pod(Box::new(base.clone()))).unwrap();
        struct Case {
            name: &'static str,
            change: fn(&mut Pod),
            want: std::result::Result<ApplyAction, &'static str>,
        }
        let cases = [
            Case {
                name: "same manifest",
                change: |_| {},
                want: Ok(ApplyAction::Unchanged),
            },
            Case {
                name: "labels may change",
                change: |p| {
                    p.metadata.labels.insert("tier".into(), "web".into());
                },
                want: Ok(ApplyAction::Configured),
            },
            Case {
                name: "gates may be removed",
                change: |p| p.spec.scheduling_gates.clear(),
                want: Ok(ApplyAction::Configured),
            },
            Case {
                name: "gates may not be added",
                change: |p| {
                    p.spec.scheduling_gates.push(PodSchedulingGate {
                        name: "more".into(),
                    })
                },
                want: Err("may not change fields"),
            },
            Case {
                name: "tolerations may be added",
                change: |p| {
                    p.spec.tolerations.push(Toleration {
                        key: "k".into(),
                        ..Default::default()
                    })
                },
                want: Ok(ApplyAction::Configured),
            },
            Case {
                name: "containers may not change",
                change: |p| p.spec.containers[0].image = "httpd".into(),
                want: Err("may not change fields"),
            },
        ];
        for case in cases {
            let mut incoming = base.clone();
            (case.change)(&mut incoming);
            let incoming = admitted(&store, Object::Pod(Box::new(incoming))).unwrap();
            match (merge_update(&stored, incoming), case.want) {
                (Ok((_, action)), Ok(want)) => assert_eq!(action, want, "{}", case.name),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{}: {e}", case.name),
                (got, want) => panic!("{}: got {:?}, want {want:?}", case.name, got.map(|g| g.1)),
            }
        }
    }

    #[test]
    fn a_priority_class_value_is_immutable() {
        let stored = Object::PriorityClass(Box::new(class("high", 1000, false, false)));
        let err = merge_update(
            &stored,
            Object::PriorityClass(Box::new(class("high", 5, false, false))),
        )
        .unwrap_err();
        assert!(err.to_string().contains("may not be changed"), "{err}");
    }
}

#[cfg(test)]
mod workload_status_tests {
    use super::*;
    use berth_proto::model::Deployment;

    #[test]
    fn reapplying_a_workload_keeps_the_status_its_controller_wrote() {
        let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: nginx}]}\n";
        let manifest: Deployment = serde_yaml_ng::from_str(yaml).expect("a valid Deployment");
        let mut stored = manifest.clone();
        stored.status.replicas = 3;
        let (merged, action) = merge_update(
            &Object::Deployment(Box::new(stored)),
            Object::Deployment(Box::new(manifest)),
        )
        .expect("an allowed update");
        assert_eq!(action, ApplyAction::Unchanged);
        let Object::Deployment(merged) = merged else {
            panic!("the kind changed")
        };
        assert_eq!(merged.status.replicas, 3);
    }

    #[test]
    fn a_deployments_generation_counts_its_spec_changes() {
        let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: nginx}]}\n";
        let manifest: Deployment = serde_yaml_ng::from_str(yaml).expect("a valid Deployment");
        let store = berth_store::SledStore::temporary().expect("store");
        let created = admit_with(
            &store,
            Object::Deployment(Box::new(manifest.clone())),
            &[],
            &AdmissionConfig::default(),
        )
        .expect("admitted");
        assert_eq!(created.meta().generation, 1, "a create starts at 1");
        let mut relabelled = manifest.clone();
        relabelled.metadata.labels.insert("team".into(), "a".into());
        let mut scaled = manifest.clone();
        scaled.spec.replicas = 5;
        // (incoming, generation after the update)
        for (incoming, want) in [(manifest, 1), (relabelled, 1), (scaled, 2)] {
            let (merged, _) = merge_update(&created, Object::Deployment(Box::new(incoming)))
                .expect("an allowed update");
            assert_eq!(merged.meta().generation, want);
        }
    }
}

#[cfg(test)]
mod job_tests {
    use super::*;
    use berth_proto::model::Job;

    const JOB: &str = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi, namespace: default}\nspec:\n  completions: 3\n  template:\n    spec: {restartPolicy: Never, containers: [{name: c, image: perl}]}\n";

    fn stored() -> Job {
        let manifest: Job = serde_yaml_ng::from_str(JOB).expect("a valid Job");
        let mut job = manifest;
        job.spec.set_defaults();
        let Object::Job(mut job) = prepare_create(Object::Job(Box::new(job))) else {
            panic!("the kind changed")
        };
        job.status.succeeded = 2;
        *job
    }

    #[test]
    fn a_new_job_gets_a_uid_and_its_generated_selector() {
        let job = stored();
        assert!(!job.metadata.uid.is_empty());
        let selector = job.spec.selector.as_ref().expect("generated");
        assert_eq!(
            selector.match_labels["batch.kubernetes.io/controller-uid"],
            job.metadata.uid
        );
        assert!(selector.matches(&job.spec.template.metadata.labels));
        assert_eq!(job.spec.template.metadata.labels["job-name"], "pi");
        validate::validate_job(&job).expect("the stored form validates");
    }

    #[test]
    fn reapplying_a_job_keeps_status_and_refuses_immutable_changes() {
        // (case, edit of the re-applied manifest, want: None for unchanged, else the error)
        type Edit = fn(&mut Job);
        let cases: [(&str, Edit, Option<&str>); 4] = [
            ("same manifest", |_| {}, None),
            (
                "suspend may change",
                |j| j.spec.suspend = Some(true),
                Some(""),
            ),
            (
                "template is immutable",
                |j| j.spec.template.spec.containers[0].image = "python".into(),
                Some("spec.template: field is immutable"),
            ),
            (
                "completions is immutable",
                |j| j.spec.completions = Some(4),
                Some("spec.completions: field is immutable"),
            ),
        ];
        for (name, edit, want) in cases {
            let mut manifest: Job = serde_yaml_ng::from_str(JOB).expect("a valid Job");
            manifest.spec.set_defaults();
            edit(&mut manifest);
            let result = merge_update(
                &Object::Job(Box::new(stored())),
                Object::Job(Box::new(manifest)),
            );
            match (want, result) {
                (None, Ok((Object::Job(merged), action))) => {
                    assert_eq!(action, ApplyAction::Unchanged, "{name}");
                    assert_eq!(merged.status.succeeded, 2, "{name}");
                }
                (Some(""), Ok((_, action))) => {
                    assert_eq!(action, ApplyAction::Configured, "{name}")
                }
                (Some(message), Err(e)) if !message.is_empty() => {
                    assert!(e.to_string().contains(message), "{name}: {e}")
                }
                (_, other) => panic!("{name}: {other:?}"),
            }
        }
    }
}
