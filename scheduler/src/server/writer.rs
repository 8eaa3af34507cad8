//! Batched writes: the scheduling loop's binds, status updates and events go through one
//! task that commits whatever has queued up in as few store transactions as etcd's limit of
//! operations per transaction allows (counting the leader's fence), so one disk flush serves
//! many writes (group commit). If a joint commit fails, its writes are retried one by one so
//! that one stale write cannot sink the others. It counts the writes not done yet, so that
//! the scheduling loop can wait for it instead of running ever further ahead
//! ([`Writer::backlog`], [`Writer::caught_up`]).
//!
//! Events wait behind the other writes ([`Writer::submit_event`]): a batch takes them when no
//! other write is waiting, once they have waited [`EVENTS_DELAY`], or once more than
//! [`EVENTS_AHEAD`] of them wait, so that a burst of bindings does not wait for its events,
//! as kube's schedulers write events asynchronously through a client of their own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_proto::model::{Event, Object, Time};
use berth_store::{ObjectStore, Op, Precondition};
use tokio::sync::{mpsc, Notify};
use tracing::{debug, error, warn};

use super::binding::assign;
use crate::framework::SharedPod;

/// Most writes taken from the queue at once (committed in transactions of at most
/// [`berth_store::MAX_FENCED_TXN_OPS`] operations).
pub(crate) const MAX_BATCH: usize = 512;

/// Longest an event waits behind other writes: a batch takes the events queued that long
/// ago (at most a batch of them) even when other writes wait, so that under a steady load
/// they still appear within about this time.
pub(crate) const EVENTS_DELAY: Duration = Duration::from_secs(1);

/// Most events left waiting behind other writes: past it, each batch also takes the
/// events over the bound (at most a batch of them), so that what they hold stays bounded
/// (~1 KB an event not shared with the recorder's memory of recent events). Sixteen
/// batches: at 4,096 SchedulingBasic (10,000 pods) ran at 18,000 pods/s against 22,000 at
/// 8,192 or more, and 16,384 copied events took the scheduler's peak at 50,000 pods end to
/// end 12 MiB up (docs/performance.md, "Events behind the bindings").
pub(crate) const EVENTS_AHEAD: usize = 16 * MAX_BATCH;

/// One write and who wants to hear that it failed.
pub struct Write {
    /// Operations committed in the same transaction, before `op`, all or none with it (a
    /// binding's ResourceClaim status updates, kube's PreBind).
    pub before: Vec<Op>,
    /// The store operation.
    pub op: WriteOp,
    /// What to tell the scheduling loop if this write fails (binds only).
    pub on_failure: Option<FailureNotice>,
    /// When `before` conflicts: builds it again from fresh reads (a binding's claims, as
    /// kube's PreBind retries on conflict), or says why it may not be retried.
    pub refresh_before: Option<RefreshBefore>,
}

/// A write's store operation, or what the writer builds it from when it commits.
pub enum WriteOp {
    /// The operation as queued.
    Ready(Op),
    /// A pod's binding: the pod as the loop last saw it stored, assigned to `node` at `at`
    /// (spec.nodeName and PodScheduled, [`assign`]) under that version's resourceVersion.
    /// Built when committed, so that a queued binding holds the shared stored pod instead
    /// of a copy of it: when the store is slower than the loop, tens of thousands of
    /// bindings wait in the queue (SchedulingBasic at 50,000 pods under load).
    Bind {
        /// The stored version the binding applies to.
        pod: SharedPod,
        /// The node it goes to.
        node: String,
        /// When it was scheduled (the PodScheduled condition's time).
        at: Time,
    },
}

impl WriteOp {
    /// The store operation.
    fn op(&self) -> Op {
        match self {
            WriteOp::Ready(op) => op.clone(),
            WriteOp::Bind { pod, node, at } => {
                let mut bound = (**pod).clone();
                assign(&mut bound, node, *at);
                Op::Update {
                    object: Object::Pod(Box::new(bound)),
                    precondition: Precondition::ResourceVersion(
                        pod.metadata.resource_version.clone(),
                    ),
                }
            }
        }
    }
}

