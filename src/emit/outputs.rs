//! A build's artifacts as the writer reads them: each file's text, held in memory or spilled to
//! an anonymous temporary file as soon as its emitter is done (see `compiler::spill`), with the
//! hash the manifest records for it. A 10,000-tool build makes about 230 MB of text; holding all
//! of it until the output folder is written was the largest part of the build's peak, since the
//! registry and the last emitters' working sets are live beside it.
//!
//! Against a [`Baseline`] (the output folder as the last build left it), a file whose text is
//! already there byte for byte is not kept at all: the writer knows it unchanged without reading
//! it again, and reads it from the folder if anything asks for its text. A rebuild after one
//! changed tool keeps only the few files that changed.
//!
//! [`Artifacts`] is what the writer and `check` need of a set of files; a plain [`FileMap`] is
//! one too (tests, `build.rs`, and the library's `emit`).

use super::{FileMap, MANIFEST};
use crate::compiler::spill::{SpillFile, Spilled};
use crate::model::canonical::to_pretty;
use crate::model::registry::{Registry, FORMAT_VERSION, GENERATOR};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Bytes of pieces gathered for each update when a file's hash is taken piece by piece.
const HASH_BUFFER: usize = 64 << 10;

/// What writing or checking an output folder reads of the files it should hold.
pub trait Artifacts {
    /// Every file's relative `/`-separated path, sorted.
    fn paths(&self) -> Box<dyn Iterator<Item = &str> + '_>;
    /// Whether `rel` is one of the files.
    fn has(&self, rel: &str) -> bool;
    /// How many files there are.
    fn count(&self) -> usize;
    /// The text of `rel`: an error when it is not one of the files or cannot be read back.
    fn text(&self, rel: &str) -> std::io::Result<Cow<'_, str>>;
    /// Whether `rel` was found in the output folder as it is, byte for byte, against
    /// [`Artifacts::baseline`] (then the writer need not read it).
    fn unchanged(&self, _rel: &str) -> bool {
        false
    }
    /// Whether `rel`'s text is already staged for the write ([`Baseline::stage`]).
    fn staged(&self, _rel: &str) -> bool {
        false
    }
    /// The listing (each file the folder's manifest listed, with its recorded hash) that
    /// `unchanged` was judged against; a writer whose folder lists otherwise under its lock must
    /// not trust `unchanged`.
    fn baseline(&self) -> Option<&Listing> {
        None
    }
}

/// The files an output folder's manifest lists, each with the hash it records (the manifest
/// itself with none).
pub type Listing = BTreeMap<String, Option<String>>;

/// The output folder as the last build left it, which outputs are compared with as they are made
/// (implemented by the writer, which owns the folder's rules: links, the manifest).
pub trait Baseline: Send + Sync {
    /// Whether the folder holds `rel` with exactly `text`, the concatenation of its pieces
    /// (whose manifest hash is `hash`).
    fn holds(&self, rel: &str, text: &[String], hash: &str) -> bool;
    /// `rel`'s bytes as the folder holds them now.
    fn read(&self, rel: &str) -> std::io::Result<Vec<u8>>;
    /// What the folder's manifest listed when the baseline was taken.
    fn listing(&self) -> &Listing;
    /// Stages `text` (its pieces, in order) as the new `rel` where the write will take it from
    /// (`Ok(false)`: this baseline stages nothing; the text is then kept).
    fn stage(&self, _rel: &str, _text: &[String]) -> std::io::Result<bool> {
        Ok(false)
    }
    /// `rel`'s bytes as staged (or, once the write is done, as written).
    fn read_staged(&self, rel: &str) -> std::io::Result<Vec<u8>> {
        Err(not_an_artifact(rel))
    }
}

impl Artifacts for FileMap {
    fn paths(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        Box::new(self.keys().map(String::as_str))
    }
    fn has(&self, rel: &str) -> bool {
        self.contains_key(rel)
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn text(&self, rel: &str) -> std::io::Result<Cow<'_, str>> {
        self.get(rel)
            .map(|t| Cow::Borrowed(t.as_str()))
            .ok_or_else(|| not_an_artifact(rel))
    }
}

