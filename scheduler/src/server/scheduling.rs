//! The live scheduling loop: it owns the shared [`Scheduler`] (snapshot, queue, nominator),
//! applies every store change to it between cycles (incrementally, never rebuilding per
//! pod), and runs [`Scheduler::schedule_one`], the attempt `berth sim` runs too, with
//! [`Live`] as its [`Cluster`]: bindings, evictions, conditions and nominations go to the
//! [`Writer`], events to the [`EventRecorder`]. It runs on its own thread so that scheduling
//! never stalls the API. It follows nodes, pods and disruption budgets through an
//! [`Informer`]: after falling behind the store it lists again and applies only the
//! difference (changed objects, and deletions of the ones that vanished meanwhile), so the
//! queue keeps its back-offs and nominations.
//!
//! Preemption victims are written Failed with reason Preempted (and DisruptionTarget=True,
//! reason PreemptionByScheduler) when the preemption is decided, and their resources are
//! freed at once; their agents then stop them gracefully. The preemptor holds the room
//! through its nomination. (kube keeps a victim on its node until it has terminated; Berth
//! does not, so a preemptor never waits for a terminating victim of its own.)

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_proto::conditions::set_condition;
use berth_proto::model::{
    Kind, Object, ObjectKey, Pod, PodCondition, PodDisruptionBudget, PodPhase, ResourceClaim, Time,
};
use berth_proto::names;
use berth_store::{ObjectStore, Op, Precondition};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::binding::{scheduled_message, REASON_SCHEDULED};
use super::events::{pod_ref, EventRecorder, NORMAL, WARNING};
use super::informer::{self, Event, Informer};
use super::writer::{FailureNotice, RefreshBefore, Write, WriteOp, Writer};
use crate::attempt::{Attempt, Cluster, Failure, NominationChange, Scheduler};
use crate::controllers::disruption::disruption_budget;
use crate::cycle::{Algorithm, Explanation, ScheduleOptions, ScheduleResult};
use crate::dra::convert;
use crate::dra::state::{ClaimUpdate, Consumer};
use crate::framework::{DisruptionBudget, PodInfo, SharedPod};
use crate::perf::histogram::LatencyHistogram;
use crate::profile::Profiles;
use crate::queue::ClusterEvent;

/// The kinds the loop follows, nodes first so that a list places pods on known nodes, and
/// the DRA objects before pods so that a pod's first attempt finds its claims.
const WATCHED: [Kind; 6] = [
    Kind::Node,
    Kind::DeviceClass,
    Kind::ResourceSlice,
    Kind::ResourceClaim,
    Kind::Pod,
    Kind::PodDisruptionBudget,
];

/// Longest the loop sleeps when nothing happens (it then re-checks the queue's timers).
const IDLE_TICK: Duration = Duration::from_secs(1);

/// Most writes (bindings, status updates; not events, which wait apart, see the writer)
/// the loop lets wait for the store before it stops scheduling until a commit is done:
/// eight of the writer's batches, so that the writer always has full batches waiting.
/// Without a bound a loop faster than the store ran tens of thousands of pods ahead, each
/// held twice meanwhile (its assumed copy in the snapshot, its Scheduled event in the
/// queue): SchedulingBasic with 50,000 pods peaked at 285 MiB (266-305) against 266
/// (259-272) with the bound, at the same throughput (docs/performance.md, "The loop waits
/// for the writer").
const WRITES_AHEAD: usize = 8 * super::writer::MAX_BATCH;

/// What the loop knows of a pod not bound in the store (yet): bound pods are the
/// snapshot's.
struct KnownPod {
    /// Latest stored version (the informer's copy, shared).
    pod: SharedPod,
    /// Where the loop placed it before the binding was stored.
    assumed_node: Option<String>,
    /// Last unschedulable message written to the pod, to avoid rewriting the same one.
    last_message: Option<String>,
    /// Claims (`namespace`, `name`) whose allocation or reservation for this pod is
    /// assumed until the binding is stored.
    assumed_claims: Vec<(String, String)>,
}

