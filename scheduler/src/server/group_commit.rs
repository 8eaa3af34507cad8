//! Group commit for writes whose callers wait for the result (the API's applies): batches
//! sent while a commit runs are committed together in the next one, in a single store
//! transaction and one disk flush (up to etcd's limit of operations a transaction, so that
//! the same batching works on both stores), and each caller gets its own changes back. Should the
//! joint commit fail, each batch is committed alone, so that each keeps its all-or-nothing
//! promise and one failing batch (a conflict, say) does not sink the others.

use std::sync::Arc;

use berth_store::{Change, ObjectStore, Op};
use tokio::sync::{mpsc, oneshot};

use super::error::{Error, Result};

/// Most batches committed in one transaction.
const MAX_BATCHES: usize = 256;

/// One caller's ops and where its result goes.
struct Pending {
    ops: Vec<Op>,
    reply: oneshot::Sender<berth_store::Result<Vec<Change>>>,
}

/// Sends batches of ops to the task that commits them.
#[derive(Clone)]
pub struct GroupCommit {
    tx: mpsc::UnboundedSender<Pending>,
}

impl GroupCommit {
    /// Starts the committing task (it ends when every sender is gone), so it must be called
    /// inside a Tokio runtime.
    pub fn spawn(store: Arc<dyn ObjectStore>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(store, rx));
        GroupCommit { tx }
    }

    /// Commits `ops` atomically, possibly in one transaction with other callers' batches;
    /// the same result as [`ObjectStore::commit`] of `ops` alone.
    pub async fn commit(&self, ops: Vec<Op>) -> Result<Vec<Change>> {
        let (reply, result) = oneshot::channel();
        let stopped = || Error::Unavailable("the server is shutting down".into());
        self.tx
            .send(Pending { ops, reply })
            .map_err(|_| stopped())?;
        result.await.map_err(|_| stopped())?.map_err(Error::from)
    }
}

async fn run(store: Arc<dyn ObjectStore>, mut rx: mpsc::UnboundedReceiver<Pending>) {
    let mut pending = Vec::with_capacity(MAX_BATCHES);
    while rx.recv_many(&mut pending, MAX_BATCHES).await > 0 {
        let batches = std::mem::take(&mut pending);
        let count = batches.len();
        let started = std::time::Instant::now();
        // A panic of the commit drops the replies: their callers see the server stopping.
        let _ = super::commit_thread::commit_to(store.clone(), move |store| commit(store, batches))
            .await;
        super::metrics::store_commit(count, started.elapsed());
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

    use crate::server::informer::testing::LimitedStore;

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

    #[tokio::test]
    async fn each_caller_gets_its_own_changes_and_a_failing_batch_fails_alone() {
        let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
        store.commit(vec![create("taken")]).expect("committed");
        let commits = GroupCommit::spawn(store.clone());
        // On this single-threaded runtime all three are queued before the task takes them.
        let (a, b, c) = tokio::join!(
            commits.commit(vec![create("a1"), create("a2")]),
            commits.commit(vec![create("b1"), create("taken")]),
            commits.commit(vec![create("c1")]),
        );
        assert_eq!(names(&a.expect("a commits")), ["a1", "a2"]);
        assert!(matches!(b, Err(Error::AlreadyExists { .. })), "{b:?}");
        let c = c.expect("c commits");
        assert_eq!(names(&c), ["c1"]);
        assert_eq!(c[0].change_type, ChangeType::Added);
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
        let commits = GroupCommit::spawn(store.clone());
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
        let commits = GroupCommit::spawn(store.clone());
        let batch = |prefix: &str| -> Vec<Op> {
            (0..60).map(|i| create(&format!("{prefix}{i}"))).collect()
        };
        let (a, b, c) = tokio::join!(
            commits.commit(batch("a")),
            commits.commit(batch("b")),
            commits.commit(batch("c"))
        );
        for result in [a, b, c] {
            assert_eq!(result.expect("committed").len(), 60);
        }
        // 60 + 60 share one transaction; the third batch would pass 128, so it goes next.
        assert_eq!(store.commits.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(store.list(Kind::Pod, None).expect("listed").len(), 180);
    }
}
