//! Node labels interned to small numbers (issue 15): every label key gets a [`KeyId`] and
//! every value of a key a [`DomainId`], so that plugins that look a node's label up on every
//! node they visit (NodeAffinity's selectors, the topology domains of InterPodAffinity and
//! PodTopologySpread) compare integers and index dense arrays instead of searching the
//! node's label map and hashing strings.
//!
//! The numbers are process-wide, so a [`NodeInfo`](super::NodeInfo) made anywhere (a
//! snapshot, a preemption copy, a test) carries numbers that mean the same to every plugin
//! state. A value's number is given back once no node holds it any more, and may then be
//! given to another value: a state that holds numbers is valid for the nodes it was computed
//! over (a snapshot's states are recomputed when its nodes change, see
//! [`Snapshot::epoch`](super::Snapshot::epoch)). The interner's lock is taken when a node
//! object changes labels and when a plugin resolves a pod's keys and values (once per
//! PreFilter), never per node visited.

use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use berth_model::model::StringMap;

use super::hash::FastHashMap;

/// The number of a label key.
pub type KeyId = u32;

/// The number of one value of a label key: a topology domain of that key. Numbers of one
/// key are dense from 0, below [`domain_bound`].
pub type DomainId = u32;

/// The values of one key and how many nodes hold each.
#[derive(Debug, Default)]
struct KeyValues {
    ids: FastHashMap<String, DomainId>,
    /// Each number's value (stale for a number on the free list).
    names: Vec<String>,
    /// Nodes holding each value; 0 for a number on the free list.
    holders: Vec<u32>,
    /// Numbers no node holds, to give out again.
    free: Vec<DomainId>,
}

#[derive(Debug, Default)]
struct Interner {
    keys: FastHashMap<String, KeyId>,
    values: Vec<KeyValues>,
}

impl Interner {
    fn key(&mut self, key: &str) -> KeyId {
        match self.keys.get(key) {
            Some(&id) => id,
            None => {
                let id = KeyId::try_from(self.values.len()).expect("fewer than 2^32 label keys");
                self.keys.insert(key.to_string(), id);
                self.values.push(KeyValues::default());
                id
            }
        }
    }

    fn intern(&mut self, key: &str, value: &str) -> (KeyId, DomainId) {
        let key_id = self.key(key);
        let values = &mut self.values[key_id as usize];
        let domain = match values.ids.get(value) {
            Some(&id) => id,
            None => {
                let id = match values.free.pop() {
                    Some(id) => {
                        values.names[id as usize] = value.to_string();
                        id
                    }
                    None => {
                        values.holders.push(0);
                        values.names.push(value.to_string());
                        DomainId::try_from(values.holders.len() - 1)
                            .expect("fewer than 2^32 values of a label key")
                    }
                };
                values.ids.insert(value.to_string(), id);
                id
            }
        };
        values.holders[domain as usize] += 1;
        (key_id, domain)
    }

    fn release(&mut self, key: KeyId, domain: DomainId) {
        let values = &mut self.values[key as usize];
        let holders = &mut values.holders[domain as usize];
        *holders -= 1;
        if *holders == 0 {
            values.ids.remove(&values.names[domain as usize]);
            values.free.push(domain);
        }
    }
}

static INTERNER: LazyLock<RwLock<Interner>> = LazyLock::new(RwLock::default);

/// The number of `key`, if any node has ever had a label with it.
pub fn key_id(key: &str) -> Option<KeyId> {
    let interner = INTERNER.read().unwrap_or_else(PoisonError::into_inner);
    interner.keys.get(key).copied()
}

/// The number of `key`, given to it now if no node has had it yet (keys are never given
/// back: a cluster has a handful).
pub fn intern_key(key: &str) -> KeyId {
    if let Some(id) = key_id(key) {
        return id;
    }
    let mut interner = INTERNER.write().unwrap_or_else(PoisonError::into_inner);
    interner.key(key)
}

/// The number of `value` of `key`, if some node holds that label: `None` means no node has
/// it.
pub fn domain_id(key: KeyId, value: &str) -> Option<DomainId> {
    let interner = INTERNER.read().unwrap_or_else(PoisonError::into_inner);
    interner.values.get(key as usize)?.ids.get(value).copied()
}

