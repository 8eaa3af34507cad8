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

use std::hash::{Hash, Hasher as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

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
///
/// Scoring a node costs a few lookups when nothing changed: each state of a node (its
/// pods and resources, [`NodeInfo::generation`]; its devices and their allocations,
/// [`DraState::node_stamp`]) is measured once and given the id of its contents (nodes in
/// the same state share one id), each ask gets the id of its contents, and a score is
/// remembered by the two ids.
#[derive(Debug)]
pub struct GpuShare {
    policy: Policy,
    class: String,
    driver: String,
    target: TargetWorkload,
    /// (device stamp, node generation) → the id of the node's contents.
    nodes: Memo<(u64, u64), u64>,
    /// The contents of a node by id.
    contents: Memo<u64, Arc<NodeState>>,
    /// Contents → id (ids are never given twice, even after a memo forgets).
    ids: Mutex<FastHashMap<Arc<NodeState>, u64>>,
    /// Ask → id.
    asks: Mutex<FastHashMap<Arc<Ask>, u64>>,
    /// (contents id, ask id) → the score and the GPUs it takes: a pure function of the
    /// two, so nodes in the same state share them and a node keeps them until it changes.
    scores: Memo<(u64, u64), Evaluation>,
    next_id: AtomicU64,
}

/// A node as the policy sees it.
#[derive(Debug)]
struct NodeState {
    /// Free CPU and GPUs.
    gpus: NodeGpus,
    /// The kinds of GPU task it hosts, distinct and in order (GpuClustering only).
    hosted: Option<Vec<GpuKind>>,
    /// Its fragmentation against the target workload (FGD and FGDFine only; a function of
    /// `gpus`).
    fragmentation: f64,
}

impl PartialEq for NodeState {
    fn eq(&self, other: &NodeState) -> bool {
        self.gpus == other.gpus && self.hosted == other.hosted
    }
}

impl Eq for NodeState {}

impl Hash for NodeState {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.gpus.hash(state);
        self.hosted.hash(state);
    }
}

/// A policy's score of a node and the GPUs (indices into the node's GPUs) it would take.
#[derive(Clone, Debug)]
struct Evaluation {
    score: i64,
    gpus: Arc<[usize]>,
}

/// Shards of a memo map; more shards, fewer waits when Score runs in parallel.
const MEMO_SHARDS: usize = 16;
/// Entries per shard before it is emptied (a memo, so forgetting is always right).
const MEMO_SHARD_CAPACITY: usize = 8192;
/// Entries of an id table before it is emptied (its contents then get new ids).
const ID_CAPACITY: usize = 1 << 16;

/// A sharded memo map.
struct Memo<K, V> {
    shards: Vec<Mutex<FastHashMap<K, V>>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            shards: (0..MEMO_SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo").finish_non_exhaustive()
    }
}

impl<K: Hash + Eq, V> Memo<K, V> {
    fn shard(&self, key: &K) -> MutexGuard<'_, FastHashMap<K, V>> {
        let hash = hash_of(key);
        self.shards[((hash >> 32) % MEMO_SHARDS as u64) as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// What `read` makes of the value remembered for `key`.
    fn get<R>(&self, key: &K, read: impl FnOnce(&V) -> R) -> Option<R> {
        self.shard(key).get(key).map(read)
    }

    fn put(&self, key: K, value: V) {
        let mut shard = self.shard(&key);
        if shard.len() >= MEMO_SHARD_CAPACITY {
            shard.clear();
        }
        shard.insert(key, value);
    }
}

fn hash_of(value: &(impl Hash + ?Sized)) -> u64 {
    let mut h = FastHasher::default();
    value.hash(&mut h);
    h.finish()
}

/// The id of `value` in `ids`, a new one (from `next`) when it has none.
fn intern<T: Hash + Eq>(
    ids: &Mutex<FastHashMap<Arc<T>, u64>>,
    next: &AtomicU64,
    value: Arc<T>,
) -> u64 {
    let mut ids = ids.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&id) = ids.get(&value) {
        return id;
    }
    if ids.len() >= ID_CAPACITY {
        ids.clear();
    }
    let id = next.fetch_add(1, Ordering::Relaxed);
    ids.insert(value, id);
    id
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
            nodes: Memo::default(),
            contents: Memo::default(),
            ids: Mutex::default(),
            asks: Mutex::default(),
            scores: Memo::default(),
            next_id: AtomicU64::new(1),
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

    /// The pod's ask and its id.
    fn ask_id(&self, dra: &DraState, pod: &PodInfo) -> (Arc<Ask>, u64) {
        let ask = Arc::new(self.ask(dra, pod));
        let id = intern(&self.asks, &self.next_id, ask.clone());
        (ask, id)
    }

