//! `ts/client.ts` (emitter `zod`, opt-in): zod v4 schemas of every op's arguments, and a typed
//! client that checks a call the way the runtime's `exec` does before any handler runs.
//!
//! The module imports nothing but `zod` and the types of `ts/registry.ts` (written alongside,
//! the same file the `ts` emitter writes). `check(op, args)` answers what `exec` would: the
//! same field errors at the same pointers (missing, wrong type, unknown under a closed object,
//! a near miss of a missing required name), unknown names elsewhere dropped with a warning,
//! argument aliases renamed, `EMPTY_ARGS` for `{}`. `Client.exec` adds a transport: a map of
//! handlers, or an MCP client talking to `toolreg serve` (the gateway's exec tool).
//!
//! Catalog text reaches the file only as JSON string literals (valid TypeScript) or inside
//! doc comments with `*/` broken; names never become identifiers (schemas are named by stem).

use super::string_literal as lit;
use super::FileMap;
use crate::model::registry::{OpRecord, Registry};
use heck::ToUpperCamelCase;
use serde_json::Value;

pub const FILE: &str = "ts/client.ts";

/// A property key of an object literal: `"__proto__"` written plainly would set the prototype.
fn key(name: &str) -> String {
    if name == "__proto__" {
        format!("[{}]", lit(name))
    } else {
        lit(name)
    }
}

/// zod for one op's schema; `$ref`s name `{stem}{Def}Schema` constants, lazily.
struct Zod<'a> {
    /// Prefix of the `$defs` constants (`{stem}{Def}Schema`).
    stem: &'a str,
    /// The constant `#` refers to (`{stem}ArgsSchema`, or `{stem}ResultSchema`).
    root: String,
}

impl Zod<'_> {
    fn reference(&self, r: &str) -> String {
        if r == "#" {
            return format!("z.lazy(() => {})", self.root);
        }
        match ["#/$defs/", "#/definitions/"]
            .iter()
            .find_map(|p| r.strip_prefix(p))
        {
            Some(name) => format!(
                "z.lazy(() => {}{}Schema)",
                self.stem,
                name.to_upper_camel_case()
            ),
            None => "z.unknown()".into(),
        }
    }

    fn schema(&self, s: &Value, depth: usize) -> String {
        let Some(obj) = s.as_object() else {
            return if s == &Value::Bool(false) {
                "z.never()".into()
            } else {
                "z.unknown()".into()
            };
        };
        if depth > 64 {
            return "z.unknown()".into();
        }
        let mut parts: Vec<String> = Vec::new();
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            parts.push(self.reference(r));
        }
        // Listed values say the type already (a value of another type is not one of them).
        let listed = if let Some(c) = obj.get("const") {
            Some(one_of_values(std::slice::from_ref(c)))
        } else {
            obj.get("enum")
                .and_then(Value::as_array)
                .map(|values| one_of_values(values))
        };
        let has_listed = listed.is_some();
        parts.extend(listed);
        for k in ["oneOf", "anyOf"] {
            if let Some(items) = obj.get(k).and_then(Value::as_array) {
                let alts: Vec<String> = items.iter().map(|i| self.schema(i, depth + 1)).collect();
                parts.push(match alts.len() {
                    0 => "z.never()".into(),
                    1 => alts[0].clone(),
                    _ => format!("z.union([{}])", alts.join(", ")),
                });
            }
        }
        if let Some(items) = obj.get("allOf").and_then(Value::as_array) {
            parts.extend(items.iter().map(|i| self.schema(i, depth + 1)));
        }
        if !has_listed {
            parts.extend(self.typed(obj, depth));
        }
        match parts.len() {
            0 => "z.unknown()".into(),
            1 => parts.remove(0),
            _ => {
                let first = parts.remove(0);
                parts
                    .into_iter()
                    .fold(first, |acc, p| format!("z.intersection({acc}, {p})"))
            }
        }
    }

    /// The part of a schema its `type` (or, without one, its `properties` / `required`) says.
    fn typed(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> Option<String> {
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if obj.contains_key("properties") || obj.contains_key("required") => {
                // Without a type, object keywords constrain objects only.
                let o = self.object(obj, depth);
                return Some(format!(
                    "z.union([{o}, z.unknown().refine((v) => !isObject(v))])"
                ));
            }
            _ => return None,
        };
        let alts: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "string" => string(obj),
                "integer" => number(obj, true),
                "number" => number(obj, false),
                "boolean" => "z.boolean()".into(),
                "null" => "z.null()".into(),
                "array" => self.array(obj, depth),
                "object" => self.object(obj, depth),
                _ => "z.unknown()".into(),
            })
            .collect();
        Some(match alts.len() {
            0 => "z.unknown()".into(),
            1 => alts[0].clone(),
            _ => format!("z.union([{}])", alts.join(", ")),
        })
    }

    fn array(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
        let items = match obj.get("items") {
            Some(i @ (Value::Object(_) | Value::Bool(_))) => self.schema(i, depth + 1),
            _ => "z.unknown()".into(),
        };
        let mut out = format!("z.array({items})");
        if let Some(n) = obj.get("minItems").and_then(Value::as_u64) {
            out.push_str(&format!(".min({n})"));
        }
        if let Some(n) = obj.get("maxItems").and_then(Value::as_u64) {
            out.push_str(&format!(".max({n})"));
        }
        if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
            out.push_str(".refine(unique, \"items must be unique\")");
        }
        out
    }

    fn object(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
        let required = crate::model::schema::required(&Value::Object(obj.clone()))
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        let mut members: Vec<String> = Vec::new();
        let props = obj.get("properties").and_then(Value::as_object);
        for (name, sub) in props.into_iter().flatten() {
            let z = self.schema(sub, depth + 1);
            if required.contains(name) {
                // zod's `unknown` and lazy schemas accept a missing key; a required one must be there.
                if z.contains("z.unknown()") || z.contains("z.lazy(") {
                    members.push(format!("{}: present({z})", key(name)));
                } else {
                    members.push(format!("{}: {z}", key(name)));
                }
            } else {
                members.push(format!("{}: {z}.optional()", key(name)));
            }
        }
        for name in &required {
            if !props.is_some_and(|p| p.contains_key(name)) {
                members.push(format!("{}: present(z.unknown())", key(name)));
            }
        }
        let indent = "  ".repeat(depth + 1);
        let shape = if members.is_empty() {
            "{}".to_string()
        } else {
            format!(
                "{{\n{indent}{},\n{}}}",
                members.join(&format!(",\n{indent}")),
                "  ".repeat(depth)
            )
        };
        match obj.get("additionalProperties") {
            Some(Value::Bool(false)) => format!("z.strictObject({shape})"),
            Some(extra @ Value::Object(_)) if !obj.contains_key("patternProperties") => {
                format!(
                    "z.object({shape}).catchall({})",
                    self.schema(extra, depth + 1)
                )
            }
            _ => format!("z.looseObject({shape})"),
        }
    }
}

