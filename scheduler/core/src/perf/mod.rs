//! The pure half of the performance harness: kube-scheduler's scheduler_perf workloads
//! (templates, phases, sizes), the latency histogram the scheduling loop records into, and
//! the report both benchmark modes print. The runners live with the server and the CLI.
//!
//! # Layout
//!
//! - [`workloads`]: node and pod templates, and each workload's phases and sizes.
//! - [`dra`]: the DRA objects of the `dra/` workloads (class, slices, claims).
//! - [`report`]: throughput, latency and peak RSS, as text or JSON.
//! - [`histogram`]: the lock-free latency histogram.

pub mod dra;
pub mod histogram;
pub mod report;
pub mod workloads;

pub use report::{Mode, Report};
pub use workloads::{Workload, WorkloadName};
