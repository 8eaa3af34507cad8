//! The live cluster's controllers: ReplicaSets, Deployments, DaemonSets, Jobs, garbage collection
//! by ownerReferences and PodDisruptionBudget status, run by one [`ControllerManager`] over
//! a cache of the store.
//!
//! # How it runs
//!
//! The manager follows the store through the server's informer runtime
//! ([`crate::server::informer`]): a watcher lists every kind it needs into a [`Cache`] (a
//! reflector with an owner index) and lists again when it falls behind, and the manager
//! turns each event into work items (a ReplicaSet to reconcile, a budget to recount, an
//! owner whose dependents must go). Work is level-triggered: a reconcile reads the cache,
//! compares desired with actual state and writes the difference through the store with
//! resourceVersion preconditions. A write that fails (a conflict, a refused pod) puts the
//! item back after a short delay. Everything durable is in the store, so a restarted
//! scheduler lists again and carries on where it stopped.
//!
//! The cache is updated from the changes a commit returns as soon as it returns, so a
//! reconcile never acts twice on the same missing pod (kube's controllers keep
//! "expectations" for this); the copy of the same change that later arrives from the
//! subscription is recognised by its revision and skipped. Failed work waits in a
//! [`WorkQueue`] with per-item back-off.
//!
//! # Layout
//!
//! - [`replicaset`]: keeps `replicas` pods of each ReplicaSet; which pods go first on a
//!   scale-down.
//! - [`deployment`]: one ReplicaSet per template, rolled as kube's RollingUpdate (or
//!   Recreate) strategy does.
//! - [`daemonset`]: one pod per eligible node, placed through the scheduler.
//! - [`job`]: runs each Job's pods to completion, and deletes finished Jobs after their TTL.
//! - [`garbage_collector`]: deletes the dependents of deleted owners (background cascade).
//! - [`resource_claim`]: makes pods' claims from templates and releases claims of pods
//!   that are done.
//! - [`disruption`]: PodDisruptionBudget status, as kube's disruption controller keeps it.

pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod garbage_collector;
pub mod job;
pub mod replicaset;
pub mod resource_claim;

use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_proto::model::{Kind, Object, ObjectKey, ObjectReference, OwnerReference, Pod};
use berth_store::{ObjectStore, Op, Precondition};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::server::events::EventRecorder;
use crate::server::informer::{self, Event, Reflector, Watcher, WorkQueue};
use crate::server::writer::Writer;

/// The kinds the controllers read.
const WATCHED: [Kind; 10] = [
    Kind::Pod,
    Kind::Node,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::DaemonSet,
    Kind::PodDisruptionBudget,
    Kind::Job,
    Kind::ResourceClaim,
    Kind::ResourceClaimTemplate,
    Kind::ResourceSlice,
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
    /// Reconcile a Job (namespace, name).
    Job(String, String),
    /// Recount a PodDisruptionBudget (namespace, name).
    Budget(String, String),
    /// Make the claims of a pod's template entries (namespace, name).
    PodClaims(String, String),
    /// Release a ResourceClaim's finished consumers (namespace, name).
    Claim(String, String),
    /// Delete the dependents of a removed owner (its uid).
    Orphans(String),
    /// Look for dependents of any missing owner.
    OrphanScan,
}

/// The controllers' view of the store: every object of the watched kinds, with an index
/// from owner uid to dependents.
pub type Cache = Reflector;

/// The pods controlled by the owner with this uid (controller ownerReference).
pub fn controlled_pods<'a>(cache: &'a Cache, uid: &str) -> Vec<&'a Pod> {
    cache
        .dependents_of(uid)
        .into_iter()
        .filter_map(|o| match o {
            Object::Pod(p)
                if controller_of(&p.metadata.owner_references).is_some_and(|r| r.uid == uid) =>
            {
                Some(&**p)
            }
            _ => None,
        })
        .collect()
}

