//! `berth sim` end to end through the CLI's entry point: a folder of manifests in, the JSON
//! contract out, notes on stderr, and errors as exit code 1.

use std::process::ExitCode;

use berth_cli::cmd::Io;
use berth_cli::Cli;
use clap::Parser;
use serde_json::json;

/// Runs `berth ARGS...`; returns (exit code, stdout, stderr).
async fn berth(args: &[&str]) -> (ExitCode, String, String) {
    let cli = Cli::try_parse_from(std::iter::once("berth").chain(args.iter().copied()))
        .expect("the command line parses");
    let (mut io, out, err) = Io::captured();
    let code = berth_cli::execute(cli, &mut io).await;
    (code, out.text(), err.text())
}

const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-2
  labels: {kubernetes.io/hostname: node-2}
status:
  capacity: {cpu: "2", memory: 8Gi, pods: "110"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 1
"#;

const WORKLOAD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: low-1}
spec:
  nodeName: node-2
  priorityClassName: low
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-1}
spec:
  priorityClassName: high
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec:
  containers: [{name: c, resources: {requests: {cpu: "8"}}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"#;

fn manifest_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary folder");
    std::fs::write(dir.path().join("cluster.yaml"), CLUSTER).expect("write cluster.yaml");
    std::fs::write(dir.path().join("workload.yaml"), WORKLOAD).expect("write workload.yaml");
    dir
}

#[tokio::test]
async fn sim_prints_the_json_contract() {
    let dir = manifest_folder();
    let folder = dir.path().to_str().expect("utf-8 path");
    let (code, out, err) = berth(&["sim", "-f", folder, "--seed", "7", "--explain"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "stderr: {err}");
    let mut value: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON");
    // Each pod's attempt history is checked by `explain_lists_each_attempt_of_a_preemptor`.
    for pod in value["pods"].as_array_mut().expect("pods") {
        let attempts = pod.as_object_mut().expect("pod").remove("attempts");
        assert!(
            attempts.is_some_and(|a| a.is_array()),
            "attempts with --explain"
        );
    }
    assert_eq!(
        value,
        json!({
            "pods": [
                {
                    "namespace": "default",
                    "name": "web-1",
                    "node": "node-2",
                    "preempted": ["default/low-1"],
                    "message": null,
                    "nodes": {
                        "node-1": {"feasible": false, "reasons": ["node(s) had untolerated taint {dedicated: gpu}"]},
                        "node-2": {"feasible": true, "score": value["pods"][0]["nodes"]["node-2"]["score"].clone()}
                    }
                },
                {
                    "namespace": "default",
                    "name": "huge",
                    "node": null,
                    "preempted": [],
                    "message": "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
                    "nodes": {
                        "node-1": {"feasible": false, "reasons": ["node(s) had untolerated taint {dedicated: gpu}"]},
                        "node-2": {"feasible": false, "reasons": ["Insufficient cpu"]}
                    }
                }
            ],
            "evicted": ["default/low-1"]
        })
    );
    assert!(value["pods"][0]["nodes"]["node-2"]["score"].is_i64());
    assert!(
        err.contains("note: skipping Service web (does not affect placement)"),
        "stderr: {err}"
    );
    assert!(
        !err.contains("using seed"),
        "a given seed is not announced: {err}"
    );

    // The same run again gives the same bytes; a table is available for people.
    let (_, again, _) = berth(&["sim", "-f", folder, "--seed", "7", "--explain"]).await;
    assert_eq!(again, out);
    let (code, table, _) = berth(&["sim", "-f", folder, "--seed", "7", "-o", "table"]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(table.starts_with("POD "), "{table}");
    assert!(
        table.contains("default/web-1") && table.contains("node-2"),
        "{table}"
    );
}

#[tokio::test]
async fn sim_announces_a_random_seed() {
    let dir = manifest_folder();
    let folder = dir.path().to_str().expect("utf-8 path");
    let (code, _, err) = berth(&["sim", "-f", folder]).await;
    assert_eq!(code, ExitCode::SUCCESS, "stderr: {err}");
    assert!(err.contains("note: using seed "), "stderr: {err}");
}

#[tokio::test]
async fn bad_input_fails_with_one_line_per_problem() {
    let dir = tempfile::tempdir().expect("temporary folder");
    std::fs::write(
        dir.path().join("typo.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containerz: []}\n",
    )
    .expect("write typo.yaml");
    let folder = dir.path().to_str().expect("utf-8 path");
    let (code, out, err) = berth(&["sim", "-f", folder, "--seed", "1"]).await;
    assert_eq!(code, ExitCode::FAILURE);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("containerz"),
        "{err}"
    );

    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "apiVersion: v1\nkind: Nope\n").expect("write config");
    std::fs::remove_file(dir.path().join("typo.yaml")).expect("remove typo.yaml");
    let (code, _, err) = berth(&[
        "sim",
        "-f",
        folder,
        "--config",
        config.to_str().expect("utf-8 path"),
    ])
    .await;
    assert_eq!(code, ExitCode::FAILURE);
    assert!(
        err.starts_with("error: ") && err.contains("apiVersion"),
        "{err}"
    );
}

#[test]
fn table_lists_pods_and_verdicts() {
    use berth_cli::sim::render_table;
    use berth_scheduler::sim::{NodeOutcome, PodOutcome, SimOutput};
    use std::collections::BTreeMap;

    let output = SimOutput {
        pods: vec![
            PodOutcome {
                namespace: "default".into(),
                name: "web-1".into(),
                node: Some("node-2".into()),
                preempted: vec!["default/low-1".into()],
                message: None,
                nodes: Some(BTreeMap::from([
                    (
                        "node-1".to_string(),
                        NodeOutcome::rejected(vec!["Insufficient cpu".into()]),
                    ),
                    ("node-2".to_string(), NodeOutcome::feasible(187)),
                ])),
                attempts: None,
                claims: Vec::new(),
            },
            PodOutcome {
                namespace: "default".into(),
                name: "big".into(),
                node: None,
                preempted: vec![],
                message: Some("0/2 nodes are available: 2 Insufficient cpu.".into()),
                nodes: Some(BTreeMap::new()),
                attempts: None,
                claims: Vec::new(),
            },
        ],
        evicted: vec!["default/low-1".into()],
        notes: vec![],
    };
    let text = render_table(&output);
    let want = "\
POD             NODE     PREEMPTED       MESSAGE
default/web-1   node-2   default/low-1   
default/big     <none>   <none>          0/2 nodes are available: 2 Insufficient cpu.

Evicted: default/low-1

default/web-1:
  node-1   rejected: Insufficient cpu
  node-2   score 187

default/big:
  (no node verdicts)
";
    assert_eq!(text, want);
}

/// `berth sim --explain` of the README's walkthrough (docs/sim-example.yaml), as JSON.
async fn readme_example() -> serde_json::Value {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/sim-example.yaml");
    let (code, out, err) = berth(&["sim", "-f", example, "--seed", "1", "--explain"]).await;
    assert_eq!(code, ExitCode::SUCCESS, "stderr: {err}");
    serde_json::from_str(&out).expect("JSON output")
}

/// The README's walkthrough (docs/sim-example.yaml) gives the outcome the README shows.
#[tokio::test]
async fn the_readme_walkthrough_holds() {
    let got = readme_example().await;
    let placed: Vec<(&str, &str)> = got["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["node"].as_str().unwrap_or(""),
            )
        })
        .collect();
    // api preempts batch on node-1 and holds that room by its nomination; web still fits
    // beside it, and scores the emptied node-1 best (nominated pods are not scored).
    assert_eq!(placed, [("web", "node-1"), ("api", "node-1")]);
    assert_eq!(got["pods"][1]["preempted"], json!(["default/batch"]));
    assert_eq!(got["evicted"], json!(["default/batch"]));
    assert_eq!(
        got["pods"][1]["nodes"]["node-3"],
        json!({"feasible": false, "reasons": ["Insufficient cpu"]})
    );
}

