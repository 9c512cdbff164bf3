//! When nothing matches: the ops nearest by spelling (character trigrams of a bounded prefix of
//! the query) and the directory of groups and entities, so a search never answers with nothing.

use super::Hit;
use crate::model::registry::{OpRecord, Registry};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The most query characters the spelling fallback reads: its cost stays bounded whatever a
/// caller sends.
pub(super) const NEAREST_QUERY_CHARS: usize = 256;

/// Character trigrams of lowercased letters and digits, words padded with a space, each packed
/// into a `u64` (21 bits a character), sorted and without repeats: a set counted against another
/// by one merge. (A `BTreeSet` of character triples per op made a cold search that matched
/// nothing take 68 ms at 10,000 ops, most of it here.)
fn trigrams(text: &str, max_chars: usize, out: &mut Vec<u64>) {
    const SPACE: u64 = ' ' as u64;
    out.clear();
    // The last two characters of the padded word being read, and how many of them there are
    // (a word starts with its padding space: one).
    let (mut a, mut b, mut held) = (0u64, SPACE, 0usize);
    for c in text.chars().take(max_chars) {
        if !c.is_alphanumeric() {
            if held == 2 {
                out.push(a << 42 | b << 21 | SPACE);
            }
            (a, b, held) = (0, SPACE, 1);
            continue;
        }
        let c = c.to_lowercase().next().unwrap_or(c) as u64;
        if held == 2 {
            out.push(a << 42 | b << 21 | c);
        }
        (a, b, held) = (b, c, 2);
    }
    if held == 2 {
        out.push(a << 42 | b << 21 | SPACE);
    }
    out.sort_unstable();
    out.dedup();
}

/// How many keys two sorted sets of trigrams share.
fn shared(x: &[u64], y: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
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
    let mut q = Vec::new();
    trigrams(query, NEAREST_QUERY_CHARS, &mut q);
    // One text and one set, reused op after op.
    let (mut text, mut t) = (String::new(), Vec::new());
    let mut scored: Vec<(f64, &OpRecord)> = reg
        .ops
        .values()
        .filter(|r| allowed(r))
        .map(|r| {
            if q.is_empty() {
                return (0.0, r);
            }
            text.clear();
            text.extend(r.op.chars().map(|c| if c == '.' { ' ' } else { c }));
            for part in [&r.tool_name, &r.summary] {
                text.push(' ');
                text.push_str(part);
            }
            trigrams(&text, 2_000, &mut t);
            let n = shared(&q, &t);
            (2.0 * n as f64 / (q.len() + t.len()).max(1) as f64, r)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The trigram sets as first written (a `BTreeSet` of character triples), kept as the
    /// reference the packed sets must count alike.
    fn reference(text: &str, max_chars: usize) -> std::collections::BTreeSet<[char; 3]> {
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
        let mut out = std::collections::BTreeSet::new();
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

    /// Every pair of texts shares as many packed trigrams as reference trigrams, and each set
    /// has the reference's size: the Dice scores, and so the nearest ops, are unchanged.
    #[test]
    fn packed_trigrams_count_as_the_reference_sets_do() {
        let texts = [
            "",
            "   ",
            "a",
            "ab",
            "abc",
            "Hello, World!",
            "hello world hello",
            "café CAFÉ cafe",
            "任务列表 任务",
            "x.y_z 12 3",
            "İstanbul ISTANBUL",
            "!!--??",
            "list_onto_tasks onto task list List tasks with their title.",
            "a b c d e f g",
            "reschedule the vehicle inspection",
        ];
        for max in [3, 5, 2_000] {
            for x in texts {
                let mut px = Vec::new();
                trigrams(x, max, &mut px);
                let rx = reference(x, max);
                assert_eq!(px.len(), rx.len(), "{x:?} at {max}");
                for y in texts {
                    let mut py = Vec::new();
                    trigrams(y, max, &mut py);
                    let ry = reference(y, max);
                    assert_eq!(
                        shared(&px, &py),
                        rx.intersection(&ry).count(),
                        "{x:?} and {y:?} at {max}"
                    );
                }
            }
        }
    }
}
