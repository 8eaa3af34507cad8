//! How the CLI shows a Job, as kubectl does: the STATUS, COMPLETIONS and DURATION cells of
//! `get jobs`, and the text of `describe job`.

use std::fmt::Write as _;
use std::time::SystemTime;

use berth_proto::model::{
    CompletionMode, Event, Job, Pod, Time, JOB_COMPLETE, JOB_FAILED, JOB_FAILURE_TARGET,
    JOB_SUCCESS_CRITERIA_MET, JOB_SUSPENDED,
};

use super::describe::{format_label_selector, write_container, write_events, write_map};
use crate::output::{human_duration, tabulate, DESCRIBE_PADDING};

/// kubectl's STATUS of a Job: Complete, Failed, Terminating, Suspended, FailureTarget,
/// SuccessCriteriaMet, else Running (the first that holds, in that order).
pub fn job_status(job: &Job) -> &'static str {
    let status = &job.status;
    if status.has_true(JOB_COMPLETE) {
        "Complete"
    } else if status.has_true(JOB_FAILED) {
        "Failed"
    } else if job.metadata.deletion_timestamp.is_some() {
        "Terminating"
    } else if status.has_true(JOB_SUSPENDED) {
        "Suspended"
    } else if status.has_true(JOB_FAILURE_TARGET) {
        "FailureTarget"
    } else if status.has_true(JOB_SUCCESS_CRITERIA_MET) {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// kubectl's COMPLETIONS of a Job: `succeeded/completions`, or without completions
/// `succeeded/1` (`succeeded/1 of parallelism` when parallelism is above 1).
pub fn job_completions(job: &Job) -> String {
    let succeeded = job.status.succeeded;
    match job.spec.completions {
        Some(c) => format!("{succeeded}/{c}"),
        None => match job.spec.parallelism.unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    }
}

fn seconds_between(from: &Time, to: SystemTime) -> i64 {
    match to.duration_since(from.0) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

/// kubectl's DURATION of a Job: from its start to its completion, or to `now` while it
/// has not completed; empty before it starts.
pub fn job_duration(job: &Job, now: SystemTime) -> String {
    match (&job.status.start_time, &job.status.completion_time) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(seconds_between(start, now)),
        (Some(start), Some(done)) => human_duration(seconds_between(start, done.0)),
    }
}

/// The STATUS, COMPLETIONS and DURATION cells of `get jobs`.
pub fn job_cells(job: &Job, now: SystemTime) -> [String; 3] {
    [
        job_status(job).to_string(),
        job_completions(job),
        job_duration(job, now),
    ]
}

/// The text of `berth describe job`, in kubectl's shape.
pub fn describe_job(job: &Job, events: &[Event], now: SystemTime) -> String {
    let (meta, spec, status) = (&job.metadata, &job.spec, &job.status);
    let mut out = String::new();
    let _ = writeln!(out, "Name:\t{}", meta.name);
    let _ = writeln!(out, "Namespace:\t{}", meta.namespace);
    let selector = spec
        .selector
        .as_ref()
        .map_or("<none>".to_string(), format_label_selector);
    let _ = writeln!(out, "Selector:\t{selector}");
    write_map(&mut out, "Labels", &meta.labels);
    write_map(&mut out, "Annotations", &meta.annotations);
    if let Some(p) = spec.parallelism {
        let _ = writeln!(out, "Parallelism:\t{p}");
    }
    match spec.completions {
        Some(c) => {
            let _ = writeln!(out, "Completions:\t{c}");
        }
        None => out.push_str("Completions:\t<unset>\n"),
    }
    if let Some(mode) = spec.completion_mode {
        let _ = writeln!(out, "Completion Mode:\t{}", mode.as_str());
    }
    if let Some(suspend) = spec.suspend {
        let _ = writeln!(out, "Suspend:\t{suspend}");
    }
    if let Some(limit) = spec.backoff_limit {
        let _ = writeln!(out, "Backoff Limit:\t{limit}");
    }
    if let Some(ttl) = spec.ttl_seconds_after_finished {
        let _ = writeln!(out, "TTL Seconds After Finished:\t{ttl}");
    }
    if let Some(start) = &status.start_time {
        let _ = writeln!(out, "Start Time:\t{start}");
    }
    if let Some(done) = &status.completion_time {
        let _ = writeln!(out, "Completed At:\t{done}");
    }
    if let (Some(start), Some(done)) = (&status.start_time, &status.completion_time) {
        let _ = writeln!(
            out,
            "Duration:\t{}",
            human_duration(seconds_between(start, done.0))
        );
    }
    if let Some(deadline) = spec.active_deadline_seconds {
        let _ = writeln!(out, "Active Deadline Seconds:\t{deadline}s");
    }
    match status.ready {
        Some(ready) => {
            let _ = writeln!(
                out,
                "Pods Statuses:\t{} Active ({ready} Ready) / {} Succeeded / {} Failed",
                status.active, status.succeeded, status.failed
            );
        }
        None => {
            let _ = writeln!(
                out,
                "Pods Statuses:\t{} Active / {} Succeeded / {} Failed",
                status.active, status.succeeded, status.failed
            );
        }
    }
    if spec.completion_mode == Some(CompletionMode::Indexed) {
        let indexes = if status.completed_indexes.is_empty() {
            "<none>"
        } else {
            &status.completed_indexes
        };
        let _ = writeln!(out, "Completed Indexes:\t{indexes}");
    }
    out.push_str("Pod Template:\n");
    let mut template = String::new();
    write_map(&mut template, "Labels", &spec.template.metadata.labels);
    for line in template.lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push_str("  Containers:\n");
    let pod = Pod {
        metadata: spec.template.metadata.clone(),
        spec: spec.template.spec.clone(),
        ..Pod::default()
    };
    for c in &spec.template.spec.containers {
        let mut text = String::new();
        write_container(&mut text, &pod, c);
        // kubectl indents the template's container names one space further than a pod's.
        out.push(' ');
        out.push_str(&text);
    }
    write_events(&mut out, events, now);
    tabulate(&out, 0, DESCRIBE_PADDING)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::JobCondition;

    fn job(completions: Option<i32>, parallelism: Option<i32>, succeeded: i32) -> Job {
        let mut job = Job::default();
        job.spec.completions = completions;
        job.spec.parallelism = parallelism;
        job.status.succeeded = succeeded;
        job
    }

    #[test]
    fn cells_follow_kubectl() {
        let t = |s: i64| Time::from_unix_nanos(s * 1_000_000_000);
        let now = t(1_000).0;
        let with = |type_: &str, start: Option<i64>, done: Option<i64>| {
            let mut j = job(Some(10), Some(2), 10);
            if !type_.is_empty() {
                j.status.conditions = vec![JobCondition::new(type_, "True", "", "", t(0))];
            }
            j.status.start_time = start.map(t);
            j.status.completion_time = done.map(t);
            j
        };
        // (case, job, want STATUS, COMPLETIONS, DURATION)
        let cases = [
            (
                "running",
                with("", Some(990), None),
                ["Running", "10/10", "10s"],
            ),
            (
                "complete",
                with(JOB_COMPLETE, Some(900), Some(965)),
                ["Complete", "10/10", "65s"],
            ),
            (
                "failed",
                with(JOB_FAILED, Some(900), None),
                ["Failed", "10/10", "100s"],
            ),
            (
                "not started",
                with(JOB_SUSPENDED, None, None),
                ["Suspended", "10/10", ""],
            ),
            (
                "failure target",
                with(JOB_FAILURE_TARGET, Some(999), None),
                ["FailureTarget", "10/10", "1s"],
            ),
        ];
        for (name, job, want) in cases {
            assert_eq!(job_cells(&job, now), want.map(String::from), "{name}");
        }
        assert_eq!(job_completions(&job(None, Some(3), 1)), "1/1 of 3");
        assert_eq!(job_completions(&job(None, Some(1), 0)), "0/1");
    }

    #[test]
    fn describe_has_kubectl_s_fields() {
        let mut j = job(Some(10), Some(2), 4);
        j.metadata.name = "pi".into();
        j.metadata.namespace = "default".into();
        j.spec.set_defaults();
        j.status.active = 2;
        j.status.ready = Some(1);
        j.status.failed = 1;
        let text = describe_job(&j, &[], SystemTime::now());
        for want in [
            "Name:             pi",
            "Parallelism:      2",
            "Completions:      10",
            "Completion Mode:  NonIndexed",
            "Suspend:          false",
            "Backoff Limit:    6",
            "Pods Statuses:    2 Active (1 Ready) / 4 Succeeded / 1 Failed",
            "Pod Template:",
            "Events:  <none>",
        ] {
            assert!(text.contains(want), "{want:?} in\n{text}");
        }
    }
}
