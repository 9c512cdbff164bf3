//! `toolreg learn`: requests a team has seen (a log of which op served which request) become
//! each op's `queries` in the overlay, which search reads as words and the vectors emitter
//! embeds with the op. The overlay is edited in place (toml_edit: comments and order kept).

use crate::model::registry::Registry;
use serde::Deserialize;

/// The most requests kept for one op (the vectors emitter embeds at most as many phrasings).
pub const MAX_QUERIES_PER_OP: usize = 64;

/// The longest request kept, in characters (longer ones are cut: search reads 1,000).
pub const MAX_QUERY_CHARS: usize = 1_000;

/// What `learn` did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Learned {
    /// Requests added, and the ops they were added to.
    pub added: usize,
    pub ops: usize,
    /// Requests the overlay already had for their op.
    pub known: usize,
    /// Requests left out because their op already had `MAX_QUERIES_PER_OP`.
    pub over: usize,
}

#[derive(Deserialize)]
struct Line {
    query: String,
    #[serde(default)]
    expected: Vec<String>,
}

/// Each line's request and the ops it names (op or tool name), or every line's fault.
pub fn read_seen(reg: &Registry, jsonl: &str) -> Result<Vec<(String, Vec<String>)>, Vec<String>> {
    let mut seen = Vec::new();
    let mut faults = Vec::new();
    for (i, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l: Line = match serde_json::from_str(line) {
            Ok(l) => l,
            Err(e) => {
                faults.push(format!(
                    "line {}: not {{\"query\": ..., \"expected\": [...]}}: {e}",
                    i + 1
                ));
                continue;
            }
        };
        let query = crate::model::text::clip_chars(l.query.trim(), MAX_QUERY_CHARS).to_string();
        if query.is_empty() || l.expected.is_empty() {
            faults.push(format!(
                "line {}: needs a request and the ops that served it",
                i + 1
            ));
            continue;
        }
        let mut ops = Vec::new();
        for name in &l.expected {
            match reg.ops.get(name).or_else(|| reg.op_by_tool_name(name)) {
                Some(r) => ops.push(r.op.clone()),
                None => faults.push(format!(
                    "line {}: `{}` is not an op or tool name of this catalog",
                    i + 1,
                    crate::model::diag::escape_controls(crate::model::text::clip_chars(name, 80))
                )),
            }
        }
        seen.push((query, ops));
    }
    if faults.is_empty() {
        Ok(seen)
    } else {
        Err(faults)
    }
}

/// The overlay `old` (empty when there is none) with each request added to its ops' `queries`,
/// once, at most `MAX_QUERIES_PER_OP` per op.
pub fn add_queries(old: &str, seen: &[(String, Vec<String>)]) -> Result<(String, Learned), String> {
    use toml_edit::{Array, DocumentMut, Item, Table, Value};
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    if !doc.contains_key("ops") {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("ops", Item::Table(t));
    }
    let ops = match doc.get_mut("ops") {
        Some(Item::Table(t)) => t,
        _ => return Err("`ops` is not a table".into()),
    };
    let mut learned = Learned::default();
    let mut touched = std::collections::BTreeSet::new();
    for (query, names) in seen {
        for op in names {
            if let Some(Item::Value(Value::InlineTable(t))) = ops.get(op) {
                let table = t.clone().into_table();
                ops.insert(op, Item::Table(table));
            }
            let entry = ops
                .entry(op)
                .or_insert_with(|| Item::Table(Table::new()))
                .as_table_mut()
                .ok_or_else(|| format!("[ops.\"{op}\"] is not a table"))?;
            let list = entry
                .entry("queries")
                .or_insert_with(|| Item::Value(Value::Array(Array::new())))
                .as_array_mut()
                .ok_or_else(|| format!("[ops.\"{op}\"] queries is not a list"))?;
            if list.iter().any(|v| v.as_str() == Some(query)) {
                learned.known += 1;
            } else if list.len() >= MAX_QUERIES_PER_OP {
                learned.over += 1;
            } else {
                list.push(query.as_str());
                learned.added += 1;
                touched.insert(op.clone());
            }
        }
    }
    learned.ops = touched.len();
    Ok((doc.to_string(), learned))
}

