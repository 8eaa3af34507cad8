//! PodDisruptionBudgets in `berth sim`: each budget's `disruptionsAllowed`, counted with the
//! disruption controller's arithmetic ([`crate::disruption`]) and kept current as pods are
//! bound and evicted, so that preemption prefers victims whose eviction breaks no budget.
//!
//! - healthy: pods bound to a node, in the budget's namespace, matching its selector, and
//!   not terminating (bound pods count as ready: nothing in the simulation fails);
//! - expected: the input's pods (after expanding workloads) that the budget selects, bound
//!   or not, for every rule.
//!
//! Approximation: kube takes the expected count from the replicas of the pods' controllers
//! (or, for an integer minAvailable, the pods that exist). The simulation counts the pods of
//! the input that the budget selects; evicted pods stay counted, as their controllers would
//! replace them.

use berth_model::model::{Pod, PodDisruptionBudget};

use super::SimError;
use crate::disruption::{covers, disruptions_allowed, expected_and_desired};
use crate::framework::DisruptionBudget;

/// One budget and its live counts.
#[derive(Clone, Debug)]
struct Budget {
    pdb: PodDisruptionBudget,
    expected: i32,
    desired: i32,
    healthy: i32,
}

/// Every budget of the input, with its counts.
#[derive(Clone, Debug, Default)]
pub struct Budgets {
    budgets: Vec<Budget>,
}

impl Budgets {
    /// The budgets, with the expected count taken from `all_pods` (every pod of the input,
    /// namespaces defaulted) and no pod healthy yet: call [`Budgets::pod_bound`] for each
    /// pod already bound.
    pub fn new(pdbs: &[PodDisruptionBudget], all_pods: &[Pod]) -> Result<Self, SimError> {
        let mut budgets = Vec::with_capacity(pdbs.len());
        for pdb in pdbs {
            let count = all_pods.iter().filter(|p| covers(pdb, p)).count();
            let scale = i32::try_from(count).unwrap_or(i32::MAX);
            let (expected, desired) =
                expected_and_desired(pdb, count, || Ok(scale)).map_err(|source| {
                    SimError::Budget {
                        key: format!("{}/{}", pdb.metadata.namespace, pdb.metadata.name),
                        source,
                    }
                })?;
            budgets.push(Budget {
                pdb: pdb.clone(),
                expected,
                desired,
                healthy: 0,
            });
        }
        Ok(Budgets { budgets })
    }

    /// A pod was bound (or found bound): it counts as healthy unless terminating.
    pub fn pod_bound(&mut self, pod: &Pod) {
        self.adjust(pod, 1);
    }

    /// A bound pod left (evicted).
    pub fn pod_removed(&mut self, pod: &Pod) {
        self.adjust(pod, -1);
    }

    fn adjust(&mut self, pod: &Pod, delta: i32) {
        if pod.metadata.deletion_timestamp.is_some() {
            return;
        }
        for budget in self.budgets.iter_mut().filter(|b| covers(&b.pdb, pod)) {
            budget.healthy += delta;
        }
    }

    /// Whether there is no budget.
    pub fn is_empty(&self) -> bool {
        self.budgets.is_empty()
    }

    /// The budgets as preemption reads them, with `disruptionsAllowed` as of now.
    pub fn current(&self) -> Vec<DisruptionBudget> {
        self.budgets
            .iter()
            .map(|b| DisruptionBudget {
                namespace: b.pdb.metadata.namespace.clone(),
                name: b.pdb.metadata.name.clone(),
                selector: b.pdb.spec.selector.clone(),
                disruptions_allowed: disruptions_allowed(b.expected, b.desired, b.healthy),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(yaml: &str) -> PodDisruptionBudget {
        serde_yaml_ng::from_str(yaml).expect("test budget parses")
    }

    fn pod(namespace: &str, name: &str, app: &str, terminating: bool) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.namespace = namespace.into();
        pod.metadata.name = name.into();
        pod.metadata.labels.insert("app".into(), app.into());
        if terminating {
            pod.metadata.deletion_timestamp = Some(berth_model::model::Time::from_unix_nanos(0));
        }
        pod
    }

    #[test]
    fn disruptions_allowed() {
        struct Case {
            name: &'static str,
            spec: &'static str,
            bound: usize,
            want: i32,
        }
        // Four `web` pods in `default` are expected; `bound` of them are bound.
        let cases = [
            Case {
                name: "minAvailable int",
                spec: "minAvailable: 2",
                bound: 4,
                want: 2,
            },
            Case {
                name: "minAvailable int, few bound",
                spec: "minAvailable: 3",
                bound: 2,
                want: 0,
            },
            Case {
                name: "minAvailable percent rounds up",
                spec: "minAvailable: 60%",
                bound: 4,
                want: 1,
            },
            Case {
                name: "maxUnavailable int",
                spec: "maxUnavailable: 1",
                bound: 4,
                want: 1,
            },
            Case {
                name: "maxUnavailable int, pending pods",
                spec: "maxUnavailable: 1",
                bound: 3,
                want: 0,
            },
            Case {
                name: "maxUnavailable percent rounds up",
                spec: "maxUnavailable: 30%",
                bound: 4,
                want: 2,
            },
            Case {
                name: "neither",
                spec: "",
                bound: 4,
                want: 0,
            },
            Case {
                name: "no selector covers nothing",
                spec: "minAvailable: 0",
                bound: 4,
                want: 0,
            },
        ];
        let pods: Vec<Pod> = (0..4)
            .map(|i| pod("default", &format!("web-{i}"), "web", false))
            .chain([
                pod("other", "web-x", "web", false),
                pod("default", "db", "db", false),
            ])
            .collect();
        for case in cases {
            let mut spec: Vec<&str> = Vec::new();
            if !case.spec.is_empty() {
                spec.push(case.spec);
            }
            if !case.name.starts_with("no selector") {
                spec.push("selector: {matchLabels: {app: web}}");
            }
            let yaml = format!(
                "metadata: {{name: b, namespace: default}}\nspec: {{{}}}\n",
                spec.join(", ")
            );
            let mut budgets = Budgets::new(&[pdb(&yaml)], &pods).expect(case.name);
            for p in pods.iter().take(case.bound) {
                budgets.pod_bound(p);
            }
            // Pods outside the budget's namespace or selector never count.
            budgets.pod_bound(&pods[4]);
            budgets.pod_bound(&pods[5]);
            assert_eq!(
                budgets.current()[0].disruptions_allowed,
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn evictions_and_terminating_pods() {
        let pods: Vec<Pod> = (0..3)
            .map(|i| pod("default", &format!("web-{i}"), "web", i == 2))
            .collect();
        let budget = pdb("metadata: {name: b, namespace: default}\nspec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n");
        let mut budgets = Budgets::new(&[budget], &pods).expect("budget");
        for p in &pods {
            budgets.pod_bound(p);
        }
        assert_eq!(
            budgets.current()[0].disruptions_allowed,
            1,
            "the terminating pod is not healthy"
        );
        budgets.pod_removed(&pods[0]);
        assert_eq!(
            budgets.current()[0].disruptions_allowed,
            0,
            "after an eviction"
        );
    }

    #[test]
    fn bad_percentage_is_an_error() {
        let budget = pdb(
            "metadata: {name: b, namespace: default}\nspec: {minAvailable: lots, selector: {}}\n",
        );
        let err = Budgets::new(&[budget], &[]).expect_err("not a percentage");
        assert!(
            err.to_string()
                .starts_with("PodDisruptionBudget default/b: "),
            "{err}"
        );
    }
}
