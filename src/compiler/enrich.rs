//! Enrich: what toolreg derives from a classified tool beyond its op: the one-line summary and
//! the provider-safe name. (Policy drafts, examples and argument tables grow here.)

/// The longest provider-valid tool name.
pub const PROVIDER_NAME_MAX: usize = 64;

/// Whether every major provider accepts a tool name (`^[a-zA-Z0-9_-]{1,64}$`).
pub fn provider_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= PROVIDER_NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A provider-valid name for `name`: other characters become `_` (runs collapsed), and a name
/// still over 64 characters keeps its first 55 plus `_` and 8 hex of its blake3 hash, so two long
/// names stay distinct. Valid names are returned unchanged.
pub fn provider_name(name: &str) -> String {
    if provider_valid(name) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let trimmed = out.trim_matches('_');
    let mut out = if trimmed.is_empty() {
        "tool".to_string()
    } else {
        trimmed.to_string()
    };
    if out.len() > PROVIDER_NAME_MAX {
        let hash = blake3::hash(name.as_bytes()).to_hex();
        out.truncate(55);
        out = format!("{}_{}", out.trim_end_matches('_'), &hash[..8]);
    }
    out
}

/// The longest summary, in characters.
const SUMMARY_MAX: usize = 200;

/// The first sentence of a description, cut at a word boundary past 200 characters.
pub fn summary(description: &str) -> String {
    crate::model::text::truncate_words(
        &crate::model::text::first_sentence(description),
        SUMMARY_MAX,
    )
}

/// Display type of a schema: `string`, `integer`, `string|number`, `array<string>`, `any`.
pub fn display_type(schema: &serde_json::Value) -> String {
    use serde_json::Value;
    let base = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => {
            for key in ["anyOf", "oneOf"] {
                if let Some(vs) = schema.get(key).and_then(Value::as_array) {
                    let parts: Vec<String> = vs.iter().map(display_type).collect();
                    return parts.join("|");
                }
            }
            if schema.get("$ref").is_some() {
                return "object".into();
            }
            if schema.get("enum").is_some() {
                return "enum".into();
            }
            "any".into()
        }
    };
    if base == "array" {
        if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            return format!("array<{}>", display_type(items));
        }
    }
    base
}

/// The top-level argument table, in declared order.
pub fn args(schema: &serde_json::Value) -> Vec<crate::model::registry::Arg> {
    use serde_json::Value;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, s)| {
            let num = |k: &str| s.get(k).and_then(Value::as_f64).map(|n| n.to_string());
            let range = match (num("minimum"), num("maximum")) {
                (None, None) => None,
                (lo, hi) => Some(format!(
                    "{}..{}",
                    lo.unwrap_or_default(),
                    hi.unwrap_or_default()
                )),
            };
            crate::model::registry::Arg {
                name: name.clone(),
                type_: display_type(s),
                required: required.contains(&name.as_str()),
                default: s.get("default").cloned(),
                enum_: s.get("enum").and_then(Value::as_array).cloned(),
                range,
                description: s
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            }
        })
        .collect()
}

/// Arguments that carry ids of records: `id`, `*_id`, `*_ids`.
pub fn id_args(args: &[crate::model::registry::Arg]) -> Vec<String> {
    args.iter()
        .filter(|a| a.name == "id" || a.name.ends_with("_id") || a.name.ends_with("_ids"))
        .map(|a| a.name.clone())
        .collect()
}

/// The entity an id argument refers to (`task_id` -> `task`, `document_ids` -> `document`).
pub fn id_entity(arg: &str) -> Option<&str> {
    arg.strip_suffix("_ids")
        .or_else(|| arg.strip_suffix("_id"))
        .filter(|e| !e.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names() {
        assert_eq!(provider_name("list_onto_tasks"), "list_onto_tasks");
        assert_eq!(provider_name("math.factorial"), "math_factorial");
        assert_eq!(provider_name("Summarize Detection"), "Summarize_Detection");
        assert_eq!(provider_name("  weird..name!! "), "weird_name");
        let long = "a".repeat(80);
        let p = provider_name(&long);
        assert!(provider_valid(&p) && p.len() == 64, "{p}");
        assert_ne!(p, provider_name(&"a".repeat(81)));
    }
}
