//! Shared harness of the end-to-end tests: real `berth-scheduler` and `berth-agent` processes
//! on loopback, the real `berth` CLI, and polling helpers instead of sleeps.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long any condition may take before a test fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A free loopback port (bound then released; the OS does not hand it out again at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("binding an ephemeral port")
        .local_addr()
        .expect("local address")
        .port()
}

/// A process that is killed when dropped.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

impl Proc {
    /// Sends SIGTERM and waits for the exit, killing after 10 s.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
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

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scheduler and its agents, with a data folder and logs that outlive a restart.
pub struct TestCluster {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub scheduler: Option<Proc>,
    pub agents: Vec<Proc>,
}

impl TestCluster {
    /// Starts a scheduler with an empty store.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("temporary folder");
        let mut cluster = TestCluster {
            dir,
            port: free_port(),
            scheduler: None,
            agents: Vec::new(),
        };
        cluster.start_scheduler();
        cluster
    }

    /// The scheduler's address.
    pub fn server(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log(&self, name: &str) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{name}.log")))
            .expect("log file")
    }

    /// Starts (or restarts) the scheduler on the same port and store, and waits until it
    /// answers.
    pub fn start_scheduler(&mut self) {
        let log = self.log("scheduler");
        let child = Command::new(env!("CARGO_BIN_EXE_berth-scheduler"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("--data-dir")
            .arg(self.dir.path().join("store"))
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("starting berth-scheduler");
        self.scheduler = Some(Proc {
            child,
            name: "scheduler".into(),
        });
        wait_until("the scheduler answers", || {
            self.berth(&["get", "nodes"]).status.success()
        });
    }

    /// Starts an agent with the sim runtime.
    pub fn start_agent(&mut self, name: &str, cpu: &str, memory: &str) {
        let log = self.log(name);
        let child = Command::new(env!("CARGO_BIN_EXE_berth-agent"))
            .args(["--server", &self.server(), "--node-name", name, "--runtime", "sim"])
            .args(["--cpu", cpu, "--memory", memory, "--pods", "110"])
            .args(["--heartbeat-interval", "1s"])
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("starting berth-agent");
        self.agents.push(Proc {
            child,
            name: name.into(),
        });
    }

    /// Runs the CLI against this cluster.
    pub fn berth(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .env("BERTH_SERVER", self.server())
            .env("BERTH_CONFIG", self.dir.path().join("no-config"))
            .stdin(Stdio::null())
            .output()
            .expect("running berth")
    }

    /// Runs the CLI and returns stdout, failing the test (with stderr) if it fails.
    pub fn berth_ok(&self, args: &[&str]) -> String {
        let out = self.berth(args);
        assert!(
            out.status.success(),
            "berth {} failed: {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes a manifest into the test folder and returns its path.
    pub fn manifest(&self, name: &str, yaml: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).expect("writing a manifest");
        path
    }

    /// The pod as JSON (`berth get pod NAME -o json`).
    pub fn pod_json(&self, name: &str) -> serde_json::Value {
        let out = self.berth_ok(&["get", "pod", name, "-o", "json"]);
        serde_json::from_str(&out).expect("pod JSON")
    }

    /// Every log so far, for failure messages.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(self.dir.path()).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "log") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                all.push_str(&format!("--- {} (last lines)\n", path.display()));
                for line in tail.into_iter().rev() {
                    all.push_str(line);
                    all.push('\n');
                }
            }
        }
        all
    }
}

/// Polls `cond` until it holds, failing the test after [`TIMEOUT`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting until {what}");
}

/// The string at a JSON pointer, or "".
pub fn str_at<'a>(v: &'a serde_json::Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(|s| s.as_str()).unwrap_or("")
}

/// Path helper for assertions.
pub fn display(p: &Path) -> String {
    p.display().to_string()
}
