//! The engine driven step by step, for `berth lab`: pods and objects arrive while it runs,
//! the clock is moved by the caller, and each step reports what the scheduler did
//! ([`SimEvent`]). `berth sim`'s one-shot [`Engine::run`] is the same loop run to the end.

use std::sync::Arc;
use std::time::Instant;

use berth_model::model::{Node, Object, Pod};

use super::{Engine, SimEvent};
use crate::framework::{PodInfo, Snapshot};
use crate::queue::ClusterEvent;

impl Engine {
    /// The virtual clock.
    pub fn now(&self) -> Instant {
        self.world.now
    }

    /// Moves the clock forward to `to` (never back).
    pub fn advance(&mut self, to: Instant) {
        if to > self.world.now {
            self.world.now = to;
        }
    }

    /// The cluster as the scheduler sees it.
    pub fn snapshot(&self) -> &Snapshot {
        &self.scheduler.snapshot
    }

    /// Pods waiting: queued, backing off, unschedulable or set aside.
    pub fn pending(&self) -> usize {
        self.scheduler.queue.len() + self.world.set_aside.len()
    }

    /// A new pod: admitted and queued (or placed, when it names its node).
    pub fn add_pod(&mut self, mut pod: Pod) {
        if pod.metadata.namespace.is_empty() {
            pod.metadata.namespace = berth_model::model::DEFAULT_NAMESPACE.to_string();
        }
        if pod.metadata.uid.is_empty() {
            pod.metadata.uid = format!("uid-{}-{}", pod.metadata.namespace, pod.metadata.name);
        }
        let classes = self.classes.clone();
        if pod.spec.node_name.is_empty() {
            self.admit_pending(pod, &classes);
        } else {
            let node = pod.spec.node_name.clone();
            self.place_bound(pod, &classes);
            self.world.events.push(SimEvent::Removed { node });
        }
    }

    /// A ResourceClaim for pods that arrive later.
    pub fn add_claim(&mut self, claim: &berth_model::model::ResourceClaim) {
        let mut claim = claim.clone();
        if claim.metadata.namespace.is_empty() {
            claim.metadata.namespace = berth_model::model::DEFAULT_NAMESPACE.to_string();
        }
        self.scheduler
            .snapshot
            .dra_mut()
            .upsert_claim(crate::dra::convert::claim(&claim));
    }

    /// Removes a ResourceClaim (its allocation, if any, is freed, and pods waiting for
    /// devices are tried again).
    pub fn remove_claim(&mut self, namespace: &str, name: &str) {
        let allocated = self
            .scheduler
            .snapshot
            .dra()
            .claim(namespace, name)
            .is_some_and(|c| c.allocation.is_some());
        self.scheduler
            .snapshot
            .dra_mut()
            .remove_claim(namespace, name);
        if allocated {
            self.scheduler
                .queue
                .move_all_to_active_or_backoff(ClusterEvent::DeviceChanged, self.world.now);
            self.world_changed();
        }
    }

    /// The cluster changed outside an attempt (a removal, a node): pods set aside because
    /// nothing had changed since their last failure are tried again.
    fn world_changed(&mut self) {
        self.world.generation += 1;
        self.changed();
    }

    /// Schedules until no pod can make progress, moving the clock to back-off expiries no
    /// later than `until` (any, when None); returns what happened.
    pub fn settle(&mut self, until: Option<Instant>) -> Vec<SimEvent> {
        self.step_until(until);
        std::mem::take(&mut self.world.events)
    }

    /// The pod will not be tried again (the FGD artifact never retries a task).
    pub fn forget(&mut self, uid: &str) {
        self.scheduler.pod_gone(uid);
        self.world.set_aside.retain(|q| q.info.uid() != uid);
        self.world.failed_in.remove(uid);
    }

    /// Deletes a pod, placed or pending.
    pub fn delete_pod(&mut self, namespace: &str, name: &str) -> Vec<SimEvent> {
        if let Some((uid, node)) = self.placed(namespace, name) {
            self.remove_placed(&uid, &node);
        } else if let Some(uid) = self.world.pending_uid(namespace, name) {
            self.forget(&uid);
        }
        std::mem::take(&mut self.world.events)
    }

    /// Creates (or replaces) an object in a running simulation: pods, nodes and the
    /// objects scheduling reads (namespaces' labels, DRA objects).
    pub fn create(&mut self, object: Object) -> Result<Vec<SimEvent>, String> {
        match object {
            Object::Pod(pod) => self.add_pod(*pod),
            Object::Node(node) => {
                let name = node.metadata.name.clone();
                let event = if self.scheduler.snapshot.node(&name).is_some() {
                    ClusterEvent::NodeUpdated
                } else {
                    ClusterEvent::NodeAdded
                };
                self.scheduler.snapshot.upsert_node(Arc::new(*node));
                self.scheduler
                    .queue
                    .move_all_to_active_or_backoff(event, self.world.now);
                self.world.events.push(SimEvent::Removed { node: name });
                self.world_changed();
            }
            Object::Namespace(ns) => {
                self.scheduler
                    .snapshot
                    .set_namespace(&ns.metadata.name, ns.metadata.labels.clone());
            }
            other => {
                return Err(format!(
                    "{} objects cannot be created while a lab scenario runs",
                    other.kind().as_str()
                ))
            }
        }
        Ok(std::mem::take(&mut self.world.events))
    }

