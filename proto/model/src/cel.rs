//! CEL device selectors of Dynamic Resource Allocation (`selectors[].cel.expression` of
//! DeviceClasses and ResourceClaims), compiled and evaluated with the `cel` crate the way
//! kube's `k8s.io/dynamic-resource-allocation/cel` package does.
//!
//! An expression sees one variable, `device`, with
//! - `device.driver`: the driver's name (string);
//! - `device.attributes["<domain>"].<name>`: typed attributes by fully qualified name. An
//!   attribute published without a domain (`model`) lives under the driver's name
//!   (`device.attributes["gpu.berth.dev"].model`). Ints are `int`, bools `bool`, strings
//!   `string` and versions `semver` values;
//! - `device.capacity["<domain>"].<name>`: capacities as `quantity` values;
//! - `device.allowMultipleAllocations`: whether the device can be shared.
//!
//! A domain the device has nothing under reads as an empty map (as kube's lookup does), so
//! `"model" in device.attributes["other.dev"]` is false and `has(...)` works; reading a
//! *name* the device lacks is a runtime error, as in kube.
//!
//! Beside CEL's standard functions, kube's Kubernetes library parts that DRA uses are here:
//! `quantity("1Gi")`, `isQuantity(s)`, and on quantities `compareTo`, `isGreaterThan`,
//! `isLessThan`, `add`, `sub`, `asInteger`, `asApproximateFloat`, `isInteger`, `sign`;
//! `semver("1.2.3")`, `isSemver(s)`, and on versions `compareTo`, `isGreaterThan`,
//! `isLessThan`, `major`, `minor`, `patch`. `==` compares quantities and versions by value.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::extractors::This;
use cel::objects::{Key, Map, Opaque};
use cel::{Context, Env, ExecutionError, Program, Value};

use crate::model::{DeviceAttribute, DeviceCapacity};
use crate::Quantity;

/// The name of the one variable an expression sees.
pub const DEVICE_VAR: &str = "device";

/// The fields of `device`.
const DEVICE_FIELDS: [&str; 4] = [
    "driver",
    "attributes",
    "capacity",
    "allowMultipleAllocations",
];

/// CEL's type names, which are identifiers an expression may use (`type(x) == int`).
const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Functions an expression may call: CEL's standard ones that the `cel` crate provides, and
/// the Kubernetes quantity and semver functions registered here. A test calls each.
const FUNCTIONS: [&str; 30] = [
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "quantity",
    "isQuantity",
    "semver",
    "isSemver",
    "compareTo",
    "isGreaterThan",
    "isLessThan",
    "add",
    "sub",
    "asInteger",
    "asApproximateFloat",
    "isInteger",
    "sign",
    "major",
    "minor",
    "patch",
    "has",
];

/// Why an expression does not compile: kube's `compilation failed: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("compilation failed: {message}")]
pub struct CompileError {
    /// What is wrong (a syntax error, an undeclared reference, an unknown field of `device`).
    pub message: String,
}

/// Why evaluating an expression against a device failed (a runtime error, such as reading
/// an attribute the device does not have, or a result that is not a bool).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    /// What failed, as the CEL runtime says it.
    pub message: String,
}

/// A compiled device selector.
#[derive(Debug)]
pub struct DeviceSelectorExpr {
    source: String,
    program: Program,
    /// The domains the expression indexes `device.attributes` / `device.capacity` with as
    /// string literals, filled with empty maps where a device has none (kube's default).
    attribute_domains: Vec<String>,
    capacity_domains: Vec<String>,
}

/// What an expression reads of a device.
#[derive(Clone, Copy, Debug)]
pub struct CelDevice<'a> {
    /// The driver that publishes the device; the domain of attribute and capacity names
    /// without one.
    pub driver: &'a str,
    /// Attributes by qualified name.
    pub attributes: &'a BTreeMap<String, DeviceAttribute>,
    /// Capacities by qualified name.
    pub capacity: &'a BTreeMap<String, DeviceCapacity>,
    /// Whether the device may be allocated several times.
    pub allow_multiple_allocations: bool,
}

