//! How a pod's allocated devices reach its containers: environment variables, set by the
//! server on the copy of the pod it sends the agent, so every runtime gets them.
//!
//! A container sees the claims it lists in `resources.claims` (all their requests, or the
//! one it names), as in Kubernetes. For each claim and request it gets
//! `BERTH_DEVICE_<CLAIM>_<REQUEST>=driver/pool/device[,...]` (the pod's claim entry name and
//! the request name, upper-cased, every character other than a letter or digit made `_`).
//! When any of its devices comes from a GPU driver ([`GPU_DRIVERS`]), it also gets
//! `CUDA_VISIBLE_DEVICES` and `NVIDIA_VISIBLE_DEVICES`: the devices' `index` attributes,
//! ascending, comma-separated, as NVIDIA's container runtime expects.

use std::collections::{BTreeMap, BTreeSet};

use berth_model::model::{Container, Device, EnvVar, Pod, ResourceClaim, ResourceSlice};

/// Drivers whose devices are GPUs indexed by their `index` attribute.
pub const GPU_DRIVERS: &[&str] = &["gpu.berth.dev", "gpu.nvidia.com"];

/// Prefix of the per-request variables.
pub const DEVICE_ENV_PREFIX: &str = "BERTH_DEVICE_";

fn env_name_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The variables for `container` of `pod`. `claims` maps the pod's claim entry names
/// (`spec.resourceClaims[].name`) to their claims; `device` finds a device by driver, pool
/// and name (for its `index`).
pub fn device_env<'a>(
    container: &Container,
    claims: &BTreeMap<String, ResourceClaim>,
    device: impl Fn(&str, &str, &str) -> Option<&'a Device>,
) -> Vec<EnvVar> {
    let mut per_request: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut gpu_indices: BTreeSet<i64> = BTreeSet::new();
    for r in &container.resources.claims {
        let Some(claim) = claims.get(&r.name) else {
            continue;
        };
        let results = claim
            .status
            .allocation
            .iter()
            .flat_map(|a| &a.devices.results);
        for result in results {
            let top = result
                .request
                .split_once('/')
                .map_or(result.request.as_str(), |(t, _)| t);
            if !r.request.is_empty() && r.request != top && r.request != result.request {
                continue;
            }
            let name = format!(
                "{DEVICE_ENV_PREFIX}{}_{}",
                env_name_part(&r.name),
                env_name_part(top)
            );
            per_request.entry(name).or_default().push(format!(
                "{}/{}/{}",
                result.driver, result.pool, result.device
            ));
            if GPU_DRIVERS.contains(&result.driver.as_str()) {
                let index = device(&result.driver, &result.pool, &result.device)
                    .and_then(|d| index_of(d, &result.driver));
                if let Some(i) = index {
                    gpu_indices.insert(i);
                }
            }
        }
    }
    let mut env: Vec<EnvVar> = per_request
        .into_iter()
        .map(|(name, devices)| EnvVar {
            name,
            value: devices.join(","),
            ..Default::default()
        })
        .collect();
    if !gpu_indices.is_empty() {
        let list = gpu_indices
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        for name in ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"] {
            env.push(EnvVar {
                name: name.to_string(),
                value: list.clone(),
                ..Default::default()
            });
        }
    }
    env
}

/// The device `name` of `driver`'s pool `pool` among `slices`.
pub fn find_device<'a>(
    slices: &'a [ResourceSlice],
    driver: &str,
    pool: &str,
    name: &str,
) -> Option<&'a Device> {
    slices
        .iter()
        .filter(|s| s.spec.driver == driver && s.spec.pool.name == pool)
        .flat_map(|s| &s.spec.devices)
        .find(|d| d.name == name)
}

/// The device's `index` attribute (bare, or qualified with its driver's domain).
fn index_of(device: &Device, driver: &str) -> Option<i64> {
    device
        .attributes
        .get("index")
        .or_else(|| device.attributes.get(&format!("{driver}/index")))
        .and_then(|a| a.int)
}

