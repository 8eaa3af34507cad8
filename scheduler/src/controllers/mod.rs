//! The live cluster's controllers: ReplicaSets, Deployments, DaemonSets, garbage collection
//! by ownerReferences and PodDisruptionBudget status, run by one [`ControllerManager`] over
//! a cache of the store.
//!
//! # How it runs
//!
//! The manager subscribes to the store, lists every kind it needs into a [`Cache`], and
//! turns each change into work items (a ReplicaSet to reconcile, a budget to recount, an
//! owner whose dependents must go). Work is level-triggered: a reconcile reads the cache,
//! compares desired with actual state and writes the difference through the store with
//! resourceVersion preconditions. A write that fails (a conflict, a refused pod) puts the
//! item back after a short delay. Everything durable is in the store, so a restarted
//! scheduler lists again and carries on where it stopped.
//!
//! The cache is updated from the changes a commit returns as soon as it returns, so a
//! reconcile never acts twice on the same missing pod (kube's controllers keep
//! "expectations" for this); the copy of the same change that later arrives from the
//! subscription is recognised by its revision and skipped.
//!
//! # Layout
//!
//! - [`replicaset`]: keeps `replicas` pods of each ReplicaSet; which pods go first on a
//!   scale-down.
//! - [`deployment`]: one ReplicaSet per template, rolled as kube's RollingUpdate (or
//!   Recreate) strategy does.
//! - [`daemonset`]: one pod per eligible node, placed through the scheduler.
//! - [`garbage_collector`]: deletes the dependents of deleted owners (background cascade).
//! - [`disruption`]: PodDisruptionBudget status, as kube's disruption controller keeps it.

pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod garbage_collector;
pub mod replicaset;

use berth_proto::names;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_proto::model::{Kind, Object, ObjectKey, ObjectReference, OwnerReference, Pod};
use berth_store::{Change, ChangeType, ObjectStore, Op};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::server::events::EventRecorder;
use crate::server::writer::Writer;

/// The kinds the controllers read.
const WATCHED: [Kind; 6] = [
    Kind::Pod,
    Kind::Node,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::DaemonSet,
    Kind::PodDisruptionBudget,
];

/// How long the manager waits after a change for the rest of its commit (and any burst of
/// changes) before reconciling, so that one reconcile sees a whole commit.
const DEBOUNCE: Duration = Duration::from_millis(20);

/// Delay before a failed reconcile is first tried again; it doubles with each further
/// failure of the same work item, up to [`MAX_RETRY_DELAY`] (kube's rate-limited queues).
const RETRY_DELAY: Duration = Duration::from_millis(500);

/// Longest delay between retries of a failing work item.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Every object is reconciled again this often, as a safety net (kube's informer resync).
const RESYNC_PERIOD: Duration = Duration::from_secs(30);

/// Why a reconcile failed; the work item is retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store refused or failed a write (conflicts included).
    #[error("store: {0}")]
    Store(#[from] berth_store::Error),
    /// Admission refused a pod a controller wanted to create.
    #[error("creating pods for {owner}: {source}")]
    Admission {
        /// The owner.
        owner: ObjectKey,
        /// Admission's refusal.
        #[source]
        source: crate::server::error::Error,
    },
}

/// A unit of work: one object to reconcile.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Work {
    /// Reconcile a Deployment (namespace, name).
    Deployment(String, String),
    /// Reconcile a ReplicaSet (namespace, name).
    ReplicaSet(String, String),
    /// Reconcile a DaemonSet (namespace, name).
    DaemonSet(String, String),
    /// Recount a PodDisruptionBudget (namespace, name).
    Budget(String, String),
    /// Delete the dependents of a removed owner (its uid).
    Orphans(String),
    /// Look for dependents of any missing owner.
    OrphanScan,
}

