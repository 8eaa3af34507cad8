//! The scheduling cycle: `schedule_one` as a pipeline of named stages, after kube-scheduler's
//! `schedulePod`: PreFilter, the nominated node, Filter (in parallel on large clusters,
//! stopping once enough nodes fit, starting where the previous cycle stopped; nominated pods
//! of equal or higher priority counted on their nodes, see [`crate::nominator`]), PostFilter
//! when nothing fits, then PreScore, Score (normalized and weighted) and the choice of the
//! best node, ties broken at random with a seeded generator.
//!
//! The cycle only decides: it returns a [`ScheduleResult`], and the caller assumes, binds,
//! evicts victims and requeues.

use std::sync::Arc;

use berth_model::model::PreemptionPolicy;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};
use tracing::field::Empty;

use crate::framework::{
    run_filters, run_filters_with_nominated_pods, Code, CycleState, Diagnosis, Filter, NodeInfo,
    NominatedPods, Nomination, PluginError, PodInfo, PostFilterInput, PostFilterOutcome,
    PreFilterOutcome, PreScoreInput, Rejection, Score, Snapshot, TieBreak, MAX_NODE_SCORE,
};
use crate::nominator::Nominator;
use crate::plugins::dynamic_resources;
use crate::profile::Profile;

mod memo;
use memo::{Memo, ScorePlan, SCORE_SLOTS};

/// Below this many nodes every node is evaluated (kube's minFeasibleNodesToFind); above it,
/// the search stops after at least this many feasible nodes.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;

/// The adaptive percentage of nodes to find never drops below this.
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// Above this many candidate nodes, filters run on rayon's pool; below it, the fork-join
/// overhead costs more than the filters.
const PARALLEL_FILTER_THRESHOLD: usize = 512;

/// Smallest batch of nodes filtered in parallel at once. Batches are scanned in order, so
/// the feasible set is exactly what a sequential scan would find.
const MIN_PARALLEL_WAVE: usize = 256;

/// Nodes per rayon task, so that a task outweighs its scheduling cost.
const PARALLEL_CHUNK: usize = 16;

/// A wave smaller than this is filtered on the calling thread. Waking the pool for a few
/// hundred cheap checks costs more than it saves, and in the scheduler the other core is
/// busy persisting binds (measured with `berth bench`, issue 7): only passes that must scan
/// far (few nodes fit) spread over the cores.
const MIN_PARALLEL_WAVE_WORK: usize = 1024;

/// How many nodes ahead of the one it works on the filter pass asks for a node's first two
/// cache lines ([`NodeInfo::prefetch`]): on large clusters they are not in the caches, and a
/// node's filters take a fraction of a load from memory (16, 32 and 64 were no better).
const PREFETCH_DISTANCE: usize = 8;

/// Above this many feasible nodes, scoring runs on rayon's pool.
const PARALLEL_SCORE_THRESHOLD: usize = 512;

/// Nodes each scorer scores at a time: one rayon task's share when scoring runs in
/// parallel, and the slice a plugin looks its cycle state up for.
const PARALLEL_SCORE_CHUNK: usize = 64;

/// Makes the calling thread the first worker of a new rayon pool, for a thread that runs
/// cycles one after another (the scheduling loop). The cycle's parallel passes then split
/// their nodes between this thread and the pool's other workers, the caller working on its
/// own share at once. Run from a thread outside any pool, a pass is handed to rayon's global
/// pool while the caller sleeps until it is done: two wake-ups per pass, and the caller's
/// core idle (on 50,000 nodes the kernel's futex and scheduler were a fifth of a profile).
///
/// The pool has a worker for every core but one (at least this thread), or
/// `RAYON_NUM_THREADS` workers in all where that is set: the loop shares the machine with
/// the writer that commits its bindings, and a pass spread over every core took the
/// writer's (on two cores, at 50,000 nodes, the loop alone scheduled 1.6 times as many pods
/// per second; docs/performance.md). With one worker the passes run in order, as written.
///
/// The pool lasts as long as the value returned: keep it while the thread schedules. None
/// when the thread is already a pool's worker or no pool could be built; the passes then use
/// the global pool.
pub fn adopt_thread_for_parallel_passes(name: &str) -> Option<rayon::ThreadPool> {
    let name = name.to_string();
    let mut builder = rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .thread_name(move |i| format!("{name}-{i}"));
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        builder = builder.num_threads(cores.saturating_sub(1).max(1));
    }
    match builder.build() {
        Ok(pool) => Some(pool),
        Err(e) => {
            tracing::warn!(error = %e, "parallel passes stay on rayon's global pool");
            None
        }
    }
}

/// Whether a pass over `work` items, of which `threshold` are worth splitting, runs on
/// rayon's pool: only when the pool the caller would use has a second worker.
fn runs_in_parallel(work: usize, threshold: usize) -> bool {
    work > threshold && rayon::current_num_threads() > 1
}

/// kube's message when the cluster has no node at all.
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// State kept between cycles: the tie-breaking generator and where the next node search
/// starts. One per scheduling loop (or simulation run).
pub struct Algorithm {
    rng: SmallRng,
    /// The seed, for [`TieBreak::Ranked`]'s fixed ranking.
    seed: u64,
    /// Index (into the snapshot's candidate nodes) where the next filter pass starts, so that
    /// every node gets its turn when only part of the cluster is searched.
    next_start_node_index: usize,
    /// Filter verdicts and raw scores kept for the next pods that ask the same ([`memo`]);
    /// None when turned off ([`Algorithm::without_memo`]).
    memo: Option<Memo>,
}

/// How to run one cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScheduleOptions {
    /// Evaluate every node (no early stop), and record every node's verdict and every
    /// feasible node's final score in the result. The chosen node is the one kube would
    /// choose when it evaluates every node.
    pub explain: bool,
}

/// What one cycle decided.
#[derive(Clone, Debug)]
pub enum ScheduleResult {
    /// The pod goes to `node`.
    Scheduled {
        /// The chosen node.
        node: String,
        /// Nodes whose filters ran (kube's EvaluatedNodes).
        evaluated: usize,
        /// Nodes that passed every filter (kube's FeasibleNodes).
        feasible: usize,
        /// Present with [`ScheduleOptions::explain`].
        explanation: Option<Explanation>,
    },
    /// No node fits.
    Unschedulable {
        /// Each node's rejection (or the PreFilter's verdict for all of them).
        diagnosis: Diagnosis,
        /// kube's message, [`Diagnosis::message`]; [`NO_NODES_AVAILABLE`] when the cluster
        /// has no node.
        message: String,
        /// The PostFilter's proposal: evict these pods and the pod fits on that node.
        nomination: Option<Nomination>,
        /// Why PostFilter could not help (`preemption: 0/3 nodes are available: ...`).
        post_filter_message: Option<String>,
        /// Whether an earlier nomination of the pod stands: the PostFilter found the pod not
        /// eligible to preempt now (kube's ModeNoop). Otherwise an attempt that ends without
        /// a nomination ends any earlier one.
        keeps_nomination: bool,
        /// Present with [`ScheduleOptions::explain`].
        explanation: Option<Explanation>,
    },
    /// A plugin failed; the pod should be retried after back-off.
    Error(PluginError),
}

impl ScheduleResult {
    /// The message kube puts in the pod's PodScheduled condition and FailedScheduling event:
    /// the diagnosis message followed by the PostFilter's, or the error. None when scheduled.
    pub fn failure_message(&self) -> Option<String> {
        match self {
            ScheduleResult::Scheduled { .. } => None,
            ScheduleResult::Unschedulable {
                message,
                post_filter_message,
                ..
            } => Some(match post_filter_message {
                Some(post) => format!("{message} {post}"),
                None => message.clone(),
            }),
            ScheduleResult::Error(e) => Some(e.to_string()),
        }
    }
}

/// Every evaluated node's verdict, by node name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Explanation {
    /// Verdict per node.
    pub nodes: BTreeMap<String, NodeVerdict>,
}

/// One node's fate in an explained cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeVerdict {
    /// Passed every filter; `score` is the sum of the weighted, normalized plugin scores.
    Feasible {
        /// Final score.
        score: i64,
    },
    /// Rejected by `plugin` (the first filter that failed, or a PreFilter).
    Rejected {
        /// The rejecting plugin.
        plugin: &'static str,
        /// Its reasons.
        reasons: Vec<String>,
    },
}

impl Algorithm {
    /// A fresh algorithm whose tie-breaking is reproducible for `seed`.
    pub fn new(seed: u64) -> Self {
        Algorithm {
            rng: SmallRng::seed_from_u64(seed),
            seed,
            next_start_node_index: 0,
            memo: Some(Memo::default()),
        }
    }

    /// The same algorithm, running every plugin on every visited node for every pod instead
    /// of reusing what an earlier pod's cycle computed ([`memo`]). It decides the same; it is
    /// there to show so, and to measure what the memo saves.
    pub fn without_memo(mut self) -> Self {
        self.memo = None;
        self
    }

    /// Runs one scheduling cycle for `pod` over `snapshot` with `profile`'s plugins, with no
    /// nominated pod anywhere.
    pub fn schedule(
        &mut self,
        profile: &Profile,
        snapshot: &Snapshot,
        pod: &PodInfo,
        options: &ScheduleOptions,
    ) -> ScheduleResult {
        self.schedule_nominated(profile, snapshot, &Nominator::new(), pod, options)
    }

    /// Runs one scheduling cycle for `pod` over `snapshot` with `profile`'s plugins. The
    /// filters (and preemption's victim search) count the pods `nominator` holds on their
    /// nodes when their priority is at least `pod`'s; scoring does not.
    pub fn schedule_nominated(
        &mut self,
        profile: &Profile,
        snapshot: &Snapshot,
        nominator: &Nominator,
        pod: &PodInfo,
        options: &ScheduleOptions,
    ) -> ScheduleResult {
        let span = tracing::debug_span!(
            "schedule",
            pod = %pod.key(),
            evaluated = Empty,
            feasible = Empty,
            node = Empty
        );
        let _entered = span.enter();
        let nominated = nominator.for_cycle(pod);
        let result = self.schedule_pod(profile, snapshot, nominated, pod, options);
        match &result {
            ScheduleResult::Scheduled { node, .. } => {
                span.record("node", node.as_str());
                tracing::debug!(node = %node, "scheduled");
            }
            ScheduleResult::Unschedulable { message, .. } => {
                tracing::debug!(%message, "unschedulable");
            }
            ScheduleResult::Error(e) => tracing::debug!(error = %e, "plugin error"),
        }
        result
    }

