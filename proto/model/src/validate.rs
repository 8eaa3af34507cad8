//! Validation rules of the API, shared by the CLI (before sending) and the server
//! (admission): names, labels, quantities, selectors, scheduling fields.
//!
//! The rules follow Kubernetes' own (apimachinery's name and label rules, and the core API's
//! pod, node and priority class validation), and every wrong field is reported at once.
//! Paths are written as in YAML (`spec.containers[0].resources.requests.cpu`,
//! `metadata.labels["app/x"]`), messages in Kubernetes' style (`Required value`,
//! `Invalid value: "Foo_": ...`).
//!
//! Validation takes objects as they are after defaulting: an empty namespace is accepted
//! (the server defaults it), and a cluster-scoped object's namespace is not checked (the
//! server clears it, as Kubernetes does).

use std::collections::BTreeSet;
use std::fmt::Debug;

use crate::model::{
    Affinity, Container, ContainerPort, DaemonSet, Deployment, DeploymentStrategy,
    DeploymentStrategyType, Event, IntOrString, LabelSelector, LabelSelectorOperator, Namespace,
    Node, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Object,
    ObjectMeta, Pod, PodAffinity, PodAffinityTerm, PodDisruptionBudget, PodSpec, PodTemplateSpec,
    PriorityClass, ReplicaSet, ResourceList, ResourceQuota, ResourceQuotaScope,
    ResourceRequirements, RestartPolicy, RuntimeClass, ScopeSelectorOperator, StringMap, Taint,
    TaintEffect, Toleration, TolerationOperator, TopologySpreadConstraint,
    UnsatisfiableConstraintAction, HIGHEST_USER_DEFINABLE_PRIORITY,
};
use crate::quantity::Quantity;

mod job;
pub use job::{validate_job, MAX_INDEXED_COMPLETIONS};
mod resource;
pub use resource::*;

/// Longest object name (a DNS subdomain), in characters.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest DNS label (namespace and container names), in characters.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest label value, and longest name part of a label key, in characters.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Largest total size of an object's annotations (keys plus values), in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// Prefix of the reserved names of the built-in priority classes.
pub const SYSTEM_PRIORITY_CLASS_PREFIX: &str = "system-";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

// ------------------------------------------------------------------------- errors

/// One invalid field: where it is and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FieldError {
    /// The field, as written in YAML: `spec.containers[0].name`, `metadata.labels["app/x"]`.
    pub path: String,
    /// What is wrong, in Kubernetes' words: `Required value`,
    /// `Invalid value: "Foo_": a lowercase RFC 1123 subdomain must consist of ...`.
    pub message: String,
}

impl FieldError {
    /// An error with a free-form message.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// A missing value (`Required value`, or `Required value: detail`).
    pub fn required(path: impl Into<String>, detail: &str) -> Self {
        FieldError::new(path, with_detail("Required value".to_string(), detail))
    }

    /// A value that breaks a rule (`Invalid value: "Foo_": detail`). The value is shown with
    /// `Debug`, so strings are quoted and numbers are not.
    pub fn invalid(path: impl Into<String>, value: impl Debug, detail: &str) -> Self {
        FieldError::new(
            path,
            with_detail(format!("Invalid value: {value:?}"), detail),
        )
    }

    /// A field that may not be set here (`Forbidden: detail`).
    pub fn forbidden(path: impl Into<String>, detail: &str) -> Self {
        FieldError::new(path, with_detail("Forbidden".to_string(), detail))
    }

    /// A value that repeats one that must be unique (`Duplicate value: "app"`).
    pub fn duplicate(path: impl Into<String>, value: impl Debug) -> Self {
        FieldError::new(path, format!("Duplicate value: {value:?}"))
    }

    /// A value outside a fixed set
    /// (`Unsupported value: "Sometimes": supported values: "Always"`).
    pub fn not_supported(path: impl Into<String>, value: impl Debug, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError::new(
            path,
            format!(
                "Unsupported value: {value:?}: supported values: {}",
                list.join(", ")
            ),
        )
    }

    /// A value too large (`Too long: may not be more than 262144 bytes`).
    pub fn too_long(path: impl Into<String>, max_bytes: usize) -> Self {
        FieldError::new(
            path,
            format!("Too long: may not be more than {max_bytes} bytes"),
        )
    }

    /// A number below its minimum (`must be greater than or equal to 1, got 0`).
    pub fn at_least(path: impl Into<String>, min: i64, got: i64) -> Self {
        FieldError::new(
            path,
            format!("must be greater than or equal to {min}, got {got}"),
        )
    }
}

fn with_detail(mut head: String, detail: &str) -> String {
    if !detail.is_empty() {
        head.push_str(": ");
        head.push_str(detail);
    }
    head
}

/// Every invalid field of an object, in the order the fields were checked. Never empty when
/// returned as an error. Displays as `path: message; path: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join_errors(.0))]
pub struct ValidationErrors(pub Vec<FieldError>);

fn join_errors(errors: &[FieldError]) -> String {
    let parts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    parts.join("; ")
}

impl ValidationErrors {
    /// `Ok` when there are no errors, else all of them.
    pub fn check(errors: Vec<FieldError>) -> Result<(), ValidationErrors> {
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors(errors))
        }
    }

    /// The errors.
    pub fn errors(&self) -> &[FieldError] {
        &self.0
    }
}

// ------------------------------------------------------------------------- paths

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn key(path: &str, k: &str) -> String {
    map_key_path(path, k)
}

/// Turns a string validator's messages into `Invalid value` errors at `path`.
fn invalid_each(path: &str, value: &str, check: Result<(), Vec<String>>) -> Vec<FieldError> {
    match check {
        Ok(()) => Vec::new(),
        Err(messages) => messages
            .iter()
            .map(|m| FieldError::invalid(path, value, m))
            .collect(),
    }
}

fn messages(list: Vec<String>) -> Result<(), Vec<String>> {
    if list.is_empty() {
        Ok(())
    } else {
        Err(list)
    }
}

// ------------------------------------------------------------------------- names and labels

fn is_dns_label_chars(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_qualified_name_chars(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// Checks an object name (pods, nodes, priority classes, events): a lowercase RFC 1123
/// subdomain of at most 253 characters: dot-separated labels of lowercase letters, digits
/// and `-`, each starting and ending with a letter or digit. Returns every problem found.
pub fn validate_dns1123_subdomain(name: &str) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if name.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        problems.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        ));
    }
    if !name.split('.').all(is_dns_label_chars) {
        problems.push(format!(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*')"
        ));
    }
    messages(problems)
}

/// Checks a DNS label (namespaces, container names): lowercase letters, digits and `-`,
/// starting and ending with a letter or digit, at most 63 characters, no dots.
pub fn validate_dns1123_label(name: &str) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if name.len() > DNS1123_LABEL_MAX_LENGTH {
        problems.push(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    if !is_dns_label_chars(name) {
        problems.push(format!(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name', or \
             '123-abc', regex used for validation is '{DNS1123_LABEL_FMT}')"
        ));
    }
    messages(problems)
}

/// Checks a label key (also annotation keys, taint keys, topology keys, resource names):
/// Kubernetes' "qualified name", an optional DNS-subdomain prefix and `/`, then a name part
/// of at most 63 characters: letters, digits, `-`, `_` and `.`, starting and ending with a
/// letter or digit.
pub fn validate_label_key(key: &str) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let name = match key.split('/').collect::<Vec<_>>().as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else if let Err(prefix_problems) = validate_dns1123_subdomain(prefix) {
                problems.extend(
                    prefix_problems
                        .into_iter()
                        .map(|p| format!("prefix part {p}")),
                );
            }
            *name
        }
        _ => {
            return Err(vec![format!(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', \
                 and must start and end with an alphanumeric character (e.g. 'MyName', or \
                 'my.name', or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}') \
                 with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]);
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else {
        if name.len() > LABEL_VALUE_MAX_LENGTH {
            problems.push(format!(
                "name part must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
            ));
        }
        if !is_qualified_name_chars(name) {
            problems.push(format!(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
                 start and end with an alphanumeric character (e.g. 'MyName', or 'my.name', or \
                 '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}')"
            ));
        }
    }
    messages(problems)
}

/// Checks a label value: empty, or at most 63 letters, digits, `-`, `_` and `.`, starting
/// and ending with a letter or digit.
pub fn validate_label_value(value: &str) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        problems.push(format!(
            "must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
        ));
    }
    if !value.is_empty() && !is_qualified_name_chars(value) {
        problems.push(format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue', \
             or 'my_value', or '12345', regex used for validation is '({QUALIFIED_NAME_FMT})?')"
        ));
    }
    messages(problems)
}

/// Checks a map of labels (or a nodeSelector): every key a valid label key, every value a
/// valid label value. Errors are at `path["key"]`.
pub fn validate_labels(labels: &StringMap, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        let p = key(path, k);
        errs.extend(invalid_each(&p, k, validate_label_key(k)));
        errs.extend(invalid_each(&p, v, validate_label_value(v)));
    }
    errs
}

