//! The edge between the gRPC messages ([`crate::pb`]) and the object model: objects travel
//! as their Kubernetes JSON (`pb::Object { kind, json }`), parts of objects (a pod's status,
//! a node's conditions) as the JSON of that part.
//!
//! Model to message is infallible. Message to model fails with a [`FieldError`] that names
//! the field relative to the object, as written in YAML
//! (`spec.containers[0].resources.requests.cpu`), or `kind`, `apiVersion` or the message's
//! JSON field when the error is about the message itself.

use std::time::UNIX_EPOCH;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::decode;
use crate::model::{self, Kind, Node, Object, Pod};
use crate::pb;
use crate::validate::FieldError;

/// The message for any object: its kind and its Kubernetes JSON.
pub fn object_to_pb(obj: &Object) -> pb::Object {
    pb::Object {
        kind: kind_to_pb(obj.kind()) as i32,
        json: to_json(obj).into(),
    }
}

/// The message for a pod.
pub fn pod_to_pb(pod: &Pod) -> pb::Object {
    object_to_pb(&Object::Pod(Box::new(pod.clone())))
}

/// The message for a node.
pub fn node_to_pb(node: &Node) -> pb::Object {
    object_to_pb(&Object::Node(Box::new(node.clone())))
}

/// The object a message carries. Errors name fields relative to the object
/// (`spec.containers[0]...`); `kind` when the message names no kind or one this version does
/// not know; `json` when it carries no JSON; `apiVersion` or `kind` when the JSON says another
/// kind than the message.
pub fn object_from_pb(msg: &pb::Object) -> Result<Object, FieldError> {
    let kind = kind_from_pb(msg.kind)?;
    if msg.json.trim().is_empty() {
        return Err(FieldError::required("json", "the object's Kubernetes JSON"));
    }
    let object = decode::object_json(kind, &msg.json)?;
    let (api_version, kind_field) = object.type_meta();
    if api_version != kind.api_version() {
        return Err(FieldError::invalid(
            "apiVersion",
            api_version,
            &format!("the apiVersion of {kind} is {:?}", kind.api_version()),
        ));
    }
    if kind_field != kind.as_str() {
        return Err(FieldError::invalid(
            "kind",
            kind_field,
            &format!("the message carries a {kind}"),
        ));
    }
    Ok(object)
}

/// The object a message carries, which must be of `kind`; a message that carries none is an
/// error at `field` (`node`, `pod`).
pub fn object_of_kind(
    msg: Option<&pb::Object>,
    kind: Kind,
    field: &str,
) -> Result<Object, FieldError> {
    let msg = msg.ok_or_else(|| FieldError::required(field, ""))?;
    if msg.kind != kind_to_pb(kind) as i32 {
        return Err(FieldError::invalid(
            format!("{field}.kind"),
            msg.kind,
            &format!("must be {}", kind_to_pb(kind).as_str_name()),
        ));
    }
    object_from_pb(msg)
}

/// The pod a message carries (see [`object_of_kind`]).
pub fn pod_from_pb(msg: Option<&pb::Object>, field: &str) -> Result<Pod, FieldError> {
    match object_of_kind(msg, Kind::Pod, field)? {
        Object::Pod(pod) => Ok(*pod),
        other => unreachable!("a KIND_POD message decodes as a pod, not {}", other.kind()),
    }
}

/// The node a message carries (see [`object_of_kind`]).
pub fn node_from_pb(msg: Option<&pb::Object>, field: &str) -> Result<Node, FieldError> {
    match object_of_kind(msg, Kind::Node, field)? {
        Object::Node(node) => Ok(*node),
        other => unreachable!(
            "a KIND_NODE message decodes as a node, not {}",
            other.kind()
        ),
    }
}

/// Which object a message names: read even from JSON the model refuses, so that a failure
/// can be reported against the object.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Identity {
    /// Namespace; empty when the JSON gives none.
    #[serde(default)]
    pub namespace: String,
    /// Name; empty when the JSON gives none.
    #[serde(default)]
    pub name: String,
    /// uid; empty when the JSON gives none.
    #[serde(default)]
    pub uid: String,
}

impl Identity {
    /// The identity in an object's metadata.
    pub fn of(meta: &model::ObjectMeta) -> Self {
        Identity {
            namespace: meta.namespace.clone(),
            name: meta.name.clone(),
            uid: meta.uid.clone(),
        }
    }

