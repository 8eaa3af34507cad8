//! Objects as Kubernetes writes them (`kubectl get -o json` of a pod, a node as kubelet
//! reports it, workloads with their controllers' status) decode, and encode back with kube's
//! field names and shapes.

use berth_model::model::{Kind, Object};
use serde_json::{json, Value};

/// Whether everything in `written` is in `read` with the same value: what the model encodes
/// is a part of what kube wrote, under kube's names (fields Berth ignores are left out).
fn missing_from(read: &Value, written: &Value, path: &str) -> Vec<String> {
    match (read, written) {
        (Value::Object(read), Value::Object(written)) => written
            .iter()
            .flat_map(|(key, value)| match read.get(key) {
                Some(original) => missing_from(original, value, &format!("{path}.{key}")),
                None => vec![format!("{path}.{key} (not in kube's object)")],
            })
            .collect(),
        (Value::Array(read), Value::Array(written)) if read.len() == written.len() => read
            .iter()
            .zip(written)
            .enumerate()
            .flat_map(|(i, (r, w))| missing_from(r, w, &format!("{path}[{i}]")))
            .collect(),
        _ if read == written => vec![],
        _ => vec![format!("{path}: kube has {read}, Berth writes {written}")],
    }
}

/// The value at a dotted path (`status.containerStatuses.0.state`).
fn at<'a>(value: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .fold(value, |v, key| match key.parse::<usize>() {
            Ok(i) => &v[i],
            Err(_) => &v[key],
        })
}

/// Decodes `manifest` as `kind`, encodes it again, and checks that the encoding is part of
/// the manifest and keeps every path of `kept`.
fn round_trip(kind: Kind, manifest: &Value, kept: &[&str]) -> Object {
    let object = Object::from_json(kind, manifest.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("{kind} as kube writes it decodes: {e}"));
    let written: Value = serde_json::from_slice(&object.to_json()).expect("JSON");
    let wrong = missing_from(manifest, &written, "");
    assert!(wrong.is_empty(), "{kind}: {wrong:#?}");
    for path in kept {
        assert_eq!(
            at(&written, path),
            at(manifest, path),
            "{kind}: {path} is kept"
        );
    }
    object
}

