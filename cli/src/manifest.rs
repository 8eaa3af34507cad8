//! Reading manifests as kubectl does: files, folders and stdin, multi-document YAML or JSON,
//! `kind: List` expanded, every object checked against Berth's model and validation rules,
//! and every problem reported with its file, document and field before anything is sent.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use berth_proto::model::{Kind, Object};
use serde::Deserialize;
use serde_json::Value;

/// The name used as the source of manifests read from standard input.
pub const STDIN_SOURCE: &str = "<stdin>";

/// Kinds that manifests may carry, as written in `kind:`, for error messages.
const SUPPORTED_KINDS: &str = "Pod, Node, PriorityClass, Namespace, RuntimeClass, \
     PodDisruptionBudget, Deployment, ReplicaSet, DaemonSet, ResourceQuota, Job";

/// One object read from a manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// The file it came from, or `<stdin>`.
    pub source: String,
    /// Position of its document in the file, from 1.
    pub document: usize,
    /// Position within a `kind: List` document's items, from 1; `None` for a plain document.
    pub item: Option<usize>,
    /// The object.
    pub object: Object,
}

/// A document of a kind Berth does not use, skipped by [`load_with`] when asked to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The file it came from, or `<stdin>`.
    pub source: String,
    /// Position of its document in the file, from 1.
    pub document: usize,
    /// Position within a `kind: List` document's items, from 1.
    pub item: Option<usize>,
    /// Its `kind`.
    pub kind: String,
    /// Its `metadata.namespace`, possibly empty.
    pub namespace: String,
    /// Its `metadata.name`, possibly empty.
    pub name: String,
}

impl fmt::Display for Skipped {
    /// `app.yaml: document 3 (Service web): kind Service is not used by Berth; skipped`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let location = Location {
            source: &self.source,
            document: Some(self.document),
            item: self.item,
            object: Some(object_label(&self.kind, &self.name)),
        };
        write!(
            f,
            "{location}: kind {} is not used by Berth; skipped",
            self.kind
        )
    }
}

/// What [`load_with`] read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loaded {
    /// Objects of the kinds Berth knows, in the order read.
    pub manifests: Vec<Manifest>,
    /// Documents of other kinds, when [`LoadOptions::skip_unknown_kinds`] is set.
    pub skipped: Vec<Skipped>,
}

/// Options of [`load_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Skip documents of kinds Berth does not know (noting them in [`Loaded::skipped`])
    /// instead of failing; `berth sim` reads whole application manifests this way.
    pub skip_unknown_kinds: bool,
    /// Leave pods unvalidated: `berth sim` admits each pod itself and reports an invalid one
    /// as a pod that could not be created, as the API server would refuse it, instead of
    /// failing the whole run.
    pub skip_pod_validation: bool,
}

/// One problem in the manifests: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file, or `<stdin>`.
    pub source: String,
    /// The document, from 1, when the problem is inside one.
    pub document: Option<usize>,
    /// The item of a `kind: List` document, from 1.
    pub item: Option<usize>,
    /// `Pod web`: the object's kind and name, when known.
    pub object: Option<String>,
    /// The field path (`spec.containers[0].resources.requests.cpu`), when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    /// `pod.yaml: document 2 (Pod web): spec.containers[0].resoures: unknown field ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let location = Location {
            source: &self.source,
            document: self.document,
            item: self.item,
            object: self.object.clone(),
        };
        write!(f, "{location}: ")?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Every problem found in a set of manifests, one per line when displayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ManifestError {
    /// The problems, in the order found.
    pub problems: Vec<Problem>,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

/// `source: document 2, item 3 (Pod web)`.
struct Location<'a> {
    source: &'a str,
    document: Option<usize>,
    item: Option<usize>,
    object: Option<String>,
}

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.source)?;
        if let Some(document) = self.document {
            write!(f, ": document {document}")?;
        }
        if let Some(item) = self.item {
            write!(f, ", item {item}")?;
        }
        if let Some(object) = &self.object {
            write!(f, " ({object})")?;
        }
        Ok(())
    }
}

fn object_label(kind: &str, name: &str) -> String {
    if name.is_empty() {
        kind.to_string()
    } else {
        format!("{kind} {name}")
    }
}

/// Reads the manifests at `paths` (files, folders, `-` for stdin); any document of a kind
/// Berth does not know is an error. All problems are collected and returned together.
pub fn load(paths: &[String]) -> Result<Vec<Manifest>, ManifestError> {
    load_with(paths, LoadOptions::default()).map(|loaded| loaded.manifests)
}

