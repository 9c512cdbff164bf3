//! Token counts, exact as tiktoken counts them (GitHub's bpe-openai: o200k_base and
//! cl100k_base), for the size report and the help pages' budgets: each text is cut where both
//! encodings' pre-tokenizers must cut, so a part counted once (a key, a repeated description)
//! costs a hash after, and an incremental build takes what an earlier one counted from the memo.

use crate::compiler::bounded::Bounded;
use crate::compiler::memo::Memo;
use std::cell::RefCell;
use std::collections::HashMap;

/// Token counters for the two encodings (bpe-openai loads each vocabulary once per process).
pub struct Tokens;

impl Tokens {
    pub fn get() -> &'static Tokens {
        &Tokens
    }

    pub fn o200k(&self, text: &str) -> usize {
        thread_local!(static COUNTS: RefCell<PieceCounts> =
            RefCell::new(PieceCounts::new(&O200K_SPLIT)));
        COUNTS.with(|p| {
            p.borrow_mut()
                .count(bpe_openai::o200k_base(), &O200K_SPLIT, text)
        })
    }

    pub fn cl100k(&self, text: &str) -> usize {
        thread_local!(static COUNTS: RefCell<PieceCounts> =
            RefCell::new(PieceCounts::new(&CL100K_SPLIT)));
        COUNTS.with(|p| {
            p.borrow_mut()
                .count(bpe_openai::cl100k_base(), &CL100K_SPLIT, text)
        })
    }

    /// `text`'s tokens in o200k, else cl100k.
    fn count(&self, text: &str, o200k: bool) -> usize {
        if o200k {
            self.o200k(text)
        } else {
            self.cl100k(text)
        }
    }
}

/// Token counts remembered per thread and encoding, at two grains. A text is cut where both
/// encodings' pre-tokenizers must cut too (see [`cuttable`]: in compact JSON, before nearly
/// every key and string value), so its count is the sum of its parts'; a part seen before (a
/// key, an argument's description repeated by every op that shares the argument) costs a hash.
/// A new part is cut into pre-tokens, each encoded on its own, and those are remembered too.
/// Counts stay exact: `tests/token_counts.rs` compares every report text of the repo's catalogs
/// with tiktoken.
struct PieceCounts {
    parts: Bounded<usize>,
    pieces: Bounded<usize>,
    /// This thread's cache for the encoding's pre-tokenizer (see [`Splitter`]).
    cache: regex_automata::meta::Cache,
}

impl PieceCounts {
    fn new(split: &Splitter) -> PieceCounts {
        PieceCounts {
            parts: Bounded::new(16 << 10, 32 << 20),
            pieces: Bounded::new(48, 8 << 20),
            cache: split.pattern.create_cache(),
        }
    }

    fn count(&mut self, tokenizer: &bpe_openai::Tokenizer, split: &Splitter, text: &str) -> usize {
        let PieceCounts {
            parts: counted,
            pieces,
            cache,
        } = self;
        parts(text)
            .map(|part| {
                counted.get_or(part, || {
                    let part = tokenizer.normalize(part);
                    let mut n = 0;
                    split.each(cache, part.as_str(), |piece| {
                        n += pieces.get_or(piece, || tokenizer.bpe.count(piece.as_bytes()));
                    });
                    n
                })
            })
            .sum()
    }
}

/// An encoding's pre-tokenizer, as bpe-openai 0.3.2 builds it from tiktoken's patterns (the
/// look-ahead `\s+(?!\S)` written as a second pattern, `\s+\s`, whose last character is
/// dropped from the match), searched with a cache each thread holds. bpe-openai's own splitter
/// searches one regex from every thread, taking a cache from the regex's pool and putting it
/// back for each pre-token, through a lock for every thread but the first: 1.6% of a full build
/// at 10,000 tools. `tokenizer_splits_as_bpe_openai_does` compares the two.
struct Splitter {
    pattern: regex_automata::meta::Regex,
}

/// Which of the three patterns ends with a look-ahead character.
const LOOKAHEAD: [bool; 3] = [false, true, false];

static O200K_SPLIT: std::sync::LazyLock<Splitter> = std::sync::LazyLock::new(|| {
    Splitter::new(
        &[
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "\\p{N}{1,3}",
            " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
            "\\s*[\\r\\n]+",
            "\\s+$",
        ]
        .join("|"),
    )
});

static CL100K_SPLIT: std::sync::LazyLock<Splitter> = std::sync::LazyLock::new(|| {
    Splitter::new(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
    )
});

impl Splitter {
    fn new(first: &str) -> Splitter {
        let pattern = regex_automata::meta::Regex::new_many(&[first, "\\s+\\s", "\\s+"])
            .expect("tiktoken's patterns compile");
        Splitter { pattern }
    }

