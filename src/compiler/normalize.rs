//! Normalize: bring real-world parameter schemas to standard JSON Schema, one warning per fix.
//!
//! Real exports carry BFCL-style `dict`/`float`/`tuple`, Python/Java/JS type names, OpenAPI's
//! `nullable`, home-made `optional: true`, Swagger-2 `required: true` on properties, defaults that
//! do not fit, and `required` lists naming properties that do not exist. Key order is kept, so
//! docs show properties in the order the author wrote them.

use super::source::pointer_segment;
use crate::model::diag::{Code, Diagnostic, Diagnostics, Location};
use serde_json::{Map, Value};

/// What a type name means in JSON Schema.
enum TypeName {
    /// Already a standard JSON Schema type.
    Standard(&'static str),
    /// A well-known non-standard name for a standard type.
    Alias(&'static str),
    /// "any", "", "object?"-like names: no type constraint at all.
    Any,
    Unknown,
}

fn classify_type_name(name: &str) -> TypeName {
    const STANDARD: [&str; 7] = [
        "object", "array", "string", "number", "integer", "boolean", "null",
    ];
    if let Some(s) = STANDARD.iter().find(|s| **s == name) {
        return TypeName::Standard(s);
    }
    let lower = name.trim().to_ascii_lowercase();
    let lower = lower
        .trim_start_matches("java.lang.")
        .trim_start_matches("java.util.");
    let mapped = match lower {
        "dict" | "map" | "hashmap" | "treemap" | "linkedhashmap" | "record" | "struct"
        | "jsonobject" | "mapping" | "obj" | "object" => "object",
        "list" | "tuple" | "set" | "frozenset" | "arraylist" | "linkedlist" | "vec" | "vector"
        | "sequence" | "jsonarray" | "array" => "array",
        "str" | "string" | "text" | "char" | "character" | "charsequence" | "uuid" | "date"
        | "datetime" => "string",
        "int" | "integer" | "long" | "short" | "byte" | "bigint" | "biginteger" | "i8" | "i16"
        | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize" | "isize" | "int32" | "int64" => {
            "integer"
        }
        "float" | "double" | "decimal" | "bigdecimal" | "number" | "f32" | "f64" | "float32"
        | "float64" | "real" | "numeric" => "number",
        "bool" | "boolean" => "boolean",
        "none" | "nonetype" | "nil" | "null" | "void" | "undefined" => "null",
        "any" | "" | "unknown" | "mixed" | "object?" | "dynamic" => return TypeName::Any,
        _ => return TypeName::Unknown,
    };
    TypeName::Alias(mapped)
}

/// Normalizes one tool's parameter schema in place. `base` is the schema's JSON pointer in its
/// file; `loc` turns a pointer into a location.
pub fn normalize_parameters(
    tool: &str,
    schema: &mut Value,
    base: &str,
    loc: &dyn Fn(String) -> Location,
    diags: &mut Diagnostics,
) {
    let mut n = normalize_any(tool, schema, base, loc, diags);
    let Value::Object(top) = schema else { return };
    // Any other top-level type is left for the provider lints (TR060) to report per surface.
    if !top.contains_key("type") {
        top.shift_insert(0, "type".into(), Value::String("object".into()));
        n.warn(
            Code::TopLevelType,
            base,
            format!("parameters of `{tool}` have no top-level `type`; set to `object`"),
            "providers require `\"type\": \"object\"` at the top of a tool's parameters",
        );
    }
    // Providers want an explicit (empty) property list for tools without arguments.
    if let Value::Object(top) = schema {
        if !top.contains_key("properties") && !top.contains_key("additionalProperties") {
            top.shift_insert(
                top.len().min(1),
                "properties".into(),
                Value::Object(Map::new()),
            );
        }
    }
}

/// Normalizes a schema that is not a tool's arguments (MCP's `outputSchema`): the same fixes,
/// none of the argument-only rules (a top-level `type`, an explicit property list).
pub fn normalize_schema(
    tool: &str,
    schema: &mut Value,
    base: &str,
    loc: &dyn Fn(String) -> Location,
    diags: &mut Diagnostics,
) {
    normalize_any(tool, schema, base, loc, diags);
}

/// The fixes every schema gets, arguments or not; the normalizer is handed back for the
/// argument-only rules.
fn normalize_any<'a>(
    tool: &'a str,
    schema: &mut Value,
    base: &str,
    loc: &'a dyn Fn(String) -> Location,
    diags: &'a mut Diagnostics,
) -> Normalizer<'a> {
    let mut n = Normalizer {
        tool,
        loc,
        diags,
        rewrote_dialect: false,
    };
    n.node(schema, base);
    if n.rewrote_dialect {
        n.declare_2020_12(schema, base);
    }
    n
}

