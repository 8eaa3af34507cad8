//! Recording Events (Scheduled, FailedScheduling, ...): repeats of the same event on the
//! same object update one Event's count and last timestamp, as Kubernetes' recorder does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use berth_proto::model::{Event, Object, ObjectMeta, ObjectReference, Time};
use berth_store::Op;

use super::writer::{Write, Writer};

/// `Normal` event type.
pub const NORMAL: &str = "Normal";
/// `Warning` event type.
pub const WARNING: &str = "Warning";

/// Most distinct events remembered for de-duplication; past it the memory starts afresh
/// (a repeat then creates a new Event instead of counting up the old one).
const MAX_REMEMBERED: usize = 100_000;

/// Writes events through the [`Writer`], de-duplicating repeats.
#[derive(Clone)]
pub struct EventRecorder {
    writer: Writer,
    component: &'static str,
    /// `reportingInstance` of its events (empty: none).
    instance: String,
    seen: Arc<Mutex<HashMap<(String, String, String), Event>>>,
}

impl EventRecorder {
    /// A recorder that reports as `component` (`default-scheduler`).
    pub fn new(writer: Writer, component: &'static str) -> Self {
        EventRecorder {
            writer,
            component,
            instance: String::new(),
            seen: Arc::default(),
        }
    }

    /// The same recorder, naming `instance` (a replica's identity) as the events'
    /// `reportingInstance`.
    pub fn with_instance(mut self, instance: &str) -> Self {
        self.instance = instance.to_string();
        self
    }

    /// Records an event about `object`.
    pub fn record(&self, object: ObjectReference, type_: &str, reason: &str, message: String) {
        let now = Time::now();
        let dedupe_key = (object.uid.clone(), reason.to_string(), message.clone());
        let event = {
            let mut seen = self.seen.lock().expect("event map lock poisoned");
            if seen.len() >= MAX_REMEMBERED {
                seen.clear();
            }
            let event = seen.entry(dedupe_key).or_insert_with(|| {
                let mut event = new_event(object, type_, reason, message, self.component, now);
                event.reporting_instance = self.instance.clone();
                event
            });
            event.count += 1;
            event.last_timestamp = Some(now);
            event.clone()
        };
        self.writer.submit(Write {
            before: Vec::new(),
            op: Op::Upsert(Object::Event(event)),
            on_failure: None,
            refresh_before: None,
        });
    }
}

/// A new Event (count 0: the caller counts it) about `object`, reported by `component`,
/// first seen `now`; its name is the object's with a random suffix, as kube's recorder
/// names them.
pub fn new_event(
    object: ObjectReference,
    type_: &str,
    reason: &str,
    message: String,
    component: &str,
    now: Time,
) -> Event {
    Event {
        api_version: "v1".into(),
        kind: "Event".into(),
        metadata: ObjectMeta {
            name: format!(
                "{}.{:x}",
                object.name,
                now.unix_nanos() as u64 ^ rand::random::<u32>() as u64
            ),
            namespace: if object.namespace.is_empty() {
                "default".to_string()
            } else {
                object.namespace.clone()
            },
            ..Default::default()
        },
        involved_object: object,
        reason: reason.to_string(),
        message,
        type_: type_.to_string(),
        count: 0,
        first_timestamp: Some(now),
        last_timestamp: None,
        reporting_component: component.to_string(),
        reporting_instance: String::new(),
        source: None,
    }
}

/// A reference to a pod for events.
pub fn pod_ref(pod: &berth_proto::model::Pod) -> ObjectReference {
    ObjectReference {
        kind: "Pod".into(),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

/// A reference to a node for events.
pub fn node_ref(node: &berth_proto::model::Node) -> ObjectReference {
    ObjectReference {
        kind: "Node".into(),
        name: node.metadata.name.clone(),
        uid: node.metadata.uid.clone(),
        ..Default::default()
    }
}
