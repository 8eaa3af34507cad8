//! The FGD paper's six GPU-sharing policies (lab.md) as score plugins over DRA devices:
//! `FGD`, `BestFit`, `DotProd`, `GpuPacking`, `GpuClustering` and `Random` (and Berth's
//! own `FGDFine`, FGD with exact comparisons), usable in any
//! profile (the lab's and a live cluster's). Each sees a node's GPUs as the devices of its
//! driver in the node's ResourceSlices, with the share left on each (the device's share
//! capacity minus what allocated claims consume of it), and a pod's ask as its claims'
//! requests of the GPU device class. The arithmetic is [`crate::gpushare`]'s.
//!
//! A policy also chooses the GPU(s) on the node it picks ([`DevicePreference`]):
//! the DynamicResources allocator tries those devices first, so the allocation is the
//! policy's choice, as in the paper.
//!
//! Args (`pluginConfig`): `deviceClassName` (the class whose requests are GPUs; default
//! `gpu.berth.dev`), `driver` (default `gpu.berth.dev`) and, for FGD and FGDFine, `targetWorkload`: the
//! task shapes with their weights (`[{cpuMilli, gpus, gpuMilli, models, weight}]`).

use std::collections::BTreeMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::InvalidArgs;
use crate::dra::allocator::{AllocationMode, DeviceId, Request};
use crate::dra::convert::pod_claim_refs;
use crate::dra::state::DraState;
use crate::framework::hash::{FastHashMap, FastHasher};
use crate::framework::{
    CycleState, DevicePreference, NodeInfo, Plugin, PluginError, PodInfo, PreScore, PreScoreInput,
    Score, Snapshot,
};
use crate::gpushare::{self, Ask, GpuKind, NodeGpus, Policy, TargetWorkload, MILLI};

pub use crate::gpushare::{GPU_DRIVER, MODEL_ATTRIBUTE, SHARE_CAPACITY};

/// One shape of the target workload, as written in the args.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShapeArgs {
    /// CPU, in millicores.
    #[serde(default)]
    pub cpu_milli: u64,
    /// GPUs.
    #[serde(default)]
    pub gpus: u32,
    /// Share of each GPU, in thousandths.
    #[serde(default)]
    pub gpu_milli: u32,
    /// Allowed GPU models (empty: any).
    #[serde(default)]
    pub models: Vec<String>,
    /// Its weight (they are renormalised to sum to 1).
    pub weight: f64,
}

/// The plugins' args.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuShareArgs {
    /// The device class whose requests are GPUs.
    #[serde(default)]
    pub device_class_name: Option<String>,
    /// The GPUs' driver.
    #[serde(default)]
    pub driver: Option<String>,
    /// FGD's target workload.
    #[serde(default)]
    pub target_workload: Vec<ShapeArgs>,
}

/// One of the six policies as a plugin.
#[derive(Debug)]
pub struct GpuShare {
    policy: Policy,
    class: String,
    driver: String,
    target: TargetWorkload,
    /// Each node's GPUs by [`DraState::node_stamp`], which names one state of a node's
    /// devices and their allocations.
    views: Memo<(u64, Arc<NodeView>)>,
    /// Scores and GPU choices by everything they depend on (a pure function of the node's
    /// view, what it hosts and the ask): nodes in the same state share them, and a node
    /// keeps them until it changes.
    scores: Memo<Arc<Evaluated>>,
}

/// A node's GPUs as the DRA state has them: free shares, model and device ids.
#[derive(Debug)]
struct NodeView {
    free: Vec<u32>,
    model: Option<String>,
    ids: Vec<DeviceId>,
}

/// One remembered evaluation, with its inputs.
#[derive(Debug)]
struct Evaluated {
    view: NodeGpus,
    hosted: Option<BTreeMap<GpuKind, usize>>,
    ask: Ask,
    score: i64,
    gpus: Vec<usize>,
}

/// Shards of a memo map; more shards, fewer waits when Score runs in parallel.
const MEMO_SHARDS: usize = 16;
/// Entries per shard before it is emptied (a memo, so forgetting is always right).
const MEMO_SHARD_CAPACITY: usize = 4096;

