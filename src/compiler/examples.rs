//! Examples: a minimal valid call synthesized from the schema (required arguments only, typed
//! placeholders), and validation of every example, authored or synthesized, against its schema.
//!
//! Placeholders follow the name and type: `"<task_id>"` for strings, the first enum value, the
//! default where one exists, a number within bounds, sample values for common string formats.

use crate::compiler::bounded::Bounded;
use serde_json::{json, Map, Value};

/// A minimal call for an op's parameters schema.
pub fn synthesize(schema: &Value) -> Value {
    let mut args = Map::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Value::Object(args);
    };
    let mut left = MAX_VALUES;
    for name in crate::model::schema::required(schema) {
        if let Some(sub) = props.get(name) {
            args.insert(
                name.to_string(),
                placeholder(name, sub, schema, 0, &mut left),
            );
        }
    }
    Value::Object(args)
}

/// Follows a local `$ref` (`#/$defs/x`, `#/definitions/x`).
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut s = schema;
    for _ in 0..8 {
        match s
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        {
            Some(ptr) => match root.pointer(ptr) {
                Some(t) => s = t,
                None => return s,
            },
            None => return s,
        }
    }
    s
}

fn first_type(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or(Some("null")),
        _ => None,
    }
}

fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2026-01-15T09:00:00Z",
        "date" => "2026-01-15",
        "time" => "09:00:00Z",
        "email" => "user@example.com",
        "uri" | "url" | "iri" => "https://example.com",
        "uuid" => "00000000-0000-0000-0000-000000000000",
        "ipv4" => "192.0.2.1",
        "hostname" => "example.com",
        _ => return None,
    })
}

fn number_in_bounds(schema: &Value, integer: bool) -> Value {
    let get = |k: &str| schema.get(k).and_then(Value::as_f64);
    let low = get("minimum").or(get("exclusiveMinimum").map(|m| {
        if integer {
            m.floor() + 1.0
        } else {
            m + 0.5
        }
    }));
    let high = get("maximum").or(get("exclusiveMaximum").map(|m| {
        if integer {
            m.ceil() - 1.0
        } else {
            m - 0.5
        }
    }));
    let mut v = low.unwrap_or(1.0);
    if let Some(h) = high {
        if v > h {
            v = h;
        }
    }
    if let Some(step) = get("multipleOf").filter(|s| *s > 0.0) {
        v = (v / step).ceil() * step;
    }
    if integer || v.fract() == 0.0 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// Limits on what a synthesized example may hold, whatever the schema asks: a schema that needs
/// more (`minLength: 10^12`, nested `minItems`) gets a capped example that fails validation, and
/// so TR041 ("write one"), instead of a hang or an allocation failure.
const MAX_STRING_CHARS: usize = 1024;
const MAX_ARRAY_ITEMS: u64 = 64;
const MAX_VALUES: usize = 10_000;

/// A placeholder value for one schema; `left` is how many values the example may still hold.
fn placeholder(name: &str, schema: &Value, root: &Value, depth: usize, left: &mut usize) -> Value {
    if *left == 0 {
        return Value::Null;
    }
    *left -= 1;
    let schema = resolve(schema, root);
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    if let Some(e) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.iter().find(|v| !v.is_null()))
    {
        return e.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = schema.get(key).and_then(Value::as_array) {
            let pick = variants
                .iter()
                .find(|v| first_type(resolve(v, root)) != Some("null"))
                .or(variants.first());
            if let Some(v) = pick {
                return placeholder(name, v, root, depth + 1, left);
            }
        }
    }
    if depth > 6 {
        return Value::Null;
    }
    match first_type(schema) {
        Some("string") => {
            if let Some(s) = schema
                .get("format")
                .and_then(Value::as_str)
                .and_then(format_sample)
            {
                return json!(s);
            }
            let mut s = format!("<{name}>");
            let min = schema
                .get("minLength")
                .and_then(Value::as_u64)
                .map_or(0, |m| usize::try_from(m).unwrap_or(usize::MAX))
                .min(MAX_STRING_CHARS);
            let have = s.chars().count();
            if have < min {
                s.push_str(&"_".repeat(min - have));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                s = s.chars().take(max as usize).collect();
            }
            json!(s)
        }
        Some("integer") => number_in_bounds(schema, true),
        Some("number") => number_in_bounds(schema, false),
        Some("boolean") => json!(false),
        Some("null") => Value::Null,
        Some("array") => {
            let n = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, MAX_ARRAY_ITEMS);
            let item_name = name.strip_suffix('s').unwrap_or(name);
            let items = schema
                .get("items")
                .cloned()
                .unwrap_or(json!({"type": "string"}));
            let unique = schema.get("uniqueItems") == Some(&json!(true));
            let mut list: Vec<Value> = Vec::new();
            for i in 0..n {
                let v = placeholder(item_name, &items, root, depth + 1, left);
                list.push(match (&v, unique && i > 0) {
                    (Value::String(s), true) => json!(format!("{s}{i}")),
                    _ => v,
                });
            }
            Value::Array(list)
        }
        Some("object") => {
            let mut obj = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for req in crate::model::schema::required(schema) {
                    if let Some(sub) = props.get(req) {
                        obj.insert(
                            req.to_string(),
                            placeholder(req, sub, root, depth + 1, left),
                        );
                    }
                }
            }
            Value::Object(obj)
        }
        _ => json!(format!("<{name}>")),
    }
}

