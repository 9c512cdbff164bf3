//! `help.json`: every help page, precomputed, so the runtime serves help by lookup.
//!
//! Paths: `root`; each group; `group.entity`; `group.entity.read` and `.write`; each op. Where an
//! op's name equals a directory path (`workspace.file.read` is both an op and "the read ops of
//! workspace.file"), the op page wins; the entity page still lists every op.
//!
//! Pages are built for machines first: fixed field names, a `next` step on directory pages, and on
//! op pages a CLI-like usage line, the argument table, required and id arguments, notes, examples
//! to copy and the policy. `short` keeps each argument to one short line and one example; `full`
//! adds the whole description, every example and the id-discovery sequence.

use super::FileMap;
use crate::help::{HelpDoc, HelpPages, ROOT};
use crate::registry::{Arg, GroupNode, Kind, OpRecord, Registry};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub const FILE: &str = "help.json";

/// Longest argument description in short pages.
const SHORT_ARG_CHARS: usize = 60;

pub fn emit(doc: &HelpDoc) -> FileMap {
    FileMap::from([(FILE.to_string(), render(doc))])
}

/// `help.json` text: keys sorted down to the pages, each page's fields in the order they are
/// built (what a model should read first comes first). Serialized straight from the pages: at
/// 10,000 ops a sorted copy as a `Value` tree cost 600 MB.
pub fn render(doc: &HelpDoc) -> String {
    #[derive(serde::Serialize)]
    struct Sorted<'a> {
        generator: &'a str,
        pages: BTreeMap<&'a str, SortedPages<'a>>,
        registry_version: &'a str,
    }
    #[derive(serde::Serialize)]
    struct SortedPages<'a> {
        full: &'a Value,
        short: &'a Value,
    }
    let pages = doc
        .pages
        .iter()
        .map(|(path, p)| {
            let page = SortedPages {
                full: &p.full,
                short: &p.short,
            };
            (path.as_str(), page)
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&Sorted {
        generator: &doc.generator,
        pages,
        registry_version: &doc.registry_version,
    })
    .expect("help always serializes");
    text.push('\n');
    text
}

/// All pages for a registry.
pub fn build(reg: &Registry) -> HelpDoc {
    build_only(reg, &|_| true)
}

/// The pages whose path `keep` accepts (`toolreg diff` builds only what a change can touch).
pub fn build_only(reg: &Registry, keep: &dyn Fn(&str) -> bool) -> HelpDoc {
    let mut pages = BTreeMap::new();
    let both = |f: &dyn Fn(bool) -> Value| HelpPages {
        short: std::sync::Arc::new(f(false)),
        full: std::sync::Arc::new(f(true)),
    };
    if keep(ROOT) {
        pages.insert(ROOT.to_string(), both(&|full| root(reg, full)));
    }
    for (g, node) in &reg.tree {
        if keep(g) {
            pages.insert(g.clone(), both(&|full| group(reg, g, node, full)));
        }
        for e in node.entities.keys() {
            let path = format!("{g}.{e}");
            if keep(&path) {
                pages.insert(
                    path.clone(),
                    both(&|full| entity(reg, &path, e, node, None, full)),
                );
            }
            for kind in [Kind::Read, Kind::Write] {
                let kpath = format!("{path}.{}", kind.as_str());
                if keep(&kpath) {
                    pages.insert(
                        kpath,
                        both(&|full| entity(reg, &path, e, node, Some(kind), full)),
                    );
                }
            }
        }
    }
    // Ops last: an op page replaces a directory page of the same path.
    for r in reg.ops.values().filter(|r| !r.hidden && keep(&r.op)) {
        pages.insert(r.op.clone(), both(&|full| op_page(reg, r, full)));
    }
    HelpDoc {
        generator: crate::registry::GENERATOR.into(),
        registry_version: reg.registry_version.clone(),
        pages,
    }
}

/// The paths `build` makes pages for, without making them.
pub fn page_paths(reg: &Registry) -> std::collections::BTreeSet<String> {
    let mut paths: std::collections::BTreeSet<String> = [ROOT.to_string()].into();
    for (g, node) in &reg.tree {
        paths.insert(g.clone());
        for e in node.entities.keys() {
            for suffix in ["", ".read", ".write"] {
                paths.insert(format!("{g}.{e}{suffix}"));
            }
        }
    }
    paths.extend(reg.ops.values().filter(|r| !r.hidden).map(|r| r.op.clone()));
    paths
}

