//! End-to-end tests of node lifecycle and NoExecute taint eviction (issue 5), with real
//! binaries and durations shortened by flags: an agent that stops (killed, or paused with
//! SIGSTOP) gets its node Ready=Unknown and tainted unreachable, its pods leave after their
//! tolerationSeconds, and its return clears the taints; a NoExecute taint set by a user evicts
//! the pods that do not tolerate it and spares those that do; a Deployment's pods move off a
//! stopped node to a healthy one; a pressure condition brings its NoSchedule taint, and a
//! node written in a manifest is not watched for heartbeats.

mod common;

use common::{str_at, wait_until, TestCluster};

/// Flags that make a silent agent's node go Unknown within seconds.
const FAST_LIFECYCLE: &[&str] = &[
    "--node-monitor-grace-period",
    "3s",
    "--node-monitor-period",
    "500ms",
];

/// A pod bound to `node` (spec.nodeName, past the scheduler), with extra tolerations given
/// as YAML flow mappings.
fn bound_pod(name: &str, node: &str, tolerations: &[&str]) -> String {
    let tolerations = if tolerations.is_empty() {
        String::new()
    } else {
        format!(
            "  tolerations:\n{}",
            tolerations
                .iter()
                .map(|t| format!("  - {t}\n"))
                .collect::<String>()
        )
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {node}\n{tolerations}  containers:\n  - name: main\n    image: busybox\n    resources:\n      requests: {{cpu: 100m}}\n---\n"
    )
}

/// A pod that tolerates the unreachable taint for two seconds, one that tolerates it
/// forever, and one left with the default toleration (300 s), all on node `a`.
fn unreachable_pods() -> String {
    [
        bound_pod(
            "two-seconds",
            "a",
            &["{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2}"],
        ),
        bound_pod(
            "forever",
            "a",
            &["{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}"],
        ),
        bound_pod("default", "a", &[]),
    ]
    .concat()
}

fn node_json(cluster: &TestCluster, name: &str) -> serde_json::Value {
    let out = cluster.berth_ok(&["get", "node", name, "-o", "json"]);
    serde_json::from_str(&out).expect("node JSON")
}

fn condition<'a>(node: &'a serde_json::Value, type_: &str) -> Option<&'a serde_json::Value> {
    node.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| str_at(c, "/type") == type_)
}

/// The node's taints as `key:Effect` strings.
fn taints(node: &serde_json::Value) -> Vec<String> {
    node.pointer("/spec/taints")
        .and_then(|t| t.as_array())
        .map(|ts| {
            ts.iter()
                .map(|t| format!("{}:{}", str_at(t, "/key"), str_at(t, "/effect")))
                .collect()
        })
        .unwrap_or_default()
}

fn pod_exists(cluster: &TestCluster, name: &str) -> bool {
    cluster.berth(&["get", "pod", name]).status.success()
}

fn running(cluster: &TestCluster, name: &str) -> bool {
    pod_exists(cluster, name) && str_at(&cluster.pod_json(name), "/status/phase") == "Running"
}

/// Whether the node is registered and its Ready condition is True.
fn node_ready(cluster: &TestCluster, node: &str) -> bool {
    cluster.berth(&["get", "node", node]).status.success()
        && condition(&node_json(cluster, node), "Ready")
            .is_some_and(|c| str_at(c, "/status") == "True")
}

fn start_two_nodes(cluster: &mut TestCluster) {
    cluster.start_agent("a", "4", "8Gi");
    cluster.start_agent("b", "4", "8Gi");
    wait_until("both nodes are Ready", || {
        ["a", "b"].iter().all(|n| node_ready(cluster, n))
    });
}

/// Waits until node `a` is Ready=Unknown with both unreachable taints, and checks the
/// condition's reason and the NoExecute taint's timeAdded.
fn wait_unreachable(cluster: &TestCluster) {
    wait_until("node a is Unknown and tainted unreachable", || {
        let node = node_json(cluster, "a");
        let unknown = condition(&node, "Ready").is_some_and(|c| str_at(c, "/status") == "Unknown");
        let t = taints(&node);
        unknown
            && t.contains(&"node.kubernetes.io/unreachable:NoExecute".to_string())
            && t.contains(&"node.kubernetes.io/unreachable:NoSchedule".to_string())
    });
    let node = node_json(cluster, "a");
    let ready = condition(&node, "Ready").expect("Ready condition");
    assert_eq!(str_at(ready, "/reason"), "NodeStatusUnknown");
    assert_eq!(
        str_at(ready, "/message"),
        "Kubelet stopped posting node status."
    );
    let no_execute = node["spec"]["taints"]
        .as_array()
        .expect("taints")
        .iter()
        .find(|t| str_at(t, "/effect") == "NoExecute")
        .expect("NoExecute taint");
    assert!(
        !str_at(no_execute, "/timeAdded").is_empty(),
        "timeAdded is set: {no_execute}"
    );
    let b = node_json(cluster, "b");
    assert!(
        taints(&b).is_empty(),
        "the healthy node stays untainted: {:?}",
        taints(&b)
    );
}

