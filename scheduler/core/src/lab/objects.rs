//! OpenB in Kubernetes terms (lab.md): each GPU node a Node plus a node-local ResourceSlice
//! of its GPUs (driver `gpu.berth.dev`, attributes `model` and `index`, a capacity `milli`
//! of 1000 that several claims may share), each task a Pod with cpu and memory requests
//! and, when it asks for GPUs, a ResourceClaim of the GPU class: k whole GPUs (`milli: 1000`
//! each), or a share of one GPU through consumable capacity; gpu_spec becomes a CEL
//! selector on the model. The same objects can be applied to a live cluster.

use berth_model::model::{DeviceClass, Node, Object, Pod, ResourceClaim, ResourceSlice};
use serde_json::{json, Value};

use super::openb::{TraceNode, TraceTask, MILLI_GPU};
use crate::gpushare::{GPU_DRIVER, MODEL_ATTRIBUTE, SHARE_CAPACITY};

fn typed<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("lab objects are built from well-formed JSON")
}

/// The GPU device class: every device of the GPU driver.
pub fn gpu_class() -> DeviceClass {
    typed(json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": GPU_DRIVER},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{GPU_DRIVER}\"")}}]}
    }))
}

/// A node's GPUs: how many, their model, and (when given) each one's memory. The one
/// description of a GPU device behind [`gpu_slice`], used by the lab and by agents'
/// `--gpus`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpus {
    /// How many GPUs.
    pub count: u32,
    /// The `model` attribute of each.
    pub model: String,
    /// Each GPU's memory, as a `memory` capacity, when given.
    pub memory: Option<berth_model::Quantity>,
}

/// A stable UUID-like identifier of GPU `index` of `node` (`GPU-xxxxxxxx-xxxx-...`, as
/// NVIDIA's driver names GPUs), the same on every run.
fn gpu_uuid(node: &str, index: u32) -> String {
    // FNV-1a over the node name and index, twice with different offsets: 128 bits.
    let hash = |offset: u64| {
        let mut h = offset;
        for b in node.bytes().chain(index.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    };
    let hex = format!(
        "{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x84222325_cbf29ce4)
    );
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A node's GPUs as its node-local ResourceSlice (driver `gpu.berth.dev`, pool = the node):
/// `gpu-0`..`gpu-{n-1}`, each with attributes `model`, `index` and `uuid`, a capacity
/// `milli` of 1000 that several claims may share (any whole number of thousandths, 1 to
/// 1000; a claim that asks none takes all 1000), and with `memory` given a `memory`
/// capacity that a claim consumes only as far as it asks for it.
pub fn gpu_slice(node: &str, gpus: &Gpus) -> ResourceSlice {
    let devices: Vec<Value> = (0..gpus.count)
        .map(|i| {
            let mut capacity = json!({SHARE_CAPACITY: {
                "value": MILLI_GPU.to_string(),
                "requestPolicy": {
                    "default": MILLI_GPU.to_string(),
                    "validRange": {"min": "1", "max": MILLI_GPU.to_string(), "step": "1"}
                }
            }});
            if let Some(memory) = &gpus.memory {
                capacity["memory"] = json!({
                    "value": memory.to_string(),
                    "requestPolicy": {"default": "0", "validRange": {"min": "0"}}
                });
            }
            json!({
                "name": format!("gpu-{i}"),
                "attributes": {
                    MODEL_ATTRIBUTE: {"string": gpus.model},
                    "index": {"int": i},
                    "uuid": {"string": gpu_uuid(node, i)}
                },
                "capacity": capacity,
                "allowMultipleAllocations": true
            })
        })
        .collect();
    typed(json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-gpus")},
        "spec": {
            "driver": GPU_DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices
        }
    }))
}