    /// Calls `each` with `text`'s pre-tokens in order, as bpe-openai's `Tokenizer::split` gives
    /// them.
    fn each<'t>(
        &self,
        cache: &mut regex_automata::meta::Cache,
        text: &'t str,
        mut each: impl FnMut(&'t str),
    ) {
        let mut last = 0;
        loop {
            let input =
                regex_automata::Input::new(&text[last..]).anchored(regex_automata::Anchored::Yes);
            let Some(m) = self.pattern.search_with(cache, &input) else {
                return;
            };
            let start = last;
            let mut end = last + m.range().end;
            if LOOKAHEAD[m.pattern().as_usize()] {
                end -= text[start..end]
                    .chars()
                    .next_back()
                    .map_or(0, char::len_utf8);
            }
            // Every pattern takes a character (the look-ahead one two): never reached.
            if end == start {
                return;
            }
            last = end;
            each(&text[start..end]);
        }
    }
}

/// Whether both encodings' pre-tokenizers must cut `bytes` at `at`: before an ASCII letter
/// whose two preceding bytes are ASCII punctuation. Such a run of punctuation is one pre-token
/// that ends where the run does (no letter, digit or contraction pattern can start inside it),
/// and the next pre-token starts at the letter whether or not the text before it is there.
fn cuttable(bytes: &[u8], at: usize) -> bool {
    at >= 2
        && bytes.get(at).is_some_and(u8::is_ascii_alphabetic)
        && bytes[at - 1].is_ascii_punctuation()
        && bytes[at - 2].is_ascii_punctuation()
}

/// `text` cut at every place both pre-tokenizers must cut ([`cuttable`]).
fn parts(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut at = 2;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        while at < bytes.len() {
            let cut = at;
            at += 1;
            if cut > start && cuttable(bytes, cut) {
                let part = &text[start..cut];
                start = cut;
                return Some(part);
            }
        }
        let part = &text[start..];
        start = bytes.len();
        Some(part)
    })
}

/// Size of one text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    pub chars: usize,
    pub o200k: usize,
    pub cl100k: usize,
}

impl std::ops::Add for Size {
    type Output = Size;

    fn add(self, other: Size) -> Size {
        Size {
            chars: self.chars + other.chars,
            o200k: self.o200k + other.o200k,
            cl100k: self.cl100k + other.cl100k,
        }
    }
}

impl Size {
    pub fn of(text: &str) -> Size {
        let t = Tokens::get();
        Size {
            chars: text.chars().count(),
            o200k: t.o200k(text),
            cl100k: t.cl100k(text),
        }
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({"chars": self.chars, "o200k": self.o200k, "cl100k": self.cl100k})
    }
}

/// Sizes of many texts: each distinct text counted once, with both encodings, on every core.
/// The biggest jobs go first, so one huge text (the full catalog) does not finish last alone.
pub fn sizes_of(texts: &[&str]) -> Vec<Size> {
    sizes_with(texts, true, None)
}

/// `sizes_of`, counting cl100k too only when `cl100k` (else it is 0), and taking counts an
/// earlier build made of the same text from `memo`.
pub(crate) fn sizes_with(texts: &[&str], cl100k: bool, memo: Option<(&Memo, &str)>) -> Vec<Size> {
    let mut distinct: HashMap<&str, usize> = HashMap::new();
    let mut unique: Vec<&str> = Vec::new();
    let slots: Vec<usize> = texts
        .iter()
        .map(|t| {
            *distinct.entry(t).or_insert_with(|| {
                unique.push(t);
                unique.len() - 1
            })
        })
        .collect();
    // One job per (text, encoding), largest first.
    let mut jobs: Vec<(usize, bool)> = (0..unique.len())
        .flat_map(|i| [(i, true), (i, false)])
        .filter(|&(_, o200k)| o200k || cl100k)
        .collect();
    jobs.sort_by_key(|&(i, o200k)| (std::cmp::Reverse(unique[i].len()), i, o200k));
    let counts = crate::compiler::parallel::map_in_order(&jobs, |&(i, o200k)| {
        (i, o200k, count_tokens(unique[i], o200k, memo))
    });
    let mut sizes: Vec<Size> = unique
        .iter()
        .map(|t| Size {
            chars: t.chars().count(),
            o200k: 0,
            cl100k: 0,
        })
        .collect();
    for (i, o200k, n) in counts {
        if o200k {
            sizes[i].o200k = n;
        } else {
            sizes[i].cl100k = n;
        }
    }
    slots.into_iter().map(|i| sizes[i]).collect()
}

/// `text`'s tokens in o200k (else cl100k), with the counts of its parts taken from `memo` and
/// remembered there when one is given.
pub(crate) fn count_tokens(text: &str, o200k: bool, memo: Option<(&Memo, &str)>) -> usize {
    let Some((memo, version)) = memo else {
        return Tokens::get().count(text, o200k);
    };
    let memo_count = |text: &str| memo_tokens(memo, text, o200k);
    // A help page carries the registry version, which every change changes, and a surface
    // lists every tool: their parts are counted (and remembered) apart.
    let (parts, stamps) = split_at_stamps(text, version);
    let stamped = if stamps > 0 {
        stamps * memo_count(version)
    } else {
        0
    };
    stamped + parts.iter().map(|p| memo_count(p)).sum::<usize>()
}