/// `enum` / `const`: primitives as literals, anything else compared as JSON.
fn one_of_values(values: &[Value]) -> String {
    let alts: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::Null => "z.null()".into(),
            Value::String(s) => format!("z.literal({})", lit(s)),
            Value::Bool(_) | Value::Number(_) => format!("z.literal({v})"),
            other => format!(
                "z.unknown().refine((v) => sameJson(v, {}), \"must equal the value the schema gives\")",
                other
            ),
        })
        .collect();
    match alts.len() {
        0 => "z.never()".into(),
        1 => alts[0].clone(),
        _ => format!("z.union([{}])", alts.join(", ")),
    }
}

fn string(obj: &serde_json::Map<String, Value>) -> String {
    let mut out = "z.string()".to_string();
    // JSON Schema counts code points; JavaScript's length counts UTF-16 units.
    if let Some(n) = obj.get("minLength").and_then(Value::as_u64) {
        out.push_str(&format!(
            ".refine((v) => chars(v) >= {n}, \"shorter than {n} characters\")"
        ));
    }
    if let Some(n) = obj.get("maxLength").and_then(Value::as_u64) {
        out.push_str(&format!(
            ".refine((v) => chars(v) <= {n}, \"longer than {n} characters\")"
        ));
    }
    if let Some(p) = obj.get("pattern").and_then(Value::as_str) {
        out.push_str(&format!(
            ".refine(pattern({}), \"does not match the pattern\")",
            lit(p)
        ));
    }
    out
}

fn number(obj: &serde_json::Map<String, Value>, integer: bool) -> String {
    let mut out = if integer {
        "z.number().refine(Number.isInteger, \"expected an integer\")".to_string()
    } else {
        "z.number()".to_string()
    };
    for (key, method) in [
        ("minimum", "gte"),
        ("maximum", "lte"),
        ("exclusiveMinimum", "gt"),
        ("exclusiveMaximum", "lt"),
    ] {
        if let Some(n) = obj.get(key).filter(|v| v.is_number()) {
            out.push_str(&format!(
                ".refine((v) => v {} {n}, \"must be {} {n}\")",
                match method {
                    "gte" => ">=",
                    "lte" => "<=",
                    "gt" => ">",
                    _ => "<",
                },
                match method {
                    "gte" => "at least",
                    "lte" => "at most",
                    "gt" => "more than",
                    _ => "less than",
                }
            ));
        }
    }
    if let Some(n) = obj
        .get("multipleOf")
        .filter(|v| v.as_f64().is_some_and(|f| f > 0.0))
    {
        out.push_str(&format!(
            ".refine((v) => Number.isInteger(v / {n}), \"must be a multiple of {n}\")"
        ));
    }
    out
}

