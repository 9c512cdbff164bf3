//! Each op's schema as typify sees it (the module header of `emit::rust` says why each change):
//! `$defs` namespaced by the op, titles prefixed with its stem, descriptions made rustdoc-safe,
//! `format` / `pattern` / `$schema` / `$id` dropped.

use crate::model::registry::OpRecord;
use crate::model::schema::for_each_subschema_mut;
use heck::ToUpperCamelCase;
use serde_json::{Map, Value};

/// Rustdoc-safe text: fenced blocks become `text` blocks, indented lines are flattened (an
/// indented block is a doctest too), and `[` `]` are escaped (no intra-doc links).
pub fn sanitize_doc(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            out.push(if in_fence {
                "```".to_string()
            } else {
                "```text".to_string()
            });
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            out.push(line.to_string());
        } else {
            out.push(t.replace('[', "\\[").replace(']', "\\]"));
        }
    }
    if in_fence {
        out.push("```".to_string());
    }
    out.join("\n")
}

fn prepare_node(v: &mut Value, stem: &str, rename: &dyn Fn(&str) -> Option<String>) {
    match v {
        Value::Object(obj) => {
            // typify names a titled subschema after its title: prefixed with the op's stem, so
            // two ops' `"title": "Mode"` never name one type (the root's title is set later).
            if let Some(Value::String(t)) = obj.get_mut("title") {
                *t = format!("{stem}{}", t.to_upper_camel_case());
            }
            obj.remove("format");
            obj.remove("pattern");
            obj.remove("$schema");
            obj.remove("$id");
            if let Some(Value::String(d)) = obj.get_mut("description") {
                *d = sanitize_doc(d);
            }
            if let Some(Value::String(r)) = obj.get_mut("$ref") {
                if let Some(new) = rename(r) {
                    *r = new;
                }
            }
            for_each_subschema_mut(obj, |_, sub| prepare_node(sub, stem, rename));
        }
        Value::Array(items) => items.iter_mut().for_each(|i| prepare_node(i, stem, rename)),
        _ => {}
    }
}

/// The schema typify sees for one op.
pub(super) fn prepare(r: &OpRecord, stem: &str) -> Value {
    let mut schema = r.parameters_schema.clone();
    let Some(obj) = schema.as_object_mut() else {
        return schema;
    };
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(d)) = obj.remove(key) {
            for (name, def) in d {
                defs.insert(format!("{stem}{}", name.to_upper_camel_case()), def);
            }
        }
    }
    let rename = |r: &str| {
        ["#/$defs/", "#/definitions/"]
            .iter()
            .find_map(|p| r.strip_prefix(p))
            .map(|name| format!("#/definitions/{stem}{}", name.to_upper_camel_case()))
    };
    prepare_node(&mut schema, stem, &rename);
    let mut defs = Value::Object(defs);
    if let Value::Object(d) = &mut defs {
        for def in d.values_mut() {
            prepare_node(def, stem, &rename);
        }
    }
    let obj = schema.as_object_mut().expect("still an object");
    obj.insert("title".into(), Value::String(format!("{stem}Args")));
    if defs.as_object().is_some_and(|d| !d.is_empty()) {
        obj.insert("definitions".into(), defs);
    }
    schema
}
