//! Resource vectors in plain integers (millicores, bytes, counts), so every fit check is
//! arithmetic, and the Kubernetes rules for a pod's effective request.

use crate::model::{Container, Pod, ResourceList, RestartPolicy};

/// Name of the CPU resource.
pub const CPU: &str = "cpu";
/// Name of the memory resource.
pub const MEMORY: &str = "memory";
/// Name of the ephemeral storage resource.
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// Name of the pod-count resource.
pub const PODS: &str = "pods";

/// CPU that scoring assumes for a container that requests none (kube's DefaultMilliCPURequest).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory that scoring assumes for a container that requests none (kube's DefaultMemoryRequest).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A vector of resources: the well-known ones as fields, extended ones (`example.com/gpu`,
/// `hugepages-2Mi`) in a small sorted list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in millicores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Pod slots (meaningful for allocatable; requested counts pods directly).
    pub allowed_pods: i64,
    /// Extended and other scalar resources, sorted by name, whole units.
    pub scalar: Vec<(String, i64)>,
}

impl Resources {
    /// Reads a resource list: cpu in millicores, everything else in whole units (rounded up).
    pub fn from_list(list: &ResourceList) -> Self {
        let mut r = Resources::default();
        for (name, q) in list {
            match name.as_str() {
                CPU => r.milli_cpu = q.millis(),
                MEMORY => r.memory = q.value(),
                EPHEMERAL_STORAGE => r.ephemeral_storage = q.value(),
                PODS => r.allowed_pods = q.value(),
                other => r.set_scalar(other, q.value()),
            }
        }
        r
    }

    /// The amount of a scalar resource (0 when absent).
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .map_or(0, |i| self.scalar[i].1)
    }

    /// Sets the amount of a scalar resource.
    pub fn set_scalar(&mut self, name: &str, value: i64) {
        match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => self.scalar[i].1 = value,
            Err(i) => self.scalar.insert(i, (name.to_string(), value)),
        }
    }

    /// The amount of any resource by name (cpu in millicores).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.allowed_pods,
            other => self.scalar(other),
        }
    }

    /// Adds `other` to `self`, component by component.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.allowed_pods += other.allowed_pods;
        for (name, v) in &other.scalar {
            let cur = self.scalar(name);
            self.set_scalar(name, cur + v);
        }
    }

    /// Subtracts `other` from `self`, component by component.
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.allowed_pods -= other.allowed_pods;
        for (name, v) in &other.scalar {
            let cur = self.scalar(name);
            self.set_scalar(name, cur - v);
        }
    }

    /// Component-wise maximum of `self` and `other`, into `self`.
    pub fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.allowed_pods = self.allowed_pods.max(other.allowed_pods);
        for (name, v) in &other.scalar {
            let cur = self.scalar(name);
            self.set_scalar(name, cur.max(*v));
        }
    }
}

/// A container's requests, with limits standing in for requests that are left out (the API
/// server's defaulting).
fn container_requests(c: &Container) -> Resources {
    let mut list = c.resources.requests.clone();
    for (name, limit) in &c.resources.limits {
        list.get_or_insert(name, *limit);
    }
    Resources::from_list(&list)
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy == Some(RestartPolicy::Always)
}

/// The sum over a pod's containers of `per` container, as kube aggregates requests and
/// limits: app containers plus sidecars; or, if larger, what any init container needs
/// together with the sidecars started before it.
fn aggregate(pod: &Pod, per: impl Fn(&Container) -> Resources) -> Resources {
    let spec = &pod.spec;
    let mut total = Resources::default();
    for c in &spec.containers {
        total.add(&per(c));
    }
    // Init containers run one at a time; sidecars keep running once started.
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for c in &spec.init_containers {
        let r = per(c);
        if is_sidecar(c) {
            sidecars.add(&r);
            init_max.max_with(&sidecars);
        } else {
            let mut during = sidecars.clone();
            during.add(&r);
            init_max.max_with(&during);
        }
    }
    total.add(&sidecars);
    total.max_with(&init_max);
    total
}

/// Replaces cpu and memory of `total` by the pod-level value of `list` where it names
/// them (only cpu and memory are supported at pod level, as in Kubernetes).
fn apply_pod_level(total: &mut Resources, list: &ResourceList) {
    let level = Resources::from_list(list);
    if list.contains_key(CPU) {
        total.milli_cpu = level.milli_cpu;
    }
    if list.contains_key(MEMORY) {
        total.memory = level.memory;
    }
}

/// The pod's effective request as kube computes it (`resource.PodRequests`): the sum of app
/// containers, plus sidecars; or, if larger, what any init container needs together with the
/// sidecars started before it; plus `spec.overhead`. Pod-level `spec.resources` replaces the
/// container sum for the resources it names.
pub fn pod_requests(pod: &Pod) -> Resources {
    let spec = &pod.spec;
    let mut reqs = aggregate(pod, container_requests);
    if let Some(pod_level) = &spec.resources {
        let mut list = pod_level.requests.clone();
        for (name, limit) in &pod_level.limits {
            list.get_or_insert(name, *limit);
        }
        apply_pod_level(&mut reqs, &list);
    }
    reqs.add(&Resources::from_list(&spec.overhead));
    reqs.allowed_pods = 0;
    reqs
}

