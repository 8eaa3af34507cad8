//! Test builders for the DRA kinds: [`DeviceClassBuilder`], [`ResourceClaimBuilder`] (also
//! for templates), [`ResourceSliceBuilder`] and [`DeviceBuilder`], and the pod's claim fields
//! on [`PodBuilder`].

use crate::model::{
    AllocationResult, CapacityRequestPolicy, CapacityRequestPolicyRange, CapacityRequirements,
    Device, DeviceAllocationMode, DeviceAttribute, DeviceCapacity, DeviceClass, DeviceConstraint,
    DeviceRequest, DeviceRequestAllocationResult, DeviceSelector, DeviceSubRequest,
    ExactDeviceRequest, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement,
    NodeSelectorTerm, ObjectMeta, PodResourceClaim, ResourceClaim, ResourceClaimConsumerReference,
    ResourceClaimRef, ResourceClaimSpec, ResourceClaimTemplate, ResourceClaimTemplateSpec,
    ResourcePool, ResourceSlice, ResourceSliceSpec,
};

use super::{qty, PodBuilder};

/// Builds a [`DeviceClass`].
#[derive(Clone, Debug)]
pub struct DeviceClassBuilder {
    class: DeviceClass,
}

impl DeviceClassBuilder {
    /// A class with no selectors (every device matches).
    pub fn new(name: &str) -> Self {
        let mut class = DeviceClass::default();
        class.metadata.name = name.into();
        DeviceClassBuilder { class }
    }

    /// Adds a CEL selector.
    pub fn selector(mut self, expression: &str) -> Self {
        self.class
            .spec
            .selectors
            .push(DeviceSelector::cel(expression));
        self
    }

    /// Adds the selector `device.driver == "<driver>"`.
    pub fn driver(self, driver: &str) -> Self {
        self.selector(&format!("device.driver == {driver:?}"))
    }

    /// The class.
    pub fn build(self) -> DeviceClass {
        self.class
    }
}

/// Builds a [`ResourceClaim`] in namespace `default`, or a [`ResourceClaimTemplate`] of the
/// same spec. Request setters after [`ResourceClaimBuilder::request`] act on the last
/// request.
#[derive(Clone, Debug)]
pub struct ResourceClaimBuilder {
    claim: ResourceClaim,
}

impl ResourceClaimBuilder {
    /// A claim with no requests.
    pub fn new(name: &str) -> Self {
        let mut claim = ResourceClaim::default();
        claim.metadata.name = name.into();
        claim.metadata.namespace = "default".into();
        ResourceClaimBuilder { claim }
    }

    /// Sets the namespace.
    pub fn namespace(mut self, ns: &str) -> Self {
        self.claim.metadata.namespace = ns.into();
        self
    }

    /// Adds an `exactly` request for one device of `class`.
    pub fn request(mut self, name: &str, class: &str) -> Self {
        self.claim.spec.devices.requests.push(DeviceRequest {
            name: name.into(),
            exactly: Some(ExactDeviceRequest {
                device_class_name: class.into(),
                ..ExactDeviceRequest::default()
            }),
            first_available: Vec::new(),
        });
        self
    }

    /// Adds a `firstAvailable` request with one subrequest per `(name, class)`.
    pub fn first_available(mut self, name: &str, subrequests: &[(&str, &str)]) -> Self {
        self.claim.spec.devices.requests.push(DeviceRequest {
            name: name.into(),
            exactly: None,
            first_available: subrequests
                .iter()
                .map(|(n, c)| DeviceSubRequest {
                    name: (*n).into(),
                    device_class_name: (*c).into(),
                    ..DeviceSubRequest::default()
                })
                .collect(),
        });
        self
    }

    fn last(&mut self) -> &mut ExactDeviceRequest {
        self.claim
            .spec
            .devices
            .requests
            .last_mut()
            .and_then(|r| r.exactly.as_mut())
            .expect("call request() before setting its fields")
    }

