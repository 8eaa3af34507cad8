//! kube-scheduler's scheduler_perf workloads (test/integration/scheduler_perf/config), as data:
//! the node template, the pod templates, and for each workload how many nodes, which pods
//! are created first (and waited for), which are measured, and what else happens while the
//! measured pods are scheduled (a stream of never-fitting pods, churn).
//!
//! Both runners (in-process and `berth bench --e2e`) build their objects from here, and so do
//! the criterion fixtures, so every measurement schedules the same objects.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use berth_model::model::{
    Affinity, Container, LabelSelector, Node, NodeAffinity, NodeSelector, NodeSelectorOperator,
    NodeSelectorRequirement, NodeSelectorTerm, Object, ObjectMeta, Pod, PodAffinity,
    PodAffinityTerm, PodSchedulingGate, PriorityClass, ResourceRequirements, StringMap,
    TopologySpreadConstraint, UnsatisfiableConstraintAction, WeightedPodAffinityTerm,
};
use berth_model::names;
use berth_model::Quantity;

use super::dra::{self, DraSetup};

/// Number of zones nodes are spread over (node `i` is in zone `i % ZONES + 1`).
pub const ZONES: usize = 3;
/// Namespace of the pods created before measuring (kube's `sched-0`).
pub const INIT_NAMESPACE: &str = "sched-0";
/// Namespace of the measured pods (kube's `sched-1`).
pub const MEASURED_NAMESPACE: &str = "sched-1";
/// Name prefix of measured pods; the runners count binds of pods with this prefix.
pub const MEASURED_PREFIX: &str = "measured-";
/// PriorityClass of PreemptionBasic's victims (value 0).
pub const LOW_PRIORITY_CLASS: &str = "perf-low";
/// PriorityClass of preemptors and never-fitting pods (value 10, as kube's templates).
pub const HIGH_PRIORITY_CLASS: &str = "perf-high";

/// The workloads, by kube's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkloadName {
    /// Plain pods on plain nodes.
    SchedulingBasic,
    /// Required anti-affinity on hostname among pods of the same label.
    SchedulingPodAntiAffinity,
    /// Required affinity on zone among pods of the same label.
    SchedulingPodAffinity,
    /// Preferred affinity on hostname.
    SchedulingPreferredPodAffinity,
    /// Preferred anti-affinity on hostname.
    SchedulingPreferredPodAntiAffinity,
    /// Required node affinity: zone In [zone1, zone2].
    SchedulingNodeAffinity,
    /// DoNotSchedule spread over zones, maxSkew 5.
    TopologySpreading,
    /// High-priority pods that fit only by preempting low-priority ones.
    PreemptionBasic,
    /// Plain pods while never-fitting high-priority pods keep arriving (5 a second).
    Unschedulable,
    /// Plain pods while a node and a never-fitting pod are created and deleted in turn,
    /// once a second (`MixedChurn` is accepted as an alias).
    SchedulingWithMixedChurn,
    /// Pods pinned by node affinity (`matchFields` on `metadata.name`) to one node among
    /// 15,000, as a DaemonSet's pods are.
    SchedulingDaemonset,
    /// Plain pods while a preemptor arrives 5 times a second on nodes full of low-priority
    /// pods.
    PreemptionAsync,
    /// Light pods on one node while 10,000 gated pods wait and scheduled pods are deleted,
    /// 50 a second.
    SchedulingWhileGated,
    /// Pod `i` requests one `foo.com/bar-<i>`, which only node `i` has.
    SchedulingWithExtendedResource,
    /// dra/: each pod gets a claim from a ResourceClaimTemplate (one device of ten per node).
    SchedulingWithResourceClaimTemplate,
    /// dra/: five pods share each ResourceClaim (two devices per node).
    SchedulingWithResourceClaim,
}

impl WorkloadName {
    /// Every workload, in the order of the documentation.
    pub const ALL: [WorkloadName; 16] = [
        WorkloadName::SchedulingBasic,
        WorkloadName::SchedulingPodAntiAffinity,
        WorkloadName::SchedulingPodAffinity,
        WorkloadName::SchedulingPreferredPodAffinity,
        WorkloadName::SchedulingPreferredPodAntiAffinity,
        WorkloadName::SchedulingNodeAffinity,
        WorkloadName::TopologySpreading,
        WorkloadName::PreemptionBasic,
        WorkloadName::Unschedulable,
        WorkloadName::SchedulingWithMixedChurn,
        WorkloadName::SchedulingDaemonset,
        WorkloadName::PreemptionAsync,
        WorkloadName::SchedulingWhileGated,
        WorkloadName::SchedulingWithExtendedResource,
        WorkloadName::SchedulingWithResourceClaimTemplate,
        WorkloadName::SchedulingWithResourceClaim,
    ];

