//! Token counts, exact as tiktoken counts them (GitHub's bpe-openai: o200k_base and
//! cl100k_base), for the size report and the help pages' budgets: each text is cut where both
//! encodings' pre-tokenizers must cut, so a part counted once (a key, a repeated description)
//! costs a hash after, and an incremental build takes what an earlier one counted from the memo.

use crate::compiler::bounded::Bounded;
use crate::compiler::memo::Memo;
use crate::model::help::compact_json;
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
fn count_tokens(text: &str, o200k: bool, memo: Option<(&Memo, &str)>) -> usize {
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

/// Characters and o200k tokens of help pages, counted in their compact form: each page is
/// compacted, counted and dropped in its own job, the longest first, so the compact texts are
/// never all held at once (47 MB at 10,000 ops).
/// Each page comes with its origin when it has one (see [`PageText::origins`]).
///
/// [`PageText::origins`]: crate::model::help::PageText::origins
pub(crate) fn page_sizes(
    pages: &[(&str, Option<&crate::model::help::PageOrigin>)],
    memo: Option<(&Memo, &str)>,
) -> Vec<Size> {
    let mut jobs: Vec<usize> = (0..pages.len()).collect();
    jobs.sort_by_key(|&i| (std::cmp::Reverse(pages[i].0.len()), i));
    let mut sizes = vec![Size::default(); pages.len()];
    let version_tokens = memo.map_or(0, |(_, version)| Tokens::get().o200k(version));
    let counted = crate::compiler::parallel::map_in_order(&jobs, |&i| {
        let size = match memo {
            Some((memo, version)) if is_hash_stamp(version) => {
                page_size(pages[i], memo, version, version_tokens)
            }
            _ => {
                let text = compact_json(pages[i].0);
                Size {
                    chars: text.chars().count(),
                    o200k: count_tokens(&text, true, memo),
                    cl100k: 0,
                }
            }
        };
        (i, size)
    });
    for (i, size) in counted {
        sizes[i] = size;
    }
    sizes
}

/// Whether `version` is a registry version as toolreg makes them: `b3:` and hex digits.
fn is_hash_stamp(version: &str) -> bool {
    version
        .strip_prefix("b3:")
        .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The memo step of a help page's size (see `page_size`).
const PAGE_SIZE_STEP: &str = "report page size 1";

/// The memo step of a help page's size found by the page's origin (see `page_size`).
const PAGE_SIZE_BY_ORIGIN_STEP: &str = "report page size by origin 1";

/// The size of one help page (pretty JSON) in its compact form, remembered by the page's text
/// around its stamps: an incremental build finds every page whose only change is the registry
/// version without compacting or cutting it again. The entry holds what does not depend on the
/// version (the characters and tokens of the text around the stamps, and how many stamps it
/// has); the version's own characters and tokens are added back. Sound because a version is
/// `b3:` and hex digits of one length (`is_hash_stamp`; the length is in the key): compacting
/// never touches a string's content, and whether `split_at_stamps` cuts a stamp out depends
/// only on the bytes around it and on its first byte. A page with a stamp that cannot be cut
/// out is counted afresh every time (its entry says so).
///
/// A page with an origin is found by it, and by its length, instead: the page is then its
/// origin's text stamped with this version (an op's pages, which the memo restamps), so the
/// text around its stamps is the origin's. Hashing every page was two fifths of this step.
fn page_size(
    (pretty, origin): (&str, Option<&crate::model::help::PageOrigin>),
    memo: &Memo,
    version: &str,
    version_tokens: usize,
) -> Size {
    let whole = || {
        let text = compact_json(pretty);
        Size {
            chars: text.chars().count(),
            o200k: count_tokens(&text, true, Some((memo, version))),
            cl100k: 0,
        }
    };
    let length = (version.len() as u64).to_le_bytes();
    let page_length = (pretty.len() as u64).to_le_bytes();
    let mut pieces: Vec<&[u8]> = vec![&length];
    let step = match origin {
        Some(origin) => {
            pieces.extend([&page_length[..], &origin[..]]);
            PAGE_SIZE_BY_ORIGIN_STEP
        }
        None => {
            // Cut where memchr's SIMD search finds the stamp (str's `split` was a fifth of
            // this step).
            let mut from = 0;
            for at in memchr::memmem::find_iter(pretty.as_bytes(), version.as_bytes()) {
                pieces.push(&pretty.as_bytes()[from..at]);
                from = at + version.len();
            }
            pieces.push(&pretty.as_bytes()[from..]);
            PAGE_SIZE_STEP
        }
    };
    let entry = memo.get_or_compute_pieces(step, &pieces, || {
        let text = compact_json(pretty);
        let stamps = text.matches(version).count();
        let (parts, cut) = split_at_stamps(&text, version);
        if cut != stamps {
            return "uncut".into();
        }
        let chars = text.chars().count() - stamps * version.chars().count();
        // Counted, not remembered part by part: a page that misses this entry is one of the
        // few a change touches (its op's pages, its directories'), each within a page budget,
        // while an entry per part (a page has one or more) added at least as many memo entries
        // as this step's own, one per page.
        let tokens: usize = parts.iter().map(|p| Tokens::get().o200k(p)).sum();
        format!("{chars} {stamps} {tokens}")
    });
    let numbers: Vec<usize> = entry.split(' ').map_while(|n| n.parse().ok()).collect();
    match numbers.as_slice() {
        &[chars, stamps, tokens] => Size {
            chars: chars + stamps * version.chars().count(),
            o200k: tokens + stamps * version_tokens,
            cl100k: 0,
        },
        // "uncut", or an entry that passed its check but is not this step's.
        _ => whole(),
    }
}

/// The memo step of one tool's share of a tools array's size, found by the tool's origin (see
/// [`tools_size_by_origin`]).
const TOOL_SIZE_BY_ORIGIN_STEP: &str = "report tool size by origin 1";

/// How many tools a job of [`tools_size_by_origin`] sizes.
const TOOLS_PER_JOB: usize = 512;

/// The size of the tools array a provider receives for `defs` (the compact text of
/// `surfaces::tools_text`), the sum of each tool's share, remembered by the tool's origin: a
/// digest of what shapes its definition, one per tool (`origins[i]` is `defs[i]`'s). A rebuild
/// where one tool changed neither writes the array nor hashes it (a surface of 10,000 tools is
/// 18 MB).
///
/// A tool's share is its compact text from the `type` key after its `{"` up to the `type` key of
/// the next tool (the first also has the `[{"` before, the last the `]` after): where
/// `split_at_stamps` cuts a tools array, since every tool opens `{"type"` after `},`. The cuts
/// inside a share depend only on its own bytes, so the shares' sizes add up to the array's
/// (a test compares them with the whole text's). `None` for an empty array, origins that do not
/// match, or a tool whose text holds `version` (a stamp `split_at_stamps` would cut out; a
/// description holding its own registry's digest): the caller counts the text.
pub(crate) fn tools_size_by_origin(
    defs: &[crate::compiler::surfaces::ToolDef],
    origins: &[crate::model::help::PageOrigin],
    memo: &Memo,
    version: &str,
) -> Option<Size> {
    if defs.is_empty() || defs.len() != origins.len() {
        return None;
    }
    let last = defs.len() - 1;
    let share = |i: usize| -> Option<Size> {
        // Which of the array's ends the share holds: none, the `[`, the `]`, or both.
        let ends = u8::from(i == 0) | (u8::from(i == last) << 1);
        let entry = memo.get_or_compute_pieces(
            TOOL_SIZE_BY_ORIGIN_STEP,
            &[&[ends], &origins[i][..]],
            || {
                let array = crate::compiler::surfaces::tools_text(std::slice::from_ref(&defs[i]));
                // `[{"type"...}]`: the tool is between the brackets, its `type` key after `[{"`.
                let (Some(tool), Some(rest)) = (
                    array.get(1..array.len().saturating_sub(1)),
                    array.get(3..array.len().saturating_sub(1)),
                ) else {
                    return "uncut".into();
                };
                let share = match ends {
                    0 => format!("{rest},{{\""),
                    1 => format!("[{tool},{{\""),
                    2 => format!("{rest}]"),
                    _ => array.clone(),
                };
                let (parts, stamps) = split_at_stamps(&share, version);
                if stamps > 0 || !array.starts_with("[{\"type\"") {
                    return "uncut".into();
                }
                let t = Tokens::get();
                let o200k: usize = parts.iter().map(|p| t.o200k(p)).sum();
                let cl100k: usize = parts.iter().map(|p| t.cl100k(p)).sum();
                format!("{} {o200k} {cl100k}", share.chars().count())
            },
        );
        let numbers: Vec<usize> = entry.split(' ').map_while(|n| n.parse().ok()).collect();
        match numbers.as_slice() {
            &[chars, o200k, cl100k] => Some(Size {
                chars,
                o200k,
                cl100k,
            }),
            // "uncut", or an entry that passed its check but is not this step's.
            _ => None,
        }
    };
    let jobs: Vec<std::ops::Range<usize>> = (0..defs.len())
        .step_by(TOOLS_PER_JOB)
        .map(|from| from..(from + TOOLS_PER_JOB).min(defs.len()))
        .collect();
    let sums = crate::compiler::parallel::map_in_order(&jobs, |range| {
        range
            .clone()
            .try_fold(Size::default(), |sum, i| Some(sum + share(i)?))
    });
    sums.into_iter()
        .try_fold(Size::default(), |sum, size| Some(sum + size?))
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

    /// The direct surface sized tool by tool from origins is the size of its whole text: made
    /// and remembered, then served, and served under another registry version; on the repo's
    /// catalogs and LiveMCPBench's (schemas with arrays of objects, whose `},{"` are cut inside
    /// a tool), and on surfaces of one and two tools. A tool holding the version is left to the
    /// whole text when `split_at_stamps` would cut it out.
    #[test]
    fn a_surface_sized_tool_by_tool_is_its_whole_text_sized() {
        use crate::compiler::surfaces::{direct, tools_text};
        let dirs = crate::compiler::REPO_CATALOGS
            .into_iter()
            .chain(["tests/catalogs/fleet/livemcp"]);
        let mut inner_cuts = 0;
        for dir in dirs {
            let reg = crate::compiler::compile_repo_catalog(dir);
            let defs = direct(&reg);
            let origins: Vec<[u8; 32]> = defs
                .iter()
                .map(|d| *blake3::hash(tools_text(std::slice::from_ref(d)).as_bytes()).as_bytes())
                .collect();
            let memo = Memo::new("test");
            for n in [defs.len(), 1, 2] {
                let (defs, origins) = (&defs[..n], &origins[..n]);
                let text = tools_text(defs);
                inner_cuts += text.matches("},{\"").count().saturating_sub(n - 1);
                let whole = Size::of(&text);
                for version in ["b3:0011", "b3:0011", "b3:2233"] {
                    let by_origin = tools_size_by_origin(defs, origins, &memo, version);
                    assert_eq!(by_origin, Some(whole), "{dir}, {n} tools, {version}");
                }
            }
            // A version inside a word is text like any other; one alone in a string is cut.
            let version = "b3:4455";
            let mut stamped = defs[..2].to_vec();
            stamped[1].description = format!("Made under {version}.");
            let whole = Size::of(&tools_text(&stamped));
            let size = tools_size_by_origin(&stamped, &[[1; 32], [2; 32]], &memo, version);
            assert_eq!(size, Some(whole), "{dir}");
            stamped[1].description = version.into();
            let size = tools_size_by_origin(&stamped, &[[1; 32], [3; 32]], &memo, version);
            assert_eq!(size, None, "{dir}");
        }
        assert!(inner_cuts > 0, "no tool was cut inside");
        let memo = Memo::new("test");
        assert_eq!(tools_size_by_origin(&[], &[], &memo, "b3:00"), None);
    }

    /// A page's size served from the memo under another registry version is the size counted
    /// afresh: for a stamp cut out (quoted), two stamps, a stamp glued to a word (never cut
    /// out), and a page without one; found by its text or by its origin (each page its own).
    /// A saved memo serves the same sizes in a later build.
    #[test]
    fn a_page_size_served_under_another_version_is_the_size_counted_afresh() {
        for by_origin in [false, true] {
            page_sizes_are_served_as_counted(by_origin);
        }
    }

    fn page_sizes_are_served_as_counted(by_origin: bool) {
        let origins: Vec<[u8; 32]> = (0..4u8).map(|k| [k; 32]).collect();
        let origin = |k: usize| by_origin.then(|| &origins[k]);
        let pages = |v: &str| {
            [
                format!("{{\n  \"path\": \"a.b\",\n  \"registry_version\": \"{v}\"\n}}"),
                format!("{{\n  \"a\": \"{v}\",\n  \"note\": \"see ({v}) and\"\n}}"),
                format!("{{\n  \"glued\": \"x{v}y\"\n}}"),
                "{\n  \"plain\": [\n    1,\n    2\n  ]\n}".to_string(),
            ]
        };
        let fresh = |pretty: &str| {
            let text = compact_json(pretty);
            (text.chars().count(), Tokens::get().o200k(&text))
        };
        let memo = Memo::new("test");
        let first = "b3:0123456789abcdef";
        for version in [first, "b3:fedcba9876543210", "b3:99999999aaaaaaaa"] {
            let tokens = Tokens::get().o200k(version);
            for (k, pretty) in pages(version).iter().enumerate() {
                let size = page_size((pretty, origin(k)), &memo, version, tokens);
                assert_eq!((size.chars, size.o200k), fresh(pretty), "{pretty}");
            }
        }
        // Three of the four pages were served to the later versions, the glued one never.
        let stats = memo.stats();
        assert!(stats.repeats >= 6, "{stats:?}");
        let later = Memo::read("test", &memo.to_bytes());
        let version = "b3:abababab12121212";
        for (k, pretty) in pages(version).iter().enumerate() {
            let tokens = Tokens::get().o200k(version);
            let size = page_size((pretty, origin(k)), &later, version, tokens);
            assert_eq!((size.chars, size.o200k), fresh(pretty), "{pretty}");
        }
        assert!(later.stats().hits >= 3, "{:?}", later.stats());
        assert!(is_hash_stamp(first) && !is_hash_stamp("b3:") && !is_hash_stamp("v1:00"));
    }

    /// Parts put back together are the text; cuts fall only before a letter after two
    /// punctuation bytes.
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
