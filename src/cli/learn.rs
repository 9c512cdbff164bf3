//! `toolreg learn`: requests a team has seen join their ops' `queries` in the overlay, and with
//! requests no op serves (`--out-of-scope`), the `match` floors are calibrated for the catalog
//! as it will be searched: cross-fitted, so no request is measured against an overlay that
//! already holds it (each fold's requests are scored on an overlay learned from the others).

use super::args::Definitions;
use super::build::draft_beside;
use super::shared::{display, show};
use super::Format;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolreg::compiler::learn::{
    add_queries, read_seen, set_match_floors, without_queries, MAX_QUERIES_PER_OP,
};
use toolreg::compiler::OverlaySource;
use toolreg::runtime::{eval, Gateway};

/// What `learn` calibrates, beyond adding the requests.
pub(super) struct Calibration {
    /// Queries no op serves (eval's JSON lines, `expected` absent).
    pub(super) out_of_scope: PathBuf,
    /// How many folds the requests are cross-fitted over.
    pub(super) folds: usize,
    /// Also the hybrid floors, with this encoder (the bundled one, or `--model DIR`).
    #[cfg(feature = "semantic")]
    pub(super) encoder: Option<std::sync::Arc<dyn toolreg::semantic::Encoder>>,
}

impl Calibration {
    /// Whether the hybrid floors are calibrated too.
    fn hybrid(&self) -> bool {
        #[cfg(feature = "semantic")]
        return self.encoder.is_some();
        #[cfg(not(feature = "semantic"))]
        false
    }
}

