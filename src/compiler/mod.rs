//! The build-time compiler. One direction, pure functions between reading and writing:
//!
//! ```text
//! load -> normalize -> classify -> enrich -> lint -> Registry (IR) -> stamp -> emit -> write | check
//! ```
//!
//! [`compile`] runs everything up to the stamped IR and returns it with every diagnostic found.

pub mod classify;
pub mod enrich;
pub mod examples;
pub mod ir;
pub mod lint;
pub mod load;
pub mod normalize;
pub mod overlay;
pub mod policy;
pub mod provider_lint;
pub mod source;
pub mod stamp;

use crate::diag::Diagnostics;
use crate::registry::{Kind, Registry};
use classify::{Classification, Classifier};
use load::{Loaded, RawTool};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A tool after normalize, classify and the kind/destructive decision.
#[derive(Debug, Clone)]
pub struct Tool {
    /// As loaded, with `parameters` normalized.
    pub raw: RawTool,
    /// `None` when nothing classified the name (an error has been reported).
    pub class: Option<Classification>,
    pub kind: Kind,
    pub destructive: bool,
    pub provider_name: String,
}

/// What a compile produced.
#[derive(Debug)]
pub struct Compiled {
    /// The stamped registry; `None` when any error was found.
    pub registry: Option<Registry>,
    /// Every finding, sorted by place.
    pub diagnostics: Diagnostics,
    /// Every input file and folder that exists (the overlay, the JSON files, every folder
    /// walked), for `cargo:rerun-if-changed`.
    pub inputs: Vec<PathBuf>,
}

/// Compiles a definitions folder (with its `toolreg.toml`) to a stamped registry.
pub fn compile(definitions: &Path) -> Compiled {
    let mut diags = Diagnostics::default();
    let display = definitions.to_string_lossy().replace('\\', "/");
    let lo = overlay::load(definitions, &display, &mut diags);
    let mut loaded = load::load(definitions, &mut diags);
    // Moved out, not cloned: schemas are most of the memory a large catalog takes.
    let raw_tools = std::mem::take(&mut loaded.tools);
    let mut inputs: Vec<PathBuf> = loaded.folders.clone();
    inputs.extend(loaded.paths.iter().cloned());
    if let Some(p) = lo.as_ref().and_then(|l| l.path.clone()) {
        inputs.push(p);
    }
    inputs.sort();

    let registry = lo.and_then(|lo| {
        let classifier = Classifier::new(&lo, &mut diags);
        let tools: Vec<Tool> = raw_tools
            .into_iter()
            .map(|raw| analyze(raw, &loaded, &lo.overlay, &classifier, &mut diags))
            .collect();
        lint::check(&tools, &loaded, &lo, &classifier, &mut diags);
        // Assembly checks examples, aliases and profiles; run it even after errors so one run
        // reports everything (unclassified tools are skipped), then discard the registry.
        let op_locations: BTreeMap<String, crate::diag::Location> = tools
            .iter()
            .filter_map(|t| {
                let op = t.class.as_ref()?.op.clone();
                Some((op, loaded.loc(t.raw.file, t.raw.parameters_pointer.clone())))
            })
            .collect();
        let registry = ir::assemble(tools, &loaded, &lo, &mut diags);
        provider_lint::check(&registry, &lo, &op_locations, &mut diags);
        (!diags.has_errors()).then_some(registry)
    });
    locate(&mut diags, &loaded);
    diags.sort();
    Compiled {
        registry,
        diagnostics: diags,
        inputs,
    }
}

/// normalize + classify + kind/destructive for one tool.
fn analyze(
    mut raw: RawTool,
    loaded: &Loaded,
    overlay: &overlay::Overlay,
    classifier: &Classifier,
    diags: &mut Diagnostics,
) -> Tool {
    let file = raw.file;
    normalize::normalize_parameters(
        &raw.name,
        &mut raw.parameters,
        &raw.parameters_pointer,
        &|p| loaded.loc(file, p),
        diags,
    );
    let class = classifier.classify(&raw.name);
    let (kind, destructive) = match &class {
        Some(c) => {
            let ov = overlay.ops.get(c.op.as_str());
            let kind = classify::resolve_kind(
                c,
                &raw.name,
                ov.and_then(|o| o.kind),
                raw.annotations.as_ref(),
                overlay,
            );
            let destructive = classify::resolve_destructive(
                c,
                &raw.name,
                kind,
                ov.and_then(|o| o.destructive),
                raw.annotations.as_ref(),
                overlay,
            );
            (kind, destructive)
        }
        None => (Kind::Write, false),
    };
    let provider_name = enrich::provider_name(&raw.name);
    Tool {
        raw,
        class,
        kind,
        destructive,
        provider_name,
    }
}

/// Fills line:col for diagnostics that only know a JSON pointer, parsing each file once.
fn locate(diags: &mut Diagnostics, loaded: &Loaded) {
    let by_display: BTreeMap<&str, usize> = loaded
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.display.as_str(), i))
        .collect();
    let mut items = std::mem::take(diags).into_vec();
    let mut wanted: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let needs = |l: &crate::diag::Location| l.line.is_none() && l.pointer.is_some();
    for d in &items {
        let locs = d
            .location
            .iter()
            .chain(d.related.iter().map(|r| &r.location));
        for l in locs.filter(|l| needs(l)) {
            if let Some(&i) = by_display.get(l.file.as_str()) {
                wanted
                    .entry(i)
                    .or_default()
                    .push(l.pointer.clone().unwrap_or_default());
            }
        }
    }
    let mut found: BTreeMap<(usize, String), (usize, usize)> = BTreeMap::new();
    for (i, mut ptrs) in wanted {
        ptrs.sort();
        ptrs.dedup();
        let refs: Vec<&str> = ptrs.iter().map(String::as_str).collect();
        for (p, pos) in ptrs.iter().zip(loaded.files[i].locate_all(&refs)) {
            if let Some(pos) = pos {
                found.insert((i, p.clone()), pos);
            }
        }
    }
    for d in &mut items {
        let locs = d
            .location
            .iter_mut()
            .chain(d.related.iter_mut().map(|r| &mut r.location));
        for l in locs {
            if !needs(l) {
                continue;
            }
            let Some(&i) = by_display.get(l.file.as_str()) else {
                continue;
            };
            if let Some(&(line, col)) = found.get(&(i, l.pointer.clone().unwrap_or_default())) {
                l.line = Some(line);
                l.column = Some(col);
            }
        }
    }
    *diags = items.into();
}