/// `text`'s tokens in o200k (else cl100k) as `memo` remembers them, counted when it does not.
fn memo_tokens(memo: &Memo, text: &str, o200k: bool) -> usize {
    let count = || Tokens::get().count(text, o200k);
    let step = if o200k {
        "tokens.o200k"
    } else {
        "tokens.cl100k"
    };
    let n = memo.get_or_compute(step, text.as_bytes(), || count().to_string());
    // An entry that passed its check but is not a number is recomputed.
    n.parse().unwrap_or_else(|_| count())
}

/// `text` cut where both BPE encodings' pre-tokenizers must cut too, so the token count of
/// `text` is the sum of its parts' counts and the stamps'. Incremental builds count (and
/// remember) each part apart: a page whose only change is the registry version, or a surface
/// where one tool changed, is not counted again.
///
/// Cuts are made only where `cuttable` holds: around each `stamp` (a registry
/// version, `b3:` and hex digits) in that position and followed by neither a letter, a digit
/// nor `'`, and before the next tool of a tool list (after `},{"`). Returns the parts and the
/// number of stamps cut out. `tests/token_counts.rs` proves the sums against tiktoken on the
/// repo's catalogs.
pub fn split_at_stamps<'t>(text: &'t str, stamp: &str) -> (Vec<&'t str>, usize) {
    let bytes = text.as_bytes();
    let can_cut = |at: usize| cuttable(bytes, at);
    let sound = stamp.starts_with(|c: char| c.is_ascii_alphabetic())
        && stamp
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b':');
    // (start, end) of each stamp cut out, in order.
    let mut stamps: Vec<(usize, usize)> = Vec::new();
    if sound {
        // memchr's SIMD search: str's own was about 6% of what the memo adds to a full build.
        for at in memchr::memmem::find_iter(bytes, stamp.as_bytes()) {
            let end = at + stamp.len();
            let after = bytes
                .get(end)
                .is_none_or(|&b| !b.is_ascii_alphanumeric() && b != b'\'' && b < 0x80);
            if can_cut(at) && after && stamps.last().is_none_or(|&(_, e)| at >= e) {
                stamps.push((at, end));
            }
        }
    }
    let mut parts = Vec::new();
    let mut start = 0;
    let cut_tools = |from: usize, to: usize, parts: &mut Vec<&'t str>| {
        let mut begin = from;
        for at in memchr::memmem::find_iter(&bytes[from..to], b"},{\"") {
            let cut = from + at + 4;
            if cut < to && can_cut(cut) {
                parts.push(&text[begin..cut]);
                begin = cut;
            }
        }
        parts.push(&text[begin..to]);
    };
    for &(at, end) in &stamps {
        cut_tools(start, at, &mut parts);
        start = end;
    }
    cut_tools(start, text.len(), &mut parts);
    (parts, stamps.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pre-tokenizer searched with a cache per thread cuts every text where bpe-openai's
    /// does, for both encodings: letters of every case and script, contractions, digits,
    /// punctuation runs, and whitespace before text, before line ends and at the end.
    #[test]
    fn tokenizer_splits_as_bpe_openai_does() {
        let texts = [
            "",
            "Hello, world! It's a test.",
            "  leading and trailing   ",
            "line one\nline two\r\n\n  indented\n",
            "x   y\t\tz \n",
            "CamelCaseWords and ALLCAPS and mixedCASEword's",
            "numbers 1 12 123 1234 12345, 3.14159",
            "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
            "Привет, мир! Ёлка 2024",
            "日本語のテキストと、中文字符。",
            "é è ü ß Ǆǅǆ ﬁ — “quoted” ‘single’ …",
            "emoji 🎉🎉 and symbols ©®™ ++ -- // /path/to/file\n",
            "WE'LL SEE, THEY'VE GONE, I'M HERE, YOU'D",
            "tabs\tand\u{a0}non-breaking\u{2003}spaces   ",
        ];
        for (tokenizer, split) in [
            (bpe_openai::o200k_base(), &*O200K_SPLIT),
            (bpe_openai::cl100k_base(), &*CL100K_SPLIT),
        ] {
            let mut cache = split.pattern.create_cache();
            for text in texts {
                let theirs: Vec<&str> = tokenizer.split(text).collect();
                let mut ours = Vec::new();
                split.each(&mut cache, text, |piece| ours.push(piece));
                assert_eq!(ours, theirs, "{text:?}");
            }
        }
    }

    /// Parts put back together are the text; cuts fall only before a letter after two
    /// punctuation bytes.
    #[test]
    fn parts_cut_before_letters_after_punctuation() {
        let text = r#"{"name":"x","a b":[1,"ok"],"é":"Zz"}"#;
        let got: Vec<&str> = parts(text).collect();
        assert_eq!(got.concat(), text);
        assert_eq!(
            got,
            [
                r#"{""#,
                r#"name":""#,
                r#"x",""#,
                r#"a b":[1,""#,
                r#"ok"],"é":""#,
                r#"Zz"}"#
            ]
        );
        assert_eq!(parts("").count(), 0);
        assert_eq!(parts("a").collect::<Vec<_>>(), ["a"]);
    }
}