/// Checks annotations: keys are label keys (compared lowercased, as Kubernetes does), and
/// keys plus values total at most 256 KiB.
pub fn validate_annotations(annotations: &StringMap, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        total += k.len() + v.len();
        errs.extend(invalid_each(
            &key(path, k),
            k,
            validate_label_key(&k.to_ascii_lowercase()),
        ));
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// Checks `metadata`: a name (or a generateName) that is a DNS subdomain, a namespace that
/// is a DNS label (namespaced kinds only; empty is accepted and defaulted), labels and
/// annotations.
pub fn validate_object_meta(meta: &ObjectMeta, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if meta.name.is_empty() {
        if meta.generate_name.is_empty() {
            errs.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        errs.extend(invalid_each(
            "metadata.name",
            &meta.name,
            validate_dns1123_subdomain(&meta.name),
        ));
    }
    if !meta.generate_name.is_empty() {
        // A prefix may end with '-': check it as if a generated suffix followed.
        let masked = match meta.generate_name.strip_suffix('-') {
            Some(head) if !head.is_empty() => format!("{head}a"),
            _ => meta.generate_name.clone(),
        };
        errs.extend(invalid_each(
            "metadata.generateName",
            &meta.generate_name,
            validate_dns1123_subdomain(&masked),
        ));
    }
    if namespaced && !meta.namespace.is_empty() {
        errs.extend(invalid_each(
            "metadata.namespace",
            &meta.namespace,
            validate_dns1123_label(&meta.namespace),
        ));
    }
    errs.extend(validate_labels(&meta.labels, "metadata.labels"));
    errs.extend(validate_annotations(
        &meta.annotations,
        "metadata.annotations",
    ));
    errs
}

// ------------------------------------------------------------------------- quantities

/// Checks that a quantity is not negative (`must be greater than or equal to 0`).
pub fn validate_quantity_non_negative(quantity: &Quantity, path: &str) -> Vec<FieldError> {
    if quantity.is_negative() {
        vec![FieldError::invalid(
            path,
            quantity.to_string(),
            "must be greater than or equal to 0",
        )]
    } else {
        Vec::new()
    }
}

/// Whether a resource is one of Kubernetes' own (no domain prefix, or a `kubernetes.io/`
/// one), as opposed to an extended resource such as `example.com/gpu`.
pub fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Whether a resource is a huge page size (`hugepages-2Mi`).
pub fn is_hugepages_resource(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// Whether a resource is an extended resource (`example.com/gpu`): not native, and a valid
/// qualified name. Extended resources are counted in whole units and cannot be
/// overcommitted.
pub fn is_extended_resource(name: &str) -> bool {
    !is_native_resource(name) && !name.starts_with("requests.") && validate_label_key(name).is_ok()
}

/// Whether requests of this resource may be below its limit: native resources except huge
/// pages. Others need a limit, and a request equal to it.
pub fn is_overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !is_hugepages_resource(name)
}

fn validate_container_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = invalid_each(path, name, validate_label_key(name));
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('/') {
        let standard =
            matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_hugepages_resource(name);
        if !standard {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && !is_extended_resource(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

fn validate_resource_quantity(name: &str, q: &Quantity, path: &str) -> Vec<FieldError> {
    let mut errs = validate_quantity_non_negative(q, path);
    if is_extended_resource(name) && !q.is_integer() {
        errs.push(FieldError::invalid(
            path,
            q.to_string(),
            "must be an integer",
        ));
    }
    errs
}

/// Checks a container's requests and limits: resource names (standard or extended),
/// quantities non-negative, extended resources whole numbers, each request at most its
/// limit, and for resources that cannot be overcommitted (extended resources, huge pages)
/// a limit equal to the request.
pub fn validate_resource_requirements(r: &ResourceRequirements, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let limits_path = child(path, "limits");
    let requests_path = child(path, "requests");
    for (name, q) in &r.limits {
        let p = key(&limits_path, name);
        errs.extend(validate_container_resource_name(name, &p));
        errs.extend(validate_resource_quantity(name, q, &p));
    }
    for (name, q) in &r.requests {
        let p = key(&requests_path, name);
        errs.extend(validate_container_resource_name(name, &p));
        errs.extend(validate_resource_quantity(name, q, &p));
        errs.extend(request_within_limit(
            name,
            q,
            r.limits.get(name),
            &p,
            &limits_path,
        ));
    }
    errs
}

fn request_within_limit(
    name: &str,
    request: &Quantity,
    limit: Option<&Quantity>,
    request_path: &str,
    limits_path: &str,
) -> Option<FieldError> {
    let overcommit = is_overcommit_allowed(name);
    match limit {
        Some(limit) if !overcommit && request != limit => Some(FieldError::invalid(
            request_path,
            request.to_string(),
            &format!("must be equal to {name} limit of {limit}"),
        )),
        Some(limit) if request > limit => Some(FieldError::invalid(
            request_path,
            request.to_string(),
            &format!("must be less than or equal to {name} limit of {limit}"),
        )),
        Some(_) => None,
        None if !overcommit => Some(FieldError::required(
            key(limits_path, name),
            "Limit must be set for non overcommitable resources",
        )),
        None => None,
    }
}

/// Checks pod-level resources (`spec.resources`): only cpu, memory and huge pages, quantities
/// non-negative, each request at most its limit.
fn validate_pod_resources(r: &ResourceRequirements, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let limits_path = child(path, "limits");
    let requests_path = child(path, "requests");
    let lists = [(&r.limits, &limits_path), (&r.requests, &requests_path)];
    for (list, list_path) in lists {
        for (name, q) in list {
            let p = key(list_path, name);
            if !matches!(name.as_str(), "cpu" | "memory") && !is_hugepages_resource(name) {
                errs.push(FieldError::not_supported(
                    &p,
                    name,
                    &["cpu", "memory", "hugepages-<size>"],
                ));
            }
            errs.extend(validate_quantity_non_negative(q, &p));
        }
    }
    for (name, q) in &r.requests {
        if let Some(limit) = r.limits.get(name) {
            if q > limit {
                errs.push(FieldError::invalid(
                    key(&requests_path, name),
                    q.to_string(),
                    &format!("must be less than or equal to {name} limit of {limit}"),
                ));
            }
        }
    }
    errs
}

/// Checks a resource list such as a node's capacity or a pod's overhead: names are
/// qualified names, quantities non-negative.
fn validate_resource_list(list: &ResourceList, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (name, q) in list {
        let p = key(path, name);
        errs.extend(invalid_each(&p, name, validate_label_key(name)));
        errs.extend(validate_quantity_non_negative(q, &p));
    }
    errs
}

// ------------------------------------------------------------------------- selectors

/// Checks a label selector: matchLabels as labels; each matchExpressions key a label key,
/// In and NotIn with at least one value (each a label value), Exists and DoesNotExist with
/// none.
pub fn validate_label_selector(selector: &LabelSelector, path: &str) -> Vec<FieldError> {
    let mut errs = validate_labels(&selector.match_labels, &child(path, "matchLabels"));
    let exprs_path = child(path, "matchExpressions");
    for (i, req) in selector.match_expressions.iter().enumerate() {
        let p = index(&exprs_path, i);
        let values_path = child(&p, "values");
        let needs_values = match req.operator {
            LabelSelectorOperator::In | LabelSelectorOperator::NotIn => true,
            LabelSelectorOperator::Exists | LabelSelectorOperator::DoesNotExist => false,
        };
        errs.extend(set_operator_values(needs_values, &req.values, &values_path));
        errs.extend(invalid_each(
            &child(&p, "key"),
            &req.key,
            validate_label_key(&req.key),
        ));
        for (j, v) in req.values.iter().enumerate() {
            errs.extend(invalid_each(
                &index(&values_path, j),
                v,
                validate_label_value(v),
            ));
        }
    }
    errs
}

/// The values rule that label and node selector requirements share: In and NotIn
/// (`needs_values`) take at least one value, Exists and DoesNotExist none.
fn set_operator_values(
    needs_values: bool,
    values: &[String],
    values_path: &str,
) -> Option<FieldError> {
    if needs_values && values.is_empty() {
        Some(FieldError::required(
            values_path,
            "must be specified when `operator` is 'In' or 'NotIn'",
        ))
    } else if !needs_values && !values.is_empty() {
        Some(FieldError::forbidden(
            values_path,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ))
    } else {
        None
    }
}

/// Checks a node selector requirement on labels (`matchExpressions`): the key a label key;
/// In and NotIn with at least one value; Exists and DoesNotExist with none; Gt and Lt with
/// exactly one value.
pub fn validate_node_selector_requirement(
    req: &NodeSelectorRequirement,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values_path = child(path, "values");
    match req.operator {
        NodeSelectorOperator::In | NodeSelectorOperator::NotIn => {
            errs.extend(set_operator_values(true, &req.values, &values_path));
        }
        NodeSelectorOperator::Exists | NodeSelectorOperator::DoesNotExist => {
            errs.extend(set_operator_values(false, &req.values, &values_path));
        }
        // As in Kubernetes, the single value is not checked to be an integer: one that is
        // not never matches, and the pod stays unschedulable.
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => match req.values.as_slice() {
            [_] => {}
            _ => errs.push(FieldError::required(
                &values_path,
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
        },
    }
    errs.extend(invalid_each(
        &child(path, "key"),
        &req.key,
        validate_label_key(&req.key),
    ));
    errs
}

/// Checks a node selector requirement on fields (`matchFields`): only `metadata.name`, with
/// In or NotIn and exactly one value, a valid node name.
fn validate_node_field_selector_requirement(
    req: &NodeSelectorRequirement,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if req.key != "metadata.name" {
        errs.push(FieldError::not_supported(
            child(path, "key"),
            &req.key,
            &["metadata.name"],
        ));
    }
    let values_path = child(path, "values");
    match req.operator {
        NodeSelectorOperator::In | NodeSelectorOperator::NotIn => match req.values.as_slice() {
            [v] => errs.extend(invalid_each(
                &index(&values_path, 0),
                v,
                validate_dns1123_subdomain(v),
            )),
            _ => errs.push(FieldError::required(
                &values_path,
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )),
        },
        other => errs.push(FieldError::invalid(
            child(path, "operator"),
            format!("{other:?}"),
            "not a valid selector operator",
        )),
    }
    errs
}

fn validate_node_selector_term(term: &NodeSelectorTerm, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let exprs_path = child(path, "matchExpressions");
    for (i, req) in term.match_expressions.iter().enumerate() {
        errs.extend(validate_node_selector_requirement(
            req,
            &index(&exprs_path, i),
        ));
    }
    let fields_path = child(path, "matchFields");
    for (i, req) in term.match_fields.iter().enumerate() {
        errs.extend(validate_node_field_selector_requirement(
            req,
            &index(&fields_path, i),
        ));
    }
    errs
}

fn validate_node_selector(selector: &NodeSelector, path: &str) -> Vec<FieldError> {
    let terms_path = child(path, "nodeSelectorTerms");
    if selector.node_selector_terms.is_empty() {
        return vec![FieldError::required(
            terms_path,
            "must have at least one node selector term",
        )];
    }
    let mut errs = Vec::new();
    for (i, term) in selector.node_selector_terms.iter().enumerate() {
        errs.extend(validate_node_selector_term(term, &index(&terms_path, i)));
    }
    errs
}

// ------------------------------------------------------------------------- affinity

fn validate_weight(weight: i32, path: &str) -> Option<FieldError> {
    (!(1..=100).contains(&weight))
        .then(|| FieldError::new(path, format!("must be in 1..=100, got {weight}")))
}

fn validate_label_keys(keys: &[String], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        errs.extend(invalid_each(&index(path, i), k, validate_label_key(k)));
    }
    errs
}

fn validate_pod_affinity_term(term: &PodAffinityTerm, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(sel) = &term.label_selector {
        errs.extend(validate_label_selector(sel, &child(path, "labelSelector")));
    }
    if let Some(sel) = &term.namespace_selector {
        errs.extend(validate_label_selector(
            sel,
            &child(path, "namespaceSelector"),
        ));
    }
    let ns_path = child(path, "namespaces");
    for (i, ns) in term.namespaces.iter().enumerate() {
        errs.extend(invalid_each(
            &index(&ns_path, i),
            ns,
            validate_dns1123_label(ns),
        ));
    }
    let key_path = child(path, "topologyKey");
    if term.topology_key.is_empty() {
        errs.push(FieldError::required(key_path, "can not be empty"));
    } else {
        errs.extend(invalid_each(
            &key_path,
            &term.topology_key,
            validate_label_key(&term.topology_key),
        ));
    }
    errs.extend(validate_label_keys(
        &term.match_label_keys,
        &child(path, "matchLabelKeys"),
    ));
    errs.extend(validate_label_keys(
        &term.mismatch_label_keys,
        &child(path, "mismatchLabelKeys"),
    ));
    errs
}

fn validate_pod_affinity(affinity: &PodAffinity, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let required_path = child(path, "requiredDuringSchedulingIgnoredDuringExecution");
    for (i, term) in affinity
        .required_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        errs.extend(validate_pod_affinity_term(term, &index(&required_path, i)));
    }
    let preferred_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution");
    for (i, term) in affinity
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        let p = index(&preferred_path, i);
        errs.extend(validate_weight(term.weight, &child(&p, "weight")));
        errs.extend(validate_pod_affinity_term(
            &term.pod_affinity_term,
            &child(&p, "podAffinityTerm"),
        ));
    }
    errs
}

/// Checks `spec.affinity`: node selector terms (at least one when required), preference
/// and pod affinity weights in 1..=100, pod affinity terms with a topologyKey and valid
/// selectors.
pub fn validate_affinity(affinity: &Affinity, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(node) = &affinity.node_affinity {
        let na_path = child(path, "nodeAffinity");
        if let Some(required) = &node.required_during_scheduling_ignored_during_execution {
            errs.extend(validate_node_selector(
                required,
                &child(&na_path, "requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        let preferred_path = child(&na_path, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in node
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .enumerate()
        {
            let p = index(&preferred_path, i);
            errs.extend(validate_weight(term.weight, &child(&p, "weight")));
            errs.extend(validate_node_selector_term(
                &term.preference,
                &child(&p, "preference"),
            ));
        }
    }
    if let Some(pa) = &affinity.pod_affinity {
        errs.extend(validate_pod_affinity(pa, &child(path, "podAffinity")));
    }
    if let Some(paa) = &affinity.pod_anti_affinity {
        errs.extend(validate_pod_affinity(paa, &child(path, "podAntiAffinity")));
    }
    errs
}

// ------------------------------------------------------------------------- taints

/// Checks one taint: the key a label key (required), the value a label value. (The effect
/// is required by the model's type itself.)
pub fn validate_taint(taint: &Taint, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let key_path = child(path, "key");
    if taint.key.is_empty() {
        errs.push(FieldError::required(key_path, ""));
    } else {
        errs.extend(invalid_each(
            &key_path,
            &taint.key,
            validate_label_key(&taint.key),
        ));
    }
    errs.extend(invalid_each(
        &child(path, "value"),
        &taint.value,
        validate_label_value(&taint.value),
    ));
    errs
}

/// Checks a node's taints: each one, and no two with the same key and effect.
pub fn validate_taints(taints: &[Taint], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: BTreeSet<(&str, TaintEffect)> = BTreeSet::new();
    for (i, taint) in taints.iter().enumerate() {
        let p = index(path, i);
        errs.extend(validate_taint(taint, &p));
        if !seen.insert((taint.key.as_str(), taint.effect)) {
            errs.push(FieldError::new(
                child(&p, "effect"),
                format!(
                    "Duplicate value: {:?}: taints must be unique by key and effect pair",
                    taint.effect.as_str()
                ),
            ));
        }
    }
    errs
}

/// Checks one toleration: the key (if any) a label key; an empty key only with operator
/// Exists; with Exists no value, with Equal a label value; tolerationSeconds only with
/// effect NoExecute.
pub fn validate_toleration(t: &Toleration, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let operator = t.operator.unwrap_or_default();
    let operator_str = match t.operator {
        None => "",
        Some(TolerationOperator::Equal) => "Equal",
        Some(TolerationOperator::Exists) => "Exists",
    };
    if t.key.is_empty() {
        if operator != TolerationOperator::Exists {
            errs.push(FieldError::invalid(
                child(path, "operator"),
                operator_str,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
    } else {
        errs.extend(invalid_each(
            &child(path, "key"),
            &t.key,
            validate_label_key(&t.key),
        ));
    }
    if t.toleration_seconds.is_some() && t.effect != Some(TaintEffect::NoExecute) {
        errs.push(FieldError::invalid(
            child(path, "effect"),
            t.effect.map(|e| e.as_str()).unwrap_or(""),
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    let value_path = child(path, "value");
    match operator {
        TolerationOperator::Exists => {
            if !t.value.is_empty() {
                errs.push(FieldError::invalid(
                    value_path,
                    &t.value,
                    "value must be empty when `operator` is 'Exists'",
                ));
            }
        }
        TolerationOperator::Equal => {
            errs.extend(invalid_each(
                &value_path,
                &t.value,
                validate_label_value(&t.value),
            ));
        }
    }
    errs
}

// ------------------------------------------------------------------------- topology spread

/// Checks topology spread constraints: maxSkew at least 1; a topologyKey that is a label
/// key; minDomains at least 1 and only with DoNotSchedule; a valid labelSelector and
/// matchLabelKeys; no two constraints with the same topologyKey and whenUnsatisfiable
/// (the later one is reported).
pub fn validate_topology_spread_constraints(
    constraints: &[TopologySpreadConstraint],
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let p = index(path, i);
        if c.max_skew < 1 {
            errs.push(FieldError::at_least(
                child(&p, "maxSkew"),
                1,
                c.max_skew.into(),
            ));
        }
        let key_path = child(&p, "topologyKey");
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(key_path, "can not be empty"));
        } else {
            errs.extend(invalid_each(
                &key_path,
                &c.topology_key,
                validate_label_key(&c.topology_key),
            ));
        }
        if let Some(min) = c.min_domains {
            let min_path = child(&p, "minDomains");
            if min < 1 {
                errs.push(FieldError::at_least(&min_path, 1, min.into()));
            }
            if c.when_unsatisfiable != UnsatisfiableConstraintAction::DoNotSchedule {
                errs.push(FieldError::invalid(
                    min_path,
                    min,
                    "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
                ));
            }
        }
        let repeats = constraints[..i].iter().any(|e| {
            e.topology_key == c.topology_key && e.when_unsatisfiable == c.when_unsatisfiable
        });
        if repeats {
            let when = match c.when_unsatisfiable {
                UnsatisfiableConstraintAction::DoNotSchedule => "DoNotSchedule",
                UnsatisfiableConstraintAction::ScheduleAnyway => "ScheduleAnyway",
            };
            errs.push(FieldError::duplicate(
                child(&p, "{topologyKey, whenUnsatisfiable}"),
                format!("{}, {when}", c.topology_key),
            ));
        }
        if let Some(sel) = &c.label_selector {
            errs.extend(validate_label_selector(sel, &child(&p, "labelSelector")));
        }
        errs.extend(validate_label_keys(
            &c.match_label_keys,
            &child(&p, "matchLabelKeys"),
        ));
    }
    errs
}

// ------------------------------------------------------------------------- pods

fn validate_containers(
    containers: &[Container],
    path: &str,
    init: bool,
    names: &mut BTreeSet<String>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in containers.iter().enumerate() {
        let p = index(path, i);
        let name_path = child(&p, "name");
        if c.name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            let invalid = invalid_each(&name_path, &c.name, validate_dns1123_label(&c.name));
            if invalid.is_empty() && !names.insert(c.name.clone()) {
                errs.push(FieldError::duplicate(&name_path, &c.name));
            }
            errs.extend(invalid);
        }
        errs.extend(validate_resource_requirements(
            &c.resources,
            &child(&p, "resources"),
        ));
        let restart_path = child(&p, "restartPolicy");
        match (init, c.restart_policy) {
            (_, None) | (true, Some(RestartPolicy::Always)) => {}
            (true, Some(other)) => errs.push(FieldError::not_supported(
                restart_path,
                restart_policy_str(other),
                &["Always"],
            )),
            (false, Some(_)) => errs.push(FieldError::forbidden(
                restart_path,
                "may not be set for non-init containers",
            )),
        }
        errs.extend(validate_container_ports(&c.ports, &child(&p, "ports")));
        let env_path = child(&p, "env");
        for (j, env) in c.env.iter().enumerate() {
            let env_name_path = child(&index(&env_path, j), "name");
            if env.name.is_empty() {
                errs.push(FieldError::required(env_name_path, ""));
            } else if env.name.contains('=') {
                errs.push(FieldError::invalid(
                    env_name_path,
                    &env.name,
                    "may not contain '='",
                ));
            }
        }
    }
    errs
}

/// kube's `IsValidPortNum`: 1..=65535.
fn validate_port_number(port: i32, path: &str) -> Option<FieldError> {
    (!(1..=65535).contains(&port))
        .then(|| FieldError::invalid(path, port, "must be between 1 and 65535, inclusive"))
}

/// kube's `IsValidPortName` (an IANA_SVC_NAME): the problems of a port name, if any.
pub fn validate_port_name(name: &str) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if name.len() > 15 {
        problems.push("must be no more than 15 characters".to_string());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        problems.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        problems.push("must contain at least one letter (a-z)".to_string());
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens".to_string());
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("must not begin or end with a hyphen".to_string());
    }
    messages(problems)
}

/// kube's `validateContainerPorts`: names unique within the container, a container port,
/// an optional host port, both valid port numbers (the protocol is checked when decoded).
fn validate_container_ports(ports: &[ContainerPort], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = index(path, i);
        if !port.name.is_empty() {
            let name_path = child(&p, "name");
            let invalid = invalid_each(&name_path, &port.name, validate_port_name(&port.name));
            if invalid.is_empty() && !names.insert(port.name.as_str()) {
                errs.push(FieldError::duplicate(&name_path, &port.name));
            }
            errs.extend(invalid);
        }
        let container_port = child(&p, "containerPort");
        if port.container_port == 0 {
            errs.push(FieldError::required(container_port, ""));
        } else {
            errs.extend(validate_port_number(port.container_port, &container_port));
        }
        if port.host_port != 0 {
            errs.extend(validate_port_number(port.host_port, &child(&p, "hostPort")));
        }
    }
    errs
}

/// kube's `checkHostPortConflicts`: no two ports of the app containers take the same
/// (hostIP, protocol, hostPort), compared as written.
fn validate_unique_host_ports(containers: &[Container], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let ports_path = child(&index(path, i), "ports");
        for (j, port) in c.ports.iter().enumerate() {
            if port.host_port == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{}",
                port.host_ip,
                port.protocol.as_str(),
                port.host_port
            );
            if !seen.insert(key.clone()) {
                errs.push(FieldError::duplicate(
                    child(&index(&ports_path, j), "hostPort"),
                    key,
                ));
            }
        }
    }
    errs
}

fn restart_policy_str(p: RestartPolicy) -> &'static str {
    match p {
        RestartPolicy::Always => "Always",
        RestartPolicy::OnFailure => "OnFailure",
        RestartPolicy::Never => "Never",
    }
}

/// Checks an optional name field that must be a DNS subdomain when set.
fn validate_optional_subdomain(value: &str, path: &str) -> Vec<FieldError> {
    if value.is_empty() {
        Vec::new()
    } else {
        invalid_each(path, value, validate_dns1123_subdomain(value))
    }
}

/// Checks a pod spec at `path` (normally `spec`).
pub fn validate_pod_spec(spec: &PodSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let containers_path = child(path, "containers");
    if spec.containers.is_empty() {
        errs.push(FieldError::required(&containers_path, ""));
    }
    let mut names = BTreeSet::new();
    errs.extend(validate_containers(
        &spec.containers,
        &containers_path,
        false,
        &mut names,
    ));
    errs.extend(validate_containers(
        &spec.init_containers,
        &child(path, "initContainers"),
        true,
        &mut names,
    ));
    errs.extend(validate_unique_host_ports(
        &spec.containers,
        &containers_path,
    ));
    errs.extend(validate_optional_subdomain(
        &spec.node_name,
        &child(path, "nodeName"),
    ));
    errs.extend(validate_labels(
        &spec.node_selector,
        &child(path, "nodeSelector"),
    ));
    if let Some(affinity) = &spec.affinity {
        errs.extend(validate_affinity(affinity, &child(path, "affinity")));
    }
    let tolerations_path = child(path, "tolerations");
    for (i, t) in spec.tolerations.iter().enumerate() {
        errs.extend(validate_toleration(t, &index(&tolerations_path, i)));
    }
    errs.extend(validate_optional_subdomain(
        &spec.scheduler_name,
        &child(path, "schedulerName"),
    ));
    errs.extend(validate_optional_subdomain(
        &spec.priority_class_name,
        &child(path, "priorityClassName"),
    ));
    errs.extend(validate_resource_list(
        &spec.overhead,
        &child(path, "overhead"),
    ));
    errs.extend(validate_topology_spread_constraints(
        &spec.topology_spread_constraints,
        &child(path, "topologySpreadConstraints"),
    ));
    let gates_path = child(path, "schedulingGates");
    let mut gates = BTreeSet::new();
    for (i, gate) in spec.scheduling_gates.iter().enumerate() {
        let p = child(&index(&gates_path, i), "name");
        errs.extend(invalid_each(&p, &gate.name, validate_label_key(&gate.name)));
        if !gates.insert(gate.name.as_str()) {
            errs.push(FieldError::duplicate(&p, &gate.name));
        }
    }
    if let Some(grace) = spec.termination_grace_period_seconds {
        if grace < 0 {
            errs.push(FieldError::at_least(
                child(path, "terminationGracePeriodSeconds"),
                0,
                grace,
            ));
        }
    }
    if let Some(resources) = &spec.resources {
        errs.extend(validate_pod_resources(resources, &child(path, "resources")));
    }
    errs.extend(validate_optional_subdomain(
        &spec.runtime_class_name,
        &child(path, "runtimeClassName"),
    ));
    errs.extend(validate_pod_resource_claims(spec, path));
    errs
}

/// Checks a pod: metadata (namespaced) and spec. The status is not checked: it is written
/// by the system, not the user.
pub fn validate_pod(pod: &Pod) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&pod.metadata, true);
    errs.extend(validate_pod_spec(&pod.spec, "spec"));
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------------- other kinds

/// Checks a node: metadata (cluster-scoped), taints, and capacity and allocatable (valid
/// resource names, non-negative quantities).
pub fn validate_node(node: &Node) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&node.metadata, false);
    errs.extend(validate_taints(&node.spec.taints, "spec.taints"));
    errs.extend(validate_resource_list(
        &node.status.capacity,
        "status.capacity",
    ));
    errs.extend(validate_resource_list(
        &node.status.allocatable,
        "status.allocatable",
    ));
    ValidationErrors::check(errs)
}

/// Checks a priority class: metadata (cluster-scoped); a value of at most 1,000,000,000
/// for user classes; names starting with `system-` only for the built-in classes, with
/// their value and without globalDefault.
pub fn validate_priority_class(pc: &PriorityClass) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&pc.metadata, false);
    let name = &pc.metadata.name;
    if name.starts_with(SYSTEM_PRIORITY_CLASS_PREFIX) {
        let reserved = |why: String| {
            FieldError::forbidden(
                "metadata.name",
                &format!(
                    "priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are \
                     reserved for system use only: {why}"
                ),
            )
        };
        match PriorityClass::system_classes()
            .into_iter()
            .find(|c| &c.metadata.name == name)
        {
            None => errs.push(reserved(format!(
                "{name} is not a known system priority class"
            ))),
            Some(system) => {
                if pc.value != system.value {
                    errs.push(reserved(format!(
                        "value of {name} PriorityClass must be {}",
                        system.value
                    )));
                }
                if pc.global_default != system.global_default {
                    errs.push(reserved(format!(
                        "globalDefault of {name} PriorityClass must be {}",
                        system.global_default
                    )));
                }
            }
        }
    } else if pc.value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(FieldError::forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is \
                 {HIGHEST_USER_DEFINABLE_PRIORITY}, got {}",
                pc.value
            ),
        ));
    }
    ValidationErrors::check(errs)
}

