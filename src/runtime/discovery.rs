//! Seed 001's discovery protocol over the op tree: `list`, `search_nodes`,
//! `search_tool_by_category` and `expand_tool`, with its error codes (`UNKNOWN_PATH`,
//! `NO_MATCH_IN_CATEGORY`, `TOOL_NOT_FOUND`, `NOT_AUTHORIZED`). Every answer carries a
//! `next_action` saying what to call next.
//!
//! Paths are node paths of the op tree: `[]` (root), `["onto"]`, `["onto", "task"]`; a dotted
//! string (`"onto.task"`) is accepted too. Tool ids are ops.

use super::{Gateway, Scope};
use crate::model::registry::OpRecord;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A node path: an array of segments or a dotted string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NodePath {
    #[default]
    Root,
    Segments(Vec<String>),
    Dotted(String),
}

impl NodePath {
    pub fn segments(&self) -> Vec<String> {
        match self {
            NodePath::Root => Vec::new(),
            NodePath::Segments(s) => s.iter().filter(|x| !x.is_empty()).cloned().collect(),
            NodePath::Dotted(d) => d
                .split('.')
                .filter(|x| !x.is_empty() && *x != "root")
                .map(str::to_owned)
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ListRequest {
    pub path: NodePath,
    pub tags: Vec<String>,
    pub query: Option<String>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CategorySearch {
    pub query: String,
    pub category_path: NodePath,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

const DEFAULT_LIMIT: usize = 10;
const MAX_LIMIT: usize = 50;

fn error(code: &str, message: String, hints: Vec<String>, next_action: String) -> Value {
    json!({"error": {"code": code, "message": message, "hints": hints, "next_action": next_action}})
}

fn pointer(r: &OpRecord, confidence: Option<f64>) -> Value {
    let path: Vec<&str> = match &r.entity {
        Some(e) => vec![r.group.as_str(), e.as_str()],
        None => vec![r.group.as_str()],
    };
    let mut v = json!({"tool_id": r.op, "path": path, "summary": r.summary, "tags": r.tags, "kind": r.kind.as_str()});
    if let Some(c) = confidence {
        v["confidence"] = json!(c);
    }
    v
}

fn page(
    items: Vec<Value>,
    limit: Option<usize>,
    cursor: Option<&str>,
) -> (Vec<Value>, Option<String>) {
    let limit = limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let offset: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    let next = (offset + limit < items.len()).then(|| (offset + limit).to_string());
    (items.into_iter().skip(offset).take(limit).collect(), next)
}

impl Gateway {
    fn visible(&self, scope: &Scope) -> impl Fn(&OpRecord) -> bool + '_ {
        let scope = scope.clone();
        move |r: &OpRecord| !r.hidden && scope.refuses(r).is_none()
    }

    /// Every node path that exists (`onto`, `onto.task`), for UNKNOWN_PATH suggestions.
    fn node_paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (g, node) in &self.registry().tree {
            out.push(g.clone());
            out.extend(node.entities.keys().map(|e| format!("{g}.{e}")));
        }
        out
    }

    fn unknown_path(&self, segs: &[String]) -> Value {
        let asked = segs.join(".");
        let closest = crate::model::diag::ranked(
            &asked,
            self.node_paths().iter().map(String::as_str),
            3,
            0.0,
        )
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
        let next = match closest.first() {
            Some(c) => format!("list with path {:?}", c.split('.').collect::<Vec<_>>()),
            None => "list with path [] to see the root".into(),
        };
        error(
            "UNKNOWN_PATH",
            format!("no category `{asked}`"),
            closest,
            next,
        )
    }

    /// Ops under a node path, or `None` if the path does not exist.
    fn ops_under(&self, segs: &[String]) -> Option<Vec<&OpRecord>> {
        let reg = self.registry();
        let all = || reg.ops.values();
        match segs {
            [] => Some(all().collect()),
            [g] => reg
                .tree
                .get(g)
                .map(|_| all().filter(|r| &r.group == g).collect()),
            [g, e] => reg.tree.get(g).and_then(|n| n.entities.get(e)).map(|_| {
                all()
                    .filter(|r| &r.group == g && r.entity.as_ref() == Some(e))
                    .collect()
            }),
            _ => None,
        }
    }

    /// seed 001 `list`: child nodes and tool pointers at a path, optionally filtered by tags and a
    /// query (ranked by the search scorer).
    pub fn list(&self, req: &ListRequest, scope: &Scope) -> Value {
        let reg = self.registry();
        let segs = req.path.segments();
        let Some(ops) = self.ops_under(&segs) else {
            return self.unknown_path(&segs);
        };
        let visible = self.visible(scope);
        // Tags filter everything below the path: the nodes are counted by their tagged tools, and
        // a query ranks only tagged tools.
        let tagged = |r: &OpRecord| req.tags.iter().all(|t| r.tags.contains(t));
        let ops: Vec<&OpRecord> = ops
            .into_iter()
            .filter(|r| visible(r) && tagged(r))
            .collect();
        // A node as seed 001 shows it: its tools (as many as the caller may see) and their tags,
        // so a model can narrow a later `list` by a tag it saw.
        let node = |name: &str,
                    path: Vec<&str>,
                    summary: &str,
                    under: &dyn Fn(&OpRecord) -> bool| {
            let mut tools = 0;
            let mut tags = std::collections::BTreeSet::new();
            for r in ops.iter().filter(|r| under(r)) {
                tools += 1;
                tags.extend(r.tags.iter().map(String::as_str));
            }
            (tools > 0).then(|| json!({"name": name, "path": path, "summary": summary, "tags": tags, "tools": tools}))
        };
        let nodes: Vec<Value> = match segs.as_slice() {
            [] => reg
                .tree
                .iter()
                .filter_map(|(g, n)| node(g, vec![g], &n.summary, &|r| &r.group == g))
                .collect(),
            [g] => reg.tree[g]
                .entities
                .iter()
                .filter_map(|(e, n)| {
                    node(
                        e,
                        vec![g, e],
                        n.summary.as_deref().unwrap_or_default(),
                        &|r| &r.group == g && r.entity.as_deref() == Some(e.as_str()),
                    )
                })
                .collect(),
            _ => Vec::new(),
        };
        // Tools directly at this node (the root has none: it lists groups); with tags, every
        // tagged tool below it, since a tag names tools across the tree.
        let here = |r: &OpRecord| match segs.len() {
            _ if !req.tags.is_empty() => true,
            0 => false,
            1 => r.entity.is_none(),
            _ => true,
        };
        let mut tools: Vec<(&OpRecord, Option<f64>)> = ops
            .iter()
            .copied()
            .filter(|r| here(r))
            .map(|r| (r, None))
            .collect();
        if let Some(q) = req.query.as_deref().filter(|q| !q.trim().is_empty()) {
            // A query searches everything below the path, not only this node's own tools.
            let ranked = self
                .index()
                .rank(reg, q, &|r| ops.iter().any(|o| o.op == r.op));
            let top = ranked.first().map_or(1.0, |x| x.1);
            tools = ranked
                .iter()
                .map(|(op, s)| (&reg.ops[op], Some(((s / top) * 100.0).round() / 100.0)))
                .collect();
        }
        let items: Vec<Value> = tools.into_iter().map(|(r, c)| pointer(r, c)).collect();
        let (tools, next_cursor) = page(items, req.limit, req.cursor.as_deref());
        let next_action = if !nodes.is_empty() {
            format!("list a child node, e.g. path {}", nodes[0]["path"])
        } else if let Some(t) = tools.first() {
            format!(
                "expand_tool {{\"tool_id\": {}}} before calling it",
                t["tool_id"]
            )
        } else {
            "search_tool_by_category with other words, or search_nodes".to_string()
        };
        json!({"path": segs, "nodes": nodes, "tools": tools, "next_cursor": next_cursor, "next_action": next_action})
    }

    /// seed 001 `search_nodes`: category paths for a query, ranked by the ops they hold.
    pub fn search_nodes(&self, query: &str, limit: Option<usize>, scope: &Scope) -> Value {
        let reg = self.registry();
        let visible = self.visible(scope);
        let ranked = self.rank(query, &visible);
        let mut by_node: BTreeMap<Vec<String>, f64> = BTreeMap::new();
        for (op, s) in &ranked {
            let r = &reg.ops[op];
            *by_node.entry(vec![r.group.clone()]).or_default() += s;
            if let Some(e) = &r.entity {
                *by_node.entry(vec![r.group.clone(), e.clone()]).or_default() += s * 1.5;
            }
        }
        let top = by_node.values().cloned().fold(0.0, f64::max);
        let mut nodes: Vec<(Vec<String>, f64)> = by_node.into_iter().collect();
        nodes.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let results: Vec<Value> = nodes
            .into_iter()
            .take(limit.unwrap_or(5).clamp(1, MAX_LIMIT))
            .map(|(path, s)| {
                let summary = match path.as_slice() {
                    [g] => reg.tree[g].summary.clone(),
                    [g, e] => reg.tree[g].entities[e].summary.clone().unwrap_or_default(),
                    _ => String::new(),
                };
                json!({"path": path, "summary": summary, "confidence": ((s / top) * 100.0).round() / 100.0})
            })
            .collect();
        let next_action = match results.first() {
            Some(r) => format!(
                "list with path {} or search_tool_by_category there",
                r["path"]
            ),
            None => "list with path [] to browse the root".into(),
        };
        let fit = self.fit(query, &visible);
        json!({"results": results, "match": fit.as_str(), "next_action": next_action})
    }

    /// seed 001 `search_tool_by_category`: a search within one node.
    pub fn search_tool_by_category(&self, req: &CategorySearch, scope: &Scope) -> Value {
        let reg = self.registry();
        let segs = req.category_path.segments();
        let Some(ops) = self.ops_under(&segs) else {
            return self.unknown_path(&segs);
        };
        let visible = self.visible(scope);
        let inside: Vec<&str> = ops
            .iter()
            .filter(|r| visible(r))
            .map(|r| r.op.as_str())
            .collect();
        let ranked = self.rank(&req.query, &|r| inside.contains(&r.op.as_str()));
        if ranked.is_empty() {
            // Where would the query match? Those categories are the hints.
            let elsewhere = self.rank(&req.query, &visible);
            let mut hints: Vec<String> = Vec::new();
            for (op, _) in elsewhere {
                let r = &reg.ops[&op];
                let node = match &r.entity {
                    Some(e) => format!("{}.{e}", r.group),
                    None => r.group.clone(),
                };
                if !hints.contains(&node) {
                    hints.push(node);
                }
                if hints.len() == 3 {
                    break;
                }
            }
            let next = match hints.first() {
                Some(h) => format!(
                    "search_tool_by_category with category_path {:?}",
                    h.split('.').collect::<Vec<_>>()
                ),
                None => "search_nodes with other words, or list with path []".into(),
            };
            return error(
                "NO_MATCH_IN_CATEGORY",
                format!("nothing in `{}` matches \"{}\"", segs.join("."), req.query),
                hints,
                next,
            );
        }
        let top = ranked[0].1;
        let items: Vec<Value> = ranked
            .iter()
            .map(|(op, s)| {
                let c = if s.is_finite() {
                    ((s / top.max(*s)) * 100.0).round() / 100.0
                } else {
                    1.0
                };
                pointer(&reg.ops[op], Some(c))
            })
            .collect();
        let (results, next_cursor) = page(items, req.limit.or(Some(5)), req.cursor.as_deref());
        let fit = self.fit(&req.query, &|r| inside.contains(&r.op.as_str()));
        let next_action = if fit == super::search::Match::None {
            "no tool here does this: search_nodes for another category, or tell the user it cannot be done".to_string()
        } else {
            format!(
                "expand_tool {{\"tool_id\": {}}} before calling it",
                results[0]["tool_id"]
            )
        };
        json!({"category_path": segs, "results": results, "match": fit.as_str(), "next_cursor": next_cursor, "next_action": next_action})
    }

    /// seed 001 `expand_tool`: the full argument schema of one tool.
    pub fn expand_tool(&self, tool_id: &str, scope: &Scope) -> Value {
        let reg = self.registry();
        let Some((op, _)) = crate::model::resolve::resolve_exec(reg, tool_id) else {
            let visible = self.visible(scope);
            let closest: Vec<String> = crate::model::diag::ranked(
                tool_id,
                reg.ops
                    .values()
                    .filter(|r| visible(r))
                    .map(|r| r.op.as_str()),
                3,
                0.0,
            )
            .into_iter()
            .map(str::to_owned)
            .collect();
            return error(
                "TOOL_NOT_FOUND",
                format!("no tool `{tool_id}`"),
                closest,
                "search_tool_by_category or list to find the right tool_id".into(),
            );
        };
        let r = &reg.ops[op];
        if let Some(why) = scope.refuses(r) {
            return error(
                "NOT_AUTHORIZED",
                why,
                Vec::new(),
                "choose a tool from list or search in this scope".into(),
            );
        }
        json!({
            "tool_id": r.op,
            "path": pointer(r, None)["path"],
            "summary": r.summary,
            "args_schema": r.parameters_schema,
            "usage": r.usage(),
            "examples": r.examples.iter().map(|e| json!({"description": e.description, "args": e.args})).collect::<Vec<_>>(),
            "next_action": format!("call it with exec {{\"op\": \"{}\", \"args\": {{...}}}}", r.op),
        })
    }
}
