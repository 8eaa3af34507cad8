//! One lab run: the simulator's engine ([`crate::sim::engine::Engine`], the live loop's
//! `schedule_one` with a virtual clock) driven over time by a workload (an OpenB trace in the
//! artifact's order or in trace time, or scenario steps over manifests), with a [`Sample`]
//! of the cluster after every arrival or every interval.
//!
//! OpenB in Kubernetes terms (lab.md): each GPU node is a Node plus a node-local
//! ResourceSlice of its GPUs (driver `gpu.berth.dev`, attribute `model`, a shareable
//! capacity `milli` of 1000), each task a Pod with cpu and memory requests and, when it asks
//! for GPUs, a ResourceClaim: k whole GPUs (`milli: 1000` each), or a share of one GPU;
//! gpu_spec becomes a CEL selector on the model.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use berth_model::model::{Object, DEFAULT_NAMESPACE};
use serde_json::json;

pub use super::objects::{openb_cluster, task_objects, TaskObjects};

use super::experiment::{ArrivalMode, Every, ObjectRef, TieBreak as FileTieBreak};
use super::openb::{artifact_arrivals, trace_arrivals, TraceTask, MILLI_GPU};
use super::summary::{RunResult, Sample};
use crate::framework::{Snapshot, TieBreak};
use crate::gpushare::GPU_DRIVER;
use crate::gpushare::{Ask, NodeGpus, Policy, TargetWorkload};
use crate::plugins::gpu_share;
use crate::profile::Profiles;
use crate::sim::engine::{Engine, SimEvent};
use crate::sim::input::Catalog;
use crate::sim::{SimError, SimOptions};

/// What every run of an experiment shares: the cluster's objects and the workload.
#[derive(Clone, Debug)]
pub struct LabSetup {
    /// Nodes, ResourceSlices, DeviceClasses, namespaces, priority classes, bound pods...
    pub cluster: Vec<Object>,
    /// What arrives.
    pub workload: LabWorkload,
    /// When samples are taken.
    pub every: Every,
    /// Whether to compute fragmentation.
    pub fragmentation: bool,
}

/// The workload of a run.
#[derive(Clone, Debug)]
pub enum LabWorkload {
    /// An OpenB task list.
    Openb {
        /// The tasks, as read.
        tasks: Vec<TraceTask>,
        /// Their arrival order.
        mode: ArrivalMode,
        /// The artifact's order: copies until this share of the GPU capacity, in percent.
        fill_percent: u64,
        /// The target workload's coverage of the tasks, in percent.
        coverage_percent: u64,
    },
    /// Scenario steps over objects.
    Steps {
        /// In time order.
        steps: Vec<LabStep>,
        /// How long the run lasts (default: the last step's time).
        duration: Option<Duration>,
    },
}

/// One scenario step, its files read.
#[derive(Clone, Debug)]
pub struct LabStep {
    /// When.
    pub at: Duration,
    /// Objects created (or replaced).
    pub create: Vec<Object>,
    /// Objects deleted.
    pub delete: Vec<ObjectRef>,
    /// Merge patches.
    pub patch: Vec<(ObjectRef, serde_json::Value)>,
    /// Nodes cordoned.
    pub cordon: Vec<String>,
    /// Nodes uncordoned.
    pub uncordon: Vec<String>,
    /// Nodes drained.
    pub drain: Vec<String>,
    /// Nodes removed.
    pub remove_node: Vec<String>,
}

/// A run that could not go on.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The cluster's objects are not acceptable.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A policy name that is no built-in one.
    #[error("no built-in policy named {0:?}")]
    UnknownPolicy(String),
    /// A built-in profile did not build (a bug).
    #[error("building the {policy} profile: {message}")]
    Profile {
        /// The policy.
        policy: String,
        /// What failed.
        message: String,
    },
    /// A step names an object that does not exist, or cannot apply.
    #[error("step at {at:?}: {message}")]
    Step {
        /// The step's time.
        at: Duration,
        /// What went wrong.
        message: String,
    },
}

