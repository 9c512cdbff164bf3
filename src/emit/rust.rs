//! `rust/registry.rs`: typed argument structs (typify, pinned to its stable 0.8 line) and the glue
//! written here: `Op`, `OpKind`, `OpArgs::parse`, `REGISTRY_VERSION`.
//!
//! Each op's schema is prepared first: `$defs` become `definitions` namespaced by the op (two
//! tools defining `Color` never collide), the root is titled `{Op}Args` and nested titles are
//! prefixed with the op (two tools' inline `"title": "Mode"` never collide either), descriptions
//! are sanitized for rustdoc (fences become `text` blocks, brackets are escaped, so no doctests
//! and no broken intra-doc links), and `format` / `pattern` are dropped (they would pull chrono,
//! uuid and regress into user crates; the runtime validates them).
//!
//! Each op is typed in its own type space, on every core, inside `catch_unwind`: a schema typify
//! cannot take falls back to `serde_json::Value` with a TR070 warning instead of failing the
//! build, and memory stays bounded by the largest op (one shared space for 10,000 ops held
//! 2.7 GB). typify's shared `defaults` functions are merged by name and its `error` module is
//! written once. Repeated impl blocks are formatted once (see `ImplMemo`).
//!
//! The file is meant for `include!`: no inner attributes. It needs `serde`, `serde_json` and
//! `serde_path_to_error` (which names the failing field in `OpArgs::parse`).

use super::PageMemo;
use crate::model::diag::{Code, Diagnostic, Diagnostics};
use crate::model::registry::{Kind, OpRecord, Registry};
use heck::ToUpperCamelCase;
use serde_json::Value;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod prepare;
mod shared;
use prepare::prepare;
pub use prepare::sanitize_doc;
use shared::{mask_for, type_shared, OpTypes, Typer};

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
    /// The file's text in pieces (the head, then each op's types), put together by
    /// [`Generated::code`]: the build hands the pieces to its outputs as they are, since at
    /// 10,000 ops a copy of them all was 52 MB of the build's peak.
    pub pieces: Vec<String>,
    pub fallbacks: BTreeMap<String, String>,
    /// Ops whose types were another op's with the stem swapped (see `type_shared`).
    pub shared: usize,
    /// Ops formatted from another op's typify output with the stem swapped.
    pub from_tokens: usize,
    /// Ops of those whose formatting was another op's of the same lengths (see `FormatMemo`).
    pub formatted_once: usize,
}

impl Generated {
    /// The file's text.
    pub fn code(&self) -> String {
        self.pieces.concat()
    }
}

/// The largest schema (counted in JSON objects) that gets typed arguments. The Rust for a schema
/// is several times its size and typify's time grows with it: a 100,000-property schema took 5 s
/// and 1 GB here. Real tools stay far below (the largest in the repo's MCP catalogs: under 100).
pub const TYPED_SCHEMA_MAX_OBJECTS: usize = 10_000;

/// JSON objects in a value, counted without recursion (schemas may be deep).
fn object_count(v: &Value) -> usize {
    let mut stack = vec![v];
    let mut count = 0;
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(o) => {
                count += 1;
                stack.extend(o.values());
            }
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    count
}

/// Formatted impl blocks, keyed by their tokens with the op's stem masked. typify writes the same
/// impls (`Display`, `FromStr`, `TryFrom`, `Deref`, ...) for every enum or newtype of the same
/// shape, and parsing and formatting each copy was most of the emitter's time at 10,000 ops. A
/// mask is as long as the stem it hides, so a hit formats exactly as a fresh parse would (the
/// formatter only sees widths); `memo_matches_fresh_formatting` proves it on the repo's catalogs.
#[derive(Default)]
struct ImplMemo {
    formatted: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<str>>>,
    /// Items served from the memo (the test checks the memo was exercised).
    hits: std::sync::atomic::AtomicUsize,
}

impl ImplMemo {
    /// The formatted text of one impl item (`None`: it does not parse).
    fn format(&self, item: proc_macro2::TokenStream, stem: &str) -> Option<String> {
        if !stem.is_ascii() || stem.is_empty() {
            return format_items(item);
        }
        let mask = mask_for(stem);
        let key = item.to_string().replace(stem, &mask);
        let hit = self.formatted.lock().ok()?.get(&key).cloned();
        if let Some(text) = hit {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Some(text.replace(&mask, stem));
        }
        let text = format_items(item)?;
        let masked: std::sync::Arc<str> = text.replace(stem, &mask).into();
        if let Ok(mut memo) = self.formatted.lock() {
            memo.insert(key, masked);
        }
        Some(text)
    }
}

/// Parses and formats a run of items.
fn format_items(tokens: proc_macro2::TokenStream) -> Option<String> {
    let file = syn::parse2::<syn::File>(tokens).ok()?;
    Some(prettyplease::unparse(&file))
}

