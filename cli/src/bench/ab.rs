//! `berth bench WORKLOAD --ab OTHER`: this binary (A) and another Berth binary (B) run the
//! same workload alternately (A, B, A, B, ...), each run a child process printing its
//! report as JSON, so that both see the same machine state; the result is both medians,
//! the ratio B/A and its spread over the rounds.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use tokio::process::Command;

use super::{BenchArgs, BenchOutput};

/// The figures of one run that the comparison keeps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    /// `throughput.average`, pods/s.
    pub throughput: f64,
    /// `latency_ms.p50`.
    pub attempt_p50_ms: f64,
    /// `peak_rss_bytes`.
    pub peak_rss_bytes: u64,
}

/// One side of the comparison: its binary and its runs in order.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The binary.
    pub binary: PathBuf,
    /// Each round's figures.
    pub runs: Vec<RunFigures>,
    /// Median throughput over the rounds.
    pub median_throughput: f64,
    /// Median attempt p50 over the rounds, ms.
    pub median_attempt_p50_ms: f64,
}

/// The comparison's result.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The workload, by kube's name.
    pub workload: String,
    /// Rounds (one run of each side per round).
    pub rounds: usize,
    /// This binary.
    pub a: Side,
    /// The other binary.
    pub b: Side,
    /// Median throughput of B over median throughput of A.
    pub ratio: f64,
    /// The smallest of the per-round ratios B/A.
    pub ratio_min: f64,
    /// The largest of the per-round ratios B/A.
    pub ratio_max: f64,
    /// Machine load (1-minute average) before the first and after the last run.
    pub load_before: Option<f64>,
    /// See `load_before`.
    pub load_after: Option<f64>,
}

/// The median of `values` (the mean of the two middle ones for an even count); 0 for none.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

impl Side {
    fn new(binary: PathBuf, runs: Vec<RunFigures>) -> Self {
        let of = |f: fn(&RunFigures) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        Side {
            median_throughput: of(|r| r.throughput),
            median_attempt_p50_ms: of(|r| r.attempt_p50_ms),
            binary,
            runs,
        }
    }
}

impl Comparison {
    /// The comparison of the runs of A and B, round by round.
    pub fn new(workload: String, a: Side, b: Side) -> Self {
        let ratios: Vec<f64> = a
            .runs
            .iter()
            .zip(&b.runs)
            .map(|(a, b)| ratio(b.throughput, a.throughput))
            .collect();
        Comparison {
            workload,
            rounds: ratios.len(),
            ratio: ratio(b.median_throughput, a.median_throughput),
            ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratio_max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            a,
            b,
            load_before: None,
            load_after: None,
        }
    }
}

fn ratio(b: f64, a: f64) -> f64 {
    if a > 0.0 {
        b / a
    } else {
        f64::NAN
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} A/B, {} rounds (A, B, A, B, ...), throughput.average in pods/s:",
            self.workload, self.rounds
        )?;
        for (name, side) in [("A", &self.a), ("B", &self.b)] {
            let runs: Vec<String> = side
                .runs
                .iter()
                .map(|r| format!("{:.0}", r.throughput))
                .collect();
            writeln!(
                f,
                "  {name} {}: median {:.0} ({}), attempt p50 median {:.3} ms",
                side.binary.display(),
                side.median_throughput,
                runs.join(", "),
                side.median_attempt_p50_ms
            )?;
        }
        writeln!(
            f,
            "  B/A: {:.3} (per-round ratios from {:.3} to {:.3})",
            self.ratio, self.ratio_min, self.ratio_max
        )?;
        if let (Some(before), Some(after)) = (self.load_before, self.load_after) {
            writeln!(f, "  load average: {before:.2} before, {after:.2} after")?;
        }
        Ok(())
    }
}

/// The machine's 1-minute load average, where /proc tells it.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The arguments of one child run: the workload and every flag of `args` that shapes the
/// run, with `-o json`.
fn child_args(args: &BenchArgs) -> Vec<String> {
    let mut out = vec!["bench".to_string(), args.workload.to_string()];
    if let Some(nodes) = args.nodes {
        out.extend(["--nodes".to_string(), nodes.to_string()]);
    }
    if let Some(pods) = args.init_pods {
        out.extend(["--init-pods".to_string(), pods.to_string()]);
    }
    if let Some(pods) = args.pods {
        out.extend(["--pods".to_string(), pods.to_string()]);
    }
    if args.e2e {
        out.push("--e2e".to_string());
    }
    if let Some(store) = &args.store {
        out.extend(["--store".to_string(), store.clone()]);
    }
    out.extend([
        "--seed".to_string(),
        args.seed.to_string(),
        "--batch".to_string(),
        args.batch.to_string(),
        "--timeout".to_string(),
        format!("{}s", args.timeout.as_secs().max(1)),
        "-o".to_string(),
        "json".to_string(),
    ]);
    out
}