/// The scheduling loop's state.
pub struct SchedulingLoop {
    informer: Informer,
    failures: mpsc::UnboundedReceiver<FailureNotice>,
    /// Profiles, snapshot, queue and nominator: the state the attempt runs on.
    core: Scheduler,
    /// What the attempt writes to.
    live: Live,
    /// Duration of every scheduling attempt (cycle, assume and hand-off to the writer).
    attempt_latency: Arc<LatencyHistogram>,
    /// Questions from `berth describe` about pending pods.
    explain_rx: Option<mpsc::Receiver<ExplainQuery>>,
}

/// A question for the scheduling loop: where could this pending pod go, node by node?
pub struct ExplainQuery {
    namespace: String,
    name: String,
    reply: tokio::sync::oneshot::Sender<Result<ExplainAnswer, String>>,
}

/// The loop's answer: every node's verdict for the pod, against the current cluster.
#[derive(Debug)]
pub struct ExplainAnswer {
    /// Verdict per node.
    pub explanation: Explanation,
    /// kube's aggregated message when no node fits.
    pub message: Option<String>,
}

/// Asks the scheduling loop to explain pending pods.
#[derive(Clone)]
pub struct Explainer {
    tx: mpsc::Sender<ExplainQuery>,
}

impl Explainer {
    /// Evaluates the pending pod `namespace/name` against every node, as the next
    /// scheduling attempt would (without binding or preempting anything).
    pub async fn explain(&self, namespace: &str, name: &str) -> Result<ExplainAnswer, String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let query = ExplainQuery {
            namespace: namespace.to_string(),
            name: name.to_string(),
            reply,
        };
        self.tx
            .send(query)
            .await
            .map_err(|_| "the scheduling loop has stopped".to_string())?;
        answer
            .await
            .map_err(|_| "the scheduling loop has stopped".to_string())?
    }
}

/// Explain queries that outlive scheduling loops: a replica's loop runs only while it leads,
/// so `berth describe`'s questions arrive here and go to the loop of the current term, or
/// are refused while there is none.
pub struct ExplainRelay {
    tx: mpsc::Sender<ExplainQuery>,
    rx: tokio::sync::Mutex<mpsc::Receiver<ExplainQuery>>,
}

impl ExplainRelay {
    /// A relay with no loop behind it yet.
    pub fn new() -> Arc<Self> {
        let (tx, rx) = mpsc::channel(16);
        Arc::new(ExplainRelay {
            tx,
            rx: tokio::sync::Mutex::new(rx),
        })
    }

    /// The handle to ask through (for the Telemetry service).
    pub fn explainer(&self) -> Explainer {
        Explainer {
            tx: self.tx.clone(),
        }
    }

    /// Hands every query to the loop behind `to` until `until` fires.
    pub async fn forward(&self, to: &Explainer, until: &CancellationToken) {
        let mut rx = self.rx.lock().await;
        loop {
            let query = tokio::select! {
                _ = until.cancelled() => return,
                query = rx.recv() => match query { Some(q) => q, None => return },
            };
            if let Err(unsent) = to.tx.send(query).await {
                let _ = unsent
                    .0
                    .reply
                    .send(Err("the scheduling loop has stopped".to_string()));
                return;
            }
        }
    }

    /// Answers every query with `reason` until `until` fires.
    pub async fn refuse(&self, reason: &str, until: &CancellationToken) {
        let mut rx = self.rx.lock().await;
        loop {
            tokio::select! {
                _ = until.cancelled() => return,
                query = rx.recv() => match query {
                    Some(q) => { let _ = q.reply.send(Err(reason.to_string())); }
                    None => return,
                },
            }
        }
    }
}

