//! `rust/registry.rs`: typed argument structs (typify, pinned to its stable 0.8 line) and the glue
//! written here: `Op`, `OpKind`, `OpArgs::parse`, `REGISTRY_VERSION`.
//!
//! Each op's schema is prepared first: `$defs` become `definitions` namespaced by the op (two
//! tools defining `Color` never collide), the root is titled `{Op}Args`, descriptions are
//! sanitized for rustdoc (fences become `text` blocks, brackets are escaped, so no doctests and
//! no broken intra-doc links), and `format` / `pattern` are dropped (they would pull chrono, uuid
//! and regress into user crates; the runtime validates them). Each op is tried alone inside
//! `catch_unwind` before it joins the shared type space: a schema typify cannot take falls back to
//! `serde_json::Value` with a TR070 warning instead of failing the build.
//!
//! The file is meant for `include!`: no inner attributes. It needs `serde`, `serde_json` and
//! `serde_path_to_error` (which names the failing field in `OpArgs::parse`).

use super::FileMap;
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::registry::{Kind, OpRecord, Registry};
use heck::ToUpperCamelCase;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub const FILE: &str = "rust/registry.rs";

/// Rust identifier stem of an op: `onto.task.update` -> `OntoTaskUpdate`.
pub fn pascal(op: &str) -> String {
    let p = op.replace('.', "_").to_upper_camel_case();
    if p.starts_with(|c: char| c.is_ascii_digit()) {
        format!("Op{p}")
    } else {
        p
    }
}

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

fn prepare_node(v: &mut Value, rename: &dyn Fn(&str) -> Option<String>) {
    match v {
        Value::Object(obj) => {
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
            crate::schema::for_each_subschema_mut(obj, |_, sub| prepare_node(sub, rename));
        }
        Value::Array(items) => items.iter_mut().for_each(|i| prepare_node(i, rename)),
        _ => {}
    }
}

/// The schema typify sees for one op.
fn prepare(r: &OpRecord, stem: &str) -> Value {
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
    prepare_node(&mut schema, &rename);
    let mut defs = Value::Object(defs);
    if let Value::Object(d) = &mut defs {
        for def in d.values_mut() {
            prepare_node(def, &rename);
        }
    }
    let obj = schema.as_object_mut().expect("still an object");
    obj.insert("title".into(), Value::String(format!("{stem}Args")));
    if defs.as_object().is_some_and(|d| !d.is_empty()) {
        obj.insert("definitions".into(), defs);
    }
    schema
}

fn settings() -> typify::TypeSpaceSettings {
    let mut s = typify::TypeSpaceSettings::default();
    s.with_struct_builder(false);
    s.with_map_type("::std::collections::BTreeMap");
    s
}

