//! kube-scheduler's default plugins, one module each, and the registry that builds them by
//! name with their arguments (from a profile's `pluginConfig`).
//!
//! # Layout
//!
//! - [`node_unschedulable`], [`node_name`], [`taint_toleration`], [`node_affinity`],
//!   [`node_resources_fit`], [`balanced_allocation`]: the node-level plugins, each with its
//!   `NAME`, typed `Args` where kube has them, reason strings and table tests.
//! - [`inter_pod_affinity`], [`pod_topology_spread`]: the plugins that look at other pods.
//! - [`node_ports`]: host-port conflicts; [`image_locality`]: nodes that have the images.
//! - `testing` (tests only): `PodBuilder`, `NodeBuilder` and snapshot fixtures.
//! - [`DEFAULT_PLUGINS`] and [`build`]: the registry, in kube's default-profile order.
//! - [`default_normalize_score`]: kube's shared score normalization.

pub mod balanced_allocation;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod gpu_share;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod taint_toleration;

#[cfg(test)]
pub(crate) mod testing;

use std::sync::Arc;

use crate::framework::{
    CycleState, Filter, NodeInfo, PluginError, PodInfo, PostFilter, PreFilter, PreScore,
    PreScoreInput, Score, Snapshot,
};
use inter_pod_affinity::InterPodAffinity;
use node_affinity::NodeAffinityPlugin;
use node_resources_fit::NodeResourcesFit;
use pod_topology_spread::PodTopologySpread;

/// A constructed plugin, seen at each extension point it implements.
#[derive(Clone, Default)]
pub struct PluginSet {
    /// The plugin's name.
    pub name: &'static str,
    /// Its PreFilter, if any.
    pub pre_filter: Option<Arc<dyn PreFilter>>,
    /// Its Filter, if any.
    pub filter: Option<Arc<dyn Filter>>,
    /// Its PostFilter, if any.
    pub post_filter: Option<Arc<dyn PostFilter>>,
    /// Its PreScore, if any.
    pub pre_score: Option<Arc<dyn PreScore>>,
    /// Its Score, if any.
    pub score: Option<Arc<dyn Score>>,
    /// Its choice of devices on the chosen node, if it has one (used when its Score is
    /// enabled).
    pub device_preference: Option<Arc<dyn crate::framework::DevicePreference>>,
}

impl PluginSet {
    /// Runs the plugin's PreScore, if it has one, over `feasible`: what the cycle does
    /// before scoring, for tests and benchmarks that drive one plugin.
    pub fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[&NodeInfo],
    ) -> Result<(), PluginError> {
        match &self.pre_score {
            Some(pre) => pre.pre_score(
                state,
                &PreScoreInput {
                    pod,
                    snapshot,
                    feasible,
                },
            ),
            None => Ok(()),
        }
    }
}

/// A plugin name or its arguments are not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// No plugin has this name.
    #[error("unknown plugin {name:?}")]
    UnknownPlugin {
        /// The name asked for.
        name: String,
    },
    /// The plugin's args do not parse or are invalid.
    #[error("invalid args for plugin {plugin}: {message}")]
    InvalidArgs {
        /// The plugin.
        plugin: &'static str,
        /// What is wrong, with the field path.
        message: String,
    },
}

