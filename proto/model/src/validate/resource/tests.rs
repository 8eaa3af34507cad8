//! Tests of the DRA validation rules: one row per rule, with the field path and message.

use super::*;
use crate::testing::{
    DeviceBuilder, DeviceClassBuilder, PodBuilder, ResourceClaimBuilder, ResourceSliceBuilder,
};

/// The `path: message` lines of an object's errors.
fn errors(obj: Object) -> Vec<String> {
    match crate::validate::validate_object(&obj) {
        Ok(()) => Vec::new(),
        Err(e) => e.errors().iter().map(ToString::to_string).collect(),
    }
}

fn gpu_slice() -> ResourceSliceBuilder {
    ResourceSliceBuilder::new("n1", "gpu.berth.dev").device(
        DeviceBuilder::new("gpu-0")
            .string("model", "A100")
            .int("index", 0)
            .shareable_capacity("memory", "40Gi", "1Gi", "1Gi", "1Gi")
            .allow_multiple_allocations(),
    )
}

#[test]
fn dra_objects_are_checked_with_kube_s_rules() {
    let many_requests = (0..33).fold(ResourceClaimBuilder::new("c"), |b, i| {
        b.request(&format!("r{i}"), "gpu")
    });
    let many_devices = (0..129).fold(ResourceSliceBuilder::new("n1", "gpu.berth.dev"), |b, i| {
        b.device(DeviceBuilder::new(&format!("gpu-{i}")))
    });
    let many_attributes = (0..17).fold(DeviceBuilder::new("gpu-0"), |b, i| {
        b.int(&format!("a{i}"), i).capacity(&format!("c{i}"), "1")
    });
    let mut no_pool = gpu_slice().build();
    no_pool.spec.pool.resource_slice_count = 0;
    let mut two_places = gpu_slice().build();
    two_places.spec.all_nodes = Some(true);
    let mut nowhere = gpu_slice().build();
    nowhere.spec.node_name = None;
    let mut two_values = gpu_slice().build();
    two_values.spec.devices[0].attributes.insert(
        "x".into(),
        DeviceAttribute {
            int: Some(1),
            bool: Some(true),
            ..Default::default()
        },
    );
    let mut bad_version = gpu_slice().build();
    bad_version.spec.devices[0]
        .attributes
        .insert("v".into(), DeviceAttribute::version("v1"));
    let mut neither = ResourceClaimBuilder::new("c").request("r", "gpu").build();
    neither.spec.devices.requests[0].exactly = None;
    let cases: Vec<(&str, Object, Vec<&str>)> = vec![
        ("a valid slice", Object::ResourceSlice(Box::new(gpu_slice().build())), vec![]),
        (
            "a valid class",
            Object::DeviceClass(Box::new(DeviceClassBuilder::new("gpu").driver("gpu.berth.dev").build())),
            vec![],
        ),
        (
            "a valid claim",
            Object::ResourceClaim(
                Box::new(ResourceClaimBuilder::new("c")
                    .request("gpu", "gpu")
                    .selector(r#"device.attributes["gpu.berth.dev"].model == "A100""#)
                    .capacity("memory", "10Gi")
                    .request("two", "gpu")
                    .count(2)
                    .match_attribute("gpu.berth.dev/model", &["gpu", "two"])
                    .build()),
            ),
            vec![],
        ),
        (
            "a selector that does not compile",
            Object::ResourceClaim(
                Box::new(ResourceClaimBuilder::new("c").request("r", "gpu").selector("device.driver ==").build()),
            ),
            vec!["spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: \"device.driver ==\": compilation failed"],
        ),
        (
            "a class selector naming an undeclared variable",
            Object::DeviceClass(Box::new(DeviceClassBuilder::new("gpu").selector("gpu.model == 1").build())),
            vec!["spec.selectors[0].cel.expression: Invalid value: \"gpu.model == 1\": compilation failed: undeclared reference to 'gpu'"],
        ),
        (
            "33 requests",
            Object::ResourceClaim(Box::new(many_requests.build())),
            vec!["spec.devices.requests: Too many: 33: must have at most 32 items"],
        ),
        (
            "a request that is neither exactly nor firstAvailable",
            Object::ResourceClaim(Box::new(neither)),
            vec!["spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"],
        ),
        (
            "count zero",
            Object::ResourceClaim(Box::new(ResourceClaimBuilder::new("c").request("r", "gpu").count(0).build())),
            vec!["spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"],
        ),
        (
            "a count with All",
            Object::ResourceClaim(Box::new(ResourceClaimBuilder::new("c").request("r", "gpu").count(2).all().build())),
            vec!["spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"],
        ),
        (
            "duplicate request names and a bad class name",
            Object::ResourceClaim(
                Box::new(ResourceClaimBuilder::new("c").request("r", "gpu").request("r", "GPU_x").build()),
            ),
            vec![
                "spec.devices.requests[1].name: Duplicate value: \"r\"",
                "spec.devices.requests[1].exactly.deviceClassName: Invalid value: \"GPU_x\"",
            ],
        ),
        (
            "a constraint on an unknown request with a name without domain",
            Object::ResourceClaim(
                Box::new(ResourceClaimBuilder::new("c").request("r", "gpu").match_attribute("model", &["x"]).build()),
            ),
            vec![
                "spec.devices.constraints[0].requests[0]: Invalid value: \"x\": must be the name of a request",
                "spec.devices.constraints[0].matchAttribute: Required value: a fully qualified name",
            ],
        ),
        (
            "firstAvailable subrequests may be named by constraints",
            Object::ResourceClaim(
                Box::new(ResourceClaimBuilder::new("c")
                    .first_available("r", &[("big", "gpu"), ("small", "gpu")])
                    .match_attribute("gpu.berth.dev/model", &["r/big"])
                    .build()),
            ),
            vec![],
        ),
        (
            "129 devices",
            Object::ResourceSlice(Box::new(many_devices.build())),
            vec!["spec.devices: Too many: 129: must have at most 128 items"],
        ),
        (
            "34 attributes and capacities",
            Object::ResourceSlice(Box::new(ResourceSliceBuilder::new("n1", "gpu.berth.dev").device(many_attributes).build())),
            vec!["spec.devices[0]: Too many: 34: must have at most 32 attributes and capacities combined"],
        ),
        (
            "a pool without slices",
            Object::ResourceSlice(Box::new(no_pool)),
            vec!["spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"],
        ),
        (
            "nodeName and allNodes",
            Object::ResourceSlice(Box::new(two_places)),
            vec!["spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of"],
        ),
        (
            "no node selection",
            Object::ResourceSlice(Box::new(nowhere)),
            vec!["spec: Required value: exactly one of `nodeName`"],
        ),
        (
            "an attribute with two values",
            Object::ResourceSlice(Box::new(two_values)),
            vec!["spec.devices[0].attributes.x: Invalid value: \"1\": exactly one value must be specified"],
        ),
        (
            "a version that is not semver",
            Object::ResourceSlice(Box::new(bad_version)),
            vec!["spec.devices[0].attributes.v.version: Invalid value: \"v1\": must be a string compatible with semver.org spec 2.0.0"],
        ),
        (
            "a bad driver name",
            Object::ResourceSlice(Box::new(ResourceSliceBuilder::new("n1", "GPU").build())),
            vec![
                "metadata.name: Invalid value: \"n1-GPU\"",
                "spec.driver: Invalid value: \"GPU\"",
            ],
        ),
        (
            "a container naming a claim the pod does not have",
            Object::Pod({
                let mut pod = PodBuilder::new("p").cpu_millis(1).resource_claim("gpu", "c").build();
                pod.spec.containers[0].resources.claims[0].name = "other".into();
                Box::new(pod)
            }),
            vec!["spec.containers[0].resources.claims[0]: Not found: \"other\": must be one of the claims defined in pod.spec.resourceClaims: gpu"],
        ),
        (
            "a pod claim with both a claim and a template",
            Object::Pod({
                let mut pod = PodBuilder::new("p").cpu_millis(1).resource_claim("gpu", "c").build();
                pod.spec.resource_claims[0].resource_claim_template_name = Some("t".into());
                Box::new(pod)
            }),
            vec!["spec.resourceClaims[0]: Invalid value: \"\": at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"],
        ),
        (
            "a valid pod with a template claim",
            Object::Pod(Box::new(PodBuilder::new("p").cpu_millis(1).resource_claim_template("gpu", "t").build())),
            vec![],
        ),
    ];
    for (name, object, want) in cases {
        let got = errors(object);
        assert_eq!(got.len(), want.len(), "{name}: {got:#?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                g.starts_with(w),
                "{name}: got {g:?}, want it to start with {w:?}"
            );
        }
    }
}

#[test]
fn reserved_for_holds_at_most_256_consumers_of_an_allocated_claim() {
    let mut claim = ResourceClaimBuilder::new("c")
        .request("r", "gpu")
        .allocated("n1", &[("r", "gpu.berth.dev", "n1", "gpu-0")]);
    for i in 0..257 {
        claim = claim.reserved_for(&format!("p{i}"), &format!("uid-{i}"));
    }
    assert_eq!(
        errors(Object::ResourceClaim(Box::new(claim.build()))),
        vec!["status.reservedFor: Too many: 257: must have at most 256 items"]
    );
    let unallocated = ResourceClaimBuilder::new("c")
        .request("r", "gpu")
        .reserved_for("p", "u")
        .build();
    assert_eq!(
        errors(Object::ResourceClaim(Box::new(unallocated))),
        vec!["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]
    );
}
