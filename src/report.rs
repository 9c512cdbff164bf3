//! The size report: characters and real BPE token counts (o200k_base and cl100k_base, via
//! tiktoken-rs, which embeds its vocabularies) for the full catalog, the gateway, each profile and
//! the help pages, and what the gateway and each profile save against the full catalog.

use crate::help::HelpDoc;
use crate::registry::Registry;
use crate::surfaces::{self, ToolDef};
use serde_json::{json, Value};
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

/// Token counters for the two encodings, loaded once per process (loading parses the embedded
/// vocabularies, which takes a noticeable fraction of a second).
pub struct Tokens {
    o200k: CoreBPE,
    cl100k: CoreBPE,
}

impl Tokens {
    pub fn get() -> &'static Tokens {
        static TOKENS: OnceLock<Tokens> = OnceLock::new();
        TOKENS.get_or_init(|| Tokens {
            o200k: tiktoken_rs::o200k_base().expect("o200k_base is embedded in tiktoken-rs"),
            cl100k: tiktoken_rs::cl100k_base().expect("cl100k_base is embedded in tiktoken-rs"),
        })
    }

    pub fn o200k(&self, text: &str) -> usize {
        self.o200k.encode_ordinary(text).len()
    }

    pub fn cl100k(&self, text: &str) -> usize {
        self.cl100k.encode_ordinary(text).len()
    }
}

/// Size of one text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub chars: usize,
    pub o200k: usize,
    pub cl100k: usize,
}

impl Size {
    pub fn of(text: &str) -> Size {
        let t = Tokens::get();
        Size {
            chars: text.chars().count(),
            o200k: t.o200k(text),
            cl100k: t.cl100k(text),
        }
    }

    fn json(&self) -> Value {
        json!({"chars": self.chars, "o200k": self.o200k, "cl100k": self.cl100k})
    }
}

/// The size of a tools array as a provider receives it (compact JSON).
pub fn surface_size(defs: &[ToolDef]) -> Size {
    Size::of(&surfaces::tools_json(defs).to_string())
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    ((1.0 - part as f64 / whole as f64) * 1000.0).round() / 1000.0
}

fn surface_entry(size: Size, tools: usize, full: Size) -> Value {
    let mut v = size.json();
    v["tools"] = json!(tools);
    v["saving_vs_full"] =
        json!({"o200k": ratio(size.o200k, full.o200k), "cl100k": ratio(size.cl100k, full.cl100k)});
    v
}

/// Median, 90th percentile and maximum (nearest-rank).
fn stats(mut values: Vec<usize>) -> Value {
    if values.is_empty() {
        return json!({"count": 0});
    }
    values.sort_unstable();
    let rank =
        |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
    json!({"count": values.len(), "median": rank(0.5), "p90": rank(0.9), "max": values[values.len() - 1]})
}

fn page_stats(pages: &[&Value]) -> Value {
    let sizes: Vec<Size> = pages.iter().map(|p| Size::of(&p.to_string())).collect();
    json!({
        "chars": stats(sizes.iter().map(|s| s.chars).collect()),
        "o200k": stats(sizes.iter().map(|s| s.o200k).collect()),
        "cl100k": stats(sizes.iter().map(|s| s.cl100k).collect()),
    })
}

/// The whole report as JSON.
pub fn build(reg: &Registry, help: &HelpDoc) -> Value {
    let direct = surfaces::direct(reg);
    let full = surface_size(&direct);
    let gateway = surfaces::gateway(reg);
    let profiles: serde_json::Map<String, Value> = reg
        .profiles
        .keys()
        .map(|name| {
            let defs = surfaces::profile(reg, name);
            (
                name.clone(),
                surface_entry(surface_size(&defs), defs.len(), full),
            )
        })
        .collect();
    let all: Vec<&Value> = help
        .pages
        .values()
        .flat_map(|p| [p.short.as_ref(), p.full.as_ref()])
        .collect();
    let short: Vec<&Value> = help.pages.values().map(|p| p.short.as_ref()).collect();
    let full_pages: Vec<&Value> = help.pages.values().map(|p| p.full.as_ref()).collect();
    let op_short: Vec<&Value> = help
        .pages
        .iter()
        .filter(|(k, _)| reg.ops.contains_key(*k))
        .map(|(_, p)| p.short.as_ref())
        .collect();
    let op_full: Vec<&Value> = help
        .pages
        .iter()
        .filter(|(k, _)| reg.ops.contains_key(*k))
        .map(|(_, p)| p.full.as_ref())
        .collect();
    let mut full_entry = full.json();
    full_entry["tools"] = json!(direct.len());
    json!({
        "generator": crate::registry::GENERATOR,
        "registry_version": reg.registry_version,
        "measured_as": "compact JSON of the tools array a provider receives; help pages as compact JSON",
        "full_catalog": full_entry,
        "gateway": surface_entry(surface_size(&gateway), gateway.len(), full),
        "profiles": profiles,
        "help": {
            "pages": help.pages.len(),
            "short": page_stats(&short),
            "full": page_stats(&full_pages),
            "op_short": page_stats(&op_short),
            "op_full": page_stats(&op_full),
            "all": page_stats(&all),
        },
    })
}

/// The report as a table for people (`toolreg report`).
pub fn render_text(report: &Value) -> String {
    let row = |name: &str, v: &Value| {
        let saving = v
            .get("saving_vs_full")
            .map(|s| format!("{:>5.1}%", s["o200k"].as_f64().unwrap_or(0.0) * 100.0))
            .unwrap_or_else(|| "     -".into());
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        format!(
            "{name:<28} {:>6} {:>9} {:>8} {:>8} {saving}\n",
            n("tools"),
            n("chars"),
            n("o200k"),
            n("cl100k")
        )
    };
    let mut out = format!(
        "{:<28} {:>6} {:>9} {:>8} {:>8} {:>6}\n",
        "surface", "tools", "chars", "o200k", "cl100k", "saved"
    );
    out.push_str(&row("full catalog (direct.json)", &report["full_catalog"]));
    out.push_str(&row("gateway", &report["gateway"]));
    if let Some(p) = report["profiles"].as_object() {
        for (name, v) in p {
            out.push_str(&row(&format!("profile {name}"), v));
        }
    }
    out.push_str(&format!(
        "\n{:<30} {:>8} {:>8} {:>8}\n",
        format!("help pages ({})", report["help"]["pages"]),
        "median",
        "p90",
        "max"
    ));
    for (label, key) in [
        ("short, chars", "short"),
        ("full, chars", "full"),
        ("op short, chars", "op_short"),
        ("op full, chars", "op_full"),
    ] {
        let s = &report["help"][key]["chars"];
        out.push_str(&stat_row(label, s));
    }
    for (label, key) in [("short, o200k", "short"), ("full, o200k", "full")] {
        out.push_str(&stat_row(label, &report["help"][key]["o200k"]));
    }
    out
}

fn stat_row(label: &str, s: &Value) -> String {
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    format!(
        "  {label:<28} {:>8} {:>8} {:>8}\n",
        n("median"),
        n("p90"),
        n("max")
    )
}
