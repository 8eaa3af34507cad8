//! [`SledStore`]: the [`ObjectStore`] on a sled database, one tree per kind plus a `meta` tree
//! for the revision counter, written in multi-tree transactions.

use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use berth_proto::model::{Kind, Object, ObjectKey};
use sled::transaction::{
    ConflictableTransactionError, ConflictableTransactionResult, TransactionError,
    TransactionalTree,
};
use sled::{IVec, Transactional};
use tokio::sync::broadcast;

use crate::objects::{
    check, check_update, decode_identity, decode_key, decode_object, encode_key, keep_identity,
    normalize_key, prepare_in_place, stamp_new, Identity,
};
use crate::{Change, ChangeType, Error, ObjectStore, Op, Result};

/// How many changes a subscriber may fall behind before it sees `Lagged` (and lists
/// again). The ring keeps that many changes alive: with objects shared between the changes
/// and the subscribers' caches, what it costs of its own is the versions the caches have
/// already replaced (at 65,536 changes of ~1.5 KB pods, some 60 MB).
pub const CHANNEL_CAPACITY: usize = 16384;

/// Bytes of sled's page cache (sled's own default is 1 GiB, which a store of 50,000 pods
/// fills: the cache then outweighs everything else in the process). Pages past it are read
/// from the file again, which the operating system's page cache usually holds. 16 MiB
/// instead of 64 took 47 MiB off SchedulingBasic's peak at 50,000 pods with no measurable
/// loss of throughput (docs/performance.md, Memory): writes read back only their own key.
pub const CACHE_CAPACITY: u64 = 16 * 1024 * 1024;

/// Name of the tree holding store-wide values.
const META_TREE: &str = "meta";

/// Key of the revision counter in the meta tree: the latest assigned revision, as a
/// big-endian `u64`.
const REVISION_KEY: &[u8] = b"revision";

/// An [`ObjectStore`] on a sled database.
///
/// Transactions run one at a time under a store-wide lock, which assigns revisions; the
/// flush that follows runs without it, so the next commit's transaction goes on meanwhile
/// and one flush makes every commit before it durable (sled writes its log in order). Then
/// each commit sends its changes to subscribers in revision order (a commit whose flush
/// ended first waits for the commits before it), so that subscribers see only changes on
/// disk, in the order of the transactions, and a commit returns once its changes are sent.
/// Callers that wait together share one commit through the server's group commit.
pub struct SledStore {
    db: sled::Db,
    /// One tree per kind, in the order of [`Kind::ALL`], then the meta tree: the slice a
    /// commit's transaction spans.
    trees: Vec<sled::Tree>,
    /// The directory, or `None` for a temporary store.
    path: Option<PathBuf>,
    /// The latest assigned revision, as persisted in the meta tree.
    revision: AtomicU64,
    /// Serializes transactions; guards no data of its own.
    commit_lock: Mutex<()>,
    /// The revision of the last change sent to subscribers: commits send theirs in order,
    /// each once this is the revision before its first (subscriptions take it too).
    sent: Mutex<u64>,
    /// Wakes commits waiting for their turn to send.
    turn: Condvar,
    changes: broadcast::Sender<Arc<Change>>,
}

