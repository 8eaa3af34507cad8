//! Any object of a kind Berth stores, tagged by kind, the per-kind identity rules, and its
//! Kubernetes JSON form (what the store keeps, the API carries and `-o json` prints).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    DaemonSet, Deployment, DeviceClass, Event, Job, Namespace, Node, ObjectMeta, Pod,
    PodDisruptionBudget, PriorityClass, ReplicaSet, ResourceClaim, ResourceClaimTemplate,
    ResourceQuota, ResourceSlice, RuntimeClass,
};

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
    /// `v1/Namespace`, cluster-scoped.
    Namespace,
    /// `node.k8s.io/v1` RuntimeClass, cluster-scoped.
    RuntimeClass,
    /// `policy/v1` PodDisruptionBudget, namespaced.
    PodDisruptionBudget,
    /// `apps/v1` Deployment, namespaced.
    Deployment,
    /// `apps/v1` ReplicaSet, namespaced.
    ReplicaSet,
    /// `apps/v1` DaemonSet, namespaced.
    DaemonSet,
    /// `v1/ResourceQuota`, namespaced.
    ResourceQuota,
    /// `batch/v1` Job, namespaced.
    Job,
    /// `resource.k8s.io/v1` DeviceClass, cluster-scoped.
    DeviceClass,
    /// `resource.k8s.io/v1` ResourceClaim, namespaced.
    ResourceClaim,
    /// `resource.k8s.io/v1` ResourceClaimTemplate, namespaced.
    ResourceClaimTemplate,
    /// `resource.k8s.io/v1` ResourceSlice, cluster-scoped.
    ResourceSlice,
}

impl Kind {
    /// Every kind, in a fixed order (the store opens one tree per entry).
    pub const ALL: [Kind; 16] = [
        Kind::Pod,
        Kind::Node,
        Kind::PriorityClass,
        Kind::Event,
        Kind::Namespace,
        Kind::RuntimeClass,
        Kind::PodDisruptionBudget,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::DaemonSet,
        Kind::ResourceQuota,
        Kind::Job,
        Kind::DeviceClass,
        Kind::ResourceClaim,
        Kind::ResourceClaimTemplate,
        Kind::ResourceSlice,
    ];