/// Compiles a selector expression, refusing what kube's compiler refuses that can be seen
/// without types: syntax errors, identifiers other than `device` (and comprehension
/// variables), unknown functions, and fields of `device` that do not exist.
pub fn compile(expression: &str) -> Result<DeviceSelectorExpr, CompileError> {
    let program = env().compile(expression).map_err(|e| CompileError {
        message: e.to_string(),
    })?;
    let mut check = Check::default();
    check.walk(program.expression(), &mut Vec::new());
    if let Some(message) = check.error {
        return Err(CompileError { message });
    }
    Ok(DeviceSelectorExpr {
        source: expression.to_string(),
        program,
        attribute_domains: check.attribute_domains.into_iter().collect(),
        capacity_domains: check.capacity_domains.into_iter().collect(),
    })
}

impl DeviceSelectorExpr {
    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the device matches: `Ok(true)` or `Ok(false)` as the expression says, or an
    /// error when evaluation fails.
    ///
    /// An error is not a non-match. Kube's structured allocator
    /// (`k8s.io/dynamic-resource-allocation/structured`, `selectorsMatch`) stops the
    /// allocation attempt on it with `class <name>: selector #<i>: CEL runtime error: <err>`
    /// or `claim <namespace>/<name>: selector #<i>: CEL runtime error: <err>` (see
    /// [`runtime_error_message`]); the DynamicResources plugin's Filter then returns an
    /// error status, so the scheduling attempt fails with that message in the pod's
    /// FailedScheduling event and the pod is retried with back-off, rather than being
    /// reported as not fitting.
    pub fn matches(&self, device: &CelDevice<'_>) -> Result<bool, EvalError> {
        let value = device_value(device, &self.attribute_domains, &self.capacity_domains)?;
        let mut scope = root_context().new_inner_scope();
        scope.add_variable_from_value(DEVICE_VAR, value);
        match self.program.execute(&scope) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(EvalError {
                message: format!(
                    "CEL result of type {} could not be converted to bool",
                    other.type_of()
                ),
            }),
            Err(e) => Err(EvalError {
                message: e.to_string(),
            }),
        }
    }
}

/// Where a failing selector came from, for [`runtime_error_message`].
#[derive(Clone, Copy, Debug)]
pub enum SelectorSource<'a> {
    /// A DeviceClass's selector.
    Class {
        /// The class.
        name: &'a str,
    },
    /// A ResourceClaim request's selector.
    Claim {
        /// The claim's namespace.
        namespace: &'a str,
        /// The claim's name.
        name: &'a str,
    },
}

/// Kube's allocator's message for a selector that failed at runtime:
/// `class gpu: selector #0: CEL runtime error: ...` or
/// `claim default/c1: selector #1: CEL runtime error: ...` (`index` counts from 0).
pub fn runtime_error_message(source: SelectorSource<'_>, index: usize, err: &EvalError) -> String {
    match source {
        SelectorSource::Class { name } => {
            format!("class {name}: selector #{index}: CEL runtime error: {err}")
        }
        SelectorSource::Claim { namespace, name } => {
            format!("claim {namespace}/{name}: selector #{index}: CEL runtime error: {err}")
        }
    }
}

// ------------------------------------------------------------------ static checks

/// Walks the expression: the first problem found, and the literal domains indexed.
#[derive(Default)]
struct Check {
    error: Option<String>,
    attribute_domains: BTreeSet<String>,
    capacity_domains: BTreeSet<String>,
}

impl Check {
    fn fail(&mut self, message: String) {
        self.error.get_or_insert(message);
    }

