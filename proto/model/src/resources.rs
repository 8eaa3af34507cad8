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
        list.entry(name.clone()).or_insert(*limit);
    }
    Resources::from_list(&list)
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy == Some(RestartPolicy::Always)
}

/// The pod's effective request as kube computes it (`resource.PodRequests`): the sum of app
/// containers, plus sidecars; or, if larger, what any init container needs together with the
/// sidecars started before it; plus `spec.overhead`. Pod-level `spec.resources` replaces the
/// container sum for the resources it names.
pub fn pod_requests(pod: &Pod) -> Resources {
    let spec = &pod.spec;
    let mut reqs = Resources::default();
    for c in &spec.containers {
        reqs.add(&container_requests(c));
    }
    // Init containers run one at a time; sidecars keep running once started.
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for c in &spec.init_containers {
        let r = container_requests(c);
        if is_sidecar(c) {
            sidecars.add(&r);
            init_max.max_with(&sidecars);
        } else {
            let mut during = sidecars.clone();
            during.add(&r);
            init_max.max_with(&during);
        }
    }
    reqs.add(&sidecars);
    reqs.max_with(&init_max);
    if let Some(pod_level) = &spec.resources {
        let mut list = pod_level.requests.clone();
        for (name, limit) in &pod_level.limits {
            list.entry(name.clone()).or_insert(*limit);
        }
        // Only cpu and memory are supported at pod level, as in Kubernetes.
        let level = Resources::from_list(&list);
        if list.contains_key(CPU) {
            reqs.milli_cpu = level.milli_cpu;
        }
        if list.contains_key(MEMORY) {
            reqs.memory = level.memory;
        }
    }
    reqs.add(&Resources::from_list(&spec.overhead));
    reqs.allowed_pods = 0;
    reqs
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
