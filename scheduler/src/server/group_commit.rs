//! Group commit for writes whose callers wait for the result (the API's applies): batches
//! sent while a commit runs are committed together in the next one, in a single store
//! transaction and one disk flush (up to etcd's limit of operations a transaction, so that
//! the same batching works on both stores), and each caller gets its own changes back. Should the
//! joint commit fail, each batch is committed alone, so that each keeps its all-or-nothing
//! promise and one failing batch (a conflict, say) does not sink the others.

use std::sync::{Arc, Mutex, MutexGuard};

use berth_store::{Change, ObjectStore, Op};
use tokio::sync::oneshot;

use super::error::{Error, Result};

/// Most batches committed in one transaction.
const MAX_BATCHES: usize = 256;

/// One caller's ops and where its result goes.
struct Pending {
    ops: Vec<Op>,
    reply: oneshot::Sender<berth_store::Result<Vec<Change>>>,
}

/// Takes callers' batches and commits them in turns, where the store's commits run
/// ([`super::commit_thread::submit`]): one turn at a time, each taking every batch sent
/// before it began. The turn is started by the batch that finds none under way, and the
/// next by the turn itself when more came meanwhile, straight from the commit thread: no
/// task of the runtime stands between a caller and the commit thread, so neither a batch
/// nor the next turn waits for a runtime thread (both busy under load) to be woken.
#[derive(Clone)]
pub struct GroupCommit {
    shared: Arc<Shared>,
}

struct Shared {
    store: Arc<dyn ObjectStore>,
    /// Whose blocking pool runs the turns when the store's commits are round trips.
    runtime: tokio::runtime::Handle,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    /// Batches sent since the last turn took its own.
    waiting: Vec<Pending>,
    /// A turn is started and has not ended (it takes `waiting` when it runs).
    started: bool,
}

impl GroupCommit {
    /// A group commit to `store`; must be called inside a Tokio runtime, whose blocking
    /// pool commits to a store whose commits are round trips.
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        GroupCommit {
            shared: Arc::new(Shared {
                store,
                runtime: tokio::runtime::Handle::current(),
                queue: Mutex::default(),
            }),
        }
    }

    /// Commits `ops` atomically, possibly in one transaction with other callers' batches;
    /// the same result as [`ObjectStore::commit`] of `ops` alone.
    pub async fn commit(&self, ops: Vec<Op>) -> Result<Vec<Change>> {
        let (reply, result) = oneshot::channel();
        let start = {
            let mut queue = self.shared.queue();
            queue.waiting.push(Pending { ops, reply });
            !std::mem::replace(&mut queue.started, true)
        };
        if start {
            Shared::start_turn(&self.shared);
        }
        let stopped = || Error::Unavailable("the server is shutting down".into());
        result.await.map_err(|_| stopped())?.map_err(Error::from)
    }
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a turn (`started` is set). Should it not run, its batches' callers see the
    /// server stopping.
    fn start_turn(this: &Arc<Self>) {
        let turn = Turn(Some(this.clone()));
        let submitted =
            super::commit_thread::submit(this.store.clone(), &this.runtime, move |store| {
                turn.run(store)
            });
        if let Err(e) = submitted {
            tracing::error!(error = %e, "group commit: a turn could not start");
        }
    }
}

/// A turn of the group commit; dropped unrun (its job was dropped: the runtime is shutting
/// down, or the commit thread could not start), it fails the batches waiting, so that no
/// caller waits for ever.
struct Turn(Option<Arc<Shared>>);

impl Turn {
    fn run(mut self, store: &dyn ObjectStore) {
        let Some(shared) = self.0.take() else { return };
        let batches = {
            let mut queue = shared.queue();
            let take = queue.waiting.len().min(MAX_BATCHES);
            queue.waiting.drain(..take).collect::<Vec<_>>()
        };
        let count = batches.len();
        let started = std::time::Instant::now();
        // A panic of the commit drops the replies: their callers see the server stopping.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| commit(store, batches)));
        super::metrics::store_commit(count, started.elapsed());
        // The next turn, queued behind the writes sent meanwhile, if anything came.
        let again = {
            let mut queue = shared.queue();
            queue.started = !queue.waiting.is_empty();
            queue.started
        };
        if again {
            Shared::start_turn(&shared);
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            let mut queue = shared.queue();
            queue.started = false;
            // Dropping the replies tells each caller that the server is stopping.
            queue.waiting.clear();
        }
    }
}

/// Commits the batches in as few transactions as etcd's limit of operations allows, or
/// each alone where a joint commit fails, and replies to each.
fn commit(store: &dyn ObjectStore, batches: Vec<Pending>) {
    for group in groups(batches, berth_store::MAX_TXN_OPS, |b| b.ops.len()) {
        commit_group(store, group);
    }
}

