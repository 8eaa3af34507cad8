//! Conversions between the `resource.k8s.io/v1` objects of berth-model and what the
//! allocator and the DynamicResources plugin read, and back: the claim status the scheduler
//! writes for its allocations. Used by the live loop and `berth sim` alike.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_model::cel::{self, CelDevice, DeviceSelectorExpr, EvalError};
use berth_model::model::{
    AllocationResult, Device, DeviceAllocationMode, DeviceAllocationResult, DeviceClass,
    DeviceRequestAllocationResult, Pod, ResourceClaim, ResourceClaimConsumerReference,
    ResourceSlice, Time,
};

use super::allocator::{
    AllocationMode, Class, Constraint, DeviceId, DeviceResult, DeviceSelector, ExactRequest,
    Request, SelectorError,
};
use super::state::{AllocationInfo, ClaimInfo, ClaimUpdate, Consumer, NodeSelection, SliceInfo};
use crate::plugins::dynamic_resources::PodClaimRef;

/// A compiled CEL selector, or the compile error it got (kube reports that when the
/// selector is used, as `CEL compile error`).
#[derive(Debug)]
struct CelSelector(Result<DeviceSelectorExpr, String>);

impl DeviceSelector for CelSelector {
    fn matches(&self, driver: &str, device: &Device) -> Result<bool, SelectorError> {
        let expr = self
            .0
            .as_ref()
            .map_err(|e| SelectorError::Compile(e.clone()))?;
        let input = CelDevice {
            driver,
            attributes: &device.attributes,
            capacity: &device.capacity,
            allow_multiple_allocations: device.allows_multiple_allocations(),
        };
        expr.matches(&input)
            .map_err(|EvalError { message }| SelectorError::Runtime(message))
    }

    fn cache_key(&self) -> Option<&str> {
        self.0.as_ref().ok().map(|e| e.source())
    }
}

fn selectors(list: &[berth_model::model::DeviceSelector]) -> Vec<Arc<dyn DeviceSelector>> {
    list.iter()
        .map(|s| {
            let compiled = match &s.cel {
                Some(c) => cel::compile(&c.expression).map_err(|e| e.to_string()),
                None => Err("CEL expression empty (unsupported selector type?)".to_string()),
            };
            Arc::new(CelSelector(compiled)) as Arc<dyn DeviceSelector>
        })
        .collect()
}

/// A DeviceClass with its selectors compiled.
pub fn class(class: &DeviceClass) -> Class {
    Class {
        name: class.metadata.name.clone(),
        selectors: selectors(&class.spec.selectors),
    }
}

/// A ResourceSlice as the allocator reads it.
pub fn slice(slice: &ResourceSlice) -> SliceInfo {
    let spec = &slice.spec;
    let nodes = match (&spec.node_name, spec.all_nodes, &spec.node_selector) {
        (Some(node), _, _) if !node.is_empty() => NodeSelection::Node(node.clone()),
        (_, Some(true), _) => NodeSelection::All,
        (_, _, Some(selector)) => NodeSelection::Selector(selector.clone()),
        // perDeviceNodeSelection and counter-only slices are not supported: no node
        // reaches their devices.
        _ => NodeSelection::Selector(Default::default()),
    };
    SliceInfo {
        name: slice.metadata.name.clone(),
        driver: spec.driver.as_str().into(),
        pool: spec.pool.name.as_str().into(),
        generation: spec.pool.generation,
        slice_count: spec.pool.resource_slice_count.max(1),
        nodes,
        devices: spec.devices.iter().cloned().map(Arc::new).collect(),
    }
}

fn exact(name: &str, params: berth_model::model::RequestParams<'_>) -> ExactRequest {
    ExactRequest {
        name: name.to_string(),
        class: None,
        class_name: params.device_class_name.to_string(),
        selectors: selectors(params.selectors),
        mode: match params.allocation_mode {
            DeviceAllocationMode::ExactCount => {
                AllocationMode::ExactCount(u32::try_from(params.count.max(0)).unwrap_or(u32::MAX))
            }
            DeviceAllocationMode::All => AllocationMode::All,
        },
        admin_access: params.admin_access,
        capacity: params
            .capacity
            .map(|c| c.requests.clone().into_iter().collect())
            .unwrap_or_default(),
    }
}

