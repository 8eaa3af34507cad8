//! Shared harness of the end-to-end tests: real `berth-scheduler` and `berth-agent` processes
//! on loopback, the real `berth` CLI, and polling helpers instead of sleeps.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long any condition may take before a test fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A free loopback port for a server the test starts (outside the ephemeral range, so no
/// outgoing connection takes it first).
pub fn free_port() -> u16 {
    berth_proto::ports::spare_loopback_port().expect("a free loopback port")
}

/// A process that is killed when dropped.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

impl Proc {
    /// Sends SIGTERM and waits for the exit, killing after 10 s (nothing when it has exited
    /// already).
    pub fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
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

    /// Sends a signal by name (`STOP`, `CONT`, `TERM`) without waiting.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{name} {} failed", self.name);
    }

    /// Sends SIGTERM and waits for the process to exit on its own, failing the test if it
    /// has not after [`TIMEOUT`]; returns its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{} did not exit within {TIMEOUT:?} of SIGTERM", self.name);
    }
}

/// Starts `berth dev` with `args` on 127.0.0.1:`port`, its data in `dir/data` and its output
/// in `dir/dev.log`; it writes its client config to `config` (`BERTH_CONFIG`), and takes no
/// server, token or CA from the environment.
pub fn spawn_berth_dev(dir: &Path, config: &Path, port: u16, args: &[&str]) -> Proc {
    let log = std::fs::File::create(dir.join("dev.log")).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_berth"))
        .arg("dev")
        .args(args)
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .env("BERTH_CONFIG", config)
        .env_remove("BERTH_TOKEN")
        .env_remove("BERTH_SERVER")
        .env_remove("BERTH_CA")
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("starting berth dev");
    Proc {
        child,
        name: "berth dev".into(),
    }
}

/// A process (`berth dev`) stopped with SIGTERM when dropped (a failed assertion too), so
/// that it ends the processes it started rather than leaving them behind.
pub struct StopOnDrop(pub Proc);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// How a [`TestCluster`] is secured: flags added to every scheduler start, and the
/// environment of every CLI run (token, CA). The default is an open, plaintext cluster.
#[derive(Clone, Debug, Default)]
pub struct Security {
    /// Extra `berth-scheduler` flags (`--token-file`, `--tls-cert`, `--tls-key`).
    pub scheduler_args: Vec<String>,
    /// Token the CLI sends (as `BERTH_TOKEN`).
    pub cli_token: Option<String>,
    /// CA file the CLI and agents trust; the cluster's address is then https.
    pub ca: Option<PathBuf>,
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
    pub security: Security,
    /// Agents started with the process runtime, stopped with SIGTERM when the cluster is
    /// dropped: they stop their pods and remove their cgroups then, where a killed agent
    /// would leave its pods running.
    pub process_agents: Vec<String>,
    /// What agents get as `--server` instead of [`TestCluster::server`] (several replicas'
    /// addresses), when set.
    pub agent_servers: Option<String>,
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        for agent in &mut self.agents {
            if self.process_agents.contains(&agent.name) {
                agent.stop();
            }
        }
    }
}

impl TestCluster {
    /// Starts a scheduler with an empty store.
    pub fn start() -> Self {
        Self::start_with(|_| Security::default())
    }

    /// Starts a scheduler with an empty store, secured as `security` says; it gets the
    /// cluster's folder, to write token files and certificates into.
    pub fn start_with(security: impl FnOnce(&Path) -> Security) -> Self {
        let dir = tempfile::tempdir().expect("temporary folder");
        let security = security(dir.path());
        let mut cluster = TestCluster {
            dir,
            port: free_port(),
            scheduler: None,
            agents: Vec::new(),
            security,
            process_agents: Vec::new(),
            agent_servers: None,
        };
        cluster.start_scheduler();
        cluster
    }

    /// The scheduler's address (https when the cluster has a CA).
    pub fn server(&self) -> String {
        let scheme = if self.security.ca.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
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
            .args(&self.security.scheduler_args)
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
        self.start_agent_with(name, cpu, memory, &[], &[]);
    }

