//! The node lifecycle controller (kube's node-lifecycle-controller with TaintNodesByCondition):
//! watches agent heartbeats, marks a silent node's conditions Unknown after the grace period,
//! and keeps the condition taints (`not-ready`, `unreachable`, `memory-pressure`, ...) in step
//! with the node's conditions, adding the NoExecute ones at a limited rate.
//!
//! The controller follows the nodes through an [`Informer`]: each round works from its
//! reflector, and a node change (or a re-list after falling behind) starts a round at once.
//!
//! With replicas, a node's agent may talk to a replica other than the leader: the agent
//! service then also stores the Ready condition's `lastHeartbeatTime` every so often, and
//! the controller counts a node as heard from when it sees that time change (kube's
//! controller does the same with what it observes, never comparing clocks).
//!
//! Heartbeat times live in memory ([`NodeHealth`], fed by the agent service): after a scheduler
//! restart every node gets a fresh grace period, so that a restart does not taint the whole
//! cluster. Only nodes an agent looks after are watched for silence: a node whose Ready
//! condition carries a `lastHeartbeatTime` (agents always send one) or that an agent reached in
//! this process. A node written in a manifest and never heard from is left alone; its taints
//! still follow the conditions written in it.
//!
//! Taints from conditions, as in Kubernetes:
//!
//! | condition | taint |
//! | --- | --- |
//! | Ready=False | `node.kubernetes.io/not-ready` NoSchedule and NoExecute |
//! | Ready=Unknown | `node.kubernetes.io/unreachable` NoSchedule and NoExecute |
//! | MemoryPressure=True | `node.kubernetes.io/memory-pressure:NoSchedule` |
//! | DiskPressure=True | `node.kubernetes.io/disk-pressure:NoSchedule` |
//! | PIDPressure=True | `node.kubernetes.io/pid-pressure:NoSchedule` |
//! | NetworkUnavailable=True | `node.kubernetes.io/network-unavailable:NoSchedule` |
//!
//! NoSchedule taints follow at once. A new NoExecute taint (the one that evicts pods, through
//! the taint eviction controller) waits its turn in a queue drained by a token bucket of
//! `--node-eviction-rate` nodes per second, burst 1, so that a partition does not empty the
//! cluster at once; switching between not-ready and unreachable, and removing either, happen at
//! once. kube's per-zone disruption states (which slow or stop this rate when much of a zone
//! is down) are not modelled.

use berth_proto::conditions::set_condition;
use berth_proto::names::{
    CONDITION_DISK_PRESSURE, CONDITION_MEMORY_PRESSURE, CONDITION_NETWORK_UNAVAILABLE,
    CONDITION_PID_PRESSURE, CONDITION_READY, STATUS_FALSE, STATUS_TRUE, STATUS_UNKNOWN,
    TAINT_NODE_DISK_PRESSURE, TAINT_NODE_MEMORY_PRESSURE, TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY, TAINT_NODE_PID_PRESSURE, TAINT_NODE_UNREACHABLE,
};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_proto::model::{Kind, Node, NodeCondition, Object, Taint, TaintEffect, Time};
use berth_store::{ObjectStore, Op, Precondition};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::error::Result;
use super::events::{node_ref, EventRecorder, NORMAL};
use super::informer::Informer;

/// Reason of a condition the controller set to Unknown.
pub const REASON_NODE_STATUS_UNKNOWN: &str = "NodeStatusUnknown";
/// Message of a condition the controller set to Unknown.
pub const MESSAGE_NODE_STATUS_UNKNOWN: &str = "Kubelet stopped posting node status.";
/// Event reason recorded on a node that went from Ready to not ready.
pub const EVENT_NODE_NOT_READY: &str = "NodeNotReady";

/// Name the controller's events report as.
pub const COMPONENT: &str = "node-controller";

/// Conditions besides Ready that are set to Unknown with it (kube's remaining node condition
/// types; NetworkUnavailable belongs to the network plugin and is left as it is).
const REMAINING_CONDITIONS: [&str; 3] = [
    CONDITION_MEMORY_PRESSURE,
    CONDITION_DISK_PRESSURE,
    CONDITION_PID_PRESSURE,
];

