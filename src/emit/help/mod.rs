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

use super::lookup::HelpSpans;
use super::FileMap;
use super::PageMemo;
use crate::model::help::{HelpDoc, HelpPages, ROOT};
use crate::model::help::{PageOrigin, PageText, PageTexts};
use crate::model::registry::{GroupNode, Kind, OpRecord, Registry};
use serde_json::{json, Value};
use std::collections::BTreeMap;

mod direct;
mod paging;
pub use paging::PAGE_MARK;
use paging::{empty_page, fits, paged, paged_over, split_description};

pub const FILE: &str = "help.json";

/// Longest argument description in short pages.
const SHORT_ARG_CHARS: usize = 60;

/// Longest argument description in full pages: past it, the schema has the rest.
const FULL_ARG_CHARS: usize = 1_500;

/// Most enum values one argument shows on a page.
const MAX_ENUM: usize = 60;

/// `help.json`, and where each page lies in it (for `lookup.json`).
pub(crate) fn emit(doc: &PageTexts) -> (FileMap, HelpSpans) {
    let (text, spans) = render_texts_spanned(doc);
    (FileMap::from([(FILE.to_string(), text)]), spans)
}

/// [`render`] from the pages as text: the same bytes (`texts_render_as_values_do` proves it),
/// written as `serde_json::to_string_pretty` lays out the document around them.
pub fn render_texts(doc: &PageTexts) -> String {
    render_texts_spanned(doc).0
}

/// [`render_texts`], with where each page lies in the text (start and length of its short and
/// full page), taken as it is written.
fn render_texts_spanned(doc: &PageTexts) -> (String, HelpSpans) {
    let json = |s: &str| serde_json::to_string(s).unwrap_or_default();
    // Sized exactly (`rendered_len`): at 10,000 ops the file is 56 MB, and a buffer that outgrows
    // a guess doubles to twice that while every emitter's output is held.
    let mut out = String::with_capacity(rendered_len(doc));
    // A page sits three objects deep: its lines after the first are indented six spaces. Its
    // start and length in the text.
    let page = |out: &mut String, text: &str| -> [u64; 2] {
        let start = out.len();
        // Line by line with memchr's search, each line's bytes copied in one go (a line is
        // about 30 bytes; `split` and two pushes a line were a third of this function).
        let mut from = 0;
        for at in memchr::memchr_iter(b'\n', text.as_bytes()) {
            out.push_str(&text[from..=at]);
            out.push_str("      ");
            from = at + 1;
        }
        out.push_str(&text[from..]);
        [start as u64, (out.len() - start) as u64]
    };
    // In page order, which is path order: made into the map in one go at the end (inserted one
    // by one, the paths' comparisons were a sixth of this function at 10,000 ops).
    let mut spans = Vec::with_capacity(doc.pages.len());
    out.push_str("{\n  \"generator\": ");
    out.push_str(&json(&doc.generator));
    out.push_str(",\n  \"pages\": {");
    for (k, (path, p)) in doc.pages.iter().enumerate() {
        out.push_str(if k == 0 { "\n    " } else { ",\n    " });
        out.push_str(&json(path));
        out.push_str(": {\n      \"full\": ");
        let [f, fl] = page(&mut out, &p.full);
        out.push_str(",\n      \"short\": ");
        let [s, sl] = page(&mut out, &p.short);
        out.push_str("\n    }");
        spans.push((path.clone(), [s, sl, f, fl]));
    }
    if !doc.pages.is_empty() {
        out.push_str("\n  ");
    }
    out.push_str("},\n  \"registry_version\": ");
    out.push_str(&json(&doc.registry_version));
    out.push_str("\n}\n");
    let bytes = out.len() as u64;
    (
        out,
        HelpSpans {
            pages: spans.into_iter().collect(),
            bytes,
        },
    )
}