/// With --explain, a pod that preempts lists two attempts: the first with every node
/// infeasible (and its victims and nomination), the last with the node it went to.
#[tokio::test]
async fn explain_lists_each_attempt_of_a_preemptor() {
    let got = readme_example().await;
    let api = &got["pods"][1];
    assert_eq!(api["name"], "api");
    let attempts = api["attempts"].as_array().expect("attempts with --explain");
    assert_eq!(attempts.len(), 2, "{api}");
    let first = &attempts[0];
    let first_nodes = first["nodes"].as_object().expect("nodes");
    assert_eq!(first_nodes.len(), 3, "{first}");
    assert!(
        first_nodes.values().all(|n| n["feasible"] == json!(false)),
        "every node infeasible first: {first}"
    );
    assert_eq!(first["preempted"], json!(["default/batch"]));
    assert_eq!(first["nominated"], json!("node-1"));
    let last = &attempts[1];
    assert_eq!(last["nodes"]["node-1"]["feasible"], json!(true), "{last}");
    assert_eq!(last["preempted"], json!([]));
    assert_eq!(last["nominated"], serde_json::Value::Null);
    assert_eq!(api["nodes"], last["nodes"], "nodes is the last attempt's");
    // A pod that fit at once has one attempt.
    assert_eq!(got["pods"][0]["attempts"].as_array().map(Vec::len), Some(1));
}
