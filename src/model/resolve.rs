//! Op resolution: what a model typed -> a canonical op.
//!
//! exec accepts the op exactly, a tool name, an overlay alias, or any of these wrapped in noise
//! models produce (quotes, backticks, whitespace, `<tool_call>` markup, `op=` prefixes), and
//! reports every rewrite. Help additionally forgives misspellings such as a plural entity
//! (`onto.tasks.list`) or a missing group (`task.list`) when exactly one op fits. exec never
//! guesses: running a guessed op could run the wrong write.

use crate::model::registry::Registry;

/// How an input was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// The input was the op.
    Exact,
    /// The input was the op's tool name.
    ToolName,
    /// The input was an overlay alias of the op.
    Alias(String),
    /// Noise was removed (the cleaned text was the op, its tool name or an alias).
    Sanitized { cleaned: String },
    /// A misspelling with exactly one fitting op (help only).
    Corrected { from: String },
}

impl Resolved {
    /// A warning for `meta.warnings` when the input was not the op itself.
    pub fn warning(&self, input: &str, op: &str) -> Option<String> {
        match self {
            Resolved::Exact => None,
            Resolved::ToolName => Some(format!(
                "`{input}` is the tool name of `{op}`; call ops by their op name"
            )),
            Resolved::Alias(a) => Some(format!("`{a}` is an alias of `{op}`")),
            Resolved::Sanitized { cleaned } => {
                Some(format!("op `{}` was read as `{cleaned}`", input.trim())).map(|w| {
                    if cleaned == op {
                        w
                    } else {
                        format!("{w}, which resolves to `{op}`")
                    }
                })
            }
            Resolved::Corrected { from } => Some(format!("`{from}` is not an op; showing `{op}`")),
        }
    }
}

/// Strips the wrappers models put around an op name. `None` when nothing changed.
pub fn sanitize(input: &str) -> Option<String> {
    let mut s = input.trim().to_string();
    for _ in 0..4 {
        let before = s.clone();
        // <tool_call>op</tool_call>, <op>x</op>, and similar markup.
        if s.starts_with('<') {
            if let Some(end) = s.find('>') {
                s = s[end + 1..].to_string();
            }
        }
        if let Some(start) = s.rfind("</") {
            if s.ends_with('>') {
                s.truncate(start);
            }
        }
        s = s
            .trim()
            .trim_matches(|c: char| c == '"' || c == '\'' || c == '`' || c == '*')
            .trim()
            .to_string();
        for prefix in ["op=", "op:", "op =", "op :", "tool=", "tool:"] {
            if s.to_lowercase().starts_with(prefix) {
                s = s[prefix.len()..].trim().to_string();
            }
        }
        s = s.trim_end_matches(['(', ')', ';', ',']).trim().to_string();
        if s == before {
            break;
        }
    }
    (s != input && !s.is_empty()).then_some(s)
}

/// The op for an exact op, tool name or alias.
fn direct<'a>(reg: &'a Registry, s: &str) -> Option<(&'a str, Resolved)> {
    if let Some((op, _)) = reg.ops.get_key_value(s) {
        return Some((op.as_str(), Resolved::Exact));
    }
    if let Some(r) = reg.op_by_tool_name(s) {
        return Some((r.op.as_str(), Resolved::ToolName));
    }
    reg.ops
        .values()
        .find(|r| r.aliases.iter().any(|a| a == s))
        .map(|r| (r.op.as_str(), Resolved::Alias(s.to_string())))
}

/// exec's resolution: exact, tool name, alias, or one of those after sanitizing (also lowercased).
pub fn resolve_exec<'a>(reg: &'a Registry, input: &str) -> Option<(&'a str, Resolved)> {
    if let Some(hit) = direct(reg, input) {
        return Some(hit);
    }
    let cleaned = sanitize(input).unwrap_or_else(|| input.trim().to_string());
    for candidate in [cleaned.clone(), cleaned.to_lowercase()] {
        if let Some((op, _)) = direct(reg, &candidate) {
            return Some((op, Resolved::Sanitized { cleaned: candidate }));
        }
    }
    None
}

/// Singular of one op segment (`tasks` -> `task`).
fn singular(seg: &str) -> String {
    if let Some(s) = seg.strip_suffix("ies") {
        format!("{s}y")
    } else if seg.ends_with("ss") {
        seg.to_string()
    } else {
        seg.strip_suffix('s').unwrap_or(seg).to_string()
    }
}

/// Help's resolution: exec's, then misspellings that fit exactly one op: plural segments
/// (`onto.tasks.list`), a missing group (`task.list`), `_` for `.` (`onto_task_list`).
pub fn resolve_forgiving<'a>(reg: &'a Registry, input: &str) -> Option<(&'a str, Resolved)> {
    if let Some(hit) = resolve_exec(reg, input) {
        return Some(hit);
    }
    let cleaned = sanitize(input)
        .unwrap_or_else(|| input.trim().to_string())
        .to_lowercase();
    let normalized: String = cleaned
        .replace(['_', '/', ' '], ".")
        .split('.')
        .filter(|s| !s.is_empty())
        .map(singular)
        .collect::<Vec<_>>()
        .join(".");
    let fits: Vec<&str> = reg
        .ops
        .keys()
        .map(String::as_str)
        .filter(|op| {
            let op_norm: String = op.split('.').map(singular).collect::<Vec<_>>().join(".");
            op_norm == normalized || op_norm.ends_with(&format!(".{normalized}"))
        })
        .collect();
    match fits.as_slice() {
        [one] => Some((
            one,
            Resolved::Corrected {
                from: input.trim().to_string(),
            },
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizing() {
        assert_eq!(sanitize("  onto.task.list "), Some("onto.task.list".into()));
        assert_eq!(
            sanitize("\"onto.task.list\""),
            Some("onto.task.list".into())
        );
        assert_eq!(sanitize("`onto.task.list`"), Some("onto.task.list".into()));
        assert_eq!(
            sanitize("<tool_call>onto.task.list</tool_call>"),
            Some("onto.task.list".into())
        );
        assert_eq!(sanitize("op=onto.task.list"), Some("onto.task.list".into()));
        assert_eq!(sanitize("onto.task.list()"), Some("onto.task.list".into()));
        assert_eq!(sanitize("onto.task.list"), None);
        assert_eq!(sanitize("\"\""), None);
    }
}
