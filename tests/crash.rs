//! Crash safety and graceful shutdown, over the real binaries (issue 6): the scheduler is
//! killed with SIGKILL in the middle of a 1,000-pod run and restarted, and every invariant
//! is checked — no acknowledged write lost, no pod bound twice, no node over-committed,
//! agents reconverge; and a SIGTERM right after an apply finishes the in-flight work and
//! loses nothing.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_proto::model::{Pod, PodPhase};
use berth_proto::pb;
use common::{
    apply_yaml, assert_not_moved, channel, cpu_millis, list_pods, objects, placements, pod_yaml,
    runtime, uids_logged, wait_for, wait_until, TestCluster,
};

/// Pods of the crash run.
const PODS: usize = 1000;
/// Pods per apply.
const BATCH: usize = 50;
/// Nodes of the crash run, and each one's CPU: 10 × 10.5 cores hold 1,050 pods of 100m, so
/// the 1,000 pods fill the nodes to 95%.
const NODES: usize = 10;
const NODE_CPU: &str = "10500m";
const NODE_CPU_MILLIS: i64 = 10_500;
/// Failure guard for the long waits of these tests.
const GUARD: Duration = Duration::from_secs(180);

fn pod_name(i: usize) -> String {
    format!("pod-{i:04}")
}

fn batch(b: usize) -> Vec<pb::Object> {
    let yaml: String = (b * BATCH..(b + 1) * BATCH)
        .map(|i| pod_yaml(&pod_name(i), "100m", "", ""))
        .collect();
    objects(&yaml)
}

/// Checks the invariants that hold at every moment: no node holds more than it has, and
/// every pod that an agent ever started was started only by the agent of its node.
fn assert_no_overcommit_and_no_duplicate(cluster: &TestCluster, pods: &[Pod], nodes: &[String]) {
    let mut cpu: HashMap<&str, i64> = HashMap::new();
    for pod in pods.iter().filter(|p| !p.spec.node_name.is_empty()) {
        *cpu.entry(pod.spec.node_name.as_str()).or_default() += cpu_millis(pod);
    }
    for (node, used) in &cpu {
        assert!(
            *used <= NODE_CPU_MILLIS,
            "node {node} is over-committed: {used}m of {NODE_CPU_MILLIS}m"
        );
    }
    let started: HashMap<&str, HashSet<String>> = nodes
        .iter()
        .map(|n| {
            (
                n.as_str(),
                uids_logged(&cluster.log_of(n), common::POD_STARTED),
            )
        })
        .collect();
    for pod in pods {
        let ran_on: Vec<&str> = started
            .iter()
            .filter(|(_, uids)| uids.contains(&pod.metadata.uid))
            .map(|(node, _)| *node)
            .collect();
        assert!(
            ran_on.iter().all(|n| *n == pod.spec.node_name),
            "pod {} (bound to {:?}) was started on {ran_on:?}",
            pod.metadata.name,
            pod.spec.node_name
        );
    }
}

