//! The scheduling queue: kube-scheduler's PriorityQueue. A pending pod waits in one of four
//! places: the active queue (ready, highest priority first, then earliest timestamp), the
//! back-off queue (tried recently, waiting out an exponential back-off), the unschedulable
//! pods (waiting for a cluster event that could help, or for the 5-minute flush), and the
//! gated pods (`spec.schedulingGates` not yet removed).
//!
//! Time is an argument (`now`) rather than read from a clock, so the scheduling loop, the
//! simulator and the tests all decide what time it is.
//!
//! Back-off comes in two kinds, as in kube: pods rejected by plugins back off in one queue,
//! pods whose attempt failed with an error (or blamed no plugin) in another. When the active
//! queue is empty, the next pod is taken from the first kind even before its back-off ends
//! (kube's SchedulerPopFromBackoffQ, on by default since 1.33), so an idle scheduler does
//! not wait out back-off that protects nobody; error back-off is always waited out.
//!
//! Queueing hints: a pod that failed remembers which plugins rejected it, and a
//! [`ClusterEvent`] moves it only if the event may change one of those plugins' verdicts
//! (see [`ClusterEvent::may_help`]), as kube's `EventsToRegister` do.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_model::model::Pod;

use crate::framework::PodInfo;

/// Back-off and flush settings (kube's `podInitialBackoffSeconds`, `podMaxBackoffSeconds`
/// and `podMaxInUnschedulablePodsDuration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// Back-off after the first failed attempt; doubles with each further attempt.
    pub initial_backoff: Duration,
    /// The longest back-off.
    pub max_backoff: Duration,
    /// How long a pod may sit among the unschedulable pods before it is retried anyway.
    pub max_unschedulable_duration: Duration,
    /// Whether [`SchedulingQueue::pop`] takes a pod rejected by plugins from back-off when no
    /// pod is active (kube's SchedulerPopFromBackoffQ feature gate, on by default).
    pub pop_from_backoff: bool,
}

impl Default for QueueConfig {
    /// kube's defaults: 1 s, 10 s, 5 min, popping from back-off when idle.
    fn default() -> Self {
        QueueConfig {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            max_unschedulable_duration: Duration::from_secs(5 * 60),
            pop_from_backoff: true,
        }
    }
}

impl QueueConfig {
    /// The back-off after `attempts` scheduling attempts: none before the first attempt,
    /// then `initial_backoff * 2^(attempts-1)`, capped at `max_backoff`.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let mut duration = self.initial_backoff;
        for _ in 1..attempts {
            // Compare before doubling so that a large attempt count cannot overflow.
            if duration > self.max_backoff.saturating_sub(duration) {
                return self.max_backoff;
            }
            duration += duration;
        }
        duration
    }
}

/// A pod taken from (or handed back to) the queue, with its scheduling history.
#[derive(Clone, Debug)]
pub struct QueuedPod {
    /// The pod.
    pub info: Arc<PodInfo>,
    /// Scheduling attempts so far, counting the current one: [`SchedulingQueue::pop`]
    /// increments it, as kube does, so the first popped attempt reads 1.
    pub attempts: u32,
    /// When the pod was first popped.
    pub initial_attempt: Option<Instant>,
    /// When the pod was added, or last handed back after a failed attempt. The active queue
    /// orders by priority, then this; back-off runs from it.
    pub timestamp: Instant,
    /// The scheduling cycle (pop count) of the pod's latest attempt; 0 before any. Tells
    /// whether a cluster event arrived while the attempt was running.
    pub cycle: u64,
}

/// A change in the cluster that may make unschedulable pods schedulable. Pod events are
/// about pods assigned to nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterEvent {
    /// A node joined.
    NodeAdded,
    /// A node changed: labels, taints, cordon, allocatable or conditions.
    NodeUpdated,
    /// A node left.
    NodeDeleted,
    /// A pod was bound (or assumed) to a node.
    PodAdded,
    /// An assigned pod changed (labels, or resources scaled down).
    PodUpdated,
    /// An assigned pod was deleted, evicted or preempted.
    PodDeleted,
    /// A DeviceClass, ResourceSlice or ResourceClaim was added, changed or deleted.
    DeviceChanged,
}

