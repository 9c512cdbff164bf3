//! The code and docs emitters: every docs link resolves, `mdbook build` publishes the site,
//! templates can be overridden (and a broken one is a located diagnostic), `--strict` turns
//! typify fallbacks into failures, and snapshots of each emitter on every catalog.

mod common;

use common::{stderr, toolreg};
use std::path::{Path, PathBuf};
use toolreg::builder::generate;
use toolreg::emit::Emitter;

const CATALOGS: &[(&str, &str, &str)] = &[
    ("buildos", "definitions", "generated"),
    (
        "universal_agent",
        "examples/universal-agent/definitions",
        "examples/universal-agent/generated",
    ),
    (
        "fixture",
        "tests/fixture/definitions",
        "tests/fixture/generated",
    ),
];

fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// `[text](target)` targets that are not external or anchors.
fn internal_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if !target.starts_with("http") && !target.starts_with('#') && !target.contains(' ') {
            out.push(target.split('#').next().unwrap_or(target).to_string());
        }
    }
    out
}

#[test]
fn every_internal_docs_link_resolves() {
    for (label, _, out) in CATALOGS {
        let src = common::repo().join(out).join("docs/src");
        let files = markdown_files(&src);
        assert!(files.len() > 10, "{label}: only {} pages", files.len());
        let mut checked = 0;
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            for link in internal_links(&text) {
                let target = f.parent().unwrap().join(&link);
                assert!(
                    target.is_file(),
                    "{label}: {} links to {link}, which does not exist",
                    f.display()
                );
                checked += 1;
            }
        }
        // Every page is reachable from SUMMARY.md (mdBook builds only what SUMMARY lists).
        let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
        let listed: Vec<String> = internal_links(&summary);
        for f in &files {
            let rel = f
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            assert!(
                rel == "SUMMARY.md" || listed.contains(&rel),
                "{label}: {rel} is not in SUMMARY.md"
            );
        }
        assert!(checked > 50, "{label}: only {checked} links checked");
    }
}

fn mdbook() -> PathBuf {
    let local = common::repo().join("target/ci-tools/bin/mdbook");
    assert!(
        local.exists(),
        "mdBook is not installed: scripts/test installs it into target/ci-tools"
    );
    local
}

#[test]
fn mdbook_builds_the_generated_docs() {
    for (label, _, out) in CATALOGS {
        let dest = tempfile::tempdir().unwrap();
        let o = std::process::Command::new(mdbook())
            .arg("build")
            .arg(common::repo().join(out).join("docs"))
            .arg("-d")
            .arg(dest.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{label}: mdbook failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(dest.path().join("index.html").is_file());
        let page = if *label == "buildos" {
            "onto/task/onto.task.update.html"
        } else {
            "print.html"
        };
        assert!(dest.path().join(page).is_file(), "{label}: {page} missing");
    }
}

#[test]
fn templates_can_be_overridden_and_broken_ones_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let defs = common::repo().join("tests/fixture/definitions");
    std::fs::write(
        dir.path().join("op.md.hbs"),
        "# {{op}}\n\nCustom page: {{summary}}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let (d, o, t) = (
        defs.to_str().unwrap(),
        out.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    );
    let build_docs = || {
        toolreg(
            dir.path(),
            &[
                "build",
                "-d",
                d,
                "-o",
                o,
                "--emit",
                "docs",
                "--templates",
                t,
            ],
        )
    };
    let r = build_docs();
    assert!(r.status.success(), "{}", stderr(&r));
    let page = std::fs::read_to_string(out.join("docs/src/fx/widget/fx.widget.create.md")).unwrap();
    assert!(
        page.starts_with("# fx.widget.create\n\nCustom page: Create a widget."),
        "{page}"
    );
    // Other templates are still the built-in ones.
    assert!(std::fs::read_to_string(out.join("docs/src/SUMMARY.md"))
        .unwrap()
        .contains("# Summary"));
    // A field the page does not have is an error in strict mode, and nothing is written.
    std::fs::write(
        dir.path().join("op.md.hbs"),
        "# {{op}}\n{{no_such_field}}\n",
    )
    .unwrap();
    let before = common::snapshot_dir(&out);
    let r = build_docs();
    assert_eq!(r.status.code(), Some(2));
    assert!(
        stderr(&r).contains("[TR071]") && stderr(&r).contains("no_such_field"),
        "{}",
        stderr(&r)
    );
    assert_eq!(common::snapshot_dir(&out), before);
    // A template that does not parse points at its line and column.
    std::fs::write(
        dir.path().join("op.md.hbs"),
        "# {{op}}\n\n{{#if summary}}\nunclosed\n",
    )
    .unwrap();
    let r = build_docs();
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("op.md.hbs:"), "{}", stderr(&r));
}

