//! Serving a small HTTP router beside the gRPC server (the metrics endpoint, the web view):
//! bound at startup, so that a bad address fails the start, then served until shutdown; and
//! the one token check of those read-only endpoints.

use std::net::SocketAddr;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use super::security::{Authenticator, Caller};
use super::ServeError;

/// The gRPC call whose permission the HTTP endpoints ask for when tokens are on: they show
/// what a List may read, so viewers and admins may use them, node credentials may not.
pub const READ_PERMISSION: &str = "/berth.v1.Berth/List";

/// Checks an `authorization` header (`Bearer TOKEN`) for a viewer or admin token. A refusal
/// is the HTTP answer to send: 401 for a missing or unknown token, 403 for a role that may
/// not read, with the token check's message.
pub fn check_read(
    auth: &Authenticator,
    authorization: Option<&[u8]>,
) -> Result<Caller, Box<Response>> {
    auth.check(authorization, READ_PERMISSION)
        .map_err(|status| {
            let code = match status.code() {
                tonic::Code::PermissionDenied => StatusCode::FORBIDDEN,
                _ => StatusCode::UNAUTHORIZED,
            };
            Box::new(
                (
                    code,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    format!("{}\n", status.message()),
                )
                    .into_response(),
            )
        })
}

/// An HTTP router being served on a bound address.
#[derive(Debug)]
pub struct HttpServer {
    /// The address it accepts connections on (the real port when asked for port 0).
    pub addr: SocketAddr,
    /// The serving task: it ends once `shutdown` has fired and the open requests are
    /// answered. Await it before stopping the rest of the server.
    pub task: tokio::task::JoinHandle<()>,
}

/// Binds `addr` and serves `router` on it until `shutdown` fires; `name` ("metrics",
/// "web") labels the logs. Fails only if the address cannot be bound; errors while serving
/// are logged. Streams that never end on their own (server-sent events) must watch
/// `shutdown` themselves, or the graceful stop waits for their clients.
pub async fn serve(
    name: &'static str,
    addr: SocketAddr,
    router: axum::Router,
    shutdown: CancellationToken,
) -> Result<HttpServer, ServeError> {
    let bind_error = |source| ServeError::Bind { addr, source };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    info!(server = name, %addr, "HTTP listening");
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await;
        if let Err(e) = served {
            error!(server = name, error = %e, "HTTP server failed");
        }
    });
    Ok(HttpServer { addr, task })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn serves_until_shutdown() {
        let router = axum::Router::new().route("/hello", axum::routing::get(|| async { "hi" }));
        let shutdown = CancellationToken::new();
        let server = serve(
            "test",
            "127.0.0.1:0".parse().unwrap(),
            router,
            shutdown.clone(),
        )
        .await
        .expect("binds");
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream
            .write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(reply.ends_with("hi"), "{reply}");
        shutdown.cancel();
        server
            .task
            .await
            .expect("the server task ends after shutdown");
    }

    #[tokio::test]
    async fn an_address_in_use_fails_the_start() {
        let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap();
        let err = serve("test", addr, axum::Router::new(), CancellationToken::new())
            .await
            .expect_err("the port is taken");
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