    /// The pipeline, stage by stage.
    fn schedule_pod(
        &mut self,
        profile: &Profile,
        snapshot: &Snapshot,
        nominated: Option<Arc<NominatedPods>>,
        pod: &PodInfo,
        options: &ScheduleOptions,
    ) -> ScheduleResult {
        let mut state = CycleState::new();
        state.evaluate_all_nodes = options.explain;
        if let Some(nominated) = nominated {
            state.insert(nominated);
        }
        if snapshot.is_empty() {
            return no_nodes(options);
        }

        let narrowing = match run_pre_filters(profile, &mut state, pod, snapshot) {
            Err(e) => return ScheduleResult::Error(e),
            Ok(PreFilterStage::Reject { rejection, plugins }) => {
                let diagnosis = Diagnosis {
                    pre_filter_rejection: Some(rejection),
                    unschedulable_plugins: plugins,
                    num_all_nodes: snapshot.len(),
                    ..Diagnosis::default()
                };
                return unschedulable(profile, &state, pod, snapshot, diagnosis, options);
            }
            Ok(PreFilterStage::Proceed(narrowing)) => narrowing,
        };
        let candidates = Candidates::new(snapshot, narrowing.as_ref());

        let nominated = evaluate_nominated_node(profile, &state, pod, snapshot);
        if let (Some(idx), false) = (nominated, options.explain) {
            record_counts(1, 1);
            return ScheduleResult::Scheduled {
                node: snapshot.nodes()[idx].name().to_string(),
                evaluated: 1,
                feasible: 1,
                explanation: None,
            };
        }

        let filtered = self.find_nodes_that_pass_filters(
            profile,
            &state,
            pod,
            snapshot,
            &candidates,
            options.explain,
        );
        let evaluated = filtered.feasible.len() + filtered.rejected.len();
        record_counts(evaluated, filtered.feasible.len());
        if let Some(e) = filter_error(&filtered.rejected) {
            return ScheduleResult::Error(e);
        }

        if filtered.feasible.is_empty() {
            let diagnosis = diagnose(snapshot, &candidates, narrowing.as_ref(), filtered.rejected);
            return unschedulable(profile, &state, pod, snapshot, diagnosis, options);
        }

        // kube skips scoring when a single node fits; explaining still reports its score.
        if filtered.feasible.len() == 1 && !options.explain {
            return ScheduleResult::Scheduled {
                node: snapshot.nodes()[filtered.feasible[0]].name().to_string(),
                evaluated,
                feasible: 1,
                explanation: None,
            };
        }

        let totals = match prioritize_nodes(
            profile,
            &mut state,
            pod,
            snapshot,
            &filtered.feasible,
            self.memo.as_mut(),
        ) {
            Ok(totals) => totals,
            Err(e) => return ScheduleResult::Error(e),
        };
        let chosen = match nominated {
            Some(idx) => idx,
            None => match profile.tie_break {
                TieBreak::Random => filtered.feasible[self.select_host(&totals)],
                TieBreak::Ranked => {
                    let name = |i: usize| snapshot.nodes()[filtered.feasible[i]].name();
                    filtered.feasible[select_ranked(self.seed, &totals, name)]
                }
            },
        };
        let explanation = options.explain.then(|| {
            explain_scheduled(
                snapshot,
                &candidates,
                narrowing.as_ref(),
                &filtered,
                &totals,
            )
        });
        ScheduleResult::Scheduled {
            node: snapshot.nodes()[chosen].name().to_string(),
            evaluated,
            feasible: filtered.feasible.len(),
            explanation,
        }
    }

    /// kube's findNodesThatPassFilters: runs the filters from `next_start_node_index`,
    /// wrapping around, until enough nodes fit, then advances the start index by the number
    /// of nodes evaluated.
    fn find_nodes_that_pass_filters(
        &mut self,
        profile: &Profile,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        candidates: &Candidates,
        explain: bool,
    ) -> FilterOutcome {
        let n = candidates.len();
        if n == 0 {
            return FilterOutcome::default();
        }
        let to_find = if explain {
            n
        } else if profile.scores.is_empty() {
            // Nothing to rank the nodes by: the first that fits will do.
            1
        } else {
            num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, n)
        };
        let start = self.next_start_node_index;
        let filters = state.filters_to_run(&profile.filters);
        // With no nominated pod that counts, no node needs the name look-up.
        let nominated = NominatedPods::of(state).filter(|n| !n.is_empty());
        // A nominated pod changes the verdict of its node: such cycles keep nothing.
        let (memo, continued) = match (&mut self.memo, nominated) {
            (Some(memo), None) => match memo.filter_epoch(&filters, pod, snapshot.len()) {
                Some((epoch, continued)) => (Some((&*memo, epoch)), continued),
                None => (None, false),
            },
            _ => (None, false),
        };
        let pass = FilterPass {
            profile,
            filters: &filters,
            state,
            pod,
            snapshot,
            candidates,
            start: start % n,
            to_find,
            nominated,
            memo,
            // Under an earlier cycle's epoch most nodes' verdicts are kept: the pass then
            // reads their generations and the memo, not the nodes.
            prefetch_nodes: !continued,
        };
        let outcome = if filters.is_empty() {
            pass.without_filters()
        } else if runs_in_parallel(n, PARALLEL_FILTER_THRESHOLD) {
            pass.parallel()
        } else {
            pass.sequential()
        };
        let processed = outcome.feasible.len() + outcome.rejected.len();
        self.next_start_node_index = (start + processed) % snapshot.len();
        let epoch = memo.map(|(_, epoch)| epoch);
        if let (Some(memo), Some(epoch)) = (&mut self.memo, epoch) {
            for (index, rejection) in &outcome.afresh {
                memo.keep_verdict(
                    *index,
                    snapshot.generations()[*index],
                    epoch,
                    rejection.clone(),
                );
            }
        }
        outcome
    }

    /// kube's selectHost: the highest total wins; among equal totals each is chosen with
    /// equal probability (reservoir sampling over the nodes in evaluation order).
    fn select_host(&mut self, totals: &[i64]) -> usize {
        let mut best = 0;
        let mut max = totals[0];
        let mut ties: u32 = 1;
        for (i, &total) in totals.iter().enumerate().skip(1) {
            if total > max {
                max = total;
                best = i;
                ties = 1;
            } else if total == max {
                ties += 1;
                if self.rng.random_range(0..ties) == 0 {
                    best = i;
                }
            }
        }
        best
    }
}

/// [`TieBreak::Ranked`]: the highest total wins; among equal totals the node whose seeded
/// rank is smallest (then the smaller name).
fn select_ranked<'a>(seed: u64, totals: &[i64], name: impl Fn(usize) -> &'a str) -> usize {
    let max = totals.iter().copied().max().unwrap_or(0);
    (0..totals.len())
        .filter(|&i| totals[i] == max)
        .min_by_key(|&i| (node_rank(seed, name(i)), name(i)))
        .unwrap_or(0)
}

/// A node's place in the seeded ranking: a hash of the seed and its name, mixed well
/// (splitmix64's finaliser) so that nearby names do not rank together.
pub fn node_rank(seed: u64, name: &str) -> u64 {
    use std::hash::Hasher as _;
    let mut h = crate::framework::hash::FastHasher::default();
    h.write_u64(seed);
    h.write(name.as_bytes());
    let mut z = h.finish().wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn record_counts(evaluated: usize, feasible: usize) {
    let span = tracing::Span::current();
    span.record("evaluated", evaluated);
    span.record("feasible", feasible);
}

/// kube's numFeasibleNodesToFind: every node in small clusters; otherwise the configured
/// percentage (or the adaptive default `max(5, 50 - nodes/125)`) of the nodes, at least 100.
fn num_feasible_nodes_to_find(percentage: Option<u32>, num_nodes: usize) -> usize {
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_nodes;
    }
    let percentage = match percentage.unwrap_or(0) as usize {
        0 => (50usize.saturating_sub(num_nodes / 125)).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND),
        p => p,
    };
    (num_nodes * percentage / 100)
        .max(MIN_FEASIBLE_NODES_TO_FIND)
        .min(num_nodes)
}

/// What the PreFilter stage concluded.
enum PreFilterStage {
    /// Go on, with every node or only the narrowed ones.
    Proceed(Option<Narrowing>),
    /// No node can take the pod.
    Reject {
        rejection: Rejection,
        plugins: HashSet<&'static str>,
    },
}

/// PreFilter plugins' node sets, intersected.
struct Narrowing {
    allowed: HashSet<String>,
    /// The plugins that narrowed, sorted.
    plugins: Vec<&'static str>,
}

impl Narrowing {
    /// The rejection of a node outside the set (kube's absent-node status).
    fn rejection(&self) -> Rejection {
        Rejection::unresolvable(
            self.plugins[0],
            format!(
                "node(s) didn't satisfy plugin(s) [{}]",
                self.plugins.join(" ")
            ),
        )
    }
}

/// kube's RunPreFilterPlugins: an unresolvable rejection stops at once; a resolvable one is
/// kept while the other PreFilters still run (preemption needs their state); node sets are
/// intersected, and an empty intersection rejects the pod.
fn run_pre_filters(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
) -> Result<PreFilterStage, PluginError> {
    let mut allowed: Option<HashSet<String>> = None;
    let mut narrowing_plugins: Vec<&'static str> = Vec::new();
    let mut resolvable: Option<Rejection> = None;
    for plugin in &profile.pre_filters {
        match plugin.pre_filter(state, pod, snapshot)? {
            PreFilterOutcome::AllNodes => {}
            PreFilterOutcome::Reject(mut rejection) => {
                rejection.plugin = plugin.name();
                if rejection.code == Code::UnschedulableAndUnresolvable {
                    let plugins = HashSet::from([rejection.plugin]);
                    return Ok(PreFilterStage::Reject { rejection, plugins });
                }
                resolvable = Some(rejection);
            }
            PreFilterOutcome::Nodes(nodes) => {
                if !narrowing_plugins.contains(&plugin.name()) {
                    narrowing_plugins.push(plugin.name());
                }
                let merged = match allowed.take() {
                    None => nodes,
                    Some(mut previous) => {
                        previous.retain(|n| nodes.contains(n));
                        previous
                    }
                };
                if merged.is_empty() {
                    narrowing_plugins.sort_unstable();
                    let reason = match narrowing_plugins.as_slice() {
                        [only] => format!("node(s) didn't satisfy plugin {only}"),
                        all => format!(
                            "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                            all.join(" ")
                        ),
                    };
                    return Ok(PreFilterStage::Reject {
                        rejection: Rejection::unresolvable(plugin.name(), reason),
                        plugins: narrowing_plugins.into_iter().collect(),
                    });
                }
                allowed = Some(merged);
            }
        }
    }
    narrowing_plugins.sort_unstable();
    if let Some(rejection) = resolvable {
        let mut plugins: HashSet<&'static str> = narrowing_plugins.into_iter().collect();
        plugins.insert(rejection.plugin);
        return Ok(PreFilterStage::Reject { rejection, plugins });
    }
    Ok(PreFilterStage::Proceed(allowed.map(|allowed| Narrowing {
        allowed,
        plugins: narrowing_plugins,
    })))
}

