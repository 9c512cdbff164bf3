//! Op and entity help pages, and directory listings, defined once as borrowed structs: a page
//! that fits its budget is written straight to text from them, without copying each summary,
//! argument, example and policy line into a `Value` tree first (building the trees was about a
//! third of the help pages' time at 10,000 ops). The `Value` path (`build`, and a page that may
//! need paging, where the splitting works) makes its values from the same structs;
//! `texts_render_as_values_do` proves the two write the same bytes on every repo catalog. The
//! root and group pages, a few per catalog, are built as values.

use super::paging::SAFE_CHARS;
use super::{first_sentence, notes, visible, FULL_ARG_CHARS, MAX_ENUM, SHORT_ARG_CHARS};
use crate::model::registry::{Arg, GroupNode, Kind, OpRecord, Registry};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// An op page's fields, in the order a model should read them.
#[derive(Serialize)]
pub(super) struct OpPage<'a> {
    path: &'a str,
    kind: &'a str,
    summary: &'a str,
    usage: String,
    args: Vec<ArgEntry<'a>>,
    required_args: &'a [String],
    id_args: &'a [String],
    notes: Vec<String>,
    examples: Vec<ExampleCall<'a>>,
    registry_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<PolicyLines<'a>>,
    #[serde(flatten)]
    full: Option<FullFields<'a>>,
}

/// What only the full page adds, after the policy.
#[derive(Serialize)]
struct FullFields<'a> {
    description: &'a str,
    tool_name: &'a str,
    destructive: bool,
    dry_run_default: bool,
    id_discovery: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    aliases: &'a [String],
}

#[derive(Serialize)]
struct PolicyLines<'a> {
    #[serde(rename = "do")]
    do_: &'a [String],
    dont: &'a [String],
    edge_cases: &'a [String],
}

#[derive(Serialize)]
struct ExampleCall<'a> {
    description: &'a str,
    call: Call<'a>,
}

#[derive(Serialize)]
struct Call<'a> {
    op: &'a str,
    args: &'a Value,
}

/// One argument of an op page.
#[derive(Serialize)]
struct ArgEntry<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    type_: &'a str,
    #[serde(skip_serializing_if = "is_false")]
    required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    default: Option<&'a Value>,
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    enum_: Option<&'a [Value]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enum_more: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<&'a str>,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: Cow<'a, str>,
}

fn is_false(b: &bool) -> bool {
    !b
}

fn arg_entry(a: &Arg, full: bool) -> ArgEntry<'_> {
    let (enum_, enum_more) = match &a.enum_ {
        Some(e) if e.len() > MAX_ENUM => (Some(&e[..MAX_ENUM]), Some(e.len() - MAX_ENUM)),
        Some(e) => (Some(&e[..]), None),
        None => (None, None),
    };
    let description = if !full {
        Cow::Owned(first_sentence(&a.description, SHORT_ARG_CHARS))
    } else if a.description.chars().count() > FULL_ARG_CHARS {
        Cow::Owned(format!(
            "{} (cut; include_schemas: true has it whole)",
            crate::model::text::truncate_words(&a.description, FULL_ARG_CHARS)
        ))
    } else {
        Cow::Borrowed(a.description.as_str())
    };
    ArgEntry {
        name: &a.name,
        type_: &a.type_,
        required: a.required,
        default: a.default.as_ref(),
        enum_,
        enum_more,
        range: a.range.as_deref().filter(|_| full),
        description,
    }
}