/// One invalid field of a plugin's args, found after parsing (kube's `field.Invalid`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct InvalidArgs {
    /// Path of the field, as written in the configuration (`scoringStrategy.resources[0].weight`).
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl InvalidArgs {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        InvalidArgs {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// kube-scheduler's default plugins in the order they run, with their default score weights
/// (0 for plugins that do not score). Only plugins that [`build`] can construct are listed;
/// the queue-level (PrioritySort, SchedulingGates), volume and binder plugins of kube's
/// list have no counterpart in Berth.
pub const DEFAULT_PLUGINS: &[(&str, i64)] = &[
    (node_unschedulable::NAME, 0),
    (node_name::NAME, 0),
    (taint_toleration::NAME, 3),
    (node_affinity::NAME, 2),
    (node_ports::NAME, 0),
    (node_resources_fit::NAME, 1),
    // kube's order: PodTopologySpread 2, InterPodAffinity 2, then DefaultPreemption.
    (pod_topology_spread::NAME, 2),
    (inter_pod_affinity::NAME, 2),
    // kube puts DynamicResources before DefaultPreemption.
    (dynamic_resources::NAME, 0),
    (default_preemption::NAME, 0),
    (balanced_allocation::NAME, 1),
    (image_locality::NAME, 1),
];

/// Builds a plugin by name; `args` is its `pluginConfig` entry's `args`, if any. The args'
/// optional `apiVersion` and `kind` are accepted (kind must then be `<Name>Args`); plugins
/// that take no args ignore them, as kube-scheduler does.
pub fn build(name: &str, args: Option<&serde_yaml_ng::Value>) -> Result<PluginSet, RegistryError> {
    match name {
        node_unschedulable::NAME => Ok(filter_only(
            node_unschedulable::NAME,
            args,
            node_unschedulable::NodeUnschedulable,
        )),
        node_name::NAME => Ok(filter_only(node_name::NAME, args, node_name::NodeName)),
        dynamic_resources::NAME => {
            ignore_args(dynamic_resources::NAME, args);
            let p = Arc::new(dynamic_resources::DynamicResources);
            Ok(PluginSet {
                name: dynamic_resources::NAME,
                pre_filter: Some(p.clone()),
                filter: Some(p),
                ..PluginSet::default()
            })
        }
        node_ports::NAME => Ok(filter_only(node_ports::NAME, args, node_ports::NodePorts)),
        image_locality::NAME => Ok(scoring(
            image_locality::NAME,
            args,
            Arc::new(image_locality::ImageLocality),
        )),
        taint_toleration::NAME => {
            let p = Arc::new(taint_toleration::TaintToleration);
            Ok(PluginSet {
                filter: Some(p.clone()),
                ..scoring(taint_toleration::NAME, args, p)
            })
        }
        node_affinity::NAME => {
            filter_and_score(node_affinity::NAME, args, NodeAffinityPlugin::try_new)
        }
        node_resources_fit::NAME => {
            filter_and_score(node_resources_fit::NAME, args, NodeResourcesFit::try_new)
        }
        inter_pod_affinity::NAME => {
            filter_and_score(inter_pod_affinity::NAME, args, InterPodAffinity::try_new)
        }
        pod_topology_spread::NAME => {
            filter_and_score(pod_topology_spread::NAME, args, PodTopologySpread::try_new)
        }
        balanced_allocation::NAME => {
            let p = with_args(
                balanced_allocation::NAME,
                args,
                balanced_allocation::BalancedAllocation::try_new,
            )?;
            Ok(PluginSet {
                name: balanced_allocation::NAME,
                pre_score: Some(p.clone()),
                score: Some(p),
                ..PluginSet::default()
            })
        }
        default_preemption::NAME => {
            let p = with_args(
                default_preemption::NAME,
                args,
                default_preemption::DefaultPreemption::try_new,
            )?;
            Ok(PluginSet {
                name: default_preemption::NAME,
                post_filter: Some(p),
                ..PluginSet::default()
            })
        }
        name if crate::gpushare::Policy::from_name(name).is_some() => {
            let policy = crate::gpushare::Policy::from_name(name).expect("checked");
            let p = with_args(policy.name(), args, |a| {
                gpu_share::GpuShare::try_new(policy, a)
            })?;
            Ok(PluginSet {
                name: policy.name(),
                pre_score: Some(p.clone()),
                score: Some(p.clone()),
                device_preference: Some(p),
                ..PluginSet::default()
            })
        }
        _ => Err(RegistryError::UnknownPlugin {
            name: name.to_string(),
        }),
    }
}

/// Parses `plugin`'s args and builds it with `try_new`, which validates them.
fn with_args<A, P>(
    plugin: &'static str,
    args: Option<&serde_yaml_ng::Value>,
    try_new: impl FnOnce(A) -> Result<P, InvalidArgs>,
) -> Result<Arc<P>, RegistryError>
where
    A: serde::de::DeserializeOwned + Default,
{
    let parsed = parse_args(plugin, args)?;
    try_new(parsed)
        .map(Arc::new)
        .map_err(|e| invalid(plugin, e))
}

/// The set of a plugin without args that runs at PreScore and Score.
fn scoring<P: PreScore + Score + 'static>(
    name: &'static str,
    args: Option<&serde_yaml_ng::Value>,
    plugin: Arc<P>,
) -> PluginSet {
    ignore_args(name, args);
    PluginSet {
        name,
        pre_score: Some(plugin.clone()),
        score: Some(plugin),
        ..PluginSet::default()
    }
}

/// The set of a plugin without args that runs at Filter only.
fn filter_only<P: Filter + 'static>(
    name: &'static str,
    args: Option<&serde_yaml_ng::Value>,
    plugin: P,
) -> PluginSet {
    ignore_args(name, args);
    PluginSet {
        name,
        filter: Some(Arc::new(plugin)),
        ..PluginSet::default()
    }
}

