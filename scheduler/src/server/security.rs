//! Who may call the scheduler, and over what: bearer-token authentication from a static
//! token file (kube's `--token-auth-file` shape), roles (admin, viewer, node) checked per
//! gRPC method, the NodeRestriction rules that bind a node credential to one node, and the
//! server's TLS configuration.
//!
//! Authentication wraps each Berth service ([`Authenticated`]); gRPC health and reflection
//! stay open, as probes and tools expect. The authenticated [`Caller`] travels with the
//! request in its extensions, where the handlers read it (see `agents.rs`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::{http, BoxFuture, Service};
use tonic::server::NamedService;
use tonic::transport::{Identity, ServerTlsConfig};
use tonic::Status;

use super::error::Error;

/// The label domain that a node credential may not set on its own Node (kube's
/// `node-restriction.kubernetes.io`): labels under it are for admins to mark trusted nodes.
pub const NODE_RESTRICTION_DOMAIN: &str = "node-restriction.kubernetes.io";

/// gRPC methods a viewer may call: the reads of the Berth service.
const READ_METHODS: [&str; 3] = ["Get", "List", "Watch"];
/// The read-only service of usage (`berth top`) and logs (`berth logs`), open to viewers.
const TELEMETRY_SERVICE: &str = "berth.v1.Telemetry";

/// The gRPC service agents use.
const AGENT_SERVICE: &str = "berth.v1.Agent";
/// The user-facing gRPC service.
const BERTH_SERVICE: &str = "berth.v1.Berth";

/// What a token allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The whole API.
    Admin,
    /// Reads only: Get, List and Watch of the Berth service, and the Telemetry service
    /// (top, logs).
    Viewer,
    /// The Agent service only (Register and Session), restricted to one node: a bootstrap
    /// token that is bound to the first node it registers.
    Node,
}

impl Role {
    /// The role as written in the token file.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Viewer => "viewer",
            Role::Node => "node",
        }
    }

    fn parse(text: &str) -> Option<Role> {
        match text {
            "admin" => Some(Role::Admin),
            "viewer" => Some(Role::Viewer),
            "node" => Some(Role::Node),
            _ => None,
        }
    }

    /// Whether this role may call `method` of gRPC service `service`.
    pub fn allows(self, service: &str, method: &str) -> bool {
        match self {
            Role::Admin => true,
            Role::Viewer => {
                (service == BERTH_SERVICE && READ_METHODS.contains(&method))
                    || service == TELEMETRY_SERVICE
            }
            Role::Node => service == AGENT_SERVICE,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The authenticated identity of a request, put into its extensions by [`Authenticated`].
/// A request without one came to a server that runs without authentication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The token's NAME (a user, or for node tokens the credential's name).
    pub name: String,
    /// The token's role.
    pub role: Role,
}

/// One line of the token file.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenEntry {
    /// The secret.
    pub token: String,
    /// Who holds it.
    pub name: String,
    /// What it allows.
    pub role: Role,
}

impl std::fmt::Debug for TokenEntry {
    /// Never prints the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEntry")
            .field("token", &"<redacted>")
            .field("name", &self.name)
            .field("role", &self.role)
            .finish()
    }
}

/// Why the token file or the TLS files cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    /// A file cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A line of the token file is malformed.
    #[error("{path}: line {line}: {problem}")]
    TokenLine {
        /// The token file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// The token file holds no token, which would lock everyone out.
    #[error("{path}: no tokens (expected lines of TOKEN,NAME,ROLE)")]
    NoTokens {
        /// The token file.
        path: PathBuf,
    },
    /// The certificate and key do not make a usable TLS configuration.
    #[error("TLS certificate {cert} with key {key}: {source}")]
    Tls {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why the TLS acceptor refused them.
        #[source]
        source: tonic::transport::Error,
    },
}

