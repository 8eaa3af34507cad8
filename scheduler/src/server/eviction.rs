//! The Eviction API (`Evict`): deletes a pod unless that would break the
//! PodDisruptionBudget covering it, as kube's `pods/eviction` subresource does.
//!
//! - A pod that has finished, or is still Pending, is deleted without consulting budgets.
//! - Otherwise the budget covering the pod (more than one is an error) must allow a
//!   disruption: its `disruptionsAllowed` is decremented and the pod deleted in one store
//!   transaction, with preconditions on both resourceVersions, retried on conflict. A
//!   budget at 0 refuses with `ResourceExhausted` (kube's 429) and names itself.
//! - A pod that is not ready may go without spending the budget when the budget is
//!   otherwise met (`currentHealthy >= desiredHealthy > 0`, kube's IfHealthyBudget).
//!
//! The deleted pod's agent stops it gracefully (`terminationGracePeriodSeconds`, or the
//! grace period of the request), and its controller replaces it.

use berth_proto::model::{Kind, Object, ObjectKey, Pod, PodDisruptionBudget, PodPhase};
use berth_store::{ObjectStore, Op, Precondition};
use tracing::info;

use crate::controllers::disruption::covers;

/// How many times an eviction re-reads and retries after a concurrent write.
const CONFLICT_RETRIES: usize = 10;

/// Why an eviction did not happen. The server's [`Error`](super::error::Error) carries it
/// to the client, with its one mapping to gRPC codes.
#[derive(Debug, thiserror::Error)]
pub enum EvictionError {
    /// No such pod.
    #[error("pods {name:?} not found")]
    NotFound {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        name: String,
    },
    /// The budget allows no disruption now (kube's 429).
    #[error(
        "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget {budget} needs {desired_healthy} healthy pods and has {current_healthy} currently"
    )]
    BudgetExhausted {
        /// The budget's name.
        budget: String,
        /// Its `desiredHealthy`.
        desired_healthy: i32,
        /// Its `currentHealthy`.
        current_healthy: i32,
    },
    /// More than one budget covers the pod.
    #[error("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")]
    MultipleBudgets {
        /// The budgets' names.
        budgets: Vec<String>,
    },
    /// The budget's status is corrupt.
    #[error("pdb disruptions allowed is negative")]
    NegativeBudget {
        /// The budget's name.
        budget: String,
    },
    /// Concurrent writes kept winning.
    #[error("evicting pod {namespace}/{name}: the pod or its budget kept changing; try again")]
    TooManyConflicts {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        name: String,
    },
    /// The store failed.
    #[error("store: {0}")]
    Store(#[source] berth_store::Error),
}

/// What an eviction should do, decided from the pod and the budgets of its namespace.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Delete the pod; budgets are not involved.
    Delete,
    /// Delete the pod and store this budget (its `disruptionsAllowed` one lower).
    DeleteAndCharge(PodDisruptionBudget),
}

/// Decides an eviction (kube's eviction REST handler, without the IO).
pub fn decide(pod: &Pod, budgets: &[PodDisruptionBudget]) -> Result<Decision, EvictionError> {
    if matches!(
        pod.status.phase,
        PodPhase::Succeeded | PodPhase::Failed | PodPhase::Pending
    ) {
        return Ok(Decision::Delete);
    }
    let covering: Vec<&PodDisruptionBudget> = budgets.iter().filter(|b| covers(b, pod)).collect();
    let pdb = match covering.as_slice() {
        [] => return Ok(Decision::Delete),
        [one] => *one,
        many => {
            return Err(EvictionError::MultipleBudgets {
                budgets: many.iter().map(|b| b.metadata.name.clone()).collect(),
            })
        }
    };
    let status = &pdb.status;
    if !pod.is_ready()
        && status.current_healthy >= status.desired_healthy
        && status.desired_healthy > 0
    {
        return Ok(Decision::Delete);
    }
    if status.disruptions_allowed < 0 {
        return Err(EvictionError::NegativeBudget {
            budget: pdb.metadata.name.clone(),
        });
    }
    if status.disruptions_allowed == 0 {
        return Err(EvictionError::BudgetExhausted {
            budget: pdb.metadata.name.clone(),
            desired_healthy: status.desired_healthy,
            current_healthy: status.current_healthy,
        });
    }
    let mut charged = pdb.clone();
    charged.status.disruptions_allowed -= 1;
    Ok(Decision::DeleteAndCharge(charged))
}

