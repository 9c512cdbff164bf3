//! Zero-config catalogs: every catalog builds with no overlay; `toolreg init` drafts an overlay
//! that rebuilds the very same registry; the inferred taxonomy of the BuildOS example agrees with
//! seed 000's hand-written one; real MCP tool lists nobody here wrote get a structured tree,
//! help pages and search.

mod common;

use common::{stderr, toolreg};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolreg::compiler::{compile_with, OverlaySource};
use toolreg::runtime::search::SearchRequest;
use toolreg::Registry;

/// Every catalog in the repo: the example, the second example, the fixture, two real MCP ones.
const CATALOGS: &[&str] = &[
    "definitions",
    "examples/universal-agent/definitions",
    "tests/fixture/definitions",
    "tests/catalogs/github",
    "tests/catalogs/reference-servers",
];

/// A copy of a catalog with its overlay removed.
fn without_overlay(catalog: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let defs = tmp.path().join("defs");
    common::copy_dir(&common::repo().join(catalog), &defs);
    let _ = std::fs::remove_file(defs.join("toolreg.toml"));
    (tmp, defs)
}

fn registry(out: &Path) -> Registry {
    Registry::from_path(out.join("registry.json")).unwrap()
}

/// tool name -> (op, kind, destructive).
fn ops_by_tool(reg: &Registry) -> BTreeMap<String, (String, String, bool)> {
    reg.ops
        .values()
        .map(|r| {
            (
                r.tool_name.clone(),
                (r.op.clone(), r.kind.as_str().to_string(), r.destructive),
            )
        })
        .collect()
}

#[test]
fn every_catalog_builds_without_an_overlay_and_init_reproduces_it() {
    for catalog in CATALOGS {
        let (tmp, defs) = without_overlay(catalog);
        let out1 = tmp.path().join("out1");
        let build = toolreg(
            tmp.path(),
            &["build", "-d", "defs", "-o", out1.to_str().unwrap()],
        );
        assert_eq!(
            build.status.code(),
            Some(0),
            "{catalog}:\n{}",
            stderr(&build)
        );
        let text = stderr(&build);
        assert!(
            text.contains("note[TR026]") && !text.contains("error["),
            "{catalog}: one folded note line, no errors:\n{text}"
        );
        let zero = registry(&out1);
        assert!(zero.counts.groups >= 1 && zero.counts.ops > 0);

        let init = toolreg(tmp.path(), &["init", "-d", "defs"]);
        assert_eq!(init.status.code(), Some(0), "{catalog}:\n{}", stderr(&init));
        assert!(stderr(&init).contains(&zero.registry_version));
        let drafted = std::fs::read_to_string(defs.join("toolreg.toml")).unwrap();

        let out2 = tmp.path().join("out2");
        let again = toolreg(
            tmp.path(),
            &["build", "-d", "defs", "-o", out2.to_str().unwrap()],
        );
        assert_eq!(
            again.status.code(),
            Some(0),
            "{catalog}:\n{}",
            stderr(&again)
        );
        let with_draft = registry(&out2);
        assert_eq!(
            with_draft.registry_version, zero.registry_version,
            "{catalog}: init + build must give the zero-config registry"
        );
        assert_eq!(ops_by_tool(&with_draft), ops_by_tool(&zero), "{catalog}");
        assert_eq!(
            common::snapshot_dir(&out1),
            common::snapshot_dir(&out2),
            "{catalog}: every artifact is the same"
        );
        // With the draft nothing is left to infer: no op notes.
        let lint = toolreg(tmp.path(), &["lint", "-d", "defs", "--format", "json"]);
        assert!(
            !stderr(&lint).contains("inferred as"),
            "{catalog}: the draft classifies every tool itself"
        );

        // An existing overlay is never replaced without --force.
        let refused = toolreg(tmp.path(), &["init", "-d", "defs"]);
        assert_eq!(refused.status.code(), Some(2));
        assert!(stderr(&refused).contains("--force"));
        std::fs::write(defs.join("toolreg.toml"), "# mine\n").unwrap();
        let refused = toolreg(tmp.path(), &["init", "-d", "defs"]);
        assert_eq!(refused.status.code(), Some(2));
        assert_eq!(
            std::fs::read_to_string(defs.join("toolreg.toml")).unwrap(),
            "# mine\n"
        );
        let forced = toolreg(tmp.path(), &["init", "-d", "defs", "--force"]);
        assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
        assert_eq!(
            std::fs::read_to_string(defs.join("toolreg.toml")).unwrap(),
            drafted,
            "{catalog}: the draft is deterministic"
        );
    }
}

