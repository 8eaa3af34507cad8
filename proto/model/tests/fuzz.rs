//! Property-based fuzzing of what takes user input: label selector strings, resource
//! quantities, DRA's CEL device selectors (compiled and evaluated against generated
//! devices) and the DRA objects (DeviceClass, ResourceClaim, ResourceClaimTemplate,
//! ResourceSlice: decoded and validated). Arbitrary input must never panic; valid selectors
//! and quantities must round-trip through their printed form. Case counts are bounded so `cargo test` stays fast;
//! `scripts/fuzz.sh` runs the same properties at volume (`BERTH_FUZZ_CASES` per property).

use std::collections::BTreeMap;

use berth_model::cel::{self, CelDevice};
use berth_model::model::{
    DeviceAttribute, DeviceCapacity, Kind, LabelSelector, LabelSelectorOperator,
    LabelSelectorRequirement,
};
use berth_model::{decode, selector, validate, Quantity};
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

// ------------------------------------------------------------------ CEL device selectors

/// Attribute and capacity names a generated device has and an expression reads; some are
/// qualified by a domain, some by none (the driver's).
const CEL_NAMES: &[&str] = &["model", "index", "v", "memory"];
const CEL_DOMAINS: &[&str] = &["gpu.berth.dev", "other.dev", ""];

/// Text shaped like a version: mostly semver (a device with an invalid one fails every
/// evaluation, so those are rare), sometimes not quite.
fn version_like() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => "(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})(-[a-z0-9]{1,4}(\\.[a-z0-9]{1,4})?)?(\\+[a-z0-9]{1,4})?",
        1 => prop::sample::select(vec![
            "",
            "1",
            "1.2",
            "01.2.3",
            "1.2.3.4",
            "v1.2.3",
            "99999999999999999999.0.0"
        ])
        .prop_map(str::to_string),
        1 => "\\PC{0,8}",
    ]
}

/// An attribute value: usually one typed field as kube requires, sometimes none or several
/// (what validation would refuse, evaluated anyway).
fn attribute() -> impl Strategy<Value = DeviceAttribute> {
    prop_oneof![
        4 => any::<i64>().prop_map(DeviceAttribute::int),
        2 => any::<bool>().prop_map(DeviceAttribute::bool),
        3 => "\\PC{0,12}".prop_map(|s| DeviceAttribute::string(&s)),
        3 => version_like().prop_map(|s| DeviceAttribute::version(&s)),
        1 => (
            prop::option::of(any::<i64>()),
            prop::option::of(any::<bool>()),
            prop::option::of("\\PC{0,4}"),
            prop::option::of(version_like()),
        )
            .prop_map(|(int, bool, string, version)| DeviceAttribute {
                int,
                bool,
                string,
                version,
            }),
    ]
}

/// A quantity for a device's capacity, from small to the largest the model holds.
fn capacity_quantity() -> impl Strategy<Value = Quantity> {
    prop_oneof![
        (
            0i64..1_000_000,
            prop::sample::select(vec!["", "m", "k", "Mi", "Gi", "Ti", "Ei"])
        )
            .prop_map(|(n, suffix)| format!("{n}{suffix}")),
        quantity_like(),
        prop::sample::select(vec![
            "9223372036854775807",
            "-9223372036854775808",
            "1e18",
            "8Ei",
            "0.001m"
        ])
        .prop_map(str::to_string),
    ]
    // Text that does not parse is a plain 1 rather than a rejected case: at volume,
    // rejections would exceed proptest's limit of local rejects.
    .prop_map(|s| {
        Quantity::parse(&s).unwrap_or_else(|_| Quantity::parse("1").expect("1 is a quantity"))
    })
}

/// A qualified name as a ResourceSlice writes it: `name` or `domain/name`.
fn qualified_name() -> impl Strategy<Value = String> {
    (
        prop::sample::select(CEL_DOMAINS),
        prop::sample::select(CEL_NAMES),
    )
        .prop_map(|(d, n)| {
            if d.is_empty() {
                n.to_string()
            } else {
                format!("{d}/{n}")
            }
        })
}