/// The length of [`render_texts`]'s output, to the byte: each page's lines after the first
/// gain six spaces of indentation (`texts_render_as_values_do` checks the sum on every repo
/// catalog).
fn rendered_len(doc: &PageTexts) -> usize {
    let json_len = |s: &str| serde_json::to_string(s).map_or(0, |j| j.len());
    let page_len = |text: &str| text.len() + 6 * text.bytes().filter(|b| *b == b'\n').count();
    let pages: usize = doc
        .pages
        .iter()
        .map(|(path, p)| {
            // ",\n    " PATH ": {\n      \"full\": " FULL ",\n      \"short\": " SHORT "\n    }"
            6 + json_len(path) + 18 + page_len(&p.full) + 17 + page_len(&p.short) + 6
        })
        .sum();
    let first_page_comma = usize::from(!doc.pages.is_empty());
    let after_pages = if doc.pages.is_empty() { 0 } else { 3 };
    // "{\n  \"generator\": " GEN ",\n  \"pages\": {" PAGES "},\n  \"registry_version\": " VERSION "\n}\n"
    17 + json_len(&doc.generator) + 14 + pages - first_page_comma
        + after_pages
        + 25
        + json_len(&doc.registry_version)
        + 3
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
    let pages = pages_as(
        reg,
        keep,
        &std::sync::Arc::new,
        &|_, _, pages| pages(),
        &|_, _, _, _| None,
    )
    .into_iter()
    .map(|(path, (short, full))| (path, HelpPages { short, full }))
    .collect();
    HelpDoc::new(
        crate::model::registry::GENERATOR.into(),
        reg.registry_version.clone(),
        pages,
    )
}

/// All pages as text (what a build holds while its emitters run: a fraction of the memory of
/// the pages as values). With `memo`, an op whose record is unchanged takes its pages from an
/// earlier build.
pub(crate) fn build_texts(reg: &Registry, memo: Option<&PageMemo>) -> PageTexts {
    // Each page with where it came from, when the memo can answer for it (see
    // `PageText::origins`).
    type Made = (Box<str>, Option<PageOrigin>);
    let pretty = |v: Value| -> Made {
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        (text.into_boxed_str(), None)
    };
    let op_pages = |r: &OpRecord, search: Option<&str>, pages: &dyn Fn() -> PageList<Made>| {
        // Written straight to text when the pages fit; through `Value`s when they may not.
        let fresh = || match direct::op_page_texts(reg, r, search) {
            Some((short, full)) => vec![((short, None), (full, None))],
            None => pages(),
        };
        let Some(memo) = memo else {
            return fresh();
        };
        // What else an op's pages show: the search op its note names, and the help tool a
        // paged op's later pages are read with.
        let context = [search.unwrap_or_default(), &reg.gateway.help];
        let (text, origin) = memo.page(OP_PAGES_STEP, r, &context, &reg.registry_version, || {
            let made: PageList<Box<str>> = fresh().into_iter().map(|(s, f)| (s.0, f.0)).collect();
            join_pages(&made)
        });
        let Some(split) = split_pages(&text) else {
            return fresh();
        };
        // Page k of the op, short (0) or full (1).
        let of = |k: usize, which: u8| {
            origin.map(|origin| -> PageOrigin {
                let mut hasher = blake3::Hasher::new();
                hasher.update(&origin);
                hasher.update(&(k as u64).to_le_bytes());
                hasher.update(&[which]);
                *hasher.finalize().as_bytes()
            })
        };
        split
            .into_iter()
            .enumerate()
            .map(|(k, (s, f))| ((s, of(k, 0)), (f, of(k, 1))))
            .collect()
    };
    let entity_pages = |path: &str, e: &str, node: &GroupNode, kind: Option<Kind>| {
        direct::entity_page_texts(reg, path, e, node, kind).map(|(s, f)| ((s, None), (f, None)))
    };
    let pages = pages_as(reg, &|_| true, &pretty, &op_pages, &entity_pages)
        .into_iter()
        .map(|(path, ((short, of_short), (full, of_full)))| {
            let origins = of_short.zip(of_full).map(|(s, f)| [s, f]);
            let text = PageText {
                short,
                full,
                origins,
            };
            (path, text)
        })
        .collect();
    PageTexts {
        generator: crate::model::registry::GENERATOR.into(),
        registry_version: reg.registry_version.clone(),
        pages,
    }
}

/// One path's pages: its short and full page, then those of `PATH@2`, `PATH@3`, ...
type PageList<T> = Vec<(T, T)>;

/// Given an op, the search op its notes name and how to make its pages, its pages (made, or
/// taken from elsewhere).
/// Shared by the cores the ops' pages are made on.
type OpPages<'a, T> =
    dyn Fn(&OpRecord, Option<&str>, &dyn Fn() -> PageList<T>) -> PageList<T> + Sync + 'a;

/// Given an entity page (the entity's path, the entity, its group, and the kind of ops it lists,
/// if one), its short and full page when they can be made without paging.
type EntityPages<'a, T> =
    dyn Fn(&str, &str, &GroupNode, Option<Kind>) -> Option<(T, T)> + Sync + 'a;

/// The memo step of one op's help pages (as text, joined by `join_pages`).
const OP_PAGES_STEP: &str = "help op pages 1";

