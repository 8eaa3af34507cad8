//! Scheduling profiles: which plugins run at each extension point, with which weights and
//! arguments, per `schedulerName`; read from a KubeSchedulerConfiguration-style file.
//!
//! The file is kube-scheduler's `kubescheduler.config.k8s.io/v1` format and is read with
//! kube's merge rules, so a config written for kube-scheduler means the same thing here:
//!
//! - Every profile starts from the default plugins, which kube lists under `multiPoint`.
//! - At each extension point (and at `multiPoint`), `disabled` removes default plugins
//!   (`*` removes them all) and `enabled` adds plugins after the defaults; enabling a default
//!   plugin again reconfigures it in place (its weight, for instance).
//! - `multiPoint` plugins are expanded into every extension point they implement, unless
//!   that point disables them (or disables `*`). A plugin that an extension point enables
//!   explicitly keeps that point's settings and moves to the front of its list.
//! - A Score plugin's weight comes from the `score` point if given there, else from
//!   `multiPoint`; a weight of 0 means 1.
//! - `pluginConfig` args are handed to [`plugins::build`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::framework::PostFilter;
pub use crate::framework::{Profile, ProfileSummary, TieBreak};
use crate::plugins::{self, PluginSet, RegistryError};
use crate::queue::QueueConfig;

/// kube's default scheduler name.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The only `apiVersion` accepted for a scheduler configuration file.
pub const CONFIG_API_VERSION: &str = "kubescheduler.config.k8s.io/v1";

/// The only `kind` accepted for a scheduler configuration file.
pub const CONFIG_KIND: &str = "KubeSchedulerConfiguration";

/// kube plugins that have nothing to act on in Berth (queue sorting, binding, volumes, gates,
/// dynamic resources): a configuration may name them, as real
/// kube-scheduler configs do, and they are left out. The queue already sorts by priority and
/// honours scheduling gates itself; binding is the scheduling loop's job.
const INERT_KUBE_PLUGINS: &[&str] = &[
    "PrioritySort",
    "DefaultBinder",
    "SchedulingGates",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "EBSLimits",
    "GCEPDLimits",
    "AzureDiskLimits",
    "CinderLimits",
    "VolumeBinding",
    "VolumeZone",
    "DynamicResources",
];

impl Profile {
    /// kube-scheduler's default profile, `default-scheduler`: every plugin of
    /// [`plugins::DEFAULT_PLUGINS`] with default args, at each extension point it implements,
    /// with its default weight.
    pub fn default_profile() -> Self {
        let config = ProfileFile::default();
        build_profile(DEFAULT_SCHEDULER_NAME.to_string(), &config, None)
            .expect("the default plugins build with default args")
    }
}

/// The scheduler's profiles by `schedulerName`, plus the queue settings read with them.
#[derive(Clone, Debug)]
pub struct Profiles {
    profiles: BTreeMap<String, Profile>,
    queue: QueueConfig,
}

impl Default for Profiles {
    /// One profile, kube's `default-scheduler`, and kube's default queue settings.
    fn default() -> Self {
        Profiles::new([Profile::default_profile()])
    }
}

impl Profiles {
    /// The same profiles, every one breaking ties by `tie_break` (`berth lab`'s
    /// experiment-wide setting).
    pub fn with_tie_break(mut self, tie_break: TieBreak) -> Self {
        for p in self.profiles.values_mut() {
            p.tie_break = tie_break;
        }
        self
    }

    /// Profiles from a list, keyed by their `scheduler_name` (a later profile replaces an
    /// earlier one of the same name), with the default queue settings.
    pub fn new(profiles: impl IntoIterator<Item = Profile>) -> Self {
        Profiles {
            profiles: profiles
                .into_iter()
                .map(|p| (p.scheduler_name.clone(), p))
                .collect(),
            queue: QueueConfig::default(),
        }
    }

    /// The profile for a pod's `spec.schedulerName`; an empty name means `default-scheduler`.
    /// None when no profile has that name (kube leaves such pods alone).
    pub fn get(&self, scheduler_name: &str) -> Option<&Profile> {
        let name = if scheduler_name.is_empty() {
            DEFAULT_SCHEDULER_NAME
        } else {
            scheduler_name
        };
        self.profiles.get(name)
    }

    /// Every profile, ordered by name.
    pub fn iter(&self) -> impl Iterator<Item = &Profile> {
        self.profiles.values()
    }

