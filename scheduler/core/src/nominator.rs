//! The nominator (kube's `nominator`): the pods that a preemption nominated to a node and
//! that have not been bound yet. The cycle counts them on their node when it filters pods of
//! equal or lower priority ([`crate::framework::run_filters_with_nominated_pods`]), so the
//! room a preemption freed is held for its preemptor instead of going to the next pod.
//!
//! A nomination starts when a preemption nominates the pod, or when a pending pod is seen
//! with `status.nominatedNodeName` set (after a restart); it ends when the pod is bound
//! (assumed), deleted, or a later attempt of the pod ends without a nomination.

use std::collections::HashMap;
use std::sync::Arc;

use berth_model::model::Pod;

use crate::framework::nominated::NominationsByNode;
use crate::framework::{NominatedPods, PodInfo};

/// The nominated pods, by node and by uid.
#[derive(Clone, Debug, Default)]
pub struct Nominator {
    /// Node name → the pods nominated there, in nomination order; shared with the running
    /// cycle's [`NominatedPods`] and copied only if changed while it is alive.
    by_node: Arc<NominationsByNode>,
    /// uid → node name.
    node_of: HashMap<String, String>,
}

impl Nominator {
    /// No nomination.
    pub fn new() -> Self {
        Self::default()
    }

    /// Nominates `pod` to `node`, replacing any earlier nomination of it.
    pub fn add(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.remove(pod.uid());
        self.node_of.insert(pod.uid().to_string(), node.to_string());
        Arc::make_mut(&mut self.by_node)
            .entry(node.to_string())
            .or_default()
            .push(pod);
    }

    /// Ends the pod's nomination; returns the node it was nominated to.
    pub fn remove(&mut self, uid: &str) -> Option<String> {
        let node = self.node_of.remove(uid)?;
        let by_node = Arc::make_mut(&mut self.by_node);
        if let Some(pods) = by_node.get_mut(&node) {
            pods.retain(|p| p.uid() != uid);
            if pods.is_empty() {
                by_node.remove(&node);
            }
        }
        Some(node)
    }

    /// A pending pod was added or changed in the store (kube's `UpdateNominatedPod`): its
    /// nomination follows `status.nominatedNodeName`, except that a version that has none,
    /// after an `old` version that had none either, keeps the nomination made in memory (the
    /// write that records it has not arrived yet). Bound pods hold no nomination.
    pub fn pod_updated(&mut self, old: Option<&Pod>, pod: Arc<PodInfo>) {
        let written = &pod.pod.status.nominated_node_name;
        let node = if !pod.pod.spec.node_name.is_empty() {
            None
        } else if !written.is_empty() {
            Some(written.clone())
        } else if old.is_none_or(|old| old.status.nominated_node_name.is_empty()) {
            self.node_of.get(pod.uid()).cloned()
        } else {
            None
        };
        match node {
            Some(node) => self.add(pod, &node),
            None => {
                self.remove(pod.uid());
            }
        }
    }

    /// The node `uid` is nominated to.
    pub fn node_of(&self, uid: &str) -> Option<&str> {
        self.node_of.get(uid).map(String::as_str)
    }

    /// Number of nominated pods.
    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// Whether no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    /// What `pod`'s cycle must count (kube's `addGENominatedPods`): on each node, the pods
    /// nominated there with a priority equal to or higher than `pod`'s, `pod` itself
    /// excepted. None when no pod is nominated anywhere.
    pub fn for_cycle(&self, pod: &PodInfo) -> Option<Arc<NominatedPods>> {
        (!self.by_node.is_empty()).then(|| Arc::new(NominatedPods::new(self.by_node.clone(), pod)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::PodBuilder;

    fn info(pod: Pod) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(Arc::new(pod)))
    }

    fn nominated(name: &str, priority: i32, node: &str) -> Pod {
        let mut pod = PodBuilder::new(name).priority(priority).build();
        pod.status.nominated_node_name = node.into();
        pod
    }

    /// The nodes each pod's cycle counts nominated pods on, as `node:name` sorted.
    fn counted(nominator: &Nominator, pod: &Pod) -> Vec<String> {
        let Some(n) = nominator
            .for_cycle(&info(pod.clone()))
            .filter(|n| !n.is_empty())
        else {
            return Vec::new();
        };
        let mut out: Vec<String> = ["n1", "n2"]
            .iter()
            .flat_map(|node| {
                n.on(node)
                    .map(move |p| format!("{node}:{}", p.pod.metadata.name))
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn cycles_count_nominated_pods_of_equal_or_higher_priority() {
        let mut nominator = Nominator::new();
        nominator.add(info(nominated("high", 10, "n1")), "n1");
        nominator.add(info(nominated("mid", 5, "n2")), "n2");
        let both = vec!["n1:high", "n2:mid"];
        // (case, the pod of the cycle, the nominated pods it counts)
        let cases: [(&str, Pod, Vec<&str>); 4] = [
            (
                "lower priority counts both",
                PodBuilder::new("low").priority(1).build(),
                both.clone(),
            ),
            (
                "equal priority counts the pod of that priority",
                PodBuilder::new("other").priority(5).build(),
                both,
            ),
            (
                "higher priority counts none",
                PodBuilder::new("top").priority(11).build(),
                vec![],
            ),
            (
                "a pod does not count itself",
                nominated("high", 10, "n1"),
                vec![],
            ),
        ];
        for (name, pod, want) in cases {
            assert_eq!(counted(&nominator, &pod), want, "{name}");
        }
    }

    #[test]
    fn nominations_follow_the_store_but_survive_a_late_write() {
        // (case, nomination in memory, nominatedNodeName of the version seen before (None:
        // none seen), of the new version, whether the new version is bound, the nomination
        // after)
        type Case = (
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
            &'static str,
            bool,
            Option<&'static str>,
        );
        let cases: [Case; 4] = [
            (
                "a written nomination is taken",
                None,
                None,
                "n2",
                false,
                Some("n2"),
            ),
            (
                "the in-memory nomination survives a version without one",
                Some("n1"),
                Some(""),
                "",
                false,
                Some("n1"),
            ),
            (
                "a nomination removed in the store ends",
                Some("n1"),
                Some("n1"),
                "",
                false,
                None,
            ),
            (
                "a bound pod holds no nomination",
                Some("n1"),
                Some("n1"),
                "n1",
                true,
                None,
            ),
        ];
        for (name, in_memory, old, new, bound, want) in cases {
            let mut nominator = Nominator::new();
            if let Some(node) = in_memory {
                nominator.add(info(nominated("p", 10, node)), node);
            }
            let old = old.map(|node| nominated("p", 10, node));
            let mut new = nominated("p", 10, new);
            if bound {
                new.spec.node_name = "n1".into();
            }
            nominator.pod_updated(old.as_ref(), info(new));
            assert_eq!(nominator.node_of("default-p"), want, "{name}");
            assert_eq!(nominator.len(), usize::from(want.is_some()), "{name}");
        }
    }
}
