//! Manifests from the Kubernetes documentation for every kind Berth stores beyond pods and
//! nodes: they parse into the model (real `kubectl get -o yaml` output included), survive
//! YAML and JSON round trips, pass validation, and come back unchanged from the store.

use berth_proto::model::{
    DeploymentStrategyType, IntOrString, Kind, LabelSelector, Object, ResourceQuotaScope,
    ScopeSelectorOperator,
};
use berth_proto::validate::validate_object;
use berth_proto::Quantity;
use berth_store::{ObjectStore, Op, SledStore};

/// Parses one manifest into the model type its `kind` names.
fn try_parse(yaml: &str) -> Result<Object, String> {
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())?;
    let name = value["kind"].as_str().ok_or("manifest has no kind")?;
    let kind = Kind::from_cli(name).ok_or_else(|| format!("no model type for kind {name}"))?;
    Object::deserialize_as(kind, serde_yaml_ng::Deserializer::from_str(yaml))
        .map_err(|e| e.to_string())
}

fn parse(yaml: &str) -> Object {
    try_parse(yaml).unwrap_or_else(|e| panic!("manifest parses: {e}"))
}

/// The object as JSON: what the store writes and what `-o json` prints. Fields Berth
/// accepts and ignores are not written, so two objects that differ only in those compare
/// equal here.
fn json(object: &Object) -> serde_json::Value {
    serde_json::to_value(object).expect("model objects serialize")
}

fn yaml(object: &Object) -> String {
    serde_yaml_ng::to_string(&json(object)).expect("JSON values serialize to YAML")
}

/// The value a selector's `matchLabels` gives `key`; the selector must be set.
fn match_label<'a>(selector: &'a Option<LabelSelector>, key: &str) -> &'a str {
    &selector.as_ref().expect("a selector").match_labels[key]
}

fn q(s: &str) -> Quantity {
    Quantity::parse(s).expect("test quantity parses")
}

struct Case {
    name: &'static str,
    manifest: &'static str,
    want: Expect,
}

/// What a case's manifest must parse into, beyond the round trips every case gets.
struct Expect {
    kind: Kind,
    /// Checks on the parsed object.
    check: fn(&Object),
}

