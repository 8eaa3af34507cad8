//! Test fixtures shared by the plugin and cycle tests: berth-model's builders, turned into
//! what plugins see ([`PodInfo`], [`NodeInfo`], [`Snapshot`]), and shared table runners.

// Shared by every plugin's tests; no single test module uses every helper.
#![allow(dead_code)]

use std::sync::Arc;

pub(crate) use berth_model::testing::{
    container, equal_toleration, exists_toleration, NodeBuilder, PodBuilder,
};

use berth_model::names;

use super::{parse_args, InvalidArgs, RegistryError};
use crate::framework::{
    Code, CycleState, Filter, Fit, NodeInfo, PluginError, PodInfo, PreScore, PreScoreInput, Score,
    Snapshot,
};

/// Turns a builder into what plugins see.
pub(crate) trait Info {
    /// The framework's view of the built object.
    type Out;
    /// Builds the object and wraps it for plugins.
    fn info(self) -> Self::Out;
}

impl Info for PodBuilder {
    type Out = PodInfo;
    fn info(self) -> PodInfo {
        PodInfo::new(Arc::new(self.build()))
    }
}

impl Info for NodeBuilder {
    type Out = NodeInfo;
    /// The node with its pods accounted for.
    fn info(self) -> NodeInfo {
        let (node, pods) = self.build_with_pods();
        let mut info = NodeInfo::new(Arc::new(node));
        for p in pods {
            info.add_pod(Arc::new(PodInfo::new(Arc::new(p))));
        }
        info
    }
}

/// A snapshot holding these nodes and their pods.
pub(crate) fn snapshot(nodes: &[NodeInfo]) -> Snapshot {
    let mut snap = Snapshot::new();
    for n in nodes {
        snap.upsert_node(n.node.clone());
        for p in &n.pods {
            snap.add_pod(n.name(), p.clone());
        }
    }
    snap
}

/// A node with a hostname label and, if given, a zone label.
pub(crate) fn zoned(name: &str, zone: Option<&str>) -> NodeBuilder {
    let n = NodeBuilder::new(name).label(names::LABEL_HOSTNAME, name);
    match zone {
        Some(z) => n.label(names::LABEL_TOPOLOGY_ZONE, z),
        None => n,
    }
}

/// A snapshot of `nodes`, with each `(node name, pod)` of `existing` bound to that node.
pub(crate) fn snapshot_with(nodes: &[NodeBuilder], existing: &[(&str, PodBuilder)]) -> Snapshot {
    let mut snap = Snapshot::new();
    for n in nodes {
        snap.upsert_node(Arc::new(n.clone().build()));
    }
    for (node_name, p) in existing {
        let pod = p.clone().node_name(node_name).info();
        assert!(
            snap.add_pod(node_name, Arc::new(pod)),
            "unknown node {node_name}"
        );
    }
    snap
}

