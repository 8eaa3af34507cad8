//! What agents report besides pod status, and the `berth.v1.Telemetry` service over it:
//! the latest usage of every node and pod (kept in memory only, like metrics-server) for
//! `Top`; events agents raise about their pods (Evicted, OutOfcpu), recorded as Events;
//! and container logs, proxied from the pod's agent through its session stream for `Logs`.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use berth_proto::model::{Kind, Object, ObjectKey, ObjectReference};
use berth_proto::pb;
use berth_store::ObjectStore;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use tracing::{debug, instrument, warn};

use super::agents::Sessions;
use super::error::{blocking, Error, Reply};
use super::events::EventRecorder;

/// A `Logs` call waiting for chunks from an agent.
struct LogRoute {
    node: String,
    to_client: mpsc::UnboundedSender<Result<pb::LogsResponse, Status>>,
}

/// Usage, events and log routes reported by agents.
pub struct Telemetry {
    store: Arc<dyn ObjectStore>,
    recorder: Option<EventRecorder>,
    /// The latest usage of each node, with its pods.
    usage: Mutex<HashMap<String, pb::NodeUsage>>,
    /// Open `Logs` calls by request id.
    routes: Mutex<HashMap<String, LogRoute>>,
    next_request: AtomicU64,
}

impl Telemetry {
    /// Telemetry over `store` (to check that an agent reports about its own pods),
    /// recording agents' events with `recorder` when given.
    pub fn new(store: Arc<dyn ObjectStore>, recorder: Option<EventRecorder>) -> Self {
        Telemetry {
            store,
            recorder,
            usage: Mutex::default(),
            routes: Mutex::default(),
            next_request: AtomicU64::new(1),
        }
    }

    /// Keeps the latest usage of `node` (the session's node, whatever the message says).
    pub fn record_usage(&self, node: &str, mut usage: pb::NodeUsage) {
        usage.node_name = node.to_string();
        self.usage
            .lock()
            .expect("usage lock poisoned")
            .insert(node.to_string(), usage);
    }

    /// The latest usage of a node, if it reported any.
    pub fn node_usage(&self, node: &str) -> Option<pb::NodeUsage> {
        self.usage
            .lock()
            .expect("usage lock poisoned")
            .get(node)
            .cloned()
    }

    /// Records an agent's event about one of its pods as an Event of that pod. Events
    /// about pods bound elsewhere are refused (NodeRestriction).
    pub fn record_event(&self, node: &str, event: pb::PodEvent) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let key = ObjectKey::new(Kind::Pod, &event.namespace, &event.name);
        match self.store.get(&key) {
            Ok(Some(Object::Pod(pod)))
                if pod.spec.node_name == node && pod.metadata.uid == event.uid => {}
            Ok(_) => {
                warn!(%node, pod = %format_args!("{}/{}", event.namespace, event.name), "event about a pod not bound to the reporting node; ignoring it");
                return;
            }
            Err(e) => {
                warn!(%node, error = %e, "cannot check the pod of an agent's event");
                return;
            }
        }
        let type_ = match event.r#type.as_str() {
            super::events::NORMAL => super::events::NORMAL,
            _ => super::events::WARNING,
        };
        recorder.record(
            ObjectReference {
                kind: "Pod".into(),
                namespace: event.namespace,
                name: event.name,
                uid: event.uid,
                ..Default::default()
            },
            type_,
            &event.reason,
            event.message,
        );
    }

    /// Records an event about `node` itself (its devices), from its own session.
    pub fn record_node_event(
        &self,
        node: &berth_proto::model::Node,
        type_: &'static str,
        reason: &str,
        message: String,
    ) {
        if let Some(recorder) = &self.recorder {
            recorder.record(
                ObjectReference {
                    kind: "Node".into(),
                    name: node.metadata.name.clone(),
                    uid: node.metadata.uid.clone(),
                    ..Default::default()
                },
                type_,
                reason,
                message,
            );
        }
    }

    /// Hands a chunk of logs to the `Logs` call waiting for it. Returns the request id when
    /// nobody waits any more, so that the agent can be told to stop sending.
    pub fn deliver_log(&self, node: &str, chunk: pb::LogChunk) -> Option<String> {
        let mut routes = self.routes.lock().expect("routes lock poisoned");
        let Some(route) = routes.get(&chunk.request_id).filter(|r| r.node == node) else {
            // A reader that left (or a chunk for another node's request).
            return (!chunk.end).then_some(chunk.request_id);
        };
        let mut gone = false;
        if !chunk.data.is_empty() {
            gone = route
                .to_client
                .send(Ok(pb::LogsResponse { data: chunk.data }))
                .is_err();
        }
        if chunk.end {
            if !chunk.error.is_empty() {
                let _ = route
                    .to_client
                    .send(Err(Error::FailedPrecondition(chunk.error).into()));
            }
            routes.remove(&chunk.request_id);
            return None;
        }
        if gone {
            routes.remove(&chunk.request_id);
            return Some(chunk.request_id);
        }
        None
    }

    /// Ends the `Logs` calls served by a node whose session ended.
    pub fn session_closed(&self, node: &str) {
        self.routes
            .lock()
            .expect("routes lock poisoned")
            .retain(|_, route| {
                if route.node == node {
                    let _ = route.to_client.send(Err(Error::Unavailable(format!(
                        "the session of node {node} ended"
                    ))
                    .into()));
                    false
                } else {
                    true
                }
            });
    }
}