/// The controllers' view of the store: every object of the watched kinds, with an index
/// from owner uid to dependents.
#[derive(Default)]
pub struct Cache {
    objects: HashMap<Kind, BTreeMap<(String, String), Object>>,
    /// Owner uid → keys of the objects that name it in their ownerReferences.
    dependents: HashMap<String, BTreeSet<ObjectKey>>,
    /// Keys deleted by a commit whose change may still be behind in the subscription, with
    /// the deletion's revision: older changes of these keys are ignored.
    tombstones: HashMap<ObjectKey, u64>,
}

fn revision_of(obj: &Object) -> u64 {
    obj.meta().resource_version.parse().unwrap_or(0)
}

impl Cache {
    /// Applies a change unless the cache already holds a newer state of the object. Returns
    /// the previous state and whether the change was applied.
    pub fn apply(&mut self, change: &Change) -> (Option<Object>, bool) {
        let key = change.object.key();
        if self
            .tombstones
            .get(&key)
            .is_some_and(|&d| d >= change.revision)
        {
            return (None, false);
        }
        let map = self.objects.entry(key.kind).or_default();
        let map_key = (key.namespace.clone(), key.name.clone());
        if let Some(old) = map.get(&map_key) {
            if revision_of(old) >= change.revision {
                return (None, false);
            }
        }
        let old = match change.change_type {
            ChangeType::Deleted => {
                self.tombstones.insert(key.clone(), change.revision);
                map.remove(&map_key)
            }
            _ => map.insert(map_key, change.object.clone()),
        };
        if let Some(old) = &old {
            for owner in &old.meta().owner_references {
                if let Some(set) = self.dependents.get_mut(&owner.uid) {
                    set.remove(&key);
                    if set.is_empty() {
                        self.dependents.remove(&owner.uid);
                    }
                }
            }
        }
        if change.change_type != ChangeType::Deleted {
            for owner in &change.object.meta().owner_references {
                if !owner.uid.is_empty() {
                    self.dependents
                        .entry(owner.uid.clone())
                        .or_default()
                        .insert(key.clone());
                }
            }
        }
        (old, true)
    }

    /// Forgets tombstones the subscription has moved past (its changes arrive in commit
    /// order, so nothing older than `revision` is still to come).
    fn prune_tombstones(&mut self, revision: u64) {
        if !self.tombstones.is_empty() {
            self.tombstones.retain(|_, d| *d > revision);
        }
    }

    /// Inserts an object as listed from the store.
    fn insert_listed(&mut self, obj: Object) {
        let revision = revision_of(&obj);
        self.apply(&Change {
            change_type: ChangeType::Added,
            object: obj,
            revision,
        });
    }

    /// An object by kind, namespace and name.
    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        let key = ObjectKey::new(kind, namespace, name);
        self.objects.get(&kind)?.get(&(key.namespace, key.name))
    }

    /// Every object of a kind, in (namespace, name) order; with a namespace, only its own.
    pub fn list(&self, kind: Kind, namespace: Option<&str>) -> Vec<&Object> {
        let Some(map) = self.objects.get(&kind) else {
            return Vec::new();
        };
        match namespace {
            None => map.values().collect(),
            Some(ns) => map
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, o)| o)
                .collect(),
        }
    }

    /// Every pod of a namespace.
    pub fn pods(&self, namespace: &str) -> Vec<&Pod> {
        self.list(Kind::Pod, Some(namespace))
            .into_iter()
            .filter_map(|o| match o {
                Object::Pod(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    /// The objects whose ownerReferences name this uid.
    pub fn dependents_of(&self, uid: &str) -> Vec<&Object> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|k| self.get(k.kind, &k.namespace, &k.name))
            .collect()
    }

    /// The pods controlled by the owner with this uid (controller ownerReference).
    pub fn controlled_pods(&self, uid: &str) -> Vec<&Pod> {
        self.dependents_of(uid)
            .into_iter()
            .filter_map(|o| match o {
                Object::Pod(p)
                    if controller_of(&p.metadata.owner_references)
                        .is_some_and(|r| r.uid == uid) =>
                {
                    Some(p)
                }
                _ => None,
            })
            .collect()
    }
}

/// The ownerReference with `controller: true`, if any.
pub fn controller_of(refs: &[OwnerReference]) -> Option<&OwnerReference> {
    refs.iter().find(|r| r.controller == Some(true))
}

/// Whether a pod counts as one of its controller's replicas: not finished and not being
/// deleted (kube's `IsPodActive`).
pub fn is_pod_active(pod: &Pod) -> bool {
    !pod.status.phase.is_terminal() && pod.metadata.deletion_timestamp.is_none()
}

/// Whether a pod is ready: running with the Ready condition True (kube's `IsPodReady`).
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status.phase == berth_proto::model::PodPhase::Running
        && pod
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == names::CONDITION_READY && c.status == names::STATUS_TRUE)
}