/// One run of `binary` with `args`, its JSON report read back.
async fn run_once(binary: &Path, args: &[String]) -> Result<RunFigures> {
    let output = Command::new(binary)
        .args(args)
        .env_remove("BERTH_SERVER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("starting {}", binary.display()))?;
    if !output.status.success() {
        bail!(
            "{} {} failed ({}): {}",
            binary.display(),
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    figures(&stdout).with_context(|| {
        format!(
            "reading the JSON report of {} {}: {stdout}",
            binary.display(),
            args.join(" ")
        )
    })
}

/// The figures of a JSON report (its last non-empty line).
fn figures(stdout: &str) -> Result<RunFigures> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .context("no output")?;
    let report: serde_json::Value = serde_json::from_str(line)?;
    let number = |path: &[&str]| -> Result<f64> {
        let mut v = &report;
        for key in path {
            v = v
                .get(key)
                .with_context(|| format!("no {}", path.join(".")))?;
        }
        v.as_f64()
            .with_context(|| format!("{} is not a number", path.join(".")))
    };
    Ok(RunFigures {
        throughput: number(&["throughput", "average"])?,
        attempt_p50_ms: number(&["latency_ms", "p50"])?,
        peak_rss_bytes: number(&["peak_rss_bytes"]).unwrap_or(0.0) as u64,
    })
}

/// Runs the comparison and prints it.
pub async fn run(args: &BenchArgs, other: &Path, rounds: usize) -> Result<()> {
    if rounds == 0 {
        bail!("--rounds: must be at least 1");
    }
    if args.data_dir.is_some() {
        bail!("--data-dir: not with --ab (each run takes a temporary folder of its own)");
    }
    let this = std::env::current_exe().context("finding the berth executable")?;
    let other = other
        .canonicalize()
        .with_context(|| format!("--ab: {}", other.display()))?;
    let child = child_args(args);
    let load_before = load_average();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        for (name, binary, runs) in [("A", &this, &mut a), ("B", &other, &mut b)] {
            let figures = run_once(binary, &child).await?;
            tracing::info!(
                round,
                side = name,
                throughput = figures.throughput,
                "bench run done"
            );
            if args.output == BenchOutput::Text {
                eprintln!(
                    "round {round}/{rounds} {name}: {:.0} pods/s",
                    figures.throughput
                );
            }
            runs.push(figures);
        }
    }
    let mut comparison = Comparison::new(
        args.workload.to_string(),
        Side::new(this, a),
        Side::new(other, b),
    );
    comparison.load_before = load_before;
    comparison.load_after = load_average();
    match args.output {
        BenchOutput::Text => print!("{comparison}"),
        BenchOutput::Json => println!("{}", serde_json::to_string(&comparison)?),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(throughput: f64) -> RunFigures {
        RunFigures {
            throughput,
            attempt_p50_ms: 0.1,
            peak_rss_bytes: 0,
        }
    }

    #[test]
    fn medians_and_ratios() {
        for (values, want) in [
            (vec![], 0.0),
            (vec![3.0], 3.0),
            (vec![5.0, 1.0, 3.0], 3.0),
            (vec![4.0, 1.0, 3.0, 2.0], 2.5),
        ] {
            assert_eq!(median(&values), want, "{values:?}");
        }
        let a = Side::new("a".into(), vec![run(100.0), run(200.0), run(150.0)]);
        let b = Side::new("b".into(), vec![run(110.0), run(180.0), run(300.0)]);
        let c = Comparison::new("SchedulingBasic".into(), a, b);
        assert_eq!(c.rounds, 3);
        assert_eq!(
            (c.a.median_throughput, c.b.median_throughput),
            (150.0, 180.0)
        );
        assert!((c.ratio - 1.2).abs() < 1e-9, "{}", c.ratio);
        assert!((c.ratio_min - 0.9).abs() < 1e-9, "{}", c.ratio_min);
        assert!((c.ratio_max - 2.0).abs() < 1e-9, "{}", c.ratio_max);
    }

    #[test]
    fn figures_come_from_the_last_json_line() {
        let out = "warming up\n{\"throughput\":{\"average\":812.5},\"latency_ms\":{\"p50\":0.07},\"peak_rss_bytes\":1000}\n";
        assert_eq!(
            figures(out).expect("figures"),
            RunFigures {
                throughput: 812.5,
                attempt_p50_ms: 0.07,
                peak_rss_bytes: 1000
            }
        );
        let err = figures("{\"latency_ms\":{\"p50\":1}}").expect_err("no throughput");
        assert!(err.to_string().contains("throughput.average"), "{err}");
    }
}
