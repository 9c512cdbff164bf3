//! `lookup.json` (see `model::lookup`): where each op and page lies in the `registry.json` and
//! `help.json` this build wrote, read off their text, so a cold process can read one of each.

use super::FileMap;
use crate::model::lookup::{Lookup, FILE};
use crate::model::registry::{Registry, GENERATOR};
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

/// Where each op lies in a `registry.json` text, and the text's length: read off the text as the
/// registry emitter made it (in its own thread, before the text leaves memory).
#[derive(Debug)]
pub struct RegistrySpans {
    ops: BTreeMap<String, [u64; 2]>,
    bytes: u64,
}

/// Where each page lies in a `help.json` text (short and full), and the text's length.
#[derive(Debug)]
pub struct HelpSpans {
    pages: BTreeMap<String, [u64; 4]>,
    bytes: u64,
}

fn at(text: &str, raw: &RawValue) -> [u64; 2] {
    let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
    [start as u64, raw.get().len() as u64]
}

/// The spans of a `registry.json` text, or `None` if it does not read back (it always does:
/// it is this build's own output).
pub fn registry_spans(registry: &str) -> Option<RegistrySpans> {
    let ops_text: RegistryText = serde_json::from_str(registry).ok()?;
    let ops = ops_text
        .ops
        .iter()
        .map(|(op, raw)| (op.clone(), at(registry, raw)))
        .collect();
    Some(RegistrySpans {
        ops,
        bytes: registry.len() as u64,
    })
}

/// The spans of a `help.json` text, or `None` if it does not read back.
pub fn help_spans(help: &str) -> Option<HelpSpans> {
    let help_text: HelpText = serde_json::from_str(help).ok()?;
    let pages = help_text
        .pages
        .iter()
        .map(|(path, p)| {
            let ([s, sl], [f, fl]) = (at(help, p.short), at(help, p.full));
            (path.clone(), [s, sl, f, fl])
        })
        .collect();
    Some(HelpSpans {
        pages,
        bytes: help.len() as u64,
    })
}

/// Where ops and pages lie in the files one emitter made: `registry.json`'s or `help.json`'s.
#[derive(Debug)]
pub enum Spans {
    Registry(RegistrySpans),
    Help(HelpSpans),
}

impl Spans {
    /// The spans of `registry.json` or `help.json` among `files` (`None`: neither is there).
    pub fn of(files: &FileMap) -> Option<Spans> {
        if let Some(text) = files.get(super::registry_json::FILE) {
            return registry_spans(text).map(Spans::Registry);
        }
        files
            .get(super::help::FILE)
            .and_then(|text| help_spans(text))
            .map(Spans::Help)
    }
}

/// The spans of both files, gathered from the emitters' threads.
#[derive(Debug, Default)]
pub struct Gathered {
    registry: Option<RegistrySpans>,
    help: Option<HelpSpans>,
}

impl Gathered {
    pub fn add(&mut self, spans: Option<Spans>) {
        match spans {
            Some(Spans::Registry(s)) => self.registry = Some(s),
            Some(Spans::Help(s)) => self.help = Some(s),
            None => {}
        }
    }

    /// `lookup.json`, when both files were made.
    pub fn render(self, reg: &Registry) -> Option<(String, String)> {
        Some(render_spans(reg, self.registry?, self.help?))
    }
}

/// The index of the two texts as written, from their spans.
pub fn render_spans(reg: &Registry, registry: RegistrySpans, help: HelpSpans) -> (String, String) {
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
        registry_bytes: registry.bytes,
        help_bytes: help.bytes,
        head,
        ops: registry.ops,
        tools,
        pages: help.pages,
    };
    // Compact: read whole by every cold help and exec, so its size is their cost.
    let mut text = serde_json::to_string(&lookup).expect("the lookup serializes");
    text.push('\n');
    (FILE.to_string(), text)
}
