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
    for key in MAPS {
        if let Some(Value::Object(map)) = obj.get_mut(key) {
            for (name, sub) in map.iter_mut() {
                f(
                    format!("/{key}/{}", name.replace('~', "~0").replace('/', "~1")),
                    sub,
                );
            }
        }
    }
    for key in SINGLES {
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
    for key in LISTS {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            for (i, sub) in list.iter_mut().enumerate() {
                f(format!("/{key}/{i}"), sub);
            }
        }
    }
}
