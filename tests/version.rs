//! registry_version depends on content only: the same tools split over any files, in any order,
//! under any names, wrapped or not, pretty or compact, give the same version; changing one
//! description (or anything semantic) changes it.

mod common;

use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;
use toolreg::compiler::compile;

fn example_tools() -> Vec<Value> {
    let defs = common::repo().join("definitions");
    let mut tools = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&defs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
    {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        match v {
            Value::Array(items) => tools.extend(items),
            Value::Object(mut o) => {
                tools.extend(o.remove("tools").unwrap().as_array().unwrap().clone())
            }
            _ => unreachable!(),
        }
    }
    tools
}

fn overlay() -> String {
    std::fs::read_to_string(common::repo().join("definitions/toolreg.toml")).unwrap()
}

/// Writes `tools` into `dir` as described by `layout` and compiles it.
fn version_of(dir: &Path, tools: &[Value], layout: &Layout) -> String {
    std::fs::write(dir.join("toolreg.toml"), overlay()).unwrap();
    let mut order: Vec<usize> = (0..tools.len()).collect();
    // Deterministic shuffle from the layout's seed.
    let mut state = layout.seed | 1;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    let chunk = order.len().div_ceil(layout.files);
    for (n, part) in order.chunks(chunk).enumerate() {
        let items: Vec<Value> = part.iter().map(|&i| tools[i].clone()).collect();
        let body = if layout.wrap[n % layout.wrap.len()] {
            serde_json::json!({ "tools": items })
        } else {
            Value::Array(items)
        };
        let text = if layout.pretty {
            serde_json::to_string_pretty(&body)
        } else {
            serde_json::to_string(&body)
        }
        .unwrap();
        let sub = if layout.nested && n % 2 == 1 {
            dir.join("nested/deeper")
        } else {
            dir.to_path_buf()
        };
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("{}-{n}.json", layout.stem)), text).unwrap();
    }
    let compiled = compile(dir);
    assert!(
        !compiled.diagnostics.has_errors(),
        "{}",
        compiled.diagnostics.render_text()
    );
    compiled.registry.unwrap().registry_version
}

#[derive(Debug, Clone)]
struct Layout {
    seed: u64,
    files: usize,
    wrap: Vec<bool>,
    pretty: bool,
    nested: bool,
    stem: String,
}

fn layouts() -> impl Strategy<Value = Layout> {
    (
        any::<u64>(),
        1usize..8,
        prop::collection::vec(any::<bool>(), 1..4),
        any::<bool>(),
        any::<bool>(),
        "[a-z]{1,10}",
    )
        .prop_map(|(seed, files, wrap, pretty, nested, stem)| Layout {
            seed,
            files,
            wrap,
            pretty,
            nested,
            stem,
        })
}

fn base_version() -> String {
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo().join("generated/registry.json")).unwrap(),
    )
    .unwrap();
    committed["registry_version"].as_str().unwrap().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn file_layout_never_changes_the_version(layout in layouts()) {
        let dir = tempfile::tempdir().unwrap();
        prop_assert_eq!(version_of(dir.path(), &example_tools(), &layout), base_version());
    }

    #[test]
    fn any_description_change_changes_the_version(layout in layouts(), pick in any::<prop::sample::Index>(), extra in "[ -~]{1,20}") {
        let mut tools = example_tools();
        let i = pick.index(tools.len());
        let desc = tools[i]["function"]["description"].as_str().unwrap().to_string();
        tools[i]["function"]["description"] = Value::String(format!("{desc}{extra}"));
        let dir = tempfile::tempdir().unwrap();
        prop_assert_ne!(version_of(dir.path(), &tools, &layout), base_version());
    }
}

#[test]
fn overlay_semantics_change_the_version() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout {
        seed: 7,
        files: 3,
        wrap: vec![false],
        pretty: true,
        nested: false,
        stem: "t".into(),
    };
    let tools = example_tools();
    assert_eq!(version_of(dir.path(), &tools, &layout), base_version());
    // Marking one op hidden is a semantic change.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(
        other.path().join("toolreg.toml"),
        overlay() + "\n[ops.\"onto.goal.list\"]\nhidden = true\n",
    )
    .unwrap();
    std::fs::write(
        other.path().join("all.json"),
        serde_json::to_string(&tools).unwrap(),
    )
    .unwrap();
    let v = compile(other.path()).registry.unwrap().registry_version;
    assert_ne!(v, base_version());
}

#[test]
fn the_search_weight_is_carried_and_hashed_only_when_set() {
    let tools = example_tools();
    let compile_with = |extra: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolreg.toml"), overlay() + extra).unwrap();
        std::fs::write(
            dir.path().join("all.json"),
            serde_json::to_string(&tools).unwrap(),
        )
        .unwrap();
        compile(dir.path()).registry.unwrap()
    };
    // Unset: no `search` key, and the version every earlier registry had.
    let plain = compile_with("");
    assert_eq!(plain.registry_version, base_version());
    let json = serde_json::to_value(&plain).unwrap();
    assert!(json.get("search").is_none());
    // Set: the runtime reads it from registry.json, and it ranks differently, so the version
    // changes with it.
    let weighted = compile_with("\n[search]\nsemantic_weight = 0.6\n");
    assert_eq!(weighted.search.semantic_weight, Some(0.6));
    assert_ne!(weighted.registry_version, plain.registry_version);
    let files = toolreg::emit::registry_json::emit(&weighted);
    let reread =
        toolreg::registry::Registry::from_slice(files["registry.json"].as_bytes()).unwrap();
    assert_eq!(reread.search.semantic_weight, Some(0.6));
    let other = compile_with("\n[search]\nsemantic_weight = 0.5\n");
    assert_ne!(other.registry_version, weighted.registry_version);
}
