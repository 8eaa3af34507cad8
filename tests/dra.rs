//! End-to-end tests of Dynamic Resource Allocation (issue 11) with the real binaries: a
//! node's GPUs published as a ResourceSlice, pods whose claims the scheduler allocates and
//! writes before binding, the devices reaching the process in its environment, a GPU shared
//! by capacity, and pods that stay Pending with kube's message when no device fits.

mod common;

use common::{str_at, wait_until, TestCluster};

/// A DeviceClass of the GPU driver.
const CLASS: &str = "\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == \"gpu.berth.dev\"'}
";

/// Node `gpu-node`'s `--devices` file: two GPUs, `gpu-0` (a100, 80Gi, shareable in steps
/// of 10Gi) and `gpu-1` (t4, whole); the agent puts the slice on its node.
const DEVICES: &str = "\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
spec:
  driver: gpu.berth.dev
  pool: {name: '', generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    allowMultipleAllocations: true
    attributes:
      model: {string: a100}
      index: {int: 0}
    capacity:
      memory:
        value: 80Gi
        requestPolicy:
          default: 80Gi
          validRange: {min: 10Gi, step: 10Gi}
  - name: gpu-1
    attributes:
      model: {string: t4}
      index: {int: 1}
    capacity:
      memory: {value: 16Gi}
";

/// A claim for one GPU of `model`, taking `memory` of it when given.
fn claim(name: &str, model: &str, memory: Option<&str>) -> String {
    let capacity = memory
        .map(|m| format!("\n          capacity:\n            requests: {{memory: {m}}}"))
        .unwrap_or_default();
    format!(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}}}\n\
         spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n          \
         deviceClassName: gpu\n          selectors:\n          - cel: {{expression: 'device.attributes[\"gpu.berth.dev\"].model == \"{model}\"'}}{capacity}\n"
    )
}

/// A process pod using `claim` as its entry `gpu`; it prints its device variables and
/// sleeps.
fn pod(name: &str, claim: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  resourceClaims:\n  - name: gpu\n    \
         resourceClaimName: {claim}\n  containers:\n  - name: main\n    image: sh\n    \
         command: [sh, -c, 'echo \"cuda=$CUDA_VISIBLE_DEVICES dev=$BERTH_DEVICE_GPU_GPU\"; sleep 600']\n    \
         resources:\n      claims:\n      - name: gpu\n"
    )
}

fn apply(cluster: &TestCluster, name: &str, yaml: &str) {
    let path = cluster.manifest(name, yaml);
    cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
}

/// Starts a process agent for node `name` with `extra` flags (its devices).
fn start(cluster: &mut TestCluster, name: &str, extra: &[&str]) {
    let root = cluster.dir.path().join(format!("{name}-root"));
    let mut args = vec![
        "--runtime",
        "process",
        "--root-dir",
        root.to_str().expect("UTF-8 path"),
        "--cpu",
        "4",
        "--memory",
        "4Gi",
    ];
    args.extend(extra);
    cluster.spawn_agent(name, &args, &[]);
}

/// Starts node `gpu-node` publishing [`DEVICES`] through `--devices`, and waits for its
/// slice.
fn start_gpu_node(cluster: &mut TestCluster) {
    let file = cluster.manifest("gpu-node-devices.yaml", DEVICES);
    start(
        cluster,
        "gpu-node",
        &["--devices", file.to_str().expect("UTF-8 path")],
    );
    wait_until("gpu-node publishes its slice", || {
        cluster.berth(&["get", "resourceslices"]).status.success()
            && String::from_utf8_lossy(&cluster.berth(&["get", "resourceslices"]).stdout)
                .contains("gpu-node-gpu.berth.dev")
    });
}

/// The pod's PodScheduled=False message, once it has one.
fn pending_message(cluster: &TestCluster, pod: &str) -> Option<String> {
    let json = cluster.pod_json(pod);
    let conditions = json.pointer("/status/conditions")?.as_array()?;
    conditions
        .iter()
        .find(|c| c["type"] == "PodScheduled" && c["status"] == "False")
        .map(|c| c["message"].as_str().unwrap_or_default().to_string())
}

