//! Policy drafts: structured do / don't / edge-case guidance pulled out of a description, so help
//! pages can carry the guardrails without the whole essay.
//!
//! Headings ("CREATE TASKS WHEN:", "DO NOT CREATE WHEN:", "Edge cases:") route the bullets under
//! them; outside a heading, a sentence that starts with a cue phrase ("Use when", "Do not",
//! "If ambiguous", ...) goes to its bucket. The cue phrases come from the overlay. A policy in the
//! overlay replaces the draft: extraction only drafts, people decide.

use super::overlay::{PolicyCues, PolicySpec};

/// Longest policy item, in characters.
const ITEM_MAX: usize = 140;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bucket {
    Do,
    Dont,
    Edge,
}

fn starts_with_ci(text: &str, cue: &str) -> bool {
    text.len() >= cue.len()
        && text.is_char_boundary(cue.len())
        && text[..cue.len()].eq_ignore_ascii_case(cue)
}

fn contains_ci(text: &str, cue: &str) -> bool {
    text.to_lowercase().contains(&cue.to_lowercase())
}

/// A heading is a short line ending in ':' ("DO NOT CREATE WHEN:").
fn heading_bucket(line: &str, cues: &PolicyCues) -> Option<Option<Bucket>> {
    let body = line.strip_suffix(':')?;
    if body.is_empty() || body.chars().count() > 80 || body.starts_with(['-', '*', '•']) {
        return None;
    }
    let bucket = if cues.dont.iter().any(|c| contains_ci(body, c)) {
        Some(Bucket::Dont)
    } else if contains_ci(body, "edge") || cues.edge_cases.iter().any(|c| contains_ci(body, c)) {
        Some(Bucket::Edge)
    } else if contains_ci(body, "when") || cues.do_.iter().any(|c| contains_ci(body, c)) {
        Some(Bucket::Do)
    } else {
        None
    };
    Some(bucket)
}

fn bullet_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for b in ["- ", "* ", "• "] {
        if let Some(rest) = t.strip_prefix(b) {
            return Some(rest.trim());
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(r.trim());
        }
    }
    None
}

/// Sentences of a prose line: split after `.`, `!`, `?` followed by a space.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?') && text[i + 1..].starts_with(' ') {
            let before = &text[start..=i];
            if before.ends_with("e.g.") || before.ends_with("i.e.") {
                continue;
            }
            out.push(text[start..=i].trim());
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push(text[start..].trim());
    }
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

/// Shortens an item: one line, no trailing period, cut at a word boundary.
fn clean(item: &str) -> String {
    let flat = item.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.trim_end_matches(['.', ';', ':']).trim();
    let mut chars = flat.chars();
    let first: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    let flat = first + chars.as_str();
    if flat.chars().count() <= ITEM_MAX {
        return flat;
    }
    let cut: String = flat.chars().take(ITEM_MAX).collect();
    let cut = cut
        .rfind(' ')
        .map_or(cut.as_str(), |i| &cut[..i])
        .to_string();
    format!("{}…", cut.trim_end_matches([',', ';', ':']))
}

/// Whether a draft carries real rules (at least two of do / don't / edge cases), as the long
/// behavioral descriptions do; a lone "Use when" hint adds nothing the description lacks.
pub fn substantial(spec: &PolicySpec) -> bool {
    [
        spec.do_.is_empty(),
        spec.dont.is_empty(),
        spec.edge_cases.is_empty(),
    ]
    .iter()
    .filter(|empty| !**empty)
    .count()
        >= 2
}

