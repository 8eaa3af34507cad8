//! NodeName: a pod that names its node (`spec.nodeName`) fits only that node.

use crate::framework::{CycleState, Filter, Fit, NodeInfo, Plugin, PodInfo, Rejection};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "NodeName";

/// Filter reason when the node is not the one the pod names.
pub const REASON_NODE_NAME_MISMATCH: &str = "node(s) didn't match the requested node name";

/// The plugin. It takes no args.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl Filter for NodeName {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        let wanted = &pod.pod.spec.node_name;
        if wanted.is_empty() || wanted == node.name() {
            Fit::Yes
        } else {
            Fit::No(Rejection::unresolvable(NAME, REASON_NODE_NAME_MISMATCH))
        }
    }

    /// The verdict reads the node's name and the pod's `spec.nodeName`.
    fn same_verdict(&self, a: &PodInfo, b: &PodInfo) -> bool {
        a.pod.spec.node_name == b.pod.spec.node_name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{Info, NodeBuilder, PodBuilder};

    #[test]
    fn filter_matches_the_requested_node_only() {
        struct Case {
            name: &'static str,
            pod_node_name: &'static str,
            node: &'static str,
            want: Fit,
        }
        let cases = [
            Case {
                name: "no node name fits anywhere",
                pod_node_name: "",
                node: "n1",
                want: Fit::Yes,
            },
            Case {
                name: "same node",
                pod_node_name: "n1",
                node: "n1",
                want: Fit::Yes,
            },
            Case {
                name: "other node",
                pod_node_name: "n2",
                node: "n1",
                want: Fit::No(Rejection::unresolvable(NAME, REASON_NODE_NAME_MISMATCH)),
            },
        ];
        for case in cases {
            let pod = PodBuilder::new("p").node_name(case.pod_node_name).info();
            let node = NodeBuilder::new(case.node).info();
            assert_eq!(
                NodeName.filter(&CycleState::new(), &pod, &node),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
