//! One scheduling attempt, shared by the live loop and `berth sim` (design.md, "One
//! scheduling attempt, two drivers"): [`Scheduler::schedule_one`] pops a pod, runs the cycle
//! over the snapshot with the nominated pods' room held, then assumes and binds, or evicts
//! the victims and nominates, and hands the pod back to the queue on failure. It reaches the
//! world only through the narrow [`Cluster`] trait (after Nomad's Planner): the live loop
//! implements it over the writer, the event recorder and the store, the simulator in memory
//! with a virtual clock.
//!
//! The per-pod bookkeeping both drivers need lives here too: the queue (hand-back after a
//! failure, cluster events after binds and evictions), the nominator (a nomination starts
//! with a preemption, ends with the bind, the pod's deletion, or an attempt that finds no
//! nomination), and the snapshot's assumed pods.
//!
//! Victims: the attempt removes them from the snapshot at once and asks the driver to end
//! them; the room is held for the preemptor by its nomination. (kube keeps victims on their
//! node until they have terminated; Berth frees their resources when the preemption is
//! decided, see the README's differences.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_model::model::Pod;

use crate::cycle::{Algorithm, Explanation, ScheduleOptions, ScheduleResult};
use crate::dra::state::ClaimUpdate;
use crate::framework::{DevicePreference, PluginError, PodInfo, Snapshot};
use crate::metrics::{self, result};
use crate::nominator::Nominator;
use crate::plugins::dynamic_resources;
use crate::profile::Profiles;
use crate::queue::{ClusterEvent, QueuedPod, SchedulingQueue};

/// kube's PodScheduled=False reason for a pod that fits nowhere.
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";

/// kube's PodScheduled=False reason for an attempt that failed with an error.
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";

/// What a driver does for the attempt: persist its decisions and tell the time.
pub trait Cluster {
    /// The current time: the wall clock live, the virtual clock in the simulator.
    fn now(&self) -> Instant;

    /// A popped pod, before its attempt: return it to run the attempt, or keep it (the
    /// simulator sets aside pods that cannot make progress). By default every pod runs.
    fn begin(&mut self, queued: QueuedPod) -> Option<QueuedPod> {
        Some(queued)
    }

    /// The pod is assumed on `node` (it is already on the node in the snapshot, and its
    /// nomination has ended, and `claims` hold in the snapshot's DRA state): write `claims`
    /// (each claim's new `status.allocation` and `status.reservedFor`, kube's PreBind),
    /// then, only if they were written, the binding. `explanation` is present when the
    /// scheduler explains.
    fn bind(
        &mut self,
        pod: &Arc<PodInfo>,
        node: &str,
        claims: &[ClaimUpdate],
        explanation: Option<Explanation>,
    );

    /// A preemption of `preemptor` on `node` chose these victims, already removed from the
    /// snapshot: end them.
    fn evict(&mut self, preemptor: &PodInfo, node: &str, victims: &[Arc<PodInfo>]);

    /// The attempt did not place the pod: record why (kube's PodScheduled=False condition,
    /// and a FailedScheduling event when [`Failure::event`]), with its nomination change in
    /// the same write, as kube's `updatePod` does.
    fn mark_unschedulable(&mut self, pod: &PodInfo, failure: Failure);
}

/// Why an attempt did not place its pod.
#[derive(Clone, Debug)]
pub struct Failure {
    /// kube's message (`0/3 nodes are available: ...`).
    pub message: String,
    /// The PodScheduled condition's reason: [`REASON_UNSCHEDULABLE`], or
    /// [`REASON_SCHEDULER_ERROR`] when a plugin failed.
    pub reason: &'static str,
    /// Whether kube records a FailedScheduling event for it (not for a missing profile).
    pub event: bool,
    /// What becomes of `status.nominatedNodeName`.
    pub nomination: NominationChange,
    /// Every node's verdict, when the scheduler explains.
    pub explanation: Option<Explanation>,
}

