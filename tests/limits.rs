//! End-to-end tests of resource limits on process pods (issue 11 item 9): a pod that
//! allocates past its memory limit ends OOMKilled with exit code 137, through the kernel's
//! cgroups where the host has them and through the agent itself under `--cgroups none`; and
//! the cgroups of a killed agent's pods are cleaned, their processes killed, when the agent
//! starts again.

mod common;

use std::path::{Path, PathBuf};

use common::{str_at, wait_until, TestCluster};

/// No eviction thresholds: these agents run on the real machine, whose disk and memory
/// other work fills, and an eviction is not what is tested here.
const NO_EVICTION: &[&str] = &["--eviction-hard", ""];

/// What the agent logs when the kernel enforces memory limits.
const KERNEL_ENFORCES: &str = "memory limits are enforced by the kernel";

/// A command that allocates about 300MB and holds it: `tail` keeps the newline-free input
/// while more trickles in (see the process runtime's tests).
const ALLOCATE_300MB: &str =
    "{ head -c 300000000 /dev/zero; while sleep 0.1; do printf 0; done; } | tail";

/// Applies a pod bound to `node` whose one container runs `script` with `limits.memory`.
fn apply_pod(cluster: &TestCluster, pod: &str, node: &str, script: &str, memory: &str) {
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {pod}\nspec:\n  nodeName: {node}\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: sh\n    command: [sh, -c, {script:?}]\n    resources:\n      limits:\n        memory: {memory}\n"
    );
    let path = cluster.manifest(&format!("{pod}.yaml"), &yaml);
    cluster.berth_ok(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
}

/// Whether the agent's log says the kernel enforces memory limits; when it does not, the
/// test says so, and fails when `CI` is set.
fn kernel_enforces(cluster: &TestCluster, agent: &str) -> bool {
    // The runtime is set up, and says so, before the node registers.
    if cluster.log_of(agent).contains(KERNEL_ENFORCES) {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI needs writable memory cgroups (run as root):\n{}",
        cluster.log_of(agent)
    );
    eprintln!("no writable memory cgroup on this host: the kernel's OOM kill is not tested");
    false
}

#[test]
fn a_process_pod_over_its_memory_limit_ends_oom_killed() {
    let mut cluster = TestCluster::start();
    cluster.start_process_agent("kernel", NO_EVICTION);
    cluster.start_process_agent("self", &[NO_EVICTION, &["--cgroups", "none"]].concat());
    kernel_enforces(&cluster, "kernel");
    assert!(
        cluster
            .log_of("self")
            .contains("CPU limits and requests are not enforced on this host"),
        "{}",
        cluster.log_of("self")
    );
    for node in ["kernel", "self"] {
        apply_pod(
            &cluster,
            &format!("hog-{node}"),
            node,
            ALLOCATE_300MB,
            "64Mi",
        );
        apply_pod(
            &cluster,
            &format!("calm-{node}"),
            node,
            "while true; do sleep 0.1; done",
            "64Mi",
        );
    }
    for node in ["kernel", "self"] {
        let hog = format!("hog-{node}");
        wait_until(&format!("{hog} fails"), || {
            str_at(&cluster.pod_json(&hog), "/status/phase") == "Failed"
        });
        let pod = cluster.pod_json(&hog);
        assert_eq!(
            str_at(&pod, "/status/containerStatuses/0/state/terminated/reason"),
            "OOMKilled",
            "{pod}"
        );
        assert_eq!(
            pod.pointer("/status/containerStatuses/0/state/terminated/exitCode"),
            Some(&serde_json::json!(137)),
            "{pod}"
        );
        let calm = cluster.pod_json(&format!("calm-{node}"));
        assert_eq!(str_at(&calm, "/status/phase"), "Running", "{calm}");
    }
}

/// The folders of the pod cgroup `pod<uid>` in every hierarchy (`/sys/fs/cgroup` itself on a
/// cgroup v2 host, its subfolders on a v1 or hybrid one).
fn pod_cgroups(uid: &str) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut mounts = vec![root.to_path_buf()];
    mounts.extend(
        std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path()),
    );
    let mut found = Vec::new();
    for mount in mounts {
        for node in std::fs::read_dir(mount.join("berth"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let pod = node.path().join(format!("pod{uid}"));
            if pod.is_dir() {
                found.push(pod);
            }
        }
    }
    found
}

/// Whether a process runs (a zombie does not).
fn runs(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[test]
fn an_agent_restarted_after_a_crash_ends_what_its_pods_left_running() {
    let mut cluster = TestCluster::start();
    cluster.start_process_agent("crashy", NO_EVICTION);
    if !kernel_enforces(&cluster, "crashy") {
        return;
    }
    apply_pod(
        &cluster,
        "sleeper",
        "crashy",
        "while true; do sleep 0.1; done",
        "64Mi",
    );
    wait_until("sleeper runs", || {
        str_at(&cluster.pod_json("sleeper"), "/status/phase") == "Running"
    });
    let uid = str_at(&cluster.pod_json("sleeper"), "/metadata/uid").to_string();
    let groups = pod_cgroups(&uid);
    assert!(!groups.is_empty(), "the pod has cgroups");
    let procs = |groups: &[PathBuf]| -> Vec<String> {
        groups
            .iter()
            .filter_map(|g| std::fs::read_to_string(g.join("ctr-main/cgroup.procs")).ok())
            .flat_map(|t| t.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect()
    };
    let old = procs(&groups);
    assert!(
        !old.is_empty(),
        "the container's processes are in its cgroup"
    );

    cluster.agent("crashy").kill();
    assert!(old.iter().any(|p| runs(p)), "the pod outlives its agent");
    cluster.start_process_agent("crashy", NO_EVICTION);
    wait_until("the old processes are killed", || {
        !old.iter().any(|p| runs(p))
    });
    wait_until("the pod runs again in new processes", || {
        let now = procs(&pod_cgroups(&uid));
        !now.is_empty() && now.iter().all(|p| !old.contains(p))
    });
}
