//! What the model sees, on the example catalog: help pages, policies, examples, the gateway and
//! direct surfaces, profiles and the report (issue 4's acceptance), plus snapshots of each.

mod common;

use serde_json::Value;
use toolreg::builder::generate;
use toolreg::emit::Emitter;
use toolreg::help::{Format, HelpDoc, HelpRequest};
use toolreg::registry::Registry;

fn compiled(defs: &std::path::Path) -> (Registry, HelpDoc) {
    let g = generate(defs, &[]);
    assert!(
        !g.compiled.diagnostics.has_errors(),
        "{}",
        g.compiled.diagnostics.render_text()
    );
    let reg = g.compiled.registry.unwrap();
    let help = toolreg::emit::help::build(&reg);
    (reg, help)
}

fn example() -> (Registry, HelpDoc) {
    compiled(&common::repo().join("definitions"))
}

#[test]
fn every_op_short_page_has_a_minimal_call_that_validates() {
    let (reg, help) = example();
    for (op, rec) in &reg.ops {
        let page = help.lookup(&reg, &HelpRequest::path(op.clone()));
        let call = &page["examples"][0]["call"];
        assert_eq!(call["op"], op.as_str(), "{op}: no example call in {page}");
        let errs =
            toolreg::compiler::examples::validate(&rec.parameters_schema, &call["args"]).unwrap();
        assert!(errs.is_empty(), "{op}: example does not validate: {errs:?}");
        // Every field of an op page, short format.
        for field in [
            "summary",
            "usage",
            "args",
            "required_args",
            "id_args",
            "notes",
            "examples",
            "kind",
            "registry_version",
        ] {
            assert!(
                page.get(field).is_some(),
                "{op}: short page lacks `{field}`"
            );
        }
        for arg in rec.required_args.iter() {
            assert!(
                call["args"].get(arg).is_some(),
                "{op}: minimal call lacks required `{arg}`"
            );
        }
    }
}

#[test]
fn the_big_behavioral_tools_carry_compact_policies() {
    let (reg, help) = example();
    for op in ["onto.task.create", "onto.project.create"] {
        let page = help.lookup(&reg, &HelpRequest::path(op));
        let policy = &page["policy"];
        assert!(
            policy["do"].as_array().is_some_and(|a| !a.is_empty()),
            "{op}: {policy}"
        );
        assert!(
            policy["dont"].as_array().is_some_and(|a| !a.is_empty()),
            "{op}: {policy}"
        );
        // Compact: the short page is far smaller than the description it replaces.
        let desc = reg.ops[op].description.chars().count();
        let items: usize = ["do", "dont", "edge_cases"]
            .iter()
            .flat_map(|k| policy[*k].as_array().unwrap())
            .map(|i| i.as_str().unwrap().len())
            .sum();
        assert!(
            items * 2 < desc,
            "{op}: policy is not compact ({items} vs {desc})"
        );
    }
}

#[test]
fn size_targets_hold() {
    let (reg, help) = example();
    let report = toolreg::report::build(&reg, &help);
    let full = report["full_catalog"]["o200k"].as_u64().unwrap();
    let gateway = report["gateway"]["o200k"].as_u64().unwrap();
    assert!(
        gateway * 20 <= full,
        "gateway {gateway} tokens is over 5% of {full}"
    );
    let median = report["help"]["op_short"]["chars"]["median"]
        .as_u64()
        .unwrap();
    assert!(
        median <= 1200,
        "median op short page is {median} characters"
    );
    // Real BPE counts, not a character heuristic: the two encodings differ.
    assert_ne!(
        report["full_catalog"]["o200k"],
        report["full_catalog"]["cl100k"]
    );
}

#[test]
fn root_names_every_group_and_the_call_contract() {
    let (reg, help) = example();
    let root = help.lookup(&reg, &HelpRequest::default());
    let groups: Vec<&str> = root["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        groups,
        reg.tree.keys().map(String::as_str).collect::<Vec<_>>()
    );
    for g in root["groups"].as_array().unwrap() {
        assert!(!g["summary"].as_str().unwrap().is_empty() && g["ops"].as_u64().unwrap() > 0);
    }
    let contract = &root["call_contract"];
    assert_eq!(contract["help"]["tool"], "tool_help");
    assert_eq!(contract["exec"]["tool"], "tool_exec");
    let exec = &contract["exec"]["example"];
    let op = exec["op"].as_str().unwrap();
    let errs = toolreg::compiler::examples::validate(&reg.ops[op].parameters_schema, &exec["args"])
        .unwrap();
    assert!(
        errs.is_empty(),
        "the root's exec example must be valid: {errs:?}"
    );
    assert!(contract["on_error"].as_str().unwrap().contains("help_path"));
}