/// The trace's nodes as objects: the GPU device class, then each node and (for GPU nodes)
/// its slice. Nodes hold as many pods as their resources allow (the artifact has no pod
/// limit).
pub fn openb_cluster(nodes: &[TraceNode]) -> Vec<Object> {
    let mut objects = vec![Object::DeviceClass(Box::new(gpu_class()))];
    for n in nodes {
        let node: Node = typed(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n.name, "labels": {"kubernetes.io/hostname": n.name}},
            "status": {
                "capacity": {"cpu": format!("{}m", n.cpu_milli), "memory": format!("{}Mi", n.memory_mib), "pods": "100000"},
                "allocatable": {"cpu": format!("{}m", n.cpu_milli), "memory": format!("{}Mi", n.memory_mib), "pods": "100000"}
            }
        }));
        objects.push(Object::Node(Box::new(node)));
        if n.gpus > 0 {
            let gpus = Gpus {
                count: n.gpus,
                model: n.model.clone().unwrap_or_else(|| "unknown".to_string()),
                memory: None,
            };
            let slice = gpu_slice(&n.name, &gpus);
            objects.push(Object::ResourceSlice(Box::new(slice)));
        }
    }
    objects
}

/// A task as a pod named `name` in `default` and, when it asks for GPUs, its claim
/// (`<name>-gpu`, which the pod names in `spec.resourceClaims`).
pub fn task_objects(task: &TraceTask, name: &str) -> (Pod, Option<ResourceClaim>) {
    TaskObjects::new(task).named(name)
}

/// A task's objects built once and named per arrival ([`TaskObjects::named`]): they
/// depend on the task's name only through the names they carry, so tasks of one shape
/// (cpu, memory, GPUs, share, models) can share them.
#[derive(Clone, Debug)]
pub struct TaskObjects {
    pod: Pod,
    claim: Option<ResourceClaim>,
}

/// The name the objects of a [`TaskObjects`] carry until they are named.
const UNNAMED: &str = "task";

impl TaskObjects {
    /// The task's pod and claim, under a name of their own until [`TaskObjects::named`].
    pub fn new(task: &TraceTask) -> TaskObjects {
        let (pod, claim) = build_task_objects(task, UNNAMED);
        TaskObjects { pod, claim }
    }

    /// The objects named `name`, as [`task_objects`] describes them.
    pub fn named(&self, name: &str) -> (Pod, Option<ResourceClaim>) {
        let mut pod = self.pod.clone();
        pod.metadata.name = name.to_string();
        pod.metadata.uid = format!("uid-{name}");
        let claim = self.claim.as_ref().map(|claim| {
            let claim_name = format!("{name}-gpu");
            let mut claim = claim.clone();
            for r in &mut pod.spec.resource_claims {
                r.resource_claim_name = Some(claim_name.clone());
            }
            claim.metadata.uid = format!("uid-{claim_name}");
            claim.metadata.name = claim_name;
            claim
        });
        (pod, claim)
    }
}

