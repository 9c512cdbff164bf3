//! Every op/tool row of seed 000's section 3 tables and every section 5.2 mapping must be in the
//! example catalog's registry.json, read from the seed itself.

mod common;

#[test]
fn every_seed_mapping_is_in_the_registry() {
    let expected = common::seed_000_mappings();

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