    /// The scheduler names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.profiles.keys().map(String::as_str)
    }

    /// Number of profiles.
    pub fn len(&self) -> usize {
        self.profiles.len()
    }

    /// Whether there is no profile.
    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }

    /// Queue back-off settings: `podInitialBackoffSeconds` and `podMaxBackoffSeconds` from
    /// the file (kube's 1 s and 10 s when absent).
    pub fn queue_config(&self) -> QueueConfig {
        self.queue.clone()
    }

    /// Reads a KubeSchedulerConfiguration file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Profiles, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Profiles::from_yaml(&text)
    }

    /// Parses a KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`) document.
    pub fn from_yaml(text: &str) -> Result<Profiles, ConfigError> {
        // Check the type first, so that a file of another version gets that answer rather
        // than a complaint about a field that version spells differently.
        let header: Header = serde_yaml_ng::from_str(text).map_err(parse_error)?;
        if header.api_version != CONFIG_API_VERSION {
            return Err(ConfigError::ApiVersion {
                found: header.api_version,
            });
        }
        if header.kind != CONFIG_KIND {
            return Err(ConfigError::Kind { found: header.kind });
        }
        let file: ConfigFile = serde_yaml_ng::from_str(text).map_err(parse_error)?;
        file.into_profiles()
    }
}

/// A scheduler configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading scheduler configuration {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The YAML does not parse or has an unknown or mistyped field; the message names the
    /// field's path and position.
    #[error("parsing scheduler configuration: {message}")]
    Parse {
        /// serde's message, with the field path and line.
        message: String,
    },
    /// `apiVersion` is not `kubescheduler.config.k8s.io/v1`.
    #[error("apiVersion must be {CONFIG_API_VERSION:?}, found {found:?}")]
    ApiVersion {
        /// What the file says.
        found: String,
    },
    /// `kind` is not `KubeSchedulerConfiguration`.
    #[error("kind must be {CONFIG_KIND:?}, found {found:?}")]
    Kind {
        /// What the file says.
        found: String,
    },
    /// A field Berth does not implement is set.
    #[error("{field} is not supported")]
    Unsupported {
        /// The field's path.
        field: &'static str,
    },
    /// A numeric field is out of range.
    #[error("{field}: {value} is not in the range {range}")]
    OutOfRange {
        /// The field's path.
        field: String,
        /// The value given.
        value: i64,
        /// The accepted range.
        range: &'static str,
    },
    /// With several profiles, each needs a `schedulerName`.
    #[error("profiles[{index}].schedulerName: required when there are several profiles")]
    MissingSchedulerName {
        /// Position of the profile.
        index: usize,
    },
    /// Two profiles have the same `schedulerName`.
    #[error("profiles[{index}].schedulerName: duplicate value {name:?}")]
    DuplicateSchedulerName {
        /// Position of the second profile.
        index: usize,
        /// The name.
        name: String,
    },
    /// Two `pluginConfig` entries name the same plugin.
    #[error("profile {profile}: pluginConfig for {plugin:?} appears more than once")]
    DuplicatePluginConfig {
        /// The profile's schedulerName.
        profile: String,
        /// The plugin.
        plugin: String,
    },
    /// A plugin is unknown or its args are invalid.
    #[error("profile {profile}: {source}")]
    Plugin {
        /// The profile's schedulerName.
        profile: String,
        /// The registry's answer.
        #[source]
        source: RegistryError,
    },
    /// A plugin is enabled at an extension point it does not implement.
    #[error("profile {profile}: plugin {plugin:?} does not extend {extension_point}")]
    NotAnExtension {
        /// The profile's schedulerName.
        profile: String,
        /// The plugin.
        plugin: String,
        /// The extension point (`preFilter`, `filter`...).
        extension_point: &'static str,
    },
    /// A plugin is enabled twice at one extension point.
    #[error("profile {profile}: plugin {plugin:?} is enabled twice at {extension_point}")]
    DuplicatePlugin {
        /// The profile's schedulerName.
        profile: String,
        /// The plugin.
        plugin: String,
        /// The extension point.
        extension_point: &'static str,
    },
    /// Berth runs at most one PostFilter plugin per profile.
    #[error("profile {profile}: several postFilter plugins {plugins:?}; at most one is supported")]
    SeveralPostFilters {
        /// The profile's schedulerName.
        profile: String,
        /// The PostFilter plugins enabled.
        plugins: Vec<&'static str>,
    },
}

fn parse_error(e: serde_yaml_ng::Error) -> ConfigError {
    ConfigError::Parse {
        message: e.to_string(),
    }
}

/// The type fields alone, read leniently before the full parse.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
}