fn pod_manifest() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z"},
            "creationTimestamp": "2026-11-30T10:00:01Z",
            "generateName": "web-7d9f8c6b5d-",
            "generation": 1,
            "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5d"},
            "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}},
                               "manager": "kube-controller-manager", "operation": "Update",
                               "time": "2026-11-30T10:00:01Z"}],
            "name": "web-7d9f8c6b5d-x2k4p",
            "namespace": "default",
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": true, "controller": true,
                                 "kind": "ReplicaSet", "name": "web-7d9f8c6b5d",
                                 "uid": "0f7c5a34-4f8e-4a36-9d0e-3c2b1a0f9e8d"}],
            "resourceVersion": "48213",
            "uid": "5b1f2c3d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"
        },
        "spec": {
            "containers": [{
                "image": "nginx:1.27",
                "imagePullPolicy": "IfNotPresent",
                "livenessProbe": {"failureThreshold": 3, "httpGet": {"path": "/", "port": 80, "scheme": "HTTP"},
                                  "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
                "name": "web",
                "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                              "requests": {"cpu": "250m", "memory": "64Mi"}},
                "securityContext": {"allowPrivilegeEscalation": false},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "name": "kube-api-access-8xk2q", "readOnly": true}]
            }],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": true,
            "initContainers": [{
                "command": ["sh", "-c", "true"],
                "image": "busybox:1.36",
                "imagePullPolicy": "IfNotPresent",
                "name": "init",
                "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"
            }],
            "nodeName": "worker-1",
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "tolerationSeconds": 300}
            ],
            "volumes": [{"name": "kube-api-access-8xk2q",
                         "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {
                             "expirationSeconds": 3607, "path": "token"}}]}}]
        },
        "status": {
            "conditions": [
                {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:04Z", "observedGeneration": 1,
                 "status": "True", "type": "PodReadyToStartContainers"},
                {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:05Z", "observedGeneration": 1,
                 "status": "True", "type": "Initialized"},
                {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:02:11Z", "observedGeneration": 1,
                 "status": "True", "type": "Ready"},
                {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:02:11Z", "observedGeneration": 1,
                 "status": "True", "type": "ContainersReady"},
                {"lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:01Z", "observedGeneration": 1,
                 "status": "True", "type": "PodScheduled"}
            ],
            "containerStatuses": [{
                "allocatedResources": {"cpu": "250m", "memory": "64Mi"},
                "containerID": "containerd://9a8b7c6d5e4f",
                "image": "docker.io/library/nginx:1.27",
                "imageID": "docker.io/library/nginx@sha256:0f7e5d1c2b3a4958",
                "lastState": {"terminated": {
                    "containerID": "containerd://1a2b3c4d5e6f", "exitCode": 137,
                    "finishedAt": "2026-11-30T10:02:09Z", "reason": "OOMKilled",
                    "startedAt": "2026-11-30T10:00:06Z"}},
                "name": "web",
                "ready": true,
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                              "requests": {"cpu": "250m", "memory": "64Mi"}},
                "restartCount": 1,
                "started": true,
                "state": {"running": {"startedAt": "2026-11-30T10:02:10Z"}},
                "user": {"linux": {"gid": 0, "supplementalGroups": [0], "uid": 0}},
                "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "name": "kube-api-access-8xk2q", "readOnly": true,
                                  "recursiveReadOnly": "Disabled"}]
            }],
            "hostIP": "10.0.0.11",
            "hostIPs": [{"ip": "10.0.0.11"}],
            "initContainerStatuses": [{
                "containerID": "containerd://7f6e5d4c3b2a",
                "image": "docker.io/library/busybox:1.36",
                "imageID": "docker.io/library/busybox@sha256:5b4a39281706",
                "lastState": {},
                "name": "init",
                "ready": true,
                "restartCount": 0,
                "started": false,
                "state": {"terminated": {
                    "containerID": "containerd://7f6e5d4c3b2a", "exitCode": 0,
                    "finishedAt": "2026-11-30T10:00:05Z", "reason": "Completed",
                    "startedAt": "2026-11-30T10:00:04Z"}}
            }],
            "observedGeneration": 1,
            "phase": "Running",
            "podIP": "10.244.1.17",
            "podIPs": [{"ip": "10.244.1.17"}],
            "qosClass": "Burstable",
            "startTime": "2026-11-30T10:00:01Z"
        }
    })
}

#[test]
fn a_pod_as_kubectl_prints_it_round_trips() {
    let manifest = pod_manifest();
    let object = round_trip(
        Kind::Pod,
        &manifest,
        &[
            "status.conditions.0.type",
            "status.conditions.0.observedGeneration",
            "status.conditions.2.lastTransitionTime",
            "status.containerStatuses.0.state",
            "status.containerStatuses.0.lastState",
            "status.containerStatuses.0.containerID",
            "status.containerStatuses.0.imageID",
            "status.containerStatuses.0.image",
            "status.containerStatuses.0.started",
            "status.containerStatuses.0.restartCount",
            "status.initContainerStatuses",
            "status.hostIPs",
            "status.podIP",
            "status.podIPs",
            "status.qosClass",
            "status.startTime",
            "status.observedGeneration",
            "spec.initContainers.0.command",
            "spec.tolerations",
        ],
    );
    let Object::Pod(pod) = object else {
        panic!("a pod")
    };
    let web = &pod.status.container_statuses[0];
    assert!(web.state.is_running());
    assert_eq!(web.exit_code(), Some(137), "the last termination's code");
    assert_eq!(web.last_state.reason(), "OOMKilled");
    let init = &pod.status.init_container_statuses[0];
    assert_eq!((init.reason(), init.exit_code()), ("Completed", Some(0)));
    assert_eq!(berth_model::printers::pod_status(&pod), "Running");
}

