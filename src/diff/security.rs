//! The security classes of a registry change: what a reviewer must see before anything else.
//!
//! - TD050: text the poisoning lint flags ([`crate::compiler::poison`]) was added or altered
//!   in what a model reads (descriptions, titles, argument names and descriptions, enum values,
//!   examples, defaults).
//! - TD051: a tool can now do more: read became write, it became destructive, a read op gained
//!   a free-text argument (a channel out), or its arguments were opened
//!   (`additionalProperties` no longer `false`).
//! - TD052: an added tool's name looks like another tool's (the same letters once look-alike
//!   characters are folded, or one edit from a tool removed in the same change).

use super::{finding, DiffCode, Finding};
use crate::model::registry::{Kind, OpRecord, Registry};
use serde_json::Value;
use std::collections::BTreeSet;

/// Every security finding between two registries.
pub fn findings(old: &Registry, new: &Registry, out: &mut Vec<Finding>) {
    let old_by_tool: std::collections::HashMap<&str, &OpRecord> = old
        .ops
        .values()
        .map(|r| (r.tool_name.as_str(), r))
        .collect();
    for (op, n) in &new.ops {
        // The same op, or the same tool under a new op name.
        let o = old
            .ops
            .get(op)
            .or_else(|| old_by_tool.get(n.tool_name.as_str()).copied());
        poisoned_text(o, n, out);
        if let Some(o) = o {
            widened(o, n, out);
        }
    }
    lookalikes(old, new, out);
}

fn poisoned_text(o: Option<&OpRecord>, n: &OpRecord, out: &mut Vec<Finding>) {
    let before: BTreeSet<_> = o
        .map(|o| crate::compiler::poison::flagged(&o.description, &o.parameters_schema))
        .unwrap_or_default()
        .into_iter()
        .collect();
    for f in crate::compiler::poison::flagged(&n.description, &n.parameters_schema) {
        if before.contains(&f) {
            continue;
        }
        out.push(finding(
            DiffCode::PoisonedText,
            &n.op,
            f.pointer.clone(),
            format!(
                "{} ({}): {} [{}]: {}",
                f.what,
                if o.is_some() {
                    "newly flagged"
                } else {
                    "in a new op"
                },
                f.message,
                f.rule,
                f.evidence
            ),
        ));
    }
}

fn widened(o: &OpRecord, n: &OpRecord, out: &mut Vec<Finding>) {
    let mut push = |pointer: &str, message: String| {
        out.push(finding(
            DiffCode::Widened,
            &n.op,
            pointer.to_string(),
            message,
        ))
    };
    if o.kind == Kind::Read && n.kind == Kind::Write {
        push(
            "/kind",
            "read became write: it can now change things".into(),
        );
    }
    if !o.destructive && n.destructive {
        push(
            "/destructive",
            "became destructive: it can now delete or overwrite".into(),
        );
    }
    if !o.pass_unknown_arguments && n.pass_unknown_arguments {
        push(
            "/pass_unknown_arguments",
            "now passes arguments its schema does not declare".into(),
        );
    }
    let props = |s: &Value| s.get("properties").and_then(Value::as_object).cloned();
    if n.kind == Kind::Read {
        let had = props(&o.parameters_schema).unwrap_or_default();
        for (name, p) in props(&n.parameters_schema).unwrap_or_default() {
            if !had.contains_key(&name) && free_text(&p) {
                push(
                    &format!(
                        "/parameters_schema/properties/{}",
                        name.replace('~', "~0").replace('/', "~1")
                    ),
                    format!(
                        "a read op gained the free-text argument `{}`: a channel to send data out through",
                        crate::model::diag::escape_controls(&name)
                    ),
                );
            }
        }
    }
    let closed = |s: &Value| s.get("additionalProperties") == Some(&Value::Bool(false));
    if closed(&o.parameters_schema) && !closed(&n.parameters_schema) {
        push(
            "/parameters_schema/additionalProperties",
            "`additionalProperties` was opened: it now takes arguments nobody reviewed".into(),
        );
    }
}

/// A string argument nothing constrains (no enum, const, format or pattern).
fn free_text(p: &Value) -> bool {
    let is_string = match p.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        None => p.get("enum").is_none() && p.get("const").is_none(),
        _ => false,
    };
    is_string
        && !["enum", "const", "format", "pattern"]
            .iter()
            .any(|k| p.get(*k).is_some())
}

