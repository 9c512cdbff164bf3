//! Search over ops: BM25F across fields with weights (name > tags > summary > description >
//! argument names), whole-word tokens split from identifiers (snake, camel, dots), stop-words,
//! light stemming, and synonyms (built-in generic verbs plus the overlay's `[synonyms]`).
//!
//! An exact op or tool name always ranks first. Equal scores go to writes when the query has a
//! write verb, then by op. A search never answers with nothing: with no match it returns the
//! directory of groups and entities and a suggestion.

use crate::registry::{Kind, OpRecord, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

const NAME: usize = 0;
const TAGS: usize = 1;
const SUMMARY: usize = 2;
const DESCRIPTION: usize = 3;
const ARGS: usize = 4;
const FIELDS: usize = 5;
/// Field weights and length-normalization strengths.
const WEIGHT: [f64; FIELDS] = [2.0, 2.0, 1.5, 0.8, 0.5];
const B: [f64; FIELDS] = [0.3, 0.3, 0.6, 0.75, 0.5];
const K1: f64 = 1.2;
/// Weight of a synonym relative to the word the user typed.
const SYNONYM_WEIGHT: f64 = 0.7;

const STOP_WORDS: &str = "a an the of to for in on at by with from and or but my me i we our us you your \
    this that these those is are was were be been being it its their there here do does did have has had \
    what which who whom how can could should would will shall may might please so as into than then \
    some any about up out if just also very really want need like let";

/// Generic English verbs and nouns -> the words tool catalogs use. Catalog words belong in the
/// overlay's `[synonyms]`, which extends this list.
const DEFAULT_SYNONYMS: &[(&str, &str)] = &[
    ("add", "create"),
    ("new", "create"),
    ("make", "create"),
    ("draft", "create"),
    ("write", "create"),
    ("start", "create"),
    ("show", "list get"),
    ("display", "list get"),
    ("see", "list get"),
    ("view", "get"),
    ("open", "get"),
    ("read", "get"),
    ("detail", "get"),
    ("info", "get"),
    ("find", "search"),
    ("look", "search"),
    ("lookup", "search"),
    ("locate", "search"),
    ("remove", "delete"),
    ("drop", "delete"),
    ("erase", "delete"),
    ("trash", "delete"),
    ("edit", "update"),
    ("change", "update"),
    ("modify", "update"),
    ("rename", "update"),
    ("set", "update"),
    ("mark", "update"),
    ("adjust", "update"),
    ("every", "list"),
    ("all", "list"),
];

/// Lowercase, stemmed words of a text; identifiers split on `_`, `.`, `-` and camel case.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
        .into_iter()
        .filter(|w| !is_stop(w))
        .map(|w| stem(&w))
        .collect()
}

fn is_stop(w: &str) -> bool {
    STOP_WORDS.split_whitespace().any(|s| s == w)
}

/// Light, symmetric stemming: plurals, -ing, -ed, and a final `e` (so update / updated /
/// updating meet).
pub fn stem(w: &str) -> String {
    let mut s = w.to_string();
    if s.len() > 4 && s.ends_with("ies") {
        s.truncate(s.len() - 3);
        s.push('y');
    } else if s.ends_with("sses")
        || s.ends_with("xes")
        || s.ends_with("ches")
        || s.ends_with("shes")
    {
        s.truncate(s.len() - 2);
    } else if s.len() > 3
        && s.ends_with('s')
        && !s.ends_with("ss")
        && !s.ends_with("us")
        && !s.ends_with("is")
    {
        s.truncate(s.len() - 1);
    }
    if s.len() > 5 && s.ends_with("ing") {
        s.truncate(s.len() - 3);
    } else if s.len() > 4 && s.ends_with("ed") {
        s.truncate(s.len() - 2);
    }
    if s.len() > 3 && s.ends_with('e') {
        s.truncate(s.len() - 1);
    }
    s
}

struct Doc {
    tf: [HashMap<String, f64>; FIELDS],
    len: [f64; FIELDS],
    /// The op's structure: entity words (singular and plural), action words, and the words of
    /// the segments between them (`tree` in `onto.document.tree.get`).
    entity: Vec<String>,
    action: Vec<String>,
    qualifier: Vec<String>,
}