fn not_an_artifact(rel: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("`{rel}` is not one of the build's files"),
    )
}

/// One file's text: held, in the spill file, found in the output folder as it is, or staged
/// there for the write.
enum Text {
    Held(String),
    Spilled(Spilled),
    OnDisk,
    Staged,
}

/// One file of [`Outputs`], ready to be added.
pub(crate) struct Output {
    text: Text,
    /// Its manifest hash ([`super::manifest_hash`]), computed as it is added (on the thread of
    /// the emitter that made it).
    hash: String,
}

/// The files of a build, each held or spilled, with its manifest hash.
pub struct Outputs {
    files: BTreeMap<String, Output>,
    /// `None`: every file is held.
    spill: Option<Mutex<SpillFile>>,
    baseline: Option<std::sync::Arc<dyn Baseline>>,
}

/// The smallest text worth spilling: a smaller one costs more to write and read back than it
/// holds.
const SPILL_FROM: usize = 256;

impl Outputs {
    /// Outputs that hold every file in memory.
    pub fn holding() -> Outputs {
        Outputs {
            files: BTreeMap::new(),
            spill: None,
            baseline: None,
        }
    }

    /// Outputs that spill each file of `SPILL_FROM` bytes or more; they hold them when no
    /// temporary file can be made.
    pub fn spilling() -> Outputs {
        Outputs {
            files: BTreeMap::new(),
            spill: SpillFile::new().map(Mutex::new),
            baseline: None,
        }
    }

    /// These outputs, keeping no file that `baseline` already holds as it is.
    pub fn against(mut self, baseline: Option<std::sync::Arc<dyn Baseline>>) -> Outputs {
        self.baseline = baseline;
        self
    }

    /// `files` hashed and, when these outputs spill, spilled (callable from every emitter's
    /// thread; [`Outputs::add`] then adds them). A text the spill file fails to take is held.
    pub(crate) fn prepare(&self, files: FileMap) -> Vec<(String, Output)> {
        files
            .into_iter()
            .map(|(path, text)| {
                let output = self.prepare_pieces(&path, vec![text]);
                (path, output)
            })
            .collect()
    }

    /// One file whose text is `pieces` put together, prepared as [`Outputs::prepare`] does
    /// without putting them together unless the text is held: an emitter whose file is tens of
    /// megabytes of parts it already holds (the Rust types of every op) hands over the parts,
    /// not a copy of them all.
    pub(crate) fn prepare_pieces(&self, path: &str, pieces: Vec<String>) -> Output {
        let hash = {
            let mut hasher = blake3::Hasher::new();
            if let [piece] = pieces.as_slice() {
                hasher.update(piece.as_bytes());
            } else {
                // blake3 hashes an update of 16 KiB or more on all its SIMD lanes at once; a
                // piece at a time (an op's Rust types, a few KB) it went one 1 KiB chunk after
                // another, at half the speed (1.0 against 2.1 GB/s measured on this machine).
                use std::io::Write as _;
                let mut buffered = std::io::BufWriter::with_capacity(HASH_BUFFER, &mut hasher);
                for piece in &pieces {
                    buffered
                        .write_all(piece.as_bytes())
                        .expect("hashing cannot fail");
                }
                buffered.flush().expect("hashing cannot fail");
            }
            super::manifest_hash_of_digest(hasher.finalize())
        };
        if let Some(b) = &self.baseline {
            let found = if b.holds(path, &pieces, &hash) {
                Some(Text::OnDisk)
            } else {
                // A file that cannot be staged (a full disk) is kept instead.
                b.stage(path, &pieces)
                    .is_ok_and(|staged| staged)
                    .then_some(Text::Staged)
            };
            if let Some(text) = found {
                return Output { text, hash };
            }
        }
        let len: usize = pieces.iter().map(String::len).sum();
        let held = |mut pieces: Vec<String>| match pieces.len() {
            1 => Text::Held(pieces.pop().expect("one piece")),
            _ => Text::Held(pieces.concat()),
        };
        let text = match &self.spill {
            Some(spill) if len >= SPILL_FROM => {
                match spill.lock().expect("spill lock").put_pieces(&pieces) {
                    Ok(place) => Text::Spilled(place),
                    Err(_) => held(pieces),
                }
            }
            _ => held(pieces),
        };
        Output { text, hash }
    }

