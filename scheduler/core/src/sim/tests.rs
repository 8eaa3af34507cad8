//! Scenario tests of `berth sim`: YAML in, placements and messages out, including examples
//! from the Kubernetes documentation with their documented outcomes.

use serde::Deserialize;
use serde_json::json;

use berth_model::model::Object;

use super::*;

/// Parses multi-document YAML into objects by their `kind`.
fn parse(yaml: &str) -> Vec<Object> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .filter_map(|doc| {
            let value = serde_yaml_ng::Value::deserialize(doc).expect("test YAML parses");
            if value.is_null() {
                return None;
            }
            let kind = value
                .get("kind")
                .and_then(|k| k.as_str())
                .expect("test object has a kind")
                .to_string();
            fn typed<T: serde::de::DeserializeOwned>(value: serde_yaml_ng::Value) -> T {
                serde_yaml_ng::from_value(value).expect("test object decodes")
            }
            Some(match kind.as_str() {
                "Pod" => Object::Pod(typed(value)),
                "Node" => Object::Node(typed(value)),
                "PriorityClass" => Object::PriorityClass(typed(value)),
                "Namespace" => Object::Namespace(typed(value)),
                "RuntimeClass" => Object::RuntimeClass(typed(value)),
                "PodDisruptionBudget" => Object::PodDisruptionBudget(typed(value)),
                "Deployment" => Object::Deployment(typed(value)),
                "ReplicaSet" => Object::ReplicaSet(typed(value)),
                "DaemonSet" => Object::DaemonSet(typed(value)),
                "ResourceQuota" => Object::ResourceQuota(typed(value)),
                "Job" => Object::Job(typed(value)),
                "DeviceClass" => Object::DeviceClass(typed(value)),
                "ResourceSlice" => Object::ResourceSlice(typed(value)),
                "ResourceClaim" => Object::ResourceClaim(typed(value)),
                "ResourceClaimTemplate" => Object::ResourceClaimTemplate(typed(value)),
                other => panic!("test kind {other} not handled"),
            })
        })
        .collect()
}

fn simulate(yaml: &str, explain: bool, seed: u64) -> SimOutput {
    run(
        SimInput {
            objects: parse(yaml),
        },
        SimOptions {
            seed,
            explain,
            profiles: Profiles::default(),
        },
    )
    .expect("simulation runs")
}

/// `name → node` of every entry.
fn placements(out: &SimOutput) -> Vec<(String, Option<String>)> {
    out.pods
        .iter()
        .map(|p| (p.name.clone(), p.node.clone()))
        .collect()
}

fn outcome<'a>(out: &'a SimOutput, name: &str) -> &'a PodOutcome {
    out.pods
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no entry for pod {name}: {out:?}"))
}

/// Nodes `n1..=count` with the given cpu, 8Gi of memory, 110 pods and a hostname label.
fn nodes(count: usize, cpu: &str) -> String {
    (1..=count)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}}}}}\n\
                 status: {{capacity: {{cpu: \"{cpu}\", memory: 8Gi, pods: \"110\"}}}}\n"
            )
        })
        .collect()
}

/// A pending pod asking for `cpu`, with extra spec fields in flow style.
fn pod(name: &str, cpu: &str, extra: &str) -> String {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!("{extra}, ")
    };
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: {name}}}}}\n\
         spec: {{{extra}containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}\n"
    )
}

struct Case {
    name: &'static str,
    yaml: String,
    /// Expected node of each listed pod (None: pending).
    want: Vec<(&'static str, Option<&'static str>)>,
}

fn check(cases: Vec<Case>) {
    for case in cases {
        let out = simulate(&case.yaml, false, 1);
        for (pod, want) in &case.want {
            let got = outcome(&out, pod);
            assert_eq!(
                got.node.as_deref(),
                *want,
                "{}: pod {pod} (message {:?})",
                case.name,
                got.message
            );
        }
    }
}

#[test]
fn resources_and_least_allocated() {
    let loaded = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: running}\n\
                  spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: \"2\"}}}]}\n";
    check(vec![
        Case {
            name: "the emptier node wins",
            yaml: format!(
                "{}{loaded}{}{}",
                nodes(2, "4"),
                pod("a", "1", ""),
                pod("b", "1", "")
            ),
            want: vec![("a", Some("n2")), ("b", Some("n2"))],
        },
        Case {
            name: "an exact fit passes",
            yaml: format!("{}{}", nodes(1, "2"), pod("a", "2", "")),
            want: vec![("a", Some("n1"))],
        },
        Case {
            name: "too big for any node",
            yaml: format!("{}{}", nodes(2, "2"), pod("a", "3", "")),
            want: vec![("a", None)],
        },
        Case {
            name: "room runs out",
            yaml: format!(
                "{}{}{}{}",
                nodes(1, "2"),
                pod("a", "1", ""),
                pod("b", "1", ""),
                pod("c", "1", "")
            ),
            want: vec![("a", Some("n1")), ("b", Some("n1")), ("c", None)],
        },
    ]);
    // More than a node's allocatable: no eviction can help (kube marks such a rejection
    // unresolvable).
    let out = simulate(&format!("{}{}", nodes(2, "2"), pod("a", "3", "")), false, 1);
    assert_eq!(
        outcome(&out, "a").message.as_deref(),
        Some(
            "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: \
             2 Preemption is not helpful for scheduling."
        )
    );
    // Room taken by a pod of the same priority: nothing to preempt.
    let out = simulate(
        &format!("{}{loaded}{}", nodes(1, "2"), pod("a", "1", "")),
        false,
        1,
    );
    assert_eq!(
        outcome(&out, "a").message.as_deref(),
        Some(
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: \
             1 No preemption victims found for incoming pod."
        )
    );
}

const TAINTED: &str = r#"
---
apiVersion: v1
kind: Node
metadata: {name: gpu, labels: {kubernetes.io/hostname: gpu}}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: soft, labels: {kubernetes.io/hostname: soft}}
spec:
  taints: [{key: flaky, value: "yes", effect: PreferNoSchedule}]
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: plain, labels: {kubernetes.io/hostname: plain}}
status: {capacity: {cpu: "1", memory: 8Gi, pods: "110"}}
"#;

