//! Sorting a simulation's objects: nodes, namespaces, classes and budgets into their tables,
//! workloads expanded into their pods where they appear, every pod named and given a uid.

use std::collections::{BTreeMap, BTreeSet};

use berth_model::model::{
    DeviceClass, Node, Object, Pod, PodDisruptionBudget, ResourceClaim, ResourceClaimTemplate,
    ResourceSlice, StringMap, DEFAULT_NAMESPACE,
};
use berth_model::names;
use berth_model::validate;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::SimError;
use crate::admission::Classes;
use crate::workloads;

/// A simulation's objects, sorted.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// Nodes, in input order.
    pub nodes: Vec<Node>,
    /// Labels of each namespace: declared ones, and those pods use without declaring them.
    pub namespaces: BTreeMap<String, StringMap>,
    /// PriorityClasses and RuntimeClasses.
    pub classes: Classes,
    /// PodDisruptionBudgets, namespaces defaulted.
    pub budgets: Vec<PodDisruptionBudget>,
    /// Every pod, workloads expanded, in input order: named, namespaced and with a uid.
    pub pods: Vec<Pod>,
    /// DeviceClasses.
    pub device_classes: Vec<DeviceClass>,
    /// ResourceSlices.
    pub slices: Vec<ResourceSlice>,
    /// ResourceClaims: those of the input, then one per pod and template entry, made as
    /// kube's resourceclaim controller makes them (the pod's `status.resourceClaimStatuses`
    /// records each).
    pub claims: Vec<ResourceClaim>,
    /// Remarks for the user (skipped kinds).
    pub notes: Vec<String>,
}

/// An object that becomes pods, kept in input order until the nodes are all known.
enum PodSource {
    Pod(Box<Pod>),
    Deployment(Box<berth_model::model::Deployment>),
    ReplicaSet(Box<berth_model::model::ReplicaSet>),
    DaemonSet(Box<berth_model::model::DaemonSet>),
    Job(Box<berth_model::model::Job>),
}