/// A reference to an object for events.
pub fn object_ref(obj: &Object) -> ObjectReference {
    ObjectReference {
        kind: obj.kind().as_str().to_string(),
        namespace: obj.meta().namespace.clone(),
        name: obj.meta().name.clone(),
        uid: obj.meta().uid.clone(),
        ..Default::default()
    }
}

/// Runs the controllers: owns the cache and the work queue.
pub struct ControllerManager {
    store: Arc<dyn ObjectStore>,
    changes: broadcast::Receiver<Arc<Change>>,
    /// The controllers' view of the store.
    pub cache: Cache,
    queue: BTreeSet<Work>,
    retries: Vec<(Instant, Work)>,
    /// Consecutive failures of each work item that is failing.
    failures: HashMap<Work, u32>,
    /// Random pod-name suffixes.
    pub rng: SmallRng,
    /// Events about controllers' objects.
    pub events: EventRecorder,
    /// Settings of the admission of the pods controllers create.
    pub admission: crate::admission::AdmissionConfig,
}

impl ControllerManager {
    /// A manager over `store`, recording events through `writer`. Subscribes at once, so
    /// nothing committed before [`ControllerManager::spawn`] lists is missed.
    pub fn new(store: Arc<dyn ObjectStore>, writer: Writer) -> Self {
        let changes = store.subscribe();
        ControllerManager {
            store,
            changes,
            cache: Cache::default(),
            queue: BTreeSet::new(),
            retries: Vec::new(),
            failures: HashMap::new(),
            rng: SmallRng::from_rng(&mut rand::rng()),
            events: EventRecorder::new(writer, "controller-manager"),
            admission: Default::default(),
        }
    }

    /// The same manager, admitting the pods it creates with `config`.
    pub fn with_admission(mut self, config: crate::admission::AdmissionConfig) -> Self {
        self.admission = config;
        self
    }

