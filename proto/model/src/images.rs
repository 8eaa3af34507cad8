//! Container image names as the scheduler compares them: kube's ImageLocality looks a pod's
//! image up among a node's `status.images` names after adding the default tag, and the
//! agents report the images of the pods they ran under that same name.

use std::borrow::Cow;

/// The tag an image reference without one means.
pub const DEFAULT_IMAGE_TAG: &str = "latest";

/// At most this many images go in a node's `status.images`, the largest first (kubelet's
/// `nodeStatusMaxImages` default).
pub const MAX_NODE_STATUS_IMAGES: usize = 50;

/// kube's `normalizedImageName`: `name` with `:latest` appended when it has no tag (no `:`
/// after its last `/`). Nothing else is rewritten, as in kube: `nginx` becomes
/// `nginx:latest` and does not match a node that reports only `docker.io/library/nginx:latest`.
pub fn normalized_image_name(name: &str) -> Cow<'_, str> {
    let colon = name.rfind(':').map_or(-1, |i| i as isize);
    let slash = name.rfind('/').map_or(-1, |i| i as isize);
    if colon <= slash {
        Cow::Owned(format!("{name}:{DEFAULT_IMAGE_TAG}"))
    } else {
        Cow::Borrowed(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_tag_is_added_as_kube_does() {
        let cases = [
            ("nginx", "nginx:latest"),
            ("nginx:1.27", "nginx:1.27"),
            ("docker.io/library/nginx", "docker.io/library/nginx:latest"),
            ("registry:5000/team/app", "registry:5000/team/app:latest"),
            ("registry:5000/team/app:v1", "registry:5000/team/app:v1"),
            ("", ":latest"),
        ];
        for (name, want) in cases {
            assert_eq!(normalized_image_name(name), want, "{name}");
        }
    }
}