/// The pod's effective limit as kube computes it (`resource.PodLimits`): containers
/// aggregated as in [`pod_requests`] but over their limits (a resource a container does not
/// limit counts as 0 there), pod-level `spec.resources.limits` replacing cpu and memory,
/// and `spec.overhead` added to the resources that have a limit.
pub fn pod_limits(pod: &Pod) -> Resources {
    let spec = &pod.spec;
    let mut limits = aggregate(pod, |c| Resources::from_list(&c.resources.limits));
    if let Some(pod_level) = &spec.resources {
        apply_pod_level(&mut limits, &pod_level.limits);
    }
    let overhead = Resources::from_list(&spec.overhead);
    let add_if_limited = |limit: &mut i64, extra: i64| {
        if *limit > 0 {
            *limit += extra;
        }
    };
    add_if_limited(&mut limits.milli_cpu, overhead.milli_cpu);
    add_if_limited(&mut limits.memory, overhead.memory);
    add_if_limited(&mut limits.ephemeral_storage, overhead.ephemeral_storage);
    for (name, extra) in &overhead.scalar {
        let mut limit = limits.scalar(name);
        add_if_limited(&mut limit, *extra);
        if limit > 0 {
            limits.set_scalar(name, limit);
        }
    }
    limits.allowed_pods = 0;
    limits
}

/// The cpu and memory that scoring counts for a pod: as [`pod_requests`], except that a
/// container without a cpu or memory request counts as 100m and 200Mi (kube's non-zero
/// requests, so that empty pods still spread).
pub fn pod_non_zero_requests(pod: &Pod) -> (i64, i64) {
    let non_zero = |c: &Container| {
        let r = container_requests(c);
        let cpu = if c.resources.requests.contains_key(CPU) || c.resources.limits.contains_key(CPU)
        {
            r.milli_cpu
        } else {
            DEFAULT_MILLI_CPU_REQUEST
        };
        let mem = if c.resources.requests.contains_key(MEMORY)
            || c.resources.limits.contains_key(MEMORY)
        {
            r.memory
        } else {
            DEFAULT_MEMORY_REQUEST
        };
        (cpu, mem)
    };
    let spec = &pod.spec;
    let (mut cpu, mut mem) = (0, 0);
    for c in &spec.containers {
        let (c_cpu, c_mem) = non_zero(c);
        cpu += c_cpu;
        mem += c_mem;
    }
    let (mut side_cpu, mut side_mem) = (0, 0);
    let (mut init_cpu, mut init_mem) = (0, 0);
    for c in &spec.init_containers {
        let (c_cpu, c_mem) = non_zero(c);
        if is_sidecar(c) {
            side_cpu += c_cpu;
            side_mem += c_mem;
            init_cpu = init_cpu.max(side_cpu);
            init_mem = init_mem.max(side_mem);
        } else {
            init_cpu = init_cpu.max(side_cpu + c_cpu);
            init_mem = init_mem.max(side_mem + c_mem);
        }
    }
    cpu = (cpu + side_cpu).max(init_cpu);
    mem = (mem + side_mem).max(init_mem);
    if let Some(pod_level) = &spec.resources {
        let level = Resources::from_list(&pod_level.requests);
        if pod_level.requests.contains_key(CPU) {
            cpu = level.milli_cpu;
        }
        if pod_level.requests.contains_key(MEMORY) {
            mem = level.memory;
        }
    }
    let overhead = Resources::from_list(&spec.overhead);
    (cpu + overhead.milli_cpu, mem + overhead.memory)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ResourceRequirements;
    use crate::testing::{container_with_limits, qty, PodBuilder};

    #[test]
    fn pod_limits_like_kube() {
        let c = |name: &str, limits: &[(&str, &str)]| container_with_limits(name, &[], limits);
        // (case, pod, want milli_cpu, want memory)
        let cases = [
            (
                "app containers summed",
                PodBuilder::new("p")
                    .container(c("a", &[("cpu", "500m"), ("memory", "64Mi")]))
                    .container(c("b", &[("cpu", "250m"), ("memory", "32Mi")])),
                750,
                96 << 20,
            ),
            (
                "a container without a limit adds nothing",
                PodBuilder::new("p")
                    .container(c("a", &[("cpu", "500m")]))
                    .container(c("b", &[("memory", "32Mi")])),
                500,
                32 << 20,
            ),
            (
                "a larger init container wins",
                PodBuilder::new("p")
                    .container(c("a", &[("cpu", "500m")]))
                    .init_container(c("i", &[("cpu", "2")])),
                2000,
                0,
            ),
            (
                "sidecars add to the app containers",
                PodBuilder::new("p")
                    .container(c("a", &[("cpu", "500m")]))
                    .sidecar(c("s", &[("cpu", "100m")])),
                600,
                0,
            ),
            (
                "overhead only on limited resources",
                PodBuilder::new("p")
                    .container(c("a", &[("memory", "64Mi")]))
                    .overhead("cpu", "100m")
                    .overhead("memory", "16Mi"),
                0,
                80 << 20,
            ),
            (
                "pod-level limits replace the containers'",
                PodBuilder::new("p")
                    .container(c("a", &[("cpu", "500m"), ("memory", "64Mi")]))
                    .pod_resources(ResourceRequirements {
                        limits: [("cpu".to_string(), qty("2"))].into(),
                        ..ResourceRequirements::default()
                    }),
                2000,
                64 << 20,
            ),
        ];
        for (name, pod, cpu, memory) in cases {
            let got = pod_limits(&pod.build());
            assert_eq!((got.milli_cpu, got.memory), (cpu, memory), "{name}");
        }
    }
}
