//! The `berth-scheduler` service: the store, the API and agent gRPC services, the scheduling
//! loop and the writer, wired together; with health and reflection for grpcurl-style tools.
//!
//! # Layout
//!
//! - [`admission`]: defaults, validation and update rules applied to every write.
//! - [`api`]: the user-facing `Berth` service.
//! - [`binding`]: what binding a pod means, and the `Bind` RPC for other schedulers.
//! - [`agents`]: the `Agent` service and the dispatcher that routes pods to node sessions.
//! - [`scheduling`]: the scheduling loop (snapshot, queue, cycle, assume, bind).
//! - [`leadership`]: leader election among replicas; the leader-only loops, fenced.
//! - [`writer`]: group-committed writes for binds, statuses and events.
//! - [`group_commit`]: group commit for the API's applies, each caller getting its result.
//! - [`metrics`]: the Prometheus endpoint, and Berth's API, store and agent metrics.
//! - [`informer`]: the watch-loop runtime: list, follow the changes, re-list after falling
//!   behind; the reflector of the latest objects; the work queue with back-off.
//! - [`events`]: the event recorder.
//! - [`error`]: the server's error type and its mapping to gRPC statuses.
//! - [`http`]: serving an HTTP router (metrics, web view) on its own address until shutdown.
//! - [`security`]: bearer tokens and roles, NodeRestriction, TLS.
//! - [`node_lifecycle`]: heartbeat monitoring, and taints that follow node conditions.
//! - [`taint_eviction`]: evicting pods from nodes with NoExecute taints they do not tolerate.
//! - [`eviction`]: the Eviction API, which honours PodDisruptionBudgets.
//! - [`quota`]: ResourceQuota admission for pods.
//! - [`usage`]: agents' usage (`berth top`), events and logs (`berth logs`): the
//!   `Telemetry` service.

pub mod admission;
pub mod agents;
pub mod api;
pub mod binding;
pub mod commit_thread;
pub mod error;
pub mod events;
pub mod eviction;
pub mod group_commit;
pub mod http;
pub mod informer;
pub mod label_index;
pub mod leadership;
pub mod metrics;
pub mod node_lifecycle;
pub mod node_slices;
pub mod quota;
pub mod scheduling;
pub mod security;
pub mod taint_eviction;
pub mod usage;
pub mod watch_cache;
pub mod writer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use berth_proto::model::Kind;
use berth_proto::pb;
use berth_store::{Backend, ElectionConfig, ObjectStore};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::profile::Profiles;