#[test]
fn inference_can_be_switched_off() {
    let (_tmp, defs) = without_overlay("tests/catalogs/github");
    let strict = compile_with(
        &defs,
        OverlaySource::Text("[classify]\ninfer = false\n".into()),
    );
    assert!(strict.registry.is_none());
    let unclassified = strict
        .diagnostics
        .iter()
        .filter(|d| d.code.as_str() == "TR014")
        .count();
    assert_eq!(unclassified, 26, "every tool needs a rule again");
}

/// (entity, action) of an op: entity is the second segment of a 3+ segment op.
fn entity_action(op: &str) -> (Option<String>, String) {
    let segs: Vec<&str> = op.split('.').collect();
    let entity = (segs.len() >= 3).then(|| segs[1].to_string());
    (entity, segs[segs.len() - 1].to_string())
}

#[test]
fn inferred_taxonomy_agrees_with_seed_000() {
    let repo = common::repo();
    // The hand-written taxonomy: seed 000's tables and 5.2 list; the few tools seed 000 does not
    // list (seed 002's calendar and document metadata) as the hand-written overlay maps them.
    let seed = common::seed_000_mappings();
    let hand = Registry::from_path(repo.join("generated/registry.json")).unwrap();
    let inferred = compile_with(
        &repo.join("definitions"),
        OverlaySource::Text(String::new()),
    );
    let inferred = inferred.registry.expect("builds with no overlay");

    let mut agree = 0;
    let mut from_seed = 0;
    let mut rows = Vec::new();
    for rec in hand.ops.values() {
        let expected = match seed.get(&rec.tool_name) {
            Some(op) => {
                from_seed += 1;
                op.clone()
            }
            None => rec.op.clone(),
        };
        let got = &inferred.op_by_tool_name(&rec.tool_name).unwrap().op;
        if entity_action(&expected) == entity_action(got) {
            agree += 1;
        } else {
            rows.push(format!(
                "  {:<32} hand-written {:<34} inferred {got}",
                rec.tool_name, expected
            ));
        }
    }
    let total = hand.ops.len();
    let share = agree as f64 / total as f64;
    let with_entity = inferred.ops.values().filter(|r| r.entity.is_some()).count();

    // Overlay size: the init draft versus the hand-written overlay.
    let draft = toolreg::compiler::draft::draft(&repo.join("definitions")).unwrap();
    let hand_overlay: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo.join("definitions/toolreg.toml")).unwrap())
            .unwrap();
    let count = |k: &str| {
        hand_overlay.get(k).map_or(0, |v| {
            v.as_array()
                .map_or_else(|| v.as_table().map_or(0, |t| t.len()), |a| a.len())
        })
    };
    println!(
        "BuildOS example, no overlay: (entity, action) agrees with the hand-written taxonomy for \
         {agree} of {total} tools ({:.1}%; {from_seed} from seed 000 itself)",
        share * 100.0
    );
    println!(
        "ops with a real entity: {with_entity} of {} ({:.1}%)",
        inferred.ops.len(),
        100.0 * with_entity as f64 / inferred.ops.len() as f64
    );
    println!(
        "init draft: {} rules + {} special cases; hand-written overlay: {} rules + {} special cases",
        draft.rules,
        draft.special,
        count("rules"),
        count("special")
    );
    println!("disagreements:\n{}", rows.join("\n"));
    assert!(from_seed >= 50, "the seed parser found too few mappings");
    assert!(
        share >= 0.85,
        "agreement {:.1}% is under 85%:\n{}",
        share * 100.0,
        rows.join("\n")
    );
}

