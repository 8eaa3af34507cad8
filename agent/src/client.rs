//! The gRPC edge to the scheduler: registration, the long-lived session stream (heartbeats
//! with node conditions, pod status, usage and events up; pods to start and stop and log
//! requests down), and reconnecting with back-off — to the next of several replicas'
//! addresses, round robin, when one goes away. The only module that touches `pb` types
//! besides [`crate::logs`]; everything behind it works on the object model.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_proto::model::{self, NodeCondition, Object, PodPhase, PodStatus, Time};
use berth_proto::names;
use berth_proto::pb;
use berth_proto::pb::agent_client::AgentClient;
use berth_proto::pb::agent_message::Msg as Up;
use berth_proto::pb::scheduler_message::Msg as Down;
use berth_proto::wire::{node_to_pb, object_to_pb, pod_from_pb, to_json, Identity};
use berth_proto::Quantity;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tracing::{debug, info, instrument, warn, Instrument};

use crate::admission;
use crate::devices::Published;
use crate::error::{error_chain, Error, Result};
use crate::eviction::Signal;
use crate::housekeeping::{NodeState, PodEvent, Reports, EVENT_WARNING};
use crate::node::{pressure_condition, ready_condition, NodeConfig};
use crate::runtime::{PodReport, Runtime};
use crate::usage::{NodeUsage, PodUsage};

/// Pod status reason for a pod the runtime could not start.
pub const REASON_START_ERROR: &str = "StartError";
/// Nodes sharing one HTTP/2 connection when an agent hosts many (servers commonly allow
/// a few hundred concurrent streams per connection).
pub const NODES_PER_CONNECTION: usize = 100;

/// First delay before reconnecting.
const BACKOFF_INITIAL: Duration = Duration::from_millis(500);
/// Longest delay between reconnects.
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// Pause before trying the next replica when the last one failed: the back-off starts only
/// once every replica was tried.
const FAILOVER_DELAY: Duration = Duration::from_millis(100);
/// How long to wait for a TCP connection to the scheduler.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// HTTP/2 pings find a dead connection even when nothing is being sent.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// How long a ping may go unanswered before the connection counts as dead.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Messages queued for the scheduler before sending waits for the stream to drain.
const OUTBOX_CAPACITY: usize = 256;

/// Turns a `--server` value into a URI: `host:port` gets an `http://` scheme.
pub fn server_uri(addr: &str) -> String {
    if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    }
}

/// The endpoint for a `--server` value, with the agent's connection settings.
pub fn endpoint(addr: &str) -> Result<Endpoint> {
    let endpoint =
        Endpoint::from_shared(server_uri(addr)).map_err(|source| Error::InvalidServerAddress {
            addr: addr.to_string(),
            source,
        })?;
    Ok(endpoint
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true))
}

/// The endpoints for a `--server` value naming one address or several replicas' addresses
/// separated by commas, each as [`secure_endpoint`] makes it.
pub fn secure_endpoints(addrs: &str, ca: Option<&Certificate>) -> Result<Vec<Endpoint>> {
    let addrs: Vec<&str> = addrs
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if addrs.is_empty() {
        return secure_endpoint("", ca).map(|e| vec![e]);
    }
    addrs.into_iter().map(|a| secure_endpoint(a, ca)).collect()
}

/// The endpoint for a `--server` value and an optional `--ca`: an address without a scheme
/// is https when a CA is given; an https endpoint trusts the CA (or, without one, the
/// roots tonic was built with).
pub fn secure_endpoint(addr: &str, ca: Option<&Certificate>) -> Result<Endpoint> {
    let uri = match ca {
        Some(_) if !addr.contains("://") => format!("https://{addr}"),
        _ => addr.to_string(),
    };
    let endpoint = endpoint(&uri)?;
    if endpoint.uri().scheme_str() != Some("https") {
        return Ok(endpoint);
    }
    let tls = match ca {
        Some(ca) => ClientTlsConfig::new().ca_certificate(ca.clone()),
        None => ClientTlsConfig::new().with_enabled_roots(),
    };
    endpoint
        .tls_config(tls)
        .map_err(|source| Error::InvalidServerAddress {
            addr: addr.to_string(),
            source,
        })
}

