//! Sizes an incremental build takes from its memo instead of counting them again: help pages,
//! found by their text around the registry version or by their origin, and the tools of a
//! surface, found by each tool's origin. Every size is what `compiler::tokens` counts afresh
//! (the tests compare them).

use crate::compiler::memo::Memo;
use crate::compiler::tokens::{count_tokens, split_at_stamps, Size, Tokens};
use crate::model::help::compact_json;

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
    match numbers(&entry).as_slice() {
        &[chars, stamps, tokens] => Size {
            chars: chars + stamps * version.chars().count(),
            o200k: tokens + stamps * version_tokens,
            cl100k: 0,
        },
        // "uncut", or an entry that passed its check but is not this step's.
        _ => whole(),
    }
}

/// The numbers of a size entry (space-separated), as far as they read.
fn numbers(entry: &str) -> Vec<usize> {
    entry.split(' ').map_while(|n| n.parse().ok()).collect()
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
                let (true, Some(tool), Some(rest)) = (
                    array.starts_with("[{\"type\""),
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
                if stamps > 0 {
                    return "uncut".into();
                }
                let t = Tokens::get();
                let o200k: usize = parts.iter().map(|p| t.o200k(p)).sum();
                let cl100k: usize = parts.iter().map(|p| t.cl100k(p)).sum();
                format!("{} {o200k} {cl100k}", share.chars().count())
            },
        );
        match numbers(&entry).as_slice() {
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
}