/// As [`load`], with options (see [`LoadOptions`]).
pub fn load_with(paths: &[String], options: LoadOptions) -> Result<Loaded, ManifestError> {
    let mut reader = Reader {
        options,
        loaded: Loaded::default(),
        problems: Vec::new(),
    };
    for path in paths {
        reader.read_path(path);
    }
    if reader.problems.is_empty() {
        Ok(reader.loaded)
    } else {
        Err(ManifestError {
            problems: reader.problems,
        })
    }
}

/// Parses manifest text as if read from `source` (YAML, or JSON when `source` ends in
/// `.json` or the text starts with `{`).
pub fn parse_str(source: &str, text: &str, options: LoadOptions) -> Result<Loaded, ManifestError> {
    let mut reader = Reader {
        options,
        loaded: Loaded::default(),
        problems: Vec::new(),
    };
    reader.read_text(source, text, source.ends_with(".json"));
    if reader.problems.is_empty() {
        Ok(reader.loaded)
    } else {
        Err(ManifestError {
            problems: reader.problems,
        })
    }
}

/// Accumulates objects and problems across every path.
struct Reader {
    options: LoadOptions,
    loaded: Loaded,
    problems: Vec<Problem>,
}

impl Reader {
    fn file_problem(&mut self, source: &str, message: String) {
        self.problems.push(Problem {
            source: source.to_string(),
            document: None,
            item: None,
            object: None,
            field: None,
            message,
        });
    }

    fn read_path(&mut self, path: &str) {
        if path == "-" {
            let mut text = String::new();
            match std::io::stdin().read_to_string(&mut text) {
                Ok(_) => self.read_text(STDIN_SOURCE, &text, false),
                Err(e) => self.file_problem(STDIN_SOURCE, format!("reading standard input: {e}")),
            }
            return;
        }
        let p = Path::new(path);
        let metadata = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.file_problem(path, "the path does not exist".into());
                return;
            }
            Err(e) => {
                self.file_problem(path, e.to_string());
                return;
            }
        };
        if metadata.is_dir() {
            match manifest_files(p) {
                Ok(files) => {
                    for file in files {
                        self.read_file(&file);
                    }
                }
                Err(e) => self.file_problem(path, format!("reading folder: {e}")),
            }
        } else {
            self.read_file(p);
        }
    }

    fn read_file(&mut self, path: &Path) {
        let source = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let json = path.extension().is_some_and(|e| e == "json");
                self.read_text(&source, &text, json);
            }
            Err(e) => self.file_problem(&source, e.to_string()),
        }
    }

    /// Splits text into documents and reads each.
    fn read_text(&mut self, source: &str, text: &str, json: bool) {
        let json = json || text.trim_start().starts_with('{');
        if json {
            let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
            for (i, doc) in stream.enumerate() {
                match doc {
                    Ok(value) => self.read_document(source, i + 1, value),
                    Err(e) => {
                        self.doc_problem(source, i + 1, None, None, None, e.to_string());
                        break;
                    }
                }
            }
        } else {
            for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
                match Value::deserialize(doc) {
                    Ok(value) => self.read_document(source, i + 1, value),
                    Err(e) => {
                        // The parser cannot resynchronize after a syntax error.
                        self.doc_problem(source, i + 1, None, None, None, e.to_string());
                        break;
                    }
                }
            }
        }
    }

    fn doc_problem(
        &mut self,
        source: &str,
        document: usize,
        item: Option<usize>,
        object: Option<String>,
        field: Option<String>,
        message: String,
    ) {
        self.problems.push(Problem {
            source: source.to_string(),
            document: Some(document),
            item,
            object,
            field,
            message,
        });
    }

    /// Reads one document: skips empty ones, expands lists, decodes the rest.
    fn read_document(&mut self, source: &str, document: usize, value: Value) {
        if value.is_null() {
            return;
        }
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind == "List" || (kind.ends_with("List") && value.get("items").is_some()) {
            match value.get("items") {
                Some(Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        self.read_object(source, document, Some(i + 1), item.clone());
                    }
                }
                Some(Value::Null) | None => {}
                Some(other) => self.doc_problem(
                    source,
                    document,
                    None,
                    Some(kind.to_string()),
                    Some("items".into()),
                    format!("expected a list, found {}", value_type(other)),
                ),
            }
            return;
        }
        self.read_object(source, document, None, value);
    }

    /// Decodes one object by its kind, validates it, and records it or its problems.
    fn read_object(&mut self, source: &str, document: usize, item: Option<usize>, value: Value) {
        let Value::Object(map) = &value else {
            self.doc_problem(
                source,
                document,
                item,
                None,
                None,
                format!(
                    "expected an object with apiVersion and kind, found {}",
                    value_type(&value)
                ),
            );
            return;
        };
        let text_field = |name: &str| map.get(name).and_then(Value::as_str).unwrap_or("");
        let kind = text_field("kind").to_string();
        let api_version = text_field("apiVersion").to_string();
        let meta_field = |field: &str| {
            map.get("metadata")
                .and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let name = meta_field("name");
        let object_name = (!kind.is_empty()).then(|| object_label(&kind, &name));
        let problem = |field: Option<&str>, message: String| Problem {
            source: source.to_string(),
            document: Some(document),
            item,
            object: object_name.clone(),
            field: field.map(str::to_string),
            message,
        };
        if kind.is_empty() {
            let message = match map.get("kind") {
                None | Some(Value::Null) => "kind is not set".to_string(),
                Some(other) => format!("kind must be a string, found {}", value_type(other)),
            };
            let p = problem(None, message);
            self.problems.push(p);
            return;
        }
        let Some(expected) = known_kind(&kind) else {
            if self.options.skip_unknown_kinds {
                self.loaded.skipped.push(Skipped {
                    source: source.to_string(),
                    document,
                    item,
                    kind,
                    namespace: meta_field("namespace"),
                    name,
                });
            } else {
                let p = problem(
                    None,
                    format!(
                        "kind {kind:?} is not supported by Berth (supported kinds: {SUPPORTED_KINDS})"
                    ),
                );
                self.problems.push(p);
            }
            return;
        };
        if api_version.is_empty() {
            let p = problem(None, "apiVersion is not set".into());
            self.problems.push(p);
            return;
        }
        if api_version != expected.api_version() {
            let p = problem(
                Some("apiVersion"),
                format!(
                    "{api_version:?} is not a valid apiVersion for kind {kind} (expected {:?})",
                    expected.api_version()
                ),
            );
            self.problems.push(p);
            return;
        }
        let object = match decode(expected, value) {
            Ok(object) => object,
            Err((path, message)) => {
                let p = problem(path.as_deref(), message);
                self.problems.push(p);
                return;
            }
        };
        let skip_validation = self.options.skip_pod_validation && matches!(object, Object::Pod(_));
        let invalid = if skip_validation {
            Vec::new()
        } else {
            validation_problems(&object)
        };
        if !invalid.is_empty() {
            for (field, message) in invalid {
                let p = problem(field.as_deref(), message);
                self.problems.push(p);
            }
            return;
        }
        self.loaded.manifests.push(Manifest {
            source: source.to_string(),
            document,
            item,
            object,
        });
    }
}