/// An op's page texts as one memo entry: JSON text never holds a raw NUL (serde escapes every
/// control character), so NUL separates them.
fn join_pages(pages: &PageList<Box<str>>) -> String {
    let mut out = String::new();
    for (short, full) in pages {
        for text in [short, full] {
            if !out.is_empty() {
                out.push('\0');
            }
            out.push_str(text);
        }
    }
    out
}

/// `join_pages` undone; `None` for text it cannot have written.
fn split_pages(text: &str) -> Option<PageList<Box<str>>> {
    let texts: Vec<&str> = text.split('\0').collect();
    if !texts.len().is_multiple_of(2) || texts.iter().any(|t| t.is_empty()) {
        return None;
    }
    Some(
        texts
            .chunks(2)
            .map(|pair| (pair[0].into(), pair[1].into()))
            .collect(),
    )
}

/// Each kept path's short and full page, made into `T` as soon as it is built. `op_pages`
/// gets each op with the search op its notes name and the op's pages to make; it may answer
/// them from elsewhere (the build's memo). `entity_pages` may make an entity's pages another
/// way (straight to text); `None` makes them here.
fn pages_as<T: Send>(
    reg: &Registry,
    keep: &dyn Fn(&str) -> bool,
    make: &(dyn Fn(Value) -> T + Sync),
    op_pages: &OpPages<T>,
    entity_pages: &EntityPages<T>,
) -> BTreeMap<String, (T, T)> {
    let mut pages = BTreeMap::new();
    // A directory page is paged when its listings are long (`paged`): its first page keeps the
    // path, the others are `PATH@2`, `PATH@3`, ...
    let page_list = |path: &str, f: &dyn Fn(bool) -> Value, lists: &[&str]| -> PageList<T> {
        // Most pages fit: measured once here, not again by each splitting step.
        let split = |page: Value| {
            if fits(&page) {
                vec![page]
            } else {
                // Measured over the budget: counted again only if cutting its description
                // changed it.
                match split_description(page) {
                    (cut, true) => paged(cut, path, lists, reg),
                    (page, false) => paged_over(page, path, lists, reg),
                }
            }
        };
        let short = split(f(false));
        let full = split(f(true));
        let n = short.len().max(full.len());
        let mut short = short.into_iter();
        let mut full = full.into_iter();
        (1..=n)
            .map(|k| {
                // A format whose listings end sooner answers the later numbers with an empty
                // page.
                let version = &reg.registry_version;
                let s = short
                    .next()
                    .unwrap_or_else(|| empty_page(path, k, n, version));
                let f = full
                    .next()
                    .unwrap_or_else(|| empty_page(path, k, n, version));
                (make(s), make(f))
            })
            .collect()
    };
    let mut insert = |path: &str, list: PageList<T>| {
        // An op page replaces a directory page of the same path: its later pages too.
        for k in 2.. {
            if pages.remove(&format!("{path}{PAGE_MARK}{k}")).is_none() {
                break;
            }
        }
        for (k, pair) in list.into_iter().enumerate() {
            let key = if k == 0 {
                path.to_string()
            } else {
                format!("{path}{PAGE_MARK}{}", k + 1)
            };
            pages.insert(key, pair);
        }
    };
    // The directory pages (root, groups, entities), each measured against the page budget, are
    // made on every core too, and put in in this order.
    enum Directory<'r> {
        Root,
        Group(&'r str, &'r GroupNode),
        Entity {
            path: String,
            kpath: String,
            entity: &'r str,
            node: &'r GroupNode,
            kind: Option<Kind>,
        },
    }
    let mut directories = Vec::new();
    if keep(ROOT) {
        directories.push(Directory::Root);
    }
    for (g, node) in &reg.tree {
        if keep(g) {
            directories.push(Directory::Group(g, node));
        }
        for e in node.entities.keys() {
            let path = format!("{g}.{e}");
            for kind in [None, Some(Kind::Read), Some(Kind::Write)] {
                let kpath = match kind {
                    Some(k) => format!("{path}.{}", k.as_str()),
                    None => path.clone(),
                };
                if keep(&kpath) {
                    directories.push(Directory::Entity {
                        path: path.clone(),
                        kpath,
                        entity: e,
                        node,
                        kind,
                    });
                }
            }
        }
    }
    let made = crate::compiler::parallel::map_in_order(&directories, |d| match d {
        Directory::Root => page_list(ROOT, &|full| root(reg, full), &["groups"]),
        Directory::Group(g, node) => {
            let lists = ["entities", "ops", "all_ops"];
            page_list(g, &|full| group(reg, g, node, full), &lists)
        }
        Directory::Entity {
            path,
            kpath,
            entity: e,
            node,
            kind,
        } => match entity_pages(path, e, node, *kind) {
            Some(pair) => vec![pair],
            None => {
                let f = |full| entity(reg, path, e, node, *kind, full);
                page_list(kpath, &f, &["ops"])
            }
        },
    });
    for (d, list) in directories.iter().zip(made) {
        let path = match d {
            Directory::Root => ROOT,
            Directory::Group(g, _) => g,
            Directory::Entity { kpath, .. } => kpath,
        };
        insert(path, list);
    }
    // Ops last: an op page replaces a directory page of the same path. Made on every core (a
    // rebuild takes most from the memo, and the emitters waiting for these pages would
    // otherwise leave a core idle), put in one by one in the registry's order.
    let searches = SearchOps::of(reg);
    let ops: Vec<&OpRecord> = reg
        .ops
        .values()
        .filter(|r| !r.hidden && keep(&r.op))
        .collect();
    let lists = crate::compiler::parallel::map_in_order(&ops, |r| {
        op_pages(r, searches.get(r), &|| {
            page_list(
                &r.op,
                &|full| op_page(reg, &searches, r, full),
                &["description_more", "args", "examples"],
            )
        })
    });
    for (r, list) in ops.into_iter().zip(lists) {
        insert(&r.op, list);
    }
    pages
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
    to_value(direct::listing(r, full))
}