impl ClusterEvent {
    /// Whether this event may change the verdict of `plugin` for a pod it rejected, after
    /// kube's `EventsToRegister`:
    ///
    /// | plugin | events |
    /// | --- | --- |
    /// | NodeName | NodeAdded |
    /// | NodeUnschedulable, TaintToleration, NodeAffinity | NodeAdded, NodeUpdated |
    /// | NodeResourcesFit | NodeAdded, NodeUpdated, PodUpdated, PodDeleted |
    /// | NodePorts | NodeAdded, PodDeleted |
    /// | InterPodAffinity | every event but NodeDeleted |
    /// | PodTopologySpread | every event |
    /// | DynamicResources | every event |
    ///
    /// Any other plugin is assumed to care about every event, so that no pod is stranded.
    pub fn may_help(self, plugin: &str) -> bool {
        use ClusterEvent::*;
        match plugin {
            "NodeName" => matches!(self, NodeAdded),
            "NodeUnschedulable" | "TaintToleration" | "NodeAffinity" => {
                matches!(self, NodeAdded | NodeUpdated)
            }
            "NodeResourcesFit" => matches!(self, NodeAdded | NodeUpdated | PodUpdated | PodDeleted),
            "NodePorts" => matches!(self, NodeAdded | PodDeleted),
            "InterPodAffinity" => !matches!(self, NodeDeleted | DeviceChanged),
            _ => true,
        }
    }
}

/// Tie-breaker among entries with equal keys: insertion order.
type Seq = u64;

/// Active-queue order: priority descending, then timestamp ascending.
type ActiveKey = (Reverse<i32>, Instant, Seq);

/// Order of the other places: an instant (back-off expiry or timestamp).
type TimeKey = (Instant, Seq);

/// Where a queued pod is, with its key there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Active(ActiveKey),
    Backoff(TimeKey),
    ErrorBackoff(TimeKey),
    Unschedulable(TimeKey),
    Gated(TimeKey),
}

/// Where to put a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Active,
    Backoff,
    Unschedulable,
    Gated,
}

struct Entry {
    pod: QueuedPod,
    place: Place,
    /// Plugins that rejected the pod in its latest attempt (for queueing hints).
    unschedulable_plugins: HashSet<&'static str>,
}

/// kube's PriorityQueue: active queue, back-off queue, unschedulable pods and gated pods,
/// each pod in exactly one of them. Pods are identified by uid.
pub struct SchedulingQueue {
    config: QueueConfig,
    entries: HashMap<String, Entry>,
    active: BTreeMap<ActiveKey, String>,
    /// Pods rejected by plugins, keyed by back-off expiry.
    backoff: BTreeMap<TimeKey, String>,
    /// Pods whose attempt failed with an error or blamed no plugin, keyed by back-off expiry.
    error_backoff: BTreeMap<TimeKey, String>,
    /// Keyed by timestamp (the failed attempt's end).
    unschedulable: BTreeMap<TimeKey, String>,
    /// Keyed by timestamp (when added).
    gated: BTreeMap<TimeKey, String>,
    next_seq: Seq,
    /// Number of pops so far.
    scheduling_cycle: u64,
    /// The scheduling cycle at the latest cluster event; pods whose attempt started at or
    /// before it go to back-off rather than to the unschedulable pods (kube's
    /// moveRequestCycle). 0 means none yet, as cycles start at 1.
    move_request_cycle: u64,
}

impl SchedulingQueue {
    /// An empty queue.
    pub fn new(config: QueueConfig) -> Self {
        SchedulingQueue {
            config,
            entries: HashMap::new(),
            active: BTreeMap::new(),
            backoff: BTreeMap::new(),
            error_backoff: BTreeMap::new(),
            unschedulable: BTreeMap::new(),
            gated: BTreeMap::new(),
            next_seq: 0,
            scheduling_cycle: 0,
            move_request_cycle: 0,
        }
    }

    /// The settings.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// A new pending pod: to the active queue, or among the gated pods if it has scheduling
    /// gates. A pod already queued is updated instead.
    pub fn add(&mut self, pod: Arc<PodInfo>, now: Instant) {
        if self.entries.contains_key(pod.uid()) {
            self.update(pod, now);
            return;
        }
        let target = if is_gated(&pod.pod) {
            Target::Gated
        } else {
            Target::Active
        };
        let queued = QueuedPod {
            info: pod,
            attempts: 0,
            initial_attempt: None,
            timestamp: now,
            cycle: 0,
        };
        self.insert(queued, HashSet::new(), target);
    }

