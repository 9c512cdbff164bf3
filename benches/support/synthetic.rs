//! Synthetic catalogs with realistic schemas for the benchmarks: nested objects, arrays of
//! objects, enums, defaults, 300-700 character descriptions, and an overlay of 120 ordered rules.
#![allow(dead_code)]

use std::path::Path;

pub const VERBS: [(&str, &str); 6] = [
    ("list", "read"),
    ("search", "read"),
    ("get", "read"),
    ("create", "write"),
    ("update", "write"),
    ("delete", "write"),
];
pub const GROUPS: [&str; 20] = [
    "crm",
    "billing",
    "support",
    "inventory",
    "hr",
    "fleet",
    "docs",
    "analytics",
    "mail",
    "chat",
    "calendar",
    "storage",
    "auth",
    "search",
    "shop",
    "ads",
    "legal",
    "devops",
    "learning",
    "travel",
];
pub const NOUNS: [&str; 12] = [
    "contact", "invoice", "ticket", "item", "employee", "vehicle", "page", "report", "message",
    "channel", "booking", "asset",
];

pub fn entity(i: usize) -> String {
    format!("{}{}", NOUNS[i % NOUNS.len()], i / NOUNS.len())
}

fn description(verb: &str, ent: &str, group: &str, n: usize) -> String {
    let mut d = format!(
        "{} {ent} records in the {group} service. Use when the user asks about a {ent} by name or id; \
         prefer the search variant when you only have words to match. Returns ids you can pass to \
         the other {ent} tools. Do not call this in a loop: it accepts filters and paging. ",
        match verb {
            "list" => "List",
            "search" => "Search",
            "get" => "Get one of the",
            "create" => "Create",
            "update" => "Update",
            _ => "Delete",
        }
    );
    for k in 0..(n % 4) {
        d.push_str(&format!(
            "Note {k}: results are scoped to the caller's workspace and respect sharing rules. "
        ));
    }
    d
}

fn schema(verb: &str, ent: &str, n: usize) -> serde_json::Value {
    use serde_json::json;
    let id = format!("{ent}_id");
    let mut props = serde_json::Map::new();
    let mut required = vec![];
    if matches!(verb, "get" | "update" | "delete") {
        props.insert(
            id.clone(),
            json!({"type": "string", "description": format!("{ent} id (UUID).")}),
        );
        required.push(id);
    }
    if verb == "search" {
        props.insert(
            "query".into(),
            json!({"type": "string", "description": "Words to match.", "minLength": 1}),
        );
        required.push("query".into());
    }
    props.insert("state".into(), json!({"type": "string", "enum": ["draft", "active", "archived"], "description": "State filter or new state."}));
    props.insert("limit".into(), json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "Page size."}));
    if matches!(verb, "create" | "update") {
        props.insert(
            "title".into(),
            json!({"type": "string", "description": "Display title.", "maxLength": 200}),
        );
        props.insert("owner".into(), json!({"type": "object", "description": "Who owns it.", "properties": {
            "user_id": {"type": "string"}, "team": {"type": "string", "enum": ["a", "b", "c"]}}, "required": ["user_id"], "additionalProperties": false}));
        props.insert("lines".into(), json!({"type": "array", "description": "Line items.", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}, "price": {"type": ["number", "string"]}}, "required": ["sku"]}}));
        props.insert(
            "tags".into(),
            json!({"type": "array", "items": {"type": "string"}, "description": "Labels."}),
        );
    }
    if n.is_multiple_of(5) {
        props.insert("metadata".into(), json!({"type": "object", "additionalProperties": {"type": "string"}, "description": "Free-form metadata."}));
    }
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// Writes a catalog of `n` tools (100 per file) and its overlay.
pub fn write_catalog(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let per_group_entities = n.div_ceil(GROUPS.len() * VERBS.len());
    let mut overlay = String::from("[registry]\nname = \"synthetic\"\n\n");
    for g in GROUPS {
        overlay.push_str(&format!("[groups.{g}]\nsummary = \"The {g} service.\"\n\n"));
    }
    overlay.push_str("[entities]\n");
    for e in 0..per_group_entities {
        let ent = entity(e);
        overlay.push_str(&format!("{ent} = \"{ent}s\"\n"));
    }
    for g in GROUPS {
        for (verb, kind) in VERBS {
            let (pat, op) = if verb == "list" || verb == "search" {
                (
                    format!("{verb}_{g}_{{entities}}"),
                    format!("{g}.{{entity}}.{verb}"),
                )
            } else {
                (
                    format!("{verb}_{g}_{{entity}}"),
                    format!("{g}.{{entity}}.{verb}"),
                )
            };
            overlay.push_str(&format!(
                "\n[[rules]]\npattern = \"{pat}\"\nop = \"{op}\"\nkind = \"{kind}\"\n"
            ));
        }
    }
    std::fs::write(dir.join("toolreg.toml"), overlay).unwrap();
    let mut tools = Vec::new();
    'outer: for e in 0..per_group_entities {
        for g in GROUPS {
            for (verb, _) in VERBS {
                if tools.len() == n {
                    break 'outer;
                }
                let ent = entity(e);
                let name = if verb == "list" || verb == "search" {
                    format!("{verb}_{g}_{ent}s")
                } else {
                    format!("{verb}_{g}_{ent}")
                };
                let i = tools.len();
                tools.push(serde_json::json!({"type": "function", "function": {
                    "name": name, "description": description(verb, &ent, g, i), "parameters": schema(verb, &ent, i)}}));
            }
        }
    }
    for (k, chunk) in tools.chunks(100).enumerate() {
        let text = serde_json::to_string_pretty(chunk).unwrap();
        std::fs::write(dir.join(format!("tools-{k:04}.json")), text).unwrap();
    }
}
