//! [`IncrementalCache`]: a plugin's per-pod state kept across cycles and brought up to date
//! from the snapshot's journal of placement changes, instead of being recomputed over every
//! placed pod each cycle. A state is reused only for an equal key (the parts of the pod the
//! state depends on), the same snapshot and the same epoch; otherwise it is recomputed.

use std::sync::{Arc, Mutex};

use super::snapshot::{PodChange, Snapshot};
use super::types::NodeInfo;

/// One cached state and where it stands.
struct Entry<K, S> {
    snapshot_id: u64,
    epoch: u64,
    generation: u64,
    key: K,
    state: Arc<S>,
}

/// A single cached state of type `S` for pods with key `K`. Plugins hold one per cached
/// computation; a pod with another key replaces it (consecutive pods of one workload share
/// their key, which is when the cache pays).
pub struct IncrementalCache<K, S> {
    entry: Mutex<Option<Entry<K, S>>>,
}

impl<K, S> Default for IncrementalCache<K, S> {
    fn default() -> Self {
        IncrementalCache {
            entry: Mutex::new(None),
        }
    }
}

impl<K, S> std::fmt::Debug for IncrementalCache<K, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IncrementalCache").finish_non_exhaustive()
    }
}

impl<K, S> Clone for IncrementalCache<K, S> {
    /// A clone starts empty: a cache is a memo, not part of the plugin's configuration.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<K: PartialEq, S: Clone> IncrementalCache<K, S> {
    /// The state for `key` over `snapshot`: the cached one brought up to date by `apply`
    /// (called for each placement change since, with the change's node), or a fresh one
    /// from `compute`. `apply` must leave the state exactly as `compute` would have made it
    /// over the changed snapshot.
    pub fn get(
        &self,
        snapshot: &Snapshot,
        key: K,
        compute: impl FnOnce() -> S,
        mut apply: impl FnMut(&mut S, &PodChange, &NodeInfo),
    ) -> Arc<S> {
        let mut guard = self.entry.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = guard.as_mut() {
            let reusable = entry.snapshot_id == snapshot.id()
                && entry.epoch == snapshot.epoch()
                && entry.key == key;
            if reusable {
                if let Some(changes) = snapshot.changes_since(entry.generation) {
                    if !changes.is_empty() {
                        // Clones only if a cycle still holds the previous state.
                        let state = Arc::make_mut(&mut entry.state);
                        for change in changes {
                            apply(state, change, &snapshot.nodes()[change.node]);
                        }
                        entry.generation = snapshot.generation();
                    }
                    return entry.state.clone();
                }
            }
        }
        let state = Arc::new(compute());
        *guard = Some(Entry {
            snapshot_id: snapshot.id(),
            epoch: snapshot.epoch(),
            generation: snapshot.generation(),
            key,
            state: state.clone(),
        });
        state
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use berth_model::model::{Node, ObjectMeta, Pod};

    use super::*;
    use crate::framework::PodInfo;

    fn node(name: &str) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta {
                name: name.into(),
                ..ObjectMeta::default()
            },
            ..Node::default()
        })
    }

    fn pod(uid: &str) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(Arc::new(Pod {
            metadata: ObjectMeta {
                name: uid.into(),
                uid: uid.into(),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        })))
    }

    /// The cached count of placed pods, kept by `apply`, always equals a recount.
    #[test]
    fn incremental_state_equals_recomputed_state() {
        struct Case {
            name: &'static str,
            step: fn(&mut Snapshot),
        }
        let cases = [
            Case {
                name: "pod added",
                step: |s| {
                    s.add_pod("a", pod("p1"));
                },
            },
            Case {
                name: "pod removed",
                step: |s| {
                    s.remove_pod("p1");
                },
            },
            Case {
                name: "pod moved",
                step: |s| {
                    s.add_pod("a", pod("p2"));
                    s.add_pod("b", pod("p2"));
                },
            },
            Case {
                name: "node added (new epoch)",
                step: |s| s.upsert_node(node("c")),
            },
            Case {
                name: "node removed with its pods",
                step: |s| {
                    s.add_pod("c", pod("p3"));
                    s.remove_node("c");
                },
            },
        ];
        let count = |s: &Snapshot| s.nodes().iter().map(|n| n.pods.len() as i64).sum::<i64>();
        let cache: IncrementalCache<&str, i64> = IncrementalCache::default();
        let mut snapshot = Snapshot::new();
        snapshot.upsert_node(node("a"));
        snapshot.upsert_node(node("b"));
        let mut recomputes = 0;
        for case in cases {
            (case.step)(&mut snapshot);
            let got = cache.get(
                &snapshot,
                "key",
                || {
                    recomputes += 1;
                    count(&snapshot)
                },
                |state, change, _| *state += change.delta,
            );
            assert_eq!(*got, count(&snapshot), "{}", case.name);
        }
        // First use and the two node changes recompute; pod changes do not.
        assert_eq!(recomputes, 3);
        // Another key, or a clone of the snapshot, recomputes.
        let recomputes_for = |snapshot: &Snapshot| {
            let mut fresh = false;
            cache.get(
                snapshot,
                "other",
                || {
                    fresh = true;
                    count(snapshot)
                },
                |_, _, _| {},
            );
            fresh
        };
        assert!(recomputes_for(&snapshot), "another key");
        assert!(recomputes_for(&snapshot.clone()), "a cloned snapshot");
    }
}
