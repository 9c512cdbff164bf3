//! Paging: a help page over its token budget is split along its listings (and a long op
//! description into parts), so no page a model reads costs more than `PAGE_TOKENS`.

use crate::model::registry::Registry;
use serde_json::{json, Value};

/// What separates a directory path from its page number (`root@2`): no op or path has it.
pub const PAGE_MARK: char = '@';

/// A help page's budget in o200k tokens (compact JSON): a page over it is split.
const PAGE_TOKENS: usize = 1_800;

/// A page this short (compact JSON characters) is within `PAGE_TOKENS` whatever its text (the
/// densest real pages run 2.7 characters a token), so only longer pages are counted.
pub(super) const SAFE_CHARS: usize = 4_800;

/// Whether a page is within `PAGE_TOKENS` (and needs no splitting).
pub(super) fn fits(page: &Value) -> bool {
    // Most pages are short: their compact length is counted without making the text.
    if crate::model::canonical::json_len(page) <= SAFE_CHARS {
        return true;
    }
    let text = compact(page);
    crate::compiler::tokens::Tokens::get().o200k(&text) <= PAGE_TOKENS
}

pub(super) fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn o200k(v: &Value) -> usize {
    crate::compiler::tokens::Tokens::get().o200k(&compact(v))
}

/// Splits a page over `PAGE_TOKENS` along its listings (`lists`, in order: the root's groups, a
/// group's entities and ops, an op's arguments): the first page keeps every other field with
/// the first slice of each list and says where the rest is (`page`, `pages`, `next_page`); the
/// others carry the path, their slices and `next_page`. A page within the budget is kept whole.
pub(super) fn paged(page: Value, path: &str, lists: &[&str], reg: &Registry) -> Vec<Value> {
    if fits(&page) {
        return vec![page];
    }
    paged_over(page, path, lists, reg)
}

/// [`paged`] for a page already measured over `PAGE_TOKENS` as it is: not counted again (the
/// full page of a group of 500 ops is about 50 KB of JSON).
pub(super) fn paged_over(page: Value, path: &str, lists: &[&str], reg: &Registry) -> Vec<Value> {
    let items: Vec<(&str, &Value)> = lists
        .iter()
        .filter_map(|k| page.get(*k).and_then(Value::as_array).map(|a| (*k, a)))
        .flat_map(|(k, a)| a.iter().map(move |v| (k, v)))
        .collect();
    let mut header = page.clone();
    for list in lists {
        if let Some(a) = header.get_mut(*list).and_then(Value::as_array_mut) {
            a.clear();
        }
    }
    // What the page says beside its listings, and a later page's own fields, with room for
    // the paging fields.
    let first_room = PAGE_TOKENS.saturating_sub(o200k(&header) + 60).max(300);
    let later_room = PAGE_TOKENS - 120;
    let mut chunks: Vec<Vec<(&str, &Value)>> = vec![Vec::new()];
    let mut used = 0;
    for (k, v) in items {
        let n = o200k(v) + 1;
        let room = if chunks.len() == 1 {
            first_room
        } else {
            later_room
        };
        if used + n > room && !chunks.last().is_some_and(Vec::is_empty) {
            chunks.push(Vec::new());
            used = 0;
        }
        used += n;
        chunks.last_mut().expect("one chunk").push((k, v));
    }
    let total = chunks.len();
    let next_hint = |k: usize| {
        format!(
            "More on the next page: call {} with {{\"path\": \"{path}{PAGE_MARK}{k}\"}}.",
            reg.gateway.help
        )
    };
    chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            let k = i + 1;
            let mut p = if k == 1 {
                header.clone()
            } else {
                json!({"path": format!("{path}{PAGE_MARK}{k}"), "page_of": path})
            };
            for list in lists {
                if page.get(*list).is_some() {
                    let slice: Vec<Value> = chunk
                        .iter()
                        .filter(|(l, _)| l == list)
                        .map(|(_, v)| (*v).clone())
                        .collect();
                    if k == 1 || !slice.is_empty() {
                        p[*list] = Value::Array(slice);
                    }
                }
            }
            p["page"] = json!(k);
            p["pages"] = json!(total);
            if k < total {
                p["next_page"] = json!(format!("{path}{PAGE_MARK}{}", k + 1));
                let next = match p.get("next").and_then(Value::as_str) {
                    Some(n) if k == 1 => format!("{} {n}", next_hint(k + 1)),
                    _ => next_hint(k + 1),
                };
                p["next"] = json!(next);
            }
            p["registry_version"] = json!(reg.registry_version);
            p
        })
        .collect()
}

/// An op page over the budget (measured by the caller): a long description goes on in
/// `description_more` (paged like a listing) after its first part. Whether it was cut (a page
/// not cut is as over the budget as it was).
pub(super) fn split_description(mut page: Value) -> (Value, bool) {
    const PART_CHARS: usize = 1_500;
    let Some(text) = page.get("description").and_then(Value::as_str) else {
        return (page, false);
    };
    if text.chars().count() <= PART_CHARS {
        return (page, false);
    }
    let mut parts: Vec<String> = vec![String::new()];
    for word in text.split_inclusive(char::is_whitespace) {
        let last = parts.last_mut().expect("one part");
        if last.chars().count() + word.chars().count() > PART_CHARS && !last.is_empty() {
            parts.push(String::new());
        }
        parts.last_mut().expect("one part").push_str(word);
    }
    let first = parts.remove(0);
    page["description"] = json!(first);
    page["description_more"] = json!(parts);
    (page, true)
}

/// A page number one format does not reach (its listings were shorter): empty, pointing back.
pub(super) fn empty_page(path: &str, k: usize, total: usize, version: &str) -> Value {
    json!({"path": format!("{path}{PAGE_MARK}{k}"), "page_of": path, "page": k, "pages": total, "registry_version": version})
}
