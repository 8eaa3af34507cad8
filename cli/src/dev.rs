//! `berth dev`: a whole local cluster from one command — a scheduler on the embedded store
//! and N agents with the sim runtime, as child processes on loopback — that the other
//! commands find without flags, and that stops cleanly on Ctrl-C.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
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
}

/// The processes of a running dev cluster.
struct Cluster {
    scheduler: Child,
    agents: Vec<(String, Child)>,
}

impl Cluster {
    /// Stops agents first (so they do not reconnect in a loop), then the scheduler, each with
    /// SIGTERM and a grace period, then SIGKILL.
    async fn stop(&mut self) {
        for (_, agent) in &mut self.agents {
            terminate(agent).await;
        }
        terminate(&mut self.scheduler).await;
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
        None => pick_address()?,
    };
    let server = format!("http://{listen}");
    let exe = std::env::current_exe().context("finding the berth executable")?;

    let scheduler = spawn(
        &exe,
        &[
            "scheduler".into(),
            "--listen".into(),
            listen.to_string(),
            "--data-dir".into(),
            data_dir.join("store").display().to_string(),
        ],
        &logs.join("scheduler.log"),
    )?;
    let mut cluster = Cluster {
        scheduler,
        agents: Vec::new(),
    };
    let result = start_and_wait(&mut cluster, &args, &exe, &server, &logs).await;
    if let Err(e) = result {
        cluster.stop().await;
        return Err(e.context(format!(
            "starting the dev cluster (logs in {})",
            logs.display()
        )));
    }
    let config = crate::config::config_path();
    crate::config::write_config(&config, &server)
        .with_context(|| format!("writing the client config {}", config.display()))?;

    println!(
        "Berth dev cluster is up: scheduler at {server} with {} node(s).",
        args.nodes
    );
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

/// 127.0.0.1:7070 if free, else a free port chosen by the kernel.
fn pick_address() -> Result<SocketAddr> {
    let preferred: SocketAddr = "127.0.0.1:7070".parse().expect("valid literal address");
    if TcpListener::bind(preferred).is_ok() {
        return Ok(preferred);
    }
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?)
}

fn spawn(exe: &Path, args: &[String], log: &Path) -> Result<Child> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    Command::new(exe)
        .args(args)
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
    server: &str,
    logs: &Path,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut client = loop {
        if let Some(status) = cluster.scheduler.try_wait()? {
            bail!("the scheduler exited ({status}) before it was ready");
        }
        match crate::client::connect(server).await {
            Ok(c) => break c,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.context("the scheduler did not come up in time")),
        }
    };
    for i in 1..=args.nodes {
        let name = format!("node-{i}");
        let child = spawn(
            exe,
            &[
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
            ],
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
            .filter(|o| match &o.kind {
                Some(pb::object::Kind::Node(n)) => {
                    cluster
                        .agents
                        .iter()
                        .any(|(name, _)| n.metadata.as_ref().is_some_and(|m| &m.name == name))
                        && n.status.as_ref().is_some_and(|s| {
                            s.conditions
                                .iter()
                                .any(|c| c.r#type == "Ready" && c.status == "True")
                        })
                }
                _ => false,
            })
            .count();
        if ready == cluster.agents.len() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "only {ready} of {} nodes became Ready in time",
                cluster.agents.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits for Ctrl-C or SIGTERM (Ok), or for a process of the cluster to die (Err).
async fn wait_for_exit(cluster: &mut Cluster) -> Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let mut check = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = term.recv() => return Ok(()),
            _ = check.tick() => {
                if let Some(status) = cluster.scheduler.try_wait()? {
                    bail!("the scheduler exited unexpectedly ({status})");
                }
                for (name, agent) in &mut cluster.agents {
                    if let Some(status) = agent.try_wait()? {
                        bail!("agent {name} exited unexpectedly ({status})");
                    }
                }
            }
        }
    }
}
