//! GPU-sharing arithmetic of the FGD paper (Weng et al., USENIX ATC '23; lab.md): a node's
//! GPUs as free shares in thousandths, the target workload, the fragmentation measure, and
//! the six policies' scores and GPU choices (FGD, BestFit, DotProd, GpuPacking,
//! GpuClustering, Random). Pure functions over a small view of a node, so that the score
//! plugins, the lab's metrics and the unit tests read one definition.

use std::collections::BTreeMap;
use std::sync::Arc;

/// The driver (and DeviceClass) of the GPUs the policies see: the lab's OpenB nodes publish
/// their GPUs under it.
pub const GPU_DRIVER: &str = "gpu.berth.dev";
/// The capacity of a GPU device that claims share, in thousandths of the GPU.
pub const SHARE_CAPACITY: &str = "milli";
/// The attribute that names a GPU's model.
pub const MODEL_ATTRIBUTE: &str = "model";

/// A whole GPU, in thousandths.
pub const MILLI: u32 = 1000;
/// The CPU that normalises CPU terms (BestFit, DotProd): 128 cores, in millicores.
pub const MAX_SPEC_CPU: u64 = 128_000;
/// The GPU that normalises GPU terms (BestFit, DotProd, GpuClustering): 8 GPUs.
pub const MAX_SPEC_GPU: u64 = 8 * MILLI as u64;

/// What a node has left, as the policies see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeGpus {
    /// Free CPU, in millicores.
    pub cpu_free: u64,
    /// The GPU model, `None` for a node without GPUs.
    pub model: Option<Arc<str>>,
    /// The free share of each GPU, in thousandths, by GPU index.
    pub free: Vec<u32>,
}

impl NodeGpus {
    /// Idle GPU capacity: the sum of the free shares.
    pub fn idle(&self) -> u64 {
        self.free.iter().map(|&f| u64::from(f)).sum()
    }

    /// How many GPUs are wholly free.
    pub fn fully_free(&self) -> usize {
        self.free.iter().filter(|&&f| f == MILLI).count()
    }

    /// Whether the ask fits: CPU, the GPU model, and `gpus` GPUs with a free share of at
    /// least `milli` each.
    pub fn fits(&self, ask: &Ask) -> bool {
        self.cpu_free >= ask.cpu_milli
            && (ask.gpus == 0
                || (ask.allows(self.model.as_deref())
                    && self.free.iter().filter(|&&f| f >= ask.milli).count() >= ask.gpus as usize))
    }

    /// The node after `ask` takes `gpus` (indices) and its CPU.
    pub fn after(&self, ask: &Ask, gpus: &[usize]) -> NodeGpus {
        let mut next = self.clone();
        next.cpu_free = next.cpu_free.saturating_sub(ask.cpu_milli);
        for &g in gpus {
            next.free[g] = next.free[g].saturating_sub(ask.milli);
        }
        next
    }

    /// The best-fit GPUs for the ask: those that fit with the least free share first,
    /// lowest index on ties; `None` when fewer than `gpus` fit.
    pub fn best_fit(&self, ask: &Ask) -> Option<Vec<usize>> {
        let mut fitting: Vec<usize> = (0..self.free.len())
            .filter(|&g| self.free[g] >= ask.milli)
            .collect();
        fitting.sort_by_key(|&g| (self.free[g], g));
        (fitting.len() >= ask.gpus as usize).then(|| {
            let mut chosen = fitting[..ask.gpus as usize].to_vec();
            chosen.sort_unstable();
            chosen
        })
    }

    /// The lowest-index wholly free GPUs, `count` of them, if there are that many.
    pub fn lowest_free(&self, count: u32) -> Option<Vec<usize>> {
        let free: Vec<usize> = (0..self.free.len())
            .filter(|&g| self.free[g] == MILLI)
            .take(count as usize)
            .collect();
        (free.len() == count as usize).then_some(free)
    }
}

/// What a task asks for, as the policies see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ask {
    /// CPU, in millicores.
    pub cpu_milli: u64,
    /// How many GPUs (0 for a CPU-only task).
    pub gpus: u32,
    /// The share of each GPU, in thousandths (below 1,000 only when `gpus` is 1).
    pub milli: u32,
    /// The GPU models it may run on; empty for any.
    pub models: Vec<String>,
}

impl Ask {
    /// Whether a GPU of this model is allowed.
    pub fn allows(&self, model: Option<&str>) -> bool {
        self.models.is_empty() || model.is_some_and(|m| self.models.iter().any(|s| s == m))
    }

    /// A share of one GPU rather than whole GPUs.
    pub fn is_shared(&self) -> bool {
        self.gpus == 1 && self.milli < MILLI
    }

