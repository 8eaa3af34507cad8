//! Resource usage, sampled every housekeeping interval: each pod's (from its runtime) and
//! the node's eviction signals (from the machine, or computed for simulated nodes). The
//! samples feed the eviction manager and go to the scheduler for `berth top`.

pub mod procfs;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use berth_proto::model::Time;
use tracing::warn;

use crate::eviction::{Observation, Signal};

/// What one container uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerUsage {
    /// Container name.
    pub name: String,
    /// CPU, in millicores (averaged since the last sample).
    pub cpu_millis: i64,
    /// Memory working set, in bytes.
    pub memory_bytes: i64,
    /// Disk written under the pod's folder that belongs to this container (its log), bytes.
    pub disk_bytes: i64,
}

/// What one pod uses: the sum of its containers, and each of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodUsage {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub name: String,
    /// uid of the pod.
    pub uid: String,
    /// CPU, in millicores.
    pub cpu_millis: i64,
    /// Memory working set, in bytes.
    pub memory_bytes: i64,
    /// Bytes the pod keeps on the node's filesystem (its folder: logs, files written).
    pub disk_bytes: i64,
    /// Processes the pod runs.
    pub pids: i64,
    /// Per container, in spec order.
    pub containers: Vec<ContainerUsage>,
}

/// What the node as a whole uses and has left, at one sample.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeUsage {
    /// When the sample was taken.
    pub timestamp: Time,
    /// CPU used on the node, in millicores.
    pub cpu_millis: i64,
    /// Memory in use on the node (capacity minus available), bytes.
    pub memory_bytes: i64,
    /// `memory.available`, bytes.
    pub memory_available: i64,
    /// The memory `memory.available` is a part of, bytes.
    pub memory_capacity: i64,
    /// `nodefs.available`, bytes.
    pub nodefs_available: i64,
    /// Size of the node filesystem, bytes.
    pub nodefs_capacity: i64,
    /// `pid.available`.
    pub pid_available: i64,
    /// The kernel's pid limit.
    pub pid_capacity: i64,
    /// Each pod.
    pub pods: Vec<PodUsage>,
}

impl NodeUsage {
    /// The eviction signals of this sample.
    pub fn observations(&self) -> Vec<Observation> {
        vec![
            Observation {
                signal: Signal::MemoryAvailable,
                available: self.memory_available,
                capacity: self.memory_capacity,
            },
            Observation {
                signal: Signal::NodeFsAvailable,
                available: self.nodefs_available,
                capacity: self.nodefs_capacity,
            },
            Observation {
                signal: Signal::PidAvailable,
                available: self.pid_available,
                capacity: self.pid_capacity,
            },
        ]
    }
}

/// Pid capacity of a simulated node (Linux's default `pid_max`).
pub const SIM_PID_CAPACITY: i64 = 32_768;

/// Measures the node's signals.
#[derive(Debug)]
pub enum NodeSampler {
    /// A simulated node: memory available is the node's memory capacity minus what its
    /// pods declare they use; the filesystem is `nodefs_capacity` minus the pods' declared
    /// disk use; pids are [`SIM_PID_CAPACITY`] minus one per container.
    Sim {
        /// The node's memory capacity, bytes.
        memory_capacity: i64,
        /// The simulated filesystem's size, bytes.
        nodefs_capacity: i64,
    },
    /// This machine: `MemAvailable` and `MemTotal` of /proc/meminfo, `statvfs` of the root
    /// folder, `pid_max` minus the processes that run, and /proc/stat for CPU.
    Machine {
        /// The folder whose filesystem is the nodefs.
        root_dir: PathBuf,
        /// The last CPU reading (when, busy ticks), for a rate.
        last_cpu: Mutex<Option<(Instant, u64)>>,
    },
}

impl NodeSampler {
    /// A sampler of this machine, for the filesystem holding `root_dir`.
    pub fn machine(root_dir: PathBuf) -> Self {
        NodeSampler::Machine {
            root_dir,
            last_cpu: Mutex::new(None),
        }
    }