/// Builds a plugin with args (see [`with_args`]) that runs at PreFilter, Filter, PreScore
/// and Score.
fn filter_and_score<A, P>(
    name: &'static str,
    args: Option<&serde_yaml_ng::Value>,
    try_new: impl FnOnce(A) -> Result<P, InvalidArgs>,
) -> Result<PluginSet, RegistryError>
where
    A: serde::de::DeserializeOwned + Default,
    P: PreFilter + Filter + PreScore + Score + 'static,
{
    let p = with_args(name, args, try_new)?;
    Ok(PluginSet {
        name,
        pre_filter: Some(p.clone()),
        filter: Some(p.clone()),
        pre_score: Some(p.clone()),
        score: Some(p),
        ..PluginSet::default()
    })
}

fn invalid(plugin: &'static str, e: InvalidArgs) -> RegistryError {
    RegistryError::InvalidArgs {
        plugin,
        message: e.to_string(),
    }
}

/// Plugins without args accept and ignore whatever is configured for them (kube-scheduler
/// only decodes args for plugins that register an args type).
fn ignore_args(plugin: &'static str, args: Option<&serde_yaml_ng::Value>) {
    if args.is_some_and(|a| !a.is_null()) {
        tracing::debug!(
            plugin,
            "plugin takes no args; ignoring its pluginConfig args"
        );
    }
}

/// Parses a plugin's args: absent or null means the defaults. `apiVersion` and `kind` are
/// accepted as kube's typed args carry them; any other unknown field is an error.
pub(crate) fn parse_args<T>(
    plugin: &'static str,
    args: Option<&serde_yaml_ng::Value>,
) -> Result<T, RegistryError>
where
    T: serde::de::DeserializeOwned + Default,
{
    let Some(value) = args.filter(|a| !a.is_null()) else {
        return Ok(T::default());
    };
    let mut value = value.clone();
    if let serde_yaml_ng::Value::Mapping(map) = &mut value {
        map.remove("apiVersion");
        if let Some(kind) = map.remove("kind") {
            let want = format!("{plugin}Args");
            if kind.as_str() != Some(want.as_str()) {
                return Err(RegistryError::InvalidArgs {
                    plugin,
                    message: format!("kind: expected {want:?}, got {kind:?}"),
                });
            }
        }
    }
    serde_yaml_ng::from_value(value).map_err(|e| RegistryError::InvalidArgs {
        plugin,
        message: e.to_string(),
    })
}

