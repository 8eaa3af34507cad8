//! kube's resourceclaim controller (pkg/controller/resourceclaim): makes each pod's claims
//! from its `resourceClaimTemplateName` entries and records them in the pod's
//! `status.resourceClaimStatuses`, reserves an allocated claim for a pod bound by
//! `spec.nodeName`, drops consumers that are done from a claim's `status.reservedFor`,
//! deallocates a claim whose last consumer ended, and deletes a generated claim once its
//! pod will not run any more. Claims of deleted pods go through the garbage collector
//! (ownerReference to the pod).
//!
//! The claim's shape (name prefix, owner, annotation) is
//! [`berth_core::dra::template`]'s, which `berth sim` uses too.

use berth_core::dra::template::{claim_from_template, claim_name_prefix};
use berth_core::workloads::random_suffix;
use berth_proto::model::{
    Kind, Object, ObjectKey, Pod, PodResourceClaimStatus, ResourceClaim,
    ResourceClaimConsumerReference, ResourceClaimTemplate, POD_CLAIM_NAME_ANNOTATION,
    RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
};
use berth_store::{Op, Precondition};
use tracing::{debug, info};

use super::{object_ref, ControllerManager, Error};
use crate::server::admission;
use crate::server::events::WARNING;

/// Event reason when a pod's claim cannot be made (kube's).
pub const REASON_FAILED_CREATION: &str = "FailedResourceClaimCreation";

/// Whether none of the pod's containers runs or ever will (kube's `isPodDone`): a terminal
/// phase, or deleted before it was bound.
pub fn is_pod_done(pod: &Pod) -> bool {
    pod.is_terminal() || (pod.is_terminating() && pod.spec.node_name.is_empty())
}

/// The pod that controls a generated claim: (name, uid) of its controller ownerReference of
/// kind Pod (kube's `owningPod`).
pub fn owning_pod(claim: &ResourceClaim) -> Option<(&str, &str)> {
    super::controller_of(&claim.metadata.owner_references)
        .filter(|o| o.api_version == "v1" && o.kind == "Pod")
        .map(|o| (o.name.as_str(), o.uid.as_str()))
}

/// The claims of the pod's entries: the claim names it references (by name, or recorded
/// in its status for a template entry).
pub fn claim_names(pod: &Pod) -> Vec<String> {
    berth_core::dra::convert::pod_claim_refs(pod)
        .into_iter()
        .filter_map(|r| r.claim_name)
        .collect()
}