    /// The last request asks for `count` devices (allocationMode ExactCount).
    pub fn count(mut self, count: i64) -> Self {
        let r = self.last();
        r.allocation_mode = Some(DeviceAllocationMode::ExactCount);
        r.count = Some(count);
        self
    }

    /// The last request asks for all matching devices (allocationMode All).
    pub fn all(mut self) -> Self {
        self.last().allocation_mode = Some(DeviceAllocationMode::All);
        self
    }

    /// Adds a CEL selector to the last request.
    pub fn selector(mut self, expression: &str) -> Self {
        self.last().selectors.push(DeviceSelector::cel(expression));
        self
    }

    /// The last request consumes `quantity` of capacity `name` (consumable capacity).
    pub fn capacity(mut self, name: &str, quantity: &str) -> Self {
        self.last()
            .capacity
            .get_or_insert_with(CapacityRequirements::default)
            .requests
            .insert(name.into(), qty(quantity));
        self
    }

    /// Adds a `matchAttribute` constraint over `requests` (empty: all of them).
    pub fn match_attribute(mut self, attribute: &str, requests: &[&str]) -> Self {
        self.claim.spec.devices.constraints.push(DeviceConstraint {
            requests: requests.iter().map(|r| (*r).into()).collect(),
            match_attribute: Some(attribute.into()),
            distinct_attribute: None,
        });
        self
    }

    /// Marks the claim allocated: one result per `(request, driver, pool, device)`, usable
    /// on `node` (a node selector on `metadata.name`, as the allocator writes it).
    pub fn allocated(mut self, node: &str, results: &[(&str, &str, &str, &str)]) -> Self {
        self.claim.status.allocation = Some(AllocationResult {
            devices: crate::model::DeviceAllocationResult {
                results: results
                    .iter()
                    .map(
                        |(request, driver, pool, device)| DeviceRequestAllocationResult {
                            request: (*request).into(),
                            driver: (*driver).into(),
                            pool: (*pool).into(),
                            device: (*device).into(),
                            ..DeviceRequestAllocationResult::default()
                        },
                    )
                    .collect(),
                config: Vec::new(),
            },
            node_selector: Some(node_name_selector(node)),
            allocation_timestamp: None,
        });
        self
    }

    /// Adds a pod consumer to `status.reservedFor`.
    pub fn reserved_for(mut self, pod: &str, uid: &str) -> Self {
        self.claim
            .status
            .reserved_for
            .push(ResourceClaimConsumerReference::pod(pod, uid));
        self
    }

    /// The claim.
    pub fn build(self) -> ResourceClaim {
        self.claim
    }

    /// A template with this claim's name, namespace and spec.
    pub fn build_template(self) -> ResourceClaimTemplate {
        ResourceClaimTemplate {
            metadata: self.claim.metadata,
            spec: ResourceClaimTemplateSpec {
                metadata: ObjectMeta::default(),
                spec: self.claim.spec,
            },
            ..ResourceClaimTemplate::default()
        }
    }

    /// The claim's spec.
    pub fn build_spec(self) -> ResourceClaimSpec {
        self.claim.spec
    }
}

/// A node selector matching the node named `node` by field (`metadata.name`).
pub fn node_name_selector(node: &str) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Vec::new(),
            match_fields: vec![NodeSelectorRequirement {
                key: "metadata.name".into(),
                operator: NodeSelectorOperator::In,
                values: vec![node.into()],
            }],
        }],
    }
}

/// Builds a [`Device`].
#[derive(Clone, Debug)]
pub struct DeviceBuilder {
    device: Device,
}

impl DeviceBuilder {
    /// A device without attributes or capacity.
    pub fn new(name: &str) -> Self {
        DeviceBuilder {
            device: Device {
                name: name.into(),
                ..Device::default()
            },
        }
    }

    /// Sets an attribute.
    pub fn attribute(mut self, name: &str, value: DeviceAttribute) -> Self {
        self.device.attributes.insert(name.into(), value);
        self
    }

