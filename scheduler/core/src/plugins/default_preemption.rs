//! DefaultPreemption: kube-scheduler's PostFilter. When no node fits a pod, it looks for the
//! node where evicting the fewest and least important lower-priority pods lets the pod fit,
//! and proposes that node and those victims; the cycle's caller performs the evictions.
//!
//! The search follows kube's preemption evaluator:
//!
//! 1. Eligibility (kube's PodEligibleToPreemptOthers): a pod with `preemptionPolicy: Never`
//!    preempts nothing, and neither does a pod whose nominated node still holds a
//!    lower-priority pod that an earlier preemption is terminating (deletionTimestamp set,
//!    DisruptionTarget=True with reason PreemptionByScheduler): it waits for that room,
//!    unless the nominated node is now UnschedulableAndUnresolvable for it.
//! 2. Candidates: only nodes rejected as `Unschedulable` (a rejection that removing pods may
//!    resolve) are searched; nodes rejected as UnschedulableAndUnresolvable never are.
//! 3. Victims on one node (kube's SelectVictimsOnNode): remove every pod of strictly lower
//!    priority, check that the pod fits (counting the pods nominated to the node, as the
//!    cycle's filters do), then add the removed pods back, most important first
//!    and those whose eviction would break a PodDisruptionBudget before the others, keeping
//!    each one that still leaves room for the pod. What is left out are the victims.
//!    The search stops once it has found enough candidates (kube's
//!    `minCandidateNodesPercentage` / `minCandidateNodesAbsolute`).
//! 4. The node (kube's pickOneNodeForPreemption): fewest PDB violations, then the lowest
//!    highest victim priority, the lowest sum of priorities, the fewest victims, the latest
//!    start among the highest-priority victims, then the first node.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::hash::Hasher;
use std::sync::Arc;

use berth_model::model::{PreemptionPolicy, Time};
use berth_model::names;
use serde::{Deserialize, Serialize};

use super::InvalidArgs;
use crate::framework::hash::FastHasher;
use crate::framework::{
    run_filters_with_nominated_pods, Code, CycleState, Diagnosis, DisruptionBudget, Filter,
    NodeInfo, NominatedPods, Nomination, Plugin, PodInfo, PostFilter, PostFilterInput,
    PostFilterOutcome, Profile, Rejection, Snapshot, Victim,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "DefaultPreemption";

/// Reason for a candidate node that holds no pod of lower priority than the preemptor.
pub const REASON_NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// Reason for a node that no eviction can help (its rejection was unresolvable).
pub const REASON_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// The whole message for a pod with `preemptionPolicy: Never`.
pub const MESSAGE_PREEMPTION_POLICY_NEVER: &str =
    "preemption: not eligible due to preemptionPolicy=Never.";

/// The whole message for a pod whose nominated node holds a pod terminating by preemption.
pub const MESSAGE_TERMINATING_ON_NOMINATED_NODE: &str =
    "preemption: not eligible due to a terminating pod on the nominated node.";

/// Every message of this plugin starts so, as kube's do.
const MESSAGE_PREFIX: &str = "preemption: ";

/// Added to each victim's priority before summing, so that every term is positive and fewer
/// victims always sum lower, even with negative priorities (kube adds MaxInt32+1).
const PRIORITY_OFFSET: i64 = i32::MAX as i64 + 1;

/// The plugin's `pluginConfig` args (kube's `DefaultPreemptionArgs`). They bound how many
/// candidate nodes the search dry-runs (see [`DefaultPreemption`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Share of the candidate nodes to dry-run, in percent (0..=100; kube's default 10).
    #[serde(default = "default_min_candidate_nodes_percentage")]
    pub min_candidate_nodes_percentage: i32,
    /// Least number of candidate nodes to dry-run (>= 0; kube's default 100).
    #[serde(default = "default_min_candidate_nodes_absolute")]
    pub min_candidate_nodes_absolute: i32,
}

fn default_min_candidate_nodes_percentage() -> i32 {
    10
}

fn default_min_candidate_nodes_absolute() -> i32 {
    100
}

impl Default for Args {
    fn default() -> Self {
        Args {
            min_candidate_nodes_percentage: default_min_candidate_nodes_percentage(),
            min_candidate_nodes_absolute: default_min_candidate_nodes_absolute(),
        }
    }
}

impl Args {
    /// Checks the ranges kube enforces: the percentage in 0..=100, the absolute number not
    /// negative, and not both zero.
    pub fn validate(&self) -> Result<(), InvalidArgs> {
        let percentage = self.min_candidate_nodes_percentage;
        let absolute = self.min_candidate_nodes_absolute;
        if !(0..=100).contains(&percentage) {
            return Err(InvalidArgs::new(
                "minCandidateNodesPercentage",
                format!("{percentage} is not in the range 0-100"),
            ));
        }
        if absolute < 0 {
            return Err(InvalidArgs::new(
                "minCandidateNodesAbsolute",
                format!("{absolute} is not in the range 0-inf"),
            ));
        }
        if percentage == 0 && absolute == 0 {
            return Err(InvalidArgs::new(
                "minCandidateNodesPercentage",
                "cannot be zero at the same time as minCandidateNodesAbsolute",
            ));
        }
        Ok(())
    }
}

/// The DefaultPreemption plugin (PostFilter).
///
/// As kube, it dry-runs the potential nodes in turn until it has found
/// `minCandidateNodesPercentage` of them (at least `minCandidateNodesAbsolute`) as candidates,
/// one of them breaking no budget. kube starts at a random offset; Berth starts at an offset
/// hashed from the pod's uid, so a run is reproducible and preemptors still spread out.
///
/// The rule that a pod waits while its nominated node holds a victim still terminating
/// applies to terminating pods in the snapshot (in `berth sim`, pods given with a
/// deletionTimestamp and that condition). Berth's own victims leave the snapshot at once
/// (they end Failed/Preempted when the preemption is decided), so they never hold it back.
#[derive(Clone, Debug, Default)]
pub struct DefaultPreemption {
    args: Args,
}

impl DefaultPreemption {
    /// The plugin with validated args.
    pub fn try_new(args: Args) -> Result<Self, InvalidArgs> {
        args.validate()?;
        Ok(DefaultPreemption { args })
    }

    /// The args the plugin was built with.
    pub fn args(&self) -> &Args {
        &self.args
    }

