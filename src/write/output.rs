//! Write and check an output folder against a build's files (a [`FileMap`], or the build's
//! [`Outputs`](crate::emit::outputs::Outputs), which read spilled texts back one at a time).
//!
//! Writing is all-or-nothing and write-if-changed, and survives `kill -9` at any moment:
//!
//! 1. A lock (`.toolreg.lock`, an OS file lock released when the process dies) serializes
//!    builds into one folder; a second build waits for the first and then writes its whole tree.
//! 2. Every changed file is staged under `.toolreg-staging/` (same file system as the targets).
//!    A failure or a kill here leaves the folder exactly as it was; the next run deletes the
//!    staging folder. `toolreg build` takes the lock before it compiles ([`claim`]) and stages
//!    each file that differs as it is made, so its files never all sit in memory.
//! 3. The commit point: a journal listing every replacement and removal is renamed into the
//!    staging folder. From then on the write is rolled forward: by this run, or, if it dies, by
//!    the next `build` or `check`, before either looks at the folder. So a reader that goes
//!    through toolreg sees exactly the old tree or exactly the new one.
//!
//! Unchanged files are never touched (their mtimes stay, so build tools do not rebuild).
//!
//! Ownership: toolreg only removes files its previous manifest (`toolreg.manifest.json`) lists,
//! and only while their bytes still hash to what it wrote (an edited one is kept, TR054). In
//! [`Ownership::Folder`] mode (the CLI) a folder without a manifest is adopted only when it holds
//! nothing (dotfiles count); files the manifest does not list are left alone and reported by
//! `check` as foreign. In [`Ownership::Manifest`] mode (build.rs writing into a shared `OUT_DIR`)
//! foreign files are not even reported.
//!
//! Links: the output folder itself may be a symbolic link (it is resolved once), but nothing
//! inside it is followed for writing or removing: a path whose folder or file is a link, or not
//! a plain folder or file, is refused (TR053) before anything changes.
//!
//! Why it is one file: the write transaction (lock or claim, stage, journal, commit, settle,
//! remove by manifest) is one protocol whose crash-safety argument reads top to bottom; split, one
//! invariant would be spread over several files. About 210 of its lines are tests.

use crate::emit::outputs::{Artifacts, Baseline, Listing};
#[cfg(any(doc, test))]
use crate::emit::FileMap;
use crate::emit::MANIFEST;
use crate::model::diag::{Code, Diagnostic, Location};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Which files in the output folder toolreg may remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// The whole folder is toolreg's (except hidden files).
    Folder,
    /// Only files the existing manifest lists.
    Manifest,
}

/// What a write did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    pub written: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
    /// Files the old manifest listed and build no longer writes, whose bytes changed since
    /// toolreg wrote them: kept, and no longer listed (someone else's now).
    pub kept: Vec<String>,
}

/// The first differing line of a changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstDiff {
    pub line: usize,
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// The two texts differ only in the version stamps they carry (`b3:` and 16 hex digits):
    /// the file follows a change elsewhere and has none of its own.
    pub stamp_only: bool,
}

/// How an output folder differs from what build would write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub changed: Vec<(String, FirstDiff)>,
    pub missing: Vec<String>,
    /// Files the manifest lists that build would remove.
    pub extra: Vec<String>,
    /// Files neither the manifest lists nor build writes: left alone (folder mode only).
    pub foreign: Vec<String>,
}

impl FirstDiff {
    /// A change found without reading the file's text (`write` needs only to know it changed).
    fn unread() -> FirstDiff {
        FirstDiff {
            line: 0,
            expected: None,
            actual: None,
            stamp_only: false,
        }
    }
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.changed.is_empty() && self.missing.is_empty() && self.extra.is_empty()
    }
}

fn io_error(path: &Path, what: &str, err: std::io::Error) -> Box<Diagnostic> {
    let shown = path.to_string_lossy().replace('\\', "/");
    Box::new(Diagnostic::new(Code::OutputIo, format!("cannot {what} `{shown}`: {err}"))
        .at(Location::file(shown))
        .help(
            "check that the output folder is writable and the disk has space; nothing was changed",
        ))
}

fn rel_path(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Files the folder's manifest lists (and the manifest itself), each with the hash toolreg
/// recorded for it: the only files toolreg may remove ([`removable`] says which of them it
/// still may). Not looked up on disk: a file is written only after its path is checked plain
/// (`ensure_no_links_in`), so one stat a listed file here was a second one (11,700 at 10,000
/// tools, twice a build).
fn listed_files(out: &Path) -> BTreeMap<String, Option<String>> {
    let Ok(text) = fs::read_to_string(out.join(MANIFEST)) else {
        return BTreeMap::new();
    };
    let listed = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            v.get("files").and_then(|f| f.as_object()).map(|f| {
                f.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned)))
                    .collect::<BTreeMap<_, _>>()
            })
        })
        .unwrap_or_default();
    let mut owned: BTreeMap<String, Option<String>> =
        listed.into_iter().filter(|(p, _)| safe_rel(p)).collect();
    if plain_file(&out.join(MANIFEST)) {
        owned.insert(MANIFEST.to_string(), None);
    }
    owned
}

/// Whether a listed file is one toolreg may remove: still a plain file (not a link, a folder or
/// gone).
fn removable(out: &Path, rel: &str) -> bool {
    plain_file(&out.join(rel))
}

/// A regular file, not a link to one.
fn plain_file(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
}

/// The manifest's hash of a file's contents (line endings normalized, as `check` compares).
fn content_hash(bytes: &[u8]) -> String {
    crate::emit::manifest_hash(&normalize_eol(&String::from_utf8_lossy(bytes)))
}

/// Whether `rel` in `out` still holds the bytes toolreg recorded (`None`: no hash recorded, as
/// for the manifest itself, which only toolreg writes).
fn unchanged_since_written(out: &Path, rel: &str, recorded: Option<&str>) -> bool {
    match recorded {
        None => true,
        Some(want) => fs::read(out.join(rel)).is_ok_and(|b| content_hash(&b) == want),
    }
}

/// Refuses `rel` when any folder on its way, or the file itself, is a symbolic link or not a
/// plain folder/file: a write or removal there would land outside the output folder (or on
/// something that is not toolreg's file).
fn ensure_no_links(out: &Path, rel: &str) -> Result<(), Box<Diagnostic>> {
    ensure_no_links_in(out, rel, &mut PlainFolders::default())
}

/// The folders (relative paths) one pass over many files has found plain, so that pass
/// inspects each folder once, not once per file under it (a docs tree of 10,000 pages made
/// five inspections a file).
#[derive(Default)]
struct PlainFolders(std::collections::HashSet<String>);

