//! The web view in a real browser: a scheduler with agents and `--web-listen`, the page
//! opened in headless Chromium (driven over the DevTools protocol on a pipe), the nodes
//! shown (with their devices), a pod applied after the page loaded appearing without a
//! reload, cluster text shown as text and never as HTML, a screenshot saved under target/,
//! and the live stream closed when the scheduler shuts down.
//!
//! Skips with a message where Chromium is absent (`BERTH_CHROMIUM` names another binary);
//! fails instead when `CI` is set.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine;
use common::{free_port, http_get, pod_yaml, Security, TestCluster, TIMEOUT};
use serde_json::{json, Value};

const ADMIN: &str = "admin-web-51c3";
const VIEWER: &str = "viewer-web-7d20";
const NODES: [(&str, &str); 2] = [("node-a", "node-a-e1f0"), ("node-b", "node-b-93aa")];

/// The Chromium to drive, or `None` (after saying why) when the test should skip.
fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(
        std::env::var("BERTH_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
    );
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "{} not found: install Debian's chromium (apt-get install chromium) or set \
         BERTH_CHROMIUM",
        path.display()
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set, so the browser test must run: {why}"
    );
    eprintln!("skipping the browser test: {why}");
    None
}

/// A headless Chromium driven over `--remote-debugging-pipe`: commands go to its fd 3 and
/// answers and events come from its fd 4, as JSON messages ended by a NUL byte.
struct Browser {
    child: Child,
    commands: std::io::PipeWriter,
    messages: mpsc::Receiver<Value>,
    next_id: u64,
    /// The page's session (flat mode: commands carry its id).
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn launch(exe: &Path) -> Browser {
        let profile = tempfile::tempdir().expect("a profile folder");
        let (command_reader, commands) = std::io::pipe().expect("a pipe");
        let (reader, message_writer) = std::io::pipe().expect("a pipe");
        let (fd_in, fd_out) = (command_reader.as_raw_fd(), message_writer.as_raw_fd());
        let mut command = Command::new(exe);
        command
            .args([
                "--headless",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
                "--window-size=1280,1000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: getuid has no preconditions and cannot fail.
        let root = unsafe { libc::getuid() } == 0;
        if root {
            command.arg("--no-sandbox");
        }
        // SAFETY: fcntl and dup2 are async-signal-safe. The pipe ends are first copied
        // above fd 10, so that neither sits on 3 or 4 already (a dup2 onto itself would
        // keep close-on-exec, and the second could overwrite the first); the dup2 copies on
        // 3 and 4 lose close-on-exec, the originals keep it.
        unsafe {
            command.pre_exec(move || {
                let high_in = libc::fcntl(fd_in, libc::F_DUPFD_CLOEXEC, 10);
                let high_out = libc::fcntl(fd_out, libc::F_DUPFD_CLOEXEC, 10);
                if high_in < 0
                    || high_out < 0
                    || libc::dup2(high_in, 3) < 0
                    || libc::dup2(high_out, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .arg("about:blank")
            .spawn()
            .expect("starting chromium");
        drop((command_reader, message_writer));
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reader);
            loop {
                let mut message = Vec::new();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                message.pop_if(|b| *b == 0);
                if let Ok(value) = serde_json::from_slice(&message) {
                    if tx.send(value).is_err() {
                        return;
                    }
                }
            }
        });
        let mut browser = Browser {
            child,
            commands,
            messages,
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        browser
    }

    /// Sends a command (to the page once attached) and waits for its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).expect("JSON");
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("sending {method} to chromium: {e}"));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer from chromium to {method}: {e}"));
            if reply["id"] == json!(id) {
                assert!(
                    reply.get("error").is_none(),
                    "{method} failed: {}",
                    reply["error"]
                );
                return reply["result"].clone();
            }
        }
    }

    /// Evaluates a JavaScript expression in the page and returns its value.
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression} threw: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Polls a JavaScript condition until it is true.
    fn wait_for(&mut self, what: &str, expression: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if self.eval(expression) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("timed out after {TIMEOUT:?} waiting until {what} ({expression})");
    }

    /// A PNG of the whole page.
    fn screenshot(&mut self) -> Vec<u8> {
        let height = self.eval("document.documentElement.scrollHeight");
        let height = height.as_u64().unwrap_or(1000).clamp(600, 4000);
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64 PNG")
    }
}

