//! `berth lab run EXPERIMENT [-o DIR] [--seeds 42..51|LIST] [--policy NAME]... [--jobs N]
//! [--pods CSV]`: experiments over time with the real scheduler and a simulated clock
//! (lab.md). The experiment file is read here (paths relative to it), every policy × seed
//! runs in parallel over the cores, and the outputs of [`report`] go to DIR. stdout gets
//! the summary table only; progress goes to stderr when it is a terminal.

pub mod report;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _};
use berth_scheduler::lab::engine::{self, LabSetup, LabStep, LabWorkload};
use berth_scheduler::lab::experiment::{Experiment, ObjectRef, PolicySpec, Seeds, WorkloadSpec};
use berth_scheduler::lab::openb;
use berth_scheduler::lab::summary::RunResult;
use berth_scheduler::profile::Profiles;
use clap::{Args, Subcommand};
use rayon::prelude::*;

use crate::cmd::Io;
use crate::manifest::{self, LoadOptions};
use crate::progress::Counter;

/// Flags of `berth lab`.
#[derive(Args, Debug, Clone)]
pub struct LabArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LabCommand,
}

/// `berth lab` verbs.
#[derive(Subcommand, Debug, Clone)]
pub enum LabCommand {
    /// Run an experiment: every policy with every seed, then the summary, plots and report.
    Run(RunArgs),
}

/// Flags of `berth lab run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The experiment file (YAML; see the README's "Lab" section and docs/lab/).
    pub experiment: PathBuf,
    /// Where the outputs go (default: `lab-out/<experiment name>`).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Seeds instead of the file's: `42..51` (both ends included) or `1,2,3`.
    #[arg(long, value_name = "SEEDS", value_parser = parse_seeds)]
    pub seeds: Option<Seeds>,
    /// Run only this policy of the file's (repeat for several).
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// Runs at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Another OpenB task list instead of the file's (such as openb_pod_list_multigpu50.csv).
    #[arg(long, value_name = "CSV")]
    pub pods: Option<PathBuf>,
}

fn parse_seeds(text: &str) -> Result<Seeds, String> {
    Seeds::parse(text)
}

/// Runs `berth lab`.
pub fn run(args: LabArgs, io: &mut Io) -> anyhow::Result<()> {
    match args.command {
        LabCommand::Run(args) => run_experiment(args, io),
    }
}

fn run_experiment(args: RunArgs, io: &mut Io) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.experiment)
        .with_context(|| format!("reading {}", args.experiment.display()))?;
    let mut experiment = Experiment::from_yaml(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.experiment.display()))?;
    let base = args
        .experiment
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let Some(seeds) = args.seeds {
        experiment.seeds = seeds;
    }
    if let Some(pods) = &args.pods {
        match &mut experiment.workload.openb {
            Some(openb) => openb.pods = pods.display().to_string(),
            None => bail!(
                "--pods replaces an OpenB task list, and {} has none",
                args.experiment.display()
            ),
        }
    }
    let mut policies = experiment.policies.clone();
    if !args.policies.is_empty() {
        for name in &args.policies {
            if !policies.iter().any(|p| p.name() == name) {
                let known: Vec<&str> = policies.iter().map(PolicySpec::name).collect();
                bail!(
                    "--policy {name}: the experiment has no such policy (it has {})",
                    known.join(", ")
                );
            }
        }
        policies.retain(|p| args.policies.iter().any(|n| n == p.name()));
    }
    let setup = setup(&experiment, &base, args.pods.is_some())?;
    let profiles: Vec<(String, Profiles)> = policies
        .iter()
        .map(|p| {
            Ok((
                p.name().to_string(),
                profiles_for(p, &experiment, &base, &setup)?,
            ))
        })
        .collect::<anyhow::Result<_>>()?;

    let runs: Vec<(usize, u64)> = (0..profiles.len())
        .flat_map(|p| experiment.seeds.0.iter().map(move |&s| (p, s)))
        .collect();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .context("starting the worker threads")?;
    let progress = Counter::new(runs.len(), "runs");
    let started = Instant::now();
    let results: Vec<RunResult> = pool.install(|| {
        runs.par_iter()
            .map(|&(p, seed)| {
                let (name, profiles) = &profiles[p];
                let result = engine::run(&setup, name, profiles.clone(), seed)
                    .map_err(|e| anyhow::anyhow!("policy {name}, seed {seed}: {e}"));
                progress.tick();
                result
            })
            .collect::<anyhow::Result<_>>()
    })?;
    progress.finish();

    let dir = args
        .output
        .unwrap_or_else(|| PathBuf::from("lab-out").join(&experiment.name));
    let order: Vec<String> = profiles.iter().map(|(n, _)| n.clone()).collect();
    let by_time = experiment.workload.openb.is_none();
    let table = report::write(
        &dir,
        &experiment.name,
        &order,
        &results,
        experiment.record.format,
        by_time,
    )?;
    write!(io.out, "{table}")?;
    let peak = berth_scheduler::perf::report::peak_rss_bytes(None);
    writeln!(
        io.err,
        "{} runs in {:.1} s ({} at once){}; wrote {}",
        results.len(),
        started.elapsed().as_secs_f64(),
        jobs,
        peak.map_or(String::new(), |b| format!(", peak memory {} MiB", b >> 20)),
        dir.display()
    )?;
    Ok(())
}

