//! The DaemonSet controller: one pod on every node that the template's nodeSelector, node
//! affinity and tolerations admit ([`node_should_run_daemon_pod`]). Each pod is pinned to
//! its node by required node affinity on `metadata.name` and placed by the scheduler, as
//! kube does ([`daemon_pod_for`]). Nodes that join get their pod; a pod whose node left, or
//! whose node no longer admits it, is deleted; a daemon pod that failed is deleted so that
//! a new one is created.

use std::collections::BTreeMap;

use berth_proto::model::{DaemonSet, Kind, Node, NodeSelectorOperator, Object, ObjectKey, Pod};
use berth_store::{Op, Precondition};
use tracing::info;

use super::{controlled_pods, object_ref, ControllerManager, Error};
use crate::plugins::node_affinity::FIELD_METADATA_NAME;
use crate::server::admission;
use crate::server::events::{NORMAL, WARNING};
use crate::workloads::{daemon_pod_for, node_should_run_daemon_pod};

/// The node a daemon pod is for: the node it is bound to, else the single node its required
/// node affinity names through `matchFields metadata.name In [node]`.
pub fn daemon_pod_node(pod: &Pod) -> Option<&str> {
    if !pod.spec.node_name.is_empty() {
        return Some(&pod.spec.node_name);
    }
    let terms = &pod
        .spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().find_map(|term| {
        term.match_fields.iter().find_map(|f| {
            (f.key == FIELD_METADATA_NAME
                && f.operator == NodeSelectorOperator::In
                && f.values.len() == 1)
                .then(|| f.values[0].as_str())
        })
    })
}

/// What the controller does for one DaemonSet.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DaemonPlan {
    /// Nodes that need a pod.
    pub create_on: Vec<String>,
    /// Names of the pods to delete.
    pub delete: Vec<String>,
    /// Nodes that should run the pod (`desiredNumberScheduled`).
    pub desired: i32,
    /// Of those, nodes with a bound pod (`currentNumberScheduled`).
    pub current: i32,
    /// Of those, nodes with a ready pod (`numberReady`).
    pub ready: i32,
}

/// Compares the nodes with the set's pods (kube's `podsShouldBeOnNode`, over every node).
pub fn plan(ds: &DaemonSet, nodes: &[&Node], pods: &[&Pod]) -> DaemonPlan {
    let mut out = DaemonPlan::default();
    let mut by_node: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for pod in pods {
        if !pod.is_active() {
            // A failed daemon pod is deleted so that it is replaced; a terminating one is
            // left to finish.
            if pod.status.phase == berth_proto::model::PodPhase::Failed && !pod.is_terminating() {
                out.delete.push(pod.metadata.name.clone());
            }
            continue;
        }
        match daemon_pod_node(pod) {
            Some(node) => by_node.entry(node).or_default().push(pod),
            None => out.delete.push(pod.metadata.name.clone()),
        }
    }
    for node in nodes {
        let name = node.metadata.name.as_str();
        let fit = node_should_run_daemon_pod(ds, node);
        let mut here = by_node.remove(name).unwrap_or_default();
        if fit.should_run {
            out.desired += 1;
            if here.iter().any(|p| !p.spec.node_name.is_empty()) {
                out.current += 1;
            }
            if here.iter().any(|p| p.is_ready()) {
                out.ready += 1;
            }
        }
        if here.is_empty() {
            if fit.should_run {
                out.create_on.push(name.to_string());
            }
        } else if !fit.should_continue_running {
            out.delete
                .extend(here.iter().map(|p| p.metadata.name.clone()));
        } else if here.len() > 1 {
            // Keep the oldest pod, bound ones before pending ones.
            here.sort_by(|a, b| {
                (
                    a.spec.node_name.is_empty(),
                    a.metadata.creation_timestamp,
                    &a.metadata.name,
                )
                    .cmp(&(
                        b.spec.node_name.is_empty(),
                        b.metadata.creation_timestamp,
                        &b.metadata.name,
                    ))
            });
            out.delete
                .extend(here[1..].iter().map(|p| p.metadata.name.clone()));
        }
    }
    // Pods for nodes that no longer exist.
    for pods in by_node.into_values() {
        out.delete
            .extend(pods.iter().map(|p| p.metadata.name.clone()));
    }
    out
}