    /// The node's usage, given its pods' usage.
    pub fn sample(&self, pods: Vec<PodUsage>) -> NodeUsage {
        let timestamp = Time::now();
        match self {
            NodeSampler::Sim {
                memory_capacity,
                nodefs_capacity,
            } => {
                let memory: i64 = pods.iter().map(|p| p.memory_bytes).sum();
                let disk: i64 = pods.iter().map(|p| p.disk_bytes).sum();
                let pids: i64 = pods.iter().map(|p| p.pids).sum();
                NodeUsage {
                    timestamp,
                    cpu_millis: pods.iter().map(|p| p.cpu_millis).sum(),
                    memory_bytes: memory,
                    memory_available: (memory_capacity - memory).max(0),
                    memory_capacity: *memory_capacity,
                    nodefs_available: (nodefs_capacity - disk).max(0),
                    nodefs_capacity: *nodefs_capacity,
                    pid_available: (SIM_PID_CAPACITY - pids).max(0),
                    pid_capacity: SIM_PID_CAPACITY,
                    pods,
                }
            }
            NodeSampler::Machine { root_dir, last_cpu } => {
                let memory = procfs::read_meminfo().unwrap_or_else(|e| {
                    warn!(error = %e, "cannot read /proc/meminfo");
                    procfs::MemInfo::default()
                });
                let (nodefs_available, nodefs_capacity) = procfs::statvfs(root_dir)
                    .unwrap_or_else(|e| {
                        warn!(dir = %root_dir.display(), error = %e, "cannot stat the root folder's filesystem");
                        (0, 0)
                    });
                let pid_capacity = procfs::pid_max().unwrap_or(SIM_PID_CAPACITY);
                let pid_available = (pid_capacity - procfs::process_count()).max(0);
                let cpu_millis = match procfs::busy_ticks() {
                    Some(ticks) => {
                        let now = Instant::now();
                        let mut last = last_cpu.lock().unwrap_or_else(|p| p.into_inner());
                        let rate = last.map_or(0, |(then, before)| {
                            procfs::millicores(ticks.saturating_sub(before), now - then)
                        });
                        *last = Some((now, ticks));
                        rate
                    }
                    None => 0,
                };
                NodeUsage {
                    timestamp,
                    cpu_millis,
                    memory_bytes: (memory.total - memory.available).max(0),
                    memory_available: memory.available,
                    memory_capacity: memory.total,
                    nodefs_available,
                    nodefs_capacity,
                    pid_available,
                    pid_capacity,
                    pods,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_node_subtracts_declared_usage() {
        struct Case {
            name: &'static str,
            pods_memory: Vec<i64>,
            want_available: i64,
        }
        let cases = [
            Case {
                name: "no pods",
                pods_memory: vec![],
                want_available: 1000,
            },
            Case {
                name: "two pods",
                pods_memory: vec![300, 200],
                want_available: 500,
            },
            Case {
                name: "overcommitted stops at zero",
                pods_memory: vec![900, 900],
                want_available: 0,
            },
        ];
        for case in cases {
            let sampler = NodeSampler::Sim {
                memory_capacity: 1000,
                nodefs_capacity: 10_000,
            };
            let pods = case
                .pods_memory
                .iter()
                .map(|m| PodUsage {
                    memory_bytes: *m,
                    pids: 1,
                    ..PodUsage::default()
                })
                .collect();
            let usage = sampler.sample(pods);
            assert_eq!(usage.memory_available, case.want_available, "{}", case.name);
            assert_eq!(usage.memory_capacity, 1000, "{}", case.name);
            assert_eq!(usage.nodefs_available, 10_000, "{}", case.name);
            assert_eq!(
                usage.pid_available,
                SIM_PID_CAPACITY - case.pods_memory.len() as i64,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn machine_sampler_reads_this_machine() {
        let dir = std::env::temp_dir();
        let usage = NodeSampler::machine(dir).sample(Vec::new());
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(usage.memory_capacity > 0);
            assert!(usage.memory_available <= usage.memory_capacity);
            assert!(usage.nodefs_capacity > 0);
            assert!(usage.pid_available > 0 && usage.pid_available < usage.pid_capacity);
        }
    }
}
