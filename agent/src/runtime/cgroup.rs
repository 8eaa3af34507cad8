//! Per-pod and per-container cgroups of the process runtime, set up as kubelet sets them up,
//! on whichever cgroup hierarchy of the host holds each controller: cgroup v2 where it has the
//! memory or cpu controller, else the cgroup v1 hierarchy of that controller (a hybrid host
//! may use both). Memory limits become `memory.max` / `memory.limit_in_bytes`, CPU limits a
//! CFS quota, CPU requests shares (v1) or weights (v2).
//!
//! Layout, in each hierarchy: `<mount>/berth/node-<node>-<key>/pod<uid>/ctr-<container>`,
//! where `<key>` is a hash of the agent's root folder, so that agents of one node name with
//! separate root folders (test runs side by side) never touch each other's cgroups. The pod
//! folder holds the pod's limits (kubelet's pod cgroup); each container's processes live in
//! its own folder under it, with the container's limits, so an OOM kill is told apart per
//! container. Folders left behind by an agent that was killed are removed when the next
//! agent of the same node starts, after killing what still runs in them.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use berth_proto::model::{Container, Pod, ResourceList};
use berth_proto::resources::{pod_limits, pod_requests, CPU, MEMORY};
use tracing::{debug, info, warn};

/// CFS period of every quota the agent sets, µs (kubelet's default `cpuCFSQuotaPeriod`).
pub const CPU_PERIOD_US: i64 = 100_000;
/// Smallest CFS quota, µs (kubelet's MinQuotaPeriod: 1ms).
pub const MIN_QUOTA_US: i64 = 1_000;
/// Smallest cpu.shares (kubelet's MinShares, the kernel's minimum).
pub const MIN_SHARES: u64 = 2;
/// Largest cpu.shares (kubelet's MaxShares).
pub const MAX_SHARES: u64 = 262_144;
/// cpu.shares of one whole CPU.
const SHARES_PER_CPU: i64 = 1024;
/// Exit code of a process ended by SIGKILL, as kubelet reports an OOM-killed container.
pub const OOM_EXIT_CODE: i32 = 128 + libc::SIGKILL;
/// The folder, under each hierarchy's root, that holds every Berth cgroup.
const PARENT: &str = "berth";
/// How long removing a cgroup waits for the processes it killed to be gone.
const EMPTY_WAIT: Duration = Duration::from_secs(2);

/// CPU shares of a CPU amount, kubelet's `MilliCPUToShares`: 1024 per CPU, at least 2
/// (also for no request at all), at most 262144.
pub fn milli_cpu_to_shares(milli_cpu: i64) -> u64 {
    let shares = milli_cpu.max(0).saturating_mul(SHARES_PER_CPU) / 1000;
    u64::try_from(shares)
        .unwrap_or(0)
        .clamp(MIN_SHARES, MAX_SHARES)
}

/// CFS quota of a CPU limit over [`CPU_PERIOD_US`], kubelet's `MilliCPUToQuota`: `None`
/// (no quota) for no limit, else at least [`MIN_QUOTA_US`].
pub fn milli_cpu_to_quota(milli_cpu: i64) -> Option<i64> {
    (milli_cpu > 0).then(|| (milli_cpu.saturating_mul(CPU_PERIOD_US) / 1000).max(MIN_QUOTA_US))
}

/// cgroup v2 `cpu.weight` of cpu.shares, as kubelet and runc convert it:
/// `1 + (shares - 2) * 9999 / 262142` (2 → 1, 1024 → 39, 262144 → 10000).
pub fn shares_to_weight(shares: u64) -> u64 {
    let shares = shares.clamp(MIN_SHARES, MAX_SHARES);
    1 + (shares - MIN_SHARES) * 9999 / (MAX_SHARES - MIN_SHARES)
}

/// A positive quantity of `name` in `list`, in thousandths (cpu) or units (memory).
fn positive(list: &ResourceList, name: &str, millis: bool) -> Option<i64> {
    let q = list.get(name)?;
    Some(if millis { q.millis() } else { q.value() }).filter(|v| *v > 0)
}