/// The op tree as text: groups with summaries, entities with plurals, ops with kinds.
fn tree_text(reg: &Registry) -> String {
    let mut t = String::new();
    for (g, node) in &reg.tree {
        t.push_str(&format!("{g}: {}\n", node.summary));
        for op in &node.ops {
            t.push_str(&format!("  {op} ({})\n", reg.ops[op].kind.as_str()));
        }
        for (e, en) in &node.entities {
            t.push_str(&format!(
                "  {e} ({})\n",
                en.plural.as_deref().unwrap_or("-")
            ));
            for op in &en.ops {
                let r = &reg.ops[op];
                t.push_str(&format!(
                    "    {op} <- {} ({}{})\n",
                    r.tool_name,
                    r.kind.as_str(),
                    if r.destructive { ", destructive" } else { "" }
                ));
            }
        }
    }
    for (name, p) in &reg.profiles {
        t.push_str(&format!("profile {name}: {} ops\n", p.ops.len()));
    }
    t
}

#[test]
fn real_mcp_catalogs_get_a_tree_help_and_search() {
    // (catalog, query as a person would ask, the op it must find in the top 3)
    let cases: &[(&str, &[(&str, &str)])] = &[
        (
            "github",
            &[
                ("open a new issue", "github.issue.create"),
                ("merge a pull request", "github.pull_request.merge"),
                (
                    "files changed in a pull request",
                    "github.pull_request.files.get",
                ),
            ],
        ),
        (
            "reference-servers",
            &[
                ("read a file", "filesystem.file.read"),
                ("add observations to an entity", "memory.observation.add"),
                ("post a message to a slack channel", "slack.message.post"),
            ],
        ),
    ];
    for (name, queries) in cases {
        let (tmp, _defs) = without_overlay(&format!("tests/catalogs/{name}"));
        let out = tmp.path().join("out");
        let build = toolreg(
            tmp.path(),
            &["build", "-d", "defs", "-o", out.to_str().unwrap()],
        );
        assert_eq!(build.status.code(), Some(0), "{name}:\n{}", stderr(&build));
        let reg = registry(&out);
        assert!(
            reg.ops.values().filter(|r| r.entity.is_some()).count() * 10 >= reg.ops.len() * 8,
            "{name}: at least 80% of ops have an entity"
        );
        insta::assert_snapshot!(format!("inferred_tree_{name}"), tree_text(&reg));

        // Help pages: the root lists every group, a group page its entities.
        let root = toolreg(
            tmp.path(),
            &[
                "help",
                "root",
                "--registry",
                out.join("registry.json").to_str().unwrap(),
            ],
        );
        assert!(root.status.success());
        let page = String::from_utf8_lossy(&root.stdout);
        for g in reg.tree.keys() {
            assert!(
                page.contains(g.as_str()),
                "{name}: root help lists {g}:\n{page}"
            );
        }
        // Search finds ops the way a person asks for them.
        let gw = toolreg::runtime::Gateway::from_dir(&out).unwrap();
        for (q, want) in *queries {
            let mut req = SearchRequest::query(*q);
            req.limit = Some(3);
            let hits: Vec<String> = gw.search(&req).results.into_iter().map(|h| h.op).collect();
            assert!(
                hits.iter().any(|h| h == want),
                "{name}: `{q}` -> {hits:?}, want {want}"
            );
        }
    }
}

