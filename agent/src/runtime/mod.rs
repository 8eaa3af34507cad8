//! Runtimes run the pods bound to this node. The session loop in [`crate::client`] drives a
//! runtime through the [`Runtime`] trait; the runtime keeps what runs, so pods survive a
//! reconnect to the scheduler.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use berth_proto::conditions::set_containers_ready;
use berth_proto::model::{
    Container, ContainerImage, ContainerStatus, Pod, PodCondition, PodPhase, PodStatus, Time,
};
use berth_proto::names;
use tokio::sync::mpsc;

use crate::error::Result;
use crate::usage::PodUsage;

pub mod cgroup;
pub mod process;
pub mod sim;

pub use process::{ProcessConfig, ProcessRuntime};
pub use sim::SimRuntime;

/// Where a runtime sends a pod's status when it changes on its own (a container exits or
/// restarts), for the agent to report.
pub type StatusSender = mpsc::UnboundedSender<PodReport>;

/// A boxed, sendable future: what [`Runtime`]'s async methods return, so that the trait can
/// be used as `dyn Runtime`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What [`Runtime::stop`] returns: the pod's final status, or `None` if it did not run here.
pub type Stopped<'a> = BoxFuture<'a, Result<Option<PodStatus>>>;

/// The status of one pod, as the runtime last reported it.
#[derive(Clone, Debug, PartialEq)]
pub struct PodReport {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub name: String,
    /// uid of the pod.
    pub uid: String,
    /// Its status.
    pub status: PodStatus,
}

/// The status a runtime reports for a pod it has just started, at `now`: `phase`; the
/// conditions in kubelet's order, Initialized and PodScheduled true, Ready and
/// ContainersReady as `ready`; the
/// start time and host IP; and one status per app container, from `container`.
fn started_status(
    pod: &Pod,
    now: Time,
    host_ip: &str,
    phase: PodPhase,
    ready: bool,
    container: impl Fn(&Container) -> ContainerStatus,
) -> PodStatus {
    let ready = names::status_of(ready);
    PodStatus {
        phase,
        conditions: [
            (names::CONDITION_INITIALIZED, names::STATUS_TRUE),
            (names::CONDITION_READY, ready),
            (names::CONDITION_CONTAINERS_READY, ready),
            (names::CONDITION_POD_SCHEDULED, names::STATUS_TRUE),
        ]
        .into_iter()
        .map(|(type_, status)| PodCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            last_transition_time: Some(now),
            ..PodCondition::default()
        })
        .collect(),
        start_time: Some(now),
        host_ip: host_ip.to_string(),
        container_statuses: pod.spec.containers.iter().map(container).collect(),
        ..PodStatus::default()
    }
}

/// Marks a pod whose containers have all stopped: every container terminated and not
/// ready, and the pod's Ready and ContainersReady conditions false.
pub(crate) fn mark_terminated(status: &mut PodStatus, now: Time) {
    set_containers_ready(&mut status.conditions, false, now);
    for container in &mut status.container_statuses {
        container.ready = false;
        container.stop(now);
    }
}

/// Something that runs pods: simulated ones ([`SimRuntime`]) or real processes.
///
/// Pods are keyed by uid. Every method is idempotent, since the scheduler may resend a
/// `StartPod` or a `StopPod` after a reconnect.
pub trait Runtime: Send + Sync {
    /// Short name for logs (`sim`).
    fn name(&self) -> &'static str;

    /// Starts `pod` and returns its status. A pod that already runs is left as it is and its
    /// current status is returned.
    fn start<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, Result<PodStatus>>;

    /// Stops the pod with this uid, giving its containers up to `grace` to exit, and forgets
    /// it. Returns its final status (containers terminated), or `None` if it did not run here.
    fn stop<'a>(&'a self, uid: &'a str, grace: Duration) -> Stopped<'a>;

    /// uids of the pods that run now, sorted.
    fn running(&self) -> Vec<String>;

    /// The current status of a running pod.
    fn report(&self, uid: &str) -> Option<PodReport>;

    /// What a running pod uses now; `None` if it does not run here.
    fn usage(&self, uid: &str) -> Option<PodUsage>;

    /// The images this node has, for `status.images`, the largest first and at most
    /// [`berth_proto::images::MAX_NODE_STATUS_IMAGES`]; none by default (the process runtime
    /// runs commands, not images).
    fn images(&self) -> Vec<ContainerImage> {
        Vec::new()
    }

    /// The log file of a container of a pod that runs (or ran) here; `None` if the
    /// runtime keeps no logs for it.
    fn log_path(&self, uid: &str, container: &str) -> Option<PathBuf> {
        let _ = (uid, container);
        None
    }
}

/// Compile-time check that [`Runtime`] can be shared across tasks as a trait object.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync + ?Sized>() {}
    assert_send_sync::<dyn Runtime>();
};
