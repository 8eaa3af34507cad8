//! End-to-end on the etcd store: `berth-scheduler --store etcd://...` on a real etcd member
//! schedules and runs pods, keeps them bound across a restart (the state is in etcd, not in
//! the data folder), and refuses an Apply above etcd's transaction limit whole. Skips with a
//! message without `etcd`, and fails when `CI` is set.

mod common;

use berth_store::testing::{require_etcd, EtcdMember};
use common::{api, channel, list_pods, placements, pod_yaml, runtime, wait_until, TestCluster};

#[test]
fn a_cluster_on_etcd_schedules_survives_a_restart_and_refuses_oversized_applies() {
    if !require_etcd() {
        return;
    }
    let etcd_dir = tempfile::tempdir().expect("temporary folder");
    let member = EtcdMember::start(etcd_dir.path()).expect("etcd starts");
    let store = member.store_url();
    let mut cluster = TestCluster::start_with_flags(&["--store", &store]);
    cluster.start_agent("node-1", "4", "8Gi");
    cluster.start_agent("node-2", "4", "8Gi");
    cluster.wait_ready_nodes(2);

    let yaml: String = (0..6)
        .map(|i| pod_yaml(&format!("web-{i}"), "500m", "", ""))
        .collect();
    let path = cluster.manifest("web.yaml", &yaml);
    cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    let rt = runtime();
    let api_channel = channel(&rt, &cluster);
    wait_until("the six pods run", || {
        let pods = list_pods(&rt, &api_channel, None).expect("list");
        pods.len() == 6
            && pods
                .iter()
                .all(|p| p.status.phase == berth_proto::model::PodPhase::Running)
    });
    let before = placements(&list_pods(&rt, &api_channel, None).expect("list"));
    assert_eq!(before.len(), 6, "all bound");

    // A restarted scheduler finds everything in etcd.
    cluster.scheduler.as_mut().expect("scheduler").kill();
    cluster.start_scheduler();
    let api_channel = channel(&rt, &cluster);
    let after = placements(&list_pods(&rt, &api_channel, None).expect("list"));
    assert_eq!(
        after, before,
        "the same pods on the same nodes after the restart"
    );

    // 129 objects do not fit in one etcd transaction: refused whole.
    let objects: String = (0..129)
        .map(|i| pod_yaml(&format!("batch-{i}"), "10m", "", ""))
        .collect();
    let request = berth_proto::pb::ApplyRequest {
        objects: common::objects(&objects),
        dry_run: false,
    };
    let status = rt
        .block_on(api(&api_channel).apply(request))
        .expect_err("129 objects exceed --max-txn-ops");
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("--max-txn-ops"),
        "the error names the limit: {}",
        status.message()
    );
    let pods = list_pods(&rt, &api_channel, None).expect("list");
    assert_eq!(pods.len(), 6, "nothing of the refused apply was stored");
    drop(cluster);
    drop(member);
}