impl From<Op> for WriteOp {
    fn from(op: Op) -> Self {
        WriteOp::Ready(op)
    }
}

/// Rebuilds a write's `before` ops from the store's current objects.
pub type RefreshBefore = Box<dyn Fn(&dyn ObjectStore) -> Result<Vec<Op>, String> + Send>;

/// Times a write whose `before` conflicts is rebuilt and tried again (kube's
/// `retry.DefaultRetry` has 5 steps).
const REFRESH_ATTEMPTS: usize = 5;

impl Write {
    /// Its operations in commit order.
    fn ops(&self) -> Vec<Op> {
        let mut ops = self.before.clone();
        ops.push(self.op.op());
        ops
    }
}

/// A failed write, reported back to the scheduling loop.
#[derive(Debug)]
pub struct FailureNotice {
    /// uid of the pod whose write failed.
    pub pod_uid: String,
    /// Why, filled in by the writer.
    pub error: String,
}

/// What the writer's queue carries.
enum Queued {
    /// A write, committed in the next batch.
    Write(Write),
    /// An event to upsert (see [`Pending::batch`] for when), and when it was queued.
    Event(Arc<Event>, Instant),
}

/// Sends writes to the writer task.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::UnboundedSender<Queued>,
    backlog: Arc<Backlog>,
}

/// How many writes (events aside) are queued or being committed, and a wake-up for whoever
/// waits for the writer to catch up.
#[derive(Default)]
struct Backlog {
    writes: AtomicUsize,
    drained: Notify,
}

impl Backlog {
    /// `count` writes are done (committed or failed).
    fn done(&self, count: usize) {
        self.writes.fetch_sub(count, Ordering::AcqRel);
        self.drained.notify_waiters();
    }
}

impl Writer {
    /// Starts the writer task; failures of writes that asked for it go to `failures`.
    pub fn spawn(
        store: Arc<dyn ObjectStore>,
        failures: mpsc::UnboundedSender<FailureNotice>,
    ) -> (Writer, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(Backlog::default());
        let handle = tokio::spawn(run(store, rx, failures, backlog.clone()));
        (Writer { tx, backlog }, handle)
    }

    /// Queues a write. Returns false if the writer has stopped.
    pub fn submit(&self, write: Write) -> bool {
        self.backlog.writes.fetch_add(1, Ordering::AcqRel);
        let sent = self.tx.send(Queued::Write(write)).is_ok();
        if !sent {
            self.backlog.done(1);
        }
        sent
    }

    /// Queues an event's upsert, which waits behind the other writes (see the module's
    /// comment) and is not counted in [`Writer::backlog`]. Returns false if the writer has
    /// stopped.
    pub fn submit_event(&self, event: Arc<Event>) -> bool {
        self.tx.send(Queued::Event(event, Instant::now())).is_ok()
    }

    /// How many submitted writes, events aside, are not done yet (queued, or in the commit
    /// under way).
    pub fn backlog(&self) -> usize {
        self.backlog.writes.load(Ordering::Acquire)
    }

    /// Returns once at most `limit` writes are left to do (at once if so already).
    pub async fn caught_up(&self, limit: usize) {
        loop {
            let drained = self.backlog.drained.notified();
            if self.backlog() <= limit {
                return;
            }
            drained.await;
        }
    }
}

async fn run(
    store: Arc<dyn ObjectStore>,
    mut rx: mpsc::UnboundedReceiver<Queued>,
    failures: mpsc::UnboundedSender<FailureNotice>,
    backlog: Arc<Backlog>,
) {
    let mut pending = Pending::default();
    let mut received = Vec::with_capacity(MAX_BATCH);
    loop {
        if pending.events.is_empty() {
            // Nothing waits: sleep until something comes.
            if rx.recv_many(&mut received, MAX_BATCH).await == 0 {
                break;
            }
            pending.take(received.drain(..));
        }
        // Whatever else is queued, without waiting: the events among it until a batch of
        // other writes has come.
        while pending.writes.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(queued) => pending.take(std::iter::once(queued)),
                Err(_) => break,
            }
        }
        let (writes, events) = pending.batch(Instant::now());
        let count = writes.len();
        // Who to tell should the commit task itself fail (panic) with the writes inside.
        let notices: Vec<String> = writes
            .iter()
            .filter_map(|w| w.on_failure.as_ref().map(|n| n.pod_uid.clone()))
            .collect();
        let started = Instant::now();
        let committed =
            super::commit_thread::commit_to(store.clone(), move |store| commit(store, writes))
                .await;
        super::metrics::store_commit(count, started.elapsed());
        backlog.done(count - events);
        let failed = match committed {
            Ok(failed) => failed,
            Err(e) => {
                error!(writes = count, error = %e, "a batch of writes failed to run; its writes are lost");
                notices
                    .into_iter()
                    .map(|pod_uid| FailureNotice {
                        pod_uid,
                        error: e.to_string(),
                    })
                    .collect()
            }
        };
        for notice in failed {
            // The loop may have stopped during shutdown; nothing to tell then.
            let _ = failures.send(notice);
        }
    }
    debug!("writer stopped");
}

