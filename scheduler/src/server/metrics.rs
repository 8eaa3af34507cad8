//! The Prometheus endpoint (`--metrics-listen ADDR`, `GET /metrics`) and Berth's own
//! metrics beside kube-scheduler's (those are recorded by the core, see
//! `berth_core::metrics`): gRPC requests by method and code with their latency, the store's
//! group commits, agent sessions, and nodes by condition.
//!
//! The recorder is process-wide (the `metrics` facade has one global recorder): it is
//! installed once, on the first server that asks, and every later server of the same
//! process (tests, benchmarks) shares it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use berth_proto::model::{Kind, Object};
use berth_store::ObjectStore;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tonic::codegen::{http, BoxFuture, Service};

use super::security::{split_path, Authenticator};

/// Counter `berth_api_requests_total{service, method, code}`: gRPC requests by their
/// status code (Go's names: `OK`, `NotFound`, ...).
pub const API_REQUESTS: &str = "berth_api_requests_total";
/// Histogram `berth_api_request_duration_seconds{service, method}`: until the response's
/// headers (for streams: until the stream opens).
pub const API_REQUEST_DURATION: &str = "berth_api_request_duration_seconds";
/// Histogram `berth_store_commit_duration_seconds`: one group commit of the writer.
pub const STORE_COMMIT_DURATION: &str = "berth_store_commit_duration_seconds";
/// Histogram `berth_store_commit_batch_size`: writes in one group commit.
pub const STORE_COMMIT_BATCH: &str = "berth_store_commit_batch_size";
/// Counter `berth_api_cache_consistent_read_fallbacks_total{reason}`: Gets and Lists that
/// the API's cache could not serve consistently (`timeout`: it did not reach the store's
/// current revision within 3 s; `revision unknown`: the store did not answer), served from
/// the store instead.
pub const CONSISTENT_READ_FALLBACKS: &str = "berth_api_cache_consistent_read_fallbacks_total";
/// Gauge `berth_agent_sessions`: agents connected now.
pub const AGENT_SESSIONS: &str = "berth_agent_sessions";
/// Gauge `berth_nodes{condition, status}`: nodes whose condition has that status.
pub const NODES: &str = "berth_nodes";

/// The Prometheus text format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// How much a quantile summary remembers (its buckets roll off one at a time).
const SUMMARY_WINDOW: (Duration, u32) = (Duration::from_secs(60), 5);

/// How often the recorder's histograms are drained into their summaries between scrapes.
const UPKEEP_PERIOD: Duration = Duration::from_secs(5);

/// Why the recorder could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The recorder's configuration was refused.
    #[error("installing the metrics recorder: {0}")]
    Build(#[source] metrics_exporter_prometheus::BuildError),
    /// The upkeep thread could not start.
    #[error("starting the metrics upkeep thread: {0}")]
    Upkeep(#[source] std::io::Error),
}

/// The process's Prometheus recorder, installed on the first call (with every histogram's
/// buckets and every metric's help), and shared afterwards.
pub fn install() -> Result<PrometheusHandle, MetricsError> {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    static INSTALL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let mut builder = PrometheusBuilder::new()
        .set_quantiles(&[0.5, 0.9, 0.99])
        .and_then(|b| b.set_bucket_duration(SUMMARY_WINDOW.0))
        .map_err(MetricsError::Build)?
        .set_bucket_count(SUMMARY_WINDOW.1.try_into().expect("a non-zero count"));
    let mut buckets = berth_core::metrics::histogram_buckets();
    let latency = berth_core::metrics::exponential_buckets(0.0001, 2.0, 16);
    buckets.push((API_REQUEST_DURATION, latency.clone()));
    buckets.push((STORE_COMMIT_DURATION, latency));
    buckets.push((
        STORE_COMMIT_BATCH,
        berth_core::metrics::exponential_buckets(1.0, 2.0, 12),
    ));
    for (name, bounds) in buckets {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(name.to_string()), &bounds)
            .map_err(MetricsError::Build)?;
    }
    let handle = builder.install_recorder().map_err(MetricsError::Build)?;
    // A histogram keeps every sample recorded until upkeep drains it into its summary;
    // without a scraper (the usual `berth dev`) only this thread bounds that memory. The
    // recorder is the process's, so the thread is too (a runtime's task would stop with
    // the first server's runtime).
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("metrics upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_PERIOD);
            upkeep.run_upkeep();
        })
        .map_err(MetricsError::Upkeep)?;
    berth_core::metrics::describe();
    describe();
    Ok(HANDLE.get_or_init(|| handle).clone())
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        API_REQUESTS,
        "gRPC requests, by service, method and status code"
    );
    describe_histogram!(
        API_REQUEST_DURATION,
        Unit::Seconds,
        "gRPC request latency until the response headers, by service and method"
    );
    describe_histogram!(
        STORE_COMMIT_DURATION,
        Unit::Seconds,
        "Duration of one group commit of writes to the store"
    );
    describe_histogram!(STORE_COMMIT_BATCH, "Writes committed in one group commit");
    describe_counter!(
        CONSISTENT_READ_FALLBACKS,
        "Gets and lists served from the store because the cache could not be brought up to the store's revision, by reason"
    );
    describe_gauge!(AGENT_SESSIONS, "Agents connected to this scheduler");
    describe_gauge!(
        NODES,
        "Nodes whose condition has the status, by condition and status"
    );
}