struct Normalizer<'a> {
    tool: &'a str,
    loc: &'a dyn Fn(String) -> Location,
    diags: &'a mut Diagnostics,
    /// Whether a draft-04..2019-09 form was rewritten (then `$schema` is set to 2020-12).
    rewrote_dialect: bool,
}

/// The JSON Schema dialect every rewritten schema declares (and validates under).
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

impl Normalizer<'_> {
    fn warn(&mut self, code: Code, ptr: &str, msg: String, help: &str) {
        self.diags.push(
            Diagnostic::new(code, msg)
                .at((self.loc)(ptr.to_string()))
                .help(help),
        );
    }

    fn node(&mut self, value: &mut Value, ptr: &str) {
        let Value::Object(obj) = value else { return };
        self.fix_dialect(obj, ptr);
        self.fix_type(obj, ptr);
        self.fix_nullable(obj, ptr);
        self.fix_property_flags(obj, ptr);
        self.fix_required(obj, ptr);
        self.fix_default(obj, ptr);
        self.check_items(obj, ptr);
        self.recurse(obj, ptr);
    }

    fn recurse(&mut self, obj: &mut Map<String, Value>, ptr: &str) {
        crate::model::schema::for_each_subschema_mut(obj, |suffix, sub| {
            self.node(sub, &format!("{ptr}{suffix}"))
        });
    }

    fn fix_type(&mut self, obj: &mut Map<String, Value>, ptr: &str) {
        let Some(ty) = obj.get("type") else { return };
        // Most nodes name standard types: nothing to copy or rewrite.
        let standard = |v: &Value| {
            v.as_str()
                .is_some_and(|n| matches!(classify_type_name(n), TypeName::Standard(_)))
        };
        match ty {
            Value::String(_) if standard(ty) => return,
            Value::Array(a) if !a.is_empty() && a.iter().all(standard) => return,
            _ => {}
        }
        let names: Vec<String> = match ty {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            other => {
                let found = other.to_string();
                obj.shift_remove("type");
                self.warn(
                    Code::NonStandardType,
                    &format!("{ptr}/type"),
                    format!("`type` {found} is not a type name; the constraint was dropped"),
                    "write `type` as a JSON Schema type name or an array of them",
                );
                return;
            }
        };
        let mut out: Vec<&'static str> = Vec::new();
        let mut any = false;
        let mut changes = Vec::new();
        for name in &names {
            match classify_type_name(name) {
                TypeName::Standard(t) => out.push(t),
                TypeName::Alias(t) => {
                    changes.push(format!("`{name}` -> `{t}`"));
                    out.push(t);
                }
                TypeName::Any => {
                    changes.push(format!("`{name}` -> no type constraint"));
                    any = true;
                }
                TypeName::Unknown => {
                    changes.push(format!("unknown `{name}` -> no type constraint"));
                    any = true;
                }
            }
        }
        if names.is_empty() {
            any = true;
            changes.push("empty type list -> no type constraint".into());
        }
        if changes.is_empty() {
            return;
        }
        out.dedup();
        let mut seen = Vec::new();
        out.retain(|t| {
            let fresh = !seen.contains(t);
            seen.push(t);
            fresh
        });
        let help =
            "use a JSON Schema type: object, array, string, number, integer, boolean or null";
        self.warn(
            Code::NonStandardType,
            &format!("{ptr}/type"),
            format!(
                "non-standard type in `{}`: {}",
                self.tool,
                changes.join(", ")
            ),
            help,
        );
        if any {
            obj.shift_remove("type");
        } else if out.len() == 1 {
            obj.insert("type".into(), Value::String(out[0].into()));
        } else {
            obj.insert(
                "type".into(),
                Value::Array(out.into_iter().map(|t| Value::String(t.into())).collect()),
            );
        }
    }

    fn dialect(&mut self, ptr: &str, what: String) {
        self.rewrote_dialect = true;
        self.warn(
            Code::OlderDialect,
            ptr,
            format!(
                "{what} in `{}` (an older JSON Schema draft's form)",
                self.tool
            ),
            "toolreg validates with JSON Schema 2020-12; write the 2020-12 form to silence this",
        );
    }

    /// Draft-04..2019-09 keywords that 2020-12 spells differently, rewritten one by one (real
    /// servers mix them: zod-to-json-schema emits draft-04's boolean `exclusiveMinimum` under a
    /// draft-07 `$schema`). Keywords that mean the same in every draft are left alone.
    fn fix_dialect(&mut self, obj: &mut Map<String, Value>, ptr: &str) {
        for (flag, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            let Some(Value::Bool(on)) = obj.get(flag).cloned() else {
                continue;
            };
            let limit = obj.get(bound).filter(|v| v.is_number()).cloned();
            let at = format!("{ptr}/{flag}");
            match (on, limit) {
                (true, Some(limit)) => {
                    obj.shift_remove(bound);
                    obj.insert(flag.into(), limit.clone());
                    self.dialect(
                        &at,
                        format!(
                            "`{flag}: true` with `{bound}: {limit}` rewritten as `{flag}: {limit}`"
                        ),
                    );
                }
                (false, _) => {
                    obj.shift_remove(flag);
                    self.dialect(&at, format!("`{flag}: false` (draft-04's default) removed"));
                }
                (true, None) => {
                    obj.shift_remove(flag);
                    self.dialect(
                        &at,
                        format!(
                            "`{flag}: true` with no numeric `{bound}` removed (it bounded nothing)"
                        ),
                    );
                }
            }
        }
        if let Some(defs) = obj.shift_remove("definitions") {
            match obj.get_mut("$defs") {
                Some(Value::Object(existing)) => {
                    if let Value::Object(old) = defs {
                        for (k, v) in old {
                            existing.entry(k).or_insert(v);
                        }
                    }
                }
                _ => {
                    obj.insert("$defs".into(), defs);
                }
            }
            self.dialect(
                &format!("{ptr}/definitions"),
                "`definitions` moved to `$defs` (and `#/definitions/` references with it)".into(),
            );
        }
        if let Some(Value::String(r)) = obj.get_mut("$ref") {
            if let Some(rest) = r.strip_prefix("#/definitions/") {
                *r = format!("#/$defs/{rest}");
            }
        }
        if let Some(Value::Object(deps)) = obj.shift_remove("dependencies") {
            let (mut names, mut schemas) = (Map::new(), Map::new());
            for (k, v) in deps {
                if v.is_array() {
                    names.insert(k, v);
                } else {
                    schemas.insert(k, v);
                }
            }
            for (key, map) in [("dependentRequired", names), ("dependentSchemas", schemas)] {
                if !map.is_empty() {
                    obj.insert(key.into(), Value::Object(map));
                }
            }
            self.dialect(
                &format!("{ptr}/dependencies"),
                "`dependencies` split into `dependentRequired` / `dependentSchemas`".into(),
            );
        }
        if let Some(Value::Array(_)) = obj.get("items") {
            let tuple = obj.shift_remove("items").unwrap_or_default();
            obj.insert("prefixItems".into(), tuple);
            if let Some(rest) = obj.shift_remove("additionalItems") {
                obj.insert("items".into(), rest);
            }
            self.dialect(
                &format!("{ptr}/items"),
                "array-form `items` rewritten as `prefixItems` (`additionalItems` as `items`)"
                    .into(),
            );
        }
        if !obj.contains_key("$id") {
            if let Some(Value::String(_)) = obj.get("id") {
                if let Some(id) = obj.shift_remove("id") {
                    obj.insert("$id".into(), id);
                    self.dialect(&format!("{ptr}/id"), "`id` renamed `$id`".into());
                }
            }
        }
    }

    /// After a rewrite the schema is 2020-12, so its `$schema` (if it named a draft) must say so,
    /// or validators would read the new forms under the old draft's rules.
    fn declare_2020_12(&mut self, schema: &mut Value, base: &str) {
        let Value::Object(top) = schema else { return };
        if let Some(Value::String(old)) = top.get("$schema") {
            if old != DRAFT_2020_12 {
                let old = old.clone();
                top.insert("$schema".into(), Value::String(DRAFT_2020_12.into()));
                self.warn(
                    Code::OlderDialect,
                    &format!("{base}/$schema"),
                    format!("`$schema` of `{}` changed from `{old}` to 2020-12 after the rewrites above", self.tool),
                    "toolreg validates with JSON Schema 2020-12; write the 2020-12 form to silence this",
                );
            }
        }
    }

    fn fix_nullable(&mut self, obj: &mut Map<String, Value>, ptr: &str) {
        let Some(flag) = obj.shift_remove("nullable") else {
            return;
        };
        let nullable = flag.as_bool() == Some(true);
        if nullable {
            match obj.get_mut("type") {
                Some(Value::String(t)) if t != "null" => {
                    let t = std::mem::take(t);
                    obj.insert("type".into(), serde_json::json!([t, "null"]));
                }
                Some(Value::Array(list)) if !list.iter().any(|v| v == "null") => {
                    list.push(Value::String("null".into()));
                }
                _ => {}
            }
            if let Some(Value::Array(e)) = obj.get_mut("enum") {
                if !e.contains(&Value::Null) {
                    e.push(Value::Null);
                }
            }
        }
        self.warn(
            Code::Nullable,
            &format!("{ptr}/nullable"),
            if nullable {
                format!(
                    "`nullable: true` in `{}` rewritten as a type union with null",
                    self.tool
                )
            } else {
                format!("non-standard `nullable: {flag}` in `{}` removed", self.tool)
            },
            "JSON Schema spells this `\"type\": [\"string\", \"null\"]`",
        );
    }

    /// Moves property-level `optional: bool` / `required: bool` into the parent's `required`.
    fn fix_property_flags(&mut self, obj: &mut Map<String, Value>, ptr: &str) {
        let Some(Value::Object(props)) = obj.get_mut("properties") else {
            return;
        };
        let mut add = Vec::new();
        let mut remove = Vec::new();
        let mut moved = Vec::new();
        for (name, sub) in props.iter_mut() {
            let Value::Object(sub) = sub else { continue };
            if !sub.contains_key("optional") && !sub.contains_key("required") {
                continue;
            }
            let sub_ptr = format!("{ptr}/properties/{}", pointer_segment(name));
            if let Some(v) = sub.get("optional").cloned() {
                sub.shift_remove("optional");
                match v.as_bool() {
                    Some(true) => remove.push(name.clone()),
                    Some(false) => add.push(name.clone()),
                    None => {}
                }
                moved.push((format!("{sub_ptr}/optional"), name.clone(), "optional", v));
            }
            if let Some(v @ Value::Bool(_)) = sub.get("required").cloned() {
                sub.shift_remove("required");
                if v == Value::Bool(true) {
                    add.push(name.clone());
                } else {
                    remove.push(name.clone());
                }
                moved.push((format!("{sub_ptr}/required"), name.clone(), "required", v));
            }
        }
        for (p, name, key, v) in moved {
            self.warn(
                Code::OptionalFlag,
                &p,
                format!(
                    "property `{name}` of `{}` uses a non-standard `{key}: {v}`; moved into the parent's `required` list",
                    self.tool
                ),
                "list required properties in the object's `required` array instead",
            );
        }
        if add.is_empty() && remove.is_empty() {
            return;
        }
        let mut required: Vec<Value> = match obj.get("required") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        required.retain(|v| !v.as_str().is_some_and(|s| remove.iter().any(|r| r == s)));
        for a in add {
            if !required.iter().any(|v| v.as_str() == Some(a.as_str())) {
                required.push(Value::String(a));
            }
        }
        if obj.contains_key("required") {
            obj.insert("required".into(), Value::Array(required));
        } else if !required.is_empty() {
            let at = obj
                .keys()
                .position(|k| k == "properties")
                .map_or(obj.len(), |i| i + 1);
            obj.shift_insert(at, "required".into(), Value::Array(required));
        }
    }

    fn fix_required(&mut self, obj: &mut Map<String, Value>, ptr: &str) {
        // Most `required` lists name only properties: nothing to copy or fix.
        if let (Some(Value::Array(list)), Some(Value::Object(props))) =
            (obj.get("required"), obj.get("properties"))
        {
            if list
                .iter()
                .all(|v| v.as_str().is_some_and(|s| props.contains_key(s)))
            {
                return;
            }
        }
        let props: Option<Vec<String>> = match obj.get("properties") {
            Some(Value::Object(p)) => Some(p.keys().cloned().collect()),
            _ => None,
        };
        let Some(req) = obj.get_mut("required") else {
            return;
        };
        let Value::Array(list) = req else {
            let found = req.to_string();
            obj.shift_remove("required");
            self.warn(
                Code::RequiredMissing,
                &format!("{ptr}/required"),
                format!(
                    "`required: {found}` in `{}` is not a list of names; removed",
                    self.tool
                ),
                "write `required` as an array of property names",
            );
            return;
        };
        let Some(props) = props else { return };
        let mut missing = Vec::new();
        list.retain(|v| match v.as_str() {
            Some(s) if props.iter().any(|p| p == s) => true,
            Some(s) => {
                missing.push(s.to_string());
                false
            }
            None => false,
        });
        for name in missing {
            let hint = match crate::model::diag::nearest(&name, props.iter().map(String::as_str)) {
                Some(n) => format!(
                    "did you mean `{n}`? removed from `required`; fix the name in the definition"
                ),
                None => "removed from `required`: a model cannot supply an argument it cannot see"
                    .into(),
            };
            self.warn(
                Code::RequiredMissing,
                &format!("{ptr}/required"),
                format!(
                    "`required` of `{}` names `{name}`, which is not a property",
                    self.tool
                ),
                &hint,
            );
        }
    }

    fn fix_default(&mut self, obj: &mut Map<String, Value>, ptr: &str) {
        let Some(default) = obj.get("default") else {
            return;
        };
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let type_ok = types.is_empty() || types.iter().any(|t| fits(default, t));
        let enum_ok = match obj.get("enum") {
            Some(Value::Array(e)) => e.contains(default),
            _ => true,
        };
        if type_ok && enum_ok {
            return;
        }
        let why = if !type_ok {
            format!("is not of type {}", types.join(" or "))
        } else {
            "is not one of the `enum` values".to_string()
        };
        let msg = format!(
            "`default` {} in `{}` {why}; dropped",
            super::load::short_json(default),
            self.tool
        );
        obj.shift_remove("default");
        self.warn(
            Code::DefaultMismatch,
            &format!("{ptr}/default"),
            msg,
            "a default must validate against its own schema, or models copy a value the tool rejects",
        );
    }

    fn check_items(&mut self, obj: &Map<String, Value>, ptr: &str) {
        let is_array = match obj.get("type") {
            Some(Value::String(t)) => t == "array",
            Some(Value::Array(a)) => a.iter().any(|v| v == "array"),
            _ => false,
        };
        if is_array && !obj.contains_key("items") && !obj.contains_key("prefixItems") {
            self.warn(
                Code::ArrayWithoutItems,
                ptr,
                format!("an array in `{}` has no `items`", self.tool),
                "say what the array holds (`\"items\": {\"type\": \"string\"}`); some providers reject arrays without `items`",
            );
        }
    }
}

