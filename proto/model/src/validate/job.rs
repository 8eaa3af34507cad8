//! Validation of `batch/v1` Jobs, with kube's rules and messages (`ValidateJob`): counts
//! that may not be negative, Indexed limits, the selector (generated or manual) matching the
//! template, and a template whose restartPolicy is Never or OnFailure. The Job features
//! Berth does not implement are refused by name rather than silently ignored.

use super::{
    restart_policy_str, validate_dns1123_label, validate_label_selector, validate_non_negative,
    validate_object_meta, validate_pod_template, FieldError, ValidationErrors,
};
use crate::model::{
    CompletionMode, Job, RestartPolicy, LABEL_CONTROLLER_UID, LABEL_JOB_NAME,
    LABEL_LEGACY_CONTROLLER_UID, LABEL_LEGACY_JOB_NAME,
};

/// Largest `completions` and `parallelism` of an Indexed Job (kube's
/// `completionsHardLimit` and `parallelismLimitForHighCompletions` without the
/// backoffLimitPerIndex case).
pub const MAX_INDEXED_COMPLETIONS: i32 = 100_000;

/// Checks a Job: metadata (namespaced); parallelism, completions, backoffLimit,
/// activeDeadlineSeconds and ttlSecondsAfterFinished at least 0; an Indexed Job with
/// completions (at most 100000) whose last pod hostname `<name>-<completions-1>` is a DNS
/// label; the selector (see below); the template (labels, annotations, pod spec at
/// `spec.template.spec`) with restartPolicy Never or OnFailure; and none of the fields
/// Berth does not implement (podFailurePolicy, successPolicy, backoffLimitPerIndex,
/// maxFailedIndexes).
///
/// With `manualSelector: true` the selector is required and must match the template's
/// labels. Otherwise the server generates it on create ([`Job::generate_selector`]): a
/// selector given anyway must match the generated labels (kube: "`selector` not
/// auto-generated"), and so must the template's own job-name and controller-uid labels.
pub fn validate_job(job: &Job) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&job.metadata, true);
    let spec = &job.spec;
    for (value, path) in [
        (spec.parallelism.map(i64::from), "spec.parallelism"),
        (spec.completions.map(i64::from), "spec.completions"),
        (spec.backoff_limit.map(i64::from), "spec.backoffLimit"),
        (spec.active_deadline_seconds, "spec.activeDeadlineSeconds"),
        (
            spec.ttl_seconds_after_finished.map(i64::from),
            "spec.ttlSecondsAfterFinished",
        ),
    ] {
        if let Some(value) = value {
            errs.extend(validate_non_negative(value, path));
        }
    }
    if spec.completion_mode() == CompletionMode::Indexed {
        match spec.completions {
            None => errs.push(FieldError::required(
                "spec.completions",
                "when completion mode is Indexed",
            )),
            Some(c) if c > MAX_INDEXED_COMPLETIONS => errs.push(FieldError::invalid(
                "spec.completions",
                c,
                &format!(
                    "must be less than or equal to {MAX_INDEXED_COMPLETIONS} when completion mode is Indexed"
                ),
            )),
            Some(c) if c > 0 && !job.metadata.name.is_empty() => {
                let hostname = format!("{}-{}", job.metadata.name, c - 1);
                if validate_dns1123_label(&hostname).is_err() {
                    errs.push(FieldError::invalid(
                        "metadata.name",
                        &job.metadata.name,
                        &format!("will not able to create pod with invalid DNS label: {hostname}"),
                    ));
                }
            }
            Some(_) => {}
        }
        if spec.parallelism() > MAX_INDEXED_COMPLETIONS {
            errs.push(FieldError::invalid(
                "spec.parallelism",
                spec.parallelism(),
                &format!(
                    "must be less than or equal to {MAX_INDEXED_COMPLETIONS} when completion mode is Indexed"
                ),
            ));
        }
    }
    for (present, path) in [
        (spec.pod_failure_policy.is_some(), "spec.podFailurePolicy"),
        (spec.success_policy.is_some(), "spec.successPolicy"),
        (
            spec.backoff_limit_per_index.is_some(),
            "spec.backoffLimitPerIndex",
        ),
        (spec.max_failed_indexes.is_some(), "spec.maxFailedIndexes"),
    ] {
        if present {
            errs.push(FieldError::forbidden(
                path,
                "not supported by Berth's job controller",
            ));
        }
    }
    errs.extend(validate_selector(job));
    errs.extend(validate_pod_template(&spec.template));
    let policy = spec.restart_policy();
    if policy == RestartPolicy::Always {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            restart_policy_str(policy),
            &["OnFailure", "Never"],
        ));
    }
    ValidationErrors::check(errs)
}

