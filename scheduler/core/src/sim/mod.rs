//! `berth sim`'s engine: the real scheduler (queue, cycle, plugins, preemption) run offline
//! over a set of objects, with a virtual clock, explaining every decision.
//!
//! The contract (design.md, "`berth sim`: the offline contract"):
//!
//! - Objects are taken as written. Nodes keep exactly their labels; Namespaces give their
//!   labels to namespaceSelector; PriorityClasses (and the two built-in system classes)
//!   resolve pod priorities; RuntimeClasses add their overhead and scheduling constraints to
//!   their pods; PodDisruptionBudgets steer preemption's choice of victims.
//! - Pods are admitted as the API server admits them ([`crate::admission`]). A pod refused there
//!   (unknown PriorityClass, invalid spec) is left pending with the server's message.
//! - Pods with `spec.nodeName` are already running where they are. Every other pod is queued
//!   in input order and scheduled in queue order (priority, then arrival), with preemption,
//!   until no pod can make progress ([`engine`]).
//! - Deployments, ReplicaSets, DaemonSets and Jobs (their first `parallelism` pods) are expanded into their pods
//!   ([`crate::workloads`]) where they appear in the input.
//! - The result ([`SimOutput`]) serializes to the stable JSON of design.md.
//!
//! # Layout
//!
//! - [`input`]: sorting the objects, expanding workloads, naming pods.
//! - [`budgets`]: PodDisruptionBudgets' `disruptionsAllowed`, kept current.
//! - [`engine`]: the scheduling loop over the virtual clock.

pub mod budgets;
pub mod engine;
pub mod input;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use berth_model::model::Object;
use berth_model::validate::ValidationErrors;
use serde::{Deserialize, Serialize};

use crate::profile::Profiles;

/// What a simulation reads: objects in input (manifest) order.
#[derive(Clone, Debug, Default)]
pub struct SimInput {
    /// The objects, in the order they were written.
    pub objects: Vec<Object>,
}

/// How to run a simulation.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Seeds the tie-breaking between equally good nodes and the random suffixes of the
    /// names of generated pods: one seed, one result.
    pub seed: u64,
    /// Record every node's verdict and score for each attempt of each pod.
    pub explain: bool,
    /// The scheduler profiles (from a KubeSchedulerConfiguration, or the default profile).
    pub profiles: Profiles,
}

impl Default for SimOptions {
    /// Seed 0, no explanation, kube's default profile.
    fn default() -> Self {
        SimOptions {
            seed: 0,
            explain: false,
            profiles: Profiles::default(),
        }
    }
}

/// The result of a simulation: the stable JSON of design.md.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SimOutput {
    /// One entry for each pod that was not already bound, in the order they were first
    /// queued (input order).
    pub pods: Vec<PodOutcome>,
    /// Pods evicted by preemption, as `namespace/name`, in eviction order.
    pub evicted: Vec<String>,
    /// Remarks about the input for the user (a pod bound to a missing node, a kind that was
    /// skipped); printed on stderr by the CLI, never part of the JSON.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// The fate of one pod that was not bound in the input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PodOutcome {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The node it was bound to; `None` (JSON null) when it was left pending, or was bound
    /// and then preempted.
    pub node: Option<String>,
    /// Pods this pod's preemptions evicted, as `namespace/name`; always present.
    pub preempted: Vec<String>,
    /// Why the pod is pending (kube's message), or null once bound.
    pub message: Option<String>,
    /// With `explain`: every node's verdict in the pod's last attempt (the one that bound it,
    /// or the last failure), by node name; empty when the pod was never attempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<BTreeMap<String, NodeOutcome>>,
    /// With `explain`: every scheduling attempt of the pod, in order (a pod that preempted
    /// shows first why nothing fitted, then where it went); empty when never attempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<AttemptOutcome>>,
    /// For a pod with ResourceClaims, once bound: each claim and the devices allocated to
    /// it; absent for pods without claims.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimOutcome>,
}

/// One ResourceClaim of a bound pod, in the `claims` of its [`PodOutcome`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimOutcome {
    /// The entry's name in the pod's `spec.resourceClaims`.
    pub name: String,
    /// The claim, as `namespace/name`.
    pub claim: String,
    /// The devices allocated to the claim.
    pub devices: Vec<DeviceOutcome>,
}

/// One allocated device of a [`ClaimOutcome`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceOutcome {
    /// The claim's request the device serves (`req`, or `req/sub`).
    pub request: String,
    /// Driver.
    pub driver: String,
    /// Pool.
    pub pool: String,
    /// Device.
    pub device: String,
    /// For a shared device: what this allocation consumes of each capacity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub consumed_capacity: BTreeMap<String, String>,
    /// For a shared device: the share's id.
    #[serde(default, rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
}

/// One scheduling attempt of a pod, with `explain`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AttemptOutcome {
    /// Every node's verdict in this attempt (empty when a plugin failed).
    pub nodes: BTreeMap<String, NodeOutcome>,
    /// Pods this attempt's preemption evicted, as `namespace/name`.
    pub preempted: Vec<String>,
    /// The node the pod was nominated to after this attempt (its preemption's node, or an
    /// earlier nomination it keeps); null otherwise, and for the attempt that bound it.
    pub nominated: Option<String>,
}

impl PodOutcome {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// One node's verdict for a pod: `{"feasible": false, "reasons": [...]}` or
/// `{"feasible": true, "score": N}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeOutcome {
    /// Whether the node passed every filter.
    pub feasible: bool,
    /// Why it did not (kube's reason strings); only for infeasible nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<String>>,
    /// The final weighted score; only for feasible nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
}

impl NodeOutcome {
    /// A feasible node with its final score.
    pub fn feasible(score: i64) -> Self {
        NodeOutcome {
            feasible: true,
            reasons: None,
            score: Some(score),
        }
    }

    /// A rejected node with its reasons.
    pub fn rejected(reasons: Vec<String>) -> Self {
        NodeOutcome {
            feasible: false,
            reasons: Some(reasons),
            score: None,
        }
    }
}

/// An input the simulation cannot run on: the whole run fails, as a bad manifest does.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Two objects of the same kind have the same name (in the same namespace).
    #[error("{kind} {key} appears more than once")]
    Duplicate {
        /// The kind.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
    },
    /// An object other than a pod fails validation (a pod that does is left pending with
    /// the message instead).
    #[error("{kind} {key} is invalid: {source}")]
    Invalid {
        /// The kind.
        kind: &'static str,
        /// `namespace/name` or `name`.
        key: String,
        /// Every invalid field.
        #[source]
        source: ValidationErrors,
    },
    /// More than one PriorityClass has `globalDefault: true`.
    #[error("PriorityClass {second}: PriorityClass {first} is already marked as default; only one default can exist")]
    SecondGlobalDefault {
        /// The first default class.
        first: String,
        /// The second one.
        second: String,
    },
    /// A PodDisruptionBudget's minAvailable or maxUnavailable does not resolve.
    #[error("PodDisruptionBudget {key}: {source}")]
    Budget {
        /// `namespace/name`.
        key: String,
        /// Why.
        #[source]
        source: crate::disruption::BudgetError,
    },
}

/// Runs a simulation: admits and places every pod of `input` as the live scheduler would,
/// and reports each pending pod's fate. Deterministic for a given input and seed.
pub fn run(input: SimInput, options: SimOptions) -> Result<SimOutput, SimError> {
    let catalog = input::Catalog::read(input.objects, options.seed)?;
    let engine = engine::Engine::new(catalog, options)?;
    Ok(engine.run())
}
