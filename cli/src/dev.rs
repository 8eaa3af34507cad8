//! `berth dev`: a whole local cluster from one command — a scheduler on the embedded store
//! and N agents with the sim runtime, as child processes on loopback — that the other
//! commands find without flags, and that stops cleanly on Ctrl-C.
//!
//! The cluster is not open: `berth dev` writes random tokens into `<data-dir>/tokens.csv`
//! (an admin token for the CLI, a viewer token for the web view and the metrics, one node
//! token per agent), and with `--tls` a throwaway CA and a server certificate for 127.0.0.1
//! and localhost; the client config it writes holds the server, the admin token and the CA.
//!
//! With `--ha` the control plane is highly available: three etcd members ([`crate::etcd`]),
//! `--replicas` scheduler replicas on the etcd store (one leads, the others stand by), and
//! agents and the client config naming every replica, so that killing any one replica (the
//! leader too) or any one etcd member leaves the cluster working.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::progress::Progress;
use anyhow::{bail, Context, Result};
use berth_proto::model::Object;
use berth_proto::names;
use berth_proto::pb;
use tokio::process::{Child, Command};

/// Flags of `berth dev`.
#[derive(clap::Args, Debug, Clone)]
pub struct DevArgs {
    /// Number of agents (nodes) to start.
    #[arg(long, default_value_t = 3)]
    pub nodes: u32,
    /// Folder for the store and the logs; a temporary folder, removed on exit, when left out.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Address of the scheduler; when left out 127.0.0.1:7070, or a free port if that is taken.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// CPU of each simulated node.
    #[arg(long, default_value = "4")]
    pub node_cpu: String,
    /// Memory of each simulated node.
    #[arg(long, default_value = "8Gi")]
    pub node_memory: String,
    /// Pod slots of each simulated node.
    #[arg(long, default_value_t = 110)]
    pub node_pods: u32,
    /// How long to wait for the cluster to come up.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Serve TLS, with a throwaway CA made for this cluster (in the data folder's `tls/`).
    #[arg(long)]
    pub tls: bool,
    /// Simulated GPUs on each node, `N[:MODEL[:MEMORY]]` (the agents' `--gpus`); the
    /// DeviceClass `gpu.berth.dev` is created with them.
    #[arg(long, value_name = "N[:MODEL[:MEMORY]]", value_parser = gpus_flag)]
    pub gpus: Option<String>,
    /// A highly available control plane: three etcd members (`etcd` must be on the PATH)
    /// and --replicas scheduler replicas that elect a leader; agents and the CLI fail over
    /// between the replicas.
    #[arg(long)]
    pub ha: bool,
    /// Scheduler replicas with --ha.
    #[arg(long, default_value_t = 3, requires = "ha")]
    pub replicas: u32,
}

/// etcd members of `berth dev --ha`: a majority survives the loss of any one.
const HA_ETCD_MEMBERS: usize = 3;

/// A fresh random token: 32 bytes from the thread's CSPRNG (seeded by the OS), as hex.
pub fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The credentials of a dev cluster.
#[derive(Clone)]
pub struct DevTokens {
    /// The CLI's admin token.
    pub admin: String,
    /// A viewer token, for the web view's address (which a browser's history keeps).
    pub viewer: String,
    /// One node token per agent: (node name, token).
    pub nodes: Vec<(String, String)>,
}

impl DevTokens {
    /// New random tokens for the admin and for nodes `node-1`..`node-N`.
    pub fn generate(nodes: u32) -> Self {
        DevTokens {
            admin: random_token(),
            viewer: random_token(),
            nodes: (1..=nodes)
                .map(|i| (format!("node-{i}"), random_token()))
                .collect(),
        }
    }

    /// The scheduler's token file (`TOKEN,NAME,ROLE` lines), readable by its owner only.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = String::from("# berth dev: TOKEN,NAME,ROLE\n");
        text.push_str(&format!("{},admin,admin\n", self.admin));
        text.push_str(&format!("{},web,viewer\n", self.viewer));
        for (node, token) in &self.nodes {
            text.push_str(&format!("{token},{node},node\n"));
        }
        crate::config::write_private(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }

