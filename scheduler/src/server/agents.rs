//! The agent-facing gRPC service (`berth.v1.Agent`): node registration, and one session
//! stream per node that carries heartbeats and pod status up, and pods to start or stop down.
//!
//! A single dispatcher task watches the store and routes each pod change to the session of
//! the pod's node, so the cost of a change does not grow with the number of nodes.
//!
//! With authentication on, NodeRestriction applies to node credentials: a node token is
//! bound to the first node it registers (recorded on the Node, so it survives restarts),
//! may register and open sessions only as that node, and may not set labels under
//! `node-restriction.kubernetes.io/`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_proto::conditions::set_condition;
use berth_proto::model::{
    ContainerImage, Kind, Node, NodeCondition, Object, ObjectKey, Pod, PodStatus, ResourceSlice,
    Time,
};
use berth_proto::names;
use berth_proto::pb;
use berth_proto::wire::{from_json, node_from_pb, node_to_pb, object_of_kind, pod_to_pb};
use berth_store::{Change, ObjectStore, Op, Precondition};
use tokio::sync::mpsc;
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};
use tracing::{debug, info, instrument, warn};

use super::admission;
use super::error::{blocking, Error, Reply};
use super::group_commit::GroupCommit;
use super::informer::Informer;
use super::node_lifecycle::NodeHealth;
use super::security::{self, Caller, Role};
use super::watch_cache::ObjectCache;
use crate::dra;
use crate::framework::SharedPod;

/// Times an agent's write is built again after a conflict before it fails (kubelet's
/// `nodeStatusUpdateRetry`).
const UPDATE_ATTEMPTS: usize = 5;

/// Heartbeat interval the scheduler asks agents for.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);

/// What the dispatcher tells a session. Small on purpose: each session's channel keeps a
/// block of 32 of these allocated for as long as it is open (with the pod inline, 34 KB per
/// session), so the pod is the informer's shared copy and the message is boxed.
#[derive(Debug)]
enum SessionEvent {
    /// A pod bound to the node was added or changed.
    Pod(SharedPod),
    /// A pod bound to the node was deleted.
    PodDeleted(SharedPod),
    /// A message to pass on as it is (log requests).
    Message(Box<pb::SchedulerMessage>),
}

/// Open sessions by node name.
#[derive(Default)]
pub struct Sessions {
    by_node: Mutex<HashMap<String, (u64, mpsc::UnboundedSender<SessionEvent>)>>,
    next_id: std::sync::atomic::AtomicU64,
    /// Set by [`Sessions::close_all`]: the server is shutting down and opens no session.
    closed: std::sync::atomic::AtomicBool,
    /// The pods bound to each node, as the dispatcher has routed them: what a session's
    /// resync starts, without listing every pod of the store for each session that opens.
    bound: Mutex<BoundPods>,
}

/// Each node's bound pods that have not ended, by uid; kept by [`dispatch`].
#[derive(Default)]
struct BoundPods {
    /// Whether the dispatcher has routed its first list of the store's pods. Before it,
    /// `by_node` may miss pods the agents run, which a resync would take for orphans.
    ready: bool,
    by_node: HashMap<String, HashMap<String, SharedPod>>,
}

impl Sessions {
    fn open(&self, node: &str) -> (u64, mpsc::UnboundedReceiver<SessionEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.by_node.lock().expect("sessions lock poisoned");
        // After shutdown began the sender is dropped at once, so the session ends at once.
        if !self.closed.load(std::sync::atomic::Ordering::Acquire) {
            // A newer session for the same node replaces an older one (the agent reconnected).
            map.insert(node.to_string(), (id, tx));
        }
        super::metrics::agent_sessions(map.len());
        (id, rx)
    }

    /// Ends every open session, and any opened later: their streams close, so agents see
    /// the scheduler go and graceful shutdown need not wait for them.
    pub fn close_all(&self) {
        let mut map = self.by_node.lock().expect("sessions lock poisoned");
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        let count = map.len();
        map.clear();
        super::metrics::agent_sessions(0);
        info!(sessions = count, "closed every agent session");
    }

    fn close(&self, node: &str, id: u64) {
        let mut map = self.by_node.lock().expect("sessions lock poisoned");
        if map.get(node).is_some_and(|(i, _)| *i == id) {
            map.remove(node);
            super::metrics::agent_sessions(map.len());
        }
    }

    /// Records a routed pod change in the node's bound pods: a pod that ended or went is
    /// dropped. `ready` is the dispatcher's word that everything the store has sent so far
    /// was recorded.
    fn record(&self, pod: &SharedPod, gone: bool, ready: bool) {
        let mut bound = self.bound.lock().expect("bound pods lock poisoned");
        let node = &pod.spec.node_name;
        if gone || pod.status.phase.is_terminal() {
            if let Some(pods) = bound.by_node.get_mut(node) {
                pods.remove(&pod.metadata.uid);
                if pods.is_empty() {
                    bound.by_node.remove(node);
                }
            }
        } else {
            bound
                .by_node
                .entry(node.clone())
                .or_default()
                .insert(pod.metadata.uid.clone(), pod.clone());
        }
        bound.ready |= ready;
    }