impl SchedulingLoop {
    /// A loop over `store`. Subscribes to changes now, before the initial load, so nothing
    /// written in between is missed.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        writer: Writer,
        failures: mpsc::UnboundedReceiver<FailureNotice>,
        events: EventRecorder,
        profiles: Profiles,
        seed: u64,
    ) -> Self {
        SchedulingLoop {
            informer: Informer::new("scheduling loop", store, &WATCHED),
            failures,
            // The queue takes podInitialBackoffSeconds / podMaxBackoffSeconds from --config.
            core: Scheduler::new(profiles, seed, false),
            live: Live {
                writer,
                events,
                pods: HashMap::new(),
                claims: HashMap::new(),
            },
            attempt_latency: Arc::new(LatencyHistogram::new()),
            explain_rx: None,
        }
    }

    /// The loop, and a handle through which to ask it to explain pending pods.
    pub fn with_explainer(mut self) -> (Self, Explainer) {
        let (tx, rx) = mpsc::channel(16);
        self.explain_rx = Some(rx);
        (self, Explainer { tx })
    }

    /// The histogram of scheduling-attempt durations, shared: benchmarks read (and reset)
    /// it while the loop runs.
    pub fn attempt_latency(&self) -> Arc<LatencyHistogram> {
        self.attempt_latency.clone()
    }

    /// Runs the loop on a thread of its own until `shutdown` fires.
    pub fn spawn(self, shutdown: CancellationToken) -> std::thread::JoinHandle<()> {
        informer::spawn("scheduling-loop", move || self.run(shutdown))
    }

    async fn run(mut self, shutdown: CancellationToken) {
        // This thread runs the cycle's passes itself, in a pool of its own that leaves a core
        // to the writer (see `adopt_thread_for_parallel_passes`).
        let _pool = berth_core::cycle::adopt_thread_for_parallel_passes("scheduling-pass");
        // The informer's first list.
        self.drain_changes();
        info!(
            nodes = self.core.snapshot.len(),
            pods = self.live.pods.len(),
            "scheduling loop started"
        );
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            self.drain_changes();
            self.drain_failures();
            self.drain_explain_queries();
            if self.live.writer.backlog() > WRITES_AHEAD {
                // Until a commit is done; then the changes that came meanwhile are applied
                // at once, above.
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = self.live.writer.caught_up(WRITES_AHEAD) => continue,
                }
            }
            let started = Instant::now();
            match self.core.schedule_one(&mut self.live) {
                Some(Attempt::Skipped) => continue,
                Some(_) => {
                    self.attempt_latency.record(started.elapsed());
                    continue;
                }
                None => {}
            }
            let now = Instant::now();
            let sleep = self.core.queue.next_wakeup().map_or(IDLE_TICK, |t| {
                t.saturating_duration_since(now).min(IDLE_TICK)
            });
            tokio::select! {
                _ = shutdown.cancelled() => break,
                event = self.informer.next() => match event {
                    Some(event) => self.on_event(event),
                    None => break,
                },
                Some(notice) = self.failures.recv() => self.on_bind_failure(notice),
                Some(query) = next_query(&mut self.explain_rx) => self.explain(query),
                _ = tokio::time::sleep(sleep) => {}
            }
        }
        let micros = |q| {
            self.attempt_latency
                .quantile(q)
                .map_or(0, |d: Duration| d.as_micros() as u64)
        };
        info!(
            attempts = self.attempt_latency.count(),
            attempt_p50_us = micros(0.5),
            attempt_p99_us = micros(0.99),
            "scheduling loop stopped"
        );
    }

    /// A PodDisruptionBudget changed: preemption reads its `disruptionsAllowed`, which the
    /// disruption controller keeps current as pods come and go.
    fn on_budget(&mut self, pdb: &PodDisruptionBudget, deleted: bool) {
        let mut budgets: Vec<DisruptionBudget> = self
            .core
            .snapshot
            .disruption_budgets()
            .iter()
            .filter(|b| b.namespace != pdb.metadata.namespace || b.name != pdb.metadata.name)
            .cloned()
            .collect();
        if !deleted {
            budgets.push(disruption_budget(pdb));
            budgets.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        }
        self.core.snapshot.set_disruption_budgets(budgets);
    }

    /// Applies every event that has arrived (the first call lists).
    fn drain_changes(&mut self) {
        while let Some(event) = self.informer.try_next() {
            self.on_event(event);
        }
    }

    fn drain_failures(&mut self) {
        while let Ok(notice) = self.failures.try_recv() {
            self.on_bind_failure(notice);
        }
    }

    /// Applies one event from the informer to the snapshot, the queue and the nominator.
    fn on_event(&mut self, event: Event) {
        let now = Instant::now();
        let deleted = event.is_delete();
        match (event.object(), deleted) {
            (Some(Object::Node(node)), true) => {
                self.core.snapshot.remove_node(&node.metadata.name);
            }
            (Some(Object::Node(node)), false) => {
                let added = self.core.snapshot.node(&node.metadata.name).is_none();
                self.core.snapshot.upsert_node(Arc::new((**node).clone()));
                let event = if added {
                    ClusterEvent::NodeAdded
                } else {
                    ClusterEvent::NodeUpdated
                };
                self.core.queue.move_all_to_active_or_backoff(event, now);
            }
            (Some(Object::Pod(pod)), true) => {
                let uid = &pod.metadata.uid;
                self.live.pods.remove(uid);
                self.core.pod_gone(uid);
                self.core.pod_removed(uid, now);
            }
            (Some(Object::Pod(_)), false) => {
                if let Some(pod) = event.shared().cloned().and_then(SharedPod::from_object) {
                    self.on_pod(pod, now);
                }
            }
            (Some(Object::PodDisruptionBudget(pdb)), deleted) => self.on_budget(pdb, deleted),
            (Some(object), deleted) if self.on_device_object(object, deleted) => {
                self.core
                    .queue
                    .move_all_to_active_or_backoff(ClusterEvent::DeviceChanged, now);
            }
            _ => {}
        }
    }

    /// A DeviceClass, ResourceSlice or ResourceClaim changed: the snapshot's DRA state
    /// follows (an assumed claim stands until the store has a newer version). False for
    /// other kinds.
    fn on_device_object(&mut self, object: &Object, deleted: bool) -> bool {
        let dra = self.core.snapshot.dra_mut();
        match object {
            Object::DeviceClass(c) if deleted => dra.remove_class(&c.metadata.name),
            Object::DeviceClass(c) => dra.upsert_class(convert::class(c)),
            Object::ResourceSlice(s) if deleted => dra.remove_slice(&s.metadata.name),
            Object::ResourceSlice(s) => dra.upsert_slice(convert::slice(s)),
            Object::ResourceClaim(c) => {
                let key = format!("{}/{}", c.metadata.namespace, c.metadata.name);
                if deleted {
                    dra.remove_claim(&c.metadata.namespace, &c.metadata.name);
                    self.live.claims.remove(&key);
                } else {
                    dra.upsert_claim(convert::claim(c));
                    self.live.claims.insert(key, Arc::new((**c).clone()));
                }
            }
            _ => return false,
        }
        true
    }

    /// A pod was added or changed in the store.
    fn on_pod(&mut self, pod: SharedPod, now: Instant) {
        let uid = pod.metadata.uid.clone();
        let terminal = pod.status.phase.is_terminal();
        let known = self.live.pods.remove(&uid);
        if terminal {
            self.core.pod_gone(&uid);
            self.core.pod_removed(&uid, now);
            return;
        }
        let last_message = known.as_ref().and_then(|k| k.last_message.clone());
        if !pod.spec.node_name.is_empty() {
            // Bound: by our own bind, or by the user through spec.nodeName.
            self.core.pod_gone(&uid);
            // The snapshot's `PodInfo` holds it from here on: `live.pods` keeps only the
            // pods still to place (at 50,000 bound pods the map and its keys took ~9 MB).
            let info = Arc::new(PodInfo::new(pod.clone()));
            self.core.snapshot.add_pod(&pod.spec.node_name, info);
            return;
        }
        if let Some(node) = known.as_ref().and_then(|k| k.assumed_node.clone()) {
            // Our binding is in flight; this is an older version without it.
            self.live.pods.insert(
                uid,
                KnownPod {
                    pod,
                    assumed_node: Some(node),
                    last_message,
                    assumed_claims: known.map(|k| k.assumed_claims).unwrap_or_default(),
                },
            );
            return;
        }
        if pod.metadata.deletion_timestamp.is_some() {
            self.core.pod_gone(&uid);
            return;
        }
        if self.core.is_responsible_for(&pod) {
            let info = Arc::new(PodInfo::new(pod.clone()));
            self.core
                .pod_pending(info, known.as_ref().map(|k| &*k.pod), now);
            if self.core.queue.is_gated(&uid) {
                self.live.mark_gated(&pod);
            }
        } else {
            // Another scheduler's pod (kube's responsibleForPod): never queued, and left
            // untouched, so that its scheduler binds it.
            self.core.pod_gone(&uid);
        }
        self.live.pods.insert(
            uid,
            KnownPod {
                pod,
                assumed_node: None,
                last_message,
                assumed_claims: Vec::new(),
            },
        );
    }

    fn drain_explain_queries(&mut self) {
        while let Some(query) = self.explain_rx.as_mut().and_then(|rx| rx.try_recv().ok()) {
            self.explain(query);
        }
    }

    /// Answers an explain query: the pod evaluated against every node of the current
    /// snapshot, with a throw-away tie-break state so the real cycle is not disturbed.
    fn explain(&mut self, query: ExplainQuery) {
        let known = self.live.pods.values().find(|k| {
            k.pod.metadata.namespace == query.namespace && k.pod.metadata.name == query.name
        });
        let bound = || {
            self.informer
                .cache()
                .get(Kind::Pod, &query.namespace, &query.name)
                .is_some_and(|o| matches!(o, Object::Pod(p) if !p.spec.node_name.is_empty()))
        };
        let answer = match known {
            // Bound pods are not in `live.pods`: the informer's copy says.
            None if bound() => Err(format!(
                "pod {}/{} is already bound",
                query.namespace, query.name
            )),
            None => Err(format!(
                "pod {}/{} is not waiting to be scheduled",
                query.namespace, query.name
            )),
            Some(k) if !k.pod.spec.node_name.is_empty() || k.assumed_node.is_some() => Err(
                format!("pod {}/{} is already bound", query.namespace, query.name),
            ),
            Some(k) => match self.core.profiles.get(&k.pod.spec.scheduler_name) {
                None => Err(format!(
                    "no scheduler profile named {:?}",
                    k.pod.spec.scheduler_name
                )),
                Some(profile) => {
                    let info = PodInfo::new(k.pod.clone());
                    let result = Algorithm::new(0).schedule_nominated(
                        profile,
                        &self.core.snapshot,
                        &self.core.nominator,
                        &info,
                        &ScheduleOptions { explain: true },
                    );
                    let message = result.failure_message();
                    let explanation = match result {
                        ScheduleResult::Scheduled { explanation, .. }
                        | ScheduleResult::Unschedulable { explanation, .. } => {
                            explanation.unwrap_or_default()
                        }
                        ScheduleResult::Error(_) => Explanation::default(),
                    };
                    Ok(ExplainAnswer {
                        explanation,
                        message,
                    })
                }
            },
        };
        let _ = query.reply.send(answer);
    }

    /// A binding could not be stored: forget the placement and try the pod again.
    fn on_bind_failure(&mut self, notice: FailureNotice) {
        debug!(uid = %notice.pod_uid, error = %notice.error, "binding failed");
        self.core.snapshot.remove_pod(&notice.pod_uid);
        let Some(known) = self.live.pods.get_mut(&notice.pod_uid) else {
            return;
        };
        known.assumed_node = None;
        // Its claims' assumed allocations and reservations were not written either: back
        // to the claims as stored (kube's Unreserve).
        for (namespace, name) in std::mem::take(&mut known.assumed_claims) {
            let key = berth_proto::model::ObjectKey::new(Kind::ResourceClaim, &namespace, &name);
            let stored = match self.informer.store().get(&key) {
                Ok(Some(Object::ResourceClaim(c))) => Some(*c),
                Ok(_) => None,
                Err(e) => {
                    warn!(error = %e, "re-reading a claim after a failed binding");
                    continue;
                }
            };
            let dra = self.core.snapshot.dra_mut();
            dra.forget_assumed(&namespace, &name, stored.as_ref().map(convert::claim));
            let claim_key = format!("{namespace}/{name}");
            match stored {
                Some(c) => self.live.claims.insert(claim_key, Arc::new(c)),
                None => self.live.claims.remove(&claim_key),
            };
        }
        let Some(known) = self.live.pods.get_mut(&notice.pod_uid) else {
            return;
        };
        // Re-read the pod: it may have changed, been bound elsewhere or deleted.
        let key = berth_proto::model::ObjectKey::new(
            Kind::Pod,
            &known.pod.metadata.namespace,
            &known.pod.metadata.name,
        );
        let now = Instant::now();
        match self.informer.store().get(&key) {
            Ok(Some(Object::Pod(pod))) if pod.metadata.uid == notice.pod_uid => {
                self.live.pods.remove(&notice.pod_uid);
                self.on_pod(SharedPod::from(*pod), now);
            }
            Ok(_) => {
                self.live.pods.remove(&notice.pod_uid);
                self.core.pod_gone(&notice.pod_uid);
            }
            Err(e) => warn!(error = %e, "re-reading a pod after a failed binding"),
        }
        self.core
            .queue
            .move_all_to_active_or_backoff(ClusterEvent::PodDeleted, now);
    }
}