/// What one cgroup is given, in the units of the cgroup files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceConfig {
    /// cpu.shares (v1), converted to cpu.weight on v2.
    pub cpu_shares: u64,
    /// CFS quota per [`CPU_PERIOD_US`], µs; `None`: no CPU limit.
    pub cpu_quota_us: Option<i64>,
    /// Memory limit, bytes; `None`: no memory limit.
    pub memory_bytes: Option<i64>,
    /// Whether swap is held at the memory limit (containers, kubelet's NoSwap behaviour:
    /// v2 `memory.swap.max` 0, v1 `memory.memsw.limit_in_bytes` equal to the limit).
    pub no_swap: bool,
}

impl ResourceConfig {
    /// The pod cgroup's settings, kubelet's `ResourceConfigForPod`: shares from the pod's
    /// effective CPU request, a quota from its CPU limit only when every container (init
    /// containers included) has one, and a memory limit likewise; pod-level
    /// `spec.resources.limits` count as declared for the resources they name. A BestEffort
    /// pod gets the minimum shares and nothing else.
    pub fn for_pod(pod: &Pod) -> Self {
        let requests = pod_requests(pod);
        let limits = pod_limits(pod);
        let pod_level = pod.spec.resources.as_ref().map(|r| &r.limits);
        let declared = |name: &str, millis: bool| {
            pod_level.is_some_and(|l| positive(l, name, millis).is_some())
                || pod
                    .spec
                    .containers
                    .iter()
                    .chain(&pod.spec.init_containers)
                    .all(|c| positive(&c.resources.limits, name, millis).is_some())
        };
        ResourceConfig {
            cpu_shares: milli_cpu_to_shares(requests.milli_cpu),
            cpu_quota_us: milli_cpu_to_quota(limits.milli_cpu).filter(|_| declared(CPU, true)),
            memory_bytes: Some(limits.memory).filter(|m| *m > 0 && declared(MEMORY, false)),
            no_swap: false,
        }
    }

    /// A container cgroup's settings, as kubelet asks the runtime for them: shares from
    /// its CPU request (its limit when it requests none), a quota from its CPU limit, its
    /// memory limit, and no swap.
    pub fn for_container(c: &Container) -> Self {
        let r = &c.resources;
        let request = positive(&r.requests, CPU, true).or(positive(&r.limits, CPU, true));
        ResourceConfig {
            cpu_shares: milli_cpu_to_shares(request.unwrap_or(0)),
            cpu_quota_us: positive(&r.limits, CPU, true).and_then(milli_cpu_to_quota),
            memory_bytes: positive(&r.limits, MEMORY, false),
            no_swap: true,
        }
    }
}

/// How the agent picks cgroups (`--cgroups`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CgroupMode {
    /// Each controller where the host has it: cgroup v2, else cgroup v1, else none.
    #[default]
    Auto,
    /// Only cgroup v2; the agent does not start unless v2 has the memory and cpu controllers.
    V2,
    /// Only the cgroup v1 hierarchies; the agent does not start unless the memory and cpu
    /// hierarchies are writable.
    V1,
    /// No cgroups: the agent enforces memory limits itself and CPU is not limited.
    None,
}

impl CgroupMode {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            CgroupMode::Auto => "auto",
            CgroupMode::V2 => "v2",
            CgroupMode::V1 => "v1",
            CgroupMode::None => "none",
        }
    }
}

/// A cgroup version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// One hierarchy per controller (or group of controllers).
    V1,
    /// The unified hierarchy.
    V2,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        })
    }
}

/// What went wrong with cgroups.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// `--cgroups v1` or `v2` on a host where that version cannot hold both controllers.
    #[error("--cgroups {mode}: {reasons}")]
    Unavailable {
        /// The mode asked for.
        mode: &'static str,
        /// Why, per controller.
        reasons: String,
    },
    /// A cgroup folder or file could not be written.
    #[error("writing {path}")]
    Write {
        /// The folder or file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
}

fn write(path: PathBuf, value: &str) -> Result<(), CgroupError> {
    std::fs::write(&path, value).map_err(|source| CgroupError::Write { path, source })
}

