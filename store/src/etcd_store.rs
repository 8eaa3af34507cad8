//! [`EtcdStore`]: the [`ObjectStore`] on an etcd cluster (v3 API), and [`EtcdElector`],
//! leader election on an etcd lease with writes fenced on the election key.
//!
//! Objects live under `/berth/<plural>/<namespace>/<name>` (`/berth/<plural>/<name>` for
//! cluster-scoped kinds) as their JSON; an object's resourceVersion is its key's
//! mod_revision. A commit is one etcd transaction: the keys are read at one revision, the ops
//! are checked against that state, and the writes apply only if every key still has the
//! mod_revision read (an absent key: create_revision 0), so a precondition holds at the
//! moment of the write. The changes of one commit share the transaction's revision.
//!
//! The trait is synchronous and the client is async: the client runs on a small runtime of
//! its own, and a call hands its future to that runtime and waits for the answer on a
//! channel (inside a multi-threaded tokio runtime, in `block_in_place`, so the caller's
//! worker hands its other tasks off). The store's own tasks never call the sync methods,
//! so a call cannot wait on itself.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_proto::etcd::compare::{CompareResult, CompareTarget, TargetUnion};
use berth_proto::etcd::event::EventType;
use berth_proto::etcd::kv_client::KvClient;
use berth_proto::etcd::lease_client::LeaseClient;
use berth_proto::etcd::request_op::Request;
use berth_proto::etcd::response_op::Response;
use berth_proto::etcd::watch_client::WatchClient;
use berth_proto::etcd::watch_request::RequestUnion;
use berth_proto::etcd::{
    CompactionRequest, Compare, DeleteRangeRequest, KeyValue, LeaseGrantRequest,
    LeaseKeepAliveRequest, LeaseRevokeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest,
    TxnResponse, WatchCreateRequest, WatchProgressRequest, WatchRequest,
};
use berth_proto::model::{Kind, Object, ObjectKey};
use prost::Message;
use tokio::sync::{broadcast, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

use crate::election::{ElectionConfig, Elector, Fence, Guard, Leadership};
use crate::objects::{
    check, check_update, decode_key, decode_object, encode_key, keep_identity, normalize_key,
    prepare, stamp_new, Identity,
};
use crate::{Change, ChangeType, Error, ObjectStore, Op, Result, CHANNEL_CAPACITY};

/// The prefix of every key Berth writes.
pub const KEY_PREFIX: &str = "/berth/";

/// The election key of the scheduler replicas' leader (kept out of the object keys: no
/// kind's plural is `leader`).
pub const LEADER_KEY: &str = "/berth/leader";

/// etcd's default `--max-txn-ops`: the most compares, and the most writes, one transaction
/// may hold. A commit touches one compare per distinct object, plus one for a fence.
pub const MAX_TXN_OPS: usize = 128;

/// The most operations a fenced commit ([`ObjectStore::commit_guarded`]) may hold: its
/// fence's compare takes one of the transaction's [`MAX_TXN_OPS`].
pub const MAX_FENCED_TXN_OPS: usize = MAX_TXN_OPS - 1;

/// etcd's default `--max-request-bytes` (1.5 MiB): the largest request it accepts.
pub const MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// Keys fetched per page of a list.
const PAGE_SIZE: i64 = 500;

/// How often a commit retries when its keys changed between its read and its write and no
/// precondition of its own decides the outcome.
const MAX_ATTEMPTS: usize = 16;

/// How long a consistent read waits for the watch before asking it for progress (and again
/// between requests).
const PROGRESS_REQUEST_INTERVAL: Duration = Duration::from_millis(100);

/// The watch id of a requested progress notification (it answers for every watch of the
/// stream).
const REQUESTED_PROGRESS_WATCH_ID: i64 = -1;

/// Settings of an [`EtcdStore`].
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs of the members (`http://127.0.0.1:2379`); requests are balanced over them
    /// and move on when one goes away.
    pub endpoints: Vec<String>,
    /// How long one request may take before its outcome counts as unknown.
    pub request_timeout: Duration,
    /// How often the compactor runs (0: never).
    pub compaction_interval: Duration,
    /// How many revisions of history the compactor keeps: each run compacts to the current
    /// revision minus this. A watch that falls further behind re-lists.
    pub retained_revisions: u64,
    /// The prefix of every key (`/berth/`); tests give each store its own.
    pub prefix: String,
}

impl EtcdConfig {
    /// The settings for these members, with the defaults: 5 s requests, compaction every
    /// 5 minutes keeping 10,000 revisions, keys under [`KEY_PREFIX`].
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdConfig {
            endpoints,
            request_timeout: Duration::from_secs(5),
            compaction_interval: Duration::from_secs(300),
            retained_revisions: 10_000,
            prefix: KEY_PREFIX.to_string(),
        }
    }

    /// Parses `etcd://host:port,host:port,...` (the `--store` flag) into the members' URLs.
    pub fn from_url(url: &str) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidStoreUrl {
            url: url.to_string(),
            reason,
        };
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| invalid("expected etcd://HOST:PORT[,HOST:PORT...]".into()))?;
        let mut endpoints = Vec::new();
        for member in rest.split(',') {
            let member = member.trim();
            let Some((host, port)) = member.rsplit_once(':') else {
                return Err(invalid(format!("member {member:?} has no :PORT")));
            };
            if host.is_empty() || host.contains('/') {
                return Err(invalid(format!("member {member:?} has no host")));
            }
            if port.parse::<u16>().is_err() {
                return Err(invalid(format!(
                    "member {member:?}: {port:?} is not a port"
                )));
            }
            endpoints.push(format!("http://{member}"));
        }
        Ok(Self::new(endpoints))
    }
}

/// The runtime the client runs on, shut down in the background when the last holder goes
/// (dropping a runtime may not block, and the store may be dropped inside another runtime).
struct ClientRuntime(Option<tokio::runtime::Runtime>);

impl ClientRuntime {
    fn handle(&self) -> &tokio::runtime::Handle {
        self.0.as_ref().expect("present until dropped").handle()
    }

