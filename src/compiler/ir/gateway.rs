//! The gateway tools' names (overlay `[gateway]`, checked against the catalog's own tool
//! names) and the search settings the runtime reads.

use crate::compiler::load::Loaded;
use crate::compiler::overlay::{LoadedOverlay, Overlay};
use crate::model::diag::{Code, Diagnostic, Diagnostics};
use crate::model::registry::{GatewayNames, OpRecord};
use std::collections::{BTreeMap, BTreeSet};

/// The gateway tools' names must differ from each other and from every tool the model may also
/// see, and be valid provider names (checked like every tool name).
pub(super) fn check_gateway_names(
    names: &GatewayNames,
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) {
    let g = &lo.overlay.gateway;
    let mut entries = vec![
        ("help", &names.help, &g.help),
        ("exec", &names.exec, &g.exec),
        ("search", &names.search, &g.search),
    ];
    if let Some(batch) = &names.batch {
        entries.push(("batch", batch, &g.batch_name));
    }
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (role, name, spanned) in entries {
        let loc = spanned
            .as_ref()
            .map_or_else(|| lo.loc(0..0), |s| lo.loc(s.span()));
        let problem = if !crate::compiler::enrich::provider_valid(name) {
            Some("is not a valid provider tool name (^[a-zA-Z0-9_-]{1,64}$)".to_string())
        } else if let Some(other) = seen.get(name.as_str()) {
            Some(format!("is also the `{other}` tool's name"))
        } else {
            ops.values()
                .find(|r| r.provider_name == *name)
                .map(|r| format!("is the name of the tool `{}` (op `{}`)", r.tool_name, r.op))
        };
        seen.insert(name, role);
        if let Some(p) = problem {
            diags.push(
                Diagnostic::new(
                    Code::OverlayInvalid,
                    format!("[gateway] {role} = `{}` {p}", name.escape_debug()),
                )
                .at(loc)
                .help("every tool the model sees needs its own provider-safe name; pick another under [gateway]"),
            );
        }
    }
}

/// The gateway tools' names: the overlay's, else the defaults. A default that a catalog tool
/// already has (a real server may well call a tool `tool_search`) is replaced by the first free
/// name of `toolreg_<role>`, `toolreg_<role>_2`, ... with a warning: the catalog is not the team's
/// to rename, and the gateway's names are. A name the overlay pinned keeps the error.
pub(super) fn gateway_names(
    overlay: &Overlay,
    ops: &BTreeMap<String, OpRecord>,
    third_party: &BTreeSet<String>,
    loaded: &Loaded,
    diags: &mut Diagnostics,
) -> GatewayNames {
    let d = GatewayNames::default();
    let g = &overlay.gateway;
    // Only the team's own tools can make the gateway give way: a third-party tool yields its
    // name instead (`yield_gateway_names`), so a vendor cannot rename the team's gateway.
    let taken: BTreeSet<&str> = ops
        .values()
        .filter(|r| !third_party.contains(&r.op))
        .flat_map(|r| [r.tool_name.as_str(), r.provider_name.as_str()])
        .collect();
    let mut chosen: BTreeSet<String> = [&g.help, &g.exec, &g.search, &g.batch_name]
        .into_iter()
        .flatten()
        .map(|s| s.get_ref().clone())
        .collect();
    let mut pick = |role: &str, v: &Option<toml::Spanned<String>>, default: String| {
        if let Some(s) = v {
            return s.get_ref().clone();
        }
        if !taken.contains(default.as_str()) {
            chosen.insert(default.clone());
            return default;
        }
        let name = (1..)
            .map(|n| match n {
                1 => format!("toolreg_{role}"),
                n => format!("toolreg_{role}_{n}"),
            })
            .find(|c| !taken.contains(c.as_str()) && !chosen.contains(c))
            .unwrap_or_default();
        chosen.insert(name.clone());
        let owner = ops.values().find(|r| {
            !third_party.contains(&r.op) && (r.tool_name == default || r.provider_name == default)
        });
        let mut d = Diagnostic::new(
            Code::GatewayRenamed,
            format!(
                "the catalog has a tool named `{default}`{}; the {role} gateway tool is `{name}` instead",
                owner.map(|r| format!(" (op `{}`)", r.op)).unwrap_or_default()
            ),
        );
        if let Some(file) = owner.and_then(|r| {
            let i = loaded.files.iter().position(|f| f.rel == r.source.file)?;
            Some(loaded.loc(i, r.source.pointer.clone()))
        }) {
            d = d.at(file);
        }
        diags.push(d.help(format!(
            "to choose the name yourself, set `{role} = \"...\"` under [gateway] in toolreg.toml"
        )));
        name
    };
    GatewayNames {
        help: pick("help", &g.help, d.help),
        exec: pick("exec", &g.exec, d.exec),
        search: pick("search", &g.search, d.search),
        batch: (g.batch || g.batch_name.is_some())
            .then(|| pick("batch", &g.batch_name, "tool_batch".to_string())),
    }
}

