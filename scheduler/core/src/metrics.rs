//! The scheduler's metrics, by kube-scheduler's names, labels and buckets
//! (pkg/scheduler/metrics), recorded through the `metrics` facade.
//!
//! The core records through the facade and links no backend: with no recorder installed
//! (`berth sim`, the lab, tests) every call is a no-op, and a binary that wants them
//! (`berth-scheduler --metrics-listen`) installs the Prometheus recorder. This keeps one
//! call site per fact inside the shared attempt, instead of a second observer trait that
//! both drivers would have to forward. The bucket layouts live here too, so that the
//! exporter renders each histogram with kube's buckets from this one definition.

use std::time::Duration;

use crate::queue::SchedulingQueue;

/// Counter `scheduler_schedule_attempts_total{result, profile}`.
pub const SCHEDULE_ATTEMPTS: &str = "scheduler_schedule_attempts_total";
/// Histogram `scheduler_scheduling_attempt_duration_seconds{result, profile}`: the cycle
/// and the hand-off of the binding.
pub const ATTEMPT_DURATION: &str = "scheduler_scheduling_attempt_duration_seconds";
/// Histogram `scheduler_pod_scheduling_sli_duration_seconds{attempts}`: from a pod's first
/// attempt to the attempt that placed it.
pub const POD_SCHEDULING_SLI_DURATION: &str = "scheduler_pod_scheduling_sli_duration_seconds";
/// Histogram `scheduler_pod_scheduling_attempts`: attempts a placed pod took.
pub const POD_SCHEDULING_ATTEMPTS: &str = "scheduler_pod_scheduling_attempts";
/// Counter `scheduler_preemption_attempts_total`: PostFilter runs.
pub const PREEMPTION_ATTEMPTS: &str = "scheduler_preemption_attempts_total";
/// Histogram `scheduler_preemption_victims`: victims of each chosen preemption.
pub const PREEMPTION_VICTIMS: &str = "scheduler_preemption_victims";
/// Gauge `scheduler_pending_pods{queue}`: active, backoff, unschedulable, gated.
pub const PENDING_PODS: &str = "scheduler_pending_pods";
/// Summary `berth_scheduling_attempt_duration_seconds`: the attempt's duration again, as
/// quantiles (kube's histogram starts at 1 ms, coarser than Berth's attempts), read by
/// `berth bench --e2e`.
pub const ATTEMPT_DURATION_SUMMARY: &str = "berth_scheduling_attempt_duration_seconds";

/// `result` label values of [`SCHEDULE_ATTEMPTS`] and [`ATTEMPT_DURATION`].
pub mod result {
    /// The pod was placed.
    pub const SCHEDULED: &str = "scheduled";
    /// No node fits.
    pub const UNSCHEDULABLE: &str = "unschedulable";
    /// A plugin failed.
    pub const ERROR: &str = "error";
}

/// kube's `ExponentialBuckets(start, factor, count)`: `count` upper bounds from `start`.
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    std::iter::successors(Some(start), |b| Some(b * factor))
        .take(count)
        .collect()
}

/// Each kube histogram with its buckets, for the exporter.
pub fn histogram_buckets() -> Vec<(&'static str, Vec<f64>)> {
    vec![
        (ATTEMPT_DURATION, exponential_buckets(0.001, 2.0, 15)),
        (
            POD_SCHEDULING_SLI_DURATION,
            exponential_buckets(0.01, 2.0, 20),
        ),
        (POD_SCHEDULING_ATTEMPTS, exponential_buckets(1.0, 2.0, 5)),
        (PREEMPTION_VICTIMS, exponential_buckets(1.0, 2.0, 7)),
    ]
}

