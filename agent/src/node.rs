//! The Node this agent registers: built from the flags and from what the machine reports
//! (hostname, CPU count, `/proc/meminfo`), plus the kubelet-style flag parsers for labels
//! and taints.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use berth_proto::model::{
    Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, ObjectMeta, ResourceList, StringMap,
    Taint, Time,
};
use berth_proto::names;
use berth_proto::taints;
use berth_proto::Quantity;
use tonic::codegen::http::Uri;
use tracing::debug;

use crate::cli::Args;
use crate::error::{Error, Result};
use crate::eviction::Signal;

/// Reason of the Ready condition while the agent runs, as kubelet reports it.
pub const READY_REASON: &str = "KubeletReady";
/// Message of the Ready condition while the agent runs.
pub const READY_MESSAGE: &str = "berth-agent is posting ready status";

/// Where the kernel reports the machine's memory.
const MEMINFO_PATH: &str = "/proc/meminfo";
/// Where the kernel reports the machine's hostname.
const HOSTNAME_PATH: &str = "/proc/sys/kernel/hostname";

/// Everything the agent registers about its node, resolved from flags and the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    /// Node name (the machine's hostname, lowercased, unless `--node-name` is given).
    pub name: String,
    /// Labels from `--labels`; the well-known labels are added by [`NodeConfig::to_node`].
    pub labels: StringMap,
    /// Taints from `--register-with-taints`, unique by key and effect.
    pub taints: Vec<Taint>,
    /// CPU capacity (cores, possibly fractional).
    pub cpu: Quantity,
    /// Memory capacity in bytes.
    pub memory: Quantity,
    /// Maximum number of pods.
    pub pods: u32,
    /// The node's IP address, reported as `InternalIP` and as pods' `hostIP`.
    pub node_ip: Option<IpAddr>,
    /// The devices it publishes (`--devices`, `--gpus`).
    pub devices: crate::devices::Devices,
}

impl NodeConfig {
    /// Resolves the flags, reading the machine for what they leave out: the hostname, the
    /// number of CPUs, `MemTotal`, and the local address the machine uses to reach `server`.
    pub async fn from_args(args: &Args, server: &Uri) -> Result<Self> {
        let name = match &args.node_name {
            Some(name) => name.clone(),
            None => hostname()?,
        };
        let memory = match args.memory {
            Some(memory) => memory,
            None => machine_memory()?,
        };
        let node_ip = match args.node_ip {
            Some(ip) => Some(ip),
            None => detect_node_ip(server).await,
        };
        Ok(NodeConfig {
            name,
            labels: args.labels.iter().cloned().collect(),
            taints: {
                taints::check_unique(&args.register_with_taints)?;
                args.register_with_taints.clone()
            },
            cpu: args.cpu.unwrap_or_else(machine_cpus),
            memory,
            pods: args.pods,
            node_ip,
            devices: crate::devices::Devices::load(args.devices.as_deref(), args.gpus.clone())?,
        })
    }

    /// The Node to register: well-known labels (overridden by `--labels`, as kubelet lets
    /// them be), taints, capacity equal to allocatable, addresses, and a Ready condition
    /// heartbeating at `now`, ready since `ready_since`.
    pub fn to_node(&self, now: Time, ready_since: Time) -> Node {
        let mut labels = StringMap::new();
        labels.insert(names::LABEL_HOSTNAME.to_string(), self.name.clone());
        labels.insert(
            names::LABEL_OS.to_string(),
            std::env::consts::OS.to_string(),
        );
        labels.insert(
            names::LABEL_ARCH.to_string(),
            go_arch(std::env::consts::ARCH).to_string(),
        );
        for (key, value) in &self.labels {
            if let Some(default) = labels.insert(key.clone(), value.clone()) {
                if &default != value {
                    debug!(label = %key, from = %default, to = %value, "flag overrides a default node label");
                }
            }
        }
        let resources: ResourceList = [
            ("cpu".to_string(), self.cpu),
            ("memory".to_string(), self.memory),
            (
                "pods".to_string(),
                Quantity::from_value(i64::from(self.pods)),
            ),
        ]
        .into_iter()
        .collect();
        let mut addresses = Vec::new();
        if let Some(ip) = self.node_ip {
            addresses.push(NodeAddress {
                type_: "InternalIP".to_string(),
                address: ip.to_string(),
            });
        }
        addresses.push(NodeAddress {
            type_: "Hostname".to_string(),
            address: self.name.clone(),
        });
        Node {
            api_version: "v1".to_string(),
            kind: "Node".to_string(),
            metadata: ObjectMeta {
                name: self.name.clone(),
                labels,
                ..ObjectMeta::default()
            },
            spec: NodeSpec {
                taints: self.taints.clone(),
                ..NodeSpec::default()
            },
            status: NodeStatus {
                capacity: resources.clone(),
                allocatable: resources,
                conditions: vec![ready_condition(now, ready_since)],
                addresses,
                ..NodeStatus::default()
            },
        }
    }

