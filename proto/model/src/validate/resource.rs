//! Validation of the DRA kinds (`resource.k8s.io/v1`) and of a pod's DRA fields, with
//! kube's limits and messages (`pkg/apis/resource/validation`): sizes of lists, names as
//! DNS labels, subdomains or qualified names, one-of fields, and every CEL selector compiled
//! so that an expression that cannot compile is refused at apply.

use std::collections::BTreeSet;

use super::{
    child, index, invalid_each, key, validate_annotations, validate_dns1123_label,
    validate_dns1123_subdomain, validate_labels, validate_node_selector, validate_object_meta,
    validate_quantity_non_negative, FieldError, ValidationErrors,
};
use crate::model::*;

/// `Too many: 33: must have at most 32 items`.
fn too_many(path: &str, got: usize, max: usize) -> FieldError {
    FieldError::new(
        path,
        format!("Too many: {got}: must have at most {max} items"),
    )
}

/// Checks a list's length against its maximum.
fn check_max(errs: &mut Vec<FieldError>, path: &str, len: usize, max: usize) {
    if len > max {
        errs.push(too_many(path, len, max));
    }
}

fn required_label(errs: &mut Vec<FieldError>, path: &str, value: &str) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else {
        errs.extend(invalid_each(path, value, validate_dns1123_label(value)));
    }
}

fn required_subdomain(errs: &mut Vec<FieldError>, path: &str, value: &str) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else {
        errs.extend(invalid_each(path, value, validate_dns1123_subdomain(value)));
    }
}

/// A driver name: a DNS subdomain of at most 63 characters.
fn validate_driver_name(errs: &mut Vec<FieldError>, path: &str, driver: &str) {
    required_subdomain(errs, path, driver);
    if driver.len() > DRIVER_NAME_MAX_LENGTH {
        errs.push(FieldError::invalid(
            path,
            driver,
            &format!("must not be longer than {DRIVER_NAME_MAX_LENGTH} characters"),
        ));
    }
}

fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Longest name part of an attribute or capacity name.
const DEVICE_MAX_ID_LENGTH: usize = 32;
/// Longest domain of an attribute or capacity name.
const DEVICE_MAX_DOMAIN_LENGTH: usize = 63;

/// Checks the name part of an attribute, capacity or taint-less qualified name: a C
/// identifier of at most 32 characters.
fn validate_c_identifier(errs: &mut Vec<FieldError>, path: &str, id: &str) {
    if id.is_empty() {
        errs.push(FieldError::required(path, "name required"));
        return;
    }
    if id.len() > DEVICE_MAX_ID_LENGTH {
        errs.push(FieldError::new(
            path,
            format!("Too long: may not be more than {DEVICE_MAX_ID_LENGTH} bytes"),
        ));
    }
    if !is_c_identifier(id) {
        errs.push(FieldError::invalid(
            path,
            id,
            "a valid C identifier must start with alphabetic character or '_', followed by a \
             string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or \
             'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
        ));
    }
}

fn validate_domain(errs: &mut Vec<FieldError>, path: &str, name: &str, domain: &str) {
    if domain.len() > DEVICE_MAX_DOMAIN_LENGTH {
        errs.push(FieldError::invalid(
            path,
            name,
            &format!("the domain must not be longer than {DEVICE_MAX_DOMAIN_LENGTH} characters"),
        ));
    }
    for m in validate_dns1123_subdomain(domain).err().unwrap_or_default() {
        errs.push(FieldError::invalid(path, name, &m));
    }
}

/// Checks a qualified name of an attribute or capacity: `[domain/]name`, the domain a DNS
/// subdomain, the name a C identifier.
pub fn validate_device_qualified_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match name.split_once('/') {
        Some((domain, id)) => {
            validate_domain(&mut errs, path, name, domain);
            validate_c_identifier(&mut errs, path, id);
        }
        None => validate_c_identifier(&mut errs, path, name),
    }
    errs
}

