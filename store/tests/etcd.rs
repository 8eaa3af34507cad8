//! What only the etcd backend promises: etcd's transaction limits are refused whole before
//! anything is sent, and the watch keeps feeding subscribers across compaction and an etcd
//! restart. Runs on a
//! real etcd member (skipped with a message without `etcd`, failing when `CI` is set).

mod common;

use berth_proto::model::{Kind, Object};
use berth_store::testing::EtcdMember;
use berth_store::{Error, EtcdConfig, EtcdStore, ObjectStore, Op, MAX_REQUEST_BYTES, MAX_TXN_OPS};

fn pod(name: &str) -> Object {
    common::pod("default", name)
}

/// A pod carrying an annotation of `bytes` bytes.
fn big_pod(name: &str, bytes: usize) -> Object {
    let mut object = pod(name);
    object
        .meta_mut()
        .annotations
        .insert("example.com/blob".into(), "x".repeat(bytes));
    object
}

#[test]
fn commits_above_etcds_limits_are_refused_whole() {
    let _serial = common::serial();
    let Some(store) = common::store("limits") else {
        return;
    };
    struct Case {
        name: &'static str,
        ops: Vec<Op>,
        want: &'static str,
    }
    let cases = vec![
        Case {
            name: "one op more than --max-txn-ops",
            ops: (0..=MAX_TXN_OPS)
                .map(|i| Op::Create(pod(&format!("p{i}"))))
                .collect(),
            want: "a commit of 129 operations exceeds etcd's limit of 128 operations per transaction (--max-txn-ops)",
        },
        Case {
            name: "one object above --max-request-bytes",
            ops: vec![
                Op::Create(pod("small")),
                Op::Create(big_pod("huge", MAX_REQUEST_BYTES)),
            ],
            want: "pod default/huge is ",
        },
        Case {
            name: "objects that fit alone but not together",
            ops: (0..4)
                .map(|i| Op::Create(big_pod(&format!("b{i}"), MAX_REQUEST_BYTES / 3)))
                .collect(),
            want: "exceeds etcd's request size limit of 1572864 bytes (--max-request-bytes)",
        },
    ];
    for case in cases {
        let revision = store.revision();
        let err = store.commit(case.ops).expect_err(case.name);
        assert!(
            matches!(
                err,
                Error::TooManyOps { .. }
                    | Error::ObjectTooLarge { .. }
                    | Error::RequestTooLarge { .. }
            ),
            "{}: {err:?}",
            case.name
        );
        assert!(err.to_string().contains(case.want), "{}: {err}", case.name);
        assert!(
            store.list(Kind::Pod, None).expect("list").is_empty(),
            "{}: nothing written",
            case.name
        );
        assert_eq!(store.revision(), revision, "{}: nothing sent", case.name);
    }
    // At the limits, a commit applies whole.
    let ops = (0..MAX_TXN_OPS)
        .map(|i| Op::Create(pod(&format!("p{i}"))))
        .collect();
    assert_eq!(store.commit(ops).expect("128 ops fit").len(), MAX_TXN_OPS);
    let ops = (0..3)
        .map(|i| Op::Create(big_pod(&format!("b{i}"), MAX_REQUEST_BYTES / 4)))
        .collect();
    store.commit(ops).expect("three quarters of the limit fit");
}

#[test]
fn the_watch_goes_on_after_compaction() {
    let _serial = common::serial();
    let Some(store) = common::store("compaction") else {
        return;
    };
    for i in 0..5 {
        store
            .commit(vec![Op::Create(pod(&format!("old{i}")))])
            .expect("commit");
    }
    store.compact(store.revision()).expect("compact");
    let mut rx = store.subscribe();
    let change = store
        .commit(vec![Op::Create(pod("new"))])
        .expect("commit after compaction")
        .remove(0);
    let received = rx.try_recv().expect("the change was broadcast");
    assert_eq!(*received, change);
    assert_eq!(store.list(Kind::Pod, None).expect("list").len(), 6);
}

#[test]
fn the_watch_resumes_after_etcd_restarts_without_losing_or_repeating_changes() {
    if !berth_store::testing::require_etcd() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut member = EtcdMember::start(dir.path()).expect("etcd starts");
    let connect =
        || EtcdStore::connect(EtcdConfig::new(vec![member.url().to_string()])).expect("connect");
    let (watcher, writer) = (connect(), connect());
    let mut rx = watcher.subscribe();
    let mut committed = writer
        .commit(vec![Op::Create(pod("before"))])
        .expect("commit");

    member.restart().expect("etcd restarts");
    // Written through another client while the watcher's stream is broken or resuming.
    for name in ["after-1", "after-2"] {
        committed.extend(writer.commit(vec![Op::Create(pod(name))]).expect("commit"));
    }
    // A write of the watcher's own returns once its watch has delivered it, so everything
    // before it has arrived too.
    committed.extend(
        watcher
            .commit(vec![Op::Create(pod("after-3"))])
            .expect("commit"),
    );
    let mut received = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while received.len() < committed.len() {
        match rx.try_recv() {
            Ok(change) => received.push(std::sync::Arc::unwrap_or_clone(change)),
            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the watch never delivered: got {received:?}"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("receiver: {e}"),
        }
    }
    assert!(rx.try_recv().is_err(), "nothing more (no change repeated)");
    assert_eq!(received, committed, "each change once, in order");
}

#[test]
fn another_client_has_every_change_up_to_the_current_revision_once_it_says_so() {
    let _serial = common::serial();
    // Two clients of one cluster under one prefix (two replicas), and a third user of the
    // cluster under another prefix.
    let (Some(a), Some(b), Some(other)) = (
        common::store("consistent"),
        common::store("consistent"),
        common::store("consistent-other"),
    ) else {
        return;
    };
    let wait = std::time::Duration::from_secs(10);
    let mut changes = b.subscribe();
    for i in 0..20 {
        let written = a
            .commit(vec![Op::Create(pod(&format!("p{i}")))])
            .expect("commit on a")
            .remove(0);
        let revision = b.current_revision().expect("b's current revision");
        assert!(
            revision >= written.revision,
            "{revision} < {}",
            written.revision
        );
        assert!(b.wait_sent(revision, wait), "b's watch reached {revision}");
        // What b has broadcast includes the write a acknowledged.
        let mut seen = Vec::new();
        while let Ok(change) = changes.try_recv() {
            seen.push(change.object.meta().name.clone());
        }
        assert_eq!(seen, [format!("p{i}")], "write {i}");
    }
    // A write outside b's prefix advances the revision with no event for b's watch: b
    // learns it reached it from progress notifications.
    other
        .commit(vec![Op::Create(pod("elsewhere"))])
        .expect("commit under the other prefix");
    let revision = b.current_revision().expect("b's current revision");
    assert!(revision > a.revision(), "the revision moved on");
    assert!(b.wait_sent(revision, wait), "progress reached {revision}");
    assert!(changes.try_recv().is_err(), "no change of b's prefix");
}