    /// Other names accepted for a workload: earlier names of Berth's.
    const ALIASES: [(&'static str, WorkloadName); 1] =
        [("MixedChurn", WorkloadName::SchedulingWithMixedChurn)];

    /// kube's name (`SchedulingBasic`).
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadName::SchedulingBasic => "SchedulingBasic",
            WorkloadName::SchedulingPodAntiAffinity => "SchedulingPodAntiAffinity",
            WorkloadName::SchedulingPodAffinity => "SchedulingPodAffinity",
            WorkloadName::SchedulingPreferredPodAffinity => "SchedulingPreferredPodAffinity",
            WorkloadName::SchedulingPreferredPodAntiAffinity => {
                "SchedulingPreferredPodAntiAffinity"
            }
            WorkloadName::SchedulingNodeAffinity => "SchedulingNodeAffinity",
            WorkloadName::TopologySpreading => "TopologySpreading",
            WorkloadName::PreemptionBasic => "PreemptionBasic",
            WorkloadName::Unschedulable => "Unschedulable",
            WorkloadName::SchedulingWithMixedChurn => "SchedulingWithMixedChurn",
            WorkloadName::SchedulingDaemonset => "SchedulingDaemonset",
            WorkloadName::PreemptionAsync => "PreemptionAsync",
            WorkloadName::SchedulingWhileGated => "SchedulingWhileGated",
            WorkloadName::SchedulingWithExtendedResource => "SchedulingWithExtendedResource",
            WorkloadName::SchedulingWithResourceClaimTemplate => {
                "SchedulingWithResourceClaimTemplate"
            }
            WorkloadName::SchedulingWithResourceClaim => "SchedulingWithResourceClaim",
        }
    }
}

