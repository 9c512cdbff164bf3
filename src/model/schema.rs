//! JSON Schema structure shared by the compiler and the surfaces: where subschemas live.

use serde_json::{Map, Value};

/// The names a schema object lists in `required` (strings only; anything else is ignored).
pub fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Keywords whose value is a map of name -> subschema.
const MAPS: [&str; 4] = ["properties", "patternProperties", "$defs", "definitions"];
/// Keywords whose value is one subschema (`items` may also be a list, draft-4 tuples).
const SINGLES: [&str; 7] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
];
/// Keywords whose value is a list of subschemas.
const LISTS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];

/// Calls `f` on every direct subschema of a schema object, with the JSON pointer suffix that
/// leads to it (`/properties/name`, `/items`, `/anyOf/0`).
pub fn for_each_subschema_mut(obj: &mut Map<String, Value>, mut f: impl FnMut(String, &mut Value)) {
    // Which keywords the object has, from one pass over its keys: most schema objects are
    // leaves with none, and a lookup per keyword hashes the keyword (fifteen per node).
    let mut present = [false; MAPS.len() + SINGLES.len() + LISTS.len()];
    let keywords = MAPS.iter().chain(&SINGLES).chain(&LISTS);
    for key in obj.keys() {
        if let Some(i) = keywords.clone().position(|k| k == key) {
            present[i] = true;
        }
    }
    let (maps, rest) = present.split_at(MAPS.len());
    let (singles, lists) = rest.split_at(SINGLES.len());
    for (key, _) in MAPS.into_iter().zip(maps).filter(|(_, p)| **p) {
        if let Some(Value::Object(map)) = obj.get_mut(key) {
            for (name, sub) in map.iter_mut() {
                // Escaped per RFC 6901; most names need no escape and no copy.
                let ptr = if name.contains(['~', '/']) {
                    format!("/{key}/{}", name.replace('~', "~0").replace('/', "~1"))
                } else {
                    format!("/{key}/{name}")
                };
                f(ptr, sub);
            }
        }
    }
    for (key, _) in SINGLES.into_iter().zip(singles).filter(|(_, p)| **p) {
        match obj.get_mut(key) {
            Some(sub @ Value::Object(_)) => f(format!("/{key}"), sub),
            Some(Value::Array(list)) if key == "items" => {
                for (i, sub) in list.iter_mut().enumerate() {
                    f(format!("/{key}/{i}"), sub);
                }
            }
            _ => {}
        }
    }
    for (key, _) in LISTS.into_iter().zip(lists).filter(|(_, p)| **p) {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            for (i, sub) in list.iter_mut().enumerate() {
                f(format!("/{key}/{i}"), sub);
            }
        }
    }
}

/// The top-level combinators a provider refuses but a tool may need ("give `id` or `name`").
const COMBINATORS: [&str; 3] = ["anyOf", "oneOf", "allOf"];

/// What a schema's top-level `anyOf` / `oneOf` / `allOf` require, in words a model can follow
/// ("Give exactly one of: `id`; `name`."), or `None` when it has none. Shown in the provider
/// surfaces' descriptions and on help pages, because the projection a provider receives cannot
/// say it.
pub fn top_level_constraint(schema: &Value) -> Option<String> {
    let mut parts = Vec::new();
    for key in COMBINATORS {
        let Some(Value::Array(branches)) = schema.get(key) else {
            continue;
        };
        let sets: Vec<String> = branches.iter().map(branch_words).collect();
        let lead = match key {
            "oneOf" => "Give exactly one of",
            "anyOf" => "Give at least one of",
            _ => "Give all of",
        };
        parts.push(format!("{lead}: {}.", sets.join("; ")));
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// A branch in words: its required arguments, else its arguments, else `another shape`.
fn branch_words(branch: &Value) -> String {
    let names: Vec<&str> = match required(branch) {
        r if !r.is_empty() => r,
        _ => branch
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default(),
    };
    if names.is_empty() {
        return "another shape (see the help page)".into();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The provider-safe projection of a schema with a top-level `anyOf` / `oneOf` / `allOf`: one
/// object with the union of every branch's properties (the first definition of a name wins);
/// `required` keeps what every alternative requires (and, for `allOf`, what any part requires).
/// `None` when the schema has no such combinator. Exec keeps validating against the original.
pub fn provider_projection(schema: &Value) -> Option<Value> {
    let Value::Object(top) = schema else {
        return None;
    };
    if !COMBINATORS.iter().any(|k| top.contains_key(*k)) {
        return None;
    }
    let mut out = top.clone();
    let mut props = match out.shift_remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut req: Vec<String> = required(schema).iter().map(|s| s.to_string()).collect();
    for key in COMBINATORS {
        let Some(Value::Array(branches)) = out.shift_remove(key) else {
            continue;
        };
        let mut common: Option<Vec<String>> = None;
        for b in &branches {
            if let Some(Value::Object(bp)) = b.get("properties") {
                for (name, sub) in bp {
                    props.entry(name.clone()).or_insert_with(|| sub.clone());
                }
            }
            let r: Vec<String> = required(b).iter().map(|s| s.to_string()).collect();
            if key == "allOf" {
                req.extend(r);
            } else {
                common = Some(match common {
                    None => r,
                    Some(c) => c.into_iter().filter(|n| r.contains(n)).collect(),
                });
            }
        }
        req.extend(common.unwrap_or_default());
    }
    let mut seen = std::collections::BTreeSet::new();
    req.retain(|n| props.contains_key(n) && seen.insert(n.clone()));
    out.insert("type".into(), Value::String("object".into()));
    out.insert("properties".into(), Value::Object(props));
    if req.is_empty() {
        out.shift_remove("required");
    } else {
        out.insert(
            "required".into(),
            Value::Array(req.into_iter().map(Value::String).collect()),
        );
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn id_or_name_is_projected_to_one_object_and_said_in_words() {
        let s = json!({
            "type": "object",
            "properties": {"verbose": {"type": "boolean"}},
            "oneOf": [
                {"properties": {"id": {"type": "string"}}, "required": ["id"]},
                {"properties": {"name": {"type": "string"}}, "required": ["name"]}
            ],
            "additionalProperties": false
        });
        let p = provider_projection(&s).unwrap();
        assert_eq!(
            p,
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {"verbose": {"type": "boolean"}, "id": {"type": "string"}, "name": {"type": "string"}}
            })
        );
        assert_eq!(
            top_level_constraint(&s).unwrap(),
            "Give exactly one of: `id`; `name`."
        );
        assert!(provider_projection(&json!({"type": "object"})).is_none());
    }

    #[test]
    fn all_of_requires_what_any_part_requires() {
        let s = json!({"allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]}
        ]});
        let p = provider_projection(&s).unwrap();
        assert_eq!(p["required"], json!(["a", "b"]));
        assert_eq!(p["type"], "object");
    }
}
