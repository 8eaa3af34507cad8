//! Any object of a kind Berth stores, tagged by kind, and the per-kind identity rules.

use serde::{Deserialize, Serialize};

use super::{Event, Node, ObjectMeta, Pod, PriorityClass};

/// The kinds of object the API stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Kind {
    /// `v1/Pod`, namespaced.
    Pod,
    /// `v1/Node`, cluster-scoped.
    Node,
    /// `scheduling.k8s.io/v1` PriorityClass, cluster-scoped.
    PriorityClass,
    /// `v1/Event`, namespaced.
    Event,
}

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 4] = [Kind::Pod, Kind::Node, Kind::PriorityClass, Kind::Event];

    /// The kind's name as in manifests.
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Node => "Node",
            Kind::PriorityClass => "PriorityClass",
            Kind::Event => "Event",
        }
    }

    /// The apiVersion a manifest of this kind carries.
    pub fn api_version(&self) -> &'static str {
        match self {
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            _ => "v1",
        }
    }

    /// Whether objects of this kind live in a namespace.
    pub fn is_namespaced(&self) -> bool {
        matches!(self, Kind::Pod | Kind::Event)
    }

    /// Parses a kind as kubectl accepts it on the command line: `pod`, `pods`, `po`,
    /// `node`, `nodes`, `no`, `priorityclass`, `priorityclasses`, `pc`, `event`, `events`,
    /// `ev`; case-insensitive.
    pub fn from_cli(s: &str) -> Option<Kind> {
        match s.to_ascii_lowercase().as_str() {
            "pod" | "pods" | "po" => Some(Kind::Pod),
            "node" | "nodes" | "no" => Some(Kind::Node),
            "priorityclass" | "priorityclasses" | "pc" => Some(Kind::PriorityClass),
            "event" | "events" | "ev" => Some(Kind::Event),
            _ => None,
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object of any stored kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    /// A pod.
    Pod(Pod),
    /// A node.
    Node(Node),
    /// A priority class.
    PriorityClass(PriorityClass),
    /// An event.
    Event(Event),
}

impl Object {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Object::Pod(_) => Kind::Pod,
            Object::Node(_) => Kind::Node,
            Object::PriorityClass(_) => Kind::PriorityClass,
            Object::Event(_) => Kind::Event,
        }
    }

    /// The object's metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Pod(o) => &o.metadata,
            Object::Node(o) => &o.metadata,
            Object::PriorityClass(o) => &o.metadata,
            Object::Event(o) => &o.metadata,
        }
    }

    /// The object's metadata, mutable.
    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Object::Pod(o) => &mut o.metadata,
            Object::Node(o) => &mut o.metadata,
            Object::PriorityClass(o) => &mut o.metadata,
            Object::Event(o) => &mut o.metadata,
        }
    }

    /// The object's key: `namespace/name` for namespaced kinds, `name` otherwise.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.kind(), &self.meta().namespace, &self.meta().name)
    }
}

/// Identity of an object: kind, namespace (empty when cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Kind.
    pub kind: Kind,
    /// Namespace; empty for cluster-scoped kinds.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A key; the namespace is dropped for cluster-scoped kinds.
    pub fn new(kind: Kind, namespace: &str, name: &str) -> Self {
        ObjectKey {
            kind,
            namespace: if kind.is_namespaced() {
                namespace.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    /// `Pod default/web-1`, `Node n1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}