/// Checks a fully qualified attribute name (`domain/name`), as constraints need.
pub fn validate_fully_qualified_name(name: &str, path: &str) -> Vec<FieldError> {
    match name.split_once('/') {
        Some(_) => validate_device_qualified_name(name, path),
        None => vec![FieldError::required(
            path,
            "a fully qualified name must be a domain and a name separated by a slash",
        )],
    }
}

// ------------------------------------------------------------------ selectors and config

fn validate_selectors(selectors: &[DeviceSelector], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    check_max(&mut errs, path, selectors.len(), DEVICE_SELECTORS_MAX_SIZE);
    for (i, selector) in selectors.iter().enumerate() {
        let p = index(path, i);
        let Some(cel) = &selector.cel else {
            errs.push(FieldError::required(child(&p, "cel"), ""));
            continue;
        };
        let p = child(&child(&p, "cel"), "expression");
        errs.extend(validate_cel_expression(&cel.expression, &p));
    }
    errs
}

/// Checks a CEL selector expression: present, at most 10 KiB, and compiling; a compile error
/// is `Invalid value: "<expression>": compilation failed: ...` at `path`.
pub fn validate_cel_expression(expression: &str, path: &str) -> Vec<FieldError> {
    if expression.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    if expression.len() > CEL_SELECTOR_EXPRESSION_MAX_LENGTH {
        return vec![FieldError::too_long(
            path,
            CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
        )];
    }
    match crate::cel::compile(expression) {
        Ok(_) => Vec::new(),
        Err(e) => vec![FieldError::invalid(path, expression, &e.to_string())],
    }
}

fn validate_opaque(opaque: Option<&OpaqueDeviceConfiguration>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(opaque) = opaque else {
        errs.push(FieldError::required(
            child(path, "opaque"),
            "exactly one of `opaque` is required",
        ));
        return errs;
    };
    let p = child(path, "opaque");
    validate_driver_name(&mut errs, &child(&p, "driver"), &opaque.driver);
    let params = child(&p, "parameters");
    if opaque.parameters.is_null() {
        errs.push(FieldError::required(&params, ""));
    } else if !opaque.parameters.is_object() {
        errs.push(FieldError::invalid(
            &params,
            "<value omitted>",
            "parameters must be a valid JSON object",
        ));
    } else {
        let len = serde_json::to_vec(&opaque.parameters)
            .map(|v| v.len())
            .unwrap_or(0);
        if len > OPAQUE_PARAMETERS_MAX_LENGTH {
            errs.push(FieldError::too_long(&params, OPAQUE_PARAMETERS_MAX_LENGTH));
        }
    }
    errs
}

// ------------------------------------------------------------------ DeviceClass

/// Checks a DeviceClass: metadata (cluster-scoped), at most 32 selectors that compile, at
/// most 32 configuration entries.
pub fn validate_device_class(class: &DeviceClass) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&class.metadata, false);
    errs.extend(validate_selectors(&class.spec.selectors, "spec.selectors"));
    check_max(
        &mut errs,
        "spec.config",
        class.spec.config.len(),
        DEVICE_CONFIG_MAX_SIZE,
    );
    for (i, config) in class.spec.config.iter().enumerate() {
        errs.extend(validate_opaque(
            config.opaque.as_ref(),
            &index("spec.config", i),
        ));
    }
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------ ResourceClaim

fn validate_tolerations(tolerations: &[DeviceToleration], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    check_max(
        &mut errs,
        path,
        tolerations.len(),
        DEVICE_TOLERATIONS_MAX_LENGTH,
    );
    for (i, t) in tolerations.iter().enumerate() {
        let p = index(path, i);
        if !t.key.is_empty() {
            errs.extend(invalid_each(
                &child(&p, "key"),
                &t.key,
                super::validate_label_key(&t.key),
            ));
        }
        match t.operator.unwrap_or_default() {
            DeviceTolerationOperator::Exists if !t.value.is_empty() => {
                errs.push(FieldError::invalid(
                    child(&p, "value"),
                    &t.value,
                    "must be empty for operator `Exists`",
                ));
            }
            DeviceTolerationOperator::Equal if t.key.is_empty() => {
                errs.push(FieldError::invalid(
                    child(&p, "operator"),
                    "Equal",
                    "operator must be Exists when key is empty",
                ));
            }
            _ => {}
        }
        if let Some(seconds) = t.toleration_seconds {
            if t.effect != Some(DeviceTaintEffect::NoExecute) {
                errs.push(FieldError::invalid(
                    child(&p, "tolerationSeconds"),
                    seconds,
                    "may only be specified when effect is NoExecute",
                ));
            }
        }
    }
    errs
}

