//! End-to-end tests of the foundation: real binaries on loopback — a pod lands on a node that
//! fits and runs; a pod that fits nowhere stays Pending with kube's reason; a misspelled
//! manifest is refused whole; bindings survive a scheduler restart.

mod common;

use common::{str_at, wait_until, TestCluster};

const BIG_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: big
  labels: {app: big}
spec:
  containers:
  - name: main
    image: nginx
    resources:
      requests: {cpu: "3", memory: 1Gi}
"#;

const HUGE_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: huge
spec:
  containers:
  - name: main
    image: nginx
    resources:
      requests: {cpu: "64"}
"#;

fn two_node_cluster() -> TestCluster {
    let mut cluster = TestCluster::start();
    cluster.start_agent("small", "2", "4Gi");
    cluster.start_agent("large", "4", "8Gi");
    cluster.wait_ready_nodes(2);
    cluster
}

#[test]
fn pod_lands_on_the_node_that_fits_and_survives_a_scheduler_restart() {
    let mut cluster = two_node_cluster();
    let path = cluster.manifest("big.yaml", BIG_POD);
    let out = cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    assert!(out.contains("pod/big created"), "apply said: {out}");

    wait_until("the pod runs", || {
        str_at(&cluster.pod_json("big"), "/status/phase") == "Running"
    });
    let pod = cluster.pod_json("big");
    assert_eq!(
        str_at(&pod, "/spec/nodeName"),
        "large",
        "3 cpu only fit the 4-cpu node"
    );

    // Restart the scheduler on the same store: the binding and the status are still there,
    // and the agents reconnect.
    cluster.scheduler.as_mut().unwrap().stop();
    cluster.start_scheduler();
    let pod = cluster.pod_json("big");
    assert_eq!(str_at(&pod, "/spec/nodeName"), "large");
    assert_eq!(str_at(&pod, "/status/phase"), "Running");
    let uid_before = str_at(&pod, "/metadata/uid").to_string();
    cluster.wait_ready_nodes(2);
    // Re-applying the same manifest changes nothing.
    let out = cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    assert!(out.contains("pod/big unchanged"), "apply said: {out}");
    assert_eq!(
        str_at(&cluster.pod_json("big"), "/metadata/uid"),
        uid_before
    );
}

#[test]
fn a_pod_that_fits_nowhere_stays_pending_and_describe_says_why() {
    let cluster = two_node_cluster();
    let path = cluster.manifest("huge.yaml", HUGE_POD);
    cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    wait_until("the scheduler gives up on the pod", || {
        cluster
            .berth_ok(&["describe", "pod", "huge"])
            .contains("0/2 nodes are available: 2 Insufficient cpu.")
    });
    let pod = cluster.pod_json("huge");
    assert_eq!(str_at(&pod, "/status/phase"), "Pending");
    assert_eq!(str_at(&pod, "/spec/nodeName"), "");
    let describe = cluster.berth_ok(&["describe", "pod", "huge"]);
    assert!(
        describe.contains("FailedScheduling"),
        "describe: {describe}"
    );
    // The per-node explanation, as `berth sim --explain` gives it offline.
    for node in ["small", "large"] {
        let line = describe
            .lines()
            .find(|l| l.trim_start().starts_with(node) && l.contains("rejected by"))
            .unwrap_or_else(|| panic!("no verdict for {node} in: {describe}"));
        assert!(
            line.contains("NodeResourcesFit: Insufficient cpu"),
            "verdict for {node}: {line}"
        );
    }
}

#[test]
fn a_misspelled_manifest_is_refused_whole_with_its_field_path() {
    let cluster = two_node_cluster();
    let yaml = format!(
        "{BIG_POD}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  containers:\n  - name: main\n    image: nginx\n    resoures:\n      requests: {{cpu: 100m}}\n"
    );
    let path = cluster.manifest("typo.yaml", &yaml);
    let out = cluster.berth(&["apply", "-f", path.to_str().unwrap()]);
    assert!(!out.status.success(), "a typo must fail the apply");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("typo.yaml"), "names the file: {stderr}");
    assert!(
        stderr.contains("document 2"),
        "names the document: {stderr}"
    );
    assert!(
        stderr.contains("spec.containers[0]") && stderr.contains("resoures"),
        "names the field path: {stderr}"
    );
    // Nothing of the apply was stored, not even the valid first document.
    let pods = cluster.berth_ok(&["get", "pods"]);
    assert!(!pods.contains("big"), "nothing stored, got: {pods}");
}