/// Checks an event: metadata (namespaced), a namespace that matches its involved object's,
/// a type of `Normal` or `Warning` (or empty), a non-negative count.
pub fn validate_event(event: &Event) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&event.metadata, true);
    let involved_ns = &event.involved_object.namespace;
    if !involved_ns.is_empty()
        && !event.metadata.namespace.is_empty()
        && *involved_ns != event.metadata.namespace
    {
        errs.push(FieldError::invalid(
            "involvedObject.namespace",
            involved_ns,
            "does not match event.namespace",
        ));
    }
    if !event.type_.is_empty() && !matches!(event.type_.as_str(), "Normal" | "Warning") {
        errs.push(FieldError::not_supported(
            "type",
            &event.type_,
            &["Normal", "Warning"],
        ));
    }
    if event.count < 0 {
        errs.push(FieldError::at_least("count", 0, event.count.into()));
    }
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------------- int or percent

const PERCENT_FMT: &str = "[0-9]+%";

/// Checks a percentage string as Kubernetes' `IsValidPercent`: digits followed by `%`.
pub fn validate_percent(s: &str) -> Result<(), Vec<String>> {
    let valid = s
        .strip_suffix('%')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        Ok(())
    } else {
        Err(vec![format!(
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. \
             '1%',  or '93%', regex used for validation is '{PERCENT_FMT}')"
        )])
    }
}

/// An `Invalid value` error that shows an [`IntOrString`] as written (`5`, `"5%"`).
fn invalid_int_or_string(path: &str, value: &IntOrString, detail: &str) -> FieldError {
    match value {
        IntOrString::Int(i) => FieldError::invalid(path, i, detail),
        IntOrString::String(s) => FieldError::invalid(path, s, detail),
    }
}

/// Checks a count or percentage of pods (apps' `ValidatePositiveIntOrPercent`): an integer
/// of at least 0, or a string of the form `<digits>%`.
pub fn validate_non_negative_int_or_percent(value: &IntOrString, path: &str) -> Vec<FieldError> {
    match value {
        IntOrString::Int(i) if *i < 0 => vec![invalid_int_or_string(
            path,
            value,
            "must be greater than or equal to 0",
        )],
        IntOrString::Int(_) => Vec::new(),
        IntOrString::String(s) => match validate_percent(s) {
            Ok(()) => Vec::new(),
            Err(problems) => problems
                .iter()
                .map(|p| invalid_int_or_string(path, value, p))
                .collect(),
        },
    }
}

/// The percentage of a valid percent string, or `None` (an integer, or an invalid string).
fn valid_percent(value: &IntOrString) -> Option<i64> {
    match value {
        IntOrString::String(s) if validate_percent(s).is_ok() => {
            // Digits only, but possibly more than an i64 holds: saturate, it is only compared.
            Some(s[..s.len() - 1].parse::<i64>().unwrap_or(i64::MAX))
        }
        _ => None,
    }
}

/// Checks that a percentage is at most 100% (integers are not limited).
pub fn validate_not_more_than_100_percent(value: &IntOrString, path: &str) -> Vec<FieldError> {
    match valid_percent(value) {
        Some(p) if p > 100 => vec![invalid_int_or_string(
            path,
            value,
            "must not be greater than 100%",
        )],
        _ => Vec::new(),
    }
}

/// The number an [`IntOrString`] states without a total, as apps validation reads it to
/// compare with zero: a valid percentage's number, an integer, or a numeric string's value.
fn int_or_percent_number(value: &IntOrString) -> i64 {
    match value {
        IntOrString::Int(i) => i64::from(*i),
        IntOrString::String(s) => valid_percent(value).unwrap_or_else(|| s.parse().unwrap_or(0)),
    }
}

fn validate_non_negative(value: i64, path: &str) -> Vec<FieldError> {
    if value < 0 {
        vec![FieldError::invalid(
            path,
            value,
            "must be greater than or equal to 0",
        )]
    } else {
        Vec::new()
    }
}

// ------------------------------------------------------------------------- namespaces, runtime classes

/// Checks a namespace: metadata (cluster-scoped), and a name that is a DNS label (at most 63
/// characters, no dots), as Kubernetes requires of namespace names.
pub fn validate_namespace(ns: &Namespace) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&ns.metadata, false);
    let name = &ns.metadata.name;
    // A name that is not even a subdomain was reported above; only add what a label adds.
    if !name.is_empty() && validate_dns1123_subdomain(name).is_ok() {
        errs.extend(invalid_each(
            "metadata.name",
            name,
            validate_dns1123_label(name),
        ));
    }
    ValidationErrors::check(errs)
}

/// Checks a runtime class: metadata (cluster-scoped); a handler that is a DNS label;
/// overhead quantities as container limits (standard or extended resource names,
/// non-negative, extended resources whole); a scheduling nodeSelector of valid labels and
/// valid tolerations.
pub fn validate_runtime_class(rc: &RuntimeClass) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&rc.metadata, false);
    errs.extend(invalid_each(
        "handler",
        &rc.handler,
        validate_dns1123_label(&rc.handler),
    ));
    if let Some(overhead) = &rc.overhead {
        for (name, q) in &overhead.pod_fixed {
            let p = key("overhead.podFixed", name);
            errs.extend(validate_container_resource_name(name, &p));
            errs.extend(validate_resource_quantity(name, q, &p));
        }
    }
    if let Some(scheduling) = &rc.scheduling {
        errs.extend(validate_labels(
            &scheduling.node_selector,
            "scheduling.nodeSelector",
        ));
        for (i, t) in scheduling.tolerations.iter().enumerate() {
            errs.extend(validate_toleration(t, &index("scheduling.tolerations", i)));
        }
    }
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------------- disruption budgets

