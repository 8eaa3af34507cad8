//! PodDisruptionBudget status, as kube's disruption controller computes it, and the budget
//! as preemption and the Eviction API read it.
//!
//! The arithmetic itself (coverage, expected and desired pods, disruptions allowed) is
//! [`crate::disruption`], shared with `berth sim`; here the counts come from the cluster:
//!
//! - `currentHealthy`: covered pods that are ready and not being deleted.
//! - the scale for `maxUnavailable` and a percentage `minAvailable` is the sum of the
//!   scales of the covered pods' controllers (a ReplicaSet owned by a Deployment counts the
//!   Deployment's replicas). A covered pod without such a controller makes the count fail,
//!   and then no disruption is allowed.

use std::collections::BTreeMap;

use berth_proto::model::{Kind, Object, Pod, PodDisruptionBudget, PodDisruptionBudgetStatus};
use tracing::debug;

use super::{controller_of, object_ref, Cache, ControllerManager, Error};
use crate::disruption::{clamp, disruptions_allowed, expected_and_desired};
use crate::framework::DisruptionBudget;
use crate::server::events::WARNING;

pub use crate::disruption::{covers, BudgetError};

/// A pod's controller as the budget sees it: its uid and its scale (desired replicas).
pub type ControllerScale = (String, i32);

/// Computes a budget's status over the pods it covers. `scale_of` finds the scale of a
/// pod's controller (None: no controller with a scale). On error, the status to write is
/// the returned one with `disruptionsAllowed` 0 (kube's fail-safe).
pub fn budget_status(
    pdb: &PodDisruptionBudget,
    pods: &[&Pod],
    scale_of: &dyn Fn(&Pod) -> Option<ControllerScale>,
) -> Result<PodDisruptionBudgetStatus, (PodDisruptionBudgetStatus, BudgetError)> {
    let current_healthy = clamp(
        pods.iter()
            .filter(|p| !p.is_terminating() && p.is_ready())
            .count() as i64,
    );
    let expected_scale = || -> Result<i32, BudgetError> {
        let mut controllers: BTreeMap<String, i32> = BTreeMap::new();
        for pod in pods {
            let (uid, scale) = scale_of(pod).ok_or_else(|| BudgetError::NoController {
                pod: pod.metadata.name.clone(),
            })?;
            controllers.insert(uid, scale);
        }
        Ok(clamp(controllers.values().map(|&s| i64::from(s)).sum()))
    };
    match expected_and_desired(pdb, pods.len(), expected_scale) {
        Ok((expected, desired)) => Ok(PodDisruptionBudgetStatus {
            current_healthy,
            desired_healthy: desired,
            disruptions_allowed: disruptions_allowed(expected, desired, current_healthy),
            expected_pods: expected,
            ..Default::default()
        }),
        Err(error) => Err((
            PodDisruptionBudgetStatus {
                current_healthy,
                desired_healthy: pdb.status.desired_healthy,
                expected_pods: pdb.status.expected_pods,
                disruptions_allowed: 0,
                ..Default::default()
            },
            error,
        )),
    }
}