/// A binding's claim updates rebuilt on the claims as stored now, for a retry after a
/// conflict: the claims the scheduler saw may lag its own writes for other pods of the same
/// claim (a shared claim's later pods only add themselves to `status.reservedFor`).
fn refresh_claims(updates: Vec<ClaimUpdate>, pod: Consumer) -> RefreshBefore {
    Box::new(move |store: &dyn ObjectStore| {
        let mut ops = Vec::with_capacity(updates.len());
        for update in &updates {
            let key = ObjectKey::new(Kind::ResourceClaim, &update.namespace, &update.name);
            let fresh = match store.get(&key) {
                Ok(Some(Object::ResourceClaim(c))) => c,
                Ok(_) => return Err(format!("claim {} is gone", update.claim.key())),
                Err(e) => return Err(e.to_string()),
            };
            let written = convert::reapply_update(&fresh, update, &pod)?;
            ops.push(Op::Update {
                precondition: Precondition::ResourceVersion(fresh.metadata.resource_version),
                object: Object::ResourceClaim(Box::new(written)),
            });
        }
        Ok(ops)
    })
}

/// The live cluster as the attempt writes to it: the writer, the event recorder, and what
/// the loop knows of each pod.
struct Live {
    writer: Writer,
    events: EventRecorder,
    /// The pods not bound in the store, by uid (pending, assumed, or another scheduler's).
    pods: HashMap<String, KnownPod>,
    /// Stored ResourceClaims by `namespace/name`: the base of the scheduler's claim writes.
    claims: HashMap<String, Arc<ResourceClaim>>,
}