/// Condition type and status → the NoSchedule taint it brings (kube's
/// `nodeConditionToTaintKeyStatusMap`).
const CONDITION_TAINTS: [(&str, &str, &str); 6] = [
    (CONDITION_READY, STATUS_FALSE, TAINT_NODE_NOT_READY),
    (CONDITION_READY, STATUS_UNKNOWN, TAINT_NODE_UNREACHABLE),
    (
        CONDITION_MEMORY_PRESSURE,
        STATUS_TRUE,
        TAINT_NODE_MEMORY_PRESSURE,
    ),
    (
        CONDITION_DISK_PRESSURE,
        STATUS_TRUE,
        TAINT_NODE_DISK_PRESSURE,
    ),
    (CONDITION_PID_PRESSURE, STATUS_TRUE, TAINT_NODE_PID_PRESSURE),
    (
        CONDITION_NETWORK_UNAVAILABLE,
        STATUS_TRUE,
        TAINT_NODE_NETWORK_UNAVAILABLE,
    ),
];

/// Settings of the controller, from `berth-scheduler`'s flags.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LifecycleConfig {
    /// How often node health is checked (`--node-monitor-period`).
    pub monitor_period: Duration,
    /// Silence after which a node goes Unknown (`--node-monitor-grace-period`).
    pub grace_period: Duration,
    /// Nodes per second that may get a new not-ready or unreachable NoExecute taint
    /// (`--node-eviction-rate`); 0 stops such taints altogether.
    pub eviction_rate: f64,
}

impl Default for LifecycleConfig {
    /// kube-controller-manager's defaults: 5 s, 50 s, 0.1 nodes/s.
    fn default() -> Self {
        LifecycleConfig {
            monitor_period: Duration::from_secs(5),
            grace_period: Duration::from_secs(50),
            eviction_rate: 0.1,
        }
    }
}

/// When each node's agent was last heard from (registration, session start, heartbeat).
/// Shared between the agent service, which records, and the controller, which reads.
#[derive(Debug, Default)]
pub struct NodeHealth {
    heard: Mutex<HashMap<String, Instant>>,
}

impl NodeHealth {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes that the agent of `node` was heard from just now.
    pub fn record(&self, node: &str) {
        self.record_at(node, Instant::now());
    }

    /// Notes that the agent of `node` was heard from at `at`.
    pub fn record_at(&self, node: &str, at: Instant) {
        self.lock().insert(node.to_string(), at);
    }

    /// When the agent of `node` was last heard from, if it was since the scheduler started.
    pub fn last_heard(&self, node: &str) -> Option<Instant> {
        self.lock().get(node).copied()
    }

    /// The last time `node` was heard from; a node not heard from yet counts as heard at
    /// `now`, which starts its grace period.
    fn last_heard_or_start(&self, node: &str, now: Instant) -> Instant {
        *self.lock().entry(node.to_string()).or_insert(now)
    }