    fn walk(&mut self, e: &IdedExpr, scope: &mut Vec<String>) {
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => {}
            Expr::Ident(name) => {
                if name != DEVICE_VAR
                    && !TYPE_NAMES.contains(&name.as_str())
                    && !scope.iter().any(|v| v == name)
                {
                    self.fail(format!("undeclared reference to '{name}'"));
                }
            }
            Expr::Select(select) => {
                if matches!(&select.operand.expr, Expr::Ident(n) if n == DEVICE_VAR && !scope.iter().any(|v| v == n))
                    && !DEVICE_FIELDS.contains(&select.field.as_str())
                {
                    self.fail(format!("undefined field '{}'", select.field));
                }
                self.walk(&select.operand, scope);
            }
            Expr::Call(call) => {
                let is_operator = call.func_name.starts_with(['_', '!', '-', '@']);
                if !is_operator && !FUNCTIONS.contains(&call.func_name.as_str()) {
                    self.fail(format!("undeclared reference to '{}'", call.func_name));
                }
                if call.func_name == operators::INDEX && call.args.len() == 2 {
                    self.note_domain(&call.args[0], &call.args[1], scope);
                }
                if let Some(target) = &call.target {
                    self.walk(target, scope);
                }
                for arg in &call.args {
                    self.walk(arg, scope);
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range, scope);
                self.walk(&c.accu_init, scope);
                let pushed = 2 + usize::from(c.iter_var2.is_some());
                scope.push(c.iter_var.clone());
                scope.push(c.accu_var.clone());
                if let Some(v) = &c.iter_var2 {
                    scope.push(v.clone());
                }
                self.walk(&c.loop_cond, scope);
                self.walk(&c.loop_step, scope);
                self.walk(&c.result, scope);
                scope.truncate(scope.len() - pushed);
            }
            Expr::List(list) => {
                for el in &list.elements {
                    self.walk(el, scope);
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        self.walk(&m.key, scope);
                        self.walk(&m.value, scope);
                    }
                }
            }
            Expr::Struct(s) => {
                self.fail(format!("undeclared reference to '{}'", s.type_name));
            }
        }
    }

    /// Records `device.attributes["dom"]` / `device.capacity["dom"]` with a literal domain.
    fn note_domain(&mut self, target: &IdedExpr, index: &IdedExpr, scope: &[String]) {
        let Expr::Select(select) = &target.expr else {
            return;
        };
        let Expr::Ident(root) = &select.operand.expr else {
            return;
        };
        if root != DEVICE_VAR || scope.iter().any(|v| v == root) {
            return;
        }
        let Expr::Literal(LiteralValue::String(domain)) = &index.expr else {
            return;
        };
        let domain = domain.inner().to_string();
        match select.field.as_str() {
            "attributes" => {
                self.attribute_domains.insert(domain);
            }
            "capacity" => {
                self.capacity_domains.insert(domain);
            }
            _ => {}
        }
    }
}

// ------------------------------------------------------------------ the environment

fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib()))
}

/// The root context: the standard library and the Kubernetes functions. Each evaluation
/// binds `device` in a child scope of it.
fn root_context() -> &'static Context<'static, 'static> {
    static ROOT: OnceLock<Context<'static, 'static>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let mut ctx = Context::with_env(Arc::clone(env()));
        register(&mut ctx).expect("the Kubernetes functions do not clash with CEL's own");
        ctx
    })
}

/// A quantity as a CEL value (kube's `kubernetes.Quantity`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct CelQuantity(Quantity);

impl Opaque for CelQuantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// A semantic version as a CEL value (kube's `kubernetes.Semver`). Equal when of equal
/// precedence: build metadata is ignored, as semver 2.0.0 says.
#[derive(Clone, Debug)]
struct CelSemver(semver::Version);

impl PartialEq for CelSemver {
    fn eq(&self, other: &Self) -> bool {
        self.0.cmp_precedence(&other.0).is_eq()
    }
}

impl Eq for CelSemver {}

impl Opaque for CelSemver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

fn quantity_value(q: Quantity) -> Value {
    Value::Opaque(Arc::new(CelQuantity(q)))
}

fn fn_error(function: &str, message: impl std::fmt::Display) -> ExecutionError {
    ExecutionError::function_error(function, message.to_string())
}

fn as_quantity(function: &str, v: &Value) -> Result<Quantity, ExecutionError> {
    if let Value::Opaque(o) = v {
        if let Some(q) = o.downcast_ref::<CelQuantity>() {
            return Ok(q.0);
        }
    }
    Err(fn_error(
        function,
        format!("expected a quantity, got {v:?}"),
    ))
}

