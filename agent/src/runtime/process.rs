//! The `process` runtime: each container's command, args and env run as a real child
//! process, in a folder of its own per pod (`<root>/pods/<uid>/`), with stdout and stderr
//! appended to `<pod folder>/<container>.log`.
//!
//! Each container has a supervisor task that starts it, waits for it, and restarts it as
//! the pod's restartPolicy says (Always, OnFailure, Never), after kubelet's back-off: the
//! base delay (10 s by default), doubling up to 5 minutes, and back to the base once a
//! container ran for 10 minutes. Each container runs in a process group of its own, so that
//! stopping it (SIGTERM, then SIGKILL after the grace period) reaches every process it
//! started.
//!
//! Limits are enforced as kubelet enforces them, through the pod and container cgroups of
//! [`super::cgroup`] (cgroup v2 or v1, whichever holds each controller): each container
//! process writes itself into its container cgroup before it execs the command, so that
//! nothing it allocates escapes the limit, and a container the kernel OOM-kills is reported
//! `OOMKilled`. Where no hierarchy holds the memory controller, the agent enforces memory
//! limits itself: it kills a container whose process tree's resident memory goes over the
//! container's limit, checked every [`MEMORY_CHECK_INTERVAL`], reported the same way.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_proto::conditions::set_containers_ready;
use berth_proto::model::{
    Container, ContainerState, ContainerStatus, Pod, PodPhase, PodStatus, RestartPolicy, Time,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::cgroup::{CgroupMode, Cgroups, OomCounters, PodCgroup};
use super::{started_status, BoxFuture, PodReport, Runtime, StatusSender, Stopped};
use crate::error::{error_chain, Error, Result};
use crate::usage::{procfs, ContainerUsage, PodUsage};

/// Reason of a container that exited with code 0.
pub const REASON_COMPLETED: &str = "Completed";
/// Reason of a container that exited with another code.
pub const REASON_ERROR: &str = "Error";
/// Reason of a container the kernel killed for going over its pod's memory limit.
pub const REASON_OOM_KILLED: &str = "OOMKilled";
/// Reason of a container waiting to be restarted.
pub const REASON_CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";
/// Reason of a container whose process could not be started.
pub const REASON_START_ERROR: &str = "StartError";
/// Reason of a container not started yet.
pub const REASON_CONTAINER_CREATING: &str = "ContainerCreating";

/// Longest back-off between restarts (kubelet's).
pub const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(300);
/// A container that ran this long before exiting restarts after the base delay again.
const BACKOFF_RESET_AFTER: Duration = Duration::from_secs(600);
/// How long a process table read serves usage queries, so that a housekeeping round over
/// many pods reads /proc once.
const PROCESS_TABLE_TTL: Duration = Duration::from_millis(500);
/// The exit code reported for a container whose process could not start.
const START_ERROR_EXIT_CODE: i32 = 128;
/// How often the agent compares a container's memory with its limit where no cgroup
/// enforces it (the process table it reads is at most [`PROCESS_TABLE_TTL`] old).
pub const MEMORY_CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// Settings of the process runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessConfig {
    /// Folder holding `pods/<uid>/` for every pod.
    pub root_dir: PathBuf,
    /// First delay before restarting a container (kubelet: 10 s); it doubles at each
    /// restart up to [`MAX_RESTART_BACKOFF`].
    pub restart_backoff: Duration,
    /// The node's IP, reported as pods' `hostIP`.
    pub host_ip: String,
    /// The node's name, which names its cgroup folder.
    pub node_name: String,
    /// Which cgroups enforce limits (`--cgroups`).
    pub cgroups: CgroupMode,
}

/// The delay before the `restarts`-th restart (0 for the first): `base` doubled that many
/// times, capped at `max`.
pub fn restart_delay(base: Duration, max: Duration, restarts: u32) -> Duration {
    let factor = 1u32.checked_shl(restarts.min(31)).unwrap_or(u32::MAX);
    base.checked_mul(factor).unwrap_or(max).min(max)
}

/// Whether a container that exited with `exit_code` restarts under `policy`.
pub fn should_restart(policy: RestartPolicy, exit_code: i32) -> bool {
    match policy {
        RestartPolicy::Always => true,
        RestartPolicy::OnFailure => exit_code != 0,
        RestartPolicy::Never => false,
    }
}

/// The pod's phase from its containers: Running while any runs or waits to restart;
/// Succeeded when all ended with code 0; Failed when all ended and one failed.
pub fn pod_phase(containers: &[ContainerStatus]) -> PodPhase {
    if containers.is_empty() || containers.iter().any(|c| !c.state.is_terminated()) {
        if containers
            .iter()
            .all(|c| c.state.is_waiting() && c.reason() == REASON_CONTAINER_CREATING)
        {
            return PodPhase::Pending;
        }
        return PodPhase::Running;
    }
    if containers.iter().all(|c| c.exit_code() == Some(0)) {
        PodPhase::Succeeded
    } else {
        PodPhase::Failed
    }
}

/// The machine's processes by pid, as read at one moment.
type ProcessTable = Arc<HashMap<u32, procfs::ProcessInfo>>;

