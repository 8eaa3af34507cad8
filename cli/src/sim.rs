//! `berth sim -f PATH... [--config FILE] [--seed N] [--explain] [-o json|table]`: runs the
//! real scheduler offline over manifests (see `berth_scheduler::sim`) and prints where each
//! pod would go and why, as the stable JSON of design.md or as a table for people.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use berth_scheduler::profile::Profiles;
use berth_scheduler::sim::{self, NodeOutcome, SimInput, SimOptions, SimOutput};
use clap::{Args, ValueEnum};

use crate::cmd::Io;
use crate::manifest::{self, LoadOptions};
use crate::output::Table;

/// Flags of `berth sim`.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Manifests: files, folders (their *.yaml, *.yml and *.json files, not subfolders), or
    /// `-` for standard input. Repeat for several. Kinds that do not affect placement
    /// (Service, ConfigMap, ...) are skipped with a note.
    #[arg(short = 'f', long = "filename", required = true, value_name = "PATH")]
    pub filenames: Vec<String>,
    /// A KubeSchedulerConfiguration file (profiles, plugins, weights); kube's default profile
    /// when left out.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seed for breaking ties between equally good nodes and for generated pod names; a
    /// random seed (printed on stderr) when left out.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Show every node's verdict and score for each pod's last attempt.
    #[arg(long)]
    pub explain: bool,
    /// Output format.
    #[arg(
        short = 'o',
        long,
        value_enum,
        default_value = "json",
        value_name = "FORMAT"
    )]
    pub output: SimFormat,
}

/// Output formats of `berth sim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SimFormat {
    /// The stable JSON interface (pretty-printed).
    Json,
    /// A table: POD, NODE, PREEMPTED, MESSAGE; with --explain, each pod's node verdicts.
    Table,
}

/// Runs `berth sim`: notes go to `io.err` (`note: ...`), the result to `io.out`. Bad
/// manifests or a bad configuration are errors (one line per problem, exit code 1).
pub fn run(args: SimArgs, io: &mut Io) -> anyhow::Result<()> {
    let profiles = match &args.config {
        Some(path) => Profiles::from_file(path)?,
        None => Profiles::default(),
    };
    let loaded = manifest::load_with(
        &args.filenames,
        LoadOptions {
            skip_unknown_kinds: true,
            skip_pod_validation: true,
        },
    )?;
    for skipped in &loaded.skipped {
        let name = match (skipped.namespace.as_str(), skipped.name.as_str()) {
            (_, "") => String::new(),
            ("", name) => format!(" {name}"),
            (namespace, name) => format!(" {namespace}/{name}"),
        };
        writeln!(
            io.err,
            "note: skipping {}{name} (does not affect placement)",
            skipped.kind
        )?;
    }
    let seed = match args.seed {
        Some(seed) => seed,
        None => {
            let seed = random_seed();
            writeln!(
                io.err,
                "note: using seed {seed} (pass --seed {seed} to repeat this run)"
            )?;
            seed
        }
    };
    let input = SimInput {
        objects: loaded.manifests.into_iter().map(|m| m.object).collect(),
    };
    let output = sim::run(
        input,
        SimOptions {
            seed,
            explain: args.explain,
            profiles,
        },
    )?;
    for note in &output.notes {
        writeln!(io.err, "note: {note}")?;
    }
    let text = match args.output {
        SimFormat::Json => {
            let mut json =
                serde_json::to_string_pretty(&output).context("writing the result as JSON")?;
            json.push('\n');
            json
        }
        SimFormat::Table => render_table(&output),
    };
    io.out.write_all(text.as_bytes())?;
    io.out.flush()?;
    Ok(())
}

/// A seed that differs from run to run, from the standard library's per-process random
/// hashing keys (no extra dependency).
fn random_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

/// The table for people: one row per pod, then, when explained, each pod's verdicts.
pub fn render_table(output: &SimOutput) -> String {
    let none = || "<none>".to_string();
    let mut table = Table::new(["POD", "NODE", "PREEMPTED", "MESSAGE"]);
    for pod in &output.pods {
        table.row(vec![
            pod.key(),
            pod.node.clone().unwrap_or_else(none),
            if pod.preempted.is_empty() {
                none()
            } else {
                pod.preempted.join(",")
            },
            pod.message.clone().unwrap_or_default(),
        ]);
    }
    let mut text = table.render(true);
    if !output.evicted.is_empty() {
        text.push_str(&format!("\nEvicted: {}\n", output.evicted.join(", ")));
    }
    for pod in &output.pods {
        let Some(nodes) = &pod.nodes else { continue };
        text.push_str(&format!("\n{}:\n", pod.key()));
        if nodes.is_empty() {
            text.push_str("  (no node verdicts)\n");
            continue;
        }
        let mut verdicts = Table::new(["NODE", "VERDICT"]);
        for (name, outcome) in nodes {
            verdicts.row(vec![name.clone(), verdict(outcome)]);
        }
        for line in verdicts.render(false).lines() {
            text.push_str("  ");
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }
    text
}

/// `score 187` or `rejected: reason; reason`.
fn verdict(outcome: &NodeOutcome) -> String {
    match (outcome.feasible, outcome.score, &outcome.reasons) {
        (true, Some(score), _) => format!("score {score}"),
        (true, None, _) => "feasible".to_string(),
        (false, _, Some(reasons)) => format!("rejected: {}", reasons.join("; ")),
        (false, _, None) => "rejected".to_string(),
    }
}
