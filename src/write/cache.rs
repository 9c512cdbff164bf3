//! The build cache, kept inside the output folder in `.toolreg-cache/` (hidden, so no check,
//! build or publish step counts it as output; it holds a `.gitignore` of `*` and a
//! `CACHEDIR.TAG`, so it is never committed or backed up):
//!
//! - `memo.bin`: the [`Memo`] of per-op steps (one op's Rust types, help and docs pages, one
//!   text's token count, one text's poisoning screen), so a rebuild after a change recomputes
//!   only what the change touched;
//! - `build.json`: the last successful build's [`BuildRecord`]: the fingerprint of everything
//!   that shapes the output (every definitions file, the options, the templates, this toolreg
//!   binary) and what the build said. When the fingerprint is the same and every file the
//!   folder's manifest lists still hashes to what was written, the build is already done: the
//!   CLI says what it said then and writes nothing. Once a no-change build has read every file
//!   and found it as written, the record also keeps a digest of the files' stat identity
//!   ([`stat_identity`]); while that digest holds, the next no-change build reads no file at
//!   all.
//!
//! Nothing here is trusted without its digest: the record only answers for the exact
//! fingerprint and manifest it names, and the memo checks each segment (see [`Memo`]). A cache
//! that cannot be read, or a `.toolreg-cache` that is a link or a file, is ignored (the build
//! runs in full) and never written through.
//!
//! Why it is one file: what a no-change build may trust (the record, the files' identity, the
//! memo's file beside them) is one argument, read top to bottom; about 180 of its lines are
//! tests.

use crate::compiler::memo::{Memo, MemoFile};
use crate::emit::{manifest_hash, Emitter, MANIFEST};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

pub use super::output::CACHE_DIR;
const MEMO_FILE: &str = "memo.bin";
const RECORD_FILE: &str = "build.json";
/// Bumped when the record's meaning or layout changes (2: a head line before the record).
const RECORD_FORMAT: u32 = 2;

/// This toolreg binary: its version, and the path, size and modification time of the running
/// executable, so a rebuilt toolreg (same version, other code) never reads another's cache.
pub fn binary_identity() -> String {
    let exe = std::env::current_exe().ok();
    let meta = exe.as_ref().and_then(|p| fs::metadata(p).ok());
    let modified = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos());
    format!(
        "{} {} {:?} {:?} {:?}",
        crate::model::registry::GENERATOR,
        env!("CARGO_PKG_VERSION"),
        exe,
        meta.map(|m| m.len()),
        modified
    )
}

/// The longest first line of `build.json` read (a format and a fingerprint's digest take under
/// 200 bytes): a file without a line break that soon is no record.
const RECORD_HEAD_MAX: u64 = 4096;

/// `build.json`'s first line: which build its record is of.
#[derive(Serialize, Deserialize)]
struct RecordHead {
    format: u32,
    fingerprint: String,
}

/// What a successful build said, replayed when nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    pub format: u32,
    /// [`fingerprint`] of the build's inputs.
    pub fingerprint: String,
    /// The hash of the manifest it wrote (as the manifest hashes files).
    pub manifest: String,
    /// The hash of `toolreg.lock` after the build, when the build keeps one.
    pub lock: Option<String>,
    /// The diagnostics as text, as brief text and as JSON lines.
    pub diagnostics_text: String,
    pub diagnostics_brief: String,
    pub diagnostics_json: String,
    pub ops: usize,
    pub groups: usize,
    pub registry_version: String,
    /// Files the manifest lists, itself included.
    pub files: usize,
    /// The quarantine line, if any.
    pub quarantined: Option<String>,
    /// The stat identity of the files the manifest lists ([`stat_identity`]), taken before a
    /// no-change build read every one of them and found it as written. Absent in a build's own
    /// record (the files are too fresh for their times to tell an edit: see [`SETTLED`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
}

/// How long after its last change a file's times are trusted to show the next one. A file's
/// times tick coarsely (every few milliseconds on Linux), so an edit of the same length within
/// the tick of toolreg's own write could leave size and times as they were; git calls such a
/// file racily clean. Files younger than this are always read.
pub const SETTLED: std::time::Duration = std::time::Duration::from_secs(2);

/// The cache of one output folder.
pub struct BuildCache {
    dir: PathBuf,
}

