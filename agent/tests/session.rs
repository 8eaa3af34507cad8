//! The agent against a fake scheduler in the same process: registration, Hello and
//! heartbeats, StartPod and StopPod, and the reconnect after the scheduler drops the stream.

use std::net::SocketAddr;
use std::time::Duration;

use berth_agent::Args;
use berth_proto::model::{self, PodPhase, TaintEffect};
use berth_proto::pb::agent_message::Msg as Up;
use berth_proto::pb::agent_server::{Agent, AgentServer};
use berth_proto::pb::scheduler_message::Msg as Down;
use berth_proto::{names, pb, wire};
use clap::Parser;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

/// Failure guard for every wait; never reached when the agent works.
const GUARD: Duration = Duration::from_secs(10);

type Downlink = mpsc::Sender<Result<pb::SchedulerMessage, Status>>;

/// One session as the test sees it: what the agent sends, and a handle to send it messages.
/// Dropping `down` ends the stream from the scheduler's side.
struct SessionHandle {
    up: mpsc::UnboundedReceiver<pb::AgentMessage>,
    down: Downlink,
}

/// A scheduler that records registrations and hands each session to the test.
struct FakeScheduler {
    registered: mpsc::UnboundedSender<pb::Object>,
    sessions: mpsc::UnboundedSender<SessionHandle>,
}

#[tonic::async_trait]
impl Agent for FakeScheduler {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let node = request.into_inner().node.unwrap_or_default();
        let _ = self.registered.send(node.clone());
        Ok(Response::new(pb::RegisterResponse {
            node: Some(node),
            heartbeat_interval_seconds: 10,
        }))
    }

    type SessionStream = ReceiverStream<Result<pb::SchedulerMessage, Status>>;

    async fn session(
        &self,
        request: Request<Streaming<pb::AgentMessage>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let mut inbound = request.into_inner();
        let (up_tx, up) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = inbound.next().await {
                if up_tx.send(msg).is_err() {
                    break;
                }
            }
        });
        let (down, down_rx) = mpsc::channel(16);
        let _ = self.sessions.send(SessionHandle { up, down });
        Ok(Response::new(ReceiverStream::new(down_rx)))
    }
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = Option<T>>) -> T {
    tokio::time::timeout(GUARD, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap_or_else(|| panic!("channel closed waiting for {what}"))
}

/// The next message of a session that is not a heartbeat.
async fn next_non_heartbeat(session: &mut SessionHandle) -> Up {
    loop {
        let msg = within("a message from the agent", session.up.recv()).await;
        match msg.msg.expect("every agent message has a body") {
            Up::Heartbeat(_) => continue,
            other => return other,
        }
    }
}

/// The agent's arguments: `flags` after the program name.
fn agent_args(flags: &[&str]) -> Args {
    Args::try_parse_from(std::iter::once("berth-agent").chain(flags.iter().copied()))
        .expect("the agent's flags parse")
}

/// Starts the agent with `flags` in a task; cancelling the token stops it.
fn start_agent(flags: &[&str]) -> (CancellationToken, JoinHandle<berth_agent::Result<()>>) {
    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(berth_agent::run(agent_args(flags), shutdown.clone()));
    (shutdown, agent)
}

/// Cancels the agent and checks that it ends cleanly, within the guard.
async fn stop_agent(shutdown: CancellationToken, agent: JoinHandle<berth_agent::Result<()>>) {
    shutdown.cancel();
    let result = tokio::time::timeout(GUARD, agent)
        .await
        .expect("the agent stops when cancelled")
        .expect("the agent task does not panic");
    assert!(result.is_ok(), "agent returned {result:?}");
}

fn pod(uid: &str) -> pb::Object {
    let pod = model::Pod {
        metadata: model::ObjectMeta {
            namespace: "default".to_string(),
            name: "web-1".to_string(),
            uid: uid.to_string(),
            ..model::ObjectMeta::default()
        },
        spec: model::PodSpec {
            node_name: "test-node".to_string(),
            containers: vec![model::Container {
                name: "app".to_string(),
                ..model::Container::default()
            }],
            ..model::PodSpec::default()
        },
        ..model::Pod::default()
    };
    wire::pod_to_pb(&pod)
}

async fn start_fake_scheduler() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<pb::Object>,
    mpsc::UnboundedReceiver<SessionHandle>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (registered, registrations) = mpsc::unbounded_channel();
    let (sessions, session_rx) = mpsc::unbounded_channel();
    let service = AgentServer::new(FakeScheduler {
        registered,
        sessions,
    });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    (addr, registrations, session_rx)
}