    /// Sets a string attribute.
    pub fn string(self, name: &str, value: &str) -> Self {
        self.attribute(name, DeviceAttribute::string(value))
    }

    /// Sets an int attribute.
    pub fn int(self, name: &str, value: i64) -> Self {
        self.attribute(name, DeviceAttribute::int(value))
    }

    /// Sets a capacity without request policy.
    pub fn capacity(mut self, name: &str, value: &str) -> Self {
        self.device
            .capacity
            .insert(name.into(), DeviceCapacity::new(qty(value)));
        self
    }

    /// Sets a shareable capacity: requests are rounded up to `min + k·step` within
    /// `[min, value]`, and consume `default` when they do not say.
    pub fn shareable_capacity(
        mut self,
        name: &str,
        value: &str,
        default: &str,
        min: &str,
        step: &str,
    ) -> Self {
        self.device.capacity.insert(
            name.into(),
            DeviceCapacity {
                value: qty(value),
                request_policy: Some(CapacityRequestPolicy {
                    default: Some(qty(default)),
                    valid_values: Vec::new(),
                    valid_range: Some(CapacityRequestPolicyRange {
                        min: Some(qty(min)),
                        max: Some(qty(value)),
                        step: Some(qty(step)),
                    }),
                }),
            },
        );
        self
    }

    /// Lets several claims share the device.
    pub fn allow_multiple_allocations(mut self) -> Self {
        self.device.allow_multiple_allocations = Some(true);
        self
    }

    /// The device.
    pub fn build(self) -> Device {
        self.device
    }
}

/// Builds a node-local [`ResourceSlice`]: pool named after the node, generation 1, one slice.
#[derive(Clone, Debug)]
pub struct ResourceSliceBuilder {
    slice: ResourceSlice,
}

impl ResourceSliceBuilder {
    /// A slice named `<node>-<driver>` of `driver`'s devices on `node`.
    pub fn new(node: &str, driver: &str) -> Self {
        ResourceSliceBuilder {
            slice: ResourceSlice {
                metadata: ObjectMeta {
                    name: format!("{node}-{driver}"),
                    ..ObjectMeta::default()
                },
                spec: ResourceSliceSpec {
                    driver: driver.into(),
                    pool: ResourcePool {
                        name: node.into(),
                        generation: 1,
                        resource_slice_count: 1,
                    },
                    node_name: Some(node.into()),
                    ..ResourceSliceSpec::default()
                },
                ..ResourceSlice::default()
            },
        }
    }

    /// Sets the pool generation.
    pub fn generation(mut self, generation: i64) -> Self {
        self.slice.spec.pool.generation = generation;
        self
    }

    /// Adds a device.
    pub fn device(mut self, device: DeviceBuilder) -> Self {
        self.slice.spec.devices.push(device.build());
        self
    }

    /// The slice.
    pub fn build(self) -> ResourceSlice {
        self.slice
    }
}

impl PodBuilder {
    /// Adds `spec.resourceClaims[]` entry `name` naming the existing claim `claim`, used by
    /// the main container.
    pub fn resource_claim(mut self, name: &str, claim: &str) -> Self {
        self.pod.spec.resource_claims.push(PodResourceClaim {
            name: name.into(),
            resource_claim_name: Some(claim.into()),
            resource_claim_template_name: None,
        });
        self.use_claim(name)
    }

    /// Adds `spec.resourceClaims[]` entry `name` made from template `template`, used by the
    /// main container.
    pub fn resource_claim_template(mut self, name: &str, template: &str) -> Self {
        self.pod.spec.resource_claims.push(PodResourceClaim {
            name: name.into(),
            resource_claim_name: None,
            resource_claim_template_name: Some(template.into()),
        });
        self.use_claim(name)
    }

    fn use_claim(mut self, name: &str) -> Self {
        self.main_container()
            .resources
            .claims
            .push(ResourceClaimRef {
                name: name.into(),
                request: String::new(),
            });
        self
    }
}
