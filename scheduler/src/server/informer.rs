//! The one informer and controller runtime of the server's watch loops (after kube-rs's
//! `runtime`): "subscribe, list, follow the changes, list again after falling behind" is
//! written and tested here once, for the scheduling loop, the controllers, node lifecycle,
//! taint eviction and the agent dispatcher.
//!
//! # Layout
//!
//! - [`Watcher`] turns the store's change stream into [`Event`]s. It subscribes when it is
//!   made and lists on its first call, so nothing committed in between is missed. When the
//!   broadcast channel reports that it fell behind, it lists again and reports the
//!   difference: an [`Event::InitApply`] for every object that is new or changed, an
//!   [`Event::Delete`] for every object that vanished meanwhile, between [`Event::Init`] and
//!   [`Event::InitDone`].
//! - [`Reflector`] holds the latest state of every watched object, which the watcher keeps
//!   up to date; stale changes (older than what it holds) are dropped there, so an object
//!   written by the consumer itself can be applied at once from [`ObjectStore::commit`]'s
//!   result ([`Reflector::apply`]) and its copy from the stream is recognised and skipped.
//! - [`Informer`] bundles the two for the common case.
//! - [`WorkQueue`] holds keys to reconcile, with per-key exponential back-off after a
//!   failure (kube's rate-limited work queue), for controllers that reconcile one key at a
//!   time.
//! - [`spawn`] runs a loop on a thread of its own with a single-threaded runtime: every watch
//!   loop writes to the store (which blocks), so each runs this way.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_proto::model::{Kind, Node, Object, ObjectKey, Pod};
use berth_store::{Change, ChangeType, ObjectStore};
use tokio::sync::broadcast;
use tracing::{debug, warn};

/// How long a watcher waits before listing again after a list failed; doubled with each
/// further failure, up to [`MAX_LIST_RETRY`].
const LIST_RETRY: Duration = Duration::from_millis(200);

/// Longest wait between attempts to list.
const MAX_LIST_RETRY: Duration = Duration::from_secs(10);

/// One thing a [`Watcher`] learned about the watched objects.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A list begins: the first one, or one after falling behind the change stream.
    Init,
    /// An object found by the list that the reflector did not hold in this version, with
    /// the version it held before, if any.
    InitApply {
        /// The object as listed.
        object: Arc<Object>,
        /// The state the reflector held before.
        previous: Option<Arc<Object>>,
    },
    /// The list is done: the reflector now holds what the store held when it listed.
    InitDone,
    /// An object was created or changed, with the state the reflector held before.
    Apply {
        /// The new state.
        object: Arc<Object>,
        /// The previous state, if the reflector held one.
        previous: Option<Arc<Object>>,
    },
    /// An object was deleted, from the change stream or (between [`Event::Init`] and
    /// [`Event::InitDone`]) because a list no longer has it. Carries its last known state.
    Delete {
        /// The last state of the object.
        object: Arc<Object>,
        /// The state the reflector held until now: from the change stream, the version
        /// before the deletion (`object` is the store's last state, stamped with the
        /// deletion's revision); from a list, `object` itself.
        held: Arc<Object>,
    },
}

impl Event {
    /// The object an apply or delete is about; `None` for [`Event::Init`] and
    /// [`Event::InitDone`].
    pub fn object(&self) -> Option<&Object> {
        self.shared().map(|object| &**object)
    }

    /// The object an apply or delete is about, as the shared copy the reflector holds.
    pub fn shared(&self) -> Option<&Arc<Object>> {
        match self {
            Event::InitApply { object, .. }
            | Event::Apply { object, .. }
            | Event::Delete { object, .. } => Some(object),
            Event::Init | Event::InitDone => None,
        }
    }

    /// The version the reflector held before this event and holds no more: an apply's
    /// previous state, a deletion's held one.
    pub fn replaced(&self) -> Option<&Arc<Object>> {
        match self {
            Event::InitApply { previous, .. } | Event::Apply { previous, .. } => previous.as_ref(),
            Event::Delete { held, .. } => Some(held),
            Event::Init | Event::InitDone => None,
        }
    }

    /// The state before an apply, when the reflector held one.
    pub fn previous(&self) -> Option<&Object> {
        match self {
            Event::InitApply { previous, .. } | Event::Apply { previous, .. } => {
                previous.as_deref()
            }
            _ => None,
        }
    }

    /// Whether this is a deletion.
    pub fn is_delete(&self) -> bool {
        matches!(self, Event::Delete { .. })
    }
}

/// A cached object and its revision (its resourceVersion, parsed once). Held in a set
/// ordered by the object's own (namespace, name), so that no key is stored beside it: a
/// `(String, String)` key took ~100 bytes per object and two allocations per look-up.
#[derive(Clone, Debug)]
struct Cached {
    revision: u64,
    object: Arc<Object>,
}

/// What a reflector orders and finds its objects by: (namespace, name), the namespace empty
/// for cluster-scoped kinds. Implemented by the cached object and by a borrowed pair, so
/// that a look-up by name borrows ([`Borrow`] into `dyn Named`).
trait Named {
    /// The (namespace, name).
    fn named(&self) -> (&str, &str);
}

impl Named for Cached {
    fn named(&self) -> (&str, &str) {
        let meta = self.object.meta();
        let namespace = if self.object.kind().is_namespaced() {
            meta.namespace.as_str()
        } else {
            ""
        };
        (namespace, meta.name.as_str())
    }
}

