//! The in-process runner: the server's own scheduling loop, writer and event recorder over a
//! real [`SledStore`] on disk, driven the way scheduler_perf drives kube-scheduler. Objects
//! go through admission and into the store in batches (the store stands in for the API
//! server); binds are group-committed by the [`Writer`] exactly as in `berth-scheduler`,
//! and a pod counts as scheduled when its bind is in the store.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_proto::model::{Kind, Object, ObjectKey, Pod};
use berth_store::{ObjectStore, Op, Precondition, SledStore};
use tokio_util::sync::CancellationToken;

use super::histogram::LatencyHistogram;
use super::report::{peak_rss_bytes, Latency, Mode, Report, Throughput};
use super::workloads::{
    is_measured, priority_classes, Churn, Deletion, Workload, MEASURED_NAMESPACE,
};
use crate::profile::{Profile, Profiles};
use crate::server::admission;
use crate::server::events::EventRecorder;
use crate::server::informer::{Event, Informer};
use crate::server::scheduling::SchedulingLoop;
use crate::server::writer::Writer;

/// Length of one throughput sample.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// A final partial sample shorter than this is left out (too short to mean anything).
const MIN_PARTIAL_SAMPLE: Duration = Duration::from_millis(100);

/// How often the runner checks progress while waiting.
const POLL: Duration = Duration::from_millis(5);

/// How to run a workload in process.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Folder for the store (created if missing); the caller removes it.
    pub data_dir: PathBuf,
    /// Seed of the scheduler's tie-breaking.
    pub seed: u64,
    /// Objects per store transaction when creating nodes and pods.
    pub batch: usize,
    /// Longest wait for a phase (initial pods, measured pods) to complete.
    pub timeout: Duration,
}