/// [`ensure_no_links`], skipping folders `seen` already holds and adding the ones it finds plain.
fn ensure_no_links_in(
    out: &Path,
    rel: &str,
    seen: &mut PlainFolders,
) -> Result<(), Box<Diagnostic>> {
    let mut path = out.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    let mut prefix_len = 0;
    for (i, part) in parts.iter().enumerate() {
        path.push(part);
        prefix_len += part.len() + usize::from(i > 0);
        let last = i + 1 == parts.len();
        if !last && seen.0.contains(&rel[..prefix_len]) {
            continue;
        }
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(&path, "inspect", e)),
        };
        let kind = meta.file_type();
        let what = if kind.is_symlink() {
            let target = fs::read_link(&path)
                .map(|t| format!(" (to `{}`)", t.display()))
                .unwrap_or_default();
            format!("is a symbolic link{target}")
        } else if last && !kind.is_file() {
            "is not a regular file".to_string()
        } else if !last && !kind.is_dir() {
            "is not a folder".to_string()
        } else {
            if !last {
                seen.0.insert(rel[..prefix_len].to_string());
            }
            continue;
        };
        let shown = path.to_string_lossy().replace('\\', "/");
        return Err(Box::new(
            Diagnostic::new(
                Code::OutputLink,
                format!(
                    "refusing to write or remove `{rel}`: `{}` {what}",
                    crate::model::diag::escape_controls(&shown)
                ),
            )
            .at(Location::file(shown))
            .help("toolreg never writes or removes through a link inside its output folder (it could lead outside it); remove the link or point --out at a plain folder; nothing was changed"),
        ));
    }
    Ok(())
}

/// Whether `rel` is a plain file reached through plain folders (what `write` would accept).
pub(crate) fn is_plain_file(out: &Path, rel: &str) -> bool {
    ensure_no_links(out, rel).is_ok()
        && fs::symlink_metadata(out.join(rel)).is_ok_and(|m| m.is_file())
}

/// Everything in a folder without a manifest that would stop toolreg adopting it: every entry,
/// dotfiles and links included, except toolreg's own lock, staging folder and build cache
/// (empty folders do not count).
fn unowned_entries(out: &Path) -> Result<Vec<String>, Box<Diagnostic>> {
    let mut found = Vec::new();
    let walker = walkdir::WalkDir::new(out)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() != 1
                || (e.file_name() != LOCK && e.file_name() != STAGING && e.file_name() != CACHE_DIR)
        });
    for entry in walker {
        let entry = entry.map_err(|e| io_error(out, "read", e.into()))?;
        if entry.depth() > 0 && !entry.file_type().is_dir() {
            found.push(rel_path(out, entry.path()));
        }
    }
    Ok(found)
}

/// Every non-hidden file (or link, or other non-folder) in `out`, links not followed; hidden
/// files and folders of an owned folder are never toolreg's business.
fn visible_files(out: &Path) -> Result<BTreeSet<String>, Box<Diagnostic>> {
    let mut files = BTreeSet::new();
    let walker = walkdir::WalkDir::new(out)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = entry.map_err(|e| io_error(out, "read", e.into()))?;
        if entry.depth() > 0 && !entry.file_type().is_dir() {
            files.insert(rel_path(out, entry.path()));
        }
    }
    Ok(files)
}

fn ensure_folder(out: &Path) -> Result<bool, Box<Diagnostic>> {
    if !out.exists() {
        return Ok(false);
    }
    if !out.is_dir() {
        return Err(io_error(
            out,
            "use as an output folder (it is a file)",
            std::io::Error::other("not a folder"),
        ));
    }
    Ok(true)
}

/// Before build writes into a folder without a manifest, the folder must hold nothing at all
/// (dotfiles and links included): toolreg never adopts (and later deletes) someone else's files.
fn ensure_adoptable(out: &Path, files: &impl Artifacts) -> Result<(), Box<Diagnostic>> {
    if out.join(MANIFEST).is_file() {
        return Ok(());
    }
    let mut foreign = unowned_entries(out)?;
    // Name first what build would not even write: those are surely someone else's.
    foreign.sort_by_key(|f| files.has(f));
    if foreign.is_empty() {
        return Ok(());
    }
    let shown = out.to_string_lossy().replace('\\', "/");
    let listed: Vec<String> = foreign
        .iter()
        .take(5)
        .map(|f| crate::model::diag::escape_controls(f))
        .collect();
    Err(Box::new(
        Diagnostic::new(
            Code::OutputNotOwned,
            format!(
                "output folder `{shown}` has {} file{} toolreg did not write and no {MANIFEST}: {}{}",
                foreign.len(),
                if foreign.len() == 1 { "" } else { "s" },
                listed.join(", "),
                if foreign.len() > 5 { ", ..." } else { "" }
            ),
        )
        .at(Location::file(shown))
        .help("toolreg only writes into an empty folder (dotfiles count) or one with its manifest, so it never takes over files it did not write; point --out elsewhere or move these files away"),
    ))
}

