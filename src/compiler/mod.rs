//! The build-time compiler. One direction, pure functions between reading and writing:
//!
//! ```text
//! load -> normalize -> classify -> enrich -> lint -> Registry (IR) -> stamp -> emit -> write | check
//! ```
//!
//! [`compile`] runs everything up to the stamped IR and returns it with every diagnostic found.
//! Beside the pipeline: [`surfaces`] builds the model-facing tool lists and [`report`] counts
//! their tokens (emitters, the provider lint and `diff` read both); `parallel` maps work over
//! both cores in a fixed order, so output never depends on scheduling.

pub(crate) mod bounded;
pub mod classify;
pub mod draft;
pub mod enrich;
pub mod examples;
mod fold;
pub mod infer;
pub mod ir;
pub mod learn;
pub mod lint;
pub mod load;
pub mod memo;
pub(crate) mod memo_sizes;
pub mod normalize;
pub mod overlay;
pub mod overlay_schema;
pub(crate) mod parallel;
pub mod poison;
pub mod policy;
pub mod provider_lint;
pub mod report;
pub mod source;
pub mod spill;
pub mod stamp;
pub mod surfaces;
pub mod tokens;
mod tool_texts;

use crate::model::diag::{self, Diagnostic, Diagnostics, Severity};
use crate::model::registry::{Kind, QuarantinedTool, Registry};
use classify::{Classification, Classifier};
use load::{Loaded, RawTool};
use std::collections::{BTreeMap, BTreeSet};
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
    /// From a third-party file (an MCP snapshot, or `[sources] third_party`).
    pub third_party: bool,
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

#[cfg(test)]
mod repo_catalogs;
#[cfg(test)]
pub(crate) use repo_catalogs::{compile_repo_catalog, repo_and_fleet_catalogs, REPO_CATALOGS};

/// Compiles a definitions folder (with its `toolreg.toml`) to a stamped registry.
pub fn compile(definitions: &Path) -> Compiled {
    compile_with(definitions, OverlaySource::File)
}

/// Compiles a definitions folder with the given overlay, quarantining third-party tools that
/// cannot be compiled (see [`compile_opts`]).
pub fn compile_with(definitions: &Path, source: OverlaySource) -> Compiled {
    compile_opts(definitions, source, false)
}

/// How many times a compile may drop quarantined tools and run again: removing a tool can only
/// remove findings, so a second pass settles nearly always; the bound keeps a pathological
/// catalog from looping.
const QUARANTINE_PASSES: usize = 4;

/// Compiles a definitions folder. Unless `strict`, a tool of a third-party file (an imported MCP
/// snapshot `*.mcp.json`, or a file `[sources] third_party` names) whose errors are its own is
/// quarantined: left out, its errors reported as warnings with a TR081 line each, listed in the
/// registry's `quarantined`, and the rest of the catalog builds. Errors anywhere else (the
/// team's own definitions, the overlay) stop the build as always: the team can fix those; a
/// catalog it did not write should not hold its build hostage.
pub fn compile_opts(definitions: &Path, source: OverlaySource, strict: bool) -> Compiled {
    compile_with_memo(definitions, source, strict, None)
}

/// [`compile_opts`] with a build's memo, which serves the poisoning lint's findings in a text it
/// has screened before (see [`poison::check`]).
pub fn compile_with_memo(
    definitions: &Path,
    source: OverlaySource,
    strict: bool,
    memo: Option<&memo::Memo>,
) -> Compiled {
    let mut excluded: BTreeSet<(String, String)> = BTreeSet::new();
    let mut held: Vec<(QuarantinedTool, Vec<Diagnostic>)> = Vec::new();
    let mut pass_no = 0;
    loop {
        pass_no += 1;
        let (mut out, tools) = compile_pass(definitions, source.clone(), &excluded, memo);
        if !out.diagnostics.has_errors() {
            if !held.is_empty() {
                release(&mut out, held);
            }
            return out;
        }
        if strict || pass_no > QUARANTINE_PASSES {
            return out;
        }
        let Some(found) = quarantinable(&out.diagnostics, &tools) else {
            return out;
        };
        for (i, diags) in found {
            let t = &tools[i];
            excluded.insert((t.rel.clone(), t.pointer.clone()));
            let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
            let mut codes: Vec<String> = errors.iter().map(|d| d.code.to_string()).collect();
            codes.sort();
            codes.dedup();
            let record = QuarantinedTool {
                tool_name: t.name.clone(),
                file: t.rel.clone(),
                pointer: t.pointer.clone(),
                codes,
                // A third-party schema's error can quote much of it: the record keeps a bounded
                // prefix (the diagnostic itself says the rest).
                reason: errors
                    .first()
                    .map(|d| d.message.chars().take(REASON_CHARS).collect())
                    .unwrap_or_default(),
            };
            held.push((record, diags));
        }
    }
}