impl Cluster for Live {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn bind(
        &mut self,
        info: &Arc<PodInfo>,
        node: &str,
        claims: &[ClaimUpdate],
        _explanation: Option<Explanation>,
    ) {
        let uid = info.uid();
        let mut before = Vec::with_capacity(claims.len());
        let now = Time::now();
        for update in claims {
            let key = format!("{}/{}", update.namespace, update.name);
            let Some(stored) = self.claims.get(&key) else {
                continue;
            };
            let written = convert::apply_update(stored, update, now);
            before.push(Op::Update {
                precondition: Precondition::ResourceVersion(
                    stored.metadata.resource_version.clone(),
                ),
                object: Object::ResourceClaim(Box::new(written)),
            });
        }
        let known = self.pods.get_mut(uid);
        // The latest stored version, so that the binding's precondition is current.
        let pod = known.as_ref().map_or(&info.pod, |k| &k.pod).clone();
        if let Some(known) = known {
            known.assumed_node = Some(node.to_string());
            known.assumed_claims = claims
                .iter()
                .map(|c| (c.namespace.clone(), c.name.clone()))
                .collect();
        }
        self.writer.submit(Write {
            before,
            op: WriteOp::Bind {
                pod: pod.clone(),
                node: node.to_string(),
                at: Time::now(),
            },
            on_failure: Some(FailureNotice {
                pod_uid: uid.to_string(),
                error: String::new(),
            }),
            refresh_before: (!claims.is_empty()).then(|| {
                let consumer = Consumer {
                    resource: "pods".into(),
                    name: pod.metadata.name.clone(),
                    uid: uid.to_string(),
                };
                refresh_claims(claims.to_vec(), consumer)
            }),
        });
        debug!(node = %node, "scheduled");
        self.events.record(
            pod_ref(&pod),
            NORMAL,
            REASON_SCHEDULED,
            scheduled_message(&pod, node),
        );
    }

