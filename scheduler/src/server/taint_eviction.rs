//! The NoExecute taint eviction controller (kube's taint-eviction-controller): pods bound to a
//! node with a NoExecute taint they do not tolerate are deleted at once; pods that tolerate it
//! for `tolerationSeconds` are deleted when that time has passed since the taint was added,
//! unless the taint goes first; pods that tolerate it with no time limit stay.
//!
//! This holds for every NoExecute taint: those the node lifecycle controller sets
//! (`not-ready`, `unreachable`) and those a user sets (`berth taint nodes n1 k=v:NoExecute`).
//! Rate limiting belongs to the lifecycle controller, which adds its taints at a limited rate;
//! a user's taint acts at once.
//!
//! Time counts from the taint's `timeAdded` (the lifecycle controller always sets it); for a
//! taint without one, from when this controller first saw it. As in Kubernetes, a toleration
//! is the first one of the pod's that matches the taint, and `tolerationSeconds` of zero or less
//! means at once. An evicted pod gets the `DisruptionTarget` condition (reason
//! `DeletionByTaintManager`) and is deleted through the store, so that its agent stops it and
//! its owner replaces it; an Event `TaintManagerEviction` says so. Pods that have ended
//! (Succeeded, Failed) are left in place: they run nowhere.
//!
//! The controller follows nodes and pods through an [`Informer`] and works from its
//! reflector; after a re-list (it fell behind the store) it looks at every node again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use berth_proto::model::{
    Kind, Node, Object, ObjectKey, Pod, PodCondition, Taint, TaintEffect, Time, Toleration,
};
use berth_proto::names;
use berth_store::{ObjectStore, Op, Precondition};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::error::Result;
use super::events::{pod_ref, EventRecorder, NORMAL};
use super::informer::{Event, Informer};
use crate::plugins::taint_toleration::toleration_matches;
use berth_proto::conditions::set_condition;

/// Name the controller's events report as.
pub const COMPONENT: &str = "taint-eviction-controller";
/// Reason of the controller's events.
pub const EVENT_REASON: &str = "TaintManagerEviction";
/// Message of the `DisruptionTarget` condition of an evicted pod.
pub const DISRUPTION_MESSAGE: &str = "Taint manager: deleting due to NoExecute taint";

/// How often to try an eviction whose write keeps meeting concurrent changes.
const EVICTION_ATTEMPTS: usize = 5;

/// A NoExecute taint and the time its tolerations count from.
#[derive(Clone, Debug, PartialEq)]
pub struct TimedTaint {
    /// The taint.
    pub taint: Taint,
    /// Its `timeAdded`, or when the controller first saw it.
    pub since: SystemTime,
}

/// What a node's NoExecute taints mean for one pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every taint is tolerated without a time limit (or there are none).
    Stay,
    /// A taint is not tolerated, or a toleration's time has run out: the pod leaves now.
    Evict,
    /// The pod leaves at this time unless the taints change before.
    EvictAt(SystemTime),
}

