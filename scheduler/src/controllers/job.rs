//! The Job controller (kube's `pkg/controller/job`) and the TTL-after-finished controller:
//! runs the pods of each `batch/v1` Job until `completions` of them succeed or the Job
//! fails, and deletes a finished Job once its `ttlSecondsAfterFinished` has passed.
//!
//! As kube's: at most `parallelism` active pods, never more than the completions still
//! missing; a failed pod is replaced after the pod-failure back-off (10s doubling per
//! consecutive failure, at most 6 minutes); more failures than `backoffLimit` (or, with
//! restartPolicy OnFailure, that many container restarts among the running pods) or a run
//! longer than `activeDeadlineSeconds` fails the Job, first with the interim FailureTarget
//! condition while its active pods are deleted, then Failed with the same reason; enough
//! successes set SuccessCriteriaMet then Complete (reason CompletionsReached). A suspended
//! Job has no active pods. Pods carry the `batch.kubernetes.io/job-tracking` finalizer until
//! the controller has counted them; the count and the finalizer removal are one commit.
//!
//! Berth deletes a pod at once (no graceful deletion in the store), so a Job pod that is
//! deleted before it is counted is counted from its deletion: failed unless it had
//! succeeded. Pods the controller deletes to suspend a Job are not counted.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

use berth_proto::model::{
    ensure_job_condition, format_indexes, parse_indexes, CompletionMode, Job, JobCondition, Kind,
    Object, ObjectKey, Pod, PodPhase, RestartPolicy, Time, JOB_COMPLETE, JOB_COMPLETION_INDEX,
    JOB_CONTROLLER_NAME, JOB_FAILED, JOB_FAILURE_TARGET, JOB_SUCCESS_CRITERIA_MET, JOB_SUSPENDED,
    JOB_TRACKING_FINALIZER, REASON_BACKOFF_LIMIT_EXCEEDED, REASON_COMPLETIONS_REACHED,
    REASON_DEADLINE_EXCEEDED,
};
use berth_store::{Op, Precondition};
use tracing::info;

use super::replicaset::pods_to_delete;
use super::{controlled_pods, object_ref, ControllerManager, Error, Work};
use crate::server::admission;
use crate::server::events::{NORMAL, WARNING};
use crate::workloads::job_pod;

/// Most pods created or deleted in one sync of a Job (kube's `MaxPodCreateDeletePerSync`).
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;

/// Back-off before replacing the first of consecutive failed pods (kube's
/// `DefaultJobPodFailureBackOff`); it doubles with each further failure.
pub const POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);

/// Longest pod-failure back-off (kube's `MaxJobPodFailureBackOff`).
pub const MAX_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(360);

/// kube's message for BackoffLimitExceeded.
pub const MESSAGE_BACKOFF_LIMIT: &str = "Job has reached the specified backoff limit";
/// kube's message for DeadlineExceeded.
pub const MESSAGE_DEADLINE: &str = "Job was active longer than specified deadline";
/// kube's message for CompletionsReached.
pub const MESSAGE_COMPLETIONS_REACHED: &str = "Reached expected number of succeeded pods";

/// Consecutive pod failures of a Job since its last success (kube's `backoffRecord`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    /// Failures since the last success.
    pub failures_after_last_success: u32,
    /// When the last of them was counted.
    pub last_failure: Option<SystemTime>,
}

impl BackoffRecord {
    /// The record after `succeeded` new successes and `failed` new failures counted at `now`.
    pub fn after(self, succeeded: usize, failed: usize, now: SystemTime) -> BackoffRecord {
        let mut record = self;
        if succeeded > 0 {
            record = BackoffRecord::default();
        }
        if failed > 0 {
            record.failures_after_last_success = record
                .failures_after_last_success
                .saturating_add(u32::try_from(failed).unwrap_or(u32::MAX));
            record.last_failure = Some(now);
        }
        record
    }

