//! Pods: the spec a user writes, and the status the scheduler and agents fill in.

use serde::{Deserialize, Serialize};

use super::{
    Affinity, Ignored, ObjectMeta, PodResourceClaim, PodResourceClaimStatus, ResourceClaimRef,
    ResourceList, StringMap, Time, Toleration, TopologySpreadConstraint,
};

/// A pod (`v1/Pod`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Pod {
    /// `v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Pod`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name, namespace, labels...
    pub metadata: ObjectMeta,
    /// What the user asks for.
    pub spec: PodSpec,
    /// What happened to it.
    pub status: PodStatus,
}

impl Pod {
    /// The condition of the given type, if reported.
    pub fn condition(&self, type_: &str) -> Option<&PodCondition> {
        crate::conditions::find_condition(&self.status.conditions, type_)
    }

    /// Whether the pod has ended for good: phase Succeeded or Failed (kube's
    /// `podutil.IsPodTerminal`). A terminal pod no longer holds its node's resources.
    pub fn is_terminal(&self) -> bool {
        self.status.phase.is_terminal()
    }

    /// Whether the pod is being deleted: its deletionTimestamp is set.
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// Whether the pod counts as one of its controller's replicas: neither terminal nor
    /// terminating (kube's `controller.IsPodActive`).
    pub fn is_active(&self) -> bool {
        !self.is_terminal() && !self.is_terminating()
    }

    /// Whether the pod's Ready condition is True (kube's `podutil.IsPodReady`).
    pub fn is_ready(&self) -> bool {
        self.condition(crate::names::CONDITION_READY)
            .is_some_and(|c| c.status == crate::names::STATUS_TRUE)
    }
}

/// Whether a pod may preempt lower-priority pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PreemptionPolicy {
    /// May evict lower-priority pods to make room (the default).
    #[default]
    PreemptLowerPriority,
    /// Never preempts.
    Never,
}

/// Restart policy of a pod, or of a sidecar init container (`Always` only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RestartPolicy {
    /// Restart on every exit (the default for pods).
    #[default]
    Always,
    /// Restart on a non-zero exit.
    OnFailure,
    /// Never restart.
    Never,
}

/// `spec` of a pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSpec {
    /// Application containers, run together.
    pub containers: Vec<Container>,
    /// Init containers, run one after another before the app containers; those with
    /// `restartPolicy: Always` are sidecars and keep running beside them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    /// Node the pod is bound to; set by the user, it bypasses the scheduler.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    /// Labels a node must have.
    #[serde(skip_serializing_if = "StringMap::is_empty")]
    pub node_selector: StringMap,
    /// Node and pod (anti-)affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Taints the pod tolerates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Scheduler profile that places this pod; `default-scheduler` when empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// Priority, resolved from priorityClassName at admission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Name of a PriorityClass.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// Whether the pod may preempt; copied from its PriorityClass at admission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// Resources the pod's sandbox uses beyond its containers (from its RuntimeClass).
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub overhead: ResourceList,
    /// Topology spread constraints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Gates that keep the pod out of the scheduling queue until removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<PodSchedulingGate>,
    /// Restart policy of the containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<RestartPolicy>,
    /// Seconds between SIGTERM and SIGKILL when the pod is stopped (default 30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// Pod-level resources; when set they are the pod's requests and limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// RuntimeClass; in `berth sim` its overhead is added to the pod.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub runtime_class_name: String,
    /// DRA claims the pod uses, by name or made from a template (`resource.k8s.io/v1`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<PodResourceClaim>,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub volumes: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub security_context: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub service_account_name: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub service_account: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub automount_service_account_token: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub image_pull_secrets: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub dns_policy: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub dns_config: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub host_network: Ignored,
    /// Accepted and ignored.
    #[serde(rename = "hostPID", skip_serializing_if = "crate::model::skip_ignored")]
    pub host_pid: Ignored,
    /// Accepted and ignored.
    #[serde(rename = "hostIPC", skip_serializing_if = "crate::model::skip_ignored")]
    pub host_ipc: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub hostname: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub subdomain: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub host_aliases: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub enable_service_links: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub share_process_namespace: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub active_deadline_seconds: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub readiness_gates: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub ephemeral_containers: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub os: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub host_users: Ignored,
    /// Accepted and ignored.
    #[serde(
        rename = "setHostnameAsFQDN",
        skip_serializing_if = "crate::model::skip_ignored"
    )]
    pub set_hostname_as_fqdn: Ignored,
}

/// A pod scheduling gate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSchedulingGate {
    /// Gate name.
    pub name: String,
}

