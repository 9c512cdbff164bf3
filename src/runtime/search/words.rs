//! Words: how queries and op texts become search terms. Identifiers split (snake, camel,
//! dots), lowercase, stop-words out, light symmetric stemming; everyday wording from
//! `phrasing.json` (kept as data); the one-deletion neighbours typo tolerance looks up.

use serde::Deserialize;
use std::collections::BTreeMap;

pub(super) const STOP_WORDS: &str = "a an the of to for in on at by with from and or but my me i we our us you your \
    this that these those is are was were be been being it its their there here do does did have has had \
    what which who whom how can could should would will shall may might please so as into than then \
    some any about up out if just also very really want need like let";

/// Everyday wording (phrasing.json): generic verbs, abbreviations and multi-word phrases ->
/// the words tool catalogs use. Kept as data; catalog words belong in the overlay.
#[derive(Deserialize)]
pub(super) struct Phrasing {
    pub(super) synonyms: BTreeMap<String, String>,
    pub(super) abbreviations: BTreeMap<String, String>,
    pub(super) phrases: BTreeMap<String, String>,
}

pub(super) fn phrasing() -> &'static Phrasing {
    static DATA: std::sync::OnceLock<Phrasing> = std::sync::OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("../phrasing.json")).expect("phrasing.json is valid")
    })
}

/// Lowercase words of a text as typed (no stop-words removed, no stemming).
pub(super) fn raw_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Lowercase, stemmed words of a text; identifiers split on `_`, `.`, `-` and camel case.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
        .into_iter()
        .filter(|w| !is_stop(w))
        .map(|w| stem(&w))
        .collect()
}

/// Typed words shorter than this are not corrected: they have too many neighbours (at 4 the
/// clean MetaTool dev set lost recall@1; 5 keeps it and recovers most misspellings).
pub(super) const MIN_TYPO_LEN: usize = 5;

/// Words (stemmed) that take part in typo tolerance.
pub(super) fn typo_candidate(w: &str) -> bool {
    w.chars().count() >= 4 && w.chars().all(char::is_alphabetic)
}

/// The word with each one letter deleted.
pub(super) fn one_deletions(w: &str) -> Vec<String> {
    let chars: Vec<char> = w.chars().collect();
    (0..chars.len())
        .map(|i| chars[..i].iter().chain(&chars[i + 1..]).collect())
        .collect()
}

pub(super) fn is_stop(w: &str) -> bool {
    STOP_WORDS.split_whitespace().any(|s| s == w)
}

/// Light, symmetric stemming: plurals, -ing, -ed, and a final `e` (so update / updated /
/// updating meet).
pub fn stem(w: &str) -> String {
    let mut s = w.to_string();
    if s.len() > 4 && s.ends_with("ies") {
        s.truncate(s.len() - 3);
        s.push('y');
    } else if s.ends_with("sses")
        || s.ends_with("xes")
        || s.ends_with("ches")
        || s.ends_with("shes")
    {
        s.truncate(s.len() - 2);
    } else if s.len() > 3
        && s.ends_with('s')
        && !s.ends_with("ss")
        && !s.ends_with("us")
        && !s.ends_with("is")
    {
        s.truncate(s.len() - 1);
    }
    if s.len() > 5 && s.ends_with("ing") {
        s.truncate(s.len() - 3);
    } else if s.len() > 4 && s.ends_with("ed") {
        s.truncate(s.len() - 2);
    }
    if s.len() > 3 && s.ends_with('e') {
        s.truncate(s.len() - 1);
    }
    s
}
