//! The server's error type, and its single mapping to gRPC statuses.

use berth_proto::model::{Kind, ObjectKey};
use berth_proto::validate::{FieldError, ValidationErrors};
use tonic::{Code, Status};

use super::eviction::EvictionError;

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
    /// The call carries no credentials, or unknown ones.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this (its role, NodeRestriction).
    #[error("{0}")]
    PermissionDenied(String),
    /// The request does not fit the current state (a session before Register, logs of a
    /// pod that is not bound yet).
    #[error("{0}")]
    FailedPrecondition(String),
    /// What the request needs cannot be reached now (a node without a session, a server
    /// that does not schedule).
    #[error("{0}")]
    Unavailable(String),
    /// An answer the request waits for did not come in time.
    #[error("{0}")]
    DeadlineExceeded(String),
    /// A watch fell too far behind the store's changes.
    #[error("watch fell behind by {missed} changes; list and watch again")]
    WatchLagged {
        /// How many changes it missed.
        missed: u64,
    },
    /// A watch asked for changes after a version older than the server remembers.
    #[error(transparent)]
    WatchExpired(#[from] super::watch_cache::Expired),
    /// An eviction was refused ([`EvictionError`]; its store failures become
    /// [`Error::Store`] and the like).
    #[error(transparent)]
    Eviction(EvictionError),
    /// The blocking task serving the request panicked or was cancelled.
    #[error("{0}")]
    Task(#[source] tokio::task::JoinError),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[source] berth_store::Error),
}

impl From<EvictionError> for Error {
    fn from(e: EvictionError) -> Self {
        match e {
            EvictionError::NotFound { namespace, name } => Error::NotFound {
                key: ObjectKey::new(Kind::Pod, &namespace, &name),
            },
            EvictionError::Store(e) => Error::from(e),
            other => Error::Eviction(other),
        }
    }
}

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Self {
        Error::Task(e)
    }
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
            // A deposed leader's write: the client should retry on the current leader.
            e @ (berth_store::Error::NotLeader { .. }
            | berth_store::Error::Etcd { .. }
            | berth_store::Error::ClientStopped) => Error::Unavailable(e.to_string()),
            // etcd did not answer in time; the write may or may not have applied.
            e @ berth_store::Error::Timeout { .. } => Error::DeadlineExceeded(e.to_string()),
            other => Error::Store(other),
        }
    }
}

/// The result type of the server.
pub type Result<T> = std::result::Result<T, Error>;

/// What a gRPC handler returns.
pub type Reply<T> = std::result::Result<tonic::Response<T>, tonic::Status>;

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

impl Error {
    /// The gRPC code of this error: NotFound → `NOT_FOUND`, Conflict → `ABORTED`, an invalid
    /// request → `INVALID_ARGUMENT`, an eviction a budget blocks → `RESOURCE_EXHAUSTED` (kube's
    /// 429), a write above etcd's transaction limits → `INVALID_ARGUMENT`, a deposed leader's
    /// write or an unreachable etcd → `UNAVAILABLE`, a failure of the server itself →
    /// `INTERNAL`.
    pub fn code(&self) -> Code {
        match self {
            Error::NotFound { .. } => Code::NotFound,
            Error::AlreadyExists { .. } => Code::AlreadyExists,
            Error::Conflict { .. } => Code::Aborted,
            Error::Convert { .. } | Error::Invalid { .. } | Error::BadRequest(_) => {
                Code::InvalidArgument
            }
            Error::Forbidden { .. } | Error::FailedPrecondition(_) => Code::FailedPrecondition,
            Error::Unauthenticated(_) => Code::Unauthenticated,
            Error::PermissionDenied(_) => Code::PermissionDenied,
            Error::Unavailable(_) => Code::Unavailable,
            Error::DeadlineExceeded(_) => Code::DeadlineExceeded,
            Error::WatchLagged { .. } => Code::DataLoss,
            Error::WatchExpired(_) => Code::OutOfRange,
            Error::Eviction(e) => match e {
                EvictionError::BudgetExhausted { .. } => Code::ResourceExhausted,
                EvictionError::NegativeBudget { .. } => Code::PermissionDenied,
                EvictionError::TooManyConflicts { .. } => Code::Aborted,
                EvictionError::NotFound { .. } => Code::NotFound,
                EvictionError::MultipleBudgets { .. } | EvictionError::Store(_) => Code::Internal,
            },
            // etcd's transaction limits: the request as given can never be stored, like an
            // object above the API's size limit.
            Error::Store(
                berth_store::Error::TooManyOps { .. }
                | berth_store::Error::RequestTooLarge { .. }
                | berth_store::Error::ObjectTooLarge { .. },
            ) => Code::InvalidArgument,
            Error::Task(_) | Error::Store(_) => Code::Internal,
        }
    }
}

