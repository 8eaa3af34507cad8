//! Load benchmark of the scheduler's API (issue 6): 200 concurrent API clients (gets,
//! label-selected lists and applies) while 1,000 simulated nodes keep sessions open,
//! heartbeat every second and report the pods they are given as Running, for 60 s.
//! Reports p50/p99 latency per call and checks that no call failed and no acknowledged
//! write was lost. A benchmark, not a test: `cargo bench -p berth-benches --bench api_load`.
//! The clock starts once every node has joined. Besides, `BERTH_LOAD_BULK` pods (5,000
//! unless set; 0: none) wait in namespace `bulk` for a scheduler that does not exist, and
//! one more client lists them all, again and again (`bulklist`: kube's SLO for lists).
//! `BERTH_LOAD_SECONDS`, `BERTH_LOAD_CLIENTS` and `BERTH_LOAD_NODES` shrink or grow a run;
//! `BERTH_LOAD_STORE=etcd://HOST:PORT,...` runs it on etcd instead of the embedded store.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_proto::names;
use berth_proto::pb;
use berth_proto::pb::agent_client::AgentClient;
use berth_proto::pb::berth_client::BerthClient;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Latencies of one kind of call, and its failures.
#[derive(Default)]
struct Samples {
    latencies: Vec<Duration>,
    errors: u64,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

// The load clients speak the wire form directly, as a client in another language would:
// objects as their Kubernetes JSON.

fn pod(namespace: &str, name: &str, client: usize) -> pb::Object {
    pod_for(namespace, name, client, "default-scheduler")
}

/// A pod that `scheduler` is to place.
fn pod_for(namespace: &str, name: &str, client: usize, scheduler: &str) -> pb::Object {
    let pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"client": format!("c{client}"), "app": "load"}},
        "spec": {"schedulerName": scheduler,
                 "containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    });
    pb::Object {
        kind: pb::Kind::Pod as i32,
        json: pod.to_string().into(),
    }
}

fn node(name: &str) -> pb::Object {
    let capacity = serde_json::json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
    let node = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {names::LABEL_HOSTNAME: name}},
        "status": {"capacity": capacity, "allocatable": capacity}
    });
    pb::Object {
        kind: pb::Kind::Node as i32,
        json: node.to_string().into(),
    }
}

/// The conditions a heartbeat carries, as JSON.
fn ready() -> String {
    serde_json::json!([{"type": names::CONDITION_READY, "status": names::STATUS_TRUE, "reason": "KubeletReady",
                        "message": "simulated node"}])
    .to_string()
}