/// The nodes a filter pass may visit: all of the snapshot, or the PreFilter's set (in
/// snapshot order, so that runs are reproducible).
enum Candidates {
    All(usize),
    Subset(Vec<usize>),
}

impl Candidates {
    fn new(snapshot: &Snapshot, narrowing: Option<&Narrowing>) -> Self {
        match narrowing {
            None => Candidates::All(snapshot.len()),
            Some(narrowing) => {
                // Names the snapshot does not know are dropped, as kube does.
                let mut indices: Vec<usize> = narrowing
                    .allowed
                    .iter()
                    .filter_map(|name| snapshot.node_index(name))
                    .collect();
                indices.sort_unstable();
                Candidates::Subset(indices)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Candidates::All(n) => *n,
            Candidates::Subset(v) => v.len(),
        }
    }

    /// The snapshot index of the `i`-th candidate.
    fn get(&self, i: usize) -> usize {
        match self {
            Candidates::All(_) => i,
            Candidates::Subset(v) => v[i],
        }
    }

    fn contains(&self, index: usize) -> bool {
        match self {
            Candidates::All(n) => index < *n,
            Candidates::Subset(v) => v.binary_search(&index).is_ok(),
        }
    }
}

/// kube's evaluateNominatedNode: a pod nominated by an earlier preemption tries that node
/// first, and takes it if it fits (counting the room other nominated pods hold there).
fn evaluate_nominated_node(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
) -> Option<usize> {
    let name = &pod.pod.status.nominated_node_name;
    if name.is_empty() {
        return None;
    }
    let index = snapshot.node_index(name)?;
    run_filters_with_nominated_pods(
        NominatedPods::of(state),
        &state.filters_to_run(&profile.filters),
        &profile.pre_filters,
        state,
        pod,
        &snapshot.nodes()[index],
        snapshot,
    )
    .is_none()
    .then_some(index)
}

/// Result of a filter pass: snapshot indices in evaluation order.
#[derive(Debug, Default, PartialEq, Eq)]
struct FilterOutcome {
    feasible: Vec<usize>,
    rejected: Vec<(usize, Arc<Rejection>)>,
    /// The verdicts of the nodes whose filters ran (the others' came from the memo), when
    /// the pass uses the memo, but for errors, which are never kept.
    afresh: Vec<(usize, Option<Arc<Rejection>>)>,
}

/// One node's outcome in a pass: its snapshot index, its rejection if any, and whether the
/// filters ran (false: the memo kept the verdict).
type Checked = (usize, Option<Arc<Rejection>>, bool);

/// One pass of the filters over the candidates, from `start`, wrapping around.
struct FilterPass<'a> {
    profile: &'a Profile,
    /// The profile's filters less those the PreFilters skipped.
    filters: &'a [Arc<dyn Filter>],
    state: &'a CycleState,
    pod: &'a PodInfo,
    snapshot: &'a Snapshot,
    candidates: &'a Candidates,
    /// Where the pass starts, below the number of candidates.
    start: usize,
    to_find: usize,
    /// The state's nominated pods, looked up once for the pass.
    nominated: Option<&'a NominatedPods>,
    /// The memo and this pass's epoch, when every filter takes part and no nominated pod
    /// counts.
    memo: Option<(&'a Memo, u64)>,
    /// Whether to prefetch the nodes ahead (not when the memo is expected to have them).
    prefetch_nodes: bool,
}

impl FilterPass<'_> {
    /// The snapshot index of the `i`-th node of this pass.
    fn node_at(&self, i: usize) -> usize {
        // `start` and `i` are below the number of candidates: one subtraction wraps, where a
        // division per node (two with the prefetch) showed in the pass.
        let n = self.candidates.len();
        let j = self.start + i;
        self.candidates.get(if j >= n { j - n } else { j })
    }

    /// Filters the `i`-th node of this pass: its snapshot index and verdict, and whether
    /// the filters ran. Inlined into the passes (always: left to the compiler, it was not,
    /// and the 50,000-node cycle bench took 15% longer), so that a verdict the memo kept
    /// costs a few instructions; the filters run out of line ([`FilterPass::run`]).
    #[inline(always)]
    fn check(&self, i: usize) -> Checked {
        let index = self.node_at(i);
        if i + PREFETCH_DISTANCE < self.candidates.len() {
            let ahead = self.node_at(i + PREFETCH_DISTANCE);
            if self.prefetch_nodes {
                self.snapshot.nodes()[ahead].prefetch();
            }
        }
        if let Some((memo, epoch)) = self.memo {
            if let Some(kept) = memo.verdict(index, self.snapshot.generations()[index], epoch) {
                if cfg!(debug_assertions) {
                    let node = &self.snapshot.nodes()[index];
                    assert_eq!(
                        run_filters(self.filters, self.state, self.pod, node).as_ref(),
                        kept.map(|r| &**r),
                        "the memo kept a verdict on {} that its filters no longer give",
                        node.name()
                    );
                }
                return (index, kept.cloned(), false);
            }
        }
        self.run(index)
    }

    /// Runs the filters on the node of snapshot index `index`.
    #[inline(never)]
    fn run(&self, index: usize) -> Checked {
        let node = &self.snapshot.nodes()[index];
        let verdict = run_filters_with_nominated_pods(
            self.nominated,
            self.filters,
            &self.profile.pre_filters,
            self.state,
            self.pod,
            node,
            self.snapshot,
        );
        (index, verdict.map(Arc::new), true)
    }

    /// Records the verdict on the node of snapshot index `index`; true once enough nodes
    /// fit.
    #[inline(always)]
    fn record(&self, out: &mut FilterOutcome, (index, verdict, afresh): Checked) -> bool {
        if afresh && self.memo.is_some() && verdict.as_ref().is_none_or(|r| r.code != Code::Error) {
            out.afresh.push((index, verdict.clone()));
        }
        match verdict {
            None => {
                out.feasible.push(index);
                out.feasible.len() >= self.to_find
            }
            Some(rejection) => {
                out.rejected.push((index, rejection));
                false
            }
        }
    }

    /// No Filter plugin: the first `to_find` nodes all fit.
    fn without_filters(&self) -> FilterOutcome {
        FilterOutcome {
            feasible: (0..self.to_find).map(|i| self.node_at(i)).collect(),
            ..FilterOutcome::default()
        }
    }

    fn sequential(&self) -> FilterOutcome {
        let mut out = FilterOutcome {
            feasible: Vec::with_capacity(self.to_find),
            ..FilterOutcome::default()
        };
        for i in 0..self.candidates.len() {
            if self.record(&mut out, self.check(i)) {
                break;
            }
        }
        out
    }

    /// Filters waves of nodes in parallel and scans each wave in order, so that the
    /// outcome equals the sequential one; at most one wave's work is wasted. Each wave is
    /// sized from the share of nodes that fit so far.
    fn parallel(&self) -> FilterOutcome {
        let n = self.candidates.len();
        let mut out = FilterOutcome {
            feasible: Vec::with_capacity(self.to_find),
            ..FilterOutcome::default()
        };
        let mut offset = 0;
        let mut wave = self.to_find.max(MIN_PARALLEL_WAVE);
        while offset < n {
            let end = (offset + wave).min(n);
            let verdicts: Vec<Checked> = if end - offset < MIN_PARALLEL_WAVE_WORK {
                (offset..end).map(|i| self.check(i)).collect()
            } else {
                (offset..end)
                    .into_par_iter()
                    .with_min_len(PARALLEL_CHUNK)
                    .map(|i| self.check(i))
                    .collect()
            };
            for verdict in verdicts {
                if self.record(&mut out, verdict) {
                    return out;
                }
            }
            offset = end;
            let found = out.feasible.len();
            let needed = self.to_find - found;
            wave = if found == 0 {
                wave.saturating_mul(2)
            } else {
                (needed * offset).div_ceil(found)
            }
            .max(MIN_PARALLEL_WAVE);
        }
        out
    }
}

/// The first filter failure of a pass (kube stops the cycle on a filter's Error status).
fn filter_error(rejected: &[(usize, Arc<Rejection>)]) -> Option<PluginError> {
    rejected
        .iter()
        .find(|(_, r)| r.code == Code::Error)
        .map(|(_, r)| PluginError {
            plugin: r.plugin,
            message: r.reasons.join(", "),
        })
}

/// The Diagnosis of a failed filter pass: the rejected nodes, and the nodes the PreFilter
/// set left out.
fn diagnose(
    snapshot: &Snapshot,
    candidates: &Candidates,
    narrowing: Option<&Narrowing>,
    rejected: Vec<(usize, Arc<Rejection>)>,
) -> Diagnosis {
    let nodes = snapshot.nodes();
    let mut diagnosis = Diagnosis {
        num_all_nodes: snapshot.len(),
        ..Diagnosis::default()
    };
    // Gathered first and built in one go (a sort, then the tree bottom-up): a pod no node
    // takes has a rejection per node, and inserting them one by one costs a search each.
    let mut node_rejections = Vec::with_capacity(nodes.len());
    if let Some(narrowing) = narrowing {
        diagnosis
            .unschedulable_plugins
            .extend(narrowing.plugins.iter().copied());
        let rejection = narrowing.rejection();
        for index in (0..nodes.len()).filter(|&i| !candidates.contains(i)) {
            node_rejections.push((nodes[index].name().to_string(), rejection.clone()));
        }
    }
    let mut last_plugin = None;
    for (index, rejection) in rejected {
        if last_plugin != Some(rejection.plugin) {
            last_plugin = Some(rejection.plugin);
            diagnosis.unschedulable_plugins.insert(rejection.plugin);
        }
        node_rejections.push((
            nodes[index].name().to_string(),
            Arc::unwrap_or_clone(rejection),
        ));
    }
    diagnosis.node_rejections = node_rejections.into_iter().collect();
    diagnosis
}

