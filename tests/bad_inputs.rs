//! The bad-input corpus: every case gives its documented diagnostics at the right place, the
//! right exit codes, never a panic, and leaves an existing output folder untouched on error.
//! Cases live in `tests/bad/<case>/`; three are generated here (a 5 MB description, non-UTF-8
//! bytes, a missing folder) rather than committed.

mod common;

use common::{stderr, toolreg};
use std::path::Path;

/// case -> (lint exit code, codes that must appear).
const CASES: &[(&str, i32, &[&str])] = &[
    // [access]: a kind that does not exist, an unknown profile, a glob and a name matching no op.
    ("access", 1, &["TR020", "TR042", "TR043"]),
    // An ANSI escape, a newline forging a diagnostic line, a NUL: errors, printed escaped.
    ("control_chars", 1, &["TR028", "TR021"]),
    ("dead_alias", 1, &["TR017", "TR018", "TR020"]),
    // The same key twice in one object: serde_json keeps the last, silently; a warning each.
    ("duplicate_keys", 0, &["TR038"]),
    ("duplicate_names", 1, &["TR013"]),
    ("empty_file", 1, &["TR004"]),
    (
        "examples_profiles",
        1,
        &["TR040", "TR041", "TR042", "TR043"],
    ),
    ("file_shape", 1, &["TR006"]),
    // A catalog tool named `tool_search` (and `toolreg_search`): the gateway picks free names.
    ("gateway_name_taken", 0, &["TR065"]),
    // A schema asking for a 10^12-character string and 10^12 items: a bounded try, then TR041.
    ("huge_bounds", 0, &["TR041"]),
    // No overlay: every op inferred (notes), one collision (warning).
    ("inferred", 0, &["TR026", "TR027"]),
    // Tag characters and a zero-width space in names: errors, every diagnostic printing them
    // escaped (`\u{e0049}`), TR021 included.
    ("invisible_chars", 1, &["TR028", "TR021"]),
    ("malformed_json", 1, &["TR005"]),
    (
        "more_lints",
        1,
        &["TR010", "TR021", "TR022", "TR023", "TR025", "TR037"],
    ),
    ("names_dots_spaces", 0, &["TR015", "TR021", "TR024"]),
    ("no_json", 1, &["TR002"]),
    (
        "nonstandard_types",
        0,
        &[
            "TR030", "TR031", "TR032", "TR033", "TR034", "TR035", "TR036",
        ],
    ),
    // `parameters: null` / `true` and a `required` that is not a list: fixed, with a word each.
    ("odd_parameters", 0, &["TR035", "TR034"]),
    ("op_collision", 1, &["TR012"]),
    // A result schema that is no schema (left out, TR046), and one whose text is normalized
    // (`str`, TR030) and linted like arguments' (an instruction to the model, TR091).
    ("output_schema", 0, &["TR046", "TR030", "TR091"]),
    ("overlay_bad_value", 1, &["TR011"]),
    ("overlay_syntax", 1, &["TR011"]),
    // Published tool-poisoning attacks in the team's own file (errors stop the build; refused
    // per-op tuning is TR020), and in third-party snapshots (quarantined, the rest builds; one
    // server's text redirecting another's tool). Sources: tests/bad/poisoning/SOURCES.md.
    ("poisoning", 1, &["TR090", "TR091", "TR020"]),
    // The evasion corpus (issue 35, item 5): every rewrite flagged once folded.
    ("poisoning_evasion", 0, &["TR091"]),
    ("poisoning_third_party", 0, &["TR090", "TR091", "TR081"]),
    (
        "provider_lints",
        1,
        &[
            "TR041", "TR060", "TR061", "TR062", "TR063", "TR064", "TR066",
        ],
    ),
    // Third-party tools (an MCP snapshot, a `[sources] third_party` file) that cannot compile
    // are left out with a TR081 each; the team's own file builds.
    ("quarantine", 0, &["TR081", "TR037"]),
    // The same broken schema in the team's own file stops the build.
    ("quarantine_own", 1, &["TR037"]),
    // Draft-04/07 forms (boolean exclusiveMinimum, definitions, id, tuple items, dependencies).
    ("schema_dialects", 0, &["TR039"]),
    // [search] semantic_weight outside 0..1.
    ("search_weight", 1, &["TR020"]),
    // "Give `page_id` or `title`": a top-level oneOf, projected for providers.
    ("top_level_combinator", 0, &["TR066"]),
    ("unclassified", 1, &["TR014", "TR016"]),
    ("unknown_entity", 0, &["TR016"]),
    ("unknown_overlay_key", 1, &["TR019"]),
    // A profile name that would leave the output folder; duplicate gateway names; a stale
    // special case and an empty entity name.
    ("unsafe_names", 1, &["TR044", "TR020", "TR029"]),
    // [upstreams]: command and url both, a non-HTTP url, no snapshot file, an unsafe name.
    ("upstreams", 1, &["TR080"]),
    ("wrong_entry_shape", 1, &["TR007", "TR008"]),
];

