//! Small text helpers shared by the compiler and the help pages.

/// The first sentence of a text: its first paragraph flattened to one line (markdown heading
/// marks removed), up to the first `.`, `!` or `?` followed by a space or the end. "e.g." and
/// "i.e." do not end a sentence.
pub fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let first_para = text.split("\n\n").next().unwrap_or(text);
    let flat: String = first_para
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    for (i, _) in flat.match_indices(['.', '!', '?']) {
        let next = flat[i + 1..].chars().next();
        if next.is_none() || next.is_some_and(char::is_whitespace) {
            let before = &flat[..i + 1];
            if before.ends_with("e.g.") || before.ends_with("i.e.") {
                continue;
            }
            return flat[..i + 1].trim().to_string();
        }
    }
    flat.trim().to_string()
}

/// `s` cut to at most `max` characters at a word boundary, with `…` when cut.
pub fn truncate_words(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => &cut[..i],
        _ => &cut[..],
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ', '.']))
}

/// The longest prefix of `s` with at most `max` characters (the whole text when it is shorter).
/// Input from a caller is cut with this before any work that grows with its length.
pub fn clip_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Longest op name, help path or tool name the runtime reads from a caller; longer input is
/// answered as unknown at once (a 150 KB `op` used to drive did-you-mean ranking into gigabytes).
pub const MAX_NAME_INPUT_CHARS: usize = 512;

/// Whether a name from a caller (op, help path) is longer than [`MAX_NAME_INPUT_CHARS`]: such a
/// name is unknown without further work. The byte length is checked first, so a short name
/// costs nothing.
pub fn over_name_limit(name: &str) -> bool {
    name.len() > MAX_NAME_INPUT_CHARS && name.chars().nth(MAX_NAME_INPUT_CHARS).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences() {
        assert_eq!(first_sentence("List tasks. Filters apply."), "List tasks.");
        assert_eq!(
            first_sentence("Search docs, e.g. specs. More."),
            "Search docs, e.g. specs."
        );
        assert_eq!(
            first_sentence("## Title\nFirst line\ncontinues.\n\nSecond para."),
            "Title First line continues."
        );
        assert_eq!(
            first_sentence("Version 2.5 is fine. Next."),
            "Version 2.5 is fine."
        );
        assert_eq!(first_sentence("No period"), "No period");
    }

    #[test]
    fn truncation() {
        assert_eq!(truncate_words("short", 10), "short");
        assert_eq!(truncate_words("one two three four", 12), "one two…");
        assert!(truncate_words(&"word ".repeat(100), 200).ends_with('…'));
    }
}
