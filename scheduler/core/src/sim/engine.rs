//! The simulation's scheduling loop: the live scheduler's queue and cycle over an in-memory
//! snapshot, with a virtual clock, binding and evicting at once and feeding the queue the
//! cluster events that follow, until no pod can make progress.
//!
//! Time: the clock starts at an arbitrary instant and moves only when the active queue is
//! empty and pods are backing off: it jumps to the earliest back-off expiry. When no pod is
//! active or backing off, nothing can change any more and the run ends.
//!
//! Nominated pods: a pod that preempted waits (in back-off) for its next attempt while its
//! victims are already gone. As kube's nominator does, pods nominated to a node are counted
//! on that node while pods of equal or lower priority are scheduled, so the room they made
//! is not taken from them. (kube counts them for filtering only; here they are on the node
//! for the whole cycle, so they also weigh in the other pods' scores.)
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
use super::{NodeOutcome, PodOutcome, SimError, SimOptions, SimOutput};
use crate::admission::{self, AdmissionConfig, Classes};
use crate::cycle::{Algorithm, Explanation, NodeVerdict, ScheduleOptions, ScheduleResult};
use crate::framework::{PodInfo, Snapshot, Victim};
use crate::profile::Profiles;
use crate::queue::{ClusterEvent, QueuedPod, SchedulingQueue};

/// kube's condition message for a pod that waits for its scheduling gates.
pub const MESSAGE_SCHEDULING_GATED: &str =
    "Scheduling is blocked due to non-empty scheduling gates";

