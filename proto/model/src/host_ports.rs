//! Host ports: the (hostIP, protocol, hostPort) a pod takes on its node, and kube's rule for
//! when two of them conflict (`HostPortInfo.CheckConflict`). The NodePorts filter and the
//! agent's admission use this one definition.

use std::collections::BTreeMap;

use crate::model::{Container, Pod, Protocol, RestartPolicy};

/// The address a host port with no `hostIP` binds: every address of the node.
pub const BIND_ALL_HOST_IP: &str = "0.0.0.0";

/// One port a pod takes on its node, its `hostIP` defaulted to [`BIND_ALL_HOST_IP`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    /// The node address, `0.0.0.0` for all of them.
    pub ip: String,
    /// The protocol.
    pub protocol: Protocol,
    /// The port, above 0.
    pub port: i32,
}

/// The host ports of a pod, as kube's `GetHostPorts`: those of its app containers and of
/// its sidecars (init containers with `restartPolicy: Always`, which run as long as the
/// pod); ordinary init containers end before the app starts and are not counted. Ports
/// without a `hostPort` take nothing on the node.
pub fn pod_host_ports(pod: &Pod) -> Vec<HostPort> {
    let sidecars = pod
        .spec
        .init_containers
        .iter()
        .filter(|c| c.restart_policy == Some(RestartPolicy::Always));
    sidecars
        .chain(&pod.spec.containers)
        .flat_map(container_host_ports)
        .collect()
}

fn container_host_ports(c: &Container) -> impl Iterator<Item = HostPort> + '_ {
    c.ports
        .iter()
        .filter(|p| p.host_port > 0)
        .map(|p| HostPort {
            ip: if p.host_ip.is_empty() {
                BIND_ALL_HOST_IP.to_string()
            } else {
                p.host_ip.clone()
            },
            protocol: p.protocol,
            port: p.host_port,
        })
}

/// The host ports in use on a node, each with the number of pods holding it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPortUsage {
    used: BTreeMap<HostPort, u32>,
}

impl HostPortUsage {
    /// No port in use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no port is in use.
    pub fn is_empty(&self) -> bool {
        self.used.is_empty()
    }

    /// Records the ports of a pod placed on the node.
    pub fn add(&mut self, ports: &[HostPort]) {
        for p in ports {
            *self.used.entry(p.clone()).or_default() += 1;
        }
    }

    /// Forgets the ports of a pod that left the node. A port two pods hold (possible only
    /// for pods bound by `nodeName` past admission) stays in use until both have left.
    pub fn remove(&mut self, ports: &[HostPort]) {
        for p in ports {
            if let Some(n) = self.used.get_mut(p) {
                *n -= 1;
                if *n == 0 {
                    self.used.remove(p);
                }
            }
        }
    }

    /// Whether `want` conflicts with a port in use (kube's `CheckConflict`): a port bound to
    /// `0.0.0.0` conflicts with the same protocol and port on any address, and a port bound
    /// to one address conflicts with that address and with `0.0.0.0`.
    pub fn conflicts(&self, want: &HostPort) -> bool {
        if want.ip == BIND_ALL_HOST_IP {
            self.used
                .keys()
                .any(|p| p.protocol == want.protocol && p.port == want.port)
        } else {
            [BIND_ALL_HOST_IP, want.ip.as_str()].iter().any(|ip| {
                self.used.contains_key(&HostPort {
                    ip: (*ip).to_string(),
                    protocol: want.protocol,
                    port: want.port,
                })
            })
        }
    }

    /// Whether any of `wants` conflicts with a port in use (kube's `fitsPorts`, negated).
    pub fn conflicts_with_any(&self, wants: &[HostPort]) -> bool {
        wants.iter().any(|w| self.conflicts(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContainerPort;
    use crate::testing::{container, PodBuilder};

    fn hp(ip: &str, protocol: Protocol, port: i32) -> HostPort {
        HostPort {
            ip: ip.to_string(),
            protocol,
            port,
        }
    }

    #[test]
    fn conflicts_follow_kube() {
        use Protocol::*;
        // (used, wanted, conflict)
        let cases: &[(&str, &[HostPort], HostPort, bool)] = &[
            ("nothing used", &[], hp("0.0.0.0", Tcp, 80), false),
            (
                "same everything",
                &[hp("0.0.0.0", Tcp, 80)],
                hp("0.0.0.0", Tcp, 80),
                true,
            ),
            (
                "other port",
                &[hp("0.0.0.0", Tcp, 80)],
                hp("0.0.0.0", Tcp, 81),
                false,
            ),
            (
                "other protocol",
                &[hp("0.0.0.0", Tcp, 80)],
                hp("0.0.0.0", Udp, 80),
                false,
            ),
            (
                "wildcard wanted, one ip used",
                &[hp("10.0.0.1", Tcp, 80)],
                hp("0.0.0.0", Tcp, 80),
                true,
            ),
            (
                "one ip wanted, wildcard used",
                &[hp("0.0.0.0", Tcp, 80)],
                hp("10.0.0.1", Tcp, 80),
                true,
            ),
            (
                "same ip",
                &[hp("10.0.0.1", Tcp, 80)],
                hp("10.0.0.1", Tcp, 80),
                true,
            ),
            (
                "two different ips",
                &[hp("10.0.0.1", Tcp, 80)],
                hp("10.0.0.2", Tcp, 80),
                false,
            ),
            (
                "sctp against sctp",
                &[hp("10.0.0.1", Sctp, 80)],
                hp("0.0.0.0", Sctp, 80),
                true,
            ),
        ];
        for (name, used, want, conflict) in cases {
            let mut usage = HostPortUsage::new();
            usage.add(used);
            assert_eq!(usage.conflicts(want), *conflict, "{name}");
        }
    }

    #[test]
    fn usage_counts_holders() {
        let p = [hp("0.0.0.0", Protocol::Tcp, 80)];
        let mut usage = HostPortUsage::new();
        usage.add(&p);
        usage.add(&p);
        usage.remove(&p);
        assert!(usage.conflicts(&p[0]), "one holder left");
        usage.remove(&p);
        assert!(usage.is_empty());
    }

    #[test]
    fn pod_host_ports_are_app_and_sidecar_ports_with_a_host_port() {
        let port = |host_port: i32, host_ip: &str| ContainerPort {
            container_port: 8080,
            host_port,
            host_ip: host_ip.to_string(),
            ..ContainerPort::default()
        };
        let with_ports = |name: &str, ports: Vec<ContainerPort>| {
            let mut c = container(name, &[]);
            c.ports = ports;
            c
        };
        let pod = PodBuilder::new("p")
            .container(with_ports("app", vec![port(80, ""), port(0, "")]))
            .init_container(with_ports("init", vec![port(81, "")]))
            .sidecar(with_ports("sidecar", vec![port(82, "10.0.0.1")]))
            .build();
        assert_eq!(
            pod_host_ports(&pod),
            vec![
                hp("10.0.0.1", Protocol::Tcp, 82),
                hp("0.0.0.0", Protocol::Tcp, 80)
            ]
        );
    }
}
