//! End-to-end tests of workloads on a live cluster (issue 4): a Deployment spreads under
//! required anti-affinity, recovers a deleted pod, scales (leaving pods Pending with kube's
//! message) and takes its pods with it when deleted; a high-priority pod preempts the
//! minimal set of lower-priority pods; the Eviction API and `berth drain` honour a
//! PodDisruptionBudget; a DaemonSet follows the nodes; a PriorityClass in use cannot be
//! deleted; a pod over its priority scope's quota is refused.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};

use berth_proto::model::{Pod, PodPhase};
use common::{list_pods, runtime, wait_until, TestCluster};

/// A Deployment of `replicas` pods of 100m cpu with required anti-affinity on the hostname.
fn web_deployment(replicas: u32) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {{matchLabels: {{app: web}}}}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: main
        image: nginx
        resources:
          requests: {{cpu: 100m}}
"#
    )
}

/// The cluster's pods through the API.
struct Pods {
    rt: tokio::runtime::Runtime,
    channel: tonic::transport::Channel,
}

impl Pods {
    fn new(cluster: &TestCluster) -> Self {
        let rt = runtime();
        let channel = common::channel(&rt, cluster);
        Pods { rt, channel }
    }

    fn all(&self) -> Vec<Pod> {
        list_pods(&self.rt, &self.channel, None).unwrap_or_default()
    }

    fn with_prefix(&self, prefix: &str) -> Vec<Pod> {
        self.all()
            .into_iter()
            .filter(|p| p.metadata.name.starts_with(prefix))
            .collect()
    }

    fn named(&self, name: &str) -> Option<Pod> {
        self.all().into_iter().find(|p| p.metadata.name == name)
    }
}

fn running(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter()
        .filter(|p| p.status.phase == PodPhase::Running)
        .collect()
}

fn active(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter()
        .filter(|p| !p.status.phase.is_terminal())
        .collect()
}

fn pending_message(pod: &Pod) -> String {
    pod.status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn cluster_with_nodes(nodes: &[&str]) -> TestCluster {
    let mut cluster = TestCluster::start();
    for node in nodes {
        cluster.start_agent(node, "2", "4Gi");
    }
    cluster.wait_ready_nodes(nodes.len());
    cluster
}

/// Three running `web` pods, one on each node, with kube's names and owners.
fn assert_spread(pods: &[&Pod], nodes: usize) {
    let on: BTreeSet<&str> = pods.iter().map(|p| p.spec.node_name.as_str()).collect();
    assert_eq!(on.len(), nodes, "one pod per node: {on:?}");
    for pod in pods {
        let parts: Vec<&str> = pod.metadata.name.split('-').collect();
        assert_eq!(parts.len(), 3, "web-<hash>-<suffix>: {}", pod.metadata.name);
        assert_eq!(
            parts[2].len(),
            5,
            "five-character suffix: {}",
            pod.metadata.name
        );
        let owner = &pod.metadata.owner_references[0];
        assert_eq!(owner.kind, "ReplicaSet");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.name, format!("web-{}", parts[1]));
        assert_eq!(
            pod.metadata
                .labels
                .get("pod-template-hash")
                .map(String::as_str),
            Some(parts[1])
        );
    }
}