/// What an attempt does to the pod's nomination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NominationChange {
    /// It stays as it is.
    Keep,
    /// The pod is nominated to this node (its preemption made room there).
    Set(String),
    /// The pod's earlier nomination ends.
    Clear,
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The driver kept the popped pod ([`Cluster::begin`]).
    Skipped,
    /// Assumed and handed to [`Cluster::bind`].
    Bound {
        /// The node.
        node: String,
    },
    /// Fits nowhere; its preemption evicted this many pods on `node` and nominated it there.
    Preempted {
        /// The nominated node.
        node: String,
        /// Pods evicted.
        victims: usize,
    },
    /// Fits nowhere, and preemption did not help: back to the queue.
    Unschedulable,
    /// No profile serves the pod's schedulerName: not requeued (an update of the pod
    /// brings it back).
    NoProfile,
    /// A plugin failed: retried after back-off.
    Error,
}

/// The scheduler's state shared by both drivers: profiles, the tie-breaking algorithm, the
/// snapshot, the queue and the nominator. Drivers feed it the cluster's changes through the
/// bookkeeping methods and run [`Scheduler::schedule_one`] in a loop.
pub struct Scheduler {
    /// The profiles, by schedulerName.
    pub profiles: Profiles,
    /// Tie-breaking and the rotating start of the node search.
    pub algorithm: Algorithm,
    /// Nodes and the pods placed on them (bound or assumed).
    pub snapshot: Snapshot,
    /// Pending pods.
    pub queue: SchedulingQueue,
    /// Pods nominated to nodes.
    pub nominator: Nominator,
    /// Whether each attempt explains every node's verdict (`berth sim --explain`).
    pub explain: bool,
}

impl Scheduler {
    /// An empty scheduler whose queue takes its back-off settings from `profiles`
    /// (`podInitialBackoffSeconds`, `podMaxBackoffSeconds`) and whose tie-breaks follow
    /// `seed`.
    pub fn new(profiles: Profiles, seed: u64, explain: bool) -> Self {
        Scheduler {
            queue: SchedulingQueue::new(profiles.queue_config()),
            algorithm: Algorithm::new(seed),
            snapshot: Snapshot::new(),
            nominator: Nominator::new(),
            profiles,
            explain,
        }
    }

    /// Whether one of the profiles serves the pod's schedulerName (kube's
    /// `responsibleForPod`): pods of other schedulers are neither queued nor written to.
    pub fn is_responsible_for(&self, pod: &Pod) -> bool {
        self.profiles.get(&pod.spec.scheduler_name).is_some()
    }

    /// A pending pod was added or changed (`old` is the version seen before, if any): it is
    /// queued, or its queued copy updated, and its nomination follows
    /// `status.nominatedNodeName`.
    pub fn pod_pending(&mut self, info: Arc<PodInfo>, old: Option<&Pod>, now: Instant) {
        self.nominator.pod_updated(old, info.clone());
        if old.is_some() {
            self.queue.update(info, now);
        } else {
            self.queue.add(info, now);
        }
    }

    /// A pod no longer waits to be scheduled (deleted, terminating, or bound by someone
    /// else): it leaves the queue and the nominator.
    pub fn pod_gone(&mut self, uid: &str) {
        self.queue.delete(uid);
        self.nominator.remove(uid);
    }

    /// A placed pod left its node (deleted, ended, evicted): the room may help pods waiting.
    pub fn pod_removed(&mut self, uid: &str, now: Instant) {
        if self.snapshot.remove_pod(uid).is_some() {
            self.queue
                .move_all_to_active_or_backoff(ClusterEvent::PodDeleted, now);
        }
    }

    /// One attempt: pops the next pod at `cluster.now()` (after retrying pods unschedulable
    /// for too long) and schedules it. None when no pod is ready. Either way the queue's
    /// sizes go to `scheduler_pending_pods`.
    pub fn schedule_one(&mut self, cluster: &mut impl Cluster) -> Option<Attempt> {
        let now = cluster.now();
        self.queue.flush_unschedulable_leftover(now);
        let popped = self.queue.pop(now);
        let attempt = popped.map(|queued| match cluster.begin(queued) {
            Some(queued) => self.attempt(queued, cluster),
            None => Attempt::Skipped,
        });
        metrics::pending_pods(&self.queue);
        attempt
    }