/// Parses a token file: one `TOKEN,NAME,ROLE` a line, fields optionally in double quotes
/// (`""` inside quotes is a quote), blank lines and lines starting with `#` skipped. Errors
/// name the line, from 1, and never show a token.
pub fn parse_token_file(path: &Path, text: &str) -> Result<Vec<TokenEntry>, SecurityError> {
    let mut entries: Vec<TokenEntry> = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let problem = |problem: String| SecurityError::TokenLine {
            path: path.to_path_buf(),
            line: line_no,
            problem,
        };
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields = split_csv_line(trimmed).map_err(problem)?;
        if fields.len() != 3 {
            return Err(problem(format!(
                "expected 3 fields (TOKEN,NAME,ROLE), found {}",
                fields.len()
            )));
        }
        let [token, name, role] = [&fields[0], &fields[1], &fields[2]];
        if token.is_empty() {
            return Err(problem("empty token".into()));
        }
        if name.is_empty() {
            return Err(problem("empty name".into()));
        }
        let role = Role::parse(role).ok_or_else(|| {
            problem(format!(
                "unknown role {role:?}: expected admin, viewer or node"
            ))
        })?;
        if let Some(first) = first_line.get(token.as_str()) {
            return Err(problem(format!("duplicate token (first on line {first})")));
        }
        first_line.insert(token.clone(), line_no);
        entries.push(TokenEntry {
            token: token.clone(),
            name: name.clone(),
            role,
        });
    }
    if entries.is_empty() {
        return Err(SecurityError::NoTokens {
            path: path.to_path_buf(),
        });
    }
    Ok(entries)
}

/// Splits one CSV line into trimmed fields, honouring double quotes.
fn split_csv_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("unterminated quoted field".into()),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                }
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => fields.push(field),
                Some(c) => return Err(format!("unexpected {c:?} after a quoted field")),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field.trim().to_string());
                        return Ok(fields);
                    }
                    Some(',') => break,
                    Some('"') => return Err("quote inside an unquoted field".into()),
                    Some(c) => field.push(c),
                }
            }
            fields.push(field.trim().to_string());
        }
    }
}

/// Compares two byte strings in time that depends only on their lengths, so a caller cannot
/// learn a token a byte at a time from response times.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(!x);
    }
    std::hint::black_box(diff) == 0
}

/// Checks bearer tokens against the token file.
#[derive(Debug)]
pub struct Authenticator {
    entries: Vec<TokenEntry>,
}

impl Authenticator {
    /// An authenticator over `entries`.
    pub fn new(entries: Vec<TokenEntry>) -> Self {
        Authenticator { entries }
    }

    /// Reads and parses the token file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, SecurityError> {
        let text = std::fs::read_to_string(path).map_err(|source| SecurityError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Authenticator::new(parse_token_file(path, &text)?))
    }

    /// How many tokens it knows.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it knows no token.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller a token belongs to. Every entry is compared, in constant time each, so
    /// the time taken does not say which entry (if any) matched.
    pub fn authenticate(&self, token: &str) -> Option<Caller> {
        let mut found = None;
        for entry in &self.entries {
            if constant_time_eq(entry.token.as_bytes(), token.as_bytes()) && found.is_none() {
                found = Some(Caller {
                    name: entry.name.clone(),
                    role: entry.role,
                });
            }
        }
        found
    }

    /// Authenticates the `authorization` header and authorizes the call of gRPC `path`
    /// (`/package.Service/Method`): `Unauthenticated` without a known bearer token,
    /// `PermissionDenied` when the token's role does not cover the method.
    pub fn check(&self, authorization: Option<&[u8]>, path: &str) -> Result<Caller, Status> {
        let header = authorization.ok_or_else(|| {
            Error::Unauthenticated(
                "missing credentials: send the header `authorization: Bearer TOKEN` \
                 (berth --token, or BERTH_TOKEN)"
                    .into(),
            )
        })?;
        let token = std::str::from_utf8(header)
            .ok()
            .and_then(bearer_token)
            .ok_or_else(|| {
                Error::Unauthenticated(
                    "malformed authorization header: expected `Bearer TOKEN`".into(),
                )
            })?;
        let caller = self
            .authenticate(token)
            .ok_or_else(|| Error::Unauthenticated("invalid bearer token".into()))?;
        let (service, method) = split_path(path);
        if !caller.role.allows(service, method) {
            return Err(Error::PermissionDenied(format!(
                "role {} ({:?}) may not call {service}/{method}",
                caller.role, caller.name
            ))
            .into());
        }
        Ok(caller)
    }
}

