//! Performance harness: kube-scheduler's scheduler_perf workloads and the in-process runner
//! behind `berth bench`, plus the pieces both benchmark modes share (latency histogram,
//! report). The end-to-end mode (the scheduler as a process, agents over gRPC) lives in the
//! CLI, which owns processes and clients; it builds its objects from [`workloads`] too.
//!
//! # Layout
//!
//! - [`workloads`]: node and pod templates, and each workload's phases and sizes.
//! - [`runner`]: runs a workload against the server's own scheduling loop, writer and a
//!   real store in this process, sampling binds per second.
//! - [`report`]: throughput, latency and peak RSS, as text or JSON.
//! - [`histogram`]: the lock-free latency histogram the scheduling loop records into.

pub mod runner;

pub use berth_core::perf::{histogram, report, workloads};

pub use report::{Mode, Report};
pub use runner::{run_in_process, PerfError, RunOptions};
pub use workloads::{Workload, WorkloadName};