/// The target workload of a task list: its shapes covering `coverage_percent` of tasks.
pub fn target_workload(tasks: &[TraceTask], coverage_percent: u64) -> TargetWorkload {
    let asks: Vec<Ask> = tasks.iter().map(TraceTask::ask).collect();
    TargetWorkload::from_asks(asks.iter(), coverage_percent as f64 / 100.0)
}

/// A built-in policy's profiles, as the paper's artifact configures its scheduler: every
/// node scored (percentageOfNodesToScore 100), the policy the only score plugin, the default
/// filters with DynamicResources, no preemption (every task has the same priority); FGD's
/// target workload from the setup's trace. `default` is kube's default profile.
pub fn builtin_profiles(name: &str, setup: &LabSetup) -> Result<Profiles, LabError> {
    if name == super::experiment::DEFAULT_POLICY {
        return Ok(Profiles::default());
    }
    let policy =
        Policy::from_name(name).ok_or_else(|| LabError::UnknownPolicy(name.to_string()))?;
    let mut args = serde_json::Map::new();
    if policy.uses_target() {
        let target = match &setup.workload {
            LabWorkload::Openb {
                tasks,
                coverage_percent,
                ..
            } => target_workload(tasks, *coverage_percent),
            LabWorkload::Steps { .. } => TargetWorkload::default(),
        };
        let shapes: Vec<serde_json::Value> = target
            .shapes
            .iter()
            .map(|(a, p)| json!({"cpuMilli": a.cpu_milli, "gpus": a.gpus, "gpuMilli": a.milli, "models": a.models, "weight": p}))
            .collect();
        args.insert("targetWorkload".into(), serde_json::Value::Array(shapes));
    }
    let config = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {
                "preScore": {"disabled": [{"name": "*"}], "enabled": [{"name": name}]},
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": name, "weight": 1000}]},
                "postFilter": {"disabled": [{"name": "*"}]},
            },
            "pluginConfig": [{"name": name, "args": args}],
        }]
    });
    let text = serde_json::to_string(&config).expect("json");
    let mut profiles = Profiles::from_yaml(&text).map_err(|e| LabError::Profile {
        policy: name.to_string(),
        message: e.to_string(),
    })?;
    if policy == Policy::Random {
        // Random draws its node afresh for every decision, whatever the experiment's ties.
        profiles = profiles.with_tie_break(TieBreak::Random);
    }
    Ok(profiles)
}

impl From<FileTieBreak> for TieBreak {
    fn from(t: FileTieBreak) -> Self {
        match t {
            FileTieBreak::Random => TieBreak::Random,
            FileTieBreak::Ranked => TieBreak::Ranked,
        }
    }
}

/// One node's share of the cluster's totals, as last measured.
#[derive(Clone, Debug, Default)]
struct NodeTotals {
    cpu_alloc: i64,
    cpu_used: i64,
    memory_alloc: i64,
    memory_used: i64,
    gpu_capacity: u64,
    gpu_idle: u64,
    frag: f64,
}

/// The cluster's totals, kept current by re-measuring only the nodes that changed.
struct Meter {
    driver: &'static str,
    target: Option<TargetWorkload>,
    nodes: HashMap<String, NodeTotals>,
    sum: NodeTotals,
}

impl Meter {
    fn new(snapshot: &Snapshot, target: Option<TargetWorkload>) -> Self {
        let mut meter = Meter {
            driver: GPU_DRIVER,
            target,
            nodes: HashMap::new(),
            sum: NodeTotals::default(),
        };
        let names: Vec<String> = snapshot
            .nodes()
            .iter()
            .map(|n| n.name().to_string())
            .collect();
        for name in names {
            meter.remeasure(snapshot, &name);
        }
        meter
    }