/// The scale of a pod's controller from the cache: a ReplicaSet's replicas, or its owning
/// Deployment's when it has one.
pub fn controller_scale(cache: &Cache, pod: &Pod) -> Option<ControllerScale> {
    let reference = controller_of(&pod.metadata.owner_references)?;
    let ns = &pod.metadata.namespace;
    match reference.kind.as_str() {
        "ReplicaSet" => {
            let Some(Object::ReplicaSet(rs)) = cache.get(Kind::ReplicaSet, ns, &reference.name)
            else {
                return None;
            };
            if rs.metadata.uid != reference.uid {
                return None;
            }
            if let Some(owner) = controller_of(&rs.metadata.owner_references) {
                if owner.kind == "Deployment" {
                    if let Some(Object::Deployment(d)) =
                        cache.get(Kind::Deployment, ns, &owner.name)
                    {
                        if d.metadata.uid == owner.uid {
                            return Some((d.metadata.uid.clone(), d.spec.replicas));
                        }
                    }
                }
            }
            Some((rs.metadata.uid.clone(), rs.spec.replicas))
        }
        "Deployment" => match cache.get(Kind::Deployment, ns, &reference.name) {
            Some(Object::Deployment(d)) if d.metadata.uid == reference.uid => {
                Some((d.metadata.uid.clone(), d.spec.replicas))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The budget as preemption reads it, from its status (kept by [`reconcile`]).
pub fn disruption_budget(pdb: &PodDisruptionBudget) -> DisruptionBudget {
    DisruptionBudget {
        namespace: pdb.metadata.namespace.clone(),
        name: pdb.metadata.name.clone(),
        selector: pdb.spec.selector.clone(),
        disruptions_allowed: pdb.status.disruptions_allowed,
    }
}

/// Recounts one budget and writes its status if it changed.
pub fn reconcile(m: &mut ControllerManager, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(Object::PodDisruptionBudget(pdb)) = m
        .cache
        .get(Kind::PodDisruptionBudget, namespace, name)
        .cloned()
    else {
        return Ok(());
    };
    let pods: Vec<&Pod> = m
        .cache
        .pods(namespace)
        .into_iter()
        .filter(|p| covers(&pdb, p))
        .collect();
    let cache = &m.cache;
    let status = match budget_status(&pdb, &pods, &|p| controller_scale(cache, p)) {
        Ok(status) => status,
        Err((status, error)) => {
            debug!(budget = %name, %error, "expected pod count failed");
            if pdb.status.disruptions_allowed != 0
                || pdb.status.current_healthy != status.current_healthy
            {
                m.events.record(
                    object_ref(&Object::PodDisruptionBudget(pdb.clone())),
                    WARNING,
                    "CalculateExpectedPodCountFailed",
                    format!("Failed to calculate the number of expected pods: {error}"),
                );
            }
            status
        }
    };
    let mut updated = pdb.clone();
    updated.status.current_healthy = status.current_healthy;
    updated.status.desired_healthy = status.desired_healthy;
    updated.status.disruptions_allowed = status.disruptions_allowed;
    updated.status.expected_pods = status.expected_pods;
    m.update_if_changed(
        &Object::PodDisruptionBudget(pdb),
        Object::PodDisruptionBudget(updated),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::PodBuilder;
    use berth_proto::model::{PodPhase, Time};

    fn pdb(spec: &str) -> PodDisruptionBudget {
        serde_yaml_ng::from_str(&format!(
            "metadata: {{name: b, namespace: default}}\nspec: {{{spec}}}\n"
        ))
        .expect("test budget parses")
    }

    /// A `web` pod; `owner` is the uid of its controller (scale looked up by the test).
    fn pod(name: &str, ready: bool, owner: &str) -> Pod {
        let mut p = PodBuilder::new(name).label("app", "web").ready(ready);
        if ready {
            p = p.phase(PodPhase::Running);
        }
        if !owner.is_empty() {
            p = p.owner("ReplicaSet", owner);
        }
        p.build()
    }

    #[test]
    fn status_arithmetic_matches_the_disruption_controller() {
        struct Case {
            name: &'static str,
            spec: &'static str,
            /// (ready, owner uid) of each covered pod.
            pods: Vec<(bool, &'static str)>,
            want: Result<(i32, i32, i32, i32), &'static str>,
        }
        const SEL: &str = "selector: {matchLabels: {app: web}}";
        let cases = vec![
            Case {
                name: "minAvailable int counts the pods",
                spec: "minAvailable: 2",
                pods: vec![(true, ""), (true, ""), (true, "")],
                want: Ok((3, 2, 1, 3)),
            },
            Case {
                name: "minAvailable int with unready pods",
                spec: "minAvailable: 2",
                pods: vec![(true, "rs"), (false, "rs"), (true, "rs")],
                want: Ok((2, 2, 0, 3)),
            },
            Case {
                name: "minAvailable percent rounds up against the scale",
                spec: "minAvailable: 50%",
                // The controller wants 5 replicas; 3 pods exist.
                pods: vec![(true, "rs"), (true, "rs"), (true, "rs")],
                want: Ok((3, 3, 0, 5)),
            },
            Case {
                name: "maxUnavailable int",
                spec: "maxUnavailable: 1",
                pods: vec![
                    (true, "rs"),
                    (true, "rs"),
                    (true, "rs"),
                    (true, "rs"),
                    (true, "rs"),
                ],
                want: Ok((5, 4, 1, 5)),
            },
            Case {
                name: "maxUnavailable percent rounds up",
                spec: "maxUnavailable: 30%",
                pods: vec![
                    (true, "rs"),
                    (true, "rs"),
                    (true, "rs"),
                    (true, "rs"),
                    (true, "rs"),
                ],
                want: Ok((5, 3, 2, 5)),
            },
            Case {
                name: "maxUnavailable with a bare pod fails safe",
                spec: "maxUnavailable: 1",
                pods: vec![(true, "rs"), (true, "")],
                want: Err("found no controllers for pod \"p1\""),
            },
            Case {
                name: "no pod expected allows nothing",
                spec: "minAvailable: 0",
                pods: vec![],
                want: Ok((0, 0, 0, 0)),
            },
            Case {
                name: "neither field",
                spec: "",
                pods: vec![(true, "rs")],
                want: Ok((1, 0, 0, 0)),
            },
        ];
        for case in cases {
            let spec = if case.spec.is_empty() {
                SEL.to_string()
            } else {
                format!("{}, {SEL}", case.spec)
            };
            let budget = pdb(&spec);
            let pods: Vec<Pod> = case
                .pods
                .iter()
                .enumerate()
                .map(|(i, (ready, owner))| pod(&format!("p{i}"), *ready, owner))
                .collect();
            let refs: Vec<&Pod> = pods.iter().collect();
            let scale =
                |p: &Pod| controller_of(&p.metadata.owner_references).map(|r| (r.uid.clone(), 5));
            let got = budget_status(&budget, &refs, &scale);
            match (got, case.want) {
                (Ok(s), Ok((healthy, desired, allowed, expected))) => assert_eq!(
                    (
                        s.current_healthy,
                        s.desired_healthy,
                        s.disruptions_allowed,
                        s.expected_pods
                    ),
                    (healthy, desired, allowed, expected),
                    "{}",
                    case.name
                ),
                (Err((s, e)), Err(want)) => {
                    assert_eq!(e.to_string(), want, "{}", case.name);
                    assert_eq!(s.disruptions_allowed, 0, "{}: fail-safe", case.name);
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn terminating_pods_are_not_healthy_and_selectors_scope_the_budget() {
        let budget = pdb("minAvailable: 1, selector: {matchLabels: {app: web}}");
        let mut terminating = pod("t", true, "");
        terminating.metadata.deletion_timestamp = Some(Time::from_unix_nanos(0));
        let healthy = pod("h", true, "");
        let refs = vec![&terminating, &healthy];
        let status = budget_status(&budget, &refs, &|_| None).expect("int minAvailable");
        assert_eq!(status.current_healthy, 1);
        assert_eq!(status.disruptions_allowed, 0);

        let mut other_ns = pod("o", true, "");
        other_ns.metadata.namespace = "other".into();
        assert!(covers(&budget, &healthy));
        assert!(!covers(&budget, &other_ns));
        assert!(
            !covers(&pdb("minAvailable: 1"), &healthy),
            "no selector covers nothing"
        );
        assert!(
            covers(&pdb("minAvailable: 1, selector: {}"), &healthy),
            "{{}} covers all"
        );
    }
}