/// Waits for the two-second pod to leave node `a`, with the taint manager's Event; the pod
/// tolerating forever and the one with the default 300 s stay.
fn wait_two_second_pod_evicted(cluster: &TestCluster) {
    wait_until("the pod tolerating 2 s is evicted", || {
        !pod_exists(cluster, "two-seconds")
    });
    let events = cluster.berth_ok(&["get", "events", "-o", "json"]);
    assert!(
        events.contains("TaintManagerEviction")
            && events.contains("Marking for deletion Pod default/two-seconds"),
        "eviction event: {events}"
    );
    assert!(
        pod_exists(cluster, "forever"),
        "a pod tolerating forever stays"
    );
    assert!(
        pod_exists(cluster, "default"),
        "the default toleration is 300 s"
    );
    let tolerations = cluster.pod_json("default")["spec"]["tolerations"].to_string();
    assert!(
        tolerations.contains("node.kubernetes.io/unreachable") && tolerations.contains("300"),
        "default tolerations: {tolerations}"
    );
}

/// A cluster with fast node lifecycle, nodes `a` and `b`, and [`unreachable_pods`] running
/// on `a`.
fn cluster_with_unreachable_pods() -> TestCluster {
    let mut cluster = TestCluster::start_with_flags(FAST_LIFECYCLE);
    start_two_nodes(&mut cluster);
    let path = cluster.manifest("pods.yaml", &unreachable_pods());
    cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    wait_until("the pods run on a", || {
        ["two-seconds", "forever", "default"]
            .iter()
            .all(|p| running(&cluster, p))
    });
    cluster
}

/// Waits until node `a` is Ready again with no taints left.
fn wait_ready_again(cluster: &TestCluster) {
    wait_until("node a is Ready again and untainted", || {
        let node = node_json(cluster, "a");
        condition(&node, "Ready").is_some_and(|c| str_at(c, "/status") == "True")
            && taints(&node).is_empty()
    });
}

#[test]
fn a_killed_agent_is_tainted_unreachable_its_pods_leave_and_its_return_clears_the_taints() {
    let mut cluster = cluster_with_unreachable_pods();

    cluster.agent("a").kill();
    wait_unreachable(&cluster);
    wait_two_second_pod_evicted(&cluster);

    cluster.start_agent("a", "4", "8Gi");
    wait_ready_again(&cluster);
    assert!(pod_exists(&cluster, "forever") && pod_exists(&cluster, "default"));
    wait_until("the remaining pods run again on a", || {
        running(&cluster, "forever")
    });
}

#[test]
fn a_paused_agent_is_tainted_unreachable_and_cleared_when_it_resumes() {
    let mut cluster = cluster_with_unreachable_pods();

    cluster.agent("a").signal("STOP");
    wait_unreachable(&cluster);
    wait_two_second_pod_evicted(&cluster);

    cluster.agent("a").signal("CONT");
    wait_ready_again(&cluster);
    assert!(pod_exists(&cluster, "forever") && pod_exists(&cluster, "default"));
}

