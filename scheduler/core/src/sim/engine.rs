//! The simulation's scheduling loop: the live scheduler's queue and cycle over an in-memory
//! snapshot, with a virtual clock, binding and evicting at once and feeding the queue the
//! cluster events that follow, until no pod can make progress.
//!
//! Time: the clock starts at an arbitrary instant and moves only when the active queue is
//! empty and pods are backing off: it jumps to the earliest back-off expiry. When no pod is
//! active or backing off, nothing can change any more and the run ends.
//!
//! Attempts: each one is [`crate::attempt::Scheduler::schedule_one`], the live loop's own;
//! the engine is its [`Cluster`]. Nominated pods: a pod that preempted waits (in back-off)
//! for its next attempt while its victims are already gone; the cycle counts it on its
//! nominated node while pods of equal or lower priority are filtered (not scored), so the
//! room it made is not taken from it.
//!
//! Termination: an attempt either binds a pod, evicts pods (each pod at most once), or
//! fails. A pod that failed and is tried again before anything changed in the cluster would
//! fail the same way, so it is set aside until the next change instead: the loop ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use berth_model::model::Pod;

use super::budgets::Budgets;
use super::input::Catalog;
use super::{
    AttemptOutcome, ClaimOutcome, DeviceOutcome, NodeOutcome, PodOutcome, SimError, SimOptions,
    SimOutput,
};
use crate::admission::{self, AdmissionConfig, Classes};
use crate::attempt::{Attempt, Cluster, Failure, NominationChange, Scheduler};
use crate::cycle::{Explanation, NodeVerdict};
use crate::dra::convert;
use crate::dra::state::ClaimUpdate;
use crate::framework::PodInfo;
use crate::queue::QueuedPod;

/// kube's condition message for a pod that waits for its scheduling gates.
pub const MESSAGE_SCHEDULING_GATED: &str =
    "Scheduling is blocked due to non-empty scheduling gates";

mod steps;

/// The simulation: the shared scheduler, and the in-memory world it acts on.
pub struct Engine {
    scheduler: Scheduler,
    world: World,
    /// PriorityClasses and RuntimeClasses, for pods that arrive while it runs.
    classes: Classes,
}

/// What one step of a running simulation did, for `berth lab`'s meters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimEvent {
    /// A pod was bound.
    Bound {
        /// The pod's uid.
        uid: String,
        /// Its node.
        node: String,
    },
    /// A preemption on `node` evicted `victims` pods.
    Preempted {
        /// The node.
        node: String,
        /// How many pods it evicted.
        victims: usize,
    },
    /// Something on `node` changed otherwise (a pod left or was placed as written, the node
    /// itself changed, appeared or went away).
    Removed {
        /// The node.
        node: String,
    },
}

/// The simulated cluster as the attempt sees it ([`Cluster`]): the virtual clock, each
/// pending pod's outcome, and the budgets' counts.
struct World {
    now: Instant,
    explain: bool,
    outcomes: Vec<PodOutcome>,
    /// uid → index in `outcomes`, for pods that have an entry.
    entries: HashMap<String, usize>,
    evicted: Vec<String>,
    notes: Vec<String>,
    /// Bumped by every binding and eviction.
    generation: u64,
    /// The generation in which the running attempt started.
    started_in: u64,
    /// uid → the generation in which the pod's latest failed attempt started.
    failed_in: HashMap<String, u64>,
    /// Pods popped again before anything changed since their failure; requeued on the next
    /// change.
    set_aside: Vec<QueuedPod>,
    /// Victims of the running attempt's preemption, as `namespace/name`.
    preempted: Vec<String>,
    budgets: Budgets,
    /// What happened since the caller last looked ([`Engine::settle`]).
    events: Vec<SimEvent>,
}

impl Engine {
    /// Admits every pod: bound ones go onto their nodes, the others into the queue (or
    /// straight into the output, when admission refuses them).
    pub fn new(catalog: Catalog, options: SimOptions) -> Result<Engine, SimError> {
        let Catalog {
            nodes,
            namespaces,
            classes,
            budgets,
            pods,
            device_classes,
            slices,
            claims,
            notes,
        } = catalog;
        let mut scheduler = Scheduler::new(options.profiles, options.seed, options.explain);
        for node in nodes {
            scheduler.snapshot.upsert_node(Arc::new(node));
        }
        let dra = scheduler.snapshot.dra_mut();
        for class in &device_classes {
            dra.upsert_class(convert::class(class));
        }
        for slice in &slices {
            dra.upsert_slice(convert::slice(slice));
        }
        for claim in &claims {
            dra.upsert_claim(convert::claim(claim));
        }
        for (namespace, labels) in namespaces {
            scheduler.snapshot.set_namespace(&namespace, labels);
        }
        let budgets = Budgets::new(&budgets, &pods)?;
        let mut engine = Engine {
            scheduler,
            world: World {
                now: Instant::now(),
                explain: options.explain,
                outcomes: Vec::new(),
                entries: HashMap::new(),
                evicted: Vec::new(),
                notes,
                generation: 0,
                started_in: 0,
                failed_in: HashMap::new(),
                set_aside: Vec::new(),
                preempted: Vec::new(),
                budgets,
                events: Vec::new(),
            },
            classes: classes.clone(),
        };
        for pod in pods {
            if pod.spec.node_name.is_empty() {
                engine.admit_pending(pod, &classes);
            } else {
                engine.place_bound(pod, &classes);
            }
        }
        engine.publish_budgets();
        Ok(engine)
    }