/// Writes taken from the queue and not yet committed.
#[derive(Default)]
struct Pending {
    /// Writes other than events, in the order queued.
    writes: Vec<Write>,
    /// Events and when each was queued, in that order.
    events: std::collections::VecDeque<(Arc<Event>, Instant)>,
}

impl Pending {
    fn take(&mut self, queued: impl IntoIterator<Item = Queued>) {
        for queued in queued {
            match queued {
                Queued::Write(write) => self.writes.push(write),
                Queued::Event(event, queued) => self.events.push_back((event, queued)),
            }
        }
    }

    /// The next batch and how many events end it: the writes waiting, then events (oldest
    /// first, at most a batch of them): as many as fit if no write is waiting, else those
    /// queued [`EVENTS_DELAY`] or more before `now` and those over [`EVENTS_AHEAD`].
    fn batch(&mut self, now: Instant) -> (Vec<Write>, usize) {
        let mut batch = std::mem::take(&mut self.writes);
        let events = if batch.is_empty() {
            MAX_BATCH
        } else {
            let overdue = self
                .events
                .iter()
                .take(MAX_BATCH)
                .take_while(|(_, queued)| now.saturating_duration_since(*queued) >= EVENTS_DELAY)
                .count();
            overdue.max(self.events.len().saturating_sub(EVENTS_AHEAD))
        }
        .min(MAX_BATCH)
        .min(self.events.len());
        batch.extend(self.events.drain(..events).map(|(event, _)| Write {
            before: Vec::new(),
            op: Op::Upsert(Object::Event(Box::new(Arc::unwrap_or_clone(event)))).into(),
            on_failure: None,
            refresh_before: None,
        }));
        (batch, events)
    }
}

/// Commits the writes in as few fenced transactions as etcd's limit allows, each group
/// jointly or, if that fails, write by write; returns the failure notices.
fn commit(store: &dyn ObjectStore, writes: Vec<Write>) -> Vec<FailureNotice> {
    let limit = berth_store::MAX_FENCED_TXN_OPS;
    super::group_commit::groups(writes, limit, |w| w.before.len() + 1)
        .into_iter()
        .flat_map(|group| commit_group(store, group))
        .collect()
}

/// Commits the writes in one transaction, or each alone if that fails; returns the failure
/// notices. Once the store is out of reach (etcd gone: a commit failed with a transient
/// error after its own retries), the writes left fail at once with that error rather than
/// each waiting as long again, so that a shutdown without etcd ends.
fn commit_group(store: &dyn ObjectStore, writes: Vec<Write>) -> Vec<FailureNotice> {
    let mut unreachable: Option<berth_store::Error> = None;
    if writes.len() > 1 {
        let ops: Vec<Op> = writes.iter().flat_map(Write::ops).collect();
        match store.commit(ops) {
            Ok(_) => return Vec::new(),
            Err(e) if e.is_transient() => unreachable = Some(e),
            Err(_) => {}
        }
    }
    let mut failed = Vec::new();
    for mut write in writes {
        let result = match &unreachable {
            Some(e) => Err(e.to_string()),
            None => commit_alone(store, &mut write).map_err(|e| {
                let message = e.to_string();
                if e.is_transient() {
                    unreachable = Some(e);
                } else if write.on_failure.is_none()
                    && !matches!(
                        e,
                        berth_store::Error::Conflict { .. } | berth_store::Error::NotFound { .. }
                    )
                {
                    warn!(error = %e, "write failed");
                }
                message
            }),
        };
        if let Err(error) = result {
            debug!(%error, "write failed");
            if let Some(mut notice) = write.on_failure {
                notice.error = error;
                failed.push(notice);
            }
        }
    }
    if let Some(e) = unreachable {
        warn!(error = %e, "the store is out of reach; the writes of this batch failed");
    }
    failed
}