    /// Forgets the nodes not in `names` (deleted ones).
    fn retain(&self, names: &HashSet<&str>) {
        self.lock().retain(|n, _| names.contains(n.as_str()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.heard.lock().expect("node health lock poisoned")
    }
}

/// A token bucket: `per_second` tokens a second, holding at most `burst`; full at the start.
/// A rate of 0 (or less) never gives a token.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    per_second: f64,
    burst: f64,
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub fn new(per_second: f64, burst: u32, now: Instant) -> Self {
        TokenBucket {
            per_second,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            updated: now,
        }
    }

    /// Takes a token if one is there at `now`.
    pub fn try_take(&mut self, now: Instant) -> bool {
        if self.per_second <= 0.0 {
            return false;
        }
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.updated = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The queue of nodes waiting for a not-ready or unreachable NoExecute taint, in the order
/// they started waiting, drained at the bucket's rate (kube's rate-limited NoExecute tainter).
#[derive(Clone, Debug)]
pub struct NoExecuteQueue {
    waiting: VecDeque<String>,
    bucket: TokenBucket,
}

impl NoExecuteQueue {
    /// An empty queue letting `per_second` nodes through a second, one at a time.
    pub fn new(per_second: f64, now: Instant) -> Self {
        NoExecuteQueue {
            waiting: VecDeque::new(),
            bucket: TokenBucket::new(per_second, 1, now),
        }
    }

    /// Brings the queue up to date with the nodes that `want` a new NoExecute taint (the
    /// others leave it; new ones join at the end, by name), then lets through as many from the
    /// front as the bucket allows at `now`.
    pub fn admit(&mut self, want: &BTreeSet<String>, now: Instant) -> BTreeSet<String> {
        self.waiting.retain(|n| want.contains(n));
        for name in want {
            if !self.waiting.contains(name) {
                self.waiting.push_back(name.clone());
            }
        }
        let mut admitted = BTreeSet::new();
        while !self.waiting.is_empty() && self.bucket.try_take(now) {
            if let Some(name) = self.waiting.pop_front() {
                admitted.insert(name);
            }
        }
        admitted
    }

    /// Puts a node let through whose taint could not be written back at the front.
    pub fn requeue_front(&mut self, name: String) {
        self.waiting.push_front(name);
    }

    /// The nodes waiting, front first.
    pub fn waiting(&self) -> impl Iterator<Item = &str> {
        self.waiting.iter().map(String::as_str)
    }
}

/// The status of a node condition, if the node has it.
fn condition_status<'a>(node: &'a Node, type_: &str) -> Option<&'a str> {
    node.condition(type_).map(|c| c.status.as_str())
}

/// Whether an agent looks after the node: its Ready condition carries a heartbeat time.
fn has_agent_heartbeat(node: &Node) -> bool {
    node.condition(CONDITION_READY)
        .is_some_and(|c| c.last_heartbeat_time.is_some())
}

/// Whether [`mark_unknown`] would change the node: it has a Ready condition, not Unknown.
fn can_go_unknown(node: &Node) -> bool {
    condition_status(node, CONDITION_READY).is_some_and(|s| s != STATUS_UNKNOWN)
}

/// Sets Ready and the remaining conditions the node has to Unknown (reason
/// [`REASON_NODE_STATUS_UNKNOWN`]), keeping their heartbeat times. Returns whether Ready
/// changed (it was not Unknown already). A node without a Ready condition is left as it is.
pub fn mark_unknown(node: &mut Node, now: Time) -> bool {
    if !can_go_unknown(node) {
        return false;
    }
    let stale: Vec<NodeCondition> = node
        .status
        .conditions
        .iter()
        .filter(|c| {
            (c.type_ == CONDITION_READY || REMAINING_CONDITIONS.contains(&c.type_.as_str()))
                && c.status != STATUS_UNKNOWN
        })
        .map(|c| NodeCondition {
            type_: c.type_.clone(),
            status: STATUS_UNKNOWN.into(),
            reason: REASON_NODE_STATUS_UNKNOWN.into(),
            message: MESSAGE_NODE_STATUS_UNKNOWN.into(),
            last_heartbeat_time: c.last_heartbeat_time,
            last_transition_time: None,
        })
        .collect();
    for condition in stale {
        set_condition(&mut node.status.conditions, condition, now);
    }
    true
}

/// The NoExecute taint key the node's Ready condition calls for: not-ready for False,
/// unreachable for Unknown, none for True or no Ready condition.
pub fn wanted_no_execute(node: &Node) -> Option<&'static str> {
    match condition_status(node, CONDITION_READY) {
        Some(STATUS_FALSE) => Some(TAINT_NODE_NOT_READY),
        Some(STATUS_UNKNOWN) => Some(TAINT_NODE_UNREACHABLE),
        _ => None,
    }
}

/// Whether a taint is one this controller owns with this effect.
fn is_managed(taint: &Taint) -> bool {
    match taint.effect {
        TaintEffect::NoExecute => {
            [TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE].contains(&taint.key.as_str())
        }
        TaintEffect::NoSchedule => CONDITION_TAINTS.iter().any(|(_, _, k)| *k == taint.key),
        TaintEffect::PreferNoSchedule => false,
    }
}

/// The not-ready or unreachable NoExecute taint the node carries, if any.
pub fn current_no_execute(node: &Node) -> Option<&str> {
    node.spec
        .taints
        .iter()
        .find(|t| t.effect == TaintEffect::NoExecute && is_managed(t))
        .map(|t| t.key.as_str())
}

/// The node's taints once the controller's are in step with its conditions: the NoSchedule
/// condition taints it calls for, and `no_execute` as the only not-ready/unreachable NoExecute
/// taint (one added now gets `timeAdded`; one kept keeps its own). Taints set by others come
/// first, in their order.
pub fn reconcile_taints(node: &Node, no_execute: Option<&str>, now: Time) -> Vec<Taint> {
    let mut taints: Vec<Taint> = node
        .spec
        .taints
        .iter()
        .filter(|t| !is_managed(t))
        .cloned()
        .collect();
    // The node's own taint of that key and effect, else a new one added at `time_added`.
    let kept_or_new = |key: &str, effect: TaintEffect, time_added: Option<Time>| {
        let kept = node
            .spec
            .taints
            .iter()
            .find(|t| t.key == key && t.effect == effect);
        kept.cloned().unwrap_or(Taint {
            key: key.to_string(),
            value: String::new(),
            effect,
            time_added,
        })
    };
    for (type_, status, key) in CONDITION_TAINTS {
        if condition_status(node, type_) == Some(status) {
            taints.push(kept_or_new(key, TaintEffect::NoSchedule, None));
        }
    }
    if let Some(key) = no_execute {
        taints.push(kept_or_new(key, TaintEffect::NoExecute, Some(now)));
    }
    taints
}

