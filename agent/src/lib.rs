//! Berth's node agent: registers its node with the scheduler, keeps one stream open to it,
//! and runs the pods bound to the node through a runtime.
//!
//! # Layout
//!
//! - [`cli`]: the flags ([`Args`]), shared with the CLI's hidden `berth agent` subcommand, and
//!   the `berth-agent` binary's `main` (logging, tokio runtime, signals).
//! - [`node`]: the Node to register, from flags and the machine (hostname, CPUs,
//!   `/proc/meminfo`), and the kubelet-style parsers for `--labels` and taints.
//! - [`client`]: the gRPC edge, the only module that touches `pb` types: registration, the
//!   session stream (Hello, heartbeats, pod status; StartPod, StopPod) and reconnecting with
//!   back-off.
//! - [`runtime`]: the [`runtime::Runtime`] trait and its implementations (`sim`).
//! - [`error`]: the crate's [`Error`].
//!
//! [`run`] ties them together; it returns when its cancellation token fires.
#![warn(missing_docs)]

pub mod cli;
pub mod client;
pub mod error;
pub mod node;
pub mod runtime;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::info;

pub use cli::Args;
pub use error::{Error, Result};

use cli::RuntimeKind;
use node::NodeConfig;
use runtime::{Runtime, SimRuntime};

/// Runs the agent until `shutdown` is cancelled: resolves the node from `args` and the
/// machine, then registers and keeps a session with the scheduler, reconnecting as needed.
///
/// Fails only on bad configuration (an invalid server address, an unreadable machine);
/// trouble reaching the scheduler is retried, never returned.
pub async fn run(args: Args, shutdown: CancellationToken) -> Result<()> {
    let endpoint = client::endpoint(&args.server)?;
    let node = NodeConfig::from_args(&args, endpoint.uri()).await?;
    let runtime: Arc<dyn Runtime> = match args.runtime {
        RuntimeKind::Sim => Arc::new(SimRuntime::new(node.host_ip())),
    };
    info!(
        node = %node.name,
        server = %args.server,
        runtime = runtime.name(),
        cpu = %node.cpu,
        memory = %node.memory,
        pods = node.pods,
        "starting agent"
    );
    let agent = client::Agent::new(
        node,
        args.server.clone(),
        endpoint,
        runtime,
        args.heartbeat_interval,
    );
    agent.run(&shutdown).await
}