#[tokio::test]
async fn registers_heartbeats_runs_pods_and_resyncs_after_reconnect() {
    let (addr, mut registrations, mut sessions) = start_fake_scheduler().await;
    let server = addr.to_string();
    let (shutdown, agent) = start_agent(&[
        // No scheme: the agent adds http://.
        "--server",
        &server,
        "--node-name",
        "test-node",
        "--cpu",
        "2",
        "--memory",
        "1Gi",
        "--pods",
        "5",
        "--labels",
        "zone=a",
        "--register-with-taints",
        "dedicated=gpu:NoSchedule",
        "--heartbeat-interval",
        "100ms",
    ]);

    // Registration carries the node as the flags describe it.
    let node = within("registration", registrations.recv()).await;
    let node = wire::node_from_pb(Some(&node), "node").expect("the registered node decodes");
    assert_eq!(node.metadata.name, "test-node");
    assert_eq!(node.metadata.labels["kubernetes.io/hostname"], "test-node");
    assert_eq!(node.metadata.labels["kubernetes.io/os"], "linux");
    assert_eq!(node.metadata.labels["zone"], "a");
    assert!(node.metadata.labels.contains_key("kubernetes.io/arch"));
    let taints: Vec<(&str, &str, TaintEffect)> = node
        .spec
        .taints
        .iter()
        .map(|t| (t.key.as_str(), t.value.as_str(), t.effect))
        .collect();
    assert_eq!(taints, vec![("dedicated", "gpu", TaintEffect::NoSchedule)]);
    for (resource, want) in [("cpu", "2"), ("memory", "1Gi"), ("pods", "5")] {
        assert_eq!(
            node.status.capacity[resource].to_string(),
            want,
            "capacity {resource}"
        );
        assert_eq!(
            node.status.allocatable[resource].to_string(),
            want,
            "allocatable {resource}"
        );
    }
    assert!(node.is_ready());

    // The first session: Hello first, with no pods, then heartbeats.
    let mut first = within("the first session", sessions.recv()).await;
    match within("Hello", first.up.recv()).await.msg {
        Some(Up::Hello(hello)) => {
            assert_eq!(hello.node_name, "test-node");
            assert!(hello.running_pod_uids.is_empty());
        }
        other => panic!("first message should be Hello, got {other:?}"),
    }
    for _ in 0..2 {
        match within("a heartbeat", first.up.recv()).await.msg {
            Some(Up::Heartbeat(beat)) => {
                assert_eq!(beat.node_name, "test-node");
                let conditions: Vec<model::NodeCondition> =
                    wire::from_json("conditions_json", &beat.conditions_json)
                        .expect("heartbeat conditions decode");
                let ready = conditions.iter().find(|c| c.type_ == "Ready");
                let ready = ready.expect("heartbeats carry Ready");
                assert_eq!(
                    (ready.status.as_str(), ready.reason.as_str()),
                    ("True", "KubeletReady")
                );
                assert!(ready.last_heartbeat_time.is_some());
            }
            other => panic!("expected a heartbeat, got {other:?}"),
        }
    }

    // StartPod: the pod runs.
    first
        .down
        .send(Ok(pb::SchedulerMessage {
            msg: Some(Down::StartPod(pb::StartPod {
                pod: Some(pod("uid-1")),
            })),
        }))
        .await
        .unwrap();
    match next_non_heartbeat(&mut first).await {
        Up::PodStatus(update) => {
            assert_eq!(
                (update.namespace.as_str(), update.name.as_str()),
                ("default", "web-1")
            );
            assert_eq!(update.uid, "uid-1");
            let status: model::PodStatus =
                wire::from_json("status_json", &update.status_json).expect("a status");
            assert_eq!(status.phase, PodPhase::Running);
            assert!(status.start_time.is_some());
            assert_eq!(status.container_statuses.len(), 1);
            assert!(status.container_statuses[0].ready);
        }
        other => panic!("expected a pod status, got {other:?}"),
    }

    // The scheduler drops the stream: the agent registers again and says Hello with the pod.
    drop(first);
    within("re-registration", registrations.recv()).await;
    let mut second = within("the second session", sessions.recv()).await;
    match within("Hello again", second.up.recv()).await.msg {
        Some(Up::Hello(hello)) => assert_eq!(hello.running_pod_uids, vec!["uid-1".to_string()]),
        other => panic!("first message should be Hello, got {other:?}"),
    }

    // A preempted pod ends Failed with the reason.
    second
        .down
        .send(Ok(pb::SchedulerMessage {
            msg: Some(Down::StopPod(pb::StopPod {
                namespace: "default".to_string(),
                name: "web-1".to_string(),
                uid: "uid-1".to_string(),
                grace_period_seconds: 30,
                reason: "Preempted".to_string(),
            })),
        }))
        .await
        .unwrap();
    loop {
        match next_non_heartbeat(&mut second).await {
            Up::PodStatus(update) => {
                let status: model::PodStatus =
                    wire::from_json("status_json", &update.status_json).expect("a status");
                // The resync after Hello may re-report the pod as Running first.
                if status.phase == PodPhase::Running {
                    continue;
                }
                assert_eq!(update.uid, "uid-1");
                assert_eq!(status.phase, PodPhase::Failed);
                assert_eq!(status.reason, "Preempted");
                break;
            }
            other => panic!("expected a pod status, got {other:?}"),
        }
    }

    // Shutdown ends the agent cleanly.
    stop_agent(shutdown, agent).await;
}

