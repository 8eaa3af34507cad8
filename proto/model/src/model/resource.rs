//! Dynamic Resource Allocation (`resource.k8s.io/v1`): DeviceClass, ResourceClaim,
//! ResourceClaimTemplate and ResourceSlice, with Kubernetes' field names and JSON shapes.
//!
//! Drivers (Berth's agents) publish devices in ResourceSlices; pods ask for devices through
//! ResourceClaims (named, or made per pod from a ResourceClaimTemplate); DeviceClasses hold
//! the selectors and configuration a request refers to by name. The limits are kube's
//! constants from `k8s.io/api/resource/v1`, enforced by [`crate::validate`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{NodeSelector, ObjectMeta, ResourceList, Time};
use crate::Quantity;

/// The API group of the DRA kinds.
pub const RESOURCE_GROUP: &str = "resource.k8s.io";
/// At most this many devices in one ResourceSlice (`ResourceSliceMaxDevices`).
pub const RESOURCE_SLICE_MAX_DEVICES: usize = 128;
/// At most this many devices in a slice where a device has taints or consumes counters.
pub const RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_CONSUMES_COUNTERS: usize = 64;
/// At most this many attributes and capacities, combined, per device.
pub const RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: usize = 32;
/// At most this many counter sets in a slice's `sharedCounters`.
pub const RESOURCE_SLICE_MAX_COUNTER_SETS: usize = 8;
/// At most this many counters per counter set.
pub const RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET: usize = 32;
/// At most this many `consumesCounters` entries per device.
pub const RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE: usize = 2;
/// At most this many taints per device.
pub const DEVICE_TAINTS_MAX_LENGTH: usize = 16;
/// At most this many tolerations per request.
pub const DEVICE_TOLERATIONS_MAX_LENGTH: usize = 16;
/// At most this many requests per claim (`DeviceRequestsMaxSize`).
pub const DEVICE_REQUESTS_MAX_SIZE: usize = 32;
/// At most this many selectors per request or class (`DeviceSelectorsMaxSize`).
pub const DEVICE_SELECTORS_MAX_SIZE: usize = 32;
/// At most this many constraints per claim.
pub const DEVICE_CONSTRAINTS_MAX_SIZE: usize = 32;
/// At most this many configuration entries per claim or class.
pub const DEVICE_CONFIG_MAX_SIZE: usize = 32;
/// At most this many subrequests in `firstAvailable`.
pub const FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE: usize = 8;
/// At most this many device results in one allocation.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;
/// At most this many consumers in a claim's `status.reservedFor`.
pub const RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE: usize = 256;
/// Longest driver name (a DNS subdomain of at most 63 characters).
pub const DRIVER_NAME_MAX_LENGTH: usize = 63;
/// Longest pool name.
pub const POOL_NAME_MAX_LENGTH: usize = 253;
/// Longest string attribute value.
pub const DEVICE_ATTRIBUTE_STRING_VALUE_MAX_LENGTH: usize = 64;
/// Longest version attribute value.
pub const DEVICE_ATTRIBUTE_VERSION_VALUE_MAX_LENGTH: usize = 64;
/// Longest CEL selector expression, in bytes (`CELSelectorExpressionMaxLength`).
pub const CEL_SELECTOR_EXPRESSION_MAX_LENGTH: usize = 10 * 1024;
/// Longest opaque configuration parameters, in bytes.
pub const OPAQUE_PARAMETERS_MAX_LENGTH: usize = 10 * 1024;
/// The annotation the claim controller puts on a claim made from a template: the pod's
/// claim entry (`spec.resourceClaims[].name`) it was made for.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// A class of devices (`resource.k8s.io/v1` DeviceClass), cluster-scoped: selectors and
/// configuration that requests naming the class inherit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClass {
    /// `resource.k8s.io/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `DeviceClass`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name (cluster-scoped).
    pub metadata: ObjectMeta,
    /// Selectors and configuration.
    pub spec: DeviceClassSpec,
}

/// `spec` of a [`DeviceClass`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClassSpec {
    /// Every selector must match a device of this class (ANDed with the request's own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// Configuration passed to the driver for devices of this class.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceClassConfiguration>,
    /// The extended resource name (`example.com/gpu`) that pods may request to get a device
    /// of this class; recorded, not acted on by Berth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_resource_name: Option<String>,
}