/// Adds one op to a type space; `Err` with the reason when typify refuses or panics.
fn add(space: &mut typify::TypeSpace, schema: &Value) -> Result<String, String> {
    let root: schemars08::schema::RootSchema = serde_json::from_value(schema.clone())
        .map_err(|e| format!("not a schema typify reads: {e}"))?;
    let outcome = catch_unwind(AssertUnwindSafe(|| space.add_root_schema(root)));
    match outcome {
        Ok(Ok(Some(id))) => space
            .get_type(&id)
            .map(|t| t.name())
            .map_err(|e| e.to_string()),
        Ok(Ok(None)) => Err("typify produced no root type".into()),
        Ok(Err(e)) => Err(format!("typify: {e}")),
        Err(panic) => Err(format!(
            "typify panicked: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

/// The generated Rust and the ops that fell back to `serde_json::Value` (with the reason).
pub struct Generated {
    pub code: String,
    pub fallbacks: BTreeMap<String, String>,
}

pub fn generate(reg: &Registry) -> Generated {
    let ops: Vec<&OpRecord> = reg.ops.values().collect();
    let stems: Vec<String> = ops.iter().map(|r| pascal(&r.op)).collect();
    let prepared: Vec<Value> = ops.iter().zip(&stems).map(|(r, s)| prepare(r, s)).collect();
    // Silence typify's panic messages while probing; restore the hook afterwards.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut fallbacks = BTreeMap::new();
    for (i, r) in ops.iter().enumerate() {
        let mut scratch = typify::TypeSpace::new(&settings());
        if let Err(why) = add(&mut scratch, &prepared[i]) {
            fallbacks.insert(r.op.clone(), why);
        }
    }
    // The shared space; an op that only fails in company is dropped and the space rebuilt.
    let (space, names) = loop {
        let mut space = typify::TypeSpace::new(&settings());
        let mut names = BTreeMap::new();
        let mut failed = None;
        for (i, r) in ops.iter().enumerate() {
            if fallbacks.contains_key(&r.op) {
                continue;
            }
            match add(&mut space, &prepared[i]) {
                Ok(name) => {
                    names.insert(r.op.clone(), name);
                }
                Err(why) => {
                    failed = Some((r.op.clone(), why));
                    break;
                }
            }
        }
        match failed {
            Some((op, why)) => {
                fallbacks.insert(op, why);
            }
            None => break (space, names),
        }
    };
    std::panic::set_hook(hook);
    let tokens = space.to_stream();
    // Each stage's input is dropped before the next stage allocates: at 10,000 ops the type
    // space, the token stream and the syntax tree are each hundreds of megabytes.
    drop(space);
    let parsed = syn::parse2::<syn::File>(tokens);
    let types = match parsed {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => format!("// toolreg: typify output did not parse: {e}\n"),
    };
    Generated {
        code: assemble(reg, &ops, &stems, &names, &types),
        fallbacks,
    }
}

fn lit(s: &str) -> String {
    format!("{s:?}")
}

fn assemble(
    reg: &Registry,
    ops: &[&OpRecord],
    stems: &[String],
    names: &BTreeMap<String, String>,
    types: &str,
) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "// @generated by toolreg from registry `{}` ({}). Do not edit: run `toolreg build`.\n\
         // Needs the crates serde (derive), serde_json and serde_path_to_error. Use with include!.\n\n",
        reg.name, reg.registry_version
    ));
    o.push_str(&format!("/// The registry these types were generated from.\npub const REGISTRY_VERSION: &str = {};\n\n", lit(&reg.registry_version)));
    o.push_str("/// Read or write.\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\npub enum OpKind {\n    Read,\n    Write,\n}\n\n");
    o.push_str("/// Every op of the registry.\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub enum Op {\n");
    for (r, s) in ops.iter().zip(stems) {
        o.push_str(&format!(
            "    /// `{}`: {}\n    {s},\n",
            r.op,
            sanitize_doc(&r.summary).replace('\n', " ")
        ));
    }
    o.push_str(
        "}\n\nimpl Op {\n    /// Every op, in op order.\n    pub const ALL: &'static [Op] = &[\n",
    );
    for s in stems {
        o.push_str(&format!("        Op::{s},\n"));
    }
    o.push_str("    ];\n\n");
    let arms = |f: &dyn Fn(&OpRecord) -> String| -> String {
        ops.iter()
            .zip(stems)
            .map(|(r, s)| format!("            Op::{s} => {},\n", f(r)))
            .collect()
    };
    o.push_str(&format!("    /// The dotted op name.\n    pub fn as_str(self) -> &'static str {{\n        match self {{\n{}        }}\n    }}\n\n", arms(&|r| lit(&r.op))));
    o.push_str(&format!("    /// The tool's name as defined.\n    pub fn tool_name(self) -> &'static str {{\n        match self {{\n{}        }}\n    }}\n\n", arms(&|r| lit(&r.tool_name))));
    o.push_str(&format!(
        "    pub fn kind(self) -> OpKind {{\n        match self {{\n{}        }}\n    }}\n\n",
        arms(&|r| if r.kind == Kind::Read {
            "OpKind::Read".into()
        } else {
            "OpKind::Write".into()
        })
    ));
    o.push_str(&format!("    pub fn is_destructive(self) -> bool {{\n        match self {{\n{}        }}\n    }}\n}}\n\n", arms(&|r| r.destructive.to_string())));
    o.push_str("/// An op name or tool name that is not in the registry.\n#[derive(Debug, Clone, PartialEq, Eq)]\npub struct UnknownOp(pub String);\n\n");
    o.push_str("impl ::std::fmt::Display for UnknownOp {\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {\n        write!(f, \"unknown op `{}`\", self.0)\n    }\n}\n\nimpl ::std::error::Error for UnknownOp {}\n\n");
    o.push_str("impl ::std::str::FromStr for Op {\n    type Err = UnknownOp;\n\n    /// Accepts the op or the tool name.\n    fn from_str(s: &str) -> Result<Op, UnknownOp> {\n        match s {\n");
    for (r, s) in ops.iter().zip(stems) {
        if r.tool_name == r.op {
            o.push_str(&format!("            {} => Ok(Op::{s}),\n", lit(&r.op)));
        } else {
            o.push_str(&format!(
                "            {} | {} => Ok(Op::{s}),\n",
                lit(&r.op),
                lit(&r.tool_name)
            ));
        }
    }
    o.push_str("            other => Err(UnknownOp(other.to_string())),\n        }\n    }\n}\n\n");
    o.push_str("/// Why arguments could not be parsed.\n#[derive(Debug)]\npub enum ParseError {\n    UnknownOp(UnknownOp),\n    /// `field` is the path of the failing argument (`priority`, `owner.user_id`).\n    InvalidArgs { op: Op, field: String, message: String },\n}\n\n");
    o.push_str("impl ::std::fmt::Display for ParseError {\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {\n        match self {\n            ParseError::UnknownOp(e) => e.fmt(f),\n            ParseError::InvalidArgs { op, field, message } => write!(f, \"{}: argument `{}`: {}\", op.as_str(), field, message),\n        }\n    }\n}\n\nimpl ::std::error::Error for ParseError {}\n\n");
    o.push_str("/// Typed arguments of any op.\n#[derive(Debug, Clone)]\npub enum OpArgs {\n");
    for (r, s) in ops.iter().zip(stems) {
        match names.get(&r.op) {
            Some(ty) => o.push_str(&format!("    {s}({ty}),\n")),
            None => o.push_str(&format!("    /// typify could not type this op's schema: untyped.\n    {s}(::serde_json::Value),\n")),
        }
    }
    o.push_str("}\n\nimpl OpArgs {\n    /// Parses arguments for an op (or tool name); a failure names the argument.\n    pub fn parse(op: &str, args: ::serde_json::Value) -> Result<OpArgs, ParseError> {\n        let op: Op = op.parse().map_err(ParseError::UnknownOp)?;\n        fn typed<T: ::serde::de::DeserializeOwned>(op: Op, args: &::serde_json::Value) -> Result<T, ParseError> {\n            ::serde_path_to_error::deserialize(args).map_err(|e| ParseError::InvalidArgs {\n                op,\n                field: e.path().to_string(),\n                message: e.inner().to_string(),\n            })\n        }\n        Ok(match op {\n");
    for (r, s) in ops.iter().zip(stems) {
        if names.contains_key(&r.op) {
            o.push_str(&format!(
                "            Op::{s} => OpArgs::{s}(typed(op, &args)?),\n"
            ));
        } else {
            o.push_str(&format!("            Op::{s} => OpArgs::{s}(args),\n"));
        }
    }
    o.push_str("        })\n    }\n\n    /// The op these arguments are for.\n    pub fn op(&self) -> Op {\n        match self {\n");
    for s in stems {
        o.push_str(&format!("            OpArgs::{s}(_) => Op::{s},\n"));
    }
    o.push_str("        }\n    }\n}\n\n// ---- argument types (typify) ----\n\n");
    o.push_str(types);
    o
}

/// The emitter: the file, and a TR070 warning per op that fell back to `serde_json::Value`.
pub fn emit(reg: &Registry, diags: &mut Diagnostics) -> FileMap {
    let g = generate(reg);
    for (op, why) in &g.fallbacks {
        // Located at the tool's parameters; the file is relative to the definitions folder
        // (the builder prefixes it the way the user named that folder).
        let location = reg.ops.get(op).map(|r| crate::diag::Location {
            file: r.source.file.clone(),
            line: None,
            column: None,
            pointer: Some(r.source.pointer.clone()),
        });
        let mut d = Diagnostic::new(
            Code::UntypedOp,
            format!("`{op}` gets untyped arguments (serde_json::Value) in the Rust output: {why}"),
        );
        if let Some(l) = location {
            d = d.at(l);
        }
        diags.push(
            d.help("simplify the schema (typify rejects enums of mixed value types, external $refs, ...), or accept the fallback; --strict makes this an error"),
        );
    }
    FileMap::from([(FILE.to_string(), g.code)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_docs() {
        assert_eq!(pascal("onto.task.update"), "OntoTaskUpdate");
        assert_eq!(
            pascal("onto.task.doc.create_or_attach"),
            "OntoTaskDocCreateOrAttach"
        );
        assert_eq!(
            sanitize_doc("See [x].\n```rust\nfn a() {}\n```\n    indented"),
            "See \\[x\\].\n```text\nfn a() {}\n```\nindented"
        );
    }
}