#[test]
fn container_states_read_and_print_like_kubes() {
    // (case, containerStatuses[0].state and lastState, kubectl's STATUS column)
    let cases = [
        (
            "waiting",
            json!({"state": {"waiting": {"reason": "CrashLoopBackOff",
            "message": "back-off 10s restarting failed container=web"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}),
            "CrashLoopBackOff",
        ),
        (
            "terminated with reason",
            json!({"state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
            "lastState": {}}),
            "Completed",
        ),
        (
            "terminated by a signal",
            json!({"state": {"terminated": {"exitCode": 0, "signal": 9}},
            "lastState": {}}),
            "Signal:9",
        ),
        (
            "terminated with a code",
            json!({"state": {"terminated": {"exitCode": 2}}, "lastState": {}}),
            "ExitCode:2",
        ),
        (
            "no state yet",
            json!({"state": {}, "lastState": {}}),
            "Pending",
        ),
    ];
    for (name, state, want) in cases {
        let mut status = json!({"name": "web", "ready": false, "restartCount": 0, "image": "nginx",
                                "imageID": ""});
        for (k, v) in state.as_object().expect("an object") {
            status[k] = v.clone();
        }
        let manifest = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {}}]},
            "status": {"phase": "Pending", "containerStatuses": [status]}
        });
        let Object::Pod(pod) =
            round_trip(Kind::Pod, &manifest, &["status.containerStatuses.0.state"])
        else {
            panic!("a pod")
        };
        assert_eq!(berth_model::printers::pod_status(&pod), want, "{name}");
    }
    let bad = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": []},
        "status": {"containerStatuses": [{"name": "web", "state": {"sleeping": {}}}]}
    });
    let err =
        berth_model::decode::object_json(Kind::Pod, &bad.to_string()).expect_err("unknown state");
    assert_eq!(
        err.path, "status.containerStatuses[0].state.sleeping",
        "{err}"
    );
}

#[test]
fn container_statuses_stored_by_an_older_berth_still_read() {
    // (stored status, state it reads as, reason, exit code)
    let cases = [
        (
            json!({"name": "c", "state": "running", "ready": true, "restartCount": 0}),
            "running",
            "",
            None,
        ),
        (
            json!({"name": "c", "state": "waiting", "reason": "CrashLoopBackOff", "exitCode": 1,
                "restartCount": 2}),
            "waiting",
            "CrashLoopBackOff",
            Some(1),
        ),
        (
            json!({"name": "c", "state": "terminated", "reason": "OOMKilled", "exitCode": 137}),
            "terminated",
            "OOMKilled",
            Some(137),
        ),
    ];
    for (stored, want_state, want_reason, want_code) in cases {
        let pod: berth_model::model::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"}, "spec": {"containers": []},
            "status": {"containerStatuses": [stored.clone()]}
        }))
        .unwrap_or_else(|e| panic!("{stored}: {e}"));
        let c = &pod.status.container_statuses[0];
        let state = [
            ("waiting", c.state.is_waiting()),
            ("running", c.state.is_running()),
            ("terminated", c.state.is_terminated()),
        ];
        assert_eq!(
            state
                .iter()
                .filter(|(_, set)| *set)
                .map(|(n, _)| *n)
                .collect::<Vec<_>>(),
            vec![want_state],
            "{stored}"
        );
        assert_eq!(
            (c.reason(), c.exit_code()),
            (want_reason, want_code),
            "{stored}"
        );
        let written = serde_json::to_value(c).expect("JSON");
        assert!(
            written["state"].is_object(),
            "written in kube's shape: {written}"
        );
    }
}

