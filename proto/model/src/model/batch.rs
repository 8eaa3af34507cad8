//! Batch workloads (`batch/v1` Job): pods that run to completion, with kube's defaults,
//! label and annotation names, and the status the job controller keeps.

use serde::{Deserialize, Serialize};

use super::{Ignored, LabelSelector, ObjectMeta, PodTemplateSpec, RestartPolicy, Time};

/// backoffLimit of a Job that leaves it out (kube's default).
pub const DEFAULT_BACKOFF_LIMIT: i32 = 6;

/// Label naming the Job on its pods (and its generated selector's template).
pub const LABEL_JOB_NAME: &str = "batch.kubernetes.io/job-name";
/// Label with the Job's uid on its pods; the generated selector matches it.
pub const LABEL_CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
/// The pre-1.27 form of [`LABEL_JOB_NAME`], still set by kube.
pub const LABEL_LEGACY_JOB_NAME: &str = "job-name";
/// The pre-1.27 form of [`LABEL_CONTROLLER_UID`], still set by kube.
pub const LABEL_LEGACY_CONTROLLER_UID: &str = "controller-uid";
/// Annotation (and, as kube's PodIndexLabel does, label) with an Indexed Job pod's index.
pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// Environment variable with an Indexed Job pod's index, in every container.
pub const ENV_JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";
/// Finalizer kube's job controller puts on its pods until it has counted them.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Job condition: the Job finished with all its completions.
pub const JOB_COMPLETE: &str = "Complete";
/// Job condition: the Job failed.
pub const JOB_FAILED: &str = "Failed";
/// Job condition: the Job is suspended (True) or was resumed (False).
pub const JOB_SUSPENDED: &str = "Suspended";
/// Interim condition set when a Job has failed, before its pods are gone (kube ≥ 1.31).
pub const JOB_FAILURE_TARGET: &str = "FailureTarget";
/// Interim condition set when a Job has succeeded, before its pods are gone (kube ≥ 1.31).
pub const JOB_SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";

/// Failure reason: more pods failed than backoffLimit allows.
pub const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
/// Failure reason: the Job ran longer than activeDeadlineSeconds.
pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
/// Success reason: as many pods succeeded as completions asks.
pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";

/// How a Job counts its completions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CompletionMode {
    /// Any `completions` successful pods complete the Job (the default).
    #[default]
    NonIndexed,
    /// Each index from 0 to completions-1 needs one successful pod.
    Indexed,
}

impl CompletionMode {
    /// The mode's name as in manifests.
    pub fn as_str(&self) -> &'static str {
        match self {
            CompletionMode::NonIndexed => "NonIndexed",
            CompletionMode::Indexed => "Indexed",
        }
    }
}

/// When a Job replaces a pod that is going away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PodReplacementPolicy {
    /// As soon as it is terminating or failed (the default).
    #[default]
    TerminatingOrFailed,
    /// Only once it has failed.
    Failed,
}

/// A job (`batch/v1` Job), namespaced: runs pods of its template until `completions` of
/// them have succeeded, or until it fails (backoffLimit, activeDeadlineSeconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Job {
    /// `batch/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Job`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// Desired state.
    pub spec: JobSpec,
    /// Observed state, kept by the job controller.
    pub status: JobStatus,
}

impl Job {
    /// Whether the selector is the user's (`manualSelector: true`) rather than generated.
    pub fn has_manual_selector(&self) -> bool {
        self.spec.manual_selector == Some(true)
    }

    /// The labels kube's API server gives the pods of a Job whose selector it generates:
    /// the job name and the controller uid, each under its current and its legacy key.
    pub fn generated_labels(&self) -> super::StringMap {
        let (name, uid) = (&self.metadata.name, &self.metadata.uid);
        super::string_map(&[
            (LABEL_CONTROLLER_UID, uid),
            (LABEL_JOB_NAME, name),
            (LABEL_LEGACY_CONTROLLER_UID, uid),
            (LABEL_LEGACY_JOB_NAME, name),
        ])
    }

    /// Generates the selector as kube's API server does on create (`generateSelector`),
    /// unless `manualSelector` is true: the template gets the [`Job::generated_labels`]
    /// it does not already have, and the selector matches
    /// `batch.kubernetes.io/controller-uid: <uid>`. Needs the uid assigned.
    pub fn generate_selector(&mut self) {
        if self.has_manual_selector() {
            return;
        }
        let generated = self.generated_labels();
        let labels = &mut self.spec.template.metadata.labels;
        for (key, value) in generated {
            labels.entry(key).or_insert(value);
        }
        let selector = self
            .spec
            .selector
            .get_or_insert_with(LabelSelector::default);
        selector
            .match_labels
            .entry(LABEL_CONTROLLER_UID.to_string())
            .or_insert_with(|| self.metadata.uid.clone());
    }
}