/// An [`Expect`] of kind `$kind` whose check runs `$body` with the typed object as `$x`.
macro_rules! expect {
    ($kind:ident, |$x:ident| $body:block) => {
        Expect {
            kind: Kind::$kind,
            check: |o| {
                let Object::$kind($x) = o else {
                    panic!("expected a {}, got {:?}", stringify!($kind), o.kind())
                };
                $body
            },
        }
    };
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "namespace (namespaces walkthrough)",
            manifest: include_str!("manifests/namespace-walkthrough.yaml"),
            want: expect!(Namespace, |ns| {
                assert_eq!(ns.metadata.labels["name"], "development");
            }),
        },
        Case {
            name: "namespace as kubectl get -o yaml prints it",
            manifest: include_str!("manifests/namespace-kubectl.yaml"),
            want: expect!(Namespace, |ns| {
                assert_eq!(ns.metadata.labels["kubernetes.io/metadata.name"], "team-a");
                assert_eq!(ns.phase(), "Active");
            }),
        },
        Case {
            name: "runtime class (pod overhead)",
            manifest: include_str!("manifests/runtime-class-overhead.yaml"),
            want: expect!(RuntimeClass, |rc| {
                let overhead = rc.overhead.as_ref().expect("overhead");
                assert_eq!(overhead.pod_fixed["cpu"], q("250m"));
                assert_eq!(overhead.pod_fixed["memory"], q("120Mi"));
                let scheduling = rc.scheduling.as_ref().expect("scheduling");
                assert_eq!(scheduling.node_selector["runtime"], "kata-fc");
                assert_eq!(scheduling.tolerations.len(), 1);
            }),
        },
        Case {
            name: "runtime class with a handler only",
            manifest: include_str!("manifests/runtime-class-handler-only.yaml"),
            want: expect!(RuntimeClass, |rc| {
                assert_eq!(rc.handler, "myconfiguration");
                assert!(rc.overhead.is_none() && rc.scheduling.is_none());
            }),
        },
        Case {
            name: "pdb with minAvailable",
            manifest: include_str!("manifests/pdb-min-available.yaml"),
            want: expect!(PodDisruptionBudget, |p| {
                assert_eq!(p.spec.min_available, Some(IntOrString::Int(2)));
                assert_eq!(p.spec.max_unavailable, None);
                assert_eq!(match_label(&p.spec.selector, "app"), "zookeeper");
            }),
        },
        Case {
            name: "pdb with a maxUnavailable percentage and status",
            manifest: include_str!("manifests/pdb-max-unavailable-kubectl.yaml"),
            want: expect!(PodDisruptionBudget, |p| {
                let max = p.spec.max_unavailable.as_ref().expect("maxUnavailable");
                assert_eq!(max, &IntOrString::String("50%".into()));
                assert_eq!(max.resolve(3), Ok(2), "50% of 3 rounds up");
                assert_eq!((p.status.current_healthy, p.status.desired_healthy), (3, 2));
                assert_eq!(
                    (p.status.disruptions_allowed, p.status.expected_pods),
                    (1, 3)
                );
            }),
        },
        Case {
            name: "deployment (nginx-deployment)",
            manifest: include_str!("manifests/deployment-nginx.yaml"),
            want: expect!(Deployment, |d| {
                assert_eq!(d.spec.replicas, 3);
                assert_eq!(d.spec.template.metadata.labels["app"], "nginx");
                assert_eq!(d.spec.template.spec.containers[0].image, "nginx:1.14.2");
                assert!(d.spec.strategy.is_none());
            }),
        },
        Case {
            name: "deployment as kubectl get -o yaml prints it",
            manifest: include_str!("manifests/deployment-kubectl.yaml"),
            want: expect!(Deployment, |d| {
                let strategy = d.spec.strategy.as_ref().expect("strategy");
                assert_eq!(strategy.type_, Some(DeploymentStrategyType::RollingUpdate));
                let ru = strategy.rolling_update.as_ref().expect("rollingUpdate");
                assert_eq!(ru.max_surge, Some(IntOrString::String("25%".into())));
                let s = &d.status;
                assert_eq!(
                    (
                        s.replicas,
                        s.ready_replicas,
                        s.available_replicas,
                        s.updated_replicas
                    ),
                    (3, 3, 3, 3)
                );
                assert_eq!(s.observed_generation, 1);
            }),
        },
        Case {
            name: "replica set (frontend)",
            manifest: include_str!("manifests/replica-set-frontend.yaml"),
            want: expect!(ReplicaSet, |rs| {
                assert_eq!(rs.spec.replicas, 3);
                assert_eq!(match_label(&rs.spec.selector, "tier"), "frontend");
            }),
        },
        Case {
            name: "replica set without replicas",
            manifest: include_str!("manifests/replica-set-no-replicas.yaml"),
            want: expect!(ReplicaSet, |rs| {
                assert_eq!(rs.spec.replicas, 1, "defaults to 1");
            }),
        },
        Case {
            name: "daemon set (fluentd-elasticsearch)",
            manifest: include_str!("manifests/daemon-set-fluentd.yaml"),
            want: expect!(DaemonSet, |ds| {
                assert_eq!(ds.metadata.namespace, "kube-system");
                let spec = &ds.spec.template.spec;
                assert_eq!(spec.tolerations.len(), 2);
                assert_eq!(spec.containers[0].resources.requests["cpu"], q("100m"));
                assert_eq!(spec.termination_grace_period_seconds, Some(30));
            }),
        },
        Case {
            name: "resource quota per priority class",
            manifest: include_str!("manifests/quota-priority-class.yaml"),
            want: expect!(ResourceQuota, |rq| {
                assert_eq!(rq.spec.hard["pods"], q("10"));
                let req = &rq.spec.scope_selector.as_ref().unwrap().match_expressions[0];
                assert_eq!(req.scope_name, ResourceQuotaScope::PriorityClass);
                assert_eq!(req.operator, ScopeSelectorOperator::In);
                assert_eq!(req.values, ["high"]);
            }),
        },
        Case {
            name: "compute resource quota with status",
            manifest: include_str!("manifests/quota-compute-status.yaml"),
            want: expect!(ResourceQuota, |rq| {
                assert_eq!(rq.spec.hard["requests.nvidia.com/gpu"], q("4"));
                assert_eq!(rq.spec.scopes, [ResourceQuotaScope::NotTerminating]);
                assert_eq!(rq.status.used["requests.cpu"], q("250m"));
            }),
        },
    ]
}