impl SledStore {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_CAPACITY)
            .open()
            .map_err(|source| Error::Open {
                path: dir.to_path_buf(),
                source,
            })?;
        Self::from_db(db, Some(dir.to_path_buf()))
    }

    /// A store in a temporary directory that is removed when the store is dropped; for tests
    /// and simulations.
    pub fn temporary() -> Result<Self> {
        let db = sled::Config::new()
            .temporary(true)
            .cache_capacity(CACHE_CAPACITY)
            .open()
            .map_err(Error::Sled)?;
        Self::from_db(db, None)
    }

    fn from_db(db: sled::Db, path: Option<PathBuf>) -> Result<Self> {
        let mut trees = Vec::with_capacity(Kind::ALL.len() + 1);
        for kind in Kind::ALL {
            trees.push(db.open_tree(tree_name(kind)).map_err(Error::Sled)?);
        }
        trees.push(db.open_tree(META_TREE).map_err(Error::Sled)?);
        let revision = decode_revision(
            trees[Kind::ALL.len()]
                .get(REVISION_KEY)
                .map_err(Error::Sled)?,
        )?;
        let (changes, _) = broadcast::channel(CHANNEL_CAPACITY);
        tracing::debug!(path = ?path, revision, "store opened");
        Ok(SledStore {
            db,
            trees,
            path,
            revision: AtomicU64::new(revision),
            commit_lock: Mutex::new(()),
            sent: Mutex::new(revision),
            turn: Condvar::new(),
            changes,
        })
    }

    fn tree(&self, kind: Kind) -> &sled::Tree {
        &self.trees[tree_index(kind)]
    }

    fn sent(&self) -> MutexGuard<'_, u64> {
        // Sending cannot leave the count half-updated, so a poisoned lock is safe to take.
        self.sent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `changes` (consecutive revisions) to subscribers once every earlier revision
    /// has been sent, and wakes the commits after them.
    fn send_in_order(&self, changes: &[Change]) {
        let (Some(first), Some(last)) = (changes.first(), changes.last()) else {
            return;
        };
        let mut sent = self.sent();
        while *sent + 1 < first.revision {
            sent = self
                .turn
                .wait(sent)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        for change in changes {
            // An error here only means that nobody is subscribed.
            let _ = self.changes.send(Arc::new(change.clone()));
        }
        *sent = last.revision;
        drop(sent);
        self.turn.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        // The lock guards no data, and a commit is atomic in sled whether or not its caller
        // panicked, so a poisoned lock is safe to take.
        self.commit_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ObjectStore for SledStore {
    fn get(&self, key: &ObjectKey) -> Result<Option<Object>> {
        let key = normalize_key(key);
        let stored_key = encode_key(&key)?;
        match self
            .tree(key.kind)
            .get(stored_key.as_bytes())
            .map_err(Error::Sled)?
        {
            Some(bytes) => decode_object(&key, &bytes).map(Some),
            None => Ok(None),
        }
    }

    fn list(&self, kind: Kind, namespace: Option<&str>) -> Result<Vec<Object>> {
        let tree = self.tree(kind);
        let namespace = namespace.filter(|ns| kind.is_namespaced() && !ns.is_empty());
        let entries = match namespace {
            Some(ns) => tree.scan_prefix(format!("{ns}/")),
            None => tree.iter(),
        };
        let mut objects = Vec::new();
        for entry in entries {
            let (stored_key, bytes) = entry.map_err(Error::Sled)?;
            let key = decode_key(kind, &stored_key);
            objects.push(decode_object(&key, &bytes)?);
        }
        // Byte order of `namespace/name` is not (namespace, name) order (`a-b/x` sorts before
        // `a/x`), so sort; within one namespace the scan is already in order.
        objects.sort_by(|a, b| {
            (&a.meta().namespace, &a.meta().name).cmp(&(&b.meta().namespace, &b.meta().name))
        });
        Ok(objects)
    }

    fn commit(&self, ops: Vec<Op>) -> Result<Vec<Change>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let _guard = self.lock();
        // The ops' objects are stamped and encoded where they are, not copied: sled may run
        // the transaction again, so each run first puts back the one field a run both
        // reads and overwrites (an update's own resourceVersion, a precondition); the
        // others it sets the same way every time.
        let sent_versions: Vec<Option<String>> = ops
            .iter()
            .map(|op| match op {
                Op::Update { object, .. } => Some(object.meta().resource_version.clone()),
                _ => None,
            })
            .collect();
        let ops = RefCell::new(ops);
        let result = self.trees.as_slice().transaction(|view| {
            let mut ops = ops.borrow_mut();
            for (op, version) in ops.iter_mut().zip(&sent_versions) {
                if let (Op::Update { object, .. }, Some(version)) = (op, version) {
                    object.meta_mut().resource_version.clone_from(version);
                }
            }
            let meta = &view[Kind::ALL.len()];
            let mut revision = decode_revision(meta.get(REVISION_KEY)?).map_err(abort)?;
            let mut applied = Vec::with_capacity(ops.len());
            for op in ops.iter_mut() {
                revision += 1;
                applied.push(apply(view, op, revision)?);
            }
            meta.insert(REVISION_KEY, &revision.to_be_bytes())?;
            Ok(applied)
        });
        let applied = result.map_err(|e| match e {
            TransactionError::Abort(e) => e,
            TransactionError::Storage(e) => Error::Sled(e),
        })?;
        let changes: Vec<Change> = ops
            .into_inner()
            .into_iter()
            .zip(applied)
            .map(|(op, applied)| {
                let object = match (applied.object, op) {
                    (Some(object), _) => object,
                    (None, Op::Create(object) | Op::Upsert(object) | Op::Update { object, .. }) => {
                        object
                    }
                    (None, Op::Delete { .. }) => unreachable!("a deletion returns what it removed"),
                };
                change(applied.change_type, object, applied.revision)
            })
            .collect();
        let revision = changes.last().map_or(0, |c| c.revision);
        self.revision.store(revision, Ordering::Release);
        drop(_guard);
        // Should the flush panic, the changes are still sent before the panic goes on, or
        // every later commit would wait for them for ever.
        let flushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.db.flush()));
        // The changes are visible to readers now, flushed or not, so subscribers must see
        // them either way to stay consistent with `get` and `list`; and the commits after
        // this one wait for it to send.
        self.send_in_order(&changes);
        let flushed = flushed.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        if let Err(source) = flushed {
            tracing::warn!(revision, error = %source, "committed changes could not be flushed");
            return Err(Error::Flush { revision, source });
        }
        tracing::debug!(revision, ops = changes.len(), "committed");
        Ok(changes)
    }

    fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    fn commits_in_process(&self) -> bool {
        true
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        // With the lock of what has been sent, the receiver gets every change sent after
        // the revision sent so far, whole commits only. A commit whose transaction ran
        // before this call may still send after it: its revision is at or below
        // `revision()`, which a subscriber that lists next skips as already listed.
        let _sent = self.sent();
        self.changes.subscribe()
    }
}

