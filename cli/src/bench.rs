//! `berth bench WORKLOAD`: kube-scheduler's scheduler_perf workloads, measured. In process
//! (the default) it drives the server's own scheduling loop over a real store in this
//! process; with `--e2e` it starts `berth scheduler` as a child process, registers the nodes
//! through simulated agents that hold real session streams and acknowledge every pod they are
//! sent with a Running status, applies the pods over gRPC in batches, and counts binds from
//! a watch.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use berth_proto::model::{NodeCondition, Object, PodPhase, PodStatus, Time};
use berth_proto::names;
use berth_proto::pb::agent_client::AgentClient;
use berth_proto::{pb, wire};
use berth_scheduler::perf::report::{peak_rss_bytes, Latency, Mode, Report, Throughput};
use berth_scheduler::perf::runner::{check_profile, churn_note, sample_until};
use berth_scheduler::perf::workloads::{
    is_measured, priority_classes, Churn, Deletion, Workload, WorkloadName, MEASURED_NAMESPACE,
};
use berth_scheduler::perf::RunOptions;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, Semaphore};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::transport::{Channel, Endpoint};

mod ab;

/// Simulated agents per gRPC connection (HTTP/2 servers cap concurrent streams).
const SESSIONS_PER_CONNECTION: usize = 100;
/// Registrations in flight at once.
const REGISTER_CONCURRENCY: usize = 64;
/// Seconds between heartbeats of a simulated agent (the scheduler asks for 10).
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);
/// How long the scheduler may take to come up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How the report is printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BenchOutput {
    /// A short summary.
    #[default]
    Text,
    /// One JSON object.
    Json,
}

/// Flags of `berth bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// The workload, by kube's scheduler_perf name: SchedulingBasic, SchedulingPodAntiAffinity,
    /// SchedulingPodAffinity, SchedulingPreferredPodAffinity,
    /// SchedulingPreferredPodAntiAffinity, SchedulingNodeAffinity, TopologySpreading,
    /// PreemptionBasic, Unschedulable, SchedulingWithMixedChurn (alias MixedChurn),
    /// SchedulingDaemonset, PreemptionAsync, SchedulingWhileGated,
    /// SchedulingWithExtendedResource, SchedulingWithResourceClaimTemplate,
    /// SchedulingWithResourceClaim.
    pub workload: WorkloadName,
    /// Number of nodes (the initial pods scale with it).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Number of initial pods (with several initial groups, each keeps its share).
    #[arg(long)]
    pub init_pods: Option<usize>,
    /// Number of measured pods.
    #[arg(long)]
    pub pods: Option<usize>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = BenchOutput::Text)]
    pub output: BenchOutput,
    /// Run end to end: the scheduler as a process, pods over gRPC, agents over streams.
    #[arg(long)]
    pub e2e: bool,
    /// Seed of the scheduler's tie-breaking.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Objects per store transaction (in process) or per Apply call (end to end; at most
    /// 128, etcd's operations per transaction, with an etcd `--store`).
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
    /// Longest wait for each phase to complete.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Folder for the store (and the scheduler's log); a temporary folder when left out.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Compare with another Berth binary: this one (A) and that one (B) run the workload
    /// alternately, each as a child process, and the medians and the ratio B/A are reported.
    #[arg(long, value_name = "OTHER_BERTH_BINARY")]
    pub ab: Option<PathBuf>,
    /// Rounds of the comparison (one run of each binary per round).
    #[arg(long, default_value_t = 5, requires = "ab")]
    pub rounds: usize,
    /// With --e2e: the scheduler's `--store` (`etcd://HOST:PORT,...`) instead of the
    /// embedded store in the data folder.
    #[arg(long, requires = "e2e")]
    pub store: Option<String>,
}

