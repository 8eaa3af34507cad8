//! The read-only web view of `berth-scheduler --web-listen ADDR`: one page (assets embedded
//! in the binary) that shows the cluster and updates itself from a server-sent event stream.
//!
//! # Layout
//!
//! - A loop on its own thread watches nodes, pods, events, ResourceSlices and ResourceClaims
//!   (the informer runtime), counts bindings, samples the charts every [`SAMPLE_INTERVAL`]
//!   and publishes the page's JSON ([`view`]) through a watch channel, at most every
//!   [`PUBLISH_INTERVAL`].
//! - The router serves the page and its assets, `GET /api/view` (the latest JSON) and
//!   `GET /api/stream` (the same JSON as a server-sent event each time it changes; closed on
//!   shutdown).
//! - With `--token-file`, every request needs a viewer or admin token: an `Authorization:
//!   Bearer TOKEN` header (curl), or a session cookie that opening the page as
//!   `/?token=TOKEN` sets (browsers cannot add headers to a page load or an EventSource).
//!   The token leaves the address bar at once: the answer is a redirect to the bare URL.

pub mod view;

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use berth_proto::model::{Kind, Object};
use berth_store::ObjectStore;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use crate::server::http::{self, HttpServer};
use crate::server::informer::{self, Event, Informer};
use crate::server::security::{Authenticator, Caller};
use crate::server::ServeError;
use view::History;

/// How often the charts take a sample.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(2);
/// Shortest time between two published views, however fast the cluster changes.
pub const PUBLISH_INTERVAL: Duration = Duration::from_millis(500);
/// The cookie that carries a browser's session.
const SESSION_COOKIE: &str = "berth_web_session";
/// Most sessions kept; the oldest is forgotten first.
const MAX_SESSIONS: usize = 1024;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const UPLOT_JS: &str = include_str!("assets/vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("assets/vendor/uplot/uPlot.min.css");

/// A running web view.
pub struct WebView {
    /// The HTTP server; its address is the real port when asked for port 0.
    pub server: HttpServer,
    /// The loop that builds the view; it ends on shutdown.
    pub thread: std::thread::JoinHandle<()>,
}

/// Binds `addr`, starts the loop that watches `store`, and serves the view until `shutdown`
/// fires. With `auth`, requests need a viewer or admin token.
pub async fn start(
    addr: SocketAddr,
    store: Arc<dyn ObjectStore>,
    auth: Option<Arc<Authenticator>>,
    shutdown: CancellationToken,
) -> Result<WebView, ServeError> {
    let (publish, views) = watch::channel(Arc::new(String::from("null")));
    let kinds = [
        Kind::Node,
        Kind::Pod,
        Kind::Event,
        Kind::ResourceSlice,
        Kind::ResourceClaim,
    ];
    let informer = Informer::new("web view", store, &kinds);
    let router = router(views, auth, shutdown.clone());
    let server = http::serve("web", addr, router, shutdown.clone()).await?;
    let thread = informer::spawn("web-view", move || run(informer, publish, shutdown));
    Ok(WebView { server, thread })
}

/// Follows the cluster and publishes its view until `shutdown` fires.
async fn run(
    mut informer: Informer,
    publish: watch::Sender<Arc<String>>,
    shutdown: CancellationToken,
) {
    let mut history = History::new(view::HISTORY_SAMPLES);
    let mut sample = tokio::time::interval(SAMPLE_INTERVAL);
    sample.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut publish_tick = tokio::time::interval(PUBLISH_INTERVAL);
    publish_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut listed = false;
    let mut dirty = false;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            batch = informer.next_batch() => {
                let Some(batch) = batch else { return };
                for event in &batch {
                    match event {
                        Event::InitDone => listed = true,
                        Event::Apply { object, previous } | Event::InitApply { object, previous } => {
                            if let (Object::Pod(pod), Some(Object::Pod(before))) =
                                (object.as_ref(), previous.as_deref())
                            {
                                history.observe(pod, Some(before));
                            }
                        }
                        Event::Init | Event::Delete { .. } => {}
                    }
                }
                dirty = true;
            }
            _ = sample.tick(), if listed => {
                let cluster = cluster(informer.cache());
                history.sample(&view::summarize(&cluster), SystemTime::now());
                dirty = true;
            }
            _ = publish_tick.tick(), if dirty && listed => {
                let built = view::build(&cluster(informer.cache()), &history, SystemTime::now());
                match serde_json::to_string(&built) {
                    Ok(json) => {
                        publish.send_replace(Arc::new(json));
                    }
                    Err(e) => tracing::error!(error = %e, "encoding the web view"),
                }
                dirty = false;
            }
        }
    }
}