pub(super) fn op_page<'a>(
    reg: &'a Registry,
    r: &'a OpRecord,
    search: Option<&str>,
    full: bool,
) -> OpPage<'a> {
    let shown = if full { usize::MAX } else { 1 };
    OpPage {
        path: &r.op,
        kind: r.kind.as_str(),
        summary: &r.summary,
        usage: r.usage(),
        args: r.args.iter().map(|a| arg_entry(a, full)).collect(),
        required_args: &r.required_args,
        id_args: &r.id_args,
        notes: notes(search, r),
        examples: r
            .examples
            .iter()
            .take(shown)
            .map(|e| ExampleCall {
                description: &e.description,
                call: Call {
                    op: &r.op,
                    args: &e.args,
                },
            })
            .collect(),
        registry_version: &reg.registry_version,
        policy: r.policy.as_ref().map(|p| PolicyLines {
            do_: &p.do_,
            dont: &p.dont,
            edge_cases: &p.edge_cases,
        }),
        full: full.then_some(FullFields {
            description: &r.description,
            tool_name: &r.tool_name,
            destructive: r.destructive,
            dry_run_default: r.dry_run_default,
            id_discovery: &r.id_discovery,
            aliases: &r.aliases,
        }),
    }
}

/// One page as pretty JSON, when it surely fits its budget: within `SAFE_CHARS` as compact
/// JSON, which is never longer than the pretty text. `None` leaves the page to the `Value`
/// path (which counts its tokens and splits it when it must).
fn fitting_text(page: &impl Serialize) -> Option<Box<str>> {
    let text = serde_json::to_string_pretty(page).ok()?;
    if text.len() <= SAFE_CHARS {
        return Some(text.into_boxed_str());
    }
    let compact = crate::model::canonical::json_len(page);
    (compact <= SAFE_CHARS).then(|| text.into_boxed_str())
}

/// The op's short and full page as text, or `None` when either may need splitting.
pub(super) fn op_page_texts(
    reg: &Registry,
    r: &OpRecord,
    search: Option<&str>,
) -> Option<(Box<str>, Box<str>)> {
    let short = fitting_text(&op_page(reg, r, search, false))?;
    let full = fitting_text(&op_page(reg, r, search, true))?;
    Some((short, full))
}

/// An entity page's fields (its summary last).
#[derive(Serialize)]
pub(super) struct EntityPage<'a> {
    path: Cow<'a, str>,
    ops: Vec<Listing<'a>>,
    next: String,
    registry_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

/// An op in a directory listing.
#[derive(Serialize)]
pub(super) struct Listing<'a> {
    op: &'a str,
    kind: &'a str,
    summary: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
}

/// An op in a directory listing.
pub(super) fn listing(r: &OpRecord, full: bool) -> Listing<'_> {
    Listing {
        op: &r.op,
        kind: r.kind.as_str(),
        summary: &r.summary,
        usage: full.then(|| r.usage()),
    }
}

pub(super) fn entity_page<'a>(
    reg: &'a Registry,
    path: &'a str,
    e: &str,
    node: &'a GroupNode,
    kind: Option<Kind>,
    full: bool,
) -> EntityPage<'a> {
    let en = &node.entities[e];
    let ops: Vec<Listing> = visible(reg, &en.ops)
        .filter(|r| kind.is_none_or(|k| r.kind == k))
        .map(|r| listing(r, full))
        .collect();
    let first = ops.first().map_or(path, |o| o.op);
    EntityPage {
        path: kind.map_or(Cow::Borrowed(path), |k| {
            Cow::Owned(format!("{path}.{}", k.as_str()))
        }),
        next: format!(
            "Call {} with an op path, e.g. {{\"path\": \"{first}\"}}, for usage and a call to copy; or call {} directly if you know the args.",
            reg.gateway.help, reg.gateway.exec
        ),
        ops,
        registry_version: &reg.registry_version,
        summary: en.summary.as_deref(),
    }
}

/// An entity's short and full page (`path` is the entity's, `kind` the kind of ops listed, if
/// one), or `None` when either may need paging.
pub(super) fn entity_page_texts(
    reg: &Registry,
    path: &str,
    e: &str,
    node: &GroupNode,
    kind: Option<Kind>,
) -> Option<(Box<str>, Box<str>)> {
    let short = fitting_text(&entity_page(reg, path, e, node, kind, false))?;
    let full = fitting_text(&entity_page(reg, path, e, node, kind, true))?;
    Some((short, full))
}
