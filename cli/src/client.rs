//! The CLI's connection to the scheduler's `Berth` service: connecting (TLS with a given CA,
//! a bearer token on every call) with a clear error when nothing listens, and the verbs
//! (apply, get, list, delete) in terms of model objects. Given several replicas' addresses,
//! it connects to the first that answers and, when that one goes away, moves round robin to
//! the next, retrying the calls that are safe to repeat.

use std::time::Duration;

use berth_proto::model::{Kind, Object};
use berth_proto::pb;
use berth_proto::pb::berth_client::BerthClient;
use berth_proto::validate::FieldError;
use berth_proto::wire::{kind_from_pb, kind_to_pb, object_from_pb, object_to_pb};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};

use crate::config::{normalize_server, Target};

/// How long to wait for the TCP connection before reporting the server unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest response accepted: a list of many thousands of pods is several megabytes.
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
/// HTTP/2 pings on an idle or busy connection: a replica that stops answering them (paused,
/// partitioned) is given up on after the timeout, failing its calls as unavailable, so
/// that they move to another replica instead of waiting for ever.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(2);
/// How long a ping may go unanswered.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(4);
/// How many times a call that is safe to repeat is retried after the server went away.
const RETRIES: u32 = 8;
/// First pause before a retry; it doubles up to [`RETRY_MAX_DELAY`].
const RETRY_FIRST_DELAY: Duration = Duration::from_millis(50);
/// Longest pause between retries.
const RETRY_MAX_DELAY: Duration = Duration::from_secs(1);

/// Why a call to the scheduler failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not a valid URI.
    #[error("invalid server address {server:?}: {reason}")]
    InvalidAddress {
        /// The address as given.
        server: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Nothing answers at the address, or the connection broke.
    #[error("cannot reach the Berth scheduler at {server}: {reason}. Is `berth dev` running?")]
    Unreachable {
        /// The address.
        server: String,
        /// The underlying cause, e.g. `connection refused`.
        reason: String,
    },
    /// The server refused the request; its message is shown as is.
    #[error("{}", .status.message())]
    Rpc {
        /// The gRPC status.
        status: Status,
    },
    /// The server sent an object this client cannot read.
    #[error("unreadable object from the server: {0}")]
    Convert(#[from] FieldError),
    /// The CA file cannot be read.
    #[error("reading the CA certificate {path}: {source}")]
    ReadCa {
        /// The file.
        path: std::path::PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The token cannot be sent in a header.
    #[error("invalid token: a token may hold only visible ASCII characters")]
    InvalidToken,
    /// TLS could not be set up for the address.
    #[error("setting up TLS for {server}: {reason}")]
    Tls {
        /// The address.
        server: String,
        /// What went wrong.
        reason: String,
    },
}

/// Adds `authorization: Bearer TOKEN` to every call, when there is a token.
#[derive(Clone, Default)]
pub struct BearerToken(Option<MetadataValue<Ascii>>);

impl std::fmt::Debug for BearerToken {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = if self.0.is_some() {
            "<redacted>"
        } else {
            "<none>"
        };
        f.debug_tuple("BearerToken").field(&shown).finish()
    }
}

impl BearerToken {
    /// The header for `token`; `None` sends no header.
    pub fn new(token: Option<&str>) -> Result<Self, ClientError> {
        token
            .map(|t| {
                format!("Bearer {t}")
                    .parse()
                    .map_err(|_| ClientError::InvalidToken)
            })
            .transpose()
            .map(BearerToken)
    }
}

impl tonic::service::Interceptor for BearerToken {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The generated `Berth` client over a channel that carries the bearer token.
pub type Api = BerthClient<InterceptedService<Channel, BearerToken>>;

impl ClientError {
    /// The gRPC code of a refused request.
    pub fn code(&self) -> Option<Code> {
        match self {
            ClientError::Rpc { status } => Some(status.code()),
            _ => None,
        }
    }

    /// Whether the server said the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(Code::NotFound)
    }

    /// Whether the server refused a watch because its version is older than the server
    /// remembers (kube's 410 Gone, reason Expired): list again.
    pub fn is_expired(&self) -> bool {
        self.code() == Some(Code::OutOfRange)
    }

    /// Whether a watch that failed this way may go on from the last version it saw (on
    /// another replica, when there are several), as kube's reflector watches again: the
    /// connection broke, or the server ended the watch without refusing it (it fell
    /// behind, or was stopping).
    pub fn breaks_watch(&self) -> bool {
        match self {
            ClientError::Unreachable { .. } => true,
            ClientError::Rpc { status } => matches!(
                status.code(),
                Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DataLoss
            ),
            _ => false,
        }
    }

    /// Whether the server refused a write because the object changed meanwhile.
    pub fn is_conflict(&self) -> bool {
        matches!(self.code(), Some(Code::Aborted | Code::FailedPrecondition))
    }
}

/// The last error in a chain of sources, as a short lowercase phrase: `connection refused`
/// rather than `Connection refused (os error 111)`.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let text = cause.to_string();
    let text = match text.find(" (os error ") {
        Some(i) => &text[..i],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "unknown error".into(),
    }
}

