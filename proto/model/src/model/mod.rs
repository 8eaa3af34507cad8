//! Kubernetes-shaped objects: what a manifest says, what the store keeps and what the
//! scheduler reads. Field names follow Kubernetes (camelCase in YAML and JSON).
//!
//! Every struct denies unknown fields, so a typo in a manifest is an error that names the
//! field. Fields that Kubernetes has but Berth does not act on (volumes, probes,
//! securityContext, ...) are declared as [`Ignored`] so that real manifests are accepted;
//! their content is dropped.

mod apps;
mod batch;
mod event;
mod int_or_string;
mod meta;
mod namespace;
mod node;
mod object;
mod pod;
mod policy;
mod priority;
mod quota;
mod resource;
mod resource_list;
mod runtime_class;
mod scheduling;

pub use apps::*;
pub use batch::*;
pub use event::*;
pub use int_or_string::*;
pub use meta::*;
pub use namespace::*;
pub use node::*;
pub use object::*;
pub use pod::*;
pub use policy::*;
pub use priority::*;
pub use quota::*;
pub use resource::*;
pub use resource_list::{ResourceList, ResourceListIter};
pub use runtime_class::*;
pub use scheduling::*;

/// A Kubernetes field that Berth accepts in a manifest and ignores.
pub type Ignored = Option<IgnoredValue>;

/// What an [`Ignored`] field holds when a manifest sets it: nothing of the value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IgnoredValue;

impl<'de> serde::Deserialize<'de> for IgnoredValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| IgnoredValue)
    }
}

impl serde::Serialize for IgnoredValue {
    /// Never called: an [`Ignored`] field is not written ([`skip_ignored`]).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

/// The `skip_serializing_if` of every [`Ignored`] field: it is never written, and one that
/// is set makes the serialization lossy ([`serialize_lossless`]).
pub(crate) fn skip_ignored(field: &Ignored) -> bool {
    if field.is_some() {
        meta::note_serialization_loss();
    }
    true
}

/// The `skip_serializing_if` of numbers kube leaves out when zero (`omitempty`).
pub(crate) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// Labels or annotations: string keys to string values, ordered for determinism.
pub type StringMap = std::collections::BTreeMap<String, String>;

/// A [`StringMap`] from `(key, value)` pairs (`&[("app", "web")]`).
pub fn string_map(pairs: &[(&str, &str)]) -> StringMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