    /// Its GPU request in all, in thousandths (`k · d`).
    pub fn total_milli(&self) -> u64 {
        u64::from(self.gpus) * u64::from(self.milli)
    }

    /// GpuClustering's kind: `None` for a CPU-only task, else shared or the GPU count.
    pub fn kind(&self) -> Option<GpuKind> {
        match (self.gpus, self.is_shared()) {
            (0, _) => None,
            (_, true) => Some(GpuKind::Shared),
            (k, false) => Some(GpuKind::Whole(k)),
        }
    }
}

/// The kind of a GPU task, for GpuClustering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuKind {
    /// A share of one GPU.
    Shared,
    /// This many whole GPUs.
    Whole(u32),
}

/// The target workload M: the most frequent task shapes covering a share of the tasks,
/// with their frequencies renormalised to sum to 1.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetWorkload {
    /// Each shape with its probability, most frequent first.
    pub shapes: Vec<(Ask, f64)>,
}

impl TargetWorkload {
    /// The shapes of `asks`, most frequent first (ties in shape order), taken until they
    /// cover `coverage` (0..1) of the tasks.
    pub fn from_asks<'a>(asks: impl IntoIterator<Item = &'a Ask>, coverage: f64) -> Self {
        let mut counts: BTreeMap<&Ask, usize> = BTreeMap::new();
        let mut total = 0usize;
        for ask in asks {
            *counts.entry(ask).or_default() += 1;
            total += 1;
        }
        let mut ranked: Vec<(&Ask, usize)> = counts.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let mut taken = Vec::new();
        let mut covered = 0usize;
        for (ask, count) in ranked {
            if total > 0 && covered as f64 >= coverage * total as f64 {
                break;
            }
            covered += count;
            taken.push((ask.clone(), count));
        }
        let shapes = taken
            .into_iter()
            .map(|(ask, count)| (ask, count as f64 / covered as f64))
            .collect();
        TargetWorkload { shapes }
    }

    /// The node's fragmentation: Σ_m p_m · fragment(node, m), in thousandths of a GPU.
    pub fn fragmentation(&self, node: &NodeGpus) -> f64 {
        let idle = node.idle();
        if idle == 0 {
            return 0.0;
        }
        self.shapes
            .iter()
            .map(|(m, p)| p * fragment(node, m, idle) as f64)
            .sum()
    }
}

/// The GPU capacity of `node` that shape `m` cannot use: all of it when `m` asks no GPU,
/// is not allowed there or does not fit; else the free shares too small for `m`.
fn fragment(node: &NodeGpus, m: &Ask, idle: u64) -> u64 {
    if m.gpus == 0 || node.cpu_free < m.cpu_milli || !m.allows(node.model.as_deref()) {
        return idle;
    }
    // One pass: how many GPUs have room for `m`, and the shares of those that do not.
    let (mut room, mut small) = (0u32, 0u64);
    for &f in &node.free {
        if f >= m.milli {
            room += 1;
        } else {
            small += u64::from(f);
        }
    }
    if room >= m.gpus {
        small
    } else {
        idle
    }
}

/// The paper's policies, each a score in 0..=100 and a GPU choice for a feasible node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Fragmentation gradient descent.
    Fgd,
    /// Least leftover CPU and GPU, min–max normalised over the feasible nodes.
    BestFit,
    /// Dot product of the node's free and the task's asked vectors.
    DotProd,
    /// Prefer partly used GPUs, then partly used nodes, then small idle nodes.
    GpuPacking,
    /// Prefer nodes hosting tasks of the same kind.
    GpuClustering,
    /// One feasible node uniformly at random.
    Random,
    /// Berth's own variant of FGD (not in the paper): the same fragmentation decrease,
    /// compared exactly instead of through FGD's integer sigmoid score (min–max normalised
    /// over the feasible nodes, so only the largest decrease scores 100), and a shared
    /// task's GPU chosen by the exact decrease too.
    FgdFine,
}

impl Policy {
    /// Every policy, in the order of lab.md's table.
    pub const ALL: [Policy; 6] = [
        Policy::Random,
        Policy::DotProd,
        Policy::GpuClustering,
        Policy::GpuPacking,
        Policy::BestFit,
        Policy::Fgd,
    ];

    /// Policies of Berth's own, beyond the paper's six.
    pub const OURS: [Policy; 1] = [Policy::FgdFine];

