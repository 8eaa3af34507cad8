//! End-to-end tests of the node agent with real binaries (issue 5): pressure eviction with
//! the sim runtime, node-side admission (OutOfcpu, host ports), the images a simulated
//! node reports, and the process runtime (real
//! processes, logs, restarts, graceful stop). Durations are shortened with flags only.

mod common;

use common::{str_at, wait_until, TestCluster};

/// The flags of a sim agent of 4 cpu and 1Gi whose memory-pressure eviction starts below
/// 200Mi available, checked every second.
const PRESSURE: [&str; 10] = [
    "--runtime",
    "sim",
    "--cpu",
    "4",
    "--memory",
    "1Gi",
    "--housekeeping-interval",
    "1s",
    "--eviction-hard",
    "memory.available<200Mi",
];

/// Starts an agent with the given runtime flags and waits until its node registers.
fn start_agent(cluster: &mut TestCluster, name: &str, args: &[&str]) {
    cluster.spawn_agent(name, args, &[]);
    wait_until(&format!("node {name} registers"), || {
        cluster.berth(&["get", "node", name]).status.success()
    });
}

fn apply(cluster: &TestCluster, name: &str, yaml: &str) {
    let path = cluster.manifest(name, yaml);
    cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
}

fn phase(cluster: &TestCluster, pod: &str) -> String {
    str_at(&cluster.pod_json(pod), "/status/phase").to_string()
}

#[test]
fn memory_pressure_evicts_the_pod_over_its_request_first() {
    let mut cluster = TestCluster::start();
    let transition = ["--eviction-pressure-transition-period", "2s"];
    start_agent(&mut cluster, "n1", &[&PRESSURE[..], &transition].concat());
    apply(
        &cluster,
        "pressure.yaml",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata:\n  name: greedy\n  annotations:\n    sim.berth.dev/memory-usage: 500Mi\n    sim.berth.dev/cpu-usage: 250m\n\
         spec:\n  nodeName: n1\n  containers:\n  - name: main\n    image: app\n    resources:\n      requests: {memory: 100Mi}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata:\n  name: important\n  annotations:\n    sim.berth.dev/memory-usage: 500Mi\n\
         spec:\n  nodeName: n1\n  priorityClassName: high\n  containers:\n  - name: main\n    image: app\n    resources:\n      requests: {memory: 600Mi}\n",
    );
    // 1Gi - 1000Mi leaves 24Mi: under the 200Mi threshold.
    wait_until("greedy is evicted", || {
        phase(&cluster, "greedy") == "Failed"
    });
    let greedy = cluster.pod_json("greedy");
    assert_eq!(str_at(&greedy, "/status/reason"), "Evicted", "{greedy}");
    let message = str_at(&greedy, "/status/message");
    assert!(
        message.starts_with(
            "The node was low on resource: memory. Threshold quantity: 200Mi, available: 24Mi."
        ) && message.contains("Container main was using 500Mi, request is 100Mi"),
        "{message}"
    );
    wait_until("the eviction is recorded as an Event", || {
        let events = cluster.berth_ok(&["get", "events"]);
        events
            .lines()
            .any(|l| l.contains("Evicted") && l.contains("greedy"))
    });
    // With greedy gone 524Mi are free: the higher-priority pod within its request stays.
    assert_eq!(phase(&cluster, "important"), "Running");
    let node = cluster.berth_ok(&["get", "node", "n1", "-o", "json"]);
    assert!(node.contains("MemoryPressure"), "{node}");
    wait_until("top shows the pod's declared usage", || {
        let out = cluster.berth(&["top", "pods"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["important", "0m", "500Mi"])
    });
    let nodes = cluster.berth_ok(&["top", "nodes"]);
    assert!(nodes.contains("n1"), "{nodes}");
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        phase(&cluster, "important"),
        "Running",
        "one eviction was enough"
    );
}

#[test]
fn a_pod_bound_to_a_full_node_fails_out_of_cpu() {
    let mut cluster = TestCluster::start();
    start_agent(
        &mut cluster,
        "n2",
        &["--runtime", "sim", "--cpu", "1", "--memory", "1Gi"],
    );
    apply(
        &cluster,
        "first.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: first\nspec:\n  nodeName: n2\n  containers:\n  - name: main\n    image: app\n    resources:\n      requests: {cpu: 800m}\n",
    );
    wait_until("first runs", || phase(&cluster, "first") == "Running");
    apply(
        &cluster,
        "second.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: second\nspec:\n  nodeName: n2\n  containers:\n  - name: main\n    image: app\n    resources:\n      requests: {cpu: 500m}\n",
    );
    wait_until("second is refused", || {
        phase(&cluster, "second") == "Failed"
    });
    let second = cluster.pod_json("second");
    assert_eq!(str_at(&second, "/status/reason"), "OutOfcpu", "{second}");
    assert_eq!(
        str_at(&second, "/status/message"),
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 800, capacity: 1000"
    );
    assert_eq!(phase(&cluster, "first"), "Running");
}