/// The file as written: kube's KubeSchedulerConfiguration fields. Fields that do not affect
/// placement in Berth are accepted and ignored, so real kube configs load.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigFile {
    #[serde(rename = "apiVersion")]
    _api_version: IgnoredAny,
    #[serde(rename = "kind")]
    _kind: IgnoredAny,
    #[serde(default)]
    percentage_of_nodes_to_score: Option<i64>,
    #[serde(default)]
    pod_initial_backoff_seconds: Option<i64>,
    #[serde(default)]
    pod_max_backoff_seconds: Option<i64>,
    #[serde(default)]
    profiles: Vec<ProfileFile>,
    #[serde(default)]
    extenders: Vec<IgnoredAny>,
    #[serde(rename = "parallelism", default)]
    _parallelism: IgnoredAny,
    #[serde(rename = "leaderElection", default)]
    _leader_election: IgnoredAny,
    #[serde(rename = "clientConnection", default)]
    _client_connection: IgnoredAny,
    #[serde(rename = "healthzBindAddress", default)]
    _healthz_bind_address: IgnoredAny,
    #[serde(rename = "metricsBindAddress", default)]
    _metrics_bind_address: IgnoredAny,
    #[serde(rename = "enableProfiling", default)]
    _enable_profiling: IgnoredAny,
    #[serde(rename = "enableContentionProfiling", default)]
    _enable_contention_profiling: IgnoredAny,
    #[serde(rename = "delayCacheUntilActive", default)]
    _delay_cache_until_active: IgnoredAny,
}

/// `profiles[].tieBreak`, as written.
#[derive(Clone, Copy, Deserialize)]
enum TieBreakFile {
    Random,
    Ranked,
}

/// One `profiles[]` entry.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    scheduler_name: Option<String>,
    #[serde(default)]
    percentage_of_nodes_to_score: Option<i64>,
    /// Berth's extension: `Random` (kube's, the default) or `Ranked` (see [`TieBreak`]).
    #[serde(default)]
    tie_break: Option<TieBreakFile>,
    #[serde(default)]
    plugins: Option<PluginsFile>,
    #[serde(default)]
    plugin_config: Vec<PluginConfigFile>,
}

/// `plugins`: a plugin set per extension point. Points Berth has no use for are accepted
/// and ignored (see [`INERT_KUBE_PLUGINS`]).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginsFile {
    #[serde(default)]
    multi_point: PluginSetFile,
    #[serde(default)]
    pre_filter: PluginSetFile,
    #[serde(default)]
    filter: PluginSetFile,
    #[serde(default)]
    post_filter: PluginSetFile,
    #[serde(default)]
    pre_score: PluginSetFile,
    #[serde(default)]
    score: PluginSetFile,
    #[serde(rename = "preEnqueue", default)]
    _pre_enqueue: IgnoredAny,
    #[serde(rename = "queueSort", default)]
    _queue_sort: IgnoredAny,
    #[serde(rename = "reserve", default)]
    _reserve: IgnoredAny,
    #[serde(rename = "permit", default)]
    _permit: IgnoredAny,
    #[serde(rename = "preBind", default)]
    _pre_bind: IgnoredAny,
    #[serde(rename = "bind", default)]
    _bind: IgnoredAny,
    #[serde(rename = "postBind", default)]
    _post_bind: IgnoredAny,
}

/// `enabled` and `disabled` plugins of one extension point.
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginSetFile {
    #[serde(default)]
    enabled: Vec<PluginFile>,
    #[serde(default)]
    disabled: Vec<PluginFile>,
}

/// A plugin reference, with its weight when it scores.
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginFile {
    name: String,
    #[serde(default)]
    weight: Option<i64>,
}

/// A `pluginConfig` entry.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PluginConfigFile {
    name: String,
    #[serde(default)]
    args: Option<serde_yaml_ng::Value>,
}

