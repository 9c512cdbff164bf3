//! The pin of a tool definition: a digest of everything about it that reaches a model or exec.
//!
//! A pin covers a tool's `name`, `title`, `description`, input and output schemas and
//! `annotations`, as the tool's source wrote them (before toolreg normalizes anything), so
//! the same digest is computed from a definitions file at build time and from an upstream's
//! live `tools/list` at run time. Each part has its own digest, so a difference can be named
//! ("description, inputSchema changed") without keeping the text. Keys are sorted before
//! hashing: key order is not a change; every other byte is.

use crate::model::registry::ToolPin;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The parts a pin covers, each with the keys it is read from in the three entry shapes (MCP,
/// OpenAI's `function` object, Anthropic), first found wins.
pub const PINNED_PARTS: &[(&str, &[&str])] = &[
    ("name", &["name"]),
    ("title", &["title"]),
    ("description", &["description"]),
    (
        "inputSchema",
        &["inputSchema", "input_schema", "parameters"],
    ),
    ("outputSchema", &["outputSchema", "output_schema"]),
    ("annotations", &["annotations"]),
];

/// Hex digits of a part's digest kept in a pin (64 bits: enough to tell which part changed;
/// the whole pin's digest is full length).
const PART_HEX: usize = 16;

/// The pin of one tool entry (for OpenAI's nested form, the `function` object). Absent and
/// `null` parts are left out.
pub fn pin(body: &Map<String, Value>) -> ToolPin {
    let mut whole = blake3::Hasher::new();
    let mut parts = BTreeMap::new();
    for (part, keys) in PINNED_PARTS {
        let Some(v) = keys
            .iter()
            .find_map(|k| body.get(*k))
            .filter(|v| !v.is_null())
        else {
            continue;
        };
        let mut hasher = blake3::Hasher::new();
        crate::model::canonical::hash_json(&mut hasher, &crate::model::canonical::Sorted::all(v));
        let hash = hasher.finalize().to_hex();
        // The whole digest covers every part's full digest, named.
        whole.update(part.as_bytes());
        whole.update(b"\0");
        whole.update(hash.as_bytes());
        whole.update(b"\n");
        parts.insert(part.to_string(), format!("b3:{}", &hash[..PART_HEX]));
    }
    ToolPin {
        digest: format!("b3:{}", whole.finalize().to_hex()),
        parts,
    }
}

/// The pin of a tool as an upstream lists it (`None` when the entry is not an object).
pub fn pin_value(tool: &Value) -> Option<ToolPin> {
    tool.as_object().map(pin)
}

/// The parts whose digests differ (a part present on one side only counts), in
/// [`PINNED_PARTS`] order.
pub fn changed_parts(approved: &ToolPin, now: &ToolPin) -> Vec<String> {
    PINNED_PARTS
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| approved.parts.get(*p) != now.parts.get(*p))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_three_shapes_pin_alike_and_key_order_is_no_change() {
        let mcp = pin(&obj(json!({"name": "t", "description": "d",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}})));
        let openai = pin(&obj(json!({"name": "t", "description": "d",
            "parameters": {"properties": {"a": {"type": "string"}}, "type": "object"}})));
        let anthropic = pin(&obj(json!({"description": "d", "name": "t",
            "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}}})));
        assert_eq!(mcp, openai);
        assert_eq!(mcp, anthropic);
        assert_eq!(mcp.digest.len(), 3 + 64);
        assert_eq!(
            mcp.parts.keys().collect::<Vec<_>>(),
            ["description", "inputSchema", "name"]
        );
    }

    #[test]
    fn every_part_is_covered_and_named_when_it_changes() {
        let base = json!({"name": "t", "title": "T", "description": "d",
            "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}});
        let before = pin_value(&base).unwrap();
        for (part, _) in PINNED_PARTS {
            let mut changed = base.clone();
            changed[*part] = json!("something else");
            let after = pin_value(&changed).unwrap();
            assert_ne!(before.digest, after.digest, "{part}");
            assert_eq!(changed_parts(&before, &after), [part.to_string()]);
        }
        // A part that appears or disappears is a change too; one byte of whitespace as well.
        let mut fewer = base.clone();
        fewer.as_object_mut().unwrap().remove("title");
        assert_eq!(
            changed_parts(&before, &pin_value(&fewer).unwrap()),
            ["title"]
        );
        let mut spaced = base.clone();
        spaced["description"] = json!("d ");
        assert_eq!(
            changed_parts(&before, &pin_value(&spaced).unwrap()),
            ["description"]
        );
        // Fields a pin does not cover (`_meta`, `icons`) change nothing.
        let mut meta = base.clone();
        meta["_meta"] = json!({"x": 1});
        assert_eq!(pin_value(&meta).unwrap(), before);
    }
}
