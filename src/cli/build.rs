//! The compile commands: `build`, `check`, `lint`, `init`, `report`, `policy`, and the lock
//! `build` keeps and `check` verifies.

use super::args::{Definitions, Format, LintFormat, Out};
use super::lock_file::{lock_is_current, lock_wanted, LockUpdate};
use super::progress::Progress;
use super::shared::{display, show};
use std::process::ExitCode;
use toolreg::builder::{generate, generate_outputs};
use toolreg::diag::Diagnostics;
use toolreg::emit::outputs::{Artifacts as _, Outputs};
use toolreg::output::{self, Ownership};
use toolreg::write::cache::{self, BuildCache, BuildInputs, BuildRecord, Said};

/// Compiles and writes every artifact (all-or-nothing), then keeps `toolreg.lock` current. A
/// build whose inputs, options and toolreg are those of the last one, into a folder still as
/// that build left it, is already done: it says what it said then and writes nothing. Any
/// other build takes unchanged ops' Rust types and token counts from the cache.
pub(super) fn build(defs: Definitions, out: Out, format: Format, lock: bool) -> ExitCode {
    out.warn_unused_model();
    left_draft(
        &defs
            .definitions
            .join(toolreg::compiler::overlay::OVERLAY_FILE),
        false,
    );
    let keep_lock = lock || lock_wanted(&defs.definitions);
    let emitters = out.emitters();
    let inputs = BuildInputs {
        definitions: &defs.definitions,
        out: &out.out,
        emitters: &emitters,
        strict: out.strict,
        lock,
        templates: out.templates.as_deref(),
        #[cfg(feature = "semantic")]
        model: out.model.as_deref(),
        #[cfg(not(feature = "semantic"))]
        model: None,
    };
    let cache = BuildCache::for_output(&out.out);
    let print = cache::fingerprint(&inputs);
    if let Some((record, read)) = print
        .as_deref()
        .and_then(|p| done_already(&cache, p, &defs, &out, keep_lock))
    {
        replay(&record, &defs, &out, format);
        if defs.verbose {
            let how = if read {
                "every file read and found as written"
            } else {
                "the files known by their identity, none read"
            };
            eprintln!("cache: nothing changed since the last build ({how}); nothing was compiled");
        }
        return ExitCode::SUCCESS;
    }
    // A compile after all: small pages from here on (see `no_huge_pages`).
    crate::no_huge_pages();
    if cache.holds_memo() {
        crate::keep_freed_memory();
    }
    let memo = std::sync::Arc::new(cache.memo());
    let mut settings = out.settings();
    settings.memo = Some(memo.clone());
    let mut progress = Progress::start(
        &format!("building {}", display(&defs.definitions)),
        defs.quiet,
    );
    progress.stage("compiling and emitting");
    // The folder is claimed (locked) for the whole build, so each file is staged as it is made.
    // A folder that cannot be claimed is left to the write, which says why (after what the
    // compile said), as is one nested with the definitions.
    let claim = output::ensure_apart(&defs.definitions, &out.out)
        .ok()
        .and_then(|()| output::claim(&out.out, Ownership::Folder).ok());
    let baseline = claim.as_ref().map(output::Claim::baseline);
    let g = generate_outputs(
        &defs.definitions,
        &emitters,
        &settings,
        out.strict,
        Outputs::spilling().against(baseline),
    );
    progress.finish();
    show(&g.compiled.diagnostics, format, defs.verbose);
    if defs.verbose {
        let s = memo.stats();
        eprintln!(
            "cache: {} step{} reused, {} computed, {} dropped (failed their check), {} repeated",
            s.hits,
            if s.hits == 1 { "" } else { "s" },
            s.misses,
            s.rejected,
            s.repeats
        );
    }
    if out.strict && strict_failure(&g.compiled.diagnostics) {
        eprintln!(
            "error: --strict: an emitter could not do its whole job; `{}` was not changed",
            display(&out.out)
        );
        return ExitCode::from(2);
    }
    let Some(files) = g.outputs else {
        eprintln!(
            "error: build stopped; `{}` was not changed",
            display(&out.out)
        );
        return ExitCode::from(2);
    };
    if let Err(d) = output::ensure_apart(&defs.definitions, &out.out) {
        show(&vec![*d].into(), format, true);
        return ExitCode::from(2);
    }
    let mut progress = Progress::start(&format!("writing {}", display(&out.out)), defs.quiet);
    let reg = g
        .compiled
        .registry
        .as_ref()
        .expect("files imply a registry");
    // While the outputs are written: the lock, and what the build said as its record keeps it.
    let (written, lock_update, said) = std::thread::scope(|scope| {
        let lock_update =
            keep_lock.then(|| scope.spawn(|| LockUpdate::prepare(&defs.definitions, reg)));
        let said = print
            .is_some()
            .then(|| scope.spawn(|| Said::of(&g.compiled.diagnostics)));
        let written = match &claim {
            Some(claim) => claim.write(&files),
            None => output::write(&out.out, &files, Ownership::Folder),
        };
        (written, lock_update.map(joined), said.map(joined))
    });
    progress.finish();
    let code = match written {
        Ok(r) => {
            say_built(
                reg.counts.ops,
                reg.counts.groups,
                &reg.registry_version,
                &r,
                &out,
            );
            let quarantined = quarantined_line(reg);
            if let Some(line) = &quarantined {
                eprintln!("{line}");
            }
            if lock_update.as_ref().map(|u| u.commit(&defs.definitions)) == Some(false) {
                cache.save(Some(&memo), None);
                return ExitCode::from(2);
            }
            // Kept only for a clean build whose inputs did not change while it ran.
            let record = (r.kept.is_empty() && cache::fingerprint(&inputs) == print)
                .then(|| {
                    Some(BuildRecord::new(
                        print.clone()?,
                        &files.text(toolreg::emit::MANIFEST).ok()?,
                        keep_lock
                            .then(|| cache::lock_hash(&defs.definitions))
                            .flatten(),
                        said?,
                        reg,
                        files.count(),
                        quarantined,
                    ))
                })
                .flatten();
            cache.save(Some(&memo), record.as_ref());
            if r.kept.is_empty() {
                ExitCode::SUCCESS
            } else {
                show(&output::kept_diagnostics(&out.out, &r).into(), format, true);
                ExitCode::from(1)
            }
        }
        Err(d) => {
            show(&vec![*d].into(), format, true);
            ExitCode::from(2)
        }
    };
    // The claim goes (releasing its lock and anything it staged); the registry, the files'
    // index, the memo and the lock do not: the process ends with this command, and freeing a
    // 10,000-op registry one allocation at a time was 2% of a registry-only build (the memo's
    // table of 110,000 entries another 1% of a one-tool rebuild), for memory the exit returns.
    drop(claim);
    std::mem::forget(lock_update);
    std::mem::forget(files);
    std::mem::forget(memo);
    std::mem::forget(g.compiled);
    code
}