impl ConfigFile {
    fn into_profiles(self) -> Result<Profiles, ConfigError> {
        if !self.extenders.is_empty() {
            return Err(ConfigError::Unsupported { field: "extenders" });
        }
        let global = self
            .percentage_of_nodes_to_score
            .map(|v| percentage("percentageOfNodesToScore".to_string(), v))
            .transpose()?;
        let mut queue = QueueConfig::default();
        if let Some(secs) = self.pod_initial_backoff_seconds {
            queue.initial_backoff = positive_seconds("podInitialBackoffSeconds", secs)?;
        }
        if let Some(secs) = self.pod_max_backoff_seconds {
            queue.max_backoff = positive_seconds("podMaxBackoffSeconds", secs)?;
        }
        if queue.max_backoff < queue.initial_backoff {
            return Err(ConfigError::OutOfRange {
                field: "podMaxBackoffSeconds".to_string(),
                value: i64::try_from(queue.max_backoff.as_secs()).unwrap_or(i64::MAX),
                range: "[podInitialBackoffSeconds, ...)",
            });
        }

        let mut specs = self.profiles;
        if specs.is_empty() {
            specs.push(ProfileFile::default());
        }
        // kube names a lone unnamed profile default-scheduler; with several, each must be named.
        let single = specs.len() == 1;
        let mut profiles = BTreeMap::new();
        for (index, spec) in specs.iter().enumerate() {
            let name = match spec.scheduler_name.as_deref() {
                Some(name) if !name.is_empty() => name.to_string(),
                _ if single => DEFAULT_SCHEDULER_NAME.to_string(),
                _ => return Err(ConfigError::MissingSchedulerName { index }),
            };
            if profiles.contains_key(&name) {
                return Err(ConfigError::DuplicateSchedulerName { index, name });
            }
            let profile =
                build_profile(name.clone(), spec, global).map_err(|e| e.in_profile(index))?;
            profiles.insert(name, profile);
        }
        Ok(Profiles { profiles, queue })
    }
}

fn percentage(field: String, value: i64) -> Result<u32, ConfigError> {
    u32::try_from(value)
        .ok()
        .filter(|v| *v <= 100)
        .ok_or(ConfigError::OutOfRange {
            field,
            value,
            range: "[0, 100]",
        })
}

fn positive_seconds(field: &str, secs: i64) -> Result<Duration, ConfigError> {
    u64::try_from(secs)
        .ok()
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .ok_or(ConfigError::OutOfRange {
            field: field.to_string(),
            value: secs,
            range: "[1, ...)",
        })
}

impl ConfigError {
    /// Puts a profile-relative field path under `profiles[index]`.
    fn in_profile(self, index: usize) -> ConfigError {
        match self {
            ConfigError::OutOfRange {
                field,
                value,
                range,
            } => ConfigError::OutOfRange {
                field: format!("profiles[{index}].{field}"),
                value,
                range,
            },
            other => other,
        }
    }
}

/// The extension points a profile fills, with their config names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
}

impl Point {
    const ALL: [Point; 5] = [
        Point::PreFilter,
        Point::Filter,
        Point::PostFilter,
        Point::PreScore,
        Point::Score,
    ];

    fn config_name(self) -> &'static str {
        match self {
            Point::PreFilter => "preFilter",
            Point::Filter => "filter",
            Point::PostFilter => "postFilter",
            Point::PreScore => "preScore",
            Point::Score => "score",
        }
    }

    fn implemented_by(self, set: &PluginSet) -> bool {
        match self {
            Point::PreFilter => set.pre_filter.is_some(),
            Point::Filter => set.filter.is_some(),
            Point::PostFilter => set.post_filter.is_some(),
            Point::PreScore => set.pre_score.is_some(),
            Point::Score => set.score.is_some(),
        }
    }

    fn custom(self, plugins: &PluginsFile) -> &PluginSetFile {
        match self {
            Point::PreFilter => &plugins.pre_filter,
            Point::Filter => &plugins.filter,
            Point::PostFilter => &plugins.post_filter,
            Point::PreScore => &plugins.pre_score,
            Point::Score => &plugins.score,
        }
    }
}

/// The default plugin sets: kube's v1 defaults list every default plugin under multiPoint
/// and leave the individual extension points empty.
fn default_multi_point() -> PluginSetFile {
    PluginSetFile {
        enabled: plugins::DEFAULT_PLUGINS
            .iter()
            .map(|(name, weight)| PluginFile {
                name: (*name).to_string(),
                weight: (*weight != 0).then_some(*weight),
            })
            .collect(),
        disabled: Vec::new(),
    }
}