/// The definitions and the output may not nest in either direction: a build would otherwise
/// read its own output as input, or write over the catalog it reads.
pub fn ensure_apart(definitions: &Path, out: &Path) -> Result<(), Box<Diagnostic>> {
    let resolve = |p: &Path| -> PathBuf {
        // The output folder may not exist yet: resolve its nearest existing ancestor.
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut base = abs.clone();
        let mut rest = Vec::new();
        while !base.exists() {
            match (base.file_name().map(|n| n.to_owned()), base.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    base = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let mut resolved = fs::canonicalize(&base).unwrap_or(base);
        for name in rest.into_iter().rev() {
            resolved.push(name);
        }
        resolved
    };
    let (d, o) = (resolve(definitions), resolve(out));
    let which = if d == o {
        "is"
    } else if d.starts_with(&o) {
        "contains"
    } else if o.starts_with(&d) {
        "is inside"
    } else {
        return Ok(());
    };
    let shown = out.to_string_lossy().replace('\\', "/");
    Err(Box::new(
        Diagnostic::new(
            Code::OutputOverlapsDefinitions,
            format!(
                "output folder `{shown}` {which} the definitions folder `{}`",
                definitions.to_string_lossy().replace('\\', "/")
            ),
        )
        .at(Location::file(shown))
        .help("build would read its own output or replace the catalog it reads; choose an --out outside the definitions folder (and not around it); nothing was written"),
    ))
}

/// A manifest path is only trusted if it stays inside the folder.
fn safe_rel(p: &str) -> bool {
    !p.is_empty() && !p.starts_with('/') && !p.split('/').any(|s| s == ".." || s.is_empty())
}

fn normalize_eol(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\r') {
        std::borrow::Cow::Owned(s.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// `text` with every version stamp (`b3:` and 16 hex digits) blanked.
fn without_stamps(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("b3:") {
        out.push_str(&rest[..at + 3]);
        rest = &rest[at + 3..];
        let hex = rest
            .bytes()
            .take(16)
            .take_while(u8::is_ascii_hexdigit)
            .count();
        if hex == 16 {
            out.push('*');
            rest = &rest[16..];
        }
    }
    out.push_str(rest);
    out
}

fn first_diff(expected: &str, actual: &str) -> FirstDiff {
    let mut e = expected.lines();
    let mut a = actual.lines();
    let mut line = 1;
    loop {
        match (e.next(), a.next()) {
            (Some(x), Some(y)) if x == y => line += 1,
            (None, None) => {
                return FirstDiff {
                    line,
                    expected: None,
                    actual: None,
                    stamp_only: false,
                };
            }
            (x, y) => {
                return FirstDiff {
                    line,
                    expected: x.map(str::to_owned),
                    actual: y.map(str::to_owned),
                    stamp_only: false,
                }
            }
        }
    }
}

/// Every artifact path must stay inside the output folder: plain relative components only (no
/// `..`, no root, no drive). Emitters build paths from validated names; this is the last line.
fn ensure_inside(out: &Path, files: &impl Artifacts) -> Result<(), Box<Diagnostic>> {
    use std::path::Component;
    for rel in files.paths() {
        let p = Path::new(rel);
        let plain = !rel.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain {
            let shown = out.to_string_lossy().replace('\\', "/");
            return Err(Box::new(
                Diagnostic::new(
                    Code::OutputIo,
                    format!("refusing to write `{}`: it would leave the output folder `{shown}`", rel.escape_debug()),
                )
                .at(Location::file(shown))
                .help("a name in the overlay became a path; nothing was written (this is a toolreg bug if no diagnostic named the name)"),
            ));
        }
    }
    Ok(())
}

/// Compares `out` with `files`. Line endings are normalized before comparing. A write that a
/// killed build committed but did not finish is completed first, so `check` sees whole trees.
pub fn check(
    out: &Path,
    files: &impl Artifacts,
    mode: Ownership,
) -> Result<CheckReport, Box<Diagnostic>> {
    ensure_inside(out, files)?;
    settle(out)?;
    check_unlocked(out, files, mode, &listed_files(out), None)
}

/// The hash the new manifest records for each file of `files` (what `write` compares with the
/// old manifest's, so a file whose text changed is known changed without reading it).
fn manifest_hashes(files: &impl Artifacts) -> BTreeMap<String, String> {
    #[derive(serde::Deserialize)]
    struct Listed {
        files: BTreeMap<String, String>,
    }
    files
        .text(MANIFEST)
        .ok()
        .and_then(|text| serde_json::from_str::<Listed>(&text).ok())
        .map(|m| m.files)
        .unwrap_or_default()
}

/// `fresh`: for `write`, which only needs to know which files changed (after a version change,
/// every file), the new manifest's hash of each file. A file whose recorded hash differs from
/// it has changed and is not read; one whose hash is the same is read and compared, since it may
/// have been edited since. Without `fresh` (`check`), each changed file's first differing line
/// is found.
fn check_unlocked(
    out: &Path,
    files: &impl Artifacts,
    mode: Ownership,
    listed: &BTreeMap<String, Option<String>>,
    fresh: Option<&BTreeMap<String, String>>,
) -> Result<CheckReport, Box<Diagnostic>> {
    let details = fresh.is_none();
    // Files found unchanged as they were made are trusted only while the folder lists what it
    // listed then: another build that wrote it since changed the manifest.
    let trusted = match files.baseline() {
        Some(then) if then != listed => {
            let shown = out.to_string_lossy().replace('\\', "/");
            return Err(Box::new(
                Diagnostic::new(
                    Code::OutputIo,
                    format!("output folder `{shown}` changed while this build ran (another build wrote it)"),
                )
                .at(Location::file(shown))
                .help("nothing was written; run the command again"),
            ));
        }
        Some(_) => true,
        None => false,
    };
    let mut report = CheckReport::default();
    if !ensure_folder(out)? {
        report.missing = files.paths().map(str::to_owned).collect();
        return Ok(report);
    }
    let mut plain = PlainFolders::default();
    for rel in files.paths() {
        // Found as it is, a plain file, under this same lock: nothing to write or read.
        if trusted && files.unchanged(rel) {
            continue;
        }
        let path = out.join(rel);
        // Read (back) only when needed: a file known changed by its hash never is.
        let want = || {
            files
                .text(rel)
                .map_err(|e| io_error(&path, "read back the new text of", e))
        };
        if let Err(d) = ensure_no_links_in(out, rel, &mut plain) {
            // Not toolreg's file: `write` refuses to write through it (TR053); `check` reports
            // it as changed.
            if !details {
                return Err(d);
            }
            report.changed.push((
                rel.to_owned(),
                FirstDiff {
                    line: 1,
                    expected: want()?.lines().next().map(str::to_owned),
                    actual: Some("(a symbolic link or not a regular file)".into()),
                    stamp_only: false,
                },
            ));
            continue;
        }
        let recorded = listed.get(rel).and_then(Option::as_deref);
        let new_hash = fresh.and_then(|f| f.get(rel)).map(String::as_str);
        if recorded.is_some() && new_hash.is_some() && recorded != new_hash {
            // Listed by the old manifest and checked plain above: known changed. A forged
            // manifest can only make toolreg rewrite a file, never skip one.
            report.changed.push((rel.to_owned(), FirstDiff::unread()));
            continue;
        }
        let read = fs::read(&path);
        let want = match &read {
            Ok(_) => want()?,
            Err(_) => std::borrow::Cow::Borrowed(""),
        };
        match read {
            Ok(bytes) if bytes == want.as_bytes() => {}
            Ok(bytes) if !details => {
                // Only line endings are forgiven (a checkout's CRLF), so a file with no CR
                // differs as it is and is never decoded (most files of a rebuild).
                let same_but_eol = bytes.contains(&b'\r')
                    && normalize_eol(&String::from_utf8_lossy(&bytes)) == want;
                if !same_but_eol {
                    report.changed.push((rel.to_owned(), FirstDiff::unread()));
                }
            }
            Ok(bytes) => {
                let have = String::from_utf8_lossy(&bytes);
                let have = normalize_eol(&have);
                if have != want {
                    // The first difference that is not a version stamp (stamps blanked, `b3:*`),
                    // or, in a file that differs in nothing else, the first stamp.
                    let (want_text, have_text) = (without_stamps(&want), without_stamps(&have));
                    let diff = if want_text == have_text {
                        FirstDiff {
                            stamp_only: true,
                            ..first_diff(&want, &have)
                        }
                    } else {
                        first_diff(&want_text, &have_text)
                    };
                    report.changed.push((rel.to_owned(), diff));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                report.missing.push(rel.to_owned())
            }
            Err(e) => return Err(io_error(&path, "read", e)),
        }
    }
    report.extra = listed
        .keys()
        .filter(|p| !files.has(p) && removable(out, p))
        .cloned()
        .collect();
    // Foreign files are reported by `check` (`write` never touches them): a walk of the whole
    // folder only then.
    if mode == Ownership::Folder && details {
        // A listed path that is no longer a plain file (a link put there) is not toolreg's to
        // remove, so it is reported as foreign.
        let owned = |p: &String| listed.contains_key(p) && removable(out, p);
        report.foreign = visible_files(out)?
            .into_iter()
            .filter(|p| !files.has(p) && !owned(p))
            .collect();
    }
    Ok(report)
}

/// Finishes a write that a killed build committed but did not finish (or discards one it had
/// not committed), as `check` does, so a reader sees one whole tree. Waits for a build still
/// writing. `Ok(true)` when there was something to settle.
pub fn settle(out: &Path) -> Result<bool, Box<Diagnostic>> {
    if !out.join(STAGING).exists() {
        return Ok(false);
    }
    let _lock = FolderLock::acquire(out).map_err(|mut d| {
        d.help = Some(format!(
            "`{}` holds an interrupted build that toolreg must finish before reading it, and it cannot write there; make the folder writable, or rebuild it",
            out.display()
        ));
        d
    })?;
    recover(out)?;
    Ok(true)
}

/// The output folder as the last build left it, for a build to compare its files with as they
/// are made ([`Outputs::against`](crate::emit::outputs::Outputs::against)): a file found as it
/// is need not be kept. `None` when the folder has no manifest (nothing there is toolreg's) or
/// cannot be settled (the write then says why). A write committed but not finished is finished
/// first, so the baseline is one whole tree.
pub fn baseline(out: &Path) -> Option<std::sync::Arc<dyn Baseline>> {
    if !plain_file(&out.join(MANIFEST)) || settle(out).is_err() {
        return None;
    }
    Some(std::sync::Arc::new(FolderBaseline::of(out, None)))
}

/// The output folder as a [`Baseline`]; with `staging`, a claimed folder's, which stages files
/// where the write commits them from.
struct FolderBaseline {
    out: PathBuf,
    listing: Listing,
    plain: std::sync::Mutex<PlainFolders>,
    /// The staging folders made so far (`None`: this baseline stages nothing).
    staging: Option<std::sync::Mutex<MadeFolders>>,
}

impl FolderBaseline {
    fn of(out: &Path, staging: Option<MadeFolders>) -> FolderBaseline {
        FolderBaseline {
            out: out.to_path_buf(),
            listing: listed_files(out),
            plain: std::sync::Mutex::new(PlainFolders::default()),
            staging: staging.map(std::sync::Mutex::new),
        }
    }

    /// `rel` is read only as a plain file reached through plain folders (never through a link).
    fn plain(&self, rel: &str) -> bool {
        let mut plain = self.plain.lock().unwrap_or_else(|p| p.into_inner());
        ensure_no_links_in(&self.out, rel, &mut plain).is_ok()
    }
}

impl Baseline for FolderBaseline {
    fn holds(&self, rel: &str, text: &[String], hash: &str) -> bool {
        // A recorded hash that differs means changed, unread (as `check_unlocked` judges).
        if let Some(Some(recorded)) = self.listing.get(rel) {
            if recorded != hash {
                return false;
            }
        }
        safe_rel(rel)
            && self.plain(rel)
            && fs::read(self.out.join(rel)).is_ok_and(|bytes| is_concatenation(&bytes, text))
    }

    fn read(&self, rel: &str) -> std::io::Result<Vec<u8>> {
        if !safe_rel(rel) || !self.plain(rel) {
            return Err(std::io::Error::other(format!(
                "`{rel}` is no longer a plain file in the output folder"
            )));
        }
        fs::read(self.out.join(rel))
    }

    fn listing(&self) -> &Listing {
        &self.listing
    }

    fn stage(&self, rel: &str, text: &[String]) -> std::io::Result<bool> {
        // The staging folder is the claim's own (made fresh under its lock), so it holds no
        // link; a path that is not plain is left to the write, which refuses it.
        let Some(made) = &self.staging else {
            return Ok(false);
        };
        if !safe_rel(rel) {
            return Ok(false);
        }
        let staging = self.out.join(STAGING);
        let path = staging.join(rel);
        let dir = path.parent().unwrap_or(&staging);
        made.lock().unwrap_or_else(|p| p.into_inner()).make(dir)?;
        // Buffered: the Rust file comes as one piece per op (10,000 small writes unbuffered).
        let mut file = std::io::BufWriter::with_capacity(1 << 16, fs::File::create(&path)?);
        for piece in text {
            std::io::Write::write_all(&mut file, piece.as_bytes())?;
        }
        std::io::Write::flush(&mut file)?;
        Ok(true)
    }

    fn read_staged(&self, rel: &str) -> std::io::Result<Vec<u8>> {
        // Staged, or moved into place by the write's commit.
        match fs::read(self.out.join(STAGING).join(rel)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.read(rel),
            read => read,
        }
    }
}

/// Whether `bytes` are `pieces` put together.
fn is_concatenation(bytes: &[u8], pieces: &[String]) -> bool {
    let mut rest = bytes;
    for piece in pieces {
        match rest.strip_prefix(piece.as_bytes()) {
            Some(after) => rest = after,
            None => return false,
        }
    }
    rest.is_empty()
}

/// The output folder claimed by one build (`toolreg build`): locked from before the build makes
/// its files until they are written, so each file is compared with the folder as it is made
/// ([`Claim::baseline`]): one found as it is is not kept at all, and one that differs is staged
/// at once where the write takes it from, instead of being held until every emitter is done
/// (about 230 MB at 10,000 tools). A second build into the folder waits for the claim, then
/// makes and writes its whole tree. Dropped without a committed write, it removes what it
/// staged (and the folder, when it made it and nothing was written).
pub struct Claim {
    folder: std::sync::Arc<FolderBaseline>,
    mode: Ownership,
    existed: bool,
    lock: Option<FolderLock>,
}

/// Claims `out` for a build: made when missing, locked, and a write a killed build committed
/// finished (or an uncommitted one discarded), as `write` would before writing.
pub fn claim(out: &Path, mode: Ownership) -> Result<Claim, Box<Diagnostic>> {
    let existed = ensure_folder(out)?;
    let claimed = || -> Result<Claim, Box<Diagnostic>> {
        let lock = lock_and_recover(out)?;
        // Files are staged only into a folder toolreg may write: its own, or an empty one (the
        // write refuses any other, and nothing is staged into it meanwhile).
        let stageable = mode == Ownership::Manifest
            || plain_file(&out.join(MANIFEST))
            || unowned_entries(out).is_ok_and(|found| found.is_empty());
        let staging = stageable.then(MadeFolders::default);
        Ok(Claim {
            folder: std::sync::Arc::new(FolderBaseline::of(out, staging)),
            mode,
            existed,
            lock: Some(lock),
        })
    };
    claimed().inspect_err(|_| {
        if !existed {
            let _ = fs::remove_file(out.join(LOCK));
            let _ = fs::remove_dir(out);
        }
    })
}

impl Claim {
    /// The folder as the build's files are compared with and staged into.
    pub fn baseline(&self) -> std::sync::Arc<dyn Baseline> {
        self.folder.clone()
    }

    /// Writes `files` (made against [`Claim::baseline`]) into the folder, all-or-nothing, as
    /// `write`.
    pub fn write(&self, files: &impl Artifacts) -> Result<WriteReport, Box<Diagnostic>> {
        ensure_inside(&self.folder.out, files)?;
        write_held(&self.folder.out, files, self.mode)
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // What was staged and never committed goes; a committed write is the next run's to
        // finish (`recover`).
        let out = &self.folder.out;
        let staging = out.join(STAGING);
        if !staging.join(JOURNAL).exists() {
            let _ = fs::remove_dir_all(&staging);
        }
        drop(self.lock.take());
        if !self.existed {
            let _ = fs::remove_dir(out);
        }
    }
}

/// Writes `files` into `out`, all-or-nothing; see the module docs.
pub fn write(
    out: &Path,
    files: &impl Artifacts,
    mode: Ownership,
) -> Result<WriteReport, Box<Diagnostic>> {
    ensure_inside(out, files)?;
    let existed = ensure_folder(out)?;
    let result = write_locked(out, files, mode);
    if result.is_err() && !existed {
        // Leave no empty folder behind for a write that did nothing.
        let _ = fs::remove_file(out.join(LOCK));
        let _ = fs::remove_dir(out);
    }
    result
}

fn write_locked(
    out: &Path,
    files: &impl Artifacts,
    mode: Ownership,
) -> Result<WriteReport, Box<Diagnostic>> {
    let _lock = lock_and_recover(out)?;
    write_held(out, files, mode)
}

/// Makes `out` (when missing), locks it, and finishes a write a killed build committed (or
/// discards an uncommitted one): what every write does first.
fn lock_and_recover(out: &Path) -> Result<FolderLock, Box<Diagnostic>> {
    fs::create_dir_all(out).map_err(|e| io_error(out, "create", e))?;
    for own in [LOCK, STAGING] {
        if fs::symlink_metadata(out.join(own)).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(ensure_no_links(out, own).expect_err("a link is refused"));
        }
    }
    let lock = FolderLock::acquire(out)?;
    recover(out)?;
    remove_legacy_temporaries(out);
    Ok(lock)
}

/// `write` once the folder is locked and recovered: a file `files` says is staged already
/// ([`Artifacts::staged`], by a [`Claim`]) is not written again.
fn write_held(
    out: &Path,
    files: &impl Artifacts,
    mode: Ownership,
) -> Result<WriteReport, Box<Diagnostic>> {
    let recorded = listed_files(out);
    let status = check_unlocked(out, files, mode, &recorded, Some(&manifest_hashes(files)))?;
    if mode == Ownership::Folder {
        ensure_adoptable(out, files)?;
    }
    // Every file to write passed the same check in `check_unlocked`; the files to remove have not.
    let mut plain = PlainFolders::default();
    for rel in &status.extra {
        ensure_no_links_in(out, rel, &mut plain)?;
    }
    // Only files still as toolreg wrote them are removed; an edited one is kept and reported.
    let (remove, kept): (Vec<String>, Vec<String>) =
        status.extra.iter().cloned().partition(|p| {
            unchanged_since_written(out, p, recorded.get(p).and_then(|h| h.as_deref()))
        });
    let mut report = WriteReport {
        unchanged: files.count() - status.changed.len() - status.missing.len(),
        kept,
        ..Default::default()
    };
    if status.is_clean() {
        return Ok(report);
    }
    let mut to_write: Vec<String> = status
        .changed
        .iter()
        .map(|(p, _)| p.clone())
        .chain(status.missing.iter().cloned())
        .collect();
    to_write.sort();
    // The manifest goes last, so even a reader that bypasses the journal never sees a manifest
    // that claims files not written yet.
    to_write.sort_by_key(|p| p.as_str() == MANIFEST);

    // Stage. Any failure here leaves the folder as it was.
    let staging = out.join(STAGING);
    let stage = || -> Result<(), Box<Diagnostic>> {
        let mut made = MadeFolders::default();
        for rel in &to_write {
            if files.staged(rel) {
                continue;
            }
            let tmp = staging.join(rel);
            let dir = tmp.parent().unwrap_or(&staging);
            made.make(dir).map_err(|e| io_error(dir, "create", e))?;
            let text = files
                .text(rel)
                .map_err(|e| io_error(&tmp, "read back the new text of", e))?;
            fs::write(&tmp, text.as_bytes()).map_err(|e| io_error(&tmp, "write", e))?;
        }
        let journal = Journal {
            replace: to_write.clone(),
            remove: remove.clone(),
            hashes: remove
                .iter()
                .filter_map(|p| Some((p.clone(), recorded.get(p)?.clone()?)))
                .collect(),
        };
        let text = serde_json::to_string(&journal).expect("a journal is plain data");
        let tmp = staging.join(JOURNAL_TMP);
        fs::write(&tmp, text).map_err(|e| io_error(&tmp, "write", e))?;
        Ok(())
    };
    if let Err(d) = stage() {
        let _ = fs::remove_dir_all(&staging);
        return Err(d);
    }
    // Commit.
    let journal_path = staging.join(JOURNAL);
    if let Err(e) = fs::rename(staging.join(JOURNAL_TMP), &journal_path) {
        let _ = fs::remove_dir_all(&staging);
        return Err(io_error(&journal_path, "commit", e));
    }
    // Roll forward.
    recover(out)?;
    report.written = to_write;
    report.removed = remove;
    Ok(report)
}

const STAGING: &str = ".toolreg-staging";
/// The build cache's folder (see `cache`): toolreg's, never output, never a reason to refuse a
/// folder.
pub const CACHE_DIR: &str = ".toolreg-cache";
const JOURNAL: &str = ".journal.json";
const JOURNAL_TMP: &str = ".journal.json.tmp";
const LOCK: &str = ".toolreg.lock";

/// The folders one pass over many files has made (or found): each is made once, not once per
/// file in it.
#[derive(Default)]
struct MadeFolders(std::collections::HashSet<PathBuf>);

impl MadeFolders {
    fn make(&mut self, dir: &Path) -> std::io::Result<()> {
        if !self.0.contains(dir) {
            fs::create_dir_all(dir)?;
            self.0.insert(dir.to_path_buf());
        }
        Ok(())
    }
}

/// What a committed write still has to do.
#[derive(serde::Serialize, serde::Deserialize)]
struct Journal {
    replace: Vec<String>,
    remove: Vec<String>,
    /// The recorded hash of each file to remove: one changed after the commit is kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    hashes: BTreeMap<String, String>,
}

/// Finishes a committed write (journal present) or discards an uncommitted one (no journal), then
/// deletes the staging folder. Idempotent: a kill during recovery is recovered the same way.
fn recover(out: &Path) -> Result<(), Box<Diagnostic>> {
    let staging = out.join(STAGING);
    if !staging.exists() {
        return Ok(());
    }
    let journal_path = staging.join(JOURNAL);
    if let Ok(text) = fs::read_to_string(&journal_path) {
        let journal: Journal = serde_json::from_str(&text)
            .map_err(|e| io_error(&journal_path, "read", std::io::Error::other(e.to_string())))?;
        let interrupted = |path: &Path, what: &str, e: std::io::Error| {
            let mut d = io_error(path, what, e);
            d.help = Some(
                "the new files are committed in .toolreg-staging and the next build or check finishes replacing them; fix the cause (permissions, disk space) and run it again".into(),
            );
            d
        };
        let mut made = MadeFolders::default();
        // A link planted since the commit is refused, not followed: each target is inspected
        // right before its file is moved, each folder on the way once per recovery (a docs
        // tree of 10,000 pages made six inspections a file).
        let mut plain = PlainFolders::default();
        for rel in journal.replace.iter().filter(|r| safe_rel(r)) {
            ensure_no_links_in(out, rel, &mut plain)?;
            let from = staging.join(rel);
            let to = out.join(rel);
            if let Some(dir) = to.parent() {
                made.make(dir).map_err(|e| interrupted(dir, "create", e))?;
            }
            match fs::rename(&from, &to) {
                Ok(()) => {}
                // Renamed before an interruption.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !from.exists() => {}
                Err(e) => return Err(interrupted(&to, "replace", e)),
            }
        }
        for rel in journal.remove.iter().filter(|r| safe_rel(r)) {
            let path = out.join(rel);
            if ensure_no_links(out, rel).is_err()
                || !unchanged_since_written(out, rel, journal.hashes.get(rel).map(String::as_str))
            {
                continue; // not the file toolreg wrote any more: kept
            }
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(interrupted(&path, "remove", e)),
            }
            // Drop folders the removal left empty (never the output folder itself).
            let mut dir = path.parent();
            while let Some(d) = dir {
                if d == out || fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
        fs::remove_file(&journal_path).map_err(|e| interrupted(&journal_path, "remove", e))?;
    }
    fs::remove_dir_all(&staging).map_err(|e| io_error(&staging, "remove", e))
}

/// Earlier toolreg versions staged files beside their targets as `.NAME.toolreg-tmp`; a killed
/// run left them behind. They are never anyone else's, so any found are deleted.
fn remove_legacy_temporaries(out: &Path) {
    let walker = walkdir::WalkDir::new(out)
        .into_iter()
        .filter_entry(|e| e.file_name() != STAGING);
    for entry in walker.flatten() {
        let name = entry.file_name().to_string_lossy();
        if entry.file_type().is_file() && name.starts_with('.') && name.ends_with(".toolreg-tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// An exclusive OS lock on `out/.toolreg.lock`; released (and the file removed) on drop, and by
/// the OS if the process dies.
struct FolderLock {
    path: PathBuf,
    _file: fs::File,
}

impl FolderLock {
    fn acquire(out: &Path) -> Result<Self, Box<Diagnostic>> {
        let path = out.join(LOCK);
        loop {
            let file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| io_error(&path, "create the lock file", e))?;
            file.lock().map_err(|e| io_error(&path, "lock", e))?;
            // The holder before us removes the file when it is done; if we locked a file that is
            // no longer the one at `path`, try again with the new one.
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                let ours = file.metadata().map(|m| (m.dev(), m.ino())).ok();
                let current = fs::metadata(&path).map(|m| (m.dev(), m.ino())).ok();
                if ours.is_none() || ours != current {
                    continue;
                }
            }
            return Ok(FolderLock { path, _file: file });
        }
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Removed while still locked, so the next holder's inode check sees the change.
        let _ = fs::remove_file(&self.path);
    }
}

/// A TR054 warning for each file a write kept (see [`WriteReport::kept`]).
pub fn kept_diagnostics(out: &Path, report: &WriteReport) -> Vec<Diagnostic> {
    report
        .kept
        .iter()
        .map(|rel| {
            let shown = out.join(rel).to_string_lossy().replace('\\', "/");
            let shown = crate::model::diag::escape_controls(&shown);
            Diagnostic::new(
                Code::OutputKept,
                format!("kept `{shown}`: build no longer writes it, but it changed since toolreg wrote it"),
            )
            .at(Location::file(shown.clone()))
            .help(format!(
                "it is no longer listed in {MANIFEST}, so it is yours now and build leaves it alone; if it is not wanted: rm -- '{}'",
                shown.replace('\'', r"'\''")
            ))
        })
        .collect()
}

/// Prints a check report the way `toolreg check` shows it.
/// Two differing lines cut to a window around where they first differ (a compact JSON file is
/// one line of many kilobytes): at most 160 characters each, `…` where cut.
fn around_difference(expected: &str, actual: &str) -> (String, String) {
    const BEFORE: usize = 60;
    const WIDTH: usize = 160;
    let at = expected
        .chars()
        .zip(actual.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let start = at.saturating_sub(BEFORE);
    let cut = |line: &str| {
        let n = line.chars().count();
        let window: String = line.chars().skip(start).take(WIDTH).collect();
        format!(
            "{}{window}{}",
            if start > 0 { "…" } else { "" },
            if start + WIDTH < n { "…" } else { "" }
        )
    };
    (cut(expected), cut(actual))
}

pub fn render_check(out_display: &str, report: &CheckReport, fix: &str) -> String {
    // Content changes first; files that differ only in the version stamp they carry follow a
    // change elsewhere and are named briefly after them (after a one-word edit, 45 of 47 files).
    let (stamps, content): (Vec<_>, Vec<_>) =
        report.changed.iter().partition(|(_, d)| d.stamp_only);
    let mut s = format!(
        "error: `{out_display}` is not what build would write ({} changed in content, {} only in their version stamp, {} missing, {} extra)\n",
        content.len(),
        stamps.len(),
        report.missing.len(),
        report.extra.len()
    );
    for (p, d) in &content {
        let (expected, actual) = around_difference(
            d.expected.as_deref().unwrap_or("<end of file>"),
            d.actual.as_deref().unwrap_or("<end of file>"),
        );
        s.push_str(&format!("  changed: {out_display}/{p}\n"));
        s.push_str(&format!("     first difference at line {}:\n", d.line));
        s.push_str(&format!("     - expected: {expected}\n"));
        s.push_str(&format!("     + on disk:  {actual}\n"));
    }
    if !stamps.is_empty() {
        const SHOWN: usize = 5;
        let names: Vec<&str> = stamps.iter().take(SHOWN).map(|(p, _)| p.as_str()).collect();
        let more = stamps.len().saturating_sub(SHOWN);
        s.push_str(&format!(
            "  version stamp only: {}{}\n",
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    for p in &report.missing {
        s.push_str(&format!("  missing: {out_display}/{p}\n"));
    }
    for p in &report.extra {
        s.push_str(&format!("  extra:   {out_display}/{p}\n"));
    }
    for p in report.foreign.iter().take(5) {
        s.push_str(&format!(
            "  note: {out_display}/{p} is not toolreg's (its manifest does not list it); left alone\n"
        ));
    }
    s.push_str(&format!("  = help: run `{fix}` and commit the result\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_its_pieces_put_together_and_nothing_else() {
        let pieces = |list: &[&str]| list.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert!(is_concatenation(
            b"abcdef",
            &pieces(&["ab", "", "cd", "ef"])
        ));
        assert!(is_concatenation(b"", &pieces(&[])));
        assert!(is_concatenation(b"", &pieces(&["", ""])));
        assert!(
            !is_concatenation(b"abcdef", &pieces(&["ab", "cd"])),
            "bytes left over"
        );
        assert!(
            !is_concatenation(b"abcd", &pieces(&["ab", "cde"])),
            "a piece too long"
        );
        assert!(!is_concatenation(b"abxd", &pieces(&["ab", "cd"])));
        assert!(!is_concatenation(b"ab", &pieces(&["ab", "c"])));
    }

    fn map(entries: &[(&str, &str)]) -> FileMap {
        entries
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn nothing_is_written_outside_the_output_folder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b/gen");
        for bad in [
            "surfaces/profiles/../../../../package.json",
            "/etc/x.json",
            "../x.json",
            "",
        ] {
            let files = map(&[("ok.json", "1\n"), (bad, "evil\n"), (MANIFEST, "m\n")]);
            let err = write(&out, &files, Ownership::Folder).unwrap_err();
            assert_eq!(err.code, Code::OutputIo, "{bad}");
            assert!(
                err.message.contains("would leave the output folder"),
                "{}",
                err.message
            );
            assert!(check(&out, &files, Ownership::Folder).is_err());
        }
        assert!(!out.exists(), "not even the good files were written");
        assert!(!dir.path().join("package.json").exists());
    }

    #[test]
    fn write_then_check_then_noop_then_orphan_removal() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("gen");
        let v1 = map(&[
            ("a.json", "1\n"),
            ("sub/b.md", "b\n"),
            (
                MANIFEST,
                &manifest(&[("a.json", "1\n"), ("sub/b.md", "b\n")]),
            ),
        ]);
        let r = write(&out, &v1, Ownership::Folder).unwrap();
        assert_eq!(r.written.len(), 3);
        assert_eq!(r.written.last().unwrap(), MANIFEST);
        assert!(check(&out, &v1, Ownership::Folder).unwrap().is_clean());
        assert_eq!(
            write(&out, &v1, Ownership::Folder).unwrap(),
            WriteReport {
                unchanged: 3,
                ..Default::default()
            }
        );
        let v2 = map(&[("a.json", "2\n"), (MANIFEST, r#"{"files":{"a.json":""}}"#)]);
        let r = write(&out, &v2, Ownership::Folder).unwrap();
        assert_eq!(r.written, vec!["a.json".to_string(), MANIFEST.to_string()]);
        assert_eq!(r.removed, vec!["sub/b.md".to_string()]);
        assert!(!out.join("sub").exists());
        // No staging leftovers.
        let names: Vec<_> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    /// The two states a kill can leave: staged but uncommitted (the old tree stands), and
    /// committed but not finished (the next run finishes it). Either way, no mix.
    #[test]
    fn an_interrupted_write_is_discarded_before_its_commit_and_finished_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("gen");
        let old = map(&[
            ("a.json", "old a\n"),
            ("b.json", "old b\n"),
            (MANIFEST, r#"{"files":{"a.json":"","b.json":""}}"#),
        ]);
        let new = map(&[
            ("a.json", "new a\n"),
            ("c/d.json", "new d\n"),
            (MANIFEST, r#"{"files":{"a.json":"","c/d.json":""}}"#),
        ]);
        write(&out, &old, Ownership::Folder).unwrap();
        let staging = out.join(STAGING);
        let stage_all = || {
            for (rel, text) in &new {
                fs::create_dir_all(staging.join(rel).parent().unwrap()).unwrap();
                fs::write(staging.join(rel), text).unwrap();
            }
        };

        // Killed while staging: check sees the old tree whole, and the staging folder goes.
        stage_all();
        assert!(check(&out, &old, Ownership::Folder).unwrap().is_clean());
        assert!(!staging.exists());

        // Killed after the commit, with one file already renamed: check finishes the write.
        stage_all();
        let journal =
            r#"{"replace":["a.json","c/d.json","toolreg.manifest.json"],"remove":["b.json"]}"#;
        fs::write(staging.join(JOURNAL), journal).unwrap();
        fs::rename(staging.join("a.json"), out.join("a.json")).unwrap();
        assert!(check(&out, &new, Ownership::Folder).unwrap().is_clean());
        assert!(!out.join("b.json").exists() && !staging.exists());

        // Leftovers of older versions are cleaned by the next write.
        fs::write(out.join(".a.json.toolreg-tmp"), "x").unwrap();
        fs::create_dir_all(out.join("c")).unwrap();
        fs::write(out.join("c/.d.json.toolreg-tmp"), "x").unwrap();
        write(&out, &new, Ownership::Folder).unwrap();
        assert!(!out.join(".a.json.toolreg-tmp").exists());
        assert!(!out.join("c/.d.json.toolreg-tmp").exists());
        assert!(!out.join(LOCK).exists(), "the lock file goes with the lock");
    }

    #[test]
    fn definitions_and_output_may_not_nest() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p");
        fs::create_dir_all(p.join("defs")).unwrap();
        for (defs, out, code) in [
            (p.join("defs"), p.clone(), true),
            (p.clone(), p.join("defs/gen"), true),
            (p.join("defs"), p.join("defs"), true),
            (p.join("defs"), p.join("./defs/../defs/new/x"), true),
            (p.join("defs"), p.join("gen"), false),
            (p.join("defs"), dir.path().join("p-gen"), false),
        ] {
            let r = ensure_apart(&defs, &out);
            assert_eq!(r.is_err(), code, "{defs:?} {out:?}");
            if let Err(d) = r {
                assert_eq!(d.code, Code::OutputOverlapsDefinitions);
            }
        }
    }

    /// A folder's files with a manifest that records their hashes, as `emit` writes it.
    fn with_manifest(entries: &[(&str, &str)]) -> FileMap {
        let mut files = map(entries);
        let hashes: BTreeMap<&String, String> = files
            .iter()
            .map(|(p, text)| (p, crate::emit::manifest_hash(text)))
            .collect();
        let manifest = serde_json::json!({ "files": hashes }).to_string();
        files.insert(MANIFEST.to_string(), manifest);
        files
    }

    #[test]
    fn write_trusts_a_changed_hash_and_reads_only_files_whose_hash_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("gen");
        let v1 = with_manifest(&[("a.txt", "one\n"), ("b.txt", "two\n"), ("c.txt", "three\n")]);
        write(&out, &v1, Ownership::Folder).unwrap();
        let v2 = with_manifest(&[
            ("a.txt", "one, new\n"),
            ("b.txt", "two\n"),
            ("c.txt", "three\n"),
        ]);
        // a.txt already holds its new text, but its recorded hash says it changed: written
        // without being read. b.txt's hash is unchanged, but it was edited since: read, found
        // different, written. c.txt is read and found as it should be: untouched.
        fs::write(out.join("a.txt"), "one, new\n").unwrap();
        fs::write(out.join("b.txt"), "edited by hand\n").unwrap();
        let r = write(&out, &v2, Ownership::Folder).unwrap();
        assert_eq!(r.written, ["a.txt", "b.txt", MANIFEST]);
        assert_eq!(r.unchanged, 1);
        for (rel, text) in &v2 {
            assert_eq!(&fs::read_to_string(out.join(rel)).unwrap(), text, "{rel}");
        }
        assert!(check(&out, &v2, Ownership::Folder).unwrap().is_clean());
    }

    #[test]
    fn crlf_on_disk_is_not_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let files = map(&[("a.txt", "x\ny\n"), (MANIFEST, "m\n")]);
        write(dir.path(), &files, Ownership::Folder).unwrap();
        fs::write(dir.path().join("a.txt"), "x\r\ny\r\n").unwrap();
        assert!(check(dir.path(), &files, Ownership::Folder)
            .unwrap()
            .is_clean());
    }

    /// A write forgives line endings as check does, and only them: a CRLF copy of the same
    /// text is left alone, a CRLF file with other changes is rewritten, and so is a file that
    /// differs with no CR at all (compared as bytes, never decoded).
    #[test]
    fn write_rewrites_what_differs_beyond_line_endings() {
        let dir = tempfile::tempdir().unwrap();
        let files = map(&[
            ("a.txt", "x\ny\n"),
            ("b.txt", "x\ny\n"),
            ("c.txt", "x\ny\n"),
            (MANIFEST, "m\n"),
        ]);
        write(dir.path(), &files, Ownership::Folder).unwrap();
        fs::write(dir.path().join("a.txt"), "x\r\ny\r\n").unwrap();
        fs::write(dir.path().join("b.txt"), "x\r\nz\r\n").unwrap();
        fs::write(dir.path().join("c.txt"), "x\nz\n").unwrap();
        let report = write(dir.path(), &files, Ownership::Folder).unwrap();
        assert_eq!(
            report.written,
            vec!["b.txt".to_string(), "c.txt".to_string()]
        );
        assert_eq!(report.unchanged, 2);
        assert_eq!(
            fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "x\r\ny\r\n"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("c.txt")).unwrap(),
            "x\ny\n"
        );
    }

    #[test]
    fn foreign_folder_is_refused_and_untouched() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("mine.txt"), "keep").unwrap();
        let err = write(dir.path(), &map(&[("a", "1")]), Ownership::Folder).unwrap_err();
        assert_eq!(err.code, Code::OutputNotOwned);
        assert_eq!(
            fs::read_to_string(dir.path().join("mine.txt")).unwrap(),
            "keep"
        );
        assert!(!dir.path().join("a").exists());
    }

    #[test]
    fn manifest_mode_leaves_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("other.rs"), "user").unwrap();
        let v1 = map(&[
            ("a", "1"),
            (MANIFEST, &manifest(&[("a", "1"), ("old", "stale")])),
        ]);
        write(dir.path(), &v1, Ownership::Manifest).unwrap();
        fs::write(dir.path().join("old"), "stale").unwrap();
        let v2 = map(&[("a", "1"), (MANIFEST, r#"{"files":{"a":"x"}}"#)]);
        let r = write(dir.path(), &v2, Ownership::Manifest).unwrap();
        assert_eq!(r.removed, vec!["old".to_string()]);
        assert!(dir.path().join("other.rs").exists());
    }

    /// A file the manifest lists that became a link is neither removed by `write` nor passed
    /// over by `check`, which reports it as foreign.
    #[cfg(unix)]
    #[test]
    fn a_listed_file_turned_link_is_kept_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = map(&[
            ("a", "1"),
            ("old", "stale"),
            (MANIFEST, &manifest(&[("a", "1"), ("old", "stale")])),
        ]);
        write(dir.path(), &v1, Ownership::Folder).unwrap();
        let target = dir.path().join("elsewhere");
        fs::write(&target, "not toolreg's").unwrap();
        fs::remove_file(dir.path().join("old")).unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("old")).unwrap();
        let v2 = map(&[("a", "1"), (MANIFEST, &manifest(&[("a", "1")]))]);
        let r = check(dir.path(), &v2, Ownership::Folder).unwrap();
        assert!(r.extra.is_empty(), "{:?}", r.extra);
        assert!(r.foreign.contains(&"old".to_string()), "{:?}", r.foreign);
        let w = write(dir.path(), &v2, Ownership::Folder).unwrap();
        assert!(w.removed.is_empty(), "{:?}", w.removed);
        assert!(fs::symlink_metadata(dir.path().join("old"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "not toolreg's");
    }

    /// A manifest listing `files` with the hashes toolreg records.
    fn manifest(files: &[(&str, &str)]) -> String {
        let listed: BTreeMap<&str, String> = files
            .iter()
            .map(|(p, c)| (*p, content_hash(c.as_bytes())))
            .collect();
        serde_json::json!({ "files": listed }).to_string()
    }

    #[test]
    fn readers_look_for_the_journal_where_the_writer_puts_it() {
        assert_eq!(
            format!("{STAGING}/{JOURNAL}"),
            crate::model::registry::COMMIT_JOURNAL
        );
    }

    #[test]
    fn first_diff_names_the_line() {
        let d = first_diff("a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(
            (d.line, d.expected.as_deref(), d.actual.as_deref()),
            (2, Some("b"), Some("B"))
        );
        let d = first_diff("a\n", "a\nextra\n");
        assert_eq!(
            (d.line, d.expected, d.actual.as_deref()),
            (2, None, Some("extra"))
        );
    }
}
