//! Emitters: each is a pure function of the registry IR to `(relative path, contents)` pairs.
//! They read only the IR. The manifest, added last, lists every file with its hash and marks the
//! output folder as toolreg's.

pub mod arg_shape;
pub mod codemode;
pub mod docs;
pub mod help;
pub mod lookup;
pub mod outputs;
mod page_memo;
pub mod python;
pub mod registry_json;
pub mod report;
pub mod rust;
#[cfg(feature = "runtime")]
pub mod search_index;
mod shared;
pub mod surfaces;
pub mod typescript;
#[cfg(feature = "semantic")]
pub mod vectors;
pub mod zod;

use crate::model::canonical::to_pretty;
use crate::model::diag::Diagnostics;
use crate::model::registry::Registry;
use outputs::{Artifacts as _, Outputs};
pub(crate) use page_memo::{OpDigests, PageMemo};
use shared::Shared;
use std::collections::BTreeMap;

/// Relative `/`-separated path -> file contents. Sorted, so writing and checking are stable.
pub type FileMap = BTreeMap<String, String>;

/// The manifest's file name inside an output folder.
pub const MANIFEST: &str = "toolreg.manifest.json";

/// A name (op, group, entity, profile) as one file or folder name. Names are validated as safe
/// segments by the compiler; a long one (over 96 bytes; file systems stop at 255, and a
/// provider-valid tool name may be 64 characters plus a group) keeps a readable 48-byte prefix
/// and gets a hash of the whole name, so it stays unique and every path stays short.
pub fn path_segment(name: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 96;
    const KEEP: usize = 48;
    if name.len() <= MAX {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut cut = KEEP;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = blake3::hash(name.as_bytes()).to_hex();
    std::borrow::Cow::Owned(format!("{}-{}", &name[..cut], &hash[..16]))
}

/// Catalog text as a string literal of the generated TypeScript and Python: a JSON string
/// (valid in both, every quote, backslash and control character escaped), with U+2028 and
/// U+2029 escaped too, so the text cannot end a `//` comment or a line it sits in.
pub(crate) fn string_literal(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_else(|_| "\"\"".into())
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// The emitters, in the order their files are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Emitter {
    /// `registry.json`.
    Registry,
    /// `help.json`: every help page.
    Help,
    /// `surfaces/`: gateway, direct and profile tool lists.
    Surfaces,
    /// `report.json`: sizes and token counts.
    Report,
    /// `rust/registry.rs`: typed argument structs and op glue.
    Rust,
    /// `ts/registry.ts`: TypeScript bindings.
    Ts,
    /// `docs/`: markdown pages and an mdBook.
    Docs,
    /// `search.json`: the search index, so a cold search does not build it (feature `runtime`).
    #[cfg(feature = "runtime")]
    Search,
    /// `ts/client.ts`: zod schemas and a validating, typed client (with `ts/registry.ts`).
    Zod,
    /// `python/registry.py`: pydantic models and a validating, typed client.
    Python,
    /// `codemode/`: one typed module per op, an index per folder, the gateway shim.
    Codemode,
    /// `vectors.json`: each op embedded for semantic search (feature `semantic`).
    #[cfg(feature = "semantic")]
    Vectors,
}

/// What emitters may be told besides the registry.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// A folder of handlebars templates replacing the built-in ones, file by file.
    pub templates: Option<std::path::PathBuf>,
    /// Results of costly per-op steps (Rust types, pages, token counts) from earlier builds;
    /// what this build computes is added to it. Output is the same with or without it.
    pub memo: Option<std::sync::Arc<crate::compiler::memo::Memo>>,
    /// The `vectors.json` of the previous build, if any: ops whose text is unchanged keep
    /// their vectors instead of being embedded again.
    #[cfg(feature = "semantic")]
    pub previous_vectors: Option<String>,
    /// The sentence-transformer folder to embed with (`--model DIR`); the bundled model when
    /// unset.
    #[cfg(feature = "semantic")]
    pub model: Option<std::path::PathBuf>,
}