    /// How long pod creation still waits at `now` (kube's `getRemainingTime`): the back-off
    /// `base * 2^(failures-1)`, at most `max`, from the last failure.
    pub fn remaining(&self, now: SystemTime, base: Duration, max: Duration) -> Duration {
        let Some(last) = self.last_failure else {
            return Duration::ZERO;
        };
        if self.failures_after_last_success == 0 {
            return Duration::ZERO;
        }
        let exponent = (self.failures_after_last_success - 1).min(31);
        let backoff = base.saturating_mul(1u32 << exponent.min(20)).min(max);
        let elapsed = now.duration_since(last).unwrap_or(Duration::ZERO);
        backoff.saturating_sub(elapsed)
    }
}

/// What the controller remembers between syncs (kube keeps the same in memory): pods gone
/// before they were counted, pods it deleted that must not count, and back-off records.
#[derive(Debug, Default)]
pub struct JobMemory {
    /// Per Job uid: (pod uid, succeeded) of pods deleted while still uncounted.
    gone: HashMap<String, Vec<(String, bool)>>,
    /// uids of pods deleted to suspend their Job, which do not count as failed.
    not_counted: HashSet<String>,
    /// Per Job uid, its pod-failure back-off.
    backoff: HashMap<String, BackoffRecord>,
}

impl JobMemory {
    /// Notes the deletion of `pod`, controlled by the Job with `job_uid`: counted at the
    /// Job's next sync if it still had the tracking finalizer.
    pub fn pod_deleted(&mut self, job_uid: &str, pod: &Pod) {
        if self.not_counted.remove(&pod.metadata.uid) || !has_tracking_finalizer(pod) {
            return;
        }
        self.gone.entry(job_uid.to_string()).or_default().push((
            pod.metadata.uid.clone(),
            pod.status.phase == PodPhase::Succeeded,
        ));
    }

    /// Forgets a Job that is deleted.
    pub fn job_deleted(&mut self, job_uid: &str) {
        self.gone.remove(job_uid);
        self.backoff.remove(job_uid);
    }
}

/// Whether the pod still carries the job-tracking finalizer (it is not counted yet).
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .any(|f| f == JOB_TRACKING_FINALIZER)
}

/// An Indexed Job pod's completion index, if valid and below `completions`.
pub fn completion_index(pod: &Pod, completions: i32) -> Option<i32> {
    pod.metadata
        .annotations
        .get(JOB_COMPLETION_INDEX)
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|i| (0..completions).contains(i))
}

/// How many pods should be active (kube's `wantActive` in `manageJob`): without
/// completions, `parallelism` until a pod succeeds, then whatever is running; with
/// completions, the completions still missing, at most `parallelism`.
pub fn want_active(completions: Option<i32>, parallelism: i32, succeeded: i32, active: i32) -> i32 {
    match completions {
        None if succeeded > 0 => active,
        None => parallelism,
        Some(c) => (c - succeeded).min(parallelism).max(0),
    }
}

