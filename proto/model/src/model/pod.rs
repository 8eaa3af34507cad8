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
    /// Node and pod (anti-)affinity. Boxed, like `resources`: most pods set neither, and a
    /// pod lives in every cache for its whole life (144 bytes inline, 8 boxed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Box<Affinity>>,
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
    pub resources: Option<Box<ResourceRequirements>>,
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
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub hostname_override: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub workload_ref: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub scheduling_group: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub eviction_responders: Ignored,
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
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub restart_policy_rules: Ignored,
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
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub host_port: i32,
    /// TCP (the default), UDP or SCTP.
    pub protocol: Protocol,
    /// The node address the host port is bound to; empty means every address (0.0.0.0).
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
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
    /// The `metadata.generation` the condition was set for.
    #[serde(default, skip_serializing_if = "crate::model::is_zero")]
    pub observed_generation: i64,
}

/// Status of one container (`v1.ContainerStatus`), as the agent reports it.
///
/// Also reads the shape Berth wrote before it followed kube's (`state: "running"`, with
/// `exitCode` and `reason` beside it), so that statuses stored by an older Berth still load.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    from = "ContainerStatusWire"
)]
pub struct ContainerStatus {
    /// Container name.
    pub name: String,
    /// What the container does now.
    pub state: ContainerState,
    /// How its previous run ended, once it has restarted (`lastState.terminated`).
    pub last_state: ContainerState,
    /// Whether it passes its readiness check (Berth: whether it runs).
    pub ready: bool,
    /// Times it was restarted.
    pub restart_count: i32,
    /// The image it runs, as the runtime names it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// The image's id (a digest), as the runtime reports it.
    #[serde(rename = "imageID", skip_serializing_if = "String::is_empty")]
    pub image_id: String,
    /// The container's id, `<runtime>://<id>`.
    #[serde(rename = "containerID", skip_serializing_if = "String::is_empty")]
    pub container_id: String,
    /// Whether it has started (passed its startup probe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub allocated_resources: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub resources: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub volume_mounts: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub user: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub allocated_resources_status: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub stop_signal: Ignored,
}

impl ContainerStatus {
    /// The reason of the current state (`ContainerCreating`, `CrashLoopBackOff`,
    /// `Completed`, `OOMKilled`); empty when running or unset.
    pub fn reason(&self) -> &str {
        self.state.reason()
    }

    /// The exit code of the current termination, or else of the last one (a container
    /// waiting to restart).
    pub fn exit_code(&self) -> Option<i32> {
        self.state
            .terminated
            .as_ref()
            .or(self.last_state.terminated.as_ref())
            .map(|t| t.exit_code)
    }

    /// Moves the container to `state`, as kubelet does: a termination that is replaced
    /// (by a restart or its back-off) becomes `lastState`, and a termination of a running
    /// container keeps when it started.
    pub fn set_state(&mut self, mut state: ContainerState) {
        if let (Some(running), Some(terminated)) = (&self.state.running, &mut state.terminated) {
            if terminated.started_at.is_none() {
                terminated.started_at = running.started_at;
            }
        }
        if let Some(previous) = self.state.terminated.take() {
            if state.terminated.is_none() {
                self.last_state = ContainerState {
                    terminated: Some(previous),
                    ..ContainerState::default()
                };
            }
        }
        self.state = state;
    }

    /// Ends a container that is stopped: one waiting to restart takes its last termination
    /// as its final state; any other not yet terminated ends at `now` with exit code 0 (the
    /// simulated runtime has no process to report one).
    pub fn stop(&mut self, now: Time) {
        if self.state.is_terminated() {
            return;
        }
        let terminated = match self.last_state.terminated.take() {
            Some(last) if self.state.is_waiting() => last,
            last => {
                self.last_state.terminated = last;
                Box::new(ContainerStateTerminated {
                    finished_at: Some(now),
                    ..ContainerStateTerminated::default()
                })
            }
        };
        self.set_state(ContainerState {
            terminated: Some(terminated),
            ..ContainerState::default()
        });
    }
}