    /// The id of the node's contents, remembered per state of the node and its devices,
    /// and the contents when they had to be measured.
    ///
    /// What a node hosts (GpuClustering) is read from its pods' claims when the node or
    /// its devices' allocations last changed: a claim's requests never change (a
    /// ResourceClaim's spec is immutable), and the claims of the pods on a node hold
    /// devices of it, whose allocations renew the stamp when they come or go.
    fn node_id(&self, dra: &DraState, node: &NodeInfo) -> (u64, Option<Arc<NodeState>>) {
        let Some(stamp) = dra.node_stamp(node.name()) else {
            let state = Arc::new(self.measure(dra, node));
            return (self.content_id(state.clone()), Some(state));
        };
        let key = (stamp, node.generation);
        if let Some(id) = self.nodes.get(&key, |&id| id) {
            return (id, None);
        }
        let state = Arc::new(self.measure(dra, node));
        let id = self.content_id(state.clone());
        self.nodes.put(key, id);
        (id, Some(state))
    }

    /// The id of these contents (remembered by id too).
    fn content_id(&self, state: Arc<NodeState>) -> u64 {
        let id = intern(&self.ids, &self.next_id, state.clone());
        self.contents.put(id, state);
        id
    }

    fn measure(&self, dra: &DraState, node: &NodeInfo) -> NodeState {
        let (gpus, _) = node_gpus(dra, node, &self.driver);
        let hosted = (self.policy == Policy::GpuClustering).then(|| self.hosted(dra, node));
        let fragmentation = if self.policy.uses_target() {
            self.target.fragmentation(&gpus)
        } else {
            0.0
        };
        NodeState {
            gpus,
            hosted,
            fragmentation,
        }
    }

    /// What `read` makes of the policy's evaluation of `ask` on `node`, remembered by the
    /// ids of the node's contents and of the ask (Random's GPU choice depends on the pod,
    /// so it is not).
    fn evaluated<R>(
        &self,
        dra: &DraState,
        node: &NodeInfo,
        (ask, ask_id): (&Ask, u64),
        pod: &PodInfo,
        read: impl Fn(&Evaluation) -> R,
    ) -> R {
        let (id, measured) = self.node_id(dra, node);
        let key = (id, ask_id);
        if self.policy != Policy::Random {
            if let Some(r) = self.scores.get(&key, &read) {
                return r;
            }
        }
        // The contents of this id: as measured now, as remembered, or measured again (the
        // node is still in the state the id was given for).
        let state = measured
            .or_else(|| self.contents.get(&id, Arc::clone))
            .unwrap_or_else(|| Arc::new(self.measure(dra, node)));
        let (score, gpus) = self.evaluate(&state, ask, pod);
        let evaluation = Evaluation {
            score,
            gpus: gpus.into(),
        };
        let r = read(&evaluation);
        if self.policy != Policy::Random {
            self.scores.put(key, evaluation);
        }
        r
    }

    /// The kinds of GPU task the node hosts, distinct and in order (GpuClustering).
    fn hosted(&self, dra: &DraState, node: &NodeInfo) -> Vec<GpuKind> {
        let mut hosted: Vec<GpuKind> = node
            .pods
            .iter()
            .filter_map(|pod| self.ask(dra, pod).kind())
            .collect();
        hosted.sort_unstable();
        hosted.dedup();
        hosted
    }

