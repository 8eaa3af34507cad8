//! One scheduling cycle (`Algorithm::schedule` with the default profile) over synthetic
//! snapshots of 1k and 5k nodes: plain pods, and pods with required anti-affinity among
//! existing anti-affinity pods. The snapshot is not changed between iterations, so each
//! iteration is the same decision (the start index rotates, as in the loop).

use berth_benches::{pod, snapshot};
use berth_scheduler::cycle::{Algorithm, ScheduleOptions, ScheduleResult};
use berth_scheduler::perf::workloads::PodTemplate;
use berth_scheduler::profile::Profile;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};

fn cycle(c: &mut Criterion) {
    let profile = Profile::default_profile();
    let mut group = c.benchmark_group("cycle");
    for nodes in [1000, 5000] {
        let cases = [
            ("basic", false, PodTemplate::Default, PodTemplate::Default),
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
            // One existing pod per five nodes, as SchedulingBasic's 1000 on 5000 nodes.
            let snap = snapshot(nodes, zoned, &[(existing, nodes / 5)]);
            let pod = pod(incoming, "measured-000000");
            let mut algorithm = Algorithm::new(1);
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