#[test]
fn a_node_as_kubelet_writes_it_round_trips() {
    let manifest = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": "2026-11-29T08:00:00Z",
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "worker-1",
                       "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "eu-west-1a"},
            "name": "worker-1",
            "resourceVersion": "48100",
            "uid": "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
        },
        "spec": {
            "podCIDR": "10.244.1.0/24",
            "podCIDRs": ["10.244.1.0/24"],
            "providerID": "aws:///eu-west-1a/i-0123456789abcdef0",
            "taints": [{"effect": "NoSchedule", "key": "dedicated", "value": "web"}]
        },
        "status": {
            "addresses": [{"address": "10.0.0.11", "type": "InternalIP"},
                          {"address": "worker-1", "type": "Hostname"}],
            "allocatable": {"cpu": "3900m", "ephemeral-storage": "95551679124", "hugepages-1Gi": "0",
                            "hugepages-2Mi": "0", "memory": "15928104Ki", "pods": "110"},
            "capacity": {"cpu": "4", "ephemeral-storage": "103677100Ki", "hugepages-1Gi": "0",
                         "hugepages-2Mi": "0", "memory": "16330536Ki", "pods": "110"},
            "conditions": [
                {"lastHeartbeatTime": "2026-11-30T10:05:00Z", "lastTransitionTime": "2026-11-29T08:00:00Z",
                 "message": "kubelet has sufficient memory available", "reason": "KubeletHasSufficientMemory",
                 "status": "False", "type": "MemoryPressure"},
                {"lastHeartbeatTime": "2026-11-30T10:05:00Z", "lastTransitionTime": "2026-11-29T08:00:30Z",
                 "message": "kubelet is posting ready status", "reason": "KubeletReady",
                 "status": "True", "type": "Ready"}
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "features": {"supplementalGroupsPolicy": true},
            "images": [{"names": ["docker.io/library/nginx@sha256:0f7e5d1c2b3a4958",
                                  "docker.io/library/nginx:1.27"], "sizeBytes": 72099410}],
            "nodeInfo": {"architecture": "amd64", "bootID": "b1c2", "containerRuntimeVersion": "containerd://2.1.1",
                         "kernelVersion": "6.8.0", "kubeProxyVersion": "", "kubeletVersion": "v1.34.1",
                         "machineID": "m1", "operatingSystem": "linux", "osImage": "Ubuntu 24.04 LTS",
                         "systemUUID": "s1"},
            "runtimeHandlers": [{"features": {"recursiveReadOnlyMounts": true, "userNamespaces": true},
                                 "name": "runc"}],
            "volumesAttached": [{"devicePath": "", "name": "kubernetes.io/csi/ebs.csi.aws.com^vol-1"}],
            "volumesInUse": ["kubernetes.io/csi/ebs.csi.aws.com^vol-1"]
        }
    });
    round_trip(
        Kind::Node,
        &manifest,
        &[
            "spec.taints",
            "status.addresses",
            "status.conditions",
            "status.images",
            "status.capacity.cpu",
            "status.allocatable.pods",
        ],
    );
}