/// Exponential back-off between reconnects: doubles from an initial delay up to a maximum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// A back-off starting at `initial` and capped at `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            next: initial,
        }
    }

    /// The delay to wait now; the one after it is twice as long, up to the maximum.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// Starts over from the initial delay, after a healthy session.
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

/// Why a session ended without an error.
enum SessionEnd {
    /// The agent is shutting down.
    Shutdown,
    /// The scheduler closed the stream.
    ClosedByServer,
}

/// How an agent reaches the scheduler's replicas (one entry per address): a connection of
/// its own per session, or channels shared with other simulated nodes of the same process.
#[derive(Clone, Debug)]
pub enum Connector {
    /// Connect anew for every session.
    Endpoint(Vec<Endpoint>),
    /// Shared, lazily connected channels.
    Shared(Vec<Channel>),
}

impl Connector {
    /// How many addresses there are to choose from.
    fn len(&self) -> usize {
        match self {
            Connector::Endpoint(e) => e.len(),
            Connector::Shared(c) => c.len(),
        }
    }

    /// The address of entry `i`, for logs.
    fn uri(&self, i: usize) -> String {
        match self {
            Connector::Endpoint(e) => e[i].uri().to_string(),
            Connector::Shared(_) => format!("replica #{}", i + 1),
        }
    }

    /// A channel to entry `i`.
    async fn channel(&self, i: usize) -> Result<Channel> {
        match self {
            Connector::Endpoint(e) => e[i].connect().await.map_err(|source| Error::Connect {
                server: e[i].uri().to_string(),
                source,
            }),
            Connector::Shared(c) => Ok(c[i].clone()),
        }
    }
}

/// An open session: the queue of messages to the scheduler and the stream of its messages.
struct Session {
    outbox: mpsc::Sender<pb::AgentMessage>,
    inbound: tonic::Streaming<pb::SchedulerMessage>,
    heartbeat_interval: Duration,
    /// The node's devices, seen as they were registered: a change is sent up.
    devices: tokio::sync::watch::Receiver<Published>,
}

impl Session {
    async fn send(&self, msg: Up) -> Result<()> {
        self.outbox
            .send(pb::AgentMessage { msg: Some(msg) })
            .await
            .map_err(|_| Error::StreamClosed)
    }
}

/// The agent's connection to the scheduler: registers the node, keeps a session open, and
/// hands the pods it receives to the runtime.
pub struct Agent {
    node: NodeConfig,
    server: String,
    connector: Connector,
    /// The connector's entry in use: moves to the next when a session fails or ends.
    current: std::sync::atomic::AtomicUsize,
    runtime: Arc<dyn Runtime>,
    heartbeat_interval: Duration,
    /// When the agent started reporting Ready, for the condition's `lastTransitionTime`.
    ready_since: Time,
    /// `Bearer TOKEN`, sent with every call when set.
    authorization: Option<MetadataValue<tonic::metadata::Ascii>>,
    /// Admitted pods, pressure, usage, shared with the housekeeping loop.
    state: Arc<NodeState>,
    /// What to report; held by the running session.
    reports: tokio::sync::Mutex<Reports>,
    /// Log readers by request id, to cancel them.
    log_readers: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// The devices the node publishes now (`--devices` as last read, `--gpus`).
    devices: tokio::sync::watch::Receiver<Published>,
}

impl Agent {
    /// An agent for `node`, reaching the scheduler through `connector` (whose address
    /// `server` is for logs), running pods with `runtime`, heartbeating every
    /// `heartbeat_interval`, and reporting what `state` and `reports` collect.
    pub fn new(
        node: NodeConfig,
        server: String,
        connector: Connector,
        runtime: Arc<dyn Runtime>,
        heartbeat_interval: Duration,
        state: Arc<NodeState>,
        reports: Reports,
    ) -> Self {
        Agent {
            server,
            connector,
            current: std::sync::atomic::AtomicUsize::new(0),
            runtime,
            heartbeat_interval,
            ready_since: Time::now(),
            authorization: None,
            state,
            reports: tokio::sync::Mutex::new(reports),
            log_readers: Arc::default(),
            devices: tokio::sync::watch::channel(Published {
                devices: node.devices.clone(),
                refused: None,
            })
            .1,
            node,
        }
    }

