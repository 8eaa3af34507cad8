//! Berth's node agent: registers its node with the scheduler, keeps one stream open to it,
//! runs the pods bound to the node through a runtime, and defends the node against resource
//! pressure as kubelet does. One process may host many simulated nodes (`--count`).
//!
//! # Layout
//!
//! - [`cli`]: the flags ([`Args`]), shared by the `berth-agent` binary and the CLI's hidden
//!   `berth agent` subcommand; their body (logging, tokio runtime, signals) is in the CLI
//!   crate, so this library only emits logs and returns its [`Error`].
//! - [`node`]: the Node to register, from flags and the machine (hostname, CPUs,
//!   `/proc/meminfo`), its conditions, and the kubelet-style parsers for `--labels` and taints.
//! - [`client`]: the gRPC edge: registration, the session stream (Hello, heartbeats, pod
//!   status, usage, events, logs; StartPod, StopPod) and reconnecting with back-off.
//! - [`runtime`]: the [`runtime::Runtime`] trait and its implementations (`sim`, `process`).
//! - [`admission`]: node-side admission (OutOfcpu, OutOfmemory, OutOfpods).
//! - [`usage`]: usage samples of pods and of the node.
//! - [`eviction`]: signals, thresholds and the eviction manager.
//! - [`housekeeping`]: the node's shared state and the loop that samples and evicts.
//! - [`logs`]: sending container logs to the scheduler for `berth logs`.
//! - [`error`]: the crate's [`Error`].
//!
//! [`run`] ties them together; it returns when its cancellation token fires.
#![warn(missing_docs)]

pub mod admission;
pub mod cli;
pub mod client;
pub mod devices;
pub mod error;
pub mod eviction;
pub mod housekeeping;
pub mod logs;
pub mod node;
pub mod runtime;
pub mod usage;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, Instrument};

pub use cli::Args;
pub use error::{Error, Result};

use admission::Allocatable;
use cli::RuntimeKind;
use client::{Connector, NODES_PER_CONNECTION};
use eviction::EvictionManager;
use housekeeping::{Housekeeping, NodeState};
use node::NodeConfig;
use runtime::{ProcessConfig, ProcessRuntime, Runtime, SimRuntime};
use usage::NodeSampler;

/// Longest grace period pods get when the agent shuts down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The names of the nodes this process hosts: `--node-name` (or the hostname) alone, or,
/// with `--count N` above 1, `<prefix>1` to `<prefix>N`.
pub fn node_names(args: &Args) -> Vec<Option<String>> {
    if args.count <= 1 {
        return vec![args.node_name.clone()];
    }
    (1..=args.count)
        .map(|i| Some(format!("{}{i}", args.node_name_prefix)))
        .collect()
}

