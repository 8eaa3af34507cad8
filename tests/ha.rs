//! High availability over the real binaries (issue 13): clients given several replicas'
//! addresses move to the next one when theirs goes away — the CLI at once, an agent's
//! session without restarting the node's pods.

mod common;

use common::{free_port, str_at, uids_logged, wait_until, TestCluster, POD_STOPPED};

#[test]
fn cli_and_agent_fail_over_to_the_next_replica_without_restarting_pods() {
    let mut cluster = TestCluster::start();
    let first = format!("http://127.0.0.1:{}", cluster.port);
    let second_port = free_port();
    let second = format!("http://127.0.0.1:{second_port}");
    // The agent is told of a replica that is not up first: it moves on to the one that is.
    cluster.agent_servers = Some(format!("{second},{first}"));
    cluster.start_agent("node-a", "2", "2Gi");
    cluster.wait_ready_nodes(1);

    // The CLI, too, skips an address where nothing answers.
    let dead_first = format!("{second},{first}");
    let nodes = cluster.berth_ok(&["--server", &dead_first, "get", "nodes"]);
    assert!(nodes.contains("node-a"), "{nodes}");

    let pod = cluster.manifest("web.yaml", &common::pod_yaml("web", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", common::display(&pod).as_str()]);
    wait_until("web runs", || {
        str_at(&cluster.pod_json("web"), "/status/phase") == "Running"
    });
    let web = cluster.pod_json("web");
    let uid = str_at(&web, "/metadata/uid").to_string();
    let started_at = str_at(&web, "/status/startTime").to_string();
    assert!(!started_at.is_empty(), "{web}");

    // The replica the agent talks to dies; another one serves the same store at the other
    // address (sled is one process per store, so the two replicas take turns).
    cluster.scheduler.as_mut().expect("scheduler").kill();
    cluster.port = second_port;
    cluster.start_scheduler();
    let moved = format!("replica={second}/");
    wait_until("the agent's session moves to the other replica", || {
        cluster
            .log_of("node-a")
            .lines()
            .any(|l| l.contains("session open") && l.contains(&moved))
    });

    // The pod kept running: it was neither stopped nor started again (a new start would
    // have a new start time), and the new session works.
    let log = cluster.log_of("node-a");
    assert!(
        !uids_logged(&log, POD_STOPPED).contains(&uid),
        "the pod stopped when its session moved:\n{log}"
    );
    let other = cluster.manifest("api.yaml", &common::pod_yaml("api", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", common::display(&other).as_str()]);
    wait_until("api runs through the new session", || {
        str_at(&cluster.pod_json("api"), "/status/phase") == "Running"
    });
    let web = cluster.pod_json("web");
    assert_eq!(str_at(&web, "/status/phase"), "Running");
    assert_eq!(str_at(&web, "/status/startTime"), started_at, "{web}");

    // The CLI given the dead replica first reaches the live one.
    let pods = cluster.berth_ok(&["--server", &format!("{first},{second}"), "get", "pods"]);
    assert!(pods.contains("web") && pods.contains("api"), "{pods}");
}
