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

use super::string_literal as lit;
use super::FileMap;
use crate::model::registry::{OpRecord, Registry};
use heck::{ToSnakeCase, ToUpperCamelCase};
use serde_json::Value;
use std::collections::BTreeSet;

pub const FILE: &str = "python/registry.py";

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
                // Alternatives that say no type (`anyOf` of formats) leave the type to `type`.
                let untyped = alts.iter().all(|a| a == "Any");
                if !(untyped && (obj.contains_key("type") || obj.contains_key("properties"))) {
                    return union(alts);
                }
            }
        }
        if let Some(items) = obj.get("allOf").and_then(Value::as_array) {
            if items.len() == 1 && !obj.contains_key("type") {
                return self.ty(&items[0], hint, depth + 1);
            }
            if !obj.contains_key("type") && !obj.contains_key("properties") {
                return "Any".into();
            }
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
    // A declared result with properties is a model too (`{stem}Result`).
    if let Some(output) = r
        .output_schema
        .as_ref()
        .filter(|o| o.get("properties").is_some())
    {
        let result_stem = format!("{stem}Result");
        let mut py = Py {
            stem: &result_stem,
            root: output,
            classes: Vec::new(),
            names: BTreeSet::from([result_stem.clone()]),
        };
        let top = py.model(output, &result_stem, 0);
        out.push_str(&py.classes.concat());
        out.push_str(&top);
    }
    out
}

/// Whether the Python module has a result model for the op.
fn has_result_model(r: &OpRecord) -> bool {
    r.output_schema
        .as_ref()
        .is_some_and(|o| o.get("properties").is_some())
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
    o.push_str("RESULT_MODELS: Final[dict[str, type[BaseModel]]] = {\n");
    for (r, stem) in ops.iter().zip(&stems).filter(|(r, _)| has_result_model(r)) {
        o.push_str(&format!("    {}: {stem}Result,\n", lit(&r.op)));
    }
    o.push_str("}\n\"\"\"The model of each op's declared result (MCP `outputSchema`), where it has one.\"\"\"\n\n");
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
    let shared = super::arg_shape::shared_tool_names(reg);
    let tool_to_op: serde_json::Map<String, Value> = ops
        .iter()
        .filter(|r| !shared.contains(r.tool_name.as_str()))
        .map(|r| (r.tool_name.clone(), Value::String(r.op.clone())))
        .collect();
    let tool_to_op = serde_json::to_string(&Value::Object(tool_to_op)).unwrap_or_default();
    o.push_str(&format!(
        "OPS: Final[dict[str, dict[str, Any]]] = json.loads({})\n\"\"\"Each op's tool name, kind, operation, usage, aliases and argument shape.\"\"\"\n\
         TOOL_TO_OP: Final[dict[str, str]] = json.loads({})\n\"\"\"Tool name -> op (a name several ops share is left out: it names none of them).\"\"\"\n\n",
        lit(&table),
        lit(&tool_to_op)
    ));
    o.push_str("for _model in [*ARG_MODELS.values(), *RESULT_MODELS.values()]:\n    _model.model_rebuild()\n\n");
    o.push_str(CLIENT);
    o
}

pub fn emit(reg: &Registry) -> FileMap {
    FileMap::from([
        (FILE.to_string(), generate(reg)),
        ("python/py.typed".to_string(), String::new()),
    ])
}

/// Imports and the validators the models use.
const HEADER: &str = include_str!("client_src/python_header.py");

/// The checker and client; mirrors `runtime::exec` (steps 3 to 6) and `runtime::validate`.
const CLIENT: &str = include_str!("client_src/python_client.py");
