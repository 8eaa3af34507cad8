//! Garbage collection by ownerReferences (kube's background cascading deletion): when a
//! Deployment, ReplicaSet, DaemonSet or Job is deleted, the objects it owns are deleted too, and
//! theirs in turn (a Deployment's ReplicaSets, then their pods); a deleted pod's generated
//! ResourceClaims and a deleted node's ResourceSlices go the same way.
//!
//! A dependent goes once every owner it names is absent: no object of that kind, namespace
//! and name, or one with another uid. Only owners of kinds Berth stores are judged; a
//! reference to another kind (a StatefulSet, a CronJob) or without a uid keeps the dependent.

use berth_proto::model::{Kind, Object, ObjectKey, OwnerReference};
use berth_store::{Op, Precondition};
use tracing::info;

use super::{Cache, ControllerManager, Error};

/// The stored kind an ownerReference's kind names, if Berth stores owners of that kind.
fn owner_kind(reference: &OwnerReference) -> Option<Kind> {
    match reference.kind.as_str() {
        "Deployment" => Some(Kind::Deployment),
        "ReplicaSet" => Some(Kind::ReplicaSet),
        "DaemonSet" => Some(Kind::DaemonSet),
        "Job" => Some(Kind::Job),
        // A pod's generated ResourceClaims, a node's ResourceSlices.
        "Pod" => Some(Kind::Pod),
        "Node" => Some(Kind::Node),
        _ => None,
    }
}

/// Whether `reference` (of an object in `namespace`) names an owner that is gone.
pub fn is_owner_absent(cache: &Cache, namespace: &str, reference: &OwnerReference) -> bool {
    let Some(kind) = owner_kind(reference) else {
        return false;
    };
    if reference.uid.is_empty() {
        return false;
    }
    match cache.get(kind, namespace, &reference.name) {
        Some(owner) => owner.meta().uid != reference.uid,
        None => true,
    }
}

/// Whether an object should be collected: it names owners, and every one is absent.
pub fn is_orphaned(cache: &Cache, obj: &Object) -> bool {
    let meta = obj.meta();
    !meta.owner_references.is_empty()
        && meta
            .owner_references
            .iter()
            .all(|r| is_owner_absent(cache, &meta.namespace, r))
}

/// Deletes the orphaned dependents of the owner with this uid.
pub fn collect_dependents(m: &mut ControllerManager, uid: &str) -> Result<(), Error> {
    let doomed: Vec<Object> = m
        .cache
        .dependents_of(uid)
        .into_iter()
        .filter(|o| is_orphaned(&m.cache, o))
        .cloned()
        .collect();
    delete_all(m, doomed)
}

/// Deletes every orphaned object in the cache (at start-up and after a re-list, when owner
/// deletions may have been missed).
pub fn scan(m: &mut ControllerManager) -> Result<(), Error> {
    let doomed: Vec<Object> = [
        Kind::ReplicaSet,
        Kind::Pod,
        Kind::ResourceClaim,
        Kind::ResourceSlice,
    ]
    .into_iter()
    .flat_map(|kind| m.cache.list(kind, None))
    .filter(|o| is_orphaned(&m.cache, o))
    .cloned()
    .collect();
    delete_all(m, doomed)
}

fn delete_all(m: &mut ControllerManager, doomed: Vec<Object>) -> Result<(), Error> {
    if doomed.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = doomed.iter().map(|o| o.key().to_string()).collect();
    // One object at a time: a dependent deleted meanwhile must not hold up the others.
    let mut first_error = None;
    for obj in doomed {
        let op = Op::Delete {
            key: ObjectKey::new(obj.kind(), &obj.meta().namespace, &obj.meta().name),
            precondition: Precondition::ResourceVersion(obj.meta().resource_version.clone()),
        };
        match m.commit(vec![op]) {
            Ok(()) | Err(Error::Store(berth_store::Error::NotFound { .. })) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    info!(objects = ?names, "collected dependents of deleted owners");
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{ObjectMeta, Pod, ReplicaSet};
    use berth_store::{Change, ChangeType};

    fn rs(name: &str, uid: &str) -> Object {
        Object::ReplicaSet(Box::new(ReplicaSet {
            metadata: ObjectMeta {
                name: name.into(),
                namespace: "default".into(),
                uid: uid.into(),
                resource_version: "1".into(),
                ..Default::default()
            },
            ..Default::default()
        }))
    }

    fn owned_pod(owners: &[(&str, &str, &str)]) -> Object {
        let mut pod = Pod::default();
        pod.metadata.namespace = "default".into();
        pod.metadata.name = "p".into();
        pod.metadata.owner_references = owners
            .iter()
            .map(|(kind, name, uid)| OwnerReference {
                kind: (*kind).into(),
                name: (*name).into(),
                uid: (*uid).into(),
                controller: Some(true),
                ..Default::default()
            })
            .collect();
        Object::Pod(Box::new(pod))
    }

    #[test]
    fn orphans_are_those_whose_owners_are_all_gone() {
        // (case, the pod's owners, orphaned); the cache holds ReplicaSet web with uid u1.
        let web = ("ReplicaSet", "web", "u1");
        let gone = ("ReplicaSet", "gone", "u9");
        let recreated = ("ReplicaSet", "web", "old-uid");
        let not_stored = ("StatefulSet", "db", "u5");
        let no_uid = ("ReplicaSet", "gone", "");
        let cases: [(&str, &[(&str, &str, &str)], bool); 7] = [
            ("owner exists", &[web], false),
            ("owner missing", &[gone], true),
            ("owner recreated with another uid", &[recreated], true),
            ("one owner left", &[gone, web], false),
            ("owner of a kind Berth does not store", &[not_stored], false),
            ("reference without uid", &[no_uid], false),
            ("no owner", &[], false),
        ];
        let mut cache = Cache::default();
        cache.apply(&Change {
            change_type: ChangeType::Added,
            object: rs("web", "u1").into(),
            revision: 1,
        });
        for (name, owners, want) in cases {
            assert_eq!(is_orphaned(&cache, &owned_pod(owners)), want, "{name}");
        }
    }
}
