//! One scheduling cycle (`Algorithm::schedule` with the default profile) over synthetic
//! snapshots of 1k and 5k nodes: plain pods, and pods with required anti-affinity among
//! existing anti-affinity pods; plain pods on 50k nodes too. The snapshot is not changed
//! between iterations, so each iteration is the same decision (the start index rotates, as
//! in the loop). Plain pods reuse the memo's passes and scores on every node once each
//! node has been visited (as the loop does on every node but the one it bound to);
//! `basic_afresh` runs every plugin on every node (`Algorithm::without_memo`).

use berth_benches::{pod, snapshot};
use berth_scheduler::cycle::{
    adopt_thread_for_parallel_passes, Algorithm, ScheduleOptions, ScheduleResult,
};
use berth_scheduler::perf::workloads::PodTemplate;
use berth_scheduler::profile::Profile;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

fn cycle(c: &mut Criterion) {
    // As the scheduling loop runs its cycles: on a thread that takes part in the passes.
    let _pool = adopt_thread_for_parallel_passes("bench-pass");
    let profile = Profile::default_profile();
    let mut group = c.benchmark_group("cycle");
    for nodes in [1000, 5000, 50000] {
        let cases = [
            ("basic", false, PodTemplate::Default, PodTemplate::Default),
            (
                "basic_afresh",
                false,
                PodTemplate::Default,
                PodTemplate::Default,
            ),
            (
                "anti_affinity",
                false,
                PodTemplate::AntiAffinity,
                PodTemplate::AntiAffinity,
            ),
            (
                "topology_spreading",
                true,
                PodTemplate::TopologySpreading,
                PodTemplate::TopologySpreading,
            ),
        ];
        for (name, zoned, existing, incoming) in cases {
            if nodes > 5000 && !name.starts_with("basic") {
                // The scale case: SchedulingBasic's cycle where kube's rule visits 5% of
                // the nodes (2,500), out of the caches.
                continue;
            }
            // One existing pod per five nodes, as SchedulingBasic's 1000 on 5000 nodes.
            let snap = snapshot(nodes, zoned, &[(existing, nodes / 5)]);
            let pod = pod(incoming, "measured-000000");
            let mut algorithm = Algorithm::new(1);
            if name == "basic_afresh" {
                algorithm = algorithm.without_memo();
            }
            group.bench_function(BenchmarkId::new(name, nodes), |b| {
                b.iter(|| {
                    let result = algorithm.schedule(
                        &profile,
                        black_box(&snap),
                        black_box(&pod),
                        &ScheduleOptions::default(),
                    );
                    assert!(matches!(result, ScheduleResult::Scheduled { .. }));
                    result
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, cycle);
criterion_main!(benches);