/// A scoped thread's result; its panic goes on in the caller.
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The last build's record, when this build would be the same one: same fingerprint, the folder
/// has nothing to settle and holds every file as written, and the lock is as that build left it;
/// with whether the files had to be read to know it.
fn done_already(
    cache: &BuildCache,
    fingerprint: &str,
    defs: &Definitions,
    out: &Out,
    keep_lock: bool,
) -> Option<(BuildRecord, bool)> {
    let record = cache.record_for(fingerprint)?;
    let lock_now = keep_lock
        .then(|| cache::lock_hash(&defs.definitions))
        .flatten();
    let settled = matches!(output::settle(&out.out), Ok(false));
    if !settled || record.lock != lock_now {
        return None;
    }
    match cache::output_state(&out.out, &record) {
        cache::OutputState::Changed => None,
        cache::OutputState::AsWritten { seen, read } if seen == record.seen => Some((record, read)),
        // Read in full and found as written: keep what was seen, so the next one reads nothing.
        cache::OutputState::AsWritten { seen, read } => {
            let record = BuildRecord { seen, ..record };
            cache.save_record(&record);
            Some((record, read))
        }
    }
}

/// Says what the recorded build said, with nothing written.
fn replay(record: &BuildRecord, defs: &Definitions, out: &Out, format: Format) {
    eprint!(
        "{}",
        match format {
            Format::Text if defs.verbose => &record.diagnostics_text,
            Format::Text => &record.diagnostics_brief,
            Format::Json => &record.diagnostics_json,
        }
    );
    let unchanged = output::WriteReport {
        unchanged: record.files,
        ..Default::default()
    };
    say_built(
        record.ops,
        record.groups,
        &record.registry_version,
        &unchanged,
        out,
    );
    if let Some(line) = &record.quarantined {
        eprintln!("{line}");
    }
}

