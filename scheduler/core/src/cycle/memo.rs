//! The cycle's memo of node-local results: the filters' verdict on a node and its raw
//! scores, kept for the next pods that ask the same of each plugin while the node is
//! unchanged.
//!
//! kube-scheduler runs every Filter and Score on every visited node for every pod. Most of
//! that work repeats: pods of one Deployment or Job ask the same of a node, and a cycle
//! changes one node (the one it binds to). A plugin that can tell when two pods get the same
//! answer from any one node state says so ([`Filter::same_verdict`],
//! [`Score::same_raw_score`]); a node's state is its [`crate::framework::NodeInfo`]'s
//! generation, renewed on every change. The memo keeps, per node of the snapshot, the
//! filters' verdict (a pass, or the first rejection with its reasons) and the raw scores,
//! each stamped with the generation it holds for and an epoch: the plugins and the pod they
//! were computed for, renewed whenever a pod asks something else. The decisions, messages
//! and diagnoses are kube's: only what would be computed again is reused. Errors are never
//! kept, nor anything of a cycle with nominated pods or with a filter that reads more than
//! its node; normalizing and weighing run on every cycle.
//!
//! Debug builds check every reuse against a fresh run of the plugins.

use std::sync::Arc;

use crate::framework::{Filter, PodInfo, Rejection, Score};

/// Raw scores an entry keeps: those of a cycle's first this many memoized Score plugins
/// (kube's default profile has four: TaintToleration, NodeAffinity, NodeResourcesFit and
/// NodeResourcesBalancedAllocation). Further ones score afresh.
pub(super) const SCORE_SLOTS: usize = 4;

/// Which state of a node and which epoch a kept result is of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stamp {
    /// The node's generation (0: nothing kept; generations start at 1).
    generation: u64,
    epoch: u64,
}

/// Set in a verdict's stamped generation when the verdict is a rejection, so that a pass is
/// told by its stamp alone. Generations count up from 1 and never reach it.
const REJECTED: u64 = 1 << 63;

/// What an epoch's results hold for: these plugins (held, so that their addresses are not
/// reused by others), and any pod that each of them finds the same as `pod`.
struct Basis<P: ?Sized> {
    plugins: Vec<Arc<P>>,
    pod: PodInfo,
    epoch: u64,
}

impl<P: ?Sized> Basis<P> {
    /// Whether `plugins` are this basis's, in order (the same objects, not equal ones).
    fn has_plugins<'a>(&self, plugins: impl ExactSizeIterator<Item = &'a Arc<P>>) -> bool
    where
        P: 'a,
    {
        self.plugins.len() == plugins.len()
            && self
                .plugins
                .iter()
                .zip(plugins)
                .all(|(a, b)| Arc::as_ptr(a).cast::<()>() == Arc::as_ptr(b).cast::<()>())
    }
}

/// How a cycle's scores use the memo: the epoch, and for each Score plugin of the cycle (in
/// order) the slot of its kept raw score, or None for a plugin that scores afresh.
pub(super) struct ScorePlan {
    pub(super) epoch: u64,
    pub(super) slots: Vec<Option<usize>>,
}

/// The memo of one scheduling loop (one [`super::Algorithm`]).
///
/// Its arrays are indexed by snapshot node index, each array apart: a cycle visits a run of
/// consecutive indices, and reads each array in order (a verdict's or the scores' stamp in
/// 16 bytes, four nodes to a cache line; a rejection and the raw scores of one slot in 8).
#[derive(Default)]
pub(super) struct Memo {
    /// Of each node, when `rejections` holds the filter epoch's verdict on it.
    verdicts: Vec<Stamp>,
    /// Of each node, the filters' rejection (None: every filter passed it).
    rejections: Vec<Option<Arc<Rejection>>>,
    /// Of each node, when `scores` were computed.
    scored: Vec<Stamp>,
    /// Raw scores by slot ([`ScorePlan::slots`]), then by node.
    raw: [Vec<i64>; SCORE_SLOTS],
    filters: Option<Basis<dyn Filter>>,
    scores: Option<Basis<dyn Score>>,
    last_epoch: u64,
    /// A buffer for a cycle's raw scores, kept between cycles ([`Memo::scratch`]).
    scratch: Vec<i64>,
    /// How many verdicts and score sets were kept, for the tests to tell reuse.
    #[cfg(test)]
    kept: usize,
}