/// One selector of a request or class: a CEL expression over a device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceSelector {
    /// The CEL selector; the only kind of selector there is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelDeviceSelector>,
}

impl DeviceSelector {
    /// A selector with this CEL expression.
    pub fn cel(expression: &str) -> Self {
        DeviceSelector {
            cel: Some(CelDeviceSelector {
                expression: expression.to_string(),
            }),
        }
    }
}

/// A CEL expression that must evaluate to true for a device to be selected (see
/// [`crate::cel`] for what it can read).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CelDeviceSelector {
    /// The expression, e.g. `device.driver == "gpu.berth.dev"`.
    pub expression: String,
}

/// Configuration of a [`DeviceClass`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClassConfiguration {
    /// Driver-specific parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// Parameters in a driver's own format, passed to it untouched.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct OpaqueDeviceConfiguration {
    /// The driver the parameters are for.
    pub driver: String,
    /// The parameters, kept as written (a JSON object, usually with apiVersion and kind).
    pub parameters: serde_json::Value,
}

/// A claim for devices (`resource.k8s.io/v1` ResourceClaim), namespaced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaim {
    /// `resource.k8s.io/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ResourceClaim`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// What is asked for (immutable).
    pub spec: ResourceClaimSpec,
    /// The allocation and its consumers.
    #[serde(skip_serializing_if = "ResourceClaimStatus::is_empty")]
    pub status: ResourceClaimStatus,
}

impl ResourceClaim {
    /// Whether devices are allocated to the claim.
    pub fn is_allocated(&self) -> bool {
        self.status.allocation.is_some()
    }

    /// Whether the pod with this uid is one of the claim's consumers.
    pub fn is_reserved_for(&self, pod_uid: &str) -> bool {
        self.status.reserved_for.iter().any(|r| r.uid == pod_uid)
    }

    /// kubectl's STATE column (kube's printer for resourceclaims): `deleted` first when
    /// being deleted; then `pending` when not allocated (and not deleted), else `allocated`
    /// followed by `reserved` when it has consumers or `deallocating` when deleted; joined
    /// with commas.
    pub fn state(&self) -> String {
        let mut states = Vec::new();
        if self.metadata.deletion_timestamp.is_some() {
            states.push("deleted");
        }
        if self.is_allocated() {
            states.push("allocated");
            if !self.status.reserved_for.is_empty() {
                states.push("reserved");
            } else if self.metadata.deletion_timestamp.is_some() {
                states.push("deallocating");
            }
        } else if self.metadata.deletion_timestamp.is_none() {
            states.push("pending");
        }
        states.join(",")
    }
}

/// `spec` of a [`ResourceClaim`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimSpec {
    /// The devices asked for.
    pub devices: DeviceClaim,
}

/// `spec.devices` of a claim: requests, constraints across them, configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClaim {
    /// The requests; all must be satisfied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<DeviceRequest>,
    /// Constraints across the devices of several requests.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<DeviceConstraint>,
    /// Configuration for the devices.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceClaimConfiguration>,
}

/// One request of a claim: exactly one of `exactly` and `firstAvailable` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceRequest {
    /// Name, a DNS label unique in the claim; referred to by constraints, config and
    /// containers' `resources.claims[].request`.
    pub name: String,
    /// One kind of device, with its count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exactly: Option<ExactDeviceRequest>,
    /// Alternatives, tried in order: the first that can be satisfied is allocated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub first_available: Vec<DeviceSubRequest>,
}

/// How many devices a request wants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeviceAllocationMode {
    /// `count` devices (the default).
    #[default]
    ExactCount,
    /// Every matching device of the pool(s) on the node; fails when one is unavailable.
    All,
}

impl DeviceAllocationMode {
    /// The mode as written in the API.
    pub fn as_str(&self) -> &'static str {
        match self {
            DeviceAllocationMode::ExactCount => "ExactCount",
            DeviceAllocationMode::All => "All",
        }
    }
}

/// A request for devices of one class (`exactly`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ExactDeviceRequest {
    /// The DeviceClass the devices must belong to (required).
    pub device_class_name: String,
    /// Further selectors, ANDed with the class's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// ExactCount (default) or All.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<DeviceAllocationMode>,
    /// How many devices for ExactCount; defaults to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Admin access: the devices may be allocated although in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// Device taints the request tolerates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<DeviceToleration>,
    /// How much of each shareable capacity to consume (consumable capacity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

