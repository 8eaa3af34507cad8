//! High availability over the real binaries (issue 13): clients given several replicas'
//! addresses move to the next one when theirs goes away — the CLI at once, an agent's
//! session without restarting the node's pods; and, on three real etcd members, replicas
//! that survive faults: the leader killed with SIGKILL mid-run, an etcd member killed
//! mid-run, the leader paused past its lease. The etcd tests skip with a message where
//! `etcd` is not installed (Debian's `etcd-server`), and fail then when `CI` is set.

mod common;

use std::collections::{HashMap, HashSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use berth_cli::client::Client;
use berth_cli::config::Target;
use berth_proto::model::{Kind, Object, Pod, PodPhase};
use berth_proto::names::{CONDITION_READY, STATUS_TRUE};
use common::{
    free_port, str_at, uids_logged, wait_for, wait_until, Proc, TestCluster, POD_STOPPED,
};

#[test]
fn cli_and_agent_fail_over_to_the_next_replica_without_restarting_pods() {
    let mut cluster = TestCluster::start();
    let first = format!("http://127.0.0.1:{}", cluster.port);
    let second_port = free_port();
    let second = format!("http://127.0.0.1:{second_port}");
    // The agent is told of a replica that is not up first: it moves on to the one that is.
    cluster.agent_servers = Some(format!("{second},{first}"));
    cluster.start_agent("node-a", "2", "2Gi");
    cluster.wait_ready_nodes(1);

    // The CLI, too, skips an address where nothing answers.
    let dead_first = format!("{second},{first}");
    let nodes = cluster.berth_ok(&["--server", &dead_first, "get", "nodes"]);
    assert!(nodes.contains("node-a"), "{nodes}");

    let pod = cluster.manifest("web.yaml", &common::pod_yaml("web", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", common::display(&pod).as_str()]);
    wait_until("web runs", || {
        str_at(&cluster.pod_json("web"), "/status/phase") == "Running"
    });
    let web = cluster.pod_json("web");
    let uid = str_at(&web, "/metadata/uid").to_string();
    let started_at = str_at(&web, "/status/startTime").to_string();
    assert!(!started_at.is_empty(), "{web}");

    // The replica the agent talks to dies; another one serves the same store at the other
    // address (sled is one process per store, so the two replicas take turns).
    cluster.scheduler.as_mut().expect("scheduler").kill();
    cluster.port = second_port;
    cluster.start_scheduler();
    let moved = format!("replica={second}/");
    wait_until("the agent's session moves to the other replica", || {
        cluster
            .log_of("node-a")
            .lines()
            .any(|l| l.contains("session open") && l.contains(&moved))
    });

    // The pod kept running: it was neither stopped nor started again (a new start would
    // have a new start time), and the new session works.
    let log = cluster.log_of("node-a");
    assert!(
        !uids_logged(&log, POD_STOPPED).contains(&uid),
        "the pod stopped when its session moved:\n{log}"
    );
    let other = cluster.manifest("api.yaml", &common::pod_yaml("api", "100m", "", ""));
    cluster.berth_ok(&["apply", "-f", common::display(&other).as_str()]);
    wait_until("api runs through the new session", || {
        str_at(&cluster.pod_json("api"), "/status/phase") == "Running"
    });
    let web = cluster.pod_json("web");
    assert_eq!(str_at(&web, "/status/phase"), "Running");
    assert_eq!(str_at(&web, "/status/startTime"), started_at, "{web}");

    // The CLI given the dead replica first reaches the live one.
    let pods = cluster.berth_ok(&["--server", &format!("{first},{second}"), "get", "pods"]);
    assert!(pods.contains("web") && pods.contains("api"), "{pods}");
}

// ---------------------------------------------------------------------------------------
// Replicas on etcd: the fault tests.

/// Leader election timing of the fault tests' replicas, shortened from kube's defaults so
/// that each test stays well under a minute.
const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(500);
/// Failure guard of the long waits (never an expectation).
const GUARD: Duration = Duration::from_secs(120);
/// Simulated nodes, and each one's CPU: 10 × 10.5 cores hold 1,050 pods of 100m.
const NODES: usize = 10;
const NODE_CPU: &str = "10500m";
const NODE_CPU_MILLIS: i64 = 10_500;

/// The `etcd` binary, or None (after saying why the test is skipped) when it is not
/// installed; with `CI` set its absence fails the test.
fn etcd_or_skip(test: &str) -> Option<std::path::PathBuf> {
    match berth_cli::etcd::find_etcd() {
        Ok(path) => Some(path),
        Err(e) if std::env::var_os("CI").is_some() => panic!("{test}: {e} (CI is set)"),
        Err(e) => {
            eprintln!("skipping {test}: {e}");
            None
        }
    }
}

/// Three etcd members, scheduler replicas on them, and one agent process running the
/// simulated nodes, all on loopback; logs in the test folder.
struct HaCluster {
    dir: tempfile::TempDir,
    members: Vec<berth_cli::etcd::EtcdMember>,
    etcd: Vec<Proc>,
    /// Each replica's port and process.
    replicas: Vec<(u16, Proc)>,
    agents: Vec<Proc>,
    rt: tokio::runtime::Runtime,
}

impl HaCluster {
    fn start(etcd: &std::path::Path, replicas: usize) -> Self {
        let dir = tempfile::tempdir().expect("temporary folder");
        let members = berth_cli::etcd::plan(3, dir.path()).expect("etcd ports");
        let mut cluster = HaCluster {
            dir,
            members,
            etcd: Vec::new(),
            replicas: Vec::new(),
            agents: Vec::new(),
            rt: common::runtime(),
        };
        for member in cluster.members.clone() {
            let child = Command::new(etcd)
                .args(member.args(&cluster.members))
                .stdout(cluster.log(&member.name))
                .stderr(cluster.log(&member.name))
                .spawn()
                .expect("starting etcd");
            cluster.etcd.push(Proc {
                child,
                name: member.name.clone(),
            });
        }
        wait_for("etcd is healthy", GUARD, || {
            // A member that died will never be healthy: say why at once.
            for proc in &mut cluster.etcd {
                if let Ok(Some(status)) = proc.child.try_wait() {
                    let log = std::fs::read_to_string(
                        cluster.dir.path().join(format!("{}.log", proc.name)),
                    );
                    panic!(
                        "{} exited ({status}) before it was healthy:\n{}",
                        proc.name,
                        log.unwrap_or_default()
                    );
                }
            }
            cluster.members.iter().all(|m| m.is_healthy())
        });
        for i in 0..replicas {
            let port = free_port();
            let replica = cluster.spawn_replica(&format!("replica-{}", i + 1), port);
            cluster.replicas.push((port, replica));
        }
        wait_for("every replica answers", GUARD, || {
            cluster.replicas.iter().all(|(port, _)| {
                cluster
                    .rt
                    .block_on(Client::connect(&format!("127.0.0.1:{port}")))
                    .is_ok()
            })
        });
        cluster
    }

    /// Starts a replica named `name` on `port`, over the etcd members.
    fn spawn_replica(&self, name: &str, port: u16) -> Proc {
        let child = Command::new(env!("CARGO_BIN_EXE_berth-scheduler"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--store", &berth_cli::etcd::store_url(&self.members)])
            .arg("--data-dir")
            .arg(self.dir.path().join(name))
            .args(["--leader-elect-lease-duration", &millis(LEASE)])
            .args(["--leader-elect-renew-deadline", &millis(RENEW)])
            .args(["--leader-elect-retry-period", &millis(RETRY)])
            .stdout(self.log(name))
            .stderr(self.log(name))
            .spawn()
            .expect("starting berth-scheduler");
        Proc {
            child,
            name: name.to_string(),
        }
    }

    /// Starts replica `i` again, on its port, after it was killed; returns once it
    /// campaigns (until then its log's last word may still be that it leads).
    fn restart_replica(&mut self, i: usize) {
        let (port, old) = &self.replicas[i];
        let name = old.name.clone();
        let campaigns = |log: &str| log.matches(CAMPAIGNING).count();
        let before = campaigns(&self.log_of(&name));
        let replica = self.spawn_replica(&name, *port);
        self.replicas[i].1 = replica;
        wait_for("the restarted replica campaigns", GUARD, || {
            campaigns(&self.log_of(&name)) > before
        });
    }

    fn log(&self, name: &str) -> Stdio {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{name}.log")))
            .expect("log file");
        Stdio::from(file)
    }

    fn log_of(&self, name: &str) -> String {
        common::strip_ansi(
            &std::fs::read_to_string(self.dir.path().join(format!("{name}.log")))
                .unwrap_or_default(),
        )
    }

    /// Every replica's address, as clients take them.
    fn servers(&self) -> String {
        self.replicas
            .iter()
            .map(|(port, _)| format!("http://127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A client that fails over between the replicas.
    fn client(&self) -> Client {
        let target = Target {
            server: self.servers(),
            token: None,
            ca: None,
        };
        self.rt
            .block_on(Client::connect_to(&target))
            .expect("a replica answers")
    }

    /// Starts one agent process running `count` simulated nodes, pointed at every replica.
    fn start_agents(&mut self, count: usize) {
        let name = "agents";
        let child = Command::new(env!("CARGO_BIN_EXE_berth-agent"))
            .args(["--server", &self.servers()])
            .args(["--runtime", "sim", "--count", &count.to_string()])
            .args(["--node-name-prefix", "node-", "--cpu", NODE_CPU])
            .args([
                "--memory",
                "64Gi",
                "--pods",
                "200",
                "--heartbeat-interval",
                "1s",
            ])
            .stdout(self.log(name))
            .stderr(self.log(name))
            .spawn()
            .expect("starting berth-agent");
        self.agents.push(Proc {
            child,
            name: name.into(),
        });
        let mut client = self.client();
        wait_for("every node registers Ready", GUARD, || {
            let nodes = self
                .rt
                .block_on(client.list(Kind::Node, "", "", ""))
                .unwrap_or_default();
            nodes
                .iter()
                .filter(|o| match o {
                    Object::Node(n) => n
                        .condition(CONDITION_READY)
                        .is_some_and(|c| c.status == STATUS_TRUE),
                    _ => false,
                })
                .count()
                == count
        });
    }

    /// The replicas that say they lead now (alive, and their last word on leadership is
    /// that they lead), by index.
    fn leaders(&mut self) -> Vec<usize> {
        let mut leading = Vec::new();
        for i in 0..self.replicas.len() {
            if !matches!(self.replicas[i].1.child.try_wait(), Ok(None)) {
                continue;
            }
            if leads(&self.log_of(&self.replicas[i].1.name)) {
                leading.push(i);
            }
        }
        leading
    }

    /// Waits until exactly one live replica leads, and returns it.
    fn leader(&mut self) -> usize {
        let mut found = None;
        wait_for("one replica leads", GUARD, || {
            let leaders = self.leaders();
            found = (leaders.len() == 1).then(|| leaders[0]);
            found.is_some()
        });
        found.expect("a leader")
    }

    /// The election identity of replica `i`, from its log.
    fn identity(&self, i: usize) -> String {
        let log = self.log_of(&self.replicas[i].1.name);
        let line = log
            .lines()
            .find(|l| l.contains("campaigning for leadership"))
            .expect("the replica campaigned");
        let rest = &line[line.find("identity=").expect("identity field") + 9..];
        rest.split_whitespace()
            .next()
            .expect("identity")
            .to_string()
    }

    /// A thread that watches the replicas' logs and returns which one first said (again)
    /// that it leads, and how long after `from`: a standby, or the killed replica started
    /// again (it campaigns like the others).
    fn watch_takeover(&self, from: Instant) -> std::thread::JoinHandle<(usize, Duration)> {
        let leading = |path: &std::path::Path| {
            std::fs::read_to_string(path).map_or(0, |l| l.matches(LEADING).count())
        };
        let logs: Vec<(usize, std::path::PathBuf, usize)> = (0..self.replicas.len())
            .map(|i| {
                let path = self
                    .dir
                    .path()
                    .join(format!("{}.log", self.replicas[i].1.name));
                let before = leading(&path);
                (i, path, before)
            })
            .collect();
        std::thread::spawn(move || loop {
            for (i, path, before) in &logs {
                if leading(path) > *before {
                    return (*i, from.elapsed());
                }
            }
            assert!(from.elapsed() < GUARD, "no standby took over");
            std::thread::sleep(Duration::from_millis(20));
        })
    }

    /// Every object of a kind, through any replica.
    fn list(&self, kind: Kind) -> Vec<Object> {
        let mut client = self.client();
        self.rt
            .block_on(client.list(kind, "", "", ""))
            .expect("listing through a replica")
    }

    /// Every pod, through any replica.
    fn pods(&self) -> Vec<Pod> {
        self.list(Kind::Pod)
            .into_iter()
            .filter_map(common::as_pod)
            .collect()
    }

    /// Everything the processes logged, for failure messages (the last lines of each).
    fn logs(&self) -> String {
        let mut all = String::new();
        for proc in self
            .etcd
            .iter()
            .chain(self.replicas.iter().map(|(_, p)| p))
            .chain(&self.agents)
        {
            let log = self.log_of(&proc.name);
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            all.push_str(&format!("--- {}\n", proc.name));
            for line in tail.into_iter().rev() {
                all.push_str(line);
                all.push('\n');
            }
        }
        all
    }
}

/// A duration as the scheduler's flags take it.
fn millis(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// What a replica logs when it starts leading, and when it loses the leadership.
const LEADING: &str = "leading: starting the scheduling loop";
const LOST: &str = "leadership lost";
/// What a replica logs when it campaigns (on start, and after losing the leadership).
const CAMPAIGNING: &str = "campaigning for leadership";

/// Whether a replica's log says it leads now: its last word on leadership is that it
/// leads (a replica logs that it campaigns on start and after losing the leadership).
fn leads(log: &str) -> bool {
    log.lines()
        .rev()
        .find(|l| l.contains(LEADING) || l.contains(LOST) || l.contains(CAMPAIGNING))
        .is_some_and(|l| l.contains(LEADING))
}

/// The pods of batch `b` (50 pods of 100m), as model objects.
fn pod_batch(b: usize, prefix: &str) -> Vec<Object> {
    let yaml: String = (b * 50..(b + 1) * 50)
        .map(|i| common::pod_yaml(&format!("{prefix}-{i:04}"), "100m", "", ""))
        .collect();
    berth_cli::manifest::parse_str("pods.yaml", &yaml, Default::default())
        .expect("test manifest")
        .manifests
        .into_iter()
        .map(|m| m.object)
        .collect()
}

/// The invariants after a run: every acknowledged pod is stored, all of them run, no node
/// holds more than it has, and no pod was started on two nodes.
fn assert_invariants(cluster: &HaCluster, acknowledged: &[String]) {
    assert_invariants_within(cluster, acknowledged, GUARD);
}

/// [`assert_invariants`], waiting up to `guard` for the pods to run.
fn assert_invariants_within(cluster: &HaCluster, acknowledged: &[String], guard: Duration) {
    wait_for("every acknowledged pod runs", guard, || {
        all_running(&cluster.pods(), acknowledged)
    });
    let agents = [cluster.log_of("agents")];
    assert_placements(&cluster.pods(), acknowledged, NODE_CPU_MILLIS, &agents);
}

/// Whether every acknowledged pod is among `pods` and Running.
fn all_running(pods: &[Pod], acknowledged: &[String]) -> bool {
    let running: HashSet<&str> = pods
        .iter()
        .filter(|p| p.status.phase == PodPhase::Running)
        .map(|p| p.metadata.name.as_str())
        .collect();
    acknowledged.iter().all(|n| running.contains(n.as_str()))
}

/// Fails when an acknowledged pod is not among `pods`, a node holds more than `node_cpu`
/// millicores of them, or the agents' logs show a pod started on two nodes (bound twice).
fn assert_placements(pods: &[Pod], acknowledged: &[String], node_cpu: i64, agent_logs: &[String]) {
    let stored: HashSet<&str> = pods.iter().map(|p| p.metadata.name.as_str()).collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|n| !stored.contains(n.as_str()))
        .collect();
    assert!(lost.is_empty(), "acknowledged pods lost: {lost:?}");
    let mut cpu: HashMap<&str, i64> = HashMap::new();
    for pod in pods {
        *cpu.entry(pod.spec.node_name.as_str()).or_default() += common::cpu_millis(pod);
    }
    for (node, used) in cpu {
        assert!(used <= node_cpu, "node {node} is over-committed: {used}m");
    }
    // An agent logs each start under its node's span: a pod started on two nodes was bound
    // twice.
    let mut nodes_of: HashMap<String, HashSet<String>> = HashMap::new();
    for line in agent_logs
        .iter()
        .flat_map(|log| log.lines())
        .filter(|l| l.contains(common::POD_STARTED))
    {
        let field = |name: &str| {
            let at = line.find(name)? + name.len();
            Some(
                line[at..]
                    .split(|c: char| c.is_whitespace() || c == '}' || c == ':')
                    .next()?
                    .to_string(),
            )
        };
        if let (Some(uid), Some(node)) = (field("uid="), field("node=")) {
            nodes_of.entry(uid).or_default().insert(node);
        }
    }
    assert!(
        nodes_of.len() >= acknowledged.len(),
        "the agents' logs show {} pods started, fewer than the {} acknowledged",
        nodes_of.len(),
        acknowledged.len()
    );
    let twice: Vec<_> = nodes_of
        .iter()
        .filter(|(_, nodes)| nodes.len() > 1)
        .collect();
    assert!(twice.is_empty(), "pods started on two nodes: {twice:?}");
}

/// Applies `batches` batches of 50 pods through a failing-over client, calling `fault`
/// after batch `at`; returns the names of the pods whose apply was acknowledged.
fn apply_run(
    cluster: &mut HaCluster,
    batches: usize,
    at: usize,
    prefix: &str,
    mut fault: impl FnMut(&mut HaCluster),
) -> Vec<String> {
    let mut client = cluster.client();
    let mut acknowledged = Vec::new();
    for b in 0..batches {
        if b == at {
            fault(cluster);
        }
        let objects = pod_batch(b, prefix);
        match cluster.rt.block_on(client.apply(&objects, false)) {
            Ok(applied) => acknowledged.extend(applied.into_iter().map(|a| a.name)),
            Err(e) => panic!("apply of batch {b} failed: {e}\n{}", cluster.logs()),
        }
    }
    acknowledged
}

#[test]
fn killing_the_leader_mid_run_loses_nothing_and_a_standby_takes_over() {
    let Some(etcd) = etcd_or_skip("killing_the_leader_mid_run") else {
        return;
    };
    let mut cluster = HaCluster::start(&etcd, 3);
    cluster.start_agents(NODES);
    let old = cluster.leader();
    let mut takeover = None;
    let acknowledged = apply_run(&mut cluster, 20, 8, "pod", |cluster| {
        cluster.replicas[old].1.kill();
        takeover = Some(cluster.watch_takeover(Instant::now()));
    });
    let (first, took) = takeover
        .expect("killed")
        .join()
        .expect("watching the takeover");
    let new = cluster.leader();
    assert_eq!(new, first, "the standby that took over still leads");
    eprintln!(
        "failover: replica-{} led {took:?} after replica-{} was killed",
        new + 1,
        old + 1
    );
    // The bound is the election's (lease, then one retry), with room for a loaded machine.
    assert!(
        took <= LEASE + RETRY + Duration::from_secs(2),
        "the standby took {took:?} to lead\n{}",
        cluster.logs()
    );
    assert_eq!(acknowledged.len(), 1000);
    assert_invariants(&cluster, &acknowledged);
}

#[test]
fn a_write_through_one_replica_is_read_at_once_through_another() {
    let Some(etcd) = etcd_or_skip("a_write_through_one_replica_is_read_at_once_through_another")
    else {
        return;
    };
    let cluster = HaCluster::start(&etcd, 2);
    let connect = |port: u16| {
        cluster
            .rt
            .block_on(Client::connect(&format!("127.0.0.1:{port}")))
            .expect("the replica answers")
    };
    let (mut a, mut b) = (
        connect(cluster.replicas[0].0),
        connect(cluster.replicas[1].0),
    );
    let mut applied = Vec::new();
    for i in 0..100 {
        let name = format!("read-{i:03}");
        let yaml = common::pod_yaml(&name, "100m", "", "");
        let objects: Vec<Object> =
            berth_cli::manifest::parse_str("pod.yaml", &yaml, Default::default())
                .expect("test manifest")
                .manifests
                .into_iter()
                .map(|m| m.object)
                .collect();
        cluster
            .rt
            .block_on(a.apply(&objects, false))
            .expect("applied through replica-1");
        // At once, on the other replica: its cache waits for its etcd watch to reach the
        // revision etcd has now (kube's consistent reads from cache).
        match cluster.rt.block_on(b.get(Kind::Pod, "default", &name)) {
            Ok(object) => assert_eq!(object.meta().name, name),
            Err(e) => panic!("try {i}: {name} not read through replica-2: {e}"),
        }
        applied.push(name);
        let listed: Vec<String> = cluster
            .rt
            .block_on(b.list(Kind::Pod, "default", "", ""))
            .expect("listed through replica-2")
            .iter()
            .map(|o| o.meta().name.clone())
            .collect();
        assert_eq!(listed, applied, "try {i}: the list through replica-2");
    }
}

#[test]
fn replicas_exit_on_sigterm_after_etcd_is_gone() {
    let Some(etcd) = etcd_or_skip("replicas_exit_on_sigterm_after_etcd_is_gone") else {
        return;
    };
    let mut cluster = HaCluster::start(&etcd, 2);
    cluster.start_agents(2);
    let leader = cluster.leader();
    let mut client = cluster.client();
    cluster
        .rt
        .block_on(client.apply(&pod_batch(0, "gone"), false))
        .expect("applied");
    for member in &mut cluster.etcd {
        member.kill();
    }
    // The leader (its loops and writers draining against no etcd) and the standby (its
    // campaign retrying against no etcd) both stop by themselves.
    for i in [leader, 1 - leader] {
        let replica = &mut cluster.replicas[i].1;
        replica.signal("TERM");
        let name = replica.name.clone();
        let exited = (0..600).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            matches!(cluster.replicas[i].1.child.try_wait(), Ok(Some(_)))
        });
        assert!(
            exited,
            "{name} did not exit within 30 s of SIGTERM:\n{}",
            cluster.log_of(&name)
        );
    }
}

#[test]
fn killing_an_etcd_member_mid_run_is_only_retried_requests() {
    let Some(etcd) = etcd_or_skip("killing_an_etcd_member_mid_run") else {
        return;
    };
    let mut cluster = HaCluster::start(&etcd, 2);
    cluster.start_agents(NODES);
    let acknowledged = apply_run(&mut cluster, 10, 4, "pod", |cluster| {
        cluster.etcd[0].kill();
    });
    // apply_run panics on any failed apply: the clients saw nothing worse than retries.
    assert_eq!(acknowledged.len(), 500);
    assert_invariants(&cluster, &acknowledged);
}

#[test]
fn a_paused_leader_writes_nothing_after_losing_its_lease() {
    let Some(etcd) = etcd_or_skip("a_paused_leader_writes_nothing") else {
        return;
    };
    let mut cluster = HaCluster::start(&etcd, 2);
    cluster.start_agents(NODES);
    let old = cluster.leader();
    let old_identity = cluster.identity(old);
    let before = apply_run(&mut cluster, 2, usize::MAX, "before", |_| {});
    assert_invariants(&cluster, &before);

    // Paused past its lease: the other replica takes over and schedules what comes next.
    cluster.replicas[old].1.signal("STOP");
    let new = 1 - old;
    wait_for("the other replica leads", GUARD, || {
        cluster
            .log_of(&cluster.replicas[new].1.name)
            .contains(LEADING)
    });
    let after = apply_run(&mut cluster, 2, usize::MAX, "after", |_| {});
    // Thawed, it finds its lease gone and stops its loops; whatever it still had queued
    // is refused by the fence.
    cluster.replicas[old].1.signal("CONT");
    wait_for(
        "the thawed replica notices it lost the lease",
        GUARD,
        || cluster.log_of(&cluster.replicas[old].1.name).contains(LOST),
    );
    assert_invariants(&cluster, &after);

    let new_identity = cluster.identity(new);
    let events: Vec<_> = cluster
        .list(Kind::Event)
        .into_iter()
        .filter_map(common::as_event)
        .collect();
    for event in events.iter().filter(|e| e.reason == "Scheduled") {
        let name = &event.involved_object.name;
        if name.starts_with("after-") {
            assert_eq!(
                event.reporting_instance, new_identity,
                "{name} was scheduled by the paused replica"
            );
        }
        assert!(
            event.reporting_instance == old_identity || event.reporting_instance == new_identity,
            "{event:?}"
        );
    }
    let scheduled_after = events
        .iter()
        .filter(|e| e.reason == "Scheduled" && e.involved_object.name.starts_with("after-"))
        .count();
    assert_eq!(
        scheduled_after,
        after.len(),
        "every later pod was scheduled once"
    );
}

/// The figures of docs/reliability.md: `BERTH_HA_KILLS` (20) leader kills with SIGKILL,
/// evenly spread over a run of `BERTH_HA_PODS` (10,000) pods on 3 etcd members, 3 replicas
/// and 100 simulated nodes; each killed replica is started again, so three remain. Prints
/// the failover times (kill to a standby leading) and checks the invariants: no
/// acknowledged pod lost, none bound twice, no node over-committed, all Running.
#[test]
#[ignore = "a long run for docs/reliability.md: cargo test --test ha figures -- --ignored --nocapture"]
fn figures_leader_kills_during_a_long_run() {
    let Some(etcd) = etcd_or_skip("figures_leader_kills_during_a_long_run") else {
        return;
    };
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let pods = setting("BERTH_HA_PODS", 10_000);
    let kills = setting("BERTH_HA_KILLS", 20);
    let batches = pods / 50;
    let every = (batches / (kills + 1)).max(1);
    let mut cluster = HaCluster::start(&etcd, 3);
    cluster.start_agents(pods.div_ceil(1000) * 10);
    cluster.leader();
    let started = Instant::now();
    let mut client = cluster.client();
    let mut acknowledged = Vec::new();
    let mut failovers = Vec::new();
    for b in 0..batches {
        if b > 0 && b % every == 0 && failovers.len() < kills {
            // One failover at a time: the next kill waits for a leader.
            let old = cluster.leader();
            cluster.replicas[old].1.kill();
            let takeover = cluster.watch_takeover(Instant::now());
            cluster.restart_replica(old);
            // The applies go on during the failover; the takeover is timed on its own.
            failovers.push(takeover);
        }
        let objects = pod_batch(b, "pod");
        match cluster.rt.block_on(client.apply(&objects, false)) {
            Ok(applied) => acknowledged.extend(applied.into_iter().map(|a| a.name)),
            Err(e) => panic!("apply of batch {b} failed: {e}\n{}", cluster.logs()),
        }
    }
    let mut took: Vec<Duration> = failovers
        .into_iter()
        .map(|t| t.join().expect("watching a takeover").1)
        .collect();
    assert_invariants_within(&cluster, &acknowledged, Duration::from_secs(900));
    took.sort();
    let elapsed = started.elapsed();
    eprintln!(
        "figures: {} pods acknowledged and Running in {elapsed:?}, {} leader kills, failover p50 {:?} max {:?} (lease {LEASE:?}, retry {RETRY:?}); lost 0, bound twice 0, over-committed 0",
        acknowledged.len(),
        took.len(),
        took[took.len() / 2],
        took[took.len() - 1],
    );
    assert_eq!(took.len(), kills);
    assert_eq!(acknowledged.len(), pods);
}

// ---------------------------------------------------------------------------------------
// `berth dev --ha` itself: issue 13's Done-when, and `get -w` across a failover.

/// A scheduler replica of `berth dev --ha`, as its banner lists it.
#[derive(Debug)]
struct DevReplica {
    name: String,
    addr: String,
    pid: u32,
}

/// The replicas the banner of `berth dev --ha` lists: `  scheduler-N: ADDR (pid P)`.
fn dev_replicas(banner: &str) -> Vec<DevReplica> {
    banner
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.trim().split_once(": ")?;
            let (addr, pid) = rest.split_once(" (pid ")?;
            if !name.starts_with("scheduler-") {
                return None;
            }
            Some(DevReplica {
                name: name.to_string(),
                addr: addr.to_string(),
                pid: pid.trim_end_matches(')').parse().ok()?,
            })
        })
        .collect()
}

/// A pod's name and resourceVersion, one change of a watch.
type Change = (String, u64);

/// Reads `name version` lines (the CLI watch's jsonpath) as changes.
fn change_of(line: &str) -> Option<Change> {
    let (name, version) = line.split_once(' ')?;
    Some((name.to_string(), version.trim().parse().ok()?))
}

/// The versions each pod went through, in the order seen, keeping only the pods named
/// `prefix...` and the versions up to `last[pod]`.
fn histories(
    changes: &[Change],
    prefix: &str,
    last: &HashMap<String, u64>,
) -> HashMap<String, Vec<u64>> {
    let mut by_pod: HashMap<String, Vec<u64>> = HashMap::new();
    for (name, version) in changes {
        if name.starts_with(prefix) && last.get(name).is_some_and(|l| version <= l) {
            by_pod.entry(name.clone()).or_default().push(*version);
        }
    }
    by_pod
}

/// Issue 13's Done-when on `berth dev --ha` itself: three etcd members and three replicas;
/// the leader replica killed with SIGKILL while pods are being applied; a standby leads
/// within the lease (kube's default, 15 s) and one retry period, every acknowledged pod is
/// stored and Running, none bound twice, no node over-committed. Meanwhile `berth get pods
/// -w`, given the leader's address first, follows the watch on to the next replica from
/// the last resourceVersion it saw: each pod's changes, as a watch on a replica that stayed
/// up reports them, each once and in order.
#[test]
fn on_berth_dev_ha_a_killed_leader_loses_nothing_and_get_w_follows_the_next_replica() {
    let Some(_) = etcd_or_skip("on_berth_dev_ha") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = dir.path().join("config");
    let mut dev = common::StopOnDrop(common::spawn_berth_dev(
        dir.path(),
        &config,
        free_port(),
        &["--ha", "--nodes", "3"],
    ));
    let dev_log = || std::fs::read_to_string(dir.path().join("dev.log")).unwrap_or_default();
    wait_for("berth dev --ha is up", GUARD, || {
        assert!(
            matches!(dev.0.child.try_wait(), Ok(None)),
            "berth dev exited:\n{}",
            dev_log()
        );
        dev_log().contains("One replica leads")
    });
    let replicas = dev_replicas(&dev_log());
    assert_eq!(replicas.len(), 3, "{}", dev_log());
    let logs = dir.path().join("data").join("logs");
    let log_of = |name: &str| {
        common::strip_ansi(
            &std::fs::read_to_string(logs.join(format!("{name}.log"))).unwrap_or_default(),
        )
    };
    let leading = |replicas: &[DevReplica]| -> Vec<usize> {
        (0..replicas.len())
            .filter(|&i| leads(&log_of(&replicas[i].name)))
            .collect()
    };
    let mut leader = None;
    wait_for("one replica leads", GUARD, || {
        let now = leading(&replicas);
        leader = (now.len() == 1).then(|| now[0]);
        leader.is_some()
    });
    let leader = leader.expect("a leader");
    let standby = (leader + 1) % replicas.len();
    let token = berth_cli::config::read_config(&config)
        .expect("the client config")
        .expect("berth dev wrote the client config")
        .token;
    let rt = common::runtime();
    let connect = |server: &str| {
        let target = Target {
            server: server.to_string(),
            token: token.clone(),
            ca: None,
        };
        rt.block_on(Client::connect_to(&target))
            .expect("a replica answers")
    };

    // The reference: a watch on a standby that stays up, begun before anything is applied.
    let (reference_tx, reference) = std::sync::mpsc::channel::<Change>();
    let mut reference_client = connect(&replicas[standby].addr);
    let (_, mut reference_watch) = rt
        .block_on(reference_client.list_and_watch(Kind::Pod, "", ""))
        .expect("watching pods on the standby");
    let reference_task = rt.spawn(async move {
        while let Some(Ok((_, object))) = reference_watch.next().await {
            let meta = object.meta();
            let version = meta.resource_version.parse().expect("numeric version");
            if reference_tx.send((meta.name.clone(), version)).is_err() {
                return;
            }
        }
    });

    let berth = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .env("BERTH_CONFIG", &config)
            .env_remove("BERTH_SERVER")
            .env_remove("BERTH_TOKEN")
            .env_remove("BERTH_CA")
            .output()
            .expect("running berth")
    };
    let apply = |name: &str, yaml: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, yaml).expect("writing a manifest");
        let out = berth(&["apply", "-f", &common::display(&path)]);
        assert!(out.status.success(), "apply {name}: {out:?}");
    };
    apply("before.yaml", &common::pod_yaml("before", "100m", "", ""));

    // The CLI's watch, on the leader first (it uses the first address that answers), so
    // that the kill breaks it.
    let mut order = vec![leader];
    order.extend((0..replicas.len()).filter(|&i| i != leader));
    let servers = order
        .iter()
        .map(|&i| replicas[i].addr.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let watch_err = std::fs::File::create(dir.path().join("watch.err")).expect("log file");
    let mut watch = common::Proc {
        child: Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(["--server", &servers, "get", "pods", "-w", "-o"])
            .arg("jsonpath={.metadata.name} {.metadata.resourceVersion}{\"\\n\"}")
            .env("BERTH_CONFIG", &config)
            .env_remove("BERTH_SERVER")
            .env_remove("BERTH_TOKEN")
            .env_remove("BERTH_CA")
            .env("RUST_LOG", "berth_cli=debug")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(watch_err))
            .spawn()
            .expect("starting berth get -w"),
        name: "berth get -w".into(),
    };
    let mut lines = common::Lines::of(&mut watch.child);
    lines.wait_for("for the pod listed first", |l| l.starts_with("before "));

    // 100 pods in 5 applies; the leader is killed after the second.
    let mut acknowledged = vec!["before".to_string()];
    let mut killed = None;
    for b in 0..5 {
        if b == 2 {
            let status = Command::new("kill")
                .args(["-KILL", &replicas[leader].pid.to_string()])
                .status()
                .expect("kill -9");
            assert!(status.success(), "kill -9 {}", replicas[leader].name);
            killed = Some(Instant::now());
        }
        let names: Vec<String> = (b * 20..(b + 1) * 20)
            .map(|i| format!("p-{i:03}"))
            .collect();
        let yaml: String = names
            .iter()
            .map(|n| common::pod_yaml(n, "100m", "", ""))
            .collect();
        apply(&format!("batch-{b}.yaml"), &yaml);
        acknowledged.extend(names);
    }
    let killed = killed.expect("the leader was killed");
    let mut took = None;
    wait_for("a standby leads", GUARD, || {
        let now = leading(&replicas);
        took = now.iter().any(|&i| i != leader).then(|| killed.elapsed());
        took.is_some()
    });
    let took = took.expect("a standby leads");
    eprintln!("berth dev --ha: a standby led {took:?} after the leader was killed");
    // kube-scheduler's defaults: a lease of 15 s, a retry period of 2 s; room for a loaded
    // machine.
    assert!(
        took <= Duration::from_secs(15 + 2 + 3),
        "the standby took {took:?} to lead"
    );

    let client = connect(
        &order[1..]
            .iter()
            .map(|&i| replicas[i].addr.as_str())
            .collect::<Vec<_>>()
            .join(","),
    );
    let pods = || -> Vec<Pod> {
        rt.block_on(client.clone().list(Kind::Pod, "", "", ""))
            .expect("listing pods")
            .into_iter()
            .filter_map(common::as_pod)
            .collect()
    };
    wait_for("every acknowledged pod runs", GUARD, || {
        all_running(&pods(), &acknowledged)
    });
    let pods = pods();
    let agents: Vec<String> = (1..=3).map(|i| log_of(&format!("node-{i}"))).collect();
    assert_placements(&pods, &acknowledged, 4000, &agents);

    // Both watches reach each pod's version as listed now; up to it, the CLI printed each
    // pod's changes exactly as the reference watch saw them.
    let last: HashMap<String, u64> = pods
        .iter()
        .map(|p| {
            let version = p
                .metadata
                .resource_version
                .parse()
                .expect("numeric version");
            (p.metadata.name.clone(), version)
        })
        .collect();
    let mut reference_seen: Vec<Change> = Vec::new();
    wait_for(
        "the reference watch reaches the listed versions",
        GUARD,
        || {
            reference_seen.extend(reference.try_iter());
            last.iter()
                .all(|(n, v)| reference_seen.iter().any(|(rn, rv)| rn == n && rv >= v))
        },
    );
    let reached = |(name, version): &Change| last.get(name).is_some_and(|l| version >= l);
    let mut missing: HashSet<&String> = last.keys().filter(|n| n.starts_with("p-")).collect();
    for change in lines.seen.iter().filter_map(|l| change_of(l)) {
        if reached(&change) {
            missing.remove(&change.0);
        }
    }
    while !missing.is_empty() {
        let line = lines.wait_within("with every pod's listed version", GUARD, |_| true);
        if let Some(change) = change_of(&line).filter(|c| reached(c)) {
            missing.remove(&change.0);
        }
    }
    let cli_seen: Vec<Change> = lines.seen.iter().filter_map(|l| change_of(l)).collect();
    let want = histories(&reference_seen, "p-", &last);
    let got = histories(&cli_seen, "p-", &last);
    assert_eq!(want.len(), 100, "the reference saw every pod: {want:?}");
    for (pod, versions) in &want {
        assert!(
            versions.windows(2).all(|w| w[0] < w[1]),
            "the reference's versions of {pod} go up: {versions:?}"
        );
        assert_eq!(
            got.get(pod),
            Some(versions),
            "berth get -w printed {pod}'s changes differently from a watch that never broke\n{}",
            std::fs::read_to_string(dir.path().join("watch.err")).unwrap_or_default()
        );
    }
    assert!(
        matches!(watch.child.try_wait(), Ok(None)),
        "berth get -w is still watching"
    );
    watch.kill();
    drop(reference_client);
    reference_task.abort();
    let status = dev.0.terminate();
    assert!(status.success(), "berth dev stops cleanly: {status}");
}