/// The token of `Bearer TOKEN` (the scheme is case-insensitive, as in RFC 6750).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// `/berth.v1.Berth/Apply` → (`berth.v1.Berth`, `Apply`).
pub(crate) fn split_path(path: &str) -> (&str, &str) {
    let path = path.strip_prefix('/').unwrap_or(path);
    path.split_once('/').unwrap_or((path, ""))
}

/// Whether a node may set this label on its own Node: not under
/// [`NODE_RESTRICTION_DOMAIN`] or a subdomain of it (kube's NodeRestriction rule).
pub fn is_node_restricted_label(key: &str) -> bool {
    let Some((domain, _)) = key.split_once('/') else {
        return false;
    };
    domain == NODE_RESTRICTION_DOMAIN || domain.ends_with(&format!(".{NODE_RESTRICTION_DOMAIN}"))
}

/// A gRPC service behind authentication: each request must carry a token whose role
/// covers the method; the [`Caller`] goes into the request's extensions. With no
/// authenticator, requests pass untouched (the server runs open).
#[derive(Clone)]
pub struct Authenticated<S> {
    inner: S,
    auth: Option<Arc<Authenticator>>,
}

impl<S> Authenticated<S> {
    /// Wraps `inner`; `auth` of `None` lets every request through.
    pub fn new(inner: S, auth: Option<Arc<Authenticator>>) -> Self {
        Authenticated { inner, auth }
    }
}

impl<S, B> Service<http::Request<B>> for Authenticated<S>
where
    S: Service<http::Request<B>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        if let Some(auth) = &self.auth {
            let header = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .map(|v| v.as_bytes());
            match auth.check(header, req.uri().path()) {
                Ok(caller) => {
                    req.extensions_mut().insert(caller);
                }
                Err(status) => {
                    tracing::debug!(path = %req.uri().path(), code = ?status.code(), "request refused");
                    return Box::pin(async move { Ok(status.into_http()) });
                }
            }
        }
        Box::pin(self.inner.call(req))
    }
}

impl<S: NamedService> NamedService for Authenticated<S> {
    const NAME: &'static str = S::NAME;
}

/// The server's TLS configuration from PEM files: the certificate chain and its key.
pub fn server_tls(cert: &Path, key: &Path) -> Result<ServerTlsConfig, SecurityError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| SecurityError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let identity = Identity::from_pem(read(cert)?, read(key)?);
    Ok(ServerTlsConfig::new().identity(identity))
}

/// The security of one server run, from its flags: who may call, and over what.
pub struct Settings {
    /// Token authentication; `None` runs the API open.
    pub auth: Option<Arc<Authenticator>>,
    /// TLS, with the files it came from for error messages.
    tls: Option<(ServerTlsConfig, PathBuf, PathBuf)>,
}

impl Settings {
    /// Reads the token file and the TLS certificate and key (both or neither; clap
    /// enforces the pair). Without a token file the server runs open, and says so once.
    pub fn load(
        token_file: Option<&Path>,
        tls_cert: Option<&Path>,
        tls_key: Option<&Path>,
    ) -> Result<Self, SecurityError> {
        let auth = match token_file {
            Some(path) => {
                let auth = Authenticator::from_file(path)?;
                tracing::info!(file = %path.display(), tokens = auth.len(), "token authentication on");
                Some(Arc::new(auth))
            }
            None => {
                tracing::warn!(
                    "no --token-file: the API is open to anyone who can reach it (fine for a \
                     local dev cluster, not for anything else)"
                );
                None
            }
        };
        let tls = match (tls_cert, tls_key) {
            (Some(cert), Some(key)) => Some((server_tls(cert, key)?, cert.into(), key.into())),
            _ => None,
        };
        Ok(Settings { auth, tls })
    }