#[test]
fn workloads_as_their_controllers_write_them_round_trip() {
    let template = json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "name": "web",
                                 "resources": {"requests": {"cpu": "100m"}},
                                 "terminationMessagePath": "/dev/termination-log",
                                 "terminationMessagePolicy": "File"}],
                 "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                 "schedulerName": "default-scheduler", "securityContext": {},
                 "terminationGracePeriodSeconds": 30}
    });
    let meta = |name: &str| {
        json!({"name": name, "namespace": "default", "generation": 2,
                                   "resourceVersion": "100", "uid": "u-1",
                                   "creationTimestamp": "2026-11-30T10:00:00Z"})
    };
    let condition = |type_: &str| {
        json!({"lastTransitionTime": "2026-11-30T10:00:05Z",
        "lastUpdateTime": "2026-11-30T10:00:05Z", "message": "m", "reason": "r", "status": "True",
        "type": type_})
    };
    let mut job_template = template.clone();
    job_template["spec"]["restartPolicy"] = json!("Never");
    let cases = [
        (
            Kind::Deployment,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web"),
                "spec": {"progressDeadlineSeconds": 600, "replicas": 3, "revisionHistoryLimit": 10,
                         "minReadySeconds": 5, "paused": false,
                         "selector": {"matchLabels": {"app": "web"}},
                         "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1},
                                      "type": "RollingUpdate"},
                         "template": template.clone()},
                "status": {"availableReplicas": 3, "conditions": [condition("Available"), condition("Progressing")],
                           "observedGeneration": 2, "readyReplicas": 3, "replicas": 3, "updatedReplicas": 3,
                           "terminatingReplicas": 0, "collisionCount": 1}
            }),
            vec![
                "spec.strategy",
                "spec.selector",
                "spec.replicas",
                "status.observedGeneration",
                "spec.template.spec.terminationGracePeriodSeconds",
            ],
        ),
        (
            Kind::ReplicaSet,
            json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("web-1"),
                "spec": {"replicas": 3, "minReadySeconds": 0, "selector": {"matchLabels": {"app": "web"}},
                         "template": template.clone()},
                "status": {"availableReplicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 2,
                           "readyReplicas": 3, "replicas": 3}
            }),
            vec!["spec.replicas", "status.readyReplicas"],
        ),
        (
            Kind::DaemonSet,
            json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("agent"),
                "spec": {"revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": "web"}},
                         "template": template.clone(),
                         "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                                            "type": "RollingUpdate"}},
                "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberAvailable": 2,
                           "numberMisscheduled": 0, "numberReady": 2, "observedGeneration": 2,
                           "updatedNumberScheduled": 2}
            }),
            vec!["status.desiredNumberScheduled", "status.numberReady"],
        ),
        (
            Kind::Job,
            json!({
                "apiVersion": "batch/v1", "kind": "Job", "metadata": meta("pi"),
                "spec": {"backoffLimit": 6, "completionMode": "NonIndexed", "completions": 1,
                         "manualSelector": false, "parallelism": 1, "podReplacementPolicy": "TerminatingOrFailed",
                         "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
                         "suspend": false, "ttlSecondsAfterFinished": 100, "activeDeadlineSeconds": 600,
                         "template": job_template},
                "status": {"completionTime": "2026-11-30T10:01:00Z",
                           "conditions": [{"lastProbeTime": "2026-11-30T10:01:00Z",
                                           "lastTransitionTime": "2026-11-30T10:01:00Z",
                                           "message": "Reached expected number of succeeded pods",
                                           "reason": "CompletionsReached", "status": "True",
                                           "type": "SuccessCriteriaMet"}],
                           "ready": 0, "startTime": "2026-11-30T10:00:00Z", "succeeded": 1, "terminating": 0,
                           "uncountedTerminatedPods": {}}
            }),
            vec![
                "spec.backoffLimit",
                "spec.completionMode",
                "spec.podReplacementPolicy",
                "status.conditions",
                "status.succeeded",
                "status.completionTime",
            ],
        ),
        (
            Kind::PodDisruptionBudget,
            json!({
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("web"),
                "spec": {"maxUnavailable": "20%", "selector": {"matchLabels": {"app": "web"}},
                         "unhealthyPodEvictionPolicy": "AlwaysAllow"},
                "status": {"conditions": [{"lastTransitionTime": "2026-11-30T10:00:05Z", "message": "",
                                           "observedGeneration": 2, "reason": "SufficientPods",
                                           "status": "True", "type": "DisruptionAllowed"}],
                           "currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1,
                           "expectedPods": 3, "observedGeneration": 2}
            }),
            vec!["spec.maxUnavailable", "status.disruptionsAllowed"],
        ),
        (
            Kind::PriorityClass,
            json!({
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "high"}, "value": 1000000, "globalDefault": false,
                "description": "for the web tier", "preemptionPolicy": "Never"
            }),
            vec!["value", "preemptionPolicy"],
        ),
        (
            Kind::Event,
            json!({
                "apiVersion": "v1", "kind": "Event", "metadata": meta("web.1873"),
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default",
                                   "resourceVersion": "100", "uid": "u-1"},
                "reason": "Scheduled", "message": "Successfully assigned default/web to worker-1",
                "type": "Normal", "source": {"component": "default-scheduler"},
                "firstTimestamp": null, "lastTimestamp": null, "eventTime": "2026-11-30T10:00:01.123456Z",
                "action": "Binding", "reportingComponent": "default-scheduler",
                "reportingInstance": "default-scheduler-control-plane", "count": 1
            }),
            vec!["reason", "involvedObject.kind", "reportingComponent"],
        ),
    ];
    for (kind, manifest, kept) in cases {
        round_trip(kind, &manifest, &kept);
    }
}
