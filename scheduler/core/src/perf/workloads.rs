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
    PodAffinityTerm, PriorityClass, ResourceRequirements, StringMap, TopologySpreadConstraint,
    UnsatisfiableConstraintAction, WeightedPodAffinityTerm,
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
    /// Plain pods while never-fitting high-priority pods keep arriving.
    Unschedulable,
    /// Plain pods while nodes and pods are created and deleted.
    MixedChurn,
    /// dra/: each pod gets a claim from a ResourceClaimTemplate (one device of ten per node).
    SchedulingWithResourceClaimTemplate,
    /// dra/: five pods share each ResourceClaim (two devices per node).
    SchedulingWithResourceClaim,
}

impl WorkloadName {
    /// Every workload, in the order of the documentation.
    pub const ALL: [WorkloadName; 12] = [
        WorkloadName::SchedulingBasic,
        WorkloadName::SchedulingPodAntiAffinity,
        WorkloadName::SchedulingPodAffinity,
        WorkloadName::SchedulingPreferredPodAffinity,
        WorkloadName::SchedulingPreferredPodAntiAffinity,
        WorkloadName::SchedulingNodeAffinity,
        WorkloadName::TopologySpreading,
        WorkloadName::PreemptionBasic,
        WorkloadName::Unschedulable,
        WorkloadName::MixedChurn,
        WorkloadName::SchedulingWithResourceClaimTemplate,
        WorkloadName::SchedulingWithResourceClaim,
    ];

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
            WorkloadName::MixedChurn => "MixedChurn",
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

    /// Parses kube's name, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WorkloadName::ALL
            .into_iter()
            .find(|w| w.as_str().eq_ignore_ascii_case(s))
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
    /// priority, no defaults).
    pub fn pod(self, namespace: &str, name: &str) -> Pod {
        let (cpu, limited) = match self {
            PodTemplate::LowPriority => ("900m", true),
            PodTemplate::HighPriority => ("3", true),
            PodTemplate::HighPriorityLargeCpu => ("9", false),
            _ => ("100m", true),
        };
        let requests: berth_model::model::ResourceList = [
            ("cpu".to_string(), quantity(cpu)),
            ("memory".to_string(), quantity("500Mi")),
        ]
        .into();
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
                spec.affinity = Some(Affinity {
                    pod_anti_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![color_term(
                            "green",
                            names::LABEL_HOSTNAME,
                        )],
                        ..PodAffinity::default()
                    }),
                    ..Affinity::default()
                });
            }
            PodTemplate::Affinity => {
                pod.metadata.labels = labels(&[("color", "blue")]);
                spec.affinity = Some(Affinity {
                    pod_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: vec![color_term(
                            "blue",
                            names::LABEL_TOPOLOGY_ZONE,
                        )],
                        ..PodAffinity::default()
                    }),
                    ..Affinity::default()
                });
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
                spec.affinity = Some(if self == PodTemplate::PreferredAffinity {
                    Affinity {
                        pod_affinity: Some(preferred),
                        ..Affinity::default()
                    }
                } else {
                    Affinity {
                        pod_anti_affinity: Some(preferred),
                        ..Affinity::default()
                    }
                });
            }
            PodTemplate::NodeAffinity => {
                spec.affinity = Some(Affinity {
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
                });
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
    /// Pod `i` of the group.
    pub fn pod(&self, i: usize) -> Pod {
        self.template
            .pod(self.namespace, &format!("{}{i:06}", self.prefix))
    }
}

/// Never-fitting pods created along with the measured ones: one after every `every`
/// measured pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnschedulableStream {
    /// The template (a pod that fits no node).
    pub template: PodTemplate,
    /// Measured pods between two stream pods.
    pub every: usize,
}

/// Objects created and deleted while the measured pods are scheduled (kube's `churn` op in
/// `recreate` mode): each tick creates one node and one never-fitting high-priority pod,
/// and deletes the ones of the previous tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Churn {
    /// Time between ticks.
    pub interval: Duration,
}