impl fmt::Display for WorkloadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A workload name that is not one of [`WorkloadName::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown workload {name:?}; known: {known}")]
pub struct UnknownWorkload {
    /// The name given.
    pub name: String,
    /// The known names, comma-separated.
    pub known: String,
}

impl FromStr for WorkloadName {
    type Err = UnknownWorkload;

    /// Parses kube's name (or an alias), ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WorkloadName::ALL
            .into_iter()
            .map(|w| (w.as_str(), w))
            .chain(WorkloadName::ALIASES)
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|(_, w)| w)
            .ok_or_else(|| UnknownWorkload {
                name: s.to_string(),
                known: WorkloadName::ALL.map(WorkloadName::as_str).join(", "),
            })
    }
}

/// The pod templates of scheduler_perf's config folder. Every pod has one container; unless
/// said otherwise it requests (and is limited to) 100m cpu and 500Mi memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PodTemplate {
    /// pod-default.yaml.
    Default,
    /// pod-with-pod-anti-affinity.yaml: label color=green, required anti-affinity to
    /// color=green on hostname, in both namespaces.
    AntiAffinity,
    /// pod-with-pod-affinity.yaml: label color=blue, required affinity to color=blue on
    /// zone, in both namespaces.
    Affinity,
    /// pod-with-preferred-pod-affinity.yaml: label color=red, preferred (weight 1) affinity
    /// to color=red on hostname.
    PreferredAffinity,
    /// pod-with-preferred-pod-anti-affinity.yaml: label color=yellow, preferred (weight 1)
    /// anti-affinity to color=yellow on hostname.
    PreferredAntiAffinity,
    /// pod-with-node-affinity.yaml: required zone In [zone1, zone2].
    NodeAffinity,
    /// pod-with-topology-spreading.yaml: label color=blue, maxSkew 5 on zone, DoNotSchedule.
    TopologySpreading,
    /// pod-low-priority.yaml: 900m cpu, class [`LOW_PRIORITY_CLASS`].
    LowPriority,
    /// pod-high-priority.yaml: 3 cpu, class [`HIGH_PRIORITY_CLASS`].
    HighPriority,
    /// pod-high-priority-large-cpu.yaml: 9 cpu (fits no node), class
    /// [`HIGH_PRIORITY_CLASS`].
    HighPriorityLargeCpu,
    /// templates/daemonset-pod.yaml: no requests, required node affinity `matchFields`
    /// `metadata.name` In [[`NAMED_NODE`]].
    Daemonset,
    /// templates/light-pod.yaml: no requests, `terminationGracePeriodSeconds: 0`.
    Light,
    /// templates/gated-pod.yaml: no requests, scheduling gate [`SCHEDULING_GATE`].
    Gated,
    /// misc/templates/pod-with-extended-resource.yaml: pod `i` of its group requests (and
    /// is limited to) one [`extended_resource`]`(i)` and nothing else.
    ExtendedResource,
}

/// The name of node-with-name.yaml's node, which SchedulingDaemonset's pods are pinned to
/// and SchedulingWhileGated's pods run on.
pub const NAMED_NODE: &str = "scheduler-perf-node";
/// Pods the named node holds (node-with-name.yaml's capacity).
pub const NAMED_NODE_PODS: &str = "90000";
/// The scheduling gate of gated-pod.yaml.
pub const SCHEDULING_GATE: &str = "test.k8s.io/hold";

/// The extended resource of node `i` and pod `i` in SchedulingWithExtendedResource.
pub fn extended_resource(index: usize) -> String {
    format!("foo.com/bar-{index}")
}

fn quantity(text: &str) -> Quantity {
    Quantity::parse(text).expect("the templates' quantities are valid")
}

fn labels(pairs: &[(&str, &str)]) -> StringMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A pod affinity term on `color` over `topology_key`, seeing both benchmark namespaces.
fn color_term(color: &str, topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: labels(&[("color", color)]),
            match_expressions: Vec::new(),
        }),
        namespaces: vec![INIT_NAMESPACE.to_string(), MEASURED_NAMESPACE.to_string()],
        topology_key: topology_key.to_string(),
        ..PodAffinityTerm::default()
    }
}

impl PodTemplate {
    /// The pod `namespace/name` made from this template (not yet admitted: no uid, no
    /// priority, no defaults), as pod 0 of its group.
    pub fn pod(self, namespace: &str, name: &str) -> Pod {
        self.pod_at(namespace, name, 0)
    }

    /// The pod `namespace/name` made from this template as pod `index` of its group (only
    /// [`PodTemplate::ExtendedResource`] depends on the index).
    pub fn pod_at(self, namespace: &str, name: &str, index: usize) -> Pod {
        let (cpu, limited) = match self {
            PodTemplate::LowPriority => ("900m", true),
            PodTemplate::HighPriority => ("3", true),
            PodTemplate::HighPriorityLargeCpu => ("9", false),
            _ => ("100m", true),
        };
        let requests: berth_model::model::ResourceList = match self {
            PodTemplate::Daemonset | PodTemplate::Light | PodTemplate::Gated => Default::default(),
            PodTemplate::ExtendedResource => [(extended_resource(index), quantity("1"))].into(),
            _ => [
                ("cpu".to_string(), quantity(cpu)),
                ("memory".to_string(), quantity("500Mi")),
            ]
            .into(),
        };
        let mut pod = Pod {
            api_version: "v1".into(),
            kind: "Pod".into(),
            metadata: ObjectMeta {
                name: name.to_string(),
                namespace: namespace.to_string(),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        pod.spec.containers.push(Container {
            name: "pause".into(),
            image: "registry.k8s.io/pause:3.10".into(),
            resources: ResourceRequirements {
                limits: if limited {
                    requests.clone()
                } else {
                    Default::default()
                },
                requests,
                ..ResourceRequirements::default()
            },
            ..Container::default()
        });
        let spec = &mut pod.spec;
        match self {
            PodTemplate::Default => {}
            PodTemplate::AntiAffinity => {
                pod.metadata.labels = labels(&[("color", "green")]);
                spec.affinity = Some(Box::new(Affinity {
                    pod_anti_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![color_term(
                            "green",
                            names::LABEL_HOSTNAME,
                        )],
                        ..PodAffinity::default()
                    }),
                    ..Affinity::default()
                }));
            }
            PodTemplate::Affinity => {
                pod.metadata.labels = labels(&[("color", "blue")]);
                spec.affinity = Some(Box::new(Affinity {
                    pod_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![color_term(
                            "blue",
                            names::LABEL_TOPOLOGY_ZONE,
                        )],
                        ..PodAffinity::default()
                    }),
                    ..Affinity::default()
                }));
            }
            PodTemplate::PreferredAffinity | PodTemplate::PreferredAntiAffinity => {
                let color = if self == PodTemplate::PreferredAffinity {
                    "red"
                } else {
                    "yellow"
                };
                pod.metadata.labels = labels(&[("color", color)]);
                let preferred = PodAffinity {
                    preferred_during_scheduling_ignored_during_execution: vec![
                        WeightedPodAffinityTerm {
                            weight: 1,
                            pod_affinity_term: color_term(color, names::LABEL_HOSTNAME),
                        },
                    ],
                    ..PodAffinity::default()
                };
                spec.affinity = Some(Box::new(if self == PodTemplate::PreferredAffinity {
                    Affinity {
                        pod_affinity: Some(preferred),
                        ..Affinity::default()
                    }
                } else {
                    Affinity {
                        pod_anti_affinity: Some(preferred),
                        ..Affinity::default()
                    }
                }));
            }
            PodTemplate::NodeAffinity => {
                spec.affinity = Some(Box::new(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: vec![NodeSelectorTerm {
                                match_expressions: vec![NodeSelectorRequirement {
                                    key: names::LABEL_TOPOLOGY_ZONE.into(),
                                    operator: NodeSelectorOperator::In,
                                    values: vec!["zone1".into(), "zone2".into()],
                                }],
                                match_fields: Vec::new(),
                            }],
                        }),
                        ..NodeAffinity::default()
                    }),
                    ..Affinity::default()
                }));
            }
            PodTemplate::TopologySpreading => {
                pod.metadata.labels = labels(&[("color", "blue")]);
                spec.topology_spread_constraints = vec![TopologySpreadConstraint {
                    max_skew: 5,
                    topology_key: names::LABEL_TOPOLOGY_ZONE.into(),
                    when_unsatisfiable: UnsatisfiableConstraintAction::DoNotSchedule,
                    label_selector: Some(LabelSelector {
                        match_labels: labels(&[("color", "blue")]),
                        match_expressions: Vec::new(),
                    }),
                    min_domains: None,
                    node_affinity_policy: None,
                    node_taints_policy: None,
                    match_label_keys: Vec::new(),
                }];
            }
            PodTemplate::Daemonset => {
                spec.affinity = Some(Box::new(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: vec![NodeSelectorTerm {
                                match_expressions: Vec::new(),
                                match_fields: vec![NodeSelectorRequirement {
                                    key: "metadata.name".into(),
                                    operator: NodeSelectorOperator::In,
                                    values: vec![NAMED_NODE.into()],
                                }],
                            }],
                        }),
                        ..NodeAffinity::default()
                    }),
                    ..Affinity::default()
                }));
            }
            PodTemplate::Light => spec.termination_grace_period_seconds = Some(0),
            PodTemplate::Gated => {
                spec.scheduling_gates = vec![PodSchedulingGate {
                    name: SCHEDULING_GATE.into(),
                }];
            }
            PodTemplate::ExtendedResource => {}
            PodTemplate::LowPriority => spec.priority_class_name = LOW_PRIORITY_CLASS.into(),
            PodTemplate::HighPriority | PodTemplate::HighPriorityLargeCpu => {
                spec.priority_class_name = HIGH_PRIORITY_CLASS.into();
            }
        }
        pod
    }
}

/// node-default.yaml: 4 cpu, 32Gi, 110 pods, the hostname label, and with `zoned` the zone
/// label (`zone1`..`zone3`, round robin).
pub fn node(index: usize, zoned: bool) -> Node {
    let name = node_name(index);
    let mut node_labels = labels(&[(names::LABEL_HOSTNAME, &name)]);
    if zoned {
        node_labels.insert(names::LABEL_TOPOLOGY_ZONE.into(), zone_name(index));
    }
    let capacity: berth_model::model::ResourceList = [
        ("cpu".to_string(), quantity("4")),
        ("memory".to_string(), quantity("32Gi")),
        ("pods".to_string(), quantity("110")),
    ]
    .into();
    let mut node = Node {
        api_version: "v1".into(),
        kind: "Node".into(),
        metadata: ObjectMeta {
            name,
            labels: node_labels,
            ..ObjectMeta::default()
        },
        ..Node::default()
    };
    node.status.allocatable = capacity.clone();
    node.status.capacity = capacity;
    node
}

/// The node templates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeTemplate {
    /// node-default.yaml.
    Default,
    /// node-default.yaml with the zone label.
    Zoned,
    /// misc/templates/node-with-extended-resource.yaml: node-default.yaml's resources, one
    /// [`extended_resource`]`(i)` for node `i`, and the label
    /// `node-with-extended-resource=true`.
    ExtendedResource,
}

impl NodeTemplate {
    /// Node `index` made from this template.
    pub fn node(self, index: usize) -> Node {
        let mut made = node(index, self == NodeTemplate::Zoned);
        if self == NodeTemplate::ExtendedResource {
            made.metadata
                .labels
                .insert("node-with-extended-resource".into(), "true".into());
            for list in [&mut made.status.capacity, &mut made.status.allocatable] {
                list.insert(extended_resource(index), quantity("1"));
            }
        }
        made
    }
}

/// node-with-name.yaml: node [`NAMED_NODE`] with 4 cpu, 32Gi and room for
/// [`NAMED_NODE_PODS`] pods.
pub fn named_node() -> Node {
    let mut made = node(0, false);
    made.metadata.name = NAMED_NODE.into();
    made.metadata.labels = labels(&[(names::LABEL_HOSTNAME, NAMED_NODE)]);
    for list in [&mut made.status.capacity, &mut made.status.allocatable] {
        list.insert("pods".into(), quantity(NAMED_NODE_PODS));
    }
    made
}

/// Name of node `index`: `node-00042`.
pub fn node_name(index: usize) -> String {
    format!("node-{index:05}")
}

/// Zone of node `index`: `zone1`, `zone2` or `zone3`.
pub fn zone_name(index: usize) -> String {
    format!("zone{}", index % ZONES + 1)
}

/// The PriorityClasses the templates name.
pub fn priority_classes() -> Vec<PriorityClass> {
    [(LOW_PRIORITY_CLASS, 0), (HIGH_PRIORITY_CLASS, 10)]
        .into_iter()
        .map(|(name, value)| PriorityClass::new(name, value))
        .collect()
}

/// A number of pods from one template, in one namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodGroup {
    /// The template.
    pub template: PodTemplate,
    /// How many pods.
    pub count: usize,
    /// Their namespace.
    pub namespace: &'static str,
    /// Their name prefix; pod `i` is `<prefix><i>`.
    pub prefix: &'static str,
}

impl PodGroup {
    /// Name of pod `i` of the group.
    pub fn pod_name(&self, i: usize) -> String {
        format!("{}{i:06}", self.prefix)
    }

    /// Pod `i` of the group.
    pub fn pod(&self, i: usize) -> Pod {
        self.template.pod_at(self.namespace, &self.pod_name(i), i)
    }
}

/// What kube's `churn` op does with the objects it makes (its `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChurnMode {
    /// `create`: every tick creates new objects; none is deleted.
    Create,
    /// `recreate` with `number: 1`: ticks alternately create the objects and delete them.
    Recreate,
}

/// kube's `churn` op, from the start of the measured phase to its end. A tick that creates
/// makes a pod `churn-pod-<tick>` in the measured namespace and, with `node`, a node
/// `churn-node-<tick>` (node-default.yaml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Churn {
    /// Create or recreate.
    pub mode: ChurnMode,
    /// Time between ticks (kube's `intervalMilliseconds`).
    pub interval: Duration,
    /// Whether a creating tick makes a node too.
    pub node: bool,
    /// The template of the pod a creating tick makes.
    pub pod: PodTemplate,
}