/// The kind a manifest's `kind:` names, if Berth reads that kind from manifests. Add a kind
/// here and in [`decode`].
fn known_kind(kind: &str) -> Option<Kind> {
    match kind {
        "Pod" => Some(Kind::Pod),
        "Node" => Some(Kind::Node),
        "PriorityClass" => Some(Kind::PriorityClass),
        "Namespace" => Some(Kind::Namespace),
        "RuntimeClass" => Some(Kind::RuntimeClass),
        "PodDisruptionBudget" => Some(Kind::PodDisruptionBudget),
        "Deployment" => Some(Kind::Deployment),
        "ReplicaSet" => Some(Kind::ReplicaSet),
        "DaemonSet" => Some(Kind::DaemonSet),
        "ResourceQuota" => Some(Kind::ResourceQuota),
        "Job" => Some(Kind::Job),
        "DeviceClass" => Some(Kind::DeviceClass),
        "ResourceClaim" => Some(Kind::ResourceClaim),
        "ResourceClaimTemplate" => Some(Kind::ResourceClaimTemplate),
        "ResourceSlice" => Some(Kind::ResourceSlice),
        _ => None,
    }
}

/// Deserializes a document into the model type of its kind, with the failing field's path.
fn decode(kind: Kind, value: Value) -> Result<Object, (Option<String>, String)> {
    if kind == Kind::Event {
        return Err((None, "events cannot be written in manifests".into()));
    }
    berth_proto::decode::object(kind, value)
        .map_err(|e| ((!e.path.is_empty()).then_some(e.path), e.message))
}