/// A pod taking host port 8080 (image `nginx:1.27`, reported as 700Mi by a sim node),
/// with `spec` lines added.
fn host_port_pod(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations: {{sim.berth.dev/image-size: 700Mi}}\nspec:\n{spec}  containers:\n  - name: web\n    image: nginx:1.27\n    ports: [{{containerPort: 80, hostPort: 8080}}]\n"
    )
}

#[test]
fn a_host_port_is_held_by_one_pod_and_the_node_reports_its_image() {
    let mut cluster = TestCluster::start();
    start_agent(
        &mut cluster,
        "n5",
        &["--runtime", "sim", "--cpu", "4", "--memory", "1Gi"],
    );
    apply(&cluster, "web-1.yaml", &host_port_pod("web-1", ""));
    wait_until("web-1 runs", || phase(&cluster, "web-1") == "Running");
    apply(&cluster, "web-2.yaml", &host_port_pod("web-2", ""));
    wait_until("web-2 is kept off the node", || {
        cluster.berth_ok(&["describe", "pod", "web-2"]).contains(
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports.",
        )
    });
    assert_eq!(phase(&cluster, "web-2"), "Pending");
    // Bound past the scheduler, the node itself refuses it, as kubelet does.
    apply(
        &cluster,
        "web-3.yaml",
        &host_port_pod("web-3", "  nodeName: n5\n"),
    );
    wait_until("web-3 is refused", || phase(&cluster, "web-3") == "Failed");
    let web3 = cluster.pod_json("web-3");
    assert_eq!(str_at(&web3, "/status/reason"), "NodePorts", "{web3}");
    assert_eq!(
        str_at(&web3, "/status/message"),
        "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    );
    wait_until("the node reports the image it ran", || {
        cluster
            .berth_ok(&["describe", "node", "n5"])
            .contains("nginx:1.27")
    });
    let node: serde_json::Value =
        serde_json::from_str(&cluster.berth_ok(&["get", "node", "n5", "-o", "json"]))
            .expect("node JSON");
    assert_eq!(
        node.pointer("/status/images/0"),
        Some(&serde_json::json!({"names": ["nginx:1.27"], "sizeBytes": 700 << 20})),
        "{node}"
    );
}

#[test]
fn process_pods_run_log_restart_and_stop_gracefully() {
    let mut cluster = TestCluster::start();
    // No eviction thresholds: a nearly full disk on the test machine would otherwise evict
    // the crashing pod (the largest ephemeral-storage user) under DiskPressure.
    let root = cluster.start_process_agent("n3", &["--eviction-hard", ""]);
    apply(
        &cluster,
        "process.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: hello\nspec:\n  nodeName: n3\n  terminationGracePeriodSeconds: 10\n  containers:\n  - name: main\n    image: sh\n    command: [sh, -c]\n    args: [\"trap 'echo terminating; exit 0' TERM; echo hello; while true; do sleep 0.1; done\"]\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata:\n  name: crash\nspec:\n  nodeName: n3\n  restartPolicy: OnFailure\n  containers:\n  - name: main\n    image: sh\n    command: [sh, -c, 'echo crashing; exit 1']\n",
    );
    wait_until("hello runs", || phase(&cluster, "hello") == "Running");
    wait_until("berth logs shows hello", || {
        let out = cluster.berth(&["logs", "hello"]);
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("hello")
    });
    wait_until("crash restarts", || {
        let pod = cluster.pod_json("crash");
        pod.pointer("/status/containerStatuses/0/restartCount")
            .and_then(serde_json::Value::as_i64)
            .is_some_and(|n| n >= 2)
    });
    let crash = cluster.pod_json("crash");
    assert_eq!(str_at(&crash, "/status/phase"), "Running", "{crash}");
    assert_eq!(
        crash.pointer("/status/containerStatuses/0/lastState/terminated/exitCode"),
        Some(&serde_json::json!(1)),
        "{crash}"
    );

    let uid = str_at(&cluster.pod_json("hello"), "/metadata/uid").to_string();
    cluster.berth_ok(&["delete", "pod", "hello"]);
    let log = root.join("pods").join(&uid).join("main.log");
    wait_until("the TERM trap ran", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("terminating"))
    });
}