    /// kube's GetOffsetAndNumCandidates over `potential` nodes: where the dry run starts
    /// (a hash of the pod's uid; kube draws it at random) and how many candidates it looks
    /// for (the percentage of the potential nodes, at least the absolute number, at most
    /// all of them).
    fn offset_and_num_candidates(&self, pod: &PodInfo, potential: usize) -> (usize, usize) {
        if potential == 0 {
            return (0, 0);
        }
        let percentage = usize::try_from(self.args.min_candidate_nodes_percentage).unwrap_or(0);
        let absolute = usize::try_from(self.args.min_candidate_nodes_absolute).unwrap_or(0);
        let wanted = (potential * percentage / 100).max(absolute).min(potential);
        let mut hasher = FastHasher::default();
        hasher.write(pod.uid().as_bytes());
        let offset = usize::try_from(hasher.finish() % potential as u64).unwrap_or(0);
        (offset, wanted)
    }
}

/// The plugin can sit behind `Arc<dyn Trait>` and cross threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<DefaultPreemption>();
};

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PostFilter for DefaultPreemption {
    fn post_filter(&self, state: &CycleState, input: &PostFilterInput) -> PostFilterOutcome {
        let PostFilterInput {
            pod,
            snapshot,
            diagnosis,
            profile,
        } = *input;
        if pod.pod.spec.preemption_policy == Some(PreemptionPolicy::Never) {
            return PostFilterOutcome::NotEligible(MESSAGE_PREEMPTION_POLICY_NEVER.to_string());
        }
        if waits_for_terminating_victim(pod, snapshot, diagnosis) {
            return PostFilterOutcome::NotEligible(
                MESSAGE_TERMINATING_ON_NOMINATED_NODE.to_string(),
            );
        }
        let potential = potential_nodes(snapshot, diagnosis);
        let mut failures: BTreeMap<String, Rejection> = BTreeMap::new();
        if potential.is_empty() {
            return PostFilterOutcome::NoHelp(no_help_message(snapshot, failures));
        }
        let mut dry_run = DryRun {
            profile,
            filters: state.filters_to_run(&profile.filters),
            pod,
            snapshot,
            state: state.clone(),
        };
        let mut candidates: Vec<Candidate> = Vec::new();
        let (offset, wanted) = self.offset_and_num_candidates(pod, potential.len());
        let mut non_violating = 0;
        let in_turn = potential.iter().cycle().skip(offset).take(potential.len());
        for &node in in_turn {
            match dry_run.select_victims_on_node(node) {
                Ok(candidate) if candidate.victims.is_empty() => {
                    // The pod fits here without evicting anything: nothing can beat that.
                    tracing::debug!(pod = %pod.key(), node = node.name(), "preemption: node needs no victims");
                    return PostFilterOutcome::Nominate(candidate.into_nomination());
                }
                Ok(candidate) => {
                    tracing::trace!(
                        pod = %pod.key(),
                        node = node.name(),
                        victims = candidate.victims.len(),
                        pdb_violations = candidate.pdb_violations,
                        "preemption candidate"
                    );
                    non_violating += usize::from(candidate.pdb_violations == 0);
                    candidates.push(candidate);
                    if non_violating > 0 && candidates.len() >= wanted {
                        break;
                    }
                }
                Err(rejection) => {
                    failures.insert(node.name().to_string(), rejection);
                }
            }
        }
        match pick_one_node(&candidates) {
            Some(best) => {
                let nomination = candidates.swap_remove(best).into_nomination();
                tracing::debug!(
                    pod = %pod.key(),
                    node = %nomination.node,
                    victims = nomination.victims.len(),
                    "preemption: node nominated"
                );
                PostFilterOutcome::Nominate(nomination)
            }
            None => PostFilterOutcome::NoHelp(no_help_message(snapshot, failures)),
        }
    }
}

/// The second half of kube's PodEligibleToPreemptOthers: whether `pod` is nominated to a
/// node that is not UnschedulableAndUnresolvable for it and still holds a lower-priority pod
/// that a preemption is terminating. Such a pod waits for the room instead of preempting
/// again.
fn waits_for_terminating_victim(pod: &PodInfo, snapshot: &Snapshot, diagnosis: &Diagnosis) -> bool {
    let nominated = &pod.pod.status.nominated_node_name;
    if nominated.is_empty() {
        return false;
    }
    let status = diagnosis
        .node_rejections
        .get(nominated)
        .or(diagnosis.pre_filter_rejection.as_ref());
    if status.is_some_and(|r| r.code == Code::UnschedulableAndUnresolvable) {
        return false;
    }
    snapshot.node(nominated).is_some_and(|node| {
        node.pods
            .iter()
            .any(|p| p.priority < pod.priority && is_terminating_by_preemption(&p.pod))
    })
}

/// kube's podTerminatingByPreemption: deletionTimestamp set and DisruptionTarget=True with
/// reason PreemptionByScheduler.
fn is_terminating_by_preemption(pod: &berth_model::model::Pod) -> bool {
    pod.is_terminating()
        && pod
            .condition(names::CONDITION_DISRUPTION_TARGET)
            .is_some_and(|c| {
                c.status == names::STATUS_TRUE && c.reason == names::REASON_PREEMPTION_BY_SCHEDULER
            })
}

/// Nodes where removing pods may help, in snapshot order: those rejected as
/// [`Code::Unschedulable`], or every node when a PreFilter rejected the pod resolvably.
fn potential_nodes<'a>(snapshot: &'a Snapshot, diagnosis: &Diagnosis) -> Vec<&'a NodeInfo> {
    if let Some(rejection) = &diagnosis.pre_filter_rejection {
        return if rejection.code == Code::Unschedulable {
            snapshot.nodes().iter().collect()
        } else {
            Vec::new()
        };
    }
    snapshot
        .nodes()
        .iter()
        .filter(|node| {
            diagnosis
                .node_rejections
                .get(node.name())
                .is_some_and(|r| r.code == Code::Unschedulable)
        })
        .collect()
}

/// kube's message when no candidate was found: each searched node's reason, every other
/// node counted as one preemption cannot help, aggregated like [`Diagnosis::message`].
fn no_help_message(snapshot: &Snapshot, mut failures: BTreeMap<String, Rejection>) -> String {
    for node in snapshot.nodes() {
        failures
            .entry(node.name().to_string())
            .or_insert_with(|| Rejection::unresolvable(NAME, REASON_NOT_HELPFUL));
    }
    let diagnosis = Diagnosis {
        node_rejections: failures,
        num_all_nodes: snapshot.len(),
        ..Diagnosis::default()
    };
    format!("{MESSAGE_PREFIX}{}", diagnosis.message())
}