    /// The policy's name, as profiles and experiment files spell it.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fgd => "FGD",
            Policy::BestFit => "BestFit",
            Policy::DotProd => "DotProd",
            Policy::GpuPacking => "GpuPacking",
            Policy::GpuClustering => "GpuClustering",
            Policy::Random => "Random",
            Policy::FgdFine => "FGDFine",
        }
    }

    /// The policy named `name`.
    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL
            .into_iter()
            .chain(Policy::OURS)
            .find(|p| p.name() == name)
    }

    /// Whether the scores are min–max normalised over the feasible nodes.
    pub fn normalises(self) -> bool {
        matches!(self, Policy::BestFit | Policy::FgdFine)
    }

    /// Whether the policy scores by the target workload's fragmentation (FGD's args).
    pub fn uses_target(self) -> bool {
        matches!(self, Policy::Fgd | Policy::FgdFine)
    }
}

/// FGD's score of placing `ask` on `node` (whose fragmentation is `before`) and the GPUs
/// it takes: for a shared task every GPU with room is tried and the best integer score wins
/// (lowest index on ties); whole-GPU tasks take the lowest-index free GPUs; CPU-only tasks
/// change only the CPU.
pub fn fgd(target: &TargetWorkload, node: &NodeGpus, before: f64, ask: &Ask) -> (i64, Vec<usize>) {
    by_decrease(target, node, before, ask, |d| {
        (100.0 * sigmoid(d / 1000.0)) as i64
    })
}

/// FGDFine's raw score (before normalisation) and GPUs: as [`fgd`], with the decrease of
/// the node's fragmentation itself as the score, in millionths of a GPU (rounded).
pub fn fgd_fine(
    target: &TargetWorkload,
    node: &NodeGpus,
    before: f64,
    ask: &Ask,
) -> (i64, Vec<usize>) {
    by_decrease(target, node, before, ask, |d| (d * 1000.0).round() as i64)
}

/// FGD's placement with `score` of the node's fragmentation decrease (thousandths of a
/// GPU) from `before`: a shared task's GPU is the lowest-index one with the best score.
fn by_decrease(
    target: &TargetWorkload,
    node: &NodeGpus,
    before: f64,
    ask: &Ask,
    score: impl Fn(f64) -> i64,
) -> (i64, Vec<usize>) {
    // One copy of the node, with the task's CPU taken, on which each choice of GPUs is
    // tried and taken back.
    let mut after = node.after(ask, &[]);
    let mut score = |gpus: &[usize]| {
        for &g in gpus {
            after.free[g] = node.free[g].saturating_sub(ask.milli);
        }
        let s = score(before - target.fragmentation(&after));
        for &g in gpus {
            after.free[g] = node.free[g];
        }
        s
    };
    if ask.is_shared() {
        let mut best: Option<(i64, usize)> = None;
        for g in (0..node.free.len()).filter(|&g| node.free[g] >= ask.milli) {
            let s = score(&[g]);
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, g));
            }
        }
        return best.map_or((0, Vec::new()), |(s, g)| (s, vec![g]));
    }
    let gpus = node.lowest_free(ask.gpus).unwrap_or_default();
    (score(&gpus), gpus)
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// BestFit's raw score (before normalisation): the integer part of
/// 100 · (1 − (½ leftover CPU / 128 cores + ½ leftover GPU / 8 GPUs)).
pub fn best_fit(node: &NodeGpus, ask: &Ask) -> i64 {
    let cpu = node.cpu_free.saturating_sub(ask.cpu_milli) as f64 / MAX_SPEC_CPU as f64;
    let gpu = node.idle().saturating_sub(ask.total_milli()) as f64 / MAX_SPEC_GPU as f64;
    ((1.0 - (0.5 * cpu + 0.5 * gpu)) * 100.0) as i64
}

/// DotProd's score: the integer part of 100 · (1 − free·asked / 2), both vectors
/// normalised by 128 cores and 8 GPUs.
pub fn dot_prod(node: &NodeGpus, ask: &Ask) -> i64 {
    let dot = (node.cpu_free as f64 / MAX_SPEC_CPU as f64)
        * (ask.cpu_milli as f64 / MAX_SPEC_CPU as f64)
        + (node.idle() as f64 / MAX_SPEC_GPU as f64)
            * (ask.total_milli() as f64 / MAX_SPEC_GPU as f64);
    ((1.0 - dot / 2.0) * 100.0) as i64
}

