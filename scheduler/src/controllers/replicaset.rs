//! The ReplicaSet controller: keeps `spec.replicas` active pods of each ReplicaSet, creating
//! missing ones from its template (`<replicaset>-<5 chars>`, controlled by it) and deleting
//! extras in kube's order, and keeps its status counts.
//!
//! A pod that ends (Failed: evicted, preempted, refused by its node; or Succeeded) or is
//! deleted no longer counts, so a replacement is created. Orphan pods that match the
//! selector are not adopted: a ReplicaSet only counts the pods it controls.

use std::cmp::Ordering;
use std::collections::HashMap;

use berth_proto::model::{Object, ObjectKey, Pod, PodPhase, ReplicaSet, Time};
use berth_proto::names;
use berth_store::{Op, Precondition};
use tracing::info;

use super::{controlled_pods, object_ref, ControllerManager, Error};
use crate::server::admission;
use crate::server::events::{NORMAL, WARNING};
use crate::workloads::pods_for_replica_set;

/// Most pods created or deleted in one reconcile (kube's `burstReplicas`).
pub const BURST_REPLICAS: usize = 500;

/// The annotation whose integer value makes a pod cheaper (lower) or dearer to delete.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

fn phase_ordinal(phase: PodPhase) -> u8 {
    match phase {
        PodPhase::Pending => 0,
        PodPhase::Unknown => 1,
        PodPhase::Running => 2,
        // Finished pods are not active and never ranked; place them first anyway.
        PodPhase::Succeeded | PodPhase::Failed => 0,
    }
}

fn ready_time(pod: &Pod) -> Option<Time> {
    pod.condition(names::CONDITION_READY)
        .filter(|c| c.status == names::STATUS_TRUE)
        .and_then(|c| c.last_transition_time)
}

fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .get(POD_DELETION_COST)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn max_restarts(pod: &Pod) -> i32 {
    pod.status
        .container_statuses
        .iter()
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
}

