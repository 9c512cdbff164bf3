//! The build cache, kept inside the output folder in `.toolreg-cache/` (hidden, so no check,
//! build or publish step counts it as output; it holds a `.gitignore` of `*` and a
//! `CACHEDIR.TAG`, so it is never committed or backed up):
//!
//! - `memo.bin`: the [`Memo`] of per-op steps (one op's Rust types, help and docs pages, one
//!   text's token count), so a rebuild after a change recomputes only what the change touched;
//! - `build.json`: the last successful build's [`BuildRecord`]: the fingerprint of everything
//!   that shapes the output (every definitions file, the options, the templates, this toolreg
//!   binary) and what the build said. When the fingerprint is the same and every file the
//!   folder's manifest lists still hashes to what was written, the build is already done: the
//!   CLI says what it said then and writes nothing.
//!
//! Nothing here is trusted without its digest: the record only answers for the exact
//! fingerprint and manifest it names, and the memo checks each entry (see [`Memo`]). A cache
//! that cannot be read, or a `.toolreg-cache` that is a link or a file, is ignored (the build
//! runs in full) and never written through.

use crate::compiler::memo::Memo;
use crate::emit::{manifest_hash, Emitter, MANIFEST};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

pub use super::output::CACHE_DIR;
const MEMO_FILE: &str = "memo.bin";
const RECORD_FILE: &str = "build.json";
/// Bumped when the record's meaning changes.
const RECORD_FORMAT: u32 = 1;

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
        crate::registry::GENERATOR,
        env!("CARGO_PKG_VERSION"),
        exe,
        meta.map(|m| m.len()),
        modified
    )
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
}

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

    fn read(&self, name: &str) -> Option<Vec<u8>> {
        let path = self.dir.join(name);
        let meta = fs::symlink_metadata(&path).ok()?;
        (self.usable() && meta.file_type().is_file())
            .then(|| fs::read(&path).ok())
            .flatten()
    }

    /// The memo of earlier builds by this binary (empty when there is none).
    pub fn memo(&self) -> Memo {
        let salt = binary_identity();
        match self.read(MEMO_FILE) {
            Some(bytes) => Memo::read(&salt, &bytes),
            None => Memo::new(&salt),
        }
    }

    /// The last build's record, when it reads and has this format.
    pub fn record(&self) -> Option<BuildRecord> {
        let bytes = self.read(RECORD_FILE)?;
        serde_json::from_slice::<BuildRecord>(&bytes)
            .ok()
            .filter(|r| r.format == RECORD_FORMAT)
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
                let _ = self.put_with(MEMO_FILE, |w| memo.write_to(w));
            }
        }
        match record {
            Some(r) => {
                let text = serde_json::to_vec_pretty(r).expect("a record serializes");
                let _ = self.put(RECORD_FILE, &text);
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
    for entry in walker {
        let entry = entry.ok()?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry.path().strip_prefix(root).ok()?.to_string_lossy();
        if definitions && rel == crate::trust::lock::LOCK_FILE {
            continue;
        }
        h.update(&(rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        if contents {
            let bytes = fs::read(entry.path()).ok()?;
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(&bytes);
        } else {
            let meta = entry.metadata().ok()?;
            let modified = meta.modified().ok()?;
            h.update(format!("{} {modified:?}", meta.len()).as_bytes());
        }
    }
    Some(())
}

/// Whether `out` holds exactly the build `record` describes: its manifest is the one written,
/// and every file the manifest lists is a plain file whose bytes hash as recorded. Files are
/// hashed on every core.
pub fn output_matches(out: &Path, record: &BuildRecord) -> bool {
    let Ok(text) = fs::read_to_string(out.join(MANIFEST)) else {
        return false;
    };
    if manifest_hash(&text) != record.manifest {
        return false;
    }
    let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    let Some(files) = manifest.get("files").and_then(|f| f.as_object()) else {
        return false;
    };
    if files.len() + 1 != record.files {
        return false;
    }
    let listed: Vec<(&String, &serde_json::Value)> = files.iter().collect();
    crate::compiler::parallel::map_in_order(&listed, |(rel, want)| {
        super::output::is_plain_file(out, rel)
            && fs::read(out.join(rel.as_str())).is_ok_and(|bytes| {
                // The manifest hashes text with line endings as written; a checkout that
                // rewrote them is not the build's output byte for byte: rebuild.
                want.as_str() == Some(crate::emit::manifest_hash_of_bytes(&bytes).as_str())
            })
    })
    .into_iter()
    .all(|ok| ok)
}

/// The hash `BuildRecord::lock` holds for the definitions folder's lock as it is now.
pub fn lock_hash(definitions: &Path) -> Option<String> {
    fs::read_to_string(definitions.join(crate::trust::lock::LOCK_FILE))
        .ok()
        .map(|t| manifest_hash(&t))
}

impl BuildRecord {
    /// A record in this format.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        fingerprint: String,
        manifest_text: &str,
        lock: Option<String>,
        diagnostics: &crate::diag::Diagnostics,
        registry: &crate::registry::Registry,
        files: usize,
        quarantined: Option<String>,
    ) -> BuildRecord {
        BuildRecord {
            format: RECORD_FORMAT,
            fingerprint,
            manifest: manifest_hash(manifest_text),
            lock,
            diagnostics_text: diagnostics.render_text(),
            diagnostics_brief: diagnostics.render_text_brief(),
            diagnostics_json: diagnostics.render_json_lines(),
            ops: registry.counts.ops,
            groups: registry.counts.groups,
            registry_version: registry.registry_version.clone(),
            files,
            quarantined,
        }
    }
}