    /// Starts an agent with the sim runtime, extra flags and environment (`BERTH_TOKEN`).
    /// It trusts the cluster's CA, if any.
    pub fn start_agent_with(
        &mut self,
        name: &str,
        cpu: &str,
        memory: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) {
        let sim = [
            "--runtime",
            "sim",
            "--cpu",
            cpu,
            "--memory",
            memory,
            "--pods",
            "110",
        ];
        self.spawn_agent(name, &[&sim, args].concat(), env);
    }

    /// Starts an agent with the process runtime for node `name`, rooted in `<name>-root` of
    /// the test folder (returned), with a 200ms restart back-off, housekeeping every second,
    /// 2 cpu, 1Gi and the `extra` flags, and waits until its node registers.
    pub fn start_process_agent(&mut self, name: &str, extra: &[&str]) -> PathBuf {
        let root = self.dir.path().join(format!("{name}-root"));
        let root_arg = root.to_str().expect("UTF-8 path").to_string();
        let flags = [
            "--runtime",
            "process",
            "--root-dir",
            &root_arg,
            "--restart-backoff",
            "200ms",
            "--housekeeping-interval",
            "1s",
            "--cpu",
            "2",
            "--memory",
            "1Gi",
        ];
        self.spawn_agent(name, &[&flags, extra].concat(), &[]);
        self.process_agents.push(name.to_string());
        wait_until(&format!("node {name} registers"), || {
            self.berth(&["get", "node", name]).status.success()
        });
        root
    }

    /// Starts an agent for node `name` with only the flags given (runtime, capacity,
    /// intervals) and environment, logging to `<name>.log`; it heartbeats every second and
    /// trusts the cluster's CA, if any.
    pub fn spawn_agent(&mut self, name: &str, args: &[&str], env: &[(&str, &str)]) {
        let log = self.log(name);
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth-agent"));
        if let Some(ca) = &self.security.ca {
            command.arg("--ca").arg(ca);
        }
        let server = self.agent_servers.clone().unwrap_or_else(|| self.server());
        let child = command
            .args(["--server", &server, "--node-name", name])
            .args(["--heartbeat-interval", "1s"])
            .args(args)
            .env_remove("BERTH_TOKEN")
            .envs(env.iter().copied())
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("starting berth-agent");
        self.agents.push(Proc {
            child,
            name: name.into(),
        });
    }

    /// Runs the CLI against this cluster, with the cluster's token and CA.
    pub fn berth(&self, args: &[&str]) -> Output {
        self.berth_as(self.security.cli_token.as_deref(), args)
    }

    /// Runs the CLI against this cluster with `token` (none: no token at all).
    pub fn berth_as(&self, token: Option<&str>, args: &[&str]) -> Output {
        self.berth_command(token, args)
            .output()
            .expect("running berth")
    }

    /// Runs the CLI against this cluster with extra environment variables (`EDITOR`).
    pub fn berth_env(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut command = self.berth_command(self.security.cli_token.as_deref(), args);
        command.envs(env.iter().copied());
        command.output().expect("running berth")
    }

    /// The CLI with `args`, this cluster's address and CA, and `token`; stdin closed.
    fn berth_command(&self, token: Option<&str>, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .args(args)
            .env("BERTH_SERVER", self.server())
            .env("BERTH_CONFIG", self.dir.path().join("no-config"))
            .env_remove("BERTH_TOKEN")
            .env_remove("BERTH_CA")
            .stdin(Stdio::null());
        if let Some(token) = token {
            command.env("BERTH_TOKEN", token);
        }
        if let Some(ca) = &self.security.ca {
            command.env("BERTH_CA", ca);
        }
        command
    }

    /// Starts the CLI against this cluster in the background, its output piped.
    pub fn berth_spawn(&self, args: &[&str]) -> Child {
        self.berth_command(self.security.cli_token.as_deref(), args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting berth")
    }

    /// How many nodes `berth get nodes` shows Ready.
    pub fn ready_nodes(&self) -> usize {
        let out = self.berth_ok(&["get", "nodes"]);
        out.lines().filter(|l| l.contains(" Ready")).count()
    }

    /// Waits until `berth get nodes` shows `count` nodes Ready.
    pub fn wait_ready_nodes(&self, count: usize) {
        wait_until(&format!("{count} nodes are Ready"), || {
            self.ready_nodes() == count
        });
    }

    /// The agent process of a node.
    pub fn agent(&mut self, name: &str) -> &mut Proc {
        self.agents
            .iter_mut()
            .rev()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("no agent {name}"))
    }

