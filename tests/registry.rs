//! registry.json for both repo catalogs: snapshots, canonical bytes, and what the runtime loads.

mod common;

use toolreg::builder::generate;
use toolreg::registry::Registry;

fn registry_text(defs: &str) -> String {
    let g = generate(&common::repo().join(defs), toolreg::emit::Emitter::ALL);
    assert!(
        !g.compiled.diagnostics.has_errors(),
        "{}",
        g.compiled.diagnostics.render_text()
    );
    g.files.unwrap()["registry.json"].clone()
}

#[test]
fn snapshot_example_catalog() {
    insta::assert_snapshot!("registry_buildos", registry_text("definitions"));
}

#[test]
fn snapshot_universal_agent() {
    insta::assert_snapshot!(
        "registry_universal_agent",
        registry_text("examples/universal-agent/definitions")
    );
}

/// Keys are sorted everywhere except inside parameter schemas, which keep the author's order.
#[test]
fn canonical_bytes_and_declared_property_order() {
    let text = registry_text("definitions");
    assert!(text.ends_with("}\n") && !text.contains('\r') && !text.contains('\t'));
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    fn check_sorted(v: &serde_json::Value, path: &str) {
        if let Some(map) = v.as_object() {
            let keys: Vec<&String> = map.keys().collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "keys not sorted at {path}");
            for (k, child) in map {
                if k != "parameters_schema" {
                    check_sorted(child, &format!("{path}/{k}"));
                }
            }
        } else if let Some(items) = v.as_array() {
            items.iter().for_each(|i| check_sorted(i, path));
        }
    }
    check_sorted(&value, "");
    let props: Vec<&String> = value["ops"]["onto.task.create"]["parameters_schema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(props[..3], ["project_id", "title", "description"]);
    assert!(
        !text.contains(&*common::repo().to_string_lossy()),
        "absolute path leaked"
    );
}

/// The runtime side reads what the compiler wrote, with no compiler types involved.
#[test]
fn runtime_loads_the_committed_registry() {
    let reg = Registry::from_path(common::repo().join("generated/registry.json")).unwrap();
    assert_eq!(reg.counts.ops, 56);
    assert_eq!(reg.ops.len(), 56);
    let op = reg.op_by_tool_name("list_onto_tasks").unwrap();
    assert_eq!(op.op, "onto.task.list");
    assert_eq!(op.kind, toolreg::registry::Kind::Read);
    assert_eq!(op.source.file, "onto-read.json");
    let reorg = &reg.ops["onto.project.graph.reorganize"];
    assert!(reorg.destructive && reorg.dry_run_default);
    assert_eq!(reg.tree["onto"].entities["task"].ops.len(), 8);
    assert!(reg.registry_version.starts_with("b3:") && reg.registry_version.len() == 19);
    assert!(matches!(
        Registry::from_slice(br#"{"format_version": 1}"#),
        Err(toolreg::registry::LoadError::Json(_))
    ));
}
