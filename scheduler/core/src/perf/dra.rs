//! The DRA objects of kube's scheduler_perf `dra/` workloads (performance-config.yaml and
//! its templates): the DeviceClass `test-class` of driver `test-driver.cdi.k8s.io`, one
//! ResourceSlice per node with `maxClaimsPerNode` devices (`instance-0`...), and the claims
//! pods use: one per pod from a template, or one shared by five pods.
//!
//! The in-process runner has no claim controller: a pod from the template comes with its
//! claim already made, as kube's resourceclaim controller would make it (owned by the pod,
//! recorded in `status.resourceClaimStatuses`).

use berth_model::model::{
    DeviceClass, Object, Pod, PodResourceClaim, PodResourceClaimStatus, ResourceClaim,
    ResourceClaimRef, ResourceClaimTemplate, ResourceSlice,
};
use serde_json::json;

/// The driver of the test devices.
pub const DRIVER: &str = "test-driver.cdi.k8s.io";
/// The DeviceClass of the test devices.
pub const CLASS: &str = "test-class";
/// The ResourceClaimTemplate pods name.
pub const TEMPLATE: &str = "test-claim-template";
/// The pods' claim entry (`spec.resourceClaims[].name`).
pub const ENTRY: &str = "resource";
/// Pods that share one claim in the shared-claim workload.
pub const PODS_PER_SHARED_CLAIM: usize = 5;

/// How a workload's pods get their claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimSource {
    /// pod-with-claim-template.yaml: a claim per pod from [`TEMPLATE`].
    Template,
    /// pod-with-claim-ref.yaml: claim `test-claim-<i / 5>`, shared by five pods.
    Shared,
}

/// The DRA part of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DraSetup {
    /// Devices per node (kube's `maxClaimsPerNode`).
    pub devices_per_node: usize,
    /// How pods get their claims.
    pub claims: ClaimSource,
}

fn decode<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("the DRA templates are valid")
}

/// deviceclass.yaml.
pub fn device_class() -> DeviceClass {
    decode(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == {DRIVER:?}")}}]},
    }))
}

/// The spec of resourceclaim(template).yaml: one request `req-0` for a device of the class.
fn claim_spec() -> serde_json::Value {
    json!({"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": CLASS}}]}})
}

/// resourceclaimtemplate.yaml in `namespace`.
pub fn claim_template(namespace: &str) -> ResourceClaimTemplate {
    decode(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": TEMPLATE, "namespace": namespace},
        "spec": {"spec": claim_spec()},
    }))
}

/// resourceclaim.yaml: claim `test-claim-<index>` in `namespace`.
pub fn shared_claim(namespace: &str, index: usize) -> ResourceClaim {
    decode(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": format!("test-claim-{index}"), "namespace": namespace},
        "spec": claim_spec(),
    }))
}

/// The test driver's ResourceSlice of `node`: `devices` devices `instance-<i>`, in a pool
/// named after the node.
pub fn slice(node: &str, devices: usize) -> ResourceSlice {
    let devices: Vec<serde_json::Value> = (0..devices)
        .map(|i| {
            json!({"name": format!("instance-{i}"),
                        "attributes": {"driverVersion": {"version": "1.2.3"}}})
        })
        .collect();
    decode(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-{DRIVER}")},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    }))
}

/// Gives `pod` (number `index` of its group) its claim entry, and for the template source
/// the claim made for it; the pod gets a uid so that the claim can name it as owner.
pub fn attach(pod: &mut Pod, index: usize, source: ClaimSource) -> Option<ResourceClaim> {
    pod.spec.containers[0].resources.claims = vec![ResourceClaimRef {
        name: ENTRY.to_string(),
        request: String::new(),
    }];
    match source {
        ClaimSource::Shared => {
            pod.spec.resource_claims = vec![PodResourceClaim {
                name: ENTRY.to_string(),
                resource_claim_name: Some(format!("test-claim-{}", index / PODS_PER_SHARED_CLAIM)),
                resource_claim_template_name: None,
            }];
            None
        }
        ClaimSource::Template => {
            pod.spec.resource_claims = vec![PodResourceClaim {
                name: ENTRY.to_string(),
                resource_claim_name: None,
                resource_claim_template_name: Some(TEMPLATE.to_string()),
            }];
            let ns = pod.metadata.namespace.clone();
            pod.metadata.uid = format!("{ns}-{}", pod.metadata.name);
            let name = format!("{}-{ENTRY}", pod.metadata.name);
            let claim =
                crate::dra::template::claim_from_template(&claim_template(&ns), pod, ENTRY, &name);
            pod.status.resource_claim_statuses = vec![PodResourceClaimStatus {
                name: ENTRY.to_string(),
                resource_claim_name: Some(name),
            }];
            Some(claim)
        }
    }
}

/// The class and every node's slice.
pub fn cluster_objects(setup: DraSetup, nodes: impl Iterator<Item = String>) -> Vec<Object> {
    std::iter::once(Object::DeviceClass(Box::new(device_class())))
        .chain(nodes.map(|n| Object::ResourceSlice(Box::new(slice(&n, setup.devices_per_node)))))
        .collect()
}