impl Named for (&str, &str) {
    fn named(&self) -> (&str, &str) {
        *self
    }
}

/// Equality and order by [`Named::named`], for a type that implements it.
macro_rules! ordered_by_name {
    ($($t:ty),*) => {$(
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.named() == other.named()
            }
        }

        impl Eq for $t {}

        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $t {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.named().cmp(&other.named())
            }
        }
    )*};
}

ordered_by_name!(dyn Named + '_, Cached);

impl<'a> Borrow<dyn Named + 'a> for Cached {
    fn borrow(&self) -> &(dyn Named + 'a) {
        self
    }
}

/// The objects of one kind, in (namespace, name) order.
type Objects = BTreeSet<Cached>;

/// The latest state of every watched object, by kind and (namespace, name), with an
/// optional index from owner uid to the objects that name it in their ownerReferences.
#[derive(Debug, Default)]
pub struct Reflector {
    objects: HashMap<Kind, Objects>,
    /// Owner uid → dependents, when the index is kept.
    dependents: Option<HashMap<String, BTreeSet<ObjectKey>>>,
    /// Keys deleted through [`Reflector::apply`] with the deletion's revision, while the
    /// stream may still deliver older changes of them.
    tombstones: HashMap<ObjectKey, u64>,
    /// Revision read before the last list: every change up to it is in what was listed.
    floor: u64,
    /// The newest revision this reflector has caught up with: its last list's or the last
    /// change the stream delivered (of any kind).
    revision: u64,
}

/// The revision an object carries in its resourceVersion (0 when it has none).
fn revision_of(object: &Object) -> u64 {
    object.meta().resource_version.parse().unwrap_or(0)
}

/// The (namespace, name) an object key is held under, to look it up with.
fn named(key: &ObjectKey) -> (&str, &str) {
    (key.namespace.as_str(), key.name.as_str())
}

/// The cached object held under `name`, if any.
fn held_under<'m>(map: &'m Objects, name: (&str, &str)) -> Option<&'m Cached> {
    map.get(&name as &dyn Named)
}

impl Reflector {
    /// An empty reflector without the owner index.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same reflector, keeping an index from owner uid to dependents
    /// ([`Reflector::dependents_of`]).
    pub fn with_owner_index(mut self) -> Self {
        self.dependents = Some(HashMap::new());
        self
    }

    /// An object by kind, namespace and name (the namespace is ignored for cluster-scoped
    /// kinds).
    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Object> {
        self.get_shared(&ObjectKey::new(kind, namespace, name))
            .map(|o| o.as_ref())
    }

    /// An object by key, shared.
    pub fn get_shared(&self, key: &ObjectKey) -> Option<&Arc<Object>> {
        held_under(self.objects.get(&key.kind)?, named(key)).map(|c| &c.object)
    }

    /// Every object of a kind, in (namespace, name) order; with a namespace, only its own.
    pub fn list(&self, kind: Kind, namespace: Option<&str>) -> Vec<&Object> {
        self.list_shared(kind, namespace)
            .into_iter()
            .map(|o| o.as_ref())
            .collect()
    }

    /// [`Reflector::list`], each object shared.
    pub fn list_shared(&self, kind: Kind, namespace: Option<&str>) -> Vec<&Arc<Object>> {
        let Some(map) = self.objects.get(&kind) else {
            return Vec::new();
        };
        match namespace {
            None => map.iter().map(|c| &c.object).collect(),
            Some(ns) => {
                let first = (ns, "");
                map.range::<dyn Named, _>((Bound::Included(&first as &dyn Named), Bound::Unbounded))
                    .take_while(|c| c.named().0 == ns)
                    .map(|c| &c.object)
                    .collect()
            }
        }
    }

    /// The newest revision the reflector has caught up with (0 before its first list):
    /// every change up to it is reflected, so a watch from it misses nothing.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Every pod of a namespace, in name order.
    pub fn pods(&self, namespace: &str) -> Vec<&Pod> {
        self.list_of(Kind::Pod, Some(namespace), |o| match o {
            Object::Pod(p) => Some(p),
            _ => None,
        })
    }

    /// Every node, in name order.
    pub fn nodes(&self) -> Vec<&Node> {
        self.list_of(Kind::Node, None, |o| match o {
            Object::Node(n) => Some(n),
            _ => None,
        })
    }