/// The last process table read, served for [`PROCESS_TABLE_TTL`], so that a housekeeping
/// round over many pods and the memory checks of many containers read /proc once.
#[derive(Default)]
struct TableCache(Mutex<Option<(Instant, ProcessTable)>>);

impl TableCache {
    fn get(&self) -> ProcessTable {
        let mut cached = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, table)) = cached.as_ref() {
            if at.elapsed() < PROCESS_TABLE_TTL {
                return table.clone();
            }
        }
        let table = Arc::new(procfs::process_table());
        *cached = Some((Instant::now(), table.clone()));
        table
    }
}
/// The last CPU reading of a container process: (uid, container, pid) → (when, ticks).
type CpuReadings = HashMap<(String, String, u32), (Instant, u64)>;

/// A pod that runs (or ran) here.
struct PodHandle {
    namespace: String,
    name: String,
    dir: PathBuf,
    /// The pod's cgroups, where a hierarchy holds memory or cpu.
    cgroup: Option<PodCgroup>,
    /// Whether the agent itself holds the containers to their memory limits (no memory
    /// cgroup for this pod).
    agent_enforces_memory: bool,
    status: Mutex<PodStatus>,
    /// Process group (= pid of the container's first process) of each running container.
    pids: Mutex<BTreeMap<String, u32>>,
    stop: CancellationToken,
    grace: Mutex<Duration>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl PodHandle {
    fn report(&self, uid: &str) -> PodReport {
        PodReport {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: uid.to_string(),
            status: self
                .status
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    /// Changes one container's status, recomputes the pod's phase and conditions, and
    /// returns the new status.
    fn update(&self, container: &str, change: impl FnOnce(&mut ContainerStatus)) -> PodStatus {
        let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = status
            .container_statuses
            .iter_mut()
            .find(|c| c.name == container)
        {
            change(c);
        }
        status.phase = pod_phase(&status.container_statuses);
        let all_ready = status.container_statuses.iter().all(|c| c.ready);
        set_containers_ready(&mut status.conditions, all_ready, Time::now());
        status.clone()
    }
}

/// Pods as real processes.
pub struct ProcessRuntime {
    config: ProcessConfig,
    cgroups: Cgroups,
    updates: StatusSender,
    pods: Mutex<BTreeMap<String, Arc<PodHandle>>>,
    process_table: Arc<TableCache>,
    /// Last CPU reading per (uid, container, pid), for rates.
    last_cpu: Mutex<CpuReadings>,
}

impl ProcessRuntime {
    /// A runtime keeping its pods under `config.root_dir`, sending status changes to
    /// `updates`. Finds once which cgroups can hold the pods' limits (removing those an
    /// earlier agent of this node left) and says what is enforced how.
    pub fn try_new(config: ProcessConfig, updates: StatusSender) -> Result<Self> {
        let pods_dir = config.root_dir.join("pods");
        std::fs::create_dir_all(&pods_dir).map_err(|source| Error::CreateDir {
            path: pods_dir.clone(),
            source,
        })?;
        let cgroups = Cgroups::detect(config.cgroups, &config.node_name, &config.root_dir)?;
        match cgroups.memory_version() {
            Some(version) => info!(%version, "memory limits are enforced by the kernel"),
            None => warn!(
                reason = cgroups.reason("memory").unwrap_or_default(),
                interval = ?MEMORY_CHECK_INTERVAL,
                "no memory cgroup: the agent kills a container whose processes' resident memory goes over its limit"
            ),
        }
        match cgroups.cpu_version() {
            Some(version) => {
                info!(%version, "CPU limits (CFS quota) and requests (shares) are enforced by the kernel")
            }
            None => warn!(
                reason = cgroups.reason("cpu").unwrap_or_default(),
                "no cpu cgroup: CPU limits and requests are not enforced on this host"
            ),
        }
        Ok(ProcessRuntime {
            config,
            cgroups,
            updates,
            pods: Mutex::new(BTreeMap::new()),
            process_table: Arc::default(),
            last_cpu: Mutex::new(HashMap::new()),
        })
    }

    fn pods(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<PodHandle>>> {
        // Every update is a single insert or remove, so a poisoned map is consistent.
        self.pods.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The folder of a pod.
    pub fn pod_dir(&self, uid: &str) -> PathBuf {
        self.config.root_dir.join("pods").join(uid)
    }

    fn table(&self) -> ProcessTable {
        self.process_table.get()
    }

    fn initial_status(&self, pod: &Pod, now: Time) -> PodStatus {
        started_status(
            pod,
            now,
            &self.config.host_ip,
            PodPhase::Pending,
            false,
            |c| ContainerStatus {
                name: c.name.clone(),
                image: c.image.clone(),
                state: ContainerState::waiting(REASON_CONTAINER_CREATING),
                ..ContainerStatus::default()
            },
        )
    }
}

/// Everything a container supervisor needs.
struct Supervisor {
    uid: String,
    pod: Arc<PodHandle>,
    container: Container,
    policy: RestartPolicy,
    backoff_base: Duration,
    updates: StatusSender,
    table: Arc<TableCache>,
}

impl Supervisor {
    /// Reports the pod's current status.
    fn send(&self) {
        let _ = self.updates.send(self.pod.report(&self.uid));
    }

    /// Starts the container, waits for it, and restarts it per the pod's policy, until it
    /// ends for good or the pod is stopped.
    async fn run(self) {
        let name = self.container.name.clone();
        let mut restarts: u32 = 0;
        let group = self.pod.cgroup.as_ref().and_then(|g| g.container(&name));
        loop {
            let started = Instant::now();
            let oom_before = group.map_or(OomCounters::default(), |g| g.oom_counters());
            let (exit_code, stopped, start_error, killed_over_limit) = match self.spawn() {
                Err(message) => {
                    warn!(pod = %self.uid, container = %name, %message, "container failed to start");
                    (START_ERROR_EXIT_CODE, false, true, false)
                }
                Ok(child) => {
                    let (code, stopped, over_limit) = self.wait(child).await;
                    (code, stopped, false, over_limit)
                }
            };
            let oom = killed_over_limit
                || group.is_some_and(|g| g.oom_counters().oom_killed_since(&oom_before, exit_code));
            let reason = if oom {
                REASON_OOM_KILLED
            } else if start_error {
                REASON_START_ERROR
            } else if exit_code == 0 {
                REASON_COMPLETED
            } else {
                REASON_ERROR
            };
            let restart = !stopped && should_restart(self.policy, exit_code);
            self.pod.update(&name, |c| {
                c.ready = false;
                c.set_state(ContainerState::terminated(exit_code, reason, Time::now()));
                if restart {
                    c.set_state(ContainerState::waiting(REASON_CRASH_LOOP_BACK_OFF));
                }
            });
            info!(pod = %self.uid, container = %name, exit_code, reason, restart, "container exited");
            self.send();
            if !restart {
                // kubelet removes a pod's cgroups once the pod is terminal.
                let terminal = self
                    .pod
                    .status
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .phase
                    .is_terminal();
                if terminal {
                    remove_cgroups(&self.uid, &self.pod).await;
                }
                return;
            }
            if started.elapsed() >= BACKOFF_RESET_AFTER {
                restarts = 0;
            }
            let delay = restart_delay(self.backoff_base, MAX_RESTART_BACKOFF, restarts);
            debug!(pod = %self.uid, container = %name, delay = ?delay, "back-off before restarting");
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.pod.stop.cancelled() => {
                    self.pod.update(&name, |c| c.stop(Time::now()));
                    self.send();
                    return;
                }
            }
            restarts = restarts.saturating_add(1);
            self.pod.update(&name, |c| c.restart_count += 1);
        }
    }

    /// Starts the container's process in its own process group, in the pod's folder, with
    /// only the container's environment, writing to its log.
    fn spawn(&self) -> std::result::Result<tokio::process::Child, String> {
        let c = &self.container;
        let mut argv = c.command.iter().chain(&c.args);
        let program = argv
            .next()
            .ok_or_else(|| format!("container {:?} has no command", c.name))?;
        let log_path = self.pod.dir.join(format!("{}.log", c.name));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("opening {}: {e}", log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|e| format!("opening {}: {e}", log_path.display()))?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(argv)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
            )
            .env("HOME", &self.pod.dir)
            .env("HOSTNAME", &self.pod.name)
            .envs(c.env.iter().map(|e| (e.name.as_str(), e.value.as_str())))
            .current_dir(&self.pod.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .process_group(0)
            .kill_on_drop(true);
        if let Some(group) = self.pod.cgroup.as_ref().and_then(|g| g.container(&c.name)) {
            let files = group
                .procs_files()
                .into_iter()
                .map(|f| CString::new(f.into_os_string().into_vec()))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| format!("cgroup path of container {:?}: {e}", c.name))?;
            // SAFETY: the closure runs in the child between fork and exec; `join_cgroups`
            // only makes async-signal-safe calls on paths prepared here, and allocates
            // nothing.
            unsafe {
                command.pre_exec(move || join_cgroups(&files));
            }
        }
        let child = command
            .spawn()
            .map_err(|e| format!("starting {program:?}: {e}"))?;
        let pid = child.id().unwrap_or(0);
        self.pod
            .pids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(c.name.clone(), pid);
        self.pod.update(&c.name, |s| {
            s.set_state(ContainerState::running(Time::now()));
            s.ready = true;
        });
        info!(pod = %self.uid, container = %c.name, pid, "container started");
        self.send();
        Ok(child)
    }

    /// Waits for the container to exit, for the pod to stop (then SIGTERM, and SIGKILL
    /// after the grace period), or, where the agent enforces memory limits, for the
    /// container to go over its limit (then SIGKILL). Returns the exit code (128 + signal
    /// for a signal), whether the pod was stopped, and whether the agent killed the
    /// container for its memory.
    async fn wait(&self, mut child: tokio::process::Child) -> (i32, bool, bool) {
        let pgid = child.id().unwrap_or(0);
        let mut stopped = false;
        let mut over_limit = false;
        let status = tokio::select! {
            status = child.wait() => status,
            () = self.watch_memory(pgid) => {
                over_limit = true;
                child.wait().await
            }
            () = self.pod.stop.cancelled() => {
                stopped = true;
                let grace = *self.pod.grace.lock().unwrap_or_else(|p| p.into_inner());
                signal_group(pgid, libc::SIGTERM);
                match tokio::time::timeout(grace, child.wait()).await {
                    Ok(status) => status,
                    Err(_) => {
                        debug!(pod = %self.uid, container = %self.container.name, "grace period over; killing");
                        signal_group(pgid, libc::SIGKILL);
                        child.wait().await
                    }
                }
            }
        };
        // Whatever the first process left behind in its group goes with it.
        signal_group(pgid, libc::SIGKILL);
        self.pod
            .pids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.container.name);
        let code = match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                s.code().or(s.signal().map(|sig| 128 + sig)).unwrap_or(-1)
            }
            Err(e) => {
                warn!(pod = %self.uid, error = %e, "cannot wait for the container");
                -1
            }
        };
        (code, stopped, over_limit)
    }