    fn node_token(&self, node: &str) -> Option<&str> {
        self.nodes
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, t)| t.as_str())
    }
}

/// The PEM files of a throwaway PKI.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA's certificate, for clients' `--ca`.
    pub ca: PathBuf,
    /// The server certificate, signed by the CA, for the scheduler's `--tls-cert`.
    pub cert: PathBuf,
    /// The server certificate's private key, for `--tls-key`.
    pub key: PathBuf,
}

/// Makes a CA and a server certificate it signs for `hosts` (DNS names or IP addresses)
/// in `dir`: `ca.pem`, `server.pem`, `server-key.pem` (keys readable by the owner only).
/// Each call makes a new CA, so two calls give certificates that do not trust each other.
pub fn generate_tls(dir: &Path, hosts: &[&str]) -> Result<TlsFiles> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "berth dev CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .context("signing the CA certificate")?;
    let key = KeyPair::generate().context("generating the server key")?;
    let mut params =
        CertificateParams::new(hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>())
            .context("server certificate names")?;
    params
        .distinguished_name
        .push(DnType::CommonName, "berth-scheduler");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .signed_by(&key, &ca_cert, &ca_key)
        .context("signing the server certificate")?;
    let files = TlsFiles {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.pem"),
        key: dir.join("server-key.pem"),
    };
    let write = |path: &Path, text: String| {
        crate::config::write_private(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    };
    write(&files.ca, ca_cert.pem())?;
    write(&files.cert, cert.pem())?;
    write(&files.key, key.serialize_pem())?;
    Ok(files)
}

/// The processes of a running dev cluster.
struct Cluster {
    /// The scheduler replicas (one without --ha), by name.
    schedulers: Vec<(String, Child)>,
    agents: Vec<(String, Child)>,
    /// The etcd members, with --ha.
    etcd: Vec<(String, Child)>,
    /// Whether the cluster survives the loss of one replica or member (--ha).
    ha: bool,
}

impl Cluster {
    /// Stops agents first (so they do not reconnect in a loop), then the schedulers, then
    /// etcd, each with SIGTERM and a grace period, then SIGKILL.
    async fn stop(&mut self) {
        for (_, child) in self
            .agents
            .iter_mut()
            .chain(&mut self.schedulers)
            .chain(&mut self.etcd)
        {
            terminate(child).await;
        }
    }
}

/// Sends SIGTERM and waits up to 10 s before killing.
async fn terminate(child: &mut Child) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on a child we spawned and have not reaped; no memory is involved.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
        if tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_ok()
        {
            return;
        }
    }
    let _ = child.kill().await;
}