    /// Runs the manager on a thread of its own (its store writes block) until `shutdown`.
    pub fn spawn(self, shutdown: CancellationToken) -> std::thread::JoinHandle<()> {
        std::thread::Builder::new()
            .name("controllers".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("building the controllers' runtime");
                rt.block_on(self.run(shutdown));
            })
            .expect("spawning the controllers thread")
    }

    async fn run(mut self, shutdown: CancellationToken) {
        self.relist();
        info!("controllers started");
        let mut next_resync = Instant::now() + RESYNC_PERIOD;
        loop {
            self.process();
            let now = Instant::now();
            let wake = self
                .retries
                .iter()
                .map(|(t, _)| *t)
                .min()
                .unwrap_or(next_resync)
                .min(next_resync);
            tokio::select! {
                _ = shutdown.cancelled() => break,
                received = self.changes.recv() => {
                    if !self.on_received(received) {
                        break;
                    }
                    tokio::time::sleep(DEBOUNCE).await;
                    self.drain_changes();
                }
                _ = tokio::time::sleep(wake.saturating_duration_since(now)) => {}
            }
            let now = Instant::now();
            if now >= next_resync {
                self.enqueue_all();
                next_resync = now + RESYNC_PERIOD;
            }
            let (due, later): (Vec<_>, Vec<_>) =
                self.retries.drain(..).partition(|(t, _)| *t <= now);
            self.retries = later;
            self.queue.extend(due.into_iter().map(|(_, w)| w));
        }
        info!("controllers stopped");
    }

    /// Handles one subscription result; false when the store has closed.
    fn on_received(&mut self, received: Result<Arc<Change>, broadcast::error::RecvError>) -> bool {
        match received {
            Ok(change) => {
                self.cache.prune_tombstones(change.revision);
                self.observe(&change);
                true
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                warn!(
                    missed = n,
                    "controllers fell behind the store; listing again"
                );
                self.relist();
                true
            }
            Err(broadcast::error::RecvError::Closed) => false,
        }
    }

    fn drain_changes(&mut self) {
        loop {
            match self.changes.try_recv() {
                Ok(change) => {
                    self.on_received(Ok(change));
                }
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    self.on_received(Err(broadcast::error::RecvError::Lagged(n)));
                }
                Err(_) => return,
            }
        }
    }

    /// Reloads the cache from the store and queues every object.
    fn relist(&mut self) {
        let mut cache = Cache::default();
        for kind in WATCHED {
            match self.store.list(kind, None) {
                Ok(objects) => objects.into_iter().for_each(|o| cache.insert_listed(o)),
                Err(e) => {
                    warn!(kind = %kind, error = %e, "listing for the controllers failed");
                    self.retry(Work::OrphanScan);
                }
            }
        }
        self.cache = cache;
        self.enqueue_all();
    }

    fn enqueue_all(&mut self) {
        for kind in [
            Kind::Deployment,
            Kind::ReplicaSet,
            Kind::DaemonSet,
            Kind::PodDisruptionBudget,
        ] {
            let work: Vec<Work> = self
                .cache
                .list(kind, None)
                .into_iter()
                .map(|o| work_for(kind, &o.meta().namespace, &o.meta().name))
                .collect();
            self.queue.extend(work);
        }
        self.queue.insert(Work::OrphanScan);
    }

    /// Applies a change to the cache and queues the work it calls for.
    fn observe(&mut self, change: &Change) {
        let (old, applied) = self.cache.apply(change);
        if !applied {
            return;
        }
        let obj = &change.object;
        let meta = obj.meta();
        let ns = meta.namespace.clone();
        let deleted = change.change_type == ChangeType::Deleted;
        match obj {
            Object::Pod(pod) => {
                let mut refs: Vec<&OwnerReference> = controller_of(&pod.metadata.owner_references)
                    .into_iter()
                    .collect();
                if let Some(Object::Pod(old)) = &old {
                    refs.extend(controller_of(&old.metadata.owner_references));
                }
                for r in refs {
                    match r.kind.as_str() {
                        "ReplicaSet" => {
                            self.queue
                                .insert(Work::ReplicaSet(ns.clone(), r.name.clone()));
                        }
                        "DaemonSet" => {
                            self.queue
                                .insert(Work::DaemonSet(ns.clone(), r.name.clone()));
                        }
                        _ => {}
                    }
                }
                let old_labels = match &old {
                    Some(Object::Pod(p)) => Some(&p.metadata.labels),
                    _ => None,
                };
                let budgets: Vec<Work> = self
                    .cache
                    .list(Kind::PodDisruptionBudget, Some(&ns))
                    .into_iter()
                    .filter_map(|o| match o {
                        Object::PodDisruptionBudget(pdb) => Some(pdb),
                        _ => None,
                    })
                    .filter(|pdb| {
                        pdb.spec.selector.as_ref().is_some_and(|s| {
                            s.matches(&pod.metadata.labels)
                                || old_labels.is_some_and(|l| s.matches(l))
                        })
                    })
                    .map(|pdb| Work::Budget(ns.clone(), pdb.metadata.name.clone()))
                    .collect();
                self.queue.extend(budgets);
            }
            Object::Node(_) => {
                let all: Vec<Work> = self
                    .cache
                    .list(Kind::DaemonSet, None)
                    .into_iter()
                    .map(|o| Work::DaemonSet(o.meta().namespace.clone(), o.meta().name.clone()))
                    .collect();
                self.queue.extend(all);
            }
            Object::Deployment(_) | Object::ReplicaSet(_) | Object::DaemonSet(_) => {
                if deleted {
                    self.queue.insert(Work::Orphans(meta.uid.clone()));
                } else {
                    self.queue.insert(work_for(obj.kind(), &ns, &meta.name));
                }
                if let Some(owner) = controller_of(&meta.owner_references) {
                    if owner.kind == "Deployment" {
                        self.queue
                            .insert(Work::Deployment(ns.clone(), owner.name.clone()));
                    }
                }
                // Budgets count the replicas of the pods' controllers.
                let budgets: Vec<Work> = self
                    .cache
                    .list(Kind::PodDisruptionBudget, Some(&ns))
                    .into_iter()
                    .map(|o| Work::Budget(ns.clone(), o.meta().name.clone()))
                    .collect();
                self.queue.extend(budgets);
            }
            Object::PodDisruptionBudget(_) if !deleted => {
                self.queue.insert(Work::Budget(ns, meta.name.clone()));
            }
            _ => {}
        }
    }

    /// Runs queued work until the queue is empty.
    fn process(&mut self) {
        while let Some(work) = self.queue.pop_first() {
            let result = match &work {
                Work::Deployment(ns, name) => deployment::reconcile(self, ns, name),
                Work::ReplicaSet(ns, name) => replicaset::reconcile(self, ns, name),
                Work::DaemonSet(ns, name) => daemonset::reconcile(self, ns, name),
                Work::Budget(ns, name) => disruption::reconcile(self, ns, name),
                Work::Orphans(uid) => garbage_collector::collect_dependents(self, uid),
                Work::OrphanScan => garbage_collector::scan(self),
            };
            if result.is_ok() {
                self.failures.remove(&work);
            }
            if let Err(e) = result {
                match &e {
                    Error::Store(berth_store::Error::Conflict { .. })
                    | Error::Store(berth_store::Error::NotFound { .. })
                    | Error::Store(berth_store::Error::AlreadyExists { .. }) => {
                        debug!(?work, error = %e, "reconcile raced another write; retrying")
                    }
                    _ => warn!(?work, error = %e, "reconcile failed; retrying"),
                }
                self.retry(work);
            }
        }
    }

    fn retry(&mut self, work: Work) {
        if self.retries.iter().any(|(_, w)| *w == work) {
            return;
        }
        let failures = self.failures.entry(work.clone()).or_default();
        let delay = retry_delay(*failures);
        *failures = failures.saturating_add(1);
        self.retries.push((Instant::now() + delay, work));
    }

    /// Commits `ops` atomically and applies the resulting changes to the cache at once.
    pub fn commit(&mut self, ops: Vec<Op>) -> Result<(), Error> {
        if ops.is_empty() {
            return Ok(());
        }
        let changes = self.store.commit(ops)?;
        for change in &changes {
            self.observe(change);
        }
        Ok(())
    }

    /// The store, for reads that admission needs.
    pub fn store(&self) -> &dyn ObjectStore {
        self.store.as_ref()
    }
}

