//! The `build.rs` API, in the style of prost-build:
//!
//! ```no_run
//! // in build.rs, inside `fn main()`:
//! toolreg::Builder::new()
//!     .definitions("definitions")
//!     .compile()
//!     .unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! It compiles the definitions folder, writes the artifacts into `OUT_DIR` (or `out_dir`), prints
//! `cargo:rerun-if-changed` for every input file and folder that exists, and `cargo:warning` for
//! each warning. On errors it prints the diagnostics to stderr and returns them.

use crate::compiler::Compiled;
use crate::emit::outputs::Outputs;
use crate::emit::{Emitter, FileMap, Settings};
use crate::model::diag::{Diagnostic, Diagnostics, Severity};
use crate::model::registry::Registry;
use crate::write::output::{self, Ownership, WriteReport};
use std::fmt;
use std::path::{Path, PathBuf};

/// Compile + emit in memory: what `build` writes and `check` compares.
pub struct Generated {
    pub compiled: Compiled,
    /// `None` when compiling found errors.
    pub files: Option<FileMap>,
}

/// Compiles a definitions folder and renders the chosen artifacts, writing nothing.
pub fn generate(definitions: &Path, emitters: &[Emitter]) -> Generated {
    generate_with(definitions, emitters, &Settings::default())
}

/// `generate` with emitter settings (custom templates). An emitter error (a broken template)
/// means no files, like a compile error.
pub fn generate_with(definitions: &Path, emitters: &[Emitter], settings: &Settings) -> Generated {
    generate_opts(definitions, emitters, settings, false)
}

/// `generate_with`; `strict` turns off the quarantine of third-party tools (their errors stop
/// the build like any other).
pub fn generate_opts(
    definitions: &Path,
    emitters: &[Emitter],
    settings: &Settings,
    strict: bool,
) -> Generated {
    let g = generate_outputs(definitions, emitters, settings, strict, Outputs::holding());
    Generated {
        compiled: g.compiled,
        files: g.outputs.map(|o| {
            o.into_file_map()
                .expect("held outputs need no reading back")
        }),
    }
}

/// [`Generated`] with the files as [`Outputs`] (spilled, with [`Outputs::spilling`]).
pub struct GeneratedOutputs {
    pub compiled: Compiled,
    /// `None` when compiling found errors.
    pub outputs: Option<Outputs>,
}

/// `generate_opts` into `outputs`: with [`Outputs::spilling`], each emitter's files leave memory
/// once it is done, and the writer reads them back one at a time (`toolreg build` and `check`).
pub fn generate_outputs(
    definitions: &Path,
    emitters: &[Emitter],
    settings: &Settings,
    strict: bool,
    outputs: Outputs,
) -> GeneratedOutputs {
    let mut compiled = crate::compiler::compile_with_memo(
        definitions,
        crate::compiler::OverlaySource::File,
        strict,
        settings.memo.as_deref(),
    );
    let mut diags = Diagnostics::default();
    let outputs = compiled
        .registry
        .as_ref()
        .map(|r| crate::emit::emit_outputs(r, emitters, settings, outputs, &mut diags));
    let failed = diags.has_errors();
    // The Rust emitter locates untyped ops relative to the definitions folder (the IR's source
    // paths); show them as the user named that folder.
    let root = definitions.to_string_lossy().replace('\\', "/");
    let diags = diags.map_locations(|code, l| {
        if code == crate::model::diag::Code::UntypedOp {
            l.file = crate::compiler::load::display_path(&root, &l.file);
        }
    });
    compiled.diagnostics.extend(diags);
    compiled.diagnostics.sort();
    GeneratedOutputs {
        compiled,
        outputs: outputs.filter(|_| !failed),
    }
}

