//! Tool names as words, and the lexicon that says which words are verbs, fillers or modifiers.

use serde::Deserialize;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// A tool name cut into a namespace (from `math.add`, `github/create_issue` or
/// `github__create_issue`) and lowercase words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameWords {
    pub namespace: Option<String>,
    pub words: Vec<String>,
}

/// Splits any name style: snake, kebab, camel, Pascal, dotted, spaced. Acronyms stay whole
/// (`getPM2.5Level` -> `get pm2 5 level`), a lone capital before a word joins it
/// (`ListOAuth2Tokens` -> `list oauth2 tokens`), digits stay on the word they follow.
pub fn split_name(name: &str) -> NameWords {
    let (namespace, rest) = namespace_of(name);
    NameWords {
        namespace,
        words: split_words(rest),
    }
}

/// A leading namespace: `ns.rest`, `ns/rest` or `ns__rest` where `ns` is a plain lowercase word
/// (so `getPM2.5Level` has none).
fn namespace_of(name: &str) -> (Option<String>, &str) {
    let cut = [("__", 2), (".", 1), ("/", 1)]
        .iter()
        .filter_map(|(sep, len)| name.find(sep).map(|i| (i, *len)))
        .min();
    if let Some((i, len)) = cut {
        let ns = &name[..i];
        let rest = &name[i + len..];
        let plain = !ns.is_empty()
            && ns.starts_with(|c: char| c.is_ascii_lowercase())
            && ns
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if plain && rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return (Some(ns.replace('-', "_")), rest);
        }
    }
    (None, name)
}

#[derive(Clone, Copy, PartialEq)]
enum Class {
    Lower,
    Upper,
    Digit,
}

fn class(c: char) -> Class {
    if c.is_ascii_digit() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else {
        Class::Lower
    }
}

/// Lowercase words of a name without its namespace.
pub fn split_words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for run in name.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = run.chars().collect();
        let mut pieces: Vec<String> = Vec::new();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (class(chars[i - 1]), class(chars[i]));
            let next_lower = chars.get(i + 1).is_some_and(|c| class(*c) == Class::Lower);
            let boundary = match (prev, cur) {
                (Class::Lower, Class::Upper) | (Class::Digit, Class::Upper) => true,
                // The last capital of an acronym starts the next word: `PMLevel` -> PM Level.
                (Class::Upper, Class::Upper) => next_lower,
                _ => false,
            };
            if boundary {
                pieces.push(chars[start..i].iter().collect());
                start = i;
            }
        }
        if start < chars.len() {
            pieces.push(chars[start..].iter().collect());
        }
        // A lone capital (but `A`) before a capitalized word belongs to it: `OAuth`, `XPath`.
        let mut i = 0;
        while i < pieces.len() {
            let p = &pieces[i];
            let lone = p.chars().count() == 1 && p.chars().all(char::is_uppercase) && p != "A";
            if lone && i + 1 < pieces.len() {
                let merged = format!("{p}{}", pieces[i + 1]);
                pieces.splice(i..i + 2, [merged]);
            }
            i += 1;
        }
        words.extend(pieces.into_iter().map(|p| p.to_lowercase()));
    }
    words.retain(|w| !w.is_empty());
    words
}

