//! Node-pressure eviction, with kubelet's vocabulary and semantics: eviction [`Signal`]s,
//! [`Threshold`]s parsed from kubelet's flag syntax (`--eviction-hard`, `--eviction-soft`,
//! `--eviction-soft-grace-period`, `--eviction-minimum-reclaim`), and the
//! [`EvictionManager`] that turns [`Observation`]s into node conditions and evictions.
//!
//! # Thresholds
//!
//! An entry is `signal<value`: `memory.available<100Mi`, `nodefs.available<10%`,
//! `pid.available<5%`. A value is a quantity (bytes, or a count of pids) or a percentage of
//! the signal's capacity. Soft thresholds need a grace period (`memory.available=30s`);
//! a minimum reclaim (`memory.available=200Mi` or `=5%`) keeps a threshold met until the
//! signal is that far above it.

pub mod manager;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use berth_proto::names;
use berth_proto::Quantity;

pub use manager::{Candidate, Decision, Eviction, EvictionManager, Observation};

/// The default of `--eviction-hard`, as kubelet's (without the image filesystem, which
/// Berth has not).
pub const DEFAULT_EVICTION_HARD: &str = "memory.available<100Mi,nodefs.available<10%";

/// What an eviction threshold watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    /// `memory.available`: the node's available memory, in bytes.
    MemoryAvailable,
    /// `nodefs.available`: free bytes of the filesystem holding the agent's root folder.
    NodeFsAvailable,
    /// `pid.available`: process ids left before the kernel's limit.
    PidAvailable,
}

impl Signal {
    /// Every signal, in the order the manager acts on them (memory first, as kubelet).
    pub const ALL: [Signal; 3] = [
        Signal::MemoryAvailable,
        Signal::NodeFsAvailable,
        Signal::PidAvailable,
    ];

    /// The signal's name in flags and messages (`memory.available`).
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::PidAvailable => "pid.available",
        }
    }

    /// Parses a signal name as kubelet's flags write it.
    pub fn parse(name: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The resource the signal is about, as eviction messages name it (`memory`).
    pub fn resource(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory",
            Signal::NodeFsAvailable => "ephemeral-storage",
            Signal::PidAvailable => "pids",
        }
    }

    /// The node condition the signal sets while its threshold is met.
    pub fn condition(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => names::CONDITION_MEMORY_PRESSURE,
            Signal::NodeFsAvailable => names::CONDITION_DISK_PRESSURE,
            Signal::PidAvailable => names::CONDITION_PID_PRESSURE,
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An amount a threshold or a minimum reclaim is stated in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThresholdValue {
    /// An absolute amount: bytes for memory and disk, a count for pids.
    Quantity(i64),
    /// A percentage (0 to 100) of the signal's capacity.
    Percentage(f64),
}

impl ThresholdValue {
    /// The amount this value stands for, given the signal's capacity.
    pub fn resolve(self, capacity: i64) -> i64 {
        match self {
            ThresholdValue::Quantity(q) => q,
            // Rounded as kubelet does (a float product truncated to an integer).
            ThresholdValue::Percentage(p) => (capacity as f64 * p / 100.0) as i64,
        }
    }

    /// Parses `100Mi`, `1000` or `10%`; a percentage lies in (0, 100].
    fn parse(text: &str) -> Result<ThresholdValue, String> {
        if let Some(percent) = text.strip_suffix('%') {
            let p: f64 = percent
                .parse()
                .map_err(|_| format!("invalid percentage {text:?}"))?;
            if !(p > 0.0 && p <= 100.0) {
                return Err(format!("percentage {text:?} must be in (0%, 100%]"));
            }
            return Ok(ThresholdValue::Percentage(p));
        }
        let q = Quantity::parse(text).map_err(|e| e.to_string())?;
        if q.is_negative() {
            return Err(format!("quantity {text:?} must not be negative"));
        }
        Ok(ThresholdValue::Quantity(q.value()))
    }
}

impl fmt::Display for ThresholdValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdValue::Quantity(q) => write!(f, "{}", Quantity::from_value(*q)),
            ThresholdValue::Percentage(p) => write!(f, "{p}%"),
        }
    }
}

/// One eviction threshold: the signal is past it when its available amount is below
/// `value`. A hard threshold has a zero grace period and acts at once; a soft one acts once
/// it has been met for `grace_period`.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// What is watched.
    pub signal: Signal,
    /// The available amount below which the threshold is met.
    pub value: ThresholdValue,
    /// How long the threshold must hold before pods are evicted (zero: hard).
    pub grace_period: Duration,
    /// Once met, the threshold stays met until the signal is this far above `value`.
    pub min_reclaim: Option<ThresholdValue>,
}

impl Threshold {
    /// Whether this is a hard threshold (no grace period).
    pub fn is_hard(&self) -> bool {
        self.grace_period.is_zero()
    }
}

