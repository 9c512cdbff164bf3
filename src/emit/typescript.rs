//! `ts/registry.ts`: TypeScript bindings, plain TypeScript with no runtime packages.
//!
//! One `export interface {Op}Args` per op (JSDoc from descriptions, declared property order,
//! required vs optional, string-literal unions for enums, an index signature only where the
//! schema explicitly allows extra properties: `additionalProperties: true` or a schema), named
//! types for `$defs` namespaced by op, and the maps and unions that make calls typed:
//! `Op`, `ToolName`, `OpArgs`, `OP_TO_TOOL`, `TOOL_TO_OP`, `OP_KIND`, `REGISTRY_VERSION`,
//! `ExecCall<O>`.

use super::FileMap;
use crate::model::registry::Registry;
use heck::ToUpperCamelCase;
use serde_json::Value;

pub const FILE: &str = "ts/registry.ts";

pub(super) fn jsdoc(text: &str, indent: &str) -> String {
    let text = text.trim().replace("*/", "*\\/");
    if text.is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        return format!("{indent}/** {} */\n", lines[0]);
    }
    let body: String = lines
        .iter()
        .map(|l| format!("{indent} * {l}\n").replace(" * \n", " *\n"))
        .collect();
    format!("{indent}/**\n{body}{indent} */\n")
}

fn is_ident(name: &str) -> bool {
    let mut c = name.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == '$')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '$')
}

fn key(name: &str) -> String {
    if is_ident(name) {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// Type names for `$defs` of one op.
struct Ctx<'a> {
    stem: &'a str,
}

impl Ctx<'_> {
    fn ref_name(&self, r: &str) -> Option<String> {
        ["#/$defs/", "#/definitions/"]
            .iter()
            .find_map(|p| r.strip_prefix(p))
            .map(|n| format!("{}{}", self.stem, n.to_upper_camel_case()))
    }

    fn union(&self, items: &[Value], depth: usize) -> String {
        let mut parts: Vec<String> = items.iter().map(|i| self.ty(i, depth)).collect();
        parts.dedup();
        if parts.len() == 1 {
            return parts.remove(0);
        }
        parts
            .iter()
            .map(|p| {
                if p.contains('|') && !p.starts_with('{') {
                    format!("({p})")
                } else {
                    p.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// The TypeScript type of a schema. `depth` is the indent level of nested object literals.
    fn ty(&self, s: &Value, depth: usize) -> String {
        let Some(obj) = s.as_object() else {
            return if s == &Value::Bool(false) {
                "never".into()
            } else {
                "unknown".into()
            };
        };
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            return self.ref_name(r).unwrap_or_else(|| "unknown".into());
        }
        if let Some(c) = obj.get("const") {
            return literal(c);
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            return values.iter().map(literal).collect::<Vec<_>>().join(" | ");
        }
        for k in ["oneOf", "anyOf"] {
            if let Some(items) = obj.get(k).and_then(Value::as_array) {
                return self.union(items, depth);
            }
        }
        if let Some(items) = obj.get("allOf").and_then(Value::as_array) {
            return items
                .iter()
                .map(|i| self.ty(i, depth))
                .collect::<Vec<_>>()
                .join(" & ");
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if obj.contains_key("properties") => vec!["object"],
            _ => return "unknown".into(),
        };
        let parts: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "string" => "string".to_string(),
                "integer" | "number" => "number".to_string(),
                "boolean" => "boolean".to_string(),
                "null" => "null".to_string(),
                "array" => match obj.get("items").filter(|i| i.is_object()) {
                    Some(items) => {
                        let inner = self.ty(items, depth);
                        if inner.contains(' ') && !inner.starts_with('{') {
                            format!("Array<{inner}>")
                        } else {
                            format!("{inner}[]")
                        }
                    }
                    None => "unknown[]".to_string(),
                },
                "object" => self.object(obj, depth),
                _ => "unknown".to_string(),
            })
            .collect();
        parts.join(" | ")
    }

    /// Property lines of an object type (for interfaces and object literals).
    fn members(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
        let indent = "  ".repeat(depth + 1);
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = String::new();
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                let mut doc = sub
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if let Some(d) = sub.get("default") {
                    doc = format!(
                        "{doc}{}@default {}",
                        if doc.is_empty() { "" } else { "\n" },
                        d
                    );
                }
                out.push_str(&jsdoc(&doc, &indent));
                let opt = if required.contains(&name.as_str()) {
                    ""
                } else {
                    "?"
                };
                out.push_str(&format!(
                    "{indent}{}{opt}: {};\n",
                    key(name),
                    self.ty(sub, depth + 1)
                ));
            }
        }
        match obj.get("additionalProperties") {
            Some(Value::Bool(true)) => out.push_str(&format!("{indent}[key: string]: unknown;\n")),
            Some(extra @ Value::Object(_)) => {
                // Declared properties must fit the index signature too.
                let t = self.ty(extra, depth + 1);
                let t = if obj
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| !p.is_empty())
                {
                    "unknown".to_string()
                } else {
                    t
                };
                out.push_str(&format!("{indent}[key: string]: {t};\n"));
            }
            _ => {}
        }
        out
    }

    fn object(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
        let body = self.members(obj, depth);
        if body.is_empty() {
            return "Record<string, never>".into();
        }
        format!("{{\n{body}{}}}", "  ".repeat(depth))
    }
}

