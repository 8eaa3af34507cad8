//! Test support (feature `testing`): a real etcd member on free loopback ports for tests
//! that need one, and the rule for when `etcd` is missing: skip with a message, or fail
//! when the `CI` environment variable is set.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether etcd tests can run here: `Ok` when `etcd` is on the PATH, else why not.
pub fn etcd_available() -> Result<(), String> {
    match Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => Ok(()),
        Err(_) => Err("`etcd` is not on the PATH (Debian: apt-get install etcd-server)".into()),
    }
}

/// `true` when an etcd test should run. Without etcd it prints why the test is skipped and
/// returns `false`, or panics when `CI` is set (CI must run every test).
pub fn require_etcd() -> bool {
    match etcd_available() {
        Ok(()) => true,
        Err(why) => skip_or_fail(&why),
    }
}

/// Prints that an etcd test is skipped (returning `false`), or panics when `CI` is set.
pub fn skip_or_fail(why: &str) -> bool {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set, so the etcd tests must run: {why}"
    );
    eprintln!("skipping an etcd test: {why}");
    false
}

/// A single-member etcd cluster on loopback, with its data in a folder of its own; killed
/// when dropped, and (through a parent-death signal) when the thread that started it ends.
#[derive(Debug)]
pub struct EtcdMember {
    child: Child,
    client_url: String,
    client_port: u16,
    peer_url: String,
    dir: PathBuf,
}

impl EtcdMember {
    /// Starts a member with its data and log (`etcd.log`) in `dir`, and returns once it
    /// accepts connections.
    pub fn start(dir: &Path) -> Result<Self, String> {
        etcd_available()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (client_port, peer) = (free_port()?, free_port()?);
        let client_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let child = spawn(dir, &client_url, &peer_url)?;
        let mut member = EtcdMember {
            child,
            client_url,
            client_port,
            peer_url,
            dir: dir.to_path_buf(),
        };
        member.wait_listening()?;
        Ok(member)
    }

    /// Kills the member (SIGKILL, as a crash) and starts it again on the same ports and
    /// data, returning once it accepts connections.
    pub fn restart(&mut self) -> Result<(), String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(&self.dir, &self.client_url, &self.peer_url)?;
        self.wait_listening()
    }

    fn wait_listening(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.client_port)).is_err() {
            if Instant::now() > deadline || matches!(self.child.try_wait(), Ok(Some(_))) {
                return Err(format!(
                    "etcd did not listen on {}; see {}",
                    self.client_url,
                    self.dir.join("etcd.log").display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// The client URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.client_url
    }

    /// The `--store` value for a scheduler on this member (`etcd://127.0.0.1:PORT`).
    pub fn store_url(&self) -> String {
        self.client_url.replacen("http://", "etcd://", 1)
    }
}

impl Drop for EtcdMember {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the etcd process of a member (appending to `etcd.log` in `dir`).
fn spawn(dir: &Path, client_url: &str, peer_url: &str) -> Result<Child, String> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("etcd.log"))
        .map_err(|e| e.to_string())?;
    let mut command = Command::new("etcd");
    command
        .args(["--name", "test", "--data-dir"])
        .arg(dir.join("data"))
        .args(["--listen-client-urls", client_url])
        .args(["--advertise-client-urls", client_url])
        .args(["--listen-peer-urls", peer_url])
        .args(["--initial-advertise-peer-urls", peer_url])
        .args(["--initial-cluster", &format!("test={peer_url}")])
        .stdout(Stdio::null())
        .stderr(log);
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe, and nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    command
        .spawn()
        .map_err(|e| format!("cannot start etcd: {e}"))
}

fn free_port() -> Result<u16, String> {
    berth_proto::ports::spare_loopback_port().map_err(|e| format!("no free loopback port: {e}"))
}