/// Whether the container restarts of the pending and running pods reach backoffLimit, for
/// a Job whose pods restart OnFailure (kube's `pastBackoffLimitOnFailure`; with a limit of
/// 0, any restart).
pub fn past_backoff_limit_on_failure(job: &Job, pods: &[&Pod]) -> bool {
    if job.spec.restart_policy() != RestartPolicy::OnFailure {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(p.status.phase, PodPhase::Running | PodPhase::Pending))
        .flat_map(|p| &p.status.container_statuses)
        .map(|c| i64::from(c.restart_count))
        .sum();
    let limit = i64::from(job.spec.backoff_limit());
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

/// The lowest `count` indexes below `completions` that neither succeeded nor have an
/// active pod (kube's `firstPendingIndexes`).
pub fn first_pending_indexes(
    completions: i32,
    succeeded: &BTreeSet<i32>,
    active: &BTreeSet<i32>,
    count: usize,
) -> Vec<i32> {
    (0..completions)
        .filter(|i| !succeeded.contains(i) && !active.contains(i))
        .take(count)
        .collect()
}

fn job_ref(job: &Job) -> berth_proto::model::ObjectReference {
    object_ref(&Object::Job(Box::new(job.clone())))
}

fn instant_at(target: SystemTime, now: SystemTime) -> Instant {
    Instant::now() + target.duration_since(now).unwrap_or(Duration::ZERO)
}

fn delete_op(pod: &Pod) -> Op {
    Op::Delete {
        key: ObjectKey::new(Kind::Pod, &pod.metadata.namespace, &pod.metadata.name),
        precondition: Precondition::ResourceVersion(pod.metadata.resource_version.clone()),
    }
}

/// Reconciles one Job.
pub fn reconcile(m: &mut ControllerManager, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(Object::Job(job)) = m.live(Kind::Job, namespace, name) else {
        return Ok(());
    };
    if job
        .spec
        .managed_by
        .as_deref()
        .is_some_and(|c| c != JOB_CONTROLLER_NAME)
    {
        return Ok(());
    }
    let now_system = SystemTime::now();
    let now = Time(now_system);
    let uid = job.metadata.uid.clone();
    if let Some(finished) = job.status.finished().cloned() {
        m.jobs.backoff.remove(&uid);
        m.jobs.gone.remove(&uid);
        return expire(m, &job, &finished, now_system);
    }
    let pods: Vec<Pod> = controlled_pods(&m.cache, &uid)
        .into_iter()
        .cloned()
        .collect();
    let mut active: Vec<&Pod> = pods.iter().filter(|p| p.is_active()).collect();
    let uncounted: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.is_terminal() && has_tracking_finalizer(p))
        .collect();
    let gone = m.jobs.gone.get(&uid).cloned().unwrap_or_default();
    let indexed = job.spec.completion_mode() == CompletionMode::Indexed;
    let completions = job.spec.completions();
    let new_succeeded: Vec<&Pod> = uncounted
        .iter()
        .copied()
        .filter(|p| p.status.phase == PodPhase::Succeeded)
        .collect();
    let new_failed = uncounted.len() - new_succeeded.len();
    let gone_succeeded = gone.iter().filter(|(_, s)| *s).count();
    let gone_failed = gone.len() - gone_succeeded;

    let mut status = job.status.clone();
    let as_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let mut succeeded_indexes = BTreeSet::new();
    if indexed {
        let c = completions.unwrap_or(0);
        succeeded_indexes.extend(parse_indexes(&status.completed_indexes, c));
        succeeded_indexes.extend(
            pods.iter()
                .filter(|p| p.status.phase == PodPhase::Succeeded)
                .filter_map(|p| completion_index(p, c)),
        );
        let list: Vec<i32> = succeeded_indexes.iter().copied().collect();
        status.completed_indexes = format_indexes(&list);
        status.succeeded = as_i32(list.len());
    } else {
        status.succeeded += as_i32(new_succeeded.len() + gone_succeeded);
    }
    status.failed += as_i32(new_failed + gone_failed);
    if status.start_time.is_none() && !job.spec.is_suspended() {
        status.start_time = Some(now);
    }
    let record = m.jobs.backoff.get(&uid).copied().unwrap_or_default().after(
        new_succeeded.len() + gone_succeeded,
        new_failed + gone_failed,
        now_system,
    );

    // Why the Job fails or succeeds, if it does (kube's `finishedCondition`).
    let mut finished: Option<JobCondition> = None;
    if let Some(target) = status
        .condition(JOB_FAILURE_TARGET)
        .filter(|c| c.status == "True")
    {
        finished = Some(JobCondition::new(
            JOB_FAILED,
            "True",
            &target.reason,
            &target.message,
            now,
        ));
    } else if status.has_true(JOB_SUCCESS_CRITERIA_MET) {
        finished = Some(success_condition(JOB_COMPLETE, now));
    } else if status.failed > job.spec.backoff_limit()
        || past_backoff_limit_on_failure(&job, &active)
    {
        finished = Some(JobCondition::new(
            JOB_FAILURE_TARGET,
            "True",
            REASON_BACKOFF_LIMIT_EXCEEDED,
            MESSAGE_BACKOFF_LIMIT,
            now,
        ));
    } else if let (Some(deadline), Some(start), false) = (
        job.spec.active_deadline_seconds,
        status.start_time,
        job.spec.is_suspended(),
    ) {
        let end = start.0 + Duration::from_secs(u64::try_from(deadline).unwrap_or(0));
        if now_system >= end {
            finished = Some(JobCondition::new(
                JOB_FAILURE_TARGET,
                "True",
                REASON_DEADLINE_EXCEEDED,
                MESSAGE_DEADLINE,
                now,
            ));
        } else {
            m.queue.add_at(
                Work::Job(namespace.to_string(), name.to_string()),
                instant_at(end, now_system),
            );
        }
    }

    let mut deleted = 0usize;
    let mut ready = active.iter().filter(|p| p.is_ready()).count();
    if finished.as_ref().is_some_and(|c| c.type_ != JOB_COMPLETE) {
        // Failing: every active pod goes, and counts as failed once it is gone.
        if !active.is_empty() {
            let ops = active.iter().map(|p| delete_op(p)).collect();
            m.commit(ops)?;
            record_deleted(m, &job, &active);
            deleted = active.len();
            ready = 0;
            active.clear();
        }
    } else {
        let (now_active, removed, removed_ready) = manage(
            m,
            &job,
            &status,
            &active,
            &succeeded_indexes,
            record,
            now_system,
        )?;
        deleted = removed;
        ready -= removed_ready.min(ready);
        let succeeded = status.succeeded;
        let complete = match completions {
            None => succeeded > 0 && now_active == 0,
            Some(c) => succeeded >= c && now_active == 0,
        };
        if complete {
            finished = Some(success_condition(JOB_SUCCESS_CRITERIA_MET, now));
        } else if job.spec.is_suspended() {
            let c = JobCondition::new(JOB_SUSPENDED, "True", "JobSuspended", "Job suspended", now);
            if ensure_job_condition(&mut status.conditions, c) {
                m.job_events
                    .record(job_ref(&job), NORMAL, "Suspended", "Job suspended".into());
            }
        } else {
            let c = JobCondition::new(JOB_SUSPENDED, "False", "JobResumed", "Job resumed", now);
            if ensure_job_condition(&mut status.conditions, c) {
                m.job_events
                    .record(job_ref(&job), NORMAL, "Resumed", "Job resumed".into());
                status.start_time = Some(now);
            }
        }
        status.active = as_i32(now_active);
    }
    if finished.as_ref().is_some_and(|c| c.type_ != JOB_COMPLETE) {
        status.active = as_i32(active.len());
    }
    status.ready = Some(as_i32(ready));
    status.terminating = Some(as_i32(deleted));

    // The interim condition first; the final one once no pod is left to end.
    let mut final_condition = None;
    if let Some(condition) = finished {
        let final_type = match condition.type_.as_str() {
            JOB_FAILURE_TARGET | JOB_FAILED => JOB_FAILED,
            _ => JOB_COMPLETE,
        };
        if condition.type_ == JOB_FAILURE_TARGET || condition.type_ == JOB_SUCCESS_CRITERIA_MET {
            if status.condition(&condition.type_).is_none() {
                status.conditions.push(condition.clone());
            }
        }
        if deleted == 0 {
            let done = JobCondition::new(
                final_type,
                "True",
                &condition.reason,
                &condition.message,
                now,
            );
            ensure_job_condition(&mut status.conditions, done.clone());
            if final_type == JOB_COMPLETE {
                status.completion_time = done.last_transition_time;
            }
            final_condition = Some(done);
        }
    }

    // Count the finished pods: their finalizers go in the same commit as the counts.
    let mut ops: Vec<Op> = uncounted
        .iter()
        .map(|p| {
            let mut pod = (*p).clone();
            pod.metadata
                .finalizers
                .retain(|f| f != JOB_TRACKING_FINALIZER);
            Op::Update {
                object: Object::Pod(Box::new(pod)),
                precondition: Precondition::ResourceVersion(p.metadata.resource_version.clone()),
            }
        })
        .collect();
    if status != job.status {
        let mut updated = job.clone();
        updated.status = status;
        ops.push(Op::Update {
            object: Object::Job(updated),
            precondition: Precondition::ResourceVersion(job.metadata.resource_version.clone()),
        });
    }
    m.commit(ops)?;
    // Only what this sync counted: pods it deleted itself are counted at the next one.
    if let Some(list) = m.jobs.gone.get_mut(&uid) {
        list.drain(..gone.len().min(list.len()));
    }
    m.jobs.backoff.insert(uid, record);
    if let Some(done) = final_condition {
        info!(job = %name, condition = %done.type_, reason = %done.reason, "job finished");
        if done.type_ == JOB_COMPLETE {
            m.job_events
                .record(job_ref(&job), NORMAL, "Completed", "Job completed".into());
        } else {
            m.job_events
                .record(job_ref(&job), WARNING, &done.reason, done.message.clone());
        }
        // The TTL controller's turn.
        m.queue
            .add(Work::Job(namespace.to_string(), name.to_string()));
    }
    Ok(())
}