/// The Telemetry service.
#[derive(Clone)]
pub struct TelemetryService {
    store: Arc<dyn ObjectStore>,
    telemetry: Arc<Telemetry>,
    sessions: Arc<Sessions>,
    explainer: Option<super::scheduling::Explainer>,
}

impl TelemetryService {
    /// A service over what `telemetry` collects, reaching agents through `sessions`.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        telemetry: Arc<Telemetry>,
        sessions: Arc<Sessions>,
    ) -> Self {
        TelemetryService {
            store,
            telemetry,
            sessions,
            explainer: None,
        }
    }

    /// The same service, answering Explain through the scheduling loop.
    pub fn with_explainer(mut self, explainer: super::scheduling::Explainer) -> Self {
        self.explainer = Some(explainer);
        self
    }

    /// Every node with its latest usage (empty amounts for a node that reported none),
    /// sorted by name.
    fn top_nodes(&self) -> Result<Vec<pb::NodeMetrics>, Status> {
        let nodes = self.store.list(Kind::Node, None).map_err(Error::from)?;
        let mut out = Vec::new();
        for obj in nodes {
            let Object::Node(node) = obj else { continue };
            let allocatable = node.allocatable();
            let usage = self.telemetry.node_usage(&node.metadata.name);
            out.push(pb::NodeMetrics {
                name: node.metadata.name.clone(),
                timestamp: usage.as_ref().and_then(|u| u.timestamp),
                cpu: usage.as_ref().map(|u| u.cpu.clone()).unwrap_or_default(),
                memory: usage.as_ref().map(|u| u.memory.clone()).unwrap_or_default(),
                cpu_allocatable: allocatable
                    .get("cpu")
                    .map(|q| q.to_string())
                    .unwrap_or_default(),
                memory_allocatable: allocatable
                    .get("memory")
                    .map(|q| q.to_string())
                    .unwrap_or_default(),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The latest usage of every pod (in `namespace` when not empty), sorted by namespace
    /// and name.
    fn top_pods(&self, namespace: &str) -> Vec<pb::PodMetrics> {
        let usage = self.telemetry.usage.lock().expect("usage lock poisoned");
        let mut out: Vec<pb::PodMetrics> = usage
            .values()
            .flat_map(|node| {
                node.pods.iter().map(move |p| pb::PodMetrics {
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                    node_name: node.node_name.clone(),
                    timestamp: node.timestamp,
                    cpu: p.cpu.clone(),
                    memory: p.memory.clone(),
                    containers: p.containers.clone(),
                })
            })
            .filter(|p| namespace.is_empty() || p.namespace == namespace)
            .collect();
        out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out
    }
}

type LogsStream = Pin<Box<dyn Stream<Item = Result<pb::LogsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl pb::telemetry_server::Telemetry for TelemetryService {
    #[instrument(skip_all)]
    async fn explain(&self, req: Request<pb::ExplainRequest>) -> Reply<pb::ExplainResponse> {
        let req = req.into_inner();
        let namespace = if req.namespace.is_empty() {
            "default".to_string()
        } else {
            req.namespace
        };
        let explainer = self
            .explainer
            .as_ref()
            .ok_or_else(|| Error::Unavailable("this server does not schedule".into()))?;
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            explainer.explain(&namespace, &req.name),
        )
        .await
        .map_err(|_| Error::DeadlineExceeded("the scheduling loop did not answer in time".into()))?
        .map_err(Error::FailedPrecondition)?;
        let nodes = answer
            .explanation
            .nodes
            .into_iter()
            .map(|(node, verdict)| match verdict {
                crate::cycle::NodeVerdict::Feasible { score } => pb::NodeVerdict {
                    node,
                    feasible: true,
                    score,
                    ..Default::default()
                },
                crate::cycle::NodeVerdict::Rejected { plugin, reasons } => pb::NodeVerdict {
                    node,
                    plugin: plugin.to_string(),
                    reasons,
                    ..Default::default()
                },
            })
            .collect();
        Ok(Response::new(pb::ExplainResponse {
            nodes,
            message: answer.message.unwrap_or_default(),
        }))
    }

    async fn version(&self, _: Request<pb::VersionRequest>) -> Reply<pb::VersionResponse> {
        Ok(Response::new(berth_proto::build_version()))
    }

    #[instrument(skip_all)]
    async fn top(&self, req: Request<pb::TopRequest>) -> Result<Response<pb::TopResponse>, Status> {
        let req = req.into_inner();
        match pb::Kind::try_from(req.kind) {
            Ok(pb::Kind::Node) => {
                let this = self.clone();
                let nodes = blocking(move || this.top_nodes()).await?;
                Ok(Response::new(pb::TopResponse {
                    nodes,
                    pods: Vec::new(),
                }))
            }
            Ok(pb::Kind::Pod) => Ok(Response::new(pb::TopResponse {
                nodes: Vec::new(),
                pods: self.top_pods(&req.namespace),
            })),
            _ => Err(Error::BadRequest("top works on nodes and pods only".into()).into()),
        }
    }

    type LogsStream = LogsStream;

    #[instrument(skip_all)]
    async fn logs(&self, req: Request<pb::LogsRequest>) -> Result<Response<LogsStream>, Status> {
        let req = req.into_inner();
        let namespace = if req.namespace.is_empty() {
            "default".to_string()
        } else {
            req.namespace.clone()
        };
        let key = ObjectKey::new(Kind::Pod, &namespace, &req.name);
        let store = self.store.clone();
        let found = blocking({
            let key = key.clone();
            move || store.get(&key).map_err(Error::from)
        })
        .await?;
        let Some(Object::Pod(pod)) = found else {
            return Err(Error::NotFound { key }.into());
        };
        let names: Vec<&str> = pod
            .spec
            .containers
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        let container = if req.container.is_empty() {
            match names.as_slice() {
                [only] => (*only).to_string(),
                _ => {
                    return Err(Error::BadRequest(format!(
                        "a container name must be specified for pod {}, choose one of: [{}]",
                        req.name,
                        names.join(" ")
                    ))
                    .into())
                }
            }
        } else if names.contains(&req.container.as_str()) {
            req.container.clone()
        } else {
            return Err(Error::BadRequest(format!(
                "container {} is not valid for pod {}",
                req.container, req.name
            ))
            .into());
        };
        let node = pod.spec.node_name.clone();
        if node.is_empty() {
            return Err(Error::FailedPrecondition(format!(
                "pod {} is not bound to a node yet",
                req.name
            ))
            .into());
        }
        let request_id = format!(
            "logs-{}",
            self.telemetry.next_request.fetch_add(1, Ordering::Relaxed)
        );
        let (to_client, from_agent) = mpsc::unbounded_channel();
        self.telemetry
            .routes
            .lock()
            .expect("routes lock poisoned")
            .insert(
                request_id.clone(),
                LogRoute {
                    node: node.clone(),
                    to_client,
                },
            );
        let sent = self.sessions.send_message(
            &node,
            pb::SchedulerMessage {
                msg: Some(pb::scheduler_message::Msg::Logs(pb::AgentLogsRequest {
                    request_id: request_id.clone(),
                    namespace,
                    name: req.name.clone(),
                    uid: pod.metadata.uid.clone(),
                    container,
                    follow: req.follow,
                })),
            },
        );
        if !sent {
            self.telemetry
                .routes
                .lock()
                .expect("routes lock poisoned")
                .remove(&request_id);
            return Err(Error::Unavailable(format!(
                "node {node} of pod {} is not connected",
                req.name
            ))
            .into());
        }
        debug!(%request_id, %node, "logs requested");
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::UnboundedReceiverStream::new(from_agent),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn telemetry() -> (tempfile::TempDir, Telemetry) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> =
            Arc::new(berth_store::SledStore::open(&dir.path().join("s")).unwrap());
        (dir, Telemetry::new(store, None))
    }

    #[test]
    fn log_chunks_reach_their_reader_only() {
        struct Case {
            name: &'static str,
            route_node: &'static str,
            chunk_node: &'static str,
            chunk: pb::LogChunk,
            drop_reader: bool,
            want_cancel: bool,
            want_data: Option<&'static [u8]>,
        }
        let chunk = |data: &[u8], end: bool| pb::LogChunk {
            request_id: "r".into(),
            data: data.to_vec(),
            end,
            error: String::new(),
        };
        let cases = [
            Case {
                name: "data to the reader",
                route_node: "n1",
                chunk_node: "n1",
                chunk: chunk(b"hello\n", false),
                drop_reader: false,
                want_cancel: false,
                want_data: Some(b"hello\n"),
            },
            Case {
                name: "another node's chunk is refused",
                route_node: "n1",
                chunk_node: "n2",
                chunk: chunk(b"x", false),
                drop_reader: false,
                want_cancel: true,
                want_data: None,
            },
            Case {
                name: "a reader that left cancels the agent",
                route_node: "n1",
                chunk_node: "n1",
                chunk: chunk(b"x", false),
                drop_reader: true,
                want_cancel: true,
                want_data: None,
            },
        ];
        for case in cases {
            let (_dir, t) = telemetry();
            let (tx, mut rx) = mpsc::unbounded_channel();
            t.routes.lock().unwrap().insert(
                "r".into(),
                LogRoute {
                    node: case.route_node.into(),
                    to_client: tx,
                },
            );
            if case.drop_reader {
                rx.close();
            }
            let cancel = t.deliver_log(case.chunk_node, case.chunk);
            assert_eq!(cancel.is_some(), case.want_cancel, "{}", case.name);
            let got = rx.try_recv().ok().and_then(|r| r.ok()).map(|r| r.data);
            assert_eq!(got.as_deref(), case.want_data, "{}", case.name);
        }
    }

    #[test]
    fn usage_is_kept_per_node_under_the_session_name() {
        let (_dir, t) = telemetry();
        t.record_usage(
            "n1",
            pb::NodeUsage {
                node_name: "spoofed".into(),
                cpu: "250m".into(),
                ..Default::default()
            },
        );
        assert_eq!(t.node_usage("n1").map(|u| u.node_name), Some("n1".into()));
        assert!(t.node_usage("spoofed").is_none());
    }
}