/// The lexicon (`lexicon.toml`, compiled in).
#[derive(Debug)]
pub struct Lexicon {
    pub read: BTreeSet<String>,
    pub write: BTreeSet<String>,
    pub destructive: BTreeSet<String>,
    pub verb_joiners: BTreeSet<String>,
    pub fillers: BTreeSet<String>,
    pub stop: BTreeSet<String>,
    pub modifiers: BTreeSet<String>,
    pub keep_plural: BTreeSet<String>,
    pub server_noise: BTreeSet<String>,
    pub never_nouns: BTreeSet<String>,
    pub modifier_nouns: BTreeSet<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLexicon {
    verbs: RawVerbs,
    words: RawWords,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerbs {
    read: String,
    write: String,
    destructive: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWords {
    verb_joiners: String,
    fillers: String,
    stop: String,
    modifiers: String,
    keep_plural: String,
    server_noise: String,
    never_nouns: String,
    modifier_nouns: String,
}

fn set(s: &str) -> BTreeSet<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

impl Lexicon {
    /// The built-in lexicon.
    pub fn get() -> &'static Lexicon {
        static LEXICON: OnceLock<Lexicon> = OnceLock::new();
        LEXICON.get_or_init(|| {
            let raw: RawLexicon = toml::from_str(include_str!("lexicon.toml"))
                .expect("the built-in lexicon is valid TOML (a unit test parses it)");
            Lexicon {
                read: set(&raw.verbs.read),
                write: set(&raw.verbs.write),
                destructive: set(&raw.verbs.destructive),
                verb_joiners: set(&raw.words.verb_joiners),
                fillers: set(&raw.words.fillers),
                stop: set(&raw.words.stop),
                modifiers: set(&raw.words.modifiers),
                keep_plural: set(&raw.words.keep_plural),
                server_noise: set(&raw.words.server_noise),
                never_nouns: set(&raw.words.never_nouns),
                modifier_nouns: set(&raw.words.modifier_nouns),
            }
        })
    }

    pub fn is_verb(&self, w: &str) -> bool {
        self.read.contains(w) || self.write.contains(w) || self.destructive.contains(w)
    }

    /// A word that never names a group or an entity: a verb that is never a noun (`get`, not
    /// `comment`), a modifier (quantifiers and adjectives: `all`, `top`, `random`, `latest`), a
    /// stop word or a filler.
    pub fn is_not_noun(&self, w: &str) -> bool {
        self.never_nouns.contains(w)
            || (self.modifiers.contains(w) && !self.modifier_nouns.contains(w))
            || self.stop.contains(w)
            || self.fillers.contains(w)
    }

    /// A word that qualifies a noun: a listed modifier, or a participle (`linked`, `annotated`).
    pub fn is_modifier(&self, w: &str) -> bool {
        self.modifiers.contains(w) || (w.len() > 4 && w.ends_with("ed") && !w.ends_with("eed"))
    }

    /// English singular of a noun (a maintained inflection crate, plus the lexicon's exceptions).
    pub fn singular(&self, w: &str) -> String {
        if self.keep_plural.contains(w) || !w.chars().all(|c| c.is_ascii_alphabetic()) {
            return w.to_string();
        }
        inflected(w, Number::Singular)
    }

    /// English plural of a singular noun.
    pub fn plural(&self, w: &str) -> String {
        if self.keep_plural.contains(w) || !w.chars().all(|c| c.is_ascii_alphabetic()) {
            return w.to_string();
        }
        inflected(w, Number::Plural)
    }
}

#[derive(Clone, Copy)]
enum Number {
    Singular,
    Plural,
}

/// The most words whose inflections a thread keeps, in each number, and the longest kept (in
/// bytes); any other word is inflected each time it is asked for. A catalog's names hold a few
/// thousand short words; a hostile one keeps at most a few MB here.
const KEPT_INFLECTIONS: usize = 50_000;
const KEPT_WORD_MAX: usize = 48;

/// `w` in `number`, by pluralizer, kept per thread. pluralizer builds its rules and tries dozens
/// of patterns on every call, behind one process-wide lock: at ToolSDK's 8,010 tools (no
/// overlay, so every name is inferred) that was 3% of a one-tool rebuild's CPU, all of it on
/// the compile's one serial thread, for words asked for again and again.
fn inflected(w: &str, number: Number) -> String {
    thread_local!(static KEPT: std::cell::RefCell<[std::collections::HashMap<String, String>; 2]> =
        Default::default());
    KEPT.with(|kept| {
        // The list a number's answers are kept in, and the count pluralizer takes for it.
        let (n, count) = match number {
            Number::Singular => (0, 1),
            Number::Plural => (1, 2),
        };
        if let Some(v) = kept.borrow()[n].get(w) {
            return v.clone();
        }
        let v = pluralizer::pluralize(w, count, false);
        let mut kept = kept.borrow_mut();
        if kept[n].len() < KEPT_INFLECTIONS && w.len() <= KEPT_WORD_MAX {
            kept[n].insert(w.to_string(), v.clone());
        }
        v
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: &str) -> Vec<String> {
        split_name(n).words
    }

    /// A kept inflection is pluralizer's, asked once or again, in either number and either
    /// order; the lexicon's exceptions and words with digits stay as they are.
    #[test]
    fn kept_inflections_are_pluralizers() {
        let lx = Lexicon::get();
        let words = [
            "tasks", "task", "people", "person", "indices", "index", "status", "boxes",
        ];
        for round in 0..2 {
            for w in words {
                assert_eq!(
                    lx.singular(w),
                    pluralizer::pluralize(w, 1, false),
                    "{w} {round}"
                );
                assert_eq!(
                    lx.plural(w),
                    pluralizer::pluralize(w, 2, false),
                    "{w} {round}"
                );
            }
        }
        assert_eq!(lx.singular("tasks"), "task");
        assert_eq!(lx.plural("person"), "people");
        assert_eq!(lx.singular("v2s"), "v2s");
        let long = "antidisestablishmentarianisms".repeat(2);
        assert_eq!(lx.singular(&long), pluralizer::pluralize(&long, 1, false));
        let kept = lx
            .keep_plural
            .iter()
            .next()
            .expect("the lexicon keeps some plurals");
        assert_eq!(&lx.singular(kept), kept);
    }

    #[test]
    fn every_name_style_splits_into_words() {
        assert_eq!(words("list_onto_tasks"), ["list", "onto", "tasks"]);
        assert_eq!(words("listOntoTasks"), ["list", "onto", "tasks"]);
        assert_eq!(words("ListOntoTasks"), ["list", "onto", "tasks"]);
        assert_eq!(words("list-onto-tasks"), ["list", "onto", "tasks"]);
        assert_eq!(words("Summarize Detection"), ["summarize", "detection"]);
        assert_eq!(words("getPM2.5Level"), ["get", "pm2", "5", "level"]);
        assert_eq!(words("ListOAuth2Tokens"), ["list", "oauth2", "tokens"]);
        assert_eq!(words("getHTTPResponse"), ["get", "http", "response"]);
        assert_eq!(words("issue_create"), ["issue", "create"]);
        assert_eq!(words("create_task_v2"), ["create", "task", "v2"]);
    }

    #[test]
    fn namespaces_come_off_the_front() {
        let n = split_name("math.add");
        assert_eq!(n.namespace.as_deref(), Some("math"));
        assert_eq!(n.words, ["add"]);
        let n = split_name("github__create_issue");
        assert_eq!(n.namespace.as_deref(), Some("github"));
        assert_eq!(n.words, ["create", "issue"]);
        assert_eq!(split_name("getPM2.5Level").namespace, None);
        assert_eq!(split_name("web_search").namespace, None);
    }

    #[test]
    fn the_lexicon_parses_and_inflects() {
        let lx = Lexicon::get();
        assert!(lx.is_verb("list") && lx.is_verb("delete") && !lx.is_verb("task"));
        assert!(lx.read.contains("get") && lx.destructive.contains("delete"));
        assert_eq!(lx.singular("entities"), "entity");
        assert_eq!(lx.singular("statuses"), "status");
        assert_eq!(lx.singular("data"), "data");
        assert_eq!(
            lx.plural("pull_request".rsplit('_').next().unwrap()),
            "requests"
        );
        assert!(lx.is_modifier("linked") && lx.is_modifier("multiple") && !lx.is_modifier("need"));
    }
}