/// Builds the Unschedulable result, running the PostFilter.
fn unschedulable(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    diagnosis: Diagnosis,
    options: &ScheduleOptions,
) -> ScheduleResult {
    let (nomination, post_filter_message, keeps_nomination) =
        run_post_filter(profile, state, pod, snapshot, &diagnosis);
    let explanation = options
        .explain
        .then(|| explain_unschedulable(snapshot, &diagnosis));
    ScheduleResult::Unschedulable {
        message: diagnosis.message(),
        diagnosis,
        nomination,
        post_filter_message,
        keeps_nomination,
        explanation,
    }
}

fn no_nodes(options: &ScheduleOptions) -> ScheduleResult {
    ScheduleResult::Unschedulable {
        diagnosis: Diagnosis::default(),
        message: NO_NODES_AVAILABLE.to_string(),
        nomination: None,
        post_filter_message: None,
        keeps_nomination: false,
        explanation: options.explain.then(Explanation::default),
    }
}

/// Runs the PostFilter (preemption) when one is configured. When every rejection is
/// unresolvable, eviction cannot help and the search is skipped with kube's message; a pod
/// with `preemptionPolicy: Never` still goes to the PostFilter, which reports its
/// ineligibility first, as kube does. Returns the nomination, the message, and whether an
/// earlier nomination stands.
fn run_post_filter(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    diagnosis: &Diagnosis,
) -> (Option<Nomination>, Option<String>, bool) {
    // DynamicResources' PostFilter runs first (kube's order); its reason leads the message.
    let (nomination, message, keeps) = run_preemption(profile, state, pod, snapshot, diagnosis);
    match dynamic_resources::post_filter_reason(state) {
        Some(reason) if nomination.is_none() => {
            let message = match message {
                Some(m) => format!("{reason}, {m}"),
                None => reason.to_string(),
            };
            (None, Some(message), keeps)
        }
        _ => (nomination, message, keeps),
    }
}

/// The PostFilter (preemption), when one is configured.
fn run_preemption(
    profile: &Profile,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    diagnosis: &Diagnosis,
) -> (Option<Nomination>, Option<String>, bool) {
    let Some(post_filter) = &profile.post_filter else {
        return (None, None, false);
    };
    let resolvable = diagnosis
        .pre_filter_rejection
        .iter()
        .chain(diagnosis.node_rejections.values())
        .any(|r| r.code == Code::Unschedulable);
    let never = pod.pod.spec.preemption_policy == Some(PreemptionPolicy::Never);
    if !resolvable && !never {
        let n = diagnosis.num_all_nodes;
        return (
            None,
            Some(format!(
                "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
            )),
            false,
        );
    }
    let input = PostFilterInput {
        pod,
        snapshot,
        diagnosis,
        profile,
    };
    match post_filter.post_filter(state, &input) {
        PostFilterOutcome::Nominate(nomination) => (Some(nomination), None, false),
        PostFilterOutcome::NoHelp(message) => (None, Some(message), false),
        PostFilterOutcome::NotEligible(message) => (None, Some(message), true),
    }
}

/// kube's prioritizeNodes: PreScore, then for each Score plugin the raw scores, normalize,
/// a range check, and the weighted sum per node. Returns the totals in `feasible` order.
/// With a memo, raw scores it kept for a node as it is are reused, and those computed are
/// kept.
fn prioritize_nodes(
    profile: &Profile,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    feasible: &[usize],
    memo: Option<&mut Memo>,
) -> Result<Vec<i64>, PluginError> {
    let nodes = snapshot.nodes();
    let infos: Vec<&NodeInfo> = feasible.iter().map(|&i| &nodes[i]).collect();
    for plugin in &profile.pre_scores {
        let input = PreScoreInput {
            pod,
            snapshot,
            feasible: &infos,
        };
        plugin.pre_score(state, &input)?;
    }
    let state = &*state;
    // kube's Skip from PreScore: the plugin adds nothing to any node.
    let scorers: Vec<&(Arc<dyn Score>, i64)> = profile
        .scores
        .iter()
        .filter(|(plugin, _)| !state.skips_score(plugin.name()))
        .collect();
    let n = infos.len();
    let k = scorers.len();
    let mut plan = memo.and_then(|memo| {
        let plan = memo.score_plan(&scorers, pod, nodes.len())?;
        Some((memo, plan))
    });
    let mut raw = match &mut plan {
        Some((memo, plan)) => RawScores::ByScorer(memo_raw_scores(
            state,
            pod,
            snapshot,
            &infos,
            feasible,
            &scorers,
            (memo, plan),
        )),
        None => RawScores::Blocked(raw_scores(state, pod, &infos, &scorers)),
    };
    let mut totals = vec![0i64; n];
    let mut gathered = Vec::new();
    for (j, (plugin, weight)) in scorers.iter().enumerate() {
        let scores: &mut [i64] = match &mut raw {
            RawScores::ByScorer(raw) => &mut raw[j * n..(j + 1) * n],
            RawScores::Blocked(raw) => {
                gathered.resize(n, 0);
                gather_scores(raw, k, j, &mut gathered);
                &mut gathered
            }
        };
        plugin.normalize(state, pod, scores);
        // The sum, with the range check folded in (no early exit: the loop vectorizes).
        // Wrapping: a score out of range must come to the error below, not overflow, and
        // then the totals are dropped.
        let mut out_of_range = false;
        for (total, &score) in totals.iter_mut().zip(scores.iter()) {
            out_of_range |= !(0..=MAX_NODE_SCORE).contains(&score);
            *total = total.wrapping_add(score.wrapping_mul(*weight));
        }
        if let Some(score) = scores
            .iter()
            .find(|score| out_of_range && !(0..=MAX_NODE_SCORE).contains(*score))
        {
            return Err(PluginError {
                plugin: plugin.name(),
                message: format!(
                    "returns an invalid score {score}, it should in the range of [0, {MAX_NODE_SCORE}] after normalizing"
                ),
            });
        }
        // Apart from the sum, which then runs as a plain loop over two arrays.
        if tracing::enabled!(tracing::Level::TRACE) {
            for (&score, node) in scores.iter().zip(&infos) {
                tracing::trace!(
                    plugin = plugin.name(),
                    node = node.name(),
                    score,
                    weight,
                    "score"
                );
            }
        }
    }
    if let (Some((memo, _)), RawScores::ByScorer(raw)) = (plan, raw) {
        memo.recycle(raw);
    }
    Ok(totals)
}

/// Every scorer's raw score of every node, in one of two layouts.
enum RawScores {
    /// [`raw_scores`]' blocks of [`PARALLEL_SCORE_CHUNK`] nodes (see [`gather_scores`]).
    Blocked(Vec<i64>),
    /// Scorer `j`'s scores of the `n` nodes at `j * n..(j + 1) * n` ([`memo_raw_scores`]).
    ByScorer(Vec<i64>),
}

/// Every scorer's raw score of every node, a slice of [`PARALLEL_SCORE_CHUNK`] nodes at a
/// time: slice `c`'s block starts at `c * PARALLEL_SCORE_CHUNK * scorers.len()` and holds
/// scorer `j`'s scores of the slice's `len` nodes at `j * len..(j + 1) * len` (see
/// [`gather_scores`]). Above [`PARALLEL_SCORE_THRESHOLD`] nodes one parallel pass runs all
/// the scorers on each slice, so a cycle wakes the pool once for scoring, not once per
/// plugin, and a slice's nodes are scored by every plugin while they are in the cache.
fn raw_scores(
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    scorers: &[&(Arc<dyn Score>, i64)],
) -> Vec<i64> {
    let k = scorers.len();
    let mut raw = vec![0i64; nodes.len() * k];
    if k == 0 {
        return raw;
    }
    let score_slice = |(out, slice): (&mut [i64], &[&NodeInfo])| {
        for node in slice {
            node.prefetch();
        }
        for ((plugin, _), out) in scorers.iter().zip(out.chunks_mut(slice.len())) {
            plugin.score_nodes(state, pod, slice, out);
        }
    };
    let block = PARALLEL_SCORE_CHUNK * k;
    if runs_in_parallel(nodes.len(), PARALLEL_SCORE_THRESHOLD) {
        raw.par_chunks_mut(block)
            .zip(nodes.par_chunks(PARALLEL_SCORE_CHUNK))
            .for_each(score_slice);
    } else {
        raw.chunks_mut(block)
            .zip(nodes.chunks(PARALLEL_SCORE_CHUNK))
            .for_each(score_slice);
    }
    raw
}

