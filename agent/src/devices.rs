//! The devices an agent publishes for its node, as node-local ResourceSlices (kube's DRA
//! drivers publish them through kubelet): those of a `--devices` file of ResourceSlice
//! manifests, and the GPUs of the `--gpus N[:MODEL[:MEMORY]]` shorthand. The agent sends
//! them with every registration; the scheduler stores them (owned by the Node, so that
//! they go with it) and bumps a pool's generation when its devices change. [`watch_file`]
//! looks at the file every few seconds: a valid new content replaces what the node
//! publishes (the session sends it at once), an invalid one is refused, naming the field,
//! and the node keeps its devices.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use berth_core::gpushare::GPU_DRIVER;
use berth_core::lab::objects::{gpu_slice, Gpus};
use berth_proto::model::{Kind, Object, ResourceSlice};
use berth_proto::Quantity;
use serde::Deserialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::error::{Error, Result};

/// The model of `--gpus N` GPUs when the flag names none.
pub const DEFAULT_GPU_MODEL: &str = "gpu";

/// Parses `--gpus N[:MODEL[:MEMORY]]`: N GPUs (1 to 128, a slice's limit), of MODEL
/// (default [`DEFAULT_GPU_MODEL`]), each with MEMORY (a quantity) when given.
pub fn parse_gpus(spec: &str) -> Result<Gpus, String> {
    let mut parts = spec.splitn(3, ':');
    let count = parts.next().unwrap_or_default();
    let count: u32 = count
        .parse()
        .map_err(|_| format!("{count:?} is not a number of GPUs (N[:MODEL[:MEMORY]])"))?;
    let max = berth_proto::model::RESOURCE_SLICE_MAX_DEVICES;
    if count == 0 || count as usize > max {
        return Err(format!("{count} GPUs: must be between 1 and {max}"));
    }
    let model = match parts.next() {
        None => DEFAULT_GPU_MODEL.to_string(),
        Some("") => return Err("empty GPU model (N[:MODEL[:MEMORY]])".into()),
        Some(m) => m.to_string(),
    };
    let memory = parts
        .next()
        .map(|m| Quantity::parse(m).map_err(|e| format!("GPU memory {m:?}: {e}")))
        .transpose()?;
    if memory.is_some_and(|m| m.millis() <= 0) {
        return Err("GPU memory must be positive".into());
    }
    Ok(Gpus {
        count,
        model,
        memory,
    })
}

/// What the node publishes: the slices of the `--devices` file (without node) and the
/// `--gpus` GPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Devices {
    /// The file's slices, as read.
    pub from_file: Vec<ResourceSlice>,
    /// The `--gpus` shorthand.
    pub gpus: Option<Gpus>,
}

impl Devices {
    /// Reads `--devices` (when given) and checks the slices for a node: each must be a
    /// valid ResourceSlice once the agent fills in its node, and `--gpus` may not publish a
    /// driver the file publishes too.
    pub fn load(file: Option<&Path>, gpus: Option<Gpus>) -> Result<Self> {
        let from_file = match file {
            Some(path) => read_file(path)?,
            None => Vec::new(),
        };
        let devices = Devices { from_file, gpus };
        if let (Some(path), Some(_)) = (file, &devices.gpus) {
            if devices
                .from_file
                .iter()
                .any(|s| s.spec.driver == GPU_DRIVER)
            {
                return Err(problem(
                    path,
                    format!("driver {GPU_DRIVER} is published by --gpus already"),
                ));
            }
        }
        // Check them as the scheduler will see them.
        for slice in devices.for_node("node-check") {
            berth_proto::validate::validate_object(&Object::ResourceSlice(Box::new(slice.clone())))
                .map_err(|e| {
                    problem(
                        file.unwrap_or(Path::new("--gpus")),
                        format!("ResourceSlice of driver {}: {e}", slice.spec.driver),
                    )
                })?;
        }
        Ok(devices)
    }

    /// Whether there is nothing to publish.
    pub fn is_empty(&self) -> bool {
        self.from_file.is_empty() && self.gpus.is_none()
    }

    /// The slices of node `node`: each slice on the node (`spec.nodeName`), in the pool
    /// named after the node unless the file names one, `resourceSliceCount` the number of
    /// slices of its pool, named `<node>-<driver>` (`-<i>` added when a pool has several).
    /// The scheduler sets the generation.
    pub fn for_node(&self, node: &str) -> Vec<ResourceSlice> {
        let mut slices: Vec<ResourceSlice> = self.from_file.clone();
        if let Some(gpus) = &self.gpus {
            slices.push(gpu_slice(node, gpus));
        }
        for s in &mut slices {
            s.spec.node_name = Some(node.to_string());
            if s.spec.pool.name.is_empty() {
                s.spec.pool.name = node.to_string();
            }
        }
        let mut per_pool: BTreeMap<(String, String), i64> = BTreeMap::new();
        for s in &slices {
            *per_pool
                .entry((s.spec.driver.clone(), s.spec.pool.name.clone()))
                .or_default() += 1;
        }
        let mut seen: BTreeMap<(String, String), i64> = BTreeMap::new();
        for s in &mut slices {
            let pool = (s.spec.driver.clone(), s.spec.pool.name.clone());
            let count = per_pool[&pool];
            let index = seen.entry(pool).or_default();
            s.spec.pool.resource_slice_count = count;
            s.spec.pool.generation = 0;
            s.metadata = Default::default();
            s.metadata.name = if count == 1 {
                format!("{node}-{}", s.spec.driver)
            } else {
                format!("{node}-{}-{index}", s.spec.driver)
            };
            *index += 1;
            s.api_version = "resource.k8s.io/v1".to_string();
            s.kind = "ResourceSlice".to_string();
        }
        slices
    }
}