    /// The victims end with reason Preempted (their agents stop them gracefully), and both
    /// they and the preemptor get an Event.
    fn evict(&mut self, preemptor: &PodInfo, node: &str, victims: &[Arc<PodInfo>]) {
        let by = &preemptor.pod.metadata;
        let mut names = Vec::with_capacity(victims.len());
        for victim in victims {
            names.push(victim.key());
            let stored = self.pods.get(victim.uid()).map_or(&victim.pod, |k| &k.pod);
            let mut ended = (**stored).clone();
            ended.status.phase = PodPhase::Failed;
            ended.status.reason = names::REASON_PREEMPTED.into();
            ended.status.message = format!(
                "Preempted by pod {}/{} on node {}",
                by.namespace, by.name, node
            );
            set_condition(
                &mut ended.status.conditions,
                PodCondition {
                    type_: names::CONDITION_DISRUPTION_TARGET.into(),
                    status: names::STATUS_TRUE.into(),
                    reason: names::REASON_PREEMPTION_BY_SCHEDULER.into(),
                    message: "default-scheduler: preempting to accommodate a higher priority pod"
                        .into(),
                    ..Default::default()
                },
                Time::now(),
            );
            self.events.record(
                pod_ref(&ended),
                NORMAL,
                "Preempted",
                format!("Preempted by pod {} on node {}", by.uid, node),
            );
            self.writer.submit(Write {
                before: Vec::new(),
                op: Op::Update {
                    object: Object::Pod(Box::new(ended)),
                    precondition: Precondition::None,
                }
                .into(),
                on_failure: None,
                refresh_before: None,
            });
        }
        info!(node = %node, victims = ?names, "preempting");
        self.events.record(
            pod_ref(&preemptor.pod),
            NORMAL,
            "Preempting",
            format!(
                "Preempting {} pod(s) on node {}: {}",
                names.len(),
                node,
                names.join(", ")
            ),
        );
    }

