//! Sets of ops the overlay names by op or glob: profiles, clusters (seed 004) and access
//! rules; a pattern that selects nothing is reported where it was written.

use crate::compiler::classify::glob_match;
use crate::compiler::overlay::LoadedOverlay;
use crate::model::diag::{Code, Diagnostic, Diagnostics, Location};
use crate::model::registry::{Kind, OpRecord, Profile};
use std::collections::{BTreeMap, BTreeSet};

/// The ops a list of names and globs selects, reporting patterns that select nothing.
fn select_ops(
    ops: &BTreeMap<String, OpRecord>,
    patterns: &[String],
    what: &str,
    at: Location,
    diags: &mut Diagnostics,
) -> BTreeSet<String> {
    let mut chosen = BTreeSet::new();
    for p in patterns {
        let hits: Vec<&String> = ops.keys().filter(|op| glob_match(p, op)).collect();
        if hits.is_empty() {
            let (code, msg) = if p.contains('*') {
                (
                    Code::EmptyGlob,
                    format!("pattern `{p}` in {what} matches no op"),
                )
            } else {
                (
                    Code::UnknownProfileOp,
                    format!("{what} lists `{p}`, which is not an op"),
                )
            };
            let near = crate::model::diag::nearest(p, ops.keys().map(String::as_str));
            diags.push(Diagnostic::new(code, msg).at(at.clone()).help(
                near.map_or("check the op names in registry.json".to_string(), |n| {
                    format!("did you mean `{n}`?")
                }),
            ));
        }
        chosen.extend(hits.into_iter().cloned());
    }
    chosen
}

/// `[access.scopes]` -> the op list each scope grants: its `ops` globs (every op when neither
/// `ops` nor `profiles` is given) and its profiles' ops, kept when their kind is one of `kinds`.
pub(super) fn access(
    ops: &BTreeMap<String, OpRecord>,
    profiles: &BTreeMap<String, crate::model::registry::Profile>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, crate::model::registry::AccessScope> {
    let mut out = BTreeMap::new();
    for (name, spec) in &lo.overlay.access.scopes {
        let at = lo.loc(name.span());
        let name = name.get_ref();
        let shown = crate::model::diag::escape_controls(name);
        let bad = |diags: &mut Diagnostics, what: String, help: &str| {
            diags.push(
                Diagnostic::new(
                    Code::OverlayInvalid,
                    format!("[access.scopes.\"{shown}\"] {what}"),
                )
                .at(at.clone())
                .help(help.to_string()),
            );
        };
        if name.trim().is_empty() || name.len() > 128 || name.chars().any(char::is_whitespace) {
            bad(
                diags,
                "is not a scope name (no spaces, 1 to 128 characters)".into(),
                "use the scope exactly as tokens carry it, e.g. `tools:read`",
            );
            continue;
        }
        let kinds = spec.kinds.clone().unwrap_or_else(|| vec!["read".into()]);
        if let Some(k) = kinds
            .iter()
            .find(|k| !["read", "write", "destructive"].contains(&k.as_str()))
        {
            bad(
                diags,
                format!("has the kind `{}`", crate::model::diag::escape_controls(k)),
                "kinds are `read`, `write` (not destructive) and `destructive`",
            );
            continue;
        }
        let what = format!("`ops` of [access.scopes.\"{shown}\"]");
        let mut chosen = if spec.ops.is_empty() && spec.profiles.is_empty() {
            ops.keys().cloned().collect()
        } else {
            select_ops(ops, &spec.ops, &what, at.clone(), diags)
        };
        for p in &spec.profiles {
            match profiles.get(p) {
                Some(profile) => chosen.extend(profile.ops.iter().cloned()),
                None => bad(
                    diags,
                    format!(
                        "names the profile `{}`, which does not exist",
                        crate::model::diag::escape_controls(p)
                    ),
                    "profiles are the tables under [profiles]",
                ),
            }
        }
        let granted: Vec<String> = chosen
            .into_iter()
            .filter(|op| {
                let r = &ops[op];
                let kind = if r.destructive {
                    "destructive"
                } else if r.kind == Kind::Write {
                    "write"
                } else {
                    "read"
                };
                kinds.iter().any(|k| k == kind)
            })
            .collect();
        out.insert(
            name.clone(),
            crate::model::registry::AccessScope { ops: granted },
        );
    }
    out
}

pub(super) fn clusters(
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, crate::model::registry::Cluster> {
    lo.overlay
        .clusters
        .iter()
        .map(|(name, spec)| {
            let what = format!("`ops` of cluster `{}`", name.get_ref());
            let selected = select_ops(ops, &spec.ops, &what, lo.loc(name.span()), diags);
            let mut triggers: Vec<String> = spec
                .triggers
                .iter()
                .map(|t| t.trim().to_lowercase())
                .filter(|t| !t.is_empty())
                .collect();
            triggers.sort();
            triggers.dedup();
            let mut contexts = spec.contexts.clone();
            contexts.sort();
            contexts.dedup();
            let cluster = crate::model::registry::Cluster {
                description: spec.description.clone(),
                ops: selected.into_iter().collect(),
                triggers,
                contexts,
            };
            (name.get_ref().clone(), cluster)
        })
        .collect()
}

pub(super) fn profiles(
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Profile> {
    let mut out = BTreeMap::new();
    for (name, spec) in &lo.overlay.profiles {
        // A profile name becomes a file name (`surfaces/profiles/NAME.json`) and a scope name.
        if !crate::compiler::enrich::provider_valid(name.get_ref()) {
            diags.push(
                Diagnostic::new(
                    Code::UnsafeName,
                    format!(
                        "profile name `{}` is not one safe name",
                        name.get_ref().escape_debug()
                    ),
                )
                .at(lo.loc(name.span()))
                .help("use letters, digits, `_` and `-` only, at most 64 characters (it becomes `surfaces/profiles/NAME.json`)"),
            );
            continue;
        }
        let select =
            |patterns: &[String], what: &str, diags: &mut Diagnostics| -> BTreeSet<String> {
                let what = format!("{what} of profile `{}`", name.get_ref());
                select_ops(ops, patterns, &what, lo.loc(name.span()), diags)
            };
        let mut selected = select(&spec.ops, "`ops`", diags);
        if !spec.kinds.is_empty() {
            selected.retain(|op| spec.kinds.contains(&ops[op].kind));
        }
        selected.retain(|op| !ops[op].hidden);
        let core: BTreeSet<String> = select(&spec.core, "`core`", diags)
            .intersection(&selected)
            .cloned()
            .collect();
        out.insert(
            name.get_ref().clone(),
            Profile {
                description: spec.description.clone(),
                ops: selected.into_iter().collect(),
                core: core.into_iter().collect(),
            },
        );
    }
    out
}
