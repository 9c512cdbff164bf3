//! `python/registry.py` (emitter `python`, opt-in): pydantic v2 models of every op's arguments,
//! the `Op` literal type, the op tables, and a typed client that checks a call the way the
//! runtime's `exec` does (the same field errors at the same pointers) before a transport runs
//! it. One module; it imports nothing but pydantic and the standard library.
//!
//! Models are strict and validated from JSON (`model_validate_json`): `"5"` is not an integer
//! and `1` is not `true`, as in the runtime. Type names are the Rust and TypeScript ones
//! (`OntoTaskListArgs`); a nested object is `{Parent}{Property}`, an array's object items
//! `{Parent}{Property}Item`. Catalog text reaches the file only inside JSON string literals,
//! which are valid Python strings; argument names that are not safe identifiers get one and
//! keep theirs as the alias.

use super::FileMap;
use crate::model::registry::{OpRecord, Registry};
use heck::{ToSnakeCase, ToUpperCamelCase};
use serde_json::Value;
use std::collections::BTreeSet;

pub const FILE: &str = "python/registry.py";

/// A JSON string literal: also a valid Python string for any text.
fn lit(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// Names a field may not take as is: keywords, and what pydantic's BaseModel already has.
const RESERVED: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "match",
    "case",
    "type",
    "copy",
    "dict",
    "json",
    "schema",
    "schema_json",
    "construct",
    "validate",
    "fields",
    "parse_obj",
    "parse_raw",
    "parse_file",
    "from_orm",
    "update_forward_refs",
    "model_config",
    "model_fields",
];

fn is_ident(name: &str) -> bool {
    let mut c = name.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// A Python attribute for an argument name, unique in its model.
fn attribute(name: &str, taken: &mut BTreeSet<String>) -> String {
    let base = if is_ident(name) && !RESERVED.contains(&name) && !name.starts_with("model_") {
        name.to_string()
    } else {
        let snake: String = name
            .to_snake_case()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let snake = snake.trim_matches('_').to_string();
        if snake.is_empty() || snake.starts_with(|c: char| c.is_ascii_digit()) {
            format!("arg_{snake}")
        } else {
            format!("{snake}_")
        }
    };
    let mut candidate = base.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{base}{n}");
        n += 1;
    }
    candidate
}

/// Generates the classes of one op, nested models before the models that use them.
struct Py<'a> {
    stem: &'a str,
    root: &'a Value,
    classes: Vec<String>,
    names: BTreeSet<String>,
}

