//! The process's commit thread: the store commits of the writers ([`super::writer`]) and the
//! group commits ([`super::group_commit`]) to a store that commits in this process (sled,
//! [`ObjectStore::commits_in_process`]) run on this one thread, one after another; to a
//! store whose commits are round trips (etcd) they run on the blocking pool ([`commit_to`]).
//!
//! On sled the store takes one commit at a time anyway (its commit lock), so a thread of its
//! own costs no parallelism. What the thread buys is memory: a commit allocates the objects
//! the caches then keep (the stored versions of pods and nodes). With mimalloc, the
//! binaries' allocator then, which kept a heap per thread, made on one thread instead of
//! any of eight the kept objects of a 50,000-pod end-to-end run took ~26 MiB less
//! (docs/performance.md, "Memory, eighth round"); under jemalloc's one arena, the allocator
//! since, 275 MiB against 304 ("Memory, ninth round"), the kept objects packed into slabs
//! of their own rather than among each blocking thread's transient allocations (a reading,
//! not inspected). On etcd the round trips of the writer and the group commits took turns
//! on the one thread, and the API load run served a half to a third of the calls it
//! served with them overlapping on the blocking pool, where etcd batches them.
//!
//! The thread is process-wide, as the metrics recorder is: it starts on the first commit
//! and serves every server of the process (tests and benchmarks run several); it ends with
//! the process.

use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use berth_store::ObjectStore;
use tokio::sync::oneshot;

/// A commit to run, with where its result goes.
type Job = Box<dyn FnOnce() + Send>;

/// Why a job did not return.
#[derive(Debug, thiserror::Error)]
pub enum CommitThreadError {
    /// The thread could not be started.
    #[error("starting the commit thread: {0}")]
    Start(String),
    /// The job panicked (its caller sees its writes as failed).
    #[error("the commit panicked")]
    Panicked,
    /// The blocking pool dropped the job unrun: the runtime is shutting down.
    #[error("the commit did not run: the runtime is shutting down")]
    Cancelled,
}

/// The queue of the process's commit thread, started on first use.
fn queue() -> Result<&'static mpsc::Sender<Job>, CommitThreadError> {
    static QUEUE: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    static START: Mutex<()> = Mutex::new(());
    if let Some(queue) = QUEUE.get() {
        return Ok(queue);
    }
    let _one_at_a_time = START.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(queue) = QUEUE.get() {
        return Ok(queue);
    }
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("store commits".into())
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                job();
            }
        })
        .map_err(|e| CommitThreadError::Start(e.to_string()))?;
    Ok(QUEUE.get_or_init(|| tx))
}

/// Starts `job`, a commit to `store`, where such commits belong, and returns without
/// waiting for it: on the commit thread, after the jobs queued before it, when the store
/// commits in this process (sled); on `runtime`'s blocking pool when its commits are round
/// trips (etcd: on one thread the writer's and the group commits' round trips took turns,
/// and the API load run on etcd served a half to a third of the calls). A job that panics
/// on the commit thread leaves it serving the next ones. Callable from any thread, the
/// commit thread included.
pub fn submit(
    store: Arc<dyn ObjectStore>,
    runtime: &tokio::runtime::Handle,
    job: impl FnOnce(&dyn ObjectStore) + Send + 'static,
) -> Result<(), CommitThreadError> {
    if store.commits_in_process() {
        let job: Job = Box::new(move || {
            // A panic is the job's to report (see `commit_to`); the thread goes on.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(store.as_ref())));
        });
        return queue()?
            .send(job)
            .map_err(|_| CommitThreadError::Start("the commit thread has stopped".into()));
    }
    // Dropped unrun should the runtime be shutting down: the job's own drop says so.
    drop(runtime.spawn_blocking(move || job(store.as_ref())));
    Ok(())
}

/// Runs `commit`, a commit to `store`, where [`submit`] puts it, and returns its result. A
/// panic of `commit` is [`CommitThreadError::Panicked`].
pub async fn commit_to<R: Send + 'static>(
    store: Arc<dyn ObjectStore>,
    commit: impl FnOnce(&dyn ObjectStore) -> R + Send + 'static,
) -> Result<R, CommitThreadError> {
    let (reply, result) = oneshot::channel();
    submit(store, &tokio::runtime::Handle::current(), move |store| {
        // The caller may have gone (its task was dropped); the commit still ran.
        let _ = reply.send(std::panic::catch_unwind(AssertUnwindSafe(|| commit(store))));
    })?;
    match result.await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) => Err(CommitThreadError::Panicked),
        Err(_) => Err(CommitThreadError::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use berth_proto::model::{Kind, Object, ObjectKey};
    use berth_store::{Change, Op};
    use tokio::sync::broadcast;

    use super::*;

    /// A store that holds nothing and says where its commits run.
    struct Empty {
        in_process: bool,
    }

    impl ObjectStore for Empty {
        fn get(&self, _: &ObjectKey) -> berth_store::Result<Option<Object>> {
            Ok(None)
        }
        fn list(&self, _: Kind, _: Option<&str>) -> berth_store::Result<Vec<Object>> {
            Ok(Vec::new())
        }
        fn commit(&self, _: Vec<Op>) -> berth_store::Result<Vec<Change>> {
            Ok(Vec::new())
        }
        fn revision(&self) -> u64 {
            0
        }
        fn commits_in_process(&self) -> bool {
            self.in_process
        }
        fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
            broadcast::channel(1).1
        }
    }

    #[tokio::test]
    async fn commits_in_process_run_on_the_thread_and_round_trips_on_the_blocking_pool() {
        for in_process in [true, false] {
            let store: Arc<dyn ObjectStore> = Arc::new(Empty { in_process });
            let thread = commit_to(store.clone(), |s| {
                assert_eq!(s.revision(), 0, "the store given is the store");
                std::thread::current().name().map(str::to_string)
            })
            .await
            .expect("ran");
            assert_eq!(
                thread.as_deref() == Some("store commits"),
                in_process,
                "in process: {in_process}, ran on {thread:?}"
            );
            let panicked = commit_to(store, |_| -> u32 { panic!("a failing commit") }).await;
            assert!(
                matches!(panicked, Err(CommitThreadError::Panicked)),
                "in process: {in_process}: {panicked:?}"
            );
        }
    }

    #[tokio::test]
    async fn runs_commits_on_one_thread_and_survives_a_panic() {
        let store: Arc<dyn ObjectStore> = Arc::new(Empty { in_process: true });
        let first = commit_to(store.clone(), |_| std::thread::current().id())
            .await
            .expect("ran");
        let panicked = commit_to(store.clone(), |_| -> u32 { panic!("a failing commit") }).await;
        assert!(
            matches!(panicked, Err(CommitThreadError::Panicked)),
            "{panicked:?}"
        );
        let (a, b) = tokio::join!(
            commit_to(store.clone(), |_| std::thread::current().id()),
            commit_to(store, |_| std::thread::current().name().map(str::to_string)),
        );
        assert_eq!(a.expect("ran"), first, "the same thread after the panic");
        assert_eq!(b.expect("ran").as_deref(), Some("store commits"));
        assert_ne!(first, std::thread::current().id());
    }
}
