//! What the generated TypeScript and Python clients need, besides a validator, to check
//! arguments the way the runtime's `exec` does: per op, the object levels its schema declares
//! with `properties` (names, required names, whether the level is closed or opened on purpose),
//! so a client finds unknown names, drops the undeclared ones and turns a near miss of a missing
//! required name into an error (`runtime::validate::unknown_arguments` and `strip_undeclared`).
//!
//! Shape of one level, as compact JSON both clients read:
//! `{"p": {"name": <level or null>}, "r": ["required"], "x": "closed" | "open"}`; `x` is absent
//! when the schema says nothing about extra names (they are dropped, with a warning).

use crate::model::registry::OpRecord;
use serde_json::{json, Map, Value};

/// Nesting the runtime inspects (its walks stop at the same depth).
const MAX_DEPTH: usize = 32;

/// The shape of an op's arguments (the provider projection of a top-level combinator, as the
/// runtime walks it), or `null` when its schema declares no properties.
pub fn of(record: &OpRecord) -> Value {
    let projected = crate::model::schema::provider_projection(&record.parameters_schema);
    level(projected.as_ref().unwrap_or(&record.parameters_schema), 0)
}

fn level(schema: &Value, depth: usize) -> Value {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Value::Null;
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    let p: Map<String, Value> = props
        .iter()
        .map(|(name, sub)| (name.clone(), level(sub, depth + 1)))
        .collect();
    let mut out = json!({"p": p, "r": crate::model::schema::required(schema)});
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        out["x"] = json!("closed");
    } else if schema.get("additionalProperties").is_some()
        || schema.get("patternProperties").is_some()
    {
        out["x"] = json!("open");
    }
    out
}

/// The op table both clients carry: tool name, kind, argument aliases, whether unknown names
/// pass, required top-level names and the shape.
pub fn op_table(record: &OpRecord) -> Value {
    let mut entry = json!({
        "tool": record.tool_name,
        "kind": record.kind.as_str(),
        "required": record.required_args,
        "shape": of(record),
    });
    if !record.arg_aliases.is_empty() {
        entry["aliases"] = json!(record.arg_aliases);
    }
    if record.pass_unknown_arguments {
        entry["pass_unknown"] = json!(true);
    }
    entry
}

/// Tool names more than one op carries (a fleet's servers each with a `search`): a map from
/// tool name to op leaves them out, as they name no one op.
pub fn shared_tool_names(
    reg: &crate::model::registry::Registry,
) -> std::collections::BTreeSet<&str> {
    let mut seen = std::collections::BTreeSet::new();
    let mut shared = std::collections::BTreeSet::new();
    for r in reg.ops.values() {
        if !seen.insert(r.tool_name.as_str()) {
            shared.insert(r.tool_name.as_str());
        }
    }
    shared
}