fn visible<'a>(reg: &'a Registry, ops: &'a [String]) -> impl Iterator<Item = &'a OpRecord> {
    ops.iter()
        .filter_map(|o| reg.ops.get(o))
        .filter(|r| !r.hidden)
}

fn group_ops(reg: &Registry, node: &GroupNode) -> Vec<String> {
    let mut all: Vec<String> = node.ops.clone();
    for e in node.entities.values() {
        all.extend(e.ops.iter().cloned());
    }
    all.into_iter()
        .filter(|o| reg.ops.get(o).is_some_and(|r| !r.hidden))
        .collect()
}

/// An op in a directory listing.
fn listing(r: &OpRecord, full: bool) -> Value {
    let mut v = json!({"op": r.op, "kind": r.kind.as_str(), "summary": r.summary});
    if full {
        v["usage"] = json!(r.usage());
    }
    v
}

/// The call contract: the exact shapes of a help call and an exec call, with one example each.
fn call_contract(reg: &Registry) -> Value {
    let sample = crate::compiler::surfaces::sample_op(reg);
    let (exec_example, help_example) = match sample {
        Some(r) => (
            json!({"op": r.op, "args": r.examples.first().map(|e| e.args.clone()).unwrap_or_else(|| json!({}))}),
            json!({"path": r.op}),
        ),
        None => (json!({"op": "<op>", "args": {}}), json!({"path": ROOT})),
    };
    json!({
        "help": {"tool": reg.gateway.help, "shape": {"path": "<path>", "format": "short|full"}, "example": help_example},
        "exec": {"tool": reg.gateway.exec, "shape": {"op": "<op>", "args": {"<name>": "<value>"}}, "example": exec_example},
        "search": {"tool": reg.gateway.search, "shape": {"query": "<words>"}},
        "on_error": format!("Read error.help_path with {}, fix the fields in error.details.field_errors, then retry once. Replace every <placeholder> with a real value.", reg.gateway.help),
    })
}

fn root(reg: &Registry, full: bool) -> Value {
    let groups: Vec<Value> = reg
        .tree
        .iter()
        .map(|(g, node)| {
            let ops = group_ops(reg, node);
            let mut v = json!({"path": g, "summary": node.summary, "ops": ops.len()});
            if full {
                v["entities"] = json!(node
                    .entities
                    .keys()
                    .map(|e| format!("{g}.{e}"))
                    .collect::<Vec<_>>());
            }
            v
        })
        .collect();
    json!({
        "path": ROOT,
        "registry": reg.name,
        "groups": groups,
        "call_contract": call_contract(reg),
        "next": format!("Call {} with a group path, e.g. {{\"path\": \"{}\"}}, or {} with what you need.", reg.gateway.help, reg.tree.keys().next().map(String::as_str).unwrap_or(ROOT), reg.gateway.search),
        "registry_version": reg.registry_version,
    })
}

fn group(reg: &Registry, g: &str, node: &GroupNode, full: bool) -> Value {
    let entities: Vec<Value> = node
        .entities
        .iter()
        .map(|(e, en)| {
            let count = visible(reg, &en.ops).count();
            let mut v = json!({"path": format!("{g}.{e}"), "ops": count});
            if let Some(s) = &en.summary {
                v["summary"] = json!(s);
            }
            v
        })
        .filter(|v| v["ops"].as_u64() > Some(0))
        .collect();
    let mut page = json!({
        "path": g,
        "summary": node.summary,
        "entities": entities,
        "ops": visible(reg, &node.ops).map(|r| listing(r, full)).collect::<Vec<_>>(),
        "next": format!("Call {} with an entity path, e.g. {{\"path\": \"{}\"}}, to list its ops.", reg.gateway.help, node.entities.keys().next().map(|e| format!("{g}.{e}")).unwrap_or_else(|| g.to_string())),
        "registry_version": reg.registry_version,
    });
    if full {
        page["all_ops"] = json!(group_ops(reg, node)
            .iter()
            .filter_map(|o| reg.ops.get(o))
            .map(|r| listing(r, false))
            .collect::<Vec<_>>());
    }
    page
}

