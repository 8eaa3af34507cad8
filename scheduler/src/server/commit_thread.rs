//! The process's commit thread: every store commit of the writers ([`super::writer`]) and the
//! group commits ([`super::group_commit`]) runs on this one thread, one after another.
//!
//! On sled the store takes one commit at a time anyway (its commit lock), so a thread of its
//! own costs no parallelism; on etcd the writer's and the group commits' round trips, which
//! could overlap on the blocking pool, now take turns (each commits a batch, so what that
//! costs is a batch's latency, not throughput). What the thread bought is memory: a commit
//! allocates the objects the caches then keep (the stored versions of pods and nodes), and
//! mimalloc, the binaries' allocator then, kept a heap per thread, whose pages only their
//! own thread filled again once other threads freed what was in them. Made on one thread
//! instead of any of eight, the kept objects of a 50,000-pod end-to-end run took ~26 MiB
//! less (docs/performance.md, "Memory, eighth round"). Under jemalloc's one arena, the
//! allocator since, it still does: 275 MiB against 304 with the commits on the blocking
//! pool ("Memory, ninth round"), the kept objects packed into slabs of their own rather
//! than among each blocking thread's transient allocations (a reading, not inspected).
//!
//! The thread is process-wide, as the metrics recorder is: it starts on the first commit
//! and serves every server of the process (tests and benchmarks run several); it ends with
//! the process.

use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Mutex, OnceLock};

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

/// Runs `commit` on the commit thread, after the commits queued before it, and returns its
/// result; a panic of `commit` is [`CommitThreadError::Panicked`] and leaves the thread
/// serving the next ones.
pub async fn run<R: Send + 'static>(
    commit: impl FnOnce() -> R + Send + 'static,
) -> Result<R, CommitThreadError> {
    let (reply, result) = oneshot::channel();
    let job: Job = Box::new(move || {
        // The caller may have gone (its task was dropped); the commit still ran.
        let _ = reply.send(std::panic::catch_unwind(AssertUnwindSafe(commit)));
    });
    queue()?
        .send(job)
        .map_err(|_| CommitThreadError::Start("the commit thread has stopped".into()))?;
    match result.await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) | Err(_) => Err(CommitThreadError::Panicked),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_commits_on_one_thread_and_survives_a_panic() {
        let first = run(|| std::thread::current().id()).await.expect("ran");
        let panicked = run(|| -> u32 { panic!("a failing commit") }).await;
        assert!(
            matches!(panicked, Err(CommitThreadError::Panicked)),
            "{panicked:?}"
        );
        let (a, b) = tokio::join!(
            run(|| std::thread::current().id()),
            run(|| std::thread::current().name().map(str::to_string)),
        );
        assert_eq!(a.expect("ran"), first, "the same thread after the panic");
        assert_eq!(b.expect("ran").as_deref(), Some("store commits"));
        assert_ne!(first, std::thread::current().id());
    }
}
