//! [`ResourceList`]: resource names to quantities, as a small vector kept sorted by name, with
//! the part of `BTreeMap`'s API the code uses and the same JSON (an object, keys sorted).
//!
//! A pod's requests and limits name two or three resources; a `BTreeMap` allocates its first
//! node for eleven entries (~450 bytes), a sorted vector only what it holds (40 bytes an
//! entry, besides the names).

use std::borrow::Borrow;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Quantity;

/// A map of resource names to quantities (`cpu: 500m`, `memory: 1Gi`, `example.com/gpu: 1`),
/// ordered by name. Equality, order and hashing are those of the map it stands for.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceList {
    // Sorted by name, names unique.
    entries: Vec<(String, Quantity)>,
}

/// An entry as the iterators yield it, `(&name, &quantity)` as a map's do.
fn as_refs((name, quantity): &(String, Quantity)) -> (&String, &Quantity) {
    (name, quantity)
}

/// The iterator of [`ResourceList::iter`]: entries in name order.
pub type ResourceListIter<'a> = std::iter::Map<
    std::slice::Iter<'a, (String, Quantity)>,
    fn(&(String, Quantity)) -> (&String, &Quantity),
>;

impl ResourceList {
    /// An empty list (allocates nothing).
    pub const fn new() -> Self {
        ResourceList {
            entries: Vec::new(),
        }
    }

    fn find<Q>(&self, name: &Q) -> Result<usize, usize>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries
            .binary_search_by(|(n, _)| Borrow::<Q>::borrow(n).cmp(name))
    }

    /// The number of resources named.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no resource is named.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The quantity of the resource `name`.
    pub fn get<Q>(&self, name: &Q) -> Option<&Quantity>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(name).ok().map(|i| &self.entries[i].1)
    }

    /// The quantity of the resource `name`, mutable.
    pub fn get_mut<Q>(&mut self, name: &Q) -> Option<&mut Quantity>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(name).ok().map(|i| &mut self.entries[i].1)
    }

    /// Whether the resource `name` is in the list.
    pub fn contains_key<Q>(&self, name: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(name).is_ok()
    }

    /// Sets the quantity of `name`, returning the one it replaces.
    pub fn insert(&mut self, name: String, quantity: Quantity) -> Option<Quantity> {
        match self.find(name.as_str()) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, quantity)),
            Err(i) => {
                self.entries.insert(i, (name, quantity));
                None
            }
        }
    }

    /// The quantity of `name`, set to `quantity` first when the list has none (a map's
    /// `entry(name).or_insert(quantity)`).
    pub fn get_or_insert(&mut self, name: &str, quantity: Quantity) -> &mut Quantity {
        let i = match self.find(name) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (name.to_string(), quantity));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Removes the resource `name`, returning its quantity.
    pub fn remove<Q>(&mut self, name: &Q) -> Option<Quantity>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(name).ok().map(|i| self.entries.remove(i).1)
    }

    /// Keeps the entries for which `keep` says so.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut Quantity) -> bool) {
        self.entries
            .retain_mut(|(name, quantity)| keep(name, quantity));
    }

    /// The entries, in name order.
    pub fn iter(&self) -> ResourceListIter<'_> {
        self.entries.iter().map(as_refs)
    }

    /// The entries, in name order, the quantities mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut Quantity)> {
        self.entries
            .iter_mut()
            .map(|(name, quantity)| (&*name, quantity))
    }

    /// The resource names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(name, _)| name)
    }

    /// The quantities, in name order.
    pub fn values(&self) -> impl Iterator<Item = &Quantity> {
        self.entries.iter().map(|(_, quantity)| quantity)
    }
}

impl fmt::Debug for ResourceList {
    /// As a map: `{"cpu": 500m, ...}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<Q> std::ops::Index<&Q> for ResourceList
where
    String: Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = Quantity;

    /// The quantity of the resource; panics when the list has none, as a map's index does.
    fn index(&self, name: &Q) -> &Quantity {
        self.get(name).expect("no such resource in the list")
    }
}

impl<'a> IntoIterator for &'a ResourceList {
    type Item = (&'a String, &'a Quantity);
    type IntoIter = ResourceListIter<'a>;

    fn into_iter(self) -> ResourceListIter<'a> {
        self.iter()
    }
}

impl IntoIterator for ResourceList {
    type Item = (String, Quantity);
    type IntoIter = std::vec::IntoIter<(String, Quantity)>;