fn validate_capacity_requests(
    capacity: Option<&CapacityRequirements>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(capacity) = capacity else {
        return errs;
    };
    let p = child(&child(path, "capacity"), "requests");
    for (name, q) in &capacity.requests {
        let kp = key(&p, name);
        errs.extend(validate_device_qualified_name(name, &kp));
        errs.extend(validate_quantity_non_negative(q, &kp));
    }
    errs
}

/// The request's fields that `exactly` and a subrequest share.
fn validate_request_params(
    params: RequestParams<'_>,
    has_count: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    required_subdomain(
        &mut errs,
        &child(path, "deviceClassName"),
        params.device_class_name,
    );
    errs.extend(validate_selectors(
        params.selectors,
        &child(path, "selectors"),
    ));
    match params.allocation_mode {
        DeviceAllocationMode::All if has_count => errs.push(FieldError::invalid(
            child(path, "count"),
            params.count,
            "must not be specified when allocationMode is 'All'",
        )),
        DeviceAllocationMode::ExactCount if params.count <= 0 => errs.push(FieldError::invalid(
            child(path, "count"),
            params.count,
            "must be greater than zero",
        )),
        _ => {}
    }
    errs.extend(validate_tolerations(
        params.tolerations,
        &child(path, "tolerations"),
    ));
    errs.extend(validate_capacity_requests(params.capacity, path));
    errs
}

/// The names a claim's constraints and config may refer to: `request` and
/// `request/subrequest`.
fn request_names(claim: &DeviceClaim) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for r in &claim.requests {
        names.insert(r.name.clone());
        for sub in &r.first_available {
            names.insert(format!("{}/{}", r.name, sub.name));
        }
    }
    names
}

fn validate_request_refs(
    requests: &[String],
    names: &BTreeSet<String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, r) in requests.iter().enumerate() {
        let p = index(path, i);
        if !seen.insert(r.as_str()) {
            errs.push(FieldError::duplicate(&p, r));
        } else if !names.contains(r) {
            errs.push(FieldError::invalid(
                &p,
                r,
                "must be the name of a request in the claim or the name of a request and a \
                 subrequest separated by '/'",
            ));
        }
    }
    errs
}