/// The ownerReference with `controller: true`, if any.
pub fn controller_of(refs: &[OwnerReference]) -> Option<&OwnerReference> {
    refs.iter().find(|r| r.controller == Some(true))
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

/// Runs the controllers: owns the watcher, the cache and the work queue.
pub struct ControllerManager {
    watcher: Watcher,
    /// The controllers' view of the store.
    pub cache: Cache,
    queue: WorkQueue<Work>,
    /// Random pod-name suffixes.
    pub rng: SmallRng,
    /// Events about controllers' objects.
    pub events: EventRecorder,
    /// Settings of the admission of the pods controllers create.
    pub admission: crate::admission::AdmissionConfig,
    /// Events of the job controller (reported as `job-controller`, as kube's).
    pub job_events: EventRecorder,
    /// What the job controller remembers between syncs.
    pub jobs: job::JobMemory,
}

impl ControllerManager {
    /// A manager over `store`, recording events through `writer`. Subscribes at once, so
    /// nothing committed before [`ControllerManager::spawn`] lists is missed.
    pub fn new(store: Arc<dyn ObjectStore>, writer: Writer) -> Self {
        ControllerManager {
            watcher: Watcher::new("controllers", store, &WATCHED),
            cache: Cache::new().with_owner_index(),
            queue: WorkQueue::new(RETRY_DELAY, MAX_RETRY_DELAY),
            rng: SmallRng::from_rng(&mut rand::rng()),
            job_events: EventRecorder::new(writer.clone(), "job-controller"),
            events: EventRecorder::new(writer, "controller-manager"),
            admission: Default::default(),
            jobs: job::JobMemory::default(),
        }
    }

    /// The same manager, admitting the pods it creates with `config`.
    pub fn with_admission(mut self, config: crate::admission::AdmissionConfig) -> Self {
        self.admission = config;
        self
    }

    /// Runs the manager on a thread of its own (its store writes block) until `shutdown`.
    pub fn spawn(self, shutdown: CancellationToken) -> std::thread::JoinHandle<()> {
        informer::spawn("controllers", move || self.run(shutdown))
    }

    async fn run(mut self, shutdown: CancellationToken) {
        info!("controllers started");
        let mut next_resync = Instant::now() + RESYNC_PERIOD;
        loop {
            self.process();
            let now = Instant::now();
            let wake = self
                .queue
                .next_retry()
                .map_or(next_resync, |t| t.min(next_resync));
            tokio::select! {
                _ = shutdown.cancelled() => break,
                event = self.watcher.next(&mut self.cache) => {
                    let Some(event) = event else { break };
                    self.on_event(event);
                    // Let the rest of the commit (and of a burst) arrive: one reconcile
                    // then sees all of it.
                    tokio::time::sleep(DEBOUNCE).await;
                    while let Some(event) = self.watcher.try_next(&mut self.cache) {
                        self.on_event(event);
                    }
                }
                _ = tokio::time::sleep(wake.saturating_duration_since(now)) => {}
            }
            let now = Instant::now();
            if now >= next_resync {
                self.enqueue_all();
                next_resync = now + RESYNC_PERIOD;
            }
            self.queue.promote_due(now);
        }
        info!("controllers stopped");
    }

    /// Queues the work an event calls for; a finished list queues everything.
    fn on_event(&mut self, event: Event) {
        match event {
            Event::Init => {}
            Event::InitDone => self.enqueue_all(),
            Event::InitApply { object, previous } | Event::Apply { object, previous } => {
                self.observe(&object, previous.as_deref(), false)
            }
            Event::Delete { object, .. } => self.observe(&object, None, true),
        }
    }

    fn enqueue_all(&mut self) {
        for kind in [
            Kind::Deployment,
            Kind::ReplicaSet,
            Kind::DaemonSet,
            Kind::PodDisruptionBudget,
            Kind::Job,
        ] {
            let work: Vec<Work> = self
                .cache
                .list(kind, None)
                .into_iter()
                .map(|o| work_for(kind, &o.meta().namespace, &o.meta().name))
                .collect();
            self.queue.extend(work);
        }
        let pods: Vec<Work> = self
            .cache
            .list(Kind::Pod, None)
            .into_iter()
            .filter_map(|o| match o {
                Object::Pod(p) if !p.spec.resource_claims.is_empty() => Some(Work::PodClaims(
                    p.metadata.namespace.clone(),
                    p.metadata.name.clone(),
                )),
                _ => None,
            })
            .collect();
        self.queue.extend(pods);
        let claims: Vec<Work> = self
            .cache
            .list(Kind::ResourceClaim, None)
            .into_iter()
            .map(|o| Work::Claim(o.meta().namespace.clone(), o.meta().name.clone()))
            .collect();
        self.queue.extend(claims);
        self.queue.add(Work::OrphanScan);
    }

    /// Queues the work a change of `obj` (from `old`, if it was known) calls for.
    fn observe(&mut self, obj: &Object, old: Option<&Object>, deleted: bool) {
        let meta = obj.meta();
        let ns = meta.namespace.clone();
        match obj {
            Object::Pod(pod) => {
                let mut refs: Vec<&OwnerReference> = controller_of(&pod.metadata.owner_references)
                    .into_iter()
                    .collect();
                if let Some(Object::Pod(old)) = old {
                    refs.extend(controller_of(&old.metadata.owner_references));
                }
                for r in refs {
                    match r.kind.as_str() {
                        "ReplicaSet" => {
                            self.queue.add(Work::ReplicaSet(ns.clone(), r.name.clone()));
                        }
                        "DaemonSet" => {
                            self.queue.add(Work::DaemonSet(ns.clone(), r.name.clone()));
                        }
                        "Job" => {
                            if deleted {
                                self.jobs.pod_deleted(&r.uid, pod);
                            }
                            self.queue.add(Work::Job(ns.clone(), r.name.clone()));
                        }
                        _ => {}
                    }
                }
                let old_labels = match old {
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
                self.observe_pod_claims(pod, deleted);
            }
            Object::ResourceClaim(_) if !deleted => {
                self.queue.add(Work::Claim(ns, meta.name.clone()));
            }
            Object::ResourceClaimTemplate(_) if !deleted => {
                // Pods waiting for this template.
                let waiting: Vec<Work> = self
                    .cache
                    .pods(&ns)
                    .into_iter()
                    .filter(|p| {
                        p.spec.resource_claims.iter().any(|c| {
                            c.resource_claim_template_name.as_deref() == Some(meta.name.as_str())
                        })
                    })
                    .map(|p| Work::PodClaims(ns.clone(), p.metadata.name.clone()))
                    .collect();
                self.queue.extend(waiting);
            }
            Object::Node(_) => {
                if deleted {
                    // Its ResourceSlices.
                    self.queue.add(Work::Orphans(meta.uid.clone()));
                }
                let all: Vec<Work> = self
                    .cache
                    .list(Kind::DaemonSet, None)
                    .into_iter()
                    .map(|o| Work::DaemonSet(o.meta().namespace.clone(), o.meta().name.clone()))
                    .collect();
                self.queue.extend(all);
            }
            Object::Job(_) => {
                if deleted {
                    self.jobs.job_deleted(&meta.uid);
                    self.queue.add(Work::Orphans(meta.uid.clone()));
                } else {
                    self.queue.add(Work::Job(ns, meta.name.clone()));
                }
            }
            Object::Deployment(_) | Object::ReplicaSet(_) | Object::DaemonSet(_) => {
                if deleted {
                    self.queue.add(Work::Orphans(meta.uid.clone()));
                } else {
                    self.queue.add(work_for(obj.kind(), &ns, &meta.name));
                }
                if let Some(owner) = controller_of(&meta.owner_references) {
                    if owner.kind == "Deployment" {
                        self.queue
                            .add(Work::Deployment(ns.clone(), owner.name.clone()));
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
                self.queue.add(Work::Budget(ns, meta.name.clone()));
            }
            _ => {}
        }
    }

    /// Queues the claim work a change of a pod calls for: its own claims to make while it
    /// may run, its claims' consumers to check once it is done or gone, and its generated
    /// claims to collect when it is deleted.
    fn observe_pod_claims(&mut self, pod: &Pod, deleted: bool) {
        if pod.spec.resource_claims.is_empty() {
            return;
        }
        let ns = &pod.metadata.namespace;
        if deleted {
            self.queue.add(Work::Orphans(pod.metadata.uid.clone()));
        } else {
            self.queue
                .add(Work::PodClaims(ns.clone(), pod.metadata.name.clone()));
        }
        let claims: Vec<Work> = resource_claim::claim_names(pod)
            .into_iter()
            .map(|name| Work::Claim(ns.clone(), name))
            .collect();
        self.queue.extend(claims);
    }

    /// Runs queued work until the queue is empty.
    fn process(&mut self) {
        while let Some(work) = self.queue.pop() {
            let result = match &work {
                Work::Deployment(ns, name) => deployment::reconcile(self, ns, name),
                Work::ReplicaSet(ns, name) => replicaset::reconcile(self, ns, name),
                Work::DaemonSet(ns, name) => daemonset::reconcile(self, ns, name),
                Work::Job(ns, name) => job::reconcile(self, ns, name),
                Work::Budget(ns, name) => disruption::reconcile(self, ns, name),
                Work::PodClaims(ns, name) => resource_claim::sync_pod(self, ns, name),
                Work::Claim(ns, name) => resource_claim::sync_claim(self, ns, name),
                Work::Orphans(uid) => garbage_collector::collect_dependents(self, uid),
                Work::OrphanScan => garbage_collector::scan(self),
            };
            if let Err(e) = &result {
                match e {
                    Error::Store(berth_store::Error::Conflict { .. })
                    | Error::Store(berth_store::Error::NotFound { .. })
                    | Error::Store(berth_store::Error::AlreadyExists { .. }) => {
                        debug!(?work, error = %e, "reconcile raced another write; retrying")
                    }
                    _ => warn!(?work, error = %e, "reconcile failed; retrying"),
                }
            }
            self.queue.done(work, result.is_ok(), Instant::now());
        }
    }

    /// Commits `ops` atomically and applies the resulting changes to the cache at once.
    pub fn commit(&mut self, ops: Vec<Op>) -> Result<(), Error> {
        if ops.is_empty() {
            return Ok(());
        }
        let changes = self.watcher.store().commit(ops)?;
        for change in &changes {
            if let Some(event) = self.cache.apply(change) {
                self.on_event(event);
            }
        }
        Ok(())
    }

    /// The cached object of that kind and name, unless it is gone or being deleted (the
    /// workload controllers leave an object being deleted alone).
    pub fn live(&self, kind: Kind, namespace: &str, name: &str) -> Option<Object> {
        self.cache
            .get(kind, namespace, name)
            .filter(|o| o.meta().deletion_timestamp.is_none())
            .cloned()
    }

    /// Writes `updated`, a copy of the cached `current` with new fields, unless it is the
    /// same; the write fails if the object changed meanwhile (its resourceVersion).
    pub fn update_if_changed(&mut self, current: &Object, updated: Object) -> Result<(), Error> {
        if updated == *current {
            return Ok(());
        }
        let resource_version = current.meta().resource_version.clone();
        self.commit(vec![Op::Update {
            object: updated,
            precondition: Precondition::ResourceVersion(resource_version),
        }])
    }

    /// The store, for reads that admission needs.
    pub fn store(&self) -> &dyn ObjectStore {
        self.watcher.store().as_ref()
    }
}

fn work_for(kind: Kind, namespace: &str, name: &str) -> Work {
    let (ns, name) = (namespace.to_string(), name.to_string());
    match kind {
        Kind::Deployment => Work::Deployment(ns, name),
        Kind::ReplicaSet => Work::ReplicaSet(ns, name),
        Kind::DaemonSet => Work::DaemonSet(ns, name),
        Kind::Job => Work::Job(ns, name),
        _ => Work::Budget(ns, name),
    }
}