/// Flags of `berth-scheduler`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Address to serve gRPC on.
    #[arg(long, default_value = "127.0.0.1:7070", env = "BERTH_LISTEN")]
    pub listen: SocketAddr,
    /// Folder of the embedded store; created if missing. Unused with --store.
    #[arg(long, default_value = "berth-data", env = "BERTH_DATA_DIR")]
    pub data_dir: PathBuf,
    /// Keep every object in an etcd cluster (`etcd://HOST:PORT,HOST:PORT,...`, v3 API)
    /// instead of the embedded store in --data-dir.
    #[arg(long, env = "BERTH_STORE", value_parser = parse_store_url)]
    pub store: Option<String>,
    /// KubeSchedulerConfiguration file with the scheduling profiles.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Seed for breaking ties between equally good nodes (random when left out).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Static token file, one `TOKEN,NAME,ROLE` a line (ROLE: admin, viewer or node);
    /// without it the API is open.
    #[arg(long, env = "BERTH_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// PEM certificate chain to serve TLS with (with --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// How often the node lifecycle controller checks node health (`5s`, `500ms`).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub node_monitor_period: std::time::Duration,
    /// How long a node's agent may stay silent before the node goes Ready=Unknown and is
    /// tainted unreachable.
    #[arg(long, default_value = "50s", value_parser = humantime::parse_duration)]
    pub node_monitor_grace_period: std::time::Duration,
    /// Nodes per second that may get a not-ready or unreachable NoExecute taint (which
    /// evicts their pods), so that a partition does not empty the cluster at once; 0 stops
    /// such taints.
    #[arg(long, default_value_t = 0.1, value_parser = parse_rate)]
    pub node_eviction_rate: f64,
    /// tolerationSeconds of the `node.kubernetes.io/not-ready:NoExecute` toleration added to
    /// every pod that has none.
    #[arg(long, default_value_t = crate::admission::DEFAULT_TOLERATION_SECONDS)]
    pub default_not_ready_toleration_seconds: i64,
    /// tolerationSeconds of the `node.kubernetes.io/unreachable:NoExecute` toleration added
    /// to every pod that has none.
    #[arg(long, default_value_t = crate::admission::DEFAULT_TOLERATION_SECONDS)]
    pub default_unreachable_toleration_seconds: i64,
    /// Address to serve Prometheus metrics on (`GET /metrics`, plain HTTP; with
    /// --token-file a scrape needs a viewer or admin token); off when left out.
    #[arg(long, env = "BERTH_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Address to serve the read-only web view on (plain HTTP; with --token-file it asks
    /// for a viewer or admin token); off when left out.
    #[arg(long, env = "BERTH_WEB_LISTEN")]
    pub web_listen: Option<SocketAddr>,
    /// Elect a leader among the replicas sharing the store before running the scheduling
    /// loop and the controllers, so that only one replica does (kube-scheduler's flag and
    /// default). On the embedded store one process owns the folder, so it leads at once.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    /// How long a standby waits, after the leader last renewed its lease, before it may
    /// take over.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub leader_elect_lease_duration: std::time::Duration,
    /// How long the leader keeps trying to renew its lease before it stops leading.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub leader_elect_renew_deadline: std::time::Duration,
    /// How often the leader renews and a standby tries to take over.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub leader_elect_retry_period: std::time::Duration,
}

impl Args {
    /// The election's timing, checked as kube-scheduler checks it: the lease outlasts the
    /// renew deadline, which outlasts 1.2 retry periods (the retry's jitter).
    pub fn election(&self) -> Result<ElectionConfig, ServeError> {
        let config = ElectionConfig {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        };
        if config.lease_duration <= config.renew_deadline {
            return Err(ServeError::Flags(format!(
                "--leader-elect-lease-duration ({:?}) must be greater than --leader-elect-renew-deadline ({:?})",
                config.lease_duration, config.renew_deadline
            )));
        }
        if config.renew_deadline.as_secs_f64() <= 1.2 * config.retry_period.as_secs_f64() {
            return Err(ServeError::Flags(format!(
                "--leader-elect-renew-deadline ({:?}) must be greater than 1.2 × --leader-elect-retry-period ({:?})",
                config.renew_deadline, config.retry_period
            )));
        }
        Ok(config)
    }
}

/// A `--store` URL that [`berth_store::EtcdConfig::from_url`] accepts.
fn parse_store_url(value: &str) -> Result<String, String> {
    berth_store::EtcdConfig::from_url(value)
        .map(|_| value.to_string())
        .map_err(|e| e.to_string())
}

