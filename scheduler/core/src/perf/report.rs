//! What a benchmark run reports: throughput (average and percentiles of 1-second samples),
//! scheduling-attempt latency, and peak resident memory, printable as a table or as one JSON
//! object that scripts track (`berth bench -o json`).

use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// How the scheduler was driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Mode {
    /// The scheduling loop, store and writer in the benchmark's own process.
    #[serde(rename = "in-process")]
    InProcess,
    /// The `berth scheduler` process, pods over gRPC, simulated agents over their streams.
    #[serde(rename = "e2e")]
    EndToEnd,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::InProcess => "in-process",
            Mode::EndToEnd => "e2e",
        })
    }
}

/// Pods bound per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Throughput {
    /// Measured pods divided by the measured phase's duration.
    pub average: f64,
    /// Median of the 1-second samples.
    pub p50: f64,
    /// 90th percentile of the samples.
    pub p90: f64,
    /// 99th percentile of the samples.
    pub p99: f64,
    /// The samples, in order (the last one may cover less than a second).
    pub samples: Vec<f64>,
}

impl Throughput {
    /// Summarizes `samples` (pods/s per window) and the overall average `pods / elapsed`.
    pub fn new(samples: Vec<f64>, pods: usize, elapsed: Duration) -> Self {
        let average = if elapsed.is_zero() {
            0.0
        } else {
            pods as f64 / elapsed.as_secs_f64()
        };
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        Throughput {
            average,
            p50: percentile(&sorted, 0.50),
            p90: percentile(&sorted, 0.90),
            p99: percentile(&sorted, 0.99),
            samples,
        }
    }
}

/// The `q`-th percentile (nearest rank) of sorted values; 0 for none.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Scheduling-attempt latency, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median attempt.
    pub p50: f64,
    /// 99th percentile attempt.
    pub p99: f64,
    /// Attempts counted.
    pub attempts: u64,
}

/// One run's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// kube's workload name.
    pub workload: String,
    /// How the scheduler was driven.
    pub mode: Mode,
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Pods created (and, unless never-fitting, bound) before measuring.
    pub init_pods: usize,
    /// Pods whose binds were measured.
    pub measured_pods: usize,
    /// Length of the measured phase, from the first measured pod's creation to the last
    /// measured pod's bind.
    pub duration_seconds: f64,
    /// Binds per second.
    pub throughput: Throughput,
    /// Attempt latency.
    pub latency_ms: Latency,
    /// Peak resident set (VmHWM) of the scheduler's process, in bytes.
    pub peak_rss_bytes: u64,
    /// Remarks on the run (what the latency covers, what was not measured).
    pub notes: Vec<String>,
}

impl fmt::Display for Report {
    /// A short human-readable summary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} ({}): {} nodes, {} initial pods, {} measured pods in {:.2}s",
            self.workload,
            self.mode,
            self.nodes,
            self.init_pods,
            self.measured_pods,
            self.duration_seconds
        )?;
        let t = &self.throughput;
        writeln!(
            f,
            "  throughput (pods/s): average {:.0}, p50 {:.0}, p90 {:.0}, p99 {:.0} ({} samples)",
            t.average,
            t.p50,
            t.p90,
            t.p99,
            t.samples.len()
        )?;
        writeln!(
            f,
            "  attempt latency (ms): p50 {:.3}, p99 {:.3} ({} attempts)",
            self.latency_ms.p50, self.latency_ms.p99, self.latency_ms.attempts
        )?;
        writeln!(
            f,
            "  peak RSS: {:.1} MiB",
            self.peak_rss_bytes as f64 / (1024.0 * 1024.0)
        )?;
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        Ok(())
    }
}

/// Peak resident set size (`VmHWM`) of a process (`None`: this one), in bytes; `None` when
/// /proc is not readable.
pub fn peak_rss_bytes(pid: Option<u32>) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    parse_vm_hwm(&status)
}

/// `VmHWM:   12345 kB` → bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_samples() {
        struct Case {
            name: &'static str,
            samples: Vec<f64>,
            pods: usize,
            elapsed: Duration,
            want: (f64, f64, f64, f64),
        }
        let cases = [
            Case {
                name: "no samples",
                samples: vec![],
                pods: 0,
                elapsed: Duration::ZERO,
                want: (0.0, 0.0, 0.0, 0.0),
            },
            Case {
                name: "ten samples",
                samples: vec![10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0],
                pods: 55,
                elapsed: Duration::from_secs(10),
                want: (5.5, 5.0, 9.0, 10.0),
            },
        ];
        for case in cases {
            let t = Throughput::new(case.samples, case.pods, case.elapsed);
            assert_eq!((t.average, t.p50, t.p90, t.p99), case.want, "{}", case.name);
        }
    }

    #[test]
    fn vm_hwm() {
        struct Case {
            name: &'static str,
            status: &'static str,
            want: Option<u64>,
        }
        let cases = [
            Case {
                name: "present",
                status: "Name:\tx\nVmPeak:\t  100 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1 kB\n",
                want: Some(2048 * 1024),
            },
            Case {
                name: "absent",
                status: "Name:\tx\n",
                want: None,
            },
        ];
        for case in cases {
            assert_eq!(parse_vm_hwm(case.status), case.want, "{}", case.name);
        }
        assert!(peak_rss_bytes(None).is_some_and(|b| b > 0));
    }
}