impl Churn {
    /// Whether tick `tick` (from 0) creates; otherwise it deletes what the one before made.
    pub fn creates(&self, tick: usize) -> bool {
        self.mode == ChurnMode::Create || tick % 2 == 0
    }

    /// Name of the node tick `tick` makes.
    pub fn node_name(tick: usize) -> String {
        format!("churn-node-{tick:06}")
    }

    /// Name of the pod tick `tick` makes.
    pub fn pod_name(tick: usize) -> String {
        format!("churn-pod-{tick:06}")
    }

    /// The node tick `tick` makes (churn/node-default.yaml).
    pub fn node_at(tick: usize) -> Node {
        let mut made = node(0, false);
        made.metadata.name = Churn::node_name(tick);
        made.metadata.labels = labels(&[(names::LABEL_HOSTNAME, &made.metadata.name)]);
        made
    }

    /// The pod tick `tick` makes.
    pub fn pod_at(&self, tick: usize) -> Pod {
        self.pod.pod(MEASURED_NAMESPACE, &Churn::pod_name(tick))
    }
}

/// kube's `deletePods` op with `skipWaitToCompletion`: the pods of one initial group are
/// deleted in creation order, `per_second` a second, from just before the measured pods
/// are created until they are all bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deletion {
    /// Index of the group in [`Workload::init`].
    pub group: usize,
    /// Deletions per second (kube's `deletePodsPerSecond`).
    pub per_second: u32,
}

