//! Property-based fuzzing of manifest reading (`berth apply -f`, `berth sim -f`): arbitrary
//! text, and valid manifests mutated at random, must give objects or a list of problems,
//! never a panic. Case counts are bounded so `cargo test` stays fast;
//! `scripts/fuzz.sh` runs the same properties at volume (`BERTH_FUZZ_CASES` per property).

use berth_cli::manifest::{parse_str, LoadOptions};
use proptest::prelude::*;

/// Cases per property in `cargo test`.
const CASES: u32 = 256;

/// Cases per property: `BERTH_FUZZ_CASES` when set (`scripts/fuzz.sh`), else [`CASES`].
fn cases() -> u32 {
    std::env::var("BERTH_FUZZ_CASES").map_or(CASES, |v| {
        v.parse()
            .expect("BERTH_FUZZ_CASES is a number of cases per property")
    })
}

/// Valid manifests touching most of the model: pods with affinity, tolerations, spread
/// and resources; a node; a priority class; a list; the DRA kinds; JSON.
const SEEDS: &[&str] = &[
    r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
  annotations: {note: "x"}
spec:
  priorityClassName: high
  nodeSelector: {disk: ssd}
  tolerations:
  - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: zone, operator: In, values: [a, b]}
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 50
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: web}}
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchExpressions: [{key: app, operator: Exists}]}
  containers:
  - name: main
    image: nginx
    env: [{name: A, value: "1"}]
    ports: [{name: http, containerPort: 80, hostPort: 8080, protocol: TCP, hostIP: 10.0.0.1}]
    resources:
      requests: {cpu: 500m, memory: 256Mi}
      limits: {cpu: "1", memory: 1Gi}
"#,
    r#"apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {zone: a}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  unschedulable: false
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  images: [{names: ["docker.io/library/nginx:1.27", "nginx:1.27"], sizeBytes: 73400320}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: Never
"#,
    r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec:
    containers: [{name: c, image: busybox}]
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec:
    initContainers: [{name: i, image: busybox, resources: {requests: {cpu: "2"}}}]
    containers: [{name: c, image: busybox}]
"#,
    r#"apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.berth.dev" && device.attributes["gpu.berth.dev"].index >= 0'}
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
    attributes: {model: {string: a100}, index: {int: 0}, driverVersion: {version: 1.2.3}}
    capacity:
      memory: {value: 80Gi, requestPolicy: {default: 80Gi, validRange: {min: 10Gi, step: 10Gi}}}
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
          - cel: {expression: 'device.capacity["gpu.berth.dev"].memory.isGreaterThan(quantity("16Gi"))'}
          capacity: {requests: {memory: 35Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: all-gpus}
spec:
  devices:
    requests:
    - name: all
      exactly: {deviceClassName: gpu, allocationMode: All}
    constraints:
    - {requests: [all], matchAttribute: gpu.berth.dev/model}
"#,
    r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1e-1"}}}]}}"#,
];

/// One random edit of a text.
#[derive(Clone, Debug)]
enum Mutation {
    /// Remove the characters in a range (positions scaled to the text's length).
    Delete(usize, usize),
    /// Insert a fragment at a position.
    Insert(usize, String),
    /// Repeat a line.
    DuplicateLine(usize),
    /// Swap two lines.
    SwapLines(usize, usize),
    /// Cut the text short.
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let fragment = prop_oneof![
        prop::sample::select(vec![
            ":",
            "- ",
            "{",
            "}",
            "[",
            "]",
            "\"",
            "'",
            "\n",
            "  ",
            "---\n",
            "&a ",
            "*a",
            "!!binary ",
            "null",
            "~",
            "-1",
            "1e309",
            "99999999999999999999999",
            "0x10",
            ": :",
            "\t",
            "#",
            "kind: Pod\n",
            "apiVersion: v1\n",
            "metadata: {}\n",
            "name: ''\n",
            "<<: *a\n",
        ])
        .prop_map(str::to_string),
        "\\PC{1,8}",
    ];
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(at, len)| Mutation::Delete(at, len)),
        (any::<usize>(), fragment).prop_map(|(at, s)| Mutation::Insert(at, s)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// The nearest character boundary at or below `at % (len + 1)`.
fn boundary(text: &str, at: usize) -> usize {
    let mut i = at % (text.len() + 1);
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &mut String, mutation: &Mutation) {
    match mutation {
        Mutation::Delete(at, len) => {
            let start = boundary(text, *at);
            let end = boundary(text, start + len).max(start);
            text.replace_range(start..end, "");
        }
        Mutation::Insert(at, fragment) => {
            let at = boundary(text, *at);
            text.insert_str(at, fragment);
        }
        Mutation::DuplicateLine(i) => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let i = i % lines.len();
                lines.insert(i, lines[i]);
            }
            *text = lines.join("\n");
        }
        Mutation::SwapLines(a, b) => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let n = lines.len();
                lines.swap(a % n, b % n);
            }
            *text = lines.join("\n");
        }
        Mutation::Truncate(at) => {
            let at = boundary(text, *at);
            text.truncate(at);
        }
    }
}

#[test]
fn the_seeds_are_valid() {
    for (i, seed) in SEEDS.iter().enumerate() {
        let source = if seed.starts_with('{') {
            "seed.json"
        } else {
            "seed.yaml"
        };
        let loaded = parse_str(source, seed, LoadOptions::default());
        assert!(loaded.is_ok(), "seed {i}: {:?}", loaded.err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", json in any::<bool>()) {
        let source = if json { "x.json" } else { "x.yaml" };
        let _ = parse_str(source, &text, LoadOptions::default());
        let _ = parse_str(source, &text, LoadOptions { skip_unknown_kinds: true, ..Default::default() });
    }

    #[test]
    fn mutated_manifests_never_panic(
        seed in 0..SEEDS.len(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut text = SEEDS[seed].to_string();
        for m in &mutations {
            apply(&mut text, m);
        }
        let source = if SEEDS[seed].starts_with('{') { "m.json" } else { "m.yaml" };
        if let Err(e) = parse_str(source, &text, LoadOptions::default()) {
            // Every problem names where it is.
            prop_assert!(!e.problems.is_empty());
            for problem in &e.problems {
                prop_assert_eq!(&problem.source, source);
            }
        }
    }
}
