//! The experiment file of `berth lab run` (README, "Lab"): the cluster, the workload, the
//! policies, the seeds and what to record, read with every unknown field and bad value
//! refused with its field path.

use std::time::Duration;

use berth_model::decode;
use berth_model::validate::FieldError;
use serde::Deserialize;

use crate::gpushare::Policy;

/// A whole experiment file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Experiment {
    /// A name for the report's title.
    pub name: String,
    /// The machines.
    pub cluster: ClusterSpec,
    /// What arrives and when.
    pub workload: WorkloadSpec,
    /// The scheduler configurations to compare, each a built-in policy name or a
    /// KubeSchedulerConfiguration file.
    pub policies: Vec<PolicySpec>,
    /// Seeds: a list, or a range written `42..51` (both ends included).
    #[serde(default = "default_seeds")]
    pub seeds: Seeds,
    /// How ties between equally scored nodes are broken, in every policy but Random (which
    /// draws afresh for every pod); left out, built-in policies break them as kube does and
    /// configuration files as they say.
    #[serde(default)]
    pub tie_break: Option<TieBreak>,
    /// What to record.
    #[serde(default)]
    pub record: RecordSpec,
}

fn default_seeds() -> Seeds {
    Seeds(vec![42])
}

/// The machines of an experiment: a trace's node list and/or manifests.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    /// An OpenB node list (its GPU nodes become Nodes and node-local ResourceSlices).
    pub openb: Option<OpenbNodes>,
    /// Manifest files or folders (Nodes, ResourceSlices, DeviceClasses, namespaces, ...),
    /// relative to the experiment file.
    #[serde(default)]
    pub manifests: Vec<String>,
}

/// An OpenB node list.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenbNodes {
    /// The CSV, relative to the experiment file.
    pub nodes: String,
}

/// What arrives: a trace, or timed steps over manifests.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadSpec {
    /// An OpenB task list.
    pub openb: Option<OpenbPods>,
    /// Timed scenario steps, in time order.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// How long a scenario runs (after its last step, pending pods keep being retried until
    /// then); defaults to the last step's time.
    #[serde(default, with = "opt_duration")]
    pub duration: Option<Duration>,
}

/// An OpenB task list and how its tasks arrive.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenbPods {
    /// The CSV, relative to the experiment file (`--pods` replaces it).
    pub pods: String,
    /// The arrival order.
    #[serde(default)]
    pub arrival: ArrivalMode,
    /// The artifact's order: sampled copies are appended until this share of the GPU
    /// capacity has arrived, in percent.
    #[serde(default = "default_fill")]
    pub fill_percent: u64,
    /// The share of the original tasks the target workload covers (FGD), in percent.
    #[serde(default = "default_coverage")]
    pub target_coverage_percent: u64,
}

fn default_fill() -> u64 {
    130
}

fn default_coverage() -> u64 {
    95
}

/// How a trace's tasks arrive.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ArrivalMode {
    /// The FGD artifact's: seeded shuffle, sampled copies, one at a time, no deletion, no
    /// retry.
    #[default]
    Artifact,
    /// The trace's creation and deletion times; pending pods retried with the queue's
    /// back-off in simulated time.
    TraceTime,
}

/// One timed step of a scenario.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// When, from the start (`0s`, `90s`, `5m`).
    #[serde(with = "duration")]
    pub at: Duration,
    /// Manifest files to create (or replace) objects from, relative to the experiment file.
    #[serde(default)]
    pub create: Vec<String>,
    /// Objects to delete: `kind/name` or `kind/namespace/name` (`pod/default/web-1`).
    #[serde(default)]
    pub delete: Vec<String>,
    /// JSON merge patches: the object and the patch.
    #[serde(default)]
    pub patch: Vec<PatchStep>,
    /// Nodes to cordon.
    #[serde(default)]
    pub cordon: Vec<String>,
    /// Nodes to uncordon.
    #[serde(default)]
    pub uncordon: Vec<String>,
    /// Nodes to drain: cordoned, their pods evicted (owned pods come back elsewhere).
    #[serde(default)]
    pub drain: Vec<String>,
    /// Nodes to remove with their pods.
    #[serde(default)]
    pub remove_node: Vec<String>,
}