/// The namespace, name and uid of an object's JSON.
fn identity(object: &pb::Object) -> (String, String, String) {
    let value: serde_json::Value = serde_json::from_str(&object.json).unwrap_or_default();
    let field = |f: &str| {
        value["metadata"][f]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    (field("namespace"), field("name"), field("uid"))
}

/// One simulated node: registers, opens its session, heartbeats every second and reports
/// every pod it is given as Running, until `stop`.
async fn simulated_node(
    channel: Channel,
    name: String,
    stop: CancellationToken,
    heartbeats: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    open: Arc<AtomicU64>,
) {
    let mut client = AgentClient::new(channel);
    if client
        .register(pb::RegisterRequest {
            node: Some(node(&name)),
            ..Default::default()
        })
        .await
        .is_err()
    {
        failures.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let (tx, rx) = mpsc::channel(64);
    let hello = pb::AgentMessage {
        msg: Some(pb::agent_message::Msg::Hello(pb::Hello {
            node_name: name.clone(),
            running_pod_uids: vec![],
        })),
    };
    tx.send(hello).await.expect("the queue is empty");
    let mut inbound = match client.session(ReceiverStream::new(rx)).await {
        Ok(r) => r.into_inner(),
        Err(_) => {
            failures.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    open.fetch_add(1, Ordering::Relaxed);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {
                let beat = pb::AgentMessage {
                    msg: Some(pb::agent_message::Msg::Heartbeat(pb::Heartbeat {
                        node_name: name.clone(),
                        conditions_json: ready(),
                        ..Default::default()
                    })),
                };
                if tx.send(beat).await.is_err() {
                    failures.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                heartbeats.fetch_add(1, Ordering::Relaxed);
            }
            message = inbound.message() => match message {
                Ok(Some(pb::SchedulerMessage { msg: Some(pb::scheduler_message::Msg::StartPod(start)) })) => {
                    let (namespace, name, uid) = start.pod.as_ref().map(identity).unwrap_or_default();
                    let status = pb::AgentMessage {
                        msg: Some(pb::agent_message::Msg::PodStatus(pb::PodStatusUpdate {
                            namespace,
                            name,
                            uid,
                            status_json: r#"{"phase":"Running"}"#.into(),
                        })),
                    };
                    let _ = tx.send(status).await;
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => {
                    if !stop.is_cancelled() {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                    return;
                }
            },
        }
    }
}

/// One API client: until the deadline, in turn applies a pod of its own, gets one of its
/// pods and lists its pods by label.
async fn api_client(
    channel: Channel,
    id: usize,
    deadline: Instant,
    samples: Arc<Mutex<BTreeMap<&'static str, Samples>>>,
    acked: Arc<Mutex<HashSet<String>>>,
) {
    let mut client = BerthClient::new(channel).max_decoding_message_size(64 * 1024 * 1024);
    let namespace = "default";
    let mut mine: Vec<String> = Vec::new();
    let mut local: BTreeMap<&'static str, Samples> = BTreeMap::new();
    let mut n = 0usize;
    while Instant::now() < deadline {
        let op = match n % 5 {
            0 => "apply",
            1 | 3 => "get",
            _ => "list",
        };
        let started = Instant::now();
        let ok = match op {
            "apply" => {
                let name = format!("c{id}-p{n}");
                let result = client
                    .apply(pb::ApplyRequest {
                        objects: vec![pod(namespace, &name, id)],
                        dry_run: false,
                    })
                    .await;
                if result.is_ok() {
                    mine.push(name);
                }
                result.is_ok()
            }
            "get" => match mine.last() {
                Some(name) => client
                    .get(pb::GetRequest {
                        kind: pb::Kind::Pod as i32,
                        namespace: namespace.into(),
                        name: name.clone(),
                    })
                    .await
                    .is_ok(),
                None => true,
            },
            _ => client
                .list(pb::ListRequest {
                    kind: pb::Kind::Pod as i32,
                    namespace: namespace.into(),
                    label_selector: format!("client=c{id}"),
                    ..Default::default()
                })
                .await
                .is_ok(),
        };
        let entry = local.entry(op).or_default();
        entry.latencies.push(started.elapsed());
        if !ok {
            entry.errors += 1;
        }
        n += 1;
    }
    acked.lock().unwrap().extend(mine);
    let mut all = samples.lock().unwrap();
    for (op, s) in local {
        let e = all.entry(op).or_default();
        e.latencies.extend(s.latencies);
        e.errors += s.errors;
    }
}

/// Namespace of the pods that the bulk lister lists.
const BULK_NAMESPACE: &str = "bulk";

/// Stores `count` pods in [`BULK_NAMESPACE`] that no scheduler places, 100 an apply (within
/// etcd's 128 operations a transaction).
async fn store_bulk(channel: Channel, count: usize) {
    let mut client = BerthClient::new(channel);
    let names: Vec<String> = (0..count).map(|i| format!("bulk-{i:05}")).collect();
    for chunk in names.chunks(100) {
        let objects = chunk
            .iter()
            .map(|name| pod_for(BULK_NAMESPACE, name, 0, "no-such-scheduler"))
            .collect();
        client
            .apply(pb::ApplyRequest {
                objects,
                dry_run: false,
            })
            .await
            .expect("storing the bulk pods");
    }
}

/// Lists every pod of [`BULK_NAMESPACE`] until the deadline, checking that each list has
/// all `count` of them.
async fn bulk_lister(
    channel: Channel,
    count: usize,
    deadline: Instant,
    samples: Arc<Mutex<BTreeMap<&'static str, Samples>>>,
) {
    let mut client = BerthClient::new(channel).max_decoding_message_size(512 * 1024 * 1024);
    let mut local = Samples::default();
    while Instant::now() < deadline {
        let started = Instant::now();
        let listed = client
            .list(pb::ListRequest {
                kind: pb::Kind::Pod as i32,
                namespace: BULK_NAMESPACE.into(),
                ..Default::default()
            })
            .await;
        local.latencies.push(started.elapsed());
        if !listed.is_ok_and(|r| r.into_inner().objects.len() == count) {
            local.errors += 1;
        }
    }
    let mut all = samples.lock().unwrap();
    let e = all.entry("bulklist").or_default();
    e.latencies.extend(local.latencies);
    e.errors += local.errors;
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let seconds = setting("BERTH_LOAD_SECONDS", 60);
    let clients = setting("BERTH_LOAD_CLIENTS", 200) as usize;
    let nodes = setting("BERTH_LOAD_NODES", 1000) as usize;
    let bulk = setting("BERTH_LOAD_BULK", 5000) as usize;
    // The server's process as `berth-scheduler` runs it: its allocator (jemalloc, linked in
    // with berth-cli, options and all) and its runtime.
    let rt = berth_cli::daemon::runtime().expect("tokio runtime");
    rt.block_on(async move {
        let dir = tempfile::tempdir().expect("temporary store");
        let store = std::env::var("BERTH_LOAD_STORE").unwrap_or_default();
        let mut flags = vec!["--seed", "1"];
        if !store.is_empty() {
            flags.extend(["--store", store.as_str()]);
        }
        let server =
            berth_scheduler::server::InProcess::start(&dir.path().join("store"), &flags).await;
        let addr = server.addr;
        let endpoint = Endpoint::from_shared(format!("http://{addr}")).expect("address");
        // A few connections shared by everyone, as a client library would pool them.
        let mut channels = Vec::new();
        for _ in 0..8 {
            channels.push(endpoint.connect().await.expect("connecting"));
        }

        store_bulk(channels[0].clone(), bulk).await;
        println!("api_load: {nodes} simulated nodes, {clients} API clients, {bulk} bulk pods, {seconds} s");
        let stop = CancellationToken::new();
        let heartbeats = Arc::new(AtomicU64::new(0));
        let node_failures = Arc::new(AtomicU64::new(0));
        let open = Arc::new(AtomicU64::new(0));
        let mut node_tasks = Vec::new();
        for i in 0..nodes {
            node_tasks.push(tokio::spawn(simulated_node(
                channels[i % channels.len()].clone(),
                format!("sim-{i:04}"),
                stop.clone(),
                heartbeats.clone(),
                node_failures.clone(),
                open.clone(),
            )));
        }
        // The load starts once every node is registered and its session open: the run
        // measures a cluster at work, not 1,000 nodes joining at once.
        let joining = Instant::now();
        while open.load(Ordering::Relaxed) + node_failures.load(Ordering::Relaxed) < nodes as u64 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!("nodes joined in {:.1?}", joining.elapsed());
        heartbeats.store(0, Ordering::Relaxed);

        let samples: Arc<Mutex<BTreeMap<&'static str, Samples>>> = Arc::default();
        let acked: Arc<Mutex<HashSet<String>>> = Arc::default();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(seconds);
        let mut client_tasks = Vec::new();
        if bulk > 0 {
            client_tasks.push(tokio::spawn(bulk_lister(
                channels[clients % channels.len()].clone(),
                bulk,
                deadline,
                samples.clone(),
            )));
        }
        for id in 0..clients {
            client_tasks.push(tokio::spawn(api_client(
                channels[id % channels.len()].clone(),
                id,
                deadline,
                samples.clone(),
                acked.clone(),
            )));
        }
        for t in client_tasks {
            t.await.expect("client task");
        }
        let elapsed = started.elapsed();
        stop.cancel();
        for t in node_tasks {
            let _ = t.await;
        }

        // No acknowledged write lost: every applied pod is stored.
        let mut client = BerthClient::new(channels[0].clone()).max_decoding_message_size(512 * 1024 * 1024);
        let stored: HashSet<String> = client
            .list(pb::ListRequest {
                kind: pb::Kind::Pod as i32,
                ..Default::default()
            })
            .await
            .expect("listing every pod")
            .into_inner()
            .objects
            .into_iter()
            .map(|o| identity(&o).1)
            .collect();
        let acked = acked.lock().unwrap().clone();
        let lost = acked.difference(&stored).count();

        let samples = std::mem::take(&mut *samples.lock().unwrap());
        let mut total_calls = 0usize;
        let mut total_errors = 0u64;
        let mut all = Vec::new();
        println!("{:<8} {:>9} {:>7} {:>10} {:>10} {:>10}", "call", "count", "errors", "p50", "p99", "max");
        for (op, mut s) in samples {
            s.latencies.sort();
            println!(
                "{:<8} {:>9} {:>7} {:>10.2?} {:>10.2?} {:>10.2?}",
                op,
                s.latencies.len(),
                s.errors,
                percentile(&s.latencies, 0.50),
                percentile(&s.latencies, 0.99),
                s.latencies.last().copied().unwrap_or_default()
            );
            total_calls += s.latencies.len();
            total_errors += s.errors;
            all.extend(s.latencies);
        }
        all.sort();
        println!(
            "{:<8} {:>9} {:>7} {:>10.2?} {:>10.2?} {:>10.2?}",
            "all",
            total_calls,
            total_errors,
            percentile(&all, 0.50),
            percentile(&all, 0.99),
            all.last().copied().unwrap_or_default()
        );
        println!(
            "throughput {:.0} calls/s; heartbeats {} ({:.0}/s); node session failures {}; pods acknowledged {}, lost {}",
            total_calls as f64 / elapsed.as_secs_f64(),
            heartbeats.load(Ordering::Relaxed),
            heartbeats.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64(),
            node_failures.load(Ordering::Relaxed),
            acked.len(),
            lost
        );
        server.shutdown.cancel();
        let _ = server.task.await;
        assert_eq!(total_errors, 0, "API calls failed under load");
        assert_eq!(lost, 0, "acknowledged writes were lost");
        assert_eq!(node_failures.load(Ordering::Relaxed), 0, "node sessions failed under load");
    });
}
