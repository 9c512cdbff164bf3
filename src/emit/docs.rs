//! `docs/`: markdown help pages and an mdBook around them, rendered with handlebars templates.
//!
//! One page per op, group and entity, an index grouped like seed 003's `tools/README.md`,
//! `SUMMARY.md` and `book.toml` (`create-missing = false`, so a stale SUMMARY entry fails the book
//! instead of making an empty page): `mdbook build generated/docs` publishes the site.
//!
//! Templates live in `templates/` (embedded in toolreg); `--templates DIR` points at your own
//! copies, file by file. Handlebars runs in strict mode (a missing field is an error, not an empty
//! string) with HTML escaping off (this is markdown). Op, group and entity pages from the
//! built-in templates are written by `builtin_op_page`, `builtin_group_page` and
//! `builtin_entity_page` instead, the same bytes without handlebars (most of this emitter's time
//! went to rendering them).
//!
//! Why it is one file: the built-in pages exist twice, as `templates/*.md.hbs` with the
//! contexts they read and as the `builtin_*_page` writers; the tests that hold the two equal,
//! byte for byte, need both and the escaping helpers they share (over 900 lines, a third of them
//! those tests).

use super::FileMap;
use crate::model::diag::{Code, Diagnostic, Diagnostics, Location};
use crate::model::registry::{OpRecord, Registry};
use handlebars::Handlebars;
use serde_json::{json, Value};
use std::path::Path;

/// The templates and the built-in text of each.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("op.md.hbs", include_str!("../../templates/op.md.hbs")),
    ("group.md.hbs", include_str!("../../templates/group.md.hbs")),
    (
        "entity.md.hbs",
        include_str!("../../templates/entity.md.hbs"),
    ),
    ("index.md.hbs", include_str!("../../templates/index.md.hbs")),
    (
        "SUMMARY.md.hbs",
        include_str!("../../templates/SUMMARY.md.hbs"),
    ),
    (
        "book.toml.hbs",
        include_str!("../../templates/book.toml.hbs"),
    ),
];