/// Checks a claim's spec (`spec` of a claim, `spec.spec` of a template) at `path`.
pub fn validate_resource_claim_spec(spec: &ResourceClaimSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let devices = child(path, "devices");
    let requests_path = child(&devices, "requests");
    let claim = &spec.devices;
    check_max(
        &mut errs,
        &requests_path,
        claim.requests.len(),
        DEVICE_REQUESTS_MAX_SIZE,
    );
    let mut names = BTreeSet::new();
    for (i, request) in claim.requests.iter().enumerate() {
        let p = index(&requests_path, i);
        let name_path = child(&p, "name");
        required_label(&mut errs, &name_path, &request.name);
        if !request.name.is_empty() && !names.insert(request.name.as_str()) {
            errs.push(FieldError::duplicate(&name_path, &request.name));
        }
        match (&request.exactly, request.first_available.is_empty()) {
            (None, true) => errs.push(FieldError::required(
                &p,
                "exactly one of `exactly` or `firstAvailable` is required",
            )),
            (Some(_), false) => errs.push(FieldError::invalid(
                &p,
                "{`exactly`, `firstAvailable`}",
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields \
                 are set",
            )),
            (Some(exactly), true) => errs.extend(validate_request_params(
                exactly.params(),
                exactly.count.is_some(),
                &child(&p, "exactly"),
            )),
            (None, false) => {
                let fa = child(&p, "firstAvailable");
                check_max(
                    &mut errs,
                    &fa,
                    request.first_available.len(),
                    FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
                );
                let mut sub_names = BTreeSet::new();
                for (j, sub) in request.first_available.iter().enumerate() {
                    let sp = index(&fa, j);
                    let np = child(&sp, "name");
                    required_label(&mut errs, &np, &sub.name);
                    if !sub.name.is_empty() && !sub_names.insert(sub.name.as_str()) {
                        errs.push(FieldError::duplicate(&np, &sub.name));
                    }
                    errs.extend(validate_request_params(
                        sub.params(),
                        sub.count.is_some(),
                        &sp,
                    ));
                }
            }
        }
    }
    let names = request_names(claim);
    let constraints = child(&devices, "constraints");
    check_max(
        &mut errs,
        &constraints,
        claim.constraints.len(),
        DEVICE_CONSTRAINTS_MAX_SIZE,
    );
    for (i, c) in claim.constraints.iter().enumerate() {
        let p = index(&constraints, i);
        errs.extend(validate_request_refs(
            &c.requests,
            &names,
            &child(&p, "requests"),
        ));
        match (&c.match_attribute, &c.distinct_attribute) {
            (Some(a), None) => errs.extend(validate_fully_qualified_name(
                a,
                &child(&p, "matchAttribute"),
            )),
            (None, Some(a)) => errs.extend(validate_fully_qualified_name(
                a,
                &child(&p, "distinctAttribute"),
            )),
            (None, None) => errs.push(FieldError::required(
                &p,
                "exactly one of `matchAttribute` or `distinctAttribute` is required",
            )),
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                &p,
                "{`matchAttribute`, `distinctAttribute`}",
                "exactly one of `matchAttribute` or `distinctAttribute` is required, but \
                 multiple fields are set",
            )),
        }
    }
    let config = child(&devices, "config");
    check_max(
        &mut errs,
        &config,
        claim.config.len(),
        DEVICE_CONFIG_MAX_SIZE,
    );
    for (i, c) in claim.config.iter().enumerate() {
        let p = index(&config, i);
        errs.extend(validate_request_refs(
            &c.requests,
            &names,
            &child(&p, "requests"),
        ));
        errs.extend(validate_opaque(c.opaque.as_ref(), &p));
    }
    errs
}

fn validate_claim_status(status: &ResourceClaimStatus) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(allocation) = &status.allocation {
        let p = "status.allocation.devices.results";
        let results = &allocation.devices.results;
        check_max(&mut errs, p, results.len(), ALLOCATION_RESULTS_MAX_SIZE);
        for (i, r) in results.iter().enumerate() {
            let rp = index(p, i);
            if r.request.is_empty() {
                errs.push(FieldError::required(child(&rp, "request"), ""));
            }
            validate_driver_name(&mut errs, &child(&rp, "driver"), &r.driver);
            if r.pool.is_empty() {
                errs.push(FieldError::required(child(&rp, "pool"), ""));
            }
            required_label(&mut errs, &child(&rp, "device"), &r.device);
        }
        if let Some(selector) = &allocation.node_selector {
            errs.extend(validate_node_selector(
                selector,
                "status.allocation.nodeSelector",
            ));
        }
    }
    let p = "status.reservedFor";
    check_max(
        &mut errs,
        p,
        status.reserved_for.len(),
        RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
    );
    let mut uids = BTreeSet::new();
    for (i, r) in status.reserved_for.iter().enumerate() {
        let rp = index(p, i);
        if r.resource.is_empty() {
            errs.push(FieldError::required(child(&rp, "resource"), ""));
        }
        if r.name.is_empty() {
            errs.push(FieldError::required(child(&rp, "name"), ""));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::required(child(&rp, "uid"), ""));
        } else if !uids.insert(r.uid.as_str()) {
            errs.push(FieldError::duplicate(child(&rp, "uid"), &r.uid));
        }
    }
    if !status.reserved_for.is_empty() && status.allocation.is_none() {
        errs.push(FieldError::forbidden(
            p,
            "may not be specified when `allocated` is not set",
        ));
    }
    errs
}