#[test]
fn taints_and_tolerations() {
    check(vec![
        Case {
            name: "PreferNoSchedule only lowers the score",
            yaml: format!("{TAINTED}{}", pod("a", "500m", "")),
            want: vec![("a", Some("plain"))],
        },
        Case {
            name: "a tainted node takes a pod only with a toleration",
            yaml: format!(
                "{TAINTED}{}",
                pod("a", "2", "tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}], nodeSelector: {kubernetes.io/hostname: gpu}")
            ),
            want: vec![("a", Some("gpu"))],
        },
        Case {
            name: "PreferNoSchedule does not filter",
            yaml: format!("{TAINTED}{}", pod("a", "2", "")),
            want: vec![("a", Some("soft"))],
        },
    ]);
    let out = simulate(&format!("{TAINTED}{}", pod("a", "6", "")), false, 1);
    assert_eq!(
        outcome(&out, "a").message.as_deref(),
        Some(
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, \
             2 Insufficient cpu. preemption: 0/3 nodes are available: \
             3 Preemption is not helpful for scheduling."
        )
    );
}

const LABELLED: &str = r#"
---
apiVersion: v1
kind: Node
metadata: {name: small, labels: {size: "4", disk: hdd}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: big, labels: {size: "16", disk: ssd, gpu: "true"}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: odd, labels: {size: large}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"#;

fn required(expression: &str) -> String {
    format!(
        "affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: \
         {{nodeSelectorTerms: [{{matchExpressions: [{expression}]}}]}}}}}}"
    )
}

#[test]
fn node_selector_and_affinity_operators() {
    let case = |name, expression: &str, want| Case {
        name,
        yaml: format!("{LABELLED}{}", pod("p", "100m", &required(expression))),
        want: vec![("p", want)],
    };
    check(vec![
        Case {
            name: "nodeSelector",
            yaml: format!(
                "{LABELLED}{}",
                pod("p", "100m", "nodeSelector: {disk: ssd}")
            ),
            want: vec![("p", Some("big"))],
        },
        case(
            "In",
            "{key: disk, operator: In, values: [hdd]}",
            Some("small"),
        ),
        case(
            "NotIn matches nodes without the key",
            "{key: size, operator: NotIn, values: [\"4\", \"16\"]}",
            Some("odd"),
        ),
        case("Exists", "{key: gpu, operator: Exists}", Some("big")),
        case(
            "DoesNotExist",
            "{key: disk, operator: DoesNotExist}",
            Some("odd"),
        ),
        case(
            "Gt",
            "{key: size, operator: Gt, values: [\"8\"]}",
            Some("big"),
        ),
        case(
            "Lt",
            "{key: size, operator: Lt, values: [\"8\"]}",
            Some("small"),
        ),
        case(
            "Gt never matches a non-integer label",
            "{key: size, operator: NotIn, values: [\"4\", \"16\"]}, {key: size, operator: Gt, values: [\"1\"]}",
            None,
        ),
        case(
            "Lt never matches a non-integer label",
            "{key: size, operator: NotIn, values: [\"4\", \"16\"]}, {key: size, operator: Lt, values: [\"1000\"]}",
            None,
        ),
        Case {
            name: "nodeSelector and affinity are ANDed",
            yaml: format!(
                "{LABELLED}{}",
                pod(
                    "p",
                    "100m",
                    &format!(
                        "nodeSelector: {{disk: hdd}}, {}",
                        required("{key: gpu, operator: Exists}")
                    )
                )
            ),
            want: vec![("p", None)],
        },
    ]);
    let out = simulate(
        &format!(
            "{LABELLED}{}",
            pod("p", "100m", "nodeSelector: {disk: nvme}")
        ),
        false,
        1,
    );
    assert_eq!(
        outcome(&out, "p").message.as_deref(),
        Some(
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. \
             preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        )
    );
}

const ZONES: &str = r#"
---
apiVersion: v1
kind: Node
metadata: {name: node1, labels: {kubernetes.io/hostname: node1, zone: zoneA}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node2, labels: {kubernetes.io/hostname: node2, zone: zoneA}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node3, labels: {kubernetes.io/hostname: node3, zone: zoneB}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node4, labels: {kubernetes.io/hostname: node4, zone: zoneB}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"#;

/// A running pod labelled `foo: bar` on `node`.
fn running_foo(name: &str, node: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{foo: bar}}}}\n\
         spec: {{nodeName: {node}, containers: [{{name: c}}]}}\n"
    )
}

#[test]
fn inter_pod_affinity() {
    let cache_affinity =
        "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: \
        [{labelSelector: {matchLabels: {app: cache}}, topologyKey: zone}]}}";
    let first = format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: cache, labels: {{app: cache}}}}\n\
         spec: {{{cache_affinity}, nodeSelector: {{zone: zoneB}}, containers: [{{name: c}}]}}\n"
    );
    let anti = |name: &str| {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: solo}}}}\n\
             spec: {{affinity: {{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: \
             [{{labelSelector: {{matchLabels: {{app: solo}}}}, topologyKey: zone}}]}}}}, containers: [{{name: c}}]}}\n"
        )
    };
    // The first pod of the group matches its own affinity term and may go anywhere (its
    // nodeSelector sends it to zoneB); the follower must then land in zoneB too.
    // Listed first, web fails (no cache pod yet, and it does not match its own term), then
    // is retried when cache is bound, as the live queue would retry it.
    let out = simulate(
        &format!("{ZONES}{}{first}", pod("web", "100m", cache_affinity)),
        false,
        1,
    );
    let web = outcome(&out, "web").node.clone();
    assert!(
        matches!(web.as_deref(), Some("node3" | "node4")),
        "web retried: {web:?}"
    );
    let out = simulate(
        &format!("{ZONES}{first}{}", pod("web", "100m", cache_affinity)),
        false,
        1,
    );
    let cache = outcome(&out, "cache").node.clone();
    assert!(
        matches!(cache.as_deref(), Some("node3" | "node4")),
        "cache: {cache:?}"
    );
    let web = outcome(&out, "web").node.clone();
    assert!(
        matches!(web.as_deref(), Some("node3" | "node4")),
        "web follows cache into zoneB, got {web:?}"
    );
    let out = simulate(
        &format!("{ZONES}{}{}{}", anti("s1"), anti("s2"), anti("s3")),
        false,
        1,
    );
    let zone = |node: &Option<String>| match node.as_deref() {
        Some("node1" | "node2") => "zoneA",
        Some("node3" | "node4") => "zoneB",
        _ => "none",
    };
    let s1 = zone(&outcome(&out, "s1").node);
    let s2 = zone(&outcome(&out, "s2").node);
    assert!(
        s1 != "none" && s2 != "none" && s1 != s2,
        "anti-affinity splits zones: {s1} {s2}"
    );
    assert_eq!(outcome(&out, "s3").node, None, "no third zone");
}

