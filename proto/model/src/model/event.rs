//! Events: what happened to an object and why (Scheduled, FailedScheduling, Evicted, ...).

use serde::{Deserialize, Serialize};

use super::{Ignored, ObjectMeta, Time};

/// A reference to the object an event is about.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectReference {
    /// Kind (`Pod`, `Node`).
    pub kind: String,
    /// Namespace, empty for cluster-scoped kinds.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
    /// uid.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub api_version: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub resource_version: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub field_path: Ignored,
}

/// An event (`v1/Event`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Event {
    /// `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Event`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name (generated) and namespace (the object's).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The object the event is about.
    pub involved_object: ObjectReference,
    /// Short machine-readable reason (`Scheduled`, `FailedScheduling`, `Preempted`).
    #[serde(default)]
    pub reason: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// How many times it happened.
    #[serde(default)]
    pub count: i32,
    /// First occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_timestamp: Option<Time>,
    /// Last occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_timestamp: Option<Time>,
    /// Component that reported it (`default-scheduler`, `berth-agent`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reporting_component: String,
    /// The instance of the component that reported it (a scheduler replica's identity).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reporting_instance: String,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub source: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub event_time: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub series: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub action: Ignored,
    /// Accepted and ignored.
    #[serde(default, skip_serializing_if = "crate::model::skip_ignored")]
    pub related: Ignored,
}