    /// A queued pod changed. A gated pod whose gates are all gone becomes active; an
    /// unschedulable pod whose labels, annotations or spec changed is retried (after its
    /// back-off); elsewhere the pod keeps its place, re-sorted if its priority changed. A pod
    /// not in the queue is added, as kube does: callers pass only pods still pending.
    pub fn update(&mut self, pod: Arc<PodInfo>, now: Instant) {
        let Some((mut queued, plugins, place)) = self.take(pod.uid()) else {
            self.add(pod, now);
            return;
        };
        let changed = is_pod_updated(&queued.info.pod, &pod.pod);
        queued.info = pod;
        match place {
            Place::Gated(_) if is_gated(&queued.info.pod) => {
                self.insert(queued, plugins, Target::Gated);
            }
            Place::Gated(_) => self.insert(queued, plugins, Target::Active),
            Place::Active(_) => self.insert(queued, plugins, Target::Active),
            Place::Backoff(_) | Place::ErrorBackoff(_) => {
                self.insert(queued, plugins, Target::Backoff);
            }
            Place::Unschedulable(_) if changed => {
                self.move_to_active_or_backoff(queued, plugins, now);
            }
            Place::Unschedulable(_) => self.insert(queued, plugins, Target::Unschedulable),
        }
    }

    /// Forgets a pod (deleted, or bound by someone else). Unknown uids are ignored.
    pub fn delete(&mut self, uid: &str) {
        self.take(uid);
    }

    /// The next pod to schedule: highest priority, then earliest timestamp. Pods whose
    /// back-off has expired by `now` join the active queue first. With nothing active, the
    /// pod rejected by plugins whose back-off ends first is taken at once (see
    /// [`QueueConfig::pop_from_backoff`]). Counts the attempt.
    pub fn pop(&mut self, now: Instant) -> Option<QueuedPod> {
        self.flush_backoff_completed(now);
        let next = match self.active.first_key_value() {
            Some((_, uid)) => Some(uid),
            None if self.config.pop_from_backoff => self.backoff.first_key_value().map(|(_, u)| u),
            None => None,
        };
        let uid = next?.clone();
        let (mut queued, _, _) = self.take(&uid).expect("queued pods are indexed");
        queued.attempts += 1;
        queued.initial_attempt.get_or_insert(now);
        self.scheduling_cycle += 1;
        queued.cycle = self.scheduling_cycle;
        Some(queued)
    }

    /// Hands back a pod that fit nowhere, with the plugins that rejected it. It waits among
    /// the unschedulable pods for an event that may help, unless an event already arrived
    /// during its attempt, or no plugin is to blame: then it goes to back-off (kube's
    /// AddUnschedulableIfNotPresent). A pod already back in the queue (re-added by an
    /// update meanwhile) is left where it is. Callers must not hand back a pod they know
    /// was deleted during its attempt.
    pub fn add_unschedulable(
        &mut self,
        mut pod: QueuedPod,
        unschedulable_plugins: HashSet<&'static str>,
        now: Instant,
    ) {
        if self.entries.contains_key(pod.info.uid()) {
            tracing::debug!(pod = %pod.info.key(), "pod already queued; keeping the queued copy");
            return;
        }
        pod.timestamp = now;
        let event_during_attempt = self.move_request_cycle >= pod.cycle;
        if event_during_attempt || unschedulable_plugins.is_empty() {
            self.insert(pod, unschedulable_plugins, Target::Backoff);
        } else {
            self.insert(pod, unschedulable_plugins, Target::Unschedulable);
        }
    }

    /// Hands back a pod whose attempt failed with an error (a plugin or bind failure): it is
    /// retried after its back-off.
    pub fn requeue_after_error(&mut self, mut pod: QueuedPod, now: Instant) {
        if self.entries.contains_key(pod.info.uid()) {
            tracing::debug!(pod = %pod.info.key(), "pod already queued; keeping the queued copy");
            return;
        }
        pod.timestamp = now;
        self.insert(pod, HashSet::new(), Target::Backoff);
    }

    /// A cluster event happened: every unschedulable pod it may help (see
    /// [`ClusterEvent::may_help`]) moves to the back-off queue if still backing off, else
    /// to the active queue. Pods being scheduled right now will go to back-off when handed
    /// back. Gated pods stay gated.
    pub fn move_all_to_active_or_backoff(&mut self, event: ClusterEvent, now: Instant) {
        self.move_request_cycle = self.scheduling_cycle;
        let helped: Vec<String> = self
            .unschedulable
            .values()
            .filter(|uid| {
                let plugins = &self.entries[uid.as_str()].unschedulable_plugins;
                plugins.is_empty() || plugins.iter().any(|p| event.may_help(p))
            })
            .cloned()
            .collect();
        if !helped.is_empty() {
            tracing::debug!(?event, pods = helped.len(), "moving unschedulable pods");
        }
        for uid in helped {
            let (queued, plugins, _) = self.take(&uid).expect("unschedulable pods are indexed");
            self.move_to_active_or_backoff(queued, plugins, now);
        }
    }