/// One workload: its cluster, the pods placed before measuring, and the measured pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The workload.
    pub name: WorkloadName,
    /// Number of nodes made from `node_template` (`node-00000`...).
    pub nodes: usize,
    /// The template of those nodes.
    pub node_template: NodeTemplate,
    /// Whether the cluster also has node-with-name.yaml's [`NAMED_NODE`] (created first).
    pub named_node: bool,
    /// Pods created first. Groups with `wait` set are waited for (all bound) before the
    /// measured pods are created; the others (never-fitting or gated pods) are not.
    pub init: Vec<(PodGroup, bool)>,
    /// The measured pods: throughput counts their binds.
    pub measured: PodGroup,
    /// Churn while measuring.
    pub churn: Option<Churn>,
    /// Deletion of initial pods while measuring.
    pub deletion: Option<Deletion>,
    /// Devices and claims (the `dra/` workloads).
    pub dra: Option<DraSetup>,
}

fn group(template: PodTemplate, count: usize, namespace: &'static str) -> PodGroup {
    PodGroup {
        template,
        count,
        namespace,
        prefix: if namespace == MEASURED_NAMESPACE {
            MEASURED_PREFIX
        } else {
            "init-"
        },
    }
}

impl Workload {
    /// The objects created before the measured phase, and the number of pods to wait for
    /// (both benchmark modes create the same ones).
    pub fn initial_objects(&self) -> (Vec<Object>, usize) {
        let mut objects = Vec::new();
        if let Some(setup) = self.dra {
            objects.extend(dra::cluster_objects(setup, (0..self.nodes).map(node_name)));
        }
        let mut waited = 0;
        for (group, wait) in &self.init {
            objects.extend(self.group_objects(group, (0..group.count).map(|i| (i, group.pod(i)))));
            if *wait {
                waited += group.count;
            }
        }
        (objects, waited)
    }

