//! ResourceQuota admission for pods, as kube's quota admission plugin does it: a new pod is
//! refused when, added to what the pods in its quota's scope already use, it would pass a
//! hard limit (`pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory`, `limits.cpu`,
//! `limits.memory`, `requests.<extended>`), or when the quota limits a compute resource the
//! pod does not declare.
//!
//! Scopes: `scopeSelector` on PriorityClass (In, NotIn, Exists, DoesNotExist on the pod's
//! priorityClassName), and the `scopes` PriorityClass, BestEffort and NotBestEffort.
//! `activeDeadlineSeconds` is not modelled, so every pod is NotTerminating.
//!
//! Usage is computed from the stored pods at admission time (kube keeps it in the quota's
//! status); two pods admitted at the same instant may both pass a nearly full quota.

use std::collections::BTreeMap;

use berth_proto::model::{
    Container, Pod, ResourceList, ResourceQuota, ResourceQuotaScope, ScopeSelectorOperator,
};
use berth_proto::qos::{pod_qos, QosClass};
use berth_proto::Quantity;

use crate::framework::resources::{pod_requests, Resources, CPU, MEMORY};

/// Why a quota refuses a pod.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaError {
    /// The pod would take a tracked resource past its hard limit.
    #[error("exceeded quota: {quota}, requested: {}, used: {}, limited: {}", render(.requested), render(.used), render(.limited))]
    Exceeded {
        /// The quota's name.
        quota: String,
        /// What the pod asks for, of each exceeded resource.
        requested: BTreeMap<String, String>,
        /// What is in use already.
        used: BTreeMap<String, String>,
        /// The hard limits.
        limited: BTreeMap<String, String>,
    },
    /// The quota limits compute resources that some containers leave unspecified.
    #[error("failed quota: {quota}: must specify {}", .missing.join("; "))]
    MustSpecify {
        /// The quota's name.
        quota: String,
        /// `limits.cpu for: main,side`, one entry per resource.
        missing: Vec<String>,
    },
}

