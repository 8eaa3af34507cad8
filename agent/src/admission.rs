//! Node-side admission, as kubelet does it: a pod bound to this node (by the scheduler, or
//! directly through `spec.nodeName`) must fit next to the pods already admitted, and the
//! node must not be under a pressure that refuses it, and its host ports must be free. A
//! refused pod ends Failed with kubelet's reason (`OutOfcpu`, `OutOfmemory`, `OutOfpods`,
//! `NodePorts`, `Evicted`) and message.

use std::collections::BTreeSet;

use berth_proto::host_ports::{pod_host_ports, HostPortUsage};
use berth_proto::model::{Container, Pod};
use berth_proto::names;
use berth_proto::qos::{pod_qos, QosClass};
use berth_proto::Quantity;

use crate::eviction::Signal;

/// What a node offers to pods: its allocatable cpu, memory and pod count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocatable {
    /// CPU, in millicores.
    pub cpu_millis: i64,
    /// Memory, in bytes.
    pub memory_bytes: i64,
    /// Pods.
    pub pods: i64,
}

/// The part of a pod's effective request that node admission and eviction look at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// CPU, in millicores.
    pub cpu_millis: i64,
    /// Memory, in bytes.
    pub memory_bytes: i64,
    /// Ephemeral storage, in bytes.
    pub ephemeral_storage_bytes: i64,
}

impl Requests {
    fn add(&mut self, other: Requests) {
        self.cpu_millis += other.cpu_millis;
        self.memory_bytes += other.memory_bytes;
        self.ephemeral_storage_bytes += other.ephemeral_storage_bytes;
    }
}

/// A container's request for `resource`, its limit standing in when the request is left
/// out (the API's defaulting); zero when neither is set.
pub fn container_request(container: &Container, resource: &str) -> Quantity {
    container
        .resources
        .requests
        .get(resource)
        .or_else(|| container.resources.limits.get(resource))
        .copied()
        .unwrap_or_default()
}

/// A pod's effective request as Kubernetes computes it (the app containers and the
/// sidecars together, or what an init container needs beside the sidecars started before
/// it if that is more, then pod-level resources for what they name, plus the overhead):
/// the scheduler's own rules, [`berth_proto::resources::pod_requests`], read for the
/// resources the node checks.
pub fn pod_requests(pod: &Pod) -> Requests {
    let r = berth_proto::resources::pod_requests(pod);
    Requests {
        cpu_millis: r.milli_cpu,
        memory_bytes: r.memory,
        ephemeral_storage_bytes: r.ephemeral_storage,
    }
}

/// Why a pod was refused: the status reason and message kubelet gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// `OutOfcpu`, `OutOfmemory`, `OutOfpods`, `NodePorts` or `Evicted`.
    pub reason: String,
    /// Kubelet's message, e.g. `Pod was rejected: Node didn't have enough resource: cpu,
    /// requested: 3000, used: 2000, capacity: 4000`.
    pub message: String,
}

fn out_of(resource: &str, requested: i64, used: i64, capacity: i64) -> Rejection {
    Rejection {
        reason: format!("OutOf{resource}"),
        message: format!(
            "Pod was rejected: Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, capacity: {capacity}"
        ),
    }
}

/// Kubelet's reason for a pod whose host ports are taken: the scheduler plugin's name.
pub const REASON_NODE_PORTS: &str = "NodePorts";

/// Kubelet's refusal of a pod whose host ports conflict with an admitted pod's (its
/// `PredicateFailureError` for the NodePorts predicate).
fn ports_taken() -> Rejection {
    Rejection {
        reason: REASON_NODE_PORTS.to_string(),
        message: format!(
            "Pod was rejected: Predicate {REASON_NODE_PORTS} failed: node(s) didn't have free ports for the requested pod ports"
        ),
    }
}