impl Drop for Browser {
    /// Asks Chromium to close, so that it removes its temporary files, and kills it if it
    /// has not exited within 10 s.
    fn drop(&mut self) {
        let close = serde_json::to_vec(&json!({"id": 0, "method": "Browser.close"}));
        if let Ok(mut close) = close {
            close.push(0);
            let _ = self.commands.write_all(&close);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of the element `selector`, as a JavaScript expression.
fn text_of(selector: &str) -> String {
    format!("(document.querySelector({selector:?}) || {{textContent: ''}}).textContent")
}

#[test]
fn the_web_view_shows_nodes_and_new_pods_live_in_a_real_browser() {
    let Some(exe) = chromium() else { return };
    let web_port = free_port();
    let mut cluster = TestCluster::start_with(|dir| {
        let path = dir.join("tokens.csv");
        let mut text = format!("{ADMIN},alice,admin\n{VIEWER},bob,viewer\n");
        for (node, token) in NODES {
            text.push_str(&format!("{token},{node},node\n"));
        }
        std::fs::write(&path, text).expect("writing the token file");
        Security {
            scheduler_args: vec![
                "--token-file".into(),
                path.display().to_string(),
                "--web-listen".into(),
                format!("127.0.0.1:{web_port}"),
            ],
            cli_token: Some(ADMIN.into()),
            ca: None,
        }
    });
    for (node, token) in NODES {
        cluster.start_agent_with(node, "4", "8Gi", &[], &[("BERTH_TOKEN", token)]);
    }
    cluster.wait_ready_nodes(NODES.len());
    cluster.berth_ok(&["taint", "nodes", "node-b", "dedicated=batch:NoSchedule"]);
    let first = cluster.manifest("first.yaml", &pod_yaml("first", "500m", "", ""));
    cluster.berth_ok(&["apply", "-f", first.to_str().unwrap()]);

    let mut browser = Browser::launch(&exe);
    // A browser holds the viewer token only in the first address: the page answers with
    // a session cookie and a redirect to the bare address.
    let base = format!("http://127.0.0.1:{web_port}/");
    browser.call("Page.enable", json!({}));
    browser.call("Runtime.enable", json!({}));
    browser.call(
        "Page.navigate",
        json!({"url": format!("{base}?token={VIEWER}")}),
    );
    browser.wait_for(
        "the page shows both nodes",
        &format!(
            "{0}.includes('node-a') && {0}.includes('node-b')",
            text_of("#nodes")
        ),
    );
    assert_eq!(
        browser.eval("location.href"),
        json!(base),
        "the token is gone from the address bar"
    );
    browser.wait_for(
        "the first pod is shown running on a node",
        "!!document.querySelector('tr[data-pod=\"default/first\"]') && \
         document.querySelector('tr[data-pod=\"default/first\"]').textContent.includes('node-a')",
    );
    assert_eq!(
        browser.eval(
            "Array.from(document.querySelectorAll('.node .chip.taint')).map(c => c.textContent)"
        ),
        json!(["dedicated=batch:NoSchedule"]),
        "node-b's taint is shown"
    );
    // Only a reload would clear this.
    browser.eval("window.loadedOnce = 'still here'");

    // Applied after the page loaded: a pod that fits, and one that fits nowhere, whose
    // FailedScheduling message the page must show; and a node (tainted, so that no pod
    // goes there) whose condition message is markup.
    let later = cluster.manifest(
        "later.yaml",
        &[
            pod_yaml("late-arrival", "250m", "", ""),
            pod_yaml("too-big", "64", "", ""),
        ]
        .concat(),
    );
    cluster.berth_ok(&["apply", "-f", later.to_str().unwrap()]);
    let markup = "<img src=x id=injected onerror=\"document.title='pwned'\">";
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "markup"},
        "spec": {"taints": [{"key": "example.com/markup", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "1", "memory": "1Gi", "pods": "10"},
            "conditions": [{
                "type": "ExampleCheck",
                "status": "True",
                "reason": "Markup",
                "message": markup,
            }],
        },
    });
    let node = cluster.manifest("markup-node.json", &node.to_string());
    cluster.berth_ok(&["apply", "-f", node.to_str().unwrap()]);
    // node-a's devices, published as a driver would.
    let slice = json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-a-gpus"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-a",
            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
        },
    });
    let slice = cluster.manifest("slice.json", &slice.to_string());
    cluster.berth_ok(&["apply", "-f", slice.to_str().unwrap()]);

    browser.wait_for(
        "the pod applied after the page loaded appears",
        "!!document.querySelector('tr[data-pod=\"default/late-arrival\"]') && \
         document.querySelector('tr[data-pod=\"default/late-arrival\"]').textContent.includes('node-')",
    );
    browser.wait_for(
        "the pending pod shows why it waits",
        "(document.querySelector('tr[data-pod=\"default/too-big\"] td.message') || {textContent: ''})\
         .textContent.includes('Insufficient cpu')",
    );
    assert_eq!(
        browser.eval("window.loadedOnce"),
        json!("still here"),
        "the pods appeared without a reload"
    );
    browser.wait_for(
        "the node with markup in its condition is listed",
        &format!("{}.includes('ExampleCheck: Markup')", text_of("#nodes")),
    );
    assert_eq!(
        browser.eval("[!!document.getElementById('injected'), document.title]"),
        json!([false, "Berth"]),
        "a condition's message is shown as text, never parsed as HTML"
    );
    assert!(
        browser
            .eval(&text_of("#nodes"))
            .as_str()
            .is_some_and(|t| t.contains(markup)),
        "the markup is shown literally"
    );
    browser.wait_for(
        "node-a shows its devices",
        "(document.querySelector('.node[data-node=\"node-a\"] .bar[data-resource=\"gpu.example.com\"]') \
         || {textContent: ''}).textContent.includes('0 / 2')",
    );
    browser.wait_for(
        "the three charts have two samples or more",
        "document.querySelectorAll('.chart canvas').length === 3 && \
         Number(document.body.dataset.samples) >= 2",
    );

    let png = browser.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-view.png");
    std::fs::write(&path, &png).expect("saving the screenshot");
    eprintln!("screenshot of the web view: {}", path.display());

    // Without the session cookie or a token the view is refused.
    let (code, _) = http_get(&format!("127.0.0.1:{web_port}"), "/api/view", None).expect("a GET");
    assert_eq!(code, 401);

    // The page's stream is open; the scheduler must still stop promptly and cleanly.
    let status = cluster
        .scheduler
        .as_mut()
        .expect("the scheduler runs")
        .terminate();
    assert!(status.success(), "the scheduler stopped cleanly: {status}");
    browser.wait_for(
        "the page notices the stream closed",
        "document.getElementById('connection').dataset.state === 'lost'",
    );
}
