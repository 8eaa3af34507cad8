//! `berth.v1.Object`, written by hand rather than generated: its `json` is a [`JsonText`],
//! text shared without copying, so that the server hands the JSON it keeps for an object
//! version to every list and get without copying it per response, and a client's decoded
//! objects point into the received message instead of each being copied out of it. On the
//! wire it is the same `string` field prost would write and read.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use prost::bytes::{Buf, BufMut, Bytes};
use prost::encoding::{self, DecodeContext, WireType};
use prost::DecodeError;

/// Text known to be UTF-8, held as shared bytes: cloning it, or making it from an
/// `Arc<str>`, copies no text.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct JsonText(Bytes);

impl JsonText {
    /// The text.
    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor takes a `str` or checks the bytes (`merge`).
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    /// Replaces the text with the length-delimited string in `buf`, checking that it is
    /// UTF-8 as prost checks a `string` field (and leaving the text empty if it is not).
    fn merge(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let mut bytes = Bytes::new();
        encoding::bytes::merge(wire_type, &mut bytes, buf, ctx)?;
        if std::str::from_utf8(&bytes).is_err() {
            self.0 = Bytes::new();
            #[allow(deprecated)]
            return Err(DecodeError::new(
                "invalid string value: data is not UTF-8 encoded",
            ));
        }
        self.0 = bytes;
        Ok(())
    }
}

impl Deref for JsonText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for JsonText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for JsonText {
    /// Takes the text's allocation, first shrunk to its length: a JSON encoder's output
    /// grows by doubling, and kept as it is (the API cache keeps each object version's)
    /// it would hold up to twice its size.
    fn from(text: String) -> Self {
        JsonText(Bytes::from(text.into_bytes().into_boxed_slice()))
    }
}

impl From<&str> for JsonText {
    fn from(text: &str) -> Self {
        JsonText(Bytes::copy_from_slice(text.as_bytes()))
    }
}

/// The owner of an `Arc<str>`'s bytes inside a [`Bytes`].
struct SharedStr(Arc<str>);

impl AsRef<[u8]> for SharedStr {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl From<Arc<str>> for JsonText {
    fn from(text: Arc<str>) -> Self {
        JsonText(Bytes::from_owner(SharedStr(text)))
    }
}

impl PartialEq<str> for JsonText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for JsonText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Any stored object: its kind, and its Kubernetes JSON (`message Object` of
/// `proto/berth.proto`).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Object {
    /// Which kind `json` holds ([`super::pb::Kind`]); required.
    pub kind: i32,
    /// The object as Kubernetes writes it in JSON; apiVersion and kind may be left out when
    /// writing; when given they must be those of `kind`. The server always sends them.
    pub json: JsonText,
}

/// Field numbers of `message Object`.
const KIND: u32 = 1;
const JSON: u32 = 2;

impl Object {
    /// The kind, or [`super::pb::Kind::Unspecified`] for a number no kind has.
    pub fn kind(&self) -> super::pb::Kind {
        super::pb::Kind::try_from(self.kind).unwrap_or_default()
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("kind", &self.kind())
            .field("json", &self.json)
            .finish()
    }
}

impl prost::Message for Object {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if self.kind != 0 {
            encoding::int32::encode(KIND, &self.kind, buf);
        }
        if !self.json.is_empty() {
            encoding::encode_key(JSON, WireType::LengthDelimited, buf);
            encoding::encode_varint(self.json.len() as u64, buf);
            buf.put_slice(self.json.as_bytes());
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            KIND => encoding::int32::merge(wire_type, &mut self.kind, buf, ctx).map_err(|mut e| {
                e.push("Object", "kind");
                e
            }),
            JSON => self.json.merge(wire_type, buf, ctx).map_err(|mut e| {
                e.push("Object", "json");
                e
            }),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        let kind = if self.kind != 0 {
            encoding::int32::encoded_len(KIND, &self.kind)
        } else {
            0
        };
        let json = if self.json.is_empty() {
            0
        } else {
            encoding::key_len(JSON)
                + encoding::encoded_len_varint(self.json.len() as u64)
                + self.json.len()
        };
        kind + json
    }

    fn clear(&mut self) {
        *self = Object::default();
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    /// The message as prost would generate it from `proto/berth.proto`: what the
    /// hand-written one must match on the wire.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Generated {
        #[prost(enumeration = "super::super::pb::Kind", tag = "1")]
        kind: i32,
        #[prost(string, tag = "2")]
        json: String,
    }

    #[test]
    fn the_wire_is_prosts_string_field() {
        let pod = super::super::pb::Kind::Pod as i32;
        for (kind, json) in [
            (pod, r#"{"metadata":{"name":"web"}}"#),
            (0, r#"{"k":"é ☃"}"#),
            (pod, ""),
            (0, ""),
        ] {
            let ours = Object {
                kind,
                json: JsonText::from(json),
            };
            let theirs = Generated {
                kind,
                json: json.to_string(),
            };
            let bytes = ours.encode_to_vec();
            assert_eq!(bytes, theirs.encode_to_vec(), "{json:?}");
            assert_eq!(ours.encoded_len(), bytes.len());
            assert_eq!(Object::decode(bytes.as_slice()).expect("decodes"), ours);
            assert_eq!(
                Object::decode(Bytes::from(bytes)).expect("decodes from shared bytes"),
                ours
            );
        }
    }

    #[test]
    fn unknown_fields_are_skipped_and_bad_text_is_refused() {
        let mut bytes = Object {
            kind: 3,
            json: "{}".into(),
        }
        .encode_to_vec();
        // Field 9, a varint: skipped, as a generated message would.
        bytes.extend([9 << 3, 1]);
        assert_eq!(
            Object::decode(bytes.as_slice()).expect("decodes").json,
            "{}"
        );
        // Field 2 holding bytes that are not UTF-8.
        let bad = [JSON as u8 * 8 + 2, 2, 0xff, 0xfe];
        let err = Object::decode(&bad[..]).expect_err("not UTF-8");
        assert!(err.to_string().contains("UTF-8"), "{err}");
        assert!(err.to_string().contains("Object.json"), "{err}");
    }

    #[test]
    fn text_from_a_shared_str_is_not_copied() {
        let shared: Arc<str> = Arc::from(r#"{"a":1}"#);
        let text = JsonText::from(shared.clone());
        assert_eq!(text.as_str().as_ptr(), shared.as_ptr());
        assert_eq!(text.clone().as_str().as_ptr(), shared.as_ptr());
        assert_eq!(text.to_string(), r#"{"a":1}"#);
    }
}