    /// A group's pods as objects: with DRA, the group's claims (shared ones first, or each
    /// pod's own just before it) and each pod's claim entry.
    fn group_objects<'a>(
        &'a self,
        group: &PodGroup,
        pods: impl Iterator<Item = (usize, Pod)> + Send + 'a,
    ) -> Box<dyn Iterator<Item = Object> + Send + 'a> {
        let Some(setup) = self.dra else {
            return Box::new(pods.map(|(_, p)| Object::Pod(Box::new(p))));
        };
        let shared: Vec<Object> = match setup.claims {
            dra::ClaimSource::Shared => (0..group.count.div_ceil(dra::PODS_PER_SHARED_CLAIM))
                .map(|i| Object::ResourceClaim(Box::new(dra::shared_claim(group.namespace, i))))
                .collect(),
            dra::ClaimSource::Template => vec![Object::ResourceClaimTemplate(Box::new(
                dra::claim_template(group.namespace),
            ))],
        };
        Box::new(shared.into_iter().chain(pods.flat_map(move |(i, mut pod)| {
            let claim = dra::attach(&mut pod, i, setup.claims).map(Object::from);
            claim
                .into_iter()
                .chain(std::iter::once(Object::Pod(Box::new(pod))))
        })))
    }

    /// The workload at kube's sizes: its 5000Nodes variants (the `performance`-labelled
    /// ones, whose CI floor `threshold` docs/performance.md quotes), with more measured pods
    /// where kube's variant is too short to sample.
    pub fn new(name: WorkloadName) -> Self {
        use NodeTemplate as N;
        use PodTemplate as T;
        let (nodes, node_template, init, measured) = match name {
            WorkloadName::SchedulingBasic => (
                5000,
                N::Default,
                vec![(T::Default, 1000)],
                (T::Default, 10_000),
            ),
            WorkloadName::SchedulingPodAntiAffinity => (
                5000,
                N::Default,
                vec![(T::AntiAffinity, 1000)],
                (T::AntiAffinity, 2000),
            ),
            WorkloadName::SchedulingPodAffinity => (
                5000,
                N::Zoned,
                vec![(T::Affinity, 5000)],
                (T::Affinity, 5000),
            ),
            WorkloadName::SchedulingPreferredPodAffinity => (
                5000,
                N::Default,
                vec![(T::PreferredAffinity, 5000)],
                (T::PreferredAffinity, 5000),
            ),
            WorkloadName::SchedulingPreferredPodAntiAffinity => (
                5000,
                N::Default,
                vec![(T::PreferredAntiAffinity, 5000)],
                (T::PreferredAntiAffinity, 5000),
            ),
            WorkloadName::SchedulingNodeAffinity => (
                5000,
                N::Zoned,
                vec![(T::NodeAffinity, 5000)],
                (T::NodeAffinity, 10_000),
            ),
            WorkloadName::TopologySpreading => (
                5000,
                N::Zoned,
                vec![(T::Default, 5000)],
                (T::TopologySpreading, 5000),
            ),
            WorkloadName::PreemptionBasic => (
                500,
                N::Default,
                vec![(T::LowPriority, 2000)],
                (T::HighPriority, 500),
            ),
            // 5kNodes/100Init/10kPods (`--init-pods 20000`: 5kNodes/20kInit/10kPods).
            WorkloadName::Unschedulable => (
                5000,
                N::Default,
                vec![(T::Default, 100)],
                (T::Default, 10_000),
            ),
            WorkloadName::SchedulingWithMixedChurn => {
                (5000, N::Default, Vec::new(), (T::Default, 10_000))
            }
            // 15000Nodes: 15,000 plain nodes besides the named one.
            WorkloadName::SchedulingDaemonset => {
                (15_000, N::Default, Vec::new(), (T::Daemonset, 30_000))
            }
            // 5000Nodes: four 900m pods fill 3.6 of each node's 4 cpu.
            WorkloadName::PreemptionAsync => (
                5000,
                N::Default,
                vec![(T::LowPriority, 20_000)],
                (T::Default, 5000),
            ),
            // 1Node_10000GatedPods: only the named node.
            WorkloadName::SchedulingWhileGated => (
                0,
                N::Default,
                vec![(T::Gated, 10_000), (T::Light, 20_000)],
                (T::Light, 20_000),
            ),
            // 5000pods_5000nodes.
            WorkloadName::SchedulingWithExtendedResource => (
                5000,
                N::ExtendedResource,
                Vec::new(),
                (T::ExtendedResource, 5000),
            ),
            // kube's 5000pods_500nodes: 2500 pods first, 2500 measured.
            WorkloadName::SchedulingWithResourceClaimTemplate
            | WorkloadName::SchedulingWithResourceClaim => (
                500,
                N::Default,
                vec![(T::Default, 2500)],
                (T::Default, 2500),
            ),
        };
        let dra = match name {
            WorkloadName::SchedulingWithResourceClaimTemplate => Some(DraSetup {
                devices_per_node: 10,
                claims: dra::ClaimSource::Template,
            }),
            WorkloadName::SchedulingWithResourceClaim => Some(DraSetup {
                devices_per_node: 2,
                claims: dra::ClaimSource::Shared,
            }),
            _ => None,
        };
        let init = init
            .into_iter()
            .map(|(template, count)| {
                let mut made = group(template, count, INIT_NAMESPACE);
                // Gated pods are created and left pending, as kube's skipWaitToCompletion.
                let wait = template != T::Gated;
                if template == T::Gated {
                    made.prefix = "gated-";
                }
                (made, wait)
            })
            .collect();
        let churn = match name {
            // 5 never-fitting pods a second, kept.
            WorkloadName::Unschedulable => Some(Churn {
                mode: ChurnMode::Create,
                interval: Duration::from_millis(200),
                node: false,
                pod: T::HighPriorityLargeCpu,
            }),
            // 5 preemptors a second, kept.
            WorkloadName::PreemptionAsync => Some(Churn {
                mode: ChurnMode::Create,
                interval: Duration::from_millis(200),
                node: false,
                pod: T::HighPriority,
            }),
            // A node and a never-fitting pod, created one second and deleted the next
            // (kube's third template, a Service, has no counterpart in Berth).
            WorkloadName::SchedulingWithMixedChurn => Some(Churn {
                mode: ChurnMode::Recreate,
                interval: Duration::from_secs(1),
                node: true,
                pod: T::HighPriorityLargeCpu,
            }),
            _ => None,
        };
        let deletion = (name == WorkloadName::SchedulingWhileGated).then_some(Deletion {
            group: 1,
            per_second: 50,
        });
        Workload {
            name,
            nodes,
            node_template,
            named_node: matches!(
                name,
                WorkloadName::SchedulingDaemonset | WorkloadName::SchedulingWhileGated
            ),
            init,
            measured: group(measured.0, measured.1, MEASURED_NAMESPACE),
            churn,
            deletion,
            dra,
        }
    }

    /// Resizes the cluster to `nodes` (besides the named node); the initial pods scale with
    /// it, so that they fit as they do at the default size (unless the default has no such
    /// nodes), and SchedulingWithExtendedResource's measured pods follow the nodes (kube's
    /// variants have as many pods as nodes).
    pub fn with_nodes(mut self, nodes: usize) -> Self {
        if self.nodes > 0 {
            for (group, _) in &mut self.init {
                group.count = (group.count * nodes).div_ceil(self.nodes);
            }
        }
        if self.name == WorkloadName::SchedulingWithExtendedResource {
            self.measured.count = nodes;
        }
        self.nodes = nodes;
        self
    }

    /// Sets the number of initial pods; with several initial groups, each keeps its share
    /// of the total (rounded up).
    pub fn with_init_pods(mut self, pods: usize) -> Self {
        let total: usize = self.init.iter().map(|(g, _)| g.count).sum();
        for (group, _) in &mut self.init {
            group.count = (group.count * pods).div_ceil(total.max(1));
        }
        self
    }

    /// Sets the number of measured pods.
    pub fn with_measured_pods(mut self, pods: usize) -> Self {
        self.measured.count = pods;
        self
    }

    /// Why the workload cannot complete at its sizes, if it cannot.
    pub fn size_problem(&self) -> Option<String> {
        if self.nodes == 0 && !self.named_node {
            return Some("the cluster has no node".into());
        }
        if self.deletion.is_some_and(|d| d.group >= self.init.len()) {
            return Some("the deletion names no initial group".into());
        }
        (self.node_template == NodeTemplate::ExtendedResource && self.measured.count > self.nodes)
            .then(|| {
                format!(
                    "{} measured pods need as many nodes (pod i requests {}, which only node i has), but there are {}",
                    self.measured.count,
                    extended_resource(self.measured.count - 1),
                    self.nodes
                )
            })
    }

    /// Node `i` of the cluster's template nodes.
    pub fn node(&self, i: usize) -> Node {
        self.node_template.node(i)
    }

    /// Every node of the cluster, in creation order: the named node first.
    pub fn all_nodes(&self) -> impl Iterator<Item = Node> + Send + '_ {
        self.named_node
            .then(named_node)
            .into_iter()
            .chain((0..self.nodes).map(|i| self.node(i)))
    }

    /// Number of nodes, the named one included.
    pub fn total_nodes(&self) -> usize {
        self.nodes + usize::from(self.named_node)
    }

    /// Whether the workload needs PriorityClasses (its templates name them).
    pub fn needs_priority_classes(&self) -> bool {
        let named = |t: PodTemplate| {
            matches!(
                t,
                PodTemplate::LowPriority
                    | PodTemplate::HighPriority
                    | PodTemplate::HighPriorityLargeCpu
            )
        };
        self.init.iter().any(|(g, _)| named(g.template))
            || named(self.measured.template)
            || self.churn.is_some_and(|c| named(c.pod))
    }

    /// Whether the workload needs preemption (a PostFilter) to complete or to mean
    /// anything: its measured or churned pods are preemptors.
    pub fn needs_preemption(&self) -> bool {
        self.measured.template == PodTemplate::HighPriority
            || self
                .churn
                .is_some_and(|c| c.pod == PodTemplate::HighPriority)
    }

    /// The measured pods, in creation order. Made one at a time, so that a run of 50,000
    /// pods does not hold them all in the benchmark's memory.
    pub fn measured_pods(&self) -> impl Iterator<Item = Pod> + Send + '_ {
        (0..self.measured.count).map(move |i| self.measured.pod(i))
    }

    /// The measured phase's objects in creation order: [`Workload::measured_pods`], with
    /// the claims the DRA workloads need before their pods.
    pub fn measured_objects(&self) -> Box<dyn Iterator<Item = Object> + Send + '_> {
        if self.dra.is_none() {
            return Box::new(self.measured_pods().map(Object::from));
        }
        self.group_objects(&self.measured, self.measured_pods().enumerate())
    }
}