/// A memo of values by a 64-bit hash of their inputs; the caller checks the inputs.
struct Memo<V> {
    shards: Vec<Mutex<FastHashMap<u64, Vec<V>>>>,
}

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo {
            shards: (0..MEMO_SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl<V> std::fmt::Debug for Memo<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo").finish_non_exhaustive()
    }
}

impl<V: Clone> Memo<V> {
    fn shard(&self, hash: u64) -> std::sync::MutexGuard<'_, FastHashMap<u64, Vec<V>>> {
        self.shards[(hash % MEMO_SHARDS as u64) as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The remembered value with this hash whose inputs are `same`.
    fn get(&self, hash: u64, same: impl Fn(&V) -> bool) -> Option<V> {
        self.shard(hash)
            .get(&hash)
            .and_then(|values| values.iter().find(|v| same(v)).cloned())
    }

    fn put(&self, hash: u64, value: V) {
        let mut shard = self.shard(hash);
        if shard.len() >= MEMO_SHARD_CAPACITY {
            shard.clear();
        }
        shard.entry(hash).or_default().push(value);
    }
}

impl GpuShare {
    /// The plugin for `policy`, with its args checked.
    pub fn try_new(policy: Policy, args: GpuShareArgs) -> Result<Self, InvalidArgs> {
        let mut shapes = Vec::with_capacity(args.target_workload.len());
        let total: f64 = args.target_workload.iter().map(|s| s.weight).sum();
        for (i, s) in args.target_workload.iter().enumerate() {
            if !(s.weight.is_finite() && s.weight > 0.0) {
                return Err(InvalidArgs::new(
                    format!("targetWorkload[{i}].weight"),
                    "must be a positive number",
                ));
            }
            if s.gpu_milli > MILLI
                || (s.gpus > 1 && s.gpu_milli != MILLI)
                || (s.gpus == 0 && s.gpu_milli != 0)
            {
                return Err(InvalidArgs::new(
                    format!("targetWorkload[{i}].gpuMilli"),
                    "must be 1..1000 for one GPU, 1000 for several, 0 for none",
                ));
            }
            let ask = Ask {
                cpu_milli: s.cpu_milli,
                gpus: s.gpus,
                milli: s.gpu_milli,
                models: s.models.clone(),
            };
            shapes.push((ask, s.weight / total));
        }
        if policy.uses_target() && shapes.is_empty() {
            return Err(InvalidArgs::new(
                "targetWorkload",
                format!("{} needs the target workload's shapes", policy.name()),
            ));
        }
        Ok(GpuShare {
            policy,
            class: args
                .device_class_name
                .unwrap_or_else(|| GPU_DRIVER.to_string()),
            driver: args.driver.unwrap_or_else(|| GPU_DRIVER.to_string()),
            target: TargetWorkload { shapes },
            views: Memo::default(),
            scores: Memo::default(),
        })
    }

    /// The pod's ask: its CPU request, and the GPUs its claims request of the GPU class.
    fn ask(&self, dra: &DraState, pod: &PodInfo) -> Ask {
        let mut ask = Ask {
            cpu_milli: pod.requests.milli_cpu.max(0) as u64,
            gpus: 0,
            milli: 0,
            models: Vec::new(),
        };
        for r in pod_claim_refs(&pod.pod) {
            let Some(name) = &r.claim_name else { continue };
            let Some(claim) = dra.claim(&pod.pod.metadata.namespace, name) else {
                continue;
            };
            for request in &claim.requests {
                let Request::Exactly(exact) = request else {
                    continue;
                };
                if exact.class_name != self.class {
                    continue;
                }
                let count = match exact.mode {
                    AllocationMode::ExactCount(n) => n,
                    AllocationMode::All => 1,
                };
                let milli = exact
                    .capacity
                    .get(SHARE_CAPACITY)
                    .map_or(MILLI, |q| q.millis().clamp(0, 1000 * 1000) as u32 / 1000);
                ask.gpus += count;
                ask.milli = if count == 1 && ask.gpus == 1 {
                    milli.min(MILLI)
                } else {
                    MILLI
                };
            }
        }
        if ask.gpus == 0 {
            ask.milli = 0;
        }
        ask
    }