#[test]
fn strict_turns_typify_fallbacks_into_failures() {
    let dir = tempfile::tempdir().unwrap();
    let defs = common::repo().join("tests/fixture/definitions");
    let (d, o) = (defs.to_str().unwrap(), dir.path().join("out"));
    let r = toolreg(
        dir.path(),
        &[
            "build",
            "-d",
            d,
            "-o",
            o.to_str().unwrap(),
            "--emit",
            "rust",
        ],
    );
    assert!(r.status.success());
    assert!(
        stderr(&r).contains("[TR070]") && stderr(&r).contains("fx.widget.tag"),
        "{}",
        stderr(&r)
    );
    let r = toolreg(
        dir.path(),
        &[
            "build",
            "-d",
            d,
            "-o",
            dir.path().join("strict").to_str().unwrap(),
            "--emit",
            "rust",
            "--strict",
        ],
    );
    assert_eq!(r.status.code(), Some(2));
    assert!(!dir.path().join("strict").exists());
}

#[test]
fn snapshots_of_each_emitter() {
    for (label, defs, _) in CATALOGS {
        let g = generate(
            &common::repo().join(defs),
            &[
                Emitter::Rust,
                Emitter::Ts,
                Emitter::Docs,
                Emitter::Zod,
                Emitter::Python,
                Emitter::Codemode,
            ],
        );
        let files = g
            .files
            .unwrap_or_else(|| panic!("{}", g.compiled.diagnostics.render_text()));
        insta::assert_snapshot!(format!("{label}__rust"), files["rust/registry.rs"]);
        insta::assert_snapshot!(format!("{label}__ts"), files["ts/registry.ts"]);
        insta::assert_snapshot!(format!("{label}__zod"), files["ts/client.ts"]);
        // Every op's argument type has one name in Rust, TypeScript and Python.
        let python = &files["python/registry.py"];
        let ops: Vec<&str> = python
            .lines()
            .filter_map(|l| l.strip_prefix("    \""))
            .filter_map(|l| l.split_once("\": "))
            .filter(|(_, model)| model.ends_with("Args,"))
            .map(|(_, model)| model.trim_end_matches(','))
            .collect();
        assert!(!ops.is_empty(), "{label}: ARG_MODELS lists the ops");
        for name in ops {
            assert!(
                python.contains(&format!("class {name}(BaseModel):")),
                "{label}: {name} in Python"
            );
            let ts = &files["ts/registry.ts"];
            assert!(
                ts.contains(&format!("export interface {name} "))
                    || ts.contains(&format!("export type {name} =")),
                "{label}: {name} in TypeScript"
            );
            assert!(
                files["ts/client.ts"].contains(&format!("export const {name}Schema")),
                "{label}: {name}Schema in zod"
            );
            let rust = &files["rust/registry.rs"];
            // (Unless typify could not type it: then Rust has no struct, and says so, TR070.)
            let untyped = format!("{}(::serde_json::Value)", name.trim_end_matches("Args"));
            assert!(
                rust.contains(&untyped)
                    || rust.contains(&format!("pub struct {name} "))
                    || rust.contains(&format!("pub struct {name}("))
                    || rust.contains(&format!("pub type {name} ="))
                    || rust.contains(&format!("pub enum {name} ")),
                "{label}: {name} in Rust"
            );
        }
        insta::assert_snapshot!(format!("{label}__python"), files["python/registry.py"]);
        // The code-mode tree: its root index, one group's index and one op's module.
        let op_module = files
            .keys()
            .find(|k| {
                k.starts_with("codemode/")
                    && k.matches('/').count() == 2
                    && !k.ends_with("index.ts")
            })
            .unwrap();
        let group_index = op_module.rsplit_once('/').unwrap().0.to_string() + "/index.ts";
        for (kind, file) in [
            ("root", "codemode/index.ts"),
            ("group", group_index.as_str()),
            ("op", op_module.as_str()),
            ("shim", "codemode/_gateway.ts"),
        ] {
            insta::assert_snapshot!(format!("{label}__codemode_{kind}"), files[file]);
        }
        for page in [
            "docs/book.toml",
            "docs/src/SUMMARY.md",
            "docs/src/README.md",
        ] {
            insta::assert_snapshot!(format!("{label}__{}", page.replace('/', "__")), files[page]);
        }
        let group = files
            .keys()
            .find(|k| k.ends_with("/README.md") && k.matches('/').count() == 3)
            .unwrap();
        let entity = files
            .keys()
            .find(|k| k.ends_with("/README.md") && k.matches('/').count() == 4)
            .unwrap();
        let op = files
            .keys()
            .find(|k| k.ends_with(".md") && !k.ends_with("README.md") && !k.ends_with("SUMMARY.md"))
            .unwrap();
        for (kind, page) in [("group", group), ("entity", entity), ("op", op)] {
            insta::assert_snapshot!(format!("{label}__docs_{kind}"), files[page]);
        }
    }
}