/// What a container does (`v1.ContainerState`): one of its three members is set, none when
/// the runtime has not said yet.
///
/// The waiting and terminated members are boxed: every container status holds two states
/// (`state`, `lastState`), mostly running or empty, and inline the two larger members made
/// each status 464 bytes, 23 MB of a 50,000-pod cluster's running pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerState {
    /// Not running yet, or waiting to be restarted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Box<ContainerStateWaiting>>,
    /// Running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<ContainerStateRunning>,
    /// Exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminated: Option<Box<ContainerStateTerminated>>,
}

impl ContainerState {
    /// Waiting for `reason`.
    pub fn waiting(reason: &str) -> Self {
        ContainerState {
            waiting: Some(Box::new(ContainerStateWaiting {
                reason: reason.to_string(),
                ..ContainerStateWaiting::default()
            })),
            ..ContainerState::default()
        }
    }

    /// Running since `started_at`.
    pub fn running(started_at: Time) -> Self {
        ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(started_at),
            }),
            ..ContainerState::default()
        }
    }

    /// Exited with `exit_code` for `reason` (`Completed`, `Error`, `OOMKilled`) at
    /// `finished_at`.
    pub fn terminated(exit_code: i32, reason: &str, finished_at: Time) -> Self {
        ContainerState {
            terminated: Some(Box::new(ContainerStateTerminated {
                exit_code,
                reason: reason.to_string(),
                finished_at: Some(finished_at),
                ..ContainerStateTerminated::default()
            })),
            ..ContainerState::default()
        }
    }

    /// Whether the container is waiting.
    pub fn is_waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// Whether the container runs.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Whether the container has exited.
    pub fn is_terminated(&self) -> bool {
        self.terminated.is_some()
    }

    /// The reason of a waiting or terminated state; empty otherwise.
    pub fn reason(&self) -> &str {
        if let Some(w) = &self.waiting {
            &w.reason
        } else if let Some(t) = &self.terminated {
            &t.reason
        } else {
            ""
        }
    }
}

// A running pod holds one status per container, each with two states: keep them small.
const _: () = assert!(std::mem::size_of::<ContainerState>() <= 32);

/// `state.waiting` of a container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerStateWaiting {
    /// Why it is not running (`ContainerCreating`, `CrashLoopBackOff`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable detail.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// `state.running` of a container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerStateRunning {
    /// When it (last) started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
}

/// `state.terminated` of a container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerStateTerminated {
    /// Exit code of its process (always written, as kube does).
    pub exit_code: i32,
    /// The signal that ended it, if one did.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub signal: i32,
    /// Why it ended (`Completed`, `Error`, `OOMKilled`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable detail.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the run started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// The id of the container that ended.
    #[serde(rename = "containerID", skip_serializing_if = "String::is_empty")]
    pub container_id: String,
}

/// How a [`ContainerStatus`] is read: kube's fields, plus the fields of Berth's older shape.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ContainerStatusWire {
    name: String,
    #[serde(default)]
    state: StateWire,
    #[serde(default)]
    last_state: ContainerState,
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    restart_count: i32,
    #[serde(default)]
    image: String,
    #[serde(default, rename = "imageID")]
    image_id: String,
    #[serde(default, rename = "containerID")]
    container_id: String,
    #[serde(default)]
    started: Option<bool>,
    #[serde(default)]
    allocated_resources: Ignored,
    #[serde(default)]
    resources: Ignored,
    #[serde(default)]
    volume_mounts: Ignored,
    #[serde(default)]
    user: Ignored,
    #[serde(default)]
    allocated_resources_status: Ignored,
    #[serde(default)]
    stop_signal: Ignored,
    /// Older Berth: the exit code of the last termination.
    #[serde(default)]
    exit_code: Option<i32>,
    /// Older Berth: the reason of the current state.
    #[serde(default)]
    reason: String,
}

