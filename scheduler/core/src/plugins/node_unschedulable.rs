//! NodeUnschedulable: a cordoned node (`spec.unschedulable`) takes only pods that tolerate
//! the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use berth_model::model::{Taint, TaintEffect};
use berth_model::names;

use super::taint_toleration::tolerates;
use crate::framework::{CycleState, Filter, Fit, NodeInfo, Plugin, PodInfo, Rejection};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "NodeUnschedulable";

/// Filter reason for a cordoned node.
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// The taint a pod must tolerate to use a cordoned node: `node.kubernetes.io/unschedulable`
/// with no value and effect NoSchedule.
pub fn unschedulable_taint() -> Taint {
    Taint {
        key: names::TAINT_NODE_UNSCHEDULABLE.to_string(),
        value: String::new(),
        effect: TaintEffect::NoSchedule,
        time_added: None,
    }
}

/// The plugin. It takes no args.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl Filter for NodeUnschedulable {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        if !node.hot().unschedulable || tolerates(&pod.pod.spec.tolerations, &unschedulable_taint())
        {
            Fit::Yes
        } else {
            Fit::No(Rejection::unresolvable(NAME, REASON_UNSCHEDULABLE))
        }
    }

    /// The verdict reads the node's `unschedulable` and the pod's tolerations.
    fn same_verdict(&self, a: &PodInfo, b: &PodInfo) -> bool {
        a.pod.spec.tolerations == b.pod.spec.tolerations
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{
        equal_toleration, exists_toleration, Info, NodeBuilder, PodBuilder,
    };
    use berth_model::model::Toleration;

    #[test]
    fn cordoned_nodes_take_only_tolerating_pods() {
        let rejected = Fit::No(Rejection::unresolvable(NAME, REASON_UNSCHEDULABLE));
        struct Case {
            name: &'static str,
            cordoned: bool,
            tolerations: Vec<Toleration>,
            want: Fit,
        }
        let cases = vec![
            Case {
                name: "schedulable node",
                cordoned: false,
                tolerations: vec![],
                want: Fit::Yes,
            },
            Case {
                name: "cordoned node, no toleration",
                cordoned: true,
                tolerations: vec![],
                want: rejected.clone(),
            },
            Case {
                name: "exists toleration of the unschedulable taint",
                cordoned: true,
                tolerations: vec![exists_toleration(
                    names::TAINT_NODE_UNSCHEDULABLE,
                    Some(TaintEffect::NoSchedule),
                )],
                want: Fit::Yes,
            },
            Case {
                name: "equal toleration with empty value",
                cordoned: true,
                tolerations: vec![equal_toleration(names::TAINT_NODE_UNSCHEDULABLE, "", None)],
                want: Fit::Yes,
            },
            Case {
                name: "tolerate-everything toleration",
                cordoned: true,
                tolerations: vec![exists_toleration("", None)],
                want: Fit::Yes,
            },
            Case {
                name: "toleration with the wrong effect",
                cordoned: true,
                tolerations: vec![exists_toleration(
                    names::TAINT_NODE_UNSCHEDULABLE,
                    Some(TaintEffect::NoExecute),
                )],
                want: rejected.clone(),
            },
            Case {
                name: "toleration of another key",
                cordoned: true,
                tolerations: vec![exists_toleration("node.kubernetes.io/not-ready", None)],
                want: rejected,
            },
        ];
        for case in cases {
            let pod = PodBuilder::new("p").tolerations(case.tolerations).info();
            let mut node = NodeBuilder::new("n1");
            if case.cordoned {
                node = node.unschedulable();
            }
            let node = node.info();
            assert_eq!(
                NodeUnschedulable.filter(&CycleState::new(), &pod, &node),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