/// A node where evicting `victims` lets the pod fit.
#[derive(Debug)]
struct Candidate {
    node: String,
    /// Most important first.
    victims: Vec<Arc<PodInfo>>,
    /// Victims whose eviction breaks a PodDisruptionBudget.
    pdb_violations: usize,
}

impl Candidate {
    /// The proposal, victims most important first, as kube's SelectVictimsOnNode returns them.
    fn into_nomination(self) -> Nomination {
        Nomination {
            node: self.node,
            victims: self
                .victims
                .iter()
                .map(|p| Victim {
                    namespace: p.pod.metadata.namespace.clone(),
                    name: p.pod.metadata.name.clone(),
                    uid: p.uid().to_string(),
                })
                .collect(),
        }
    }

    /// Priority of the most important victim (the first).
    fn highest_priority(&self) -> i32 {
        self.victims.first().map_or(i32::MIN, |p| p.priority)
    }

    /// Sum of the victims' priorities, each offset so that fewer victims sum lower.
    fn priority_sum(&self) -> i64 {
        self.victims
            .iter()
            .map(|p| i64::from(p.priority) + PRIORITY_OFFSET)
            .sum()
    }

    /// The earliest start among the victims of the highest priority (kube's
    /// GetEarliestPodStartTime).
    fn earliest_start_of_highest(&self) -> StartTime {
        let highest = self.highest_priority();
        self.victims
            .iter()
            .filter(|p| p.priority == highest)
            .map(|p| start_time(p))
            .min()
            .unwrap_or(StartTime::NotStarted)
    }
}

/// A pod's `status.startTime`; a pod that has not started counts as starting now, after
/// every recorded start (kube's GetPodStartTime).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum StartTime {
    /// Started then.
    At(Time),
    /// No start time yet: later than any.
    NotStarted,
}

fn start_time(pod: &PodInfo) -> StartTime {
    pod.pod
        .status
        .start_time
        .map_or(StartTime::NotStarted, StartTime::At)
}

/// kube's MoreImportantPod as a sort key: higher priority first, then the earlier start.
fn importance_order(a: &PodInfo, b: &PodInfo) -> std::cmp::Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| start_time(a).cmp(&start_time(b)))
}

/// kube's pickOneNodeForPreemption with its default criteria, each only breaking the ties
/// of the ones before: fewest PDB violations; lowest highest victim priority; lowest offset
/// sum of priorities; fewest victims; latest start among the highest-priority victims;
/// then the first candidate. None when there is no candidate.
fn pick_one_node(candidates: &[Candidate]) -> Option<usize> {
    // `min_by_key` keeps the first of equal keys, which is the last rule.
    candidates
        .iter()
        .enumerate()
        .min_by_key(|(_, c)| {
            (
                c.pdb_violations,
                c.highest_priority(),
                c.priority_sum(),
                c.victims.len(),
                Reverse(c.earliest_start_of_highest()),
            )
        })
        .map(|(i, _)| i)
}

/// Splits pods (kept in their order) into those whose eviction would exceed a
/// PodDisruptionBudget, counting each one against every budget that covers it, and the
/// others (kube's filterPodsWithPDBViolation).
fn split_by_budget(
    pods: &[Arc<PodInfo>],
    budgets: &[DisruptionBudget],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = budgets.iter().map(|b| b.disruptions_allowed).collect();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for pod in pods {
        let meta = &pod.pod.metadata;
        let mut violates = false;
        // A pod without labels matches no budget.
        if !meta.labels.is_empty() {
            for (budget, allowed) in budgets.iter().zip(allowed.iter_mut()) {
                let covers = budget.namespace == meta.namespace
                    && budget
                        .selector
                        .as_ref()
                        .is_some_and(|s| !s.is_empty() && s.matches(&meta.labels));
                if covers {
                    *allowed -= 1;
                    violates |= *allowed < 0;
                }
            }
        }
        if violates {
            violating.push(pod.clone());
        } else {
            non_violating.push(pod.clone());
        }
    }
    (violating, non_violating)
}

/// The per-pod scratch space of the victim search: a copy of the cycle's state (the
/// PreFilter state for the cluster as it is, and the nominated pods to count). Each node's
/// search changes it through the PreFilters'
/// `remove_pod`/`add_pod` and puts back every pod it removed before the next node, so the
/// state always describes the unchanged cluster between nodes; only the node under test is
/// copied, never the snapshot.
struct DryRun<'a> {
    profile: &'a Profile,
    /// The profile's filters less those the cycle's PreFilters skipped.
    filters: Cow<'a, [Arc<dyn Filter>]>,
    pod: &'a PodInfo,
    snapshot: &'a Snapshot,
    state: CycleState,
}

impl DryRun<'_> {
    /// kube's SelectVictimsOnNode: the fewest, least important lower-priority pods of `node`
    /// whose eviction lets the pod fit, or why no eviction there can.
    fn select_victims_on_node(&mut self, node: &NodeInfo) -> Result<Candidate, Rejection> {
        let mut potential: Vec<Arc<PodInfo>> = node
            .pods
            .iter()
            .filter(|p| p.priority < self.pod.priority)
            .cloned()
            .collect();
        if potential.is_empty() {
            return Err(Rejection::unresolvable(NAME, REASON_NO_VICTIMS));
        }
        let mut node = node.clone();
        for victim in &potential {
            self.remove(&mut node, victim);
        }
        let outcome = match self.run_filters(&node) {
            Some(rejection) => Err(rejection),
            None => {
                potential.sort_by(|a, b| importance_order(a, b));
                let (violating, non_violating) =
                    split_by_budget(&potential, self.snapshot.disruption_budgets());
                let mut victims = Vec::new();
                for pod in violating {
                    if !self.reprieve(&mut node, &pod) {
                        victims.push(pod);
                    }
                }
                let pdb_violations = victims.len();
                for pod in non_violating {
                    if !self.reprieve(&mut node, &pod) {
                        victims.push(pod);
                    }
                }
                victims.sort_by(|a, b| importance_order(a, b));
                Ok(Candidate {
                    node: node.name().to_string(),
                    victims,
                    pdb_violations,
                })
            }
        };
        // Put back whatever is still removed, leaving the state as it was.
        let still_removed: Vec<Arc<PodInfo>> = match &outcome {
            Ok(candidate) => candidate.victims.clone(),
            Err(_) => potential,
        };
        for pod in &still_removed {
            self.add(&mut node, pod);
        }
        outcome
    }

    /// Adds a removed pod back; keeps it if the pod still fits, else removes it again.
    fn reprieve(&mut self, node: &mut NodeInfo, pod: &Arc<PodInfo>) -> bool {
        self.add(node, pod);
        let fits = self.run_filters(node).is_none();
        if !fits {
            self.remove(node, pod);
        }
        fits
    }

    fn remove(&mut self, node: &mut NodeInfo, pod: &Arc<PodInfo>) {
        node.remove_pod(pod.uid());
        for plugin in &self.profile.pre_filters {
            plugin.remove_pod(&mut self.state, self.pod, pod, node, self.snapshot);
        }
    }

    fn add(&mut self, node: &mut NodeInfo, pod: &Arc<PodInfo>) {
        node.add_pod(pod.clone());
        for plugin in &self.profile.pre_filters {
            plugin.add_pod(&mut self.state, self.pod, pod, node, self.snapshot);
        }
    }

    /// The first Filter's rejection of the pod on `node` (with the room nominated pods hold
    /// there counted), or None when it fits.
    fn run_filters(&self, node: &NodeInfo) -> Option<Rejection> {
        run_filters_with_nominated_pods(
            NominatedPods::of(&self.state),
            &self.filters,
            &self.profile.pre_filters,
            &self.state,
            self.pod,
            node,
            self.snapshot,
        )
    }
}