/// `toolreg learn`: seen requests into the overlay's `queries` (and, with `calibration`, the
/// `[search]` floors), written only if the catalog still builds with them (the overlay is
/// staged beside itself and renamed into place). Nothing is written when anything fails.
pub(super) fn learn(
    defs: &Definitions,
    queries: &Path,
    calibration: Option<Calibration>,
) -> ExitCode {
    let path = defs
        .definitions
        .join(toolreg::compiler::overlay::OVERLAY_FILE);
    let shown = display(&path);
    let compiled = toolreg::compiler::compile(&defs.definitions);
    let Some(reg) = compiled.registry else {
        show(&compiled.diagnostics, Format::Text, defs.verbose);
        eprintln!("error: the definitions do not build; fix them first, nothing was written");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(queries) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read `{}`: {e}", display(queries));
            return ExitCode::from(2);
        }
    };
    let seen = match read_seen(&reg, &text) {
        Ok(s) => s,
        Err(faults) => {
            for f in faults.iter().take(20) {
                eprintln!("error: {}: {f}", display(queries));
            }
            if faults.len() > 20 {
                eprintln!("error: and {} more", faults.len() - 20);
            }
            eprintln!("   = help: each line is {{\"query\": \"...\", \"expected\": [\"op or tool name\"]}}; nothing was written");
            return ExitCode::from(2);
        }
    };
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            eprintln!("error[TR050]: cannot read `{shown}`: {e}; nothing was written");
            return ExitCode::from(2);
        }
    };
    let old_text = old.as_deref().unwrap_or_default();
    let (mut new, learned) = match add_queries(old_text, &seen) {
        Ok(x) => x,
        Err(why) => {
            eprintln!("error: cannot add to `{shown}`: {why}; nothing was written");
            return ExitCode::from(2);
        }
    };
    let mut said = Vec::new();
    if let Some(c) = &calibration {
        match calibrate(&defs.definitions, old_text, &seen, c, defs.quiet) {
            Ok(chosen) => {
                for floors in chosen {
                    let key = floors["key"].as_str().unwrap_or("match_lexical");
                    let (none_below, strong_from) = (
                        floors["none_below"].as_f64().unwrap_or_default(),
                        floors["strong_from"].as_f64().unwrap_or_default(),
                    );
                    new = match set_match_floors(&new, key, none_below, strong_from) {
                        Ok(t) => t,
                        Err(why) => {
                            eprintln!("error: cannot set [search] {key} in `{shown}`: {why}; nothing was written");
                            return ExitCode::from(2);
                        }
                    };
                    said.push(format!(
                        "[search] {key} = {{ none_below = {none_below}, strong_from = {strong_from} }}: cross-fitted, in scope `none` {}, out of scope `none` {} and `strong` {}",
                        percent(&floors["in_scope"]["none"]),
                        percent(&floors["out_of_scope"]["none"]),
                        percent(&floors["out_of_scope"]["strong"]),
                    ));
                }
            }
            Err(why) => {
                eprintln!("error: cannot calibrate `match`: {why}; nothing was written");
                return ExitCode::from(2);
            }
        }
    }
    let tmp = draft_beside(&path);
    let put = |text: &str| std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = put(&new) {
        let _ = std::fs::remove_file(&tmp);
        eprintln!("error[TR050]: cannot write `{shown}`: {e}");
        return ExitCode::from(2);
    }
    let after = toolreg::compiler::compile(&defs.definitions);
    if after.registry.is_none() {
        show(&after.diagnostics, Format::Text, defs.verbose);
        let restored = match &old {
            Some(o) => put(o),
            None => std::fs::remove_file(&path),
        };
        match restored {
            Ok(()) => eprintln!(
                "error: with the requests added the catalog does not build; `{shown}` is as it was"
            ),
            Err(e) => eprintln!(
                "error[TR050]: with the requests added the catalog does not build, and `{shown}` could not be put back: {e}"
            ),
        }
        return ExitCode::from(2);
    }
    eprintln!(
        "added {} request{} to {} op{} in `{shown}` ({} already there, {} past {MAX_QUERIES_PER_OP} per op); `toolreg build` to search with them",
        learned.added,
        if learned.added == 1 { "" } else { "s" },
        learned.ops,
        if learned.ops == 1 { "" } else { "s" },
        learned.known,
        learned.over
    );
    for line in &said {
        eprintln!("set {line}");
    }
    let hybrid_kept = calibration.as_ref().is_some_and(|c| !c.hybrid());
    if hybrid_kept && reg.search.match_hybrid.is_some() {
        eprintln!("warning: [search] match_hybrid was left as it was, chosen before these requests; pass --hybrid (or the --model the vectors are built with) to choose it again");
    }
    if calibration.is_some() && seen.len() < FEW_REQUESTS {
        eprintln!(
            "warning: {} requests decided the floors: 5% of them is {} request{}, so the share of new requests answered `none` can stray from it; calibrate again as the log grows",
            seen.len(),
            seen.len() / 20,
            if seen.len() / 20 == 1 { "" } else { "s" }
        );
    }
    ExitCode::SUCCESS
}

/// Fewer requests than this make rough floors (LiveMCPBench, 47 requests a half: 8.5% of the
/// other half answered `none` against the 5% calibrated for).
const FEW_REQUESTS: usize = 100;

/// A share as a percentage with one decimal.
fn percent(v: &serde_json::Value) -> String {
    format!("{:.1}%", v.as_f64().unwrap_or_default() * 100.0)
}