/// A flag of the eviction configuration could not be read. Each names the entry at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EvictionConfigError {
    /// An entry is not `signal<value` (or `signal=value` for grace periods and reclaims).
    #[error("invalid eviction entry {entry:?} in --{flag}: {reason}")]
    InvalidEntry {
        /// The flag, without dashes.
        flag: &'static str,
        /// The entry as written.
        entry: String,
        /// What is wrong.
        reason: String,
    },
    /// A soft threshold has no grace period in `--eviction-soft-grace-period`.
    #[error("no grace period specified for soft eviction threshold {signal} (add {signal}=DURATION to --eviction-soft-grace-period)")]
    MissingGracePeriod {
        /// The signal of the soft threshold.
        signal: Signal,
    },
    /// A grace period is given for a signal without a soft threshold.
    #[error("grace period given for {signal} in --eviction-soft-grace-period, which has no soft threshold")]
    GracePeriodWithoutThreshold {
        /// The signal.
        signal: Signal,
    },
}

/// Parses a kubelet-style list flag into `signal → value` pairs, refusing duplicates and
/// unknown signals. `separator` is `<` for thresholds and `=` for the per-signal maps.
fn parse_list(
    flag: &'static str,
    text: &str,
    separator: char,
) -> Result<BTreeMap<Signal, String>, EvictionConfigError> {
    let mut out = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let invalid = |reason: String| EvictionConfigError::InvalidEntry {
            flag,
            entry: entry.to_string(),
            reason,
        };
        let Some((name, value)) = entry.split_once(separator) else {
            return Err(invalid(format!("expected signal{separator}value")));
        };
        let signal = Signal::parse(name.trim()).ok_or_else(|| {
            invalid(format!(
                "unsupported eviction signal {:?} (supported: memory.available, nodefs.available, pid.available)",
                name.trim()
            ))
        })?;
        if out.insert(signal, value.trim().to_string()).is_some() {
            return Err(invalid(format!("{signal} is given more than once")));
        }
    }
    Ok(out)
}

/// Parses a list flag (see [`parse_list`]), then each value with `parse`; a value that does
/// not parse is refused with its entry, `signal<separator>value`.
fn parse_values<T>(
    flag: &'static str,
    text: &str,
    separator: char,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<BTreeMap<Signal, T>, EvictionConfigError> {
    parse_list(flag, text, separator)?
        .into_iter()
        .map(|(signal, value)| {
            parse(&value)
                .map(|v| (signal, v))
                .map_err(|reason| EvictionConfigError::InvalidEntry {
                    flag,
                    entry: format!("{signal}{separator}{value}"),
                    reason,
                })
        })
        .collect()
}

/// Parses one kind of threshold flag (`--eviction-hard` or `--eviction-soft`).
fn parse_thresholds(
    flag: &'static str,
    text: &str,
) -> Result<BTreeMap<Signal, ThresholdValue>, EvictionConfigError> {
    parse_values(flag, text, '<', ThresholdValue::parse)
}

/// The eviction flags as written, before they are checked together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvictionFlags {
    /// `--eviction-hard`.
    pub hard: String,
    /// `--eviction-soft`.
    pub soft: String,
    /// `--eviction-soft-grace-period`.
    pub soft_grace_period: String,
    /// `--eviction-minimum-reclaim`.
    pub minimum_reclaim: String,
}

