//! The build-time compiler. One direction, pure functions between reading and writing:
//!
//! ```text
//! load -> normalize -> classify -> enrich -> lint -> Registry (IR) -> stamp -> emit -> write | check
//! ```
//!
//! [`compile`] runs everything up to the stamped IR and returns it with every diagnostic found.

pub mod classify;
pub mod draft;
pub mod enrich;
pub mod examples;
pub mod infer;
pub mod ir;
pub mod lint;
pub mod load;
pub mod normalize;
pub mod overlay;
pub mod policy;
pub mod provider_lint;
pub mod source;
pub mod stamp;

use crate::diag::{self, Diagnostics};
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

/// Which overlay a compile uses.
#[derive(Debug, Clone)]
pub enum OverlaySource {
    /// `toolreg.toml` in the definitions folder, if there is one.
    File,
    /// This text instead (`toolreg init` checks its draft this way); empty text is no overlay.
    Text(String),
}

/// Compiles a definitions folder (with its `toolreg.toml`) to a stamped registry.
pub fn compile(definitions: &Path) -> Compiled {
    compile_with(definitions, OverlaySource::File)
}

/// Compiles a definitions folder with the given overlay.
pub fn compile_with(definitions: &Path, source: OverlaySource) -> Compiled {
    let mut diags = Diagnostics::default();
    let display = definitions.to_string_lossy().replace('\\', "/");
    let lo = match source {
        OverlaySource::File => overlay::load(definitions, &display, &mut diags),
        OverlaySource::Text(text) => overlay::parse(
            text,
            load::display_path(&display, overlay::OVERLAY_FILE),
            None,
            &mut diags,
        ),
    };
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
        let mut tools: Vec<Tool> = raw_tools
            .into_iter()
            .map(|raw| analyze(raw, &loaded, &classifier, &mut diags))
            .collect();
        if lo.overlay.classify.infer {
            infer_unclassified(&mut tools, &loaded, &lo.overlay, &classifier, &mut diags);
        }
        for t in &mut tools {
            if t.class.is_none() {
                t.class = classifier.classify_fallback(&t.raw.name);
            }
            decide_kind(t, &lo.overlay);
        }
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

/// normalize + classify by the overlay (special cases and rules) for one tool.
fn analyze(
    mut raw: RawTool,
    loaded: &Loaded,
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
    let class = classifier.classify(&raw.name, &loaded.files[file].rel);
    let provider_name = enrich::provider_name(&raw.name);
    Tool {
        raw,
        class,
        kind: Kind::Write,
        destructive: false,
        provider_name,
    }
}

/// Infers an op for every tool the overlay left unclassified, with one note per op (and a
/// warning per collision), located at the tool's name.
fn infer_unclassified(
    tools: &mut [Tool],
    loaded: &Loaded,
    overlay: &overlay::Overlay,
    classifier: &Classifier,
    diags: &mut Diagnostics,
) {
    if tools.iter().all(|t| t.class.is_some()) {
        return;
    }
    let inputs: Vec<infer::Input> = tools
        .iter()
        .map(|t| infer::Input {
            name: &t.raw.name,
            file: &loaded.files[t.raw.file].rel,
            read_only: t.raw.annotations.as_ref().and_then(|a| a.read_only_hint),
            classified: t.class.is_some(),
        })
        .collect();
    let reserved = tools
        .iter()
        .filter_map(|t| t.class.as_ref().map(|c| c.op.clone()))
        .collect();
    let extra_verbs = overlay
        .classify
        .read_verbs
        .iter()
        .chain(&overlay.classify.destructive_verbs)
        .cloned()
        .collect();
    let inferred = infer::infer(&inputs, classifier.vocabulary(), &extra_verbs, &reserved);
    for (t, inf) in tools.iter_mut().zip(inferred) {
        let Some(inf) = inf else { continue };
        let at = loaded.loc(t.raw.file, t.raw.name_pointer.clone());
        let name = &t.raw.name;
        if let Some(owner) = &inf.collided_with {
            diags.push(
                diag::Diagnostic::new(
                    diag::Code::InferredCollision,
                    format!("tools `{owner}` and `{name}` were both inferred as one op; `{name}` became `{}`", inf.op),
                )
                .at(at.clone())
                .help(format!("to choose the ops yourself, add special cases: `{name:?} = \"group.entity.action\"`")),
            );
        }
        diags.push(
            diag::Diagnostic::new(
                diag::Code::Inferred,
                format!("tool `{name}` inferred as `{}`", inf.op),
            )
            .at(at)
            .help(inf.why.clone()),
        );
        t.class = Some(classify::inferred(&inf));
    }
}

/// The kind/destructive decision for a classified tool (overrides, the classification, MCP
/// annotations, then the verb lists).
fn decide_kind(t: &mut Tool, overlay: &overlay::Overlay) {
    let Some(c) = &t.class else { return };
    let ov = overlay.ops.get(c.op.as_str());
    let ann = t.raw.annotations.as_ref();
    t.kind = classify::resolve_kind(c, &t.raw.name, ov.and_then(|o| o.kind), ann, overlay);
    t.destructive = classify::resolve_destructive(
        c,
        &t.raw.name,
        t.kind,
        ov.and_then(|o| o.destructive),
        ann,
        overlay,
    );
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
