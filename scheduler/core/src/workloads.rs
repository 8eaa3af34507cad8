//! What the workload controllers create, as pure functions: a Deployment's ReplicaSet, a
//! ReplicaSet's pods, a DaemonSet's pod for one node and whether a node should run it, a
//! Job's pods. `berth
//! sim` expands workloads with them, and the live controllers build on the same functions.
//!
//! Names follow kube's controllers: a Deployment's ReplicaSet is `<deployment>-<hash>` where
//! the hash is kube's pod-template-hash (FNV-32a, rendered with kube's `SafeEncodeString`);
//! pods are `<owner>-<5 random characters>` from the same alphabet, as the API server's
//! `generateName` does.
//!
//! One deliberate difference: kube hashes Go's dump of the template struct, which Berth cannot
//! reproduce byte for byte, so [`pod_template_hash`] hashes the template's JSON. The hash is
//! as stable (same template, same hash) but differs from the one kube would print.

use berth_model::model::{
    Affinity, CompletionMode, DaemonSet, Deployment, EnvVar, Job, Node, NodeAffinity, NodeSelector,
    NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, ObjectMeta, OwnerReference,
    Pod, PodSpec, PodTemplateSpec, ReplicaSet, ReplicaSetSpec, TaintEffect, Toleration,
    TolerationOperator, ENV_JOB_COMPLETION_INDEX, JOB_COMPLETION_INDEX, JOB_TRACKING_FINALIZER,
};
use berth_model::names;
use rand::Rng;

use crate::plugins::node_affinity::{required_node_affinity_matches, FIELD_METADATA_NAME};
use crate::plugins::taint_toleration::find_untolerated_taint;

/// The label a Deployment adds to its ReplicaSets' selectors, templates and pods.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// kube's alphabet for generated names and encoded hashes (`k8s.io/apimachinery/pkg/util/rand`):
/// no vowels (so no words) and no look-alike characters.
pub const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Length of the random suffix of a generated name.
pub const NAME_SUFFIX_LENGTH: usize = 5;

/// apiVersion of the workload kinds in owner references.
const APPS_V1: &str = "apps/v1";
/// apiVersion of Jobs in owner references.
const BATCH_V1: &str = "batch/v1";

/// Taints every DaemonSet pod tolerates (kube's `AddOrUpdateDaemonPodTolerations`): node
/// problems must not evict or keep out the per-node daemons. The network-unavailable
/// toleration kube adds for `hostNetwork` pods is left out: Berth does not model host
/// networking.
const DAEMON_TOLERATIONS: &[(&str, TaintEffect)] = &[
    (names::TAINT_NODE_NOT_READY, TaintEffect::NoExecute),
    (names::TAINT_NODE_UNREACHABLE, TaintEffect::NoExecute),
    (names::TAINT_NODE_DISK_PRESSURE, TaintEffect::NoSchedule),
    (names::TAINT_NODE_MEMORY_PRESSURE, TaintEffect::NoSchedule),
    (names::TAINT_NODE_PID_PRESSURE, TaintEffect::NoSchedule),
    (names::TAINT_NODE_UNSCHEDULABLE, TaintEffect::NoSchedule),
];

/// kube's `SafeEncodeString`: each character of `s` mapped onto [`NAME_ALPHABET`] by its
/// code point, so that a decimal number becomes a word-free string.
pub fn safe_encode_string(s: &str) -> String {
    s.chars()
        .map(|c| char::from(NAME_ALPHABET[c as usize % NAME_ALPHABET.len()]))
        .collect()
}

/// FNV-1a, 32 bits.
fn fnv32a(bytes: &[u8]) -> u32 {
    const OFFSET_BASIS: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    bytes.iter().fold(OFFSET_BASIS, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(PRIME)
    })
}

/// The pod-template-hash of a template (kube's `ComputeHash` without a collision count):
/// FNV-32a over the template, its decimal value encoded with [`safe_encode_string`]. The
/// template is hashed as JSON (see the module docs), so equal templates hash equally.
pub fn pod_template_hash(template: &PodTemplateSpec) -> String {
    let json = serde_json::to_vec(template).expect("a pod template always serializes to JSON");
    safe_encode_string(&fnv32a(&json).to_string())
}

