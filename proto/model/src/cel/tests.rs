//! Tests of the DRA CEL selectors: what compiles, what a device matches, runtime errors.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).expect("test quantity")
}

struct Fixture {
    attributes: BTreeMap<String, DeviceAttribute>,
    capacity: BTreeMap<String, DeviceCapacity>,
}

fn gpu() -> Fixture {
    let attributes = [
        ("model", DeviceAttribute::string("A100")),
        ("index", DeviceAttribute::int(3)),
        ("healthy", DeviceAttribute::bool(true)),
        ("driverVersion", DeviceAttribute::version("1.2.3")),
        ("pci.dev/vendor", DeviceAttribute::string("nvidia")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let capacity = [
        ("memory", DeviceCapacity::new(q("40Gi"))),
        ("cores", DeviceCapacity::new(q("1000"))),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Fixture {
        attributes,
        capacity,
    }
}

fn eval(expr: &str, f: &Fixture) -> Result<bool, EvalError> {
    let compiled = compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    compiled.matches(&CelDevice {
        driver: "gpu.berth.dev",
        attributes: &f.attributes,
        capacity: &f.capacity,
        allow_multiple_allocations: true,
    })
}

#[test]
fn selectors_read_driver_attributes_and_capacity() {
    let cases: &[(&str, bool)] = &[
        (r#"device.driver == "gpu.berth.dev""#, true),
        (r#"device.driver == "other.dev""#, false),
        (
            r#"device.attributes["gpu.berth.dev"].model == "A100""#,
            true,
        ),
        (
            r#"device.attributes["gpu.berth.dev"].model.startsWith("H")"#,
            false,
        ),
        (r#"device.attributes["gpu.berth.dev"].index >= 3"#, true),
        (r#"device.attributes["gpu.berth.dev"].healthy"#, true),
        (r#"device.attributes["pci.dev"].vendor == "nvidia""#, true),
        (r#""model" in device.attributes["gpu.berth.dev"]"#, true),
        // A domain the device has nothing under is an empty map, as in kube.
        (r#""model" in device.attributes["other.dev"]"#, false),
        (r#"has(device.attributes["other.dev"].model)"#, false),
        (
            r#"device.attributes["gpu.berth.dev"].driverVersion.isGreaterThan(semver("1.2.0"))"#,
            true,
        ),
        (
            r#"device.attributes["gpu.berth.dev"].driverVersion.isLessThan(semver("1.10.0"))"#,
            true,
        ),
        (
            r#"device.attributes["gpu.berth.dev"].driverVersion == semver("1.2.3+build")"#,
            true,
        ),
        (
            r#"device.attributes["gpu.berth.dev"].driverVersion.compareTo(semver("2.0.0")) < 0"#,
            true,
        ),
        (
            r#"device.attributes["gpu.berth.dev"].driverVersion.major() == 1"#,
            true,
        ),
        (r#"semver("1.0.0-alpha").isLessThan(semver("1.0.0"))"#, true),
        (
            r#"device.capacity["gpu.berth.dev"].memory.compareTo(quantity("40Gi")) == 0"#,
            true,
        ),
        (
            r#"device.capacity["gpu.berth.dev"].memory.isGreaterThan(quantity("16Gi"))"#,
            true,
        ),
        (
            r#"device.capacity["gpu.berth.dev"].memory.isLessThan(quantity("16Gi"))"#,
            false,
        ),
        (
            r#"device.capacity["gpu.berth.dev"].memory == quantity("40960Mi")"#,
            true,
        ),
        (
            r#"device.capacity["gpu.berth.dev"].cores.asInteger() == 1000"#,
            true,
        ),
        (
            r#"device.capacity["gpu.berth.dev"].cores.add(24).isGreaterThan(quantity("1k"))"#,
            true,
        ),
        (
            r#"device.capacity["gpu.berth.dev"].cores.sub(quantity("1k")).sign() == 0"#,
            true,
        ),
        (r#"quantity("500m").isInteger()"#, false),
        (r#"quantity("1.5").asApproximateFloat() == 1.5"#, true),
        (r#"isQuantity("1Gi") && !isQuantity("1 Gi")"#, true),
        (r#"isSemver("1.2.3") && !isSemver("v1")"#, true),
        (r#"device.allowMultipleAllocations"#, true),
        (
            r#"device.attributes["gpu.berth.dev"].exists(k, k == "model")"#,
            true,
        ),
        (r#"size(device.attributes["gpu.berth.dev"]) == 4"#, true),
        (
            r#"device.attributes["gpu.berth.dev"].model.matches("^A[0-9]+$")"#,
            true,
        ),
        (
            r#"string(device.attributes["gpu.berth.dev"].index) == "3""#,
            true,
        ),
    ];
    let f = gpu();
    for (expr, want) in cases {
        assert_eq!(eval(expr, &f), Ok(*want), "{expr}");
    }
}

#[test]
fn runtime_errors_are_errors_not_non_matches() {
    let f = gpu();
    let cases: &[(&str, &str)] = &[
        (
            r#"device.attributes["gpu.berth.dev"].memory == 1"#,
            "memory",
        ),
        (r#"device.attributes["other.dev"].model == "A100""#, "model"),
        (
            r#"device.attributes["gpu.berth.dev"].model"#,
            "could not be converted to bool",
        ),
        (r#"quantity("lots").isZero()"#, ""),
        (r#"quantity("lots") == quantity("1")"#, "quantity"),
        (
            r#"device.attributes["gpu.berth.dev"].model.isGreaterThan(semver("1.0.0"))"#,
            "isGreaterThan",
        ),
        (
            r#"quantity("1").compareTo(semver("1.0.0")) == 0"#,
            "compareTo",
        ),
    ];
    for (expr, needle) in cases {
        match compile(expr) {
            Ok(compiled) => {
                let got = compiled.matches(&CelDevice {
                    driver: "gpu.berth.dev",
                    attributes: &f.attributes,
                    capacity: &f.capacity,
                    allow_multiple_allocations: false,
                });
                let err = got.expect_err(expr);
                assert!(err.message.contains(needle), "{expr}: {err}");
            }
            // `isZero` is not one of the functions: refused when compiling.
            Err(e) => assert!(needle.is_empty(), "{expr}: {e}"),
        }
    }
}

#[test]
fn compile_refuses_what_kube_refuses() {
    let cases: &[(&str, &str)] = &[
        ("device.driver ==", "compilation failed"),
        ("foo == 1", "undeclared reference to 'foo'"),
        ("device.drivr == \"x\"", "undefined field 'drivr'"),
        (
            "frobnicate(device.driver)",
            "undeclared reference to 'frobnicate'",
        ),
        ("Foo{a: 1}", "undeclared reference to 'Foo'"),
    ];
    for (expr, needle) in cases {
        let err = compile(expr).expect_err(expr);
        assert!(
            err.to_string().starts_with("compilation failed: "),
            "{expr}: {err}"
        );
        assert!(err.to_string().contains(needle), "{expr}: {err}");
    }
    // Comprehension variables are in scope inside their macro only.
    assert!(compile(r#"device.attributes["a.dev"].all(x, x != "")"#).is_ok());
    assert!(compile(r#"device.attributes["a.dev"].all(x, x != "") && x == "a""#).is_err());
}

#[test]
fn every_allowed_function_is_one_the_runtime_has() {
    let f = gpu();
    // One call of each name in FUNCTIONS, so that the compile-time list cannot name a
    // function the evaluator lacks.
    let calls = [
        r#"size("ab") == 2"#,
        r#""abc".contains("b")"#,
        r#""abc".startsWith("a")"#,
        r#""abc".endsWith("c")"#,
        r#""abc".matches("b")"#,
        r#"int("3") == 3"#,
        r#"uint(3) == 3u"#,
        r#"double(1) == 1.0"#,
        r#"string(1) == "1""#,
        r#"bytes("a") == b"a""#,
        r#"bool("true")"#,
        r#"type(1) == int"#,
        r#"dyn(1) == 1"#,
        r#"quantity("1") == quantity("1")"#,
        r#"isQuantity("1")"#,
        r#"semver("1.0.0") == semver("1.0.0")"#,
        r#"isSemver("1.0.0")"#,
        r#"quantity("1").compareTo(quantity("1")) == 0"#,
        r#"quantity("2").isGreaterThan(quantity("1"))"#,
        r#"quantity("1").isLessThan(quantity("2"))"#,
        r#"quantity("1").add(quantity("1")) == quantity("2")"#,
        r#"quantity("2").sub(1) == quantity("1")"#,
        r#"quantity("2").asInteger() == 2"#,
        r#"quantity("2").asApproximateFloat() == 2.0"#,
        r#"quantity("2").isInteger()"#,
        r#"quantity("-2").sign() == -1"#,
        r#"semver("1.2.3").major() == 1"#,
        r#"semver("1.2.3").minor() == 2"#,
        r#"semver("1.2.3").patch() == 3"#,
        r#"has(device.driver)"#,
    ];
    assert_eq!(
        calls.len(),
        FUNCTIONS.len(),
        "one call per allowed function"
    );
    for (name, call) in FUNCTIONS.iter().zip(calls) {
        assert!(call.contains(name), "{call} calls {name}");
        assert_eq!(eval(call, &f), Ok(true), "{call}");
    }
}

#[test]
fn runtime_error_messages_name_the_class_or_claim_as_kube_does() {
    let err = EvalError {
        message: "No such key: model".into(),
    };
    assert_eq!(
        runtime_error_message(SelectorSource::Class { name: "gpu" }, 0, &err),
        "class gpu: selector #0: CEL runtime error: No such key: model"
    );
    assert_eq!(
        runtime_error_message(
            SelectorSource::Claim {
                namespace: "default",
                name: "c1"
            },
            2,
            &err
        ),
        "claim default/c1: selector #2: CEL runtime error: No such key: model"
    );
}

proptest! {
    #[test]
    fn quantity_comparisons_agree_with_quantity_order(a in -1_000_000i64..1_000_000, b in -1_000_000i64..1_000_000) {
        let f = gpu();
        let expr = format!(r#"quantity("{a}m").compareTo(quantity("{b}m")) == {}"#, match a.cmp(&b) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        });
        prop_assert_eq!(eval(&expr, &f), Ok(true));
    }

    #[test]
    fn semver_order_is_precedence(a in (0u64..20, 0u64..20, 0u64..20), b in (0u64..20, 0u64..20, 0u64..20)) {
        let f = gpu();
        let expr = format!(
            r#"semver("{}.{}.{}").isLessThan(semver("{}.{}.{}"))"#,
            a.0, a.1, a.2, b.0, b.1, b.2
        );
        prop_assert_eq!(eval(&expr, &f), Ok(a < b));
    }

    #[test]
    fn compile_never_panics(s in "\\PC{0,40}") {
        let _ = compile(&s);
    }

    #[test]
    fn int_attributes_compare_as_ints(v in any::<i64>(), w in any::<i64>()) {
        let mut f = gpu();
        f.attributes.insert("index".into(), DeviceAttribute::int(v));
        let expr = format!(r#"device.attributes["gpu.berth.dev"].index < {w}"#);
        // i64::MIN as a literal is out of range for CEL's unary minus: skip it.
        prop_assume!(w != i64::MIN);
        prop_assert_eq!(eval(&expr, &f), Ok(v < w));
    }
}