    /// The policy's score of the node and the GPUs (indices into the node's GPUs) it would
    /// take.
    fn evaluate(&self, node: &NodeState, ask: &Ask, pod: &PodInfo) -> (i64, Vec<usize>) {
        let view = &node.gpus;
        let best_fit = || view.best_fit(ask).unwrap_or_default();
        match self.policy {
            Policy::Fgd => gpushare::fgd(&self.target, view, node.fragmentation, ask),
            Policy::FgdFine => gpushare::fgd_fine(&self.target, view, node.fragmentation, ask),
            Policy::BestFit => (gpushare::best_fit(view, ask), best_fit()),
            Policy::DotProd => (gpushare::dot_prod(view, ask), best_fit()),
            Policy::GpuPacking => (gpushare::gpu_packing(view, ask), best_fit()),
            Policy::GpuClustering => (
                gpushare::gpu_clustering(view, node.hosted.as_deref().unwrap_or_default(), ask),
                best_fit(),
            ),
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

/// What PreScore computed for Score: the pod's ask with its id, and the DRA state it
/// reads.
#[derive(Clone)]
struct Prepared {
    ask: Arc<Ask>,
    ask_id: u64,
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
        let (ask, ask_id) = self.ask_id(dra, pod);
        if ask.gpus == 0 {
            return Vec::new();
        }
        let gpus = self.evaluated(dra, node, (&ask, ask_id), pod, |e| e.gpus.clone());
        let (_, ids) = node_gpus(dra, node, &self.driver);
        gpus.iter().filter_map(|&g| ids.get(g).cloned()).collect()
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
        let (ask, ask_id) = self.ask_id(dra, input.pod);
        state.insert(Prepared {
            ask,
            ask_id,
            dra: dra.clone(),
        });
        Ok(())
    }
}

impl Score for GpuShare {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        if self.policy == Policy::Random {
            // Random scores every node 0 (the tie-break draws the node).
            return 0;
        }
        let Some(prepared) = state.get::<Prepared>() else {
            return 0;
        };
        let ask = (&*prepared.ask, prepared.ask_id);
        self.evaluated(&prepared.dra, node, ask, pod, |e| e.score)
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
                    .and_then(|a| a.string.as_deref())
                    .map(Arc::from);
            }
            ids.push(id.clone());
        }
    }
    (view, ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::objects::{gpu_class, gpu_slice, Gpus};
    use crate::plugins::testing::{dra_snapshot, NodeBuilder, PodBuilder};
    use berth_model::testing::ResourceClaimBuilder;

    fn args() -> GpuShareArgs {
        let shape = |gpus, gpu_milli, weight| ShapeArgs {
            cpu_milli: 1000,
            gpus,
            gpu_milli,
            models: Vec::new(),
            weight,
        };
        GpuShareArgs {
            target_workload: vec![shape(1, 1000, 0.5), shape(0, 0, 0.3), shape(2, 1000, 0.2)],
            ..GpuShareArgs::default()
        }
    }

    /// Score of `pod` on each node, from `plugin` (after PreScore).
    fn scores(plugin: &GpuShare, snapshot: &Snapshot, pod: &PodInfo) -> Vec<i64> {
        let mut state = CycleState::new();
        let nodes: Vec<&NodeInfo> = snapshot.nodes().iter().collect();
        let input = PreScoreInput {
            pod,
            snapshot,
            feasible: &nodes,
        };
        plugin.pre_score(&mut state, &input).expect("pre_score");
        nodes.iter().map(|n| plugin.score(&state, pod, n)).collect()
    }

    /// A plugin that has scored the nodes before scores them as a new one does, as
    /// their pods and their devices' allocations change; the scores do change.
    #[test]
    fn remembered_scores_follow_the_nodes_pods_and_devices() {
        let gpus = |model: &str| Gpus {
            count: 2,
            model: model.into(),
            memory: None,
        };
        let slices = [gpu_slice("n1", &gpus("T4")), gpu_slice("n2", &gpus("T4"))];
        let claim = |name: &str| {
            ResourceClaimBuilder::new(name)
                .request("gpu", GPU_DRIVER)
                .count(1)
        };
        let nodes = [
            NodeBuilder::new("n1").cpu_millis(8000),
            NodeBuilder::new("n2").cpu_millis(8000),
        ];
        let mut snap = dra_snapshot(&nodes, &[gpu_class()], &slices, &[claim("ask").build()]);
        let pod = PodInfo::new(Arc::new(
            PodBuilder::new("p")
                .cpu_millis(1000)
                .resource_claim("gpu", "ask")
                .build(),
        ));
        // The steps: a GPU pod placed on n1 (its claim holding gpu-0), then a CPU-only pod.
        let held = claim("held")
            .allocated("n1", &[("gpu", GPU_DRIVER, "n1", "gpu-0")])
            .build();
        let holder = PodBuilder::new("holder")
            .cpu_millis(2000)
            .resource_claim("gpu", "held")
            .build();
        let cpu_only = PodBuilder::new("cpu").cpu_millis(3000).build();
        let policies: Vec<Policy> = Policy::ALL.into_iter().chain(Policy::OURS).collect();
        let warm: Vec<GpuShare> = policies
            .iter()
            .map(|&p| GpuShare::try_new(p, args()).expect("plugin"))
            .collect();
        let mut history: Vec<Vec<Vec<i64>>> = Vec::new();
        for step in 0..3 {
            match step {
                1 => {
                    snap.dra_mut()
                        .upsert_claim(crate::dra::convert::claim(&held));
                    snap.add_pod("n1", Arc::new(PodInfo::new(Arc::new(holder.clone()))));
                }
                2 => {
                    snap.add_pod("n1", Arc::new(PodInfo::new(Arc::new(cpu_only.clone()))));
                }
                _ => {}
            }
            let mut now = Vec::new();
            for (policy, plugin) in policies.iter().zip(&warm) {
                let fresh = GpuShare::try_new(*policy, args()).expect("plugin");
                let want = scores(&fresh, &snap, &pod);
                assert_eq!(
                    scores(plugin, &snap, &pod),
                    want,
                    "{} at step {step}",
                    policy.name()
                );
                now.push(want);
            }
            history.push(now);
        }
        for (i, policy) in policies.iter().enumerate() {
            let n1: Vec<i64> = history.iter().map(|h| h[i][0]).collect();
            let n2: Vec<i64> = history.iter().map(|h| h[i][1]).collect();
            assert!(
                n2.iter().all(|&s| s == n2[0]),
                "{}: n2 never changes",
                policy.name()
            );
            match policy {
                // No GPU task (25) with 6 of 8 GPUs' worth counted used (18), then a
                // 1-GPU task of the pod's kind (75) and 7 used (21).
                Policy::GpuClustering => assert_eq!(n1, vec![43, 96, 96], "GpuClustering"),
                Policy::Random => assert_eq!(n1, vec![0, 0, 0], "Random"),
                Policy::BestFit | Policy::FgdFine => {}
                // CPU changes alone move DotProd's score; FGD, packing: the GPU taken.
                _ => assert_ne!(n1[0], n1[1], "{}", policy.name()),
            }
        }
    }
}
