//! Command tests against an in-memory `Berth` service on loopback: each verb runs as a parsed
//! command line, end to end through gRPC, with its stdout, stderr and exit code checked.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use berth_model::testing::failed_scheduling_event;
use berth_proto::model::{Kind, Node, Object, ObjectKey, Time};
use berth_proto::pb;
use berth_proto::pb::berth_server::{Berth, BerthServer};
use berth_proto::wire::{kind_from_pb, kind_to_pb, object_from_pb, object_to_pb, pod_to_pb};
use clap::Parser;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

use super::Io;
use crate::{execute, Cli};

/// The in-memory store behind the fake service.
#[derive(Default)]
struct State {
    objects: BTreeMap<ObjectKey, Object>,
    version: u64,
    /// Applies to refuse with a conflict before accepting one (to exercise retries).
    conflicts_to_inject: usize,
    /// Requests seen, by verb.
    applies: usize,
}

#[derive(Clone, Default)]
struct Fake {
    state: Arc<Mutex<State>>,
}

fn not_found(key: &ObjectKey) -> Status {
    let name = if key.namespace.is_empty() {
        key.name.clone()
    } else {
        format!("{}/{}", key.namespace, key.name)
    };
    Status::not_found(format!(
        "{} {name} not found",
        key.kind.as_str().to_lowercase()
    ))
}

/// The object without the fields the server sets, to tell "unchanged" from "configured".
fn comparable(object: &Object) -> Object {
    let mut o = object.clone();
    let meta = o.meta_mut();
    meta.resource_version.clear();
    meta.uid.clear();
    meta.creation_timestamp = None;
    o
}

#[tonic::async_trait]
impl Berth for Fake {
    async fn apply(
        &self,
        request: Request<pb::ApplyRequest>,
    ) -> Result<Response<pb::ApplyResponse>, Status> {
        let request = request.into_inner();
        let mut state = self.state.lock().expect("state lock");
        state.applies += 1;
        if state.conflicts_to_inject > 0 {
            state.conflicts_to_inject -= 1;
            return Err(Status::aborted("the object has been modified; please apply your changes to the latest version and try again"));
        }
        let mut results = Vec::new();
        let mut writes = Vec::new();
        for msg in request.objects {
            let mut object =
                object_from_pb(&msg).map_err(|e| Status::invalid_argument(e.to_string()))?;
            if let Err(e) = berth_proto::validate::validate_object(&object) {
                return Err(Status::invalid_argument(e.to_string()));
            }
            let key = object.key();
            let existing = state.objects.get(&key);
            let wanted_version = object.meta().resource_version.clone();
            if let Some(existing) = existing {
                if !wanted_version.is_empty() && wanted_version != existing.meta().resource_version
                {
                    return Err(Status::aborted(format!("{key} was modified")));
                }
            }
            let action = match existing {
                None => "created",
                Some(e) if comparable(e) == comparable(&object) => "unchanged",
                Some(_) => "configured",
            };
            let version = state.version + 1 + writes.len() as u64;
            let meta = object.meta_mut();
            meta.resource_version = version.to_string();
            match existing {
                Some(e) => {
                    meta.uid = e.meta().uid.clone();
                    meta.creation_timestamp = e.meta().creation_timestamp;
                }
                None => {
                    meta.uid = format!("uid-{version}");
                    meta.creation_timestamp = Some(Time::now());
                }
            }
            results.push(pb::ApplyResult {
                kind: kind_to_pb(key.kind) as i32,
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                action: action.to_string(),
                resource_version: version.to_string(),
                object: request.dry_run.then(|| object_to_pb(&object)),
            });
            if action != "unchanged" {
                writes.push((key, object));
            }
        }
        if !request.dry_run {
            state.version += writes.len() as u64;
            for (key, object) in writes {
                state.objects.insert(key, object);
            }
        }
        Ok(Response::new(pb::ApplyResponse { results }))
    }

