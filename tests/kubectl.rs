//! End-to-end tests of kubectl's everyday verbs on a live cluster (issue 14 item 4):
//! `get -w` printing a line per change, `rollout status` returning when a rollout completes,
//! `wait`, `apply --dry-run` storing nothing and `diff`'s exit codes.

mod common;

use common::{display, pod_yaml, Lines, TestCluster};

fn cluster_with_node() -> TestCluster {
    let mut cluster = TestCluster::start();
    cluster.start_agent("n1", "4", "8Gi");
    cluster.wait_ready_nodes(1);
    cluster
}

/// The cells of a table line.
fn cells(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn get_watch_prints_a_line_per_change_and_ends_on_ctrl_c() {
    let cluster = cluster_with_node();
    let before = cluster.manifest("before.yaml", &pod_yaml("before", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", &display(&before)]);

    let mut watch = cluster.berth_spawn(&["get", "pods", "-w"]);
    let mut lines = Lines::of(&mut watch);
    let mut events = cluster.berth_spawn(&["get", "pods", "--watch", "--output-watch-events"]);
    let mut event_lines = Lines::of(&mut events);
    let header = lines.wait_for("with the header", |l| l.starts_with("NAME"));
    assert_eq!(
        cells(&header),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    lines.wait_for("for the pod listed first", |l| cells(l)[0] == "before");
    let header = event_lines.wait_for("with the header", |l| l.starts_with("EVENT"));
    assert_eq!(
        cells(&header),
        ["EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    event_lines.wait_for("for the pod listed first", |l| {
        cells(l)[..2] == ["ADDED", "before"]
    });

    // Applied after the watch began: a line when it is created, another when it runs.
    let web = cluster.manifest("web.yaml", &pod_yaml("web", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", &display(&web)]);
    lines.wait_for("when web is created", |l| {
        cells(l)[0] == "web" && cells(l)[2] == "Pending"
    });
    lines.wait_for("when web is Running", |l| {
        cells(l)[0] == "web" && cells(l)[2] == "Running"
    });
    event_lines.wait_for("when web is created", |l| cells(l)[..2] == ["ADDED", "web"]);
    // A deleted pod is printed once more, as it last was.
    cluster.berth_ok(&["delete", "pod", "web"]);
    event_lines.wait_for("when web is deleted", |l| {
        cells(l)[..2] == ["DELETED", "web"]
    });

    for (child, lines) in [(&mut watch, &lines), (&mut events, &event_lines)] {
        let interrupt = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill -INT");
        assert!(interrupt.success());
        let status = child.wait().expect("waiting for the watch");
        assert!(status.success(), "Ctrl-C ends a watch with 0: {status}");
        let headers = lines
            .seen
            .iter()
            .filter(|l| l.starts_with("NAME") || l.starts_with("EVENT"))
            .count();
        assert_eq!(headers, 1, "the header once: {:#?}", lines.seen);
    }
}
