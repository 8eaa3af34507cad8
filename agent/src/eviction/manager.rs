//! The [`EvictionManager`]: kubelet's eviction loop, one [`EvictionManager::synchronize`]
//! per housekeeping interval. It decides which thresholds are met (holding them while a
//! minimum reclaim is outstanding), which node conditions to report (held for the pressure
//! transition period), and which one pod, if any, to evict.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use berth_proto::model::Pod;
use berth_proto::Quantity;

use super::{Signal, Threshold};
use crate::admission::{container_request, pod_requests};
use crate::usage::PodUsage;

/// What the agent measured of one signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The signal.
    pub signal: Signal,
    /// The amount available now (bytes, or pids).
    pub available: i64,
    /// The total it is a part of, for percentage thresholds.
    pub capacity: i64,
}

/// A pod that may be evicted, with its measured usage.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// What it uses.
    pub usage: &'a PodUsage,
}

/// The pod chosen for eviction and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// uid of the pod.
    pub uid: String,
    /// The signal whose threshold made the eviction necessary.
    pub signal: Signal,
    /// Whether the threshold is hard (the pod gets no grace period).
    pub hard: bool,
    /// The pod's status message and Event message, as kubelet words it.
    pub message: String,
}

/// The outcome of one [`EvictionManager::synchronize`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Signals whose node condition (MemoryPressure, ...) is to be reported True.
    pub pressure: BTreeSet<Signal>,
    /// The pod to evict now, if any.
    pub eviction: Option<Eviction>,
}

/// State of one threshold between two synchronizations.
#[derive(Clone, Debug, Default)]
struct ThresholdState {
    /// Met at the last synchronization.
    met: bool,
    /// When it was first seen met, in its current stretch.
    first_observed: Option<Instant>,
}

/// Kubelet's eviction manager, for one node.
#[derive(Debug)]
pub struct EvictionManager {
    thresholds: Vec<Threshold>,
    states: Vec<ThresholdState>,
    transition_period: Duration,
    /// When each signal's threshold was last seen met, for the transition period.
    pressure_last_observed: BTreeMap<Signal, Instant>,
}

impl EvictionManager {
    /// A manager for `thresholds`; a node condition stays True until its signal has been
    /// clear for `transition_period` (kubelet's `--eviction-pressure-transition-period`).
    pub fn new(thresholds: Vec<Threshold>, transition_period: Duration) -> Self {
        EvictionManager {
            states: vec![ThresholdState::default(); thresholds.len()],
            thresholds,
            transition_period,
            pressure_last_observed: BTreeMap::new(),
        }
    }

    /// The thresholds, as configured.
    pub fn thresholds(&self) -> &[Threshold] {
        &self.thresholds
    }