/// The objects the informer holds.
fn cluster(cache: &informer::Reflector) -> view::Cluster<'_> {
    let mut cluster = view::Cluster {
        nodes: cache.nodes(),
        ..view::Cluster::default()
    };
    for kind in [
        Kind::Pod,
        Kind::Event,
        Kind::ResourceSlice,
        Kind::ResourceClaim,
    ] {
        for object in cache.list(kind, None) {
            match object {
                Object::Pod(pod) => cluster.pods.push(pod),
                Object::Event(event) => cluster.events.push(event),
                Object::ResourceSlice(slice) => cluster.slices.push(slice),
                Object::ResourceClaim(claim) => cluster.claims.push(claim),
                _ => {}
            }
        }
    }
    cluster
}

/// What the handlers share.
#[derive(Clone)]
struct AppState {
    views: watch::Receiver<Arc<String>>,
    access: Arc<Access>,
    shutdown: CancellationToken,
}

/// Who may look: everyone (no token file), or holders of a viewer or admin token and the
/// browser sessions they opened.
struct Access {
    auth: Option<Arc<Authenticator>>,
    sessions: Mutex<Sessions>,
}

/// Browser sessions, by their random id; the oldest is forgotten beyond [`MAX_SESSIONS`].
#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Caller>,
    order: VecDeque<String>,
}

impl Sessions {
    fn open(&mut self, caller: Caller) -> String {
        let bytes: [u8; 32] = rand::random();
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        if self.order.len() >= MAX_SESSIONS {
            if let Some(oldest) = self.order.pop_front() {
                self.by_id.remove(&oldest);
            }
        }
        self.order.push_back(id.clone());
        self.by_id.insert(id.clone(), caller);
        id
    }
}

/// The router of the web view.
fn router(
    views: watch::Receiver<Arc<String>>,
    auth: Option<Arc<Authenticator>>,
    shutdown: CancellationToken,
) -> Router {
    let state = AppState {
        views,
        access: Arc::new(Access {
            auth,
            sessions: Mutex::new(Sessions::default()),
        }),
        shutdown,
    };
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .route(
            "/vendor/uPlot.iife.min.js",
            get(|| async { asset("text/javascript; charset=utf-8", UPLOT_JS) }),
        )
        .route(
            "/vendor/uPlot.min.css",
            get(|| async { asset("text/css; charset=utf-8", UPLOT_CSS) }),
        )
        .route("/api/view", get(current_view))
        .route("/api/stream", get(stream))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authorize,
        ))
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(state)
}

/// An embedded asset.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The latest view as JSON (`null` until the first list is in).
async fn current_view(State(state): State<AppState>) -> Response {
    let json = state.views.borrow().clone();
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        json.as_str().to_string(),
    )
        .into_response()
}

/// The view as a server-sent event (`event: view`) now and after each change, until the
/// client goes or the server shuts down.
async fn stream(State(state): State<AppState>) -> impl IntoResponse {
    let (tx, rx) = mpsc::channel::<Result<SseEvent, Infallible>>(2);
    let mut views = state.views.clone();
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        loop {
            let json = views.borrow_and_update().clone();
            let event = SseEvent::default().event("view").data(json.as_str());
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
                changed = views.changed() => if changed.is_err() { return },
            }
        }
    });
    (
        [(header::CACHE_CONTROL, "no-store")],
        Sse::new(ReceiverStream::new(rx)).keep_alive(KeepAlive::default()),
    )
}