#[test]
fn a_deployment_spreads_recovers_scales_and_is_collected() {
    let mut cluster = cluster_with_nodes(&["n1", "n2", "n3"]);
    let pods = Pods::new(&cluster);
    let manifest = cluster.manifest("web.yaml", &web_deployment(3));
    cluster.berth_ok(&["apply", "-f", &common::display(&manifest)]);

    wait_until("three web pods run", || {
        running(&pods.with_prefix("web-")).len() == 3
    });
    let all = pods.with_prefix("web-");
    assert_spread(&running(&all), 3);
    wait_until("the deployment reports 3/3", || {
        let out = cluster.berth_ok(&["get", "deployments"]);
        out.lines()
            .any(|l| l.starts_with("web ") && l.contains("3/3"))
    });

    // A deleted pod is replaced, again one per node.
    let victim = all[0].metadata.name.clone();
    cluster.berth_ok(&["delete", "pod", &victim]);
    wait_until("the deleted pod is replaced", || {
        let now = pods.with_prefix("web-");
        let run = running(&now);
        run.len() == 3 && run.iter().all(|p| p.metadata.name != victim)
    });
    assert_spread(&running(&pods.with_prefix("web-")), 3);

    // The controllers resume from the store after a restart.
    cluster.scheduler.as_mut().expect("scheduler").stop();
    cluster.start_scheduler();

    let out = cluster.berth_ok(&["scale", "deployment", "web", "--replicas", "5"]);
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    wait_until("two replicas wait, kept out by anti-affinity", || {
        let now = pods.with_prefix("web-");
        let pending: Vec<&Pod> = now
            .iter()
            .filter(|p| p.status.phase == PodPhase::Pending && p.spec.node_name.is_empty())
            .collect();
        running(&now).len() == 3
            && pending.len() == 2
            && pending.iter().all(|p| {
                pending_message(p).starts_with(
                    "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.",
                )
            })
    });

    // Deleting the deployment deletes its replica set and pods.
    cluster.berth_ok(&["delete", "deployment", "web"]);
    wait_until("the pods and replica sets are gone", || {
        let rs = cluster.berth_ok(&["get", "replicasets", "-o", "name"]);
        pods.with_prefix("web-").is_empty() && rs.trim().is_empty()
    });
}

const CLASSES: &str = r#"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: lowest}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 200
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"#;

