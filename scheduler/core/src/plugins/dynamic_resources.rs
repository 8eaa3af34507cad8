//! DynamicResources: kube's plugin for pods with ResourceClaims (structured parameters).
//! PreFilter finds the pod's claims (kube's messages when one is missing, being deleted, not
//! the pod's own, or reserved by too many consumers) and the DeviceClasses their requests
//! name; Filter pins the pod to the node of an already allocated claim and runs the
//! allocator for the claims still to allocate; [`reserve`] (kube's Reserve) allocates on
//! the chosen node, and the attempt assumes the result in the snapshot's DRA state and hands
//! it to the driver, which writes `status.allocation` and `status.reservedFor` before the
//! binding (kube's PreBind). Every rejection is UnschedulableAndUnresolvable, as in kube, so
//! preemption never evicts pods for devices.

use std::sync::Arc;

use berth_model::model::Pod;

use crate::dra::allocator::{
    self, Allocated, AllocationError, ClaimSpec, DeviceId, ExactRequest, Request, SpecKey,
};
use crate::dra::state::{
    allocation_on, ClaimInfo, ClaimUpdate, Consumer, DraState, RESERVED_FOR_MAX_SIZE,
};
use crate::framework::{
    CycleState, Filter, Fit, NodeInfo, Plugin, PluginError, PodInfo, PreFilter, PreFilterOutcome,
    Rejection, Snapshot,
};
use crate::plugins::node_affinity::NodeSelectorMatcher;

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "DynamicResources";

/// Filter: the allocator found no devices on the node for every claim.
pub const REASON_CANNOT_ALLOCATE: &str = "cannot allocate all claims";

/// Filter: an allocated claim's node selector excludes the node.
pub const REASON_NOT_AVAILABLE: &str = "resourceclaim not available on the node";

/// PreFilter: an allocated claim is reserved for as many consumers as it may have.
pub const REASON_IN_USE: &str = "resourceclaim in use";

/// PostFilter, for a pod whose claims were found: no claim could be deallocated to help.
pub const POST_FILTER_STILL_NOT_SCHEDULABLE: &str = "still not schedulable";

/// PostFilter, for a pod with claim references none of which was found.
pub const POST_FILTER_NO_NEW_CLAIMS: &str = "no new claims to deallocate";

/// The plugin; it keeps no state between cycles (the DRA objects live in the snapshot).
#[derive(Clone, Copy, Debug, Default)]
pub struct DynamicResources;

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }
}

/// One claim of the pod, found.
#[derive(Clone, Debug)]
struct PodClaim {
    /// The entry's name in `spec.resourceClaims`.
    pod_claim_name: String,
    claim: Arc<ClaimInfo>,
    /// For an allocated claim: the nodes it may be used on.
    available_on: Option<NodeSelectorMatcher>,
}

/// What PreFilter found, for Filter.
#[derive(Clone, Debug)]
struct DraCycle {
    claims: Vec<PodClaim>,
    /// The claims to allocate (indices into `claims`) and their compiled requests.
    to_allocate: Vec<usize>,
    specs: Arc<Vec<ClaimSpec>>,
    /// The shape of `specs`, under which the DRA state remembers each node's verdict.
    key: Option<SpecKey>,
    dra: Arc<DraState>,
    allocated: Arc<Allocated>,
}

/// A reference of the pod to a claim (`spec.resourceClaims[]`), with the claim's name once
/// known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodClaimRef {
    /// `spec.resourceClaims[].name`.
    pub name: String,
    /// The ResourceClaim's name: `resourceClaimName`, or for a template, the name recorded
    /// in `status.resourceClaimStatuses` (None until the claim controller has created it).
    pub claim_name: Option<String>,
    /// Whether it comes from `resourceClaimTemplateName` (the claim must then be owned by
    /// the pod).
    pub from_template: bool,
}

/// The pod's claim references, in `spec.resourceClaims` order.
pub fn pod_claim_refs(pod: &Pod) -> Vec<PodClaimRef> {
    crate::dra::convert::pod_claim_refs(pod)
}

