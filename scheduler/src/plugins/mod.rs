//! kube-scheduler's default plugins, one module each, and the registry that builds them by
//! name with their arguments (from a profile's `pluginConfig`).

use std::sync::Arc;

use crate::framework::{Filter, PostFilter, PreFilter, PreScore, Score};

/// A constructed plugin, seen at each extension point it implements.
#[derive(Clone, Default)]
pub struct PluginSet {
    /// The plugin's name.
    pub name: &'static str,
    /// Its PreFilter, if any.
    pub pre_filter: Option<Arc<dyn PreFilter>>,
    /// Its Filter, if any.
    pub filter: Option<Arc<dyn Filter>>,
    /// Its PostFilter, if any.
    pub post_filter: Option<Arc<dyn PostFilter>>,
    /// Its PreScore, if any.
    pub pre_score: Option<Arc<dyn PreScore>>,
    /// Its Score, if any.
    pub score: Option<Arc<dyn Score>>,
}

/// A plugin name or its arguments are not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// No plugin has this name.
    #[error("unknown plugin {name:?}")]
    UnknownPlugin {
        /// The name asked for.
        name: String,
    },
    /// The plugin's args do not parse or are invalid.
    #[error("invalid args for plugin {plugin}: {message}")]
    InvalidArgs {
        /// The plugin.
        plugin: &'static str,
        /// What is wrong, with the field path.
        message: String,
    },
}

/// kube-scheduler's default plugins in the order they run, with their default score weights
/// (0 for plugins that do not score).
pub const DEFAULT_PLUGINS: &[(&str, i64)] = &[];

/// Builds a plugin by name; `args` is its `pluginConfig` entry's `args`, if any.
pub fn build(name: &str, _args: Option<&serde_yaml_ng::Value>) -> Result<PluginSet, RegistryError> {
    Err(RegistryError::UnknownPlugin {
        name: name.to_string(),
    })
}
