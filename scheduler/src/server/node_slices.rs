//! The ResourceSlices an agent publishes for its node at registration (kubelet's
//! ResourceSlice controller for its DRA drivers): stored on the node and owned by the Node
//! (so the garbage collector removes them with it), each pool's generation bumped when its
//! devices change, and the node's earlier slices that are no longer published deleted.

use std::collections::{BTreeMap, BTreeSet};

use berth_proto::model::{Kind, Node, Object, ObjectKey, OwnerReference, ResourceSlice};
use berth_store::{ObjectStore, Op, Precondition};

use super::admission;
use super::error::Error;

/// Whether a stored slice is one an agent published for `node`: on the node and owned by a
/// Node of that name (whatever its uid: a node deleted and registered again takes over its
/// slices).
fn is_published_for(slice: &ResourceSlice, node: &str) -> bool {
    slice.spec.node_name.as_deref() == Some(node)
        && slice
            .metadata
            .owner_references
            .iter()
            .any(|o| o.kind == "Node" && o.name == node)
}

/// The ops that make the store's slices of `node` the `published` ones, as kubelet's
/// ResourceSlice controller keeps a driver's pools: `published` slices are forced onto the
/// node and owned by it; a pool whose slices are all unchanged (spec, generation aside) is
/// left alone (only an owner that changed is updated); a pool with a new, changed or
/// withdrawn slice moves to its next generation, every one of its slices written at it (the
/// allocator reads only a pool's newest generation), a new pool starting at 1; a slice
/// published before but not now is deleted. Slices of the node that no agent published
/// (applied by a user) are not touched.
pub fn plan(node: &Node, published: Vec<ResourceSlice>, stored: &[ResourceSlice]) -> Vec<Op> {
    let name = &node.metadata.name;
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: name.clone(),
        uid: node.metadata.uid.clone(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    let pool_of = |s: &ResourceSlice| (s.spec.driver.clone(), s.spec.pool.name.clone());
    let ours: Vec<&ResourceSlice> = stored
        .iter()
        .filter(|s| is_published_for(s, name))
        .collect();
    let by_name = |n: &str| stored.iter().find(|s| s.metadata.name == n);
    let published: Vec<ResourceSlice> = published
        .into_iter()
        .map(|mut slice| {
            slice.spec.node_name = Some(name.clone());
            slice.spec.all_nodes = None;
            slice.spec.node_selector = None;
            slice.metadata.owner_references = vec![owner.clone()];
            slice
        })
        .collect();
    let names: Vec<String> = published.iter().map(|s| s.metadata.name.clone()).collect();
    // Per pool: the newest generation stored for it, and whether its devices changed.
    let mut pools: BTreeMap<(String, String), (i64, bool)> = BTreeMap::new();
    let mut generations: BTreeMap<(String, String), BTreeSet<i64>> = BTreeMap::new();
    for slice in &published {
        let pool = pools.entry(pool_of(slice)).or_insert((0, false));
        match by_name(&slice.metadata.name) {
            Some(current) => {
                let mut same = slice.spec.clone();
                same.pool.generation = current.spec.pool.generation;
                pool.0 = pool.0.max(current.spec.pool.generation);
                pool.1 |= same != current.spec;
                generations
                    .entry(pool_of(slice))
                    .or_default()
                    .insert(current.spec.pool.generation);
            }
            None => pool.1 = true,
        }
    }
    for old in &ours {
        if let Some(pool) = pools.get_mut(&pool_of(old)) {
            pool.0 = pool.0.max(old.spec.pool.generation);
            pool.1 |= !names.contains(&old.metadata.name);
        }
    }
    // Slices of one pool at different generations (an older agent bumped them one by one)
    // are rewritten at one.
    for (pool, gens) in generations {
        if gens.len() > 1 {
            if let Some(p) = pools.get_mut(&pool) {
                p.1 = true;
            }
        }
    }
    let mut ops = Vec::new();
    for mut slice in published {
        let (newest, changed) = pools[&pool_of(&slice)];
        slice.spec.pool.generation = if changed { newest + 1 } else { newest };
        match by_name(&slice.metadata.name) {
            Some(current) => {
                if current.spec == slice.spec
                    && current.metadata.owner_references == slice.metadata.owner_references
                {
                    continue;
                }
                let mut meta = current.metadata.clone();
                meta.owner_references = slice.metadata.owner_references.clone();
                slice.metadata = meta;
                ops.push(Op::Update {
                    precondition: Precondition::ResourceVersion(
                        current.metadata.resource_version.clone(),
                    ),
                    object: Object::ResourceSlice(Box::new(slice)),
                });
            }
            None => ops.push(Op::Create(Object::ResourceSlice(Box::new(slice)))),
        }
    }
    for old in ours {
        if !names.contains(&old.metadata.name) {
            ops.push(Op::Delete {
                key: ObjectKey::new(Kind::ResourceSlice, "", &old.metadata.name),
                precondition: Precondition::ResourceVersion(old.metadata.resource_version.clone()),
            });
        }
    }
    ops
}

/// Every ResourceSlice in the store.
pub fn stored_slices(store: &dyn ObjectStore) -> Result<Vec<ResourceSlice>, Error> {
    Ok(store
        .list(Kind::ResourceSlice, None)?
        .into_iter()
        .filter_map(|o| match o {
            Object::ResourceSlice(s) => Some(*s),
            _ => None,
        })
        .collect())
}

/// Stores the slices `node`'s agent published, validated as any ResourceSlice (an invalid
/// one refuses the registration, naming the field). Retries a few times on a conflict with
/// another writer.
pub fn publish(
    store: &dyn ObjectStore,
    node: &Node,
    published: Vec<ResourceSlice>,
) -> Result<(), Error> {
    let mut last = None;
    for _ in 0..5 {
        let stored = stored_slices(store)?;
        let mut ops = Vec::new();
        for op in plan(node, published.clone(), &stored) {
            ops.push(match op {
                Op::Create(o) => Op::Create(admission::admit(store, o, &Default::default())?),
                Op::Update {
                    object,
                    precondition,
                } => Op::Update {
                    object: admission::admit(store, object, &Default::default())?,
                    precondition,
                },
                other => other,
            });
        }
        if ops.is_empty() {
            return Ok(());
        }
        match store.commit(ops) {
            Ok(_) => return Ok(()),
            Err(e @ berth_store::Error::Conflict { .. })
            | Err(e @ berth_store::Error::AlreadyExists { .. }) => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.expect("the loop ran").into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::testing::{DeviceBuilder, NodeBuilder, ResourceSliceBuilder};

    fn node(uid: &str) -> Node {
        let mut n = NodeBuilder::new("n1").build();
        n.metadata.uid = uid.into();
        n
    }

    /// A slice `name` of n1 with devices `devices`, as the agent sends it.
    fn sent(name: &str, devices: &[&str]) -> ResourceSlice {
        let mut b = ResourceSliceBuilder::new("n1", "gpu.berth.dev");
        for d in devices {
            b = b.device(DeviceBuilder::new(d));
        }
        let mut s = b.build();
        s.metadata.name = name.into();
        s.spec.pool.generation = 0;
        s
    }

    /// The same slice as stored after an earlier registration of node uid `uid`, at
    /// `generation`.
    fn stored(name: &str, devices: &[&str], uid: &str, generation: i64) -> ResourceSlice {
        let mut s = sent(name, devices);
        s.spec.pool.generation = generation;
        s.metadata.resource_version = "7".into();
        s.metadata.owner_references = vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: "n1".into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: None,
        }];
        s
    }

    /// `slice` as one of a pool of two slices.
    fn of_two(mut slice: ResourceSlice) -> ResourceSlice {
        slice.spec.pool.resource_slice_count = 2;
        slice
    }

    /// An op as (verb, slice name, generation).
    fn summary(op: &Op) -> (&'static str, String, i64) {
        let generation = |o: &Object| match o {
            Object::ResourceSlice(s) => s.spec.pool.generation,
            _ => -1,
        };
        match op {
            Op::Create(o) => ("create", o.meta().name.clone(), generation(o)),
            Op::Update { object, .. } => ("update", object.meta().name.clone(), generation(object)),
            Op::Delete { key, .. } => ("delete", key.name.clone(), 0),
            Op::Upsert(o) => ("upsert", o.meta().name.clone(), generation(o)),
        }
    }

    #[test]
    fn registration_makes_the_nodes_slices_the_published_ones() {
        let user_slice = {
            let mut s = sent("by-hand", &["x"]);
            s.spec.driver = "other.example.com".into();
            s
        };
        // (case, published, stored, want ops)
        let cases: Vec<(
            &str,
            Vec<ResourceSlice>,
            Vec<ResourceSlice>,
            Vec<(&str, &str, i64)>,
        )> = vec![
            (
                "first registration",
                vec![sent("n1-gpu", &["gpu-0"])],
                vec![],
                vec![("create", "n1-gpu", 1)],
            ),
            (
                "same devices again: nothing",
                vec![sent("n1-gpu", &["gpu-0"])],
                vec![stored("n1-gpu", &["gpu-0"], "u1", 3)],
                vec![],
            ),
            (
                "devices changed: next generation",
                vec![sent("n1-gpu", &["gpu-0", "gpu-1"])],
                vec![stored("n1-gpu", &["gpu-0"], "u1", 3)],
                vec![("update", "n1-gpu", 4)],
            ),
            (
                "node registered again with a new uid: owner updated, same generation",
                vec![sent("n1-gpu", &["gpu-0"])],
                vec![stored("n1-gpu", &["gpu-0"], "old-uid", 3)],
                vec![("update", "n1-gpu", 3)],
            ),
            (
                "no longer published: deleted",
                vec![],
                vec![stored("n1-gpu", &["gpu-0"], "u1", 1)],
                vec![("delete", "n1-gpu", 0)],
            ),
            (
                "one slice of a pool of two changed: the whole pool at the next generation",
                vec![
                    of_two(sent("n1-gpu-0", &["gpu-0"])),
                    of_two(sent("n1-gpu-1", &["gpu-2"])),
                ],
                vec![
                    of_two(stored("n1-gpu-0", &["gpu-0"], "u1", 2)),
                    of_two(stored("n1-gpu-1", &["gpu-1"], "u1", 2)),
                ],
                vec![("update", "n1-gpu-0", 3), ("update", "n1-gpu-1", 3)],
            ),
            (
                "a slice added to an unchanged pool: every slice at the next generation",
                vec![sent("n1-gpu", &["gpu-0"]), sent("n1-gpu-b", &["gpu-1"])],
                vec![stored("n1-gpu", &["gpu-0"], "u1", 5)],
                vec![("update", "n1-gpu", 6), ("create", "n1-gpu-b", 6)],
            ),
            (
                "a slice withdrawn from a pool: the rest at the next generation",
                vec![sent("n1-gpu", &["gpu-0"])],
                vec![
                    stored("n1-gpu", &["gpu-0"], "u1", 5),
                    stored("n1-gpu-b", &["gpu-1"], "u1", 5),
                ],
                vec![("update", "n1-gpu", 6), ("delete", "n1-gpu-b", 0)],
            ),
            (
                "a user's slice of the node is left alone",
                vec![],
                vec![user_slice],
                vec![],
            ),
        ];
        for (name, published, stored, want) in cases {
            let ops = plan(&node("u1"), published, &stored);
            let got: Vec<(&str, String, i64)> = ops.iter().map(summary).collect();
            let want: Vec<(&str, String, i64)> = want
                .into_iter()
                .map(|(v, n, g)| (v, n.to_string(), g))
                .collect();
            assert_eq!(got, want, "{name}");
            for op in &ops {
                if let Op::Create(Object::ResourceSlice(s))
                | Op::Update {
                    object: Object::ResourceSlice(s),
                    ..
                } = op
                {
                    assert_eq!(s.spec.node_name.as_deref(), Some("n1"), "{name}");
                    assert_eq!(s.metadata.owner_references[0].uid, "u1", "{name}");
                }
            }
        }
    }
}
