//! ImageLocality: prefers nodes that already have the pod's container images, weighing
//! each image by its size and by how far it has spread across the cluster (an image every
//! node has favours none of them), after kube's `imagelocality` plugin. Nodes list their
//! images in `status.images`; a pod's image is looked up under kube's normalized name
//! ([`normalized_image_name`]: `:latest` added when untagged).

use berth_model::images::normalized_image_name;

use crate::framework::{
    CycleState, NodeInfo, Plugin, PluginError, PodInfo, PreScore, PreScoreInput, Score,
    MAX_NODE_SCORE,
};

/// kube-scheduler's name for the plugin.
pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;

/// Below this sum of image scores a node scores 0 (kube's `minThreshold`, 23 MiB).
pub const MIN_THRESHOLD: i64 = 23 * MB;

/// Per container of the pod, the sum of image scores above which a node scores 100 (kube's
/// `maxContainerThreshold`, 1000 MiB).
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The plugin. It takes no args.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageLocality;

/// The pod's images with their scaled scores, computed once per cycle in PreScore.
#[derive(Clone, Debug)]
struct PreScoreState {
    /// One entry per init and app container that some node has the image of: the
    /// normalized name and its size scaled by its spread.
    images: Vec<(String, i64)>,
    /// Init and app containers of the pod.
    containers: usize,
}

/// kube's `scaledImageScore`: the image's size times the share of nodes that have it.
pub fn scaled_image_score(size_bytes: i64, nodes_with_image: usize, total_nodes: usize) -> i64 {
    let spread = nodes_with_image as f64 / total_nodes as f64;
    (size_bytes as f64 * spread) as i64
}

/// kube's `calculatePriority`: the sum of image scores clamped to
/// `[MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD × containers]` and mapped linearly to
/// `0..=MAX_NODE_SCORE`.
pub fn calculate_priority(sum: i64, containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD.saturating_mul(i64::try_from(containers).unwrap_or(i64::MAX));
    let clamped = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else {
        sum.min(max)
    };
    MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }
}

impl PreScore for ImageLocality {
    fn pre_score(&self, state: &mut CycleState, input: &PreScoreInput) -> Result<(), PluginError> {
        let spec = &input.pod.pod.spec;
        let total_nodes = input.snapshot.len();
        let images = spec
            .init_containers
            .iter()
            .chain(&spec.containers)
            .filter_map(|c| {
                let name = normalized_image_name(&c.image);
                let spread = input.snapshot.image_spread(&name)?;
                let score = scaled_image_score(spread.size_bytes, spread.nodes, total_nodes);
                Some((name.into_owned(), score))
            })
            .collect();
        state.insert(PreScoreState {
            images,
            containers: spec.init_containers.len() + spec.containers.len(),
        });
        Ok(())
    }
}

impl Score for ImageLocality {
    /// kube's `sumImageScores` over the images the node has, then `calculatePriority`.
    /// Without PreScore's state (which needs the whole cluster) the node scores 0.
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> i64 {
        state.get::<PreScoreState>().map_or(0, |s| s.score(node))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut [i64],
    ) {
        match state.get::<PreScoreState>() {
            // No node has any of the pod's images: every node scores the same.
            Some(s) if s.images.is_empty() => scores.fill(calculate_priority(0, s.containers)),
            Some(s) => {
                for (score, node) in scores.iter_mut().zip(nodes) {
                    *score = s.score(node);
                }
            }
            None => scores.fill(0),
        }
    }
}