fn as_semver(function: &str, v: &Value) -> Result<semver::Version, ExecutionError> {
    if let Value::Opaque(o) = v {
        if let Some(s) = o.downcast_ref::<CelSemver>() {
            return Ok(s.0.clone());
        }
    }
    Err(fn_error(function, format!("expected a semver, got {v:?}")))
}

/// Orders two quantities or two versions (what `compareTo` and friends share).
fn compare(
    function: &str,
    this: &Value,
    other: &Value,
) -> Result<std::cmp::Ordering, ExecutionError> {
    if let Value::Opaque(o) = this {
        if o.downcast_ref::<CelQuantity>().is_some() {
            return Ok(as_quantity(function, this)?.cmp(&as_quantity(function, other)?));
        }
        if o.downcast_ref::<CelSemver>().is_some() {
            return Ok(as_semver(function, this)?.cmp_precedence(&as_semver(function, other)?));
        }
    }
    Err(fn_error(
        function,
        format!("expected a quantity or a semver, got {this:?}"),
    ))
}

/// A quantity or an int argument of `add` / `sub`.
fn quantity_operand(function: &str, v: &Value) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Int(i) => Quantity::parse(&i.to_string()).map_err(|e| fn_error(function, e)),
        other => as_quantity(function, other),
    }
}

fn register(ctx: &mut Context<'static, 'static>) -> Result<(), cel::DeclarationError> {
    ctx.add_function(
        "quantity",
        |s: Arc<String>| -> Result<Value, ExecutionError> {
            Quantity::parse(&s)
                .map(quantity_value)
                .map_err(|e| fn_error("quantity", e))
        },
    )?;
    ctx.add_function("isQuantity", |s: Arc<String>| Quantity::parse(&s).is_ok())?;
    ctx.add_function(
        "semver",
        |s: Arc<String>| -> Result<Value, ExecutionError> {
            semver::Version::parse(&s)
                .map(|v| Value::Opaque(Arc::new(CelSemver(v))))
                .map_err(|e| fn_error("semver", e))
        },
    )?;
    ctx.add_function("isSemver", |s: Arc<String>| {
        semver::Version::parse(&s).is_ok()
    })?;
    ctx.add_function(
        "compareTo",
        |This(this): This<Value>, other: Value| -> Result<i64, ExecutionError> {
            Ok(match compare("compareTo", &this, &other)? {
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => 1,
            })
        },
    )?;
    ctx.add_function(
        "isGreaterThan",
        |This(this): This<Value>, other: Value| -> Result<bool, ExecutionError> {
            Ok(compare("isGreaterThan", &this, &other)?.is_gt())
        },
    )?;
    ctx.add_function(
        "isLessThan",
        |This(this): This<Value>, other: Value| -> Result<bool, ExecutionError> {
            Ok(compare("isLessThan", &this, &other)?.is_lt())
        },
    )?;
    ctx.add_function(
        "add",
        |This(this): This<Value>, other: Value| -> Result<Value, ExecutionError> {
            let sum = as_quantity("add", &this)?
                .checked_add(quantity_operand("add", &other)?)
                .ok_or_else(|| fn_error("add", "quantity overflow"))?;
            Ok(quantity_value(sum))
        },
    )?;
    ctx.add_function(
        "sub",
        |This(this): This<Value>, other: Value| -> Result<Value, ExecutionError> {
            let diff = as_quantity("sub", &this)?
                .checked_sub(quantity_operand("sub", &other)?)
                .ok_or_else(|| fn_error("sub", "quantity overflow"))?;
            Ok(quantity_value(diff))
        },
    )?;
    ctx.add_function(
        "asInteger",
        |This(this): This<Value>| -> Result<i64, ExecutionError> {
            let q = as_quantity("asInteger", &this)?;
            if !q.is_integer() {
                return Err(fn_error(
                    "asInteger",
                    "cannot convert value to integer: value is not an integer",
                ));
            }
            q.as_i64()
                .ok_or_else(|| fn_error("asInteger", "cannot convert value to integer: overflow"))
        },
    )?;
    ctx.add_function(
        "asApproximateFloat",
        |This(this): This<Value>| -> Result<f64, ExecutionError> {
            Ok(as_quantity("asApproximateFloat", &this)?.as_f64())
        },
    )?;
    ctx.add_function(
        "isInteger",
        |This(this): This<Value>| -> Result<bool, ExecutionError> {
            let q = as_quantity("isInteger", &this)?;
            Ok(q.is_integer() && q.as_i64().is_some())
        },
    )?;
    ctx.add_function(
        "sign",
        |This(this): This<Value>| -> Result<i64, ExecutionError> {
            Ok(as_quantity("sign", &this)?.sign())
        },
    )?;
    ctx.add_function(
        "major",
        |This(this): This<Value>| -> Result<i64, ExecutionError> {
            Ok(as_semver("major", &this)?.major as i64)
        },
    )?;
    ctx.add_function(
        "minor",
        |This(this): This<Value>| -> Result<i64, ExecutionError> {
            Ok(as_semver("minor", &this)?.minor as i64)
        },
    )?;
    ctx.add_function(
        "patch",
        |This(this): This<Value>| -> Result<i64, ExecutionError> {
            Ok(as_semver("patch", &this)?.patch as i64)
        },
    )?;
    Ok(())
}