fn pinned_pod(name: &str, node: &str, class: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  nodeName: {node}\n  priorityClassName: {class}\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    resources:\n      requests: {{cpu: \"{cpu}\"}}\n---\n"
    )
}

#[test]
fn a_high_priority_pod_preempts_the_minimal_set_and_runs() {
    let cluster = cluster_with_nodes(&["n1", "n2"]);
    let pods = Pods::new(&cluster);
    let mut manifest = CLASSES.to_string();
    manifest.push_str("\n---\n");
    manifest.push_str(&pinned_pod("a", "n1", "lowest", "1"));
    manifest.push_str(&pinned_pod("b", "n1", "lowest", "1"));
    manifest.push_str(&pinned_pod("c", "n2", "low", "1"));
    manifest.push_str(&pinned_pod("d", "n2", "low", "1"));
    let path = cluster.manifest("full.yaml", &manifest);
    cluster.berth_ok(&["apply", "-f", &common::display(&path)]);
    wait_until("the cluster is full", || running(&pods.all()).len() == 4);

    let high = "apiVersion: v1\nkind: Pod\nmetadata: {name: urgent}\nspec:\n  priorityClassName: high\n  containers:\n  - name: main\n    image: busybox\n    resources:\n      requests: {cpu: \"1\"}\n";
    let path = cluster.manifest("urgent.yaml", high);
    cluster.berth_ok(&["apply", "-f", &common::display(&path)]);
    wait_until("the urgent pod runs", || {
        pods.named("urgent")
            .is_some_and(|p| p.status.phase == PodPhase::Running)
    });
    let urgent = pods.named("urgent").expect("urgent pod");
    assert_eq!(
        urgent.spec.node_name, "n1",
        "the node whose victims matter least"
    );
    let all = pods.all();
    let preempted: Vec<&str> = all
        .iter()
        .filter(|p| p.status.reason == "Preempted")
        .map(|p| p.metadata.name.as_str())
        .collect();
    assert_eq!(preempted.len(), 1, "exactly one victim: {preempted:?}");
    assert!(
        ["a", "b"].contains(&preempted[0]),
        "a lowest-priority pod: {preempted:?}"
    );
    for name in ["c", "d"] {
        let pod = pods.named(name).expect("pod on n2");
        assert_eq!(pod.status.phase, PodPhase::Running, "{name} is spared");
    }
}

const BUDGET: &str = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
"#;

#[test]
fn eviction_and_drain_honour_a_disruption_budget() {
    let mut cluster = cluster_with_nodes(&["n1", "n2"]);
    let pods = Pods::new(&cluster);
    let mut manifest = web_deployment(3);
    manifest.push_str("---\n");
    manifest.push_str(BUDGET);
    let path = cluster.manifest("web.yaml", &manifest);
    cluster.berth_ok(&["apply", "-f", &common::display(&path)]);
    wait_until("two replicas run and the budget allows nothing", || {
        let out = cluster.berth_ok(&["get", "pdb", "web", "-o", "json"]);
        let pdb: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        running(&pods.with_prefix("web-")).len() == 2
            && pdb
                .pointer("/status/currentHealthy")
                .and_then(|v| v.as_i64())
                == Some(2)
            && pdb
                .pointer("/status/disruptionsAllowed")
                .and_then(|v| v.as_i64())
                == Some(0)
    });
    let on_n1 = pods
        .with_prefix("web-")
        .into_iter()
        .find(|p| p.spec.node_name == "n1" && p.status.phase == PodPhase::Running)
        .expect("a web pod on n1");
    let name = on_n1.metadata.name.clone();
    let budget_message = "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 2 healthy pods and has 2 currently";

    // The Eviction API refuses.
    let out = cluster.berth(&["evict", "pod", &name]);
    assert!(!out.status.success(), "the eviction must be refused");
    assert_eq!(stderr(&out).trim(), format!("error: {budget_message}"));

    // Drain retries, then times out with the budget's message.
    let out = cluster.berth(&["drain", "n1", "--timeout", "3s"]);
    assert!(!out.status.success(), "the drain must time out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let err = stderr(&out);
    assert!(stdout.contains("node/n1 cordoned"), "{stdout}");
    assert!(
        stdout.contains(&format!("evicting pod default/{name}")),
        "{stdout}"
    );
    assert!(
        err.contains(&format!(
            "error when evicting pods/{name:?} -n \"default\" (will retry after 5s): {budget_message}"
        )),
        "{err}"
    );
    assert!(err.contains("global timeout reached: 3s"), "{err}");
    assert!(pods.named(&name).is_some(), "the pod stays");

    // With a third node the pending replica starts, the budget has room, and drain ends.
    let mut drain =
        cluster.berth_spawn(&["drain", "n1", "--timeout", "60s", "--grace-period", "1"]);
    // Wait until the drain has been refused once, then add the node.
    let mut refusals = BufReader::new(drain.stderr.take().expect("piped stderr"));
    let mut line = String::new();
    while !line.contains("will retry after 5s") {
        line.clear();
        let read = refusals
            .read_line(&mut line)
            .expect("reading drain's stderr");
        assert!(read > 0, "drain ended before being refused");
    }
    assert!(line.contains(budget_message), "{line}");
    cluster.start_agent("n3", "2", "4Gi");
    let out = drain.wait_with_output().expect("drain finishes");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "drain: {stdout}\n{}", cluster.logs());
    assert!(stdout.contains("node/n1 already cordoned"), "{stdout}");
    assert!(stdout.contains(&format!("pod/{name} evicted")), "{stdout}");
    assert!(stdout.trim_end().ends_with("node/n1 drained"), "{stdout}");
    assert!(pods.named(&name).is_none(), "the evicted pod is gone");
    wait_until(
        "its replacement waits: n1 is cordoned, n2 and n3 are taken",
        || {
            let now = pods.with_prefix("web-");
            running(&now).len() == 2 && active(&now).len() == 3
        },
    );

    // A pod without a controller blocks the drain of its node unless --force.
    let bare = "apiVersion: v1\nkind: Pod\nmetadata: {name: bare}\nspec:\n  nodeName: n2\n  terminationGracePeriodSeconds: 1\n  containers: [{name: main, image: busybox}]\n";
    let path = cluster.manifest("bare.yaml", bare);
    cluster.berth_ok(&["apply", "-f", &common::display(&path)]);
    let out = cluster.berth(&["drain", "n2"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "cannot delete Pods that declare no controller (use --force to override): default/bare"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_daemon_set_follows_the_nodes_and_drain_leaves_its_pods() {
    let mut cluster = TestCluster::start();
    cluster.start_agent_with("w1", "2", "4Gi", &["--labels", "role=worker"], &[]);
    cluster.start_agent("other", "2", "4Gi");
    let pods = Pods::new(&cluster);
    let ds = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {role: worker}
      containers: [{name: main, image: busybox}]
"#;
    let path = cluster.manifest("ds.yaml", ds);
    cluster.berth_ok(&["apply", "-f", &common::display(&path)]);
    let nodes_running = |pods: &Pods| -> BTreeSet<String> {
        running(&pods.with_prefix("agent-"))
            .iter()
            .map(|p| p.spec.node_name.clone())
            .collect()
    };
    wait_until("the worker runs the daemon pod", || {
        nodes_running(&pods) == BTreeSet::from(["w1".to_string()])
    });
    cluster.start_agent_with("w2", "2", "4Gi", &["--labels", "role=worker"], &[]);
    wait_until("the new worker gets its pod", || {
        nodes_running(&pods) == BTreeSet::from(["w1".to_string(), "w2".to_string()])
    });

    let out = cluster.berth(&["drain", "w1"]);
    assert!(!out.status.success(), "DaemonSet pods block the drain");
    let err = stderr(&out);
    assert!(
        err.contains("error: unable to drain node \"w1\" due to error: cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/agent-"),
        "{err}"
    );
    let out = cluster.berth(&["drain", "w1", "--ignore-daemonsets"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Warning: ignoring DaemonSet-managed Pods: default/agent-"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("node/w1 drained"));
    assert!(nodes_running(&pods).contains("w1"), "the daemon pod stays");

    cluster.berth_ok(&["delete", "daemonset", "agent"]);
    wait_until("the daemon pods are gone", || {
        pods.with_prefix("agent-").is_empty()
    });
}

#[test]
fn priority_classes_in_use_and_priority_quotas_are_enforced() {
    let cluster = TestCluster::start();
    let manifest = r#"
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000000
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: high-priority}
spec:
  hard: {pods: "1"}
  scopeSelector:
    matchExpressions:
    - {scopeName: PriorityClass, operator: In, values: [high]}
"#;
    let path = cluster.manifest("quota.yaml", manifest);
    cluster.berth_ok(&["apply", "-f", &common::display(&path)]);
    let pod = |name: &str, class: &str| {
        let class = if class.is_empty() {
            String::new()
        } else {
            format!("  priorityClassName: {class}\n")
        };
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n{class}  containers: [{{name: main, image: busybox}}]\n")
    };
    let first = cluster.manifest("h1.yaml", &pod("h1", "high"));
    cluster.berth_ok(&["apply", "-f", &common::display(&first)]);
    let second = cluster.manifest("h2.yaml", &pod("h2", "high"));
    let out = cluster.berth(&["apply", "-f", &common::display(&second)]);
    assert!(!out.status.success(), "the second high pod is over quota");
    assert!(
        stderr(&out).contains("pods \"h2\" is forbidden: exceeded quota: high-priority, requested: pods=1, used: pods=1, limited: pods=1"),
        "{}",
        stderr(&out)
    );
    let plain = cluster.manifest("p1.yaml", &pod("p1", ""));
    cluster.berth_ok(&["apply", "-f", &common::display(&plain)]);

    let out = cluster.berth(&["delete", "priorityclass", "high"]);
    assert!(!out.status.success(), "a class in use is kept");
    assert!(
        stderr(&out).contains("PriorityClass high is in use by 1 pod(s): default/h1"),
        "{}",
        stderr(&out)
    );
    cluster.berth_ok(&["delete", "pod", "h1"]);
    cluster.berth_ok(&["delete", "priorityclass", "high"]);
}