    /// A server builder, with TLS when configured.
    pub fn server_builder(&self) -> Result<tonic::transport::Server, SecurityError> {
        let builder = tonic::transport::Server::builder();
        match &self.tls {
            None => Ok(builder),
            Some((tls, cert, key)) => {
                let builder =
                    builder
                        .tls_config(tls.clone())
                        .map_err(|source| SecurityError::Tls {
                            cert: cert.clone(),
                            key: key.clone(),
                            source,
                        })?;
                tracing::info!(cert = %cert.display(), "serving over TLS");
                Ok(builder)
            }
        }
    }

    /// `service` behind token authentication (a no-op when the server runs open).
    pub fn protect<S>(&self, service: S) -> Authenticated<S> {
        Authenticated::new(service, self.auth.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "tokens.csv";

    fn parse(text: &str) -> Result<Vec<TokenEntry>, String> {
        parse_token_file(Path::new(FILE), text).map_err(|e| e.to_string())
    }

    fn entry(token: &str, name: &str, role: Role) -> TokenEntry {
        TokenEntry {
            token: token.into(),
            name: name.into(),
            role,
        }
    }

    #[test]
    fn token_files_parse_like_kubes_static_token_file() {
        struct Case {
            name: &'static str,
            text: &'static str,
            want: Result<Vec<TokenEntry>, String>,
        }
        let cases = vec![
            Case {
                name: "plain lines, comments and blanks",
                text: "# who may call\nt1,alice,admin\n\n  t2 , bob , viewer \nt3,node-1,node\n",
                want: Ok(vec![
                    entry("t1", "alice", Role::Admin),
                    entry("t2", "bob", Role::Viewer),
                    entry("t3", "node-1", Role::Node),
                ]),
            },
            Case {
                name: "quoted fields, with a comma and an escaped quote",
                text: "\"t,1\",\"al \"\"the admin\"\"\",\"admin\"\n",
                want: Ok(vec![entry("t,1", "al \"the admin\"", Role::Admin)]),
            },
            Case {
                name: "too few fields",
                text: "# c\nt1,alice\n",
                want: Err("tokens.csv: line 2: expected 3 fields (TOKEN,NAME,ROLE), found 2".into()),
            },
            Case {
                name: "too many fields",
                text: "t1,alice,admin,extra\n",
                want: Err("tokens.csv: line 1: expected 3 fields (TOKEN,NAME,ROLE), found 4".into()),
            },
            Case {
                name: "unknown role",
                text: "t1,alice,admin\nt2,root,superuser\n",
                want: Err("tokens.csv: line 2: unknown role \"superuser\": expected admin, viewer or node".into()),
            },
            Case {
                name: "empty token",
                text: ",alice,admin\n",
                want: Err("tokens.csv: line 1: empty token".into()),
            },
            Case {
                name: "empty name",
                text: "t1,\"\",admin\n",
                want: Err("tokens.csv: line 1: empty name".into()),
            },
            Case {
                name: "unterminated quote",
                text: "\"t1,alice,admin\n",
                want: Err("tokens.csv: line 1: unterminated quoted field".into()),
            },
            Case {
                name: "text after a quoted field",
                text: "\"t1\"x,alice,admin\n",
                want: Err("tokens.csv: line 1: unexpected 'x' after a quoted field".into()),
            },
            Case {
                name: "duplicate token",
                text: "t1,alice,admin\nt1,bob,viewer\n",
                want: Err("tokens.csv: line 2: duplicate token (first on line 1)".into()),
            },
            Case {
                name: "no tokens",
                text: "# nothing\n\n",
                want: Err("tokens.csv: no tokens (expected lines of TOKEN,NAME,ROLE)".into()),
            },
        ];
        for case in cases {
            assert_eq!(parse(case.text), case.want, "{}", case.name);
        }
    }

    #[test]
    fn calls_are_authenticated_then_authorized_by_role_and_method() {
        struct Case {
            name: &'static str,
            header: Option<&'static str>,
            path: &'static str,
            want: Result<(&'static str, Role), (tonic::Code, &'static str)>,
        }
        let auth = Authenticator::new(vec![
            entry("admin-secret", "alice", Role::Admin),
            entry("viewer-secret", "bob", Role::Viewer),
            entry("node-secret", "node-1", Role::Node),
        ]);
        let cases = [
            Case {
                name: "admin applies",
                header: Some("Bearer admin-secret"),
                path: "/berth.v1.Berth/Apply",
                want: Ok(("alice", Role::Admin)),
            },
            Case {
                name: "scheme is case-insensitive",
                header: Some("bearer admin-secret"),
                path: "/berth.v1.Agent/Register",
                want: Ok(("alice", Role::Admin)),
            },
            Case {
                name: "viewer lists",
                header: Some("Bearer viewer-secret"),
                path: "/berth.v1.Berth/List",
                want: Ok(("bob", Role::Viewer)),
            },
            Case {
                name: "viewer may not apply",
                header: Some("Bearer viewer-secret"),
                path: "/berth.v1.Berth/Apply",
                want: Err((tonic::Code::PermissionDenied, "role viewer (\"bob\") may not call berth.v1.Berth/Apply")),
            },
            Case {
                name: "viewer may not delete",
                header: Some("Bearer viewer-secret"),
                path: "/berth.v1.Berth/Delete",
                want: Err((tonic::Code::PermissionDenied, "role viewer (\"bob\") may not call berth.v1.Berth/Delete")),
            },
            Case {
                name: "viewer may not register a node",
                header: Some("Bearer viewer-secret"),
                path: "/berth.v1.Agent/Register",
                want: Err((tonic::Code::PermissionDenied, "role viewer (\"bob\") may not call berth.v1.Agent/Register")),
            },
            Case {
                name: "viewer may read usage and logs",
                header: Some("Bearer viewer-secret"),
                path: "/berth.v1.Telemetry/Top",
                want: Ok(("bob", Role::Viewer)),
            },
            Case {
                name: "node may not read usage",
                header: Some("Bearer node-secret"),
                path: "/berth.v1.Telemetry/Top",
                want: Err((tonic::Code::PermissionDenied, "role node (\"node-1\") may not call berth.v1.Telemetry/Top")),
            },
            Case {
                name: "node opens its session",
                header: Some("Bearer node-secret"),
                path: "/berth.v1.Agent/Session",
                want: Ok(("node-1", Role::Node)),
            },
            Case {
                name: "node may not read the API",
                header: Some("Bearer node-secret"),
                path: "/berth.v1.Berth/Get",
                want: Err((tonic::Code::PermissionDenied, "role node (\"node-1\") may not call berth.v1.Berth/Get")),
            },
            Case {
                name: "missing header",
                header: None,
                path: "/berth.v1.Berth/List",
                want: Err((tonic::Code::Unauthenticated, "missing credentials: send the header `authorization: Bearer TOKEN` (berth --token, or BERTH_TOKEN)")),
            },
            Case {
                name: "unknown token",
                header: Some("Bearer admin-secreT"),
                path: "/berth.v1.Berth/List",
                want: Err((tonic::Code::Unauthenticated, "invalid bearer token")),
            },
            Case {
                name: "prefix of a token",
                header: Some("Bearer admin"),
                path: "/berth.v1.Berth/List",
                want: Err((tonic::Code::Unauthenticated, "invalid bearer token")),
            },
            Case {
                name: "not a bearer header",
                header: Some("Basic YWxpY2U6cHc="),
                path: "/berth.v1.Berth/List",
                want: Err((tonic::Code::Unauthenticated, "malformed authorization header: expected `Bearer TOKEN`")),
            },
            Case {
                name: "bearer without a token",
                header: Some("Bearer  "),
                path: "/berth.v1.Berth/List",
                want: Err((tonic::Code::Unauthenticated, "malformed authorization header: expected `Bearer TOKEN`")),
            },
        ];
        for case in cases {
            let got = auth
                .check(case.header.map(str::as_bytes), case.path)
                .map_err(|s| (s.code(), s.message().to_string()));
            let want = case
                .want
                .map(|(name, role)| Caller {
                    name: name.into(),
                    role,
                })
                .map_err(|(code, msg)| (code, msg.to_string()));
            assert_eq!(got, want, "{}", case.name);
        }
    }

    #[test]
    fn constant_time_comparison_is_plain_equality() {
        struct Case {
            name: &'static str,
            a: &'static str,
            b: &'static str,
            want: bool,
        }
        let cases = [
            Case {
                name: "equal",
                a: "secret",
                b: "secret",
                want: true,
            },
            Case {
                name: "last byte differs",
                a: "secret",
                b: "secreT",
                want: false,
            },
            Case {
                name: "prefix",
                a: "secret",
                b: "secre",
                want: false,
            },
            Case {
                name: "longer",
                a: "secret",
                b: "secrets",
                want: false,
            },
            Case {
                name: "both empty",
                a: "",
                b: "",
                want: true,
            },
            Case {
                name: "one empty",
                a: "",
                b: "x",
                want: false,
            },
        ];
        for case in cases {
            assert_eq!(
                constant_time_eq(case.a.as_bytes(), case.b.as_bytes()),
                case.want,
                "{}",
                case.name
            );
        }
    }

    /// The whole server in process: health answers without a token, the API does not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_stays_open_while_the_api_requires_a_token() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let tokens = dir.path().join("tokens.csv");
        std::fs::write(&tokens, "secret,alice,admin\n").expect("writing tokens");
        let tokens = tokens.display().to_string();
        let server =
            crate::server::InProcess::start(&dir.path().join("store"), &["--token-file", &tokens])
                .await;
        let addr = server.addr;
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("address")
            .connect()
            .await
            .expect("connecting");

        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "berth.v1.Berth".into(),
            })
            .await
            .expect("health needs no token")
            .into_inner()
            .status;
        assert_eq!(
            status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );

