//! Reading model values from their Kubernetes (serde) form with the failing field's path:
//! one rule for manifests, the gRPC edge and anything else that decodes objects.

use serde::de::{DeserializeOwned, Deserializer};
use serde_path_to_error::{Segment, Track};

use crate::model::{Kind, Object};
use crate::validate::{map_key_path, FieldError};

/// Runs `read` over `deserializer`, keeping track of where it is. On error, the
/// [`FieldError`] names the field as written in YAML (`spec.containers[0].image`,
/// `metadata.labels["app/x"]`; empty for the document itself) and gives serde's message with
/// names in double quotes, as kubectl users read them.
pub fn with_path<'de, D, T>(
    deserializer: D,
    read: impl FnOnce(serde_path_to_error::Deserializer<'_, '_, D>) -> Result<T, D::Error>,
) -> Result<T, FieldError>
where
    D: Deserializer<'de>,
{
    let mut track = Track::new();
    read(serde_path_to_error::Deserializer::new(
        deserializer,
        &mut track,
    ))
    .map_err(|e| FieldError::new(render(&track.path()), e.to_string().replace('`', "\"")))
}

/// Reads an object of `kind` (see [`Object::deserialize_as`]), naming the failing field.
pub fn object<'de, D: Deserializer<'de>>(
    kind: Kind,
    deserializer: D,
) -> Result<Object, FieldError> {
    with_path(deserializer, |d| Object::deserialize_as(kind, d))
}

/// Reads a value of type `T` from JSON, naming the failing field; text after the value is an
/// error too.
pub fn json<T: DeserializeOwned>(text: &str) -> Result<T, FieldError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = with_path(&mut de, |d| T::deserialize(d))?;
    de.end().map_err(|e| FieldError::new("", e.to_string()))?;
    Ok(value)
}

/// Reads an object of `kind` from its Kubernetes JSON, naming the failing field.
pub fn object_json(kind: Kind, text: &str) -> Result<Object, FieldError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = object(kind, &mut de)?;
    de.end().map_err(|e| FieldError::new("", e.to_string()))?;
    Ok(value)
}

/// A path as [`FieldError`]s write it: fields joined by dots, list indexes in brackets, and
/// map keys that would read as more path (`example.com/gpu`) quoted in brackets.
fn render(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out = map_key_path(&out, key);
            }
            Segment::Unknown => out = map_key_path(&out, "?"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeCondition, Pod};

    #[test]
    fn errors_name_the_field_as_written_in_yaml() {
        struct Case {
            name: &'static str,
            kind: Kind,
            json: &'static str,
            path: &'static str,
            message: &'static str,
        }
        let cases = [
            Case {
                name: "typo in a field",
                kind: Kind::Pod,
                json: r#"{"spec":{"containers":[{"name":"a","resoures":{}}]}}"#,
                path: "spec.containers[0].resoures",
                message: "unknown field \"resoures\", expected one of",
            },
            Case {
                name: "bad quantity under a plain key",
                kind: Kind::Pod,
                json: r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"abc"}}}]}}"#,
                path: "spec.containers[0].resources.requests.cpu",
                message: "\"abc\" is not a valid quantity",
            },
            Case {
                name: "bad quantity under a key with dots and a slash",
                kind: Kind::Node,
                json: r#"{"status":{"capacity":{"example.com/gpu":"x"}}}"#,
                path: "status.capacity[\"example.com/gpu\"]",
                message: "\"x\" is not a valid quantity",
            },
            Case {
                name: "bad enum",
                kind: Kind::Node,
                json: r#"{"spec":{"taints":[{"key":"k","effect":"NoSchedul"}]}}"#,
                path: "spec.taints[0].effect",
                message: "unknown variant \"NoSchedul\"",
            },
            Case {
                name: "wrong type",
                kind: Kind::Pod,
                json: r#"{"spec":{"containers":{"name":"a"}}}"#,
                path: "spec.containers",
                message: "invalid type: map, expected a sequence",
            },
            Case {
                name: "not JSON",
                kind: Kind::Pod,
                json: r#"{"spec": "#,
                path: "spec",
                message: "EOF while parsing",
            },
            Case {
                name: "text after the object",
                kind: Kind::Pod,
                json: r#"{} {}"#,
                path: "",
                message: "trailing characters",
            },
        ];
        for case in cases {
            let err = object_json(case.kind, case.json).expect_err(case.name);
            assert_eq!(err.path, case.path, "{}: {err}", case.name);
            assert!(err.message.contains(case.message), "{}: {err}", case.name);
        }
    }

    #[test]
    fn parts_of_objects_read_with_paths_too() {
        let err = json::<Vec<NodeCondition>>(r#"[{"type":"Ready","status":"True"},{"typ":"x"}]"#)
            .expect_err("unknown field");
        assert_eq!(err.path, "[1].typ", "{err}");
        let pod: Pod = json(r#"{"metadata":{"name":"web"}}"#).expect("a pod reads");
        assert_eq!(pod.metadata.name, "web");
    }
}