    /// Retries pods that have been unschedulable for longer than
    /// `max_unschedulable_duration` (kube runs this every 30 s).
    pub fn flush_unschedulable_leftover(&mut self, now: Instant) {
        let max = self.config.max_unschedulable_duration;
        let stale: Vec<String> = self
            .unschedulable
            .iter()
            .take_while(|((timestamp, _), _)| now.saturating_duration_since(*timestamp) > max)
            .map(|(_, uid)| uid.clone())
            .collect();
        for uid in stale {
            let (queued, plugins, _) = self.take(&uid).expect("unschedulable pods are indexed");
            self.move_to_active_or_backoff(queued, plugins, now);
        }
    }

    /// Moves pods whose back-off has expired by `now` to the active queue ([`Self::pop`]
    /// does this itself).
    pub fn flush_backoff_completed(&mut self, now: Instant) {
        loop {
            let first = |q: &BTreeMap<TimeKey, String>| {
                q.first_key_value()
                    .filter(|((expiry, _), _)| *expiry <= now)
                    .map(|(_, uid)| uid.clone())
            };
            let Some(uid) = first(&self.backoff).or_else(|| first(&self.error_backoff)) else {
                break;
            };
            let (queued, plugins, _) = self.take(&uid).expect("back-off entries are indexed");
            self.insert(queued, plugins, Target::Active);
        }
    }

