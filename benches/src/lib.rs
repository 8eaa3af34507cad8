//! Shared fixtures for the benchmarks: synthetic snapshots built from the same node and pod
//! templates as `berth bench` (kube's scheduler_perf templates, in
//! `berth_scheduler::perf::workloads`), so the micro-benchmarks and the workloads measure
//! the same objects.
#![warn(missing_docs)]

use std::sync::Arc;

use berth_proto::model::Pod;
use berth_scheduler::framework::{PodInfo, Snapshot};
use berth_scheduler::perf::workloads::{node, PodTemplate, INIT_NAMESPACE, MEASURED_NAMESPACE};

/// A pod from `template` in the measured namespace, with a uid (as admission would give it).
pub fn pod(template: PodTemplate, name: &str) -> PodInfo {
    PodInfo::new(Arc::new(with_uid(template.pod(MEASURED_NAMESPACE, name))))
}

fn with_uid(mut pod: Pod) -> Pod {
    pod.metadata.uid = format!("uid-{}-{}", pod.metadata.namespace, pod.metadata.name);
    pod
}

/// A snapshot of `nodes` template nodes (with zone labels when `zoned`), and for each
/// `(template, count)` that many pods already placed, round robin over the nodes.
pub fn snapshot(nodes: usize, zoned: bool, placed: &[(PodTemplate, usize)]) -> Snapshot {
    let mut snapshot = Snapshot::new();
    for i in 0..nodes {
        snapshot.upsert_node(Arc::new(node(i, zoned)));
    }
    let mut next = 0usize;
    for (group, &(template, count)) in placed.iter().enumerate() {
        for i in 0..count {
            let pod = with_uid(template.pod(INIT_NAMESPACE, &format!("init-{group}-{i:06}")));
            let node_name = snapshot.nodes()[next % nodes].name().to_string();
            snapshot.add_pod(&node_name, Arc::new(PodInfo::new(Arc::new(pod))));
            next += 1;
        }
    }
    snapshot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_places_pods_round_robin() {
        let s = snapshot(
            4,
            true,
            &[(PodTemplate::Default, 6), (PodTemplate::Affinity, 2)],
        );
        let counts: Vec<usize> = s.nodes().iter().map(|n| n.pods.len()).collect();
        assert_eq!(counts, vec![2, 2, 2, 2]);
        assert!(s.has_pods_with_affinity());
        assert_eq!(pod(PodTemplate::Default, "p").uid(), "uid-sched-1-p");
    }
}