/// One alternative of a `firstAvailable` request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceSubRequest {
    /// Name, a DNS label unique in the request; results name `<request>/<subrequest>`.
    pub name: String,
    /// The DeviceClass the devices must belong to (required).
    pub device_class_name: String,
    /// Further selectors, ANDed with the class's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<DeviceSelector>,
    /// ExactCount (default) or All.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<DeviceAllocationMode>,
    /// How many devices for ExactCount; defaults to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Device taints the subrequest tolerates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<DeviceToleration>,
    /// How much of each shareable capacity to consume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

/// The parts of a request the allocator reads, the same for `exactly` and a subrequest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestParams<'a> {
    /// The DeviceClass.
    pub device_class_name: &'a str,
    /// The request's own selectors.
    pub selectors: &'a [DeviceSelector],
    /// ExactCount or All, defaulted.
    pub allocation_mode: DeviceAllocationMode,
    /// The count for ExactCount, defaulted to 1.
    pub count: i64,
    /// Whether admin access is asked for.
    pub admin_access: bool,
    /// Tolerated device taints.
    pub tolerations: &'a [DeviceToleration],
    /// Capacity asked for, if any.
    pub capacity: Option<&'a CapacityRequirements>,
}

impl ExactDeviceRequest {
    /// The request with its defaults applied (allocationMode ExactCount, count 1).
    pub fn params(&self) -> RequestParams<'_> {
        RequestParams {
            device_class_name: &self.device_class_name,
            selectors: &self.selectors,
            allocation_mode: self.allocation_mode.unwrap_or_default(),
            count: self.count.unwrap_or(1),
            admin_access: self.admin_access.unwrap_or(false),
            tolerations: &self.tolerations,
            capacity: self.capacity.as_ref(),
        }
    }
}

impl DeviceSubRequest {
    /// The subrequest with its defaults applied (allocationMode ExactCount, count 1).
    pub fn params(&self) -> RequestParams<'_> {
        RequestParams {
            device_class_name: &self.device_class_name,
            selectors: &self.selectors,
            allocation_mode: self.allocation_mode.unwrap_or_default(),
            count: self.count.unwrap_or(1),
            admin_access: false,
            tolerations: &self.tolerations,
            capacity: self.capacity.as_ref(),
        }
    }
}

/// `capacity` of a request: how much of each capacity of a device it consumes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityRequirements {
    /// Capacity name (a qualified name, `memory` or `gpu.berth.dev/memory`) to amount.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub requests: ResourceList,
}

/// A request's toleration of device taints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceToleration {
    /// Taint key; empty with Exists matches every taint.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Equal (default) or Exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<DeviceTolerationOperator>,
    /// Value compared by Equal.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Effect matched; absent matches every effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<DeviceTaintEffect>,
    /// For NoExecute: how long the allocation stays after the taint appears.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// Operator of a [`DeviceToleration`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeviceTolerationOperator {
    /// Key and value must be equal (the default).
    #[default]
    Equal,
    /// Key must match; any value.
    Exists,
}

/// Effect of a device taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeviceTaintEffect {
    /// The device is not allocated to claims that do not tolerate the taint.
    NoSchedule,
    /// As NoSchedule, and pods using it that do not tolerate it are evicted.
    NoExecute,
    /// No effect: informational.
    None,
}

/// A constraint across the devices allocated for several requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceConstraint {
    /// The requests it applies to; empty means every request of the claim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// All devices must have this attribute (a fully qualified name) with one value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_attribute: Option<String>,
    /// All devices must have this attribute with pairwise different values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct_attribute: Option<String>,
}

/// Configuration of a claim, for some or all of its requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClaimConfiguration {
    /// The requests it applies to; empty means all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Driver-specific parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// `status` of a [`ResourceClaim`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimStatus {
    /// The devices allocated, once the scheduler has allocated them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation: Option<AllocationResult>,
    /// The pods using the claim (at most 256).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reserved_for: Vec<ResourceClaimConsumerReference>,
    /// Per-device status reported by drivers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<AllocatedDeviceStatus>,
}

