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

/// A node's GPUs as its node-local ResourceSlice: `gpu-0`..`gpu-{n-1}`, each with its model
/// and index, and a capacity `milli` of 1000 that several claims may share (any whole
/// number of thousandths, 1 to 1000).
pub fn gpu_slice(node: &str, gpus: u32, model: &str) -> ResourceSlice {
    let devices: Vec<Value> = (0..gpus)
        .map(|i| {
            json!({
                "name": format!("gpu-{i}"),
                "attributes": {MODEL_ATTRIBUTE: {"string": model}, "index": {"int": i}},
                "capacity": {SHARE_CAPACITY: {
                    "value": MILLI_GPU.to_string(),
                    "requestPolicy": {
                        "default": MILLI_GPU.to_string(),
                        "validRange": {"min": "1", "max": MILLI_GPU.to_string(), "step": "1"}
                    }
                }},
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
    let mut objects = vec![Object::DeviceClass(gpu_class())];
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
        objects.push(Object::Node(node));
        if n.gpus > 0 {
            let slice = gpu_slice(&n.name, n.gpus, n.model.as_deref().unwrap_or("unknown"));
            objects.push(Object::ResourceSlice(slice));
        }
    }
    objects
}

/// A task as a pod named `name` in `default` and, when it asks for GPUs, its claim
/// (`<name>-gpu`, which the pod names in `spec.resourceClaims`).
pub fn task_objects(task: &TraceTask, name: &str) -> (Pod, Option<ResourceClaim>) {
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
            validate_object(&Object::Pod(pod.clone())).unwrap_or_else(|e| panic!("pod {i}: {e}"));
            assert_eq!(claim.is_some(), task.gpus > 0);
            if let Some(claim) = claim {
                validate_object(&Object::ResourceClaim(claim.clone()))
                    .unwrap_or_else(|e| panic!("claim {i}: {e}"));
                assert_eq!(
                    pod.spec.resource_claims[0].resource_claim_name.as_deref(),
                    Some(claim.metadata.name.as_str())
                );
            }
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
