//! The model-facing tool surfaces, as pure functions of the registry IR:
//!
//! - the gateway: `help`, `exec` and `search` tools whose enums and examples all come from the
//!   registry (nothing hand-written), for large catalogs;
//! - direct definitions: every visible op as a provider-ready tool (provider-safe name, normalized
//!   schema), for loading on demand;
//! - profiles: per-context subsets of direct definitions; `core` ops keep their description,
//!   deferred ops get their summary and a pointer to their help page.
//!
//! The surfaces emitter writes these, the provider lints check them, the report counts them.

use crate::model::registry::{OpRecord, Registry};
use serde_json::{json, Value};
use std::borrow::Cow;

/// One provider-ready tool definition.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef<'a> {
    pub name: String,
    pub description: String,
    /// Borrowed from the op's record where the provider takes it as written (most ops): a copy
    /// of every schema per surface was a tenth of a 10,000-tool build's memory.
    pub parameters: Cow<'a, Value>,
    /// The op it runs (`None` for gateway tools).
    pub op: Option<String>,
}

impl ToolDef<'_> {
    /// The OpenAI / ChatToolDefinition form.
    pub fn to_chat_tool(&self) -> Value {
        json!({
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters}
        })
    }
}

/// The tools array a provider receives for a list of definitions.
pub fn tools_json(defs: &[ToolDef<'_>]) -> Value {
    Value::Array(defs.iter().map(ToolDef::to_chat_tool).collect())
}

/// [`tools_json`] as compact text, written straight from the definitions: at 10,000 ops the
/// array as a `Value` was another copy of every schema.
pub fn tools_text(defs: &[ToolDef<'_>]) -> String {
    // Sized up front (a tool's compact form is about 1 KB on the fleet catalogs): grown by
    // doubling, the text was copied and faulted in twice over. Room not used is never touched.
    let mut bytes = Vec::with_capacity(1024 + defs.len() * 2048);
    match serde_json::to_writer(&mut bytes, &ChatTools(defs)) {
        Ok(()) => String::from_utf8(bytes).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The tools array of [`tools_json`], serializable without building it: each tool's keys in
/// the order `to_chat_tool` writes them.
pub struct ChatTools<'a>(pub &'a [ToolDef<'a>]);

impl serde::Serialize for ChatTools<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(ChatTool))
    }
}

/// One tool of [`ChatTools`] (an element of the array), serializable alone.
pub struct ChatTool<'a>(pub &'a ToolDef<'a>);

impl serde::Serialize for ChatTool<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(serde::Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        let d = self.0;
        Tool {
            kind: "function",
            function: Function {
                name: &d.name,
                description: &d.description,
                parameters: &d.parameters,
            },
        }
        .serialize(s)
    }
}

/// A direct definition. A schema with a top-level `anyOf` / `oneOf` / `allOf` (which providers
/// refuse) is sent as its projection, one object, and the description says the constraint;
/// exec still validates against the schema as written.
fn direct_def(r: &OpRecord, description: String) -> ToolDef<'_> {
    match crate::model::schema::provider_projection(&r.parameters_schema) {
        Some(parameters) => {
            let constraint = crate::model::schema::top_level_constraint(&r.parameters_schema);
            let description = match constraint {
                Some(c) if description.is_empty() => c,
                Some(c) => format!("{} {c}", description.trim_end()),
                None => description,
            };
            ToolDef {
                name: r.provider_name.clone(),
                description,
                parameters: Cow::Owned(parameters),
                op: Some(r.op.clone()),
            }
        }
        None => ToolDef {
            name: r.provider_name.clone(),
            description,
            parameters: Cow::Borrowed(&r.parameters_schema),
            op: Some(r.op.clone()),
        },
    }
}

/// One op's direct definition, with its full description.
pub fn direct_def_full(r: &OpRecord) -> ToolDef<'_> {
    direct_def(r, r.description.clone())
}

/// Every visible op with its full description, in op order.
pub fn direct(reg: &Registry) -> Vec<ToolDef<'_>> {
    reg.ops
        .values()
        .filter(|r| !r.hidden)
        .map(direct_def_full)
        .collect()
}

