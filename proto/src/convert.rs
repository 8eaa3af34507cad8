//! Conversions between the gRPC messages ([`crate::pb`]) and the object model
//! ([`crate::model`]), in one place.