        let mut api = berth_proto::pb::berth_client::BerthClient::new(channel);
        let list = || berth_proto::pb::ListRequest {
            kind: berth_proto::pb::Kind::Node as i32,
            ..Default::default()
        };
        let refused = api.list(list()).await.expect_err("the API needs a token");
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        let mut request = tonic::Request::new(list());
        request
            .metadata_mut()
            .insert("authorization", "Bearer secret".parse().expect("ascii"));
        api.list(request)
            .await
            .expect("the admin token is accepted");

        server.shutdown.cancel();
        server
            .task
            .await
            .expect("the server task")
            .expect("a clean shutdown");
    }

    #[test]
    fn node_restriction_labels() {
        struct Case {
            key: &'static str,
            want: bool,
        }
        let cases = [
            Case {
                key: "node-restriction.kubernetes.io/trusted",
                want: true,
            },
            Case {
                key: "example.node-restriction.kubernetes.io/fips",
                want: true,
            },
            Case {
                key: "node.kubernetes.io/instance-type",
                want: false,
            },
            Case {
                key: "xnode-restriction.kubernetes.io/a",
                want: false,
            },
            Case {
                key: "zone",
                want: false,
            },
        ];
        for case in cases {
            assert_eq!(
                is_node_restricted_label(case.key),
                case.want,
                "{}",
                case.key
            );
        }
    }
}