    /// Notes the dispatcher's word that everything the store has sent so far was recorded,
    /// when the change that brought it up to date needed no record (an unbound pod): a
    /// store whose pods all wait for a node must not leave every resync listing them.
    fn caught_up(&self) {
        self.bound.lock().expect("bound pods lock poisoned").ready = true;
    }

    /// The node's bound pods that have not ended, once the dispatcher has routed its first
    /// list; `None` before, when only the store can say.
    fn bound_to(&self, node: &str) -> Option<Vec<SharedPod>> {
        let bound = self.bound.lock().expect("bound pods lock poisoned");
        bound.ready.then(|| {
            let mut pods: Vec<SharedPod> = bound
                .by_node
                .get(node)
                .map(|pods| pods.values().cloned().collect())
                .unwrap_or_default();
            // In the store's order, as a list gives them.
            pods.sort_by(|a, b| {
                (&a.metadata.namespace, &a.metadata.name)
                    .cmp(&(&b.metadata.namespace, &b.metadata.name))
            });
            pods
        })
    }

    fn send(&self, node: &str, event: SessionEvent) {
        if let Some((_, tx)) = self
            .by_node
            .lock()
            .expect("sessions lock poisoned")
            .get(node)
        {
            let _ = tx.send(event);
        }
    }

    /// Sends a message down a node's session; false when the node has none.
    pub fn send_message(&self, node: &str, msg: pb::SchedulerMessage) -> bool {
        match self
            .by_node
            .lock()
            .expect("sessions lock poisoned")
            .get(node)
        {
            Some((_, tx)) => tx.send(SessionEvent::Message(Box::new(msg))).is_ok(),
            None => false,
        }
    }

    /// Whether a node has an open session.
    pub fn is_connected(&self, node: &str) -> bool {
        self.by_node
            .lock()
            .expect("sessions lock poisoned")
            .contains_key(node)
    }
}

/// Routes pod changes from the store to the sessions of their nodes, until `shutdown` or
/// until the store closes. `pods` is an informer of pods: after it falls behind and lists
/// again, pods that changed meanwhile are sent again and pods deleted meanwhile are sent as
/// deletions, so every session converges. Its lists block: run it on a thread of its own
/// ([`super::informer::spawn`]).
pub async fn dispatch(mut pods: Informer, sessions: Arc<Sessions>, shutdown: CancellationToken) {
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return,
            event = pods.next() => event,
        };
        let Some(event) = event else { return };
        let Some(pod) = event.shared().cloned().and_then(SharedPod::from_object) else {
            continue;
        };
        let current = pods.is_current();
        if pod.spec.node_name.is_empty() {
            if current {
                sessions.caught_up();
            }
            continue;
        }
        // Recorded before it is sent: a session opened in between finds it either in its
        // resync or in its channel (its task ignores a second start of one pod).
        sessions.record(&pod, event.is_delete(), current);
        let routed = if event.is_delete() {
            SessionEvent::PodDeleted(pod.clone())
        } else {
            SessionEvent::Pod(pod.clone())
        };
        sessions.send(&pod.spec.node_name, routed);
    }
}

/// The Agent service.
#[derive(Clone)]
pub struct AgentService {
    store: Arc<dyn ObjectStore>,
    /// Commits the agents' writes (registrations, heartbeats, pod statuses), those of
    /// concurrent sessions together: one transaction and flush for many.
    commits: GroupCommit,
    sessions: Arc<Sessions>,
    /// Node credential name → the node it is bound to; loaded from the Nodes' annotations
    /// on first use.
    bindings: Arc<Mutex<Option<HashMap<String, String>>>>,
    /// When each node's agent was last heard from, for the node lifecycle controller.
    health: Arc<NodeHealth>,
    /// Where usage, agents' events and log chunks go.
    telemetry: Option<Arc<super::usage::Telemetry>>,
    /// With replicas: how old the stored heartbeat may grow before a heartbeat is stored
    /// even though nothing changed, so that the leader sees agents that talk to others.
    status_report_period: Option<std::time::Duration>,
    /// On a store local to this process: the API's cache, which heartbeats and pod
    /// statuses read the node or pod they update from, on the runtime's thread.
    cache: Option<Arc<ObjectCache>>,
}

impl AgentService {
    /// A service over `store`, routing through `sessions`. Its group commit takes the
    /// runtime's handle, so it must be called inside a Tokio runtime.
    pub fn new(store: Arc<dyn ObjectStore>, sessions: Arc<Sessions>) -> Self {
        AgentService {
            commits: GroupCommit::new(store.clone()),
            store,
            sessions,
            bindings: Arc::default(),
            health: Arc::default(),
            telemetry: None,
            status_report_period: None,
            cache: None,
        }
    }