/// A profile's definitions: core ops in full; the rest deferred: their summary and a pointer to
/// their help page, and their schema without argument descriptions (the help page has them; the
/// runtime validates against the full schema). When any op is deferred, the gateway's help tool
/// comes along so the pointer can be followed.
pub fn profile<'r>(reg: &'r Registry, name: &str) -> Vec<ToolDef<'r>> {
    let Some(p) = reg.profiles.get(name) else {
        return Vec::new();
    };
    let mut out: Vec<ToolDef<'r>> = p
        .ops
        .iter()
        .filter_map(|op| reg.ops.get(op))
        .map(|r| {
            if p.core.contains(&r.op) {
                direct_def_full(r)
            } else {
                let mut def = direct_def(r, deferred_description(reg, r));
                strip_descriptions(def.parameters.to_mut());
                def
            }
        })
        .collect();
    if p.ops.len() > p.core.len() {
        out.push(help_tool(reg));
    }
    out
}

/// A deferred op's description: its summary and where to read the rest; the original when that
/// is no longer.
pub fn deferred_description(reg: &Registry, r: &OpRecord) -> String {
    let deferred = format!(
        "{} Before the first call, read {} {{\"path\": \"{}\"}} for arguments and rules.",
        r.summary, reg.gateway.help, r.op
    );
    if r.description.chars().count() <= deferred.chars().count() {
        r.description.clone()
    } else {
        deferred
    }
}

/// Removes `description` keywords from a schema and every subschema (not properties that happen
/// to be named "description").
pub fn strip_descriptions(schema: &mut Value) {
    let Value::Object(node) = schema else { return };
    node.shift_remove("description");
    crate::model::schema::for_each_subschema_mut(node, |_, sub| strip_descriptions(sub));
}

fn groups(reg: &Registry) -> Vec<&str> {
    reg.tree.keys().map(String::as_str).collect()
}

/// The groups as the help tool's description names them: all of them in a small catalog;
/// past `MAX_LISTED_GROUPS`, how many and where the list is (the description stays the same
/// size at any catalog size).
fn groups_phrase(reg: &Registry) -> String {
    let groups = groups(reg);
    if groups.len() <= crate::model::registry::MAX_LISTED_GROUPS {
        groups.join(", ")
    } else {
        format!("{} groups; root lists them", groups.len())
    }
}

/// The op whose example call the gateway descriptions and the help root show: the first
/// visible read op with a non-empty example, else the first visible op.
pub fn sample_op(reg: &Registry) -> Option<&OpRecord> {
    let visible = || reg.ops.values().filter(|r| !r.hidden);
    visible()
        .find(|r| {
            r.kind == crate::model::registry::Kind::Read
                && r.examples
                    .first()
                    .is_some_and(|e| e.args.as_object().is_some_and(|a| !a.is_empty()))
        })
        .or_else(|| visible().next())
}

fn help_tool(reg: &Registry) -> ToolDef<'static> {
    let groups = groups_phrase(reg);
    let sample = sample_op(reg).map(|r| r.op.as_str()).unwrap_or("root");
    ToolDef {
        name: reg.gateway.help.clone(),
        description: format!(
            "Look up ops and how to call them. Paths: root, a group ({}), group.entity, group.entity.read|write, or an op; op pages give usage, args and a call to copy. Example: {{\"path\": \"{sample}\"}}",
            groups
        ),
        parameters: Cow::Owned(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "default": "root"},
                "format": {"type": "string", "enum": ["short", "full"], "default": "short"},
                "include_examples": {"type": "boolean", "default": true},
                "include_schemas": {"type": "boolean", "default": false}
            },
            "additionalProperties": false
        })),
        op: None,
    }
}

fn exec_tool(reg: &Registry) -> ToolDef<'static> {
    let call = sample_op(reg)
        .map(|r| {
            let args = r
                .examples
                .first()
                .map(|e| e.args.clone())
                .unwrap_or_else(|| json!({}));
            json!({"op": r.op, "args": args}).to_string()
        })
        .unwrap_or_else(|| "{\"op\": \"<op>\", \"args\": {}}".to_string());
    ToolDef {
        name: reg.gateway.exec.clone(),
        description: format!(
            "Run an op with its arguments. Example: {call}. On error, read error.help_path with {} and fix the fields it names.",
            reg.gateway.help
        ),
        parameters: Cow::Owned(json!({
            "type": "object",
            "properties": {
                "op": {"type": "string", "minLength": 1},
                "args": {"type": "object"},
                "idempotency_key": {"type": "string", "description": "Same key and args on a write return the first result."},
                "dry_run": {"type": "boolean", "description": "Validate only; do not run."}
            },
            "required": ["op", "args"],
            "additionalProperties": false
        })),
        op: None,
    }
}