/// The most characters of an error message a quarantine record keeps.
const REASON_CHARS: usize = 300;

/// A tool as the quarantine sees it: where it is and whether its file is third-party.
struct ToolPlace {
    name: String,
    /// The file as diagnostics show it, and relative to the definitions folder.
    display: String,
    rel: String,
    pointer: String,
    third_party: bool,
}

/// Errors that are a tool's own fault (its entry, name or schema), so the tool can be left out.
/// Errors about how the overlay classifies (TR014 unclassified, TR012 an op two tools map to)
/// or about the overlay's own entries are the team's to fix, and stop the build.
const QUARANTINABLE: &[diag::Code] = &[
    diag::Code::EntryShape,
    diag::Code::EntryField,
    diag::Code::ToolTooLarge,
    diag::Code::DuplicateToolName,
    diag::Code::ProviderNameCollision,
    diag::Code::ControlCharacters,
    diag::Code::BadSchema,
    diag::Code::SurfaceNotObject,
    diag::Code::SurfaceCombinator,
    diag::Code::SurfaceName,
    // Poisoned text: the tool is left out of every surface, the rest of the catalog builds.
    diag::Code::PoisonedText,
    diag::Code::SuspiciousText,
];

/// For every error, the third-party tool it belongs to; `None` when any error belongs to no
/// such tool (then nothing is quarantined and the build stops). Each tool comes with every
/// finding located inside it.
fn quarantinable(
    diags: &Diagnostics,
    tools: &[ToolPlace],
) -> Option<BTreeMap<usize, Vec<Diagnostic>>> {
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, t) in tools.iter().enumerate() {
        by_file.entry(t.display.as_str()).or_default().push(i);
    }
    let owner = |d: &Diagnostic| -> Option<usize> {
        let loc = d.location.as_ref()?;
        let ptr = loc.pointer.as_deref()?;
        by_file.get(loc.file.as_str())?.iter().copied().find(|&i| {
            let p = tools[i].pointer.as_str();
            ptr == p || ptr.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
        })
    };
    let mut found: BTreeMap<usize, Vec<Diagnostic>> = BTreeMap::new();
    for d in diags.iter().filter(|d| d.is_error()) {
        if !QUARANTINABLE.contains(&d.code) {
            return None;
        }
        let i = owner(d).filter(|&i| tools[i].third_party)?;
        found.entry(i).or_default();
    }
    for d in diags.iter() {
        if let Some(list) = owner(d).and_then(|i| found.get_mut(&i)) {
            list.push(d.clone());
        }
    }
    Some(found)
}

/// Puts the quarantined tools into a successful compile: their findings as warnings, a TR081
/// line each, and the registry's `quarantined` list (stamped into the version, so `check` sees a
/// change in what was left out).
fn release(out: &mut Compiled, held: Vec<(QuarantinedTool, Vec<Diagnostic>)>) {
    let mut diags = std::mem::take(&mut out.diagnostics).into_vec();
    let mut records = Vec::new();
    for (record, found) in held {
        let at = found
            .iter()
            .find(|d| d.is_error())
            .and_then(|d| d.location.clone());
        let mut line = Diagnostic::new(
            diag::Code::Quarantined,
            format!(
                "tool `{}` of third-party file `{}` was left out of every surface ({})",
                record.tool_name,
                record.file,
                record.codes.join(", ")
            ),
        )
        .help("the rest of the catalog is built; fix the tool upstream and import it again, or pass --strict to make this an error");
        if let Some(at) = at {
            line = line.at(at);
        }
        diags.push(line);
        for mut d in found {
            if d.is_error() {
                d.severity = Severity::Warning;
                d.message = format!("(quarantined) {}", d.message);
            }
            diags.push(d);
        }
        records.push(record);
    }
    records.sort_by(|a, b| (&a.file, &a.pointer).cmp(&(&b.file, &b.pointer)));
    let mut diags: Diagnostics = diags.into();
    diags.sort();
    out.diagnostics = diags;
    if let Some(reg) = out.registry.as_mut() {
        reg.quarantined = records;
        reg.registry_version = stamp::registry_version(reg);
    }
}