impl Py<'_> {
    fn class_name(&mut self, wanted: String) -> String {
        let mut name = wanted.clone();
        let mut n = 2;
        while !self.names.insert(name.clone()) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        name
    }

    fn def(&self, r: &str) -> Option<(Value, String)> {
        for prefix in ["#/$defs/", "#/definitions/"] {
            if let Some(name) = r.strip_prefix(prefix) {
                let key = &prefix[2..prefix.len() - 1];
                return self.root.get(key).and_then(|d| d.get(name)).map(|d| {
                    (
                        d.clone(),
                        format!("{}{}", self.stem, name.to_upper_camel_case()),
                    )
                });
            }
        }
        None
    }

    /// The annotation of a schema; `hint` names a nested model.
    fn ty(&mut self, s: &Value, hint: &str, depth: usize) -> String {
        let Some(obj) = s.as_object() else {
            return if s == &Value::Bool(false) {
                "Annotated[Any, AfterValidator(_never)]".into()
            } else {
                "Any".into()
            };
        };
        if depth > 24 {
            return "Any".into();
        }
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            return match self.def(r) {
                // Object definitions are models of their own (a recursive one refers to itself).
                Some((d, name)) if d.get("properties").is_some() => {
                    if !self.names.contains(&name) {
                        self.names.insert(name.clone());
                        let class = self.model(&d, &name, depth + 1);
                        self.classes.push(class);
                    }
                    name
                }
                Some((d, name)) => self.ty(&d, &name, depth + 1),
                None => "Any".into(),
            };
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            return literal(values);
        }
        if let Some(c) = obj.get("const") {
            return literal(std::slice::from_ref(c));
        }
        for k in ["oneOf", "anyOf"] {
            if let Some(items) = obj.get(k).and_then(Value::as_array) {
                let alts: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.ty(item, &format!("{hint}{}", i + 1), depth + 1))
                    .collect();
                return union(alts);
            }
        }
        if let Some(items) = obj.get("allOf").and_then(Value::as_array) {
            if items.len() == 1 {
                return self.ty(&items[0], hint, depth + 1);
            }
            return "Any".into();
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if obj.contains_key("properties") => vec!["object"],
            _ => return "Any".into(),
        };
        let alts: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "string" => string(obj),
                "integer" => number(obj, "int"),
                "number" => number(obj, "float"),
                "boolean" => "bool".into(),
                "null" => "None".into(),
                "array" => {
                    let item = match obj.get("items") {
                        Some(i @ (Value::Object(_) | Value::Bool(_))) => {
                            self.ty(i, &format!("{hint}Item"), depth + 1)
                        }
                        _ => "Any".into(),
                    };
                    let mut constraints = Vec::new();
                    if let Some(n) = obj.get("minItems").and_then(Value::as_u64) {
                        constraints.push(format!("min_length={n}"));
                    }
                    if let Some(n) = obj.get("maxItems").and_then(Value::as_u64) {
                        constraints.push(format!("max_length={n}"));
                    }
                    let mut extra = Vec::new();
                    if !constraints.is_empty() {
                        extra.push(format!("Field({})", constraints.join(", ")));
                    }
                    if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
                        extra.push("AfterValidator(_unique)".into());
                    }
                    annotated(format!("list[{item}]"), extra)
                }
                "object" => {
                    if obj.get("properties").is_some() {
                        let name = self.class_name(hint.to_string());
                        let class = self.model(s, &name, depth + 1);
                        self.classes.push(class);
                        name
                    } else {
                        match obj.get("additionalProperties") {
                            Some(extra @ Value::Object(_)) => {
                                format!(
                                    "dict[str, {}]",
                                    self.ty(extra, &format!("{hint}Value"), depth + 1)
                                )
                            }
                            _ => "dict[str, Any]".into(),
                        }
                    }
                }
                _ => "Any".into(),
            })
            .collect();
        union(alts)
    }

    /// A model class for an object schema with properties.
    fn model(&mut self, s: &Value, name: &str, depth: usize) -> String {
        let required: Vec<&str> = crate::model::schema::required(s);
        let extra = match s.get("additionalProperties") {
            Some(Value::Bool(false)) => "forbid",
            _ => "allow",
        };
        let mut body = format!(
            "    model_config = ConfigDict(strict=True, extra={}, populate_by_name=False, serialize_by_alias=True)\n",
            lit(extra)
        );
        if let Some(extra @ Value::Object(_)) = s.get("additionalProperties") {
            let t = self.ty(extra, &format!("{name}Value"), depth + 1);
            body.push_str(&format!("    __pydantic_extra__: dict[str, {t}]\n"));
        }
        let mut taken = BTreeSet::new();
        for (prop, sub) in s
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let attr = attribute(prop, &mut taken);
            let t = self.ty(
                sub,
                &format!("{name}{}", prop.to_upper_camel_case()),
                depth + 1,
            );
            let mut field = Vec::new();
            if attr != *prop {
                field.push(format!("alias={}", lit(prop)));
            }
            if let Some(d) = sub.get("description").and_then(Value::as_str) {
                field.push(format!("description={}", lit(d)));
            }
            if required.contains(&prop.as_str()) {
                let field = if field.is_empty() {
                    String::new()
                } else {
                    format!(" = Field({})", field.join(", "))
                };
                body.push_str(&format!("    {attr}: {t}{field}\n"));
            } else {
                // Absent is fine; an explicit null only where the schema allows it.
                let nullable = allows_null(sub);
                let annotation = if nullable {
                    format!("Optional[{t}]")
                } else {
                    format!("Annotated[Optional[{t}], BeforeValidator(_not_null)]")
                };
                field.insert(0, "default=None".into());
                body.push_str(&format!(
                    "    {attr}: {annotation} = Field({})\n",
                    field.join(", ")
                ));
            }
        }
        for missing in required.iter().filter(|r| {
            !s.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(**r))
        }) {
            let attr = attribute(missing, &mut taken);
            body.push_str(&format!(
                "    {attr}: Any = Field(alias={})\n",
                lit(missing)
            ));
        }
        format!("class {name}(BaseModel):\n{body}\n\n")
    }
}