    /// [`Reflector::list`], each object as its kind's type.
    fn list_of<'a, T>(
        &'a self,
        kind: Kind,
        namespace: Option<&str>,
        typed: fn(&'a Object) -> Option<&'a T>,
    ) -> Vec<&'a T> {
        self.list(kind, namespace)
            .into_iter()
            .filter_map(typed)
            .collect()
    }

    /// How many objects of a kind are held.
    pub fn len(&self, kind: Kind) -> usize {
        self.objects.get(&kind).map_or(0, BTreeSet::len)
    }

    /// The objects whose ownerReferences name this uid; empty without the owner index.
    pub fn dependents_of(&self, uid: &str) -> Vec<&Object> {
        self.dependents
            .as_ref()
            .and_then(|d| d.get(uid))
            .into_iter()
            .flatten()
            .filter_map(|k| self.get(k.kind, &k.namespace, &k.name))
            .collect()
    }

    /// Applies a committed change unless the reflector already holds a newer state of the
    /// object (or knows it deleted later), and says what it did. Watchers feed it the
    /// stream; a consumer may also feed it the changes its own commit returned, so that it
    /// acts on them before their copies arrive from the stream.
    pub fn apply(&mut self, change: &Change) -> Option<Event> {
        let key = change.object.key();
        let stale = change.revision <= self.floor
            || self
                .tombstones
                .get(&key)
                .is_some_and(|&deleted| deleted >= change.revision);
        if stale {
            return None;
        }
        if change.change_type == ChangeType::Deleted {
            let newer_held = self
                .objects
                .get(&key.kind)
                .and_then(|map| held_under(map, named(&key)))
                .is_some_and(|c| c.revision >= change.revision);
            if newer_held {
                return None;
            }
            self.tombstones.insert(key.clone(), change.revision);
            // The change carries the last stored state, stamped with the deletion's revision.
            let held = self.remove(&key)?;
            return Some(Event::Delete {
                object: change.object.clone(),
                held,
            });
        }
        let object = change.object.clone();
        let previous = self.store(key, change.revision, object.clone(), true)?;
        Some(Event::Apply { object, previous })
    }

    /// Notes that the change stream has delivered everything up to `revision`: tombstones
    /// at or below it are no longer needed.
    fn passed(&mut self, revision: u64) {
        self.revision = self.revision.max(revision);
        if !self.tombstones.is_empty() {
            self.tombstones.retain(|_, deleted| *deleted > revision);
        }
    }

    /// Replaces the held objects of `kinds` with a list taken after `floor` was the store's
    /// revision, and returns the difference as events, from [`Event::Init`] to
    /// [`Event::InitDone`]: per kind in the order given, deletions of the vanished objects,
    /// then the objects that are new or changed. An object whose uid changed (deleted and
    /// created again under the same name) is a deletion and a new object.
    fn replace(&mut self, listed: Vec<(Kind, Vec<Object>)>, floor: u64) -> Vec<Event> {
        let mut events = vec![Event::Init];
        for (kind, objects) in listed {
            let fresh: BTreeMap<(String, String), Object> = objects
                .into_iter()
                .map(|o| ((o.meta().namespace.clone(), o.meta().name.clone()), o))
                .collect();
            let held: Vec<(String, String)> = self
                .objects
                .get(&kind)
                .map(|m| {
                    m.iter()
                        .map(|c| {
                            let (namespace, name) = c.named();
                            (namespace.to_string(), name.to_string())
                        })
                        .collect()
                })
                .unwrap_or_default();
            for (namespace, name) in held {
                let key = ObjectKey::new(kind, &namespace, &name);
                let same_uid = fresh.get(&(namespace, name)).map(|o| o.meta().uid.as_str())
                    == self
                        .get(kind, &key.namespace, &key.name)
                        .map(|o| o.meta().uid.as_str());
                if !same_uid {
                    if let Some(object) = self.remove(&key) {
                        events.push(Event::Delete {
                            held: object.clone(),
                            object,
                        });
                    }
                }
            }
            for (_, object) in fresh {
                let key = object.key();
                let revision = revision_of(&object);
                let same = self
                    .objects
                    .get(&kind)
                    .and_then(|m| held_under(m, named(&key)))
                    .is_some_and(|c| c.revision == revision);
                if same {
                    continue;
                }
                let object = Arc::new(object);
                let previous = self.insert(key, revision, object.clone());
                events.push(Event::InitApply { object, previous });
            }
        }
        self.floor = floor;
        self.revision = self.revision.max(floor);
        self.tombstones.retain(|_, deleted| *deleted > floor);
        events.push(Event::InitDone);
        events
    }

    /// Stores an object, keeping the owner index; returns the state it replaces.
    fn insert(
        &mut self,
        key: ObjectKey,
        revision: u64,
        object: Arc<Object>,
    ) -> Option<Arc<Object>> {
        self.store(key, revision, object, false).flatten()
    }

    /// Stores an object, keeping the owner index, and returns the state it replaces; with
    /// `only_newer`, keeps instead a held state at `revision` or later and returns `None`.
    /// One search of the set in the common case (the object is new or older): the informers
    /// apply a change per pod write, and the loop's thread spent ~3.5% of a SchedulingBasic
    /// run in the name compares of a look-up followed by a replace.
    fn store(
        &mut self,
        key: ObjectKey,
        revision: u64,
        object: Arc<Object>,
        only_newer: bool,
    ) -> Option<Option<Arc<Object>>> {
        let map = self.objects.entry(key.kind).or_default();
        let replaced = map.replace(Cached {
            revision,
            object: object.clone(),
        });
        let previous = match replaced {
            Some(held) if only_newer && held.revision >= revision => {
                map.replace(held);
                return None;
            }
            replaced => replaced.map(|c| c.object),
        };
        if let Some(index) = &mut self.dependents {
            for owner in &object.meta().owner_references {
                if !owner.uid.is_empty() {
                    index
                        .entry(owner.uid.clone())
                        .or_default()
                        .insert(key.clone());
                }
            }
        }
        if let Some(previous) = &previous {
            self.unindex(&key, previous, Some(&object));
        }
        Some(previous)
    }

    /// Removes an object, keeping the owner index; returns its last state.
    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<Object>> {
        let removed = self
            .objects
            .get_mut(&key.kind)?
            .take(&named(key) as &dyn Named)?
            .object;
        self.unindex(key, &removed, None);
        Some(removed)
    }

    /// Drops the index entries of `old` that `new` (if any) no longer has.
    fn unindex(&mut self, key: &ObjectKey, old: &Object, new: Option<&Object>) {
        let Some(index) = &mut self.dependents else {
            return;
        };
        for owner in &old.meta().owner_references {
            let kept =
                new.is_some_and(|n| n.meta().owner_references.iter().any(|r| r.uid == owner.uid));
            if kept {
                continue;
            }
            if let Some(set) = index.get_mut(&owner.uid) {
                set.remove(key);
                if set.is_empty() {
                    index.remove(&owner.uid);
                }
            }
        }
    }
}

