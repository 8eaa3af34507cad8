//! What a lab run records and how runs are summarised: one [`Sample`] after each arrival
//! (or each interval), binned per whole arrived percent, then the median and the 25–75%
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
    /// `field` of the samples averaged within each whole percent of arrived GPU (bin `x`
    /// holds the samples from x% to just below x+1%). A run that ends short of a whole
    /// percent, as the artifact's arrivals end just short of the fill level (the draw that
    /// would pass it is not added), also reports its final state at that percent when no
    /// sample reached it.
    pub fn by_arrived(&self, field: impl Fn(&Sample) -> f64) -> BTreeMap<u64, f64> {
        let mut bins: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
        for s in &self.samples {
            let bin = bins
                .entry(s.arrived_gpu_pct.floor().max(0.0) as u64)
                .or_default();
            bin.0 += field(s);
            bin.1 += 1;
        }
        if let Some(last) = self.samples.last() {
            let reached = last.arrived_gpu_pct.max(0.0).ceil() as u64;
            bins.entry(reached).or_insert((field(last), 1));
        }
        bins.into_iter()
            .map(|(x, (sum, n))| (x, sum / f64::from(n)))
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
        let a = run(1, &[(99.2, 10.0), (99.9, 8.0), (100.1, 7.0)]);
        let b = run(2, &[(99.5, 6.0), (100.7, 5.0)]);
        let c = run(3, &[(99.0, 2.0)]);
        assert_eq!(
            a.by_arrived(|s| s.unallocated_gpu_pct),
            BTreeMap::from([(99, 9.0), (100, 7.0), (101, 7.0)]),
            "the end state also stands at the next whole percent"
        );
        let exact = run(4, &[(129.2, 5.0), (130.0, 4.0)]);
        assert_eq!(
            exact.by_arrived(|s| s.unallocated_gpu_pct),
            BTreeMap::from([(129, 5.0), (130, 4.0)]),
            "a run that reaches a whole percent exactly ends there"
        );
        let short = run(5, &[(128.5, 6.0), (129.9, 5.0)]);
        assert_eq!(
            short.by_arrived(|s| s.unallocated_gpu_pct)[&130],
            5.0,
            "a run that stops just short of 130% reports its end state there"
        );
        let s = summarise(&[&a, &b, &c]);
        assert_eq!(s.seeds, vec![1, 2, 3]);
        assert_eq!(s.unallocated_gpu_pct["99"], 6.0);
        assert_eq!(s.unallocated_gpu_pct["100"], 6.0);
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