    /// The kind's name as in manifests.
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Node => "Node",
            Kind::PriorityClass => "PriorityClass",
            Kind::Event => "Event",
            Kind::Namespace => "Namespace",
            Kind::RuntimeClass => "RuntimeClass",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::Deployment => "Deployment",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::DaemonSet => "DaemonSet",
            Kind::ResourceQuota => "ResourceQuota",
            Kind::Job => "Job",
            Kind::DeviceClass => "DeviceClass",
            Kind::ResourceClaim => "ResourceClaim",
            Kind::ResourceClaimTemplate => "ResourceClaimTemplate",
            Kind::ResourceSlice => "ResourceSlice",
        }
    }

    /// The kind's resource name, lowercase plural as in the Kubernetes API (`pods`,
    /// `priorityclasses`): used in messages (`pods "web" not found`), the CLI and the store.
    pub fn plural(&self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::Node => "nodes",
            Kind::PriorityClass => "priorityclasses",
            Kind::Event => "events",
            Kind::Namespace => "namespaces",
            Kind::RuntimeClass => "runtimeclasses",
            Kind::PodDisruptionBudget => "poddisruptionbudgets",
            Kind::Deployment => "deployments",
            Kind::ReplicaSet => "replicasets",
            Kind::DaemonSet => "daemonsets",
            Kind::ResourceQuota => "resourcequotas",
            Kind::Job => "jobs",
            Kind::DeviceClass => "deviceclasses",
            Kind::ResourceClaim => "resourceclaims",
            Kind::ResourceClaimTemplate => "resourceclaimtemplates",
            Kind::ResourceSlice => "resourceslices",
        }
    }

    /// The apiVersion a manifest of this kind carries.
    pub fn api_version(&self) -> &'static str {
        match self {
            Kind::Pod | Kind::Node | Kind::Event | Kind::Namespace | Kind::ResourceQuota => "v1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::RuntimeClass => "node.k8s.io/v1",
            Kind::PodDisruptionBudget => "policy/v1",
            Kind::Deployment | Kind::ReplicaSet | Kind::DaemonSet => "apps/v1",
            Kind::Job => "batch/v1",
            Kind::DeviceClass
            | Kind::ResourceClaim
            | Kind::ResourceClaimTemplate
            | Kind::ResourceSlice => "resource.k8s.io/v1",
        }
    }

    /// Whether objects of this kind live in a namespace.
    pub fn is_namespaced(&self) -> bool {
        match self {
            Kind::Pod
            | Kind::Event
            | Kind::PodDisruptionBudget
            | Kind::Deployment
            | Kind::ReplicaSet
            | Kind::DaemonSet
            | Kind::ResourceQuota
            | Kind::Job
            | Kind::ResourceClaim
            | Kind::ResourceClaimTemplate => true,
            Kind::Node
            | Kind::PriorityClass
            | Kind::Namespace
            | Kind::RuntimeClass
            | Kind::DeviceClass
            | Kind::ResourceSlice => false,
        }
    }

    /// kubectl's short names for the kind's resource (`po`, `deploy`), as `kubectl
    /// api-resources` lists them; most kinds have none.
    pub fn short_names(&self) -> &'static [&'static str] {
        match self {
            Kind::Pod => &["po"],
            Kind::Node => &["no"],
            Kind::PriorityClass => &["pc"],
            Kind::Event => &["ev"],
            Kind::Namespace => &["ns"],
            Kind::PodDisruptionBudget => &["pdb"],
            Kind::Deployment => &["deploy"],
            Kind::ReplicaSet => &["rs"],
            Kind::DaemonSet => &["ds"],
            Kind::ResourceQuota => &["quota"],
            Kind::RuntimeClass
            | Kind::Job
            | Kind::DeviceClass
            | Kind::ResourceClaim
            | Kind::ResourceClaimTemplate
            | Kind::ResourceSlice => &[],
        }
    }

    /// Parses a kind as kubectl accepts it on the command line, case-insensitive: the
    /// singular, the plural, or a [short name](Kind::short_names). Group-qualified names
    /// (`deployments.apps`) are the caller's to split.
    pub fn from_cli(s: &str) -> Option<Kind> {
        let s = s.to_ascii_lowercase();
        Kind::ALL.into_iter().find(|kind| {
            kind.as_str().eq_ignore_ascii_case(&s)
                || kind.plural() == s
                || kind.short_names().contains(&s.as_str())
        })
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Evaluates `$body` with `$o` bound to the object inside whichever variant `$obj` is.
macro_rules! each_kind {
    ($obj:expr, $o:ident => $body:expr) => {
        match $obj {
            Object::Pod($o) => $body,
            Object::Node($o) => $body,
            Object::PriorityClass($o) => $body,
            Object::Event($o) => $body,
            Object::Namespace($o) => $body,
            Object::RuntimeClass($o) => $body,
            Object::PodDisruptionBudget($o) => $body,
            Object::Deployment($o) => $body,
            Object::ReplicaSet($o) => $body,
            Object::DaemonSet($o) => $body,
            Object::ResourceQuota($o) => $body,
            Object::Job($o) => $body,
            Object::DeviceClass($o) => $body,
            Object::ResourceClaim($o) => $body,
            Object::ResourceClaimTemplate($o) => $body,
            Object::ResourceSlice($o) => $body,
        }
    };
}

/// An object of any stored kind.
///
/// Each variant holds its object boxed, so that an `Object` is two words whatever its kind
/// and each stored object takes the bytes of its own kind only (a Job is ~1.4 KB, a Pod ~1 KB,
/// an Event ~600 bytes: unboxed, every object would take the largest). Build one with
/// `Object::from(pod)` or `pod.into()`.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    /// A pod.
    Pod(Box<Pod>),
    /// A node.
    Node(Box<Node>),
    /// A priority class.
    PriorityClass(Box<PriorityClass>),
    /// An event.
    Event(Box<Event>),
    /// A namespace.
    Namespace(Box<Namespace>),
    /// A runtime class.
    RuntimeClass(Box<RuntimeClass>),
    /// A pod disruption budget.
    PodDisruptionBudget(Box<PodDisruptionBudget>),
    /// A deployment.
    Deployment(Box<Deployment>),
    /// A replica set.
    ReplicaSet(Box<ReplicaSet>),
    /// A daemon set.
    DaemonSet(Box<DaemonSet>),
    /// A resource quota.
    ResourceQuota(Box<ResourceQuota>),
    /// A job.
    Job(Box<Job>),
    /// A device class.
    DeviceClass(Box<DeviceClass>),
    /// A resource claim.
    ResourceClaim(Box<ResourceClaim>),
    /// A resource claim template.
    ResourceClaimTemplate(Box<ResourceClaimTemplate>),
    /// A resource slice.
    ResourceSlice(Box<ResourceSlice>),
}