/// The experiment's cluster and workload, read from its files.
fn setup(experiment: &Experiment, base: &Path, pods_from_flag: bool) -> anyhow::Result<LabSetup> {
    let mut cluster = Vec::new();
    if let Some(openb) = &experiment.cluster.openb {
        let path = base.join(&openb.nodes);
        cluster.extend(engine::openb_cluster(&openb::read_nodes(&path)?));
    }
    cluster.extend(load_objects(base, &experiment.cluster.manifests)?);
    let workload = match &experiment.workload {
        WorkloadSpec {
            openb: Some(pods), ..
        } => {
            // --pods is relative to where berth runs; the file's path to the file.
            let path = if pods_from_flag {
                PathBuf::from(&pods.pods)
            } else {
                base.join(&pods.pods)
            };
            LabWorkload::Openb {
                tasks: openb::read_tasks(&path)?,
                mode: pods.arrival,
                fill_percent: pods.fill_percent,
                coverage_percent: pods.target_coverage_percent,
            }
        }
        WorkloadSpec {
            steps, duration, ..
        } => LabWorkload::Steps {
            steps: steps
                .iter()
                .map(|step| {
                    Ok(LabStep {
                        at: step.at,
                        create: load_objects(base, &step.create)?,
                        delete: step
                            .delete
                            .iter()
                            .map(|r| ObjectRef::parse(r).expect("checked"))
                            .collect(),
                        patch: step
                            .patch
                            .iter()
                            .map(|p| {
                                (
                                    ObjectRef::parse(&p.object).expect("checked"),
                                    p.merge.clone(),
                                )
                            })
                            .collect(),
                        cordon: step.cordon.clone(),
                        uncordon: step.uncordon.clone(),
                        drain: step.drain.clone(),
                        remove_node: step.remove_node.clone(),
                    })
                })
                .collect::<anyhow::Result<_>>()?,
            duration: *duration,
        },
    };
    Ok(LabSetup {
        cluster,
        workload,
        every: experiment.every(),
        fragmentation: experiment.record.fragmentation,
    })
}

/// Objects from manifest files or folders, relative to the experiment file.
fn load_objects(base: &Path, paths: &[String]) -> anyhow::Result<Vec<berth_proto::model::Object>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let paths: Vec<String> = paths
        .iter()
        .map(|p| base.join(p).display().to_string())
        .collect();
    let loaded = manifest::load_with(
        &paths,
        LoadOptions {
            skip_unknown_kinds: true,
            skip_pod_validation: true,
        },
    )?;
    Ok(loaded.manifests.into_iter().map(|m| m.object).collect())
}

/// A policy's scheduler profiles: a built-in policy as the paper's artifact configures it,
/// or the given KubeSchedulerConfiguration; the experiment's tie-breaking either way.
fn profiles_for(
    policy: &PolicySpec,
    experiment: &Experiment,
    base: &Path,
    setup: &LabSetup,
) -> anyhow::Result<Profiles> {
    let profiles = match policy {
        PolicySpec::Builtin(name) => engine::builtin_profiles(name, setup)?,
        PolicySpec::Config(c) => {
            let path = base.join(&c.config);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Profiles::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
    };
    Ok(match experiment.tie_break {
        Some(t) if policy.name() != "Random" => profiles.with_tie_break(t.into()),
        _ => profiles,
    })
}