    /// The address pods report as `status.hostIP`: the node IP, or empty when unknown.
    pub fn host_ip(&self) -> String {
        self.node_ip.map(|ip| ip.to_string()).unwrap_or_default()
    }
}

/// The Ready=True condition the agent posts with each heartbeat.
pub fn ready_condition(heartbeat: Time, since: Time) -> NodeCondition {
    NodeCondition {
        type_: names::CONDITION_READY.to_string(),
        status: names::STATUS_TRUE.to_string(),
        reason: READY_REASON.to_string(),
        message: READY_MESSAGE.to_string(),
        last_heartbeat_time: Some(heartbeat),
        last_transition_time: Some(since),
    }
}

/// The node condition of an eviction signal (MemoryPressure, DiskPressure, PIDPressure),
/// True while the signal is under pressure, with kubelet's reasons and messages.
pub fn pressure_condition(signal: Signal, pressure: bool, now: Time) -> NodeCondition {
    let (reason, message) = match (signal, pressure) {
        (Signal::MemoryAvailable, false) => (
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        (Signal::MemoryAvailable, true) => (
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
        ),
        (Signal::NodeFsAvailable, false) => {
            ("KubeletHasNoDiskPressure", "kubelet has no disk pressure")
        }
        (Signal::NodeFsAvailable, true) => ("KubeletHasDiskPressure", "kubelet has disk pressure"),
        (Signal::PidAvailable, false) => (
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        (Signal::PidAvailable, true) => (
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
        ),
    };
    NodeCondition {
        type_: signal.condition().to_string(),
        status: names::status_of(pressure).to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_heartbeat_time: Some(now),
        last_transition_time: Some(now),
    }
}

/// Rust's name of a CPU architecture in Go's spelling, which Kubernetes' `kubernetes.io/arch`
/// label uses; unknown names pass through.
pub fn go_arch(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// Parses one `--labels` entry, `key=value` (the value may be empty), checking the key and
/// the value as Kubernetes does.
pub fn parse_label(entry: &str) -> Result<(String, String)> {
    let invalid = |reason: String| Error::InvalidLabel {
        entry: entry.to_string(),
        reason,
    };
    let Some((key, value)) = entry.split_once('=') else {
        return Err(invalid("expected key=value".to_string()));
    };
    let key = key.trim();
    check_qualified_name(key).map_err(|r| invalid(format!("key {key:?} {r}")))?;
    check_label_value(value).map_err(|r| invalid(format!("value {value:?} {r}")))?;
    Ok((key.to_string(), value.to_string()))
}

/// Checks a label or taint key with the API's own rules.
fn check_qualified_name(key: &str) -> std::result::Result<(), String> {
    berth_proto::validate::validate_label_key(key).map_err(|problems| problems.join("; "))
}

/// Checks a label or taint value with the API's own rules.
fn check_label_value(value: &str) -> std::result::Result<(), String> {
    berth_proto::validate::validate_label_value(value).map_err(|problems| problems.join("; "))
}

/// The machine's hostname, trimmed and lowercased as kubelet does for its default node name.
pub fn hostname() -> Result<String> {
    let from_kernel = std::fs::read_to_string(HOSTNAME_PATH).ok();
    let name = from_kernel
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_lowercase())
        .unwrap_or_default();
    if name.is_empty() {
        Err(Error::HostnameUnknown)
    } else {
        Ok(name)
    }
}

/// The number of CPUs this process may use, as a CPU quantity.
pub fn machine_cpus() -> Quantity {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    Quantity::from_value(i64::try_from(cpus).unwrap_or(i64::MAX))
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`), in bytes.
pub fn machine_memory() -> Result<Quantity> {
    read_meminfo_total(Path::new(MEMINFO_PATH))
}

/// `MemTotal` of a meminfo file, in bytes.
pub fn read_meminfo_total(path: &Path) -> Result<Quantity> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadMachineFile {
        path: path.to_path_buf(),
        source,
    })?;
    parse_meminfo_total(&text)
}

/// Finds `MemTotal` in the text of `/proc/meminfo` and returns it in bytes. The kernel writes
/// `kB` for KiB.
pub fn parse_meminfo_total(text: &str) -> Result<Quantity> {
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .ok_or(Error::MemTotalMissing)?;
    let mut fields = line.split_whitespace();
    let amount: i64 = fields
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or(Error::MemTotalMissing)?;
    let unit = match fields.next() {
        None => 1,
        Some("kB") => 1024,
        Some(_) => return Err(Error::MemTotalMissing),
    };
    if fields.next().is_some() {
        return Err(Error::MemTotalMissing);
    }
    amount
        .checked_mul(unit)
        .map(Quantity::from_value)
        .ok_or(Error::MemTotalMissing)
}

/// The local address this machine uses to reach the scheduler: resolves the server's host and
/// asks the kernel which source address routes there (a connected UDP socket sends nothing).
/// `None` when that fails or yields an unspecified address.
pub async fn detect_node_ip(server: &Uri) -> Option<IpAddr> {
    let host = server.host()?.trim_start_matches('[').trim_end_matches(']');
    let port = server.port_u16().unwrap_or(80);
    let target: SocketAddr = tokio::net::lookup_host((host, port)).await.ok()?.next()?;
    let bind: SocketAddr = if target.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let socket = tokio::net::UdpSocket::bind(bind).await.ok()?;
    socket.connect(target).await.ok()?;
    let ip = socket.local_addr().ok()?.ip();
    debug!(%ip, server = %server, "detected node IP");
    (!ip.is_unspecified()).then_some(ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Checks one flag parser's answer for `entry` (the parsed value seen as the table shows
    /// it) against a table row: on success the values are equal; on failure the error names
    /// the entry and contains the wanted text.
    fn check_parsed<W: std::fmt::Debug + PartialEq>(
        name: &str,
        entry: &str,
        got: std::result::Result<W, &Error>,
        want: std::result::Result<W, &str>,
    ) {
        match (got, want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
            (Err(e), Err(want)) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(want) && msg.contains(entry),
                    "{name}: error {msg:?} should name the entry and contain {want:?}"
                );
            }
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn parse_label_cases() {
        struct Case {
            name: &'static str,
            entry: &'static str,
            want: std::result::Result<(&'static str, &'static str), &'static str>,
        }
        let cases = [
            Case {
                name: "plain",
                entry: "zone=a",
                want: Ok(("zone", "a")),
            },
            Case {
                name: "prefixed",
                entry: "topology.kubernetes.io/zone=eu-1a",
                want: Ok(("topology.kubernetes.io/zone", "eu-1a")),
            },
            Case {
                name: "empty value",
                entry: "gpu=",
                want: Ok(("gpu", "")),
            },
            Case {
                name: "no equals",
                entry: "gpu",
                want: Err("expected key=value"),
            },
            Case {
                name: "empty key",
                entry: "=x",
                want: Err("name part must be non-empty"),
            },
            Case {
                name: "empty prefix",
                entry: "/zone=a",
                want: Err("prefix part must be non-empty"),
            },
            Case {
                name: "too long value",
                entry: "k=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                want: Err("no more than 63 characters"),
            },
            Case {
                name: "bad value",
                entry: "k=a=b",
                want: Err("alphanumeric characters"),
            },
        ];
        for case in cases {
            let got = parse_label(case.entry);
            let got = got.as_ref().map(|(k, v)| (k.as_str(), v.as_str()));
            check_parsed(case.name, case.entry, got, case.want);
        }
    }

    #[test]
    fn flags_parse_lists() {
        struct Case {
            name: &'static str,
            argv: Vec<&'static str>,
            want_taints: usize,
            want_labels: Vec<(&'static str, &'static str)>,
            want_error: Option<&'static str>,
        }
        let cases = vec![
            Case {
                name: "comma lists",
                argv: vec![
                    "--register-with-taints",
                    "a=b:NoSchedule,c:NoExecute",
                    "--labels",
                    "x=1,y=2",
                ],
                want_taints: 2,
                want_labels: vec![("x", "1"), ("y", "2")],
                want_error: None,
            },
            Case {
                name: "repeated flags",
                argv: vec!["--labels", "x=1", "--labels", "y=2"],
                want_taints: 0,
                want_labels: vec![("x", "1"), ("y", "2")],
                want_error: None,
            },
            Case {
                name: "bad taint in a list is named",
                argv: vec!["--register-with-taints", "a=b:NoSchedule,c=d"],
                want_taints: 0,
                want_labels: vec![],
                want_error: Some("invalid taint spec: c=d"),
            },
            Case {
                name: "bad label in a list is named",
                argv: vec!["--labels", "x=1,oops"],
                want_taints: 0,
                want_labels: vec![],
                want_error: Some("\"oops\""),
            },
        ];
        for case in cases {
            let argv = std::iter::once("berth-agent").chain(case.argv.iter().copied());
            match (Args::try_parse_from(argv), case.want_error) {
                (Ok(args), None) => {
                    assert_eq!(
                        args.register_with_taints.len(),
                        case.want_taints,
                        "{}",
                        case.name
                    );
                    let labels: Vec<(&str, &str)> = args
                        .labels
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect();
                    assert_eq!(labels, case.want_labels, "{}", case.name);
                }
                (Err(e), Some(want)) => {
                    let msg = e.to_string();
                    assert!(msg.contains(want), "{}: {msg:?} lacks {want:?}", case.name);
                }
                (Ok(_), Some(want)) => panic!("{}: parsed, want error {want:?}", case.name),
                (Err(e), None) => panic!("{}: unexpected error {e}", case.name),
            }
        }
    }

    #[test]
    fn parse_meminfo_cases() {
        struct Case {
            name: &'static str,
            text: &'static str,
            want: Option<i64>,
        }
        let cases = [
            Case {
                name: "kernel format",
                text: "MemTotal:       16314948 kB\nMemFree:         1234567 kB\n",
                want: Some(16_314_948 * 1024),
            },
            Case {
                name: "not the first line",
                text: "Foo: 1 kB\nMemTotal: 2048 kB\n",
                want: Some(2048 * 1024),
            },
            Case {
                name: "no unit means bytes",
                text: "MemTotal: 4096\n",
                want: Some(4096),
            },
            Case {
                name: "missing",
                text: "MemFree: 1 kB\n",
                want: None,
            },
            Case {
                name: "not a number",
                text: "MemTotal: lots kB\n",
                want: None,
            },
            Case {
                name: "unknown unit",
                text: "MemTotal: 1 MB\n",
                want: None,
            },
        ];
        for case in cases {
            let got = parse_meminfo_total(case.text).ok().map(|q| q.value());
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    #[test]
    fn meminfo_file_of_this_machine_has_memory() {
        let path = Path::new(MEMINFO_PATH);
        if path.exists() {
            let memory = read_meminfo_total(path).expect("this machine's meminfo parses");
            assert!(memory.value() > 0);
        }
    }

    #[test]
    fn go_arch_names() {
        for (rust, go) in [
            ("x86_64", "amd64"),
            ("aarch64", "arm64"),
            ("riscv64", "riscv64"),
        ] {
            assert_eq!(go_arch(rust), go, "{rust}");
        }
    }

    #[tokio::test]
    async fn node_built_from_args() {
        let args = Args::try_parse_from([
            "berth-agent",
            "--node-name",
            "worker-1",
            "--node-ip",
            "10.0.0.7",
            "--cpu",
            "4",
            "--memory",
            "8Gi",
            "--pods",
            "20",
            "--labels",
            "zone=a,kubernetes.io/os=plan9",
            "--register-with-taints",
            "dedicated=gpu:NoSchedule",
        ])
        .unwrap();
        let server: Uri = "http://127.0.0.1:7070".parse().unwrap();
        let config = NodeConfig::from_args(&args, &server).await.unwrap();
        let now = Time::now();
        let node = config.to_node(now, now);

        assert_eq!(node.metadata.name, "worker-1");
        let labels = &node.metadata.labels;
        assert_eq!(labels[names::LABEL_HOSTNAME], "worker-1");
        assert_eq!(
            labels[names::LABEL_OS],
            "plan9",
            "--labels overrides a default label"
        );
        assert_eq!(labels[names::LABEL_ARCH], go_arch(std::env::consts::ARCH));
        assert_eq!(labels["zone"], "a");
        assert_eq!(
            node.spec.taints,
            vec![taints::parse_taint("dedicated=gpu:NoSchedule").unwrap()]
        );
        for list in [&node.status.capacity, &node.status.allocatable] {
            assert_eq!(list["cpu"], Quantity::from_value(4));
            assert_eq!(list["memory"].to_string(), "8Gi");
            assert_eq!(list["pods"], Quantity::from_value(20));
        }
        let ready = node.condition("Ready").expect("a Ready condition");
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("True", READY_REASON)
        );
        assert_eq!(ready.last_heartbeat_time, Some(now));
        let addresses: Vec<(&str, &str)> = node
            .status
            .addresses
            .iter()
            .map(|a| (a.type_.as_str(), a.address.as_str()))
            .collect();
        assert_eq!(
            addresses,
            vec![("InternalIP", "10.0.0.7"), ("Hostname", "worker-1")]
        );
        assert_eq!(config.host_ip(), "10.0.0.7");
    }

    #[tokio::test]
    async fn machine_defaults_fill_unset_flags() {
        let args = Args::try_parse_from(["berth-agent", "--node-name", "n"]).unwrap();
        let server: Uri = "http://127.0.0.1:7070".parse().unwrap();
        let config = NodeConfig::from_args(&args, &server).await.unwrap();
        assert_eq!(config.cpu, machine_cpus());
        assert_eq!(config.pods, 110);
        assert!(config.memory.value() > 0);
        assert_eq!(
            config.node_ip,
            Some(IpAddr::from([127, 0, 0, 1])),
            "the route to a loopback server leaves from loopback"
        );
    }
}