/// One validation failure: where in the arguments, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// JSON pointer into the arguments (`""` for the whole object).
    pub pointer: String,
    pub message: String,
}

/// Validates `args` against `schema`; every failure, or an error if the schema does not compile.
///
/// Each distinct (schema, arguments) pair is validated once per thread: fleets repeat whole
/// parameter lists (a third of a public REST fleet's schemas are copies), and compiling the
/// validator was most of the cost. The key is both values' JSON text, so a hit is exact.
pub fn validate(schema: &Value, args: &Value) -> Result<Vec<Invalid>, String> {
    type Outcome = Result<Vec<Invalid>, String>;
    thread_local!(static SEEN: std::cell::RefCell<Bounded<Outcome>> =
        std::cell::RefCell::new(Bounded::new(usize::MAX, 64 << 20)));
    let mut key = serde_json::to_string(schema).expect("a Value serializes");
    key.push('\0');
    key.push_str(&serde_json::to_string(args).expect("a Value serializes"));
    SEEN.with(|s| s.borrow_mut().get_or(&key, || validate_now(schema, args)))
}

fn validate_now(schema: &Value, args: &Value) -> Result<Vec<Invalid>, String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
    Ok(validator
        .iter_errors(args)
        .map(|e| Invalid {
            pointer: e.instance_path().as_str().to_string(),
            message: e.to_string(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_only_with_typed_placeholders() {
        let schema = json!({"type": "object", "properties": {
            "task_id": {"type": "string"},
            "state_key": {"type": "string", "enum": ["todo", "done"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            "due": {"type": "string", "format": "date-time"},
            "score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "ids": {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": true},
            "owner": {"type": "object", "properties": {"user_id": {"type": "string"}, "x": {"type": "string"}}, "required": ["user_id"]},
            "value": {"type": ["string", "number"]},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]},
            "optional": {"type": "string"}
        }, "required": ["task_id", "state_key", "limit", "due", "score", "ids", "owner", "value", "maybe"]});
        let args = synthesize(&schema);
        assert_eq!(
            args,
            json!({
                "task_id": "<task_id>", "state_key": "todo", "limit": 20, "due": "2026-01-15T09:00:00Z",
                "score": 0.5, "ids": ["<id>", "<id>1"], "owner": {"user_id": "<user_id>"}, "value": "<value>", "maybe": 5
            })
        );
        assert_eq!(validate(&schema, &args).unwrap(), vec![]);
    }

    #[test]
    fn refs_and_empty_schemas() {
        let schema = json!({"type": "object", "$defs": {"Color": {"type": "string", "enum": ["red"]}},
            "properties": {"c": {"$ref": "#/$defs/Color"}}, "required": ["c"]});
        assert_eq!(synthesize(&schema), json!({"c": "red"}));
        // Whatever the schema asks, the example stays small (and then fails validation: TR041).
        let huge = json!({"type": "object", "required": ["s", "a", "deep"], "properties": {
            "s": {"type": "string", "minLength": 1_000_000_000_000_u64},
            "a": {"type": "array", "minItems": 1_000_000_000_000_u64},
            "deep": {"type": "array", "minItems": 1000, "items": {"type": "array", "minItems": 1000,
                "items": {"type": "array", "minItems": 1000, "items": {"type": "string"}}}}}});
        let args = synthesize(&huge);
        assert_eq!(args["s"].as_str().unwrap().len(), MAX_STRING_CHARS);
        assert_eq!(args["a"].as_array().unwrap().len() as u64, MAX_ARRAY_ITEMS);
        assert!(
            args.to_string().len() < 1_000_000,
            "bounded by the value budget"
        );
        assert!(!validate(&huge, &args).unwrap().is_empty());
        assert_eq!(
            synthesize(&json!({"type": "object", "properties": {}})),
            json!({})
        );
    }

    #[test]
    fn validation_names_the_field() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false});
        let errs = validate(&schema, &json!({"n": "x", "extra": 1})).unwrap();
        assert!(errs.iter().any(|e| e.pointer == "/n"), "{errs:?}");
        assert_eq!(errs.len(), 2);
    }
}