/// Reconciles one DaemonSet.
pub fn reconcile(m: &mut ControllerManager, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(Object::DaemonSet(ds)) = m.live(Kind::DaemonSet, namespace, name) else {
        return Ok(());
    };
    let pods: Vec<Pod> = controlled_pods(&m.cache, &ds.metadata.uid)
        .into_iter()
        .cloned()
        .collect();
    let nodes: Vec<Node> = m.cache.nodes().into_iter().cloned().collect();
    let node_refs: Vec<&Node> = nodes.iter().collect();
    let pod_refs: Vec<&Pod> = pods.iter().collect();
    let plan = plan(&ds, &node_refs, &pod_refs);
    let ds_obj = Object::DaemonSet(ds.clone());

    let mut ops = Vec::new();
    for pod_name in &plan.delete {
        let Some(pod) = pods.iter().find(|p| &p.metadata.name == pod_name) else {
            continue;
        };
        ops.push(Op::Delete {
            key: ObjectKey::new(Kind::Pod, namespace, pod_name),
            precondition: Precondition::ResourceVersion(pod.metadata.resource_version.clone()),
        });
    }
    let mut created = Vec::new();
    for node in &plan.create_on {
        let pod = daemon_pod_for(&ds, node, &mut m.rng);
        match admission::admit(m.store(), Object::Pod(Box::new(pod)), &m.admission) {
            Ok(obj) => {
                created.push(obj.meta().name.clone());
                ops.push(Op::Create(obj));
            }
            Err(source) => {
                m.events.record(
                    object_ref(&ds_obj),
                    WARNING,
                    "FailedCreate",
                    format!("Error creating: {source}"),
                );
                return Err(Error::Admission {
                    owner: ObjectKey::new(Kind::DaemonSet, namespace, name),
                    source,
                });
            }
        }
    }
    if !ops.is_empty() {
        m.commit(ops)?;
        info!(daemonset = %name, created = ?created, deleted = ?plan.delete, "reconciled");
        for pod_name in &created {
            m.events.record(
                object_ref(&ds_obj),
                NORMAL,
                "SuccessfulCreate",
                format!("Created pod: {pod_name}"),
            );
        }
        for pod_name in &plan.delete {
            m.events.record(
                object_ref(&ds_obj),
                NORMAL,
                "SuccessfulDelete",
                format!("Deleted pod: {pod_name}"),
            );
        }
    }
    let mut updated = ds;
    updated.status.desired_number_scheduled = plan.desired;
    updated.status.current_number_scheduled = plan.current;
    updated.status.number_ready = plan.ready;
    m.update_if_changed(&ds_obj, Object::DaemonSet(updated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::NodeBuilder;
    use berth_proto::model::{PodPhase, TaintEffect};
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn ds() -> DaemonSet {
        serde_yaml_ng::from_str(
            "metadata: {name: agent, namespace: default, uid: ds-uid}\nspec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      nodeSelector: {role: worker}\n      containers: [{name: c}]\n",
        )
        .expect("test daemonset parses")
    }

    /// A node, labelled `role: worker` or not, tainted `dedicated` with `taint`'s effect.
    fn node(name: &str, worker: bool, taint: Option<TaintEffect>) -> Node {
        let mut node = NodeBuilder::new(name);
        if worker {
            node = node.label("role", "worker");
        }
        if let Some(effect) = taint {
            node = node.taint("dedicated", "", effect);
        }
        node.build()
    }

    fn pod_for(node: &str, name: &str, bound: bool, phase: PodPhase) -> Pod {
        let mut pod = daemon_pod_for(&ds(), node, &mut SmallRng::seed_from_u64(1));
        pod.metadata.name = name.into();
        if bound {
            pod.spec.node_name = node.into();
        }
        pod.status.phase = phase;
        pod
    }

    #[test]
    fn daemon_pods_follow_the_nodes() {
        let worker = |name| node(name, true, None);
        let running = |node, name| pod_for(node, name, true, PodPhase::Running);
        let pending = |node, name| pod_for(node, name, false, PodPhase::Pending);
        let n1 = || vec![worker("n1")];
        let p1 = || vec![running("n1", "p1")];
        let all = vec![worker("n1"), worker("n2"), node("x", false, None)];
        let left = vec![running("n1", "p1"), running("gone", "p2")];
        let failed = vec![pod_for("n1", "p1", true, PodPhase::Failed)];
        let no_exec = vec![node("n1", true, Some(TaintEffect::NoExecute))];
        let no_sched = vec![node("n1", true, Some(TaintEffect::NoSchedule))];
        let dup = vec![running("n1", "a"), pending("n1", "b")];
        // (case, nodes, pods, nodes a pod is created on, pods deleted, desired count)
        let cases: Vec<(&str, Vec<Node>, Vec<Pod>, &[&str], &[&str], i32)> = vec![
            (
                "every worker gets a pod",
                all,
                vec![],
                &["n1", "n2"],
                &[],
                2,
            ),
            (
                "pending pods count for their node",
                n1(),
                vec![pending("n1", "p1")],
                &[],
                &[],
                1,
            ),
            (
                "the pod of a node that left is deleted",
                n1(),
                left,
                &[],
                &["p2"],
                1,
            ),
            (
                "a failed pod is deleted and replaced",
                n1(),
                failed,
                &["n1"],
                &["p1"],
                1,
            ),
            (
                "an untolerated NoExecute taint removes the pod",
                no_exec,
                p1(),
                &[],
                &["p1"],
                0,
            ),
            (
                "an untolerated NoSchedule taint keeps a running pod",
                no_sched,
                p1(),
                &[],
                &[],
                0,
            ),
            ("duplicates on a node keep one", n1(), dup, &[], &["b"], 1),
        ];
        let set = ds();
        for (name, nodes, pods, want_create, want_delete, want_desired) in cases {
            let nodes: Vec<&Node> = nodes.iter().collect();
            let pods: Vec<&Pod> = pods.iter().collect();
            let got = plan(&set, &nodes, &pods);
            assert_eq!(got.create_on, want_create, "{name}: create");
            assert_eq!(got.delete, want_delete, "{name}: delete");
            assert_eq!(got.desired, want_desired, "{name}: desired");
        }
    }

    #[test]
    fn a_pending_daemon_pod_names_its_node() {
        let pod = pod_for("n7", "p", false, PodPhase::Pending);
        assert_eq!(daemon_pod_node(&pod), Some("n7"));
        let mut bare = Pod::default();
        assert_eq!(daemon_pod_node(&bare), None);
        bare.spec.node_name = "n2".into();
        assert_eq!(daemon_pod_node(&bare), Some("n2"));
    }
}
