//! A help page (the JSON a model reads) as text for a person at a terminal: `toolreg help` prints
//! this when its output is a terminal, and the JSON when it is piped or with `--json`.
//! Catalog text is escaped (`\u{1b}`), never printed raw.

use serde_json::Value;
use std::fmt::Write as _;

fn esc(text: &str) -> String {
    toolreg::diag::escape_controls(text)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn list_of<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn short_json(v: &Value) -> String {
    match v {
        Value::String(s) => esc(s),
        other => esc(&other.to_string()),
    }
}

/// One listing (groups, entities, ops) as aligned lines.
fn listing(out: &mut String, title: &str, items: &[Value]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}:");
    let name = |i: &Value| {
        str_of(i, "op")
            .or_else(|| str_of(i, "path"))
            .unwrap_or_default()
            .to_string()
    };
    let width = items
        .iter()
        .map(|i| name(i).chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    for i in items {
        let mut line = format!("  {:<width$}", esc(&name(i)));
        if let Some(kind) = str_of(i, "kind") {
            let _ = write!(line, "  {kind:<5}");
        }
        if let Some(n) = i.get("ops").and_then(Value::as_u64) {
            let _ = write!(line, "  {n:>3} op{}", if n == 1 { " " } else { "s" });
        }
        if let Some(s) = str_of(i, "summary") {
            let _ = write!(line, "  {}", esc(s));
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// The page as text.
pub(super) fn render(page: &Value) -> String {
    let mut out = String::new();
    let path = str_of(page, "path").unwrap_or("root");
    if let Some(err) = page.get("error") {
        let _ = writeln!(
            out,
            "error[{}]: {}",
            str_of(err, "code").unwrap_or("ERROR"),
            esc(str_of(err, "message").unwrap_or_default())
        );
        let closest: Vec<String> = list_of(err, "closest").iter().map(short_json).collect();
        if !closest.is_empty() {
            let _ = writeln!(out, "  closest: {}", closest.join(", "));
        }
        if let Some(next) = str_of(err, "next_action") {
            let _ = writeln!(out, "  next: {}", esc(next));
        }
    } else {
        let mut title = esc(path);
        if let Some(kind) = str_of(page, "kind") {
            let _ = write!(title, " ({kind}");
            if page.get("destructive") == Some(&Value::Bool(true)) {
                title.push_str(", destructive");
            }
            title.push(')');
        }
        if let Some(registry) = str_of(page, "registry") {
            let _ = write!(title, ": registry {}", esc(registry));
        }
        let _ = writeln!(out, "{title}");
    }
    if let Some(s) = str_of(page, "summary") {
        let _ = writeln!(out, "{}", esc(s));
    }
    if let Some(d) = str_of(page, "description") {
        if Some(d) != str_of(page, "summary") {
            let _ = writeln!(out, "\n{}", esc(d));
        }
    }
    if let Some(u) = str_of(page, "usage") {
        let _ = writeln!(out, "\nusage: {}", esc(u));
    }
    let args = list_of(page, "args");
    if !args.is_empty() {
        let _ = writeln!(out, "\narguments:");
        for a in args {
            let mut line = format!(
                "  {}{}: {}",
                esc(str_of(a, "name").unwrap_or_default()),
                if a.get("required") == Some(&Value::Bool(true)) {
                    " (required)"
                } else {
                    ""
                },
                esc(str_of(a, "type").unwrap_or("any"))
            );
            let values: Vec<String> = list_of(a, "enum").iter().map(short_json).collect();
            if !values.is_empty() {
                let _ = write!(line, " one of {}", values.join("|"));
            }
            if let Some(d) = a.get("default") {
                let _ = write!(line, ", default {}", short_json(d));
            }
            if let Some(d) = str_of(a, "description") {
                let _ = write!(line, ". {}", esc(d));
            }
            let _ = writeln!(out, "{line}");
        }
    }
    for (title, key) in [("notes", "notes"), ("find the ids first", "id_discovery")] {
        let items = list_of(page, key);
        if !items.is_empty() {
            let _ = writeln!(out, "\n{title}:");
            for n in items {
                let _ = writeln!(out, "  - {}", short_json(n));
            }
        }
    }
    if let Some(policy) = page.get("policy") {
        for (title, key) in [
            ("do", "do"),
            ("don't", "dont"),
            ("edge cases", "edge_cases"),
        ] {
            let items = list_of(policy, key);
            if !items.is_empty() {
                let _ = writeln!(out, "\n{title}:");
                for n in items {
                    let _ = writeln!(out, "  - {}", short_json(n));
                }
            }
        }
    }
    let examples = list_of(page, "examples");
    if !examples.is_empty() {
        let _ = writeln!(out, "\nexamples:");
        for e in examples {
            if let Some(d) = str_of(e, "description") {
                let _ = writeln!(out, "  {}", esc(d));
            }
            let call = e.get("call").unwrap_or(e);
            let op = str_of(call, "op").unwrap_or(path);
            let args = call
                .get("args")
                .map(Value::to_string)
                .unwrap_or_else(|| "{}".into());
            let _ = writeln!(
                out,
                "    toolreg exec {} --args '{}'",
                esc(op),
                esc(&args.replace('\'', "'\\''"))
            );
        }
    }
    listing(&mut out, "groups", list_of(page, "groups"));
    listing(&mut out, "entities", list_of(page, "entities"));
    listing(&mut out, "ops", list_of(page, "ops"));
    if let (Some(p), Some(n)) = (
        page.get("page").and_then(Value::as_u64),
        page.get("pages").and_then(Value::as_u64),
    ) {
        let _ = write!(out, "\npage {p} of {n}");
        if let Some(next) = str_of(page, "next_page") {
            let _ = write!(out, ": next `toolreg help {}`", esc(next));
        }
        out.push('\n');
    }
    if let Some(next) = str_of(page, "next") {
        let _ = writeln!(out, "\nnext: {}", esc(next));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_op_page_reads_as_text_and_catalog_text_is_escaped() {
        let page = json!({
            "path": "onto.task.update", "kind": "write", "summary": "Update a task.\u{1b}[31m",
            "usage": "onto.task.update task_id=<string>",
            "args": [{"name": "task_id", "type": "string", "required": true, "description": "Task ID."},
                     {"name": "state_key", "type": "string", "enum": ["todo", "done"]}],
            "notes": ["Get task_id from onto.task.search first."],
            "examples": [{"description": "Minimal call.", "call": {"op": "onto.task.update", "args": {"task_id": "t'1"}}}]
        });
        let text = render(&page);
        assert!(
            text.starts_with("onto.task.update (write)\nUpdate a task.\\u{1b}[31m\n"),
            "{text}"
        );
        assert!(
            text.contains("  task_id (required): string. Task ID.\n"),
            "{text}"
        );
        assert!(
            text.contains("  state_key: string one of todo|done\n"),
            "{text}"
        );
        assert!(
            text.contains("toolreg exec onto.task.update --args '{\"task_id\":\"t'\\''1\"}'"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'));
    }

    #[test]
    fn listings_and_errors() {
        let page = json!({"path": "onto.tsk", "error": {"code": "UNKNOWN_PATH", "message": "not a path",
            "closest": ["onto.task"]}, "groups": [{"path": "onto", "summary": "Ontology.", "ops": 49}]});
        let text = render(&page);
        assert!(
            text.starts_with("error[UNKNOWN_PATH]: not a path\n  closest: onto.task\n"),
            "{text}"
        );
        assert!(
            text.contains("\ngroups:\n  onto   49 ops  Ontology.\n"),
            "{text}"
        );
    }
}