#[tokio::test]
async fn a_pod_it_cannot_read_is_reported_failed_against_its_name() {
    let (addr, mut registrations, mut sessions) = start_fake_scheduler().await;
    let server = addr.to_string();
    let (shutdown, agent) = start_agent(&["--server", &server, "--node-name", "test-node"]);
    within("registration", registrations.recv()).await;
    let mut session = within("the session", sessions.recv()).await;
    // A pod whose JSON the model refuses (a quantity that does not parse).
    let unreadable = pb::Object {
        kind: pb::Kind::Pod as i32,
        json: r#"{"metadata":{"namespace":"team","name":"odd","uid":"uid-odd"},
                  "spec":{"nodeName":"test-node","containers":[{"name":"a",
                  "resources":{"requests":{"cpu":"lots"}}}]}}"#
            .into(),
    };
    session
        .down
        .send(Ok(pb::SchedulerMessage {
            msg: Some(Down::StartPod(pb::StartPod {
                pod: Some(unreadable),
            })),
        }))
        .await
        .unwrap();
    loop {
        match next_non_heartbeat(&mut session).await {
            Up::PodStatus(update) => {
                assert_eq!(
                    (
                        update.namespace.as_str(),
                        update.name.as_str(),
                        update.uid.as_str()
                    ),
                    ("team", "odd", "uid-odd")
                );
                let status: model::PodStatus =
                    wire::from_json("status_json", &update.status_json).expect("a status");
                assert_eq!(status.phase, PodPhase::Failed);
                assert_eq!(status.reason, names::REASON_UNEXPECTED_ADMISSION_ERROR);
                assert!(
                    status
                        .message
                        .contains("spec.containers[0].resources.requests.cpu"),
                    "{}",
                    status.message
                );
                break;
            }
            Up::Hello(_) => continue,
            other => panic!("expected a pod status, got {other:?}"),
        }
    }
    stop_agent(shutdown, agent).await;
}

#[tokio::test]
async fn stops_while_the_scheduler_is_unreachable() {
    // Nothing listens on this port once the listener is dropped.
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let server = format!("http://{addr}");
    let (shutdown, agent) = start_agent(&[
        "--server",
        &server,
        "--node-name",
        "lonely",
        "--cpu",
        "1",
        "--memory",
        "1Gi",
    ]);
    stop_agent(shutdown, agent).await;
}

#[tokio::test]
async fn invalid_server_address_is_an_error() {
    let args = agent_args(&["--server", "not an address", "--node-name", "n"]);
    let result = berth_agent::run(args, CancellationToken::new()).await;
    assert!(
        matches!(result, Err(berth_agent::Error::InvalidServerAddress { .. })),
        "got {result:?}"
    );
}