fn create_dir(path: &Path) -> Result<(), CgroupError> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(CgroupError::Write {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The cgroup filesystems of the host, from `/proc/self/mountinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mounts {
    /// Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a
    /// hybrid host).
    pub v2: Option<PathBuf>,
    /// Where each cgroup v1 controller's hierarchy is mounted (`cpu` →
    /// `/sys/fs/cgroup/cpu,cpuacct`).
    pub v1: BTreeMap<String, PathBuf>,
}

impl Mounts {
    /// Reads the mounts of this process.
    pub fn read() -> Mounts {
        Mounts::parse(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
    }

    /// Parses a mountinfo text: `id parent dev root mountpoint options [tags] - fstype
    /// source superoptions`, where a v1 mount's super options name its controllers.
    pub fn parse(mountinfo: &str) -> Mounts {
        let mut mounts = Mounts::default();
        for line in mountinfo.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let Some(point) = left.split_whitespace().nth(4) else {
                continue;
            };
            let mut right = right.split_whitespace();
            let (fstype, options) = (right.next(), right.nth(1).unwrap_or(""));
            match fstype {
                Some("cgroup2") if mounts.v2.is_none() => mounts.v2 = Some(point.into()),
                Some("cgroup") => {
                    for controller in options.split(',') {
                        mounts
                            .v1
                            .entry(controller.to_string())
                            .or_insert_with(|| point.into());
                    }
                }
                _ => {}
            }
        }
        mounts
    }

    /// Where each controller could go under `mode`, best first: the v2 mount when its root
    /// offers the controller (`v2_controllers` is its `cgroup.controllers`), then the
    /// controller's v1 hierarchy. Empty under [`CgroupMode::None`].
    pub fn candidates(
        &self,
        mode: CgroupMode,
        controller: &str,
        v2_controllers: &str,
    ) -> Vec<(Version, PathBuf)> {
        let mut out = Vec::new();
        if matches!(mode, CgroupMode::Auto | CgroupMode::V2) {
            if let Some(v2) = &self.v2 {
                if v2_controllers.split_whitespace().any(|c| c == controller) {
                    out.push((Version::V2, v2.clone()));
                }
            }
        }
        if matches!(mode, CgroupMode::Auto | CgroupMode::V1) {
            if let Some(v1) = self.v1.get(controller) {
                out.push((Version::V1, v1.clone()));
            }
        }
        out
    }
}

/// One controller the agent drives: its hierarchy and the node's folder there.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Hierarchy {
    version: Version,
    /// `<mount>/berth/<node folder>`.
    node_dir: PathBuf,
}

/// The hierarchies this agent puts pods in, found once at start.
#[derive(Debug)]
pub struct Cgroups {
    memory: Option<Hierarchy>,
    cpu: Option<Hierarchy>,
    /// Why a controller has no hierarchy, for the start-up log.
    reasons: BTreeMap<&'static str, String>,
}

