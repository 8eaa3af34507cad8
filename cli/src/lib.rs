//! Berth's command-line client, `berth`: kubectl's verbs and habits over Berth's API, plus
//! `berth dev` (a local cluster) and `berth sim` (offline scheduling).
//!
//! # Layout
//!
//! - [`Cli`] and [`Command`]: the clap definition; [`main`] runs it and maps errors to one
//!   `error: ...` line each on stderr and exit code 1.
//! - [`cmd`]: one module per verb (`apply`, `get`, `describe`, `delete`, `label`, `taint`,
//!   `cordon`/`uncordon`, `scale`, `evict`, `drain`), mini-redis style, sharing a [`cmd::Context`].
//! - [`manifest`]: reading and checking manifests (files, folders, stdin).
//! - [`config`] and [`client`]: finding the scheduler and talking to it.
//! - [`output`]: tables, ages and status columns as kubectl prints them.
//! - [`dev`]: `berth dev`.
//! - [`daemon`]: the scheduler and agent processes (`berth-scheduler`, `berth-agent`,
//!   `berth scheduler`, `berth agent`): flags, logging, signals.
//! - [`bench`]: `berth bench`, kube's scheduler_perf workloads measured.
//! - [`scrape`]: reading a scheduler's `/metrics`.
//! - [`sim`]: `berth sim`, the scheduler run offline over manifests.
#![warn(missing_docs)]

pub mod bench;
pub mod client;
pub mod cmd;
pub mod config;
pub mod daemon;
pub mod dev;
pub mod etcd;
pub mod jsonpath;
pub mod lab;
pub mod manifest;
pub mod output;
pub mod progress;
pub mod scrape;
pub mod sim;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// `berth`: the command line.
#[derive(Parser, Debug)]
#[command(
    name = "berth",
    version,
    about = "Berth: a Kubernetes-style scheduler. kubectl's verbs for its pods, nodes and priority classes.",
    propagate_version = true
)]
pub struct Cli {
    /// Flags every verb accepts.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The verb.
    #[command(subcommand)]
    pub command: Command,
}

/// Flags accepted before or after any verb.
#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Address of the Berth scheduler (`http://host:port` or `host:port`), or several
    /// replicas' addresses separated by commas: the CLI uses the first that answers and
    /// moves to the next when one goes away. Default: the
    /// `server` in $BERTH_CONFIG or ~/.berth/config (written by `berth dev`), else
    /// http://127.0.0.1:7070.
    #[arg(long, global = true, env = config::SERVER_ENV, value_name = "ADDRESS")]
    pub server: Option<String>,
    /// Bearer token for the scheduler. Default: the `token` in the client config file.
    #[arg(long, global = true, env = config::TOKEN_ENV, hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// CA certificate (PEM) the scheduler's TLS certificate must chain to; a bare address
    /// then means https. Default: the `ca` in the client config file.
    #[arg(long, global = true, env = config::CA_ENV, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
    /// Namespace of namespaced objects (default: `default`).
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// The verbs.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create or update objects from manifests (files, folders, `-` for stdin).
    Apply(cmd::apply::ApplyArgs),
    /// List objects, or show some by name, as a table, YAML or JSON.
    Get(cmd::get::GetArgs),
    /// Show details of pods or nodes, with their events.
    Describe(cmd::describe::DescribeArgs),
    /// Delete objects by name, by selector, or as named in manifests.
    Delete(cmd::delete::DeleteArgs),
    /// Add, change or remove labels of objects.
    Label(cmd::label::LabelArgs),
    /// Add, change or remove taints of nodes.
    Taint(cmd::taint::TaintArgs),
    /// Mark nodes unschedulable.
    Cordon(cmd::cordon::CordonArgs),
    /// Mark nodes schedulable again.
    Uncordon(cmd::cordon::CordonArgs),
    /// Cordon a node, then evict its pods through the Eviction API (honouring budgets).
    Drain(cmd::drain::DrainArgs),
    /// Evict pods through the Eviction API, which honours PodDisruptionBudgets.
    Evict(cmd::evict::EvictArgs),
    /// Print the logs of a container of a pod.
    Logs(cmd::logs::LogsArgs),
    /// Show the cpu and memory use of nodes or pods, as their agents last reported it.
    Top(cmd::top::TopArgs),
    /// Set the number of replicas of deployments or replicasets.
    Scale(cmd::scale::ScaleArgs),
    /// Follow, restart, undo or list the rollouts of deployments.
    Rollout(cmd::rollout::RolloutArgs),
    /// Wait until objects meet a condition, are created or are deleted.
    Wait(cmd::wait::WaitArgs),
    /// Create a namespace, priority class or deployment from flags.
    Create(cmd::create::CreateArgs),
    /// Show what `apply -f` would change, as a unified diff (exit 1 when it would).
    Diff(cmd::diff::DiffArgs),
    /// Edit objects in $KUBE_EDITOR or $EDITOR and apply the result.
    Edit(cmd::edit::EditArgs),
    /// Print the client's and the server's versions.
    Version(cmd::version::VersionArgs),
    /// List the resource types the server stores.
    ApiResources(cmd::api_resources::ApiResourcesArgs),
    /// Print a shell completion script (bash, zsh or fish).
    Completion(cmd::completion::CompletionArgs),
    /// Run a local cluster: a scheduler and agents, until Ctrl-C.
    Dev(dev::DevArgs),
    /// Measure scheduling throughput on kube's scheduler_perf workloads.
    Bench(bench::BenchArgs),
    /// Schedule manifests offline with the real scheduler and explain every decision.
    Sim(sim::SimArgs),
    /// Run experiments over time: traces or scenarios, several policies and seeds.
    Lab(lab::LabArgs),
}