/// What a selector sees of a device, generated.
#[derive(Clone, Debug)]
struct FuzzDevice {
    driver: String,
    attributes: BTreeMap<String, DeviceAttribute>,
    capacity: BTreeMap<String, DeviceCapacity>,
    shared: bool,
}

fn device() -> impl Strategy<Value = FuzzDevice> {
    (
        prop_oneof![
            4 => Just("gpu.berth.dev".to_string()),
            1 => Just("other.dev".to_string()),
            1 => "\\PC{0,8}"
        ],
        prop::collection::btree_map(qualified_name(), attribute(), 0..10),
        prop::collection::btree_map(
            qualified_name(),
            capacity_quantity().prop_map(DeviceCapacity::new),
            0..10,
        ),
        any::<bool>(),
    )
        .prop_map(|(driver, attributes, capacity, shared)| FuzzDevice {
            driver,
            attributes,
            capacity,
            shared,
        })
}

/// A CEL literal, including the extremes of each type.
fn cel_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615u",
            "1u",
            "0u",
            "1.5",
            "-0.0",
            "1e308",
            "true",
            "false",
            "null",
            "\"\"",
            "'A100'",
            "b'\\xff'",
            "[]",
            "{}",
            "[1, 'a']",
            "{'k': 1}",
        ])
        .prop_map(str::to_string),
        "\\PC{0,6}".prop_map(|s| format!("{s:?}")),
        quantity_like().prop_map(|s| format!("quantity({s:?})")),
        version_like().prop_map(|s| format!("semver({s:?})")),
    ]
}

/// A well-formed CEL expression over `device`, nested a few levels: what reaches the
/// evaluator, where text made of tokens mostly stops at the parser.
fn cel_expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("device.driver".to_string()),
        Just("device.allowMultipleAllocations".to_string()),
        (
            prop::sample::select(CEL_DOMAINS),
            prop::sample::select(CEL_NAMES)
        )
            .prop_map(|(d, n)| format!("device.attributes[{d:?}].{n}")),
        (
            prop::sample::select(CEL_DOMAINS),
            prop::sample::select(CEL_NAMES)
        )
            .prop_map(|(d, n)| format!("device.capacity[{d:?}].{n}")),
        (
            prop::sample::select(CEL_DOMAINS),
            prop::sample::select(CEL_NAMES)
        )
            .prop_map(|(d, n)| format!("{n:?} in device.attributes[{d:?}]")),
        (
            prop::sample::select(CEL_DOMAINS),
            prop::sample::select(CEL_NAMES)
        )
            .prop_map(|(d, n)| format!("has(device.capacity[{d:?}].{n})")),
        Just("device.attributes".to_string()),
        cel_literal(),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        let binary = prop::sample::select(vec![
            "==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/", "%", "in",
        ]);
        let method = prop::sample::select(vec![
            "compareTo",
            "isGreaterThan",
            "isLessThan",
            "add",
            "sub",
            "contains",
            "startsWith",
            "endsWith",
            "matches",
            "size",
        ]);
        let nullary = prop::sample::select(vec![
            "asInteger",
            "asApproximateFloat",
            "isInteger",
            "sign",
            "major",
            "minor",
            "patch",
            "size",
        ]);
        let function = prop::sample::select(vec![
            "quantity",
            "isQuantity",
            "semver",
            "isSemver",
            "size",
            "int",
            "uint",
            "double",
            "string",
            "bool",
            "type",
            "dyn",
        ]);
        let macro_ = prop::sample::select(vec!["all", "exists", "exists_one", "map", "filter"]);
        prop_oneof![
            (inner.clone(), binary, inner.clone())
                .prop_map(|(a, op, b)| format!("({a}) {op} ({b})")),
            inner.clone().prop_map(|a| format!("!({a})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("({a}) ? ({b}) : ({c})")),
            (inner.clone(), method, inner.clone()).prop_map(|(a, m, b)| format!("({a}).{m}({b})")),
            (inner.clone(), nullary).prop_map(|(a, m)| format!("({a}).{m}()")),
            (function, inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            (inner.clone(), macro_, inner.clone())
                .prop_map(|(a, m, b)| format!("({a}).{m}(x, ({b}) == x)")),
            prop::collection::vec(inner, 0..3).prop_map(|v| format!("[{}]", v.join(", "))),
        ]
    })
}

