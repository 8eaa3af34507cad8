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
/// runs through this crate): mimalloc instead of glibc's malloc, which (capped at two
/// arenas for memory's sake) took about a fifth of a SchedulingBasic run's samples in
/// `_int_malloc`, `malloc_consolidate` and its lock. The run's CPU time falls by a third;
/// built without transparent huge pages (`no_thp`, Cargo.toml) the peak RSS falls by a
/// quarter too (docs/performance.md, "The allocator and the blocking pool").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`, by its number in `mimalloc.h`'s enum (the crate's
/// bindings have no name for it): how many milliseconds freed pages wait before they are
/// returned to the system.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed pages wait before mimalloc returns them to the system, in milliseconds.
/// The store's writes, the loop and the sessions free pods on other threads than those
/// that allocated them, and with mimalloc's default (a second, in the version we build)
/// those pages stayed resident. SchedulingBasic at 5,000 nodes and 50,000 pods in process,
/// medians of runs interleaved on a quiet machine: 1,000 ms 378 MiB peak and 17,777 pods/s
/// (7 runs), 100 ms 350 MiB and ~18,500 (4 runs), 0 ms 345 MiB and 15,986 (5 runs): purging
/// at once costs the allocator's calls back into the kernel (docs/performance.md, "The
/// allocator and the blocking pool"; measured before `no_thp`).
const PURGE_DELAY_MS: std::os::raw::c_long = 100;

/// Sets mimalloc's purge delay to [`PURGE_DELAY_MS`] unless `MIMALLOC_PURGE_DELAY` is set
/// (the user's value stands then). Call it first thing in `main`.
pub fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mi_option_set only stores a value in mimalloc's option table; it takes no
        // pointers, and the option exists in the mimalloc this crate builds.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// The most threads a Berth process runs blocking calls on (tokio's default is 512). The
/// scheduler's blocking calls are store reads and commits of microseconds to milliseconds
/// (the writers' and the group commits' commits run on a thread of their own,
/// `berth_scheduler::server::commit_thread`); an agent's include the removal of a stopped
/// pod's cgroups, which waits up to two seconds for killed processes to leave (more than 8
/// pods stopped at once wait their turn). With 5,000
/// agent sessions reporting at once the default grew the scheduler's pool to ~200 threads
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
    tune_allocator();
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
    tune_allocator();
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
    use super::*;

    /// The option's number is the purge delay's: its default in the mimalloc we build is
    /// 1,000 ms, and the options beside it default to other values (1 and 0).
    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            eprintln!("skipped: MIMALLOC_PURGE_DELAY is set");
            return;
        }
        // SAFETY: mi_option_get only reads mimalloc's option table.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert!(
            delay == 1000 || delay == PURGE_DELAY_MS,
            "purge delay read as {delay}"
        );
        tune_allocator();
        // SAFETY: as above.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, PURGE_DELAY_MS);
    }
}