/// kube's mergePluginSet: the defaults minus what is disabled (all of them with `*`), with
/// re-enabled defaults replaced in place, then the other enabled plugins in their order.
fn merge_plugin_set(defaults: &PluginSetFile, custom: &PluginSetFile) -> PluginSetFile {
    let disabled: Vec<PluginFile> = custom
        .disabled
        .iter()
        .chain(&defaults.disabled)
        .cloned()
        .collect();
    let is_disabled = |name: &str| disabled.iter().any(|d| d.name == name);
    let mut replaced = HashSet::new();
    let mut enabled = Vec::new();
    if !is_disabled("*") {
        for default in &defaults.enabled {
            if is_disabled(&default.name) {
                continue;
            }
            match custom.enabled.iter().position(|c| c.name == default.name) {
                Some(i) => {
                    replaced.insert(i);
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(default.clone()),
            }
        }
    }
    for (i, plugin) in custom.enabled.iter().enumerate() {
        if !replaced.contains(&i) {
            enabled.push(plugin.clone());
        }
    }
    PluginSetFile { enabled, disabled }
}

/// Builds one profile from its config entry, following kube's framework construction.
fn build_profile(
    name: String,
    spec: &ProfileFile,
    global_percentage: Option<u32>,
) -> Result<Profile, ConfigError> {
    let no_plugins = PluginsFile::default();
    let custom = spec.plugins.as_ref().unwrap_or(&no_plugins);
    let empty = PluginSetFile::default();
    let multi_point = merge_plugin_set(&default_multi_point(), &custom.multi_point);
    let points: Vec<(Point, PluginSetFile)> = Point::ALL
        .iter()
        .map(|&p| (p, merge_plugin_set(&empty, p.custom(custom))))
        .collect();

    let mut args: HashMap<&str, &serde_yaml_ng::Value> = HashMap::new();
    for entry in &spec.plugin_config {
        if args.contains_key(entry.name.as_str()) {
            return Err(ConfigError::DuplicatePluginConfig {
                profile: name,
                plugin: entry.name.clone(),
            });
        }
        if let Some(a) = &entry.args {
            args.insert(entry.name.as_str(), a);
        }
    }

    // Build every plugin named anywhere, once, with its args.
    let mut built: HashMap<String, PluginSet> = HashMap::new();
    let named = multi_point
        .enabled
        .iter()
        .chain(points.iter().flat_map(|(_, set)| set.enabled.iter()));
    for plugin in named {
        if built.contains_key(&plugin.name) || plugin.name == "*" {
            continue;
        }
        match plugins::build(&plugin.name, args.get(plugin.name.as_str()).copied()) {
            Ok(set) => {
                built.insert(plugin.name.clone(), set);
            }
            Err(RegistryError::UnknownPlugin { .. })
                if INERT_KUBE_PLUGINS.contains(&plugin.name.as_str()) =>
            {
                tracing::debug!(plugin = %plugin.name, "kube plugin has no effect in berth; left out");
            }
            Err(source) => {
                return Err(ConfigError::Plugin {
                    profile: name,
                    source,
                })
            }
        }
    }

    let mut profile = Profile::empty(name.clone());
    profile.tie_break = match spec.tie_break {
        Some(TieBreakFile::Ranked) => TieBreak::Ranked,
        Some(TieBreakFile::Random) | None => TieBreak::Random,
    };
    profile.percentage_of_nodes_to_score = match spec.percentage_of_nodes_to_score {
        Some(v) => Some(percentage("percentageOfNodesToScore".to_string(), v)?),
        None => global_percentage,
    };
    let mut post_filters: Vec<Arc<dyn PostFilter>> = Vec::new();
    for (point, set) in &points {
        let order = expand_point(&name, *point, set, &multi_point, &built)?;
        for plugin in order {
            let ps = &built[plugin];
            match point {
                Point::PreFilter => profile.pre_filters.extend(ps.pre_filter.clone()),
                Point::Filter => profile.filters.extend(ps.filter.clone()),
                Point::PostFilter => post_filters.extend(ps.post_filter.clone()),
                Point::PreScore => profile.pre_scores.extend(ps.pre_score.clone()),
                Point::Score => {
                    let score = ps.score.clone().expect("expand_point checked Score");
                    let score_set = &points
                        .iter()
                        .find(|(p, _)| *p == Point::Score)
                        .expect("score is one of the points")
                        .1;
                    let weight = score_weight(plugin, score_set, &multi_point);
                    if weight < 0 {
                        return Err(ConfigError::OutOfRange {
                            field: format!("plugins.score.enabled[{plugin}].weight"),
                            value: weight,
                            range: "[0, ...)",
                        });
                    }
                    if profile.device_preference.is_none() {
                        profile.device_preference = ps.device_preference.clone();
                    }
                    profile.scores.push((score, weight));
                }
            }
        }
    }
    if post_filters.len() > 1 {
        return Err(ConfigError::SeveralPostFilters {
            profile: name,
            plugins: post_filters.iter().map(|p| p.name()).collect(),
        });
    }
    profile.post_filter = post_filters.pop();
    Ok(profile)
}

/// kube's expandMultiPointPlugins for one extension point: plugins the point enables
/// explicitly and that multiPoint also names come first, then the other multiPoint plugins
/// that implement the point (unless the point disables them), then the rest of the point's
/// own plugins. With `*` disabled at the point, only its own plugins run.
fn expand_point<'a>(
    profile: &str,
    point: Point,
    set: &'a PluginSetFile,
    multi_point: &'a PluginSetFile,
    built: &HashMap<String, PluginSet>,
) -> Result<Vec<&'a str>, ConfigError> {
    let mut own: Vec<&str> = Vec::new();
    for plugin in &set.enabled {
        let Some(ps) = built.get(&plugin.name) else {
            continue; // an inert kube plugin
        };
        if !point.implemented_by(ps) {
            return Err(ConfigError::NotAnExtension {
                profile: profile.to_string(),
                plugin: plugin.name.clone(),
                extension_point: point.config_name(),
            });
        }
        if own.contains(&plugin.name.as_str()) {
            return Err(ConfigError::DuplicatePlugin {
                profile: profile.to_string(),
                plugin: plugin.name.clone(),
                extension_point: point.config_name(),
            });
        }
        own.push(&plugin.name);
    }
    let is_disabled = |name: &str| set.disabled.iter().any(|d| d.name == name);
    if is_disabled("*") {
        return Ok(own);
    }
    let mut overrides: Vec<&str> = Vec::new();
    let mut expanded: Vec<&str> = Vec::new();
    for plugin in &multi_point.enabled {
        let name = plugin.name.as_str();
        let Some(ps) = built.get(name) else {
            continue;
        };
        if !point.implemented_by(ps) || is_disabled(name) {
            continue;
        }
        if own.contains(&name) {
            overrides.push(name);
            continue;
        }
        if expanded.contains(&name) {
            return Err(ConfigError::DuplicatePlugin {
                profile: profile.to_string(),
                plugin: name.to_string(),
                extension_point: "multiPoint",
            });
        }
        expanded.push(name);
    }
    let mut order: Vec<&str> = own
        .iter()
        .copied()
        .filter(|n| overrides.contains(n))
        .collect();
    order.extend(expanded);
    order.extend(own.iter().copied().filter(|n| !overrides.contains(n)));
    Ok(order)
}