#[test]
fn topology_spread_from_the_kubernetes_docs() {
    // "Pod Topology Spread Constraints": four nodes in two zones, three `foo: bar` pods on
    // node1, node2 and node3.
    let existing = format!(
        "{}{}{}",
        running_foo("p1", "node1"),
        running_foo("p2", "node2"),
        running_foo("p3", "node3")
    );
    let constraint = |key: &str| {
        format!("{{maxSkew: 1, topologyKey: {key}, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{foo: bar}}}}}}")
    };
    let mypod = |constraints: String| {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: mypod, labels: {{foo: bar}}}}\n\
             spec: {{topologySpreadConstraints: [{constraints}], containers: [{{name: c}}]}}\n"
        )
    };
    // One constraint on zones: mypod must go to zoneB (node3 or node4).
    let out = simulate(
        &format!("{ZONES}{existing}{}", mypod(constraint("zone"))),
        false,
        1,
    );
    let node = outcome(&out, "mypod").node.clone();
    assert!(
        matches!(node.as_deref(), Some("node3" | "node4")),
        "one constraint: {node:?}"
    );
    // Two constraints, zones and hostnames: only node4 satisfies both.
    let both = format!(
        "{}, {}",
        constraint("zone"),
        constraint("kubernetes.io/hostname")
    );
    let out = simulate(&format!("{ZONES}{existing}{}", mypod(both)), false, 1);
    assert_eq!(
        outcome(&out, "mypod").node.as_deref(),
        Some("node4"),
        "two constraints"
    );

    // minDomains above the number of zones makes the global minimum 0: with one pod in each
    // zone, a maxSkew of 1 leaves no room.
    let spread = "topologySpreadConstraints: [{maxSkew: 1, minDomains: 3, topologyKey: zone, \
                  whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {foo: bar}}}]";
    let yaml = format!(
        "{ZONES}{}{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: extra, labels: {{foo: bar}}}}\n\
         spec: {{{spread}, containers: [{{name: c}}]}}\n",
        running_foo("a", "node1"),
        running_foo("b", "node3")
    );
    let out = simulate(&yaml, false, 1);
    let extra = outcome(&out, "extra");
    assert_eq!(extra.node, None);
    assert!(
        extra.message.as_deref().is_some_and(|m| m.starts_with(
            "0/4 nodes are available: 4 node(s) didn't match pod topology spread constraints."
        )),
        "{:?}",
        extra.message
    );
}

const CLASSES: &str = r#"
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000000
description: "This priority class should be used for XYZ service pods only."
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority-nonpreempting}
value: 1000000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
"#;

/// A pod of a priority class asking for `cpu`, optionally already bound.
fn classed(name: &str, class: &str, cpu: &str, node: &str) -> String {
    let bound = if node.is_empty() {
        String::new()
    } else {
        format!("nodeName: {node}, ")
    };
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: {name}}}}}\n\
         spec: {{{bound}priorityClassName: {class}, containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}\n"
    )
}

#[test]
fn queue_order_is_priority_then_arrival() {
    let yaml = format!(
        "{CLASSES}{}{}{}{}",
        nodes(1, "2"),
        classed("early-low", "low", "1", ""),
        classed("late-high", "high-priority", "1", ""),
        classed("later-low", "low", "1", "")
    );
    check(vec![Case {
        name: "one slot for two low pods; the high pod goes first",
        yaml,
        want: vec![
            ("early-low", Some("n1")),
            ("late-high", Some("n1")),
            ("later-low", None),
        ],
    }]);
}

#[test]
fn preemption_evicts_lower_priority_pods() {
    let yaml = format!(
        "{CLASSES}{}{}{}",
        nodes(1, "2"),
        classed("low-1", "low", "2", "n1"),
        classed("nginx", "high-priority", "1", "")
    );
    let out = simulate(&yaml, false, 1);
    let nginx = outcome(&out, "nginx");
    assert_eq!(nginx.node.as_deref(), Some("n1"));
    assert_eq!(nginx.preempted, vec!["default/low-1".to_string()]);
    assert_eq!(nginx.message, None);
    assert_eq!(out.evicted, vec!["default/low-1".to_string()]);
    assert_eq!(out.pods.len(), 1, "the bound victim has no entry");

    // The docs' non-preempting class: the pod waits instead of preempting.
    let yaml = format!(
        "{CLASSES}{}{}{}",
        nodes(1, "2"),
        classed("low-1", "low", "2", "n1"),
        classed("polite", "high-priority-nonpreempting", "1", "")
    );
    let out = simulate(&yaml, false, 1);
    let polite = outcome(&out, "polite");
    assert_eq!(polite.node, None);
    assert_eq!(
        polite.message.as_deref(),
        Some("0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.")
    );
    assert!(out.evicted.is_empty());

    // Equal priority never preempts.
    let yaml = format!(
        "{CLASSES}{}{}{}",
        nodes(1, "2"),
        classed("low-1", "low", "2", "n1"),
        classed("low-2", "low", "1", "")
    );
    let out = simulate(&yaml, false, 1);
    assert_eq!(outcome(&out, "low-2").node, None);
    assert!(out.evicted.is_empty());
}

