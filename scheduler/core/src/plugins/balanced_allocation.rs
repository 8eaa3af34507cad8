//! NodeResourcesBalancedAllocation: prefers nodes whose resources the pod would leave more
//! evenly used than it found them, so no resource runs out while others sit idle.
//!
//! Since Kubernetes 1.36 the score is the change in balance the pod causes: with
//! `S = (1 - std of the requested fractions) * 100` before and after placing the pod,
//! `score = 50 + floor((50 + S_after - S_before) / 2)`, in 50..=100 (75 when the balance does
//! not change). Before 1.36 it was `S_after` alone.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::node_resources_fit::{
    default_resources, ResourceAllocation, ResourceSpec, INLINE_RESOURCES,
};
use super::InvalidArgs;
use crate::framework::{
    CycleState, NodeInfo, Plugin, PluginError, PodInfo, PreScore, PreScoreInput, Score,
    MAX_NODE_SCORE,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Resources to balance; empty means cpu and memory. Weights must be 1 (or absent).
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
}

/// The plugin, built from validated [`Args`].
#[derive(Clone, Debug)]
pub struct BalancedAllocation {
    allocation: ResourceAllocation,
}

impl BalancedAllocation {
    /// Applies kube's defaults (cpu and memory; weight 1) and validates: no resource twice,
    /// every weight 1.
    pub fn try_new(args: Args) -> Result<Self, InvalidArgs> {
        let mut resources = if args.resources.is_empty() {
            default_resources()
        } else {
            args.resources
        };
        for r in &mut resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
        for (i, r) in resources.iter().enumerate() {
            if resources[..i].iter().any(|prev| prev.name == r.name) {
                return Err(InvalidArgs::new(
                    format!("resources[{i}].name"),
                    format!("duplicate value {:?}", r.name),
                ));
            }
            if r.weight != 1 {
                return Err(InvalidArgs::new(
                    format!("resources[{i}].weight"),
                    format!("invalid value {}: must be 1", r.weight),
                ));
            }
        }
        Ok(BalancedAllocation {
            // Balance is judged on what pods actually request, not on the non-zero defaults.
            allocation: ResourceAllocation::new(resources, true),
        })
    }
}

/// The balance of per-resource requested and allocatable amounts (resources with
/// allocatable 0 are left out): fractions capped at 1, their population standard deviation
/// (`|f1 - f2| / 2` for two), and `(1 - std) * 100`.
pub fn balance(requested: impl Iterator<Item = i64>, allocatable: &[i64]) -> f64 {
    // The fractions on the stack for up to INLINE_RESOURCES resources (kube's default is
    // two): this runs twice for every feasible node of every cycle.
    let mut inline = [0f64; INLINE_RESOURCES];
    let mut spilled = Vec::new();
    let mut n = 0;
    for (req, &alloc) in requested.zip(allocatable) {
        if alloc == 0 {
            continue;
        }
        let fraction = (req as f64 / alloc as f64).min(1.0);
        if n < INLINE_RESOURCES {
            inline[n] = fraction;
        } else {
            if spilled.is_empty() {
                spilled.extend_from_slice(&inline);
            }
            spilled.push(fraction);
        }
        n += 1;
    }
    let fractions = if n <= INLINE_RESOURCES {
        &inline[..n]
    } else {
        &spilled[..]
    };
    let std = match *fractions {
        [] | [_] => 0.0,
        [a, b] => ((a - b) / 2.0).abs(),
        _ => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            let variance = fractions
                .iter()
                .map(|f| (f - mean) * (f - mean))
                .sum::<f64>()
                / n as f64;
            variance.sqrt()
        }
    };
    (1.0 - std) * MAX_NODE_SCORE as f64
}

/// [`balance`] of two resources, both with allocatable > 0.
fn balance_of_two(r0: i64, r1: i64, a0: i64, a1: i64) -> f64 {
    let f0 = (r0 as f64 / a0 as f64).min(1.0);
    let f1 = (r1 as f64 / a1 as f64).min(1.0);
    (1.0 - ((f0 - f1) / 2.0).abs()) * MAX_NODE_SCORE as f64
}

/// kube's (1.36) balanced score: how much placing the pod, whose requests are
/// `pod_requests`, changes the node's [`balance`]; `requested` already includes the pod.
/// `50 + floor((50 + after - before) / 2)`, kept within 0..=100.
pub fn balance_change_score(requested: &[i64], allocatable: &[i64], pod_requests: &[i64]) -> i64 {
    let (after, before) = match (requested, allocatable, pod_requests) {
        // kube's default, cpu and memory on a node that has both: the two balances directly,
        // with the arithmetic of `balance` for two fractions (tested equal to it).
        (&[r0, r1], &[a0, a1], &[p0, p1]) if a0 != 0 && a1 != 0 => (
            balance_of_two(r0, r1, a0, a1),
            balance_of_two(r0 - p0, r1 - p1, a0, a1),
        ),
        _ => (
            balance(requested.iter().copied(), allocatable),
            balance(
                requested.iter().zip(pod_requests).map(|(r, p)| r - p),
                allocatable,
            ),
        ),
    };
    let half = MAX_NODE_SCORE / 2;
    let change = (half as f64 + after - before) / 2.0;
    if change.is_nan() {
        return 0;
    }
    half.saturating_add(floor_to_i64(change))
        .clamp(0, MAX_NODE_SCORE)
}

