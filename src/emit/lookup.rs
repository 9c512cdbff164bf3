//! `lookup.json` (see `model::lookup`): where each op and page lies in the `registry.json` and
//! `help.json` this build wrote, recorded by their emitters as they write each op and page, so a
//! cold process can read one of each.

use crate::model::lookup::{Lookup, FILE};
use crate::model::registry::{Registry, GENERATOR};
use std::collections::BTreeMap;

/// Where each op lies in a `registry.json` text (start and length of its value), and the text's
/// length: recorded by the registry emitter as it writes each op (reading the 40 MB text back
/// to find them was about 6% of a one-tool rebuild's registry and help at 10,000 ops).
#[derive(Debug, PartialEq)]
pub struct RegistrySpans {
    pub(super) ops: BTreeMap<String, [u64; 2]>,
    pub(super) bytes: u64,
}

/// Where each page lies in a `help.json` text (short and full: start and length each), and the
/// text's length: recorded by the help emitter as it writes each page.
#[derive(Debug, PartialEq)]
pub struct HelpSpans {
    pub(super) pages: BTreeMap<String, [u64; 4]>,
    pub(super) bytes: u64,
}

/// Where ops and pages lie in the files one emitter made: `registry.json`'s or `help.json`'s.
#[derive(Debug)]
pub enum Spans {
    Registry(RegistrySpans),
    Help(HelpSpans),
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

/// The spans the emitters record, read back off the texts instead: what proves the recorded
/// ones right.
#[cfg(test)]
pub(super) mod read_back {
    use super::{HelpSpans, RegistrySpans};
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

    fn at(text: &str, raw: &RawValue) -> [u64; 2] {
        let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        [start as u64, raw.get().len() as u64]
    }

    pub(in crate::emit) fn registry_spans(registry: &str) -> RegistrySpans {
        let ops_text: RegistryText = serde_json::from_str(registry).unwrap();
        let ops = ops_text
            .ops
            .iter()
            .map(|(op, raw)| (op.clone(), at(registry, raw)))
            .collect();
        RegistrySpans {
            ops,
            bytes: registry.len() as u64,
        }
    }

    pub(in crate::emit) fn help_spans(help: &str) -> HelpSpans {
        let help_text: HelpText = serde_json::from_str(help).unwrap();
        let pages = help_text
            .pages
            .iter()
            .map(|(path, p)| {
                let ([s, sl], [f, fl]) = (at(help, p.short), at(help, p.full));
                (path.clone(), [s, sl, f, fl])
            })
            .collect();
        HelpSpans {
            pages,
            bytes: help.len() as u64,
        }
    }
}
