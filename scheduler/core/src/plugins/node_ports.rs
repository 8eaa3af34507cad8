//! NodePorts: a pod may not go to a node where one of its host ports (hostIP, protocol,
//! hostPort) is already taken, a `0.0.0.0` (or empty) hostIP taking the port on every
//! address. Pods count whether bound, assumed or nominated: the node's used ports are kept
//! in [`NodeInfo::used_ports`], which the cycle, preemption and the nominated-pods pass all
//! update as they place and remove pods.
//!
//! kube's PreFilter only gathers the pod's host ports (and skips the Filter for a pod with
//! none); Berth gathers them once per pod in [`PodInfo::host_ports`], so this is a Filter
//! only. The rejection is Unschedulable, as kube's: evicting the pod that holds the port
//! frees it, so preemption may help.

use crate::framework::{CycleState, Filter, Fit, NodeInfo, Plugin, PodInfo, Rejection};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "NodePorts";

/// kube's Filter reason (`ErrReason`).
pub const REASON_PORTS_TAKEN: &str = "node(s) didn't have free ports for the requested pod ports";

/// The plugin. It takes no args.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodePorts;

impl NodePorts {
    /// Whether the pod's host ports are all free on the node (kube's `nodeports.Fits`).
    pub fn fits(pod: &PodInfo, node: &NodeInfo) -> bool {
        pod.host_ports.is_empty() || !node.used_ports.conflicts_with_any(&pod.host_ports)
    }
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl Filter for NodePorts {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        if Self::fits(pod, node) {
            Fit::Yes
        } else {
            Fit::No(Rejection::unschedulable(NAME, REASON_PORTS_TAKEN))
        }
    }

    /// The verdict reads the node's used ports and the pod's host ports.
    fn same_verdict(&self, a: &PodInfo, b: &PodInfo) -> bool {
        a.host_ports == b.host_ports
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{
        filter_verdicts, snapshot, Info, NodeBuilder, PodBuilder, Verdict,
    };
    use berth_model::model::Protocol::{self, Sctp, Tcp, Udp};

    /// A pod taking each `(port, protocol, hostIP)`.
    fn pod(name: &str, ports: &[(i32, Protocol, &str)]) -> PodBuilder {
        ports
            .iter()
            .fold(PodBuilder::new(name), |p, (port, protocol, ip)| {
                p.host_port(*port, *protocol, ip)
            })
    }

    #[test]
    fn host_port_conflicts_follow_kube() {
        const TAKEN: Verdict = Some((REASON_PORTS_TAKEN, Code::Unschedulable));
        // (case, the new pod's ports, the ports of the pods on the node, verdict), after
        // kube's node_ports_test.go.
        type Ports = &'static [(i32, Protocol, &'static str)];
        let cases: &[(&str, Ports, &[Ports], Verdict)] = &[
            ("no ports", &[], &[&[(8080, Tcp, "")]], None),
            ("free port", &[(8080, Tcp, "")], &[&[(9090, Tcp, "")]], None),
            (
                "same port, protocol and address",
                &[(8080, Udp, "127.0.0.1")],
                &[&[(8080, Udp, "127.0.0.1")]],
                TAKEN,
            ),
            (
                "same port, other protocol",
                &[(8080, Udp, "127.0.0.1")],
                &[&[(8080, Tcp, "127.0.0.1")]],
                None,
            ),
            (
                "same port and protocol, other address",
                &[(8080, Tcp, "127.0.0.1")],
                &[&[(8080, Tcp, "127.0.0.2")]],
                None,
            ),
            (
                "one of several ports taken",
                &[(8080, Tcp, "127.0.0.1"), (8081, Tcp, "127.0.0.1")],
                &[&[(8081, Tcp, "127.0.0.1")]],
                TAKEN,
            ),
            (
                "wildcard wanted, one address taken",
                &[(8080, Tcp, "0.0.0.0")],
                &[&[(8080, Tcp, "127.0.0.1")]],
                TAKEN,
            ),
            (
                "one address wanted, wildcard taken",
                &[(8080, Tcp, "127.0.0.1")],
                &[&[(8080, Tcp, "")]],
                TAKEN,
            ),
            (
                "empty hostIP is the wildcard",
                &[(8080, Tcp, "")],
                &[&[(8080, Tcp, "10.0.0.9")]],
                TAKEN,
            ),
            (
                "wildcard, other protocol",
                &[(8080, Udp, "")],
                &[&[(8080, Tcp, "")]],
                None,
            ),
            (
                "sctp",
                &[(8080, Sctp, "")],
                &[&[(8080, Sctp, "127.0.0.1")]],
                TAKEN,
            ),
            (
                "taken by the second pod of the node",
                &[(8080, Tcp, "")],
                &[&[(80, Tcp, "")], &[(8080, Tcp, "")]],
                TAKEN,
            ),
        ];
        for (name, wanted, existing, want) in cases {
            let node = existing
                .iter()
                .enumerate()
                .fold(NodeBuilder::new("n1"), |n, (i, ports)| {
                    n.with_pod(pod(&format!("existing-{i}"), ports))
                })
                .info();
            let snap = snapshot(&[node]);
            let got = filter_verdicts(
                &NodePorts,
                &CycleState::new(),
                &pod("new", wanted).info(),
                &snap,
                &[REASON_PORTS_TAKEN],
            );
            assert_eq!(got, vec![*want], "{name}");
        }
    }

    #[test]
    fn ports_of_sidecars_count_and_of_init_containers_do_not() {
        let holder = |sidecar: bool| {
            let mut c = berth_model::testing::container("helper", &[]);
            c.ports = pod("x", &[(8080, Tcp, "")]).build().spec.containers[0]
                .ports
                .clone();
            let p =
                PodBuilder::new("existing").container(berth_model::testing::container("app", &[]));
            if sidecar {
                p.sidecar(c)
            } else {
                p.init_container(c)
            }
        };
        for (sidecar, want) in [(true, false), (false, true)] {
            let node = NodeBuilder::new("n1").with_pod(holder(sidecar)).info();
            let new = pod("new", &[(8080, Tcp, "")]).info();
            assert_eq!(NodePorts::fits(&new, &node), want, "sidecar: {sidecar}");
        }
    }

    #[test]
    fn removing_the_holder_frees_the_port() {
        let mut node = NodeBuilder::new("n1")
            .with_pod(pod("holder", &[(8080, Tcp, "")]))
            .info();
        let new = pod("new", &[(8080, Tcp, "")]).info();
        assert!(!NodePorts::fits(&new, &node));
        node.remove_pod("default-holder").expect("placed");
        assert!(NodePorts::fits(&new, &node));
    }
}