/// `x.floor() as i64` (saturating as `as` does), without the library call `floor` is on
/// x86-64 without SSE4.1: it ran for every scored node of every cycle.
fn floor_to_i64(x: f64) -> i64 {
    let truncated = x as i64;
    if (truncated as f64) > x {
        truncated.saturating_sub(1)
    } else {
        truncated
    }
}

/// The pod's requests of the balanced resources; `None` for a pod requesting none of them,
/// which kube does not score (so best-effort pods do not pile onto one node).
#[derive(Clone)]
struct PreScoreState {
    pod_requests: Option<Vec<i64>>,
}

impl PreScoreState {
    fn new(allocation: &ResourceAllocation, pod: &PodInfo) -> Self {
        let requests = allocation.pod_requests(pod);
        let best_effort = requests.iter().all(|&r| r == 0);
        PreScoreState {
            pod_requests: (!best_effort).then_some(requests),
        }
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreScore for BalancedAllocation {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let pod = input.pod;
        state.insert(PreScoreState::new(&self.allocation, pod));
        Ok(())
    }
}

impl BalancedAllocation {
    /// PreScore's state, or one computed now.
    fn pre_score_state<'a>(&self, state: &'a CycleState, pod: &PodInfo) -> Cow<'a, PreScoreState> {
        match state.get::<PreScoreState>() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(PreScoreState::new(&self.allocation, pod)),
        }
    }

    fn score_node(&self, pod_requests: &[i64], node: &NodeInfo) -> i64 {
        self.allocation
            .with_node_vectors(node, pod_requests, |requested, allocatable| {
                balance_change_score(requested, allocatable, pod_requests)
            })
    }
}