/// Whether a schema accepts `null` (then an explicit null is a value, not a mistake).
fn allows_null(s: &Value) -> bool {
    let listed = |key: &str| {
        s.get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v.is_null()))
    };
    s.get("type") == Some(&Value::String("null".into()))
        || s.get("type")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|t| t == "null"))
        || listed("enum")
        || s.get("const") == Some(&Value::Null)
        || ["anyOf", "oneOf"].iter().any(|k| {
            s.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(allows_null))
        })
        || !s.is_object() && s != &Value::Bool(false)
        || s.as_object().is_some_and(|o| {
            !o.contains_key("type")
                && !o.contains_key("properties")
                && !o.contains_key("$ref")
                && !o.contains_key("enum")
                && !o.contains_key("const")
                && !["anyOf", "oneOf", "allOf"]
                    .iter()
                    .any(|k| o.contains_key(*k))
        })
}

fn annotated(base: String, extra: Vec<String>) -> String {
    if extra.is_empty() {
        base
    } else {
        format!("Annotated[{base}, {}]", extra.join(", "))
    }
}

fn union(mut alts: Vec<String>) -> String {
    alts.dedup();
    match alts.len() {
        0 => "Annotated[Any, AfterValidator(_never)]".into(),
        1 => alts.remove(0),
        _ => format!("Union[{}]", alts.join(", ")),
    }
}

/// `enum` / `const` values: a `Literal` of strings, integers, booleans and None; anything else
/// compared as JSON.
fn literal(values: &[Value]) -> String {
    let simple = values.iter().all(|v| {
        v.is_string()
            || v.is_boolean()
            || v.is_null()
            || v.as_i64().is_some()
            || v.as_u64().is_some()
    });
    if simple && !values.is_empty() {
        let parts: Vec<String> = values
            .iter()
            .map(|v| match v {
                Value::String(s) => lit(s),
                Value::Bool(true) => "True".into(),
                Value::Bool(false) => "False".into(),
                Value::Null => "None".into(),
                other => other.to_string(),
            })
            .collect();
        // Python's True equals 1: a Literal of integers must not take a boolean.
        let ints = values.iter().any(|v| v.is_number());
        let bools = values.iter().any(Value::is_boolean);
        if ints && !bools {
            return format!(
                "Annotated[Literal[{}], BeforeValidator(_not_bool)]",
                parts.join(", ")
            );
        }
        return format!("Literal[{}]", parts.join(", "));
    }
    let json = serde_json::to_string(&Value::Array(values.to_vec())).unwrap_or_default();
    format!("Annotated[Any, AfterValidator(_one_of({}))]", lit(&json))
}

fn string(obj: &serde_json::Map<String, Value>) -> String {
    let mut constraints = Vec::new();
    if let Some(n) = obj.get("minLength").and_then(Value::as_u64) {
        constraints.push(format!("min_length={n}"));
    }
    if let Some(n) = obj.get("maxLength").and_then(Value::as_u64) {
        constraints.push(format!("max_length={n}"));
    }
    let mut extra = Vec::new();
    if !constraints.is_empty() {
        extra.push(format!("Field({})", constraints.join(", ")));
    }
    if let Some(p) = obj.get("pattern").and_then(Value::as_str) {
        extra.push(format!("AfterValidator(_pattern({}))", lit(p)));
    }
    annotated("str".into(), extra)
}