    /// The earliest back-off expiry: when the loop should wake up if nothing else happens.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let first = |q: &BTreeMap<TimeKey, String>| q.first_key_value().map(|((t, _), _)| *t);
        match (first(&self.backoff), first(&self.error_backoff)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Number of queued pods, wherever they wait.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no pod is queued.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(active, backoff, unschedulable, gated)` pod counts.
    pub fn pending_counts(&self) -> (usize, usize, usize, usize) {
        (
            self.active.len(),
            self.backoff.len() + self.error_backoff.len(),
            self.unschedulable.len(),
            self.gated.len(),
        )
    }

    /// Whether the pod waits for its scheduling gates to be removed.
    pub fn is_gated(&self, uid: &str) -> bool {
        self.entries
            .get(uid)
            .is_some_and(|e| matches!(e.place, Place::Gated(_)))
    }

    /// Whether the pod is queued (in any place).
    pub fn contains(&self, uid: &str) -> bool {
        self.entries.contains_key(uid)
    }

    fn move_to_active_or_backoff(
        &mut self,
        queued: QueuedPod,
        plugins: HashSet<&'static str>,
        now: Instant,
    ) {
        let target = if self.backoff_expiry(&queued) > now {
            Target::Backoff
        } else {
            Target::Active
        };
        self.insert(queued, plugins, target);
    }

    fn backoff_expiry(&self, queued: &QueuedPod) -> Instant {
        queued.timestamp + self.config.backoff_duration(queued.attempts)
    }

    fn insert(&mut self, queued: QueuedPod, plugins: HashSet<&'static str>, target: Target) {
        let uid = queued.info.uid().to_string();
        let seq = self.next_seq;
        self.next_seq += 1;
        let place = match target {
            Target::Active => {
                let key = (Reverse(queued.info.priority), queued.timestamp, seq);
                self.active.insert(key, uid.clone());
                Place::Active(key)
            }
            // Kube's podErrorBackoffQ holds the pods that no plugin rejected.
            Target::Backoff if plugins.is_empty() => {
                let key = (self.backoff_expiry(&queued), seq);
                self.error_backoff.insert(key, uid.clone());
                Place::ErrorBackoff(key)
            }
            Target::Backoff => {
                let key = (self.backoff_expiry(&queued), seq);
                self.backoff.insert(key, uid.clone());
                Place::Backoff(key)
            }
            Target::Unschedulable => {
                let key = (queued.timestamp, seq);
                self.unschedulable.insert(key, uid.clone());
                Place::Unschedulable(key)
            }
            Target::Gated => {
                let key = (queued.timestamp, seq);
                self.gated.insert(key, uid.clone());
                Place::Gated(key)
            }
        };
        self.entries.insert(
            uid,
            Entry {
                pod: queued,
                place,
                unschedulable_plugins: plugins,
            },
        );
    }

    fn take(&mut self, uid: &str) -> Option<(QueuedPod, HashSet<&'static str>, Place)> {
        let entry = self.entries.remove(uid)?;
        match entry.place {
            Place::Active(key) => self.active.remove(&key),
            Place::Backoff(key) => self.backoff.remove(&key),
            Place::ErrorBackoff(key) => self.error_backoff.remove(&key),
            Place::Unschedulable(key) => self.unschedulable.remove(&key),
            Place::Gated(key) => self.gated.remove(&key),
        };
        Some((entry.pod, entry.unschedulable_plugins, entry.place))
    }
}

fn is_gated(pod: &Pod) -> bool {
    !pod.spec.scheduling_gates.is_empty()
}

/// kube's isPodUpdated: a change other than versions and status (except the claim names).
fn is_pod_updated(old: &Pod, new: &Pod) -> bool {
    old.spec != new.spec
        // The claim controller recording the pod's claims (kube keeps them in the compare).
        || old.status.resource_claim_statuses != new.status.resource_claim_statuses
        || old.metadata.labels != new.metadata.labels
        || old.metadata.annotations != new.metadata.annotations
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::model::{ObjectMeta, PodSchedulingGate};

    fn pod(uid: &str, priority: i32) -> Arc<PodInfo> {
        pod_with(uid, priority, &[])
    }

    fn pod_with(uid: &str, priority: i32, gates: &[&str]) -> Arc<PodInfo> {
        let mut p = Pod {
            metadata: ObjectMeta {
                name: uid.to_string(),
                namespace: "default".to_string(),
                uid: uid.to_string(),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        p.spec.priority = Some(priority);
        p.spec.scheduling_gates = gates
            .iter()
            .map(|g| PodSchedulingGate {
                name: (*g).to_string(),
            })
            .collect();
        Arc::new(PodInfo::new(Arc::new(p)))
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn millis(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn pop_all(q: &mut SchedulingQueue, now: Instant) -> Vec<String> {
        std::iter::from_fn(|| q.pop(now))
            .map(|p| p.info.uid().to_string())
            .collect()
    }

    /// A queue whose one pod "p" was added, popped and found unschedulable by `rejecting`,
    /// all at `t0`.
    fn failed_once(rejecting: &[&'static str], t0: Instant) -> SchedulingQueue {
        let mut q = SchedulingQueue::new(QueueConfig::default());
        q.add(pod("p", 0), t0);
        let popped = q.pop(t0).unwrap();
        q.add_unschedulable(popped, plugins(rejecting), t0);
        q
    }

    fn plugins(names: &[&'static str]) -> HashSet<&'static str> {
        names.iter().copied().collect()
    }

    #[test]
    fn pop_order_is_priority_then_timestamp() {
        struct Case {
            name: &'static str,
            /// (uid, priority, added at +ms)
            pods: &'static [(&'static str, i32, u64)],
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "fifo within a priority",
                pods: &[("a", 0, 0), ("b", 0, 1), ("c", 0, 2)],
                want: &["a", "b", "c"],
            },
            Case {
                name: "higher priority first",
                pods: &[("low", 1, 0), ("high", 100, 5), ("mid", 50, 1)],
                want: &["high", "mid", "low"],
            },
            Case {
                name: "negative priorities after zero",
                pods: &[("neg", -5, 0), ("zero", 0, 10)],
                want: &["zero", "neg"],
            },
            Case {
                name: "same instant keeps insertion order",
                pods: &[("x", 3, 0), ("y", 3, 0), ("z", 3, 0)],
                want: &["x", "y", "z"],
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = SchedulingQueue::new(QueueConfig::default());
            for (uid, prio, at) in case.pods {
                q.add(pod(uid, *prio), t0 + millis(*at));
            }
            let got = pop_all(&mut q, t0 + secs(1));
            assert_eq!(got, case.want, "{}", case.name);
            assert!(q.is_empty(), "{}", case.name);
        }
    }

    #[test]
    fn pop_counts_attempts_and_cycles() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new(QueueConfig::default());
        q.add(pod("a", 0), t0);
        let first = q.pop(t0 + secs(1)).unwrap();
        assert_eq!(first.attempts, 1);
        assert_eq!(first.initial_attempt, Some(t0 + secs(1)));
        assert_eq!(first.cycle, 1);
        q.requeue_after_error(first, t0 + secs(2));
        let second = q.pop(t0 + secs(10)).unwrap();
        assert_eq!(second.attempts, 2);
        assert_eq!(
            second.initial_attempt,
            Some(t0 + secs(1)),
            "kept from the first"
        );
        assert_eq!(second.cycle, 2);
    }

    #[test]
    fn priority_update_reorders_the_active_queue() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new(QueueConfig::default());
        q.add(pod("a", 0), t0);
        q.add(pod("b", 0), t0 + millis(1));
        q.update(pod("b", 10), t0 + millis(2));
        assert_eq!(pop_all(&mut q, t0 + secs(1)), vec!["b", "a"]);
    }

    #[test]
    fn scheduling_gates() {
        struct Case {
            name: &'static str,
            /// Gates when added, then the gates of each update.
            gates: &'static [&'static [&'static str]],
            want_gated: bool,
        }
        let cases = [
            Case {
                name: "no gates: active",
                gates: &[&[]],
                want_gated: false,
            },
            Case {
                name: "gated stays out of the active queue",
                gates: &[&["example.com/wait"]],
                want_gated: true,
            },
            Case {
                name: "one gate of two removed: still gated",
                gates: &[&["a", "b"], &["b"]],
                want_gated: true,
            },
            Case {
                name: "all gates removed: active",
                gates: &[&["a", "b"], &["b"], &[]],
                want_gated: false,
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = SchedulingQueue::new(QueueConfig::default());
            q.add(pod_with("p", 0, case.gates[0]), t0);
            for (i, gates) in case.gates.iter().enumerate().skip(1) {
                q.update(pod_with("p", 0, gates), t0 + secs(i as u64));
            }
            assert_eq!(q.is_gated("p"), case.want_gated, "{}", case.name);
            // Events and flushes never release a gated pod.
            q.move_all_to_active_or_backoff(ClusterEvent::NodeAdded, t0 + secs(10));
            q.flush_unschedulable_leftover(t0 + secs(3600));
            let popped = q.pop(t0 + secs(3600)).map(|p| p.info.uid().to_string());
            assert_eq!(popped.is_none(), case.want_gated, "{}", case.name);
            let want_counts = if case.want_gated {
                (0, 0, 0, 1)
            } else {
                (0, 0, 0, 0)
            };
            assert_eq!(q.pending_counts(), want_counts, "{}", case.name);
        }
    }

    #[test]
    fn ungated_pod_keeps_its_place_by_arrival() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new(QueueConfig::default());
        q.add(pod_with("early", 0, &["g"]), t0);
        q.add(pod("late", 0), t0 + secs(1));
        q.update(pod("early", 0), t0 + secs(2));
        assert_eq!(pop_all(&mut q, t0 + secs(3)), vec!["early", "late"]);
    }

    #[test]
    fn backoff_grows_and_caps() {
        struct Case {
            attempts: u32,
            want: Duration,
        }
        let cases = [
            Case {
                attempts: 0,
                want: Duration::ZERO,
            },
            Case {
                attempts: 1,
                want: secs(1),
            },
            Case {
                attempts: 2,
                want: secs(2),
            },
            Case {
                attempts: 3,
                want: secs(4),
            },
            Case {
                attempts: 4,
                want: secs(8),
            },
            Case {
                attempts: 5,
                want: secs(10),
            },
            Case {
                attempts: 6,
                want: secs(10),
            },
            Case {
                attempts: u32::MAX,
                want: secs(10),
            },
        ];
        let config = QueueConfig::default();
        for case in cases {
            assert_eq!(
                config.backoff_duration(case.attempts),
                case.want,
                "attempts {}",
                case.attempts
            );
        }
    }

    #[test]
    fn backed_off_pod_waits_until_expiry() {
        struct Case {
            name: &'static str,
            /// Failed attempts before the one checked.
            failures: u32,
            /// Back-off expected after the last failure.
            want: Duration,
        }
        let cases = [
            Case {
                name: "first failure",
                failures: 1,
                want: secs(1),
            },
            Case {
                name: "third failure",
                failures: 3,
                want: secs(4),
            },
            Case {
                name: "sixth failure is capped",
                failures: 6,
                want: secs(10),
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = SchedulingQueue::new(QueueConfig::default());
            q.add(pod("p", 0), t0);
            let mut now = t0;
            let mut last_failure = t0;
            for _ in 0..case.failures {
                let popped = q.pop(now).expect(case.name);
                last_failure = now + millis(100);
                q.requeue_after_error(popped, last_failure);
                assert_eq!(q.pending_counts(), (0, 1, 0, 0), "{}", case.name);
                now = q.next_wakeup().expect(case.name);
            }
            let expiry = last_failure + case.want;
            assert_eq!(q.next_wakeup(), Some(expiry), "{}", case.name);
            assert!(
                q.pop(expiry - millis(1)).is_none(),
                "{}: popped before expiry",
                case.name
            );
            let popped = q.pop(expiry).expect(case.name);
            assert_eq!(popped.attempts, case.failures + 1, "{}", case.name);
            assert!(q.next_wakeup().is_none(), "{}", case.name);
        }
    }

    #[test]
    fn idle_queue_pops_rejected_pods_from_backoff() {
        struct Case {
            name: &'static str,
            /// Plugins blamed by the failure (none: an error).
            plugins: &'static [&'static str],
            pop_from_backoff: bool,
            /// Another pod waits in the active queue.
            other_active: bool,
            /// Uids popped right after the failure, before any back-off ends.
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "rejected pod is taken from back-off when nothing is active",
                plugins: &["NodeResourcesFit"],
                pop_from_backoff: true,
                other_active: false,
                want: &["p"],
            },
            Case {
                name: "an active pod goes first, then the backed-off one",
                plugins: &["NodeResourcesFit"],
                pop_from_backoff: true,
                other_active: true,
                want: &["q", "p"],
            },
            Case {
                name: "error back-off is always waited out",
                plugins: &[],
                pop_from_backoff: true,
                other_active: false,
                want: &[],
            },
            Case {
                name: "without the feature, back-off is waited out",
                plugins: &["NodeResourcesFit"],
                pop_from_backoff: false,
                other_active: false,
                want: &[],
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = SchedulingQueue::new(QueueConfig {
                pop_from_backoff: case.pop_from_backoff,
                ..QueueConfig::default()
            });
            q.add(pod("p", 0), t0);
            let popped = q.pop(t0).unwrap();
            // An event during the attempt sends the rejected pod to back-off.
            q.move_all_to_active_or_backoff(ClusterEvent::PodDeleted, t0);
            q.add_unschedulable(popped, plugins(case.plugins), t0);
            assert_eq!(q.pending_counts(), (0, 1, 0, 0), "{}", case.name);
            if case.other_active {
                q.add(pod("q", 0), t0);
            }
            assert_eq!(pop_all(&mut q, t0), case.want, "{}", case.name);
        }
    }

    #[test]
    fn failed_pod_goes_to_unschedulable_or_backoff() {
        struct Case {
            name: &'static str,
            plugins: &'static [&'static str],
            /// Whether a cluster event arrives while the attempt runs.
            event_during_attempt: bool,
            /// (active, backoff, unschedulable, gated) right after the failure.
            want: (usize, usize, usize, usize),
        }
        let cases = [
            Case {
                name: "rejected, no event: unschedulable",
                plugins: &["NodeResourcesFit"],
                event_during_attempt: false,
                want: (0, 0, 1, 0),
            },
            Case {
                name: "rejected, event during attempt: back-off",
                plugins: &["NodeResourcesFit"],
                event_during_attempt: true,
                want: (0, 1, 0, 0),
            },
            Case {
                name: "no plugin to blame: back-off",
                plugins: &[],
                event_during_attempt: false,
                want: (0, 1, 0, 0),
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = SchedulingQueue::new(QueueConfig::default());
            // An event before the attempt must not count.
            q.move_all_to_active_or_backoff(ClusterEvent::NodeAdded, t0);
            q.add(pod("p", 0), t0);
            let popped = q.pop(t0).unwrap();
            if case.event_during_attempt {
                q.move_all_to_active_or_backoff(ClusterEvent::PodDeleted, t0);
            }
            q.add_unschedulable(popped, plugins(case.plugins), t0 + millis(10));
            assert_eq!(q.pending_counts(), case.want, "{}", case.name);
        }
    }

    #[test]
    fn move_events_follow_hints() {
        struct Case {
            name: &'static str,
            plugins: &'static [&'static str],
            event: ClusterEvent,
            /// Seconds after the failure at which the event arrives.
            at: u64,
            /// (active, backoff, unschedulable, gated) after the event.
            want: (usize, usize, usize, usize),
        }
        use ClusterEvent::*;
        let cases = [
            Case {
                name: "node added helps everyone",
                plugins: &["NodeName"],
                event: NodeAdded,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "node update cannot fix a node name",
                plugins: &["NodeName"],
                event: NodeUpdated,
                at: 5,
                want: (0, 0, 1, 0),
            },
            Case {
                name: "taint removal helps taints",
                plugins: &["TaintToleration"],
                event: NodeUpdated,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "pod deletion frees resources",
                plugins: &["NodeResourcesFit"],
                event: PodDeleted,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "pod deletion does not fix taints",
                plugins: &["TaintToleration"],
                event: PodDeleted,
                at: 5,
                want: (0, 0, 1, 0),
            },
            Case {
                name: "one helped plugin is enough",
                plugins: &["TaintToleration", "InterPodAffinity"],
                event: PodDeleted,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "node deletion helps spreading only",
                plugins: &["PodTopologySpread"],
                event: NodeDeleted,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "node deletion does not help fit",
                plugins: &["NodeResourcesFit"],
                event: NodeDeleted,
                at: 5,
                want: (0, 0, 1, 0),
            },
            Case {
                name: "a deleted pod may free a host port",
                plugins: &["NodePorts"],
                event: PodDeleted,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "a node update frees no host port",
                plugins: &["NodePorts"],
                event: NodeUpdated,
                at: 5,
                want: (0, 0, 1, 0),
            },
            Case {
                name: "unknown plugins move on any event",
                plugins: &["SomeCustomPlugin"],
                event: PodAdded,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "still backing off: back-off queue",
                plugins: &["NodeResourcesFit"],
                event: PodDeleted,
                at: 0,
                want: (0, 1, 0, 0),
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = failed_once(case.plugins, t0);
            assert_eq!(q.pending_counts(), (0, 0, 1, 0), "{}: setup", case.name);
            // Keep the active queue as it is: check counts before any pop flushes back-off.
            q.move_all_to_active_or_backoff(case.event, t0 + secs(case.at));
            assert_eq!(q.pending_counts(), case.want, "{}", case.name);
        }
    }

    #[test]
    fn unschedulable_leftover_flush_after_five_minutes() {
        struct Case {
            name: &'static str,
            after: Duration,
            want_moved: bool,
        }
        let cases = [
            Case {
                name: "well before",
                after: secs(60),
                want_moved: false,
            },
            Case {
                name: "exactly five minutes",
                after: secs(300),
                want_moved: false,
            },
            Case {
                name: "just past five minutes",
                after: secs(300) + millis(1),
                want_moved: true,
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = SchedulingQueue::new(QueueConfig::default());
            q.add(pod("old", 0), t0);
            q.add(pod("new", 0), t0);
            let old = q.pop(t0).unwrap();
            q.add_unschedulable(old, plugins(&["NodeAffinity"]), t0);
            let new = q.pop(t0).unwrap();
            q.add_unschedulable(new, plugins(&["NodeAffinity"]), t0 + secs(200));
            q.flush_unschedulable_leftover(t0 + case.after);
            let want = if case.want_moved {
                (1, 0, 1, 0)
            } else {
                (0, 0, 2, 0)
            };
            assert_eq!(q.pending_counts(), want, "{}", case.name);
            if case.want_moved {
                assert_eq!(
                    pop_all(&mut q, t0 + case.after),
                    vec!["old"],
                    "{}",
                    case.name
                );
            }
        }
    }

    #[test]
    fn update_of_an_unschedulable_pod() {
        struct Case {
            name: &'static str,
            relabel: bool,
            /// Seconds after the failure.
            at: u64,
            want: (usize, usize, usize, usize),
        }
        let cases = [
            Case {
                name: "no real change stays",
                relabel: false,
                at: 5,
                want: (0, 0, 1, 0),
            },
            Case {
                name: "label change after back-off: active",
                relabel: true,
                at: 5,
                want: (1, 0, 0, 0),
            },
            Case {
                name: "label change during back-off: back-off",
                relabel: true,
                at: 0,
                want: (0, 1, 0, 0),
            },
        ];
        for case in cases {
            let t0 = Instant::now();
            let mut q = failed_once(&["NodeAffinity"], t0);
            let mut updated = (*pod("p", 0).pod).clone();
            if case.relabel {
                updated.metadata.labels.insert("zone".into(), "b".into());
            }
            updated.metadata.resource_version = "42".into();
            q.update(
                Arc::new(PodInfo::new(Arc::new(updated))),
                t0 + secs(case.at),
            );
            assert_eq!(q.pending_counts(), case.want, "{}", case.name);
        }
    }

    #[test]
    fn delete_and_contains() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new(QueueConfig::default());
        q.add(pod("a", 0), t0);
        q.add(pod_with("g", 0, &["x"]), t0);
        q.add(pod("b", 0), t0);
        let b = q.pop(t0).unwrap();
        q.add_unschedulable(b, plugins(&["NodeName"]), t0);
        assert_eq!(q.len(), 3);
        for uid in ["a", "g", "b"] {
            assert!(q.contains(uid), "{uid}");
            q.delete(uid);
            assert!(!q.contains(uid), "{uid}");
        }
        q.delete("never-there");
        assert!(q.is_empty());
        assert_eq!(q.pending_counts(), (0, 0, 0, 0));
    }

    #[test]
    fn adding_twice_updates() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new(QueueConfig::default());
        q.add(pod("a", 0), t0);
        q.add(pod("a", 7), t0 + secs(1));
        assert_eq!(q.len(), 1);
        let popped = q.pop(t0 + secs(2)).unwrap();
        assert_eq!(popped.info.priority, 7);
        assert_eq!(popped.timestamp, t0, "an update keeps the arrival time");
    }
}