impl BuildCache {
    pub fn for_output(out: &Path) -> BuildCache {
        BuildCache {
            dir: out.join(CACHE_DIR),
        }
    }

    /// Usable: absent, or a real folder (not a link, not a file).
    fn usable(&self) -> bool {
        match fs::symlink_metadata(&self.dir) {
            Ok(m) => m.file_type().is_dir(),
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }

    /// `name` in the cache folder, when it is a plain file in a usable folder.
    fn file(&self, name: &str) -> Option<PathBuf> {
        let path = self.dir.join(name);
        let meta = fs::symlink_metadata(&path).ok()?;
        (self.usable() && meta.file_type().is_file()).then_some(path)
    }

    /// Whether an earlier build by this binary left its memo here (by the file's head; whether
    /// its entries are whole is known once they are read): the build is a rebuild.
    pub fn holds_memo(&self) -> bool {
        use std::io::Read as _;
        let mut head = [0u8; crate::compiler::memo::HEAD_LEN];
        self.file(MEMO_FILE)
            .and_then(|p| fs::File::open(p).ok())
            .is_some_and(|mut f| f.read_exact(&mut head).is_ok())
            && crate::compiler::memo::is_head_of(&binary_identity(), &head)
    }

    /// The memo of earlier builds by this binary (empty when there is none), spilling what this
    /// build computes (see [`Memo::spilling`]). Its file is read and checked in the background
    /// ([`Memo::read_in_background`]): the compile starts meanwhile.
    pub fn memo(&self) -> Memo {
        let cache = BuildCache {
            dir: self.dir.clone(),
        };
        Memo::read_in_background(&binary_identity(), move || {
            MemoFile::open(&cache.file(MEMO_FILE)?)
        })
        .spilling()
    }

    /// The last build's record, when it reads and has this format.
    pub fn record(&self) -> Option<BuildRecord> {
        self.record_of(None)
    }

    /// [`record`](Self::record), when it is the record of a build with this `fingerprint`.
    /// The file's first line names the record's format and fingerprint: the rest (what the
    /// build said, 12.8 MB on ToolSDK's 8,010 tools) is decoded only for a build that matches,
    /// not by every build that compiles (a twentieth of a one-tool rebuild there), and then once.
    pub fn record_for(&self, fingerprint: &str) -> Option<BuildRecord> {
        self.record_of(Some(fingerprint))
    }

    fn record_of(&self, fingerprint: Option<&str>) -> Option<BuildRecord> {
        use std::io::{BufRead as _, Read as _};
        // The head line alone is read first: a build that compiles reads no more of the file
        // (reading it whole was 24 ms of every rebuild of ToolSDK's catalog).
        let mut file = std::io::BufReader::new(fs::File::open(self.file(RECORD_FILE)?).ok()?);
        let mut head = Vec::new();
        file.by_ref()
            .take(RECORD_HEAD_MAX)
            .read_until(b'\n', &mut head)
            .ok()?;
        let head = serde_json::from_slice::<RecordHead>(head.strip_suffix(b"\n")?).ok()?;
        if head.format != RECORD_FORMAT || fingerprint.is_some_and(|f| f != head.fingerprint) {
            return None;
        }
        let mut record = Vec::new();
        file.read_to_end(&mut record).ok()?;
        // The record must be the one its head names.
        serde_json::from_slice::<BuildRecord>(&record)
            .ok()
            .filter(|r| r.format == head.format && r.fingerprint == head.fingerprint)
    }

    /// `build.json`'s bytes: the head line, then the record.
    fn record_bytes(record: &BuildRecord) -> Vec<u8> {
        let head = RecordHead {
            format: record.format,
            fingerprint: record.fingerprint.clone(),
        };
        let mut out = serde_json::to_vec(&head).expect("a head serializes");
        out.push(b'\n');
        serde_json::to_writer_pretty(&mut out, record).expect("a record serializes");
        out
    }

    /// Replaces the record alone (a no-change build that adds the files' [`stat_identity`]).
    /// Best effort, like `save`.
    pub fn save_record(&self, record: &BuildRecord) {
        if !self.usable() || !self.dir.is_dir() {
            return;
        }
        let _ = self.put(RECORD_FILE, &Self::record_bytes(record));
    }

    /// Saves the memo (when it changed) and the record (or removes a stale one). Best effort: a
    /// cache that cannot be written costs the next build time, never correctness.
    pub fn save(&self, memo: Option<&Memo>, record: Option<&BuildRecord>) {
        // Never creates the output folder itself (a build that wrote nothing leaves none).
        let made = fs::create_dir(&self.dir);
        if !self.usable() || made.is_err_and(|e| e.kind() != std::io::ErrorKind::AlreadyExists) {
            return;
        }
        let _ = self.put(
            ".gitignore",
            b"# toolreg's build cache: never commit it\n*\n",
        );
        let _ = self.put(
            "CACHEDIR.TAG",
            b"Signature: 8a477f597d28d172789f06886806bc55\n# toolreg's build cache (https://bford.info/cachedir/)\n",
        );
        if let Some(memo) = memo {
            let s = memo.stats();
            let saved = fs::symlink_metadata(self.dir.join(MEMO_FILE)).is_ok_and(|m| m.is_file());
            if s.misses > 0 || s.rejected > 0 || !saved {
                // A few new entries are appended; a file to compact or replace is written anew.
                let appended = saved
                    && memo
                        .appendix()
                        .is_some_and(|tail| self.append(MEMO_FILE, &tail).is_ok());
                if !appended {
                    let _ = self.put_with(MEMO_FILE, |w| memo.write_to(w));
                }
            }
        }
        match record {
            Some(r) => {
                let _ = self.put(RECORD_FILE, &Self::record_bytes(r));
            }
            None => {
                let _ = fs::remove_file(self.dir.join(RECORD_FILE));
            }
        }
    }

    /// Writes what `write` makes beside, then renames, so a reader sees the old file or the
    /// new one.
    fn put_with(
        &self,
        name: &str,
        write: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let tmp = self.dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = fs::File::create(&tmp).and_then(|f| {
            let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
            write(&mut w)?;
            std::io::Write::flush(&mut w)
        });
        written
            .and_then(|()| fs::rename(&tmp, self.dir.join(name)))
            .inspect_err(|_| {
                let _ = fs::remove_file(&tmp);
            })
    }

    /// Adds `bytes` at the end of the file `name` in one write (a file, never a link, never
    /// created). A write cut short leaves a torn tail, which the next read drops.
    fn append(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(name);
        if !fs::symlink_metadata(&path)?.is_file() {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        let mut file = fs::OpenOptions::new().append(true).open(path)?;
        std::io::Write::write_all(&mut file, bytes)
    }

    /// `put_with` of `bytes`, unless the file already holds them.
    fn put(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.dir.join(name);
        let same_size = fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64);
        if same_size && fs::read(&path).is_ok_and(|old| old == bytes) {
            return Ok(());
        }
        self.put_with(name, |w| std::io::Write::write_all(w, bytes))
    }
}

/// Every option of a build that shapes its output or what it says.
pub struct BuildInputs<'a> {
    pub definitions: &'a Path,
    pub out: &'a Path,
    pub emitters: &'a [Emitter],
    pub strict: bool,
    /// `--lock`: keep `toolreg.lock` even without an overlay.
    pub lock: bool,
    pub templates: Option<&'a Path>,
    /// The sentence-transformer folder of the vectors emitter (its files are named by path,
    /// size and modification time: hashing a model's weights would cost more than a build).
    pub model: Option<&'a Path>,
}

