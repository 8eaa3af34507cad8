//! Well-known names of the Kubernetes API that Berth reads or writes: taint keys, labels,
//! annotations, condition types and statuses, and reasons. Written once here (kube keeps
//! them in `k8s.io/api/core/v1`) so that the scheduler, the agent and the CLI agree.

// Taint keys the node lifecycle controller and the scheduler put on nodes.

/// Taint of a node whose Ready condition is False.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// Taint of a node whose Ready condition is Unknown (its agent stopped reporting).
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// Taint of a cordoned node (`spec.unschedulable`).
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// Taint of a node reporting MemoryPressure.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// Taint of a node reporting DiskPressure.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// Taint of a node reporting PIDPressure.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// Taint of a node reporting NetworkUnavailable.
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

// Labels.

/// A node's hostname label, set by its agent; the per-node topology key.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// A node's zone label.
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
/// A node's operating system label, set by its agent.
pub const LABEL_OS: &str = "kubernetes.io/os";
/// A node's CPU architecture label, set by its agent, in Go's spelling (`amd64`, `arm64`).
pub const LABEL_ARCH: &str = "kubernetes.io/arch";
/// The label every namespace carries with its own name (namespace selectors match on it).
pub const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";

// Annotations Berth defines.

/// On a node: the hash of the credential its agent registered with.
pub const ANNOTATION_NODE_CREDENTIAL: &str = "berth.dev/node-credential";
/// On a pod run by the simulated runtime: the memory it uses (a quantity).
pub const ANNOTATION_SIM_MEMORY_USAGE: &str = "sim.berth.dev/memory-usage";
/// On a pod run by the simulated runtime: the cpu it uses (a quantity).
pub const ANNOTATION_SIM_CPU_USAGE: &str = "sim.berth.dev/cpu-usage";
/// On a pod run by the simulated runtime: the disk it uses (a quantity).
pub const ANNOTATION_SIM_DISK_USAGE: &str = "sim.berth.dev/disk-usage";
/// On a pod run by the simulated runtime: memory growing linearly, `FROM->TO/DURATION`.
pub const ANNOTATION_SIM_MEMORY_USAGE_RAMP: &str = "sim.berth.dev/memory-usage-ramp";
/// On a pod run by the simulated runtime: how long its containers run before they exit
/// (a duration, `30s`); without it they run until stopped.
pub const ANNOTATION_SIM_RUN_DURATION: &str = "sim.berth.dev/run-duration";
/// On a pod run by the simulated runtime: the exit code its containers end with after
/// their run duration (an integer, 0 when left out).
pub const ANNOTATION_SIM_EXIT_CODE: &str = "sim.berth.dev/exit-code";
/// On a pod run by the simulated runtime: the size its node then reports for each of the
/// pod's images (a quantity; default 100Mi).
pub const ANNOTATION_SIM_IMAGE_SIZE: &str = "sim.berth.dev/image-size";

// Condition types.

/// Pod and node condition: the pod serves / the node runs pods.
pub const CONDITION_READY: &str = "Ready";
/// Pod condition: the pod is bound to a node (False with a reason while it waits).
pub const CONDITION_POD_SCHEDULED: &str = "PodScheduled";
/// Pod condition: the pod is about to be terminated by a disruption (preemption, eviction).
pub const CONDITION_DISRUPTION_TARGET: &str = "DisruptionTarget";
/// Pod condition: the init containers have completed.
pub const CONDITION_INITIALIZED: &str = "Initialized";
/// Pod condition: every container is ready.
pub const CONDITION_CONTAINERS_READY: &str = "ContainersReady";
/// Node condition: memory is running low.
pub const CONDITION_MEMORY_PRESSURE: &str = "MemoryPressure";
/// Node condition: disk space is running low.
pub const CONDITION_DISK_PRESSURE: &str = "DiskPressure";
/// Node condition: process IDs are running low.
pub const CONDITION_PID_PRESSURE: &str = "PIDPressure";
/// Node condition: the node's network is not configured.
pub const CONDITION_NETWORK_UNAVAILABLE: &str = "NetworkUnavailable";

// Condition statuses.

/// The condition holds.
pub const STATUS_TRUE: &str = "True";
/// The condition does not hold.
pub const STATUS_FALSE: &str = "False";
/// Whether the condition holds is not known.
pub const STATUS_UNKNOWN: &str = "Unknown";

/// The status string of a boolean condition.
pub fn status_of(holds: bool) -> &'static str {
    if holds {
        STATUS_TRUE
    } else {
        STATUS_FALSE
    }
}

// Reasons.

/// Pod status reason: the kubelet (agent) evicted the pod under node pressure.
pub const REASON_EVICTED: &str = "Evicted";
/// Pod status reason: the pod was preempted to make room for a higher-priority pod.
pub const REASON_PREEMPTED: &str = "Preempted";
/// DisruptionTarget reason: the scheduler preempts the pod.
pub const REASON_PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
/// DisruptionTarget reason: the kubelet (agent) terminates the pod.
pub const REASON_TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";
/// DisruptionTarget reason: the taint eviction controller deletes the pod.
pub const REASON_DELETION_BY_TAINT_MANAGER: &str = "DeletionByTaintManager";
/// PodScheduled reason: no node fits the pod.
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
/// PodScheduled reason: the pod still has scheduling gates.
pub const REASON_SCHEDULING_GATED: &str = "SchedulingGated";
/// Pod status reason: the pod's node was lost.
pub const REASON_NODE_LOST: &str = "NodeLost";
/// Pod status reason: the node refused the pod for a reason admission did not foresee.
pub const REASON_UNEXPECTED_ADMISSION_ERROR: &str = "UnexpectedAdmissionError";

/// Pod status reason of a node that refuses a pod for lack of `resource` (kubelet's
/// `OutOfcpu`, `OutOfmemory`, `OutOfpods`).
pub fn reason_out_of(resource: &str) -> String {
    format!("OutOf{resource}")
}

/// Annotation of a Deployment's ReplicaSets: the rollout revision of their template, as
/// kube's deployment controller numbers them (`rollout history`, `rollout undo`).
pub const ANNOTATION_REVISION: &str = "deployment.kubernetes.io/revision";
/// Annotation saying why an object changed; a Deployment's is copied to its new ReplicaSet
/// and shown by `rollout history`.
pub const ANNOTATION_CHANGE_CAUSE: &str = "kubernetes.io/change-cause";
/// Pod template annotation `rollout restart` sets to the time of the restart (RFC 3339).
pub const ANNOTATION_RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";