    /// Deletes `kind/[namespace/]name` (pods and nodes).
    pub fn delete(
        &mut self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Vec<SimEvent>, String> {
        match kind {
            "pod" | "pods" | "po" => {
                let ns = namespace.unwrap_or(berth_model::model::DEFAULT_NAMESPACE);
                if self.placed(ns, name).is_none() && self.world.pending_uid(ns, name).is_none() {
                    return Err(format!("pod {ns}/{name} not found"));
                }
                Ok(self.delete_pod(ns, name))
            }
            "node" | "nodes" | "no" => self.remove_node(name),
            other => Err(format!(
                "{other} objects cannot be deleted in a lab scenario (pods and nodes can)"
            )),
        }
    }

    /// Applies a JSON merge patch (RFC 7386) to a node.
    pub fn patch(
        &mut self,
        kind: &str,
        _namespace: Option<&str>,
        name: &str,
        merge: &serde_json::Value,
    ) -> Result<Vec<SimEvent>, String> {
        if !matches!(kind, "node" | "nodes" | "no") {
            return Err(format!(
                "{kind} objects cannot be patched in a lab scenario (nodes can)"
            ));
        }
        let node = self.node(name)?;
        let mut value = serde_json::to_value(&*node).map_err(|e| e.to_string())?;
        merge_patch(&mut value, merge);
        let patched: Node =
            serde_json::from_value(value).map_err(|e| format!("node/{name}: {e}"))?;
        self.create(Object::Node(Box::new(patched)))
    }

    /// Cordons or uncordons a node.
    pub fn set_unschedulable(&mut self, name: &str, unschedulable: bool) -> Result<(), String> {
        let mut node = (*self.node(name)?).clone();
        node.spec.unschedulable = unschedulable;
        self.create(Object::Node(Box::new(node))).map(|_| ())
    }

    /// Cordons a node and removes its pods; pods with an owner come back to the queue as
    /// new pods (their controller would recreate them).
    pub fn drain(&mut self, name: &str) -> Result<Vec<SimEvent>, String> {
        self.set_unschedulable(name, true)?;
        let pods: Vec<Arc<PodInfo>> = self.node_info_pods(name);
        for pod in pods {
            self.remove_placed(pod.uid(), name);
            self.world.evicted.push(pod.key());
            self.recreate_owned(&pod);
        }
        Ok(std::mem::take(&mut self.world.events))
    }

    /// Removes a node with its pods (owned pods come back as in [`Engine::drain`]).
    pub fn remove_node(&mut self, name: &str) -> Result<Vec<SimEvent>, String> {
        self.node(name)?;
        for pod in self.scheduler.snapshot.remove_node(name) {
            self.world.budgets.pod_removed(&pod.pod);
            self.recreate_owned(&pod);
        }
        self.scheduler
            .queue
            .move_all_to_active_or_backoff(ClusterEvent::NodeDeleted, self.world.now);
        self.world.events.push(SimEvent::Removed {
            node: name.to_string(),
        });
        self.world_changed();
        Ok(std::mem::take(&mut self.world.events))
    }

    fn node(&self, name: &str) -> Result<Arc<Node>, String> {
        self.scheduler
            .snapshot
            .node(name)
            .map(|n| n.node.clone())
            .ok_or_else(|| format!("node {name} not found"))
    }

    fn node_info_pods(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.scheduler
            .snapshot
            .node(node)
            .map(|n| n.pods.clone())
            .unwrap_or_default()
    }

    /// The uid and node of a placed pod.
    fn placed(&self, namespace: &str, name: &str) -> Option<(String, String)> {
        self.scheduler.snapshot.nodes().iter().find_map(|n| {
            n.pods
                .iter()
                .find(|p| p.pod.metadata.namespace == namespace && p.pod.metadata.name == name)
                .map(|p| (p.uid().to_string(), n.name().to_string()))
        })
    }

    fn remove_placed(&mut self, uid: &str, node: &str) {
        if let Some((_, pod)) = self.scheduler.snapshot.remove_pod(uid) {
            self.world.budgets.pod_removed(&pod.pod);
        }
        self.scheduler
            .queue
            .move_all_to_active_or_backoff(ClusterEvent::PodDeleted, self.world.now);
        self.world.events.push(SimEvent::Removed {
            node: node.to_string(),
        });
        self.world_changed();
    }

    /// A removed pod with an owner comes back as a new pending pod.
    fn recreate_owned(&mut self, pod: &PodInfo) {
        if pod.pod.metadata.owner_references.is_empty() {
            return;
        }
        let mut again = (*pod.pod).clone();
        again.spec.node_name.clear();
        again.status = Default::default();
        again.metadata.uid = format!("{}-again-{}", again.metadata.uid, self.world.generation);
        self.add_pod(again);
    }
}

/// RFC 7386: objects merge key by key, `null` removes a key, anything else replaces.
fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    match (target, patch) {
        (serde_json::Value::Object(t), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(serde_json::Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::merge_patch;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let cases = [
            (
                json!({"a": 1, "b": {"c": 2, "d": 3}}),
                json!({"b": {"c": null, "e": 4}}),
                json!({"a": 1, "b": {"d": 3, "e": 4}}),
            ),
            (json!({"a": [1, 2]}), json!({"a": [3]}), json!({"a": [3]})),
            (json!({"a": 1}), json!("x"), json!("x")),
        ];
        for (mut target, patch, want) in cases {
            merge_patch(&mut target, &patch);
            assert_eq!(target, want);
        }
    }
}