/// Runs the agent until `shutdown` is cancelled: resolves the nodes from `args` and the
/// machine, then, for each, registers and keeps a session with the scheduler (reconnecting
/// as needed) and runs its housekeeping loop.
///
/// Fails only on bad configuration (an invalid server address or eviction flag, an
/// unreadable machine); trouble reaching the scheduler is retried, never returned.
pub async fn run(args: Args, shutdown: CancellationToken) -> Result<()> {
    let thresholds = eviction::thresholds_from_flags(&args.eviction_flags())?;
    if args.count > 1 && args.runtime != RuntimeKind::Sim {
        return Err(Error::CountNeedsSim { count: args.count });
    }
    let endpoints = client::secure_endpoints(&args.server, args.ca.as_ref())?;
    let names = node_names(&args);
    let mut first = args.clone();
    first.node_name = names[0].clone();
    let base = NodeConfig::from_args(&first, endpoints[0].uri()).await?;
    // Per group of nodes, a lazily connected channel to each replica.
    let shared: Vec<Vec<tonic::transport::Channel>> = if names.len() > 1 {
        (0..names.len().div_ceil(NODES_PER_CONNECTION))
            .map(|_| endpoints.iter().map(|e| e.connect_lazy()).collect())
            .collect()
    } else {
        Vec::new()
    };
    info!(
        nodes = names.len(),
        first = %base.name,
        server = %args.server,
        runtime = ?args.runtime,
        cpu = %base.cpu,
        memory = %base.memory,
        pods = base.pods,
        thresholds = thresholds.len(),
        "starting agent"
    );
    let mut tasks = tokio::task::JoinSet::new();
    // The devices file, read again when it changes; every node of the process publishes it.
    let (devices_tx, devices) = tokio::sync::watch::channel(devices::Published {
        devices: base.devices.clone(),
        refused: None,
    });
    if let Some(path) = args.devices.clone() {
        tasks.spawn(
            devices::watch_file(
                path,
                args.gpus.clone(),
                devices_tx,
                devices::POLL_INTERVAL,
                shutdown.clone(),
            )
            .in_current_span(),
        );
    }
    for (i, name) in names.into_iter().enumerate() {
        let node = NodeConfig {
            name: name.unwrap_or_else(|| base.name.clone()),
            ..base.clone()
        };
        let allocatable = Allocatable {
            cpu_millis: node.cpu.millis(),
            memory_bytes: node.memory.value(),
            pods: i64::from(node.pods),
        };
        let (state, reports, statuses) = NodeState::new(node.name.clone(), allocatable);
        let (runtime, sampler): (Arc<dyn Runtime>, NodeSampler) = match args.runtime {
            RuntimeKind::Sim => (
                Arc::new(SimRuntime::new(node.host_ip()).with_updates(statuses)),
                NodeSampler::Sim {
                    memory_capacity: node.memory.value(),
                    nodefs_capacity: args.sim_nodefs_capacity.value(),
                },
            ),
            RuntimeKind::Process => {
                let root_dir = args
                    .root_dir
                    .clone()
                    .unwrap_or_else(|| std::env::temp_dir().join("berth-agent").join(&node.name));
                let runtime = ProcessRuntime::try_new(
                    ProcessConfig {
                        root_dir: root_dir.clone(),
                        restart_backoff: args.restart_backoff,
                        host_ip: node.host_ip(),
                        node_name: node.name.clone(),
                        cgroups: args.cgroups,
                    },
                    statuses,
                )?;
                info!(node = %node.name, root_dir = %root_dir.display(), "process runtime ready");
                (Arc::new(runtime), NodeSampler::machine(root_dir))
            }
        };
        debug!(node = %node.name, "starting node");
        let housekeeping = Housekeeping::new(
            state.clone(),
            runtime.clone(),
            sampler,
            EvictionManager::new(thresholds.clone(), args.eviction_pressure_transition_period),
            args.housekeeping_interval,
        );
        tasks.spawn(housekeeping.run(shutdown.clone()).in_current_span());
        let connector = match shared.get(i / NODES_PER_CONNECTION) {
            Some(channels) => Connector::Shared(channels.clone()),
            None => Connector::Endpoint(endpoints.clone()),
        };
        let agent = client::Agent::new(
            node,
            args.server.clone(),
            connector,
            runtime.clone(),
            args.heartbeat_interval,
            state,
            reports,
        )
        .with_token(args.token.clone())
        .with_devices(devices.clone());
        let shutdown = shutdown.clone();
        tasks.spawn(
            async move {
                let result = agent.run(&shutdown).await;
                stop_all(runtime).await;
                if let Err(e) = result {
                    tracing::error!(error = %error::error_chain(&e), "agent failed");
                }
            }
            .in_current_span(),
        );
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Stops every pod of a runtime when the agent shuts down: the agent cannot take over a
/// process it did not start, so none is left behind to run unsupervised.
async fn stop_all(runtime: Arc<dyn Runtime>) {
    let running = runtime.running();
    if running.is_empty() || runtime.name() == "sim" {
        return;
    }
    info!(pods = running.len(), "stopping pods before exiting");
    let mut stops = tokio::task::JoinSet::new();
    for uid in running {
        let runtime = runtime.clone();
        stops.spawn(async move { runtime.stop(&uid, SHUTDOWN_GRACE).await });
    }
    while let Some(result) = stops.join_next().await {
        match result {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %error::error_chain(&e), "stopping a pod failed")
            }
            Err(e) => tracing::warn!(error = %e, "the task stopping a pod failed"),
        }
    }
}
