//! kube-apiserver's watch cache: the Watch RPC's memory of recent changes, and the latest
//! objects that Get and List are served from.
//!
//! - [`WatchCache`] keeps the last [`HISTORY_CHANGES`] committed changes, so that a watch
//!   from a resourceVersion gets every change after it — the changes since a `List`, with
//!   nothing lost in between — and a version older than the memory is refused as expired
//!   (kube's `410 Gone`, reason `Expired`), which tells the client to list again.
//! - [`ObjectCache`] holds the latest state of every object but Events, so that a read
//!   neither scans nor decodes the store. Reads are consistent (kube's resourceVersion "",
//!   served from the cache as kube's consistent reads from cache, KEP 2340, are): before
//!   answering, the cache asks the store for its current revision (on etcd a quorum read;
//!   on sled the last one assigned), waits until the store has broadcast every change up to
//!   it (at most [`CONSISTENT_READ_TIMEOUT`]; past that the read goes to the store itself,
//!   counted in [`CONSISTENT_READ_FALLBACKS`](super::metrics::CONSISTENT_READ_FALLBACKS)),
//!   then takes every change broadcast. So a read sees every write acknowledged before it
//!   began, through this replica or another.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard, Weak};
use std::time::Duration;

use berth_core::framework::hash::FastHashMap;
use berth_proto::model::{Kind, LabelSelector, Object};
use berth_proto::pb::JsonText;
use berth_proto::wire::object_to_pb;
use berth_store::{Change, ObjectStore};
use tokio::sync::broadcast;

use super::informer::{Informer, Reflector};
use super::label_index::LabelIndex;

/// The longest a read waits for the cache to reach the store's current revision (kube's
/// `blockTimeout` of consistent reads from cache) before it reads the store instead.
pub const CONSISTENT_READ_TIMEOUT: Duration = Duration::from_secs(3);

/// How many of the latest changes are kept for watches that start from a version.
pub const HISTORY_CHANGES: usize = 4096;

/// Room for changes a watcher has not read yet; a watcher further behind is ended with
/// DATA_LOSS.
const LIVE_CAPACITY: usize = 16 * 1024;

/// A watch that cannot start where it asked to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("too old resource version: {requested} ({oldest})")]
pub struct Expired {
    /// The version the watch asked to start after.
    pub requested: u64,
    /// The oldest version the server can still start a watch after.
    pub oldest: u64,
}

/// What [`WatchCache::since`] starts a watch with.
pub struct Start {
    /// The remembered changes after the requested version, oldest first.
    pub backlog: Vec<Arc<Change>>,
    /// Every change recorded after the backlog. It closes when the cache lost changes
    /// itself (it fell behind the store); the watch must then end as expired.
    pub live: broadcast::Receiver<Arc<Change>>,
}

/// The recent changes and the stream of new ones, under one lock so that a watch that
/// takes a backlog and subscribes sees every change exactly once.
struct History {
    changes: VecDeque<Arc<Change>>,
    /// Every change with a revision above this one is in `changes` or still to come.
    floor: u64,
    /// Changes were lost (the cache fell behind the store): `floor` is unknown until the
    /// next change arrives.
    lost: bool,
    live: broadcast::Sender<Arc<Change>>,
}

/// The recent changes of a store, fed by a task that follows the store's changes.
#[derive(Clone)]
pub struct WatchCache {
    history: Arc<Mutex<History>>,
}

impl WatchCache {
    /// A cache that remembers the changes of `store` from now on. Spawns the task that
    /// records them (it ends when the store is dropped), so it must be called inside a
    /// Tokio runtime.
    pub fn start(store: &dyn ObjectStore) -> Self {
        // Subscribing first, then reading the revision: every change above it arrives.
        let changes = store.subscribe();
        let cache = WatchCache::empty(store.revision());
        tokio::spawn(cache.clone().record(changes));
        cache
    }