/// What a top-level item of typify's output is, as far as the emitter cares.
#[derive(PartialEq)]
enum ItemKind {
    Impl,
    /// `mod error`: the same in every type space, written once at the end.
    ErrorModule,
    Other,
}

/// typify's output split into top-level items: attributes, then tokens up to a `{...}` body or
/// a `;`.
fn split_items(tokens: proc_macro2::TokenStream) -> Vec<(ItemKind, proc_macro2::TokenStream)> {
    use proc_macro2::{Delimiter, TokenTree};
    let mut items = Vec::new();
    let mut current: Vec<TokenTree> = Vec::new();
    // The item's keyword and the identifier after it (`impl`, `mod error`, `struct X`).
    let mut words: Vec<String> = Vec::new();
    for tree in tokens {
        let ends = match &tree {
            TokenTree::Group(g) => g.delimiter() == Delimiter::Brace,
            TokenTree::Punct(p) => p.as_char() == ';',
            TokenTree::Ident(i) => {
                if words.len() < 2 && i != "pub" {
                    words.push(i.to_string());
                }
                false
            }
            _ => false,
        };
        current.push(tree);
        if ends {
            let kind = match words.first().map(String::as_str) {
                Some("impl") => ItemKind::Impl,
                Some("mod") if words.get(1).is_some_and(|w| w == "error") => ItemKind::ErrorModule,
                _ => ItemKind::Other,
            };
            words.clear();
            items.push((kind, current.drain(..).collect()));
        }
    }
    if !current.is_empty() {
        items.push((ItemKind::Other, current.into_iter().collect()));
    }
    items
}

/// Types one op alone, in its own type space. Every name typify can produce for it starts with
/// the op's stem (root title, namespaced `$defs`, prefixed nested titles), so ops never share a
/// type; a type space per op keeps memory bounded by the largest op, not the catalog, and lets
/// the ops run in parallel.
fn op_types(schema: &Value, stem: &str, memo: Option<&ImplMemo>) -> Result<OpTypes, String> {
    let (root, tokens) = typify_tokens(schema)?;
    format_tokens(root, tokens, stem, memo)
}

/// typify's output for one schema as token text, which ops of one schema share (`shared.rs`)
/// and [`format_op`] reads back.
fn typify_op(schema: &Value) -> Result<(String, String), String> {
    typify_tokens(schema).map(|(root, tokens)| (root, tokens.to_string()))
}

/// One op's types formatted from typify's token text.
fn format_op(
    root: String,
    tokens: &str,
    stem: &str,
    memo: Option<&ImplMemo>,
) -> Result<OpTypes, String> {
    let tokens = tokens
        .parse()
        .map_err(|e| format!("typify output did not parse: {e}"))?;
    format_tokens(root, tokens, stem, memo)
}

/// typify's output for one schema: the root type's name and the items.
fn typify_tokens(schema: &Value) -> Result<(String, proc_macro2::TokenStream), String> {
    let nodes = object_count(schema);
    if nodes > TYPED_SCHEMA_MAX_OBJECTS {
        return Err(format!(
            "the schema has {nodes} objects; typed arguments are generated for schemas of up to \
             {TYPED_SCHEMA_MAX_OBJECTS}"
        ));
    }
    let mut space = typify::TypeSpace::new(&settings());
    let root = add(&mut space, schema)?;
    Ok((root, space.to_stream()))
}

/// One op's types formatted from typify's output.
fn format_tokens(
    root: String,
    tokens: proc_macro2::TokenStream,
    stem: &str,
    memo: Option<&ImplMemo>,
) -> Result<OpTypes, String> {
    let unparsable = || "typify output did not parse".to_string();
    let mut items = String::new();
    let mut defaults = Vec::new();
    // Runs of items that are not memoized are formatted together (fewer, larger parses).
    let mut plain = proc_macro2::TokenStream::new();
    for (kind, item) in split_items(tokens) {
        match memo {
            _ if kind == ItemKind::ErrorModule => {}
            Some(memo) if kind == ItemKind::Impl => {
                if !plain.is_empty() {
                    let run = std::mem::take(&mut plain);
                    items.push_str(&format_items(run).ok_or_else(unparsable)?);
                }
                items.push_str(&memo.format(item, stem).ok_or_else(unparsable)?);
            }
            _ => plain.extend(item),
        }
    }
    let file =
        syn::parse2::<syn::File>(plain).map_err(|e| format!("typify output did not parse: {e}"))?;
    let mut rest = Vec::new();
    for item in file.items {
        match item {
            syn::Item::Mod(m) if m.ident == "defaults" => {
                for inner in m.content.map(|(_, items)| items).unwrap_or_default() {
                    let name = match &inner {
                        syn::Item::Fn(f) => f.sig.ident.to_string(),
                        _ => String::new(),
                    };
                    let text = prettyplease::unparse(&syn::File {
                        shebang: None,
                        attrs: Vec::new(),
                        items: vec![inner],
                    });
                    defaults.push((name, text));
                }
            }
            other => rest.push(other),
        }
    }
    items.push_str(&prettyplease::unparse(&syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: rest,
    }));
    Ok(OpTypes {
        root,
        items,
        defaults,
    })
}