/// kube's `syncPod`: creates the claims of the pod's template entries that have none yet
/// (or whose recorded claim is gone or no longer the pod's), records them in
/// `status.resourceClaimStatuses` in the same commit, and reserves the allocated claims of
/// a pod bound without the scheduler.
pub fn sync_pod(m: &mut ControllerManager, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(Object::Pod(pod)) = m.cache.get(Kind::Pod, namespace, name).cloned() else {
        return Ok(());
    };
    if pod.is_terminating() || is_pod_done(&pod) {
        return Ok(());
    }
    let mut ops = Vec::new();
    let mut statuses = pod.status.resource_claim_statuses.clone();
    for entry in &pod.spec.resource_claims {
        let Some(template_name) = &entry.resource_claim_template_name else {
            continue;
        };
        if entry.resource_claim_name.is_some() {
            continue;
        }
        let recorded = statuses.iter().find(|s| s.name == entry.name);
        match recorded.map(|s| s.resource_claim_name.as_deref()) {
            // Recorded as not needed.
            Some(None) => continue,
            Some(Some(claim)) if is_claim_for(m, &pod, claim) => continue,
            _ => {}
        }
        // A claim made earlier whose recording failed is reused (kube's
        // findPodResourceClaim).
        let claim_name = match generated_claim(m, &pod, &entry.name) {
            Some(existing) => existing,
            None => {
                let Some(template) = template(m, namespace, template_name) else {
                    m.events.record(
                        object_ref(&Object::Pod(pod.clone())),
                        WARNING,
                        REASON_FAILED_CREATION,
                        format!(
                            "PodResourceClaim {}: resource claim template \"{template_name}\": \
                             resourceclaimtemplate.resource.k8s.io \"{template_name}\" not found",
                            entry.name
                        ),
                    );
                    // A template that appears queues the pod again.
                    return Ok(());
                };
                let claim_name = free_name(m, &pod, &entry.name, &ops);
                let claim = claim_from_template(&template, &pod, &entry.name, &claim_name);
                let admitted = admission::admit(
                    m.store(),
                    Object::ResourceClaim(Box::new(claim)),
                    &m.admission,
                )
                .map_err(|source| {
                    m.events.record(
                        object_ref(&Object::Pod(pod.clone())),
                        WARNING,
                        REASON_FAILED_CREATION,
                        format!("PodResourceClaim {}: {source}", entry.name),
                    );
                    Error::Admission {
                        owner: ObjectKey::new(Kind::Pod, namespace, name),
                        source,
                    }
                })?;
                ops.push(Op::Create(admitted));
                claim_name
            }
        };
        let status = PodResourceClaimStatus {
            name: entry.name.clone(),
            resource_claim_name: Some(claim_name),
        };
        match statuses.iter_mut().find(|s| s.name == entry.name) {
            Some(s) => *s = status,
            None => statuses.push(status),
        }
    }
    if statuses != pod.status.resource_claim_statuses {
        let mut updated = pod.clone();
        updated.status.resource_claim_statuses = statuses;
        ops.push(Op::Update {
            object: Object::Pod(updated),
            precondition: Precondition::ResourceVersion(pod.metadata.resource_version.clone()),
        });
        let created: Vec<String> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Create(o) => Some(o.meta().name.clone()),
                _ => None,
            })
            .collect();
        m.commit(ops)?;
        info!(pod = %pod.metadata.name, claims = ?created, "created resource claims");
        // The pod's next version comes back through the cache; reservations wait for it.
        return Ok(());
    }
    if !pod.spec.node_name.is_empty() {
        reserve_for_bound_pod(m, &pod)?;
    }
    Ok(())
}

/// A pod bound by `spec.nodeName` (not by the scheduler) takes its place in the
/// `status.reservedFor` of each of its allocated claims that has room (kube's
/// `reserveForPod`).
fn reserve_for_bound_pod(m: &mut ControllerManager, pod: &Pod) -> Result<(), Error> {
    for r in berth_core::dra::convert::pod_claim_refs(pod) {
        let Some(name) = r.claim_name else { continue };
        let Some(claim) = claim(m, &pod.metadata.namespace, &name) else {
            continue;
        };
        if r.from_template && !is_claim_for(m, pod, &name) {
            continue;
        }
        if claim.status.allocation.is_some()
            && !claim.is_reserved_for(&pod.metadata.uid)
            && claim.status.reserved_for.len() < RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE
        {
            let mut updated = claim.clone();
            updated
                .status
                .reserved_for
                .push(ResourceClaimConsumerReference::pod(
                    &pod.metadata.name,
                    &pod.metadata.uid,
                ));
            m.update_if_changed(
                &Object::ResourceClaim(Box::new(claim)),
                Object::ResourceClaim(Box::new(updated)),
            )?;
        }
    }
    Ok(())
}