/// A random name suffix of [`NAME_SUFFIX_LENGTH`] characters from [`NAME_ALPHABET`], as the
/// API server appends to a `generateName`.
pub fn random_suffix(rng: &mut impl Rng) -> String {
    (0..NAME_SUFFIX_LENGTH)
        .map(|_| char::from(NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())]))
        .collect()
}

/// A controller owner reference to a workload object (kube's `NewControllerRef`:
/// controller and blockOwnerDeletion both true).
fn controller_ref(kind: &str, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: if kind == "Job" { BATCH_V1 } else { APPS_V1 }.to_string(),
        kind: kind.to_string(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The ReplicaSet a Deployment creates for its current template (kube's
/// `getNewReplicaSet`): named `<deployment>-<pod-template-hash>`, in the Deployment's
/// namespace, owned by it, with the Deployment's replicas, and with the hash label added to
/// its labels, selector and template labels.
pub fn replica_set_for(deployment: &Deployment) -> ReplicaSet {
    let hash = pod_template_hash(&deployment.spec.template);
    let mut template = deployment.spec.template.clone();
    template
        .metadata
        .labels
        .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
    let mut selector = deployment.spec.selector.clone().unwrap_or_default();
    selector
        .match_labels
        .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
    ReplicaSet {
        api_version: APPS_V1.to_string(),
        kind: "ReplicaSet".to_string(),
        metadata: ObjectMeta {
            name: format!("{}-{hash}", deployment.metadata.name),
            namespace: deployment.metadata.namespace.clone(),
            labels: template.metadata.labels.clone(),
            owner_references: vec![controller_ref("Deployment", &deployment.metadata)],
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: deployment.spec.replicas,
            selector: Some(selector),
            template,
            ..ReplicaSetSpec::default()
        },
        status: Default::default(),
    }
}

/// A pod stamped from a controller's template: the template's labels, annotations and spec,
/// in the owner's namespace, controlled by the owner.
fn pod_from_template(
    template: &PodTemplateSpec,
    name: String,
    owner_kind: &str,
    owner: &ObjectMeta,
) -> Pod {
    Pod {
        api_version: "v1".to_string(),
        kind: "Pod".to_string(),
        metadata: ObjectMeta {
            name,
            namespace: owner.namespace.clone(),
            labels: template.metadata.labels.clone(),
            annotations: template.metadata.annotations.clone(),
            owner_references: vec![controller_ref(owner_kind, owner)],
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: Default::default(),
    }
}

/// `count` pods of a ReplicaSet, each named `<replicaset>-<random suffix>` (suffixes drawn
/// from `rng`, distinct within the call) and owned by it (kind ReplicaSet, controller).
pub fn pods_for_replica_set(rs: &ReplicaSet, count: usize, rng: &mut impl Rng) -> Vec<Pod> {
    let mut names = std::collections::BTreeSet::new();
    let mut pods = Vec::with_capacity(count);
    while pods.len() < count {
        let name = format!("{}-{}", rs.metadata.name, random_suffix(rng));
        // The API server retries a generated name that is taken; so do we.
        if names.insert(name.clone()) {
            pods.push(pod_from_template(
                &rs.spec.template,
                name,
                "ReplicaSet",
                &rs.metadata,
            ));
        }
    }
    pods
}

/// A pod of a Job, as kube's job controller creates it: the template (whose labels carry
/// the job-name and controller-uid labels) with the `batch.kubernetes.io/job-tracking`
/// finalizer, controlled by the Job, named from `generateName` `<job>-` plus a random
/// suffix. For an Indexed Job, `index` adds the completion-index annotation and label, the
/// `JOB_COMPLETION_INDEX` variable in every container, and the name `<job>-<index>-...`.
pub fn job_pod(job: &Job, index: Option<i32>, rng: &mut impl Rng) -> Pod {
    let prefix = match index {
        Some(i) => format!("{}-{i}-", job.metadata.name),
        None => format!("{}-", job.metadata.name),
    };
    let name = format!("{prefix}{}", random_suffix(rng));
    let mut pod = pod_from_template(&job.spec.template, name, "Job", &job.metadata);
    pod.metadata.generate_name = prefix;
    if !pod
        .metadata
        .finalizers
        .iter()
        .any(|f| f == JOB_TRACKING_FINALIZER)
    {
        pod.metadata
            .finalizers
            .push(JOB_TRACKING_FINALIZER.to_string());
    }
    if let Some(i) = index {
        let value = i.to_string();
        pod.metadata
            .annotations
            .insert(JOB_COMPLETION_INDEX.to_string(), value.clone());
        pod.metadata
            .labels
            .insert(JOB_COMPLETION_INDEX.to_string(), value.clone());
        let spec = &mut pod.spec;
        for c in spec
            .init_containers
            .iter_mut()
            .chain(spec.containers.iter_mut())
        {
            if !c.env.iter().any(|e| e.name == ENV_JOB_COMPLETION_INDEX) {
                c.env.push(EnvVar {
                    name: ENV_JOB_COMPLETION_INDEX.to_string(),
                    value: value.clone(),
                    value_from: None,
                });
            }
        }
    }
    pod
}

/// The pods a Job starts with (what `berth sim` places): `min(parallelism, completions)`
/// of them, none while suspended; an Indexed Job's get the indexes from 0 up.
pub fn first_job_pods(job: &Job, rng: &mut impl Rng) -> Vec<Pod> {
    if job.spec.is_suspended() {
        return Vec::new();
    }
    let parallelism = job.spec.parallelism().max(0);
    let count = job
        .spec
        .completions()
        .map_or(parallelism, |c| c.max(0).min(parallelism));
    let indexed = job.spec.completion_mode() == CompletionMode::Indexed;
    (0..count)
        .map(|i| job_pod(job, indexed.then_some(i), rng))
        .collect()
}

/// Adds the tolerations every DaemonSet pod has (kube's `AddOrUpdateDaemonPodTolerations`):
/// a toleration equal in key, operator, value and effect is replaced, any other is kept.
pub fn add_daemon_pod_tolerations(spec: &mut PodSpec) {
    for (key, effect) in DAEMON_TOLERATIONS {
        let toleration = Toleration {
            key: (*key).to_string(),
            operator: Some(TolerationOperator::Exists),
            value: String::new(),
            effect: Some(*effect),
            toleration_seconds: None,
        };
        let same = |t: &Toleration| {
            t.key == toleration.key
                && t.operator == toleration.operator
                && t.value == toleration.value
                && t.effect == toleration.effect
        };
        match spec.tolerations.iter_mut().find(|t| same(t)) {
            Some(existing) => *existing = toleration,
            None => spec.tolerations.push(toleration),
        }
    }
}

/// Pins a daemon pod to `node` (kube's `ReplaceDaemonSetPodNodeNameNodeAffinity`): the
/// required node affinity becomes the single term `matchFields metadata.name In [node]`,
/// replacing whatever terms it had (the controller has already checked them against the
/// node); preferred terms and pod (anti-)affinity are kept.
pub fn replace_daemon_pod_node_affinity(
    affinity: Option<Box<Affinity>>,
    node: &str,
) -> Box<Affinity> {
    let term = NodeSelectorTerm {
        match_expressions: Vec::new(),
        match_fields: vec![NodeSelectorRequirement {
            key: FIELD_METADATA_NAME.to_string(),
            operator: NodeSelectorOperator::In,
            values: vec![node.to_string()],
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![term],
    });
    affinity
}

/// The pod a DaemonSet creates for `node`: its template with the daemon tolerations
/// ([`add_daemon_pod_tolerations`]) and the node pinned by required node affinity
/// ([`replace_daemon_pod_node_affinity`]), named `<daemonset>-<random suffix>`, owned by the
/// DaemonSet (controller). It is not bound: the scheduler places it, as kube does.
pub fn daemon_pod_for(ds: &DaemonSet, node: &str, rng: &mut impl Rng) -> Pod {
    let name = format!("{}-{}", ds.metadata.name, random_suffix(rng));
    let mut pod = pod_from_template(&ds.spec.template, name, "DaemonSet", &ds.metadata);
    add_daemon_pod_tolerations(&mut pod.spec);
    pod.spec.affinity = Some(replace_daemon_pod_node_affinity(
        pod.spec.affinity.take(),
        node,
    ));
    pod
}

/// Whether a DaemonSet's pod belongs on a node (kube's `NodeShouldRunDaemonPod`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaemonNodeFit {
    /// A daemon pod should be created for the node.
    pub should_run: bool,
    /// A daemon pod already on the node may stay (its only untolerated taints are
    /// NoSchedule ones, which do not evict).
    pub should_continue_running: bool,
}

/// Whether `ds` should run a pod on `node` (kube's `NodeShouldRunDaemonPod`): the template's
/// `nodeName`, if any, must be the node; its nodeSelector and required node affinity must
/// match the node; and every NoSchedule and NoExecute taint must be tolerated by the
/// template's tolerations plus the daemon tolerations. A node whose untolerated taints are
/// all NoSchedule should not get a new pod but may keep a running one.
pub fn node_should_run_daemon_pod(ds: &DaemonSet, node: &Node) -> DaemonNodeFit {
    const NO: DaemonNodeFit = DaemonNodeFit {
        should_run: false,
        should_continue_running: false,
    };
    let template = &ds.spec.template.spec;
    if !template.node_name.is_empty() && template.node_name != node.metadata.name {
        return NO;
    }
    let mut pod = Pod {
        metadata: ds.spec.template.metadata.clone(),
        spec: template.clone(),
        ..Pod::default()
    };
    pod.metadata.namespace = ds.metadata.namespace.clone();
    add_daemon_pod_tolerations(&mut pod.spec);
    if !required_node_affinity_matches(&pod, node) {
        return NO;
    }
    let taints = &node.spec.taints;
    let blocking = find_untolerated_taint(taints, &pod.spec.tolerations, |t| {
        matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
    });
    if blocking.is_none() {
        return DaemonNodeFit {
            should_run: true,
            should_continue_running: true,
        };
    }
    let evicting = find_untolerated_taint(taints, &pod.spec.tolerations, |t| {
        t.effect == TaintEffect::NoExecute
    });
    DaemonNodeFit {
        should_run: false,
        should_continue_running: evicting.is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::model::string_map;
    use berth_model::model::{NodeSpec, Taint};
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn deployment(yaml: &str) -> Deployment {
        serde_yaml_ng::from_str(yaml).expect("test deployment parses")
    }

    fn daemon_set(yaml: &str) -> DaemonSet {
        serde_yaml_ng::from_str(yaml).expect("test daemonset parses")
    }

    fn node(name: &str, node_labels: &[(&str, &str)], taints: Vec<Taint>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: name.to_string(),
                labels: string_map(node_labels),
                ..ObjectMeta::default()
            },
            spec: NodeSpec {
                taints,
                ..NodeSpec::default()
            },
            ..Node::default()
        }
    }

    fn taint(key: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.to_string(),
            value: String::new(),
            effect,
            time_added: None,
        }
    }

    const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

    #[test]
    fn safe_encode_maps_digits_as_kube_does() {
        struct Case {
            name: &'static str,
            input: &'static str,
            want: &'static str,
        }
        // '0' is code point 48, 48 % 27 = 21, the 22nd letter of the alphabet: '4'.
        let cases = [
            Case {
                name: "digits",
                input: "0123456789",
                want: "456789bcdf",
            },
            Case {
                name: "empty",
                input: "",
                want: "",
            },
            Case {
                name: "kube sample",
                input: "3791303546",
                want: "7cf574798b",
            },
        ];
        for case in cases {
            assert_eq!(safe_encode_string(case.input), case.want, "{}", case.name);
        }
    }

    #[test]
    fn fnv32a_matches_reference_vectors() {
        struct Case {
            name: &'static str,
            input: &'static [u8],
            want: u32,
        }
        let cases = [
            Case {
                name: "empty",
                input: b"",
                want: 0x811c_9dc5,
            },
            Case {
                name: "a",
                input: b"a",
                want: 0xe40c_292c,
            },
            Case {
                name: "foobar",
                input: b"foobar",
                want: 0xbf9c_f968,
            },
        ];
        for case in cases {
            assert_eq!(fnv32a(case.input), case.want, "{}", case.name);
        }
    }

    #[test]
    fn template_hash_is_stable_and_template_sensitive() {
        let d = deployment(WEB);
        let h1 = pod_template_hash(&d.spec.template);
        let h2 = pod_template_hash(&d.spec.template.clone());
        assert_eq!(h1, h2, "same template, same hash");
        assert!(
            h1.bytes().all(|b| NAME_ALPHABET.contains(&b)),
            "hash {h1} uses the safe alphabet"
        );
        let mut other = d.spec.template.clone();
        other.spec.containers[0].image = "nginx:2".into();
        assert_ne!(
            h1,
            pod_template_hash(&other),
            "a changed template hashes differently"
        );
    }

    #[test]
    fn deployment_becomes_a_hashed_replica_set() {
        let d = deployment(WEB);
        let hash = pod_template_hash(&d.spec.template);
        let rs = replica_set_for(&d);
        assert_eq!(rs.metadata.name, format!("web-{hash}"));
        assert_eq!(rs.metadata.namespace, "shop");
        assert_eq!(rs.spec.replicas, 3);
        let want_labels = string_map(&[("app", "web"), ("pod-template-hash", &hash)]);
        assert_eq!(rs.metadata.labels, want_labels);
        assert_eq!(rs.spec.template.metadata.labels, want_labels);
        assert_eq!(
            rs.spec.selector.as_ref().map(|s| s.match_labels.clone()),
            Some(want_labels)
        );
        let owner = &rs.metadata.owner_references[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("Deployment", "web", Some(true))
        );
    }

    #[test]
    fn replica_set_pods_are_named_labelled_and_owned() {
        let rs = replica_set_for(&deployment(WEB));
        let mut rng = SmallRng::seed_from_u64(7);
        let pods = pods_for_replica_set(&rs, 3, &mut rng);
        assert_eq!(pods.len(), 3);
        let mut names = std::collections::BTreeSet::new();
        for pod in &pods {
            let suffix = pod
                .metadata
                .name
                .strip_prefix(&format!("{}-", rs.metadata.name))
                .expect("pod name starts with the replica set's");
            assert_eq!(suffix.len(), NAME_SUFFIX_LENGTH, "{}", pod.metadata.name);
            assert!(suffix.bytes().all(|b| NAME_ALPHABET.contains(&b)));
            assert!(
                names.insert(pod.metadata.name.clone()),
                "names are distinct"
            );
            assert_eq!(pod.metadata.namespace, "shop");
            assert_eq!(pod.metadata.labels, rs.spec.template.metadata.labels);
            let owner = &pod.metadata.owner_references[0];
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str(), owner.controller),
                ("ReplicaSet", rs.metadata.name.as_str(), Some(true))
            );
        }
        let again = pods_for_replica_set(&rs, 3, &mut SmallRng::seed_from_u64(7));
        assert_eq!(again, pods, "the same seed gives the same pods");
    }

    #[test]
    fn daemon_pods_tolerate_node_problems_and_are_pinned() {
        let ds = daemon_set(
            r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      tolerations:
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: disk, operator: In, values: [ssd]}]
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 1
            preference:
              matchExpressions: [{key: zone, operator: In, values: [a]}]
      containers: [{name: c}]
"#,
        );
        let pod = daemon_pod_for(&ds, "n1", &mut SmallRng::seed_from_u64(1));
        assert!(pod.metadata.name.starts_with("agent-"));
        assert_eq!(pod.metadata.name.len(), "agent-".len() + NAME_SUFFIX_LENGTH);
        assert_eq!(pod.metadata.namespace, "kube-system");
        assert_eq!(pod.metadata.owner_references[0].kind, "DaemonSet");
        let keys: Vec<(&str, Option<i64>)> = pod
            .spec
            .tolerations
            .iter()
            .map(|t| (t.key.as_str(), t.toleration_seconds))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("node.kubernetes.io/not-ready", None),
                ("node.kubernetes.io/unreachable", None),
                ("node.kubernetes.io/disk-pressure", None),
                ("node.kubernetes.io/memory-pressure", None),
                ("node.kubernetes.io/pid-pressure", None),
                ("node.kubernetes.io/unschedulable", None),
            ],
            "the matching toleration is replaced, the others appended"
        );
        let affinity = pod.spec.affinity.expect("affinity set");
        let node_affinity = affinity.node_affinity.expect("node affinity set");
        let required = node_affinity
            .required_during_scheduling_ignored_during_execution
            .expect("required set");
        assert_eq!(required.node_selector_terms.len(), 1);
        let term = &required.node_selector_terms[0];
        assert!(term.match_expressions.is_empty());
        assert_eq!(term.match_fields[0].key, "metadata.name");
        assert_eq!(term.match_fields[0].values, vec!["n1".to_string()]);
        assert_eq!(
            node_affinity
                .preferred_during_scheduling_ignored_during_execution
                .len(),
            1,
            "preferred terms are kept"
        );
    }

    #[test]
    fn which_nodes_run_a_daemon_pod() {
        struct Case {
            name: &'static str,
            template: &'static str,
            node: Node,
            want: DaemonNodeFit,
        }
        const RUN: DaemonNodeFit = DaemonNodeFit {
            should_run: true,
            should_continue_running: true,
        };
        const NO: DaemonNodeFit = DaemonNodeFit {
            should_run: false,
            should_continue_running: false,
        };
        const KEEP: DaemonNodeFit = DaemonNodeFit {
            should_run: false,
            should_continue_running: true,
        };
        let cases = [
            Case {
                name: "plain node",
                template: "{containers: [{name: c}]}",
                node: node("n1", &[], vec![]),
                want: RUN,
            },
            Case {
                name: "node selector matches",
                template: "{nodeSelector: {disk: ssd}, containers: [{name: c}]}",
                node: node("n1", &[("disk", "ssd")], vec![]),
                want: RUN,
            },
            Case {
                name: "node selector does not match",
                template: "{nodeSelector: {disk: ssd}, containers: [{name: c}]}",
                node: node("n1", &[("disk", "hdd")], vec![]),
                want: NO,
            },
            Case {
                name: "required affinity does not match",
                template: r#"{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
                    {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: Exists}]}]}}},
                    containers: [{name: c}]}"#,
                node: node("n1", &[], vec![]),
                want: NO,
            },
            Case {
                name: "untolerated NoSchedule taint keeps running pods",
                template: "{containers: [{name: c}]}",
                node: node("n1", &[], vec![taint("dedicated", TaintEffect::NoSchedule)]),
                want: KEEP,
            },
            Case {
                name: "untolerated NoExecute taint",
                template: "{containers: [{name: c}]}",
                node: node("n1", &[], vec![taint("dedicated", TaintEffect::NoExecute)]),
                want: NO,
            },
            Case {
                name: "PreferNoSchedule does not matter",
                template: "{containers: [{name: c}]}",
                node: node(
                    "n1",
                    &[],
                    vec![taint("dedicated", TaintEffect::PreferNoSchedule)],
                ),
                want: RUN,
            },
            Case {
                name: "tolerated taint",
                template:
                    "{tolerations: [{key: dedicated, operator: Exists}], containers: [{name: c}]}",
                node: node("n1", &[], vec![taint("dedicated", TaintEffect::NoSchedule)]),
                want: RUN,
            },
            Case {
                name: "node problems are tolerated",
                template: "{containers: [{name: c}]}",
                node: node(
                    "n1",
                    &[],
                    vec![
                        taint("node.kubernetes.io/unschedulable", TaintEffect::NoSchedule),
                        taint("node.kubernetes.io/not-ready", TaintEffect::NoExecute),
                        taint(
                            "node.kubernetes.io/memory-pressure",
                            TaintEffect::NoSchedule,
                        ),
                    ],
                ),
                want: RUN,
            },
            Case {
                name: "template names another node",
                template: "{nodeName: n2, containers: [{name: c}]}",
                node: node("n1", &[], vec![]),
                want: NO,
            },
        ];
        for case in cases {
            let yaml = format!(
                "metadata: {{name: ds}}\nspec:\n  template:\n    spec: {}\n",
                case.template
            );
            let ds = daemon_set(&yaml);
            assert_eq!(
                node_should_run_daemon_pod(&ds, &case.node),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn job_pods_are_stamped_as_kube_s_job_controller_does() {
        // (case, spec, want pod names' prefixes, want indexes)
        let cases: [(&str, &str, &[&str], &[Option<&str>]); 4] = [
            (
                "non-indexed, capped by parallelism",
                "completions: 5\n  parallelism: 2",
                &["pi-", "pi-"],
                &[None, None],
            ),
            (
                "indexed, capped by completions",
                "completions: 2\n  parallelism: 3\n  completionMode: Indexed",
                &["pi-0-", "pi-1-"],
                &[Some("0"), Some("1")],
            ),
            (
                "work queue",
                "parallelism: 3",
                &["pi-", "pi-", "pi-"],
                &[None, None, None],
            ),
            ("suspended", "completions: 2\n  suspend: true", &[], &[]),
        ];
        for (name, spec, prefixes, indexes) in cases {
            let yaml = format!(
                "metadata: {{name: pi, namespace: ns, uid: u1}}\nspec:\n  {spec}\n  template:\n    spec: {{restartPolicy: Never, containers: [{{name: c}}]}}\n"
            );
            let mut job: Job = serde_yaml_ng::from_str(&yaml).expect(name);
            job.generate_selector();
            let pods = first_job_pods(&job, &mut SmallRng::seed_from_u64(1));
            let got: Vec<&str> = pods
                .iter()
                .map(|p| p.metadata.generate_name.as_str())
                .collect();
            assert_eq!(got, prefixes, "{name}");
            for (pod, index) in pods.iter().zip(indexes.iter()) {
                assert!(
                    pod.metadata.name.starts_with(&pod.metadata.generate_name),
                    "{name}"
                );
                assert_eq!(
                    pod.metadata.finalizers,
                    vec![JOB_TRACKING_FINALIZER],
                    "{name}"
                );
                assert_eq!(pod.metadata.labels["batch.kubernetes.io/job-name"], "pi");
                assert_eq!(pod.metadata.labels["controller-uid"], "u1");
                let owner = &pod.metadata.owner_references[0];
                assert_eq!(
                    (owner.api_version.as_str(), owner.kind.as_str()),
                    ("batch/v1", "Job")
                );
                assert_eq!(
                    (owner.controller, owner.block_owner_deletion),
                    (Some(true), Some(true))
                );
                let env: Vec<(&str, &str)> = pod.spec.containers[0]
                    .env
                    .iter()
                    .map(|e| (e.name.as_str(), e.value.as_str()))
                    .collect();
                match index {
                    Some(i) => {
                        assert_eq!(pod.metadata.annotations[JOB_COMPLETION_INDEX], *i, "{name}");
                        assert_eq!(pod.metadata.labels[JOB_COMPLETION_INDEX], *i, "{name}");
                        assert_eq!(env, [(ENV_JOB_COMPLETION_INDEX, *i)], "{name}");
                    }
                    None => {
                        assert!(!pod.metadata.annotations.contains_key(JOB_COMPLETION_INDEX));
                        assert!(env.is_empty(), "{name}");
                    }
                }
            }
        }
    }
}