impl RunOptions {
    /// Defaults: seed 1, batches of 500, 10 minutes per phase.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        RunOptions {
            data_dir: data_dir.into(),
            seed: 1,
            batch: 500,
            timeout: Duration::from_secs(600),
        }
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// The data folder could not be created.
    #[error("creating {path}: {source}")]
    DataDir {
        /// The folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store could not be opened or written.
    #[error("store: {0}")]
    Store(#[from] berth_store::Error),
    /// Admission refused a generated object (a bug in the templates).
    #[error("admitting {object}: {message}")]
    Admission {
        /// The object.
        object: String,
        /// Why.
        message: String,
    },
    /// A phase did not complete in time.
    #[error("{phase}: only {bound} of {expected} pods bound after {timeout:?}")]
    Timeout {
        /// The phase (`initial pods`, `measured pods`).
        phase: &'static str,
        /// Pods bound so far.
        bound: usize,
        /// Pods expected.
        expected: usize,
        /// The limit.
        timeout: Duration,
    },
    /// The workload cannot complete at the sizes asked for.
    #[error("{workload}: {problem}")]
    Size {
        /// The workload.
        workload: String,
        /// Why.
        problem: String,
    },
    /// The workload needs a plugin the default profile lacks.
    #[error("{workload} needs the {plugin} plugin, which the default profile does not have; the workload measures nothing")]
    MissingPlugin {
        /// The workload.
        workload: String,
        /// The plugin.
        plugin: &'static str,
    },
    /// A blocking task panicked or was cancelled.
    #[error("background task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Checks that the workload can complete at its sizes and that the default profile can run
/// it (the preemption workloads need a PostFilter).
pub fn check_profile(workload: &Workload) -> Result<(), PerfError> {
    if let Some(problem) = workload.size_problem() {
        return Err(PerfError::Size {
            workload: workload.name.to_string(),
            problem,
        });
    }
    if workload.needs_preemption() && Profile::default_profile().post_filter.is_none() {
        return Err(PerfError::MissingPlugin {
            workload: workload.name.to_string(),
            plugin: "DefaultPreemption",
        });
    }
    Ok(())
}

/// Counts first binds of pods, split into measured and other pods, from the store's change
/// stream (re-listing the store if the stream lags).
#[derive(Default)]
pub struct BindCounter {
    measured: AtomicUsize,
    other: AtomicUsize,
}

impl BindCounter {
    /// Measured pods bound so far.
    pub fn measured(&self) -> usize {
        self.measured.load(Ordering::Acquire)
    }

    /// Other pods bound so far.
    pub fn other(&self) -> usize {
        self.other.load(Ordering::Acquire)
    }

    fn count(&self, pod: &Pod) {
        if is_measured(pod) {
            self.measured.fetch_add(1, Ordering::AcqRel);
        } else {
            self.other.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Follows the pods through `pods` until the store closes or `stop` fires. A pod counts
    /// when it is first seen with a node: its reflector's previous version had none (or there
    /// was none), so no set of counted pods is kept beside the informer's own cache. Pods
    /// bound before the first list do not count; binds are never undone by the workloads, so
    /// after a re-list only new binds count.
    async fn follow(self: Arc<Self>, mut pods: Informer, stop: CancellationToken) {
        let mut listed = false;
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                event = pods.next() => event,
            };
            match event {
                Some(Event::InitDone) => listed = true,
                Some(event) if listed && !event.is_delete() => {
                    let unbound_before = match event.previous() {
                        Some(Object::Pod(previous)) => previous.spec.node_name.is_empty(),
                        _ => true,
                    };
                    if let Some(Object::Pod(pod)) = event.object() {
                        if unbound_before && !pod.spec.node_name.is_empty() {
                            self.count(pod);
                        }
                    }
                }
                Some(_) => {}
                None => return,
            }
        }
    }
}

/// Admits and stores objects in transactions of `batch` objects, taking them from the
/// iterator one batch at a time.
pub async fn create_all(
    store: &Arc<dyn ObjectStore>,
    objects: impl IntoIterator<Item = Object, IntoIter: Send>,
    batch: usize,
) -> Result<(), PerfError> {
    let mut objects = objects.into_iter().peekable();
    while objects.peek().is_some() {
        let chunk: Vec<Object> = objects.by_ref().take(batch.max(1)).collect();
        let store = store.clone();
        tokio::task::spawn_blocking(move || -> Result<(), PerfError> {
            let mut ops = Vec::with_capacity(chunk.len());
            for object in chunk {
                let described = admission::describe(&object);
                // The claims a DRA workload made for its pod's templates: admission drops a
                // new pod's status, and kube's claim controller would record them next.
                let claim_statuses = match &object {
                    Object::Pod(p) => p.status.resource_claim_statuses.clone(),
                    _ => Vec::new(),
                };
                let mut admitted = admission::admit(store.as_ref(), object, &Default::default())
                    .map_err(|e| PerfError::Admission {
                        object: described,
                        message: e.to_string(),
                    })?;
                if let Object::Pod(p) = &mut admitted {
                    if !claim_statuses.is_empty() {
                        p.status.resource_claim_statuses = claim_statuses;
                    }
                }
                ops.push(Op::Create(admitted));
            }
            store.commit(ops)?;
            Ok(())
        })
        .await??;
    }
    Ok(())
}

/// Waits until `done()` or the timeout; returns whether it completed.
async fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
    true
}

/// Samples a counter every [`SAMPLE_INTERVAL`] until it reaches `target` (or `timeout`
/// passes): returns the per-second rates and the time taken. The last, partial window counts
/// if it lasted at least [`MIN_PARTIAL_SAMPLE`].
pub async fn sample_until(
    start: Instant,
    target: usize,
    timeout: Duration,
    counter: impl Fn() -> usize,
) -> (Vec<f64>, Duration, bool) {
    let mut samples = Vec::new();
    let mut window_start = start;
    let mut window_count = counter();
    loop {
        let now = Instant::now();
        let count = counter();
        if count >= target {
            let window = now - window_start;
            if window >= MIN_PARTIAL_SAMPLE || samples.is_empty() {
                samples.push((count - window_count) as f64 / window.as_secs_f64().max(1e-9));
            }
            return (samples, now - start, true);
        }
        if now - start >= timeout {
            return (samples, now - start, false);
        }
        if now - window_start >= SAMPLE_INTERVAL {
            samples.push((count - window_count) as f64 / (now - window_start).as_secs_f64());
            window_start = now;
            window_count = count;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Attempt latency from the loop's histogram, in milliseconds.
pub fn latency_of(histogram: &LatencyHistogram) -> Latency {
    let ms = |q| histogram.quantile(q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
    Latency {
        p50: ms(0.5),
        p99: ms(0.99),
        attempts: histogram.count(),
    }
}

/// Deletes the objects with these keys in one transaction.
async fn delete_all(store: &Arc<dyn ObjectStore>, keys: Vec<ObjectKey>) -> Result<(), PerfError> {
    let store = store.clone();
    let ops = keys
        .into_iter()
        .map(|key| Op::Delete {
            key,
            precondition: Precondition::None,
        })
        .collect();
    tokio::task::spawn_blocking(move || store.commit(ops)).await??;
    Ok(())
}

/// kube's churn op: every interval, creates the churn's pod (and node), or in recreate
/// mode deletes what the previous tick created. Returns the ticks done.
async fn churn(
    store: Arc<dyn ObjectStore>,
    churn: Churn,
    stop: CancellationToken,
) -> Result<usize, PerfError> {
    let mut tick = 0usize;
    let mut timer = tokio::time::interval(churn.interval);
    timer.tick().await;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(tick),
            _ = timer.tick() => {}
        }
        if churn.creates(tick) {
            let mut objects = Vec::with_capacity(2);
            if churn.node {
                objects.push(Object::Node(Box::new(Churn::node_at(tick))));
            }
            objects.push(Object::Pod(Box::new(churn.pod_at(tick))));
            create_all(&store, objects, 2).await?;
        } else {
            let made = tick - 1;
            let mut keys = vec![ObjectKey::new(
                Kind::Pod,
                MEASURED_NAMESPACE,
                &Churn::pod_name(made),
            )];
            if churn.node {
                keys.push(ObjectKey::new(Kind::Node, "", &Churn::node_name(made)));
            }
            delete_all(&store, keys).await?;
        }
        tick += 1;
    }
}

/// kube's deletePods op: deletes the group's pods in creation order at the deletion's rate
/// until the group is gone or `stop` fires. Returns the pods deleted.
async fn delete_pods(
    store: Arc<dyn ObjectStore>,
    workload: Workload,
    deletion: Deletion,
    stop: CancellationToken,
) -> Result<usize, PerfError> {
    let group = workload.init[deletion.group].0;
    let mut timer = tokio::time::interval(Duration::from_secs(1) / deletion.per_second.max(1));
    for i in 0..group.count {
        tokio::select! {
            _ = stop.cancelled() => return Ok(i),
            _ = timer.tick() => {}
        }
        let key = ObjectKey::new(Kind::Pod, group.namespace, &group.pod_name(i));
        delete_all(&store, vec![key]).await?;
    }
    Ok(group.count)
}

/// What a churn did, for a report's notes.
pub fn churn_note(workload: &Workload, ticks: usize) -> String {
    let Some(churn) = workload.churn else {
        return String::new();
    };
    let what = if churn.node { "node/pod pairs" } else { "pods" };
    let made = (0..ticks).filter(|&t| churn.creates(t)).count();
    format!(
        "churn: {made} {what} ({:?}) created, {} deleted, every {:?}",
        churn.pod,
        ticks - made,
        churn.interval
    )
}

/// Runs a workload in this process and reports its measured phase.
pub async fn run_in_process(
    workload: &Workload,
    options: &RunOptions,
) -> Result<Report, PerfError> {
    check_profile(workload)?;
    std::fs::create_dir_all(&options.data_dir).map_err(|source| PerfError::DataDir {
        path: options.data_dir.clone(),
        source,
    })?;
    let store: Arc<dyn ObjectStore> = Arc::new(SledStore::open(&options.data_dir)?);
    let shutdown = CancellationToken::new();

    // The server's own pieces, wired as `server::run` wires them.
    let (failures_tx, failures_rx) = tokio::sync::mpsc::unbounded_channel();
    let (writer, writer_task) = Writer::spawn(store.clone(), failures_tx);
    let recorder = EventRecorder::new(writer.clone(), "default-scheduler");
    let scheduling = SchedulingLoop::new(
        store.clone(),
        writer.clone(),
        failures_rx,
        recorder,
        Profiles::default(),
        options.seed,
    );
    let latency = scheduling.attempt_latency();
    let counter = Arc::new(BindCounter::default());
    let follower = tokio::spawn(counter.clone().follow(
        Informer::new("bind counter", store.clone(), &[Kind::Pod]),
        shutdown.clone(),
    ));
    let loop_thread = scheduling.spawn(shutdown.clone());

    let result = drive(workload, options, &store, &counter, &latency, &shutdown).await;

    shutdown.cancel();
    let _ = tokio::task::spawn_blocking(move || loop_thread.join()).await;
    let _ = follower.await;
    drop(writer);
    let _ = writer_task.await;
    result
}

/// The phases of a run, once the scheduler is up.
async fn drive(
    workload: &Workload,
    options: &RunOptions,
    store: &Arc<dyn ObjectStore>,
    counter: &Arc<BindCounter>,
    latency: &Arc<LatencyHistogram>,
    shutdown: &CancellationToken,
) -> Result<Report, PerfError> {
    if workload.needs_priority_classes() {
        let classes = priority_classes()
            .into_iter()
            .map(Object::from)
            .collect::<Vec<_>>();
        create_all(store, classes, options.batch).await?;
    }
    create_all(store, workload.all_nodes().map(Object::from), options.batch).await?;

    let (init, waited) = workload.initial_objects();
    let init_pods = init.len();
    create_all(store, init, options.batch).await?;
    if !wait_until(options.timeout, || counter.other() >= waited).await {
        return Err(PerfError::Timeout {
            phase: "initial pods",
            bound: counter.other(),
            expected: waited,
            timeout: options.timeout,
        });
    }

    // Measured phase: from the first measured pod's creation to the last one's bind.
    latency.reset();
    let start = Instant::now();
    let background = shutdown.child_token();
    let deletion_task = workload.deletion.map(|d| {
        tokio::spawn(delete_pods(
            store.clone(),
            workload.clone(),
            d,
            background.clone(),
        ))
    });
    let churn_task = workload
        .churn
        .map(|c| tokio::spawn(churn(store.clone(), c, background.clone())));
    let creator = {
        let store = store.clone();
        let batch = options.batch;
        let workload = workload.clone();
        tokio::spawn(async move {
            create_all(&store, workload.measured_objects(), batch).await?;
            Ok::<Duration, PerfError>(start.elapsed())
        })
    };
    let target = workload.measured.count;
    let (samples, elapsed, complete) =
        sample_until(start, target, options.timeout, || counter.measured()).await;
    let attempts = latency_of(latency);
    let mut notes = vec![
        "latency: scheduling attempts of the measured phase, in the loop (cycle, assume, hand-off to the writer)".to_string(),
    ];
    background.cancel();
    if let Some(task) = churn_task {
        let ticks = task.await??;
        notes.push(churn_note(workload, ticks));
    }
    if let Some(task) = deletion_task {
        let deleted = task.await??;
        notes.push(format!("{deleted} initial pods deleted while measuring"));
    }
    let created_in = creator.await??;
    notes.push(format!(
        "measured pods created in {:.2}s ({} per transaction)",
        created_in.as_secs_f64(),
        options.batch
    ));
    if !complete {
        return Err(PerfError::Timeout {
            phase: "measured pods",
            bound: counter.measured(),
            expected: target,
            timeout: options.timeout,
        });
    }
    Ok(Report {
        workload: workload.name.to_string(),
        mode: Mode::InProcess,
        nodes: workload.total_nodes(),
        init_pods,
        measured_pods: target,
        duration_seconds: elapsed.as_secs_f64(),
        throughput: Throughput::new(samples, target, elapsed),
        latency_ms: attempts,
        peak_rss_bytes: peak_rss_bytes(None).unwrap_or(0),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::workloads::WorkloadName;

    /// Every workload runs end to end at a tiny size (a smoke test of the harness, not a
    /// measurement): near kube's own `integration-test` variants, with what each report must
    /// say.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tiny_workloads_complete() {
        struct Case {
            name: WorkloadName,
            nodes: usize,
            init_pods: Option<usize>,
            pods: usize,
            want_nodes: usize,
            want_note: Option<&'static str>,
        }
        let case = |name, nodes, init_pods, pods, want_nodes, want_note| Case {
            name,
            nodes,
            init_pods,
            pods,
            want_nodes,
            want_note,
        };
        use WorkloadName as W;
        // 30 nodes leave room for one anti-affinity pod or one preemptor per node. Few
        // preemptors: each waits out a back-off after preempting.
        let mut cases = vec![
            case(W::PreemptionBasic, 30, None, 2, 30, None),
            case(W::Unschedulable, 30, None, 20, 30, Some("churn: ")),
            case(
                W::SchedulingWithMixedChurn,
                10,
                None,
                100,
                10,
                Some("churn: "),
            ),
            case(W::SchedulingDaemonset, 5, None, 10, 6, None),
            case(W::PreemptionAsync, 5, None, 5, 5, Some("churn: ")),
            case(W::SchedulingWhileGated, 0, Some(30), 10, 1, Some("deleted")),
            case(W::SchedulingWithExtendedResource, 11, None, 10, 11, None),
        ];
        for name in WorkloadName::ALL {
            if !cases.iter().any(|c| c.name == name) {
                cases.push(case(name, 30, None, 20, 30, None));
            }
        }
        for case in cases {
            let name = case.name;
            let mut workload = Workload::new(name).with_nodes(case.nodes);
            if let Some(init) = case.init_pods {
                workload = workload.with_init_pods(init);
            }
            let workload = workload.with_measured_pods(case.pods);
            if matches!(
                check_profile(&workload),
                Err(PerfError::MissingPlugin { .. })
            ) {
                continue;
            }
            let dir = tempfile::tempdir().expect("temporary folder");
            let mut options = RunOptions::new(dir.path().join("store"));
            options.timeout = Duration::from_secs(60);
            let report = run_in_process(&workload, &options)
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(report.measured_pods, case.pods, "{name}");
            assert_eq!(report.nodes, case.want_nodes, "{name}");
            assert!(report.throughput.average > 0.0, "{name}");
            assert!(
                report.latency_ms.attempts >= case.pods as u64,
                "{name}: {report:?}"
            );
            assert!(report.peak_rss_bytes > 0, "{name}");
            if let Some(note) = case.want_note {
                assert!(
                    report.notes.iter().any(|n| n.contains(note)),
                    "{name}: no note with {note:?} in {:?}",
                    report.notes
                );
            }
        }
    }

    /// A workload that cannot complete at the sizes asked for is refused before it starts.
    #[test]
    fn impossible_sizes_are_refused() {
        let workload = Workload::new(WorkloadName::SchedulingWithExtendedResource)
            .with_nodes(3)
            .with_measured_pods(4);
        let err = check_profile(&workload).expect_err("4 pods need 4 nodes");
        assert!(err.to_string().contains("foo.com/bar-3"), "{err}");
    }
}
