//! `IntOrString`: a field that holds either an integer or a string, in practice a count or a
//! percentage (`minAvailable: 2`, `maxUnavailable: "25%"`), and its resolution against a total.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An integer or a string, as Kubernetes' `intstr.IntOrString`. In YAML and JSON it is
/// written as a bare number (`2`) or a string (`"50%"`); the variant records which.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntOrString {
    /// A plain count.
    Int(i32),
    /// A string, normally a percentage such as `"25%"`.
    String(String),
}

/// Why an [`IntOrString`] cannot be resolved to a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntOrStringError {
    /// A string that does not end in `%`.
    #[error("invalid value {value:?}: a string must be a percentage such as \"25%\"")]
    NotAPercentage {
        /// The string given.
        value: String,
    },
    /// A string ending in `%` whose number does not parse as a 32-bit integer.
    #[error("invalid value {value:?}: the percentage is not an integer")]
    InvalidPercentage {
        /// The string given.
        value: String,
    },
}

impl IntOrString {
    /// The percentage this value states, if it is a string of the form `<integer>%`. The
    /// integer may carry a sign, as Go's `strconv.Atoi` accepts; validation rejects negative
    /// percentages separately.
    pub fn percent(&self) -> Option<Result<i32, IntOrStringError>> {
        match self {
            IntOrString::Int(_) => None,
            IntOrString::String(s) => Some(parse_percent(s)),
        }
    }

    /// Whether the value is a string (and so meant as a percentage).
    pub fn is_string(&self) -> bool {
        matches!(self, IntOrString::String(_))
    }

    /// The value against `total`, as Kubernetes' `GetScaledValueFromIntOrPercent`: an
    /// integer is itself; a percentage `p%` is `p * total / 100`, rounded up when `round_up`
    /// (PodDisruptionBudgets' minAvailable and maxUnavailable, a Deployment's maxSurge) and
    /// down otherwise (a Deployment's maxUnavailable). Percentages above 100 are not
    /// refused here (validation refuses them where Kubernetes does): `150%` of 10 is 15.
    ///
    /// The result is an `i64` because `p * total / 100` can leave the range of `i32` when
    /// `p` exceeds 100.
    pub fn scaled_value(&self, total: i32, round_up: bool) -> Result<i64, IntOrStringError> {
        match self {
            IntOrString::Int(v) => Ok(i64::from(*v)),
            IntOrString::String(s) => {
                let product = i64::from(parse_percent(s)?) * i64::from(total);
                Ok(if round_up {
                    // Ceiling division that is right for negative products too.
                    -(-product).div_euclid(100)
                } else {
                    product.div_euclid(100)
                })
            }
        }
    }

    /// [`IntOrString::scaled_value`] rounding up, as the disruption controller resolves a
    /// PodDisruptionBudget's minAvailable and maxUnavailable against the expected pod count.
    pub fn resolve(&self, total: i32) -> Result<i64, IntOrStringError> {
        self.scaled_value(total, true)
    }
}

fn parse_percent(s: &str) -> Result<i32, IntOrStringError> {
    let digits = s
        .strip_suffix('%')
        .ok_or_else(|| IntOrStringError::NotAPercentage {
            value: s.to_string(),
        })?;
    digits
        .parse::<i32>()
        .map_err(|_| IntOrStringError::InvalidPercentage {
            value: s.to_string(),
        })
}

impl Default for IntOrString {
    /// `0`, as Kubernetes' zero value.
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

impl From<i32> for IntOrString {
    fn from(v: i32) -> Self {
        IntOrString::Int(v)
    }
}

impl From<&str> for IntOrString {
    fn from(s: &str) -> Self {
        IntOrString::String(s.to_string())
    }
}

impl std::fmt::Display for IntOrString {
    /// `2` or `25%`, as kubectl prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntOrString::Int(v) => write!(f, "{v}"),
            IntOrString::String(s) => f.write_str(s),
        }
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(v) => s.serialize_i32(*v),
            IntOrString::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntOrStringVisitor)
    }
}

struct IntOrStringVisitor;