    /// Returns once the process tree of the container whose first process is `pgid` uses
    /// more resident memory than the container's limit, after killing it (never, when a
    /// cgroup enforces the limit or the container has none).
    async fn watch_memory(&self, pgid: u32) {
        let limit = self
            .container
            .resources
            .limits
            .get(berth_proto::resources::MEMORY)
            .map(|q| q.value())
            .filter(|l| *l > 0 && self.pod.agent_enforces_memory);
        let Some(limit) = limit else {
            return std::future::pending().await;
        };
        let mut tick = tokio::time::interval(MEMORY_CHECK_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (rss, _, _) = procfs::tree_usage(&self.table.get(), pgid);
            if rss > limit {
                warn!(pod = %self.uid, container = %self.container.name, rss, limit, "container over its memory limit; killing it");
                signal_group(pgid, libc::SIGKILL);
                // Processes that left the group are still in the tree.
                for pid in procfs::tree_pids(&procfs::process_table(), pgid) {
                    signal_process(pid, libc::SIGKILL);
                }
                return;
            }
        }
    }
}

/// Moves the calling process into the cgroups whose `cgroup.procs` files are given (writing
/// `0` names the writer). Runs in the child between fork and exec, so it only makes
/// async-signal-safe calls and allocates nothing.
fn join_cgroups(procs_files: &[CString]) -> std::io::Result<()> {
    for file in procs_files {
        // SAFETY: `file` is a NUL-terminated path; the descriptor is closed below.
        let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: writes one byte of a static buffer to the descriptor opened above.
        let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        let error = std::io::Error::last_os_error();
        // SAFETY: closes the descriptor opened above, once.
        unsafe {
            libc::close(fd);
        }
        if written != 1 {
            return Err(error);
        }
    }
    Ok(())
}

