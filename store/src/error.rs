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
