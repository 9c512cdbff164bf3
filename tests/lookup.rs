//! Issue 33: `lookup.json` lets a cold `toolreg help PATH` and `toolreg exec OP` read one page or
//! one op. Their answers are byte for byte the answers of the whole registry (every page of the
//! example catalog in both formats, every op by op and tool name), and an index that does not
//! match its files (another build's, or files edited after it) is never trusted.

mod common;

use serde_json::Value;
use std::path::Path;

/// `toolreg ARGS`, stdout as text (trace ids and latencies blanked: they differ per run).
fn run(args: &[&str]) -> (bool, String) {
    let o = common::toolreg(&common::repo(), args);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let trace = regex::Regex::new(r#""trace_id": "tr_[0-9a-f]+""#).unwrap();
    let latency = regex::Regex::new(r#""latency_ms": [0-9]+"#).unwrap();
    let text = trace.replace_all(&text, "");
    (
        o.status.success(),
        latency.replace_all(&text, "").into_owned(),
    )
}

/// A copy of the example catalog's output folder, with or without its index.
fn folder(with_index: bool) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["registry.json", "help.json", "lookup.json"] {
        if name != "lookup.json" || with_index {
            std::fs::copy(
                common::repo().join("generated").join(name),
                tmp.path().join(name),
            )
            .unwrap();
        }
    }
    tmp
}

fn registry(dir: &Path) -> String {
    dir.join("registry.json").to_str().unwrap().to_string()
}

#[test]
fn one_page_or_op_read_alone_answers_as_the_whole_registry() {
    let (fast, whole) = (folder(true), folder(false));
    let help: Value =
        serde_json::from_slice(&std::fs::read(common::repo().join("generated/help.json")).unwrap())
            .unwrap();
    let mut compared = 0;
    for path in help["pages"].as_object().unwrap().keys() {
        for extra in [&[][..], &["--format", "full"][..], &["--no-examples"][..]] {
            let ask = |dir: &Path| {
                let mut args = vec!["help", path.as_str(), "--registry"];
                let reg = registry(dir);
                args.push(&reg);
                args.extend_from_slice(extra);
                run(&args)
            };
            assert_eq!(ask(fast.path()), ask(whole.path()), "help {path} {extra:?}");
            compared += 1;
        }
    }
    let reg = toolreg::Registry::from_path(common::repo().join("generated/registry.json")).unwrap();
    for r in reg.ops.values() {
        for name in [&r.op, &r.tool_name, &r.provider_name] {
            for args in ["{}", r#"{"title": 7}"#, "not json"] {
                let ask = |dir: &Path| {
                    let reg = registry(dir);
                    run(&["exec", name, "--args", args, "--registry", &reg])
                };
                let (ok, text) = ask(fast.path());
                assert_eq!((ok, text.clone()), ask(whole.path()), "exec {name} {args}");
                assert!(text.contains(&format!("\"op\": \"{}\"", r.op)), "{text}");
                compared += 1;
            }
        }
    }
    assert!(compared > 800, "{compared}");
}

#[test]
fn an_index_that_does_not_match_its_files_is_not_trusted() {
    let whole = folder(false);
    let expected = run(&[
        "help",
        "onto.task.list",
        "--registry",
        &registry(whole.path()),
    ]);
    let expected_exec = run(&[
        "exec",
        "onto.task.list",
        "--registry",
        &registry(whole.path()),
    ]);
    // Another build's index beside these files (the fixture catalog's): sizes differ.
    let other = folder(false);
    std::fs::copy(
        common::repo().join("tests/fixture/generated/lookup.json"),
        other.path().join("lookup.json"),
    )
    .unwrap();
    // The right index, but both files edited after it, keeping their sizes: one space less
    // near the start and one more at the end, so every page and op after it moved a byte.
    let edited = folder(true);
    for name in ["help.json", "registry.json"] {
        let file = edited.path().join(name);
        let text = std::fs::read_to_string(&file).unwrap();
        let mut shifted = text.replacen("\n  ", "\n ", 1);
        shifted.insert(shifted.len() - 1, ' ');
        assert_eq!(shifted.len(), text.len());
        assert_ne!(shifted, text);
        std::fs::write(&file, shifted).unwrap();
    }
    for dir in [other.path(), edited.path()] {
        let got = run(&["help", "onto.task.list", "--registry", &registry(dir)]);
        assert_eq!(got, expected, "{}", dir.display());
        let got = run(&["exec", "onto.task.list", "--registry", &registry(dir)]);
        assert_eq!(got, expected_exec, "{}", dir.display());
    }
}

#[test]
fn help_reads_no_registry_and_exec_no_help_pages() {
    // Each file blanked (same size: the index still matches): the command that does not need
    // it still answers, which it could not if it read it.
    let blank = |dir: &Path, name: &str| {
        let file = dir.join(name);
        let len = std::fs::metadata(&file).unwrap().len() as usize;
        std::fs::write(&file, " ".repeat(len)).unwrap();
    };
    let dir = folder(true);
    blank(dir.path(), "registry.json");
    let (ok, page) = run(&[
        "help",
        "onto.task.list",
        "--registry",
        &registry(dir.path()),
    ]);
    assert!(
        ok && page.contains("\"path\": \"onto.task.list\""),
        "{page}"
    );
    // A misspelt path needs the registry's resolution: it falls back, and the blank file shows.
    let (ok, _) = run(&[
        "help",
        "onto.tasks.list",
        "--registry",
        &registry(dir.path()),
    ]);
    assert!(!ok);

    let dir = folder(true);
    blank(dir.path(), "help.json");
    let (ok, env) = run(&[
        "exec",
        "list_onto_tasks",
        "--args",
        r#"{"project_id": "p1"}"#,
        "--registry",
        &registry(dir.path()),
    ]);
    assert!(ok && env.contains("\"op\": \"onto.task.list\""), "{env}");

    // Search and eval read no help pages (issue 33): a cold search of a large registry parsed
    // help.json, larger than the registry, for nothing.
    let (ok, found) = run(&[
        "search",
        "list the tasks of a project",
        "--registry",
        &registry(dir.path()),
        "--format",
        "json",
    ]);
    assert!(
        ok && found.contains("\"op\": \"onto.task.list\""),
        "{found}"
    );
}

/// `Gateway::from_dir` (and `toolreg serve`, which loads the same way) reads help pages from
/// `help.json` when first asked for, where `lookup.json` says they lie: every page of the example
/// in both formats, every op by its tool name, a misspelling and an unknown path answer exactly
/// as with `help.json` parsed whole. A page damaged in place (same size, so the index still
/// matches the file) is never served: it answers as an unknown path.
#[test]
fn deferred_help_pages_answer_as_parsed_ones_and_fail_closed() {
    use toolreg::help::{Format, HelpRequest};
    let dir = folder(true);
    let deferred = toolreg::runtime::Gateway::from_dir(dir.path()).unwrap();
    let whole = toolreg::runtime::Gateway::from_slices(
        &std::fs::read(dir.path().join("registry.json")).unwrap(),
        &std::fs::read(dir.path().join("help.json")).unwrap(),
    )
    .unwrap();
    let help: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("help.json")).unwrap()).unwrap();
    let mut asked: Vec<String> = help["pages"].as_object().unwrap().keys().cloned().collect();
    asked.extend(whole.registry().ops.values().map(|r| r.tool_name.clone()));
    asked.extend([
        "onto.tasks.list".into(),
        "no.such.thing".into(),
        String::new(),
    ]);
    for path in &asked {
        for format in [Format::Short, Format::Full] {
            let req = HelpRequest {
                path: path.clone(),
                format,
                ..HelpRequest::default()
            };
            assert_eq!(deferred.help(&req), whole.help(&req), "{path} {format:?}");
        }
    }

    // Damage one op's short page in place: same length, so lookup.json still matches.
    let text = std::fs::read_to_string(dir.path().join("help.json")).unwrap();
    let version = whole.registry().registry_version.clone();
    let op = "onto.task.list";
    let lookup: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("lookup.json")).unwrap()).unwrap();
    let at = lookup["pages"][op][0].as_u64().unwrap() as usize;
    let len = lookup["pages"][op][1].as_u64().unwrap() as usize;
    let page = &text[at..at + len];
    let forged = page.replace(&version, &"b3:0000000000000000"[..version.len()]);
    assert_ne!(page, forged);
    let damaged = format!("{}{}{}", &text[..at], forged, &text[at + len..]);
    std::fs::write(dir.path().join("help.json"), damaged).unwrap();
    let gw = toolreg::runtime::Gateway::from_dir(dir.path()).unwrap();
    let answer = gw.help(&HelpRequest::path(op));
    assert_eq!(answer["error"]["code"], "UNKNOWN_PATH", "{answer}");
    // Other pages still read.
    let other = HelpRequest::path("onto.project.list");
    assert_eq!(gw.help(&other), whole.help(&other));
}