/// kube's `helper.DefaultNormalizeScore`: scales raw scores in `0..=max(scores)` to
/// `0..=max_priority` with integer arithmetic; with `reverse`, a lower raw score is better
/// (`max_priority - scaled`). When every score is 0, they stay 0, or all become
/// `max_priority` when reversed.
pub fn default_normalize_score(max_priority: i64, reverse: bool, scores: &mut [i64]) {
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max_priority);
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = max_priority * *s / max;
        *s = if reverse {
            max_priority - scaled
        } else {
            scaled
        };
    }
}

/// Compile-time check that each plugin can sit behind `Arc<dyn Trait>` and cross threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<node_unschedulable::NodeUnschedulable>();
    assert_send_sync::<node_name::NodeName>();
    assert_send_sync::<node_ports::NodePorts>();
    assert_send_sync::<image_locality::ImageLocality>();
    assert_send_sync::<taint_toleration::TaintToleration>();
    assert_send_sync::<node_affinity::NodeAffinityPlugin>();
    assert_send_sync::<node_resources_fit::NodeResourcesFit>();
    assert_send_sync::<balanced_allocation::BalancedAllocation>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_normalize_score_matches_kube() {
        struct Case {
            name: &'static str,
            reverse: bool,
            scores: Vec<i64>,
            want: Vec<i64>,
        }
        let cases = vec![
            Case {
                name: "scaled to the maximum",
                reverse: false,
                scores: vec![10, 5, 0],
                want: vec![100, 50, 0],
            },
            Case {
                name: "integer division truncates",
                reverse: false,
                scores: vec![3, 1, 2],
                want: vec![100, 33, 66],
            },
            Case {
                name: "reversed: fewer is better",
                reverse: true,
                scores: vec![2, 1, 0],
                want: vec![0, 50, 100],
            },
            Case {
                name: "all zero stays zero",
                reverse: false,
                scores: vec![0, 0],
                want: vec![0, 0],
            },
            Case {
                name: "all zero reversed becomes max",
                reverse: true,
                scores: vec![0, 0],
                want: vec![100, 100],
            },
            Case {
                name: "empty list",
                reverse: true,
                scores: vec![],
                want: vec![],
            },
        ];
        for mut case in cases {
            default_normalize_score(100, case.reverse, &mut case.scores);
            assert_eq!(case.scores, case.want, "{}", case.name);
        }
    }

    #[test]
    fn registry_builds_every_default_plugin() {
        for (name, weight) in DEFAULT_PLUGINS {
            let set = build(name, None).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(set.name, *name);
            assert_eq!(
                set.score.is_some(),
                *weight > 0,
                "{name}: scoring plugins have a weight, others none"
            );
        }
    }

    #[test]
    fn registry_rejects_unknown_names_and_bad_args() {
        let cases = [
            (
                "NoSuchPlugin",
                testing::ArgsCase {
                    name: "unknown plugin",
                    yaml: "",
                    want_err: Some("unknown plugin \"NoSuchPlugin\""),
                },
            ),
            (
                node_resources_fit::NAME,
                testing::ArgsCase {
                    name: "unknown field is an error",
                    yaml: "scoringStrategee: {}",
                    want_err: Some("unknown field `scoringStrategee`"),
                },
            ),
            (
                node_resources_fit::NAME,
                testing::ArgsCase {
                    name: "apiVersion and kind are accepted",
                    yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: NodeResourcesFitArgs\n",
                    want_err: None,
                },
            ),
            (
                node_resources_fit::NAME,
                testing::ArgsCase {
                    name: "wrong kind",
                    yaml: "kind: NodeAffinityArgs\n",
                    want_err: Some("expected \"NodeResourcesFitArgs\""),
                },
            ),
            (
                node_resources_fit::NAME,
                testing::ArgsCase {
                    name: "invalid weight after parsing",
                    yaml: "scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 101}]}",
                    want_err: Some("scoringStrategy.resources[0].weight"),
                },
            ),
            (
                node_name::NAME,
                testing::ArgsCase {
                    name: "args of a plugin without args are ignored",
                    yaml: "whatever: 1",
                    want_err: None,
                },
            ),
        ];
        for (plugin, case) in cases {
            testing::check_args(plugin, &[case]);
        }
    }

    /// InterPodAffinity and PodTopologySpread, which keep their counts across cycles, give
    /// every node the same verdict and score as fresh instances that recompute from scratch,
    /// while pods of several kinds are placed and removed (regression guard for issue 7's
    /// incremental state).
    #[test]
    fn cached_plugins_decide_as_fresh_ones() {
        use std::sync::Arc;

        use crate::framework::{NodeInfo, PodInfo, Snapshot};
        use crate::perf::workloads::{node as template_node, PodTemplate, MEASURED_NAMESPACE};

        struct Case {
            name: &'static str,
            plugin: &'static str,
            templates: Vec<PodTemplate>,
        }
        let cases = [
            Case {
                name: "required affinity and anti-affinity",
                plugin: "InterPodAffinity",
                templates: vec![
                    PodTemplate::Affinity,
                    PodTemplate::AntiAffinity,
                    PodTemplate::Affinity,
                    PodTemplate::Default,
                    PodTemplate::AntiAffinity,
                ],
            },
            Case {
                name: "preferred affinity and anti-affinity",
                plugin: "InterPodAffinity",
                templates: vec![
                    PodTemplate::PreferredAffinity,
                    PodTemplate::PreferredAntiAffinity,
                    PodTemplate::PreferredAffinity,
                    PodTemplate::Affinity,
                ],
            },
            Case {
                name: "topology spreading",
                plugin: "PodTopologySpread",
                templates: vec![
                    PodTemplate::TopologySpreading,
                    PodTemplate::TopologySpreading,
                    PodTemplate::Default,
                    PodTemplate::TopologySpreading,
                ],
            },
        ];
        let verdicts = |plugin: &PluginSet, snapshot: &Snapshot, pod: &PodInfo| {
            let mut state = crate::framework::CycleState::new();
            if let Some(pre) = &plugin.pre_filter {
                pre.pre_filter(&mut state, pod, snapshot)
                    .expect("pre_filter");
            }
            let nodes: Vec<&NodeInfo> = snapshot.nodes().iter().collect();
            plugin
                .pre_score(&mut state, pod, snapshot, &nodes)
                .expect("pre_score");
            nodes
                .iter()
                .map(|n| {
                    let fit = plugin.filter.as_ref().map(|f| f.filter(&state, pod, n));
                    let score = plugin.score.as_ref().map(|s| s.score(&state, pod, n));
                    (n.name().to_string(), fit, score)
                })
                .collect::<Vec<_>>()
        };
        for case in cases {
            let cached = build(case.plugin, None).expect("builds");
            let mut snapshot = Snapshot::new();
            for i in 0..6 {
                snapshot.upsert_node(Arc::new(template_node(i, true)));
            }
            for round in 0..3 {
                for (i, template) in case.templates.iter().enumerate() {
                    let name = format!("p-{round}-{i}");
                    let mut raw = template.pod(MEASURED_NAMESPACE, &name);
                    raw.metadata.uid = name.clone();
                    let pod = Arc::new(PodInfo::new(Arc::new(raw)));
                    let fresh = build(case.plugin, None).expect("builds");
                    let got = verdicts(&cached, &snapshot, &pod);
                    let want = verdicts(&fresh, &snapshot, &pod);
                    assert_eq!(got, want, "{}: round {round}, pod {i}", case.name);
                    // Place it on the first node that fits (or the first node), and now and
                    // then remove an earlier pod.
                    let target = got
                        .iter()
                        .find(|(_, fit, _)| fit.as_ref().is_none_or(|f| f.is_yes()))
                        .map_or_else(
                            || snapshot.nodes()[0].name().to_string(),
                            |(n, _, _)| n.clone(),
                        );
                    snapshot.add_pod(&target, pod);
                    if i > 0 && (round + i) % 3 == 2 {
                        snapshot.remove_pod(&format!("p-{round}-{}", i - 1));
                    }
                }
            }
        }
    }
}
