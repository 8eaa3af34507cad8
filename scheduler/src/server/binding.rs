//! Binding a pod to a node, the decision of a scheduler: the one rule for what a bound pod
//! looks like (shared by Berth's own scheduling loop), and the `Bind` RPC through which
//! other schedulers decide (Kubernetes' pods/binding subresource).
//!
//! As kube's binding, the RPC succeeds only for an unbound pod that is not being deleted
//! and has no scheduling gates; Berth also requires the node to exist (kube does not, and
//! such a pod then waits forever for a kubelet). Whether the pod fits is not checked here:
//! the node's agent admits it or fails it (OutOfcpu, OutOfmemory), as kubelet does when two
//! schedulers race for the same room.

use berth_proto::conditions::set_condition;
use berth_proto::model::{Kind, Object, ObjectKey, Pod, PodCondition, Time};
use berth_proto::names;
use berth_store::{Change, ObjectStore, Op, Precondition};

use super::error::{Error, Result};
use super::events::{new_event, pod_ref, NORMAL};

/// Reason of the event a binding records.
pub const REASON_SCHEDULED: &str = "Scheduled";

/// `pod` assigned to `node`: spec.nodeName, PodScheduled=True, and no nomination left.
pub fn assign(pod: &mut Pod, node: &str, now: Time) {
    pod.spec.node_name = node.to_string();
    set_condition(
        &mut pod.status.conditions,
        PodCondition {
            type_: names::CONDITION_POD_SCHEDULED.into(),
            status: names::STATUS_TRUE.into(),
            ..Default::default()
        },
        now,
    );
    pod.status.nominated_node_name.clear();
}

/// The message of the Scheduled event (kube's wording).
pub fn scheduled_message(pod: &Pod, node: &str) -> String {
    format!(
        "Successfully assigned {}/{} to {}",
        pod.metadata.namespace, pod.metadata.name, node
    )
}

/// What a [`bind`] asks for.
#[derive(Clone, Debug)]
pub struct Binding<'a> {
    /// The pod's namespace.
    pub namespace: &'a str,
    /// The pod's name.
    pub name: &'a str,
    /// When not empty, the uid the pod must have.
    pub uid: &'a str,
    /// The target node.
    pub node: &'a str,
    /// The Scheduled event's reporting component; empty: the pod's schedulerName.
    pub scheduler: &'a str,
}