    /// The attempt of a popped pod: cycle, then assume and bind, or the failure's handling.
    fn attempt(&mut self, mut queued: QueuedPod, cluster: &mut impl Cluster) -> Attempt {
        let info = queued.info.clone();
        let _span =
            tracing::info_span!("schedule", pod = %info.key(), attempt = queued.attempts).entered();
        let Some(profile) = self.profiles.get(&info.pod.spec.scheduler_name) else {
            let message = format!(
                "no scheduler profile named {:?}; this scheduler serves {}",
                info.pod.spec.scheduler_name,
                self.profiles.names().collect::<Vec<_>>().join(", ")
            );
            let failure = Failure {
                message,
                reason: REASON_UNSCHEDULABLE,
                event: false,
                nomination: NominationChange::Keep,
                explanation: None,
            };
            cluster.mark_unschedulable(&info, failure);
            return Attempt::NoProfile;
        };
        // Wall time, also under the simulator's virtual clock: the metric is the cost.
        let started = Instant::now();
        let profile_name = profile.scheduler_name.clone();
        let preempts = profile.post_filter.is_some() && !self.snapshot.is_empty();
        let options = ScheduleOptions {
            explain: self.explain,
        };
        let uses_devices = profile
            .filters
            .iter()
            .any(|f| f.name() == dynamic_resources::NAME);
        let result = self.algorithm.schedule_nominated(
            profile,
            &self.snapshot,
            &self.nominator,
            &info,
            &options,
        );
        let message = result.failure_message().unwrap_or_default();
        match result {
            ScheduleResult::Scheduled {
                node, explanation, ..
            } => {
                let preference = profile.device_preference.clone();
                let claims = match self.reserve(uses_devices, preference, &info, &node) {
                    Ok(claims) => claims,
                    Err(e) => {
                        metrics::attempt(result::ERROR, &profile_name, started.elapsed());
                        return self.failed(queued, e, cluster);
                    }
                };
                self.assume(&info, &node, &claims);
                cluster.bind(&info, &node, &claims, explanation);
                self.queue
                    .move_all_to_active_or_backoff(ClusterEvent::PodAdded, cluster.now());
                metrics::attempt(result::SCHEDULED, &profile_name, started.elapsed());
                let since_first = queued.initial_attempt.map_or(Duration::ZERO, |first| {
                    cluster.now().saturating_duration_since(first)
                });
                metrics::pod_scheduled(queued.attempts, since_first);
                Attempt::Bound { node }
            }
            ScheduleResult::Unschedulable {
                diagnosis,
                nomination,
                keeps_nomination,
                explanation,
                ..
            } => {
                if preempts {
                    metrics::preemption(nomination.as_ref().map(|n| n.victims.len()));
                }
                let (attempt, change) = match nomination {
                    Some(nomination) => {
                        let victims: Vec<Arc<PodInfo>> = nomination
                            .victims
                            .iter()
                            .filter_map(|v| self.snapshot.remove_pod(&v.uid).map(|(_, p)| p))
                            .collect();
                        cluster.evict(&info, &nomination.node, &victims);
                        if !victims.is_empty() {
                            // For the queue, a placed pod's deletion, which may help pods
                            // waiting on resources, the preemptor itself included.
                            self.queue.move_all_to_active_or_backoff(
                                ClusterEvent::PodDeleted,
                                cluster.now(),
                            );
                        }
                        queued.info = with_nomination(&info, &nomination.node);
                        self.nominator.add(queued.info.clone(), &nomination.node);
                        let attempt = Attempt::Preempted {
                            node: nomination.node.clone(),
                            victims: victims.len(),
                        };
                        (attempt, NominationChange::Set(nomination.node))
                    }
                    None if keeps_nomination => (Attempt::Unschedulable, NominationChange::Keep),
                    None => {
                        let was_nominated = self.nominator.remove(info.uid()).is_some()
                            || !info.pod.status.nominated_node_name.is_empty();
                        if was_nominated {
                            queued.info = with_nomination(&info, "");
                            (Attempt::Unschedulable, NominationChange::Clear)
                        } else {
                            (Attempt::Unschedulable, NominationChange::Keep)
                        }
                    }
                };
                let failure = Failure {
                    message,
                    reason: REASON_UNSCHEDULABLE,
                    event: true,
                    nomination: change,
                    explanation,
                };
                cluster.mark_unschedulable(&info, failure);
                self.queue.add_unschedulable(
                    queued,
                    diagnosis.unschedulable_plugins,
                    cluster.now(),
                );
                metrics::attempt(result::UNSCHEDULABLE, &profile_name, started.elapsed());
                attempt
            }
            ScheduleResult::Error(e) => {
                metrics::attempt(result::ERROR, &profile_name, started.elapsed());
                self.failed(queued, e, cluster)
            }
        }
    }

