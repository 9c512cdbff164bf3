//! The generated clients (issue 34) check arguments exactly where the runtime's exec does.
//!
//! For each catalog (the repo's example catalog, the fixture with its hostile texts and names in
//! `hostile.json`, GitHub's MCP server and LiveMCPBench's 527 real MCP tools), this test emits `zod`, `python` and `codemode`, then writes cases: every
//! example, and from each op's first example a wrong type, a missing required argument, an
//! unknown argument, a near miss of a required name and an empty call. What the runtime's exec
//! answers (code, failing pointers, the arguments it would send) is the expectation; a node run
//! of `ts/client.ts` (compiled by `tsc --strict`, zod from tests/ts's lockfile) and a pytest run
//! of `python/registry.py` (after `mypy --strict`; pydantic from scripts/test's venv) must
//! answer the same for every case. The code-mode tree type-checks with the same tsc.

mod common;

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use toolreg::emit::Emitter;
use toolreg::runtime::{ExecCall, Gateway, Scope};

fn python() -> PathBuf {
    let venv = std::env::var_os("TOOLREG_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/ci-tools/venv"));
    let py = venv.join("bin/python");
    assert!(
        py.exists(),
        "Python with pydantic, mypy and pytest is missing at {} (scripts/test installs it)",
        py.display()
    );
    py
}

/// A value of another JSON type than the schema wants.
fn wrong_value(schema: &Value) -> Option<Value> {
    let t = schema.get("type")?;
    let t = t.as_str().or_else(|| t.as_array()?.first()?.as_str())?;
    Some(match t {
        "string" => json!(12345),
        "integer" | "number" => json!("12"),
        "boolean" => json!("yes"),
        "array" => json!("not a list"),
        "object" => json!(["not", "an", "object"]),
        _ => return None,
    })
}

/// `task_id` -> `taskId`; a name with nothing to camel-case gets a letter more.
fn near_miss(name: &str) -> String {
    let camel = heck::ToLowerCamelCase::to_lower_camel_case(name);
    if camel != name && !camel.is_empty() {
        camel
    } else {
        format!("{name}x")
    }
}