/// Bonuses when the query names an op's entity, action or qualifier: the op's structure says
/// more about what it does than any word count in its description.
const ENTITY_BONUS: f64 = 3.0;
const ACTION_BONUS: f64 = 2.5;
const QUALIFIER_BONUS: f64 = 2.0;

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub op: String,
    pub tool_name: String,
    pub summary: String,
    pub kind: Kind,
    /// 0..1; 1 for an exact op or tool name.
    pub confidence: f64,
    /// For the top three: how to call it without another round trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_args: Option<Vec<String>>,
}

/// A search call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchRequest {
    pub query: String,
    /// Only ops under this path (a group, `group.entity`, or an op prefix).
    pub path: Option<String>,
    pub kind: Option<Kind>,
    pub entity: Option<String>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

impl SearchRequest {
    pub fn query(q: impl Into<String>) -> Self {
        SearchRequest {
            query: q.into(),
            ..Default::default()
        }
    }
}

/// A search answer: results, or (never empty) the directory and a suggestion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    pub query: String,
    pub results: Vec<Hit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// The default page size and the largest allowed.
pub const DEFAULT_LIMIT: usize = 5;
pub const MAX_LIMIT: usize = 50;

/// A search index over one registry's ops.
pub struct SearchIndex {
    ops: Vec<String>,
    docs: Vec<Doc>,
    df: HashMap<String, f64>,
    avg_len: [f64; FIELDS],
    synonyms: HashMap<String, Vec<String>>,
    write_actions: Vec<String>,
    /// Every entity word of the catalog, to tell which query words name entities.
    entity_words: Vec<String>,
    /// How many ops have each word in their structure (entity, action or qualifier).
    structure_df: HashMap<String, f64>,
}

/// When a query names several entities, the first is usually the object ("tasks in this
/// project"); later ones get this share of the entity bonus.
const LATER_ENTITY: f64 = 0.5;

fn add_words(tf: &mut HashMap<String, f64>, text: &str) -> f64 {
    let words = tokenize(text);
    for w in &words {
        *tf.entry(w.clone()).or_default() += 1.0;
    }
    words.len() as f64
}

impl SearchIndex {
    pub fn new(reg: &Registry) -> Self {
        let mut ops = Vec::new();
        let mut docs = Vec::new();
        let mut df: HashMap<String, f64> = HashMap::new();
        for r in reg.ops.values() {
            let mut tf: [HashMap<String, f64>; FIELDS] = Default::default();
            let mut len = [0.0; FIELDS];
            let name = format!("{} {}", r.op.replace('.', " "), r.tool_name);
            len[NAME] = add_words(&mut tf[NAME], &name);
            len[TAGS] = add_words(
                &mut tf[TAGS],
                &format!("{} {}", r.tags.join(" "), r.aliases.join(" ")),
            );
            len[SUMMARY] = add_words(&mut tf[SUMMARY], &r.summary);
            len[DESCRIPTION] = add_words(&mut tf[DESCRIPTION], &r.description);
            let args: Vec<&str> = r.args.iter().map(|a| a.name.as_str()).collect();
            len[ARGS] = add_words(&mut tf[ARGS], &args.join(" "));
            let mut seen: Vec<&String> = tf.iter().flat_map(|f| f.keys()).collect();
            seen.sort();
            seen.dedup();
            for w in seen {
                *df.entry(w.clone()).or_default() += 1.0;
            }
            let segs: Vec<&str> = r.op.split('.').collect();
            let mut entity = r.entity.as_deref().map(tokenize).unwrap_or_default();
            if let Some(plural) = r
                .entity
                .as_ref()
                .and_then(|e| reg.tree.get(&r.group)?.entities.get(e)?.plural.clone())
            {
                entity.extend(tokenize(&plural));
            }
            let action = tokenize(&r.action);
            let skip = if r.entity.is_some() { 2 } else { 1 };
            let qualifier = segs[skip.min(segs.len())..segs.len().saturating_sub(1)]
                .iter()
                .flat_map(|s| tokenize(s))
                .collect();
            ops.push(r.op.clone());
            docs.push(Doc {
                tf,
                len,
                entity,
                action,
                qualifier,
            });
        }
        let n = docs.len().max(1) as f64;
        let mut avg_len = [0.0; FIELDS];
        for (f, avg) in avg_len.iter_mut().enumerate() {
            *avg = (docs.iter().map(|d| d.len[f]).sum::<f64>() / n).max(1.0);
        }
        let mut synonyms: HashMap<String, Vec<String>> = HashMap::new();
        let defaults = DEFAULT_SYNONYMS.iter().map(|(k, v)| {
            (
                k.to_string(),
                v.split_whitespace().map(str::to_owned).collect::<Vec<_>>(),
            )
        });
        let overlay = reg.synonyms.iter().map(|(k, v)| (k.clone(), v.clone()));
        for (word, means) in defaults.chain(overlay) {
            let key = stem(&word.to_lowercase());
            let entry = synonyms.entry(key).or_default();
            for m in means {
                for t in tokenize(&m) {
                    if !entry.contains(&t) {
                        entry.push(t);
                    }
                }
            }
        }
        let mut write_actions: Vec<String> = reg
            .ops
            .values()
            .filter(|r| r.kind == Kind::Write)
            .flat_map(|r| tokenize(&r.action))
            .collect();
        write_actions.sort();
        write_actions.dedup();
        let mut structure_df: HashMap<String, f64> = HashMap::new();
        for d in &docs {
            let mut words: Vec<&String> = d
                .entity
                .iter()
                .chain(&d.action)
                .chain(&d.qualifier)
                .collect();
            words.sort();
            words.dedup();
            for w in words {
                *structure_df.entry(w.clone()).or_default() += 1.0;
            }
        }
        let mut entity_words: Vec<String> =
            docs.iter().flat_map(|d| d.entity.iter().cloned()).collect();
        entity_words.sort();
        entity_words.dedup();
        SearchIndex {
            entity_words,
            structure_df,
            ops,
            docs,
            df,
            avg_len,
            synonyms,
            write_actions,
        }
    }