/// The `/metrics` route. With `auth`, a scrape needs a viewer or admin bearer token
/// (Prometheus' `authorization` setting sends one).
pub fn router(
    handle: PrometheusHandle,
    store: Arc<dyn ObjectStore>,
    auth: Option<Arc<Authenticator>>,
) -> axum::Router {
    let nodes = Arc::new(NodeGauges::default());
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: http::HeaderMap| async move {
            if let Some(auth) = &auth {
                let authorization = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
                if let Err(refused) = super::http::check_read(auth, authorization) {
                    return *refused;
                }
            }
            let text = tokio::task::spawn_blocking(move || {
                nodes.refresh(store.as_ref());
                handle.run_upkeep();
                handle.render()
            })
            .await;
            match text {
                Ok(text) => ([(header::CONTENT_TYPE, TEXT_FORMAT)], text).into_response(),
                Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
            }
        }),
    )
}

/// [`NODES`], counted from the store at each scrape; a (condition, status) pair seen
/// before and now absent reads 0 rather than vanishing.
#[derive(Default)]
struct NodeGauges {
    seen: Mutex<BTreeMap<(String, String), usize>>,
}

impl NodeGauges {
    fn refresh(&self, store: &dyn ObjectStore) {
        let nodes = match store.list(Kind::Node, None) {
            Ok(nodes) => nodes,
            Err(e) => {
                tracing::warn!(error = %e, "listing nodes for the metrics");
                return;
            }
        };
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.values_mut().for_each(|count| *count = 0);
        for node in &nodes {
            let Object::Node(node) = node else { continue };
            for condition in &node.status.conditions {
                *seen
                    .entry((condition.type_.clone(), condition.status.clone()))
                    .or_default() += 1;
            }
        }
        for ((condition, status), count) in seen.iter() {
            metrics::gauge!(NODES, "condition" => condition.clone(), "status" => status.clone())
                .set(*count as f64);
        }
    }
}

/// A Get or List the cache could not serve consistently went to the store, for `reason`.
pub fn consistent_read_fallback(reason: &'static str) {
    metrics::counter!(CONSISTENT_READ_FALLBACKS, "reason" => reason).increment(1);
}

/// The writer committed `writes` writes in one transaction, in `elapsed`.
pub fn store_commit(writes: usize, elapsed: Duration) {
    metrics::histogram!(STORE_COMMIT_DURATION).record(elapsed.as_secs_f64());
    metrics::histogram!(STORE_COMMIT_BATCH).record(writes as f64);
}

/// `sessions` agents are connected now.
pub fn agent_sessions(sessions: usize) {
    metrics::gauge!(AGENT_SESSIONS).set(sessions as f64);
}

/// A layer for the gRPC server that counts each request and times it ([`API_REQUESTS`],
/// [`API_REQUEST_DURATION`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ApiMetricsLayer;

impl<S> tower_layer::Layer<S> for ApiMetricsLayer {
    type Service = ApiMetrics<S>;

    fn layer(&self, inner: S) -> ApiMetrics<S> {
        ApiMetrics { inner }
    }
}

/// A gRPC service whose requests are counted and timed; see [`ApiMetricsLayer`].
#[derive(Clone, Debug)]
pub struct ApiMetrics<S> {
    inner: S,
}

impl<S, B, R> Service<http::Request<B>> for ApiMetrics<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let path = request.uri().path().to_string();
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            let code = match &response {
                Ok(response) => grpc_code(response.headers()),
                Err(_) => "Unknown",
            };
            let (service, method) = split_path(&path);
            metrics::histogram!(API_REQUEST_DURATION, "service" => service.to_string(), "method" => method.to_string())
                .record(started.elapsed().as_secs_f64());
            metrics::counter!(API_REQUESTS, "service" => service.to_string(), "method" => method.to_string(), "code" => code)
                .increment(1);
            response
        })
    }
}

/// The status code a gRPC response's headers carry, by Go's names (a failure is sent as
/// headers only; a success puts its status in the trailers, so no header means OK).
fn grpc_code(headers: &http::HeaderMap) -> &'static str {
    let code = headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(tonic::Code::Ok, tonic::Code::from);
    code_name(code)
}

/// Go's `codes.Code.String()` of a gRPC status code.
fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "Canceled",
        Unknown => "Unknown",
        InvalidArgument => "InvalidArgument",
        DeadlineExceeded => "DeadlineExceeded",
        NotFound => "NotFound",
        AlreadyExists => "AlreadyExists",
        PermissionDenied => "PermissionDenied",
        ResourceExhausted => "ResourceExhausted",
        FailedPrecondition => "FailedPrecondition",
        Aborted => "Aborted",
        OutOfRange => "OutOfRange",
        Unimplemented => "Unimplemented",
        Internal => "Internal",
        Unavailable => "Unavailable",
        DataLoss => "DataLoss",
        Unauthenticated => "Unauthenticated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_codes_by_header() {
        let cases = [
            (
                "no header: a success, its status in the trailers",
                None,
                "OK",
            ),
            ("not found", Some("5"), "NotFound"),
            ("failed precondition", Some("9"), "FailedPrecondition"),
            ("garbage reads as OK", Some("x"), "OK"),
        ];
        for (name, header, want) in cases {
            let mut headers = http::HeaderMap::new();
            if let Some(value) = header {
                headers.insert("grpc-status", value.parse().unwrap());
            }
            assert_eq!(grpc_code(&headers), want, "{name}");
        }
    }
}