/// A selector as users write them: typed comparisons of attributes and capacities joined
/// by `&&`, `||`, `!` and `?:`, so that most evaluate to an answer rather than a type error.
fn cel_selector() -> impl Strategy<Value = String> {
    let attr = |name: &'static str| {
        prop::sample::select(CEL_DOMAINS)
            .prop_map(move |d| format!("device.attributes[{d:?}].{name}"))
    };
    let comparison = prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="]);
    let leaf = prop_oneof![
        (attr("index"), comparison.clone(), any::<i64>()).prop_map(|(a, op, n)| format!("{a} {op} {n}")),
        (attr("model"), comparison, "[a-zA-Z0-9]{0,4}").prop_map(|(a, op, s)| format!("{a} {op} {s:?}")),
        (attr("model"), prop::sample::select(vec!["startsWith", "endsWith", "contains", "matches"]), "[a-zA-Z0-9.*]{0,4}")
            .prop_map(|(a, f, s)| format!("{a}.{f}({s:?})")),
        (attr("v"), prop::sample::select(vec!["isGreaterThan", "isLessThan"]), version_like())
            .prop_map(|(a, f, v)| format!("{a}.{f}(semver({v:?}))")),
        (prop::sample::select(CEL_DOMAINS), prop::sample::select(CEL_NAMES), prop::sample::select(vec!["isGreaterThan", "isLessThan"]), capacity_quantity())
            .prop_map(|(d, n, f, q)| format!("device.capacity[{d:?}].{n}.{f}(quantity({:?}))", q.to_string())),
        (prop::sample::select(CEL_DOMAINS), prop::sample::select(CEL_NAMES), capacity_quantity(), -1i64..2)
            .prop_map(|(d, n, q, c)| format!("device.capacity[{d:?}].{n}.add(quantity({:?})).compareTo(quantity(\"1Gi\")) == {c}", q.to_string())),
        (prop::sample::select(CEL_DOMAINS), prop::sample::select(CEL_NAMES))
            .prop_map(|(d, n)| format!("{n:?} in device.attributes[{d:?}]")),
        (prop::sample::select(CEL_DOMAINS), prop::sample::select(CEL_NAMES))
            .prop_map(|(d, n)| format!("has(device.capacity[{d:?}].{n})")),
        "[a-z.]{0,14}".prop_map(|d| format!("device.driver == {d:?}")),
        Just("device.allowMultipleAllocations".to_string()),
    ];
    leaf.prop_recursive(4, 16, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["&&", "||"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a}) {op} ({b})")),
            inner.clone().prop_map(|a| format!("!({a})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("({a}) ? ({b}) : ({c})")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("[{a}, {b}].exists(x, x)")),
        ]
    })
}

/// Evaluates `expression`, if it compiles, against each device: an answer or an error,
/// never a panic. Whatever compiles compiles again to the same source.
fn evaluate(expression: &str, devices: &[FuzzDevice]) -> Result<(), TestCaseError> {
    let Ok(compiled) = cel::compile(expression) else {
        return Ok(());
    };
    prop_assert_eq!(compiled.source(), expression);
    for d in devices {
        let _ = compiled.matches(&CelDevice {
            driver: &d.driver,
            attributes: &d.attributes,
            capacity: &d.capacity,
            allow_multiple_allocations: d.shared,
        });
    }
    Ok(())
}