fn build_task_objects(task: &TraceTask, name: &str) -> (Pod, Option<ResourceClaim>) {
    let gpu = task.gpus > 0;
    let claim_name = format!("{name}-gpu");
    let mut container = json!({
        "name": "task",
        "image": "openb-task",
        "resources": {"requests": {"cpu": format!("{}m", task.cpu_milli), "memory": format!("{}Mi", task.memory_mib)}}
    });
    let mut spec = json!({"containers": []});
    if gpu {
        container["resources"]["claims"] = json!([{"name": "gpu"}]);
        spec["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": claim_name}]);
    }
    spec["containers"] = json!([container]);
    let pod: Pod = typed(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": spec
    }));
    if !gpu {
        return (pod, None);
    }
    let mut exactly = json!({
        "deviceClassName": GPU_DRIVER,
        "allocationMode": "ExactCount",
        "count": task.gpus,
        "capacity": {"requests": {SHARE_CAPACITY: task.gpu_milli.to_string()}}
    });
    if !task.gpu_spec.is_empty() {
        let models: Vec<String> = task.gpu_spec.iter().map(|m| format!("{m:?}")).collect();
        exactly["selectors"] = json!([{"cel": {"expression": format!(
            "device.attributes[\"{GPU_DRIVER}\"].{MODEL_ATTRIBUTE} in [{}]",
            models.join(", ")
        )}}]);
    }
    let claim: ResourceClaim = typed(json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": claim_name, "namespace": "default", "uid": format!("uid-{claim_name}")},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
    }));
    (pod, Some(claim))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::openb::parse_tasks;
    use berth_model::validate::validate_object;

    #[test]
    fn gpu_slices_are_valid_and_name_each_gpu() {
        let cases = [
            ("lab GPUs", None),
            (
                "with memory",
                Some(berth_model::Quantity::parse("16Gi").expect("quantity")),
            ),
        ];
        for (name, memory) in cases {
            let gpus = Gpus {
                count: 2,
                model: "T4".into(),
                memory,
            };
            let slice = gpu_slice("n1", &gpus);
            validate_object(&Object::ResourceSlice(Box::new(slice.clone())))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let devices = &slice.spec.devices;
            assert_eq!(devices.len(), 2, "{name}");
            assert_eq!(
                devices[1].capacity.contains_key("memory"),
                memory.is_some(),
                "{name}"
            );
            let uuid = |d: usize| format!("{:?}", devices[d].attributes.get("uuid"));
            assert!(
                uuid(0).contains("GPU-") && uuid(0) != uuid(1),
                "{name}: {}",
                uuid(0)
            );
        }
        assert_eq!(gpu_uuid("n1", 0), gpu_uuid("n1", 0), "stable");
        assert_ne!(gpu_uuid("n1", 0), gpu_uuid("n2", 0));
    }

    #[test]
    fn openb_objects_are_valid_kubernetes_objects() {
        let nodes = vec![
            TraceNode {
                name: "n0".into(),
                cpu_milli: 64_000,
                memory_mib: 262_144,
                gpus: 8,
                model: Some("V100M16".into()),
            },
            TraceNode {
                name: "n1".into(),
                cpu_milli: 32_000,
                memory_mib: 1024,
                gpus: 0,
                model: None,
            },
        ];
        let objects = openb_cluster(&nodes);
        assert_eq!(objects.len(), 4, "class, two nodes, one slice");
        for o in &objects {
            validate_object(o).unwrap_or_else(|e| panic!("{}: {e}", o.kind().as_str()));
        }
        let tasks = parse_tasks(
            "t.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nshare,4000,1024,1,460,\nwhole,8000,2048,2,1000,T4|V100M16\ncpu,1000,512,0,0,\n",
        )
        .unwrap();
        for (i, task) in tasks.iter().enumerate() {
            let (pod, claim) = task_objects(task, &format!("t-{i}"));
            validate_object(&Object::Pod(Box::new(pod.clone())))
                .unwrap_or_else(|e| panic!("pod {i}: {e}"));
            assert_eq!(claim.is_some(), task.gpus > 0);
            if let Some(claim) = claim {
                validate_object(&Object::ResourceClaim(Box::new(claim.clone())))
                    .unwrap_or_else(|e| panic!("claim {i}: {e}"));
                assert_eq!(
                    pod.spec.resource_claims[0].resource_claim_name.as_deref(),
                    Some(claim.metadata.name.as_str())
                );
            }
        }
        for task in &tasks {
            let built = build_task_objects(task, "t-9");
            let named = TaskObjects::new(task).named("t-9");
            let json = |o: &(Pod, Option<ResourceClaim>)| serde_json::to_value(o).unwrap();
            assert_eq!(json(&named), json(&built), "{}: named as built", task.name);
        }
        let (_, whole) = task_objects(&tasks[1], "w");
        let json = serde_json::to_value(whole.unwrap()).unwrap();
        assert_eq!(
            json["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"],
            "device.attributes[\"gpu.berth.dev\"].model in [\"T4\", \"V100M16\"]"
        );
        assert_eq!(
            json["spec"]["devices"]["requests"][0]["exactly"]["count"],
            2
        );
    }
}
