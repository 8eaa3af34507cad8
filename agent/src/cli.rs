//! The agent's command line: [`Args`], shared by the `berth-agent` binary and the CLI's
//! hidden `berth agent` subcommand (whose body, with logging and signals, is in the `berth`
//! CLI crate).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use berth_proto::model::Taint;
use berth_proto::Quantity;
use clap::{Parser, ValueEnum};
use tonic::transport::Certificate;

use berth_proto::taints::parse_taint;

use crate::node::parse_label;
use crate::runtime::cgroup::CgroupMode;

/// Flags of the node agent.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "berth-agent",
    version,
    about = "Berth's node agent: registers a node and runs the pods bound to it"
)]
pub struct Args {
    /// Scheduler address: `http://host:port`, `https://host:port`, or `host:port` (https
    /// when --ca is given); several replicas' addresses separated by commas, to move to the
    /// next when one goes away.
    #[arg(long, env = "BERTH_SERVER", default_value = "http://127.0.0.1:7070")]
    pub server: String,

    /// Bearer token sent with every call: the node token from the scheduler's token file.
    #[arg(long, env = "BERTH_TOKEN", hide_env_values = true, value_parser = parse_token)]
    pub token: Option<String>,

    /// PEM file of the CA that signed the scheduler's TLS certificate.
    #[arg(long, env = "BERTH_CA", value_parser = read_ca)]
    pub ca: Option<Certificate>,

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

    /// Folder of the process runtime's pod folders and logs (`<root>/pods/<uid>/`); its
    /// filesystem is the node filesystem of `nodefs.available`. Default: a folder named
    /// after the node under the temporary folder.
    #[arg(long)]
    pub root_dir: Option<PathBuf>,

    /// First delay before restarting a container that exited (kubelet: 10s); it doubles at
    /// each restart, up to 5 minutes.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub restart_backoff: Duration,

    /// Which cgroups hold the process runtime's pods to their limits: `auto` uses, for
    /// memory and for cpu, cgroup v2 where it has the controller, else the controller's
    /// cgroup v1 hierarchy; `v2` and `v1` insist on one version; `none` uses no cgroups
    /// (the agent kills a container over its memory limit itself; CPU is not limited).
    #[arg(long, value_enum, default_value_t = CgroupMode::Auto)]
    pub cgroups: CgroupMode,

    /// Number of simulated nodes this process hosts (with `--runtime sim`), each with its
    /// own registration and session, named `<prefix>1` to `<prefix>N`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub count: u32,

    /// Prefix of the node names with `--count` (`sim-` gives sim-1, sim-2, ...).
    #[arg(long, default_value = "sim-")]
    pub node_name_prefix: String,

    /// Filesystem size of a simulated node, for `nodefs.available`.
    #[arg(long, default_value = "100Gi")]
    pub sim_nodefs_capacity: Quantity,

    /// Time between usage samples and eviction decisions.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub housekeeping_interval: Duration,

    /// Hard eviction thresholds, `signal<value,...` (signals: memory.available,
    /// nodefs.available, pid.available; values: quantities or percentages). Empty: none.
    #[arg(long, default_value = crate::eviction::DEFAULT_EVICTION_HARD)]
    pub eviction_hard: String,

    /// Soft eviction thresholds, as --eviction-hard; each needs a grace period.
    #[arg(long, default_value = "")]
    pub eviction_soft: String,

    /// Grace periods of the soft thresholds, `signal=duration,...` (`memory.available=30s`).
    #[arg(long, default_value = "")]
    pub eviction_soft_grace_period: String,

    /// Minimum reclaims, `signal=quantity|percentage,...`: once met, a threshold holds until
    /// the signal is this far above it.
    #[arg(long, default_value = "")]
    pub eviction_minimum_reclaim: String,

    /// How long a pressure condition stays True after its signal recovered.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub eviction_pressure_transition_period: Duration,

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

    /// A file of ResourceSlice manifests (YAML or JSON, without `nodeName`): the node's
    /// devices, published as node-local ResourceSlices at registration and again whenever
    /// the file changes (it is read every 2 s; an invalid edit is refused and changes nothing).
    #[arg(long, value_name = "FILE")]
    pub devices: Option<PathBuf>,

    /// Simulated GPUs, `N[:MODEL[:MEMORY]]` (`2`, `4:a100:80Gi`): a ResourceSlice of driver
    /// gpu.berth.dev with N GPUs that claims may share by `milli` (thousandths).
    #[arg(long, value_name = "N[:MODEL[:MEMORY]]", value_parser = crate::devices::parse_gpus)]
    pub gpus: Option<berth_core::lab::objects::Gpus>,

    /// Time between heartbeats (`10s`, `500ms`).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub heartbeat_interval: Duration,

    /// Log format of the `berth-agent` binary.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// A token must fit in an HTTP header as `Bearer TOKEN`.
fn parse_token(token: &str) -> Result<String, String> {
    let token = token.trim();
    if token.is_empty() {
        return Err("empty token".into());
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("a token may hold only visible ASCII characters".into());
    }
    Ok(token.to_string())
}

/// Reads a CA certificate file, which must hold a PEM certificate.
fn read_ca(path: &str) -> Result<Certificate, String> {
    let pem = std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?;
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(format!("{path} holds no PEM certificate"));
    }
    Ok(Certificate::from_pem(pem))
}

impl Args {
    /// The eviction flags, to be checked together.
    pub fn eviction_flags(&self) -> crate::eviction::EvictionFlags {
        crate::eviction::EvictionFlags {
            hard: self.eviction_hard.clone(),
            soft: self.eviction_soft.clone(),
            soft_grace_period: self.eviction_soft_grace_period.clone(),
            minimum_reclaim: self.eviction_minimum_reclaim.clone(),
        }
    }
}

/// Which runtime runs the pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RuntimeKind {
    /// Simulated pods: they run, doing nothing, until stopped; their usage comes from
    /// annotations (see [`crate::runtime::sim`]).
    Sim,
    /// Each container as a real child process (see [`crate::runtime::process`]).
    Process,
}

/// How the binary writes its logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}
