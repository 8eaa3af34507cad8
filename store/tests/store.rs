//! Behaviour of `SledStore` through the `ObjectStore` trait: writes, preconditions,
//! atomicity, revisions, ordering, watch and durability across reopen.

use std::sync::Arc;

use berth_proto::model::{Kind, Node, Object, ObjectKey, ObjectMeta, Pod, PriorityClass, Time};
use berth_store::{Change, ChangeType, Error, ObjectStore, Op, Precondition, SledStore};
use tokio::sync::broadcast::error::TryRecvError;

fn pod(namespace: &str, name: &str) -> Object {
    Object::Pod(Pod {
        metadata: ObjectMeta {
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn node(name: &str) -> Object {
    Object::Node(Node {
        metadata: ObjectMeta {
            name: name.into(),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn pod_key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Pod, namespace, name)
}

/// The pod with `spec.nodeName` set, to tell versions apart.
fn bound(mut object: Object, node_name: &str) -> Object {
    if let Object::Pod(p) = &mut object {
        p.spec.node_name = node_name.into();
    }
    object
}

fn node_name(object: &Object) -> &str {
    match object {
        Object::Pod(p) => &p.spec.node_name,
        other => panic!("expected a pod, got {other:?}"),
    }
}

fn rv(object: &Object) -> u64 {
    object
        .meta()
        .resource_version
        .parse()
        .expect("resourceVersion is a decimal integer")
}

fn commit_one(store: &SledStore, op: Op) -> Change {
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

#[test]
fn create_get_update_delete() {
    let store = SledStore::temporary().expect("temporary store");
    assert_eq!(store.revision(), 0);
    assert_eq!(store.get(&pod_key("default", "web")).expect("get"), None);

    let created = commit_one(&store, Op::Create(pod("default", "web")));
    assert_eq!(created.change_type, ChangeType::Added);
    assert_eq!(created.revision, 1);
    assert_eq!(created.object.meta().resource_version, "1");
    let uid = created.object.meta().uid.clone();
    assert!(uuid_like(&uid), "uid {uid:?} is a UUID");
    let created_at = created.object.meta().creation_timestamp;
    assert!(created_at.is_some(), "creationTimestamp is set");
    let got = store.get(&pod_key("default", "web")).expect("get");
    assert_eq!(
        got.as_ref(),
        Some(&created.object),
        "get returns what commit returned"
    );

    // An update keeps the stored identity whatever the caller sends.
    let mut new = bound(pod("default", "web"), "n1");
    new.meta_mut().uid = "forged".into();
    new.meta_mut().creation_timestamp = Some(Time::from_unix_nanos(0));
    let updated = commit_one(
        &store,
        Op::Update {
            object: new,
            precondition: Precondition::ResourceVersion("1".into()),
        },
    );
    assert_eq!(updated.change_type, ChangeType::Modified);
    assert_eq!(updated.revision, 2);
    assert_eq!(updated.object.meta().uid, uid);
    assert_eq!(updated.object.meta().creation_timestamp, created_at);
    assert_eq!(node_name(&updated.object), "n1");
    let got = store.get(&pod_key("default", "web")).expect("get");
    assert_eq!(got.as_ref(), Some(&updated.object));

    let deleted = commit_one(
        &store,
        Op::Delete {
            key: pod_key("default", "web"),
            precondition: Precondition::None,
        },
    );
    assert_eq!(deleted.change_type, ChangeType::Deleted);
    assert_eq!(deleted.revision, 3);
    assert_eq!(deleted.object.meta().resource_version, "3");
    assert_eq!(node_name(&deleted.object), "n1", "the last state");
    assert_eq!(store.get(&pod_key("default", "web")).expect("get"), None);
    assert!(store.list(Kind::Pod, None).expect("list").is_empty());
    assert_eq!(store.revision(), 3);
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[test]
fn create_keeps_caller_identity_and_upsert_keeps_stored_identity() {
    let store = SledStore::temporary().expect("temporary store");
    let mut given = pod("default", "web");
    given.meta_mut().uid = "my-uid".into();
    given.meta_mut().creation_timestamp = Some(Time::from_unix_nanos(1_000_000_000));
    let created = commit_one(&store, Op::Create(given));
    assert_eq!(created.object.meta().uid, "my-uid");
    assert_eq!(
        created.object.meta().creation_timestamp,
        Some(Time::from_unix_nanos(1_000_000_000))
    );

    let upserted = commit_one(&store, Op::Upsert(bound(pod("default", "web"), "n2")));
    assert_eq!(upserted.change_type, ChangeType::Modified);
    assert_eq!(upserted.object.meta().uid, "my-uid");
    assert_eq!(
        upserted.object.meta().creation_timestamp,
        Some(Time::from_unix_nanos(1_000_000_000))
    );

    let fresh = commit_one(&store, Op::Upsert(pod("default", "other")));
    assert_eq!(fresh.change_type, ChangeType::Added);
    assert!(
        uuid_like(&fresh.object.meta().uid),
        "upsert-create assigns a uid"
    );
    assert!(fresh.object.meta().creation_timestamp.is_some());
}

#[test]
fn cluster_scoped_objects_drop_their_namespace() {
    let store = SledStore::temporary().expect("temporary store");
    let mut n = node("n1");
    n.meta_mut().namespace = "default".into();
    let created = commit_one(&store, Op::Create(n));
    assert_eq!(created.object.meta().namespace, "");
    let got = store
        .get(&ObjectKey::new(Kind::Node, "", "n1"))
        .expect("get")
        .expect("stored");
    assert_eq!(got, created.object);
    // A stray namespace in a key of a cluster-scoped kind is ignored, as on write.
    let stray = ObjectKey {
        kind: Kind::Node,
        namespace: "default".into(),
        name: "n1".into(),
    };
    assert_eq!(store.get(&stray).expect("get"), Some(got));
}

#[test]
fn batch_revisions_are_consecutive() {
    let store = SledStore::temporary().expect("temporary store");
    commit_one(&store, Op::Create(node("n1")));
    let changes = store
        .commit(vec![
            Op::Create(pod("default", "a")),
            Op::Create(pod("default", "b")),
            Op::Update {
                object: bound(pod("default", "a"), "n1"),
                precondition: Precondition::ResourceVersion("2".into()),
            },
        ])
        .expect("commit");
    let revisions: Vec<u64> = changes.iter().map(|c| c.revision).collect();
    assert_eq!(revisions, vec![2, 3, 4]);
    for change in &changes {
        assert_eq!(rv(&change.object), change.revision);
    }
    assert_eq!(store.revision(), 4);
    let a = store
        .get(&pod_key("default", "a"))
        .expect("get")
        .expect("stored");
    assert_eq!(node_name(&a), "n1", "a later op sees an earlier op's write");
    assert_eq!(rv(&a), 4);
}

#[test]
fn revisions_increase_across_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut last = 0;
    for round in 0..3 {
        let store = open_again(dir.path());
        assert_eq!(
            store.revision(),
            last,
            "round {round}: revision survives reopen"
        );
        let name = format!("p{round}");
        let created = commit_one(&store, Op::Create(pod("default", &name)));
        assert!(created.revision > last, "round {round}: revision increases");
        let deleted = commit_one(
            &store,
            Op::Delete {
                key: pod_key("default", &name),
                precondition: Precondition::None,
            },
        );
        assert!(deleted.revision > created.revision, "round {round}");
        last = deleted.revision;
    }
    assert_eq!(last, 6);
}

#[test]
fn data_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let written = {
        let store = open_again(dir.path());
        store
            .commit(vec![
                Op::Create(pod("default", "web")),
                Op::Create(node("n1")),
                Op::Create(Object::PriorityClass(PriorityClass {
                    metadata: ObjectMeta {
                        name: "high".into(),
                        ..Default::default()
                    },
                    value: 1000,
                    ..Default::default()
                })),
            ])
            .expect("commit")
    };
    let store = open_again(dir.path());
    assert_eq!(store.revision(), 3);
    for change in written {
        let key = change.object.key();
        let got = store.get(&key).expect("get");
        assert_eq!(got, Some(change.object), "{key} survives reopen");
    }
}

#[test]
fn preconditions() {
    struct Case {
        name: &'static str,
        op: Op,
        /// `None` when the op must succeed, else a substring of the error.
        want_error: Option<&'static str>,
    }
    // The stored pod is at resourceVersion 1.
    let with_rv = |rv: &str| {
        let mut p = bound(pod("default", "web"), "n1");
        p.meta_mut().resource_version = rv.into();
        p
    };
    let update = |object: Object, precondition: Precondition| Op::Update {
        object,
        precondition,
    };
    let delete = |precondition: Precondition| Op::Delete {
        key: pod_key("default", "web"),
        precondition,
    };
    let stale = || Precondition::ResourceVersion("7".into());
    let current = || Precondition::ResourceVersion("1".into());
    let cases = vec![
        Case {
            name: "update with a stale precondition",
            op: update(with_rv(""), stale()),
            want_error: Some(
                "conflict on pod default/web: the object has been modified (resourceVersion 7 given, 1 stored)",
            ),
        },
        Case {
            name: "update with a stale object resourceVersion",
            op: update(with_rv("7"), Precondition::None),
            want_error: Some("conflict"),
        },
        Case {
            name: "update whose precondition holds but object resourceVersion is stale",
            op: update(with_rv("7"), current()),
            want_error: Some("conflict"),
        },
        Case {
            name: "delete with a stale precondition",
            op: delete(stale()),
            want_error: Some("conflict"),
        },
        Case {
            name: "update with both current",
            op: update(with_rv("1"), current()),
            want_error: None,
        },
        Case {
            name: "update without any resourceVersion",
            op: update(with_rv(""), Precondition::None),
            want_error: None,
        },
        Case {
            name: "upsert ignores a stale object resourceVersion",
            op: Op::Upsert(with_rv("7")),
            want_error: None,
        },
        Case {
            name: "delete with a current precondition",
            op: delete(current()),
            want_error: None,
        },
    ];
    for case in cases {
        let store = SledStore::temporary().expect("temporary store");
        let original = commit_one(&store, Op::Create(pod("default", "web"))).object;
        let result = store.commit(vec![case.op]);
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
                assert_eq!(got, Some(original), "{}: nothing written", case.name);
                assert_eq!(store.revision(), 1, "{}: no revision used", case.name);
            }
            None => {
                let changes = result.unwrap_or_else(|e| panic!("{}: {e}", case.name));
                assert_eq!(changes[0].revision, 2, "{}", case.name);
                assert_eq!(store.revision(), 2, "{}", case.name);
            }
        }
    }
}

#[test]
fn failing_batch_writes_nothing() {
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
    for case in cases {
        let store = SledStore::temporary().expect("temporary store");
        store
            .commit(vec![
                Op::Create(pod("default", "old")),
                Op::Create(node("n1")),
            ])
            .expect("seed");
        let before_pods = store.list(Kind::Pod, None).expect("list");
        let before_nodes = store.list(Kind::Node, None).expect("list");
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
        assert_eq!(store.revision(), 2, "{}: no revision used", case.name);
        assert!(
            matches!(rx.try_recv(), Err(TryRecvError::Empty)),
            "{}: nothing broadcast",
            case.name
        );
        // The next successful write takes the next revision: nothing was burnt.
        let next = commit_one(&store, Op::Create(pod("default", "after")));
        assert_eq!(next.revision, 3, "{}", case.name);
    }
}

#[test]
fn list_sorts_and_filters_by_namespace() {
    let store = SledStore::temporary().expect("temporary store");
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

#[test]
fn subscribe_receives_changes_in_order() {
    let store = SledStore::temporary().expect("temporary store");
    commit_one(&store, Op::Create(pod("default", "before")));
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
    let summary: Vec<(ChangeType, String, u64)> = received
        .iter()
        .map(|c| (c.change_type, c.object.meta().name.clone(), c.revision))
        .collect();
    assert_eq!(
        summary,
        vec![
            (ChangeType::Added, "a".to_string(), 2),
            (ChangeType::Added, "n1".to_string(), 3),
            (ChangeType::Modified, "a".to_string(), 4),
            (ChangeType::Deleted, "before".to_string(), 5),
        ]
    );
}

#[test]
fn empty_commit_does_nothing() {
    let store = SledStore::temporary().expect("temporary store");
    assert!(store.commit(Vec::new()).expect("commit").is_empty());
    assert_eq!(store.revision(), 0);
}

#[test]
fn store_is_usable_as_a_trait_object() {
    let store: Arc<dyn ObjectStore> = Arc::new(SledStore::temporary().expect("temporary store"));
    let change = store
        .commit(vec![Op::Create(node("n1"))])
        .expect("commit")
        .remove(0);
    assert_eq!(change.revision, store.revision());
    let debug = format!("{:?}", SledStore::temporary().expect("temporary store"));
    assert!(debug.starts_with("SledStore"), "{debug}");
}

#[test]
fn concurrent_commits_get_distinct_revisions_broadcast_in_order() {
    let store = Arc::new(SledStore::temporary().expect("temporary store"));
    let mut rx = store.subscribe();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                (0..25)
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
    let mut revisions: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("thread"))
        .flat_map(|changes| {
            assert_eq!(
                changes[1].revision,
                changes[0].revision + 1,
                "a batch's revisions are consecutive"
            );
            changes.into_iter().map(|c| c.revision)
        })
        .collect();
    revisions.sort_unstable();
    assert_eq!(revisions, (1..=200).collect::<Vec<u64>>());

    let mut broadcast = Vec::new();
    while let Ok(change) = rx.try_recv() {
        broadcast.push(change.revision);
    }
    assert_eq!(broadcast, revisions, "broadcast in revision order");
    assert_eq!(store.list(Kind::Pod, None).expect("list").len(), 200);
}

/// Opens the store in `dir`, which this process had open a moment ago. sled's background
/// flusher thread can hold the folder's lock for a short while after the last handle is
/// dropped, so a reopen within one process retries briefly on that lock (a new process, as
/// when the scheduler restarts, never meets it). Any other error fails at once.
fn open_again(dir: &std::path::Path) -> SledStore {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match SledStore::open(dir) {
            Ok(store) => return store,
            Err(e)
                if e.to_string().contains("could not acquire lock")
                    || format!("{e:?}").contains("WouldBlock") =>
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the store stayed locked: {e:?}"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("open: {e:?}"),
        }
    }
}