/// The delay before the retry that follows `failures` earlier failures.
fn retry_delay(failures: u32) -> Duration {
    RETRY_DELAY
        .saturating_mul(1u32 << failures.min(16))
        .min(MAX_RETRY_DELAY)
}

fn work_for(kind: Kind, namespace: &str, name: &str) -> Work {
    let (ns, name) = (namespace.to_string(), name.to_string());
    match kind {
        Kind::Deployment => Work::Deployment(ns, name),
        Kind::ReplicaSet => Work::ReplicaSet(ns, name),
        Kind::DaemonSet => Work::DaemonSet(ns, name),
        _ => Work::Budget(ns, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::ObjectMeta;

    fn pod_change(name: &str, owner_uid: &str, revision: u64, change_type: ChangeType) -> Change {
        let mut pod = Pod {
            metadata: ObjectMeta {
                name: name.into(),
                namespace: "default".into(),
                resource_version: revision.to_string(),
                ..Default::default()
            },
            ..Default::default()
        };
        pod.metadata.owner_references.push(OwnerReference {
            kind: "ReplicaSet".into(),
            name: "rs".into(),
            uid: owner_uid.into(),
            controller: Some(true),
            ..Default::default()
        });
        Change {
            change_type,
            object: Object::Pod(pod),
            revision,
        }
    }

    #[test]
    fn the_cache_ignores_stale_changes_and_indexes_owners() {
        struct Case {
            name: &'static str,
            changes: Vec<Change>,
            want_pods: Vec<&'static str>,
            want_dependents: usize,
        }
        let cases = vec![
            Case {
                name: "added",
                changes: vec![pod_change("a", "u1", 5, ChangeType::Added)],
                want_pods: vec!["a"],
                want_dependents: 1,
            },
            Case {
                name: "an older modification after a newer one is skipped",
                changes: vec![
                    pod_change("a", "u1", 7, ChangeType::Modified),
                    pod_change("a", "u1", 6, ChangeType::Modified),
                ],
                want_pods: vec!["a"],
                want_dependents: 1,
            },
            Case {
                name: "a modification older than a deletion does not bring the pod back",
                changes: vec![
                    pod_change("a", "u1", 5, ChangeType::Added),
                    pod_change("a", "u1", 9, ChangeType::Deleted),
                    pod_change("a", "u1", 8, ChangeType::Modified),
                ],
                want_pods: vec![],
                want_dependents: 0,
            },
            Case {
                name: "a newer creation after a deletion is kept",
                changes: vec![
                    pod_change("a", "u1", 5, ChangeType::Added),
                    pod_change("a", "u1", 9, ChangeType::Deleted),
                    pod_change("a", "u2", 10, ChangeType::Added),
                ],
                want_pods: vec!["a"],
                want_dependents: 0,
            },
        ];
        for case in cases {
            let mut cache = Cache::default();
            for change in &case.changes {
                cache.apply(change);
            }
            let names: Vec<&str> = cache
                .pods("default")
                .iter()
                .map(|p| p.metadata.name.as_str())
                .collect();
            assert_eq!(names, case.want_pods, "{}", case.name);
            assert_eq!(
                cache.controlled_pods("u1").len(),
                case.want_dependents,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn retries_back_off_exponentially_up_to_a_limit() {
        struct Case {
            failures: u32,
            want: Duration,
        }
        let cases = [
            Case {
                failures: 0,
                want: Duration::from_millis(500),
            },
            Case {
                failures: 1,
                want: Duration::from_secs(1),
            },
            Case {
                failures: 3,
                want: Duration::from_secs(4),
            },
            Case {
                failures: 6,
                want: Duration::from_secs(30),
            },
            Case {
                failures: u32::MAX,
                want: Duration::from_secs(30),
            },
        ];
        for case in cases {
            assert_eq!(
                retry_delay(case.failures),
                case.want,
                "{} failures",
                case.failures
            );
        }
    }

    #[test]
    fn tombstones_are_pruned_once_the_subscription_passes_them() {
        let mut cache = Cache::default();
        cache.apply(&pod_change("a", "u1", 5, ChangeType::Deleted));
        cache.prune_tombstones(4);
        assert_eq!(cache.tombstones.len(), 1, "revision 4 is older");
        cache.prune_tombstones(5);
        assert!(cache.tombstones.is_empty(), "revision 5 is the deletion");
    }
}