/// Connects to the `Berth` service at `server` (`http://host:port`, or `host:port`), with
/// no token and no TLS. The error is a [`ClientError`] (`InvalidAddress` or
/// `Unreachable`), wrapped for `anyhow` callers.
pub async fn connect(server: &str) -> anyhow::Result<Api> {
    Ok(try_connect(&plain_target(server)).await?)
}

/// Connects to the target's `Berth` service: over TLS trusting its CA when it has one,
/// sending its token with every call.
pub async fn connect_to(target: &Target) -> anyhow::Result<Api> {
    Ok(try_connect(target).await?)
}

fn plain_target(server: &str) -> Target {
    Target {
        server: normalize_server(server),
        token: None,
        ca: None,
    }
}

/// Opens a channel to the target — over TLS trusting its CA when the address is `https` —
/// and the interceptor that sends its token with every call. Every generated client of the
/// CLI (Berth, Telemetry) is built on it. Of several addresses, the first that answers is
/// used.
pub async fn connect_channel(target: &Target) -> Result<(Channel, BearerToken), ClientError> {
    let (channel, interceptor, _) = connect_from(target, 0).await?;
    Ok((channel, interceptor))
}

/// Connects to the first of the target's addresses that answers, trying them in order from
/// the one at `start` (wrapping around): the channel, the interceptor and the index of the
/// address used. A bad address, CA or token fails at once; when no address answers, the
/// error names them all.
async fn connect_from(
    target: &Target,
    start: usize,
) -> Result<(Channel, BearerToken, usize), ClientError> {
    let servers = target.servers();
    if servers.len() <= 1 {
        let (channel, interceptor) = connect_one(target).await?;
        return Ok((channel, interceptor, 0));
    }
    let mut last_reason = String::new();
    for i in (0..servers.len()).map(|k| (start + k) % servers.len()) {
        match connect_one(&target.at(servers[i])).await {
            Ok((channel, interceptor)) => return Ok((channel, interceptor, i)),
            Err(ClientError::Unreachable { server, reason }) => {
                tracing::debug!(%server, %reason, "replica unreachable; trying the next");
                last_reason = reason;
            }
            Err(e) => return Err(e),
        }
    }
    Err(ClientError::Unreachable {
        server: servers.join(", "),
        reason: last_reason,
    })
}

/// [`connect_channel`] for a target of one address.
async fn connect_one(target: &Target) -> Result<(Channel, BearerToken), ClientError> {
    let server = target.server.as_str();
    let url = normalize_server(server);
    let interceptor = BearerToken::new(target.token.as_deref())?;
    let mut endpoint = Endpoint::from_shared(url.clone())
        .map_err(|e| ClientError::InvalidAddress {
            server: server.to_string(),
            reason: root_cause(&e),
        })?
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    if endpoint.uri().scheme_str() == Some("https") {
        let tls = match &target.ca {
            Some(path) => {
                let pem = std::fs::read(path).map_err(|source| ClientError::ReadCa {
                    path: path.clone(),
                    source,
                })?;
                ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem))
            }
            None => ClientTlsConfig::new().with_enabled_roots(),
        };
        endpoint = endpoint.tls_config(tls).map_err(|e| ClientError::Tls {
            server: url.clone(),
            reason: root_cause(&e),
        })?;
    }
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| ClientError::Unreachable {
            server: url,
            reason: root_cause(&e),
        })?;
    Ok((channel, interceptor))
}

/// [`connect_to`], with the typed error.
async fn try_connect(target: &Target) -> Result<Api, ClientError> {
    Ok(try_connect_from(target, 0).await?.0)
}

/// [`connect_from`], as the `Berth` client.
async fn try_connect_from(target: &Target, start: usize) -> Result<(Api, usize), ClientError> {
    let (channel, interceptor, used) = connect_from(target, start).await?;
    let api = BerthClient::with_interceptor(channel, interceptor)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    Ok((api, used))
}