    /// Heartbeats and pod statuses read the object they update from `cache` (the API's,
    /// kept current from the store's changes), on the runtime's thread, rather than from
    /// the store on the blocking pool: for a store in this process (sled), whose consistent
    /// reads from the cache wait on nothing. 1,000 nodes beating every second were 1,000
    /// hand-offs to the blocking pool and 1,000 decodes of a node's JSON a second, most to
    /// find nothing changed, and they came together, once a second.
    pub fn with_cache(mut self, cache: Arc<ObjectCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Stores a node's heartbeat at least every `period` (for replicas sharing a store).
    pub fn with_status_report_period(mut self, period: std::time::Duration) -> Self {
        self.status_report_period = Some(period);
        self
    }

    /// Commits status writes through `commits` (the API's, so that applies and status
    /// writes share one transaction and one flush) instead of a group commit of its own.
    pub fn with_commits(mut self, commits: GroupCommit) -> Self {
        self.commits = commits;
        self
    }

    /// Hands agents' usage, events and log chunks to `telemetry`.
    pub fn with_telemetry(mut self, telemetry: Arc<super::usage::Telemetry>) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Records agent contacts (registration, session start, heartbeats) in `health`, which
    /// the node lifecycle controller reads.
    pub fn with_health(mut self, health: Arc<NodeHealth>) -> Self {
        self.health = health;
        self
    }

    /// NodeRestriction for Register: a node credential may not set restricted labels, and
    /// may register only the node it is bound to; a credential not bound yet is bound here,
    /// to a node that no other credential registered.
    fn admit_node_credential(&self, caller: &Caller, reported: &Node) -> Result<(), Error> {
        let node = &reported.metadata.name;
        let restricted: Vec<&str> = reported
            .metadata
            .labels
            .keys()
            .map(String::as_str)
            .filter(|k| security::is_node_restricted_label(k))
            .collect();
        if !restricted.is_empty() {
            return Err(Error::PermissionDenied(format!(
                "node {node:?} is not allowed to set the following labels: {}",
                restricted.join(", ")
            )));
        }
        let mut guard = self.bindings.lock().expect("bindings lock poisoned");
        if guard.is_none() {
            *guard = Some(load_bindings(self.store.as_ref())?);
        }
        let bindings = guard.as_mut().expect("loaded just above");
        match bindings.get(&caller.name) {
            Some(bound) if bound == node => Ok(()),
            Some(bound) => Err(Error::PermissionDenied(format!(
                "node credential {:?} is bound to node {bound:?}; it may not register node {node:?}",
                caller.name
            ))),
            None => {
                let key = ObjectKey::new(Kind::Node, "", node);
                if let Some(owner) = self
                    .store
                    .get(&key)?
                    .and_then(|o| o.meta().annotations.get(names::ANNOTATION_NODE_CREDENTIAL).cloned())
                {
                    if owner != caller.name {
                        return Err(Error::PermissionDenied(format!(
                            "node {node:?} was registered by another node credential; {:?} may not register it",
                            caller.name
                        )));
                    }
                }
                info!(credential = %caller.name, node = %node, "node credential bound to its node");
                bindings.insert(caller.name.clone(), node.clone());
                Ok(())
            }
        }
    }

    /// NodeRestriction for Session: a node credential opens sessions only as its own node.
    fn admit_session(&self, caller: &Caller, node: &str) -> Result<(), Error> {
        let guard = self.bindings.lock().expect("bindings lock poisoned");
        match guard.as_ref().and_then(|b| b.get(&caller.name)) {
            Some(bound) if bound == node => Ok(()),
            Some(bound) => Err(Error::PermissionDenied(format!(
                "node credential {:?} is bound to node {bound:?}; it may not open a session as node {node:?}",
                caller.name
            ))),
            None => Err(Error::PermissionDenied(format!(
                "node credential {:?} has registered no node; call Register first",
                caller.name
            ))),
        }
    }

    /// Commits the op that `build` makes from what is stored now, through the group commit,
    /// and returns its change; `None` when `build` finds nothing to write. On a conflict (the
    /// object changed between the read and the commit) the op is built again from a fresh
    /// read, up to [`UPDATE_ATTEMPTS`] times, as kubelet retries its status updates. `build`
    /// runs on the blocking pool (it reads the store), except a first attempt with the
    /// API's cache (a store in this process), which runs here and reads through
    /// [`Self::read`]; the commit is awaited without holding a thread, so that any number
    /// of sessions can wait for the same joint commit.
    async fn commit_fresh(
        &self,
        build: impl Fn(&AgentService) -> Result<Option<Op>, Error> + Send + Sync + 'static,
    ) -> Result<Option<Change>, Error> {
        let build = Arc::new(build);
        let mut conflict = None;
        for attempt in 0..UPDATE_ATTEMPTS {
            let op = if attempt == 0 && self.cache.is_some() {
                build(self)?
            } else {
                // From the store: on a conflict the cache may not have the winner yet.
                let mut this = self.clone();
                this.cache = None;
                let build = build.clone();
                tokio::task::spawn_blocking(move || build(&this)).await??
            };
            let Some(op) = op else {
                return Ok(None);
            };
            match self.commits.commit(vec![op]).await {
                Ok(changes) => return Ok(changes.into_iter().next()),
                Err(e @ Error::Conflict { .. }) => conflict = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(conflict.expect("every attempt ended in a conflict"))
    }

    /// The stored object at `key`: from the API's cache when the service has one (see
    /// [`Self::with_cache`]) and it can answer consistently, else from the store.
    fn read(&self, key: &ObjectKey) -> Result<Option<Object>, Error> {
        let cached = self.cache.as_ref().and_then(|cache| {
            cache.read(|view| view.objects().get_shared(key).map(|o| Object::clone(o)))
        });
        match cached {
            Some(found) => Ok(found),
            None => Ok(self.store.get(key)?),
        }
    }

    /// Creates the node, or refreshes what the agent owns of it (status, its labels),
    /// keeping what an admin set (taints added later, cordon, extra labels). A node
    /// credential's name is recorded on the node.
    async fn register(&self, reported: Node, caller: Option<&Caller>) -> Result<Node, Error> {
        let name = reported.metadata.name.clone();
        let credential = caller
            .filter(|c| c.role == Role::Node)
            .map(|c| c.name.clone());
        let build = move |this: &AgentService| -> Result<Option<Op>, Error> {
            let key = ObjectKey::new(Kind::Node, "", &reported.metadata.name);
            let op = match this.store.get(&key)? {
                None => {
                    let mut node = reported.clone();
                    node.metadata
                        .annotations
                        .remove(names::ANNOTATION_NODE_CREDENTIAL);
                    if let Some(name) = &credential {
                        node.metadata
                            .annotations
                            .insert(names::ANNOTATION_NODE_CREDENTIAL.into(), name.clone());
                    }
                    let obj = admission::admit(
                        this.store.as_ref(),
                        Object::Node(Box::new(node)),
                        &Default::default(),
                    )?;
                    Op::Create(obj)
                }
                Some(Object::Node(mut stored)) => {
                    for (k, v) in &reported.metadata.labels {
                        stored.metadata.labels.insert(k.clone(), v.clone());
                    }
                    if let Some(name) = &credential {
                        stored
                            .metadata
                            .annotations
                            .insert(names::ANNOTATION_NODE_CREDENTIAL.into(), name.clone());
                    }
                    stored.status = reported.status.clone();
                    let rv = stored.metadata.resource_version.clone();
                    let obj = admission::admit(
                        this.store.as_ref(),
                        Object::Node(stored),
                        &Default::default(),
                    )?;
                    Op::Update {
                        object: obj,
                        precondition: Precondition::ResourceVersion(rv),
                    }
                }
                Some(_) => unreachable!("the node tree holds nodes"),
            };
            Ok(Some(op))
        };
        match self.commit_fresh(build).await {
            Ok(change) => match change.map(Change::into_object) {
                Some(Object::Node(node)) => Ok(*node),
                _ => unreachable!("a node commit yields a node"),
            },
            Err(Error::Conflict { .. }) => Err(Error::BadRequest(format!(
                "node {name}: too many concurrent updates; try again"
            ))),
            Err(e) => Err(e),
        }
    }

    /// Applies a heartbeat: stores the node's conditions if their status changed.
    async fn heartbeat(&self, node_name: &str, beat: pb::Heartbeat) -> Result<(), Error> {
        self.health.record(node_name);
        // Left empty: no conditions to report, only liveness.
        let conditions: Vec<NodeCondition> = if beat.conditions_json.is_empty() {
            Vec::new()
        } else {
            from_json("conditions_json", &beat.conditions_json).map_err(|source| {
                Error::Convert {
                    context: "heartbeat".into(),
                    source,
                }
            })?
        };
        let images: Vec<ContainerImage> = if beat.images_json.is_empty() {
            Vec::new()
        } else {
            from_json("images_json", &beat.images_json).map_err(|source| Error::Convert {
                context: "heartbeat".into(),
                source,
            })?
        };
        let key = ObjectKey::new(Kind::Node, "", node_name);
        self.commit_fresh(move |this: &AgentService| {
            let Some(Object::Node(mut node)) = this.read(&key)? else {
                return Err(Error::NotFound { key: key.clone() });
            };
            let now = Time::now();
            let stale = this.status_report_period.is_some_and(|period| {
                node.condition(names::CONDITION_READY)
                    .and_then(|c| c.last_heartbeat_time)
                    .is_none_or(|beat| now.0.duration_since(beat.0).unwrap_or_default() >= period)
            });
            let mut changed = false;
            for c in &conditions {
                changed |= set_condition(&mut node.status.conditions, c.clone(), now);
            }
            if !images.is_empty() && images != node.status.images {
                node.status.images.clone_from(&images);
                changed = true;
            }
            if !changed && !stale {
                return Ok(None);
            }
            let rv = node.metadata.resource_version.clone();
            Ok(Some(Op::Update {
                object: Object::Node(node),
                precondition: Precondition::ResourceVersion(rv),
            }))
        })
        .await
        .map(drop)
    }

    /// Stores a pod's status as its agent reports it.
    async fn pod_status(&self, node_name: &str, update: pb::PodStatusUpdate) -> Result<(), Error> {
        if update.status_json.is_empty() {
            return Ok(());
        }
        let status: PodStatus =
            from_json("status_json", &update.status_json).map_err(|source| Error::Convert {
                context: format!("status of pod {}/{}", update.namespace, update.name),
                source,
            })?;
        let key = ObjectKey::new(Kind::Pod, &update.namespace, &update.name);
        let node_name = node_name.to_string();
        self.commit_fresh(move |this: &AgentService| {
            let Some(Object::Pod(mut pod)) = this.read(&key)? else {
                return Ok(None); // deleted meanwhile
            };
            if pod.metadata.uid != update.uid || pod.spec.node_name != node_name {
                return Ok(None); // a different pod of the same name, or not this node's
            }
            let mut new_status = status.clone();
            // The agent owns phase and containers; the scheduler owns PodScheduled.
            for c in &pod.status.conditions {
                if !new_status.conditions.iter().any(|n| n.type_ == c.type_) {
                    new_status.conditions.push(c.clone());
                }
            }
            if new_status.nominated_node_name.is_empty() {
                new_status.nominated_node_name = pod.status.nominated_node_name.clone();
            }
            // The claim controller owns the pod's claim names.
            new_status
                .resource_claim_statuses
                .clone_from(&pod.status.resource_claim_statuses);
            if pod.status == new_status {
                return Ok(None);
            }
            pod.status = new_status;
            let rv = pod.metadata.resource_version.clone();
            Ok(Some(Op::Update {
                object: Object::Pod(pod),
                precondition: Precondition::ResourceVersion(rv),
            }))
        })
        .await
        .map(drop)
    }
    /// A node's devices changed within its session: publishes the new slices (as at
    /// registration) or, when the agent refused its new devices file, keeps the slices
    /// and records why on the Node. Either way a Node Event says what happened.
    fn devices_update(&self, node_name: &str, update: pb::DevicesUpdate) -> Result<(), Error> {
        let key = ObjectKey::new(Kind::Node, "", node_name);
        let Some(Object::Node(node)) = self.store.get(&key)? else {
            return Err(Error::NotFound { key });
        };
        let outcome = if update.error.is_empty() {
            decode_slices(&update.resource_slices)
                .and_then(|slices| super::node_slices::publish(self.store.as_ref(), &node, slices))
        } else {
            Err(Error::BadRequest(update.error))
        };
        let (type_, reason, message) = match &outcome {
            Ok(()) => (
                super::events::NORMAL,
                REASON_DEVICES_UPDATED,
                format!(
                    "published {} ResourceSlice(s) from the changed devices",
                    update.resource_slices.len()
                ),
            ),
            Err(e) => (
                super::events::WARNING,
                REASON_INVALID_DEVICES,
                format!("devices not updated, the slices published before stay: {e}"),
            ),
        };
        if let Some(t) = &self.telemetry {
            t.record_node_event(&node, type_, reason, message);
        }
        outcome
    }

    /// Handles an agent's message other than heartbeats and pod statuses (which commit
    /// through the group commit); on the blocking pool.
    fn other_message(&self, node: &str, msg: Option<pb::agent_message::Msg>) -> Result<(), Error> {
        match msg {
            Some(pb::agent_message::Msg::Usage(usage)) => {
                if let Some(t) = &self.telemetry {
                    t.record_usage(node, usage);
                }
                Ok(())
            }
            Some(pb::agent_message::Msg::PodEvent(event)) => {
                if let Some(t) = &self.telemetry {
                    t.record_event(node, event);
                }
                Ok(())
            }
            Some(pb::agent_message::Msg::LogChunk(chunk)) => {
                let reader_gone = self
                    .telemetry
                    .as_ref()
                    .and_then(|t| t.deliver_log(node, chunk));
                if let Some(request_id) = reader_gone {
                    self.sessions.send_message(
                        node,
                        pb::SchedulerMessage {
                            msg: Some(pb::scheduler_message::Msg::CancelLogs(pb::CancelLogs {
                                request_id,
                            })),
                        },
                    );
                }
                Ok(())
            }
            Some(pb::agent_message::Msg::Devices(update)) => self.devices_update(node, update),
            Some(
                pb::agent_message::Msg::Hello(_)
                | pb::agent_message::Msg::Heartbeat(_)
                | pb::agent_message::Msg::PodStatus(_),
            )
            | None => Ok(()),
        }
    }

    /// The node's bound pods that have not ended: the dispatcher's record once it has
    /// routed its first list, the store's pods before (at start-up).
    fn bound_pods(&self, node_name: &str) -> Result<Vec<SharedPod>, Error> {
        if let Some(pods) = self.sessions.bound_to(node_name) {
            return Ok(pods);
        }
        Ok(self
            .store
            .list(Kind::Pod, None)?
            .into_iter()
            .filter_map(|o| SharedPod::from_object(Arc::new(o)))
            .filter(|p| p.spec.node_name == node_name && !p.status.phase.is_terminal())
            .collect())
    }
}

/// Which node each node credential registered, from the Nodes' annotations.
fn load_bindings(store: &dyn ObjectStore) -> Result<HashMap<String, String>, Error> {
    let mut bindings = HashMap::new();
    for obj in store.list(Kind::Node, None)? {
        if let Some(credential) = obj
            .meta()
            .annotations
            .get(names::ANNOTATION_NODE_CREDENTIAL)
        {
            bindings.insert(credential.clone(), obj.meta().name.clone());
        }
    }
    Ok(bindings)
}

fn start_msg(pod: &Pod) -> pb::SchedulerMessage {
    pb::SchedulerMessage {
        msg: Some(pb::scheduler_message::Msg::StartPod(pb::StartPod {
            pod: Some(pod_to_pb(pod)),
        })),
    }
}

impl AgentService {
    /// The StartPod of a pod, whose containers get the environment variables naming their
    /// allocated devices ([`crate::dra::env`]): the claims and the node's slices are read
    /// from the store now (the claims were written before the binding).
    fn start_msg(&self, pod: &Pod) -> pb::SchedulerMessage {
        if pod.spec.resource_claims.is_empty() {
            return start_msg(pod);
        }
        match self.with_device_env(pod) {
            Ok(pod) => start_msg(&pod),
            Err(e) => {
                warn!(pod = %pod.metadata.name, error = %e, "reading the pod's claims");
                start_msg(pod)
            }
        }
    }

    fn with_device_env(&self, pod: &Pod) -> Result<Pod, Error> {
        let ns = &pod.metadata.namespace;
        let mut claims = BTreeMap::new();
        for r in dra::convert::pod_claim_refs(pod) {
            let Some(name) = r.claim_name else { continue };
            let key = ObjectKey::new(Kind::ResourceClaim, ns, &name);
            if let Some(Object::ResourceClaim(c)) = self.store.get(&key)? {
                claims.insert(r.name, *c);
            }
        }
        let slices = super::node_slices::stored_slices(self.store.as_ref())?;
        let device = |driver: &str, pool: &str, name: &str| {
            dra::env::find_device(&slices, driver, pool, name)
        };
        Ok(dra::env::with_device_env(pod, &claims, device))
    }
}

fn stop_msg(pod: &Pod, reason: &str) -> pb::SchedulerMessage {
    pb::SchedulerMessage {
        msg: Some(pb::scheduler_message::Msg::StopPod(pb::StopPod {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            grace_period_seconds: pod.spec.termination_grace_period_seconds.unwrap_or(30),
            reason: reason.to_string(),
        })),
    }
}

type SessionStream = Pin<Box<dyn Stream<Item = Result<pb::SchedulerMessage, Status>> + Send>>;

/// The ResourceSlices of an agent's message (registration, devices update).
fn decode_slices(objects: &[pb::Object]) -> Result<Vec<ResourceSlice>, Error> {
    objects
        .iter()
        .enumerate()
        .map(|(i, msg)| {
            match object_of_kind(
                Some(msg),
                Kind::ResourceSlice,
                &format!("resourceSlices[{i}]"),
            ) {
                Ok(Object::ResourceSlice(s)) => Ok(*s),
                Ok(_) => unreachable!("a KIND_RESOURCE_SLICE message decodes as a slice"),
                Err(e) => Err(Error::BadRequest(e.to_string())),
            }
        })
        .collect()
}

/// Event reason for devices an agent could not publish (its devices file refused by the
/// agent, or its slices by admission).
pub const REASON_INVALID_DEVICES: &str = "InvalidDevices";
/// Event reason for devices an agent published anew within its session.
pub const REASON_DEVICES_UPDATED: &str = "DevicesUpdated";

#[tonic::async_trait]
impl pb::agent_server::Agent for AgentService {
    #[instrument(skip_all)]
    async fn register(&self, req: Request<pb::RegisterRequest>) -> Reply<pb::RegisterResponse> {
        let caller = req.extensions().get::<Caller>().cloned();
        let node = node_from_pb(req.get_ref().node.as_ref(), "node")
            .map_err(|e| Error::BadRequest(e.to_string()))?;
        let slices = decode_slices(&req.get_ref().resource_slices)?;
        if let Some(caller) = caller.clone().filter(|c| c.role == Role::Node) {
            let (this, node) = (self.clone(), node.clone());
            blocking(move || this.admit_node_credential(&caller, &node)).await?;
        }
        let node = self.register(node, caller.as_ref()).await?;
        let node = {
            let this = self.clone();
            blocking(move || {
                super::node_slices::publish(this.store.as_ref(), &node, slices).map(|()| node)
            })
            .await?
        };
        self.health.record(&node.metadata.name);
        info!(node = %node.metadata.name, "node registered");
        Ok(Response::new(pb::RegisterResponse {
            node: Some(node_to_pb(&node)),
            heartbeat_interval_seconds: HEARTBEAT_INTERVAL.as_secs() as u32,
        }))
    }

    type SessionStream = SessionStream;

    #[instrument(skip_all)]
    async fn session(
        &self,
        req: Request<Streaming<pb::AgentMessage>>,
    ) -> Reply<Self::SessionStream> {
        let caller = req.extensions().get::<Caller>().cloned();
        let mut inbound = req.into_inner();
        let hello = match inbound.next().await {
            Some(Ok(pb::AgentMessage {
                msg: Some(pb::agent_message::Msg::Hello(h)),
            })) => h,
            Some(Err(e)) => return Err(e),
            _ => {
                return Err(Error::BadRequest(
                    "the first message of a session must be Hello".into(),
                )
                .into())
            }
        };
        let node_name = hello.node_name.clone();
        if let Some(caller) = caller.as_ref().filter(|c| c.role == Role::Node) {
            self.admit_session(caller, &node_name)?;
        }
        let key = ObjectKey::new(Kind::Node, "", &node_name);
        if self.store.get(&key).map_err(Error::from)?.is_none() {
            return Err(Error::FailedPrecondition(format!(
                "node {node_name} is not registered; call Register first"
            ))
            .into());
        }
        self.health.record(&node_name);
        let (session_id, mut events) = self.sessions.open(&node_name);
        // Boxed: the channel keeps a block of 32 slots allocated while the session is open,
        // and a message inline is ~200 bytes (6 KB a session; boxed, 256 bytes).
        let (tx, rx) = mpsc::channel::<Box<pb::SchedulerMessage>>(1024);

        // Resync: start what should run, stop what should not. The messages are sent from
        // the session's task, after the stream is handed back: sent here, more of them than
        // the channel holds (a node with over 1,024 pods, or as many orphans) would wait
        // for a reader that does not exist yet, and the session would never open.
        let bound = self.bound_pods(&node_name)?;
        let mut started: HashSet<String> = HashSet::new();
        let mut resync: Vec<Box<pb::SchedulerMessage>> = Vec::new();
        for pod in &bound {
            if pod.metadata.deletion_timestamp.is_none() {
                started.insert(pod.metadata.uid.clone());
                resync.push(Box::new(self.start_msg(pod)));
            }
        }
        for uid in hello.running_pod_uids {
            if !started.contains(&uid) {
                resync.push(Box::new(pb::SchedulerMessage {
                    msg: Some(pb::scheduler_message::Msg::StopPod(pb::StopPod {
                        uid,
                        reason: "Orphaned".into(),
                        ..Default::default()
                    })),
                }));
            }
        }
        info!(node = %node_name, pods = started.len(), "agent session opened");

        let this = self.clone();
        tokio::spawn(async move {
            let mut delivered = true;
            for msg in resync {
                if tx.send(msg).await.is_err() {
                    delivered = false;
                    break;
                }
            }
            loop {
                if !delivered {
                    break;
                }
                tokio::select! {
                    msg = inbound.next() => {
                        let msg = match msg {
                            Some(Ok(m)) => m,
                            Some(Err(e)) => { debug!(node = %node_name, error = %e, "agent stream error"); break; }
                            None => break,
                        };
                        // The handlers' futures are boxed: inline, their state would make
                        // every idle session's task as large as the largest of them.
                        let result = match msg.msg {
                            Some(pb::agent_message::Msg::Heartbeat(beat)) => Box::pin(this.heartbeat(&node_name, beat)).await,
                            Some(pb::agent_message::Msg::PodStatus(update)) => Box::pin(this.pod_status(&node_name, update)).await,
                            other => {
                                let (this, node) = (this.clone(), node_name.clone());
                                tokio::task::spawn_blocking(move || this.other_message(&node, other))
                                    .await
                                    .map_err(Error::from)
                                    .and_then(|handled| handled)
                            }
                        };
                        if let Err(e) = result {
                            warn!(node = %node_name, error = %e, "agent message refused");
                        }
                    }
                    event = events.recv() => {
                        let Some(event) = event else { break };
                        let msg = match event {
                            SessionEvent::Pod(pod) => {
                                let uid = pod.metadata.uid.clone();
                                if pod.status.phase.is_terminal() {
                                    // Ended by the agent itself, or by the server (preempted,
                                    // evicted): in the second case the agent still runs it.
                                    if started.remove(&uid) && !pod.status.reason.is_empty() {
                                        Box::new(stop_msg(&pod, &pod.status.reason))
                                    } else {
                                        continue;
                                    }
                                } else
                                if pod.metadata.deletion_timestamp.is_some() {
                                    started.remove(&uid);
                                    Box::new(stop_msg(&pod, "Deleted"))
                                } else if started.insert(uid) {
                                    Box::new(this.start_msg(&pod))
                                } else {
                                    continue;
                                }
                            }
                            SessionEvent::PodDeleted(pod) => {
                                started.remove(&pod.metadata.uid);
                                Box::new(stop_msg(&pod, "Deleted"))
                            }
                            SessionEvent::Message(msg) => msg,
                        };
                        if tx.send(msg).await.is_err() {
                            break;
                        }
                    }
                }
            }
            this.sessions.close(&node_name, session_id);
            if let Some(t) = &this.telemetry {
                t.session_closed(&node_name);
            }
            info!(node = %node_name, "agent session closed");
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx).map(|msg| Ok(*msg)),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::PodPhase;

    fn pod(namespace: &str, name: &str, node: &str, phase: PodPhase) -> SharedPod {
        let mut pod = Pod::default();
        pod.metadata.namespace = namespace.into();
        pod.metadata.name = name.into();
        pod.metadata.uid = format!("{namespace}/{name}");
        pod.spec.node_name = node.into();
        pod.status.phase = phase;
        SharedPod::from_object(Arc::new(Object::Pod(Box::new(pod)))).expect("a pod")
    }

    fn names(pods: Option<Vec<SharedPod>>) -> Option<Vec<String>> {
        pods.map(|pods| {
            pods.iter()
                .map(|p| format!("{}/{}", p.metadata.namespace, p.metadata.name))
                .collect()
        })
    }

    /// A store that counts its reads of single objects.
    struct CountingGets {
        inner: berth_store::SledStore,
        gets: std::sync::atomic::AtomicUsize,
    }

    impl ObjectStore for CountingGets {
        fn get(&self, key: &ObjectKey) -> berth_store::Result<Option<Object>> {
            self.gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.get(key)
        }
        fn list(&self, kind: Kind, namespace: Option<&str>) -> berth_store::Result<Vec<Object>> {
            self.inner.list(kind, namespace)
        }
        fn commit(&self, ops: Vec<Op>) -> berth_store::Result<Vec<Change>> {
            self.inner.commit(ops)
        }
        fn revision(&self) -> u64 {
            self.inner.revision()
        }
        fn commits_in_process(&self) -> bool {
            true
        }
        fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<Change>> {
            self.inner.subscribe()
        }
    }

    /// A heartbeat stores the node's conditions when they change and nothing when they do
    /// not; with the API's cache it reads the node from the cache, never the store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heartbeats_store_changed_conditions_reading_the_cache_when_given_one() {
        let ready = |status: &str| pb::Heartbeat {
            node_name: "n1".into(),
            conditions_json: format!(r#"[{{"type":"Ready","status":"{status}"}}]"#),
            images_json: String::new(),
        };
        for cached in [true, false] {
            let store = Arc::new(CountingGets {
                inner: berth_store::SledStore::temporary().expect("store"),
                gets: Default::default(),
            });
            let mut node = Node::default();
            node.metadata.name = "n1".into();
            store
                .commit(vec![Op::Create(Object::Node(Box::new(node)))])
                .expect("node stored");
            let dyn_store: Arc<dyn ObjectStore> = store.clone();
            let mut service = AgentService::new(dyn_store.clone(), Arc::default());
            if cached {
                service = service.with_cache(ObjectCache::start(dyn_store));
            }
            let stored_ready = || {
                let key = ObjectKey::new(Kind::Node, "", "n1");
                let Some(Object::Node(node)) = store.inner.get(&key).expect("read") else {
                    panic!("the node");
                };
                let ready = node
                    .condition(names::CONDITION_READY)
                    .map(|c| c.status.clone());
                (ready, node.metadata.resource_version.clone())
            };
            service.heartbeat("n1", ready("True")).await.expect("beat");
            let (status, version) = stored_ready();
            assert_eq!(status.as_deref(), Some("True"), "cached {cached}");
            service.heartbeat("n1", ready("True")).await.expect("beat");
            assert_eq!(
                stored_ready().1,
                version,
                "cached {cached}: nothing changed, nothing written"
            );
            service.heartbeat("n1", ready("False")).await.expect("beat");
            assert_eq!(
                stored_ready().0.as_deref(),
                Some("False"),
                "cached {cached}"
            );
            let gets = store.gets.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(
                gets,
                if cached { 0 } else { 3 },
                "cached {cached}: store reads"
            );
        }
    }

    /// What a session's resync starts: the node's pods as the dispatcher routed them, in
    /// the store's order, without the ended or deleted ones; nothing (the store decides)
    /// until the dispatcher has routed everything the store sent once.
    #[test]
    fn bound_pods_follow_the_routed_changes_once_the_dispatcher_is_ready() {
        struct Step {
            pod: SharedPod,
            gone: bool,
            ready: bool,
            want_n1: Option<Vec<&'static str>>,
        }
        let steps = [
            Step {
                pod: pod("b", "web", "n1", PodPhase::Running),
                gone: false,
                ready: false,
                want_n1: None,
            },
            Step {
                pod: pod("a", "db", "n1", PodPhase::Pending),
                gone: false,
                ready: true,
                want_n1: Some(vec!["a/db", "b/web"]),
            },
            Step {
                pod: pod("a", "other", "n2", PodPhase::Running),
                gone: false,
                ready: false,
                want_n1: Some(vec!["a/db", "b/web"]),
            },
            Step {
                pod: pod("b", "web", "n1", PodPhase::Succeeded),
                gone: false,
                ready: false,
                want_n1: Some(vec!["a/db"]),
            },
            Step {
                pod: pod("a", "db", "n1", PodPhase::Running),
                gone: true,
                ready: true,
                want_n1: Some(vec![]),
            },
        ];
        let sessions = Sessions::default();
        for (i, step) in steps.into_iter().enumerate() {
            sessions.record(&step.pod, step.gone, step.ready);
            let want = step
                .want_n1
                .map(|w| w.into_iter().map(String::from).collect::<Vec<_>>());
            assert_eq!(names(sessions.bound_to("n1")), want, "step {i}");
        }
        assert_eq!(
            names(sessions.bound_to("n2")),
            Some(vec!["a/other".to_string()])
        );

        // Only unbound pods so far: once the dispatcher has caught up on them, the record
        // (empty) decides, not the store's list.
        let sessions = Sessions::default();
        assert_eq!(names(sessions.bound_to("n1")), None);
        sessions.caught_up();
        assert_eq!(names(sessions.bound_to("n1")), Some(vec![]));
    }
}