/// One more than the largest number given to a value of `key` so far: the length of a dense
/// array indexed by its domains.
pub fn domain_bound(key: KeyId) -> usize {
    let interner = INTERNER.read().unwrap_or_else(PoisonError::into_inner);
    interner
        .values
        .get(key as usize)
        .map_or(0, |v| v.holders.len())
}

/// The labels of one node object, interned: (key, domain) pairs sorted by key. Clones share
/// the pairs; the numbers are given back when the last clone goes.
#[derive(Clone, Debug, Default)]
pub struct NodeTopology(Option<Arc<[(KeyId, DomainId)]>>);

impl Drop for NodeTopology {
    fn drop(&mut self) {
        let Some(pairs) = self.0.take() else {
            return;
        };
        // Under the lock, so that of two last clones dropped at once exactly one sees
        // itself as the last (every clone's count goes down under the lock).
        let mut interner = INTERNER.write().unwrap_or_else(PoisonError::into_inner);
        if Arc::strong_count(&pairs) == 1 {
            for &(key, domain) in pairs.iter() {
                interner.release(key, domain);
            }
        }
        drop(pairs);
    }
}

impl NodeTopology {
    /// The node's labels, interned.
    pub fn of(labels: &StringMap) -> Self {
        if labels.is_empty() {
            return NodeTopology(None);
        }
        let mut pairs: Vec<(KeyId, DomainId)> = {
            let mut interner = INTERNER.write().unwrap_or_else(PoisonError::into_inner);
            labels.iter().map(|(k, v)| interner.intern(k, v)).collect()
        };
        pairs.sort_unstable();
        NodeTopology(Some(Arc::from(pairs)))
    }

    /// The node's domain of `key`: the number of its value, `None` when the node does not
    /// have the label.
    #[inline]
    pub fn domain(&self, key: KeyId) -> Option<DomainId> {
        let pairs = self.0.as_ref()?;
        // Nodes have a handful of labels: a scan beats a binary search.
        pairs
            .iter()
            .find(|&&(k, _)| k >= key)
            .and_then(|&(k, d)| (k == key).then_some(d))
    }

    /// Whether the node has the label `key` with the value numbered `domain`.
    #[inline]
    pub fn has(&self, key: KeyId, domain: DomainId) -> bool {
        self.domain(key) == Some(domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn nodes_with_one_value_share_its_domain() {
        let a = NodeTopology::of(&labels(&[
            ("topo-test/zone", "a"),
            ("topo-test/host", "n1"),
        ]));
        let b = NodeTopology::of(&labels(&[
            ("topo-test/zone", "a"),
            ("topo-test/host", "n2"),
        ]));
        let c = NodeTopology::of(&labels(&[("topo-test/zone", "b")]));
        let zone = key_id("topo-test/zone").expect("interned");
        let host = key_id("topo-test/host").expect("interned");
        assert_eq!(a.domain(zone), b.domain(zone));
        assert_ne!(a.domain(zone), c.domain(zone));
        assert_ne!(a.domain(host), b.domain(host));
        assert_eq!(c.domain(host), None, "c has no host label");
        assert_eq!(a.domain(zone), domain_id(zone, "a"));
        assert!(a.has(zone, domain_id(zone, "a").expect("interned")));
        assert!(domain_bound(zone) >= 2);
        assert_eq!(NodeTopology::default().domain(zone), None);
        assert_eq!(intern_key("topo-test/zone"), zone);
        let fresh = intern_key("topo-test/on-no-node");
        assert_eq!(key_id("topo-test/on-no-node"), Some(fresh));
        assert_eq!(domain_bound(fresh), 0);
    }

    #[test]
    fn a_value_no_node_holds_is_forgotten() {
        let key = "topo-test/forgotten";
        let node = NodeTopology::of(&labels(&[(key, "only")]));
        let id = key_id(key).expect("interned");
        assert!(domain_id(id, "only").is_some());
        let copy = node.clone();
        drop(node);
        assert!(domain_id(id, "only").is_some(), "a clone still holds it");
        drop(copy);
        assert_eq!(domain_id(id, "only"), None);
        // Its number is given out again.
        let again = NodeTopology::of(&labels(&[(key, "other")]));
        assert_eq!(domain_bound(id), 1);
        assert_eq!(again.domain(id), Some(0));
    }
}