/// The validation rules the server applies, as (field, message) pairs.
fn validation_problems(object: &Object) -> Vec<(Option<String>, String)> {
    match berth_proto::validate::validate_object(object) {
        Ok(()) => Vec::new(),
        Err(errors) => errors
            .errors()
            .iter()
            .map(|e| {
                (
                    (!e.path.is_empty()).then(|| e.path.clone()),
                    e.message.clone(),
                )
            })
            .collect(),
    }
}

fn value_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The manifest files directly inside a folder (`*.yaml`, `*.yml`, `*.json`), sorted by
/// name; subfolders are not read, as kubectl without `-R`.
fn manifest_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let is_manifest = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if is_manifest && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> LoadOptions {
        LoadOptions::default()
    }

    #[test]
    fn reports_each_kind_of_error_with_its_location() {
        struct Case {
            name: &'static str,
            text: &'static str,
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "typo in a field",
                text: "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: app\n    resoures: {}\n",
                want: &["pod.yaml: document 1 (Pod web): spec.containers[0].resoures: unknown field \"resoures\", expected one of"],
            },
            Case {
                name: "wrong type",
                text: "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: {name: app}\n",
                want: &["pod.yaml: document 1 (Pod web): spec.containers: invalid type: map, expected a sequence"],
            },
            Case {
                name: "bad quantity",
                text: "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: app\n    resources:\n      requests: {cpu: abc}\n",
                want: &["pod.yaml: document 1 (Pod web): spec.containers[0].resources.requests.cpu: \"abc\" is not a valid quantity"],
            },
            Case {
                name: "bad enum",
                text: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  taints:\n  - {key: k, effect: NoSchedul}\n",
                want: &["pod.yaml: document 1 (Node n1): spec.taints[0].effect: unknown variant \"NoSchedul\", expected one of \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""],
            },
            Case {
                name: "unknown kind",
                text: "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
                want: &["pod.yaml: document 1 (Service web): kind \"Service\" is not supported by Berth (supported kinds: Pod, Node, PriorityClass, Namespace, RuntimeClass, PodDisruptionBudget, Deployment, ReplicaSet, DaemonSet, ResourceQuota, Job)"],
            },
            Case {
                name: "missing kind",
                text: "apiVersion: v1\nmetadata: {name: web}\n",
                want: &["pod.yaml: document 1: kind is not set"],
            },
            Case {
                name: "missing apiVersion",
                text: "kind: Pod\nmetadata: {name: web}\n",
                want: &["pod.yaml: document 1 (Pod web): apiVersion is not set"],
            },
            Case {
                name: "wrong apiVersion",
                text: "apiVersion: v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 10\n",
                want: &["pod.yaml: document 1 (PriorityClass high): apiVersion: \"v1\" is not a valid apiVersion for kind PriorityClass (expected \"scheduling.k8s.io/v1\")"],
            },
            Case {
                name: "validation failure",
                text: "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec:\n  containers:\n  - name: app\n",
                want: &["pod.yaml: document 1 (Pod Web_1): metadata.name: "],
            },
            Case {
                name: "yaml syntax",
                text: "apiVersion: v1\nkind: Pod\nmetadata: {name: web\n",
                want: &["pod.yaml: document 1: "],
            },
            Case {
                name: "not a mapping",
                text: "- a\n- b\n",
                want: &["pod.yaml: document 1: expected an object with apiVersion and kind, found a list"],
            },
            Case {
                name: "errors in several documents are all reported",
                text: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containerz: []}\n---\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers:\n  - name: app\n    resources: {limits: {memory: 1Qi}}\n",
                want: &[
                    "pod.yaml: document 1 (Pod a): spec.containerz: unknown field \"containerz\"",
                    "pod.yaml: document 3 (Pod b): spec.containers[0].resources.limits.memory: \"1Qi\" is not a valid quantity",
                ],
            },
        ];
        for case in cases {
            let err = parse_str("pod.yaml", case.text, strict()).expect_err(case.name);
            let lines: Vec<String> = err.problems.iter().map(ToString::to_string).collect();
            assert_eq!(lines.len(), case.want.len(), "{}: {lines:#?}", case.name);
            for (line, want) in lines.iter().zip(case.want) {
                assert!(
                    line.starts_with(want),
                    "{}: got {line:?}, want prefix {want:?}",
                    case.name
                );
            }
        }
    }

    const REAL_WORLD_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  annotations: {note: "x"}
  creationTimestamp: null
