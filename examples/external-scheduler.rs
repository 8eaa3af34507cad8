//! An external scheduler beside Berth's own, as Kubernetes allows: it watches the pods whose
//! `spec.schedulerName` is its name, keeps what it has seen of the others in a cache fed by
//! the same watch, picks the Ready node with the most free cpu, and binds through the `Bind`
//! RPC. Berth's scheduler leaves these pods alone.
//!
//!     cargo run --example external-scheduler -- [SERVER] [SCHEDULER_NAME]
//!
//! SERVER defaults to `$BERTH_SERVER` or http://127.0.0.1:7070, SCHEDULER_NAME to
//! `my-scheduler`; `$BERTH_TOKEN` is sent as a bearer token. Its view is only as fresh as
//! its watch, so it can race another scheduler for the same room; the node's agent then
//! refuses the pod that does not fit (Failed, OutOfcpu), as kubelet does.

use std::collections::HashMap;

use berth_proto::model::{Node, Object, Pod};
use berth_proto::resources::{pod_requests, Resources};
use berth_proto::{pb, wire};
use tonic::transport::Channel;

type Client =
    pb::berth_client::BerthClient<tonic::service::interceptor::InterceptedService<Channel, Token>>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().or_else(|| std::env::var("BERTH_SERVER").ok());
    let server = server.unwrap_or_else(|| "http://127.0.0.1:7070".into());
    let name = args.next().unwrap_or_else(|| "my-scheduler".into());
    let token = std::env::var("BERTH_TOKEN").ok();
    run(&server, &name, token.as_deref(), || {
        println!("{name}: watching pods")
    })
    .await
}

/// Schedules the pods of `name` until the watch ends; `watching` is called once the watch
/// is open (pods applied after it are seen as they come).
pub async fn run(
    server: &str,
    name: &str,
    token: Option<&str>,
    watching: impl FnOnce(),
) -> anyhow::Result<()> {
    let channel = Channel::from_shared(server.to_string())?.connect().await?;
    let mut api = pb::berth_client::BerthClient::with_interceptor(channel, Token::new(token));
    let watch = pb::WatchRequest {
        kind: pb::Kind::Pod as i32,
        ..Default::default()
    };
    let mut events = api.watch(watch).await?.into_inner();
    watching();
    // Every pod seen, by uid, as of the watch's position: what the node choice counts.
    let mut pods: HashMap<String, Pod> = HashMap::new();
    while let Some(event) = events.message().await? {
        let Some(Ok(Object::Pod(pod))) = event.object.as_ref().map(wire::object_from_pb) else {
            continue;
        };
        if event.r#type == pb::watch_event::Type::Deleted as i32 {
            pods.remove(&pod.metadata.uid);
            continue;
        }
        pods.insert(pod.metadata.uid.clone(), (*pod).clone());
        let unbound = pod.spec.node_name.is_empty() && pod.metadata.deletion_timestamp.is_none();
        if pod.spec.scheduler_name != name || !unbound || !pod.spec.scheduling_gates.is_empty() {
            continue;
        }
        let Some(node) = pick_node(&mut api, &pods, &pod).await? else {
            println!("{name}: no node has room for {}", pod.metadata.name);
            continue;
        };
        let bind = pb::BindRequest {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            node_name: node.clone(),
            scheduler_name: name.to_string(),
        };
        match api.bind(bind).await {
            Ok(_) => println!("{name}: bound {} to {node}", pod.metadata.name),
            Err(status) => println!(
                "{name}: binding {} failed: {}",
                pod.metadata.name,
                status.message()
            ),
        }
    }
    Ok(())
}

/// The Ready, schedulable node with the most cpu left for `pod`, counting the bound pods of
/// the cache that have not ended.
async fn pick_node(
    api: &mut Client,
    pods: &HashMap<String, Pod>,
    pod: &Pod,
) -> anyhow::Result<Option<String>> {
    let list = pb::ListRequest {
        kind: pb::Kind::Node as i32,
        ..Default::default()
    };
    let nodes = api.list(list).await?.into_inner().objects;
    let want = pod_requests(pod);
    let mut best: Option<(i64, String)> = None;
    for object in &nodes {
        let Ok(Object::Node(node)) = wire::object_from_pb(object) else {
            continue;
        };
        if !node.is_ready() || node.spec.unschedulable {
            continue;
        }
        let free = free_on(&node, pods);
        let room = free.milli_cpu - want.milli_cpu;
        if room >= 0 && free.memory >= want.memory && best.as_ref().is_none_or(|(r, _)| room > *r) {
            best = Some((room, node.metadata.name.clone()));
        }
    }
    Ok(best.map(|(_, node)| node))
}

/// The node's allocatable minus the requests of the cached pods bound to it.
fn free_on(node: &Node, pods: &HashMap<String, Pod>) -> Resources {
    let mut free = Resources::from_list(node.allocatable());
    for placed in pods.values() {
        if placed.spec.node_name == node.metadata.name && !placed.status.phase.is_terminal() {
            free.sub(&pod_requests(placed));
        }
    }
    free
}

/// Sends the token, when there is one, as `authorization: Bearer TOKEN`.
#[derive(Clone)]
struct Token(Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>);

impl Token {
    fn new(token: Option<&str>) -> Self {
        Token(token.and_then(|t| format!("Bearer {t}").parse().ok()))
    }
}

impl tonic::service::Interceptor for Token {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}