fn success_condition(type_: &str, now: Time) -> JobCondition {
    JobCondition::new(
        type_,
        "True",
        REASON_COMPLETIONS_REACHED,
        MESSAGE_COMPLETIONS_REACHED,
        now,
    )
}

fn record_deleted(m: &mut ControllerManager, job: &Job, pods: &[&Pod]) {
    for pod in pods {
        m.job_events.record(
            job_ref(job),
            NORMAL,
            "SuccessfulDelete",
            format!("Deleted pod: {}", pod.metadata.name),
        );
    }
}

/// kube's `manageJob`: deletes what is too many (all while suspended), else creates what
/// is missing once the pod-failure back-off allows. Returns the active count after it, and
/// how many pods (and ready pods) it deleted.
fn manage(
    m: &mut ControllerManager,
    job: &Job,
    status: &berth_proto::model::JobStatus,
    active: &[&Pod],
    succeeded_indexes: &BTreeSet<i32>,
    record: BackoffRecord,
    now: SystemTime,
) -> Result<(usize, usize, usize), Error> {
    let key = Work::Job(job.metadata.namespace.clone(), job.metadata.name.clone());
    let count = active.len();
    let doomed: Vec<&Pod> = if job.spec.is_suspended() {
        active.to_vec()
    } else {
        let want = want_active(
            job.spec.completions(),
            job.spec.parallelism(),
            status.succeeded,
            i32::try_from(count).unwrap_or(i32::MAX),
        );
        let extra = count.saturating_sub(usize::try_from(want).unwrap_or(0));
        let mut doomed = pods_to_delete(active, extra);
        doomed.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
        if doomed.is_empty() {
            let missing = usize::try_from(want).unwrap_or(0).saturating_sub(count);
            if missing == 0 {
                return Ok((count, 0, 0));
            }
            let wait = record.remaining(now, POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF);
            if !wait.is_zero() {
                m.queue.add_at(key, Instant::now() + wait);
                return Ok((count, 0, 0));
            }
            let created = create_pods(
                m,
                job,
                active,
                succeeded_indexes,
                missing.min(MAX_POD_CREATE_DELETE_PER_SYNC),
            )?;
            return Ok((count + created, 0, 0));
        }
        doomed
    };
    if doomed.is_empty() {
        return Ok((count, 0, 0));
    }
    if job.spec.is_suspended() {
        m.jobs
            .not_counted
            .extend(doomed.iter().map(|p| p.metadata.uid.clone()));
    }
    let ready = doomed.iter().filter(|p| p.is_ready()).count();
    m.commit(doomed.iter().map(|p| delete_op(p)).collect())?;
    record_deleted(m, job, &doomed);
    Ok((count - doomed.len(), doomed.len(), ready))
}