impl ResourceClaimStatus {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.allocation.is_none() && self.reserved_for.is_empty() && self.devices.is_empty()
    }
}

/// `status.allocation` of a claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocationResult {
    /// The devices.
    pub devices: DeviceAllocationResult,
    /// The nodes the allocation is usable on (for node-local devices: that node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// When the allocation was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_timestamp: Option<Time>,
}

/// `status.allocation.devices`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceAllocationResult {
    /// One entry per allocated device.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<DeviceRequestAllocationResult>,
    /// The configuration from class and claim that applies to the devices.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<DeviceAllocationConfiguration>,
}

/// One allocated device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceRequestAllocationResult {
    /// The request (`<request>` or `<request>/<subrequest>`).
    pub request: String,
    /// The device's driver.
    pub driver: String,
    /// The device's pool.
    pub pool: String,
    /// The device's name in the pool.
    pub device: String,
    /// Set when the request asked for admin access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// The tolerations that let the device be allocated.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<DeviceToleration>,
    /// Conditions the device must reach before the pod binds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub binding_conditions: Vec<String>,
    /// Conditions that fail the binding.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub binding_failure_conditions: Vec<String>,
    /// For a device with `allowMultipleAllocations`: which share this is.
    #[serde(rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    /// For a shareable device: what this allocation consumes of each capacity.
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    pub consumed_capacity: ResourceList,
}

/// Configuration in an allocation, copied from the class or the claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceAllocationConfiguration {
    /// `FromClass` or `FromClaim`.
    pub source: String,
    /// The requests it applies to; empty means all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Driver-specific parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// A consumer of a claim (a pod) in `status.reservedFor`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimConsumerReference {
    /// API group of the consumer; empty for the core group (pods).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// Resource (`pods`).
    pub resource: String,
    /// Name.
    pub name: String,
    /// uid.
    pub uid: String,
}

impl ResourceClaimConsumerReference {
    /// A reference to a pod.
    pub fn pod(name: &str, uid: &str) -> Self {
        ResourceClaimConsumerReference {
            api_group: String::new(),
            resource: "pods".into(),
            name: name.to_string(),
            uid: uid.to_string(),
        }
    }
}

/// Status of one allocated device, as its driver reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocatedDeviceStatus {
    /// Driver.
    pub driver: String,
    /// Pool.
    pub pool: String,
    /// Device.
    pub device: String,
    /// Share, for a device allocated several times.
    #[serde(rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    /// Conditions (metav1.Condition objects), kept as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<serde_json::Value>,
    /// Driver-specific data, kept as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// Network data of a network device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_data: Option<NetworkDeviceData>,
}

/// Network data of an allocated device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkDeviceData {
    /// Interface name in the pod.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub interface_name: String,
    /// Addresses in CIDR form.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<String>,
    /// MAC address.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hardware_address: String,
}

/// A template of per-pod claims (`resource.k8s.io/v1` ResourceClaimTemplate), namespaced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimTemplate {
    /// `resource.k8s.io/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ResourceClaimTemplate`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// What each claim made from it looks like.
    pub spec: ResourceClaimTemplateSpec,
}

/// `spec` of a [`ResourceClaimTemplate`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimTemplateSpec {
    /// Labels and annotations copied into each claim.
    pub metadata: ObjectMeta,
    /// The claim's spec.
    pub spec: ResourceClaimSpec,
}

/// Devices a driver publishes (`resource.k8s.io/v1` ResourceSlice), cluster-scoped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSlice {
    /// `resource.k8s.io/v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ResourceSlice`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name (cluster-scoped).
    pub metadata: ObjectMeta,
    /// Driver, pool and devices.
    pub spec: ResourceSliceSpec,
}

/// `spec` of a [`ResourceSlice`]: exactly one of `nodeName`, `nodeSelector`, `allNodes` and
/// `perDeviceNodeSelection` says where the devices are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSliceSpec {
    /// The driver (a DNS subdomain, e.g. `gpu.berth.dev`).
    pub driver: String,
    /// The pool the slice belongs to.
    pub pool: ResourcePool,
    /// The node that has the devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The nodes that can reach the devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// Every node can reach the devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// The devices (at most 128).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<Device>,
    /// Each device says where it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_device_node_selection: Option<bool>,
    /// Counter sets that devices consume from (partitionable devices).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_counters: Vec<CounterSet>,
}