/// A merge patch of one object.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchStep {
    /// `kind/name` or `kind/namespace/name`.
    pub object: String,
    /// The JSON merge patch (RFC 7386), as YAML.
    pub merge: serde_json::Value,
}

/// A policy to run: a built-in name, or a name and a KubeSchedulerConfiguration file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum PolicySpec {
    /// `FGD`, `BestFit`, `DotProd`, `GpuPacking`, `GpuClustering`, `Random`, or `default`
    /// (kube's default profile).
    Builtin(String),
    /// A named configuration.
    Config(ConfigPolicy),
}

/// A named KubeSchedulerConfiguration.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigPolicy {
    /// The name in the report.
    pub name: String,
    /// The KubeSchedulerConfiguration file, relative to the experiment file.
    pub config: String,
}

impl PolicySpec {
    /// The name in reports and for `--policy`.
    pub fn name(&self) -> &str {
        match self {
            PolicySpec::Builtin(n) => n,
            PolicySpec::Config(c) => &c.name,
        }
    }
}

/// The name of the built-in policy that is kube's default profile.
pub const DEFAULT_POLICY: &str = "default";

/// Seeds to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeds(pub Vec<u64>);

impl Seeds {
    /// Reads `42..51` (inclusive) or `1,2,3`.
    pub fn parse(text: &str) -> Result<Seeds, String> {
        let text = text.trim();
        if let Some((a, b)) = text.split_once("..") {
            let (a, b) = (parse_seed(a)?, parse_seed(b)?);
            if a > b {
                return Err(format!("the range {text} is empty"));
            }
            if b - a >= 100_000 {
                return Err(format!("the range {text} has more than 100000 seeds"));
            }
            return Ok(Seeds((a..=b).collect()));
        }
        let seeds = text
            .split(',')
            .map(parse_seed)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Seeds(seeds))
    }
}

fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{:?} is not a seed (a whole number)", s.trim()))
}

impl<'de> Deserialize<'de> for Seeds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            List(Vec<u64>),
            One(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::List(v) if v.is_empty() => Err(serde::de::Error::custom("no seeds")),
            Raw::List(v) => Ok(Seeds(v)),
            Raw::One(s) => Ok(Seeds(vec![s])),
            Raw::Text(t) => Seeds::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// How ties between nodes of equal score are broken.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum TieBreak {
    /// kube's: a fresh random choice per decision, from the seed.
    #[default]
    Random,
    /// The FGD artifact's: one seeded ranking of the nodes for the whole run; a tie goes to
    /// the best-ranked node.
    Ranked,
}

/// What a run records.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordSpec {
    /// A sample after every arrival (`arrival`), or at a fixed simulated interval (`10s`).
    #[serde(default = "default_every")]
    pub every: String,
    /// Whether to compute GPU fragmentation (costs time on large clusters).
    #[serde(default = "yes")]
    pub fragmentation: bool,
    /// The per-run sample files: `csv` or `jsonl`.
    #[serde(default)]
    pub format: SampleFormat,
}

fn default_every() -> String {
    "arrival".into()
}

fn yes() -> bool {
    true
}

impl Default for RecordSpec {
    fn default() -> Self {
        RecordSpec {
            every: default_every(),
            fragmentation: true,
            format: SampleFormat::Csv,
        }
    }
}

/// The per-run sample file format.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum SampleFormat {
    /// Comma-separated, with a header.
    #[default]
    Csv,
    /// One JSON object a line.
    Jsonl,
}

/// When samples are taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Every {
    /// After each arrival.
    Arrival,
    /// Every so often in simulated time.
    Interval(Duration),
}

impl Experiment {
    /// Reads an experiment from YAML, naming the field of the first problem.
    pub fn from_yaml(text: &str) -> Result<Experiment, FieldError> {
        let experiment: Experiment =
            decode::with_path(serde_yaml_ng::Deserializer::from_str(text), |d| {
                Experiment::deserialize(d)
            })?;
        experiment.check()?;
        Ok(experiment)
    }