// ------------------------------------------------------------------ the device variable

/// Splits a qualified name into domain and name; a name without domain is the driver's.
fn split_qualified<'a>(driver: &'a str, name: &'a str) -> (&'a str, &'a str) {
    match name.split_once('/') {
        Some((domain, id)) => (domain, id),
        None => (driver, name),
    }
}

fn attribute_value(attr: &DeviceAttribute) -> Result<Value, EvalError> {
    if let Some(v) = attr.int {
        return Ok(Value::Int(v));
    }
    if let Some(v) = attr.bool {
        return Ok(Value::Bool(v));
    }
    if let Some(v) = &attr.string {
        return Ok(Value::String(Arc::new(v.clone())));
    }
    if let Some(v) = &attr.version {
        return semver::Version::parse(v)
            .map(|v| Value::Opaque(Arc::new(CelSemver(v))))
            .map_err(|e| EvalError {
                message: format!("parse semantic version {v:?}: {e}"),
            });
    }
    Err(EvalError {
        message: "attribute has no value".into(),
    })
}

fn nested_map(
    entries: impl Iterator<Item = Result<(String, String, Value), EvalError>>,
    default_domains: &[String],
) -> Result<Value, EvalError> {
    let mut domains: HashMap<String, HashMap<Key, Value>> = default_domains
        .iter()
        .map(|d| (d.clone(), HashMap::new()))
        .collect();
    for entry in entries {
        let (domain, name, value) = entry?;
        domains
            .entry(domain)
            .or_default()
            .insert(Key::String(Arc::new(name)), value);
    }
    let map: HashMap<Key, Value> = domains
        .into_iter()
        .map(|(d, inner)| {
            (
                Key::String(Arc::new(d)),
                Value::Map(Map {
                    map: Arc::new(inner),
                }),
            )
        })
        .collect();
    Ok(Value::Map(Map { map: Arc::new(map) }))
}

fn device_value(
    device: &CelDevice<'_>,
    attribute_domains: &[String],
    capacity_domains: &[String],
) -> Result<Value, EvalError> {
    let attributes = nested_map(
        device.attributes.iter().map(|(name, attr)| {
            let (domain, id) = split_qualified(device.driver, name);
            Ok((domain.to_string(), id.to_string(), attribute_value(attr)?))
        }),
        attribute_domains,
    )?;
    let capacity = nested_map(
        device.capacity.iter().map(|(name, cap)| {
            let (domain, id) = split_qualified(device.driver, name);
            Ok((
                domain.to_string(),
                id.to_string(),
                quantity_value(cap.value),
            ))
        }),
        capacity_domains,
    )?;
    let fields: HashMap<Key, Value> = [
        ("driver", Value::String(Arc::new(device.driver.to_string()))),
        ("attributes", attributes),
        ("capacity", capacity),
        (
            "allowMultipleAllocations",
            Value::Bool(device.allow_multiple_allocations),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (Key::String(Arc::new(k.to_string())), v))
    .collect();
    Ok(Value::Map(Map {
        map: Arc::new(fields),
    }))
}

#[cfg(test)]
mod tests;
