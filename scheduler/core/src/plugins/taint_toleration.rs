//! TaintToleration: a pod may not go where a NoSchedule or NoExecute taint is not tolerated,
//! and prefers nodes with fewer untolerated PreferNoSchedule taints. Also home of the
//! toleration-matching rules that NodeUnschedulable, the NoExecute controller and DaemonSets
//! reuse.

use berth_model::model::{Taint, TaintEffect, Toleration, TolerationOperator};

use super::default_normalize_score;
use crate::framework::{
    CycleState, Filter, Fit, NodeInfo, Plugin, PluginError, PodInfo, PreScore, PreScoreInput,
    Rejection, Score, MAX_NODE_SCORE,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "TaintToleration";

/// Start of the Filter's reason; the full reason is `node(s) had untolerated taint {key:
/// value}` for the first untolerated taint (see [`untolerated_taint_reason`]).
pub const REASON_UNTOLERATED_TAINT_PREFIX: &str = "node(s) had untolerated taint";

/// kube's Filter reason for an untolerated taint: `node(s) had untolerated taint {key: value}`.
pub fn untolerated_taint_reason(taint: &Taint) -> String {
    format!(
        "{REASON_UNTOLERATED_TAINT_PREFIX} {{{}: {}}}",
        taint.key, taint.value
    )
}

/// Whether one toleration matches a taint (kube's `Toleration.ToleratesTaint`): an effect, when
/// set, must equal the taint's; a key, when set, must equal the taint's; then `Exists` matches
/// any value and `Equal` (the default) compares values. An empty key with `Exists` therefore
/// matches every taint.
pub fn toleration_matches(toleration: &Toleration, taint: &Taint) -> bool {
    if toleration.effect.is_some_and(|e| e != taint.effect) {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    match toleration.operator.unwrap_or_default() {
        TolerationOperator::Exists => true,
        TolerationOperator::Equal => toleration.value == taint.value,
    }
}

/// Whether any of `tolerations` matches `taint` (kube's `TolerationsTolerateTaint`).
pub fn tolerates(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| toleration_matches(t, taint))
}

/// The first taint, in node order, that passes `considered` and is not tolerated (kube's
/// `FindMatchingUntoleratedTaint`).
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    considered: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|taint| considered(taint) && !tolerates(tolerations, taint))
}

/// Whether a taint keeps new pods off the node (NoSchedule or NoExecute), as opposed to only
/// lowering its score (PreferNoSchedule).
pub fn is_do_not_schedule(taint: &Taint) -> bool {
    matches!(
        taint.effect,
        TaintEffect::NoSchedule | TaintEffect::NoExecute
    )
}

/// The plugin. It takes no args.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaintToleration;

/// The pod's tolerations that can tolerate a PreferNoSchedule taint, computed in PreScore.
#[derive(Clone)]
struct PreScoreState {
    tolerations: Vec<Toleration>,
}

impl PreScoreState {
    fn new(pod: &PodInfo) -> Self {
        // An absent effect matches every effect, PreferNoSchedule included.
        let tolerations = pod
            .pod
            .spec
            .tolerations
            .iter()
            .filter(|t| t.effect.is_none_or(|e| e == TaintEffect::PreferNoSchedule))
            .cloned()
            .collect();
        PreScoreState { tolerations }
    }

    fn count_untolerated(&self, node: &NodeInfo) -> i64 {
        if !node.hot().has_prefer_no_schedule_taints {
            return 0;
        }
        let count = node
            .node
            .spec
            .taints
            .iter()
            .filter(|t| t.effect == TaintEffect::PreferNoSchedule)
            .filter(|t| !tolerates(&self.tolerations, t))
            .count();
        i64::try_from(count).unwrap_or(i64::MAX)
    }
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl Filter for TaintToleration {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Fit {
        if !node.hot().has_do_not_schedule_taints {
            return Fit::Yes;
        }
        match find_untolerated_taint(
            &node.node.spec.taints,
            &pod.pod.spec.tolerations,
            is_do_not_schedule,
        ) {
            None => Fit::Yes,
            Some(taint) => Fit::No(Rejection::unresolvable(
                NAME,
                untolerated_taint_reason(taint),
            )),
        }
    }

    /// The verdict reads the node's taints and the pod's tolerations.
    fn same_verdict(&self, a: &PodInfo, b: &PodInfo) -> bool {
        a.pod.spec.tolerations == b.pod.spec.tolerations
    }
}

impl PreScore for TaintToleration {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let pod = input.pod;
        state.insert(PreScoreState::new(pod));
        Ok(())
    }
}