#[cfg(test)]
mod tests {
    use berth_model::model::{LabelSelector, PodAffinityTerm, Protocol, TaintEffect};

    use super::*;
    use crate::cycle::{Algorithm, ScheduleOptions, ScheduleResult};
    use crate::framework::{Fit, PreFilterOutcome};
    use crate::plugins::testing::{
        check_typed_args, snapshot, Info, NodeBuilder, PodBuilder, TypedArgsCase,
    };

    const HOST: &str = "kubernetes.io/hostname";
    const RACK: &str = "rack";
    const ZONE: &str = "topology.kubernetes.io/zone";

    /// What the plugin proposed, in comparable form: victims by name.
    #[derive(Debug, PartialEq, Eq)]
    enum Got {
        Nominate(String, Vec<String>),
        NoHelp(String),
    }

    fn nominate(node: &str, victims: &[&str]) -> Got {
        Got::Nominate(
            node.to_string(),
            victims.iter().map(|v| v.to_string()).collect(),
        )
    }

    fn no_help(message: &str) -> Got {
        Got::NoHelp(message.to_string())
    }

    fn got(outcome: PostFilterOutcome) -> Got {
        match outcome {
            PostFilterOutcome::Nominate(n) => {
                Got::Nominate(n.node, n.victims.into_iter().map(|v| v.name).collect())
            }
            PostFilterOutcome::NoHelp(message) | PostFilterOutcome::NotEligible(message) => {
                Got::NoHelp(message)
            }
        }
    }

    /// A running pod with a priority, a cpu request and a start time (seconds).
    fn running(name: &str, priority: i32, cpu: i64, start: i64) -> PodBuilder {
        PodBuilder::new(name)
            .priority(priority)
            .cpu_millis(cpu)
            .start_time(start)
    }

    /// A node with `cpu` millicores, labelled with its hostname, holding `pods`.
    fn node(name: &str, cpu: i64, pods: Vec<PodBuilder>) -> NodeBuilder {
        pods.into_iter().fold(
            NodeBuilder::new(name).cpu_millis(cpu).label(HOST, name),
            |n, p| n.with_pod(p),
        )
    }

    fn preemptor(priority: i32, cpu: i64) -> PodBuilder {
        PodBuilder::new("preemptor")
            .priority(priority)
            .cpu_millis(cpu)
    }

    fn budget(app: &str, disruptions_allowed: i32) -> DisruptionBudget {
        DisruptionBudget {
            namespace: "default".into(),
            name: format!("{app}-pdb"),
            selector: Some(LabelSelector {
                match_labels: [("app".to_string(), app.to_string())].into(),
                ..LabelSelector::default()
            }),
            disruptions_allowed,
        }
    }