    /// Publishes the devices `devices` holds, sending each change within the session (a
    /// `--devices` file watched by [`crate::devices::watch_file`]) instead of only the
    /// node's devices at start.
    pub fn with_devices(mut self, devices: tokio::sync::watch::Receiver<Published>) -> Self {
        self.devices = devices;
        self
    }

    /// Sends `token` as a bearer token with every call. A token that cannot be a header
    /// value (the flag parser refuses those) is not sent.
    pub fn with_token(mut self, token: Option<String>) -> Self {
        self.authorization = token.and_then(|t| {
            let value = format!("Bearer {t}").parse().ok();
            if value.is_none() {
                warn!("the token cannot be sent in a header; calling without it");
            }
            value
        });
        self
    }

    /// A request carrying the bearer token, if any.
    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(value) = &self.authorization {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        request
    }

    /// Registers and serves sessions until `shutdown` fires, reconnecting whenever
    /// registration or the stream fails or ends: to the next replica's address (round
    /// robin) after a short pause, with back-off once every address was tried. Pods keep
    /// running across reconnects; each new session starts with a Hello that lists them, and
    /// the scheduler (any replica) resumes from it without restarting them.
    #[instrument(skip_all, fields(node = %self.node.name, server = %self.server))]
    pub async fn run(&self, shutdown: &CancellationToken) -> Result<()> {
        let mut backoff = Backoff::new(BACKOFF_INITIAL, BACKOFF_MAX);
        let replicas = self.connector.len();
        // Addresses left to try before backing off.
        let mut untried = replicas - 1;
        loop {
            let opened = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                opened = self.open() => opened,
            };
            match opened {
                Err(e) => warn!(error = %error_chain(&e), "cannot reach the scheduler; retrying"),
                Ok(session) => {
                    let started = Instant::now();
                    let healthy_after = session.heartbeat_interval;
                    match self.serve(session, shutdown).await {
                        Ok(SessionEnd::Shutdown) => return Ok(()),
                        Ok(SessionEnd::ClosedByServer) => {
                            warn!("session closed by the scheduler; reconnecting");
                        }
                        Err(e) => warn!(error = %error_chain(&e), "session ended; reconnecting"),
                    }
                    // A session that lasted a heartbeat was healthy: a failure after it is
                    // a new incident, not a continuation of the last one.
                    if started.elapsed() >= healthy_after {
                        backoff.reset();
                        untried = replicas - 1;
                    }
                }
            }
            if replicas > 1 {
                self.current.store(
                    (self.current.load(std::sync::atomic::Ordering::Relaxed) + 1) % replicas,
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
            let delay = if untried > 0 {
                untried -= 1;
                FAILOVER_DELAY
            } else {
                untried = replicas - 1;
                backoff.next_delay()
            };
            debug!(delay = ?delay, "waiting before reconnecting");
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Connects, registers the node and opens the session stream, which starts with Hello.
    async fn open(&self) -> Result<Session> {
        let current = self.current.load(std::sync::atomic::Ordering::Relaxed);
        debug!(replica = %self.connector.uri(current), "connecting");
        let channel = self.connector.channel(current).await?;
        let mut client = AgentClient::new(channel);
        let mut devices = self.devices.clone();
        let slices = devices
            .borrow_and_update()
            .devices
            .for_node(&self.node.name);
        let mut node = self.node.to_node(Time::now(), self.ready_since);
        node.status.conditions = self.conditions();
        node.status.images = self.runtime.images();
        let response = client
            .register(self.request(pb::RegisterRequest {
                node: Some(node_to_pb(&node)),
                resource_slices: slices_to_pb(slices),
            }))
            .await
            .map_err(|source| Error::Register {
                node: self.node.name.clone(),
                source,
            })?
            .into_inner();
        let heartbeat_interval = self.effective_interval(response.heartbeat_interval_seconds);
        info!(heartbeat_interval = ?heartbeat_interval, "node registered");

        // Hello goes in the queue before the stream opens, so that it is the first message
        // the scheduler reads.
        let (outbox, queue) = mpsc::channel(OUTBOX_CAPACITY);
        let running = self.runtime.running();
        outbox
            .send(pb::AgentMessage {
                msg: Some(Up::Hello(pb::Hello {
                    node_name: self.node.name.clone(),
                    running_pod_uids: running.clone(),
                })),
            })
            .await
            .expect("the queue is empty and its receiver is held here");
        let inbound = client
            .session(self.request(ReceiverStream::new(queue)))
            .await
            .map_err(|source| Error::OpenSession {
                node: self.node.name.clone(),
                source,
            })?
            .into_inner();
        info!(running = running.len(), replica = %self.connector.uri(current), "session open");
        Ok(Session {
            outbox,
            inbound,
            heartbeat_interval,
            devices,
        })
    }

    /// The heartbeat interval: ours, unless the scheduler expects them more often.
    fn effective_interval(&self, expected_seconds: u32) -> Duration {
        let expected = Duration::from_secs(u64::from(expected_seconds));
        if expected_seconds > 0 && expected < self.heartbeat_interval {
            info!(
                flag = ?self.heartbeat_interval,
                scheduler = ?expected,
                "the scheduler expects heartbeats more often than --heartbeat-interval; following it"
            );
            expected
        } else {
            self.heartbeat_interval
        }
    }

    /// Runs one session: re-reports the pods that run (their status may have been lost with
    /// the last stream), then heartbeats and handles the scheduler's messages until the
    /// stream ends or the agent shuts down.
    async fn serve(
        &self,
        mut session: Session,
        shutdown: &CancellationToken,
    ) -> Result<SessionEnd> {
        // Only one session runs at a time; it owns the reports while it lasts.
        let mut reports = self.reports.lock().await;
        let Reports { statuses, events } = &mut *reports;
        let mut usage = self.state.subscribe_usage();
        for uid in self.runtime.running() {
            if let Some(report) = self.runtime.report(&uid) {
                session
                    .send(pod_status(
                        report.namespace,
                        report.name,
                        report.uid,
                        &report.status,
                    ))
                    .await?;
            }
        }
        let mut ticker = tokio::time::interval(session.heartbeat_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                // Dropping the session closes both halves of the stream.
                _ = shutdown.cancelled() => {
                    info!("shutting down; closing the session");
                    return Ok(SessionEnd::Shutdown);
                }
                _ = ticker.tick() => session.send(self.heartbeat()).await?,
                received = session.inbound.message() => match received {
                    Ok(Some(msg)) => self.handle(&session, msg).await?,
                    Ok(None) => return Ok(SessionEnd::ClosedByServer),
                    Err(source) => return Err(Error::Session { source }),
                },
                Some(report) = statuses.recv() => {
                    session
                        .send(pod_status(report.namespace, report.name, report.uid, &report.status))
                        .await?;
                }
                Some(event) = events.recv() => session.send(pod_event(event)).await?,
                Ok(()) = session.devices.changed() => {
                    let published = session.devices.borrow_and_update().clone();
                    session.send(self.devices_update(published)).await?;
                }
                Ok(()) = usage.changed() => {
                    let sample = usage.borrow_and_update().clone();
                    if let Some(sample) = sample {
                        session.send(usage_msg(&self.node.name, &sample)).await?;
                    }
                }
            }
        }
    }

    /// The conditions the agent owns: Ready, and one per pressure signal.
    fn conditions(&self) -> Vec<NodeCondition> {
        let now = Time::now();
        let pressure = self.state.pressure();
        std::iter::once(ready_condition(now, self.ready_since))
            .chain(
                Signal::ALL
                    .iter()
                    .map(|s| pressure_condition(*s, pressure.contains(s), now)),
            )
            .collect()
    }

    /// The message for devices that changed: the slices to publish now, or why the new
    /// devices file was refused.
    fn devices_update(&self, published: Published) -> Up {
        Up::Devices(match published.refused {
            Some(error) => pb::DevicesUpdate {
                resource_slices: Vec::new(),
                error,
            },
            None => pb::DevicesUpdate {
                resource_slices: slices_to_pb(published.devices.for_node(&self.node.name)),
                error: String::new(),
            },
        })
    }

    fn heartbeat(&self) -> Up {
        Up::Heartbeat(pb::Heartbeat {
            node_name: self.node.name.clone(),
            conditions_json: to_json(&self.conditions()),
            images_json: match self.runtime.images() {
                images if images.is_empty() => String::new(),
                images => to_json(&images),
            },
        })
    }

    async fn handle(&self, session: &Session, msg: pb::SchedulerMessage) -> Result<()> {
        match msg.msg {
            Some(Down::StartPod(start)) => self.start_pod(session, start).await,
            Some(Down::StopPod(stop)) => {
                self.stop_pod(session, stop);
                Ok(())
            }
            Some(Down::Logs(request)) => {
                self.start_log_reader(session, request);
                Ok(())
            }
            Some(Down::CancelLogs(cancel)) => {
                if let Some(token) = self
                    .log_readers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&cancel.request_id)
                {
                    token.cancel();
                }
                Ok(())
            }
            None => {
                warn!("empty message from the scheduler; ignoring it");
                Ok(())
            }
        }
    }

    /// Sends the logs of a container in the background, until done or cancelled.
    fn start_log_reader(&self, session: &Session, request: pb::AgentLogsRequest) {
        let token = CancellationToken::new();
        let id = request.request_id.clone();
        self.log_readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), token.clone());
        let readers = self.log_readers.clone();
        let runtime = self.runtime.clone();
        let outbox = session.outbox.clone();
        let node = self.node.name.clone();
        tokio::spawn(async move {
            crate::logs::send_logs(runtime, node, request, outbox, token).await;
            readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
        });
    }

    /// Starts a pod (or re-reports one that already runs) and reports its status.
    #[instrument(skip_all, fields(pod))]
    async fn start_pod(&self, session: &Session, start: pb::StartPod) -> Result<()> {
        let Some(msg) = start.pod else {
            warn!("StartPod without a pod; ignoring it");
            return Ok(());
        };
        let decoded = pod_from_pb(Some(&msg), "pod");
        let meta = match &decoded {
            Ok(pod) => Identity::of(&pod.metadata),
            Err(_) => Identity::read(&msg),
        };
        tracing::Span::current().record(
            "pod",
            tracing::field::display(format_args!("{}/{}", meta.namespace, meta.name)),
        );
        if meta.uid.is_empty() {
            warn!("StartPod for a pod without a uid; ignoring it");
            return Ok(());
        }
        let status = match decoded {
            Err(source) => {
                let e = Error::InvalidPod {
                    namespace: meta.namespace.clone(),
                    name: meta.name.clone(),
                    source,
                };
                warn!(error = %error_chain(&e), "refusing pod");
                failed_status(names::REASON_UNEXPECTED_ADMISSION_ERROR, &error_chain(&e))
            }
            Ok(pod) => {
                if let Some(ended) = self.state.ended(&meta.uid) {
                    // Evicted or refused here before: say so again, never restart it.
                    return session
                        .send(pod_status(
                            meta.namespace,
                            meta.name,
                            meta.uid,
                            &ended.status,
                        ))
                        .await;
                }
                if !self.state.is_admitted(&meta.uid) {
                    let active = self.state.active_pods(self.runtime.as_ref());
                    let active: Vec<&model::Pod> = active.iter().collect();
                    if let Err(rejection) = admission::admit(
                        &pod,
                        &active,
                        self.state.allocatable,
                        &self.state.pressure(),
                    ) {
                        warn!(reason = %rejection.reason, message = %rejection.message, "pod rejected");
                        let status = failed_status(&rejection.reason, &rejection.message);
                        self.state.end(PodReport {
                            namespace: meta.namespace.clone(),
                            name: meta.name.clone(),
                            uid: meta.uid.clone(),
                            status,
                        });
                        self.state.event(PodEvent {
                            namespace: meta.namespace,
                            name: meta.name,
                            uid: meta.uid,
                            type_: EVENT_WARNING.to_string(),
                            reason: rejection.reason,
                            message: rejection.message,
                        });
                        return Ok(());
                    }
                    self.state.admit(pod.clone());
                }
                match self.runtime.start(&pod).await {
                    Ok(status) => {
                        info!(uid = %meta.uid, runtime = self.runtime.name(), "pod started");
                        status
                    }
                    Err(e) => {
                        warn!(error = %error_chain(&e), "pod failed to start");
                        self.state.forget(&meta.uid);
                        failed_status(REASON_START_ERROR, &error_chain(&e))
                    }
                }
            }
        };
        session
            .send(pod_status(meta.namespace, meta.name, meta.uid, &status))
            .await
    }

    /// Stops a pod in the background (its grace period may be long, and heartbeats go
    /// on meanwhile). A preempted or evicted pod that ran here gets a final Failed status
    /// saying why; a deleted one just goes, as the scheduler removes it; a pod the agent
    /// ended itself already reported its end.
    #[instrument(skip_all, fields(pod = %format_args!("{}/{}", stop.namespace, stop.name), reason = %stop.reason))]
    fn stop_pod(&self, session: &Session, stop: pb::StopPod) {
        let grace = Duration::from_secs(u64::try_from(stop.grace_period_seconds).unwrap_or(0));
        let runtime = self.runtime.clone();
        let state = self.state.clone();
        let outbox = session.outbox.clone();
        tokio::spawn(
            async move {
                let final_status = match runtime.stop(&stop.uid, grace).await {
                    Ok(status) => status,
                    Err(e) => {
                        warn!(uid = %stop.uid, error = %error_chain(&e), "stopping the pod failed");
                        None
                    }
                };
                state.forget(&stop.uid);
                if stop.reason == "Deleted" {
                    state.clear_ended(&stop.uid);
                }
                info!(uid = %stop.uid, was_running = final_status.is_some(), "pod stopped");
                let Some(mut status) = final_status else {
                    return;
                };
                let message = match stop.reason.as_str() {
                    names::REASON_PREEMPTED => "Preempted to make room for a higher-priority pod",
                    names::REASON_EVICTED => "Evicted from the node",
                    _ => return,
                };
                status.phase = PodPhase::Failed;
                status.reason = stop.reason.clone();
                status.message = message.to_string();
                let _ = outbox
                    .send(pb::AgentMessage {
                        msg: Some(pod_status(stop.namespace, stop.name, stop.uid, &status)),
                    })
                    .await;
            }
            .in_current_span(),
        );
    }
}

