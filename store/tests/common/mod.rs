//! A real etcd member for the store's tests, started once per test binary (through
//! `berth_store::testing`) and killed when the test process exits; without `etcd` on the
//! PATH the etcd tests skip with a message, and fail when `CI` is set. Also the object
//! fixtures the store's tests share.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use berth_proto::model::{Kind, Node, Object, ObjectKey, ObjectMeta, Pod};
use berth_store::testing::{etcd_available, skip_or_fail, EtcdMember};
use berth_store::{EtcdConfig, EtcdStore};

/// The running member's client URL, or why there is none.
fn member() -> &'static Result<String, String> {
    static MEMBER: OnceLock<Result<String, String>> = OnceLock::new();
    MEMBER.get_or_init(|| {
        let exe = std::env::current_exe().expect("test binary path");
        let name = exe
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("etcd-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        // The member lives as long as the process: a thread that never ends holds it (its
        // parent-death signal follows the thread that started it).
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || match EtcdMember::start(&dir) {
            Ok(member) => {
                let _ = tx.send(Ok(member.url().to_string()));
                loop {
                    std::thread::park();
                }
            }
            Err(why) => {
                let _ = tx.send(Err(why));
            }
        });
        rx.recv().map_err(|e| e.to_string())?
    })
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
        Err(why) if etcd_available().is_err() => {
            skip_or_fail(why);
            None
        }
        Err(why) => panic!("the test etcd did not start: {why}"),
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

pub fn pod(namespace: &str, name: &str) -> Object {
    Object::Pod(Box::new(Pod {
        metadata: ObjectMeta {
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    }))
}

pub fn node(name: &str) -> Object {
    Object::Node(Box::new(Node {
        metadata: ObjectMeta {
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    }))
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