/// kube's `syncClaim`: drops from `status.reservedFor` the pods that are gone, replaced or
/// done, clears `status.allocation` when that leaves no consumer, and deletes an unreserved
/// claim generated for a pod that will not run any more.
pub fn sync_claim(m: &mut ControllerManager, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(mut claim) = claim(m, namespace, name) else {
        return Ok(());
    };
    let mut valid = Vec::with_capacity(claim.status.reserved_for.len());
    for consumer in &claim.status.reserved_for {
        if !(consumer.api_group.is_empty() && consumer.resource == "pods")
            || consumer_still_needs(m, namespace, consumer)?
        {
            valid.push(consumer.clone());
        }
    }
    if valid.len() < claim.status.reserved_for.len() {
        let mut updated = claim.clone();
        updated.status.reserved_for = valid;
        // The last consumer ended: deallocate, so that the devices are free for others
        // and a later consumer may get devices on another node.
        if updated.status.reserved_for.is_empty() {
            updated.status.allocation = None;
        }
        debug!(claim = %name, reserved_for = updated.status.reserved_for.len(), "released claim");
        m.update_if_changed(
            &Object::ResourceClaim(Box::new(claim)),
            Object::ResourceClaim(Box::new(updated)),
        )?;
        let Some(current) = self::claim(m, namespace, name) else {
            return Ok(());
        };
        claim = current;
    }
    if !claim.status.reserved_for.is_empty() {
        return Ok(());
    }
    let Some((pod_name, pod_uid)) = owning_pod(&claim) else {
        return Ok(());
    };
    // A pod not in the cache is left to the garbage collector (kube does the same).
    let Some(Object::Pod(pod)) = m.cache.get(Kind::Pod, namespace, pod_name) else {
        return Ok(());
    };
    if pod.metadata.uid != pod_uid || is_pod_done(pod) {
        info!(claim = %name, pod = %pod_name, "deleting unused generated claim");
        m.commit(vec![Op::Delete {
            key: ObjectKey::new(Kind::ResourceClaim, namespace, name),
            precondition: Precondition::ResourceVersion(claim.metadata.resource_version.clone()),
        }])?;
    }
    Ok(())
}

/// Whether a pod consumer of a claim keeps its reservation: the pod exists with that uid
/// and is not done. A pod the cache does not hold is looked up in the store, as kube asks
/// the API server, since it may be one the scheduler is binding right now.
fn consumer_still_needs(
    m: &ControllerManager,
    namespace: &str,
    consumer: &ResourceClaimConsumerReference,
) -> Result<bool, Error> {
    let cached = match m.cache.get(Kind::Pod, namespace, &consumer.name) {
        Some(Object::Pod(p)) => Some(p.clone()),
        _ => None,
    };
    let pod = match cached {
        Some(p) => Some(p),
        None => match m
            .store()
            .get(&ObjectKey::new(Kind::Pod, namespace, &consumer.name))?
        {
            Some(Object::Pod(p)) => Some(p),
            _ => None,
        },
    };
    Ok(pod.is_some_and(|p| p.metadata.uid == consumer.uid && !is_pod_done(&p)))
}

/// The cached claim of that name.
fn claim(m: &ControllerManager, namespace: &str, name: &str) -> Option<ResourceClaim> {
    match m.cache.get(Kind::ResourceClaim, namespace, name) {
        Some(Object::ResourceClaim(c)) => Some((**c).clone()),
        _ => None,
    }
}

/// The cached template of that name.
fn template(m: &ControllerManager, namespace: &str, name: &str) -> Option<ResourceClaimTemplate> {
    match m.cache.get(Kind::ResourceClaimTemplate, namespace, name) {
        Some(Object::ResourceClaimTemplate(t)) => Some((**t).clone()),
        _ => None,
    }
}

/// Whether the claim of that name exists and is the pod's own (kube's `IsForPod`).
fn is_claim_for(m: &ControllerManager, pod: &Pod, name: &str) -> bool {
    claim(m, &pod.metadata.namespace, name)
        .is_some_and(|c| owning_pod(&c).is_some_and(|(_, uid)| uid == pod.metadata.uid))
}

/// A claim the pod owns, generated for its entry `entry` (by the annotation), if any.
fn generated_claim(m: &ControllerManager, pod: &Pod, entry: &str) -> Option<String> {
    m.cache
        .dependents_of(&pod.metadata.uid)
        .into_iter()
        .find_map(|o| match o {
            Object::ResourceClaim(c)
                if owning_pod(c).is_some_and(|(_, uid)| uid == pod.metadata.uid)
                    && c.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION)
                        == Some(&entry.to_string()) =>
            {
                Some(c.metadata.name.clone())
            }
            _ => None,
        })
}