/// kube's foreachPodResourceClaim: every claim the pod references, or kube's message for
/// the first that is missing, being deleted or not the pod's own. A template claim not yet
/// created is an error too.
fn find_claims(dra: &DraState, pod: &Pod) -> Result<Vec<(String, Arc<ClaimInfo>)>, String> {
    let mut found = Vec::new();
    let ns = &pod.metadata.namespace;
    for r in pod_claim_refs(pod) {
        let Some(name) = r.claim_name else {
            if r.from_template {
                return Err(format!(
                    "pod \"{ns}/{}\": ResourceClaim not created yet",
                    pod.metadata.name
                ));
            }
            // A template entry resolved to no claim: kube skips it.
            continue;
        };
        let Some(claim) = dra.claim(ns, &name) else {
            return Err(format!(
                "resourceclaim.resource.k8s.io \"{name}\" not found"
            ));
        };
        if claim.deleting {
            return Err(format!("resourceclaim \"{name}\" is being deleted"));
        }
        if r.from_template && claim.owner_uid.as_deref() != Some(pod.metadata.uid.as_str()) {
            return Err(format!(
                "ResourceClaim {ns}/{name} was not created for pod {ns}/{} (pod is not owner)",
                pod.metadata.name
            ));
        }
        found.push((r.name, claim.clone()));
    }
    Ok(found)
}

/// kube's PreFilter, as a function of the DRA state: the pod's claims and what to allocate,
/// or the reason no node can take the pod. Ok(None): the pod has no claims.
fn prepare(dra: &Arc<DraState>, pod: &PodInfo) -> Result<Option<DraCycle>, Rejection> {
    if pod_claim_refs(&pod.pod).is_empty() {
        return Ok(None);
    }
    let found =
        find_claims(dra, &pod.pod).map_err(|reason| Rejection::unresolvable(NAME, reason))?;
    if found.is_empty() {
        return Ok(None);
    }
    let mut claims = Vec::with_capacity(found.len());
    let mut to_allocate = Vec::new();
    let mut specs = Vec::new();
    for (index, (pod_claim_name, claim)) in found.into_iter().enumerate() {
        let mut available_on = None;
        match &claim.allocation {
            Some(allocation) => {
                if !claim.is_reserved_for(pod.uid())
                    && claim.reserved_for.len() >= RESERVED_FOR_MAX_SIZE
                {
                    return Err(Rejection::unresolvable(NAME, REASON_IN_USE));
                }
                available_on = allocation
                    .node_selector
                    .as_ref()
                    .map(NodeSelectorMatcher::new);
            }
            None => {
                specs.push(claim_spec(dra, &claim)?);
                to_allocate.push(index);
            }
        }
        claims.push(PodClaim {
            pod_claim_name,
            claim,
            available_on,
        });
    }
    Ok(Some(DraCycle {
        claims,
        to_allocate,
        key: allocator::spec_key(&specs),
        specs: Arc::new(specs),
        allocated: dra.allocated().clone(),
        dra: dra.clone(),
    }))
}

/// The claim's requests with their classes, or kube's message for a class that does not
/// exist (`request gpu: device class gpu.example.com does not exist`).
fn claim_spec(dra: &DraState, claim: &ClaimInfo) -> Result<ClaimSpec, Rejection> {
    let resolve = |r: &ExactRequest, qualified: String| -> Result<ExactRequest, Rejection> {
        match dra.class(&r.class_name) {
            Some(class) => Ok(ExactRequest {
                class: Some(class.clone()),
                ..r.clone()
            }),
            None => Err(Rejection::unresolvable(
                NAME,
                format!(
                    "request {qualified}: device class {} does not exist",
                    r.class_name
                ),
            )),
        }
    };
    let mut requests = Vec::with_capacity(claim.requests.len());
    for request in &claim.requests {
        requests.push(match request {
            Request::Exactly(r) => Request::Exactly(resolve(r, r.name.clone())?),
            Request::FirstAvailable { name, alternatives } => Request::FirstAvailable {
                name: name.clone(),
                alternatives: alternatives
                    .iter()
                    .map(|a| resolve(a, format!("{name}/{}", a.name)))
                    .collect::<Result<_, _>>()?,
            },
        });
    }
    Ok(ClaimSpec {
        key: claim.key(),
        namespace: claim.namespace.clone(),
        name: claim.name.clone(),
        uid: claim.uid.clone(),
        requests,
        constraints: claim.constraints.clone(),
    })
}