#[test]
fn one_process_hosts_many_simulated_nodes() {
    let mut cluster = TestCluster::start();
    start_agent(
        &mut cluster,
        "sim-1",
        &[
            "--runtime",
            "sim",
            "--count",
            "25",
            "--node-name-prefix",
            "sim-",
            "--cpu",
            "2",
            "--memory",
            "2Gi",
        ],
    );
    wait_until("every simulated node registers and is Ready", || {
        let out = cluster.berth_ok(&["get", "nodes", "--no-headers"]);
        out.lines().filter(|l| l.contains(" Ready ")).count() == 25
    });
    let nodes = cluster.berth_ok(&["get", "nodes", "-o", "name"]);
    for i in [1, 13, 25] {
        assert!(nodes.contains(&format!("node/sim-{i}\n")), "{nodes}");
    }
    apply(
        &cluster,
        "spread.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: on-sim\nspec:\n  containers:\n  - name: main\n    image: app\n    resources:\n      requests: {cpu: 1500m}\n",
    );
    wait_until("the pod runs on a simulated node", || {
        phase(&cluster, "on-sim") == "Running"
    });
}

/// The pods of a Deployment's label, as (name, node, phase, reason).
fn pods_of(cluster: &TestCluster, selector: &str) -> Vec<(String, String, String, String)> {
    let out = cluster.berth_ok(&["get", "pods", "-l", selector, "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).expect("pod list JSON");
    let items = match list.get("items") {
        Some(items) => items.as_array().cloned().unwrap_or_default(),
        None => vec![list],
    };
    items
        .iter()
        .map(|p| {
            (
                str_at(p, "/metadata/name").to_string(),
                str_at(p, "/spec/nodeName").to_string(),
                str_at(p, "/status/phase").to_string(),
                str_at(p, "/status/reason").to_string(),
            )
        })
        .collect()
}

#[test]
fn an_evicted_deployment_pod_is_replaced_on_another_node() {
    let mut cluster = TestCluster::start();
    start_agent(&mut cluster, "n1", &PRESSURE);
    apply(
        &cluster,
        "greedy.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: resident\n  annotations:\n    sim.berth.dev/memory-usage: 500Mi\n\
         spec:\n  nodeName: n1\n  containers:\n  - name: main\n    image: app\n    resources:\n      requests: {memory: 600Mi}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: greedy\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: greedy}\n\
         \x20 template:\n    metadata:\n      labels: {app: greedy}\n      annotations:\n        sim.berth.dev/memory-usage: 500Mi\n\
         \x20   spec:\n      containers:\n      - name: main\n        image: app\n        resources:\n          requests: {memory: 100Mi}\n",
    );
    wait_until("the Deployment's pod is bound to n1", || {
        pods_of(&cluster, "app=greedy")
            .iter()
            .any(|(_, node, _, _)| node == "n1")
    });
    // A second, roomy node joins; the pod over its request on n1 is evicted and its
    // ReplicaSet replaces it there (n1 is tainted memory-pressure meanwhile).
    start_agent(
        &mut cluster,
        "n2",
        &["--runtime", "sim", "--cpu", "4", "--memory", "8Gi"],
    );
    wait_until("the evicted pod is replaced on n2", || {
        let pods = pods_of(&cluster, "app=greedy");
        let evicted = pods.iter().any(|(_, node, phase, reason)| {
            node == "n1" && phase == "Failed" && reason == "Evicted"
        });
        let replaced = pods
            .iter()
            .any(|(_, node, phase, _)| node == "n2" && phase == "Running");
        evicted && replaced
    });
    assert_eq!(phase(&cluster, "resident"), "Running", "{}", cluster.logs());
}

/// Runs `berth` against the `berth dev` cluster whose client config is `config`.
fn dev_berth(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .env("BERTH_CONFIG", config)
        .env_remove("BERTH_SERVER")
        .env_remove("BERTH_TOKEN")
        .env_remove("BERTH_CA")
        .output()
        .expect("running berth")
}

/// The node a pod of the `berth dev` cluster is bound to, if any.
fn dev_pod_node(config: &std::path::Path, pod: &str) -> Option<String> {
    let out = dev_berth(config, &["get", "pod", pod, "-o", "json"]);
    let pod: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    pod.pointer("/spec/nodeName")
        .and_then(|n| n.as_str())
        .map(str::to_string)
}

/// Issue 11's check on a `berth dev` cluster of two nodes: the second pod asking for host
/// port 8080 prefers the node of the first (node affinity, and the image that node now
/// has), yet NodePorts keeps it off that node; a third finds the port taken on both and
/// stays Pending with kube's message.
#[test]
fn on_berth_dev_a_second_host_port_pod_is_kept_off_the_node_that_has_the_first() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = dir.path().join("config");
    let mut dev = common::StopOnDrop(common::spawn_berth_dev(
        dir.path(),
        &config,
        common::free_port(),
        &["--nodes", "2"],
    ));
    wait_until("berth dev has two Ready nodes", || {
        let out = dev_berth(&config, &["get", "nodes"]);
        out.status.success()
            && String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.split_whitespace().nth(1) == Some("Ready"))
                .count()
                == 2
    });
    let apply = |name: &str, yaml: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, yaml).expect("writing the manifest");
        let out = dev_berth(
            &config,
            &["apply", "-f", path.to_str().expect("UTF-8 path")],
        );
        assert!(out.status.success(), "{out:?}");
    };
    apply("web-1.yaml", &host_port_pod("web-1", ""));
    wait_until("web-1 is bound", || {
        dev_pod_node(&config, "web-1").is_some()
    });
    let first = dev_pod_node(&config, "web-1").expect("web-1's node");
    let prefer_first = format!(
        "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      \
         - weight: 100\n        preference:\n          matchExpressions:\n          \
         - {{key: kubernetes.io/hostname, operator: In, values: [{first}]}}\n"
    );
    apply("web-2.yaml", &host_port_pod("web-2", &prefer_first));
    wait_until("web-2 is bound", || {
        dev_pod_node(&config, "web-2").is_some()
    });
    let second = dev_pod_node(&config, "web-2").expect("web-2's node");
    assert_ne!(
        second, first,
        "web-2 is kept off the node that holds port 8080"
    );
    apply("web-3.yaml", &host_port_pod("web-3", ""));
    wait_until("web-3 says why it waits", || {
        String::from_utf8_lossy(&dev_berth(&config, &["describe", "pod", "web-3"]).stdout).contains(
            "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. \
             preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
        )
    });
    assert_eq!(dev_pod_node(&config, "web-3"), None);
    let status = dev.0.terminate();
    assert!(status.success(), "berth dev stops cleanly: {status}");
}