/// Whether a call that failed this way may succeed on another replica: the server went
/// away (or never answered), as opposed to refusing the request.
fn is_retryable(status: &Status) -> bool {
    match status.code() {
        // Cancelled: the connection closed under the request (hyper's "operation was
        // canceled"), as when its replica is killed; the server itself never answers so.
        Code::Unavailable | Code::Cancelled => true,
        // "transport error": the connection broke otherwise (reset by a replica killed as
        // the call began). A status the server sent has no source; only the client's own
        // transport failures carry one.
        Code::Unknown => std::error::Error::source(status).is_some(),
        _ => false,
    }
}

/// What the server did with one applied object.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The object's kind.
    pub kind: Kind,
    /// Namespace (empty for cluster-scoped kinds).
    pub namespace: String,
    /// Name (as stored, so a generated name is filled in).
    pub name: String,
    /// `created`, `configured` or `unchanged`.
    pub action: String,
    /// The object's resource version after the write.
    pub resource_version: String,
    /// For a dry run: the object as the server would store it.
    pub object: Option<Object>,
}

/// A connected client, speaking in model objects.
#[derive(Clone, Debug)]
pub struct Client {
    inner: Api,
    /// The address in use.
    server: String,
    /// Every address, with the credentials, to fail over.
    target: Target,
    /// The index of `server` among the target's addresses.
    current: usize,
}

impl Client {
    /// Connects to `server`, with no token and no TLS; see [`connect`].
    pub async fn connect(server: &str) -> Result<Self, ClientError> {
        Client::connect_to(&plain_target(server)).await
    }

    /// Connects to a target; see [`connect_to`].
    pub async fn connect_to(target: &Target) -> Result<Self, ClientError> {
        let target = Target {
            server: normalize_server(&target.server),
            ..target.clone()
        };
        let (inner, current) = try_connect_from(&target, 0).await?;
        Ok(Client {
            inner,
            server: target.servers()[current].to_string(),
            target,
            current,
        })
    }