/// Starts the cluster and runs until Ctrl-C (or SIGTERM), or until a process dies.
pub async fn run(args: DevArgs) -> Result<()> {
    if args.nodes == 0 {
        bail!("--nodes: must be at least 1, got 0");
    }
    if args.ha && args.replicas == 0 {
        bail!("--replicas: must be at least 1, got 0");
    }
    let etcd_exe = if args.ha {
        Some(crate::etcd::find_etcd().context("berth dev --ha runs three etcd members")?)
    } else {
        None
    };
    let (data_dir, _temp) = match &args.data_dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("berth-dev-")
                .tempdir()
                .context("creating a temporary data folder")?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    let logs = data_dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let listen = match args.listen {
        Some(addr) => addr,
        None => pick_address(7070)?,
    };
    let web = pick_address(7080)?;
    let metrics = pick_address(7090)?;
    let exe = std::env::current_exe().context("finding the berth executable")?;
    let tokens = DevTokens::generate(args.nodes);
    let token_file = data_dir.join("tokens.csv");
    tokens.write(&token_file)?;
    let mut cluster = Cluster {
        schedulers: Vec::new(),
        agents: Vec::new(),
        etcd: Vec::new(),
        ha: args.ha,
    };
    // With --ha: the etcd members first, healthy before any replica connects.
    let members = match &etcd_exe {
        Some(etcd) => {
            let members = crate::etcd::plan(HA_ETCD_MEMBERS, &data_dir)?;
            for member in &members {
                let child = spawn(
                    etcd,
                    &member.args(&members),
                    &[],
                    &logs.join(format!("{}.log", member.name)),
                )?;
                cluster.etcd.push((member.name.clone(), child));
            }
            if let Err(e) = wait_for_etcd(&mut cluster, &members, args.timeout).await {
                cluster.stop().await;
                return Err(e.context(format!(
                    "starting etcd for the dev cluster (logs in {})",
                    logs.display()
                )));
            }
            members
        }
        None => Vec::new(),
    };
    let replicas = if args.ha { args.replicas } else { 1 };
    let mut listens = vec![listen];
    for _ in 1..replicas {
        listens.push(pick_address(0)?);
    }
    let mut scheduler_args = vec![
        "scheduler".into(),
        "--data-dir".into(),
        data_dir.join("store").display().to_string(),
        "--token-file".into(),
        token_file.display().to_string(),
    ];
    if args.ha {
        scheduler_args.extend(["--store".into(), crate::etcd::store_url(&members)]);
    }
    let tls = if args.tls {
        let files = generate_tls(&data_dir.join("tls"), &["127.0.0.1", "localhost"])?;
        scheduler_args.extend([
            "--tls-cert".into(),
            files.cert.display().to_string(),
            "--tls-key".into(),
            files.key.display().to_string(),
        ]);
        Some(files)
    } else {
        None
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let server = listens
        .iter()
        .map(|l| format!("{scheme}://{l}"))
        .collect::<Vec<_>>()
        .join(",");
    let target = crate::config::Target {
        server: server.clone(),
        token: Some(tokens.admin.clone()),
        ca: tls.as_ref().map(|t| t.ca.clone()),
    };

    for (i, addr) in listens.iter().enumerate() {
        let mut replica_args = scheduler_args.clone();
        replica_args.extend(["--listen".into(), addr.to_string()]);
        // The web view and the metrics are served by the first replica.
        if i == 0 {
            replica_args.extend([
                "--web-listen".into(),
                web.to_string(),
                "--metrics-listen".into(),
                metrics.to_string(),
            ]);
        }
        let name = if args.ha {
            format!("scheduler-{}", i + 1)
        } else {
            "scheduler".to_string()
        };
        let child = spawn(&exe, &replica_args, &[], &logs.join(format!("{name}.log")))?;
        cluster.schedulers.push((name, child));
    }
    let result = start_and_wait(&mut cluster, &args, &exe, &target, &tokens, &logs).await;
    if let Err(e) = result {
        cluster.stop().await;
        return Err(e.context(format!(
            "starting the dev cluster (logs in {})",
            logs.display()
        )));
    }
    let config = crate::config::config_path();
    crate::config::write_client_config(
        &config,
        &crate::config::ClientConfig {
            server: Some(server.clone()),
            token: Some(tokens.admin.clone()),
            ca: target.ca.clone(),
        },
    )
    .with_context(|| format!("writing the client config {}", config.display()))?;

    if args.ha {
        println!(
            "Berth dev cluster is up (HA): {} scheduler replicas on {} etcd members, {} node(s).",
            listens.len(),
            members.len(),
            args.nodes
        );
        for ((name, child), addr) in cluster.schedulers.iter().zip(&listens) {
            let pid = child.id().unwrap_or_default();
            println!("  {name}: {scheme}://{addr} (pid {pid})");
        }
        for ((name, child), member) in cluster.etcd.iter().zip(&members) {
            let pid = child.id().unwrap_or_default();
            println!("  {name}: http://{} (pid {pid})", member.client);
        }
        println!("  store:  {}", crate::etcd::store_url(&members));
        println!(
            "  One replica leads (its log says \"leading\"); kill -9 it and a standby takes over."
        );
    } else {
        println!(
            "Berth dev cluster is up: scheduler at {server} with {} node(s).",
            args.nodes
        );
    }
    println!(
        "  data:   {}{}",
        data_dir.display(),
        if args.data_dir.is_none() {
            " (removed on exit)"
        } else {
            ""
        }
    );
    println!("  logs:   {}", logs.display());
    println!(
        "  web:    http://{web}/?token={} (read-only view, viewer token)",
        tokens.viewer
    );
    println!(
        "  metrics: curl -H 'Authorization: Bearer {}' http://{metrics}/metrics",
        tokens.viewer
    );
    println!(
        "  tokens: {} (admin for the CLI, viewer for the web, one per agent)",
        token_file.display()
    );
    if let Some(tls) = &tls {
        println!(
            "  CA:     {} (TLS for 127.0.0.1 and localhost)",
            tls.ca.display()
        );
    }
    println!(
        "  config: {} (the berth CLI finds this cluster through it)",
        config.display()
    );
    println!();
    println!("Try, in another terminal:");
    println!("  berth get nodes");
    println!("  berth apply -f pod.yaml");
    println!("  berth get pods -o wide");
    println!("  berth describe pod NAME");
    println!();
    println!("Press Ctrl-C to stop the cluster.");

    let outcome = wait_for_exit(&mut cluster).await;
    println!("Stopping the dev cluster...");
    cluster.stop().await;
    println!("Stopped.");
    outcome
}

/// 127.0.0.1:`port` if free, else (or for port 0) a free port chosen by the kernel.
fn pick_address(port: u16) -> Result<SocketAddr> {
    let preferred = SocketAddr::from(([127, 0, 0, 1], port));
    if port != 0 && TcpListener::bind(preferred).is_ok() {
        return Ok(preferred);
    }
    berth_proto::ports::spare_loopback_address().context("finding a free port")
}

/// Starts `exe args` with `env` added (secrets go there, not on the command line where
/// `ps` shows them), its output going to `log`.
fn spawn(exe: &Path, args: &[String], env: &[(&str, &str)], log: &Path) -> Result<Child> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    Command::new(exe)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} {}", exe.display(), args.join(" ")))
}

