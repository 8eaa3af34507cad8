//! The `sim` runtime: pods that "run" without any process, from the moment they start until
//! they are stopped. For labs, demos and scale tests with thousands of simulated nodes.
//!
//! # Usage contract
//!
//! A simulated pod uses what its annotations declare; without them it uses nothing. The
//! whole pod's usage is its first container's (the others use nothing):
//!
//! | annotation | value | meaning |
//! | --- | --- | --- |
//! | `sim.berth.dev/memory-usage` | quantity, `300Mi` | constant memory working set |
//! | `sim.berth.dev/cpu-usage` | quantity, `250m` | constant CPU |
//! | `sim.berth.dev/disk-usage` | quantity, `1Gi` | constant bytes on the node filesystem |
//! | `sim.berth.dev/memory-usage-ramp` | `FROM->TO/DURATION`, `100Mi->900Mi/60s` | memory growing linearly from FROM at the pod's start to TO after DURATION, then staying at TO; it overrides `memory-usage` |
//!
//! An annotation that does not parse is logged once (warn) and counts as no usage.
//!
//! A simulated pod runs until it is stopped, unless it declares how it ends:
//!
//! | annotation | value | meaning |
//! | --- | --- | --- |
//! | `sim.berth.dev/run-duration` | duration, `30s` | the containers exit this long after they start |
//! | `sim.berth.dev/exit-code` | integer, `1` | the code they exit with (0 when left out) |
//!
//! On exit the pod's restartPolicy applies as kubelet's does (Always, or OnFailure with a
//! non-zero code, restarts the containers at once, counting a restart and running again
//! for the same duration); otherwise the pod ends Succeeded (code 0) or Failed.
//!
//! # Images
//!
//! The node reports in `status.images` the image of every container of the pods it ran
//! (under kube's normalized name, `:latest` added when untagged), as if pulled: they stay
//! after the pod ends. Each has the size the pod's `sim.berth.dev/image-size` annotation
//! gives, or [`DEFAULT_SIM_IMAGE_SIZE`]; the first pod to bring an image sets its size.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_proto::images::{normalized_image_name, MAX_NODE_STATUS_IMAGES};
use berth_proto::model::{
    ContainerImage, ContainerState, ContainerStatus, Pod, PodPhase, PodStatus, RestartPolicy, Time,
};
use berth_proto::names;
use berth_proto::Quantity;
use tracing::{debug, warn};

use super::process::{should_restart, REASON_COMPLETED, REASON_ERROR};
use super::{
    mark_terminated, started_status, BoxFuture, PodReport, Runtime, StatusSender, Stopped,
};
use crate::error::Result;
use crate::usage::{ContainerUsage, PodUsage};

/// How a simulated amount changes over the pod's life.
#[derive(Clone, Debug, PartialEq)]
pub enum UsageShape {
    /// The same amount all along.
    Constant(Quantity),
    /// From `from` at the start to `to` after `over`, linearly; `to` afterwards.
    Ramp {
        /// Amount at the start.
        from: Quantity,
        /// Amount from `over` on.
        to: Quantity,
        /// How long the ramp lasts.
        over: Duration,
    },
}

impl UsageShape {
    /// Parses a constant (`300Mi`) or, with `ramp`, a ramp (`100Mi->900Mi/60s`).
    pub fn parse(text: &str, ramp: bool) -> std::result::Result<UsageShape, String> {
        let quantity = |t: &str| {
            let q = Quantity::parse(t.trim()).map_err(|e| e.to_string())?;
            if q.is_negative() {
                return Err(format!("{t:?} is negative"));
            }
            Ok(q)
        };
        if !ramp {
            return quantity(text).map(UsageShape::Constant);
        }
        let (amounts, over) = text
            .rsplit_once('/')
            .ok_or_else(|| format!("{text:?}: expected FROM->TO/DURATION"))?;
        let (from, to) = amounts
            .split_once("->")
            .ok_or_else(|| format!("{text:?}: expected FROM->TO/DURATION"))?;
        let over = humantime::parse_duration(over.trim())
            .map_err(|e| format!("{text:?}: duration {over:?}: {e}"))?;
        Ok(UsageShape::Ramp {
            from: quantity(from)?,
            to: quantity(to)?,
            over,
        })
    }