/// Binds the pod and records the Scheduled event in one transaction; returns the bound pod.
pub fn bind(store: &dyn ObjectStore, binding: &Binding<'_>) -> Result<Pod> {
    if binding.name.is_empty() {
        return Err(Error::BadRequest(
            "name: the pod to bind is required".into(),
        ));
    }
    if binding.node.is_empty() {
        return Err(Error::BadRequest(
            "node_name: the node to bind to is required".into(),
        ));
    }
    let key = ObjectKey::new(Kind::Pod, binding.namespace, binding.name);
    let Some(Object::Pod(mut pod)) = store.get(&key)? else {
        return Err(Error::NotFound { key });
    };
    let who = format!("pod {}/{}", binding.namespace, binding.name);
    if !binding.uid.is_empty() && binding.uid != pod.metadata.uid {
        return Err(Error::Conflict {
            key,
            expected: format!("uid {}", binding.uid),
            found: format!("uid {}", pod.metadata.uid),
        });
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Err(Error::FailedPrecondition(format!(
            "{who} is being deleted, cannot be assigned to a host"
        )));
    }
    if !pod.spec.node_name.is_empty() {
        return Err(Error::FailedPrecondition(format!(
            "{who} is already assigned to node {:?}",
            pod.spec.node_name
        )));
    }
    if !pod.spec.scheduling_gates.is_empty() {
        return Err(Error::FailedPrecondition(format!(
            "{who} has non-empty .spec.schedulingGates"
        )));
    }
    let node_key = ObjectKey::new(Kind::Node, "", binding.node);
    if store.get(&node_key)?.is_none() {
        return Err(Error::NotFound { key: node_key });
    }
    let scheduler = if binding.scheduler.is_empty() {
        pod.spec.scheduler_name.clone()
    } else {
        binding.scheduler.to_string()
    };
    let now = Time::now();
    let stored_version = pod.metadata.resource_version.clone();
    assign(&mut pod, binding.node, now);
    let mut event = new_event(
        pod_ref(&pod),
        NORMAL,
        REASON_SCHEDULED,
        scheduled_message(&pod, binding.node),
        &scheduler,
        now,
    );
    event.count = 1;
    event.last_timestamp = Some(now);
    let changes = store.commit(vec![
        Op::Update {
            object: Object::Pod(pod),
            precondition: Precondition::ResourceVersion(stored_version),
        },
        Op::Create(Object::Event(Box::new(event))),
    ])?;
    match changes.into_iter().next().map(Change::into_object) {
        Some(Object::Pod(pod)) => Ok(*pod),
        other => unreachable!("a commit returns each op's object in order, got {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::model::PodSchedulingGate;
    use berth_model::testing::{NodeBuilder, PodBuilder};
    use berth_store::SledStore;

    /// A store with node `n1` and pods: `free` (unbound), `placed` (on n1), `going`
    /// (terminating) and `gated` (with a scheduling gate).
    fn store() -> SledStore {
        let store = SledStore::temporary().expect("temporary store");
        let mut gated = PodBuilder::new("gated").build();
        gated.spec.scheduling_gates.push(PodSchedulingGate {
            name: "example.com/wait".into(),
        });
        store
            .commit(vec![
                Op::Create(Object::Node(Box::new(NodeBuilder::new("n1").build()))),
                Op::Create(Object::Pod(Box::new(
                    PodBuilder::new("free").uid("u-free").build(),
                ))),
                Op::Create(Object::Pod(Box::new(
                    PodBuilder::new("placed").node_name("n1").build(),
                ))),
                Op::Create(Object::Pod(Box::new(
                    PodBuilder::new("going").terminating().build(),
                ))),
                Op::Create(Object::Pod(Box::new(gated))),
            ])
            .expect("seeding");
        store
    }

    fn binding<'a>(name: &'a str, uid: &'a str, node: &'a str) -> Binding<'a> {
        Binding {
            namespace: "default",
            name,
            uid,
            node,
            scheduler: "my-scheduler",
        }
    }

    #[test]
    fn refusals_name_the_problem_with_kube_codes() {
        use tonic::Code;
        let cases = [
            (
                "already assigned",
                binding("placed", "", "n1"),
                Code::FailedPrecondition,
                "pod default/placed is already assigned to node \"n1\"",
            ),
            (
                "terminating",
                binding("going", "", "n1"),
                Code::FailedPrecondition,
                "pod default/going is being deleted, cannot be assigned to a host",
            ),
            (
                "gated",
                binding("gated", "", "n1"),
                Code::FailedPrecondition,
                "pod default/gated has non-empty .spec.schedulingGates",
            ),
            (
                "pod gone",
                binding("nope", "", "n1"),
                Code::NotFound,
                "pods \"nope\" not found",
            ),
            (
                "node missing",
                binding("free", "", "n9"),
                Code::NotFound,
                "nodes \"n9\" not found",
            ),
            (
                "another pod of that name",
                binding("free", "u-old", "n1"),
                Code::Aborted,
                "uid u-old",
            ),
            (
                "no node",
                binding("free", "", ""),
                Code::InvalidArgument,
                "node_name: the node to bind to is required",
            ),
        ];
        for (name, request, code, message) in cases {
            let store = store();
            let err = bind(&store, &request).expect_err(name);
            assert_eq!(err.code(), code, "{name}: {err}");
            assert!(err.to_string().contains(message), "{name}: {err}");
        }
    }

    #[test]
    fn a_binding_assigns_the_pod_and_records_the_event_together() {
        let store = store();
        let pod = bind(&store, &binding("free", "u-free", "n1")).expect("binds");
        assert_eq!(pod.spec.node_name, "n1");
        let scheduled = pod
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == names::CONDITION_POD_SCHEDULED)
            .expect("PodScheduled");
        assert_eq!(scheduled.status, names::STATUS_TRUE);
        let events = store.list(Kind::Event, Some("default")).expect("events");
        let [Object::Event(event)] = events.as_slice() else {
            panic!("one event: {events:?}");
        };
        assert_eq!(
            (event.reason.as_str(), event.reporting_component.as_str()),
            (REASON_SCHEDULED, "my-scheduler")
        );
        assert_eq!(event.message, "Successfully assigned default/free to n1");
        let err = bind(&store, &binding("free", "", "n1")).expect_err("bound already");
        assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err}");
    }
}