async fn start_and_wait(
    cluster: &mut Cluster,
    args: &DevArgs,
    exe: &Path,
    target: &crate::config::Target,
    tokens: &DevTokens,
    logs: &Path,
) -> Result<()> {
    let server = target.server.as_str();
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut stderr = std::io::stderr();
    let mut progress = Progress::new(std::io::IsTerminal::is_terminal(&stderr));
    progress.line_to(
        &mut stderr,
        &format!("waiting for the scheduler at {server}"),
    )?;
    let mut client = loop {
        for (name, scheduler) in &mut cluster.schedulers {
            if let Some(status) = scheduler.try_wait()? {
                bail!("{name} exited ({status}) before it was ready");
            }
        }
        match crate::client::connect_to(target).await {
            Ok(c) => break c,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.context("the scheduler did not come up in time")),
        }
    };
    if args.gpus.is_some() {
        let class = Object::DeviceClass(Box::new(berth_scheduler::lab::objects::gpu_class()));
        client
            .apply(pb::ApplyRequest {
                objects: vec![berth_proto::wire::object_to_pb(&class)],
                dry_run: false,
            })
            .await
            .context("creating the DeviceClass gpu.berth.dev")?;
    }
    for i in 1..=args.nodes {
        let name = format!("node-{i}");
        let mut agent_args: Vec<String> = vec![
            "agent".into(),
            "--server".into(),
            server.to_string(),
            "--node-name".into(),
            name.clone(),
            "--runtime".into(),
            "sim".into(),
            "--cpu".into(),
            args.node_cpu.clone(),
            "--memory".into(),
            args.node_memory.clone(),
            "--pods".into(),
            args.node_pods.to_string(),
        ];
        if let Some(ca) = &target.ca {
            agent_args.extend(["--ca".into(), ca.display().to_string()]);
        }
        if let Some(gpus) = &args.gpus {
            agent_args.extend(["--gpus".into(), gpus.clone()]);
        }
        let token = tokens.node_token(&name).unwrap_or_default();
        let child = spawn(
            exe,
            &agent_args,
            &[(crate::config::TOKEN_ENV, token)],
            &logs.join(format!("{name}.log")),
        )?;
        cluster.agents.push((name, child));
    }
    loop {
        for (name, agent) in &mut cluster.agents {
            if let Some(status) = agent.try_wait()? {
                bail!("agent {name} exited ({status}) before its node was ready");
            }
        }
        let nodes = client
            .list(pb::ListRequest {
                kind: pb::Kind::Node as i32,
                ..Default::default()
            })
            .await
            .context("listing nodes")?
            .into_inner()
            .objects;
        let ready = nodes
            .iter()
            .filter_map(|o| match berth_proto::wire::object_from_pb(o) {
                Ok(Object::Node(n)) => Some(n),
                _ => None,
            })
            .filter(|n| {
                cluster
                    .agents
                    .iter()
                    .any(|(name, _)| &n.metadata.name == name)
                    && n.condition(names::CONDITION_READY)
                        .is_some_and(|c| c.status == names::STATUS_TRUE)
            })
            .count();
        if ready == cluster.agents.len() {
            progress.finish_to(&mut stderr)?;
            return Ok(());
        }
        progress.line_to(
            &mut stderr,
            &format!("{ready} of {} nodes Ready", cluster.agents.len()),
        )?;
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "only {ready} of {} nodes became Ready in time",
                cluster.agents.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Checks `--gpus` as the agents will, keeping it as written for them.
fn gpus_flag(spec: &str) -> std::result::Result<String, String> {
    berth_agent::devices::parse_gpus(spec).map(|_| spec.to_string())
}

/// Waits until every etcd member reports healthy (the cluster has a leader), failing when
/// one exits first or `timeout` passes.
async fn wait_for_etcd(
    cluster: &mut Cluster,
    members: &[crate::etcd::EtcdMember],
    timeout: Duration,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        for (name, child) in &mut cluster.etcd {
            if let Some(status) = child.try_wait()? {
                bail!("{name} exited ({status}) before it was healthy");
            }
        }
        let members = members.to_vec();
        let healthy =
            tokio::task::spawn_blocking(move || members.iter().all(|m| m.is_healthy())).await?;
        if healthy {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("etcd did not become healthy within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits for Ctrl-C or SIGTERM (Ok), or for a process of the cluster to die (Err; with
/// --ha only when no scheduler replica is left).
async fn wait_for_exit(cluster: &mut Cluster) -> Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let mut check = tokio::time::interval(Duration::from_millis(500));
    let mut reported = std::collections::HashSet::new();
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = term.recv() => return Ok(()),
            _ = check.tick() => {
                for (name, agent) in &mut cluster.agents {
                    if let Some(status) = agent.try_wait()? {
                        bail!("agent {name} exited unexpectedly ({status})");
                    }
                }
                if !cluster.ha {
                    if let Some((name, scheduler)) = cluster.schedulers.first_mut() {
                        if let Some(status) = scheduler.try_wait()? {
                            bail!("{name} exited unexpectedly ({status})");
                        }
                    }
                    continue;
                }
                // With --ha the loss of a replica or a member is survived: say so once.
                let mut replicas_left = 0;
                for (name, child) in cluster.schedulers.iter_mut().chain(&mut cluster.etcd) {
                    match child.try_wait()? {
                        Some(status) if reported.insert(name.clone()) => {
                            println!("{name} exited ({status}); the others carry on");
                        }
                        Some(_) => {}
                        None if name.starts_with("scheduler") => replicas_left += 1,
                        None => {}
                    }
                }
                if replicas_left == 0 {
                    bail!("every scheduler replica has exited");
                }
            }
        }
    }
}
