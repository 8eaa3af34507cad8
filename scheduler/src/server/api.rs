//! The user-facing gRPC service (`berth.v1.Berth`): Apply, Get, List, Delete, Watch,
//! Evict and Bind, with admission on every write.

use std::pin::Pin;
use std::sync::Arc;

use berth_proto::model::{Kind, Object, ObjectKey};
use berth_proto::pb::JsonText;
use berth_proto::wire::{kind_from_pb, kind_to_pb, object_from_pb, object_to_pb, pod_to_pb};
use berth_proto::{pb, selector};
use berth_store::{ChangeType, ObjectStore, Op, Precondition};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use tracing::instrument;

use super::admission::{self, ApplyAction};
use super::error::{blocking, Error, Reply, Result};
use super::group_commit::GroupCommit;
use super::watch_cache::{ObjectCache, WatchCache};

/// Most objects one Apply may carry.
pub const MAX_OBJECTS_PER_APPLY: usize = 10_000;

/// Most objects of an apply admitted on the runtime's thread on a local store (see
/// [`ApiService::with_local_store`]); a larger apply is admitted on the blocking pool.
pub const INLINE_APPLY_OBJECTS: usize = 8;

/// Largest gRPC request the server decodes (bytes); larger ones fail with
/// `OUT_OF_RANGE` before any handler runs.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// Largest object the server stores, in bytes of its JSON (the form it travels and is stored
/// in): etcd's default request limit, which bounds a Kubernetes object the same way.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// The Berth API service over a store.
#[derive(Clone)]
pub struct ApiService {
    store: Arc<dyn ObjectStore>,
    /// Ends open watches when the server shuts down.
    shutdown: tokio_util::sync::CancellationToken,
    /// Settings of pod admission.
    admission: admission::AdmissionConfig,
    /// Recent changes, for watches that start from a version.
    watch_cache: WatchCache,
    /// The latest objects, for gets and lists.
    objects: Arc<ObjectCache>,
    /// Commits applies, those of concurrent callers together.
    commits: GroupCommit,
    /// Whether the store answers without the network (sled: a consistent read needs the
    /// last revision assigned here, admission's reads are in memory), so that Get, List
    /// and the admission of small applies run on the runtime's thread instead of a
    /// hand-off to the blocking pool.
    local_store: bool,
}

