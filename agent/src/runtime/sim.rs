//! The `sim` runtime: pods that "run" without any process, from the moment they start until
//! they are stopped. For labs, demos and scale tests with thousands of simulated nodes.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use berth_proto::model::{ContainerStatus, Pod, PodCondition, PodPhase, PodStatus, Time};
use tracing::debug;

use super::{BoxFuture, PodReport, Runtime};
use crate::error::Result;

/// Container state names, as [`ContainerStatus::state`] holds them.
const STATE_RUNNING: &str = "running";
const STATE_TERMINATED: &str = "terminated";

/// Pod conditions that hold once every container runs, in kubelet's order.
const RUNNING_CONDITIONS: [&str; 4] = ["Initialized", "Ready", "ContainersReady", "PodScheduled"];

/// Simulated pods, kept in memory by uid.
#[derive(Debug, Default)]
pub struct SimRuntime {
    host_ip: String,
    pods: Mutex<BTreeMap<String, PodReport>>,
}

impl SimRuntime {
    /// A runtime with no pods, reporting `host_ip` (may be empty) as its pods' `hostIP`.
    pub fn new(host_ip: impl Into<String>) -> Self {
        SimRuntime {
            host_ip: host_ip.into(),
            pods: Mutex::new(BTreeMap::new()),
        }
    }

    fn pods(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, PodReport>> {
        // A panic while holding the lock cannot leave the map half-updated (every update is
        // a single insert or remove), so a poisoned lock is still consistent.
        self.pods
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The status of a pod whose containers all just started.
    fn running_status(&self, pod: &Pod, now: Time) -> PodStatus {
        PodStatus {
            phase: PodPhase::Running,
            conditions: RUNNING_CONDITIONS
                .iter()
                .map(|type_| PodCondition {
                    type_: (*type_).to_string(),
                    status: "True".to_string(),
                    last_transition_time: Some(now),
                    ..PodCondition::default()
                })
                .collect(),
            start_time: Some(now),
            host_ip: self.host_ip.clone(),
            container_statuses: pod
                .spec
                .containers
                .iter()
                .map(|c| ContainerStatus {
                    name: c.name.clone(),
                    ready: true,
                    restart_count: 0,
                    state: STATE_RUNNING.to_string(),
                    ..ContainerStatus::default()
                })
                .collect(),
            ..PodStatus::default()
        }
    }
}

impl Runtime for SimRuntime {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn start<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, Result<PodStatus>> {
        Box::pin(async move {
            let uid = &pod.metadata.uid;
            let mut pods = self.pods();
            if let Some(existing) = pods.get(uid) {
                debug!(pod = %uid, "pod already runs");
                return Ok(existing.status.clone());
            }
            let status = self.running_status(pod, Time::now());
            pods.insert(
                uid.clone(),
                PodReport {
                    namespace: pod.metadata.namespace.clone(),
                    name: pod.metadata.name.clone(),
                    uid: uid.clone(),
                    status: status.clone(),
                },
            );
            Ok(status)
        })
    }

    fn stop<'a>(
        &'a self,
        uid: &'a str,
        grace: Duration,
    ) -> BoxFuture<'a, Result<Option<PodStatus>>> {
        Box::pin(async move {
            // A simulated pod has no process to signal, so it exits at once, well within any
            // grace period.
            debug!(pod = %uid, grace = ?grace, "stopping simulated pod");
            let Some(report) = self.pods().remove(uid) else {
                return Ok(None);
            };
            let mut status = report.status;
            status.phase = PodPhase::Failed;
            for condition in &mut status.conditions {
                if condition.type_ == "Ready" || condition.type_ == "ContainersReady" {
                    condition.status = "False".to_string();
                    condition.last_transition_time = Some(Time::now());
                }
            }
            for container in &mut status.container_statuses {
                container.ready = false;
                container.state = STATE_TERMINATED.to_string();
            }
            Ok(Some(status))
        })
    }