/// "built N ops in G groups (version): W written, R removed, U unchanged in `out`".
fn say_built(ops: usize, groups: usize, version: &str, r: &output::WriteReport, out: &Out) {
    eprintln!(
        "built {} op{} in {} group{} ({}): {} written, {} removed, {} unchanged in `{}`",
        ops,
        if ops == 1 { "" } else { "s" },
        groups,
        if groups == 1 { "" } else { "s" },
        version,
        r.written.len(),
        r.removed.len(),
        r.unchanged,
        display(&out.out)
    );
}

/// Exit 1 unless the output folder and `toolreg.lock` are exactly what `build` would write.
pub(super) fn check(defs: Definitions, out: Out, format: Format) -> ExitCode {
    out.warn_unused_model();
    let mut progress = Progress::start(&format!("checking {}", display(&out.out)), defs.quiet);
    let g = generate_outputs(
        &defs.definitions,
        &out.emitters(),
        &out.settings(),
        out.strict,
        Outputs::spilling().against(output::baseline(&out.out)),
    );
    progress.finish();
    if out.strict && strict_failure(&g.compiled.diagnostics) {
        show(&g.compiled.diagnostics, format, defs.verbose);
        return ExitCode::from(2);
    }
    let Some(files) = g.outputs else {
        show(&g.compiled.diagnostics, format, defs.verbose);
        eprintln!(
            "error: cannot check `{}`: the definitions have errors",
            display(&out.out)
        );
        return ExitCode::from(2);
    };
    if let Err(d) = output::ensure_apart(&defs.definitions, &out.out) {
        show(&vec![*d].into(), format, true);
        return ExitCode::from(2);
    }
    let lock_current = match &g.compiled.registry {
        Some(reg) => lock_is_current(&defs.definitions, reg),
        None => true,
    };
    match output::check(&out.out, &files, Ownership::Folder) {
        Ok(report) if report.is_clean() && !lock_current => ExitCode::from(1),
        Ok(report) if report.is_clean() => {
            eprintln!(
                "`{}` is up to date ({} files)",
                display(&out.out),
                files.count()
            );
            if let Some(reg) = &g.compiled.registry {
                say_quarantined(reg);
            }
            ExitCode::SUCCESS
        }
        Ok(report) => {
            let fix = format!(
                "toolreg build --definitions {} --out {}",
                display(&defs.definitions),
                display(&out.out)
            );
            eprint!(
                "{}",
                output::render_check(&display(&out.out), &report, &fix)
            );
            ExitCode::from(1)
        }
        Err(d) => {
            show(&vec![*d].into(), format, true);
            ExitCode::from(2)
        }
    }
}

/// Where `init` stages the overlay before renaming it into place.
pub(super) fn draft_beside(overlay: &std::path::Path) -> std::path::PathBuf {
    overlay.with_extension("toml.toolreg-tmp")
}

/// A draft a killed `init` left beside the overlay (the overlay itself is whole: the draft is
/// renamed into place or not at all): `init` removes it, other commands say it is there.
pub(super) fn left_draft(overlay: &std::path::Path, remove: bool) {
    let tmp = draft_beside(overlay);
    if !tmp.is_file() {
        return;
    }
    let shown = display(&tmp);
    if remove && std::fs::remove_file(&tmp).is_ok() {
        eprintln!("note: removed `{shown}`, a draft an interrupted `toolreg init` left (the overlay was not touched by it)");
    } else {
        eprintln!("note: `{shown}` is a draft an interrupted `toolreg init` left; the overlay is whole. Delete it, or run `toolreg init` again");
    }
}

