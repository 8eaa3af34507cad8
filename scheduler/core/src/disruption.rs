//! PodDisruptionBudget arithmetic, once (kube's disruption controller): which pods a budget
//! covers, how many pods it expects and wants healthy, and how many disruptions it allows.
//! The live disruption controller, the eviction API and `berth sim` all count with it; they
//! differ only in where the counts come from (the sim's approximation is in
//! [`crate::sim::budgets`]).
//!
//! - expected: for `maxUnavailable` and a percentage `minAvailable`, the sum of the scales
//!   of the covered pods' controllers; for an integer `minAvailable`, the covered pods;
//!   with neither field set, none.
//! - desired healthy: `expected - maxUnavailable` (at least 0), or the resolved
//!   `minAvailable`; percentages round up.
//! - allowed: `healthy - desired` (at least 0), and 0 when no pod is expected.

use berth_model::model::{IntOrStringError, Pod, PodDisruptionBudget};

/// Why a budget's expected pod count cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// A covered pod has no controller whose scale Berth knows.
    #[error("found no controllers for pod {pod:?}")]
    NoController {
        /// The pod's name.
        pod: String,
    },
    /// minAvailable or maxUnavailable is not a count or a percentage.
    #[error("{0}")]
    Value(#[from] IntOrStringError),
}

/// Whether the budget covers the pod: same namespace, and the selector (if any) matches; a
/// budget without a selector covers nothing.
pub fn covers(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    pod.metadata.namespace == pdb.metadata.namespace
        && pdb
            .spec
            .selector
            .as_ref()
            .is_some_and(|s| s.matches(&pod.metadata.labels))
}

/// A budget's expected and desired-healthy pod counts (kube's getExpectedPodCount), from the
/// number of covered pods and, when the rule needs it, the scale of their controllers
/// (`scale` is called at most once, and only then).
pub fn expected_and_desired(
    pdb: &PodDisruptionBudget,
    covered_pods: usize,
    scale: impl FnOnce() -> Result<i32, BudgetError>,
) -> Result<(i32, i32), BudgetError> {
    let spec = &pdb.spec;
    if let Some(max_unavailable) = &spec.max_unavailable {
        let expected = scale()?;
        let max = max_unavailable.resolve(expected)?;
        Ok((expected, clamp(i64::from(expected) - max)))
    } else if let Some(min_available) = &spec.min_available {
        if min_available.is_string() {
            let expected = scale()?;
            Ok((expected, clamp(min_available.resolve(expected)?)))
        } else {
            let expected = clamp(i64::try_from(covered_pods).unwrap_or(i64::MAX));
            Ok((expected, clamp(min_available.resolve(0)?)))
        }
    } else {
        Ok((0, 0))
    }
}

/// `disruptionsAllowed`: healthy pods beyond the desired ones, and none when no pod is
/// expected.
pub fn disruptions_allowed(expected: i32, desired: i32, healthy: i32) -> i32 {
    if expected <= 0 {
        0
    } else {
        (healthy - desired).max(0)
    }
}

/// A count as an `i32` in `0..=i32::MAX`.
pub fn clamp(v: i64) -> i32 {
    i32::try_from(v.clamp(0, i64::from(i32::MAX))).unwrap_or(i32::MAX)
}