/// Evicts a pod; returns it as it was. `grace_period_seconds` overrides the pod's
/// `terminationGracePeriodSeconds` for this stop.
pub fn evict(
    store: &dyn ObjectStore,
    namespace: &str,
    name: &str,
    grace_period_seconds: Option<i64>,
) -> Result<Pod, EvictionError> {
    let key = ObjectKey::new(Kind::Pod, namespace, name);
    let not_found = || EvictionError::NotFound {
        namespace: namespace.to_string(),
        name: name.to_string(),
    };
    for _ in 0..CONFLICT_RETRIES {
        let pod = match store.get(&key).map_err(EvictionError::Store)? {
            Some(Object::Pod(pod)) => pod,
            _ => return Err(not_found()),
        };
        let budgets: Vec<PodDisruptionBudget> = store
            .list(Kind::PodDisruptionBudget, Some(namespace))
            .map_err(EvictionError::Store)?
            .into_iter()
            .filter_map(|o| match o {
                Object::PodDisruptionBudget(b) => Some(*b),
                _ => None,
            })
            .collect();
        let mut ops = Vec::new();
        let charged = match decide(&pod, &budgets)? {
            Decision::Delete => None,
            Decision::DeleteAndCharge(pdb) => {
                let name = pdb.metadata.name.clone();
                let precondition =
                    Precondition::ResourceVersion(pdb.metadata.resource_version.clone());
                ops.push(Op::Update {
                    object: Object::PodDisruptionBudget(Box::new(pdb)),
                    precondition,
                });
                Some(name)
            }
        };
        let pod_rv = Precondition::ResourceVersion(pod.metadata.resource_version.clone());
        match grace_period_seconds {
            Some(grace) if pod.spec.termination_grace_period_seconds != Some(grace) => {
                let mut stopping = pod.clone();
                stopping.spec.termination_grace_period_seconds = Some(grace);
                ops.push(Op::Update {
                    object: Object::Pod(stopping),
                    precondition: pod_rv,
                });
                ops.push(Op::Delete {
                    key: key.clone(),
                    precondition: Precondition::None,
                });
            }
            _ => ops.push(Op::Delete {
                key: key.clone(),
                precondition: pod_rv,
            }),
        }
        match store.commit(ops) {
            Ok(_) => {
                info!(pod = %format!("{namespace}/{name}"), budget = ?charged, "evicted");
                return Ok(*pod);
            }
            Err(berth_store::Error::Conflict { .. }) => continue,
            Err(berth_store::Error::NotFound { key: missing }) if missing.kind == Kind::Pod => {
                return Err(not_found())
            }
            Err(berth_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(EvictionError::Store(e)),
        }
    }
    Err(EvictionError::TooManyConflicts {
        namespace: namespace.to_string(),
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::PodBuilder;
    use berth_store::SledStore;

    fn pod(name: &str, phase: PodPhase, ready: bool) -> Pod {
        PodBuilder::new(name)
            .label("app", "web")
            .phase(phase)
            .ready(ready)
            .build()
    }

    fn budget(name: &str, allowed: i32, desired: i32, healthy: i32) -> PodDisruptionBudget {
        let mut b: PodDisruptionBudget = serde_yaml_ng::from_str(&format!(
            "metadata: {{name: {name}, namespace: default}}\nspec: {{minAvailable: {desired}, selector: {{matchLabels: {{app: web}}}}}}\n"
        ))
        .expect("test budget parses");
        b.status.disruptions_allowed = allowed;
        b.status.desired_healthy = desired;
        b.status.current_healthy = healthy;
        b
    }

    #[test]
    fn decisions_follow_the_eviction_subresource() {
        use PodPhase::{Failed, Pending, Running};
        // At its desired health, with no disruption left.
        let at_minimum = || vec![budget("web", 0, 2, 2)];
        // (case, the pod's phase and readiness, budgets, disruptions left after the charge or
        // the refusal)
        type Row = (
            &'static str,
            (PodPhase, bool),
            Vec<PodDisruptionBudget>,
            Result<Option<i32>, &'static str>,
        );
        let cases: Vec<Row> = vec![
            ("no budget", (Running, true), vec![], Ok(None)),
            (
                "allowed: the budget is charged",
                (Running, true),
                vec![budget("web", 1, 2, 3)],
                Ok(Some(0)),
            ),
            (
                "exhausted",
                (Running, true),
                at_minimum(),
                Err("Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 2 healthy pods and has 2 currently"),
            ),
            ("pending pods ignore budgets", (Pending, false), at_minimum(), Ok(None)),
            ("failed pods ignore budgets", (Failed, false), at_minimum(), Ok(None)),
            (
                "an unready pod of a healthy budget goes free",
                (Running, false),
                at_minimum(),
                Ok(None),
            ),
            (
                "an unready pod of an unhealthy budget is refused",
                (Running, false),
                vec![budget("web", 0, 2, 1)],
                Err("The disruption budget web needs 2 healthy pods and has 1 currently"),
            ),
            (
                "two budgets",
                (Running, true),
                vec![budget("a", 1, 1, 3), budget("b", 1, 1, 3)],
                Err("more than one PodDisruptionBudget"),
            ),
        ];
        for (name, (phase, ready), budgets, want) in cases {
            match (decide(&pod("p", phase, ready), &budgets), want) {
                (Ok(Decision::Delete), Ok(None)) => {}
                (Ok(Decision::DeleteAndCharge(b)), Ok(Some(left))) => {
                    assert_eq!(b.status.disruptions_allowed, left, "{name}")
                }
                (Err(e), Err(want)) => {
                    assert!(e.to_string().contains(want), "{name}: {e}")
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn an_eviction_charges_the_budget_and_deletes_the_pod_atomically() {
        let store = SledStore::temporary().expect("temporary store");
        store
            .commit(vec![
                Op::Create(Object::Pod(Box::new(pod("a", PodPhase::Running, true)))),
                Op::Create(Object::Pod(Box::new(pod("b", PodPhase::Running, true)))),
                Op::Create(Object::PodDisruptionBudget(Box::new(budget(
                    "web", 1, 1, 2,
                )))),
            ])
            .expect("seeding");
        let evicted = evict(&store, "default", "a", Some(5)).expect("first eviction");
        assert_eq!(evicted.metadata.name, "a");
        assert!(store
            .get(&ObjectKey::new(Kind::Pod, "default", "a"))
            .expect("get")
            .is_none());
        let Some(Object::PodDisruptionBudget(b)) = store
            .get(&ObjectKey::new(Kind::PodDisruptionBudget, "default", "web"))
            .expect("get")
        else {
            panic!("budget missing")
        };
        assert_eq!(b.status.disruptions_allowed, 0);
        let err = evict(&store, "default", "b", None).expect_err("budget spent");
        assert!(
            matches!(err, EvictionError::BudgetExhausted { .. }),
            "{err}"
        );
        assert_eq!(
            tonic::Status::from(super::super::error::Error::from(err)).code(),
            tonic::Code::ResourceExhausted
        );
        let err = evict(&store, "default", "nope", None).expect_err("missing");
        assert_eq!(err.to_string(), "pods \"nope\" not found");
    }
}