impl Memo {
    /// The epoch under which this cycle's filter passes are read and kept, and whether it
    /// is an earlier cycle's (so that passes may be kept); None when one of `filters` reads
    /// more than its node (or there is none). A new epoch starts when the filters or what
    /// the pod asks of them changed.
    pub(super) fn filter_epoch(
        &mut self,
        filters: &[Arc<dyn Filter>],
        pod: &PodInfo,
        nodes: usize,
    ) -> Option<(u64, bool)> {
        let same = self.filters.as_ref().is_some_and(|basis| {
            basis.has_plugins(filters.iter())
                && filters.iter().all(|f| f.same_verdict(&basis.pod, pod))
        });
        if !same {
            // A plugin that does not take part answers false even for one pod.
            if filters.is_empty() || !filters.iter().all(|f| f.same_verdict(pod, pod)) {
                self.filters = None;
                return None;
            }
            self.last_epoch += 1;
            self.filters = Some(Basis {
                plugins: filters.to_vec(),
                pod: pod.clone(),
                epoch: self.last_epoch,
            });
        }
        self.verdicts.resize(nodes, Stamp::default());
        self.rejections.resize(nodes, None);
        self.filters.as_ref().map(|basis| (basis.epoch, same))
    }

    /// How this cycle's `scorers` use the memo, or None when none of them takes part. A new
    /// epoch starts when the memoized scorers or what the pod asks of them changed.
    pub(super) fn score_plan(
        &mut self,
        scorers: &[&(Arc<dyn Score>, i64)],
        pod: &PodInfo,
        nodes: usize,
    ) -> Option<ScorePlan> {
        let mut slots = Vec::with_capacity(scorers.len());
        let mut kept: Vec<&Arc<dyn Score>> = Vec::with_capacity(SCORE_SLOTS);
        for (plugin, _) in scorers {
            if kept.len() < SCORE_SLOTS && plugin.same_raw_score(pod, pod) {
                slots.push(Some(kept.len()));
                kept.push(plugin);
            } else {
                slots.push(None);
            }
        }
        if kept.is_empty() {
            self.scores = None;
            return None;
        }
        let same = self.scores.as_ref().is_some_and(|basis| {
            basis.has_plugins(kept.iter().copied())
                && kept.iter().all(|p| p.same_raw_score(&basis.pod, pod))
        });
        if !same {
            self.last_epoch += 1;
            self.scores = Some(Basis {
                plugins: kept.into_iter().cloned().collect(),
                pod: pod.clone(),
                epoch: self.last_epoch,
            });
        }
        self.scored.resize(nodes, Stamp::default());
        for raw in &mut self.raw {
            raw.resize(nodes, 0);
        }
        let epoch = self.scores.as_ref().map(|basis| basis.epoch)?;
        Some(ScorePlan { epoch, slots })
    }

    /// The verdict of the filters of `epoch` on the node of snapshot index `index` at its
    /// `generation` (its state now), if kept: `Some(None)` when every filter passed it.
    #[inline]
    pub(super) fn verdict(
        &self,
        index: usize,
        generation: u64,
        epoch: u64,
    ) -> Option<Option<&Arc<Rejection>>> {
        let stamp = self.verdicts.get(index)?;
        if stamp.epoch != epoch || stamp.generation & !REJECTED != generation {
            return None;
        }
        if stamp.generation & REJECTED == 0 {
            // A pass reads the stamp alone.
            return Some(None);
        }
        Some(self.rejections[index].as_ref())
    }

    /// Keeps the verdict of the filters of `epoch` on the node of index `index` at
    /// `generation` (None: every filter passed it).
    pub(super) fn keep_verdict(
        &mut self,
        index: usize,
        generation: u64,
        epoch: u64,
        rejection: Option<Arc<Rejection>>,
    ) {
        if let Some(stamp) = self.verdicts.get_mut(index) {
            let rejected = if rejection.is_some() { REJECTED } else { 0 };
            *stamp = Stamp {
                generation: generation | rejected,
                epoch,
            };
            self.rejections[index] = rejection;
        }
        #[cfg(test)]
        {
            self.kept += 1;
        }
    }

    /// A zeroed buffer of `len` scores, the one the last cycle gave back if any: a cycle
    /// that allocated its buffer afresh spent more on zeroing new pages than on its scores.
    pub(super) fn scratch(&mut self, len: usize) -> Vec<i64> {
        let mut buffer = std::mem::take(&mut self.scratch);
        buffer.clear();
        buffer.resize(len, 0);
        buffer
    }

    /// Takes back the buffer of [`Memo::scratch`] for the next cycle.
    pub(super) fn recycle(&mut self, buffer: Vec<i64>) {
        self.scratch = buffer;
    }

    /// Whether the raw scores kept for the node of snapshot index `index` are of `epoch` and
    /// of its `generation` (its state now).
    #[inline]
    pub(super) fn has_scores(&self, index: usize, generation: u64, epoch: u64) -> bool {
        self.scored.get(index) == Some(&Stamp { generation, epoch })
    }