/// Checks a pod disruption budget: metadata (namespaced); minAvailable and maxUnavailable
/// not both set, each a non-negative integer or a percentage of at most 100%; a valid
/// selector. Setting neither is accepted, as in `policy/v1`.
pub fn validate_pod_disruption_budget(pdb: &PodDisruptionBudget) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&pdb.metadata, true);
    let spec = &pdb.spec;
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        errs.push(FieldError::new(
            "spec",
            "Invalid value: minAvailable and maxUnavailable cannot be both set",
        ));
    }
    let bounds = [
        (&spec.min_available, "spec.minAvailable"),
        (&spec.max_unavailable, "spec.maxUnavailable"),
    ];
    for (value, path) in bounds {
        if let Some(value) = value {
            errs.extend(validate_non_negative_int_or_percent(value, path));
            errs.extend(validate_not_more_than_100_percent(value, path));
        }
    }
    if let Some(selector) = &spec.selector {
        errs.extend(validate_label_selector(selector, "spec.selector"));
    }
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------------- workloads

/// Checks a controller's pod template at `spec.template`: its labels, annotations and pod
/// spec.
fn validate_pod_template(template: &PodTemplateSpec) -> Vec<FieldError> {
    let mut errs = validate_labels(&template.metadata.labels, "spec.template.metadata.labels");
    errs.extend(validate_annotations(
        &template.metadata.annotations,
        "spec.template.metadata.annotations",
    ));
    errs.extend(validate_pod_spec(&template.spec, "spec.template.spec"));
    errs
}

/// Checks what Deployments, ReplicaSets and DaemonSets share: a selector that is present,
/// valid and not empty; template labels that the selector matches; a valid template
/// (labels, annotations, pod spec at `spec.template.spec`) whose restartPolicy is Always
/// (or left out, which defaults to Always) and which sets no activeDeadlineSeconds.
/// `kind` names the controller in messages (`deployment`).
fn validate_workload(
    selector: Option<&LabelSelector>,
    template: &PodTemplateSpec,
    kind: &str,
    kind_title: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match selector {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => {
            let selector_errs = validate_label_selector(sel, "spec.selector");
            let selector_valid = selector_errs.is_empty();
            errs.extend(selector_errs);
            if sel.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.selector",
                    "{}",
                    &format!("empty selector is invalid for {kind}"),
                ));
            } else if selector_valid && !sel.matches(&template.metadata.labels) {
                errs.push(FieldError::invalid(
                    "spec.template.metadata.labels",
                    &template.metadata.labels,
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    errs.extend(validate_pod_template(template));
    if let Some(policy) = template.spec.restart_policy {
        if policy != RestartPolicy::Always {
            errs.push(FieldError::not_supported(
                "spec.template.spec.restartPolicy",
                restart_policy_str(policy),
                &["Always"],
            ));
        }
    }
    if template.spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            &format!("activeDeadlineSeconds in {kind_title} is not Supported"),
        ));
    }
    errs
}

/// Checks a deployment's strategy: Recreate without rollingUpdate; RollingUpdate (the
/// default) with maxUnavailable and maxSurge non-negative integers or percentages, not both
/// 0 (each defaults to 25%), and maxUnavailable at most 100%.
fn validate_deployment_strategy(strategy: &DeploymentStrategy) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match (strategy.type_.unwrap_or_default(), &strategy.rolling_update) {
        (DeploymentStrategyType::Recreate, Some(_)) => errs.push(FieldError::forbidden(
            "spec.strategy.rollingUpdate",
            "may not be specified when strategy `type` is 'Recreate'",
        )),
        (DeploymentStrategyType::Recreate, None)
        | (DeploymentStrategyType::RollingUpdate, None) => {}
        (DeploymentStrategyType::RollingUpdate, Some(ru)) => {
            let default = IntOrString::String("25%".to_string());
            let max_unavailable = ru.max_unavailable.as_ref().unwrap_or(&default);
            let max_surge = ru.max_surge.as_ref().unwrap_or(&default);
            let unavailable_path = "spec.strategy.rollingUpdate.maxUnavailable";
            errs.extend(validate_non_negative_int_or_percent(
                max_unavailable,
                unavailable_path,
            ));
            errs.extend(validate_non_negative_int_or_percent(
                max_surge,
                "spec.strategy.rollingUpdate.maxSurge",
            ));
            if int_or_percent_number(max_unavailable) == 0 && int_or_percent_number(max_surge) == 0
            {
                errs.push(invalid_int_or_string(
                    unavailable_path,
                    max_unavailable,
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            errs.extend(validate_not_more_than_100_percent(
                max_unavailable,
                unavailable_path,
            ));
        }
    }
    errs
}

/// Checks a deployment: metadata (namespaced); replicas at least 0; a selector that is
/// present, valid, not empty and matches the template's labels; a valid template
/// (`spec.template.spec` checked as a pod spec) with restartPolicy Always and no
/// activeDeadlineSeconds; and the strategy.
pub fn validate_deployment(d: &Deployment) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&d.metadata, true);
    errs.extend(validate_non_negative(
        d.spec.replicas.into(),
        "spec.replicas",
    ));
    errs.extend(validate_workload(
        d.spec.selector.as_ref(),
        &d.spec.template,
        "deployment",
        "Deployment",
    ));
    if let Some(strategy) = &d.spec.strategy {
        errs.extend(validate_deployment_strategy(strategy));
    }
    ValidationErrors::check(errs)
}

/// Checks a replica set: metadata (namespaced), replicas at least 0, and the selector and
/// template as for a deployment.
pub fn validate_replica_set(rs: &ReplicaSet) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&rs.metadata, true);
    errs.extend(validate_non_negative(
        rs.spec.replicas.into(),
        "spec.replicas",
    ));
    errs.extend(validate_workload(
        rs.spec.selector.as_ref(),
        &rs.spec.template,
        "replicaset",
        "ReplicaSet",
    ));
    ValidationErrors::check(errs)
}

/// Checks a daemon set: metadata (namespaced), and the selector and template as for a
/// deployment.
pub fn validate_daemon_set(ds: &DaemonSet) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&ds.metadata, true);
    errs.extend(validate_workload(
        ds.spec.selector.as_ref(),
        &ds.spec.template,
        "daemonset",
        "DaemonSet",
    ));
    ValidationErrors::check(errs)
}

// ------------------------------------------------------------------------- quotas

/// Unprefixed resource names Kubernetes knows (`validateResourceName`).
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// Unprefixed resource names a quota can track.
const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// Object counts a quota tracks in whole units.
const INTEGER_QUOTA_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// Pod compute resources, which pod scopes apply to.
const POD_COMPUTE_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

fn is_quota_hugepages_resource(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// Whether a quota can track this resource name (unprefixed names only).
pub fn is_standard_quota_resource(name: &str) -> bool {
    STANDARD_QUOTA_RESOURCES.contains(&name) || is_quota_hugepages_resource(name)
}

/// Whether a quota scope may limit this (standard quota) resource: pod scopes limit the
/// pod count and pod compute resources, BestEffort only the pod count.
fn is_scope_valid_for_resource(scope: ResourceQuotaScope, resource: &str) -> bool {
    let pod_count = resource == "pods";
    let compute = POD_COMPUTE_QUOTA_RESOURCES.contains(&resource);
    match scope {
        ResourceQuotaScope::Terminating
        | ResourceQuotaScope::NotTerminating
        | ResourceQuotaScope::NotBestEffort
        | ResourceQuotaScope::PriorityClass
        | ResourceQuotaScope::CrossNamespacePodAffinity => pod_count || compute,
        ResourceQuotaScope::BestEffort => pod_count,
        ResourceQuotaScope::VolumeAttributesClass => {
            matches!(resource, "persistentvolumeclaims" | "requests.storage")
        }
    }
}

fn validate_quota_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = invalid_each(path, name, validate_label_key(name));
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('/') {
        if !STANDARD_RESOURCES.contains(&name) && !is_quota_hugepages_resource(name) {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource type or fully qualified",
            ));
        }
        if !is_standard_quota_resource(name) {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for quota",
            ));
        }
    }
    errs
}

/// Reports conflicting scope pairs (BestEffort with NotBestEffort, Terminating with
/// NotTerminating) among `scopes`, at `path`.
fn conflicting_scopes(scopes: &BTreeSet<ResourceQuotaScope>, path: &str) -> Vec<FieldError> {
    use ResourceQuotaScope::{BestEffort, NotBestEffort, NotTerminating, Terminating};
    [(BestEffort, NotBestEffort), (Terminating, NotTerminating)]
        .into_iter()
        .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
        .map(|(a, b)| {
            FieldError::invalid(
                path,
                format!("{}, {}", a.as_str(), b.as_str()),
                "conflicting scopes",
            )
        })
        .collect()
}