/// A ResourceClaim as the plugin reads it.
pub fn claim(claim: &ResourceClaim) -> ClaimInfo {
    let devices = &claim.spec.devices;
    let requests = devices
        .requests
        .iter()
        .map(|r| match &r.exactly {
            Some(e) => Request::Exactly(exact(&r.name, e.params())),
            None => Request::FirstAvailable {
                name: r.name.clone(),
                alternatives: r
                    .first_available
                    .iter()
                    .map(|s| exact(&s.name, s.params()))
                    .collect(),
            },
        })
        .collect();
    let constraints = devices
        .constraints
        .iter()
        .filter_map(|c| {
            c.match_attribute.as_ref().map(|a| Constraint {
                requests: c.requests.clone(),
                match_attribute: a.clone(),
            })
        })
        .collect();
    let allocation = claim.status.allocation.as_ref().map(|a| AllocationInfo {
        devices: a
            .devices
            .results
            .iter()
            .map(|r| DeviceResult {
                request: r.request.clone(),
                id: DeviceId {
                    driver: r.driver.as_str().into(),
                    pool: r.pool.as_str().into(),
                    device: r.device.as_str().into(),
                },
                admin_access: r.admin_access.unwrap_or(false),
                consumed_capacity: r.consumed_capacity.clone().into_iter().collect(),
                share_id: r.share_id.clone(),
            })
            .collect(),
        node_selector: a.node_selector.clone(),
    });
    let meta = &claim.metadata;
    ClaimInfo {
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        requests,
        constraints,
        allocation,
        reserved_for: claim
            .status
            .reserved_for
            .iter()
            .map(|r| Consumer {
                resource: r.resource.clone(),
                name: r.name.clone(),
                uid: r.uid.clone(),
            })
            .collect(),
        deleting: meta.deletion_timestamp.is_some(),
        owner_uid: meta
            .owner_references
            .iter()
            .find(|o| o.controller == Some(true))
            .map(|o| o.uid.clone()),
        resource_version: meta.resource_version.clone(),
    }
}

/// The pod's `spec.resourceClaims`, each with its claim's name when known (kube's
/// `resourceclaim.Name`).
pub fn pod_claim_refs(pod: &Pod) -> Vec<PodClaimRef> {
    pod.spec
        .resource_claims
        .iter()
        .map(|c| match &c.resource_claim_name {
            Some(name) => PodClaimRef {
                name: c.name.clone(),
                claim_name: Some(name.clone()),
                from_template: false,
            },
            None => PodClaimRef {
                name: c.name.clone(),
                claim_name: pod
                    .status
                    .resource_claim_statuses
                    .iter()
                    .find(|s| s.name == c.name)
                    .and_then(|s| s.resource_claim_name.clone()),
                from_template: true,
            },
        })
        .collect()
}