    /// Measures `node` again (it changed, appeared or went away).
    fn remeasure(&mut self, snapshot: &Snapshot, node: &str) {
        let now = snapshot.node(node).map(|info| {
            let view: NodeGpus = gpu_share::node_gpus(snapshot.dra(), info, self.driver).0;
            NodeTotals {
                cpu_alloc: info.allocatable.milli_cpu,
                cpu_used: info.requested.milli_cpu,
                memory_alloc: info.allocatable.memory,
                memory_used: info.requested.memory,
                gpu_capacity: view.free.len() as u64 * u64::from(MILLI_GPU),
                gpu_idle: view.idle(),
                frag: self.target.as_ref().map_or(0.0, |t| t.fragmentation(&view)),
            }
        });
        let old = match now {
            Some(t) => self.nodes.insert(node.to_string(), t.clone()),
            None => self.nodes.remove(node),
        };
        if let Some(old) = old {
            self.add(&old, -1);
        }
        if let Some(t) = self.nodes.get(node).cloned() {
            self.add(&t, 1);
        }
    }

    fn add(&mut self, t: &NodeTotals, sign: i64) {
        let s = &mut self.sum;
        s.cpu_alloc += sign * t.cpu_alloc;
        s.cpu_used += sign * t.cpu_used;
        s.memory_alloc += sign * t.memory_alloc;
        s.memory_used += sign * t.memory_used;
        s.gpu_capacity = (s.gpu_capacity as i64 + sign * t.gpu_capacity as i64) as u64;
        s.gpu_idle = (s.gpu_idle as i64 + sign * t.gpu_idle as i64) as u64;
        s.frag += sign as f64 * t.frag;
    }

    fn sample(&self, counts: &Counts, arrived_gpu_milli: u64, time_s: f64) -> Sample {
        let s = &self.sum;
        let pct = |a: f64, b: f64| if b > 0.0 { a * 100.0 / b } else { 0.0 };
        let allocated = s.gpu_capacity - s.gpu_idle;
        Sample {
            arrivals: counts.arrivals,
            time_s,
            arrived_gpu_pct: pct(arrived_gpu_milli as f64, s.gpu_capacity as f64),
            cpu_alloc_pct: pct(s.cpu_used as f64, s.cpu_alloc as f64),
            memory_alloc_pct: pct(s.memory_used as f64, s.memory_alloc as f64),
            gpu_alloc_milli: allocated,
            unallocated_gpu_pct: if s.gpu_capacity > 0 {
                100.0 - pct(allocated as f64, s.gpu_capacity as f64)
            } else {
                0.0
            },
            frag_milli: s.frag,
            frag_ratio: if s.gpu_idle > 0 {
                s.frag / s.gpu_idle as f64
            } else {
                0.0
            },
            pending: counts.pending,
            failed: counts.failed,
            scheduled: counts.scheduled,
            preemptions: counts.preemptions,
            evictions: counts.evictions,
        }
    }
}

#[derive(Default)]
struct Counts {
    arrivals: u64,
    pending: u64,
    failed: u64,
    scheduled: u64,
    preemptions: u64,
    evictions: u64,
}

impl Counts {
    /// Counts what the engine did; returns the nodes it touched.
    fn absorb(&mut self, events: &[SimEvent]) -> Vec<String> {
        let mut touched = Vec::new();
        for e in events {
            match e {
                SimEvent::Bound { node, .. } => {
                    self.scheduled += 1;
                    touched.push(node.clone());
                }
                SimEvent::Preempted { node, victims } => {
                    self.preemptions += 1;
                    self.evictions += *victims as u64;
                    touched.push(node.clone());
                }
                SimEvent::Removed { node } => touched.push(node.clone()),
            }
        }
        touched
    }
}