    fn term(app: &str, topology_key: &str) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: [("app".to_string(), app.to_string())].into(),
                ..LabelSelector::default()
            }),
            topology_key: topology_key.into(),
            ..PodAffinityTerm::default()
        }
    }

    fn never(pod: PodBuilder) -> PodInfo {
        let mut p = pod.build();
        p.spec.preemption_policy = Some(PreemptionPolicy::Never);
        PodInfo::new(Arc::new(p))
    }

    /// The cycle's PreFilter and Filter stages over every node, as the PostFilter sees them.
    fn diagnose(profile: &Profile, pod: &PodInfo, snap: &Snapshot) -> (CycleState, Diagnosis) {
        let mut state = CycleState::new();
        let mut diagnosis = Diagnosis {
            num_all_nodes: snap.len(),
            ..Diagnosis::default()
        };
        for plugin in &profile.pre_filters {
            let outcome = plugin
                .pre_filter(&mut state, pod, snap)
                .expect("prefilter succeeds");
            assert_eq!(outcome, PreFilterOutcome::AllNodes, "fixtures never narrow");
        }
        for node in snap.nodes() {
            let rejection =
                profile
                    .filters
                    .iter()
                    .find_map(|f| match f.filter(&state, pod, node) {
                        Fit::Yes => None,
                        Fit::No(r) => Some(r),
                    });
            if let Some(r) = rejection {
                diagnosis.node_rejections.insert(node.name().to_string(), r);
            }
        }
        (state, diagnosis)
    }

    fn post_filter_input<'a>(
        pod: &'a PodInfo,
        snapshot: &'a Snapshot,
        diagnosis: &'a Diagnosis,
        profile: &'a Profile,
    ) -> PostFilterInput<'a> {
        PostFilterInput {
            pod,
            snapshot,
            diagnosis,
            profile,
        }
    }

    fn preempt(nodes: Vec<NodeBuilder>, budgets: Vec<DisruptionBudget>, pod: &PodInfo) -> Got {
        let infos: Vec<NodeInfo> = nodes.into_iter().map(Info::info).collect();
        let mut snap = snapshot(&infos);
        snap.set_disruption_budgets(budgets);
        let profile = Profile::default_profile();
        let (state, diagnosis) = diagnose(&profile, pod, &snap);
        let plugin = DefaultPreemption::default();
        got(plugin.post_filter(&state, &post_filter_input(pod, &snap, &diagnosis, &profile)))
    }

    struct Case {
        name: &'static str,
        nodes: Vec<NodeBuilder>,
        budgets: Vec<DisruptionBudget>,
        pod: PodInfo,
        want: Got,
    }

    fn check(cases: Vec<Case>) {
        for case in cases {
            let got = preempt(case.nodes, case.budgets, &case.pod);
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn victims_are_minimal_and_least_important() {
        check(vec![
            Case {
                name: "only as many pods as needed, the latest started first",
                nodes: vec![node(
                    "n1",
                    1000,
                    vec![
                        running("a", 0, 200, 1),
                        running("b", 0, 200, 2),
                        running("c", 0, 200, 3),
                        running("d", 0, 200, 4),
                    ],
                )],
                budgets: vec![],
                pod: preemptor(10, 400).info(),
                want: nominate("n1", &["d"]),
            },
            Case {
                name: "more important pods are reprieved first",
                nodes: vec![node(
                    "n1",
                    1000,
                    vec![
                        running("p1", 1, 500, 1),
                        running("p5", 5, 200, 1),
                        running("p3", 3, 200, 1),
                    ],
                )],
                budgets: vec![],
                pod: preemptor(10, 500).info(),
                want: nominate("n1", &["p1"]),
            },
            Case {
                name: "several victims, most important first (kube's order)",
                nodes: vec![node(
                    "n1",
                    1000,
                    vec![
                        running("p5", 5, 300, 1),
                        running("p1", 1, 300, 1),
                        running("p3", 3, 300, 1),
                    ],
                )],
                budgets: vec![],
                pod: preemptor(10, 600).info(),
                want: nominate("n1", &["p3", "p1"]),
            },
            Case {
                name: "equal priority is never preempted",
                nodes: vec![node("n1", 1000, vec![running("peer", 10, 1000, 1)])],
                budgets: vec![],
                pod: preemptor(10, 500).info(),
                want: no_help(
                    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
                ),
            },
            Case {
                name: "only strictly lower priority pods are victims",
                nodes: vec![node(
                    "n1",
                    1000,
                    vec![running("peer", 10, 500, 1), running("low", 9, 500, 2)],
                )],
                budgets: vec![],
                pod: preemptor(10, 500).info(),
                want: nominate("n1", &["low"]),
            },
            Case {
                name: "preemptionPolicy Never preempts nothing",
                nodes: vec![node("n1", 1000, vec![running("low", 0, 1000, 1)])],
                budgets: vec![],
                pod: never(preemptor(10, 500)),
                want: no_help(MESSAGE_PREEMPTION_POLICY_NEVER),
            },
            Case {
                name: "evicting every lower-priority pod is not enough",
                nodes: vec![node(
                    "n1",
                    1000,
                    vec![running("high", 20, 600, 1), running("low", 0, 400, 1)],
                )],
                budgets: vec![],
                pod: preemptor(10, 500).info(),
                want: no_help("preemption: 0/1 nodes are available: 1 Insufficient cpu."),
            },
        ]);
    }

    /// The node infos of `nodes`, where the pod named `going` is terminating (deletion
    /// timestamp set) with the DisruptionTarget condition of `reason`.
    fn with_terminating(nodes: Vec<NodeBuilder>, reason: &str) -> Vec<NodeInfo> {
        let mut infos: Vec<NodeInfo> = nodes.into_iter().map(Info::info).collect();
        for info in &mut infos {
            let Some(going) = info.remove_pod("default-going") else {
                continue;
            };
            let mut pod = (*going.pod).clone();
            pod.metadata.deletion_timestamp = Some(Time::from_unix_nanos(0));
            pod.status
                .conditions
                .push(berth_model::model::PodCondition {
                    type_: names::CONDITION_DISRUPTION_TARGET.into(),
                    status: "True".into(),
                    reason: reason.into(),
                    ..Default::default()
                });
            info.add_pod(Arc::new(PodInfo::new(Arc::new(pod))));
        }
        infos
    }

    fn nominated_to(pod: PodBuilder, node: &str) -> PodInfo {
        let mut p = pod.build();
        p.status.nominated_node_name = node.into();
        PodInfo::new(Arc::new(p))
    }

    #[test]
    fn a_pod_waits_for_the_victims_its_nominated_node_is_terminating() {
        struct Case {
            name: &'static str,
            nodes: Vec<NodeBuilder>,
            /// The DisruptionTarget reason of the terminating pod `going`.
            reason: &'static str,
            nominated: &'static str,
            want: Got,
        }
        let n1 = || {
            node(
                "n1",
                1000,
                vec![running("going", 0, 600, 1), running("low", 0, 400, 2)],
            )
        };
        let cases = vec![
            Case {
                name: "a victim still terminating on the nominated node: wait",
                nodes: vec![n1()],
                reason: names::REASON_PREEMPTION_BY_SCHEDULER,
                nominated: "n1",
                want: no_help(MESSAGE_TERMINATING_ON_NOMINATED_NODE),
            },
            Case {
                name: "not nominated: preempt",
                nodes: vec![n1()],
                reason: names::REASON_PREEMPTION_BY_SCHEDULER,
                nominated: "",
                want: nominate("n1", &["going"]),
            },
            Case {
                name: "terminating for another reason: preempt",
                nodes: vec![n1()],
                reason: "DeletionByTaintManager",
                nominated: "n1",
                want: nominate("n1", &["going"]),
            },
            Case {
                name: "the nominated node is now unresolvable: preempt elsewhere",
                nodes: vec![
                    n1().taint("dedicated", "gpu", TaintEffect::NoSchedule),
                    node("n2", 1000, vec![running("other", 0, 1000, 1)]),
                ],
                reason: names::REASON_PREEMPTION_BY_SCHEDULER,
                nominated: "n1",
                want: nominate("n2", &["other"]),
            },
        ];
        for case in cases {
            let snap = snapshot(&with_terminating(case.nodes, case.reason));
            let pod = nominated_to(preemptor(10, 500), case.nominated);
            let profile = Profile::default_profile();
            let (state, diagnosis) = diagnose(&profile, &pod, &snap);
            let outcome = DefaultPreemption::default().post_filter(
                &state,
                &post_filter_input(&pod, &snap, &diagnosis, &profile),
            );
            assert_eq!(got(outcome), case.want, "{}", case.name);
        }
    }

    #[test]
    fn the_search_looks_for_kubes_number_of_candidates() {
        // (potential nodes, minCandidateNodesPercentage, minCandidateNodesAbsolute, wanted)
        let cases = [
            (0, 10, 100, 0),
            (50, 10, 100, 50),
            (500, 10, 100, 100),
            (2000, 10, 100, 200),
            (2000, 50, 10, 1000),
        ];
        let pod = preemptor(10, 500).info();
        for (potential, percentage, absolute, want) in cases {
            let plugin = DefaultPreemption::try_new(Args {
                min_candidate_nodes_percentage: percentage,
                min_candidate_nodes_absolute: absolute,
            })
            .expect("valid args");
            let (offset, wanted) = plugin.offset_and_num_candidates(&pod, potential);
            assert_eq!(wanted, want, "{potential} nodes, {percentage}%, {absolute}");
            assert!(offset < potential.max(1), "offset {offset} of {potential}");
        }
        // The search stops at enough candidates: 3 wanted of 4 equal nodes.
        let nodes: Vec<NodeInfo> = (1..=4)
            .map(|i| {
                node(
                    &format!("n{i}"),
                    1000,
                    vec![running(&format!("v{i}"), 0, 1000, 1)],
                )
                .info()
            })
            .collect();
        let snap = snapshot(&nodes);
        let plugin = DefaultPreemption::try_new(Args {
            min_candidate_nodes_percentage: 0,
            min_candidate_nodes_absolute: 3,
        })
        .expect("valid args");
        let profile = Profile::default_profile();
        let (state, diagnosis) = diagnose(&profile, &pod, &snap);
        let Got::Nominate(node, victims) = got(plugin.post_filter(
            &state,
            &post_filter_input(&pod, &snap, &diagnosis, &profile),
        )) else {
            panic!("a nomination");
        };
        assert_eq!(victims.len(), 1);
        let (offset, _) = plugin.offset_and_num_candidates(&pod, 4);
        assert_eq!(
            node,
            format!("n{}", offset + 1),
            "the first candidate in turn"
        );
    }

    #[test]
    fn unresolvable_nodes_are_never_candidates() {
        check(vec![
            Case {
                name: "untolerated taint: the cheaper victim there is ignored",
                nodes: vec![
                    node("n1", 1000, vec![running("low", 0, 1000, 1)]).taint(
                        "dedicated",
                        "gpu",
                        TaintEffect::NoSchedule,
                    ),
                    node("n2", 1000, vec![running("mid", 5, 1000, 1)]),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["mid"]),
            },
            Case {
                name: "node selector mismatch: the cheaper victim there is ignored",
                nodes: vec![
                    node("n1", 1000, vec![running("low", 0, 1000, 1)]).label(ZONE, "b"),
                    node("n2", 1000, vec![running("mid", 5, 1000, 1)]).label(ZONE, "a"),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).node_selector(ZONE, "a").info(),
                want: nominate("n2", &["mid"]),
            },
            Case {
                name: "only unresolvable nodes",
                nodes: vec![
                    node("n1", 1000, vec![running("low", 0, 1000, 1)]).taint(
                        "dedicated",
                        "gpu",
                        TaintEffect::NoSchedule,
                    ),
                    node("n2", 1000, vec![running("low2", 0, 1000, 1)]).unschedulable(),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: no_help(
                    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
                ),
            },
            Case {
                name: "every node's reason is counted",
                nodes: vec![
                    node("n1", 1000, vec![running("high", 20, 1000, 1)]),
                    node("n2", 1000, vec![running("low", 0, 1000, 1)]).taint(
                        "dedicated",
                        "gpu",
                        TaintEffect::NoSchedule,
                    ),
                    node(
                        "n3",
                        1000,
                        vec![running("high3", 20, 600, 1), running("low3", 0, 400, 1)],
                    ),
                ],
                budgets: vec![],
                pod: preemptor(10, 500).info(),
                want: no_help(
                    "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
                ),
            },
        ]);
    }

    #[test]
    fn node_choice_follows_each_tie_break() {
        let one = |name: &str, p: i32, start: i64| vec![running(name, p, 1000, start)];
        let two = |a: (&str, i32, i64), b: (&str, i32, i64)| {
            vec![running(a.0, a.1, 500, a.2), running(b.0, b.1, 500, b.2)]
        };
        check(vec![
            Case {
                name: "fewest PDB violations beats a lower victim priority",
                nodes: vec![
                    node(
                        "n1",
                        1000,
                        vec![running("guarded", 1, 1000, 1).label("app", "db")],
                    ),
                    node("n2", 1000, one("mid", 5, 1)),
                ],
                budgets: vec![budget("db", 0)],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["mid"]),
            },
            Case {
                name: "a budget with disruptions left is not violated",
                nodes: vec![
                    node(
                        "n1",
                        1000,
                        vec![running("guarded", 1, 1000, 1).label("app", "db")],
                    ),
                    node("n2", 1000, one("mid", 5, 1)),
                ],
                budgets: vec![budget("db", 1)],
                pod: preemptor(10, 1000).info(),
                want: nominate("n1", &["guarded"]),
            },
            Case {
                name: "a budget of another namespace covers nothing here",
                nodes: vec![
                    node(
                        "n1",
                        1000,
                        vec![running("guarded", 1, 1000, 1).label("app", "db")],
                    ),
                    node("n2", 1000, one("mid", 5, 1)),
                ],
                budgets: vec![DisruptionBudget {
                    namespace: "other".into(),
                    ..budget("db", 0)
                }],
                pod: preemptor(10, 1000).info(),
                want: nominate("n1", &["guarded"]),
            },
            Case {
                name: "lowest highest-victim priority beats fewer victims",
                nodes: vec![
                    node("n1", 1000, one("p5", 5, 1)),
                    node("n2", 1000, two(("a", 3, 1), ("b", 3, 2))),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["a", "b"]),
            },
            Case {
                name: "lowest sum of priorities",
                nodes: vec![
                    node("n1", 1000, two(("a", 3, 1), ("b", 3, 1))),
                    node("n2", 1000, two(("c", 3, 1), ("d", 2, 1))),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["c", "d"]),
            },
            Case {
                name: "negative priorities: the offset makes fewer victims sum lower",
                nodes: vec![
                    node("n1", 1000, one("solo", -5, 1)),
                    node("n2", 1000, two(("a", -5, 1), ("b", -5, 1))),
                ],
                budgets: vec![],
                pod: preemptor(0, 1000).info(),
                want: nominate("n1", &["solo"]),
            },
            Case {
                name: "fewest victims when the sums tie",
                nodes: vec![
                    node("n1", 1000, two(("a", 0, 1), ("b", i32::MIN, 1))),
                    node("n2", 1000, one("solo", 0, 1)),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["solo"]),
            },
            Case {
                name: "latest start time",
                nodes: vec![
                    node("n1", 1000, one("older", 1, 100)),
                    node("n2", 1000, one("newer", 1, 200)),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["newer"]),
            },
            Case {
                name: "start time of the highest-priority victims only",
                nodes: vec![
                    node("n1", 1000, two(("a", 2, 100), ("b", 1, 500))),
                    node("n2", 1000, two(("c", 2, 200), ("d", 1, 10))),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["c", "d"]),
            },
            Case {
                name: "a pod not started yet counts as the latest",
                nodes: vec![
                    node("n1", 1000, one("started", 1, 100)),
                    node(
                        "n2",
                        1000,
                        vec![PodBuilder::new("pending").priority(1).cpu_millis(1000)],
                    ),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n2", &["pending"]),
            },
            Case {
                name: "all equal: the first node",
                nodes: vec![
                    node("n1", 1000, one("a", 1, 100)),
                    node("n2", 1000, one("b", 1, 100)),
                ],
                budgets: vec![],
                pod: preemptor(10, 1000).info(),
                want: nominate("n1", &["a"]),
            },
        ]);
    }

    #[test]
    fn disruption_budgets_spare_pods_when_another_will_do() {
        // Without a budget, "protected" (started later) is the less important pod and goes.
        let nodes = || {
            vec![node(
                "n1",
                1000,
                vec![
                    running("protected", 0, 500, 2).label("app", "db"),
                    running("plain", 0, 500, 1),
                ],
            )]
        };
        check(vec![
            Case {
                name: "no budget: the latest started goes",
                nodes: nodes(),
                budgets: vec![],
                pod: preemptor(10, 500).info(),
                want: nominate("n1", &["protected"]),
            },
            Case {
                name: "exhausted budget: the covered pod is reprieved first",
                nodes: nodes(),
                budgets: vec![budget("db", 0)],
                pod: preemptor(10, 500).info(),
                want: nominate("n1", &["plain"]),
            },
            Case {
                name: "a budget without selector covers nothing",
                nodes: nodes(),
                budgets: vec![DisruptionBudget {
                    selector: None,
                    ..budget("db", 0)
                }],
                pod: preemptor(10, 500).info(),
                want: nominate("n1", &["protected"]),
            },
            Case {
                name: "the budget is counted down victim by victim",
                nodes: vec![node(
                    "n1",
                    1000,
                    vec![
                        running("db-1", 0, 300, 1).label("app", "db"),
                        running("db-2", 0, 300, 2).label("app", "db"),
                        running("plain", 0, 300, 3),
                    ],
                )],
                // One disruption allowed: db-1 may go, db-2 would break the budget, so db-2
                // is reprieved first and the next least important pods go.
                budgets: vec![budget("db", 1)],
                pod: preemptor(10, 600).info(),
                want: nominate("n1", &["db-1", "plain"]),
            },
        ]);
    }

    #[test]
    fn inter_pod_anti_affinity_victims() {
        let rack_node =
            |name: &str, pods: Vec<PodBuilder>| node(name, 4000, pods).label(RACK, "r1");
        check(vec![
            Case {
                name: "the preemptor's anti-affinity: the db pod in its rack goes",
                nodes: vec![
                    rack_node(
                        "n1",
                        vec![
                            running("db", 0, 100, 1).label("app", "db"),
                            running("bystander", 0, 100, 1),
                        ],
                    ),
                    rack_node("n2", vec![]),
                ],
                budgets: vec![],
                pod: preemptor(10, 100)
                    .required_pod_anti_affinity(term("db", RACK))
                    .info(),
                want: nominate("n1", &["db"]),
            },
            Case {
                name: "the preemptor's anti-affinity: a more important db pod in the rack blocks",
                nodes: vec![
                    rack_node("n1", vec![running("db-low", 0, 100, 1).label("app", "db")]),
                    rack_node("n2", vec![running("db-high", 20, 100, 1).label("app", "db")]),
                ],
                budgets: vec![],
                pod: preemptor(10, 100)
                    .required_pod_anti_affinity(term("db", RACK))
                    .info(),
                want: no_help(
                    "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 node(s) didn't match pod anti-affinity rules.",
                ),
            },
            Case {
                // Each node's search puts back the pods it removed: the db pod of n1 still
                // counts while n2 is searched, and the other way round.
                name: "the preemptor's anti-affinity: db pods on two nodes of the rack",
                nodes: vec![
                    rack_node("n1", vec![running("db-1", 0, 100, 1).label("app", "db")]),
                    rack_node("n2", vec![running("db-2", 0, 100, 1).label("app", "db")]),
                ],
                budgets: vec![],
                pod: preemptor(10, 100)
                    .required_pod_anti_affinity(term("db", RACK))
                    .info(),
                want: no_help(
                    "preemption: 0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.",
                ),
            },
            Case {
                name: "an existing pod's anti-affinity forbids the preemptor",
                nodes: vec![node(
                    "n1",
                    4000,
                    vec![
                        running("guard", 0, 100, 1).required_pod_anti_affinity(term("web", HOST)),
                        running("bystander", 0, 100, 1),
                    ],
                )],
                budgets: vec![],
                pod: preemptor(10, 100).label("app", "web").info(),
                want: nominate("n1", &["guard"]),
            },
        ]);
    }

    /// Cases whose Diagnosis is written by hand, to reach what the filters alone do not.
    #[test]
    fn candidates_come_from_the_diagnosis() {
        struct Case {
            name: &'static str,
            nodes: Vec<NodeBuilder>,
            node_codes: Vec<(&'static str, Code)>,
            pre_filter: Option<Code>,
            want: Got,
        }
        let cases = vec![
            Case {
                name: "a node that needs no victim is taken at once",
                nodes: vec![
                    node("n1", 1000, vec![running("low-1", 0, 1000, 1)]),
                    node("n2", 4000, vec![running("low-2", 0, 100, 1)]),
                ],
                node_codes: vec![("n1", Code::Unschedulable), ("n2", Code::Unschedulable)],
                pre_filter: None,
                want: nominate("n2", &[]),
            },
            Case {
                name: "a node rejected unresolvably is not searched",
                nodes: vec![node("n1", 1000, vec![running("low", 0, 1000, 1)])],
                node_codes: vec![("n1", Code::UnschedulableAndUnresolvable)],
                pre_filter: None,
                want: no_help(
                    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
                ),
            },
            Case {
                name: "a resolvable PreFilter rejection makes every node a candidate",
                nodes: vec![
                    node("n1", 1000, vec![running("mid", 5, 1000, 1)]),
                    node("n2", 1000, vec![running("low", 0, 1000, 1)]),
                ],
                node_codes: vec![],
                pre_filter: Some(Code::Unschedulable),
                want: nominate("n2", &["low"]),
            },
            Case {
                name: "an unresolvable PreFilter rejection leaves no candidate",
                nodes: vec![node("n1", 1000, vec![running("low", 0, 1000, 1)])],
                node_codes: vec![],
                pre_filter: Some(Code::UnschedulableAndUnresolvable),
                want: no_help(
                    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
                ),
            },
        ];
        let profile = Profile::default_profile();
        let pod = preemptor(10, 1000).info();
        for case in cases {
            let infos: Vec<NodeInfo> = case.nodes.into_iter().map(Info::info).collect();
            let snap = snapshot(&infos);
            let rejection = |code| Rejection {
                plugin: "Fake",
                reasons: crate::framework::Reasons::One("fake reason".into()),
                code,
            };
            let diagnosis = Diagnosis {
                node_rejections: case
                    .node_codes
                    .iter()
                    .map(|(n, code)| (n.to_string(), rejection(*code)))
                    .collect(),
                pre_filter_rejection: case.pre_filter.map(rejection),
                num_all_nodes: snap.len(),
                ..Diagnosis::default()
            };
            let state = CycleState::new();
            let outcome = DefaultPreemption::default().post_filter(
                &state,
                &post_filter_input(&pod, &snap, &diagnosis, &profile),
            );
            assert_eq!(got(outcome), case.want, "{}", case.name);
        }
    }

    #[test]
    fn args_are_validated() {
        check_typed_args(NAME, DefaultPreemption::try_new, vec![
            TypedArgsCase {
                name: "defaults",
                yaml: "",
                want: Ok(Args::default()),
            },
            TypedArgsCase {
                name: "explicit values with apiVersion and kind",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: DefaultPreemptionArgs\nminCandidateNodesPercentage: 0\nminCandidateNodesAbsolute: 5",
                want: Ok(Args {
                    min_candidate_nodes_percentage: 0,
                    min_candidate_nodes_absolute: 5,
                }),
            },
            TypedArgsCase {
                name: "percentage above 100",
                yaml: "minCandidateNodesPercentage: 101",
                want: Err("minCandidateNodesPercentage: 101 is not in the range 0-100"),
            },
            TypedArgsCase {
                name: "negative percentage",
                yaml: "minCandidateNodesPercentage: -1",
                want: Err("minCandidateNodesPercentage: -1 is not in the range 0-100"),
            },
            TypedArgsCase {
                name: "negative absolute",
                yaml: "minCandidateNodesAbsolute: -1",
                want: Err("minCandidateNodesAbsolute: -1 is not in the range 0-inf"),
            },
            TypedArgsCase {
                name: "both zero",
                yaml: "minCandidateNodesPercentage: 0\nminCandidateNodesAbsolute: 0",
                want: Err("cannot be zero at the same time"),
            },
            TypedArgsCase {
                name: "unknown field",
                yaml: "minCandidateNodes: 3",
                want: Err("unknown field `minCandidateNodes`"),
            },
        ]);
    }

    #[test]
    fn default_profile_preempts_with_this_plugin() {
        assert_eq!(
            Profile::default_profile().describe().post_filter,
            Some(NAME)
        );
    }

    /// The whole cycle on a full cluster: nothing fits, and the PostFilter nominates the node
    /// whose victim matters least.
    /// The nomination of node n2 with its pod `low` as the victim.
    fn low_on_n2() -> Option<Nomination> {
        Some(Nomination {
            node: "n2".into(),
            victims: vec![Victim {
                namespace: "default".into(),
                name: "low".into(),
                uid: "default-low".into(),
            }],
        })
    }

    #[test]
    fn schedule_nominates_a_node_on_a_full_cluster() {
        struct Case {
            name: &'static str,
            nodes: Vec<NodeBuilder>,
            pod: PodInfo,
            want_nomination: Option<Nomination>,
            want_message: &'static str,
        }
        let taint = |n: NodeBuilder| n.taint("dedicated", "gpu", TaintEffect::NoSchedule);
        let cases = vec![
            Case {
                name: "the node with the least important victim",
                nodes: vec![
                    node("n1", 1000, vec![running("mid", 5, 600, 10)]),
                    node("n2", 1000, vec![running("low", 0, 600, 10)]),
                    node("n3", 1000, vec![running("high", 100, 600, 10)]),
                ],
                pod: preemptor(50, 600).info(),
                want_nomination: low_on_n2(),
                want_message: "0/3 nodes are available: 3 Insufficient cpu.",
            },
            Case {
                name: "no candidate: kube's preemption message follows the diagnosis",
                nodes: vec![
                    node("n1", 1000, vec![running("high", 100, 600, 10)]),
                    taint(node("n2", 1000, vec![running("low", 0, 600, 10)])),
                    taint(node("n3", 1000, vec![])),
                ],
                pod: preemptor(50, 600).info(),
                want_nomination: None,
                want_message: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
            },
            Case {
                name: "a host port held by a less important pod is freed by evicting it",
                nodes: vec![
                    node("n1", 1000, vec![running("high", 100, 100, 10).host_port(8080, Protocol::Tcp, "")]),
                    node("n2", 1000, vec![running("low", 0, 100, 10).host_port(8080, Protocol::Tcp, "")]),
                ],
                pod: preemptor(50, 100).host_port(8080, Protocol::Tcp, "").info(),
                want_nomination: low_on_n2(),
                want_message: "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.",
            },
        ];
        let profile = Profile::default_profile();
        for case in cases {
            let infos: Vec<NodeInfo> = case.nodes.into_iter().map(Info::info).collect();
            let snap = snapshot(&infos);
            let result =
                Algorithm::new(1).schedule(&profile, &snap, &case.pod, &ScheduleOptions::default());
            let message = result.failure_message();
            match result {
                ScheduleResult::Unschedulable { nomination, .. } => {
                    assert_eq!(nomination, case.want_nomination, "{}", case.name);
                }
                other => panic!("{}: want unschedulable, got {other:?}", case.name),
            }
            assert_eq!(message.as_deref(), Some(case.want_message), "{}", case.name);
        }
    }
}