/// Diagnostics only, with every upstream this machine has not approved.
pub(super) fn lint(defs: Definitions, format: LintFormat) -> ExitCode {
    let g = generate(&defs.definitions, &[]);
    let mut diags = g.compiled.diagnostics.clone();
    // An upstream is code: flag every one this machine has not approved to run (a store
    // that cannot be read approves nothing).
    let approvals = toolreg::trust::Approvals::load_default().unwrap_or_default();
    for d in toolreg::compiler::unapproved_upstreams(&defs.definitions, &approvals) {
        diags.push(d);
    }
    diags.sort();
    let diags = &diags;
    match format {
        LintFormat::Text => show(diags, Format::Text, defs.verbose),
        LintFormat::Json => show(diags, Format::Json, defs.verbose),
        // A file for code-scanning uploads: on stdout, so `> toolreg.sarif` keeps it whole.
        LintFormat::Sarif => print!("{}", diags.render_sarif(env!("CARGO_PKG_VERSION"))),
    }
    if !defs.definitions.is_dir() {
        return ExitCode::from(2);
    }
    if diags.has_errors() {
        ExitCode::from(1)
    } else {
        if matches!(format, LintFormat::Text) && diags.is_empty() {
            eprintln!("no errors or warnings");
        }
        ExitCode::SUCCESS
    }
}

/// The compiled registry, or its diagnostics shown and exit code 2.
fn compiled(defs: &Definitions) -> Result<toolreg::Registry, ExitCode> {
    let g = generate(&defs.definitions, &[]);
    g.compiled.registry.ok_or_else(|| {
        show(&g.compiled.diagnostics, Format::Text, defs.verbose);
        ExitCode::from(2)
    })
}

/// Character and token counts of every surface.
pub(super) fn report(defs: Definitions, format: Format) -> ExitCode {
    let reg = match compiled(&defs) {
        Ok(reg) => reg,
        Err(code) => return code,
    };
    let help = toolreg::emit::help::build(&reg);
    let report = toolreg::report::build(&reg, &help);
    match format {
        Format::Text => print!("{}", toolreg::report::render_text(&report)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ),
    }
    ExitCode::SUCCESS
}

/// The policy drafted from an op's description, as overlay TOML.
pub(super) fn policy(defs: Definitions, draft: String) -> ExitCode {
    let reg = match compiled(&defs) {
        Ok(reg) => reg,
        Err(code) => return code,
    };
    let record = reg.ops.get(&draft).or_else(|| reg.op_by_tool_name(&draft));
    let Some(record) = record else {
        let near = toolreg::diag::nearest(&draft, reg.ops.keys().map(String::as_str));
        eprintln!("error: `{draft}` is not an op or tool name");
        if let Some(n) = near {
            eprintln!("   = help: did you mean `{n}`?");
        }
        return ExitCode::from(2);
    };
    let display = defs.definitions.to_string_lossy();
    let mut diags = Diagnostics::default();
    let cues = toolreg::compiler::overlay::load(&defs.definitions, &display, &mut diags)
        .map(|lo| lo.overlay.policy_cues)
        .unwrap_or_default();
    match toolreg::compiler::policy::draft(&record.description, &cues) {
        Some(spec) => {
            print!(
                "{}",
                toolreg::compiler::policy::as_overlay_toml(&record.op, &spec)
            );
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("no policy cues found in the description of `{}`", record.op);
            eprintln!("   = help: write [ops.\"{}\".policy] by hand, or add cue phrases under [policy_cues]", record.op);
            ExitCode::SUCCESS
        }
    }
}