/// Checks a ResourceClaim: metadata (namespaced), the spec's requests (at most 32, names,
/// one of `exactly`/`firstAvailable`, class names, selectors that compile, counts),
/// constraints and config, and the status's sizes (at most 256 consumers).
pub fn validate_resource_claim(claim: &ResourceClaim) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&claim.metadata, true);
    errs.extend(validate_resource_claim_spec(&claim.spec, "spec"));
    errs.extend(validate_claim_status(&claim.status));
    ValidationErrors::check(errs)
}

/// Checks a ResourceClaimTemplate: metadata (namespaced), the labels and annotations of its
/// claims' metadata, and their spec.
pub fn validate_resource_claim_template(
    template: &ResourceClaimTemplate,
) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&template.metadata, true);
    errs.extend(validate_labels(
        &template.spec.metadata.labels,
        "spec.metadata.labels",
    ));
    errs.extend(validate_annotations(
        &template.spec.metadata.annotations,
        "spec.metadata.annotations",
    ));
    errs.extend(validate_resource_claim_spec(
        &template.spec.spec,
        "spec.spec",
    ));
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------ ResourceSlice

fn validate_pool_name(errs: &mut Vec<FieldError>, path: &str, name: &str) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    if name.len() > POOL_NAME_MAX_LENGTH {
        errs.push(FieldError::too_long(path, POOL_NAME_MAX_LENGTH));
    }
    for part in name.split('/') {
        for m in validate_dns1123_subdomain(part).err().unwrap_or_default() {
            errs.push(FieldError::invalid(path, name, &m));
        }
    }
}

/// The one-of node selection of a slice (or a device): which of the fields are set.
fn node_selection_fields(
    node_name: Option<&String>,
    node_selector: Option<&NodeSelector>,
    all_nodes: Option<bool>,
    per_device: Option<bool>,
) -> Vec<&'static str> {
    let mut set = Vec::new();
    if node_name.is_some_and(|n| !n.is_empty()) {
        set.push("`nodeName`");
    }
    if node_selector.is_some() {
        set.push("`nodeSelector`");
    }
    if all_nodes == Some(true) {
        set.push("`allNodes`");
    }
    if per_device == Some(true) {
        set.push("`perDeviceNodeSelection`");
    }
    set
}

fn validate_one_term_selector(errs: &mut Vec<FieldError>, selector: &NodeSelector, path: &str) {
    errs.extend(validate_node_selector(selector, path));
    if selector.node_selector_terms.len() != 1 {
        errs.push(FieldError::invalid(
            child(path, "nodeSelectorTerms"),
            selector.node_selector_terms.len(),
            "must have exactly one node selector term",
        ));
    }
}

fn validate_attribute(errs: &mut Vec<FieldError>, attr: &DeviceAttribute, path: &str) {
    match attr.fields_set() {
        1 => {}
        0 => errs.push(FieldError::required(
            path,
            "exactly one value must be specified",
        )),
        _ => errs.push(FieldError::invalid(
            path,
            attr.to_string(),
            "exactly one value must be specified",
        )),
    }
    if let Some(s) = &attr.string {
        if s.len() > DEVICE_ATTRIBUTE_STRING_VALUE_MAX_LENGTH {
            errs.push(FieldError::too_long(
                child(path, "string"),
                DEVICE_ATTRIBUTE_STRING_VALUE_MAX_LENGTH,
            ));
        }
    }
    if let Some(v) = &attr.version {
        let p = child(path, "version");
        if v.len() > DEVICE_ATTRIBUTE_VERSION_VALUE_MAX_LENGTH {
            errs.push(FieldError::too_long(
                &p,
                DEVICE_ATTRIBUTE_VERSION_VALUE_MAX_LENGTH,
            ));
        }
        if semver::Version::parse(v).is_err() {
            errs.push(FieldError::invalid(
                &p,
                v,
                "must be a string compatible with semver.org spec 2.0.0",
            ));
        }
    }
}

