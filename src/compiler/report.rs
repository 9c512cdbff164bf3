//! The size report: characters and real BPE token counts (o200k_base and cl100k_base, via GitHub's
//! bpe-openai, which counts exactly as tiktoken does) for the full catalog, the gateway, each
//! profile and the help pages, and what the gateway and each profile save against the full catalog.
//!
//! Counting (`compiler::tokens`) dominates the report's cost, so every distinct text is counted
//! once, and the counts are spread over the machine's cores.

use crate::compiler::memo::Memo;
use crate::compiler::memo_sizes::{page_sizes, tools_size_by_origin};
use crate::compiler::surfaces::{self, ToolDef};
use crate::compiler::tokens::sizes_with;
pub use crate::compiler::tokens::{sizes_of, split_at_stamps, Size, Tokens};
use crate::model::help::HelpDoc;
use crate::model::help::{compact_json, PageOrigin, PageTexts};
use crate::model::registry::Registry;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The size of a tools array as a provider receives it (compact JSON).
pub fn surface_size(defs: &[ToolDef]) -> Size {
    Size::of(&surfaces::tools_text(defs))
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

/// Help page figures: characters and o200k tokens (what the report shows; pages are counted
/// with one encoding, the surfaces with both).
fn page_stats(sizes: &[Size]) -> Value {
    json!({
        "chars": stats(sizes.iter().map(|s| s.chars).collect()),
        "o200k": stats(sizes.iter().map(|s| s.o200k).collect()),
    })
}

/// The whole report as JSON.
pub fn build(reg: &Registry, help: &HelpDoc) -> Value {
    build_memo(reg, &help.texts(), None, None)
}

/// `build`, taking token counts of texts an earlier build counted from `memo`; with
/// `direct_origins` (the origin of each tool of the direct surface, in its order), the direct
/// surface's count is found tool by tool by them (`memo_sizes::tools_size_by_origin`).
pub fn build_memo(
    reg: &Registry,
    help: &PageTexts,
    memo: Option<&Memo>,
    direct_origins: Option<&[PageOrigin]>,
) -> Value {
    let direct = surfaces::direct(reg);
    let gateway = surfaces::gateway(reg);
    let profile_defs: Vec<(&String, Vec<ToolDef>)> = reg
        .profiles
        .keys()
        .map(|name| (name, surfaces::profile(reg, name)))
        .collect();
    let memo = memo.map(|m| (m, reg.registry_version.as_str()));
    let direct_size = memo
        .zip(direct_origins)
        .and_then(|((m, version), origins)| tools_size_by_origin(&direct, origins, m, version));
    // Every text to count, in one list: the surfaces (the direct one unless sized above).
    let mut texts: Vec<String> = Vec::with_capacity(2 + profile_defs.len());
    if direct_size.is_none() {
        texts.push(surfaces::tools_text(&direct));
    }
    texts.push(surfaces::tools_text(&gateway));
    texts.extend(profile_defs.iter().map(|(_, d)| surfaces::tools_text(d)));
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut sizes = sizes_with(&refs, true, memo);
    if let Some(size) = direct_size {
        sizes.insert(0, size);
    }
    // Help pages: the report shows their characters and o200k tokens, so only those are counted
    // (a fleet catalog has thousands of pages; a second encoding doubled the report's cost).
    let page_list: Vec<(&str, Option<&PageOrigin>)> = help
        .pages
        .values()
        .flat_map(|page| {
            let [short, full] = page
                .origins
                .as_ref()
                .map(|[s, f]| [Some(s), Some(f)])
                .unwrap_or_default();
            [(&page.short[..], short), (&page.full[..], full)]
        })
        .collect();
    let page_sizes = page_sizes(&page_list, memo);
    let (full, gateway_size) = (sizes[0], sizes[1]);
    let profiles: serde_json::Map<String, Value> = profile_defs
        .iter()
        .enumerate()
        .map(|(k, (name, defs))| {
            (
                (*name).clone(),
                surface_entry(sizes[2 + k], defs.len(), full),
            )
        })
        .collect();
    // Page k's short and full sizes, and whether it is an op's page.
    let pages: Vec<(bool, Size, Size)> = help
        .pages
        .keys()
        .enumerate()
        .map(|(k, key)| {
            (
                reg.ops.contains_key(key),
                page_sizes[2 * k],
                page_sizes[2 * k + 1],
            )
        })
        .collect();
    let pick = |op_only: bool, short: bool, full: bool| -> Vec<Size> {
        pages
            .iter()
            .filter(|(is_op, _, _)| !op_only || *is_op)
            .flat_map(|(_, s, f)| {
                let mut v = Vec::new();
                if short {
                    v.push(*s);
                }
                if full {
                    v.push(*f);
                }
                v
            })
            .collect()
    };
    // The page a model pays most for (the first of equals, in path order, short before full).
    let largest = help
        .pages
        .keys()
        .enumerate()
        .flat_map(|(k, key)| {
            [
                ("short", page_sizes[2 * k]),
                ("full", page_sizes[2 * k + 1]),
            ]
            .map(|(format, size)| (size.o200k, key, format))
        })
        .fold(None, |best: Option<(usize, &String, &str)>, c| match best {
            Some(b) if b.0 >= c.0 => Some(b),
            _ => Some(c),
        })
        .map(|(o200k, path, format)| json!({"path": path, "format": format, "o200k": o200k}));
    let mut full_entry = full.json();
    full_entry["tools"] = json!(direct.len());
    let mut report = json!({
        "generator": crate::model::registry::GENERATOR,
        "registry_version": reg.registry_version,
        "measured_as": "compact JSON of the tools array a provider receives; help pages as compact JSON",
        "full_catalog": full_entry,
        "gateway": surface_entry(gateway_size, gateway.len(), full),
        "profiles": profiles,
        "help": {
            "pages": help.pages.len(),
            "short": page_stats(&pick(false, true, false)),
            "full": page_stats(&pick(false, false, true)),
            "op_short": page_stats(&pick(true, true, false)),
            "op_full": page_stats(&pick(true, false, true)),
            "all": page_stats(&pick(false, true, true)),
            "largest": largest,
        },
    });
    // Third-party tools the build left out, so a reader of the report sees the gap.
    if !reg.quarantined.is_empty() {
        report["quarantined"] = json!(reg.quarantined);
    }
    report
}

/// What each emitter of the build wrote: files and bytes, by emitter name (the report's
/// `artifacts`, added once every emitter has run).
pub fn artifacts<'a>(emitted: impl IntoIterator<Item = (&'a str, usize, usize)>) -> Value {
    let map: serde_json::Map<String, Value> = emitted
        .into_iter()
        .map(|(name, files, bytes)| (name.to_string(), json!({"files": files, "bytes": bytes})))
        .collect();
    Value::Object(map)
}

