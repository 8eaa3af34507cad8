//! Field selectors (`--field-selector spec.nodeName=n1,status.phase!=Running`): the fields
//! kubectl supports per kind, matched on the client. `spec.nodeName=X` on pods is also sent to
//! the server, which lists only that node's pods.

use anyhow::bail;
use berth_proto::model::{Kind, Object, RestartPolicy};

/// One `field=value` or `field!=value` requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field path (`spec.nodeName`).
    pub field: String,
    /// `true` for `=`/`==`, `false` for `!=`.
    pub equals: bool,
    /// The value compared.
    pub value: String,
}

/// A parsed field selector: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// The requirements.
    pub requirements: Vec<FieldRequirement>,
}

/// The fields each kind can be selected by.
fn supported_fields(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Pod => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "status.phase",
            "status.nominatedNodeName",
        ],
        Kind::Node => &["metadata.name", "spec.unschedulable"],
        Kind::PriorityClass | Kind::RuntimeClass | Kind::DeviceClass => &["metadata.name"],
        Kind::ResourceSlice => &["metadata.name", "spec.nodeName", "spec.driver"],
        Kind::ResourceClaim | Kind::ResourceClaimTemplate => {
            &["metadata.name", "metadata.namespace"]
        }
        Kind::Namespace => &["metadata.name", "status.phase"],
        Kind::PodDisruptionBudget
        | Kind::Deployment
        | Kind::ReplicaSet
        | Kind::DaemonSet
        | Kind::ResourceQuota => &["metadata.name", "metadata.namespace"],
        Kind::Job => &["metadata.name", "metadata.namespace", "status.successful"],
        Kind::Event => &[
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "reason",
            "reportingComponent",
            "type",
        ],
    }
}

impl FieldSelector {
    /// Parses `a=b,c!=d` (also `==`). The empty string selects everything.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, equals, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                bail!("invalid field selector {text:?}: {part:?} is not of the form field=value or field!=value");
            };
            requirements.push(FieldRequirement {
                field: field.trim().to_string(),
                equals,
                value: value.trim().to_string(),
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Checks that every field is one `kind` supports, as the API server does.
    pub fn check(&self, kind: Kind) -> anyhow::Result<()> {
        let fields = supported_fields(kind);
        for r in &self.requirements {
            if !fields.contains(&r.field.as_str()) {
                let list: Vec<String> = fields.iter().map(|f| format!("{f:?}")).collect();
                bail!(
                    "{:?} is not a known field selector for {}: only {}",
                    r.field,
                    kind.plural(),
                    list.join(", ")
                );
            }
        }
        Ok(())
    }

    /// The node a pod selector pins with `spec.nodeName=X`, for the server-side filter.
    pub fn node_name(&self) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == "spec.nodeName" && r.equals)
            .map(|r| r.value.as_str())
    }

    /// Whether `object` satisfies every requirement.
    pub fn matches(&self, object: &Object) -> bool {
        self.requirements.iter().all(|r| {
            let actual = field_value(object, &r.field).unwrap_or_default();
            (actual == r.value) == r.equals
        })
    }
}

