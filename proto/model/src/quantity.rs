//! Exact Kubernetes resource quantities: `100m`, `0.5`, `2`, `1Gi`, `512Mi`, `1e3`, `2k`.
//!
//! A quantity is kept as an integer count of thousandths (milli-units), so `100m` CPU is
//! 100 and `1Gi` is 1024³·1000. Parsing is exact: no floating point is involved, and a value
//! finer than a thousandth is rounded up, as Kubernetes' `MilliValue` does.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An exact resource quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    // The count of thousandths, an i128 kept as two 8-byte halves (high half first, so
    // that the derived order is the i128's): 8-byte aligned, a quantity packs beside a
    // `String` without padding (a resource list's entry is 40 bytes, not 48).
    hi: i64,
    lo: u64,
}

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string is empty.
    #[error("quantity is empty")]
    Empty,
    /// The string does not follow the quantity grammar.
    #[error("{input:?} is not a valid quantity (expected a number with an optional suffix such as m, k, Mi, Gi or e3)")]
    Syntax {
        /// The rejected text.
        input: String,
    },
    /// The value is beyond what Berth can represent.
    #[error("{input:?} is too large")]
    Overflow {
        /// The rejected text.
        input: String,
    },
}

const BINARY_SUFFIXES: [(&str, u32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];

const DECIMAL_SUFFIXES: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

impl Quantity {
    /// Parses a quantity in Kubernetes' syntax.
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let s = input.trim();
        if s.is_empty() {
            return Err(QuantityError::Empty);
        }
        let syntax = || QuantityError::Syntax {
            input: input.to_string(),
        };
        let overflow = || QuantityError::Overflow {
            input: input.to_string(),
        };
        let bytes = s.as_bytes();
        let mut i = 0;
        let mut negative = false;
        if bytes[0] == b'+' || bytes[0] == b'-' {
            negative = bytes[0] == b'-';
            i = 1;
        }
        // Mantissa: digits, optionally a point and more digits.
        let mut mantissa: i128 = 0;
        let mut frac_digits: i32 = 0;
        let mut digits = 0;
        let mut seen_point = false;
        while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_digit() {
                mantissa = mantissa
                    .checked_mul(10)
                    .and_then(|m| m.checked_add(i128::from(c - b'0')))
                    .ok_or_else(overflow)?;
                digits += 1;
                if seen_point {
                    frac_digits += 1;
                }
            } else if c == b'.' && !seen_point {
                seen_point = true;
            } else {
                break;
            }
            i += 1;
        }
        if digits == 0 {
            return Err(syntax());
        }
        let suffix = &s[i..];
        let (exp10, binary_power) = parse_suffix(suffix).ok_or_else(syntax)?;
        // millis = mantissa · 1024^binary_power · 10^(exp10 − frac_digits + 3), rounded up.
        let mut value = mantissa;
        for _ in 0..binary_power {
            value = value.checked_mul(1024).ok_or_else(overflow)?;
        }
        let scale = exp10 - frac_digits + 3;
        if scale >= 0 {
            let factor = 10i128.checked_pow(scale as u32).ok_or_else(overflow)?;
            value = value.checked_mul(factor).ok_or_else(overflow)?;
        } else {
            let divisor = 10i128.checked_pow((-scale) as u32);
            value = match divisor {
                // Dividing by more than i128 can hold leaves at most a rounding remainder.
                None => i128::from(value != 0),
                // Rounded up without `value + d - 1`, which can overflow for long mantissas.
                Some(d) => value / d + i128::from(value % d != 0),
            };
        }
        if value > i128::from(i64::MAX) * 1000 {
            return Err(overflow());
        }
        Ok(Quantity::from_raw(if negative { -value } else { value }))
    }

    /// The quantity of `millis` thousandths, in full.
    const fn from_raw(millis: i128) -> Self {
        Quantity {
            hi: (millis >> 64) as i64,
            lo: millis as u64,
        }
    }

    /// The count of thousandths, in full.
    const fn raw(&self) -> i128 {
        ((self.hi as i128) << 64) | self.lo as i128
    }

    /// A quantity of `millis` thousandths (CPU millicores).
    pub const fn from_millis(millis: i64) -> Self {
        Quantity::from_raw(millis as i128)
    }

    /// A whole quantity (bytes, pods, devices).
    pub const fn from_value(value: i64) -> Self {
        Quantity::from_raw(value as i128 * 1000)
    }

    /// The value in thousandths (CPU: millicores), saturating at the bounds of `i64`.
    pub fn millis(&self) -> i64 {
        i64::try_from(self.raw()).unwrap_or(if self.raw() < 0 { i64::MIN } else { i64::MAX })
    }

    /// The value as a whole number, rounded up (memory: bytes), as Kubernetes' `Value`.
    pub fn value(&self) -> i64 {
        let v = self.raw().div_euclid(1000) + i128::from(self.raw().rem_euclid(1000) != 0);
        i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
    }

    /// Whether the quantity is a whole number.
    pub fn is_integer(&self) -> bool {
        self.raw() % 1000 == 0
    }

    /// Whether the quantity is below zero.
    pub fn is_negative(&self) -> bool {
        self.raw() < 0
    }

    /// -1, 0 or 1 as the quantity is below, at or above zero (kube CEL's `sign()`).
    pub fn sign(&self) -> i64 {
        self.raw().signum() as i64
    }

    /// The whole value when it is an integer that fits an `i64` (kube CEL's `asInteger()`).
    pub fn as_i64(&self) -> Option<i64> {
        if self.is_integer() {
            i64::try_from(self.raw() / 1000).ok()
        } else {
            None
        }
    }

    /// The value as a float, possibly rounded (kube CEL's `asApproximateFloat()`).
    pub fn as_f64(&self) -> f64 {
        self.raw() as f64 / 1000.0
    }

    /// The sum, or `None` past what a quantity can hold.
    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        self.raw().checked_add(other.raw()).map(Quantity::from_raw)
    }

    /// The difference, or `None` past what a quantity can hold.
    pub fn checked_sub(self, other: Quantity) -> Option<Quantity> {
        self.raw().checked_sub(other.raw()).map(Quantity::from_raw)
    }
}

