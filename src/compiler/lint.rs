//! Lint: the cross-tool checks, all in one pass over the classified tools. Per-tool findings
//! (schema fixes, entry shapes) are reported by the stage that finds them.

use super::classify::{match_form, Classifier, Via};
use super::enrich::provider_valid;
use super::load::Loaded;
use super::overlay::LoadedOverlay;
use super::Tool;
use crate::model::diag::{nearest, ranked, Code, Diagnostic, Diagnostics};
use crate::model::registry::Kind;
use std::collections::{BTreeMap, BTreeSet};

pub fn check(
    tools: &[Tool],
    loaded: &Loaded,
    lo: &LoadedOverlay,
    classifier: &Classifier,
    diags: &mut Diagnostics,
) {
    let name_loc = |t: &Tool| loaded.loc(t.raw.file, t.raw.name_pointer.clone());
    let overlay = &lo.overlay;

    let mut by_name: BTreeMap<&str, &Tool> = BTreeMap::new();
    let mut by_op: BTreeMap<&str, &Tool> = BTreeMap::new();
    let mut by_provider: BTreeMap<&str, &Tool> = BTreeMap::new();
    for t in tools {
        let name = t.raw.name.as_str();
        // The same name in two third-party files is two servers' tools (see
        // `qualify_shared_names`); anywhere else it is a mistake.
        let servers = |f: &&Tool| f.raw.file != t.raw.file && f.third_party && t.third_party;
        if let Some(first) = by_name.get(name).filter(|f| !servers(f)) {
            diags.push(
                Diagnostic::new(
                    Code::DuplicateToolName,
                    format!("tool name `{name}` is defined twice"),
                )
                .at(name_loc(t))
                .related(name_loc(first), "first defined here")
                .help(
                    "tool names must be unique across the definitions folder; rename or remove one",
                ),
            );
            continue;
        }
        by_name.insert(name, t);

        if name.chars().any(crate::model::diag::is_unsafe_char) {
            diags.push(
                Diagnostic::new(
                    Code::ControlCharacters,
                    format!("tool name `{name}` contains control, bidi or invisible characters"),
                )
                .at(name_loc(t))
                .help("a tool name is text a model and a terminal show: remove them (newlines, escapes, NUL, bidi overrides, zero-width and tag characters)"),
            );
        }

        if !provider_valid(name) {
            diags.push(
                Diagnostic::new(
                    Code::ProviderName,
                    format!("tool name `{name}` is rejected by providers; surfaces will call it `{}`", t.provider_name),
                )
                .at(name_loc(t))
                .help("provider tool names must match ^[a-zA-Z0-9_-]{1,64}$; rename the tool to silence this"),
            );
        }
        if let Some(first) = by_provider.get(t.provider_name.as_str()) {
            diags.push(
                Diagnostic::new(
                    Code::ProviderNameCollision,
                    format!(
                        "tools `{}` and `{name}` both get the provider-safe name `{}`",
                        first.raw.name, t.provider_name
                    ),
                )
                .at(name_loc(t))
                .related(name_loc(first), "the other tool")
                .help("rename one of them so their provider-safe names differ"),
            );
        } else {
            by_provider.insert(&t.provider_name, t);
        }

        let Some(class) = &t.class else {
            let form = match_form(name);
            // Always name the closest rules, however far: they show what the overlay expects.
            let rules = ranked(&form, classifier.rule_patterns(), 3, 0.0);
            let mut help = format!(
                "add a special case under [special], e.g. `{name:?} = \"group.entity.action\"`"
            );
            if !rules.is_empty() {
                help = format!(
                    "closest rules: {}; {help}, add a rule, or add the missing entity to [entities]",
                    rules.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
                );
            } else {
                help.push_str(", add a rule, or set a [fallback]");
            }
            diags.push(
                Diagnostic::new(
                    Code::Unclassified,
                    format!("no special case or rule classifies tool `{name}`"),
                )
                .at(name_loc(t))
                .help(help),
            );
            continue;
        };
        match class.via {
            Via::Fallback => diags.push(
                Diagnostic::new(
                    Code::FallbackUsed,
                    format!("tool `{name}` was classified only by the fallback, as `{}`", class.op),
                )
                .at(name_loc(t))
                .help(format!("add a rule or a special case (`{name:?} = \"group.entity.action\"`) so it gets a semantic op")),
            ),
            Via::Rule(i) => {
                if let Some(entity) = &class.unknown_entity {
                    let rule = &overlay.rules[i];
                    diags.push(
                        Diagnostic::new(
                            Code::UnknownEntity,
                            format!("rule `{}` gave tool `{name}` the entity `{entity}`, which is not in the vocabulary", rule.get_ref().pattern),
                        )
                        .at(name_loc(t))
                        .related(lo.loc(rule.span()), "rule defined here")
                        .help(format!(
                            "if `{entity}` is a real entity add `{entity} = \"{}\"` to [entities]; otherwise add a special case for `{name}`",
                            super::classify::singularize(entity) + "s"
                        )),
                    );
                }
            }
            Via::Special | Via::Inferred => {}
        }
        if let Some(first) = by_op.get(class.op.as_str()) {
            diags.push(
                Diagnostic::new(
                    Code::OpCollision,
                    format!("two tools map to op `{}`", class.op),
                )
                .at(name_loc(t))
                .related(
                    name_loc(first),
                    format!("`{}` maps there too", first.raw.name),
                )
                .help("give one of them its own op with a special case under [special]"),
            );
        } else {
            by_op.insert(&class.op, t);
        }
        if let Some(a) = &t.raw.annotations {
            let conflict = match t.kind {
                Kind::Write => a.read_only_hint == Some(true),
                Kind::Read => a.destructive_hint == Some(true) && a.read_only_hint != Some(true),
            };
            if conflict {
                diags.push(
                    Diagnostic::new(
                        Code::KindConflict,
                        format!("tool `{name}` is classified `{}` but its MCP annotations say otherwise", t.kind.as_str()),
                    )
                    .at(loaded.loc(t.raw.file, format!("{}/annotations", t.raw.pointer)))
                    .help(format!("set `kind` for `{}` under [ops] to state which is right", class.op)),
                );
            }
        }
    }

    // Overrides and aliases.
    let ops: BTreeSet<&str> = by_op.keys().copied().collect();
    let mut alias_owner: BTreeMap<&str, &str> = BTreeMap::new();
    for (key, ov) in &overlay.ops {
        let op = key.get_ref().as_str();
        if !ops.contains(op) {
            let near = nearest(op, ops.iter().copied());
            let hint = near
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            if ov.aliases.is_empty() {
                diags.push(
                    Diagnostic::new(
                        Code::OverlayInvalid,
                        format!("[ops.\"{op}\"] overrides an op no tool produces"),
                    )
                    .at(lo.loc(key.span()))
                    .help(format!("{hint}remove the override or fix the op name")),
                );
            }
            for alias in &ov.aliases {
                diags.push(
                    Diagnostic::new(
                        Code::DeadAlias,
                        format!(
                            "alias `{}` targets op `{op}`, which no tool produces",
                            alias.get_ref()
                        ),
                    )
                    .at(lo.loc(alias.span()))
                    .help(format!(
                        "{hint}point the alias at an existing op or remove it"
                    )),
                );
            }
            continue;
        }
        for alias in &ov.aliases {
            let a = alias.get_ref().as_str();
            let shadows = if ops.contains(a) {
                Some(format!("the op `{a}`"))
            } else {
                by_name.get(a).map(|t| {
                    format!(
                        "the tool name of `{}`",
                        t.class.as_ref().map_or(a, |c| c.op.as_str())
                    )
                })
            };
            if let Some(what) = shadows {
                diags.push(
                    Diagnostic::new(Code::ShadowingAlias, format!("alias `{a}` of `{op}` shadows {what}"))
                        .at(lo.loc(alias.span()))
                        .help("an alias must not be a real op or tool name, or calls would reach the wrong op; remove it"),
                );
            } else if let Some(other) = alias_owner.get(a).filter(|o| **o != op) {
                diags.push(
                    Diagnostic::new(
                        Code::ShadowingAlias,
                        format!("alias `{a}` is claimed by both `{other}` and `{op}`"),
                    )
                    .at(lo.loc(alias.span()))
                    .help("an alias must name exactly one op; remove one of them"),
                );
            } else {
                alias_owner.insert(a, op);
            }
        }
    }

    // Special cases for names no tool has (a rename left them behind), and empty entity names.
    let forms: BTreeSet<String> = tools.iter().map(|t| match_form(&t.raw.name)).collect();
    for key in overlay.special.keys() {
        let k = key.get_ref();
        if !by_name.contains_key(k.as_str()) && !forms.contains(k) {
            let names = tools.iter().map(|t| t.raw.name.as_str());
            let near = nearest(k, names)
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            diags.push(
                Diagnostic::new(
                    Code::StaleSpecial,
                    format!("special case `{k}` matches no tool"),
                )
                .at(lo.loc(key.span()))
                .help(format!("{near}fix the name or remove the line")),
            );
        }
    }
    for key in overlay.entities.keys() {
        if key.get_ref().trim().is_empty() {
            diags.push(
                Diagnostic::new(
                    Code::StaleSpecial,
                    "an entity in [entities] has an empty name",
                )
                .at(lo.loc(key.span()))
                .help("remove the line or name the entity"),
            );
        }
    }

    // Every group the ops use should say what it is.
    let groups: BTreeSet<&str> = tools
        .iter()
        .filter_map(|t| t.class.as_ref())
        .map(|c| c.group.as_str())
        .collect();
    for g in groups {
        let has = overlay
            .groups
            .get(g)
            .is_some_and(|s| !s.summary.trim().is_empty());
        if !has && overlay.classify.infer {
            diags.push(
                Diagnostic::new(
                    Code::Inferred,
                    format!("group `{g}` has no summary in the overlay; one was drafted from its entities"),
                )
                .at(lo.loc(0..0))
                .help(format!("add `[groups.{g}]` with `summary = \"...\"` to say it better")),
            );
        } else if !has {
            diags.push(
                Diagnostic::new(Code::MissingGroupSummary, format!("group `{g}` has no summary"))
                    .at(lo.loc(0..0))
                    .help(format!("add `[groups.{g}]` with `summary = \"...\"`: the help root shows it to the model")),
            );
        }
    }
}