/// The `match` floors (lexical, and hybrid with an encoder) chosen on signals cross-fitted over
/// `c.folds` folds: request `i` is in fold `i % folds`; each fold's requests, and every
/// out-of-scope query, are scored on the catalog compiled with the overlay learned from the
/// other folds (the requests of the fold taken out of it first, should it hold them already).
/// A floor chosen on requests the overlay already holds would be too high: they match their own
/// words.
fn calibrate(
    definitions: &Path,
    overlay: &str,
    seen: &[(String, Vec<String>)],
    c: &Calibration,
    quiet: bool,
) -> Result<Vec<serde_json::Value>, String> {
    let oos_text = std::fs::read_to_string(&c.out_of_scope)
        .map_err(|e| format!("cannot read `{}`: {e}", display(&c.out_of_scope)))?;
    let oos: Vec<String> =
        eval::queries(&oos_text).map_err(|e| format!("{}: {e}", display(&c.out_of_scope)))?;
    if seen.len() < c.folds {
        return Err(format!(
            "{} requests cannot be split into {} folds",
            seen.len(),
            c.folds
        ));
    }
    #[cfg(feature = "semantic")]
    let encoder = c.encoder.clone().map(Remembering::new);
    let mut lexical = (Vec::new(), Vec::new());
    #[cfg(feature = "semantic")]
    let mut hybrid = (Vec::new(), Vec::new());
    for fold in 0..c.folds {
        let mut progress = super::progress::Progress::start(
            &format!("calibrating `match`: fold {} of {}", fold + 1, c.folds),
            quiet,
        );
        let (held, rest): (Vec<_>, Vec<_>) = seen
            .iter()
            .cloned()
            .enumerate()
            .partition(|(i, _)| i % c.folds == fold);
        let held: Vec<(String, Vec<String>)> = held.into_iter().map(|(_, s)| s).collect();
        let rest: Vec<(String, Vec<String>)> = rest.into_iter().map(|(_, s)| s).collect();
        let (text, _) = add_queries(&without_queries(overlay, &held)?, &rest)?;
        let compiled = toolreg::compiler::compile_with(definitions, OverlaySource::Text(text));
        let reg = compiled
            .registry
            .ok_or("the catalog does not build with a fold's requests")?;
        let score = |gw: &Gateway, into: &mut (Vec<f64>, Vec<f64>)| {
            into.0
                .extend(held.iter().filter_map(|(q, _)| eval::match_signal(gw, q)));
            into.1
                .extend(oos.iter().filter_map(|q| eval::match_signal(gw, q)));
        };
        #[cfg(feature = "semantic")]
        if let Some(encoder) = &encoder {
            let (vectors, _) = toolreg::semantic::build(&reg, encoder, None)?;
            let file = toolreg::semantic::VectorFile::parse(&vectors)?;
            let dense = toolreg::runtime::hybrid::Hybrid::new(
                &reg,
                &file,
                std::sync::Arc::new(encoder.clone()),
                None,
            )?;
            score(
                &Gateway::for_search(reg.clone()).with_hybrid(dense),
                &mut hybrid,
            );
        }
        score(&Gateway::for_search(reg), &mut lexical);
        progress.finish();
    }
    let lexical = eval::floors(lexical.0, lexical.1, false)?;
    #[cfg(feature = "semantic")]
    if encoder.is_some() {
        return Ok(vec![lexical, eval::floors(hybrid.0, hybrid.1, true)?]);
    }
    Ok(vec![lexical])
}

/// An encoder that embeds each distinct text once: the folds share most texts (every op's own,
/// every request, every out-of-scope query), so calibrating costs about one embedding of each.
#[cfg(feature = "semantic")]
#[derive(Clone)]
struct Remembering {
    inner: std::sync::Arc<dyn toolreg::semantic::Encoder>,
    seen: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>>,
}

#[cfg(feature = "semantic")]
impl Remembering {
    fn new(inner: std::sync::Arc<dyn toolreg::semantic::Encoder>) -> Remembering {
        Remembering {
            inner,
            seen: Default::default(),
        }
    }
}

#[cfg(feature = "semantic")]
impl toolreg::semantic::Encoder for Remembering {
    fn identity(&self) -> &toolreg::semantic::ModelIdentity {
        self.inner.identity()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let missing: Vec<&str> = {
            let seen = self
                .seen
                .lock()
                .map_err(|_| "an embedding thread panicked")?;
            let mut m: Vec<&str> = texts
                .iter()
                .copied()
                .filter(|t| !seen.contains_key(*t))
                .collect();
            m.sort_unstable();
            m.dedup();
            m
        };
        if !missing.is_empty() {
            let vectors = self.inner.embed(&missing)?;
            let mut seen = self
                .seen
                .lock()
                .map_err(|_| "an embedding thread panicked")?;
            for (t, v) in missing.iter().zip(vectors) {
                seen.insert((*t).to_string(), v);
            }
        }
        let seen = self
            .seen
            .lock()
            .map_err(|_| "an embedding thread panicked")?;
        Ok(texts.iter().map(|t| seen[*t].clone()).collect())
    }
}