impl Emitter {
    pub const ALL: &'static [Emitter] = &[
        Emitter::Registry,
        Emitter::Help,
        Emitter::Surfaces,
        Emitter::Report,
        Emitter::Rust,
        Emitter::Ts,
        Emitter::Docs,
        #[cfg(feature = "runtime")]
        Emitter::Search,
    ];

    /// Emitters `--emit` can name that the default set leaves out: `zod`, `python` and
    /// `codemode` (code for other languages and agents), and with the `semantic` feature
    /// `vectors` (it loads a model and embeds every op).
    pub const OPT_IN: &'static [Emitter] = &[
        Emitter::Zod,
        Emitter::Python,
        Emitter::Codemode,
        #[cfg(feature = "semantic")]
        Emitter::Vectors,
    ];

    /// Every emitter a name selects: the default set, then the opt-in ones.
    pub fn known() -> impl Iterator<Item = Emitter> {
        Emitter::ALL.iter().chain(Emitter::OPT_IN).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Emitter::Registry => "registry",
            Emitter::Help => "help",
            Emitter::Surfaces => "surfaces",
            Emitter::Report => "report",
            Emitter::Rust => "rust",
            Emitter::Ts => "ts",
            Emitter::Docs => "docs",
            #[cfg(feature = "runtime")]
            Emitter::Search => "search",
            Emitter::Zod => "zod",
            Emitter::Python => "python",
            Emitter::Codemode => "codemode",
            #[cfg(feature = "semantic")]
            Emitter::Vectors => "vectors",
        }
    }

    pub fn from_name(name: &str) -> Option<Emitter> {
        Emitter::known().find(|e| e.name() == name)
    }

    /// Whether the emitter looks ops up in the memo by their digests ([`PageMemo`]), itself or
    /// through the help pages.
    fn reads_op_digests(self) -> bool {
        match self {
            Emitter::Rust | Emitter::Ts | Emitter::Docs | Emitter::Help | Emitter::Report => true,
            #[cfg(feature = "runtime")]
            Emitter::Search => true,
            Emitter::Codemode => true,
            Emitter::Registry | Emitter::Surfaces | Emitter::Zod | Emitter::Python => false,
            #[cfg(feature = "semantic")]
            Emitter::Vectors => false,
        }
    }

    /// Costliest first (measured on 10,000 tools), so the slow ones start at once.
    fn cost_rank(self) -> u8 {
        match self {
            Emitter::Rust => 0,
            Emitter::Report => 1,
            Emitter::Help => 2,
            Emitter::Docs => 3,
            // First, though cheap with a memo: it takes the ops' texts the memo's digests were
            // made of (about 40 MB at 10,000 ops), which are held until then.
            Emitter::Registry => 0,
            Emitter::Surfaces => 5,
            Emitter::Ts => 4,
            #[cfg(feature = "runtime")]
            Emitter::Search => 2,
            Emitter::Zod | Emitter::Python | Emitter::Codemode => 3,
            #[cfg(feature = "semantic")]
            Emitter::Vectors => 0,
        }
    }

    fn emit(self, reg: &Registry, shared: &Shared, diags: &mut Diagnostics) -> Made {
        let settings = shared.settings;
        let files = match self {
            Emitter::Rust => {
                let pieces = rust::emit(reg, shared.page_memo(reg).as_ref(), diags);
                return Made::Pieces(rust::FILE.to_string(), pieces, None);
            }
            Emitter::Registry => {
                let Some(texts) = shared.take_op_texts(reg) else {
                    let (files, spans) = registry_json::emit_spanned(reg);
                    return Made::Indexed(files, lookup::Spans::Registry(spans));
                };
                let (pieces, spans) = registry_json::pieces_from_texts(reg, texts);
                return Made::Pieces(
                    registry_json::FILE.to_string(),
                    pieces,
                    Some(lookup::Spans::Registry(spans)),
                );
            }
            Emitter::Help => {
                let (files, spans) = help::emit(&shared.help(reg));
                shared.done_with_help();
                return Made::Indexed(files, lookup::Spans::Help(spans));
            }
            Emitter::Surfaces => surfaces::emit(reg, shared.page_memo(reg).as_ref()),
            Emitter::Report => {
                let files = report::emit(
                    reg,
                    &shared.help(reg),
                    settings.memo.as_deref(),
                    shared.page_memo(reg).as_ref(),
                );
                shared.done_with_help();
                files
            }
            Emitter::Ts => typescript::emit(reg, shared.page_memo(reg).as_ref()),
            Emitter::Docs => docs::render(
                reg,
                settings.templates.as_deref(),
                shared.page_memo(reg).as_ref(),
                diags,
            ),
            #[cfg(feature = "runtime")]
            Emitter::Search => search_index::emit(reg, shared.page_memo(reg).as_ref()),
            Emitter::Zod => zod::emit(reg),
            Emitter::Python => python::emit(reg),
            Emitter::Codemode => codemode::emit(reg),
            #[cfg(feature = "semantic")]
            Emitter::Vectors => vectors::emit(
                reg,
                settings.previous_vectors.as_deref(),
                settings.model.as_deref(),
                diags,
            ),
        };
        Made::Files(files)
    }
}