    /// An attempt that failed with an error: kube's message on the pod, retried after
    /// back-off.
    fn failed(&mut self, queued: QueuedPod, e: PluginError, cluster: &mut impl Cluster) -> Attempt {
        let info = queued.info.clone();
        tracing::warn!(pod = %info.key(), error = %e, "scheduling attempt failed");
        let failure = Failure {
            message: e.to_string(),
            reason: REASON_SCHEDULER_ERROR,
            event: true,
            nomination: NominationChange::Keep,
            explanation: None,
        };
        cluster.mark_unschedulable(&info, failure);
        self.queue.requeue_after_error(queued, cluster.now());
        Attempt::Error
    }

    /// kube's Reserve of the DynamicResources plugin (when the profile has it): the pod's
    /// claims allocated on `node` and reserved for the pod.
    fn reserve(
        &self,
        uses_devices: bool,
        preference: Option<Arc<dyn DevicePreference>>,
        info: &PodInfo,
        node: &str,
    ) -> Result<Vec<ClaimUpdate>, PluginError> {
        if !uses_devices || self.snapshot.dra().is_empty() {
            return Ok(Vec::new());
        }
        let Some(node_info) = self.snapshot.node(node) else {
            return Ok(Vec::new());
        };
        let preferred = preference
            .map(|p| p.preferred_devices(info, node_info, &self.snapshot))
            .unwrap_or_default();
        dynamic_resources::reserve(self.snapshot.dra(), info, node_info, &preferred)
    }

    /// Assume: the pod is on `node` in the snapshot at once with its claims' allocations,
    /// and its nomination ends.
    fn assume(&mut self, info: &Arc<PodInfo>, node: &str, claims: &[ClaimUpdate]) {
        if !claims.is_empty() {
            self.snapshot.dra_mut().assume(claims);
        }
        self.nominator.remove(info.uid());
        let mut pod = (*info.pod).clone();
        pod.spec.node_name = node.to_string();
        pod.status.nominated_node_name.clear();
        self.snapshot
            .add_pod(node, Arc::new(PodInfo::new(Arc::new(pod))));
    }
}

