//! End-to-end tests of `batch/v1` Jobs over real processes (issue 11, item 7): a Job of 10
//! completions with parallelism 2 completes without ever running more than 2 pods; a
//! failing Job stops at its backoffLimit; activeDeadlineSeconds ends a long Job; a finished
//! Job with ttlSecondsAfterFinished is deleted with its pods. The pods are real `sh`
//! processes whose exit codes decide Succeeded or Failed. On simulated nodes (pods that end
//! by their `sim.berth.dev/run-duration` annotation): an Indexed Job, container restarts
//! under OnFailure counting against backoffLimit, and suspend/resume.

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
    assert_eq!(
        failed_pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        3
    );

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
fn jobs_on_simulated_nodes_indexed_restarting_and_suspended() {
    let mut cluster = TestCluster::start();
    cluster.spawn_agent("s1", &["--runtime", "sim"], &[]);
    wait_until("node s1 registers", || {
        cluster.berth(&["get", "node", "s1"]).status.success()
    });
    let yaml = job_yaml("quick", "  completions: 4\n  parallelism: 2\n", "true").replace(
        "  template:\n",
        "  template:\n    metadata:\n      annotations: {sim.berth.dev/run-duration: 100ms}\n",
    );
    let sim = |yaml: String, exit_code: &str| {
        yaml.replace(
            "  template:\n",
            &format!("  template:\n    metadata:\n      annotations: {{sim.berth.dev/run-duration: 100ms, sim.berth.dev/exit-code: '{exit_code}'}}\n"),
        )
    };
    let indexed = sim(
        job_yaml(
            "indexed",
            "  completions: 3\n  parallelism: 3\n  completionMode: Indexed\n",
            "true",
        ),
        "0",
    );
    let flaky = sim(job_yaml("flaky", "  backoffLimit: 2\n", "false"), "1")
        .replace("restartPolicy: Never", "restartPolicy: OnFailure");
    let held = job_yaml("held", "  suspend: true\n", "true");
    let manifest = [yaml, indexed, flaky, held.clone()].join("---\n");
    let path = cluster.manifest("quick.yaml", &manifest);
    cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    wait_for("quick completes", LIMIT, || {
        finished(&job(&cluster, "quick"), "Complete")
    });
    assert_eq!(job(&cluster, "quick")["status"]["succeeded"], 4);

    // Indexed: one success per index, pods named and labelled with it.
    wait_for("indexed completes", LIMIT, || {
        finished(&job(&cluster, "indexed"), "Complete")
    });
    let indexed = job(&cluster, "indexed");
    assert_eq!(indexed["status"]["completedIndexes"], "0-2", "{indexed}");
    assert_eq!(indexed["status"]["succeeded"], 3, "{indexed}");
    let mut seen: Vec<String> = pods_of(&cluster, "indexed")
        .iter()
        .map(|p| {
            let index = str_at(
                p,
                "/metadata/annotations/batch.kubernetes.io~1job-completion-index",
            );
            assert_eq!(
                str_at(p, "/metadata/generateName"),
                format!("indexed-{index}-")
            );
            assert_eq!(p["spec"]["containers"][0]["env"][0]["value"], index, "{p}");
            index.to_string()
        })
        .collect();
    seen.sort();
    assert_eq!(seen, ["0", "1", "2"]);

    // OnFailure: the container restarts count against backoffLimit.
    wait_for("flaky fails", LIMIT, || {
        finished(&job(&cluster, "flaky"), "Failed")
    });
    let flaky = job(&cluster, "flaky");
    let c = condition(&flaky, "Failed").expect("Failed");
    assert_eq!(c["reason"], "BackoffLimitExceeded", "{flaky}");

    // Suspended: no pod until it is resumed.
    wait_until("held is marked suspended", || {
        finished(&job(&cluster, "held"), "Suspended")
    });
    assert!(pods_of(&cluster, "held").is_empty());
    let table = cluster.berth_ok(&["get", "jobs"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("held ") && l.contains(" Suspended ")),
        "{table}"
    );
    let resumed = sim(held.replace("suspend: true", "suspend: false"), "0");
    let path = cluster.manifest("held.yaml", &resumed);
    let out = cluster.berth(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    // The template is immutable: adding the annotations is refused, resuming alone is not.
    assert!(!out.status.success(), "a changed template is refused");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("spec.template: field is immutable"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = cluster.manifest(
        "held.yaml",
        &held.replace("suspend: true", "suspend: false"),
    );
    cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    wait_until("held runs once resumed", || {
        let held = job(&cluster, "held");
        condition(&held, "Suspended")
            .is_some_and(|c| c["status"] == "False" && c["reason"] == "JobResumed")
            && !pods_of(&cluster, "held").is_empty()
    });
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