    /// The node's GPUs as [`node_gpus`] sees them, remembered per state of its devices.
    fn gpus(&self, dra: &DraState, node: &NodeInfo) -> (NodeGpus, Arc<NodeView>) {
        let cpu_free = (node.allocatable.milli_cpu - node.requested.milli_cpu).max(0) as u64;
        let view = match dra.node_stamp(node.name()) {
            Some(stamp) => {
                let hash = stamp.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                match self.views.get(hash, |(s, _)| *s == stamp) {
                    Some((_, view)) => view,
                    None => {
                        let view = Arc::new(self.measure(dra, node));
                        self.views.put(hash, (stamp, view.clone()));
                        view
                    }
                }
            }
            None => Arc::new(self.measure(dra, node)),
        };
        let gpus = NodeGpus {
            cpu_free,
            model: view.model.clone(),
            free: view.free.clone(),
        };
        (gpus, view)
    }

    fn measure(&self, dra: &DraState, node: &NodeInfo) -> NodeView {
        let (gpus, ids) = node_gpus(dra, node, &self.driver);
        NodeView {
            free: gpus.free,
            model: gpus.model,
            ids,
        }
    }

    /// [`GpuShare::evaluate`], remembered (Random's GPU choice depends on the pod, so it
    /// is not).
    fn evaluated(
        &self,
        view: NodeGpus,
        hosted: Option<BTreeMap<GpuKind, usize>>,
        ask: &Ask,
        pod: &PodInfo,
    ) -> (i64, Vec<usize>) {
        if self.policy == Policy::Random {
            return self.evaluate(&view, hosted.as_ref(), ask, pod);
        }
        let mut h = FastHasher::default();
        view.hash(&mut h);
        hosted.hash(&mut h);
        ask.hash(&mut h);
        let hash = h.finish();
        let same = |e: &Arc<Evaluated>| e.view == view && e.hosted == hosted && e.ask == *ask;
        if let Some(e) = self.scores.get(hash, same) {
            return (e.score, e.gpus.clone());
        }
        let (score, gpus) = self.evaluate(&view, hosted.as_ref(), ask, pod);
        let entry = Evaluated {
            view,
            hosted,
            ask: ask.clone(),
            score,
            gpus: gpus.clone(),
        };
        self.scores.put(hash, Arc::new(entry));
        (score, gpus)
    }

    /// What the node already hosts, by kind of GPU task (GpuClustering).
    fn hosted(&self, dra: &DraState, node: &NodeInfo) -> BTreeMap<GpuKind, usize> {
        let mut hosted = BTreeMap::new();
        for pod in &node.pods {
            if let Some(kind) = self.ask(dra, pod).kind() {
                *hosted.entry(kind).or_default() += 1;
            }
        }
        hosted
    }

