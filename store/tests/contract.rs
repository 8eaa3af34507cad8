//! The `ObjectStore` contract, one suite run on both backends: every test below runs on a
//! temporary sled store and on a real etcd member (skipped with a message when `etcd` is
//! not installed, failing when `CI` is set). What only one backend promises (sled's one
//! revision per write, its durability across reopen; etcd's limits) is tested in
//! `store.rs` and `etcd.rs`.

mod common;

use std::sync::Arc;

use berth_proto::model::{Kind, Object, ObjectKey, Time};
use berth_store::{Change, ChangeType, Error, ObjectStore, Op, Precondition};
use common::{bound, node, node_name, pod, pod_key, rv};
use tokio::sync::broadcast::error::TryRecvError;

/// Runs each named contract test on sled and on etcd.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod sled {
            $(
                #[test]
                fn $name() {
                    let store = berth_store::SledStore::temporary().expect("temporary store");
                    super::$name(&store);
                }
            )*
        }
        mod etcd {
            $(
                #[test]
                fn $name() {
                    let _serial = super::common::serial();
                    let Some(store) = super::common::store(stringify!($name)) else {
                        return;
                    };
                    super::$name(&store);
                }
            )*
        }
    };
}

contract!(
    create_get_update_delete,
    create_keeps_caller_identity_and_upsert_keeps_stored_identity,
    cluster_scoped_objects_drop_their_namespace,
    a_later_op_sees_an_earlier_ops_write,
    preconditions,
    failing_batch_writes_nothing,
    list_sorts_and_filters_by_namespace,
    list_returns_every_page,
    subscribe_receives_changes_in_order,
    empty_commit_does_nothing,
    concurrent_commits_all_apply_and_broadcast_in_revision_order,
);

fn commit_one(store: &dyn ObjectStore, op: Op) -> Change {
    let mut changes = store.commit(vec![op]).expect("commit");
    assert_eq!(changes.len(), 1, "one change per op");
    changes.remove(0)
}

