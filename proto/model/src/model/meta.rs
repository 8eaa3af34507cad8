//! Object metadata shared by every kind: names, labels, versions, timestamps, owners.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::Cell;
use std::time::{Duration, SystemTime};

use super::{Ignored, StringMap};

/// `metadata` of every object (Kubernetes' ObjectMeta).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectMeta {
    /// Object name, unique per kind and namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Prefix for a server-generated name when `name` is empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub generate_name: String,
    /// Namespace; empty for cluster-scoped kinds, and defaulted to `default` for pods.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Labels, used by selectors.
    #[serde(skip_serializing_if = "StringMap::is_empty")]
    pub labels: StringMap,
    /// Annotations: free-form metadata (the sim runtime reads usage from them).
    #[serde(skip_serializing_if = "StringMap::is_empty")]
    pub annotations: StringMap,
    /// Server-assigned unique id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Server-assigned version, increasing with every write of any object. A decimal string in
    /// the API, as in Kubernetes; an update that names a stale one is refused.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// When the server first stored the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// When a graceful delete was requested; the object goes once its owner lets it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// Objects that own this one (a ReplicaSet owns its pods).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// Finalizers, kept as written (the job controller's `batch.kubernetes.io/job-tracking`
    /// marks the pods it has not counted yet). Berth does not hold a deletion for them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub managed_fields: Ignored,
    /// The version of the desired state: set to 1 when a Deployment is created and
    /// increased whenever its spec changes (other kinds leave it 0); controllers report the
    /// one they acted on as `status.observedGeneration`.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub generation: i64,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub self_link: Ignored,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "crate::model::skip_ignored")]
    pub deletion_grace_period_seconds: Ignored,
}

/// A reference from an object to its owner.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerReference {
    /// apiVersion of the owner.
    #[serde(default)]
    pub api_version: String,
    /// Kind of the owner (`ReplicaSet`, `DaemonSet`, ...).
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// uid of the owner.
    #[serde(default)]
    pub uid: String,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether the owner may not be deleted in the foreground before this object; set by
    /// the controllers as kube's do, and otherwise not acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// A point in time, written as RFC 3339 (`2026-11-30T03:31:56Z`) like Kubernetes' `Time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub SystemTime);

impl Time {
    /// The current time, in whole seconds: what its RFC 3339 form keeps (kube's `metav1.Time`
    /// serializes seconds too), so that a time made here is the same after a store's round
    /// trip, and a write need not be decoded again to be what a read returns.
    pub fn now() -> Self {
        let now = SystemTime::now();
        match now.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(since) => Time(SystemTime::UNIX_EPOCH + Duration::from_secs(since.as_secs())),
            Err(_) => Time(now),
        }
    }

    /// Whether the RFC 3339 form keeps all of this time: whole seconds, not before the epoch.
    fn is_whole_seconds(&self) -> bool {
        self.0
            .duration_since(SystemTime::UNIX_EPOCH)
            .is_ok_and(|d| d.subsec_nanos() == 0)
    }

    /// Seconds since the Unix epoch (negative before it).
    pub fn unix_seconds(&self) -> i64 {
        match self.0.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        }
    }

    /// Nanoseconds since the Unix epoch, saturating.
    pub fn unix_nanos(&self) -> i64 {
        match self.0.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
        }
    }

    /// The time `nanos` nanoseconds after the Unix epoch.
    pub fn from_unix_nanos(nanos: i64) -> Self {
        let base = SystemTime::UNIX_EPOCH;
        let d = std::time::Duration::from_nanos(nanos.unsigned_abs());
        Time(if nanos >= 0 { base + d } else { base - d })
    }
}

impl std::fmt::Display for Time {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", humantime::format_rfc3339_seconds(self.0))
    }
}

impl std::str::FromStr for Time {
    type Err = humantime::TimestampError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        humantime::parse_rfc3339_weak(s).map(Time)
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.is_whole_seconds() {
            note_serialization_loss();
        }
        s.collect_str(self)
    }
}

thread_local! {
    /// Whether a serialization on this thread dropped part of a value since
    /// [`serialize_lossless`] began.
    static SERIALIZATION_LOSS: Cell<bool> = const { Cell::new(false) };
}

/// Notes that the serialization under way drops part of a value, so that decoding its
/// output gives something else ([`serialize_lossless`]).
pub(crate) fn note_serialization_loss() {
    SERIALIZATION_LOSS.with(|lost| lost.set(true));
}

/// Runs `serialize` (a serialization of model values, on this thread) and says whether it
/// kept everything that the model's types drop when written: a [`Time`]'s sub-second part
/// (or a time before the epoch), and a set [`super::Ignored`] field. When it returns true,
/// decoding the output gives back values equal to those serialized, and a store may hand
/// out the object it wrote instead of decoding it again.
pub fn serialize_lossless<R>(serialize: impl FnOnce() -> R) -> (R, bool) {
    let outer = SERIALIZATION_LOSS.with(|lost| lost.replace(false));
    let result = serialize();
    let lost = SERIALIZATION_LOSS.with(|lost| lost.replace(outer));
    if lost {
        note_serialization_loss();
    }
    (result, !lost)
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|e| serde::de::Error::custom(format!("invalid RFC 3339 time {s:?}: {e}")))
    }
}
