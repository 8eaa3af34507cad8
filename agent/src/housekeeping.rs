//! What the agent knows of its node between the session and the housekeeping loop
//! ([`NodeState`]: admitted pods, pressure, the latest usage, and what to report), and the
//! housekeeping loop itself ([`Housekeeping`]): every `--housekeeping-interval` it samples
//! usage, runs the eviction manager and evicts at most one pod. It runs whether or not
//! the scheduler is reachable, as kubelet's does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_proto::conditions::set_condition;
use berth_proto::model::{Pod, PodCondition, PodPhase, PodStatus, Time};
use berth_proto::names;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::{info, instrument, warn};

use crate::admission::Allocatable;
use crate::eviction::{Candidate, Eviction, EvictionManager, Signal};
use crate::runtime::{mark_terminated, PodReport, Runtime};
use crate::usage::{NodeSampler, NodeUsage};

/// Event type of evictions and refusals.
pub const EVENT_WARNING: &str = "Warning";
/// Most pods remembered as ended by the agent itself (evicted or refused).
const MAX_ENDED: usize = 10_000;

/// An event about a pod, for the scheduler to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodEvent {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub name: String,
    /// uid of the pod.
    pub uid: String,
    /// `Normal` or `Warning`.
    pub type_: String,
    /// Why (`Evicted`, `OutOfcpu`).
    pub reason: String,
    /// What happened.
    pub message: String,
}

/// The node's shared state.
pub struct NodeState {
    /// Name of the node.
    pub node_name: String,
    /// What the node offers to pods.
    pub allocatable: Allocatable,
    /// Pods admitted to the node, by uid; they leave when stopped or evicted.
    pods: Mutex<BTreeMap<String, Pod>>,
    /// Final statuses of pods the agent ended itself, by uid, so that a resent StartPod
    /// does not bring them back.
    ended: Mutex<BTreeMap<String, PodReport>>,
    /// Signals under pressure, from the last housekeeping round.
    pressure: Mutex<BTreeSet<Signal>>,
    statuses: mpsc::UnboundedSender<PodReport>,
    events: mpsc::UnboundedSender<PodEvent>,
    usage: watch::Sender<Option<NodeUsage>>,
}

/// The receiving ends of a [`NodeState`]'s reports, for the session.
pub struct Reports {
    /// Pod statuses to report.
    pub statuses: mpsc::UnboundedReceiver<PodReport>,
    /// Events to report.
    pub events: mpsc::UnboundedReceiver<PodEvent>,
}