/// Runs the benchmark (or, with `--ab`, the comparison) and prints its report on stdout.
pub async fn run(args: BenchArgs) -> Result<()> {
    if let Some(other) = &args.ab {
        return ab::run(&args, other, args.rounds).await;
    }
    let mut workload = Workload::new(args.workload);
    if let Some(nodes) = args.nodes {
        if nodes == 0 {
            bail!("--nodes: must be at least 1");
        }
        workload = workload.with_nodes(nodes);
    }
    if let Some(pods) = args.init_pods {
        workload = workload.with_init_pods(pods);
    }
    if let Some(pods) = args.pods {
        workload = workload.with_measured_pods(pods);
    }
    check_profile(&workload)?;
    let temp = match &args.data_dir {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("berth-bench-")
                .tempdir()
                .context("creating a temporary data folder")?,
        ),
    };
    let dir = args
        .data_dir
        .clone()
        .or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()))
        .expect("a data folder is given or created");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let report = if args.e2e {
        if workload.name == WorkloadName::SchedulingWithResourceClaimTemplate {
            bail!(
                "{}: in process only (its pods come with the claims kube's claim controller would make for them)",
                workload.name
            );
        }
        run_e2e(&workload, &args, &dir).await?
    } else {
        let mut options = RunOptions::new(dir.join("store"));
        options.seed = args.seed;
        options.batch = args.batch;
        options.timeout = args.timeout;
        berth_scheduler::perf::run_in_process(&workload, &options).await?
    };
    match args.output {
        BenchOutput::Text => print!("{report}"),
        BenchOutput::Json => println!("{}", serde_json::to_string(&report)?),
    }
    Ok(())
}

/// Counts first binds seen on a watch, measured pods apart.
#[derive(Default)]
struct Binds {
    measured: AtomicUsize,
    other: AtomicUsize,
}

impl Binds {
    fn observe(&self, object: Object, seen: &mut HashSet<String>) {
        let Object::Pod(pod) = object else { return };
        if pod.spec.node_name.is_empty() || !seen.insert(pod.metadata.uid.clone()) {
            return;
        }
        let counter = if is_measured(&pod) {
            &self.measured
        } else {
            &self.other
        };
        counter.fetch_add(1, Ordering::AcqRel);
    }
}

/// Names a program that `--e2e` starts the scheduler under, as `WRAPPER BERTH scheduler ...`
/// (a profiler's launcher that execs its arguments).
const WRAPPER_ENV: &str = "BERTH_BENCH_SCHEDULER_WRAPPER";

/// The scheduler child process, where it logs and where it serves its metrics.
struct Scheduler {
    child: Child,
    log: PathBuf,
    metrics: String,
}

impl Scheduler {
    fn start(dir: &Path, listen: &str, seed: u64, store: Option<&str>) -> Result<Self> {
        let exe = std::env::current_exe().context("finding the berth executable")?;
        let log = dir.join("scheduler.log");
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let metrics = free_address()?;
        // A profiler to start the scheduler under (it must exec the command it is given, so
        // that the child's pid, peak RSS and SIGTERM stay the scheduler's).
        let mut command = match std::env::var_os(WRAPPER_ENV).filter(|w| !w.is_empty()) {
            Some(wrapper) => {
                let mut command = Command::new(wrapper);
                command.arg(exe);
                command
            }
            None => Command::new(exe),
        };
        let child = command
            .args(["scheduler", "--listen", listen, "--seed", &seed.to_string()])
            .args(["--metrics-listen", &metrics])
            .arg("--data-dir")
            .arg(dir.join("store"))
            .args(store.map(|url| ["--store", url]).into_iter().flatten())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .env_remove("BERTH_TOKEN_FILE")
            .env_remove("BERTH_LISTEN")
            .env_remove("BERTH_DATA_DIR")
            .env_remove("BERTH_METRICS_LISTEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(out))
            .kill_on_drop(true)
            .spawn()
            .context("starting berth scheduler")?;
        Ok(Scheduler {
            child,
            log,
            metrics,
        })
    }

    /// The attempt latency so far, from the scheduler's `/metrics`.
    async fn latency(&self) -> Result<Latency> {
        let addr = self.metrics.clone();
        let (status, text) =
            tokio::task::spawn_blocking(move || crate::scrape::get(&addr, "/metrics", None))
                .await?
                .with_context(|| format!("scraping http://{}/metrics", self.metrics))?;
        if status != 200 {
            bail!("http://{}/metrics answered {status}: {text}", self.metrics);
        }
        latency_from_metrics(&text)
            .with_context(|| format!("no {ATTEMPT_SUMMARY} in http://{}/metrics", self.metrics))
    }

    /// Stops the scheduler with SIGTERM and waits for it to exit.
    async fn stop(mut self) -> Result<()> {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on a child we spawned and have not reaped; no memory involved.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
        if tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
            bail!("the scheduler did not stop within 30s");
        }
        Ok(())
    }
}

