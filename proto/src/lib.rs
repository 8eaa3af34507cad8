//! Berth's API crate: the `berth.v1` gRPC service, the Kubernetes-shaped object model the
//! rest of Berth works on, and the conversions between them.
//!
//! # Layout
//!
//! - [`pb`]: code generated from `proto/berth.proto` (tonic and prost). Only the gRPC edges
//!   (the scheduler's service, the agent's client, the CLI's client) touch these types.
//!   Objects travel in them as their Kubernetes JSON (`pb::Object { kind, json }`).
//! - [`etcd`]: client code generated from `proto/etcd.proto`, the slice of etcd's v3 API
//!   the etcd store speaks.
//! - [`codec`]: the gRPC codec of `pb`'s services (prost's, with smaller stream buffers).
//! - [`object`]: `pb::Object`, written by hand so that its JSON is shared, not copied.
//! - [`ports`]: loopback ports for the servers Berth starts as child processes.
//! - [`wire`]: `pb` ⇄ `model`, in one place: objects to and from their JSON, with errors
//!   that name the field.
//! - [`conditions`], [`model`], [`names`], [`qos`], [`quantity`], [`resources`], [`selector`], [`taints`], [`validate`], [`decode`]:
//!   re-exported from the `berth-model` crate, which holds the object model and its rules
//!   with no network dependency.
#![warn(missing_docs)]

pub mod codec;
pub mod object;
pub mod ports;
pub mod wire;

pub use berth_model::{
    conditions, decode, host_ports, images, model, names, printers, qos, quantity, resources,
    selector, taints, validate,
};

/// Generated protobuf and gRPC code for package `berth.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("berth.v1");

    pub use crate::object::{JsonText, Object};

    /// Encoded file descriptor set, served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("berth_descriptor");
}

/// Generated client code for the part of etcd's v3 API the etcd store uses (package
/// `etcdserverpb`, from `proto/etcd.proto`; message and field numbers are etcd's).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod etcd {
    tonic::include_proto!("etcdserverpb");
}

pub use berth_model::Quantity;

/// This build's version as Kubernetes' `/version` reports one (`gitVersion` `v0.1.0`,
/// `platform` `linux/amd64`, in Go's names): what the server answers to `Version` and what
/// `berth version` prints for the client.
pub fn build_version() -> pb::VersionResponse {
    let version = env!("CARGO_PKG_VERSION");
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or_default().to_string();
    let minor = parts.next().unwrap_or_default().to_string();
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    pb::VersionResponse {
        git_version: format!("v{version}"),
        major,
        minor,
        platform: format!("{}/{arch}", std::env::consts::OS),
    }
}