/// A page made as text by `direct`, as a `Value` (for paging and for `build`): one definition
/// of each page's fields serves both.
fn to_value(page: impl serde::Serialize) -> Value {
    serde_json::to_value(page).expect("a help page is plain data")
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
    let mut contract = json!({
        "help": {"tool": reg.gateway.help, "shape": {"path": "<path>", "format": "short|full"}, "example": help_example},
        "exec": {"tool": reg.gateway.exec, "shape": {"op": "<op>", "args": {"<name>": "<value>"}}, "example": exec_example},
        "search": {"tool": reg.gateway.search, "shape": {"query": "<words>"}},
        "on_error": format!("Read error.help_path with {}, fix the fields in error.details.field_errors, then retry once. Replace every <placeholder> with a real value.", reg.gateway.help),
    });
    if let Some(batch) = &reg.gateway.batch {
        contract["batch"] = json!({
            "tool": batch,
            "shape": {"items": [{"help": {"path": "<op>"}}, {"exec": {"op": "<op>", "args": {}}}]},
            "when": "first use of an op, or several independent calls: one round trip",
        });
    }
    contract
}

fn root(reg: &Registry, full: bool) -> Value {
    let mut tree: Vec<(&String, &GroupNode)> = reg.tree.iter().collect();
    // A long directory is read page by page: the groups with the most ops come first.
    if reg.tree.len() > crate::model::registry::MAX_LISTED_GROUPS {
        tree.sort_by_cached_key(|(g, node)| (std::cmp::Reverse(group_ops(reg, node).len()), *g));
    }
    let groups: Vec<Value> = tree
        .into_iter()
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
    to_value(direct::entity_page(reg, path, e, node, kind, full))
}

fn first_sentence(text: &str, max: usize) -> String {
    let s = crate::model::text::first_sentence(text);
    crate::model::text::truncate_words(&s, max)
}

/// The first search op (in op order) of each group and entity, which a create op's notes name:
/// looked up per create op, it was a scan of every op (quadratic in a fleet catalog).
struct SearchOps<'r>(std::collections::HashMap<(&'r str, Option<&'r str>), &'r str>);

impl<'r> SearchOps<'r> {
    fn of(reg: &'r Registry) -> SearchOps<'r> {
        let mut first = std::collections::HashMap::new();
        for o in reg.ops.values().filter(|o| o.action == "search") {
            first
                .entry((o.group.as_str(), o.entity.as_deref()))
                .or_insert(o.op.as_str());
        }
        SearchOps(first)
    }

    fn get(&self, r: &OpRecord) -> Option<&'r str> {
        self.0
            .get(&(r.group.as_str(), r.entity.as_deref()))
            .copied()
    }
}

/// Behavioral notes derived from the IR: what to call first, confirmations, dry-run defaults.
fn notes(search: Option<&str>, r: &OpRecord) -> Vec<String> {
    let mut notes = Vec::new();
    // Alternatives the schema demands ("`id` or `name`") that the argument table cannot show.
    notes.extend(crate::model::schema::top_level_constraint(
        &r.parameters_schema,
    ));
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
        if let Some(search) = search {
            notes.push(format!("Search with {search} first to avoid duplicates."));
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

fn op_page(reg: &Registry, searches: &SearchOps, r: &OpRecord, full: bool) -> Value {
    to_value(direct::op_page(reg, r, searches.get(r), full))
}

#[cfg(test)]
mod tests;
