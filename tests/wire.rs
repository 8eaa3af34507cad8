//! The API as a client in another language sees it: objects written and read as their
//! Kubernetes JSON (built here with `serde_json::json!`, no Berth model types), refusals that
//! name the field, and gRPC reflection (v1 and v1alpha) describing that form.

mod common;

use berth_proto::pb;
use common::{channel, runtime, TestCluster};
use prost::Message;
use serde_json::json;

fn pod_message(pod: &serde_json::Value) -> pb::Object {
    pb::Object {
        kind: pb::Kind::Pod as i32,
        json: pod.to_string().into(),
    }
}

fn apply(pod: &serde_json::Value) -> pb::ApplyRequest {
    pb::ApplyRequest {
        objects: vec![pod_message(pod)],
        dry_run: false,
    }
}

#[test]
fn a_json_only_client_applies_and_reads_back_a_pod_and_bad_fields_are_named() {
    let cluster = TestCluster::start();
    let rt = runtime();
    let channel = channel(&rt, &cluster);
    let mut api = common::api(&channel);

    // apiVersion and kind may be left out: the message's kind says what this is.
    let pod = json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx",
                 "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}
    });
    let applied = rt
        .block_on(api.apply(apply(&pod)))
        .expect("a valid pod is stored")
        .into_inner();
    assert_eq!(applied.results.len(), 1);
    assert_eq!(applied.results[0].action, "created");
    assert_eq!(applied.results[0].namespace, "default");

    let got = rt
        .block_on(api.get(pb::GetRequest {
            kind: pb::Kind::Pod as i32,
            namespace: "default".into(),
            name: "web".into(),
        }))
        .expect("the pod reads back")
        .into_inner();
    assert_eq!(got.kind, pb::Kind::Pod as i32);
    let got: serde_json::Value = serde_json::from_str(&got.json).expect("the reply is JSON");
    assert_eq!(got["apiVersion"], "v1");
    assert_eq!(got["kind"], "Pod");
    assert_eq!(got["metadata"]["name"], "web");
    assert_eq!(got["metadata"]["namespace"], "default");
    assert_eq!(got["metadata"]["labels"]["app"], "web");
    // The scheduler may have written the pod since (no node fits it): at least this version.
    let version = |v: &str| v.parse::<u64>().expect("a resource version is a number");
    let stored = got["metadata"]["resourceVersion"]
        .as_str()
        .expect("a version");
    assert!(version(stored) >= version(&applied.results[0].resource_version));
    assert!(got["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| !u.is_empty()));
    assert_eq!(
        got["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "500m", "memory": "256Mi"})
    );

    // Bad input: INVALID_ARGUMENT naming the object, the field path and the problem.
    struct Case {
        name: &'static str,
        pod: serde_json::Value,
        want: &'static str,
    }
    let cases = [
        Case {
            name: "bad quantity",
            pod: json!({"metadata": {"name": "bad-cpu"},
                        "spec": {"containers": [{"name": "a", "image": "a",
                                 "resources": {"requests": {"cpu": "lots"}}}]}}),
            want: "object 1: spec.containers[0].resources.requests.cpu: \"lots\" is not a valid quantity",
        },
        Case {
            name: "misspelled field",
            pod: json!({"metadata": {"name": "typo"},
                        "spec": {"containers": [{"name": "a", "image": "a", "resoures": {}}]}}),
            want: "object 1: spec.containers[0].resoures: unknown field \"resoures\"",
        },
        Case {
            name: "JSON of another kind",
            pod: json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}),
            want: "object 1: kind: Invalid value: \"Node\"",
        },
        Case {
            name: "invalid value past decoding",
            pod: json!({"metadata": {"name": "Bad_Name"},
                        "spec": {"containers": [{"name": "a", "image": "a"}]}}),
            want: "metadata.name",
        },
    ];
    for case in cases {
        let status = rt
            .block_on(api.apply(apply(&case.pod)))
            .expect_err(case.name);
        assert_eq!(
            status.code(),
            tonic::Code::InvalidArgument,
            "{}: {}",
            case.name,
            status.message()
        );
        assert!(
            status.message().contains(case.want),
            "{}: {:?} should contain {:?}",
            case.name,
            status.message(),
            case.want
        );
    }

    // Nothing of the refused applies was stored.
    let listed = rt
        .block_on(api.list(pb::ListRequest {
            kind: pb::Kind::Pod as i32,
            ..Default::default()
        }))
        .expect("listing pods")
        .into_inner();
    let names: Vec<String> = listed
        .objects
        .iter()
        .map(|o| {
            let v: serde_json::Value = serde_json::from_str(&o.json).expect("JSON");
            v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(names, vec!["web".to_string()]);
}

/// Asks reflection of version `$v` (`v1`, `v1alpha`) for the file declaring a symbol, and
/// returns its encoded descriptors: the two versions' messages have the same shape.
macro_rules! file_containing {
    ($v:ident, $channel:expr, $symbol:expr) => {{
        use tonic_reflection::pb::$v::{
            server_reflection_client::ServerReflectionClient,
            server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
            ServerReflectionRequest,
        };
        let ask = ServerReflectionRequest {
            host: "localhost".into(),
            message_request: Some(MessageRequest::FileContainingSymbol($symbol.into())),
        };
        let mut replies = ServerReflectionClient::new($channel)
            .server_reflection_info(tonic::codegen::tokio_stream::iter(vec![ask]))
            .await
            .expect("reflection answers")
            .into_inner();
        let reply = replies
            .message()
            .await
            .expect("a reply")
            .expect("one reply");
        match reply.message_response {
            Some(MessageResponse::FileDescriptorResponse(files)) => files.file_descriptor_proto,
            other => panic!("expected file descriptors, got {other:?}"),
        }
    }};
}

/// The file that declares `symbol`, through reflection v1 or v1alpha, decoded.
async fn describe(
    channel: tonic::transport::Channel,
    symbol: &str,
    v1alpha: bool,
) -> prost_types::FileDescriptorProto {
    let encoded = if v1alpha {
        file_containing!(v1alpha, channel, symbol)
    } else {
        file_containing!(v1, channel, symbol)
    };
    let file = encoded.first().expect("the file declaring the symbol");
    prost_types::FileDescriptorProto::decode(file.as_slice()).expect("a file descriptor")
}

#[test]
fn reflection_describes_objects_as_kubernetes_json() {
    let cluster = TestCluster::start();
    let rt = runtime();
    let channel = channel(&rt, &cluster);
    for v1alpha in [false, true] {
        let file = rt.block_on(describe(channel.clone(), "berth.v1.Berth", v1alpha));
        assert_eq!(file.package(), "berth.v1", "v1alpha={v1alpha}");
        let object = file
            .message_type
            .iter()
            .find(|m| m.name() == "Object")
            .expect("berth.v1.Object is described");
        use prost_types::field_descriptor_proto::Type;
        let fields: Vec<(&str, Type)> = object
            .field
            .iter()
            .map(|f| (f.name(), f.r#type()))
            .collect();
        assert_eq!(
            fields,
            vec![("kind", Type::Enum), ("json", Type::String)],
            "v1alpha={v1alpha}"
        );
        let kinds = file
            .enum_type
            .iter()
            .find(|e| e.name() == "Kind")
            .expect("berth.v1.Kind is described");
        for kind in [
            "KIND_POD",
            "KIND_NODE",
            "KIND_DEPLOYMENT",
            "KIND_RESOURCE_QUOTA",
        ] {
            assert!(
                kinds.value.iter().any(|v| v.name() == kind),
                "v1alpha={v1alpha}: {kind}"
            );
        }
        // No mirrored model messages are left: objects are described by their JSON.
        for gone in ["Pod", "Node", "PodSpec", "ObjectMeta"] {
            assert!(
                !file.message_type.iter().any(|m| m.name() == gone),
                "v1alpha={v1alpha}: {gone} should not be a message"
            );
        }
    }
}