/// A blake3 over everything `inputs` names: the options, this binary, and every file of the
/// definitions folder as the compiler reads it (hidden entries skipped, links followed;
/// `toolreg.lock` aside, which the build writes and the record pins), and of the templates
/// folder. `None` when something cannot be read: the build then runs in full.
pub fn fingerprint(inputs: &BuildInputs<'_>) -> Option<String> {
    let mut h = blake3::Hasher::new();
    let field = |h: &mut blake3::Hasher, bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(&mut h, binary_identity().as_bytes());
    field(&mut h, inputs.definitions.to_string_lossy().as_bytes());
    field(&mut h, inputs.out.to_string_lossy().as_bytes());
    let names: Vec<&str> = inputs.emitters.iter().map(|e| e.name()).collect();
    field(&mut h, names.join(",").as_bytes());
    field(&mut h, &[u8::from(inputs.strict), u8::from(inputs.lock)]);
    field(
        &mut h,
        std::env::var("TOOLREG_MODEL_MAX_MB")
            .unwrap_or_default()
            .as_bytes(),
    );
    tree(&mut h, inputs.definitions, true, true)?;
    match inputs.templates {
        Some(t) => tree(&mut h, t, true, false)?,
        None => field(&mut h, b"no templates"),
    }
    match inputs.model {
        Some(m) => tree(&mut h, m, false, false)?,
        None => field(&mut h, b"no model"),
    }
    Some(format!("b3:{}", h.finalize().to_hex()))
}

