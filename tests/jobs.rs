//! End-to-end tests of `batch/v1` Jobs over real processes (issue 11, item 7): a Job of 10
//! completions with parallelism 2 completes without ever running more than 2 pods; a
//! failing Job stops at its backoffLimit; activeDeadlineSeconds ends a long Job; a finished
//! Job with ttlSecondsAfterFinished is deleted with its pods. The pods are real `sh`
//! processes whose exit codes decide Succeeded or Failed.

mod common;

use std::time::Duration;

use common::{str_at, wait_for, wait_until, TestCluster};
use serde_json::Value;

/// Upper bound of the runs below (the failing Job waits out kube's 10s pod-failure back-off
/// once); a failure guard, not an expectation.
const LIMIT: Duration = Duration::from_secs(120);

fn job_yaml(name: &str, spec: &str, script: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n{spec}  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: sh\n        command: [sh, -c, {script:?}]\n"
    )
}

fn json(cluster: &TestCluster, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&cluster.berth_ok(&all)).expect("JSON output")
}

fn job(cluster: &TestCluster, name: &str) -> Value {
    json(cluster, &["get", "job", name])
}

/// The job's pods, as JSON objects.
fn pods_of(cluster: &TestCluster, name: &str) -> Vec<Value> {
    let list = json(
        cluster,
        &[
            "get",
            "pods",
            "-l",
            &format!("batch.kubernetes.io/job-name={name}"),
        ],
    );
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The condition of a type, if the job has it.
fn condition(job: &Value, type_: &str) -> Option<Value> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

fn finished(job: &Value, type_: &str) -> bool {
    condition(job, type_).is_some_and(|c| c["status"] == "True")
}

#[test]
fn jobs_complete_fail_time_out_and_expire_on_real_processes() {
    let mut cluster = TestCluster::start();
    let root = cluster.dir.path().join("n1-root");
    cluster.spawn_agent(
        "n1",
        &[
            "--runtime",
            "process",
            "--root-dir",
            root.to_str().expect("UTF-8 path"),
            "--cpu",
            "4",
            "--memory",
            "2Gi",
            // Only memory: a full disk on the test machine must not taint the node.
            "--eviction-hard",
            "memory.available<1Mi",
        ],
        &[],
    );
    wait_until("node n1 registers", || {
        cluster.berth(&["get", "node", "n1"]).status.success()
    });
    let manifest = [
        job_yaml(
            "batch",
            "  completions: 10\n  parallelism: 2\n",
            "sleep 0.2",
        ),
        job_yaml("broken", "  backoffLimit: 1\n", "echo failing; exit 3"),
        job_yaml("slow", "  activeDeadlineSeconds: 2\n", "sleep 300"),
        job_yaml("brief", "  ttlSecondsAfterFinished: 1\n", "exit 0"),
    ]
    .join("---\n");
    let path = cluster.manifest("jobs.yaml", &manifest);
    let out = cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    assert!(out.contains("job.batch/batch created"), "{out}");

    // The generated selector and defaults, as kube's API server writes them.
    let batch = job(&cluster, "batch");
    let uid = str_at(&batch, "/metadata/uid").to_string();
    assert_eq!(
        batch["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid.as_str()
    );
    assert_eq!(batch["spec"]["backoffLimit"], 6);
    assert_eq!(batch["spec"]["completionMode"], "NonIndexed");

    // batch: 10 completions, never more than 2 pods running at once.
    let mut most_active = 0;
    wait_for("batch completes", LIMIT, || {
        let running = pods_of(&cluster, "batch")
            .iter()
            .filter(|p| !matches!(str_at(p, "/status/phase"), "Succeeded" | "Failed"))
            .count();
        most_active = most_active.max(running);
        finished(&job(&cluster, "batch"), "Complete")
    });
    assert!(
        most_active <= 2,
        "{most_active} pods of batch were active at once"
    );
    let batch = job(&cluster, "batch");
    assert_eq!(batch["status"]["succeeded"], 10, "{batch}");
    assert_eq!(batch["status"].get("failed"), None, "{batch}");
    for type_ in ["SuccessCriteriaMet", "Complete"] {
        let c = condition(&batch, type_).unwrap_or_else(|| panic!("{type_} in {batch}"));
        assert_eq!(c["reason"], "CompletionsReached", "{batch}");
    }
    assert!(batch["status"]["completionTime"].is_string(), "{batch}");
    let pods = pods_of(&cluster, "batch");
    assert_eq!(pods.len(), 10, "one pod per completion");
    for pod in &pods {
        assert_eq!(str_at(pod, "/status/phase"), "Succeeded", "{pod}");
        assert!(
            pod["metadata"].get("finalizers").is_none(),
            "counted: {pod}"
        );
        assert_eq!(str_at(pod, "/metadata/generateName"), "batch-");
        assert_eq!(str_at(pod, "/metadata/labels/job-name"), "batch");
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "Job");
        assert_eq!(owner["apiVersion"], "batch/v1");
        assert_eq!(owner["controller"], true);
        assert_eq!(owner["blockOwnerDeletion"], true);
    }
    let table = cluster.berth_ok(&["get", "jobs"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("batch "))
        .unwrap_or_else(|| panic!("batch in\n{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..3], ["batch", "Complete", "10/10"], "{table}");
    assert!(table.starts_with("NAME"), "{table}");
    for column in ["STATUS", "COMPLETIONS", "DURATION", "AGE"] {
        assert!(
            table.lines().next().unwrap_or("").contains(column),
            "{table}"
        );
    }
    let described = cluster.berth_ok(&["describe", "job", "batch"]);
    for want in [
        "Parallelism:",
        "Completions:",
        "Start Time:",
        "Completed At:",
        "Duration:",
        "0 Active (0 Ready) / 10 Succeeded / 0 Failed",
        "SuccessfulCreate",
        "Completed",
        "job-controller",
    ] {
        assert!(described.contains(want), "{want:?} in\n{described}");
    }

    // broken: one pod fails, a second after the back-off fails too: 2 > backoffLimit 1.
    wait_for("broken fails", LIMIT, || {
        finished(&job(&cluster, "broken"), "Failed")
    });
    let broken = job(&cluster, "broken");
    assert_eq!(broken["status"]["failed"], 2, "{broken}");
    for type_ in ["FailureTarget", "Failed"] {
        let c = condition(&broken, type_).unwrap_or_else(|| panic!("{type_} in {broken}"));
        assert_eq!(c["reason"], "BackoffLimitExceeded", "{broken}");
        assert_eq!(c["message"], "Job has reached the specified backoff limit");
    }
    assert!(
        broken["status"].get("completionTime").is_none(),
        "a failed job has no completion time: {broken}"
    );
    assert_eq!(pods_of(&cluster, "broken").len(), 2);
    let failed_pod = &pods_of(&cluster, "broken")[0];
    assert_eq!(str_at(failed_pod, "/status/phase"), "Failed");
    assert_eq!(failed_pod["status"]["containerStatuses"][0]["exitCode"], 3);

    // slow: its deadline passes; its running pod is deleted and counts as failed.
    wait_for("slow fails", LIMIT, || {
        finished(&job(&cluster, "slow"), "Failed")
    });
    let slow = job(&cluster, "slow");
    let c = condition(&slow, "Failed").expect("Failed");
    assert_eq!(c["reason"], "DeadlineExceeded", "{slow}");
    assert_eq!(
        c["message"],
        "Job was active longer than specified deadline"
    );
    assert_eq!(slow["status"]["failed"], 1, "{slow}");
    assert!(
        pods_of(&cluster, "slow").is_empty(),
        "the active pod was deleted"
    );
    let table = cluster.berth_ok(&["get", "jobs"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("slow ") && l.contains(" Failed ")),
        "{table}"
    );

    // brief: it completes, then its TTL deletes it and the garbage collector its pod.
    wait_for("brief is deleted after its TTL", LIMIT, || {
        !cluster.berth(&["get", "job", "brief"]).status.success()
    });
    wait_until("brief's pod is collected", || {
        pods_of(&cluster, "brief").is_empty()
    });

    // Deleting a Job deletes its pods.
    cluster.berth_ok(&["delete", "job", "batch"]);
    wait_until("batch's pods are collected", || {
        pods_of(&cluster, "batch").is_empty()
    });
}

#[test]
fn a_job_completes_on_simulated_nodes() {
    let mut cluster = TestCluster::start();
    cluster.spawn_agent("s1", &["--runtime", "sim"], &[]);
    wait_until("node s1 registers", || {
        cluster.berth(&["get", "node", "s1"]).status.success()
    });
    let yaml = job_yaml("quick", "  completions: 4\n  parallelism: 2\n", "true").replace(
        "  template:\n",
        "  template:\n    metadata:\n      annotations: {sim.berth.dev/run-duration: 100ms}\n",
    );
    let path = cluster.manifest("quick.yaml", &yaml);
    cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    wait_for("quick completes", LIMIT, || {
        finished(&job(&cluster, "quick"), "Complete")
    });
    assert_eq!(job(&cluster, "quick")["status"]["succeeded"], 4);
}

#[test]
fn a_job_whose_template_restarts_always_is_refused() {
    let cluster = TestCluster::start();
    let yaml = job_yaml("bad", "", "true").replace("restartPolicy: Never", "restartPolicy: Always");
    let path = cluster.manifest("bad.yaml", &yaml);
    let out = cluster.berth(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never""#),
        "{err}"
    );
    assert!(!cluster.berth(&["get", "job", "bad"]).status.success());
}
