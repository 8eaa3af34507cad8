//! What only `SledStore` promises, beyond the contract both backends meet (contract.rs):
//! one revision per write, consecutive within a batch, and durability across reopen.

mod common;

use std::sync::Arc;

use berth_proto::model::{Kind, Object, ObjectMeta, PriorityClass};
use berth_store::{Change, ObjectStore, Op, Precondition, SledStore};
use common::{bound, node, node_name, pod, pod_key, rv};

fn commit_one(store: &SledStore, op: Op) -> Change {
    let mut changes = store.commit(vec![op]).expect("commit");
    assert_eq!(changes.len(), 1, "one change per op");
    changes.remove(0)
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
                Op::Create(Object::PriorityClass(Box::new(PriorityClass {
                    metadata: ObjectMeta {
                        name: "high".into(),
                        ..Default::default()
                    },
                    value: 1000,
                    ..Default::default()
                }))),
            ])
            .expect("commit")
    };
    let store = open_again(dir.path());
    assert_eq!(store.revision(), 3);
    for change in written {
        let key = change.object.key();
        let got = store.get(&key).expect("get");
        assert_eq!(got, Some((*change.object).clone()), "{key} survives reopen");
    }
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