/// Adds a folder's files to `h`: relative path, then contents (or size and modification time).
fn tree(h: &mut blake3::Hasher, root: &Path, contents: bool, definitions: bool) -> Option<()> {
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    h.update(b"tree");
    // Each file's relative path, and its size for a batch of reads.
    let mut files: Vec<(PathBuf, String, u64)> = Vec::new();
    for entry in walker {
        let entry = entry.ok()?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry.path().strip_prefix(root).ok()?.to_string_lossy();
        if definitions && rel == crate::trust::lock::LOCK_FILE {
            continue;
        }
        let rel = rel.into_owned();
        if contents {
            let size = entry.metadata().map_or(0, |m| m.len());
            files.push((entry.into_path(), rel, size));
            continue;
        }
        h.update(&(rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        let meta = entry.metadata().ok()?;
        let modified = meta.modified().ok()?;
        h.update(format!("{} {modified:?}", meta.len()).as_bytes());
    }
    // Contents are read on every core, a batch of files at a time (a build reads its
    // definitions this way twice: before, and after to see they did not change while it ran),
    // and hashed in walk order.
    for batch in crate::compiler::parallel::batches(&files, |f| f.2, TREE_BATCH_BYTES) {
        let read = crate::compiler::parallel::map_in_order(batch, |(path, _, _)| fs::read(path));
        for ((_, rel, _), bytes) in batch.iter().zip(read) {
            let bytes = bytes.ok()?;
            h.update(&(rel.len() as u64).to_le_bytes());
            h.update(rel.as_bytes());
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(&bytes);
        }
    }
    Some(())
}

/// How many bytes of files [`tree`] reads at once, at most (one larger file alone): a no-change
/// build holds little else, and at 32 MiB its peak grew by the whole catalog (25 -> 35 MB at
/// 10,000 tools).
const TREE_BATCH_BYTES: u64 = 4 << 20;

/// What [`output_state`] found in the output folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputState {
    /// Exactly the build the record describes. `seen`: the files' stat identity, when they are
    /// old enough for it to tell the next edit ([`stat_identity`]); the record should keep it.
    /// `read`: whether the files were read to know it (false: the record's identity held).
    AsWritten { seen: Option<String>, read: bool },
    /// Anything else: the build must run.
    Changed,
}

/// Whether `out` holds exactly the build `record` describes: its manifest is the one written,
/// and every file the manifest lists is a plain file whose bytes hash as recorded. When the
/// record holds the files' stat identity and it is unchanged, no file but the manifest is read;
/// otherwise every file is hashed, on every core.
pub fn output_state(out: &Path, record: &BuildRecord) -> OutputState {
    output_state_at(out, record, std::time::SystemTime::now())
}

fn output_state_at(out: &Path, record: &BuildRecord, now: std::time::SystemTime) -> OutputState {
    let Ok(text) = fs::read_to_string(out.join(MANIFEST)) else {
        return OutputState::Changed;
    };
    if manifest_hash(&text) != record.manifest {
        return OutputState::Changed;
    }
    let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else {
        return OutputState::Changed;
    };
    let Some(files) = manifest.get("files").and_then(|f| f.as_object()) else {
        return OutputState::Changed;
    };
    if files.len() + 1 != record.files {
        return OutputState::Changed;
    }
    let listed: Vec<(&String, &serde_json::Value)> = files.iter().collect();
    // Taken before any file is read: an edit after this point changes the identity, so what
    // the content check then vouches for is never a state later than the one recorded.
    let seen = stat_identity(out, listed.iter().map(|(rel, _)| rel.as_str()), now);
    if seen.is_some() && seen == record.seen {
        return OutputState::AsWritten { seen, read: false };
    }
    let as_written = crate::compiler::parallel::map_in_order(&listed, |(rel, want)| {
        // The manifest hashes text with line endings as written; a checkout that rewrote them
        // is not the build's output byte for byte: rebuild.
        super::output::is_plain_file(out, rel)
            && file_hash(&out.join(rel.as_str())).is_some_and(|hash| want.as_str() == Some(&hash))
    })
    .into_iter()
    .all(|ok| ok);
    if as_written {
        OutputState::AsWritten { seen, read: true }
    } else {
        OutputState::Changed
    }
}

/// The manifest hash of the file at `path`, read in pieces. Reading each file whole cost a
/// fresh allocation per file, faulted in and zeroed by the kernel: most of the CPU of a
/// no-change rebuild run right after a build (230 MB of output at 10,000 tools, every file
/// hashed since none has settled yet).
fn file_hash(path: &Path) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    crate::emit::manifest_hash_of_reader(file).ok()
}