    /// The identity in a message's JSON, whatever else it holds (unknown fields, bad
    /// values); empty where it says none or is no JSON object.
    pub fn read(msg: &pb::Object) -> Self {
        #[derive(serde::Deserialize)]
        struct Loose {
            #[serde(default)]
            metadata: Identity,
        }
        serde_json::from_str::<Loose>(&msg.json)
            .map(|l| l.metadata)
            .unwrap_or_default()
    }
}

/// A part of an object (a pod's status, a list of node conditions) as JSON.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("model values serialize to JSON")
}

/// A part of an object from the JSON in the message field `field`. Errors name the field
/// and the path inside it (`conditions_json[1].type`).
pub fn from_json<T: DeserializeOwned>(field: &str, json: &str) -> Result<T, FieldError> {
    decode::json(json).map_err(|e| {
        let path = if e.path.is_empty() || e.path.starts_with('[') {
            format!("{field}{}", e.path)
        } else {
            format!("{field}.{}", e.path)
        };
        FieldError::new(path, e.message)
    })
}

/// The wire enum for a kind: `KIND_*` numbers follow [`Kind::ALL`]'s order from 1.
pub fn kind_to_pb(kind: Kind) -> pb::Kind {
    let index = Kind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("Kind::ALL lists every kind");
    pb::Kind::try_from(index as i32 + 1).expect("pb::Kind numbers every kind of Kind::ALL")
}

/// The kind a wire enum number names (as prost stores it in a message's `kind` field).
/// `KIND_UNSPECIFIED` is a required-value error at `kind`; a number this version does not
/// know is an unsupported value.
pub fn kind_from_pb(value: i32) -> Result<Kind, FieldError> {
    if value == pb::Kind::Unspecified as i32 {
        return Err(FieldError::required("kind", ""));
    }
    usize::try_from(value - 1)
        .ok()
        .and_then(|i| Kind::ALL.get(i).copied())
        .ok_or_else(|| FieldError::invalid("kind", value, "unknown kind"))
}

impl From<&Object> for pb::Object {
    fn from(obj: &Object) -> Self {
        object_to_pb(obj)
    }
}

impl TryFrom<pb::Object> for Object {
    type Error = FieldError;
    fn try_from(msg: pb::Object) -> Result<Self, FieldError> {
        object_from_pb(&msg)
    }
}

impl From<Kind> for pb::Kind {
    fn from(kind: Kind) -> Self {
        kind_to_pb(kind)
    }
}

