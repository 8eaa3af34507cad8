//! What a lab run records and how runs are summarised: one [`Sample`] after each arrival
//! (or each interval), binned per whole arrived percent (rounded, as the artifact's
//! analysis does), then the median and the 25–75%
//! band over seeds (lab.md, "Metric").

use std::collections::BTreeMap;

use serde::Serialize;

/// The cluster after one arrival (or at one sampling instant).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    /// Pods that have arrived so far.
    pub arrivals: u64,
    /// Simulated time since the start, in seconds.
    pub time_s: f64,
    /// GPU asked by every pod that has arrived (placed or not), in % of the GPU capacity.
    pub arrived_gpu_pct: f64,
    /// CPU requested by placed pods, in % of the allocatable CPU.
    pub cpu_alloc_pct: f64,
    /// Memory requested by placed pods, in % of the allocatable memory.
    pub memory_alloc_pct: f64,
    /// GPU allocated, in thousandths of a GPU (shares count as fractions).
    pub gpu_alloc_milli: u64,
    /// 100 − allocated GPU in % of the GPU capacity.
    pub unallocated_gpu_pct: f64,
    /// The cluster's GPU fragmentation, in thousandths of a GPU.
    pub frag_milli: f64,
    /// Fragmentation over idle GPU capacity (0 when nothing is idle).
    pub frag_ratio: f64,
    /// Pods waiting to be scheduled.
    pub pending: u64,
    /// Pods that could not be placed and will not be retried.
    pub failed: u64,
    /// Pods placed so far.
    pub scheduled: u64,
    /// Preemptions so far.
    pub preemptions: u64,
    /// Pods evicted so far (preemption victims, drains).
    pub evictions: u64,
}

/// One run's samples.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// The policy's name.
    pub policy: String,
    /// The seed.
    pub seed: u64,
    /// The samples in order.
    pub samples: Vec<Sample>,
    /// Wall time of the run, in seconds.
    pub wall_seconds: f64,
}

impl RunResult {
    /// `field` of the samples averaged per whole arrived percent, as the artifact's
    /// analysis bins them: bin `x` holds the samples whose arrived GPU rounds to x (to
    /// the nearest percent, halves to even), so x% stands for x−½ to x+½; a whole percent
    /// up to one past the last bin that no sample rounds to takes the samples of the bins
    /// next to it (x−1 to x+1), as the artifact fills a gap (so a run that stops just short
    /// of 130%, as the artifact's arrivals do, reports its end state there).
    pub fn by_arrived(&self, field: impl Fn(&Sample) -> f64) -> BTreeMap<u64, f64> {
        let mut bins: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
        for s in &self.samples {
            let bin = bins
                .entry(s.arrived_gpu_pct.round_ties_even().max(0.0) as u64)
                .or_default();
            bin.0 += field(s);
            bin.1 += 1;
        }
        let Some(&last) = bins.keys().next_back() else {
            return BTreeMap::new();
        };
        let mean = |(sum, n): (f64, u32)| sum / f64::from(n);
        (0..=last + 1)
            .filter_map(|x| match bins.get(&x) {
                Some(&bin) => Some((x, mean(bin))),
                None => {
                    let near = bins.range(x.saturating_sub(1)..=x + 1).map(|(_, b)| *b);
                    let (sum, n) = near.fold((0.0, 0), |(s, n), (bs, bn)| (s + bs, n + bn));
                    (n > 0).then(|| (x, mean((sum, n))))
                }
            })
            .collect()
    }
}

/// The median and quartiles of some values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Band {
    /// The 25th percentile.
    pub low: f64,
    /// The median.
    pub median: f64,
    /// The 75th percentile.
    pub high: f64,
}

impl Band {
    /// The band of `values` (linear interpolation between order statistics); `None` when
    /// there are none.
    pub fn of(values: &[f64]) -> Option<Band> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let pos = q * (v.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
        };
        Some(Band {
            low: at(0.25),
            median: at(0.5),
            high: at(0.75),
        })
    }
}

/// For each x (a bin), the band over runs of the runs that have that bin.
pub fn bands(per_run: &[BTreeMap<u64, f64>]) -> BTreeMap<u64, Band> {
    let mut values: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for run in per_run {
        for (&x, &y) in run {
            values.entry(x).or_default().push(y);
        }
    }
    values
        .into_iter()
        .filter_map(|(x, v)| Band::of(&v).map(|b| (x, b)))
        .collect()
}