fn number(obj: &serde_json::Map<String, Value>, base: &str) -> String {
    let mut constraints = Vec::new();
    for (key, arg) in [
        ("minimum", "ge"),
        ("maximum", "le"),
        ("exclusiveMinimum", "gt"),
        ("exclusiveMaximum", "lt"),
        ("multipleOf", "multiple_of"),
    ] {
        if let Some(n) = obj.get(key).filter(|v| v.is_number()) {
            constraints.push(format!("{arg}={n}"));
        }
    }
    if constraints.is_empty() {
        base.into()
    } else {
        format!("Annotated[{base}, Field({})]", constraints.join(", "))
    }
}

/// The op's model and the classes it needs; an op without declared properties gets an open
/// (or closed) model with no fields.
fn op_models(r: &OpRecord, stem: &str) -> String {
    let mut py = Py {
        stem,
        root: &r.parameters_schema,
        classes: Vec::new(),
        names: BTreeSet::new(),
    };
    let name = format!("{stem}Args");
    py.names.insert(name.clone());
    let schema = if r.parameters_schema.get("properties").is_some() {
        r.parameters_schema.clone()
    } else {
        let mut s = r.parameters_schema.clone();
        if let Value::Object(o) = &mut s {
            o.insert("properties".into(), Value::Object(Default::default()));
        }
        s
    };
    let top = py.model(&schema, &name, 0);
    let mut out: String = py.classes.concat();
    out.push_str(&top);
    out
}

pub fn generate(reg: &Registry) -> String {
    let ops: Vec<&OpRecord> = reg.ops.values().collect();
    let stems = super::rust::stems(&ops);
    let mut o = format!(
        "# @generated by toolreg from registry {} ({}). Do not edit: run `toolreg build`.\n\
         \"\"\"pydantic v2 models of every op's arguments and a typed client that checks a call as\n\
         toolreg's exec does. Depends on pydantic only.\"\"\"\n\n",
        lit(&reg.name),
        reg.registry_version
    );
    o.push_str(HEADER);
    o.push_str(&format!(
        "REGISTRY_VERSION: Final = {}\n\"\"\"The registry this module was generated from.\"\"\"\nEXEC_TOOL: Final = {}\n\"\"\"The gateway's exec tool (what an MCP transport calls).\"\"\"\n\n",
        lit(&reg.registry_version),
        lit(&reg.gateway.exec)
    ));
    let op_names: Vec<String> = ops.iter().map(|r| lit(&r.op)).collect();
    if op_names.is_empty() {
        o.push_str("Op = str\n\n");
    } else {
        o.push_str(&format!(
            "Op = Literal[\n    {},\n]\n\"\"\"Every op.\"\"\"\n\n",
            op_names.join(",\n    ")
        ));
    }
    for (r, stem) in ops.iter().zip(&stems) {
        o.push_str(&op_models(r, stem));
    }
    o.push_str("ARG_MODELS: Final[dict[str, type[BaseModel]]] = {\n");
    for (r, stem) in ops.iter().zip(&stems) {
        o.push_str(&format!("    {}: {stem}Args,\n", lit(&r.op)));
    }
    o.push_str("}\n\"\"\"Each op's argument model.\"\"\"\n\n");
    let table: serde_json::Map<String, Value> = ops
        .iter()
        .map(|r| {
            let mut entry = super::arg_shape::op_table(r);
            entry["usage"] = Value::String(r.usage());
            let spec = crate::model::operation::spec(r);
            entry["operation"] =
                serde_json::json!({"action": spec.action, "entity_type": spec.entity_type});
            (r.op.clone(), entry)
        })
        .collect();
    let table = serde_json::to_string(&Value::Object(table)).unwrap_or_default();
    o.push_str(&format!(
        "OPS: Final[dict[str, dict[str, Any]]] = json.loads({})\n\"\"\"Each op's tool name, kind, operation, usage, aliases and argument shape.\"\"\"\n\
         TOOL_TO_OP: Final[dict[str, str]] = {{info[\"tool\"]: op for op, info in OPS.items()}}\n\n",
        lit(&table)
    ));
    o.push_str("for _model in list(ARG_MODELS.values()):\n    _model.model_rebuild()\n\n");
    o.push_str(CLIENT);
    o
}