/// Where a watcher stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A list is due (at once, or not before the given time after a failed one).
    NeedsList(Option<Instant>),
    /// Following the change stream.
    Watching,
    /// The store's stream has closed.
    Closed,
}

/// Follows the store's changes to some kinds as [`Event`]s, listing first and again after
/// falling behind; see the module documentation.
pub struct Watcher {
    name: &'static str,
    store: Arc<dyn ObjectStore>,
    kinds: Vec<Kind>,
    changes: broadcast::Receiver<Arc<Change>>,
    pending: VecDeque<Event>,
    state: State,
    list_failures: u32,
}

impl Watcher {
    /// A watcher of `kinds` (listed in this order) named `name` in its logs. Subscribes
    /// now; the first call to [`Watcher::next`] or [`Watcher::try_next`] lists.
    pub fn new(name: &'static str, store: Arc<dyn ObjectStore>, kinds: &[Kind]) -> Self {
        let changes = store.subscribe();
        Watcher {
            name,
            store,
            kinds: kinds.to_vec(),
            changes,
            pending: VecDeque::new(),
            state: State::NeedsList(None),
            list_failures: 0,
        }
    }

    /// The store watched.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The next event, applied to `cache` first; waits for one. `None` once the store's
    /// stream has closed. Lists (blocking on the store) when a list is due.
    pub async fn next(&mut self, cache: &mut Reflector) -> Option<Event> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            match self.state {
                State::Closed => return None,
                State::NeedsList(not_before) => {
                    if let Some(at) = not_before {
                        tokio::time::sleep_until(at.into()).await;
                    }
                    self.list(cache);
                }
                State::Watching => {
                    let received = self.changes.recv().await;
                    if let Some(event) = self.received(received, cache) {
                        return Some(event);
                    }
                }
            }
        }
    }

    /// The next event if one is ready now, applied to `cache` first; lists when a list is
    /// due (and its retry time has come).
    pub fn try_next(&mut self, cache: &mut Reflector) -> Option<Event> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            match self.state {
                State::Closed => return None,
                State::NeedsList(Some(at)) if at > Instant::now() => return None,
                State::NeedsList(_) => self.list(cache),
                State::Watching => {
                    let received = match self.changes.try_recv() {
                        Ok(change) => Ok(change),
                        Err(broadcast::error::TryRecvError::Empty) => return None,
                        Err(broadcast::error::TryRecvError::Lagged(n)) => {
                            Err(broadcast::error::RecvError::Lagged(n))
                        }
                        Err(broadcast::error::TryRecvError::Closed) => {
                            Err(broadcast::error::RecvError::Closed)
                        }
                    };
                    if let Some(event) = self.received(received, cache) {
                        return Some(event);
                    }
                }
            }
        }
    }

    /// Waits for the next event, then takes every other one ready now: one batch of work.
    /// `None` once the store's stream has closed.
    pub async fn next_batch(&mut self, cache: &mut Reflector) -> Option<Vec<Event>> {
        let mut batch = vec![self.next(cache).await?];
        while let Some(event) = self.try_next(cache) {
            batch.push(event);
        }
        Some(batch)
    }

    /// Handles one result from the change stream.
    fn received(
        &mut self,
        received: Result<Arc<Change>, broadcast::error::RecvError>,
        cache: &mut Reflector,
    ) -> Option<Event> {
        match received {
            Ok(change) => {
                cache.passed(change.revision);
                if !self.kinds.contains(&change.object.kind()) {
                    return None;
                }
                cache.apply(&change)
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                warn!(
                    watcher = self.name,
                    missed, "fell behind the store's changes; listing again"
                );
                self.state = State::NeedsList(None);
                None
            }
            Err(broadcast::error::RecvError::Closed) => {
                debug!(watcher = self.name, "the store's change stream closed");
                self.state = State::Closed;
                None
            }
        }
    }

    /// Lists every watched kind and queues the difference with `cache` as events; after a
    /// failure, logs it and tries again later.
    fn list(&mut self, cache: &mut Reflector) {
        let floor = self.store.revision();
        let mut listed = Vec::with_capacity(self.kinds.len());
        for &kind in &self.kinds {
            match self.store.list(kind, None) {
                Ok(objects) => listed.push((kind, objects)),
                Err(e) => {
                    let delay = LIST_RETRY
                        .saturating_mul(1u32 << self.list_failures.min(16))
                        .min(MAX_LIST_RETRY);
                    self.list_failures = self.list_failures.saturating_add(1);
                    warn!(watcher = self.name, kind = %kind, error = %e, retry_in = ?delay, "listing failed");
                    self.state = State::NeedsList(Some(Instant::now() + delay));
                    return;
                }
            }
        }
        self.list_failures = 0;
        let events = cache.replace(listed, floor);
        debug!(
            watcher = self.name,
            revision = floor,
            changed = events.len() - 2,
            "listed"
        );
        self.pending.extend(events);
        self.state = State::Watching;
    }
}