impl fmt::Debug for SledStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SledStore")
            .field("path", &self.path)
            .field("revision", &self.revision())
            .field("subscribers", &self.changes.receiver_count())
            .finish_non_exhaustive()
    }
}

/// The sled tree holding a kind's objects.
fn tree_name(kind: Kind) -> &'static str {
    kind.plural()
}

/// Position of a kind's tree in [`SledStore::trees`].
fn tree_index(kind: Kind) -> usize {
    Kind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("Kind::ALL lists every kind")
}

type TxResult<T> = ConflictableTransactionResult<T, Error>;

/// Wraps a store error so that it aborts the transaction.
fn abort(e: Error) -> ConflictableTransactionError<Error> {
    ConflictableTransactionError::Abort(e)
}

/// What [`apply`] did: the change but for its object, which is the op's own (stamped in
/// place) unless `object` holds another (a deletion's last state, or an object that reads
/// back otherwise than written).
struct Applied {
    change_type: ChangeType,
    object: Option<Object>,
    revision: u64,
}

/// Applies one op inside the commit's transaction, stamping its object (in place) with
/// `revision`.
fn apply(view: &[TransactionalTree], op: &mut Op, revision: u64) -> TxResult<Applied> {
    let applied = |change_type, object| Applied {
        change_type,
        object,
        revision,
    };
    match op {
        Op::Create(object) => {
            let (key, stored_key, tree) = locate(view, object)?;
            if tree.get(&stored_key)?.is_some() {
                return Err(abort(Error::AlreadyExists { key }));
            }
            stamp_new(object);
            let read_back = put(tree, &key, stored_key, object, revision)?;
            Ok(applied(ChangeType::Added, read_back))
        }
        Op::Update {
            object,
            precondition,
        } => {
            let (key, stored_key, tree) = locate(view, object)?;
            let Some(stored) = load_identity(tree, &key, &stored_key)? else {
                return Err(abort(Error::NotFound { key }));
            };
            check_update(&key, &stored, object, precondition).map_err(abort)?;
            keep_identity(object, &stored);
            let read_back = put(tree, &key, stored_key, object, revision)?;
            Ok(applied(ChangeType::Modified, read_back))
        }
        Op::Upsert(object) => {
            let (key, stored_key, tree) = locate(view, object)?;
            let change_type = match load_identity(tree, &key, &stored_key)? {
                Some(stored) => {
                    keep_identity(object, &stored);
                    ChangeType::Modified
                }
                None => {
                    stamp_new(object);
                    ChangeType::Added
                }
            };
            let read_back = put(tree, &key, stored_key, object, revision)?;
            Ok(applied(change_type, read_back))
        }
        Op::Delete { key, precondition } => {
            let key = normalize_key(key);
            let stored_key = encode_key(&key).map_err(abort)?.into_bytes();
            let tree = &view[tree_index(key.kind)];
            let Some(mut stored) = load(tree, &key, &stored_key)? else {
                return Err(abort(Error::NotFound { key }));
            };
            check(&key, &Identity::of(&stored), precondition).map_err(abort)?;
            tree.remove(stored_key)?;
            stored.meta_mut().resource_version = revision.to_string();
            Ok(applied(ChangeType::Deleted, Some(stored)))
        }
    }
}

