//! An index of cached objects by label (`key=value` → objects), so that a label-selected
//! List of the API cache costs what it returns rather than a pass over every object of the
//! namespace. Beyond kube's watch cache, which indexes pods by node only and filters a
//! label-selected list object by object; the answer is the same, in the same order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use berth_proto::model::{Kind, LabelSelector, LabelSelectorOperator, Object};

use super::informer::Event;

/// The objects carrying one label value, by (namespace, name).
type Holders = BTreeMap<(String, String), Arc<Object>>;

/// Cached objects by kind, label key and label value, kept from an informer's events.
#[derive(Debug, Default)]
pub struct LabelIndex {
    kinds: HashMap<Kind, HashMap<String, HashMap<String, Holders>>>,
}

impl LabelIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Follows one event of the informer whose objects are indexed: an object's labels are
    /// indexed in its latest state, a deleted object leaves the index.
    pub fn follow(&mut self, event: &Event) {
        match event {
            Event::Apply { object, previous } | Event::InitApply { object, previous } => {
                if let Some(previous) = previous {
                    self.remove(previous);
                }
                self.insert(object);
            }
            Event::Delete { object, .. } => self.remove(object),
            Event::Init | Event::InitDone => {}
        }
    }

    fn insert(&mut self, object: &Arc<Object>) {
        let meta = object.meta();
        if meta.labels.is_empty() {
            return;
        }
        let by_key = self.kinds.entry(object.kind()).or_default();
        for (key, value) in &meta.labels {
            by_key
                .entry(key.clone())
                .or_default()
                .entry(value.clone())
                .or_default()
                .insert((meta.namespace.clone(), meta.name.clone()), object.clone());
        }
    }

    fn remove(&mut self, object: &Object) {
        let meta = object.meta();
        let Some(by_key) = self.kinds.get_mut(&object.kind()) else {
            return;
        };
        let name = (meta.namespace.clone(), meta.name.clone());
        for (key, value) in &meta.labels {
            let Some(by_value) = by_key.get_mut(key) else {
                continue;
            };
            if let Some(holders) = by_value.get_mut(value) {
                holders.remove(&name);
                if holders.is_empty() {
                    by_value.remove(value);
                }
            }
            if by_value.is_empty() {
                by_key.remove(key);
            }
        }
    }

    /// The objects of `kind` (of `namespace` only, if given) that `selector` selects, in
    /// (namespace, name) order; `None` when no requirement of the selector names values of
    /// a key (matchLabels, `=`, `==`, `in`), so that the index cannot narrow the search
    /// and the caller must scan.
    pub fn select(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Option<Vec<Arc<Object>>> {
        let by_key = self.kinds.get(&kind);
        let holders =
            |key: &str, value: &str| by_key.and_then(|k| k.get(key)).and_then(|v| v.get(value));
        // Each requirement with values names the only objects it can select: the narrowest
        // of them is where to look.
        let pairs = selector
            .match_labels
            .iter()
            .map(|(k, v)| vec![holders(k, v)]);
        let expressions = selector
            .match_expressions
            .iter()
            .filter(|r| r.operator == LabelSelectorOperator::In)
            .map(|r| r.values.iter().map(|v| holders(&r.key, v)).collect());
        let narrowest: Vec<Option<&Holders>> =
            pairs
                .chain(expressions)
                .min_by_key(|sets: &Vec<Option<&Holders>>| {
                    sets.iter().flatten().map(|h| h.len()).sum::<usize>()
                })?;
        // An `in` may name a value twice; its holders count once.
        let mut narrowest: Vec<&Holders> = narrowest.into_iter().flatten().collect();
        narrowest.sort_by_key(|h| *h as *const Holders);
        narrowest.dedup_by(|a, b| std::ptr::eq(*a, *b));
        // The holders of the narrowest requirement are exactly what it selects: when it is
        // the selector's only requirement, each needs no check of its labels (a look at
        // every holder's labels was most of a list's cost).
        let exact = selector.match_labels.len() + selector.match_expressions.len() == 1;
        let sets = narrowest.len();
        let mut found: Vec<Arc<Object>> = Vec::new();
        for holders in narrowest {
            let in_namespace: Box<dyn Iterator<Item = &Arc<Object>>> = match namespace {
                Some(ns) => Box::new(
                    holders
                        .range((ns.to_string(), String::new())..)
                        .take_while(move |((n, _), _)| n == ns)
                        .map(|(_, o)| o),
                ),
                None => Box::new(holders.values()),
            };
            found.extend(
                in_namespace
                    .filter(|o| exact || selector.matches(&o.meta().labels))
                    .cloned(),
            );
        }
        // One set is in key order already; the values of one `in` requirement select
        // disjoint sets, to be put in key order again.
        if sets > 1 {
            found.sort_by(|a, b| {
                let (a, b) = (a.meta(), b.meta());
                (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name))
            });
        }
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use berth_model::testing::PodBuilder;
    use berth_proto::selector;

    use super::*;

    fn pod(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Arc<Object> {
        let mut pod = PodBuilder::new(name).namespace(namespace);
        for (k, v) in labels {
            pod = pod.label(k, v);
        }
        Arc::new(Object::Pod(Box::new(pod.build())))
    }

    fn names(objects: &[Arc<Object>]) -> Vec<String> {
        objects
            .iter()
            .map(|o| format!("{}/{}", o.meta().namespace, o.meta().name))
            .collect()
    }

    fn apply(index: &mut LabelIndex, object: &Arc<Object>, previous: Option<&Arc<Object>>) {
        index.follow(&Event::Apply {
            object: object.clone(),
            previous: previous.cloned(),
        });
    }

    struct Case {
        name: &'static str,
        namespace: Option<&'static str>,
        selector: &'static str,
        /// `None`: the index cannot answer (the caller scans).
        want: Option<&'static [&'static str]>,
    }

    #[test]
    fn a_selection_is_what_a_scan_would_select_in_the_same_order() {
        let mut index = LabelIndex::new();
        let pods = [
            pod("a", "p2", &[("app", "web"), ("tier", "front")]),
            pod("a", "p1", &[("app", "web"), ("tier", "back")]),
            pod("b", "p1", &[("app", "web")]),
            pod("b", "p0", &[("app", "db"), ("tier", "back")]),
            pod("a", "p3", &[]),
        ];
        for p in &pods {
            apply(&mut index, p, None);
        }
        let cases = [
            Case {
                name: "one pair, every namespace",
                namespace: None,
                selector: "app=web",
                want: Some(&["a/p1", "a/p2", "b/p1"]),
            },
            Case {
                name: "one pair, one namespace",
                namespace: Some("a"),
                selector: "app==web",
                want: Some(&["a/p1", "a/p2"]),
            },
            Case {
                name: "pairs are ANDed",
                namespace: None,
                selector: "app=web,tier=back",
                want: Some(&["a/p1"]),
            },
            Case {
                name: "in: the union of its values, in key order",
                namespace: None,
                selector: "app in (web,db)",
                want: Some(&["a/p1", "a/p2", "b/p0", "b/p1"]),
            },
            Case {
                name: "in: a value named twice counts once",
                namespace: None,
                selector: "app in (web,db,web)",
                want: Some(&["a/p1", "a/p2", "b/p0", "b/p1"]),
            },
            Case {
                name: "in: one value, one namespace",
                namespace: Some("b"),
                selector: "app in (db)",
                want: Some(&["b/p0"]),
            },
            Case {
                name: "two pairs: the narrower is checked against the other",
                namespace: Some("a"),
                selector: "tier=front,app=web",
                want: Some(&["a/p2"]),
            },
            Case {
                name: "other requirements filter what the index found",
                namespace: None,
                selector: "app=web,!tier",
                want: Some(&["b/p1"]),
            },
            Case {
                name: "a value nobody has selects nothing",
                namespace: None,
                selector: "app=cache",
                want: Some(&[]),
            },
            Case {
                name: "a namespace without such pods",
                namespace: Some("c"),
                selector: "app=web",
                want: Some(&[]),
            },
            Case {
                name: "only exists: not indexable",
                namespace: None,
                selector: "tier",
                want: None,
            },
            Case {
                name: "only notin and !=: not indexable",
                namespace: None,
                selector: "app notin (web),tier!=front",
                want: None,
            },
            Case {
                name: "everything: not indexable",
                namespace: None,
                selector: "",
                want: None,
            },
        ];
        for case in cases {
            let selector = selector::parse(case.selector).expect("a selector");
            let got = index
                .select(Kind::Pod, case.namespace, &selector)
                .map(|found| names(&found));
            let want = case.want.map(|w| w.iter().map(|s| s.to_string()).collect());
            assert_eq!(got, want, "{}", case.name);
            if let Some(got) = got {
                // The same as a scan of every pod.
                let mut scanned: Vec<Arc<Object>> = pods
                    .iter()
                    .filter(|p| case.namespace.is_none_or(|ns| p.meta().namespace == ns))
                    .filter(|p| selector.matches(&p.meta().labels))
                    .cloned()
                    .collect();
                scanned.sort_by_key(|p| (p.meta().namespace.clone(), p.meta().name.clone()));
                assert_eq!(got, names(&scanned), "{}: as a scan", case.name);
            }
        }
        let mut by_match_labels = LabelSelector::default();
        by_match_labels
            .match_labels
            .insert("tier".to_string(), "back".to_string());
        let found = index
            .select(Kind::Pod, None, &by_match_labels)
            .expect("indexable");
        assert_eq!(names(&found), ["a/p1", "b/p0"], "matchLabels");
        assert_eq!(
            index.select(Kind::Node, None, &selector::parse("app=web").unwrap()),
            Some(vec![]),
            "another kind"
        );
    }

    #[test]
    fn changed_labels_and_deletions_leave_the_index() {
        let mut index = LabelIndex::new();
        let web = selector::parse("app=web").unwrap();
        let old = pod("a", "p", &[("app", "web")]);
        apply(&mut index, &old, None);
        let relabelled = pod("a", "p", &[("app", "db")]);
        apply(&mut index, &relabelled, Some(&old));
        assert_eq!(index.select(Kind::Pod, None, &web), Some(vec![]));
        let db = selector::parse("app=db").unwrap();
        let found = index.select(Kind::Pod, None, &db).expect("indexable");
        assert!(Arc::ptr_eq(&found[0], &relabelled), "the latest state");
        index.follow(&Event::Delete {
            object: relabelled.clone(),
            held: relabelled.clone(),
        });
        assert_eq!(index.select(Kind::Pod, None, &db), Some(vec![]));
        assert!(index.kinds[&Kind::Pod].is_empty(), "nothing left behind");
    }
}
