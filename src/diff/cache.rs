//! Prompt-cache impact: providers cache a prompt by its prefix, so a tools array whose bytes
//! change from position p on must be re-read (and re-paid) from p. For every surface a model sees
//! (the gateway, the direct list, each profile, the help pages), whether its bytes change and how
//! many o200k tokens lie after the first changed byte. Surfaces are regenerated from each IR with
//! the same pure functions the emitters use, so any registry file can be compared.

use crate::compiler::surfaces::{self, ToolDef};
use crate::compiler::tokens::Tokens;
use crate::emit::help as help_emit;
use crate::model::registry::Registry;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// What one surface's change costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Impact {
    /// `gateway`, `direct`, `profile:NAME` or `help`.
    pub surface: String,
    pub changed: bool,
    /// o200k tokens after the first changed byte (for `help`: of every changed page).
    pub tokens_recached: usize,
    /// `added`, `removed`, or for `help` how many pages changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The bytes a provider receives for a tools array.
fn text(defs: &[ToolDef]) -> String {
    surfaces::tools_text(defs)
}

/// Tokens from the first byte where `old` and `new` differ to the end of `new`.
fn recached(old: &str, new: &str) -> usize {
    let mut p = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !new.is_char_boundary(p) {
        p -= 1;
    }
    Tokens::get().o200k(&new[p..])
}

fn tools_impact(surface: String, old: Option<String>, new: Option<String>) -> Impact {
    let (changed, tokens, note) = match (old, new) {
        (Some(a), Some(b)) if a == b => (false, 0, None),
        (Some(a), Some(b)) => (true, recached(&a, &b), None),
        (None, Some(b)) => (true, Tokens::get().o200k(&b), Some("added".into())),
        (Some(_), None) => (true, 0, Some("removed".into())),
        (None, None) => (false, 0, None),
    };
    Impact {
        surface,
        changed,
        tokens_recached: tokens,
        note,
    }
}

/// A help page without its version stamp (which changes with every registry change).
fn page_text(v: &Value) -> String {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("registry_version");
    }
    v.to_string()
}

/// The impact on every surface, gateway first.
pub fn impact(old: &Registry, new: &Registry) -> Vec<Impact> {
    let mut out = vec![
        tools_impact(
            "gateway".into(),
            Some(text(&surfaces::gateway(old))),
            Some(text(&surfaces::gateway(new))),
        ),
        tools_impact(
            "direct".into(),
            Some(text(&surfaces::direct(old))),
            Some(text(&surfaces::direct(new))),
        ),
    ];
    let names: BTreeSet<&String> = old.profiles.keys().chain(new.profiles.keys()).collect();
    for name in names {
        let side = |r: &Registry| {
            r.profiles
                .contains_key(name)
                .then(|| text(&surfaces::profile(r, name)))
        };
        out.push(tools_impact(
            format!("profile:{name}"),
            side(old),
            side(new),
        ));
    }
    out.push(help_impact(old, new, true));
    out
}

/// Help pages are answers, not prefixes: a changed page is read whole (short format). With
/// `only_touched`, only the pages a change can touch are built on each side (all of them when
/// registry-wide fields differ); the result is the same, which a test checks on every diff pair.
pub fn help_impact(old: &Registry, new: &Registry, only_touched: bool) -> Impact {
    let touched = if only_touched {
        touched_paths(old, new)
    } else {
        None
    };
    let keep = |p: &str| touched.as_ref().is_none_or(|t| t.contains(p));
    let (ho, hn) = (
        help_emit::build_only(old, &keep),
        help_emit::build_only(new, &keep),
    );
    let paths: BTreeSet<&String> = ho.pages.keys().chain(hn.pages.keys()).collect();
    let mut changed = 0;
    let mut tokens = 0;
    for p in &paths {
        let (a, b) = (ho.pages.get(*p), hn.pages.get(*p));
        let differs = match (a, b) {
            (Some(a), Some(b)) => {
                page_text(&a.short) != page_text(&b.short)
                    || page_text(&a.full) != page_text(&b.full)
            }
            _ => true,
        };
        if differs {
            changed += 1;
            if let Some(b) = b {
                tokens += Tokens::get().o200k(&page_text(&b.short));
            }
        }
    }
    let mut all = help_emit::page_paths(old);
    all.extend(help_emit::page_paths(new));
    let total = all.len();
    Impact {
        surface: "help".into(),
        changed: changed > 0,
        tokens_recached: tokens,
        note: Some(format!("{changed} of {total} pages changed")),
    }
}

/// The help paths a change can touch: each changed op's page, its group's and entity's pages
/// and the root; every page of a group whose tree node changed. `None` (every page) when a
/// registry-wide field that pages show differs.
fn touched_paths(old: &Registry, new: &Registry) -> Option<BTreeSet<String>> {
    if old.name != new.name || old.description != new.description || old.gateway != new.gateway {
        return None;
    }
    let mut paths: BTreeSet<String> = BTreeSet::from([crate::model::help::ROOT.to_string()]);
    let mut add_op = |r: &crate::model::registry::OpRecord| {
        paths.insert(r.op.clone());
        paths.insert(r.group.clone());
        if let Some(e) = &r.entity {
            for suffix in ["", ".read", ".write"] {
                paths.insert(format!("{}.{e}{suffix}", r.group));
            }
        }
    };
    for (op, r) in &old.ops {
        if new.ops.get(op) != Some(r) {
            add_op(r);
        }
    }
    for (op, r) in &new.ops {
        if old.ops.get(op) != Some(r) {
            add_op(r);
        }
    }
    for (g, node) in old.tree.iter().chain(&new.tree) {
        if old.tree.get(g) != new.tree.get(g) || new.tree.get(g) != Some(node) {
            paths.insert(g.clone());
            for e in node.entities.keys() {
                for suffix in ["", ".read", ".write"] {
                    paths.insert(format!("{g}.{e}{suffix}"));
                }
            }
        }
    }
    Some(paths)
}

/// The one-line summary: `gateway unchanged; profile project: 6,963 tokens re-cached; ...`.
pub fn summary_line(impacts: &[Impact]) -> String {
    impacts
        .iter()
        .map(|i| {
            let name = i.surface.replace(':', " ");
            match (&i.note, i.changed) {
                (_, false) if i.surface != "help" => format!("{name} unchanged"),
                (Some(n), _) if n == "removed" => format!("{name} removed"),
                (Some(n), _) if i.surface == "help" && !i.changed => {
                    format!("help unchanged ({n})")
                }
                (Some(n), _) if i.surface == "help" => {
                    format!("help: {n}, {} tokens", thousands(i.tokens_recached))
                }
                _ => format!("{name}: {} tokens re-cached", thousands(i.tokens_recached)),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `6963` -> `6,963`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_after_the_first_change() {
        assert_eq!(recached("abc", "abc"), 0);
        assert!(recached("[{\"a\":1}]", "[{\"a\":2}]") >= 1);
        assert_eq!(thousands(6963), "6,963");
        assert_eq!(thousands(12), "12");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