/// The op's schemas: its `$defs` first, then its arguments.
fn op_schemas(r: &OpRecord, stem: &str) -> String {
    let z = Zod {
        stem,
        root: format!("{stem}ArgsSchema"),
    };
    let mut o = String::new();
    for k in ["$defs", "definitions"] {
        if let Some(defs) = r.parameters_schema.get(k).and_then(Value::as_object) {
            for (name, def) in defs {
                o.push_str(&format!(
                    "const {stem}{}Schema: z.ZodType = {};\n",
                    name.to_upper_camel_case(),
                    z.schema(def, 0)
                ));
            }
        }
    }
    o.push_str(&super::typescript::jsdoc(
        &format!("Arguments of `{}` (tool `{}`).", r.op, r.tool_name),
        "",
    ));
    o.push_str(&format!(
        "export const {stem}ArgsSchema: z.ZodType = {};\n\n",
        z.schema(&r.parameters_schema, 0)
    ));
    if let Some(output) = &r.output_schema {
        let result_stem = format!("{stem}Result");
        let z = Zod {
            stem: &result_stem,
            root: format!("{stem}ResultSchema"),
        };
        for k in ["$defs", "definitions"] {
            if let Some(defs) = output.get(k).and_then(Value::as_object) {
                for (name, def) in defs {
                    o.push_str(&format!(
                        "const {result_stem}{}Schema: z.ZodType = {};\n",
                        name.to_upper_camel_case(),
                        z.schema(def, 0)
                    ));
                }
            }
        }
        o.push_str(&super::typescript::jsdoc(
            &format!("What `{}` answers (its declared output schema).", r.op),
            "",
        ));
        o.push_str(&format!(
            "export const {stem}ResultSchema: z.ZodType = {};\n\n",
            z.schema(output, 0)
        ));
    }
    o
}

pub fn generate(reg: &Registry) -> String {
    let ops: Vec<&OpRecord> = reg.ops.values().collect();
    let stems = super::rust::stems(&ops);
    let mut o = format!(
        "// @generated by toolreg from registry {} ({}). Do not edit: run `toolreg build`.\n\
         // zod v4 schemas of every op's arguments and a typed client that checks a call as the\n\
         // runtime's exec does. Depends on zod only.\n\n\
         import {{ z }} from \"zod\";\n\
         import type {{ Op, OpArgs, OpResult }} from \"./registry\";\n\n",
        lit(&reg.name),
        reg.registry_version
    );
    o.push_str(&format!(
        "/** The registry this client was generated from. */\nexport const REGISTRY_VERSION = {} as const;\n\
         /** The gateway's exec tool (what an MCP transport calls). */\nexport const EXEC_TOOL = {} as const;\n\n",
        lit(&reg.registry_version),
        lit(&reg.gateway.exec)
    ));
    o.push_str(HELPERS);
    for (r, stem) in ops.iter().zip(&stems) {
        o.push_str(&op_schemas(r, stem));
    }
    o.push_str("/** Each op's argument schema. */\nexport const ARG_SCHEMAS: { readonly [O in Op]: z.ZodType } = {\n");
    for (r, stem) in ops.iter().zip(&stems) {
        o.push_str(&format!("  {}: {stem}ArgsSchema,\n", lit(&r.op)));
    }
    o.push_str("};\n\n/** The schema of each op's declared result (MCP `outputSchema`), where it has one. */\nexport const RESULT_SCHEMAS: { readonly [O in Op]?: z.ZodType } = {\n");
    for (r, stem) in ops.iter().zip(&stems) {
        if r.output_schema.is_some() {
            o.push_str(&format!("  {}: {stem}ResultSchema,\n", lit(&r.op)));
        }
    }
    o.push_str("};\n\n/** Each op's tool name, kind, usage, aliases and argument shape (what exec checks besides the schema). */\nexport const OPS: { readonly [O in Op]: OpInfo } = {\n");
    for r in &ops {
        let mut entry = super::arg_shape::op_table(r);
        entry["usage"] = Value::String(r.usage());
        // Parsed from JSON, not written as a literal: an argument named `__proto__` stays a name.
        o.push_str(&format!(
            "  {}: JSON.parse({}) as OpInfo,\n",
            lit(&r.op),
            lit(&serde_json::to_string(&entry).unwrap_or_else(|_| "null".into()))
        ));
    }
    o.push_str("};\n\n/** Tool name -> op (a name several ops share is left out: it names none of them). */\nexport const TOOL_TO_OP: { readonly [name: string]: Op | undefined } = {\n");
    let shared = super::arg_shape::shared_tool_names(reg);
    for r in ops
        .iter()
        .filter(|r| !shared.contains(r.tool_name.as_str()))
    {
        o.push_str(&format!("  {}: {},\n", lit(&r.tool_name), lit(&r.op)));
    }
    o.push_str("};\n\n");
    o.push_str(CLIENT);
    o
}

pub fn emit(reg: &Registry) -> FileMap {
    FileMap::from([
        (FILE.to_string(), generate(reg)),
        (
            super::typescript::FILE.to_string(),
            super::typescript::generate(reg),
        ),
    ])
}

/// Helpers the schemas use: the same in every generated client.
const HELPERS: &str = include_str!("client_src/zod_helpers.ts");

/// The checker and client; mirrors `runtime::exec` (steps 3 to 6) and `runtime::validate`.
const CLIENT: &str = include_str!("client_src/zod_client.ts");