/// Runs `setup` once with `profiles` (the policy named `policy`) and `seed`.
pub fn run(
    setup: &LabSetup,
    policy: &str,
    profiles: Profiles,
    seed: u64,
) -> Result<RunResult, LabError> {
    let started = Instant::now();
    let catalog = Catalog::read(setup.cluster.clone(), seed)?;
    let options = SimOptions {
        seed,
        explain: false,
        profiles,
    };
    let mut engine = Engine::new(catalog, options)?;
    let samples = match &setup.workload {
        LabWorkload::Openb {
            tasks,
            mode,
            fill_percent,
            coverage_percent,
        } => {
            let target = setup
                .fragmentation
                .then(|| target_workload(tasks, *coverage_percent));
            run_openb(&mut engine, tasks, *mode, *fill_percent, target, seed)
        }
        LabWorkload::Steps { steps, duration } => run_steps(&mut engine, setup, steps, *duration)?,
    };
    Ok(RunResult {
        policy: policy.to_string(),
        seed,
        samples,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

fn run_openb(
    engine: &mut Engine,
    tasks: &[TraceTask],
    mode: ArrivalMode,
    fill_percent: u64,
    target: Option<TargetWorkload>,
    seed: u64,
) -> Vec<Sample> {
    let mut meter = Meter::new(engine.snapshot(), target);
    let capacity = meter.sum.gpu_capacity;
    let arrivals = match mode {
        ArrivalMode::Artifact => artifact_arrivals(tasks, capacity, fill_percent, seed),
        ArrivalMode::TraceTime => trace_arrivals(tasks),
    };
    let start = engine.now();
    let mut counts = Counts::default();
    let mut arrived_gpu = 0u64;
    let mut samples = Vec::with_capacity(arrivals.len());
    // Trace time: departures in time order, as (leaves, arrival) → (pod, its claim).
    let mut departures: BTreeMap<(u64, usize), (String, Option<String>)> = BTreeMap::new();
    // The objects of each shape of task (what they ask, not their names), built at the
    // shape's first arrival: traces repeat shapes, and the artifact's copies repeat tasks.
    let mut objects: HashMap<(u64, u64, u32, u32, &[String]), TaskObjects> = HashMap::new();
    for (i, arrival) in arrivals.iter().enumerate() {
        let task = &tasks[arrival.task];
        let name = format!("task-{i:05}-{}", task.name);
        let at = arrival.at.map(Duration::from_secs);
        if let Some(at) = at {
            // Departures due by now, then pending pods retried up to now.
            while let Some((&(leaves, j), _)) = departures.iter().next() {
                if Duration::from_secs(leaves) > at {
                    break;
                }
                let (pod, claim) = departures.remove(&(leaves, j)).expect("first");
                engine.advance(start + Duration::from_secs(leaves));
                let events = engine.delete_pod(DEFAULT_NAMESPACE, &pod);
                // The claim goes with its pod (kube's claim controller deletes a pod's
                // claims once it is gone), and its devices are free again.
                if let Some(claim) = claim {
                    engine.remove_claim(DEFAULT_NAMESPACE, &claim);
                }
                let touched = counts.absorb(&events);
                remeasure(&mut meter, engine.snapshot(), touched);
            }
            let events = engine.settle(Some(start + at));
            let touched = counts.absorb(&events);
            remeasure(&mut meter, engine.snapshot(), touched);
            engine.advance(start + at);
        }
        let shape = (
            task.cpu_milli,
            task.memory_mib,
            task.gpus,
            task.gpu_milli,
            task.gpu_spec.as_slice(),
        );
        let (pod, claim) = objects
            .entry(shape)
            .or_insert_with(|| TaskObjects::new(task))
            .named(&name);
        let uid = pod.metadata.uid.clone();
        if let Some(claim) = &claim {
            engine.add_claim(claim);
        }
        engine.add_pod(pod);
        counts.arrivals += 1;
        arrived_gpu += task.gpu_request();
        let events = engine.settle(at.map(|at| start + at));
        let bound = events
            .iter()
            .any(|e| matches!(e, SimEvent::Bound { uid: u, .. } if *u == uid));
        let touched = counts.absorb(&events);
        remeasure(&mut meter, engine.snapshot(), touched);
        match (mode, bound) {
            (ArrivalMode::Artifact, false) => {
                // The artifact never retries: the task has failed for good.
                engine.forget(&uid);
                if let Some(claim) = &claim {
                    engine.remove_claim(&claim.metadata.namespace, &claim.metadata.name);
                }
                counts.failed += 1;
            }
            (ArrivalMode::TraceTime, _) => {
                if let Some(leaves) = arrival.leaves {
                    let claim = claim.as_ref().map(|c| c.metadata.name.clone());
                    departures.insert((leaves, i), (name.clone(), claim));
                }
            }
            _ => {}
        }
        counts.pending = engine.pending() as u64;
        let time_s = at.map_or(i as f64, |a| a.as_secs_f64());
        samples.push(meter.sample(&counts, arrived_gpu, time_s));
    }
    samples
}

fn remeasure(meter: &mut Meter, snapshot: &Snapshot, mut touched: Vec<String>) {
    touched.sort();
    touched.dedup();
    for node in touched {
        meter.remeasure(snapshot, &node);
    }
}

fn run_steps(
    engine: &mut Engine,
    setup: &LabSetup,
    steps: &[LabStep],
    duration: Option<Duration>,
) -> Result<Vec<Sample>, LabError> {
    let mut meter = Meter::new(engine.snapshot(), None);
    let start = engine.now();
    let end = duration.unwrap_or_else(|| steps.last().map_or(Duration::ZERO, |s| s.at));
    let interval = match setup.every {
        Every::Interval(d) if !d.is_zero() => d,
        _ => Duration::from_secs(1),
    };
    let mut counts = Counts::default();
    let mut samples = Vec::new();
    let mut next_step = 0;
    let mut t = Duration::ZERO;
    loop {
        while next_step < steps.len() && steps[next_step].at <= t {
            let step = &steps[next_step];
            engine.advance(start + step.at);
            let events = apply_step(engine, step, &mut counts)?;
            let touched = counts.absorb(&events);
            remeasure(&mut meter, engine.snapshot(), touched);
            next_step += 1;
        }
        let events = engine.settle(Some(start + t));
        let touched = counts.absorb(&events);
        remeasure(&mut meter, engine.snapshot(), touched);
        engine.advance(start + t);
        counts.pending = engine.pending() as u64;
        samples.push(meter.sample(&counts, 0, t.as_secs_f64()));
        if t >= end {
            break;
        }
        t = (t + interval).min(end);
    }
    Ok(samples)
}

fn apply_step(
    engine: &mut Engine,
    step: &LabStep,
    counts: &mut Counts,
) -> Result<Vec<SimEvent>, LabError> {
    let fail = |message: String| LabError::Step {
        at: step.at,
        message,
    };
    let mut events = Vec::new();
    for object in &step.create {
        if matches!(object, Object::Pod(_)) {
            counts.arrivals += 1;
        }
        events.extend(engine.create(object.clone()).map_err(fail)?);
    }
    for r in &step.delete {
        events.extend(
            engine
                .delete(&r.kind, r.namespace.as_deref(), &r.name)
                .map_err(fail)?,
        );
    }
    for (r, merge) in &step.patch {
        events.extend(
            engine
                .patch(&r.kind, r.namespace.as_deref(), &r.name, merge)
                .map_err(fail)?,
        );
    }
    for node in &step.cordon {
        engine.set_unschedulable(node, true).map_err(fail)?;
    }
    for node in &step.uncordon {
        engine.set_unschedulable(node, false).map_err(fail)?;
    }
    for node in &step.drain {
        events.extend(engine.drain(node).map_err(fail)?);
    }
    for node in &step.remove_node {
        events.extend(engine.remove_node(node).map_err(fail)?);
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::openb::{parse_nodes, parse_tasks};

    fn setup() -> LabSetup {
        let nodes = parse_nodes(
            "n.csv",
            "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,2,T4\nn1,8000,16384,1,P100\n",
        )
        .unwrap();
        let tasks = parse_tasks(
            "t.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\na,1000,1024,1,500,\nb,1000,1024,1,500,\nc,1000,1024,2,1000,\nd,1000,1024,1,1000,P100\n",
        )
        .unwrap();
        LabSetup {
            cluster: openb_cluster(&nodes),
            workload: LabWorkload::Openb {
                tasks,
                mode: ArrivalMode::Artifact,
                fill_percent: 100,
                coverage_percent: 100,
            },
            every: Every::Arrival,
            fragmentation: true,
        }
    }

    #[test]
    fn an_openb_run_places_tasks_through_the_scheduler_and_samples_each_arrival() {
        let setup = setup();
        let profiles = builtin_profiles("FGD", &setup)
            .unwrap()
            .with_tie_break(TieBreak::Ranked);
        let a = run(&setup, "FGD", profiles.clone(), 7).unwrap();
        let b = run(&setup, "FGD", profiles, 7).unwrap();
        assert_eq!(a.samples, b.samples, "same seed, same samples");
        let last = a.samples.last().unwrap();
        assert_eq!(last.arrivals as usize, a.samples.len());
        assert_eq!(last.scheduled + last.failed, last.arrivals);
        // 3 GPUs in all: the two halves share one, the 2-GPU task and the P100 task fit.
        assert!(last.scheduled >= 3, "{last:?}");
        assert!(last.unallocated_gpu_pct < 100.0 && last.unallocated_gpu_pct >= 0.0);
        assert_eq!(
            last.gpu_alloc_milli,
            3000 - (last.unallocated_gpu_pct * 30.0).round() as u64
        );
    }

    #[test]
    fn the_policy_chooses_the_gpu_within_the_node() {
        // One node, two GPUs; in trace time: a takes 400 of gpu-0, b 700 of gpu-1, then c
        // (300) goes to the best-fitting GPU (gpu-1, 300 free) under BestFit, which leaves
        // gpu-0 room for d (600). The allocator's first fit would put c on gpu-0 (600 free)
        // and leave d nowhere.
        let nodes = parse_nodes(
            "n.csv",
            "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,2,T4\n",
        )
        .unwrap();
        let tasks = parse_tasks(
            "t.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time\n\
             a,100,64,1,400,,1\nb,100,64,1,700,,2\nc,100,64,1,300,,3\nd,100,64,1,600,,4\n",
        )
        .unwrap();
        let setup = LabSetup {
            cluster: openb_cluster(&nodes),
            workload: LabWorkload::Openb {
                tasks,
                mode: ArrivalMode::TraceTime,
                fill_percent: 100,
                coverage_percent: 100,
            },
            every: Every::Arrival,
            fragmentation: false,
        };
        let scheduled = |policy: &str| {
            let profiles = builtin_profiles(policy, &setup).unwrap();
            let result = run(&setup, policy, profiles, 1).unwrap();
            result.samples.last().unwrap().scheduled
        };
        assert_eq!(scheduled("BestFit"), 4, "best fit within the node");
        assert_eq!(scheduled("default"), 3, "kube's first fit");
    }

    #[test]
    fn departed_tasks_free_their_gpus_in_trace_time() {
        // One GPU: a holds it from 1 to 5; b arrives at 2 and waits; once a has left, b
        // gets the GPU its claim frees.
        let nodes = parse_nodes(
            "n.csv",
            "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,16384,1,T4\n",
        )
        .unwrap();
        let tasks = parse_tasks(
            "t.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time\n\
             a,100,64,1,1000,,1,5\nb,100,64,1,1000,,2,\nc,100,64,0,0,,9,\n",
        )
        .unwrap();
        let setup = LabSetup {
            cluster: openb_cluster(&nodes),
            workload: LabWorkload::Openb {
                tasks,
                mode: ArrivalMode::TraceTime,
                fill_percent: 100,
                coverage_percent: 100,
            },
            every: Every::Arrival,
            fragmentation: false,
        };
        let profiles = builtin_profiles("BestFit", &setup).unwrap();
        let result = run(&setup, "BestFit", profiles, 1).unwrap();
        let pending: Vec<u64> = result.samples.iter().map(|s| s.pending).collect();
        assert_eq!(pending, vec![0, 1, 0], "b waits for a's GPU, then takes it");
        let last = result.samples.last().unwrap();
        assert_eq!(last.scheduled, 3);
        assert_eq!(last.gpu_alloc_milli, 1000, "only b holds the GPU");
    }

    #[test]
    fn every_builtin_policy_builds_and_unknown_names_are_refused() {
        let setup = setup();
        for p in Policy::ALL.into_iter().chain(Policy::OURS) {
            builtin_profiles(p.name(), &setup).unwrap_or_else(|e| panic!("{}: {e}", p.name()));
        }
        assert!(builtin_profiles("default", &setup).is_ok());
        assert!(matches!(
            builtin_profiles("FDG", &setup),
            Err(LabError::UnknownPolicy(_))
        ));
    }
}