    async fn get(&self, request: Request<pb::GetRequest>) -> Result<Response<pb::Object>, Status> {
        let request = request.into_inner();
        let kind =
            kind_from_pb(request.kind).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let key = ObjectKey::new(kind, &request.namespace, &request.name);
        let state = self.state.lock().expect("state lock");
        match state.objects.get(&key) {
            Some(object) => Ok(Response::new(object_to_pb(object))),
            None => Err(not_found(&key)),
        }
    }

    async fn list(
        &self,
        request: Request<pb::ListRequest>,
    ) -> Result<Response<pb::ListResponse>, Status> {
        let request = request.into_inner();
        let kind =
            kind_from_pb(request.kind).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let selector = berth_proto::selector::parse(&request.label_selector)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let state = self.state.lock().expect("state lock");
        let objects = state
            .objects
            .values()
            .filter(|o| o.kind() == kind)
            .filter(|o| request.namespace.is_empty() || o.meta().namespace == request.namespace)
            .filter(|o| selector.matches(&o.meta().labels))
            .filter(|o| match o {
                Object::Pod(p) => {
                    request.node_name.is_empty() || p.spec.node_name == request.node_name
                }
                _ => true,
            })
            .map(object_to_pb)
            .collect();
        Ok(Response::new(pb::ListResponse {
            objects,
            resource_version: state.version.to_string(),
        }))
    }

    async fn delete(
        &self,
        request: Request<pb::DeleteRequest>,
    ) -> Result<Response<pb::DeleteResponse>, Status> {
        let request = request.into_inner();
        let kind =
            kind_from_pb(request.kind).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let key = ObjectKey::new(kind, &request.namespace, &request.name);
        let mut state = self.state.lock().expect("state lock");
        match state.objects.remove(&key) {
            Some(object) => Ok(Response::new(pb::DeleteResponse {
                object: Some(object_to_pb(&object)),
            })),
            None => Err(not_found(&key)),
        }
    }

    /// Evicting deletes the pod: the fake has no disruption budgets.
    async fn evict(
        &self,
        request: Request<pb::EvictRequest>,
    ) -> Result<Response<pb::EvictResponse>, Status> {
        let request = request.into_inner();
        let key = ObjectKey::new(Kind::Pod, &request.namespace, &request.name);
        let mut state = self.state.lock().expect("state lock");
        match state.objects.remove(&key) {
            Some(Object::Pod(pod)) => Ok(Response::new(pb::EvictResponse {
                pod: Some(pod_to_pb(&pod)),
            })),
            _ => Err(not_found(&key)),
        }
    }

    type WatchStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<pb::WatchEvent, Status>> + Send + 'static>,
    >;

    async fn watch(
        &self,
        _request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("the CLI's verbs do not watch"))
    }

    async fn bind(
        &self,
        _request: Request<pb::BindRequest>,
    ) -> Result<Response<pb::BindResponse>, Status> {
        Err(Status::unimplemented("the CLI's verbs do not bind"))
    }
}

/// The fake service listening on loopback.
struct TestServer {
    addr: SocketAddr,
    fake: Fake,
    dir: tempfile::TempDir,
}

