//! The rules every backend applies to the objects it stores, written once: key validation
//! and the `namespace/name` form, the JSON encoding, server-assigned identity, kept identity
//! on replacement, and resourceVersion preconditions.

use berth_proto::model::{Kind, Object, ObjectKey, Time};

use crate::{Error, Precondition, Result};

/// The key in its canonical form: no namespace for cluster-scoped kinds.
pub(crate) fn normalize_key(key: &ObjectKey) -> ObjectKey {
    ObjectKey::new(key.kind, &key.namespace, &key.name)
}

/// An object's key within its kind: `namespace/name`, or `name` for cluster-scoped kinds.
pub(crate) fn encode_key(key: &ObjectKey) -> Result<String> {
    let invalid = |reason| Error::InvalidKey {
        key: key.clone(),
        reason,
    };
    if key.name.is_empty() {
        return Err(invalid("the name is empty"));
    }
    if key.name.contains('/') {
        return Err(invalid("the name contains '/'"));
    }
    if !key.kind.is_namespaced() {
        return Ok(key.name.clone());
    }
    if key.namespace.is_empty() {
        return Err(Error::MissingNamespace { key: key.clone() });
    }
    if key.namespace.contains('/') {
        return Err(invalid("the namespace contains '/'"));
    }
    Ok(format!("{}/{}", key.namespace, key.name))
}

/// The object key of a key within its kind (the inverse of [`encode_key`]).
pub(crate) fn decode_key(kind: Kind, stored_key: &[u8]) -> ObjectKey {
    let text = String::from_utf8_lossy(stored_key);
    match text.split_once('/') {
        Some((namespace, name)) if kind.is_namespaced() => ObjectKey::new(kind, namespace, name),
        _ => ObjectKey::new(kind, "", &text),
    }
}

/// The object as stored: its JSON (the model types' serde form).
pub(crate) fn encode_object(key: &ObjectKey, object: &Object) -> Result<Vec<u8>> {
    serde_json::to_vec(object).map_err(|source| Error::Codec {
        key: key.clone(),
        source,
    })
}

/// A stored object read back.
pub(crate) fn decode_object(key: &ObjectKey, bytes: &[u8]) -> Result<Object> {
    Object::from_json(key.kind, bytes).map_err(|source| Error::Codec {
        key: key.clone(),
        source,
    })
}