#[test]
fn kill_9_in_the_middle_of_a_1000_pod_run_loses_nothing_and_binds_nothing_twice() {
    let mut cluster = TestCluster::start();
    let nodes: Vec<String> = (0..NODES).map(|i| format!("n{i}")).collect();
    for node in &nodes {
        cluster.start_agent(node, NODE_CPU, "64Gi");
    }
    wait_for("every node is Ready", GUARD, || {
        cluster.ready_nodes() == NODES
    });

    // Apply the pods in batches from another thread, retrying a batch until it is
    // acknowledged; record which batches were acknowledged.
    let acked: Arc<Mutex<Vec<usize>>> = Arc::default();
    let applier = {
        let acked = acked.clone();
        let server = cluster.server();
        std::thread::spawn(move || {
            let rt = runtime();
            let channel = {
                let _in = rt.enter();
                tonic::transport::Endpoint::from_shared(server)
                    .expect("address")
                    .connect_timeout(Duration::from_secs(1))
                    .connect_lazy()
            };
            let deadline = std::time::Instant::now() + GUARD;
            for b in 0..PODS / BATCH {
                let request = pb::ApplyRequest {
                    objects: batch(b),
                    dry_run: false,
                };
                loop {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "batch {b} never applied"
                    );
                    match rt.block_on(common::api(&channel).apply(request.clone())) {
                        Ok(_) => break,
                        Err(_) => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
                acked.lock().unwrap().push(b);
                // A steady pace keeps the run going well past the moment of the kill.
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    let rt = runtime();
    let api = channel(&rt, &cluster);
    wait_for(
        "400 pods are acknowledged and some are bound",
        GUARD,
        || {
            acked.lock().unwrap().len() >= 8
                && list_pods(&rt, &api, None).is_ok_and(|pods| placements(&pods).len() >= 100)
        },
    );
    let before = placements(&list_pods(&rt, &api, None).expect("listing pods"));
    cluster.scheduler.as_mut().unwrap().kill();
    let acked_before: Vec<usize> = acked.lock().unwrap().clone();
    assert!(
        acked_before.len() < PODS / BATCH,
        "the kill must come in the middle of the run, not after it"
    );
    eprintln!(
        "killed the scheduler with {} pods acknowledged and {} bound",
        acked_before.len() * BATCH,
        before.len()
    );

    cluster.start_scheduler();
    // Nothing acknowledged is lost, and no binding moved.
    let after = list_pods(&rt, &api, None).expect("listing pods after the restart");
    let names: HashSet<&str> = after.iter().map(|p| p.metadata.name.as_str()).collect();
    for b in &acked_before {
        for i in b * BATCH..(b + 1) * BATCH {
            assert!(
                names.contains(pod_name(i).as_str()),
                "acknowledged pod {} was lost",
                pod_name(i)
            );
        }
    }
    assert_not_moved(&before, &placements(&after), "across the crash");

    applier.join().expect("the applier finished");
    wait_for("all 1,000 pods are bound and Running", GUARD, || {
        list_pods(&rt, &api, None).is_ok_and(|pods| {
            pods.len() == PODS
                && pods
                    .iter()
                    .all(|p| !p.spec.node_name.is_empty() && p.status.phase == PodPhase::Running)
        })
    });
    let pods = list_pods(&rt, &api, None).expect("listing pods");
    assert_not_moved(&before, &placements(&pods), "after the restart");
    let mut expected: Vec<String> = (0..PODS).map(pod_name).collect();
    let mut got: Vec<String> = pods.iter().map(|p| p.metadata.name.clone()).collect();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "exactly the applied pods exist");
    assert_no_overcommit_and_no_duplicate(&cluster, &pods, &nodes);
    // Each agent runs exactly the pods bound to it: every bound pod's Running status came
    // from its own node's agent (the server takes status only from the pod's node), and
    // its log shows it started each of them.
    for node in &nodes {
        let started = uids_logged(&cluster.log_of(node), common::POD_STARTED);
        for pod in pods.iter().filter(|p| &p.spec.node_name == node) {
            assert!(
                started.contains(&pod.metadata.uid),
                "{node} never started {}",
                pod.metadata.name
            );
        }
    }
}

#[test]
fn sigterm_right_after_an_apply_finishes_in_flight_work_and_loses_nothing() {
    let mut cluster = TestCluster::start();
    cluster.start_agent("a", "4", "8Gi");
    cluster.start_agent("b", "4", "8Gi");
    cluster.wait_ready_nodes(2);
    let rt = runtime();
    let api = channel(&rt, &cluster);
    let yaml: String = (0..100)
        .map(|i| pod_yaml(&format!("p-{i:03}"), "50m", "", ""))
        .collect();
    apply_yaml(&rt, &api, &yaml).expect("the apply is acknowledged");

    // SIGTERM at once: the scheduler stops by itself, cleanly, closing the agents' streams.
    let status = cluster.scheduler.as_mut().unwrap().terminate();
    assert!(
        status.success(),
        "the scheduler exits cleanly on SIGTERM: {status}\n{}",
        cluster.logs()
    );
    let log = cluster.log_of("scheduler");
    assert!(
        log.contains("closed every agent session"),
        "agents are told:\n{log}"
    );
    assert!(
        log.contains("berth-scheduler stopped"),
        "the shutdown completes:\n{log}"
    );

    cluster.start_scheduler();
    let pods = list_pods(&rt, &api, None).expect("listing pods");
    assert_eq!(
        pods.len(),
        100,
        "every acknowledged pod survived the shutdown"
    );
    let before = placements(&pods);
    wait_until("every pod runs", || {
        list_pods(&rt, &api, None).is_ok_and(|pods| {
            pods.len() == 100 && pods.iter().all(|p| p.status.phase == PodPhase::Running)
        })
    });
    let pods = list_pods(&rt, &api, None).expect("listing pods");
    assert_not_moved(&before, &placements(&pods), "across the shutdown");
    let mut cpu: HashMap<&str, i64> = HashMap::new();
    for pod in &pods {
        *cpu.entry(pod.spec.node_name.as_str()).or_default() += cpu_millis(pod);
    }
    assert!(
        cpu.values().all(|used| *used <= 4000),
        "no node over-committed: {cpu:?}"
    );

    // An agent told to stop closes its stream and exits cleanly; the scheduler sees it go.
    let seen = cluster.log_of("scheduler").len();
    let status = cluster.agent("a").terminate();
    assert!(
        status.success(),
        "the agent exits cleanly on SIGTERM: {status}"
    );
    assert!(cluster.log_of("a").contains("closing the session"));
    wait_until("the scheduler sees the session close", || {
        cluster.log_of("scheduler")[seen..]
            .lines()
            .any(|l| l.contains("agent session closed") && l.contains("node=a"))
    });
}