/// What one emitter made: files, files with where each op or page lies in them (for
/// `lookup.json`), or one file as pieces to put together (see [`Outputs::prepare_pieces`]),
/// with where each op lies in it when it is JSON.
enum Made {
    Files(FileMap),
    Indexed(FileMap, lookup::Spans),
    Pieces(String, Vec<String>, Option<lookup::Spans>),
}

/// The artifacts of the chosen emitters, manifest included. Emitters that can only do part of
/// their job (an op typify cannot type) say so in `diags`.
pub fn emit(reg: &Registry, emitters: &[Emitter], diags: &mut Diagnostics) -> FileMap {
    emit_with(reg, emitters, &Settings::default(), diags)
}

/// `emit` with settings (custom templates).
pub fn emit_with(
    reg: &Registry,
    emitters: &[Emitter],
    settings: &Settings,
    diags: &mut Diagnostics,
) -> FileMap {
    emit_outputs(reg, emitters, settings, Outputs::holding(), diags)
        .into_file_map()
        .expect("held outputs need no reading back")
}

/// `emit_with` into `outputs`: with [`Outputs::spilling`], each emitter's files leave memory as
/// soon as it is done (what `toolreg build` and `check` use).
pub fn emit_outputs(
    reg: &Registry,
    emitters: &[Emitter],
    settings: &Settings,
    mut outputs: Outputs,
    diags: &mut Diagnostics,
) -> Outputs {
    // Emitters are independent pure functions of the IR: run them on every core, the costliest
    // first, then merge files and diagnostics in emitter order so output stays byte-identical.
    let mut order: Vec<usize> = (0..emitters.len()).collect();
    order.sort_by_key(|&i| emitters[i].cost_rank());
    let shared = Shared::new(settings, emitters);
    let outputs_ref = &outputs;
    // `lookup.json` indexes `registry.json` and `help.json`, when both are made: each emitter
    // records where its ops or pages lie as it writes them.
    let lookup = emitters.contains(&Emitter::Registry) && emitters.contains(&Emitter::Help);
    let mut results = crate::compiler::parallel::map_in_order(&order, |&i| {
        let mut d = Diagnostics::default();
        let files = |mut files: FileMap| {
            let size = (files.len(), files.values().map(String::len).sum::<usize>());
            for (path, text) in files.iter_mut() {
                escape_raw_controls(path, text);
            }
            (outputs_ref.prepare(files), size)
        };
        let (prepared, size, spans) = match emitters[i].emit(reg, &shared, &mut d) {
            Made::Files(made) => {
                let (prepared, size) = files(made);
                (prepared, size, None)
            }
            // JSON only, which `escape_raw_controls` leaves as it is: the spans hold.
            Made::Indexed(made, spans) => {
                let (prepared, size) = files(made);
                (prepared, size, lookup.then_some(spans))
            }
            Made::Pieces(path, mut pieces, spans) => {
                let size = (1, pieces.iter().map(String::len).sum::<usize>());
                for piece in pieces.iter_mut() {
                    escape_raw_controls(&path, piece);
                }
                let output = outputs_ref.prepare_pieces(&path, pieces);
                // Spans come with JSON only, which `escape_raw_controls` leaves as it is.
                (vec![(path, output)], size, spans.filter(|_| lookup))
            }
        };
        (i, prepared, size, d, spans)
    });
    results.sort_by_key(|(i, ..)| *i);
    // Every emitter's output but the report's own (which cannot count itself).
    let sizes: Vec<(&str, usize, usize)> = results
        .iter()
        .filter(|(i, ..)| emitters[*i] != Emitter::Report)
        .map(|(i, _, (files, bytes), ..)| (emitters[*i].name(), *files, *bytes))
        .collect();
    let mut spans = lookup::Gathered::default();
    for (_, prepared, _, d, found) in results {
        outputs.add(prepared);
        diags.extend(d);
        spans.add(found);
    }
    if let Ok(text) = outputs.text(report::FILE) {
        let mut report: serde_json::Value =
            serde_json::from_str(&text).expect("the report emitter writes JSON");
        report["artifacts"] = crate::compiler::report::artifacts(sizes);
        if emitters.contains(&Emitter::Codemode) {
            report["disclosure"] = crate::compiler::report::disclosure(
                reg,
                &shared.help(reg),
                |path| outputs.text(path).ok().map(std::borrow::Cow::into_owned),
                codemode::path_to,
            );
        }
        let text = to_pretty(&crate::model::canonical::sort_keys(&report));
        outputs.insert(report::FILE.to_string(), text);
    }
    // With both files, where each op and page lies in them (cold help and exec read one).
    if let Some((name, text)) = spans.render(reg) {
        outputs.insert(name, text);
    }
    outputs.add_manifest(reg);
    outputs
}