impl ApiService {
    /// A service over `store`. Starts the watch cache's task, so it must be called inside
    /// a Tokio runtime.
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        ApiService {
            watch_cache: WatchCache::start(store.as_ref()),
            objects: ObjectCache::start(store.clone()),
            commits: GroupCommit::new(store.clone()),
            store,
            shutdown: tokio_util::sync::CancellationToken::new(),
            admission: admission::AdmissionConfig::default(),
            local_store: false,
        }
    }

    /// The same service, its applies committed through `commits` (shared with the
    /// agents' status writes, say, so that both take one transaction and one flush).
    pub fn with_commits(mut self, commits: GroupCommit) -> Self {
        self.commits = commits;
        self
    }

    /// The cache reads are answered from, to share with other readers.
    pub fn objects(&self) -> &Arc<ObjectCache> {
        &self.objects
    }

    /// The group commit applies go through, to share with other writers.
    pub fn commits(&self) -> &GroupCommit {
        &self.commits
    }

    /// The same service, answering Get, List and the admission of applies of at most
    /// [`INLINE_APPLY_OBJECTS`] objects on the runtime's threads: right when the store
    /// answers without the network (sled), so that nothing there waits on a peer or a
    /// timeout; on etcd (a quorum read before each consistent read, a round trip for each
    /// of admission's reads) keep the default, all of them on the blocking pool.
    pub fn with_local_store(mut self, local: bool) -> Self {
        self.local_store = local;
        self
    }

    /// The same service, admitting pods with `config`.
    pub fn with_admission(mut self, config: admission::AdmissionConfig) -> Self {
        self.admission = config;
        self
    }

    /// Ends the watches of this service when `shutdown` fires, so that a graceful stop does
    /// not wait for watchers to hang up.
    pub fn with_shutdown(mut self, shutdown: tokio_util::sync::CancellationToken) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Admits every object and says what storing them takes: the results without their
    /// new versions, and the ops to commit, in one transaction (none for a dry run).
    fn admit_apply(&self, req: pb::ApplyRequest) -> Result<(Vec<pb::ApplyResult>, Vec<Op>)> {
        if req.objects.len() > MAX_OBJECTS_PER_APPLY {
            return Err(Error::BadRequest(format!(
                "an apply may carry at most {MAX_OBJECTS_PER_APPLY} objects, got {}",
                req.objects.len()
            )));
        }
        let mut ops = Vec::with_capacity(req.objects.len());
        let mut results = Vec::with_capacity(req.objects.len());
        let mut seen = std::collections::HashSet::new();
        let objects = req
            .objects
            .iter()
            .enumerate()
            .map(|(i, pb_obj)| {
                object_from_pb(pb_obj).map_err(|source| Error::Convert {
                    context: format!("object {}", i + 1),
                    source,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // Pods may use the PriorityClasses of the same apply.
        let classes: Vec<_> = objects
            .iter()
            .filter_map(|o| match o {
                Object::PriorityClass(pc) => Some((**pc).clone()),
                _ => None,
            })
            .collect();
        for obj in objects {
            let obj = admission::admit_with(self.store.as_ref(), obj, &classes, &self.admission)?;
            check_object_size(&obj)?;
            let key = obj.key();
            if !seen.insert(key.clone()) {
                return Err(Error::BadRequest(format!(
                    "{key} appears more than once in one apply"
                )));
            }
            let (op, action) = match self.store.get(&key)? {
                None => (Op::Create(admission::prepare_create(obj)), "created"),
                Some(stored) => {
                    let requested_rv = obj.meta().resource_version.clone();
                    let (merged, action) = admission::merge_update(&stored, obj)?;
                    let precondition = if requested_rv.is_empty() {
                        Precondition::ResourceVersion(stored.meta().resource_version.clone())
                    } else {
                        Precondition::ResourceVersion(requested_rv)
                    };
                    match action {
                        ApplyAction::Unchanged => {
                            let mut result =
                                apply_result(&key, "unchanged", &stored.meta().resource_version);
                            if req.dry_run {
                                result.object = Some(object_to_pb(&stored));
                            }
                            results.push(result);
                            continue;
                        }
                        ApplyAction::Configured => (
                            Op::Update {
                                object: merged,
                                precondition,
                            },
                            "configured",
                        ),
                    }
                }
            };
            let mut result = apply_result(&key, action, "");
            if req.dry_run {
                result.object = Some(object_to_pb(match &op {
                    Op::Create(o) | Op::Upsert(o) | Op::Update { object: o, .. } => o,
                    Op::Delete { .. } => unreachable!("an apply deletes nothing"),
                }));
            }
            results.push(result);
            ops.push(op);
        }
        if req.dry_run {
            ops.clear();
        }
        Ok((results, ops))
    }

    /// Admits every object, then stores them all in one transaction.
    async fn apply(&self, req: pb::ApplyRequest) -> std::result::Result<pb::ApplyResponse, Status> {
        let (mut results, ops) = if self.local_store && req.objects.len() <= INLINE_APPLY_OBJECTS {
            self.admit_apply(req)?
        } else {
            let this = self.clone();
            blocking(move || this.admit_apply(req)).await?
        };
        if ops.is_empty() {
            return Ok(pb::ApplyResponse { results });
        }
        let changes = self.commits.commit(ops).await?;
        // Fill in the versions the store assigned, in order.
        let mut changes = changes.iter();
        for r in results.iter_mut().filter(|r| r.action != "unchanged") {
            if let Some(c) = changes.next() {
                r.resource_version = c.object.meta().resource_version.clone();
            }
        }
        Ok(pb::ApplyResponse { results })
    }

    fn get(&self, req: pb::GetRequest) -> Result<pb::Object> {
        let kind = request_kind(req.kind)?;
        let key = ObjectKey::new(kind, &default_namespace(kind, &req.namespace), &req.name);
        let cached = ObjectCache::holds(kind)
            .then(|| {
                self.objects.read(|cache| {
                    let found = cache.objects().get_shared(&key).cloned();
                    found.map(|o| cache.json(&[o]).swap_remove(0))
                })
            })
            .flatten();
        let found = match cached {
            Some(found) => found.map(|json| encoded(kind, json)),
            None => self.store.get(&key)?.map(|o| object_to_pb(&o)),
        };
        match found {
            Some(obj) => Ok(obj),
            None => match kind {
                Kind::PriorityClass => admission::priority_class(self.store.as_ref(), &req.name)?
                    .map(|pc| object_to_pb(&Object::PriorityClass(Box::new(pc))))
                    .ok_or(Error::NotFound { key }),
                _ => Err(Error::NotFound { key }),
            },
        }
    }

    /// The objects of a list, and the revision they reflect: from the cache, or from the
    /// store when the cache does not hold the kind or cannot be brought up to date.
    fn list(&self, req: pb::ListRequest) -> Result<pb::ListResponse> {
        let kind = request_kind(req.kind)?;
        let selector =
            selector::parse(&req.label_selector).map_err(|e| Error::BadRequest(e.to_string()))?;
        let namespace = (!req.namespace.is_empty()).then_some(req.namespace.as_str());
        let on_node = |o: &Object| match (o, req.node_name.is_empty()) {
            (Object::Pod(p), false) => p.spec.node_name == req.node_name,
            _ => true,
        };
        let wanted = |o: &Object| selector.matches(&o.meta().labels) && on_node(o);
        let cached = (ObjectCache::holds(kind) && kind != Kind::PriorityClass)
            .then(|| {
                self.objects.read(|cache| {
                    let mut objects = cache.select(kind, namespace, &selector);
                    objects.retain(|o| on_node(o));
                    let json = cache.json(&objects);
                    (json, cache.revision())
                })
            })
            .flatten();
        if let Some((json, revision)) = cached {
            return Ok(pb::ListResponse {
                objects: json.into_iter().map(|j| encoded(kind, j)).collect(),
                resource_version: revision.to_string(),
            });
        }
        let cached = (kind == Kind::PriorityClass)
            .then(|| {
                self.objects.read(|cache| {
                    let objects = cache.select(kind, namespace, &selector);
                    (objects, cache.revision())
                })
            })
            .flatten();
        let (mut objects, revision) = match cached {
            Some(listed) => listed,
            None => {
                let revision = self.store.revision();
                let objects = self.store.list(kind, namespace)?;
                let objects = objects.into_iter().filter(|o| wanted(o)).map(Arc::new);
                (objects.collect(), revision)
            }
        };
        if kind == Kind::PriorityClass {
            for pc in berth_proto::model::PriorityClass::system_classes() {
                let pc = Object::PriorityClass(Box::new(pc));
                if wanted(&pc) && !objects.iter().any(|o| o.meta().name == pc.meta().name) {
                    objects.push(Arc::new(pc));
                }
            }
            objects.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
        }
        Ok(pb::ListResponse {
            objects: objects.iter().map(|o| object_to_pb(o)).collect(),
            resource_version: revision.to_string(),
        })
    }

    fn delete(&self, req: pb::DeleteRequest) -> Result<pb::DeleteResponse> {
        let kind = request_kind(req.kind)?;
        let key = ObjectKey::new(kind, &default_namespace(kind, &req.namespace), &req.name);
        if kind == Kind::PriorityClass {
            admission::check_priority_class_unused(self.store.as_ref(), &req.name)?;
        }
        let precondition = if req.resource_version.is_empty() {
            Precondition::None
        } else {
            Precondition::ResourceVersion(req.resource_version)
        };
        let changes = self.store.commit(vec![Op::Delete { key, precondition }])?;
        let object = changes.first().map(|c| object_to_pb(&c.object));
        Ok(pb::DeleteResponse { object })
    }
}

fn apply_result(key: &ObjectKey, action: &str, rv: &str) -> pb::ApplyResult {
    pb::ApplyResult {
        kind: kind_to_pb(key.kind) as i32,
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        action: action.to_string(),
        resource_version: rv.to_string(),
        object: None,
    }
}

/// The message for an object of `kind` whose JSON is `json`.
fn encoded(kind: Kind, json: JsonText) -> pb::Object {
    pb::Object {
        kind: kind_to_pb(kind) as i32,
        json,
    }
}

fn request_kind(kind: i32) -> Result<Kind> {
    kind_from_pb(kind).map_err(|e| Error::BadRequest(e.to_string()))
}

fn default_namespace(kind: Kind, namespace: &str) -> String {
    if kind.is_namespaced() && namespace.is_empty() {
        "default".to_string()
    } else {
        namespace.to_string()
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = std::result::Result<pb::WatchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl pb::berth_server::Berth for ApiService {
    #[instrument(skip_all, fields(objects = req.get_ref().objects.len()))]
    async fn apply(&self, req: Request<pb::ApplyRequest>) -> Reply<pb::ApplyResponse> {
        Ok(Response::new(
            ApiService::apply(self, req.into_inner()).await?,
        ))
    }

    async fn get(&self, req: Request<pb::GetRequest>) -> Reply<pb::Object> {
        // A consistent read may wait for the store (on etcd a quorum read, then up to
        // CONSISTENT_READ_TIMEOUT for the cache): off the runtime's threads, unless the
        // store is local.
        let req = req.into_inner();
        if self.local_store {
            return Ok(Response::new(ApiService::get(self, req)?));
        }
        let this = self.clone();
        let resp = blocking(move || ApiService::get(&this, req)).await?;
        Ok(Response::new(resp))
    }

    async fn list(&self, req: Request<pb::ListRequest>) -> Reply<pb::ListResponse> {
        // On etcd a consistent read waits for the store: off the runtime's threads. On
        // sled a list from the cache copies JSON kept from earlier reads (most of it): the
        // hand-off to the blocking pool would cost more than it saves.
        let req = req.into_inner();
        if self.local_store {
            return Ok(Response::new(self.list(req)?));
        }
        let this = self.clone();
        let resp = blocking(move || this.list(req)).await?;
        Ok(Response::new(resp))
    }

    #[instrument(skip_all, fields(name = %req.get_ref().name))]
    async fn delete(&self, req: Request<pb::DeleteRequest>) -> Reply<pb::DeleteResponse> {
        let this = self.clone();
        let req = req.into_inner();
        let resp = blocking(move || ApiService::delete(&this, req)).await?;
        Ok(Response::new(resp))
    }

    #[instrument(skip_all, fields(namespace = %req.get_ref().namespace, name = %req.get_ref().name))]
    async fn evict(&self, req: Request<pb::EvictRequest>) -> Reply<pb::EvictResponse> {
        let store = self.store.clone();
        let req = req.into_inner();
        let namespace = default_namespace(Kind::Pod, &req.namespace);
        let pod = blocking(move || {
            super::eviction::evict(
                store.as_ref(),
                &namespace,
                &req.name,
                req.grace_period_seconds,
            )
            .map_err(Error::from)
        })
        .await?;
        Ok(Response::new(pb::EvictResponse {
            pod: Some(pod_to_pb(&pod)),
        }))
    }

    #[instrument(skip_all, fields(namespace = %req.get_ref().namespace, name = %req.get_ref().name, node = %req.get_ref().node_name))]
    async fn bind(&self, req: Request<pb::BindRequest>) -> Reply<pb::BindResponse> {
        let store = self.store.clone();
        let req = req.into_inner();
        let namespace = default_namespace(Kind::Pod, &req.namespace);
        let pod = blocking(move || {
            super::binding::bind(
                store.as_ref(),
                &super::binding::Binding {
                    namespace: &namespace,
                    name: &req.name,
                    uid: &req.uid,
                    node: &req.node_name,
                    scheduler: &req.scheduler_name,
                },
            )
        })
        .await?;
        Ok(Response::new(pb::BindResponse {
            pod: Some(pod_to_pb(&pod)),
        }))
    }

    type WatchStream = WatchStream;

    async fn watch(&self, req: Request<pb::WatchRequest>) -> Reply<Self::WatchStream> {
        let req = req.into_inner();
        let kind = request_kind(req.kind)?;
        let namespace = req.namespace.clone();
        // kube: an empty version and "0" both start with the current objects.
        let (initial, backlog, mut changes, from) =
            if req.resource_version.is_empty() || req.resource_version == "0" {
                // Subscribe before listing so that nothing falls between the two.
                let changes = self.watch_cache.subscribe();
                let revision = self.store.revision();
                let ns = (!namespace.is_empty()).then_some(namespace.as_str());
                let objects = self.store.list(kind, ns).map_err(Error::from)?;
                (objects, Vec::new(), changes, revision)
            } else {
                let from = req.resource_version.parse::<u64>().map_err(|_| {
                    Error::BadRequest(format!(
                        "resource_version: {:?} is not a resource version",
                        req.resource_version
                    ))
                })?;
                let start = self.watch_cache.since(from).map_err(Error::from)?;
                (Vec::new(), start.backlog, start.live, from)
            };
        let shutdown = self.shutdown.clone();
        let stream = async_stream(move |tx| async move {
            for obj in initial {
                let ev = pb::WatchEvent {
                    r#type: pb::watch_event::Type::Added as i32,
                    object: Some(object_to_pb(&obj)),
                };
                if tx.send(Ok(ev)).await.is_err() {
                    return;
                }
            }
            let mut backlog = backlog.into_iter();
            loop {
                let change = match backlog.next() {
                    Some(change) => change,
                    None => {
                        let received = tokio::select! {
                            _ = shutdown.cancelled() => return,
                            received = changes.recv() => received,
                        };
                        match received {
                            Ok(c) => c,
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                                // The client sees the stream end with DATA_LOSS either way.
                                let _ = tx.send(Err(Error::WatchLagged { missed }.into())).await;
                                return;
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                                // The cache lost changes: this watch cannot go on.
                                let expired = super::watch_cache::Expired {
                                    requested: from,
                                    oldest: from,
                                };
                                let _ = tx.send(Err(Error::from(expired).into())).await;
                                return;
                            }
                        }
                    }
                };
                if change.revision <= from || change.object.kind() != kind {
                    continue;
                }
                if !namespace.is_empty() && change.object.meta().namespace != namespace {
                    continue;
                }
                let t = match change.change_type {
                    ChangeType::Added => pb::watch_event::Type::Added,
                    ChangeType::Modified => pb::watch_event::Type::Modified,
                    ChangeType::Deleted => pb::watch_event::Type::Deleted,
                };
                let ev = pb::WatchEvent {
                    r#type: t as i32,
                    object: Some(object_to_pb(&change.object)),
                };
                if tx.send(Ok(ev)).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(stream))
    }
}

/// Refuses an object larger than [`MAX_OBJECT_BYTES`] in its JSON form.
fn check_object_size(obj: &Object) -> Result<()> {
    let size = json_len(obj);
    if size > MAX_OBJECT_BYTES {
        return Err(Error::BadRequest(format!(
            "{} is too large: {size} bytes encoded, more than the limit of {MAX_OBJECT_BYTES}",
            admission::describe(obj)
        )));
    }
    Ok(())
}

/// The length of an object's JSON, counted without keeping the text.
fn json_len(obj: &Object) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, obj).expect("model objects serialize to JSON");
    count.0
}

/// A stream fed by a task through a bounded channel.
fn async_stream<F, Fut>(f: F) -> WatchStream
where
    F: FnOnce(tokio::sync::mpsc::Sender<std::result::Result<pb::WatchEvent, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(256);
    tokio::spawn(f(tx));
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}

#[cfg(test)]
mod tests {
    use berth_model::testing::PodBuilder;
    use berth_proto::pb::berth_client::BerthClient;
    use berth_proto::wire::{object_from_pb, pod_to_pb};

    use super::*;

    /// A client's pod, labelled with the client.
    fn pod(client: usize, i: usize, extra: Option<&str>) -> pb::Object {
        let mut pod = PodBuilder::new(&format!("c{client}-p{i}"))
            .image("busybox")
            .label("client", &format!("c{client}"));
        if let Some(value) = extra {
            pod = pod.label("extra", value);
        }
        pod_to_pb(&pod.build())
    }

    /// Applies one object and returns its new resourceVersion.
    async fn apply_one(
        api: &mut BerthClient<tonic::transport::Channel>,
        object: pb::Object,
    ) -> String {
        let reply = api
            .apply(pb::ApplyRequest {
                objects: vec![object],
                dry_run: false,
            })
            .await
            .expect("applied")
            .into_inner();
        reply.results[0].resource_version.clone()
    }

    /// kube's consistent reads: a client that applied sees its write on its next get and
    /// list, however many other clients write meanwhile (their applies share commits).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_reads_its_own_writes_at_once() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let server = crate::server::InProcess::start(&dir.path().join("store"), &[]).await;
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
            .expect("address")
            .connect()
            .await
            .expect("connecting");
        let clients = (0..8).map(|client| {
            let mut api = BerthClient::new(channel.clone());
            tokio::spawn(async move {
                for i in 0..15 {
                    let version = apply_one(&mut api, pod(client, i, None)).await;
                    assert!(!version.is_empty(), "a created pod has a version");
                    let got = api
                        .get(pb::GetRequest {
                            kind: pb::Kind::Pod as i32,
                            namespace: "default".into(),
                            name: format!("c{client}-p{i}"),
                        })
                        .await
                        .expect("its own pod is found at once")
                        .into_inner();
                    let got = object_from_pb(&got).expect("a pod");
                    assert!(
                        got.meta().resource_version.parse::<u64>().unwrap()
                            >= version.parse::<u64>().unwrap()
                    );
                    let listed = api
                        .list(pb::ListRequest {
                            kind: pb::Kind::Pod as i32,
                            namespace: "default".into(),
                            label_selector: format!("client=c{client}"),
                            ..Default::default()
                        })
                        .await
                        .expect("listed")
                        .into_inner();
                    assert_eq!(listed.objects.len(), i + 1, "every pod applied so far");
                    assert!(
                        listed.resource_version.parse::<u64>().unwrap()
                            >= version.parse::<u64>().unwrap(),
                        "the list reflects the write"
                    );
                }
                // An update is seen at once too.
                let version = apply_one(&mut api, pod(client, 0, Some("yes"))).await;
                let listed = api
                    .list(pb::ListRequest {
                        kind: pb::Kind::Pod as i32,
                        label_selector: format!("client=c{client},extra=yes"),
                        ..Default::default()
                    })
                    .await
                    .expect("listed")
                    .into_inner();
                assert_eq!(listed.objects.len(), 1);
                let updated = object_from_pb(&listed.objects[0]).expect("a pod");
                assert_eq!(updated.meta().resource_version, version);
            })
        });
        for client in clients.collect::<Vec<_>>() {
            client.await.expect("the client's reads saw its writes");
        }
        server.shutdown.cancel();
        server
            .task
            .await
            .expect("the server task")
            .expect("a clean shutdown");
    }
}