/// What the store's checks and kept identity read of a stored object: its uid, creation
/// time and resourceVersion.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
pub(crate) struct Identity {
    #[serde(default)]
    metadata: IdentityMeta,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct IdentityMeta {
    uid: String,
    resource_version: String,
    creation_timestamp: Option<Time>,
}

impl Identity {
    /// The identity of an object at hand.
    pub(crate) fn of(object: &Object) -> Self {
        let meta = object.meta();
        Identity {
            metadata: IdentityMeta {
                uid: meta.uid.clone(),
                resource_version: meta.resource_version.clone(),
                creation_timestamp: meta.creation_timestamp,
            },
        }
    }
}

/// The identity of a stored object, read from its bytes without decoding the rest of it (the
/// other fields are skipped, not built).
pub(crate) fn decode_identity(key: &ObjectKey, bytes: &[u8]) -> Result<Identity> {
    serde_json::from_slice(bytes).map_err(|source| Error::Codec {
        key: key.clone(),
        source,
    })
}

/// The object ready to store: Kubernetes clears the namespace of cluster-scoped objects, and
/// the resourceVersion is set to `resource_version`. Returns the bytes to store and the
/// object decoded from them, which is exactly what a read will return (serialization drops
/// ignored fields and sub-second precision of times); an object the store could not read
/// back is refused here.
pub(crate) fn prepare(
    key: &ObjectKey,
    mut object: Object,
    resource_version: String,
) -> Result<(Vec<u8>, Object)> {
    let meta = object.meta_mut();
    meta.resource_version = resource_version;
    if !key.kind.is_namespaced() {
        meta.namespace.clear();
    }
    let bytes = encode_object(key, &object)?;
    let stored = decode_object(key, &bytes)?;
    Ok((bytes, stored))
}

/// Refuses the write unless the precondition holds for the stored object.
pub(crate) fn check(key: &ObjectKey, stored: &Identity, precondition: &Precondition) -> Result<()> {
    match precondition {
        Precondition::None => Ok(()),
        Precondition::ResourceVersion(expected) => {
            let found = &stored.metadata.resource_version;
            if expected == found {
                Ok(())
            } else {
                Err(Error::Conflict {
                    key: key.clone(),
                    expected: expected.clone(),
                    found: found.clone(),
                })
            }
        }
    }
}

/// An update's checks: the precondition, then the object's own resourceVersion when given.
pub(crate) fn check_update(
    key: &ObjectKey,
    stored: &Identity,
    object: &Object,
    precondition: &Precondition,
) -> Result<()> {
    check(key, stored, precondition)?;
    let own = &object.meta().resource_version;
    if own.is_empty() {
        return Ok(());
    }
    check(key, stored, &Precondition::ResourceVersion(own.clone()))
}

/// Gives a new object its server-assigned identity: a uid and a creation time, unless the
/// caller set them.
pub(crate) fn stamp_new(object: &mut Object) {
    let meta = object.meta_mut();
    if meta.uid.is_empty() {
        meta.uid = uuid::Uuid::new_v4().to_string();
    }
    if meta.creation_timestamp.is_none() {
        meta.creation_timestamp = Some(Time::now());
    }
}

/// Carries the stored object's identity over to its replacement.
pub(crate) fn keep_identity(object: &mut Object, stored: &Identity) {
    let meta = object.meta_mut();
    meta.uid.clone_from(&stored.metadata.uid);
    meta.creation_timestamp = stored.metadata.creation_timestamp;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_key_cases() {
        struct Case {
            name: &'static str,
            key: ObjectKey,
            want: std::result::Result<&'static str, &'static str>,
        }
        let cases = vec![
            Case {
                name: "namespaced",
                key: ObjectKey::new(Kind::Pod, "default", "web-1"),
                want: Ok("default/web-1"),
            },
            Case {
                name: "cluster-scoped",
                key: ObjectKey::new(Kind::Node, "", "n1"),
                want: Ok("n1"),
            },
            Case {
                name: "cluster-scoped with a stray namespace",
                key: normalize_key(&ObjectKey {
                    kind: Kind::Node,
                    namespace: "default".into(),
                    name: "n1".into(),
                }),
                want: Ok("n1"),
            },
            Case {
                name: "namespaced without namespace",
                key: ObjectKey::new(Kind::Pod, "", "web-1"),
                want: Err("pod web-1 has no namespace, but Pod is a namespaced kind"),
            },
            Case {
                name: "empty name",
                key: ObjectKey::new(Kind::Event, "default", ""),
                want: Err("invalid key event default/: the name is empty"),
            },
            Case {
                name: "slash in name",
                key: ObjectKey::new(Kind::PriorityClass, "", "a/b"),
                want: Err("invalid key priorityclass a/b: the name contains '/'"),
            },
            Case {
                name: "slash in namespace",
                key: ObjectKey::new(Kind::Pod, "a/b", "c"),
                want: Err("invalid key pod a/b/c: the namespace contains '/'"),
            },
        ];
        for case in cases {
            let got = encode_key(&case.key).map_err(|e| e.to_string());
            let want = case.want.map(str::to_string).map_err(str::to_string);
            assert_eq!(got, want, "case {}", case.name);
        }
    }

    #[test]
    fn decode_identity_reads_what_a_full_decode_reads() {
        let with_identity = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","uid":"u-1","resourceVersion":"42","creationTimestamp":"2024-01-02T03:04:05Z","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Pending"}}"#;
        let bare = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#;
        let key = ObjectKey::new(Kind::Pod, "default", "web");
        for json in [with_identity, bare] {
            let full = decode_object(&key, json.as_bytes()).expect("a pod");
            let identity = decode_identity(&key, json.as_bytes()).expect("its identity");
            assert_eq!(identity, Identity::of(&full), "{json}");
        }
        let err = decode_identity(&key, b"{\"metadata\":").expect_err("truncated");
        assert!(err.to_string().contains("pod default/web"), "{err}");
    }

    #[test]
    fn decode_key_inverts_encode_key() {
        for key in [
            ObjectKey::new(Kind::Pod, "default", "web-1"),
            ObjectKey::new(Kind::Node, "", "n1"),
        ] {
            let stored = encode_key(&key).expect("valid key");
            assert_eq!(decode_key(key.kind, stored.as_bytes()), key, "key {key}");
        }
    }
}