/// `items` in order, in consecutive groups of at most `limit` operations each (`ops` counts
/// an item's), each as large as fits: the joint commits a transaction limit allows. An item
/// larger than the limit forms a group of its own.
pub(super) fn groups<T>(items: Vec<T>, limit: usize, ops: impl Fn(&T) -> usize) -> Vec<Vec<T>> {
    let mut groups = Vec::new();
    let mut group = Vec::new();
    let mut count = 0;
    for item in items {
        let n = ops(&item);
        if !group.is_empty() && count + n > limit {
            groups.push(std::mem::take(&mut group));
            count = 0;
        }
        count += n;
        group.push(item);
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// Commits the batches in one transaction, or each alone if that fails, and replies to each.
fn commit_group(store: &dyn ObjectStore, batches: Vec<Pending>) {
    if batches.len() > 1 {
        let ops: Vec<Op> = batches.iter().flat_map(|b| b.ops.iter().cloned()).collect();
        if let Ok(changes) = store.commit(ops) {
            let mut changes = changes.into_iter();
            for batch in batches {
                let own = changes.by_ref().take(batch.ops.len()).collect();
                // The caller may have gone (its client hung up); the write stands.
                let _ = batch.reply.send(Ok(own));
            }
            return;
        }
    }
    for batch in batches {
        let result = store.commit(batch.ops);
        let _ = batch.reply.send(result);
    }
}

#[cfg(test)]
mod tests {
    use berth_model::testing::PodBuilder;
    use berth_proto::model::{Kind, Object};
    use berth_store::{ChangeType, SledStore};

    use crate::server::informer::testing::{GatedStore, LimitedStore};

    use super::*;

    fn create(name: &str) -> Op {
        Op::Create(Object::Pod(Box::new(PodBuilder::new(name).build())))
    }

    fn names(changes: &[Change]) -> Vec<&str> {
        changes
            .iter()
            .map(|c| c.object.meta().name.as_str())
            .collect()
    }

    /// Spawns a commit of `ops` through `commits`.
    fn spawn_commit(
        commits: &GroupCommit,
        ops: Vec<Op>,
    ) -> tokio::task::JoinHandle<Result<Vec<Change>>> {
        let commits = commits.clone();
        tokio::spawn(async move { commits.commit(ops).await })
    }

    /// Opens the gate when dropped, so that a failing test does not leave commits blocked
    /// on the blocking pool, which the runtime's shutdown would wait for.
    struct OpenAtEnd(Arc<GatedStore>);

    impl Drop for OpenAtEnd {
        fn drop(&mut self) {
            self.0.open();
        }
    }

    /// Waits until `done` holds, failing the test after 10 s rather than hanging it.
    async fn until(done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "waited 10 s");
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// Waits for `task`'s result, failing the test rather than hanging it.
    async fn joined(task: tokio::task::JoinHandle<Result<Vec<Change>>>) -> Result<Vec<Change>> {
        tokio::time::timeout(std::time::Duration::from_secs(10), task)
            .await
            .expect("committed in time")
            .expect("joined")
    }

    /// Holds the turn of a commit of "taken" on `store`'s gate, sends three batches behind
    /// it (so that they share the next turn), and opens the gate.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_caller_gets_its_own_changes_and_a_failing_batch_fails_alone() {
        let store = GatedStore::closed();
        let _open = OpenAtEnd(store.clone());
        let commits = GroupCommit::new(store.clone());
        let first = spawn_commit(&commits, vec![create("taken")]);
        until(|| !store.commits().is_empty()).await;
        let a = spawn_commit(&commits, vec![create("a1"), create("a2")]);
        until(|| !commits.shared.queue().waiting.is_empty()).await;
        let b = spawn_commit(&commits, vec![create("b1"), create("taken")]);
        until(|| commits.shared.queue().waiting.len() >= 2).await;
        let c = spawn_commit(&commits, vec![create("c1")]);
        until(|| commits.shared.queue().waiting.len() >= 3).await;
        store.open();
        joined(first).await.expect("taken commits");
        assert_eq!(names(&joined(a).await.expect("a commits")), ["a1", "a2"]);
        let b = joined(b).await;
        assert!(matches!(b, Err(Error::AlreadyExists { .. })), "{b:?}");
        let c = joined(c).await.expect("c commits");
        assert_eq!(names(&c), ["c1"]);
        assert_eq!(c[0].change_type, ChangeType::Added);
        // One joint commit of the three, which failed, then each alone.
        let tried = [
            vec!["taken"],
            vec!["a1", "a2", "b1", "taken", "c1"],
            vec!["a1", "a2"],
            vec!["b1", "taken"],
            vec!["c1"],
        ];
        assert_eq!(store.commits(), tried);
        // Nothing of the failed batch was written.
        let stored: Vec<String> = store
            .list(Kind::Pod, None)
            .expect("listed")
            .iter()
            .map(|o| o.meta().name.clone())
            .collect();
        assert_eq!(stored, ["a1", "a2", "c1", "taken"]);
    }

    #[tokio::test]
    async fn batches_committed_together_get_their_own_revisions() {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        let commits = GroupCommit::new(store.clone());
        let (a, b) = tokio::join!(
            commits.commit(vec![create("a")]),
            commits.commit(vec![create("b")])
        );
        let (a, b) = (a.expect("a commits"), b.expect("b commits"));
        assert_eq!((names(&a), names(&b)), (vec!["a"], vec!["b"]));
        assert_eq!((a[0].revision, b[0].revision), (1, 2));
        assert_eq!(store.revision(), 2);
        let stored = store
            .get(&a[0].object.key())
            .expect("read")
            .expect("stored");
        assert_eq!(stored.meta().resource_version, "1");
    }

    /// Batches sent while a turn commits wait for it, then share the next turn, which the
    /// turn itself starts: no caller starts a second turn while one is under way.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn batches_sent_during_a_turn_share_the_next() {
        let store = GatedStore::closed();
        let _open = OpenAtEnd(store.clone());
        let commits = GroupCommit::new(store.clone());
        let first = spawn_commit(&commits, vec![create("a")]);
        until(|| !store.commits().is_empty()).await;
        let mut later = Vec::new();
        for (i, name) in ["b", "c"].into_iter().enumerate() {
            later.push(spawn_commit(&commits, vec![create(name)]));
            // One after the other, so that they wait in this order.
            until(|| commits.shared.queue().waiting.len() > i).await;
        }
        assert_eq!(store.commits(), [vec!["a"]], "the first turn still runs");
        store.open();
        assert_eq!(names(&joined(first).await.expect("a commits")), ["a"]);
        for (task, name) in later.into_iter().zip(["b", "c"]) {
            assert_eq!(names(&joined(task).await.expect("commits")), [name]);
        }
        assert_eq!(store.commits(), [vec!["a"], vec!["b", "c"]]);
        // The turn ends (and says no turn is under way) after its replies.
        until(|| !commits.shared.queue().started).await;
    }

    /// A turn that cannot run (its runtime has shut down) fails its callers as the server
    /// stopping, and the next batch starts a turn of its own.
    #[test]
    fn a_turn_that_cannot_run_fails_its_callers() {
        let gone = tokio::runtime::Runtime::new().expect("runtime");
        // Commits that are round trips run on the blocking pool of the runtime that made
        // the group commit.
        let commits = gone.block_on(async { GroupCommit::new(LimitedStore::new(16)) });
        drop(gone);
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        for name in ["a", "b"] {
            let result = runtime.block_on(commits.commit(vec![create(name)]));
            assert!(matches!(result, Err(Error::Unavailable(_))), "{result:?}");
        }
        assert!(!commits.shared.queue().started);
    }

    #[test]
    fn groups_fill_up_to_the_limit_in_order() {
        let sizes = |items: Vec<usize>, limit| groups(items, limit, |n| *n);
        assert_eq!(sizes(vec![60, 60, 60], 128), [vec![60, 60], vec![60]]);
        assert_eq!(sizes(vec![1; 5], 2), [vec![1, 1], vec![1, 1], vec![1]]);
        assert_eq!(
            sizes(vec![200, 1], 128),
            [vec![200], vec![1]],
            "too large: alone"
        );
        assert_eq!(sizes(vec![127, 1], 128), [vec![127, 1]]);
        assert!(sizes(vec![], 128).is_empty());
    }

    #[tokio::test]
    async fn joint_commits_stay_within_etcds_operations_a_transaction() {
        let store = LimitedStore::new(berth_store::MAX_TXN_OPS);
        let batch = |prefix: &str| {
            let ops = (0..60).map(|i| create(&format!("{prefix}{i}"))).collect();
            let (reply, result) = oneshot::channel();
            (Pending { ops, reply }, result)
        };
        // Three batches of one turn.
        let ((a, ra), (b, rb), (c, rc)) = (batch("a"), batch("b"), batch("c"));
        commit(store.as_ref(), vec![a, b, c]);
        let (a, b, c) = (
            ra.await.expect("a reply"),
            rb.await.expect("b"),
            rc.await.expect("c"),
        );
        for result in [a, b, c] {
            assert_eq!(result.expect("committed").len(), 60);
        }
        // 60 + 60 share one transaction; the third batch would pass 128, so it goes next.
        assert_eq!(store.commits.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(store.list(Kind::Pod, None).expect("listed").len(), 180);
    }
}
