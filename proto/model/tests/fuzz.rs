//! Property-based fuzzing of the hand-written parsers that take user input: label selector
//! strings and resource quantities. Arbitrary input must never panic; valid input must
//! round-trip through its printed form. Case counts are bounded so `cargo test` stays fast;
//! `scripts/fuzz.sh` runs the same properties at volume (`BERTH_FUZZ_CASES` per property).

use berth_model::model::{LabelSelector, LabelSelectorOperator, LabelSelectorRequirement};
use berth_model::{selector, validate, Quantity};
use proptest::prelude::*;

/// Cases per property in `cargo test`: enough to shake out panics, cheap enough for every run.
const CASES: u32 = 512;

/// Cases per property: `BERTH_FUZZ_CASES` when set (`scripts/fuzz.sh`), else [`CASES`].
fn cases() -> u32 {
    std::env::var("BERTH_FUZZ_CASES").map_or(CASES, |v| {
        v.parse()
            .expect("BERTH_FUZZ_CASES is a number of cases per property")
    })
}

/// Prints a selector in kubectl's `-l` syntax, the inverse of [`selector::parse`] for the
/// selectors it produces (all requirements are matchExpressions).
fn render(selector: &LabelSelector) -> String {
    selector
        .match_expressions
        .iter()
        .map(|r| match (r.operator, r.values.as_slice()) {
            // One value prints as kubectl's equality form, which also carries an empty value.
            (LabelSelectorOperator::In, [value]) => format!("{}={value}", r.key),
            (LabelSelectorOperator::NotIn, [value]) => format!("{}!={value}", r.key),
            (LabelSelectorOperator::In, values) => format!("{} in ({})", r.key, values.join(",")),
            (LabelSelectorOperator::NotIn, values) => {
                format!("{} notin ({})", r.key, values.join(","))
            }
            (LabelSelectorOperator::Exists, _) => r.key.clone(),
            (LabelSelectorOperator::DoesNotExist, _) => format!("!{}", r.key),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn key() -> impl Strategy<Value = String> {
    // An optional DNS-subdomain prefix (dot-separated labels that start and end with an
    // alphanumeric), then a name.
    "([a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?){0,2}/)?[a-zA-Z0-9]([a-zA-Z0-9_.-]{0,20}[a-zA-Z0-9])?"
}

fn value() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9]([a-zA-Z0-9_.-]{0,20}[a-zA-Z0-9])?"
}

fn requirement() -> impl Strategy<Value = LabelSelectorRequirement> {
    let operator = prop_oneof![
        Just(LabelSelectorOperator::In),
        Just(LabelSelectorOperator::NotIn),
        Just(LabelSelectorOperator::Exists),
        Just(LabelSelectorOperator::DoesNotExist),
    ];
    (key(), operator, prop::collection::vec(value(), 1..4)).prop_map(|(key, operator, values)| {
        let values = match operator {
            LabelSelectorOperator::In | LabelSelectorOperator::NotIn => values,
            _ => Vec::new(),
        };
        LabelSelectorRequirement {
            key,
            operator,
            values,
        }
    })
}

/// Text made of the characters selectors are built from, so that the parser's branches
/// are reached far more often than with uniformly random text.
fn selector_like() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("=".to_string()),
            Just("==".to_string()),
            Just("!=".to_string()),
            Just("!".to_string()),
            Just(",".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just(" in ".to_string()),
            Just(" notin ".to_string()),
            Just(" ".to_string()),
            "[a-z/.]{1,4}",
            "\\PC",
        ],
        0..16,
    )
    .prop_map(|parts| parts.concat())
}

/// Text shaped like quantities: sign, digits, point, suffix, exponent, in any order.
fn quantity_like() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[0-9]{1,25}",
            Just(".".to_string()),
            Just("+".to_string()),
            Just("-".to_string()),
            Just("e".to_string()),
            Just("E".to_string()),
            prop::sample::select(vec![
                "m", "k", "M", "G", "T", "P", "E", "n", "u", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"
            ])
            .prop_map(str::to_string),
            "\\PC",
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn selector_parse_never_panics_on_arbitrary_text(input in "\\PC{0,64}") {
        let _ = selector::parse(&input);
    }

    #[test]
    fn selector_parse_never_panics_on_selector_like_text(input in selector_like()) {
        let parsed = selector::parse(&input);
        // Whatever parses into a valid selector (the parser leaves value syntax to
        // validation) prints back to text that parses to the same selector.
        if let Some(parsed) = parsed.ok().filter(|s| validate::validate_label_selector(s, "s").is_empty()) {
            let again = selector::parse(&render(&parsed));
            prop_assert_eq!(again.as_ref(), Ok(&parsed), "input {:?}", input);
        }
    }

    #[test]
    fn valid_selectors_round_trip(requirements in prop::collection::vec(requirement(), 0..5)) {
        let selector = LabelSelector {
            match_labels: Default::default(),
            match_expressions: requirements,
        };
        let text = render(&selector);
        prop_assert_eq!(selector::parse(&text), Ok(selector), "text {:?}", text);
    }

    #[test]
    fn quantity_parse_never_panics_on_arbitrary_text(input in "\\PC{0,40}") {
        let _ = Quantity::parse(&input);
    }

    #[test]
    fn quantities_that_parse_round_trip_through_display(input in quantity_like()) {
        if let Ok(q) = Quantity::parse(&input) {
            let printed = q.to_string();
            prop_assert_eq!(Quantity::parse(&printed), Ok(q), "{:?} printed as {:?}", input, printed);
            // Accessors saturate rather than overflow.
            let _ = (q.millis(), q.value(), q.is_integer(), q.is_negative());
        }
    }
}