spec:
  serviceAccountName: web
  automountServiceAccountToken: false
  securityContext: {runAsNonRoot: true, fsGroup: 2000}
  dnsPolicy: ClusterFirst
  restartPolicy: Always
  terminationGracePeriodSeconds: 10
  volumes:
  - name: data
    emptyDir: {}
  - name: config
    configMap: {name: web-config}
  imagePullSecrets: [{name: regcred}]
  priorityClassName: high
  tolerations:
  - {key: dedicated, operator: Equal, value: web, effect: NoSchedule}
  nodeSelector: {disk: ssd}
  initContainers:
  - name: migrate
    image: busybox
    command: [sh, -c, "true"]
  containers:
  - name: app
    image: nginx:1.27
    imagePullPolicy: IfNotPresent
    ports: [{containerPort: 80, name: http}]
    env:
    - {name: MODE, value: prod}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    envFrom: [{configMapRef: {name: web-env}}]
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: 1, memory: 128Mi}
    volumeMounts: [{name: data, mountPath: /data}]
    livenessProbe: {httpGet: {path: /healthz, port: 80}, initialDelaySeconds: 3}
    readinessProbe: {tcpSocket: {port: 80}}
    securityContext: {allowPrivilegeEscalation: false}
    lifecycle: {preStop: {exec: {command: [sleep, "5"]}}}
status: {}
"#;

    #[test]
    fn accepts_real_world_manifests() {
        let loaded =
            parse_str("web.yaml", REAL_WORLD_POD, strict()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.manifests.len(), 1);
        let Object::Pod(pod) = &loaded.manifests[0].object else {
            panic!("expected a pod");
        };
        assert_eq!(pod.metadata.namespace, "shop");
        assert_eq!(
            pod.spec.containers[0].resources.requests["cpu"].millis(),
            250
        );
        assert_eq!(pod.spec.containers[0].env.len(), 2);
    }

    const WORKLOADS_AND_POLICIES: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  labels: {team: shop}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata-fc}
handler: kata-fc
overhead:
  podFixed: {memory: 120Mi, cpu: 250m}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: shop}
spec:
  maxUnavailable: 25%
  selector:
    matchLabels: {app: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports: [{containerPort: 80}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: frontend}
spec:
  selector:
    matchLabels: {tier: frontend}
  template:
    metadata:
      labels: {tier: frontend}
    spec:
      containers: [{name: php-redis, image: gb-frontend:v5}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: fluentd, namespace: kube-system}
spec:
  selector:
    matchLabels: {name: fluentd}
  updateStrategy: {type: RollingUpdate}
  template:
    metadata:
      labels: {name: fluentd}
    spec:
      containers: [{name: fluentd, image: fluentd:v2.5.2}]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods-high, namespace: shop}
spec:
  hard: {cpu: "1000", memory: 200Gi, pods: "10"}
  scopeSelector:
    matchExpressions:
    - {operator: In, scopeName: PriorityClass, values: [high]}
