//! What only the etcd backend promises: etcd's transaction limits are refused whole before
//! anything is sent, and the watch keeps feeding subscribers across compaction. Runs on a
//! real etcd member (skipped with a message without `etcd`, failing when `CI` is set).

mod common;

use berth_proto::model::{Kind, Object};
use berth_store::{Error, ObjectStore, Op, MAX_REQUEST_BYTES, MAX_TXN_OPS};

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
