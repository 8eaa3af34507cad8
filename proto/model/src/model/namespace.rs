//! Namespaces (`v1/Namespace`): cluster-scoped groups of objects whose labels serve inter-pod
//! affinity's `namespaceSelector`.

use serde::{Deserialize, Serialize};

use super::{Ignored, ObjectMeta};

/// The namespace namespaced objects fall into when they name none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A namespace (`v1/Namespace`). Berth keeps its metadata (name, labels); its spec
/// (`finalizers`) and status (`phase`) are accepted and ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Namespace {
    /// `v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Namespace`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// Accepted and ignored (`finalizers`).
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub spec: Ignored,
    /// Accepted and ignored (`phase`, `conditions`).
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub status: Ignored,
}

impl Namespace {
    /// A namespace with the given name and no labels.
    pub fn new(name: &str) -> Self {
        Namespace {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            metadata: ObjectMeta {
                name: name.into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// The phase kubectl shows: `Terminating` once deletion was requested, else `Active`.
    pub fn phase(&self) -> &'static str {
        if self.metadata.deletion_timestamp.is_some() {
            "Terminating"
        } else {
            "Active"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_and_status_are_accepted_and_dropped() {
        let json = r#"{"apiVersion":"v1","kind":"Namespace",
            "metadata":{"name":"team-a","labels":{"team":"a"}},
            "spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}"#;
        let ns: Namespace = serde_json::from_str(json).expect("parses");
        assert_eq!(ns.metadata.name, "team-a");
        assert_eq!(ns.metadata.labels["team"], "a");
        assert_eq!(ns.phase(), "Active");
        let written = serde_json::to_value(&ns).expect("serializes");
        assert!(written.get("spec").is_none() && written.get("status").is_none());
        let back: Namespace = serde_json::from_value(written).expect("parses back");
        assert_eq!(back.metadata, ns.metadata);
        assert_eq!(back.spec, None);
        assert!(
            serde_json::from_str::<Namespace>(r#"{"metadata":{"name":"x"},"specs":{}}"#).is_err()
        );
    }
}
