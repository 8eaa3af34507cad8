//! End-to-end tests of Berth's security and robustness at the API edge, over the real
//! binaries on loopback: bearer tokens and roles, NodeRestriction for node credentials, TLS
//! with real handshakes (and a refused wrong CA), and malformed or oversized requests that
//! must be refused without harming the server (issue 6).

mod common;

use berth_proto::model::{EnvVar, Pod};
use berth_proto::{pb, wire};
use common::{channel, objects, pod_yaml, runtime, str_at, wait_until, Security, TestCluster};

const ADMIN: &str = "admin-5f0c1d";
const VIEWER: &str = "viewer-9a7e21";
const NODE_A: &str = "node-a-3c44b0";
const NODE_B: &str = "node-b-77d1e8";

/// Writes the token file of these tests into `dir` and returns the scheduler flag for it.
fn token_file(dir: &std::path::Path) -> Vec<String> {
    let path = dir.join("tokens.csv");
    let text = format!(
        "# TOKEN,NAME,ROLE\n{ADMIN},alice,admin\n\"{VIEWER}\",\"bob\",viewer\n{NODE_A},node-a,node\n{NODE_B},node-b,node\n"
    );
    std::fs::write(&path, text).expect("writing the token file");
    vec!["--token-file".into(), path.display().to_string()]
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Fails the test unless the run failed with `want` in its stderr; `why` names the case.
fn assert_cli_refused(out: &std::process::Output, want: &str, why: &str) {
    assert!(!out.status.success(), "{why}");
    assert!(stderr(out).contains(want), "{why}: {}", stderr(out));
}

fn node_names(cluster: &TestCluster) -> String {
    cluster.berth_ok(&["get", "nodes"])
}

#[test]
fn tokens_and_roles_gate_every_call_and_node_credentials_are_restricted() {
    let mut cluster = TestCluster::start_with(|dir| Security {
        scheduler_args: token_file(dir),
        cli_token: Some(ADMIN.into()),
        ca: None,
    });
    let pod = cluster.manifest("web.yaml", &pod_yaml("web", "100m", "", ""));
    let pod = pod.to_str().unwrap();

    // Missing and unknown tokens: Unauthenticated.
    let get_pods = ["get", "pods"];
    assert_cli_refused(
        &cluster.berth_as(None, &get_pods),
        "missing credentials",
        "a call without a token must fail",
    );
    assert_cli_refused(
        &cluster.berth_as(Some("not-a-token"), &get_pods),
        "invalid bearer token",
        "an unknown token must fail",
    );

    // A viewer reads but may not write; a node token may not use the user API at all.
    let out = cluster.berth_as(Some(VIEWER), &get_pods);
    assert!(out.status.success(), "a viewer may list: {}", stderr(&out));
    assert_cli_refused(
        &cluster.berth_as(Some(VIEWER), &["apply", "-f", pod]),
        "role viewer (\"bob\") may not call berth.v1.Berth/Apply",
        "a viewer may not apply, and is told the role and the method",
    );
    assert_cli_refused(
        &cluster.berth_as(Some(NODE_A), &get_pods),
        "role node",
        "a node token may not list pods",
    );
    assert!(!node_names(&cluster).contains("web"), "nothing was written");

    // The admin writes; an agent with its node token registers and runs the pod.
    cluster.berth_ok(&["apply", "-f", pod]);
    cluster.start_agent_with("node-a", "2", "4Gi", &[], &[("BERTH_TOKEN", NODE_A)]);
    wait_until("the pod runs on node-a", || {
        let pod = cluster.pod_json("web");
        str_at(&pod, "/status/phase") == "Running" && str_at(&pod, "/spec/nodeName") == "node-a"
    });

    // An agent without a token is refused.
    cluster.start_agent_with("anonymous", "2", "4Gi", &[], &[]);
    wait_until("the anonymous agent is refused", || {
        cluster.log_of("anonymous").contains("missing credentials")
    });
    // node-a's credential is bound to node-a: it may not register another node.
    cluster.start_agent_with("impostor", "2", "4Gi", &[], &[("BERTH_TOKEN", NODE_A)]);
    wait_until("the impostor is refused", || {
        let log = cluster.log_of("impostor");
        log.contains("is bound to node") && log.contains("may not register node")
    });
    // A node may not give itself a node-restriction.kubernetes.io label.
    cluster.start_agent_with(
        "node-b",
        "2",
        "4Gi",
        &["--labels", "node-restriction.kubernetes.io/trusted=yes"],
        &[("BERTH_TOKEN", NODE_B)],
    );
    wait_until("the self-labelling node is refused", || {
        cluster.log_of("node-b").contains(
            "is not allowed to set the following labels: node-restriction.kubernetes.io/trusted",
        )
    });
    let nodes = node_names(&cluster);
    for refused in ["anonymous", "impostor", "node-b"] {
        assert!(
            !nodes.contains(refused),
            "{refused} must not be registered: {nodes}"
        );
    }

    // The binding is stored with the node, so it survives a scheduler restart.
    cluster.agent("impostor").kill();
    cluster.scheduler.as_mut().unwrap().kill();
    cluster.start_scheduler();
    cluster.start_agent_with("impostor-2", "2", "4Gi", &[], &[("BERTH_TOKEN", NODE_A)]);
    wait_until("the impostor is refused after the restart", || {
        cluster
            .log_of("impostor-2")
            .contains("it may not register node")
    });
    wait_until("node-a is back", || {
        node_names(&cluster)
            .lines()
            .any(|l| l.starts_with("node-a ") && l.contains(" Ready"))
    });
    assert!(!node_names(&cluster).contains("impostor"));
}

#[test]
fn tls_handshakes_with_the_right_ca_and_refuses_a_wrong_one() {
    let mut wrong_ca = None;
    let mut cluster = TestCluster::start_with(|dir| {
        let tls = berth_cli::dev::generate_tls(&dir.join("tls"), &["127.0.0.1", "localhost"])
            .expect("making a CA");
        let other = berth_cli::dev::generate_tls(&dir.join("other"), &["127.0.0.1"])
            .expect("making a second CA");
        wrong_ca = Some(other.ca);
        let mut scheduler_args = token_file(dir);
        scheduler_args.extend([
            "--tls-cert".into(),
            tls.cert.display().to_string(),
            "--tls-key".into(),
            tls.key.display().to_string(),
        ]);
        Security {
            scheduler_args,
            cli_token: Some(ADMIN.into()),
            ca: Some(tls.ca),
        }
    });
    let wrong_ca = wrong_ca.expect("set by the closure");
    // Starting the cluster already listed nodes over TLS with the right CA. An agent does
    // too, and runs a pod.
    cluster.start_agent_with("node-a", "2", "4Gi", &[], &[("BERTH_TOKEN", NODE_A)]);
    let pod = cluster.manifest("web.yaml", &pod_yaml("web", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", pod.to_str().unwrap()]);
    wait_until("the pod runs over TLS", || {
        str_at(&cluster.pod_json("web"), "/status/phase") == "Running"
    });

    // The certificate names localhost too.
    let server = cluster.server();
    let port = cluster.port.to_string();
    let by_name = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args([
            "get",
            "pods",
            "--server",
            &format!("https://localhost:{port}"),
        ])
        .env("BERTH_TOKEN", ADMIN)
        .env("BERTH_CA", cluster.security.ca.as_ref().unwrap())
        .env("BERTH_CONFIG", cluster.dir.path().join("no-config"))
        .output()
        .expect("running berth");
    assert!(by_name.status.success(), "localhost: {}", stderr(&by_name));

    // A CA that did not sign the server's certificate: the handshake fails.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["get", "pods", "--server", &server])
        .env("BERTH_TOKEN", ADMIN)
        .env("BERTH_CA", &wrong_ca)
        .env("BERTH_CONFIG", cluster.dir.path().join("no-config"))
        .output()
        .expect("running berth");
    assert!(!refused.status.success(), "a wrong CA must be refused");
    let message = stderr(&refused).to_lowercase();
    assert!(
        message.contains("certificate") || message.contains("unknownissuer"),
        "says the certificate is not trusted: {message}"
    );
    // Plaintext to a TLS port fails too.
    let plain = std::process::Command::new(env!("CARGO_BIN_EXE_berth"))
        .args([
            "get",
            "pods",
            "--server",
            &format!("http://127.0.0.1:{port}"),
        ])
        .env("BERTH_TOKEN", ADMIN)
        .env("BERTH_CONFIG", cluster.dir.path().join("no-config"))
        .env_remove("BERTH_CA")
        .output()
        .expect("running berth");
    assert!(!plain.status.success(), "plaintext to a TLS port must fail");
}

/// Asserts a call failed with `code` and a message containing `want`.
fn assert_refused<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, tonic::Status>,
    code: tonic::Code,
    want: &str,
) {
    match result {
        Ok(v) => panic!("{what}: expected {code:?}, got a response {v:?}"),
        Err(status) => {
            assert_eq!(status.code(), code, "{what}: {}", status.message());
            assert!(
                status.message().contains(want),
                "{what}: message {:?} should contain {want:?}",
                status.message()
            );
        }
    }
}

/// A valid pod, changed by `edit` before it goes on the wire (past the CLI's validation).
fn pod_with(name: &str, edit: impl FnOnce(&mut Pod)) -> pb::Object {
    let object = objects(&pod_yaml(name, "100m", "", "")).remove(0);
    let mut pod = wire::pod_from_pb(Some(&object), "pod").expect("a pod");
    edit(&mut pod);
    wire::pod_to_pb(&pod)
}

/// Gives the pod's first container `count` environment variables of `bytes` each.
fn env_of(pod: &mut Pod, count: usize, bytes: usize) {
    let container = &mut pod.spec.containers[0];
    for i in 0..count {
        container.env.push(EnvVar {
            name: format!("FILL_{i}"),
            value: "v".repeat(bytes),
            ..Default::default()
        });
    }
}

#[test]
fn malformed_and_oversized_requests_are_refused_without_harming_the_server() {
    let mut cluster = TestCluster::start();
    let rt = runtime();
    let channel = channel(&rt, &cluster);
    let mut api = common::api(&channel);
    let mut agents = pb::agent_client::AgentClient::new(channel.clone())
        .max_encoding_message_size(64 * 1024 * 1024);

    let apply = |objects: Vec<pb::Object>| pb::ApplyRequest {
        objects,
        dry_run: false,
    };
    // An object with no kind.
    let r = rt.block_on(api.apply(apply(vec![pb::Object::default()])));
    assert_refused("empty object", r, tonic::Code::InvalidArgument, "object 1");
    // A label value far past 63 characters.
    let huge_label = pod_with("huge-label", |pod| {
        pod.metadata
            .labels
            .insert("app".into(), "x".repeat(100_000));
    });
    let r = rt.block_on(api.apply(apply(vec![huge_label])));
    assert_refused(
        "huge label value",
        r,
        tonic::Code::InvalidArgument,
        "huge-label",
    );
    // An object over the per-object limit: 2 MiB of environment.
    let too_big = pod_with("too-big", |pod| env_of(pod, 8, 256 * 1024));
    let r = rt.block_on(api.apply(apply(vec![too_big])));
    assert_refused(
        "object too large",
        r,
        tonic::Code::InvalidArgument,
        "pod \"too-big\" is too large",
    );
    // A request over the message limit, from objects each under the object limit.
    let many: Vec<pb::Object> = (0..17)
        .map(|i| pod_with(&format!("part-{i}"), |pod| env_of(pod, 1, 1024 * 1024)))
        .collect();
    let r = rt.block_on(api.apply(apply(many)));
    assert_refused(
        "request too large",
        r,
        tonic::Code::OutOfRange,
        "message length too large",
    );
    // More objects than one apply may carry.
    let r = rt.block_on(api.apply(apply(vec![pb::Object::default(); 10_001])));
    assert_refused(
        "too many objects",
        r,
        tonic::Code::InvalidArgument,
        "at most 10000 objects",
    );
    // A kind that does not exist, a bad selector, a bogus watch version.
    let r = rt.block_on(api.get(pb::GetRequest {
        kind: 999,
        namespace: String::new(),
        name: "x".into(),
    }));
    assert_refused("unknown kind", r, tonic::Code::InvalidArgument, "");
    let r = rt.block_on(api.list(pb::ListRequest {
        kind: pb::Kind::Pod as i32,
        label_selector: "env in (a".into(),
        ..Default::default()
    }));
    assert_refused(
        "bad selector",
        r,
        tonic::Code::InvalidArgument,
        "invalid label selector",
    );
    let r = rt.block_on(api.watch(pb::WatchRequest {
        kind: pb::Kind::Pod as i32,
        resource_version: "bogus".into(),
        ..Default::default()
    }));
    assert_refused(
        "bogus watch version",
        r.map(|_| ()),
        tonic::Code::InvalidArgument,
        "not a resource version",
    );

    // Agent calls: a Register without a node or with an invalid name; sessions that do not
    // start with Hello, or send nothing at all.
    let r = rt.block_on(agents.register(pb::RegisterRequest::default()));
    assert_refused(
        "register without a node",
        r,
        tonic::Code::InvalidArgument,
        "node",
    );
    let bad_node = pb::Object {
        kind: pb::Kind::Node as i32,
        json: r#"{"metadata":{"name":"Bad_Name"}}"#.into(),
    };
    let r = rt.block_on(agents.register(pb::RegisterRequest {
        node: Some(bad_node),
        ..Default::default()
    }));
    assert_refused(
        "register an invalid name",
        r,
        tonic::Code::InvalidArgument,
        "Bad_Name",
    );
    let heartbeat_first = tonic::codegen::tokio_stream::iter(vec![pb::AgentMessage {
        msg: Some(pb::agent_message::Msg::Heartbeat(pb::Heartbeat {
            node_name: "n".into(),
            conditions_json: String::new(),
            ..Default::default()
        })),
    }]);
    let r = rt.block_on(agents.session(heartbeat_first));
    assert_refused(
        "session without Hello",
        r.map(|_| ()),
        tonic::Code::InvalidArgument,
        "must be Hello",
    );
    let r = rt.block_on(agents.session(tonic::codegen::tokio_stream::iter(
        Vec::<pb::AgentMessage>::new(),
    )));
    assert_refused(
        "empty session",
        r.map(|_| ()),
        tonic::Code::InvalidArgument,
        "must be Hello",
    );
    let hello_unknown = tonic::codegen::tokio_stream::iter(vec![pb::AgentMessage {
        msg: Some(pb::agent_message::Msg::Hello(pb::Hello {
            node_name: "never-registered".into(),
            running_pod_uids: vec!["x".repeat(10_000)],
        })),
    }]);
    let r = rt.block_on(agents.session(hello_unknown));
    assert_refused(
        "session of an unknown node",
        r.map(|_| ()),
        tonic::Code::FailedPrecondition,
        "not registered",
    );

    // The server is still up, and none of it was stored.
    let scheduler = cluster.scheduler.as_mut().unwrap();
    assert!(
        scheduler
            .child
            .try_wait()
            .expect("checking the scheduler")
            .is_none(),
        "the scheduler must survive bad input:\n{}",
        cluster.logs()
    );
    let pods = common::list_pods(&rt, &channel, None).expect("listing pods");
    assert!(pods.is_empty(), "nothing was stored: {pods:?}");
}

#[test]
fn berth_dev_secures_its_cluster_and_writes_a_client_config_that_works() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = dir.path().join("config");
    let port = common::free_port();
    let mut dev = common::spawn_berth_dev(dir.path(), &config, port, &["--tls", "--nodes", "1"]);
    let berth = |token: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .args(["get", "nodes"])
            .env("BERTH_CONFIG", &config)
            .env_remove("BERTH_SERVER")
            .env_remove("BERTH_CA")
            .env_remove("BERTH_TOKEN");
        if let Some(token) = token {
            command.env("BERTH_TOKEN", token);
        }
        command.output().expect("running berth")
    };
    wait_until(
        "berth dev is up and the CLI finds it through the config",
        || config.exists() && berth(None).status.success(),
    );
    let text = std::fs::read_to_string(&config).expect("the client config");
    assert!(
        text.contains(&format!("server: https://127.0.0.1:{port}")),
        "{text}"
    );
    assert!(text.contains("token: ") && text.contains("ca: "), "{text}");
    let tokens = std::fs::read_to_string(dir.path().join("data").join("tokens.csv"))
        .expect("the token file");
    assert!(
        tokens.contains(",admin,admin") && tokens.contains(",node-1,node"),
        "{tokens}"
    );
    let out = berth(None);
    assert!(String::from_utf8_lossy(&out.stdout).contains("node-1"));
    // The web view is on, at the printed address, with a viewer token that tokens.csv holds.
    let printed = std::fs::read_to_string(dir.path().join("dev.log")).expect("dev's output");
    let url = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("web:"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("berth dev prints the web view's address: {printed}"));
    let (addr, viewer) = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once("/?token="))
        .unwrap_or_else(|| panic!("an http://ADDR/?token=TOKEN address: {url}"));
    assert!(tokens.contains(&format!("{viewer},web,viewer")), "{tokens}");
    let (code, _) = common::http_get(addr, "/api/view", None).expect("GET /api/view");
    assert_eq!(code, 401, "the view needs the token");
    wait_until("the web view lists node-1 for the viewer token", || {
        common::http_get(addr, "/api/view", Some(viewer))
            .is_ok_and(|(code, body)| code == 200 && body.contains("\"name\":\"node-1\""))
    });
    // A token from the environment overrides the config's, and a wrong one is refused.
    assert_cli_refused(
        &berth(Some("wrong")),
        "invalid bearer token",
        "the environment's token is used",
    );
    // It serves metrics too, and prints how to scrape them (with the viewer token).
    let log = || std::fs::read_to_string(dir.path().join("dev.log")).unwrap_or_default();
    wait_until("berth dev prints its metrics address", || {
        log().contains("metrics: curl")
    });
    let text = log();
    let line = text
        .lines()
        .find(|l| l.contains("metrics: curl"))
        .expect("the metrics line");
    let token = line
        .split("Bearer ")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a token in the metrics line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .expect("an address in the metrics line");
    let (status, body) = common::http_get(addr, "/metrics", Some(token)).expect("scraping");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("berth_agent_sessions 1"), "{body}");
    let status = dev.terminate();
    assert!(status.success(), "berth dev stops cleanly: {status}");
}
