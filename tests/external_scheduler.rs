//! A custom scheduler beside Berth's own (examples/external-scheduler.rs, run in this test
//! process): it binds the pods that name it through the Bind RPC, Berth's scheduler leaves
//! them and the pods of schedulers nobody runs untouched, and when two schedulers race for
//! the same room the node's agent refuses the binding that would over-commit it (the pod
//! ends Failed with OutOfcpu, as kubelet fails it).

mod common;

#[path = "../examples/external-scheduler.rs"]
#[allow(dead_code)]
mod external_scheduler;

use common::{str_at, wait_until, TestCluster};

/// Runs the example scheduler as `name` on a thread of its own; returns once it watches.
fn start_external(cluster: &TestCluster, name: &str) {
    let (server, name) = (cluster.server(), name.to_string());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        // It ends with an error when the cluster goes away at the end of the test.
        let _ = runtime.block_on(external_scheduler::run(&server, &name, None, move || {
            let _ = tx.send(());
        }));
    });
    rx.recv_timeout(common::TIMEOUT)
        .expect("the external scheduler watches pods");
}

/// A pod manifest: `cpu` requested, scheduled by `scheduler` (empty: Berth's).
fn pod(name: &str, cpu: &str, scheduler: &str) -> String {
    let spec = if scheduler.is_empty() {
        String::new()
    } else {
        format!("  schedulerName: {scheduler}\n")
    };
    common::pod_yaml(name, cpu, "", &spec)
}

fn apply(cluster: &TestCluster, file: &str, yaml: &str) {
    let path = cluster.manifest(file, yaml);
    cluster.berth_ok(&["apply", "-f", &path.display().to_string()]);
}

fn phase(cluster: &TestCluster, pod: &str) -> String {
    str_at(&cluster.pod_json(pod), "/status/phase").to_string()
}

/// The reporting components of the pod's events with `reason`.
fn events_of(cluster: &TestCluster, pod: &str) -> Vec<(String, String)> {
    let out = cluster.berth_ok(&["get", "events", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).expect("events JSON");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|e| str_at(e, "/involvedObject/name") == pod)
        .map(|e| {
            (
                str_at(e, "/reason").to_string(),
                str_at(e, "/reportingComponent").to_string(),
            )
        })
        .collect()
}

#[test]
fn an_external_scheduler_binds_its_pods_and_the_node_refuses_an_over_commit() {
    let mut cluster = TestCluster::start();
    cluster.start_agent("node-a", "1", "4Gi");
    cluster.start_agent("node-b", "1", "4Gi");
    cluster.start_agent("node-c", "4", "8Gi");
    cluster.wait_ready_nodes(3);
    start_external(&cluster, "my-scheduler");

    // Side by side: each scheduler binds its own pod; nobody's pod stays untouched.
    let yaml = [
        pod("orphan", "100m", "nobody"),
        pod("mine", "100m", "my-scheduler"),
        pod("berths", "100m", ""),
    ]
    .concat();
    apply(&cluster, "side-by-side.yaml", &yaml);
    wait_until("both scheduled pods run", || {
        phase(&cluster, "mine") == "Running" && phase(&cluster, "berths") == "Running"
    });
    assert_eq!(
        events_of(&cluster, "mine"),
        [("Scheduled".to_string(), "my-scheduler".to_string())],
        "the binder's name on the Scheduled event"
    );
    let orphan = cluster.pod_json("orphan");
    assert_eq!(str_at(&orphan, "/spec/nodeName"), "", "{orphan}");
    assert_eq!(
        orphan.pointer("/status/conditions"),
        None,
        "Berth's scheduler writes nothing to another scheduler's pod: {orphan}"
    );
    assert!(events_of(&cluster, "orphan").is_empty());

    // A race: both schedulers decide from the same view, in which only node-c has room
    // for 3 cpu, and both bind there; node-c's agent admits one and fails the other.
    start_external(&cluster, "other-scheduler");
    let yaml = [
        pod("x", "3", "my-scheduler"),
        pod("y", "3", "other-scheduler"),
    ]
    .concat();
    apply(&cluster, "race.yaml", &yaml);
    wait_until("one racer runs and the other failed", || {
        let phases = [phase(&cluster, "x"), phase(&cluster, "y")];
        phases.contains(&"Running".to_string()) && phases.contains(&"Failed".to_string())
    });
    let (x, y) = (cluster.pod_json("x"), cluster.pod_json("y"));
    for pod in [&x, &y] {
        assert_eq!(str_at(pod, "/spec/nodeName"), "node-c", "both bound: {pod}");
    }
    let failed = if str_at(&x, "/status/phase") == "Failed" {
        &x
    } else {
        &y
    };
    assert_eq!(str_at(failed, "/status/reason"), "OutOfcpu", "{failed}");
    assert!(
        str_at(failed, "/status/message").contains("cpu"),
        "{failed}"
    );
}
