//! When nothing matches: the ops nearest by spelling (character trigrams of a bounded prefix of
//! the query) and the directory of groups and entities, so a search never answers with nothing.

use super::Hit;
use crate::model::registry::{OpRecord, Registry};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The most query characters the spelling fallback reads: its cost stays bounded whatever a
/// caller sends.
pub(super) const NEAREST_QUERY_CHARS: usize = 256;

/// Character trigrams of lowercased letters and digits, words padded with a space.
pub(super) fn trigrams(text: &str, max_chars: usize) -> std::collections::BTreeSet<[char; 3]> {
    let mut out = std::collections::BTreeSet::new();
    let cleaned: String = text
        .chars()
        .take(max_chars)
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    for word in cleaned.split_whitespace() {
        let padded: Vec<char> = std::iter::once(' ')
            .chain(word.chars())
            .chain(std::iter::once(' '))
            .collect();
        for w in padded.windows(3) {
            out.insert([w[0], w[1], w[2]]);
        }
    }
    out
}

/// The ops nearest to a query that no word matched, by shared character trigrams with the op's
/// name, tool name and summary (Dice coefficient); ties, and a query with no letters at all, go
/// by op name. Linear in the ops, bounded in the query.
pub(super) fn nearest_by_spelling(
    reg: &Registry,
    query: &str,
    allowed: &dyn Fn(&OpRecord) -> bool,
    limit: usize,
    usage: &dyn Fn(&str) -> String,
) -> Vec<Hit> {
    let q = trigrams(query, NEAREST_QUERY_CHARS);
    let mut scored: Vec<(f64, &OpRecord)> = reg
        .ops
        .values()
        .filter(|r| allowed(r))
        .map(|r| {
            if q.is_empty() {
                return (0.0, r);
            }
            let text = format!("{} {} {}", r.op.replace('.', " "), r.tool_name, r.summary);
            let t = trigrams(&text, 2_000);
            let shared = q.intersection(&t).count();
            (2.0 * shared as f64 / (q.len() + t.len()).max(1) as f64, r)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.op.cmp(&b.1.op)));
    scored
        .into_iter()
        .take(limit)
        .enumerate()
        .map(|(i, (score, r))| Hit {
            op: r.op.clone(),
            tool_name: r.tool_name.clone(),
            summary: r.summary.clone(),
            kind: r.kind,
            // Below any real match's confidence: a guess by spelling.
            confidence: (score * 20.0).round() / 100.0,
            usage: (i < 3).then(|| usage(&r.op)),
            required_args: (i < 3).then(|| r.required_args.clone()),
        })
        .collect()
}

/// Groups and their entities with op counts, for empty answers.
pub fn directory(reg: &Registry, allowed: &dyn Fn(&OpRecord) -> bool) -> Value {
    let mut groups = Vec::new();
    for (g, node) in &reg.tree {
        let mut entities = BTreeMap::new();
        for (e, en) in &node.entities {
            let n = en
                .ops
                .iter()
                .filter(|o| reg.ops.get(*o).is_some_and(allowed))
                .count();
            if n > 0 {
                entities.insert(format!("{g}.{e}"), n);
            }
        }
        let direct = node
            .ops
            .iter()
            .filter(|o| reg.ops.get(*o).is_some_and(allowed))
            .count();
        let total: usize = entities.values().sum::<usize>() + direct;
        if total > 0 {
            groups.push(
                json!({"path": g, "summary": node.summary, "ops": total, "entities": entities}),
            );
        }
    }
    Value::Array(groups)
}
