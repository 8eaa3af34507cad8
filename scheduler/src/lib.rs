//! Berth's scheduler server: the services that hold the cluster's state (API, agent
//! sessions, telemetry), pod admission against the store, the controllers, the live
//! scheduling loop and the writer. The scheduling itself (framework, plugins, queue, cycle,
//! simulator) is the `berth-core` crate, re-exported here under its module names.
//!
//! # Layout
//!
//! - [`controllers`]: the live cluster's workload, garbage-collection and disruption
//!   controllers.
//! - [`server`]: the `berth-scheduler` service: store, gRPC API, scheduling loop.
//! - [`perf`]: the in-process benchmark runner over the server's own loop and store.
//! - [`web`]: the read-only web view (`--web-listen`).
//! - [`admission`], [`cycle`], [`dra`], [`framework`], [`plugins`], [`profile`], [`queue`], [`sim`],
//!   [`workloads`]: from `berth-core`.
#![warn(missing_docs)]

pub use berth_core::{
    admission, attempt, cycle, disruption, dra, framework, gpushare, lab, metrics, nominator,
    plugins, profile, queue, sim, workloads,
};

pub mod controllers;
pub mod perf;
pub mod server;
pub mod web;
