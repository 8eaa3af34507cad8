//! The agent's error type: what can go wrong reading flags and the machine, talking to the
//! scheduler, and running pods.

use std::path::PathBuf;

/// An error of the node agent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `--register-with-taints` entry is not kubectl's `key[=value]:Effect`, or two
    /// entries share a key and an effect.
    #[error(transparent)]
    Taint(#[from] berth_proto::taints::TaintSpecError),
    /// A `--labels` entry is not `key=value` with a valid key and value.
    #[error("invalid label {entry:?}: {reason}")]
    InvalidLabel {
        /// The rejected entry, as written.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The `--server` address is not a valid URI.
    #[error("invalid server address {addr:?}")]
    InvalidServerAddress {
        /// The address as given.
        addr: String,
        /// Why it was rejected.
        #[source]
        source: tonic::transport::Error,
    },
    /// A machine file (`/proc/meminfo`, the hostname) could not be read.
    #[error("reading {path}")]
    ReadMachineFile {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// `/proc/meminfo` has no usable `MemTotal` line.
    #[error("no valid MemTotal line in meminfo")]
    MemTotalMissing,
    /// The machine's hostname could not be found, so `--node-name` is needed.
    #[error("cannot determine the hostname; pass --node-name")]
    HostnameUnknown,
    /// Connecting to the scheduler failed.
    #[error("connecting to {server}")]
    Connect {
        /// The scheduler's address.
        server: String,
        /// The transport error.
        #[source]
        source: tonic::transport::Error,
    },
    /// The scheduler refused or failed the node's registration.
    #[error("registering node {node}")]
    Register {
        /// The node name.
        node: String,
        /// The gRPC status.
        #[source]
        source: tonic::Status,
    },
    /// The scheduler refused to open the session stream.
    #[error("opening the session of node {node}")]
    OpenSession {
        /// The node name.
        node: String,
        /// The gRPC status.
        #[source]
        source: tonic::Status,
    },
    /// The session stream failed while receiving.
    #[error("session stream failed")]
    Session {
        /// The gRPC status.
        #[source]
        source: tonic::Status,
    },
    /// The outgoing half of the session closed, so a message could not be sent.
    #[error("session stream closed while sending")]
    StreamClosed,
    /// A pod sent by the scheduler could not be read into the object model.
    #[error("invalid pod {namespace}/{name} from the scheduler")]
    InvalidPod {
        /// Namespace of the pod.
        namespace: String,
        /// Name of the pod.
        name: String,
        /// What the conversion rejected.
        #[source]
        source: berth_proto::validate::FieldError,
    },
    /// A folder the agent needs could not be created.
    #[error("creating {path}")]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A container name cannot name a log file.
    #[error("invalid container name {name:?}")]
    InvalidContainerName {
        /// The name.
        name: String,
    },
    /// `--cgroups` names a cgroup version this host cannot use.
    #[error(transparent)]
    Cgroups(#[from] crate::runtime::cgroup::CgroupError),
    /// The eviction flags are invalid.
    #[error(transparent)]
    Eviction(#[from] crate::eviction::EvictionConfigError),
    /// `--count` above 1 needs the sim runtime: real processes of several nodes would
    /// share one machine's resources.
    #[error("--count {count} needs --runtime sim")]
    CountNeedsSim {
        /// The count asked for.
        count: u32,
    },
    /// The `--devices` file cannot be read or holds no valid ResourceSlices, or it and
    /// `--gpus` publish the same driver.
    #[error("--devices {path}: {reason}")]
    Devices {
        /// The file.
        path: PathBuf,
        /// What is wrong (with the document and field path when known).
        reason: String,
    },
}

/// A result with the agent's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error and its causes, `: `-separated: for logs and pod status messages, where the
/// causes (an OS error under a transport error) are what the reader needs.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_chain_lists_causes() {
        let e = Error::ReadMachineFile {
            path: "/proc/meminfo".into(),
            source: std::io::Error::other("gone"),
        };
        assert_eq!(error_chain(&e), "reading /proc/meminfo: gone");
    }
}