/// The selector rules of [`validate_job`].
fn validate_selector(job: &Job) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let template_labels = &job.spec.template.metadata.labels;
    if job.has_manual_selector() {
        match &job.spec.selector {
            None => errs.push(FieldError::required("spec.selector", "")),
            Some(selector) => {
                let selector_errs = validate_label_selector(selector, "spec.selector");
                if selector_errs.is_empty() && !selector.matches(template_labels) {
                    errs.push(FieldError::invalid(
                        "spec.template.metadata.labels",
                        template_labels,
                        "`selector` does not match template `labels`",
                    ));
                }
                errs.extend(selector_errs);
            }
        }
        return errs;
    }
    // Before the server has assigned the uid, the generated controller-uid value is not
    // known yet: take the one the object already names, if any.
    let mut job = job.clone();
    if job.metadata.uid.is_empty() {
        job.metadata.uid = [LABEL_CONTROLLER_UID, LABEL_LEGACY_CONTROLLER_UID]
            .iter()
            .find_map(|k| {
                job.spec
                    .selector
                    .as_ref()
                    .and_then(|s| s.match_labels.get(*k))
                    .or_else(|| template_labels.get(*k))
                    .cloned()
            })
            .unwrap_or_default();
    }
    let expected = job.generated_labels();
    for key in [
        LABEL_JOB_NAME,
        LABEL_LEGACY_JOB_NAME,
        LABEL_CONTROLLER_UID,
        LABEL_LEGACY_CONTROLLER_UID,
    ] {
        if let Some(value) = template_labels.get(key) {
            if Some(value) != expected.get(key) {
                errs.push(FieldError::invalid(
                    format!("spec.template.metadata.labels[{key:?}]"),
                    value,
                    &format!("must be {:?}", expected[key]),
                ));
            }
        }
    }
    if let Some(selector) = &job.spec.selector {
        let selector_errs = validate_label_selector(selector, "spec.selector");
        if selector_errs.is_empty() && !selector.matches(&expected) {
            errs.push(FieldError::invalid(
                "spec.selector",
                selector,
                "`selector` not auto-generated",
            ));
        }
        errs.extend(selector_errs);
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LabelSelector, ObjectMeta, PodSpec};
    use crate::testing::container;

    fn job(edit: impl FnOnce(&mut Job)) -> Job {
        let mut job = Job {
            metadata: ObjectMeta {
                name: "pi".into(),
                namespace: "default".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        job.spec.template.spec = PodSpec {
            containers: vec![container("c", &[])],
            restart_policy: Some(RestartPolicy::Never),
            ..Default::default()
        };
        edit(&mut job);
        job
    }

    #[test]
    fn jobs_are_checked_as_kube_checks_them() {
        fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
            LabelSelector {
                match_labels: crate::model::string_map(pairs),
                ..Default::default()
            }
        }
        // (case, edit, want the error messages; empty for valid)
        type Edit = Box<dyn FnOnce(&mut Job)>;
        let cases: Vec<(&str, Edit, &[&str])> = vec![
            ("minimal", Box::new(|_| {}), &[]),
            (
                "OnFailure",
                Box::new(|j| j.spec.template.spec.restart_policy = Some(RestartPolicy::OnFailure)),
                &[],
            ),
            (
                "restartPolicy left out (Always)",
                Box::new(|j| j.spec.template.spec.restart_policy = None),
                &[r#"spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never""#],
            ),
            (
                "negative counts",
                Box::new(|j| {
                    j.spec.parallelism = Some(-1);
                    j.spec.completions = Some(-2);
                    j.spec.backoff_limit = Some(-3);
                    j.spec.active_deadline_seconds = Some(-4);
                    j.spec.ttl_seconds_after_finished = Some(-5);
                }),
                &[
                    "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                    "spec.completions: Invalid value: -2: must be greater than or equal to 0",
                    "spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
                    "spec.activeDeadlineSeconds: Invalid value: -4: must be greater than or equal to 0",
                    "spec.ttlSecondsAfterFinished: Invalid value: -5: must be greater than or equal to 0",
                ],
            ),
            (
                "Indexed without completions",
                Box::new(|j| {
                    j.spec.completion_mode = Some(CompletionMode::Indexed);
                    j.spec.parallelism = Some(2);
                }),
                &["spec.completions: Required value: when completion mode is Indexed"],
            ),
            (
                "Indexed over the limit",
                Box::new(|j| {
                    j.spec.completion_mode = Some(CompletionMode::Indexed);
                    j.spec.completions = Some(100_001);
                }),
                &["spec.completions: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed"],
            ),
            (
                "podFailurePolicy refused",
                Box::new(|j| j.spec.pod_failure_policy = Some(crate::model::IgnoredValue)),
                &["spec.podFailurePolicy: Forbidden: not supported by Berth's job controller"],
            ),
            (
                "manual selector matching",
                Box::new(|j| {
                    j.spec.manual_selector = Some(true);
                    j.spec.selector = Some(selector(&[("app", "pi")]));
                    j.spec.template.metadata.labels = crate::model::string_map(&[("app", "pi")]);
                }),
                &[],
            ),
            (
                "manual selector missing",
                Box::new(|j| j.spec.manual_selector = Some(true)),
                &["spec.selector: Required value"],
            ),
            (
                "manual selector not matching",
                Box::new(|j| {
                    j.spec.manual_selector = Some(true);
                    j.spec.selector = Some(selector(&[("app", "pi")]));
                }),
                &["spec.template.metadata.labels: Invalid value: {}: `selector` does not match template `labels`"],
            ),
            (
                "selector without manualSelector",
                Box::new(|j| j.spec.selector = Some(selector(&[("app", "pi")]))),
                &[r#"spec.selector: Invalid value: LabelSelector { match_labels: {"app": "pi"}, match_expressions: [] }: `selector` not auto-generated"#],
            ),
            (
                "generated selector (as stored)",
                Box::new(|j| {
                    j.metadata.uid = "u1".into();
                    j.generate_selector();
                }),
                &[],
            ),
            (
                "wrong job-name label",
                Box::new(|j| {
                    j.spec.template.metadata.labels =
                        crate::model::string_map(&[("job-name", "other")]);
                }),
                &[r#"spec.template.metadata.labels["job-name"]: Invalid value: "other": must be "pi""#],
            ),
        ];
        for (name, edit, want) in cases {
            let got: Vec<String> = match validate_job(&job(edit)) {
                Ok(()) => Vec::new(),
                Err(e) => e.errors().iter().map(|e| e.to_string()).collect(),
            };
            assert_eq!(got, want, "{name}");
        }
    }
}