/// Creates `count` pods of the Job (for an Indexed Job, of its lowest pending indexes),
/// admitted as a user's pods are. Returns how many it created.
fn create_pods(
    m: &mut ControllerManager,
    job: &Job,
    active: &[&Pod],
    succeeded_indexes: &BTreeSet<i32>,
    count: usize,
) -> Result<usize, Error> {
    let indexes: Vec<Option<i32>> = if job.spec.completion_mode() == CompletionMode::Indexed {
        let completions = job.spec.completions().unwrap_or(0);
        let running: BTreeSet<i32> = active
            .iter()
            .filter_map(|p| completion_index(p, completions))
            .collect();
        first_pending_indexes(completions, succeeded_indexes, &running, count)
            .into_iter()
            .map(Some)
            .collect()
    } else {
        vec![None; count]
    };
    let owner = ObjectKey::new(Kind::Job, &job.metadata.namespace, &job.metadata.name);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut ops = Vec::with_capacity(indexes.len());
        let mut names = Vec::with_capacity(indexes.len());
        for index in &indexes {
            let pod = job_pod(job, *index, &mut m.rng);
            names.push(pod.metadata.name.clone());
            match admission::admit(m.store(), Object::Pod(Box::new(pod)), &m.admission) {
                Ok(obj) => ops.push(Op::Create(obj)),
                Err(source) => {
                    m.job_events.record(
                        job_ref(job),
                        WARNING,
                        "FailedCreate",
                        format!("Error creating: {source}"),
                    );
                    return Err(Error::Admission { owner, source });
                }
            }
        }
        match m.commit(ops) {
            Err(Error::Store(berth_store::Error::AlreadyExists { .. })) if attempts < 3 => {}
            Err(e) => return Err(e),
            Ok(()) => {
                info!(job = %job.metadata.name, pods = ?names, "created job pods");
                for name in &names {
                    m.job_events.record(
                        job_ref(job),
                        NORMAL,
                        "SuccessfulCreate",
                        format!("Created pod: {name}"),
                    );
                }
                return Ok(names.len());
            }
        }
    }
}