/// A filter's verdict on one node: `None` when it fits, else its one reason and its code.
pub(crate) type Verdict = Option<(&'static str, Code)>;

/// The filter's verdict on every node of the snapshot, in order. Every rejection must come
/// from the plugin itself and carry exactly one reason, one of `known`.
pub(crate) fn filter_verdicts<F: Filter>(
    plugin: &F,
    state: &CycleState,
    pod: &PodInfo,
    snap: &Snapshot,
    known: &[&'static str],
) -> Vec<Verdict> {
    snap.nodes()
        .iter()
        .map(|n| match plugin.filter(state, pod, n) {
            Fit::Yes => None,
            Fit::No(r) => {
                assert_eq!(r.plugin, plugin.name());
                assert_eq!(r.reasons.len(), 1);
                let reason = known
                    .iter()
                    .find(|s| r.reasons[0] == **s)
                    .expect("a known reason");
                Some((*reason, r.code))
            }
        })
        .collect()
}

/// Test YAML for a plugin's args: `""` stands for no args at all.
fn args_value(yaml: &str) -> Option<serde_yaml_ng::Value> {
    (!yaml.is_empty()).then(|| serde_yaml_ng::from_str(yaml).expect("test yaml parses"))
}

/// Checks an outcome against the expected error text (`None`: success expected).
fn check_outcome<T, E: std::fmt::Display>(name: &str, got: Result<T, E>, want_err: Option<&str>) {
    match (got, want_err) {
        (Ok(_), None) => {}
        (Err(e), Some(want)) => assert!(
            e.to_string().contains(want),
            "{name}: error {e} should contain {want:?}"
        ),
        (Ok(_), Some(want)) => panic!("{name}: accepted, want {want:?}"),
        (Err(e), None) => panic!("{name}: unexpected error {e}"),
    }
}

/// One row of a plugin's args table: YAML in, and the error text expected (or none).
pub(crate) struct ArgsCase {
    /// What the row checks.
    pub(crate) name: &'static str,
    /// The plugin's args as written in a KubeSchedulerConfiguration (`""`: none).
    pub(crate) yaml: &'static str,
    /// A piece of the expected error, or `None` when the registry accepts the args.
    pub(crate) want_err: Option<&'static str>,
}

/// Builds plugin `plugin` through the registry from each row's args and checks acceptance
/// or the error text.
pub(crate) fn check_args(plugin: &str, cases: &[ArgsCase]) {
    for case in cases {
        let built = super::build(plugin, args_value(case.yaml).as_ref());
        check_outcome(case.name, built, case.want_err);
    }
}

/// One row of a typed args table: YAML in, and the parsed args or a piece of the error.
pub(crate) struct TypedArgsCase<A> {
    /// What the row checks.
    pub(crate) name: &'static str,
    /// The plugin's args as written in a KubeSchedulerConfiguration (`""`: none).
    pub(crate) yaml: &'static str,
    /// The args after parsing, or a piece of the parse or validation error.
    pub(crate) want: Result<A, &'static str>,
}

/// Parses each row's args as `A`, validates them with `validate` (the plugin's `try_new`),
/// and checks the result; the registry must accept exactly the rows that succeed.
pub(crate) fn check_typed_args<A, P>(
    plugin: &'static str,
    validate: impl Fn(A) -> Result<P, InvalidArgs>,
    cases: Vec<TypedArgsCase<A>>,
) where
    A: serde::de::DeserializeOwned + Default + Clone + PartialEq + std::fmt::Debug,
{
    for case in cases {
        let value = args_value(case.yaml);
        let got = parse_args::<A>(plugin, value.as_ref()).and_then(|args| {
            validate(args.clone())
                .map(|_| args)
                .map_err(|e| RegistryError::InvalidArgs {
                    plugin,
                    message: e.to_string(),
                })
        });
        match (got, &case.want) {
            (Ok(got), Ok(want)) => assert_eq!(&got, want, "{}", case.name),
            (got, want) => check_outcome(case.name, got, want.as_ref().err().copied()),
        }
        let registry = super::build(plugin, value.as_ref());
        assert_eq!(
            registry.is_ok(),
            case.want.is_ok(),
            "{}: the registry agrees",
            case.name
        );
    }
}

/// Runs `plugin`'s PreScore over `feasible`, then scores each of them: the raw scores and,
/// after `normalize`, the final ones, in `feasible`'s order. Checks that
/// [`Score::score_nodes`] gives the same raw scores as [`Score::score`] node by node.
pub(crate) fn scores<P: PreScore + Score>(
    plugin: &P,
    pod: &PodInfo,
    snap: &Snapshot,
    feasible: &[&NodeInfo],
) -> Result<(Vec<i64>, Vec<i64>), PluginError> {
    let mut state = CycleState::new();
    let input = PreScoreInput {
        pod,
        snapshot: snap,
        feasible,
    };
    plugin.pre_score(&mut state, &input)?;
    let raw: Vec<i64> = feasible
        .iter()
        .map(|n| plugin.score(&state, pod, n))
        .collect();
    // The cycle scores a slice of nodes at a time: it must give what one node at a time gives.
    let mut batch = vec![i64::MIN; feasible.len()];
    plugin.score_nodes(&state, pod, feasible, &mut batch);
    assert_eq!(batch, raw, "score_nodes differs from score per node");
    let mut normalized = raw.clone();
    plugin.normalize(&state, pod, &mut normalized);
    Ok((raw, normalized))
}

/// Checks the score of `node` for `pod` after PreScore against `want`; the score must be the
/// same without PreScore's state (the plugin then computes what it needs itself).
pub(crate) fn check_score<P: PreScore + Score>(
    name: &str,
    plugin: &P,
    pod: PodBuilder,
    node: NodeBuilder,
    want: i64,
) {
    let (pod, node) = (pod.info(), node.info());
    let (raw, _) = scores(plugin, &pod, &Snapshot::new(), &[&node]).expect("pre_score never fails");
    assert_eq!(raw[0], want, "{name}");
    assert_eq!(
        plugin.score(&CycleState::new(), &pod, &node),
        want,
        "{name}: without PreScore state"
    );
}

/// A snapshot of `nodes` (without pods) whose DRA state holds these objects.
pub(crate) fn dra_snapshot(
    nodes: &[NodeBuilder],
    classes: &[berth_model::model::DeviceClass],
    slices: &[berth_model::model::ResourceSlice],
    claims: &[berth_model::model::ResourceClaim],
) -> Snapshot {
    use crate::dra::convert;
    let mut snap = Snapshot::new();
    for n in nodes {
        snap.upsert_node(Arc::new(n.clone().build()));
    }
    let dra = snap.dra_mut();
    for c in classes {
        dra.upsert_class(convert::class(c));
    }
    for s in slices {
        dra.upsert_slice(convert::slice(s));
    }
    for c in claims {
        dra.upsert_claim(convert::claim(c));
    }
    snap
}
