//! Registry IR assembly: classified tools + overlay -> [`Registry`], then stamped.
//!
//! Beside the assembly here: `op_extras` (examples, argument aliases, id discovery),
//! `selection` (profiles, clusters, access), `gateway` (gateway names, search settings) and
//! `upstreams` (where imported ops forward to).

mod gateway;
mod op_extras;
mod selection;
mod upstreams;

// Its home is classification; kept reachable at the path it had.
pub use super::classify::glob_match;
pub(crate) use upstreams::upstream_problem;

use crate::compiler::enrich;
use crate::compiler::infer;
use crate::compiler::load::Loaded;
use crate::compiler::overlay::{LoadedOverlay, Overlay};
use crate::compiler::policy;
use crate::compiler::Tool;
use crate::model::diag::{Code, Diagnostic, Diagnostics};
use crate::model::registry::{
    Budgets, Counts, EntityNode, GroupNode, Kind, OpRecord, Origin, Policy, Profile, Registry,
    Source, FORMAT_VERSION, GENERATOR,
};
use gateway::{check_gateway_names, gateway_names, search_settings, yield_gateway_names};
use op_extras::{add_id_discovery, arg_aliases, op_examples};
use selection::{access, clusters, profiles};
use std::collections::{BTreeMap, BTreeSet};
use upstreams::upstreams;

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
        .filter(|c| c.via == crate::compiler::classify::Via::Inferred)
        .filter_map(|c| c.entity.clone())
        .collect();
    let mut ops = BTreeMap::new();
    // Ops of third-party tools (imported snapshots, `[sources] third_party`): they never take a
    // name that is the team's to give (the gateway tools').
    let mut third_party: BTreeSet<String> = BTreeSet::new();
    // Each tool's record is its own work (a fleet catalog's largest step here): made on every
    // core, then taken in the tools' order with what each said, as one at a time would.
    let records = crate::compiler::parallel::map_owned_in_order(tools, |t| {
        let vendor = t.third_party;
        let mut said = Diagnostics::default();
        let record = op_record(t, loaded, lo, &mut said);
        (vendor, record, said)
    });
    for (vendor, record, said) in records {
        diags.extend(said);
        if let Some(record) = record {
            if vendor {
                third_party.insert(record.op.clone());
            }
            ops.insert(record.op.clone(), record);
        }
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
    let mut tree = group_tree(&ops, overlay, &inferred_entities);
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

    let counts = counts(&ops, tree.len());
    let gateway = gateway_names(overlay, &ops, &third_party, loaded, diags);
    yield_gateway_names(&gateway, &mut ops, &third_party, loaded, diags);
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
    reg.registry_version = crate::compiler::stamp::registry_version(&reg);
    reg
}

/// One op's record: the tool as classified, with what the overlay adds (tags, aliases,
/// summary, policy, examples, argument aliases, flags) or what is drafted in its place.
fn op_record(
    t: Tool,
    loaded: &Loaded,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> Option<OpRecord> {
    let overlay = &lo.overlay;
    let class = t.class?;
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
    let projected = crate::model::schema::provider_projection(&t.raw.parameters);
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
    let display = ov.and_then(|o| o.display.as_ref()).and_then(|d| {
        match crate::model::operation::check_display(d.get_ref(), &t.raw.parameters) {
            Ok(()) => Some(d.get_ref().clone()),
            Err(why) => {
                diags.push(
                    Diagnostic::new(
                        Code::OverlayInvalid,
                        format!(
                            "[ops.\"{}\"] display = `{}`: {why}",
                            class.op,
                            crate::model::diag::escape_controls(d.get_ref())
                        ),
                    )
                    .at(lo.loc(d.span()))
                    .help("name where the entity's display name lives, e.g. display = \"args.title\" or \"result.name\""),
                );
                None
            }
        }
    });
    Some(OpRecord {
        op: class.op,
        tool_name: t.raw.name,
        provider_name: t.provider_name,
        description: t.raw.description,
        summary,
        parameters_schema: t.raw.parameters,
        output_schema: t.raw.output_schema,
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
        when_to_use: ov
            .and_then(|o| o.when_to_use.as_deref())
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(str::to_string),
        queries: ov
            .map(|o| {
                o.queries
                    .iter()
                    .map(|q| q.trim().to_string())
                    .filter(|q| !q.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        display,
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
    })
}

/// The help tree: group -> entity -> ops (ops without an entity sit on the group), with the
/// overlay's summaries and plurals, or a drafted plural for an inferred entity.
fn group_tree(
    ops: &BTreeMap<String, OpRecord>,
    overlay: &Overlay,
    inferred_entities: &BTreeSet<String>,
) -> BTreeMap<String, GroupNode> {
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
    tree
}

/// How many ops, groups, entities, reads, writes, destructive and hidden ops.
fn counts(ops: &BTreeMap<String, OpRecord>, groups: usize) -> Counts {
    let entities: BTreeSet<(&str, &str)> = ops
        .values()
        .filter_map(|r| r.entity.as_deref().map(|e| (r.group.as_str(), e)))
        .collect();
    Counts {
        ops: ops.len(),
        groups,
        entities: entities.len(),
        read: ops.values().filter(|r| r.kind == Kind::Read).count(),
        write: ops.values().filter(|r| r.kind == Kind::Write).count(),
        destructive: ops.values().filter(|r| r.destructive).count(),
        hidden: ops.values().filter(|r| r.hidden).count(),
    }
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
