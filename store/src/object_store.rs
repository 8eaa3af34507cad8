//! The narrow interface the rest of Berth codes against: read objects, commit a batch of
//! writes atomically, and watch the resulting changes.

use std::sync::Arc;
use std::time::Duration;

use berth_proto::model::{Kind, Object, ObjectKey};
use tokio::sync::broadcast;

use crate::{Guard, Result};

/// A condition a write checks against the stored object before it applies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Precondition {
    /// No check.
    #[default]
    None,
    /// Refuse the write with [`Error::Conflict`](crate::Error::Conflict) unless the stored
    /// object's `metadata.resourceVersion` equals this one (optimistic concurrency).
    ResourceVersion(String),
}

/// One write in a [`ObjectStore::commit`] batch.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Store a new object; fails with `AlreadyExists` if its key is taken. Assigns
    /// `metadata.uid` (a v4 UUID) when empty and `metadata.creationTimestamp` when unset.
    Create(Object),
    /// Replace an existing object; fails with `NotFound` if it is missing. The write is
    /// refused with `Conflict` unless the stored resourceVersion equals both the
    /// precondition's and the object's own `metadata.resourceVersion` (each when given).
    /// The stored uid and creationTimestamp are kept.
    Update {
        /// The new state.
        object: Object,
        /// Checked against the stored object.
        precondition: Precondition,
    },
    /// Create the object, or replace it without any resourceVersion check. Like an update, a
    /// replacement keeps the stored uid and creationTimestamp.
    Upsert(Object),
    /// Remove an object; fails with `NotFound` if it is missing, and checks the precondition
    /// as [`Op::Update`] does.
    Delete {
        /// The object to remove.
        key: ObjectKey,
        /// Checked against the stored object.
        precondition: Precondition,
    },
}

/// What a committed op did to its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChangeType {
    /// The object was created.
    Added,
    /// The object was replaced.
    Modified,
    /// The object was removed.
    Deleted,
}

/// One committed write, as returned by [`ObjectStore::commit`] and sent to subscribers.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// What happened.
    pub change_type: ChangeType,
    /// The object's new state, exactly as [`ObjectStore::get`] now returns it. For
    /// [`ChangeType::Deleted`], the last stored state with `metadata.resourceVersion` set to
    /// the deletion's revision. Shared: the commit's caller, every subscriber and their
    /// caches hold the same copy.
    pub object: Arc<Object>,
    /// The revision assigned to this write; equal to the object's resourceVersion. The
    /// changes of one commit may share one revision (etcd) or take consecutive ones (sled).
    pub revision: u64,
}

impl Change {
    /// The object, owned: taken out of the change when no one else shares it, else copied.
    pub fn into_object(self) -> Object {
        Arc::unwrap_or_clone(self.object)
    }
}

/// A durable store of typed objects with a global, increasing revision.
///
/// Every commit's changes get revisions above every earlier commit's, carried as
/// `metadata.resourceVersion`; within one commit they do not decrease. On sled each write
/// takes the next revision; on etcd all changes of a commit share its transaction's
/// revision, and revisions may skip (other keys of the cluster use them too). Revisions are
/// never reused, including across restarts. Callers compare revisions only per object (an
/// informer skips a change whose revision is not above its cached resourceVersion).
pub trait ObjectStore: Send + Sync {
    /// The object with this key, if stored.
    fn get(&self, key: &ObjectKey) -> Result<Option<Object>>;

    /// Every object of a kind, sorted by (namespace, name). With `Some(namespace)`, only that
    /// namespace's objects; the filter is ignored for cluster-scoped kinds, and an empty
    /// namespace means all namespaces.
    fn list(&self, kind: Kind, namespace: Option<&str>) -> Result<Vec<Object>>;

    /// Applies the ops in order, atomically: either all succeed or nothing is written and the
    /// first failure is returned. On `Ok`, the changes are on disk and have been sent to
    /// subscribers; the result holds one [`Change`] per op, in order.
    fn commit(&self, ops: Vec<Op>) -> Result<Vec<Change>>;

    /// [`ObjectStore::commit`], fenced: applies only if `guard`'s leadership still holds
    /// when the commit applies, and otherwise fails with
    /// [`Error::NotLeader`](crate::Error::NotLeader) and writes nothing.
    ///
    /// The default checks the guard in this process, then commits: right for a store whose
    /// leadership is process-local (sled, with [`LocalElector`](crate::LocalElector)). A
    /// store with a remote election (etcd) overrides it to check the election key inside
    /// the commit's transaction.
    fn commit_guarded(&self, guard: &Guard, ops: Vec<Op>) -> Result<Vec<Change>> {
        guard.check()?;
        self.commit(ops)
    }

    /// The latest revision assigned (0 for an empty, never-written store).
    fn revision(&self) -> u64;

    /// The store's current revision, asked of the store itself: every write acknowledged
    /// before this call, by this process or any other, is at or below it (kube's
    /// `getCurrentResourceVersionFromStorage`). The default is [`ObjectStore::revision`],
    /// right for a store only this process writes (sled); etcd answers with the header
    /// revision of a quorum read.
    fn current_revision(&self) -> Result<u64> {
        Ok(self.revision())
    }

    /// Waits, at most `timeout`, until every change up to `revision` has been sent to
    /// subscribers; whether it has. The default answers `true` at once: a store whose
    /// [`ObjectStore::commit`] sends its changes before returning has sent every change
    /// acknowledged before [`ObjectStore::current_revision`] was read (sled; a commit still
    /// in flight may not have, and a read that began before its acknowledgement need not
    /// see it). On etcd the changes come from its watch,
    /// so a write through another replica may not have arrived yet.
    fn wait_sent(&self, revision: u64, timeout: Duration) -> bool {
        let _ = (revision, timeout);
        true
    }

    /// Whether a commit is work done in this process (sled: encoding, its B-tree, its log)
    /// rather than a round trip to the store's own servers (etcd). The server runs commits
    /// done in process one after another on one thread of its own, and lets round trips
    /// overlap on the blocking pool, where the store's servers batch them. The default is a
    /// round trip.
    fn commits_in_process(&self) -> bool {
        false
    }

    /// A receiver of every [`Change`] committed after this call, in commit order.
    ///
    /// A receiver that falls more than the channel's capacity behind gets
    /// [`broadcast::error::RecvError::Lagged`] and should re-list; so does every receiver
    /// when the etcd backend's watch resumes past history that compaction removed (the
    /// messages that follow the lag then repeat an already-delivered change, below any later
    /// list's revision). To build a cache, subscribe
    /// first, then list, and skip changes whose revision is not above the cached object's
    /// resourceVersion.
    fn subscribe(&self) -> broadcast::Receiver<Arc<Change>>;
}

/// The trait stays object-safe and shareable across threads: callers hold `Arc<dyn ObjectStore>`.
const _: fn() = || {
    fn assert_send_sync<T: ?Sized + Send + Sync>() {}
    assert_send_sync::<dyn ObjectStore>();
};