/// Reads the eviction flags into thresholds: hard ones first, then soft ones, each in
/// signal order. A soft threshold must have a grace period, and a grace period a soft
/// threshold; a minimum reclaim applies to every threshold of its signal.
pub fn thresholds_from_flags(flags: &EvictionFlags) -> Result<Vec<Threshold>, EvictionConfigError> {
    let hard = parse_thresholds("eviction-hard", &flags.hard)?;
    let soft = parse_thresholds("eviction-soft", &flags.soft)?;
    let grace = parse_values(
        "eviction-soft-grace-period",
        &flags.soft_grace_period,
        '=',
        |text| humantime::parse_duration(text).map_err(|e| e.to_string()),
    )?;
    let reclaim = parse_values(
        "eviction-minimum-reclaim",
        &flags.minimum_reclaim,
        '=',
        ThresholdValue::parse,
    )?;
    if let Some(signal) = grace.keys().find(|s| !soft.contains_key(s)) {
        return Err(EvictionConfigError::GracePeriodWithoutThreshold { signal: *signal });
    }
    let mut thresholds = Vec::new();
    for (signal, value) in hard {
        thresholds.push(Threshold {
            signal,
            value,
            grace_period: Duration::ZERO,
            min_reclaim: reclaim.get(&signal).copied(),
        });
    }
    for (signal, value) in soft {
        let grace_period = *grace
            .get(&signal)
            .ok_or(EvictionConfigError::MissingGracePeriod { signal })?;
        thresholds.push(Threshold {
            signal,
            value,
            // A zero grace period would make a soft threshold hard; keep it soft, acting at
            // the next tick.
            grace_period: grace_period.max(Duration::from_nanos(1)),
            min_reclaim: reclaim.get(&signal).copied(),
        });
    }
    Ok(thresholds)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A threshold as the table writes it: signal, value, grace seconds, minimum reclaim.
    type WantThreshold = (Signal, &'static str, u64, Option<&'static str>);

    #[test]
    fn thresholds_parse_like_kubelet_flags() {
        struct Case {
            name: &'static str,
            flags: EvictionFlags,
            want: Result<Vec<WantThreshold>, &'static str>,
        }
        let flags = |hard: &str, soft: &str, grace: &str, reclaim: &str| EvictionFlags {
            hard: hard.into(),
            soft: soft.into(),
            soft_grace_period: grace.into(),
            minimum_reclaim: reclaim.into(),
        };
        let cases = vec![
            Case {
                name: "kubelet default",
                flags: flags(DEFAULT_EVICTION_HARD, "", "", ""),
                want: Ok(vec![
                    (Signal::MemoryAvailable, "100Mi", 0, None),
                    (Signal::NodeFsAvailable, "10%", 0, None),
                ]),
            },
            Case {
                name: "soft with grace and reclaim",
                flags: flags(
                    "memory.available<100Mi",
                    "memory.available<300Mi, pid.available<5%",
                    "memory.available=30s,pid.available=1m",
                    "memory.available=50Mi",
                ),
                want: Ok(vec![
                    (Signal::MemoryAvailable, "100Mi", 0, Some("50Mi")),
                    (Signal::MemoryAvailable, "300Mi", 30, Some("50Mi")),
                    (Signal::PidAvailable, "5%", 60, None),
                ]),
            },
            Case {
                name: "nothing",
                flags: flags("", "", "", ""),
                want: Ok(vec![]),
            },
            Case {
                name: "wrong operator",
                flags: flags("memory.available>100Mi", "", "", ""),
                want: Err("invalid eviction entry \"memory.available>100Mi\" in --eviction-hard: expected signal<value"),
            },
            Case {
                name: "unknown signal",
                flags: flags("imagefs.available<15%", "", "", ""),
                want: Err("\"imagefs.available<15%\" in --eviction-hard: unsupported eviction signal"),
            },
            Case {
                name: "bad quantity",
                flags: flags("memory.available<lots", "", "", ""),
                want: Err("\"memory.available<lots\" in --eviction-hard"),
            },
            Case {
                name: "bad percentage",
                flags: flags("nodefs.available<150%", "", "", ""),
                want: Err("\"nodefs.available<150%\" in --eviction-hard: percentage"),
            },
            Case {
                name: "duplicate",
                flags: flags("memory.available<1Mi,memory.available<2Mi", "", "", ""),
                want: Err("more than once"),
            },
            Case {
                name: "soft without grace",
                flags: flags("", "memory.available<1Gi", "", ""),
                want: Err("no grace period specified for soft eviction threshold memory.available"),
            },
            Case {
                name: "grace without soft",
                flags: flags("", "", "memory.available=30s", ""),
                want: Err("grace period given for memory.available"),
            },
            Case {
                name: "bad grace",
                flags: flags("", "memory.available<1Gi", "memory.available=soon", ""),
                want: Err("\"memory.available=soon\" in --eviction-soft-grace-period"),
            },
            Case {
                name: "bad reclaim",
                flags: flags("memory.available<1Gi", "", "", "memory.available=-1Mi"),
                want: Err("\"memory.available=-1Mi\" in --eviction-minimum-reclaim"),
            },
        ];
        for case in cases {
            match (thresholds_from_flags(&case.flags), case.want) {
                (Ok(got), Ok(want)) => {
                    let got: Vec<(Signal, String, u64, Option<String>)> = got
                        .iter()
                        .map(|t| {
                            (
                                t.signal,
                                t.value.to_string(),
                                t.grace_period.as_secs(),
                                t.min_reclaim.map(|r| r.to_string()),
                            )
                        })
                        .collect();
                    let want: Vec<(Signal, String, u64, Option<String>)> = want
                        .into_iter()
                        .map(|(s, v, g, r)| (s, v.to_string(), g, r.map(str::to_string)))
                        .collect();
                    assert_eq!(got, want, "{}", case.name);
                }
                (Err(e), Err(want)) => assert!(
                    e.to_string().contains(want),
                    "{}: {e} lacks {want:?}",
                    case.name
                ),
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn values_resolve_against_capacity() {
        struct Case {
            name: &'static str,
            value: ThresholdValue,
            capacity: i64,
            want: i64,
        }
        let cases = [
            Case {
                name: "quantity ignores capacity",
                value: ThresholdValue::Quantity(100),
                capacity: 1000,
                want: 100,
            },
            Case {
                name: "percentage",
                value: ThresholdValue::Percentage(10.0),
                capacity: 1000,
                want: 100,
            },
            Case {
                name: "fraction truncated",
                value: ThresholdValue::Percentage(33.3),
                capacity: 10,
                want: 3,
            },
        ];
        for case in cases {
            assert_eq!(
                case.value.resolve(case.capacity),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
