//! Network faults between agents and the scheduler, over the real binaries on loopback
//! (issue 6): the stream broken by a scheduler crash, an agent killed and started again
//! under the same node name, an agent frozen with SIGSTOP while its pods change and thawed
//! with SIGCONT. After each, the cluster converges with no pod running twice.

mod common;

use std::collections::HashSet;

use berth_proto::model::{Pod, PodPhase};
use common::{
    apply_yaml, assert_not_moved, channel, list_pods, placements, pod_yaml, runtime, uids_logged,
    wait_until, TestCluster,
};

const NODES: [&str; 2] = ["a", "b"];

/// Every pod bound and Running.
fn all_running(pods: &[Pod]) -> bool {
    pods.iter()
        .all(|p| !p.spec.node_name.is_empty() && p.status.phase == PodPhase::Running)
}

/// No pod was ever started by an agent other than its node's.
fn assert_no_pod_ran_elsewhere(cluster: &TestCluster, pods: &[Pod]) {
    for node in NODES {
        let started = uids_logged(&cluster.log_of(node), common::POD_STARTED);
        for pod in pods {
            if started.contains(&pod.metadata.uid) {
                assert_eq!(
                    pod.spec.node_name, node,
                    "pod {} bound to {} was started on {node}",
                    pod.metadata.name, pod.spec.node_name
                );
            }
        }
    }
}

#[test]
fn agents_cut_off_and_back_converge_with_no_duplicate_pod() {
    let mut cluster = TestCluster::start();
    for node in NODES {
        cluster.start_agent(node, "2", "4Gi");
    }
    cluster.wait_ready_nodes(2);
    let rt = runtime();
    let api = channel(&rt, &cluster);
    let apply = |yaml: &str| apply_yaml(&rt, &api, yaml).expect("apply");
    let pods = || -> Vec<Pod> { list_pods(&rt, &api, None).expect("listing pods") };
    // Applies pods p-<first> up to p-<total - 1> and waits until all `total` run.
    let add_pods = |first: usize, total: usize, what: &str| {
        let yaml: String = (first..total)
            .map(|i| pod_yaml(&format!("p-{i}"), "100m", "", ""))
            .collect();
        apply(&yaml);
        wait_until(what, || {
            let p = pods();
            p.len() == total && all_running(&p)
        });
        placements(&pods())
    };
    let placed = add_pods(0, 10, "the first pods run");

    // 1. The scheduler crashes: every stream breaks. Agents reconnect to the restarted
    //    scheduler; nothing moves, and new work flows.
    cluster.scheduler.as_mut().unwrap().kill();
    cluster.start_scheduler();
    let now = add_pods(10, 14, "the cluster converges after the scheduler restart");
    assert_not_moved(&placed, &now, "across the scheduler restart");
    let placed = now;

    // 2. Agent a is killed and starts again under the same name, with no pods: the
    //    scheduler hands it back exactly its own pods.
    let a_pods: HashSet<String> = placed
        .values()
        .filter(|(_, node)| node == "a")
        .map(|(uid, _)| uid.clone())
        .collect();
    cluster.agent("a").kill();
    let seen = cluster.log_of("a").len();
    cluster.start_agent("a", "2", "4Gi");
    wait_until("the new agent a restarts its pods", || {
        uids_logged(&cluster.log_of("a")[seen..], common::POD_STARTED) == a_pods
    });
    wait_until("the cluster converges after the agent restart", || {
        all_running(&pods())
    });
    assert_eq!(
        placements(&pods()),
        placed,
        "nothing moved when agent a restarted"
    );

    // 3. Agent b freezes (SIGSTOP) while its pods change: one is deleted, one is bound to
    //    it directly. Once thawed (SIGCONT) it catches up: the deleted pod stops, the new
    //    one starts, and nothing else changes.
    let (victim, (victim_uid, _)) = placed
        .iter()
        .find(|(_, (_, node))| node == "b")
        .map(|(n, p)| (n.clone(), p.clone()))
        .expect("the scheduler spread the pods over both nodes");
    let seen = cluster.log_of("b").len();
    cluster.agent("b").signal("STOP");
    cluster.berth_ok(&["delete", "pod", &victim]);
    apply(&pod_yaml("pinned", "100m", "", "  nodeName: b\n"));
    cluster.agent("b").signal("CONT");
    wait_until("agent b stops the deleted pod", || {
        uids_logged(&cluster.log_of("b")[seen..], common::POD_STOPPED).contains(&victim_uid)
    });
    wait_until("the pinned pod runs on b", || {
        pods().iter().any(|p| {
            p.metadata.name == "pinned"
                && p.spec.node_name == "b"
                && p.status.phase == PodPhase::Running
        })
    });
    let final_pods = pods();
    assert!(all_running(&final_pods), "every pod runs");
    let mut expected = placed.clone();
    expected.remove(&victim);
    let mut now = placements(&final_pods);
    now.remove("pinned");
    assert_eq!(now, expected, "only the deleted pod left, nothing moved");
    assert_no_pod_ran_elsewhere(&cluster, &final_pods);
}