/// `?token=` of a page load.
#[derive(serde::Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// Lets a request through when the server runs open, or when it carries a viewer or admin
/// token (header) or a session; turns `?token=TOKEN` into a session and a redirect.
async fn authorize(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(auth) = &state.access.auth else {
        return next.run(request).await;
    };
    let query_token = Query::<TokenQuery>::try_from_uri(request.uri())
        .ok()
        .and_then(|q| q.0.token);
    if let Some(token) = query_token {
        let header = format!("Bearer {token}");
        return match http::check_read(auth, Some(header.as_bytes())) {
            Ok(caller) => {
                tracing::info!(user = %caller.name, "web view session opened");
                let id = lock(&state.access.sessions).open(caller);
                let cookie = format!("{SESSION_COOKIE}={id}; HttpOnly; SameSite=Lax; Path=/");
                let location = request.uri().path().to_string();
                Response::builder()
                    .status(StatusCode::SEE_OTHER)
                    .header(header::LOCATION, location)
                    .header(header::SET_COOKIE, cookie)
                    .body(axum::body::Body::empty())
                    .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
            }
            Err(refused) => *refused,
        };
    }
    if let Some(authorization) = request.headers().get(header::AUTHORIZATION) {
        return match http::check_read(auth, Some(authorization.as_bytes())) {
            Ok(_) => next.run(request).await,
            Err(refused) => *refused,
        };
    }
    let session = session_id(request.headers())
        .and_then(|id| lock(&state.access.sessions).by_id.get(id).cloned());
    match session {
        Some(_) => next.run(request).await,
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "This web view needs a viewer or admin token: open it as /?token=TOKEN \
             (berth dev prints that address), or send the header \
             `Authorization: Bearer TOKEN`.\n",
        )
            .into_response(),
    }
}

