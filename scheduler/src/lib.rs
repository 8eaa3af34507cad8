//! Berth's scheduler: kube-scheduler's framework and default plugins, the queue, the
//! scheduling cycle, and the service that holds the cluster's state.
//!
//! # Layout
//!
//! - [`framework`]: extension-point traits and the data they read ([`framework::Snapshot`],
//!   [`framework::PodInfo`], [`framework::NodeInfo`]). No IO, no async.
//! - [`plugins`]: one module per kube-scheduler plugin, each with its table tests.
//! - [`profile`]: profiles (plugin sets, weights, args) from KubeSchedulerConfiguration.
//! - [`cycle`]: `schedule_one` as a pipeline of named stages.
//! - [`queue`]: the scheduling queue (priority, back-off, unschedulable pods, gates).
//! - [`server`]: the `berth-scheduler` service: store, gRPC API, scheduling loop.
#![warn(missing_docs)]

pub mod cycle;
pub mod framework;
pub mod plugins;
pub mod profile;
pub mod queue;

pub mod server;