fn cases_for(gw: &Gateway) -> Vec<Value> {
    let mut cases = Vec::new();
    let scope = Scope::all();
    let expect = |op: &str, args: &Value| -> Value {
        let mut warnings = Vec::new();
        match gw.prepare(&ExecCall::new(op, args.clone()), &scope, &mut warnings) {
            Ok((_, cleaned)) => json!({"ok": true, "code": null, "pointers": [], "args": cleaned}),
            Err(e) => {
                let mut pointers: Vec<String> = e.details["field_errors"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|f| f["pointer"].as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                pointers.sort();
                pointers.dedup();
                json!({"ok": false, "code": e.code, "pointers": pointers, "args": null})
            }
        }
    };
    // A declared result (MCP outputSchema): an empty one and one of the wrong shape, checked by
    // each client's checkResult; the expectation is the runtime's validator on the same schema.
    for (op, record) in &gw.registry().ops {
        let Some(output) = &record.output_schema else {
            continue;
        };
        let validator = jsonschema::validator_for(output).expect("the output schema compiles");
        let first = output
            .get("properties")
            .and_then(Value::as_object)
            .and_then(|p| {
                p.iter()
                    .find_map(|(n, s)| wrong_value(s).map(|v| (n.clone(), v)))
            });
        let mut results = vec![("empty result", json!({}))];
        if let Some((name, bad)) = first {
            let mut m = Map::new();
            m.insert(name, bad);
            results.push(("result with a wrong type", Value::Object(m)));
        }
        for (name, result) in results {
            let mut pointers: Vec<String> =
                toolreg::runtime::validate::field_errors(&validator, output, &result)
                    .into_iter()
                    .map(|e| e.pointer)
                    .collect();
            pointers.sort();
            pointers.dedup();
            cases.push(json!({"name": name, "op": op, "result": result,
                "expected": {"ok": pointers.is_empty(), "code": null, "pointers": pointers, "args": null}}));
        }
    }
    for (op, record) in &gw.registry().ops {
        let mut add = |name: String, args: Value| {
            let expected = expect(op, &args);
            cases.push(json!({"name": name, "op": op, "args": args, "expected": expected}));
        };
        for (i, e) in record.examples.iter().enumerate() {
            add(format!("example {i}"), e.args.clone());
        }
        let base = record
            .examples
            .first()
            .map(|e| e.args.clone())
            .unwrap_or_else(|| json!({}));
        let Some(obj) = base.as_object().cloned() else {
            continue;
        };
        add("empty".into(), json!({}));
        let props = record
            .parameters_schema
            .get("properties")
            .and_then(Value::as_object);
        if let Some((name, bad)) = props
            .into_iter()
            .flatten()
            .find_map(|(n, s)| wrong_value(s).map(|v| (n.clone(), v)))
        {
            let mut a = obj.clone();
            a.insert(name, bad);
            add("wrong type".into(), Value::Object(a));
        }
        if let Some(req) = record.required_args.iter().find(|r| obj.contains_key(*r)) {
            let mut a = obj.clone();
            let v = a.shift_remove(req).unwrap();
            add("missing required".into(), Value::Object(a.clone()));
            a.insert(near_miss(req), v);
            add("near miss of a required name".into(), Value::Object(a));
        }
        let mut a = obj.clone();
        a.insert("zz_not_an_argument".into(), json!(1));
        add("unknown argument".into(), Value::Object(a));
        // One level down too, where the op has an object argument.
        if let Some((name, _)) = props
            .into_iter()
            .flatten()
            .find(|(_, s)| s.get("properties").is_some())
        {
            let mut a = obj.clone();
            a.insert(name.clone(), json!({"zz_nested_unknown": true}));
            add("unknown nested argument".into(), Value::Object(a));
        }
        let mut a = Map::new();
        a.insert("args".into(), Value::Object(obj));
        add("arguments wrapped once more".into(), Value::Object(a));
    }
    cases
}

struct Built {
    name: &'static str,
    dir: PathBuf,
    cases: PathBuf,
    count: usize,
}

fn build(name: &'static str, definitions: &Path, root: &Path) -> Built {
    let compiled = toolreg::compiler::compile(definitions);
    let reg = compiled
        .registry
        .unwrap_or_else(|| panic!("{name} compiles: {:?}", compiled.diagnostics));
    let mut diags = Default::default();
    let files = toolreg::emit::emit(
        &reg,
        &[
            Emitter::Ts,
            Emitter::Zod,
            Emitter::Python,
            Emitter::Codemode,
        ],
        &mut diags,
    );
    let dir = root.join(name);
    for (rel, text) in &files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let help = toolreg::emit::help::build(&reg);
    let gw = Gateway::new(reg, help).expect("the gateway starts");
    let cases = cases_for(&gw);
    let path = dir.join("cases.json");
    std::fs::write(&path, serde_json::to_string_pretty(&cases).unwrap()).unwrap();
    Built {
        name,
        dir,
        cases: path,
        count: cases.len(),
    }
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the command runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn typescript_and_python_clients_check_arguments_as_exec_does() {
    let repo = common::repo();
    let ts = repo.join("tests/ts");
    let tsc = ts.join("node_modules/.bin/tsc");
    assert!(
        ts.join("node_modules/zod").exists() && tsc.exists(),
        "TypeScript and zod are not installed: run `npm ci --prefix tests/ts` (scripts/test does)"
    );
    // Inside tests/ts, so the compiled client finds zod in its node_modules.
    let root = ts.join(format!(".clients-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let github = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo.join("tests/catalogs/github/github.mcp.json"),
        github.path().join("github.mcp.json"),
    )
    .unwrap();
    let built = [
        build("example", &repo.join("definitions"), &root),
        build("fixture", &repo.join("tests/fixture/definitions"), &root),
        build("github", github.path(), &root),
        build("livemcp", &repo.join("tests/catalogs/fleet/livemcp"), &root),
    ];
    let include: Vec<String> = built
        .iter()
        .flat_map(|b| {
            [
                format!("{}/ts/*.ts", b.name),
                format!("{}/codemode/**/*.ts", b.name),
            ]
        })
        .collect();
    // Calls are typed: a wrong literal fails tsc (else the directive is unused, also an error).
    std::fs::write(
        root.join("usage.ts"),
        r#"import { Client, check, handlersTransport } from "./example/ts/client";
const client = new Client(handlersTransport({ "onto.task.list": (args) => args.project_id }));
void client.exec("onto.task.update", { task_id: "t1", state_key: "done" });
// @ts-expect-error: "finished" is not a state
void client.exec("onto.task.update", { task_id: "t1", state_key: "finished" });
// @ts-expect-error: not an op
void client.exec("onto.task.nope", {});
const checked = check("onto.task.list", { project_id: "p1" });
if (checked.ok) console.log(checked.args.project_id);
"#,
    )
    .unwrap();
    let mut include = include;
    include.push("usage.ts".into());
    std::fs::write(
        root.join("tsconfig.json"),
        json!({"compilerOptions": {"strict": true, "target": "ES2022", "module": "ES2022",
            "moduleResolution": "node", "skipLibCheck": true, "outDir": "out", "rootDir": "."},
            "include": include})
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::write(root.join("out/package.json"), r#"{"type": "module"}"#).unwrap();
    run(Command::new(&tsc).arg("-p").arg(&root));

    let py = python();
    let mut pairs = Vec::new();
    for b in &built {
        // Node: the compiled client against the runtime's answers.
        let text = run(Command::new("node")
            .arg(ts.join("check_clients.mjs"))
            .arg(root.join("out").join(b.name).join("ts/client.js"))
            .arg(&b.cases));
        let report: Value = serde_json::from_str(text.trim()).expect("the node check prints JSON");
        assert_eq!(report["checked"], b.count, "{}: every case checked", b.name);
        assert!(b.count >= 5, "{}: too few cases ({})", b.name, b.count);
        assert_eq!(
            report["mismatches"].as_array().map(Vec::len),
            Some(0),
            "{}: the TypeScript client disagrees with exec:\n{:#}",
            b.name,
            report["mismatches"]
        );
        if b.name == "example" {
            // Typed for mypy too: a model's fields, and the Op literal (else the ignores are
            // unused, an error under --strict).
            std::fs::write(
                b.dir.join("python/usage.py"),
                "from registry import Client, HandlersTransport, OntoTaskUpdateArgs\n\
                 client = Client(HandlersTransport({}))\n\
                 client.exec(\"onto.task.update\", OntoTaskUpdateArgs(task_id=\"t1\", state_key=\"done\"))\n\
                 client.exec(\"onto.task.update\", OntoTaskUpdateArgs(task_id=\"t1\", state_key=\"finished\"))  # type: ignore[arg-type]\n\
                 client.exec(\"onto.task.nope\", {})  # type: ignore[arg-type]\n",
            )
            .unwrap();
            run(Command::new(&py)
                .args(["-m", "mypy", "--strict", "--no-incremental"])
                .arg(b.dir.join("python/usage.py"))
                .current_dir(b.dir.join("python")));
        }
        // mypy --strict on the generated module.
        run(Command::new(&py)
            .args(["-m", "mypy", "--strict", "--no-incremental"])
            .arg(b.dir.join("python/registry.py")));
        pairs.push(format!(
            "{}={}",
            b.dir.join("python/registry.py").display(),
            b.cases.display()
        ));
    }
    let text = run(Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(repo.join("tests/python/test_clients.py"))
        .env("TOOLREG_CLIENT_CASES", pairs.join(":")));
    assert!(
        text.contains(&format!("{} passed", built.len() + 2)),
        "pytest ran every catalog:\n{text}"
    );
    // Over MCP: each client's transport against a real `toolreg serve` of the example catalog.
    let calls = roundtrip_calls();
    let calls_path = root.join("calls.json");
    std::fs::write(&calls_path, calls.to_string()).unwrap();
    let example = &built[0];
    let ts_answers = run(Command::new("node")
        .arg(ts.join("mcp_roundtrip.mjs"))
        .arg(root.join("out/example/ts/client.js"))
        .arg(repo.join("tests/mcp/node_modules/@modelcontextprotocol/sdk"))
        .arg(env!("CARGO_BIN_EXE_toolreg"))
        .arg(repo.join("generated"))
        .arg(&calls_path));
    let py_answers = run(Command::new(&py)
        .arg(repo.join("tests/python/mcp_roundtrip.py"))
        .arg(example.dir.join("python/registry.py"))
        .arg(env!("CARGO_BIN_EXE_toolreg"))
        .arg(repo.join("generated"))
        .arg(&calls_path));
    for (language, text) in [("TypeScript", ts_answers), ("Python", py_answers)] {
        let answers: Value = serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("{language}: not JSON ({e}): {text}"));
        check_roundtrip(language, &calls, &answers);
    }
    if std::env::var_os("TOOLREG_KEEP_CLIENTS").is_none() {
        std::fs::remove_dir_all(&root).unwrap();
    }
}

/// Three calls of the example catalog: a write as a dry run (the server echoes what it would
/// run), a read (no handler behind a bare registry: the server's NOT_IMPLEMENTED) and a wrong
/// argument (stopped by the client: no trace id, the server never saw it).
fn roundtrip_calls() -> Value {
    json!([
        {"op": "onto.task.create", "args": {"project_id": "p1", "title": "Record pilot"}, "dry_run": true},
        {"op": "onto.task.list", "args": {"project_id": "p1"}},
        {"op": "onto.task.update", "args": {"task_id": 5}}
    ])
}

fn check_roundtrip(language: &str, calls: &Value, answers: &Value) {
    let a = answers.as_array().expect("one answer per call");
    assert_eq!(a.len(), 3, "{language}: {answers:#}");
    // 1. Checked here, sent, validated and answered there.
    assert_eq!(a[0]["ok"], true, "{language}: {:#}", a[0]);
    assert_eq!(a[0]["result"]["dry_run"], true, "{language}: {:#}", a[0]);
    assert_eq!(
        a[0]["result"]["would_run"]["args"],
        json!({"project_id": "p1", "title": "Record pilot"}),
        "{language}: {:#}",
        a[0]
    );
    assert_ne!(
        a[0]["meta"]["trace_id"], "",
        "{language}: the server answered"
    );
    // 2. The server's own error, passed through.
    assert_eq!(a[1]["ok"], false, "{language}: {:#}", a[1]);
    assert_eq!(
        a[1]["error"]["code"], "NOT_IMPLEMENTED",
        "{language}: {:#}",
        a[1]
    );
    assert_ne!(
        a[1]["meta"]["trace_id"], "",
        "{language}: the server answered"
    );
    // 3. Stopped by the client.
    assert_eq!(a[2]["ok"], false, "{language}: {:#}", a[2]);
    assert_eq!(
        a[2]["error"]["code"], "VALIDATION_ERROR",
        "{language}: {:#}",
        a[2]
    );
    assert_eq!(a[2]["error"]["help_path"], calls[2]["op"], "{language}");
    assert_eq!(
        a[2]["error"]["details"]["field_errors"][0]["pointer"], "/task_id",
        "{language}: {:#}",
        a[2]
    );
    assert_eq!(a[2]["meta"]["trace_id"], "", "{language}: never sent");
}

/// The README's and the guide's code-mode rows are what a build measures (report.json's
/// `disclosure` and `artifacts`): direct, gateway and code-mode o200k tokens to find and call
/// one op (medians), and the tree's files and size.
#[test]
fn the_code_mode_figures_in_the_readme_are_measured() {
    let repo = common::repo();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let guide = std::fs::read_to_string(repo.join("docs/guide.md")).unwrap();
    let thousands = |n: u64| toolreg::diff::cache::thousands(n as usize);
    let size = |bytes: u64| {
        if bytes < 100_000 {
            format!("{} KB", (bytes as f64 / 1000.0).round())
        } else {
            format!("{:.1} MB", bytes as f64 / 1e6)
        }
    };
    for (label, defs) in [
        ("example", repo.join("definitions")),
        (
            "LiveMCPBench, 70 MCP servers",
            repo.join("tests/catalogs/fleet/livemcp"),
        ),
        (
            "ToolSDK, 814 MCP servers",
            repo.join("tests/catalogs/fleet/toolsdk"),
        ),
    ] {
        let compiled = toolreg::compiler::compile(&defs);
        let reg = compiled.registry.expect("the catalog compiles");
        let mut diags = Default::default();
        let files = toolreg::emit::emit(
            &reg,
            &[
                Emitter::Surfaces,
                Emitter::Report,
                Emitter::Help,
                Emitter::Codemode,
            ],
            &mut diags,
        );
        let report: Value = serde_json::from_str(&files["report.json"]).unwrap();
        let d = &report["disclosure"];
        let tree = &report["artifacts"]["codemode"];
        let n = |v: &Value| v.as_u64().unwrap();
        let row = format!(
            "| {label} | {} | {} | {} | {} ({} files, {}) |",
            thousands(reg.counts.ops as u64),
            thousands(n(&d["direct"])),
            thousands(n(&d["gateway"]["median"])),
            thousands(n(&d["codemode"]["median"])),
            thousands(n(&tree["files"])),
            size(n(&tree["bytes"]))
        );
        assert!(
            readme.contains(&row),
            "README lacks the measured row:\n{row}"
        );
        let guide_tail = format!(
            "| {} | {} | {} files, {} |",
            thousands(n(&d["gateway"]["median"])),
            thousands(n(&d["codemode"]["median"])),
            thousands(n(&tree["files"])),
            size(n(&tree["bytes"]))
        );
        assert!(
            guide.contains(&guide_tail),
            "the guide lacks:\n{guide_tail}"
        );
    }
}