#[test]
fn preemption_victims_of_pending_pods_and_nominations() {
    // Two high pods each need one low pod's room. The first preempts on one node; the
    // second must not take that room while the first waits, and preempts on the other node.
    let yaml = format!(
        "{CLASSES}{}{}{}{}{}",
        nodes(2, "2"),
        classed("low-1", "low", "2", "n1"),
        classed("low-2", "low", "2", "n2"),
        classed("high-1", "high-priority", "2", ""),
        classed("high-2", "high-priority", "2", "")
    );
    let out = simulate(&yaml, false, 1);
    let h1 = outcome(&out, "high-1");
    let h2 = outcome(&out, "high-2");
    assert!(h1.node.is_some() && h2.node.is_some(), "{out:?}");
    assert_ne!(h1.node, h2.node);
    assert_eq!(h1.preempted.len(), 1);
    assert_eq!(h2.preempted.len(), 1);
    let mut evicted = out.evicted.clone();
    evicted.sort();
    assert_eq!(
        evicted,
        vec!["default/low-1".to_string(), "default/low-2".to_string()]
    );

    // A pod bound during the run can be a victim later: its entry loses its node. `high`
    // needs an `anchor` pod in its zone, so it fails first; `anchor` and `filler` are then
    // bound, and `high` is retried and preempts `filler`.
    let zone_nodes = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {kubernetes.io/hostname: n1, zone: z}}\n\
        status: {capacity: {cpu: \"2\", memory: 8Gi, pods: \"110\"}}\n\
        ---\napiVersion: v1\nkind: Node\nmetadata: {name: n2, labels: {kubernetes.io/hostname: n2, zone: z}}\n\
        status: {capacity: {cpu: \"2\", memory: 8Gi, pods: \"110\"}}\n";
    let high = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: high}\nspec: {priorityClassName: high-priority, \
        nodeSelector: {kubernetes.io/hostname: n1}, affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: \
        [{labelSelector: {matchLabels: {app: anchor}}, topologyKey: zone}]}}, \
        containers: [{name: c, resources: {requests: {cpu: \"1\"}}}]}\n";
    let placed = |name: &str, node: &str, cpu: &str| {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: {name}}}}}\n\
             spec: {{priorityClassName: low, nodeSelector: {{kubernetes.io/hostname: {node}}}, \
             containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}\n"
        )
    };
    let yaml = format!(
        "{CLASSES}{zone_nodes}{high}{}{}",
        placed("anchor", "n2", "1"),
        placed("filler", "n1", "2")
    );
    let out = simulate(&yaml, false, 1);
    assert_eq!(outcome(&out, "anchor").node.as_deref(), Some("n2"));
    assert_eq!(outcome(&out, "high").node.as_deref(), Some("n1"));
    assert_eq!(
        outcome(&out, "high").preempted,
        vec!["default/filler".to_string()]
    );
    let filler = outcome(&out, "filler");
    assert_eq!(filler.node, None);
    assert_eq!(
        filler.message.as_deref(),
        Some("preempted by default/high on node n1")
    );
    assert_eq!(out.evicted, vec!["default/filler".to_string()]);
}

#[test]
fn disruption_budgets_steer_preemption() {
    // Both nodes hold one low pod; the one on n1 is protected by a budget, so the high pod
    // preempts the one on n2.
    let yaml = format!(
        "{CLASSES}{}{}{}{}{}",
        nodes(2, "2"),
        classed("guarded", "low", "2", "n1"),
        classed("free", "low", "2", "n2"),
        "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep}\n\
         spec: {minAvailable: 1, selector: {matchLabels: {app: guarded}}}\n",
        classed("high", "high-priority", "2", "")
    );
    let out = simulate(&yaml, false, 1);
    assert_eq!(outcome(&out, "high").node.as_deref(), Some("n2"));
    assert_eq!(out.evicted, vec!["default/free".to_string()]);
}

#[test]
fn admission_refusals() {
    struct Refusal {
        name: &'static str,
        yaml: String,
        want: &'static str,
    }
    let cases = [
        Refusal {
            name: "unknown PriorityClass",
            yaml: format!("{}{}", nodes(1, "2"), classed("p", "missing", "1", "")),
            want: "pods \"p\" is forbidden: no PriorityClass with name missing was found",
        },
        Refusal {
            name: "unknown schedulerName",
            yaml: format!("{}{}", nodes(1, "2"), pod("p", "1", "schedulerName: my-scheduler")),
            want: "no scheduler profile named \"my-scheduler\"",
        },
        Refusal {
            name: "unknown RuntimeClass",
            yaml: format!("{}{}", nodes(1, "2"), pod("p", "1", "runtimeClassName: kata")),
            want: "pods \"p\" is forbidden: pod rejected: RuntimeClass \"kata\" not found",
        },
        Refusal {
            name: "priority written in the spec",
            yaml: format!("{CLASSES}{}{}", nodes(1, "2"), pod("p", "1", "priorityClassName: low, priority: 5")),
            want: "pods \"p\" is forbidden: the integer value of priority (5) must not be provided in pod spec; \
                   priority admission controller computed 10 from the given PriorityClass name",
        },
        Refusal {
            name: "invalid pod",
            yaml: format!("{}{}", nodes(1, "2"), pod("p", "-1", "")),
            want: "Pod \"p\" is invalid: ",
        },
    ];
    for case in cases {
        let out = simulate(&case.yaml, false, 1);
        let p = outcome(&out, "p");
        assert_eq!(p.node, None, "{}", case.name);
        let message = p.message.clone().unwrap_or_default();
        assert!(message.starts_with(case.want), "{}: {message}", case.name);
    }
}

#[test]
fn global_default_and_system_classes() {
    let yaml = format!(
        "{}---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: everyone}}\nvalue: 100\nglobalDefault: true\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {{name: victim}}\n\
         spec: {{nodeName: n1, priority: 50, containers: [{{name: c, resources: {{requests: {{cpu: \"2\"}}}}}}]}}\n{}{}",
        nodes(1, "2"),
        pod("defaulted", "1", ""),
        pod("critical", "1", "priorityClassName: system-cluster-critical")
    );
    let out = simulate(&yaml, false, 1);
    // Both pending pods outrank the running pod (priority 50): the critical pod goes first
    // and preempts it; the defaulted pod (100) then takes the remaining room.
    assert_eq!(outcome(&out, "critical").node.as_deref(), Some("n1"));
    assert_eq!(
        outcome(&out, "critical").preempted,
        vec!["default/victim".to_string()]
    );
    assert_eq!(outcome(&out, "defaulted").node.as_deref(), Some("n1"));
}

#[test]
fn runtime_class_overhead_counts() {
    let rc = "---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\n\
              overhead: {podFixed: {cpu: 500m}}\nscheduling: {nodeSelector: {runtime: kata}}\n";
    let node = "---\napiVersion: v1\nkind: Node\nmetadata: {name: k1, labels: {runtime: kata}}\n\
                status: {capacity: {cpu: \"2\", memory: 8Gi, pods: \"110\"}}\n";
    check(vec![
        Case {
            name: "overhead pushes the pod over capacity",
            yaml: format!("{rc}{node}{}", pod("p", "1600m", "runtimeClassName: kata")),
            want: vec![("p", None)],
        },
        Case {
            name: "without overhead it fits",
            yaml: format!("{rc}{node}{}", pod("p", "1600m", "")),
            want: vec![("p", Some("k1"))],
        },
        Case {
            name: "overhead and request fit exactly",
            yaml: format!("{rc}{node}{}", pod("p", "1500m", "runtimeClassName: kata")),
            want: vec![("p", Some("k1"))],
        },
        Case {
            name: "the class's nodeSelector is merged",
            yaml: format!(
                "{rc}{}{}",
                nodes(1, "4"),
                pod("p", "100m", "runtimeClassName: kata")
            ),
            want: vec![("p", None)],
        },
    ]);
}