/// Decides whether `pod` may run beside `admitted` (the active pods of this node), on a node
/// offering `allocatable` and under the `pressure` it reports. As kubelet: under memory
/// pressure only BestEffort pods are refused; under disk or pid pressure every pod is; then
/// the pod count, cpu and memory must fit (cpu in millicores and memory in bytes in the
/// message), and then its host ports must be free (kube's `AdmissionCheck` order).
pub fn admit(
    pod: &Pod,
    admitted: &[&Pod],
    allocatable: Allocatable,
    pressure: &BTreeSet<Signal>,
) -> Result<(), Rejection> {
    let refusing: Vec<&str> = pressure
        .iter()
        .filter(|s| **s != Signal::MemoryAvailable || pod_qos(pod) == QosClass::BestEffort)
        .map(|s| s.condition())
        .collect();
    if !refusing.is_empty() {
        return Err(Rejection {
            reason: names::REASON_EVICTED.to_string(),
            message: format!(
                "Pod was rejected: The node had condition: [{}]. ",
                refusing.join(", ")
            )
            .trim_end()
            .to_string(),
        });
    }
    let want = pod_requests(pod);
    let mut used = Requests::default();
    for other in admitted {
        used.add(pod_requests(other));
    }
    // Kubelet's order: pods first, then cpu and memory; a resource the pod does not request
    // never refuses it.
    let Allocatable {
        cpu_millis,
        memory_bytes,
        pods,
    } = allocatable;
    let needs = [
        ("pods", 1, admitted.len() as i64, pods),
        ("cpu", want.cpu_millis, used.cpu_millis, cpu_millis),
        ("memory", want.memory_bytes, used.memory_bytes, memory_bytes),
    ];
    for (resource, requested, used, capacity) in needs {
        if requested > 0 && used + requested > capacity {
            return Err(out_of(resource, requested, used, capacity));
        }
    }
    let wanted = pod_host_ports(pod);
    if !wanted.is_empty() {
        let mut in_use = HostPortUsage::new();
        for other in admitted {
            in_use.add(&pod_host_ports(other));
        }
        if in_use.conflicts_with_any(&wanted) {
            return Err(ports_taken());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{container, container_with_limits, PodBuilder};
    use berth_proto::model::ContainerPort;

    /// A pod with one container requesting the given cpu and memory.
    fn pod(name: &str, cpu: Option<&str>, memory: Option<&str>) -> Pod {
        let requests: Vec<(&str, &str)> = [("cpu", cpu), ("memory", memory)]
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        PodBuilder::new(name)
            .container(container("main", &requests))
            .build()
    }

    /// `pod` with a TCP host port on `ip` (empty: every address).
    fn with_port(mut pod: Pod, port: i32, ip: &str) -> Pod {
        pod.spec.containers[0].ports.push(ContainerPort {
            container_port: port,
            host_port: port,
            host_ip: ip.to_string(),
            ..ContainerPort::default()
        });
        pod
    }

    #[test]
    fn out_of_resources_like_kubelet() {
        struct Case {
            name: &'static str,
            pod: Pod,
            admitted: Vec<Pod>,
            pressure: Vec<Signal>,
            want: Result<(), (&'static str, &'static str)>,
        }
        let node = Allocatable {
            cpu_millis: 4000,
            memory_bytes: 1 << 30,
            pods: 3,
        };
        let mut cases = vec![
            Case {
                name: "fits",
                pod: pod("p", Some("2"), Some("512Mi")),
                admitted: vec![pod("a", Some("2"), Some("512Mi"))],
                pressure: vec![],
                want: Ok(()),
            },
            Case {
                name: "cpu",
                pod: pod("p", Some("3"), None),
                admitted: vec![pod("a", Some("2"), None)],
                pressure: vec![],
                want: Err((
                    "OutOfcpu",
                    "Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000",
                )),
            },
            Case {
                name: "memory",
                pod: pod("p", None, Some("768Mi")),
                admitted: vec![pod("a", None, Some("512Mi"))],
                pressure: vec![],
                want: Err((
                    "OutOfmemory",
                    "Pod was rejected: Node didn't have enough resource: memory, requested: 805306368, used: 536870912, capacity: 1073741824",
                )),
            },
            Case {
                name: "pods, even with no requests",
                pod: pod("p", None, None),
                admitted: vec![pod("a", None, None), pod("b", None, None), pod("c", None, None)],
                pressure: vec![],
                want: Err((
                    "OutOfpods",
                    "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
                )),
            },
            Case {
                name: "a host port another pod holds",
                pod: with_port(pod("p", None, None), 8080, ""),
                admitted: vec![with_port(pod("a", None, None), 8080, "10.0.0.1")],
                pressure: vec![],
                want: Err((
                    "NodePorts",
                    "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
                )),
            },
            Case {
                name: "resources are checked before ports",
                pod: with_port(pod("p", Some("3"), None), 8080, ""),
                admitted: vec![with_port(pod("a", Some("2"), None), 8080, "")],
                pressure: vec![],
                want: Err((
                    "OutOfcpu",
                    "Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000",
                )),
            },
            Case {
                name: "a host port on another address is free",
                pod: with_port(pod("p", None, None), 8080, "10.0.0.2"),
                admitted: vec![with_port(pod("a", None, None), 8080, "10.0.0.1")],
                pressure: vec![],
                want: Ok(()),
            },
            Case {
                name: "an exact fit passes",
                pod: pod("p", Some("1"), None),
                admitted: vec![pod("a", Some("3"), None)],
                pressure: vec![],
                want: Ok(()),
            },
        ];
        let memory_pressure = Err((
            "Evicted",
            "Pod was rejected: The node had condition: [MemoryPressure].",
        ));
        let disk_pressure = Err((
            "Evicted",
            "Pod was rejected: The node had condition: [DiskPressure].",
        ));
        // Pressure alone, on an empty node: (name, the pod's cpu request, signal, want).
        let under_pressure = [
            (
                "memory pressure refuses BestEffort",
                None,
                Signal::MemoryAvailable,
                memory_pressure,
            ),
            (
                "memory pressure refuses a pod whose only request is zero (still BestEffort)",
                Some("0"),
                Signal::MemoryAvailable,
                memory_pressure,
            ),
            (
                "memory pressure admits a pod with requests",
                Some("100m"),
                Signal::MemoryAvailable,
                Ok(()),
            ),
            (
                "disk pressure refuses every pod",
                Some("100m"),
                Signal::NodeFsAvailable,
                disk_pressure,
            ),
        ];
        cases.extend(under_pressure.map(|(name, cpu, signal, want)| Case {
            name,
            pod: pod("p", cpu, None),
            admitted: vec![],
            pressure: vec![signal],
            want,
        }));
        for case in cases {
            let admitted: Vec<&Pod> = case.admitted.iter().collect();
            let pressure: BTreeSet<Signal> = case.pressure.iter().copied().collect();
            let got = admit(&case.pod, &admitted, node, &pressure);
            let got = got.map_err(|r| (r.reason, r.message));
            let want = case.want.map_err(|(r, m)| (r.to_string(), m.to_string()));
            assert_eq!(got, want, "{}", case.name);
        }
    }

    #[test]
    fn effective_requests() {
        struct Case {
            name: &'static str,
            pod: Pod,
            want_cpu: i64,
        }
        let with_init = PodBuilder::new("p")
            .cpu_millis(500)
            .init_container(container("i", &[("cpu", "2")]))
            .build();
        let with_limit_only = PodBuilder::new("p")
            .container(container_with_limits("main", &[], &[("cpu", "750m")]))
            .build();
        let with_overhead = PodBuilder::new("p")
            .cpu_millis(1000)
            .overhead("cpu", "250m")
            .build();
        let cases = vec![
            Case {
                name: "init container larger than the app",
                pod: with_init,
                want_cpu: 2000,
            },
            Case {
                name: "limit stands in for the request",
                pod: with_limit_only,
                want_cpu: 750,
            },
            Case {
                name: "overhead added",
                pod: with_overhead,
                want_cpu: 1250,
            },
        ];
        for case in cases {
            assert_eq!(
                pod_requests(&case.pod).cpu_millis,
                case.want_cpu,
                "{}",
                case.name
            );
        }
    }
}