    /// The entries, in name order.
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl Extend<(String, Quantity)> for ResourceList {
    /// Inserts each entry; a later quantity for a name replaces an earlier one.
    fn extend<I: IntoIterator<Item = (String, Quantity)>>(&mut self, entries: I) {
        for (name, quantity) in entries {
            self.insert(name, quantity);
        }
    }
}

impl FromIterator<(String, Quantity)> for ResourceList {
    /// The entries in name order; a later quantity for a name replaces an earlier one.
    fn from_iter<I: IntoIterator<Item = (String, Quantity)>>(entries: I) -> Self {
        let mut entries: Vec<_> = entries.into_iter().collect();
        // Stable: of equal names, the last one given is the last one kept below.
        entries.sort_by(|(a, _), (b, _)| a.cmp(b));
        let mut list = ResourceList {
            entries: Vec::with_capacity(entries.len()),
        };
        for (name, quantity) in entries {
            match list.entries.last_mut() {
                Some(last) if last.0 == name => last.1 = quantity,
                _ => list.entries.push((name, quantity)),
            }
        }
        list.entries.shrink_to_fit();
        list
    }
}

impl<const N: usize> From<[(String, Quantity); N]> for ResourceList {
    fn from(entries: [(String, Quantity); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl Serialize for ResourceList {
    /// A JSON object, names in order, as the map it stands for.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (name, quantity) in self {
            map.serialize_entry(name, quantity)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ResourceList {
    /// From a map of names to quantities; of repeated names the last one counts, as for a
    /// map.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = ResourceList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of resource names to quantities")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResourceList, A::Error> {
                let mut list = ResourceList::new();
                while let Some((name, quantity)) = map.next_entry::<String, Quantity>()? {
                    // Kubernetes writes names sorted: appending is the usual case.
                    match list.entries.last() {
                        Some((last, _)) if *last < name => list.entries.push((name, quantity)),
                        _ => {
                            list.insert(name, quantity);
                        }
                    }
                }
                list.entries.shrink_to_fit();
                Ok(list)
            }
        }
        deserializer.deserialize_map(ListVisitor)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs.iter().map(|(n, v)| (n.to_string(), q(v))).collect()
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs.iter().map(|(n, v)| (n.to_string(), q(v))).collect()
    }

    #[test]
    fn behaves_as_the_map_it_stands_for() {
        struct Case {
            name: &'static str,
            pairs: &'static [(&'static str, &'static str)],
        }
        let cases = [
            Case {
                name: "empty",
                pairs: &[],
            },
            Case {
                name: "sorted",
                pairs: &[("cpu", "1"), ("memory", "1Gi")],
            },
            Case {
                name: "unsorted",
                pairs: &[("pods", "110"), ("cpu", "500m"), ("example.com/gpu", "2")],
            },
            Case {
                name: "repeated name: the last counts",
                pairs: &[("cpu", "1"), ("memory", "1Gi"), ("cpu", "2")],
            },
        ];
        for case in cases {
            let (l, m) = (list(case.pairs), map(case.pairs));
            let got: Vec<_> = l.iter().collect();
            let want: Vec<_> = m.iter().collect();
            assert_eq!(got, want, "{}: iter", case.name);
            assert_eq!(l.len(), m.len(), "{}: len", case.name);
            assert_eq!(
                serde_json::to_string(&l).unwrap(),
                serde_json::to_string(&m).unwrap(),
                "{}: JSON",
                case.name
            );
            assert_eq!(format!("{l:?}"), format!("{m:?}"), "{}: Debug", case.name);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(
                serde_json::from_str::<ResourceList>(&json).unwrap(),
                l,
                "{}: from JSON",
                case.name
            );
            for name in ["cpu", "memory", "pods", "nvidia.com/gpu"] {
                assert_eq!(l.get(name), m.get(name), "{}: get {name}", case.name);
                assert_eq!(
                    l.contains_key(name),
                    m.contains_key(name),
                    "{}: {name}",
                    case.name
                );
            }
        }
    }

    #[test]
    fn reads_unsorted_and_repeated_names_from_json() {
        let got: ResourceList =
            serde_json::from_str(r#"{"memory": "1Gi", "cpu": "1", "memory": "2Gi"}"#).unwrap();
        assert_eq!(got, list(&[("cpu", "1"), ("memory", "2Gi")]));
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            r#"{"cpu":"1","memory":"2Gi"}"#
        );
        let err = serde_json::from_str::<ResourceList>(r#"["cpu"]"#).unwrap_err();
        assert!(err.to_string().contains("a map of resource names"), "{err}");
    }

    #[test]
    fn insert_and_remove_keep_the_order() {
        let mut l = ResourceList::new();
        assert_eq!(l.insert("memory".into(), q("1Gi")), None);
        assert_eq!(l.insert("cpu".into(), q("1")), None);
        assert_eq!(l.insert("pods".into(), q("10")), None);
        assert_eq!(l.insert("cpu".into(), q("2")), Some(q("1")));
        assert_eq!(l.keys().collect::<Vec<_>>(), ["cpu", "memory", "pods"]);
        assert_eq!(l.remove("memory"), Some(q("1Gi")));
        assert_eq!(l.remove("memory"), None);
        assert_eq!(l, list(&[("cpu", "2"), ("pods", "10")]));
        l.retain(|name, _| name != "pods");
        assert_eq!(l.values().collect::<Vec<_>>(), [&q("2")]);
    }

    #[test]
    fn orders_as_the_map() {
        let lists = [
            &[][..],
            &[("cpu", "1")][..],
            &[("cpu", "1"), ("memory", "1Gi")][..],
            &[("cpu", "2")][..],
            &[("memory", "1")][..],
        ];
        for a in lists {
            for b in lists {
                assert_eq!(list(a).cmp(&list(b)), map(a).cmp(&map(b)), "{a:?} {b:?}");
            }
        }
    }
}
