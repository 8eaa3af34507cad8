//! The Deployment controller: one ReplicaSet per pod template (`<deployment>-<hash>`, from
//! [`crate::workloads::replica_set_for`]), scaled as the Deployment's strategy says, and the
//! Deployment's status summed over its ReplicaSets.
//!
//! RollingUpdate (the default) takes one step per reconcile, as kube's `rolloutRolling`
//! does: scale the new ReplicaSet up within `replicas + maxSurge` pods in all, else scale
//! old ReplicaSets down (their unavailable pods first) while at least
//! `replicas - maxUnavailable` pods stay available. Every ReplicaSet write triggers the
//! next step, so a rollout proceeds as pods become ready. Recreate scales every old
//! ReplicaSet to 0, waits until their pods are gone, then scales the new one up. Old
//! ReplicaSets are kept at 0 replicas (kube keeps them as revision history).

use berth_proto::model::{
    Deployment, DeploymentStrategyType, IntOrString, Kind, Object, ReplicaSet,
};
use berth_proto::names;
use berth_store::{Op, Precondition};
use tracing::info;

use super::{controlled_pods, controller_of, object_ref, ControllerManager, Error};
use crate::server::events::NORMAL;
use crate::workloads::replica_set_for;

/// What a step needs to know of one ReplicaSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetState {
    /// `spec.replicas`.
    pub replicas: i32,
    /// `status.availableReplicas`.
    pub available: i32,
}

/// The replicas a step gives the new ReplicaSet and each old one (in the order given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Replicas of the new ReplicaSet.
    pub new_replicas: i32,
    /// Replicas of each old ReplicaSet.
    pub old_replicas: Vec<i32>,
}