/// Requests and limits of a container or pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceRequirements {
    /// What the scheduler reserves.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub requests: ResourceList,
    /// Upper bounds; a request left out defaults to its limit.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub limits: ResourceList,
    /// The pod's DRA claims (`spec.resourceClaims[].name`) this container uses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ResourceClaimRef>,
}

/// An environment variable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvVar {
    /// Name.
    pub name: String,
    /// Value.
    #[serde(default)]
    pub value: String,
    /// Accepted and ignored (Berth has no secrets or config maps).
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub value_from: Ignored,
}

/// A container of a pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Container {
    /// Name, unique within the pod.
    pub name: String,
    /// Image; recorded, not pulled (the process runtime runs `command`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// Executable and its leading arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Further arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Requests and limits.
    #[serde(default)]
    pub resources: ResourceRequirements,
    /// `Always` on an init container makes it a sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<RestartPolicy>,
    /// Ports the container exposes; those with a `hostPort` take that port on the node
    /// (the NodePorts filter and the agent's admission keep two pods off one port).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub working_dir: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub env_from: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub volume_mounts: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub volume_devices: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub liveness_probe: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub readiness_probe: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub startup_probe: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub lifecycle: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub security_context: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub image_pull_policy: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub termination_message_path: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub termination_message_policy: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub stdin: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub stdin_once: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub tty: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub resize_policy: Ignored,
}

/// A network port of a container (`v1.ContainerPort`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerPort {
    /// An IANA service name, unique within the container; optional.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The port on the pod's IP address, 1..=65535 (required).
    pub container_port: i32,
    /// The port taken on the node, 1..=65535; 0 (the default) takes none.
    #[serde(skip_serializing_if = "is_zero")]
    pub host_port: i32,
    /// TCP (the default), UDP or SCTP.
    pub protocol: Protocol,
    /// The node address the host port is bound to; empty means every address (0.0.0.0).
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// A port's protocol (`v1.Protocol`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Protocol {
    /// TCP, the default.
    #[default]
    #[serde(rename = "TCP")]
    Tcp,
    /// UDP.
    #[serde(rename = "UDP")]
    Udp,
    /// SCTP.
    #[serde(rename = "SCTP")]
    Sctp,
}

impl Protocol {
    /// The protocol as the API writes it (`TCP`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }
}

/// Lifecycle phase of a pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PodPhase {
    /// Accepted, not yet running (unscheduled, or starting).
    #[default]
    Pending,
    /// Bound and its containers run.
    Running,
    /// All containers ended successfully and will not restart.
    Succeeded,
    /// Ended in failure (or was evicted, preempted, refused by its node).
    Failed,
    /// The node's state is not known.
    Unknown,
}

impl PodPhase {
    /// The phase as written in the API.
    pub fn as_str(&self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
            PodPhase::Unknown => "Unknown",
        }
    }

    /// Whether the pod has ended for good.
    pub fn is_terminal(&self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// A condition of a pod (`PodScheduled`, `Ready`, ...).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodCondition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason (`Unschedulable`, `SchedulingGated`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub last_probe_time: Ignored,
}

/// Status of one container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerStatus {
    /// Container name.
    pub name: String,
    /// Whether it runs now.
    #[serde(default)]
    pub ready: bool,
    /// Times it was restarted.
    #[serde(default)]
    pub restart_count: i32,
    /// `waiting`, `running` or `terminated`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    /// Exit code of the last termination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Reason of the current state (`OOMKilled`, `Completed`, `CrashLoopBackOff`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub image: Ignored,
}

/// `status` of a pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodStatus {
    /// Phase.
    pub phase: PodPhase,
    /// Conditions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PodCondition>,
    /// Why the pod is in this state (`Evicted`, `Preempted`, `OutOfcpu`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable detail.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Node this pod is expected to run on after preemption.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nominated_node_name: String,
    /// When the node started the pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// Address of the node.
    #[serde(
        rename = "hostIP",
        alias = "hostIp",
        skip_serializing_if = "String::is_empty"
    )]
    pub host_ip: String,
    /// Containers' status.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub container_statuses: Vec<ContainerStatus>,
    /// The claims made for the pod's template entries (`spec.resourceClaims`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claim_statuses: Vec<PodResourceClaimStatus>,
    /// Accepted and ignored.
    #[serde(rename = "podIP", skip_serializing_if = "crate::model::skip_ignored")]
    pub pod_ip: Ignored,
    /// Accepted and ignored.
    #[serde(rename = "podIPs", skip_serializing_if = "crate::model::skip_ignored")]
    pub pod_ips: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub qos_class: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub init_container_statuses: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub host_i_ps: Ignored,
}