    /// The log of one process so far, without terminal colour codes.
    pub fn log_of(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir.path().join(format!("{name}.log")))
            .unwrap_or_default();
        strip_ansi(&text)
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
        for entry in std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
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

/// Polls `cond` every 100 ms until it holds, failing the test after [`TIMEOUT`].
pub fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    poll(what, TIMEOUT, Duration::from_millis(100), cond);
}

/// Polls `cond` every `every` until it holds, failing the test after `limit`.
fn poll(what: &str, limit: Duration, every: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(every);
    }
    panic!("timed out after {limit:?} waiting until {what}");
}

/// The string at a JSON pointer, or "".
pub fn str_at<'a>(v: &'a serde_json::Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(|s| s.as_str()).unwrap_or("")
}

/// Path helper for assertions.
pub fn display(p: &Path) -> String {
    p.display().to_string()
}

/// A multi-threaded tokio runtime for tests that call the gRPC API directly.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("building a tokio runtime")
}

/// A plaintext channel to a cluster's scheduler (lazy: it connects on first use, and
/// reconnects after the scheduler restarts).
pub fn channel(rt: &tokio::runtime::Runtime, cluster: &TestCluster) -> tonic::transport::Channel {
    let _in_runtime = rt.enter();
    tonic::transport::Endpoint::from_shared(cluster.server())
        .expect("valid address")
        .connect_timeout(Duration::from_secs(2))
        .connect_lazy()
}

/// The generated API client over `channel`, accepting large lists.
pub fn api(
    channel: &tonic::transport::Channel,
) -> berth_proto::pb::berth_client::BerthClient<tonic::transport::Channel> {
    berth_proto::pb::berth_client::BerthClient::new(channel.clone())
        .max_decoding_message_size(256 * 1024 * 1024)
        .max_encoding_message_size(256 * 1024 * 1024)
}

/// A request carrying `authorization: Bearer TOKEN` when a token is given.
pub fn authorized<T>(message: T, token: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(token) = token {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("an ASCII token"),
        );
    }
    request
}

/// Objects of a YAML manifest, as the API takes them.
pub fn objects(yaml: &str) -> Vec<berth_proto::pb::Object> {
    let loaded = berth_cli::manifest::parse_str("test.yaml", yaml, Default::default())
        .unwrap_or_else(|e| panic!("test manifest: {e}"));
    loaded
        .manifests
        .iter()
        .map(|m| berth_proto::wire::object_to_pb(&m.object))
        .collect()
}

/// A pod manifest requesting `cpu`, with optional extra `metadata` lines (YAML, indented
/// by two spaces) and `spec` lines (indented by two spaces).
pub fn pod_yaml(name: &str, cpu: &str, metadata: &str, spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{metadata}spec:\n{spec}  containers:\n  - name: main\n    image: busybox\n    resources:\n      requests: {{cpu: {cpu}}}\n---\n"
    )
}

/// Applies a YAML manifest through the API, as one request.
pub fn apply_yaml(
    rt: &tokio::runtime::Runtime,
    channel: &tonic::transport::Channel,
    yaml: &str,
) -> Result<(), tonic::Status> {
    let request = berth_proto::pb::ApplyRequest {
        objects: objects(yaml),
        dry_run: false,
    };
    rt.block_on(api(channel).apply(request)).map(|_| ())
}

/// Where pods are: (uid, node) by pod name.
pub type Placements = std::collections::BTreeMap<String, (String, String)>;

/// Where each bound pod is.
pub fn placements(pods: &[berth_proto::model::Pod]) -> Placements {
    pods.iter()
        .filter(|p| !p.spec.node_name.is_empty())
        .map(|p| {
            (
                p.metadata.name.clone(),
                (p.metadata.uid.clone(), p.spec.node_name.clone()),
            )
        })
        .collect()
}

/// Fails the test if a pod of `before` ([`placements`]) is not where it was in `after`;
/// `when` ends the message ("across the restart").
pub fn assert_not_moved(before: &Placements, after: &Placements, when: &str) {
    for (name, placed) in before {
        assert_eq!(after.get(name), Some(placed), "{name} moved {when}");
    }
}