/// `state` as read: kube's object, or older Berth's name of the state.
#[derive(Default)]
enum StateWire {
    #[default]
    Unset,
    Kube(ContainerState),
    Legacy(String),
}

impl<'de> Deserialize<'de> for StateWire {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = StateWire;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a container state (waiting, running or terminated)")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<StateWire, E> {
                match s {
                    "" | "waiting" | "running" | "terminated" => Ok(StateWire::Legacy(s.into())),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<StateWire, E> {
                Ok(StateWire::Unset)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<StateWire, A::Error> {
                ContainerState::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(StateWire::Kube)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl From<ContainerStatusWire> for ContainerStatus {
    fn from(w: ContainerStatusWire) -> Self {
        let state = match w.state {
            StateWire::Unset => ContainerState::default(),
            StateWire::Kube(state) => state,
            StateWire::Legacy(name) => {
                let mut state = ContainerState::default();
                match name.as_str() {
                    "waiting" => {
                        state.waiting = Some(Box::new(ContainerStateWaiting {
                            reason: w.reason.clone(),
                            ..ContainerStateWaiting::default()
                        }))
                    }
                    "running" => state.running = Some(ContainerStateRunning::default()),
                    "terminated" => {
                        state.terminated = Some(Box::new(ContainerStateTerminated {
                            exit_code: w.exit_code.unwrap_or(0),
                            reason: w.reason.clone(),
                            ..ContainerStateTerminated::default()
                        }))
                    }
                    _ => {}
                }
                state
            }
        };
        let mut last_state = w.last_state;
        // An older waiting container (a back-off) kept its last exit code beside its state.
        if let (Some(code), None, None) = (w.exit_code, &state.terminated, &last_state.terminated) {
            last_state.terminated = Some(Box::new(ContainerStateTerminated {
                exit_code: code,
                ..ContainerStateTerminated::default()
            }));
        }
        ContainerStatus {
            name: w.name,
            state,
            last_state,
            ready: w.ready,
            restart_count: w.restart_count,
            image: w.image,
            image_id: w.image_id,
            container_id: w.container_id,
            started: w.started,
            allocated_resources: w.allocated_resources,
            resources: w.resources,
            volume_mounts: w.volume_mounts,
            user: w.user,
            allocated_resources_status: w.allocated_resources_status,
            stop_signal: w.stop_signal,
        }
    }
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
    /// Addresses of the node (`hostIPs[0]` is `hostIP`).
    #[serde(rename = "hostIPs", skip_serializing_if = "Vec::is_empty")]
    pub host_ips: Vec<HostIp>,
    /// Address of the pod (Berth has no pod network and leaves it empty).
    #[serde(rename = "podIP", skip_serializing_if = "String::is_empty")]
    pub pod_ip: String,
    /// Addresses of the pod (`podIPs[0]` is `podIP`).
    #[serde(rename = "podIPs", skip_serializing_if = "Vec::is_empty")]
    pub pod_ips: Vec<PodIp>,
    /// `Guaranteed`, `Burstable` or `BestEffort`, as reported; Berth computes the class
    /// from the spec ([`crate::qos`]) and does not read this.
    #[serde(rename = "qosClass", skip_serializing_if = "String::is_empty")]
    pub qos_class: String,
    /// Init containers' status.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_container_statuses: Vec<ContainerStatus>,
    /// Ephemeral containers' status.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ephemeral_container_statuses: Vec<ContainerStatus>,
    /// The `metadata.generation` this status was written for.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub observed_generation: i64,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub resize: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub extended_resource_claim_status: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub allocated_resources: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub resources: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub node_allocatable_resource_claim_statuses: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub volume_health: Ignored,
}

/// An address of a pod's node (`v1.HostIP`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostIp {
    /// The address.
    pub ip: String,
}

/// An address of a pod (`v1.PodIP`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodIp {
    /// The address.
    pub ip: String,
}
