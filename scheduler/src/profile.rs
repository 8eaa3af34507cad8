//! Scheduling profiles: which plugins run at each extension point, with which weights and
//! arguments, per `schedulerName`; read from a KubeSchedulerConfiguration-style file.

use std::sync::Arc;

use crate::framework::{Filter, PostFilter, PreFilter, PreScore, Score};

/// kube's default scheduler name.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// One profile: the plugins of each extension point, in order.
#[derive(Clone)]
pub struct Profile {
    /// The `schedulerName` pods use to pick this profile.
    pub scheduler_name: String,
    /// PreFilter plugins.
    pub pre_filters: Vec<Arc<dyn PreFilter>>,
    /// Filter plugins, cheapest first.
    pub filters: Vec<Arc<dyn Filter>>,
    /// PostFilter (preemption), if enabled.
    pub post_filter: Option<Arc<dyn PostFilter>>,
    /// PreScore plugins.
    pub pre_scores: Vec<Arc<dyn PreScore>>,
    /// Score plugins with their weights.
    pub scores: Vec<(Arc<dyn Score>, i64)>,
    /// `percentageOfNodesToScore`; None (or 0) means kube's adaptive default.
    pub percentage_of_nodes_to_score: Option<u32>,
}