/// The pod with `status.nominatedNodeName` set to `node` (cleared when empty).
fn with_nomination(info: &PodInfo, node: &str) -> Arc<PodInfo> {
    let mut pod = (*info.pod).clone();
    pod.status.nominated_node_name = node.to_string();
    Arc::new(PodInfo::new(Arc::new(pod)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::NodeInfo;
    use crate::plugins::testing::{snapshot, Info, NodeBuilder, PodBuilder};

    /// A Nomad-style harness: the attempt over an in-memory snapshot, recording what it asks
    /// of the cluster, with a clock that never moves.
    struct Harness {
        now: Instant,
        log: Vec<String>,
    }

    impl Cluster for Harness {
        fn now(&self) -> Instant {
            self.now
        }

        fn bind(
            &mut self,
            pod: &Arc<PodInfo>,
            node: &str,
            claims: &[ClaimUpdate],
            _: Option<Explanation>,
        ) {
            let devices: Vec<String> = claims
                .iter()
                .flat_map(|c| c.claim.allocation.iter().flat_map(|a| &a.devices))
                .map(|d| d.id.device.to_string())
                .collect();
            let devices = if devices.is_empty() {
                String::new()
            } else {
                format!(" [{}]", devices.join(" "))
            };
            self.log
                .push(format!("bind {} {node}{devices}", pod.pod.metadata.name));
        }

        fn evict(&mut self, preemptor: &PodInfo, node: &str, victims: &[Arc<PodInfo>]) {
            let names: Vec<&str> = victims
                .iter()
                .map(|v| v.pod.metadata.name.as_str())
                .collect();
            self.log.push(format!(
                "evict {} {node} [{}]",
                preemptor.pod.metadata.name,
                names.join(" ")
            ));
        }

        fn mark_unschedulable(&mut self, pod: &PodInfo, failure: Failure) {
            let nomination = match failure.nomination {
                NominationChange::Keep => "keep".to_string(),
                NominationChange::Set(node) => format!("nominate {node}"),
                NominationChange::Clear => "clear".to_string(),
            };
            self.log.push(format!(
                "unschedulable {} {nomination}",
                pod.pod.metadata.name
            ));
        }
    }

    fn scheduler(nodes: &[NodeInfo]) -> (Scheduler, Harness) {
        let mut scheduler = Scheduler::new(Profiles::default(), 1, false);
        scheduler.snapshot = snapshot(nodes);
        let harness = Harness {
            now: Instant::now(),
            log: Vec::new(),
        };
        (scheduler, harness)
    }

    fn pending(scheduler: &mut Scheduler, pod: PodBuilder, nominated: &str, now: Instant) {
        let mut pod = pod.build();
        pod.status.nominated_node_name = nominated.into();
        scheduler.pod_pending(Arc::new(PodInfo::new(Arc::new(pod))), None, now);
    }

    fn run_all(scheduler: &mut Scheduler, harness: &mut Harness) -> Vec<String> {
        while scheduler.schedule_one(harness).is_some() {}
        std::mem::take(&mut harness.log)
    }

    #[test]
    fn nominated_room_is_held_for_pods_of_equal_or_higher_priority() {
        struct Case {
            name: &'static str,
            priority: i32,
            want: &'static [&'static str],
        }
        // `holder` (priority 10, 3 cpu) is nominated to n1 (4 cpu) and waits in the
        // unschedulable pods; `other` asks for 2 cpu.
        let cases = [
            Case {
                name: "lower priority: the room is held",
                priority: 5,
                want: &["unschedulable other keep"],
            },
            Case {
                name: "equal priority: the room is held",
                priority: 10,
                want: &["unschedulable other keep"],
            },
            Case {
                name: "higher priority: the nomination does not count",
                priority: 20,
                want: &["bind other n1"],
            },
        ];
        for case in cases {
            let (mut s, mut h) = scheduler(&[NodeBuilder::new("n1").cpu_millis(4000).info()]);
            let holder = PodBuilder::new("holder").priority(10).cpu_millis(3000);
            s.nominator.add(
                Arc::new(PodInfo::new(Arc::new({
                    let mut p = holder.build();
                    p.status.nominated_node_name = "n1".into();
                    p
                }))),
                "n1",
            );
            let other = PodBuilder::new("other")
                .priority(case.priority)
                .cpu_millis(2000);
            pending(&mut s, other, "", h.now);
            assert_eq!(run_all(&mut s, &mut h), case.want, "{}", case.name);
        }
    }

    /// n1 (4 cpu) runs `low` (priority 0, 3 cpu); `high` (priority 10, 3 cpu) is pending.
    fn low_pod_and_a_preemptor() -> (Scheduler, Harness) {
        let low = PodBuilder::new("low").priority(0).cpu_millis(3000);
        let (mut s, h) = scheduler(&[NodeBuilder::new("n1").cpu_millis(4000).with_pod(low).info()]);
        let high = PodBuilder::new("high").priority(10).cpu_millis(3000);
        pending(&mut s, high, "", h.now);
        (s, h)
    }

    #[test]
    fn a_preemptor_keeps_the_room_it_freed_and_binds_there() {
        let (mut s, mut h) = low_pod_and_a_preemptor();
        let got = run_all(&mut s, &mut h);
        assert_eq!(
            got,
            [
                "evict high n1 [low]",
                "unschedulable high nominate n1",
                "bind high n1"
            ],
            "the preemptor is retried at once (the queue is otherwise idle) and binds"
        );
        assert!(s.nominator.is_empty(), "the bind ends the nomination");

        // A pod of lower priority arriving between the preemption and the bind does not
        // take the room.
        let (mut s, mut h) = low_pod_and_a_preemptor();
        assert_eq!(
            s.schedule_one(&mut h),
            Some(Attempt::Preempted {
                node: "n1".into(),
                victims: 1
            })
        );
        pending(
            &mut s,
            PodBuilder::new("mid").priority(5).cpu_millis(2000),
            "",
            h.now,
        );
        let got = run_all(&mut s, &mut h);
        assert_eq!(
            got[2..],
            ["unschedulable mid keep", "bind high n1"],
            "{got:?}"
        );
    }

    #[test]
    fn pods_in_a_row_get_distinct_devices_and_a_shared_claim_follows_its_node() {
        use crate::plugins::testing::dra_snapshot;
        use berth_model::testing::{
            DeviceBuilder, DeviceClassBuilder, ResourceClaimBuilder, ResourceSliceBuilder,
        };
        let class = DeviceClassBuilder::new("gpu")
            .driver("gpu.berth.dev")
            .build();
        // n1 has two GPUs, n2 one.
        let slices = [
            ResourceSliceBuilder::new("n1", "gpu.berth.dev")
                .device(DeviceBuilder::new("gpu-0"))
                .device(DeviceBuilder::new("gpu-1"))
                .build(),
            ResourceSliceBuilder::new("n2", "gpu.berth.dev")
                .device(DeviceBuilder::new("gpu-0"))
                .build(),
        ];
        let claims: Vec<_> = ["c1", "c2", "c3", "c4", "shared"]
            .iter()
            .map(|n| ResourceClaimBuilder::new(n).request("gpu", "gpu").build())
            .collect();
        let (mut s, mut h) = scheduler(&[]);
        s.snapshot = dra_snapshot(
            &[NodeBuilder::new("n1"), NodeBuilder::new("n2")],
            &[class],
            &slices,
            &claims,
        );
        for (pod, claim) in [("p1", "c1"), ("p2", "c2"), ("p3", "c3"), ("p4", "c4")] {
            pending(
                &mut s,
                PodBuilder::new(pod).resource_claim("gpu", claim),
                "",
                h.now,
            );
        }
        let got = run_all(&mut s, &mut h);
        let bound: Vec<&String> = got.iter().filter(|l| l.starts_with("bind")).collect();
        assert_eq!(bound.len(), 3, "three devices, three pods: {got:?}");
        let mut devices: Vec<&str> = bound
            .iter()
            .map(|l| l.split_once(' ').map_or("", |(_, rest)| rest))
            .map(|rest| rest.split_once(' ').map_or("", |(_, d)| d))
            .collect();
        devices.sort_unstable();
        assert_eq!(
            devices,
            ["n1 [gpu-0]", "n1 [gpu-1]", "n2 [gpu-0]"],
            "{got:?}"
        );
        assert!(
            got.contains(&"unschedulable p4 keep".to_string()),
            "{got:?}"
        );

        // Two pods of one shared claim: the second follows the first's allocation.
        let (mut s, mut h) = scheduler(&[]);
        s.snapshot = dra_snapshot(
            &[NodeBuilder::new("n1"), NodeBuilder::new("n2")],
            &[DeviceClassBuilder::new("gpu")
                .driver("gpu.berth.dev")
                .build()],
            &slices[1..],
            &claims[4..],
        );
        for pod in ["a", "b"] {
            pending(
                &mut s,
                PodBuilder::new(pod).resource_claim("gpu", "shared"),
                "",
                h.now,
            );
        }
        let got = run_all(&mut s, &mut h);
        assert_eq!(got, ["bind a n2 [gpu-0]", "bind b n2 [gpu-0]"]);
        let shared = s.snapshot.dra().claim("default", "shared").expect("claim");
        let consumers: Vec<&str> = shared
            .reserved_for
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(consumers, ["a", "b"]);
    }

    #[test]
    fn a_failed_attempt_without_nomination_ends_the_earlier_one() {
        // Nominated to n1, which cannot take the pod and holds no victim.
        let (mut s, mut h) = scheduler(&[NodeBuilder::new("n1").cpu_millis(1000).info()]);
        pending(
            &mut s,
            PodBuilder::new("p").priority(10).cpu_millis(3000),
            "n1",
            h.now,
        );
        assert_eq!(s.nominator.node_of("default-p"), Some("n1"));
        assert_eq!(run_all(&mut s, &mut h), ["unschedulable p clear"]);
        assert!(s.nominator.is_empty());
    }
}