pub fn emit(reg: &Registry) -> FileMap {
    FileMap::from([
        (FILE.to_string(), generate(reg)),
        ("python/py.typed".to_string(), String::new()),
    ])
}

const HEADER: &str = r#"from __future__ import annotations

import copy
import json
import re
from typing import Any, Callable, Final, Literal, Mapping, Optional, Protocol, TypedDict, Union, cast

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from typing_extensions import Annotated, NotRequired


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("may be left out, but not null")
    return value


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not one of the listed numbers")
    return value


def _never(value: Any) -> Any:
    raise ValueError("no value is allowed here")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _unique(items: list[Any]) -> list[Any]:
    if len({_canonical(i) for i in items}) != len(items):
        raise ValueError("items must be unique")
    return items


def _one_of(values_json: str) -> Callable[[Any], Any]:
    allowed = {_canonical(v) for v in json.loads(values_json)}

    def check(value: Any) -> Any:
        if _canonical(value) not in allowed:
            raise ValueError("must be one of the values the schema lists")
        return value

    return check


def _pattern(source: str) -> Callable[[str], str]:
    """A schema's pattern, compiled once; one Python cannot compile checks nothing."""
    try:
        compiled: Optional[re.Pattern[str]] = re.compile(source)
    except (re.error, OverflowError):
        compiled = None

    def check(value: str) -> str:
        if compiled is not None and compiled.search(value) is None:
            raise ValueError("does not match the pattern")
        return value

    return check


"#;

/// The checker and client: mirrors `runtime::exec` (steps 3 to 6) and `runtime::validate`.
const CLIENT: &str = r#"class FieldError(TypedDict):
    field: str
    pointer: str
    message: str
    hint: NotRequired[str]


class ErrorBody(TypedDict):
    code: str
    message: str
    details: dict[str, Any]
    help_path: str


class Meta(TypedDict):
    trace_id: str
    latency_ms: int
    warnings: list[str]
    dry_run: NotRequired[bool]


class Envelope(TypedDict):
    """seed 000's envelope, as `toolreg serve` answers."""

    op: str
    ok: bool
    result: NotRequired[Any]
    error: NotRequired[ErrorBody]
    meta: Meta


class Checked(TypedDict):
    ok: bool
    op: str
    args: NotRequired[dict[str, Any]]
    error: NotRequired[ErrorBody]
    warnings: list[str]


class Call(TypedDict):
    op: str
    tool: str
    args: dict[str, Any]
    idempotency_key: NotRequired[str]
    dry_run: NotRequired[bool]


MAX_FIELD_ERRORS: Final = 20
MAX_UNKNOWN_REPORTED: Final = 20
MAX_NAME_CHARS: Final = 64


def _shown(name: str) -> str:
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS] + "…"


def _child_pointer(at: str, key: str) -> str:
    return at + "/" + _shown(key).replace("~", "~0").replace("/", "~1")


def _field_of(pointer: str) -> str:
    return pointer.lstrip("/").replace("/", ".").replace("~1", "/").replace("~0", "~")