fn names(objects: &[Object]) -> Vec<String> {
    objects
        .iter()
        .map(|o| format!("{}/{}", o.meta().namespace, o.meta().name))
        .collect()
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

fn create_get_update_delete(store: &dyn ObjectStore) {
    let start = store.revision();
    assert_eq!(store.get(&pod_key("default", "web")).expect("get"), None);

    let created = commit_one(store, Op::Create(pod("default", "web")));
    assert_eq!(created.change_type, ChangeType::Added);
    assert!(created.revision > start, "a write takes a new revision");
    assert_eq!(rv(&created.object), created.revision);
    let uid = created.object.meta().uid.clone();
    assert!(uuid_like(&uid), "uid {uid:?} is a UUID");
    let created_at = created.object.meta().creation_timestamp;
    assert!(created_at.is_some(), "creationTimestamp is set");
    let got = store.get(&pod_key("default", "web")).expect("get");
    assert_eq!(
        got.as_ref(),
        Some(&*created.object),
        "get returns what commit returned"
    );

    // An update keeps the stored identity whatever the caller sends.
    let mut new = bound(pod("default", "web"), "n1");
    new.meta_mut().uid = "forged".into();
    new.meta_mut().creation_timestamp = Some(Time::from_unix_nanos(0));
    let updated = commit_one(
        store,
        Op::Update {
            object: new,
            precondition: Precondition::ResourceVersion(created.revision.to_string()),
        },
    );
    assert_eq!(updated.change_type, ChangeType::Modified);
    assert!(updated.revision > created.revision);
    assert_eq!(rv(&updated.object), updated.revision);
    assert_eq!(updated.object.meta().uid, uid);
    assert_eq!(updated.object.meta().creation_timestamp, created_at);
    assert_eq!(node_name(&updated.object), "n1");
    let got = store.get(&pod_key("default", "web")).expect("get");
    assert_eq!(got.as_ref(), Some(&*updated.object));

    let deleted = commit_one(
        store,
        Op::Delete {
            key: pod_key("default", "web"),
            precondition: Precondition::None,
        },
    );
    assert_eq!(deleted.change_type, ChangeType::Deleted);
    assert!(deleted.revision > updated.revision);
    assert_eq!(
        rv(&deleted.object),
        deleted.revision,
        "stamped with the deletion"
    );
    assert_eq!(node_name(&deleted.object), "n1", "the last state");
    assert_eq!(store.get(&pod_key("default", "web")).expect("get"), None);
    assert!(store.list(Kind::Pod, None).expect("list").is_empty());
    assert!(store.revision() >= deleted.revision);
}

fn create_keeps_caller_identity_and_upsert_keeps_stored_identity(store: &dyn ObjectStore) {
    let mut given = pod("default", "web");
    given.meta_mut().uid = "my-uid".into();
    given.meta_mut().creation_timestamp = Some(Time::from_unix_nanos(1_000_000_000));
    let created = commit_one(store, Op::Create(given));
    assert_eq!(created.object.meta().uid, "my-uid");
    assert_eq!(
        created.object.meta().creation_timestamp,
        Some(Time::from_unix_nanos(1_000_000_000))
    );

    let upserted = commit_one(store, Op::Upsert(bound(pod("default", "web"), "n2")));
    assert_eq!(upserted.change_type, ChangeType::Modified);
    assert_eq!(upserted.object.meta().uid, "my-uid");
    assert_eq!(
        upserted.object.meta().creation_timestamp,
        Some(Time::from_unix_nanos(1_000_000_000))
    );

    let fresh = commit_one(store, Op::Upsert(pod("default", "other")));
    assert_eq!(fresh.change_type, ChangeType::Added);
    assert!(
        uuid_like(&fresh.object.meta().uid),
        "upsert-create assigns a uid"
    );
    assert!(fresh.object.meta().creation_timestamp.is_some());
}

fn cluster_scoped_objects_drop_their_namespace(store: &dyn ObjectStore) {
    let mut n = node("n1");
    n.meta_mut().namespace = "default".into();
    let created = commit_one(store, Op::Create(n));
    assert_eq!(created.object.meta().namespace, "");
    let got = store
        .get(&ObjectKey::new(Kind::Node, "", "n1"))
        .expect("get")
        .expect("stored");
    assert_eq!(got, *created.object);
    // A stray namespace in a key of a cluster-scoped kind is ignored, as on write.
    let stray = ObjectKey {
        kind: Kind::Node,
        namespace: "default".into(),
        name: "n1".into(),
    };
    assert_eq!(store.get(&stray).expect("get"), Some(got));
}

fn a_later_op_sees_an_earlier_ops_write(store: &dyn ObjectStore) {
    let before = commit_one(store, Op::Create(node("n1"))).revision;
    let changes = store
        .commit(vec![
            Op::Create(pod("default", "a")),
            Op::Create(pod("default", "b")),
            Op::Update {
                object: bound(pod("default", "a"), "n1"),
                precondition: Precondition::None,
            },
        ])
        .expect("commit");
    assert_eq!(changes.len(), 3);
    let mut last = before;
    for change in &changes {
        assert!(change.revision > before, "after the previous commit");
        assert!(change.revision >= last, "not decreasing within a commit");
        assert_eq!(rv(&change.object), change.revision);
        last = change.revision;
    }
    let a = store
        .get(&pod_key("default", "a"))
        .expect("get")
        .expect("stored");
    assert_eq!(node_name(&a), "n1", "a later op sees an earlier op's write");
    assert_eq!(rv(&a), changes[2].revision);
    assert_eq!(
        a.meta().uid,
        changes[0].object.meta().uid,
        "the created uid"
    );
}

fn preconditions(store: &dyn ObjectStore) {
    struct Case {
        name: &'static str,
        op: fn(&str) -> Op,
        /// `None` when the op must succeed, else a substring of the error.
        want_error: Option<&'static str>,
    }
    fn with_rv(rv: &str) -> Object {
        let mut p = bound(pod("default", "web"), "n1");
        p.meta_mut().resource_version = rv.into();
        p
    }
    fn delete(precondition: Precondition) -> Op {
        Op::Delete {
            key: pod_key("default", "web"),
            precondition,
        }
    }
    // No fixture here reaches this revision.
    const STALE: &str = "999999999";
    let cases = vec![
        Case {
            name: "update with a stale precondition",
            op: |_| Op::Update {
                object: with_rv(""),
                precondition: Precondition::ResourceVersion(STALE.into()),
            },
            want_error: Some("the object has been modified (resourceVersion 999999999 given, "),
        },
        Case {
            name: "update with a stale object resourceVersion",
            op: |_| Op::Update {
                object: with_rv(STALE),
                precondition: Precondition::None,
            },
            want_error: Some("conflict on pod default/web"),
        },
        Case {
            name: "update whose precondition holds but object resourceVersion is stale",
            op: |current| Op::Update {
                object: with_rv(STALE),
                precondition: Precondition::ResourceVersion(current.into()),
            },
            want_error: Some("conflict"),
        },
        Case {
            name: "delete with a stale precondition",
            op: |_| delete(Precondition::ResourceVersion(STALE.into())),
            want_error: Some("conflict"),
        },
        Case {
            name: "update with both current",
            op: |current| Op::Update {
                object: with_rv(current),
                precondition: Precondition::ResourceVersion(current.into()),
            },
            want_error: None,
        },
        Case {
            name: "update without any resourceVersion",
            op: |_| Op::Update {
                object: with_rv(""),
                precondition: Precondition::None,
            },
            want_error: None,
        },
        Case {
            name: "upsert ignores a stale object resourceVersion",
            op: |_| Op::Upsert(with_rv(STALE)),
            want_error: None,
        },
        Case {
            name: "delete with a current precondition",
            op: |current| delete(Precondition::ResourceVersion(current.into())),
            want_error: None,
        },
    ];
    for case in cases {
        // Each case starts from a freshly created pod.
        let _ = store.commit(vec![delete(Precondition::None)]);
        let original = commit_one(store, Op::Create(pod("default", "web"))).object;
        let current = original.meta().resource_version.clone();
        assert_ne!(
            current, STALE,
            "{}: the fixture's resourceVersion",
            case.name
        );
        let revision = store.revision();
        let result = store.commit(vec![(case.op)(&current)]);
        match case.want_error {
            Some(want) => {
                let err = result.expect_err(case.name);
                assert!(
                    matches!(err, Error::Conflict { .. }),
                    "{}: {err:?}",
                    case.name
                );
                assert!(err.to_string().contains(want), "{}: {err}", case.name);
                let got = store.get(&pod_key("default", "web")).expect("get");
                assert_eq!(
                    got,
                    Some((*original).clone()),
                    "{}: nothing written",
                    case.name
                );
                assert_eq!(
                    store.revision(),
                    revision,
                    "{}: no revision used",
                    case.name
                );
            }
            None => {
                let changes = result.unwrap_or_else(|e| panic!("{}: {e}", case.name));
                assert!(changes[0].revision > revision, "{}", case.name);
            }
        }
    }
}

fn failing_batch_writes_nothing(store: &dyn ObjectStore) {
    struct Case {
        name: &'static str,
        ops: Vec<Op>,
        want_error: &'static str,
    }
    let cases = vec![
        Case {
            name: "create of an existing object last",
            ops: vec![
                Op::Create(pod("default", "new")),
                Op::Delete {
                    key: pod_key("default", "old"),
                    precondition: Precondition::None,
                },
                Op::Create(node("n1")),
            ],
            want_error: "node n1 already exists",
        },
        Case {
            name: "update of a missing object",
            ops: vec![
                Op::Upsert(bound(pod("default", "old"), "n9")),
                Op::Update {
                    object: pod("default", "missing"),
                    precondition: Precondition::None,
                },
            ],
            want_error: "pod default/missing not found",
        },
        Case {
            name: "delete of a missing object",
            ops: vec![
                Op::Create(pod("default", "new")),
                Op::Delete {
                    key: ObjectKey::new(Kind::Node, "", "missing"),
                    precondition: Precondition::None,
                },
            ],
            want_error: "node missing not found",
        },
        Case {
            name: "namespaced object without namespace",
            ops: vec![
                Op::Create(pod("default", "new")),
                Op::Create(pod("", "bare")),
            ],
            want_error: "pod bare has no namespace, but Pod is a namespaced kind",
        },
        Case {
            name: "create twice in one batch",
            ops: vec![
                Op::Create(pod("default", "new")),
                Op::Create(pod("default", "new")),
            ],
            want_error: "pod default/new already exists",
        },
    ];
    store
        .commit(vec![
            Op::Create(pod("default", "old")),
            Op::Create(node("n1")),
        ])
        .expect("seed");
    for case in cases {
        let before_pods = store.list(Kind::Pod, None).expect("list");
        let before_nodes = store.list(Kind::Node, None).expect("list");
        let revision = store.revision();
        let mut rx = store.subscribe();

        let err = store.commit(case.ops).expect_err(case.name);
        assert_eq!(err.to_string(), case.want_error, "{}", case.name);

        assert_eq!(
            store.list(Kind::Pod, None).expect("list"),
            before_pods,
            "{}: pods unchanged",
            case.name
        );
        assert_eq!(
            store.list(Kind::Node, None).expect("list"),
            before_nodes,
            "{}: nodes unchanged",
            case.name
        );
        assert_eq!(
            store.revision(),
            revision,
            "{}: no revision used",
            case.name
        );
        assert!(
            matches!(rx.try_recv(), Err(TryRecvError::Empty)),
            "{}: nothing broadcast",
            case.name
        );
    }
}

fn list_sorts_and_filters_by_namespace(store: &dyn ObjectStore) {
    // Byte order of the stored keys would put "a-b/..." before "a/...".
    store
        .commit(vec![
            Op::Create(pod("b", "x")),
            Op::Create(pod("a-b", "a")),
            Op::Create(pod("a", "z")),
            Op::Create(pod("a", "y")),
            Op::Create(node("n2")),
            Op::Create(node("n1")),
        ])
        .expect("commit");

    struct Case {
        name: &'static str,
        kind: Kind,
        namespace: Option<&'static str>,
        want: Vec<&'static str>,
    }
    let cases = vec![
        Case {
            name: "all pods",
            kind: Kind::Pod,
            namespace: None,
            want: vec!["a/y", "a/z", "a-b/a", "b/x"],
        },
        Case {
            name: "empty namespace means all",
            kind: Kind::Pod,
            namespace: Some(""),
            want: vec!["a/y", "a/z", "a-b/a", "b/x"],
        },
        Case {
            name: "one namespace, not its prefix-sharing neighbour",
            kind: Kind::Pod,
            namespace: Some("a"),
            want: vec!["a/y", "a/z"],
        },
        Case {
            name: "namespace without pods",
            kind: Kind::Pod,
            namespace: Some("c"),
            want: vec![],
        },
        Case {
            name: "cluster-scoped kind ignores the namespace",
            kind: Kind::Node,
            namespace: Some("a"),
            want: vec!["/n1", "/n2"],
        },
        Case {
            name: "empty kind",
            kind: Kind::Event,
            namespace: None,
            want: vec![],
        },
    ];
    for case in cases {
        let got = store.list(case.kind, case.namespace).expect(case.name);
        assert_eq!(names(&got), case.want, "{}", case.name);
    }
}

/// More objects than one page of an etcd list (500) come back whole, in order.
fn list_returns_every_page(store: &dyn ObjectStore) {
    for batch in 0..11 {
        let ops = (0..100)
            .map(|i| Op::Create(pod("default", &format!("p-{:04}", batch * 100 + i))))
            .collect();
        store.commit(ops).expect("commit");
    }
    let listed = store.list(Kind::Pod, Some("default")).expect("list");
    let want: Vec<String> = (0..1100).map(|i| format!("default/p-{i:04}")).collect();
    assert_eq!(names(&listed), want);
}

fn subscribe_receives_changes_in_order(store: &dyn ObjectStore) {
    commit_one(store, Op::Create(pod("default", "before")));
    let mut rx = store.subscribe();

    let mut committed = store
        .commit(vec![
            Op::Create(pod("default", "a")),
            Op::Create(node("n1")),
        ])
        .expect("commit");
    committed.extend(
        store
            .commit(vec![
                Op::Update {
                    object: bound(pod("default", "a"), "n1"),
                    precondition: Precondition::None,
                },
                Op::Delete {
                    key: pod_key("default", "before"),
                    precondition: Precondition::None,
                },
            ])
            .expect("commit"),
    );

    // Once commit returns, its changes have been sent.
    let mut received = Vec::new();
    loop {
        match rx.try_recv() {
            Ok(change) => received.push(Arc::unwrap_or_clone(change)),
            Err(TryRecvError::Empty) => break,
            Err(e) => panic!("receiver: {e}"),
        }
    }
    assert_eq!(
        received, committed,
        "subscribers see exactly what commit returned"
    );
    let summary: Vec<(ChangeType, String)> = received
        .iter()
        .map(|c| (c.change_type, c.object.meta().name.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (ChangeType::Added, "a".to_string()),
            (ChangeType::Added, "n1".to_string()),
            (ChangeType::Modified, "a".to_string()),
            (ChangeType::Deleted, "before".to_string()),
        ]
    );
    assert!(
        received[0].revision < received[2].revision,
        "commits in order"
    );
}

fn empty_commit_does_nothing(store: &dyn ObjectStore) {
    let revision = store.revision();
    assert!(store.commit(Vec::new()).expect("commit").is_empty());
    assert_eq!(store.revision(), revision);
}

fn concurrent_commits_all_apply_and_broadcast_in_revision_order(store: &dyn ObjectStore) {
    let mut rx = store.subscribe();
    let committed: Vec<Vec<Change>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                scope.spawn(move || {
                    (0..10)
                        .map(|i| {
                            let ops = vec![
                                Op::Create(pod("default", &format!("t{t}-{i}"))),
                                Op::Upsert(pod("default", &format!("t{t}-{i}-b"))),
                            ];
                            store.commit(ops).expect("commit")
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect()
    });
    let mut revisions: Vec<u64> = committed.iter().flatten().map(|c| c.revision).collect();
    revisions.sort_unstable();
    let mut broadcast = Vec::new();
    while let Ok(change) = rx.try_recv() {
        broadcast.push(change.revision);
    }
    assert_eq!(
        broadcast, revisions,
        "every change broadcast, in revision order"
    );
    assert_eq!(store.list(Kind::Pod, None).expect("list").len(), 80);
}
