//! Real catalogs at MCP-fleet scale, built as they arrive (no overlay): three public collections
//! nobody here wrote (tests/catalogs/fleet/README.md says where each comes from), plus the
//! failure classes that used to stop a build over one tool: top-level combinators, older schema
//! dialects, a tool named like a gateway tool, and a third-party tool that cannot compile.

mod common;

use common::{stderr, toolreg};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use toolreg::compiler::infer::words::Lexicon;
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::{block_on, ExecCall, Gateway};

/// Builds a catalog folder (as found, no overlay) into a temporary output with the default
/// emitters; returns the registry and what the build printed.
fn build(defs: &Path) -> (toolreg::Registry, String, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("generated");
    let o = toolreg(
        &common::repo(),
        &[
            "build",
            "--definitions",
            defs.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let text = stderr(&o);
    assert!(
        o.status.success(),
        "build of {} failed:\n{text}",
        defs.display()
    );
    // (typify's own panics are caught and reported as TR070; a panic of toolreg is not)
    assert!(!text.contains("panicked at"), "{text}");
    let reg = toolreg::Registry::from_path(out.join("registry.json")).unwrap();
    (reg, text, tmp)
}

/// Issue 38: the gateway costs the same small budget at any size, and no help page a model
/// reads is over a page (the size report measures both in o200k tokens). Before, as the issue
/// measured it: the 811-provider catalog's gateway was 8,091 tokens, its largest help page 31,683.
fn fixed_cost(tmp: &Path, gateway_max: u64, page_max: u64) {
    let report: Value =
        serde_json::from_slice(&std::fs::read(tmp.join("generated/report.json")).unwrap()).unwrap();
    let gateway = report["gateway"]["o200k"].as_u64().unwrap();
    assert!(gateway < gateway_max, "gateway {gateway} o200k");
    let largest = &report["help"]["largest"];
    assert!(
        largest["o200k"].as_u64().unwrap() <= page_max,
        "largest help page {largest}"
    );
    assert_eq!(
        report["help"]["all"]["o200k"]["max"], largest["o200k"],
        "the largest page is the report's maximum"
    );
    // The help root still reaches every group: its pages together list them all.
    let help: Value =
        serde_json::from_slice(&std::fs::read(tmp.join("generated/help.json")).unwrap()).unwrap();
    let pages = help["pages"].as_object().unwrap();
    let mut listed = 0;
    let mut path = "root".to_string();
    loop {
        let page = &pages[&path]["short"];
        listed += page["groups"].as_array().map_or(0, Vec::len);
        match page["next_page"].as_str() {
            Some(next) => path = next.to_string(),
            None => break,
        }
    }
    assert_eq!(
        listed as u64,
        report_groups(&help),
        "every group is on a root page"
    );
}

/// How many groups the registry has, from its help pages (a group page per group).
fn report_groups(help: &Value) -> u64 {
    help["pages"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !k.contains('.') && !k.contains('@') && *k != "root")
        .count() as u64
}

/// The group tree in brief: groups, ops per group (sorted by size), and a sample of ops.
fn tree_summary(reg: &toolreg::Registry) -> String {
    let mut sizes: Vec<(usize, &str)> = reg
        .tree
        .iter()
        .map(|(g, n)| {
            let ops = n.ops.len() + n.entities.values().map(|e| e.ops.len()).sum::<usize>();
            (ops, g.as_str())
        })
        .collect();
    sizes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut out = format!(
        "{} ops, {} groups, {} entities, {} profiles, {} quarantined\nlargest groups:\n",
        reg.counts.ops,
        reg.counts.groups,
        reg.counts.entities,
        reg.profiles.len(),
        reg.quarantined.len()
    );
    for (n, g) in sizes.iter().take(12) {
        out.push_str(&format!("  {g}: {n}\n"));
    }
    let single = sizes.iter().filter(|(n, _)| *n == 1).count();
    out.push_str(&format!("groups with one op: {single}\nevery 97th op:\n"));
    for op in reg.ops.keys().step_by(97) {
        out.push_str(&format!("  {op}\n"));
    }
    out
}

/// No group and no entity may be a verb, quantifier or adjective (the lexicon's non-nouns).
fn assert_nouns_only(name: &str, reg: &toolreg::Registry) {
    let lx = Lexicon::get();
    let mut bad = BTreeSet::new();
    for (g, node) in &reg.tree {
        if lx.is_not_noun(g) {
            bad.insert(format!("group `{g}`"));
        }
        for e in node.entities.keys() {
            if lx.is_not_noun(e) {
                bad.insert(format!("entity `{g}.{e}`"));
            }
        }
    }
    assert!(bad.is_empty(), "{name}: not nouns: {bad:?}");
}

fn fleet(name: &str) -> std::path::PathBuf {
    common::repo().join("tests/catalogs/fleet").join(name)
}

#[test]
fn livemcp_servers_build_with_a_group_per_server() {
    let (reg, _, _tmp) = build(&fleet("livemcp"));
    fixed_cost(_tmp.path(), 600, 2_000);
    assert_nouns_only("livemcp", &reg);
    let files: BTreeSet<&str> = reg.ops.values().map(|r| r.source.file.as_str()).collect();
    // A group per server: never more groups than files (a word of the names is not a group).
    assert!(reg.counts.groups <= files.len(), "{}", tree_summary(&reg));
    insta::assert_snapshot!("fleet_livemcp", tree_summary(&reg));

    // LiveMCPBench's own annotated tasks (everyday requests nobody here wrote) over this fleet:
    // a floor under the figures measured when the set was added (recall@5 .574, @10 .649).
    let o = toolreg(
        &common::repo(),
        &[
            "eval",
            "--queries",
            "tests/eval/livemcp/tasks.jsonl",
            "--registry",
            tmp_registry(&_tmp).to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let figures: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(figures["queries"], 94);
    assert!(figures["recall@5"].as_f64().unwrap() >= 0.55, "{figures}");
    assert!(figures["recall@10"].as_f64().unwrap() >= 0.62, "{figures}");
}

fn tmp_registry(tmp: &tempfile::TempDir) -> std::path::PathBuf {
    tmp.path().join("generated/registry.json")
}

#[test]
fn toolbench_providers_become_groups() {
    let (reg, _, _tmp) = build(&fleet("toolbench"));
    fixed_cost(_tmp.path(), 600, 2_000);
    assert_nouns_only("toolbench", &reg);
    // `<api>_for_<provider>`: the group is the provider, for every op.
    let off: Vec<&str> = reg
        .ops
        .values()
        .filter(|r| {
            // Names ToolBench cut at 64 characters may have lost their `_for_` part.
            let Some((_, provider)) = r.tool_name.rsplit_once("_for_") else {
                return false;
            };
            let expected = if provider.starts_with(|c: char| c.is_ascii_digit()) {
                format!("n{provider}")
            } else {
                provider.to_string()
            };
            r.group != expected
        })
        .map(|r| r.op.as_str())
        .collect();
    // The few left are names ToolBench cut inside the provider (6 of 2,479 today).
    assert!(
        off.len() * 100 <= reg.counts.ops,
        "group is not the provider: {off:?}"
    );
    // A fleet this size gets no per-group profiles, and output proportional to the ops.
    assert!(reg.profiles.is_empty());
    insta::assert_snapshot!("fleet_toolbench", tree_summary(&reg));
}

#[test]
fn toolsdk_registry_of_800_servers_builds() {
    let (reg, _, tmp) = build(&fleet("toolsdk"));
    fixed_cost(tmp.path(), 600, 2_000);
    assert_nouns_only("toolsdk", &reg);
    assert!(reg.counts.ops > 7_500, "{}", reg.counts.ops);
    assert!(reg.profiles.is_empty());
    let files = walkdir::WalkDir::new(tmp.path().join("generated"))
        .into_iter()
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_type().is_file()))
        .count();
    // Docs and help pages per op, a few per group: no per-group surface explosion.
    assert!(
        files < reg.counts.ops * 2 + reg.counts.groups * 3 + 50,
        "{files} files"
    );
    insta::assert_snapshot!("fleet_toolsdk", tree_summary(&reg));
}

/// Every failure class that used to stop a real catalog now builds, with its warning.
#[test]
fn failure_classes_build_with_a_warning_each() {
    let bad = common::repo().join("tests/bad");
    for (case, code) in [
        ("top_level_combinator", "TR066"),
        ("schema_dialects", "TR039"),
        ("gateway_name_taken", "TR065"),
        ("quarantine", "TR081"),
    ] {
        let (_, text, _tmp) = build(&bad.join(case));
        assert!(text.contains(code), "{case}: {code} missing:\n{text}");
    }
}

/// Issue 35, item 6: a third-party snapshot never takes the team's names. Its tools named
/// `tool_search` and `tool_help` keep their tool names (what the upstream knows) but are offered
/// as `tool_search_search` and `tool_help_search`; the gateway keeps its names. The team's own
/// tools are the team's to name: one of theirs called `tool_search` moves the gateway aside (a
/// warning), and a gateway name the overlay pinned to it is an error.
#[test]
fn gateway_tools_get_free_names_when_the_catalog_has_theirs() {
    let (reg, _, _tmp) = build(&common::repo().join("tests/bad/gateway_name_taken"));
    assert_eq!(reg.gateway.search, "tool_search");
    assert_eq!(reg.gateway.help, "tool_help");
    assert_eq!(reg.gateway.exec, "tool_exec");
    let offered: Vec<(&str, &str)> = reg
        .ops
        .values()
        .map(|r| (r.tool_name.as_str(), r.provider_name.as_str()))
        .collect();
    assert!(
        offered.contains(&("tool_search", "tool_search_search")),
        "{offered:?}"
    );
    assert!(
        offered.contains(&("tool_help", "tool_help_search")),
        "{offered:?}"
    );

    // The same tools in the team's own file.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        common::repo().join("tests/bad/gateway_name_taken/search.mcp.json"),
        tmp.path().join("search.json"),
    )
    .unwrap();
    let (own, _, _own_tmp) = build(tmp.path());
    assert_eq!(own.gateway.search, "toolreg_search_2");
    assert_eq!(own.gateway.help, "toolreg_help");
    // A name the overlay pinned to a team tool's name keeps the error.
    std::fs::write(
        tmp.path().join("toolreg.toml"),
        "[gateway]\nsearch = \"tool_search\"\n",
    )
    .unwrap();
    let o = toolreg(tmp.path(), &["lint", "--definitions", "."]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("TR020"), "{}", stderr(&o));
}

#[test]
fn older_dialects_are_rewritten_and_validate() {
    let (reg, text, _tmp) = build(&common::repo().join("tests/bad/schema_dialects"));
    let list = &reg
        .ops
        .values()
        .find(|r| r.tool_name == "list_invoices")
        .unwrap();
    let limit = &list.parameters_schema["properties"]["limit"];
    assert_eq!(limit["exclusiveMinimum"], json!(0));
    assert!(limit.get("minimum").is_none());
    assert!(list.parameters_schema["properties"]["offset"]
        .get("exclusiveMinimum")
        .is_none());
    let create = &reg
        .ops
        .values()
        .find(|r| r.tool_name == "create_invoice")
        .unwrap();
    let s = &create.parameters_schema;
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(s["$id"], "urn:example:create-invoice");
    assert!(s["$defs"]["money"].is_object() && s.get("definitions").is_none());
    assert_eq!(s["properties"]["total"]["$ref"], "#/$defs/money");
    assert_eq!(s["properties"]["line"]["prefixItems"][1]["type"], "number");
    assert_eq!(s["properties"]["line"]["items"], json!(false));
    assert_eq!(
        s["dependentRequired"]["discount_code"],
        json!(["discount_reason"])
    );
    assert!(text.contains("TR039"), "{text}");
    // Each rewrite is its own located warning (the brief text folds repeats; --verbose lists).
    let o = toolreg(
        &common::repo(),
        &[
            "lint",
            "--verbose",
            "--definitions",
            "tests/bad/schema_dialects",
        ],
    );
    let verbose = stderr(&o);
    for what in [
        "`definitions` moved to `$defs`",
        "`id` renamed `$id`",
        "array-form `items` rewritten as `prefixItems`",
        "`dependencies` split into",
    ] {
        assert!(verbose.contains(what), "{what} missing:\n{verbose}");
    }
    // exec validates under the rewritten schema: the exclusive bound and the $ref hold.
    let gw = Gateway::new(reg.clone(), toolreg::emit::help::build(&reg)).unwrap();
    let call = |op: &str, args: Value| block_on(gw.exec(ExecCall::new(op, args)));
    assert!(!call(&list.op, json!({"limit": 0})).ok);
    let env = call(&create.op, json!({"total": {"amount": 3}}));
    assert_eq!(
        env.error.as_ref().unwrap().code,
        "VALIDATION_ERROR",
        "{}",
        env.to_json()
    );
}

/// "Give `page_id` or `title`": providers see one object; exec enforces the alternatives.
#[test]
fn top_level_one_of_is_projected_for_models_and_enforced_by_exec() {
    let (reg, _, tmp) = build(&common::repo().join("tests/bad/top_level_combinator"));
    let get = reg
        .ops
        .values()
        .find(|r| r.tool_name == "get_page")
        .unwrap();
    let direct: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("generated/surfaces/direct.json")).unwrap(),
    )
    .unwrap();
    let def = direct["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["function"]["name"] == "get_page")
        .unwrap();
    let params = &def["function"]["parameters"];
    assert!(params.get("oneOf").is_none(), "{params}");
    let props: BTreeSet<&str> = params["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(props, BTreeSet::from(["include_body", "page_id", "title"]));
    assert!(def["function"]["description"]
        .as_str()
        .unwrap()
        .ends_with("Give exactly one of: `page_id`; `title`."));
    // The help page says it too.
    let help = toolreg::emit::help::build(&reg);
    let page = help.lookup(&reg, &toolreg::help::HelpRequest::path(&get.op));
    assert!(page.to_string().contains("Give exactly one of"), "{page}");

    let gw = Gateway::new(reg.clone(), help).unwrap();
    let call = |args: Value| block_on(gw.exec(ExecCall::new(&get.op, args)));
    // Satisfies the constraint: passes validation (no handler, so NOT_IMPLEMENTED after it),
    // with no "unknown argument" warning for the alternative's argument.
    for ok in [
        json!({"page_id": "p1"}),
        json!({"title": "Home", "include_body": true}),
    ] {
        let env = call(ok.clone());
        let code = env.error.as_ref().map(|e| e.code.as_str());
        assert_ne!(code, Some("VALIDATION_ERROR"), "{ok}: {}", env.to_json());
        assert!(
            !env.to_json().to_string().contains("unknown argument"),
            "{}",
            env.to_json()
        );
    }
    // Breaks it: neither, or both.
    for bad in [json!({}), json!({"page_id": "p1", "title": "Home"})] {
        let env = call(bad.clone());
        let code = env.error.as_ref().map(|e| e.code.clone());
        assert!(
            matches!(
                code.as_deref(),
                Some("VALIDATION_ERROR") | Some("EMPTY_ARGS")
            ),
            "{bad}: {}",
            env.to_json()
        );
    }
}

#[test]
fn a_third_party_tool_is_quarantined_and_the_teams_own_stops_the_build() {
    let defs = common::repo().join("tests/bad/quarantine");
    let (reg, text, tmp) = build(&defs);
    let left: BTreeMap<&str, &str> = reg
        .quarantined
        .iter()
        .map(|q| (q.tool_name.as_str(), q.file.as_str()))
        .collect();
    assert_eq!(
        left,
        BTreeMap::from([
            ("merge_contacts", "vendor/crm.json"),
            ("search_notes", "notes.mcp.json")
        ])
    );
    assert!(text.contains("quarantined 2 third-party tools"), "{text}");
    for name in ["merge_contacts", "search_notes"] {
        assert!(reg.op_by_tool_name(name).is_none());
        let direct =
            std::fs::read_to_string(tmp.path().join("generated/surfaces/direct.json")).unwrap();
        assert!(!direct.contains(name));
    }
    assert!(reg.op_by_tool_name("list_contacts").is_some());
    assert!(reg.op_by_tool_name("send_digest").is_some());
    let report =
        std::fs::read_to_string(tmp.path().join("generated/report.json")).unwrap_or_default();
    assert!(report.contains("merge_contacts"), "the report lists it");
    // check says it too, and passes.
    let out = tmp.path().join("generated");
    let o = toolreg(
        &common::repo(),
        &[
            "check",
            "--definitions",
            defs.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("quarantined 2"), "{}", stderr(&o));
    // --strict: errors again.
    let o = toolreg(
        &common::repo(),
        &[
            "check",
            "--strict",
            "--definitions",
            defs.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // The team's own file: the same error stops the build.
    let o = toolreg(
        &common::repo(),
        &["lint", "--definitions", "tests/bad/quarantine_own"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("TR037"), "{}", stderr(&o));
}

/// Search never answers with nothing, whatever the query.
#[test]
fn search_never_answers_with_nothing() {
    let (reg, _, _tmp) = build(&common::repo().join("tests/catalogs/reference-servers"));
    let gw = Gateway::new(reg.clone(), toolreg::emit::help::build(&reg)).unwrap();
    let mut queries: Vec<String> = vec![
        String::new(),
        "   ".into(),
        "?!.,;:-_()[]{}".into(),
        "zzzzqqqq xylophonic".into(),
        "日本語のクエリ".into(),
        "a".repeat(5_000),
    ];
    for seed in 1..=200u64 {
        queries.push(common::random_words(seed * 7919, 1 + (seed % 4) as usize).join(" "));
    }
    for q in &queries {
        let res = gw.search(&SearchRequest::query(q.clone()));
        assert!(!res.results.is_empty(), "no results for {q:?}");
    }
    let res = gw.search(&SearchRequest::query("zzzzqqqq"));
    assert!(res.nearest && res.directory.is_some());
}

/// Everyday memory requests reach the memory server's ops.
#[test]
fn everyday_memory_requests_find_the_memory_ops() {
    let (reg, _, _tmp) = build(&common::repo().join("tests/catalogs/reference-servers"));
    let gw = Gateway::new(reg.clone(), toolreg::emit::help::build(&reg)).unwrap();
    for (q, want) in [
        (
            "remember that Alice is a software engineer at Acme",
            "memory",
        ),
        ("which people in my notes mention Python", "memory"),
        ("forget everything about Bob", "memory"),
        ("what do you know about Alice", "memory"),
    ] {
        let res = gw.search(&SearchRequest::query(q));
        assert!(!res.nearest, "{q}: only spelling matches");
        let top: Vec<&str> = res.results.iter().take(3).map(|h| h.op.as_str()).collect();
        assert!(
            top.iter().any(|op| op.starts_with(want)),
            "{q}: top three {top:?}"
        );
    }
}

/// Issue 35, item 6: a vendor tool that infers to the same op as a team tool never takes it,
/// whatever the names' order: the team's `get_order` keeps `shop.order.get` and the imported
/// `GetOrder` (which sorts first, and took the op before) gets a qualified op.
#[test]
fn a_team_tool_keeps_its_op_against_a_vendor_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let tool = |name: &str, description: &str| {
        serde_json::json!({"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"], "additionalProperties": false}})
    };
    std::fs::write(
        tmp.path().join("shop.json"),
        serde_json::json!({"tools": [tool("get_order", "Get one order of the shop.")]}).to_string(),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("shop.mcp.json"),
        serde_json::json!({"tools": [tool("GetOrder", "Get one order (vendor).")]}).to_string(),
    )
    .unwrap();
    let (reg, text, _tmp) = build(tmp.path());
    let op_of = |tool: &str| {
        reg.ops
            .values()
            .find(|r| r.tool_name == tool)
            .map(|r| r.op.clone())
            .unwrap_or_else(|| panic!("{tool} missing:\n{text}"))
    };
    let (team, vendor) = (op_of("get_order"), op_of("GetOrder"));
    assert_eq!(team, "shop.order.get", "{vendor}\n{text}");
    assert_ne!(vendor, team);
}
