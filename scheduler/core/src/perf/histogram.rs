//! A lock-free latency histogram with log-linear buckets (about 3% resolution from 1 µs to
//! hours), so the scheduling loop can record every attempt's duration at the cost of one
//! atomic add, and a benchmark can read percentiles at any time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Sub-buckets per power of two: the relative width of a bucket is at most 1/32.
const SUB_BUCKET_BITS: u32 = 5;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;
/// Values are microseconds; 40 powers of two reach about 12 days.
const MAX_EXPONENT: u32 = 40;
const BUCKETS: usize = ((MAX_EXPONENT + 1) as usize) * SUB_BUCKETS as usize;

/// Durations in microseconds, counted into log-linear buckets. All methods take `&self`:
/// one histogram is shared between the thread that records and the ones that read.
pub struct LatencyHistogram {
    counts: Box<[AtomicU64]>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count())
            .finish()
    }
}

/// Bucket of a value in microseconds: values below `SUB_BUCKETS` have a bucket each; above,
/// each power of two is cut into `SUB_BUCKETS` equal parts.
fn bucket_of(micros: u64) -> usize {
    if micros < SUB_BUCKETS {
        return micros as usize;
    }
    let exponent = 63 - micros.leading_zeros(); // >= SUB_BUCKET_BITS
    let shift = exponent - SUB_BUCKET_BITS;
    let sub = (micros >> shift) - SUB_BUCKETS; // 0..SUB_BUCKETS
    let index = (u64::from(shift) + 1) * SUB_BUCKETS + sub;
    (index as usize).min(BUCKETS - 1)
}

/// The largest value (µs) that falls into bucket `index`.
fn bucket_upper(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB_BUCKETS {
        return index;
    }
    let shift = index / SUB_BUCKETS - 1;
    let sub = index % SUB_BUCKETS;
    ((SUB_BUCKETS + sub + 1) << shift) - 1
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LatencyHistogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Counts one duration.
    pub fn record(&self, duration: Duration) {
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        self.counts[bucket_of(micros)].fetch_add(1, Ordering::Relaxed);
    }

    /// Number of durations recorded since the last [`LatencyHistogram::reset`].
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Forgets every recorded duration.
    pub fn reset(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// The duration below or at which a share `q` (0.0..=1.0) of the recorded durations
    /// fall, rounded up to its bucket's upper bound; `None` when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        // The rank of the q-quantile, 1-based, at least the first value.
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, &n) in counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(Duration::from_micros(bucket_upper(index)));
            }
        }
        Some(Duration::from_micros(bucket_upper(BUCKETS - 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_contain_their_values() {
        struct Case {
            name: &'static str,
            micros: u64,
        }
        let cases = [
            Case {
                name: "zero",
                micros: 0,
            },
            Case {
                name: "small exact",
                micros: 31,
            },
            Case {
                name: "first log bucket",
                micros: 32,
            },
            Case {
                name: "odd",
                micros: 1_234,
            },
            Case {
                name: "one second",
                micros: 1_000_000,
            },
            Case {
                name: "large",
                micros: 987_654_321,
            },
        ];
        for case in cases {
            let b = bucket_of(case.micros);
            assert!(
                bucket_upper(b) >= case.micros,
                "{}: upper bound below value",
                case.name
            );
            if b > 0 {
                assert!(
                    bucket_upper(b - 1) < case.micros,
                    "{}: previous bucket holds the value",
                    case.name
                );
            }
            // Resolution: the bucket is at most ~3% wider than its lower end.
            let upper = bucket_upper(b) as f64;
            assert!(
                upper <= (case.micros as f64) * 1.04 + 1.0,
                "{}: bucket too wide ({upper} for {})",
                case.name,
                case.micros
            );
        }
    }

    #[test]
    fn quantiles() {
        struct Case {
            name: &'static str,
            values_micros: Vec<u64>,
            q: f64,
            want_micros: Option<u64>,
        }
        let cases = [
            Case {
                name: "empty",
                values_micros: vec![],
                q: 0.5,
                want_micros: None,
            },
            Case {
                name: "median of 1..=9",
                values_micros: (1..=9).collect(),
                q: 0.5,
                want_micros: Some(5),
            },
            Case {
                name: "p99 of 99 small and one large",
                values_micros: std::iter::repeat_n(10, 99).chain([5_000]).collect(),
                q: 0.99,
                want_micros: Some(10),
            },
            Case {
                name: "max",
                values_micros: std::iter::repeat_n(10, 99).chain([20]).collect(),
                q: 1.0,
                want_micros: Some(20),
            },
        ];
        for case in cases {
            let h = LatencyHistogram::new();
            for v in &case.values_micros {
                h.record(Duration::from_micros(*v));
            }
            assert_eq!(
                h.quantile(case.q),
                case.want_micros.map(Duration::from_micros),
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn reset_forgets() {
        let h = LatencyHistogram::new();
        h.record(Duration::from_millis(3));
        assert_eq!(h.count(), 1);
        h.reset();
        assert_eq!(h.count(), 0);
        assert_eq!(h.quantile(0.5), None);
    }
}