    /// The amount, in millis of the unit, `elapsed` after the pod started.
    pub fn millis_at(&self, elapsed: Duration) -> i64 {
        match self {
            UsageShape::Constant(q) => q.millis(),
            UsageShape::Ramp { from, to, over } => {
                if elapsed >= *over || over.is_zero() {
                    return to.millis();
                }
                let fraction = elapsed.as_secs_f64() / over.as_secs_f64();
                let (from, to) = (from.millis() as f64, to.millis() as f64);
                (from + (to - from) * fraction) as i64
            }
        }
    }
}

/// The declared usage of a simulated pod, read from its annotations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimUsage {
    /// Memory, bytes.
    pub memory: Option<UsageShape>,
    /// CPU, cores.
    pub cpu: Option<UsageShape>,
    /// Disk, bytes.
    pub disk: Option<UsageShape>,
}

impl SimUsage {
    /// Reads the annotations; each problem is returned as `annotation: reason`, and the
    /// annotation is left out.
    pub fn from_annotations(
        annotations: &std::collections::BTreeMap<String, String>,
    ) -> (SimUsage, Vec<String>) {
        let mut problems = Vec::new();
        let mut read = |key: &str, ramp: bool| {
            let text = annotations.get(key)?;
            UsageShape::parse(text, ramp)
                .map_err(|e| problems.push(format!("{key}: {e}")))
                .ok()
        };
        let memory = read(names::ANNOTATION_SIM_MEMORY_USAGE_RAMP, true)
            .or(read(names::ANNOTATION_SIM_MEMORY_USAGE, false));
        let usage = SimUsage {
            memory,
            cpu: read(names::ANNOTATION_SIM_CPU_USAGE, false),
            disk: read(names::ANNOTATION_SIM_DISK_USAGE, false),
        };
        (usage, problems)
    }
}

fn lock(
    pods: &Mutex<BTreeMap<String, SimPod>>,
) -> std::sync::MutexGuard<'_, BTreeMap<String, SimPod>> {
    // A panic while holding the lock cannot leave the map half-updated (every update is a
    // single insert, remove or status change), so a poisoned lock is still consistent.
    pods.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs a simulated pod's end: every `exit.after` its containers exit with the code; they
/// restart as `policy` says, or the pod ends and its final status is reported. Stops when
/// the pod is stopped (gone from `pods`, or replaced by a pod of another start).
async fn run_to_exit(
    pods: Arc<Mutex<BTreeMap<String, SimPod>>>,
    uid: String,
    started: Instant,
    exit: SimExit,
    policy: RestartPolicy,
    updates: StatusSender,
) {
    loop {
        tokio::time::sleep(exit.after).await;
        let mut all = lock(&pods);
        let Some(pod) = all.get_mut(&uid).filter(|p| p.started == started) else {
            return;
        };
        let status = &mut pod.report.status;
        let restart = should_restart(policy, exit.exit_code);
        let reason = if exit.exit_code == 0 {
            REASON_COMPLETED
        } else {
            REASON_ERROR
        };
        let now = Time::now();
        for c in &mut status.container_statuses {
            c.set_state(ContainerState::terminated(exit.exit_code, reason, now));
            if restart {
                c.restart_count += 1;
                c.set_state(ContainerState::running(now));
            }
        }
        if !restart {
            status.phase = if exit.exit_code == 0 {
                PodPhase::Succeeded
            } else {
                PodPhase::Failed
            };
            mark_terminated(status, Time::now());
        }
        let _ = updates.send(pod.report.clone());
        if !restart {
            return;
        }
    }
}

