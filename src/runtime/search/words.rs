//! Words: how queries and op texts become search terms. Identifiers split (snake, camel,
//! dots), lowercase, stop-words out, light symmetric stemming; everyday wording from
//! `phrasing.json` (kept as data); the one-deletion neighbours typo tolerance looks up.

use serde::Deserialize;
use std::collections::BTreeMap;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

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
    /// An everyday word of a common topic -> the words catalogs name the topic by: searched
    /// as a synonym is.
    #[serde(default)]
    pub(super) topics: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) framing: Vec<String>,
}

/// The built-in phrasing data (src/runtime/phrasing.json), as compiled in.
const PHRASING: &str = include_str!("../phrasing.json");

pub(super) fn phrasing() -> &'static Phrasing {
    static DATA: std::sync::OnceLock<Phrasing> = std::sync::OnceLock::new();
    DATA.get_or_init(|| serde_json::from_str(PHRASING).expect("phrasing.json is valid"))
}

/// A digest of the built-in phrasing data: `search.json` names the data it was built with, so
/// an index built before the data changed (by a build of the same toolreg version) is not read.
pub(super) fn phrasing_digest() -> &'static str {
    static DIGEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIGEST.get_or_init(|| crate::model::canonical::short_digest(blake3::hash(PHRASING.as_bytes())))
}

/// The most frequent English words, most frequent first (src/runtime/common_words.txt).
const COMMON_WORDS: &str = include_str!("../common_words.txt");

/// How far the commonest English word's weight is cut (to 0.6 of a word's weight), falling off
/// with the logarithm of its rank to nothing at the list's last word: "new" weighs 0.74, "time"
/// 0.77, "now" 0.79, "weather" 0.89, "anniversary" 0.96, a word off the list 1.
/// Chosen on MetaTool's dev split (recall@1 .442 -> .463, @5 .692 -> .702; 0.3 to 0.8 and
/// lists of 1,000 to 30,000 words all gained 1.5 to 2 points of recall@1 there).
const COMMONNESS_CUT: f64 = 0.4;

/// What a query word weighs for being an everyday English word: 1 for a word outside the
/// list, down to `1 - COMMONNESS_CUT` for the commonest. A catalog's inverse document
/// frequency says how rare a word is among its ops, not how much a person meant by it: "now"
/// names one tool of MetaTool's (so it weighed the most), yet "the weather right now" asks for
/// the weather. The list's words are tokenized as queries are, on first use.
pub(super) fn commonness(term: &str) -> f64 {
    type Ranks = (foldhash::HashMap<String, u32>, u32);
    static RANKS: std::sync::OnceLock<Ranks> = std::sync::OnceLock::new();
    let (ranks, last) = RANKS.get_or_init(|| {
        let mut ranks = foldhash::HashMap::default();
        let mut last = 1;
        let words = COMMON_WORDS.lines().filter(|l| !l.starts_with('#'));
        for (rank, word) in (1u32..).zip(words) {
            last = rank;
            // A word's stem takes the rank of its commonest form ("times" is "time").
            if !is_stop(word) {
                ranks.entry(stem(word)).or_insert(rank);
            }
        }
        (ranks, last.max(2))
    });
    match ranks.get(term) {
        Some(&rank) => 1.0 - COMMONNESS_CUT * (1.0 - f64::from(rank).ln() / f64::from(*last).ln()),
        None => 1.0,
    }
}

/// The query without the words that only frame a request (phrasing.json `framing`: "give me",
/// "tell me", "help me"): such a verb is how the request is said, not what is asked, and over a
/// catalog with a `give` or `help` op it would outrank what was asked. Unchanged when no
/// framing occurs, or when nothing but framing and stop-words would be left.
pub(super) fn without_framing(query: &str) -> std::borrow::Cow<'_, str> {
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // Framing words are ASCII, so a word of the query matches one ignoring ASCII case.
    let mut cut = vec![false; words.len()];
    for phrase in framing() {
        for (i, w) in words.windows(phrase.len()).enumerate() {
            if w.iter().zip(phrase).all(|(a, b)| a.eq_ignore_ascii_case(b)) {
                for (j, b) in phrase.iter().enumerate() {
                    cut[i + j] |= !is_stop(b);
                }
            }
        }
    }
    let asked = || {
        words
            .iter()
            .zip(&cut)
            .any(|(w, c)| !c && !is_stop(&w.to_lowercase()))
    };
    if !cut.contains(&true) || !asked() {
        return std::borrow::Cow::Borrowed(query);
    }
    // Each cut word becomes a space; `words` are slices of `query`, so their offsets are exact.
    let mut out = String::with_capacity(query.len());
    let mut from = 0;
    for (w, _) in words.iter().zip(&cut).filter(|(_, c)| **c) {
        let start = w.as_ptr() as usize - query.as_ptr() as usize;
        out.push_str(&query[from..start]);
        out.push(' ');
        from = start + w.len();
    }
    out.push_str(&query[from..]);
    std::borrow::Cow::Owned(out)
}