/// `spec` of a [`Job`]. Optional fields are as written; [`JobSpec::set_defaults`] fills in
/// kube's defaults, and the accessors read them with the defaults applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSpec {
    /// Most pods running at once; 1 when left out; 0 pauses the Job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Successful pods needed; with completions and parallelism both left out, 1. Left out
    /// alone, the Job is done when any pod succeeds and the others have ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<i32>,
    /// NonIndexed (default) or Indexed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_mode: Option<CompletionMode>,
    /// Failed pods (or, with restartPolicy OnFailure, container restarts) tolerated
    /// before the Job fails; 6 when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// Seconds from the Job's start after which it fails (DeadlineExceeded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Seconds after the Job finishes when it is deleted, with its pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    /// While true, no pod runs (active ones are deleted); false when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// The pods the Job owns. Generated (`batch.kubernetes.io/controller-uid: <uid>`)
    /// unless `manualSelector` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Whether `selector` is the user's rather than generated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manual_selector: Option<bool>,
    /// The pods to create; restartPolicy must be Never or OnFailure.
    pub template: PodTemplateSpec,
    /// When a going pod is replaced; TerminatingOrFailed when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_replacement_policy: Option<PodReplacementPolicy>,
    /// The controller that manages the Job; Berth's job controller leaves alone a Job
    /// that names another one than `kubernetes.io/job-controller`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// Refused by validation (not supported by Berth).
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub pod_failure_policy: Ignored,
    /// Refused by validation (not supported by Berth).
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub success_policy: Ignored,
    /// Refused by validation (not supported by Berth).
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub backoff_limit_per_index: Ignored,
    /// Refused by validation (not supported by Berth).
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub max_failed_indexes: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub failed_pods_limit: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub scheduling: Ignored,
}

/// The `managedBy` value of Jobs that kube's (and Berth's) job controller manages.
pub const JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";

impl JobSpec {
    /// Fills in kube's defaults (`SetDefaults_Job`): completions and parallelism both 1
    /// when both are left out, parallelism 1, backoffLimit 6, completionMode NonIndexed,
    /// suspend false, podReplacementPolicy TerminatingOrFailed.
    pub fn set_defaults(&mut self) {
        if self.completions.is_none() && self.parallelism.is_none() {
            self.completions = Some(1);
        }
        self.parallelism.get_or_insert(1);
        self.backoff_limit.get_or_insert(DEFAULT_BACKOFF_LIMIT);
        self.completion_mode
            .get_or_insert(CompletionMode::NonIndexed);
        self.suspend.get_or_insert(false);
        self.pod_replacement_policy
            .get_or_insert(PodReplacementPolicy::TerminatingOrFailed);
    }

    /// Parallelism, defaulted.
    pub fn parallelism(&self) -> i32 {
        self.parallelism.unwrap_or(1)
    }

    /// Completions, defaulted: `None` means "until any pod succeeds".
    pub fn completions(&self) -> Option<i32> {
        match (self.completions, self.parallelism) {
            (None, None) => Some(1),
            (c, _) => c,
        }
    }

    /// backoffLimit, defaulted.
    pub fn backoff_limit(&self) -> i32 {
        self.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT)
    }

    /// Completion mode, defaulted.
    pub fn completion_mode(&self) -> CompletionMode {
        self.completion_mode.unwrap_or_default()
    }

    /// Whether the Job is suspended.
    pub fn is_suspended(&self) -> bool {
        self.suspend == Some(true)
    }

    /// The template's restart policy (Always when left out, which validation refuses).
    pub fn restart_policy(&self) -> RestartPolicy {
        self.template.spec.restart_policy.unwrap_or_default()
    }
}

/// `status` of a [`Job`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct JobStatus {
    /// Conditions: SuccessCriteriaMet then Complete, or FailureTarget then Failed;
    /// Suspended.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<JobCondition>,
    /// When the controller first started (or last resumed) the Job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the Job completed (only set on success).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Pods pending or running, not terminating.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub active: i32,
    /// Pods that succeeded (for Indexed Jobs, distinct indexes).
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub succeeded: i32,
    /// Pods that failed.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub failed: i32,
    /// Active pods that are ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<i32>,
    /// Pods being deleted that have not ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminating: Option<i32>,
    /// Indexed Jobs: the indexes that succeeded, as ranges (`1,3-5,7`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub completed_indexes: String,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub failed_indexes: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub uncounted_terminated_pods: Ignored,
}

impl JobStatus {
    /// The condition of this type, if any.
    pub fn condition(&self, type_: &str) -> Option<&JobCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Whether a condition of this type is True.
    pub fn has_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(|c| c.status == "True")
    }

    /// The condition that finished the Job (Complete or Failed, True), if it has finished
    /// (kube's `IsJobFinished`).
    pub fn finished(&self) -> Option<&JobCondition> {
        self.conditions
            .iter()
            .find(|c| (c.type_ == JOB_COMPLETE || c.type_ == JOB_FAILED) && c.status == "True")
    }
}