/// How often [`watch_file`] reads the `--devices` file for changes.
pub const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// What a node publishes now: the devices last read valid, and, when the file changed to
/// something invalid since, why it was refused (the node keeps `devices` meanwhile).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Published {
    /// The devices to publish.
    pub devices: Devices,
    /// Why the file's current content was refused, when it was.
    pub refused: Option<String>,
}

/// The file's content as last seen: its bytes, or why it could not be read.
type Seen = std::result::Result<Vec<u8>, String>;

fn read_bytes(path: &Path) -> Seen {
    std::fs::read(path).map_err(|e| e.to_string())
}

/// Reads `path` every `interval` until `shutdown` fires: when its content changed, loads it
/// again (with `gpus`) and hands the result to `tx` — valid devices replace the published
/// ones, an invalid file keeps them and says why (logged as an error too). Content that
/// comes back to the published devices clears a refusal.
pub async fn watch_file(
    path: PathBuf,
    gpus: Option<Gpus>,
    tx: watch::Sender<Published>,
    interval: std::time::Duration,
    shutdown: CancellationToken,
) {
    // Nothing seen yet: the first look loads the file, so that an edit made since the
    // published devices were read is not missed.
    let mut seen: Option<Seen> = None;
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let now = read_bytes(&path);
        if seen.as_ref() == Some(&now) {
            continue;
        }
        seen = Some(now);
        let current = tx.borrow().clone();
        let next = match Devices::load(Some(&path), gpus.clone()) {
            Ok(devices) => {
                if devices != current.devices {
                    info!(file = %path.display(), slices = devices.from_file.len(), "devices file changed; publishing its devices");
                }
                Published {
                    devices,
                    refused: None,
                }
            }
            Err(e) => {
                let reason = e.to_string();
                error!(error = %reason, "devices file changed but is invalid; the node keeps publishing its devices");
                Published {
                    devices: current.devices.clone(),
                    refused: Some(reason),
                }
            }
        };
        if next != current {
            tx.send_replace(next);
        }
    }
}

fn problem(path: &Path, reason: String) -> Error {
    Error::Devices {
        path: PathBuf::from(path),
        reason,
    }
}