impl TestServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let fake = Fake::default();
        let service = BerthServer::new(fake.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        TestServer {
            addr,
            fake,
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A started server with the given manifests (file name, text) written and applied.
    async fn with_applied(manifests: &[(&str, &str)]) -> Self {
        let server = Self::start().await;
        let mut args = vec!["apply".to_string()];
        for (name, text) in manifests {
            args.push("-f".to_string());
            args.push(server.manifest(name, text));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        server.succeeds(&args).await;
        server
    }

    /// The path of manifest file `name` in the server's folder.
    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// Writes a manifest file and returns its path.
    fn manifest(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write manifest");
        path
    }

    fn insert(&self, object: Object) {
        let mut state = self.fake.state.lock().expect("state lock");
        state.version += 1;
        let mut object = object;
        object.meta_mut().resource_version = state.version.to_string();
        state.objects.insert(object.key(), object);
    }

    fn object(&self, kind: Kind, namespace: &str, name: &str) -> Option<Object> {
        let state = self.fake.state.lock().expect("state lock");
        state
            .objects
            .get(&ObjectKey::new(kind, namespace, name))
            .cloned()
    }

    fn node(&self, name: &str) -> Node {
        match self.object(Kind::Node, "", name) {
            Some(Object::Node(node)) => *node,
            other => panic!("node {name}: {other:?}"),
        }
    }

    /// Runs `berth --server ADDR ARGS...`; returns the exit code, stdout and stderr.
    async fn berth(&self, args: &[&str]) -> (bool, String, String) {
        run_berth(&self.addr.to_string(), args).await
    }

    /// Runs `berth ARGS...`, asserts that it succeeded, and returns its stdout.
    async fn succeeds(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.berth(args).await;
        assert!(ok, "{args:?}: {err}");
        out
    }

    /// Runs `berth ARGS...`, asserts that it failed, and returns its stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.berth(args).await;
        assert!(!ok, "{args:?} succeeded: {out}");
        err
    }
}

async fn run_berth(server: &str, args: &[&str]) -> (bool, String, String) {
    let head = ["berth", "--server", server];
    let argv = head.iter().chain(args).copied();
    let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let (mut io, out, err) = Io::captured();
    let code = execute(cli, &mut io).await;
    (code == ExitCode::SUCCESS, out.text(), err.text())
}

const NODES: &str = "\
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {zone: a}
status:
  capacity: {cpu: 4, memory: 8Gi, pods: 110}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status:
  capacity: {cpu: 2, memory: 4Gi, pods: 110}
";

const WEB: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: app
    image: nginx
    resources:
      requests: {cpu: 500m, memory: 256Mi}
";

#[tokio::test]
async fn apply_reports_created_configured_unchanged() {
    let server = TestServer::start().await;
    let nodes = server.manifest("nodes.yaml", NODES);
    let web = server.manifest("web.yaml", WEB);

    let out = server.succeeds(&["apply", "-f", &nodes, "-f", &web]).await;
    assert_eq!(out, "node/n1 created\nnode/n2 created\npod/web created\n");

    let out = server.succeeds(&["apply", "-f", &web]).await;
    assert_eq!(out, "pod/web unchanged\n");

    let changed = server.manifest("web.yaml", &WEB.replace("500m", "750m"));
    let out = server
        .succeeds(&["apply", "-f", &changed, "--dry-run"])
        .await;
    assert_eq!(
        out, "pod/web configured (dry run)\n",
        "--dry-run alone is client"
    );
    let out = server
        .succeeds(&["apply", "-f", &changed, "--dry-run=server"])
        .await;
    assert_eq!(out, "pod/web configured (server dry run)\n");
    let out = server.succeeds(&["apply", "-f", &changed]).await;
    assert_eq!(out, "pod/web configured\n");
    let Some(Object::Pod(pod)) = server.object(Kind::Pod, "default", "web") else {
        panic!("pod stored");
    };
    assert_eq!(
        pod.spec.containers[0].resources.requests["cpu"].millis(),
        750
    );

    let err = server
        .fails(&[
            "apply",
            "-n",
            "prod",
            "-f",
            &server.manifest(
                "ns.yaml",
                &WEB.replace("name: web", "name: web\n  namespace: dev"),
            ),
        ])
        .await;
    assert!(err.starts_with("error: the namespace from the provided object \"dev\" does not match the namespace \"prod\""), "{err}");
}

#[tokio::test]
async fn invalid_manifests_are_reported_and_nothing_is_sent() {
    let server = TestServer::start().await;
    let bad = server.manifest(
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: app\n    resoures: {}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
    );
    let (ok, out, err) = server.berth(&["apply", "-f", &bad]).await;
    assert!(!ok);
    assert_eq!(out, "");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with(&format!("error: {bad}: document 1 (Pod a): spec.containers[0].resoures: unknown field \"resoures\"")), "{err}");
    assert!(
        lines[1].starts_with(&format!(
            "error: {bad}: document 2 (Service s): kind \"Service\" is not supported"
        )),
        "{err}"
    );
    assert_eq!(
        server.fake.state.lock().expect("lock").applies,
        0,
        "nothing sent"
    );
}