/// The attempt latency summary the scheduler exports.
const ATTEMPT_SUMMARY: &str = berth_scheduler::metrics::ATTEMPT_DURATION_SUMMARY;

/// Median, 99th percentile (ms) and count of [`ATTEMPT_SUMMARY`] in a scrape.
fn latency_from_metrics(text: &str) -> Option<Latency> {
    let quantile =
        |q: &str| crate::scrape::sample(text, &format!("{ATTEMPT_SUMMARY}{{quantile=\"{q}\"}}"));
    Some(Latency {
        p50: quantile("0.5")? * 1e3,
        p99: quantile("0.99")? * 1e3,
        attempts: crate::scrape::sample(text, &format!("{ATTEMPT_SUMMARY}_count"))? as u64,
    })
}

fn free_address() -> Result<String> {
    let addr = berth_proto::ports::spare_loopback_address().context("finding a free port")?;
    Ok(addr.to_string())
}

async fn channel(server: &str) -> Result<Channel> {
    Ok(Endpoint::from_shared(server.to_string())?
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await?)
}

/// Applies objects over gRPC, `batch` per call, taking them from the iterator one batch at
/// a time.
async fn apply_all(
    api: &mut crate::client::Api,
    objects: impl IntoIterator<Item = Object, IntoIter: Send>,
    batch: usize,
) -> Result<()> {
    let mut objects = objects.into_iter().peekable();
    while objects.peek().is_some() {
        let chunk: Vec<pb::Object> = objects
            .by_ref()
            .take(batch.max(1))
            .map(|o| wire::object_to_pb(&o))
            .collect();
        api.apply(pb::ApplyRequest {
            objects: chunk,
            dry_run: false,
        })
        .await
        .context("applying objects")?;
    }
    Ok(())
}

/// The status a simulated agent reports for a pod it was told to start, as JSON.
fn running_status() -> String {
    let status = PodStatus {
        phase: PodPhase::Running,
        start_time: Some(Time::now()),
        ..PodStatus::default()
    };
    wire::to_json(&status)
}

fn ready_condition() -> NodeCondition {
    let now = Time::now();
    NodeCondition {
        type_: names::CONDITION_READY.into(),
        status: names::STATUS_TRUE.into(),
        reason: "KubeletReady".into(),
        message: "simulated agent is posting ready status".into(),
        last_heartbeat_time: Some(now),
        last_transition_time: Some(now),
    }
}