/// Text made of CEL's tokens and the names of `device`, in any order.
fn cel_like() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec![
                "device",
                ".driver",
                ".attributes",
                ".capacity",
                ".allowMultipleAllocations",
                "[\"gpu.berth.dev\"]",
                ".model",
                ".memory",
                " == ",
                " != ",
                " < ",
                " >= ",
                " && ",
                " || ",
                "!",
                "-",
                " + ",
                " * ",
                " / ",
                " % ",
                "(",
                ")",
                "[",
                "]",
                "{",
                "}",
                ",",
                ":",
                " ? ",
                " in ",
                ".",
                "x",
                "has(",
                "quantity(",
                "semver(",
                ".compareTo(",
                ".isGreaterThan(",
                ".asInteger()",
                ".all(x, ",
                ".map(x, ",
                "size(",
                "\"",
                "'",
                "\\",
                "1",
                "1u",
                "1.5",
                "true",
                "null",
            ])
            .prop_map(str::to_string),
            cel_literal(),
            "\\PC{1,3}",
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn cel_compile_never_panics_on_arbitrary_text(input in "\\PC{0,80}") {
        let _ = cel::compile(&input);
    }

    #[test]
    fn cel_like_text_compiles_or_fails_and_evaluates_without_panic(
        input in cel_like(),
        devices in prop::collection::vec(device(), 1..3),
    ) {
        evaluate(&input, &devices)?;
    }

    #[test]
    fn cel_expressions_evaluate_against_generated_devices_without_panic(
        input in prop_oneof![cel_expression(), cel_selector()],
        devices in prop::collection::vec(device(), 1..4),
    ) {
        evaluate(&input, &devices)?;
    }
}

// ------------------------------------------------------------------ DRA objects

/// Valid DRA objects touching most of their fields, as JSON of each kind.
const DRA_SEEDS: &[(Kind, &str)] = &[
    (
        Kind::DeviceClass,
        r#"{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.berth.dev\""}}],
                     "config": [{"opaque": {"driver": "gpu.berth.dev", "parameters": {"mode": "shared"}}}],
                     "extendedResourceName": "example.com/gpu"}}"#,
    ),
    (
        Kind::ResourceSlice,
        r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpus"},
            "spec": {"driver": "gpu.berth.dev", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [
                       {"name": "gpu-0", "allowMultipleAllocations": true,
                        "attributes": {"model": {"string": "a100"}, "index": {"int": 0},
                                       "healthy": {"bool": true}, "other.dev/v": {"version": "1.2.3"}},
                        "capacity": {"memory": {"value": "80Gi",
                                     "requestPolicy": {"default": "80Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}},
                                     "cores": {"value": "100", "requestPolicy": {"validValues": ["50", "100"]}}}},
                       {"name": "gpu-1", "attributes": {"model": {"string": "t4"}}}]}}"#,
    ),
    (
        Kind::ResourceClaim,
        r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {
              "requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2,
                  "selectors": [{"cel": {"expression": "device.attributes[\"gpu.berth.dev\"].model == \"a100\""}}],
                  "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
                  "capacity": {"requests": {"memory": "35Gi"}}}},
                {"name": "any", "firstAvailable": [
                  {"name": "big", "deviceClassName": "gpu", "allocationMode": "All"},
                  {"name": "small", "deviceClassName": "gpu", "count": 1}]}],
              "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.berth.dev/model"}],
              "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.berth.dev", "parameters": {}}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.berth.dev", "pool": "n1", "device": "gpu-0",
                 "shareID": "8f3c2f4e-0b1d-4f43-9a6e-0c1b2a3d4e5f", "consumedCapacity": {"memory": "40Gi"}}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
              "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}}"#,
    ),
    (
        Kind::ResourceClaimTemplate,
        r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "half", "namespace": "default"},
            "spec": {"metadata": {"labels": {"app": "x"}},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
                       "capacity": {"requests": {"memory": "35Gi"}}}}]}}}}"#,
    ),
];