/// `From<Kind>` for [`Object`]: boxes the object into its variant.
macro_rules! object_from {
    ($($kind:ident),* $(,)?) => {
        $(
            impl From<$kind> for Object {
                fn from(object: $kind) -> Object {
                    Object::$kind(Box::new(object))
                }
            }
        )*
    };
}

object_from!(
    Pod,
    Node,
    PriorityClass,
    Event,
    Namespace,
    RuntimeClass,
    PodDisruptionBudget,
    Deployment,
    ReplicaSet,
    DaemonSet,
    ResourceQuota,
    Job,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
);

/// An `Object` stays two words: a variant that holds its object inline makes every stored
/// object as large as it.
const _: () = assert!(std::mem::size_of::<Object>() <= 16);

impl Object {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Object::Pod(_) => Kind::Pod,
            Object::Node(_) => Kind::Node,
            Object::PriorityClass(_) => Kind::PriorityClass,
            Object::Event(_) => Kind::Event,
            Object::Namespace(_) => Kind::Namespace,
            Object::RuntimeClass(_) => Kind::RuntimeClass,
            Object::PodDisruptionBudget(_) => Kind::PodDisruptionBudget,
            Object::Deployment(_) => Kind::Deployment,
            Object::ReplicaSet(_) => Kind::ReplicaSet,
            Object::DaemonSet(_) => Kind::DaemonSet,
            Object::ResourceQuota(_) => Kind::ResourceQuota,
            Object::Job(_) => Kind::Job,
            Object::DeviceClass(_) => Kind::DeviceClass,
            Object::ResourceClaim(_) => Kind::ResourceClaim,
            Object::ResourceClaimTemplate(_) => Kind::ResourceClaimTemplate,
            Object::ResourceSlice(_) => Kind::ResourceSlice,
        }
    }

    /// The object's metadata.
    pub fn meta(&self) -> &ObjectMeta {
        each_kind!(self, o => &o.metadata)
    }

    /// The object's metadata, mutable.
    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        each_kind!(self, o => &mut o.metadata)
    }

    /// The object's `apiVersion` and `kind` fields, as written in it (empty when left out).
    pub fn type_meta(&self) -> (&str, &str) {
        each_kind!(self, o => (o.api_version.as_str(), o.kind.as_str()))
    }

    /// Fills in `apiVersion` and `kind` from the object's kind where they are empty.
    pub fn fill_type_meta(&mut self) {
        let kind = self.kind();
        let (api_version, kind_field) = each_kind!(self, o => (&mut o.api_version, &mut o.kind));
        if api_version.is_empty() {
            *api_version = kind.api_version().to_string();
        }
        if kind_field.is_empty() {
            *kind_field = kind.as_str().to_string();
        }
    }

    /// Reads an object of `kind` from its Kubernetes form (JSON, YAML, a `serde_json::Value`)
    /// through any serde deserializer, so that the caller chooses how errors carry the
    /// field's path. `apiVersion` and `kind` are filled in where left out; what they say
    /// otherwise is the caller's to check against `kind` ([`Object::type_meta`]).
    pub fn deserialize_as<'de, D: Deserializer<'de>>(
        kind: Kind,
        deserializer: D,
    ) -> Result<Object, D::Error> {
        let mut object = match kind {
            Kind::Pod => Object::Pod(Deserialize::deserialize(deserializer)?),
            Kind::Node => Object::Node(Deserialize::deserialize(deserializer)?),
            Kind::PriorityClass => Object::PriorityClass(Deserialize::deserialize(deserializer)?),
            Kind::Event => Object::Event(Deserialize::deserialize(deserializer)?),
            Kind::Namespace => Object::Namespace(Deserialize::deserialize(deserializer)?),
            Kind::RuntimeClass => Object::RuntimeClass(Deserialize::deserialize(deserializer)?),
            Kind::PodDisruptionBudget => {
                Object::PodDisruptionBudget(Deserialize::deserialize(deserializer)?)
            }
            Kind::Deployment => Object::Deployment(Deserialize::deserialize(deserializer)?),
            Kind::ReplicaSet => Object::ReplicaSet(Deserialize::deserialize(deserializer)?),
            Kind::DaemonSet => Object::DaemonSet(Deserialize::deserialize(deserializer)?),
            Kind::ResourceQuota => Object::ResourceQuota(Deserialize::deserialize(deserializer)?),
            Kind::Job => Object::Job(Deserialize::deserialize(deserializer)?),
            Kind::DeviceClass => Object::DeviceClass(Deserialize::deserialize(deserializer)?),
            Kind::ResourceClaim => Object::ResourceClaim(Deserialize::deserialize(deserializer)?),
            Kind::ResourceClaimTemplate => {
                Object::ResourceClaimTemplate(Deserialize::deserialize(deserializer)?)
            }
            Kind::ResourceSlice => Object::ResourceSlice(Deserialize::deserialize(deserializer)?),
        };
        object.fill_type_meta();
        Ok(object)
    }

    /// Reads an object of `kind` from its Kubernetes JSON.
    pub fn from_json(kind: Kind, json: &[u8]) -> Result<Object, serde_json::Error> {
        Object::deserialize_as(kind, &mut serde_json::Deserializer::from_slice(json))
    }

    /// The object's Kubernetes JSON, as `kubectl get -o json` shows it (compact).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("model objects serialize to JSON")
    }

    /// The object's key: `namespace/name` for namespaced kinds, `name` otherwise.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.kind(), &self.meta().namespace, &self.meta().name)
    }
}