/// The one mapping from the server's errors to gRPC statuses; a failure of the server
/// itself (`INTERNAL`) is logged here, once.
impl From<Error> for Status {
    fn from(e: Error) -> Self {
        let code = e.code();
        let message = truncate_message(e.to_string());
        if code == Code::Internal {
            tracing::error!(error = %message, "request failed");
        }
        Status::new(code, message)
    }
}

/// Runs `f` on tokio's blocking pool (store calls block) and gives its result as a gRPC
/// result: its own error and a failure of the task itself both go through the mapping above.
pub async fn blocking<T, E>(
    f: impl FnOnce() -> std::result::Result<T, E> + Send + 'static,
) -> std::result::Result<T, Status>
where
    T: Send + 'static,
    E: Into<Status> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(Into::into),
        Err(e) => Err(Error::Task(e).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code_and_keeps_its_message() {
        let pod = || ObjectKey::new(Kind::Pod, "default", "web");
        let cases: Vec<(Error, Code, &str)> = vec![
            (
                berth_store::Error::NotFound { key: pod() }.into(),
                Code::NotFound,
                "pods \"web\" not found",
            ),
            (
                berth_store::Error::Conflict {
                    key: pod(),
                    expected: "1".into(),
                    found: "2".into(),
                }
                .into(),
                Code::Aborted,
                "conflict: ",
            ),
            (
                Error::BadRequest("bad".into()),
                Code::InvalidArgument,
                "bad",
            ),
            (
                EvictionError::NotFound {
                    namespace: "default".into(),
                    name: "web".into(),
                }
                .into(),
                Code::NotFound,
                "pods \"web\" not found",
            ),
            (
                EvictionError::BudgetExhausted {
                    budget: "pdb".into(),
                    desired_healthy: 2,
                    current_healthy: 2,
                }
                .into(),
                Code::ResourceExhausted,
                "Cannot evict pod as it would violate the pod's disruption budget.",
            ),
            (
                EvictionError::TooManyConflicts {
                    namespace: "default".into(),
                    name: "web".into(),
                }
                .into(),
                Code::Aborted,
                "evicting pod default/web",
            ),
            (
                EvictionError::MultipleBudgets { budgets: vec![] }.into(),
                Code::Internal,
                "This pod has more than one PodDisruptionBudget",
            ),
            (
                Error::WatchLagged { missed: 3 },
                Code::DataLoss,
                "watch fell behind by 3 changes; list and watch again",
            ),
            (
                berth_store::Error::NotLeader {
                    identity: "replica-1".into(),
                }
                .into(),
                Code::Unavailable,
                "not the leader: the leadership of \"replica-1\" was lost",
            ),
            (
                berth_store::Error::TooManyOps {
                    ops: 129,
                    limit: 128,
                }
                .into(),
                Code::InvalidArgument,
                "store: a commit of 129 operations exceeds etcd's limit of 128",
            ),
            (
                berth_store::Error::CorruptRevision { len: 1 }.into(),
                Code::Internal,
                "store: ",
            ),
        ];
        for (error, code, message) in cases {
            let status = Status::from(error);
            assert_eq!(status.code(), code, "{}", status.message());
            assert!(
                status.message().starts_with(message),
                "{}",
                status.message()
            );
        }
    }
}
