//! kubectl's STATUS columns of pods and nodes, written once for the CLI's tables and the
//! scheduler's web view.

use crate::model::{Node, Pod};
use crate::names;

/// The STATUS column of `get pods`, following kubectl's printer: the phase, replaced by the
/// pod's reason (`Evicted`, `OutOfcpu`), by `SchedulingGated` for a gated pod, by a container's
/// waiting or terminated reason, and by `Terminating` for a pod being deleted.
pub fn pod_status(pod: &Pod) -> String {
    let mut reason = pod.status.phase.as_str().to_string();
    if !pod.status.reason.is_empty() {
        reason = pod.status.reason.clone();
    }
    if pod.status.conditions.iter().any(|c| {
        c.type_ == names::CONDITION_POD_SCHEDULED && c.reason == names::REASON_SCHEDULING_GATED
    }) {
        reason = names::REASON_SCHEDULING_GATED.into();
    }
    let mut has_running = false;
    // kubectl walks the statuses from the last, so the first container's reason wins.
    for cs in pod.status.container_statuses.iter().rev() {
        let state = &cs.state;
        match (&state.waiting, &state.terminated) {
            (Some(w), _) if !w.reason.is_empty() => reason = w.reason.clone(),
            (_, Some(t)) if !t.reason.is_empty() => reason = t.reason.clone(),
            (_, Some(t)) if t.signal != 0 => reason = format!("Signal:{}", t.signal),
            (_, Some(t)) => reason = format!("ExitCode:{}", t.exit_code),
            _ if cs.ready && state.is_running() => has_running = true,
            _ => {}
        }
    }
    if reason == "Completed" && has_running {
        reason = if pod.is_ready() {
            "Running"
        } else {
            "NotReady"
        }
        .into();
    }
    if pod.is_terminating() {
        if pod.status.reason == names::REASON_NODE_LOST {
            reason = "Unknown".into();
        } else if !pod.is_terminal() {
            reason = "Terminating".into();
        }
    }
    reason
}

/// The STATUS column of `get nodes`: `Ready`, `NotReady` or `Unknown` (no Ready condition),
/// with `,SchedulingDisabled` for a cordoned node.
pub fn node_status(node: &Node) -> String {
    let mut status = match node.condition(names::CONDITION_READY) {
        Some(c) if c.status == names::STATUS_TRUE => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if node.spec.unschedulable {
        status.push_str(",SchedulingDisabled");
    }
    status
}