fn validate_request_policy(errs: &mut Vec<FieldError>, cap: &DeviceCapacity, path: &str) {
    let Some(policy) = &cap.request_policy else {
        return;
    };
    let p = child(path, "requestPolicy");
    if !policy.valid_values.is_empty() && policy.valid_range.is_some() {
        errs.push(FieldError::invalid(
            &p,
            "{`validValues`, `validRange`}",
            "exactly one of `validValues` or `validRange` may be set, but multiple fields are \
             set",
        ));
    }
    let vp = child(&p, "validValues");
    for (i, v) in policy.valid_values.iter().enumerate() {
        errs.extend(validate_quantity_non_negative(v, &index(&vp, i)));
        if *v > cap.value {
            errs.push(FieldError::invalid(
                index(&vp, i),
                v.to_string(),
                "option is larger than capacity value",
            ));
        }
        if i > 0 && policy.valid_values[i - 1] >= *v {
            errs.push(FieldError::invalid(
                index(&vp, i),
                v.to_string(),
                "values must be sorted in ascending order and unique",
            ));
        }
    }
    if let Some(range) = &policy.valid_range {
        let rp = child(&p, "validRange");
        match range.min {
            None => errs.push(FieldError::required(child(&rp, "min"), "")),
            Some(min) if min > cap.value => errs.push(FieldError::invalid(
                child(&rp, "min"),
                min.to_string(),
                "min is larger than capacity value",
            )),
            Some(_) => {}
        }
        if let (Some(min), Some(max)) = (range.min, range.max) {
            if max < min {
                errs.push(FieldError::invalid(
                    child(&rp, "max"),
                    max.to_string(),
                    "max must be greater than or equal to min",
                ));
            }
        }
        if let Some(step) = range.step {
            if step.millis() <= 0 {
                errs.push(FieldError::invalid(
                    child(&rp, "step"),
                    step.to_string(),
                    "step must be greater than zero",
                ));
            }
        }
    }
    if let Some(default) = policy.default {
        if default > cap.value {
            errs.push(FieldError::invalid(
                child(&p, "default"),
                default.to_string(),
                "default is larger than capacity value",
            ));
        }
        if !policy.valid_values.is_empty() && !policy.valid_values.contains(&default) {
            errs.push(FieldError::invalid(
                child(&p, "default"),
                default.to_string(),
                "default value is not valid according to the requestPolicy",
            ));
        }
    }
}

fn validate_counters(
    errs: &mut Vec<FieldError>,
    counters: &std::collections::BTreeMap<String, Counter>,
    path: &str,
) {
    check_max(
        errs,
        path,
        counters.len(),
        RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
    );
    for (name, counter) in counters {
        let kp = key(path, name);
        errs.extend(invalid_each(&kp, name, validate_dns1123_label(name)));
        errs.extend(validate_quantity_non_negative(
            &counter.value,
            &child(&kp, "value"),
        ));
    }
}