    /// The policy's score of the node and the GPUs (indices into the node's GPUs) it would
    /// take.
    fn evaluate(
        &self,
        view: &NodeGpus,
        hosted: Option<&BTreeMap<GpuKind, usize>>,
        ask: &Ask,
        pod: &PodInfo,
    ) -> (i64, Vec<usize>) {
        let best_fit = || view.best_fit(ask).unwrap_or_default();
        match self.policy {
            Policy::Fgd => gpushare::fgd(&self.target, view, ask),
            Policy::FgdFine => gpushare::fgd_fine(&self.target, view, ask),
            Policy::BestFit => (gpushare::best_fit(view, ask), best_fit()),
            Policy::DotProd => (gpushare::dot_prod(view, ask), best_fit()),
            Policy::GpuPacking => (gpushare::gpu_packing(view, ask), best_fit()),
            Policy::GpuClustering => {
                let empty = BTreeMap::new();
                (
                    gpushare::gpu_clustering(view, hosted.unwrap_or(&empty), ask),
                    best_fit(),
                )
            }
            Policy::Random => {
                if ask.is_shared() {
                    let fit: Vec<usize> = (0..view.free.len())
                        .filter(|&g| view.free[g] >= ask.milli)
                        .collect();
                    let pick =
                        (!fit.is_empty()).then(|| fit[(pod_hash(pod) % fit.len() as u64) as usize]);
                    (0, pick.into_iter().collect())
                } else {
                    (0, view.lowest_free(ask.gpus).unwrap_or_default())
                }
            }
        }
    }
}

/// A pod's hash: Random's GPU choice, reproducible from the pod's identity.
fn pod_hash(pod: &PodInfo) -> u64 {
    let mut h = FastHasher::default();
    h.write(pod.uid().as_bytes());
    h.finish()
}

/// What PreScore computed for Score: the pod's ask, and the DRA state it reads.
#[derive(Clone)]
struct Prepared {
    ask: Arc<Ask>,
    dra: Arc<DraState>,
}

impl DevicePreference for GpuShare {
    /// The GPUs the policy takes for `pod` on `node`: what the allocator tries first.
    fn preferred_devices(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Vec<DeviceId> {
        let dra = snapshot.dra();
        let ask = self.ask(dra, pod);
        if ask.gpus == 0 {
            return Vec::new();
        }
        let (view, devices) = self.gpus(dra, node);
        let hosted = (self.policy == Policy::GpuClustering).then(|| self.hosted(dra, node));
        let (_, gpus) = self.evaluated(view, hosted, &ask, pod);
        gpus.into_iter()
            .filter_map(|g| devices.ids.get(g).cloned())
            .collect()
    }
}

impl Plugin for GpuShare {
    fn name(&self) -> &'static str {
        self.policy.name()
    }
}

impl PreScore for GpuShare {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let dra = input.snapshot.dra();
        state.insert(Prepared {
            ask: Arc::new(self.ask(dra, input.pod)),
            dra: dra.clone(),
        });
        Ok(())
    }
}

impl Score for GpuShare {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let Some(prepared) = state.get::<Prepared>() else {
            return 0;
        };
        let dra = &prepared.dra;
        let (view, _) = self.gpus(dra, node);
        let hosted = (self.policy == Policy::GpuClustering).then(|| self.hosted(dra, node));
        self.evaluated(view, hosted, &prepared.ask, pod).0
    }

    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) {
        if self.policy.normalises() {
            gpushare::normalise(scores);
        }
    }
}

/// A node's GPUs: the devices of `driver` it reaches, in order, with their free share (the
/// share capacity minus what allocated claims consume; a device held whole has none), and
/// their identities.
pub fn node_gpus(dra: &DraState, node: &NodeInfo, driver: &str) -> (NodeGpus, Vec<DeviceId>) {
    let allocated = dra.allocated();
    let mut view = NodeGpus {
        cpu_free: 0,
        model: None,
        free: Vec::new(),
    };
    view.cpu_free = (node.allocatable.milli_cpu - node.requested.milli_cpu).max(0) as u64;
    let mut ids = Vec::new();
    for pool in dra
        .pools_for(&node.node)
        .iter()
        .filter(|p| &*p.driver == driver)
    {
        for (device, id) in pool.devices.iter().zip(&pool.ids) {
            let capacity = device
                .capacity
                .get(SHARE_CAPACITY)
                .map_or(i64::from(MILLI) * 1000, |c| c.value.millis())
                .max(1);
            let used = if allocated.exclusive.contains(id) {
                capacity
            } else {
                allocated
                    .consumed
                    .get(id)
                    .and_then(|c| c.get(SHARE_CAPACITY))
                    .map_or(0, |q| q.millis())
            };
            let free = (capacity - used).clamp(0, capacity) * i64::from(MILLI) / capacity;
            view.free.push(free as u32);
            if view.model.is_none() {
                view.model = device
                    .attributes
                    .get(MODEL_ATTRIBUTE)
                    .and_then(|a| a.string.clone());
            }
            ids.push(id.clone());
        }
    }
    (view, ids)
}