/// What a model reads to find and call one op, per op (median, p90, max of o200k tokens):
/// through the gateway (its three tool definitions, then the root, group and op help pages,
/// short) and through the code-mode tree (the root index, the group's index, the op's module,
/// given by `codemode_path`); the direct surface sends every tool at once. `files` holds the
/// emitted texts the paths name.
pub fn disclosure(
    reg: &Registry,
    help: &PageTexts,
    file: impl Fn(&str) -> Option<String>,
    codemode_path: impl Fn(&crate::model::registry::OpRecord) -> [String; 3],
) -> Value {
    let t = Tokens::get();
    let mut counted: HashMap<String, usize> = HashMap::new();
    let mut count = |key: String, text: &dyn Fn() -> Option<String>| -> usize {
        *counted
            .entry(key)
            .or_insert_with(|| text().map_or(0, |x| t.o200k(&x)))
    };
    let gateway = surfaces::tools_text(&surfaces::gateway(reg));
    let gateway_tools = count("surface:gateway".into(), &|| Some(gateway.clone()));
    let page = |path: &str| help.pages.get(path).map(|p| compact_json(&p.short));
    let mut via_gateway = Vec::with_capacity(reg.ops.len());
    let mut via_codemode = Vec::with_capacity(reg.ops.len());
    for r in reg.ops.values() {
        let pages: usize = ["root", r.group.as_str(), r.op.as_str()]
            .iter()
            .map(|p| count(format!("page:{p}"), &|| page(p)))
            .sum();
        via_gateway.push(gateway_tools + pages);
        via_codemode.push(
            codemode_path(r)
                .into_iter()
                .map(|f| count(format!("file:{f}"), &|| file(&f)))
                .sum(),
        );
    }
    let direct = surfaces::tools_text(&surfaces::direct(reg));
    json!({
        "measured_as": "o200k tokens a model reads to find and call one op",
        "direct": t.o200k(&direct),
        "gateway": stats(via_gateway),
        "codemode": stats(via_codemode),
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
    let largest = &report["help"]["largest"];
    if let Some(path) = largest["path"].as_str() {
        out.push_str(&format!(
            "largest help page: {} ({}), {} o200k\n",
            crate::model::diag::escape_controls(path),
            largest["format"].as_str().unwrap_or_default(),
            largest["o200k"]
        ));
    }
    let d = &report["disclosure"];
    if d.is_object() {
        out.push_str(&format!(
            "\n{:<30} {:>8} {:>8} {:>8}\n",
            "to find and call one op, o200k", "median", "p90", "max"
        ));
        out.push_str(&stat_row("gateway (tools + 3 pages)", &d["gateway"]));
        out.push_str(&stat_row("code mode (3 files)", &d["codemode"]));
        out.push_str(&format!(
            "  {:<28} {:>8}\n",
            "direct (every tool)", d["direct"]
        ));
    }
    if let Some(a) = report["artifacts"].as_object() {
        out.push_str(&format!(
            "\n{:<30} {:>8} {:>10}\n",
            "artifacts", "files", "bytes"
        ));
        for (name, v) in a {
            out.push_str(&format!(
                "  {name:<28} {:>8} {:>10}\n",
                v["files"].as_u64().unwrap_or(0),
                v["bytes"].as_u64().unwrap_or(0)
            ));
        }
    }
    if let Some(q) = report["quarantined"].as_array() {
        out.push_str(&format!(
            "\nquarantined third-party tools ({}), in no surface:\n",
            q.len()
        ));
        for t in q {
            out.push_str(&format!(
                "  {} ({} {}): {}\n",
                crate::model::diag::escape_controls(t["tool_name"].as_str().unwrap_or_default()),
                t["file"].as_str().unwrap_or_default(),
                t["pointer"].as_str().unwrap_or_default(),
                crate::model::diag::escape_controls(t["reason"].as_str().unwrap_or_default()),
            ));
        }
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