/// Decides when a pod with `tolerations` must leave a node with `taints`, at `now`. For each
/// taint the first matching toleration counts (kube's `GetMatchingTolerations`); the pod
/// leaves at the earliest time any taint's toleration runs out.
pub fn verdict(tolerations: &[Toleration], taints: &[TimedTaint], now: SystemTime) -> Verdict {
    let mut earliest: Option<SystemTime> = None;
    for timed in taints {
        let Some(used) = tolerations
            .iter()
            .find(|t| toleration_matches(t, &timed.taint))
        else {
            return Verdict::Evict;
        };
        match used.toleration_seconds {
            None => {}
            Some(seconds) if seconds <= 0 => return Verdict::Evict,
            Some(seconds) => {
                let at = timed.since + Duration::from_secs(seconds.unsigned_abs());
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        }
    }
    match earliest {
        None => Verdict::Stay,
        Some(at) if at <= now => Verdict::Evict,
        Some(at) => Verdict::EvictAt(at),
    }
}

/// A pod due to leave later.
#[derive(Clone, Debug)]
struct Scheduled {
    key: ObjectKey,
    at: SystemTime,
}

/// The controller's memory: NoExecute taints by node, and the evictions it has planned.
/// Everything here can be rebuilt from the reflector ([`TaintEvictionController::resync`]).
pub struct TaintEvictionController {
    informer: Informer,
    events: EventRecorder,
    /// Set when a round failed: the next one looks at everything again.
    needs_resync: bool,
    /// NoExecute taints of each node that has some.
    tainted: HashMap<String, Vec<TimedTaint>>,
    /// Planned evictions by pod uid.
    scheduled: HashMap<String, Scheduled>,
}

impl TaintEvictionController {
    /// A controller over `store`, recording events with `events`. Subscribes to the store's
    /// changes now.
    pub fn new(store: Arc<dyn ObjectStore>, events: EventRecorder) -> Self {
        TaintEvictionController {
            informer: Informer::new("taint eviction", store, &[Kind::Node, Kind::Pod]),
            events,
            needs_resync: false,
            tainted: HashMap::new(),
            scheduled: HashMap::new(),
        }
    }

    /// When the next planned eviction is due, if any.
    pub fn next_deadline(&self) -> Option<SystemTime> {
        self.scheduled.values().map(|s| s.at).min()
    }

    /// Takes every change that has arrived and acts on it at `now`: see
    /// [`TaintEvictionController::handle`].
    pub fn sync(&mut self, now: SystemTime) -> Result<()> {
        let events: Vec<Event> = std::iter::from_fn(|| self.informer.try_next()).collect();
        self.handle(&events, now)
    }

    /// Looks at every node and every pod on a tainted node again, at `now`.
    pub fn resync(&mut self, now: SystemTime) -> Result<()> {
        let previous = std::mem::take(&mut self.tainted);
        for obj in self.informer.cache().list(Kind::Node, None) {
            if let Object::Node(node) = obj {
                let taints = timed_taints(node, previous.get(&node.metadata.name), now);
                if !taints.is_empty() {
                    self.tainted.insert(node.metadata.name.clone(), taints);
                }
            }
        }
        let mut seen = HashSet::new();
        for obj in self.bound_pods() {
            if let Object::Pod(pod) = &*obj {
                seen.insert(pod.metadata.uid.clone());
                self.process_pod(pod, now);
            }
        }
        // Planned evictions of pods that are gone are dropped.
        self.scheduled.retain(|uid, _| seen.contains(uid));
        Ok(())
    }

    /// Handles a batch of events, then evicts the pods whose time has come. A batch that
    /// ends a list (or follows a failed round) makes it look at everything again.
    pub fn handle(&mut self, events: &[Event], now: SystemTime) -> Result<()> {
        let result = self.handle_inner(events, now);
        self.needs_resync = result.is_err();
        result
    }

    fn handle_inner(&mut self, events: &[Event], now: SystemTime) -> Result<()> {
        if self.needs_resync || events.iter().any(|e| *e == Event::InitDone) {
            self.resync(now)?;
            return self.fire_due(now);
        }
        // The latest state of each node and pod in the batch (None: deleted), borrowed from
        // the events.
        let mut nodes: BTreeMap<&str, Option<&Node>> = BTreeMap::new();
        let mut pods: BTreeMap<&str, (&Pod, bool)> = BTreeMap::new();
        for event in events {
            let deleted = event.is_delete();
            match event.object() {
                Some(Object::Node(node)) => {
                    nodes.insert(&node.metadata.name, (!deleted).then_some(&**node));
                }
                Some(Object::Pod(pod)) => {
                    pods.insert(&pod.metadata.uid, (&**pod, deleted));
                }
                _ => {}
            }
        }
        let mut redone = HashSet::new();
        for (name, node) in nodes {
            if self.note_taints(name, node, now) {
                redone.insert(name.to_string());
            }
        }
        // Every pod on a node whose taints changed, in one pass over the pods however many
        // nodes changed (the lifecycle controller taints nodes by the hundred when a zone
        // goes away).
        if !redone.is_empty() {
            for obj in self.bound_pods() {
                if let Object::Pod(pod) = &*obj {
                    if redone.contains(&pod.spec.node_name) {
                        self.process_pod(pod, now);
                    }
                }
            }
        }
        for (uid, (pod, deleted)) in pods {
            if redone.contains(&pod.spec.node_name) {
                continue; // every pod of the node was just looked at
            }
            if deleted {
                if let Some(s) = self.scheduled.remove(uid) {
                    self.record_cancel(&s.key, uid);
                }
            } else if self.tainted.contains_key(&pod.spec.node_name)
                || self.scheduled.contains_key(uid)
            {
                self.process_pod(pod, now);
            }
        }
        self.fire_due(now)
    }

    /// Notes a node's new NoExecute taints. Returns whether they changed, and so whether
    /// every pod on the node is to be looked at again.
    fn note_taints(&mut self, name: &str, node: Option<&Node>, now: SystemTime) -> bool {
        let taints = match node {
            Some(node) => timed_taints(node, self.tainted.get(name), now),
            None => Vec::new(),
        };
        let before = self.tainted.get(name).map(Vec::as_slice).unwrap_or(&[]);
        if taints.as_slice() == before {
            return false;
        }
        debug!(node = %name, taints = taints.len(), "NoExecute taints changed");
        if taints.is_empty() {
            self.tainted.remove(name);
        } else {
            self.tainted.insert(name.to_string(), taints);
        }
        true
    }

    /// Evicts, plans or cancels the eviction of one pod, from its node's current taints.
    fn process_pod(&mut self, pod: &Pod, now: SystemTime) {
        let uid = &pod.metadata.uid;
        if !pod.is_active() {
            self.scheduled.remove(uid);
            return;
        }
        let key = ObjectKey::new(Kind::Pod, &pod.metadata.namespace, &pod.metadata.name);
        let taints = self
            .tainted
            .get(&pod.spec.node_name)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        match verdict(&pod.spec.tolerations, taints, now) {
            Verdict::Stay => {
                if self.scheduled.remove(uid).is_some() {
                    self.record_cancel(&key, uid);
                }
            }
            Verdict::Evict => {
                self.scheduled.remove(uid);
                self.evict(&key, uid, &pod.spec.node_name);
            }
            Verdict::EvictAt(at) => {
                debug!(pod = %key, node = %pod.spec.node_name, "eviction planned");
                self.scheduled.insert(uid.clone(), Scheduled { key, at });
            }
        }
    }

    /// Evicts the pods whose planned time has come, re-reading each first.
    fn fire_due(&mut self, now: SystemTime) -> Result<()> {
        let due: Vec<(String, ObjectKey)> = self
            .scheduled
            .iter()
            .filter(|(_, s)| s.at <= now)
            .map(|(uid, s)| (uid.clone(), s.key.clone()))
            .collect();
        for (uid, key) in due {
            match self.informer.store().get(&key)? {
                Some(Object::Pod(pod)) if pod.metadata.uid == uid => self.process_pod(&pod, now),
                _ => {
                    self.scheduled.remove(&uid);
                }
            }
        }
        Ok(())
    }

    /// Every non-terminal pod bound to a node, shared with the reflector (not copied: a
    /// copy of every pod for each tainted node was what a zone's outage cost at 50,000 pods).
    fn bound_pods(&self) -> Vec<Arc<Object>> {
        self.informer
            .cache()
            .list_shared(Kind::Pod, None)
            .into_iter()
            .filter(|obj| {
                matches!(&***obj, Object::Pod(pod)
                    if !pod.spec.node_name.is_empty() && !pod.status.phase.is_terminal())
            })
            .cloned()
            .collect()
    }

    /// Marks the pod a disruption target and deletes it, if it is still the same pod on the
    /// same node; records the Event first, as Kubernetes does.
    fn evict(&mut self, key: &ObjectKey, uid: &str, node: &str) {
        let store = self.informer.store().clone();
        let mut announced = false;
        for _ in 0..EVICTION_ATTEMPTS {
            let mut pod = match store.get(key) {
                Ok(Some(Object::Pod(pod))) => pod,
                Ok(_) => return,
                Err(e) => {
                    warn!(pod = %key, error = %e, "reading a pod to evict failed");
                    return;
                }
            };
            if pod.metadata.uid != uid || pod.spec.node_name != node {
                return;
            }
            if !announced {
                info!(pod = %key, node = %node, "evicting for a NoExecute taint");
                self.events.record(
                    pod_ref(&pod),
                    NORMAL,
                    EVENT_REASON,
                    format!("Marking for deletion Pod {}/{}", key.namespace, key.name),
                );
                announced = true;
            }
            let marked = pod.status.conditions.iter().any(|c| {
                c.type_ == names::CONDITION_DISRUPTION_TARGET
                    && c.reason == names::REASON_DELETION_BY_TAINT_MANAGER
            });
            if !marked {
                set_condition(
                    &mut pod.status.conditions,
                    PodCondition {
                        type_: names::CONDITION_DISRUPTION_TARGET.into(),
                        status: names::STATUS_TRUE.into(),
                        reason: names::REASON_DELETION_BY_TAINT_MANAGER.into(),
                        message: DISRUPTION_MESSAGE.into(),
                        ..Default::default()
                    },
                    Time::now(),
                );
                let rv = pod.metadata.resource_version.clone();
                match store.commit(vec![Op::Update {
                    object: Object::Pod(pod),
                    precondition: Precondition::ResourceVersion(rv),
                }]) {
                    Ok(changes) => self.applied(&changes),
                    Err(berth_store::Error::Conflict { .. }) => continue,
                    Err(berth_store::Error::NotFound { .. }) => return,
                    Err(e) => {
                        warn!(pod = %key, error = %e, "marking a pod for eviction failed");
                        return;
                    }
                }
                continue; // delete the version just written
            }
            let rv = pod.metadata.resource_version.clone();
            match store.commit(vec![Op::Delete {
                key: key.clone(),
                precondition: Precondition::ResourceVersion(rv),
            }]) {
                Ok(changes) => return self.applied(&changes),
                Err(berth_store::Error::Conflict { .. }) => continue,
                Err(berth_store::Error::NotFound { .. }) => return,
                Err(e) => {
                    warn!(pod = %key, error = %e, "deleting an evicted pod failed");
                    return;
                }
            }
        }
        warn!(pod = %key, "the pod kept changing; eviction left for the next change");
    }

    /// Puts the controller's own writes into the reflector at once: their copies from the
    /// stream are then recognised and dropped.
    fn applied(&mut self, changes: &[berth_store::Change]) {
        for change in changes {
            self.informer.apply(change);
        }
    }

    fn record_cancel(&self, key: &ObjectKey, uid: &str) {
        debug!(pod = %key, "planned eviction cancelled");
        self.events.record(
            berth_proto::model::ObjectReference {
                kind: "Pod".into(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                uid: uid.to_string(),
                ..Default::default()
            },
            NORMAL,
            EVENT_REASON,
            format!("Cancelling deletion of Pod {}/{}", key.namespace, key.name),
        );
    }
}

/// A node's NoExecute taints with the time each counts from: its `timeAdded`, else the time
/// already known for the same taint, else `now`.
fn timed_taints(node: &Node, known: Option<&Vec<TimedTaint>>, now: SystemTime) -> Vec<TimedTaint> {
    node.spec
        .taints
        .iter()
        .filter(|t| t.effect == TaintEffect::NoExecute)
        .map(|t| {
            let since = t.time_added.map(|time| time.0).unwrap_or_else(|| {
                known
                    .and_then(|k| {
                        k.iter()
                            .find(|o| o.taint.key == t.key && o.taint.value == t.value)
                    })
                    .map_or(now, |o| o.since)
            });
            TimedTaint {
                taint: t.clone(),
                since,
            }
        })
        .collect()
}

/// Runs the controller until `shutdown` fires: it lists nodes and pods, then follows their
/// changes and wakes when a planned eviction is due. Its rounds write to the store: run it
/// on a thread of its own ([`super::informer::spawn`]).
pub async fn run(mut controller: TaintEvictionController, shutdown: CancellationToken) {
    /// How long to sleep when nothing is planned; changes wake the loop anyway.
    const IDLE: Duration = Duration::from_secs(3600);
    info!("taint eviction controller started");
    loop {
        let sleep = controller.next_deadline().map_or(IDLE, |at| {
            at.duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
        });
        let mut events = Vec::new();
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(sleep) => {}
            event = controller.informer.next() => match event {
                Some(event) => events.push(event),
                None => return,
            },
        }
        events.extend(std::iter::from_fn(|| controller.informer.try_next()));
        if let Err(e) = controller.handle(&events, SystemTime::now()) {
            warn!(error = %e, "taint eviction pass failed; looking at everything again");
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{exists_toleration, NodeBuilder, PodBuilder};
    use berth_proto::model::PodPhase;
    use berth_store::{ChangeType, SledStore};

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + seconds)
    }

    fn taint(key: &str, value: &str, since: u64) -> TimedTaint {
        TimedTaint {
            taint: Taint {
                key: key.into(),
                value: value.into(),
                effect: TaintEffect::NoExecute,
                time_added: None,
            },
            since: at(since),
        }
    }

    fn tolerate(key: &str, effect: Option<TaintEffect>, seconds: Option<i64>) -> Toleration {
        Toleration {
            toleration_seconds: seconds,
            ..exists_toleration(key, effect)
        }
    }

    #[test]
    fn which_pods_leave_when() {
        struct Case {
            name: &'static str,
            tolerations: Vec<Toleration>,
            taints: Vec<TimedTaint>,
            now: u64,
            want: Verdict,
        }
        let no_exec = Some(TaintEffect::NoExecute);
        let cases = vec![
            Case {
                name: "no taints: stay",
                tolerations: vec![],
                taints: vec![],
                now: 0,
                want: Verdict::Stay,
            },
            Case {
                name: "untolerated taint: leave at once",
                tolerations: vec![tolerate("other", None, None)],
                taints: vec![taint("k", "v", 0)],
                now: 0,
                want: Verdict::Evict,
            },
            Case {
                name: "tolerated forever: stay",
                tolerations: vec![tolerate("k", no_exec, None)],
                taints: vec![taint("k", "v", 0)],
                now: 1_000,
                want: Verdict::Stay,
            },
            Case {
                name: "tolerated for 300 s from timeAdded",
                tolerations: vec![tolerate("k", no_exec, Some(300))],
                taints: vec![taint("k", "v", 10)],
                now: 20,
                want: Verdict::EvictAt(at(310)),
            },
            Case {
                name: "toleration ran out",
                tolerations: vec![tolerate("k", no_exec, Some(300))],
                taints: vec![taint("k", "v", 10)],
                now: 310,
                want: Verdict::Evict,
            },
            Case {
                name: "zero seconds means at once",
                tolerations: vec![tolerate("k", no_exec, Some(0))],
                taints: vec![taint("k", "v", 10)],
                now: 10,
                want: Verdict::Evict,
            },
            Case {
                name: "negative seconds means at once",
                tolerations: vec![tolerate("k", no_exec, Some(-5))],
                taints: vec![taint("k", "v", 10)],
                now: 10,
                want: Verdict::Evict,
            },
            Case {
                name: "earliest of several taints",
                tolerations: vec![
                    tolerate("a", no_exec, Some(100)),
                    tolerate("b", no_exec, Some(30)),
                ],
                taints: vec![taint("a", "", 0), taint("b", "", 50)],
                now: 60,
                want: Verdict::EvictAt(at(80)),
            },
            Case {
                name: "one tolerated forever, one for a while",
                tolerations: vec![
                    tolerate("a", no_exec, None),
                    tolerate("b", no_exec, Some(5)),
                ],
                taints: vec![taint("a", "", 0), taint("b", "", 0)],
                now: 1,
                want: Verdict::EvictAt(at(5)),
            },
            Case {
                name: "one of two taints untolerated",
                tolerations: vec![tolerate("a", no_exec, None)],
                taints: vec![taint("a", "", 0), taint("b", "", 0)],
                now: 0,
                want: Verdict::Evict,
            },
            Case {
                name: "the first matching toleration counts (kube's GetMatchingTolerations)",
                tolerations: vec![
                    tolerate("k", no_exec, None),
                    tolerate("k", no_exec, Some(1)),
                ],
                taints: vec![taint("k", "", 0)],
                now: 100,
                want: Verdict::Stay,
            },
            Case {
                name: "an empty key with Exists tolerates everything",
                tolerations: vec![tolerate("", None, None)],
                taints: vec![taint("a", "x", 0), taint("b", "y", 0)],
                now: 0,
                want: Verdict::Stay,
            },
            Case {
                name: "a NoSchedule toleration does not tolerate NoExecute",
                tolerations: vec![tolerate("k", Some(TaintEffect::NoSchedule), None)],
                taints: vec![taint("k", "", 0)],
                now: 0,
                want: Verdict::Evict,
            },
            Case {
                name: "Equal compares values",
                tolerations: vec![Toleration {
                    key: "k".into(),
                    operator: None,
                    value: "v".into(),
                    effect: no_exec,
                    toleration_seconds: None,
                }],
                taints: vec![taint("k", "w", 0)],
                now: 0,
                want: Verdict::Evict,
            },
        ];
        for case in cases {
            let got = verdict(&case.tolerations, &case.taints, at(case.now));
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    fn recorder(store: Arc<dyn ObjectStore>) -> EventRecorder {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let (writer, _task) = super::super::writer::Writer::spawn(store, tx);
        EventRecorder::new(writer, COMPONENT)
    }

    /// A running pod on `node`.
    fn pod(name: &str, node: &str, tolerations: Vec<Toleration>) -> Pod {
        let builder = PodBuilder::new(name).node_name(node);
        let mut p = tolerations
            .into_iter()
            .fold(builder, PodBuilder::toleration)
            .build();
        p.status.phase = PodPhase::Running;
        p
    }

    fn exists(store: &dyn ObjectStore, name: &str) -> bool {
        store
            .get(&ObjectKey::new(Kind::Pod, "default", name))
            .expect("get")
            .is_some()
    }

    fn set_taints(store: &dyn ObjectStore, name: &str, taints: Vec<Taint>) {
        let Some(Object::Node(mut n)) = store
            .get(&ObjectKey::new(Kind::Node, "", name))
            .expect("get")
        else {
            panic!("no node {name}")
        };
        n.spec.taints = taints;
        store
            .commit(vec![Op::Update {
                object: Object::Node(n),
                precondition: Precondition::None,
            }])
            .expect("update");
    }

    /// The timeline of one node's taint: which pods are still there after each step.
    #[tokio::test]
    async fn evictions_follow_the_taint_timeline() {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        let no_exec = Some(TaintEffect::NoExecute);
        store
            .commit(vec![
                Op::Create(Object::Node(Box::new(NodeBuilder::new("n1").build()))),
                Op::Create(Object::Node(Box::new(NodeBuilder::new("n2").build()))),
                Op::Create(Object::Pod(Box::new(pod("intolerant", "n1", vec![])))),
                Op::Create(Object::Pod(Box::new(pod(
                    "ten-seconds",
                    "n1",
                    vec![tolerate("k", no_exec, Some(10))],
                )))),
                Op::Create(Object::Pod(Box::new(pod(
                    "sixty-seconds",
                    "n1",
                    vec![tolerate("k", no_exec, Some(60))],
                )))),
                Op::Create(Object::Pod(Box::new(pod(
                    "forever",
                    "n1",
                    vec![tolerate("k", no_exec, None)],
                )))),
                Op::Create(Object::Pod(Box::new(pod("elsewhere", "n2", vec![])))),
            ])
            .expect("objects");
        let mut controller = TaintEvictionController::new(store.clone(), recorder(store.clone()));
        controller.sync(at(0)).expect("first round");
        assert_eq!(controller.next_deadline(), None);

        let mut added = Taint {
            key: "k".into(),
            value: "v".into(),
            effect: TaintEffect::NoExecute,
            time_added: Some(Time(at(100))),
        };
        set_taints(store.as_ref(), "n1", vec![added.clone()]);
        controller.sync(at(100)).expect("handle");
        let left = |store: &dyn ObjectStore| -> Vec<&'static str> {
            [
                "intolerant",
                "ten-seconds",
                "sixty-seconds",
                "forever",
                "elsewhere",
            ]
            .into_iter()
            .filter(|p| exists(store, p))
            .collect()
        };
        assert_eq!(
            left(store.as_ref()),
            vec!["ten-seconds", "sixty-seconds", "forever", "elsewhere"],
            "the intolerant pod leaves at once"
        );
        assert_eq!(controller.next_deadline(), Some(at(110)));

        controller.sync(at(109)).expect("handle");
        assert_eq!(left(store.as_ref()).len(), 4, "not yet at 109 s");
        controller.sync(at(110)).expect("handle");
        assert_eq!(
            left(store.as_ref()),
            vec!["sixty-seconds", "forever", "elsewhere"],
            "ten seconds after timeAdded"
        );

        // The taint goes before sixty seconds: the pod stays, for good.
        set_taints(store.as_ref(), "n1", vec![]);
        controller.sync(at(120)).expect("handle");
        assert_eq!(controller.next_deadline(), None, "plan cancelled");
        controller.sync(at(200)).expect("handle");
        assert_eq!(
            left(store.as_ref()),
            vec!["sixty-seconds", "forever", "elsewhere"]
        );

        // A taint without timeAdded counts from when it was first seen.
        added.time_added = None;
        set_taints(store.as_ref(), "n1", vec![added]);
        controller.sync(at(300)).expect("handle");
        assert_eq!(controller.next_deadline(), Some(at(360)));
        controller.sync(at(360)).expect("handle");
        assert_eq!(left(store.as_ref()), vec!["forever", "elsewhere"]);
    }

    /// Two nodes tainted in one batch: the pods of both are looked at, in the one pass over
    /// the pods, and a pod on a third node is left alone.
    #[tokio::test]
    async fn nodes_tainted_together_lose_their_pods_together() {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        let mut ops = Vec::new();
        for (node, pod_name) in [("n1", "a"), ("n2", "b"), ("n3", "c")] {
            ops.push(Op::Create(Object::Node(Box::new(
                NodeBuilder::new(node).build(),
            ))));
            ops.push(Op::Create(Object::Pod(Box::new(pod(
                pod_name,
                node,
                vec![],
            )))));
        }
        store.commit(ops).expect("objects");
        let mut controller = TaintEvictionController::new(store.clone(), recorder(store.clone()));
        controller.sync(at(0)).expect("first round");
        let taint = Taint {
            key: "k".into(),
            value: String::new(),
            effect: TaintEffect::NoExecute,
            time_added: Some(Time(at(10))),
        };
        set_taints(store.as_ref(), "n1", vec![taint.clone()]);
        set_taints(store.as_ref(), "n2", vec![taint]);
        controller.sync(at(10)).expect("handle");
        let left: Vec<&str> = ["a", "b", "c"]
            .into_iter()
            .filter(|p| exists(store.as_ref(), p))
            .collect();
        assert_eq!(left, vec!["c"]);
    }

    #[tokio::test]
    async fn an_evicted_pod_is_marked_then_deleted() {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        let node = NodeBuilder::new("n1").taint("k", "", TaintEffect::NoExecute);
        store
            .commit(vec![
                Op::Create(Object::Node(Box::new(node.build()))),
                Op::Create(Object::Pod(Box::new(pod("web", "n1", vec![])))),
            ])
            .expect("objects");
        let mut watch = store.subscribe();
        let mut controller = TaintEvictionController::new(store.clone(), recorder(store.clone()));
        controller.sync(at(0)).expect("first round");
        assert!(!exists(store.as_ref(), "web"), "deleted");
        let mut saw_mark = false;
        let mut saw_delete = false;
        while let Ok(change) = watch.try_recv() {
            if let Object::Pod(p) = &*change.object {
                let marked = p.status.conditions.iter().any(|c| {
                    c.type_ == "DisruptionTarget"
                        && c.status == "True"
                        && c.reason == names::REASON_DELETION_BY_TAINT_MANAGER
                        && c.message == DISRUPTION_MESSAGE
                });
                saw_mark |= marked && change.change_type == ChangeType::Modified;
                saw_delete |= marked && change.change_type == ChangeType::Deleted;
            }
        }
        assert!(saw_mark, "the DisruptionTarget condition was written");
        assert!(saw_delete, "the marked pod was deleted");
    }
}