/// Configures and runs a compile from `build.rs`.
#[derive(Debug, Clone)]
pub struct Builder {
    definitions: PathBuf,
    out_dir: Option<PathBuf>,
    cargo_metadata: bool,
    emitters: Vec<Emitter>,
    settings: Settings,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

/// What a successful compile produced.
#[derive(Debug)]
pub struct Output {
    pub registry: Registry,
    pub out_dir: PathBuf,
    pub written: WriteReport,
    /// Warnings (errors make `compile` fail).
    pub diagnostics: Diagnostics,
    /// The files and folders `rerun-if-changed` was printed for.
    pub inputs: Vec<PathBuf>,
}

/// A failed compile. The diagnostics were already printed to stderr (cargo shows a failing build
/// script's stderr); `Display` and `Debug` give a one-line summary, so `unwrap`, `expect` and
/// `fn main() -> Result<..>` do not print them twice.
pub struct Error {
    pub diagnostics: Diagnostics,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "toolreg: {} error(s) in the tool definitions (diagnostics above)",
            self.diagnostics.error_count()
        )
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

impl Builder {
    /// Definitions in `definitions/`, output in `$OUT_DIR`, cargo metadata printed.
    pub fn new() -> Self {
        Builder {
            definitions: PathBuf::from("definitions"),
            out_dir: None,
            cargo_metadata: true,
            emitters: Emitter::ALL.to_vec(),
            settings: Settings::default(),
        }
    }

    /// Docs templates to use instead of the built-in ones (file by file).
    pub fn templates(mut self, dir: impl Into<PathBuf>) -> Self {
        self.settings.templates = Some(dir.into());
        self
    }

    /// Which artifacts to write (default: all).
    pub fn emit(mut self, emitters: &[Emitter]) -> Self {
        self.emitters = emitters.to_vec();
        self
    }

    /// The definitions folder (relative to the package root when run from build.rs).
    pub fn definitions(mut self, dir: impl Into<PathBuf>) -> Self {
        self.definitions = dir.into();
        self
    }

    /// Where to write; defaults to `$OUT_DIR`. toolreg only replaces or removes the files its
    /// manifest lists there, so the folder can be shared with other generators.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Whether to print `cargo:rerun-if-changed` and `cargo:warning` lines (default true).
    pub fn cargo_metadata(mut self, on: bool) -> Self {
        self.cargo_metadata = on;
        self
    }

    pub fn compile(self) -> Result<Output, Error> {
        let out_dir = match self
            .out_dir
            .clone()
            .or_else(|| std::env::var_os("OUT_DIR").map(PathBuf::from))
        {
            Some(d) => d,
            None => {
                let d = Diagnostic::new(
                    crate::model::diag::Code::OutputIo,
                    "no output folder: OUT_DIR is not set",
                )
                .help("call Builder::compile from build.rs, or set .out_dir(..)");
                return Err(self.fail(vec![d].into()));
            }
        };
        // Unchanged ops' Rust types and token counts come from the output folder's cache.
        let cache = super::cache::BuildCache::for_output(&out_dir);
        let memo = std::sync::Arc::new(cache.memo());
        let mut settings = self.settings.clone();
        settings.memo = Some(memo.clone());
        let generated = generate_with(&self.definitions, &self.emitters, &settings);
        if self.cargo_metadata {
            // Always watch the definitions folder itself, so a missing overlay or a new file is
            // picked up; never print a path that does not exist.
            if self.definitions.exists() && !generated.compiled.inputs.contains(&self.definitions) {
                println!("cargo:rerun-if-changed={}", self.definitions.display());
            }
            for p in &generated.compiled.inputs {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        let Generated { compiled, files } = generated;
        let Some(files) = files else {
            return Err(self.fail(compiled.diagnostics));
        };
        let registry = compiled.registry.expect("files imply a registry");
        if let Err(d) = output::ensure_apart(&self.definitions, &out_dir) {
            return Err(self.fail(vec![*d].into()));
        }
        let written = match output::write(&out_dir, &files, Ownership::Manifest) {
            Ok(w) => w,
            Err(d) => return Err(self.fail(vec![*d].into())),
        };
        cache.save(Some(&memo), None);
        if self.cargo_metadata {
            let kept = output::kept_diagnostics(&out_dir, &written);
            for d in compiled
                .diagnostics
                .iter()
                .chain(&kept)
                .filter(|d| d.severity == Severity::Warning)
            {
                let place = d
                    .location
                    .as_ref()
                    .map(|l| format!(" at {l}"))
                    .unwrap_or_default();
                println!("cargo:warning=toolreg {}: {}{place}", d.code, d.message);
            }
        }
        Ok(Output {
            registry,
            out_dir,
            written,
            diagnostics: compiled.diagnostics,
            inputs: compiled.inputs,
        })
    }

    fn fail(&self, diagnostics: Diagnostics) -> Error {
        eprint!("{}", diagnostics.render_text());
        Error { diagnostics }
    }
}
