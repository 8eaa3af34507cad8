//! The user-facing gRPC service (`berth.v1.Berth`): Apply, Get, List, Delete, Watch,
//! Evict and Bind, with admission on every write.

use std::pin::Pin;
use std::sync::Arc;

use berth_proto::model::{Kind, Object, ObjectKey};
use berth_proto::wire::{kind_from_pb, kind_to_pb, object_from_pb, object_to_pb, pod_to_pb};
use berth_proto::{pb, selector};
use berth_store::{ChangeType, ObjectStore, Op, Precondition};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use tracing::instrument;

use super::admission::{self, ApplyAction};
use super::error::{blocking, Error, Reply, Result};
use super::watch_cache::WatchCache;

/// Most objects one Apply may carry.
pub const MAX_OBJECTS_PER_APPLY: usize = 10_000;

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
}

impl ApiService {
    /// A service over `store`. Starts the watch cache's task, so it must be called inside
    /// a Tokio runtime.
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        ApiService {
            watch_cache: WatchCache::start(store.as_ref()),
            store,
            shutdown: tokio_util::sync::CancellationToken::new(),
            admission: admission::AdmissionConfig::default(),
        }
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

    /// Admits every object, then stores them all in one transaction.
    fn apply(&self, req: pb::ApplyRequest) -> Result<pb::ApplyResponse> {
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
                Object::PriorityClass(pc) => Some(pc.clone()),
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
        if req.dry_run || ops.is_empty() {
            return Ok(pb::ApplyResponse { results });
        }
        let changes = self.store.commit(ops)?;
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
        match self.store.get(&key)? {
            Some(obj) => Ok(object_to_pb(&obj)),
            None => match kind {
                Kind::PriorityClass => admission::priority_class(self.store.as_ref(), &req.name)?
                    .map(|pc| object_to_pb(&Object::PriorityClass(pc)))
                    .ok_or(Error::NotFound { key }),
                _ => Err(Error::NotFound { key }),
            },
        }
    }

    fn list(&self, req: pb::ListRequest) -> Result<pb::ListResponse> {
        let kind = request_kind(req.kind)?;
        let selector =
            selector::parse(&req.label_selector).map_err(|e| Error::BadRequest(e.to_string()))?;
        let revision = self.store.revision();
        let namespace = (!req.namespace.is_empty()).then_some(req.namespace.as_str());
        let mut objects = self.store.list(kind, namespace)?;
        if kind == Kind::PriorityClass {
            for pc in berth_proto::model::PriorityClass::system_classes() {
                if !objects.iter().any(|o| o.meta().name == pc.metadata.name) {
                    objects.push(Object::PriorityClass(pc));
                }
            }
            objects.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
        }
        let objects = objects
            .iter()
            .filter(|o| selector.matches(&o.meta().labels))
            .filter(|o| match (o, req.node_name.is_empty()) {
                (Object::Pod(p), false) => p.spec.node_name == req.node_name,
                _ => true,
            })
            .map(object_to_pb)
            .collect();
        Ok(pb::ListResponse {
            objects,
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
        let this = self.clone();
        let req = req.into_inner();
        let resp = blocking(move || this.apply(req)).await?;
        Ok(Response::new(resp))
    }

    async fn get(&self, req: Request<pb::GetRequest>) -> Reply<pb::Object> {
        Ok(Response::new(ApiService::get(self, req.into_inner())?))
    }

    async fn list(&self, req: Request<pb::ListRequest>) -> Reply<pb::ListResponse> {
        Ok(Response::new(ApiService::list(self, req.into_inner())?))
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