#[tokio::test]
async fn get_prints_tables_yaml_and_errors() {
    let server = TestServer::with_applied(&[("nodes.yaml", NODES), ("web.yaml", WEB)]).await;

    let out = server.succeeds(&["get", "pods"]).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "NAME   READY   STATUS    RESTARTS   AGE");
    assert!(
        lines[1].starts_with("web    0/1     Pending   0          "),
        "{out}"
    );

    let out = server.succeeds(&["get", "nodes", "-o", "wide"]).await;
    assert!(
        out.starts_with(
            "NAME   STATUS    ROLES    AGE   CPU   MEMORY   PODS   INTERNAL-IP   TAINTS\n"
        ),
        "{out}"
    );
    assert!(out.contains("\nn2     Unknown   <none>   "), "{out}");

    let out = server.succeeds(&["get", "pod", "web", "-o", "yaml"]).await;
    assert!(
        out.starts_with("apiVersion: v1\nkind: Pod\nmetadata:\n"),
        "{out}"
    );

    let out = server
        .succeeds(&["get", "no", "-l", "zone=a", "-o", "name"])
        .await;
    assert_eq!(out, "node/n1\n");

    let (ok, out, err) = server.berth(&["get", "pods", "-n", "other"]).await;
    assert!(ok);
    assert_eq!(
        (out.as_str(), err.as_str()),
        ("", "No resources found in other namespace.\n")
    );

    let out = server
        .succeeds(&["get", "pods", "--field-selector", "spec.nodeName=n1"])
        .await;
    assert_eq!(out, "");

    let (ok, out, err) = server.berth(&["get", "pod", "web", "missing"]).await;
    assert!(!ok);
    assert!(out.starts_with("NAME"), "found objects still print: {out}");
    assert_eq!(err, "error: pod default/missing not found\n");

    let err = server.fails(&["get", "services"]).await;
    assert_eq!(
        err,
        "error: the server doesn't have a resource type \"services\"\n"
    );
}

#[tokio::test]
async fn label_taint_and_cordon_modify_nodes() {
    let server = TestServer::with_applied(&[("nodes.yaml", NODES)]).await;

    let out = server.succeeds(&["label", "nodes", "n1", "disk=ssd"]).await;
    assert_eq!(out, "node/n1 labeled\n");
    let err = server.fails(&["label", "nodes", "n1", "zone=b"]).await;
    assert_eq!(
        err,
        "error: 'zone' already has a value (a), and --overwrite is false\n"
    );
    let out = server
        .succeeds(&["label", "node/n1", "zone=b", "--overwrite"])
        .await;
    assert_eq!(out, "node/n1 labeled\n");
    let out = server.succeeds(&["label", "nodes", "n1", "disk-"]).await;
    assert_eq!(out, "node/n1 unlabeled\n");
    assert_eq!(
        server.node("n1").metadata.labels,
        [("zone".to_string(), "b".to_string())].into()
    );

    // Two conflicts in a row: the taint is still written, after re-reading the node.
    server.fake.state.lock().expect("lock").conflicts_to_inject = 2;
    let out = server
        .succeeds(&["taint", "nodes", "n1", "dedicated=gpu:NoSchedule"])
        .await;
    assert_eq!(out, "node/n1 tainted\n");
    assert_eq!(server.node("n1").spec.taints.len(), 1);
    let err = server
        .fails(&["taint", "nodes", "n1", "dedicated=db:NoSchedule"])
        .await;
    assert_eq!(err, "error: node n1 already has dedicated taint(s) with same effect(s) and --overwrite is false\n");
    let out = server
        .succeeds(&["taint", "nodes", "n1", "dedicated-"])
        .await;
    assert_eq!(out, "node/n1 untainted\n");
    assert!(server.node("n1").spec.taints.is_empty());

    let out = server.succeeds(&["cordon", "n1", "n2"]).await;
    assert_eq!(out, "node/n1 cordoned\nnode/n2 cordoned\n");
    let out = server.succeeds(&["cordon", "n1"]).await;
    assert_eq!(out, "node/n1 already cordoned\n");
    let out = server.succeeds(&["get", "nodes"]).await;
    assert!(
        out.contains("\nn1     Unknown,SchedulingDisabled   "),
        "{out}"
    );
    let out = server.succeeds(&["uncordon", "n1"]).await;
    assert_eq!(out, "node/n1 uncordoned\n");
    assert!(!server.node("n1").spec.unschedulable);

    let err = server.fails(&["cordon", "nope"]).await;
    assert_eq!(err, "error: node nope not found\n");
}