/// The ResourceSlices of a YAML (or JSON) file of one or more documents, each without a
/// node: `nodeName`, `allNodes` and `nodeSelector` are the agent's to set.
fn read_file(path: &Path) -> Result<Vec<ResourceSlice>> {
    let text = std::fs::read_to_string(path).map_err(|e| problem(path, e.to_string()))?;
    let mut slices = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
        let at = |reason: String| problem(path, format!("document {}: {reason}", i + 1));
        let value = serde_json::Value::deserialize(doc).map_err(|e| at(e.to_string()))?;
        if value.is_null() {
            continue;
        }
        let kind = value
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or_default();
        if kind != "ResourceSlice" {
            return Err(at(format!(
                "kind {kind:?}: only ResourceSlice documents may describe devices"
            )));
        }
        let slice = match berth_proto::decode::object(Kind::ResourceSlice, value) {
            Ok(Object::ResourceSlice(s)) => s,
            Ok(_) => unreachable!("decoded as a ResourceSlice"),
            Err(e) => return Err(at(e.to_string())),
        };
        let placed = [
            ("spec.nodeName", slice.spec.node_name.is_some()),
            ("spec.allNodes", slice.spec.all_nodes.is_some()),
            ("spec.nodeSelector", slice.spec.node_selector.is_some()),
        ];
        if let Some((field, _)) = placed.iter().find(|(_, set)| *set) {
            return Err(at(format!(
                "{field}: Forbidden: the agent publishes the slice on its own node"
            )));
        }
        slices.push(*slice);
    }
    if slices.is_empty() {
        return Err(problem(path, "no ResourceSlice in the file".into()));
    }
    Ok(slices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_shorthand() {
        let gi16 = Quantity::parse("16Gi").expect("quantity");
        // (case, flag, want: count, model, memory or the error's start)
        let cases: [(&str, &str, Result<(u32, &str, Option<Quantity>), &str>); 7] = [
            ("count alone", "2", Ok((2, DEFAULT_GPU_MODEL, None))),
            ("with model", "4:a100", Ok((4, "a100", None))),
            ("with memory", "1:t4:16Gi", Ok((1, "t4", Some(gi16)))),
            ("zero", "0", Err("0 GPUs: must be between 1 and 128")),
            ("too many", "129", Err("129 GPUs")),
            ("not a number", "two", Err("\"two\" is not a number")),
            ("bad memory", "1:t4:lots", Err("GPU memory \"lots\"")),
        ];
        for (name, flag, want) in cases {
            match (parse_gpus(flag), want) {
                (Ok(got), Ok((count, model, memory))) => {
                    assert_eq!(
                        (got.count, got.model.as_str(), got.memory),
                        (count, model, memory),
                        "{name}"
                    );
                }
                (Err(got), Err(want)) => assert!(got.starts_with(want), "{name}: {got}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    fn write(dir: &tempfile::TempDir, text: &str) -> PathBuf {
        let path = dir.path().join("devices.yaml");
        std::fs::write(&path, text).expect("write");
        path
    }

    const NICS: &str = "\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: ignored}
spec:
  driver: net.example.com
  pool: {name: '', generation: 1, resourceSliceCount: 1}
  devices:
  - name: nic-0
    attributes:
      speed: {int: 100}
";

    #[test]
    fn a_devices_file_becomes_the_nodes_slices() {
        let dir = tempfile::tempdir().expect("dir");
        let path = write(&dir, NICS);
        let gpus = parse_gpus("2:t4").expect("gpus");
        let devices = Devices::load(Some(&path), Some(gpus)).expect("valid");
        let slices = devices.for_node("n1");
        let names: Vec<&str> = slices.iter().map(|s| s.metadata.name.as_str()).collect();
        assert_eq!(names, ["n1-net.example.com", "n1-gpu.berth.dev"]);
        for s in &slices {
            assert_eq!(s.spec.node_name.as_deref(), Some("n1"));
            assert_eq!(s.spec.pool.name, "n1");
            assert_eq!(s.spec.pool.resource_slice_count, 1);
        }
        assert_eq!(slices[1].spec.devices.len(), 2);
    }

    #[test]
    fn bad_devices_files_are_refused_naming_the_problem() {
        let placed = NICS.replace(
            "  driver: net.example.com",
            "  driver: net.example.com\n  nodeName: other",
        );
        let bad_name = NICS.replace("nic-0", "NIC_0");
        let gpu_driver = NICS.replace("net.example.com", "gpu.berth.dev");
        // (case, file, with --gpus, want in the message)
        let cases = [
            (
                "a node of its own",
                placed.as_str(),
                false,
                "document 1: spec.nodeName: Forbidden",
            ),
            (
                "another kind",
                "kind: Pod\n",
                false,
                "document 1: kind \"Pod\"",
            ),
            (
                "an unknown field",
                "kind: ResourceSlice\nspec: {colour: red}\n",
                false,
                "document 1: spec",
            ),
            (
                "invalid device name",
                bad_name.as_str(),
                false,
                "spec.devices[0].name",
            ),
            ("empty", "", false, "no ResourceSlice in the file"),
            (
                "the GPU driver twice",
                gpu_driver.as_str(),
                true,
                "driver gpu.berth.dev is published by --gpus already",
            ),
        ];
        for (name, text, gpus, want) in cases {
            let dir = tempfile::tempdir().expect("dir");
            let path = write(&dir, text);
            let gpus = gpus.then(|| parse_gpus("1").expect("gpus"));
            let err = Devices::load(Some(&path), gpus)
                .expect_err(name)
                .to_string();
            assert!(
                err.starts_with("--devices ") && err.contains(want),
                "{name}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn an_edited_file_replaces_the_devices_and_a_broken_one_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = write(&dir, NICS);
        let first = Devices::load(Some(&path), None).expect("valid");
        let (tx, mut rx) = watch::channel(Published {
            devices: first.clone(),
            refused: None,
        });
        let shutdown = CancellationToken::new();
        let watcher = tokio::spawn(watch_file(
            path.clone(),
            None,
            tx,
            std::time::Duration::from_millis(10),
            shutdown.clone(),
        ));
        let replace = |text: &str| {
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text).expect("write");
            std::fs::rename(&tmp, &path).expect("rename");
        };

        replace(&NICS.replace("nic-0", "nic-1"));
        rx.changed().await.expect("a change");
        let published = rx.borrow_and_update().clone();
        assert_eq!(published.refused, None);
        assert_eq!(published.devices.from_file[0].spec.devices[0].name, "nic-1");
        let second = published.devices;

        replace(&NICS.replace("nic-0", "NIC_1"));
        rx.changed().await.expect("a change");
        let published = rx.borrow_and_update().clone();
        let refused = published.refused.expect("refused");
        assert!(refused.contains("spec.devices[0].name"), "{refused}");
        assert_eq!(published.devices, second, "the last valid devices stay");

        // Back to valid content: the refusal clears.
        replace(&NICS.replace("nic-0", "nic-1"));
        rx.changed().await.expect("a change");
        assert_eq!(
            *rx.borrow_and_update(),
            Published {
                devices: second,
                refused: None
            }
        );
        assert_ne!(first, rx.borrow().devices);
        shutdown.cancel();
        watcher.await.expect("the watcher ends");
    }
}
