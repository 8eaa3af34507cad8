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
use criterion::measurement::WallTime;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion};

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
    plugin
        .pre_score(&mut state, pod, snapshot, &nodes)
        .expect("pre_score succeeds on the fixtures");
    let score = plugin.score.as_ref().expect("the plugin scores");
    nodes.iter().map(|n| score.score(&state, pod, n)).sum()
}

/// One plugin and the snapshot it is benched over. The bench ids are `{name}/{id}`.
struct Bench {
    name: &'static str,
    plugin: PluginSet,
    snapshot: Snapshot,
}

impl Bench {
    fn new(name: &'static str, snapshot: Snapshot) -> Self {
        let plugin = build(name, None).expect("builds");
        Bench {
            name,
            plugin,
            snapshot,
        }
    }

    /// PreFilter and Filter with the one plugin instance, whose counts carry over between
    /// iterations (the steady state).
    fn filter(&self, group: &mut BenchmarkGroup<'_, WallTime>, id: &str, pod: &PodInfo) {
        group.bench_function(format!("{}/{id}", self.name), |b| {
            b.iter(|| filter_all(&self.plugin, black_box(&self.snapshot), black_box(pod)))
        });
    }

    /// PreFilter and Filter with a plugin built afresh every iteration, so the full count
    /// over every placed pod is paid each time.
    fn filter_cold(&self, group: &mut BenchmarkGroup<'_, WallTime>, id: &str, pod: &PodInfo) {
        group.bench_function(format!("{}/{id}", self.name), |b| {
            b.iter(|| {
                let fresh = build(self.name, None).expect("builds");
                filter_all(&fresh, black_box(&self.snapshot), black_box(pod))
            })
        });
    }

    /// PreScore and Score with the one plugin instance.
    fn score(&self, group: &mut BenchmarkGroup<'_, WallTime>, id: &str, pod: &PodInfo) {
        group.bench_function(format!("{}/{id}", self.name), |b| {
            b.iter(|| score_all(&self.plugin, black_box(&self.snapshot), black_box(pod)))
        });
    }
}

fn plugins(c: &mut Criterion) {
    let mut group = c.benchmark_group("plugins_5000_nodes");

    let plain = snapshot(NODES, false, &[(PodTemplate::Default, 20_000)]);
    let fit = Bench::new("NodeResourcesFit", plain);
    let incoming = pod(PodTemplate::Default, "measured-000000");
    fit.filter(&mut group, "filter", &incoming);
    fit.score(&mut group, "score", &incoming);

    let with_affinity_pods = snapshot(
        NODES,
        true,
        &[
            (PodTemplate::AntiAffinity, 2000),
            (PodTemplate::Affinity, 5000),
            (PodTemplate::PreferredAffinity, 5000),
        ],
    );
    let affinity = Bench::new("InterPodAffinity", with_affinity_pods);
    let anti = pod(PodTemplate::AntiAffinity, "measured-000001");
    affinity.filter(&mut group, "filter_required_anti_affinity", &anti);
    affinity.filter_cold(&mut group, "filter_required_anti_affinity_cold", &anti);
    let required = pod(PodTemplate::Affinity, "measured-000002");
    affinity.filter(&mut group, "filter_required_affinity", &required);
    let preferred = pod(PodTemplate::PreferredAffinity, "measured-000003");
    affinity.score(&mut group, "score_preferred_affinity", &preferred);

    let spread_pods = snapshot(NODES, true, &[(PodTemplate::TopologySpreading, 5000)]);
    let spread = Bench::new("PodTopologySpread", spread_pods);
    let spreading = pod(PodTemplate::TopologySpreading, "measured-000004");
    spread.filter(&mut group, "filter", &spreading);
    spread.filter_cold(&mut group, "filter_cold", &spreading);
    group.finish();
}

criterion_group!(benches, plugins);
criterion_main!(benches);