/// The simulation's state.
pub struct Engine {
    profiles: Profiles,
    explain: bool,
    algorithm: Algorithm,
    snapshot: Snapshot,
    queue: SchedulingQueue,
    now: Instant,
    outcomes: Vec<PodOutcome>,
    /// uid → index in `outcomes`, for pods that have an entry.
    entries: HashMap<String, usize>,
    evicted: Vec<String>,
    notes: Vec<String>,
    /// uid → (nominated node, the pod) of pending pods whose preemption made room.
    nominated: BTreeMap<String, (String, Arc<PodInfo>)>,
    /// Bumped by every binding and eviction.
    generation: u64,
    /// uid → the generation in which the pod's latest failed attempt started.
    failed_in: HashMap<String, u64>,
    /// Pods popped again before anything changed since their failure; requeued on the next
    /// change.
    set_aside: Vec<QueuedPod>,
    budgets: Budgets,
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
            notes,
        } = catalog;
        let mut snapshot = Snapshot::new();
        for node in nodes {
            snapshot.upsert_node(Arc::new(node));
        }
        for (namespace, labels) in namespaces {
            snapshot.set_namespace(&namespace, labels);
        }
        let budgets = Budgets::new(&budgets, &pods)?;
        let mut engine = Engine {
            queue: SchedulingQueue::new(options.profiles.queue_config()),
            algorithm: Algorithm::new(options.seed),
            profiles: options.profiles,
            explain: options.explain,
            snapshot,
            now: Instant::now(),
            outcomes: Vec::new(),
            entries: HashMap::new(),
            evicted: Vec::new(),
            notes,
            nominated: BTreeMap::new(),
            generation: 0,
            failed_in: HashMap::new(),
            set_aside: Vec::new(),
            budgets,
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
        if pod.status.phase.is_terminal() {
            self.notes.push(format!(
                "pod {key} has ended ({}); it does not occupy node {}",
                pod.status.phase.as_str(),
                pod.spec.node_name
            ));
            return;
        }
        if self.snapshot.node(&pod.spec.node_name).is_none() {
            self.notes.push(format!(
                "pod {key} is bound to node {}, which does not exist; left out",
                pod.spec.node_name
            ));
            return;
        }
        admission::apply_defaults(&mut pod);
        if pod.spec.priority.is_none() {
            if let Err(e) = admission::resolve_priority(&mut pod, classes) {
                self.notes
                    .push(format!("pod {key}: {e}; counted with priority 0"));
                pod.spec.priority = Some(0);
            }
        }
        if let Err(e) = admission::apply_runtime_class(&mut pod, classes) {
            self.notes
                .push(format!("pod {key}: {e}; placed without its RuntimeClass"));
        }
        let node = pod.spec.node_name.clone();
        self.budgets.pod_bound(&pod);
        self.snapshot
            .add_pod(&node, Arc::new(PodInfo::new(Arc::new(pod))));
    }

    /// A pod to schedule: admitted and queued, or recorded as refused.
    fn admit_pending(&mut self, mut pod: Pod, classes: &Classes) {
        let index = self.outcomes.len();
        self.outcomes.push(PodOutcome {
            // The catalog has defaulted the namespace already.
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            node: None,
            preempted: Vec::new(),
            message: None,
            nodes: self.explain.then(BTreeMap::new),
        });
        if let Err(e) = admission::admit_pending_pod(&mut pod, classes, &AdmissionConfig::default())
        {
            self.outcomes[index].message = Some(e.to_string());
            return;
        }
        let scheduler = &pod.spec.scheduler_name;
        if self.profiles.get(scheduler).is_none() {
            self.outcomes[index].message =
                Some(format!("no scheduler profile named \"{scheduler}\""));
            return;
        }
        let uid = pod.metadata.uid.clone();
        self.entries.insert(uid.clone(), index);
        self.queue
            .add(Arc::new(PodInfo::new(Arc::new(pod))), self.now);
        if self.queue.is_gated(&uid) {
            self.outcomes[index].message = Some(MESSAGE_SCHEDULING_GATED.to_string());
        }
    }

    /// Schedules until no pod can make progress; returns the outcome.
    pub fn run(mut self) -> SimOutput {
        loop {
            self.queue.flush_unschedulable_leftover(self.now);
            if let Some(queued) = self.queue.pop(self.now) {
                self.attempt(queued);
                continue;
            }
            match self.queue.next_wakeup() {
                Some(wakeup) if wakeup > self.now => self.now = wakeup,
                _ => break,
            }
        }
        SimOutput {
            pods: self.outcomes,
            evicted: self.evicted,
            notes: self.notes,
        }
    }

    /// One scheduling attempt of a popped pod.
    fn attempt(&mut self, mut queued: QueuedPod) {
        let uid = queued.info.uid().to_string();
        if self.failed_in.get(&uid) == Some(&self.generation) {
            self.set_aside.push(queued);
            return;
        }
        let scheduler = queued.info.pod.spec.scheduler_name.clone();
        if self.profiles.get(&scheduler).is_none() {
            // Admission only queues pods whose profile exists.
            return;
        }
        let started_in = self.generation;
        let placed = self.place_nominated_pods(&queued.info);
        let profile = self
            .profiles
            .get(&scheduler)
            .expect("the profile was found above");
        let result = self.algorithm.schedule(
            profile,
            &self.snapshot,
            &queued.info,
            &ScheduleOptions {
                explain: self.explain,
            },
        );
        for uid in placed {
            self.snapshot.remove_pod(&uid);
        }
        let message = result.failure_message();
        match result {
            ScheduleResult::Scheduled {
                node, explanation, ..
            } => self.bind(&queued.info, node, explanation),
            ScheduleResult::Unschedulable {
                diagnosis,
                nomination,
                explanation,
                ..
            } => {
                self.record_failure(&uid, message, explanation);
                match nomination {
                    Some(nomination) => {
                        let preemptor = queued.info.key();
                        for victim in &nomination.victims {
                            self.evict(victim, &preemptor, &nomination.node, &uid);
                        }
                        queued.info = with_nomination(&queued.info, &nomination.node);
                        self.nominated
                            .insert(uid.clone(), (nomination.node, queued.info.clone()));
                    }
                    None => {
                        if self.nominated.remove(&uid).is_some() {
                            queued.info = with_nomination(&queued.info, "");
                        }
                    }
                }
                self.failed_in.insert(uid, started_in);
                self.queue
                    .add_unschedulable(queued, diagnosis.unschedulable_plugins, self.now);
            }
            ScheduleResult::Error(_) => {
                self.record_failure(&uid, message, None);
                self.failed_in.insert(uid, started_in);
                self.queue.requeue_after_error(queued, self.now);
            }
        }
    }

    /// Puts the pods nominated to nodes, of at least `pod`'s priority, on those nodes for
    /// the length of `pod`'s cycle; returns their uids.
    fn place_nominated_pods(&mut self, pod: &PodInfo) -> Vec<String> {
        let mut placed = Vec::new();
        for (uid, (node, info)) in &self.nominated {
            if uid != pod.uid()
                && info.priority >= pod.priority
                && self.snapshot.add_pod(node, info.clone())
            {
                placed.push(uid.clone());
            }
        }
        placed
    }

    fn record_failure(
        &mut self,
        uid: &str,
        message: Option<String>,
        explanation: Option<Explanation>,
    ) {
        if let Some(&index) = self.entries.get(uid) {
            let outcome = &mut self.outcomes[index];
            outcome.node = None;
            outcome.message = message;
            if let Some(explanation) = explanation {
                outcome.nodes = Some(node_outcomes(explanation));
            }
        }
    }

    /// Binds a pod at once and tells the queue.
    fn bind(&mut self, info: &PodInfo, node: String, explanation: Option<Explanation>) {
        let uid = info.uid().to_string();
        let mut pod = (*info.pod).clone();
        pod.spec.node_name = node.clone();
        pod.status.nominated_node_name.clear();
        self.budgets.pod_bound(&pod);
        self.snapshot
            .add_pod(&node, Arc::new(PodInfo::new(Arc::new(pod))));
        self.nominated.remove(&uid);
        if let Some(&index) = self.entries.get(&uid) {
            let outcome = &mut self.outcomes[index];
            outcome.node = Some(node);
            outcome.message = None;
            if let Some(explanation) = explanation {
                outcome.nodes = Some(node_outcomes(explanation));
            }
        }
        self.changed(ClusterEvent::PodAdded);
    }

    /// Evicts a victim of `preemptor`'s preemption on `node`.
    fn evict(&mut self, victim: &Victim, preemptor: &str, node: &str, preemptor_uid: &str) {
        let Some((_, removed)) = self.snapshot.remove_pod(&victim.uid) else {
            return;
        };
        let key = removed.key();
        self.budgets.pod_removed(&removed.pod);
        self.evicted.push(key.clone());
        if let Some(&index) = self.entries.get(preemptor_uid) {
            self.outcomes[index].preempted.push(key);
        }
        if let Some(&index) = self.entries.get(&victim.uid) {
            let outcome = &mut self.outcomes[index];
            outcome.node = None;
            outcome.message = Some(format!("preempted by {preemptor} on node {node}"));
        }
        self.changed(ClusterEvent::PodDeleted);
    }

    /// The cluster changed: budgets are recounted, pods waiting for such an event move,
    /// and pods set aside get another chance.
    fn changed(&mut self, event: ClusterEvent) {
        self.generation += 1;
        self.publish_budgets();
        self.queue.move_all_to_active_or_backoff(event, self.now);
        for queued in std::mem::take(&mut self.set_aside) {
            self.queue.requeue_after_error(queued, self.now);
        }
    }

    fn publish_budgets(&mut self) {
        if !self.budgets.is_empty() {
            self.snapshot.set_disruption_budgets(self.budgets.current());
        }
    }
}

/// The pod with `status.nominatedNodeName` set to `node` (cleared when empty).
fn with_nomination(info: &PodInfo, node: &str) -> Arc<PodInfo> {
    let mut pod = (*info.pod).clone();
    pod.status.nominated_node_name = node.to_string();
    Arc::new(PodInfo::new(Arc::new(pod)))
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