#[test]
fn a_user_no_execute_taint_evicts_intolerant_pods_and_spares_tolerating_ones() {
    let mut cluster = TestCluster::start();
    start_two_nodes(&mut cluster);
    let pods = [
        bound_pod("intolerant", "a", &[]),
        bound_pod(
            "tolerating",
            "a",
            &["{key: maintenance, operator: Equal, value: now, effect: NoExecute}"],
        ),
        bound_pod(
            "one-second",
            "a",
            &["{key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: 1}"],
        ),
        bound_pod("elsewhere", "b", &[]),
    ]
    .concat();
    let path = cluster.manifest("pods.yaml", &pods);
    cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    wait_until("the pods run", || {
        ["intolerant", "tolerating", "one-second", "elsewhere"]
            .iter()
            .all(|p| running(&cluster, p))
    });

    cluster.berth_ok(&["taint", "nodes", "a", "maintenance=now:NoExecute"]);
    wait_until("the intolerant pod is evicted", || {
        !pod_exists(&cluster, "intolerant")
    });
    wait_until("the pod tolerating 1 s is evicted", || {
        !pod_exists(&cluster, "one-second")
    });
    let events = cluster.berth_ok(&["get", "events", "-o", "json"]);
    assert!(
        events.contains("Marking for deletion Pod default/intolerant"),
        "eviction event: {events}"
    );
    assert!(running(&cluster, "tolerating"), "a tolerating pod stays");
    assert!(
        running(&cluster, "elsewhere"),
        "pods on other nodes are not touched"
    );

    // The taint goes: nothing else leaves, and the node takes pods again.
    cluster.berth_ok(&["taint", "nodes", "a", "maintenance:NoExecute-"]);
    assert!(taints(&node_json(&cluster, "a")).is_empty());
    assert!(running(&cluster, "tolerating"));
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2}
      containers:
      - name: main
        image: nginx
        resources:
          requests: {cpu: 100m}
"#;

/// The nodes of the Deployment's running pods, sorted.
fn web_nodes(cluster: &TestCluster) -> Vec<String> {
    let out = cluster.berth_ok(&["get", "pods", "-l", "app=web", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).expect("pod list JSON");
    let mut nodes: Vec<String> = list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|p| str_at(p, "/status/phase") == "Running")
                .map(|p| str_at(p, "/spec/nodeName").to_string())
                .collect()
        })
        .unwrap_or_default();
    nodes.sort();
    nodes
}

#[test]
fn a_deployment_moves_off_a_killed_agent_after_its_toleration() {
    let mut cluster = TestCluster::start_with_flags(FAST_LIFECYCLE);
    cluster.start_agent("a", "4", "8Gi");
    wait_until("node a is Ready", || node_ready(&cluster, "a"));
    let path = cluster.manifest("web.yaml", DEPLOYMENT);
    cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    wait_until("both replicas run on a, the only node", || {
        web_nodes(&cluster) == ["a", "a"]
    });
    cluster.start_agent("b", "4", "8Gi");
    wait_until("node b is Ready", || node_ready(&cluster, "b"));

    cluster.agent("a").kill();
    wait_unreachable(&cluster);
    wait_until("both replicas run on b", || {
        web_nodes(&cluster) == ["b", "b"]
    });
    let events = cluster.berth_ok(&["get", "events", "-o", "json"]);
    assert!(
        events.contains("TaintManagerEviction"),
        "eviction events: {events}"
    );
}

/// A node written by hand, with no agent, under memory pressure (`status` given).
fn manual_node(memory_pressure: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: manual\nstatus:\n  capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n  conditions:\n  - {{type: Ready, status: \"True\"}}\n  - {{type: MemoryPressure, status: \"{memory_pressure}\"}}\n"
    )
}

#[test]
fn pressure_conditions_taint_the_node_and_manifest_nodes_are_not_watched_for_heartbeats() {
    let mut cluster = TestCluster::start_with_flags(FAST_LIFECYCLE);
    start_two_nodes(&mut cluster);
    let path = cluster.manifest("manual.yaml", &manual_node("True"));
    cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    wait_until("the node under memory pressure is tainted", || {
        taints(&node_json(&cluster, "manual")) == ["node.kubernetes.io/memory-pressure:NoSchedule"]
    });

    // Long enough for a silent node to go Unknown: the agent's node does, the manifest
    // node (never heard from) does not.
    cluster.agent("a").kill();
    wait_unreachable(&cluster);
    let manual = node_json(&cluster, "manual");
    assert_eq!(
        condition(&manual, "Ready").map(|c| str_at(c, "/status")),
        Some("True"),
        "a node without an agent is left alone: {manual}"
    );
    assert_eq!(
        taints(&manual),
        ["node.kubernetes.io/memory-pressure:NoSchedule"]
    );

    let path = cluster.manifest("manual.yaml", &manual_node("False"));
    cluster.berth_ok(&["apply", "-f", path.to_str().unwrap()]);
    wait_until("the pressure taint goes with the pressure", || {
        taints(&node_json(&cluster, "manual")).is_empty()
    });
}