    /// Writes PodScheduled=False with the reason and the nomination change in one write, and
    /// a FailedScheduling event, unless the same message is already on the pod and the
    /// nomination does not change.
    fn mark_unschedulable(&mut self, pod: &PodInfo, failure: Failure) {
        let Some(known) = self.pods.get_mut(pod.uid()) else {
            return;
        };
        debug!(message = %failure.message, "unschedulable");
        if failure.event {
            self.events.record(
                pod_ref(&known.pod),
                WARNING,
                "FailedScheduling",
                failure.message.clone(),
            );
        }
        let nomination = match &failure.nomination {
            NominationChange::Keep => None,
            NominationChange::Set(node) => Some(node.clone()),
            NominationChange::Clear => Some(String::new()),
        };
        if known.last_message.as_deref() == Some(failure.message.as_str()) && nomination.is_none() {
            return;
        }
        let mut updated = (*known.pod).clone();
        set_condition(
            &mut updated.status.conditions,
            PodCondition {
                type_: names::CONDITION_POD_SCHEDULED.into(),
                status: names::STATUS_FALSE.into(),
                reason: failure.reason.into(),
                message: failure.message.clone(),
                ..Default::default()
            },
            Time::now(),
        );
        // A nomination is written without a precondition (a status write, as kube's patch):
        // an earlier condition write may not have landed yet.
        let precondition = match nomination {
            Some(node) => {
                updated.status.nominated_node_name = node;
                known.last_message = None;
                Precondition::None
            }
            None => {
                known.last_message = Some(failure.message);
                Precondition::ResourceVersion(known.pod.metadata.resource_version.clone())
            }
        };
        self.writer.submit(Write {
            before: Vec::new(),
            op: Op::Update {
                object: Object::Pod(Box::new(updated)),
                precondition,
            }
            .into(),
            on_failure: None,
            refresh_before: None,
        });
    }
}

