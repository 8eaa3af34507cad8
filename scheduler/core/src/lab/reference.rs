//! A check of the GPU-sharing arithmetic against lab.md's table, without the scheduler:
//! the artifact's loop written out over [`crate::gpushare`] alone. It is a test aid (run
//! with `--ignored`), so that a difference between the lab and the paper can be told apart
//! from a difference in the arithmetic.

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::openb::{artifact_arrivals, read_nodes, read_tasks, TraceTask};
use crate::gpushare::{self, Ask, GpuKind, NodeGpus, Policy};

/// Unallocated GPU % averaged per whole arrived percent, for one policy and seed.
fn run(policy: Policy, seed: u64) -> BTreeMap<u64, f64> {
    let dir =
        std::env::var("OPENB_DIR").unwrap_or_else(|_| "/work/shared/traces/alibaba-openb".into());
    let dir = Path::new(&dir);
    let nodes = read_nodes(&dir.join("openb_node_list_gpu_node.csv")).unwrap();
    let tasks = read_tasks(&dir.join("openb_pod_list_default.csv")).unwrap();
    let asks: Vec<Ask> = tasks.iter().map(TraceTask::ask).collect();
    let target = super::engine::target_workload(&tasks, 95);
    let capacity: u64 = nodes.iter().map(|n| u64::from(n.gpus) * 1000).sum();
    let arrivals = artifact_arrivals(&tasks, capacity, 130, seed);
    let mut state: Vec<NodeGpus> = nodes
        .iter()
        .map(|n| NodeGpus {
            cpu_free: n.cpu_milli,
            model: n.model.as_deref().map(std::sync::Arc::from),
            free: vec![1000; n.gpus as usize],
        })
        .collect();
    let mut mem: Vec<u64> = nodes.iter().map(|n| n.memory_mib).collect();
    let mut hosted: Vec<BTreeMap<GpuKind, usize>> = vec![BTreeMap::new(); nodes.len()];
    // The artifact's fixed ranking: a seeded random key per node; ties go to the smallest.
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
    let rank: Vec<u64> = (0..nodes.len()).map(|_| rng.random()).collect();
    let mut arrived = 0u64;
    let mut allocated = 0u64;
    let mut bins: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
    for a in &arrivals {
        let task = &tasks[a.task];
        let ask = &asks[a.task];
        arrived += ask.total_milli();
        let feasible: Vec<usize> = (0..nodes.len())
            .filter(|&n| mem[n] >= task.memory_mib && state[n].fits(ask))
            .collect();
        if !feasible.is_empty() {
            let mut scored: Vec<(i64, Vec<usize>)> = feasible
                .iter()
                .map(|&n| {
                    let s = &state[n];
                    match policy {
                        Policy::Fgd => gpushare::fgd(&target, s, target.fragmentation(s), ask),
                        Policy::FgdFine => {
                            gpushare::fgd_fine(&target, s, target.fragmentation(s), ask)
                        }
                        Policy::BestFit => (gpushare::best_fit(s, ask), s.best_fit(ask).unwrap()),
                        Policy::DotProd => (gpushare::dot_prod(s, ask), s.best_fit(ask).unwrap()),
                        Policy::GpuPacking => {
                            (gpushare::gpu_packing(s, ask), s.best_fit(ask).unwrap())
                        }
                        Policy::GpuClustering => (
                            gpushare::gpu_clustering(
                                s,
                                &hosted[n].keys().copied().collect::<Vec<_>>(),
                                ask,
                            ),
                            s.best_fit(ask).unwrap(),
                        ),
                        Policy::Random => (0, Vec::new()),
                    }
                })
                .collect();
            let pick = if policy == Policy::Random {
                rng.random_range(0..feasible.len())
            } else {
                if policy.normalises() {
                    let mut s: Vec<i64> = scored.iter().map(|x| x.0).collect();
                    gpushare::normalise(&mut s);
                    for (x, v) in scored.iter_mut().zip(s) {
                        x.0 = v;
                    }
                }
                (0..feasible.len())
                    .max_by(|&i, &j| {
                        scored[i]
                            .0
                            .cmp(&scored[j].0)
                            .then(rank[feasible[j]].cmp(&rank[feasible[i]]))
                    })
                    .unwrap()
            };
            let n = feasible[pick];
            let gpus = if policy == Policy::Random {
                if ask.is_shared() {
                    let fit: Vec<usize> = (0..state[n].free.len())
                        .filter(|&g| state[n].free[g] >= ask.milli)
                        .collect();
                    vec![fit[rng.random_range(0..fit.len())]]
                } else {
                    state[n].lowest_free(ask.gpus).unwrap()
                }
            } else {
                std::mem::take(&mut scored[pick].1)
            };
            state[n] = state[n].after(ask, &gpus);
            mem[n] -= task.memory_mib;
            if let Some(k) = ask.kind() {
                *hosted[n].entry(k).or_default() += 1;
            }
            allocated += ask.total_milli();
        }
        let x = arrived * 100 / capacity;
        let y = 100.0 - allocated as f64 * 100.0 / capacity as f64;
        let e = bins.entry(x).or_default();
        e.0 += y;
        e.1 += 1;
    }
    bins.into_iter()
        .map(|(x, (s, n))| (x, s / f64::from(n)))
        .collect()
}

#[test]
#[ignore = "reads the OpenB trace and takes a while; run with --release --ignored --nocapture"]
fn reference_table() {
    for policy in Policy::ALL {
        let t = std::time::Instant::now();
        let runs: Vec<BTreeMap<u64, f64>> = (42..52).map(|seed| run(policy, seed)).collect();
        let cells: Vec<String> = [90u64, 95, 100, 110, 130]
            .iter()
            .map(|x| {
                let mut v: Vec<f64> = runs.iter().filter_map(|r| r.get(x).copied()).collect();
                v.sort_by(f64::total_cmp);
                let m = if v.is_empty() {
                    f64::NAN
                } else if v.len() % 2 == 1 {
                    v[v.len() / 2]
                } else {
                    (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
                };
                format!("{m:6.2}")
            })
            .collect();
        println!(
            "{:14} {} ({:.1}s)",
            policy.name(),
            cells.join(" "),
            t.elapsed().as_secs_f64()
        );
    }
}
