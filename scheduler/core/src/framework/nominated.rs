//! Running the Filter plugins on a node, with the room that nominated pods hold there
//! counted first (kube's `RunFilterPluginsWithNominatedPods`): the cycle's filter stage, its
//! nominated-node check and preemption's victim search all filter through here.

use std::collections::HashMap;
use std::sync::Arc;

use super::{CycleState, Filter, Fit, NodeInfo, PodInfo, PreFilter, Rejection, Snapshot};

/// The pods nominated to each node that the pod of this cycle must make room for: those of
/// equal or higher priority, the pod itself excepted. Kept in the [`CycleState`] (as
/// `Arc<NominatedPods>`) so that every stage of the cycle, preemption included, sees it.
#[derive(Clone, Debug, Default)]
pub struct NominatedPods {
    by_node: HashMap<String, Vec<Arc<PodInfo>>>,
}

impl NominatedPods {
    /// The nominated pods, grouped by node name.
    pub fn new(by_node: HashMap<String, Vec<Arc<PodInfo>>>) -> Self {
        NominatedPods { by_node }
    }

    /// The pods nominated to `node` (none when the node holds no nomination).
    pub fn on(&self, node: &str) -> &[Arc<PodInfo>] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// Whether no node holds a nomination.
    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
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
/// nominated to `node` (see [`NominatedPods`] in `state`), the filters run twice: first on a
/// copy of the node with those pods added (and the PreFilter state told of them through
/// [`PreFilter::add_pod`]), then on the node as it is; the node passes only if both pass.
/// The first pass keeps the room a preemption freed for its preemptor; the second keeps a
/// nominated pod that the incoming pod needs (inter-pod affinity) from counting as if it
/// were already running.
pub fn run_filters_with_nominated_pods(
    filters: &[Arc<dyn Filter>],
    pre_filters: &[Arc<dyn PreFilter>],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    snapshot: &Snapshot,
) -> Option<Rejection> {
    let nominated = state
        .get::<Arc<NominatedPods>>()
        .map_or(&[][..], |n| n.on(node.name()));
    if nominated.is_empty() {
        return run_filters(filters, state, pod, node);
    }
    let mut with_nominated = node.clone();
    let mut nominated_state = state.clone();
    for added in nominated {
        with_nominated.add_pod(added.clone());
        for plugin in pre_filters {
            plugin.add_pod(&mut nominated_state, pod, added, &with_nominated, snapshot);
        }
    }
    run_filters(filters, &nominated_state, pod, &with_nominated)
        .or_else(|| run_filters(filters, state, pod, node))
}