/// One workload: its cluster, the pods placed before measuring, and the measured pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The workload.
    pub name: WorkloadName,
    /// Number of nodes.
    pub nodes: usize,
    /// Whether nodes carry the zone label.
    pub zoned: bool,
    /// Pods created first. Groups with `wait` set are waited for (all bound) before the
    /// measured pods are created; the others (never-fitting pods) are not.
    pub init: Vec<(PodGroup, bool)>,
    /// The measured pods: throughput counts their binds.
    pub measured: PodGroup,
    /// Never-fitting pods interleaved with the measured ones.
    pub stream: Option<UnschedulableStream>,
    /// Churn while measuring.
    pub churn: Option<Churn>,
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
            return Box::new(pods.map(|(_, p)| Object::Pod(p)));
        };
        let shared: Vec<Object> = match setup.claims {
            dra::ClaimSource::Shared => (0..group.count.div_ceil(dra::PODS_PER_SHARED_CLAIM))
                .map(|i| Object::ResourceClaim(dra::shared_claim(group.namespace, i)))
                .collect(),
            dra::ClaimSource::Template => vec![Object::ResourceClaimTemplate(dra::claim_template(
                group.namespace,
            ))],
        };
        Box::new(shared.into_iter().chain(pods.flat_map(move |(i, mut pod)| {
            let claim = dra::attach(&mut pod, i, setup.claims).map(Object::ResourceClaim);
            claim.into_iter().chain(std::iter::once(Object::Pod(pod)))
        })))
    }

    /// The workload at the sizes of issue 7 (kube's 5000Nodes variants, with more measured
    /// pods so that a run lasts long enough to sample).
    pub fn new(name: WorkloadName) -> Self {
        use PodTemplate as T;
        let (nodes, zoned, init, measured) = match name {
            WorkloadName::SchedulingBasic => {
                (5000, false, vec![(T::Default, 1000)], (T::Default, 10_000))
            }
            WorkloadName::SchedulingPodAntiAffinity => (
                5000,
                false,
                vec![(T::AntiAffinity, 1000)],
                (T::AntiAffinity, 2000),
            ),
            WorkloadName::SchedulingPodAffinity => {
                (5000, true, vec![(T::Affinity, 5000)], (T::Affinity, 5000))
            }
            WorkloadName::SchedulingPreferredPodAffinity => (
                5000,
                false,
                vec![(T::PreferredAffinity, 5000)],
                (T::PreferredAffinity, 5000),
            ),
            WorkloadName::SchedulingPreferredPodAntiAffinity => (
                5000,
                false,
                vec![(T::PreferredAntiAffinity, 5000)],
                (T::PreferredAntiAffinity, 5000),
            ),
            WorkloadName::SchedulingNodeAffinity => (
                5000,
                true,
                vec![(T::NodeAffinity, 5000)],
                (T::NodeAffinity, 10_000),
            ),
            WorkloadName::TopologySpreading => (
                5000,
                true,
                vec![(T::Default, 5000)],
                (T::TopologySpreading, 5000),
            ),
            WorkloadName::PreemptionBasic => (
                500,
                false,
                vec![(T::LowPriority, 2000)],
                (T::HighPriority, 500),
            ),
            WorkloadName::Unschedulable => (
                5000,
                false,
                vec![(T::HighPriorityLargeCpu, 200)],
                (T::Default, 10_000),
            ),
            WorkloadName::MixedChurn => (5000, false, Vec::new(), (T::Default, 10_000)),
            // kube's 5000pods_500nodes: 2500 pods first, 2500 measured.
            WorkloadName::SchedulingWithResourceClaimTemplate
            | WorkloadName::SchedulingWithResourceClaim => {
                (500, false, vec![(T::Default, 2500)], (T::Default, 2500))
            }
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
                // Never-fitting pods are created and left pending, as kube's
                // skipWaitToCompletion.
                let wait = template != T::HighPriorityLargeCpu;
                (group(template, count, INIT_NAMESPACE), wait)
            })
            .collect();
        Workload {
            name,
            nodes,
            zoned,
            init,
            measured: group(measured.0, measured.1, MEASURED_NAMESPACE),
            stream: (name == WorkloadName::Unschedulable).then_some(UnschedulableStream {
                template: T::HighPriorityLargeCpu,
                every: 100,
            }),
            churn: (name == WorkloadName::MixedChurn).then_some(Churn {
                interval: Duration::from_millis(100),
            }),
            dra,
        }
    }

    /// Resizes the cluster to `nodes`; the initial pods scale with it, so that they fit as
    /// they do at the default size.
    pub fn with_nodes(mut self, nodes: usize) -> Self {
        let default_nodes = self.nodes.max(1);
        for (group, _) in &mut self.init {
            group.count = (group.count * nodes).div_ceil(default_nodes);
        }
        self.nodes = nodes;
        self
    }

    /// Sets the number of measured pods.
    pub fn with_measured_pods(mut self, pods: usize) -> Self {
        self.measured.count = pods;
        self
    }

    /// Node `i` of the cluster.
    pub fn node(&self, i: usize) -> Node {
        node(i, self.zoned)
    }

    /// Number of never-fitting stream pods created with the measured ones.
    pub fn stream_pods(&self) -> usize {
        self.stream
            .map_or(0, |s| self.measured.count / s.every.max(1))
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
            || self.stream.is_some()
            || self.churn.is_some()
    }

    /// The measured pods, in creation order, with the stream's never-fitting pods
    /// interleaved (one after every `every` measured pods). Made one at a time, so that a
    /// run of 50,000 pods does not hold them all in the benchmark's memory.
    pub fn measured_pods(&self) -> impl Iterator<Item = Pod> + Send + '_ {
        let every = self.stream.map(|s| s.every.max(1));
        (0..self.measured.count).flat_map(move |i| {
            let streamed = match (self.stream, every) {
                (Some(stream), Some(every)) if (i + 1) % every == 0 => Some(stream.template.pod(
                    MEASURED_NAMESPACE,
                    &format!("stream-{:06}", (i + 1) / every - 1),
                )),
                _ => None,
            };
            std::iter::once(self.measured.pod(i)).chain(streamed)
        })
    }
}