/// `<prefix><5 random characters>`, free in the cache and among the claims of `ops`.
fn free_name(m: &mut ControllerManager, pod: &Pod, entry: &str, ops: &[Op]) -> String {
    let prefix = claim_name_prefix(&pod.metadata.name, entry);
    loop {
        let name = format!("{prefix}{}", random_suffix(&mut m.rng));
        let taken = m
            .cache
            .get(Kind::ResourceClaim, &pod.metadata.namespace, &name)
            .is_some()
            || ops
                .iter()
                .any(|op| matches!(op, Op::Create(o) if o.meta().name == name));
        if !taken {
            return name;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use berth_model::testing::{PodBuilder, ResourceClaimBuilder};
    use berth_proto::model::{OwnerReference, PodPhase, Time};
    use berth_store::{ObjectStore, SledStore};

    use super::*;

    /// A manager over a temporary store holding `objects`, its cache filled.
    fn manager(objects: Vec<Object>) -> (ControllerManager, Arc<dyn ObjectStore>) {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        if !objects.is_empty() {
            store
                .commit(objects.into_iter().map(Op::Create).collect())
                .expect("objects");
        }
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let (writer, _task) = crate::server::writer::Writer::spawn(store.clone(), tx);
        let mut m = ControllerManager::new(store.clone(), writer);
        while m.watcher.try_next(&mut m.cache).is_some() {}
        (m, store)
    }

    fn stored<T>(
        store: &dyn ObjectStore,
        kind: Kind,
        name: &str,
        typed: fn(Object) -> Option<T>,
    ) -> Option<T> {
        store
            .get(&ObjectKey::new(kind, "default", name))
            .expect("read")
            .and_then(typed)
    }

    fn stored_pod(store: &dyn ObjectStore, name: &str) -> Pod {
        *stored(store, Kind::Pod, name, |o| match o {
            Object::Pod(p) => Some(p),
            _ => None,
        })
        .expect("the pod")
    }

    fn stored_claim(store: &dyn ObjectStore, name: &str) -> Option<ResourceClaim> {
        stored(store, Kind::ResourceClaim, name, |o| match o {
            Object::ResourceClaim(c) => Some(*c),
            _ => None,
        })
    }

    fn template(name: &str) -> Object {
        let mut t = ResourceClaimBuilder::new(name)
            .request("gpu", "gpu")
            .build_template();
        t.spec.metadata.labels.insert("team".into(), "ml".into());
        Object::ResourceClaimTemplate(Box::new(t))
    }

    /// A claim owned by pod `pod` (uid `default-<pod>`), made for its entry `entry`.
    fn generated(name: &str, pod: &str, entry: &str) -> ResourceClaim {
        let mut c = ResourceClaimBuilder::new(name)
            .request("gpu", "gpu")
            .build();
        c.metadata.owner_references = vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: pod.into(),
            uid: format!("default-{pod}"),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }];
        c.metadata
            .annotations
            .insert(POD_CLAIM_NAME_ANNOTATION.into(), entry.into());
        c
    }

    #[tokio::test]
    async fn a_pods_template_entry_gets_a_claim_of_kubes_shape() {
        let pod = PodBuilder::new("train")
            .resource_claim_template("gpu", "one-gpu")
            .build();
        let (mut m, store) = manager(vec![template("one-gpu"), Object::Pod(Box::new(pod))]);
        sync_pod(&mut m, "default", "train").expect("sync");

        let pod = stored_pod(store.as_ref(), "train");
        let [status] = pod.status.resource_claim_statuses.as_slice() else {
            panic!("one status: {:?}", pod.status.resource_claim_statuses);
        };
        assert_eq!(status.name, "gpu");
        let name = status.resource_claim_name.clone().expect("a claim name");
        assert!(
            name.starts_with("train-gpu-") && name.len() == "train-gpu-".len() + 5,
            "{name}"
        );
        let claim = stored_claim(store.as_ref(), &name).expect("the claim");
        assert_eq!(owning_pod(&claim), Some(("train", "default-train")));
        assert_eq!(
            claim
                .metadata
                .annotations
                .get(POD_CLAIM_NAME_ANNOTATION)
                .map(String::as_str),
            Some("gpu")
        );
        assert_eq!(
            claim.metadata.labels.get("team").map(String::as_str),
            Some("ml")
        );
        assert_eq!(claim.spec.devices.requests.len(), 1);

        // A second sync changes nothing.
        sync_pod(&mut m, "default", "train").expect("sync");
        let claims = store.list(Kind::ResourceClaim, None).expect("list");
        assert_eq!(claims.len(), 1);
    }

    #[tokio::test]
    async fn template_entries_are_made_reused_or_left_waiting() {
        // (case, objects besides the pod, the pod's recorded status, want: claim recorded
        // and how many claims are stored)
        struct Case {
            name: &'static str,
            objects: Vec<Object>,
            recorded: Option<Option<&'static str>>,
            want_recorded: Option<&'static str>,
            want_claims: usize,
        }
        let cases = [
            Case {
                name: "template missing: nothing is made",
                objects: vec![],
                recorded: None,
                want_recorded: None,
                want_claims: 0,
            },
            Case {
                name: "a claim made before but not recorded is reused",
                objects: vec![
                    template("t"),
                    Object::ResourceClaim(Box::new(generated("p-gpu-abcde", "p", "gpu"))),
                ],
                recorded: None,
                want_recorded: Some("p-gpu-abcde"),
                want_claims: 1,
            },
            Case {
                name: "recorded and present: kept",
                objects: vec![
                    template("t"),
                    Object::ResourceClaim(Box::new(generated("p-gpu-xyzab", "p", "gpu"))),
                ],
                recorded: Some(Some("p-gpu-xyzab")),
                want_recorded: Some("p-gpu-xyzab"),
                want_claims: 1,
            },
            Case {
                name: "recorded as not needed: nothing is made",
                objects: vec![template("t")],
                recorded: Some(None),
                want_recorded: None,
                want_claims: 0,
            },
            Case {
                name: "recorded claim owned by another pod: a new one is made",
                objects: vec![
                    template("t"),
                    Object::ResourceClaim(Box::new(generated("p-gpu-other", "q", "gpu"))),
                ],
                recorded: Some(Some("p-gpu-other")),
                want_recorded: Some("new"),
                want_claims: 2,
            },
        ];
        for case in cases {
            let mut pod = PodBuilder::new("p")
                .resource_claim_template("gpu", "t")
                .build();
            if let Some(recorded) = case.recorded {
                pod.status.resource_claim_statuses = vec![PodResourceClaimStatus {
                    name: "gpu".into(),
                    resource_claim_name: recorded.map(str::to_string),
                }];
            }
            let mut objects = case.objects;
            objects.push(Object::Pod(Box::new(pod)));
            let (mut m, store) = manager(objects);
            sync_pod(&mut m, "default", "p").expect(case.name);
            let pod = stored_pod(store.as_ref(), "p");
            let recorded = pod
                .status
                .resource_claim_statuses
                .first()
                .and_then(|s| s.resource_claim_name.clone());
            match case.want_recorded {
                Some("new") => {
                    let name = recorded.expect(case.name);
                    assert!(
                        name.starts_with("p-gpu-") && name != "p-gpu-other",
                        "{}: {name}",
                        case.name
                    );
                }
                want => assert_eq!(recorded.as_deref(), want, "{}", case.name),
            }
            let claims = store.list(Kind::ResourceClaim, None).expect("list");
            assert_eq!(claims.len(), case.want_claims, "{}", case.name);
        }
    }

    #[tokio::test]
    async fn claims_drop_consumers_that_are_done_and_go_with_their_pod() {
        struct Case {
            name: &'static str,
            /// The consumer pod (`p`, uid default-p) as stored, if at all.
            pod: Option<Pod>,
            /// Whether the claim was generated for `p`.
            generated: bool,
            want_reserved: bool,
            want_allocated: bool,
            want_claim: bool,
        }
        let running = PodBuilder::new("p")
            .node_name("n1")
            .phase(PodPhase::Running)
            .build();
        let succeeded = PodBuilder::new("p")
            .node_name("n1")
            .phase(PodPhase::Succeeded)
            .build();
        let replaced = PodBuilder::new("p").uid("new-uid").node_name("n1").build();
        let mut deleted_unbound = PodBuilder::new("p").build();
        deleted_unbound.metadata.deletion_timestamp = Some(Time::now());
        let mut deleted_bound = running.clone();
        deleted_bound.metadata.deletion_timestamp = Some(Time::now());
        let cases = [
            Case {
                name: "running consumer keeps it",
                pod: Some(running.clone()),
                generated: false,
                want_reserved: true,
                want_allocated: true,
                want_claim: true,
            },
            Case {
                name: "running owner keeps it",
                pod: Some(running),
                generated: true,
                want_reserved: true,
                want_allocated: true,
                want_claim: true,
            },
            Case {
                name: "terminating bound pod may still run",
                pod: Some(deleted_bound),
                generated: false,
                want_reserved: true,
                want_allocated: true,
                want_claim: true,
            },
            Case {
                name: "succeeded consumer: released and deallocated",
                pod: Some(succeeded.clone()),
                generated: false,
                want_reserved: false,
                want_allocated: false,
                want_claim: true,
            },
            Case {
                name: "succeeded owner: its claim is deleted",
                pod: Some(succeeded),
                generated: true,
                want_reserved: false,
                want_allocated: false,
                want_claim: false,
            },
            Case {
                name: "deleted before binding: released",
                pod: Some(deleted_unbound),
                generated: false,
                want_reserved: false,
                want_allocated: false,
                want_claim: true,
            },
            Case {
                name: "pod replaced by another uid: released",
                pod: Some(replaced.clone()),
                generated: false,
                want_reserved: false,
                want_allocated: false,
                want_claim: true,
            },
            Case {
                name: "owner replaced: its claim is deleted",
                pod: Some(replaced),
                generated: true,
                want_reserved: false,
                want_allocated: false,
                want_claim: false,
            },
            Case {
                name: "pod gone: released, the claim left to the garbage collector",
                pod: None,
                generated: true,
                want_reserved: false,
                want_allocated: false,
                want_claim: true,
            },
        ];
        for case in cases {
            let base = if case.generated {
                generated("c", "p", "gpu")
            } else {
                ResourceClaimBuilder::new("c").request("gpu", "gpu").build()
            };
            let mut claim = base;
            let allocated = ResourceClaimBuilder::new("c")
                .request("gpu", "gpu")
                .allocated("n1", &[("gpu", "gpu.berth.dev", "n1", "gpu-0")])
                .reserved_for("p", "default-p")
                .build();
            claim.status = allocated.status;
            let mut objects = vec![Object::ResourceClaim(Box::new(claim))];
            objects.extend(case.pod.map(Object::from));
            let (mut m, store) = manager(objects);
            sync_claim(&mut m, "default", "c").expect(case.name);
            let claim = stored_claim(store.as_ref(), "c");
            assert_eq!(claim.is_some(), case.want_claim, "{}", case.name);
            if let Some(claim) = claim {
                assert_eq!(
                    claim.is_reserved_for("default-p"),
                    case.want_reserved,
                    "{}",
                    case.name
                );
                assert_eq!(
                    claim.status.allocation.is_some(),
                    case.want_allocated,
                    "{}",
                    case.name
                );
            }
        }
    }

    #[tokio::test]
    async fn a_pod_bound_by_node_name_reserves_its_allocated_claim() {
        let claim = ResourceClaimBuilder::new("shared")
            .request("gpu", "gpu")
            .allocated("n1", &[("gpu", "gpu.berth.dev", "n1", "gpu-0")])
            .reserved_for("other", "uid-other")
            .build();
        let pod = PodBuilder::new("p")
            .node_name("n1")
            .resource_claim("gpu", "shared")
            .build();
        let (mut m, store) = manager(vec![
            Object::ResourceClaim(Box::new(claim)),
            Object::Pod(Box::new(pod)),
        ]);
        sync_pod(&mut m, "default", "p").expect("sync");
        let claim = stored_claim(store.as_ref(), "shared").expect("claim");
        assert!(claim.is_reserved_for("default-p") && claim.is_reserved_for("uid-other"));
    }
}