/// Kills what is left in a pod's cgroups and removes them, on a blocking thread (removal
/// waits a little for killed processes to go).
async fn remove_cgroups(uid: &str, pod: &PodHandle) {
    let Some(group) = pod.cgroup.clone() else {
        return;
    };
    match tokio::task::spawn_blocking(move || group.remove()).await {
        Ok(true) => debug!(pod = %uid, "pod cgroups removed"),
        Ok(false) => {} // logged where it failed
        Err(e) => warn!(pod = %uid, error = %e, "the task removing the pod cgroups failed"),
    }
}

/// Sends `signal` to one process; a process that is gone is fine.
fn signal_process(pid: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Sends `signal` to every process of the group `pgid`; a group that is gone is fine.
fn signal_group(pgid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return; // never signal init or every process
    }
    // SAFETY: kill has no memory-safety preconditions; a negative pid names a group.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

impl Runtime for ProcessRuntime {
    fn name(&self) -> &'static str {
        "process"
    }

    fn start<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, Result<PodStatus>> {
        Box::pin(async move {
            let uid = pod.metadata.uid.clone();
            if let Some(existing) = self.pods().get(&uid) {
                return Ok(existing.report(&uid).status);
            }
            if let Some(bad) = pod.spec.containers.iter().find(|c| {
                c.name.is_empty() || c.name.contains(['/', '\0']) || c.name.starts_with('.')
            }) {
                return Err(Error::InvalidContainerName {
                    name: bad.name.clone(),
                });
            }
            let dir = self.pod_dir(&uid);
            std::fs::create_dir_all(&dir).map_err(|source| Error::CreateDir {
                path: dir.clone(),
                source,
            })?;
            let cgroup = self.cgroups.create_pod(pod).unwrap_or_else(|e| {
                warn!(pod = %uid, error = %error_chain(&e), "cannot create the pod's cgroups; the agent holds its containers to their memory limits itself");
                None
            });
            let agent_enforces_memory = cgroup.is_none() || self.cgroups.memory_version().is_none();
            let status = self.initial_status(pod, Time::now());
            let handle = Arc::new(PodHandle {
                namespace: pod.metadata.namespace.clone(),
                name: pod.metadata.name.clone(),
                dir,
                cgroup,
                agent_enforces_memory,
                status: Mutex::new(status),
                pids: Mutex::new(BTreeMap::new()),
                stop: CancellationToken::new(),
                grace: Mutex::new(Duration::from_secs(30)),
                tasks: Mutex::new(Vec::new()),
            });
            self.pods().insert(uid.clone(), handle.clone());
            let policy = pod.spec.restart_policy.unwrap_or(RestartPolicy::Always);
            let mut tasks = Vec::new();
            for container in &pod.spec.containers {
                let supervisor = Supervisor {
                    uid: uid.clone(),
                    pod: handle.clone(),
                    container: container.clone(),
                    policy,
                    backoff_base: self.config.restart_backoff,
                    updates: self.updates.clone(),
                    table: self.process_table.clone(),
                };
                // The first start happens here, so that the status returned shows it.
                tasks.push(tokio::spawn(supervisor.run()));
            }
            *handle.tasks.lock().unwrap_or_else(|p| p.into_inner()) = tasks;
            // Let the supervisors spawn their processes before reporting.
            tokio::task::yield_now().await;
            Ok(handle.report(&uid).status)
        })
    }

    fn stop<'a>(&'a self, uid: &'a str, grace: Duration) -> Stopped<'a> {
        Box::pin(async move {
            let Some(handle) = self.pods().remove(uid) else {
                return Ok(None);
            };
            *handle.grace.lock().unwrap_or_else(|p| p.into_inner()) = grace;
            handle.stop.cancel();
            let tasks =
                std::mem::take(&mut *handle.tasks.lock().unwrap_or_else(|p| p.into_inner()));
            for task in tasks {
                if let Err(e) = task.await {
                    warn!(pod = %uid, error = %e, "a container task of the stopped pod failed");
                }
            }
            remove_cgroups(uid, &handle).await;
            self.last_cpu
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|(u, _, _), _| u != uid);
            let mut status = handle.report(uid).status;
            if !status.phase.is_terminal() {
                status.phase = pod_phase(&status.container_statuses);
                if !status.phase.is_terminal() {
                    status.phase = PodPhase::Failed;
                }
            }
            Ok(Some(status))
        })
    }

    fn running(&self) -> Vec<String> {
        self.pods().keys().cloned().collect()
    }

    fn report(&self, uid: &str) -> Option<PodReport> {
        self.pods().get(uid).map(|h| h.report(uid))
    }

    fn usage(&self, uid: &str) -> Option<PodUsage> {
        let handle = self.pods().get(uid)?.clone();
        let table = self.table();
        let pids = handle
            .pids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let names: Vec<String> = handle
            .status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .container_statuses
            .iter()
            .map(|c| c.name.clone())
            .collect();
        let now = Instant::now();
        let mut last_cpu = self.last_cpu.lock().unwrap_or_else(|p| p.into_inner());
        let mut usage = PodUsage {
            namespace: handle.namespace.clone(),
            name: handle.name.clone(),
            uid: uid.to_string(),
            disk_bytes: procfs::dir_size(&handle.dir),
            ..PodUsage::default()
        };
        for name in names {
            let mut c = ContainerUsage {
                name: name.clone(),
                disk_bytes: std::fs::metadata(handle.dir.join(format!("{name}.log")))
                    .map_or(0, |m| m.len() as i64),
                ..ContainerUsage::default()
            };
            if let Some(pid) = pids.get(&name) {
                let (rss, ticks, count) = procfs::tree_usage(&table, *pid);
                c.memory_bytes = rss;
                usage.pids += count;
                let key = (uid.to_string(), name.clone(), *pid);
                if let Some((then, before)) = last_cpu.get(&key) {
                    c.cpu_millis = procfs::millicores(ticks.saturating_sub(*before), now - *then);
                }
                last_cpu.insert(key, (now, ticks));
            }
            let group = handle.cgroup.as_ref().and_then(|g| g.container(&name));
            if let Some(ws) = group.and_then(|g| g.working_set()) {
                c.memory_bytes = ws;
            }
            usage.cpu_millis += c.cpu_millis;
            usage.memory_bytes += c.memory_bytes;
            usage.containers.push(c);
        }
        if let Some(ws) = handle.cgroup.as_ref().and_then(|g| g.pod.working_set()) {
            usage.memory_bytes = ws;
        }
        Some(usage)
    }

    fn log_path(&self, uid: &str, container: &str) -> Option<PathBuf> {
        if container.contains(['/', '\0']) || container.starts_with('.') {
            return None;
        }
        let path = self.pod_dir(uid).join(format!("{container}.log"));
        Path::new(&path).exists().then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{container, container_with_limits, PodBuilder};
    use tokio::sync::mpsc;

    #[test]
    fn back_off_doubles_to_five_minutes() {
        struct Case {
            name: &'static str,
            base: Duration,
            restarts: Vec<u32>,
            want_secs: Vec<u64>,
        }
        let cases = [
            Case {
                name: "kubelet's 10s base",
                base: Duration::from_secs(10),
                restarts: vec![0, 1, 2, 3, 4, 5, 6, 40],
                want_secs: vec![10, 20, 40, 80, 160, 300, 300, 300],
            },
            Case {
                name: "a short base for tests",
                base: Duration::from_millis(500),
                restarts: vec![0, 1, 2],
                want_secs: vec![0, 1, 2],
            },
        ];
        for case in cases {
            let got: Vec<u64> = case
                .restarts
                .iter()
                .map(|r| restart_delay(case.base, MAX_RESTART_BACKOFF, *r).as_secs())
                .collect();
            assert_eq!(got, case.want_secs, "{}", case.name);
        }
    }

    #[test]
    fn restart_policy_and_phase() {
        // (policy, restarts after exit 0, restarts after a failing exit)
        for (policy, after_success, after_failure) in [
            (RestartPolicy::Always, true, true),
            (RestartPolicy::OnFailure, false, true),
            (RestartPolicy::Never, false, false),
        ] {
            assert_eq!(should_restart(policy, 0), after_success, "{policy:?}, 0");
            for code in [1, 2] {
                assert_eq!(
                    should_restart(policy, code),
                    after_failure,
                    "{policy:?}, {code}"
                );
            }
        }

        let now = Time::now();
        let c = |states: &[ContainerState]| {
            let mut status = ContainerStatus::default();
            for state in states {
                status.set_state(state.clone());
            }
            status
        };
        let creating = || c(&[ContainerState::waiting(REASON_CONTAINER_CREATING)]);
        let running = || c(&[ContainerState::running(now)]);
        let back_off = || {
            c(&[
                ContainerState::terminated(1, REASON_ERROR, now),
                ContainerState::waiting(REASON_CRASH_LOOP_BACK_OFF),
            ])
        };
        let completed = || c(&[ContainerState::terminated(0, REASON_COMPLETED, now)]);
        let failed = || c(&[ContainerState::terminated(1, REASON_ERROR, now)]);
        let phases = [
            ("creating", vec![creating()], PodPhase::Pending),
            ("one runs", vec![running(), completed()], PodPhase::Running),
            ("back-off", vec![back_off()], PodPhase::Running),
            ("all completed", vec![completed(); 2], PodPhase::Succeeded),
            ("one failed", vec![completed(), failed()], PodPhase::Failed),
        ];
        for (name, containers, want) in phases {
            assert_eq!(pod_phase(&containers), want, "{name}");
        }
    }

    /// A process runtime under `root` whose restart back-off is 50ms, for node `node`
    /// (suffixed with the test process's pid, so that test runs side by side keep apart).
    fn test_runtime(
        root: &Path,
        cgroups: CgroupMode,
        node: &str,
    ) -> (ProcessRuntime, mpsc::UnboundedReceiver<PodReport>) {
        let (tx, updates) = mpsc::unbounded_channel();
        let runtime = ProcessRuntime::try_new(
            ProcessConfig {
                root_dir: root.to_path_buf(),
                restart_backoff: Duration::from_millis(50),
                host_ip: "10.0.0.1".into(),
                node_name: format!("{node}-{}", std::process::id()),
                cgroups,
            },
            tx,
        )
        .unwrap();
        (runtime, updates)
    }

    fn shell_pod(uid: &str, script: &str, policy: RestartPolicy) -> Pod {
        let mut pod = PodBuilder::new(&format!("pod-{uid}"))
            .uid(uid)
            .container(Container {
                command: vec!["sh".into(), "-c".into(), script.into()],
                env: vec![berth_proto::model::EnvVar {
                    name: "GREETING".into(),
                    value: "hello".into(),
                    ..Default::default()
                }],
                ..container("main", &[])
            })
            .build();
        pod.spec.restart_policy = Some(policy);
        pod
    }

    /// Waits for a status update of the pod `uid` that satisfies `want`; late updates of
    /// pods started earlier are skipped.
    async fn until(
        updates: &mut mpsc::UnboundedReceiver<PodReport>,
        uid: &str,
        what: &str,
        want: impl Fn(&PodStatus) -> bool,
    ) -> PodStatus {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let report = updates.recv().await.expect("updates open");
                if report.uid == uid && want(&report.status) {
                    return report.status;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
    }

    #[tokio::test]
    async fn runs_logs_restarts_and_stops_processes() {
        let dir = tempfile::tempdir().unwrap();
        let (runtime, mut updates) = test_runtime(dir.path(), CgroupMode::Auto, "basics");

        // Runs to completion, with its environment, writing its log.
        runtime
            .start(&shell_pod("done", "echo $GREETING", RestartPolicy::Never))
            .await
            .unwrap();
        let status = until(&mut updates, "done", "Succeeded", |s| {
            s.phase == PodPhase::Succeeded
        })
        .await;
        assert_eq!(status.container_statuses[0].reason(), REASON_COMPLETED);
        let log = runtime.log_path("done", "main").expect("a log file");
        assert_eq!(std::fs::read_to_string(log).unwrap(), "hello\n");

        // OnFailure restarts a failing container, counting restarts.
        runtime
            .start(&shell_pod(
                "fails",
                "echo try; exit 3",
                RestartPolicy::OnFailure,
            ))
            .await
            .unwrap();
        let status = until(&mut updates, "fails", "two restarts", |s| {
            s.container_statuses
                .first()
                .is_some_and(|c| c.restart_count >= 2)
        })
        .await;
        assert_eq!(status.phase, PodPhase::Running);
        assert_eq!(status.container_statuses[0].exit_code(), Some(3));
        runtime.stop("fails", Duration::from_secs(1)).await.unwrap();

        // Stop sends SIGTERM first: the trap runs.
        runtime
            .start(&shell_pod(
                "term",
                "trap 'echo terminating; exit 0' TERM; echo up; while true; do sleep 0.05; done",
                RestartPolicy::Always,
            ))
            .await
            .unwrap();
        until(&mut updates, "term", "running", |s| {
            s.phase == PodPhase::Running
        })
        .await;
        let log = runtime.log_path("term", "main").expect("a log file");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&log).unwrap().contains("up") && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let usage = runtime.usage("term").expect("usage of a running pod");
        assert!(usage.pids >= 1, "the shell runs: {usage:?}");
        assert!(usage.memory_bytes > 0, "the shell has memory: {usage:?}");
        let status = runtime
            .stop("term", Duration::from_secs(10))
            .await
            .unwrap()
            .expect("the pod ran");
        assert!(status.container_statuses[0].state.is_terminated());
        assert!(std::fs::read_to_string(&log)
            .unwrap()
            .contains("terminating"));
        assert!(runtime.running().iter().all(|u| u != "term"));

        // A missing program is a start error, and the pod fails under Never.
        let mut missing = shell_pod("missing", "", RestartPolicy::Never);
        missing.spec.containers[0].command = vec!["/nonexistent/berth-test".into()];
        runtime.start(&missing).await.unwrap();
        let status = until(&mut updates, "missing", "failed", |s| {
            s.phase == PodPhase::Failed
        })
        .await;
        assert_eq!(status.container_statuses[0].reason(), REASON_START_ERROR);
    }

    /// A shell command that allocates about 300MB and holds it: `tail` keeps the
    /// newline-free input in memory while more trickles in; the pipeline's status is
    /// `tail`'s, and the writer ends on SIGPIPE once `tail` is gone.
    const ALLOCATE_300MB: &str =
        "{ head -c 300000000 /dev/zero; while sleep 0.1; do printf 0; done; } | tail";

    /// A pod whose one container runs `script` under `limits`.
    fn limited_pod(uid: &str, script: &str, policy: RestartPolicy, limits: &[(&str, &str)]) -> Pod {
        let mut pod = shell_pod(uid, script, policy);
        pod.spec.containers[0].resources = container_with_limits("main", &[], limits).resources;
        pod
    }

    /// Whether the memory controller is in a cgroup; false (after saying why) means the
    /// test cannot run here, which fails it when `CI` is set.
    fn has_memory_cgroup(runtime: &ProcessRuntime) -> bool {
        if runtime.cgroups.memory_version().is_some() {
            return true;
        }
        let reason = runtime.cgroups.reason("memory").unwrap_or_default();
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs a writable memory cgroup (run as root): {reason}"
        );
        eprintln!("skipped: no writable memory cgroup on this host ({reason})");
        false
    }

    /// Waits until the pod `uid` has failed, its container OOMKilled with exit code 137.
    async fn until_oom_killed(updates: &mut mpsc::UnboundedReceiver<PodReport>, uid: &str) {
        let status = until(updates, uid, "Failed", |s| s.phase == PodPhase::Failed).await;
        let c = &status.container_statuses[0];
        assert_eq!(
            (c.reason(), c.exit_code()),
            (REASON_OOM_KILLED, Some(137)),
            "{c:?}"
        );
    }

    fn read(dir: &Path, file: &str) -> String {
        std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("reading {}/{file}: {e}", dir.display()))
            .trim()
            .to_string()
    }

    #[tokio::test]
    async fn cgroups_hold_kubelets_values_and_the_kernel_oom_kills() {
        let dir = tempfile::tempdir().unwrap();
        let (runtime, mut updates) = test_runtime(dir.path(), CgroupMode::Auto, "cgroups");
        if !has_memory_cgroup(&runtime) {
            return;
        }

        // Two containers: cpu 250m/500m and memory 64Mi; cpu 100m/100m and memory 32Mi.
        let mut pod = limited_pod(
            "values",
            "while true; do sleep 0.05; done",
            RestartPolicy::Always,
            &[("cpu", "500m"), ("memory", "64Mi")],
        );
        pod.spec.containers[0]
            .resources
            .requests
            .insert("cpu".into(), berth_model::testing::qty("250m"));
        let mut side = pod.spec.containers[0].clone();
        side.name = "side".into();
        side.resources =
            container_with_limits("side", &[], &[("cpu", "100m"), ("memory", "32Mi")]).resources;
        pod.spec.containers.push(side);
        runtime.start(&pod).await.unwrap();
        until(&mut updates, "values", "running", |s| {
            s.phase == PodPhase::Running
        })
        .await;
        let group = runtime
            .pods()
            .get("values")
            .unwrap()
            .cgroup
            .clone()
            .expect("pod cgroups");
        let main = group.container("main").unwrap();
        let pid = *runtime
            .pods()
            .get("values")
            .unwrap()
            .pids
            .lock()
            .unwrap()
            .get("main")
            .unwrap();
        assert!(
            main.pids().contains(&pid),
            "the process runs in its container cgroup"
        );
        // (cgroup, cpu shares, CFS quota µs, memory bytes) as kubelet sets them: the pod's
        // are the sums, shares 256 + 102.
        let want = [
            (&group.pod, 358, 60_000, 96 << 20),
            (main, 256, 50_000, 64 << 20),
            (group.container("side").unwrap(), 102, 10_000, 32 << 20),
        ];
        let paths: Vec<PathBuf> = group.pod.paths().map(Path::to_path_buf).collect();
        for (cgroup, shares, quota, memory) in want {
            let (mut cpu_checked, mut memory_checked) = (false, false);
            for path in cgroup.paths() {
                let has = |f: &str| path.join(f).exists();
                let at = path.display();
                if has("cpu.shares") {
                    assert_eq!(read(path, "cpu.shares"), shares.to_string(), "{at}");
                    assert_eq!(read(path, "cpu.cfs_period_us"), "100000", "{at}");
                    assert_eq!(read(path, "cpu.cfs_quota_us"), quota.to_string(), "{at}");
                    cpu_checked = true;
                }
                if has("cpu.weight") {
                    let weight = super::super::cgroup::shares_to_weight(shares).to_string();
                    assert_eq!(read(path, "cpu.weight"), weight, "{at}");
                    assert_eq!(read(path, "cpu.max"), format!("{quota} 100000"), "{at}");
                    cpu_checked = true;
                }
                for file in ["memory.limit_in_bytes", "memory.max"] {
                    if has(file) {
                        assert_eq!(read(path, file), memory.to_string(), "{at}");
                        memory_checked = true;
                    }
                }
            }
            assert!(memory_checked, "a memory limit file in {:?}", cgroup);
            assert_eq!(
                cpu_checked,
                runtime.cgroups.cpu_version().is_some(),
                "{cgroup:?}"
            );
        }
        if runtime.cgroups.cpu_version().is_none() {
            eprintln!("no cpu cgroup on this host: the CPU files were not checked");
        }
        runtime
            .stop("values", Duration::from_secs(5))
            .await
            .unwrap();
        for path in &paths {
            assert!(!path.exists(), "{} removed with the pod", path.display());
        }

        // Over its limit: OOM-killed by the kernel, reported as kubelet does, not restarted
        // under Never, and its cgroups removed once it is terminal.
        runtime
            .start(&limited_pod(
                "oom",
                ALLOCATE_300MB,
                RestartPolicy::Never,
                &[("memory", "64Mi")],
            ))
            .await
            .unwrap();
        let paths: Vec<PathBuf> = {
            let pods = runtime.pods();
            let group = pods.get("oom").unwrap().cgroup.as_ref().unwrap();
            group.pod.paths().map(Path::to_path_buf).collect()
        };
        until_oom_killed(&mut updates, "oom").await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while paths.iter().any(|p| p.exists()) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            paths.iter().all(|p| !p.exists()),
            "cgroups of the ended pod removed"
        );

        // Under OnFailure the OOM-killed container restarts.
        runtime
            .start(&limited_pod(
                "oom-again",
                ALLOCATE_300MB,
                RestartPolicy::OnFailure,
                &[("memory", "64Mi")],
            ))
            .await
            .unwrap();
        let status = until(&mut updates, "oom-again", "a restart", |s| {
            s.container_statuses[0].restart_count >= 1
        })
        .await;
        assert_eq!(status.container_statuses[0].exit_code(), Some(137));
        runtime
            .stop("oom-again", Duration::from_secs(1))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn without_cgroups_the_agent_ends_a_container_over_its_memory_limit() {
        let dir = tempfile::tempdir().unwrap();
        let (runtime, mut updates) = test_runtime(dir.path(), CgroupMode::None, "self");
        assert_eq!(runtime.cgroups.memory_version(), None);
        assert_eq!(runtime.cgroups.cpu_version(), None);
        runtime
            .start(&limited_pod(
                "small",
                "while true; do sleep 0.05; done",
                RestartPolicy::Never,
                &[("memory", "64Mi")],
            ))
            .await
            .unwrap();
        runtime
            .start(&limited_pod(
                "big",
                ALLOCATE_300MB,
                RestartPolicy::Never,
                &[("memory", "64Mi")],
            ))
            .await
            .unwrap();
        until_oom_killed(&mut updates, "big").await;
        let small = runtime.report("small").unwrap().status;
        assert_eq!(
            small.phase,
            PodPhase::Running,
            "the pod under its limit runs on"
        );
        runtime.stop("small", Duration::from_secs(1)).await.unwrap();
    }
}