/// `DIR/summary.json`'s entry for one policy (design.md's contract).
#[derive(Clone, Debug, Serialize)]
pub struct PolicySummary {
    /// The seeds run.
    pub seeds: Vec<u64>,
    /// The median over seeds of the unallocated GPU % per whole arrived percent (keys are
    /// the percent as text).
    pub unallocated_gpu_pct: BTreeMap<String, f64>,
    /// The median over seeds of the fragmentation ratio per arrived percent.
    pub frag_ratio: BTreeMap<String, f64>,
    /// Pods that failed, median over seeds.
    pub failed: f64,
    /// Total wall time of the policy's runs, in seconds.
    pub wall_seconds: f64,
}

/// The summary of one policy's runs.
pub fn summarise(runs: &[&RunResult]) -> PolicySummary {
    let text = |m: BTreeMap<u64, Band>| {
        m.into_iter()
            .map(|(x, b)| (x.to_string(), round(b.median)))
            .collect()
    };
    let unallocated: Vec<_> = runs
        .iter()
        .map(|r| r.by_arrived(|s| s.unallocated_gpu_pct))
        .collect();
    let frag: Vec<_> = runs
        .iter()
        .map(|r| r.by_arrived(|s| s.frag_ratio))
        .collect();
    let failed: Vec<f64> = runs
        .iter()
        .map(|r| r.samples.last().map_or(0.0, |s| s.failed as f64))
        .collect();
    PolicySummary {
        seeds: runs.iter().map(|r| r.seed).collect(),
        unallocated_gpu_pct: text(bands(&unallocated)),
        frag_ratio: text(bands(&frag)),
        failed: Band::of(&failed).map_or(0.0, |b| b.median),
        wall_seconds: round(runs.iter().map(|r| r.wall_seconds).sum()),
    }
}

/// Four decimals: enough for percentages, and stable text.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, points: &[(f64, f64)]) -> RunResult {
        RunResult {
            policy: "p".into(),
            seed,
            samples: points
                .iter()
                .map(|&(x, y)| Sample {
                    arrived_gpu_pct: x,
                    unallocated_gpu_pct: y,
                    ..Sample::default()
                })
                .collect(),
            wall_seconds: 1.0,
        }
    }

    #[test]
    fn samples_average_per_whole_percent_and_medians_over_seeds() {
        let a = run(1, &[(98.7, 10.0), (99.4, 8.0), (100.1, 7.0)]);
        let b = run(2, &[(99.0, 6.0), (100.2, 5.0)]);
        let c = run(3, &[(99.0, 2.0)]);
        assert_eq!(
            a.by_arrived(|s| s.unallocated_gpu_pct),
            BTreeMap::from([(98, 9.0), (99, 9.0), (100, 7.0), (101, 7.0)]),
            "bins round to the nearest percent; a percent next to a bin takes its samples"
        );
        let halves = run(4, &[(128.5, 6.0), (129.5, 4.0)]);
        assert_eq!(
            halves.by_arrived(|s| s.unallocated_gpu_pct),
            BTreeMap::from([(127, 6.0), (128, 6.0), (129, 5.0), (130, 4.0), (131, 4.0)]),
            "halves round to even; a percent with no sample takes its neighbours' (x-1..x+1)"
        );
        let short = run(5, &[(128.2, 6.0), (129.4, 5.0)]);
        assert_eq!(
            short.by_arrived(|s| s.unallocated_gpu_pct)[&130],
            5.0,
            "a run that stops short of 130% reports its end state there"
        );
        let s = summarise(&[&a, &b, &c]);
        assert_eq!(s.seeds, vec![1, 2, 3]);
        assert_eq!(s.unallocated_gpu_pct["99"], 6.0);
        assert_eq!(s.unallocated_gpu_pct["100"], 5.0);
        assert_eq!(s.wall_seconds, 3.0);
    }

    #[test]
    fn bands_interpolate_quartiles() {
        let b = Band::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!((b.low, b.median, b.high), (2.0, 3.0, 4.0));
        let b = Band::of(&[1.0, 2.0]).unwrap();
        assert_eq!((b.low, b.median, b.high), (1.25, 1.5, 1.75));
        assert_eq!(Band::of(&[]), None);
    }
}
