//! What an op record gets beyond its tool: examples (the overlay's, checked against the
//! schema, or drafted), argument aliases, and which ops discover an id argument's values.

use crate::compiler::enrich;
use crate::compiler::examples;
use crate::compiler::overlay::{LoadedOverlay, Overlay};
use crate::model::diag::{Code, Diagnostic, Diagnostics, Location};
use crate::model::registry::{Example, OpRecord, Origin};
use serde_json::Value;
use std::collections::BTreeMap;

/// Authored examples (each validated; an invalid one is an error naming the field), else one
/// synthesized minimal call (validated too; if none validates, a warning and no example).
pub(super) fn op_examples(
    op: &str,
    schema: &Value,
    ov: Option<&crate::compiler::overlay::OpOverride>,
    lo: &LoadedOverlay,
    params_loc: Location,
    diags: &mut Diagnostics,
) -> Vec<Example> {
    let authored = ov.map(|o| &o.examples[..]).unwrap_or_default();
    let check = |args: &Value, diags: &mut Diagnostics| -> Option<Vec<examples::Invalid>> {
        match examples::validate(schema, args) {
            Ok(errs) => Some(errs),
            Err(e) => {
                diags.push(
                    Diagnostic::new(
                        Code::BadSchema,
                        format!("the parameters schema of `{op}` is not valid JSON Schema: {e}"),
                    )
                    .at(params_loc.clone())
                    .help("fix the schema; toolreg cannot validate calls against it"),
                );
                None
            }
        }
    };
    if !authored.is_empty() {
        let mut out = Vec::new();
        for ex in authored {
            let spec = ex.get_ref();
            let Some(errs) = check(&spec.args, diags) else {
                return Vec::new();
            };
            if errs.is_empty() {
                out.push(Example {
                    description: spec.description.trim().to_string(),
                    args: spec.args.clone(),
                    origin: Origin::Overlay,
                });
            }
            for e in errs {
                let field = if e.pointer.is_empty() {
                    "the arguments".to_string()
                } else {
                    format!("`{}`", e.pointer)
                };
                diags.push(
                    Diagnostic::new(Code::InvalidExample, format!("example \"{}\" of `{op}`: {field}: {}", spec.description.trim(), e.message))
                        .at(lo.loc(ex.span()))
                        .help("fix the example's args to match the op's schema: every example is shown to models as a call to copy"),
                );
            }
        }
        return out;
    }
    let args = examples::synthesize(schema);
    match check(&args, diags) {
        Some(errs) if errs.is_empty() => vec![Example {
            description: if args.as_object().is_some_and(|a| a.is_empty()) {
                "Call with no arguments.".into()
            } else {
                "Minimal call: required arguments only, with placeholders to replace.".into()
            },
            args,
            origin: Origin::Derived,
        }],
        Some(errs) => {
            // The validator's messages quote the value: keep the finding one readable line.
            let mut why: Vec<String> = errs
                .iter()
                .take(3)
                .map(|e| {
                    let at = if e.pointer.is_empty() {
                        "/"
                    } else {
                        &e.pointer
                    };
                    crate::model::text::truncate_words(&format!("{at}: {}", e.message), 160)
                })
                .collect();
            if errs.len() > 3 {
                why.push(format!("and {} more", errs.len() - 3));
            }
            diags.push(
                Diagnostic::new(
                    Code::NoExample,
                    format!(
                        "no valid minimal call could be synthesized for `{op}` ({})",
                        why.join("; ")
                    ),
                )
                .at(params_loc)
                .help(format!(
                    "add an example under [[ops.\"{op}\".examples]] with `description` and `args`"
                )),
            );
            Vec::new()
        }
        None => Vec::new(),
    }
}

/// For each op with required id arguments, the ops that find those ids (the entity's search op,
/// else its list op, in the same group), then the op itself.
pub(super) fn add_id_discovery(ops: &mut BTreeMap<String, OpRecord>) {
    // (group, entity, action) -> the first visible op, built once: a lookup per id argument
    // instead of a scan of every op (quadratic on large catalogs).
    let mut index: BTreeMap<(&str, &str, &str), &str> = BTreeMap::new();
    for r in ops.values().filter(|r| !r.hidden) {
        if let Some(e) = r.entity.as_deref() {
            index
                .entry((r.group.as_str(), e, r.action.as_str()))
                .or_insert(r.op.as_str());
        }
    }
    let finder = |group: &str, entity: &str| -> Option<String> {
        let of = |action: &str| index.get(&(group, entity, action)).map(|op| op.to_string());
        of("search").or_else(|| of("list"))
    };
    let plan: Vec<(String, Vec<String>)> = ops
        .values()
        .map(|r| {
            let mut steps: Vec<String> = r
                .id_args
                .iter()
                .filter(|a| r.required_args.contains(a))
                .filter_map(|a| enrich::id_entity(a))
                .filter_map(|e| finder(&r.group, e))
                .filter(|f| *f != r.op)
                .collect();
            steps.dedup();
            if !steps.is_empty() {
                steps.push(r.op.clone());
            }
            (r.op.clone(), steps)
        })
        .collect();
    for (op, steps) in plan {
        ops.get_mut(&op).expect("op exists").id_discovery = steps;
    }
}

/// Per-op aliases, plus the global ones whose target this op has. An alias must name an
/// argument the op has and must not itself be one of its arguments.
pub(super) fn arg_aliases(
    op: &str,
    args: &[crate::model::registry::Arg],
    ov: Option<&crate::compiler::overlay::OpOverride>,
    overlay: &Overlay,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, String> {
    let has = |n: &str| args.iter().any(|a| a.name == n);
    let mut out = BTreeMap::new();
    for (alias, target) in &overlay.arg_aliases {
        if has(target) && !has(alias) {
            out.insert(alias.clone(), target.clone());
        }
    }
    for (alias, target) in ov.map(|o| &o.arg_aliases).into_iter().flatten() {
        let a = alias.get_ref();
        let problem = if !has(target) {
            Some(format!(
                "argument alias `{a}` of `{op}` targets `{target}`, which is not an argument of it"
            ))
        } else if has(a) {
            Some(format!(
                "argument alias `{a}` of `{op}` is itself an argument of it"
            ))
        } else {
            None
        };
        match problem {
            Some(msg) => {
                let names: Vec<&str> = args.iter().map(|x| x.name.as_str()).collect();
                diags.push(
                    Diagnostic::new(Code::BadArgAlias, msg)
                        .at(lo.loc(alias.span()))
                        .help(format!(
                            "aliases rename what models send into real arguments: {}",
                            names.join(", ")
                        )),
                );
            }
            None => {
                out.insert(a.clone(), target.clone());
            }
        }
    }
    out
}
