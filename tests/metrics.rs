//! The Prometheus endpoint of a running `berth-scheduler --metrics-listen`: the scrape
//! follows the text format's rules (read with a parser of that format, and every line must
//! be a comment, a type, a help text or a sample), kube-scheduler's metrics carry kube's
//! names, labels and buckets, and `scheduler_schedule_attempts_total` grows as pods are
//! scheduled; with tokens on, a scrape needs a viewer or admin token.

mod common;

use common::{free_port, http_get, pod_yaml, wait_until, Security, TestCluster};
use prometheus_parse::{LineInfo, Sample, Scrape, Value};

/// Scrapes `/metrics`, checking the format, and returns the parsed samples.
fn scrape(addr: &str) -> Vec<Sample> {
    let (status, body) = http_get(addr, "/metrics", None).expect("scraping /metrics");
    assert_eq!(status, 200, "{body}");
    for line in body.lines() {
        assert!(
            !matches!(LineInfo::parse(line), LineInfo::Ignored)
                || (line.starts_with('#') && !line.starts_with("# TYPE")),
            "not a line of the Prometheus text format: {line:?}"
        );
    }
    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("parsing");
    for sample in &scrape.samples {
        if let Value::Histogram(buckets) = &sample.value {
            let counts: Vec<f64> = buckets.iter().map(|b| b.count).collect();
            assert!(
                counts.windows(2).all(|w| w[0] <= w[1]),
                "{} buckets must be cumulative: {counts:?}",
                sample.metric
            );
            assert!(
                buckets.last().is_some_and(|b| b.less_than.is_infinite()),
                "{} needs a +Inf bucket",
                sample.metric
            );
        }
    }
    scrape.samples
}

/// The value of the counter or gauge `name` whose labels include `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .find_map(|s| match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
            _ => None,
        })
}

fn scheduled(samples: &[Sample]) -> f64 {
    let labels = [("result", "scheduled"), ("profile", "default-scheduler")];
    value(samples, "scheduler_schedule_attempts_total", &labels).unwrap_or(0.0)
}

fn apply_pods(cluster: &TestCluster, names: &[&str]) {
    let yaml: String = names.iter().map(|n| pod_yaml(n, "100m", "", "")).collect();
    let path = cluster.manifest("pods.yaml", &yaml);
    cluster.berth_ok(&["apply", "-f", &path.display().to_string()]);
}

fn wait_running(cluster: &TestCluster, count: usize) {
    wait_until(&format!("{count} pods are Running"), || {
        let out = cluster.berth_ok(&["get", "pods"]);
        out.lines().filter(|l| l.contains("Running")).count() == count
    });
}

#[test]
fn the_scrape_follows_the_format_and_counts_attempts() {
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut cluster = TestCluster::start_with_flags(&["--metrics-listen", &metrics]);
    cluster.start_agent("node-a", "4", "8Gi");
    cluster.wait_ready_nodes(1);

    apply_pods(&cluster, &["p1", "p2"]);
    wait_running(&cluster, 2);
    let first = scrape(&metrics);
    assert_eq!(scheduled(&first), 2.0, "two pods scheduled");

    apply_pods(&cluster, &["p3", "p4", "p5"]);
    wait_running(&cluster, 5);
    let samples = scrape(&metrics);
    assert_eq!(
        scheduled(&samples),
        5.0,
        "the counter grew with three pods more"
    );

    // kube's attempt histogram, with its labels and kube's buckets (1 ms doubling, 15).
    let attempts = samples
        .iter()
        .find(|s| {
            s.metric == "scheduler_scheduling_attempt_duration_seconds"
                && s.labels.get("result") == Some("scheduled")
                && s.labels.get("profile") == Some("default-scheduler")
        })
        .expect("scheduler_scheduling_attempt_duration_seconds{result=scheduled}");
    let Value::Histogram(buckets) = &attempts.value else {
        panic!("a histogram: {:?}", attempts.value);
    };
    let bounds: Vec<f64> = buckets.iter().map(|b| b.less_than).collect();
    assert_eq!(bounds.len(), 16, "15 bounds and +Inf: {bounds:?}");
    assert_eq!((bounds[0], bounds[14]), (0.001, 16.384), "{bounds:?}");
    assert_eq!(buckets.last().map(|b| b.count), Some(5.0));
    let sli = [("attempts", "1")];
    assert!(
        samples.iter().any(
            |s| s.metric == "scheduler_pod_scheduling_sli_duration_seconds"
                && sli.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
        ),
        "the SLI histogram by attempts"
    );
    for queue in ["active", "backoff", "unschedulable", "gated"] {
        assert_eq!(
            value(&samples, "scheduler_pending_pods", &[("queue", queue)]),
            Some(0.0),
            "pending pods in {queue}"
        );
    }

    // Berth's own.
    assert_eq!(value(&samples, "berth_agent_sessions", &[]), Some(1.0));
    let ready = [("condition", "Ready"), ("status", "True")];
    assert_eq!(value(&samples, "berth_nodes", &ready), Some(1.0));
    let applies = [("method", "Apply"), ("code", "OK")];
    assert!(value(&samples, "berth_api_requests_total", &applies).is_some_and(|n| n >= 2.0));
    let missing = [("method", "Get"), ("code", "NotFound")];
    let out = cluster.berth(&["get", "pod", "nope"]);
    assert!(!out.status.success());
    let after = scrape(&metrics);
    assert!(
        value(&after, "berth_api_requests_total", &missing).is_some_and(|n| n >= 1.0),
        "a failed Get is counted by its code"
    );
    assert!(
        after
            .iter()
            .any(|s| s.metric == "berth_store_commit_batch_size"),
        "the store's commits"
    );

    // A pod that fits nowhere: unschedulable, and waiting in the unschedulable pods.
    let yaml = pod_yaml("huge", "64", "", "");
    let path = cluster.manifest("huge.yaml", &yaml);
    cluster.berth_ok(&["apply", "-f", &path.display().to_string()]);
    wait_until("the huge pod is counted unschedulable", || {
        let samples = scrape(&metrics);
        let failed = [("result", "unschedulable")];
        value(&samples, "scheduler_schedule_attempts_total", &failed).is_some_and(|n| n >= 1.0)
            && value(
                &samples,
                "scheduler_pending_pods",
                &[("queue", "unschedulable")],
            ) == Some(1.0)
    });
    cluster.scheduler.as_mut().expect("the scheduler").stop();
}

#[test]
fn with_tokens_a_scrape_needs_a_viewer_token() {
    let metrics = format!("127.0.0.1:{}", free_port());
    let cluster = TestCluster::start_with(|dir| {
        let path = dir.join("tokens.csv");
        std::fs::write(
            &path,
            "admin-token,alice,admin\nview-token,bob,viewer\nnode-token,n1,node\n",
        )
        .expect("writing the token file");
        Security {
            scheduler_args: vec![
                "--token-file".into(),
                path.display().to_string(),
                "--metrics-listen".into(),
                metrics.clone(),
            ],
            cli_token: Some("admin-token".into()),
            ..Default::default()
        }
    });
    let cases = [
        ("no token", None, 401),
        ("unknown token", Some("nope"), 401),
        ("node credential", Some("node-token"), 403),
        ("viewer", Some("view-token"), 200),
        ("admin", Some("admin-token"), 200),
    ];
    for (name, token, want) in cases {
        let (status, body) = http_get(&metrics, "/metrics", token).expect("scraping");
        assert_eq!(status, want, "{name}: {body}");
    }
    drop(cluster);
}