/// Drafts a policy from a description; `None` when nothing is cued.
pub fn draft(description: &str, cues: &PolicyCues) -> Option<PolicySpec> {
    let mut spec = PolicySpec::default();
    let mut section: Option<Bucket> = None;
    let push = |spec: &mut PolicySpec, b: Bucket, text: &str| {
        let item = clean(text);
        if item.is_empty() {
            return;
        }
        let list = match b {
            Bucket::Do => &mut spec.do_,
            Bucket::Dont => &mut spec.dont,
            Bucket::Edge => &mut spec.edge_cases,
        };
        if !list.contains(&item) {
            list.push(item);
        }
    };
    for line in description.lines().map(str::trim) {
        if line.is_empty() {
            continue;
        }
        if let Some(bucket) = heading_bucket(line, cues) {
            section = bucket;
            continue;
        }
        if let (Some(text), Some(b)) = (bullet_text(line), section) {
            push(&mut spec, b, text);
            continue;
        }
        section = None;
        let text = bullet_text(line).unwrap_or(line);
        for sentence in sentences(text) {
            // Longest cue first, so "Do not" wins over "Do" style overlaps.
            let mut matched: Option<(usize, Bucket, &str)> = None;
            for (bucket, list) in [
                (Bucket::Dont, &cues.dont),
                (Bucket::Edge, &cues.edge_cases),
                (Bucket::Do, &cues.do_),
            ] {
                for cue in list {
                    if starts_with_ci(sentence, cue) && matched.is_none_or(|m| m.0 < cue.len()) {
                        matched = Some((cue.len(), bucket, cue));
                    }
                }
            }
            if let Some((len, bucket, cue)) = matched {
                // "Use when X" -> "X" under do, "Do not X" -> "X" under dont; other cues ("Use
                // after X") and edge cases only read right whole.
                let strip = match bucket {
                    Bucket::Dont => true,
                    Bucket::Do => cue.to_lowercase().ends_with("when"),
                    Bucket::Edge => false,
                };
                let text = if strip {
                    sentence[len..].trim_start_matches([',', ':', ' '])
                } else {
                    sentence
                };
                push(&mut spec, bucket, text);
            }
        }
    }
    (!spec.do_.is_empty() || !spec.dont.is_empty() || !spec.edge_cases.is_empty()).then_some(spec)
}

/// The draft as overlay TOML, for `toolreg policy --draft OP`.
pub fn as_overlay_toml(op: &str, spec: &PolicySpec) -> String {
    let list = |items: &[String]| {
        if items.is_empty() {
            return "[]".to_string();
        }
        let body: String = items
            .iter()
            .map(|i| format!("  {},\n", toml::Value::String(i.clone())))
            .collect();
        format!("[\n{body}]")
    };
    format!(
        "[ops.{}.policy]\ndo = {}\ndont = {}\nedge_cases = {}\n",
        toml::Value::String(op.to_string()),
        list(&spec.do_),
        list(&spec.dont),
        list(&spec.edge_cases)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESC: &str = "Create a task.\n\nCREATE TASKS WHEN:\n- The user explicitly asks to add a task.\n- Future human action is required.\n\nDO NOT CREATE WHEN:\n- The request is research you can do now.\n\nEdge cases:\n- If ambiguous, ask one question.\n\nNever invent due dates. Use when the user names a plan, link it.";

    #[test]
    fn headings_bullets_and_cued_sentences() {
        let p = draft(DESC, &PolicyCues::default()).unwrap();
        assert_eq!(
            p.do_,
            [
                "The user explicitly asks to add a task",
                "Future human action is required",
                "The user names a plan, link it"
            ]
        );
        assert_eq!(
            p.dont,
            ["The request is research you can do now", "Invent due dates"]
        );
        assert_eq!(p.edge_cases, ["If ambiguous, ask one question"]);
    }

    #[test]
    fn nothing_cued_gives_no_policy() {
        assert!(draft("List tasks. Filters apply.", &PolicyCues::default()).is_none());
    }

    #[test]
    fn cues_are_configurable() {
        let cues = PolicyCues {
            do_: vec!["Ideal for".into()],
            dont: vec![],
            edge_cases: vec![],
        };
        let p = draft("Ideal for quick lookups. Do not loop.", &cues).unwrap();
        // Only "... when" cues are stripped; others read right whole.
        assert_eq!(p.do_, ["Ideal for quick lookups"]);
        assert!(p.dont.is_empty());
    }

    #[test]
    fn toml_round_trips_into_the_overlay_shape() {
        let p = draft(DESC, &PolicyCues::default()).unwrap();
        let text = as_overlay_toml("onto.task.create", &p);
        assert!(text.starts_with("[ops.\"onto.task.create\".policy]\n"));
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        let policy = &parsed["ops"]["onto.task.create"]["policy"];
        assert_eq!(policy["dont"].as_array().unwrap().len(), 2);
    }
}