impl PreScoreState {
    /// The node's score for the pod of this state.
    fn score(&self, node: &NodeInfo) -> i64 {
        let s = self;
        let has = |name: &str| {
            node.node
                .status
                .images
                .iter()
                .any(|image| image.names.iter().any(|n| n == name))
        };
        let sum = s
            .images
            .iter()
            .filter(|(name, _)| has(name))
            .map(|(_, score)| *score)
            .sum();
        calculate_priority(sum, s.containers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{container, scores, snapshot, Info, NodeBuilder, PodBuilder};

    #[test]
    fn priority_clamps_at_the_thresholds() {
        // (case, sum of image scores, containers, score)
        let cases = [
            ("nothing", 0, 1, 0),
            ("just below the minimum", MIN_THRESHOLD - 1, 1, 0),
            ("at the minimum", MIN_THRESHOLD, 1, 0),
            ("one byte above the minimum", MIN_THRESHOLD + 1, 1, 0),
            (
                "midway",
                (MIN_THRESHOLD + MAX_CONTAINER_THRESHOLD) / 2,
                1,
                50,
            ),
            ("just below the maximum", MAX_CONTAINER_THRESHOLD - 1, 1, 99),
            ("at the maximum", MAX_CONTAINER_THRESHOLD, 1, 100),
            ("above the maximum", 5 * MAX_CONTAINER_THRESHOLD, 1, 100),
            (
                "the maximum grows with containers",
                MAX_CONTAINER_THRESHOLD,
                2,
                49,
            ),
            (
                "at the maximum of two containers",
                2 * MAX_CONTAINER_THRESHOLD,
                2,
                100,
            ),
        ];
        for (name, sum, containers, want) in cases {
            assert_eq!(calculate_priority(sum, containers), want, "{name}");
        }
    }

    #[test]
    fn scores_follow_kube() {
        // After kube's image_locality_test.go: node1 has gcr.io/40 (40 MB) and gcr.io/300
        // (300 MB), node2 has gcr.io/250 (250 MB) and gcr.io/10 (10 MB), node3 has
        // gcr.io/2000 (2000 MB) and the 40 MB image under a second name.
        let node1 = NodeBuilder::new("node1")
            .image(&["gcr.io/40:latest", "gcr.io/40:v1"], 40 * MB)
            .image(&["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB);
        let node2 = NodeBuilder::new("node2")
            .image(&["gcr.io/250:latest"], 250 * MB)
            .image(&["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB);
        let node3 = NodeBuilder::new("node3")
            .image(&["gcr.io/2000:latest"], 2000 * MB)
            .image(&["gcr.io/40:latest"], 40 * MB);
        let nodes = [node1.info(), node2.info(), node3.info()];
        let snap = snapshot(&nodes);
        let feasible: Vec<&NodeInfo> = nodes.iter().collect();
        let pod = |images: &[&str]| {
            images
                .iter()
                .enumerate()
                .fold(PodBuilder::new("p"), |p, (i, image)| {
                    let mut c = container(&format!("c{i}"), &[]);
                    c.image = (*image).to_string();
                    p.container(c)
                })
        };
        // (case, the pod's images, the scores of node1, node2, node3)
        let cases: &[(&str, &[&str], [i64; 3])] = &[
            // 40 MB on two of three nodes scales to 26.7 MB, 300 MB on one to 100 MB:
            // node1 = 100 * (126.7 - 23) / (2000 - 23) = 5, node3 has only 26.7 MB: 0.
            (
                "two images, one spread",
                &["gcr.io/40", "gcr.io/300"],
                [5, 0, 0],
            ),
            // 250 MB on one of three nodes is 83.3 MB: 100 * (83.3 - 23) / 977 = 6.
            ("untagged name means latest", &["gcr.io/250"], [0, 6, 0]),
            ("a tag the nodes lack", &["gcr.io/250:v2"], [0, 0, 0]),
            // 2000 MB on one node is 666.7 MB, capped by 1000 MB × 1 container: 65.
            ("large image on one node", &["gcr.io/2000"], [0, 0, 65]),
            // The same image twice counts twice, against twice the cap.
            (
                "one image in two containers",
                &["gcr.io/2000", "gcr.io/2000"],
                [0, 0, 66],
            ),
            ("no image anywhere", &["nginx"], [0, 0, 0]),
        ];
        for (name, images, want) in cases {
            let pod = pod(images).info();
            let (raw, normalized) =
                scores(&ImageLocality, &pod, &snap, &feasible).expect("pre_score never fails");
            assert_eq!(raw, want.to_vec(), "{name}");
            assert_eq!(normalized, raw, "{name}: no normalization");
        }
    }

    #[test]
    fn spread_follows_node_changes() {
        let with_image = |name: &str| NodeBuilder::new(name).image(&["app:v1"], 500 * MB);
        let mut snap = snapshot(&[with_image("a").info(), with_image("b").info()]);
        assert_eq!(snap.image_spread("app:v1").map(|s| s.nodes), Some(2));
        snap.upsert_node(std::sync::Arc::new(NodeBuilder::new("b").build()));
        assert_eq!(snap.image_spread("app:v1").map(|s| s.nodes), Some(1));
        snap.remove_node("a");
        assert_eq!(snap.image_spread("app:v1"), None);
    }
}