fn validate_device(
    errs: &mut Vec<FieldError>,
    device: &Device,
    per_device: bool,
    counter_sets: &BTreeSet<&str>,
    path: &str,
) {
    required_label(errs, &child(path, "name"), &device.name);
    let combined = device.attributes.len() + device.capacity.len();
    if combined > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE {
        errs.push(FieldError::new(
            path,
            format!(
                "Too many: {combined}: must have at most \
                 {RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE} attributes and \
                 capacities combined"
            ),
        ));
    }
    let attrs = child(path, "attributes");
    for (name, attr) in &device.attributes {
        let kp = key(&attrs, name);
        errs.extend(validate_device_qualified_name(name, &kp));
        validate_attribute(errs, attr, &kp);
    }
    let caps = child(path, "capacity");
    for (name, cap) in &device.capacity {
        let kp = key(&caps, name);
        errs.extend(validate_device_qualified_name(name, &kp));
        errs.extend(validate_quantity_non_negative(
            &cap.value,
            &child(&kp, "value"),
        ));
        validate_request_policy(errs, cap, &kp);
    }
    let selection = node_selection_fields(
        device.node_name.as_ref(),
        device.node_selector.as_ref(),
        device.all_nodes,
        None,
    );
    if per_device {
        match selection.len() {
            0 => errs.push(FieldError::required(
                path,
                "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when \
                 `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )),
            1 => {}
            _ => errs.push(FieldError::invalid(
                path,
                format!("{{{}}}", selection.join(", ")),
                "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required, but \
                 multiple fields are set",
            )),
        }
    } else if !selection.is_empty() {
        errs.push(FieldError::invalid(
            path,
            format!("{{{}}}", selection.join(", ")),
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if \
             `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ));
    }
    if let Some(n) = device.node_name.as_deref().filter(|n| !n.is_empty()) {
        errs.extend(invalid_each(
            &child(path, "nodeName"),
            n,
            validate_dns1123_subdomain(n),
        ));
    }
    if let Some(selector) = &device.node_selector {
        validate_one_term_selector(errs, selector, &child(path, "nodeSelector"));
    }
    let taints = child(path, "taints");
    check_max(errs, &taints, device.taints.len(), DEVICE_TAINTS_MAX_LENGTH);
    for (i, t) in device.taints.iter().enumerate() {
        let kp = child(&index(&taints, i), "key");
        errs.extend(invalid_each(&kp, &t.key, super::validate_label_key(&t.key)));
    }
    let consumes = child(path, "consumesCounters");
    check_max(
        errs,
        &consumes,
        device.consumes_counters.len(),
        RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
    );
    let mut seen = BTreeSet::new();
    for (i, c) in device.consumes_counters.iter().enumerate() {
        let cp = index(&consumes, i);
        let sp = child(&cp, "counterSet");
        required_label(errs, &sp, &c.counter_set);
        if !seen.insert(c.counter_set.as_str()) {
            errs.push(FieldError::duplicate(&sp, &c.counter_set));
        } else if !c.counter_set.is_empty()
            && !counter_sets.is_empty()
            && !counter_sets.contains(c.counter_set.as_str())
        {
            errs.push(FieldError::invalid(
                &sp,
                &c.counter_set,
                "must reference a counter set defined in the ResourceSlice sharedCounters",
            ));
        }
        validate_counters(errs, &c.counters, &child(&cp, "counters"));
    }
}

/// Checks a ResourceSlice: metadata (cluster-scoped); driver (a DNS subdomain of at most
/// 63 characters); pool (name, generation ≥ 0, resourceSliceCount > 0); exactly one of
/// nodeName, nodeSelector, allNodes and perDeviceNodeSelection; at most 128 devices (64 when
/// one has taints or consumes counters) with unique DNS-label names, each with at most 32
/// attributes and capacities combined, typed attributes and consistent request policies;
/// and at most 8 shared counter sets.
pub fn validate_resource_slice(slice: &ResourceSlice) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&slice.metadata, false);
    let spec = &slice.spec;
    validate_driver_name(&mut errs, "spec.driver", &spec.driver);
    validate_pool_name(&mut errs, "spec.pool.name", &spec.pool.name);
    if spec.pool.generation < 0 {
        errs.push(FieldError::at_least(
            "spec.pool.generation",
            0,
            spec.pool.generation,
        ));
    }
    if spec.pool.resource_slice_count <= 0 {
        errs.push(FieldError::invalid(
            "spec.pool.resourceSliceCount",
            spec.pool.resource_slice_count,
            "must be greater than zero",
        ));
    }
    let selection = node_selection_fields(
        spec.node_name.as_ref(),
        spec.node_selector.as_ref(),
        spec.all_nodes,
        spec.per_device_node_selection,
    );
    match selection.len() {
        0 => errs.push(FieldError::required(
            "spec",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is \
             required",
        )),
        1 => {}
        _ => errs.push(FieldError::invalid(
            "spec",
            format!("{{{}}}", selection.join(", ")),
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is \
             required, but multiple fields are set",
        )),
    }
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        errs.extend(invalid_each(
            "spec.nodeName",
            n,
            validate_dns1123_subdomain(n),
        ));
    }
    if let Some(selector) = &spec.node_selector {
        validate_one_term_selector(&mut errs, selector, "spec.nodeSelector");
    }
    if !spec.devices.is_empty() && !spec.shared_counters.is_empty() {
        errs.push(FieldError::invalid(
            "spec",
            "{`devices`, `sharedCounters`}",
            "only one of `devices` or `sharedCounters` may be set, but multiple fields are set",
        ));
    }
    let counters = "spec.sharedCounters";
    check_max(
        &mut errs,
        counters,
        spec.shared_counters.len(),
        RESOURCE_SLICE_MAX_COUNTER_SETS,
    );
    let mut counter_sets = BTreeSet::new();
    for (i, set) in spec.shared_counters.iter().enumerate() {
        let p = index(counters, i);
        let np = child(&p, "name");
        required_label(&mut errs, &np, &set.name);
        if !counter_sets.insert(set.name.as_str()) {
            errs.push(FieldError::duplicate(&np, &set.name));
        }
        if set.counters.is_empty() {
            errs.push(FieldError::required(child(&p, "counters"), ""));
        }
        validate_counters(&mut errs, &set.counters, &child(&p, "counters"));
    }
    let restricted = spec
        .devices
        .iter()
        .any(|d| !d.taints.is_empty() || !d.consumes_counters.is_empty());
    let max = if restricted {
        RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_CONSUMES_COUNTERS
    } else {
        RESOURCE_SLICE_MAX_DEVICES
    };
    check_max(&mut errs, "spec.devices", spec.devices.len(), max);
    let per_device = spec.per_device_node_selection == Some(true);
    let mut names = BTreeSet::new();
    for (i, device) in spec.devices.iter().enumerate() {
        let p = index("spec.devices", i);
        if !device.name.is_empty() && !names.insert(device.name.as_str()) {
            errs.push(FieldError::duplicate(child(&p, "name"), &device.name));
        }
        validate_device(&mut errs, device, per_device, &counter_sets, &p);
    }
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------ pods

/// Checks a pod spec's DRA fields at `path`: `resourceClaims` (unique DNS-label names, each
/// with exactly one of `resourceClaimName` and `resourceClaimTemplateName`) and every
/// container's `resources.claims` (naming one of those entries, no entry twice).
pub fn validate_pod_resource_claims(spec: &PodSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let claims_path = child(path, "resourceClaims");
    let mut names = BTreeSet::new();
    for (i, claim) in spec.resource_claims.iter().enumerate() {
        let p = index(&claims_path, i);
        let np = child(&p, "name");
        required_label(&mut errs, &np, &claim.name);
        if !claim.name.is_empty() && !names.insert(claim.name.as_str()) {
            errs.push(FieldError::duplicate(&np, &claim.name));
        }
        match (
            &claim.resource_claim_name,
            &claim.resource_claim_template_name,
        ) {
            (None, None) => errs.push(FieldError::invalid(
                &p,
                "",
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                &p,
                "",
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be \
                 specified",
            )),
            (Some(n), None) => required_subdomain(&mut errs, &child(&p, "resourceClaimName"), n),
            (None, Some(n)) => {
                required_subdomain(&mut errs, &child(&p, "resourceClaimTemplateName"), n)
            }
        }
    }
    let defined: Vec<&str> = spec
        .resource_claims
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    for (list, field) in [
        (&spec.containers, "containers"),
        (&spec.init_containers, "initContainers"),
    ] {
        for (ci, container) in list.iter().enumerate() {
            let p = child(
                &child(&index(&child(path, field), ci), "resources"),
                "claims",
            );
            let mut seen = BTreeSet::new();
            for (i, claim) in container.resources.claims.iter().enumerate() {
                let cp = index(&p, i);
                if claim.name.is_empty() {
                    errs.push(FieldError::required(child(&cp, "name"), ""));
                } else if !defined.contains(&claim.name.as_str()) {
                    let detail = if defined.is_empty() {
                        "no claims defined in pod.spec.resourceClaims".to_string()
                    } else {
                        format!(
                            "must be one of the claims defined in pod.spec.resourceClaims: {}",
                            defined.join(", ")
                        )
                    };
                    errs.push(FieldError::new(
                        &cp,
                        format!("Not found: {:?}: {detail}", claim.name),
                    ));
                } else if !seen.insert((claim.name.as_str(), claim.request.as_str())) {
                    errs.push(FieldError::duplicate(&cp, &claim.name));
                }
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests;
