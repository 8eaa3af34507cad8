//! Recording Events (Scheduled, FailedScheduling, ...): repeats of the same event on the
//! same object update one Event's count and last timestamp, as Kubernetes' recorder does.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use berth_proto::model::{Event, ObjectMeta, ObjectReference, Time};

use super::writer::Writer;

/// `Normal` event type.
pub const NORMAL: &str = "Normal";
/// `Warning` event type.
pub const WARNING: &str = "Warning";

/// Most distinct events remembered for de-duplication, as kube's event correlator
/// (`maxLruCacheEntries`): past it the least recently seen one is forgotten, and its next
/// repeat creates a new Event instead of counting up the old one.
const MAX_REMEMBERED: usize = 4096;

/// What makes two events repeats of each other: the object's uid, the reason, the message.
type DedupeKey = (String, String, String);

/// Writes events through the [`Writer`] (behind its other writes), de-duplicating repeats.
#[derive(Clone)]
pub struct EventRecorder {
    writer: Writer,
    component: &'static str,
    /// `reportingInstance` of its events (empty: none).
    instance: String,
    seen: Arc<Mutex<Remembered>>,
}

impl EventRecorder {
    /// A recorder that reports as `component` (`default-scheduler`).
    pub fn new(writer: Writer, component: &'static str) -> Self {
        EventRecorder {
            writer,
            component,
            instance: String::new(),
            seen: Arc::new(Mutex::new(Remembered::new(MAX_REMEMBERED))),
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
            let event = seen.entry(dedupe_key, || {
                let mut event = new_event(object, type_, reason, message, self.component, now);
                event.reporting_instance = self.instance.clone();
                event
            });
            // Shared with the writer's queue until committed: a repeat meanwhile counts up a
            // copy, and the queued write keeps the count it was recorded with.
            let shared = Arc::make_mut(event);
            shared.count += 1;
            shared.last_timestamp = Some(now);
            Arc::clone(event)
        };
        self.writer.submit_event(event);
    }
}

/// The events remembered for de-duplication: at most `capacity`, the least recently seen
/// forgotten first (an LRU cache).
struct Remembered {
    capacity: usize,
    /// Each event with the tick it was last seen at. Behind a pointer: the table keeps twice
    /// to four times as many slots as events (removals leave tombstones, and hashbrown grows
    /// rather than rehash a table more than half full), and an `Event` inline made a slot 664
    /// bytes (10.8 MB for 4,096 events in SchedulingBasic at 50,000 pods; 3.8 MB boxed).
    /// Shared, so that an event waiting in the writer's queue costs no copy of its own.
    events: HashMap<DedupeKey, (u64, Arc<Event>)>,
    /// Ticks in the order seen, each naming the key seen then.
    order: BTreeMap<u64, DedupeKey>,
    tick: u64,
}

impl Remembered {
    fn new(capacity: usize) -> Self {
        Remembered {
            capacity: capacity.max(1),
            events: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    /// The event remembered under `key`, now the most recently seen; made by `new` (and the
    /// least recently seen one forgotten, when full) if there is none.
    fn entry(&mut self, key: DedupeKey, new: impl FnOnce() -> Event) -> &mut Arc<Event> {
        self.tick += 1;
        let tick = self.tick;
        if let Some((seen, _)) = self.events.get(&key) {
            self.order.remove(seen);
        } else if self.events.len() >= self.capacity {
            if let Some((_, oldest)) = self.order.pop_first() {
                self.events.remove(&oldest);
            }
        }
        self.order.insert(tick, key.clone());
        let slot = self
            .events
            .entry(key)
            .or_insert_with(|| (tick, Arc::new(new())));
        slot.0 = tick;
        &mut slot.1
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
        ..Event::default()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(uid: &str) -> DedupeKey {
        (uid.to_string(), "Scheduled".to_string(), "m".to_string())
    }

    /// Sees each uid in turn (counting its event up) and returns each one's count after.
    fn see(remembered: &mut Remembered, uids: &[&str]) -> Vec<i32> {
        uids.iter()
            .map(|uid| {
                let event = remembered.entry(key(uid), || {
                    new_event(
                        ObjectReference::default(),
                        NORMAL,
                        "Scheduled",
                        "m".into(),
                        "test",
                        Time::now(),
                    )
                });
                let event = Arc::make_mut(event);
                event.count += 1;
                event.count
            })
            .collect()
    }

    #[test]
    fn remembers_the_most_recently_seen() {
        struct Case {
            name: &'static str,
            capacity: usize,
            seen: &'static [&'static str],
            want_counts: &'static [i32],
        }
        let cases = [
            Case {
                name: "repeats count up",
                capacity: 2,
                seen: &["a", "a", "b", "a"],
                want_counts: &[1, 2, 1, 3],
            },
            Case {
                name: "the least recently seen is forgotten when full",
                capacity: 2,
                seen: &["a", "b", "c", "a"],
                want_counts: &[1, 1, 1, 1],
            },
            Case {
                name: "seeing an event again keeps it",
                capacity: 2,
                seen: &["a", "b", "a", "c", "a", "b"],
                want_counts: &[1, 1, 2, 1, 3, 1],
            },
        ];
        for case in cases {
            let mut remembered = Remembered::new(case.capacity);
            assert_eq!(
                see(&mut remembered, case.seen),
                case.want_counts,
                "{}",
                case.name
            );
            assert!(remembered.events.len() <= case.capacity, "{}", case.name);
            assert_eq!(
                remembered.events.len(),
                remembered.order.len(),
                "{}",
                case.name
            );
        }
    }
}