#[tokio::test]
async fn delete_by_name_selector_and_manifest() {
    let server = TestServer::with_applied(&[("nodes.yaml", NODES), ("web.yaml", WEB)]).await;

    let web = server.path("web.yaml");
    let out = server.succeeds(&["delete", "-f", &web]).await;
    assert_eq!(out, "pod \"web\" deleted\n");
    assert!(server.object(Kind::Pod, "default", "web").is_none());

    let (ok, out, err) = server.berth(&["delete", "pod", "web"]).await;
    assert!(!ok);
    assert_eq!(
        (out.as_str(), err.as_str()),
        ("", "error: pod default/web not found\n")
    );
    server
        .succeeds(&["delete", "pod", "web", "--ignore-not-found"])
        .await;

    let out = server.succeeds(&["delete", "nodes", "-l", "zone=a"]).await;
    assert_eq!(out, "node \"n1\" deleted\n");
    let out = server.succeeds(&["delete", "node/n2"]).await;
    assert_eq!(out, "node \"n2\" deleted\n");

    let err = server.fails(&["delete", "pods"]).await;
    assert_eq!(
        err,
        "error: resource(s) were provided, but no name was specified\n"
    );
}

#[tokio::test]
async fn describe_pod_shows_its_failed_scheduling_event() {
    let server = TestServer::with_applied(&[("web.yaml", WEB)]).await;
    let Some(Object::Pod(pod)) = server.object(Kind::Pod, "default", "web") else {
        panic!("pod stored");
    };
    let metadata = pod.metadata;
    server.insert(Object::Event(Box::new(failed_scheduling_event(
        "default",
        "web",
        &metadata.uid,
        "0/0 nodes are available: no nodes available to schedule pods.",
        Time::now(),
    ))));

    let out = server.succeeds(&["describe", "pod", "web"]).await;
    assert!(
        out.starts_with("Name:         web\nNamespace:    default\n"),
        "{out}"
    );
    assert!(out.contains("  Warning  FailedScheduling  "), "{out}");
    assert!(
        out.contains(
            "default-scheduler  0/0 nodes are available: no nodes available to schedule pods.\n"
        ),
        "{out}"
    );

    let out = server.succeeds(&["get", "events"]).await;
    assert!(
        out.starts_with("LAST SEEN   TYPE      REASON             OBJECT    MESSAGE\n"),
        "{out}"
    );
    assert!(
        out.contains("Warning   FailedScheduling   pod/web   0/0 nodes"),
        "{out}"
    );

    let err = server.fails(&["describe", "pod", "nope"]).await;
    assert_eq!(err, "error: pod default/nope not found\n");
}

#[tokio::test]
async fn unreachable_server_is_one_clear_line() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let (ok, out, err) = run_berth(&addr, &["get", "pods"]).await;
    assert!(!ok);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!("error: cannot reach the Berth scheduler at http://{addr}: connection refused. Is `berth dev` running?\n")
    );
}
