//! A pod's quality-of-service class (kube's `qos.GetPodQOS`), used by the agent's admission,
//! the quota scopes BestEffort and NotBestEffort, and `berth describe`.

use std::collections::BTreeMap;

use crate::model::{Pod, ResourceRequirements};
use crate::resources::{CPU, MEMORY};

/// The resources QoS looks at; every other resource is ignored.
const QOS_RESOURCES: [&str; 2] = [CPU, MEMORY];

/// Quality-of-service class of a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QosClass {
    /// Every container limits cpu and memory, and the requests equal the limits.
    Guaranteed,
    /// Some cpu or memory is requested or limited, but the pod is not Guaranteed.
    Burstable,
    /// No positive cpu or memory request or limit anywhere.
    BestEffort,
}

impl QosClass {
    /// The class as written in the API (`status.qosClass`).
    pub fn as_str(&self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

impl std::fmt::Display for QosClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Positive cpu and memory quantities, summed per resource, in thousandths of a unit.
type Totals = BTreeMap<&'static str, i64>;

/// Adds `r`'s positive cpu and memory to the totals, a missing request defaulting to the
/// limit (the API server's defaulting); returns whether `r` limits both cpu and memory.
fn add(r: &ResourceRequirements, requests: &mut Totals, limits: &mut Totals) -> bool {
    let mut limits_both = true;
    for name in QOS_RESOURCES {
        let limit = r.limits.get(name).map(|q| q.millis()).filter(|m| *m > 0);
        let request = r
            .requests
            .get(name)
            .or(r.limits.get(name))
            .map(|q| q.millis())
            .filter(|m| *m > 0);
        if let Some(m) = request {
            *requests.entry(name).or_default() += m;
        }
        match limit {
            Some(m) => *limits.entry(name).or_default() += m,
            None => limits_both = false,
        }
    }
    limits_both
}

/// The pod's QoS class as Kubernetes computes it: only cpu and memory count, and only
/// positive quantities (`cpu: 0` is as good as absent). BestEffort when nothing is left;
/// Guaranteed when every container (init containers included) limits both cpu and memory
/// and the summed requests equal the summed limits; Burstable otherwise. Pod-level
/// `spec.resources` naming cpu or memory replaces the containers, as with the
/// PodLevelResources feature.
pub fn pod_qos(pod: &Pod) -> QosClass {
    let mut requests = Totals::new();
    let mut limits = Totals::new();
    let names_qos = |r: &&ResourceRequirements| {
        QOS_RESOURCES
            .iter()
            .any(|n| r.requests.contains_key(*n) || r.limits.contains_key(*n))
    };
    let limits_all = match pod.spec.resources.as_deref().filter(names_qos) {
        Some(level) => add(level, &mut requests, &mut limits),
        None => pod
            .spec
            .containers
            .iter()
            .chain(&pod.spec.init_containers)
            .fold(true, |all, c| {
                add(&c.resources, &mut requests, &mut limits) && all
            }),
    };
    if requests.is_empty() && limits.is_empty() {
        QosClass::BestEffort
    } else if limits_all && requests == limits {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ResourceRequirements;
    use crate::testing::{container_with_limits, PodBuilder};

    #[test]
    fn qos_class_like_kube() {
        struct Case {
            name: &'static str,
            pod: PodBuilder,
            want: QosClass,
        }
        let both = [("cpu", "1"), ("memory", "1Gi")];
        let cases = vec![
            Case {
                name: "nothing set",
                pod: PodBuilder::new("p").container(container_with_limits("a", &[], &[])),
                want: QosClass::BestEffort,
            },
            Case {
                name: "zero quantities count as absent",
                pod: PodBuilder::new("p").container(container_with_limits(
                    "a",
                    &[("cpu", "0"), ("memory", "0")],
                    &[("cpu", "0")],
                )),
                want: QosClass::BestEffort,
            },
            Case {
                name: "resources other than cpu and memory do not count",
                pod: PodBuilder::new("p").request("example.com/gpu", "1"),
                want: QosClass::BestEffort,
            },
            Case {
                name: "limits equal requests",
                pod: PodBuilder::new("p").container(container_with_limits("a", &both, &both)),
                want: QosClass::Guaranteed,
            },
            Case {
                name: "limits only: requests default to them",
                pod: PodBuilder::new("p").container(container_with_limits("a", &[], &both)),
                want: QosClass::Guaranteed,
            },
            Case {
                name: "requests only",
                pod: PodBuilder::new("p").cpu_millis(1000),
                want: QosClass::Burstable,
            },
            Case {
                name: "a zero request below a positive limit",
                pod: PodBuilder::new("p").container(container_with_limits(
                    "a",
                    &[("cpu", "0"), ("memory", "1Gi")],
                    &both,
                )),
                want: QosClass::Burstable,
            },
            Case {
                name: "limits on cpu only",
                pod: PodBuilder::new("p").container(container_with_limits(
                    "a",
                    &[],
                    &[("cpu", "1")],
                )),
                want: QosClass::Burstable,
            },
            Case {
                name: "requests below limits",
                pod: PodBuilder::new("p").container(container_with_limits(
                    "a",
                    &[("cpu", "500m"), ("memory", "1Gi")],
                    &both,
                )),
                want: QosClass::Burstable,
            },
            Case {
                name: "one guaranteed container beside a best-effort one",
                pod: PodBuilder::new("p")
                    .container(container_with_limits("a", &both, &both))
                    .container(container_with_limits("b", &[], &[])),
                want: QosClass::Burstable,
            },
            Case {
                name: "init containers count",
                pod: PodBuilder::new("p")
                    .container(container_with_limits("a", &both, &both))
                    .init_container(container_with_limits("i", &[("cpu", "1")], &[])),
                want: QosClass::Burstable,
            },
            Case {
                name: "pod-level limits replace the containers",
                pod: PodBuilder::new("p")
                    .container(container_with_limits("a", &[("cpu", "1")], &[]))
                    .pod_resources(ResourceRequirements {
                        limits: container_with_limits("", &[], &both).resources.limits,
                        ..ResourceRequirements::default()
                    }),
                want: QosClass::Guaranteed,
            },
        ];
        for case in cases {
            assert_eq!(pod_qos(&case.pod.build()), case.want, "{}", case.name);
        }
    }
}