impl Cgroups {
    /// Finds, for the memory and cpu controllers, the hierarchy to use under `mode`, creates
    /// the node's folder there ([`node_folder_name`], with the controller enabled for its
    /// children on v2), and removes what an earlier agent of this node and root folder left
    /// behind.
    ///
    /// A controller that no hierarchy can hold is left out (see [`Cgroups::reason`]); under
    /// `--cgroups v1` or `v2` that is an error.
    pub fn detect(mode: CgroupMode, node: &str, root_dir: &Path) -> Result<Cgroups, CgroupError> {
        let node = node_folder_name(node, root_dir);
        let mounts = Mounts::read();
        let v2_controllers = mounts
            .v2
            .as_ref()
            .and_then(|m| std::fs::read_to_string(m.join("cgroup.controllers")).ok())
            .unwrap_or_default();
        let mut cgroups = Cgroups {
            memory: None,
            cpu: None,
            reasons: BTreeMap::new(),
        };
        for controller in [MEMORY, CPU] {
            let mut tried = Vec::new();
            let mut found = None;
            for (version, mount) in mounts.candidates(mode, controller, &v2_controllers) {
                match set_up(version, &mount, controller, &node) {
                    Ok(node_dir) => {
                        found = Some(Hierarchy { version, node_dir });
                        break;
                    }
                    Err(e) => tried.push(format!("{version}: {}", crate::error::error_chain(&e))),
                }
            }
            if found.is_none() {
                let reason = if mode == CgroupMode::None {
                    "--cgroups none".to_string()
                } else if tried.is_empty() {
                    let scope = match mode {
                        CgroupMode::V2 => "cgroup v2 hierarchy",
                        CgroupMode::V1 => "cgroup v1 hierarchy",
                        _ => "cgroup hierarchy",
                    };
                    format!("no {scope} offers the {controller} controller")
                } else {
                    tried.join("; ")
                };
                cgroups.reasons.insert(controller, reason);
            }
            match controller {
                MEMORY => cgroups.memory = found,
                _ => cgroups.cpu = found,
            }
        }
        if matches!(mode, CgroupMode::V1 | CgroupMode::V2) && !cgroups.reasons.is_empty() {
            let reasons = cgroups
                .reasons
                .iter()
                .map(|(c, r)| format!("{c}: {r}"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(CgroupError::Unavailable {
                mode: mode.as_str(),
                reasons,
            });
        }
        for dir in cgroups.node_dirs() {
            remove_stale(&dir);
        }
        Ok(cgroups)
    }

    /// The version that holds the memory controller, if any.
    pub fn memory_version(&self) -> Option<Version> {
        self.memory.as_ref().map(|h| h.version)
    }

    /// The version that holds the cpu controller, if any.
    pub fn cpu_version(&self) -> Option<Version> {
        self.cpu.as_ref().map(|h| h.version)
    }

    /// Why `controller` (`memory`, `cpu`) has no hierarchy; `None` when it has one.
    pub fn reason(&self, controller: &str) -> Option<&str> {
        self.reasons.get(controller).map(String::as_str)
    }

    /// The node folders, one per hierarchy in use, sorted.
    fn node_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = [&self.memory, &self.cpu]
            .into_iter()
            .flatten()
            .map(|h| h.node_dir.clone())
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// The folders of a cgroup named `name` under the node folders: one per hierarchy,
    /// each with the controllers it holds.
    fn group(&self, name: &str) -> Cgroup {
        let mut dirs: Vec<Dir> = Vec::new();
        for (h, is_memory) in [(&self.memory, true), (&self.cpu, false)] {
            let Some(h) = h else { continue };
            let path = h.node_dir.join(name);
            let dir = match dirs.iter_mut().find(|d| d.path == path) {
                Some(d) => d,
                None => {
                    dirs.push(Dir {
                        version: h.version,
                        path,
                        memory: false,
                        cpu: false,
                    });
                    dirs.last_mut().expect("just pushed")
                }
            };
            if is_memory {
                dir.memory = true;
            } else {
                dir.cpu = true;
            }
        }
        Cgroup { dirs }
    }

    /// Creates the cgroups of a pod: `pod<uid>` with the pod's settings
    /// ([`ResourceConfig::for_pod`]) and, under it, one `ctr-<name>` per app container with
    /// its own ([`ResourceConfig::for_container`]). `None` when no controller is in use.
    /// On failure, whatever was created is removed.
    pub fn create_pod(&self, pod: &Pod) -> Result<Option<PodCgroup>, CgroupError> {
        let group = self.group(&format!("pod{}", pod.metadata.uid));
        if group.dirs.is_empty() {
            return Ok(None);
        }
        let mut created = PodCgroup {
            pod: group,
            containers: BTreeMap::new(),
        };
        let result = (|| {
            created.pod.create(&ResourceConfig::for_pod(pod))?;
            for dir in created.pod.dirs.iter().filter(|d| d.version == Version::V2) {
                write(dir.path.join("cgroup.subtree_control"), &dir.enable_line())?;
            }
            for c in &pod.spec.containers {
                let group = created.pod.child(&format!("ctr-{}", c.name));
                created.containers.insert(c.name.clone(), group.clone());
                group.create(&ResourceConfig::for_container(c))?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(Some(created)),
            Err(e) => {
                created.remove();
                Err(e)
            }
        }
    }
}

impl Drop for Cgroups {
    /// Removes the node folders (their pods are stopped by then; anything left is killed)
    /// and the `berth` folders when no other node uses them.
    fn drop(&mut self) {
        for dir in self.node_dirs() {
            remove_tree(&dir);
            if let Some(parent) = dir.parent() {
                let _ = std::fs::remove_dir(parent);
            }
        }
    }
}

/// The name of a node's folder under `berth`: `node-<node>-<key>`, `<key>` being the FNV-1a
/// hash of the agent's root folder (canonical where it exists) in 8 hex digits.
pub fn node_folder_name(node: &str, root_dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let root = std::fs::canonicalize(root_dir).unwrap_or_else(|_| root_dir.to_path_buf());
    let key = root
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
        });
    format!("node-{node}-{key:08x}")
}

/// Creates `<mount>/berth/<node folder>` with `controller` usable by its children, and
/// returns the node folder.
fn set_up(
    version: Version,
    mount: &Path,
    controller: &str,
    node_folder: &str,
) -> Result<PathBuf, CgroupError> {
    let parent = mount.join(PARENT);
    let node_dir = parent.join(node_folder);
    create_dir(&parent)?;
    create_dir(&node_dir)?;
    if version == Version::V2 {
        // Each level hands the controller to the next; the root may hold processes, the
        // folders below never do (cgroup v2's no-internal-processes rule).
        for dir in [mount, parent.as_path(), node_dir.as_path()] {
            write(
                dir.join("cgroup.subtree_control"),
                &format!("+{controller}"),
            )?;
        }
    }
    Ok(node_dir)
}

/// Removes, after killing their processes, the pod cgroups under a node folder that an
/// earlier agent of the node left behind.
fn remove_stale(node_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(node_dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            let path = entry.path();
            info!(cgroup = %path.display(), "removing a cgroup left by an earlier agent");
            remove_tree(&path);
        }
    }
}

/// Kills every process in the cgroup folder `dir` and the folders below it, then removes
/// them, deepest first; waits up to [`EMPTY_WAIT`] for killed processes to leave. Returns
/// whether `dir` is gone.
fn remove_tree(dir: &Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    let deadline = Instant::now() + EMPTY_WAIT;
    loop {
        kill_all(dir);
        match std::fs::remove_dir(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(e) if Instant::now() >= deadline => {
                warn!(cgroup = %dir.display(), error = %e, "cannot remove the cgroup");
                return false;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The processes of one cgroup folder (`cgroup.procs`).
fn procs(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Sends SIGKILL to every process of one cgroup folder (through `cgroup.kill` where the
/// kernel has it), never to init or the agent itself.
fn kill_all(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    let me = std::process::id();
    for pid in procs(dir) {
        if pid <= 1 || pid == me {
            continue;
        }
        if let Ok(pid) = libc::pid_t::try_from(pid) {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Reads one number from a cgroup file.
fn read_number(path: &Path) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The value of the `key value` line `key` of a cgroup file (`memory.stat`,
/// `memory.events`, `memory.oom_control`).
fn read_key(path: &Path, key: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// One folder of a cgroup, in one hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Dir {
    version: Version,
    path: PathBuf,
    /// Whether the memory controller of this hierarchy is the one in use.
    memory: bool,
    /// Whether the cpu controller of this hierarchy is the one in use.
    cpu: bool,
}

impl Dir {
    /// The `cgroup.subtree_control` line enabling this folder's controllers for children.
    fn enable_line(&self) -> String {
        let mut line = Vec::new();
        if self.memory {
            line.push("+memory");
        }
        if self.cpu {
            line.push("+cpu");
        }
        line.join(" ")
    }

    /// Writes `config` into this folder's files, in the order the kernel accepts.
    fn apply(&self, config: &ResourceConfig) -> Result<(), CgroupError> {
        let p = |file: &str| self.path.join(file);
        match (self.version, self.memory) {
            (Version::V1, true) => {
                if let Some(bytes) = config.memory_bytes {
                    write(p("memory.limit_in_bytes"), &bytes.to_string())?;
                    // Set after the memory limit: memory+swap may not be below it.
                    let memsw = p("memory.memsw.limit_in_bytes");
                    if config.no_swap && memsw.exists() {
                        write(memsw, &bytes.to_string())?;
                    }
                }
            }
            (Version::V2, true) => {
                let max = config.memory_bytes.map_or("max".into(), |b| b.to_string());
                write(p("memory.max"), &max)?;
                if config.no_swap {
                    // A kernel without swap accounting has no such file, and no swap to
                    // turn off.
                    if let Err(e) = std::fs::write(p("memory.swap.max"), "0") {
                        debug!(cgroup = %self.path.display(), error = %e, "memory.swap.max not set");
                    }
                }
            }
            _ => {}
        }
        match (self.version, self.cpu) {
            (Version::V1, true) => {
                write(p("cpu.shares"), &config.cpu_shares.to_string())?;
                write(p("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                let quota = config.cpu_quota_us.unwrap_or(-1);
                write(p("cpu.cfs_quota_us"), &quota.to_string())?;
            }
            (Version::V2, true) => {
                write(
                    p("cpu.weight"),
                    &shares_to_weight(config.cpu_shares).to_string(),
                )?;
                let quota = config.cpu_quota_us.map_or("max".into(), |q| q.to_string());
                write(p("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// OOM counters of a container cgroup, read before and after it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OomCounters {
    /// Processes the kernel OOM-killed in the group (v2 `memory.events` and v1
    /// `memory.oom_control` `oom_kill`); `None` where the kernel does not count them.
    pub kills: Option<i64>,
    /// Times the group hit its limit (v1 `memory.failcnt`).
    pub failcnt: i64,
    /// Whether the group is out of memory now (v1 `under_oom`).
    pub under_oom: bool,
}

impl OomCounters {
    /// Whether the container that exited with `exit_code` between the readings `before`
    /// and `self` was OOM-killed: the kernel's kill count rose or, where the kernel does not
    /// count kills, it was killed by SIGKILL while at its limit.
    pub fn oom_killed_since(&self, before: &OomCounters, exit_code: i32) -> bool {
        match (before.kills, self.kills) {
            (Some(b), Some(a)) => a > b,
            _ => exit_code == OOM_EXIT_CODE && (self.failcnt > before.failcnt || self.under_oom),
        }
    }
}

/// A cgroup in every hierarchy in use: one folder on a cgroup v2 host, up to two (memory,
/// cpu) on a v1 or hybrid host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    dirs: Vec<Dir>,
}

impl Cgroup {
    /// The cgroup `name` under this one.
    fn child(&self, name: &str) -> Cgroup {
        Cgroup {
            dirs: self
                .dirs
                .iter()
                .map(|d| Dir {
                    path: d.path.join(name),
                    ..d.clone()
                })
                .collect(),
        }
    }

    /// Creates the folders and writes `config`.
    fn create(&self, config: &ResourceConfig) -> Result<(), CgroupError> {
        for dir in &self.dirs {
            create_dir(&dir.path)?;
            dir.apply(config)?;
        }
        Ok(())
    }

    /// The folder holding the memory controller.
    fn memory_dir(&self) -> Option<&Dir> {
        self.dirs.iter().find(|d| d.memory)
    }

    /// The folders, one per hierarchy.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.dirs.iter().map(|d| d.path.as_path())
    }

    /// The `cgroup.procs` files a process writes itself into to join this cgroup.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.paths().map(|p| p.join("cgroup.procs")).collect()
    }

    /// The processes in the cgroup, sorted.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.paths().flat_map(procs).collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Sends SIGKILL to every process in the cgroup.
    pub fn kill_all(&self) {
        for path in self.paths() {
            kill_all(path);
        }
    }

    /// The OOM counters now.
    pub fn oom_counters(&self) -> OomCounters {
        let Some(dir) = self.memory_dir() else {
            return OomCounters::default();
        };
        match dir.version {
            Version::V2 => OomCounters {
                kills: read_key(&dir.path.join("memory.events"), "oom_kill"),
                ..OomCounters::default()
            },
            Version::V1 => {
                let control = dir.path.join("memory.oom_control");
                OomCounters {
                    kills: read_key(&control, "oom_kill"),
                    failcnt: read_number(&dir.path.join("memory.failcnt")).unwrap_or(0),
                    under_oom: read_key(&control, "under_oom").is_some_and(|v| v != 0),
                }
            }
        }
    }

    /// The memory working set, as kubelet computes it: usage (v2 `memory.current`, v1
    /// `memory.usage_in_bytes`) minus inactive file pages. `None` without a memory
    /// controller or once the group is gone.
    pub fn working_set(&self) -> Option<i64> {
        let dir = self.memory_dir()?;
        let (usage, inactive) = match dir.version {
            Version::V2 => ("memory.current", "inactive_file"),
            Version::V1 => ("memory.usage_in_bytes", "total_inactive_file"),
        };
        let usage = read_number(&dir.path.join(usage))?;
        let inactive = read_key(&dir.path.join("memory.stat"), inactive).unwrap_or(0);
        Some((usage - inactive).max(0))
    }
}

/// The cgroups of one pod: the pod's and one per app container under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodCgroup {
    /// The pod's cgroup.
    pub pod: Cgroup,
    containers: BTreeMap<String, Cgroup>,
}

impl PodCgroup {
    /// The cgroup of an app container.
    pub fn container(&self, name: &str) -> Option<&Cgroup> {
        self.containers.get(name)
    }

    /// Kills what still runs in the pod's cgroups and removes them, containers first;
    /// waits a little for killed processes to go (so call it off the async threads).
    /// Idempotent. Returns whether everything is gone.
    pub fn remove(&self) -> bool {
        // Every folder is tried, whatever happened to the one before.
        let removed: Vec<bool> = self.pod.paths().map(remove_tree).collect();
        removed.into_iter().all(|ok| ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{container_with_limits, PodBuilder};

    #[test]
    fn cpu_conversions_like_kubelet() {
        // (milliCPU, shares, quota µs, v2 weight)
        let cases = [
            (0, 2, None, 1),
            (1, 2, Some(1_000), 1),
            (5, 5, Some(1_000), 1),
            (10, 10, Some(1_000), 1),
            (100, 102, Some(10_000), 4),
            (250, 256, Some(25_000), 10),
            (500, 512, Some(50_000), 20),
            (1000, 1024, Some(100_000), 39),
            (1500, 1536, Some(150_000), 59),
            (4000, 4096, Some(400_000), 157),
            (256_000, 262_144, Some(25_600_000), 10_000),
            (1_000_000, 262_144, Some(100_000_000), 10_000),
        ];
        for (milli, shares, quota, weight) in cases {
            assert_eq!(milli_cpu_to_shares(milli), shares, "shares of {milli}m");
            assert_eq!(milli_cpu_to_quota(milli), quota, "quota of {milli}m");
            assert_eq!(
                shares_to_weight(shares),
                weight,
                "weight of {shares} shares"
            );
        }
        // The endpoints of runc's conversion.
        assert_eq!(shares_to_weight(MIN_SHARES), 1);
        assert_eq!(shares_to_weight(MAX_SHARES), 10_000);
    }

    #[test]
    fn pod_and_container_settings_like_kubelet() {
        let c = container_with_limits;
        let config = |shares, quota: Option<i64>, memory: Option<i64>, no_swap| ResourceConfig {
            cpu_shares: shares,
            cpu_quota_us: quota,
            memory_bytes: memory,
            no_swap,
        };
        let mib = |n: i64| Some(n << 20);
        // (case, pod, want pod config, want config of each container)
        let cases = [
            (
                "best effort: minimum shares, nothing else",
                PodBuilder::new("p").container(c("a", &[], &[])),
                config(2, None, None, false),
                vec![config(2, None, None, true)],
            ),
            (
                "guaranteed: shares, quota and memory from the sums",
                PodBuilder::new("p")
                    .container(c(
                        "a",
                        &[("cpu", "500m"), ("memory", "64Mi")],
                        &[("cpu", "500m"), ("memory", "64Mi")],
                    ))
                    .container(c(
                        "b",
                        &[("cpu", "250m"), ("memory", "32Mi")],
                        &[("cpu", "250m"), ("memory", "32Mi")],
                    )),
                config(768, Some(75_000), mib(96), false),
                vec![
                    config(512, Some(50_000), mib(64), true),
                    config(256, Some(25_000), mib(32), true),
                ],
            ),
            (
                "burstable: a limit only when every container has one",
                PodBuilder::new("p")
                    .container(c(
                        "a",
                        &[("cpu", "100m")],
                        &[("cpu", "1"), ("memory", "64Mi")],
                    ))
                    .container(c("b", &[("cpu", "100m")], &[("memory", "32Mi")])),
                config(204, None, mib(96), false),
                vec![
                    config(102, Some(100_000), mib(64), true),
                    config(102, None, mib(32), true),
                ],
            ),
            (
                "a limit without a request stands in for it",
                PodBuilder::new("p").container(c("a", &[], &[("cpu", "2")])),
                config(2048, Some(200_000), None, false),
                vec![config(2048, Some(200_000), None, true)],
            ),
            (
                "an init container without a limit leaves the pod unlimited",
                PodBuilder::new("p")
                    .container(c("a", &[], &[("memory", "64Mi")]))
                    .init_container(c("i", &[], &[])),
                config(2, None, None, false),
                vec![config(2, None, mib(64), true)],
            ),
            (
                "tiny limits get the minimum quota",
                PodBuilder::new("p").container(c("a", &[], &[("cpu", "1m")])),
                config(2, Some(1_000), None, false),
                vec![config(2, Some(1_000), None, true)],
            ),
        ];
        for (name, pod, want_pod, want_containers) in cases {
            let pod = pod.build();
            assert_eq!(ResourceConfig::for_pod(&pod), want_pod, "{name}: pod");
            let got: Vec<ResourceConfig> = pod
                .spec
                .containers
                .iter()
                .map(ResourceConfig::for_container)
                .collect();
            assert_eq!(got, want_containers, "{name}: containers");
        }
    }

    const V1_HOST: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
";
    const HYBRID_HOST: &str = "\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const V2_HOST: &str = "\
26 1 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
";

    #[test]
    fn each_controller_goes_where_the_host_has_it() {
        let v1 = |p: &str| (Version::V1, PathBuf::from(p));
        let v2 = |p: &str| (Version::V2, PathBuf::from(p));
        // (case, mountinfo, v2 root controllers, mode, want memory, want cpu)
        let cases = [
            (
                "v1 host, cpu mounted with cpuacct",
                V1_HOST,
                "",
                CgroupMode::Auto,
                vec![v1("/sys/fs/cgroup/memory")],
                vec![v1("/sys/fs/cgroup/cpu,cpuacct")],
            ),
            (
                "hybrid host whose v2 has no controllers",
                HYBRID_HOST,
                "hugetlb",
                CgroupMode::Auto,
                vec![v1("/sys/fs/cgroup/memory")],
                vec![v1("/sys/fs/cgroup/cpu")],
            ),
            (
                "hybrid host with memory on v2: v2 first, v1 as fallback",
                HYBRID_HOST,
                "memory pids",
                CgroupMode::Auto,
                vec![v2("/sys/fs/cgroup/unified"), v1("/sys/fs/cgroup/memory")],
                vec![v1("/sys/fs/cgroup/cpu")],
            ),
            (
                "v2 host",
                V2_HOST,
                "cpuset cpu io memory pids",
                CgroupMode::Auto,
                vec![v2("/sys/fs/cgroup")],
                vec![v2("/sys/fs/cgroup")],
            ),
            (
                "v2 host forced to v1",
                V2_HOST,
                "cpu memory",
                CgroupMode::V1,
                vec![],
                vec![],
            ),
            (
                "hybrid host forced to v2",
                HYBRID_HOST,
                "memory",
                CgroupMode::V2,
                vec![v2("/sys/fs/cgroup/unified")],
                vec![],
            ),
            ("none", V1_HOST, "", CgroupMode::None, vec![], vec![]),
        ];
        for (name, mountinfo, controllers, mode, memory, cpu) in cases {
            let mounts = Mounts::parse(mountinfo);
            assert_eq!(
                mounts.candidates(mode, MEMORY, controllers),
                memory,
                "{name}: memory"
            );
            assert_eq!(
                mounts.candidates(mode, CPU, controllers),
                cpu,
                "{name}: cpu"
            );
        }
    }

    #[test]
    fn oom_kills_from_the_counters() {
        let counters = |kills, failcnt, under_oom| OomCounters {
            kills,
            failcnt,
            under_oom,
        };
        // (case, before, after, exit code, OOM-killed)
        let cases = [
            (
                "kill count rose",
                counters(Some(0), 0, false),
                counters(Some(1), 3, false),
                137,
                true,
            ),
            (
                "kill count rose, shell exited 1",
                counters(Some(1), 0, false),
                counters(Some(2), 0, false),
                1,
                true,
            ),
            (
                "kill count still",
                counters(Some(1), 0, false),
                counters(Some(1), 5, false),
                137,
                false,
            ),
            (
                "no count: SIGKILL at the limit",
                counters(None, 2, false),
                counters(None, 3, false),
                137,
                true,
            ),
            (
                "no count: SIGKILL while under OOM",
                counters(None, 2, false),
                counters(None, 2, true),
                137,
                true,
            ),
            (
                "no count: SIGKILL below the limit",
                counters(None, 2, false),
                counters(None, 2, false),
                137,
                false,
            ),
            (
                "no count: exit at the limit",
                counters(None, 2, false),
                counters(None, 9, false),
                1,
                false,
            ),
        ];
        for (name, before, after, code, want) in cases {
            assert_eq!(after.oom_killed_since(&before, code), want, "{name}");
        }
    }
}
