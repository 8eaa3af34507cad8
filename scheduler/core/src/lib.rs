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
//! - [`attempt`]: `schedule_one`, the whole attempt after the queue pops a pod, behind the
//!   narrow [`attempt::Cluster`] trait that the live loop and the simulator implement.
//! - [`cycle`]: one scheduling cycle as a pipeline of named stages.
//! - [`disruption`]: PodDisruptionBudget arithmetic, shared by the controller and `sim`.
//! - [`queue`]: the scheduling queue (priority, back-off, unschedulable pods, gates).
//! - [`metrics`]: kube-scheduler's metrics, through the `metrics` facade (no backend).
//! - [`nominator`]: pods nominated to nodes by preemption, whose room the cycle holds.
//! - [`gpushare`]: the FGD paper's GPU-sharing arithmetic: fragmentation and six policies.
//! - [`lab`]: `berth lab`'s engine: traces, arrivals, experiments over time.
//! - [`perf`]: kube's scheduler_perf workloads, the latency histogram and the report.
//! - [`sim`]: `berth sim`'s engine: the scheduler run offline over manifests, explained.
//! - [`workloads`]: what Deployments, ReplicaSets and DaemonSets create, as pure functions.
#![warn(missing_docs)]

pub mod admission;
pub mod attempt;
pub mod cycle;
pub mod disruption;
pub mod dra;
pub mod framework;
pub mod gpushare;
pub mod lab;
pub mod metrics;
pub mod nominator;
pub mod perf;
pub mod plugins;
pub mod profile;
pub mod queue;
pub mod sim;
pub mod workloads;