/// A status of phase Failed with a reason and message.
/// Slices as the wire carries them.
fn slices_to_pb(slices: Vec<model::ResourceSlice>) -> Vec<pb::Object> {
    slices
        .into_iter()
        .map(|s| object_to_pb(&Object::ResourceSlice(Box::new(s))))
        .collect()
}

fn failed_status(reason: &str, message: &str) -> PodStatus {
    PodStatus {
        phase: PodPhase::Failed,
        reason: reason.to_string(),
        message: message.to_string(),
        ..PodStatus::default()
    }
}

/// An event for the scheduler to record.
fn pod_event(event: PodEvent) -> Up {
    Up::PodEvent(pb::PodEvent {
        namespace: event.namespace,
        name: event.name,
        uid: event.uid,
        r#type: event.type_,
        reason: event.reason,
        message: event.message,
    })
}

/// A byte or count amount as a Kubernetes quantity string.
fn amount(value: i64) -> String {
    Quantity::from_value(value).to_string()
}

/// A millicore amount as a Kubernetes quantity string.
fn cpu(millis: i64) -> String {
    Quantity::from_millis(millis).to_string()
}

fn pod_usage(pod: &PodUsage) -> pb::PodUsage {
    pb::PodUsage {
        namespace: pod.namespace.clone(),
        name: pod.name.clone(),
        uid: pod.uid.clone(),
        cpu: cpu(pod.cpu_millis),
        memory: amount(pod.memory_bytes),
        containers: pod
            .containers
            .iter()
            .map(|c| pb::ContainerUsage {
                name: c.name.clone(),
                cpu: cpu(c.cpu_millis),
                memory: amount(c.memory_bytes),
            })
            .collect(),
    }
}