    /// The address of the server in use (one of the replicas').
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Makes a call, and, when `retry` says it is safe to repeat and the server went away,
    /// repeats it on the next replica that answers (the same one when there is only one),
    /// pausing a little longer each time, up to [`RETRIES`] times.
    async fn call<R, T, F, Fut>(
        &mut self,
        request: R,
        retry: bool,
        call: F,
    ) -> Result<T, ClientError>
    where
        R: Clone,
        F: Fn(Api, R) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, Status>>,
    {
        let mut delay = RETRY_FIRST_DELAY;
        let mut retries = 0;
        loop {
            let reply = call(self.inner.clone(), request.clone()).await;
            match reply {
                Err(status) if retry && retries < RETRIES && is_retryable(&status) => {
                    retries += 1;
                    tracing::debug!(server = %self.server, error = %status.message(), retries, "server unavailable; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(RETRY_MAX_DELAY);
                    self.fail_over().await;
                }
                reply => return Client::reply(&self.server, reply),
            }
        }
    }

    /// Connects to the next replica that answers, from the one after the current; when
    /// none does, keeps the current channel (which reconnects on its own).
    async fn fail_over(&mut self) {
        let count = self.target.servers().len();
        if count <= 1 {
            return;
        }
        match try_connect_from(&self.target, (self.current + 1) % count).await {
            Ok((inner, current)) => {
                self.inner = inner;
                self.current = current;
                self.server = self.target.servers()[current].to_string();
                tracing::debug!(server = %self.server, "moved to another replica");
            }
            Err(e) => tracing::debug!(error = %e, "no replica answers yet"),
        }
    }

    /// The reply of a call, or its refusal as a [`ClientError`]: an unavailable server is
    /// `Unreachable` at `server`.
    fn reply<T>(server: &str, reply: Result<tonic::Response<T>, Status>) -> Result<T, ClientError> {
        reply
            .map(tonic::Response::into_inner)
            .map_err(|status| Client::status_error(server, status))
    }

    fn status_error(server: &str, status: Status) -> ClientError {
        if status.code() == Code::Unavailable {
            let reason = match std::error::Error::source(&status) {
                Some(source) => root_cause(source),
                None => status.message().to_lowercase(),
            };
            ClientError::Unreachable {
                server: server.to_string(),
                reason,
            }
        } else {
            ClientError::Rpc { status }
        }
    }

    /// Applies objects all together (all or nothing); with `dry_run` the server validates and
    /// reports without storing.
    pub async fn apply(
        &mut self,
        objects: &[Object],
        dry_run: bool,
    ) -> Result<Vec<Applied>, ClientError> {
        let request = pb::ApplyRequest {
            objects: objects.iter().map(object_to_pb).collect(),
            dry_run,
        };
        // Applying the same named objects again is harmless; an object named by
        // generateName would be created twice.
        let repeatable = objects.iter().all(|o| !o.meta().name.is_empty());
        self.call(request, repeatable, |mut api, r| async move {
            api.apply(r).await
        })
        .await?
        .results
        .into_iter()
        .map(|r| {
            Ok(Applied {
                kind: kind_from_pb(r.kind)?,
                namespace: r.namespace,
                name: r.name,
                action: r.action,
                resource_version: r.resource_version,
                object: r.object.as_ref().map(object_from_pb).transpose()?,
            })
        })
        .collect()
    }

    /// Reads one object.
    pub async fn get(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<Object, ClientError> {
        let request = pb::GetRequest {
            kind: kind_to_pb(kind) as i32,
            namespace: scoped_namespace(kind, namespace),
            name: name.to_string(),
        };
        let object = self
            .call(request, true, |mut api, r| async move { api.get(r).await })
            .await?;
        Ok(object_from_pb(&object)?)
    }

    /// Lists objects of a kind: in `namespace` (empty: all), matching `label_selector`
    /// (kubectl syntax, empty: all) and, for pods, bound to `node_name` (empty: any).
    pub async fn list(
        &mut self,
        kind: Kind,
        namespace: &str,
        label_selector: &str,
        node_name: &str,
    ) -> Result<Vec<Object>, ClientError> {
        Ok(self
            .list_reply(kind, namespace, label_selector, node_name)
            .await?
            .0)
    }

    /// [`Client::list`], with the resource version the list was read at: a
    /// [`Client::watch`] from it sees every later change.
    pub async fn list_at(
        &mut self,
        kind: Kind,
        namespace: &str,
        label_selector: &str,
    ) -> Result<(Vec<Object>, String), ClientError> {
        self.list_reply(kind, namespace, label_selector, "").await
    }

    async fn list_reply(
        &mut self,
        kind: Kind,
        namespace: &str,
        label_selector: &str,
        node_name: &str,
    ) -> Result<(Vec<Object>, String), ClientError> {
        let request = pb::ListRequest {
            kind: kind_to_pb(kind) as i32,
            namespace: scoped_namespace(kind, namespace),
            label_selector: label_selector.to_string(),
            node_name: node_name.to_string(),
        };
        let reply = self
            .call(request, true, |mut api, r| async move { api.list(r).await })
            .await?;
        let objects = reply
            .objects
            .iter()
            .map(|o| object_from_pb(o).map_err(ClientError::from))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((objects, reply.resource_version))
    }

    /// Watches the objects of a kind in `namespace` (empty: all): every change after
    /// `resource_version`, or, when it is empty or `0`, the current objects as `Added`
    /// first. A version the server no longer remembers fails ([`ClientError::is_expired`]).
    pub async fn watch(
        &mut self,
        kind: Kind,
        namespace: &str,
        resource_version: &str,
    ) -> Result<Watch, ClientError> {
        let request = pb::WatchRequest {
            kind: kind_to_pb(kind) as i32,
            namespace: scoped_namespace(kind, namespace),
            resource_version: resource_version.to_string(),
        };
        let stream = self
            .call(
                request,
                true,
                |mut api, r| async move { api.watch(r).await },
            )
            .await?;
        Ok(Watch {
            stream,
            server: self.server.clone(),
        })
    }

    /// Lists the objects of a kind and watches what happens to them after the list, with
    /// nothing lost in between: the watch starts from the list's resource version.
    pub async fn list_and_watch(
        &mut self,
        kind: Kind,
        namespace: &str,
        label_selector: &str,
    ) -> Result<(Vec<Object>, Watch), ClientError> {
        let (objects, version) = self.list_at(kind, namespace, label_selector).await?;
        let watch = self.watch(kind, namespace, &version).await?;
        Ok((objects, watch))
    }

    /// Deletes an object, returning it as it was (or as marked for deletion). A non-empty
    /// `resource_version` makes the delete conditional on it.
    pub async fn delete(
        &mut self,
        kind: Kind,
        namespace: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<Option<Object>, ClientError> {
        let request = pb::DeleteRequest {
            kind: kind_to_pb(kind) as i32,
            namespace: scoped_namespace(kind, namespace),
            name: name.to_string(),
            resource_version: resource_version.to_string(),
        };
        // Not repeated: after a lost reply the object may be gone already.
        self.call(
            request,
            false,
            |mut api, r| async move { api.delete(r).await },
        )
        .await?
        .object
        .map(|o| object_from_pb(&o))
        .transpose()
        .map_err(ClientError::from)
    }
}

/// What happened to an object in a [`Watch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEventType {
    /// It was created (or was there when the watch began).
    Added,
    /// It changed.
    Modified,
    /// It was deleted; the object is its last state.
    Deleted,
}

impl WatchEventType {
    /// The name kubectl prints in `--output-watch-events` (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            WatchEventType::Added => "ADDED",
            WatchEventType::Modified => "MODIFIED",
            WatchEventType::Deleted => "DELETED",
        }
    }
}