/// phrasing.json's `framing` phrases, each as its words (split once).
fn framing() -> &'static [Vec<String>] {
    static WORDS: std::sync::OnceLock<Vec<Vec<String>>> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        phrasing()
            .framing
            .iter()
            .map(|p| p.split_whitespace().map(str::to_lowercase).collect())
            .filter(|words: &Vec<String>| !words.is_empty())
            .collect()
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
/// Any script: accents are folded (`café` and `cafe` meet), and Chinese, Japanese and Korean
/// text, written without spaces, becomes overlapping two-character words (`任务列表` ->
/// `任务`, `务列`, `列表`), so a query matches inside a longer run. An English clitic after an
/// apostrophe is dropped (`task's`, `we'll`: `task`, `we`), with the auxiliary of an `n't`
/// (`don't`, `isn't`): alone, an `s` or `t` matched every possessive in the catalog.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut words: Vec<(String, bool)> = Vec::new();
    let mut cur = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let mut prev_lower = false;
    // The word being read follows an apostrophe that followed a letter or digit.
    let mut after_apostrophe = false;
    let mut prev_alnum = false;
    let flush_cjk = |cjk: &mut Vec<char>, words: &mut Vec<(String, bool)>| {
        match cjk.len() {
            0 => {}
            1 => words.push((cjk[0].to_string(), true)),
            _ => words.extend(cjk.windows(2).map(|w| (w.iter().collect(), true))),
        }
        cjk.clear();
    };
    let end_word = |cur: &mut String, words: &mut Vec<(String, bool)>, clitic_may_follow: bool| {
        if !cur.is_empty() {
            if !(clitic_may_follow && is_clitic(cur)) {
                // A copy sized to the word; `cur` keeps its buffer for the next one.
                words.push((cur.clone(), false));
            } else if cur == "t" && words.last().is_some_and(|(w, _)| w.ends_with('n')) {
                // `don't`, `isn't`, `won't`: the auxiliary goes with its `n't`, as stop words.
                words.pop();
            }
            cur.clear();
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            end_word(&mut cur, &mut words, after_apostrophe);
            (prev_lower, prev_alnum, after_apostrophe) = (false, false, false);
            cjk.push(c);
            continue;
        }
        flush_cjk(&mut cjk, &mut words);
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                end_word(&mut cur, &mut words, after_apostrophe);
                after_apostrophe = false;
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            prev_alnum = true;
            push_folded(&mut cur, c);
        } else if is_combining_mark(c) {
            // A combining accent written apart from its letter: folded away like a composed one.
        } else {
            end_word(&mut cur, &mut words, after_apostrophe);
            after_apostrophe = prev_alnum && matches!(c, '\'' | '\u{2019}');
            (prev_lower, prev_alnum) = (false, false);
        }
    }
    flush_cjk(&mut cjk, &mut words);
    end_word(&mut cur, &mut words, after_apostrophe);
    words
        .into_iter()
        .filter(|(w, cjk)| *cjk || !is_stop(w))
        .map(|(w, cjk)| if cjk { w } else { stem_owned(w) })
        .collect()
}

/// What English writes after an apostrophe (`'s`, `n't`, `'re`, `'ve`, `'ll`, `'d`, `'m`).
fn is_clitic(w: &str) -> bool {
    matches!(w, "s" | "t" | "re" | "ve" | "ll" | "d" | "m")
}