/// A session's resync (a StartPod per bound pod, a StopPod per orphan the agent reports)
/// is more messages than the session's channel holds when a node reports over 1,024
/// orphans: the session still opens and delivers every one. Before, the server filled the
/// channel before handing the stream back, and the session never opened.
#[test]
fn a_session_with_more_resync_messages_than_its_channel_holds_opens() {
    use berth_proto::pb;
    use tonic::codegen::tokio_stream::StreamExt;

    const ORPHANS: usize = 1_500;
    let cluster = TestCluster::start();
    let rt = common::runtime();
    let channel = common::channel(&rt, &cluster);
    let mut agents = pb::agent_client::AgentClient::new(channel);
    let node = pb::Object {
        kind: pb::Kind::Node as i32,
        json: r#"{"metadata":{"name":"many"},"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"}}}"#.into(),
    };
    rt.block_on(agents.register(pb::RegisterRequest {
        node: Some(node),
        ..Default::default()
    }))
    .expect("registering the node");

    let (tx, rx) = tokio::sync::mpsc::channel::<pb::AgentMessage>(4);
    let hello = pb::AgentMessage {
        msg: Some(pb::agent_message::Msg::Hello(pb::Hello {
            node_name: "many".into(),
            running_pod_uids: (0..ORPHANS).map(|i| format!("orphan-{i}")).collect(),
        })),
    };
    rt.block_on(tx.send(hello)).expect("queueing Hello");
    let outbound = tonic::codegen::tokio_stream::wrappers::ReceiverStream::new(rx);
    let stops = rt.block_on(async {
        // A guard against the hang this test is about, not a measure of speed.
        tokio::time::timeout(std::time::Duration::from_secs(120), async {
            let mut inbound = agents
                .session(outbound)
                .await
                .expect("the session opens")
                .into_inner();
            let mut stops = Vec::new();
            while stops.len() < ORPHANS {
                let msg = inbound
                    .next()
                    .await
                    .expect("the stream stays open")
                    .expect("a message");
                if let Some(pb::scheduler_message::Msg::StopPod(stop)) = msg.msg {
                    stops.push(stop);
                }
            }
            stops
        })
        .await
        .expect("every resync message within two minutes")
    });
    assert!(
        stops.iter().all(|s| s.reason == "Orphaned"),
        "{:?}",
        &stops[..3]
    );
    let uids: std::collections::HashSet<&str> = stops.iter().map(|s| s.uid.as_str()).collect();
    assert_eq!(uids.len(), ORPHANS, "one StopPod per orphan");
    drop(tx);
}
