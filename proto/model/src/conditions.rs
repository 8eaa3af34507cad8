//! Setting pod and node conditions, once: a condition replaces the one of the same type,
//! and keeps its lastTransitionTime while the status stays the same (kube's
//! `podutil.UpdatePodCondition`). The scheduler, its controllers and the agent all set
//! conditions through [`set_condition`].

use crate::model::{NodeCondition, PodCondition, Time};
use crate::names::{status_of, CONDITION_CONTAINERS_READY, CONDITION_READY};

/// A condition of an object's status: a type, a status and when the status last changed.
pub trait Condition {
    /// The condition type (`Ready`, `PodScheduled`, ...).
    fn condition_type(&self) -> &str;
    /// The status: `True`, `False` or `Unknown`.
    fn status(&self) -> &str;
    /// When the status last changed.
    fn transition_time(&mut self) -> &mut Option<Time>;
    /// Whether `other` reports the same thing: status, reason and message (times aside).
    fn reports_same(&self, other: &Self) -> bool;
}

/// Pod and node conditions carry the same fields `Condition` reads.
macro_rules! impl_condition {
    ($($t:ty),*) => {$(
        impl Condition for $t {
            fn condition_type(&self) -> &str {
                &self.type_
            }
            fn status(&self) -> &str {
                &self.status
            }
            fn transition_time(&mut self) -> &mut Option<Time> {
                &mut self.last_transition_time
            }
            fn reports_same(&self, other: &Self) -> bool {
                (&self.status, &self.reason, &self.message)
                    == (&other.status, &other.reason, &other.message)
            }
        }
    )*};
}

impl_condition!(PodCondition, NodeCondition);

/// Sets `new` in `conditions`: it replaces the condition of the same type, or is appended.
/// Its lastTransitionTime is the old one when the status does not change, else `now`.
/// Returns whether the status, reason or message changed (or the type was new), that is,
/// whether the object needs writing.
pub fn set_condition<C: Condition>(conditions: &mut Vec<C>, mut new: C, now: Time) -> bool {
    *new.transition_time() = Some(now);
    match conditions
        .iter_mut()
        .find(|c| c.condition_type() == new.condition_type())
    {
        Some(old) => {
            if old.status() == new.status() {
                *new.transition_time() = *old.transition_time();
            }
            let changed = !old.reports_same(&new);
            *old = new;
            changed
        }
        None => {
            // One more slot, not the doubling of `push`: an object holds a few conditions,
            // set one at a time, and stays in caches for its whole life (a bound pod's one
            // PodScheduled condition held a block of four, 384 bytes more per pod).
            conditions.reserve_exact(1);
            conditions.push(new);
            true
        }
    }
}

/// Sets a pod's Ready and ContainersReady conditions together, as kubelet does from its
/// containers' readiness. Returns whether either changed.
pub fn set_containers_ready(conditions: &mut Vec<PodCondition>, ready: bool, now: Time) -> bool {
    [CONDITION_READY, CONDITION_CONTAINERS_READY]
        .into_iter()
        .fold(false, |changed, type_| {
            let condition = PodCondition {
                type_: type_.into(),
                status: status_of(ready).into(),
                ..PodCondition::default()
            };
            set_condition(conditions, condition, now) || changed
        })
}

/// The condition of type `type_`, if present.
pub fn find_condition<'a, C: Condition>(conditions: &'a [C], type_: &str) -> Option<&'a C> {
    conditions.iter().find(|c| c.condition_type() == type_)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{CONDITION_POD_SCHEDULED, STATUS_FALSE, STATUS_TRUE};

    fn cond(type_: &str, status: &str, reason: &str, at: i64) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            last_transition_time: Some(Time::from_unix_nanos(at)),
            ..PodCondition::default()
        }
    }

    #[test]
    fn a_new_condition_takes_one_slot() {
        let mut conditions = Vec::new();
        for type_ in [CONDITION_POD_SCHEDULED, CONDITION_READY] {
            set_condition(
                &mut conditions,
                cond(type_, STATUS_TRUE, "", 0),
                Time::from_unix_nanos(1),
            );
            assert_eq!(conditions.capacity(), conditions.len(), "after {type_}");
        }
    }

    #[test]
    fn set_condition_keeps_the_transition_time_of_an_unchanged_status() {
        struct Case {
            name: &'static str,
            before: Vec<PodCondition>,
            set: PodCondition,
            want: Vec<PodCondition>,
            want_changed: bool,
        }
        let now = 100;
        let cases = vec![
            Case {
                name: "a new type is appended, at now",
                before: vec![cond(CONDITION_READY, STATUS_TRUE, "", 1)],
                set: cond(CONDITION_POD_SCHEDULED, STATUS_FALSE, "Unschedulable", 0),
                want: vec![
                    cond(CONDITION_READY, STATUS_TRUE, "", 1),
                    cond(CONDITION_POD_SCHEDULED, STATUS_FALSE, "Unschedulable", now),
                ],
                want_changed: true,
            },
            Case {
                name: "the same status keeps its time; a new reason is a change",
                before: vec![cond(
                    CONDITION_POD_SCHEDULED,
                    STATUS_FALSE,
                    "SchedulingGated",
                    1,
                )],
                set: cond(CONDITION_POD_SCHEDULED, STATUS_FALSE, "Unschedulable", 0),
                want: vec![cond(
                    CONDITION_POD_SCHEDULED,
                    STATUS_FALSE,
                    "Unschedulable",
                    1,
                )],
                want_changed: true,
            },
            Case {
                name: "the same report is no change",
                before: vec![cond(CONDITION_READY, STATUS_TRUE, "", 1)],
                set: cond(CONDITION_READY, STATUS_TRUE, "", 0),
                want: vec![cond(CONDITION_READY, STATUS_TRUE, "", 1)],
                want_changed: false,
            },
            Case {
                name: "a new status replaces the old one, at now",
                before: vec![cond(CONDITION_READY, STATUS_TRUE, "", 1)],
                set: cond(CONDITION_READY, STATUS_FALSE, "", 0),
                want: vec![cond(CONDITION_READY, STATUS_FALSE, "", now)],
                want_changed: true,
            },
        ];
        for case in cases {
            let mut conditions = case.before;
            let changed = set_condition(&mut conditions, case.set, Time::from_unix_nanos(now));
            assert_eq!(conditions, case.want, "{}", case.name);
            assert_eq!(changed, case.want_changed, "{}: changed", case.name);
        }
    }
}