/// The pod with the device variables put first in each container's environment (the
/// container's own variables, later, win on a name clash).
pub fn with_device_env<'a>(
    pod: &Pod,
    claims: &BTreeMap<String, ResourceClaim>,
    device: impl Fn(&str, &str, &str) -> Option<&'a Device> + Copy,
) -> Pod {
    let mut pod = pod.clone();
    for c in pod
        .spec
        .init_containers
        .iter_mut()
        .chain(pod.spec.containers.iter_mut())
    {
        let mut env = device_env(c, claims, device);
        if env.is_empty() {
            continue;
        }
        env.append(&mut c.env);
        c.env = env;
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_model::model::ResourceClaimRef;
    use berth_model::testing::{DeviceBuilder, ResourceClaimBuilder, ResourceSliceBuilder};

    fn slices() -> Vec<ResourceSlice> {
        vec![
            ResourceSliceBuilder::new("n1", "gpu.berth.dev")
                .device(DeviceBuilder::new("gpu-0").int("index", 0))
                .device(DeviceBuilder::new("gpu-1").int("index", 1))
                .build(),
            ResourceSliceBuilder::new("n1", "nic.example.com")
                .device(DeviceBuilder::new("eth1"))
                .build(),
        ]
    }

    #[test]
    fn containers_see_the_devices_of_the_claims_they_list() {
        struct Case {
            name: &'static str,
            uses: Vec<ResourceClaimRef>,
            want: Vec<(&'static str, &'static str)>,
        }
        let uses = |name: &str, request: &str| ResourceClaimRef {
            name: name.into(),
            request: request.into(),
        };
        let cases = [
            Case {
                name: "no claim listed: no device",
                uses: vec![],
                want: vec![],
            },
            Case {
                name: "a whole claim: every request, GPU indices ascending",
                uses: vec![uses("gpus", "")],
                want: vec![
                    ("BERTH_DEVICE_GPUS_A", "gpu.berth.dev/n1/gpu-1"),
                    ("BERTH_DEVICE_GPUS_B", "gpu.berth.dev/n1/gpu-0"),
                    ("CUDA_VISIBLE_DEVICES", "0,1"),
                    ("NVIDIA_VISIBLE_DEVICES", "0,1"),
                ],
            },
            Case {
                name: "one request of it",
                uses: vec![uses("gpus", "b")],
                want: vec![
                    ("BERTH_DEVICE_GPUS_B", "gpu.berth.dev/n1/gpu-0"),
                    ("CUDA_VISIBLE_DEVICES", "0"),
                    ("NVIDIA_VISIBLE_DEVICES", "0"),
                ],
            },
            Case {
                name: "a device of another driver: no CUDA variables",
                uses: vec![uses("my-nic", "")],
                want: vec![("BERTH_DEVICE_MY_NIC_NIC", "nic.example.com/n1/eth1")],
            },
        ];
        let gpus = ResourceClaimBuilder::new("gpus")
            .allocated(
                "n1",
                &[
                    ("a", "gpu.berth.dev", "n1", "gpu-1"),
                    ("b", "gpu.berth.dev", "n1", "gpu-0"),
                ],
            )
            .build();
        let nic = ResourceClaimBuilder::new("nic")
            .allocated("n1", &[("nic", "nic.example.com", "n1", "eth1")])
            .build();
        let claims = BTreeMap::from([("gpus".to_string(), gpus), ("my-nic".to_string(), nic)]);
        let slices = slices();
        let device =
            |driver: &str, pool: &str, name: &str| find_device(&slices, driver, pool, name);
        for case in cases {
            let mut c = berth_model::model::Container::default();
            c.resources.claims = case.uses;
            let got: Vec<(String, String)> = device_env(&c, &claims, device)
                .into_iter()
                .map(|e| (e.name, e.value))
                .collect();
            let want: Vec<(String, String)> = case
                .want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "{}", case.name);
        }
    }
}