/// A [`Watcher`] with its own [`Reflector`].
pub struct Informer {
    watcher: Watcher,
    cache: Reflector,
}

impl Informer {
    /// An informer of `kinds`, subscribed now; see [`Watcher::new`].
    pub fn new(name: &'static str, store: Arc<dyn ObjectStore>, kinds: &[Kind]) -> Self {
        Informer {
            watcher: Watcher::new(name, store, kinds),
            cache: Reflector::new(),
        }
    }

    /// The latest state of the watched objects.
    pub fn cache(&self) -> &Reflector {
        &self.cache
    }

    /// Whether the informer follows the change stream: it has listed, and no list is due
    /// (after falling behind or a failed list) and the stream is open.
    pub fn is_synced(&self) -> bool {
        self.watcher.state == State::Watching
    }

    /// The store watched.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        self.watcher.store()
    }

    /// Whether the cache holds every change the store has sent so far: synced, with no
    /// event queued and nothing waiting in the change stream.
    pub fn is_current(&self) -> bool {
        self.is_synced() && self.watcher.pending.is_empty() && self.watcher.changes.is_empty()
    }

    /// Applies a change the consumer's own commit returned; see [`Reflector::apply`].
    pub fn apply(&mut self, change: &Change) -> Option<Event> {
        self.cache.apply(change)
    }

    /// The next event; see [`Watcher::next`].
    pub async fn next(&mut self) -> Option<Event> {
        self.watcher.next(&mut self.cache).await
    }

    /// The next event if one is ready; see [`Watcher::try_next`].
    pub fn try_next(&mut self) -> Option<Event> {
        self.watcher.try_next(&mut self.cache)
    }

    /// The next batch of events; see [`Watcher::next_batch`].
    pub async fn next_batch(&mut self) -> Option<Vec<Event>> {
        self.watcher.next_batch(&mut self.cache).await
    }
}

/// Keys waiting to be reconciled, in key order, and keys waiting out a back-off after a
/// failed reconcile (kube's rate-limited work queue): the first retry after `base`, doubling
/// with each further failure of the same key up to `max`, forgotten on success.
#[derive(Debug)]
pub struct WorkQueue<K> {
    ready: BTreeSet<K>,
    retries: HashMap<K, Instant>,
    failures: HashMap<K, u32>,
    base: Duration,
    max: Duration,
}

impl<K: Ord + Hash + Clone> WorkQueue<K> {
    /// An empty queue with this back-off.
    pub fn new(base: Duration, max: Duration) -> Self {
        WorkQueue {
            ready: BTreeSet::new(),
            retries: HashMap::new(),
            failures: HashMap::new(),
            base,
            max,
        }
    }

    /// Queues a key (once, however often it is added before it is taken).
    pub fn add(&mut self, key: K) {
        self.ready.insert(key);
    }

    /// Queues keys.
    pub fn extend(&mut self, keys: impl IntoIterator<Item = K>) {
        self.ready.extend(keys);
    }

    /// Queues a key to become ready at `at` (kube's `AddAfter`); a retry or wait already
    /// due earlier is kept.
    pub fn add_at(&mut self, key: K, at: Instant) {
        let due = self.retries.entry(key).or_insert(at);
        if at < *due {
            *due = at;
        }
    }

    /// Takes the first ready key.
    pub fn pop(&mut self) -> Option<K> {
        self.ready.pop_first()
    }

    /// Records the outcome of a reconcile of `key`: success forgets its failures; a failure
    /// queues it again after its back-off (unless a retry is already waiting).
    pub fn done(&mut self, key: K, ok: bool, now: Instant) {
        if ok {
            self.failures.remove(&key);
            return;
        }
        if self.retries.contains_key(&key) {
            return;
        }
        let failures = self.failures.get(&key).copied().unwrap_or(0);
        self.failures
            .insert(key.clone(), failures.saturating_add(1));
        self.retries.insert(key, now + self.delay(failures));
    }

    /// The back-off before the retry that follows `failures` earlier failures.
    pub fn delay(&self, failures: u32) -> Duration {
        self.base
            .saturating_mul(1u32 << failures.min(16))
            .min(self.max)
    }

    /// When the next retry is due, if any is waiting.
    pub fn next_retry(&self) -> Option<Instant> {
        self.retries.values().min().copied()
    }

    /// Makes the retries due at `now` ready.
    pub fn promote_due(&mut self, now: Instant) {
        let due: Vec<K> = self
            .retries
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.retries.remove(&key);
            self.ready.insert(key);
        }
    }
}

/// Runs `body` on a new thread named `name`, on a single-threaded runtime of its own, so
/// that its blocking store calls stall neither the API nor the other loops.
pub fn spawn<F, Fut>(name: &str, body: F) -> std::thread::JoinHandle<()>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let thread = name.to_string();
    std::thread::Builder::new()
        .name(thread.clone())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("building the runtime of {thread}: {e}"));
            rt.block_on(body());
        })
        .unwrap_or_else(|e| panic!("spawning the {name} thread: {e}"))
}