fn change(change_type: ChangeType, object: Object, revision: u64) -> Change {
    Change {
        change_type,
        object: Arc::new(object),
        revision,
    }
}

/// The key, stored key and tree of an object to write.
fn locate<'v>(
    view: &'v [TransactionalTree],
    object: &Object,
) -> TxResult<(ObjectKey, Vec<u8>, &'v TransactionalTree)> {
    let key = object.key();
    let stored_key = encode_key(&key).map_err(abort)?.into_bytes();
    let tree = &view[tree_index(key.kind)];
    Ok((key, stored_key, tree))
}

fn load(tree: &TransactionalTree, key: &ObjectKey, stored_key: &[u8]) -> TxResult<Option<Object>> {
    match tree.get(stored_key)? {
        Some(bytes) => decode_object(key, &bytes).map(Some).map_err(abort),
        None => Ok(None),
    }
}

/// The identity of the stored object, if any, read without decoding the whole object.
fn load_identity(
    tree: &TransactionalTree,
    key: &ObjectKey,
    stored_key: &[u8],
) -> TxResult<Option<Identity>> {
    match tree.get(stored_key)? {
        Some(bytes) => decode_identity(key, &bytes).map(Some).map_err(abort),
        None => Ok(None),
    }
}

/// Writes the object with its new resourceVersion (set in place); returns what a read will
/// return when that is not the object itself ([`prepare_in_place`]).
fn put(
    tree: &TransactionalTree,
    key: &ObjectKey,
    stored_key: Vec<u8>,
    object: &mut Object,
    revision: u64,
) -> TxResult<Option<Object>> {
    let (bytes, read_back) = prepare_in_place(key, object, revision.to_string()).map_err(abort)?;
    tree.insert(stored_key, bytes)?;
    Ok(read_back)
}

/// The revision counter's value; 0 when it was never written.
fn decode_revision(value: Option<IVec>) -> Result<u64> {
    match value {
        None => Ok(0),
        Some(bytes) => {
            let array: [u8; 8] = bytes
                .as_ref()
                .try_into()
                .map_err(|_| Error::CorruptRevision { len: bytes.len() })?;
            Ok(u64::from_be_bytes(array))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_revision_cases() {
        assert_eq!(decode_revision(None).expect("absent is 0"), 0);
        let seven = IVec::from(&7u64.to_be_bytes());
        assert_eq!(decode_revision(Some(seven)).expect("8 bytes"), 7);
        let short = IVec::from(&[1u8, 2, 3][..]);
        let err = decode_revision(Some(short)).expect_err("3 bytes is corrupt");
        assert!(matches!(err, Error::CorruptRevision { len: 3 }), "{err}");
    }
}
