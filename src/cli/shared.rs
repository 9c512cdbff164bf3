//! What every command family shares: printing diagnostics and JSON, paths as shown, and
//! the output folder made whole before it is read.

use super::args::{Format, Ranking, RegistryFile};
use std::path::PathBuf;
use std::process::ExitCode;
use toolreg::diag::Diagnostics;
use toolreg::output;

/// Pretty JSON on stdout with every character a terminal could act on or hide (DEL, C1
/// controls, bidi, zero-width and tag characters; serde_json escapes the C0 ones) written as a
/// `\uXXXX` escape: the same JSON, safe to print.
/// Whether a person reads stdout (answers print as text) or a program does (JSON).
pub(super) fn stdout_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

pub(super) fn print_json(v: &impl serde::Serialize) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    println!("{}", toolreg::diag::escape_json_text(&text));
}

pub(super) fn show(diags: &Diagnostics, format: Format, verbose: bool) {
    match format {
        Format::Text if verbose => eprint!("{}", diags.render_text()),
        Format::Text => eprint!("{}", diags.render_text_brief()),
        Format::Json => eprint!("{}", diags.render_json_lines()),
    }
}

pub(super) fn display(p: &std::path::Path) -> String {
    p.to_string_lossy()
        .replace('\\', "/")
        .trim_end_matches('/')
        .to_string()
}

/// Before a command reads an output folder: finishes a build that was killed after its commit
/// (as `check` does), so the command sees one whole tree, and says so.
pub(crate) fn settle_folder(dir: &std::path::Path) -> Result<(), String> {
    let dir = if dir.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        dir
    };
    match output::settle(dir) {
        Ok(true) => {
            eprintln!(
                "note: finished an interrupted build in `{}` before reading it",
                display(dir)
            );
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(d) => Err(format!(
            "{}{}",
            d.message,
            d.help
                .map(|h| format!("\n   = help: {h}"))
                .unwrap_or_default()
        )),
    }
}

/// A registry file, or the `registry.json` in an output folder.
pub(crate) fn registry_file(p: &std::path::Path) -> PathBuf {
    if p.is_dir() {
        p.join("registry.json")
    } else {
        p.to_path_buf()
    }
}

// How the flags of args.rs become a loaded gateway (args.rs only declares them).
impl Ranking {
    #[cfg(feature = "semantic")]
    pub(crate) fn choice(&self) -> toolreg::runtime::hybrid::HybridChoice {
        toolreg::runtime::hybrid::HybridChoice {
            model: self.model.clone(),
            weight: self.semantic_weight,
        }
    }
}

impl RegistryFile {
    /// The output folder's `lookup.json`, when the registry is that folder's `registry.json`
    /// and the index matches it: a command that needs one op or page reads only that.
    pub(crate) fn lookup(&self) -> Option<(PathBuf, toolreg::model::lookup::Lookup)> {
        if self.registry.file_name()? != "registry.json" {
            return None;
        }
        let dir = self
            .registry
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        settle_folder(dir).ok()?;
        let lookup = toolreg::model::lookup::Lookup::open(dir)?;
        Some((dir.to_path_buf(), lookup))
    }

    /// A gateway over only the op `asked` names exactly (an op or tool name), from the
    /// lookup index: what exec needs, without reading the whole registry.
    pub(crate) fn gateway_for_op(&self, asked: &str) -> Option<toolreg::runtime::Gateway> {
        let (dir, lookup) = self.lookup()?;
        let reg = lookup.registry_of(&dir, asked)?;
        let help = toolreg::help::HelpDoc::new(
            reg.generator.clone(),
            reg.registry_version.clone(),
            Default::default(),
        );
        toolreg::runtime::Gateway::new(reg, help).ok()
    }

    /// The gateway; with `ranking` (the commands that search), hybrid ranking when the vectors
    /// were built. Other commands never load the model.
    pub(crate) fn gateway_ranked(
        &self,
        ranking: &Ranking,
    ) -> Result<toolreg::runtime::Gateway, ExitCode> {
        self.load(Some(ranking))
    }

    pub(crate) fn gateway(&self) -> Result<toolreg::runtime::Gateway, ExitCode> {
        self.load(None)
    }

    pub(crate) fn load(
        &self,
        ranking: Option<&Ranking>,
    ) -> Result<toolreg::runtime::Gateway, ExitCode> {
        let dir = self
            .registry
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let result = settle_folder(dir).and_then(|()| match ranking {
            // Search and eval (the ranked commands) read no help pages; with the build's
            // search.json (the index, and the registry as search sees it) they do not parse
            // registry.json either: only its version is read, from its last bytes.
            Some(_) => self.load_for_search(dir),
            None => {
                let registry = read(&self.registry)?;
                let help = read(&dir.join("help.json"))?;
                toolreg::runtime::Gateway::from_slices(&registry, &help).map_err(|e| e.to_string())
            }
        });
        // Hybrid search when the vectors were built; vectors from another model or registry
        // are refused, never mixed in.
        #[cfg(feature = "semantic")]
        let result = result.and_then(|gw| {
            let Some(ranking) = ranking else {
                return Ok(gw);
            };
            let choice = ranking.choice();
            match toolreg::runtime::hybrid::Hybrid::beside(dir, gw.registry(), &choice)? {
                Some(hybrid) => Ok(gw.with_hybrid(hybrid)),
                None => {
                    if choice.model.is_some() || choice.weight.is_some() {
                        eprintln!(
                            "warning: no {} beside the registry: search is lexical, --model and --semantic-weight go unused",
                            toolreg::semantic::FILE
                        );
                    }
                    Ok(gw)
                }
            }
        });
        result.map_err(|e| {
            eprintln!("error: {e}");
            eprintln!("   = help: run `toolreg build` first, or pass --registry FILE");
            ExitCode::from(2)
        })
    }