/// Checks a resource quota: metadata (namespaced); each hard limit a quota resource name
/// (qualified; unprefixed ones standard), a non-negative quantity, whole for object counts
/// and extended resources; scopes that apply to every standard resource limited and do not
/// conflict; scope selector requirements whose operator fits the scope (Exists only for
/// Terminating, NotTerminating, BestEffort, NotBestEffort and CrossNamespacePodAffinity)
/// and has values exactly for In and NotIn.
pub fn validate_resource_quota(quota: &ResourceQuota) -> Result<(), ValidationErrors> {
    let mut errs = validate_object_meta(&quota.metadata, true);
    let spec = &quota.spec;
    for (name, q) in &spec.hard {
        let p = key("spec.hard", name);
        errs.extend(validate_quota_resource_name(name, &p));
        errs.extend(validate_quantity_non_negative(q, &p));
        let integer =
            INTEGER_QUOTA_RESOURCES.contains(&name.as_str()) || is_extended_resource(name);
        if integer && !q.is_integer() {
            errs.push(FieldError::invalid(&p, q.to_string(), "must be an integer"));
        }
    }
    let unsupported_for = |scope: ResourceQuotaScope| {
        spec.hard
            .keys()
            .any(|k| is_standard_quota_resource(k) && !is_scope_valid_for_resource(scope, k))
    };
    if !spec.scopes.is_empty() {
        for scope in &spec.scopes {
            if unsupported_for(*scope) {
                errs.push(FieldError::invalid(
                    "spec.scopes",
                    scope.as_str(),
                    "unsupported scope applied to resource",
                ));
            }
        }
        let set: BTreeSet<ResourceQuotaScope> = spec.scopes.iter().copied().collect();
        errs.extend(conflicting_scopes(&set, "spec.scopes"));
    }
    if let Some(selector) = &spec.scope_selector {
        let exprs_path = "spec.scopeSelector.matchExpressions";
        let mut set = BTreeSet::new();
        for (i, req) in selector.match_expressions.iter().enumerate() {
            let p = index(exprs_path, i);
            if unsupported_for(req.scope_name) {
                errs.push(FieldError::invalid(
                    child(&p, "scopeName"),
                    req.scope_name.as_str(),
                    "unsupported scope applied to resource",
                ));
            }
            let exists_only = matches!(
                req.scope_name,
                ResourceQuotaScope::Terminating
                    | ResourceQuotaScope::NotTerminating
                    | ResourceQuotaScope::BestEffort
                    | ResourceQuotaScope::NotBestEffort
                    | ResourceQuotaScope::CrossNamespacePodAffinity
            );
            if exists_only && req.operator != ScopeSelectorOperator::Exists {
                errs.push(FieldError::invalid(
                    child(&p, "operator"),
                    req.operator.as_str(),
                    "must be 'Exist' only operator when scope is any of \
                     ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, \
                     ResourceQuotaScopeBestEffort and ResourceQuotaScopeNotBestEffort",
                ));
            }
            let values_path = child(&p, "values");
            match req.operator {
                ScopeSelectorOperator::In | ScopeSelectorOperator::NotIn => {
                    if req.values.is_empty() {
                        errs.push(FieldError::required(
                            values_path,
                            "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                        ));
                    }
                }
                ScopeSelectorOperator::Exists | ScopeSelectorOperator::DoesNotExist => {
                    if !req.values.is_empty() {
                        errs.push(FieldError::invalid(
                            values_path,
                            &req.values,
                            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                        ));
                    }
                }
            }
            set.insert(req.scope_name);
        }
        errs.extend(conflicting_scopes(&set, exprs_path));
    }
    ValidationErrors::check(errs)
}

/// Checks any object by its kind.
pub fn validate_object(obj: &Object) -> Result<(), ValidationErrors> {
    match obj {
        Object::Pod(p) => validate_pod(p),
        Object::Node(n) => validate_node(n),
        Object::PriorityClass(c) => validate_priority_class(c),
        Object::Event(e) => validate_event(e),
        Object::Namespace(n) => validate_namespace(n),
        Object::RuntimeClass(c) => validate_runtime_class(c),
        Object::PodDisruptionBudget(p) => validate_pod_disruption_budget(p),
        Object::Deployment(d) => validate_deployment(d),
        Object::ReplicaSet(r) => validate_replica_set(r),
        Object::DaemonSet(d) => validate_daemon_set(d),
        Object::ResourceQuota(q) => validate_resource_quota(q),
        Object::Job(j) => validate_job(j),
        Object::DeviceClass(c) => resource::validate_device_class(c),
        Object::ResourceClaim(c) => resource::validate_resource_claim(c),
        Object::ResourceClaimTemplate(t) => resource::validate_resource_claim_template(t),
        Object::ResourceSlice(s) => resource::validate_resource_slice(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect("test quantity parses")
    }

    fn resources(pairs: &[(&str, &str)]) -> ResourceList {
        pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
    }

    fn req(key: &str, operator: NodeSelectorOperator, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn selector_req(
        key: &str,
        operator: LabelSelectorOperator,
        values: &[&str],
    ) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn app_selector() -> LabelSelector {
        LabelSelector {
            match_labels: string_map(&[("app", "web")]),
            match_expressions: vec![selector_req("tier", LabelSelectorOperator::In, &["front"])],
        }
    }

    fn container(name: &str) -> Container {
        Container {
            name: name.into(),
            image: "busybox".into(),
            resources: ResourceRequirements {
                requests: resources(&[
                    ("cpu", "250m"),
                    ("memory", "64Mi"),
                    ("example.com/gpu", "1"),
                ]),
                limits: resources(&[("cpu", "1"), ("memory", "128Mi"), ("example.com/gpu", "1")]),
                claims: Vec::new(),
            },
            env: vec![EnvVar {
                name: "MODE".into(),
                value: "x".into(),
                value_from: None,
            }],
            ..Default::default()
        }
    }

    /// A pod that uses every checked field, validly.
    fn valid_pod() -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: "web-1".into(),
                namespace: "default".into(),
                labels: string_map(&[("app", "web"), ("example.com/tier", "front"), ("empty", "")]),
                annotations: string_map(&[("example.com/note", "anything: goes, here!")]),
                ..Default::default()
            },
            spec: PodSpec {
                containers: vec![container("app"), container("log-shipper")],
                init_containers: vec![Container {
                    name: "proxy".into(),
                    restart_policy: Some(RestartPolicy::Always),
                    ..Default::default()
                }],
                node_selector: string_map(&[("disk", "ssd")]),
                affinity: Some(Box::new(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: vec![NodeSelectorTerm {
                                match_expressions: vec![
                                    req("zone", NodeSelectorOperator::In, &["a", "b"]),
                                    req("cores", NodeSelectorOperator::Gt, &["4"]),
                                    req("legacy", NodeSelectorOperator::DoesNotExist, &[]),
                                ],
                                match_fields: vec![req(
                                    "metadata.name",
                                    NodeSelectorOperator::In,
                                    &["node-1"],
                                )],
                            }],
                        }),
                        preferred_during_scheduling_ignored_during_execution: vec![
                            PreferredSchedulingTerm {
                                weight: 50,
                                preference: NodeSelectorTerm {
                                    match_expressions: vec![req(
                                        "gpu",
                                        NodeSelectorOperator::Exists,
                                        &[],
                                    )],
                                    match_fields: vec![],
                                },
                            },
                        ],
                    }),
                    pod_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![
                            PodAffinityTerm {
                                label_selector: Some(app_selector()),
                                namespaces: vec!["default".into()],
                                topology_key: "topology.kubernetes.io/zone".into(),
                                namespace_selector: Some(LabelSelector::default()),
                                ..Default::default()
                            },
                        ],
                        preferred_during_scheduling_ignored_during_execution: vec![],
                    }),
                    pod_anti_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![],
                        preferred_during_scheduling_ignored_during_execution: vec![
                            WeightedPodAffinityTerm {
                                weight: 100,
                                pod_affinity_term: PodAffinityTerm {
                                    label_selector: Some(app_selector()),
                                    topology_key: "kubernetes.io/hostname".into(),
                                    match_label_keys: vec!["pod-template-hash".into()],
                                    ..Default::default()
                                },
                            },
                        ],
                    }),
                })),
                tolerations: vec![
                    Toleration {
                        key: "dedicated".into(),
                        operator: None,
                        value: "gpu".into(),
                        effect: Some(TaintEffect::NoSchedule),
                        toleration_seconds: None,
                    },
                    Toleration {
                        key: "node.kubernetes.io/not-ready".into(),
                        operator: Some(TolerationOperator::Exists),
                        value: String::new(),
                        effect: Some(TaintEffect::NoExecute),
                        toleration_seconds: Some(300),
                    },
                    Toleration {
                        operator: Some(TolerationOperator::Exists),
                        ..Default::default()
                    },
                ],
                scheduler_name: "default-scheduler".into(),
                priority_class_name: "high-priority".into(),
                overhead: resources(&[("cpu", "100m")]),
                topology_spread_constraints: vec![
                    TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: "zone".into(),
                        when_unsatisfiable: UnsatisfiableConstraintAction::DoNotSchedule,
                        label_selector: Some(app_selector()),
                        min_domains: Some(2),
                        node_affinity_policy: None,
                        node_taints_policy: None,
                        match_label_keys: vec!["pod-template-hash".into()],
                    },
                    TopologySpreadConstraint {
                        max_skew: 2,
                        topology_key: "zone".into(),
                        when_unsatisfiable: UnsatisfiableConstraintAction::ScheduleAnyway,
                        label_selector: None,
                        min_domains: None,
                        node_affinity_policy: None,
                        node_taints_policy: None,
                        match_label_keys: vec![],
                    },
                ],
                scheduling_gates: vec![PodSchedulingGate {
                    name: "example.com/wait".into(),
                }],
                termination_grace_period_seconds: Some(0),
                resources: Some(Box::new(ResourceRequirements {
                    requests: resources(&[("cpu", "1")]),
                    limits: resources(&[("cpu", "2"), ("memory", "1Gi")]),
                    claims: Vec::new(),
                })),
                runtime_class_name: "kata".into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Metadata with just a name and a namespace (empty: cluster-scoped).
    fn meta(name: &str, namespace: &str) -> ObjectMeta {
        ObjectMeta {
            name: name.into(),
            namespace: namespace.into(),
            ..Default::default()
        }
    }

    /// `value` after `edit`: each fixture below is a valid object that a case edits.
    fn edited<T>(mut value: T, edit: impl FnOnce(&mut T)) -> T {
        edit(&mut value);
        value
    }

    fn pod(edit: impl FnOnce(&mut Pod)) -> Object {
        Object::Pod(Box::new(edited(valid_pod(), edit)))
    }

    fn spec(edit: impl FnOnce(&mut PodSpec)) -> Object {
        pod(|p| edit(&mut p.spec))
    }

    fn node_affinity(p: &mut PodSpec) -> &mut NodeAffinity {
        p.affinity.as_mut().unwrap().node_affinity.as_mut().unwrap()
    }

    fn first_term(p: &mut PodSpec) -> &mut NodeSelectorTerm {
        &mut node_affinity(p)
            .required_during_scheduling_ignored_during_execution
            .as_mut()
            .unwrap()
            .node_selector_terms[0]
    }

    fn valid_node() -> Node {
        Node {
            metadata: ObjectMeta {
                name: "node-1".into(),
                labels: string_map(&[("kubernetes.io/hostname", "node-1"), ("zone", "a")]),
                ..Default::default()
            },
            spec: NodeSpec {
                taints: vec![
                    Taint {
                        key: "dedicated".into(),
                        value: "gpu".into(),
                        effect: TaintEffect::NoSchedule,
                        time_added: None,
                    },
                    Taint {
                        key: "dedicated".into(),
                        value: "gpu".into(),
                        effect: TaintEffect::NoExecute,
                        time_added: None,
                    },
                ],
                ..Default::default()
            },
            status: NodeStatus {
                capacity: resources(&[
                    ("cpu", "4"),
                    ("memory", "8Gi"),
                    ("pods", "110"),
                    ("example.com/gpu", "2"),
                ]),
                allocatable: resources(&[("cpu", "3500m"), ("memory", "7Gi")]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn node(edit: impl FnOnce(&mut Node)) -> Object {
        Object::Node(Box::new(edited(valid_node(), edit)))
    }

    fn priority_class(name: &str, value: i32, global_default: bool) -> Object {
        Object::PriorityClass(Box::new(PriorityClass {
            metadata: meta(name, ""),
            value,
            global_default,
            ..Default::default()
        }))
    }

    fn event(edit: impl FnOnce(&mut Event)) -> Object {
        Object::Event(Box::new(edited(
            Event {
                metadata: meta("web-1.17a3b", "default"),
                involved_object: ObjectReference {
                    kind: "Pod".into(),
                    namespace: "default".into(),
                    name: "web-1".into(),
                    ..Default::default()
                },
                reason: "Scheduled".into(),
                type_: "Normal".into(),
                count: 1,
                ..Default::default()
            },
            edit,
        )))
    }

    struct Case {
        name: &'static str,
        object: Object,
        /// Every expected error: its path and a part of its message. Empty: valid.
        want: Vec<(&'static str, &'static str)>,
    }

    fn case(name: &'static str, object: Object, want: &[(&'static str, &'static str)]) -> Case {
        Case {
            name,
            object,
            want: want.to_vec(),
        }
    }

    fn run(cases: Vec<Case>) {
        for case in cases {
            let errors = match validate_object(&case.object) {
                Ok(()) => Vec::new(),
                Err(e) => {
                    assert!(!e.0.is_empty(), "{}: empty error list", case.name);
                    e.0
                }
            };
            assert_eq!(
                errors.len(),
                case.want.len(),
                "{}: want {:?}, got {}",
                case.name,
                case.want,
                ValidationErrors(errors.clone())
            );
            for (path, gist) in &case.want {
                assert!(
                    errors
                        .iter()
                        .any(|e| e.path == *path && e.message.contains(gist)),
                    "{}: no error at {path} containing {gist:?}; got {}",
                    case.name,
                    ValidationErrors(errors.clone())
                );
            }
        }
    }

    #[test]
    fn pod_metadata_rules() {
        let long_value = "a".repeat(64);
        let long_value: &'static str = Box::leak(long_value.into_boxed_str());
        run(vec![
            case("valid pod", pod(|_| {}), &[]),
            case(
                "generateName instead of name",
                pod(|p| {
                    p.metadata.name.clear();
                    p.metadata.generate_name = "web-".into();
                }),
                &[],
            ),
            case(
                "no name",
                pod(|p| p.metadata.name.clear()),
                &[(
                    "metadata.name",
                    "Required value: name or generateName is required",
                )],
            ),
            case(
                "bad name",
                pod(|p| p.metadata.name = "Foo_".into()),
                &[(
                    "metadata.name",
                    "Invalid value: \"Foo_\": a lowercase RFC 1123 subdomain must consist of",
                )],
            ),
            case(
                "name too long",
                pod(|p| p.metadata.name = "a".repeat(254)),
                &[("metadata.name", "must be no more than 253 characters")],
            ),
            case(
                "bad generateName",
                pod(|p| {
                    p.metadata.name.clear();
                    p.metadata.generate_name = "Web-".into();
                }),
                &[("metadata.generateName", "RFC 1123 subdomain")],
            ),
            case(
                "bad namespace",
                pod(|p| p.metadata.namespace = "my.ns".into()),
                &[(
                    "metadata.namespace",
                    "a lowercase RFC 1123 label must consist of",
                )],
            ),
            case(
                "label key with two slashes",
                pod(|p| {
                    p.metadata.labels.insert("a/b/c".into(), "x".into());
                }),
                &[(
                    "metadata.labels[\"a/b/c\"]",
                    "a qualified name must consist of",
                )],
            ),
            case(
                "label key with a bad prefix",
                pod(|p| {
                    p.metadata.labels.insert("Example.com/x".into(), "x".into());
                }),
                &[(
                    "metadata.labels[\"Example.com/x\"]",
                    "prefix part a lowercase RFC 1123 subdomain",
                )],
            ),
            case(
                "label key with an empty name",
                pod(|p| {
                    p.metadata.labels.insert("example.com/".into(), "x".into());
                }),
                &[(
                    "metadata.labels[\"example.com/\"]",
                    "name part must be non-empty",
                )],
            ),
            case(
                "bad label value",
                pod(|p| {
                    p.metadata.labels.insert("app".into(), "-web".into());
                }),
                &[(
                    "metadata.labels.app",
                    "Invalid value: \"-web\": a valid label must be an empty string or consist of",
                )],
            ),
            case(
                "label value too long",
                pod(|p| {
                    p.metadata.labels.insert("app".into(), long_value.into());
                }),
                &[("metadata.labels.app", "must be no more than 63 characters")],
            ),
            case(
                "bad annotation key",
                pod(|p| {
                    p.metadata.annotations.insert("bad key".into(), "x".into());
                }),
                &[(
                    "metadata.annotations[\"bad key\"]",
                    "name part must consist of",
                )],
            ),
            case(
                "annotations too large",
                pod(|p| {
                    p.metadata
                        .annotations
                        .insert("big".into(), "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT));
                }),
                &[(
                    "metadata.annotations",
                    "Too long: may not be more than 262144 bytes",
                )],
            ),
        ]);
    }

    #[test]
    fn pod_container_rules() {
        run(vec![
            case(
                "no containers",
                spec(|s| s.containers.clear()),
                &[("spec.containers", "Required value")],
            ),
            case(
                "container without a name",
                spec(|s| s.containers[1].name.clear()),
                &[("spec.containers[1].name", "Required value")],
            ),
            case(
                "container name not a DNS label",
                spec(|s| s.containers[0].name = "App.1".into()),
                &[(
                    "spec.containers[0].name",
                    "a lowercase RFC 1123 label must consist of",
                )],
            ),
            case(
                "duplicate container names",
                spec(|s| s.containers[1].name = "app".into()),
                &[("spec.containers[1].name", "Duplicate value: \"app\"")],
            ),
            case(
                "init container named like an app container",
                spec(|s| s.init_containers[0].name = "log-shipper".into()),
                &[(
                    "spec.initContainers[0].name",
                    "Duplicate value: \"log-shipper\"",
                )],
            ),
            case(
                "request above limit",
                spec(|s| {
                    s.containers[0]
                        .resources
                        .requests
                        .insert("cpu".into(), q("2"));
                }),
                &[(
                    "spec.containers[0].resources.requests.cpu",
                    "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
                )],
            ),
            case(
                "negative quantities",
                spec(|s| {
                    s.containers[0]
                        .resources
                        .limits
                        .insert("memory".into(), q("-1Mi"));
                    s.containers[0]
                        .resources
                        .requests
                        .insert("memory".into(), q("-2Mi"));
                }),
                &[
                    (
                        "spec.containers[0].resources.limits.memory",
                        "must be greater than or equal to 0",
                    ),
                    (
                        "spec.containers[0].resources.requests.memory",
                        "must be greater than or equal to 0",
                    ),
                ],
            ),
            case(
                "fractional extended resource",
                spec(|s| {
                    s.containers[0]
                        .resources
                        .requests
                        .insert("example.com/gpu".into(), q("500m"));
                    s.containers[0]
                        .resources
                        .limits
                        .insert("example.com/gpu".into(), q("500m"));
                }),
                &[
                    (
                        "spec.containers[0].resources.requests[\"example.com/gpu\"]",
                        "must be an integer",
                    ),
                    (
                        "spec.containers[0].resources.limits[\"example.com/gpu\"]",
                        "must be an integer",
                    ),
                ],
            ),
            case(
                "extended request below its limit",
                spec(|s| {
                    s.containers[0]
                        .resources
                        .limits
                        .insert("example.com/gpu".into(), q("2"));
                }),
                &[(
                    "spec.containers[0].resources.requests[\"example.com/gpu\"]",
                    "must be equal to example.com/gpu limit of 2",
                )],
            ),
            case(
                "extended request without a limit",
                spec(|s| {
                    s.containers[0].resources.limits.remove("example.com/gpu");
                }),
                &[(
                    "spec.containers[0].resources.limits[\"example.com/gpu\"]",
                    "Limit must be set for non overcommitable resources",
                )],
            ),
            case(
                "hugepages request below its limit",
                spec(|s| {
                    s.containers[0]
                        .resources
                        .requests
                        .insert("hugepages-2Mi".into(), q("2Mi"));
                    s.containers[0]
                        .resources
                        .limits
                        .insert("hugepages-2Mi".into(), q("4Mi"));
                }),
                &[(
                    "spec.containers[0].resources.requests.hugepages-2Mi",
                    "must be equal to hugepages-2Mi limit of 4Mi",
                )],
            ),
            case(
                "unknown resource without a domain",
                spec(|s| {
                    s.containers[0]
                        .resources
                        .limits
                        .insert("gpu".into(), q("1"));
                }),
                &[(
                    "spec.containers[0].resources.limits.gpu",
                    "must be a standard resource for containers",
                )],
            ),
            case(
                "restartPolicy on an app container",
                spec(|s| s.containers[0].restart_policy = Some(RestartPolicy::Always)),
                &[(
                    "spec.containers[0].restartPolicy",
                    "Forbidden: may not be set for non-init containers",
                )],
            ),
            case(
                "init container restartPolicy other than Always",
                spec(|s| s.init_containers[0].restart_policy = Some(RestartPolicy::OnFailure)),
                &[(
                    "spec.initContainers[0].restartPolicy",
                    "Unsupported value: \"OnFailure\": supported values: \"Always\"",
                )],
            ),
            case(
                "env var without a name",
                spec(|s| s.containers[0].env[0].name.clear()),
                &[("spec.containers[0].env[0].name", "Required value")],
            ),
            case(
                "port without a container port",
                spec(|s| s.containers[0].ports = vec![port("", 0, 0, "")]),
                &[(
                    "spec.containers[0].ports[0].containerPort",
                    "Required value",
                )],
            ),
            case(
                "ports out of range",
                spec(|s| s.containers[0].ports = vec![port("", 65536, -1, "")]),
                &[
                    (
                        "spec.containers[0].ports[0].containerPort",
                        "Invalid value: 65536: must be between 1 and 65535, inclusive",
                    ),
                    (
                        "spec.containers[0].ports[0].hostPort",
                        "Invalid value: -1: must be between 1 and 65535, inclusive",
                    ),
                ],
            ),
            case(
                "port names: IANA service names, unique in the container",
                spec(|s| {
                    s.containers[0].ports = vec![
                        port("http", 80, 0, ""),
                        port("http", 81, 0, ""),
                        port("1-", 82, 0, ""),
                    ];
                }),
                &[
                    (
                        "spec.containers[0].ports[1].name",
                        "Duplicate value: \"http\"",
                    ),
                    (
                        "spec.containers[0].ports[2].name",
                        "Invalid value: \"1-\": must contain at least one letter (a-z)",
                    ),
                    (
                        "spec.containers[0].ports[2].name",
                        "must not begin or end with a hyphen",
                    ),
                ],
            ),
            case(
                "one host port taken twice by the app containers",
                spec(|s| {
                    s.containers[0].ports = vec![port("", 80, 8080, "")];
                    s.containers[1].ports =
                        vec![port("", 80, 8080, "10.0.0.1"), port("", 81, 8080, "")];
                }),
                &[(
                    "spec.containers[1].ports[1].hostPort",
                    "Duplicate value: \"/TCP/8080\"",
                )],
            ),
        ]);
    }

    fn port(name: &str, container_port: i32, host_port: i32, host_ip: &str) -> ContainerPort {
        ContainerPort {
            name: name.into(),
            container_port,
            host_port,
            host_ip: host_ip.into(),
            ..ContainerPort::default()
        }
    }

    #[test]
    fn pod_spec_field_rules() {
        run(vec![
            case(
                "bad priorityClassName",
                spec(|s| s.priority_class_name = "High".into()),
                &[("spec.priorityClassName", "Invalid value: \"High\"")],
            ),
            case(
                "bad nodeName",
                spec(|s| s.node_name = "node_1".into()),
                &[("spec.nodeName", "RFC 1123 subdomain")],
            ),
            case(
                "bad schedulerName",
                spec(|s| s.scheduler_name = "My Scheduler".into()),
                &[("spec.schedulerName", "RFC 1123 subdomain")],
            ),
            case(
                "bad runtimeClassName",
                spec(|s| s.runtime_class_name = "Kata!".into()),
                &[("spec.runtimeClassName", "RFC 1123 subdomain")],
            ),
            case(
                "negative grace period",
                spec(|s| s.termination_grace_period_seconds = Some(-1)),
                &[(
                    "spec.terminationGracePeriodSeconds",
                    "must be greater than or equal to 0, got -1",
                )],
            ),
            case(
                "bad nodeSelector",
                spec(|s| {
                    s.node_selector.insert("disk".into(), "ssd!".into());
                }),
                &[("spec.nodeSelector.disk", "a valid label must be")],
            ),
            case(
                "negative overhead",
                spec(|s| {
                    s.overhead.insert("memory".into(), q("-1"));
                }),
                &[("spec.overhead.memory", "must be greater than or equal to 0")],
            ),
            case(
                "duplicate scheduling gate",
                spec(|s| {
                    s.scheduling_gates.push(PodSchedulingGate {
                        name: "example.com/wait".into(),
                    })
                }),
                &[("spec.schedulingGates[1].name", "Duplicate value")],
            ),
            case(
                "pod-level resources",
                spec(|s| {
                    let r = s.resources.as_mut().unwrap();
                    r.requests.insert("cpu".into(), q("3"));
                    r.limits.insert("example.com/gpu".into(), q("1"));
                }),
                &[
                    (
                        "spec.resources.requests.cpu",
                        "must be less than or equal to cpu limit of 2",
                    ),
                    (
                        "spec.resources.limits[\"example.com/gpu\"]",
                        "Unsupported value",
                    ),
                ],
            ),
        ]);
    }

    #[test]
    fn affinity_rules() {
        run(vec![
            case("node affinity weight 0", spec(|s| node_affinity(s).preferred_during_scheduling_ignored_during_execution[0].weight = 0), &[(
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
                "must be in 1..=100, got 0",
            )]),
            case("anti-affinity weight 101", spec(|s| {
                s.affinity.as_mut().unwrap().pod_anti_affinity.as_mut().unwrap().preferred_during_scheduling_ignored_during_execution[0].weight = 101;
            }), &[(
                "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
                "must be in 1..=100, got 101",
            )]),
            case("pod affinity without topologyKey", spec(|s| {
                s.affinity.as_mut().unwrap().pod_affinity.as_mut().unwrap().required_during_scheduling_ignored_during_execution[0].topology_key.clear();
            }), &[(
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
                "Required value",
            )]),
            case("pod affinity with a bad namespace and selector", spec(|s| {
                let term = &mut s.affinity.as_mut().unwrap().pod_affinity.as_mut().unwrap().required_during_scheduling_ignored_during_execution[0];
                term.namespaces.push("Bad_NS".into());
                term.label_selector.as_mut().unwrap().match_expressions.push(selector_req("x", LabelSelectorOperator::NotIn, &[]));
            }), &[
                ("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[1]", "RFC 1123 label"),
                (
                    "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[1].values",
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ),
            ]),
            case("no node selector terms", spec(|s| {
                node_affinity(s).required_during_scheduling_ignored_during_execution.as_mut().unwrap().node_selector_terms.clear();
            }), &[(
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
                "Required value: must have at least one node selector term",
            )]),
            case("bad node selector requirements", spec(|s| {
                let term = first_term(s);
                term.match_expressions = vec![
                    req("zone", NodeSelectorOperator::In, &[]),
                    req("gpu", NodeSelectorOperator::Exists, &["yes"]),
                    req("cores", NodeSelectorOperator::Gt, &["four"]),
                    req("cores", NodeSelectorOperator::Lt, &["1", "2"]),
                    req("bad key!", NodeSelectorOperator::Exists, &[]),
                ];
            }), &[
                (
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ),
                (
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ),
                (
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ),
                (
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[4].key",
                    "name part must consist of",
                ),
            ]),
            case("bad matchFields", spec(|s| {
                first_term(s).match_fields = vec![
                    req("metadata.labels", NodeSelectorOperator::In, &["x"]),
                    req("metadata.name", NodeSelectorOperator::In, &["a", "b"]),
                    req("metadata.name", NodeSelectorOperator::Exists, &[]),
                ];
            }), &[
                (
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key",
                    "Unsupported value: \"metadata.labels\"",
                ),
                (
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[1].values",
                    "must be only one value",
                ),
                (
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[2].operator",
                    "Invalid value: \"Exists\": not a valid selector operator",
                ),
            ]),
            case("bad preference term", spec(|s| {
                node_affinity(s).preferred_during_scheduling_ignored_during_execution[0].preference.match_expressions[0].values.push("x".into());
            }), &[(
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values",
                "may not be specified",
            )]),
        ]);
    }

    #[test]
    fn toleration_and_spread_rules() {
        run(vec![
            case("Exists with a value", spec(|s| s.tolerations[1].value = "x".into()), &[(
                "spec.tolerations[1].value",
                "value must be empty when `operator` is 'Exists'",
            )]),
            case("empty key with Equal", spec(|s| s.tolerations[0].key.clear()), &[(
                "spec.tolerations[0].operator",
                "operator must be Exists when `key` is empty",
            )]),
            case("tolerationSeconds without NoExecute", spec(|s| s.tolerations[0].toleration_seconds = Some(60)), &[(
                "spec.tolerations[0].effect",
                "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
            )]),
            case("bad toleration key and value", spec(|s| {
                s.tolerations[0].key = "a/b/c".into();
                s.tolerations[0].value = "not valid".into();
            }), &[
                ("spec.tolerations[0].key", "a qualified name must consist of"),
                ("spec.tolerations[0].value", "a valid label must be"),
            ]),
            case("maxSkew 0", spec(|s| s.topology_spread_constraints[0].max_skew = 0), &[(
                "spec.topologySpreadConstraints[0].maxSkew",
                "must be greater than or equal to 1, got 0",
            )]),
            case("empty topologyKey", spec(|s| s.topology_spread_constraints[1].topology_key.clear()), &[(
                "spec.topologySpreadConstraints[1].topologyKey",
                "Required value",
            )]),
            case("minDomains 0", spec(|s| s.topology_spread_constraints[0].min_domains = Some(0)), &[(
                "spec.topologySpreadConstraints[0].minDomains",
                "must be greater than or equal to 1, got 0",
            )]),
            case("minDomains with ScheduleAnyway", spec(|s| s.topology_spread_constraints[1].min_domains = Some(2)), &[(
                "spec.topologySpreadConstraints[1].minDomains",
                "can only use minDomains if whenUnsatisfiable=DoNotSchedule",
            )]),
            case("same key and action twice", spec(|s| {
                s.topology_spread_constraints[1].when_unsatisfiable = UnsatisfiableConstraintAction::DoNotSchedule;
            }), &[(
                "spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}",
                "Duplicate value: \"zone, DoNotSchedule\"",
            )]),
            case("spread selector with values for Exists", spec(|s| {
                s.topology_spread_constraints[0].label_selector.as_mut().unwrap().match_expressions[0] =
                    selector_req("tier", LabelSelectorOperator::Exists, &["front"]);
            }), &[(
                "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values",
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )]),
        ]);
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let obj = pod(|p| {
            p.metadata.name = "Bad_Name".into();
            p.spec.containers.clear();
            p.spec.init_containers.clear();
            p.spec.topology_spread_constraints[0].max_skew = 0;
        });
        let err = validate_object(&obj).expect_err("invalid");
        let paths: Vec<&str> = err.0.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.name",
                "spec.containers",
                "spec.topologySpreadConstraints[0].maxSkew"
            ]
        );
        let shown = err.to_string();
        assert!(
            shown.starts_with("metadata.name: Invalid value: \"Bad_Name\": "),
            "{shown}"
        );
        assert!(shown.contains("; spec.containers: Required value; spec.topologySpreadConstraints[0].maxSkew: must be"), "{shown}");
    }

    #[test]
    fn node_rules() {
        run(vec![
            case("valid node", node(|_| {}), &[]),
            case(
                "namespace on a node is left to the server",
                node(|n| n.metadata.namespace = "Not A Label".into()),
                &[],
            ),
            case(
                "bad node name",
                node(|n| n.metadata.name = "Node 1".into()),
                &[("metadata.name", "RFC 1123 subdomain")],
            ),
            case(
                "negative capacity",
                node(|n| {
                    n.status.capacity.insert("cpu".into(), q("-1"));
                }),
                &[("status.capacity.cpu", "must be greater than or equal to 0")],
            ),
            case(
                "bad allocatable resource name",
                node(|n| {
                    n.status.allocatable.insert("a/b/c".into(), q("1"));
                }),
                &[("status.allocatable[\"a/b/c\"]", "a qualified name")],
            ),
            case(
                "duplicate taint",
                node(|n| {
                    let t = n.spec.taints[0].clone();
                    n.spec.taints.push(Taint {
                        value: "other".into(),
                        ..t
                    });
                }),
                &[(
                    "spec.taints[2].effect",
                    "Duplicate value: \"NoSchedule\": taints must be unique by key and effect pair",
                )],
            ),
            case(
                "taint without key",
                node(|n| n.spec.taints[0].key.clear()),
                &[("spec.taints[0].key", "Required value")],
            ),
            case(
                "bad taint key and value",
                node(|n| {
                    n.spec.taints[1].key = "-dedicated".into();
                    n.spec.taints[1].value = "g p u".into();
                }),
                &[
                    ("spec.taints[1].key", "name part must consist of"),
                    ("spec.taints[1].value", "a valid label must be"),
                ],
            ),
        ]);
    }

    #[test]
    fn priority_class_rules() {
        run(vec![
            case("user class", priority_class("high", 1_000_000_000, true), &[]),
            case("negative user class", priority_class("low", -10, false), &[]),
            case("user class too high", priority_class("higher", 1_000_000_001, false), &[(
                "value",
                "Forbidden: maximum allowed value of a user defined priority is 1000000000, got 1000000001",
            )]),
            case("built-in class", priority_class("system-cluster-critical", SYSTEM_CLUSTER_CRITICAL, false), &[]),
            case("built-in node class", priority_class("system-node-critical", SYSTEM_NODE_CRITICAL, false), &[]),
            case("unknown system class", priority_class("system-mine", 10, false), &[(
                "metadata.name",
                "reserved for system use only: system-mine is not a known system priority class",
            )]),
            case("built-in class with another value", priority_class("system-node-critical", 5, true), &[
                ("metadata.name", "value of system-node-critical PriorityClass must be 2000001000"),
                ("metadata.name", "globalDefault of system-node-critical PriorityClass must be false"),
            ]),
            case("bad class name", priority_class("High", 1, false), &[("metadata.name", "RFC 1123 subdomain")]),
            case("no class name", priority_class("", 1, false), &[("metadata.name", "Required value")]),
        ]);
    }

    #[test]
    fn event_rules() {
        run(vec![
            case("valid event", event(|_| {}), &[]),
            case(
                "event about a node",
                event(|e| e.involved_object.namespace.clear()),
                &[],
            ),
            case(
                "namespace mismatch",
                event(|e| e.involved_object.namespace = "other".into()),
                &[("involvedObject.namespace", "does not match event.namespace")],
            ),
            case(
                "bad type",
                event(|e| e.type_ = "Error".into()),
                &[(
                    "type",
                    "Unsupported value: \"Error\": supported values: \"Normal\", \"Warning\"",
                )],
            ),
            case(
                "negative count",
                event(|e| e.count = -1),
                &[("count", "must be greater than or equal to 0, got -1")],
            ),
            case(
                "bad labels",
                event(|e| {
                    e.metadata.labels.insert("k".into(), "v v".into());
                }),
                &[("metadata.labels.k", "a valid label must be")],
            ),
        ]);
    }

    // --------------------------------------------------------------------- newer kinds

    fn web_template() -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: ObjectMeta {
                labels: string_map(&[("app", "web"), ("tier", "front")]),
                ..Default::default()
            },
            spec: PodSpec {
                containers: vec![container("app")],
                ..Default::default()
            },
        }
    }

    fn deployment(edit: impl FnOnce(&mut Deployment)) -> Object {
        Object::Deployment(Box::new(edited(
            Deployment {
                metadata: meta("web", "default"),
                spec: DeploymentSpec {
                    replicas: 3,
                    selector: Some(app_selector()),
                    template: web_template(),
                    strategy: Some(DeploymentStrategy {
                        type_: Some(DeploymentStrategyType::RollingUpdate),
                        rolling_update: Some(RollingUpdateDeployment {
                            max_unavailable: Some(IntOrString::String("25%".into())),
                            max_surge: Some(IntOrString::Int(1)),
                        }),
                    }),
                    ..Default::default()
                },
                ..Default::default()
            },
            edit,
        )))
    }

    fn rolling(d: &mut Deployment) -> &mut RollingUpdateDeployment {
        d.spec
            .strategy
            .as_mut()
            .unwrap()
            .rolling_update
            .as_mut()
            .unwrap()
    }

    fn replica_set(edit: impl FnOnce(&mut ReplicaSet)) -> Object {
        Object::ReplicaSet(Box::new(edited(
            ReplicaSet {
                metadata: meta("web-abc", "default"),
                spec: ReplicaSetSpec {
                    replicas: 2,
                    selector: Some(app_selector()),
                    template: web_template(),
                    min_ready_seconds: None,
                },
                ..Default::default()
            },
            edit,
        )))
    }

    fn daemon_set(edit: impl FnOnce(&mut DaemonSet)) -> Object {
        Object::DaemonSet(Box::new(edited(
            DaemonSet {
                metadata: meta("agent", "kube-system"),
                spec: DaemonSetSpec {
                    selector: Some(LabelSelector {
                        match_labels: string_map(&[("app", "web")]),
                        match_expressions: vec![],
                    }),
                    template: web_template(),
                    ..Default::default()
                },
                ..Default::default()
            },
            edit,
        )))
    }

    fn pdb(edit: impl FnOnce(&mut PodDisruptionBudgetSpec)) -> Object {
        Object::PodDisruptionBudget(Box::new(PodDisruptionBudget {
            metadata: meta("web-pdb", "default"),
            spec: edited(
                PodDisruptionBudgetSpec {
                    min_available: Some(IntOrString::Int(2)),
                    selector: Some(app_selector()),
                    ..Default::default()
                },
                edit,
            ),
            ..Default::default()
        }))
    }

    fn runtime_class(edit: impl FnOnce(&mut RuntimeClass)) -> Object {
        Object::RuntimeClass(Box::new(edited(
            RuntimeClass {
                metadata: meta("kata-fc", ""),
                handler: "kata-fc".into(),
                overhead: Some(Overhead {
                    pod_fixed: resources(&[("cpu", "250m"), ("memory", "120Mi")]),
                }),
                scheduling: Some(Scheduling {
                    node_selector: string_map(&[("runtime", "kata")]),
                    tolerations: vec![Toleration {
                        key: "kata".into(),
                        operator: Some(TolerationOperator::Exists),
                        ..Default::default()
                    }],
                }),
                ..Default::default()
            },
            edit,
        )))
    }

    fn quota(edit: impl FnOnce(&mut ResourceQuotaSpec)) -> Object {
        Object::ResourceQuota(Box::new(ResourceQuota {
            metadata: meta("pods-high", "default"),
            spec: edited(
                ResourceQuotaSpec {
                    hard: resources(&[
                        ("pods", "10"),
                        ("cpu", "1000"),
                        ("requests.memory", "200Gi"),
                        ("limits.cpu", "2"),
                    ]),
                    scopes: vec![],
                    scope_selector: Some(ScopeSelector {
                        match_expressions: vec![scope_req(
                            ResourceQuotaScope::PriorityClass,
                            ScopeSelectorOperator::In,
                            &["high"],
                        )],
                    }),
                },
                edit,
            ),
            ..Default::default()
        }))
    }

    fn scope_req(
        scope_name: ResourceQuotaScope,
        operator: ScopeSelectorOperator,
        values: &[&str],
    ) -> ScopedResourceSelectorRequirement {
        ScopedResourceSelectorRequirement {
            scope_name,
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn int_or_percent_rules() {
        struct IntCase {
            name: &'static str,
            value: IntOrString,
            want_non_negative: Option<&'static str>,
            want_at_most_100: Option<&'static str>,
        }
        let cases = [
            IntCase {
                name: "zero",
                value: IntOrString::Int(0),
                want_non_negative: None,
                want_at_most_100: None,
            },
            IntCase {
                name: "large int",
                value: IntOrString::Int(500),
                want_non_negative: None,
                want_at_most_100: None,
            },
            IntCase {
                name: "negative int",
                value: IntOrString::Int(-1),
                want_non_negative: Some("Invalid value: -1: must be greater than or equal to 0"),
                want_at_most_100: None,
            },
            IntCase {
                name: "0%",
                value: IntOrString::String("0%".into()),
                want_non_negative: None,
                want_at_most_100: None,
            },
            IntCase {
                name: "100%",
                value: IntOrString::String("100%".into()),
                want_non_negative: None,
                want_at_most_100: None,
            },
            IntCase {
                name: "101%",
                value: IntOrString::String("101%".into()),
                want_non_negative: None,
                want_at_most_100: Some("Invalid value: \"101%\": must not be greater than 100%"),
            },
            IntCase {
                name: "abc%",
                value: IntOrString::String("abc%".into()),
                want_non_negative: Some("Invalid value: \"abc%\": a valid percent string must be"),
                want_at_most_100: None,
            },
            IntCase {
                name: "number as string",
                value: IntOrString::String("5".into()),
                want_non_negative: Some("a valid percent string"),
                want_at_most_100: None,
            },
            IntCase {
                name: "negative percent",
                value: IntOrString::String("-5%".into()),
                want_non_negative: Some("a valid percent string"),
                want_at_most_100: None,
            },
        ];
        // No error, or exactly one whose message holds the gist.
        let check = |name: &str, got: Vec<FieldError>, want: Option<&str>| match want {
            None => assert!(got.is_empty(), "{name}: {got:?}"),
            Some(gist) => assert!(
                got.len() == 1 && got[0].message.contains(gist),
                "{name}: {got:?}"
            ),
        };
        for case in cases {
            check(
                case.name,
                validate_non_negative_int_or_percent(&case.value, "x"),
                case.want_non_negative,
            );
            check(
                case.name,
                validate_not_more_than_100_percent(&case.value, "x"),
                case.want_at_most_100,
            );
        }
    }

    #[test]
    fn pod_disruption_budget_rules() {
        run(vec![
            case("minAvailable count", pdb(|_| {}), &[]),
            case(
                "maxUnavailable percentage",
                pdb(|s| {
                    s.min_available = None;
                    s.max_unavailable = Some(IntOrString::String("50%".into()));
                }),
                &[],
            ),
            case("neither is accepted", pdb(|s| s.min_available = None), &[]),
            case(
                "empty selector selects the namespace",
                pdb(|s| s.selector = Some(LabelSelector::default())),
                &[],
            ),
            case(
                "both set",
                pdb(|s| s.max_unavailable = Some(IntOrString::Int(1))),
                &[("spec", "minAvailable and maxUnavailable cannot be both set")],
            ),
            case(
                "above 100%",
                pdb(|s| s.min_available = Some(IntOrString::String("120%".into()))),
                &[("spec.minAvailable", "must not be greater than 100%")],
            ),
            case(
                "negative maxUnavailable",
                pdb(|s| {
                    s.min_available = None;
                    s.max_unavailable = Some(IntOrString::Int(-2));
                }),
                &[("spec.maxUnavailable", "must be greater than or equal to 0")],
            ),
            case(
                "bad percentage",
                pdb(|s| s.min_available = Some(IntOrString::String("half".into()))),
                &[(
                    "spec.minAvailable",
                    "a valid percent string must be a numeric string followed by an ending '%'",
                )],
            ),
            case(
                "bad selector",
                pdb(|s| {
                    s.selector.as_mut().unwrap().match_expressions[0]
                        .values
                        .clear();
                }),
                &[(
                    "spec.selector.matchExpressions[0].values",
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )],
            ),
        ]);
    }

    #[test]
    fn deployment_rules() {
        run(vec![
            case("valid", deployment(|_| {}), &[]),
            case("zero replicas", deployment(|d| d.spec.replicas = 0), &[]),
            case(
                "defaults for the strategy",
                deployment(|d| d.spec.strategy = None),
                &[],
            ),
            case(
                "recreate",
                deployment(|d| {
                    d.spec.strategy = Some(DeploymentStrategy {
                        type_: Some(DeploymentStrategyType::Recreate),
                        rolling_update: None,
                    });
                }),
                &[],
            ),
            case(
                "negative replicas",
                deployment(|d| d.spec.replicas = -1),
                &[(
                    "spec.replicas",
                    "Invalid value: -1: must be greater than or equal to 0",
                )],
            ),
            case(
                "no selector",
                deployment(|d| d.spec.selector = None),
                &[("spec.selector", "Required value")],
            ),
            case(
                "empty selector",
                deployment(|d| d.spec.selector = Some(LabelSelector::default())),
                &[("spec.selector", "empty selector is invalid for deployment")],
            ),
            case(
                "selector does not match the template",
                deployment(|d| {
                    d.spec
                        .template
                        .metadata
                        .labels
                        .insert("app".into(), "db".into());
                }),
                &[(
                    "spec.template.metadata.labels",
                    "`selector` does not match template `labels`",
                )],
            ),
            case(
                "invalid selector is not also matched",
                deployment(|d| {
                    d.spec
                        .selector
                        .as_mut()
                        .unwrap()
                        .match_labels
                        .insert("bad key!".into(), "x".into());
                }),
                &[(
                    "spec.selector.matchLabels[\"bad key!\"]",
                    "name part must consist of",
                )],
            ),
            case(
                "bad template label",
                deployment(|d| {
                    d.spec
                        .template
                        .metadata
                        .labels
                        .insert("tier".into(), "front end".into());
                    d.spec.selector.as_mut().unwrap().match_expressions.clear();
                }),
                &[(
                    "spec.template.metadata.labels.tier",
                    "a valid label must be",
                )],
            ),
            case(
                "no containers",
                deployment(|d| d.spec.template.spec.containers.clear()),
                &[("spec.template.spec.containers", "Required value")],
            ),
            case(
                "bad container",
                deployment(|d| {
                    d.spec.template.spec.containers[0].name = "App".into();
                    d.spec.template.spec.containers[0]
                        .resources
                        .requests
                        .insert("cpu".into(), q("-1"));
                }),
                &[
                    (
                        "spec.template.spec.containers[0].name",
                        "a lowercase RFC 1123 label",
                    ),
                    (
                        "spec.template.spec.containers[0].resources.requests.cpu",
                        "must be greater than or equal to 0",
                    ),
                ],
            ),
            case(
                "restartPolicy Never",
                deployment(|d| d.spec.template.spec.restart_policy = Some(RestartPolicy::Never)),
                &[(
                    "spec.template.spec.restartPolicy",
                    "Unsupported value: \"Never\": supported values: \"Always\"",
                )],
            ),
            case(
                "activeDeadlineSeconds",
                deployment(|d| {
                    d.spec.template.spec.active_deadline_seconds = Some(crate::model::IgnoredValue);
                }),
                &[(
                    "spec.template.spec.activeDeadlineSeconds",
                    "activeDeadlineSeconds in Deployment is not Supported",
                )],
            ),
            case(
                "recreate with rollingUpdate",
                deployment(|d| {
                    d.spec.strategy.as_mut().unwrap().type_ =
                        Some(DeploymentStrategyType::Recreate);
                }),
                &[(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )],
            ),
            case(
                "both limits 0",
                deployment(|d| {
                    let ru = rolling(d);
                    ru.max_unavailable = Some(IntOrString::String("0%".into()));
                    ru.max_surge = Some(IntOrString::Int(0));
                }),
                &[(
                    "spec.strategy.rollingUpdate.maxUnavailable",
                    "Invalid value: \"0%\": may not be 0 when `maxSurge` is 0",
                )],
            ),
            case(
                "maxUnavailable 0 with default maxSurge",
                deployment(|d| {
                    let ru = rolling(d);
                    ru.max_unavailable = Some(IntOrString::Int(0));
                    ru.max_surge = None;
                }),
                &[],
            ),
            case(
                "maxUnavailable above 100%",
                deployment(|d| {
                    rolling(d).max_unavailable = Some(IntOrString::String("200%".into()));
                }),
                &[(
                    "spec.strategy.rollingUpdate.maxUnavailable",
                    "must not be greater than 100%",
                )],
            ),
            case(
                "maxSurge above 100% is allowed",
                deployment(|d| {
                    rolling(d).max_surge = Some(IntOrString::String("200%".into()));
                }),
                &[],
            ),
            case(
                "negative maxSurge",
                deployment(|d| rolling(d).max_surge = Some(IntOrString::Int(-1))),
                &[(
                    "spec.strategy.rollingUpdate.maxSurge",
                    "must be greater than or equal to 0",
                )],
            ),
        ]);
    }

    #[test]
    fn replica_set_rules() {
        run(vec![
            case("valid", replica_set(|_| {}), &[]),
            case(
                "negative replicas",
                replica_set(|r| r.spec.replicas = -3),
                &[("spec.replicas", "must be greater than or equal to 0")],
            ),
            case(
                "no selector",
                replica_set(|r| r.spec.selector = None),
                &[("spec.selector", "Required value")],
            ),
            case(
                "empty selector",
                replica_set(|r| r.spec.selector = Some(LabelSelector::default())),
                &[("spec.selector", "empty selector is invalid for replicaset")],
            ),
            case(
                "template without the selected labels",
                replica_set(|r| r.spec.template.metadata.labels.clear()),
                &[(
                    "spec.template.metadata.labels",
                    "`selector` does not match template `labels`",
                )],
            ),
            case(
                "restartPolicy OnFailure",
                replica_set(|r| {
                    r.spec.template.spec.restart_policy = Some(RestartPolicy::OnFailure)
                }),
                &[(
                    "spec.template.spec.restartPolicy",
                    "Unsupported value: \"OnFailure\"",
                )],
            ),
            case(
                "bad name",
                replica_set(|r| r.metadata.name = "Web".into()),
                &[("metadata.name", "RFC 1123 subdomain")],
            ),
        ]);
    }

    #[test]
    fn daemon_set_rules() {
        run(vec![
            case("valid", daemon_set(|_| {}), &[]),
            case(
                "no selector",
                daemon_set(|d| d.spec.selector = None),
                &[("spec.selector", "Required value")],
            ),
            case(
                "empty selector",
                daemon_set(|d| d.spec.selector = Some(LabelSelector::default())),
                &[("spec.selector", "empty selector is invalid for daemonset")],
            ),
            case(
                "selector does not match",
                daemon_set(|d| {
                    d.spec
                        .selector
                        .as_mut()
                        .unwrap()
                        .match_labels
                        .insert("app".into(), "agent".into());
                }),
                &[(
                    "spec.template.metadata.labels",
                    "`selector` does not match template `labels`",
                )],
            ),
            case(
                "bad toleration in the template",
                daemon_set(|d| {
                    d.spec.template.spec.tolerations.push(Toleration {
                        key: String::new(),
                        operator: Some(TolerationOperator::Equal),
                        ..Default::default()
                    });
                }),
                &[(
                    "spec.template.spec.tolerations[0].operator",
                    "operator must be Exists when `key` is empty",
                )],
            ),
        ]);
    }

    #[test]
    fn namespace_rules() {
        let ns = |name: &str| Object::Namespace(Box::new(Namespace::new(name)));
        run(vec![
            case("valid", ns("team-a"), &[]),
            case(
                "dotted name",
                ns("team.a"),
                &[(
                    "metadata.name",
                    "a lowercase RFC 1123 label must consist of",
                )],
            ),
            case(
                "too long",
                ns(&"a".repeat(64)),
                &[("metadata.name", "must be no more than 63 characters")],
            ),
            case(
                "not even a subdomain",
                ns("Team_A"),
                &[("metadata.name", "RFC 1123 subdomain")],
            ),
            case(
                "bad label",
                Object::Namespace(Box::new(Namespace {
                    metadata: ObjectMeta {
                        name: "team-a".into(),
                        labels: string_map(&[("team", "a b")]),
                        ..Default::default()
                    },
                    ..Default::default()
                })),
                &[("metadata.labels.team", "a valid label must be")],
            ),
        ]);
    }

    #[test]
    fn runtime_class_rules() {
        run(vec![
            case("valid", runtime_class(|_| {}), &[]),
            case(
                "handler only",
                runtime_class(|r| {
                    r.overhead = None;
                    r.scheduling = None;
                }),
                &[],
            ),
            case(
                "empty handler",
                runtime_class(|r| r.handler.clear()),
                &[("handler", "a lowercase RFC 1123 label must consist of")],
            ),
            case(
                "dotted handler",
                runtime_class(|r| r.handler = "kata.fc".into()),
                &[(
                    "handler",
                    "Invalid value: \"kata.fc\": a lowercase RFC 1123 label",
                )],
            ),
            case(
                "negative overhead",
                runtime_class(|r| {
                    r.overhead
                        .as_mut()
                        .unwrap()
                        .pod_fixed
                        .insert("memory".into(), q("-1Mi"));
                }),
                &[(
                    "overhead.podFixed.memory",
                    "must be greater than or equal to 0",
                )],
            ),
            case(
                "unknown overhead resource",
                runtime_class(|r| {
                    r.overhead
                        .as_mut()
                        .unwrap()
                        .pod_fixed
                        .insert("pods".into(), q("1"));
                }),
                &[(
                    "overhead.podFixed.pods",
                    "must be a standard resource for containers",
                )],
            ),
            case(
                "fractional extended overhead",
                runtime_class(|r| {
                    r.overhead
                        .as_mut()
                        .unwrap()
                        .pod_fixed
                        .insert("example.com/gpu".into(), q("500m"));
                }),
                &[(
                    "overhead.podFixed[\"example.com/gpu\"]",
                    "must be an integer",
                )],
            ),
            case(
                "bad node selector",
                runtime_class(|r| {
                    r.scheduling
                        .as_mut()
                        .unwrap()
                        .node_selector
                        .insert("runtime".into(), "-kata".into());
                }),
                &[("scheduling.nodeSelector.runtime", "a valid label must be")],
            ),
            case(
                "bad toleration",
                runtime_class(|r| {
                    r.scheduling.as_mut().unwrap().tolerations[0].value = "x".into();
                }),
                &[(
                    "scheduling.tolerations[0].value",
                    "value must be empty when `operator` is 'Exists'",
                )],
            ),
        ]);
    }

    #[test]
    fn resource_quota_rules() {
        run(vec![
            case("valid", quota(|_| {}), &[]),
            case("object counts and extended resources", quota(|s| {
                s.scope_selector = None;
                s.hard = resources(&[
                    ("count/deployments.apps", "5"),
                    ("requests.example.com/gpu", "4"),
                    ("services.loadbalancers", "2"),
                    ("requests.hugepages-2Mi", "1Gi"),
                ]);
            }), &[]),
            case("negative", quota(|s| {
                s.hard.insert("pods".into(), q("-1"));
            }), &[("spec.hard.pods", "must be greater than or equal to 0")]),
            case("fractional pods", quota(|s| {
                s.hard.insert("pods".into(), q("1500m"));
            }), &[("spec.hard.pods", "Invalid value: \"1500m\": must be an integer")]),
            case("unknown resource", quota(|s| {
                s.hard.insert("gpu".into(), q("1"));
            }), &[
                ("spec.hard.gpu", "must be a standard resource type or fully qualified"),
                ("spec.hard.gpu", "must be a standard resource for quota"),
            ]),
            case("storage is not a quota resource", quota(|s| {
                s.hard.insert("storage".into(), q("1Gi"));
            }), &[("spec.hard.storage", "Invalid value: \"storage\": must be a standard resource for quota")]),
            case("bad resource name", quota(|s| {
                s.hard.insert("a/b/c".into(), q("1"));
            }), &[("spec.hard[\"a/b/c\"]", "a qualified name must consist of")]),
            case("BestEffort on cpu", quota(|s| {
                s.scope_selector = None;
                s.scopes = vec![ResourceQuotaScope::BestEffort];
            }), &[("spec.scopes", "Invalid value: \"BestEffort\": unsupported scope applied to resource")]),
            case("BestEffort on pods only", quota(|s| {
                s.scope_selector = None;
                s.hard = resources(&[("pods", "3")]);
                s.scopes = vec![ResourceQuotaScope::BestEffort];
            }), &[]),
            case("conflicting scopes", quota(|s| {
                s.scopes = vec![ResourceQuotaScope::Terminating, ResourceQuotaScope::NotTerminating];
            }), &[("spec.scopes", "Invalid value: \"Terminating, NotTerminating\": conflicting scopes")]),
            case("priority class Exists", quota(|s| {
                s.scope_selector.as_mut().unwrap().match_expressions =
                    vec![scope_req(ResourceQuotaScope::PriorityClass, ScopeSelectorOperator::Exists, &[])];
            }), &[]),
            case("In without values", quota(|s| {
                s.scope_selector.as_mut().unwrap().match_expressions[0].values.clear();
            }), &[(
                "spec.scopeSelector.matchExpressions[0].values",
                "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )]),
            case("Exists with values", quota(|s| {
                s.scope_selector.as_mut().unwrap().match_expressions[0].operator = ScopeSelectorOperator::Exists;
            }), &[(
                "spec.scopeSelector.matchExpressions[0].values",
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )]),
            case("Terminating with In", quota(|s| {
                s.scope_selector.as_mut().unwrap().match_expressions =
                    vec![scope_req(ResourceQuotaScope::Terminating, ScopeSelectorOperator::In, &["x"])];
            }), &[(
                "spec.scopeSelector.matchExpressions[0].operator",
                "Invalid value: \"In\": must be 'Exist' only operator",
            )]),
            case("conflicting selector scopes", quota(|s| {
                s.hard = resources(&[("pods", "3")]);
                s.scope_selector.as_mut().unwrap().match_expressions = vec![
                    scope_req(ResourceQuotaScope::BestEffort, ScopeSelectorOperator::Exists, &[]),
                    scope_req(ResourceQuotaScope::NotBestEffort, ScopeSelectorOperator::Exists, &[]),
                ];
            }), &[("spec.scopeSelector.matchExpressions", "conflicting scopes")]),
        ]);
    }

    #[test]
    fn string_rules() {
        struct StrCase {
            name: &'static str,
            check: fn(&str) -> Result<(), Vec<String>>,
            valid: &'static [&'static str],
            invalid: &'static [&'static str],
        }
        let cases = [
            StrCase {
                name: "dns subdomain",
                check: validate_dns1123_subdomain,
                valid: &["a", "web-1", "example.com", "1.2.3", "a-b.c-d"],
                invalid: &["", "A", "-a", "a-", "a..b", ".a", "a_b", "a.b-", "é"],
            },
            StrCase {
                name: "dns label",
                check: validate_dns1123_label,
                valid: &["a", "web-1", "123", "a1-b2"],
                invalid: &["", "a.b", "-a", "a-", "Abc", "a_b"],
            },
            StrCase {
                name: "label key",
                check: validate_label_key,
                valid: &[
                    "app",
                    "App_1.x",
                    "example.com/app",
                    "kubernetes.io/hostname",
                    "a-b/c",
                ],
                invalid: &[
                    "",
                    "/app",
                    "example.com/",
                    "a/b/c",
                    "-app",
                    "app-",
                    "Example.com/app",
                    "a b",
                ],
            },
            StrCase {
                name: "label value",
                check: validate_label_value,
                valid: &["", "web", "Web_1.2-x", "0"],
                invalid: &["-web", "web-", "a b", "a/b", "é"],
            },
        ];
        for case in cases {
            for v in case.valid {
                assert_eq!(
                    (case.check)(v),
                    Ok(()),
                    "{}: {v:?} should be valid",
                    case.name
                );
            }
            for v in case.invalid {
                assert!(
                    (case.check)(v).is_err(),
                    "{}: {v:?} should be invalid",
                    case.name
                );
            }
        }
        assert!(validate_dns1123_subdomain(&"a".repeat(253)).is_ok());
        assert_eq!(
            validate_dns1123_subdomain(&"a".repeat(254)),
            Err(vec!["must be no more than 253 characters".to_string()])
        );
        assert!(validate_dns1123_label(&"a".repeat(64)).is_err());
        assert!(validate_label_key(&format!("example.com/{}", "a".repeat(63))).is_ok());
        assert!(validate_label_key(&format!("example.com/{}", "a".repeat(64))).is_err());
        assert!(validate_label_value(&"a".repeat(64)).is_err());
    }

    #[test]
    fn resource_kinds() {
        struct ResCase {
            name: &'static str,
            native: bool,
            extended: bool,
            overcommit: bool,
        }
        let cases = [
            ResCase {
                name: "cpu",
                native: true,
                extended: false,
                overcommit: true,
            },
            ResCase {
                name: "hugepages-2Mi",
                native: true,
                extended: false,
                overcommit: false,
            },
            ResCase {
                name: "example.com/gpu",
                native: false,
                extended: true,
                overcommit: false,
            },
            ResCase {
                name: "kubernetes.io/batteries",
                native: true,
                extended: false,
                overcommit: true,
            },
            ResCase {
                name: "requests.example.com/x",
                native: false,
                extended: false,
                overcommit: false,
            },
        ];
        for c in cases {
            assert_eq!(is_native_resource(c.name), c.native, "{} native", c.name);
            assert_eq!(
                is_extended_resource(c.name),
                c.extended,
                "{} extended",
                c.name
            );
            assert_eq!(
                is_overcommit_allowed(c.name),
                c.overcommit,
                "{} overcommit",
                c.name
            );
        }
    }
}

/// Appends a map key to a field path: `.cpu` for a plain key, `["example.com/gpu"]` for a
/// key with dots or slashes (which would otherwise read as more path).
pub fn map_key_path(prefix: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match (plain, prefix.is_empty()) {
        (true, true) => key.to_string(),
        (true, false) => format!("{prefix}.{key}"),
        (false, _) => format!("{prefix}[{key:?}]"),
    }
}
