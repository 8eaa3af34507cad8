//! What kube's resourceclaim controller makes of a pod's template entry: a ResourceClaim
//! named after the pod and the entry, owned by the pod. `berth sim` makes them itself; the
//! live cluster's claim controller makes them the same way.

use berth_model::model::{ObjectMeta, OwnerReference, Pod, ResourceClaim, ResourceClaimTemplate};

/// Longest `generateName` of a generated claim: 63 characters less the 5 random ones and a
/// hyphen (kube's resourceclaim controller).
const MAX_BASE_LEN: usize = 57;

/// The `generateName` of the claim for entry `entry` of pod `pod`, as kube's resourceclaim
/// controller makes it: `<pod>-<entry>-`, or when that is longer than 57 characters, both
/// names cut in proportion to their length, `<pod part>-<entry part>` (without the final
/// hyphen, as kube does).
pub fn claim_name_prefix(pod: &str, entry: &str) -> String {
    let full = format!("{pod}-{entry}-");
    if full.len() <= MAX_BASE_LEN {
        return full;
    }
    let cut = |s: &str| s[..s.len() * MAX_BASE_LEN / full.len()].to_string();
    format!("{}-{}", cut(pod), cut(entry))
}

/// The claim made from `template` for entry `entry` of `pod`, named `name`: the template's
/// labels, annotations and spec, the pod as controlling owner, and the entry's name in the
/// `resource.kubernetes.io/pod-claim-name` annotation.
pub fn claim_from_template(
    template: &ResourceClaimTemplate,
    pod: &Pod,
    entry: &str,
    name: &str,
) -> ResourceClaim {
    let mut annotations = template.spec.metadata.annotations.clone();
    annotations.insert(
        berth_model::model::POD_CLAIM_NAME_ANNOTATION.to_string(),
        entry.to_string(),
    );
    ResourceClaim {
        api_version: "resource.k8s.io/v1".to_string(),
        kind: "ResourceClaim".to_string(),
        metadata: ObjectMeta {
            name: name.to_string(),
            namespace: pod.metadata.namespace.clone(),
            labels: template.spec.metadata.labels.clone(),
            annotations,
            owner_references: vec![OwnerReference {
                api_version: "v1".to_string(),
                kind: "Pod".to_string(),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }],
            ..Default::default()
        },
        spec: template.spec.spec.clone(),
        status: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_names_follow_kube() {
        let (p40, c40) = ("p".repeat(40), "c".repeat(40));
        // 82 characters: each name keeps len * 57 / 82 of itself.
        let cut = format!("{}-{}", "p".repeat(27), "c".repeat(27));
        let cases = [
            ("web", "gpu", "web-gpu-"),
            (p40.as_str(), c40.as_str(), cut.as_str()),
        ];
        for (pod, entry, want) in cases {
            assert_eq!(claim_name_prefix(pod, entry), want, "{pod} {entry}");
        }
    }
}