/// The overlay `old` without the given requests in their ops' `queries` (an op left with no
/// request keeps an empty list): `learn` cross-fits its `match` floors on overlays that do not
/// already hold the requests they are measured on.
pub fn without_queries(old: &str, seen: &[(String, Vec<String>)]) -> Result<String, String> {
    use toml_edit::{DocumentMut, Item};
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let Some(ops) = doc.get_mut("ops").and_then(Item::as_table_like_mut) else {
        return Ok(old.to_string());
    };
    for (query, names) in seen {
        for op in names {
            let list = ops
                .get_mut(op)
                .and_then(Item::as_table_like_mut)
                .and_then(|t| t.get_mut("queries"))
                .and_then(Item::as_array_mut);
            if let Some(list) = list {
                list.retain(|v| v.as_str() != Some(query));
            }
        }
    }
    Ok(doc.to_string())
}

/// The overlay `old` with `[search] KEY = { none_below = .., strong_from = .. }` set (`KEY` is
/// `match_lexical` or `match_hybrid`), the rest of the file as it was.
pub fn set_match_floors(
    old: &str,
    key: &str,
    none_below: f64,
    strong_from: f64,
) -> Result<String, String> {
    use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let search = doc
        .entry("search")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or("`search` is not a table")?;
    let mut floors = InlineTable::new();
    floors.insert("none_below", Value::from(none_below));
    floors.insert("strong_from", Value::from(strong_from));
    search.insert(key, Item::Value(Value::InlineTable(floors)));
    let mut text = doc.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_join_their_ops_once_and_comments_stay() {
        let old = "# ours\n[search]\nsemantic_weight = 0.5 # tuned\n\n[ops.\"a.b.list\"]\nqueries = [\"show every b\"]\n";
        let seen = vec![
            ("show every b".to_string(), vec!["a.b.list".to_string()]),
            (
                "what bs are there".to_string(),
                vec!["a.b.list".to_string()],
            ),
            ("make a b".to_string(), vec!["a.b.create".to_string()]),
        ];
        let (text, learned) = add_queries(old, &seen).unwrap();
        assert_eq!(
            learned,
            Learned {
                added: 2,
                ops: 2,
                known: 1,
                over: 0
            }
        );
        assert!(text.starts_with("# ours\n[search]\nsemantic_weight = 0.5 # tuned\n"));
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(v["ops"]["a.b.list"]["queries"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["ops"]["a.b.create"]["queries"][0].as_str(),
            Some("make a b")
        );
        // Full: no more than the cap per op.
        let many: Vec<(String, Vec<String>)> = (0..70)
            .map(|i| (format!("request {i}"), vec!["a.b.list".to_string()]))
            .collect();
        let (_, learned) = add_queries(&text, &many).unwrap();
        assert_eq!(learned.added, MAX_QUERIES_PER_OP - 2);
        assert_eq!(learned.over, 70 - (MAX_QUERIES_PER_OP - 2));
    }

    #[test]
    fn requests_leave_and_floors_are_set_in_place() {
        let old = "# ours\n[search]\nsemantic_weight = 0.5 # tuned\n\n[ops.\"a.b.list\"]\nqueries = [\"show every b\", \"what bs\"]\n";
        let seen = vec![("what bs".to_string(), vec!["a.b.list".to_string()])];
        let text = without_queries(old, &seen).unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(
            v["ops"]["a.b.list"]["queries"].as_array().unwrap(),
            &vec![toml::Value::from("show every b")]
        );
        let text = set_match_floors(&text, "match_hybrid", 0.47, 0.74).unwrap();
        assert!(text.starts_with("# ours\n[search]\nsemantic_weight = 0.5 # tuned\n"));
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(
            v["search"]["match_hybrid"]["none_below"].as_float(),
            Some(0.47)
        );
        assert_eq!(
            v["search"]["match_hybrid"]["strong_from"].as_float(),
            Some(0.74)
        );
        // Set again: replaced, not repeated; an overlay without [search] gains one.
        let again = set_match_floors(&text, "match_hybrid", 0.5, 0.8).unwrap();
        assert_eq!(again.matches("match_hybrid").count(), 1);
        let fresh = set_match_floors("", "match_lexical", 0.1, 0.4).unwrap();
        let v: toml::Value = toml::from_str(&fresh).unwrap();
        assert_eq!(
            v["search"]["match_lexical"]["strong_from"].as_float(),
            Some(0.4)
        );
    }
}