/// A digest of the stat identity of `files` (paths relative to `out`), as git's index keeps one
/// per file: for each file its device, inode, length, and modification and change times; for
/// each folder above one, its device and inode. A file edited, replaced, moved or touched, or a
/// folder swapped for a link or another folder, changes it; rewriting a file's modification
/// time back does not hide an edit, since the change time cannot be set (only the clock sets
/// it). `None` when a file is missing, is not a plain file, or changed within [`SETTLED`] of
/// `now` (or later: a clock set back), or on a platform without inodes and change times.
pub fn stat_identity<'a>(
    out: &Path,
    files: impl Iterator<Item = &'a str>,
    now: std::time::SystemTime,
) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let settled = now.checked_sub(SETTLED)?;
        let settled_ns = settled
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos() as i128;
        let nanos = |s: i64, ns: i64| i128::from(s) * 1_000_000_000 + i128::from(ns);
        let mut h = blake3::Hasher::new();
        let mut folders = std::collections::BTreeSet::new();
        for rel in files {
            let m = fs::symlink_metadata(out.join(rel)).ok()?;
            let changed = nanos(m.ctime(), m.ctime_nsec());
            let modified = nanos(m.mtime(), m.mtime_nsec());
            if !m.is_file() || changed >= settled_ns || modified >= settled_ns {
                return None;
            }
            h.update(rel.as_bytes());
            h.update(&[0]);
            for n in [m.dev(), m.ino(), m.len()] {
                h.update(&n.to_le_bytes());
            }
            for t in [modified, changed] {
                h.update(&t.to_le_bytes());
            }
            let mut at = rel;
            while let Some((parent, _)) = at.rsplit_once('/') {
                if !folders.insert(parent) {
                    break;
                }
                at = parent;
            }
        }
        for folder in folders {
            let m = fs::symlink_metadata(out.join(folder)).ok()?;
            if !m.is_dir() {
                return None;
            }
            h.update(folder.as_bytes());
            h.update(&[1]);
            for n in [m.dev(), m.ino()] {
                h.update(&n.to_le_bytes());
            }
        }
        Some(format!("b3:{}", h.finalize().to_hex()))
    }
    #[cfg(not(unix))]
    {
        let _ = (out, files.count(), now);
        None
    }
}

/// The hash `BuildRecord::lock` holds for the definitions folder's lock as it is now.
pub fn lock_hash(definitions: &Path) -> Option<String> {
    fs::read_to_string(definitions.join(crate::trust::lock::LOCK_FILE))
        .ok()
        .map(|t| manifest_hash(&t))
}

/// What a build said, in the three forms a no-change build may replay it: rendered apart from
/// the record (`toolreg build` renders them while it writes its outputs: at ToolSDK's 8,010
/// tools, 12.8 MB of findings, that took 30 ms the build otherwise waited for at its end).
pub struct Said {
    text: String,
    brief: String,
    json: String,
}

impl Said {
    pub fn of(diagnostics: &crate::model::diag::Diagnostics) -> Said {
        Said {
            text: diagnostics.render_text(),
            brief: diagnostics.render_text_brief(),
            json: diagnostics.render_json_lines(),
        }
    }
}