/// One simulated agent: registers its node, opens its session with Hello and a heartbeat,
/// then acknowledges every StartPod with a Running status and heartbeats, until its stream
/// ends or its task is aborted.
async fn simulated_agent(
    channel: Channel,
    mut node: berth_proto::model::Node,
    registering: Arc<Semaphore>,
    connected: Arc<AtomicUsize>,
) -> Result<()> {
    let name = node.metadata.name.clone();
    let mut client = AgentClient::new(channel);
    {
        let _permit = registering.acquire().await?;
        node.status.conditions.push(ready_condition());
        client
            .register(pb::RegisterRequest {
                node: Some(wire::node_to_pb(&node)),
                ..Default::default()
            })
            .await
            .with_context(|| format!("registering {name}"))?;
    }
    let (tx, rx) = mpsc::channel::<pb::AgentMessage>(64);
    let up = |msg| pb::AgentMessage { msg: Some(msg) };
    tx.send(up(pb::agent_message::Msg::Hello(pb::Hello {
        node_name: name.clone(),
        running_pod_uids: Vec::new(),
    })))
    .await?;
    let heartbeat = || {
        up(pb::agent_message::Msg::Heartbeat(pb::Heartbeat {
            node_name: name.clone(),
            conditions_json: wire::to_json(&[ready_condition()]),
            ..Default::default()
        }))
    };
    tx.send(heartbeat()).await?;
    let mut down = client
        .session(ReceiverStream::new(rx))
        .await
        .with_context(|| format!("opening the session of {name}"))?
        .into_inner();
    connected.fetch_add(1, Ordering::AcqRel);
    let mut ticker = tokio::time::interval(HEARTBEAT_INTERVAL);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                if tx.send(heartbeat()).await.is_err() {
                    return Ok(());
                }
            }
            msg = down.next() => {
                let Some(msg) = msg else { return Ok(()) };
                let msg = match msg {
                    Ok(msg) => msg,
                    // The scheduler stopping ends the stream with an error; that is the end.
                    Err(_) => return Ok(()),
                };
                if let Some(pb::scheduler_message::Msg::StartPod(start)) = msg.msg {
                    let Some(pod) = start.pod else { continue };
                    let meta = wire::Identity::read(&pod);
                    let update = pb::PodStatusUpdate {
                        namespace: meta.namespace,
                        name: meta.name,
                        uid: meta.uid,
                        status_json: running_status(),
                    };
                    if tx.send(up(pb::agent_message::Msg::PodStatus(update))).await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// kube's churn op end to end: every interval creates the churn's pod (and node, through a
/// simulated agent), or in recreate mode deletes what the previous tick created; counts
/// ticks in `ticks`. Runs until aborted.
async fn churn_e2e(
    mut api: crate::client::Api,
    channel: Channel,
    churn: Churn,
    ticks: Arc<AtomicUsize>,
) -> Result<()> {
    let mut agent: Option<AbortOnDrop> = None;
    let mut timer = tokio::time::interval(churn.interval);
    timer.tick().await;
    loop {
        timer.tick().await;
        let tick = ticks.load(Ordering::Acquire);
        if churn.creates(tick) {
            if churn.node {
                let agent_channel = channel.clone();
                let node = Churn::node_at(tick);
                agent = Some(AbortOnDrop(tokio::spawn(async move {
                    let _ = simulated_agent(
                        agent_channel,
                        node,
                        Arc::new(Semaphore::new(1)),
                        Arc::new(AtomicUsize::new(0)),
                    )
                    .await;
                })));
            }
            apply_all(&mut api, vec![Object::Pod(Box::new(churn.pod_at(tick)))], 1).await?;
        } else {
            let made = tick - 1;
            let mut doomed = vec![(pb::Kind::Pod, MEASURED_NAMESPACE, Churn::pod_name(made))];
            if churn.node {
                // The node's agent goes with its node.
                drop(agent.take());
                doomed.push((pb::Kind::Node, "", Churn::node_name(made)));
            }
            for (kind, namespace, name) in doomed {
                delete_e2e(&mut api, kind, namespace, name).await?;
            }
        }
        ticks.fetch_add(1, Ordering::AcqRel);
    }
}

/// Deletes one object over gRPC.
async fn delete_e2e(
    api: &mut crate::client::Api,
    kind: pb::Kind,
    namespace: &str,
    name: String,
) -> Result<()> {
    api.delete(pb::DeleteRequest {
        kind: kind as i32,
        namespace: namespace.into(),
        name,
        resource_version: String::new(),
    })
    .await
    .context("deleting a churned or deleted object")?;
    Ok(())
}

/// kube's deletePods op end to end: deletes the group's pods in creation order at the
/// deletion's rate; counts them in `deleted`. Runs until done or aborted.
async fn delete_pods_e2e(
    mut api: crate::client::Api,
    workload: Workload,
    deletion: Deletion,
    deleted: Arc<AtomicUsize>,
) -> Result<()> {
    let group = workload.init[deletion.group].0;
    let mut timer = tokio::time::interval(Duration::from_secs(1) / deletion.per_second.max(1));
    for i in 0..group.count {
        timer.tick().await;
        delete_e2e(&mut api, pb::Kind::Pod, group.namespace, group.pod_name(i)).await?;
        deleted.fetch_add(1, Ordering::AcqRel);
    }
    Ok(())
}

/// A task aborted when this handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits until `pending()` says nothing is pending (`Ok(None)`), fails at once on its error,
/// or fails at the deadline with its last progress message.
async fn wait_until(
    timeout: Duration,
    what: &str,
    mut pending: impl FnMut() -> Result<Option<String>>,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let Some(progress) = pending()? else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            bail!("{what}: not done after {timeout:?} ({progress})");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Objects per Apply call end to end: `--batch`, and on an etcd store at most the
/// operations etcd takes in one transaction (an Apply is one, all or nothing).
fn apply_batch(args: &BenchArgs) -> usize {
    match &args.store {
        Some(url) if url.starts_with("etcd://") => args.batch.min(berth_store::MAX_TXN_OPS),
        _ => args.batch,
    }
}

async fn run_e2e(workload: &Workload, args: &BenchArgs, dir: &Path) -> Result<Report> {
    let listen = free_address()?;
    let server = format!("http://{listen}");
    let scheduler = Scheduler::start(dir, &listen, args.seed, args.store.as_deref())?;
    let result = drive_e2e(workload, args, &server, &scheduler).await;
    match result {
        Ok((mut report, rss)) => {
            let latency = scheduler.latency().await;
            scheduler.stop().await?;
            report.latency_ms = latency?;
            report.peak_rss_bytes = rss;
            Ok(report)
        }
        Err(e) => {
            let log = scheduler.log.clone();
            let _ = scheduler.stop().await;
            Err(e.context(format!("scheduler log: {}", log.display())))
        }
    }
}

async fn drive_e2e(
    workload: &Workload,
    args: &BenchArgs,
    server: &str,
    scheduler: &Scheduler,
) -> Result<(Report, u64)> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let mut api = loop {
        match crate::client::connect(server).await {
            Ok(api) => break api,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.context("the scheduler did not come up")),
        }
    };
    // Every task of the run (watch, agents) is aborted when `tasks` drops.
    let mut tasks: Vec<AbortOnDrop> = Vec::new();

    // Bound pods, from a watch opened before any pod exists.
    let binds = Arc::new(Binds::default());
    let mut watch = api
        .watch(pb::WatchRequest {
            kind: pb::Kind::Pod as i32,
            ..Default::default()
        })
        .await
        .context("watching pods")?
        .into_inner();
    {
        let binds = binds.clone();
        tasks.push(AbortOnDrop(tokio::spawn(async move {
            let mut seen = HashSet::new();
            loop {
                let Some(Ok(event)) = watch.next().await else {
                    return;
                };
                if let Some(object) = event.object {
                    if let Ok(object) = wire::object_from_pb(&object) {
                        binds.observe(object, &mut seen);
                    }
                }
            }
        })));
    }

    if workload.needs_priority_classes() {
        let classes = priority_classes()
            .into_iter()
            .map(Object::from)
            .collect::<Vec<_>>();
        apply_all(&mut api, classes, apply_batch(args)).await?;
    }

    // Nodes, through simulated agents.
    let total_nodes = workload.total_nodes();
    let connections = total_nodes.div_ceil(SESSIONS_PER_CONNECTION).max(1);
    let mut channels = Vec::with_capacity(connections);
    for _ in 0..connections {
        channels.push(channel(server).await?);
    }
    let registering = Arc::new(Semaphore::new(REGISTER_CONCURRENCY));
    let agent_errors = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let connected = Arc::new(AtomicUsize::new(0));
    for (i, node) in workload.all_nodes().enumerate() {
        let channel = channels[i % connections].clone();
        let registering = registering.clone();
        let errors = agent_errors.clone();
        let connected = connected.clone();
        tasks.push(AbortOnDrop(tokio::spawn(async move {
            if let Err(e) = simulated_agent(channel, node, registering, connected).await {
                errors
                    .lock()
                    .expect("agent error list lock")
                    .push(format!("{e:#}"));
            }
        })));
    }
    wait_until(args.timeout, "registering nodes", || {
        if let Some(e) = agent_errors.lock().expect("agent error list lock").first() {
            bail!("an agent failed: {e}");
        }
        let n = connected.load(Ordering::Acquire);
        Ok((n < total_nodes).then(|| format!("{n} of {total_nodes} sessions open")))
    })
    .await?;

    // Initial pods, waited for.
    let (init, waited) = workload.initial_objects();
    let init_pods = init.len();
    apply_all(&mut api, init, apply_batch(args)).await?;
    wait_until(args.timeout, "initial pods", || {
        let bound = binds.other.load(Ordering::Acquire);
        Ok((bound < waited).then(|| format!("{bound} of {waited} bound")))
    })
    .await?;

    // Measured phase.
    let start = Instant::now();
    let ticks = Arc::new(AtomicUsize::new(0));
    let deleted = Arc::new(AtomicUsize::new(0));
    let deletion = workload.deletion.map(|d| {
        tokio::spawn(delete_pods_e2e(
            api.clone(),
            workload.clone(),
            d,
            deleted.clone(),
        ))
    });
    let churn = workload.churn.map(|c| {
        tokio::spawn(churn_e2e(
            api.clone(),
            channels[0].clone(),
            c,
            ticks.clone(),
        ))
    });
    let creator = {
        let mut api = api.clone();
        let batch = apply_batch(args);
        let workload = workload.clone();
        tokio::spawn(async move { apply_all(&mut api, workload.measured_objects(), batch).await })
    };
    let target = workload.measured.count;
    let (samples, elapsed, complete) = sample_until(start, target, args.timeout, || {
        binds.measured.load(Ordering::Acquire)
    })
    .await;
    let rss = peak_rss_bytes(scheduler.child.id()).unwrap_or(0);
    let mut notes = vec![
        format!("latency: the scheduling attempts of the run's last 5 minutes (initial and measured pods), from the scheduler's /metrics ({ATTEMPT_SUMMARY})"),
        "peak RSS: the scheduler process".to_string(),
    ];
    if let Some(task) = churn {
        if task.is_finished() {
            // It runs until aborted: finishing means it failed.
            task.await??;
        } else {
            task.abort();
        }
        notes.push(churn_note(workload, ticks.load(Ordering::Acquire)));
    }
    if let Some(task) = deletion {
        if task.is_finished() {
            task.await??;
        } else {
            task.abort();
        }
        notes.push(format!(
            "{} initial pods deleted while measuring",
            deleted.load(Ordering::Acquire)
        ));
    }
    creator.await??;
    if !complete {
        bail!(
            "measured pods: only {} of {target} bound after {:?}",
            binds.measured.load(Ordering::Acquire),
            args.timeout
        );
    }
    Ok((
        Report {
            workload: workload.name.to_string(),
            mode: Mode::EndToEnd,
            nodes: total_nodes,
            init_pods,
            measured_pods: target,
            duration_seconds: elapsed.as_secs_f64(),
            throughput: Throughput::new(samples, target, elapsed),
            latency_ms: Latency::default(),
            peak_rss_bytes: 0,
            notes,
        },
        rss,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apply_on_etcd_holds_no_more_than_a_transaction_takes() {
        // (flags after `berth bench SchedulingBasic`, objects per Apply call)
        let cases: &[(&[&str], usize)] = &[
            (&["--e2e"], 500),
            (&["--e2e", "--batch", "1000"], 1000),
            (&["--e2e", "--store", "etcd://127.0.0.1:2379"], 128),
            (
                &["--e2e", "--store", "etcd://127.0.0.1:2379", "--batch", "50"],
                50,
            ),
        ];
        for (flags, want) in cases {
            let argv = ["berth", "bench", "SchedulingBasic"].iter().chain(*flags);
            let cli = <crate::Cli as clap::Parser>::try_parse_from(argv).expect("valid flags");
            let crate::Command::Bench(args) = cli.command else {
                panic!("not bench: {flags:?}");
            };
            assert_eq!(apply_batch(&args), *want, "{flags:?}");
        }
    }

    #[test]
    fn latency_from_the_scrape() {
        let scrape = "# TYPE berth_scheduling_attempt_duration_seconds summary\nberth_scheduling_attempt_duration_seconds{quantile=\"0.5\"} 0.00004\nberth_scheduling_attempt_duration_seconds{quantile=\"0.9\"} 0.0009\nberth_scheduling_attempt_duration_seconds{quantile=\"0.99\"} 0.0015\nberth_scheduling_attempt_duration_seconds_sum 0.01\nberth_scheduling_attempt_duration_seconds_count 12\n";
        let cases = [
            (
                "the summary",
                scrape,
                Some(Latency {
                    p50: 0.04,
                    p99: 1.5,
                    attempts: 12,
                }),
            ),
            ("no attempt yet", "# nothing\n", None),
        ];
        for (name, text, want) in cases {
            let got = latency_from_metrics(text);
            match (&got, &want) {
                (Some(g), Some(w)) => {
                    assert!(
                        (g.p50 - w.p50).abs() < 1e-9 && (g.p99 - w.p99).abs() < 1e-9,
                        "{name}: {got:?}"
                    );
                    assert_eq!(g.attempts, w.attempts, "{name}");
                }
                _ => assert_eq!(got, want, "{name}"),
            }
        }
    }
}