    /// A gateway for search (no help pages). With the build's search.json for the registry.json
    /// beside it, that file alone; else the whole registry, with the file's index when the
    /// version could only be read by parsing. Each file is read and parsed once at most.
    fn load_for_search(&self, dir: &std::path::Path) -> Result<toolreg::runtime::Gateway, String> {
        use toolreg::runtime::search::{SearchIndex, INDEX_FILE};
        let artifact = std::fs::read(dir.join(INDEX_FILE)).ok();
        // Whether the build wrote an index at all, for the note when it cannot be used.
        let had_file = artifact.is_some();
        let version = registry_version_of(&self.registry);
        let artifact = match (artifact, version) {
            (Some(bytes), Some(version)) => {
                if let Some((reg, index)) = SearchIndex::read_artifact(bytes, &version) {
                    let mut gw = toolreg::runtime::Gateway::for_search(reg);
                    gw.set_search_index(index);
                    return Ok(gw);
                }
                // Not this registry's (or torn): not read again below.
                None
            }
            (artifact, None) => artifact,
            (None, Some(_)) => None,
        };
        let reg = toolreg::registry::Registry::from_slice(&read(&self.registry)?)
            .map_err(|e| e.to_string())?;
        let mut gw = toolreg::runtime::Gateway::for_search(reg);
        let version = gw.registry().registry_version.clone();
        let written = artifact.and_then(|b| SearchIndex::from_artifact(b, &version));
        match written.filter(|index| index.indexes(gw.registry())) {
            Some(index) => gw.set_search_index(index),
            None => {
                if let Some(note) = index_note(&dir.join(INDEX_FILE), had_file, gw.registry()) {
                    eprintln!("{note}");
                }
            }
        }
        Ok(gw)
    }
}

/// From how many ops a search that must build its index says so: at 10,000 ops building it
/// costs a cold search 610 ms and 226 MiB, against 30 ms and 58 MiB with the build's
/// `search.json` (docs/guide.md, runtime performance).
const INDEX_NOTE_OPS: usize = 1000;

/// What a search over a large registry without a usable `search.json` tells the user, on
/// stderr: that the index is being built now, and how to have it built once by `build`.
fn index_note(
    file: &std::path::Path,
    had_file: bool,
    reg: &toolreg::registry::Registry,
) -> Option<String> {
    let ops = reg.ops.len();
    if ops < INDEX_NOTE_OPS {
        return None;
    }
    let why = if had_file {
        format!(
            "`{}` is not this registry's (an older build's, or damaged)",
            file.display()
        )
    } else {
        format!("there is no `{}`", file.display())
    };
    Some(format!(
        "note: {why}, so the search index of these {ops} ops is built now, on every search; \
         `toolreg build` writes it when its --emit list includes `search` (the default does)"
    ))
}

fn read(p: &std::path::Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))
}

/// The `registry_version` of a registry.json toolreg wrote, found without parsing it: the key
/// sits at the top level (`\n  "registry_version": "b3:..."`, two spaces in, which nothing
/// nested can be, and no string holds a raw newline), after the ops, so the file is searched
/// from its end, a chunk at a time in one small buffer (the tree and settings after the key are
/// about 300 KB at 10,000 ops; a cold search should not hold them).
fn registry_version_of(path: &std::path::Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    const KEY: &[u8] = b"\n  \"registry_version\": \"";
    const CHUNK: u64 = 64 << 10;
    // Each chunk also reads this far into the next one: a key and its value (at most 64
    // characters) cut by a chunk's end are still whole in one chunk.
    const OVERLAP: u64 = 128;
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut buf = Vec::with_capacity((CHUNK + OVERLAP) as usize);
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let stop = (end + OVERLAP).min(len);
        file.seek(SeekFrom::Start(start)).ok()?;
        buf.clear();
        file.by_ref()
            .take(stop - start)
            .read_to_end(&mut buf)
            .ok()?;
        if let Some(at) = buf.windows(KEY.len()).rposition(|w| w == KEY) {
            let rest = &buf[at + KEY.len()..];
            let close = rest.iter().position(|b| *b == b'"')?;
            let version = std::str::from_utf8(&rest[..close]).ok()?;
            return (version.starts_with("b3:") && version.len() <= 64)
                .then(|| version.to_string());
        }
        end = start;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::registry_version_of;

    /// The key is found wherever the 64 KB chunks cut it or its value, and the last one wins.
    #[test]
    fn registry_version_is_found_across_chunk_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.json");
        let key = "\n  \"registry_version\": \"b3:0123456789abcdef\",";
        // Every cut of the key and its value by the last chunk's start, and a few others.
        let cuts = (65_536 - 120..65_536 + 8).chain([0, 1, 40, 200_000, 300_001]);
        for tail in cuts {
            let text = format!(
                "{{\n  \"ops\": {{\"a\": \"  \\\"registry_version\\\": \\\"b3:nested\\\"\"}},{key}\n  \"tree\": \"{}\"\n}}\n",
                "x".repeat(tail)
            );
            std::fs::write(&path, &text).unwrap();
            assert_eq!(
                registry_version_of(&path).as_deref(),
                Some("b3:0123456789abcdef"),
                "{tail} bytes after the key"
            );
        }
        std::fs::write(&path, "{\"ops\": {}}").unwrap();
        assert_eq!(registry_version_of(&path), None);
    }
}
