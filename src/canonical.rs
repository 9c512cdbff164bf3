//! Canonical JSON: the one way toolreg turns values into bytes.
//!
//! Artifacts are pretty-printed with 2-space indents, LF line endings and a final newline. Keys
//! are sorted, except inside subtrees whose key is listed as order-preserving (parameter schemas
//! keep the order their author wrote, for docs). The version hash sorts everything.

use serde_json::{Map, Value};

/// A copy of `v` with every object's keys sorted, except the values of keys in `keep_order`,
/// which are copied as they are.
pub fn sort_keys_except(v: &Value, keep_order: &[&str]) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for k in keys {
                let child = &map[k];
                let child = if keep_order.contains(&k.as_str()) {
                    child.clone()
                } else {
                    sort_keys_except(child, keep_order)
                };
                out.insert(k.clone(), child);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| sort_keys_except(i, keep_order))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A copy of `v` with every object's keys sorted.
pub fn sort_keys(v: &Value) -> Value {
    sort_keys_except(v, &[])
}

/// Pretty JSON text: 2-space indent, LF, final newline.
pub fn to_pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON values always serialize");
    s.push('\n');
    s
}

/// Compact JSON text of the fully sorted value: the hash input.
pub fn to_hash_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(&sort_keys(v)).expect("JSON values always serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_all_but_kept_subtrees() {
        let v = json!({"b": 1, "a": {"z": 1, "y": 2}, "schema": {"z": 1, "y": 2}});
        let s = to_pretty(&sort_keys_except(&v, &["schema"]));
        assert_eq!(
            s,
            "{\n  \"a\": {\n    \"y\": 2,\n    \"z\": 1\n  },\n  \"b\": 1,\n  \"schema\": {\n    \"z\": 1,\n    \"y\": 2\n  }\n}\n"
        );
        assert_eq!(
            to_hash_bytes(&v),
            br#"{"a":{"y":2,"z":1},"b":1,"schema":{"y":2,"z":1}}"#
        );
    }
}