/// A condition of a [`Job`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct JobCondition {
    /// Complete, Failed, Suspended, FailureTarget or SuccessCriteriaMet.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When the condition was last checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// When the status last changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason (`BackoffLimitExceeded`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl JobCondition {
    /// A condition of `type_` with `status`, `reason` and `message`, probed and changed
    /// at `now` (kube's `newCondition`).
    pub fn new(type_: &str, status: &str, reason: &str, message: &str, now: Time) -> Self {
        JobCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            last_probe_time: Some(now),
            last_transition_time: Some(now),
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }
}

/// Sets a condition as kube's `ensureJobConditionStatus` does: an existing one of the type
/// is replaced (with new times) when its status, reason or message differs; a missing one
/// is appended unless its status is False. Returns whether the list changed.
pub fn ensure_job_condition(conditions: &mut Vec<JobCondition>, new: JobCondition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(old) => {
            if (&old.status, &old.reason, &old.message) != (&new.status, &new.reason, &new.message)
            {
                *old = new;
                true
            } else {
                false
            }
        }
        None if new.status != "False" => {
            conditions.push(new);
            true
        }
        None => false,
    }
}

/// Renders sorted, distinct indexes as kube's `completedIndexes` (`0-2,5,7-8`).
pub fn format_indexes(indexes: &[i32]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < indexes.len() {
        let start = indexes[i];
        let mut end = start;
        while i + 1 < indexes.len() && indexes[i + 1] == end + 1 {
            i += 1;
            end = indexes[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// Reads kube's `completedIndexes` form back into sorted indexes below `completions`;
/// malformed parts are skipped, as kube's `parseIndexesFromString` does.
pub fn parse_indexes(text: &str, completions: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (start, end) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<i32>(), b.parse::<i32>()),
            None => (part.parse::<i32>(), part.parse::<i32>()),
        };
        if let (Ok(start), Ok(end)) = (start, end) {
            out.extend((start.max(0)..=end.min(completions - 1)).filter(|i| *i >= 0));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_kube() {
        // (case, spec JSON, want completions, parallelism)
        let cases: [(&str, &str, Option<i32>, i32); 4] = [
            ("both left out", "{}", Some(1), 1),
            ("parallelism only", r#"{"parallelism":3}"#, None, 3),
            ("completions only", r#"{"completions":5}"#, Some(5), 1),
            ("both", r#"{"completions":10,"parallelism":2}"#, Some(10), 2),
        ];
        for (name, json, completions, parallelism) in cases {
            let spec: JobSpec = serde_json::from_str(json).expect(name);
            assert_eq!(spec.completions(), completions, "{name}: accessor");
            assert_eq!(spec.parallelism(), parallelism, "{name}: accessor");
            let mut defaulted = spec.clone();
            defaulted.set_defaults();
            assert_eq!(defaulted.completions, completions, "{name}: defaulted");
            assert_eq!(defaulted.parallelism, Some(parallelism), "{name}");
            assert_eq!(defaulted.backoff_limit, Some(6), "{name}");
            assert_eq!(defaulted.completion_mode, Some(CompletionMode::NonIndexed));
            assert_eq!(defaulted.suspend, Some(false), "{name}");
        }
    }

    #[test]
    fn indexes_round_trip_in_kube_form() {
        let cases: [(&[i32], &str); 4] = [
            (&[], ""),
            (&[0], "0"),
            (&[0, 1, 2, 5, 7, 8], "0-2,5,7-8"),
            (&[3, 5], "3,5"),
        ];
        for (indexes, text) in cases {
            assert_eq!(format_indexes(indexes), text);
            assert_eq!(parse_indexes(text, 10), indexes, "{text}");
        }
        assert_eq!(
            parse_indexes("1-3,x,9", 3),
            vec![1, 2],
            "clipped, bad part skipped"
        );
    }

    #[test]
    fn conditions_are_ensured_as_kube_does() {
        let t = Time::from_unix_nanos(1);
        let mut list = Vec::new();
        assert!(!ensure_job_condition(
            &mut list,
            JobCondition::new(JOB_SUSPENDED, "False", "JobResumed", "", t)
        ));
        assert!(list.is_empty(), "a False condition is not added");
        assert!(ensure_job_condition(
            &mut list,
            JobCondition::new(JOB_SUSPENDED, "True", "JobSuspended", "Job suspended", t)
        ));
        assert!(!ensure_job_condition(
            &mut list,
            JobCondition::new(JOB_SUSPENDED, "True", "JobSuspended", "Job suspended", t)
        ));
        assert!(ensure_job_condition(
            &mut list,
            JobCondition::new(JOB_SUSPENDED, "False", "JobResumed", "Job resumed", t)
        ));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].status, "False");
    }
}