/// Field names of the DRA kinds, for inserted keys that the decoder knows.
const DRA_FIELDS: &[&str] = &[
    "name",
    "namespace",
    "driver",
    "nodeName",
    "nodeSelector",
    "allNodes",
    "pool",
    "generation",
    "resourceSliceCount",
    "devices",
    "attributes",
    "capacity",
    "value",
    "requestPolicy",
    "default",
    "validValues",
    "validRange",
    "min",
    "max",
    "step",
    "allowMultipleAllocations",
    "selectors",
    "cel",
    "expression",
    "requests",
    "exactly",
    "firstAvailable",
    "deviceClassName",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "constraints",
    "matchAttribute",
    "distinctAttribute",
    "config",
    "opaque",
    "parameters",
    "status",
    "allocation",
    "results",
    "request",
    "device",
    "reservedFor",
    "resource",
    "uid",
    "shareID",
    "consumedCapacity",
    "string",
    "int",
    "bool",
    "version",
    "spec",
    "metadata",
    "labels",
    "sharedCounters",
    "consumesCounters",
    "taints",
    "key",
    "operator",
    "effect",
    "extendedResourceName",
    "perDeviceNodeSelection",
];

/// A string for a JSON field: names, enum values, quantities, expressions, long or odd text.
fn json_string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "",
            "a",
            "gpu",
            "gpu.berth.dev",
            "gpu.berth.dev/model",
            "ExactCount",
            "All",
            "Exists",
            "Equal",
            "NoSchedule",
            "NoExecute",
            "1Gi",
            "-1",
            "10Gi",
            "0",
            "n1",
            "device.driver",
            "device.x ==",
            "1.2.3",
            "In",
            "metadata.name",
        ])
        .prop_map(str::to_string),
        "[a-z0-9.-]{60,70}",
        cel_expression(),
        "\\PC{0,12}",
    ]
}

/// A JSON value of any shape, leaning to what the DRA fields hold.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            0i64,
            1,
            -1,
            32,
            33,
            64,
            65,
            128,
            129,
            256,
            257,
            i64::MAX,
            i64::MIN
        ])
        .prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        Just(Value::from(1.5f64)),
        json_string().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(DRA_FIELDS), inner), 0..4).prop_map(
                |entries| Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect()
                )
            ),
        ]
    })
}

