//! Leader election and fenced writes: an [`Elector`] grants a [`Leadership`], whose [`Guard`]
//! makes a commit apply only while that leadership still holds, so a deposed leader (paused,
//! partitioned, or simply slow to notice) cannot write.
//!
//! Two electors exist: [`LocalElector`] for the embedded sled store (one process owns the
//! store's folder, so leadership is a process-local lock granted at once), and
//! [`EtcdElector`](crate::EtcdElector) (in `etcd_store.rs`), which holds a lease-bound
//! election key.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use berth_proto::model::{Kind, Object, ObjectKey};
use tokio::sync::{broadcast, watch};

use crate::{Change, Error, ObjectStore, Op, Result};

/// Timing of a lease-based election, with kube-scheduler's defaults and flag names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElectionConfig {
    /// `--leader-elect-lease-duration`: how long a leader's lease lives without renewal; a
    /// standby may take over this long after the leader stopped renewing (default 15 s).
    pub lease_duration: Duration,
    /// `--leader-elect-renew-deadline`: a leader that has not renewed its lease for this long
    /// gives up leadership (default 10 s; below the lease duration).
    pub renew_deadline: Duration,
    /// `--leader-elect-retry-period`: how often the leader renews and a standby retries
    /// (default 2 s).
    pub retry_period: Duration,
}

impl Default for ElectionConfig {
    fn default() -> Self {
        ElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Grants leadership to one campaigner at a time.
pub trait Elector: Send + Sync {
    /// Blocks until `identity` is the leader (or the election fails), and returns the
    /// leadership. Call it from a thread that may block (not a runtime worker).
    fn campaign(&self, identity: &str) -> Result<Leadership>;
}

/// Leadership won in an election. It ends when [`Leadership::resign`] is called, when it is
/// dropped, or when the backend loses it (lease not renewed within the renew deadline, or
/// the election key changed): then [`Leadership::lost`] turns `true` and every
/// [`Guard`] of it refuses further writes with [`Error::NotLeader`].
pub struct Leadership {
    guard: Guard,
    /// Sets the lost flag (for local leadership) and releases the backend's hold; taken on
    /// resign or drop.
    release: Option<Box<dyn FnOnce() + Send>>,
}

impl Leadership {
    /// Leadership with this guard; `release` gives it up (called once, on resign or drop).
    pub(crate) fn new(guard: Guard, release: Box<dyn FnOnce() + Send>) -> Self {
        Leadership {
            guard,
            release: Some(release),
        }
    }

    /// The identity that won.
    pub fn identity(&self) -> &str {
        &self.guard.inner.identity
    }

    /// The fence to pass to [`ObjectStore::commit_guarded`] (or to wrap in a
    /// [`FencedStore`]); cheap to clone.
    pub fn guard(&self) -> Guard {
        self.guard.clone()
    }

    /// Turns `true` (once, for good) when this leadership is lost or given up. A replica
    /// stops its leader-only loops as soon as it does.
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.guard.inner.lost.clone()
    }

    /// Gives leadership up at once, so that a standby can take over without waiting for
    /// the lease to expire.
    pub fn resign(mut self) {
        self.give_up();
    }

    fn give_up(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.give_up();
    }
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

/// The proof of leadership a fenced commit carries. A commit with a guard applies only if
/// the leadership it came from still holds at the moment the commit applies; on etcd that is
/// checked inside the commit's transaction.
#[derive(Clone)]
pub struct Guard {
    inner: Arc<GuardInner>,
}

struct GuardInner {
    identity: String,
    lost: watch::Receiver<bool>,
    fence: Fence,
}

/// What a backend checks to know the leadership still holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fence {
    /// Process-local leadership: the lost flag is the whole truth.
    Local,
    /// An etcd election key created under the leader's lease: the leadership holds while
    /// the key exists with this create revision (only its creator writes it, and it goes
    /// with the lease).
    Etcd {
        /// The election key.
        key: Vec<u8>,
        /// The key's create_revision when this leadership created it.
        create_revision: i64,
    },
}

impl Guard {
    pub(crate) fn new(identity: &str, lost: watch::Receiver<bool>, fence: Fence) -> Self {
        Guard {
            inner: Arc::new(GuardInner {
                identity: identity.to_string(),
                lost,
                fence,
            }),
        }
    }