/// A rate: a finite number, zero or more.
fn parse_rate(value: &str) -> Result<f64, String> {
    let rate: f64 = value
        .parse()
        .map_err(|_| format!("{value:?} is not a number"))?;
    if !rate.is_finite() || rate < 0.0 {
        return Err(format!("{value:?} must be a finite number, zero or more"));
    }
    Ok(rate)
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The store could not be opened.
    #[error("opening the store at {path}: {source}")]
    Store {
        /// The folder, or the etcd URL.
        path: PathBuf,
        /// The cause.
        #[source]
        source: berth_store::Error,
    },
    /// The scheduling configuration is invalid.
    #[error("reading the scheduler configuration {path}: {source}")]
    Config {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: crate::profile::ConfigError,
    },
    /// The listener could not be bound.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The token file or the TLS files are unusable.
    #[error("{0}")]
    Security(#[from] security::SecurityError),
    /// Reflection could not be set up.
    #[error("setting up gRPC reflection: {0}")]
    Reflection(#[source] tonic_reflection::server::Error),
    /// The gRPC server failed.
    #[error("gRPC server: {0}")]
    Transport(#[source] tonic::transport::Error),
    /// The metrics recorder could not be installed.
    #[error("{0}")]
    Metrics(#[from] metrics::MetricsError),
    /// Flags that contradict each other.
    #[error("{0}")]
    Flags(String),
}

/// A scheduler serving on a loopback port inside this process, for tests and benchmarks.
pub struct InProcess {
    /// The address it accepts connections on.
    pub addr: SocketAddr,
    /// Fires to stop it.
    pub shutdown: CancellationToken,
    /// The server task; it ends after `shutdown` fires.
    pub task: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl InProcess {
    /// Starts `berth-scheduler --listen 127.0.0.1:0 --data-dir DATA_DIR` with `flags` added,
    /// and returns once it accepts connections. Panics if the flags do not parse or the
    /// server stops before listening: callers are tests and benchmarks.
    pub async fn start(data_dir: &std::path::Path, flags: &[&str]) -> InProcess {
        use clap::Parser;
        let mut argv = vec![
            "berth-scheduler".to_string(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--data-dir".into(),
            data_dir.display().to_string(),
        ];
        argv.extend(flags.iter().map(|f| f.to_string()));
        let command = cli::Command::parse_from(argv);
        let shutdown = CancellationToken::new();
        let (ready, addr) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(run(command.args, shutdown.clone(), Some(ready)));
        let addr = addr.await.expect("the scheduler listens");
        InProcess {
            addr,
            shutdown,
            task,
        }
    }
}

/// How long a stopping server waits for its open requests before it closes them.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the scheduler until `shutdown` fires. `ready` receives the bound address once the
/// server accepts connections (useful with port 0).
pub async fn run(
    args: Args,
    shutdown: CancellationToken,
    ready: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> Result<(), ServeError> {
    let security = security::Settings::load(
        args.token_file.as_deref(),
        args.tls_cert.as_deref(),
        args.tls_key.as_deref(),
    )?;
    let server = security.server_builder()?;
    let election = args.election()?;
    let profiles = match &args.config {
        Some(path) => Profiles::from_file(path).map_err(|source| ServeError::Config {
            path: path.clone(),
            source,
        })?,
        None => Profiles::default(),
    };
    if args.store.is_none() {
        std::fs::create_dir_all(&args.data_dir).map_err(|e| ServeError::Bind {
            addr: args.listen,
            source: e,
        })?;
    }
    let backend = Backend::open(args.store.as_deref(), &args.data_dir).map_err(|source| {
        ServeError::Store {
            path: args
                .store
                .as_deref()
                .map_or_else(|| args.data_dir.clone(), PathBuf::from),
            source,
        }
    })?;
    let store: Arc<dyn ObjectStore> = backend.store();
    info!(store = ?backend, revision = store.revision(), "store opened");

    let admission_config = admission::AdmissionConfig {
        not_ready_toleration_seconds: args.default_not_ready_toleration_seconds,
        unreachable_toleration_seconds: args.default_unreachable_toleration_seconds,
    };
    let node_health = Arc::new(node_lifecycle::NodeHealth::new());
    let explain = scheduling::ExplainRelay::new();
    let leader = leadership::LeaderConfig {
        profiles,
        seed: args.seed.unwrap_or_else(rand::random),
        admission: admission_config,
        lifecycle: node_lifecycle::LifecycleConfig {
            monitor_period: args.node_monitor_period,
            grace_period: args.node_monitor_grace_period,
            eviction_rate: args.node_eviction_rate,
        },
        health: node_health.clone(),
        explain: explain.clone(),
        identity: leadership::identity(),
    };
    // The scheduling loop and the controllers run while this replica leads (always, without
    // an election), their writes fenced on the leadership.
    let leader_task = if args.leader_elect {
        // On sled one process owns the folder: its in-process elector grants leadership at
        // once. On etcd the election key is held on a lease.
        let elector = backend.elector(election);
        info!(identity = %leader.identity, lease_duration = ?election.lease_duration, renew_deadline = ?election.renew_deadline, retry_period = ?election.retry_period, "leader election on");
        tokio::spawn(leadership::run(
            elector,
            store.clone(),
            leader,
            shutdown.clone(),
        ))
    } else {
        let loops = leadership::LeaderLoops::start(store.clone(), &leader, &shutdown);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            loops.stop().await;
        })
    };
    // Writes on the agents' behalf (their events, as kubelet records its own) are not the
    // leader's: any replica makes them, unfenced.
    let (failures_tx, _) = tokio::sync::mpsc::unbounded_channel();
    let (writer, writer_task) = writer::Writer::spawn(store.clone(), failures_tx);

    let sessions = Arc::new(agents::Sessions::default());
    // Agents' events are recorded as kubelet records its own.
    let telemetry = Arc::new(usage::Telemetry::new(
        store.clone(),
        Some(events::EventRecorder::new(writer.clone(), "kubelet")),
    ));
    let dispatcher = informer::spawn("agent-dispatcher", {
        let pods = informer::Informer::new("agent dispatcher", store.clone(), &[Kind::Pod]);
        let (sessions, shutdown) = (sessions.clone(), shutdown.clone());
        move || agents::dispatch(pods, sessions, shutdown)
    });
    // Agent sessions and watches are endless streams: end them when shutdown begins, or
    // the graceful stop would wait for the clients to hang up.
    tokio::spawn({
        let (sessions, shutdown) = (sessions.clone(), shutdown.clone());
        async move {
            shutdown.cancelled().await;
            sessions.close_all();
        }
    });

    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<pb::berth_server::BerthServer<api::ApiService>>()
        .await;
    health_reporter
        .set_serving::<pb::agent_server::AgentServer<agents::AgentService>>()
        .await;
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(ServeError::Reflection)?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(ServeError::Reflection)?;

    let metrics_server = match args.metrics_listen {
        Some(addr) => {
            let router = metrics::router(metrics::install()?, store.clone(), security.auth.clone());
            Some(http::serve("metrics", addr, router, shutdown.clone()).await?)
        }
        None => None,
    };

    let web = match args.web_listen {
        Some(addr) => Some(
            crate::web::start(addr, store.clone(), security.auth.clone(), shutdown.clone()).await?,
        ),
        None => None,
    };

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: args.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: args.listen,
        source,
    })?;
    info!(%addr, "berth-scheduler listening");
    if let Some(ready) = ready {
        let _ = ready.send(addr);
    }
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    // Applies and the agents' status writes share one group commit: one transaction and
    // one flush for both. On sled, reads and admission need nothing but this process.
    let api = api::ApiService::new(store.clone())
        .with_admission(admission_config)
        .with_shutdown(shutdown.clone())
        .with_local_store(matches!(backend, Backend::Sled(_)));
    let commits = api.commits().clone();
    let objects = api.objects().clone();
    let serving = server
        .layer(metrics::ApiMetricsLayer)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(
            security.protect(
                pb::berth_server::BerthServer::new(api)
                    .max_decoding_message_size(api::MAX_REQUEST_BYTES),
            ),
        )
        .add_service(
            security.protect(
                pb::agent_server::AgentServer::new(
                    agents_service(&backend, &args, store.clone(), sessions.clone(), objects)
                        .with_commits(commits)
                        .with_health(node_health)
                        .with_telemetry(telemetry.clone()),
                )
                .max_decoding_message_size(api::MAX_REQUEST_BYTES),
            ),
        )
        .add_service(
            security.protect(pb::telemetry_server::TelemetryServer::new(
                usage::TelemetryService::new(store.clone(), telemetry, sessions)
                    .with_explainer(explain.explainer()),
            )),
        )
        .serve_with_incoming_shutdown(incoming, shutdown.clone().cancelled_owned());
    // A graceful stop waits for open requests; one waiting on an unreachable store (etcd
    // gone), or a client that keeps its connection busy, must not hold the stop forever.
    let result = tokio::select! {
        result = serving => result.map_err(ServeError::Transport),
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            warn!(grace = ?SHUTDOWN_GRACE, "requests still open after the shutdown grace period; closing");
            Ok(())
        }
    };

    // Shut down in order: no new scheduling, then the pending writes, then the store.
    shutdown.cancel();
    if let Some(metrics_server) = metrics_server {
        if let Err(e) = metrics_server.task.await {
            error!(error = %e, "the metrics server failed");
        }
    }
    if let Some(web) = web {
        if let Err(e) = web.server.task.await {
            error!(error = %e, "the web view's server failed");
        }
        join_loop("web view", web.thread).await;
    }
    // The leader's loops end and drain their own writer; then the agents' writer drains.
    // All within one more grace period: with the store out of reach they may not finish.
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    within(
        deadline,
        "agent dispatcher",
        join_loop("agent dispatcher", dispatcher),
    )
    .await;
    if let Some(Err(e)) = within(deadline, "leader's loops", leader_task).await {
        error!(error = %e, "the leader's loops failed");
    }
    drop(writer);
    if let Some(Err(e)) = within(deadline, "writer", writer_task).await {
        error!(error = %e, "the writer failed; writes queued at shutdown may be lost");
    }
    info!("berth-scheduler stopped");
    result
}

/// The Agent service; on a store that replicas share (etcd), it stores each node's
/// heartbeat at least every quarter of the grace period (at most every 10 s, kubelet's
/// status update frequency), so that the leader's node lifecycle controller hears of
/// agents whose sessions are on other replicas.
fn agents_service(
    backend: &Backend,
    args: &Args,
    store: Arc<dyn ObjectStore>,
    sessions: Arc<agents::Sessions>,
    objects: Arc<watch_cache::ObjectCache>,
) -> agents::AgentService {
    let service = agents::AgentService::new(store, sessions);
    match backend {
        Backend::Sled(_) => service.with_cache(objects),
        _ => service.with_status_report_period(
            (args.node_monitor_grace_period / 4).min(std::time::Duration::from_secs(10)),
        ),
    }
}

/// Waits for one step of the shutdown until `deadline`; past it, says so and goes on
/// without it (what it still had to write is lost, as in a crash).
async fn within<F: std::future::Future>(
    deadline: tokio::time::Instant,
    step: &'static str,
    future: F,
) -> Option<F::Output> {
    let finished = tokio::time::timeout_at(deadline, future).await.ok();
    if finished.is_none() {
        warn!(
            step,
            "shutdown step unfinished after the grace period; going on without it"
        );
    }
    finished
}

/// Waits for a loop's thread to end, saying so if it ended by a panic (already reported by
/// the panic hook; this names the loop).
async fn join_loop(name: &'static str, thread: std::thread::JoinHandle<()>) {
    match tokio::task::spawn_blocking(move || thread.join()).await {
        Ok(Ok(())) => {}
        Ok(Err(_)) => error!(thread = name, "the loop panicked"),
        Err(e) => error!(thread = name, error = %e, "waiting for the loop failed"),
    }
}

/// The command line of `berth-scheduler` (and `berth scheduler`); the binaries parse it,
/// install logging and call [`run`].
pub mod cli {
    use clap::Parser;

    /// Command line of `berth-scheduler`.
    #[derive(Parser, Debug)]
    #[command(
        name = "berth-scheduler",
        version,
        about = "Berth's scheduler and API server"
    )]
    pub struct Command {
        /// Server flags.
        #[command(flatten)]
        pub args: super::Args,
    }
}
