//! Leader election and fenced commits on the embedded store: the local elector grants one
//! leader at a time, and a guard refuses writes once its leadership is given up.

use std::sync::Arc;
use std::time::Duration;

use berth_proto::model::{Kind, Object};
use berth_store::{Elector, Error, FencedStore, LocalElector, ObjectStore, Op, SledStore};

fn pod(name: &str) -> Object {
    common::pod("default", name)
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

mod common;

/// Fast election timing for tests (etcd's smallest lease is a few seconds).
fn fast() -> berth_store::ElectionConfig {
    berth_store::ElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(500),
    }
}

/// Campaigns for `identity` on its own thread; the receiver gets the leadership.
fn campaign_in_background(
    elector: berth_store::EtcdElector,
    identity: &'static str,
) -> std::sync::mpsc::Receiver<berth_store::Leadership> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let leadership = elector.campaign(identity).expect("campaign");
        let _ = tx.send(leadership);
    });
    rx
}

#[test]
fn etcd_electors_take_turns_when_the_leader_resigns() {
    let _serial = common::serial();
    let (Some(a), Some(b)) = (common::store("resign"), common::store("resign")) else {
        return;
    };
    let leader = a.elector(fast()).campaign("a").expect("a leads");
    let standby = campaign_in_background(b.elector(fast()), "b");
    assert!(
        standby.recv_timeout(Duration::from_secs(2)).is_err(),
        "b must not lead while a renews its lease"
    );
    let lost = leader.lost();
    leader.resign();
    assert!(*lost.borrow(), "resigning marks the leadership lost");
    // Resigning revokes the lease, so b need not wait for it to expire.
    let b_leads = standby.recv().expect("b leads once a resigned");
    assert_eq!(b_leads.identity(), "b");
    assert!(b_leads.guard().is_held());
}

#[test]
fn a_dead_leaders_guard_is_fenced_off_in_etcd() {
    let _serial = common::serial();
    let (Some(a), Some(b)) = (common::store("fence"), common::store("fence")) else {
        return;
    };
    let leader = a.elector(fast()).campaign("a").expect("a leads");
    let old = leader.guard();
    b.commit_guarded(&old, vec![Op::Create(pod("by-a"))])
        .expect("the leader's guard writes");
    let standby = campaign_in_background(b.elector(fast()), "b");

    // The leader's process dies: its client and keepalive stop, and nothing revokes the
    // lease, so it runs out.
    std::mem::forget(leader);
    drop(a);
    let started = std::time::Instant::now();
    let b_leads = standby
        .recv_timeout(Duration::from_secs(60))
        .expect("b leads once a's lease runs out");
    eprintln!("b took over after {:?}", started.elapsed());

    // The dead leader's guard still looks held where it lives (no one told it), but etcd
    // refuses it: the election key is not the one it created.
    assert!(old.is_held(), "the guard itself was never told");
    let revision = b.revision();
    let err = b
        .commit_guarded(&old, vec![Op::Create(pod("by-deposed-a"))])
        .expect_err("a deposed leader cannot write");
    assert!(
        matches!(&err, Error::NotLeader { identity } if identity == "a"),
        "{err:?}"
    );
    let names: Vec<String> = b
        .list(Kind::Pod, None)
        .expect("list")
        .iter()
        .map(|o| o.meta().name.clone())
        .collect();
    assert_eq!(names, ["by-a"], "nothing of the refused commit was written");
    assert!(b.revision() >= revision);

    let fenced = FencedStore::new(Arc::new(b), b_leads.guard());
    fenced
        .commit(vec![Op::Create(pod("by-b"))])
        .expect("the new leader writes");
}