/// Stores that misbehave as the real ones may, for the tests of the loops that use them.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    use berth_proto::model::{Kind, Object, ObjectKey};
    use berth_store::{Change, ObjectStore, Op, SledStore};
    use tokio::sync::broadcast;

    /// A store whose commits wait until the test opens its gate.
    pub(crate) struct GatedStore {
        inner: SledStore,
        open: std::sync::Mutex<bool>,
        opened: std::sync::Condvar,
        /// Each commit's objects' names, in the order the commits came.
        log: std::sync::Mutex<Vec<Vec<String>>>,
    }

    impl GatedStore {
        pub(crate) fn closed() -> Arc<Self> {
            Arc::new(GatedStore {
                inner: SledStore::temporary().expect("store"),
                open: std::sync::Mutex::new(false),
                opened: std::sync::Condvar::new(),
                log: Default::default(),
            })
        }

        pub(crate) fn open(&self) {
            *self.open.lock().expect("gate") = true;
            self.opened.notify_all();
        }

        pub(crate) fn commits(&self) -> Vec<Vec<String>> {
            self.log.lock().expect("log").clone()
        }
    }

    impl ObjectStore for GatedStore {
        fn get(&self, key: &ObjectKey) -> berth_store::Result<Option<Object>> {
            self.inner.get(key)
        }
        fn list(&self, kind: Kind, namespace: Option<&str>) -> berth_store::Result<Vec<Object>> {
            self.inner.list(kind, namespace)
        }
        fn commit(&self, ops: Vec<Op>) -> berth_store::Result<Vec<berth_store::Change>> {
            let names = ops.iter().map(name_of).collect();
            self.log.lock().expect("log").push(names);
            let open = self.open.lock().expect("gate");
            drop(self.opened.wait_while(open, |open| !*open).expect("gate"));
            self.inner.commit(ops)
        }
        fn revision(&self) -> u64 {
            self.inner.revision()
        }
        fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<berth_store::Change>> {
            self.inner.subscribe()
        }
    }

    /// The name of the object an op writes.
    pub(crate) fn name_of(op: &Op) -> String {
        match op {
            Op::Create(object) | Op::Upsert(object) | Op::Update { object, .. } => {
                object.meta().name.clone()
            }
            Op::Delete { key, .. } => key.name.clone(),
        }
    }

    /// A store whose change channel holds only `capacity` changes, so that a watcher that
    /// does not read falls behind after a few commits; its lists can be made to fail.
    pub(crate) struct LaggyStore {
        inner: SledStore,
        changes: broadcast::Sender<Arc<Change>>,
        /// While set, every list fails.
        pub(crate) fail_lists: AtomicBool,
    }

    impl LaggyStore {
        /// An empty store whose subscribers lag after `capacity` unread changes.
        pub(crate) fn new(capacity: usize) -> Arc<Self> {
            Arc::new(LaggyStore {
                inner: SledStore::temporary().expect("temporary store"),
                changes: broadcast::channel(capacity).0,
                fail_lists: AtomicBool::new(false),
            })
        }
    }

    impl ObjectStore for LaggyStore {
        fn get(&self, key: &ObjectKey) -> berth_store::Result<Option<Object>> {
            self.inner.get(key)
        }
        fn list(&self, kind: Kind, namespace: Option<&str>) -> berth_store::Result<Vec<Object>> {
            if self.fail_lists.load(Ordering::SeqCst) {
                return Err(berth_store::Error::CorruptRevision { len: 0 });
            }
            self.inner.list(kind, namespace)
        }
        fn commit(&self, ops: Vec<Op>) -> berth_store::Result<Vec<Change>> {
            let changes = self.inner.commit(ops)?;
            for change in &changes {
                let _ = self.changes.send(Arc::new(change.clone()));
            }
            Ok(changes)
        }
        fn revision(&self) -> u64 {
            self.inner.revision()
        }
        fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
            self.changes.subscribe()
        }
    }

    /// A store that, as etcd, cannot commit a transaction of more than `limit` operations
    /// (the test fails if asked to), and counts the transactions it was asked for.
    pub(crate) struct LimitedStore {
        inner: SledStore,
        limit: usize,
        /// Transactions asked for so far.
        pub(crate) commits: AtomicUsize,
    }

    impl LimitedStore {
        /// An empty store refusing commits of more than `limit` operations.
        pub(crate) fn new(limit: usize) -> Arc<Self> {
            Arc::new(LimitedStore {
                inner: SledStore::temporary().expect("temporary store"),
                limit,
                commits: AtomicUsize::new(0),
            })
        }
    }

    impl ObjectStore for LimitedStore {
        fn get(&self, key: &ObjectKey) -> berth_store::Result<Option<Object>> {
            self.inner.get(key)
        }
        fn list(&self, kind: Kind, namespace: Option<&str>) -> berth_store::Result<Vec<Object>> {
            self.inner.list(kind, namespace)
        }
        fn commit(&self, ops: Vec<Op>) -> berth_store::Result<Vec<Change>> {
            self.commits.fetch_add(1, Ordering::SeqCst);
            assert!(
                ops.len() <= self.limit,
                "{} ops in one transaction, above {}",
                ops.len(),
                self.limit
            );
            self.inner.commit(ops)
        }
        fn revision(&self) -> u64 {
            self.inner.revision()
        }
        fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
            self.inner.subscribe()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{NodeBuilder, PodBuilder};
    use berth_store::{Op, Precondition};
    use std::sync::atomic::Ordering;
    use testing::LaggyStore;

    /// A pod in `default`, controlled by the owner with this uid when one is given.
    fn pod(name: &str, owner: Option<&str>) -> Object {
        let mut pod = PodBuilder::new(name);
        if owner.is_some() {
            pod = pod.owner("ReplicaSet", "rs");
        }
        let mut pod = pod.build();
        if let (Some(uid), Some(reference)) = (owner, pod.metadata.owner_references.first_mut()) {
            reference.uid = uid.into();
        }
        Object::Pod(Box::new(pod))
    }

    fn node(name: &str) -> Object {
        Object::Node(Box::new(NodeBuilder::new(name).build()))
    }

    fn create(store: &dyn ObjectStore, obj: Object) -> Change {
        store
            .commit(vec![Op::Create(obj)])
            .expect("create")
            .remove(0)
    }

    fn update(store: &dyn ObjectStore, key: &ObjectKey, edit: impl FnOnce(&mut Object)) {
        let mut obj = store.get(key).expect("get").expect("stored");
        edit(&mut obj);
        store
            .commit(vec![Op::Update {
                object: obj,
                precondition: Precondition::None,
            }])
            .expect("update");
    }

    fn delete(store: &dyn ObjectStore, key: ObjectKey) -> Change {
        store
            .commit(vec![Op::Delete {
                key,
                precondition: Precondition::None,
            }])
            .expect("delete")
            .remove(0)
    }

    fn key(kind: Kind, name: &str) -> ObjectKey {
        let ns = if kind == Kind::Pod { "default" } else { "" };
        ObjectKey::new(kind, ns, name)
    }

    /// An event in short: `init`, `done`, `apply pod/a` (`+` when it replaced a state),
    /// `delete pod/a`.
    fn describe(event: &Event) -> String {
        let name = |o: &Object| format!("{}/{}", o.kind().as_str().to_lowercase(), o.meta().name);
        match event {
            Event::Init => "init".into(),
            Event::InitDone => "done".into(),
            Event::InitApply { object, previous } | Event::Apply { object, previous } => {
                let verb = if matches!(event, Event::InitApply { .. }) {
                    "list"
                } else {
                    "apply"
                };
                let replaced = if previous.is_some() { "+" } else { "" };
                format!("{verb} {}{replaced}", name(object))
            }
            Event::Delete { object, .. } => format!("delete {}", name(object)),
        }
    }

    fn drain(informer: &mut Informer) -> Vec<String> {
        std::iter::from_fn(|| informer.try_next())
            .map(|e| describe(&e))
            .collect()
    }

    #[test]
    fn the_reflector_drops_stale_changes() {
        use ChangeType::{Added, Deleted, Modified};
        /// (case, changes of pod `a` as (revision, type), events wanted, pods left)
        type Case = (
            &'static str,
            &'static [(u64, ChangeType)],
            usize,
            &'static [&'static str],
        );
        let cases: [Case; 5] = [
            (
                "an older modification after a newer one is dropped",
                &[(7, Modified), (6, Modified)],
                1,
                &["a"],
            ),
            (
                "the same change twice (own commit, then its copy from the stream)",
                &[(5, Added), (5, Added)],
                1,
                &["a"],
            ),
            (
                "a modification older than a deletion does not bring the pod back",
                &[(5, Added), (9, Deleted), (8, Modified)],
                2,
                &[],
            ),
            (
                "a newer creation after a deletion is kept",
                &[(5, Added), (9, Deleted), (10, Added)],
                3,
                &["a"],
            ),
            (
                "deleting what was never held says nothing",
                &[(5, Deleted)],
                0,
                &[],
            ),
        ];
        for (name, changes, want_events, want_pods) in cases {
            let mut cache = Reflector::new().with_owner_index();
            let mut events = 0;
            for &(revision, change_type) in changes {
                let mut object = pod("a", Some("u1"));
                object.meta_mut().resource_version = revision.to_string();
                let change = Change {
                    change_type,
                    object: object.into(),
                    revision,
                };
                events += usize::from(cache.apply(&change).is_some());
            }
            assert_eq!(events, want_events, "{name}");
            let names: Vec<&str> = cache
                .pods("default")
                .iter()
                .map(|p| p.metadata.name.as_str())
                .collect();
            assert_eq!(names, want_pods, "{name}");
            assert_eq!(cache.dependents_of("u1").len(), want_pods.len(), "{name}");
        }
    }

    #[test]
    fn the_owner_index_follows_changed_references() {
        let mut cache = Reflector::new().with_owner_index();
        let mut object = pod("a", Some("u1"));
        object.meta_mut().resource_version = "1".into();
        cache.apply(&Change {
            change_type: ChangeType::Added,
            object: object.clone().into(),
            revision: 1,
        });
        object.meta_mut().owner_references[0].uid = "u2".into();
        object.meta_mut().resource_version = "2".into();
        cache.apply(&Change {
            change_type: ChangeType::Modified,
            object: object.into(),
            revision: 2,
        });
        assert!(
            cache.dependents_of("u1").is_empty(),
            "the old owner lost its dependent"
        );
        assert_eq!(cache.dependents_of("u2").len(), 1, "the new owner has it");
    }

    #[tokio::test]
    async fn lists_first_then_follows_the_changes_of_its_kinds() {
        let store = LaggyStore::new(64);
        create(store.as_ref(), node("n1"));
        // Subscribed before this write and listing after it: the list has it, and its copy
        // from the stream is recognised and dropped.
        let mut informer = Informer::new("test", store.clone(), &[Kind::Node, Kind::Pod]);
        create(store.as_ref(), pod("a", None));
        assert_eq!(
            drain(&mut informer),
            ["init", "list node/n1", "list pod/a", "done"]
        );

        update(store.as_ref(), &key(Kind::Pod, "a"), |_| {});
        let mut class = Object::PriorityClass(Default::default());
        class.meta_mut().name = "high".into();
        create(store.as_ref(), class);
        delete(store.as_ref(), key(Kind::Node, "n1"));
        let batch: Vec<String> = informer
            .next_batch()
            .await
            .expect("open")
            .iter()
            .map(describe)
            .collect();
        assert_eq!(
            batch,
            ["apply pod/a+", "delete node/n1"],
            "priority classes are not watched"
        );
        assert_eq!(informer.cache().len(Kind::Node), 0);
        assert_eq!(informer.cache().len(Kind::Pod), 1);
    }

    #[tokio::test]
    async fn falling_behind_lists_again_and_reports_the_difference() {
        let store = LaggyStore::new(2);
        for name in ["a", "b", "c"] {
            create(store.as_ref(), pod(name, None));
        }
        let mut informer = Informer::new("test", store.clone(), &[Kind::Pod]);
        assert_eq!(
            drain(&mut informer),
            ["init", "list pod/a", "list pod/b", "list pod/c", "done"]
        );

        // Five changes overflow the channel of two: the informer fell behind.
        delete(store.as_ref(), key(Kind::Pod, "a"));
        update(store.as_ref(), &key(Kind::Pod, "b"), |o| {
            o.meta_mut().labels.insert("k".into(), "v".into());
        });
        delete(store.as_ref(), key(Kind::Pod, "c"));
        let mut again = pod("c", None);
        again.meta_mut().uid = "c-again".into();
        again.meta_mut().labels.insert("new".into(), "yes".into());
        create(store.as_ref(), again);
        create(store.as_ref(), pod("d", None));
        assert_eq!(
            drain(&mut informer),
            [
                "init",
                "delete pod/a",
                // Deleted and created again while the informer was behind: a new object.
                "delete pod/c",
                "list pod/b+",
                "list pod/c",
                "list pod/d",
                "done",
            ],
            "the changes still in the channel are older than the list and add nothing"
        );
        let c = informer.cache().get(Kind::Pod, "default", "c").expect("c");
        assert_eq!(c.meta().labels.get("new").map(String::as_str), Some("yes"));

        create(store.as_ref(), pod("e", None));
        assert_eq!(
            drain(&mut informer),
            ["apply pod/e"],
            "following the stream again"
        );
    }

    #[tokio::test]
    async fn a_failed_list_is_tried_again() {
        let store = LaggyStore::new(8);
        create(store.as_ref(), pod("a", None));
        store.fail_lists.store(true, Ordering::SeqCst);
        let mut informer = Informer::new("test", store.clone(), &[Kind::Pod]);
        assert_eq!(
            drain(&mut informer),
            Vec::<String>::new(),
            "nothing while the list fails"
        );
        store.fail_lists.store(false, Ordering::SeqCst);
        let first = informer.next().await.expect("open");
        assert_eq!(describe(&first), "init");
        assert_eq!(drain(&mut informer), ["list pod/a", "done"]);
    }

    #[test]
    fn retries_back_off_exponentially_up_to_a_limit() {
        let queue: WorkQueue<u8> =
            WorkQueue::new(Duration::from_millis(500), Duration::from_secs(30));
        let cases = [
            (0, Duration::from_millis(500)),
            (1, Duration::from_secs(1)),
            (3, Duration::from_secs(4)),
            (6, Duration::from_secs(30)),
            (u32::MAX, Duration::from_secs(30)),
        ];
        for (failures, want) in cases {
            assert_eq!(queue.delay(failures), want, "{failures} failures");
        }
    }

    #[test]
    fn a_failed_key_comes_back_after_its_back_off_and_success_resets_it() {
        let start = Instant::now();
        let mut queue = WorkQueue::new(Duration::from_secs(1), Duration::from_secs(30));
        queue.add("a");
        queue.add("a");
        assert_eq!(queue.pop(), Some("a"));
        assert_eq!(queue.pop(), None, "queued once");
        queue.done("a", false, start);
        assert_eq!(queue.next_retry(), Some(start + Duration::from_secs(1)));
        queue.promote_due(start);
        assert_eq!(queue.pop(), None, "not due yet");
        queue.promote_due(start + Duration::from_secs(1));
        assert_eq!(queue.pop(), Some("a"));
        queue.done("a", false, start);
        assert_eq!(
            queue.next_retry(),
            Some(start + Duration::from_secs(2)),
            "doubled"
        );
        queue.promote_due(start + Duration::from_secs(2));
        queue.pop();
        queue.done("a", true, start);
        queue.done("a", false, start);
        assert_eq!(
            queue.next_retry(),
            Some(start + Duration::from_secs(1)),
            "reset by success"
        );
    }
}
