//! Berth's scheduling core: kube-scheduler's framework and default plugins, the queue, the
//! scheduling cycle and the simulator, with no network, store or async runtime dependency,
//! so the compiler enforces that plugins do no IO.
//!
//! # Layout
//!
//! - [`admission`]: the API server's pod admission rules, shared by the server and `sim`.
//! - [`framework`]: extension-point traits and the data they read ([`framework::Snapshot`],
//!   [`framework::PodInfo`], [`framework::NodeInfo`]). No IO, no async.
//! - [`plugins`]: one module per kube-scheduler plugin, each with its table tests.
//! - [`profile`]: profiles (plugin sets, weights, args) from KubeSchedulerConfiguration.
//! - [`cycle`]: one scheduling cycle as a pipeline of named stages.
//! - [`queue`]: the scheduling queue (priority, back-off, unschedulable pods, gates).
//! - [`perf`]: kube's scheduler_perf workloads, the latency histogram and the report.
//! - [`sim`]: `berth sim`'s engine: the scheduler run offline over manifests, explained.
//! - [`workloads`]: what Deployments, ReplicaSets and DaemonSets create, as pure functions.
#![warn(missing_docs)]

pub mod admission;
pub mod cycle;
pub mod framework;
pub mod perf;
pub mod plugins;
pub mod profile;
pub mod queue;
pub mod sim;
pub mod workloads;