/// `spec.pool` of a slice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcePool {
    /// Pool name (for node-local devices, usually the node's name).
    pub name: String,
    /// Generation: consumers use only the slices of a pool's highest generation.
    pub generation: i64,
    /// How many slices the pool has at this generation (at least 1).
    pub resource_slice_count: i64,
}

/// One device of a slice.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Device {
    /// Name, a DNS label unique in the pool.
    pub name: String,
    /// Typed attributes by qualified name (`model`, `gpu.berth.dev/index`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, DeviceAttribute>,
    /// Capacities by qualified name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, DeviceCapacity>,
    /// Counters the device consumes from the slice's counter sets.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consumes_counters: Vec<DeviceCounterConsumption>,
    /// With `perDeviceNodeSelection`: the node that has the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// With `perDeviceNodeSelection`: the nodes that reach the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// With `perDeviceNodeSelection`: every node reaches the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// Driver-defined taints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<DeviceTaint>,
    /// Whether an allocation of the device is limited to the node it was made for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binds_to_node: Option<bool>,
    /// Conditions to reach before the pod binds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub binding_conditions: Vec<String>,
    /// Conditions that fail the binding.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub binding_failure_conditions: Vec<String>,
    /// Whether several claims may share the device, each consuming part of its capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_multiple_allocations: Option<bool>,
}

impl Device {
    /// Whether the device may be allocated to several claims at once.
    pub fn allows_multiple_allocations(&self) -> bool {
        self.allow_multiple_allocations.unwrap_or(false)
    }
}

/// A typed attribute value: exactly one field is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceAttribute {
    /// An integer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub int: Option<i64>,
    /// A boolean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    /// A string (at most 64 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// A semantic version 2.0.0 (`1.2.3`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl DeviceAttribute {
    /// An int attribute.
    pub fn int(v: i64) -> Self {
        DeviceAttribute {
            int: Some(v),
            ..Default::default()
        }
    }

    /// A bool attribute.
    pub fn bool(v: bool) -> Self {
        DeviceAttribute {
            bool: Some(v),
            ..Default::default()
        }
    }

    /// A string attribute.
    pub fn string(v: &str) -> Self {
        DeviceAttribute {
            string: Some(v.to_string()),
            ..Default::default()
        }
    }

    /// A version attribute.
    pub fn version(v: &str) -> Self {
        DeviceAttribute {
            version: Some(v.to_string()),
            ..Default::default()
        }
    }

    /// How many of the value fields are set (valid: exactly one).
    pub fn fields_set(&self) -> usize {
        usize::from(self.int.is_some())
            + usize::from(self.bool.is_some())
            + usize::from(self.string.is_some())
            + usize::from(self.version.is_some())
    }
}

impl std::fmt::Display for DeviceAttribute {
    /// The value as `describe` shows it; empty when no field is set.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(v) = self.int {
            write!(f, "{v}")
        } else if let Some(v) = self.bool {
            write!(f, "{v}")
        } else if let Some(v) = &self.string {
            f.write_str(v)
        } else if let Some(v) = &self.version {
            f.write_str(v)
        } else {
            Ok(())
        }
    }
}

/// A capacity of a device: its amount and, for a shareable device, how requests for it are
/// rounded and bounded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceCapacity {
    /// The amount.
    pub value: Quantity,
    /// What a request may consume (consumable capacity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_policy: Option<CapacityRequestPolicy>,
}

impl DeviceCapacity {
    /// A capacity of this amount, without request policy.
    pub fn new(value: Quantity) -> Self {
        DeviceCapacity {
            value,
            request_policy: None,
        }
    }
}

/// `requestPolicy` of a capacity: at most one of `validValues` and `validRange`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityRequestPolicy {
    /// Consumed when a request does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Quantity>,
    /// The amounts a request may consume, ascending; a request is rounded up to one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub valid_values: Vec<Quantity>,
    /// The range a request may consume, with a step it is rounded up to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_range: Option<CapacityRequestPolicyRange>,
}

/// `requestPolicy.validRange` of a capacity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityRequestPolicyRange {
    /// Least a request consumes (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Quantity>,
    /// Most a request may consume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Quantity>,
    /// A request is rounded up to `min` plus a multiple of this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<Quantity>,
}

