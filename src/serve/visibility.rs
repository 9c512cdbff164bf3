//! What one caller may see: everything it may not call is taken out of the answers it gets
//! (help pages, search results and their directory, envelopes, gateway tool descriptions), so
//! a principal with a read scope cannot learn a write op's name from any of them.
//!
//! The scrub is structural where the answer has structure (a list entry that names a hidden op
//! or a path with no visible op goes; `ops` counts are recounted) and textual elsewhere (a hidden
//! op, tool name or path inside a sentence becomes `(not available)`).

use crate::model::registry::Registry;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};

pub struct Visibility {
    /// Ops the caller may not use, and their tool and provider names.
    hidden_names: HashSet<String>,
    /// Groups and `group.entity` paths with no op the caller may use.
    hidden_paths: HashSet<String>,
    /// Path -> how many ops under it the caller may use.
    counts: HashMap<String, usize>,
}

const REPLACEMENT: &str = "(not available)";

impl Visibility {
    /// `None` when `allowed` hides nothing.
    pub fn new(reg: &Registry, allowed: &BTreeSet<String>) -> Option<Visibility> {
        if reg.ops.keys().all(|op| allowed.contains(op)) {
            return None;
        }
        let mut hidden_names = HashSet::new();
        let mut counts: HashMap<String, usize> = HashMap::new();
        let mut all_paths = HashSet::new();
        for r in reg.ops.values() {
            let mut paths = vec![r.group.clone()];
            if let Some(e) = &r.entity {
                paths.push(format!("{}.{e}", r.group));
            }
            if allowed.contains(&r.op) {
                for p in &paths {
                    *counts.entry(p.clone()).or_default() += 1;
                }
            } else {
                hidden_names.insert(r.op.clone());
                hidden_names.insert(r.tool_name.clone());
                hidden_names.insert(r.provider_name.clone());
            }
            all_paths.extend(paths);
        }
        // A name an allowed op also goes by stays visible (two servers may share a tool name).
        for r in reg.ops.values().filter(|r| allowed.contains(&r.op)) {
            hidden_names.remove(&r.tool_name);
            hidden_names.remove(&r.provider_name);
        }
        let hidden_paths = all_paths
            .into_iter()
            .filter(|p| !counts.contains_key(p))
            .collect();
        Some(Visibility {
            hidden_names,
            hidden_paths,
            counts,
        })
    }

    fn hides(&self, s: &str) -> bool {
        let s = s.trim();
        self.hidden_names.contains(s) || self.hidden_paths.contains(s)
    }

    /// Whether a help path or op names something hidden (or lies under a hidden path).
    pub fn hides_path(&self, path: &str) -> bool {
        // A later page of a directory (`group@2`) is hidden with the directory.
        let path = path.trim();
        let path = path.split('@').next().unwrap_or(path);
        self.hides(path)
            || path
                .match_indices('.')
                .any(|(i, _)| self.hidden_paths.contains(&path[..i]))
    }

    /// `text` with every hidden name in it replaced.
    pub fn scrub_text(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            if !word.is_empty() {
                // A sentence's final dot is not part of the name.
                let core = word.trim_end_matches('.');
                if self.hides(core) {
                    out.push_str(REPLACEMENT);
                    out.push_str(&word[core.len()..]);
                } else {
                    out.push_str(word);
                }
                word.clear();
            }
        };
        for c in text.chars() {
            if c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '/' | ':') {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    }

    fn names_hidden(&self, v: &Value) -> bool {
        match v {
            Value::String(s) => self.hides(s),
            Value::Object(o) => ["op", "path", "tool_name", "name"].iter().any(|k| {
                o.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|s| self.hides(s))
            }),
            _ => false,
        }
    }

    /// Takes hidden ops and paths out of an answer.
    pub fn scrub(&self, v: &mut Value) {
        match v {
            Value::Array(items) => {
                items.retain(|i| !self.names_hidden(i));
                for i in items {
                    self.scrub(i);
                }
            }
            Value::Object(o) => {
                o.retain(|k, _| !self.hides(k));
                let path = o.get("path").and_then(Value::as_str).map(str::to_owned);
                for (k, val) in o.iter_mut() {
                    if k == "ops" && val.is_number() {
                        if let Some(p) = &path {
                            *val = Value::from(self.counts.get(p).copied().unwrap_or(0));
                        }
                        continue;
                    }
                    self.scrub(val);
                }
            }
            Value::String(s) => {
                let scrubbed = self.scrub_text(s);
                if scrubbed != *s {
                    *s = scrubbed;
                }
            }
            _ => {}
        }
    }
}

/// A gateway over only the ops `allowed` names, with the help pages a catalog of just those
/// ops would have (the group tree pruned to them): what a caller who sees no others reads.
pub(super) fn view_gateway(
    reg: &Registry,
    allowed: &BTreeSet<String>,
) -> Option<crate::runtime::Gateway> {
    let mut own = reg.clone();
    own.ops.retain(|op, _| allowed.contains(op));
    for node in own.tree.values_mut() {
        node.ops.retain(|op| allowed.contains(op));
        for entity in node.entities.values_mut() {
            entity.ops.retain(|op| allowed.contains(op));
        }
        node.entities.retain(|_, e| !e.ops.is_empty());
    }
    own.tree
        .retain(|_, n| !n.ops.is_empty() || !n.entities.is_empty());
    let help = crate::emit::help::build(&own);
    crate::runtime::Gateway::new(own, help).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg() -> Registry {
        Registry::from_path(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("generated/registry.json"),
        )
        .unwrap()
    }

    #[test]
    fn hidden_ops_leave_lists_texts_and_counts() {
        let reg = reg();
        let allowed: BTreeSet<String> = reg
            .ops
            .values()
            .filter(|r| r.kind == crate::model::registry::Kind::Read)
            .map(|r| r.op.clone())
            .collect();
        let v = Visibility::new(&reg, &allowed).unwrap();
        assert!(v.hides("onto.task.update") && !v.hides("onto.task.list"));
        assert_eq!(
            v.scrub_text("Call onto.task.list before onto.task.update."),
            "Call onto.task.list before (not available)."
        );
        let mut page = serde_json::json!({
            "path": "onto.task",
            "ops": [{"op": "onto.task.list", "kind": "read"}, {"op": "onto.task.update", "kind": "write"}],
            "entities": [{"path": "onto.task", "ops": 8}],
            "next": ["onto.task.create", "onto.task.list"],
        });
        v.scrub(&mut page);
        assert_eq!(page["ops"].as_array().unwrap().len(), 1);
        assert_eq!(page["next"], serde_json::json!(["onto.task.list"]));
        let reads_under_task = allowed
            .iter()
            .filter(|o| o.starts_with("onto.task."))
            .count();
        assert_eq!(page["entities"][0]["ops"], reads_under_task);
        assert!(Visibility::new(&reg, &reg.ops.keys().cloned().collect()).is_none());
    }
}