    fn running(&self) -> Vec<String> {
        self.pods().keys().cloned().collect()
    }

    fn report(&self, uid: &str) -> Option<PodReport> {
        self.pods().get(uid).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{Container, ObjectMeta, PodSpec};

    fn pod(uid: &str, containers: &[&str]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: "default".to_string(),
                name: format!("pod-{uid}"),
                uid: uid.to_string(),
                ..ObjectMeta::default()
            },
            spec: PodSpec {
                containers: containers
                    .iter()
                    .map(|name| Container {
                        name: (*name).to_string(),
                        ..Container::default()
                    })
                    .collect(),
                ..PodSpec::default()
            },
            ..Pod::default()
        }
    }

    #[tokio::test]
    async fn start_reports_running_containers() {
        let runtime = SimRuntime::new("10.0.0.1");
        let status = runtime.start(&pod("u1", &["app", "log"])).await.unwrap();
        assert_eq!(status.phase, PodPhase::Running);
        assert_eq!(status.host_ip, "10.0.0.1");
        assert!(status.start_time.is_some());
        let containers: Vec<(&str, bool, &str)> = status
            .container_statuses
            .iter()
            .map(|c| (c.name.as_str(), c.ready, c.state.as_str()))
            .collect();
        assert_eq!(
            containers,
            vec![("app", true, "running"), ("log", true, "running")]
        );
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
        assert_eq!(ready.map(|c| c.status.as_str()), Some("True"));
    }

    #[tokio::test]
    async fn start_is_idempotent() {
        let runtime = SimRuntime::new("");
        let first = runtime.start(&pod("u1", &["app"])).await.unwrap();
        let again = runtime.start(&pod("u1", &["app"])).await.unwrap();
        assert_eq!(first, again, "a second start keeps the first status");
        assert_eq!(runtime.running(), vec!["u1".to_string()]);
    }

    #[tokio::test]
    async fn running_and_stop() {
        struct Case {
            name: &'static str,
            start: Vec<&'static str>,
            stop: Vec<&'static str>,
            want_running: Vec<&'static str>,
            want_stopped: Vec<bool>,
        }
        let cases = [
            Case {
                name: "nothing",
                start: vec![],
                stop: vec![],
                want_running: vec![],
                want_stopped: vec![],
            },
            Case {
                name: "sorted uids",
                start: vec!["b", "a", "c"],
                stop: vec![],
                want_running: vec!["a", "b", "c"],
                want_stopped: vec![],
            },
            Case {
                name: "stop one",
                start: vec!["a", "b"],
                stop: vec!["a"],
                want_running: vec!["b"],
                want_stopped: vec![true],
            },
            Case {
                name: "stop unknown and twice",
                start: vec!["a"],
                stop: vec!["x", "a", "a"],
                want_running: vec![],
                want_stopped: vec![false, true, false],
            },
        ];
        for case in cases {
            let runtime = SimRuntime::new("");
            for uid in &case.start {
                runtime.start(&pod(uid, &["app"])).await.unwrap();
            }
            let mut stopped = Vec::new();
            for uid in &case.stop {
                let status = runtime.stop(uid, Duration::from_secs(30)).await.unwrap();
                if let Some(status) = &status {
                    assert_eq!(status.phase, PodPhase::Failed, "{}", case.name);
                    assert!(
                        status
                            .container_statuses
                            .iter()
                            .all(|c| !c.ready && c.state == STATE_TERMINATED),
                        "{}: containers terminated",
                        case.name
                    );
                }
                stopped.push(status.is_some());
            }
            assert_eq!(runtime.running(), case.want_running, "{}", case.name);
            assert_eq!(stopped, case.want_stopped, "{}", case.name);
            for uid in &case.want_running {
                let report = runtime.report(uid).expect("a running pod has a report");
                assert_eq!(
                    (report.namespace.as_str(), report.name, report.uid.as_str()),
                    ("default", format!("pod-{uid}"), *uid),
                    "{}",
                    case.name
                );
            }
        }
    }
}