    /// Runs `future` on the client's runtime and waits for its output.
    fn call<T: Send + 'static>(
        &self,
        future: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle().spawn(async move {
            let _ = tx.send(future.await);
        });
        let wait = move || rx.recv().map_err(|_| Error::ClientStopped);
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)?
            }
            _ => wait()?,
        }
    }
}

impl Drop for ClientRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// What the store's tasks and calls share.
struct Shared {
    kv: KvClient<Channel>,
    watch: WatchClient<Channel>,
    lease: LeaseClient<Channel>,
    config: EtcdConfig,
    /// The highest revision seen in any reply.
    revision: AtomicU64,
    /// The revision up to which the watch has broadcast every change.
    watched: watch::Sender<u64>,
    changes: broadcast::Sender<Arc<Change>>,
    /// The last change broadcast, repeated to make every receiver lag after a gap.
    last_change: Mutex<Option<Arc<Change>>>,
    /// The request stream of the running watch, to ask it for a progress notification.
    watch_requests: Mutex<Option<tokio::sync::mpsc::Sender<WatchRequest>>>,
}

impl Shared {
    fn saw(&self, revision: i64) {
        self.revision
            .fetch_max(u64::try_from(revision).unwrap_or(0), Ordering::AcqRel);
    }

    fn object_prefix(&self) -> String {
        self.config.prefix.clone()
    }

    /// The etcd key of an object.
    fn etcd_key(&self, key: &ObjectKey) -> Result<Vec<u8>> {
        let key = normalize_key(key);
        Ok(format!(
            "{}{}/{}",
            self.config.prefix,
            key.kind.plural(),
            encode_key(&key)?
        )
        .into_bytes())
    }

    /// The object key of an etcd key, if it is an object's.
    fn object_key(&self, etcd_key: &[u8]) -> Option<ObjectKey> {
        let rest = etcd_key.strip_prefix(self.config.prefix.as_bytes())?;
        let slash = rest.iter().position(|b| *b == b'/')?;
        let plural = std::str::from_utf8(&rest[..slash]).ok()?;
        let kind = *Kind::ALL.iter().find(|k| k.plural() == plural)?;
        Some(decode_key(kind, &rest[slash + 1..]))
    }

    /// The election key under this store's prefix.
    fn leader_key(&self) -> Vec<u8> {
        format!("{}leader", self.config.prefix).into_bytes()
    }