/// A driver-defined taint on a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceTaint {
    /// Key (a qualified name).
    pub key: String,
    /// Value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Effect.
    pub effect: DeviceTaintEffect,
    /// When it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<Time>,
}

/// A named set of counters in a slice's `sharedCounters`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct CounterSet {
    /// Name, a DNS label.
    pub name: String,
    /// Counters by name.
    pub counters: BTreeMap<String, Counter>,
}

/// What a device consumes from one counter set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceCounterConsumption {
    /// The counter set.
    pub counter_set: String,
    /// Counters by name.
    pub counters: BTreeMap<String, Counter>,
}

/// One counter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Counter {
    /// Its amount.
    pub value: Quantity,
}

/// A pod's `spec.resourceClaims[]` entry: a claim by name, or one made from a template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodResourceClaim {
    /// Name of the entry in the pod, a DNS label; containers refer to it.
    pub name: String,
    /// An existing claim in the pod's namespace, shared with other pods that name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    /// A template from which a claim is made for this pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// A container's `resources.claims[]` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimRef {
    /// The pod's `spec.resourceClaims[].name`.
    pub name: String,
    /// One request of the claim; empty for all of them.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub request: String,
}

/// A pod's `status.resourceClaimStatuses[]` entry: which claim was made for a template entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodResourceClaimStatus {
    /// The pod's `spec.resourceClaims[].name`.
    pub name: String,
    /// The claim made for it; absent when none was needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_json_shapes_read_and_write_back() {
        let claim = serde_json::json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpus", "namespace": "default"},
            "spec": {"devices": {
                "requests": [
                    {"name": "gpu", "exactly": {
                        "deviceClassName": "gpu.example.com",
                        "selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}],
                        "allocationMode": "All",
                        "capacity": {"requests": {"memory": "10Gi"}}
                    }},
                    {"name": "alt", "firstAvailable": [
                        {"name": "big", "deviceClassName": "big", "count": 2},
                        {"name": "small", "deviceClassName": "small"}
                    ]}
                ],
                "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"}],
                "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"kind": "Cfg"}}}]
            }},
            "status": {
                "allocation": {
                    "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0", "shareID": "abc", "consumedCapacity": {"memory": "10Gi"}}]},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
                },
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]
            }
        });
        let parsed: ResourceClaim = serde_json::from_value(claim.clone()).expect("claim reads");
        let exactly = parsed.spec.devices.requests[0]
            .exactly
            .as_ref()
            .expect("exactly");
        assert_eq!(exactly.params().allocation_mode, DeviceAllocationMode::All);
        assert_eq!(
            parsed.spec.devices.requests[1].first_available[1]
                .params()
                .count,
            1
        );
        let result = &parsed
            .status
            .allocation
            .as_ref()
            .expect("allocated")
            .devices
            .results[0];
        assert_eq!(result.share_id.as_deref(), Some("abc"));
        assert_eq!(parsed.state(), "allocated,reserved");
        assert_eq!(serde_json::to_value(&parsed).expect("writes"), claim);

        let slice = serde_json::json!({
            "metadata": {"name": "n1-gpu"},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "n1",
                "devices": [{
                    "name": "gpu-0",
                    "attributes": {"model": {"string": "A100"}, "index": {"int": 0}, "driverVersion": {"version": "1.2.3"}, "healthy": {"bool": true}},
                    "capacity": {"memory": {"value": "40Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}},
                    "allowMultipleAllocations": true
                }]
            }
        });
        let parsed: ResourceSlice = serde_json::from_value(slice.clone()).expect("slice reads");
        assert!(parsed.spec.devices[0].allows_multiple_allocations());
        assert_eq!(serde_json::to_value(&parsed).expect("writes"), slice);
    }

    #[test]
    fn claim_state_is_kubectl_s() {
        let mut claim = ResourceClaim::default();
        assert_eq!(claim.state(), "pending");
        claim.status.allocation = Some(AllocationResult::default());
        assert_eq!(claim.state(), "allocated");
        claim.metadata.deletion_timestamp = Some(Time::now());
        assert_eq!(claim.state(), "deleted,allocated,deallocating");
        claim.status.allocation = None;
        assert_eq!(claim.state(), "deleted");
    }
}
