//! Enrich: what toolreg derives from a classified tool beyond its op: the one-line summary and
//! the provider-safe name. (Policy drafts, examples and argument tables grow here.)

/// The longest provider-valid tool name.
pub const PROVIDER_NAME_MAX: usize = 64;

/// Whether every major provider accepts a tool name (`^[a-zA-Z0-9_-]{1,64}$`).
pub fn provider_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= PROVIDER_NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A provider-valid name for `name`: other characters become `_` (runs collapsed), and a name
/// still over 64 characters keeps its first 55 plus `_` and 8 hex of its blake3 hash, so two long
/// names stay distinct. Valid names are returned unchanged.
pub fn provider_name(name: &str) -> String {
    if provider_valid(name) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let trimmed = out.trim_matches('_');
    let mut out = if trimmed.is_empty() {
        "tool".to_string()
    } else {
        trimmed.to_string()
    };
    if out.len() > PROVIDER_NAME_MAX {
        let hash = blake3::hash(name.as_bytes()).to_hex();
        out.truncate(55);
        out = format!("{}_{}", out.trim_end_matches('_'), &hash[..8]);
    }
    out
}

/// The longest summary, in characters.
const SUMMARY_MAX: usize = 200;

/// The first sentence of a description: up to the first `. `, `! `, `? ` or blank line, leading
/// markdown heading marks removed, cut at a word boundary past 200 characters.
pub fn summary(description: &str) -> String {
    let text = description.trim();
    let first_para = text.split("\n\n").next().unwrap_or(text);
    let flat: String = first_para
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut end = flat.len();
    for (i, _) in flat.match_indices(['.', '!', '?']) {
        let next = flat[i + 1..].chars().next();
        if next.is_none() || next.is_some_and(char::is_whitespace) {
            // Skip common abbreviations like "e.g." and "i.e.".
            let before = &flat[..i + 1];
            if before.ends_with("e.g.")
                || before.ends_with("i.e.")
                || before.ends_with("etc.") && next.is_some()
            {
                continue;
            }
            end = i + 1;
            break;
        }
    }
    let sentence = flat[..end].trim();
    if sentence.chars().count() <= SUMMARY_MAX {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(SUMMARY_MAX).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > SUMMARY_MAX / 2 => &cut[..i],
        _ => &cut[..],
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names() {
        assert_eq!(provider_name("list_onto_tasks"), "list_onto_tasks");
        assert_eq!(provider_name("math.factorial"), "math_factorial");
        assert_eq!(provider_name("Summarize Detection"), "Summarize_Detection");
        assert_eq!(provider_name("  weird..name!! "), "weird_name");
        let long = "a".repeat(80);
        let p = provider_name(&long);
        assert!(provider_valid(&p) && p.len() == 64, "{p}");
        assert_ne!(p, provider_name(&"a".repeat(81)));
    }

    #[test]
    fn summaries() {
        assert_eq!(summary("List tasks. Filters apply."), "List tasks.");
        assert_eq!(
            summary("Search docs, e.g. specs. More."),
            "Search docs, e.g. specs."
        );
        assert_eq!(
            summary("## Title\nFirst line\ncontinues.\n\nSecond para."),
            "Title First line continues."
        );
        assert_eq!(
            summary("Version 2.5 is fine. Next."),
            "Version 2.5 is fine."
        );
        assert!(summary(&"word ".repeat(100)).ends_with('…'));
    }
}
