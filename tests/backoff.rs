//! The queue settings of `--config` reach the live scheduler (issue 10): with
//! podInitialBackoffSeconds = podMaxBackoffSeconds = 1 a pod that cannot be scheduled is
//! retried every second, while kube's defaults (1 s doubling to 10 s) retry it at 0, 1, 3,
//! 7, 15, 25 s. Two clusters run side by side on loopback, so load slows both alike; the
//! test compares their attempt counts (FailedScheduling events), never wall-clock bounds.

mod common;

use std::time::Duration;

use common::{pod_yaml, wait_for, TestCluster};

/// Attempts the one-second cluster makes before the comparison: reached after about 7 s.
const FAST_ATTEMPTS: i64 = 8;

/// The most attempts kube's defaults make before 25 s.
const DEFAULT_ATTEMPTS_BEFORE_25S: i64 = 5;

/// The FailedScheduling events recorded for pod `name` (an Event's count grows with each
/// repeat of the same message).
fn failed_attempts(cluster: &TestCluster, name: &str) -> i64 {
    let out = cluster.berth(&["get", "events", "-o", "json"]);
    if !out.status.success() {
        return 0;
    }
    let value: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(value) => value,
        Err(_) => return 0,
    };
    let events = value
        .get("items")
        .and_then(|i| i.as_array())
        .or_else(|| value.as_array())
        .cloned()
        .unwrap_or_else(|| vec![value.clone()]);
    events
        .iter()
        .filter(|e| e["reason"] == "FailedScheduling" && e["involvedObject"]["name"] == name)
        .map(|e| e["count"].as_i64().unwrap_or(1).max(1))
        .sum()
}

#[test]
fn pod_max_backoff_seconds_from_config_sets_the_retry_pace() {
    // No node joins either cluster: every attempt fails with "no nodes available", an
    // error that kube retries after back-off only (never early from an idle queue).
    let config_dir = tempfile::tempdir().expect("temporary folder");
    let config = config_dir.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 1\n",
    )
    .expect("write config");
    let config = config.to_str().expect("utf-8 path");
    let fast = TestCluster::start_with_flags(&["--config", config]);
    let slow = TestCluster::start();
    let pod = pod_yaml("waiting", "100m", "", "");
    for cluster in [&fast, &slow] {
        let manifest = cluster.manifest("pod.yaml", &pod);
        cluster.berth_ok(&["apply", "-f", manifest.to_str().expect("utf-8 path")]);
    }
    wait_for(
        "the one-second cluster retries the pod eight times",
        Duration::from_secs(120),
        || failed_attempts(&fast, "waiting") >= FAST_ATTEMPTS,
    );
    let with_defaults = failed_attempts(&slow, "waiting");
    assert!(
        (1..=DEFAULT_ATTEMPTS_BEFORE_25S).contains(&with_defaults),
        "with kube's default back-off the pod was tried {with_defaults} times while the \
         one-second back-off tried it {FAST_ATTEMPTS} times"
    );
}