    fn empty(floor: u64) -> Self {
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        WatchCache {
            history: Arc::new(Mutex::new(History {
                changes: VecDeque::with_capacity(HISTORY_CHANGES),
                floor,
                lost: false,
                live,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the store's changes until the store goes away.
    async fn record(self, mut changes: broadcast::Receiver<Arc<Change>>) {
        loop {
            match changes.recv().await {
                Ok(change) => self.push(change),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "the watch cache fell behind the store; open watches end as expired"
                    );
                    self.forget();
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Adds a change, forgetting the oldest past [`HISTORY_CHANGES`], and sends it to the
    /// open watches.
    fn push(&self, change: Arc<Change>) {
        let mut history = self.lock();
        if std::mem::take(&mut history.lost) {
            // The changes before this one are gone.
            history.floor = change.revision - 1;
        }
        // The changes of one commit share its revision on etcd (a joint commit of several
        // callers' writes too): a change is one the cache has when it is older than the newest,
        // or of the newest's revision and for an object already recorded at it.
        let duplicate = match history.changes.back() {
            None => change.revision <= history.floor,
            Some(newest) => {
                let newest = newest.revision;
                change.revision < newest
                    || change.revision == newest
                        && history
                            .changes
                            .iter()
                            .rev()
                            .take_while(|c| c.revision == newest)
                            .any(|c| c.object.key() == change.object.key())
            }
        };
        if duplicate {
            return;
        }
        history.changes.push_back(change.clone());
        while history.changes.len() > HISTORY_CHANGES {
            if let Some(old) = history.changes.pop_front() {
                history.floor = old.revision;
            }
        }
        let _ = history.live.send(change);
    }

    /// Forgets everything after losing changes: open watches end (their stream closes) and
    /// new ones start from the next change recorded.
    fn forget(&self) {
        let mut history = self.lock();
        history.changes.clear();
        history.lost = true;
        history.live = broadcast::channel(LIVE_CAPACITY).0;
    }

    /// Starts a watch after `revision`: the remembered changes after it and the stream of
    /// the next ones; [`Expired`] when changes after it are no longer remembered.
    pub fn since(&self, revision: u64) -> Result<Start, Expired> {
        let history = self.lock();
        if history.lost || revision < history.floor {
            return Err(Expired {
                requested: revision,
                oldest: history.floor,
            });
        }
        let backlog = history
            .changes
            .iter()
            .filter(|c| c.revision > revision)
            .cloned()
            .collect();
        Ok(Start {
            backlog,
            live: history.live.subscribe(),
        })
    }

    /// The stream of changes recorded from now on, for a watch that lists first.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.lock().live.subscribe()
    }
}

/// The latest objects of every kind but [`Kind::Event`], for consistent reads; see the
/// module documentation. Events stay out: they are many, short-lived and rarely read, so
/// the cache would mostly hold them; reads of events go to the store.
///
/// Reads share the cache (a read lock); only bringing it up to date takes it alone, and a
/// read finds it up to date unless a write landed since the last one. Besides the objects it
/// keeps an index by label ([`LabelIndex`]), and each object's JSON once a read encoded it,
/// for every later read of that version ([`View::json`]).
pub struct ObjectCache {
    held: RwLock<Held>,
    /// JSON of the cached object versions. An entry leaves when its object changes or goes;
    /// at most [`ENCODED_BYTES`] of JSON are kept.
    encoded: Mutex<Encoded>,
    /// Asked for its current revision before each read.
    store: Arc<dyn ObjectStore>,
}

/// Most bytes of JSON the cache keeps encoded; past it, reads encode what is not kept.
pub const ENCODED_BYTES: usize = 64 * 1024 * 1024;

/// What the cache's lock guards.
struct Held {
    informer: Informer,
    labels: LabelIndex,
}

/// Encoded JSON by the cached object version it encodes, and how many bytes of it.
///
/// Keyed by the address of the version's shared allocation (the cache's `Arc`): a version
/// never changes, so its address names it and its JSON, and a look-up hashes a word
/// instead of a uid and compares no strings (the look-up by uid and resourceVersion was
/// 8.8% of the API load's samples: docs/performance.md, "API under load"). Each entry
/// holds a weak reference to its version, which keeps the allocation, and so the address,
/// from being reused while the entry lasts, even should a change not remove it.
#[derive(Default)]
struct Encoded {
    by_version: FastHashMap<usize, (Weak<Object>, JsonText)>,
    bytes: usize,
}

impl Encoded {
    /// The key of an object version.
    fn key(version: &Arc<Object>) -> usize {
        Arc::as_ptr(version) as usize
    }

    /// The JSON kept for `version`, if any.
    fn get(&self, version: &Arc<Object>) -> Option<JsonText> {
        self.by_version
            .get(&Self::key(version))
            .map(|(_, json)| json.clone())
    }

    /// Keeps `json` for `version`, unless that would pass [`ENCODED_BYTES`].
    fn keep(&mut self, version: &Arc<Object>, json: JsonText) {
        if self.bytes + json.len() > ENCODED_BYTES {
            return;
        }
        self.bytes += json.len();
        let entry = (Arc::downgrade(version), json);
        if let Some((_, old)) = self.by_version.insert(Self::key(version), entry) {
            self.bytes -= old.len();
        }
    }

    /// Drops what is kept for `version` (replaced or deleted).
    fn forget(&mut self, version: &Arc<Object>) {
        if let Some((_, json)) = self.by_version.remove(&Self::key(version)) {
            self.bytes -= json.len();
        }
    }
}

/// The cache as a read sees it: brought up to date for this read, and shared with other
/// reads while it runs.
pub struct View<'a> {
    held: &'a Held,
    encoded: &'a Mutex<Encoded>,
}

impl View<'_> {
    /// The objects, by kind and key.
    pub fn objects(&self) -> &Reflector {
        self.held.informer.cache()
    }

    /// The revision the view reflects: every change up to it is in, so a watch from it
    /// misses nothing.
    pub fn revision(&self) -> u64 {
        self.objects().revision()
    }

    /// The objects of `kind` (of `namespace` only, if given) that `selector` selects, in
    /// (namespace, name) order: from the label index when the selector names label values,
    /// else by a pass over the kind's objects (of the namespace).
    pub fn select(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<Object>> {
        if let Some(found) = self.held.labels.select(kind, namespace, selector) {
            return found;
        }
        let all = self.objects().list_shared(kind, namespace).into_iter();
        if selector.is_empty() {
            return all.cloned().collect();
        }
        all.filter(|o| selector.matches(&o.meta().labels))
            .cloned()
            .collect()
    }

    /// Each object's Kubernetes JSON: kept from an earlier read of the same version, or
    /// encoded now (and kept, within [`ENCODED_BYTES`]).
    pub fn json(&self, objects: &[Arc<Object>]) -> Vec<JsonText> {
        let lock = || self.encoded.lock().unwrap_or_else(|e| e.into_inner());
        let mut found: Vec<Option<JsonText>> = {
            let encoded = lock();
            objects.iter().map(|o| encoded.get(o)).collect()
        };
        let missing: Vec<usize> = (0..objects.len()).filter(|&i| found[i].is_none()).collect();
        if missing.is_empty() {
            return found.into_iter().flatten().collect();
        }
        // Encoding takes a while: without the lock of the kept JSON (other reads go on),
        // but within this view, so no change of these objects lands meanwhile and what is
        // kept is current.
        for &i in &missing {
            found[i] = Some(object_to_pb(&objects[i]).json);
        }
        let mut encoded = lock();
        for &i in &missing {
            encoded.keep(&objects[i], found[i].clone().expect("encoded above"));
        }
        found.into_iter().flatten().collect()
    }
}

impl ObjectCache {
    /// A cache of `store`'s objects: subscribes and lists now (blocking on the store), and
    /// spawns the task that keeps it current between reads (it ends with the cache or the
    /// store), so it must be called inside a Tokio runtime.
    pub fn start(store: Arc<dyn ObjectStore>) -> Arc<Self> {
        let mut wake = store.subscribe();
        let cache = Arc::new(ObjectCache::new(store));
        // Weak: the cache holds the store, which must close when the service goes away.
        let weak = Arc::downgrade(&cache);
        tokio::spawn(async move {
            // Only the wake-up counts here; the informer reads the changes themselves.
            while !matches!(wake.recv().await, Err(broadcast::error::RecvError::Closed)) {
                let Some(cache) = weak.upgrade() else { return };
                cache.catch_up_if_free();
            }
        });
        cache
    }

    /// A cache of `store`'s objects that is brought up to date only by reads: subscribes
    /// and lists now (blocking on the store).
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        let kinds: Vec<Kind> = Kind::ALL
            .into_iter()
            .filter(|k| ObjectCache::holds(*k))
            .collect();
        let cache = ObjectCache {
            held: RwLock::new(Held {
                informer: Informer::new("api cache", store.clone(), &kinds),
                labels: LabelIndex::new(),
            }),
            encoded: Mutex::default(),
            store,
        };
        cache.catch_up(&mut cache.write());
        cache
    }

    /// Whether reads of `kind` are served from the cache.
    pub fn holds(kind: Kind) -> bool {
        kind != Kind::Event
    }

    /// Runs `read` on the cache brought up to date with every write committed before this
    /// call (see the module documentation); `None` when the cache cannot be brought up to
    /// date (the store's revision could not be read or did not reach the cache in time, its
    /// list failed, or the store's stream closed), and the caller must read the store.
    /// `read` shares the cache with other reads; it holds off the changes that follow, so
    /// keep it to taking and encoding what is asked for.
    pub fn read<T>(&self, read: impl FnOnce(&View) -> T) -> Option<T> {
        let revision = self.store_changes_arrived()?;
        let view = |held: &Held| {
            read(&View {
                held,
                encoded: &self.encoded,
            })
        };
        {
            // Current when it has reached the revision, or when it has taken every change
            // sent so far: the store has sent every change up to `revision` (above), and a
            // commit on sled sends its changes before it is acknowledged, so a write
            // acknowledged before this read is in. Only a write still in flight is not,
            // and the read need not wait for that one (it began before it was acknowledged).
            let held = self.held.read().unwrap_or_else(|e| e.into_inner());
            if held.informer.is_current()
                || (held.informer.is_synced() && held.informer.cache().revision() >= revision)
            {
                return Some(view(&held));
            }
        }
        self.catch_up(&mut self.write());
        let held = self.held.read().unwrap_or_else(|e| e.into_inner());
        held.informer.is_synced().then(|| view(&held))
    }

    /// The store's current revision once it has broadcast every change up to it (waiting
    /// for that a bounded time); `None` when it has not or the revision is unknown.
    fn store_changes_arrived(&self) -> Option<u64> {
        let revision = match self.store.current_revision() {
            Ok(revision) => revision,
            Err(error) => {
                tracing::debug!(%error, "no current revision; reading the store");
                super::metrics::consistent_read_fallback("revision unknown");
                return None;
            }
        };
        let arrived = self.store.wait_sent(revision, CONSISTENT_READ_TIMEOUT);
        if !arrived {
            tracing::warn!(
                revision,
                timeout = ?CONSISTENT_READ_TIMEOUT,
                "the cache did not reach the store's revision in time; reading the store"
            );
            super::metrics::consistent_read_fallback("timeout");
            return None;
        }
        Some(revision)
    }

    /// Takes what the store has broadcast, unless reads hold the cache: the change stream's
    /// buffer then does not keep changes that only this cache has yet to read.
    fn catch_up_if_free(&self) {
        if let Ok(mut held) = self.held.try_write() {
            self.catch_up(&mut held);
        }
    }

    fn write(&self) -> RwLockWriteGuard<'_, Held> {
        self.held.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies every change broadcast so far, to the objects, the label index and the kept
    /// JSON.
    fn catch_up(&self, held: &mut Held) {
        let mut encoded = None;
        while let Some(event) = held.informer.try_next() {
            held.labels.follow(&event);
            if let Some(gone) = event.replaced() {
                let encoded = encoded
                    .get_or_insert_with(|| self.encoded.lock().unwrap_or_else(|e| e.into_inner()));
                if !encoded.by_version.is_empty() {
                    encoded.forget(gone);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use berth_proto::model::{Kind, Object};
    use berth_store::{ChangeType, Op, Precondition};

    use super::*;

    fn change(revision: u64) -> Arc<Change> {
        let json = format!(
            r#"{{"metadata": {{"name": "p{revision}", "resourceVersion": "{revision}"}}}}"#
        );
        Arc::new(Change {
            change_type: ChangeType::Added,
            object: Object::from_json(Kind::Pod, json.as_bytes())
                .expect("a pod")
                .into(),
            revision,
        })
    }

    fn revisions(start: &Start) -> Vec<u64> {
        start.backlog.iter().map(|c| c.revision).collect()
    }

    fn pod_named(name: &str) -> Object {
        Object::Pod(Box::new(
            berth_model::testing::PodBuilder::new(name).build(),
        ))
    }

    /// The names of the cached pods and the cache's revision; `None` when the cache sends
    /// reads to the store.
    fn cached_pods(cache: &ObjectCache) -> Option<(Vec<String>, u64)> {
        cache.read(|c| {
            let names = c
                .objects()
                .list(Kind::Pod, Some("default"))
                .iter()
                .map(|o| o.meta().name.clone())
                .collect();
            (names, c.revision())
        })
    }

    #[test]
    fn a_read_sees_every_write_committed_before_it() {
        let store: Arc<dyn ObjectStore> =
            Arc::new(berth_store::SledStore::temporary().expect("temporary store"));
        store
            .commit(vec![Op::Create(pod_named("before"))])
            .expect("committed");
        // No task keeps this cache current: only reads bring it up to date.
        let cache = ObjectCache::new(store.clone());
        assert_eq!(
            cached_pods(&cache),
            Some((vec!["before".to_string()], store.revision()))
        );
        for i in 0..20 {
            let name = format!("p{i:02}");
            store
                .commit(vec![Op::Create(pod_named(&name))])
                .expect("committed");
            let (names, revision) = cached_pods(&cache).expect("current");
            assert_eq!(names.last(), Some(&name), "its own write, at once");
            assert_eq!(names.len(), i + 2);
            assert_eq!(revision, store.revision());
        }
        let key = pod_named("p03").key();
        store
            .commit(vec![Op::Delete {
                key: key.clone(),
                precondition: Precondition::None,
            }])
            .expect("deleted");
        assert!(cache
            .read(|c| c.objects().get_shared(&key).is_none())
            .expect("current"));
        assert!(ObjectCache::holds(Kind::Pod) && !ObjectCache::holds(Kind::Event));
    }

    /// The JSON a read encoded is kept for that version of the object only: a read of the
    /// same version gets it again, one after a change gets the new version's, and what was
    /// kept is dropped when its object changes or goes.
    #[test]
    fn kept_json_is_for_one_version_and_goes_with_it() {
        let store: Arc<dyn ObjectStore> =
            Arc::new(berth_store::SledStore::temporary().expect("temporary store"));
        let mut pod = pod_named("p");
        pod.meta_mut().labels.insert("v".into(), "one".into());
        store.commit(vec![Op::Create(pod)]).expect("committed");
        let cache = ObjectCache::new(store.clone());
        let key = pod_named("p").key();
        let read = || {
            cache
                .read(|c| {
                    let found = c.objects().get_shared(&key).cloned();
                    found.map(|o| c.json(&[o]).swap_remove(0))
                })
                .expect("current")
        };
        let kept = || {
            let encoded = cache.encoded.lock().expect("encoded");
            (encoded.by_version.len(), encoded.bytes)
        };
        let first = read().expect("the pod");
        assert!(first.contains(r#""v":"one""#), "{first}");
        assert_eq!(kept(), (1, first.len()));
        let again = read().expect("the pod");
        assert_eq!(
            first.as_ptr(),
            again.as_ptr(),
            "the same version's JSON, kept"
        );

        let Some(Object::Pod(mut pod)) = store.get(&key).expect("get") else {
            panic!("the pod");
        };
        pod.metadata.labels.insert("v".into(), "two".into());
        let precondition = Precondition::ResourceVersion(pod.metadata.resource_version.clone());
        store
            .commit(vec![Op::Update {
                object: Object::Pod(pod),
                precondition,
            }])
            .expect("updated");
        let second = read().expect("the pod");
        assert!(second.contains(r#""v":"two""#), "{second}");
        assert_eq!(kept(), (1, second.len()), "the old version's JSON is gone");

        store
            .commit(vec![Op::Delete {
                key: key.clone(),
                precondition: Precondition::None,
            }])
            .expect("deleted");
        assert_eq!(read(), None);
        assert_eq!(kept(), (0, 0), "a deleted object's JSON is gone");
    }

    /// A store whose changes reach subscribers only while a reader waits for them, and only
    /// if they arrive in time: an etcd replica's watch, which delivers writes made through
    /// another replica a little later.
    struct HeldBackStore {
        inner: berth_store::SledStore,
        changes: broadcast::Sender<Arc<Change>>,
        held: Mutex<Vec<Change>>,
        /// Whether the held changes arrive within a reader's wait.
        in_time: std::sync::atomic::AtomicBool,
    }

    impl ObjectStore for HeldBackStore {
        fn get(&self, key: &berth_proto::model::ObjectKey) -> berth_store::Result<Option<Object>> {
            self.inner.get(key)
        }
        fn list(&self, kind: Kind, namespace: Option<&str>) -> berth_store::Result<Vec<Object>> {
            self.inner.list(kind, namespace)
        }
        fn commit(&self, ops: Vec<Op>) -> berth_store::Result<Vec<Change>> {
            let changes = self.inner.commit(ops)?;
            self.held
                .lock()
                .expect("held")
                .extend(changes.iter().cloned());
            Ok(changes)
        }
        fn revision(&self) -> u64 {
            self.inner.revision()
        }
        fn wait_sent(&self, revision: u64, _timeout: std::time::Duration) -> bool {
            assert_eq!(revision, self.inner.revision(), "the current revision");
            if !self.in_time.load(std::sync::atomic::Ordering::SeqCst) {
                return false;
            }
            for change in self.held.lock().expect("held").drain(..) {
                let _ = self.changes.send(Arc::new(change));
            }
            true
        }
        fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
            self.changes.subscribe()
        }
    }

    #[test]
    fn a_read_waits_for_writes_made_elsewhere_and_reads_the_store_when_they_are_late() {
        let held = Arc::new(HeldBackStore {
            inner: berth_store::SledStore::temporary().expect("temporary store"),
            changes: broadcast::channel(64).0,
            held: Mutex::new(Vec::new()),
            in_time: true.into(),
        });
        let store: Arc<dyn ObjectStore> = held.clone();
        let cache = ObjectCache::new(store.clone());
        for i in 0..3 {
            let name = format!("p{i}");
            store
                .commit(vec![Op::Create(pod_named(&name))])
                .expect("committed");
            let (names, revision) = cached_pods(&cache).expect("arrived in time");
            assert_eq!(names.last(), Some(&name), "the write, at once");
            assert_eq!(revision, store.revision());
        }
        held.in_time
            .store(false, std::sync::atomic::Ordering::SeqCst);
        store
            .commit(vec![Op::Create(pod_named("late"))])
            .expect("committed");
        assert_eq!(cached_pods(&cache), None, "late: the store must answer");
    }

    #[test]
    fn a_cache_that_fell_behind_lists_again_and_one_that_cannot_sends_reads_to_the_store() {
        let laggy = crate::server::informer::testing::LaggyStore::new(2);
        let store: Arc<dyn ObjectStore> = laggy.clone();
        let cache = ObjectCache::new(store.clone());
        for i in 0..5 {
            store
                .commit(vec![Op::Create(pod_named(&format!("p{i}")))])
                .expect("committed");
        }
        let (names, revision) = cached_pods(&cache).expect("listed again");
        assert_eq!(names, ["p0", "p1", "p2", "p3", "p4"]);
        assert_eq!(revision, store.revision());
        laggy
            .fail_lists
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for i in 5..10 {
            store
                .commit(vec![Op::Create(pod_named(&format!("p{i}")))])
                .expect("committed");
        }
        assert_eq!(cached_pods(&cache), None, "stale: the store must answer");
    }

    #[test]
    fn a_watch_from_a_version_gets_the_changes_after_it_then_the_live_ones() {
        let cache = WatchCache::empty(10);
        for r in 11..=13 {
            cache.push(change(r));
        }
        let mut start = cache.since(11).expect("remembered");
        assert_eq!(revisions(&start), [12, 13]);
        assert!(cache.since(13).expect("the newest").backlog.is_empty());
        assert!(cache.since(20).expect("the future").backlog.is_empty());
        assert!(cache.since(10).is_ok(), "the floor itself is served");
        assert_eq!(
            cache.since(9).err(),
            Some(Expired {
                requested: 9,
                oldest: 10
            })
        );
        cache.push(change(14));
        assert_eq!(start.live.try_recv().expect("live").revision, 14);
        // A change the cache already has is not recorded twice.
        cache.push(change(14));
        assert!(start.live.try_recv().is_err());
        // Another object's change of the same commit (on etcd, one revision) is recorded.
        let mut other = (*change(14)).clone();
        other.object = pod_named("other").into();
        cache.push(Arc::new(other));
        let live = start
            .live
            .try_recv()
            .expect("the second change of revision 14");
        assert_eq!(
            (live.revision, live.object.meta().name.as_str()),
            (14, "other")
        );
        assert_eq!(revisions(&cache.since(13).expect("remembered")), [14, 14]);
    }

    #[test]
    fn old_changes_are_forgotten_and_then_expired() {
        let cache = WatchCache::empty(0);
        let last = HISTORY_CHANGES as u64 + 5;
        for r in 1..=last {
            cache.push(change(r));
        }
        assert_eq!(
            cache.since(4).err(),
            Some(Expired {
                requested: 4,
                oldest: 5
            })
        );
        assert_eq!(cache.since(5).expect("kept").backlog.len(), HISTORY_CHANGES);
        assert_eq!(
            Expired {
                requested: 4,
                oldest: 5
            }
            .to_string(),
            "too old resource version: 4 (5)"
        );
    }

    #[test]
    fn after_losing_changes_open_watches_end_and_new_ones_start_from_the_next_change() {
        let cache = WatchCache::empty(0);
        cache.push(change(1));
        let mut open = cache.since(0).expect("fresh");
        cache.forget();
        assert!(matches!(
            open.live.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        assert!(
            cache.since(1).is_err(),
            "nothing is known until the next change"
        );
        cache.push(change(7));
        assert!(cache.since(5).is_err(), "changes 2..=6 were lost");
        assert_eq!(revisions(&cache.since(6).expect("after the loss")), [7]);
    }
}