impl Workload {
    /// The measured phase's objects in creation order: [`Workload::measured_pods`], with
    /// the claims the DRA workloads need before their pods.
    pub fn measured_objects(&self) -> Box<dyn Iterator<Item = Object> + Send + '_> {
        if self.dra.is_none() {
            return Box::new(self.measured_pods().map(Object::Pod));
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
            want_stream: usize,
        }
        let cases = [
            Case {
                name: "basic default",
                workload: Workload::new(WorkloadName::SchedulingBasic),
                want_nodes: 5000,
                want_init: vec![1000],
                want_measured: 10_000,
                want_stream: 0,
            },
            Case {
                name: "basic scaled",
                workload: Workload::new(WorkloadName::SchedulingBasic)
                    .with_nodes(10)
                    .with_measured_pods(20),
                want_nodes: 10,
                want_init: vec![2],
                want_measured: 20,
                want_stream: 0,
            },
            Case {
                name: "preemption keeps four victims per node",
                workload: Workload::new(WorkloadName::PreemptionBasic).with_nodes(10),
                want_nodes: 10,
                want_init: vec![40],
                want_measured: 500,
                want_stream: 0,
            },
            Case {
                name: "unschedulable streams one pod per hundred",
                workload: Workload::new(WorkloadName::Unschedulable),
                want_nodes: 5000,
                want_init: vec![200],
                want_measured: 10_000,
                want_stream: 100,
            },
        ];
        for case in cases {
            let w = &case.workload;
            assert_eq!(w.nodes, case.want_nodes, "{}", case.name);
            let init: Vec<usize> = w.init.iter().map(|(g, _)| g.count).collect();
            assert_eq!(init, case.want_init, "{}", case.name);
            assert_eq!(w.measured.count, case.want_measured, "{}", case.name);
            assert_eq!(w.stream_pods(), case.want_stream, "{}", case.name);
            assert_eq!(
                w.measured_pods().count(),
                case.want_measured + case.want_stream,
                "{}",
                case.name
            );
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
        ] {
            let pod = template.pod(MEASURED_NAMESPACE, "measured-000001");
            assert!(is_measured(&pod), "{template:?}");
            let obj = berth_model::model::Object::Pod(pod);
            assert!(
                berth_model::validate::validate_object(&obj).is_ok(),
                "{template:?}: {:?}",
                berth_model::validate::validate_object(&obj)
            );
        }
        let node = berth_model::model::Object::Node(node(7, true));
        assert!(berth_model::validate::validate_object(&node).is_ok());
    }
}