    /// A pod already running on its node: it occupies the node as written (its priority,
    /// start time and deletion timestamp count).
    fn place_bound(&mut self, mut pod: Pod, classes: &Classes) {
        let key = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let notes = &mut self.world.notes;
        if pod.status.phase.is_terminal() {
            notes.push(format!(
                "pod {key} has ended ({}); it does not occupy node {}",
                pod.status.phase.as_str(),
                pod.spec.node_name
            ));
            return;
        }
        if self.scheduler.snapshot.node(&pod.spec.node_name).is_none() {
            notes.push(format!(
                "pod {key} is bound to node {}, which does not exist; left out",
                pod.spec.node_name
            ));
            return;
        }
        admission::apply_defaults(&mut pod);
        if pod.spec.priority.is_none() {
            if let Err(e) = admission::resolve_priority(&mut pod, classes) {
                notes.push(format!("pod {key}: {e}; counted with priority 0"));
                pod.spec.priority = Some(0);
            }
        }
        if let Err(e) = admission::apply_runtime_class(&mut pod, classes) {
            notes.push(format!("pod {key}: {e}; placed without its RuntimeClass"));
        }
        let node = pod.spec.node_name.clone();
        self.world.budgets.pod_bound(&pod);
        self.scheduler
            .snapshot
            .add_pod(&node, Arc::new(PodInfo::new(Arc::new(pod))));
    }

    /// A pod to schedule: admitted and queued, or recorded as refused.
    fn admit_pending(&mut self, mut pod: Pod, classes: &Classes) {
        let world = &mut self.world;
        let index = world.outcomes.len();
        world.outcomes.push(PodOutcome {
            // The catalog has defaulted the namespace already.
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            node: None,
            preempted: Vec::new(),
            message: None,
            nodes: world.explain.then(BTreeMap::new),
            attempts: world.explain.then(Vec::new),
            claims: Vec::new(),
        });
        // Admission drops the status a client wrote; the claims the catalog made for the
        // pod's templates are recorded after it, as kube's claim controller does.
        let claim_statuses = std::mem::take(&mut pod.status.resource_claim_statuses);
        if let Err(e) = admission::admit_pending_pod(&mut pod, classes, &AdmissionConfig::default())
        {
            world.outcomes[index].message = Some(e.to_string());
            return;
        }
        pod.status.resource_claim_statuses = claim_statuses;
        if !self.scheduler.is_responsible_for(&pod) {
            let scheduler = &pod.spec.scheduler_name;
            world.outcomes[index].message =
                Some(format!("no scheduler profile named \"{scheduler}\""));
            return;
        }
        let uid = pod.metadata.uid.clone();
        world.entries.insert(uid.clone(), index);
        self.scheduler
            .pod_pending(Arc::new(PodInfo::new(Arc::new(pod))), None, world.now);
        if self.scheduler.queue.is_gated(&uid) {
            world.outcomes[index].message = Some(MESSAGE_SCHEDULING_GATED.to_string());
        }
    }

    /// Schedules until no pod can make progress; returns the outcome.
    pub fn run(mut self) -> SimOutput {
        self.step_until(None);
        SimOutput {
            pods: self.world.outcomes,
            evicted: self.world.evicted,
            notes: self.world.notes,
        }
    }

    /// Schedules until no pod can make progress, moving the clock to back-off expiries
    /// (those no later than `until`, when given).
    fn step_until(&mut self, until: Option<Instant>) {
        loop {
            match self.scheduler.schedule_one(&mut self.world) {
                Some(Attempt::Bound { .. }) => self.changed(),
                Some(Attempt::Preempted { victims, .. }) if victims > 0 => self.changed(),
                Some(_) => {}
                None => match self.scheduler.queue.next_wakeup() {
                    Some(wakeup)
                        if wakeup > self.world.now && until.is_none_or(|u| wakeup <= u) =>
                    {
                        self.world.now = wakeup
                    }
                    _ => break,
                },
            }
        }
    }

    /// The cluster changed: budgets are recounted and pods set aside get another chance
    /// (the attempt itself told the queue of the event).
    fn changed(&mut self) {
        self.publish_budgets();
        for queued in std::mem::take(&mut self.world.set_aside) {
            self.scheduler
                .queue
                .requeue_after_error(queued, self.world.now);
        }
    }

    fn publish_budgets(&mut self) {
        if !self.world.budgets.is_empty() {
            self.scheduler
                .snapshot
                .set_disruption_budgets(self.world.budgets.current());
        }
    }
}

impl World {
    /// The uid of a pod that is queued and not placed.
    fn pending_uid(&self, namespace: &str, name: &str) -> Option<String> {
        self.entries.iter().find_map(|(uid, &i)| {
            let o = &self.outcomes[i];
            (o.node.is_none() && o.namespace == namespace && o.name == name).then(|| uid.clone())
        })
    }