    /// Query terms with weights: each word, and its synonyms at a lower weight.
    fn terms(&self, query: &str) -> Vec<(String, f64)> {
        let mut terms: Vec<(String, f64)> = Vec::new();
        let mut add = |t: String, w: f64| match terms.iter_mut().find(|(x, _)| *x == t) {
            Some(e) => e.1 = e.1.max(w),
            None => terms.push((t, w)),
        };
        for t in tokenize(query) {
            if let Some(syns) = self.synonyms.get(&t) {
                for s in syns {
                    add(s.clone(), SYNONYM_WEIGHT);
                }
            }
            add(t, 1.0);
        }
        terms
    }

    fn score(&self, doc: &Doc, terms: &[(String, f64)]) -> f64 {
        let n = self.docs.len() as f64;
        // Each structural part counts once, at the best weight a query term gives it, scaled by
        // how distinctive the word is across the catalog's structure (an IDF: `relationships`
        // names one op, `task` eight).
        let distinct = |t: &str| {
            let df = self.structure_df.get(t).copied().unwrap_or(1.0);
            0.5 + 0.5 * (1.0 + n / df).ln() / (1.0 + n).ln()
        };
        let part = |words: &[String]| {
            terms
                .iter()
                .filter(|(t, _)| words.contains(t))
                .map(|(t, w)| w * distinct(t))
                .fold(0.0, f64::max)
        };
        let first_entity = terms
            .iter()
            .find(|(t, _)| self.entity_words.contains(t))
            .map(|(t, _)| t);
        let entity_share = match first_entity {
            Some(t) if !doc.entity.contains(t) => LATER_ENTITY,
            _ => 1.0,
        };
        let structure = ENTITY_BONUS * entity_share * part(&doc.entity)
            + ACTION_BONUS * part(&doc.action)
            + QUALIFIER_BONUS * part(&doc.qualifier);
        let text: f64 = terms
            .iter()
            .map(|(t, qw)| {
                let df = self.df.get(t).copied().unwrap_or(0.0);
                if df == 0.0 {
                    return 0.0;
                }
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let tf: f64 = (0..FIELDS)
                    .map(|f| {
                        let raw = doc.tf[f].get(t).copied().unwrap_or(0.0);
                        let norm = 1.0 - B[f] + B[f] * doc.len[f] / self.avg_len[f];
                        WEIGHT[f] * raw / norm
                    })
                    .sum();
                qw * idf * tf / (K1 + tf)
            })
            .sum();
        structure + text
    }

