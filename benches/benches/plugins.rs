//! The expensive plugins one at a time, over a synthetic 5000-node snapshot: PreFilter (or
//! PreScore) once, then Filter (or Score) on every node, as one cycle would if it visited
//! every node. NodeResourcesFit is arithmetic per node; InterPodAffinity and
//! PodTopologySpread depend on the pods already placed, so their snapshots hold thousands of
//! matching pods.
//!
//! Those two keep their PreFilter/PreScore counts across cycles (the snapshot is unchanged
//! between iterations, so a bench with one plugin instance measures the steady state: counts
//! reused, Filter on every node). The `cold` variants build a fresh plugin per iteration and
//! so measure the full count over every placed pod, as the first pod of a new kind pays it.

use berth_benches::{pod, snapshot};
use berth_scheduler::framework::{CycleState, NodeInfo, PodInfo, Snapshot};
use berth_scheduler::perf::workloads::PodTemplate;
use berth_scheduler::plugins::{build, PluginSet};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

const NODES: usize = 5000;

/// PreFilter, then Filter on every node; returns the number of feasible nodes.
fn filter_all(plugin: &PluginSet, snapshot: &Snapshot, pod: &PodInfo) -> usize {
    let mut state = CycleState::new();
    if let Some(pre) = &plugin.pre_filter {
        pre.pre_filter(&mut state, pod, snapshot)
            .expect("pre_filter succeeds on the fixtures");
    }
    let filter = plugin.filter.as_ref().expect("the plugin filters");
    snapshot
        .nodes()
        .iter()
        .filter(|n| filter.filter(&state, pod, n).is_yes())
        .count()
}

/// PreScore, then Score on every node; returns the sum of the raw scores.
fn score_all(plugin: &PluginSet, snapshot: &Snapshot, pod: &PodInfo) -> i64 {
    let mut state = CycleState::new();
    let nodes: Vec<&NodeInfo> = snapshot.nodes().iter().collect();
    if let Some(pre) = &plugin.pre_score {
        pre.pre_score(&mut state, pod, snapshot, &nodes)
            .expect("pre_score succeeds on the fixtures");
    }
    let score = plugin.score.as_ref().expect("the plugin scores");
    nodes.iter().map(|n| score.score(&state, pod, n)).sum()
}

fn plugins(c: &mut Criterion) {
    let mut group = c.benchmark_group("plugins_5000_nodes");

    let fit = build("NodeResourcesFit", None).expect("builds");
    let plain = snapshot(NODES, false, &[(PodTemplate::Default, 20_000)]);
    let incoming = pod(PodTemplate::Default, "measured-000000");
    group.bench_function("NodeResourcesFit/filter", |b| {
        b.iter(|| filter_all(&fit, black_box(&plain), black_box(&incoming)))
    });
    group.bench_function("NodeResourcesFit/score", |b| {
        b.iter(|| score_all(&fit, black_box(&plain), black_box(&incoming)))
    });

    let affinity = build("InterPodAffinity", None).expect("builds");
    let with_affinity_pods = snapshot(
        NODES,
        true,
        &[
            (PodTemplate::AntiAffinity, 2000),
            (PodTemplate::Affinity, 5000),
            (PodTemplate::PreferredAffinity, 5000),
        ],
    );
    let anti = pod(PodTemplate::AntiAffinity, "measured-000001");
    group.bench_function("InterPodAffinity/filter_required_anti_affinity", |b| {
        b.iter(|| filter_all(&affinity, black_box(&with_affinity_pods), black_box(&anti)))
    });
    group.bench_function("InterPodAffinity/filter_required_anti_affinity_cold", |b| {
        b.iter(|| {
            let fresh = build("InterPodAffinity", None).expect("builds");
            filter_all(&fresh, black_box(&with_affinity_pods), black_box(&anti))
        })
    });
    let required = pod(PodTemplate::Affinity, "measured-000002");
    group.bench_function("InterPodAffinity/filter_required_affinity", |b| {
        b.iter(|| {
            filter_all(
                &affinity,
                black_box(&with_affinity_pods),
                black_box(&required),
            )
        })
    });
    let preferred = pod(PodTemplate::PreferredAffinity, "measured-000003");
    group.bench_function("InterPodAffinity/score_preferred_affinity", |b| {
        b.iter(|| {
            score_all(
                &affinity,
                black_box(&with_affinity_pods),
                black_box(&preferred),
            )
        })
    });

    let spread = build("PodTopologySpread", None).expect("builds");
    let spread_pods = snapshot(NODES, true, &[(PodTemplate::TopologySpreading, 5000)]);
    let spreading = pod(PodTemplate::TopologySpreading, "measured-000004");
    group.bench_function("PodTopologySpread/filter", |b| {
        b.iter(|| filter_all(&spread, black_box(&spread_pods), black_box(&spreading)))
    });
    group.bench_function("PodTopologySpread/filter_cold", |b| {
        b.iter(|| {
            let fresh = build("PodTopologySpread", None).expect("builds");
            filter_all(&fresh, black_box(&spread_pods), black_box(&spreading))
        })
    });
    group.finish();
}

criterion_group!(benches, plugins);
criterion_main!(benches);