    /// One round of the eviction loop at `now`: updates which thresholds are met, reports
    /// the node conditions, and, when a threshold is met past its grace period, picks at
    /// most one pod among `candidates` to evict, ranked as kubelet ranks them for the
    /// threshold's signal.
    pub fn synchronize(
        &mut self,
        now: Instant,
        observations: &[Observation],
        candidates: &[Candidate<'_>],
    ) -> Decision {
        for (threshold, state) in self.thresholds.iter().zip(self.states.iter_mut()) {
            let Some(obs) = observations.iter().find(|o| o.signal == threshold.signal) else {
                // No measurement: nothing can be said, so nothing is met.
                *state = ThresholdState::default();
                continue;
            };
            let quantity = threshold.value.resolve(obs.capacity);
            let below = obs.available < quantity;
            // A threshold met before stays met until the minimum reclaim is recovered.
            let reclaiming = state.met
                && threshold.min_reclaim.is_some_and(|r| {
                    obs.available < quantity.saturating_add(r.resolve(obs.capacity))
                });
            state.met = below || reclaiming;
            if state.met {
                state.first_observed.get_or_insert(now);
                self.pressure_last_observed.insert(threshold.signal, now);
            } else {
                state.first_observed = None;
            }
        }
        let pressure = self
            .pressure_last_observed
            .iter()
            .filter(|(_, last)| now.saturating_duration_since(**last) <= self.transition_period)
            .map(|(signal, _)| *signal)
            .collect();

        // The actionable thresholds: met for at least their grace period. Memory comes
        // first, then disk, then pids; hard before soft.
        let actionable = self
            .thresholds
            .iter()
            .zip(&self.states)
            .filter(|(t, s)| {
                s.met
                    && s.first_observed
                        .is_some_and(|first| now.saturating_duration_since(first) >= t.grace_period)
            })
            .map(|(t, _)| t)
            .min_by_key(|t| (t.signal, !t.is_hard()));
        let eviction = actionable.and_then(|threshold| {
            let obs = observations.iter().find(|o| o.signal == threshold.signal)?;
            let victim = rank(threshold.signal, candidates).into_iter().next()?;
            Some(Eviction {
                uid: victim.pod.metadata.uid.clone(),
                signal: threshold.signal,
                hard: threshold.is_hard(),
                message: eviction_message(threshold, obs, &victim),
            })
        });
        Decision { pressure, eviction }
    }
}

/// How much of a signal's resource a pod uses and requests.
fn usage_and_request(signal: Signal, c: &Candidate<'_>) -> (i64, i64) {
    let requests = pod_requests(c.pod);
    match signal {
        Signal::MemoryAvailable => (c.usage.memory_bytes, requests.memory_bytes),
        Signal::NodeFsAvailable => (c.usage.disk_bytes, requests.ephemeral_storage_bytes),
        // Pods do not request pids.
        Signal::PidAvailable => (c.usage.pids, 0),
    }
}

/// Orders candidates for eviction under pressure on `signal`, as kubelet does: for memory
/// and disk, pods using more than they request first, then lower priority first, then the
/// largest use above the request first; for pids, lower priority first, then the most
/// processes first. Ties go by namespace and name, so the order is stable.
pub fn rank<'a>(signal: Signal, candidates: &[Candidate<'a>]) -> Vec<Candidate<'a>> {
    let mut ranked = candidates.to_vec();
    ranked.sort_by_cached_key(|c| {
        let (usage, request) = usage_and_request(signal, c);
        let exceeds = match signal {
            Signal::PidAvailable => false,
            _ => usage > request,
        };
        (
            !exceeds,
            c.pod.spec.priority.unwrap_or(0),
            std::cmp::Reverse(usage - request),
            c.pod.metadata.namespace.clone(),
            c.pod.metadata.name.clone(),
        )
    });
    ranked
}