const WEB_DEPLOYMENT: &str = r#"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx, resources: {requests: {cpu: 100m}}}]
"#;

#[test]
fn deployments_expand_into_replica_set_pods() {
    let catalog = input::Catalog::read(parse(WEB_DEPLOYMENT), 1).expect("reads");
    assert_eq!(catalog.pods.len(), 3);
    let template = match &parse(WEB_DEPLOYMENT)[0] {
        Object::Deployment(d) => d.spec.template.clone(),
        other => panic!("not a deployment: {other:?}"),
    };
    let hash = crate::workloads::pod_template_hash(&template);
    let rs_name = format!("web-{hash}");
    for pod in &catalog.pods {
        let suffix = pod
            .metadata
            .name
            .strip_prefix(&format!("{rs_name}-"))
            .unwrap_or_else(|| panic!("{} is named after {rs_name}", pod.metadata.name));
        assert_eq!(suffix.len(), 5);
        assert_eq!(pod.metadata.namespace, "default");
        assert_eq!(pod.metadata.labels.get("pod-template-hash"), Some(&hash));
        let owner = &pod.metadata.owner_references[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("ReplicaSet", rs_name.as_str())
        );
        assert_eq!(owner.controller, Some(true));
    }
    // The replicas spread over three nodes.
    let out = simulate(&format!("{}{WEB_DEPLOYMENT}", nodes(3, "4")), false, 1);
    let mut used: Vec<Option<String>> = out.pods.iter().map(|p| p.node.clone()).collect();
    used.sort();
    used.dedup();
    assert_eq!(used.len(), 3, "{out:?}");
}

#[test]
fn daemon_sets_run_one_pod_per_admitted_node() {
    let yaml = format!(
        "{}---\napiVersion: v1\nkind: Node\nmetadata: {{name: tainted}}\n\
         spec: {{taints: [{{key: dedicated, value: db, effect: NoSchedule}}], unschedulable: false}}\n\
         status: {{capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}}}\n\
         ---\napiVersion: v1\nkind: Node\nmetadata: {{name: cordoned}}\nspec: {{unschedulable: true}}\n\
         status: {{capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}}}\n\
         ---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent, namespace: kube-system}}\n\
         spec:\n  selector: {{matchLabels: {{app: agent}}}}\n  template:\n    metadata: {{labels: {{app: agent}}}}\n\
         \x20   spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]}}\n",
        nodes(2, "4")
    );
    let out = simulate(&yaml, false, 1);
    let mut got: Vec<String> = out
        .pods
        .iter()
        .map(|p| {
            assert!(
                p.name.starts_with("agent-") && p.name.len() == "agent-".len() + 5,
                "{}",
                p.name
            );
            assert_eq!(p.namespace, "kube-system");
            p.node
                .clone()
                .unwrap_or_else(|| panic!("{} pending: {:?}", p.name, p.message))
        })
        .collect();
    got.sort();
    assert_eq!(got, vec!["cordoned", "n1", "n2"], "not on the tainted node");
}