/// Appends `c` lowercased, without its accents (NFD, combining marks dropped).
fn push_folded(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
        return;
    }
    for l in c.to_lowercase() {
        out.extend(std::iter::once(l).nfd().filter(|d| !is_combining_mark(*d)));
    }
}

/// Han ideographs, kana and Hangul: scripts written without spaces between words.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x1100..=0x11FF    // Hangul jamo
        | 0x3130..=0x318F    // Hangul compatibility jamo
        | 0x20000..=0x2A6DF) // CJK extension B
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
    // foldhash: the set is asked about every word of every op when the index is built.
    static SET: std::sync::OnceLock<foldhash::HashSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.split_whitespace().collect())
        .contains(w)
}

/// Light, symmetric stemming: plurals, -ing, -ed, and a final `e` (so update / updated /
/// updating meet).
pub fn stem(w: &str) -> String {
    stem_owned(w.to_string())
}

/// [`stem`] of a word the caller owns, in its own buffer (tokenizing stems every word).
fn stem_owned(mut s: String) -> String {
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

/// The clauses of a request that asks for several things in turn ("find the paper, then save
/// it to notes.md"), each as a slice of `query`: cut before `then`, and before a sentence (`.`,
/// `?`, `!` or `;` and a space), an `and` or a comma that a verb follows (`starts` says which
/// words are verbs: the catalog's actions and the everyday words for them; a verb that ends its
/// phrase is a noun of a list, not a step). One
/// clause (the query itself) when nothing cuts it; at most [`MAX_CLAUSES`].
pub(super) fn clauses<'q>(query: &'q str, starts: &dyn Fn(&str) -> bool) -> Vec<&'q str> {
    // Each word's byte range (letters and digits; an apostrophe inside a word keeps it whole).
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in query.char_indices() {
        let inside = c.is_alphanumeric() || (c == '\'' && start.is_some());
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, query.len()));
    }
    let lower: Vec<String> = words
        .iter()
        .map(|&(a, b)| query[a..b].to_lowercase())
        .collect();
    // Whether word k is a verb, asked once a word and only where a cut may fall.
    let mut verbs: Vec<Option<bool>> = vec![None; words.len()];
    let mut is_verb = |k: usize| *verbs[k].get_or_insert_with(|| starts(&lower[k]));
    // A verb starts a step only when something follows it in its phrase: one that ends the
    // phrase (a comma, a stop, `and`, `or`, the request's end) is a noun in a list ("puzzles,
    // sudoku, and brain teasers", "a flight and hotel."), however a catalog names its actions.
    let mut verb = |k: usize| {
        is_verb(k)
            && k + 1 < words.len()
            && !query[words[k].1..words[k + 1].0].contains([',', '.', ';', '?', '!', ':'])
            && !matches!(lower[k + 1].as_str(), "and" | "or")
    };
    let mut cuts: Vec<usize> = vec![0];
    for k in 1..words.len() {
        let gap = &query[words[k - 1].1..words[k].0];
        // A new sentence is a step when it starts with a verb ("Save it to ..."), not when it
        // asks ("Can you help?").
        let sentence_end =
            gap.contains(char::is_whitespace) && gap.contains(['.', '?', '!', ';']) && verb(k);
        let then = lower[k] == "then" && lower[k - 1] != "and";
        let and_verb =
            lower[k] == "and" && k + 1 < words.len() && (lower[k + 1] == "then" || verb(k + 1));
        let comma_verb = gap.contains(',') && verb(k);
        if sentence_end || then || and_verb || comma_verb {
            cuts.push(k);
        }
    }
    cuts.push(words.len());
    let clauses: Vec<&str> = cuts
        .windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| &query[words[w[0]].0..words[w[1] - 1].1])
        .collect();
    if clauses.len() < 2 || clauses.len() > MAX_CLAUSES {
        return vec![query];
    }
    clauses
}

/// More clauses than this is a list or a document pasted in, not steps of one request.
pub(super) const MAX_CLAUSES: usize = 5;

#[cfg(test)]
mod tests {
    use super::{clauses, tokenize, without_framing};

