//! kubectl's generic describer, for kinds kubectl has no describer of its own for (the DRA
//! kinds): name, namespace, labels and annotations, then every other field of the object's
//! JSON as an indented tree of "Smart Labels" (`deviceClassName` → `Device Class Name`,
//! keys sorted, lists item after item), then the events about it.

use std::fmt::Write as _;
use std::time::SystemTime;

use berth_proto::model::{Event, Object};
use serde_json::Value;

use super::{write_events, write_map};
use crate::output::{tabulate, DESCRIBE_PADDING};

/// The fields the header already shows, skipped in the tree.
const SKIPPED: [&str; 5] = [
    ".metadata.managedFields",
    ".metadata.name",
    ".metadata.namespace",
    ".metadata.labels",
    ".metadata.annotations",
];

/// Words kubectl writes in capitals in labels.
const ACRONYMS: [&str; 5] = ["API", "URL", "UID", "OSB", "GUID"];

/// `kubectl describe` of `object` with the generic describer.
pub fn describe_generic(object: &Object, events: &[Event], now: SystemTime) -> String {
    let meta = object.meta();
    let mut out = String::new();
    let _ = writeln!(out, "Name:\t{}", meta.name);
    let _ = writeln!(out, "Namespace:\t{}", meta.namespace);
    write_map(&mut out, "Labels", &meta.labels);
    write_map(&mut out, "Annotations", &meta.annotations);
    if let Value::Object(content) = crate::output::object_value(object) {
        write_content(&mut out, 0, &content, "");
    }
    write_events(&mut out, events, now);
    tabulate(&out, 0, DESCRIBE_PADDING)
}

fn write_content(
    out: &mut String,
    level: usize,
    content: &serde_json::Map<String, Value>,
    prefix: &str,
) {
    let mut fields: Vec<&String> = content.keys().collect();
    fields.sort();
    let indent = "  ".repeat(level);
    for field in fields {
        let path = format!("{prefix}.{field}");
        if SKIPPED.contains(&path.as_str()) {
            continue;
        }
        let label = smart_label(field);
        match &content[field] {
            Value::Object(map) => {
                let _ = writeln!(out, "{indent}{label}:");
                write_content(out, level + 1, map, &path);
            }
            Value::Array(items) => {
                let _ = writeln!(out, "{indent}{label}:");
                for item in items {
                    match item {
                        Value::Object(map) => write_content(out, level + 1, map, &path),
                        other => {
                            let _ = writeln!(out, "{indent}  {}", scalar(other));
                        }
                    }
                }
            }
            other => {
                let _ = writeln!(out, "{indent}{label}:\t{}", scalar(other));
            }
        }
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

/// kubectl's `smartLabelFor`: a camelCase field name as capitalised words, acronyms in
/// capitals; a name with characters other than letters and `-` (`gpu.berth.dev/memory`)
/// is left as it is.
pub fn smart_label(field: &str) -> String {
    if field.chars().any(|c| !c.is_alphabetic() && c != '-') {
        return field.to_string();
    }
    split_camel_case(field)
        .into_iter()
        .map(|part| {
            let upper = part.to_uppercase();
            if ACRONYMS.contains(&upper.as_str()) {
                upper
            } else {
                let mut chars = part.chars();
                chars.next().map_or(String::new(), |first| {
                    first.to_uppercase().chain(chars).collect()
                })
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits camelCase as Go's `camelcase.Split`: at changes between lower case, upper case
/// and other characters, an upper-case run giving its last letter to a following
/// lower-case word (`shareID` → `share`, `ID`; `APIVersion` → `API`, `Version`).
fn split_camel_case(s: &str) -> Vec<String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Lower,
        Upper,
        Other,
    }
    let class = |c: char| {
        if c.is_lowercase() {
            Class::Lower
        } else if c.is_uppercase() {
            Class::Upper
        } else {
            Class::Other
        }
    };
    let mut runs: Vec<Vec<char>> = Vec::new();
    let mut last = None;
    for c in s.chars() {
        let k = class(c);
        match runs.last_mut() {
            Some(run) if last == Some(k) => run.push(c),
            _ => runs.push(vec![c]),
        }
        last = Some(k);
    }
    // An upper-case run followed by a lower-case run lends its last letter to it.
    for i in 0..runs.len().saturating_sub(1) {
        let upper_then_lower = runs[i].first().is_some_and(|c| class(*c) == Class::Upper)
            && class(runs[i + 1][0]) == Class::Lower;
        if upper_then_lower {
            let moved = runs[i].pop().expect("an upper-case run is not empty");
            runs[i + 1].insert(0, moved);
        }
    }
    runs.into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| r.into_iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{DeviceBuilder, ResourceSliceBuilder};
    use berth_proto::model::ResourceSlice;

    #[test]
    fn labels_are_kubectl_s() {
        for (field, want) in [
            ("apiVersion", "API Version"),
            ("deviceClassName", "Device Class Name"),
            ("shareID", "Share ID"),
            ("uid", "UID"),
            ("resourceSliceCount", "Resource Slice Count"),
            ("gpu.berth.dev/memory", "gpu.berth.dev/memory"),
            ("driver", "Driver"),
        ] {
            assert_eq!(smart_label(field), want, "{field}");
        }
    }

    #[test]
    fn a_slice_reads_as_kubectl_s_generic_describer_shows_it() {
        let slice: ResourceSlice = ResourceSliceBuilder::new("n1", "gpu.berth.dev")
            .device(
                DeviceBuilder::new("gpu-0")
                    .int("index", 0)
                    .capacity("memory", "40Gi"),
            )
            .build();
        let text = describe_generic(
            &Object::ResourceSlice(Box::new(slice)),
            &[],
            SystemTime::now(),
        );
        let want = "\
Name:         n1-gpu.berth.dev
Namespace:    
Labels:       <none>
Annotations:  <none>
API Version:  resource.k8s.io/v1
Kind:         ResourceSlice
Metadata:
Spec:
  Devices:
    Attributes:
      Index:
        Int:  0
    Capacity:
      Memory:
        Value:  40Gi
    Name:       gpu-0
  Driver:       gpu.berth.dev
  Node Name:    n1
  Pool:
    Generation:            1
    Name:                  n1
    Resource Slice Count:  1
Events:                    <none>
";
        assert_eq!(text, want);
    }
}