/// GpuPacking's score (0 for CPU-only tasks): an idle node scores 33 − its GPUs (at least
/// its GPU count); a task that has to take wholly free GPUs on a used node 50 − how many
/// (at least 33); a task that fits on partly used GPUs 100 − their free tenths (at least 50).
pub fn gpu_packing(node: &NodeGpus, ask: &Ask) -> i64 {
    if ask.gpus == 0 {
        return 0;
    }
    let fully_free = node.fully_free() as i64;
    if fully_free == node.free.len() as i64 {
        return (33 - fully_free).max(fully_free);
    }
    let Some(gpus) = node.best_fit(ask) else {
        return 0;
    };
    let whole = gpus.iter().filter(|&&g| node.free[g] == MILLI).count() as i64;
    if whole > 0 {
        return (50 - whole).max(33);
    }
    let tenths: i64 = gpus
        .iter()
        .map(|&g| i64::from(node.free[g]) * 100 / i64::from(MILLI))
        .sum();
    (100 - tenths / 10).max(50)
}

/// GpuClustering's score (0 for CPU-only tasks): 75 when the node hosts only GPU tasks of
/// this kind, 50 when several kinds including this one, 25 when no GPU task, 0 when only
/// other kinds; plus the integer part of 25 · (8 GPUs − free GPU) / 8 GPUs. `hosted`: the
/// kinds of GPU task on the node, each once.
pub fn gpu_clustering(node: &NodeGpus, hosted: &[GpuKind], ask: &Ask) -> i64 {
    let Some(kind) = ask.kind() else {
        return 0;
    };
    let base = match (hosted.contains(&kind), hosted.len()) {
        (true, 1) => 75,
        (true, _) => 50,
        (false, 0) => 25,
        (false, _) => 0,
    };
    let used = MAX_SPEC_GPU.saturating_sub(node.idle()) as i64;
    25 * used / MAX_SPEC_GPU as i64 + base
}