/// What one pass decided for one node: the reflector's node, shared, and the controller's
/// copy of it once a change is due (most rounds change no node, so they copy none).
struct Plan<'a> {
    stored: &'a Node,
    updated: Option<Node>,
    went_unknown: bool,
}

impl Plan<'_> {
    /// The node as the controller wants it so far.
    fn current(&self) -> &Node {
        self.updated.as_ref().unwrap_or(self.stored)
    }
}

/// The controller. [`NodeLifecycleController::pass`] does one round; [`run`] drives it.
pub struct NodeLifecycleController {
    nodes: Informer,
    health: Arc<NodeHealth>,
    config: LifecycleConfig,
    queue: NoExecuteQueue,
    events: EventRecorder,
    /// The Ready condition's `lastHeartbeatTime` last seen per node.
    heartbeats: HashMap<String, Time>,
}

impl NodeLifecycleController {
    /// A controller over `store`, reading heartbeats from `health`, recording events with
    /// `events`. Subscribes to the store's changes now.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        health: Arc<NodeHealth>,
        config: LifecycleConfig,
        events: EventRecorder,
    ) -> Self {
        NodeLifecycleController {
            nodes: Informer::new("node lifecycle", store, &[Kind::Node]),
            health,
            queue: NoExecuteQueue::new(config.eviction_rate, Instant::now()),
            config,
            events,
            heartbeats: HashMap::new(),
        }
    }

    /// One round over every node at `now`: silent nodes go Unknown, taints follow conditions.
    /// A node changed meanwhile by someone else is left for the next round.
    pub fn pass(&mut self, now: Instant) -> Result<()> {
        let wall = Time::now();
        // Catch up with the store first (the informer lists on its first call).
        while self.nodes.try_next().is_some() {}
        // The reflector's nodes, shared: a round writes through `self`, so it holds its own
        // handles to them rather than borrowing the reflector.
        let shared: Vec<Arc<Object>> = self
            .nodes
            .cache()
            .list_shared(Kind::Node, None)
            .into_iter()
            .cloned()
            .collect();
        let nodes: Vec<&Node> = shared
            .iter()
            .filter_map(|o| match o.as_ref() {
                Object::Node(n) => Some(n.as_ref()),
                _ => None,
            })
            .collect();
        let names: HashSet<&str> = nodes.iter().map(|n| n.metadata.name.as_str()).collect();
        self.health.retain(&names);
        self.heartbeats.retain(|n, _| names.contains(n.as_str()));
        for node in &nodes {
            let beat = node
                .condition(CONDITION_READY)
                .and_then(|c| c.last_heartbeat_time);
            if let Some(beat) = beat {
                // A stored heartbeat that moved on: the agent was heard, by some replica.
                let name = &node.metadata.name;
                let moved = match self.heartbeats.get_mut(name) {
                    Some(seen) => std::mem::replace(seen, beat) != beat,
                    None => {
                        self.heartbeats.insert(name.clone(), beat);
                        true
                    }
                };
                if moved {
                    self.health.record_at(name, now);
                }
            }
        }

        let mut plans = Vec::with_capacity(nodes.len());
        let mut want_new = BTreeSet::new();
        for node in nodes {
            let name = &node.metadata.name;
            let mut plan = Plan {
                stored: node,
                updated: None,
                went_unknown: false,
            };
            if self.health.last_heard(name).is_some() || has_agent_heartbeat(node) {
                let last = self.health.last_heard_or_start(name, now);
                if now.saturating_duration_since(last) > self.config.grace_period
                    && can_go_unknown(node)
                {
                    let mut updated = node.clone();
                    plan.went_unknown = mark_unknown(&mut updated, wall);
                    plan.updated = Some(updated);
                }
            }
            let current = plan.current();
            if wanted_no_execute(current).is_some() && current_no_execute(current).is_none() {
                want_new.insert(name.clone());
            }
            plans.push(plan);
        }
        let admitted = self.queue.admit(&want_new, now);
        if let Some(first) = self.queue.waiting().next() {
            debug!(next = %first, waiting = want_new.len() - admitted.len(), "nodes wait for a NoExecute taint");
        }

        for plan in plans {
            let name = &plan.stored.metadata.name;
            let current = plan.current();
            let wanted = wanted_no_execute(current);
            let no_execute = match (wanted, current_no_execute(current)) {
                (None, _) => None,
                // Switching between not-ready and unreachable is not rate-limited.
                (Some(key), Some(_)) => Some(key),
                (Some(key), None) if admitted.contains(name) => Some(key),
                (Some(_), None) => None,
            };
            let taints = reconcile_taints(current, no_execute, wall);
            let mut updated = match plan.updated {
                None if taints == plan.stored.spec.taints => continue,
                Some(updated) => updated,
                None => plan.stored.clone(),
            };
            updated.spec.taints = taints;
            if updated == *plan.stored {
                continue;
            }
            // A heartbeat may have come in since the round began.
            if plan.went_unknown
                && self.health.last_heard(name).is_some_and(|last| {
                    now.saturating_duration_since(last) <= self.config.grace_period
                })
            {
                continue;
            }
            let added_no_execute =
                no_execute.is_some() && current_no_execute(plan.stored).is_none();
            let rv = plan.stored.metadata.resource_version.clone();
            let event_ref = plan.went_unknown.then(|| node_ref(&updated));
            if self.write(updated, rv)? {
                if let Some(event_ref) = event_ref {
                    info!(node = %name, grace_period = ?self.config.grace_period, "node stopped posting status; marked Unknown");
                    self.events.record(
                        event_ref,
                        NORMAL,
                        EVENT_NODE_NOT_READY,
                        format!("Node {name} status is now: {EVENT_NODE_NOT_READY}"),
                    );
                }
                if added_no_execute {
                    info!(node = %name, taint = ?no_execute, "node tainted NoExecute");
                }
            } else if added_no_execute {
                self.queue.requeue_front(name.clone());
            }
        }
        Ok(())
    }

    /// Writes a node if nobody changed it since it was read at `rv`; returns whether it was
    /// written. The written state goes into the reflector at once, so that its copy from the
    /// stream does not start another round.
    fn write(&mut self, updated: Node, rv: String) -> Result<bool> {
        let name = updated.metadata.name.clone();
        let taints = updated.spec.taints.clone();
        match self.nodes.store().commit(vec![Op::Update {
            object: Object::Node(Box::new(updated)),
            precondition: Precondition::ResourceVersion(rv),
        }]) {
            Ok(changes) => {
                for change in &changes {
                    self.nodes.apply(change);
                }
                debug!(node = %name, ?taints, "node updated");
                Ok(true)
            }
            Err(berth_store::Error::Conflict { .. } | berth_store::Error::NotFound { .. }) => {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Runs the controller every monitor period, and soon after any node changes (so that
/// pressure taints follow a condition within moments), until `shutdown` fires. Its rounds
/// write to the store: run it on a thread of its own ([`super::informer::spawn`]).
pub async fn run(mut controller: NodeLifecycleController, shutdown: CancellationToken) {
    let period = controller.config.monitor_period;
    info!(
        monitor_period = ?period,
        grace_period = ?controller.config.grace_period,
        eviction_rate = controller.config.eviction_rate,
        "node lifecycle controller started"
    );
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
            // Every event is about a node; one round serves the whole batch (the round
            // itself takes what arrived meanwhile).
            batch = controller.nodes.next() => if batch.is_none() { return },
        }
        if let Err(e) = controller.pass(Instant::now()) {
            warn!(error = %e, "node lifecycle pass failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::NodeBuilder;
    use berth_store::SledStore;

    fn condition(type_: &str, status: &str, heartbeat: bool) -> NodeCondition {
        NodeCondition {
            type_: type_.into(),
            status: status.into(),
            reason: "AgentSaid".into(),
            message: String::new(),
            last_heartbeat_time: heartbeat.then(|| Time::from_unix_nanos(1_000)),
            last_transition_time: None,
        }
    }

    fn taint(key: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: String::new(),
            effect,
            time_added: None,
        }
    }

    fn node(name: &str, conditions: Vec<NodeCondition>, taints: Vec<Taint>) -> Node {
        let mut n = NodeBuilder::new(name).build();
        n.status.conditions = conditions;
        n.spec.taints = taints;
        n
    }

    /// Taints as `key:Effect` strings, in order.
    fn names(taints: &[Taint]) -> Vec<String> {
        taints
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect.as_str()))
            .collect()
    }

    #[test]
    fn taints_follow_conditions() {
        let cond = |type_, status| condition(type_, status, true);
        let ready = || cond("Ready", "True");
        let no_sched = |key| taint(key, TaintEffect::NoSchedule);
        let both = |key| vec![no_sched(key), taint(key, TaintEffect::NoExecute)];
        let stale = vec![
            no_sched("dedicated"),
            no_sched(TAINT_NODE_UNREACHABLE),
            taint(TAINT_NODE_UNREACHABLE, TaintEffect::NoExecute),
        ];
        let pressure = vec![
            ready(),
            cond("MemoryPressure", "True"),
            cond("DiskPressure", "False"),
        ];
        let user_prefer = vec![taint(
            TAINT_NODE_MEMORY_PRESSURE,
            TaintEffect::PreferNoSchedule,
        )];
        // (case, conditions, taints before, the NoExecute key the queue lets through, taints after)
        type Row = (
            &'static str,
            Vec<NodeCondition>,
            Vec<Taint>,
            Option<&'static str>,
            Vec<&'static str>,
        );
        let cases: Vec<Row> = vec![
            (
                "ready node keeps only the user's taints",
                vec![ready()],
                stale,
                None,
                vec!["dedicated:NoSchedule"],
            ),
            (
                "memory pressure adds its NoSchedule taint",
                pressure,
                vec![],
                None,
                vec!["node.kubernetes.io/memory-pressure:NoSchedule"],
            ),
            (
                "pressure cleared removes the taint",
                vec![ready(), cond("PIDPressure", "False")],
                vec![no_sched(TAINT_NODE_PID_PRESSURE)],
                None,
                vec![],
            ),
            (
                "disk and pid pressure together",
                vec![cond("DiskPressure", "True"), cond("PIDPressure", "True")],
                vec![],
                None,
                vec![
                    "node.kubernetes.io/disk-pressure:NoSchedule",
                    "node.kubernetes.io/pid-pressure:NoSchedule",
                ],
            ),
            (
                "not ready gets both not-ready taints",
                vec![cond("Ready", "False")],
                vec![],
                Some(TAINT_NODE_NOT_READY),
                vec![
                    "node.kubernetes.io/not-ready:NoSchedule",
                    "node.kubernetes.io/not-ready:NoExecute",
                ],
            ),
            (
                "unknown swaps not-ready for unreachable",
                vec![cond("Ready", "Unknown")],
                both(TAINT_NODE_NOT_READY),
                Some(TAINT_NODE_UNREACHABLE),
                vec![
                    "node.kubernetes.io/unreachable:NoSchedule",
                    "node.kubernetes.io/unreachable:NoExecute",
                ],
            ),
            (
                "unknown waiting for its turn gets only NoSchedule",
                vec![cond("Ready", "Unknown")],
                vec![],
                None,
                vec!["node.kubernetes.io/unreachable:NoSchedule"],
            ),
            (
                "a user's PreferNoSchedule taint with a managed key is not touched",
                vec![ready()],
                user_prefer,
                None,
                vec!["node.kubernetes.io/memory-pressure:PreferNoSchedule"],
            ),
            (
                "manifest node without conditions gets nothing",
                vec![],
                vec![],
                None,
                vec![],
            ),
        ];
        let now = Time::from_unix_nanos(5_000_000_000);
        for (name, conditions, taints, no_execute, want) in cases {
            let n = node("n1", conditions, taints);
            let got = reconcile_taints(&n, no_execute, now);
            assert_eq!(names(&got), want, "{name}");
            for t in got.iter().filter(|t| t.effect == TaintEffect::NoExecute) {
                let kept = n.spec.taints.iter().any(|o| o == t);
                assert!(
                    kept || t.time_added == Some(now),
                    "{name}: a new NoExecute taint carries timeAdded"
                );
            }
        }
    }

    #[test]
    fn a_kept_no_execute_taint_keeps_its_time() {
        let mut existing = taint(TAINT_NODE_UNREACHABLE, TaintEffect::NoExecute);
        existing.time_added = Some(Time::from_unix_nanos(42));
        let n = node(
            "n1",
            vec![condition("Ready", "Unknown", true)],
            vec![existing.clone()],
        );
        let got = reconcile_taints(&n, Some(TAINT_NODE_UNREACHABLE), Time::from_unix_nanos(99));
        assert!(got.contains(&existing), "got {got:?}");
    }

    #[test]
    fn silent_nodes_go_unknown() {
        struct Case {
            name: &'static str,
            conditions: Vec<NodeCondition>,
            want_changed: bool,
            want: Vec<(&'static str, &'static str)>,
        }
        let cases = vec![
            Case {
                name: "ready and pressure conditions go unknown",
                conditions: vec![
                    condition("Ready", "True", true),
                    condition("MemoryPressure", "False", true),
                    condition("NetworkUnavailable", "False", true),
                ],
                want_changed: true,
                want: vec![
                    ("Ready", "Unknown"),
                    ("MemoryPressure", "Unknown"),
                    ("NetworkUnavailable", "False"),
                ],
            },
            Case {
                name: "not ready goes unknown too",
                conditions: vec![condition("Ready", "False", true)],
                want_changed: true,
                want: vec![("Ready", "Unknown")],
            },
            Case {
                name: "already unknown is left alone",
                conditions: vec![condition("Ready", "Unknown", true)],
                want_changed: false,
                want: vec![("Ready", "Unknown")],
            },
            Case {
                name: "no ready condition is left alone",
                conditions: vec![],
                want_changed: false,
                want: vec![],
            },
        ];
        let now = Time::from_unix_nanos(7_000);
        for case in cases {
            let mut n = node("n1", case.conditions, vec![]);
            assert_eq!(
                mark_unknown(&mut n, now),
                case.want_changed,
                "{}",
                case.name
            );
            let got: Vec<(&str, &str)> = n
                .status
                .conditions
                .iter()
                .map(|c| (c.type_.as_str(), c.status.as_str()))
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
            for c in n.status.conditions.iter().filter(|c| c.status == "Unknown") {
                if case.want_changed {
                    assert_eq!(c.reason, REASON_NODE_STATUS_UNKNOWN, "{}", case.name);
                    assert_eq!(c.message, MESSAGE_NODE_STATUS_UNKNOWN, "{}", case.name);
                    assert_eq!(c.last_transition_time, Some(now), "{}", case.name);
                    assert!(
                        c.last_heartbeat_time.is_some(),
                        "{}: heartbeat kept",
                        case.name
                    );
                }
            }
        }
    }

    #[test]
    fn token_bucket_refills_at_its_rate() {
        struct Case {
            name: &'static str,
            rate: f64,
            /// Milliseconds after the start at which a token is asked for.
            asks_ms: Vec<u64>,
            want: Vec<bool>,
        }
        let cases = vec![
            Case {
                name: "full at the start, then one per 10 s at 0.1/s",
                rate: 0.1,
                asks_ms: vec![0, 1, 9_999, 10_000, 10_001, 30_000, 30_000],
                want: vec![true, false, false, true, false, true, false],
            },
            Case {
                name: "burst is one however long it waited",
                rate: 1.0,
                asks_ms: vec![100_000, 100_000, 101_000],
                want: vec![true, false, true],
            },
            Case {
                name: "rate zero never gives a token",
                rate: 0.0,
                asks_ms: vec![0, 1_000_000],
                want: vec![false, false],
            },
        ];
        for case in cases {
            let start = Instant::now();
            let mut bucket = TokenBucket::new(case.rate, 1, start);
            let got: Vec<bool> = case
                .asks_ms
                .iter()
                .map(|ms| bucket.try_take(start + Duration::from_millis(*ms)))
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn no_execute_queue_lets_nodes_through_in_turn() {
        struct Step {
            at_s: u64,
            want_taint: &'static [&'static str],
            admitted: &'static [&'static str],
        }
        struct Case {
            name: &'static str,
            rate: f64,
            steps: Vec<Step>,
        }
        let cases = vec![
            Case {
                name: "three nodes partitioned at once leave one per 10 s, in name order",
                rate: 0.1,
                steps: vec![
                    Step {
                        at_s: 0,
                        want_taint: &["c", "a", "b"],
                        admitted: &["a"],
                    },
                    Step {
                        at_s: 5,
                        want_taint: &["b", "c"],
                        admitted: &[],
                    },
                    Step {
                        at_s: 10,
                        want_taint: &["b", "c"],
                        admitted: &["b"],
                    },
                    Step {
                        at_s: 20,
                        want_taint: &["c"],
                        admitted: &["c"],
                    },
                ],
            },
            Case {
                name: "a node that recovers leaves the queue",
                rate: 0.1,
                steps: vec![
                    Step {
                        at_s: 0,
                        want_taint: &["a", "b"],
                        admitted: &["a"],
                    },
                    Step {
                        at_s: 5,
                        want_taint: &[],
                        admitted: &[],
                    },
                    Step {
                        at_s: 10,
                        want_taint: &["c"],
                        admitted: &["c"],
                    },
                ],
            },
            Case {
                name: "a token unused while nobody waits is kept (burst 1)",
                rate: 0.5,
                steps: vec![
                    Step {
                        at_s: 0,
                        want_taint: &[],
                        admitted: &[],
                    },
                    Step {
                        at_s: 100,
                        want_taint: &["a", "b"],
                        admitted: &["a"],
                    },
                    Step {
                        at_s: 102,
                        want_taint: &["b"],
                        admitted: &["b"],
                    },
                ],
            },
        ];
        for case in cases {
            let start = Instant::now();
            let mut queue = NoExecuteQueue::new(case.rate, start);
            for step in case.steps {
                let want: BTreeSet<String> =
                    step.want_taint.iter().map(|s| s.to_string()).collect();
                let got = queue.admit(&want, start + Duration::from_secs(step.at_s));
                let expected: BTreeSet<String> =
                    step.admitted.iter().map(|s| s.to_string()).collect();
                assert_eq!(got, expected, "{} at {}s", case.name, step.at_s);
            }
        }
    }

    fn recorder() -> EventRecorder {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let (writer, _task) = super::super::writer::Writer::spawn(store, tx);
        EventRecorder::new(writer, COMPONENT)
    }

    fn stored(store: &dyn ObjectStore, name: &str) -> Node {
        match store
            .get(&berth_proto::model::ObjectKey::new(Kind::Node, "", name))
            .expect("get")
        {
            Some(Object::Node(n)) => *n,
            other => panic!("node {name}: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_silent_agent_node_goes_unknown_and_a_manifest_node_is_left_alone() {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        store
            .commit(vec![
                Op::Create(Object::Node(Box::new(node(
                    "agent",
                    vec![condition("Ready", "True", true)],
                    vec![],
                )))),
                Op::Create(Object::Node(Box::new(node(
                    "manifest",
                    vec![condition("Ready", "True", false)],
                    vec![],
                )))),
                Op::Create(Object::Node(Box::new(node(
                    "fresh",
                    vec![condition("Ready", "True", true)],
                    vec![],
                )))),
            ])
            .expect("nodes");
        let health = Arc::new(NodeHealth::new());
        let config = LifecycleConfig {
            monitor_period: Duration::from_secs(1),
            grace_period: Duration::from_secs(40),
            eviction_rate: 0.1,
        };
        let mut controller =
            NodeLifecycleController::new(store.clone(), health.clone(), config, recorder());
        let start = Instant::now();
        // The first round starts every node's grace period: nothing changes yet.
        controller.pass(start).expect("pass");
        assert_eq!(
            stored(store.as_ref(), "agent").spec.taints,
            vec![],
            "fresh grace period"
        );
        // "fresh" keeps heartbeating; "agent" does not.
        health.record_at("fresh", start + Duration::from_secs(41));
        controller
            .pass(start + Duration::from_secs(41))
            .expect("pass");
        let agent = stored(store.as_ref(), "agent");
        assert_eq!(condition_status(&agent, "Ready"), Some("Unknown"));
        assert_eq!(
            names(&agent.spec.taints),
            vec![
                "node.kubernetes.io/unreachable:NoSchedule",
                "node.kubernetes.io/unreachable:NoExecute"
            ]
        );
        assert!(agent.spec.taints[1].time_added.is_some(), "timeAdded set");
        assert_eq!(
            condition_status(&stored(store.as_ref(), "fresh"), "Ready"),
            Some("True")
        );
        assert_eq!(
            condition_status(&stored(store.as_ref(), "manifest"), "Ready"),
            Some("True")
        );

        // The agent comes back: its heartbeat stores Ready=True, and the taints go.
        let mut back = stored(store.as_ref(), "agent");
        back.status.conditions = vec![condition("Ready", "True", true)];
        let rv = back.metadata.resource_version.clone();
        store
            .commit(vec![Op::Update {
                object: Object::Node(Box::new(back)),
                precondition: Precondition::ResourceVersion(rv),
            }])
            .expect("heartbeat");
        health.record_at("agent", start + Duration::from_secs(42));
        controller
            .pass(start + Duration::from_secs(43))
            .expect("pass");
        assert_eq!(stored(store.as_ref(), "agent").spec.taints, vec![]);
    }
}
