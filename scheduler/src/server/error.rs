//! The server's error type, and its single mapping to gRPC statuses.

use berth_proto::model::ObjectKey;
use berth_proto::validate::{FieldError, ValidationErrors};

/// What went wrong while serving a request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request names an object that does not exist.
    #[error("{} {:?} not found", key.kind.plural(), key.name)]
    NotFound {
        /// The missing object.
        key: ObjectKey,
    },
    /// A create names an object that exists already.
    #[error("{key} already exists")]
    AlreadyExists {
        /// The object.
        key: ObjectKey,
    },
    /// An update or delete carried a stale resourceVersion.
    #[error("conflict: {key} was modified (expected resourceVersion {expected}, found {found}); get it again and retry")]
    Conflict {
        /// The object.
        key: ObjectKey,
        /// The version the client had.
        expected: String,
        /// The stored version.
        found: String,
    },
    /// A message does not decode into the object model.
    #[error("{context}: {source}")]
    Convert {
        /// Which object of the request.
        context: String,
        /// The field and problem.
        #[source]
        source: FieldError,
    },
    /// An object fails validation.
    #[error("{context} is invalid: {source}")]
    Invalid {
        /// Which object.
        context: String,
        /// Every invalid field.
        #[source]
        source: ValidationErrors,
    },
    /// Admission refused the object for a reason other than its own fields.
    #[error("{context} is forbidden: {reason}")]
    Forbidden {
        /// Which object.
        context: String,
        /// Why.
        reason: String,
    },
    /// A request is malformed (missing kind, bad selector).
    #[error("{0}")]
    BadRequest(String),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[source] berth_store::Error),
}

impl From<berth_store::Error> for Error {
    fn from(e: berth_store::Error) -> Self {
        match e {
            berth_store::Error::NotFound { key } => Error::NotFound { key },
            berth_store::Error::AlreadyExists { key } => Error::AlreadyExists { key },
            berth_store::Error::Conflict {
                key,
                expected,
                found,
            } => Error::Conflict {
                key,
                expected,
                found,
            },
            other => Error::Store(other),
        }
    }
}

/// The result type of the server.
pub type Result<T> = std::result::Result<T, Error>;

/// Longest status message sent, in bytes. The message travels in an HTTP/2 trailer, and a
/// client refuses trailers past its header-list limit (16 KiB by default): an error that
/// quotes a huge invalid value must still reach the client as its own code.
pub const MAX_STATUS_MESSAGE_BYTES: usize = 4096;

/// Cuts `message` to [`MAX_STATUS_MESSAGE_BYTES`] on a character boundary, saying how much
/// was left out.
fn truncate_message(mut message: String) -> String {
    if message.len() <= MAX_STATUS_MESSAGE_BYTES {
        return message;
    }
    let total = message.len();
    let mut cut = MAX_STATUS_MESSAGE_BYTES;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    message.truncate(cut);
    message.push_str(&format!("... ({} more bytes)", total - cut));
    message
}

impl From<Error> for tonic::Status {
    fn from(e: Error) -> Self {
        let message = truncate_message(e.to_string());
        match e {
            Error::NotFound { .. } => tonic::Status::not_found(message),
            Error::AlreadyExists { .. } => tonic::Status::already_exists(message),
            Error::Conflict { .. } => tonic::Status::aborted(message),
            Error::Convert { .. } | Error::Invalid { .. } | Error::BadRequest(_) => {
                tonic::Status::invalid_argument(message)
            }
            Error::Forbidden { .. } => tonic::Status::failed_precondition(message),
            Error::Store(_) => {
                tracing::error!(error = %message, "store failure");
                tonic::Status::internal(message)
            }
        }
    }
}