/// Catalog text (descriptions, summaries, policy lines) as markdown prose that shows, never runs
/// or fetches: HTML's special characters become entities and link brackets are escaped, so no
/// `<script>`, `<img onerror>`, autolink, link or image survives into the published site.
/// Control characters never get here: the poisoning lint stops them at build time.
fn prose(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Markdown table cell of catalog text: escaped prose, no pipes or line breaks.
fn cell(s: &str) -> String {
    prose(s.trim())
        .replace('|', "\\|")
        .replace("\r\n", "\n")
        .replace('\n', "<br>")
}

/// A JSON value as inline code, whatever backticks it holds: the span's delimiter is one
/// backtick longer than the longest run inside (CommonMark), so the value stays code.
fn short_json(v: &Value) -> String {
    let text = defuse_json(&v.to_string()).replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// Where an op's page lives, relative to `src/`.
pub fn op_path(r: &OpRecord) -> String {
    let (g, op) = (seg(&r.group), seg(&r.op));
    match &r.entity {
        Some(e) => format!("{g}/{}/{op}.md", seg(e)),
        None => format!("{g}/{op}.md"),
    }
}

/// A name as one path segment (long names shortened with a hash; see `emit::path_segment`).
fn seg(name: &str) -> std::borrow::Cow<'_, str> {
    super::path_segment(name)
}

fn pretty(v: &Value) -> String {
    defuse_json(&serde_json::to_string_pretty(v).expect("JSON serializes"))
}

/// mdBook expands `{{#include PATH}}`, `{{#playground}}`, `{{#rustdoc_include}}` (and
/// `{{#title}}`) anywhere in a chapter, code blocks and HTML comments included, with `..`
/// allowed: catalog text that put `{{` on a page would publish any file the docs build can read.
/// So no `{{` from catalog text ever reaches a page: every `{` followed by another `{` is
/// written in a form that shows the same character but cannot open a directive. The poisoning
/// lint also refuses directive syntax in tool text (TR090 `docs-directive`); this is the guard
/// for overlay text, and for whatever a rule misses.
fn defuse_with(s: &str, brace: &str) -> String {
    if !s.contains("{{") {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '{' && chars.peek() == Some(&'{') {
            out.push_str(brace);
        } else {
            out.push(c);
        }
    }
    out
}

/// Markdown prose, table cells and HTML comments: an entity, which renders as `{`.
fn defuse_markdown(s: &str) -> String {
    defuse_with(s, "&#123;")
}

/// JSON in a code block: outside strings a `{` is never followed by `{` (serde_json writes a
/// key, a newline or `}` after it), so every `{{` is inside a string, where `\u007b` is the
/// same character.
fn defuse_json(s: &str) -> String {
    defuse_with(s, "\\u007b")
}

/// Plain text in a code block (the usage line), where neither entities nor JSON escapes exist:
/// a word joiner (U+2060, invisible) between the braces.
fn defuse_code(s: &str) -> String {
    defuse_with(s, "{\u{2060}")
}

/// Every string of a page's context made safe for a chapter (see `defuse_with`); code-block
/// fields were defused in their own form before, and hold no `{{` any more.
fn defuse_context(v: &mut Value) {
    match v {
        Value::String(s) if s.contains("{{") => *s = defuse_markdown(s),
        Value::Array(items) => items.iter_mut().for_each(defuse_context),
        Value::Object(map) => map.values_mut().for_each(defuse_context),
        _ => {}
    }
}

/// The notes an op's page lists: where its ids come from, a destructive op's warning, its
/// other names.
fn op_notes(r: &OpRecord) -> Vec<String> {
    let mut notes = Vec::new();
    if r.id_discovery.len() > 1 {
        notes.push(format!(
            "Find the ids first: {}.",
            r.id_discovery
                .iter()
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(" then ")
        ));
    }
    if r.destructive {
        notes.push(
            "Destructive: confirm with the user unless they asked for exactly this.".to_string(),
        );
    }
    if !r.aliases.is_empty() {
        notes.push(format!(
            "Also called: {}.",
            r.aliases
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    notes
}

fn op_context(reg: &Registry, r: &OpRecord, header: &str) -> Value {
    let up = if r.entity.is_some() { "../" } else { "" };
    let args: Vec<Value> = r
        .args
        .iter()
        .map(|a| {
            json!({
                "name": a.name,
                "type": cell(&match &a.range { Some(range) => format!("{} ({range})", a.type_), None => a.type_.clone() }),
                "required": a.required,
                "default": a.default.as_ref().map(short_json).unwrap_or_default(),
                "values": a.enum_.as_ref().map(|e| e.iter().map(short_json).collect::<Vec<_>>().join(", ")).unwrap_or_default(),
                "description": cell(&a.description),
            })
        })
        .collect();
    let notes = op_notes(r);
    json!({
        "header": header,
        "op": r.op,
        "summary": prose(&r.summary),
        "description": if r.description.trim() == r.summary.trim() { String::new() } else { prose(r.description.trim()) },
        "usage": defuse_code(&r.usage()),
        "tool_name": r.tool_name,
        "kind": r.kind.as_str(),
        "destructive": r.destructive,
        "dry_run_default": r.dry_run_default,
        "group": r.group,
        "group_link": format!("{up}README.md"),
        "entity": r.entity.clone().unwrap_or_default(),
        "entity_link": "README.md",
        "args": args,
        "policy": r.policy.as_ref().map(|p| {
            let lines = |l: &[String]| l.iter().map(|x| prose(x)).collect::<Vec<_>>();
            json!({"do": lines(&p.do_), "dont": lines(&p.dont), "edge_cases": lines(&p.edge_cases)})
        }).unwrap_or(Value::Null),
        "notes": notes,
        "examples": r.examples.iter().map(|e| json!({"description": prose(&e.description), "json": pretty(&json!({"op": r.op, "args": e.args}))})).collect::<Vec<_>>(),
        "schema": pretty(&r.parameters_schema),
        "registry_version": reg.registry_version,
    })
}

/// A group's or an entity's docs page: written already, or a template and its context.
enum Directory {
    Written(String),
    Context(&'static str, Value),
}

/// An entity's page as the built-in `entity.md.hbs` renders it, every text defused as
/// `defuse_context` would (`summary` is prose already). A unit test holds it and
/// [`builtin_group_page`] to handlebars on every repo catalog and both fleets.
fn builtin_entity_page(
    header: &str,
    group: &str,
    entity: &str,
    summary: &str,
    ops: &[&OpRecord],
) -> String {
    use std::fmt::Write as _;
    let md = defuse_markdown;
    let mut p = String::with_capacity(256 + ops.len() * 160);
    let _ = write!(
        p,
        "<!-- {} -->\n# {}.{}\n\n",
        md(header),
        md(group),
        md(entity)
    );
    if !summary.is_empty() {
        let _ = write!(p, "{}\n\n", md(summary));
    }
    let _ = write!(
        p,
        "Part of [{}](../README.md).\n\n| op | kind | summary |\n| --- | --- | --- |\n",
        md(group)
    );
    for r in ops {
        let _ = writeln!(
            p,
            "| [`{}`]({}) | {} | {} |",
            md(&r.op),
            md(&format!("{}.md", seg(&r.op))),
            r.kind.as_str(),
            md(&cell(&r.summary))
        );
    }
    finish_page(p)
}

/// A group's page as the built-in `group.md.hbs` renders it, from the listings its context
/// would hold (`{name, summary, count, link}` per entity, `{op, summary, link}` per op).
fn builtin_group_page(
    header: &str,
    group: &str,
    summary: &str,
    entities: &[Value],
    ops: &[Value],
) -> String {
    use std::fmt::Write as _;
    let md = defuse_markdown;
    let text = field;
    let mut p = String::with_capacity(256 + (entities.len() + ops.len()) * 160);
    let _ = write!(
        p,
        "<!-- {} -->\n# {}\n\n{}\n\n",
        md(header),
        md(group),
        md(summary)
    );
    if !entities.is_empty() {
        p.push_str("## Entities\n\n");
        for e in entities {
            let _ = write!(p, "- **[{}]({})**", text(e, "name"), text(e, "link"));
            if !text(e, "summary").is_empty() {
                let _ = write!(p, " - {}", text(e, "summary"));
            }
            let _ = writeln!(p, " ({} ops)", e["count"]);
        }
    }
    if !ops.is_empty() {
        p.push_str("\n## Ops\n\n");
        for o in ops {
            let _ = writeln!(
                p,
                "- **[{}]({})** - {}",
                text(o, "op"),
                text(o, "link"),
                text(o, "summary")
            );
        }
    }
    finish_page(p)
}

/// A page's text as the renderer keeps it: trailing blank space trimmed, one line break.
fn finish_page(mut p: String) -> String {
    p.truncate(p.trim_end().len());
    p.push('\n');
    p
}

/// The book's index as the built-in `index.md.hbs` renders `book`, every text defused as
/// `defuse_context` would. Handlebars' walk of the index and the summary (every op listed, each
/// from a context of every op) was most of what the docs emitter spent in a one-tool rebuild of
/// 10,000 tools. `directory_pages_are_the_builtin_templates` holds these writers to handlebars.
fn builtin_index_page(book: &Value) -> String {
    use std::fmt::Write as _;
    let text = field;
    let groups = list(book, "groups");
    let ops: usize = groups.iter().map(|g| list(g, "ops").len()).sum();
    let mut p = String::with_capacity(1024 + groups.len() * 256 + ops * 160);
    let _ = write!(
        p,
        "<!-- {} -->\n# {}\n\n",
        text(book, "header"),
        text(book, "title")
    );
    let description = text(book, "description");
    if !description.is_empty() {
        let _ = write!(p, "{description}\n\n");
    }
    let _ = write!(
        p,
        "{} ops in {} groups. Registry version `{}`.\n\n## Gateway tools\n\n\
         A model reaches every op below through these tools:\n\n",
        book["count"],
        book["group_count"],
        text(book, "registry_version")
    );
    for g in list(book, "gateway") {
        let (name, call, what) = (text(g, "name"), text(g, "call"), text(g, "what"));
        let _ = writeln!(p, "- `{name}` `{call}`: {what}.");
    }
    p.push_str("\n## Quick Reference\n");
    for g in groups {
        let (name, link, summary) = (text(g, "name"), text(g, "link"), text(g, "summary"));
        let _ = write!(p, "\n### [{name}]({link})\n\n{summary}\n\n");
        for o in list(g, "ops") {
            let (op, link, summary) = (text(o, "op"), text(o, "link"), text(o, "summary"));
            let _ = writeln!(p, "- **[{op}]({link})** - {summary}");
        }
    }
    finish_page(p)
}

/// `SUMMARY.md` as the built-in template renders the book's groups (their entities and ops,
/// then the group's own ops), every text defused as `defuse_context` would.
fn builtin_summary_page(header: &str, book: &Value) -> String {
    use std::fmt::Write as _;
    let text = field;
    let mut p = String::with_capacity(1024 + book["count"].as_u64().unwrap_or(0) as usize * 80);
    let _ = write!(
        p,
        "<!-- {} -->\n# Summary\n\n[Overview](README.md)\n",
        defuse_markdown(header)
    );
    for g in list(book, "groups") {
        let _ = write!(p, "\n- [{}]({})\n", text(g, "name"), text(g, "link"));
        for e in list(g, "entities") {
            let _ = writeln!(p, "  - [{}]({})", text(e, "name"), text(e, "link"));
            for o in list(e, "ops") {
                let _ = writeln!(p, "    - [{}]({})", text(o, "op"), text(o, "link"));
            }
        }
        for o in list(g, "direct") {
            let _ = writeln!(p, "  - [{}]({})", text(o, "op"), text(o, "link"));
        }
    }
    finish_page(p)
}

/// The string at `key` of `v`, defused as `defuse_context` would (none: empty).
fn field(v: &Value, key: &str) -> String {
    defuse_markdown(v[key].as_str().unwrap_or_default())
}

/// The array at `key` of `v` (none: empty).
fn list<'v>(v: &'v Value, key: &str) -> &'v [Value] {
    v[key].as_array().map_or(&[][..], Vec::as_slice)
}

/// `book.toml` as the built-in template renders it (not a chapter: nothing defused).
fn builtin_book_toml(header: &str, title: &str) -> String {
    finish_page(format!(
        "# {header}\n[book]\ntitle = \"{title}\"\nsrc = \"src\"\n\n[build]\n\
         # A SUMMARY entry without its page is an error, not a silently created empty page.\n\
         create-missing = false\n"
    ))
}

/// An op's page as the built-in `op.md.hbs` renders [`op_context`], written straight into one
/// string: handlebars' walk of the template and the context it reads (one `Value` tree per op)
/// were most of the docs emitter, itself a tenth of a full build. Each string is defused as
/// `defuse_context` would (the code-block fields hold no `{{` by then). A unit test holds it to
/// handlebars, byte for byte, on every op of the repo's catalogs and on records with every
/// optional part set or empty; a template of your own still goes through handlebars.
fn builtin_op_page(r: &OpRecord, header: &str) -> String {
    use std::fmt::Write as _;
    let md = |s: &str| -> String { defuse_markdown(s) };
    let mut p = String::with_capacity(4096);
    let _ = write!(
        p,
        "<!-- {} -->\n# `{}`\n\n{}\n\n",
        md(header),
        md(&r.op),
        md(&prose(&r.summary))
    );
    let _ = write!(
        p,
        "```text\n{}\n```\n\n| | |\n| --- | --- |\n",
        defuse_code(&r.usage())
    );
    let _ = write!(
        p,
        "| tool name | `{}` |\n| kind | {}",
        md(&r.tool_name),
        r.kind.as_str()
    );
    if r.destructive {
        p.push_str(" (destructive)");
    }
    if r.dry_run_default {
        p.push_str(", dry run by default");
    }
    let up = if r.entity.is_some() { "../" } else { "" };
    let _ = writeln!(p, " |\n| group | [{}]({up}README.md) |", md(&r.group));
    if let Some(e) = r.entity.as_deref().filter(|e| !e.is_empty()) {
        let _ = writeln!(p, "| entity | [{}](README.md) |", md(e));
    }
    let description = if r.description.trim() == r.summary.trim() {
        String::new()
    } else {
        md(&prose(r.description.trim()))
    };
    let _ = write!(p, "\n{description}\n\n## Arguments\n\n");
    if r.args.is_empty() {
        p.push_str("This op takes no arguments.\n");
    } else {
        p.push_str("| name | type | required | default | values | description |\n");
        p.push_str("| --- | --- | --- | --- | --- | --- |\n");
        for a in &r.args {
            let type_ = match &a.range {
                Some(range) => cell(&format!("{} ({range})", a.type_)),
                None => cell(&a.type_),
            };
            let default = a.default.as_ref().map(short_json).unwrap_or_default();
            let values = a
                .enum_
                .as_ref()
                .map(|e| e.iter().map(short_json).collect::<Vec<_>>().join(", "));
            let _ = writeln!(
                p,
                "| `{}` | {} | {} | {} | {} | {} |",
                md(&a.name),
                md(&type_),
                if a.required { "yes" } else { "no" },
                md(&default),
                md(&values.unwrap_or_default()),
                md(&cell(&a.description)),
            );
        }
    }
    let list = |p: &mut String, items: &[String]| {
        for item in items {
            let _ = writeln!(p, "- {}", md(&prose(item)));
        }
    };
    if let Some(policy) = &r.policy {
        p.push_str("\n## Policy\n\n");
        if !policy.do_.is_empty() {
            p.push_str("**Do** when:\n");
            list(&mut p, &policy.do_);
        }
        if !policy.dont.is_empty() {
            p.push_str("\n**Don't** when:\n");
            list(&mut p, &policy.dont);
        }
        if !policy.edge_cases.is_empty() {
            p.push_str("\nEdge cases:\n");
            list(&mut p, &policy.edge_cases);
        }
    }
    let notes = op_notes(r);
    if !notes.is_empty() {
        p.push_str("\n## Notes\n\n");
        for note in &notes {
            let _ = writeln!(p, "- {}", md(note));
        }
    }
    p.push_str("\n## Examples\n\n");
    for e in &r.examples {
        let json = pretty(&json!({"op": r.op, "args": e.args}));
        let _ = write!(
            p,
            "{}\n\n```json\n{json}\n```\n\n",
            md(&prose(&e.description))
        );
    }
    let _ = write!(
        p,
        "## Schema\n\n```json\n{}\n```",
        pretty(&r.parameters_schema)
    );
    let end = p.trim_end().len();
    p.truncate(end);
    p.push('\n');
    p
}

fn visible<'a>(reg: &'a Registry, ops: &'a [String]) -> impl Iterator<Item = &'a OpRecord> {
    ops.iter()
        .filter_map(|o| reg.ops.get(o))
        .filter(|r| !r.hidden)
}

/// The memo step of one op's page (built-in template only).
const OP_PAGE_STEP: &str = "docs op page 2";

/// Renders every page; template problems are TR071 errors (the files are then left out). With
/// `memo`, an op whose record is unchanged takes its page from an earlier build, when the op
/// template is the built-in one (a template of your own could show the version in any form, so
/// its pages are always rendered).
pub(crate) fn render(
    reg: &Registry,
    templates_dir: Option<&Path>,
    memo: Option<&super::PageMemo>,
    diags: &mut Diagnostics,
) -> FileMap {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    let mut ok = true;
    for (name, builtin) in TEMPLATES {
        let custom = templates_dir.map(|d| d.join(name)).filter(|p| p.exists());
        let (text, shown) = match &custom {
            Some(p) => match std::fs::read_to_string(p) {
                Ok(t) => (t, p.display().to_string()),
                Err(e) => {
                    diags.push(
                        Diagnostic::new(
                            Code::Template,
                            format!("cannot read template `{}`: {e}", p.display()),
                        )
                        .at(Location::file(p.display().to_string()))
                        .help("check the --templates folder"),
                    );
                    ok = false;
                    continue;
                }
            },
            None => (builtin.to_string(), format!("templates/{name} (built in)")),
        };
        if let Err(e) = hb.register_template_string(name, &text) {
            let loc = match e.pos() {
                Some((l, c)) => Location::at(shown.clone(), l, c),
                None => Location::file(shown.clone()),
            };
            diags.push(Diagnostic::new(Code::Template, format!("template `{name}` does not parse: {}", e.reason())).at(loc).help("fix the handlebars syntax; see the built-in templates/ for the fields each page gets"));
            ok = false;
        }
    }
    if !ok {
        return FileMap::new();
    }
    // The book's own pages (index, SUMMARY, book.toml) carry the registry version; a group's,
    // an entity's and an op's page only the registry's name, so one changed tool changes only
    // the pages that show it: a docs folder kept in git, or a published site, sees a change as
    // large as the catalog's, and a rebuild writes a few pages instead of every one.
    let header = format!(
        "@generated by toolreg from registry `{}` ({}). Do not edit: run `toolreg build`.",
        reg.name, reg.registry_version
    );
    let page_header = format!(
        "@generated by toolreg from registry `{}`. Do not edit: run `toolreg build`.",
        reg.name
    );
    // Group and entity pages: written straight to text with the built-in templates (as op
    // pages are), else a context for handlebars.
    let builtin = |name: &str| !templates_dir.is_some_and(|d| d.join(name).exists());
    let (builtin_entity, builtin_group) = (builtin("entity.md.hbs"), builtin("group.md.hbs"));
    let mut directory: Vec<(String, Directory)> = Vec::new();
    let mut index_groups = Vec::new();
    for (g, node) in &reg.tree {
        let group_ops: Vec<Value> = visible(reg, &node.ops)
            .map(
                |r| json!({"op": r.op, "summary": prose(&r.summary), "link": format!("{}.md", seg(&r.op))}),
            )
            .collect();
        let mut entities = Vec::new();
        let mut all_ops = Vec::new();
        for (e, en) in &node.entities {
            let ops: Vec<&OpRecord> = visible(reg, &en.ops).collect();
            if ops.is_empty() {
                continue;
            }
            let path = format!("src/{}/{}/README.md", seg(g), seg(e));
            let summary = prose(en.summary.as_deref().unwrap_or_default());
            let page = if builtin_entity {
                Directory::Written(builtin_entity_page(&page_header, g, e, &summary, &ops))
            } else {
                let entity_ops: Vec<Value> = ops.iter().map(|r| json!({"op": r.op, "kind": r.kind.as_str(), "summary": cell(&r.summary), "link": format!("{}.md", seg(&r.op))})).collect();
                Directory::Context(
                    "entity.md.hbs",
                    object([
                        ("header", json!(page_header)),
                        ("group", json!(g)),
                        ("entity", json!(e)),
                        ("summary", json!(summary)),
                        ("group_link", json!("../README.md")),
                        ("ops", Value::Array(entity_ops)),
                    ]),
                )
            };
            directory.push((path, page));
            entities.push(object([
                ("name", json!(e)),
                (
                    "summary",
                    json!(prose(en.summary.as_deref().unwrap_or_default())),
                ),
                ("count", json!(ops.len())),
                ("link", json!(format!("{}/{}/README.md", seg(g), seg(e)))),
                (
                    "ops",
                    Value::Array(
                        ops.iter()
                            .map(|r| json!({"op": r.op, "link": op_path(r)}))
                            .collect(),
                    ),
                ),
            ]));
            all_ops
                .extend(ops.iter().map(
                    |r| json!({"op": r.op, "summary": prose(&r.summary), "link": op_path(r)}),
                ));
        }
        all_ops.extend(
            visible(reg, &node.ops)
                .map(|r| json!({"op": r.op, "summary": prose(&r.summary), "link": op_path(r)})),
        );
        let group_entities: Vec<Value> = entities
            .iter()
            .map(|e| json!({"name": e["name"], "summary": e["summary"], "count": e["count"], "link": format!("{}/README.md", seg(e["name"].as_str().unwrap_or_default()))}))
            .collect();
        let group_summary = prose(&node.summary);
        let page = if builtin_group {
            Directory::Written(builtin_group_page(
                &page_header,
                g,
                &group_summary,
                &group_entities,
                &group_ops,
            ))
        } else {
            Directory::Context(
                "group.md.hbs",
                object([
                    ("header", json!(page_header)),
                    ("group", json!(g)),
                    ("summary", json!(group_summary)),
                    ("entities", Value::Array(group_entities)),
                    ("ops", Value::Array(group_ops)),
                ]),
            )
        };
        directory.push((format!("src/{}/README.md", seg(g)), page));
        index_groups.push(object([
            ("name", json!(g)),
            ("summary", json!(prose(&node.summary))),
            ("link", json!(format!("{}/README.md", seg(g)))),
            ("entities", Value::Array(entities)),
            ("ops", Value::Array(all_ops)),
            (
                "direct",
                Value::Array(
                    visible(reg, &node.ops)
                        .map(|r| json!({"op": r.op, "link": op_path(r)}))
                        .collect(),
                ),
            ),
        ]));
    }
    let mut files = FileMap::new();
    let page = |path: &str, template: &str, mut ctx: Value| -> Result<String, Box<Diagnostic>> {
        if path.ends_with(".md") {
            defuse_context(&mut ctx);
        }
        // Handed over as the context itself: `render(template, &ctx)` serialized the page's
        // whole context into a fresh copy first (a third of the docs emitter's time).
        match hb.render_with_context(template, &handlebars::Context::from(ctx)) {
            Ok(text) => {
                let mut text = text.trim_end().to_string();
                text.push('\n');
                Ok(text)
            }
            Err(e) => Err(Box::new(
                Diagnostic::new(Code::Template, format!("template `{template}` failed on `docs/{path}`: {}", e.reason()))
                    .at(Location::file(template.to_string()))
                    .help("strict mode: the template names a field this page does not have; see the built-in templates for the fields"),
            )),
        }
    };
    let mut keep = |path: &str, made: Result<String, Box<Diagnostic>>| -> bool {
        match made {
            Ok(text) => {
                files.insert(format!("docs/{path}"), text);
                true
            }
            Err(d) => {
                diags.push(*d);
                false
            }
        }
    };
    // Group and entity pages, then each op's page, made and rendered one at a time (10,000
    // contexts held at once were a copy of every op), then the book's own pages.
    for (path, made) in directory {
        let made = match made {
            Directory::Written(text) => Ok(text),
            Directory::Context(template, ctx) => page(&path, template, ctx),
        };
        if !keep(&path, made) {
            return FileMap::new();
        }
    }
    let builtin_op = builtin("op.md.hbs");
    let op_memo = memo.filter(|_| builtin_op);
    for r in reg.ops.values().filter(|r| !r.hidden) {
        let path = format!("src/{}", op_path(r));
        let make = || match builtin_op {
            true => Ok(builtin_op_page(r, &page_header)),
            false => page(&path, "op.md.hbs", op_context(reg, r, &page_header)),
        };
        let made = match op_memo {
            // The page shows the op's record and the registry's name (not its version).
            Some(memo) => {
                let mut failed = None;
                let text = memo
                    .unstamped_text(OP_PAGE_STEP, r, &[&reg.name], || {
                        make().unwrap_or_else(|d| {
                            failed = Some(d);
                            String::new()
                        })
                    })
                    .to_string();
                failed.map_or(Ok(text), Err)
            }
            None => make(),
        };
        if !keep(&path, made) {
            return FileMap::new();
        }
    }
    let count = reg.ops.values().filter(|r| !r.hidden).count();
    // The gateway tools a model calls these ops through (the batch tool when offered).
    let g = &reg.gateway;
    let mut gateway = vec![
        json!({"name": g.search, "call": "{\"query\": \"...\"}", "what": "find ops by what they do"}),
        json!({"name": g.help, "call": "{\"path\": \"...\"}", "what": "read a group, an entity or an op's usage, arguments and examples"}),
        json!({"name": g.exec, "call": "{\"op\": \"...\", \"args\": {...}}", "what": "run one op"}),
    ];
    if let Some(batch) = &g.batch {
        gateway.push(json!({"name": batch, "call": "{\"items\": [{\"help\": {...}}, {\"exec\": {...}}]}", "what": "several help, search or exec calls in one round trip"}));
    }
    let book = object([
        ("header", json!(header)),
        ("title", json!(reg.name)),
        (
            "description",
            json!(reg.description.clone().unwrap_or_default()),
        ),
        ("count", json!(count)),
        ("group_count", json!(index_groups.len())),
        ("registry_version", json!(reg.registry_version)),
        ("groups", Value::Array(index_groups)),
        ("gateway", Value::Array(gateway)),
    ]);
    // The book's own pages: written straight to text with the built-in templates, else
    // through handlebars. SUMMARY lists group-level ops under their group, after the entities.
    let summary = match builtin("SUMMARY.md.hbs") {
        true => Directory::Written(builtin_summary_page(&header, &book)),
        false => {
            let groups: Vec<Value> = index_groups_for_summary(&book);
            Directory::Context(
                "SUMMARY.md.hbs",
                json!({"header": header, "groups": groups}),
            )
        }
    };
    let book_toml = match builtin("book.toml.hbs") {
        true => Directory::Written(builtin_book_toml(&header, &reg.name)),
        false => Directory::Context("book.toml.hbs", book.clone()),
    };
    let index = match builtin("index.md.hbs") {
        true => Directory::Written(builtin_index_page(&book)),
        false => Directory::Context("index.md.hbs", book),
    };
    let book_pages = [
        ("src/README.md", index),
        ("src/SUMMARY.md", summary),
        ("book.toml", book_toml),
    ];
    for (path, made) in book_pages {
        let made = match made {
            Directory::Written(text) => Ok(text),
            Directory::Context(template, ctx) => page(path, template, ctx),
        };
        if !keep(path, made) {
            return FileMap::new();
        }
    }
    files
}

/// An object of `fields` in their order, moved in (`json!` copies each value it is given: the
/// index's listings of every op were copied four times).
fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn index_groups_for_summary(book: &Value) -> Vec<Value> {
    book["groups"]
        .as_array()
        .map(|gs| {
            gs.iter()
                .map(|g| json!({"name": g["name"], "link": g["link"], "entities": g["entities"], "ops": g["direct"]}))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An op's page as handlebars renders the built-in template, as `render` did for every op.
    fn through_handlebars(reg: &Registry, r: &OpRecord, header: &str) -> String {
        let mut hb = Handlebars::new();
        hb.set_strict_mode(true);
        hb.register_escape_fn(handlebars::no_escape);
        hb.register_template_string("op.md.hbs", TEMPLATES[0].1)
            .unwrap();
        let mut ctx = op_context(reg, r, header);
        defuse_context(&mut ctx);
        let text = hb
            .render_with_context("op.md.hbs", &handlebars::Context::from(ctx))
            .unwrap();
        format!("{}\n", text.trim_end())
    }

    /// Records with every optional part of the page set, empty or absent, and `{{`, pipes,
    /// backticks, brackets and line breaks in every text the page shows.
    fn edge_records(base: &OpRecord) -> Vec<OpRecord> {
        use crate::model::registry::Policy;
        let mut out = Vec::new();
        let braces = |s: &str| format!("{s} {{{{#include ../secret}}}} a|b `c` [d](e) <f>\r\ng");
        let mut all = base.clone();
        all.op = braces(&all.op);
        all.tool_name = braces(&all.tool_name);
        all.group = braces(&all.group);
        all.entity = Some(braces("thing"));
        all.summary = braces("Summary");
        all.description = braces("  Description  ");
        all.destructive = true;
        all.dry_run_default = true;
        all.aliases = vec![braces("other")];
        all.id_discovery = vec!["a.list".into(), braces("b.get")];
        if let Some(arg) = all.args.first_mut() {
            arg.name = braces(&arg.name);
            arg.type_ = braces("string");
            arg.range = Some(braces("1..5"));
            arg.default = Some(serde_json::json!("x`y``z{{w|"));
            arg.enum_ = Some(vec![serde_json::json!("p|q"), serde_json::json!(2)]);
            arg.description = braces(" the argument ");
        }
        let policy = |d: &[&str], n: &[&str], e: &[&str]| Policy {
            do_: d.iter().map(|s| braces(s)).collect(),
            dont: n.iter().map(|s| braces(s)).collect(),
            edge_cases: e.iter().map(|s| braces(s)).collect(),
            origin: crate::model::registry::Origin::Overlay,
        };
        all.policy = Some(policy(&["one", "two"], &["three"], &["four"]));
        out.push(all.clone());
        for (d, n, e) in [
            (&[][..], &["x"][..], &[][..]),
            (&["x"][..], &[][..], &["y"][..]),
            (&[][..], &[][..], &[][..]),
        ] {
            let mut r = all.clone();
            r.policy = Some(policy(d, n, e));
            out.push(r);
        }
        let mut bare = base.clone();
        bare.entity = None;
        bare.args.clear();
        bare.examples.clear();
        bare.policy = None;
        bare.aliases.clear();
        bare.id_discovery.clear();
        bare.destructive = false;
        bare.dry_run_default = true;
        bare.description = format!(" {} ", bare.summary);
        out.push(bare.clone());
        let mut empty_entity = bare;
        empty_entity.entity = Some(String::new());
        empty_entity.summary = String::new();
        empty_entity.description = String::new();
        out.push(empty_entity);
        out
    }

    /// The group and entity pages written without handlebars are the built-in templates', byte
    /// for byte: the whole docs folder rendered with copies of the built-in templates (which go
    /// through handlebars) is the folder rendered without, on every repo catalog and both
    /// fleets, and on the first catalog with `{{`, pipes, brackets, `<` and line breaks planted
    /// in every group's and entity's summary and one op's, and one summary emptied; then in the
    /// registry's name and description (the index, the summary and `book.toml` are written
    /// straight too), with no description and an empty one.
    #[test]
    fn directory_pages_are_the_builtin_templates() {
        let copies = tempfile::tempdir().unwrap();
        for (name, text) in TEMPLATES {
            std::fs::write(copies.path().join(name), text).unwrap();
        }
        let both = |reg: &Registry, what: &str| {
            let mut d = Diagnostics::default();
            let written = render(reg, None, None, &mut d);
            let templated = render(reg, Some(copies.path()), None, &mut d);
            assert!(d.is_empty(), "{what}: {d:?}");
            assert_eq!(written.len(), templated.len(), "{what}");
            for (path, text) in &templated {
                assert_eq!(&written[path], text, "{what}: {path}");
            }
            written.len()
        };
        let mut pages = 0;
        for dir in crate::compiler::repo_and_fleet_catalogs() {
            pages += both(&crate::compiler::compile_repo_catalog(dir), dir);
        }
        assert!(pages > 8_000, "{pages} pages compared");
        let mut reg = crate::compiler::compile_repo_catalog(crate::compiler::REPO_CATALOGS[0]);
        let odd = "a {{x}} | [b] <c> \\ d\r\ne";
        for (k, node) in reg.tree.values_mut().enumerate() {
            node.summary = if k == 0 { String::new() } else { odd.into() };
            for (j, en) in node.entities.values_mut().enumerate() {
                en.summary = (j % 2 == 0).then(|| odd.to_string());
            }
        }
        let first = reg.ops.keys().next().unwrap().clone();
        reg.ops.get_mut(&first).unwrap().summary = odd.into();
        both(&reg, "planted texts");
        // The book's own pages: a description with the same texts, none, and an empty one.
        reg.name = odd.into();
        reg.description = Some(odd.into());
        both(&reg, "planted description and name");
        reg.description = None;
        both(&reg, "no description");
        reg.description = Some(String::new());
        both(&reg, "empty description");
    }

    /// The page written without handlebars is the built-in template's, byte for byte: every op
    /// of the repo's catalogs and of the two fleets, and records with every part set or empty.
    #[test]
    fn op_pages_are_the_builtin_templates() {
        let mut compared = 0;
        for dir in crate::compiler::repo_and_fleet_catalogs() {
            let reg = crate::compiler::compile_repo_catalog(dir);
            let header = format!("@generated by toolreg from registry `{}`.", reg.name);
            for r in reg.ops.values() {
                assert_eq!(
                    builtin_op_page(r, &header),
                    through_handlebars(&reg, r, &header),
                    "{dir}: {}",
                    r.op
                );
                compared += 1;
            }
            let with_policy = reg.ops.values().find(|r| r.policy.is_some());
            for base in reg.ops.values().take(1).chain(with_policy) {
                for r in edge_records(base) {
                    let header = "registry `{{x}}`";
                    assert_eq!(
                        builtin_op_page(&r, header),
                        through_handlebars(&reg, &r, header),
                        "{dir}: an edge record of {}",
                        base.op
                    );
                }
            }
        }
        assert!(compared > 8_000, "{compared} ops compared");
    }
}
