//! Provider lints: what the major providers reject or penalize, checked on every model-facing
//! surface (the gateway, the direct definitions, each profile) before anything is written.
//!
//! - parameters must be `type: object` at the top (TR060), with no top-level `enum` / `not`
//!   (TR061); a top-level `oneOf` / `anyOf` / `allOf` is sent as a projection (TR066, a warning);
//! - tool names must match `^[a-zA-Z0-9_-]{1,64}$` (TR062);
//! - `additionalProperties: false` should be set, or models invent arguments (TR063);
//! - the overlay's token budgets per tool, per profile and for the gateway (TR064).

use super::overlay::LoadedOverlay;
use crate::compiler::report::surface_size;
use crate::compiler::surfaces;
use crate::model::diag::{Code, Diagnostic, Diagnostics, Location};
use crate::model::registry::Registry;
use serde_json::Value;
use std::collections::BTreeMap;

/// Checks every surface. `op_locations` maps each op to its parameters in the definitions.
pub fn check(
    reg: &Registry,
    lo: &LoadedOverlay,
    op_locations: &BTreeMap<String, Location>,
    diags: &mut Diagnostics,
) {
    let overlay_loc = |span: Option<std::ops::Range<usize>>| lo.loc(span.unwrap_or(0..0));
    let gateway = surfaces::gateway(reg);
    // Direct and profile definitions carry each visible op's schema and provider name as is, so
    // they are checked once, on the records (building them would copy every schema).
    let visible = || reg.ops.values().filter(|r| !r.hidden);

    for r in visible() {
        let op = r.op.as_str();
        let at = op_locations
            .get(op)
            .cloned()
            .unwrap_or_else(|| overlay_loc(None));
        check_schema(op, &r.parameters_schema, &at, diags);
        if r.parameters_schema.get("additionalProperties") != Some(&Value::Bool(false)) {
            diags.push(
                Diagnostic::new(Code::OpenParameters, format!("parameters of `{op}` do not set `additionalProperties: false`"))
                    .at(at.clone())
                    .help("add `\"additionalProperties\": false` so models cannot invent arguments (and providers' strict modes accept the tool)"),
            );
        }
    }
    let spans = [
        (
            &reg.gateway.help,
            lo.overlay.gateway.help.as_ref().map(|s| s.span()),
        ),
        (
            &reg.gateway.exec,
            lo.overlay.gateway.exec.as_ref().map(|s| s.span()),
        ),
        (
            &reg.gateway.search,
            lo.overlay.gateway.search.as_ref().map(|s| s.span()),
        ),
        (
            reg.gateway.batch.as_ref().unwrap_or(&reg.gateway.search),
            lo.overlay.gateway.batch_name.as_ref().map(|s| s.span()),
        ),
    ];
    let names = gateway
        .iter()
        .map(|d| {
            (
                d.name.as_str(),
                overlay_loc(
                    spans
                        .iter()
                        .find(|(n, _)| **n == d.name)
                        .and_then(|(_, s)| s.clone()),
                ),
            )
        })
        .chain(visible().map(|r| {
            (
                r.provider_name.as_str(),
                op_locations
                    .get(&r.op)
                    .cloned()
                    .unwrap_or_else(|| overlay_loc(None)),
            )
        }));
    for (name, at) in names {
        if crate::compiler::enrich::provider_valid(name) {
            continue;
        }
        diags.push(
            Diagnostic::new(
                Code::SurfaceName,
                format!("tool name `{name}` is not valid for providers"),
            )
            .at(at)
            .help("provider tool names must match ^[a-zA-Z0-9_-]{1,64}$ (no dots or spaces)"),
        );
    }

    // Budgets.
    let budgets = &reg.budgets;
    if let Some(max) = budgets.tool_tokens {
        for def in visible().map(surfaces::direct_def_full) {
            let size = surface_size(std::slice::from_ref(&def));
            if size.o200k > max {
                let op = def.op.as_deref().unwrap_or_default();
                diags.push(
                    Diagnostic::new(Code::OverBudget, format!("`{op}` is {} o200k tokens, over the per-tool budget of {max}", size.o200k))
                        .at(op_locations.get(op).cloned().unwrap_or_else(|| overlay_loc(None)))
                        .help("shorten the description (move rules into [ops.\"OP\".policy]) or raise [budgets] tool_tokens"),
                );
            }
        }
    }
    if let Some(max) = budgets.profile_tokens {
        for name in lo.overlay.profiles.keys() {
            let size = surface_size(&surfaces::profile(reg, name.get_ref()));
            if size.o200k > max {
                diags.push(
                    Diagnostic::new(Code::OverBudget, format!("profile `{}` is {} o200k tokens, over its budget of {max}", name.get_ref(), size.o200k))
                        .at(lo.loc(name.span()))
                        .help(format!(
                            "move ops out of `core` (deferred ops cost a summary and a bare schema), drop ops, or raise [budgets] profile_tokens; it has {} ops, {} core",
                            reg.profiles[name.get_ref()].ops.len(),
                            reg.profiles[name.get_ref()].core.len()
                        )),
                );
            }
        }
    }
    if let Some(max) = budgets.gateway_tokens {
        let size = surface_size(&gateway);
        if size.o200k > max {
            diags.push(
                Diagnostic::new(
                    Code::OverBudget,
                    format!(
                        "the gateway is {} o200k tokens, over its budget of {max}",
                        size.o200k
                    ),
                )
                .at(overlay_loc(None))
                .help("raise [budgets] gateway_tokens, or use fewer groups"),
            );
        }
    }
}

fn check_schema(op: &str, parameters: &Value, at: &Location, diags: &mut Diagnostics) {
    if parameters.get("type") != Some(&Value::String("object".into())) {
        let found = parameters
            .get("type")
            .map_or("no type".to_string(), |t| t.to_string());
        diags.push(
            Diagnostic::new(Code::SurfaceNotObject, format!("parameters of `{op}` have top-level type {found}, not \"object\""))
                .at(at.clone())
                .help("providers require an object at the top: wrap the value in a property, e.g. {\"type\":\"object\",\"properties\":{\"value\":{...}}}"),
        );
    }
    if let Some(constraint) = crate::model::schema::top_level_constraint(parameters) {
        diags.push(
            Diagnostic::new(
                Code::SurfaceProjection,
                format!("parameters of `{op}` use a top-level combinator providers refuse; models see one object with every alternative's arguments and the description says: {constraint}"),
            )
            .at(at.clone())
            .help("exec still enforces the schema as written (a call that breaks the constraint is VALIDATION_ERROR); to give models a plain schema, split the tool into one op per alternative"),
        );
    }
    for key in ["enum", "not"] {
        if parameters.get(key).is_some() {
            diags.push(
                Diagnostic::new(Code::SurfaceCombinator, format!("parameters of `{op}` use `{key}` at the top level"))
                    .at(at.clone())
                    .help("providers reject top-level combinators: move the alternatives into a property, or split the tool into one op per variant"),
            );
        }
    }
}