    fn outcome(&mut self, uid: &str) -> Option<&mut PodOutcome> {
        let index = *self.entries.get(uid)?;
        Some(&mut self.outcomes[index])
    }

    /// Records an attempt of `uid` in its history (with `--explain`).
    fn record_attempt(
        &mut self,
        uid: &str,
        explanation: Option<Explanation>,
        nominated: Option<String>,
    ) {
        let preempted = std::mem::take(&mut self.preempted);
        let Some(outcome) = self.outcome(uid) else {
            return;
        };
        let Some(attempts) = outcome.attempts.as_mut() else {
            return;
        };
        let nodes = explanation.map(node_outcomes).unwrap_or_default();
        attempts.push(AttemptOutcome {
            nodes: nodes.clone(),
            preempted,
            nominated,
        });
        outcome.nodes = Some(nodes);
    }
}

impl Cluster for World {
    fn now(&self) -> Instant {
        self.now
    }

    /// A pod that failed and is popped again before anything changed would fail the same
    /// way: it is set aside until the next change.
    fn begin(&mut self, queued: QueuedPod) -> Option<QueuedPod> {
        if self.failed_in.get(queued.info.uid()) == Some(&self.generation) {
            self.set_aside.push(queued);
            return None;
        }
        self.started_in = self.generation;
        self.preempted.clear();
        Some(queued)
    }

    fn bind(
        &mut self,
        pod: &Arc<PodInfo>,
        node: &str,
        claims: &[ClaimUpdate],
        explanation: Option<Explanation>,
    ) {
        let mut bound = (*pod.pod).clone();
        bound.spec.node_name = node.to_string();
        self.budgets.pod_bound(&bound);
        self.generation += 1;
        let uid = pod.uid();
        self.events.push(SimEvent::Bound {
            uid: uid.to_string(),
            node: node.to_string(),
        });
        self.record_attempt(uid, explanation, None);
        if let Some(outcome) = self.outcome(uid) {
            outcome.node = Some(node.to_string());
            outcome.message = None;
            outcome.claims = claims.iter().map(claim_outcome).collect();
        }
    }

    fn evict(&mut self, preemptor: &PodInfo, node: &str, victims: &[Arc<PodInfo>]) {
        let by = preemptor.key();
        self.events.push(SimEvent::Preempted {
            node: node.to_string(),
            victims: victims.len(),
        });
        for victim in victims {
            let key = victim.key();
            self.budgets.pod_removed(&victim.pod);
            self.generation += 1;
            self.evicted.push(key.clone());
            self.preempted.push(key.clone());
            if let Some(outcome) = self.outcome(preemptor.uid()) {
                outcome.preempted.push(key);
            }
            if let Some(outcome) = self.outcome(victim.uid()) {
                outcome.node = None;
                outcome.message = Some(format!("preempted by {by} on node {node}"));
            }
        }
    }

    fn mark_unschedulable(&mut self, pod: &PodInfo, failure: Failure) {
        let uid = pod.uid();
        let nominated = match failure.nomination {
            NominationChange::Set(node) => Some(node),
            NominationChange::Clear => None,
            NominationChange::Keep => {
                Some(pod.pod.status.nominated_node_name.clone()).filter(|node| !node.is_empty())
            }
        };
        let explained = failure.explanation.is_some();
        let previous = self.outcome(uid).and_then(|o| o.nodes.clone());
        self.record_attempt(uid, failure.explanation, nominated);
        if let Some(outcome) = self.outcome(uid) {
            outcome.node = None;
            outcome.message = Some(failure.message);
            if !explained {
                // An error explains nothing: the last verdicts stand.
                outcome.nodes = previous;
            }
        }
        self.failed_in.insert(uid.to_string(), self.started_in);
    }
}
/// A claim's allocation in the output's shape.
fn claim_outcome(update: &ClaimUpdate) -> ClaimOutcome {
    let devices = update
        .claim
        .allocation
        .iter()
        .flat_map(|a| &a.devices)
        .map(|d| DeviceOutcome {
            request: d.request.clone(),
            driver: d.id.driver.to_string(),
            pool: d.id.pool.to_string(),
            device: d.id.device.to_string(),
            consumed_capacity: d
                .consumed_capacity
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            share_id: d.share_id.clone(),
        })
        .collect();
    ClaimOutcome {
        name: update.pod_claim_name.clone(),
        claim: format!("{}/{}", update.namespace, update.name),
        devices,
    }
}

/// The cycle's explanation in the output's shape.
fn node_outcomes(explanation: Explanation) -> BTreeMap<String, NodeOutcome> {
    explanation
        .nodes
        .into_iter()
        .map(|(name, verdict)| {
            let outcome = match verdict {
                NodeVerdict::Feasible { score } => NodeOutcome::feasible(score),
                NodeVerdict::Rejected { reasons, .. } => NodeOutcome::rejected(reasons),
            };
            (name, outcome)
        })
        .collect()
}