fn lock(sessions: &Mutex<Sessions>) -> std::sync::MutexGuard<'_, Sessions> {
    sessions
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The session id of the request's cookie, if any.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// Headers of every answer: scripts and styles from this origin only, no framing, no
/// sniffing, no referrer (the first address may hold a token).
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::security::{Role, TokenEntry};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A plain HTTP/1.1 GET with extra header lines; the whole answer.
    async fn get(addr: SocketAddr, path: &str, headers: &[String]) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connects");
        let mut request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
        for header in headers {
            request.push_str(header);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.expect("sends");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.expect("reads");
        reply
    }

    fn status(reply: &str) -> &str {
        reply.lines().next().unwrap_or_default()
    }

    /// Serves the router over a published view, with `auth` if given; the sender must be
    /// held while requests are made (streams end when it goes).
    async fn serve(
        auth: Option<Authenticator>,
    ) -> (SocketAddr, CancellationToken, watch::Sender<Arc<String>>) {
        let (publish, views) = watch::channel(Arc::new(String::from("null")));
        publish.send_replace(Arc::new(String::from(r#"{"nodes":[]}"#)));
        let shutdown = CancellationToken::new();
        let router = router(views, auth.map(Arc::new), shutdown.clone());
        let server = http::serve(
            "web-test",
            "127.0.0.1:0".parse().unwrap(),
            router,
            shutdown.clone(),
        )
        .await
        .expect("binds");
        (server.addr, shutdown, publish)
    }

    fn entry(token: &str, role: Role) -> TokenEntry {
        TokenEntry {
            token: token.into(),
            name: format!("{role}-user"),
            role,
        }
    }

    #[tokio::test]
    async fn tokens_sessions_and_roles_gate_the_view() {
        let auth = Authenticator::new(vec![
            entry("admin-t", Role::Admin),
            entry("viewer-t", Role::Viewer),
            entry("node-t", Role::Node),
        ]);
        let (addr, shutdown, _publish) = serve(Some(auth)).await;
        let bearer = |t: &str| vec![format!("Authorization: Bearer {t}")];

        // A page load with a token opens a session and drops the token from the address.
        let opened = get(addr, "/?token=viewer-t", &[]).await;
        assert_eq!(status(&opened), "HTTP/1.1 303 See Other", "{opened}");
        assert!(opened.contains("\r\nlocation: /\r\n"), "{opened}");
        let cookie = opened
            .lines()
            .find_map(|l| l.strip_prefix("set-cookie: "))
            .expect("a session cookie");
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
            "{cookie}"
        );
        let session = cookie.split(';').next().expect("name=value").to_string();

        struct Case {
            name: &'static str,
            path: &'static str,
            headers: Vec<String>,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "no credentials",
                path: "/api/view",
                headers: vec![],
                want: "HTTP/1.1 401 Unauthorized",
            },
            Case {
                name: "a viewer's bearer token",
                path: "/api/view",
                headers: bearer("viewer-t"),
                want: "HTTP/1.1 200 OK",
            },
            Case {
                name: "an admin's bearer token",
                path: "/",
                headers: bearer("admin-t"),
                want: "HTTP/1.1 200 OK",
            },
            Case {
                name: "a node credential may not look",
                path: "/api/view",
                headers: bearer("node-t"),
                want: "HTTP/1.1 403 Forbidden",
            },
            Case {
                name: "an unknown token",
                path: "/api/view",
                headers: bearer("viewer-x"),
                want: "HTTP/1.1 401 Unauthorized",
            },
            Case {
                name: "a node credential opens no session",
                path: "/?token=node-t",
                headers: vec![],
                want: "HTTP/1.1 403 Forbidden",
            },
            Case {
                name: "an unknown token opens no session",
                path: "/?token=nope",
                headers: vec![],
                want: "HTTP/1.1 401 Unauthorized",
            },
            Case {
                name: "the session cookie",
                path: "/app.js",
                headers: vec![format!("Cookie: other=1; {session}")],
                want: "HTTP/1.1 200 OK",
            },
            Case {
                name: "a made-up session",
                path: "/api/view",
                headers: vec![format!("Cookie: {SESSION_COOKIE}=00ff")],
                want: "HTTP/1.1 401 Unauthorized",
            },
        ];
        for case in cases {
            let reply = get(addr, case.path, &case.headers).await;
            assert_eq!(status(&reply), case.want, "{}: {reply}", case.name);
            assert!(
                reply.contains("\r\nx-content-type-options: nosniff\r\n"),
                "{}: every answer carries the security headers: {reply}",
                case.name
            );
        }
        shutdown.cancel();
    }

    #[tokio::test]
    async fn an_open_server_serves_the_page_the_view_and_the_stream() {
        let (addr, shutdown, _publish) = serve(None).await;
        let page = get(addr, "/", &[]).await;
        assert_eq!(status(&page), "HTTP/1.1 200 OK");
        assert!(page.contains("<title>Berth</title>"), "{page}");
        let view = get(addr, "/api/view", &[]).await;
        assert!(view.ends_with(r#"{"nodes":[]}"#), "{view}");

        // The stream sends the view at once, and ends when the server shuts down.
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connects");
        stream
            .write_all(b"GET /api/stream HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .expect("sends");
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(&seen).contains("data: {\"nodes\":[]}") {
            let n = stream.read(&mut buf).await.expect("reads");
            assert!(
                n > 0,
                "the stream ended early: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&seen).contains("event: view"));
        shutdown.cancel();
        let closed = async { while stream.read(&mut buf).await.expect("reads") > 0 {} };
        tokio::time::timeout(Duration::from_secs(30), closed)
            .await
            .expect("the stream closes on shutdown");
    }
}