fn parse_suffix(suffix: &str) -> Option<(i32, u32)> {
    if suffix.is_empty() {
        return Some((0, 0));
    }
    if let Some(&(_, p)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((0, p));
    }
    if let Some(&(_, e)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((e, 0));
    }
    let exp = suffix
        .strip_prefix('e')
        .or_else(|| suffix.strip_prefix('E'))?;
    let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 4 {
        return None;
    }
    exp.parse::<i32>().ok().map(|e| (e, 0))
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl std::fmt::Display for Quantity {
    /// Canonical form: `250m` for fractions, a binary suffix (`Ki`..`Ei`) when the value is an
    /// exact multiple of 1024, else a decimal suffix (`k`..`E`) when an exact multiple of
    /// 1000, else the plain integer.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.raw() % 1000 != 0 {
            return write!(f, "{}m", self.raw());
        }
        let v = self.raw() / 1000;
        if v == 0 {
            return f.write_str("0");
        }
        for (suffix, power) in BINARY_SUFFIXES.iter().rev() {
            let unit = 1i128 << (10 * power);
            if v % unit == 0 {
                return write!(f, "{}{}", v / unit, suffix);
            }
        }
        for (suffix, exp) in DECIMAL_SUFFIXES.iter().rev().filter(|(_, e)| *e > 0) {
            let unit = 10i128.pow(*exp as u32);
            if v % unit == 0 {
                return write!(f, "{}{}", v / unit, suffix);
            }
        }
        write!(f, "{v}")
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    /// Accepts a string (`"500m"`), an integer (`2`) or a float (`0.5`), as YAML writes them.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Quantity;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a quantity such as 500m, 2, 0.5 or 1Gi")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
                Quantity::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
                if !v.is_finite() {
                    return Err(E::custom(format!("{v} is not a valid quantity")));
                }
                // Rust prints the shortest text that reads back as the same float, which is
                // the text the user wrote for any ordinary number (0.5, 1.25, 1e-3).
                Quantity::parse(&format!("{v}")).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A quantity stays 16 bytes at 8-byte alignment (see the fields).
const _: () =
    assert!(std::mem::size_of::<Quantity>() == 16 && std::mem::align_of::<Quantity>() == 8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_keep_the_full_value_and_its_order() {
        let values = [
            i128::MIN,
            -(1i128 << 64) - 1,
            -(1i128 << 64),
            -(1i128 << 63),
            -1001,
            -1,
            0,
            1,
            999,
            (1i128 << 63) - 1,
            1i128 << 64,
            i128::from(i64::MAX) * 1000,
            i128::MAX,
        ];
        for a in values {
            assert_eq!(Quantity::from_raw(a).raw(), a, "{a}");
            for b in values {
                assert_eq!(
                    Quantity::from_raw(a).cmp(&Quantity::from_raw(b)),
                    a.cmp(&b),
                    "{a} against {b}"
                );
            }
        }
    }

    #[test]
    fn parses_kubernetes_quantities_exactly() {
        struct Case {
            input: &'static str,
            millis: i64,
        }
        let cases = [
            Case {
                input: "100m",
                millis: 100,
            },
            Case {
                input: "0.5",
                millis: 500,
            },
            Case {
                input: ".5",
                millis: 500,
            },
            Case {
                input: "2",
                millis: 2000,
            },
            Case {
                input: "1Gi",
                millis: 1_073_741_824_000,
            },
            Case {
                input: "512Mi",
                millis: 536_870_912_000,
            },
            Case {
                input: "1e3",
                millis: 1_000_000,
            },
            Case {
                input: "1E3",
                millis: 1_000_000,
            },
            Case {
                input: "2k",
                millis: 2_000_000,
            },
            Case {
                input: "1.5Gi",
                millis: 1_610_612_736_000,
            },
            Case {
                input: "0.1",
                millis: 100,
            },
            Case {
                input: "1u",
                millis: 1,
            },
            Case {
                input: "1n",
                millis: 1,
            },
            Case {
                input: "0",
                millis: 0,
            },
            Case {
                input: "+3",
                millis: 3000,
            },
            Case {
                input: "-1",
                millis: -1000,
            },
            Case {
                input: "1.",
                millis: 1000,
            },
            Case {
                input: "12e-1",
                millis: 1200,
            },
            Case {
                input: "0.0001",
                millis: 1,
            },
            Case {
                input: "1M",
                millis: 1_000_000_000,
            },
            Case {
                input: "1Ki",
                millis: 1_024_000,
            },
        ];
        for case in cases {
            let q = Quantity::parse(case.input)
                .unwrap_or_else(|e| panic!("{}: unexpected error {e}", case.input));
            assert_eq!(q.millis(), case.millis, "{}", case.input);
        }
    }

    #[test]
    fn rejects_malformed_quantities() {
        for input in [
            "", "abc", "1.2.3", "1Qi", "Gi", "1 Gi", "--1", "1e", "1ee3", "m", "1.5.Mi", "1e99999",
        ] {
            assert!(
                Quantity::parse(input).is_err(),
                "{input:?} should be rejected"
            );
        }
        assert!(matches!(
            Quantity::parse("99999999999999999999999999999999999999999"),
            Err(QuantityError::Overflow { .. })
        ));
    }

    #[test]
    fn long_fractions_round_up_without_overflow() {
        // Found by the fuzz target: 39 fraction digits made the rounding step overflow.
        let q = Quantity::parse(".169142000000000000000000000000000000000").unwrap();
        assert_eq!(q.millis(), 170);
        assert_eq!(
            Quantity::parse("0.000000000000000000000000000000000000001")
                .unwrap()
                .millis(),
            1
        );
    }

    #[test]
    fn value_rounds_up_like_kubernetes() {
        assert_eq!(Quantity::parse("0.5").unwrap().value(), 1);
        assert_eq!(Quantity::parse("100m").unwrap().value(), 1);
        assert_eq!(Quantity::parse("1Gi").unwrap().value(), 1 << 30);
        assert_eq!(Quantity::parse("2").unwrap().value(), 2);
    }

    #[test]
    fn displays_canonically_and_round_trips() {
        for (input, shown) in [
            ("100m", "100m"),
            ("0.5", "500m"),
            ("2000m", "2"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1e3", "1k"),
            ("1G", "1G"),
            ("0", "0"),
            ("7", "7"),
        ] {
            let q = Quantity::parse(input).unwrap();
            assert_eq!(q.to_string(), shown, "{input}");
            assert_eq!(Quantity::parse(shown).unwrap(), q, "{input} round trip");
        }
    }

    #[test]
    fn deserializes_yaml_numbers_and_strings() {
        let q: Quantity = serde_json::from_str("0.5").unwrap();
        assert_eq!(q.millis(), 500);
        let q: Quantity = serde_json::from_str("2").unwrap();
        assert_eq!(q.millis(), 2000);
        let q: Quantity = serde_json::from_str("\"250m\"").unwrap();
        assert_eq!(q.millis(), 250);
        let err = serde_json::from_str::<Quantity>("\"lots\"").unwrap_err();
        assert!(err.to_string().contains("not a valid quantity"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn integer_millis_round_trip(m in -1_000_000_000_000i64..1_000_000_000_000i64) {
            let q = Quantity::from_millis(m);
            proptest::prop_assert_eq!(Quantity::parse(&q.to_string()).unwrap(), q);
        }

        #[test]
        fn never_panics(s in "\\PC{0,20}") {
            let _ = Quantity::parse(&s);
        }
    }
}
