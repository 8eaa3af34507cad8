//! Per-pod cgroups (v2) for the process runtime, where the machine lets the agent create
//! them: each pod gets `<base>/pod-<uid>` with `memory.max` from its limits, so that the
//! kernel OOM-kills a pod over its limit, and the pod's memory is read from the group.

use std::path::{Path, PathBuf};

use berth_proto::model::Pod;

/// Where cgroup v2 is mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The folder under which the agent creates pod cgroups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroups {
    base: PathBuf,
}

impl Cgroups {
    /// Sets up `<cgroup root>/berth` with the memory and pids controllers enabled for its
    /// children; the error says why this machine does not allow it (no cgroup v2, no
    /// memory controller, no write access).
    pub fn detect() -> Result<Cgroups, String> {
        let root = Path::new(CGROUP_ROOT);
        let controllers = std::fs::read_to_string(root.join("cgroup.controllers"))
            .map_err(|e| format!("no cgroup v2 at {CGROUP_ROOT} ({e})"))?;
        if !controllers.split_whitespace().any(|c| c == "memory") {
            return Err("the memory controller is not available".into());
        }
        let base = root.join("berth");
        match std::fs::create_dir(&base) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {} ({e})", base.display())),
        }
        for dir in [root, base.as_path()] {
            std::fs::write(dir.join("cgroup.subtree_control"), "+memory +pids").map_err(|e| {
                format!(
                    "cannot enable the memory controller in {} ({e})",
                    dir.display()
                )
            })?;
        }
        Ok(Cgroups { base })
    }

    /// Creates the cgroup of a pod and sets its memory limit: the sum of its containers'
    /// memory limits when every container has one (as kubelet sizes a pod cgroup), else
    /// none.
    pub fn create_pod(&self, pod: &Pod) -> std::io::Result<PathBuf> {
        let dir = self.base.join(format!("pod-{}", pod.metadata.uid));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let limits: Option<Vec<i64>> = pod
            .spec
            .containers
            .iter()
            .map(|c| c.resources.limits.get("memory").map(|q| q.value()))
            .collect();
        let max = match limits {
            Some(l) if !l.is_empty() => l.iter().sum::<i64>().to_string(),
            _ => "max".to_string(),
        };
        std::fs::write(dir.join("memory.max"), max)?;
        // No swap, so that the limit is a limit (a kernel without swap accounting has no
        // such file, and then there is no swap to turn off).
        if let Err(e) = std::fs::write(dir.join("memory.swap.max"), "0") {
            tracing::debug!(cgroup = %dir.display(), error = %e, "memory.swap.max not set");
        }
        Ok(dir)
    }
}

/// Moves a process into a pod cgroup.
pub fn add_process(group: &Path, pid: u32) -> std::io::Result<()> {
    std::fs::write(group.join("cgroup.procs"), pid.to_string())
}

/// How many times the kernel OOM-killed a process of the group.
pub fn oom_kills(group: &Path) -> u64 {
    std::fs::read_to_string(group.join("memory.events"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("oom_kill "))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The group's memory working set: `memory.current` minus inactive file pages, as
/// kubelet computes it.
pub fn working_set(group: &Path) -> Option<i64> {
    let current: i64 = std::fs::read_to_string(group.join("memory.current"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let inactive_file: i64 = std::fs::read_to_string(group.join("memory.stat"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("inactive_file "))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0);
    Some((current - inactive_file).max(0))
}

/// Removes a pod cgroup once its processes are gone; a failure is logged and otherwise
/// ignored (the kernel refuses while a process lingers, and the folder is then left behind).
pub fn remove(group: &Path) {
    if let Err(e) = std::fs::remove_dir(group) {
        tracing::warn!(cgroup = %group.display(), error = %e, "removing the pod cgroup failed");
    }
}