fn entity(
    reg: &Registry,
    path: &str,
    e: &str,
    node: &GroupNode,
    kind: Option<Kind>,
    full: bool,
) -> Value {
    let en = &node.entities[e];
    let ops: Vec<Value> = visible(reg, &en.ops)
        .filter(|r| kind.is_none_or(|k| r.kind == k))
        .map(|r| listing(r, full))
        .collect();
    let first = ops
        .first()
        .and_then(|o| o["op"].as_str())
        .unwrap_or(path)
        .to_string();
    let mut page = json!({
        "path": kind.map_or(path.to_string(), |k| format!("{path}.{}", k.as_str())),
        "ops": ops,
        "next": format!("Call {} with an op path, e.g. {{\"path\": \"{first}\"}}, for usage and a call to copy; or call {} directly if you know the args.", reg.gateway.help, reg.gateway.exec),
        "registry_version": reg.registry_version,
    });
    if let Some(s) = &en.summary {
        page["summary"] = json!(s);
    }
    page
}

fn first_sentence(text: &str, max: usize) -> String {
    let s = crate::text::first_sentence(text);
    crate::text::truncate_words(&s, max)
}

fn arg_entry(a: &Arg, full: bool) -> Value {
    let mut v = Map::new();
    v.insert("name".into(), json!(a.name));
    v.insert("type".into(), json!(a.type_));
    if a.required {
        v.insert("required".into(), json!(true));
    }
    if let Some(d) = &a.default {
        v.insert("default".into(), d.clone());
    }
    if let Some(e) = &a.enum_ {
        v.insert("enum".into(), json!(e));
    }
    if full {
        if let Some(r) = &a.range {
            v.insert("range".into(), json!(r));
        }
    }
    let desc = if full {
        a.description.clone()
    } else {
        first_sentence(&a.description, SHORT_ARG_CHARS)
    };
    if !desc.is_empty() {
        v.insert("description".into(), json!(desc));
    }
    Value::Object(v)
}

/// Behavioral notes derived from the IR: what to call first, confirmations, dry-run defaults.
fn notes(reg: &Registry, r: &OpRecord) -> Vec<String> {
    let mut notes = Vec::new();
    // Alternatives the schema demands ("`id` or `name`") that the argument table cannot show.
    notes.extend(crate::schema::top_level_constraint(&r.parameters_schema));
    if r.id_discovery.len() > 1 {
        let finders = &r.id_discovery[..r.id_discovery.len() - 1];
        notes.push(format!(
            "Get {} from {} first.",
            r.id_args
                .iter()
                .filter(|a| r.required_args.contains(a))
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            finders.join(" / ")
        ));
    }
    if r.kind == Kind::Write && r.action == "create" {
        if let Some(search) = reg
            .ops
            .values()
            .find(|o| o.group == r.group && o.entity == r.entity && o.action == "search")
        {
            notes.push(format!(
                "Search with {} first to avoid duplicates.",
                search.op
            ));
        }
    }
    if r.destructive {
        notes.push("Destructive: confirm with the user unless they asked for exactly this.".into());
    }
    if r.dry_run_default {
        notes.push(
            "Runs as a dry run unless you pass dry_run: false; show the preview first.".into(),
        );
    }
    notes
}

fn op_page(reg: &Registry, r: &OpRecord, full: bool) -> Value {
    let calls = |n: usize| -> Vec<Value> {
        r.examples
            .iter()
            .take(n)
            .map(|e| json!({"description": e.description, "call": {"op": r.op, "args": e.args}}))
            .collect()
    };
    let mut page = json!({
        "path": r.op,
        "kind": r.kind.as_str(),
        "summary": r.summary,
        "usage": r.usage(),
        "args": r.args.iter().map(|a| arg_entry(a, full)).collect::<Vec<_>>(),
        "required_args": r.required_args,
        "id_args": r.id_args,
        "notes": notes(reg, r),
        "examples": calls(if full { usize::MAX } else { 1 }),
        "registry_version": reg.registry_version,
    });
    if let Some(p) = &r.policy {
        page["policy"] = json!({"do": p.do_, "dont": p.dont, "edge_cases": p.edge_cases});
    }
    if full {
        page["description"] = json!(r.description);
        page["tool_name"] = json!(r.tool_name);
        page["destructive"] = json!(r.destructive);
        page["dry_run_default"] = json!(r.dry_run_default);
        page["id_discovery"] = json!(r.id_discovery);
        if !r.aliases.is_empty() {
            page["aliases"] = json!(r.aliases);
        }
    }
    page
}
