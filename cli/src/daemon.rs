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

/// Arenas glibc's malloc may create (its default is 8 per core, one per allocating thread
/// up to that). Objects decoded on the store's writer thread and dropped on the scheduling
/// loop's or a tokio worker's leave partly empty arenas behind that no other thread reuses:
/// two arenas cut the peak RSS of SchedulingBasic at 5,000 nodes and 50,000 pods by ~120
/// MB (docs/performance.md, Memory).
const MALLOC_ARENAS: libc::c_int = 2;

/// Caps glibc's malloc at [`MALLOC_ARENAS`] arenas unless `MALLOC_ARENA_MAX` is set (the
/// user's value stands then). Call it first thing in `main`, before other threads start;
/// nothing on other C libraries.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets one of malloc's tunables; it takes no pointers. It
        // fails only for a parameter glibc does not know, and M_ARENA_MAX is one it does.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) };
    }
}

/// `berth-scheduler`'s body, with the command line given (the first item is the program
/// name).
pub fn scheduler_main_from<I, T>(command_line: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    limit_malloc_arenas();
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
    limit_malloc_arenas();
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
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
