//! Every op/tool row of seed 000's section 3 tables and every section 5.2 mapping must be in the
//! example catalog's registry.json, read from the seed itself.

mod common;

use std::collections::BTreeMap;

fn seed_000() -> String {
    let dir = common::shared().join("seeds");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("000_"))
        .expect("seed 000 is in shared/seeds");
    std::fs::read_to_string(file).unwrap()
}

fn section<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let a = text
        .find(start)
        .unwrap_or_else(|| panic!("seed has `{start}`"));
    let b = text[a..].find(end).map_or(text.len(), |b| a + b);
    &text[a..b]
}

/// Text between the first pair of backticks in a cell.
fn code(cell: &str) -> Option<&str> {
    let mut parts = cell.split('`');
    parts.next()?;
    parts.next().filter(|s| !s.is_empty())
}

#[test]
fn every_seed_mapping_is_in_the_registry() {
    let seed = seed_000();
    let mut expected: BTreeMap<String, String> = BTreeMap::new(); // tool -> op

    // Section 3 tables: | `op` | `tool` | ...
    for line in section(&seed, "## 3) Command Taxonomy", "## 4)").lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 3 {
            if let (Some(op), Some(tool)) = (code(cells[1]), code(cells[2])) {
                expected.insert(tool.to_string(), op.to_string());
            }
        }
    }
    let from_tables = expected.len();
    // Section 5.2: - `tool` → `op`
    for line in section(&seed, "### 5.2 Auto-classification rules", "### 5.3").lines() {
        if let Some((l, r)) = line.split_once('→') {
            if let (Some(tool), Some(op)) = (code(l), code(r)) {
                if let Some(prev) = expected.insert(tool.to_string(), op.to_string()) {
                    assert_eq!(prev, op, "seed sections disagree on {tool}");
                }
            }
        }
    }
    assert!(
        from_tables >= 45,
        "parsed only {from_tables} table rows: the seed parser is broken"
    );
    assert!(
        expected.len() >= 50,
        "parsed only {} mappings",
        expected.len()
    );

    let reg: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo().join("generated/registry.json")).unwrap(),
    )
    .unwrap();
    let ops = reg["ops"].as_object().unwrap();
    let mut missing = Vec::new();
    for (tool, op) in &expected {
        match ops.get(op) {
            Some(rec) if rec["tool_name"] == tool.as_str() => {}
            Some(rec) => missing.push(format!("{op}: tool is {} not {tool}", rec["tool_name"])),
            None => missing.push(format!("{op} ({tool}) is not in registry.json")),
        }
    }
    assert!(
        missing.is_empty(),
        "seed mappings not in the registry:\n{}",
        missing.join("\n")
    );
}