/// The last guard on code and pages: a control character other than newline and tab that
/// reached a Rust, TypeScript or markdown file (an overlay string can carry one; catalog text
/// cannot, the poisoning lint stops it) is written as `\u{1b}`: the same character inside a
/// Rust or TypeScript string literal, visible text in a comment or a page, and never a raw byte
/// a terminal or editor acts on. JSON needs no guard (serde_json escapes controls itself).
fn escape_raw_controls(path: &str, text: &mut String) {
    let guarded = [".rs", ".ts", ".md"].iter().any(|ext| path.ends_with(ext));
    let raw = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !guarded || !has_raw_control(text) {
        return;
    }
    *text = text
        .chars()
        .map(|c| {
            if raw(c) {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
}

/// Whether `text` holds a control character other than newline and tab: C0 (U+0000-U+001F),
/// DEL and C1 (U+0080-U+009F, which UTF-8 writes as 0xC2 then 0x80-0x9F). Read as bytes, not
/// decoded, since every page and source file of a build passes here (100+ MB at 10,000 tools):
/// blocks are screened by a fold without branches, which the compiler vectorizes (a byte at a
/// time, stopping at the first hit, was 2% of a one-tool rebuild), and only a block holding a
/// candidate (0xC2 also starts printable characters, U+00A0-U+00BF) is read exactly.
fn has_raw_control(text: &str) -> bool {
    const BLOCK: usize = 64;
    let bytes = text.as_bytes();
    let raw_at = |i: usize| {
        let b = bytes[i];
        (b < 0x20 && b != b'\n' && b != b'\t')
            || b == 0x7f
            || (b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)))
    };
    bytes.chunks(BLOCK).enumerate().any(|(k, block)| {
        let candidate = block.iter().fold(false, |seen, &b| {
            seen | ((b < 0x20) & (b != b'\n') & (b != b'\t')) | (b == 0x7f) | (b == 0xc2)
        });
        candidate && (k * BLOCK..k * BLOCK + block.len()).any(raw_at)
    })
}

/// The hash the manifest records for a file's text (the writer compares it before removing).
pub fn manifest_hash(text: &str) -> String {
    manifest_hash_of_bytes(text.as_bytes())
}

/// `manifest_hash` of a file's bytes as read: equal to the text's when they are its UTF-8, and
/// never equal to a recorded hash otherwise (every recorded hash is of a text), so a reader that
/// only compares needs no UTF-8 check first.
pub fn manifest_hash_of_bytes(bytes: &[u8]) -> String {
    manifest_hash_of_digest(blake3::hash(bytes))
}

/// [`manifest_hash_of_bytes`] of everything `reader` yields, read in pieces (a caller hashing
/// many files never holds one whole).
pub fn manifest_hash_of_reader(reader: impl std::io::Read) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(reader)?;
    Ok(manifest_hash_of_digest(hasher.finalize()))
}