/// Size a simulated node reports for an image when the pod that brought it does not say
/// (`sim.berth.dev/image-size`): 100Mi.
pub const DEFAULT_SIM_IMAGE_SIZE: i64 = 100 * 1024 * 1024;

/// A simulated pod: its last status, when it started, and what it declares it uses.
#[derive(Debug)]
struct SimPod {
    report: PodReport,
    started: Instant,
    usage: SimUsage,
    containers: Vec<String>,
}

/// How a simulated pod ends, from its annotations: after `after`, with `exit_code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimExit {
    /// How long the containers run.
    pub after: Duration,
    /// The code they exit with.
    pub exit_code: i32,
}

impl SimExit {
    /// Reads `run-duration` and `exit-code`; `Ok(None)` when the pod runs until stopped.
    pub fn from_annotations(
        annotations: &BTreeMap<String, String>,
    ) -> std::result::Result<Option<SimExit>, String> {
        let Some(text) = annotations.get(names::ANNOTATION_SIM_RUN_DURATION) else {
            return Ok(None);
        };
        let after = humantime::parse_duration(text.trim())
            .map_err(|e| format!("{}: {text:?}: {e}", names::ANNOTATION_SIM_RUN_DURATION))?;
        let exit_code = match annotations.get(names::ANNOTATION_SIM_EXIT_CODE) {
            None => 0,
            Some(code) => code.trim().parse().map_err(|_| {
                format!(
                    "{}: {code:?} is not an integer",
                    names::ANNOTATION_SIM_EXIT_CODE
                )
            })?,
        };
        Ok(Some(SimExit { after, exit_code }))
    }
}

/// Simulated pods, kept in memory by uid.
#[derive(Debug, Default)]
pub struct SimRuntime {
    host_ip: String,
    pods: Arc<Mutex<BTreeMap<String, SimPod>>>,
    updates: Option<StatusSender>,
    /// Images "pulled" for the pods run so far, by normalized name, with their size.
    images: Mutex<BTreeMap<String, i64>>,
}

impl SimRuntime {
    /// A runtime with no pods, reporting `host_ip` (may be empty) as its pods' `hostIP`.
    pub fn new(host_ip: impl Into<String>) -> Self {
        SimRuntime {
            host_ip: host_ip.into(),
            pods: Arc::new(Mutex::new(BTreeMap::new())),
            updates: None,
            images: Mutex::new(BTreeMap::new()),
        }
    }

    /// Records the images of `pod`'s containers as present on the node.
    fn pull_images(&self, pod: &Pod) {
        let size = match pod
            .metadata
            .annotations
            .get(names::ANNOTATION_SIM_IMAGE_SIZE)
        {
            None => DEFAULT_SIM_IMAGE_SIZE,
            Some(text) => match Quantity::parse(text) {
                Ok(q) if !q.is_negative() => q.value(),
                _ => {
                    warn!(pod = %format_args!("{}/{}", pod.metadata.namespace, pod.metadata.name), annotation = names::ANNOTATION_SIM_IMAGE_SIZE, value = %text, "not a size; using the default");
                    DEFAULT_SIM_IMAGE_SIZE
                }
            },
        };
        let mut images = self
            .images
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let containers = pod.spec.init_containers.iter().chain(&pod.spec.containers);
        for c in containers.filter(|c| !c.image.is_empty()) {
            images
                .entry(normalized_image_name(&c.image).into_owned())
                .or_insert(size);
        }
    }

    /// The same runtime, reporting to `updates` the status of pods that end or restart on
    /// their own (`sim.berth.dev/run-duration`).
    pub fn with_updates(mut self, updates: StatusSender) -> Self {
        self.updates = Some(updates);
        self
    }