impl From<&model::Time> for pb::Time {
    /// Protobuf's convention: nanos are never negative, so a time before the epoch borrows
    /// one second.
    fn from(t: &model::Time) -> Self {
        let (seconds, nanos) = match t.0.duration_since(UNIX_EPOCH) {
            Ok(d) => (
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                d.subsec_nanos(),
            ),
            Err(before) => {
                let d = before.duration();
                let secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                match d.subsec_nanos() {
                    0 => (secs, 0),
                    n => (secs.saturating_sub(1), 1_000_000_000 - n),
                }
            }
        };
        pb::Time {
            seconds,
            nanos: nanos as i32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeCondition, PodStatus};

    #[test]
    fn kinds_number_as_the_proto_file_names_them() {
        for kind in Kind::ALL {
            let mut want = String::from("KIND");
            for c in kind.as_str().chars() {
                if c.is_ascii_uppercase() {
                    want.push('_');
                }
                want.push(c.to_ascii_uppercase());
            }
            let wire = kind_to_pb(kind);
            assert_eq!(wire.as_str_name(), want, "{kind}");
            assert_eq!(kind_from_pb(wire as i32), Ok(kind), "{kind}");
        }
    }

    #[test]
    fn objects_travel_and_come_back_unchanged() {
        let pod = serde_json::json!({
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                         "creationTimestamp": "2026-11-30T03:31:56Z"},
            "spec": {"containers": [{"name": "app", "image": "nginx",
                     "resources": {"requests": {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"}}}],
                     "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                     "priority": 10},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        });
        let node = serde_json::json!({
            "metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}]},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        });
        for (kind, json) in [(Kind::Pod, pod), (Kind::Node, node)] {
            let json = serde_json::to_vec(&json).expect("serializes");
            let object = Object::from_json(kind, &json).expect("test object reads");
            let msg = object_to_pb(&object);
            assert_eq!(msg.kind, kind_to_pb(kind) as i32, "{kind}");
            assert!(
                msg.json
                    .starts_with(&format!(r#"{{"apiVersion":"v1","kind":"{kind}","#)),
                "{kind}: {}",
                msg.json
            );
            assert_eq!(object_from_pb(&msg), Ok(object), "{kind}");
        }
    }

    #[test]
    fn bad_messages_name_the_field_and_the_problem() {
        struct Case {
            name: &'static str,
            msg: pb::Object,
            want: &'static str,
        }
        let pod = |json: &str| pb::Object {
            kind: pb::Kind::Pod as i32,
            json: json.into(),
        };
        let cases = [
            Case {
                name: "no kind",
                msg: pb::Object::default(),
                want: "kind: Required value",
            },
            Case {
                name: "unknown kind",
                msg: pb::Object {
                    kind: 999,
                    json: "{}".into(),
                },
                want: "kind: Invalid value: 999: unknown kind",
            },
            Case {
                name: "no JSON",
                msg: pod(""),
                want: "json: Required value",
            },
            Case {
                name: "not JSON",
                msg: pod("spec: {}"),
                want: "expected value at line 1 column 1",
            },
            Case {
                name: "bad quantity",
                msg: pod(
                    r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"abc"}}}]}}"#,
                ),
                want: "spec.containers[0].resources.requests.cpu: \"abc\" is not a valid quantity",
            },
            Case {
                name: "unknown field",
                msg: pod(r#"{"spec":{"containerz":[]}}"#),
                want: "spec.containerz: unknown field \"containerz\", expected one of",
            },
            Case {
                name: "JSON of another kind",
                msg: pod(r#"{"apiVersion":"v1","kind":"Node"}"#),
                want: "kind: Invalid value: \"Node\": the message carries a Pod",
            },
            Case {
                name: "another apiVersion",
                msg: pod(r#"{"apiVersion":"apps/v1","kind":"Pod"}"#),
                want: "apiVersion: Invalid value: \"apps/v1\": the apiVersion of Pod is \"v1\"",
            },
        ];
        for case in cases {
            let err = object_from_pb(&case.msg).expect_err(case.name);
            assert!(
                err.to_string().contains(case.want),
                "{}: {err} should contain {:?}",
                case.name,
                case.want
            );
        }
    }

    #[test]
    fn messages_of_the_wrong_kind_or_none_are_refused() {
        let node = node_to_pb(&Node::default());
        let err = pod_from_pb(Some(&node), "pod").expect_err("a node is no pod");
        assert_eq!(err.path, "pod.kind", "{err}");
        let err = node_from_pb(None, "node").expect_err("no node");
        assert_eq!(err.to_string(), "node: Required value");
    }

    #[test]
    fn parts_of_objects_name_their_message_field() {
        let status = PodStatus::default();
        let back: PodStatus = from_json("status_json", &to_json(&status)).expect("reads back");
        assert_eq!(back, status);
        let err =
            from_json::<PodStatus>("status_json", r#"{"phase":"Runing"}"#).expect_err("bad phase");
        assert_eq!(err.path, "status_json.phase", "{err}");
        let err = from_json::<Vec<NodeCondition>>("conditions_json", r#"[{"typo":1}]"#)
            .expect_err("bad condition");
        assert_eq!(err.path, "conditions_json[0].typo", "{err}");
    }

    #[test]
    fn identity_reads_from_objects_the_model_refuses() {
        let msg = pb::Object {
            kind: pb::Kind::Pod as i32,
            json: r#"{"metadata":{"name":"web","namespace":"team","uid":"u1","bogus":1},"spec":{"containers":7}}"#.into(),
        };
        assert!(object_from_pb(&msg).is_err(), "the model refuses it");
        let want = Identity {
            namespace: "team".into(),
            name: "web".into(),
            uid: "u1".into(),
        };
        assert_eq!(Identity::read(&msg), want);
        let not_json = pb::Object {
            kind: pb::Kind::Pod as i32,
            json: "nonsense".into(),
        };
        assert_eq!(Identity::read(&not_json), Identity::default());
    }

    #[test]
    fn times_before_the_epoch_borrow_a_second() {
        let t = pb::Time::from(&model::Time::from_unix_nanos(-1_500_000_000));
        assert_eq!((t.seconds, t.nanos), (-2, 500_000_000));
        let t = pb::Time::from(&model::Time::from_unix_nanos(1_700_000_000_250_000_000));
        assert_eq!((t.seconds, t.nanos), (1_700_000_000, 250_000_000));
    }
}