def _jaro_winkler(a: str, b: str) -> float:
    """Jaro-Winkler similarity over code points (the runtime's `strsim::jaro_winkler`)."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    reach = max(0, max(len(a), len(b)) // 2 - 1)
    a_flags = [False] * len(a)
    b_flags = [False] * len(b)
    matches = 0
    for i, ch in enumerate(a):
        for j in range(max(0, i - reach), min(len(b), i + reach + 1)):
            if b[j] == ch and not b_flags[j]:
                a_flags[i] = b_flags[j] = True
                matches += 1
                break
    if matches == 0:
        return 0.0
    transpositions = 0
    j = 0
    for i, ch in enumerate(a):
        if not a_flags[i]:
            continue
        while not b_flags[j]:
            j += 1
        if ch != b[j]:
            transpositions += 1
        j += 1
    transpositions //= 2
    jaro = (matches / len(a) + matches / len(b) + (matches - transpositions) / matches) / 3
    if jaro <= 0.7:
        return jaro
    prefix = 0
    while prefix < 4 and prefix < len(a) and prefix < len(b) and a[prefix] == b[prefix]:
        prefix += 1
    return jaro + 0.1 * prefix * (1 - jaro)


def _squash(name: str) -> str:
    return "".join(c for c in name if c.isalnum()).lower()


def _closest_property(unknown: str, names: list[str]) -> Optional[str]:
    squashed = _squash(unknown)
    for n in names:
        if _squash(n) == squashed:
            return n
    lowered = unknown.lower()
    best: Optional[tuple[float, str]] = None
    for n in names:
        s = _jaro_winkler(lowered, n.lower())
        if s < 0.7:
            continue
        if best is None or s > best[0] or (s == best[0] and n < best[1]):
            best = (s, n)
    return best[1] if best else None


def _unknown_arguments(level: Any, args: Any, at: str, depth: int, out: list[dict[str, Any]]) -> None:
    if level is None or not isinstance(args, dict) or depth > 32:
        return
    props: dict[str, Any] = level["p"]
    required: list[str] = level["r"]
    for key, value in args.items():
        if len(out) >= MAX_UNKNOWN_REPORTED:
            return
        pointer = _child_pointer(at, key)
        if key in props:
            _unknown_arguments(props[key], value, pointer, depth + 1, out)
            continue
        if level.get("x") == "closed":
            continue
        missing = [r for r in required if r not in args]
        closest = _closest_property(key, missing)
        if closest is None:
            k = _squash(key)
            inside = [r for r in missing if len(_squash(r)) >= 3 and (_squash(r) in k or k in _squash(r))]
            if len(inside) == 1:
                closest = inside[0]
        if closest is None:
            closest = _closest_property(key, list(props))
        out.append({
            "pointer": pointer,
            "name": _shown(key),
            "closest": closest,
            "closest_missing": closest is not None and closest in required and closest not in args,
        })


def _strip_undeclared(level: Any, args: Any, at: str, depth: int, out: set[str]) -> None:
    if level is None or not isinstance(args, dict) or depth > 32:
        return
    props: dict[str, Any] = level["p"]
    if "x" not in level:
        for key in [k for k in args if k not in props]:
            out.add(_child_pointer(at, key))
            del args[key]
    for key, value in args.items():
        if key in props:
            _strip_undeclared(props[key], value, _child_pointer(at, key), depth + 1, out)


def _apply_aliases(info: dict[str, Any], args: dict[str, Any], warnings: list[str]) -> None:
    for alias, target in info.get("aliases", {}).items():
        outer, dot, inner = alias.partition(".")
        missing = object()
        taken: Any = missing
        if dot:
            holder = args.get(outer)
            if isinstance(holder, dict) and inner in holder:
                taken = holder.pop(inner)
                if not holder:
                    del args[outer]
        elif alias in args:
            taken = args.pop(alias)
        if taken is missing:
            continue
        if target in args:
            warnings.append(f"dropped `{alias}`: `{target}` was also given")
        else:
            args[target] = taken
            warnings.append(f"renamed `{alias}` to `{target}`")


def _failure(op: str, code: str, message: str, details: dict[str, Any], errors: Optional[list[FieldError]] = None) -> ErrorBody:
    return {"code": code, "message": message, "details": {**details, "field_errors": errors or []}, "help_path": op}


def _resolve(args: Any, loc: tuple[Any, ...]) -> tuple[list[str], Any, bool]:
    """The longest prefix of a pydantic location that names values in `args` (a union's
    branch tags are not keys), the value there, and whether the whole location resolved."""
    keys: list[str] = []
    value = args
    for part in loc:
        if isinstance(value, dict) and isinstance(part, str) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and not isinstance(part, bool) and 0 <= part < len(value):
            value = value[part]
        else:
            return keys, value, False
        keys.append(str(part))
    return keys, value, True


def _field_errors(model: type[BaseModel], args: dict[str, Any]) -> list[FieldError]:
    try:
        model.model_validate_json(json.dumps(args), strict=True)
        return []
    except ValidationError as e:
        issues = e.errors(include_url=False, include_input=False)
    out: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for issue in issues:
        if len(out) >= MAX_FIELD_ERRORS:
            break
        loc = tuple(issue["loc"])
        kind = issue["type"]
        if kind == "missing":
            keys, _, _ = _resolve(args, loc[:-1])
            name = str(loc[-1])
            pointer = "".join(_child_pointer("", k) for k in keys + [name])
            error: FieldError = {"field": _field_of(pointer), "pointer": pointer, "message": f"missing required argument `{name}`", "hint": f"add `{name}`"}
        elif kind == "extra_forbidden":
            keys, _, _ = _resolve(args, loc)
            pointer = "".join(_child_pointer("", k) for k in keys)
            error = {"field": _field_of(pointer), "pointer": pointer, "message": f"unknown argument `{_shown(keys[-1]) if keys else ''}`"}
        else:
            keys, _, whole = _resolve(args, loc)
            pointer = "".join(_child_pointer("", k) for k in keys)
            error = {"field": _field_of(pointer) if pointer else "(arguments)", "pointer": pointer, "message": str(issue["msg"])}
            if not whole:
                # A union's branches each report the value: one error says it fits none.
                error["message"] = "matches none of the allowed types or values"
        if (error["pointer"], error["message"]) in seen:
            continue
        seen.add((error["pointer"], error["message"]))
        out.append(error)
    return out


def check(name: str, raw: Any) -> Checked:
    """Checks a call as exec does before its handler runs: the op (or its tool name), arguments
    (a JSON string is parsed), aliases, empty arguments, unknown names, then the model. The
    caller's arguments are not modified; a successful check returns the arguments to send."""
    warnings: list[str] = []
    op = name if name in OPS else TOOL_TO_OP.get(name)
    if op is None:
        return {"ok": False, "op": name, "error": _failure(name, "NOT_FOUND", f"unknown op `{_shown(name)}`", {}), "warnings": warnings}
    if op != name:
        warnings.append(f"`{name}` is a tool name; the op is `{op}`")
    info = OPS[op]
    args: Any = {} if raw is None else raw
    if isinstance(args, BaseModel):
        args = json.loads(args.model_dump_json(by_alias=True, exclude_unset=True))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as e:
            return {"ok": False, "op": op, "error": _failure(op, "MALFORMED_ARGS", f"`args` is not valid JSON: {e}", {}), "warnings": warnings}
        if isinstance(args, dict):
            warnings.append("`args` was a JSON string; parsed it as an object")
    if not isinstance(args, dict):
        kind = "null" if args is None else "an array" if isinstance(args, list) else f"a {type(args).__name__}"
        return {"ok": False, "op": op, "error": _failure(op, "MALFORMED_ARGS", f"`args` must be a JSON object, got {kind}", {}), "warnings": warnings}
    args = copy.deepcopy(args)
    _apply_aliases(info, args, warnings)
    if not args and info["required"]:
        message = f"`{op}` needs arguments: {', '.join(info['required'])}"
        return {"ok": False, "op": op, "error": _failure(op, "EMPTY_ARGS", message, {"required_args": info["required"], "usage": info["usage"]}), "warnings": warnings}
    unknown: list[dict[str, Any]] = []
    _unknown_arguments(info["shape"], args, "", 0, unknown)
    dropped: set[str] = set()
    if not info.get("pass_unknown"):
        _strip_undeclared(info["shape"], args, "", 0, dropped)
    errors = _field_errors(ARG_MODELS[op], args)
    for u in unknown:
        fate = ("the schema does not declare it, so it was dropped before the call" if u["pointer"] in dropped
                else "the schema lets it through, so it is passed on unchecked")
        field = u["pointer"].lstrip("/").replace("/", ".")
        closest = u["closest"]
        if closest is not None and u["closest_missing"]:
            for err in errors:
                if err["field"].split(".")[-1] == closest:
                    err["hint"] = f"you sent `{u['name']}`: rename it to `{closest}`"
            errors.append({"field": field, "pointer": u["pointer"],
                           "message": f"`{u['name']}` is not an argument of this op; did you mean `{closest}`?",
                           "hint": f"rename `{u['name']}` to `{closest}`"})
        elif closest is not None:
            warnings.append(f"`{field}` is not an argument of this op; did you mean `{closest}`? ({fate})")
        else:
            warnings.append(f"`{field}` is not an argument of this op ({fate})")
    if errors:
        n = len(errors)
        message = f"{n} argument problem{'' if n == 1 else 's'} in `{op}`"
        return {"ok": False, "op": op, "error": _failure(op, "VALIDATION_ERROR", message, {"usage": info["usage"]}, errors), "warnings": warnings}
    return {"ok": True, "op": op, "args": args, "warnings": warnings}