/// Registers the help texts (the exporter prints them as `# HELP`).
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        SCHEDULE_ATTEMPTS,
        "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem."
    );
    describe_histogram!(
        ATTEMPT_DURATION,
        Unit::Seconds,
        "Scheduling attempt latency in seconds (scheduling algorithm + handing the binding to the writer)"
    );
    describe_histogram!(
        POD_SCHEDULING_SLI_DURATION,
        Unit::Seconds,
        "E2e latency for a pod being scheduled, from its first scheduling attempt, which may involve multiple attempts."
    );
    describe_histogram!(
        POD_SCHEDULING_ATTEMPTS,
        "Number of attempts to successfully schedule a pod."
    );
    describe_counter!(
        PREEMPTION_ATTEMPTS,
        "Total preemption attempts in the cluster till now"
    );
    describe_histogram!(PREEMPTION_VICTIMS, "Number of selected preemption victims");
    describe_gauge!(
        PENDING_PODS,
        "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated."
    );
    describe_histogram!(
        ATTEMPT_DURATION_SUMMARY,
        Unit::Seconds,
        "Scheduling attempt latency in seconds, as quantiles over the last minutes"
    );
}

/// One attempt ended with `result` after `elapsed` (wall time), under `profile`.
pub fn attempt(result: &'static str, profile: &str, elapsed: Duration) {
    let labels = [
        ("result", result.to_string()),
        ("profile", profile.to_string()),
    ];
    metrics::counter!(SCHEDULE_ATTEMPTS, &labels).increment(1);
    metrics::histogram!(ATTEMPT_DURATION, &labels).record(elapsed.as_secs_f64());
    metrics::histogram!(ATTEMPT_DURATION_SUMMARY).record(elapsed.as_secs_f64());
}

/// A pod was placed at its `attempts`-th attempt, `since_first` after its first one.
pub fn pod_scheduled(attempts: u32, since_first: Duration) {
    metrics::histogram!(POD_SCHEDULING_SLI_DURATION, "attempts" => attempts_label(attempts))
        .record(since_first.as_secs_f64());
    metrics::histogram!(POD_SCHEDULING_ATTEMPTS).record(f64::from(attempts));
}

/// kube's attempts label: the count, capped at "15+" to bound the label's values.
pub fn attempts_label(attempts: u32) -> String {
    if attempts >= 15 {
        "15+".to_string()
    } else {
        attempts.to_string()
    }
}

/// The PostFilter ran; `victims` is the size of the preemption it chose, if any.
pub fn preemption(victims: Option<usize>) {
    metrics::counter!(PREEMPTION_ATTEMPTS).increment(1);
    if let Some(victims) = victims {
        metrics::histogram!(PREEMPTION_VICTIMS).record(victims as f64);
    }
}

/// Sets [`PENDING_PODS`] from the queue.
pub fn pending_pods(queue: &SchedulingQueue) {
    let (active, backoff, unschedulable, gated) = queue.pending_counts();
    for (place, count) in [
        ("active", active),
        ("backoff", backoff),
        ("unschedulable", unschedulable),
        ("gated", gated),
    ] {
        metrics::gauge!(PENDING_PODS, "queue" => place).set(count as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_bucket_layouts() {
        let cases: [(&str, Vec<f64>, &[f64]); 3] = [
            (
                "attempt duration: 1ms doubling, 15 buckets",
                exponential_buckets(0.001, 2.0, 15),
                &[0.001, 0.002, 0.004],
            ),
            (
                "victims: 1 to 64",
                exponential_buckets(1.0, 2.0, 7),
                &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
            ),
            ("none", exponential_buckets(1.0, 2.0, 0), &[]),
        ];
        for (name, got, prefix) in cases {
            assert_eq!(&got[..prefix.len()], prefix, "{name}");
        }
        let attempt = exponential_buckets(0.001, 2.0, 15);
        assert_eq!(attempt.len(), 15);
        assert!((attempt[14] - 16.384).abs() < 1e-9, "{attempt:?}");
    }

    #[test]
    fn attempts_label_is_capped() {
        for (attempts, want) in [(1, "1"), (14, "14"), (15, "15+"), (40, "15+")] {
            assert_eq!(attempts_label(attempts), want, "{attempts}");
        }
    }
}