/// Guards against two objects of one kind with the same key.
#[derive(Default)]
struct Seen(BTreeSet<(&'static str, String)>);

impl Seen {
    fn insert(&mut self, kind: &'static str, key: String) -> Result<(), SimError> {
        if self.0.insert((kind, key.clone())) {
            Ok(())
        } else {
            Err(SimError::Duplicate { kind, key })
        }
    }
}

fn default_namespace(namespace: &mut String) {
    if namespace.is_empty() {
        *namespace = DEFAULT_NAMESPACE.to_string();
    }
}

impl Catalog {
    /// Sorts `objects` (in input order). Objects other than pods must be valid; pods are
    /// checked later, by admission, so that an invalid pod is reported on its own. Random
    /// name suffixes come from a generator seeded with `seed`.
    pub fn read(objects: Vec<Object>, seed: u64) -> Result<Catalog, SimError> {
        let mut catalog = Catalog {
            classes: Classes::new(),
            ..Catalog::default()
        };
        let mut seen = Seen::default();
        let mut sources = Vec::new();
        let mut templates: BTreeMap<String, ResourceClaimTemplate> = BTreeMap::new();
        for mut object in objects {
            if object.kind().is_namespaced() {
                default_namespace(&mut object.meta_mut().namespace);
            }
            let kind = object.kind().as_str();
            let key = object_key(&object);
            if !matches!(object, Object::Pod(_)) {
                validate::validate_object(&object).map_err(|source| SimError::Invalid {
                    kind,
                    key: key.clone(),
                    source,
                })?;
            }
            match object {
                Object::Pod(pod) => {
                    // Pods named by generateName get their name (and their uniqueness
                    // check) once every explicit name is known.
                    if !pod.metadata.name.is_empty() {
                        seen.insert(kind, key)?;
                    }
                    sources.push(PodSource::Pod(pod));
                }
                Object::Node(node) => {
                    seen.insert(kind, key)?;
                    catalog.nodes.push(*node);
                }
                Object::PriorityClass(pc) => {
                    seen.insert(kind, key)?;
                    if pc.global_default {
                        if let Some(first) = &catalog.classes.global_default {
                            return Err(SimError::SecondGlobalDefault {
                                first: first.clone(),
                                second: pc.metadata.name.clone(),
                            });
                        }
                        catalog.classes.global_default = Some(pc.metadata.name.clone());
                    }
                    catalog
                        .classes
                        .priority
                        .insert(pc.metadata.name.clone(), *pc);
                }
                Object::RuntimeClass(rc) => {
                    seen.insert(kind, key)?;
                    catalog
                        .classes
                        .runtime
                        .insert(rc.metadata.name.clone(), *rc);
                }
                Object::Namespace(ns) => {
                    seen.insert(kind, key)?;
                    let mut labels = ns.metadata.labels.clone();
                    labels.insert(
                        names::LABEL_METADATA_NAME.to_string(),
                        ns.metadata.name.clone(),
                    );
                    catalog.namespaces.insert(ns.metadata.name.clone(), labels);
                }
                Object::PodDisruptionBudget(pdb) => {
                    seen.insert(kind, key)?;
                    catalog.budgets.push(*pdb);
                }
                Object::Deployment(d) => {
                    seen.insert(kind, key)?;
                    sources.push(PodSource::Deployment(d));
                }
                Object::ReplicaSet(rs) => {
                    seen.insert(kind, key)?;
                    sources.push(PodSource::ReplicaSet(rs));
                }
                Object::DaemonSet(ds) => {
                    seen.insert(kind, key)?;
                    sources.push(PodSource::DaemonSet(ds));
                }
                Object::Job(job) => {
                    seen.insert(kind, key)?;
                    sources.push(PodSource::Job(job));
                }
                Object::DeviceClass(c) => {
                    seen.insert(kind, key)?;
                    catalog.device_classes.push(*c);
                }
                Object::ResourceSlice(s) => {
                    seen.insert(kind, key)?;
                    catalog.slices.push(*s);
                }
                Object::ResourceClaim(c) => {
                    seen.insert(kind, key)?;
                    catalog.claims.push(*c);
                }
                Object::ResourceClaimTemplate(t) => {
                    seen.insert(kind, key.clone())?;
                    templates.insert(key, *t);
                }
                Object::ResourceQuota(_) => catalog.notes.push(format!(
                    "skipping ResourceQuota {key} (quotas are not enforced by the simulation)"
                )),
                other => catalog.notes.push(format!(
                    "skipping {} {key} (does not affect placement)",
                    other.kind()
                )),
            }
        }
        let mut rng = SmallRng::seed_from_u64(seed);
        // Each pod, with whether a workload generated it.
        let mut pods: Vec<(Pod, bool)> = Vec::new();
        for source in sources {
            let rs = match source {
                PodSource::Pod(pod) => {
                    pods.push((*pod, false));
                    continue;
                }
                PodSource::DaemonSet(ds) => {
                    for node in &catalog.nodes {
                        if workloads::node_should_run_daemon_pod(&ds, node).should_run {
                            let pod = workloads::daemon_pod_for(&ds, &node.metadata.name, &mut rng);
                            pods.push((pod, true));
                        }
                    }
                    continue;
                }
                PodSource::Job(mut job) => {
                    // As the API server would: defaults, a uid, the generated selector.
                    job.spec.set_defaults();
                    if job.metadata.uid.is_empty() {
                        job.metadata.uid = format!("sim-job-{}", job.metadata.name);
                    }
                    job.generate_selector();
                    let generated = workloads::first_job_pods(&job, &mut rng);
                    pods.extend(generated.into_iter().map(|p| (p, true)));
                    continue;
                }
                PodSource::Deployment(d) => {
                    let rs = workloads::replica_set_for(&d);
                    seen.insert(
                        "ReplicaSet",
                        format!("{}/{}", rs.metadata.namespace, rs.metadata.name),
                    )?;
                    rs
                }
                PodSource::ReplicaSet(rs) => *rs,
            };
            let count = replicas(rs.spec.replicas);
            pods.extend(
                workloads::pods_for_replica_set(&rs, count, &mut rng)
                    .into_iter()
                    .map(|p| (p, true)),
            );
        }
        for (index, (mut pod, generated)) in pods.into_iter().enumerate() {
            default_namespace(&mut pod.metadata.namespace);
            if generated {
                // The API server retries a generated name that is taken; so do we.
                let key = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
                if seen.insert("Pod", key).is_err() {
                    let owner = &pod.metadata.owner_references[0].name;
                    pod.metadata.name =
                        unique_name(&mut seen, &pod, &format!("{owner}-"), &mut rng);
                }
            } else if pod.metadata.name.is_empty() && !pod.metadata.generate_name.is_empty() {
                let prefix = pod.metadata.generate_name.clone();
                pod.metadata.name = unique_name(&mut seen, &pod, &prefix, &mut rng);
            }
            pod.metadata.uid = format!("sim-{index:06}");
            if pod.spec.node_name.is_empty() {
                catalog.claims_from_templates(&mut pod, &templates, &mut seen, &mut rng);
            }
            catalog
                .namespaces
                .entry(pod.metadata.namespace.clone())
                .or_insert_with(|| {
                    StringMap::from([(
                        names::LABEL_METADATA_NAME.to_string(),
                        pod.metadata.namespace.clone(),
                    )])
                });
            catalog.pods.push(pod);
        }
        for pdb in &mut catalog.budgets {
            default_namespace(&mut pdb.metadata.namespace);
        }
        Ok(catalog)
    }
}

impl Catalog {
    /// kube's resourceclaim controller for one pod: a claim from each template entry whose
    /// template exists, owned by the pod and recorded in its status. An entry whose
    /// template is missing gets no claim (the pod then waits, as in kube).
    fn claims_from_templates(
        &mut self,
        pod: &mut Pod,
        templates: &BTreeMap<String, ResourceClaimTemplate>,
        seen: &mut Seen,
        rng: &mut SmallRng,
    ) {
        let ns = pod.metadata.namespace.clone();
        for entry in pod.spec.resource_claims.clone() {
            let Some(template_name) = &entry.resource_claim_template_name else {
                continue;
            };
            let Some(template) = templates.get(&format!("{ns}/{template_name}")) else {
                self.notes.push(format!(
                    "pod {ns}/{}: ResourceClaimTemplate {ns}/{template_name} does not exist",
                    pod.metadata.name
                ));
                continue;
            };
            let prefix = crate::dra::template::claim_name_prefix(&pod.metadata.name, &entry.name);
            let name = loop {
                let name = format!("{prefix}{}", workloads::random_suffix(rng));
                if seen.insert("ResourceClaim", format!("{ns}/{name}")).is_ok() {
                    break name;
                }
            };
            let claim =
                crate::dra::template::claim_from_template(template, pod, &entry.name, &name);
            pod.status
                .resource_claim_statuses
                .push(berth_model::model::PodResourceClaimStatus {
                    name: entry.name.clone(),
                    resource_claim_name: Some(name),
                });
            self.claims.push(claim);
        }
    }
}

/// A free name `<prefix><random suffix>` in the pod's namespace, recorded as taken.
fn unique_name(seen: &mut Seen, pod: &Pod, prefix: &str, rng: &mut SmallRng) -> String {
    loop {
        let name = format!("{prefix}{}", workloads::random_suffix(rng));
        if seen
            .insert("Pod", format!("{}/{name}", pod.metadata.namespace))
            .is_ok()
        {
            return name;
        }
    }
}

/// A replica count as a number of pods (a negative count, which validation refuses, is 0).
fn replicas(count: i32) -> usize {
    usize::try_from(count).unwrap_or(0)
}

/// `namespace/name` for namespaced kinds, `name` otherwise.
pub fn object_key(object: &Object) -> String {
    let meta = object.meta();
    if object.kind().is_namespaced() {
        format!("{}/{}", meta.namespace, meta.name)
    } else {
        meta.name.clone()
    }
}