    /// When samples are taken.
    pub fn every(&self) -> Every {
        match self.record.every.as_str() {
            "arrival" => Every::Arrival,
            other => {
                Every::Interval(humantime::parse_duration(other).unwrap_or(Duration::from_secs(1)))
            }
        }
    }

    fn check(&self) -> Result<(), FieldError> {
        if self.cluster.openb.is_none() && self.cluster.manifests.is_empty() {
            return Err(FieldError::new(
                "cluster",
                "Required value: an openb node list or manifests",
            ));
        }
        match (&self.workload.openb, self.workload.steps.is_empty()) {
            (None, true) => {
                return Err(FieldError::new(
                    "workload",
                    "Required value: openb or steps",
                ))
            }
            (Some(_), false) => {
                return Err(FieldError::new(
                    "workload",
                    "Invalid value: openb and steps cannot both be set",
                ))
            }
            _ => {}
        }
        if let Some(p) = &self.workload.openb {
            if !(100..=1000).contains(&p.fill_percent) {
                return Err(FieldError::new(
                    "workload.openb.fillPercent",
                    format!(
                        "Invalid value: {}: must be between 100 and 1000",
                        p.fill_percent
                    ),
                ));
            }
            if !(1..=100).contains(&p.target_coverage_percent) {
                return Err(FieldError::new(
                    "workload.openb.targetCoveragePercent",
                    format!(
                        "Invalid value: {}: must be between 1 and 100",
                        p.target_coverage_percent
                    ),
                ));
            }
        }
        let mut last = Duration::ZERO;
        for (i, step) in self.workload.steps.iter().enumerate() {
            if step.at < last {
                return Err(FieldError::new(
                    format!("workload.steps[{i}].at"),
                    "Invalid value: steps must be in time order",
                ));
            }
            last = step.at;
            for (j, r) in step.delete.iter().enumerate() {
                ObjectRef::parse(r)
                    .map_err(|m| FieldError::new(format!("workload.steps[{i}].delete[{j}]"), m))?;
            }
            for (j, p) in step.patch.iter().enumerate() {
                ObjectRef::parse(&p.object).map_err(|m| {
                    FieldError::new(format!("workload.steps[{i}].patch[{j}].object"), m)
                })?;
            }
        }
        if self.policies.is_empty() {
            return Err(FieldError::new(
                "policies",
                "Required value: at least one policy",
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, p) in self.policies.iter().enumerate() {
            if let PolicySpec::Builtin(name) = p {
                if name != DEFAULT_POLICY && Policy::from_name(name).is_none() {
                    return Err(FieldError::new(
                        format!("policies[{i}]"),
                        format!(
                            "Unsupported value: {name:?}: supported values: \"FGD\", \"BestFit\", \"DotProd\", \"GpuPacking\", \"GpuClustering\", \"Random\", \"FGDFine\", \"default\", or {{name, config}}"
                        ),
                    ));
                }
            }
            if !names.insert(p.name()) {
                return Err(FieldError::new(
                    format!("policies[{i}]"),
                    format!("Duplicate value: {:?}", p.name()),
                ));
            }
        }
        if self.record.every != "arrival" && humantime::parse_duration(&self.record.every).is_err()
        {
            return Err(FieldError::new(
                "record.every",
                format!(
                    "Invalid value: {:?}: \"arrival\" or a duration such as \"10s\"",
                    self.record.every
                ),
            ));
        }
        Ok(())
    }
}

/// A reference to an object in a step: `kind/name` or `kind/namespace/name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    /// The kind as written, lower case (`pod`, `node`, `deployment`).
    pub kind: String,
    /// The namespace (`default` when left out for a namespaced kind).
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectRef {
    /// Reads `kind/name` or `kind/namespace/name`.
    pub fn parse(text: &str) -> Result<ObjectRef, String> {
        let parts: Vec<&str> = text.split('/').collect();
        if parts.iter().any(|p| p.is_empty()) || !(2..=3).contains(&parts.len()) {
            return Err(format!(
                "Invalid value: {text:?}: kind/name or kind/namespace/name"
            ));
        }
        Ok(ObjectRef {
            kind: parts[0].to_ascii_lowercase(),
            namespace: (parts.len() == 3).then(|| parts[1].to_string()),
            name: parts[parts.len() - 1].to_string(),
        })
    }
}

mod duration {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "{text:?} is not a duration ({e}); write 0s, 90s, 5m"
            ))
        })
    }
}

