//! A build's artifacts as the writer reads them: each file's text, held in memory or spilled to
//! an anonymous temporary file as soon as its emitter is done (see `compiler::spill`), with the
//! hash the manifest records for it. A 10,000-tool build makes about 230 MB of text; holding all
//! of it until the output folder is written was the largest part of the build's peak, since the
//! registry and the last emitters' working sets are live beside it.
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

/// One file's text: held, or in the spill file.
enum Text {
    Held(String),
    Spilled(Spilled),
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
        }
    }

    /// Outputs that spill each file of `SPILL_FROM` bytes or more; they hold them when no
    /// temporary file can be made.
    pub fn spilling() -> Outputs {
        Outputs {
            files: BTreeMap::new(),
            spill: SpillFile::new().map(Mutex::new),
        }
    }

    /// `files` hashed and, when these outputs spill, spilled (callable from every emitter's
    /// thread; [`Outputs::add`] then adds them). A text the spill file fails to take is held.
    pub(crate) fn prepare(&self, files: FileMap) -> Vec<(String, Output)> {
        files
            .into_iter()
            .map(|(path, text)| {
                let hash = super::manifest_hash(&text);
                let text = match &self.spill {
                    Some(spill) if text.len() >= SPILL_FROM => {
                        match spill.lock().expect("spill lock").put(&text) {
                            Ok(place) => Text::Spilled(place),
                            Err(_) => Text::Held(text),
                        }
                    }
                    _ => Text::Held(text),
                };
                (path, Output { text, hash })
            })
            .collect()
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

    /// The manifest hash of `rel`'s text.
    pub fn hash(&self, rel: &str) -> Option<&str> {
        self.files.get(rel).map(|o| o.hash.as_str())
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
    pub fn into_file_map(self) -> std::io::Result<FileMap> {
        let mut spill = self.spill.map(|s| s.into_inner().expect("spill lock"));
        self.files
            .into_iter()
            .map(|(path, o)| {
                let text = match o.text {
                    Text::Held(t) => t,
                    Text::Spilled(place) => read_back(spill.as_mut(), place, &path)?,
                };
                Ok((path, text))
            })
            .collect()
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
        match &self
            .files
            .get(rel)
            .ok_or_else(|| not_an_artifact(rel))?
            .text
        {
            Text::Held(t) => Ok(Cow::Borrowed(t)),
            Text::Spilled(place) => {
                let mut spill = self.spill.as_ref().map(|s| s.lock().expect("spill lock"));
                read_back(spill.as_deref_mut(), *place, rel).map(Cow::Owned)
            }
        }
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
            assert_eq!(
                spilled.hash(rel),
                Some(super::super::manifest_hash(&held.text(rel).unwrap()).as_str())
            );
        }
        assert_eq!(&*spilled.text("a/big.md").unwrap(), "replaced".repeat(100));
        assert!(spilled.text("missing").is_err());
        let mut want = sample();
        want.insert("a/big.md".into(), "replaced".repeat(100));
        assert_eq!(spilled.into_file_map().unwrap(), want);
        assert_eq!(held.into_file_map().unwrap(), want);
    }
}