/// The argument types of one op: its `$defs` as named types, then `{stem}Args`.
pub(super) fn op_declarations(r: &crate::model::registry::OpRecord, stem: &str) -> String {
    declarations(
        &r.parameters_schema,
        stem,
        &format!("{stem}Args"),
        &format!(
            "Arguments of `{}` (tool `{}`): {}",
            r.op, r.tool_name, r.summary
        ),
    )
}

/// The declared result of one op (MCP `outputSchema`), as `{stem}Result` (its `$defs` named
/// `{stem}Result{Def}`); empty when the op declares none.
pub(super) fn result_declarations(r: &crate::model::registry::OpRecord, stem: &str) -> String {
    match &r.output_schema {
        Some(schema) => declarations(
            schema,
            &format!("{stem}Result"),
            &format!("{stem}Result"),
            &format!("What `{}` answers (its declared output schema).", r.op),
        ),
        None => String::new(),
    }
}

/// A schema's `$defs` as named types (`{defs_stem}{Def}`), then the schema as `name`.
fn declarations(schema: &Value, defs_stem: &str, name: &str, doc: &str) -> String {
    let mut o = String::new();
    let ctx = Ctx { stem: defs_stem };
    for k in ["$defs", "definitions"] {
        if let Some(defs) = schema.get(k).and_then(Value::as_object) {
            for (def_name, def) in defs {
                o.push_str(&jsdoc(
                    def.get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                    "",
                ));
                o.push_str(&format!(
                    "export type {defs_stem}{} = {};\n\n",
                    def_name.to_upper_camel_case(),
                    ctx.ty(def, 0)
                ));
            }
        }
    }
    o.push_str(&jsdoc(doc, ""));
    let is_object = schema.get("properties").is_some()
        || schema.get("type") == Some(&Value::String("object".into()));
    let members = schema
        .as_object()
        .filter(|_| is_object)
        .map(|obj| ctx.members(obj, 0))
        .unwrap_or_default();
    if !members.is_empty() {
        o.push_str(&format!("export interface {name} {{\n{members}}}\n\n"));
    } else if is_object
        && !schema
            .get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false))
    {
        o.push_str(&format!("export type {name} = Record<string, never>;\n\n"));
    } else if is_object {
        o.push_str(&format!(
            "export type {name} = Record<string, unknown>;\n\n"
        ));
    } else {
        o.push_str(&format!("export type {name} = {};\n\n", ctx.ty(schema, 0)));
    }
    o
}

pub fn generate(reg: &Registry) -> String {
    generate_with(reg, None)
}

/// The memo step of one op's declarations (arguments and result).
const OP_DECLARATIONS_STEP: &str = "ts op declarations 1";