class Transport(Protocol):
    """Runs a checked call and answers an envelope."""

    def call(self, call: Call) -> Envelope: ...


def _envelope(op: str, ok: bool, warnings: list[str], result: Any = None, error: Optional[ErrorBody] = None) -> Envelope:
    env: Envelope = {"op": op, "ok": ok, "meta": {"trace_id": "", "latency_ms": 0, "warnings": warnings}}
    if error is not None:
        env["error"] = error
    else:
        env["result"] = result
    return env


class HandlerError(Exception):
    """What a handler raises to answer an error with its own code (e.g. NOT_FOUND)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class HandlersTransport:
    """A transport over handlers in this process: a handler's return value is the result."""

    def __init__(self, handlers: Mapping[str, Callable[[dict[str, Any]], Any]]) -> None:
        self.handlers = handlers

    def call(self, call: Call) -> Envelope:
        handler = self.handlers.get(call["op"])
        if handler is None:
            return _envelope(call["op"], False, [], error=_failure(call["op"], "NOT_IMPLEMENTED", f"no handler for `{call['op']}`", {}))
        try:
            return _envelope(call["op"], True, [], result=handler(call["args"]))
        except HandlerError as e:
            return _envelope(call["op"], False, [], error=_failure(call["op"], e.code, e.message, {}))
        except Exception as e:  # noqa: BLE001 - a handler's failure is an envelope, as in the runtime
            return _envelope(call["op"], False, [], error=_failure(call["op"], "INTERNAL", str(e), {}))