/// Whether a definitions file is third-party: an imported MCP snapshot, or named by
/// `[sources] third_party`.
pub(crate) fn third_party(rel: &str, overlay: Option<&overlay::Overlay>) -> bool {
    rel.ends_with(".mcp.json")
        || overlay.is_some_and(|o| {
            o.sources
                .third_party
                .iter()
                .any(|g| classify::glob_match(g, rel))
        })
}

/// One compile, leaving out the tools in `excluded` (file relative path, entry pointer).
fn compile_pass(
    definitions: &Path,
    source: OverlaySource,
    excluded: &BTreeSet<(String, String)>,
    memo: Option<&memo::Memo>,
) -> (Compiled, Vec<ToolPlace>) {
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
    let mut raw_tools = std::mem::take(&mut loaded.tools);
    if !excluded.is_empty() {
        raw_tools
            .retain(|t| !excluded.contains(&(loaded.files[t.file].rel.clone(), t.pointer.clone())));
        // What reading found inside a held tool (an oversized description) is the quarantine's
        // to report, not this pass's.
        let held: Vec<(&str, &str)> = excluded
            .iter()
            .filter_map(|(rel, ptr)| {
                let f = loaded.files.iter().find(|f| &f.rel == rel)?;
                Some((f.display.as_str(), ptr.as_str()))
            })
            .collect();
        let inside = |d: &Diagnostic| {
            d.location.as_ref().is_some_and(|l| {
                let ptr = l.pointer.as_deref().unwrap_or_default();
                held.iter().any(|(file, p)| {
                    l.file == *file
                        && (ptr == *p || ptr.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
                })
            })
        };
        let kept: Vec<Diagnostic> = std::mem::take(&mut diags)
            .into_vec()
            .into_iter()
            .filter(|d| !inside(d))
            .collect();
        diags = kept.into();
    }
    // Which files are third-party, decided once for the quarantine and for lint.
    let third_party_file: Vec<bool> = loaded
        .files
        .iter()
        .map(|f| third_party(&f.rel, lo.as_ref().map(|l| &l.overlay)))
        .collect();
    let places: Vec<ToolPlace> = raw_tools
        .iter()
        .map(|t| {
            let f = &loaded.files[t.file];
            ToolPlace {
                name: t.name.clone(),
                display: f.display.clone(),
                rel: f.rel.clone(),
                pointer: t.pointer.clone(),
                third_party: third_party_file[t.file],
            }
        })
        .collect();
    let mut inputs: Vec<PathBuf> = loaded.folders.clone();
    inputs.extend(loaded.paths.iter().cloned());
    if let Some(p) = lo.as_ref().and_then(|l| l.path.clone()) {
        inputs.push(p);
    }
    inputs.sort();

    let registry = lo.and_then(|lo| {
        let classifier = Classifier::new(&lo, &mut diags);
        // Per tool (normalizing its schema, classifying its name): on every core, the findings
        // taken in the tools' order.
        let analyzed = parallel::map_owned_in_order(raw_tools, |raw| {
            let mut said = Diagnostics::default();
            (analyze(raw, &loaded, &classifier, &mut said), said)
        });
        let mut tools: Vec<Tool> = Vec::with_capacity(analyzed.len());
        for (tool, said) in analyzed {
            diags.extend(said);
            tools.push(tool);
        }
        for t in &mut tools {
            t.third_party = third_party_file[t.raw.file];
        }
        qualify_shared_names(&mut tools, &loaded, &mut diags);
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
        poison::check(&tools, &loaded, &lo, memo, &mut diags);
        // Assembly checks examples, aliases and profiles; run it even after errors so one run
        // reports everything (unclassified tools are skipped), then discard the registry.
        let op_locations: BTreeMap<String, crate::model::diag::Location> = tools
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
    (
        Compiled {
            registry,
            diagnostics: diags,
            inputs,
        },
        places,
    )
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
    if let Some(output) = raw.output_schema.as_mut() {
        normalize::normalize_schema(
            &raw.name,
            output,
            &raw.output_pointer,
            &|p| loaded.loc(file, p),
            diags,
        );
    }
    let class = classifier.classify(&raw.name, &loaded.files[file].rel);
    let provider_name = enrich::provider_name(&raw.name);
    Tool {
        raw,
        class,
        kind: Kind::Write,
        destructive: false,
        provider_name,
        third_party: false,
    }
}

/// A fleet of servers often has two servers with a tool of the same name (`read_file` in a
/// filesystem server and an editor's). When every file defining the name is third-party, they
/// are different servers' tools: each keeps its name (what its server is called with) and gets
/// a provider name qualified by its file (`filesystem_read_file`), unique across the catalog,
/// with a warning. In the team's own files the same name twice stays an error (TR013).
fn qualify_shared_names(tools: &mut [Tool], loaded: &Loaded, diags: &mut Diagnostics) {
    let mut files_of: BTreeMap<&str, (BTreeSet<usize>, bool)> = BTreeMap::new();
    for t in tools.iter() {
        let e = files_of
            .entry(&t.raw.name)
            .or_insert((BTreeSet::new(), true));
        e.0.insert(t.raw.file);
        e.1 &= t.third_party;
    }
    let shared: BTreeSet<String> = files_of
        .into_iter()
        .filter(|(_, (files, third))| files.len() > 1 && *third)
        .map(|(n, _)| n.to_string())
        .collect();
    if shared.is_empty() {
        return;
    }
    let mut used: BTreeSet<String> = tools.iter().map(|t| t.provider_name.clone()).collect();
    for t in tools.iter_mut().filter(|t| shared.contains(&t.raw.name)) {
        // The file names the server (two files may share a group, never a name).
        let rel = &loaded.files[t.raw.file].rel;
        let stem = rel.strip_suffix(".json").unwrap_or(rel);
        let stem = stem.strip_suffix(".mcp").unwrap_or(stem);
        let mut qualified = enrich::provider_name(&format!("{stem}_{}", t.provider_name));
        if used.contains(&qualified) {
            let tag = &blake3::hash(rel.as_bytes()).to_hex()[..8];
            qualified = enrich::provider_name(&format!("{qualified}_{tag}"));
        }
        used.insert(qualified.clone());
        diags.push(
            Diagnostic::new(
                diag::Code::SharedToolName,
                format!(
                    "tool `{}` is defined by several servers; this one is `{qualified}` on the surfaces",
                    t.raw.name
                ),
            )
            .at(loaded.loc(t.raw.file, t.raw.name_pointer.clone()))
            .help("calls by op name are unaffected; to choose the names, rename the tools upstream"),
        );
        t.provider_name = qualified;
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
            third_party: t.third_party,
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
    let needs = |l: &crate::model::diag::Location| l.line.is_none() && l.pointer.is_some();
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

/// TR082 for every `[upstreams]` entry whose launch spec `approvals` does not hold: what a
/// reviewer must read before `serve` or `import --check` will run it. Only `toolreg lint` asks
/// (a build's output never depends on the machine it ran on).
pub fn unapproved_upstreams(
    definitions: &Path,
    approvals: &crate::trust::Approvals,
) -> Vec<Diagnostic> {
    let display = definitions.to_string_lossy().replace('\\', "/");
    let mut ignored = Diagnostics::default();
    let Some(lo) = overlay::load(definitions, &display, &mut ignored) else {
        return Vec::new();
    };
    lo.overlay
        .upstreams
        .iter()
        .filter_map(|(name, spec)| {
            let n = name.get_ref();
            // An entry that cannot run (TR080 says why) needs no approval yet.
            if ir::upstream_problem(n, spec).is_some() {
                return None;
            }
            let up = spec.to_upstream(n);
            let why = approvals.why_not(n, &up)?;
            let shown = crate::model::diag::escape_controls(n);
            Some(
                Diagnostic::new(
                    diag::Code::UpstreamUnapproved,
                    format!(
                        "[upstreams.{shown}] runs `{}`, which may not run here ({}); `serve` and `import --check` refuse to start it",
                        crate::trust::launch_line(&up),
                        crate::model::diag::escape_controls(&why)
                    ),
                )
                .at(lo.loc(name.span()))
                .help(format!(
                    "an upstream is code: read what it runs, then `toolreg approve -d {display} --upstream {shown}` (`toolreg approve --list` shows where approvals are kept); never approve in a job that runs pull requests"
                )),
            )
        })
        .collect()
}
