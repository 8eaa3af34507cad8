//! A real etcd member for the store's tests: started once per test binary on free loopback
//! ports with its data under the target's tmp folder, killed when the test process exits.
//! Without `etcd` on the PATH the etcd tests skip with a message, and fail when `CI` is set.
//! Also the object fixtures the store's tests share.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use berth_proto::model::{Kind, Node, Object, ObjectKey, ObjectMeta, Pod};
use berth_store::{EtcdConfig, EtcdStore};

/// The running member's client URL, or why there is none.
fn member() -> &'static Result<String, String> {
    static MEMBER: OnceLock<Result<String, String>> = OnceLock::new();
    MEMBER.get_or_init(start)
}

/// etcd tests of one binary run one at a time: they assert on the cluster-wide revision.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The client URL of the test member; `None` (after a message) when etcd is not installed.
/// Panics when etcd is missing and `CI` is set, or when it does not start.
pub fn endpoint() -> Option<String> {
    match member() {
        Ok(url) => Some(url.clone()),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI is set, so the etcd tests must run: {why}")
        }
        Err(why) => {
            eprintln!("skipping an etcd test: {why}");
            None
        }
    }
}

/// A store on the test member under a prefix of its own, so tests do not see each other's
/// objects.
pub fn store(test: &str) -> Option<EtcdStore> {
    let url = endpoint()?;
    let mut config = EtcdConfig::new(vec![url]);
    config.prefix = format!("/test-{}-{test}/", std::process::id());
    Some(EtcdStore::connect(config).expect("connect to the test etcd"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

fn start() -> Result<String, String> {
    if Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        return Err("`etcd` is not on the PATH (Debian: apt-get install etcd-server)".into());
    }
    let exe = std::env::current_exe().expect("test binary path");
    let name = exe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("etcd-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("etcd data folder");
    let (client, peer) = (free_port(), free_port());
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let mut command = Command::new("etcd");
    command
        .args(["--name", "test", "--data-dir"])
        .arg(dir.join("data"))
        .args(["--listen-client-urls", &client_url])
        .args(["--advertise-client-urls", &client_url])
        .args(["--listen-peer-urls", &peer_url])
        .args(["--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("test={peer_url}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("etcd.log")).expect("etcd log"));
    // The member dies with the test process: a thread that lives as long as the process
    // starts it with a parent-death signal (the signal follows the thread that forked).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe, and nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let spawned = command.spawn().map(|_child| ());
        let _ = tx.send(spawned.map_err(|e| e.to_string()));
        loop {
            std::thread::park();
        }
    });
    rx.recv()
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot start etcd: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", client)).is_err() {
        if Instant::now() > deadline {
            return Err(format!(
                "etcd did not listen on {client_url}; see {}",
                dir.join("etcd.log").display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(client_url)
}

pub fn pod(namespace: &str, name: &str) -> Object {
    Object::Pod(Pod {
        metadata: ObjectMeta {
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    })
}

pub fn node(name: &str) -> Object {
    Object::Node(Node {
        metadata: ObjectMeta {
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    })
}

pub fn pod_key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Pod, namespace, name)
}

/// The pod with `spec.nodeName` set, to tell versions apart.
pub fn bound(mut object: Object, node_name: &str) -> Object {
    if let Object::Pod(p) = &mut object {
        p.spec.node_name = node_name.into();
    }
    object
}

pub fn node_name(object: &Object) -> &str {
    match object {
        Object::Pod(p) => &p.spec.node_name,
        other => panic!("expected a pod, got {other:?}"),
    }
}

pub fn rv(object: &Object) -> u64 {
    object
        .meta()
        .resource_version
        .parse()
        .expect("resourceVersion is a decimal integer")
}