impl Score for BalancedAllocation {
    /// 0 on every node for a pod that requests none of the resources (kube skips the plugin).
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        match &self.pre_score_state(state, pod).pod_requests {
            Some(pod_requests) => self.score_node(pod_requests, node),
            None => 0,
        }
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        let s = self.pre_score_state(state, pod);
        for (score, node) in scores.iter_mut().zip(nodes) {
            *score = match &s.pod_requests {
                Some(pod_requests) => self.score_node(pod_requests, node),
                None => 0,
            };
        }
    }

    /// The raw score reads the node's sums and the pod's requests.
    fn same_raw_score(&self, a: &PodInfo, b: &PodInfo) -> bool {
        crate::plugins::node_resources_fit::same_requests(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{
        check_args, check_score, container, ArgsCase, NodeBuilder, PodBuilder,
    };

    fn node_4cpu_8gi() -> NodeBuilder {
        NodeBuilder::new("n1").cpu_millis(4000).memory_mib(8192)
    }

    /// The integer floor equals the float one, on both sides of zero, at and between
    /// whole numbers, and at the extremes.
    #[test]
    fn floor_to_i64_equals_the_float_floor() {
        let cases = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            24.999_999_999_999_996,
            -24.999_999_999_999_996,
            37.5,
            -12.25,
            75.0,
            -25.0,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for x in cases {
            assert_eq!(floor_to_i64(x), x.floor() as i64, "{x}");
        }
        for i in -2000..=2000 {
            let x = f64::from(i) / 16.0;
            assert_eq!(floor_to_i64(x), x.floor() as i64, "{x}");
        }
    }

    #[test]
    fn two_resources_fast_path_equals_the_general_balance() {
        let gib = 1i64 << 30;
        let allocs = [
            (4000, 32 * gib),
            (1, 1),
            (3999, 7 * gib + 3),
            (128_000, gib),
        ];
        let amounts = [
            0,
            1,
            100,
            999,
            2000,
            3999,
            4000,
            5000,
            300 << 20,
            32 * gib,
            40 * gib,
        ];
        for &(a0, a1) in &allocs {
            for &r0 in &amounts {
                for &r1 in &amounts {
                    for &(p0, p1) in &[(0, 0), (100, 500 << 20), (r0, r1), (1, 0)] {
                        let (req, alloc, pod) = ([r0, r1], [a0, a1], [p0, p1]);
                        let after = balance(req.iter().copied(), &alloc);
                        let before = balance(req.iter().zip(&pod).map(|(r, p)| r - p), &alloc);
                        assert_eq!(after.to_bits(), balance_of_two(r0, r1, a0, a1).to_bits());
                        assert_eq!(
                            before.to_bits(),
                            balance_of_two(r0 - p0, r1 - p1, a0, a1).to_bits()
                        );
                        let half = MAX_NODE_SCORE as f64 / 2.0;
                        let want = ((half + ((half + after - before) / 2.0).floor()) as i64)
                            .clamp(0, MAX_NODE_SCORE);
                        assert_eq!(balance_change_score(&req, &alloc, &pod), want);
                    }
                }
            }
        }
    }

    #[test]
    fn score_follows_kube_standard_deviation_formula() {
        struct Case {
            name: &'static str,
            args: Args,
            pod: PodBuilder,
            node: NodeBuilder,
            want: i64,
        }
        let three = Args {
            resources: ["cpu", "memory", "example.com/gpu"]
                .iter()
                .map(|n| ResourceSpec {
                    name: n.to_string(),
                    weight: 1,
                })
                .collect(),
        };
        let cases = vec![
            Case {
                // 0.25 and 0.25 after, 0 and 0 before: no change in balance.
                name: "equal fractions keep an empty node balanced",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(2048),
                node: node_4cpu_8gi(),
                want: 75,
            },
            Case {
                // After: 0.5 and 0.25, std 0.125, S 87.5; before: S 100.
                // 50 + floor((50 - 12.5) / 2) = 68.
                name: "uneven fractions lose balance",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(2000).memory_mib(2048),
                node: node_4cpu_8gi(),
                want: 68,
            },
            Case {
                // Existing pod: 1000m, no memory. Requested (not non-zero) amounts count:
                // after cpu 2000/4000 = 0.5, memory 4096/8192 = 0.5 (S 100); before 0.25
                // and 0 (S 87.5): 50 + floor((50 + 12.5) / 2) = 81.
                name: "existing pods count what they request, not the non-zero defaults",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(4096),
                node: node_4cpu_8gi().with_pod(PodBuilder::new("e").cpu_millis(1000)),
                want: 81,
            },
            Case {
                // The pod's missing memory request counts 0: cpu 0.25, memory 0: S 87.5.
                name: "the pod's missing request counts 0",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(1000),
                node: node_4cpu_8gi(),
                want: 68,
            },
            Case {
                // cpu fraction 2 is capped at 1; memory 0.5: std 0.25, S 75.
                name: "fractions are capped at 1",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(8000).memory_mib(4096),
                node: node_4cpu_8gi(),
                want: 62,
            },
            Case {
                // 0.25, 0.5, 0.75: mean 0.5, std sqrt(0.125/3) = 0.2041, S 79.59;
                // 50 + floor((50 - 20.41) / 2) = 64.
                name: "three resources use the full standard deviation",
                args: three.clone(),
                pod: PodBuilder::new("p")
                    .cpu_millis(1000)
                    .memory_mib(4096)
                    .request("example.com/gpu", "3"),
                node: node_4cpu_8gi().allocatable("example.com/gpu", "4"),
                want: 64,
            },
            Case {
                // The gpu is not requested, so only cpu and memory count.
                name: "an extended resource the pod does not request is left out",
                args: three,
                pod: PodBuilder::new("p").cpu_millis(1000).memory_mib(2048),
                node: node_4cpu_8gi().allocatable("example.com/gpu", "4"),
                want: 75,
            },
            Case {
                name: "a resource the node lacks is left out",
                args: Args::default(),
                pod: PodBuilder::new("p").cpu_millis(3000).memory_mib(100),
                node: NodeBuilder::new("n1").cpu_millis(4000),
                want: 75,
            },
            Case {
                // Before: cpu 0.5, memory 0 (S 75); after: 0.5 and 0.5 (S 100):
                // 50 + floor((50 + 25) / 2) = 87.
                name: "a pod that evens the node out scores above one that keeps it",
                args: Args::default(),
                pod: PodBuilder::new("p").memory_mib(4096),
                node: node_4cpu_8gi().with_pod(PodBuilder::new("e").cpu_millis(2000)),
                want: 87,
            },
            Case {
                name: "a best-effort pod is not scored",
                args: Args::default(),
                pod: PodBuilder::new("p").container(container("c", &[])),
                node: node_4cpu_8gi().with_pod(PodBuilder::new("e").cpu_millis(3000)),
                want: 0,
            },
        ];
        for case in cases {
            let plugin = BalancedAllocation::try_new(case.args).expect("valid args");
            check_score(case.name, &plugin, case.pod, case.node, case.want);
        }
    }

    #[test]
    fn args_validation() {
        check_args(
            NAME,
            &[
                ArgsCase {
                    name: "defaults",
                    yaml: "{}",
                    want_err: None,
                },
                ArgsCase {
                    name: "weight 1 or absent",
                    yaml: "resources: [{name: cpu}, {name: memory, weight: 1}]",
                    want_err: None,
                },
                ArgsCase {
                    name: "other weights are rejected",
                    yaml: "resources: [{name: cpu, weight: 2}]",
                    want_err: Some("resources[0].weight: invalid value 2: must be 1"),
                },
                ArgsCase {
                    name: "duplicates are rejected",
                    yaml: "resources: [{name: cpu}, {name: cpu}]",
                    want_err: Some("resources[1].name: duplicate value \"cpu\""),
                },
                ArgsCase {
                    name: "unknown fields are rejected",
                    yaml: "resource: []",
                    want_err: Some("unknown field `resource`"),
                },
            ],
        );
    }
}
