//! The Watch RPC's memory of recent changes (kube-apiserver's watch cache): the last
//! [`HISTORY_CHANGES`] committed changes, so that a watch from a resourceVersion gets every
//! change after it — the changes since a `List`, with nothing lost in between — and a
//! version older than the memory is refused as expired (kube's `410 Gone`, reason
//! `Expired`), which tells the client to list again.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use berth_store::{Change, ObjectStore};
use tokio::sync::broadcast;

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
        let newest = history.changes.back().map_or(history.floor, |c| c.revision);
        if change.revision <= newest {
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

#[cfg(test)]
mod tests {
    use berth_proto::model::{Kind, Object};
    use berth_store::ChangeType;

    use super::*;

    fn change(revision: u64) -> Arc<Change> {
        let json = format!(
            r#"{{"metadata": {{"name": "p{revision}", "resourceVersion": "{revision}"}}}}"#
        );
        Arc::new(Change {
            change_type: ChangeType::Added,
            object: Object::from_json(Kind::Pod, json.as_bytes()).expect("a pod"),
            revision,
        })
    }

    fn revisions(start: &Start) -> Vec<u64> {
        start.backlog.iter().map(|c| c.revision).collect()
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