    /// Adds prepared files; a path added before is replaced.
    pub(crate) fn add(&mut self, prepared: Vec<(String, Output)>) {
        self.files.extend(prepared);
    }

    /// Adds (or replaces) one file.
    pub fn insert(&mut self, path: String, text: String) {
        let prepared = self.prepare(FileMap::from([(path, text)]));
        self.add(prepared);
    }

    /// Every file with its manifest hash, sorted by path.
    pub fn hashes(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files
            .iter()
            .map(|(p, o)| (p.as_str(), o.hash.as_str()))
    }

    /// Adds `toolreg.manifest.json`: generator, versions and a blake3 per file. `toolreg build`
    /// treats a folder holding it as its own, and only removes files a manifest listed.
    pub(crate) fn add_manifest(&mut self, reg: &Registry) {
        let listed: BTreeMap<&str, &str> = self.hashes().filter(|(p, _)| *p != MANIFEST).collect();
        let manifest = serde_json::json!({
            "generator": GENERATOR,
            "format_version": FORMAT_VERSION,
            "registry_version": reg.registry_version,
            "note": "Generated by toolreg; do not edit. Every file listed here is rewritten or removed by `toolreg build`.",
            "files": listed,
        });
        let text = to_pretty(&crate::model::canonical::sort_keys(&manifest));
        self.insert(MANIFEST.to_string(), text);
    }

    /// Every file held in memory (each spilled one read back): what `emit` returns.
    pub fn into_file_map(mut self) -> std::io::Result<FileMap> {
        let files = std::mem::take(&mut self.files);
        files
            .into_iter()
            .map(|(path, o)| {
                let text = match o.text {
                    Text::Held(t) => t,
                    _ => self.read(&path, &o)?,
                };
                Ok((path, text))
            })
            .collect()
    }

    /// A text not held: read back from the spill file, or from the output folder (checked
    /// against its hash: a file edited since it was compared is an error, never a wrong text).
    fn read(&self, rel: &str, o: &Output) -> std::io::Result<String> {
        match &o.text {
            Text::Held(t) => Ok(t.clone()),
            Text::Spilled(place) => {
                let mut spill = self.spill.as_ref().map(|s| s.lock().expect("spill lock"));
                read_back(spill.as_deref_mut(), *place, rel)
            }
            Text::OnDisk | Text::Staged => {
                let changed = || {
                    std::io::Error::other(format!(
                        "`{rel}` changed in the output folder while this build ran; run the build again"
                    ))
                };
                let baseline = self.baseline.as_ref().ok_or_else(changed)?;
                let bytes = if matches!(o.text, Text::OnDisk) {
                    baseline.read(rel)?
                } else {
                    baseline.read_staged(rel)?
                };
                if super::manifest_hash_of_bytes(&bytes) != o.hash {
                    return Err(changed());
                }
                String::from_utf8(bytes).map_err(|_| changed())
            }
        }
    }
}