impl Score for TaintToleration {
    /// The number of PreferNoSchedule taints the pod does not tolerate (lower is better).
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        match state.get::<PreScoreState>() {
            Some(s) => s.count_untolerated(node),
            None => PreScoreState::new(pod).count_untolerated(node),
        }
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        let computed;
        let s = match state.get::<PreScoreState>() {
            Some(s) => s,
            None => {
                computed = PreScoreState::new(pod);
                &computed
            }
        };
        for (score, node) in scores.iter_mut().zip(nodes) {
            *score = s.count_untolerated(node);
        }
    }

    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
    }

    /// The raw score reads the node's taints and the pod's tolerations.
    fn same_raw_score(&self, a: &PodInfo, b: &PodInfo) -> bool {
        a.pod.spec.tolerations == b.pod.spec.tolerations
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Snapshot;
    use crate::plugins::testing::{
        equal_toleration, exists_toleration, scores, Info, NodeBuilder, PodBuilder,
    };
    use berth_model::testing::taint;

    #[test]
    fn toleration_matching_follows_kube() {
        use TaintEffect::*;
        struct Case {
            name: &'static str,
            toleration: Toleration,
            taint: Taint,
            want: bool,
        }
        let cases = vec![
            Case {
                name: "equal: same key, value and effect",
                toleration: equal_toleration("k", "v", Some(NoSchedule)),
                taint: taint("k", "v", NoSchedule),
                want: true,
            },
            Case {
                name: "equal: different value",
                toleration: equal_toleration("k", "v", Some(NoSchedule)),
                taint: taint("k", "w", NoSchedule),
                want: false,
            },
            Case {
                name: "operator defaults to Equal",
                toleration: Toleration {
                    key: "k".into(),
                    value: "v".into(),
                    ..Toleration::default()
                },
                taint: taint("k", "w", NoExecute),
                want: false,
            },
            Case {
                name: "equal with empty value matches an empty-valued taint",
                toleration: equal_toleration("k", "", None),
                taint: taint("k", "", NoSchedule),
                want: true,
            },
            Case {
                name: "exists: any value",
                toleration: exists_toleration("k", Some(NoSchedule)),
                taint: taint("k", "anything", NoSchedule),
                want: true,
            },
            Case {
                name: "exists: different key",
                toleration: exists_toleration("k", None),
                taint: taint("other", "", NoSchedule),
                want: false,
            },
            Case {
                name: "effect mismatch",
                toleration: exists_toleration("k", Some(NoSchedule)),
                taint: taint("k", "", NoExecute),
                want: false,
            },
            Case {
                name: "empty effect matches every effect",
                toleration: equal_toleration("k", "v", None),
                taint: taint("k", "v", PreferNoSchedule),
                want: true,
            },
            Case {
                name: "empty key with Exists tolerates everything",
                toleration: exists_toleration("", None),
                taint: taint("any", "thing", NoExecute),
                want: true,
            },
            Case {
                name: "empty key with Exists still honours the effect",
                toleration: exists_toleration("", Some(PreferNoSchedule)),
                taint: taint("any", "thing", NoExecute),
                want: false,
            },
        ];
        for case in cases {
            assert_eq!(
                toleration_matches(&case.toleration, &case.taint),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn filter_rejects_the_first_untolerated_blocking_taint() {
        use TaintEffect::*;
        struct Case {
            name: &'static str,
            tolerations: Vec<Toleration>,
            taints: Vec<Taint>,
            want: Option<&'static str>,
        }
        let cases = vec![
            Case {
                name: "no taints",
                tolerations: vec![],
                taints: vec![],
                want: None,
            },
            Case {
                name: "untolerated NoSchedule",
                tolerations: vec![],
                taints: vec![taint("dedicated", "gpu", NoSchedule)],
                want: Some("node(s) had untolerated taint {dedicated: gpu}"),
            },
            Case {
                name: "untolerated NoExecute blocks scheduling too",
                tolerations: vec![],
                taints: vec![taint("node.kubernetes.io/not-ready", "", NoExecute)],
                want: Some("node(s) had untolerated taint {node.kubernetes.io/not-ready: }"),
            },
            Case {
                name: "PreferNoSchedule never filters",
                tolerations: vec![],
                taints: vec![taint("soft", "x", PreferNoSchedule)],
                want: None,
            },
            Case {
                name: "tolerated taint",
                tolerations: vec![equal_toleration("dedicated", "gpu", Some(NoSchedule))],
                taints: vec![taint("dedicated", "gpu", NoSchedule)],
                want: None,
            },
            Case {
                name: "first untolerated one is reported",
                tolerations: vec![exists_toleration("a", None)],
                taints: vec![
                    taint("a", "1", NoSchedule),
                    taint("b", "2", NoExecute),
                    taint("c", "3", NoSchedule),
                ],
                want: Some("node(s) had untolerated taint {b: 2}"),
            },
            Case {
                name: "tolerate-everything toleration",
                tolerations: vec![exists_toleration("", None)],
                taints: vec![taint("a", "1", NoSchedule), taint("b", "2", NoExecute)],
                want: None,
            },
        ];
        for case in cases {
            let pod = PodBuilder::new("p").tolerations(case.tolerations).info();
            let mut node = NodeBuilder::new("n1");
            for t in case.taints {
                node = node.taint(&t.key, &t.value, t.effect);
            }
            let node = node.info();
            let got = TaintToleration.filter(&CycleState::new(), &pod, &node);
            match case.want {
                None => assert_eq!(got, Fit::Yes, "{}", case.name),
                Some(reason) => assert_eq!(
                    got,
                    Fit::No(Rejection::unresolvable(NAME, reason.to_string())),
                    "{}",
                    case.name
                ),
            }
        }
    }

    #[test]
    fn score_counts_untolerated_prefer_no_schedule_and_normalizes_reversed() {
        use TaintEffect::*;
        struct Case {
            name: &'static str,
            tolerations: Vec<Toleration>,
            nodes: Vec<Vec<Taint>>,
            want_raw: Vec<i64>,
            want: Vec<i64>,
        }
        let cases = vec![
            Case {
                name: "fewer untolerated taints score higher",
                tolerations: vec![],
                nodes: vec![
                    vec![],
                    vec![taint("a", "", PreferNoSchedule)],
                    vec![
                        taint("a", "", PreferNoSchedule),
                        taint("b", "", PreferNoSchedule),
                    ],
                ],
                want_raw: vec![0, 1, 2],
                want: vec![100, 50, 0],
            },
            Case {
                name: "blocking taints are not counted",
                tolerations: vec![],
                nodes: vec![vec![taint("a", "", NoSchedule)], vec![]],
                want_raw: vec![0, 0],
                want: vec![100, 100],
            },
            Case {
                name: "a PreferNoSchedule toleration counts",
                tolerations: vec![equal_toleration("a", "x", Some(PreferNoSchedule))],
                nodes: vec![
                    vec![taint("a", "x", PreferNoSchedule)],
                    vec![taint("b", "", PreferNoSchedule)],
                ],
                want_raw: vec![0, 1],
                want: vec![100, 0],
            },
            Case {
                name: "a toleration with no effect counts",
                tolerations: vec![exists_toleration("a", None)],
                nodes: vec![
                    vec![taint("a", "x", PreferNoSchedule)],
                    vec![taint("b", "", PreferNoSchedule)],
                ],
                want_raw: vec![0, 1],
                want: vec![100, 0],
            },
            Case {
                name: "a NoSchedule toleration does not tolerate PreferNoSchedule",
                tolerations: vec![exists_toleration("a", Some(NoSchedule))],
                nodes: vec![vec![taint("a", "x", PreferNoSchedule)], vec![]],
                want_raw: vec![1, 0],
                want: vec![0, 100],
            },
            Case {
                name: "three levels",
                tolerations: vec![],
                nodes: vec![
                    vec![taint("a", "", PreferNoSchedule)],
                    vec![
                        taint("a", "", PreferNoSchedule),
                        taint("b", "", PreferNoSchedule),
                        taint("c", "", PreferNoSchedule),
                    ],
                    vec![],
                ],
                want_raw: vec![1, 3, 0],
                want: vec![67, 0, 100],
            },
        ];
        for case in cases {
            let pod = PodBuilder::new("p").tolerations(case.tolerations).info();
            let nodes: Vec<NodeInfo> = case
                .nodes
                .iter()
                .enumerate()
                .map(|(i, taints)| {
                    let mut n = NodeBuilder::new(&format!("n{i}"));
                    for t in taints {
                        n = n.taint(&t.key, &t.value, t.effect);
                    }
                    n.info()
                })
                .collect();
            let feasible: Vec<&NodeInfo> = nodes.iter().collect();
            let (raw, normalized) = scores(&TaintToleration, &pod, &Snapshot::new(), &feasible)
                .expect("pre_score never fails");
            assert_eq!(raw, case.want_raw, "{}: raw", case.name);
            assert_eq!(normalized, case.want, "{}: normalized", case.name);
        }
    }
}