/// Real schemas rarely close `additionalProperties`: a wrong name is still named, as a field
/// error when the argument it stands for is missing, as a warning otherwise.
#[test]
fn wrong_argument_names_under_open_schemas() {
    let (tmp, _defs) = without_overlay("tests/catalogs/reference-servers");
    let out = tmp.path().join("out");
    let build = toolreg(
        tmp.path(),
        &["build", "-d", "defs", "-o", out.to_str().unwrap()],
    );
    assert!(build.status.success(), "{}", stderr(&build));
    let reg = out.join("registry.json");
    let schema = &registry(&out).ops["filesystem.file.read"].parameters_schema;
    assert!(
        schema.get("additionalProperties").is_none(),
        "the real schema is open"
    );
    let exec = |args: &str| -> serde_json::Value {
        let o = toolreg(
            tmp.path(),
            &[
                "exec",
                "filesystem.file.read",
                "--args",
                args,
                "--registry",
                reg.to_str().unwrap(),
            ],
        );
        serde_json::from_slice(&o.stdout).unwrap()
    };

    let env = exec(r#"{"filePath": "/tmp/x"}"#);
    assert_eq!(env["ok"], false);
    let errors = env["error"]["details"]["field_errors"].as_array().unwrap();
    let wrong = errors.iter().find(|e| e["field"] == "filePath").unwrap();
    assert_eq!(
        wrong["message"],
        "`filePath` is not an argument of this op; did you mean `path`?"
    );
    let missing = errors.iter().find(|e| e["field"] == "path").unwrap();
    assert_eq!(missing["hint"], "you sent `filePath`: rename it to `path`");

    let env = exec(r#"{"path": "/tmp/x", "hed": 3}"#);
    assert_eq!(env["ok"], true, "{env}");
    let warnings: Vec<&str> = env["meta"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("`hed` is not an argument") && w.contains("`head`")),
        "{warnings:?}"
    );
    assert!(
        !warnings.iter().any(|w| w.contains("JSON string")),
        "the CLI passes an object: {warnings:?}"
    );

    // Undeclared names are dropped before the handler (or an upstream) sees them, and the
    // warning says so: an injected `sidenote` travels no further than validation.
    let mut gw = toolreg::runtime::Gateway::from_dir(&out).unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(serde_json::Value::Null));
    let s = std::sync::Arc::clone(&seen);
    gw.handle_sync("filesystem.file.read", move |args| {
        *s.lock().unwrap() = args.clone();
        Ok(serde_json::json!({"ok": true}))
    })
    .unwrap();
    let env = toolreg::runtime::block_on(gw.exec(toolreg::runtime::ExecCall::from_value(
        &serde_json::json!({"op": "filesystem.file.read", "args": {"path": "/tmp/x", "hed": 3, "sidenote": "~/.ssh/id_rsa"}}),
    )));
    assert!(env.ok, "{}", env.to_json());
    assert_eq!(*seen.lock().unwrap(), serde_json::json!({"path": "/tmp/x"}));
    let dropped = env
        .meta
        .warnings
        .iter()
        .filter(|w| w.contains("dropped before the call"))
        .count();
    assert_eq!(dropped, 2, "{:?}", env.meta.warnings);

    // An op whose overlay says `pass_unknown_arguments = true` lets them through (and says so).
    let passing = tmp.path().join("passing");
    common::copy_dir(&out, &passing);
    let path = passing.join("registry.json");
    let mut reg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    reg["ops"]["filesystem.file.read"]["pass_unknown_arguments"] = serde_json::json!(true);
    std::fs::write(&path, reg.to_string()).unwrap();
    let mut gw = toolreg::runtime::Gateway::from_dir(&passing).unwrap();
    let s = std::sync::Arc::clone(&seen);
    gw.handle_sync("filesystem.file.read", move |args| {
        *s.lock().unwrap() = args.clone();
        Ok(serde_json::json!({"ok": true}))
    })
    .unwrap();
    let env = toolreg::runtime::block_on(gw.exec(toolreg::runtime::ExecCall::from_value(
        &serde_json::json!({"op": "filesystem.file.read", "args": {"path": "/tmp/x", "hed": 3}}),
    )));
    assert!(env.ok, "{}", env.to_json());
    assert_eq!(
        *seen.lock().unwrap(),
        serde_json::json!({"path": "/tmp/x", "hed": 3})
    );
    assert!(env.meta.warnings.iter().any(|w| w.contains("passed on")));
}