impl DraCycle {
    /// kube's Filter on one node: allocated claims must be usable there, and the others
    /// allocatable from its devices. Ok(Ok): they are, with these allocations when
    /// `allocations` asks for them (taking its devices first); else the verdict may come
    /// from the DRA state's memory and the list is empty.
    fn check(
        &self,
        node: &NodeInfo,
        allocations: Option<&[DeviceId]>,
    ) -> Result<Result<Vec<allocator::ClaimAllocation>, &'static str>, AllocationError> {
        let allocate = || {
            if let Some(preferred) = allocations {
                let pools = self.dra.pools_for(&node.node);
                allocator::allocate_preferring(&self.specs, &pools, &self.allocated, preferred)
            } else {
                self.dra
                    .allocate_on(&node.node, &self.specs, self.key.as_ref())
            }
        };
        if self.claims.iter().any(|c| {
            c.available_on
                .as_ref()
                .is_some_and(|m| !m.matches(&node.node))
        }) {
            // kube runs the allocator first: its error, if any, wins.
            if !self.to_allocate.is_empty() {
                allocate()?;
            }
            return Ok(Err(REASON_NOT_AVAILABLE));
        }
        if self.to_allocate.is_empty() {
            return Ok(Ok(Vec::new()));
        }
        Ok(match allocate()? {
            Some(allocations) => Ok(allocations),
            None => Err(REASON_CANNOT_ALLOCATE),
        })
    }
}

/// What kube's PostFilter of the plugin says when no node fits a pod with claims (it runs
/// before DefaultPreemption, whose message follows).
#[derive(Clone, Copy, Debug)]
struct PostFilterReason(&'static str);

/// The plugin's PostFilter reason for the cycle's pod, if its PreFilter ran on a pod with
/// claims: kube's `still not schedulable` (or `no new claims to deallocate` when none was
/// found). Berth does not deallocate claims to make room, as kube's PostFilter may.
pub fn post_filter_reason(state: &CycleState) -> Option<&'static str> {
    state.get::<PostFilterReason>().map(|r| r.0)
}

impl PreFilter for DynamicResources {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<PreFilterOutcome, PluginError> {
        if pod_claim_refs(&pod.pod).is_empty() {
            // kube's Skip: a pod without claims has nothing for Filter to check.
            state.skip_filter(NAME);
            return Ok(PreFilterOutcome::AllNodes);
        }
        match prepare(snapshot.dra(), pod) {
            Ok(Some(cycle)) => {
                state.insert(PostFilterReason(POST_FILTER_STILL_NOT_SCHEDULABLE));
                state.insert(cycle);
            }
            Ok(None) => state.insert(PostFilterReason(POST_FILTER_NO_NEW_CLAIMS)),
            Err(rejection) => {
                state.insert(PostFilterReason(POST_FILTER_NO_NEW_CLAIMS));
                return Ok(PreFilterOutcome::Reject(rejection));
            }
        }
        Ok(PreFilterOutcome::AllNodes)
    }
}

impl Filter for DynamicResources {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Fit {
        let Some(cycle) = state.get::<DraCycle>() else {
            return Fit::Yes;
        };
        match cycle.check(node, None) {
            Ok(Ok(_)) => Fit::Yes,
            Ok(Err(reason)) => Fit::No(Rejection::unresolvable(NAME, reason)),
            Err(e) => Fit::No(Rejection::error(NAME, e.to_string())),
        }
    }
}