    /// Every op with a positive score, best first, as (op, score); `exact` ops first.
    pub fn rank(
        &self,
        reg: &Registry,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
    ) -> Vec<(String, f64)> {
        let q = query.trim();
        let exact = reg
            .ops
            .get(q)
            .or_else(|| reg.op_by_tool_name(q))
            .or_else(|| reg.ops.get(&q.to_lowercase()))
            .map(|r| r.op.clone());
        let terms = self.terms(q);
        let writes = terms.iter().any(|(t, _)| self.write_actions.contains(t));
        let mut scored: Vec<(String, f64, Kind)> = self
            .ops
            .iter()
            .zip(&self.docs)
            .filter_map(|(op, doc)| {
                let r = &reg.ops[op];
                if !allowed(r) {
                    return None;
                }
                let s = if exact.as_deref() == Some(op.as_str()) {
                    f64::INFINITY
                } else {
                    self.score(doc, &terms)
                };
                (s > 0.0).then(|| (op.clone(), s, r.kind))
            })
            .collect();
        let key = |s: f64| {
            if s.is_finite() {
                (s * 1e6).round() as i64
            } else {
                i64::MAX
            }
        };
        scored.sort_by(|a, b| {
            key(b.1)
                .cmp(&key(a.1))
                .then_with(|| {
                    if writes {
                        (b.2 == Kind::Write).cmp(&(a.2 == Kind::Write))
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .then_with(|| a.0.cmp(&b.0))
        });
        scored.into_iter().map(|(op, s, _)| (op, s)).collect()
    }

    /// A search call (the gateway's `search`).
    pub fn search(
        &self,
        reg: &Registry,
        req: &SearchRequest,
        in_scope: &dyn Fn(&OpRecord) -> bool,
    ) -> SearchResponse {
        let path = req
            .path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "root");
        let allowed = |r: &OpRecord| {
            in_scope(r)
                && !r.hidden
                && path.is_none_or(|p| r.op == p || r.op.starts_with(&format!("{p}.")))
                && req.kind.is_none_or(|k| r.kind == k)
                && req
                    .entity
                    .as_deref()
                    .is_none_or(|e| r.entity.as_deref() == Some(e))
        };
        let ranked = self.rank(reg, &req.query, &allowed);
        let limit = req.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let offset: usize = req
            .cursor
            .as_deref()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let results: Vec<Hit> = ranked
            .iter()
            .enumerate()
            .skip(offset)
            .take(limit)
            .map(|(i, (op, score))| {
                let r = &reg.ops[op];
                let top = i < 3;
                Hit {
                    op: r.op.clone(),
                    tool_name: r.tool_name.clone(),
                    summary: r.summary.clone(),
                    kind: r.kind,
                    confidence: confidence(*score),
                    usage: top.then(|| r.usage()),
                    required_args: top.then(|| r.required_args.clone()),
                }
            })
            .collect();
        let next_cursor = (offset + limit < ranked.len()).then(|| (offset + limit).to_string());
        if results.is_empty() {
            return SearchResponse {
                query: req.query.clone(),
                results,
                next_cursor: None,
                directory: Some(directory(reg, &allowed)),
                suggestion: Some(format!(
                    "Nothing matched \"{}\". Browse the directory below, call {} with a group path, or search with other words (what the tool does, not how).",
                    req.query, reg.gateway.help
                )),
            };
        }
        SearchResponse {
            query: req.query.clone(),
            results,
            next_cursor,
            directory: None,
            suggestion: None,
        }
    }
}

/// 0..1 from a BM25F score (1 for an exact name).
fn confidence(score: f64) -> f64 {
    if !score.is_finite() {
        return 1.0;
    }
    ((score / (score + 6.0)) * 100.0).round() / 100.0
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

    #[test]
    fn tokens_and_stems() {
        assert_eq!(tokenize("list_onto_tasks"), ["list", "onto", "task"]);
        assert_eq!(tokenize("getDocumentTree"), ["get", "document", "tre"]);
        assert_eq!(
            tokenize("Show me ALL the entities!"),
            ["show", "all", "entity"]
        );
        assert_eq!(stem("updated"), stem("update"));
        assert_eq!(stem("updating"), stem("update"));
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("meetings"), "meet");
    }
}