    /// A request of several steps is cut where a step starts (`then`; a sentence, `and` or a
    /// comma before a verb), and nowhere else: not at a question, a path, a decimal, or an
    /// `and` between two things.
    #[test]
    fn a_request_is_cut_into_its_steps() {
        let verbs = ["get", "post", "save", "write", "find", "create", "list"];
        let verb = |w: &str| verbs.contains(&w);
        let cut = |q: &'static str| clauses(q, &verb);
        assert_eq!(
            cut("Get the forecast for Paris, then post it to my team"),
            ["Get the forecast for Paris", "then post it to my team"]
        );
        assert_eq!(
            cut("Find papers on agents and save them to /root/notes.md"),
            ["Find papers on agents", "and save them to /root/notes.md"]
        );
        assert_eq!(
            cut("Read report.pdf. Write a summary of 2.5 pages; list the authors"),
            [
                "Read report.pdf",
                "Write a summary of 2.5 pages",
                "list the authors"
            ]
        );
        assert_eq!(
            cut("First find the flights, then book one and then email me"),
            [
                "First find the flights",
                "then book one",
                "and then email me"
            ]
        );
        // One step each.
        for q in [
            "I need ASCII art for my game. Can you provide some designs?",
            "get the weather and air quality of Paris",
            "save report.md to /root/docs/final.v2.md",
            // A catalog's action named in a list of things is a noun there.
            "I like crosswords, jigsaw puzzles, list, and brain teasers",
            "help me with a flight and post. Can you?",
            "the weather, post or news of Paris",
            "",
            "then",
        ] {
            assert_eq!(cut(q), [q], "{q}");
        }
        // A pasted list is not a plan of steps.
        let many = "get a. get b. get c. get d. get e. get f.";
        assert_eq!(cut(many), [many]);
    }

    #[test]
    fn clitics_after_an_apostrophe_are_dropped() {
        assert_eq!(tokenize("what's left"), ["left"]);
        assert_eq!(tokenize("the task\u{2019}s state"), ["task", "stat"]);
        assert_eq!(tokenize("don't, we'll, they've, I'm, won't"), ["they"]);
        assert_eq!(tokenize("it doesn\u{2019}t sync"), ["sync"]);
        // Not after a word: kept as typed. A letter that is not a clitic is kept too.
        assert_eq!(
            tokenize("'s' key, rock 'n' roll"),
            ["s", "key", "rock", "n", "roll"]
        );
        assert_eq!(
            tokenize("O'Brien l'\u{e9}cole"),
            ["o", "brien", "l", "ecol"]
        );
        // Identifiers and CJK are read as before.
        assert_eq!(
            tokenize("listTasks s3_bucket"),
            ["list", "task", "s3", "bucket"]
        );
        assert_eq!(tokenize("任务列表"), ["任务", "务列", "列表"]);
    }

    /// The commonest words weigh the least, falling with their rank; a word off the list (or a
    /// catalog's own) weighs fully. Each list word is tokenized as a query's word is: a stop
    /// word is dropped, anything else is one word.
    #[test]
    fn everyday_words_weigh_less_the_commoner_they_are() {
        use super::{commonness, COMMONNESS_CUT, COMMON_WORDS};
        let w = |word: &str| commonness(&tokenize(word)[0]);
        assert!(w("time") < w("weather") && w("weather") < w("anniversary"));
        assert!(w("anniversary") < 1.0);
        assert_eq!(w("thermostat"), 1.0);
        assert_eq!(w("kubernetes"), 1.0);
        for word in COMMON_WORDS.lines().filter(|l| !l.starts_with('#')) {
            let tokens = tokenize(word);
            assert!(tokens.len() <= 1, "{word}: {tokens:?}");
            if let Some(t) = tokens.first() {
                let weight = commonness(t);
                assert!(
                    (1.0 - COMMONNESS_CUT..=1.0).contains(&weight),
                    "{word}: {weight}"
                );
            }
        }
    }

    #[test]
    fn framing_words_become_spaces_and_the_rest_is_kept_byte_for_byte() {
        assert_eq!(
            without_framing("Tell me, café-wise: the forecast"),
            "  me, café-wise: the forecast"
        );
        assert_eq!(
            without_framing("über Wetter? GIVE ME it"),
            "über Wetter?   ME it"
        );
        // Nothing else asked, or no framing: the query as it was.
        assert_eq!(without_framing("tell me"), "tell me");
        assert_eq!(without_framing("tell a joke"), "tell a joke");
        assert!(matches!(
            without_framing("tell a joke"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