    fn pods(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, SimPod>> {
        lock(&self.pods)
    }

    /// The status of a pod whose containers all just started.
    fn running_status(&self, pod: &Pod, now: Time) -> PodStatus {
        started_status(pod, now, &self.host_ip, PodPhase::Running, true, |c| {
            ContainerStatus {
                name: c.name.clone(),
                image: c.image.clone(),
                ready: true,
                restart_count: 0,
                state: ContainerState::running(now),
                started: Some(true),
                ..ContainerStatus::default()
            }
        })
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
                return Ok(existing.report.status.clone());
            }
            let status = self.running_status(pod, Time::now());
            self.pull_images(pod);
            let (usage, mut problems) = SimUsage::from_annotations(&pod.metadata.annotations);
            let exit =
                SimExit::from_annotations(&pod.metadata.annotations).unwrap_or_else(|problem| {
                    problems.push(problem);
                    None
                });
            let started = Instant::now();
            if let (Some(exit), Some(updates)) = (exit, &self.updates) {
                let policy = pod.spec.restart_policy.unwrap_or_default();
                tokio::spawn(run_to_exit(
                    self.pods.clone(),
                    uid.clone(),
                    started,
                    exit,
                    policy,
                    updates.clone(),
                ));
            }
            for problem in problems {
                warn!(pod = %format_args!("{}/{}", pod.metadata.namespace, pod.metadata.name), %problem, "ignoring a simulated usage annotation");
            }
            pods.insert(
                uid.clone(),
                SimPod {
                    report: PodReport {
                        namespace: pod.metadata.namespace.clone(),
                        name: pod.metadata.name.clone(),
                        uid: uid.clone(),
                        status: status.clone(),
                    },
                    started,
                    usage,
                    containers: pod.spec.containers.iter().map(|c| c.name.clone()).collect(),
                },
            );
            Ok(status)
        })
    }

    fn stop<'a>(&'a self, uid: &'a str, grace: Duration) -> Stopped<'a> {
        Box::pin(async move {
            // A simulated pod has no process to signal, so it exits at once, well within any
            // grace period.
            debug!(pod = %uid, grace = ?grace, "stopping simulated pod");
            let Some(pod) = self.pods().remove(uid) else {
                return Ok(None);
            };
            let mut status = pod.report.status;
            if !status.phase.is_terminal() {
                status.phase = PodPhase::Failed;
                mark_terminated(&mut status, Time::now());
            }
            Ok(Some(status))
        })
    }

    fn running(&self) -> Vec<String> {
        self.pods().keys().cloned().collect()
    }

    fn images(&self) -> Vec<ContainerImage> {
        let images = self
            .images
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut list: Vec<ContainerImage> = images
            .iter()
            .map(|(name, size)| ContainerImage {
                names: vec![name.clone()],
                size_bytes: *size,
            })
            .collect();
        // Kubelet's order: the largest first (then by name, for a stable report).
        list.sort_by(|a, b| b.size_bytes.cmp(&a.size_bytes).then(a.names.cmp(&b.names)));
        list.truncate(MAX_NODE_STATUS_IMAGES);
        list
    }

    fn report(&self, uid: &str) -> Option<PodReport> {
        self.pods().get(uid).map(|p| p.report.clone())
    }

    fn usage(&self, uid: &str) -> Option<PodUsage> {
        let pods = self.pods();
        let pod = pods.get(uid)?;
        let elapsed = pod.started.elapsed();
        let at = |shape: &Option<UsageShape>| shape.as_ref().map_or(0, |s| s.millis_at(elapsed));
        let cpu_millis = at(&pod.usage.cpu);
        // Bytes: the shapes hold millibytes.
        let memory_bytes = at(&pod.usage.memory) / 1000;
        let disk_bytes = at(&pod.usage.disk) / 1000;
        let containers = pod
            .containers
            .iter()
            .enumerate()
            .map(|(i, name)| ContainerUsage {
                name: name.clone(),
                cpu_millis: if i == 0 { cpu_millis } else { 0 },
                memory_bytes: if i == 0 { memory_bytes } else { 0 },
                disk_bytes: if i == 0 { disk_bytes } else { 0 },
            })
            .collect();
        Some(PodUsage {
            namespace: pod.report.namespace.clone(),
            name: pod.report.name.clone(),
            uid: uid.to_string(),
            cpu_millis,
            memory_bytes,
            disk_bytes,
            pids: pod.containers.len() as i64,
            containers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{container, PodBuilder};

    fn pod(uid: &str, containers: &[&str]) -> Pod {
        containers
            .iter()
            .fold(
                PodBuilder::new(&format!("pod-{uid}")).uid(uid),
                |pod, name| pod.container(container(name, &[])),
            )
            .build()
    }

    #[test]
    fn usage_annotations() {
        const MI: i64 = 1 << 20;
        const MEMORY: &str = names::ANNOTATION_SIM_MEMORY_USAGE;
        const CPU: &str = names::ANNOTATION_SIM_CPU_USAGE;
        const RAMP: &str = names::ANNOTATION_SIM_MEMORY_USAGE_RAMP;
        // (name, annotations, (elapsed seconds, want memory MiB, want CPU millis, want problems))
        type Case = (
            &'static str,
            &'static [(&'static str, &'static str)],
            (u64, i64, i64, usize),
        );
        let cases: [Case; 6] = [
            ("none", &[], (0, 0, 0, 0)),
            (
                "constants",
                &[(MEMORY, "300Mi"), (CPU, "250m")],
                (100, 300, 250, 0),
            ),
            (
                "ramp halfway",
                &[(RAMP, "100Mi->900Mi/60s")],
                (30, 500, 0, 0),
            ),
            (
                "ramp over, and it overrides the constant",
                &[(RAMP, "100Mi -> 900Mi / 1m"), (MEMORY, "1Mi")],
                (600, 900, 0, 0),
            ),
            ("ramp down", &[(RAMP, "1Gi->0/10s")], (5, 512, 0, 0)),
            (
                "bad values are reported and ignored",
                &[(MEMORY, "lots"), (CPU, "-1"), (RAMP, "100Mi/60s")],
                (0, 0, 0, 3),
            ),
        ];
        for (name, annotations, want) in cases {
            let (elapsed, want_memory_mib, want_cpu_millis, want_problems) = want;
            let elapsed = Duration::from_secs(elapsed);
            let annotations = annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let (usage, problems) = SimUsage::from_annotations(&annotations);
            assert_eq!(problems.len(), want_problems, "{name}: {problems:?}");
            let at = |s: &Option<UsageShape>| s.as_ref().map_or(0, |s| s.millis_at(elapsed));
            assert_eq!(at(&usage.memory) / 1000, want_memory_mib * MI, "{name}");
            assert_eq!(at(&usage.cpu), want_cpu_millis, "{name}");
        }
    }

    #[tokio::test]
    async fn pods_end_as_their_annotations_say() {
        // (case, restartPolicy, exit code, want phase of the first report, want restarts)
        let cases = [
            ("success", RestartPolicy::Never, "0", PodPhase::Succeeded, 0),
            ("failure", RestartPolicy::Never, "2", PodPhase::Failed, 0),
            (
                "OnFailure restarts",
                RestartPolicy::OnFailure,
                "1",
                PodPhase::Running,
                1,
            ),
            (
                "OnFailure success",
                RestartPolicy::OnFailure,
                "0",
                PodPhase::Succeeded,
                0,
            ),
        ];
        for (name, policy, code, phase, restarts) in cases {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let runtime = SimRuntime::new("").with_updates(tx);
            let mut p = pod("u1", &["main"]);
            p.spec.restart_policy = Some(policy);
            let annotations = &mut p.metadata.annotations;
            annotations.insert(names::ANNOTATION_SIM_RUN_DURATION.into(), "10ms".into());
            annotations.insert(names::ANNOTATION_SIM_EXIT_CODE.into(), code.into());
            runtime.start(&p).await.expect("starts");
            let report = rx.recv().await.expect("a report");
            let status = &report.status;
            assert_eq!(status.phase, phase, "{name}");
            let c = &status.container_statuses[0];
            assert_eq!(c.exit_code(), Some(code.parse().expect("int")), "{name}");
            assert_eq!(c.restart_count, restarts, "{name}");
            let state = (c.state.is_terminated(), c.state.is_running());
            assert_eq!(state, (phase.is_terminal(), !phase.is_terminal()), "{name}");
            let stopped = runtime.stop("u1", Duration::ZERO).await.expect("stops");
            if phase.is_terminal() {
                assert_eq!(
                    stopped.expect("ran").phase,
                    phase,
                    "{name}: stop keeps the end"
                );
            }
        }
        let bad = [(names::ANNOTATION_SIM_RUN_DURATION, "soon")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(SimExit::from_annotations(&bad).is_err());
    }

    #[tokio::test]
    async fn usage_of_running_pods() {
        let runtime = SimRuntime::new("");
        let mut p = pod("u1", &["main", "sidecar"]);
        p.metadata
            .annotations
            .insert(names::ANNOTATION_SIM_MEMORY_USAGE.into(), "300Mi".into());
        runtime.start(&p).await.unwrap();
        let usage = runtime.usage("u1").expect("usage of a running pod");
        assert_eq!(usage.memory_bytes, 300 << 20);
        assert_eq!(usage.containers[0].memory_bytes, 300 << 20);
        assert_eq!(usage.containers[1].memory_bytes, 0);
        assert_eq!(usage.pids, 2);
        assert!(runtime.usage("nope").is_none());
    }

    #[tokio::test]
    async fn pods_leave_their_images_on_the_node() {
        let runtime = SimRuntime::new("");
        let with_images = |uid: &str, images: &[&str], size: Option<&str>| {
            let mut p = pod(uid, &[]);
            for (i, image) in images.iter().enumerate() {
                let mut c = container(&format!("c{i}"), &[]);
                c.image = (*image).to_string();
                p.spec.containers.push(c);
            }
            if let Some(size) = size {
                p.metadata
                    .annotations
                    .insert(names::ANNOTATION_SIM_IMAGE_SIZE.into(), size.into());
            }
            p
        };
        runtime
            .start(&with_images("u1", &["nginx", "app:v1"], Some("1Gi")))
            .await
            .unwrap();
        // A later pod does not change the size of an image already there.
        runtime
            .start(&with_images(
                "u2",
                &["nginx:latest", "redis:7"],
                Some("lots"),
            ))
            .await
            .unwrap();
        runtime.stop("u1", Duration::ZERO).await.unwrap();
        let images: Vec<(String, i64)> = runtime
            .images()
            .into_iter()
            .map(|i| (i.names.join(","), i.size_bytes))
            .collect();
        assert_eq!(
            images,
            vec![
                ("app:v1".to_string(), 1 << 30),
                ("nginx:latest".to_string(), 1 << 30),
                ("redis:7".to_string(), DEFAULT_SIM_IMAGE_SIZE),
            ]
        );
    }

    #[tokio::test]
    async fn start_reports_running_containers() {
        let runtime = SimRuntime::new("10.0.0.1");
        let status = runtime.start(&pod("u1", &["app", "log"])).await.unwrap();
        assert_eq!(status.phase, PodPhase::Running);
        assert_eq!(status.host_ip, "10.0.0.1");
        assert!(status.start_time.is_some());
        let containers: Vec<(&str, bool, bool)> = status
            .container_statuses
            .iter()
            .map(|c| (c.name.as_str(), c.ready, c.state.is_running()))
            .collect();
        assert_eq!(containers, vec![("app", true, true), ("log", true, true)]);
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
                            .all(|c| !c.ready && c.state.is_terminated()),
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
