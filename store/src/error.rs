//! The store's error type: what failed, on which object, with the underlying cause kept as
//! the error's source.

use std::fmt;
use std::path::PathBuf;

use berth_proto::model::ObjectKey;

/// Result of a store operation.
pub type Result<T> = std::result::Result<T, Error>;

/// Why a store operation failed.
///
/// The first five variants are the caller's doing (the API maps them to `NotFound`,
/// `AlreadyExists`, `Conflict` and `InvalidArgument`); the others are storage faults.
#[derive(thiserror::Error, Debug)]
pub enum Error {
    /// The object does not exist (update, delete).
    #[error("{} not found", Subject(.key))]
    NotFound {
        /// The missing object.
        key: ObjectKey,
    },
    /// An object with this key already exists (create).
    #[error("{} already exists", Subject(.key))]
    AlreadyExists {
        /// The existing object.
        key: ObjectKey,
    },
    /// A write named a resourceVersion that is no longer the stored one: someone else wrote
    /// the object in between.
    #[error(
        "conflict on {}: the object has been modified (resourceVersion {expected} given, {found} stored)",
        Subject(.key)
    )]
    Conflict {
        /// The object written.
        key: ObjectKey,
        /// The resourceVersion the caller expected.
        expected: String,
        /// The resourceVersion actually stored.
        found: String,
    },
    /// The key of a namespaced kind has an empty namespace.
    #[error("{} has no namespace, but {} is a namespaced kind", Subject(.key), .key.kind)]
    MissingNamespace {
        /// The offending key.
        key: ObjectKey,
    },
    /// The key cannot be stored: an empty name, or a `/` in the name or namespace (which
    /// would make `namespace/name` ambiguous).
    #[error("invalid key {}: {reason}", Subject(.key))]
    InvalidKey {
        /// The offending key.
        key: ObjectKey,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An object could not be encoded to JSON, or stored bytes could not be decoded.
    #[error("cannot encode or decode {}", Subject(.key))]
    Codec {
        /// The object concerned.
        key: ObjectKey,
        /// The serde error, with the field path.
        #[source]
        source: serde_json::Error,
    },
    /// The persisted revision counter is not an 8-byte big-endian integer.
    #[error("stored revision counter is corrupt: {len} bytes where 8 were expected")]
    CorruptRevision {
        /// Length of the stored value.
        len: usize,
    },
    /// A fenced commit's leadership no longer holds (lost, given up, or taken over by
    /// another replica); nothing was written.
    #[error("not the leader: the leadership of {identity:?} was lost, so the write was refused")]
    NotLeader {
        /// The identity whose leadership the commit's guard came from.
        identity: String,
    },
    /// The `--store` URL or an etcd member's address cannot be used.
    #[error("invalid store {url:?}: {reason}")]
    InvalidStoreUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A commit would need more operations (distinct objects, plus one for a fence) than one
    /// etcd transaction may hold; nothing was written.
    #[error("a commit of {ops} operations exceeds etcd's limit of {limit} operations per transaction (--max-txn-ops); split it into smaller commits")]
    TooManyOps {
        /// Operations the commit needs (0 when etcd refused it without saying).
        ops: usize,
        /// The limit.
        limit: usize,
    },
    /// A commit's encoded transaction is larger than etcd accepts; nothing was written.
    #[error("a commit of {bytes} bytes exceeds etcd's request size limit of {limit} bytes (--max-request-bytes); split it into smaller commits")]
    RequestTooLarge {
        /// The encoded size (0 when etcd refused it without saying).
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// One object, as stored, is larger than etcd accepts in a request.
    #[error("{} is {bytes} bytes as stored, above etcd's request size limit of {limit} bytes (--max-request-bytes)", Subject(.key))]
    ObjectTooLarge {
        /// The object.
        key: ObjectKey,
        /// Its key and encoded value, in bytes.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// etcd did not answer in time: the request may or may not have applied.
    #[error("etcd {operation} timed out after {after:?}; its outcome is unknown")]
    Timeout {
        /// What was asked.
        operation: &'static str,
        /// The request timeout.
        after: std::time::Duration,
    },
    /// etcd refused or failed a request.
    #[error("etcd {operation} failed: {}", .source.message())]
    Etcd {
        /// What was asked.
        operation: &'static str,
        /// The gRPC status.
        #[source]
        source: tonic::Status,
    },
    /// A commit's objects kept changing under it, and it gave up.
    #[error("the commit's objects kept changing; gave up after {attempts} attempts")]
    Contention {
        /// How often it tried.
        attempts: usize,
    },
    /// The etcd client's runtime could not start.
    #[error("cannot start the etcd client's runtime")]
    Runtime(#[source] std::io::Error),
    /// The etcd client's runtime is gone (the store is shutting down).
    #[error("the etcd client has stopped")]
    ClientStopped,
    /// The database at this path could not be opened.
    #[error("cannot open store at {}", .path.display())]
    Open {
        /// The store's directory.
        path: PathBuf,
        /// sled's error.
        #[source]
        source: sled::Error,
    },
    /// sled failed while reading or writing.
    #[error("storage error")]
    Sled(#[source] sled::Error),
    /// A commit was applied (its changes are visible and were broadcast) but flushing it to
    /// disk failed, so it may not survive a crash.
    #[error("changes up to revision {revision} were committed but not flushed to disk")]
    Flush {
        /// The last revision of the commit.
        revision: u64,
        /// sled's error.
        #[source]
        source: sled::Error,
    },
}

impl Error {
    /// Whether the store was out of reach (etcd did not answer in time, or its connection
    /// failed), so that the same request may succeed later; not a refusal of the request.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Timeout { .. } => true,
            Error::Etcd { source, .. } => matches!(
                source.code(),
                tonic::Code::Unavailable
                    | tonic::Code::DeadlineExceeded
                    | tonic::Code::Cancelled
                    | tonic::Code::Unknown
                    | tonic::Code::Aborted
            ),
            _ => false,
        }
    }
}

/// An object key as it appears in messages: `pod default/web-1`, `node n1`.
struct Subject<'a>(&'a ObjectKey);

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.0;
        f.write_str(&key.kind.as_str().to_ascii_lowercase())?;
        if key.namespace.is_empty() {
            write!(f, " {}", key.name)
        } else {
            write!(f, " {}/{}", key.namespace, key.name)
        }
    }
}