/// Whether a JSON value is an instance of a JSON Schema type.
fn fits(v: &Value, ty: &str) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(mut schema: Value) -> (Value, Vec<Code>) {
        let mut diags = Diagnostics::default();
        normalize_parameters(
            "t",
            &mut schema,
            "/p",
            &|p| Location {
                file: "f".into(),
                pointer: Some(p),
                ..Default::default()
            },
            &mut diags,
        );
        (schema, diags.iter().map(|d| d.code).collect())
    }

    #[test]
    fn bfcl_types_become_json_schema_in_order() {
        let (s, codes) = run(json!({"type": "dict", "properties": {
            "b": {"type": "float"}, "a": {"type": "tuple", "items": {"type": "str"}}, "c": {"type": "any"}
        }, "required": ["b"]}));
        assert_eq!(
            s,
            json!({"type": "object", "properties": {
            "b": {"type": "number"}, "a": {"type": "array", "items": {"type": "string"}}, "c": {}
        }, "required": ["b"]})
        );
        assert_eq!(
            serde_json::to_string(&s["properties"]).unwrap(),
            r#"{"b":{"type":"number"},"a":{"type":"array","items":{"type":"string"}},"c":{}}"#
        );
        assert_eq!(
            codes
                .iter()
                .filter(|c| **c == Code::NonStandardType)
                .count(),
            5
        );
    }

    #[test]
    fn nullable_optional_required_default() {
        let (s, codes) = run(json!({"properties": {
            "x": {"type": "string", "nullable": true, "enum": ["a"]},
            "y": {"type": "integer", "optional": true, "default": "ten"},
            "z": {"type": "boolean", "required": true}
        }, "required": ["x", "y", "ghost"]}));
        assert_eq!(s["type"], "object");
        assert_eq!(
            s["properties"]["x"],
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        assert_eq!(s["properties"]["y"], json!({"type": "integer"}));
        assert_eq!(s["required"], json!(["x", "z"]));
        for c in [
            Code::Nullable,
            Code::OptionalFlag,
            Code::DefaultMismatch,
            Code::RequiredMissing,
            Code::TopLevelType,
        ] {
            assert!(codes.contains(&c), "{c:?} missing from {codes:?}");
        }
    }

    #[test]
    fn clean_schema_is_untouched_and_quiet() {
        let input = json!({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}}, "required": ["ids"], "additionalProperties": false});
        let (s, codes) = run(input.clone());
        assert_eq!(s, input);
        assert!(codes.is_empty());
    }
}