/// Every scorer's raw score of every node (of snapshot indices `indices`), by scorer
/// ([`RawScores::ByScorer`]), with the memo's `plan`: a memoized scorer's scores are the
/// memo's where it has them for the node as it is; the nodes it has none for are scored
/// by those scorers together, and kept. The other scorers score every node. In order on
/// the loop's thread: with the memo, what is left is copies.
fn memo_raw_scores(
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    nodes: &[&NodeInfo],
    indices: &[usize],
    scorers: &[&(Arc<dyn Score>, i64)],
    (memo, plan): (&mut Memo, &ScorePlan),
) -> Vec<i64> {
    let n = nodes.len();
    let mut raw = memo.scratch(n * scorers.len());
    // (scorer, slot) of the memoized scorers.
    let kept: Vec<(usize, usize)> = plan
        .slots
        .iter()
        .enumerate()
        .filter_map(|(j, slot)| Some((j, (*slot)?)))
        .collect();
    let generations = snapshot.generations();
    for &(j, slot) in &kept {
        let scores = memo.slot_scores(slot);
        for (score, &index) in raw[j * n..(j + 1) * n].iter_mut().zip(indices) {
            *score = scores[index];
        }
    }
    // The nodes whose kept scores are not current (if any): scored now, and kept.
    let missed: Vec<usize> = (0..n)
        .filter(|&p| !memo.has_scores(indices[p], generations[indices[p]], plan.epoch))
        .collect();
    if !missed.is_empty() {
        let missed_nodes: Vec<&NodeInfo> = missed.iter().map(|&p| nodes[p]).collect();
        let mut afresh = vec![0i64; missed.len()];
        let mut to_keep = vec![[0i64; SCORE_SLOTS]; missed.len()];
        for &(j, slot) in &kept {
            scorers[j]
                .0
                .score_nodes(state, pod, &missed_nodes, &mut afresh);
            for ((&score, &p), to_keep) in afresh.iter().zip(&missed).zip(&mut to_keep) {
                raw[j * n + p] = score;
                to_keep[slot] = score;
            }
        }
        for (&p, scores) in missed.iter().zip(to_keep) {
            memo.keep_scores(indices[p], generations[indices[p]], plan.epoch, scores);
        }
    }
    for (j, ((plugin, _), slot)) in scorers.iter().zip(&plan.slots).enumerate() {
        let out = &mut raw[j * n..(j + 1) * n];
        if slot.is_none() {
            plugin.score_nodes(state, pod, nodes, out);
        } else if cfg!(debug_assertions) {
            for (&score, node) in out.iter().zip(nodes) {
                assert_eq!(
                    score,
                    plugin.score(state, pod, node),
                    "the memo's {} score of {} is no longer the plugin's",
                    plugin.name(),
                    node.name()
                );
            }
        }
    }
    raw
}

/// Scorer `j`'s raw scores of every node, out of [`raw_scores`]' blocks of `k` scorers.
fn gather_scores(raw: &[i64], k: usize, j: usize, scores: &mut [i64]) {
    for (c, scores) in scores.chunks_mut(PARALLEL_SCORE_CHUNK).enumerate() {
        let at = c * PARALLEL_SCORE_CHUNK * k + j * scores.len();
        scores.copy_from_slice(&raw[at..at + scores.len()]);
    }
}

fn verdict(rejection: &Rejection) -> NodeVerdict {
    NodeVerdict::Rejected {
        plugin: rejection.plugin,
        reasons: rejection.reasons.iter().map(|r| r.to_string()).collect(),
    }
}

fn explain_unschedulable(snapshot: &Snapshot, diagnosis: &Diagnosis) -> Explanation {
    let nodes = match &diagnosis.pre_filter_rejection {
        Some(rejection) => {
            let v = verdict(rejection);
            snapshot
                .nodes()
                .iter()
                .map(|n| (n.name().to_string(), v.clone()))
                .collect()
        }
        None => diagnosis
            .node_rejections
            .iter()
            .map(|(name, r)| (name.clone(), verdict(r)))
            .collect(),
    };
    Explanation { nodes }
}