/// Op stems, made unique: two ops whose names differ only in where the dots and underscores
/// fall (`a.b_c`, `a_b.c`) would otherwise share `ABC`; the later one gets a number.
pub fn stems(ops: &[&OpRecord]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    ops.iter()
        .map(|r| {
            let base = pascal(&r.op);
            let mut stem = base.clone();
            let mut n = 2;
            while !seen.insert(stem.clone()) {
                stem = format!("{base}{n}");
                n += 1;
            }
            stem
        })
        .collect()
}

pub fn generate(reg: &Registry) -> Generated {
    generate_memo(reg, None)
}

/// `generate`, taking each op's types from `memo` when an earlier build typed the same op.
pub(crate) fn generate_memo(reg: &Registry, memo: Option<&PageMemo>) -> Generated {
    generate_with(reg, Some(&ImplMemo::default()), memo, true)
}

/// The memo step of one op's types, whose input is the op's digest (its whole record, so its
/// parameters' schema) and its stem: what the schema typify sees is made from.
const MEMO_STEP: &str = "rust.op_types.3";

/// `generate`, with or without the impl memo (the test compares both) and the build memo.
fn generate_with(
    reg: &Registry,
    impls: Option<&ImplMemo>,
    memo: Option<&PageMemo>,
    share: bool,
) -> Generated {
    let ops: Vec<&OpRecord> = reg.ops.values().collect();
    let stems = stems(&ops);
    // Ops an earlier build typed are served by their record's digest before any schema is
    // prepared: preparing, serializing and keying every op's schema to find it in the memo was
    // most of a one-tool rebuild's time in this emitter. An entry that passed the memo's check
    // but does not read is typed again, never trusted.
    let all: Vec<usize> = (0..ops.len()).collect();
    let mut typed: Vec<Option<Result<OpTypes, String>>> = match memo {
        Some(m) => crate::compiler::parallel::map_in_order(&all, |&i| {
            shared::from_memo(&m.get(MEMO_STEP, ops[i], &[&stems[i]])?)
        }),
        None => vec![None; ops.len()],
    };
    let todo: Vec<usize> = all.into_iter().filter(|&i| typed[i].is_none()).collect();
    let todo_stems: Vec<String> = todo.iter().map(|&i| stems[i].clone()).collect();
    // Silence typify's panic messages while probing; restore the hook afterwards.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let schema = |k: usize| prepare(ops[todo[k]], &todo_stems[k]);
    let typer = Typer::new(&schema, &todo_stems, impls);
    let (fresh, sharing) = if share {
        type_shared(&todo_stems, &typer)
    } else {
        let all: Vec<usize> = (0..todo.len()).collect();
        let fresh = crate::compiler::parallel::map_in_order(&all, |&i| typer.types(i, None));
        (fresh, shared::Sharing::default())
    };
    std::panic::set_hook(hook);
    drop(typer);
    for (&i, mut t) in todo.iter().zip(fresh) {
        // Formatted text grows by doubling: held for every op until the file is assembled,
        // its spare room was 20 MB of a 10,000-tool build's peak.
        if let Ok(t) = &mut t {
            t.items.shrink_to_fit();
        }
        typed[i] = Some(t);
    }
    if let Some(m) = memo {
        for &i in &todo {
            if let Some(t) = &typed[i] {
                m.put(MEMO_STEP, ops[i], &[&stems[i]], || shared::to_memo(t));
            }
        }
    }
    let mut fallbacks = BTreeMap::new();
    let mut names = BTreeMap::new();
    let mut items = Vec::with_capacity(ops.len());
    let mut defaults: BTreeMap<String, String> = BTreeMap::new();
    for (r, outcome) in ops.iter().zip(typed) {
        match outcome.expect("every op is served or typed") {
            Ok(t) => {
                names.insert(r.op.clone(), t.root);
                items.push(t.items);
                for (name, text) in t.defaults {
                    defaults.entry(name).or_insert(text);
                }
            }
            Err(why) => {
                fallbacks.insert(r.op.clone(), why);
            }
        }
    }
    items.push(shared_modules(&defaults));
    Generated {
        pieces: assemble(reg, &ops, &stems, &names, items),
        fallbacks,
        shared: sharing.swapped,
        from_tokens: sharing.from_tokens,
        formatted_once: sharing.formatted_once,
    }
}