    /// The raw scores of slot `slot`, by node index: those of the nodes that
    /// [`Memo::has_scores`] for are current.
    pub(super) fn slot_scores(&self, slot: usize) -> &[i64] {
        &self.raw[slot]
    }

    /// Keeps the raw scores of the node of index `index` at `generation`, by slot.
    pub(super) fn keep_scores(
        &mut self,
        index: usize,
        generation: u64,
        epoch: u64,
        scores: [i64; SCORE_SLOTS],
    ) {
        if let Some(stamp) = self.scored.get_mut(index) {
            *stamp = Stamp { generation, epoch };
            for (kept, score) in self.raw.iter_mut().zip(scores) {
                kept[index] = score;
            }
        }
        #[cfg(test)]
        {
            self.kept += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use berth_model::model::{
        NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Protocol, TaintEffect,
    };
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use crate::cycle::{Algorithm, ScheduleOptions, ScheduleResult};
    use crate::framework::{PodInfo, Snapshot};
    use crate::plugins::testing::{exists_toleration, Info, NodeBuilder, PodBuilder};
    use crate::profile::Profile;

    fn zone_term(zone: &str) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: "zone".into(),
                operator: NodeSelectorOperator::In,
                values: vec![zone.into()],
            }],
            match_fields: vec![],
        }
    }

    /// Pods of a few shapes, each asking something else of the memoized plugins.
    fn pod(shape: usize, i: usize) -> PodInfo {
        let p = PodBuilder::new(&format!("p-{i}")).uid(&format!("uid-{i}"));
        match shape {
            0 => p.cpu_millis(100).memory_mib(200),
            1 => p
                .cpu_millis(500)
                .memory_mib(512)
                .toleration(exists_toleration("dedicated", None)),
            2 => p.cpu_millis(300).node_selector("zone", "a"),
            3 => p.cpu_millis(200).preferred_node_term(10, zone_term("b")),
            4 => p.cpu_millis(100).host_port(8080, Protocol::Tcp, ""),
            5 => p.cpu_millis(2500).memory_mib(4096),
            _ => p,
        }
        .info()
    }

    fn node(i: usize, rng: &mut SmallRng) -> NodeBuilder {
        let zones = ["a", "b", "c"];
        let mut n = NodeBuilder::new(&format!("n-{i:04}"))
            .cpu_millis(1000 * rng.random_range(2..=8))
            .memory_mib(1024 * rng.random_range(4..=16))
            .pods(rng.random_range(5..=30))
            .label("zone", zones[i % 3]);
        match rng.random_range(0..10) {
            0 => n = n.taint("dedicated", "gpu", TaintEffect::NoSchedule),
            1 => n = n.taint("spot", "", TaintEffect::PreferNoSchedule),
            2 if i.is_multiple_of(7) => n = n.unschedulable(),
            _ => {}
        }
        n
    }

    fn outcome(result: &ScheduleResult) -> String {
        match result {
            ScheduleResult::Scheduled {
                node,
                evaluated,
                feasible,
                explanation,
            } => format!("{node} {evaluated} {feasible} {explanation:?}"),
            ScheduleResult::Unschedulable {
                message,
                explanation,
                ..
            } => format!("unschedulable: {message} {explanation:?}"),
            ScheduleResult::Error(e) => format!("error: {e}"),
        }
    }

    /// Which default plugins take part, and that each tells apart two pods that differ in
    /// a field it reads, and not two that differ only in others (name, uid, labels).
    #[test]
    fn plugins_tell_apart_pods_that_ask_something_else() {
        let profile = Profile::default_profile();
        let base = || {
            PodBuilder::new("a")
                .uid("a")
                .cpu_millis(100)
                .memory_mib(200)
        };
        let filters: Vec<&str> = profile
            .filters
            .iter()
            .filter(|f| f.same_verdict(&base().info(), &base().info()))
            .map(|f| f.name())
            .collect();
        let scores: Vec<&str> = profile
            .scores
            .iter()
            .filter(|(s, _)| s.same_raw_score(&base().info(), &base().info()))
            .map(|(s, _)| s.name())
            .collect();
        assert_eq!(
            filters,
            [
                "NodeUnschedulable",
                "NodeName",
                "TaintToleration",
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit"
            ]
        );
        assert_eq!(
            scores,
            [
                "TaintToleration",
                "NodeAffinity",
                "NodeResourcesFit",
                "NodeResourcesBalancedAllocation"
            ]
        );
        // (what differs, the filters and scores that must tell it)
        let cases: Vec<(&str, PodBuilder, &[&str], &[&str])> = vec![
            (
                "name, uid and labels only",
                PodBuilder::new("b")
                    .uid("b")
                    .label("app", "x")
                    .cpu_millis(100)
                    .memory_mib(200),
                &[],
                &[],
            ),
            (
                "a toleration",
                base().toleration(exists_toleration("dedicated", None)),
                &["NodeUnschedulable", "TaintToleration"],
                &["TaintToleration"],
            ),
            ("spec.nodeName", base().node_name("n-1"), &["NodeName"], &[]),
            (
                "a nodeSelector",
                base().node_selector("zone", "a"),
                &["NodeAffinity"],
                &["NodeAffinity"],
            ),
            (
                "a preferred term",
                base().preferred_node_term(5, zone_term("a")),
                &["NodeAffinity"],
                &["NodeAffinity"],
            ),
            (
                "a host port",
                base().host_port(80, Protocol::Tcp, ""),
                &["NodePorts"],
                &[],
            ),
            (
                "cpu",
                PodBuilder::new("a")
                    .uid("a")
                    .cpu_millis(101)
                    .memory_mib(200),
                &["NodeResourcesFit"],
                &["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
            ),
            (
                "no requests: the same non-zero amounts, other effective ones",
                PodBuilder::new("a").uid("a"),
                &["NodeResourcesFit"],
                &["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
            ),
        ];
        for (what, other, want_filters, want_scores) in cases {
            let (a, b) = (base().info(), other.info());
            for f in &profile.filters {
                if filters.contains(&f.name()) {
                    let tells = !f.same_verdict(&a, &b);
                    assert_eq!(
                        tells,
                        want_filters.contains(&f.name()),
                        "{what}: {}",
                        f.name()
                    );
                }
            }
            for (s, _) in &profile.scores {
                if scores.contains(&s.name()) {
                    let tells = !s.same_raw_score(&a, &b);
                    assert_eq!(
                        tells,
                        want_scores.contains(&s.name()),
                        "{what}: {}",
                        s.name()
                    );
                }
            }
        }
    }

    /// Hundreds of pods in runs of one shape, over nodes that fill up, change taints, lose
    /// pods and leave: the memo's algorithm decides every pod as the one that runs every
    /// plugin on every node, with the same messages and explanations (debug builds also
    /// check each reuse against the plugins), and it reuses verdicts and scores.
    #[test]
    fn the_memo_decides_as_every_plugin_run_afresh() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut snapshot = Snapshot::new();
        for i in 0..600 {
            snapshot.upsert_node(Arc::new(node(i, &mut rng).build()));
        }
        let profile = Profile::default_profile();
        let mut with_memo = Algorithm::new(11);
        let mut without = Algorithm::new(11).without_memo();
        let mut bound = Vec::new();
        let mut shape = 0;
        let mut reused = 0;
        for i in 0..1500 {
            if rng.random_range(0..8) == 0 {
                shape = rng.random_range(0..7);
            }
            let pod = pod(shape, i);
            let options = ScheduleOptions {
                explain: i % 97 == 0,
            };
            let kept_before = with_memo.memo.as_ref().map_or(0, |m| m.kept);
            let a = with_memo.schedule(&profile, &snapshot, &pod, &options);
            let b = without.schedule(&profile, &snapshot, &pod, &options);
            assert_eq!(outcome(&a), outcome(&b), "pod {i} (shape {shape})");
            if let ScheduleResult::Scheduled { node, feasible, .. } = &a {
                // Each feasible node needs a verdict and scores: what the memo did not keep
                // anew it reused (a lower bound: kept rejections count among the keeps).
                let kept = with_memo.memo.as_ref().map_or(0, |m| m.kept) - kept_before;
                reused += (2 * feasible).saturating_sub(kept);
                assert!(snapshot.add_pod(node, Arc::new(pod.clone())));
                bound.push(pod.uid().to_string());
            }
            match rng.random_range(0..40) {
                // A pod leaves.
                0 if !bound.is_empty() => {
                    let uid = bound.swap_remove(rng.random_range(0..bound.len()));
                    assert!(snapshot.remove_pod(&uid).is_some());
                }
                // A node's taints and labels change (its pods stay).
                1 => {
                    let j = rng.random_range(0..600);
                    snapshot.upsert_node(Arc::new(node(j, &mut rng).build()));
                }
                // A node leaves (the last one takes its index) and comes back empty.
                2 => {
                    let j = rng.random_range(0..600);
                    let name = format!("n-{j:04}");
                    for gone in snapshot.remove_node(&name) {
                        bound.retain(|uid| uid != gone.uid());
                    }
                    snapshot.upsert_node(Arc::new(node(j, &mut rng).build()));
                }
                _ => {}
            }
            let generations: Vec<u64> = snapshot.nodes().iter().map(|n| n.generation).collect();
            assert_eq!(snapshot.generations(), generations);
        }
        assert!(
            reused > 10_000,
            "the memo reused only {reused} node results"
        );
    }
}