impl Serialize for Object {
    /// The object's Kubernetes JSON form, `apiVersion` and `kind` first and filled in when the
    /// object leaves them empty.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let kind = self.kind();
        if self.type_meta() == (kind.api_version(), kind.as_str()) {
            each_kind!(self, o => o.serialize(serializer))
        } else {
            let mut typed = self.clone();
            let (api_version, kind_field) =
                each_kind!(&mut typed, o => (&mut o.api_version, &mut o.kind));
            *api_version = kind.api_version().to_string();
            *kind_field = kind.as_str().to_string();
            each_kind!(&typed, o => o.serialize(serializer))
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_as_kubectl_names_them() {
        struct Case {
            name: &'static str,
            inputs: &'static [&'static str],
            want: Kind,
            api_version: &'static str,
            namespaced: bool,
        }
        let cases = [
            Case {
                name: "pod",
                inputs: &["pod", "pods", "po", "Pods"],
                want: Kind::Pod,
                api_version: "v1",
                namespaced: true,
            },
            Case {
                name: "node",
                inputs: &["node", "nodes", "no"],
                want: Kind::Node,
                api_version: "v1",
                namespaced: false,
            },
            Case {
                name: "priority class",
                inputs: &["priorityclass", "priorityclasses", "pc"],
                want: Kind::PriorityClass,
                api_version: "scheduling.k8s.io/v1",
                namespaced: false,
            },
            Case {
                name: "event",
                inputs: &["event", "events", "ev"],
                want: Kind::Event,
                api_version: "v1",
                namespaced: true,
            },
            Case {
                name: "namespace",
                inputs: &["namespace", "namespaces", "ns", "NS"],
                want: Kind::Namespace,
                api_version: "v1",
                namespaced: false,
            },
            Case {
                name: "runtime class",
                inputs: &["runtimeclass", "runtimeclasses", "RuntimeClass"],
                want: Kind::RuntimeClass,
                api_version: "node.k8s.io/v1",
                namespaced: false,
            },
            Case {
                name: "pdb",
                inputs: &["poddisruptionbudget", "poddisruptionbudgets", "pdb"],
                want: Kind::PodDisruptionBudget,
                api_version: "policy/v1",
                namespaced: true,
            },
            Case {
                name: "deployment",
                inputs: &["deployment", "deployments", "deploy"],
                want: Kind::Deployment,
                api_version: "apps/v1",
                namespaced: true,
            },
            Case {
                name: "replica set",
                inputs: &["replicaset", "replicasets", "rs"],
                want: Kind::ReplicaSet,
                api_version: "apps/v1",
                namespaced: true,
            },
            Case {
                name: "daemon set",
                inputs: &["daemonset", "daemonsets", "ds"],
                want: Kind::DaemonSet,
                api_version: "apps/v1",
                namespaced: true,
            },
            Case {
                name: "resource quota",
                inputs: &["resourcequota", "resourcequotas", "quota"],
                want: Kind::ResourceQuota,
                api_version: "v1",
                namespaced: true,
            },
            Case {
                name: "job",
                inputs: &["job", "jobs", "Jobs"],
                want: Kind::Job,
                api_version: "batch/v1",
                namespaced: true,
            },
            Case {
                name: "device class",
                inputs: &["deviceclass", "deviceclasses", "DeviceClasses"],
                want: Kind::DeviceClass,
                api_version: "resource.k8s.io/v1",
                namespaced: false,
            },
            Case {
                name: "resource claim",
                inputs: &["resourceclaim", "resourceclaims"],
                want: Kind::ResourceClaim,
                api_version: "resource.k8s.io/v1",
                namespaced: true,
            },
            Case {
                name: "resource claim template",
                inputs: &["resourceclaimtemplate", "resourceclaimtemplates"],
                want: Kind::ResourceClaimTemplate,
                api_version: "resource.k8s.io/v1",
                namespaced: true,
            },
            Case {
                name: "resource slice",
                inputs: &["resourceslice", "resourceslices"],
                want: Kind::ResourceSlice,
                api_version: "resource.k8s.io/v1",
                namespaced: false,
            },
        ];
        assert_eq!(cases.len(), Kind::ALL.len(), "one case per kind");
        for case in cases {
            for input in case.inputs {
                assert_eq!(
                    Kind::from_cli(input),
                    Some(case.want),
                    "{}: {input}",
                    case.name
                );
            }
            assert_eq!(
                Kind::from_cli(case.want.as_str()),
                Some(case.want),
                "{}: as_str",
                case.name
            );
            assert_eq!(case.want.api_version(), case.api_version, "{}", case.name);
            assert_eq!(case.want.is_namespaced(), case.namespaced, "{}", case.name);
        }
        for unknown in ["", "svc", "deploymentz", "quotas", "deployments.apps"] {
            assert_eq!(Kind::from_cli(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn all_lists_each_kind_once() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in Kind::ALL {
            assert!(seen.insert(kind), "{kind} listed twice");
        }
    }

    #[test]
    fn cluster_scoped_keys_drop_the_namespace() {
        let ns = Object::Namespace(Box::new(Namespace::new("team-a")));
        assert_eq!(ns.key(), ObjectKey::new(Kind::Namespace, "", "team-a"));
        assert_eq!(
            ObjectKey::new(Kind::RuntimeClass, "default", "kata").namespace,
            ""
        );
        assert_eq!(
            ObjectKey::new(Kind::Deployment, "default", "web").to_string(),
            "Deployment default/web"
        );
    }

    #[test]
    fn json_form_carries_api_version_and_kind_first_and_reads_back() {
        for kind in Kind::ALL {
            let mut bare = serde_json::json!({"metadata": {"name": "x"}});
            // The fields some kinds require besides metadata.
            match kind {
                Kind::PriorityClass => bare["value"] = 1000.into(),
                Kind::RuntimeClass => bare["handler"] = "runc".into(),
                Kind::Event => {
                    bare["involvedObject"] = serde_json::json!({"kind": "Pod", "name": "web"});
                    bare["reason"] = "Scheduled".into();
                }
                _ => {}
            }
            let mut typed = bare.clone();
            typed["apiVersion"] = kind.api_version().into();
            typed["kind"] = kind.as_str().into();
            for (case, json) in [("type meta left out", bare), ("type meta given", typed)] {
                let json = serde_json::to_vec(&json).expect("serializes");
                let object = Object::from_json(kind, &json)
                    .unwrap_or_else(|e| panic!("{kind}, {case}: {e}"));
                assert_eq!(object.kind(), kind, "{kind}, {case}");
                assert_eq!(
                    object.type_meta(),
                    (kind.api_version(), kind.as_str()),
                    "{kind}, {case}: filled in"
                );
                let text = String::from_utf8(object.to_json()).expect("JSON is UTF-8");
                let head = format!(
                    r#"{{"apiVersion":"{}","kind":"{kind}","#,
                    kind.api_version()
                );
                assert!(text.starts_with(&head), "{kind}, {case}: {text}");
                let again = Object::from_json(kind, text.as_bytes()).expect("reads back");
                assert_eq!(again, object, "{kind}, {case}: round trip");
            }
        }
    }

    #[test]
    fn serializing_an_object_without_type_meta_fills_it_in() {
        let mut ns = Namespace::new("team-a");
        ns.api_version.clear();
        ns.kind.clear();
        let value = serde_json::to_value(Object::Namespace(Box::new(ns))).expect("serializes");
        assert_eq!(
            value,
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        );
    }

    #[test]
    fn json_errors_come_from_the_kind_s_own_type() {
        let err = Object::from_json(Kind::Pod, br#"{"spec":{"containerz":[]}}"#)
            .expect_err("unknown field");
        assert!(
            err.to_string().contains("unknown field `containerz`"),
            "{err}"
        );
        // A Node has no `spec.containers`: the kind decides the type.
        let err = Object::from_json(Kind::Node, br#"{"spec":{"containers":[]}}"#)
            .expect_err("not a node field");
        assert!(
            err.to_string().contains("unknown field `containers`"),
            "{err}"
        );
    }

    /// Fields whose JSON names keep kube's capitalised acronyms (`hostPID`, `podCIDR`, ...)
    /// rather than the camelCase of their Rust names, as kube writes them; a manifest
    /// spelling them another way is refused as an unknown field, as kube's strict decoding does.
    #[test]
    fn acronym_fields_take_kubes_spelling() {
        let decode =
            |kind: Kind, v: serde_json::Value| Object::from_json(kind, v.to_string().as_bytes());
        let pod = decode(
            Kind::Pod,
            serde_json::json!({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "i",
                                         "ports": [{"containerPort": 80, "hostIP": "10.0.0.1"}]}],
                         "hostPID": true, "hostIPC": true, "setHostnameAsFQDN": true},
                "status": {"hostIP": "10.0.0.2", "hostIPs": [{"ip": "10.0.0.2"}],
                           "podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}]}
            }),
        )
        .expect("a pod with kube's field names decodes");
        let Object::Pod(pod) = pod else {
            panic!("not a pod")
        };
        assert_eq!(pod.status.host_ip, "10.0.0.2");
        assert_eq!(pod.spec.containers[0].ports[0].host_ip, "10.0.0.1");
        let written = serde_json::to_value(&pod).unwrap();
        assert_eq!(written["status"]["hostIP"], "10.0.0.2", "{written}");
        // What older builds stored.
        let stored: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"}, "spec": {"containers": []}, "status": {"hostIp": "10.0.0.3"}
        }))
        .expect("the earlier spelling of status.hostIP still reads");
        assert_eq!(stored.status.host_ip, "10.0.0.3");

        let node = decode(
            Kind::Node,
            serde_json::json!({
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"],
                         "providerID": "aws:///i-1", "externalID": "i-1"}
            }),
        )
        .expect("a node with kube's field names decodes");
        assert!(matches!(node, Object::Node(_)));
        for (kind, field) in [
            (Kind::Pod, "hostPid"),
            (Kind::Node, "podCidr"),
            (Kind::Node, "providerId"),
        ] {
            let spec = if kind == Kind::Pod {
                serde_json::json!({"containers": [], field: true})
            } else {
                serde_json::json!({field: "x"})
            };
            let err = decode(kind, serde_json::json!({
                "apiVersion": "v1", "kind": kind.as_str(), "metadata": {"name": "x"}, "spec": spec
            }))
            .expect_err(field);
            assert!(
                err.to_string()
                    .contains(&format!("unknown field `{field}`")),
                "{err}"
            );
        }
    }
}