/// kube's Reserve for the node the cycle chose: the pod's claims, those allocated now with
/// their allocation (the `preferred` devices tried first), each with the pod added to its
/// consumers. Empty when the pod has no claims or all are already reserved for it.
pub fn reserve(
    dra: &Arc<DraState>,
    pod: &PodInfo,
    node: &NodeInfo,
    preferred: &[DeviceId],
) -> Result<Vec<ClaimUpdate>, PluginError> {
    let cycle = match prepare(dra, pod) {
        Ok(Some(cycle)) => cycle,
        Ok(None) => return Ok(Vec::new()),
        Err(rejection) => {
            return Err(PluginError {
                plugin: NAME,
                message: rejection.reasons.join(", "),
            })
        }
    };
    let allocations = match cycle.check(node, Some(preferred)) {
        Ok(Ok(allocations)) => allocations,
        Ok(Err(reason)) => {
            return Err(PluginError {
                plugin: NAME,
                message: reason.to_string(),
            })
        }
        Err(e) => {
            return Err(PluginError {
                plugin: NAME,
                message: e.to_string(),
            })
        }
    };
    let pools = cycle.dra.pools_for(&node.node);
    let mut new_allocations = cycle.to_allocate.iter().zip(allocations);
    let mut next = new_allocations.next();
    let mut updates = Vec::new();
    for (index, pod_claim) in cycle.claims.iter().enumerate() {
        let mut allocation = None;
        if let Some((&i, _)) = &next {
            if i == index {
                let (_, a) = next.take().expect("checked above");
                let local = a.devices.iter().any(|d| {
                    pools
                        .iter()
                        .any(|p| p.node_local && p.driver == d.id.driver && p.name == d.id.pool)
                });
                allocation = Some(allocation_on(node.name(), a, local));
                next = new_allocations.next();
            }
        }
        if allocation.is_none() && pod_claim.claim.is_reserved_for(pod.uid()) {
            continue;
        }
        let mut claim = (*pod_claim.claim).clone();
        if let Some(a) = &allocation {
            claim.allocation = Some(a.clone());
        }
        if !claim.is_reserved_for(pod.uid()) {
            claim.reserved_for.push(Consumer {
                resource: "pods".to_string(),
                name: pod.pod.metadata.name.clone(),
                uid: pod.uid().to_string(),
            });
        }
        updates.push(ClaimUpdate {
            namespace: claim.namespace.clone(),
            name: claim.name.clone(),
            pod_claim_name: pod_claim.pod_claim_name.clone(),
            allocation,
            claim: Arc::new(claim),
        });
    }
    Ok(updates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testing::{dra_snapshot, Info, NodeBuilder, PodBuilder};
    use berth_model::model::Pod;
    use berth_model::model::{DeviceClass, OwnerReference, ResourceClaim, ResourceSlice};
    use berth_model::testing::{
        DeviceBuilder, DeviceClassBuilder, ResourceClaimBuilder, ResourceSliceBuilder,
    };

    const DRIVER: &str = "gpu.berth.dev";

    fn gpu_class() -> DeviceClass {
        DeviceClassBuilder::new("gpu").driver(DRIVER).build()
    }

    /// n1 has two GPUs (t4, a100); n2 has none.
    fn gpus() -> Vec<ResourceSlice> {
        vec![ResourceSliceBuilder::new("n1", DRIVER)
            .device(DeviceBuilder::new("gpu-0").string("model", "t4"))
            .device(DeviceBuilder::new("gpu-1").string("model", "a100"))
            .build()]
    }

    fn nodes() -> Vec<NodeBuilder> {
        vec![NodeBuilder::new("n1"), NodeBuilder::new("n2")]
    }

    /// A claim owned by pod `p` (uid `default-p`), as the claim controller makes it.
    fn owned(mut claim: ResourceClaim) -> ResourceClaim {
        claim.metadata.owner_references = vec![OwnerReference {
            kind: "Pod".into(),
            name: "p".into(),
            uid: "default-p".into(),
            controller: Some(true),
            ..OwnerReference::default()
        }];
        claim
    }

    /// The pod `p` with template entry `gpu` whose claim is `p-gpu`.
    fn template_pod() -> Pod {
        let mut pod = PodBuilder::new("p")
            .resource_claim_template("gpu", "gpu-template")
            .build();
        pod.status
            .resource_claim_statuses
            .push(berth_model::model::PodResourceClaimStatus {
                name: "gpu".into(),
                resource_claim_name: Some("p-gpu".into()),
            });
        pod
    }

    /// PreFilter, then Filter on n1 and n2: each verdict as text.
    fn verdicts(snapshot: &Snapshot, pod: Pod) -> Vec<String> {
        let pod = PodInfo::new(Arc::new(pod));
        let mut state = CycleState::new();
        match DynamicResources.pre_filter(&mut state, &pod, snapshot) {
            Ok(PreFilterOutcome::Reject(r)) => {
                return vec![format!("prefilter: {}", r.reasons.join(", "))]
            }
            Ok(_) => {}
            Err(e) => return vec![format!("error: {e}")],
        }
        snapshot
            .nodes()
            .iter()
            .map(|node| match DynamicResources.filter(&state, &pod, node) {
                Fit::Yes => format!("{}: yes", node.name()),
                Fit::No(r) => {
                    let code = if r.code == Code::Error { "error" } else { "no" };
                    format!("{}: {code}: {}", node.name(), r.reasons.join(", "))
                }
            })
            .collect()
    }

    #[test]
    fn filter_verdicts_follow_kube() {
        struct Case {
            name: &'static str,
            claims: Vec<ResourceClaim>,
            classes: Vec<DeviceClass>,
            pod: Pod,
            want: Vec<&'static str>,
        }
        let claim = |name: &str| ResourceClaimBuilder::new(name).request("gpu", "gpu");
        let cases = vec![
            Case {
                name: "a pod without claims fits everywhere",
                claims: vec![],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").build(),
                want: vec!["n1: yes", "n2: yes"],
            },
            Case {
                name: "an unallocated claim fits only where a device is",
                claims: vec![claim("shared").build()],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim("gpu", "shared").build(),
                want: vec!["n1: yes", "n2: no: cannot allocate all claims"],
            },
            Case {
                name: "a selector no device matches",
                claims: vec![claim("shared")
                    .selector("device.attributes[\"gpu.berth.dev\"].model == \"h100\"")
                    .build()],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim("gpu", "shared").build(),
                want: vec![
                    "n1: no: cannot allocate all claims",
                    "n2: no: cannot allocate all claims",
                ],
            },
            Case {
                name: "a selector failing at runtime is an error",
                claims: vec![claim("shared")
                    .selector("device.attributes[\"gpu.berth.dev\"].memory > 1")
                    .build()],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim("gpu", "shared").build(),
                want: vec!["n1: error", "n2: no: cannot allocate all claims"],
            },
            Case {
                name: "an allocated claim pins the pod to its node",
                claims: vec![claim("shared")
                    .allocated("n2", &[("gpu", DRIVER, "n2", "gpu-9")])
                    .build()],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim("gpu", "shared").build(),
                want: vec![
                    "n1: no: resourceclaim not available on the node",
                    "n2: yes",
                ],
            },
            Case {
                name: "a claim that does not exist",
                claims: vec![],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim("gpu", "missing").build(),
                want: vec!["prefilter: resourceclaim.resource.k8s.io \"missing\" not found"],
            },
            Case {
                name: "a template claim not created yet",
                claims: vec![],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim_template("gpu", "gpu-template").build(),
                want: vec!["prefilter: pod \"default/p\": ResourceClaim not created yet"],
            },
            Case {
                name: "a template claim the pod does not own",
                claims: vec![claim("p-gpu").build()],
                classes: vec![gpu_class()],
                pod: template_pod(),
                want: vec!["prefilter: ResourceClaim default/p-gpu was not created for pod default/p (pod is not owner)"],
            },
            Case {
                name: "a template claim the pod owns",
                claims: vec![owned(claim("p-gpu").build())],
                classes: vec![gpu_class()],
                pod: template_pod(),
                want: vec!["n1: yes", "n2: no: cannot allocate all claims"],
            },
            Case {
                name: "a claim being deleted",
                claims: vec![{
                    let mut c = claim("shared").build();
                    c.metadata.deletion_timestamp = Some(berth_model::model::Time::now());
                    c
                }],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim("gpu", "shared").build(),
                want: vec!["prefilter: resourceclaim \"shared\" is being deleted"],
            },
            Case {
                name: "a class that does not exist",
                claims: vec![claim("shared").build()],
                classes: vec![],
                pod: PodBuilder::new("p").resource_claim("gpu", "shared").build(),
                want: vec!["prefilter: request gpu: device class gpu does not exist"],
            },
            Case {
                name: "a claim reserved for 256 other pods",
                claims: vec![(0..RESERVED_FOR_MAX_SIZE)
                    .fold(
                        claim("shared").allocated("n1", &[("gpu", DRIVER, "n1", "gpu-0")]),
                        |c, i| c.reserved_for(&format!("o{i}"), &format!("uid-{i}")),
                    )
                    .build()],
                classes: vec![gpu_class()],
                pod: PodBuilder::new("p").resource_claim("gpu", "shared").build(),
                want: vec!["prefilter: resourceclaim in use"],
            },
        ];
        for case in cases {
            let snap = dra_snapshot(&nodes(), &case.classes, &gpus(), &case.claims);
            let got = verdicts(&snap, case.pod);
            let got: Vec<String> = got
                .into_iter()
                .map(|v| {
                    if v.starts_with("n1: error") {
                        "n1: error".into()
                    } else {
                        v
                    }
                })
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn remembered_verdicts_follow_allocations_and_slices() {
        let claim = |name: &str| {
            ResourceClaimBuilder::new(name)
                .request("gpu", "gpu")
                .build()
        };
        let pod = |name: &str| PodBuilder::new(name).resource_claim("gpu", name).build();
        let mut snap = dra_snapshot(&nodes(), &[gpu_class()], &gpus(), &[claim("a"), claim("b")]);
        let fits = vec!["n1: yes", "n2: no: cannot allocate all claims"];
        // Asked twice: the second verdict is the remembered one.
        assert_eq!(verdicts(&snap, pod("a")), fits);
        assert_eq!(verdicts(&snap, pod("b")), fits);
        // Both GPUs of n1 taken by other claims: the same shape no longer fits.
        let held = |name: &str, device: &str| {
            ResourceClaimBuilder::new(name)
                .request("gpu", "gpu")
                .allocated("n1", &[("gpu", DRIVER, "n1", device)])
                .build()
        };
        let dra = snap.dra_mut();
        dra.upsert_claim(crate::dra::convert::claim(&held("x", "gpu-0")));
        assert_eq!(verdicts(&snap, pod("a")), fits, "one GPU left");
        let dra = snap.dra_mut();
        dra.upsert_claim(crate::dra::convert::claim(&held("y", "gpu-1")));
        let full = vec![
            "n1: no: cannot allocate all claims",
            "n2: no: cannot allocate all claims",
        ];
        assert_eq!(verdicts(&snap, pod("a")), full);
        // One freed again.
        snap.dra_mut().remove_claim("default", "x");
        assert_eq!(verdicts(&snap, pod("b")), fits);
        // n2 gets a GPU of its own.
        let slice = ResourceSliceBuilder::new("n2", DRIVER)
            .device(DeviceBuilder::new("gpu-0").string("model", "t4"))
            .build();
        snap.dra_mut()
            .upsert_slice(crate::dra::convert::slice(&slice));
        assert_eq!(verdicts(&snap, pod("a")), vec!["n1: yes", "n2: yes"]);
    }

    #[test]
    fn reserve_allocates_on_the_chosen_node_and_reserves_for_the_pod() {
        let claims = [
            ResourceClaimBuilder::new("a100")
                .request("gpu", "gpu")
                .selector("device.attributes[\"gpu.berth.dev\"].model == \"a100\"")
                .build(),
            ResourceClaimBuilder::new("held")
                .request("gpu", "gpu")
                .allocated("n1", &[("gpu", DRIVER, "n1", "gpu-0")])
                .reserved_for("other", "uid-other")
                .build(),
        ];
        let snap = dra_snapshot(&nodes(), &[gpu_class()], &gpus(), &claims);
        let pod = PodBuilder::new("p")
            .resource_claim("one", "a100")
            .resource_claim("two", "held")
            .info();
        let n1 = snap.node("n1").expect("n1");
        let updates = reserve(snap.dra(), &pod, n1, &[]).expect("reserved");
        assert_eq!(updates.len(), 2);
        let fresh = updates[0].allocation.as_ref().expect("allocated now");
        assert_eq!(&*fresh.devices[0].id.device, "gpu-1");
        assert_eq!(
            fresh.node_selector,
            Some(berth_model::testing::node_name_selector("n1"))
        );
        assert_eq!(updates[0].pod_claim_name, "one");
        assert!(updates[1].allocation.is_none(), "already allocated");
        let consumers: Vec<&str> = updates[1]
            .claim
            .reserved_for
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(consumers, ["other", "p"]);
        // n2 cannot take the pod: Reserve there is an error.
        let n2 = snap.node("n2").expect("n2");
        assert!(reserve(snap.dra(), &pod, n2, &[]).is_err());
    }
}