/// A good, previously built output folder to prove failed builds leave it alone.
fn prebuilt_out(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("out");
    let o = toolreg(&common::repo(), &["build", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

fn run_case(cwd: &Path, case: &str, lint_exit: i32, codes: &[&str], scratch: &Path) {
    let lint = toolreg(cwd, &["lint", "--definitions", case]);
    let text = stderr(&lint);
    assert!(
        !text.contains("panicked") && !text.contains("internal error"),
        "{case}: {text}"
    );
    assert_eq!(
        lint.status.code(),
        Some(lint_exit),
        "{case} lint exit:\n{text}"
    );
    for code in codes {
        assert!(
            text.contains(&format!("[{code}]")),
            "{case}: expected {code} in\n{text}"
        );
    }
    insta::assert_snapshot!(format!("lint_{case}"), text);

    // The same findings as JSON lines, each with a code, severity and location.
    let json = toolreg(cwd, &["lint", "--definitions", case, "--format", "json"]);
    assert_eq!(json.status.code(), Some(lint_exit));
    let lines: Vec<serde_json::Value> = stderr(&json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{case}: not JSON: {l}: {e}")))
        .collect();
    // The brief text folds notes and repeated warnings; `--verbose` lists each one.
    let verbose = stderr(&toolreg(cwd, &["lint", "--definitions", case, "--verbose"]));
    let headlines = verbose
        .lines()
        .filter(|l| l.starts_with("error[") || l.starts_with("warning[") || l.starts_with("note["))
        .count();
    assert_eq!(lines.len(), headlines, "{case}: JSON and text disagree");
    for code in codes {
        assert!(
            lines.iter().any(|l| l["code"] == *code),
            "{case}: {code} missing from JSON"
        );
    }
    assert!(lines
        .iter()
        .all(|l| l["location"]["file"].is_string() && l["help"].is_string()));

    // Build: errors exit 2 and leave the previous output exactly as it was.
    let out = prebuilt_out(scratch);
    let before = common::snapshot_dir(&out);
    let build = toolreg(
        cwd,
        &[
            "build",
            "--definitions",
            case,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let btext = stderr(&build);
    assert!(!btext.contains("panicked"), "{case}: {btext}");
    if lint_exit == 0 {
        assert_eq!(build.status.code(), Some(0), "{case} build:\n{btext}");
    } else {
        assert_eq!(build.status.code(), Some(2), "{case} build:\n{btext}");
        assert_eq!(
            common::snapshot_dir(&out),
            before,
            "{case}: output folder changed"
        );
        assert!(btext.contains("was not changed"), "{case}: {btext}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn committed_cases() {
    let bad = common::repo().join("tests/bad");
    let mut on_disk: Vec<String> = std::fs::read_dir(&bad)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    assert_eq!(
        on_disk, listed,
        "every folder in tests/bad has an entry in CASES"
    );
    let scratch = tempfile::tempdir().unwrap();
    for (case, exit, codes) in CASES {
        run_case(&bad, case, *exit, codes, scratch.path());
    }
}

fn overlay() -> &'static str {
    "[registry]\nname = \"gen\"\n[groups.shop]\nsummary = \"Shop.\"\n[entities]\nwidget = \"widgets\"\n[[rules]]\npattern = \"list_{entities}\"\nop = \"shop.{entity}.list\"\nkind = \"read\"\n"
}

#[test]
fn generated_cases() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();

    // A 5 MB description (more than any model's context): refused with its size (TR045), not a
    // crash; the text is cut before anything else reads it.
    let huge = root.join("huge_description");
    std::fs::create_dir(&huge).unwrap();
    std::fs::write(huge.join("toolreg.toml"), overlay()).unwrap();
    let desc = "List widgets. ".repeat(5 * 1024 * 1024 / 14);
    let tools = serde_json::json!([{"type": "function", "function": {"name": "list_widgets", "description": desc, "parameters": {"type": "object", "properties": {}}}}]);
    std::fs::write(huge.join("tools.json"), serde_json::to_vec(&tools).unwrap()).unwrap();
    run_case(root, "huge_description", 1, &["TR045"], root);

    // Non-UTF-8 bytes on line 3.
    let bytes = root.join("non_utf8");
    std::fs::create_dir(&bytes).unwrap();
    std::fs::write(bytes.join("toolreg.toml"), overlay()).unwrap();
    let mut content = b"[\n  {\"name\": \"list_widgets\",\n   \"description\": \"caf".to_vec();
    content.extend_from_slice(&[0xE9, b'"']);
    content.extend_from_slice(b", \"inputSchema\": {\"type\": \"object\"}}\n]\n");
    std::fs::write(bytes.join("latin1.json"), content).unwrap();
    run_case(root, "non_utf8", 1, &["TR003"], root);

    // An overlay that cannot be read (here: a folder named toolreg.toml).
    let unreadable = root.join("unreadable_overlay");
    std::fs::create_dir_all(unreadable.join("toolreg.toml")).unwrap();
    std::fs::write(unreadable.join("tools.json"), "[]").unwrap();
    run_case(root, "unreadable_overlay", 1, &["TR001"], root);

    // An output path that is a file: nothing can be written there.
    let file_out = root.join("not_a_folder");
    std::fs::write(&file_out, "a file").unwrap();
    let defs = common::repo().join("tests/fixture/definitions");
    let build = toolreg(
        root,
        &[
            "build",
            "--definitions",
            defs.to_str().unwrap(),
            "--out",
            "not_a_folder",
            "--emit",
            "registry",
        ],
    );
    assert_eq!(build.status.code(), Some(2));
    assert!(stderr(&build).contains("[TR050]"), "{}", stderr(&build));
    assert_eq!(std::fs::read_to_string(&file_out).unwrap(), "a file");

    // A folder that does not exist: usage error (2) for lint too, nothing created.
    let lint = toolreg(root, &["lint", "--definitions", "nowhere"]);
    assert_eq!(lint.status.code(), Some(2));
    assert!(stderr(&lint).contains("[TR002]"));
    let build = toolreg(root, &["build", "--definitions", "nowhere", "--out", "gen"]);
    assert_eq!(build.status.code(), Some(2));
    assert!(!root.join("gen").exists());
}

/// Linked files and folders are part of the catalog; a loop or a dangling link is a located
/// error, never a silent drop.
#[cfg(unix)]
#[test]
fn symbolic_links_are_followed_or_reported() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("more")).unwrap();
    let tool = |name: &str| {
        format!(
            r#"[{{"name": "{name}", "description": "D.", "inputSchema": {{"type": "object", "properties": {{}}, "additionalProperties": false}}}}]"#
        )
    };
    std::fs::write(elsewhere.join("linked.json"), tool("list_notes")).unwrap();
    std::fs::write(elsewhere.join("more/inner.json"), tool("create_note")).unwrap();
    let defs = tmp.path().join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(defs.join("own.json"), tool("delete_note")).unwrap();
    symlink(elsewhere.join("linked.json"), defs.join("linked.json")).unwrap();
    symlink(elsewhere.join("more"), defs.join("more")).unwrap();
    let o = toolreg(
        tmp.path(),
        &["build", "-d", "defs", "-o", "out", "--emit", "registry"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let reg = toolreg::Registry::from_path(tmp.path().join("out/registry.json")).unwrap();
    let tools: Vec<&str> = reg.ops.values().map(|r| r.tool_name.as_str()).collect();
    for t in ["list_notes", "create_note", "delete_note"] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }

    symlink(&defs, defs.join("more/loop")).unwrap();
    symlink(tmp.path().join("nowhere.json"), defs.join("dangling.json")).unwrap();
    let o = toolreg(tmp.path(), &["lint", "-d", "defs"]);
    let text = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("loops back to"), "{text}");
    assert!(text.contains("points to nothing"), "{text}");
}

/// `--out p` around `--definitions p/defs` (with a manifest already in `p`, which used to make
/// build delete the catalog) and the reverse are refused before anything is written.
#[test]
fn an_output_folder_nesting_with_the_definitions_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("p");
    common::copy_dir(
        &common::repo().join("tests/fixture/definitions"),
        &p.join("defs"),
    );
    std::fs::write(p.join("toolreg.manifest.json"), r#"{"files":{}}"#).unwrap();
    let before = common::snapshot_dir(&p);
    for (defs, out) in [
        ("p/defs", "p"),
        ("p/defs", "p/defs/gen"),
        ("p/defs", "p/defs"),
    ] {
        for cmd in ["build", "check"] {
            let o = toolreg(tmp.path(), &[cmd, "-d", defs, "-o", out]);
            let text = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd} {defs} {out}: {text}");
            assert!(text.contains("[TR052]") && text.contains(out), "{text}");
        }
    }
    assert_eq!(
        common::snapshot_dir(&p),
        before,
        "nothing was written or removed"
    );
}

/// Tool names of 240+ characters (the file system's limit is 255 bytes) build: every file name
/// is short (a readable prefix and a hash), distinct names stay distinct, and links agree.
#[test]
fn very_long_names_get_short_hashed_file_names() {
    let tmp = tempfile::tempdir().unwrap();
    let defs = tmp.path().join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    let long = |tail: &str| format!("list_{}_{tail}", "very_long_name".repeat(18));
    let tools: Vec<serde_json::Value> = ["widgets", "gadgets"]
        .iter()
        .map(|t| serde_json::json!({"name": long(t), "description": "Lists things.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}))
        .collect();
    std::fs::write(
        defs.join("tools.json"),
        serde_json::to_string(&tools).unwrap(),
    )
    .unwrap();
    let o = toolreg(tmp.path(), &["build", "-d", "defs", "-o", "out"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = common::snapshot_dir(&tmp.path().join("out"));
    let longest = files
        .iter()
        .flat_map(|(rel, _)| rel.split('/').map(str::len).collect::<Vec<_>>())
        .max()
        .unwrap();
    assert!(longest <= 100, "a file name of {longest} bytes");
    let op_pages: Vec<&String> = files
        .iter()
        .map(|(rel, _)| rel)
        .filter(|rel| {
            rel.starts_with("docs/src/")
                && !rel.ends_with("README.md")
                && !rel.ends_with("SUMMARY.md")
        })
        .collect();
    assert_eq!(op_pages.len(), 2, "{op_pages:?}");
    let o = toolreg(tmp.path(), &["check", "-d", "defs", "-o", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// One tool whose schema has 100,000 properties (the issue's "something is quadratic" row): the
/// default build succeeds, the Rust output falls back to untyped arguments for it with TR070
/// naming the size, and nothing built from it grows with the schema where a model reads it:
/// usage lines and error envelopes stay short. (Time is the benchmark's business:
/// `cargo bench --bench build_scale -- --hostile`.)
#[test]
fn a_schema_with_100000_properties_builds_with_bounded_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let defs = dir.path().join("wide");
    std::fs::create_dir(&defs).unwrap();
    let mut props = serde_json::Map::new();
    for i in 0..100_000 {
        props.insert(format!("p{i}"), serde_json::json!({"type": "string"}));
    }
    props.insert(
        "mode".into(),
        serde_json::json!({"enum": (0..1000).map(|i| format!("m{i}")).collect::<Vec<_>>()}),
    );
    let tools = serde_json::json!([{"type": "function", "function": {"name": "list_things",
        "description": "List things.", "parameters": {"type": "object", "properties": props,
        "required": ["p5", "mode"]}}}]);
    std::fs::write(defs.join("tools.json"), serde_json::to_vec(&tools).unwrap()).unwrap();
    let build = toolreg(
        dir.path(),
        &["build", "--definitions", "wide", "--out", "out"],
    );
    let err = stderr(&build);
    assert_eq!(build.status.code(), Some(0), "{err}");
    assert!(
        err.contains("[TR070]") && err.contains("100003 objects"),
        "{err}"
    );
    let help: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/help.json")).unwrap()).unwrap();
    let mut usages = 0;
    for (path, page) in help["pages"].as_object().unwrap() {
        for form in ["short", "full"] {
            let mut stack = vec![&page[form]];
            while let Some(v) = stack.pop() {
                match v {
                    serde_json::Value::Object(o) => {
                        if let Some(u) = o.get("usage").and_then(|u| u.as_str()) {
                            usages += 1;
                            assert!(u.len() < 2048, "{path}: a usage line of {} bytes", u.len());
                            assert!(u.contains("... (99969 more arguments"), "{u}");
                            assert!(
                                u.contains(" p5=<string>") && u.contains("|+984 more"),
                                "{u}"
                            );
                        }
                        stack.extend(o.values());
                    }
                    serde_json::Value::Array(a) => stack.extend(a),
                    _ => {}
                }
            }
        }
    }
    assert!(usages >= 4, "usage lines checked: {usages}");
    // A call missing its required arguments: a validation envelope, not a copy of the schema.
    let exec = toolreg(
        dir.path(),
        &[
            "exec",
            "list_things",
            "--args",
            "{\"p1\": 5}",
            "--registry",
            "out/registry.json",
        ],
    );
    let out = String::from_utf8_lossy(&exec.stdout);
    assert!(out.contains("VALIDATION_ERROR"), "{out}");
    assert!(out.len() < 16 * 1024, "an envelope of {} bytes", out.len());
}

/// Issue 35 (a low): a 100 MB description took a build 27 s and 1.7 GB. It is refused (TR045)
/// and cut before anything reads it, in bounded time and memory, and the same in a third-party
/// file quarantines only that tool.
#[cfg(target_os = "linux")]
#[test]
fn a_100_mb_description_is_refused_in_bounded_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let defs = dir.path().join("huge");
    std::fs::create_dir(&defs).unwrap();
    let huge = format!("Lists tasks. {}", "word ".repeat(20_000_000));
    let tools = serde_json::json!([
        {"type": "function", "function": {"name": "list_tasks", "description": huge,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}},
        {"type": "function", "function": {"name": "get_task", "description": "Get a task.",
            "parameters": {"type": "object", "properties": {"task_id": {"type": "string"}},
                "required": ["task_id"], "additionalProperties": false}}}
    ]);
    std::fs::write(defs.join("tools.json"), serde_json::to_vec(&tools).unwrap()).unwrap();
    let (build, peak_mb, took_ms) = common::run_measured(
        dir.path(),
        &["build", "--definitions", "huge", "--out", "out"],
    );
    let err = stderr(&build);
    assert_eq!(build.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[TR045]") && err.contains("100000013 characters"),
        "{err}"
    );
    assert!(err.contains("tools.json:"), "{err}");
    assert!(!dir.path().join("out").exists());
    // Loose bounds (a debug build on a shared machine): the file is 100 MB.
    assert!(took_ms < 30_000, "{took_ms} ms");
    assert!(peak_mb < 900, "{peak_mb} MB");

    // Third-party: the tool is quarantined and the rest builds.
    std::fs::write(
        defs.join("toolreg.toml"),
        "[sources]\nthird_party = [\"tools.json\"]\n",
    )
    .unwrap();
    let (build, _, _) = common::run_measured(
        dir.path(),
        &["build", "--definitions", "huge", "--out", "out"],
    );
    let err = stderr(&build);
    assert_eq!(build.status.code(), Some(0), "{err}");
    assert!(
        err.contains("[TR081]") && err.contains("list_tasks"),
        "{err}"
    );
}