/// Later first, with a missing time counted as the latest (kube's `afterOrZero`).
fn later_first(a: Option<Time>, b: Option<Time>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

/// Orders pods so that the ones to delete first come first (kube's `ActivePodsWithRanks`):
/// unbound before bound; Pending, then Unknown, then Running; not ready before ready; lower
/// `pod-deletion-cost` first; more of the set's pods on the same node first; ready more
/// recently first; more restarts first; created more recently first; then by name.
///
/// `rank` is how many of the set's active pods share each pod's node. Kube compares ready and
/// creation times in logarithmic buckets (LogarithmicScaleDown); Berth compares them exactly.
pub fn deletion_order(a: &Pod, b: &Pod, rank: &dyn Fn(&Pod) -> usize) -> Ordering {
    let bound = |p: &Pod| !p.spec.node_name.is_empty();
    bound(a)
        .cmp(&bound(b))
        .then_with(|| phase_ordinal(a.status.phase).cmp(&phase_ordinal(b.status.phase)))
        .then_with(|| a.is_ready().cmp(&b.is_ready()))
        .then_with(|| deletion_cost(a).cmp(&deletion_cost(b)))
        .then_with(|| rank(b).cmp(&rank(a)))
        .then_with(|| {
            if a.is_ready() && b.is_ready() {
                later_first(ready_time(a), ready_time(b))
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| max_restarts(b).cmp(&max_restarts(a)))
        .then_with(|| later_first(a.metadata.creation_timestamp, b.metadata.creation_timestamp))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The `count` pods to delete when scaling down, first to go first ([`deletion_order`], with
/// ranks counted among `pods`).
pub fn pods_to_delete<'a>(pods: &[&'a Pod], count: usize) -> Vec<&'a Pod> {
    let mut per_node: HashMap<&str, usize> = HashMap::new();
    for p in pods.iter().filter(|p| !p.spec.node_name.is_empty()) {
        *per_node.entry(p.spec.node_name.as_str()).or_default() += 1;
    }
    let rank = |p: &Pod| {
        per_node
            .get(p.spec.node_name.as_str())
            .copied()
            .unwrap_or(0)
    };
    let mut sorted = pods.to_vec();
    sorted.sort_by(|a, b| deletion_order(a, b, &rank));
    sorted.truncate(count);
    sorted
}

/// Status counts of a set over the pods it controls: active, ready, available.
pub fn replica_counts(pods: &[&Pod]) -> (i32, i32, i32) {
    let active: Vec<&&Pod> = pods.iter().filter(|p| p.is_active()).collect();
    let ready = active.iter().filter(|p| p.is_ready()).count();
    let n = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
    // minReadySeconds is not modelled: a ready pod is available.
    (n(active.len()), n(ready), n(ready))
}

/// Reconciles one ReplicaSet.
pub fn reconcile(m: &mut ControllerManager, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(Object::ReplicaSet(rs)) =
        m.live(berth_proto::model::Kind::ReplicaSet, namespace, name)
    else {
        return Ok(());
    };
    let owned: Vec<Pod> = controlled_pods(&m.cache, &rs.metadata.uid)
        .into_iter()
        .cloned()
        .collect();
    let active: Vec<&Pod> = owned.iter().filter(|p| p.is_active()).collect();
    let want = usize::try_from(rs.spec.replicas.max(0)).unwrap_or(0);
    let rs_obj = Object::ReplicaSet(rs.clone());
    match active.len().cmp(&want) {
        Ordering::Less => {
            let missing = (want - active.len()).min(BURST_REPLICAS);
            let created = create_pods(m, &rs, missing)?;
            info!(replicaset = %name, pods = ?created, "scaled up");
            for pod_name in created {
                m.events.record(
                    object_ref(&rs_obj),
                    NORMAL,
                    "SuccessfulCreate",
                    format!("Created pod: {pod_name}"),
                );
            }
        }
        Ordering::Greater => {
            let extra = (active.len() - want).min(BURST_REPLICAS);
            let victims = pods_to_delete(&active, extra);
            let names: Vec<String> = victims.iter().map(|p| p.metadata.name.clone()).collect();
            let ops = victims
                .iter()
                .map(|p| Op::Delete {
                    key: ObjectKey::new(berth_proto::model::Kind::Pod, namespace, &p.metadata.name),
                    precondition: Precondition::ResourceVersion(
                        p.metadata.resource_version.clone(),
                    ),
                })
                .collect();
            m.commit(ops)?;
            info!(replicaset = %name, pods = ?names, "scaled down");
            for pod_name in names {
                m.events.record(
                    object_ref(&rs_obj),
                    NORMAL,
                    "SuccessfulDelete",
                    format!("Deleted pod: {pod_name}"),
                );
            }
        }
        Ordering::Equal => {}
    }
    update_status(m, &rs, &owned)
}

/// Creates `count` pods of the set, admitted as a user's pods are (priority, defaults,
/// quota). A name clash (a generated name already taken) is retried with new names.
/// Returns the names of the pods created.
fn create_pods(
    m: &mut ControllerManager,
    rs: &ReplicaSet,
    count: usize,
) -> Result<Vec<String>, Error> {
    let key = ObjectKey::new(
        berth_proto::model::Kind::ReplicaSet,
        &rs.metadata.namespace,
        &rs.metadata.name,
    );
    let mut attempts = 0;
    loop {
        attempts += 1;
        let pods = pods_for_replica_set(rs, count, &mut m.rng);
        let names: Vec<String> = pods.iter().map(|p| p.metadata.name.clone()).collect();
        let mut ops = Vec::with_capacity(pods.len());
        for pod in pods {
            match admission::admit(m.store(), Object::Pod(Box::new(pod)), &m.admission) {
                Ok(obj) => ops.push(Op::Create(obj)),
                Err(source) => {
                    m.events.record(
                        object_ref(&Object::ReplicaSet(Box::new(rs.clone()))),
                        WARNING,
                        "FailedCreate",
                        format!("Error creating: {source}"),
                    );
                    return Err(Error::Admission { owner: key, source });
                }
            }
        }
        match m.commit(ops) {
            Err(Error::Store(berth_store::Error::AlreadyExists { .. })) if attempts < 3 => {}
            other => return other.map(|()| names),
        }
    }
}

fn update_status(m: &mut ControllerManager, rs: &ReplicaSet, owned: &[Pod]) -> Result<(), Error> {
    let refs: Vec<&Pod> = owned.iter().collect();
    let (replicas, ready, available) = replica_counts(&refs);
    let mut updated = rs.clone();
    updated.status.replicas = replicas;
    updated.status.ready_replicas = ready;
    updated.status.available_replicas = available;
    m.update_if_changed(
        &Object::ReplicaSet(Box::new(rs.clone())),
        Object::ReplicaSet(Box::new(updated)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::PodBuilder;

    /// A pod named `name`, on `node` ("" for unbound), in `phase`, ready or not, created
    /// `age` seconds after the epoch.
    fn pod(name: &str, node: &str, phase: PodPhase, ready: bool, created: i64) -> Pod {
        PodBuilder::new(name)
            .node_name(node)
            .phase(phase)
            .created(created)
            .ready(ready)
            .build()
    }

    #[test]
    fn scale_down_picks_pods_as_kube_does() {
        struct Case {
            name: &'static str,
            pods: Vec<Pod>,
            count: usize,
            want: Vec<&'static str>,
        }
        use PodPhase::{Pending, Running};
        let cases = vec![
            Case {
                name: "unbound before bound",
                pods: vec![
                    pod("bound", "n1", Running, true, 1),
                    pod("unbound", "", Pending, false, 0),
                ],
                count: 1,
                want: vec!["unbound"],
            },
            Case {
                name: "pending before running",
                pods: vec![
                    pod("running", "n1", Running, true, 5),
                    pod("pending", "n2", Pending, false, 1),
                ],
                count: 1,
                want: vec!["pending"],
            },
            Case {
                name: "not ready before ready",
                pods: vec![
                    pod("ready", "n1", Running, true, 5),
                    pod("unready", "n2", Running, false, 1),
                ],
                count: 1,
                want: vec!["unready"],
            },
            Case {
                name: "doubled-up nodes first",
                pods: vec![
                    pod("alone", "n1", Running, true, 9),
                    pod("pair-a", "n2", Running, true, 1),
                    pod("pair-b", "n2", Running, true, 2),
                ],
                count: 1,
                want: vec!["pair-b"],
            },
            Case {
                name: "newest first",
                pods: vec![
                    pod("old", "n1", Running, true, 1),
                    pod("new", "n2", Running, true, 3),
                    pod("mid", "n3", Running, true, 2),
                ],
                count: 2,
                want: vec!["new", "mid"],
            },
            Case {
                name: "none",
                pods: vec![pod("a", "n1", Running, true, 1)],
                count: 0,
                want: vec![],
            },
        ];
        for case in cases {
            let refs: Vec<&Pod> = case.pods.iter().collect();
            let got: Vec<&str> = pods_to_delete(&refs, case.count)
                .iter()
                .map(|p| p.metadata.name.as_str())
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn deletion_cost_is_honoured() {
        let mut cheap = pod("cheap", "n1", PodPhase::Running, true, 1);
        cheap
            .metadata
            .annotations
            .insert(POD_DELETION_COST.into(), "-10".into());
        let dear = pod("dear", "n2", PodPhase::Running, true, 5);
        let got = pods_to_delete(&[&dear, &cheap], 1);
        assert_eq!(got[0].metadata.name, "cheap");
    }

    #[test]
    fn counts_skip_finished_and_terminating_pods() {
        let mut terminating = pod("t", "n1", PodPhase::Running, true, 1);
        terminating.metadata.deletion_timestamp = Some(Time::from_unix_nanos(0));
        let pods = [
            pod("ready", "n1", PodPhase::Running, true, 1),
            pod("starting", "n2", PodPhase::Pending, false, 1),
            pod("failed", "n3", PodPhase::Failed, false, 1),
            terminating,
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        assert_eq!(replica_counts(&refs), (2, 1, 1));
    }
}