class McpTransport:
    """A transport to `toolreg serve`: `call_tool(name, arguments)` is an MCP client's call (e.g.
    a wrapper of the `mcp` package's session); its result's structured content is the envelope."""

    def __init__(self, call_tool: Callable[[str, dict[str, Any]], Any], exec_tool: str = EXEC_TOOL) -> None:
        self.call_tool = call_tool
        self.exec_tool = exec_tool

    def call(self, call: Call) -> Envelope:
        request: dict[str, Any] = {"op": call["op"], "args": call["args"]}
        if "idempotency_key" in call:
            request["idempotency_key"] = call["idempotency_key"]
        if "dry_run" in call:
            request["dry_run"] = call["dry_run"]
        answer = self.call_tool(self.exec_tool, request)
        structured = answer.get("structuredContent") if isinstance(answer, dict) else getattr(answer, "structuredContent", None)
        if isinstance(structured, dict):
            return cast(Envelope, structured)
        return _envelope(call["op"], False, [], error=_failure(call["op"], "INTERNAL", "the server's answer was not an envelope", {}))


class Client:
    """A typed client: each call is checked here first, and only a valid one reaches the transport."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def exec(self, op: Op, args: Union[Mapping[str, Any], BaseModel], *, idempotency_key: Optional[str] = None, dry_run: Optional[bool] = None) -> Envelope:
        checked = check(op, dict(args) if isinstance(args, Mapping) else args)
        if not checked["ok"] or "args" not in checked:
            return _envelope(checked["op"], False, checked["warnings"], error=checked.get("error"))
        call: Call = {"op": checked["op"], "tool": OPS[checked["op"]]["tool"], "args": checked["args"]}
        if idempotency_key is not None:
            call["idempotency_key"] = idempotency_key
        if dry_run is not None:
            call["dry_run"] = dry_run
        answer = self.transport.call(call)
        if checked["warnings"]:
            answer["meta"]["warnings"] = checked["warnings"] + list(answer["meta"].get("warnings", []))
        return answer
"#;