/// `generate`; with `memo`, an op whose record and stem are unchanged takes its declarations
/// from an earlier build (at 10,000 ops they were most of a one-tool rebuild's TypeScript).
fn generate_with(reg: &Registry, memo: Option<&super::PageMemo>) -> String {
    // Sized up front (about 800 bytes an op on the synthetic fleet catalog): grown by doubling,
    // the file was copied and faulted in twice over. Room not used is never touched.
    let mut o = String::with_capacity((16 << 10) + reg.ops.len() * 1536);
    o.push_str(&format!(
        "// @generated by toolreg from registry `{}` ({}). Do not edit: run `toolreg build`.\n\n",
        reg.name, reg.registry_version
    ));
    o.push_str(&format!("/** The registry these bindings were generated from. */\nexport const REGISTRY_VERSION = {:?} as const;\n\n", reg.registry_version));
    let all: Vec<&crate::model::registry::OpRecord> = reg.ops.values().collect();
    let stems = super::rust::stems(&all);
    for (r, stem) in all.iter().zip(&stems) {
        let declare = || op_declarations(r, stem) + &result_declarations(r, stem);
        match memo {
            Some(memo) => {
                o.push_str(&memo.unstamped_text(OP_DECLARATIONS_STEP, r, &[stem], declare))
            }
            None => o.push_str(&declare()),
        }
    }
    let ops = all;
    let union = |items: Vec<String>| {
        if items.is_empty() {
            "never".to_string()
        } else {
            items.join("\n  | ")
        }
    };
    o.push_str(&format!(
        "/** Every op. */\nexport type Op =\n  | {};\n\n",
        union(ops.iter().map(|r| format!("{:?}", r.op)).collect())
    ));
    o.push_str(&format!(
        "/** Every tool name. */\nexport type ToolName =\n  | {};\n\n",
        union(ops.iter().map(|r| format!("{:?}", r.tool_name)).collect())
    ));
    o.push_str("/** The arguments of each op. */\nexport interface OpArgs {\n");
    for (r, stem) in ops.iter().zip(&stems) {
        o.push_str(&format!("  {:?}: {stem}Args;\n", r.op));
    }
    o.push_str("}\n\n/** What each op answers: its declared result, else `unknown`. */\nexport interface OpResult {\n");
    for (r, stem) in ops.iter().zip(&stems) {
        if r.output_schema.is_some() {
            o.push_str(&format!("  {:?}: {stem}Result;\n", r.op));
        } else {
            o.push_str(&format!("  {:?}: unknown;\n", r.op));
        }
    }
    o.push_str("}\n\n/** op -> tool name. */\nexport const OP_TO_TOOL: { readonly [O in Op]: ToolName } = {\n");
    for r in &ops {
        o.push_str(&format!("  {:?}: {:?},\n", r.op, r.tool_name));
    }
    // A tool name several ops share (servers of a fleet each with a `search`) names none of
    // them: it is left out, and the map's type says a name may be missing.
    let shared = super::arg_shape::shared_tool_names(reg);
    if shared.is_empty() {
        o.push_str("};\n\n/** tool name -> op. */\nexport const TOOL_TO_OP: { readonly [T in ToolName]: Op } = {\n");
    } else {
        o.push_str(&format!("}};\n\n/** tool name -> op; {} tool name{} several ops share {} left out. */\nexport const TOOL_TO_OP: {{ readonly [T in ToolName]?: Op }} = {{\n", shared.len(), if shared.len() == 1 {""} else {"s"}, if shared.len() == 1 {"is"} else {"are"}));
    }
    for r in ops
        .iter()
        .filter(|r| !shared.contains(r.tool_name.as_str()))
    {
        o.push_str(&format!("  {:?}: {:?},\n", r.tool_name, r.op));
    }
    o.push_str("};\n\n/** Whether each op reads or writes. */\nexport const OP_KIND: { readonly [O in Op]: \"read\" | \"write\" } = {\n");
    for r in &ops {
        o.push_str(&format!("  {:?}: {:?},\n", r.op, r.kind.as_str()));
    }
    o.push_str("};\n\n/** What a UI shows for a call of each op (seed 002 §6.4): action, the entity in words, and where the display name lives. */\nexport const OP_OPERATION: { readonly [O in Op]: { readonly action: \"list\" | \"search\" | \"read\" | \"create\" | \"update\" | \"delete\" | \"other\"; readonly entity_type: string; readonly display?: string } } = {\n");
    for r in &ops {
        let spec = crate::model::operation::spec(r);
        match &spec.display {
            Some(d) => o.push_str(&format!(
                "  {:?}: {{ action: {:?}, entity_type: {:?}, display: {:?} }},\n",
                r.op, spec.action, spec.entity_type, d
            )),
            None => o.push_str(&format!(
                "  {:?}: {{ action: {:?}, entity_type: {:?} }},\n",
                r.op, spec.action, spec.entity_type
            )),
        }
    }
    o.push_str(
        "};\n\n/** A typed exec call: the arguments must be those of the op. */\nexport type ExecCall<O extends Op = Op> = {\n  op: O;\n  args: OpArgs[O];\n  idempotency_key?: string;\n  dry_run?: boolean;\n};\n",
    );
    o
}

pub(crate) fn emit(reg: &Registry, memo: Option<&super::PageMemo>) -> FileMap {
    FileMap::from([(FILE.to_string(), generate_with(reg, memo))])
}

#[cfg(test)]
mod tests {
    use super::super::{emit_with, Emitter, Settings};
    use crate::compiler::memo::Memo;
    use crate::model::diag::Diagnostics;
    use crate::model::registry::Registry;
    use std::sync::Arc;

    /// After one op is edited, the bindings made with the first build's memo are those made
    /// without one, and every other op's declarations came from the memo.
    #[test]
    fn declarations_from_the_memo_are_those_made_afresh() {
        let reg = crate::compiler::compile_repo_catalog("definitions");
        let with = |reg: &Registry, memo: Memo| {
            let settings = Settings {
                memo: Some(Arc::new(memo)),
                ..Settings::default()
            };
            let files = emit_with(reg, &[Emitter::Ts], &settings, &mut Diagnostics::default());
            (files, settings.memo.expect("set above"))
        };
        let fresh = |reg: &Registry| super::generate(reg);
        let (first, memo) = with(&reg, Memo::new("test"));
        assert_eq!(first[super::FILE], fresh(&reg));
        assert_eq!(memo.stats().misses, reg.ops.len(), "{:?}", memo.stats());

        let mut next = reg.clone();
        let r = next.ops.values_mut().next().expect("an op");
        r.summary.push_str(" Edited by the test.");
        next.registry_version = crate::compiler::stamp::registry_version(&next);
        let (again, read) = with(&next, Memo::read("test", &memo.to_bytes()));
        assert_eq!(again[super::FILE], fresh(&next));
        assert_ne!(again[super::FILE], first[super::FILE]);
        let stats = read.stats();
        assert_eq!(
            (stats.hits, stats.misses),
            (reg.ops.len() - 1, 1),
            "{stats:?}"
        );
    }
}
