//! A diff report as text (people), JSON (tools; stable field names) or Markdown (a pull-request
//! comment).

use super::cache::{summary_line, thousands};
use super::Report;

fn counts(r: &Report) -> String {
    let s = r.summary;
    let security = if s.security > 0 {
        format!("{} security, ", s.security)
    } else {
        String::new()
    };
    format!(
        "{security}{} breaking, {} warning{}, {} info",
        s.breaking,
        s.warning,
        if s.warning == 1 { "" } else { "s" },
        s.info
    )
}

/// rustc-like lines: `breaking[TD004] onto.task.update: ... (at /parameters_schema/...)`.
pub fn text(r: &Report) -> String {
    let mut out = format!("registry {} -> {}\n", r.old_version, r.new_version);
    for f in &r.findings {
        out.push_str(&format!(
            "{}[{}] {}: {}\n",
            f.level.as_str(),
            f.code,
            f.op,
            f.message
        ));
        if !f.pointer.is_empty() {
            out.push_str(&format!("  --> {}\n", f.pointer));
        }
    }
    if r.findings.is_empty() {
        out.push_str("no changes to ops, arguments, texts or profiles\n");
    }
    if !r.prompt_cache.is_empty() {
        out.push_str(&format!(
            "prompt cache: {}\n",
            summary_line(&r.prompt_cache)
        ));
    }
    out.push_str(&counts(r));
    out.push('\n');
    out
}

/// The report as pretty JSON.
pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("a report always serializes") + "\n"
}

fn cell(s: &str) -> String {
    // Catalog text reaches a pull-request page: no cell may open an HTML tag there.
    s.replace('|', "\\|")
        .replace('\n', " ")
        .replace('<', "&lt;")
}

/// A pull-request comment: counts, a table of findings (security, then breaking first), the
/// cache impact.
pub fn markdown(r: &Report) -> String {
    let mut out = format!(
        "### toolreg diff `{}` -> `{}`\n\n",
        r.old_version, r.new_version
    );
    let icon = if r.summary.security > 0 {
        "**Security-relevant changes: review them first.** "
    } else if r.summary.breaking > 0 {
        "**Breaking changes.** "
    } else {
        ""
    };
    out.push_str(&format!("{icon}{}.\n\n", counts(r)));
    if !r.findings.is_empty() {
        out.push_str("| level | code | op | where | what |\n| --- | --- | --- | --- | --- |\n");
        let mut rows: Vec<_> = r.findings.iter().collect();
        rows.sort_by_key(|f| (f.level, f.op.clone(), f.pointer.clone()));
        for f in rows {
            out.push_str(&format!(
                "| {} | {} | `{}` | `{}` | {} |\n",
                f.level.as_str(),
                f.code,
                f.op,
                if f.pointer.is_empty() {
                    "/"
                } else {
                    &f.pointer
                },
                cell(&f.message)
            ));
        }
        out.push('\n');
    }
    if !r.prompt_cache.is_empty() {
        out.push_str("**Prompt cache**\n\n| surface | changed | o200k tokens re-cached |\n| --- | --- | --- |\n");
        for i in &r.prompt_cache {
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                i.surface,
                match (&i.note, i.changed) {
                    (Some(n), _) => n.clone(),
                    (None, true) => "yes".into(),
                    (None, false) => "no".into(),
                },
                thousands(i.tokens_recached)
            ));
        }
    }
    out
}