#[test]
fn pods_get_devices_share_a_gpu_by_capacity_and_wait_when_none_fits() {
    let mut cluster = TestCluster::start();
    start_gpu_node(&mut cluster);
    start(&mut cluster, "cpu-node", &[]);
    cluster.wait_ready_nodes(2);
    apply(&cluster, "class.yaml", CLASS);
    apply(
        &cluster,
        "claims.yaml",
        &[
            claim("whole", "t4", None),
            claim("half-1", "a100", Some("40Gi")),
            claim("half-2", "a100", Some("40Gi")),
            claim("half-3", "a100", Some("40Gi")),
            claim("none", "h100", None),
        ]
        .join("---\n"),
    );

    // A whole t4: the pod lands on the node with the device, the claim records it, and
    // the process sees it.
    apply(&cluster, "whole.yaml", &pod("whole", "whole"));
    wait_until("whole runs", || {
        str_at(&cluster.pod_json("whole"), "/status/phase") == "Running"
    });
    assert_eq!(
        str_at(&cluster.pod_json("whole"), "/spec/nodeName"),
        "gpu-node"
    );
    let claims = cluster.berth_ok(&["get", "resourceclaims"]);
    assert!(
        claims
            .lines()
            .any(|l| l.starts_with("whole ") && l.contains("allocated,reserved")),
        "{claims}"
    );
    wait_until("whole prints its device", || {
        let out = cluster.berth(&["logs", "whole"]);
        String::from_utf8_lossy(&out.stdout).contains("cuda=1 dev=gpu.berth.dev/gpu-node/gpu-1")
    });

    // Two pods take 40Gi each of the a100; a third would exceed its 80Gi and waits.
    apply(&cluster, "half-1.yaml", &pod("half-1", "half-1"));
    apply(&cluster, "half-2.yaml", &pod("half-2", "half-2"));
    for name in ["half-1", "half-2"] {
        wait_until(&format!("{name} runs"), || {
            str_at(&cluster.pod_json(name), "/status/phase") == "Running"
        });
    }
    let json = cluster.berth_ok(&["get", "resourceclaims", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&json).expect("claims JSON");
    let shares: Vec<&serde_json::Value> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|c| c["metadata"]["name"] == "half-1" || c["metadata"]["name"] == "half-2")
        .map(|c| &c["status"]["allocation"]["devices"]["results"][0])
        .collect();
    assert_eq!(shares.len(), 2, "{json}");
    for share in &shares {
        assert_eq!(share["device"], "gpu-0", "{json}");
        assert_eq!(share["consumedCapacity"]["memory"], "40Gi", "{json}");
        assert!(
            share["shareID"].as_str().is_some_and(|s| s.len() == 36),
            "{json}"
        );
    }
    assert_ne!(shares[0]["shareID"], shares[1]["shareID"], "{json}");
    wait_until("half-2 sees the a100", || {
        let out = cluster.berth(&["logs", "half-2"]);
        String::from_utf8_lossy(&out.stdout).contains("cuda=0 dev=gpu.berth.dev/gpu-node/gpu-0")
    });

    apply(&cluster, "half-3.yaml", &pod("half-3", "half-3"));
    wait_until("half-3 is unschedulable", || {
        pending_message(&cluster, "half-3").is_some()
    });
    let message = pending_message(&cluster, "half-3").expect("a message");
    assert_eq!(
        message,
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, \
         preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    );
    let described = cluster.berth_ok(&["describe", "pod", "half-3"]);
    assert!(
        described.contains("gpu:") && described.contains("half-3 (pending)"),
        "names its claim:\n{described}"
    );

    // No device matches the selector: Pending with the same words.
    apply(&cluster, "none.yaml", &pod("none", "none"));
    wait_until("none is unschedulable", || {
        pending_message(&cluster, "none").is_some()
    });
    assert!(pending_message(&cluster, "none")
        .expect("a message")
        .starts_with("0/2 nodes are available: 2 cannot allocate all claims."),);

    // When half-1 and its claim are gone, half-3 takes the share.
    cluster.berth_ok(&["delete", "pod", "half-1"]);
    cluster.berth_ok(&["delete", "resourceclaim", "half-1"]);
    wait_until("half-3 runs", || {
        str_at(&cluster.pod_json("half-3"), "/status/phase") == "Running"
    });
}