/// Every pod, from a List call.
pub fn list_pods(
    rt: &tokio::runtime::Runtime,
    channel: &tonic::transport::Channel,
    token: Option<&str>,
) -> Result<Vec<berth_proto::model::Pod>, tonic::Status> {
    let request = berth_proto::pb::ListRequest {
        kind: berth_proto::pb::Kind::Pod as i32,
        ..Default::default()
    };
    let response = rt.block_on(api(channel).list(authorized(request, token)))?;
    Ok(response
        .into_inner()
        .objects
        .into_iter()
        .filter_map(|o| berth_proto::wire::object_from_pb(&o).ok().and_then(as_pod))
        .collect())
}

/// The pod an object is, if it is one.
pub fn as_pod(object: berth_proto::model::Object) -> Option<berth_proto::model::Pod> {
    match object {
        berth_proto::model::Object::Pod(p) => Some(*p),
        _ => None,
    }
}

/// The event an object is, if it is one.
pub fn as_event(object: berth_proto::model::Object) -> Option<berth_proto::model::Event> {
    match object {
        berth_proto::model::Object::Event(e) => Some(*e),
        _ => None,
    }
}

/// Removes ANSI escape sequences (`ESC [ ... letter`) from log text.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Polls `cond` until it holds, failing the test after `limit` (for the long runs of the
/// crash and fault tests; the limit is a failure guard, never an expectation).
pub fn wait_for(what: &str, limit: Duration, cond: impl FnMut() -> bool) {
    poll(what, limit, Duration::from_millis(200), cond);
}

/// The message an agent logs, with the pod's `uid=`, when it starts a pod.
pub const POD_STARTED: &str = "pod started";
/// The message an agent logs, with the pod's `uid=`, when it stops a pod.
pub const POD_STOPPED: &str = "pod stopped";

/// The uids of the log lines holding `message` ([`POD_STARTED`], [`POD_STOPPED`]).
pub fn uids_logged(log: &str, message: &str) -> std::collections::HashSet<String> {
    log.lines()
        .filter(|line| line.contains(message))
        .filter_map(|line| {
            let rest = &line[line.find("uid=")? + 4..];
            Some(rest.split_whitespace().next()?.to_string())
        })
        .collect()
}

/// CPU requested by a pod, in millicores (sum over its containers).
pub fn cpu_millis(pod: &berth_proto::model::Pod) -> i64 {
    pod.spec
        .containers
        .iter()
        .filter_map(|c| c.resources.requests.get("cpu"))
        .map(|q| q.millis())
        .sum()
}

impl TestCluster {
    /// Starts an open, plaintext cluster whose scheduler gets extra `flags` (shortened
    /// durations, rates).
    pub fn start_with_flags(flags: &[&str]) -> Self {
        Self::start_with(|_| Security {
            scheduler_args: flags.iter().map(|f| f.to_string()).collect(),
            ..Default::default()
        })
    }
}

/// The lines a background process prints on stdout, read on a thread as they come.
pub struct Lines {
    receiver: std::sync::mpsc::Receiver<String>,
    /// Every line received so far.
    pub seen: Vec<String>,
}

impl Lines {
    /// Reads the child's stdout (which must be piped).
    pub fn of(child: &mut Child) -> Self {
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Lines {
            receiver,
            seen: Vec::new(),
        }
    }

    /// Waits for the next line that satisfies `cond` (skipping others), failing the test
    /// after [`TIMEOUT`] or when the output ends; returns it.
    pub fn wait_for(&mut self, what: &str, cond: impl FnMut(&str) -> bool) -> String {
        self.wait_within(what, TIMEOUT, cond)
    }

    /// [`Lines::wait_for`], failing after `limit`.
    pub fn wait_within(
        &mut self,
        what: &str,
        limit: Duration,
        mut cond: impl FnMut(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if cond(&line) {
                        return line;
                    }
                }
                Err(e) => panic!("no line {what} ({e}); lines so far: {:#?}", self.seen),
            }
        }
    }
}

/// A plain HTTP/1.1 GET of `path` on `addr` (`127.0.0.1:PORT`), with `authorization: Bearer
/// TOKEN` when a token is given: the status code and the body (the scheduler's metrics).
pub fn http_get(addr: &str, path: &str, token: Option<&str>) -> std::io::Result<(u16, String)> {
    berth_cli::scrape::get(addr, path, token)
}