/// typify's `defaults` module (the union of every op's functions, by name) and its `error`
/// module (the same for every type space), formatted once.
fn shared_modules(defaults: &BTreeMap<String, String>) -> String {
    let mut source = String::new();
    if !defaults.is_empty() {
        source.push_str("/// Generation of default values for serde.\npub mod defaults {\n");
        for text in defaults.values() {
            source.push_str(text);
        }
        source.push_str("}\n");
    }
    source.push_str(&typify::TypeSpace::new(&settings()).to_stream().to_string());
    match syn::parse_file(&source) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => format!("// toolreg: typify's shared modules did not parse: {e}\n"),
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
    types: Vec<String>,
) -> Vec<String> {
    // The head (everything but the types), sized up front: it is megabytes at 10,000 ops, and
    // a string that doubles as it grows copies itself each time.
    let mut o = String::with_capacity(2_048 + ops.len() * 1_024);
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
    o.push_str(&format!("    pub fn is_destructive(self) -> bool {{\n        match self {{\n{}        }}\n    }}\n\n", arms(&|r| r.destructive.to_string())));
    o.push_str(&format!(
        "    /// What a UI shows for a call of this op (seed 002 §6.4).\n    pub fn operation(self) -> Operation {{\n        match self {{\n{}        }}\n    }}\n}}\n\n",
        arms(&|r| {
            let spec = crate::model::operation::spec(r);
            format!(
                "Operation {{ action: {}, entity_type: {}, display: {} }}",
                lit(&spec.action),
                lit(&spec.entity_type),
                spec.display.as_deref().map_or_else(|| "None".to_string(), |d| format!("Some({})", lit(d)))
            )
        })
    ));
    o.push_str("/// An op's operation event fields: action (list, search, read, create, update, delete,\n/// other), the entity in words, and where the display name lives (`args.title`).\n#[derive(Debug, Clone, Copy, PartialEq, Eq)]\npub struct Operation {\n    pub action: &'static str,\n    pub entity_type: &'static str,\n    pub display: Option<&'static str>,\n}\n\n");
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
    std::iter::once(o).chain(types).collect()
}

/// The emitter: the file's text in pieces (see [`Generated::pieces`]), and a TR070 warning per
/// op that fell back to `serde_json::Value`.
pub(crate) fn emit(
    reg: &Registry,
    memo: Option<&PageMemo>,
    diags: &mut Diagnostics,
) -> Vec<String> {
    let g = generate_memo(reg, memo);
    for (op, why) in &g.fallbacks {
        // Located at the tool's parameters; the file is relative to the definitions folder
        // (the builder prefixes it the way the user named that folder).
        let location = reg.ops.get(op).map(|r| crate::model::diag::Location {
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
    g.pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::compiler::compile_repo_catalog as compile;

    /// The impl memo changes nothing: every catalog in the repo (hand-written, fixture with
    /// every schema feature, and real MCP servers' tool lists) gives the same file with and
    /// without it, and the memo was used.
    #[test]
    fn memo_matches_fresh_formatting() {
        let mut hits = 0;
        for dir in crate::compiler::REPO_CATALOGS {
            let reg = compile(dir);
            let memo = ImplMemo::default();
            let with = generate_with(&reg, Some(&memo), None, false);
            let fresh = generate_with(&reg, None, None, false);
            assert_eq!(with.fallbacks, fresh.fallbacks, "{dir}");
            assert!(
                with.code() == fresh.code(),
                "{dir}: the memo changed the output"
            );
            hits += memo.hits.load(std::sync::atomic::Ordering::Relaxed);
        }
        assert!(hits > 20, "the memo served {hits} impls");
    }

    /// Sharing typify's work between ops of one schema changes nothing: a real fleet (70 MCP
    /// servers, whose schemas repeat) gives the same file typed op by op, and sharing was used.
    #[test]
    fn shared_types_match_types_made_one_by_one() {
        let reg = compile("tests/catalogs/fleet/livemcp");
        let shared = generate_with(&reg, Some(&ImplMemo::default()), None, true);
        let alone = generate_with(&reg, Some(&ImplMemo::default()), None, false);
        assert_eq!(shared.fallbacks, alone.fallbacks);
        assert!(shared.code() == alone.code(), "sharing changed the output");
        assert!(shared.shared > 0, "no op shared its formatted types");
        assert!(shared.from_tokens > 0, "no op shared typify's output");
        assert!(
            shared.formatted_once > 0,
            "no op shared another's formatting"
        );
    }

    #[test]
    fn stems_stay_unique() {
        let reg = compile("tests/fixture/definitions");
        let mut a = reg.ops.values().next().unwrap().clone();
        let mut b = a.clone();
        a.op = "fx.a.b_c".into();
        b.op = "fx.a_b.c".into();
        assert_eq!(stems(&[&a, &b]), ["FxABC", "FxABC2"]);
    }

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
