//! The bodies of the two server processes, `berth-scheduler` and `berth-agent`, which also run
//! as `berth scheduler ...` and `berth agent ...` (how `berth dev` starts its cluster): parse
//! the flags, install logging, run the library's entry point until SIGINT or SIGTERM. Logging
//! and `anyhow` live here, in the binaries' crate; the libraries only emit and return their
//! own error types.

use std::ffi::OsString;

use anyhow::Context;
use berth_agent::cli::LogFormat;
use clap::Parser;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// The allocator of every Berth binary (`berth`, `berth-scheduler`, `berth-agent`: each
/// runs through this crate): jemalloc, with the options of [`MALLOC_CONF`]. glibc's malloc
/// (capped at two arenas for memory's sake) took about a fifth of a SchedulingBasic run's
/// samples in `_int_malloc`, `malloc_consolidate` and its lock; mimalloc, the allocator
/// before this one, was about as fast as jemalloc but the end-to-end scheduler held a sixth
/// more memory with it: a heap per thread, each keeping pages that other threads had
/// emptied (docs/performance.md, "The allocator and the blocking pool" and "Memory, ninth
/// round").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, which it reads once as it starts: the C string `malloc_conf` (named
/// `_rjem_malloc_conf` in the prefixed jemalloc the crate builds). `_RJEM_MALLOC_CONF` in the
/// environment overrides them option by option.
///
/// - `narenas:1`: one arena for every thread, instead of four per core with the threads
///   spread over them. The scheduler's caches are filled on some threads and emptied on
///   others (the commit thread, the loop, the sessions, the blocking pool); with several
///   arenas, pages emptied in one stayed resident while another grew. A thread's cache
///   (below) takes most calls without the arena's lock, and on two cores the lock was no
///   slower.
/// - `tcache_max:4096`: a thread caches freed objects up to 4 KiB, not 32 KiB; what larger
///   objects a thread frees goes back to the arena for every thread to reuse.
///
/// The end-to-end scheduler at 5,000 nodes and 50,000 pods peaked at ~287 MB with these,
/// ~295 MB with one arena alone, ~309 MB with jemalloc's defaults and ~333 MB with
/// mimalloc (docs/performance.md, "Memory, ninth round").
#[unsafe(export_name = "_rjem_malloc_conf")]
#[used]
static MALLOC_CONF: &[u8; 26] = b"narenas:1,tcache_max:4096\0";

/// The most threads a Berth process runs blocking calls on (tokio's default is 512). The
/// scheduler's blocking calls are store reads and commits of microseconds to milliseconds
/// (on sled the writers' and the group commits' commits run on a thread of their own,
/// `berth_scheduler::server::commit_thread`; on etcd, here); an agent's include the removal
/// of a stopped pod's cgroups, which waits up to two seconds for killed processes to leave
/// (more than 8 pods stopped at once wait their turn). With 5,000 agent sessions reporting
/// at once the default grew the scheduler's pool to ~200 threads
/// on two cores, each holding its own allocator pages, and no faster: calls beyond these
/// wait in the pool's queue. Each thread's allocator heap keeps pages of what it allocated
/// and other threads freed, so fewer threads hold less: the end-to-end scheduler at 5,000
/// nodes and 50,000 pods peaked at a median 455.7 MiB with 32 and 365.1 MiB with 8, the
/// API load run no slower (docs/performance.md, "Memory, seventh round"). The blocking calls
/// (store reads and commits, joins of threads that end at shutdown, at most three at once)
/// wait only for calls that already run (a commit for its turn to send its changes) or for
/// other threads, never for a queued call, so the cap cannot deadlock them.
const MAX_BLOCKING_THREADS: usize = 8;

/// The multi-threaded tokio runtime every Berth process runs on.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
}

/// `berth-scheduler`'s body, with the command line given (the first item is the program
/// name).
pub fn scheduler_main_from<I, T>(command_line: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = berth_scheduler::server::cli::Command::parse_from(command_line).args;
    init_tracing("info", LogFormat::Text)?;
    serve(|shutdown| async move {
        berth_scheduler::server::run(args, shutdown, None)
            .await
            .context("running the scheduler")
    })
}

/// `berth-agent`'s body, with the command line given (the first item is the program name).
pub fn agent_main_from<I, T>(command_line: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = berth_agent::cli::Args::parse_from(command_line);
    init_tracing("info", args.log_format)?;
    serve(|shutdown| async move {
        berth_agent::run(args, shutdown)
            .await
            .context("running the agent")
    })
}

/// Runs `body` on a multi-threaded runtime with a shutdown token that the first SIGINT or
/// SIGTERM cancels.
fn serve<F, Fut>(body: F) -> anyhow::Result<()>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let runtime = runtime().context("building the tokio runtime")?;
    let result = runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone()));
        body(shutdown).await
    });
    // A blocking call still waiting on an unreachable store (etcd gone) must not keep the
    // process from exiting once the body has shut down.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    result
}

/// How long the runtime's blocking calls may still run once the body has returned.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Installs the process's tracing subscriber: to stderr, filtered by `RUST_LOG` (else
/// `default_level`), as text or JSON lines. A second call (tests running several commands
/// in one process) keeps the first subscriber.
pub fn init_tracing(default_level: &str, format: LogFormat) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    if let Err(e) = installed {
        // Only a subscriber installed earlier in this process can be in the way.
        tracing::debug!(error = %e, "a log subscriber is installed already");
    }
    Ok(())
}

/// Cancels `shutdown` on the first SIGINT or SIGTERM.
async fn cancel_on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => info!("SIGINT received; shutting down"),
                    _ = term.recv() => info!("SIGTERM received; shutting down"),
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops this process");
                if ctrl_c.await.is_ok() {
                    info!("SIGINT received; shutting down");
                }
            }
        }
    }
    #[cfg(not(unix))]
    if ctrl_c.await.is_ok() {
        info!("SIGINT received; shutting down");
    }
    shutdown.cancel();
}

#[cfg(test)]
mod tests {
    /// jemalloc runs with [`MALLOC_CONF`]'s options (this test's binary links the same
    /// allocator and string as the servers'), unless the environment overrides them.
    #[test]
    fn jemalloc_reads_the_exported_options() {
        if std::env::var_os("_RJEM_MALLOC_CONF").is_some() {
            eprintln!("skipped: _RJEM_MALLOC_CONF is set and overrides the options");
            return;
        }
        let narenas: u32 = read_option(c"opt.narenas");
        assert_eq!(narenas, 1, "opt.narenas");
        let tcache_max: usize = read_option(c"opt.tcache_max");
        assert_eq!(tcache_max, 4096, "opt.tcache_max");
    }

    /// One of jemalloc's options by its `mallctl` name, as a `T` of the option's own size.
    fn read_option<T: Default>(name: &std::ffi::CStr) -> T {
        let mut value = T::default();
        let mut len = std::mem::size_of::<T>();
        // SAFETY: mallctl writes at most `len` bytes to `value`, a `T` of that size, and
        // reads no new value (null, 0); the name is a NUL-terminated string.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                (&mut value as *mut T).cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(rc, 0, "mallctl({name:?}) failed");
        assert_eq!(len, std::mem::size_of::<T>(), "{name:?}'s size");
        value
    }
}