/// Commits one write, rebuilding its `before` ops on conflict when it says how.
fn commit_alone(store: &dyn ObjectStore, write: &mut Write) -> Result<(), berth_store::Error> {
    let mut result = store.commit(write.ops());
    if let Some(refresh) = &write.refresh_before {
        for _ in 0..REFRESH_ATTEMPTS {
            if !matches!(result, Err(berth_store::Error::Conflict { .. })) {
                break;
            }
            match refresh(store) {
                Ok(before) => write.before = before,
                Err(reason) => {
                    debug!(%reason, "write not retried");
                    break;
                }
            }
            result = store.commit(write.ops());
        }
    }
    result.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::informer::testing::{name_of, GatedStore};
    use berth_proto::model::{Kind, Namespace, Object, ObjectKey};
    use berth_store::{Precondition, SledStore};

    /// Namespace `shared` labelled `v: data`, at `rv`.
    fn namespace(data: &str, rv: &str) -> Object {
        let mut ns = Namespace::default();
        ns.metadata.name = "shared".into();
        ns.metadata.resource_version = rv.into();
        ns.metadata.labels.insert("v".into(), data.into());
        Object::Namespace(Box::new(ns))
    }

    fn stored(store: &dyn ObjectStore) -> Object {
        store
            .get(&ObjectKey::new(Kind::Namespace, "", "shared"))
            .expect("get")
            .expect("stored")
    }

    /// A write whose `before` updates the shared object at `rv`, then `op`; rebuilt on the
    /// object as stored now when `refresh` (appending `mark`).
    fn write(rv: &str, mark: &str, refresh: bool) -> Write {
        let update = |object: Object| Op::Update {
            precondition: Precondition::ResourceVersion(object.meta().resource_version.clone()),
            object,
        };
        let mark = mark.to_string();
        let first = namespace(&mark, rv);
        Write {
            before: vec![update(first)],
            op: Op::Upsert(namespace_named(&mark)).into(),
            on_failure: Some(FailureNotice {
                pod_uid: mark.clone(),
                error: String::new(),
            }),
            refresh_before: refresh.then(|| {
                Box::new(move |store: &dyn ObjectStore| {
                    let Object::Namespace(mut ns) = stored(store) else {
                        return Err("not a Namespace".to_string());
                    };
                    let v = ns.metadata.labels.get("v").cloned().unwrap_or_default();
                    ns.metadata.labels.insert("v".into(), format!("{v}{mark}"));
                    Ok(vec![update(Object::Namespace(ns))])
                }) as RefreshBefore
            }),
        }
    }

    /// Namespace `name`, the write's own op.
    fn namespace_named(name: &str) -> Object {
        let mut ns = Namespace::default();
        ns.metadata.name = format!("own-{name}");
        Object::Namespace(Box::new(ns))
    }

    /// 300 writes taken at once commit in transactions etcd accepts (fenced: 127 operations
    /// at most), all three jointly.
    #[test]
    fn a_large_batch_commits_in_transactions_within_etcds_limit() {
        let store =
            crate::server::informer::testing::LimitedStore::new(berth_store::MAX_FENCED_TXN_OPS);
        let writes = (0..300)
            .map(|i| Write {
                before: Vec::new(),
                op: Op::Create(namespace_named(&format!("n{i}"))).into(),
                on_failure: None,
                refresh_before: None,
            })
            .collect();
        assert!(commit(store.as_ref(), writes).is_empty(), "no failure");
        assert_eq!(store.commits.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert_eq!(store.list(Kind::Namespace, None).expect("list").len(), 300);
    }

    /// A store out of reach: every commit times out (after its own retries, on etcd).
    #[derive(Default)]
    struct Unreachable {
        commits: std::sync::atomic::AtomicUsize,
    }

    impl ObjectStore for Unreachable {
        fn get(&self, _: &ObjectKey) -> berth_store::Result<Option<Object>> {
            Ok(None)
        }
        fn list(&self, _: Kind, _: Option<&str>) -> berth_store::Result<Vec<Object>> {
            Ok(Vec::new())
        }
        fn commit(&self, _: Vec<Op>) -> berth_store::Result<Vec<berth_store::Change>> {
            self.commits
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err(berth_store::Error::Timeout {
                operation: "commit",
                after: Duration::from_secs(5),
            })
        }
        fn revision(&self) -> u64 {
            0
        }
        fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<berth_store::Change>> {
            tokio::sync::broadcast::channel(1).1
        }
    }

    /// With the store out of reach, a batch costs one commit, not one per write: every
    /// write is reported failed with the store's error.
    #[test]
    fn writes_fail_at_once_when_the_store_is_out_of_reach() {
        let store = Unreachable::default();
        let writes = (0..10)
            .map(|i| Write {
                before: Vec::new(),
                op: Op::Create(namespace_named(&format!("n{i}"))).into(),
                on_failure: Some(FailureNotice {
                    pod_uid: format!("uid-{i}"),
                    error: String::new(),
                }),
                refresh_before: None,
            })
            .collect();
        let failed = commit(&store, writes);
        assert_eq!(store.commits.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(failed.len(), 10);
        assert!(failed[9].error.contains("timed out"), "{}", failed[9].error);
    }

    /// Two writes of one batch update the same object from the same stale version (the
    /// second pod of a shared claim): the second conflicts; with a refresh it is rebuilt
    /// on the first's result and commits, without it it fails and is reported.
    #[test]
    fn a_conflicting_write_with_a_refresh_is_rebuilt_and_committed() {
        for (refresh, want_failed, want_data) in [(true, vec![], "ab"), (false, vec!["b"], "a")] {
            let store = SledStore::temporary().expect("store");
            store
                .commit(vec![Op::Create(namespace("", ""))])
                .expect("create");
            let rv = stored(&store).meta().resource_version.clone();
            let failed = commit(
                &store,
                vec![write(&rv, "a", refresh), write(&rv, "b", refresh)],
            );
            let failed: Vec<String> = failed.into_iter().map(|n| n.pod_uid).collect();
            assert_eq!(failed, want_failed, "refresh {refresh}");
            let Object::Namespace(ns) = stored(&store) else {
                panic!("a Namespace");
            };
            assert_eq!(ns.metadata.labels["v"], want_data, "refresh {refresh}");
        }
    }

    /// The backlog counts writes until their commit is done, and `caught_up` waits for it
    /// to fall to its limit: what holds the scheduling loop back when the store is slow.
    #[tokio::test]
    async fn the_backlog_counts_writes_until_they_are_committed() {
        let store = GatedStore::closed();
        let (failures, _) = mpsc::unbounded_channel();
        let (writer, _task) = Writer::spawn(store.clone(), failures);
        for i in 0..3 {
            assert!(writer.submit(Write {
                before: Vec::new(),
                op: Op::Create(namespace_named(&format!("n{i}"))).into(),
                on_failure: None,
                refresh_before: None,
            }));
        }
        assert_eq!(writer.backlog(), 3);
        // At or under the limit already: no wait.
        writer.caught_up(3).await;
        let waiting = writer.clone();
        let waiter = tokio::spawn(async move { waiting.caught_up(0).await });
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(
            !waiter.is_finished(),
            "caught up while every commit was held"
        );
        assert_eq!(writer.backlog(), 3);
        store.open();
        waiter.await.expect("the waiter");
        assert_eq!(writer.backlog(), 0);
        assert_eq!(store.list(Kind::Namespace, None).expect("list").len(), 3);
    }

    /// An event named `name`.
    fn event(name: &str) -> Arc<Event> {
        let mut event = Event::default();
        event.metadata.name = name.to_string();
        event.metadata.namespace = "default".to_string();
        Arc::new(event)
    }

    /// What a batch takes: every write waiting, then the oldest events: as many as fit a
    /// batch of no writes, else those overdue and those over the bound, at most a batch.
    #[test]
    fn a_batch_takes_events_behind_no_writes_overdue_or_over_the_bound() {
        struct Case {
            name: &'static str,
            writes: usize,
            /// Events queued [`EVENTS_DELAY`] ago, then events queued now.
            overdue: usize,
            fresh: usize,
            want_events: usize,
        }
        let case = |name, writes, overdue, fresh, want_events| Case {
            name,
            writes,
            overdue,
            fresh,
            want_events,
        };
        let cases = [
            case("events alone", 0, 0, 3, 3),
            case(
                "events alone, more than a batch",
                0,
                0,
                MAX_BATCH + 5,
                MAX_BATCH,
            ),
            case("writes wait: fresh events stay", 2, 0, 3, 0),
            case("writes wait: overdue events go", 2, 2, 3, 2),
            case("overdue, more than a batch", 2, MAX_BATCH + 1, 0, MAX_BATCH),
            case("at the bound: events stay", 2, 0, EVENTS_AHEAD, 0),
            case("over the bound: the excess", 2, 0, EVENTS_AHEAD + 3, 3),
            case(
                "over the bound and overdue: the more",
                2,
                5,
                EVENTS_AHEAD,
                5,
            ),
            case(
                "far over: a batch",
                1,
                0,
                EVENTS_AHEAD + MAX_BATCH + 10,
                MAX_BATCH,
            ),
            case("nothing", 0, 0, 0, 0),
        ];
        let now = Instant::now();
        let long_ago = now
            .checked_sub(EVENTS_DELAY)
            .expect("an instant a second ago");
        for case in cases {
            let mut pending = Pending::default();
            pending.take((0..case.writes).map(|i| {
                Queued::Write(Write {
                    before: Vec::new(),
                    op: Op::Create(namespace_named(&format!("w{i}"))).into(),
                    on_failure: None,
                    refresh_before: None,
                })
            }));
            let events = case.overdue + case.fresh;
            pending.take((0..events).map(|i| {
                let queued = if i < case.overdue { long_ago } else { now };
                Queued::Event(event(&format!("e{i}")), queued)
            }));
            let (batch, taken) = pending.batch(now);
            assert_eq!(taken, case.want_events, "{}", case.name);
            let names: Vec<String> = batch.iter().map(|w| name_of(&w.op.op())).collect();
            let want: Vec<String> = (0..case.writes)
                .map(|i| format!("own-w{i}"))
                .chain((0..case.want_events).map(|i| format!("e{i}")))
                .collect();
            assert_eq!(
                names, want,
                "{}: writes first, then the oldest events",
                case.name
            );
            assert_eq!(pending.events.len(), events - taken, "{}", case.name);
        }
    }

    /// Events queued before a write are committed after it, are not counted in the
    /// backlog, and are all committed when the writer stops.
    #[tokio::test]
    async fn events_wait_behind_writes_and_are_committed_at_the_end() {
        let store = GatedStore::closed();
        let (failures, _) = mpsc::unbounded_channel();
        let (writer, task) = Writer::spawn(store.clone(), failures);
        let create = |name: &str| Write {
            before: Vec::new(),
            op: Op::Create(namespace_named(name)).into(),
            on_failure: None,
            refresh_before: None,
        };
        assert!(writer.submit(create("first")));
        // The first write is in its commit, held at the gate.
        for _ in 0..1000 {
            if !store.commits().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(store.commits(), vec![vec!["own-first".to_string()]]);
        assert!(writer.submit_event(event("early")));
        assert!(writer.submit(create("second")));
        assert!(writer.submit_event(event("late")));
        assert_eq!(writer.backlog(), 2, "events are not counted");
        drop(writer);
        store.open();
        task.await.expect("the writer ends");
        assert_eq!(
            store.commits(),
            vec![
                vec!["own-first".to_string()],
                vec!["own-second".to_string()],
                vec!["early".to_string(), "late".to_string()],
            ]
        );
        assert_eq!(store.list(Kind::Event, None).expect("list").len(), 2);
    }
}