fn explain_scheduled(
    snapshot: &Snapshot,
    candidates: &Candidates,
    narrowing: Option<&Narrowing>,
    filtered: &FilterOutcome,
    totals: &[i64],
) -> Explanation {
    let nodes = snapshot.nodes();
    let mut explanation = Explanation::default();
    if let Some(narrowing) = narrowing {
        let v = verdict(&narrowing.rejection());
        for index in (0..nodes.len()).filter(|&i| !candidates.contains(i)) {
            explanation
                .nodes
                .insert(nodes[index].name().to_string(), v.clone());
        }
    }
    for (index, rejection) in &filtered.rejected {
        explanation
            .nodes
            .insert(nodes[*index].name().to_string(), verdict(rejection));
    }
    for (&index, &score) in filtered.feasible.iter().zip(totals) {
        explanation.nodes.insert(
            nodes[index].name().to_string(),
            NodeVerdict::Feasible { score },
        );
    }
    explanation
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use berth_model::model::{Node, ObjectMeta, Pod};

    use crate::framework::{Filter, Fit, Plugin, PostFilter, PreFilter, PreScore, Score, Victim};

    // ---- fixtures ----

    fn node_name(i: usize) -> String {
        format!("node-{i:04}")
    }

    fn snapshot(n: usize) -> Snapshot {
        let mut s = Snapshot::new();
        for i in 0..n {
            s.upsert_node(Arc::new(Node {
                metadata: ObjectMeta {
                    name: node_name(i),
                    ..ObjectMeta::default()
                },
                ..Node::default()
            }));
        }
        s
    }

    fn pod() -> PodInfo {
        PodInfo::new(Arc::new(Pod {
            metadata: ObjectMeta {
                name: "p".into(),
                namespace: "default".into(),
                uid: "uid-p".into(),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }))
    }

    fn index_of(node: &NodeInfo) -> usize {
        node.name()
            .trim_start_matches("node-")
            .parse()
            .expect("fixture node name")
    }

    fn names(indices: &[usize]) -> HashSet<String> {
        indices.iter().map(|&i| node_name(i)).collect()
    }

    // ---- fake plugins ----

    /// Rejects the nodes whose index satisfies `rejects`, counting calls.
    struct FakeFilter {
        name: &'static str,
        rejects: fn(usize) -> bool,
        reason: &'static str,
        code: Code,
        calls: AtomicUsize,
    }

    impl FakeFilter {
        fn new(
            name: &'static str,
            rejects: fn(usize) -> bool,
            reason: &'static str,
            code: Code,
        ) -> Arc<Self> {
            Arc::new(FakeFilter {
                name,
                rejects,
                reason,
                code,
                calls: AtomicUsize::new(0),
            })
        }

        fn passes_all(name: &'static str) -> Arc<Self> {
            FakeFilter::new(name, |_| false, "never", Code::Unschedulable)
        }

        fn calls(&self) -> usize {
            self.calls.load(Ordering::Relaxed)
        }
    }

    impl Plugin for FakeFilter {
        fn name(&self) -> &'static str {
            self.name
        }
    }

    impl Filter for FakeFilter {
        fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Fit {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if (self.rejects)(index_of(node)) {
                Fit::No(Rejection {
                    plugin: self.name,
                    reasons: crate::framework::Reasons::One(self.reason.into()),
                    code: self.code,
                })
            } else {
                Fit::Yes
            }
        }
    }

    /// Scores a node by `f(index)`; normalize divides by `divisor` when set.
    struct FakeScore {
        name: &'static str,
        f: fn(usize) -> i64,
        divisor: Option<i64>,
        score_calls: AtomicUsize,
        normalize_calls: AtomicUsize,
    }

    impl FakeScore {
        fn new(name: &'static str, f: fn(usize) -> i64, divisor: Option<i64>) -> Arc<Self> {
            Arc::new(FakeScore {
                name,
                f,
                divisor,
                score_calls: AtomicUsize::new(0),
                normalize_calls: AtomicUsize::new(0),
            })
        }
    }

    impl Plugin for FakeScore {
        fn name(&self) -> &'static str {
            self.name
        }
    }

    impl Score for FakeScore {
        fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> i64 {
            self.score_calls.fetch_add(1, Ordering::Relaxed);
            (self.f)(index_of(node))
        }

        fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) {
            self.normalize_calls.fetch_add(1, Ordering::Relaxed);
            if let Some(d) = self.divisor {
                for s in scores {
                    *s /= d;
                }
            }
        }
    }

    /// Counts PreScore calls and the feasible nodes it saw.
    struct FakePreScore {
        seen: AtomicUsize,
    }

    impl Plugin for FakePreScore {
        fn name(&self) -> &'static str {
            "FakePreScore"
        }
    }

    impl PreScore for FakePreScore {
        fn pre_score(&self, _: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
            self.seen.store(input.feasible.len(), Ordering::Relaxed);
            Ok(())
        }
    }

    /// A PreFilter with a fixed outcome.
    struct FakePreFilter {
        name: &'static str,
        outcome: PreFilterOutcome,
    }

    impl Plugin for FakePreFilter {
        fn name(&self) -> &'static str {
            self.name
        }
    }

    impl PreFilter for FakePreFilter {
        fn pre_filter(
            &self,
            _: &mut CycleState,
            _: &PodInfo,
            _: &Snapshot,
        ) -> Result<PreFilterOutcome, PluginError> {
            Ok(self.outcome.clone())
        }
    }

    /// Nominates the first resolvable node, counting calls.
    struct FakePostFilter {
        calls: AtomicUsize,
    }

    impl Plugin for FakePostFilter {
        fn name(&self) -> &'static str {
            "FakePreemption"
        }
    }

    impl PostFilter for FakePostFilter {
        fn post_filter(&self, _: &CycleState, input: &PostFilterInput) -> PostFilterOutcome {
            self.calls.fetch_add(1, Ordering::Relaxed);
            match input
                .diagnosis
                .node_rejections
                .iter()
                .find(|(_, r)| r.code == Code::Unschedulable)
            {
                Some((node, _)) => PostFilterOutcome::Nominate(Nomination {
                    node: node.clone(),
                    victims: vec![Victim {
                        namespace: "default".into(),
                        name: "low".into(),
                        uid: "uid-low".into(),
                    }],
                }),
                None => PostFilterOutcome::NoHelp("preemption: fake says no".into()),
            }
        }
    }

    /// One attempt by a fresh algorithm to place `pod()` on `snapshot(nodes)`.
    fn attempt(profile: &Profile, nodes: usize, explain: bool) -> ScheduleResult {
        Algorithm::new(0).schedule(
            profile,
            &snapshot(nodes),
            &pod(),
            &ScheduleOptions { explain },
        )
    }

    fn profile_with(filters: Vec<Arc<dyn Filter>>, scores: Vec<(Arc<dyn Score>, i64)>) -> Profile {
        let mut p = Profile::empty("test");
        p.filters = filters;
        p.scores = scores;
        p
    }

    fn flat_score() -> Arc<FakeScore> {
        FakeScore::new("Flat", |_| 0, None)
    }

    fn scheduled(result: &ScheduleResult) -> (&str, usize, usize) {
        match result {
            ScheduleResult::Scheduled {
                node,
                evaluated,
                feasible,
                ..
            } => (node.as_str(), *evaluated, *feasible),
            other => panic!("not scheduled: {other:?}"),
        }
    }

    // ---- tests ----

    #[test]
    fn message_aggregates_first_rejection_per_node() {
        let taint = FakeFilter::new(
            "TaintToleration",
            |i| i == 0,
            "node(s) had untolerated taint {dedicated: gpu}",
            Code::UnschedulableAndUnresolvable,
        );
        let fit = FakeFilter::new(
            "NodeResourcesFit",
            |_| true,
            "Insufficient cpu",
            Code::Unschedulable,
        );
        let profile = profile_with(vec![taint.clone(), fit.clone()], vec![(flat_score(), 1)]);
        let result =
            Algorithm::new(1).schedule(&profile, &snapshot(3), &pod(), &ScheduleOptions::default());
        let ScheduleResult::Unschedulable {
            diagnosis, message, ..
        } = &result
        else {
            panic!("{result:?}");
        };
        assert_eq!(
            message,
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."
        );
        assert_eq!(
            diagnosis.node_rejections[&node_name(0)].plugin,
            "TaintToleration"
        );
        assert_eq!(
            diagnosis.unschedulable_plugins,
            HashSet::from(["TaintToleration", "NodeResourcesFit"])
        );
        assert_eq!(fit.calls(), 2, "the first failing filter stops the node");
        assert_eq!(result.failure_message().as_deref(), Some(message.as_str()));
    }

    #[test]
    fn number_of_feasible_nodes_to_find() {
        struct Case {
            name: &'static str,
            nodes: usize,
            percentage: Option<u32>,
            want: usize,
        }
        let cases = [
            Case {
                name: "small cluster: all",
                nodes: 99,
                percentage: Some(10),
                want: 99,
            },
            Case {
                name: "100 nodes adaptive: at least 100",
                nodes: 100,
                percentage: None,
                want: 100,
            },
            Case {
                name: "1000 nodes adaptive: 42%",
                nodes: 1000,
                percentage: None,
                want: 420,
            },
            Case {
                name: "5000 nodes adaptive: 10%",
                nodes: 5000,
                percentage: None,
                want: 500,
            },
            Case {
                name: "10000 nodes adaptive floor 5%",
                nodes: 10000,
                percentage: None,
                want: 500,
            },
            Case {
                name: "zero means adaptive",
                nodes: 5000,
                percentage: Some(0),
                want: 500,
            },
            Case {
                name: "configured 30%",
                nodes: 1000,
                percentage: Some(30),
                want: 300,
            },
            Case {
                name: "configured, floor of 100 nodes",
                nodes: 500,
                percentage: Some(1),
                want: 100,
            },
            Case {
                name: "100% is everything",
                nodes: 5000,
                percentage: Some(100),
                want: 5000,
            },
        ];
        for case in cases {
            assert_eq!(
                num_feasible_nodes_to_find(case.percentage, case.nodes),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn large_cluster_stops_at_the_adaptive_count_and_rotates() {
        let all = FakeFilter::passes_all("All");
        let profile = profile_with(vec![all.clone()], vec![(flat_score(), 1)]);
        let snap = snapshot(5000);
        let mut algo = Algorithm::new(7);
        for cycle in 1..=10 {
            let before = all.calls();
            let result = algo.schedule(&profile, &snap, &pod(), &ScheduleOptions::default());
            let (_, evaluated, feasible) = scheduled(&result);
            assert_eq!((evaluated, feasible), (500, 500), "cycle {cycle}");
            assert_eq!(
                all.calls() - before,
                500,
                "cycle {cycle}: no filter work wasted"
            );
            assert_eq!(
                algo.next_start_node_index,
                (cycle * 500) % 5000,
                "cycle {cycle}"
            );
        }
        let result = algo.schedule(&profile, &snap, &pod(), &ScheduleOptions { explain: true });
        let (_, evaluated, feasible) = scheduled(&result);
        assert_eq!(
            (evaluated, feasible),
            (5000, 5000),
            "explain evaluates every node"
        );
    }

    #[test]
    fn rotation_visits_every_node_in_turn() {
        // 150 nodes: kube looks for 100 (adaptive 49% = 73, floor 100). Preferring the
        // highest index shows which window each cycle saw.
        let profile = profile_with(
            vec![FakeFilter::passes_all("All")],
            vec![(FakeScore::new("ByIndex", |i| 2 * i as i64, Some(3)), 1)],
        );
        let snap = snapshot(150);
        let mut algo = Algorithm::new(3);
        struct Step {
            want_node: usize,
            want_next_start: usize,
        }
        let steps = [
            Step {
                want_node: 99,
                want_next_start: 100,
            }, // nodes 0..100
            Step {
                want_node: 149,
                want_next_start: 50,
            }, // nodes 100..150, 0..50
            Step {
                want_node: 149,
                want_next_start: 0,
            }, // nodes 50..150
            Step {
                want_node: 99,
                want_next_start: 100,
            },
        ];
        for (i, step) in steps.iter().enumerate() {
            let result = algo.schedule(&profile, &snap, &pod(), &ScheduleOptions::default());
            let (node, evaluated, _) = scheduled(&result);
            assert_eq!(node, node_name(step.want_node), "step {i}");
            assert_eq!(evaluated, 100, "step {i}");
            assert_eq!(algo.next_start_node_index, step.want_next_start, "step {i}");
        }
    }

    #[test]
    fn parallel_pass_equals_sequential_pass() {
        struct Case {
            name: &'static str,
            nodes: usize,
            rejects: fn(usize) -> bool,
            start: usize,
            to_find: usize,
        }
        let cases = [
            Case {
                name: "all fit",
                nodes: 3000,
                rejects: |_| false,
                start: 0,
                to_find: 400,
            },
            Case {
                name: "a third rejected, wrapped",
                nodes: 3000,
                rejects: |i| i % 3 == 0,
                start: 2900,
                to_find: 400,
            },
            Case {
                name: "sparse fits",
                nodes: 4000,
                rejects: |i| i % 97 != 0,
                start: 123,
                to_find: 300,
            },
            Case {
                name: "none fit",
                nodes: 2000,
                rejects: |_| true,
                start: 5,
                to_find: 100,
            },
            Case {
                name: "find everything",
                nodes: 1500,
                rejects: |i| i % 2 == 0,
                start: 700,
                to_find: 1500,
            },
        ];
        for case in cases {
            let snap = snapshot(case.nodes);
            let filter: Arc<dyn Filter> =
                FakeFilter::new("F", case.rejects, "nope", Code::Unschedulable);
            let profile = profile_with(vec![filter], Vec::new());
            let candidates = Candidates::All(case.nodes);
            let state = CycleState::new();
            let pod = pod();
            let pass = FilterPass {
                profile: &profile,
                filters: &profile.filters,
                state: &state,
                pod: &pod,
                snapshot: &snap,
                candidates: &candidates,
                start: case.start,
                to_find: case.to_find,
                nominated: None,
                memo: None,
                prefetch_nodes: true,
            };
            let sequential = pass.sequential();
            let parallel = pass.parallel();
            assert_eq!(parallel, sequential, "{}", case.name);
            assert!(sequential.feasible.len() <= case.to_find, "{}", case.name);
            // As the scheduling loop runs it: from a thread that is itself the pool's
            // first worker.
            let adopted = std::thread::scope(|s| {
                s.spawn(|| {
                    let _pool = adopt_thread_for_parallel_passes("test-pass")
                        .expect("a thread outside any pool adopts one");
                    assert_eq!(rayon::current_thread_index(), Some(0), "{}", case.name);
                    assert!(
                        adopt_thread_for_parallel_passes("again").is_none(),
                        "{}: a pool's worker cannot adopt another",
                        case.name
                    );
                    pass.parallel()
                })
                .join()
                .expect("the adopted pass ran")
            });
            assert_eq!(adopted, sequential, "{}", case.name);
        }
    }

    /// Above the parallel threshold every scorer runs on each slice of nodes in one pass;
    /// each node's total is still the weighted sum of every plugin's normalized score.
    #[test]
    fn scoring_in_parallel_sums_every_scorer() {
        // 1,300 nodes: above the threshold, and not a whole number of slices.
        let nodes = 1300;
        let a = FakeScore::new("A", |i| (i % 101) as i64, None);
        let b = FakeScore::new("B", |i| ((i * 7) % 53) as i64, Some(2));
        let c = FakeScore::new("C", |i| if i % 64 == 63 { 100 } else { 1 }, None);
        let profile = profile_with(
            vec![FakeFilter::passes_all("All")],
            vec![(a.clone(), 1), (b.clone(), 2), (c.clone(), 3)],
        );
        let result = attempt(&profile, nodes, true);
        let ScheduleResult::Scheduled { explanation, .. } = &result else {
            panic!("{result:?}");
        };
        let verdicts = &explanation.as_ref().expect("explained").nodes;
        assert_eq!(verdicts.len(), nodes);
        for i in 0..nodes {
            let c = if i % 64 == 63 { 100 } else { 1 };
            let want = (i % 101) as i64 + 2 * (((i * 7) % 53) as i64 / 2) + 3 * c;
            assert_eq!(
                verdicts[&node_name(i)],
                NodeVerdict::Feasible { score: want },
                "node {i}"
            );
        }
        for plugin in [&a, &b, &c] {
            assert_eq!(
                plugin.score_calls.load(Ordering::Relaxed),
                nodes,
                "{}",
                plugin.name
            );
            assert_eq!(
                plugin.normalize_calls.load(Ordering::Relaxed),
                1,
                "{}",
                plugin.name
            );
        }
    }

    #[test]
    fn ties_are_broken_at_random_reproducibly() {
        let profile = profile_with(
            vec![FakeFilter::passes_all("All")],
            vec![(
                FakeScore::new("Tie", |i| if i < 4 { 50 } else { 10 }, None),
                1,
            )],
        );
        let snap = snapshot(6);
        let picks = |seed: u64| -> Vec<String> {
            let mut algo = Algorithm::new(seed);
            (0..20)
                .map(|_| {
                    let r = algo.schedule(&profile, &snap, &pod(), &ScheduleOptions::default());
                    scheduled(&r).0.to_string()
                })
                .collect()
        };
        assert_eq!(picks(42), picks(42), "same seed, same choices");
        let mut seen: HashSet<String> = HashSet::new();
        for seed in 0..200 {
            seen.extend(picks(seed));
        }
        assert_eq!(seen, names(&[0, 1, 2, 3]), "every tied node and only those");
    }

    #[test]
    fn ranked_ties_go_to_the_same_node_for_the_whole_run() {
        let mut profile = profile_with(
            vec![FakeFilter::passes_all("All")],
            vec![(
                FakeScore::new("Tie", |i| if i < 4 { 50 } else { 10 }, None),
                1,
            )],
        );
        profile.tie_break = TieBreak::Ranked;
        let snap = snapshot(6);
        let picks = |seed: u64| -> HashSet<String> {
            let mut algo = Algorithm::new(seed);
            (0..20)
                .map(|_| {
                    let r = algo.schedule(&profile, &snap, &pod(), &ScheduleOptions::default());
                    scheduled(&r).0.to_string()
                })
                .collect()
        };
        assert_eq!(picks(42).len(), 1, "one node takes every tie of a run");
        let mut seen: HashSet<String> = HashSet::new();
        for seed in 0..200 {
            seen.extend(picks(seed));
        }
        assert_eq!(
            seen,
            names(&[0, 1, 2, 3]),
            "the seed decides which of the tied nodes"
        );
    }

    #[test]
    fn weights_multiply_normalized_scores() {
        struct Case {
            name: &'static str,
            weight_a: i64,
            weight_b: i64,
            want: usize,
            want_scores: [i64; 2],
        }
        let cases = [
            // A gives node 0 100 and node 1 0; B gives node 0 0 and node 1 50.
            Case {
                name: "equal weights: A wins",
                weight_a: 1,
                weight_b: 1,
                want: 0,
                want_scores: [100, 50],
            },
            Case {
                name: "B weighs 3: B wins",
                weight_a: 1,
                weight_b: 3,
                want: 1,
                want_scores: [100, 150],
            },
            Case {
                name: "A weighs 2",
                weight_a: 2,
                weight_b: 3,
                want: 0,
                want_scores: [200, 150],
            },
        ];
        for case in cases {
            let a = FakeScore::new("A", |i| if i == 0 { 100 } else { 0 }, None);
            let b = FakeScore::new("B", |i| if i == 1 { 50 } else { 0 }, None);
            let profile = profile_with(
                vec![FakeFilter::passes_all("All")],
                vec![(a, case.weight_a), (b, case.weight_b)],
            );
            let result = attempt(&profile, 2, true);
            let ScheduleResult::Scheduled {
                node, explanation, ..
            } = &result
            else {
                panic!("{}: {result:?}", case.name);
            };
            assert_eq!(node, &node_name(case.want), "{}", case.name);
            let nodes = &explanation.as_ref().expect("explained").nodes;
            for (i, want) in case.want_scores.iter().enumerate() {
                assert_eq!(
                    nodes[&node_name(i)],
                    NodeVerdict::Feasible { score: *want },
                    "{}: node {i}",
                    case.name
                );
            }
        }
    }

    #[test]
    fn normalize_runs_before_the_range_check() {
        // Raw scores up to 1000: valid only once normalize divides them by 10.
        let normalized = FakeScore::new("Norm", |i| i as i64 * 100, Some(10));
        let profile = profile_with(
            vec![FakeFilter::passes_all("All")],
            vec![(normalized.clone(), 2)],
        );
        let result = attempt(&profile, 11, true);
        let ScheduleResult::Scheduled {
            node, explanation, ..
        } = &result
        else {
            panic!("{result:?}");
        };
        assert_eq!(node, &node_name(10));
        assert_eq!(
            explanation.as_ref().unwrap().nodes[&node_name(10)],
            NodeVerdict::Feasible { score: 200 }
        );
        assert_eq!(normalized.normalize_calls.load(Ordering::Relaxed), 1);

        let raw = FakeScore::new("Raw", |i| i as i64 * 100, None);
        let profile = profile_with(vec![FakeFilter::passes_all("All")], vec![(raw, 1)]);
        let result = attempt(&profile, 11, false);
        let ScheduleResult::Error(e) = &result else {
            panic!("{result:?}");
        };
        assert_eq!(e.plugin, "Raw");
        assert!(e.message.contains("invalid score 200"), "{e}");

        // A score whose weighted sum would overflow is reported, not a panic.
        let huge = FakeScore::new("Huge", |_| i64::MAX, None);
        let profile = profile_with(vec![FakeFilter::passes_all("All")], vec![(huge, 2)]);
        let result = attempt(&profile, 11, false);
        let ScheduleResult::Error(e) = &result else {
            panic!("{result:?}");
        };
        assert_eq!(e.plugin, "Huge");
    }

    #[test]
    fn one_feasible_node_is_taken_without_scoring() {
        for explain in [false, true] {
            let score = FakeScore::new("S", |_| 1, None);
            let pre_score = Arc::new(FakePreScore {
                seen: AtomicUsize::new(0),
            });
            let mut profile = profile_with(
                vec![FakeFilter::new(
                    "F",
                    |i| i != 2,
                    "nope",
                    Code::Unschedulable,
                )],
                vec![(score.clone(), 1)],
            );
            profile.pre_scores = vec![pre_score.clone()];
            let result = attempt(&profile, 4, explain);
            let (node, evaluated, feasible) = scheduled(&result);
            assert_eq!(
                (node, evaluated, feasible),
                (node_name(2).as_str(), 4, 1),
                "explain={explain}"
            );
            let want_calls = usize::from(explain);
            assert_eq!(
                score.score_calls.load(Ordering::Relaxed),
                want_calls,
                "explain={explain}"
            );
            assert_eq!(
                pre_score.seen.load(Ordering::Relaxed),
                want_calls,
                "explain={explain}"
            );
        }
    }

    /// A PreFilter and PreScore that reports kube's Skip for the named plugins.
    struct Skipper {
        filters: &'static [&'static str],
        scores: &'static [&'static str],
    }

    impl Plugin for Skipper {
        fn name(&self) -> &'static str {
            "Skipper"
        }
    }

    impl PreFilter for Skipper {
        fn pre_filter(
            &self,
            state: &mut CycleState,
            _: &PodInfo,
            _: &Snapshot,
        ) -> Result<PreFilterOutcome, PluginError> {
            for &name in self.filters {
                state.skip_filter(name);
            }
            Ok(PreFilterOutcome::AllNodes)
        }
    }

    impl PreScore for Skipper {
        fn pre_score(&self, state: &mut CycleState, _: &PreScoreInput) -> Result<(), PluginError> {
            for &name in self.scores {
                state.skip_score(name);
            }
            Ok(())
        }
    }

    #[test]
    fn skipped_filters_and_scores_do_not_run() {
        // F rejects nodes 0 and 1; S (weight 2) prefers high indices, T low ones.
        let cases: [(&[&str], &[&str], usize, bool, bool); 4] = [
            (&[], &[], 3, true, true),
            (&["F"], &[], 3, false, true),
            (&[], &["S"], 2, true, false),
            (&["F"], &["S"], 0, false, false),
        ];
        for (filters, scores, want, f_runs, s_runs) in cases {
            let f = FakeFilter::new("F", |i| i < 2, "nope", Code::Unschedulable);
            let s = FakeScore::new("S", |i| i as i64 * 10, None);
            let t = FakeScore::new("T", |i| 10 - i as i64, None);
            let mut profile = profile_with(vec![f.clone()], vec![(s.clone(), 2), (t, 1)]);
            let skipper = Arc::new(Skipper { filters, scores });
            profile.pre_filters = vec![skipper.clone()];
            profile.pre_scores = vec![skipper];
            let result = attempt(&profile, 4, false);
            let name = format!("skip filters {filters:?}, scores {scores:?}");
            assert_eq!(scheduled(&result).0, node_name(want), "{name}");
            assert_eq!(f.calls() > 0, f_runs, "{name}: F");
            let s_calls = s.score_calls.load(Ordering::Relaxed);
            assert_eq!(s_calls > 0, s_runs, "{name}: S");
        }
    }

    #[test]
    fn no_score_plugins_take_the_first_fit() {
        let filter = FakeFilter::new("F", |i| i < 3, "nope", Code::Unschedulable);
        let profile = profile_with(vec![filter.clone()], vec![]);
        let result = attempt(&profile, 10, false);
        assert_eq!(scheduled(&result), (node_name(3).as_str(), 4, 1));
        assert_eq!(filter.calls(), 4);
    }

    #[test]
    fn pre_filter_node_sets() {
        struct Case {
            name: &'static str,
            /// Node sets of the narrowing PreFilters, by plugin name.
            sets: Vec<(&'static str, Vec<usize>)>,
            /// Nodes the filter rejects with "Insufficient cpu".
            rejects: fn(usize) -> bool,
            want_node: Option<usize>,
            want_message: Option<String>,
        }
        let cases = [
            Case {
                name: "narrowed to one fitting node",
                sets: vec![("NodeName", vec![2])],
                rejects: |_| false,
                want_node: Some(2),
                want_message: None,
            },
            Case {
                name: "intersection",
                sets: vec![("A", vec![0, 1, 2]), ("B", vec![1, 2, 3])],
                rejects: |i| i == 1,
                want_node: Some(2),
                want_message: None,
            },
            Case {
                name: "narrowed node rejected by a filter",
                sets: vec![("NodeAffinity", vec![1])],
                rejects: |i| i == 1,
                want_node: None,
                want_message: Some("0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity].".into()),
            },
            Case {
                name: "unknown node names are dropped",
                sets: vec![("NodeName", vec![99])],
                rejects: |_| false,
                want_node: None,
                want_message: Some("0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [NodeName].".into()),
            },
            Case {
                name: "two narrowing plugins listed sorted",
                sets: vec![("Zed", vec![0, 1]), ("Alpha", vec![1, 3])],
                rejects: |_| true,
                want_node: None,
                want_message: Some("0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [Alpha Zed].".into()),
            },
        ];
        for case in cases {
            let filter = FakeFilter::new(
                "NodeResourcesFit",
                case.rejects,
                "Insufficient cpu",
                Code::Unschedulable,
            );
            let mut profile = profile_with(vec![filter.clone()], vec![(flat_score(), 1)]);
            profile.pre_filters = case
                .sets
                .iter()
                .map(|(name, nodes)| {
                    Arc::new(FakePreFilter {
                        name,
                        outcome: PreFilterOutcome::Nodes(names(nodes)),
                    }) as Arc<dyn PreFilter>
                })
                .collect();
            let result = attempt(&profile, 4, true);
            match (&result, case.want_node, &case.want_message) {
                (
                    ScheduleResult::Scheduled {
                        node, explanation, ..
                    },
                    Some(want),
                    None,
                ) => {
                    assert_eq!(node, &node_name(want), "{}", case.name);
                    assert_eq!(
                        explanation.as_ref().unwrap().nodes.len(),
                        4,
                        "{}: every node explained",
                        case.name
                    );
                }
                (
                    ScheduleResult::Unschedulable {
                        message,
                        diagnosis,
                        explanation,
                        ..
                    },
                    None,
                    Some(want),
                ) => {
                    assert_eq!(message, want, "{}", case.name);
                    for (name, _) in &case.sets {
                        assert!(
                            diagnosis.unschedulable_plugins.contains(name),
                            "{}: {name}",
                            case.name
                        );
                    }
                    assert_eq!(
                        explanation.as_ref().unwrap().nodes.len(),
                        4,
                        "{}: every node explained",
                        case.name
                    );
                }
                _ => panic!("{}: {result:?}", case.name),
            }
        }
    }

    #[test]
    fn pre_filter_rejections() {
        struct Case {
            name: &'static str,
            pre_filters: Vec<FakePreFilter>,
            want_reason: &'static str,
            want_plugin: &'static str,
            want_post_filter_calls: usize,
        }
        let cases = [
            Case {
                name: "unresolvable reject: no preemption",
                pre_filters: vec![FakePreFilter {
                    name: "P",
                    outcome: PreFilterOutcome::Reject(Rejection::unresolvable(
                        "whoever",
                        "pod has unbound immediate PersistentVolumeClaims",
                    )),
                }],
                want_reason: "pod has unbound immediate PersistentVolumeClaims",
                want_plugin: "P",
                want_post_filter_calls: 0,
            },
            Case {
                name: "resolvable reject: the others still run, preemption tried",
                pre_filters: vec![
                    FakePreFilter {
                        name: "P",
                        outcome: PreFilterOutcome::Reject(Rejection::unschedulable(
                            "P",
                            "too many pods",
                        )),
                    },
                    FakePreFilter {
                        name: "Q",
                        outcome: PreFilterOutcome::AllNodes,
                    },
                ],
                want_reason: "too many pods",
                want_plugin: "P",
                want_post_filter_calls: 1,
            },
            Case {
                name: "disjoint node sets",
                pre_filters: vec![
                    FakePreFilter {
                        name: "B",
                        outcome: PreFilterOutcome::Nodes(names(&[0])),
                    },
                    FakePreFilter {
                        name: "A",
                        outcome: PreFilterOutcome::Nodes(names(&[1])),
                    },
                ],
                want_reason: "node(s) didn't satisfy plugin(s) [A B] simultaneously",
                want_plugin: "A",
                want_post_filter_calls: 0,
            },
            Case {
                name: "one plugin's empty set",
                pre_filters: vec![FakePreFilter {
                    name: "A",
                    outcome: PreFilterOutcome::Nodes(HashSet::new()),
                }],
                want_reason: "node(s) didn't satisfy plugin A",
                want_plugin: "A",
                want_post_filter_calls: 0,
            },
        ];
        for case in cases {
            let filter = FakeFilter::passes_all("F");
            let post = Arc::new(FakePostFilter {
                calls: AtomicUsize::new(0),
            });
            let mut profile = profile_with(vec![filter.clone()], vec![(flat_score(), 1)]);
            profile.pre_filters = case
                .pre_filters
                .into_iter()
                .map(|p| Arc::new(p) as Arc<dyn PreFilter>)
                .collect();
            profile.post_filter = Some(post.clone());
            let result = attempt(&profile, 3, true);
            let ScheduleResult::Unschedulable {
                diagnosis,
                message,
                explanation,
                post_filter_message,
                ..
            } = &result
            else {
                panic!("{}: {result:?}", case.name);
            };
            let rejection = diagnosis.pre_filter_rejection.as_ref().expect(case.name);
            assert_eq!(*rejection.reasons, [case.want_reason], "{}", case.name);
            assert_eq!(rejection.plugin, case.want_plugin, "{}", case.name);
            assert!(
                diagnosis.unschedulable_plugins.contains(case.want_plugin),
                "{}",
                case.name
            );
            assert_eq!(message, &diagnosis.message(), "{}", case.name);
            assert_eq!(filter.calls(), 0, "{}: filters never run", case.name);
            assert_eq!(
                post.calls.load(Ordering::Relaxed),
                case.want_post_filter_calls,
                "{}",
                case.name
            );
            if case.want_post_filter_calls == 0 {
                assert_eq!(
                    post_filter_message.as_deref(),
                    Some("preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."),
                    "{}",
                    case.name
                );
            }
            let nodes = &explanation.as_ref().unwrap().nodes;
            assert_eq!(nodes.len(), 3, "{}", case.name);
            assert!(nodes.values().all(|v| matches!(v, NodeVerdict::Rejected { plugin, .. } if *plugin == case.want_plugin)), "{}", case.name);
        }
    }

    #[test]
    fn post_filter_runs_only_when_eviction_may_help() {
        struct Case {
            name: &'static str,
            code: Code,
            never: bool,
            want_calls: usize,
            want_nomination: bool,
            want_message: Option<&'static str>,
        }
        let cases = [
            Case { name: "resolvable: nominated", code: Code::Unschedulable, never: false, want_calls: 1, want_nomination: true, want_message: None },
            Case {
                name: "unresolvable: skipped",
                code: Code::UnschedulableAndUnresolvable,
                never: false,
                want_calls: 0,
                want_nomination: false,
                want_message: Some("preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."),
            },
            Case {
                name: "preemptionPolicy Never: the plugin words it",
                code: Code::UnschedulableAndUnresolvable,
                never: true,
                want_calls: 1,
                want_nomination: false,
                want_message: Some("preemption: fake says no"),
            },
        ];
        for case in cases {
            let post = Arc::new(FakePostFilter {
                calls: AtomicUsize::new(0),
            });
            let mut profile = profile_with(
                vec![FakeFilter::new("F", |_| true, "nope", case.code)],
                vec![(flat_score(), 1)],
            );
            profile.post_filter = Some(post.clone());
            let mut pod = pod();
            if case.never {
                let mut p = (*pod.pod).clone();
                p.spec.preemption_policy = Some(PreemptionPolicy::Never);
                pod = PodInfo::new(Arc::new(p));
            }
            let result = Algorithm::new(0).schedule(
                &profile,
                &snapshot(2),
                &pod,
                &ScheduleOptions::default(),
            );
            let ScheduleResult::Unschedulable {
                nomination,
                post_filter_message,
                message,
                ..
            } = &result
            else {
                panic!("{}: {result:?}", case.name);
            };
            assert_eq!(
                post.calls.load(Ordering::Relaxed),
                case.want_calls,
                "{}",
                case.name
            );
            assert_eq!(nomination.is_some(), case.want_nomination, "{}", case.name);
            assert_eq!(
                post_filter_message.as_deref(),
                case.want_message,
                "{}",
                case.name
            );
            if let Some(post) = case.want_message {
                assert_eq!(
                    result.failure_message(),
                    Some(format!("{message} {post}")),
                    "{}",
                    case.name
                );
            }
        }
    }

    #[test]
    fn explain_records_every_verdict() {
        let profile = profile_with(
            vec![FakeFilter::new(
                "F",
                |i| i % 2 == 1,
                "odd",
                Code::Unschedulable,
            )],
            vec![(FakeScore::new("S", |i| i as i64, None), 3)],
        );
        let result = attempt(&profile, 5, true);
        let ScheduleResult::Scheduled {
            node,
            explanation,
            evaluated,
            feasible,
        } = &result
        else {
            panic!("{result:?}");
        };
        assert_eq!(
            (node.as_str(), *evaluated, *feasible),
            (node_name(4).as_str(), 5, 3)
        );
        let want: BTreeMap<String, NodeVerdict> = (0..5)
            .map(|i| {
                let v = if i % 2 == 1 {
                    NodeVerdict::Rejected {
                        plugin: "F",
                        reasons: vec!["odd".into()],
                    }
                } else {
                    NodeVerdict::Feasible {
                        score: 3 * i as i64,
                    }
                };
                (node_name(i), v)
            })
            .collect();
        assert_eq!(explanation.as_ref().unwrap().nodes, want);
    }

    #[test]
    fn nominated_node_is_tried_first() {
        let mut p = (*pod().pod).clone();
        p.status.nominated_node_name = node_name(1);
        let nominated = PodInfo::new(Arc::new(p));
        struct Case {
            name: &'static str,
            rejects: fn(usize) -> bool,
            explain: bool,
            want: (usize, usize, usize),
        }
        let cases = [
            Case {
                name: "nominated fits",
                rejects: |_| false,
                explain: false,
                want: (1, 1, 1),
            },
            Case {
                name: "nominated fits, explained",
                rejects: |_| false,
                explain: true,
                want: (1, 4, 4),
            },
            Case {
                name: "nominated does not fit",
                rejects: |i| i == 1,
                explain: false,
                want: (3, 4, 3),
            },
        ];
        for case in cases {
            // The score prefers node 3, so only the nomination explains choosing node 1.
            let profile = profile_with(
                vec![FakeFilter::new(
                    "F",
                    case.rejects,
                    "nope",
                    Code::Unschedulable,
                )],
                vec![(
                    FakeScore::new("S", |i| if i == 3 { 100 } else { 0 }, None),
                    1,
                )],
            );
            let result = Algorithm::new(0).schedule(
                &profile,
                &snapshot(4),
                &nominated,
                &ScheduleOptions {
                    explain: case.explain,
                },
            );
            let (node, evaluated, feasible) = scheduled(&result);
            assert_eq!(
                (node, evaluated, feasible),
                (node_name(case.want.0).as_str(), case.want.1, case.want.2),
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn empty_cluster() {
        let profile = profile_with(vec![FakeFilter::passes_all("F")], vec![]);
        let result = Algorithm::new(0).schedule(
            &profile,
            &Snapshot::new(),
            &pod(),
            &ScheduleOptions::default(),
        );
        let ScheduleResult::Unschedulable {
            message,
            nomination,
            ..
        } = &result
        else {
            panic!("{result:?}");
        };
        assert_eq!(message, NO_NODES_AVAILABLE);
        assert!(nomination.is_none());
    }

    #[test]
    fn no_filters_every_node_fits() {
        let profile = profile_with(vec![], vec![(FakeScore::new("S", |i| i as i64, None), 1)]);
        let result = attempt(&profile, 5, false);
        assert_eq!(scheduled(&result), (node_name(4).as_str(), 5, 5));
    }
}