mod opt_duration {
    use serde::Deserializer;
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENB: &str = "name: openb\ncluster:\n  openb: {nodes: n.csv}\nworkload:\n  openb: {pods: p.csv}\npolicies: [FGD, BestFit, {name: mine, config: c.yaml}]\nseeds: 42..51\ntieBreak: ranked\n";

    #[test]
    fn an_openb_experiment_reads_with_its_defaults() {
        let e = Experiment::from_yaml(OPENB).unwrap();
        assert_eq!(e.seeds.0, (42..=51).collect::<Vec<_>>());
        assert_eq!(e.tie_break, Some(TieBreak::Ranked));
        let pods = e.workload.openb.as_ref().unwrap();
        assert_eq!(
            (
                pods.arrival,
                pods.fill_percent,
                pods.target_coverage_percent
            ),
            (ArrivalMode::Artifact, 130, 95)
        );
        assert_eq!(
            e.policies.iter().map(PolicySpec::name).collect::<Vec<_>>(),
            vec!["FGD", "BestFit", "mine"]
        );
        assert_eq!(e.every(), Every::Arrival);
    }

    #[test]
    fn a_scenario_reads_its_steps() {
        let text = "name: s\ncluster: {manifests: [nodes.yaml]}\nworkload:\n  duration: 5m\n  steps:\n  - {at: 0s, create: [pods.yaml]}\n  - {at: 90s, cordon: [node-1], delete: [pod/default/web-1]}\n  - {at: 2m, patch: [{object: deployment/web, merge: {spec: {replicas: 5}}}]}\npolicies: [default]\nrecord: {every: 10s}\n";
        let e = Experiment::from_yaml(text).unwrap();
        assert_eq!(e.workload.steps.len(), 3);
        assert_eq!(e.workload.steps[1].at, Duration::from_secs(90));
        assert_eq!(e.workload.duration, Some(Duration::from_secs(300)));
        assert_eq!(e.every(), Every::Interval(Duration::from_secs(10)));
        assert_eq!(
            ObjectRef::parse("pod/default/web-1").unwrap(),
            ObjectRef {
                kind: "pod".into(),
                namespace: Some("default".into()),
                name: "web-1".into()
            }
        );
    }

    #[test]
    fn bad_experiments_name_the_field() {
        let cases = [
            (OPENB.replace("tieBreak: ranked", "tieBrake: ranked"), "unknown field \"tieBrake\""),
            (OPENB.replace("FGD, ", "FDG, "), "policies[0]: Unsupported value: \"FDG\""),
            (OPENB.replace("42..51", "51..42"), "seeds: the range 51..42 is empty"),
            (OPENB.replace("{pods: p.csv}", "{pods: p.csv, fillPercent: 50}"), "workload.openb.fillPercent: Invalid value: 50"),
            (OPENB.replace("BestFit", "FGD"), "policies[1]: Duplicate value: \"FGD\""),
            (OPENB.replace("tieBreak: ranked", "tieBreak: first"), "tieBreak: unknown variant \"first\""),
            (OPENB.replace("seeds: 42..51", "record: {every: often}"), "record.every: Invalid value: \"often\""),
            ("name: s\ncluster: {manifests: [a.yaml]}\nworkload:\n  steps:\n  - {at: 9s}\n  - {at: 1s}\npolicies: [default]\n".to_string(), "workload.steps[1].at: Invalid value: steps must be in time order"),
            ("name: s\ncluster: {manifests: [a.yaml]}\nworkload:\n  steps:\n  - {at: soon}\npolicies: [default]\n".to_string(), "workload.steps[0].at"),
            ("name: s\ncluster: {manifests: [a.yaml]}\nworkload:\n  steps:\n  - {at: 1s, delete: [web]}\npolicies: [default]\n".to_string(), "workload.steps[0].delete[0]: Invalid value: \"web\""),
        ];
        for (text, want) in cases {
            let err = Experiment::from_yaml(&text).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
        }
    }
}