#[test]
fn jobs_expand_into_their_first_parallelism_pods() {
    // (case, job spec, want pod name prefixes)
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "capped by parallelism",
            "completions: 10, parallelism: 2",
            &["pi-", "pi-"],
        ),
        (
            "indexed",
            "completions: 2, parallelism: 5, completionMode: Indexed",
            &["pi-0-", "pi-1-"],
        ),
        ("suspended", "completions: 3, suspend: true", &[]),
    ];
    for (name, spec, want) in cases {
        let yaml = format!(
            "{}---\napiVersion: batch/v1\nkind: Job\nmetadata: {{name: pi}}\nspec:\n  {}\n  \
             template:\n    spec: {{restartPolicy: Never, containers: [{{name: c}}]}}\n",
            nodes(1, "4"),
            spec.replace(", ", "\n  ")
        );
        let out = simulate(&yaml, false, 1);
        let mut got: Vec<String> = out
            .pods
            .iter()
            .map(|p| {
                assert_eq!(p.node.as_deref(), Some("n1"), "{name}: {}", p.name);
                p.name[..p.name.len() - 5].to_string()
            })
            .collect();
        got.sort();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn explain_reports_every_node() {
    let yaml = format!("{TAINTED}{}", pod("a", "2", ""));
    let out = simulate(&yaml, true, 1);
    let a = outcome(&out, "a");
    assert_eq!(a.node.as_deref(), Some("soft"));
    let nodes = a.nodes.as_ref().expect("explained");
    assert_eq!(nodes.len(), 3);
    assert_eq!(
        nodes["gpu"],
        NodeOutcome::rejected(vec!["node(s) had untolerated taint {dedicated: gpu}".into()])
    );
    assert_eq!(
        nodes["plain"],
        NodeOutcome::rejected(vec!["Insufficient cpu".into()])
    );
    assert!(nodes["soft"].feasible && nodes["soft"].score.is_some());

    // A pending pod explains its last failure; a refused pod has no verdicts.
    let yaml = format!(
        "{TAINTED}{}{}",
        pod("big", "8", ""),
        pod("odd", "1", "schedulerName: nope")
    );
    let out = simulate(&yaml, true, 1);
    let big = outcome(&out, "big").nodes.as_ref().expect("explained");
    assert_eq!(big.len(), 3);
    assert!(big.values().all(|n| !n.feasible));
    assert_eq!(outcome(&out, "odd").nodes, Some(BTreeMap::new()));

    // Explaining does not change placements.
    let yaml = format!("{ZONES}{WEB_DEPLOYMENT}{}", pod("x", "1", ""));
    let plain = simulate(&yaml, false, 9);
    let explained = simulate(&yaml, true, 9);
    assert_eq!(placements(&plain), placements(&explained));
}

#[test]
fn json_shape_is_the_contract() {
    let web = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-1}\nspec: {priorityClassName: high-priority, \
               nodeSelector: {kubernetes.io/hostname: n2}, containers: [{name: c, resources: {requests: {cpu: \"2\"}}}]}\n";
    let yaml = format!(
        "{CLASSES}{}{}{}{web}",
        nodes(2, "2"),
        classed("low-1", "low", "2", "n1"),
        classed("low-2", "low", "2", "n2"),
    );
    let out = simulate(&format!("{yaml}{}", pod("huge", "9", "")), true, 1);
    let value = serde_json::to_value(&out).expect("serializes");
    let web = &value["pods"][0];
    assert_eq!(
        web,
        &json!({
            "namespace": "default",
            "name": "web-1",
            "node": "n2",
            "preempted": ["default/low-2"],
            "message": null,
            "nodes": {
                "n1": {"feasible": false, "reasons": ["node(s) didn't match Pod's node affinity/selector"]},
                "n2": {"feasible": true, "score": web["nodes"]["n2"]["score"].clone()}
            },
            // The pod preempted: first nothing fitted, then it went to its nominated node.
            "attempts": [
                {
                    "nodes": {
                        "n1": {"feasible": false, "reasons": ["node(s) didn't match Pod's node affinity/selector"]},
                        "n2": {"feasible": false, "reasons": ["Insufficient cpu"]}
                    },
                    "preempted": ["default/low-2"],
                    "nominated": "n2"
                },
                {
                    "nodes": {
                        "n1": {"feasible": false, "reasons": ["node(s) didn't match Pod's node affinity/selector"]},
                        "n2": {"feasible": true, "score": web["nodes"]["n2"]["score"].clone()}
                    },
                    "preempted": [],
                    "nominated": null
                }
            ]
        })
    );
    assert!(web["nodes"]["n2"]["score"].is_i64());
    assert_eq!(value["evicted"], json!(["default/low-2"]));
    let huge = &value["pods"][1];
    assert_eq!(huge["node"], serde_json::Value::Null);
    assert_eq!(huge["preempted"], json!([]));
    assert!(huge["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("0/2 nodes are available: 2 Insufficient cpu.")));
    let keys: Vec<&String> = value.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        vec!["evicted", "pods"],
        "notes are not part of the JSON"
    );
    // Key order as design.md writes it.
    let text = serde_json::to_string(&out.pods[0]).expect("serializes");
    let positions: Vec<usize> = [
        "\"namespace\"",
        "\"name\"",
        "\"node\"",
        "\"preempted\"",
        "\"message\"",
        "\"nodes\"",
        "\"attempts\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} in {text}")))
    .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    // Without explain there is no `nodes` key, and no `attempts`.
    let plain = serde_json::to_value(simulate(&yaml, false, 1)).expect("serializes");
    assert!(plain["pods"][0].get("nodes").is_none());
    assert!(plain["pods"][0].get("attempts").is_none());
}

#[test]
fn same_seed_same_result() {
    let yaml = format!(
        "{ZONES}{WEB_DEPLOYMENT}{}{}{}",
        pod("a", "1", ""),
        pod("b", "1", ""),
        pod("c", "1", "")
    );
    let first = simulate(&yaml, true, 42);
    for _ in 0..3 {
        assert_eq!(simulate(&yaml, true, 42), first);
    }
}

#[test]
fn notes_for_objects_left_out() {
    let yaml = format!(
        "{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: ghost}}\nspec: {{nodeName: nowhere, containers: [{{name: c}}]}}\n\
         ---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {{name: q}}\nspec: {{hard: {{pods: \"10\"}}}}\n",
        nodes(1, "1")
    );
    let out = simulate(&yaml, false, 1);
    assert!(out.pods.is_empty());
    assert_eq!(
        out.notes,
        vec![
            "skipping ResourceQuota default/q (quotas are not enforced by the simulation)"
                .to_string(),
            "pod default/ghost is bound to node nowhere, which does not exist; left out"
                .to_string(),
        ]
    );
}

#[test]
fn input_errors_fail_the_run() {
    struct Bad {
        name: &'static str,
        yaml: String,
        want: &'static str,
    }
    let cases = [
        Bad {
            name: "duplicate node",
            yaml: format!("{}{}", nodes(1, "1"), nodes(1, "1")),
            want: "Node n1 appears more than once",
        },
        Bad {
            name: "duplicate pod",
            yaml: format!("{}{}", pod("a", "1", ""), pod("a", "1", "")),
            want: "Pod default/a appears more than once",
        },
        Bad {
            name: "two global defaults",
            yaml: "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\nglobalDefault: true\n\
                   ---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: b}\nvalue: 2\nglobalDefault: true\n"
                .to_string(),
            want: "PriorityClass b: PriorityClass a is already marked as default; only one default can exist",
        },
    ];
    for case in cases {
        let err = run(
            SimInput {
                objects: parse(&case.yaml),
            },
            SimOptions::default(),
        )
        .expect_err(case.name);
        assert_eq!(err.to_string(), case.want, "{}", case.name);
    }
}

#[test]
fn assign_pods_to_nodes_docs_examples() {
    // "Assign Pods to Nodes": nginx with `nodeSelector: {disktype: ssd}` lands on the node
    // labelled disktype=ssd.
    let nodes_yaml = r#"
---
apiVersion: v1
kind: Node
metadata: {name: worker0, labels: {disktype: ssd, topology.kubernetes.io/zone: antarctica-east1}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: worker1, labels: {topology.kubernetes.io/zone: antarctica-west1, another-node-label-key: another-node-label-value, label-1: key-1}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: worker2, labels: {topology.kubernetes.io/zone: antarctica-west1, label-2: key-2}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: worker3, labels: {topology.kubernetes.io/zone: arctic-1}}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"#;
    let nginx = r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: nginx
  labels: {env: test}
spec:
  containers:
  - name: nginx
    image: nginx
    imagePullPolicy: IfNotPresent
  nodeSelector:
    disktype: ssd
"#;
    // "Node affinity": required zone in the two antarctica zones, preferring the node with
    // another-node-label-key.
    let with_node_affinity = r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: with-node-affinity
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: topology.kubernetes.io/zone
            operator: In
            values:
            - antarctica-east1
            - antarctica-west1
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference:
          matchExpressions:
          - key: another-node-label-key
            operator: In
            values:
            - another-node-label-value
  containers:
  - name: with-node-affinity
    image: registry.k8s.io/pause:3.8
"#;
    // "Node affinity weight": the heavier preference wins.
    let with_affinity_preferred_weight = r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: with-affinity-preferred-weight
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: kubernetes.io/os
            operator: DoesNotExist
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference:
          matchExpressions:
          - key: label-1
            operator: In
            values:
            - key-1
      - weight: 50
        preference:
          matchExpressions:
          - key: label-2
            operator: In
            values:
            - key-2
  containers:
  - name: with-node-affinity
    image: registry.k8s.io/pause:3.8
"#;
    check(vec![
        Case {
            name: "nodeSelector disktype=ssd",
            yaml: format!("{nodes_yaml}{nginx}"),
            want: vec![("nginx", Some("worker0"))],
        },
        Case {
            name: "required zones, preferred label",
            yaml: format!("{nodes_yaml}{with_node_affinity}"),
            want: vec![("with-node-affinity", Some("worker1"))],
        },
        Case {
            name: "preference weights",
            yaml: format!("{nodes_yaml}{with_affinity_preferred_weight}"),
            want: vec![("with-affinity-preferred-weight", Some("worker2"))],
        },
    ]);
}

#[test]
fn taints_docs_example() {
    // "Taints and Tolerations": `kubectl taint nodes node1 key1=value1:NoSchedule`; a pod
    // with the matching toleration may use node1, one without it may not.
    let node1 = r#"
---
apiVersion: v1
kind: Node
metadata: {name: node1}
spec:
  taints: [{key: key1, value: value1, effect: NoSchedule}]
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"#;
    let tolerating = r#"
---
apiVersion: v1
kind: Pod
metadata:
  name: nginx
  labels:
    env: test
spec:
  containers:
  - name: nginx
    image: nginx
    imagePullPolicy: IfNotPresent
  tolerations:
  - key: "key1"
    operator: "Exists"
    effect: "NoSchedule"
"#;
    check(vec![
        Case {
            name: "toleration with Exists",
            yaml: format!("{node1}{tolerating}"),
            want: vec![("nginx", Some("node1"))],
        },
        Case {
            name: "no toleration",
            yaml: format!("{node1}{}", pod("plain", "100m", "")),
            want: vec![("plain", None)],
        },
        Case {
            name: "toleration with Equal and the value",
            yaml: format!(
                "{node1}{}",
                pod("eq", "100m", "tolerations: [{key: key1, operator: Equal, value: value1, effect: NoSchedule}]")
            ),
            want: vec![("eq", Some("node1"))],
        },
        Case {
            name: "toleration of another value",
            yaml: format!(
                "{node1}{}",
                pod("other", "100m", "tolerations: [{key: key1, operator: Equal, value: value2, effect: NoSchedule}]")
            ),
            want: vec![("other", None)],
        },
    ]);
}

/// The GPU example of the README: one node with an a100 shared by capacity (80Gi, 10Gi
/// steps) and a t4.
const GPU_CLUSTER: &str = "\
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == \"gpu.berth.dev\"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.berth.dev
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    allowMultipleAllocations: true
    attributes: {model: {string: a100}}
    capacity:
      memory: {value: 80Gi, requestPolicy: {default: 80Gi, validRange: {min: 10Gi, step: 10Gi}}}
  - name: gpu-1
    attributes: {model: {string: t4}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: half}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu
          selectors:
          - cel: {expression: 'device.attributes[\"gpu.berth.dev\"].model == \"a100\"'}
          capacity: {requests: {memory: 35Gi}}
";

fn gpu_pod(name: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  resourceClaims:\n  - {{name: gpu, resourceClaimTemplateName: half}}\n  \
         containers:\n  - name: main\n    image: app\n    resources: {{claims: [{{name: gpu}}]}}\n"
    )
}

#[test]
fn claims_from_templates_share_a_gpu_by_capacity() {
    let yaml = format!(
        "{}{GPU_CLUSTER}{}{}{}",
        nodes(2, "4"),
        gpu_pod("a"),
        gpu_pod("b"),
        gpu_pod("c")
    );
    let out = simulate(&yaml, false, 1);
    assert_eq!(
        placements(&out),
        [
            ("a".to_string(), Some("n1".to_string())),
            ("b".to_string(), Some("n1".to_string())),
            ("c".to_string(), None),
        ]
    );
    let json = serde_json::to_value(&outcome(&out, "a").claims).expect("JSON");
    let claim = json[0]["claim"].as_str().expect("claim name").to_string();
    assert!(claim.starts_with("default/a-gpu-"), "{json}");
    // 35Gi rounds up to the 40Gi step.
    assert_eq!(json[0]["name"], "gpu");
    assert_eq!(json[0]["devices"][0]["device"], "gpu-0");
    assert_eq!(
        json[0]["devices"][0]["consumedCapacity"],
        json!({"memory": "40Gi"})
    );
    assert!(json[0]["devices"][0]["shareID"].is_string(), "{json}");
    assert_eq!(
        outcome(&out, "c").message.as_deref(),
        Some(
            "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, \
             preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )
    );
    assert!(outcome(&out, "c").claims.is_empty());
}

/// A pending pod whose one container has `image` and, if given, takes host port `port`.
fn image_pod(name: &str, image: &str, port: Option<u16>) -> String {
    let ports = port.map_or(String::new(), |p| {
        format!(", ports: [{{containerPort: 80, hostPort: {p}}}]")
    });
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\n\
         spec: {{containers: [{{name: c, image: \"{image}\"{ports}}}]}}\n"
    )
}

#[test]
fn host_ports_and_node_images() {
    let with_image = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n3}\n\
                      status: {capacity: {cpu: \"4\", memory: 8Gi, pods: \"110\"}, \
                      images: [{names: [\"registry.example/app:v2\"], sizeBytes: 943718400}]}\n";
    check(vec![Case {
        name: "the node that has the image is preferred",
        yaml: format!(
            "{}{with_image}{}",
            nodes(2, "4"),
            image_pod("a", "registry.example/app:v2", None)
        ),
        want: vec![("a", Some("n3"))],
    }]);
    let three = format!(
        "{}{}{}{}",
        nodes(2, "4"),
        image_pod("p1", "web", Some(8080)),
        image_pod("p2", "web", Some(8080)),
        image_pod("p3", "web", Some(8080))
    );
    let out = simulate(&three, false, 1);
    let (p1, p2) = (outcome(&out, "p1"), outcome(&out, "p2"));
    assert!(
        p1.node.is_some() && p2.node.is_some() && p1.node != p2.node,
        "{out:?}"
    );
    assert_eq!(
        outcome(&out, "p3").node,
        None,
        "one pod per host port and node"
    );
    let yaml = format!(
        "{}{}{}",
        nodes(1, "4"),
        image_pod("p1", "web", Some(8080)),
        image_pod("p2", "web", Some(8080))
    );
    let out = simulate(&yaml, false, 1);
    assert_eq!(
        outcome(&out, "p2").message.as_deref(),
        Some(
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. \
             preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        )
    );
}

/// A node with 4 cpu and the given `status.images` (flow-style list items).
fn image_node(name: &str, images: &[(&str, i64)]) -> String {
    let images: Vec<String> = images
        .iter()
        .map(|(names, mb)| format!("{{names: [{names}], sizeBytes: {}}}", mb << 20))
        .collect();
    format!(
        "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n\
         status: {{capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}, images: [{}]}}\n",
        images.join(", ")
    )
}

#[test]
fn image_locality_scores_match_kubes_tests() {
    // kube's image_locality_test.go (TestImageLocalityPriority), worked out there by hand:
    // node1 has gcr.io/40 (40MB), gcr.io/300 (300MB), gcr.io/2000 (2000MB); node2 has
    // gcr.io/250 (250MB) and gcr.io/10 (10MB). With ImageLocality the only score plugin
    // (weight 1), a node's score in the explained output is ImageLocality's.
    let config = "\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    preScore: {disabled: [{name: '*'}], enabled: [{name: ImageLocality}]}
    score: {disabled: [{name: '*'}], enabled: [{name: ImageLocality, weight: 1}]}
";
    let profiles = Profiles::from_yaml(config).expect("the profile");
    let cluster = format!(
        "{}{}",
        image_node(
            "node1",
            &[
                ("'gcr.io/40:latest', 'gcr.io/40:v1', 'gcr.io/40:v1'", 40),
                ("'gcr.io/300:latest', 'gcr.io/300:v1'", 300),
                ("'gcr.io/2000:latest'", 2000),
            ]
        ),
        image_node(
            "node2",
            &[
                ("'gcr.io/250:latest'", 250),
                ("'gcr.io/10:latest', 'gcr.io/10:v1'", 10),
            ]
        )
    );
    // (case, the pod's two images, node1's and node2's scores)
    let cases: &[(&str, [&str; 2], [i64; 2])] = &[
        // node1: 40M/2 < 23M: 0; node2: 100 * (250M/2 - 23M) / (1000M * 2 - 23M) = 5.
        (
            "two images spread on two nodes, prefer the larger image one",
            ["gcr.io/40", "gcr.io/250"],
            [0, 5],
        ),
        // node1: 100 * ((40M + 300M)/2 - 23M) / (1000M * 2 - 23M) = 7.
        (
            "two images on one node, prefer this node",
            ["gcr.io/40", "gcr.io/300"],
            [7, 0],
        ),
        // node1: 100 * (2000M/2 - 23M) / (1000M * 2 - 23M) = 49; node2: 10M/2 < 23M: 0.
        (
            "the thresholds clamp",
            ["gcr.io/2000", "gcr.io/10"],
            [49, 0],
        ),
    ];
    for (name, images, want) in cases {
        let pod = format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\n\
             spec: {{containers: [{{name: a, image: \"{}\"}}, {{name: b, image: \"{}\"}}]}}\n",
            images[0], images[1]
        );
        let out = run(
            SimInput {
                objects: parse(&format!("{cluster}{pod}")),
            },
            SimOptions {
                seed: 1,
                explain: true,
                profiles: profiles.clone(),
            },
        )
        .expect("simulation runs");
        let nodes = outcome(&out, "p").nodes.as_ref().expect("explained");
        let got = [nodes["node1"].score, nodes["node2"].score];
        assert_eq!(got, want.map(Some), "{name}");
    }
}

#[test]
fn host_port_conflicts_match_kubes_tests() {
    // Rows of kube's node_ports_test.go (TestNodePorts): the ports of a pod running on the
    // one node and of the pending pod, as (protocol, hostIP, hostPort).
    type Ports = &'static [(&'static str, &'static str, u16)];
    let ports = |list: Ports| {
        list.iter()
            .enumerate()
            .map(|(i, (protocol, ip, port))| {
                format!("{{containerPort: {}, hostPort: {port}, protocol: {protocol}, hostIP: \"{ip}\"}}", 1000 + i)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cases: &[(&str, Ports, Ports, bool)] = &[
        (
            "other port",
            &[("UDP", "127.0.0.1", 8080)],
            &[("UDP", "127.0.0.1", 9090)],
            true,
        ),
        (
            "same udp port",
            &[("UDP", "127.0.0.1", 8080)],
            &[("UDP", "127.0.0.1", 8080)],
            false,
        ),
        (
            "same tcp port",
            &[("TCP", "127.0.0.1", 8080)],
            &[("TCP", "127.0.0.1", 8080)],
            false,
        ),
        (
            "different host ip",
            &[("TCP", "127.0.0.1", 8080)],
            &[("TCP", "127.0.0.2", 8080)],
            true,
        ),
        (
            "different protocol",
            &[("UDP", "127.0.0.1", 8080)],
            &[("TCP", "127.0.0.1", 8080)],
            true,
        ),
        (
            "second udp port conflict",
            &[("UDP", "127.0.0.1", 8080)],
            &[("UDP", "127.0.0.1", 8000), ("UDP", "127.0.0.1", 8080)],
            false,
        ),
        (
            "first tcp port conflict due to 0.0.0.0 hostIP",
            &[("TCP", "127.0.0.1", 8001)],
            &[("TCP", "0.0.0.0", 8001)],
            false,
        ),
        (
            "second tcp port conflict to 0.0.0.0 hostIP",
            &[("TCP", "0.0.0.0", 8001)],
            &[("TCP", "127.0.0.1", 8001)],
            false,
        ),
        (
            "second different protocol",
            &[("TCP", "0.0.0.0", 8001)],
            &[("UDP", "127.0.0.1", 8001)],
            true,
        ),
        (
            "UDP hostPort conflict due to 0.0.0.0 hostIP",
            &[("TCP", "0.0.0.0", 8001), ("UDP", "0.0.0.0", 8001)],
            &[("UDP", "127.0.0.1", 8001)],
            false,
        ),
    ];
    for (name, running, pending, fits) in cases {
        let yaml = format!(
            "{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: running}}\n\
             spec: {{nodeName: n1, containers: [{{name: c, ports: [{}]}}]}}\n\
             ---\napiVersion: v1\nkind: Pod\nmetadata: {{name: new}}\n\
             spec: {{containers: [{{name: c, ports: [{}]}}]}}\n",
            nodes(1, "4"),
            ports(running),
            ports(pending)
        );
        let out = simulate(&yaml, false, 1);
        let new = outcome(&out, "new");
        assert_eq!(new.node.is_some(), *fits, "{name}: {:?}", new.message);
        if !fits {
            assert_eq!(
                new.message.as_deref(),
                Some(
                    "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. \
                     preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
                ),
                "{name}"
            );
        }
    }
}
