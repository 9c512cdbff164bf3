//! `lookup.json` (see `model::lookup`): where each op and page lies in the `registry.json` and
//! `help.json` this build wrote, read off their text, so a cold process can read one of each.

use crate::model::lookup::{Lookup, FILE};
use crate::registry::{Registry, GENERATOR};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct RegistryText<'a> {
    #[serde(borrow)]
    ops: BTreeMap<String, &'a RawValue>,
}

#[derive(Deserialize)]
struct HelpText<'a> {
    #[serde(borrow)]
    pages: BTreeMap<String, PagesText<'a>>,
}

#[derive(Deserialize)]
struct PagesText<'a> {
    #[serde(borrow)]
    short: &'a RawValue,
    #[serde(borrow)]
    full: &'a RawValue,
}

/// The index of `registry` and `help` (the texts as written), or `None` if either does not
/// read back (it always does: both are this build's own output).
pub fn render(reg: &Registry, registry: &str, help: &str) -> Option<(String, String)> {
    let at = |text: &str, raw: &RawValue| {
        let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        [start as u64, raw.get().len() as u64]
    };
    let ops_text: RegistryText = serde_json::from_str(registry).ok()?;
    let help_text: HelpText = serde_json::from_str(help).ok()?;
    let ops = ops_text
        .ops
        .iter()
        .map(|(op, raw)| (op.clone(), at(registry, raw)))
        .collect();
    let pages = help_text
        .pages
        .iter()
        .map(|(path, p)| {
            let ([s, sl], [f, fl]) = (at(help, p.short), at(help, p.full));
            (path.clone(), [s, sl, f, fl])
        })
        .collect();
    // As `Registry::op_by_tool_name` resolves: a provider name first, else the first op (in op
    // order) of that tool name; only names that are not their op.
    let mut tools: BTreeMap<String, String> = BTreeMap::new();
    for r in reg.ops.values() {
        tools
            .entry(r.tool_name.clone())
            .or_insert_with(|| r.op.clone());
    }
    for r in reg.ops.values() {
        tools.insert(r.provider_name.clone(), r.op.clone());
    }
    tools.retain(|name, op| name != op && !reg.ops.contains_key(name));
    let head = reg.head();
    let lookup = Lookup {
        generator: GENERATOR.into(),
        registry_version: reg.registry_version.clone(),
        registry_bytes: registry.len() as u64,
        help_bytes: help.len() as u64,
        head,
        ops,
        tools,
        pages,
    };
    // Compact: read whole by every cold help and exec, so its size is their cost.
    let mut text = serde_json::to_string(&lookup).ok()?;
    text.push('\n');
    Some((FILE.to_string(), text))
}
