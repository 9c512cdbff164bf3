//! Registry IR assembly: classified tools + overlay -> [`Registry`], then stamped.

use super::load::Loaded;
use super::overlay::Overlay;
use super::Tool;
use crate::registry::{
    Counts, EntityNode, GroupNode, Kind, OpRecord, Registry, Source, FORMAT_VERSION, GENERATOR,
};
use std::collections::{BTreeMap, BTreeSet};

/// Builds the registry from tools that all classified without error.
pub fn assemble(tools: Vec<Tool>, loaded: &Loaded, overlay: &Overlay) -> Registry {
    let mut ops = BTreeMap::new();
    for t in tools {
        let Some(class) = t.class else { continue };
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
            .unwrap_or_else(|| super::enrich::summary(&t.raw.description));
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
            tags,
            aliases,
            examples: Vec::new(),
            policy: None,
            annotations: t.raw.annotations.filter(|a| !a.is_empty()),
            source: Source {
                file: loaded.files[t.raw.file].rel.clone(),
                index: t.raw.index,
                pointer: t.raw.pointer,
            },
        };
        ops.insert(record.op.clone(), record);
    }

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
                        plural: spec.and_then(|s| s.plural.clone()),
                        summary: spec.and_then(|s| s.summary.clone()),
                        ops: Vec::new(),
                    }
                });
                node.ops.push(rec.op.clone());
            }
            None => group.ops.push(rec.op.clone()),
        }
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
    };
    reg.registry_version = super::stamp::registry_version(&reg);
    reg
}