impl Live {
    /// Writes PodScheduled=False with reason SchedulingGated, once.
    fn mark_gated(&mut self, pod: &Pod) {
        let gated = pod.status.conditions.iter().any(|c| {
            c.type_ == names::CONDITION_POD_SCHEDULED && c.reason == names::REASON_SCHEDULING_GATED
        });
        if gated {
            return;
        }
        let mut updated = pod.clone();
        set_condition(
            &mut updated.status.conditions,
            PodCondition {
                type_: names::CONDITION_POD_SCHEDULED.into(),
                status: names::STATUS_FALSE.into(),
                reason: names::REASON_SCHEDULING_GATED.into(),
                message: "Scheduling is blocked due to non-empty scheduling gates".into(),
                ..Default::default()
            },
            Time::now(),
        );
        self.writer.submit(Write {
            before: Vec::new(),
            op: Op::Update {
                object: Object::Pod(Box::new(updated)),
                precondition: Precondition::ResourceVersion(pod.metadata.resource_version.clone()),
            }
            .into(),
            on_failure: None,
            refresh_before: None,
        });
    }
}

/// The next explain query, or never when the loop takes none.
async fn next_query(rx: &mut Option<mpsc::Receiver<ExplainQuery>>) -> Option<ExplainQuery> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::informer::testing::LaggyStore;
    use berth_model::testing::{NodeBuilder, PodBuilder};
    use berth_proto::model::ObjectKey;

    fn commit(store: &dyn ObjectStore, op: Op) {
        store.commit(vec![op]).expect("commit");
    }

    fn delete(store: &dyn ObjectStore, kind: Kind, namespace: &str, name: &str) {
        commit(
            store,
            Op::Delete {
                key: ObjectKey::new(kind, namespace, name),
                precondition: Precondition::None,
            },
        );
    }

    /// A loop that fell behind the store catches up from a re-list: what vanished meanwhile
    /// leaves its snapshot and queue, what came meanwhile joins them.
    #[tokio::test]
    async fn a_loop_that_fell_behind_applies_what_it_missed() {
        let store = LaggyStore::new(2);
        for node in ["n1", "n2"] {
            commit(
                store.as_ref(),
                Op::Create(Object::Node(Box::new(NodeBuilder::new(node).build()))),
            );
        }
        commit(
            store.as_ref(),
            Op::Create(Object::Pod(Box::new(PodBuilder::new("a").build()))),
        );
        let (failures_tx, failures) = mpsc::unbounded_channel();
        let (writer, _writer_task) = Writer::spawn(store.clone(), failures_tx);
        let events = EventRecorder::new(writer.clone(), "default-scheduler");
        let mut lp = SchedulingLoop::new(
            store.clone(),
            writer,
            failures,
            events,
            Profiles::default(),
            1,
        );
        lp.drain_changes();
        assert_eq!(lp.core.snapshot.len(), 2);
        assert!(
            lp.live.pods.contains_key("default-a"),
            "pending pod a is known"
        );

        // Four changes overflow the channel of two while the loop does not read.
        delete(store.as_ref(), Kind::Pod, "default", "a");
        delete(store.as_ref(), Kind::Node, "", "n2");
        commit(
            store.as_ref(),
            Op::Create(Object::Pod(Box::new(PodBuilder::new("b").build()))),
        );
        commit(
            store.as_ref(),
            Op::Create(Object::Node(Box::new(NodeBuilder::new("n3").build()))),
        );
        lp.drain_changes();
        let mut nodes: Vec<&str> = ["n1", "n2", "n3"]
            .into_iter()
            .filter(|n| lp.core.snapshot.node(n).is_some())
            .collect();
        nodes.sort();
        assert_eq!(
            nodes,
            ["n1", "n3"],
            "n2 was deleted while the loop was behind"
        );
        assert!(
            !lp.live.pods.contains_key("default-a"),
            "pod a was deleted meanwhile"
        );
        assert!(
            lp.live.pods.contains_key("default-b"),
            "pod b was created meanwhile"
        );
    }
}