    /// Runs one request with the request timeout; a timeout is an [`Error::Timeout`].
    async fn request<T>(
        &self,
        operation: &'static str,
        future: impl Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.config.request_timeout, future).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(etcd_error(operation, status)),
            Err(_) => Err(Error::Timeout {
                operation,
                after: self.config.request_timeout,
            }),
        }
    }

    /// A read, retried while the cluster is unreachable for a little while (a read has no
    /// effect, so retrying it is always safe).
    async fn read<T, F, Fut>(&self, operation: &'static str, mut attempt: F) -> Result<T>
    where
        F: FnMut(KvClient<Channel>) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    {
        let mut delay = Duration::from_millis(50);
        let deadline = Instant::now() + self.config.request_timeout * 2;
        loop {
            match self.request(operation, attempt(self.kv.clone())).await {
                Err(e) if e.is_transient() && Instant::now() < deadline => {
                    tracing::debug!(operation, error = %e, "etcd read failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// The cluster's current revision: the header of a quorum read of one key (counting
    /// only), as kube-apiserver's `getCurrentResourceVersionFromStorage` asks.
    async fn current_revision(&self) -> Result<i64> {
        let leader = self.leader_key();
        let response = self
            .read("current revision", |mut kv| {
                let key = leader.clone();
                async move {
                    kv.range(RangeRequest {
                        key,
                        count_only: true,
                        ..Default::default()
                    })
                    .await
                }
            })
            .await?;
        let revision = response.header.map_or(0, |h| h.revision);
        self.saw(revision);
        Ok(revision)
    }

    /// Waits until the watch has broadcast every change up to `revision`. While it has not,
    /// asks the watch for progress every [`PROGRESS_REQUEST_INTERVAL`]: writes outside the
    /// prefix (another user of the cluster) advance the revision without an event.
    async fn wait_watched(&self, revision: u64) {
        let mut watched = self.watched.subscribe();
        loop {
            let reached = tokio::time::timeout(
                PROGRESS_REQUEST_INTERVAL,
                watched.wait_for(|w| *w >= revision),
            )
            .await
            .map(|r| r.is_ok());
            match reached {
                Ok(true) => return,
                // The watch loop is gone (the store is closing): nothing more will come.
                Ok(false) => std::future::pending::<()>().await,
                Err(_) => self.request_progress(),
            }
        }
    }

    /// Asks the running watch for a progress notification (none if one is queued already).
    fn request_progress(&self) {
        let requests = self
            .watch_requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(requests) = requests {
            let _ = requests.try_send(WatchRequest {
                request_union: Some(RequestUnion::ProgressRequest(WatchProgressRequest {})),
            });
        }
    }

    /// The stored state of `keys`, all at one revision, and that revision.
    async fn read_keys(&self, keys: &[Vec<u8>]) -> Result<(Vec<Option<KeyValue>>, i64)> {
        let txn = TxnRequest {
            compare: Vec::new(),
            success: keys
                .iter()
                .map(|key| RequestOp {
                    request: Some(Request::RequestRange(RangeRequest {
                        key: key.clone(),
                        ..Default::default()
                    })),
                })
                .collect(),
            failure: Vec::new(),
        };
        let response = self
            .read("read", |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await?;
        let revision = header_revision(&response);
        self.saw(revision);
        let values = response
            .responses
            .into_iter()
            .map(|r| match r.response {
                Some(Response::ResponseRange(range)) => range.kvs.into_iter().next(),
                _ => None,
            })
            .collect();
        Ok((values, revision))
    }

    /// An object from a stored key-value: its JSON with resourceVersion = mod_revision.
    fn decode(&self, key: &ObjectKey, kv: &KeyValue) -> Result<Object> {
        let mut object = decode_object(key, &kv.value)?;
        object.meta_mut().resource_version = kv.mod_revision.to_string();
        Ok(object)
    }
}

/// An [`ObjectStore`] on an etcd cluster.
pub struct EtcdStore {
    shared: Arc<Shared>,
    runtime: Arc<ClientRuntime>,
}

impl EtcdStore {
    /// Connects to the cluster, starts the watch that feeds [`ObjectStore::subscribe`] and
    /// the compactor, and returns once a first request has been answered.
    pub fn connect(config: EtcdConfig) -> Result<Self> {
        if config.endpoints.is_empty() {
            return Err(Error::InvalidStoreUrl {
                url: String::new(),
                reason: "no etcd members given".into(),
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("berth-etcd")
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let runtime = Arc::new(ClientRuntime(Some(runtime)));
        let shared = runtime.call({
            let config = config.clone();
            async move { connect(config).await }
        })?;
        let shared = Arc::new(shared);
        runtime.handle().spawn(watch_loop(Arc::clone(&shared)));
        if !shared.config.compaction_interval.is_zero() {
            runtime.handle().spawn(compact_loop(Arc::clone(&shared)));
        }
        tracing::info!(endpoints = ?config.endpoints, revision = shared.revision.load(Ordering::Acquire), "etcd store connected");
        Ok(EtcdStore { shared, runtime })
    }

    /// An elector on this cluster's election key, with this timing.
    pub fn elector(&self, config: ElectionConfig) -> EtcdElector {
        EtcdElector {
            shared: Arc::clone(&self.shared),
            runtime: Arc::clone(&self.runtime),
            config,
        }
    }

    /// Compacts history up to `revision` (kept for the compactor and tests).
    pub fn compact(&self, revision: u64) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        self.runtime
            .call(async move { compact(&shared, revision).await })
    }

    fn commit_with(&self, ops: Vec<Op>, fence: Option<Guard>) -> Result<Vec<Change>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let shared = Arc::clone(&self.shared);
        self.runtime
            .call(async move { commit(&shared, ops, fence.as_ref()).await })
    }
}

impl ObjectStore for EtcdStore {
    fn get(&self, key: &ObjectKey) -> Result<Option<Object>> {
        let key = normalize_key(key);
        let etcd_key = self.shared.etcd_key(&key)?;
        let shared = Arc::clone(&self.shared);
        self.runtime.call(async move {
            let (mut values, _) = shared.read_keys(&[etcd_key]).await?;
            values
                .pop()
                .flatten()
                .map(|kv| shared.decode(&key, &kv))
                .transpose()
        })
    }

    fn list(&self, kind: Kind, namespace: Option<&str>) -> Result<Vec<Object>> {
        let namespace = namespace.filter(|ns| kind.is_namespaced() && !ns.is_empty());
        let mut prefix = format!("{}{}/", self.shared.config.prefix, kind.plural());
        if let Some(ns) = namespace {
            prefix.push_str(ns);
            prefix.push('/');
        }
        let shared = Arc::clone(&self.shared);
        self.runtime
            .call(async move { list(&shared, kind, prefix.into_bytes()).await })
    }

    fn commit(&self, ops: Vec<Op>) -> Result<Vec<Change>> {
        self.commit_with(ops, None)
    }

    fn commit_guarded(&self, guard: &Guard, ops: Vec<Op>) -> Result<Vec<Change>> {
        guard.check()?;
        self.commit_with(ops, Some(guard.clone()))
    }

    fn revision(&self) -> u64 {
        self.shared.revision.load(Ordering::Acquire)
    }

    fn current_revision(&self) -> Result<u64> {
        let shared = Arc::clone(&self.shared);
        let revision = self
            .runtime
            .call(async move { shared.current_revision().await })?;
        Ok(u64::try_from(revision).unwrap_or(0))
    }

    fn wait_sent(&self, revision: u64, timeout: Duration) -> bool {
        if *self.shared.watched.borrow() >= revision {
            return true;
        }
        let shared = Arc::clone(&self.shared);
        self.runtime
            .call(async move {
                Ok(tokio::time::timeout(timeout, shared.wait_watched(revision))
                    .await
                    .is_ok())
            })
            .unwrap_or(false)
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.shared.changes.subscribe()
    }
}

impl fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdStore")
            .field("endpoints", &self.shared.config.endpoints)
            .field("revision", &self.revision())
            .finish_non_exhaustive()
    }
}

async fn connect(config: EtcdConfig) -> Result<Shared> {
    let mut endpoints = Vec::with_capacity(config.endpoints.len());
    for url in &config.endpoints {
        let endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| Error::InvalidStoreUrl {
                url: url.clone(),
                reason: e.to_string(),
            })?
            .connect_timeout(config.request_timeout)
            .http2_keep_alive_interval(Duration::from_secs(5))
            .keep_alive_timeout(Duration::from_secs(5))
            .keep_alive_while_idle(true);
        endpoints.push(endpoint);
    }
    let channel = Channel::balance_list(endpoints.into_iter());
    let (changes, _) = broadcast::channel(CHANNEL_CAPACITY);
    let (watched, _) = watch::channel(0);
    let shared = Shared {
        kv: KvClient::new(channel.clone()),
        watch: WatchClient::new(channel.clone()),
        lease: LeaseClient::new(channel),
        config,
        revision: AtomicU64::new(0),
        watched,
        changes,
        last_change: Mutex::new(None),
        watch_requests: Mutex::new(None),
    };
    // One read proves the cluster answers, and gives the revision the watch starts after.
    let revision = shared.current_revision().await?;
    shared
        .watched
        .send_replace(u64::try_from(revision).unwrap_or(0));
    Ok(shared)
}

async fn list(shared: &Shared, kind: Kind, prefix: Vec<u8>) -> Result<Vec<Object>> {
    let end = prefix_end(&prefix);
    let mut objects = Vec::new();
    let mut from = prefix.clone();
    // Every page is read at the first page's revision, so the list is one snapshot.
    let mut revision = 0;
    loop {
        let request = RangeRequest {
            key: from.clone(),
            range_end: end.clone(),
            limit: PAGE_SIZE,
            revision,
            ..Default::default()
        };
        let page = shared
            .read("list", |mut kv| {
                let request = request.clone();
                async move { kv.range(request).await }
            })
            .await?;
        if revision == 0 {
            revision = page.header.as_ref().map_or(0, |h| h.revision);
            shared.saw(revision);
        }
        for kv in &page.kvs {
            let key = shared
                .object_key(&kv.key)
                .filter(|k| k.kind == kind)
                .unwrap_or_else(|| decode_key(kind, &kv.key));
            objects.push(shared.decode(&key, kv)?);
        }
        match page.kvs.last() {
            Some(last) if page.more => {
                from = last.key.clone();
                from.push(0);
            }
            _ => break,
        }
    }
    // Byte order of `namespace/name` is not (namespace, name) order.
    objects.sort_by(|a, b| {
        (&a.meta().namespace, &a.meta().name).cmp(&(&b.meta().namespace, &b.meta().name))
    });
    Ok(objects)
}

/// The state a commit works on: per distinct key, what is stored and what will be.
struct Slot {
    key: ObjectKey,
    etcd_key: Vec<u8>,
    /// As read.
    stored: Option<KeyValue>,
    /// After the ops so far (`None`: absent).
    current: Option<Object>,
    /// Whether any op wrote it.
    written: bool,
}

/// The writes a commit sends, kept to recognise them if the outcome is unknown.
struct Plan {
    changes: Vec<(ChangeType, Object)>,
    txn: TxnRequest,
    /// Put keys and the bytes put, deleted keys with `None`.
    writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

async fn commit(shared: &Shared, ops: Vec<Op>, fence: Option<&Guard>) -> Result<Vec<Change>> {
    if ops.len() > MAX_TXN_OPS {
        return Err(Error::TooManyOps {
            ops: ops.len(),
            limit: MAX_TXN_OPS,
        });
    }
    // The distinct keys, in first-use order.
    let mut keys: Vec<ObjectKey> = Vec::new();
    let mut index: HashMap<ObjectKey, usize> = HashMap::new();
    for op in &ops {
        let key = normalize_key(&op_key(op));
        if !index.contains_key(&key) {
            index.insert(key.clone(), keys.len());
            keys.push(key);
        }
    }
    let etcd_keys = keys
        .iter()
        .map(|k| shared.etcd_key(k))
        .collect::<Result<Vec<_>>>()?;
    let fence = match fence {
        Some(guard) => match guard.fence() {
            Fence::Etcd {
                key,
                create_revision,
            } => Some((guard, key.clone(), *create_revision)),
            Fence::Local => return Err(guard.not_leader()),
        },
        None => None,
    };
    let compares = keys.len() + usize::from(fence.is_some());
    if compares > MAX_TXN_OPS {
        return Err(Error::TooManyOps {
            ops: compares,
            limit: MAX_TXN_OPS,
        });
    }

    let mut unknown: Option<(Plan, i64)> = None;
    for _ in 0..MAX_ATTEMPTS {
        let (stored, read_revision) = shared.read_keys(&etcd_keys).await?;
        if let Some((plan, before)) = unknown.take() {
            // The previous attempt timed out: if its writes are there, it applied.
            if let Some(revision) = applied(&plan, &stored, before) {
                return finish(shared, plan, revision).await;
            }
        }
        if let Some((guard, _, _)) = &fence {
            guard.check()?;
        }
        let plan = plan(
            shared,
            &ops,
            &keys,
            &etcd_keys,
            &index,
            stored,
            fence.as_ref(),
        )?;
        let sent = shared
            .request("commit", shared.kv.clone().txn(plan.txn.clone()))
            .await;
        match sent {
            Ok(response) if response.succeeded => {
                let revision = header_revision(&response);
                shared.saw(revision);
                return finish(shared, plan, revision).await;
            }
            Ok(response) => {
                shared.saw(header_revision(&response));
                if let Some((guard, _, create_revision)) = &fence {
                    let holds = response.responses.first().and_then(|r| match &r.response {
                        Some(Response::ResponseRange(range)) => range.kvs.first(),
                        _ => None,
                    });
                    if holds.map(|kv| kv.create_revision) != Some(*create_revision) {
                        return Err(guard.not_leader());
                    }
                }
                // Someone wrote one of the keys in between: read again and re-check.
                tracing::debug!(read_revision, "commit raced another write; retrying");
            }
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, "commit outcome unknown; reading back before retrying");
                unknown = Some((plan, read_revision));
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::Contention {
        attempts: MAX_ATTEMPTS,
    })
}

/// Checks the ops in order against the state read, and builds the transaction.
fn plan(
    shared: &Shared,
    ops: &[Op],
    keys: &[ObjectKey],
    etcd_keys: &[Vec<u8>],
    index: &HashMap<ObjectKey, usize>,
    stored: Vec<Option<KeyValue>>,
    fence: Option<&(&Guard, Vec<u8>, i64)>,
) -> Result<Plan> {
    let mut slots = Vec::with_capacity(keys.len());
    for ((key, etcd_key), kv) in keys.iter().zip(etcd_keys).zip(stored) {
        let current = kv.as_ref().map(|kv| shared.decode(key, kv)).transpose()?;
        slots.push(Slot {
            key: key.clone(),
            etcd_key: etcd_key.clone(),
            stored: kv,
            current,
            written: false,
        });
    }
    let mut changes = Vec::with_capacity(ops.len());
    for op in ops {
        let slot = &mut slots[index[&normalize_key(&op_key(op))]];
        let key = slot.key.clone();
        let change = match op {
            Op::Create(object) => {
                if slot.current.is_some() {
                    return Err(Error::AlreadyExists { key });
                }
                let mut object = object.clone();
                stamp_new(&mut object);
                (ChangeType::Added, object)
            }
            Op::Update {
                object,
                precondition,
            } => {
                let Some(stored) = &slot.current else {
                    return Err(Error::NotFound { key });
                };
                let stored = Identity::of(stored);
                check_update(&key, &stored, object, precondition)?;
                let mut object = object.clone();
                keep_identity(&mut object, &stored);
                (ChangeType::Modified, object)
            }
            Op::Upsert(object) => {
                let mut object = object.clone();
                match &slot.current {
                    Some(stored) => {
                        keep_identity(&mut object, &Identity::of(stored));
                        (ChangeType::Modified, object)
                    }
                    None => {
                        stamp_new(&mut object);
                        (ChangeType::Added, object)
                    }
                }
            }
            Op::Delete { precondition, .. } => {
                let Some(stored) = slot.current.take() else {
                    return Err(Error::NotFound { key });
                };
                check(&key, &Identity::of(&stored), precondition)?;
                slot.written = true;
                changes.push((ChangeType::Deleted, stored));
                continue;
            }
        };
        // The object as it will read back (its resourceVersion is set once the revision is
        // known); a later op in the batch sees it under the pre-commit resourceVersion.
        let rv = slot
            .current
            .as_ref()
            .map(|o| o.meta().resource_version.clone())
            .unwrap_or_default();
        let (_, object) = prepare(&key, change.1, rv)?;
        slot.current = Some(object.clone());
        slot.written = true;
        changes.push((change.0, object));
    }

    let mut txn = TxnRequest::default();
    let mut writes = Vec::new();
    for slot in &slots {
        txn.compare.push(match &slot.stored {
            Some(kv) => compare(
                &slot.etcd_key,
                CompareTarget::Mod,
                TargetUnion::ModRevision(kv.mod_revision),
            ),
            None => compare(
                &slot.etcd_key,
                CompareTarget::Create,
                TargetUnion::CreateRevision(0),
            ),
        });
        if !slot.written {
            continue;
        }
        match &slot.current {
            Some(object) => {
                let mut stored = object.clone();
                stored.meta_mut().resource_version.clear();
                let (value, _) = prepare(&slot.key, stored, String::new())?;
                let size = slot.etcd_key.len() + value.len();
                if size > MAX_REQUEST_BYTES {
                    return Err(Error::ObjectTooLarge {
                        key: slot.key.clone(),
                        bytes: size,
                        limit: MAX_REQUEST_BYTES,
                    });
                }
                txn.success.push(RequestOp {
                    request: Some(Request::RequestPut(PutRequest {
                        key: slot.etcd_key.clone(),
                        value: value.clone(),
                        ..Default::default()
                    })),
                });
                writes.push((slot.etcd_key.clone(), Some(value)));
            }
            None if slot.stored.is_some() => {
                txn.success.push(RequestOp {
                    request: Some(Request::RequestDeleteRange(DeleteRangeRequest {
                        key: slot.etcd_key.clone(),
                        ..Default::default()
                    })),
                });
                writes.push((slot.etcd_key.clone(), None));
            }
            // Created and deleted within the batch: nothing to write.
            None => {}
        }
    }
    if let Some((_, key, create_revision)) = fence {
        txn.compare.push(compare(
            key,
            CompareTarget::Create,
            TargetUnion::CreateRevision(*create_revision),
        ));
        // On failure, read the election key to tell a lost fence from a raced write.
        txn.failure.push(RequestOp {
            request: Some(Request::RequestRange(RangeRequest {
                key: key.clone(),
                ..Default::default()
            })),
        });
    }
    let bytes = txn.encoded_len();
    if bytes > MAX_REQUEST_BYTES {
        return Err(Error::RequestTooLarge {
            bytes,
            limit: MAX_REQUEST_BYTES,
        });
    }
    Ok(Plan {
        changes,
        txn,
        writes,
    })
}

/// The revision a timed-out commit applied at, if every key it wrote holds what it wrote
/// (puts: the same bytes, all at one revision after the state it read; deletes: absent).
/// A commit of deletes only cannot be recognised this way and counts as not applied.
fn applied(plan: &Plan, stored: &[Option<KeyValue>], before: i64) -> Option<i64> {
    let by_key: HashMap<&[u8], &KeyValue> = stored
        .iter()
        .flatten()
        .map(|kv| (kv.key.as_slice(), kv))
        .collect();
    let mut revision = None;
    for (key, value) in &plan.writes {
        match (value, by_key.get(key.as_slice())) {
            (Some(value), Some(kv)) if kv.value == *value && kv.mod_revision > before => {
                if revision.is_some_and(|r| r != kv.mod_revision) {
                    return None;
                }
                revision = Some(kv.mod_revision);
            }
            (None, None) => {}
            _ => return None,
        }
    }
    revision
}

/// Stamps the committed changes with their revision, and waits (a little) until the watch
/// has broadcast them, so that, as on sled, a subscriber has the changes when `commit`
/// returns.
async fn finish(shared: &Shared, plan: Plan, revision: i64) -> Result<Vec<Change>> {
    let rv = u64::try_from(revision).unwrap_or(0);
    let changes = plan
        .changes
        .into_iter()
        .map(|(change_type, mut object)| {
            object.meta_mut().resource_version = rv.to_string();
            Change {
                change_type,
                object: Arc::new(object),
                revision: rv,
            }
        })
        .collect();
    let mut watched = shared.watched.subscribe();
    let caught_up = tokio::time::timeout(
        shared.config.request_timeout,
        watched.wait_for(|w| *w >= rv),
    )
    .await;
    if !matches!(caught_up, Ok(Ok(_))) {
        tracing::warn!(
            revision,
            "committed, but the watch has not delivered it yet"
        );
    }
    Ok(changes)
}

/// Follows every change under the prefix from the revision after the last one broadcast,
/// resuming after disconnects. A resume point that compaction removed makes every receiver
/// lag, so that it lists again.
async fn watch_loop(shared: Arc<Shared>) {
    let prefix = shared.object_prefix().into_bytes();
    let end = prefix_end(&prefix);
    let mut delay = Duration::from_millis(100);
    loop {
        let start = i64::try_from(*shared.watched.borrow()).unwrap_or(i64::MAX) + 1;
        let (requests, rx) = tokio::sync::mpsc::channel(1);
        let create = WatchRequest {
            request_union: Some(RequestUnion::CreateRequest(WatchCreateRequest {
                key: prefix.clone(),
                range_end: end.clone(),
                start_revision: start,
                progress_notify: true,
                prev_kv: true,
            })),
        };
        let _ = requests.send(create).await;
        // The request stream stays open while the watch runs; consistent reads send progress
        // requests on it.
        let stream = ReceiverStream::new(rx);
        *shared
            .watch_requests
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(requests);
        // etcd before 3.4.25 and 3.5.8 may answer a progress request before sending events
        // at or below its revision (etcd-io/etcd#15220): such a revision is trusted only when
        // a second answer repeats it, with no event in between (kube trusts the first one
        // less one).
        let mut requested_progress: Option<i64> = None;
        let mut responses = match shared.watch.clone().watch(stream).await {
            Ok(r) => r.into_inner(),
            Err(status) => {
                tracing::warn!(error = %status, "etcd watch failed to start; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
                continue;
            }
        };
        loop {
            let response = match responses.message().await {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(status) => {
                    tracing::warn!(error = %status, "etcd watch broke; resuming");
                    break;
                }
            };
            delay = Duration::from_millis(100);
            if response.compact_revision != 0 {
                tracing::warn!(
                    from = start,
                    compacted = response.compact_revision,
                    "etcd history was compacted past the watch; receivers list again"
                );
                resync(&shared, response.compact_revision);
                break;
            }
            if response.canceled {
                tracing::warn!(reason = %response.cancel_reason, "etcd watch canceled; resuming");
                break;
            }
            // Only a progress notification (no events, not the creation reply) vouches for
            // every change up to its header's revision; the creation reply's header is the
            // store's revision while older events may still follow, so otherwise only the
            // events' own revisions count.
            let mut last = if response.events.is_empty() && !response.created {
                let revision = response.header.as_ref().map_or(0, |h| h.revision);
                if response.watch_id == REQUESTED_PROGRESS_WATCH_ID {
                    match requested_progress.replace(revision) {
                        Some(before) if before == revision => revision,
                        _ => 0,
                    }
                } else {
                    revision
                }
            } else {
                requested_progress = None;
                0
            };
            for event in response.events {
                let Some(kv) = event.kv else { continue };
                last = last.max(kv.mod_revision);
                if let Some(change) = event_change(&shared, event.r#type, &kv, event.prev_kv) {
                    let change = Arc::new(change);
                    *shared.last_change.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(Arc::clone(&change));
                    let _ = shared.changes.send(change);
                }
            }
            shared.saw(last);
            let last = u64::try_from(last).unwrap_or(0);
            shared.watched.send_if_modified(|w| {
                let newer = last > *w;
                if newer {
                    *w = last;
                }
                newer
            });
        }
        tokio::time::sleep(delay).await;
    }
}

/// Changes missed because history was compacted: make every receiver lag, so that it
/// lists again. The broadcast channel only reports lag when it overflows, so it is filled
/// past its capacity with the last change (already delivered; its revision is below any
/// later list, so a receiver skips the repeats by revision), or with [`resync_filler`] when
/// nothing was delivered yet.
fn resync(shared: &Shared, compact_revision: i64) {
    let filler = shared
        .last_change
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_else(|| Arc::new(resync_filler()));
    for _ in 0..=CHANNEL_CAPACITY {
        let _ = shared.changes.send(Arc::clone(&filler));
    }
    let resume = u64::try_from(compact_revision - 1).unwrap_or(0);
    shared.watched.send_if_modified(|w| {
        let newer = resume > *w;
        if newer {
            *w = resume;
        }
        newer
    });
}

/// A change at revision 0, below every list's revision, so every receiver skips it: the
/// deletion of a namespace no one can create (its name is not a DNS label).
fn resync_filler() -> Change {
    Change {
        change_type: ChangeType::Deleted,
        object: Arc::new(Object::Namespace(Box::new(berth_proto::model::Namespace {
            metadata: berth_proto::model::ObjectMeta {
                name: "berth:watch-resync".into(),
                ..Default::default()
            },
            ..Default::default()
        }))),
        revision: 0,
    }
}

/// The change a watch event stands for, if its key is an object's.
fn event_change(
    shared: &Shared,
    event_type: i32,
    kv: &KeyValue,
    prev_kv: Option<KeyValue>,
) -> Option<Change> {
    let key = shared.object_key(&kv.key)?;
    let revision = u64::try_from(kv.mod_revision).unwrap_or(0);
    let decoded = if event_type == EventType::Delete as i32 {
        let prev = prev_kv?;
        shared.decode(&key, &prev).map(|mut object| {
            object.meta_mut().resource_version = revision.to_string();
            (ChangeType::Deleted, object)
        })
    } else {
        let change_type = if kv.version == 1 {
            ChangeType::Added
        } else {
            ChangeType::Modified
        };
        shared.decode(&key, kv).map(|object| (change_type, object))
    };
    match decoded {
        Ok((change_type, object)) => Some(Change {
            change_type,
            object: Arc::new(object),
            revision,
        }),
        Err(e) => {
            tracing::warn!(key = %key, error = %e, "skipping an undecodable watch event");
            None
        }
    }
}

/// Compacts to the current revision minus the retained history, every interval.
async fn compact_loop(shared: Arc<Shared>) {
    let mut ticker = tokio::time::interval(shared.config.compaction_interval);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let current = shared.revision.load(Ordering::Acquire);
        let Some(target) = current.checked_sub(shared.config.retained_revisions) else {
            continue;
        };
        if target == 0 {
            continue;
        }
        match compact(&shared, target).await {
            Ok(()) => tracing::info!(revision = target, "etcd history compacted"),
            // Another replica compacted further already; that is fine.
            Err(e) => tracing::debug!(revision = target, error = %e, "etcd compaction skipped"),
        }
    }
}

async fn compact(shared: &Shared, revision: u64) -> Result<()> {
    let request = CompactionRequest {
        revision: i64::try_from(revision).unwrap_or(i64::MAX),
        physical: false,
    };
    shared
        .request("compact", shared.kv.clone().compact(request))
        .await
        .map(|_| ())
}

/// The key an op writes.
fn op_key(op: &Op) -> ObjectKey {
    match op {
        Op::Create(object) | Op::Upsert(object) | Op::Update { object, .. } => object.key(),
        Op::Delete { key, .. } => key.clone(),
    }
}

fn compare(key: &[u8], target: CompareTarget, value: TargetUnion) -> Compare {
    Compare {
        result: CompareResult::Equal as i32,
        target: target as i32,
        key: key.to_vec(),
        target_union: Some(value),
    }
}

fn header_revision(response: &TxnResponse) -> i64 {
    response.header.as_ref().map_or(0, |h| h.revision)
}

/// The first key after every key that starts with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // All 0xff: to the end of the keyspace.
    vec![0]
}

/// etcd's refusals that name its limits, as the store's own errors; the rest as they are.
fn etcd_error(operation: &'static str, status: tonic::Status) -> Error {
    let message = status.message();
    if message.contains("too many operations in txn request") {
        return Error::TooManyOps {
            ops: 0,
            limit: MAX_TXN_OPS,
        };
    }
    if message.contains("request is too large") {
        return Error::RequestTooLarge {
            bytes: 0,
            limit: MAX_REQUEST_BYTES,
        };
    }
    Error::Etcd {
        operation,
        source: status,
    }
}

/// Leader election on an etcd lease: the leader holds the election key, created with its
/// lease if absent, and renews the lease every retry period; it loses leadership when it
/// has not renewed within the renew deadline or the key is no longer the one it created.
/// Every fenced commit compares the key's create_revision inside its transaction.
pub struct EtcdElector {
    shared: Arc<Shared>,
    runtime: Arc<ClientRuntime>,
    config: ElectionConfig,
}

impl fmt::Debug for EtcdElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdElector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Elector for EtcdElector {
    fn campaign(&self, identity: &str) -> Result<Leadership> {
        let key = self.shared.leader_key();
        loop {
            let shared = Arc::clone(&self.shared);
            let (config, attempt_key, who) = (self.config, key.clone(), identity.to_string());
            let won = self
                .runtime
                .call(async move { try_acquire(&shared, &config, &attempt_key, &who).await });
            match won {
                Ok(Some((lease, create_revision))) => {
                    return Ok(self.lead(identity, key, lease, create_revision));
                }
                Ok(None) => {}
                // etcd out of reach for a while: a standby keeps trying, as kube's does.
                Err(e) if e.is_transient() => {
                    tracing::warn!(identity, error = %e, "campaign attempt failed; retrying");
                }
                Err(e) => return Err(e),
            }
            std::thread::sleep(self.config.retry_period);
        }
    }
}

impl EtcdElector {
    fn lead(&self, identity: &str, key: Vec<u8>, lease: i64, create_revision: i64) -> Leadership {
        tracing::info!(
            identity,
            lease,
            create_revision,
            "leadership acquired (etcd)"
        );
        let (lost_tx, lost_rx) = watch::channel(false);
        let lost_tx = Arc::new(lost_tx);
        let guard = Guard::new(
            identity,
            lost_rx,
            Fence::Etcd {
                key: key.clone(),
                create_revision,
            },
        );
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        self.runtime.handle().spawn(keep_leading(
            Arc::clone(&self.shared),
            self.config,
            key,
            lease,
            create_revision,
            Arc::clone(&lost_tx),
            stop_rx,
        ));
        // Held weakly: once the store and its electors are gone, so is the runtime that
        // renews the lease, as when the process dies (the lease then runs out).
        let runtime = Arc::downgrade(&self.runtime);
        let shared = Arc::clone(&self.shared);
        let who = identity.to_string();
        Leadership::new(
            guard,
            Box::new(move || {
                let _ = lost_tx.send(true);
                let _ = stop_tx.send(());
                let Some(runtime) = runtime.upgrade() else {
                    return;
                };
                // Revoking the lease deletes the key, so a standby takes over at once.
                let revoked = runtime.call(async move {
                    shared
                        .request(
                            "revoke lease",
                            shared
                                .lease
                                .clone()
                                .lease_revoke(LeaseRevokeRequest { id: lease }),
                        )
                        .await
                        .map(|_| ())
                });
                match revoked {
                    Ok(()) => tracing::info!(identity = %who, "leadership released (etcd)"),
                    Err(e) => {
                        tracing::warn!(identity = %who, error = %e, "leadership released, but the lease could not be revoked; it expires on its own")
                    }
                }
            }),
        )
    }
}

/// One attempt to become leader: if the election key is absent, create it with a new lease.
/// Returns the lease and the key's create revision on success.
async fn try_acquire(
    shared: &Shared,
    config: &ElectionConfig,
    key: &[u8],
    identity: &str,
) -> Result<Option<(i64, i64)>> {
    let (held, _) = shared.read_keys(&[key.to_vec()]).await?;
    if held.first().is_some_and(Option::is_some) {
        return Ok(None);
    }
    let ttl = i64::try_from(config.lease_duration.as_secs().max(1)).unwrap_or(i64::MAX);
    let grant = shared
        .request(
            "grant lease",
            shared
                .lease
                .clone()
                .lease_grant(LeaseGrantRequest { ttl, id: 0 }),
        )
        .await?;
    let txn = TxnRequest {
        compare: vec![compare(
            key,
            CompareTarget::Create,
            TargetUnion::CreateRevision(0),
        )],
        success: vec![RequestOp {
            request: Some(Request::RequestPut(PutRequest {
                key: key.to_vec(),
                value: identity.as_bytes().to_vec(),
                lease: grant.id,
                prev_kv: false,
            })),
        }],
        failure: Vec::new(),
    };
    let response = shared.request("campaign", shared.kv.clone().txn(txn)).await;
    match response {
        Ok(r) if r.succeeded => Ok(Some((grant.id, header_revision(&r)))),
        other => {
            let _ = shared
                .request(
                    "revoke lease",
                    shared
                        .lease
                        .clone()
                        .lease_revoke(LeaseRevokeRequest { id: grant.id }),
                )
                .await;
            other.map(|_| None)
        }
    }
}

/// Renews the lease every retry period and watches the key; marks the leadership lost when
/// the renew deadline passes without a renewal, the lease is gone, or the key changed.
async fn keep_leading(
    shared: Arc<Shared>,
    config: ElectionConfig,
    key: Vec<u8>,
    lease: i64,
    create_revision: i64,
    lost: Arc<watch::Sender<bool>>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let mut renewed = Instant::now();
    let mut ticker = tokio::time::interval(config.retry_period);
    let mut keepalive: Option<(
        tokio::sync::mpsc::Sender<LeaseKeepAliveRequest>,
        tonic::Streaming<berth_proto::etcd::LeaseKeepAliveResponse>,
    )> = None;
    let reason = loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = ticker.tick() => {}
        }
        if renewed.elapsed() > config.renew_deadline {
            break "the lease was not renewed within the renew deadline";
        }
        if keepalive.is_none() {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            // etcd sends the stream's response headers with its first answer: the first
            // request must be queued before the call, or opening it waits for nothing.
            let _ = tx.try_send(LeaseKeepAliveRequest { id: lease });
            let stream = ReceiverStream::new(rx);
            match shared
                .request(
                    "keep lease alive",
                    shared.lease.clone().lease_keep_alive(stream),
                )
                .await
            {
                Ok(responses) => keepalive = Some((tx, responses)),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot open the lease keepalive stream");
                    continue;
                }
            }
        }
        let Some((tx, responses)) = keepalive.as_mut() else {
            continue;
        };
        let renewal = async {
            tx.send(LeaseKeepAliveRequest { id: lease })
                .await
                .map_err(|_| ())?;
            responses.message().await.map_err(|_| ())
        };
        match tokio::time::timeout(config.retry_period, renewal).await {
            Ok(Ok(Some(response))) if response.ttl > 0 => renewed = Instant::now(),
            Ok(Ok(Some(_))) => break "the lease expired",
            _ => {
                keepalive = None;
                continue;
            }
        }
        // The key must still be the one this leadership created.
        match shared.read_keys(std::slice::from_ref(&key)).await {
            Ok((held, _)) => {
                let current = held
                    .into_iter()
                    .next()
                    .flatten()
                    .map(|kv| kv.create_revision);
                if current != Some(create_revision) {
                    break "the election key was deleted or replaced";
                }
            }
            Err(e) => tracing::debug!(error = %e, "cannot read the election key"),
        }
    };
    tracing::warn!(lease, reason, "leadership lost (etcd)");
    let _ = lost.send(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls() {
        struct Case {
            url: &'static str,
            want: std::result::Result<Vec<&'static str>, &'static str>,
        }
        let cases = vec![
            Case {
                url: "etcd://127.0.0.1:2379",
                want: Ok(vec!["http://127.0.0.1:2379"]),
            },
            Case {
                url: "etcd://h1:2379,h2:2380, h3:2381",
                want: Ok(vec!["http://h1:2379", "http://h2:2380", "http://h3:2381"]),
            },
            Case {
                url: "http://h1:2379",
                want: Err("expected etcd://HOST:PORT[,HOST:PORT...]"),
            },
            Case {
                url: "etcd://h1",
                want: Err("member \"h1\" has no :PORT"),
            },
            Case {
                url: "etcd://h1:http",
                want: Err("member \"h1:http\": \"http\" is not a port"),
            },
            Case {
                url: "etcd://h1:2379,",
                want: Err("member \"\" has no :PORT"),
            },
        ];
        for case in cases {
            let got = EtcdConfig::from_url(case.url)
                .map(|c| c.endpoints)
                .map_err(|e| e.to_string());
            match (got, case.want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{}", case.url),
                (Err(got), Err(want)) => assert!(got.contains(want), "{}: {got}", case.url),
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.url),
            }
        }
    }

    fn kv(key: &str, value: &str, mod_revision: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: value.into(),
            mod_revision,
            ..Default::default()
        }
    }

    #[test]
    fn a_timed_out_commit_is_recognised_by_its_writes() {
        let plan = Plan {
            changes: Vec::new(),
            txn: TxnRequest::default(),
            writes: vec![
                (b"/k/a".to_vec(), Some(b"A".to_vec())),
                (b"/k/b".to_vec(), Some(b"B".to_vec())),
                (b"/k/gone".to_vec(), None),
            ],
        };
        struct Case {
            name: &'static str,
            stored: Vec<Option<KeyValue>>,
            want: Option<i64>,
        }
        let cases = vec![
            Case {
                name: "every write there at one revision",
                stored: vec![Some(kv("/k/a", "A", 9)), Some(kv("/k/b", "B", 9)), None],
                want: Some(9),
            },
            Case {
                name: "not applied: the old state",
                stored: vec![
                    Some(kv("/k/a", "old", 4)),
                    None,
                    Some(kv("/k/gone", "G", 3)),
                ],
                want: None,
            },
            Case {
                name: "the same bytes written by someone else, at other revisions",
                stored: vec![Some(kv("/k/a", "A", 9)), Some(kv("/k/b", "B", 10)), None],
                want: None,
            },
            Case {
                name: "the same bytes, but from before the read",
                stored: vec![Some(kv("/k/a", "A", 5)), Some(kv("/k/b", "B", 5)), None],
                want: None,
            },
            Case {
                name: "the deleted key is back",
                stored: vec![
                    Some(kv("/k/a", "A", 9)),
                    Some(kv("/k/b", "B", 9)),
                    Some(kv("/k/gone", "G", 9)),
                ],
                want: None,
            },
        ];
        for case in cases {
            assert_eq!(applied(&plan, &case.stored, 5), case.want, "{}", case.name);
        }
    }

    #[test]
    fn prefix_end_cases() {
        assert_eq!(prefix_end(b"/berth/"), b"/berth0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }
}