/// `toolreg init`: draft the overlay, check it reproduces the zero-config registry, write it.
pub(super) fn init(defs: &Definitions, force: bool, stdout: bool) -> ExitCode {
    use toolreg::compiler::draft::{draft, keep_tables, DraftError, KeepError};
    let path = defs
        .definitions
        .join(toolreg::compiler::overlay::OVERLAY_FILE);
    let shown = display(&path);
    if !stdout {
        left_draft(&path, true);
    }
    if path.exists() && !force && !stdout {
        eprintln!("error: `{shown}` exists; toolreg init does not replace an overlay");
        eprintln!(
            "   = help: `--force` replaces it (the draft ignores it), `--stdout` prints the draft"
        );
        return ExitCode::from(2);
    }
    let d = match draft(&defs.definitions) {
        Ok(d) => d,
        Err(DraftError::Input(diags)) => {
            show(&diags, Format::Text, defs.verbose);
            eprintln!("error: no draft: the definitions have errors that inference cannot fix");
            return ExitCode::from(2);
        }
        Err(DraftError::Mismatch(why)) => {
            eprintln!("error: the draft did not reproduce the zero-config registry: {why}");
            eprintln!("   = help: this is a bug in toolreg; please report it with the definitions");
            return ExitCode::from(2);
        }
    };
    if stdout {
        print!("{}", d.text);
        return ExitCode::SUCCESS;
    }
    // What the old overlay holds beyond the drafted tables is kept (with --force), never lost.
    let old = match std::fs::read_to_string(&path) {
        Ok(old) => Some(old),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            eprintln!(
                "error[TR050]: cannot read `{shown}` to keep its tables: {e}; nothing was written"
            );
            return ExitCode::from(2);
        }
    };
    let merged = match old
        .as_deref()
        .map(|o| keep_tables(&defs.definitions, &d, o))
    {
        None => None,
        Some(Ok(m)) => Some(m),
        Some(Err(KeepError::Unreadable(why))) => {
            eprintln!("error: cannot keep the tables of `{shown}`: {why}; nothing was written");
            eprintln!("   = help: fix it, or move it away to start over; `--stdout` prints the draft alone");
            return ExitCode::from(2);
        }
        Some(Err(KeepError::DoNotFit(diags))) => {
            show(&diags, Format::Text, defs.verbose);
            eprintln!("error: the draft with the tables kept from `{shown}` does not build; nothing was written");
            eprintln!("   = help: `--stdout` prints the draft alone: merge by hand what still fits (e.g. [ops] entries of ops the draft renamed)");
            return ExitCode::from(2);
        }
    };
    let text = merged.as_ref().map_or(&d.text, |m| &m.text);
    // Beside the target, then renamed: a reader never sees half a file.
    let tmp = draft_beside(&path);
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        eprintln!("error[TR050]: cannot write `{shown}`: {e}");
        return ExitCode::from(2);
    }
    eprintln!(
        "wrote `{shown}` for {} tools in {} file{}: {} group{}, {} entities, {} rule{} ({} ops) and {} special case{}, {} profile{}",
        d.tools,
        d.files,
        if d.files == 1 { "" } else { "s" },
        d.groups,
        if d.groups == 1 { "" } else { "s" },
        d.entities,
        d.rules,
        if d.rules == 1 { "" } else { "s" },
        d.by_rules,
        d.special,
        if d.special == 1 { "" } else { "s" },
        d.profiles,
        if d.profiles == 1 { "" } else { "s" },
    );
    match &merged {
        Some(m) if !m.kept.is_empty() => eprintln!(
            "kept from the old overlay: {}; the draft alone gives registry {}, the same as with no overlay, and with the kept tables {}; review it, then `toolreg build`",
            m.kept.join(", "),
            d.registry_version,
            m.registry_version
        ),
        _ => eprintln!(
            "building with it gives registry {}, the same as with no overlay; review it, then `toolreg build`",
            d.registry_version
        ),
    }
    ExitCode::SUCCESS
}

/// Under `--strict`, emitter fallbacks are failures.
fn strict_failure(diags: &Diagnostics) -> bool {
    diags
        .iter()
        .any(|d| d.code == toolreg::diag::Code::UntypedOp)
}

/// The build summary's line for third-party tools that were left out (at most ten named).
fn say_quarantined(reg: &toolreg::Registry) {
    if let Some(line) = quarantined_line(reg) {
        eprintln!("{line}");
    }
}

/// The line naming the quarantined third-party tools, if any.
fn quarantined_line(reg: &toolreg::Registry) -> Option<String> {
    let q = &reg.quarantined;
    if q.is_empty() {
        return None;
    }
    let named: Vec<String> = q
        .iter()
        .take(10)
        .map(|t| {
            format!(
                "`{}` ({}, {})",
                toolreg::diag::escape_controls(&t.tool_name),
                t.file,
                t.codes.join("+")
            )
        })
        .collect();
    let more = q.len().saturating_sub(named.len());
    Some(format!(
        "quarantined {} third-party tool{} (in no surface; TR081 above says why; --strict makes them errors): {}{}",
        q.len(),
        if q.len() == 1 { "" } else { "s" },
        named.join(", "),
        if more > 0 { format!(", and {more} more") } else { String::new() }
    ))
}
