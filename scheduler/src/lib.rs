//! Berth's scheduler: kube-scheduler's framework and default plugins, the queue, the
//! scheduling cycle, and the service that holds the cluster's state.
//!
//! # Layout
//!
//! - [`admission`]: the API server's pod admission rules, shared by the server and `sim`.
//! - [`framework`]: extension-point traits and the data they read ([`framework::Snapshot`],
//!   [`framework::PodInfo`], [`framework::NodeInfo`]). No IO, no async.
//! - [`plugins`]: one module per kube-scheduler plugin, each with its table tests.
//! - [`profile`]: profiles (plugin sets, weights, args) from KubeSchedulerConfiguration.
//! - [`cycle`]: `schedule_one` as a pipeline of named stages.
//! - [`controllers`]: the live cluster's workload, garbage-collection and disruption
//!   controllers.
//! - [`queue`]: the scheduling queue (priority, back-off, unschedulable pods, gates).
//! - [`server`]: the `berth-scheduler` service: store, gRPC API, scheduling loop.
//! - [`perf`]: kube's scheduler_perf workloads and the in-process benchmark runner.
//! - [`sim`]: `berth sim`'s engine: the scheduler run offline over manifests, explained.
//! - [`workloads`]: what Deployments, ReplicaSets and DaemonSets create, as pure functions.
#![warn(missing_docs)]

pub mod admission;
pub mod controllers;
pub mod cycle;
pub mod framework;
pub mod perf;
pub mod plugins;
pub mod profile;
pub mod queue;
pub mod sim;
pub mod workloads;

pub mod server;