fn lookalikes(old: &Registry, new: &Registry, out: &mut Vec<Finding>) {
    let old_names: BTreeSet<&str> = old.ops.values().map(|r| r.tool_name.as_str()).collect();
    let new_names: BTreeSet<&str> = new.ops.values().map(|r| r.tool_name.as_str()).collect();
    let removed: BTreeSet<&str> = old_names.difference(&new_names).copied().collect();
    // Every tool a newcomer could be taken for: the old ones and the other new ones.
    let known: Vec<(&str, String)> = old_names
        .union(&new_names)
        .map(|n| (*n, skeleton(n)))
        .collect();
    for n in new
        .ops
        .values()
        .filter(|r| !old_names.contains(r.tool_name.as_str()))
    {
        let name = n.tool_name.as_str();
        let sk = skeleton(name);
        let twin = known
            .iter()
            .find(|(other, s)| *other != name && *s == sk)
            .map(|(other, _)| (*other, "with look-alike characters folded, it is"));
        let twin = twin.or_else(|| {
            removed
                .iter()
                .find(|r| name.chars().count() >= 5 && strsim::damerau_levenshtein(name, r) == 1)
                .map(|r| (*r, "it is one edit from the removed tool"))
        });
        if let Some((other, how)) = twin {
            out.push(finding(
                DiffCode::Lookalike,
                &n.op,
                "/tool_name".into(),
                format!(
                    "added tool `{}`: {how} `{}`; a model may take one for the other",
                    crate::model::diag::escape_controls(name),
                    crate::model::diag::escape_controls(other)
                ),
            ));
        }
    }
}

/// A name with look-alike characters folded: digits that pass for letters, capital `I` for `l`,
/// `rn` for `m` and `vv` for `w`, fullwidth forms, the Cyrillic and Greek letters that look
/// Latin, and invisible characters dropped. Case and separators are kept: `get_user`,
/// `get-user` and `getUser` are how different servers spell names (on the ToolSDK registry,
/// folding them flagged 693 of 8,010 tools), not a disguise.
pub fn skeleton(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    for c in name.chars() {
        let c = match c as u32 {
            // Fullwidth ASCII.
            0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        };
        let folded = match c {
            '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}' => continue,
            '0' | 'о' | 'ο' => 'o',
            'О' | 'Ο' => 'O',
            '1' | 'I' | 'l' | '|' | 'і' | 'ӏ' | 'ι' | 'Ι' | 'І' => 'l',
            'ѕ' => 's',
            'Ѕ' => 'S',
            'а' | 'α' => 'a',
            'А' | 'Α' => 'A',
            'е' | 'ε' => 'e',
            'Е' | 'Ε' => 'E',
            'р' | 'ρ' => 'p',
            'Р' | 'Ρ' => 'P',
            'с' => 'c',
            'С' => 'C',
            'у' | 'γ' => 'y',
            'х' | 'χ' => 'x',
            'Х' | 'Χ' => 'X',
            'ј' => 'j',
            'К' | 'Κ' => 'K',
            'Н' | 'Η' => 'H',
            'Т' | 'Τ' => 'T',
            'В' | 'Β' => 'B',
            'М' | 'Μ' => 'M',
            'ν' => 'v',
            'Ν' => 'N',
            'ԁ' => 'd',
            'ԛ' => 'q',
            'ԝ' => 'w',
            other => other,
        };
        s.push(folded);
    }
    s.replace("rn", "m").replace("vv", "w")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alike_names_fold_to_one_skeleton_and_honest_ones_do_not() {
        for (a, b) in [
            ("send_email", "send_emaiI"),
            ("send_email", "send_emai1"),
            ("read_file", "reаd_file"), // Cyrillic а
            ("modern_list", "modem_list"),
            ("transfer", "ｔｒａｎｓｆｅｒ"),
        ] {
            assert_eq!(skeleton(a), skeleton(b), "{a} / {b}");
        }
        for (a, b) in [
            ("get_user", "get_users"),
            ("list_files", "list_tiles"),
            ("read", "load"),
        ] {
            assert_ne!(skeleton(a), skeleton(b), "{a} / {b}");
        }
    }

    #[test]
    fn free_text_is_an_unconstrained_string() {
        assert!(free_text(&serde_json::json!({"type": "string"})));
        assert!(free_text(&serde_json::json!({"type": ["string", "null"]})));
        assert!(!free_text(
            &serde_json::json!({"type": "string", "enum": ["a"]})
        ));
        assert!(!free_text(
            &serde_json::json!({"type": "string", "format": "uuid"})
        ));
        assert!(!free_text(&serde_json::json!({"type": "integer"})));
    }
}