/// kube's getScoreWeights: the `score` point's weight wins over multiPoint's; 0 (or none)
/// means 1.
fn score_weight(plugin: &str, score: &PluginSetFile, multi_point: &PluginSetFile) -> i64 {
    score
        .enabled
        .iter()
        .chain(&multi_point.enabled)
        .find(|p| p.name == plugin)
        .and_then(|p| p.weight)
        .filter(|w| *w != 0)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Default plugins that implement Score, with their default weights.
    fn default_scores() -> Vec<(&'static str, i64)> {
        plugins::DEFAULT_PLUGINS
            .iter()
            .filter(|(name, _)| {
                plugins::build(name, None)
                    .expect("default plugin builds")
                    .score
                    .is_some()
            })
            .map(|(name, w)| {
                let name: &'static str = name;
                (name, if *w == 0 { 1 } else { *w })
            })
            .collect()
    }

    fn default_points(point: Point) -> Vec<&'static str> {
        plugins::DEFAULT_PLUGINS
            .iter()
            .filter(|(name, _)| point.implemented_by(&plugins::build(name, None).unwrap()))
            .map(|(name, _)| {
                let name: &'static str = name;
                name
            })
            .collect()
    }

    /// A score plugin among the defaults, for tests that reconfigure one.
    fn some_score_plugin() -> (&'static str, i64) {
        *default_scores()
            .first()
            .expect("the default profile has a score plugin")
    }

    #[test]
    fn default_profile_has_every_default_plugin_at_its_points() {
        let p = Profile::default_profile();
        let d = p.describe();
        assert_eq!(p.scheduler_name, DEFAULT_SCHEDULER_NAME);
        assert_eq!(d.pre_filters, default_points(Point::PreFilter));
        assert_eq!(d.filters, default_points(Point::Filter));
        assert_eq!(d.pre_scores, default_points(Point::PreScore));
        assert_eq!(d.scores, default_scores());
        assert_eq!(
            d.post_filter,
            default_points(Point::PostFilter).first().copied()
        );
        assert_eq!(p.percentage_of_nodes_to_score, None);
    }

    #[test]
    fn profiles_default_and_lookup() {
        let profiles = Profiles::default();
        assert_eq!(profiles.len(), 1);
        assert!(
            profiles.get("").is_some(),
            "empty name means default-scheduler"
        );
        assert!(profiles.get(DEFAULT_SCHEDULER_NAME).is_some());
        assert!(profiles.get("other").is_none());
        assert_eq!(profiles.queue_config(), QueueConfig::default());
    }

    /// Score plugins with their weights, in order.
    type Scores = Vec<(&'static str, i64)>;

    struct Case {
        name: &'static str,
        yaml: String,
        /// (schedulerName, expected scores or None for the defaults, percentage).
        want: Vec<(&'static str, Option<Scores>, Option<u32>)>,
    }

    #[test]
    fn valid_configs() {
        let (score_plugin, weight) = some_score_plugin();
        let without: Vec<(&str, i64)> = default_scores()
            .into_iter()
            .filter(|(n, _)| *n != score_plugin)
            .collect();
        let reweighted: Vec<(&str, i64)> = default_scores()
            .into_iter()
            .map(|(n, w)| {
                if n == score_plugin {
                    (n, weight + 7)
                } else {
                    (n, w)
                }
            })
            .collect();
        let header =
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
        let cases = vec![
            Case {
                name: "no profiles means default-scheduler",
                yaml: header.to_string(),
                want: vec![(DEFAULT_SCHEDULER_NAME, None, None)],
            },
            Case {
                name: "two profiles, global and per-profile percentage",
                yaml: format!(
                    "{header}percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: default-scheduler\n- schedulerName: fast\n  percentageOfNodesToScore: 10\n"
                ),
                want: vec![
                    (DEFAULT_SCHEDULER_NAME, None, Some(30)),
                    ("fast", None, Some(10)),
                ],
            },
            Case {
                name: "disable a score plugin",
                yaml: format!(
                    "{header}profiles:\n- schedulerName: without-one\n  plugins:\n    score:\n      disabled:\n      - name: {score_plugin}\n"
                ),
                want: vec![("without-one", Some(without.clone()), None)],
            },
            Case {
                name: "weight override at score keeps the order",
                yaml: format!(
                    "{header}profiles:\n- plugins:\n    score:\n      enabled:\n      - name: {score_plugin}\n        weight: {}\n",
                    weight + 7
                ),
                // an explicitly enabled plugin moves to the front of its point
                want: vec![(DEFAULT_SCHEDULER_NAME, Some({
                    let mut v: Vec<(&str, i64)> = vec![(score_plugin, weight + 7)];
                    v.extend(reweighted.iter().copied().filter(|(n, _)| *n != score_plugin));
                    v
                }), None)],
            },
            Case {
                name: "weight override at multiPoint keeps the place",
                yaml: format!(
                    "{header}profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: {score_plugin}\n        weight: {}\n",
                    weight + 7
                ),
                want: vec![(DEFAULT_SCHEDULER_NAME, Some(reweighted.clone()), None)],
            },
            Case {
                name: "disable every score plugin, enable one back",
                yaml: format!(
                    "{header}profiles:\n- plugins:\n    score:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: {score_plugin}\n        weight: 5\n"
                ),
                want: vec![(DEFAULT_SCHEDULER_NAME, Some(vec![(score_plugin, 5)]), None)],
            },
            Case {
                name: "inert kube plugins and points are accepted",
                yaml: format!(
                    "{header}leaderElection:\n  leaderElect: false\nprofiles:\n- plugins:\n    queueSort:\n      enabled:\n      - name: PrioritySort\n    bind:\n      enabled:\n      - name: DefaultBinder\n    multiPoint:\n      enabled:\n      - name: VolumeBinding\n"
                ),
                want: vec![(DEFAULT_SCHEDULER_NAME, None, None)],
            },
        ];
        for case in cases {
            let profiles =
                Profiles::from_yaml(&case.yaml).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(
                profiles.names().collect::<Vec<_>>(),
                case.want.iter().map(|w| w.0).collect::<Vec<_>>(),
                "{}",
                case.name
            );
            for (name, scores, pct) in &case.want {
                let p = profiles.get(name).unwrap();
                let want_scores = scores.clone().unwrap_or_else(default_scores);
                assert_eq!(p.describe().scores, want_scores, "{}: {name}", case.name);
                assert_eq!(
                    p.percentage_of_nodes_to_score, *pct,
                    "{}: {name}",
                    case.name
                );
                assert_eq!(
                    p.describe().filters,
                    default_points(Point::Filter),
                    "{}: {name} filters",
                    case.name
                );
            }
        }
    }

    #[test]
    fn tie_break_is_a_profile_option() {
        let head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n";
        let ranked = Profiles::from_yaml(&format!(
            "{head}- schedulerName: a\n  tieBreak: Ranked\n- schedulerName: b\n"
        ))
        .unwrap();
        assert_eq!(ranked.get("a").unwrap().tie_break, TieBreak::Ranked);
        assert_eq!(ranked.get("b").unwrap().tie_break, TieBreak::Random);
        let err = Profiles::from_yaml(&format!("{head}- tieBreak: First\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("First"), "{err}");
    }

    #[test]
    fn disabling_a_filter_everywhere_via_multi_point() {
        let filters = default_points(Point::Filter);
        let victim = filters[0];
        let yaml = format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: {victim}\n"
        );
        let profiles = Profiles::from_yaml(&yaml).unwrap();
        let d = profiles.get("").unwrap().describe();
        assert!(!d.filters.contains(&victim));
        assert!(!d.pre_filters.contains(&victim));
        assert_eq!(d.filters.len(), filters.len() - 1);
    }

    #[test]
    fn queue_settings() {
        let yaml = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npodInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 20\n";
        let q = Profiles::from_yaml(yaml).unwrap().queue_config();
        assert_eq!(q.initial_backoff, Duration::from_secs(2));
        assert_eq!(q.max_backoff, Duration::from_secs(20));
    }

    #[test]
    fn invalid_configs() {
        struct Bad {
            name: &'static str,
            yaml: &'static str,
            /// Text the error message must contain.
            want: &'static str,
        }
        let cases = [
            Bad {
                name: "bad apiVersion",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
                want: "apiVersion must be \"kubescheduler.config.k8s.io/v1\", found \"kubescheduler.config.k8s.io/v1beta3\"",
            },
            Bad {
                name: "missing apiVersion",
                yaml: "kind: KubeSchedulerConfiguration\n",
                want: "apiVersion must be",
            },
            Bad {
                name: "bad kind",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n",
                want: "kind must be \"KubeSchedulerConfiguration\", found \"Pod\"",
            },
            Bad {
                name: "unknown top-level field",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScroe: 10\n",
                want: "unknown field `percentageOfNodesToScroe`",
            },
            Bad {
                name: "unknown extension point",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    scroe: {}\n",
                want: "profiles[0].plugins: unknown field `scroe`",
            },
            Bad {
                name: "unknown plugin",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    filter:\n      enabled:\n      - name: NoSuchPlugin\n",
                want: "unknown plugin \"NoSuchPlugin\"",
            },
            Bad {
                name: "percentage out of range",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- percentageOfNodesToScore: 101\n",
                want: "profiles[0].percentageOfNodesToScore: 101 is not in the range [0, 100]",
            },
            Bad {
                name: "two unnamed profiles",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- {}\n- schedulerName: b\n",
                want: "profiles[0].schedulerName: required",
            },
            Bad {
                name: "duplicate profile",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: a\n",
                want: "profiles[1].schedulerName: duplicate value \"a\"",
            },
            Bad {
                name: "extenders",
                yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n- urlPrefix: http://x\n",
                want: "extenders is not supported",
            },
        ];
        for case in cases {
            let err = Profiles::from_yaml(case.yaml)
                .map(|_| ())
                .expect_err(case.name)
                .to_string();
            assert!(
                err.contains(case.want),
                "{}: got {err:?}, want it to contain {:?}",
                case.name,
                case.want
            );
        }
    }

    #[test]
    fn a_filter_plugin_enabled_at_score_is_rejected() {
        let only_filter = plugins::DEFAULT_PLUGINS.iter().find(|(n, _)| {
            let s = plugins::build(n, None).unwrap();
            s.filter.is_some() && s.score.is_none()
        });
        let Some((name, _)) = only_filter else {
            panic!("no filter-only default plugin to test with");
        };
        let yaml = format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    score:\n      enabled:\n      - name: {name}\n"
        );
        let err = Profiles::from_yaml(&yaml).unwrap_err();
        assert!(
            matches!(&err, ConfigError::NotAnExtension { plugin, extension_point: "score", .. } if plugin == name),
            "{err}"
        );
    }

    #[test]
    fn from_file_reads_and_reports_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sched.yaml");
        std::fs::write(
            &path,
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: x\n",
        )
        .unwrap();
        let profiles = Profiles::from_file(&path).unwrap();
        assert_eq!(profiles.names().collect::<Vec<_>>(), vec!["x"]);
        let missing = dir.path().join("missing.yaml");
        let err = Profiles::from_file(&missing).unwrap_err().to_string();
        assert!(err.contains("missing.yaml"), "{err}");
    }
}
