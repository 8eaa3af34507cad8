//! End-to-end tests of kubectl's everyday verbs on a live cluster (issue 14 item 4):
//! `get -w` printing a line per change, `rollout status` returning when a rollout completes,
//! `wait`, `apply --dry-run` storing nothing and `diff`'s exit codes.

mod common;

use common::{display, pod_yaml, Lines, TestCluster};

fn cluster_with_node() -> TestCluster {
    let mut cluster = TestCluster::start();
    cluster.start_agent("n1", "4", "8Gi");
    cluster.wait_ready_nodes(1);
    cluster
}

/// The cells of a table line.
fn cells(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn get_watch_prints_a_line_per_change_and_ends_on_ctrl_c() {
    let cluster = cluster_with_node();
    let before = cluster.manifest("before.yaml", &pod_yaml("before", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", &display(&before)]);

    let mut watch = cluster.berth_spawn(&["get", "pods", "-w"]);
    let mut lines = Lines::of(&mut watch);
    let mut events = cluster.berth_spawn(&["get", "pods", "--watch", "--output-watch-events"]);
    let mut event_lines = Lines::of(&mut events);
    let header = lines.wait_for("with the header", |l| l.starts_with("NAME"));
    assert_eq!(
        cells(&header),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    lines.wait_for("for the pod listed first", |l| cells(l)[0] == "before");
    let header = event_lines.wait_for("with the header", |l| l.starts_with("EVENT"));
    assert_eq!(
        cells(&header),
        ["EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    event_lines.wait_for("for the pod listed first", |l| {
        cells(l)[..2] == ["ADDED", "before"]
    });

    // Applied after the watch began: a line when it is created, another when it runs.
    let web = cluster.manifest("web.yaml", &pod_yaml("web", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", &display(&web)]);
    lines.wait_for("when web is created", |l| {
        cells(l)[0] == "web" && cells(l)[2] == "Pending"
    });
    lines.wait_for("when web is Running", |l| {
        cells(l)[0] == "web" && cells(l)[2] == "Running"
    });
    event_lines.wait_for("when web is created", |l| cells(l)[..2] == ["ADDED", "web"]);
    // A deleted pod is printed once more, as it last was.
    cluster.berth_ok(&["delete", "pod", "web"]);
    event_lines.wait_for("when web is deleted", |l| {
        cells(l)[..2] == ["DELETED", "web"]
    });

    for (child, lines) in [(&mut watch, &lines), (&mut events, &event_lines)] {
        let interrupt = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill -INT");
        assert!(interrupt.success());
        let status = child.wait().expect("waiting for the watch");
        assert!(status.success(), "Ctrl-C ends a watch with 0: {status}");
        let headers = lines
            .seen
            .iter()
            .filter(|l| l.starts_with("NAME") || l.starts_with("EVENT"))
            .count();
        assert_eq!(headers, 1, "the header once: {:#?}", lines.seen);
    }
}

/// A Deployment of `replicas` pods running `image`.
fn deployment(replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - {{name: main, image: {image}, resources: {{requests: {{cpu: 100m}}}}}}\n"
    )
}

#[test]
fn rollout_status_returns_when_done_and_history_undo_restart_follow_revisions() {
    let cluster = cluster_with_node();
    let v1 = cluster.manifest("v1.yaml", &deployment(3, "nginx:1.26"));
    cluster.berth_ok(&["apply", "-f", &display(&v1)]);
    let out = cluster.berth_ok(&["rollout", "status", "deployment/web", "--timeout", "60s"]);
    let last = out.lines().last().unwrap_or_default();
    assert_eq!(last, "deployment \"web\" successfully rolled out", "{out}");
    for line in out.lines().filter(|l| *l != last) {
        assert!(
            line.starts_with("Waiting for deployment"),
            "kubectl's progress messages: {out}"
        );
    }
    let once = cluster.berth_ok(&["rollout", "status", "deployment", "web", "--watch=false"]);
    assert_eq!(once, "deployment \"web\" successfully rolled out\n");

    // A new image is revision 2; undo brings revision 1's template back as revision 3.
    let v2 = cluster.manifest("v2.yaml", &deployment(3, "nginx:1.27"));
    cluster.berth_ok(&["apply", "-f", &display(&v2)]);
    cluster.berth_ok(&["rollout", "status", "deployment/web", "--timeout", "60s"]);
    let history = cluster.berth_ok(&["rollout", "history", "deployment/web"]);
    assert_eq!(
        history,
        "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
    );
    let shown = cluster.berth_ok(&["rollout", "history", "deployment/web", "--revision", "1"]);
    assert!(
        shown.starts_with("deployment.apps/web with revision #1\nPod Template:\n")
            && shown.contains("nginx:1.26"),
        "{shown}"
    );
    let undone = cluster.berth_ok(&["rollout", "undo", "deployment/web"]);
    assert_eq!(undone, "deployment.apps/web rolled back\n");
    cluster.berth_ok(&["rollout", "status", "deployment/web", "--timeout", "60s"]);
    let history = cluster.berth_ok(&["rollout", "history", "deployment/web"]);
    assert_eq!(
        history,
        "deployment.apps/web \nREVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n\n"
    );
    let json = cluster.berth_ok(&["get", "deployment", "web", "-o", "json"]);
    assert!(
        json.contains("nginx:1.26"),
        "rolled back to the first image: {json}"
    );
    let again = cluster.berth_ok(&["rollout", "undo", "deployment/web", "--to-revision", "3"]);
    assert_eq!(
        again,
        "deployment.apps/web skipped rollback (current template already matches revision 3)\n"
    );
    let missing = cluster.berth(&["rollout", "undo", "deployment/web", "--to-revision", "9"]);
    assert!(!missing.status.success());
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "error: unable to find specified revision 9 in history\n"
    );

    // A restart stamps the template, which is a new revision rolled out like any other.
    let restarted = cluster.berth_ok(&["rollout", "restart", "deployment/web"]);
    assert_eq!(restarted, "deployment.apps/web restarted\n");
    let json = cluster.berth_ok(&["get", "deployment", "web", "-o", "json"]);
    assert!(json.contains("kubectl.kubernetes.io/restartedAt"), "{json}");
    cluster.berth_ok(&["rollout", "status", "deployment/web", "--timeout", "60s"]);
    let history = cluster.berth_ok(&["rollout", "history", "deployment/web"]);
    assert!(history.ends_with("4         <none>\n\n"), "{history}");
}

#[test]
fn wait_returns_when_the_condition_is_met_and_times_out_with_kubectls_error() {
    let cluster = cluster_with_node();
    let web = cluster.manifest("web.yaml", &pod_yaml("web", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", &display(&web)]);
    let out = cluster.berth_ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/web",
        "--timeout",
        "60s",
    ]);
    assert_eq!(out, "pod/web condition met\n");
    let out = cluster.berth_ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pods",
        "web",
    ]);
    assert_eq!(out, "pod/web condition met\n");

    // The same pod through -o jsonpath and -o custom-columns.
    let names = cluster.berth_ok(&["get", "pods", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(names, "web");
    let phase = cluster.berth_ok(&["get", "pod", "web", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Running");
    let columns = cluster.berth_ok(&[
        "get",
        "pods",
        "-o",
        "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,GATES:.spec.schedulingGates",
    ]);
    assert_eq!(columns, "NAME   NODE   GATES\nweb    n1     <none>\n");
    let bad = cluster.berth(&["get", "pods", "-o", "jsonpath={.items["]);
    assert!(!bad.status.success());

    let never = cluster.berth(&[
        "wait",
        "--for=condition=Ready=false",
        "pod/web",
        "--timeout",
        "1s",
    ]);
    assert_eq!(never.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&never.stderr),
        "error: timed out waiting for the condition on pods/web\n"
    );
    let missing = cluster.berth(&["wait", "--for=condition=Ready", "pod/nope"]);
    assert!(!missing.status.success());

    let mut deleted = cluster.berth_spawn(&["wait", "--for=delete", "pod/web", "--timeout", "60s"]);
    let mut lines = Lines::of(&mut deleted);
    cluster.berth_ok(&["delete", "pod", "web"]);
    let line = lines.wait_for("when web is deleted", |_| true);
    assert_eq!(line, "pod/web condition met");
    assert!(deleted.wait().expect("wait exits").success());
}

#[test]
fn version_asks_the_server_and_get_all_lists_the_workload_kinds() {
    let cluster = TestCluster::start();
    let want = format!("v{}", env!("CARGO_PKG_VERSION"));
    let out = cluster.berth_ok(&["version"]);
    assert_eq!(
        out,
        format!("Client Version: {want}\nServer Version: {want}\n")
    );
    let json: serde_json::Value =
        serde_json::from_str(&cluster.berth_ok(&["version", "-o", "json"])).expect("JSON");
    assert_eq!(json["serverVersion"]["gitVersion"], want.as_str(), "{json}");
    // With nothing listening: the client's version, then the error.
    let port = common::free_port();
    let down = cluster.berth(&["version", "--server", &format!("127.0.0.1:{port}")]);
    assert_eq!(down.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&down.stdout),
        format!("Client Version: {want}\n")
    );
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("cannot reach the Berth scheduler"),
        "{down:?}"
    );

    let empty = cluster.berth(&["get", "all"]);
    assert!(empty.status.success());
    assert_eq!(
        String::from_utf8_lossy(&empty.stderr),
        "No resources found in default namespace.\n"
    );
    let pod = cluster.manifest("web.yaml", &pod_yaml("web", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", &display(&pod)]);
    let job = cluster.manifest(
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: pi, image: sh}]\n",
    );
    cluster.berth_ok(&["apply", "-f", &display(&job)]);
    let all = cluster.berth_ok(&["get", "all", "-o", "name"]);
    let names: Vec<&str> = all.lines().collect();
    assert!(names.contains(&"pod/web"), "{all}");
    assert_eq!(names.last(), Some(&"job.batch/pi"), "jobs come last: {all}");

    let resources = cluster.berth_ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(resources.lines().any(|l| l == "nodes"), "{resources}");
    assert!(!resources.lines().any(|l| l == "pods"), "{resources}");
}

/// A Deployment `web` of `replicas` pods, for create, diff and edit.
fn web_deployment(replicas: u32) -> String {
    deployment(replicas, "nginx:1.26")
}

#[test]
fn create_diff_edit_and_dry_runs_like_kubectl() {
    let cluster = TestCluster::start();
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let stdout = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();

    // create: kubectl's generators, a taken name refused, dry runs storing nothing.
    assert_eq!(
        cluster.berth_ok(&["create", "namespace", "dev"]),
        "namespace/dev created\n"
    );
    let again = cluster.berth(&["create", "ns", "dev"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(stderr(&again), "error: namespaces \"dev\" already exists\n");
    assert_eq!(
        cluster.berth_ok(&[
            "create",
            "priorityclass",
            "high",
            "--value=1000",
            "--description=web tier"
        ]),
        "priorityclass.scheduling.k8s.io/high created\n"
    );
    let pc = cluster.berth_ok(&[
        "get",
        "pc",
        "high",
        "-o",
        "jsonpath={.value} {.description}",
    ]);
    assert_eq!(pc, "1000 web tier");
    let yaml = cluster.berth_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.26",
        "--replicas=2",
        "--port=80",
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    assert!(
        yaml.contains("kind: Deployment") && yaml.contains("containerPort: 80"),
        "{yaml}"
    );
    assert_eq!(
        cluster.berth_ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--dry-run=server"
        ]),
        "deployment.apps/web created (server dry run)\n"
    );
    assert!(
        !cluster
            .berth(&["get", "deployment", "web"])
            .status
            .success(),
        "nothing stored"
    );

    // apply --dry-run=server: admission and validation run, nothing is stored.
    let pod = cluster.manifest("web.yaml", &pod_yaml("web", "100m", "", ""));
    assert_eq!(
        cluster.berth_ok(&["apply", "-f", &display(&pod), "--dry-run=server"]),
        "pod/web created (server dry run)\n"
    );
    assert_eq!(
        cluster.berth_ok(&["apply", "-f", &display(&pod), "--dry-run"]),
        "pod/web created (dry run)\n",
        "--dry-run alone means client, as in kubectl"
    );
    let classless = cluster.manifest(
        "classless.yaml",
        &pod_yaml("classless", "100m", "", "  priorityClassName: nope\n"),
    );
    let refused = cluster.berth(&["apply", "-f", &display(&classless), "--dry-run=server"]);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "admission runs: {refused:?}"
    );
    assert!(stderr(&refused).contains("nope"), "{refused:?}");
    assert!(
        !cluster.berth(&["get", "pod", "web"]).status.success(),
        "nothing stored"
    );

    // diff: 0 without differences, 1 with (a unified diff of live and merged), 2 on errors.
    let v2 = cluster.manifest("v2.yaml", &web_deployment(2));
    let new = cluster.berth(&["diff", "-f", &display(&v2)]);
    assert_eq!(new.status.code(), Some(1), "{new:?}");
    assert!(stdout(&new).contains("+  replicas: 2"), "{new:?}");
    cluster.berth_ok(&["apply", "-f", &display(&v2)]);
    let same = cluster.berth(&["diff", "-f", &display(&v2)]);
    assert_eq!(same.status.code(), Some(0), "{same:?}");
    assert_eq!(stdout(&same), "");
    let v3 = cluster.manifest("v3.yaml", &web_deployment(3));
    let changed = cluster.berth(&["diff", "-f", &display(&v3)]);
    assert_eq!(changed.status.code(), Some(1), "{changed:?}");
    let text = stdout(&changed);
    assert!(text.contains("apps.v1.Deployment.default.web"), "{text}");
    assert!(
        text.contains("-  replicas: 2\n") && text.contains("+  replicas: 3\n"),
        "{text}"
    );
    assert!(
        !text.contains("-  resourceVersion") && !text.contains("+  resourceVersion"),
        "the version is not a difference: {text}"
    );
    assert!(
        text.contains("+  generation: 2\n"),
        "a spec change counts: {text}"
    );
    let typo = cluster.manifest(
        "typo.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspex: {}\n",
    );
    assert_eq!(
        cluster
            .berth(&["diff", "-f", &display(&typo)])
            .status
            .code(),
        Some(2)
    );

    // edit: an editor script changes the object; no change cancels; an invalid save is
    // reopened with the error, and saved again unchanged gives up keeping the copy.
    let editor = |name: &str, script: &str| {
        let path = cluster.manifest(name, &format!("#!/bin/sh\n{script}\n"));
        let mut perms = std::fs::metadata(&path).expect("script").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).expect("chmod");
        display(&path)
    };
    let four = editor("four.sh", "sed -i 's/replicas: 2/replicas: 4/' \"$1\"");
    let out = cluster.berth_env(&[("EDITOR", &four)], &["edit", "deployment/web"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "deployment.apps/web edited\n");
    let replicas = cluster.berth_ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "4");
    let untouched = cluster.berth_env(&[("KUBE_EDITOR", "true")], &["edit", "deploy", "web"]);
    assert_eq!(stdout(&untouched), "Edit cancelled, no changes made.\n");
    let bad = editor("bad.sh", "sed -i 's/replicas: 4/replicas: lots/' \"$1\"");
    let invalid = cluster.berth_env(&[("EDITOR", &bad)], &["edit", "deployment/web"]);
    assert_eq!(invalid.status.code(), Some(1), "{invalid:?}");
    let err = stderr(&invalid);
    assert!(
        err.starts_with("error: Edit cancelled, no valid changes were saved.\n"),
        "{err}"
    );
    let kept = err
        .split("stored to \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the kept copy's path");
    let copy = std::fs::read_to_string(kept).expect("the kept copy");
    assert!(copy.contains("replicas: lots"), "{copy}");
    assert!(copy.contains("# Please edit the object below."), "{copy}");
    assert!(
        copy.lines()
            .any(|l| l.starts_with("# ") && l.contains("replicas")),
        "the error as a comment: {copy}"
    );
    let _ = std::fs::remove_file(kept);

    // A change made while the editor is open: the save conflicts and is kept.
    let racing = editor(
        "racing.sh",
        &format!(
            "\"{}\" scale deployment web --replicas=5 >/dev/null && sed -i 's/replicas: 4/replicas: 6/' \"$1\"",
            env!("CARGO_BIN_EXE_berth")
        ),
    );
    let conflict = cluster.berth_env(&[("EDITOR", &racing)], &["edit", "deployment/web"]);
    assert_eq!(conflict.status.code(), Some(1), "{conflict:?}");
    let err = stderr(&conflict);
    assert!(
        err.starts_with("error: deployments.apps \"web\" could not be patched: "),
        "{err}"
    );
    assert!(
        err.contains("A copy of your changes has been stored to"),
        "{err}"
    );
    if let Some(kept) = err
        .split("stored to \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
    {
        let _ = std::fs::remove_file(kept);
    }
    let replicas = cluster.berth_ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "5", "the other writer's change stands");
}

#[test]
fn a_watch_from_a_version_replays_the_changes_after_it_and_an_old_one_expires() {
    use berth_proto::pb;
    let cluster = TestCluster::start();
    let rt = common::runtime();
    let channel = common::channel(&rt, &cluster);
    let mut api = common::api(&channel);
    common::apply_yaml(&rt, &channel, &pod_yaml("a", "100m", "", "")).expect("apply a");
    let listed = rt
        .block_on(api.list(pb::ListRequest {
            kind: pb::Kind::Pod as i32,
            ..Default::default()
        }))
        .expect("list")
        .into_inner();
    // Changes after the list, made before the watch is opened.
    common::apply_yaml(&rt, &channel, &pod_yaml("b", "100m", "", "")).expect("apply b");
    common::apply_yaml(
        &rt,
        &channel,
        &pod_yaml("a", "100m", "  labels: {x: y}\n", ""),
    )
    .expect("label a");
    let mut watch = rt
        .block_on(api.watch(pb::WatchRequest {
            kind: pb::Kind::Pod as i32,
            resource_version: listed.resource_version.clone(),
            ..Default::default()
        }))
        .expect("watch")
        .into_inner();
    // Every change after the list, in order: b's creation, a's new label last (the
    // scheduler's status writes may come between); not a's creation, which the list showed.
    let added = pb::watch_event::Type::Added as i32;
    let modified = pb::watch_event::Type::Modified as i32;
    let mut seen = Vec::new();
    loop {
        let event = rt
            .block_on(watch.message())
            .expect("a watch event")
            .expect("the watch goes on");
        let object =
            berth_proto::wire::object_from_pb(&event.object.expect("an object")).expect("a pod");
        let labelled = object.meta().labels.contains_key("x");
        seen.push((event.r#type, object.meta().name.clone()));
        if labelled {
            break;
        }
    }
    assert!(seen.contains(&(added, "b".to_string())), "{seen:?}");
    assert_eq!(seen.last(), Some(&(modified, "a".to_string())), "{seen:?}");
    assert!(!seen.contains(&(added, "a".to_string())), "{seen:?}");

    // More changes than the server remembers: a watch from before them is too old.
    let many: String = (0..berth_scheduler::server::watch_cache::HISTORY_CHANGES + 10)
        .map(|i| format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: ns-{i}}}\n---\n"))
        .collect();
    common::apply_yaml(&rt, &channel, &many).expect("many namespaces");
    // The server records changes as they are committed, a moment after the apply returns.
    let mut refused = None;
    common::wait_until("the listed version expires", || {
        let reply = rt.block_on(api.watch(pb::WatchRequest {
            kind: pb::Kind::Pod as i32,
            resource_version: listed.resource_version.clone(),
            ..Default::default()
        }));
        refused = reply.err();
        refused.is_some()
    });
    let status = refused.expect("too old");
    assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
    assert!(
        status.message().starts_with("too old resource version: "),
        "{status:?}"
    );
}