/// Runs `berth` with the process's arguments and standard streams; returns the exit code.
pub fn main() -> ExitCode {
    // `berth scheduler ...` and `berth agent ...` run the scheduler or an agent in this
    // process, with the flags of `berth-scheduler` and `berth-agent`: `berth dev` starts its
    // cluster this way, so that `cargo run --bin berth -- dev` needs no other binary.
    let mut argv = std::env::args_os().skip(1);
    let mode = argv.next();
    let embedded: Option<(&str, fn(Vec<std::ffi::OsString>) -> anyhow::Result<()>)> =
        match mode.as_ref().and_then(|m| m.to_str()) {
            Some("scheduler") => Some(("berth scheduler", |a| daemon::scheduler_main_from(a))),
            Some("agent") => Some(("berth agent", |a| daemon::agent_main_from(a))),
            _ => None,
        };
    if let Some((name, run)) = embedded {
        let command_line: Vec<std::ffi::OsString> =
            std::iter::once(name.into()).chain(argv).collect();
        return match run(command_line) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = Cli::parse();
    let default_level = match cli.command {
        Command::Dev(_) => "info",
        _ => "warn",
    };
    if let Err(e) = daemon::init_tracing(default_level, berth_agent::cli::LogFormat::Text) {
        eprintln!("error: {e:#}");
        return ExitCode::FAILURE;
    }
    let runtime = match daemon::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut io = cmd::Io::stdio();
    runtime.block_on(execute(cli, &mut io))
}

/// Runs a parsed command line with the given output streams; errors are written to
/// `io.err`, one `error: ...` line each.
pub async fn execute(cli: Cli, io: &mut cmd::Io) -> ExitCode {
    let result = match cli.command {
        Command::Dev(args) => dev::run(args).await,
        Command::Bench(args) => bench::run(args).await,
        Command::Sim(args) => sim::run(args, io),
        Command::Lab(args) => lab::run(args, io),
        command => {
            let mut ctx = cmd::Context::new(cli.global, io);
            cmd::run(command, &mut ctx).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => cmd::report(&e, io),
    }
}