fn manifest_hash_of_digest(digest: blake3::Hash) -> String {
    crate::model::canonical::short_digest(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::memo::Memo;

    #[test]
    fn a_file_hashed_in_pieces_hashes_as_its_bytes() {
        // Sizes around blake3's 64 KiB read; a reader that is interrupted once still reads
        // everything.
        struct Interrupted<R>(R, bool);
        impl<R: std::io::Read> std::io::Read for Interrupted<R> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if !self.1 {
                    self.1 = true;
                    return Err(std::io::ErrorKind::Interrupted.into());
                }
                self.0.read(buf)
            }
        }
        for len in [0, 1, 7, 65_535, 65_536, 65_537, 200_003] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let whole = manifest_hash_of_bytes(&bytes);
            let read = Interrupted(bytes.as_slice(), false);
            assert_eq!(manifest_hash_of_reader(read).unwrap(), whole, "{len} bytes");
        }
    }

    #[test]
    fn the_byte_scan_finds_exactly_the_control_characters() {
        let by_chars = |t: &str| t.chars().any(|c| c.is_control() && c != '\n' && c != '\t');
        // Every character near the control ranges and the UTF-8 lead bytes they share.
        let probes: Vec<char> = (0u32..0x250)
            .chain([0x2028, 0x200b, 0xfeff, 0x1f600])
            .filter_map(char::from_u32)
            .collect();
        for &a in &probes {
            for b in ['x', '\n', 'é', '\u{85}', 'Â'] {
                // Also where the scan's blocks meet (64 bytes), a pair split across them.
                for text in [
                    format!("{a}"),
                    format!("{a}{b}"),
                    format!("{b}{a}"),
                    format!("ok {a}"),
                    format!("{}{a}{b}", "x".repeat(62)),
                    format!("{}{a}{b}", "x".repeat(63)),
                    format!("{}{a}", "x".repeat(64)),
                ] {
                    assert_eq!(has_raw_control(&text), by_chars(&text), "{text:?}");
                }
            }
        }
    }

    /// After a change (one op edited, the help tool renamed, the registry renamed, a search op
    /// that create ops' notes name no longer a search op), emitters given the first build's
    /// memo write exactly what they write without one, and after the op edit take every other
    /// op's help and docs pages, Rust types and search words from the memo: on catalogs whose
    /// op pages are paged and whose create ops name a search op.
    #[test]
    fn pages_from_the_memo_are_the_pages_made_afresh() {
        type Edit = fn(&mut Registry);
        let edits: [(&str, Edit); 4] = [
            ("an op edited", |reg| {
                let r = reg.ops.values_mut().find(|r| !r.hidden).expect("an op");
                r.description.push_str(" Edited by the test.");
            }),
            ("the help tool renamed", |reg| {
                reg.gateway.help = "read_the_manual".into()
            }),
            ("the registry renamed", |reg| reg.name.push_str("-renamed")),
            ("a search op no longer one", |reg| {
                if let Some(r) = reg.ops.values_mut().find(|r| r.action == "search") {
                    r.action = "find".into();
                }
            }),
        ];
        let mut paged_ops = 0;
        // (catalog, emitters, how many of the edits): the fleet catalogs are large for a debug
        // build, so each runs what only it covers.
        for (dir, emitters, edits_run) in [
            ("definitions", Emitter::ALL, edits.len()),
            (
                "tests/catalogs/fleet/livemcp",
                &[Emitter::Help, Emitter::Docs][..],
                edits.len(),
            ),
            // The only catalog here with paged op pages (docs pages are never paged): the op
            // edit, and the help tool their later pages name.
            ("tests/catalogs/fleet/toolsdk", &[Emitter::Help][..], 2),
            // Alone (no other emitter's entries in the count): the Rust types and search words
            // of every op but the edited one are served.
            ("definitions", &[Emitter::Rust, Emitter::Search][..], 1),
        ] {
            let reg = crate::compiler::compile_repo_catalog(dir);
            let with = |reg: &Registry, memo: Memo| {
                let settings = Settings {
                    memo: Some(std::sync::Arc::new(memo)),
                    ..Settings::default()
                };
                let files = emit_with(reg, emitters, &settings, &mut Diagnostics::default());
                (files, settings.memo.expect("set above"))
            };
            let fresh = |reg: &Registry| {
                emit_with(
                    reg,
                    emitters,
                    &Settings::default(),
                    &mut Diagnostics::default(),
                )
            };
            let (first, memo) = with(&reg, Memo::new("test"));
            assert!(
                first == fresh(&reg),
                "{dir}: a first build with a memo differs"
            );
            let saved = memo.to_bytes();
            for &(what, edit) in &edits[..edits_run] {
                let mut next = reg.clone();
                edit(&mut next);
                next.registry_version = crate::compiler::stamp::registry_version(&next);
                assert_ne!(next.registry_version, reg.registry_version, "{what}");
                let (again, read) = with(&next, Memo::read("test", &saved));
                let expected = fresh(&next);
                for (path, text) in &expected {
                    assert!(
                        again.get(path) == Some(text),
                        "{dir}, {what}: `{path}` differs from a fresh build"
                    );
                }
                assert_eq!(again.len(), expected.len(), "{dir}, {what}");
                if what == "an op edited" {
                    // One help entry and one docs page per unchanged op that is shown, and the
                    // Rust types and search words of every unchanged op.
                    let stats = read.stats();
                    let shown = next.ops.values().filter(|r| !r.hidden).count();
                    let all = next.ops.len();
                    let per = |of: &[Emitter]| of.iter().filter(|e| emitters.contains(e)).count();
                    let floor = per(&[Emitter::Help, Emitter::Docs]) * (shown - 1)
                        + per(&[Emitter::Rust, Emitter::Search]) * (all - 1);
                    assert!(
                        stats.hits >= floor,
                        "{dir}: {stats:?} for {all} ops, {shown} shown"
                    );
                }
            }
            let pages = help::build(&reg).pages;
            paged_ops += reg
                .ops
                .keys()
                .filter(|op| pages.contains_key(&format!("{op}{}2", help::PAGE_MARK)))
                .count();
        }
        assert!(paged_ops > 0, "no catalog has an op with paged help");
    }
}