/// A usage sample as the scheduler receives it.
fn usage_msg(node: &str, usage: &NodeUsage) -> Up {
    Up::Usage(pb::NodeUsage {
        node_name: node.to_string(),
        timestamp: Some(pb::Time::from(&usage.timestamp)),
        cpu: cpu(usage.cpu_millis),
        memory: amount(usage.memory_bytes),
        memory_available: amount(usage.memory_available),
        memory_capacity: amount(usage.memory_capacity),
        nodefs_available: amount(usage.nodefs_available),
        nodefs_capacity: amount(usage.nodefs_capacity),
        pid_available: usage.pid_available,
        pid_capacity: usage.pid_capacity,
        pods: usage.pods.iter().map(pod_usage).collect(),
    })
}

fn pod_status(namespace: String, name: String, uid: String, status: &PodStatus) -> Up {
    Up::PodStatus(pb::PodStatusUpdate {
        namespace,
        name,
        uid,
        status_json: to_json(status),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_resets() {
        struct Case {
            name: &'static str,
            delays_before_reset: usize,
            want: Vec<u64>,
        }
        let cases = [
            Case {
                name: "doubling to the cap",
                delays_before_reset: 0,
                want: vec![500, 1000, 2000, 4000, 8000, 10_000, 10_000],
            },
            Case {
                name: "reset starts over",
                delays_before_reset: 4,
                want: vec![500, 1000, 2000],
            },
        ];
        for case in cases {
            let mut backoff = Backoff::new(BACKOFF_INITIAL, BACKOFF_MAX);
            for _ in 0..case.delays_before_reset {
                backoff.next_delay();
            }
            if case.delays_before_reset > 0 {
                backoff.reset();
            }
            let got: Vec<u64> = (0..case.want.len())
                .map(|_| backoff.next_delay().as_millis() as u64)
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn server_addresses() {
        struct Case {
            name: &'static str,
            addr: &'static str,
            want: Option<&'static str>,
        }
        let cases = [
            Case {
                name: "host:port gets a scheme",
                addr: "127.0.0.1:7070",
                want: Some("http://127.0.0.1:7070/"),
            },
            Case {
                name: "name:port",
                addr: "scheduler.lan:7070",
                want: Some("http://scheduler.lan:7070/"),
            },
            Case {
                name: "scheme kept",
                addr: "https://s:443",
                want: Some("https://s:443/"),
            },
            Case {
                name: "not an address",
                addr: "not an address",
                want: None,
            },
        ];
        for case in cases {
            let got = endpoint(case.addr).ok().map(|e| e.uri().to_string());
            assert_eq!(got.as_deref(), case.want, "{}", case.name);
        }
    }

    #[test]
    fn replica_addresses() {
        struct Case {
            name: &'static str,
            addrs: &'static str,
            want: Option<Vec<&'static str>>,
        }
        let cases = [
            Case {
                name: "one",
                addrs: "127.0.0.1:7070",
                want: Some(vec!["http://127.0.0.1:7070/"]),
            },
            Case {
                name: "several, spaces and empty entries ignored",
                addrs: "127.0.0.1:7070, https://s:443,,",
                want: Some(vec!["http://127.0.0.1:7070/", "https://s:443/"]),
            },
            Case {
                name: "one bad address refuses all",
                addrs: "127.0.0.1:7070,not an address",
                want: None,
            },
            Case {
                name: "nothing",
                addrs: " , ",
                want: None,
            },
        ];
        for case in cases {
            let got = secure_endpoints(case.addrs, None)
                .ok()
                .map(|es| es.iter().map(|e| e.uri().to_string()).collect::<Vec<_>>());
            let want = case
                .want
                .map(|w| w.into_iter().map(String::from).collect::<Vec<_>>());
            assert_eq!(got, want, "{}", case.name);
        }
    }
}