/// One edit of a JSON tree, at the node whose preorder number is the first field (taken
/// modulo the tree's size).
#[derive(Clone, Debug)]
enum JsonMutation {
    /// Put a value in the node's place.
    Replace(usize, serde_json::Value),
    /// Remove the node from its parent.
    Remove(usize),
    /// Add a field to an object node, or an element to an array node.
    Add(usize, &'static str, serde_json::Value),
    /// Repeat an array node's elements (past the lists' limits).
    Repeat(usize, usize),
    /// Put another string in place of a string node (a no-op on other nodes), so that the
    /// object still decodes and validation sees the value.
    String(usize, String),
    /// Put another integer in place of a number node (a no-op on other nodes).
    Number(usize, i64),
}

fn json_mutation() -> impl Strategy<Value = JsonMutation> {
    prop_oneof![
        3 => (any::<usize>(), json_value()).prop_map(|(at, v)| JsonMutation::Replace(at, v)),
        2 => any::<usize>().prop_map(JsonMutation::Remove),
        2 => (any::<usize>(), prop::sample::select(DRA_FIELDS), json_value())
            .prop_map(|(at, k, v)| JsonMutation::Add(at, k, v)),
        1 => (any::<usize>(), 1usize..300).prop_map(|(at, n)| JsonMutation::Repeat(at, n)),
        3 => (any::<usize>(), json_string())
            .prop_map(|(at, v)| JsonMutation::String(at, v)),
        2 => (any::<usize>(), prop_oneof![any::<i64>(), -2i64..300])
            .prop_map(|(at, n)| JsonMutation::Number(at, n)),
    ]
}

fn json_size(v: &serde_json::Value) -> usize {
    1 + match v {
        serde_json::Value::Array(a) => a.iter().map(json_size).sum(),
        serde_json::Value::Object(o) => o.values().map(json_size).sum(),
        _ => 0,
    }
}

/// Applies `m` to the node numbered `*at` under `v` (the root is 0); `true` once done.
fn mutate_json(v: &mut serde_json::Value, at: &mut usize, m: &JsonMutation) -> bool {
    use serde_json::Value;
    if *at == 0 {
        match m {
            JsonMutation::Replace(_, new) => *v = new.clone(),
            JsonMutation::Add(_, key, new) => match v {
                Value::Object(o) => {
                    o.insert(key.to_string(), new.clone());
                }
                Value::Array(a) => a.push(new.clone()),
                other => *other = new.clone(),
            },
            JsonMutation::Repeat(_, n) => {
                if let Value::Array(a) = v {
                    if let Some(first) = a.first().cloned() {
                        a.extend(std::iter::repeat_n(first, *n));
                    }
                }
            }
            JsonMutation::Remove(_) => *v = Value::Null,
            JsonMutation::String(_, new) => {
                if v.is_string() {
                    *v = Value::from(new.as_str());
                }
            }
            JsonMutation::Number(_, new) => {
                if v.is_number() {
                    *v = Value::from(*new);
                }
            }
        }
        return true;
    }
    *at -= 1;
    let remove = matches!(m, JsonMutation::Remove(_));
    match v {
        Value::Array(a) => {
            for i in 0..a.len() {
                if remove && *at == 0 {
                    a.remove(i);
                    return true;
                }
                if mutate_json(&mut a[i], at, m) {
                    return true;
                }
            }
        }
        Value::Object(o) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            for k in keys {
                if remove && *at == 0 {
                    o.remove(&k);
                    return true;
                }
                if mutate_json(o.get_mut(&k).expect("key"), at, m) {
                    return true;
                }
            }
        }
        _ => {}
    }
    false
}

#[test]
fn the_dra_seeds_are_valid() {
    for (kind, seed) in DRA_SEEDS {
        let object = decode::object_json(*kind, seed).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        validate::validate_object(&object).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn mutated_dra_objects_decode_and_validate_without_panic(
        seed in 0..DRA_SEEDS.len(),
        mutations in prop::collection::vec(json_mutation(), 1..5),
    ) {
        let (kind, text) = DRA_SEEDS[seed];
        let mut value: serde_json::Value = serde_json::from_str(text).expect("seed JSON");
        for m in &mutations {
            let (JsonMutation::Replace(at, ..)
            | JsonMutation::Remove(at)
            | JsonMutation::Add(at, ..)
            | JsonMutation::Repeat(at, _)
            | JsonMutation::String(at, _)
            | JsonMutation::Number(at, _)) = m;
            let mut at = at % json_size(&value);
            mutate_json(&mut value, &mut at, m);
        }
        let text = value.to_string();
        if let Ok(object) = decode::object_json(kind, &text) {
            if validate::validate_object(&object).is_ok() {
                // What validates is written and read back as the same kind.
                let again = serde_json::to_string(&object).expect("encode");
                let reread = decode::object_json(kind, &again);
                prop_assert!(reread.is_ok(), "{}: {:?}", again, reread.err());
            }
        }
    }

    #[test]
    fn arbitrary_json_never_panics_dra_decoding(value in json_value(), kind in prop::sample::select(vec![
        Kind::DeviceClass, Kind::ResourceClaim, Kind::ResourceClaimTemplate, Kind::ResourceSlice,
    ])) {
        if let Ok(object) = decode::object_json(kind, &value.to_string()) {
            let _ = validate::validate_object(&object);
        }
    }
}