/// The TTL-after-finished controller: deletes a finished Job (its pods follow through the
/// garbage collector) once `ttlSecondsAfterFinished` has passed since it finished, and
/// comes back then otherwise.
fn expire(
    m: &mut ControllerManager,
    job: &Job,
    finished: &JobCondition,
    now: SystemTime,
) -> Result<(), Error> {
    let (Some(ttl), Some(at)) = (
        job.spec.ttl_seconds_after_finished,
        finished.last_transition_time,
    ) else {
        return Ok(());
    };
    let expiry = at.0 + Duration::from_secs(u64::try_from(ttl).unwrap_or(0));
    if now < expiry {
        m.queue.add_at(
            Work::Job(job.metadata.namespace.clone(), job.metadata.name.clone()),
            instant_at(expiry, now),
        );
        return Ok(());
    }
    info!(job = %job.metadata.name, ttl, "deleting a finished job whose TTL expired");
    m.commit(vec![Op::Delete {
        key: ObjectKey::new(Kind::Job, &job.metadata.namespace, &job.metadata.name),
        precondition: Precondition::ResourceVersion(job.metadata.resource_version.clone()),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::PodBuilder;
    use berth_proto::model::ContainerStatus;

    #[test]
    fn active_pods_wanted_as_kube_counts_them() {
        // (case, completions, parallelism, succeeded, active, want)
        let cases: [(&str, Option<i32>, i32, i32, i32, i32); 7] = [
            ("fresh job", Some(10), 2, 0, 0, 2),
            ("near the end", Some(10), 2, 9, 1, 1),
            ("done", Some(10), 2, 10, 0, 0),
            ("over-succeeded", Some(3), 2, 5, 0, 0),
            ("parallelism 0 pauses", Some(5), 0, 0, 0, 0),
            ("work queue, none succeeded", None, 3, 0, 1, 3),
            ("work queue, one succeeded", None, 3, 1, 2, 2),
        ];
        for (name, completions, parallelism, succeeded, active, want) in cases {
            assert_eq!(
                want_active(completions, parallelism, succeeded, active),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn failure_backoff_doubles_and_resets_on_success() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let s = Duration::from_secs;
        let base = BackoffRecord::default();
        // (case, record, seconds after t0, want remaining seconds)
        let cases = [
            ("no failure", base, 0, 0),
            ("one failure, at once", base.after(0, 1, t0), 0, 10),
            ("one failure, 4s later", base.after(0, 1, t0), 4, 6),
            ("two failures", base.after(0, 2, t0), 0, 20),
            (
                "three failures",
                base.after(0, 1, t0).after(0, 2, t0),
                5,
                35,
            ),
            ("capped at 6 minutes", base.after(0, 12, t0), 0, 360),
            ("waited out", base.after(0, 1, t0), 30, 0),
            ("success resets", base.after(0, 3, t0).after(1, 0, t0), 0, 0),
        ];
        for (name, record, after, want) in cases {
            assert_eq!(
                record.remaining(t0 + s(after), POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF),
                s(want),
                "{name}"
            );
        }
    }

    #[test]
    fn container_restarts_count_against_the_limit_with_on_failure() {
        let restarted = |n: i32, phase: PodPhase| {
            let mut pod = PodBuilder::new("p").phase(phase).build();
            pod.status.container_statuses = vec![ContainerStatus {
                name: "c".into(),
                restart_count: n,
                ..Default::default()
            }];
            pod
        };
        let job = |policy: RestartPolicy, limit: i32| {
            let mut job = Job::default();
            job.spec.template.spec.restart_policy = Some(policy);
            job.spec.backoff_limit = Some(limit);
            job
        };
        use PodPhase::{Failed, Running};
        // (case, job, pods, want)
        let cases = [
            (
                "under",
                job(RestartPolicy::OnFailure, 3),
                vec![restarted(2, Running)],
                false,
            ),
            (
                "reached",
                job(RestartPolicy::OnFailure, 3),
                vec![restarted(3, Running)],
                true,
            ),
            (
                "summed over pods",
                job(RestartPolicy::OnFailure, 3),
                vec![restarted(1, Running), restarted(2, Running)],
                true,
            ),
            (
                "finished pods do not count",
                job(RestartPolicy::OnFailure, 1),
                vec![restarted(5, Failed)],
                false,
            ),
            (
                "limit 0, one restart",
                job(RestartPolicy::OnFailure, 0),
                vec![restarted(1, Running)],
                true,
            ),
            (
                "limit 0, none",
                job(RestartPolicy::OnFailure, 0),
                vec![restarted(0, Running)],
                false,
            ),
            (
                "Never ignores restarts",
                job(RestartPolicy::Never, 1),
                vec![restarted(9, Running)],
                false,
            ),
        ];
        for (name, job, pods, want) in cases {
            let refs: Vec<&Pod> = pods.iter().collect();
            assert_eq!(past_backoff_limit_on_failure(&job, &refs), want, "{name}");
        }
    }

    #[test]
    fn pending_indexes_skip_succeeded_and_running_ones() {
        let set = |v: &[i32]| v.iter().copied().collect::<BTreeSet<i32>>();
        assert_eq!(
            first_pending_indexes(5, &set(&[0, 2]), &set(&[1]), 2),
            vec![3, 4]
        );
        assert_eq!(
            first_pending_indexes(3, &set(&[]), &set(&[]), 5),
            vec![0, 1, 2]
        );
        assert!(first_pending_indexes(2, &set(&[0, 1]), &set(&[]), 1).is_empty());
    }

    #[test]
    fn deleted_pods_are_counted_once_unless_deleted_for_suspension() {
        let mut memory = JobMemory::default();
        let pod = |uid: &str, phase: PodPhase, tracked: bool| {
            let mut p = PodBuilder::new(uid).phase(phase).build();
            p.metadata.uid = uid.into();
            if tracked {
                p.metadata.finalizers = vec![JOB_TRACKING_FINALIZER.into()];
            }
            p
        };
        memory.not_counted.insert("suspended".into());
        memory.pod_deleted("j", &pod("running", PodPhase::Running, true));
        memory.pod_deleted("j", &pod("done", PodPhase::Succeeded, true));
        memory.pod_deleted("j", &pod("counted", PodPhase::Failed, false));
        memory.pod_deleted("j", &pod("suspended", PodPhase::Running, true));
        assert_eq!(
            memory.gone["j"],
            vec![("running".to_string(), false), ("done".to_string(), true)]
        );
        assert!(memory.not_counted.is_empty());
    }
}