/// The value of a selectable field, as the API server renders it for field selectors.
fn field_value(object: &Object, field: &str) -> Option<String> {
    let meta = object.meta();
    match field {
        "metadata.name" => return Some(meta.name.clone()),
        "metadata.namespace" => return Some(meta.namespace.clone()),
        _ => {}
    }
    match object {
        Object::Pod(pod) => Some(match field {
            "spec.nodeName" => pod.spec.node_name.clone(),
            "spec.restartPolicy" => {
                let policy = pod.spec.restart_policy.unwrap_or_default();
                match policy {
                    RestartPolicy::Always => "Always",
                    RestartPolicy::OnFailure => "OnFailure",
                    RestartPolicy::Never => "Never",
                }
                .to_string()
            }
            "spec.schedulerName" => {
                if pod.spec.scheduler_name.is_empty() {
                    "default-scheduler".to_string()
                } else {
                    pod.spec.scheduler_name.clone()
                }
            }
            "status.phase" => pod.status.phase.as_str().to_string(),
            "status.nominatedNodeName" => pod.status.nominated_node_name.clone(),
            _ => return None,
        }),
        Object::Node(node) => match field {
            "spec.unschedulable" => Some(node.spec.unschedulable.to_string()),
            _ => None,
        },
        Object::Namespace(ns) => match field {
            "status.phase" => Some(ns.phase().to_string()),
            _ => None,
        },
        Object::ResourceSlice(slice) => match field {
            "spec.nodeName" => Some(slice.spec.node_name.clone().unwrap_or_default()),
            "spec.driver" => Some(slice.spec.driver.clone()),
            _ => None,
        },
        Object::PriorityClass(_)
        | Object::RuntimeClass(_)
        | Object::DeviceClass(_)
        | Object::ResourceClaim(_)
        | Object::ResourceClaimTemplate(_)
        | Object::PodDisruptionBudget(_)
        | Object::Deployment(_)
        | Object::ReplicaSet(_)
        | Object::DaemonSet(_)
        | Object::ResourceQuota(_) => None,
        Object::Job(job) => match field {
            "status.successful" => Some(job.status.succeeded.to_string()),
            _ => None,
        },
        Object::Event(event) => Some(match field {
            "involvedObject.kind" => event.involved_object.kind.clone(),
            "involvedObject.namespace" => event.involved_object.namespace.clone(),
            "involvedObject.name" => event.involved_object.name.clone(),
            "involvedObject.uid" => event.involved_object.uid.clone(),
            "reason" => event.reason.clone(),
            "reportingComponent" => event.reporting_component.clone(),
            "type" => event.type_.clone(),
            _ => return None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_proto::model::{ObjectMeta, Pod, PodPhase, PodSpec, PodStatus};

    fn pod(name: &str, node: &str, phase: PodPhase) -> Object {
        Object::Pod(Box::new(Pod {
            metadata: ObjectMeta {
                name: name.into(),
                namespace: "default".into(),
                ..Default::default()
            },
            spec: PodSpec {
                node_name: node.into(),
                ..Default::default()
            },
            status: PodStatus {
                phase,
                ..Default::default()
            },
            ..Default::default()
        }))
    }

    #[test]
    fn field_selectors_match_like_the_api_server() {
        struct Case {
            name: &'static str,
            selector: &'static str,
            object: Object,
            want: bool,
        }
        let cases = [
            Case {
                name: "node equal",
                selector: "spec.nodeName=n1",
                object: pod("a", "n1", PodPhase::Running),
                want: true,
            },
            Case {
                name: "node other",
                selector: "spec.nodeName==n1",
                object: pod("a", "n2", PodPhase::Running),
                want: false,
            },
            Case {
                name: "unbound pods",
                selector: "spec.nodeName=",
                object: pod("a", "", PodPhase::Pending),
                want: true,
            },
            Case {
                name: "phase not",
                selector: "status.phase!=Running",
                object: pod("a", "n1", PodPhase::Running),
                want: false,
            },
            Case {
                name: "and",
                selector: "metadata.name=a, status.phase=Pending",
                object: pod("a", "", PodPhase::Pending),
                want: true,
            },
            Case {
                name: "default scheduler",
                selector: "spec.schedulerName=default-scheduler",
                object: pod("a", "", PodPhase::Pending),
                want: true,
            },
        ];
        for case in cases {
            let selector = FieldSelector::parse(case.selector).expect(case.name);
            selector.check(Kind::Pod).expect(case.name);
            assert_eq!(selector.matches(&case.object), case.want, "{}", case.name);
        }
    }

    #[test]
    fn unknown_fields_and_bad_syntax_are_rejected() {
        let err = FieldSelector::parse("spec.foo=bar")
            .expect("parses")
            .check(Kind::Node)
            .expect_err("unknown");
        assert!(
            err.to_string().starts_with(
                "\"spec.foo\" is not a known field selector for nodes: only \"metadata.name\""
            ),
            "{err}"
        );
        assert!(FieldSelector::parse("spec.nodeName").is_err());
        let sel = FieldSelector::parse("spec.nodeName=n1").expect("parses");
        assert_eq!(sel.node_name(), Some("n1"));
    }
}