/// Min–max normalisation in integers, as BestFit's: (s − lo) · 100 / (hi − lo); all 0 when
/// every score is the same.
pub fn normalise(scores: &mut [i64]) {
    let (Some(&lo), Some(&hi)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    for s in scores.iter_mut() {
        *s = if hi == lo {
            0
        } else {
            (*s - lo) * 100 / (hi - lo)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpu_cores: u64, free: &[u32]) -> NodeGpus {
        NodeGpus {
            cpu_free: cpu_cores * 1000,
            model: Some("V100".into()),
            free: free.to_vec(),
        }
    }

    fn ask(cpu_cores: u64, gpus: u32, milli: u32) -> Ask {
        Ask {
            cpu_milli: cpu_cores * 1000,
            gpus,
            milli,
            models: Vec::new(),
        }
    }

    /// lab.md's worked example.
    fn worked() -> (TargetWorkload, NodeGpus) {
        let target = TargetWorkload {
            shapes: vec![
                (ask(4, 1, 500), 0.4),
                (ask(8, 1, 1000), 0.4),
                (ask(4, 0, 0), 0.2),
            ],
        };
        (
            target,
            node(20, &[1000, 1000, 1000, 1000, 1000, 1000, 300, 0]),
        )
    }

    #[test]
    fn fragmentation_matches_the_worked_example() {
        let (target, n) = worked();
        assert!((target.fragmentation(&n) - 1500.0).abs() < 1e-9);
        let after = n.after(&ask(4, 1, 500), &[0]);
        assert!((target.fragmentation(&after) - 1600.0).abs() < 1e-9);
    }

    #[test]
    fn fragment_cases() {
        let n = node(8, &[1000, 400, 0]);
        let mut p100 = ask(1, 1, 500);
        p100.models = vec!["P100".into()];
        let cases = [
            ("cpu-only: all idle", ask(1, 0, 0), 1400),
            ("fits: shares below 500", ask(1, 1, 500), 400),
            ("too much cpu: all idle", ask(9, 1, 500), 1400),
            ("too few GPUs: all idle", ask(1, 2, 1000), 1400),
            ("model not allowed: all idle", p100, 1400),
            ("whole GPU: partly used ones", ask(1, 1, 1000), 400),
        ];
        for (name, m, want) in cases {
            assert_eq!(fragment(&n, &m, n.idle()), want, "{name}");
        }
    }

    #[test]
    fn fgd_tries_every_gpu_for_a_shared_task() {
        let (target, n) = worked();
        // Placing 300 on the 300 GPU removes a fragment: better than breaking a whole GPU.
        let (score, gpus) = fgd(&target, &n, target.fragmentation(&n), &ask(1, 1, 300));
        assert_eq!(gpus, vec![6]);
        assert!(score > 50, "{score}");
        let (_, gpus) = fgd(&target, &n, target.fragmentation(&n), &ask(1, 2, 1000));
        assert_eq!(gpus, vec![0, 1]);
    }

    #[test]
    fn fgd_fine_tells_apart_decreases_that_fgd_rounds_together() {
        let target = TargetWorkload {
            shapes: vec![(ask(1, 1, 500), 0.5), (ask(1, 0, 0), 0.5)],
        };
        let n = node(8, &[1000, 1000]);
        // A share of 10 or of 20 leaves the GPU shape's fragment as it is and takes half
        // of itself off the CPU-only shape's (all idle capacity): decreases of 5 and 10.
        let (small, large) = (ask(1, 1, 10), ask(1, 1, 20));
        assert_eq!(
            fgd(&target, &n, target.fragmentation(&n), &small),
            (50, vec![0])
        );
        assert_eq!(
            fgd(&target, &n, target.fragmentation(&n), &large),
            (50, vec![0])
        );
        assert_eq!(
            fgd_fine(&target, &n, target.fragmentation(&n), &small),
            (5000, vec![0])
        );
        assert_eq!(
            fgd_fine(&target, &n, target.fragmentation(&n), &large),
            (10000, vec![0])
        );
        // Taking 20 of the 510 GPU leaves a fragment below 500: the whole GPU is better.
        let n = node(8, &[510, 1000]);
        assert_eq!(
            fgd_fine(&target, &n, target.fragmentation(&n), &large).1,
            vec![1]
        );
        let mut scores = [5000, 10000, -2000];
        normalise(&mut scores);
        assert_eq!(scores, [58, 100, 0], "only the largest decrease scores 100");
    }

    #[test]
    fn packing_and_clustering_follow_the_artifact() {
        let cases = [
            ("idle 8-GPU node", node(64, &[1000; 8]), ask(1, 1, 500), 25),
            ("idle 1-GPU node", node(64, &[1000]), ask(1, 1, 500), 32),
            (
                "partly used GPU",
                node(64, &[1000, 600]),
                ask(1, 1, 500),
                94,
            ),
            (
                "whole GPUs on a used node",
                node(64, &[1000, 1000, 600]),
                ask(1, 2, 1000),
                48,
            ),
            ("cpu-only", node(64, &[1000]), ask(1, 0, 0), 0),
        ];
        for (name, n, a, want) in cases {
            assert_eq!(gpu_packing(&n, &a), want, "{name}");
        }
        let none = [];
        assert_eq!(
            gpu_clustering(&node(64, &[1000, 1000]), &none, &ask(1, 1, 500)),
            43
        );
        assert_eq!(
            gpu_clustering(&node(64, &[1000; 8]), &none, &ask(1, 1, 500)),
            25
        );
        let shared = [GpuKind::Shared];
        assert_eq!(
            gpu_clustering(&node(64, &[1000; 8]), &shared, &ask(1, 1, 500)),
            75
        );
        assert_eq!(
            gpu_clustering(&node(64, &[1000; 8]), &shared, &ask(1, 1, 1000)),
            0
        );
        let both = [GpuKind::Shared, GpuKind::Whole(1)];
        assert_eq!(
            gpu_clustering(&node(64, &[1000; 8]), &both, &ask(1, 1, 1000)),
            50
        );
    }

    #[test]
    fn best_fit_dot_prod_and_normalisation() {
        let n = node(64, &[1000, 1000]);
        // leftover: cpu 60/128, gpu 1500/8000 → 1 − (0.234375 + 0.09375) = 0.671875
        assert_eq!(best_fit(&n, &ask(4, 1, 500)), 67);
        // dot: 0.5·(4/128) + 0.25·(500/8000) = 0.015625 + 0.015625 → 1 − 0.015625
        assert_eq!(dot_prod(&n, &ask(4, 1, 500)), 98);
        let mut scores = vec![60, 70, 80];
        normalise(&mut scores);
        assert_eq!(scores, vec![0, 50, 100]);
        let mut same = vec![7, 7];
        normalise(&mut same);
        assert_eq!(same, vec![0, 0]);
        assert_eq!(n.best_fit(&ask(1, 1, 500)), Some(vec![0]));
        assert_eq!(
            node(1, &[1000, 600, 700]).best_fit(&ask(1, 1, 500)),
            Some(vec![1])
        );
    }

    #[test]
    fn target_workload_takes_the_most_frequent_shapes() {
        let a = ask(1, 1, 500);
        let b = ask(2, 0, 0);
        let c = ask(3, 1, 1000);
        let asks = [a.clone(), a.clone(), a.clone(), b.clone(), b.clone(), c];
        let target = TargetWorkload::from_asks(asks.iter(), 0.8);
        assert_eq!(target.shapes.len(), 2);
        assert_eq!(target.shapes[0].0, a);
        assert!((target.shapes[0].1 - 0.6).abs() < 1e-9);
        assert!((target.shapes[1].1 - 0.4).abs() < 1e-9);
    }
}