impl<'de> Visitor<'de> for IntOrStringVisitor {
    type Value = IntOrString;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an integer or a percentage string such as \"25%\"")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &"a 32-bit integer"))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &"a 32-bit integer"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrString, E> {
        Ok(IntOrString::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<IntOrString, E> {
        Ok(IntOrString::String(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_values_match_kubernetes() {
        struct Case {
            name: &'static str,
            value: IntOrString,
            total: i32,
            round_up: bool,
            want: Result<i64, IntOrStringError>,
        }
        let pct = |s: &str| IntOrString::String(s.to_string());
        let cases = [
            Case {
                name: "int",
                value: IntOrString::Int(3),
                total: 10,
                round_up: true,
                want: Ok(3),
            },
            Case {
                name: "int above total",
                value: IntOrString::Int(30),
                total: 10,
                round_up: true,
                want: Ok(30),
            },
            Case {
                name: "int zero",
                value: IntOrString::Int(0),
                total: 10,
                round_up: false,
                want: Ok(0),
            },
            Case {
                name: "25% of 7 rounds up",
                value: pct("25%"),
                total: 7,
                round_up: true,
                want: Ok(2),
            },
            Case {
                name: "25% of 7 rounds down",
                value: pct("25%"),
                total: 7,
                round_up: false,
                want: Ok(1),
            },
            Case {
                name: "50% of 4 exact",
                value: pct("50%"),
                total: 4,
                round_up: true,
                want: Ok(2),
            },
            Case {
                name: "0%",
                value: pct("0%"),
                total: 7,
                round_up: true,
                want: Ok(0),
            },
            Case {
                name: "100%",
                value: pct("100%"),
                total: 7,
                round_up: true,
                want: Ok(7),
            },
            Case {
                name: "1% of 1 rounds up",
                value: pct("1%"),
                total: 1,
                round_up: true,
                want: Ok(1),
            },
            Case {
                name: "1% of 1 rounds down",
                value: pct("1%"),
                total: 1,
                round_up: false,
                want: Ok(0),
            },
            Case {
                name: "of zero",
                value: pct("50%"),
                total: 0,
                round_up: true,
                want: Ok(0),
            },
            Case {
                name: "above 100% is not refused",
                value: pct("150%"),
                total: 10,
                round_up: true,
                want: Ok(15),
            },
            Case {
                name: "negative rounds toward +inf",
                value: pct("-25%"),
                total: 7,
                round_up: true,
                want: Ok(-1),
            },
            Case {
                name: "invalid abc%",
                value: pct("abc%"),
                total: 7,
                round_up: true,
                want: Err(IntOrStringError::InvalidPercentage {
                    value: "abc%".into(),
                }),
            },
            Case {
                name: "string without %",
                value: pct("5"),
                total: 7,
                round_up: true,
                want: Err(IntOrStringError::NotAPercentage { value: "5".into() }),
            },
            Case {
                name: "empty percent",
                value: pct("%"),
                total: 7,
                round_up: true,
                want: Err(IntOrStringError::InvalidPercentage { value: "%".into() }),
            },
        ];
        for case in cases {
            assert_eq!(
                case.value.scaled_value(case.total, case.round_up),
                case.want,
                "{}",
                case.name
            );
        }
        assert_eq!(pct("25%").resolve(7), Ok(2), "resolve rounds up");
    }

    #[test]
    fn serde_accepts_numbers_and_strings() {
        struct Case {
            name: &'static str,
            json: &'static str,
            want: Option<IntOrString>,
        }
        let cases = [
            Case {
                name: "integer",
                json: "2",
                want: Some(IntOrString::Int(2)),
            },
            Case {
                name: "negative",
                json: "-1",
                want: Some(IntOrString::Int(-1)),
            },
            Case {
                name: "percentage",
                json: "\"50%\"",
                want: Some(IntOrString::String("50%".into())),
            },
            Case {
                name: "numeric string stays a string",
                json: "\"5\"",
                want: Some(IntOrString::String("5".into())),
            },
            Case {
                name: "too large",
                json: "2147483648",
                want: None,
            },
            Case {
                name: "float",
                json: "1.5",
                want: None,
            },
            Case {
                name: "bool",
                json: "true",
                want: None,
            },
        ];
        for case in cases {
            let got: Result<IntOrString, _> = serde_json::from_str(case.json);
            assert_eq!(got.ok(), case.want, "{}", case.name);
            if let Some(want) = case.want {
                assert_eq!(
                    serde_json::to_string(&want).expect("serializes"),
                    case.json,
                    "{}: writes back as read",
                    case.name
                );
            }
        }
    }

    #[test]
    fn percent_and_display() {
        assert_eq!(IntOrString::from("30%").percent(), Some(Ok(30)));
        assert_eq!(IntOrString::from(3).percent(), None);
        assert_eq!(IntOrString::from(3).to_string(), "3");
        assert_eq!(IntOrString::from("30%").to_string(), "30%");
        assert!(IntOrString::from("x").is_string());
    }
}