"#;

    #[test]
    fn reads_every_kind_with_its_api_version() {
        let loaded = parse_str("all.yaml", WORKLOADS_AND_POLICIES, strict())
            .unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<String> = loaded
            .manifests
            .iter()
            .map(|m| m.object.key().to_string())
            .collect();
        assert_eq!(
            got,
            [
                "Namespace shop",
                "RuntimeClass kata-fc",
                "PodDisruptionBudget shop/web-pdb",
                "Deployment shop/web",
                "ReplicaSet frontend",
                "DaemonSet kube-system/fluentd",
                "ResourceQuota shop/pods-high",
            ]
        );
        let Object::Deployment(d) = &loaded.manifests[3].object else {
            panic!("expected a deployment");
        };
        assert_eq!(d.spec.replicas, 3);
        let Object::ReplicaSet(rs) = &loaded.manifests[4].object else {
            panic!("expected a replica set");
        };
        assert_eq!(rs.spec.replicas, 1, "replicas default to 1");
    }

    #[test]
    fn new_kinds_report_api_version_and_validation_problems() {
        struct Case {
            name: &'static str,
            text: &'static str,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "pre-apps Deployment",
                text: "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: web}\n",
                want: "pod.yaml: document 1 (Deployment web): apiVersion: \"extensions/v1beta1\" is not a valid apiVersion for kind Deployment (expected \"apps/v1\")",
            },
            Case {
                name: "v1beta1 PDB",
                text: "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: pdb}\nspec: {minAvailable: 1}\n",
                want: "pod.yaml: document 1 (PodDisruptionBudget pdb): apiVersion: \"policy/v1beta1\" is not a valid apiVersion for kind PodDisruptionBudget (expected \"policy/v1\")",
            },
            Case {
                name: "selector does not match the template",
                text: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: app}]}\n",
                want: "pod.yaml: document 1 (ReplicaSet rs): spec.template.metadata.labels: Invalid value: {\"app\": \"db\"}: `selector` does not match template `labels`",
            },
            Case {
                name: "both PDB bounds",
                text: "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb}\nspec: {minAvailable: 1, maxUnavailable: 10%}\n",
                want: "pod.yaml: document 1 (PodDisruptionBudget pdb): spec: Invalid value: minAvailable and maxUnavailable cannot be both set",
            },
            Case {
                name: "RuntimeClass typo",
                text: "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: rc}\nhandlr: runc\n",
                want: "pod.yaml: document 1 (RuntimeClass rc): handlr: unknown field \"handlr\"",
            },
        ];
        for case in cases {
            let err = parse_str("pod.yaml", case.text, strict()).expect_err(case.name);
            let lines: Vec<String> = err.problems.iter().map(ToString::to_string).collect();
            assert!(
                lines.iter().any(|l| l.starts_with(case.want)),
                "{}: got {lines:?}, want a line starting {:?}",
                case.name,
                case.want
            );
        }
    }

    #[test]
    fn multi_document_lists_and_empty_documents() {
        let text = r#"
# a comment before the first separator belongs to no document
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status: {capacity: {cpu: 4, memory: 8Gi, pods: 110}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p1}
  spec: {containers: [{name: app, image: nginx}]}
"#;
        let loaded = parse_str("all.yaml", text, strict()).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(usize, Option<usize>, String)> = loaded
            .manifests
            .iter()
            .map(|m| (m.document, m.item, m.object.key().to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, None, "PriorityClass high".to_string()),
                (3, Some(1), "Node n1".to_string()),
                (3, Some(2), "Pod p1".to_string()),
            ]
        );
    }

    #[test]
    fn list_items_report_their_position() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n  spec: {unschedulable: maybe}\n";
        let err = parse_str("list.yaml", text, strict()).expect_err("bad item");
        assert_eq!(err.problems.len(), 1);
        let line = err.problems[0].to_string();
        assert!(
            line.starts_with("list.yaml: document 1, item 1 (Node n1): spec.unschedulable: invalid type: string \"maybe\", expected a boolean"),
            "{line}"
        );
    }

    #[test]
    fn json_documents_are_read() {
        let text = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "spec": {"unschedulable": true}}"#;
        let loaded = parse_str("nodes.json", text, strict()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.manifests.len(), 2);
        assert_eq!(loaded.manifests[1].document, 2);
    }

    #[test]
    fn sim_mode_skips_unknown_kinds() {
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n";
        let loaded = parse_str(
            "app.yaml",
            text,
            LoadOptions {
                skip_unknown_kinds: true,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.manifests.len(), 1);
        assert_eq!(loaded.skipped.len(), 1);
        assert_eq!(
            loaded.skipped[0].to_string(),
            "app.yaml: document 1 (Service web): kind Service is not used by Berth; skipped"
        );
    }

    #[test]
    fn folders_are_read_in_order_without_recursion() {
        let dir = tempfile::tempdir().expect("temp dir");
        let node = |name: &str| format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n");
        std::fs::write(dir.path().join("b.yml"), node("second")).expect("write");
        std::fs::write(dir.path().join("a.yaml"), node("first")).expect("write");
        std::fs::write(
            dir.path().join("c.json"),
            r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "third"}}"#,
        )
        .expect("write");
        std::fs::write(dir.path().join("notes.txt"), "not a manifest").expect("write");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub").join("d.yaml"), node("nested")).expect("write");

        let folder = dir.path().display().to_string();
        let manifests = load(std::slice::from_ref(&folder)).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = manifests
            .iter()
            .map(|m| m.object.meta().name.as_str())
            .collect();
        assert_eq!(names, ["first", "second", "third"]);
        assert!(
            manifests[0].source.ends_with("a.yaml"),
            "{}",
            manifests[0].source
        );

        let missing = dir.path().join("nope.yaml").display().to_string();
        let err = load(std::slice::from_ref(&missing)).expect_err("missing file");
        assert_eq!(
            err.to_string(),
            format!("{missing}: the path does not exist")
        );
    }
}