fn render(map: &BTreeMap<String, String>) -> String {
    map.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn scope_matches(scope: ResourceQuotaScope, pod: &Pod) -> bool {
    match scope {
        ResourceQuotaScope::PriorityClass => !pod.spec.priority_class_name.is_empty(),
        ResourceQuotaScope::BestEffort => pod_qos(pod) == QosClass::BestEffort,
        ResourceQuotaScope::NotBestEffort => pod_qos(pod) != QosClass::BestEffort,
        ResourceQuotaScope::Terminating => false,
        ResourceQuotaScope::NotTerminating => true,
        ResourceQuotaScope::CrossNamespacePodAffinity => has_cross_namespace_affinity(pod),
        ResourceQuotaScope::VolumeAttributesClass => false,
    }
}

fn has_cross_namespace_affinity(pod: &Pod) -> bool {
    let Some(affinity) = &pod.spec.affinity else {
        return false;
    };
    let terms = affinity
        .pod_affinity
        .iter()
        .flat_map(|a| {
            a.required_during_scheduling_ignored_during_execution
                .iter()
                .chain(
                    a.preferred_during_scheduling_ignored_during_execution
                        .iter()
                        .map(|w| &w.pod_affinity_term),
                )
        })
        .chain(affinity.pod_anti_affinity.iter().flat_map(|a| {
            a.required_during_scheduling_ignored_during_execution
                .iter()
                .chain(
                    a.preferred_during_scheduling_ignored_during_execution
                        .iter()
                        .map(|w| &w.pod_affinity_term),
                )
        }));
    terms
        .into_iter()
        .any(|t| !t.namespaces.is_empty() || t.namespace_selector.is_some())
}

/// Whether the quota counts this pod: every scope and every scopeSelector requirement
/// matches.
pub fn matches_scope(quota: &ResourceQuota, pod: &Pod) -> bool {
    let scopes_match = quota.spec.scopes.iter().all(|s| scope_matches(*s, pod));
    let selector_matches = quota.spec.scope_selector.iter().all(|sel| {
        sel.match_expressions.iter().all(|req| {
            if req.scope_name != ResourceQuotaScope::PriorityClass {
                let applies = scope_matches(req.scope_name, pod);
                return match req.operator {
                    ScopeSelectorOperator::DoesNotExist => !applies,
                    _ => applies,
                };
            }
            let class = &pod.spec.priority_class_name;
            match req.operator {
                ScopeSelectorOperator::In => req.values.contains(class),
                ScopeSelectorOperator::NotIn => !req.values.contains(class),
                ScopeSelectorOperator::Exists => !class.is_empty(),
                ScopeSelectorOperator::DoesNotExist => class.is_empty(),
            }
        })
    });
    scopes_match && selector_matches
}

/// A pod's limits as kube's `PodLimits`: the larger of the app containers' sum and any
/// init container's, plus overhead.
fn pod_limits(pod: &Pod) -> Resources {
    let of = |c: &Container| Resources::from_list(&c.resources.limits);
    let mut sum = Resources::default();
    for c in &pod.spec.containers {
        sum.add(&of(c));
    }
    for c in &pod.spec.init_containers {
        sum.max_with(&of(c));
    }
    sum.add(&Resources::from_list(&pod.spec.overhead));
    sum
}

/// What a pod uses of a quota resource, in thousandths (cpu: millicores; memory and counts:
/// units × 1000), or None when the resource is not one a pod consumes.
pub fn pod_usage(pod: &Pod, resource: &str) -> Option<i128> {
    let requests = || pod_requests(pod);
    let milli = |v: i64| i128::from(v) * 1000;
    match resource {
        "pods" | "count/pods" => Some(1000),
        "cpu" | "requests.cpu" => Some(i128::from(requests().milli_cpu)),
        "memory" | "requests.memory" => Some(milli(requests().memory)),
        "ephemeral-storage" | "requests.ephemeral-storage" => {
            Some(milli(requests().ephemeral_storage))
        }
        "limits.cpu" => Some(i128::from(pod_limits(pod).milli_cpu)),
        "limits.memory" => Some(milli(pod_limits(pod).memory)),
        other => other
            .strip_prefix("requests.")
            .filter(|name| name.contains('/') || name.starts_with("hugepages-"))
            .map(|name| milli(requests().scalar(name))),
    }
}

/// Containers that leave a compute resource the quota limits unspecified (kube's pod
/// evaluator constraints), as `limits.cpu for: main` entries.
fn missing_compute(pod: &Pod, hard: &ResourceList) -> Vec<String> {
    let mut missing = Vec::new();
    for (quota_name, resource, limits) in [
        ("requests.cpu", CPU, false),
        ("requests.memory", MEMORY, false),
        ("limits.cpu", CPU, true),
        ("limits.memory", MEMORY, true),
    ] {
        let tracked = hard.contains_key(quota_name) || (!limits && hard.contains_key(resource));
        if !tracked {
            continue;
        }
        let containers: Vec<&str> = pod
            .spec
            .containers
            .iter()
            .filter(|c| {
                let declared = c.resources.limits.contains_key(resource)
                    || (!limits && c.resources.requests.contains_key(resource));
                !declared
            })
            .map(|c| c.name.as_str())
            .collect();
        if !containers.is_empty() {
            missing.push(format!("{quota_name} for: {}", containers.join(",")));
        }
    }
    missing
}

fn quantity(millis: i128) -> String {
    Quantity::parse(&format!("{millis}m")).map_or_else(|_| format!("{millis}m"), |q| q.to_string())
}

/// Checks one quota against a new pod, given the other pods of its namespace. Pods that
/// have finished or are being deleted use nothing.
pub fn check(quota: &ResourceQuota, pod: &Pod, existing: &[&Pod]) -> Result<(), QuotaError> {
    if !matches_scope(quota, pod) {
        return Ok(());
    }
    let missing = missing_compute(pod, &quota.spec.hard);
    if !missing.is_empty() {
        return Err(QuotaError::MustSpecify {
            quota: quota.metadata.name.clone(),
            missing,
        });
    }
    let counted: Vec<&&Pod> = existing
        .iter()
        .filter(|p| p.is_active() && matches_scope(quota, p))
        .collect();
    let mut requested = BTreeMap::new();
    let mut used = BTreeMap::new();
    let mut limited = BTreeMap::new();
    for (resource, hard) in &quota.spec.hard {
        let Some(asked) = pod_usage(pod, resource) else {
            continue;
        };
        let in_use: i128 = counted.iter().filter_map(|p| pod_usage(p, resource)).sum();
        let hard_millis = i128::from(hard.millis());
        if in_use + asked > hard_millis {
            requested.insert(resource.clone(), quantity(asked));
            used.insert(resource.clone(), quantity(in_use));
            limited.insert(resource.clone(), hard.to_string());
        }
    }
    if requested.is_empty() {
        Ok(())
    } else {
        Err(QuotaError::Exceeded {
            quota: quota.metadata.name.clone(),
            requested,
            used,
            limited,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(yaml_spec: &str) -> ResourceQuota {
        serde_yaml_ng::from_str(&format!(
            "metadata: {{name: high-priority, namespace: default}}\nspec: {yaml_spec}\n"
        ))
        .expect("test quota parses")
    }

    fn pod(name: &str, class: &str, cpu: &str) -> Pod {
        let resources = if cpu.is_empty() {
            String::new()
        } else {
            format!(", resources: {{requests: {{cpu: {cpu}, memory: 1Gi}}, limits: {{cpu: {cpu}, memory: 1Gi}}}}")
        };
        let mut p: Pod = serde_yaml_ng::from_str(&format!(
            "metadata: {{name: {name}, namespace: default}}\nspec: {{containers: [{{name: main{resources}}}]}}\n"
        ))
        .expect("test pod parses");
        p.spec.priority_class_name = class.into();
        p
    }

    const HIGH: &str = "{hard: {pods: '2', cpu: '1', limits.memory: 4Gi}, scopeSelector: {matchExpressions: [{scopeName: PriorityClass, operator: In, values: [high]}]}}";

    #[test]
    fn quotas_count_pods_in_their_priority_scope() {
        struct Case {
            name: &'static str,
            quota: &'static str,
            existing: Vec<Pod>,
            pod: Pod,
            want: Result<(), &'static str>,
        }
        let cases = vec![
            Case {
                name: "within the quota",
                quota: HIGH,
                existing: vec![pod("a", "high", "500m")],
                pod: pod("b", "high", "500m"),
                want: Ok(()),
            },
            Case {
                name: "pod count exceeded",
                quota: HIGH,
                existing: vec![pod("a", "high", "100m"), pod("b", "high", "100m")],
                pod: pod("c", "high", "100m"),
                want: Err("exceeded quota: high-priority, requested: pods=1, used: pods=2, limited: pods=2"),
            },
            Case {
                name: "cpu exceeded",
                quota: HIGH,
                existing: vec![pod("a", "high", "800m")],
                pod: pod("b", "high", "300m"),
                want: Err("exceeded quota: high-priority, requested: cpu=300m, used: cpu=800m, limited: cpu=1"),
            },
            Case {
                name: "pods of other classes are not counted",
                quota: HIGH,
                existing: vec![pod("a", "low", "900m"), pod("b", "low", "900m")],
                pod: pod("c", "high", "500m"),
                want: Ok(()),
            },
            Case {
                name: "pods out of scope are not checked",
                quota: HIGH,
                existing: vec![pod("a", "high", "1"), pod("b", "high", "1")],
                pod: pod("c", "low", "1"),
                want: Ok(()),
            },
            Case {
                name: "NotIn",
                quota: "{hard: {pods: '1'}, scopeSelector: {matchExpressions: [{scopeName: PriorityClass, operator: NotIn, values: [high]}]}}",
                existing: vec![pod("a", "", "")],
                pod: pod("b", "low", ""),
                want: Err("requested: pods=1, used: pods=1, limited: pods=1"),
            },
            Case {
                name: "Exists ignores pods without a class",
                quota: "{hard: {pods: '1'}, scopeSelector: {matchExpressions: [{scopeName: PriorityClass, operator: Exists}]}}",
                existing: vec![pod("a", "", "")],
                pod: pod("b", "low", ""),
                want: Ok(()),
            },
            Case {
                name: "compute resources must be declared",
                quota: HIGH,
                existing: vec![],
                pod: pod("a", "high", ""),
                want: Err("failed quota: high-priority: must specify requests.cpu for: main; limits.memory for: main"),
            },
            Case {
                name: "finished pods use nothing",
                quota: HIGH,
                existing: {
                    let mut done = pod("a", "high", "100m");
                    done.status.phase = berth_proto::model::PodPhase::Failed;
                    vec![done, pod("b", "high", "100m")]
                },
                pod: pod("c", "high", "100m"),
                want: Ok(()),
            },
        ];
        for case in cases {
            let q = quota(case.quota);
            let existing: Vec<&Pod> = case.existing.iter().collect();
            match (check(&q, &case.pod, &existing), case.want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(want)) => {
                    assert!(e.to_string().contains(want), "{}: {e}", case.name)
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn pod_usage_reads_requests_and_limits() {
        let p = pod("a", "", "250m");
        assert_eq!(pod_usage(&p, "pods"), Some(1000));
        assert_eq!(pod_usage(&p, "requests.cpu"), Some(250));
        assert_eq!(pod_usage(&p, "cpu"), Some(250));
        assert_eq!(
            pod_usage(&p, "limits.memory"),
            Some(1024 * 1024 * 1024 * 1000)
        );
        assert_eq!(pod_usage(&p, "count/deployments.apps"), None);
        assert_eq!(quantity(1000), "1");
        assert_eq!(quantity(2 * 1024 * 1024 * 1024 * 1000), "2Gi");
    }
}