/// A ResourceClaimTemplate for one whole t4.
const T4_TEMPLATE: &str = "\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t4}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu
          selectors:
          - cel: {expression: 'device.attributes[\"gpu.berth.dev\"].model == \"t4\"'}
";

/// A process pod whose entry `gpu` comes from `template`; it runs `script`.
fn template_pod(name: &str, template: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  restartPolicy: Never\n  \
         resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: {template}\n  containers:\n  \
         - name: main\n    image: sh\n    command: [sh, -c, '{script}']\n    resources:\n      \
         claims:\n      - name: gpu\n"
    )
}

/// The objects of a resource (`resourceclaims`) in the store, as JSON objects.
fn items(cluster: &TestCluster, resource: &str) -> Vec<serde_json::Value> {
    let json = cluster.berth_ok(&["get", resource, "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&json).expect("list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The claims in the store, as JSON objects.
fn claims_json(cluster: &TestCluster) -> Vec<serde_json::Value> {
    items(cluster, "resourceclaims")
}

#[test]
fn the_claim_controller_makes_claims_from_templates_and_releases_them() {
    let mut cluster = TestCluster::start();
    start_gpu_node(&mut cluster);
    cluster.wait_ready_nodes(1);
    apply(&cluster, "class.yaml", CLASS);

    // The template does not exist yet: no claim, the pod waits with kube's words and an
    // event naming the template.
    apply(
        &cluster,
        "first.yaml",
        &template_pod("first", "t4", "echo dev=$BERTH_DEVICE_GPU_GPU; sleep 600"),
    );
    wait_until("first waits for its claim", || {
        pending_message(&cluster, "first").is_some()
    });
    let message = pending_message(&cluster, "first").expect("a message");
    assert!(
        message.contains("pod \"default/first\": ResourceClaim not created yet"),
        "{message}"
    );
    wait_until("an event names the missing template", || {
        cluster
            .berth_ok(&["get", "events"])
            .contains("FailedResourceClaimCreation")
    });
    assert!(claims_json(&cluster).is_empty());

    // With the template, the controller makes the claim and the pod runs with the t4.
    apply(&cluster, "template.yaml", T4_TEMPLATE);
    wait_until("first runs", || {
        str_at(&cluster.pod_json("first"), "/status/phase") == "Running"
    });
    let pod = cluster.pod_json("first");
    assert_eq!(str_at(&pod, "/status/resourceClaimStatuses/0/name"), "gpu");
    let claim_name = str_at(&pod, "/status/resourceClaimStatuses/0/resourceClaimName").to_string();
    assert!(
        claim_name.starts_with("first-gpu-") && claim_name.len() == 15,
        "{claim_name}"
    );
    let claims = claims_json(&cluster);
    let [claim] = claims.as_slice() else {
        panic!("one claim: {claims:?}");
    };
    assert_eq!(claim["metadata"]["name"], claim_name.as_str());
    assert_eq!(claim["metadata"]["ownerReferences"][0]["kind"], "Pod");
    assert_eq!(claim["metadata"]["ownerReferences"][0]["name"], "first");
    assert_eq!(claim["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"],
        "gpu"
    );
    assert_eq!(
        claim["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-1"
    );
    wait_until("first sees the t4", || {
        let out = cluster.berth(&["logs", "first"]);
        String::from_utf8_lossy(&out.stdout).contains("dev=gpu.berth.dev/gpu-node/gpu-1")
    });

    // A second pod of the same template waits for the one t4 ...
    apply(
        &cluster,
        "second.yaml",
        &template_pod("second", "t4", "echo dev=$BERTH_DEVICE_GPU_GPU"),
    );
    wait_until("second cannot get the t4", || {
        pending_message(&cluster, "second")
            .is_some_and(|m| m.contains("cannot allocate all claims"))
    });
    // ... and gets it once first is deleted: its claim goes with it (garbage collection
    // by ownerReference).
    cluster.berth_ok(&["delete", "pod", "first"]);
    wait_until("second ran", || {
        str_at(&cluster.pod_json("second"), "/status/phase") == "Succeeded"
    });
    wait_until("first's claim is collected", || {
        claims_json(&cluster)
            .iter()
            .all(|c| c["metadata"]["name"] != claim_name.as_str())
    });
    // second is done: its claim is released and deleted although the pod stays.
    wait_until("second's claim is deleted", || {
        claims_json(&cluster).is_empty()
    });
    assert_eq!(
        str_at(&cluster.pod_json("second"), "/status/phase"),
        "Succeeded"
    );
}

/// The DeviceClass `berth dev --gpus` creates, and claim templates for the GPUs of
/// `--gpus`: a whole GPU, half of one (`milli: 500`), and a model no node has.
const GPU_TEMPLATES: &str = "\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.berth.dev}
spec:
  selectors:
  - cel: {expression: 'device.driver == \"gpu.berth.dev\"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: whole}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.berth.dev}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: half}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.berth.dev
          capacity:
            requests: {milli: 500}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: h100}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.berth.dev
          selectors:
          - cel: {expression: 'device.attributes[\"gpu.berth.dev\"].model == \"h100\"'}
";

/// The ResourceSlices in the store, as JSON objects.
fn slices_json(cluster: &TestCluster) -> Vec<serde_json::Value> {
    items(cluster, "resourceslices")
}

/// Issue 11's walkthrough on nodes whose agents publish GPUs with `--gpus`: a pod gets a
/// GPU from a template and sees it, two pods share one GPU by capacity while a third
/// waits naming its claim, a selector that matches nothing waits, a Job of 10 pods with a
/// GPU each completes on one GPU, and a node's slice goes with the node.
#[test]
fn agents_publish_gpus_that_pods_and_jobs_get_through_claim_templates() {
    let mut cluster = TestCluster::start();
    start(&mut cluster, "gpu-node", &["--gpus", "2:t4:16Gi"]);
    start(&mut cluster, "cpu-node", &[]);
    cluster.wait_ready_nodes(2);
    wait_until("gpu-node publishes its GPUs", || {
        slices_json(&cluster).len() == 1
    });
    let slices = slices_json(&cluster);
    let slice = &slices[0];
    assert_eq!(slice["metadata"]["name"], "gpu-node-gpu.berth.dev");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Node");
    assert_eq!(slice["spec"]["nodeName"], "gpu-node");
    assert_eq!(slice["spec"]["pool"]["name"], "gpu-node");
    assert_eq!(slice["spec"]["pool"]["generation"], 1);
    let devices = slice["spec"]["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), 2);
    assert_eq!(devices[1]["attributes"]["model"]["string"], "t4");
    assert_eq!(devices[1]["attributes"]["index"]["int"], 1);
    assert!(devices[1]["attributes"]["uuid"]["string"]
        .as_str()
        .is_some_and(|u| u.starts_with("GPU-")));
    assert_eq!(devices[1]["capacity"]["memory"]["value"], "16Gi");
    assert_eq!(devices[1]["capacity"]["milli"]["value"], "1k");
    apply(&cluster, "templates.yaml", GPU_TEMPLATES);

    // A whole GPU: on the GPU node, allocated in `get resourceclaims`, seen by the process.
    let show = "echo cuda=$CUDA_VISIBLE_DEVICES dev=$BERTH_DEVICE_GPU_GPU; sleep 600";
    apply(&cluster, "solo.yaml", &template_pod("solo", "whole", show));
    wait_until("solo runs", || {
        str_at(&cluster.pod_json("solo"), "/status/phase") == "Running"
    });
    assert_eq!(
        str_at(&cluster.pod_json("solo"), "/spec/nodeName"),
        "gpu-node"
    );
    let solo_claim = str_at(
        &cluster.pod_json("solo"),
        "/status/resourceClaimStatuses/0/resourceClaimName",
    )
    .to_string();
    let listed = cluster.berth_ok(&["get", "resourceclaims"]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&format!("{solo_claim} ")) && l.contains("allocated,reserved")),
        "{listed}"
    );
    wait_until("solo sees gpu-0", || {
        let out = cluster.berth(&["logs", "solo"]);
        String::from_utf8_lossy(&out.stdout).contains("cuda=0 dev=gpu.berth.dev/gpu-node/gpu-0")
    });

    // Two halves share gpu-1; a third half would exceed its 1000 milli and waits.
    for name in ["half-1", "half-2"] {
        apply(
            &cluster,
            &format!("{name}.yaml"),
            &template_pod(name, "half", show),
        );
        wait_until(&format!("{name} runs"), || {
            str_at(&cluster.pod_json(name), "/status/phase") == "Running"
        });
        wait_until(&format!("{name} sees gpu-1"), || {
            let out = cluster.berth(&["logs", name]);
            String::from_utf8_lossy(&out.stdout).contains("cuda=1 dev=gpu.berth.dev/gpu-node/gpu-1")
        });
    }
    apply(
        &cluster,
        "half-3.yaml",
        &template_pod("half-3", "half", show),
    );
    wait_until("half-3 is unschedulable", || {
        pending_message(&cluster, "half-3")
            .is_some_and(|m| m.contains("cannot allocate all claims"))
    });
    let half_3_claim = str_at(
        &cluster.pod_json("half-3"),
        "/status/resourceClaimStatuses/0/resourceClaimName",
    )
    .to_string();
    let described = cluster.berth_ok(&["describe", "pod", "half-3"]);
    assert!(
        described.contains(&format!("{half_3_claim} (pending)")),
        "names its claim:\n{described}"
    );

    // No h100 anywhere: Pending with the same words.
    apply(&cluster, "none.yaml", &template_pod("none", "h100", show));
    wait_until("none is unschedulable", || {
        pending_message(&cluster, "none").is_some_and(|m| {
            m.starts_with("0/2 nodes are available: 2 cannot allocate all claims.")
        })
    });

    // Free the GPU node: half-3 takes a share once half-1 is gone, then everything goes.
    cluster.berth_ok(&["delete", "pod", "half-1"]);
    wait_until("half-3 runs", || {
        str_at(&cluster.pod_json("half-3"), "/status/phase") == "Running"
    });
    for name in ["solo", "half-2", "half-3", "none"] {
        cluster.berth_ok(&["delete", "pod", name]);
    }
    wait_until("every claim is collected", || {
        claims_json(&cluster).is_empty()
    });

    // A Job of 10 completions, parallelism 2, each pod with a whole GPU of its own: the
    // two GPUs serve one pod each at a time, released as each pod ends.
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  completions: 10\n  \
               parallelism: 2\n  template:\n    spec:\n      restartPolicy: Never\n      \
               resourceClaims:\n      - name: gpu\n        resourceClaimTemplateName: whole\n      \
               containers:\n      - name: main\n        image: sh\n        \
               command: [sh, -c, 'test -n \"$CUDA_VISIBLE_DEVICES\"']\n        resources:\n          \
               claims:\n          - name: gpu\n";
    apply(&cluster, "job.yaml", job);
    wait_until("the job completes", || {
        let json = cluster.berth_ok(&["get", "job", "train", "-o", "json"]);
        let job: serde_json::Value = serde_json::from_str(&json).expect("job JSON");
        job["status"]["succeeded"] == 10
    });
    wait_until("the job's claims are deleted", || {
        claims_json(&cluster).is_empty()
    });

    // The node's slice goes with the node.
    cluster.agent("gpu-node").stop();
    cluster.berth_ok(&["delete", "node", "gpu-node"]);
    wait_until("gpu-node's slice is collected", || {
        slices_json(&cluster).is_empty()
    });
}

/// Replaces `path`'s content as an editor saving it does (a new file renamed over it), so
/// that the agent never reads half of it.
fn rewrite(path: &std::path::Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write the new devices file");
    std::fs::rename(&tmp, path).expect("rename it over the old one");
}

/// The events of `reason` about node `node`, as JSON objects.
fn node_events(cluster: &TestCluster, node: &str, reason: &str) -> Vec<serde_json::Value> {
    items(cluster, "events")
        .into_iter()
        .filter(|e| {
            e["involvedObject"]["kind"] == "Node"
                && e["involvedObject"]["name"] == node
                && e["reason"] == reason
        })
        .collect()
}

/// The devices of gpu-node's slice and its pool generation.
fn gpu_node_devices(cluster: &TestCluster) -> (Vec<String>, i64) {
    let slices = slices_json(cluster);
    let [slice] = slices.as_slice() else {
        panic!("one slice: {slices:?}");
    };
    let names = slice["spec"]["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["name"].as_str().unwrap_or_default().to_string())
        .collect();
    (
        names,
        slice["spec"]["pool"]["generation"].as_i64().unwrap_or(-1),
    )
}

/// Item 6 of issue 11: an edited `--devices` file replaces the node's slice within the
/// session (its pool at the next generation), a device taken away stays allocated to the
/// claim that holds it (as in kube: withdrawing a device does not touch allocations), a new
/// device is usable at once, and a broken edit changes nothing but says why on the Node.
#[test]
fn an_edited_devices_file_replaces_the_nodes_devices() {
    let mut cluster = TestCluster::start();
    start_gpu_node(&mut cluster);
    cluster.wait_ready_nodes(1);
    let file = cluster.dir.path().join("gpu-node-devices.yaml");
    apply(&cluster, "class.yaml", CLASS);
    apply(
        &cluster,
        "claims.yaml",
        &[claim("t4", "t4", None), claim("h100", "h100", None)].join("---\n"),
    );
    apply(&cluster, "on-t4.yaml", &pod("on-t4", "t4"));
    wait_until("on-t4 runs", || {
        str_at(&cluster.pod_json("on-t4"), "/status/phase") == "Running"
    });
    assert_eq!(
        gpu_node_devices(&cluster),
        (vec!["gpu-0".to_string(), "gpu-1".to_string()], 1)
    );

    // The t4 (allocated to on-t4) goes, an h100 comes.
    let edited = DEVICES.replace(
        "  - name: gpu-1\n    attributes:\n      model: {string: t4}\n      index: {int: 1}\n",
        "  - name: gpu-2\n    attributes:\n      model: {string: h100}\n      index: {int: 2}\n",
    );
    assert_ne!(edited, DEVICES);
    rewrite(&file, &edited);
    wait_until("the slice shows the new devices", || {
        let yaml = cluster.berth_ok(&["get", "resourceslices", "-o", "yaml"]);
        yaml.contains("name: gpu-2") && !yaml.contains("name: gpu-1")
    });
    assert_eq!(
        gpu_node_devices(&cluster),
        (vec!["gpu-0".to_string(), "gpu-2".to_string()], 2)
    );
    wait_until("the update is recorded on the node", || {
        !node_events(&cluster, "gpu-node", "DevicesUpdated").is_empty()
    });
    // The claim keeps its withdrawn device and its pod runs on.
    let t4 = claims_json(&cluster)
        .into_iter()
        .find(|c| c["metadata"]["name"] == "t4")
        .expect("claim t4");
    assert_eq!(
        t4["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-1"
    );
    assert_eq!(
        str_at(&cluster.pod_json("on-t4"), "/status/phase"),
        "Running"
    );
    // The new device is there for a new pod.
    apply(&cluster, "on-h100.yaml", &pod("on-h100", "h100"));
    wait_until("on-h100 runs", || {
        str_at(&cluster.pod_json("on-h100"), "/status/phase") == "Running"
    });
    wait_until("on-h100 sees gpu-2", || {
        let out = cluster.berth(&["logs", "on-h100"]);
        String::from_utf8_lossy(&out.stdout).contains("cuda=2 dev=gpu.berth.dev/gpu-node/gpu-2")
    });

    // A broken edit: refused with the field named, the slice stays as it was.
    rewrite(&file, &edited.replace("name: gpu-2", "name: GPU_2"));
    wait_until("the refusal is recorded on the node", || {
        !node_events(&cluster, "gpu-node", "InvalidDevices").is_empty()
    });
    let events = node_events(&cluster, "gpu-node", "InvalidDevices");
    let message = events[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.devices[1].name") && message.contains("GPU_2"),
        "{message}"
    );
    assert_eq!(events[0]["type"], "Warning");
    assert_eq!(
        gpu_node_devices(&cluster),
        (vec!["gpu-0".to_string(), "gpu-2".to_string()], 2)
    );
    // The agent is still up and the node still Ready.
    cluster.wait_ready_nodes(1);
}

/// A manifest of docs/examples/dra/.
fn example(name: &str) -> String {
    format!("{}/docs/examples/dra/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn apply_example(cluster: &TestCluster, name: &str) {
    cluster.berth_ok(&["apply", "-f", &example(name)]);
}

/// The pods whose name starts with `prefix`, as JSON objects.
fn pods_named(cluster: &TestCluster, prefix: &str) -> Vec<serde_json::Value> {
    items(cluster, "pods")
        .into_iter()
        .filter(|p| {
            p["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect()
}

/// Claim `name` of the default namespace.
fn claim_json(cluster: &TestCluster, name: &str) -> serde_json::Value {
    claims_json(cluster)
        .into_iter()
        .find(|c| c["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("claim {name}"))
}

/// The (pool, device) pairs a claim was allocated.
fn allocated(claim: &serde_json::Value) -> Vec<(String, String)> {
    claim["status"]["allocation"]["devices"]["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .map(|r| {
                    (
                        r["pool"].as_str().unwrap_or_default().to_string(),
                        r["device"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Item 7 of issue 11: the Kubernetes docs' DRA examples (docs/examples/dra/), on two
/// nodes publishing the devices they assume, behave as kube's allocator makes them: the
/// Job's pods each need a GPU of their own and, through the shared claim, every matching
/// GPU of the node (allocationMode All, same selector), so no node can give both and they
/// stay Pending; the shared claim alone takes both GPUs of one node and pins every pod that
/// names it there; a per-pod claim then only fits the other node; All cannot be met once
/// each node has a device taken; the metadata readers and the tutorial's pod run and see
/// their devices.
#[test]
fn the_kubernetes_docs_dra_examples_behave_as_with_kubes_allocator() {
    let mut cluster = TestCluster::start();
    let devices = example("devices.yaml");
    for node in ["node-a", "node-b"] {
        start(&mut cluster, node, &["--devices", &devices]);
    }
    cluster.wait_ready_nodes(2);
    wait_until("both nodes publish both drivers", || {
        slices_json(&cluster).len() == 4
    });
    for name in [
        "deviceclass.yaml",
        "resourceclaimtemplate.yaml",
        "resourceclaim.yaml",
        "job.yaml",
    ] {
        apply_example(&cluster, name);
    }

    // The Job: its two running pods wait, each with kube's words; nothing is allocated.
    wait_until("the job's pods are unschedulable", || {
        let pods = pods_named(&cluster, "example-dra-job-");
        pods.len() == 2
            && pods.iter().all(|p| {
                pending_message(&cluster, p["metadata"]["name"].as_str().unwrap_or_default())
                    .is_some_and(|m| {
                        m.starts_with("0/2 nodes are available: 2 cannot allocate all claims.")
                    })
            })
    });
    assert!(allocated(&claim_json(&cluster, "example-resource-claim")).is_empty());
    assert!(claims_json(&cluster)
        .iter()
        .all(|c| allocated(c).is_empty()));
    cluster.berth_ok(&["delete", "job", "example-dra-job"]);
    wait_until("the job's pods and claims are gone", || {
        pods_named(&cluster, "example-dra-job-").is_empty() && claims_json(&cluster).len() == 1
    });

    // The shared claim alone: both 64Gi GPUs of one node, and every pod naming it there.
    for name in ["shared-1", "shared-2"] {
        apply(
            &cluster,
            &format!("{name}.yaml"),
            &pod(name, "example-resource-claim"),
        );
    }
    for name in ["shared-1", "shared-2"] {
        wait_until(&format!("{name} runs"), || {
            str_at(&cluster.pod_json(name), "/status/phase") == "Running"
        });
    }
    let all_node = str_at(&cluster.pod_json("shared-1"), "/spec/nodeName").to_string();
    assert_eq!(
        str_at(&cluster.pod_json("shared-2"), "/spec/nodeName"),
        all_node
    );
    let shared = claim_json(&cluster, "example-resource-claim");
    assert_eq!(
        allocated(&shared),
        [
            (all_node.clone(), "gpu-0".to_string()),
            (all_node.clone(), "gpu-1".to_string())
        ]
    );
    assert_eq!(
        shared["status"]["reservedFor"].as_array().map(Vec::len),
        Some(2)
    );
    let other = if all_node == "node-a" {
        "node-b"
    } else {
        "node-a"
    };

    // A GPU of its own from the template: only the other node has one free.
    let hold = "sleep 600";
    apply(
        &cluster,
        "own-1.yaml",
        &template_pod("own-1", "example-resource-claim-template", hold),
    );
    wait_until("own-1 runs", || {
        str_at(&cluster.pod_json("own-1"), "/status/phase") == "Running"
    });
    assert_eq!(str_at(&cluster.pod_json("own-1"), "/spec/nodeName"), other);

    // Once the shared claim's pods are gone its GPUs are free; a second own GPU, on the
    // first node, leaves each node one GPU short of All.
    cluster.berth_ok(&["delete", "pod", "shared-1", "shared-2"]);
    wait_until("the shared claim is released", || {
        allocated(&claim_json(&cluster, "example-resource-claim")).is_empty()
    });
    let pinned = template_pod("own-2", "example-resource-claim-template", hold).replace(
        "spec:\n  restartPolicy",
        &format!("spec:\n  nodeSelector: {{kubernetes.io/hostname: {all_node}}}\n  restartPolicy"),
    );
    apply(&cluster, "own-2.yaml", &pinned);
    wait_until("own-2 runs", || {
        str_at(&cluster.pod_json("own-2"), "/status/phase") == "Running"
    });
    assert_eq!(
        str_at(&cluster.pod_json("own-2"), "/spec/nodeName"),
        all_node
    );
    apply(
        &cluster,
        "shared-3.yaml",
        &pod("shared-3", "example-resource-claim"),
    );
    wait_until("shared-3 is unschedulable", || {
        pending_message(&cluster, "shared-3").is_some()
    });
    assert!(pending_message(&cluster, "shared-3")
        .expect("a message")
        .starts_with("0/2 nodes are available: 2 cannot allocate all claims."));

    // The metadata readers and the tutorial's pod get a gpu.example.com GPU and see it.
    for name in [
        "metadata-pod.yaml",
        "metadata-template-pod.yaml",
        "tutorial.yaml",
    ] {
        apply_example(&cluster, name);
    }
    for (pod, heading) in [
        ("gpu-metadata-reader", "=== DRA device metadata ==="),
        (
            "gpu-metadata-template-reader",
            "=== DRA device metadata (from template) ===",
        ),
    ] {
        wait_until(&format!("{pod} prints its device"), || {
            let out = String::from_utf8_lossy(&cluster.berth(&["logs", pod]).stdout).to_string();
            out.contains(heading) && out.contains("BERTH_DEVICE_MY_GPU_GPU=gpu.example.com/node-")
        });
    }
    wait_until("the tutorial's pod0 runs", || {
        let out = cluster.berth_ok(&["get", "pod", "-n", "dra-tutorial", "pod0", "-o", "json"]);
        let pod: serde_json::Value = serde_json::from_str(&out).expect("pod JSON");
        str_at(&pod, "/status/phase") == "Running"
    });
    wait_until("pod0 sees its device", || {
        let out = cluster.berth(&["logs", "-n", "dra-tutorial", "pod0"]);
        String::from_utf8_lossy(&out.stdout).contains("BERTH_DEVICE_GPU_SOME_GPU")
    });
}