impl BuildRecord {
    /// A record in this format.
    pub fn new(
        fingerprint: String,
        manifest_text: &str,
        lock: Option<String>,
        said: Said,
        registry: &crate::model::registry::Registry,
        files: usize,
        quarantined: Option<String>,
    ) -> BuildRecord {
        BuildRecord {
            format: RECORD_FORMAT,
            fingerprint,
            manifest: manifest_hash(manifest_text),
            lock,
            diagnostics_text: said.text,
            diagnostics_brief: said.brief,
            diagnostics_json: said.json,
            ops: registry.counts.ops,
            groups: registry.counts.groups,
            registry_version: registry.registry_version.clone(),
            files,
            quarantined,
            seen: None,
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    /// A folder as a build leaves it: two files and the manifest listing them (with `claims`
    /// as `a.txt`'s hash), and a record of it.
    fn folder(claims: Option<&str>) -> (tempfile::TempDir, BuildRecord) {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        fs::create_dir(out.join("sub")).unwrap();
        fs::write(out.join("a.txt"), "alpha\n").unwrap();
        fs::write(out.join("sub/b.txt"), "beta\n").unwrap();
        let a = claims.map_or_else(|| manifest_hash("alpha\n"), str::to_owned);
        let manifest =
            serde_json::json!({"files": {"a.txt": a, "sub/b.txt": manifest_hash("beta\n")}});
        let text = serde_json::to_string_pretty(&manifest).unwrap();
        fs::write(out.join(MANIFEST), &text).unwrap();
        let record = BuildRecord {
            format: RECORD_FORMAT,
            fingerprint: "f".into(),
            manifest: manifest_hash(&text),
            lock: None,
            diagnostics_text: String::new(),
            diagnostics_brief: String::new(),
            diagnostics_json: String::new(),
            ops: 0,
            groups: 0,
            registry_version: String::new(),
            files: 3,
            quarantined: None,
            seen: None,
        };
        (dir, record)
    }

    #[test]
    fn a_record_is_decoded_only_for_its_own_fingerprint() {
        let (dir, record) = folder(None);
        let cache = BuildCache::for_output(dir.path());
        fs::create_dir(dir.path().join(CACHE_DIR)).unwrap();
        cache.save_record(&record);
        assert_eq!(cache.record_for("f"), Some(record.clone()));
        assert_eq!(cache.record(), Some(record.clone()));
        assert_eq!(cache.record_for("another build"), None);
        // Another format is never read, whatever its fingerprint.
        let old = BuildRecord {
            format: RECORD_FORMAT + 1,
            ..record.clone()
        };
        cache.save_record(&old);
        assert_eq!(cache.record_for("f"), None);
        assert_eq!(cache.record(), None);
        // A head that names another record than the one after it: not read.
        let other = BuildRecord {
            fingerprint: "g".into(),
            ..record.clone()
        };
        let mut bytes = BuildCache::record_bytes(&record);
        let body = BuildCache::record_bytes(&other);
        let at = bytes.iter().position(|&b| b == b'\n').unwrap();
        let body_at = body.iter().position(|&b| b == b'\n').unwrap();
        bytes.truncate(at);
        bytes.extend_from_slice(&body[body_at..]);
        fs::write(dir.path().join(CACHE_DIR).join(RECORD_FILE), &bytes).unwrap();
        assert_eq!(cache.record_for("f"), None);
        assert_eq!(cache.record_for("g"), None);
        // A record without its head line (an earlier layout): not read.
        let pretty = serde_json::to_vec_pretty(&record).unwrap();
        fs::write(dir.path().join(CACHE_DIR).join(RECORD_FILE), &pretty).unwrap();
        assert_eq!(cache.record_for("f"), None);
        // A head line padded past the longest read: not read; a head with no record after it,
        // or one cut short: not read.
        let file = dir.path().join(CACHE_DIR).join(RECORD_FILE);
        let whole = BuildCache::record_bytes(&record);
        let at = whole.iter().position(|&b| b == b'\n').unwrap();
        let mut padded = whole[..at - 1].to_vec();
        padded.extend(std::iter::repeat_n(b' ', RECORD_HEAD_MAX as usize));
        padded.extend_from_slice(&whole[at - 1..]);
        for bytes in [&padded[..], &whole[..=at], &whole[..whole.len() - 2]] {
            fs::write(&file, bytes).unwrap();
            assert_eq!(cache.record_for("f"), None);
        }
        // Padded within the longest read, the same record reads.
        let mut near = whole[..at - 1].to_vec();
        near.extend(std::iter::repeat_n(b' ', RECORD_HEAD_MAX as usize - at - 1));
        near.extend_from_slice(&whole[at - 1..]);
        fs::write(&file, &near).unwrap();
        assert_eq!(cache.record_for("f"), Some(record.clone()));
        cache.save_record(&record);
        assert_eq!(cache.record_for("f"), Some(record));
    }

    /// Later than every file of a folder made now, by more than [`SETTLED`].
    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(10)
    }

    fn seen_now(out: &Path, at: SystemTime) -> Option<String> {
        stat_identity(out, ["a.txt", "sub/b.txt"].into_iter(), at)
    }

    #[test]
    fn fresh_files_are_read_and_settled_ones_give_their_identity() {
        let (dir, record) = folder(None);
        // Just written: too fresh for their times to show an edit of the same tick.
        assert_eq!(seen_now(dir.path(), SystemTime::now()), None);
        assert_eq!(
            output_state_at(dir.path(), &record, SystemTime::now()),
            OutputState::AsWritten {
                seen: None,
                read: true
            }
        );
        let at = later();
        let seen = seen_now(dir.path(), at);
        assert!(seen.is_some());
        assert_eq!(
            output_state_at(dir.path(), &record, at),
            OutputState::AsWritten {
                seen: seen.clone(),
                read: true
            }
        );
        assert_eq!(
            seen_now(dir.path(), at),
            seen,
            "the same folder, the same digest"
        );
    }

    #[test]
    fn an_unchanged_identity_reads_no_file_and_any_edit_is_read_again() {
        // The manifest claims another text for a.txt: only reading it can tell.
        let (dir, mut record) = folder(Some("b3:0000000000000000"));
        let out = dir.path();
        let at = later();
        assert_eq!(output_state_at(out, &record, at), OutputState::Changed);
        record.seen = seen_now(out, at);
        assert!(record.seen.is_some());
        // The identity the record holds: the files are not read (the claim is not caught).
        assert_eq!(
            output_state_at(out, &record, at),
            OutputState::AsWritten {
                seen: record.seen.clone(),
                read: false
            }
        );

        // The same length, written back with its old modification time: the change time
        // still moves, so the identity differs and every file is read again.
        let (dir, mut record) = folder(None);
        let out = dir.path();
        record.seen = seen_now(out, at);
        let file = out.join("sub/b.txt");
        let modified = fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        fs::write(&file, "bet4\n").unwrap();
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), modified);
        assert_ne!(seen_now(out, at), record.seen);
        assert_eq!(output_state_at(out, &record, at), OutputState::Changed);
    }

    #[test]
    fn a_folder_swapped_for_a_link_to_the_same_files_is_not_the_folder_written() {
        let (dir, mut record) = folder(None);
        let out = dir.path();
        let at = later();
        record.seen = seen_now(out, at);
        // The files keep their inodes and times; only the folder above them changed.
        fs::rename(out.join("sub"), out.join("moved")).unwrap();
        std::os::unix::fs::symlink("moved", out.join("sub")).unwrap();
        assert_eq!(seen_now(out, at), None);
        assert_eq!(output_state_at(out, &record, at), OutputState::Changed);
    }

    /// A build is a rebuild once this binary saved a memo, and only then: not in a new folder,
    /// nor in one whose memo another binary wrote, is empty or is not a plain file.
    #[test]
    fn a_folder_holds_a_memo_once_this_binary_saved_one() {
        let dir = tempfile::tempdir().unwrap();
        let cache = BuildCache::for_output(dir.path());
        assert!(!cache.holds_memo());
        let file = dir.path().join(CACHE_DIR).join(MEMO_FILE);
        for (salt, ours) in [("another toolreg", false), (&*binary_identity(), true)] {
            let memo = Memo::new(salt);
            memo.get_or_compute("step", b"input", || "text".to_string());
            let _ = fs::remove_file(&file);
            cache.save(Some(&memo), None);
            assert!(file.is_file());
            assert_eq!(cache.holds_memo(), ours, "{salt}");
        }
        let saved = fs::read(&file).unwrap();
        fs::write(&file, b"").unwrap();
        assert!(!cache.holds_memo());
        fs::remove_file(&file).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::write(&elsewhere, saved).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        assert!(!cache.holds_memo());
    }
}