    /// The identity of the leader this guard belongs to.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// Whether the leadership has not been lost as far as this process knows. A backend
    /// with a remote election (etcd) checks the election key as well, in the commit itself.
    pub fn is_held(&self) -> bool {
        !*self.inner.lost.borrow()
    }

    /// `Ok` while [`Guard::is_held`], else [`Error::NotLeader`].
    pub fn check(&self) -> Result<()> {
        if self.is_held() {
            Ok(())
        } else {
            Err(self.not_leader())
        }
    }

    pub(crate) fn fence(&self) -> &Fence {
        &self.inner.fence
    }

    /// The error a fenced commit fails with once this leadership is gone.
    pub(crate) fn not_leader(&self) -> Error {
        Error::NotLeader {
            identity: self.inner.identity.clone(),
        }
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("identity", &self.inner.identity)
            .field("held", &self.is_held())
            .field("fence", &self.inner.fence)
            .finish()
    }
}

/// An in-process elector for a store that one process owns (sled): the first campaign wins
/// at once; another campaign blocks until the leader resigns or drops its leadership.
#[derive(Debug, Default)]
pub struct LocalElector {
    leader: Arc<(Mutex<Option<String>>, Condvar)>,
}

impl LocalElector {
    /// An elector with no leader yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Elector for LocalElector {
    fn campaign(&self, identity: &str) -> Result<Leadership> {
        let (lock, changed) = &*self.leader;
        let mut leader = lock.lock().unwrap_or_else(|p| p.into_inner());
        while leader.is_some() {
            leader = changed.wait(leader).unwrap_or_else(|p| p.into_inner());
        }
        *leader = Some(identity.to_string());
        drop(leader);
        tracing::info!(identity, "leadership acquired (local)");
        let (lost_tx, lost_rx) = watch::channel(false);
        let guard = Guard::new(identity, lost_rx, Fence::Local);
        let shared = Arc::clone(&self.leader);
        let who = identity.to_string();
        Ok(Leadership::new(
            guard,
            Box::new(move || {
                // Mark the guard lost before a successor can be granted, so the two never
                // both hold.
                let _ = lost_tx.send(true);
                let (lock, changed) = &*shared;
                *lock.lock().unwrap_or_else(|p| p.into_inner()) = None;
                changed.notify_all();
                tracing::info!(identity = %who, "leadership released (local)");
            }),
        ))
    }
}

/// A store whose every commit is fenced by one leadership's [`Guard`]: hand it to the
/// leader-only loops, and once leadership is lost their writes fail with
/// [`Error::NotLeader`] and write nothing. Reads and subscriptions go to the inner store.
pub struct FencedStore {
    inner: Arc<dyn ObjectStore>,
    guard: Guard,
}

impl FencedStore {
    /// `inner`'s objects, written only while `guard` holds.
    pub fn new(inner: Arc<dyn ObjectStore>, guard: Guard) -> Self {
        FencedStore { inner, guard }
    }

    /// The guard every commit carries.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }
}

impl ObjectStore for FencedStore {
    fn get(&self, key: &ObjectKey) -> Result<Option<Object>> {
        self.inner.get(key)
    }

    fn list(&self, kind: Kind, namespace: Option<&str>) -> Result<Vec<Object>> {
        self.inner.list(kind, namespace)
    }

    fn commit(&self, ops: Vec<Op>) -> Result<Vec<Change>> {
        self.inner.commit_guarded(&self.guard, ops)
    }

    fn commit_guarded(&self, guard: &Guard, ops: Vec<Op>) -> Result<Vec<Change>> {
        // Both fences must hold: the caller's and this store's own. The inner store checks
        // the caller's in the commit; this one is checked here as well.
        self.guard.check()?;
        self.inner.commit_guarded(guard, ops)
    }

    fn revision(&self) -> u64 {
        self.inner.revision()
    }

    fn current_revision(&self) -> Result<u64> {
        self.inner.current_revision()
    }

    fn wait_sent(&self, revision: u64, timeout: std::time::Duration) -> bool {
        self.inner.wait_sent(revision, timeout)
    }

    fn commits_in_process(&self) -> bool {
        self.inner.commits_in_process()
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.inner.subscribe()
    }
}

impl fmt::Debug for FencedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FencedStore")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}