/// Whether `pod` is one of the measured pods (by name).
pub fn is_measured(pod: &Pod) -> bool {
    pod.metadata.namespace == MEASURED_NAMESPACE && pod.metadata.name.starts_with(MEASURED_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in WorkloadName::ALL {
            assert_eq!(name.as_str().parse::<WorkloadName>(), Ok(name), "{name}");
        }
        assert!("Nope".parse::<WorkloadName>().is_err());
        assert_eq!(
            "schedulingbasic".parse::<WorkloadName>(),
            Ok(WorkloadName::SchedulingBasic)
        );
    }

    #[test]
    fn sizes() {
        struct Case {
            name: &'static str,
            workload: Workload,
            want_nodes: usize,
            want_init: Vec<usize>,
            want_measured: usize,
            want_total_nodes: usize,
        }
        let cases = [
            Case {
                name: "basic default",
                workload: Workload::new(WorkloadName::SchedulingBasic),
                want_nodes: 5000,
                want_init: vec![1000],
                want_measured: 10_000,
                want_total_nodes: 5000,
            },
            Case {
                name: "basic scaled",
                workload: Workload::new(WorkloadName::SchedulingBasic)
                    .with_nodes(10)
                    .with_measured_pods(20),
                want_nodes: 10,
                want_init: vec![2],
                want_measured: 20,
                want_total_nodes: 10,
            },
            Case {
                name: "preemption keeps four victims per node",
                workload: Workload::new(WorkloadName::PreemptionBasic).with_nodes(10),
                want_nodes: 10,
                want_init: vec![40],
                want_measured: 500,
                want_total_nodes: 10,
            },
            Case {
                name: "unschedulable: kube's 5kNodes/100Init/10kPods",
                workload: Workload::new(WorkloadName::Unschedulable),
                want_nodes: 5000,
                want_init: vec![100],
                want_measured: 10_000,
                want_total_nodes: 5000,
            },
            Case {
                name: "unschedulable: kube's 5kNodes/20kInit/10kPods",
                workload: Workload::new(WorkloadName::Unschedulable).with_init_pods(20_000),
                want_nodes: 5000,
                want_init: vec![20_000],
                want_measured: 10_000,
                want_total_nodes: 5000,
            },
            Case {
                name: "daemonset: 15,000 nodes and the named one",
                workload: Workload::new(WorkloadName::SchedulingDaemonset),
                want_nodes: 15_000,
                want_init: vec![],
                want_measured: 30_000,
                want_total_nodes: 15_001,
            },
            Case {
                name: "preemption async: four victims per node",
                workload: Workload::new(WorkloadName::PreemptionAsync).with_nodes(10),
                want_nodes: 10,
                want_init: vec![40],
                want_measured: 5000,
                want_total_nodes: 10,
            },
            Case {
                name: "gated: the named node only, groups keep their shares",
                workload: Workload::new(WorkloadName::SchedulingWhileGated)
                    .with_nodes(3)
                    .with_init_pods(30),
                want_nodes: 3,
                want_init: vec![10, 20],
                want_measured: 20_000,
                want_total_nodes: 4,
            },
            Case {
                name: "extended resource: the pods follow the nodes",
                workload: Workload::new(WorkloadName::SchedulingWithExtendedResource).with_nodes(7),
                want_nodes: 7,
                want_init: vec![],
                want_measured: 7,
                want_total_nodes: 7,
            },
        ];
        for case in cases {
            let w = &case.workload;
            assert_eq!(w.nodes, case.want_nodes, "{}", case.name);
            let init: Vec<usize> = w.init.iter().map(|(g, _)| g.count).collect();
            assert_eq!(init, case.want_init, "{}", case.name);
            assert_eq!(w.measured.count, case.want_measured, "{}", case.name);
            assert_eq!(w.total_nodes(), case.want_total_nodes, "{}", case.name);
            assert_eq!(
                w.all_nodes().count(),
                case.want_total_nodes,
                "{}",
                case.name
            );
            assert_eq!(
                w.measured_pods().count(),
                case.want_measured,
                "{}",
                case.name
            );
            assert_eq!(w.size_problem(), None, "{}", case.name);
        }
    }

    #[test]
    fn templates_validate() {
        for template in [
            PodTemplate::Default,
            PodTemplate::AntiAffinity,
            PodTemplate::Affinity,
            PodTemplate::PreferredAffinity,
            PodTemplate::PreferredAntiAffinity,
            PodTemplate::NodeAffinity,
            PodTemplate::TopologySpreading,
            PodTemplate::LowPriority,
            PodTemplate::HighPriority,
            PodTemplate::HighPriorityLargeCpu,
            PodTemplate::Daemonset,
            PodTemplate::Light,
            PodTemplate::Gated,
            PodTemplate::ExtendedResource,
        ] {
            let pod = template.pod_at(MEASURED_NAMESPACE, "measured-000001", 1);
            assert!(is_measured(&pod), "{template:?}");
            let obj = berth_model::model::Object::Pod(Box::new(pod));
            assert!(
                berth_model::validate::validate_object(&obj).is_ok(),
                "{template:?}: {:?}",
                berth_model::validate::validate_object(&obj)
            );
        }
        for node in [
            node(7, true),
            NodeTemplate::ExtendedResource.node(7),
            named_node(),
        ] {
            let name = node.metadata.name.clone();
            let obj = berth_model::model::Object::Node(Box::new(node));
            assert!(
                berth_model::validate::validate_object(&obj).is_ok(),
                "{name}: {:?}",
                berth_model::validate::validate_object(&obj)
            );
        }
    }

    #[test]
    fn aliases_and_shapes() {
        assert_eq!(
            "MixedChurn".parse::<WorkloadName>(),
            Ok(WorkloadName::SchedulingWithMixedChurn)
        );
        // Pod i asks for what only node i has.
        let w = Workload::new(WorkloadName::SchedulingWithExtendedResource).with_nodes(3);
        let pod = w.measured.pod(2);
        let wanted = extended_resource(2);
        assert!(pod.spec.containers[0]
            .resources
            .requests
            .contains_key(&wanted));
        assert!(w.node(2).status.allocatable.contains_key(&wanted));
        assert!(!w.node(1).status.allocatable.contains_key(&wanted));
        assert!(w.with_measured_pods(4).size_problem().is_some());
        // Daemonset pods are pinned to the named node, which comes first.
        let w = Workload::new(WorkloadName::SchedulingDaemonset).with_nodes(2);
        let first = w.all_nodes().next().expect("a node");
        assert_eq!(first.metadata.name, NAMED_NODE);
        let pinned = w.measured.pod(0);
        let terms = &pinned
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref());
        assert!(format!("{terms:?}").contains(NAMED_NODE));
        // Churn: create keeps creating; recreate alternates.
        let churn = |name| Workload::new(name).churn.expect("churn");
        let ticks = |c: Churn| (0..4).map(|t| c.creates(t)).collect::<Vec<_>>();
        assert_eq!(ticks(churn(WorkloadName::Unschedulable)), [true; 4]);
        assert_eq!(
            ticks(churn(WorkloadName::SchedulingWithMixedChurn)),
            [true, false, true, false]
        );
        assert!(Workload::new(WorkloadName::PreemptionAsync).needs_preemption());
        // Gated pods are not waited for; the pods deleted later are.
        let gated = Workload::new(WorkloadName::SchedulingWhileGated);
        let waits: Vec<bool> = gated.init.iter().map(|(_, wait)| *wait).collect();
        assert_eq!(waits, [false, true]);
        assert!(!gated.init[0].0.pod(0).spec.scheduling_gates.is_empty());
        assert_eq!(gated.deletion.map(|d| d.group), Some(1));
    }
}
