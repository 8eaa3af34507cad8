//! Berth's model crate: the Kubernetes object model and its rules, written once and used by
//! the scheduler, the agent, the CLI and the tests.
//!
//! # Layout
//!
//! - [`cel`]: DRA device selectors (CEL expressions over a device), compiled and
//!   evaluated as kube's DRA CEL library does.
//! - [`conditions`]: setting a pod's or a node's condition, once.
//! - [`model`]: Kubernetes objects (`Pod`, `Node`, `PriorityClass`, `Event`, ...) with
//!   Kubernetes' field names, as serde structs: the same types read manifests, live in the
//!   store and feed the scheduler.
//! - [`host_ports`]: the node ports a pod takes and kube's conflict rule, shared by the
//!   NodePorts filter and the agent's admission.
//! - [`images`]: image-name rules shared by ImageLocality and the agents' image reports.
//! - [`names`]: well-known names (taint keys, labels, annotations, condition types and
//!   statuses, reasons) as constants.
//! - [`printers`]: kubectl's STATUS columns of pods and nodes.
//! - [`qos`]: a pod's quality-of-service class.
//! - [`quantity`]: exact resource quantities (`100m`, `1Gi`, `1e3`).
//! - [`resources`]: resource vectors and a pod's effective request (init containers,
//!   sidecars, overhead), shared by the scheduler's fit check and the agent's admission.
//! - [`selector`]: label selectors, both the structured form and kubectl's `-l` strings.
//! - [`taints`]: kubectl's taint syntax (`key[=value]:Effect`, `key[:Effect]-`).
//! - [`validate`]: the API's validation rules, shared by the CLI and the server.
//! - `testing` (feature `testing`): builders for pods and nodes, used by the tests of every
//!   crate instead of ad-hoc fixtures.
//! - [`decode`]: reading objects from their Kubernetes form, naming the failing field.
//!
//! No network, store or runtime dependency: the compiler keeps the rules pure.
#![warn(missing_docs)]

pub mod cel;
pub mod conditions;
pub mod decode;
pub mod host_ports;
pub mod images;
pub mod model;
pub mod names;
pub mod printers;
pub mod qos;
pub mod quantity;
pub mod resources;
pub mod selector;
pub mod taints;
pub mod validate;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use quantity::Quantity;
