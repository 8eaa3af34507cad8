//! Running the Filter plugins on a node, with the room that nominated pods hold there
//! counted first (kube's `RunFilterPluginsWithNominatedPods`): the cycle's filter stage, its
//! nominated-node check and preemption's victim search all filter through here.

use std::sync::Arc;

use super::hash::FastHashMap;
use super::{CycleState, Filter, Fit, NodeInfo, PodInfo, PreFilter, Rejection, Snapshot};

/// Pods nominated to nodes, by node name: the nominator's book, shared (copy-on-write) with
/// the cycles that read it.
pub type NominationsByNode = FastHashMap<String, Vec<Arc<PodInfo>>>;

/// The pods nominated to each node that the pod of this cycle must make room for: those of
/// equal or higher priority, the pod itself excepted. Kept in the [`CycleState`] (as
/// `Arc<NominatedPods>`) so that every stage of the cycle, preemption included, sees it.
/// It shares the nominator's book and filters it per node, so building it costs nothing.
#[derive(Clone, Debug)]
pub struct NominatedPods {
    by_node: Arc<NominationsByNode>,
    /// The priority of the cycle's pod: nominated pods below it do not count.
    priority: i32,
    /// The cycle's pod, which never counts itself.
    uid: String,
}

impl NominatedPods {
    /// What the cycle of `pod` counts of `by_node`.
    pub fn new(by_node: Arc<NominationsByNode>, pod: &PodInfo) -> Self {
        NominatedPods {
            by_node,
            priority: pod.priority,
            uid: pod.uid().to_string(),
        }
    }

    /// The pods nominated to `node` that count.
    pub fn on<'a>(&'a self, node: &str) -> impl Iterator<Item = &'a Arc<PodInfo>> + 'a {
        self.by_node
            .get(node)
            .into_iter()
            .flatten()
            .filter(|p| p.priority >= self.priority && p.uid() != self.uid)
    }

    /// The nominated pods of `state`'s cycle, if the cycle has any.
    pub fn of(state: &CycleState) -> Option<&NominatedPods> {
        state.get::<Arc<NominatedPods>>().map(|n| &**n)
    }

    /// Whether any node holds a nominated pod that counts.
    pub fn is_empty(&self) -> bool {
        self.by_node
            .keys()
            .all(|node| self.on(node).next().is_none())
    }
}

/// kube's RunFilterPlugins: the first filter that rejects decides the node's verdict.
/// Allocates nothing when the node fits.
pub fn run_filters(
    filters: &[Arc<dyn Filter>],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Option<Rejection> {
    for filter in filters {
        if let Fit::No(mut rejection) = filter.filter(state, pod, node) {
            rejection.plugin = filter.name();
            return Some(rejection);
        }
    }
    None
}

/// kube's RunFilterPluginsWithNominatedPods. When pods of equal or higher priority are
/// nominated to `node` (`nominated`, the [`NominatedPods`] of the cycle's state, which a
/// filter pass looks up once with [`NominatedPods::of`], not once per node), the filters run
/// twice: first on a copy of the node with those pods added (and the PreFilter state told of
/// them through [`PreFilter::add_pod`]), then on the node as it is; the node passes only if
/// both pass. The first pass keeps the room a preemption freed for its preemptor; the second
/// keeps a nominated pod that the incoming pod needs (inter-pod affinity) from counting as if
/// it were already running.
pub fn run_filters_with_nominated_pods(
    nominated: Option<&NominatedPods>,
    filters: &[Arc<dyn Filter>],
    pre_filters: &[Arc<dyn PreFilter>],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    snapshot: &Snapshot,
) -> Option<Rejection> {
    let Some(nominated) = nominated else {
        return run_filters(filters, state, pod, node);
    };
    if nominated.on(node.name()).next().is_none() {
        return run_filters(filters, state, pod, node);
    }
    let mut with_nominated = node.clone();
    let mut nominated_state = state.clone();
    for added in nominated.on(node.name()) {
        with_nominated.add_pod(added.clone());
        for plugin in pre_filters {
            plugin.add_pod(&mut nominated_state, pod, added, &with_nominated, snapshot);
        }
    }
    run_filters(filters, &nominated_state, pod, &with_nominated)
        .or_else(|| run_filters(filters, state, pod, node))
}