#[test]
fn flags_and_tool_names_and_unknown_paths() {
    let (reg, help) = example();
    let mut req = HelpRequest::path("update_onto_task");
    req.include_examples = false;
    req.include_schemas = true;
    let page = help.lookup(&reg, &req);
    assert_eq!(page["path"], "onto.task.update");
    assert_eq!(page["resolved_from"], "update_onto_task");
    assert!(page.get("examples").is_none());
    assert_eq!(
        page["schema"],
        reg.ops["onto.task.update"].parameters_schema
    );
    let unknown = help.lookup(&reg, &HelpRequest::path("onto.tasks.lst"));
    assert_eq!(unknown["error"]["code"], "UNKNOWN_PATH");
    let closest: Vec<&str> = unknown["error"]["closest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(closest.contains(&"onto.task.list"), "{closest:?}");
    assert_eq!(unknown["groups"].as_array().unwrap().len(), reg.tree.len());
}

/// Enums in the gateway come from the registry: a tool in a new group shows up in them.
#[test]
fn no_hand_written_enum_in_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::repo().join("definitions"), dir.path());
    std::fs::write(
        dir.path().join("gadgets.json"),
        r#"[{"type": "function", "function": {"name": "frobnicate_gadget", "description": "Frobnicate a gadget.", "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}]"#,
    )
    .unwrap();
    let overlay = std::fs::read_to_string(dir.path().join("toolreg.toml")).unwrap()
        + "\n[groups.gadgets]\nsummary = \"Gadgets.\"\n\n[special.frobnicate_gadget]\nop = \"gadgets.gadget.frobnicate\"\n";
    std::fs::write(dir.path().join("toolreg.toml"), overlay).unwrap();
    let (reg, _) = compiled(dir.path());
    let gateway = toolreg::surfaces::gateway(&reg);
    let search = gateway.iter().find(|t| t.name == "tool_search").unwrap();
    let groups = search.parameters["properties"]["group"]["enum"]
        .as_array()
        .unwrap();
    assert!(groups.contains(&Value::from("gadgets")), "{groups:?}");
    let help = gateway.iter().find(|t| t.name == "tool_help").unwrap();
    assert!(help.description.contains("gadgets"));
    // And every enum in every gateway schema lists only registry values.
    let kinds = search.parameters["properties"]["kind"]["enum"]
        .as_array()
        .unwrap();
    assert!(kinds
        .iter()
        .all(|k| reg.ops.values().any(|r| r.kind.as_str() == k)));
}

#[test]
fn deferred_profile_ops_point_to_help_and_keep_a_valid_schema() {
    let (reg, _) = example();
    let defs = toolreg::surfaces::profile(&reg, "project");
    let profile = &reg.profiles["project"];
    assert_eq!(
        defs.len(),
        profile.ops.len() + 1,
        "deferred ops bring the help tool"
    );
    assert!(defs.iter().any(|d| d.name == "tool_help"));
    let deferred = defs
        .iter()
        .find(|d| d.op.as_deref() == Some("onto.project.graph.reorganize"))
        .unwrap();
    assert!(
        deferred
            .description
            .contains("tool_help {\"path\": \"onto.project.graph.reorganize\"}"),
        "{}",
        deferred.description
    );
    assert!(deferred.parameters["properties"]["project_id"]
        .get("description")
        .is_none());
    assert_eq!(
        deferred.parameters["required"],
        reg.ops["onto.project.graph.reorganize"].parameters_schema["required"]
    );
    // A description already shorter than summary + pointer stays as it is.
    let short = defs
        .iter()
        .find(|d| d.op.as_deref() == Some("onto.goal.update"))
        .unwrap();
    assert_eq!(short.description, reg.ops["onto.goal.update"].description);
    let core = defs
        .iter()
        .find(|d| d.op.as_deref() == Some("onto.task.create"))
        .unwrap();
    assert_eq!(core.description, reg.ops["onto.task.create"].description);
    // project_read keeps only reads.
    assert!(reg.profiles["project_read"]
        .ops
        .iter()
        .all(|o| reg.ops[o].kind == toolreg::registry::Kind::Read));
}

fn file(files: &toolreg::emit::FileMap, path: &str) -> Value {
    serde_json::from_str(&files[path]).unwrap()
}

#[test]
fn snapshots_of_help_pages() {
    let (reg, help) = example();
    for path in [
        "root",
        "onto",
        "onto.task",
        "onto.task.update",
        "onto.task.create",
    ] {
        for format in [Format::Short, Format::Full] {
            let req = HelpRequest {
                path: path.into(),
                format,
                ..Default::default()
            };
            let name = format!(
                "help_{path}_{}",
                if format == Format::Short {
                    "short"
                } else {
                    "full"
                }
            );
            insta::assert_json_snapshot!(name, help.lookup(&reg, &req));
        }
    }
    insta::assert_json_snapshot!(
        "help_unknown_path",
        help.lookup(&reg, &HelpRequest::path("onto.tasks.lst"))
    );
}

#[test]
fn snapshots_of_surfaces_and_reports() {
    for (label, defs) in [
        ("buildos", "definitions"),
        ("universal_agent", "examples/universal-agent/definitions"),
    ] {
        let g = generate(
            &common::repo().join(defs),
            &[Emitter::Surfaces, Emitter::Report],
        );
        let files = g.files.unwrap();
        for path in files
            .keys()
            .filter(|p| p.starts_with("surfaces/") || p.as_str() == "report.json")
        {
            let name = format!(
                "{label}__{}",
                path.trim_end_matches(".json").replace('/', "__")
            );
            insta::assert_json_snapshot!(name, file(&files, path));
        }
    }
}