/// maxSurge and maxUnavailable of a rolling update against `replicas` (kube's
/// `ResolveFenceposts`): 25% each when left out, maxSurge rounded up and maxUnavailable
/// down; if both come to 0, maxUnavailable is 1 so that the rollout can progress.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    replicas: i32,
) -> (i32, i32) {
    let quarter = IntOrString::String("25%".into());
    let clamp = |v: i64| i32::try_from(v.max(0)).unwrap_or(i32::MAX);
    let surge = clamp(
        max_surge
            .unwrap_or(&quarter)
            .scaled_value(replicas, true)
            .unwrap_or(0),
    );
    let unavailable = clamp(
        max_unavailable
            .unwrap_or(&quarter)
            .scaled_value(replicas, false)
            .unwrap_or(0),
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

/// One step of a rolling update (kube's `reconcileNewReplicaSet`, then, if that changed
/// nothing, `reconcileOldReplicaSets`). `olds` are ordered oldest first.
pub fn rolling_step(
    replicas: i32,
    max_surge: i32,
    max_unavailable: i32,
    new: SetState,
    olds: &[SetState],
) -> Plan {
    let mut plan = Plan {
        new_replicas: new.replicas,
        old_replicas: olds.iter().map(|o| o.replicas).collect(),
    };
    let old_total: i32 = olds.iter().map(|o| o.replicas).sum();
    if new.replicas > replicas {
        plan.new_replicas = replicas;
        return plan;
    }
    if new.replicas < replicas {
        let current = new.replicas + old_total;
        let max_total = replicas + max_surge;
        if current < max_total {
            let up = (max_total - current).min(replicas - new.replicas);
            plan.new_replicas += up;
            return plan;
        }
    }
    if old_total == 0 {
        return plan;
    }
    let all = new.replicas + old_total;
    let min_available = replicas - max_unavailable;
    let new_unavailable = new.replicas - new.available;
    let max_scaled_down = all - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return plan;
    }
    // Old pods that are not available go first: removing them costs no availability.
    let mut cleaned = 0;
    for (i, old) in olds.iter().enumerate() {
        if cleaned >= max_scaled_down {
            break;
        }
        let unhealthy = plan.old_replicas[i] - old.available;
        if plan.old_replicas[i] == 0 || unhealthy <= 0 {
            continue;
        }
        let down = (max_scaled_down - cleaned).min(unhealthy);
        plan.old_replicas[i] -= down;
        cleaned += down;
    }
    let available: i32 = new.available + olds.iter().map(|o| o.available).sum::<i32>();
    if available <= min_available {
        return plan;
    }
    let total_down = (available - min_available).min(max_scaled_down - cleaned);
    let mut done = 0;
    for count in plan.old_replicas.iter_mut() {
        if done >= total_down {
            break;
        }
        let down = (*count).min(total_down - done);
        *count -= down;
        done += down;
    }
    plan
}

/// One step of a Recreate rollout: old ReplicaSets go to 0 first; the new one is scaled up
/// only once no old pod is left (`old_pods_active` false).
pub fn recreate_step(
    replicas: i32,
    new: SetState,
    olds: &[SetState],
    old_pods_active: bool,
) -> Plan {
    if olds.iter().any(|o| o.replicas > 0) || old_pods_active {
        return Plan {
            new_replicas: new.replicas,
            old_replicas: vec![0; olds.len()],
        };
    }
    Plan {
        new_replicas: replicas,
        old_replicas: vec![0; olds.len()],
    }
}

/// Reconciles one Deployment.
pub fn reconcile(m: &mut ControllerManager, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(Object::Deployment(d)) = m.live(Kind::Deployment, namespace, name) else {
        return Ok(());
    };
    if d.metadata.uid.is_empty() {
        return Ok(());
    }
    let desired = replica_set_for(&d);
    let mut owned: Vec<ReplicaSet> = m
        .cache
        .dependents_of(&d.metadata.uid)
        .into_iter()
        .filter_map(|o| match o {
            Object::ReplicaSet(rs)
                if controller_of(&rs.metadata.owner_references)
                    .is_some_and(|r| r.uid == d.metadata.uid) =>
            {
                Some((**rs).clone())
            }
            _ => None,
        })
        .collect();
    owned.sort_by(|a, b| {
        (a.metadata.creation_timestamp, &a.metadata.name)
            .cmp(&(b.metadata.creation_timestamp, &b.metadata.name))
    });
    let new_index = owned
        .iter()
        .position(|rs| rs.metadata.name == desired.metadata.name);
    let new_rs = new_index.map(|i| owned.remove(i));
    let olds = owned;
    let state = |rs: &ReplicaSet| SetState {
        replicas: rs.spec.replicas,
        available: rs.status.available_replicas,
    };
    let new_state = new_rs.as_ref().map_or(
        SetState {
            replicas: 0,
            available: 0,
        },
        state,
    );
    let old_states: Vec<SetState> = olds.iter().map(state).collect();
    let replicas = d.spec.replicas.max(0);
    let strategy = d.spec.strategy.clone().unwrap_or_default();
    let plan = match strategy.type_.unwrap_or_default() {
        DeploymentStrategyType::Recreate => {
            let old_pods_active = olds.iter().any(|rs| {
                controlled_pods(&m.cache, &rs.metadata.uid)
                    .into_iter()
                    .any(|p| p.is_active())
            });
            recreate_step(replicas, new_state, &old_states, old_pods_active)
        }
        DeploymentStrategyType::RollingUpdate => {
            let rolling = strategy.rolling_update.unwrap_or_default();
            let (surge, unavailable) = resolve_fenceposts(
                rolling.max_surge.as_ref(),
                rolling.max_unavailable.as_ref(),
                replicas,
            );
            rolling_step(replicas, surge, unavailable, new_state, &old_states)
        }
    };

    // The new ReplicaSet's revision is one past every old one's (kube's
    // `getNewReplicaSet`), also when a rollback makes an old template new again.
    let revision = olds.iter().map(revision_of).max().unwrap_or(0) + 1;
    let mut ops = Vec::new();
    let mut scaled = Vec::new();
    match &new_rs {
        None => {
            if m.cache
                .get(Kind::ReplicaSet, namespace, &desired.metadata.name)
                .is_some()
            {
                // Taken by a ReplicaSet this deployment does not control.
                tracing::warn!(
                    deployment = %name,
                    replicaset = %desired.metadata.name,
                    "a ReplicaSet of that name exists and is not this deployment's; waiting"
                );
                return Ok(());
            }
            let mut created = desired.clone();
            created.spec.replicas = plan.new_replicas;
            stamp_revision(&mut created, &d, revision);
            scaled.push((created.metadata.name.clone(), plan.new_replicas));
            ops.push(Op::Create(Object::ReplicaSet(Box::new(created))));
        }
        Some(rs) => {
            if revision_of(rs) < revision {
                let mut renumbered = rs.clone();
                stamp_revision(&mut renumbered, &d, revision);
                renumbered.spec.replicas = plan.new_replicas;
                if rs.spec.replicas != plan.new_replicas {
                    scaled.push((rs.metadata.name.clone(), plan.new_replicas));
                }
                ops.push(Op::Update {
                    object: Object::ReplicaSet(Box::new(renumbered)),
                    precondition: Precondition::ResourceVersion(
                        rs.metadata.resource_version.clone(),
                    ),
                });
            } else if let Some(op) = scale_op(rs, plan.new_replicas) {
                scaled.push((rs.metadata.name.clone(), plan.new_replicas));
                ops.push(op);
            }
        }
    }
    for (rs, &count) in olds.iter().zip(&plan.old_replicas) {
        if let Some(op) = scale_op(rs, count) {
            scaled.push((rs.metadata.name.clone(), count));
            ops.push(op);
        }
    }
    if !ops.is_empty() {
        m.commit(ops)?;
        let d_obj = Object::Deployment(d.clone());
        for (rs, count) in scaled {
            info!(deployment = %name, replicaset = %rs, replicas = count, "scaled");
            m.events.record(
                object_ref(&d_obj),
                NORMAL,
                "ScalingReplicaSet",
                format!("Scaled replica set {rs} to {count}"),
            );
        }
        // The status follows once the ReplicaSets report back.
        return Ok(());
    }
    update_status(m, &d, new_rs.as_ref(), &olds)
}

/// The `deployment.kubernetes.io/revision` of a ReplicaSet (0 when it has none).
pub fn revision_of(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .get(names::ANNOTATION_REVISION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Marks a Deployment's new ReplicaSet with its revision and the Deployment's change cause.
fn stamp_revision(rs: &mut ReplicaSet, d: &Deployment, revision: i64) {
    let annotations = &mut rs.metadata.annotations;
    annotations.insert(names::ANNOTATION_REVISION.to_string(), revision.to_string());
    if let Some(cause) = d.metadata.annotations.get(names::ANNOTATION_CHANGE_CAUSE) {
        annotations.insert(names::ANNOTATION_CHANGE_CAUSE.to_string(), cause.clone());
    }
}

fn scale_op(rs: &ReplicaSet, replicas: i32) -> Option<Op> {
    if rs.spec.replicas == replicas {
        return None;
    }
    let mut scaled = rs.clone();
    scaled.spec.replicas = replicas;
    Some(Op::Update {
        object: Object::ReplicaSet(Box::new(scaled)),
        precondition: Precondition::ResourceVersion(rs.metadata.resource_version.clone()),
    })
}

fn update_status(
    m: &mut ControllerManager,
    d: &Deployment,
    new_rs: Option<&ReplicaSet>,
    olds: &[ReplicaSet],
) -> Result<(), Error> {
    let all: Vec<&ReplicaSet> = new_rs.into_iter().chain(olds.iter()).collect();
    let mut updated = d.clone();
    let status = &mut updated.status;
    status.replicas = all.iter().map(|rs| rs.status.replicas).sum();
    status.ready_replicas = all.iter().map(|rs| rs.status.ready_replicas).sum();
    status.available_replicas = all.iter().map(|rs| rs.status.available_replicas).sum();
    status.updated_replicas = new_rs.map_or(0, |rs| rs.status.replicas);
    status.observed_generation = d.metadata.generation;
    m.update_if_changed(
        &Object::Deployment(Box::new(d.clone())),
        Object::Deployment(Box::new(updated)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(replicas: i32, available: i32) -> SetState {
        SetState {
            replicas,
            available,
        }
    }

    #[test]
    fn fenceposts_follow_kube() {
        struct Case {
            name: &'static str,
            surge: Option<IntOrString>,
            unavailable: Option<IntOrString>,
            replicas: i32,
            want: (i32, i32),
        }
        let cases = [
            Case {
                name: "defaults on 4",
                surge: None,
                unavailable: None,
                replicas: 4,
                want: (1, 1),
            },
            Case {
                name: "defaults on 3 round surge up and unavailable down",
                surge: None,
                unavailable: None,
                replicas: 3,
                want: (1, 0),
            },
            Case {
                name: "both zero become unavailable 1",
                surge: Some(IntOrString::Int(0)),
                unavailable: Some(IntOrString::Int(0)),
                replicas: 3,
                want: (0, 1),
            },
            Case {
                name: "integers",
                surge: Some(IntOrString::Int(2)),
                unavailable: Some(IntOrString::Int(1)),
                replicas: 10,
                want: (2, 1),
            },
        ];
        for case in cases {
            assert_eq!(
                resolve_fenceposts(
                    case.surge.as_ref(),
                    case.unavailable.as_ref(),
                    case.replicas
                ),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn rolling_steps_follow_kube() {
        struct Case {
            name: &'static str,
            replicas: i32,
            surge: i32,
            unavailable: i32,
            new: SetState,
            olds: Vec<SetState>,
            want: Plan,
        }
        let plan = |new_replicas: i32, old_replicas: Vec<i32>| Plan {
            new_replicas,
            old_replicas,
        };
        let cases = vec![
            Case {
                name: "first rollout creates every replica",
                replicas: 3,
                surge: 1,
                unavailable: 0,
                new: s(0, 0),
                olds: vec![],
                want: plan(3, vec![]),
            },
            Case {
                name: "scale up without old sets",
                replicas: 5,
                surge: 2,
                unavailable: 1,
                new: s(3, 3),
                olds: vec![],
                want: plan(5, vec![]),
            },
            Case {
                name: "scale down",
                replicas: 2,
                surge: 1,
                unavailable: 0,
                new: s(5, 5),
                olds: vec![],
                want: plan(2, vec![]),
            },
            Case {
                name: "template change surges first",
                replicas: 3,
                surge: 1,
                unavailable: 0,
                new: s(0, 0),
                olds: vec![s(3, 3)],
                want: plan(1, vec![3]),
            },
            Case {
                name: "at the surge limit, old pods wait for new ones to be available",
                replicas: 3,
                surge: 1,
                unavailable: 0,
                new: s(1, 0),
                olds: vec![s(3, 3)],
                want: plan(1, vec![3]),
            },
            Case {
                name: "a new pod available lets one old pod go",
                replicas: 3,
                surge: 1,
                unavailable: 0,
                new: s(1, 1),
                olds: vec![s(3, 3)],
                want: plan(1, vec![2]),
            },
            Case {
                name: "unavailable old pods go first, oldest set first",
                replicas: 4,
                surge: 0,
                unavailable: 1,
                new: s(0, 0),
                olds: vec![s(2, 1), s(2, 2)],
                want: plan(0, vec![1, 2]),
            },
            Case {
                name: "done",
                replicas: 3,
                surge: 1,
                unavailable: 0,
                new: s(3, 3),
                olds: vec![s(0, 0)],
                want: plan(3, vec![0]),
            },
        ];
        for case in cases {
            let got = rolling_step(
                case.replicas,
                case.surge,
                case.unavailable,
                case.new,
                &case.olds,
            );
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn recreate_waits_for_old_pods() {
        struct Case {
            name: &'static str,
            olds: Vec<SetState>,
            old_pods_active: bool,
            want: Plan,
        }
        let cases = vec![
            Case {
                name: "old sets are scaled to zero first",
                olds: vec![s(3, 3)],
                old_pods_active: true,
                want: Plan {
                    new_replicas: 0,
                    old_replicas: vec![0],
                },
            },
            Case {
                name: "old pods still stopping",
                olds: vec![s(0, 0)],
                old_pods_active: true,
                want: Plan {
                    new_replicas: 0,
                    old_replicas: vec![0],
                },
            },
            Case {
                name: "old pods gone",
                olds: vec![s(0, 0)],
                old_pods_active: false,
                want: Plan {
                    new_replicas: 3,
                    old_replicas: vec![0],
                },
            },
        ];
        for case in cases {
            assert_eq!(
                recreate_step(3, s(0, 0), &case.olds, case.old_pods_active),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