/// An open watch of one kind.
pub struct Watch {
    stream: tonic::Streaming<pb::WatchEvent>,
    server: String,
}

impl Watch {
    /// The next change; `None` when the server ended the watch.
    pub async fn next(&mut self) -> Option<Result<(WatchEventType, Object), ClientError>> {
        loop {
            let event = match self.stream.message().await {
                Ok(Some(event)) => event,
                Ok(None) => return None,
                Err(status) => return Some(Err(Client::status_error(&self.server, status))),
            };
            let kind = match pb::watch_event::Type::try_from(event.r#type) {
                Ok(pb::watch_event::Type::Added) => WatchEventType::Added,
                Ok(pb::watch_event::Type::Modified) => WatchEventType::Modified,
                Ok(pb::watch_event::Type::Deleted) => WatchEventType::Deleted,
                _ => continue,
            };
            let Some(object) = event.object else { continue };
            return Some(
                object_from_pb(&object)
                    .map(|o| (kind, o))
                    .map_err(Into::into),
            );
        }
    }
}

/// The namespace to send for a kind: none for cluster-scoped kinds.
fn scoped_namespace(kind: Kind, namespace: &str) -> String {
    if kind.is_namespaced() {
        namespace.to_string()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which failed calls may be repeated on another replica: the server's absence, not its
    /// answer.
    #[test]
    fn only_a_missing_server_is_retried() {
        let reset = || {
            let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
            Status::from_error(Box::new(io))
        };
        assert_eq!(
            reset().code(),
            Code::Unknown,
            "tonic's \"transport error\" code"
        );
        let cases = [
            (
                "unavailable",
                Status::unavailable("connection refused"),
                true,
            ),
            (
                "cancelled under the call",
                Status::cancelled("operation was canceled"),
                true,
            ),
            ("the client's transport broke", reset(), true),
            ("the server said unknown", Status::unknown("boom"), false),
            ("the server refused", Status::invalid_argument("bad"), false),
            ("not found", Status::not_found("gone"), false),
        ];
        for (name, status, want) in cases {
            assert_eq!(is_retryable(&status), want, "{name}: {status:?}");
        }
    }

    #[tokio::test]
    async fn unreachable_server_gets_a_clear_message() {
        // Bind and drop a listener so that the port is very likely closed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let err = try_connect(&plain_target(&addr.to_string()))
            .await
            .expect_err("nothing listens");
        let want = format!(
            "cannot reach the Berth scheduler at http://{addr}: connection refused. Is `berth dev` running?"
        );
        assert_eq!(err.to_string(), want);
    }

    #[tokio::test]
    async fn no_replica_answering_names_them_all() {
        let closed = || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr")
        };
        let (a, b) = (closed(), closed());
        let err = try_connect(&plain_target(&format!("{a},{b}")))
            .await
            .expect_err("nothing listens");
        let want = format!(
            "cannot reach the Berth scheduler at http://{a}, http://{b}: connection refused. Is `berth dev` running?"
        );
        assert_eq!(err.to_string(), want);
    }

    #[test]
    fn root_cause_is_short_and_lowercase() {
        let io = std::io::Error::other("Connection refused (os error 111)");
        assert_eq!(root_cause(&io), "connection refused");
        let err = ClientError::Rpc {
            status: Status::not_found("pod default/x not found"),
        };
        assert_eq!(err.to_string(), "pod default/x not found");
        assert!(err.is_not_found());
    }
}
