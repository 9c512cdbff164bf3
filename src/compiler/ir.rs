//! Registry IR assembly: classified tools + overlay -> [`Registry`], then stamped.

use super::enrich;
use super::examples;
use super::infer;
use super::load::Loaded;
use super::overlay::{LoadedOverlay, Overlay};
use super::policy;
use super::Tool;
use crate::diag::{Code, Diagnostic, Diagnostics, Location};
use crate::registry::{
    Budgets, Counts, EntityNode, Example, GatewayNames, GroupNode, Kind, OpRecord, Origin, Policy,
    Profile, Registry, Source, FORMAT_VERSION, GENERATOR,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Builds the registry from tools that all classified without error. Findings on examples and
/// profiles go to `diags`; the caller discards the registry if any is an error.
pub fn assemble(
    tools: Vec<Tool>,
    loaded: &Loaded,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> Registry {
    let overlay = &lo.overlay;
    // Entities of inferred ops get a drafted plural when the vocabulary lacks them; entities an
    // overlay's own rules or special cases produce stay as the overlay says.
    let inferred_entities: BTreeSet<String> = tools
        .iter()
        .filter_map(|t| t.class.as_ref())
        .filter(|c| c.via == super::classify::Via::Inferred)
        .filter_map(|c| c.entity.clone())
        .collect();
    let mut ops = BTreeMap::new();
    for t in tools {
        let Some(class) = t.class else { continue };
        let params_loc = loaded.loc(t.raw.file, t.raw.parameters_pointer.clone());
        let ov = overlay.ops.get(class.op.as_str());
        let mut tags: Vec<String> = ov.map(|o| o.tags.clone()).unwrap_or_default();
        tags.sort();
        tags.dedup();
        let mut aliases: Vec<String> = ov
            .map(|o| o.aliases.iter().map(|a| a.get_ref().clone()).collect())
            .unwrap_or_default();
        aliases.sort();
        aliases.dedup();
        let summary = ov
            .and_then(|o| o.summary.clone())
            .unwrap_or_else(|| enrich::summary(&t.raw.description));
        // A top-level anyOf/oneOf/allOf keeps its alternatives' arguments in the branches: the
        // argument table lists them all, as the projection models receive does.
        let projected = crate::schema::provider_projection(&t.raw.parameters);
        let args = enrich::args(projected.as_ref().unwrap_or(&t.raw.parameters));
        let required_args = args
            .iter()
            .filter(|a| a.required)
            .map(|a| a.name.clone())
            .collect();
        let id_args = enrich::id_args(&args);
        let policy = match ov.and_then(|o| o.policy.clone()) {
            Some(p) => Some((p, Origin::Overlay)),
            None => policy::draft(&t.raw.description, &overlay.policy_cues)
                .filter(policy::substantial)
                .map(|p| (p, Origin::Derived)),
        }
        .map(|(p, origin)| Policy {
            do_: p.do_,
            dont: p.dont,
            edge_cases: p.edge_cases,
            origin,
        });
        let examples = op_examples(&class.op, &t.raw.parameters, ov, lo, params_loc, diags);
        let arg_aliases = arg_aliases(&class.op, &args, ov, overlay, lo, diags);
        let record = OpRecord {
            op: class.op,
            tool_name: t.raw.name,
            provider_name: t.provider_name,
            description: t.raw.description,
            summary,
            parameters_schema: t.raw.parameters,
            group: class.group,
            entity: class.entity,
            action: class.action,
            kind: t.kind,
            destructive: t.destructive,
            dry_run_default: ov.and_then(|o| o.dry_run_default).unwrap_or(false),
            hidden: ov.and_then(|o| o.hidden).unwrap_or(false),
            pass_unknown_arguments: ov.and_then(|o| o.pass_unknown_arguments).unwrap_or(false),
            tags,
            aliases,
            args,
            required_args,
            id_args,
            id_discovery: Vec::new(),
            arg_aliases,
            examples,
            policy,
            annotations: t.raw.annotations.filter(|a| !a.is_empty()),
            source: Source {
                file: loaded.files[t.raw.file].rel.clone(),
                index: t.raw.index,
                pointer: t.raw.pointer,
            },
            pin: Some(t.raw.pin),
        };
        ops.insert(record.op.clone(), record);
    }

    add_id_discovery(&mut ops);
    let profiles = profiles(&ops, lo, diags);
    let clusters = clusters(&ops, lo, diags);
    let synonyms = overlay
        .synonyms
        .iter()
        .map(|(k, v)| {
            (
                k.to_lowercase(),
                v.iter().map(|w| w.to_lowercase()).collect(),
            )
        })
        .collect();

    let infer = overlay.classify.infer;
    let mut tree: BTreeMap<String, GroupNode> = BTreeMap::new();
    for rec in ops.values() {
        let group = tree.entry(rec.group.clone()).or_insert_with(|| GroupNode {
            summary: overlay
                .groups
                .get(rec.group.as_str())
                .map(|g| g.summary.trim().to_string())
                .unwrap_or_default(),
            ..Default::default()
        });
        match &rec.entity {
            Some(e) => {
                let node = group.entities.entry(e.clone()).or_insert_with(|| {
                    let spec = overlay.entities.get(e.as_str());
                    EntityNode {
                        // Inference drafts the plural of an entity the vocabulary lacks.
                        plural: spec.and_then(|s| s.plural.clone()).or_else(|| {
                            (spec.is_none() && inferred_entities.contains(e))
                                .then(|| infer::entity_plural(e))
                        }),
                        summary: spec.and_then(|s| s.summary.clone()),
                        ops: Vec::new(),
                    }
                });
                node.ops.push(rec.op.clone());
            }
            None => group.ops.push(rec.op.clone()),
        }
    }
    if infer {
        draft_group_summaries(&mut tree);
    }
    let mut profiles = profiles;
    // Profiles are a team's choice of contexts: drafted only for a catalog with no overlay at all
    // (or one that only records where imported tools came from, `[upstreams]`)
    // (an overlay without `[profiles]` means none), one per group when there are several.
    // Past MAX_DRAFTED_PROFILES groups (a fleet of servers) a profile per group is no longer a
    // choice of contexts but a copy of the tree: none are drafted, and the output stays
    // proportional to the ops.
    if infer && lo.has_no_taxonomy() && (2..=MAX_DRAFTED_PROFILES).contains(&tree.len()) {
        profiles = group_profiles(&tree);
    }

    let entities: BTreeSet<(&str, &str)> = ops
        .values()
        .filter_map(|r| r.entity.as_deref().map(|e| (r.group.as_str(), e)))
        .collect();
    let counts = Counts {
        ops: ops.len(),
        groups: tree.len(),
        entities: entities.len(),
        read: ops.values().filter(|r| r.kind == Kind::Read).count(),
        write: ops.values().filter(|r| r.kind == Kind::Write).count(),
        destructive: ops.values().filter(|r| r.destructive).count(),
        hidden: ops.values().filter(|r| r.hidden).count(),
    };
    let gateway = gateway_names(overlay, &ops, loaded, diags);
    check_gateway_names(&gateway, &ops, lo, diags);
    let upstreams = upstreams(&ops, lo, diags);
    let search = search_settings(lo, diags);
    let access = access(&ops, &profiles, lo, diags);
    let mut reg = Registry {
        name: overlay
            .registry
            .name
            .clone()
            .unwrap_or_else(|| "registry".into()),
        description: overlay.registry.description.clone(),
        generator: GENERATOR.into(),
        format_version: FORMAT_VERSION,
        registry_version: String::new(),
        counts,
        tree,
        ops,
        profiles,
        gateway,
        synonyms,
        clusters,
        upstreams,
        search,
        access,
        quarantined: Vec::new(),
        budgets: Budgets {
            tool_tokens: overlay.budgets.tool_tokens,
            profile_tokens: overlay.budgets.profile_tokens,
            gateway_tokens: overlay.budgets.gateway_tokens,
        },
    };
    reg.registry_version = super::stamp::registry_version(&reg);
    reg
}

/// The most groups for which zero-config drafts one profile per group.
pub const MAX_DRAFTED_PROFILES: usize = 20;

/// A one-line summary for every group the overlay gives none, drafted from its entities.
fn draft_group_summaries(tree: &mut BTreeMap<String, GroupNode>) {
    for (name, g) in tree.iter_mut().filter(|(_, g)| g.summary.is_empty()) {
        let entities: Vec<(String, usize)> = g
            .entities
            .iter()
            .map(|(e, n)| (e.clone(), n.ops.len()))
            .collect();
        let plurals: BTreeMap<&str, &str> = g
            .entities
            .iter()
            .filter_map(|(e, n)| Some((e.as_str(), n.plural.as_deref()?)))
            .collect();
        let plural_of = |e: &str| {
            plurals
                .get(e)
                .map_or_else(|| infer::entity_plural(e), |p| p.to_string())
        };
        let ops = g.ops.len() + g.entities.values().map(|n| n.ops.len()).sum::<usize>();
        g.summary = infer::group_summary(name, &entities, &plural_of, ops);
    }
}

/// With no `[profiles]` in the overlay and several groups: one profile per group, every op of it.
fn group_profiles(tree: &BTreeMap<String, GroupNode>) -> BTreeMap<String, Profile> {
    tree.iter()
        .map(|(name, g)| {
            let mut ops: Vec<String> = g
                .ops
                .iter()
                .chain(g.entities.values().flat_map(|n| &n.ops))
                .cloned()
                .collect();
            ops.sort();
            let profile = Profile {
                description: Some(format!("Every tool of the group `{name}`. {}", g.summary)),
                ops,
                core: Vec::new(),
            };
            (name.clone(), profile)
        })
        .collect()
}

/// The gateway tools' names must differ from each other and from every tool the model may also
/// see, and be valid provider names (checked like every tool name).
fn check_gateway_names(
    names: &GatewayNames,
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) {
    let g = &lo.overlay.gateway;
    let entries = [
        ("help", &names.help, &g.help),
        ("exec", &names.exec, &g.exec),
        ("search", &names.search, &g.search),
    ];
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (role, name, spanned) in entries {
        let loc = spanned
            .as_ref()
            .map_or_else(|| lo.loc(0..0), |s| lo.loc(s.span()));
        let problem = if !super::enrich::provider_valid(name) {
            Some("is not a valid provider tool name (^[a-zA-Z0-9_-]{1,64}$)".to_string())
        } else if let Some(other) = seen.get(name.as_str()) {
            Some(format!("is also the `{other}` tool's name"))
        } else {
            ops.values()
                .find(|r| r.provider_name == *name || r.tool_name == *name)
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
fn gateway_names(
    overlay: &Overlay,
    ops: &BTreeMap<String, OpRecord>,
    loaded: &Loaded,
    diags: &mut Diagnostics,
) -> GatewayNames {
    let d = GatewayNames::default();
    let g = &overlay.gateway;
    let taken: BTreeSet<&str> = ops
        .values()
        .flat_map(|r| [r.tool_name.as_str(), r.provider_name.as_str()])
        .collect();
    let mut chosen: BTreeSet<String> = [&g.help, &g.exec, &g.search]
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
        let owner = ops
            .values()
            .find(|r| r.tool_name == default || r.provider_name == default);
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
    }
}

/// Authored examples (each validated; an invalid one is an error naming the field), else one
/// synthesized minimal call (validated too; if none validates, a warning and no example).
fn op_examples(
    op: &str,
    schema: &Value,
    ov: Option<&super::overlay::OpOverride>,
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
                    crate::text::truncate_words(&format!("{at}: {}", e.message), 160)
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
fn add_id_discovery(ops: &mut BTreeMap<String, OpRecord>) {
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

/// Whether `op` matches a profile pattern: an exact op or a glob with `*` (any characters).
pub fn glob_match(pattern: &str, op: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == op;
    }
    let mut rest = op;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

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
            let near = crate::diag::nearest(p, ops.keys().map(String::as_str));
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
fn access(
    ops: &BTreeMap<String, OpRecord>,
    profiles: &BTreeMap<String, crate::registry::Profile>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, crate::registry::AccessScope> {
    let mut out = BTreeMap::new();
    for (name, spec) in &lo.overlay.access.scopes {
        let at = lo.loc(name.span());
        let name = name.get_ref();
        let shown = crate::diag::escape_controls(name);
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
                format!("has the kind `{}`", crate::diag::escape_controls(k)),
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
                        crate::diag::escape_controls(p)
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
        out.insert(name.clone(), crate::registry::AccessScope { ops: granted });
    }
    out
}

/// `[search]` -> the registry's search settings; a weight outside 0..1 is TR020 at its value.
fn search_settings(lo: &LoadedOverlay, diags: &mut Diagnostics) -> crate::registry::SearchSettings {
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
            .help("0 ranks lexically only, 1 by semantic similarity only; the default is 0.3"),
        );
        None
    });
    crate::registry::SearchSettings { semantic_weight }
}

/// `[upstreams.NAME]` -> the registry's upstreams. NAME is a safe name, exactly one of `command`
/// and `url` is given, and `NAME.mcp.json` defines at least one tool.
fn upstreams(
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, crate::registry::Upstream> {
    let mut out = BTreeMap::new();
    for (name, spec) in &lo.overlay.upstreams {
        let loc = lo.loc(name.span());
        let name = name.get_ref();
        let file = format!("{name}.mcp.json");
        let shown = name.escape_debug();
        let problem = upstream_problem(name, spec).or_else(|| {
            (!ops.values().any(|r| r.source.file == file))
                .then(|| format!("has no tools: no definitions file `{file}` defines any"))
        });
        if let Some(p) = problem {
            diags.push(
                Diagnostic::new(Code::UpstreamInvalid, format!("[upstreams.{shown}] {p}"))
                    .at(loc)
                    .help("`toolreg import mcp NAME -- CMD ARGS...` writes both the snapshot and this entry"),
            );
            continue;
        }
        let secrets = spec
            .url
            .as_deref()
            .map(crate::trust::url_credentials)
            .unwrap_or_default();
        if !secrets.is_empty() {
            // The URL itself is never quoted: it holds the secret.
            diags.push(
                Diagnostic::new(
                    Code::UpstreamSecret,
                    format!(
                        "[upstreams.{shown}] `url` carries a credential ({}): it would be written into registry.json and shown in answers",
                        secrets.join(", ")
                    ),
                )
                .at(loc)
                .help("take it out of the URL, keep the secret in an environment variable and name it: `bearer_env = \"VAR\"` (sent as `Authorization: Bearer`) or `header_env = { \"X-Api-Key\" = \"VAR\" }`; rotate the credential, it was committed"),
            );
            continue;
        }
        out.insert(name.clone(), spec.to_upstream(name));
    }
    out
}

/// What makes an `[upstreams.NAME]` entry unusable on its own (its snapshot aside): TR080's
/// message, or `None` when it could run. The approval lint skips the entries this refuses.
/// An MCP root as the overlay may give it: an absolute path without control characters.
fn root_valid(root: &str) -> bool {
    std::path::Path::new(root).is_absolute() && !root.chars().any(char::is_control)
}

pub(crate) fn upstream_problem(name: &str, spec: &super::overlay::UpstreamSpec) -> Option<String> {
    if !super::enrich::provider_valid(name) {
        Some("is not one safe name (letters, digits, `_`, `-`; at most 64)".to_string())
    } else if spec.command.is_some() == spec.url.is_some() {
        Some("needs exactly one of `command` (stdio) and `url` (streamable HTTP)".to_string())
    } else if spec.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
        Some("has an empty `command`".to_string())
    } else if spec
        .url
        .as_deref()
        .is_some_and(|u| !(u.starts_with("http://") || u.starts_with("https://")))
    {
        Some("has a `url` that is not http:// or https://".to_string())
    } else if spec.timeout_ms == Some(0) {
        Some("has `timeout_ms = 0`".to_string())
    } else if let Some(bad) = spec.roots.iter().find(|r| !root_valid(r)) {
        Some(format!(
            "lists the root `{}`, which is not an absolute folder path (roots are offered to the server as file:// URIs)",
            crate::diag::escape_controls(bad)
        ))
    } else if spec.command.is_some() && (spec.bearer_env.is_some() || !spec.header_env.is_empty()) {
        Some("sets `bearer_env` or `header_env`, which only a `url` upstream sends (a command gets its secrets through `env`)".to_string())
    } else if let Some(bad) = spec
        .env
        .iter()
        .chain(&spec.bearer_env)
        .chain(spec.header_env.values())
        .find(|v| !env_name_valid(v))
    {
        Some(format!(
            "names the environment variable `{}`, which is not a variable name (letters, digits, `_`; not starting with a digit)",
            crate::diag::escape_controls(bad)
        ))
    } else {
        spec.header_env
            .keys()
            .find(|h| !header_name_valid(h))
            .map(|bad| {
                format!(
                    "names the header `{}` in `header_env`, which is not an HTTP header name",
                    crate::diag::escape_controls(bad)
                )
            })
    }
}

/// A POSIX environment variable name.
pub(crate) fn env_name_valid(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An HTTP header name (RFC 9110 token), at most 128 characters.
fn header_name_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

fn clusters(
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, crate::registry::Cluster> {
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
            let cluster = crate::registry::Cluster {
                description: spec.description.clone(),
                ops: selected.into_iter().collect(),
                triggers,
                contexts,
            };
            (name.get_ref().clone(), cluster)
        })
        .collect()
}

/// Per-op aliases, plus the global ones whose target this op has. An alias must name an
/// argument the op has and must not itself be one of its arguments.
fn arg_aliases(
    op: &str,
    args: &[crate::registry::Arg],
    ov: Option<&super::overlay::OpOverride>,
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

fn profiles(
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Profile> {
    let mut out = BTreeMap::new();
    for (name, spec) in &lo.overlay.profiles {
        // A profile name becomes a file name (`surfaces/profiles/NAME.json`) and a scope name.
        if !super::enrich::provider_valid(name.get_ref()) {
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

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("onto.task.*", "onto.task.list"));
        assert!(glob_match("onto.*.get", "onto.task.get"));
        assert!(!glob_match("onto.*.get", "onto.task.list"));
        assert!(glob_match("*", "x.y"));
        assert!(glob_match("onto.task.list", "onto.task.list"));
        assert!(!glob_match("onto.task", "onto.task.list"));
    }
}
