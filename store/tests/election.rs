//! Leader election and fenced commits on the embedded store: the local elector grants one
//! leader at a time, and a guard refuses writes once its leadership is given up.

use std::sync::Arc;
use std::time::Duration;

use berth_proto::model::{Kind, Object, ObjectMeta, Pod};
use berth_store::{Elector, Error, FencedStore, LocalElector, ObjectStore, Op, SledStore};

fn pod(name: &str) -> Object {
    Object::Pod(Pod {
        metadata: ObjectMeta {
            namespace: "default".into(),
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    })
}

#[test]
fn local_elector_grants_one_leader_and_hands_over_on_resign() {
    let elector = Arc::new(LocalElector::new());
    let first = elector.campaign("a").expect("first campaign wins at once");
    assert_eq!(first.identity(), "a");
    assert!(!*first.lost().borrow(), "a fresh leadership is held");

    let (won_tx, won_rx) = std::sync::mpsc::channel();
    let second = std::thread::spawn({
        let elector = Arc::clone(&elector);
        move || {
            let leadership = elector.campaign("b").expect("second campaign");
            won_tx.send(()).expect("the test waits");
            leadership
        }
    });
    // The second campaigner blocks while the first leads.
    assert!(
        won_rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "b must not lead while a does"
    );

    let lost = first.lost();
    let guard = first.guard();
    first.resign();
    assert!(*lost.borrow(), "resigning marks the leadership lost");
    assert!(!guard.is_held());
    won_rx.recv().expect("b leads once a resigned");
    let second = second.join().expect("thread");
    assert_eq!(second.identity(), "b");
    assert!(second.guard().is_held());
}

#[test]
fn fenced_commit_is_refused_after_leadership_is_lost_and_writes_nothing() {
    let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("store"));
    let elector = LocalElector::new();
    let leadership = elector.campaign("a").expect("campaign");
    let fenced = FencedStore::new(Arc::clone(&store), leadership.guard());

    fenced
        .commit(vec![Op::Create(pod("while-leader"))])
        .expect("the leader writes");
    let old = leadership.guard();
    store
        .commit_guarded(&old, vec![Op::Create(pod("guarded"))])
        .expect("a held guard writes");
    let revision = store.revision();

    drop(leadership);
    let err = fenced
        .commit(vec![Op::Create(pod("after-loss"))])
        .expect_err("a deposed leader cannot write");
    assert!(
        matches!(&err, Error::NotLeader { identity } if identity == "a"),
        "{err:?}"
    );
    assert!(err.to_string().contains("not the leader"), "{err}");
    let err = store
        .commit_guarded(&old, vec![Op::Create(pod("after-loss"))])
        .expect_err("the old guard is refused");
    assert!(matches!(err, Error::NotLeader { .. }), "{err:?}");

    assert_eq!(store.revision(), revision, "nothing was written");
    let names: Vec<String> = store
        .list(Kind::Pod, None)
        .expect("list")
        .iter()
        .map(|o| o.meta().name.clone())
        .collect();
    assert_eq!(names, ["guarded", "while-leader"]);
    // Reads still go through a fenced store.
    assert_eq!(fenced.list(Kind::Pod, None).expect("list").len(), 2);
}