/// The stored claim with the scheduler's decision applied: `status.allocation` (with its
/// timestamp) when the claim was allocated now, and the pod among `status.reservedFor`.
pub fn apply_update(stored: &ResourceClaim, update: &ClaimUpdate, now: Time) -> ResourceClaim {
    let mut claim = stored.clone();
    if let Some(allocation) = &update.allocation {
        claim.status.allocation = Some(AllocationResult {
            devices: DeviceAllocationResult {
                results: allocation
                    .devices
                    .iter()
                    .map(|d| DeviceRequestAllocationResult {
                        request: d.request.clone(),
                        driver: d.id.driver.to_string(),
                        pool: d.id.pool.to_string(),
                        device: d.id.device.to_string(),
                        admin_access: d.admin_access.then_some(true),
                        share_id: d.share_id.clone(),
                        consumed_capacity: d.consumed_capacity.clone().into_iter().collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            node_selector: allocation.node_selector.clone(),
            allocation_timestamp: Some(now),
        });
    }
    for consumer in &update.claim.reserved_for {
        if !claim.is_reserved_for(&consumer.uid) {
            claim
                .status
                .reserved_for
                .push(ResourceClaimConsumerReference::pod(
                    &consumer.name,
                    &consumer.uid,
                ));
        }
    }
    claim
}

/// The scheduler's decision for a claim applied again, on `fresh`, the claim as re-read
/// after the first write conflicted (kube's PreBind re-reads and retries an update of
/// `status.reservedFor`): `pod` added to its consumers, and nothing else changed (a
/// consumer that left meanwhile stays gone). Only when the decision allocated nothing (an
/// allocation made on a stale claim is not retried, as in kube), and only while `fresh` is
/// the same claim, not being deleted, allocated as the scheduler assumed and with room for
/// another consumer.
pub fn reapply_update(
    fresh: &ResourceClaim,
    update: &ClaimUpdate,
    pod: &Consumer,
) -> Result<ResourceClaim, String> {
    let key = update.claim.key();
    if update.allocation.is_some() {
        return Err(format!("claim {key} was allocated on a stale version"));
    }
    if fresh.metadata.uid != update.claim.uid {
        return Err(format!("claim {key} was replaced"));
    }
    if fresh.metadata.deletion_timestamp.is_some() {
        return Err(format!("claim {key} is being deleted"));
    }
    let info = claim(fresh);
    if info.allocation != update.claim.allocation {
        return Err(format!("claim {key} is no longer allocated as assumed"));
    }
    let mut claim = fresh.clone();
    if !info.is_reserved_for(&pod.uid) {
        if info.reserved_for.len() >= super::state::RESERVED_FOR_MAX_SIZE {
            return Err(format!("claim {key} is reserved for too many consumers"));
        }
        claim
            .status
            .reserved_for
            .push(ResourceClaimConsumerReference::pod(&pod.name, &pod.uid));
    }
    Ok(claim)
}

/// `namespace/name` → the devices of each allocated claim, for messages and output.
pub fn devices_of(claim: &ResourceClaim) -> BTreeMap<String, Vec<String>> {
    let mut by_request: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in claim
        .status
        .allocation
        .iter()
        .flat_map(|a| &a.devices.results)
    {
        by_request
            .entry(r.request.clone())
            .or_default()
            .push(format!("{}/{}/{}", r.driver, r.pool, r.device));
    }
    by_request
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::ResourceClaimBuilder;

    const UID: &str = "claim-uid";

    /// Claim `shared` allocated gpu-0 of n1, reserved for `consumers` (name, uid).
    fn shared(consumers: &[(&str, &str)]) -> ResourceClaim {
        let mut b = ResourceClaimBuilder::new("shared")
            .request("gpu", "gpu")
            .allocated("n1", &[("gpu", "gpu.berth.dev", "n1", "gpu-0")]);
        for (name, uid) in consumers {
            b = b.reserved_for(name, uid);
        }
        let mut c = b.build();
        c.metadata.uid = UID.into();
        c
    }

    fn pod(name: &str) -> Consumer {
        Consumer {
            resource: "pods".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        }
    }

    /// What the scheduler decided for p2: the claim as it saw it (allocated, reserved for
    /// p1), with p2 added; `allocated_now` when it allocated the claim itself.
    fn update(allocated_now: bool) -> ClaimUpdate {
        let mut info = claim(&shared(&[("p1", "uid-p1")]));
        info.reserved_for.push(pod("p2"));
        ClaimUpdate {
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            pod_claim_name: "gpu".into(),
            allocation: allocated_now.then(|| info.allocation.clone()).flatten(),
            claim: Arc::new(info),
        }
    }

    fn consumers(c: &ResourceClaim) -> Vec<String> {
        c.status
            .reserved_for
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    #[test]
    fn a_reservation_is_applied_again_on_the_claim_as_stored_now() {
        let replaced = {
            let mut c = shared(&[("p1", "uid-p1")]);
            c.metadata.uid = "other".into();
            c
        };
        let deleting = {
            let mut c = shared(&[("p1", "uid-p1")]);
            c.metadata.deletion_timestamp = Some(Time::now());
            c
        };
        let deallocated = {
            let mut c = shared(&[]);
            c.status.allocation = None;
            c
        };
        let full = {
            let names: Vec<(String, String)> = (0..super::super::state::RESERVED_FOR_MAX_SIZE)
                .map(|i| (format!("q{i}"), format!("uid-q{i}")))
                .collect();
            let refs: Vec<(&str, &str)> = names
                .iter()
                .map(|(n, u)| (n.as_str(), u.as_str()))
                .collect();
            shared(&refs)
        };
        // (case, claim as stored now, allocated now, want: consumers or the error's start)
        let cases: Vec<(&str, ResourceClaim, bool, Result<Vec<&str>, &str>)> = vec![
            (
                "another pod reserved it meanwhile",
                shared(&[("p1", "uid-p1"), ("p3", "uid-p3")]),
                false,
                Ok(vec!["p1", "p3", "p2"]),
            ),
            (
                "p1 ended meanwhile: it stays gone",
                shared(&[]),
                false,
                Ok(vec!["p2"]),
            ),
            (
                "already reserved for the pod",
                shared(&[("p2", "uid-p2")]),
                false,
                Ok(vec!["p2"]),
            ),
            (
                "allocated on a stale claim",
                shared(&[("p1", "uid-p1")]),
                true,
                Err("claim default/shared was allocated on a stale version"),
            ),
            (
                "replaced",
                replaced,
                false,
                Err("claim default/shared was replaced"),
            ),
            (
                "being deleted",
                deleting,
                false,
                Err("claim default/shared is being deleted"),
            ),
            (
                "deallocated",
                deallocated,
                false,
                Err("claim default/shared is no longer allocated as assumed"),
            ),
            (
                "full",
                full,
                false,
                Err("claim default/shared is reserved for too many consumers"),
            ),
        ];
        for (name, fresh, allocated_now, want) in cases {
            let got = reapply_update(&fresh, &update(allocated_now), &pod("p2"));
            match (got, want) {
                (Ok(claim), Ok(want)) => {
                    assert_eq!(consumers(&claim), want, "{name}");
                    assert_eq!(claim.status.allocation, fresh.status.allocation, "{name}");
                }
                (Err(got), Err(want)) => assert_eq!(got, want, "{name}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}
