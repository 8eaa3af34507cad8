//! Berth's API crate: the `berth.v1` gRPC service, the Kubernetes-shaped object model the
//! rest of Berth works on, and the conversions between them.
//!
//! # Layout
//!
//! - [`pb`]: code generated from `proto/berth.proto` (tonic and prost). Only the gRPC edges
//!   (the scheduler's service, the agent's client, the CLI's client) touch these types.
//! - [`model`]: hand-written Kubernetes objects (`Pod`, `Node`, `PriorityClass`, `Event`, ...)
//!   with Kubernetes' field names, as serde structs: the same types read manifests, live in the
//!   store and feed the scheduler.
//! - [`quantity`]: exact resource quantities (`100m`, `1Gi`, `1e3`).
//! - [`selector`]: label selectors, both the structured form and kubectl's `-l` strings.
//! - [`convert`]: `pb` ⇄ `model`, in one place.
//! - [`validate`]: the API's validation rules, shared by the CLI and the server.
#![warn(missing_docs)]

pub mod convert;
pub mod model;
pub mod quantity;
pub mod selector;
pub mod validate;

/// Generated protobuf and gRPC code for package `berth.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("berth.v1");

    /// Encoded file descriptor set, served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("berth_descriptor");
}

pub use quantity::Quantity;