#[test]
fn documentation_manifests_parse_and_round_trip() {
    let store = SledStore::temporary().expect("temporary store");
    for case in cases() {
        let mut object = parse(case.manifest);
        assert_eq!(object.kind(), case.want.kind, "{}", case.name);
        (case.want.check)(&object);

        // YAML out and back in, then JSON out and back in: nothing Berth keeps is lost.
        let from_yaml = parse(&yaml(&object));
        assert_eq!(
            json(&from_yaml),
            json(&object),
            "{}: YAML round trip",
            case.name
        );

        if object.kind().is_namespaced() && object.meta().namespace.is_empty() {
            // The server's default, as admission applies it.
            object.meta_mut().namespace = "default".into();
        }
        if let Err(e) = validate_object(&object) {
            panic!("{}: the documentation's manifest is valid: {e}", case.name);
        }

        let mut changes = store
            .commit(vec![Op::Create(object.clone())])
            .unwrap_or_else(|e| panic!("{}: create: {e}", case.name));
        let stored = changes.pop().expect("one change").object;
        let got = store
            .get(&object.key())
            .expect("get")
            .unwrap_or_else(|| panic!("{}: stored object is found", case.name));
        assert_eq!(got, *stored, "{}: read back as committed", case.name);
        // Only the server-assigned identity differs from what was written.
        let mut want = object.clone();
        let meta = want.meta_mut();
        meta.uid.clone_from(&got.meta().uid);
        meta.resource_version
            .clone_from(&got.meta().resource_version);
        meta.creation_timestamp = got.meta().creation_timestamp;
        assert_eq!(json(&got), json(&want), "{}: store round trip", case.name);
    }
    // Each kind has its own tree: a listing returns only its kind.
    let deployments = store.list(Kind::Deployment, None).expect("list");
    assert_eq!(deployments.len(), 2);
    assert!(deployments.iter().all(|o| o.kind() == Kind::Deployment));
    let namespaces = store.list(Kind::Namespace, None).expect("list");
    let names: Vec<&str> = namespaces.iter().map(|o| o.meta().name.as_str()).collect();
    assert_eq!(names, ["development", "team-a"]);
}

#[test]
fn typos_are_refused() {
    struct Bad {
        name: &'static str,
        manifest: &'static str,
    }
    let cases = [
        Bad {
            name: "unknown pdb field",
            manifest: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {minAvailble: 1}\n",
        },
        Bad {
            name: "minAvailable neither int nor string",
            manifest: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {minAvailable: [1]}\n",
        },
        Bad {
            name: "unknown strategy type",
            manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {strategy: {type: BlueGreen}}\n",
        },
        Bad {
            name: "unknown quota scope",
            manifest: "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: x}\nspec: {scopes: [Everything]}\n",
        },
        Bad {
            name: "bad overhead quantity",
            manifest: "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: x\noverhead: {podFixed: {cpu: lots}}\n",
        },
    ];
    for case in cases {
        let refused = try_parse(case.manifest).is_err();
        assert!(refused, "{}: refused", case.name);
    }
}