/// Kubelet's eviction message: the resource, the threshold and what is left, then each
/// container that uses more than it requests.
fn eviction_message(threshold: &Threshold, obs: &Observation, victim: &Candidate<'_>) -> String {
    let signal = threshold.signal;
    let resource = signal.resource();
    let quantity = threshold.value.resolve(obs.capacity);
    let mut message = format!(
        "The node was low on resource: {resource}. Threshold quantity: {}, available: {}.",
        Quantity::from_value(quantity),
        Quantity::from_value(obs.available)
    );
    if signal == Signal::PidAvailable {
        return message;
    }
    for container in &victim.pod.spec.containers {
        let Some(used) = victim
            .usage
            .containers
            .iter()
            .find(|u| u.name == container.name)
        else {
            continue;
        };
        let (used, request) = match signal {
            Signal::MemoryAvailable => (used.memory_bytes, container_request(container, "memory")),
            Signal::NodeFsAvailable => (
                used.disk_bytes,
                container_request(container, "ephemeral-storage"),
            ),
            Signal::PidAvailable => unreachable!("returned above"),
        };
        if used > request.value() {
            message.push_str(&format!(
                " Container {} was using {}, request is {request}, has larger consumption of {resource}.",
                container.name,
                Quantity::from_value(used),
            ));
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eviction::ThresholdValue;
    use crate::usage::ContainerUsage;
    use berth_model::testing::{container, PodBuilder};

    const MI: i64 = 1 << 20;

    fn pod(name: &str, priority: i32, memory_request: Option<&str>) -> Pod {
        let requests = memory_request.map(|r| ("memory", r));
        PodBuilder::new(name)
            .uid(&format!("uid-{name}"))
            .priority(priority)
            .container(container("main", requests.as_slice()))
            .build()
    }

    fn usage(memory_mib: i64, pids: i64) -> PodUsage {
        PodUsage {
            memory_bytes: memory_mib * MI,
            pids,
            containers: vec![ContainerUsage {
                name: "main".into(),
                memory_bytes: memory_mib * MI,
                ..ContainerUsage::default()
            }],
            ..PodUsage::default()
        }
    }

    fn hard(signal: Signal, value: ThresholdValue) -> Threshold {
        Threshold {
            signal,
            value,
            grace_period: Duration::ZERO,
            min_reclaim: None,
        }
    }

    #[test]
    fn ranking_order() {
        struct Case {
            name: &'static str,
            signal: Signal,
            // (name, priority, memory request, memory usage MiB, pids)
            pods: Vec<(&'static str, i32, Option<&'static str>, i64, i64)>,
            want: Vec<&'static str>,
        }
        let cases = vec![
            Case {
                name: "over request beats lower priority",
                signal: Signal::MemoryAvailable,
                pods: vec![
                    ("low-within", 0, Some("512Mi"), 100, 1),
                    ("high-over", 1000, Some("256Mi"), 700, 1),
                ],
                want: vec!["high-over", "low-within"],
            },
            Case {
                name: "among pods over request, lower priority first",
                signal: Signal::MemoryAvailable,
                pods: vec![
                    ("a-high", 100, Some("100Mi"), 900, 1),
                    ("b-low", 10, Some("100Mi"), 200, 1),
                ],
                want: vec!["b-low", "a-high"],
            },
            Case {
                name: "same priority: largest use above request first",
                signal: Signal::MemoryAvailable,
                pods: vec![
                    ("small", 0, Some("100Mi"), 150, 1),
                    ("big", 0, Some("100Mi"), 600, 1),
                    ("no-request", 0, None, 300, 1),
                ],
                want: vec!["big", "no-request", "small"],
            },
            Case {
                name: "all within requests: priority then margin",
                signal: Signal::MemoryAvailable,
                pods: vec![
                    ("p5", 5, Some("1Gi"), 10, 1),
                    ("p1-tight", 1, Some("100Mi"), 90, 1),
                    ("p1-loose", 1, Some("1Gi"), 10, 1),
                ],
                want: vec!["p1-tight", "p1-loose", "p5"],
            },
            Case {
                name: "pids: priority, then most processes",
                signal: Signal::PidAvailable,
                pods: vec![
                    ("many", 10, None, 0, 50),
                    ("few-low", 0, None, 0, 2),
                    ("more-low", 0, None, 0, 20),
                ],
                want: vec!["more-low", "few-low", "many"],
            },
        ];
        for case in cases {
            let pods: Vec<(Pod, PodUsage)> = case
                .pods
                .iter()
                .map(|(n, p, r, m, pids)| (pod(n, *p, *r), usage(*m, *pids)))
                .collect();
            let candidates: Vec<Candidate<'_>> = pods
                .iter()
                .map(|(pod, usage)| Candidate { pod, usage })
                .collect();
            let got: Vec<&str> = rank(case.signal, &candidates)
                .iter()
                .map(|c| c.pod.metadata.name.as_str())
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn synchronize_conditions_grace_reclaim_and_transition() {
        struct Step {
            at_secs: u64,
            available_mib: i64,
            want_pressure: bool,
            want_evict: bool,
        }
        struct Case {
            name: &'static str,
            threshold: Threshold,
            transition: Duration,
            steps: Vec<Step>,
        }
        let step = |at_secs, available_mib, want_pressure, want_evict| Step {
            at_secs,
            available_mib,
            want_pressure,
            want_evict,
        };
        let cases = vec![
            Case {
                name: "hard threshold acts at once, condition held for the transition period",
                threshold: hard(Signal::MemoryAvailable, ThresholdValue::Quantity(200 * MI)),
                transition: Duration::from_secs(30),
                steps: vec![
                    step(0, 500, false, false),
                    step(10, 100, true, true),
                    step(20, 500, true, false),
                    step(40, 500, true, false),
                    step(41, 500, false, false),
                ],
            },
            Case {
                name: "soft threshold waits for its grace period",
                threshold: Threshold {
                    grace_period: Duration::from_secs(30),
                    ..hard(Signal::MemoryAvailable, ThresholdValue::Quantity(200 * MI))
                },
                transition: Duration::ZERO,
                steps: vec![
                    step(0, 100, true, false),
                    step(20, 100, true, false),
                    step(30, 100, true, true),
                    step(40, 300, false, false),
                    step(50, 100, true, false),
                ],
            },
            Case {
                name: "minimum reclaim keeps the threshold met",
                threshold: Threshold {
                    min_reclaim: Some(ThresholdValue::Quantity(100 * MI)),
                    ..hard(Signal::MemoryAvailable, ThresholdValue::Quantity(200 * MI))
                },
                transition: Duration::ZERO,
                steps: vec![
                    step(0, 250, false, false),
                    step(1, 150, true, true),
                    step(2, 250, true, true),
                    step(3, 310, false, false),
                    step(4, 250, false, false),
                ],
            },
            Case {
                name: "percentage of capacity",
                threshold: hard(Signal::MemoryAvailable, ThresholdValue::Percentage(10.0)),
                transition: Duration::ZERO,
                steps: vec![step(0, 103, false, false), step(1, 101, true, true)],
            },
        ];
        let victim = pod("victim", 0, Some("64Mi"));
        let victim_usage = usage(100, 1);
        for case in cases {
            let start = Instant::now();
            let mut manager = EvictionManager::new(vec![case.threshold.clone()], case.transition);
            for s in &case.steps {
                let obs = [Observation {
                    signal: Signal::MemoryAvailable,
                    available: s.available_mib * MI,
                    capacity: 1024 * MI,
                }];
                let decision = manager.synchronize(
                    start + Duration::from_secs(s.at_secs),
                    &obs,
                    &[Candidate {
                        pod: &victim,
                        usage: &victim_usage,
                    }],
                );
                assert_eq!(
                    decision.pressure.contains(&Signal::MemoryAvailable),
                    s.want_pressure,
                    "{} at {}s: pressure",
                    case.name,
                    s.at_secs
                );
                assert_eq!(
                    decision.eviction.is_some(),
                    s.want_evict,
                    "{} at {}s: eviction",
                    case.name,
                    s.at_secs
                );
            }
        }
    }

    #[test]
    fn eviction_message_names_signal_threshold_and_usage() {
        let mut manager = EvictionManager::new(
            vec![hard(
                Signal::MemoryAvailable,
                ThresholdValue::Quantity(100 * MI),
            )],
            Duration::ZERO,
        );
        let over = pod("over", 0, Some("256Mi"));
        let over_usage = usage(700, 1);
        let decision = manager.synchronize(
            Instant::now(),
            &[Observation {
                signal: Signal::MemoryAvailable,
                available: 50 * MI,
                capacity: 1024 * MI,
            }],
            &[Candidate {
                pod: &over,
                usage: &over_usage,
            }],
        );
        let eviction = decision.eviction.expect("an eviction");
        assert_eq!(eviction.uid, "uid-over");
        assert!(eviction.hard);
        assert_eq!(
            eviction.message,
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. \
             Container main was using 700Mi, request is 256Mi, has larger consumption of memory."
        );
    }
}
