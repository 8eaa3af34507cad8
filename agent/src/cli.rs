//! The agent's command line: [`Args`] (shared by the `berth-agent` binary and the CLI's
//! hidden `berth agent` subcommand) and [`main`], the binary's body.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::Context;
use berth_proto::model::Taint;
use berth_proto::Quantity;
use clap::{Parser, ValueEnum};
use tokio_util::sync::CancellationToken;
use tracing::info;
use tracing_subscriber::EnvFilter;

use crate::node::{parse_label, parse_taint};

/// Flags of the node agent.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "berth-agent",
    version,
    about = "Berth's node agent: registers a node and runs the pods bound to it"
)]
pub struct Args {
    /// Scheduler address: `http://host:port`, or `host:port`.
    #[arg(long, env = "BERTH_SERVER", default_value = "http://127.0.0.1:7070")]
    pub server: String,

    /// Name of the node; the machine's hostname, lowercased, when left out.
    #[arg(long)]
    pub node_name: Option<String>,

    /// IP address of the node (kubelet's `--node-ip`); detected from the route to the
    /// scheduler when left out.
    #[arg(long)]
    pub node_ip: Option<IpAddr>,

    /// How pods run.
    #[arg(long, value_enum, default_value_t = RuntimeKind::Sim)]
    pub runtime: RuntimeKind,

    /// CPU capacity as a quantity (`4`, `3500m`); the machine's CPU count when left out.
    #[arg(long)]
    pub cpu: Option<Quantity>,

    /// Memory capacity as a quantity (`8Gi`); MemTotal of /proc/meminfo when left out.
    #[arg(long)]
    pub memory: Option<Quantity>,

    /// Maximum number of pods on the node.
    #[arg(long, visible_alias = "max-pods", default_value_t = 110)]
    pub pods: u32,

    /// Node labels, `key=value,...`; they may override the well-known labels.
    #[arg(long, value_delimiter = ',', value_parser = parse_label)]
    pub labels: Vec<(String, String)>,

    /// Taints to register the node with, `key=value:Effect,...` or `key:Effect` (kubelet's
    /// syntax).
    #[arg(long, value_delimiter = ',', value_parser = parse_taint)]
    pub register_with_taints: Vec<Taint>,

    /// Time between heartbeats (`10s`, `500ms`).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub heartbeat_interval: Duration,

    /// Log format of the `berth-agent` binary.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Which runtime runs the pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RuntimeKind {
    /// Simulated pods: they run, doing nothing, until stopped.
    Sim,
}

/// How the binary writes its logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the global tracing subscriber: `RUST_LOG` filtering (default `info`), in the
/// given format. For binaries only; libraries just emit.
pub fn init_tracing(format: LogFormat) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    installed
        .map_err(|e| anyhow::anyhow!(e))
        .context("installing the log subscriber")
}

/// The `berth-agent` binary: parses the flags, installs logging, and runs the agent until
/// SIGINT or SIGTERM.
pub fn main() -> anyhow::Result<()> {
    main_from(std::env::args_os())
}

/// As [`main`], with the command line given (the first item is the program name); `berth
/// agent ...` runs the agent this way.
pub fn main_from<I, T>(command_line: I) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = Args::parse_from(command_line);
    init_tracing(args.log_format)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone()));
        crate::run(args, shutdown)
            .await
            .context("running the agent")
    })
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
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the agent");
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