/// A third-party op whose provider name is a gateway tool's name gives it up: it is offered
/// (on the direct and profile surfaces) as `NAME_<group>` (or with a number), with a warning;
/// its tool name, which the upstream knows it by, stays. The gateway keeps its name.
pub(super) fn yield_gateway_names(
    gateway: &GatewayNames,
    ops: &mut BTreeMap<String, OpRecord>,
    third_party: &BTreeSet<String>,
    loaded: &Loaded,
    diags: &mut Diagnostics,
) {
    let names = gateway.all();
    let mut used: BTreeSet<String> = ops.values().map(|r| r.provider_name.clone()).collect();
    used.extend(names.iter().map(|n| n.to_string()));
    for op in third_party {
        let Some(r) = ops.get_mut(op) else { continue };
        if !names
            .iter()
            .any(|n| *n == r.provider_name || *n == r.tool_name)
        {
            continue;
        }
        let base: String = format!("{}_{}", r.provider_name, r.group)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect();
        let new_name = (1..)
            .map(|n| {
                if n == 1 {
                    base.clone()
                } else {
                    format!("{base}_{n}")
                }
            })
            .find(|c| !used.contains(c))
            .unwrap_or_default();
        used.insert(new_name.clone());
        let mut d = Diagnostic::new(
            Code::GatewayRenamed,
            format!(
                "the third-party tool `{}` (op `{op}`) has a gateway tool's name; it is offered as `{new_name}`, and the gateway keeps its name",
                crate::model::diag::escape_controls(&r.tool_name)
            ),
        );
        if let Some(i) = loaded.files.iter().position(|f| f.rel == r.source.file) {
            d = d.at(loaded.loc(i, r.source.pointer.clone()));
        }
        diags.push(d.help("nothing to do: a vendor's tool never takes the team's gateway names; call it by its op"));
        r.provider_name = new_name;
    }
}

/// `[search]` -> the registry's search settings; a weight outside 0..1 is TR020 at its value.
pub(super) fn search_settings(
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> crate::model::registry::SearchSettings {
    let semantic_weight = lo.overlay.search.semantic_weight.as_ref().and_then(|w| {
        let value = *w.get_ref();
        if (0.0..=1.0).contains(&value) {
            return Some(value);
        }
        diags.push(
            Diagnostic::new(
                Code::OverlayInvalid,
                format!("[search] semantic_weight = {value} is not within 0..1"),
            )
            .at(lo.loc(w.span()))
            .help("0 ranks lexically only, 1 by semantic similarity only; the default is 0.4"),
        );
        None
    });
    // A floor pair out of order, or outside what the signal can reach, would make `match`
    // say one thing always: refused at its line.
    let mut floors = |key: &str,
                      spec: &Option<toml::Spanned<crate::model::registry::MatchFloors>>,
                      top: f64| {
        let f = spec.as_ref()?;
        let v = *f.get_ref();
        if (0.0..=v.strong_from).contains(&v.none_below) && v.strong_from <= top {
            return Some(v);
        }
        diags.push(
            Diagnostic::new(
                Code::OverlayInvalid,
                format!(
                    "[search] {key} = {{ none_below = {}, strong_from = {} }} is not 0 <= none_below <= strong_from <= {top}",
                    v.none_below, v.strong_from
                ),
            )
            .at(lo.loc(f.span()))
            .help("`toolreg eval --calibrate --queries IN_SCOPE --out-of-scope NONE` prints floors chosen on your queries"),
        );
        None
    };
    let match_lexical = floors("match_lexical", &lo.overlay.search.match_lexical, 1.0);
    let match_hybrid = floors("match_hybrid", &lo.overlay.search.match_hybrid, 1.5);
    crate::model::registry::SearchSettings {
        semantic_weight,
        match_lexical,
        match_hybrid,
    }
}