impl Artifacts for Outputs {
    fn paths(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        Box::new(self.files.keys().map(String::as_str))
    }
    fn has(&self, rel: &str) -> bool {
        self.files.contains_key(rel)
    }
    fn count(&self) -> usize {
        self.files.len()
    }
    fn text(&self, rel: &str) -> std::io::Result<Cow<'_, str>> {
        let o = self.files.get(rel).ok_or_else(|| not_an_artifact(rel))?;
        match &o.text {
            Text::Held(t) => Ok(Cow::Borrowed(t)),
            _ => self.read(rel, o).map(Cow::Owned),
        }
    }
    fn unchanged(&self, rel: &str) -> bool {
        self.files
            .get(rel)
            .is_some_and(|o| matches!(o.text, Text::OnDisk))
    }
    fn staged(&self, rel: &str) -> bool {
        self.files
            .get(rel)
            .is_some_and(|o| matches!(o.text, Text::Staged))
    }
    fn baseline(&self) -> Option<&Listing> {
        self.baseline.as_ref().map(|b| b.listing())
    }
}

fn read_back(spill: Option<&mut SpillFile>, place: Spilled, rel: &str) -> std::io::Result<String> {
    spill.and_then(|s| s.get(place)).ok_or_else(|| {
        std::io::Error::other(format!(
            "`{rel}` could not be read back from the build's temporary file"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FileMap {
        FileMap::from([
            ("a/small.md".to_string(), "tiny\n".to_string()),
            ("a/big.md".to_string(), "ü".repeat(5_000)),
            ("registry.json".to_string(), "{}".repeat(400)),
        ])
    }

    #[test]
    fn spilled_outputs_read_as_held_ones_with_the_same_hashes() {
        let (mut held, mut spilled) = (Outputs::holding(), Outputs::spilling());
        for o in [&mut held, &mut spilled] {
            let prepared = o.prepare(sample());
            o.add(prepared);
            o.insert("a/big.md".into(), "replaced".repeat(100));
        }
        assert!(
            spilled.spill.is_some(),
            "this machine has a temporary folder"
        );
        let spilled_count = spilled
            .files
            .values()
            .filter(|o| matches!(o.text, Text::Spilled(_)))
            .count();
        assert_eq!(
            spilled_count, 2,
            "the two large texts spilled, the small one held"
        );
        assert_eq!(held.count(), 3);
        assert!(spilled.has("a/small.md") && !spilled.has("a"));
        assert_eq!(
            held.paths().collect::<Vec<_>>(),
            spilled.paths().collect::<Vec<_>>()
        );
        for rel in held.paths() {
            assert_eq!(held.text(rel).unwrap(), spilled.text(rel).unwrap());
        }
        for (rel, hash) in spilled.hashes() {
            assert_eq!(hash, super::super::manifest_hash(&held.text(rel).unwrap()));
        }
        assert_eq!(spilled.hashes().count(), 3);
        assert_eq!(&*spilled.text("a/big.md").unwrap(), "replaced".repeat(100));
        assert!(spilled.text("missing").is_err());
        let mut want = sample();
        want.insert("a/big.md".into(), "replaced".repeat(100));
        assert_eq!(spilled.into_file_map().unwrap(), want);
        assert_eq!(held.into_file_map().unwrap(), want);
    }

    /// A file handed over in pieces reads, hashes and spills as the same text handed over
    /// whole, held or spilled.
    #[test]
    fn a_file_in_pieces_is_the_file_whole() {
        let big = "ü".repeat(3_000);
        for pieces in [
            vec![],
            vec!["tiny".to_string()],
            vec![
                "// head\n".to_string(),
                big.clone(),
                String::new(),
                big.clone(),
            ],
        ] {
            let whole = pieces.concat();
            for mut outputs in [Outputs::holding(), Outputs::spilling()] {
                let output = outputs.prepare_pieces("rust/registry.rs", pieces.clone());
                assert_eq!(output.hash, super::super::manifest_hash(&whole));
                let spills = outputs.spill.is_some() && whole.len() >= SPILL_FROM;
                assert_eq!(matches!(output.text, Text::Spilled(_)), spills);
                outputs.add(vec![("rust/registry.rs".to_string(), output)]);
                assert_eq!(outputs.text("rust/registry.rs").unwrap(), whole);
            }
        }
    }
}