fn search_tool(reg: &Registry) -> ToolDef<'static> {
    let groups = groups(reg);
    let sample = reg
        .ops
        .values()
        .find(|r| !r.hidden)
        .map(|r| {
            r.summary
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .unwrap_or_else(|| "what you need".into());
    let sample = sample.trim_end_matches(['.', ',', ':']).to_string();
    let mut kinds: Vec<&str> = reg
        .ops
        .values()
        .filter(|r| !r.hidden)
        .map(|r| r.kind.as_str())
        .collect();
    kinds.sort();
    kinds.dedup();
    // Past MAX_LISTED_GROUPS the group is free text (help root lists them): an enum of every
    // group grew the gateway with the catalog (811 groups: 16 KB on every request).
    let group = if groups.len() <= crate::model::registry::MAX_LISTED_GROUPS {
        json!({"type": "string", "enum": groups})
    } else {
        json!({"type": "string", "description": "a group path from help root"})
    };
    ToolDef {
        name: reg.gateway.search.clone(),
        description: format!("Find ops by what they do. Example: {{\"query\": \"{sample}\"}}"),
        parameters: Cow::Owned(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "group": group,
                "kind": {"type": "string", "enum": kinds},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
            },
            "required": ["query"],
            "additionalProperties": false
        })),
        op: None,
    }
}

/// The batch tool (overlay `[gateway] batch = true`): the single tools' calls in one round trip.
fn batch_tool(reg: &Registry, name: &str) -> ToolDef<'static> {
    let op = sample_op(reg).map(|r| r.op.as_str()).unwrap_or("<op>");
    ToolDef {
        name: name.to_string(),
        description: format!(
            "Up to {max} {help}/{search}/{exec} calls in one round trip, answered in order; writes after a failed item are skipped. First use of an op: {{\"items\": [{{\"help\": {{\"path\": \"{op}\"}}}}, {{\"exec\": {{\"op\": \"{op}\", \"args\": {{}}}}}}]}}",
            max = crate::model::registry::MAX_BATCH_ITEMS,
            help = reg.gateway.help,
            search = reg.gateway.search,
            exec = reg.gateway.exec,
        ),
        parameters: Cow::Owned(json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": crate::model::registry::MAX_BATCH_ITEMS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "help": {"type": "object"},
                            "search": {"type": "object"},
                            "exec": {"type": "object"}
                        },
                        "maxProperties": 1
                    }
                },
                "stop_on_error": {"type": "boolean"}
            },
            "required": ["items"],
            "additionalProperties": false
        })),
        op: None,
    }
}

/// The gateway tools: help, exec, search, and batch when the overlay offers it.
pub fn gateway(reg: &Registry) -> Vec<ToolDef<'static>> {
    let mut tools = vec![help_tool(reg), exec_tool(reg), search_tool(reg)];
    if let Some(name) = &reg.gateway.batch {
        tools.push(batch_tool(reg, name));
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_keeps_properties_named_description() {
        let mut s = json!({"type": "object", "description": "x", "properties": {
            "description": {"type": "string", "description": "The text."},
            "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"description": "y"}}}}
        }});
        strip_descriptions(&mut s);
        assert_eq!(
            s,
            json!({"type": "object", "properties": {
                "description": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {}}}}
            }})
        );
    }

    /// The tools array written straight from the definitions is the array built as a value,
    /// byte for byte, for every surface of the repo's catalogs.
    #[test]
    fn tools_text_is_tools_json() {
        for dir in [
            "definitions",
            "examples/universal-agent/definitions",
            "tests/fixture/definitions",
            "tests/catalogs/github",
        ] {
            let reg = crate::compiler::compile_repo_catalog(dir);
            let mut lists = vec![direct(&reg), gateway(&reg)];
            lists.extend(reg.profiles.keys().map(|p| profile(&reg, p)));
            assert!(lists[0].len() > 3, "{dir}");
            for defs in &lists {
                assert_eq!(tools_text(defs), tools_json(defs).to_string(), "{dir}");
            }
        }
    }
}