impl NodeState {
    /// A node with nothing admitted; `statuses` is where runtimes send their pods' status
    /// changes too.
    pub fn new(
        node_name: String,
        allocatable: Allocatable,
    ) -> (Arc<NodeState>, Reports, mpsc::UnboundedSender<PodReport>) {
        let (statuses, statuses_rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let state = Arc::new(NodeState {
            node_name,
            allocatable,
            pods: Mutex::new(BTreeMap::new()),
            ended: Mutex::new(BTreeMap::new()),
            pressure: Mutex::new(BTreeSet::new()),
            statuses: statuses.clone(),
            events,
            usage: watch::channel(None).0,
        });
        (
            state,
            Reports {
                statuses: statuses_rx,
                events: events_rx,
            },
            statuses,
        )
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        // Every update is a single insert, remove or replace: a poisoned lock is consistent.
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a pod as admitted.
    pub fn admit(&self, pod: Pod) {
        Self::lock(&self.pods).insert(pod.metadata.uid.clone(), pod);
    }

    /// Forgets an admitted pod (stopped).
    pub fn forget(&self, uid: &str) {
        Self::lock(&self.pods).remove(uid);
    }

    /// Whether a pod is admitted.
    pub fn is_admitted(&self, uid: &str) -> bool {
        Self::lock(&self.pods).contains_key(uid)
    }

    /// The admitted pods that are still active (their runtime does not report them ended).
    pub fn active_pods(&self, runtime: &dyn Runtime) -> Vec<Pod> {
        Self::lock(&self.pods)
            .values()
            .filter(|p| {
                runtime
                    .report(&p.metadata.uid)
                    .is_none_or(|r| !r.status.phase.is_terminal())
            })
            .cloned()
            .collect()
    }

    /// The final status of a pod the agent ended itself, if it did.
    pub fn ended(&self, uid: &str) -> Option<PodReport> {
        Self::lock(&self.ended).get(uid).cloned()
    }

    /// Remembers a pod the agent ended (evicted, refused) and reports its final status.
    pub fn end(&self, report: PodReport) {
        let mut ended = Self::lock(&self.ended);
        if ended.len() >= MAX_ENDED {
            ended.clear();
        }
        ended.insert(report.uid.clone(), report.clone());
        drop(ended);
        self.forget(&report.uid);
        let _ = self.statuses.send(report);
    }

    /// Forgets that the agent ended a pod (the scheduler stopped it for good).
    pub fn clear_ended(&self, uid: &str) {
        Self::lock(&self.ended).remove(uid);
    }

    /// Reports an event.
    pub fn event(&self, event: PodEvent) {
        let _ = self.events.send(event);
    }

    /// Signals under pressure now (their node conditions are True).
    pub fn pressure(&self) -> BTreeSet<Signal> {
        Self::lock(&self.pressure).clone()
    }

    fn set_pressure(&self, pressure: BTreeSet<Signal>) {
        let mut current = Self::lock(&self.pressure);
        if *current != pressure {
            info!(node = %self.node_name, pressure = ?pressure.iter().map(|s| s.condition()).collect::<Vec<_>>(), "node pressure changed");
            *current = pressure;
        }
    }

    /// Watches the latest usage sample.
    pub fn subscribe_usage(&self) -> watch::Receiver<Option<NodeUsage>> {
        self.usage.subscribe()
    }
}

/// The housekeeping loop of one node.
pub struct Housekeeping {
    state: Arc<NodeState>,
    runtime: Arc<dyn Runtime>,
    sampler: NodeSampler,
    manager: EvictionManager,
    interval: Duration,
}

impl Housekeeping {
    /// A loop over `state` and `runtime`, sampling with `sampler` every `interval`.
    pub fn new(
        state: Arc<NodeState>,
        runtime: Arc<dyn Runtime>,
        sampler: NodeSampler,
        manager: EvictionManager,
        interval: Duration,
    ) -> Self {
        Housekeeping {
            state,
            runtime,
            sampler,
            manager,
            interval,
        }
    }

    /// Runs until `shutdown` fires; the first round comes one interval after the start.
    #[instrument(skip_all, fields(node = %self.state.node_name))]
    pub async fn run(mut self, shutdown: CancellationToken) {
        let start = tokio::time::Instant::now() + self.interval;
        let mut ticker = tokio::time::interval_at(start, self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = ticker.tick() => self.round().await,
            }
        }
    }

    /// One round: sample, decide, evict at most one pod.
    pub async fn round(&mut self) {
        let pods = self.state.active_pods(self.runtime.as_ref());
        let usages: Vec<_> = pods
            .iter()
            .filter_map(|p| self.runtime.usage(&p.metadata.uid))
            .collect();
        let usage = self.sampler.sample(usages);
        let candidates: Vec<Candidate<'_>> = pods
            .iter()
            .filter_map(|pod| {
                usage
                    .pods
                    .iter()
                    .find(|u| u.uid == pod.metadata.uid)
                    .map(|usage| Candidate { pod, usage })
            })
            .collect();
        let decision = self
            .manager
            .synchronize(Instant::now(), &usage.observations(), &candidates);
        let victim = decision.eviction.as_ref().and_then(|e| {
            pods.iter()
                .find(|p| p.metadata.uid == e.uid)
                .cloned()
                .map(|p| (p, e.clone()))
        });
        self.state.set_pressure(decision.pressure);
        self.state.usage.send_replace(Some(usage));
        if let Some((pod, eviction)) = victim {
            self.evict(pod, eviction).await;
        }
    }

    /// Stops a pod and reports it Failed with reason Evicted, with an Event.
    async fn evict(&self, pod: Pod, eviction: Eviction) {
        let uid = pod.metadata.uid.clone();
        // Hard thresholds give no grace period; soft ones give the pod's own.
        let grace = if eviction.hard {
            Duration::ZERO
        } else {
            Duration::from_secs(
                u64::try_from(pod.spec.termination_grace_period_seconds.unwrap_or(30)).unwrap_or(0),
            )
        };
        warn!(
            pod = %format_args!("{}/{}", pod.metadata.namespace, pod.metadata.name),
            signal = %eviction.signal,
            message = %eviction.message,
            "evicting pod"
        );
        let final_status = match self.runtime.stop(&uid, grace).await {
            Ok(status) => status.unwrap_or_default(),
            Err(e) => {
                warn!(pod = %uid, error = %crate::error::error_chain(&e), "stopping the evicted pod failed");
                PodStatus::default()
            }
        };
        let status = evicted_status(final_status, &eviction.message);
        self.state.end(PodReport {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: uid.clone(),
            status,
        });
        self.state.event(PodEvent {
            namespace: pod.metadata.namespace,
            name: pod.metadata.name,
            uid,
            type_: EVENT_WARNING.to_string(),
            reason: names::REASON_EVICTED.to_string(),
            message: eviction.message,
        });
    }
}

/// The final status of an evicted pod: Failed, reason Evicted, the message, and kubelet's
/// DisruptionTarget condition.
pub fn evicted_status(mut status: PodStatus, message: &str) -> PodStatus {
    let now = Time::now();
    status.phase = PodPhase::Failed;
    status.reason = names::REASON_EVICTED.to_string();
    status.message = message.to_string();
    mark_terminated(&mut status, now);
    let disruption = PodCondition {
        type_: names::CONDITION_DISRUPTION_TARGET.to_string(),
        status: names::STATUS_TRUE.to_string(),
        reason: names::REASON_TERMINATION_BY_KUBELET.to_string(),
        message: message.to_string(),
        ..PodCondition::default()
    };
    set_condition(&mut status.conditions, disruption, now);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eviction::{Threshold, ThresholdValue};
    use crate::runtime::SimRuntime;
    use berth_model::testing::PodBuilder;

    fn pod(name: &str, priority: i32, request: &str, usage: &str) -> Pod {
        let mut pod = PodBuilder::new(name)
            .uid(name)
            .priority(priority)
            .request("memory", request)
            .build();
        pod.metadata
            .annotations
            .insert(names::ANNOTATION_SIM_MEMORY_USAGE.into(), usage.into());
        pod
    }

    #[tokio::test]
    async fn evicts_one_pod_per_round_over_its_request_first() {
        let allocatable = Allocatable {
            cpu_millis: 4000,
            memory_bytes: 1 << 30,
            pods: 10,
        };
        let (state, mut reports, _) = NodeState::new("n".into(), allocatable);
        let runtime: Arc<dyn Runtime> = Arc::new(SimRuntime::new(""));
        for p in [
            pod("greedy", 0, "100Mi", "500Mi"),
            pod("important", 1000, "400Mi", "350Mi"),
        ] {
            runtime.start(&p).await.unwrap();
            state.admit(p);
        }
        let manager = EvictionManager::new(
            vec![Threshold {
                signal: Signal::MemoryAvailable,
                value: ThresholdValue::Quantity(200 << 20),
                grace_period: Duration::ZERO,
                min_reclaim: None,
            }],
            Duration::from_secs(60),
        );
        let mut housekeeping = Housekeeping::new(
            state.clone(),
            runtime.clone(),
            NodeSampler::Sim {
                memory_capacity: 1 << 30,
                nodefs_capacity: 1 << 40,
            },
            manager,
            Duration::from_secs(1),
        );
        // 1Gi - 850Mi = 174Mi available: under 200Mi.
        housekeeping.round().await;
        let report = reports
            .statuses
            .try_recv()
            .expect("the evicted pod's status");
        assert_eq!(report.uid, "greedy");
        assert_eq!(report.status.phase, PodPhase::Failed);
        assert_eq!(report.status.reason, names::REASON_EVICTED);
        assert!(
            report.status.message.starts_with(
                "The node was low on resource: memory. Threshold quantity: 200Mi, available: 174Mi."
            ),
            "{}",
            report.status.message
        );
        let conditions: Vec<(&str, &str, &str)> = report
            .status
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
            .collect();
        for want in [
            (names::CONDITION_READY, names::STATUS_FALSE, ""),
            (names::CONDITION_CONTAINERS_READY, names::STATUS_FALSE, ""),
            (
                names::CONDITION_DISRUPTION_TARGET,
                names::STATUS_TRUE,
                names::REASON_TERMINATION_BY_KUBELET,
            ),
        ] {
            assert!(conditions.contains(&want), "{want:?} in {conditions:?}");
        }
        assert!(report
            .status
            .container_statuses
            .iter()
            .all(|c| !c.ready && c.state.is_terminated()));
        let event = reports.events.try_recv().expect("an Evicted event");
        assert_eq!(
            (event.reason.as_str(), event.uid.as_str()),
            ("Evicted", "greedy")
        );
        assert!(state.pressure().contains(&Signal::MemoryAvailable));
        assert!(state.ended("greedy").is_some());
        assert_eq!(runtime.running(), vec!["important".to_string()]);

        // 674Mi available now: no more evictions, though the condition holds.
        housekeeping.round().await;
        assert!(reports.statuses.try_recv().is_err(), "one eviction only");
        assert!(state.pressure().contains(&Signal::MemoryAvailable));
        let usage = state.subscribe_usage().borrow().clone().expect("a sample");
        assert_eq!(usage.memory_available, (1 << 30) - (350 << 20));
    }
}
