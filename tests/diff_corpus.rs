//! `toolreg diff`: one before/after catalog pair per finding code (tests/diff, written by
//! tests/diff/make_corpus.py), pairs that must give nothing, the CLI's formats and exit codes,
//! `--base` on a real git repository, and properties over random catalogs.

mod common;

use common::{git, stderr, toolreg};
use proptest::prelude::*;
use std::path::Path;
use toolreg::compiler::compile;
use toolreg::diff::{diff, render, DiffCode, Level};
use toolreg::Registry;

fn build(dir: &Path) -> Registry {
    let c = compile(dir);
    c.registry
        .unwrap_or_else(|| panic!("{}: {}", dir.display(), c.diagnostics.render_text()))
}

fn cases() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(common::repo().join("tests/diff"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn every_code_has_a_pair_and_each_pair_gives_its_code() {
    let cases = cases();
    for code in DiffCode::ALL {
        assert!(
            cases.iter().any(|c| c.starts_with(code.as_str())),
            "tests/diff has no pair for {code}"
        );
    }
    for case in &cases {
        let dir = common::repo().join("tests/diff").join(case);
        let (old, new) = (build(&dir.join("old")), build(&dir.join("new")));
        let report = diff(&old, &new, true);
        let text = render::text(&report);
        if let Some(code) = case.strip_prefix("none_") {
            assert!(report.findings.is_empty(), "{code}: {text}");
            assert_eq!(old.registry_version, new.registry_version, "{code}");
            assert!(report.prompt_cache.iter().all(|i| !i.changed), "{text}");
        } else {
            let code = &case[..5];
            assert!(
                report.findings.iter().any(|f| f.code.as_str() == code),
                "{case}: expected {code} in\n{text}"
            );
            // Every finding names the op and says what changed.
            assert!(report
                .findings
                .iter()
                .all(|f| !f.op.is_empty() && !f.message.is_empty()));
        }
        // Help pages built only where a change can reach give the full comparison's answer.
        assert_eq!(
            toolreg::diff::cache::help_impact(&old, &new, true),
            toolreg::diff::cache::help_impact(&old, &new, false),
            "{case}"
        );
        insta::assert_snapshot!(format!("diff_{case}"), text);
    }
}

#[test]
fn security_findings_gate_and_come_first_and_an_honest_edit_does_not() {
    let pair = |case: &str| {
        let dir = common::repo().join("tests/diff").join(case);
        diff(&build(&dir.join("old")), &build(&dir.join("new")), false)
    };
    for case in ["TD050_poisoned_text", "TD051_widened", "TD052_lookalike"] {
        let report = pair(case);
        // `--fail-on security` exits 1 exactly when this holds.
        assert!(report.has(Level::Security), "{case}");
        let md = render::markdown(&report);
        assert!(
            md.contains("**Security-relevant changes: review them first.**"),
            "{md}"
        );
        let first_row = md
            .lines()
            .find(|l| l.starts_with("| ") && !l.starts_with("| level") && !l.starts_with("| ---"))
            .unwrap();
        assert!(first_row.starts_with("| security | TD05"), "{case}: {md}");
        // Catalog text never opens an HTML tag in the pull-request comment.
        assert!(!md.contains("<IMPORTANT>"), "{md}");
    }
    // Rewording a description, adding an op with an unremarkable name, or a constrained
    // argument on a read op is not a security finding.
    for case in ["TD020_text_changed", "TD030_op_added", "TD032_enum_widened"] {
        let report = pair(case);
        assert!(
            !report.has(Level::Security),
            "{case}: {}",
            render::text(&report)
        );
    }
}

#[test]
fn formats_and_exit_codes() {
    let dir = common::repo().join("tests/diff/TD004_required_added");
    let tmp = tempfile::tempdir().unwrap();
    for side in ["old", "new"] {
        let o = toolreg(
            tmp.path(),
            &[
                "build",
                "-d",
                dir.join(side).to_str().unwrap(),
                "-o",
                side,
                "--emit",
                "registry",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let run = |args: &[&str]| toolreg(tmp.path(), &[&["diff", "old", "new"], args].concat());
    let plain = run(&[]);
    assert_eq!(
        plain.status.code(),
        Some(0),
        "--fail-on never is the default"
    );
    assert_eq!(run(&["--fail-on", "breaking"]).status.code(), Some(1));
    assert_eq!(run(&["--fail-on", "warning"]).status.code(), Some(1));

    let json: serde_json::Value =
        serde_json::from_slice(&run(&["--format", "json"]).stdout).unwrap();
    assert_eq!(json["summary"]["breaking"], 1);
    let f = &json["findings"][0];
    assert_eq!(f["code"], "TD004");
    assert_eq!(f["level"], "breaking");
    assert_eq!(f["op"], "todo.task.update");
    assert_eq!(f["pointer"], "/parameters_schema/properties/reason");
    assert!(json["prompt_cache"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["surface"] == "direct" && i["changed"] == true));

    let md = String::from_utf8(run(&["--format", "markdown"]).stdout).unwrap();
    assert!(
        md.contains("| breaking | TD004 | `todo.task.update` |"),
        "{md}"
    );
    assert!(md.contains("**Prompt cache**"));

    // A description edit only warns: --fail-on breaking lets it through.
    let dir = common::repo().join("tests/diff/TD020_text_changed");
    let tmp2 = tempfile::tempdir().unwrap();
    for side in ["old", "new"] {
        let d = dir.join(side);
        assert!(toolreg(
            tmp2.path(),
            &[
                "build",
                "-d",
                d.to_str().unwrap(),
                "-o",
                side,
                "--emit",
                "registry"
            ]
        )
        .status
        .success());
    }
    let o = toolreg(
        tmp2.path(),
        &["diff", "old", "new", "--fail-on", "breaking"],
    );
    assert_eq!(o.status.code(), Some(0));
    let o = toolreg(tmp2.path(), &["diff", "old", "nowhere"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nowhere"), "{}", stderr(&o));
}

#[test]
fn base_reads_the_old_registry_from_git_history() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let case = common::repo().join("tests/diff/TD001_op_removed");
    git(repo, &["init", "-q"]);
    common::copy_dir(&case.join("old"), &repo.join("definitions"));
    assert!(toolreg(repo, &["build", "--emit", "registry,surfaces"])
        .status
        .success());
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "one"]);
    std::fs::remove_dir_all(repo.join("definitions")).unwrap();
    common::copy_dir(&case.join("new"), &repo.join("definitions"));
    assert!(toolreg(repo, &["build", "--emit", "registry,surfaces"])
        .status
        .success());
    git(repo, &["commit", "-qam", "two"]);

    // Default new side: generated/; the old one from HEAD~1, with no checkout.
    let o = toolreg(repo, &["diff", "--base", "HEAD~1", "--fail-on", "breaking"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("breaking[TD001] todo.task.delete"), "{out}");
    // From a subfolder, naming the output folder.
    let o = toolreg(
        &repo.join("definitions"),
        &["diff", "--base", "HEAD", "../generated"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no changes"));
    let o = toolreg(repo, &["diff", "--base", "no-such-ref"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-ref"), "{}", stderr(&o));
    // It says which commit it compared with.
    let o = toolreg(repo, &["diff", "--base", "HEAD~1"]);
    assert!(
        stderr(&o).contains("at `HEAD~1` (commit "),
        "{}",
        stderr(&o)
    );

    // Only a revision (issue 24): option-looking values never reach git as options, and an
    // empty one is an error, not the index.
    let written = repo.join("git-wrote-this");
    let injected = format!("--output={}", written.display());
    for base in [injected.as_str(), "", "  ", "-p", "HEAD --output=x"] {
        let o = toolreg(repo, &["diff", &format!("--base={base}")]);
        assert_eq!(o.status.code(), Some(2), "{base:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--base"), "{base:?}: {}", stderr(&o));
    }
    assert!(!written.exists(), "git wrote a file named by --base");
}

/// A catalog of the given tool names; the overlay's one rule makes each op depend on its own
/// name only, so adding a tool never renames another (inference, being catalog-wide, may).
fn write_catalog(dir: &Path, names: &[String]) {
    std::fs::create_dir_all(dir).unwrap();
    let tools: Vec<serde_json::Value> = names
        .iter()
        .map(|n| {
            serde_json::json!({"name": n, "description": format!("Does {n}."),
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}})
        })
        .collect();
    std::fs::write(
        dir.join("tools.mcp.json"),
        serde_json::to_string(&serde_json::json!({ "tools": tools })).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("toolreg.toml"),
        "[groups.g]\nsummary = \"G.\"\n\n[[rules]]\npattern = \"{action}_{entity}\"\nop = \"g.{entity}.{action}\"\n",
    )
    .unwrap();
}

fn names() -> impl Strategy<Value = Vec<String>> {
    let verbs = ["get", "list", "create", "update", "delete", "search"];
    let nouns = ["task", "goal", "note", "file", "user", "team", "event"];
    prop::collection::btree_set((0..verbs.len(), 0..nouns.len()), 1..12).prop_map(move |s| {
        s.into_iter()
            .map(|(v, n)| format!("{}_{}", verbs[v], nouns[n]))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn diff_of_a_registry_with_itself_is_empty_and_additions_are_exact(a in names(), b in names()) {
        let tmp = tempfile::tempdir().unwrap();
        write_catalog(&tmp.path().join("a"), &a);
        write_catalog(&tmp.path().join("b"), &b);
        let (ra, rb) = (build(&tmp.path().join("a")), build(&tmp.path().join("b")));
        let same = diff(&ra, &ra, true);
        prop_assert!(same.findings.is_empty());
        prop_assert!(same.prompt_cache.iter().all(|i| !i.changed));

        let report = diff(&ra, &rb, false);
        let added: std::collections::BTreeSet<String> = report.findings.iter()
            .filter(|f| f.code == DiffCode::OpAdded).map(|f| f.op.clone()).collect();
        let expected: std::collections::BTreeSet<String> = rb.ops.keys()
            .filter(|op| !ra.ops.contains_key(*op)).cloned().collect();
        prop_assert_eq!(added, expected);
        let removed = report.findings.iter().filter(|f| f.code == DiffCode::OpRemoved).count();
        prop_assert_eq!(removed, ra.ops.keys().filter(|op| !rb.ops.contains_key(*op)).count());
        prop_assert_eq!(report.has(Level::Breaking), removed > 0);
    }
}
