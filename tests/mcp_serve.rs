//! `toolreg import mcp` and `toolreg serve` against the real reference MCP servers (npm
//! packages pinned in tests/mcp/package-lock.json, installed by scripts/test), driven by a real
//! MCP client in this process (rmcp's) talking to `toolreg serve` as a child process over stdio,
//! and by the official MCP Inspector's CLI.
//!
//! Each upstream runs behind tests/mcp/count-calls.mjs, a pass-through shim that records every
//! `tools/call` it forwards and its pid, so the tests can prove a call never reached the server
//! and kill the server mid-session.
#![cfg(feature = "mcp")]

mod common;
#[path = "../benches/support/synthetic.rs"]
mod synthetic;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn modules() -> PathBuf {
    let m = common::repo().join("tests/mcp/node_modules/@modelcontextprotocol");
    assert!(
        m.join("server-memory/dist/index.js").is_file(),
        "the reference MCP servers are not installed: run `npm ci --prefix tests/mcp` (scripts/test does)"
    );
    m
}

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    defs: PathBuf,
    gen: PathBuf,
    files: PathBuf,
}

impl World {
    fn state(&self, upstream: &str, ext: &str) -> PathBuf {
        self.root.join(format!("{upstream}.{ext}"))
    }

    /// `tools/call`s the shim forwarded to an upstream so far.
    fn calls(&self, upstream: &str) -> Vec<String> {
        std::fs::read_to_string(self.state(upstream, "calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn pid(&self, upstream: &str) -> i32 {
        std::fs::read_to_string(self.state(upstream, "pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

/// The approvals file of every toolreg these tests run (never the user's own): `import mcp`
/// records what it ran there, `serve` and `import --check` read it.
fn approvals() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        DIR.get_or_init(|| tempfile::tempdir().unwrap())
            .path()
            .join("approved-upstreams.toml")
    })
}

fn toolreg(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .env("TOOLREG_APPROVALS", approvals())
        // The memory upstream's entry lists it (`--env`), so every start needs it; these runs
        // only list tools, which writes nothing there.
        .env(
            "MEMORY_FILE_PATH",
            std::env::temp_dir().join("toolreg-tests-memory-listing.jsonl"),
        )
        .output()
        .unwrap()
}

/// `toolreg build -d DEFS --out OUT`, waited for.
fn build(defs: &Path, out: &Path) -> std::process::Output {
    toolreg(&[
        "build",
        "-d",
        defs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// Imports both servers (memory with a 1.5 s call limit), builds with no hand-written taxonomy.
fn world() -> World {
    let m = modules();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let (defs, gen, files) = (root.join("defs"), root.join("gen"), root.join("files"));
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "hi").unwrap();
    let shim = common::repo().join("tests/mcp/count-calls.mjs");
    let shim = shim.to_str().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    for (name, server, extra) in [
        ("memory", "server-memory", vec!["--timeout-ms", "1500"]),
        ("filesystem", "server-filesystem", vec![]),
    ] {
        let prefix = s(&root.join(name));
        let script = s(&m.join(server).join("dist/index.js"));
        let mut args = vec!["import", "mcp", name, "-d", defs.to_str().unwrap()];
        args.extend(extra);
        if name == "memory" {
            // A stdio upstream gets only the variables its entry lists.
            args.extend(["--env", "MEMORY_FILE_PATH"]);
        }
        args.extend(["--", "node", shim, &prefix, "--", "node", &script]);
        let files_arg = s(&files);
        if name == "filesystem" {
            args.push(&files_arg);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args(&args)
            .env("TOOLREG_APPROVALS", approvals())
            .env("MEMORY_FILE_PATH", root.join("memory.jsonl"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "import {name}: {}",
            common::stderr(&out)
        );
        assert!(common::stderr(&out).contains(&format!("[upstreams.{name}]")));
    }
    let out = build(&defs, &gen);
    assert!(out.status.success(), "build: {}", common::stderr(&out));
    // The import's start-up listing went through the shim too; start counting from zero.
    for name in ["memory", "filesystem"] {
        let _ = std::fs::remove_file(root.join(format!("{name}.calls")));
    }
    World {
        _tmp: tmp,
        root,
        defs,
        gen,
        files,
    }
}

/// Tells the call-counting shim in front of each upstream to hold calls of `tool` for `ms`.
fn slow_calls(w: &World, tool: &str, ms: u64) {
    for name in ["memory", "filesystem"] {
        std::fs::write(
            w.root.join(format!("{name}.slow.json")),
            json!({"tool": tool, "ms": ms}).to_string(),
        )
        .unwrap();
    }
}

async fn client(w: &World, surface: &str) -> RunningService<RoleClient, ()> {
    slow_calls(w, "search_nodes", 4000);
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
    cmd.args([
        "serve",
        "--registry",
        w.gen.to_str().unwrap(),
        "--surface",
        surface,
    ])
    .env("MEMORY_FILE_PATH", w.root.join("memory.jsonl"))
    .env("TOOLREG_APPROVALS", approvals());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    ().serve(transport)
        .await
        .expect("toolreg serve completes the MCP handshake")
}

async fn call<S: rmcp::Service<RoleClient>>(
    c: &RunningService<RoleClient, S>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else { panic!() };
    c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap()
}

async fn exec(c: &RunningService<RoleClient, ()>, op: &str, args: Value) -> CallToolResult {
    call(c, "tool_exec", json!({"op": op, "args": args})).await
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The toolreg envelope of an error result.
fn envelope(r: &CallToolResult) -> Value {
    assert_eq!(
        r.is_error,
        Some(true),
        "expected an error result: {}",
        text(r)
    );
    let e: Value = serde_json::from_str(&text(r)).expect("the error text is the envelope");
    assert_eq!(Some(&e), r.structured_content.as_ref());
    e
}

/// The names of a `{"tools": [...]}` list (a tools/list result or an import snapshot).
fn tool_names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_proxies_the_reference_servers_through_the_gateway() {
    let w = world();
    let c = client(&w, "gateway").await;

    // tools/list is the generated gateway surface, tool for tool, stamped with the version.
    let listed = c.list_tools(None).await.unwrap();
    let surface: Value =
        serde_json::from_slice(&std::fs::read(w.gen.join("surfaces/gateway.json")).unwrap())
            .unwrap();
    let expected: Vec<Value> = surface["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            json!({"name": f["name"], "description": f["description"], "inputSchema": f["parameters"]})
        })
        .collect();
    let got: Vec<Value> = listed
        .tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    assert_eq!(got, expected);
    assert_eq!(
        listed.meta.unwrap().0["toolreg/registry_version"],
        surface["registry_version"]
    );

    // Discovery: search and help answer from the compiled registry, with no upstream involved.
    let found = call(&c, "tool_search", json!({"query": "write a file"})).await;
    let ops: Vec<&str> = found.structured_content.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert!(ops.contains(&"filesystem.file.write"), "{ops:?}");
    let help = call(&c, "tool_help", json!({"path": "filesystem.file.write"})).await;
    assert!(text(&help).contains("filesystem.file.write path=<string> content=<string>"));
    assert!(w.calls("filesystem").is_empty() && w.calls("memory").is_empty());

    // Forwarded calls: list a directory, write a file and read it back (checked on disk).
    let listed = exec(&c, "filesystem.directory.list", json!({"path": w.files})).await;
    assert_ne!(listed.is_error, Some(true), "{}", text(&listed));
    assert!(text(&listed).contains("hello.txt"), "{}", text(&listed));
    assert_eq!(
        listed.meta.as_ref().unwrap().0["toolreg"]["op"],
        "filesystem.directory.list"
    );
    let target = w.files.join("note.txt");
    let wrote = exec(
        &c,
        "filesystem.file.write",
        json!({"path": target, "content": "written through toolreg"}),
    )
    .await;
    assert_ne!(wrote.is_error, Some(true), "{}", text(&wrote));
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "written through toolreg"
    );
    let read = exec(&c, "filesystem.text_file.read", json!({"path": target})).await;
    assert!(text(&read).contains("written through toolreg"));
    assert_eq!(
        w.calls("filesystem"),
        ["list_directory", "write_file", "read_text_file"],
        "each call reached the server once, under the tool's own name"
    );

    // The memory server: create an entity, read the graph back.
    let created = exec(
        &c,
        "memory.entity.create",
        json!({"entities": [{"name": "toolreg", "entityType": "project", "observations": ["compiles tool catalogs"]}]}),
    )
    .await;
    assert_ne!(created.is_error, Some(true), "{}", text(&created));
    let graph = exec(&c, "memory.graph.read", json!({})).await;
    assert!(
        text(&graph).contains("compiles tool catalogs"),
        "{}",
        text(&graph)
    );

    // An unknown op: NOT_FOUND with a help path, nothing forwarded.
    let before = (w.calls("memory").len(), w.calls("filesystem").len());
    let e = envelope(&exec(&c, "filesystem.file.teleport", json!({})).await);
    assert_eq!(e["error"]["code"], "NOT_FOUND");
    // A call that fails validation lists every field error and never reaches the upstream.
    let e = envelope(&exec(&c, "filesystem.file.write", json!({"path": 7})).await);
    assert_eq!(e["error"]["code"], "VALIDATION_ERROR");
    let fields: Vec<&str> = e["error"]["details"]["field_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields.iter().collect::<std::collections::BTreeSet<_>>(),
        [&"content", &"path"].into_iter().collect()
    );
    assert_eq!(e["error"]["help_path"], "filesystem.file.write");
    // A dry run validates and stops there too.
    let dry = call(
        &c,
        "tool_exec",
        json!({"op": "filesystem.file.write", "args": {"path": "x", "content": "y"}, "dry_run": true}),
    )
    .await;
    assert_eq!(
        dry.structured_content.as_ref().unwrap()["meta"]["dry_run"],
        true
    );
    assert_eq!(
        before,
        (w.calls("memory").len(), w.calls("filesystem").len())
    );

    // The upstream's own error result passes through unchanged (no toolreg envelope).
    let outside = exec(
        &c,
        "filesystem.text_file.read",
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert_eq!(outside.is_error, Some(true));
    assert!(
        text(&outside).contains("Access denied"),
        "{}",
        text(&outside)
    );
    assert!(serde_json::from_str::<Value>(&text(&outside)).is_err());

    // A call past the upstream's time limit (1.5 s; the shim holds search_nodes 4 s).
    let started = Instant::now();
    let e = envelope(&exec(&c, "memory.node.search", json!({"query": "toolreg"})).await);
    assert_eq!(e["error"]["code"], "UPSTREAM_TIMEOUT", "{e}");
    assert!(started.elapsed() < Duration::from_secs(4));

    // The upstream killed while idle: nothing of the next call had reached it, so that call
    // starts it again and is served (issue 35, left from before: it used to fail).
    let first = w.pid("memory");
    unsafe { libc::kill(first, libc::SIGKILL) };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = exec(&c, "memory.graph.read", json!({})).await;
    assert_ne!(again.is_error, Some(true), "{}", text(&again));
    assert!(
        text(&again).contains("compiles tool catalogs"),
        "the memory file survived"
    );
    let second = w.pid("memory");
    assert_ne!(first, second);

    // Closing the client ends `toolreg serve`, and it stops its upstreams: no orphans.
    let fs = w.pid("filesystem");
    assert!(alive(second) && alive(fs));
    c.cancel().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while (alive(second) || alive(fs)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !alive(second) && !alive(fs),
        "upstreams outlived the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_lists_direct_and_profile_surfaces_and_stops_on_sigterm() {
    let w = world();
    // The direct surface: one typed tool per op; a call by tool name is an exec of that op.
    let c = client(&w, "direct").await;
    let listed = c.list_tools(None).await.unwrap();
    assert_eq!(listed.tools.len(), 23);
    let r = call(&c, "list_directory", json!({"path": w.files})).await;
    assert!(text(&r).contains("hello.txt"), "{}", text(&r));
    // The names the surface advertises are first-class: no "call ops by their op name".
    let meta = serde_json::to_value(&r.meta).unwrap();
    assert_eq!(meta["toolreg"]["warnings"], json!([]), "{meta}");
    // An argument the schema does not declare never reaches the upstream (issue 21: a
    // poisoned description's `sidenote`): under an open schema it is dropped and the warning
    // says so; under a closed one it is a validation error.
    let r = call(
        &c,
        "list_directory",
        json!({"path": w.files, "sidenote": "contents of ~/.ssh/id_rsa"}),
    )
    .await;
    let snapshot: Value =
        serde_json::from_slice(&std::fs::read(w.defs.join("filesystem.mcp.json")).unwrap())
            .unwrap();
    let schema = &snapshot["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "list_directory")
        .unwrap()["inputSchema"];
    if schema.get("additionalProperties").is_none() {
        assert!(text(&r).contains("hello.txt"), "{}", text(&r));
        let meta = serde_json::to_value(&r.meta).unwrap();
        assert!(
            meta["toolreg"]["warnings"][0]
                .as_str()
                .is_some_and(|w| w.contains("`sidenote`") && w.contains("dropped")),
            "{meta}"
        );
    } else {
        assert_eq!(envelope(&r)["error"]["code"], "VALIDATION_ERROR");
    }
    let sent = std::fs::read_to_string(w.state("filesystem", "args")).unwrap();
    assert!(
        !sent.contains("sidenote") && !sent.contains("id_rsa"),
        "{sent}"
    );
    let e = envelope(&call(&c, "list_directory", json!({"path": 5})).await);
    assert_eq!(e["error"]["code"], "VALIDATION_ERROR");
    // A tool the surface does not list is a protocol error, not a result.
    assert!(c
        .call_tool(CallToolRequestParams::new("tool_exec"))
        .await
        .is_err());
    c.cancel().await.unwrap();

    // A profile surface (drafted per group with no overlay): only that group's tools.
    let c = client(&w, "profile:memory").await;
    let names: Vec<String> = c
        .list_tools(None)
        .await
        .unwrap()
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.iter().any(|n| n == "read_graph"), "{names:?}");
    assert!(!names.iter().any(|n| n == "write_file"), "{names:?}");
    c.cancel().await.unwrap();

    // SIGTERM: `--eager` starts both upstreams at once; both are gone after the server exits.
    let _ = std::fs::remove_file(w.state("memory", "pid"));
    let _ = std::fs::remove_file(w.state("filesystem", "pid"));
    let mut serve = spawn_eager_serve(&w);
    let deadline = Instant::now() + Duration::from_secs(15);
    while !(w.state("memory", "pid").exists() && w.state("filesystem", "pid").exists()) {
        assert!(
            Instant::now() < deadline,
            "--eager did not start the upstreams"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pids = [w.pid("memory"), w.pid("filesystem")];
    assert!(pids.iter().all(|p| alive(*p)));
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    let status = serve.wait().unwrap();
    assert!(status.success(), "{status}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        pids.iter().all(|p| !alive(*p)),
        "upstreams outlived SIGTERM"
    );

    // A client that hangs up before the handshake (what `Child::wait` does to our stdin right
    // after a SIGTERM, or a supervisor's probe) is a clean end too: exit 0, no orphans.
    let _ = std::fs::remove_file(w.state("memory", "pid"));
    let mut serve = spawn_eager_serve(&w);
    let deadline = Instant::now() + Duration::from_secs(15);
    while !w.state("memory", "pid").exists() {
        assert!(Instant::now() < deadline, "--eager did not start memory");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let memory = w.pid("memory");
    drop(serve.stdin.take());
    let status = serve.wait().unwrap();
    assert!(status.success(), "a hang-up before the handshake: {status}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(memory) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(memory), "an upstream outlived the hang-up");
}

/// `toolreg serve --eager` over stdio on the world's build, its stdin and stdout piped.
fn spawn_eager_serve(w: &World) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(["serve", "--eager", "--registry", w.gen.to_str().unwrap()])
        .env("MEMORY_FILE_PATH", w.root.join("memory.jsonl"))
        .env("TOOLREG_APPROVALS", approvals())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn import_check_reports_drift_and_bad_servers_fail_fast() {
    let w = world();
    let defs = w.defs.to_str().unwrap();
    let out = toolreg(&["import", "--check", "-d", defs]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("memory: up to date") && stdout.contains("filesystem: up to date"));

    // The snapshot keeps every field the server sent (`execution` too, which the SDK's types
    // drop) and agrees with the one captured independently by scripts/mcp-tools-snapshot.mjs.
    // (That script asked for protocol 2025-06-18; at the version rmcp negotiates the server adds
    // `additionalProperties: false` to its schemas, so schemas are compared by properties.)
    let ours: Value =
        serde_json::from_slice(&std::fs::read(w.defs.join("memory.mcp.json")).unwrap()).unwrap();
    let captured: Value = serde_json::from_slice(
        &std::fs::read(common::repo().join("tests/catalogs/reference-servers/memory.mcp.json"))
            .unwrap(),
    )
    .unwrap();
    let summary = |doc: &Value| -> Vec<Value> {
        doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let props: Vec<&String> = t["inputSchema"]["properties"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .collect();
                json!([
                    t["name"],
                    t["title"],
                    t["description"],
                    t["annotations"],
                    t["execution"],
                    props,
                    t["inputSchema"]["required"]
                ])
            })
            .collect()
    };
    assert_eq!(summary(&ours), summary(&captured));
    assert_eq!(summary(&ours).len(), 9);

    // Drift: a tool removed from the snapshot is "added" live; a changed description is named.
    let path = w.defs.join("memory.mcp.json");
    let mut doc = ours.clone();
    let tools = doc["tools"].as_array_mut().unwrap();
    tools.retain(|t| t["name"] != "read_graph");
    tools[0]["description"] = json!("an old description");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let out = toolreg(&["import", "--check", "-d", defs]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("added    read_graph"), "{stdout}");
    assert!(
        stdout.contains("changed  add_observations (description)"),
        "{stdout}"
    );

    // A server that prints garbage, one that dies, one that does not exist: exit 2, fast, clear.
    for (args, says) in [
        (
            vec![
                "node",
                "-e",
                "console.log('Starting server...'); setInterval(() => {}, 1000)",
            ],
            "not JSON-RPC on stdout: `Starting server...`",
        ),
        (
            vec![
                "node",
                "-e",
                "console.error('boom: missing config'); process.exit(3)",
            ],
            "boom: missing config",
        ),
        (
            vec!["/nonexistent/server"],
            "cannot start `/nonexistent/server`",
        ),
    ] {
        let started = Instant::now();
        let mut all = vec!["import", "mcp", "bad", "-d", defs, "--"];
        all.extend(args);
        let out = toolreg(&all);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            common::stderr(&out).contains(says),
            "{}",
            common::stderr(&out)
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(!w.defs.join("bad.mcp.json").exists());
    }
    let out = toolreg(&["import", "mcp", "../evil", "-d", defs, "--", "node"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("not one safe name"));
}

#[test]
fn the_official_inspector_lists_and_calls_tools_of_toolreg_serve() {
    let w = world();
    let cli = modules().join("inspector/cli/build/cli.js");
    let inspect = |extra: &[&str]| {
        let mut args = vec![
            cli.to_str().unwrap(),
            "--cli",
            env!("CARGO_BIN_EXE_toolreg"),
            "serve",
            "--registry",
            w.gen.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = Command::new("node")
            .args(&args)
            .env("TOOLREG_APPROVALS", approvals())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let listed = inspect(&["--method", "tools/list"]);
    assert_eq!(
        tool_names(&listed),
        ["tool_help", "tool_exec", "tool_search"]
    );
    let files = format!("args={}", json!({"path": w.files}));
    let called = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "tool_exec",
        "--tool-arg",
        "op=filesystem.directory.list",
        "--tool-arg",
        &files,
    ]);
    assert!(called["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("hello.txt"));
}

/// A `toolreg serve --http 127.0.0.1:0` replica; its address is read from its stderr.
struct Replica {
    child: std::process::Child,
    url: String,
}

impl Replica {
    fn start(w: &World, extra: &[&str]) -> Replica {
        use std::io::BufRead;
        slow_calls(w, "create_entities", 800);
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args(["serve", "--registry", w.gen.to_str().unwrap()])
            .args(["--http", "127.0.0.1:0"])
            .args(extra)
            .env("MEMORY_FILE_PATH", w.root.join("memory.jsonl"))
            .env("TOOLREG_APPROVALS", approvals())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let url = loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("toolreg serve --http exited before listening: {seen}")
            };
            if let Some(url) = line.strip_prefix("toolreg serve: listening on ") {
                break url.to_string();
            }
            seen.push_str(&line);
        };
        // Keep draining stderr so the replica never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Replica { child, url }
    }

    async fn client(&self) -> RunningService<RoleClient, ()> {
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(self.url.clone());
        ().serve(transport)
            .await
            .expect("an MCP client connects over streamable HTTP")
    }

    /// SIGTERM, then the exit status (`None`: still running after 10 s).
    fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    fn stop(mut self) -> std::process::ExitStatus {
        self.terminate().expect("the replica stops on SIGTERM")
    }
}

impl Drop for Replica {
    /// A failed assertion must not leave a server (and its upstreams) running.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() && self.terminate().is_none() {
            let _ = self.child.kill();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_streamable_http_and_import_from_a_url() {
    let w = world();
    let a = Replica::start(&w, &[]);
    let c = a.client().await;

    // The same surface as over stdio, and calls forwarded to the upstream.
    let listed = c.list_tools(None).await.unwrap();
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["tool_help", "tool_exec", "tool_search"]);
    assert!(listed
        .meta
        .unwrap()
        .0
        .contains_key("toolreg/registry_version"));
    let dir = exec(&c, "filesystem.directory.list", json!({"path": w.files})).await;
    assert!(text(&dir).contains("hello.txt"), "{}", text(&dir));
    let e = envelope(&exec(&c, "filesystem.file.write", json!({"path": 7})).await);
    assert_eq!(e["error"]["code"], "VALIDATION_ERROR");

    // import --url: a live streamable HTTP server (this one) snapshotted like a stdio one, its
    // upstream recorded with the url, and the drift check clean against it.
    let defs = w.root.join("defs-http");
    let out = toolreg(&[
        "import",
        "mcp",
        "gateway",
        "--url",
        &a.url,
        "-d",
        defs.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let snapshot: Value =
        serde_json::from_slice(&std::fs::read(defs.join("gateway.mcp.json")).unwrap()).unwrap();
    let imported = tool_names(&snapshot);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(imported, sorted, "the snapshot is sorted by name");
    let overlay = std::fs::read_to_string(defs.join("toolreg.toml")).unwrap();
    assert!(
        overlay.contains(&format!("url = \"{}\"", a.url)),
        "{overlay}"
    );
    let out = toolreg(&["import", "--check", "-d", defs.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::stderr(&out));

    // A URL nobody serves: exit 2 with the URL named, quickly.
    let started = Instant::now();
    let out = toolreg(&[
        "import",
        "mcp",
        "nobody",
        "--url",
        "http://127.0.0.1:9/mcp",
        "-d",
        defs.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("127.0.0.1:9"),
        "{}",
        common::stderr(&out)
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    drop(c);
    let upstream = w.pid("filesystem");
    assert!(a.stop().success());
    std::thread::sleep(Duration::from_millis(700));
    assert!(!alive(upstream), "the upstream outlived the HTTP server");
}

#[cfg(feature = "redis")]
use common::RedisServer as Redis;

/// Two replicas sharing a real redis-server: one keyed write sent to both runs once, and both
/// answer with the one result.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_run_a_keyed_write_once_with_a_redis_store() {
    let w = world();
    let mut redis = Redis::start();
    let store = ["--idempotency", redis.url.as_str()];
    let (a, b) = (Replica::start(&w, &store), Replica::start(&w, &store));
    let (ca, cb) = (a.client().await, b.client().await);
    let create = |key: &str, name: &str| {
        json!({"op": "memory.entity.create", "idempotency_key": key,
               "args": {"entities": [{"name": name, "entityType": "replica-test", "observations": ["once"]}]}})
    };
    let creates = || {
        w.calls("memory")
            .iter()
            .filter(|c| *c == "create_entities")
            .count()
    };

    // The same key to both at once (the upstream holds the call 0.8 s, so they overlap): one
    // runs, the other is told it is in flight; nothing runs twice.
    let (ra, rb) = tokio::join!(
        call(&ca, "tool_exec", create("k1", "alpha")),
        call(&cb, "tool_exec", create("k1", "alpha"))
    );
    let (ran, other) = if ra.is_error == Some(true) {
        (rb, ra)
    } else {
        (ra, rb)
    };
    assert_ne!(ran.is_error, Some(true), "{}", text(&ran));
    let e = envelope(&other);
    assert_eq!(e["error"]["code"], "CONFLICT", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still running"),
        "{e}"
    );
    assert_eq!(creates(), 1);

    // Afterwards, either replica replays the first result without running the op.
    for c in [&ca, &cb] {
        let again = call(c, "tool_exec", create("k1", "alpha")).await;
        assert_eq!(again.content, ran.content, "replayed result differs");
        let meta = &again.meta.as_ref().unwrap().0["toolreg"];
        assert!(meta["warnings"].to_string().contains("replayed"), "{meta}");
    }
    assert_eq!(creates(), 1);

    // The key with other arguments, on the other replica: a conflict naming the first op.
    let e = envelope(&call(&cb, "tool_exec", create("k1", "beta")).await);
    assert_eq!(e["error"]["code"], "CONFLICT");
    assert_eq!(e["error"]["details"]["first_op"], "memory.entity.create");
    assert_eq!(creates(), 1);

    // Store gone: the keyed write is refused, not run (it could run twice); unkeyed still runs.
    redis.stop();
    let e = envelope(&call(&ca, "tool_exec", create("k2", "gamma")).await);
    assert_eq!(e["error"]["code"], "IDEMPOTENCY_UNAVAILABLE", "{e}");
    assert_eq!(creates(), 1);

    drop((ca, cb));
    assert!(a.stop().success());
    assert!(b.stop().success());

    // A store that cannot be reached at start: exit 2, named.
    let out = toolreg(&[
        "serve",
        "--registry",
        w.gen.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--idempotency",
        "redis://127.0.0.1:9",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("redis://127.0.0.1:9"),
        "{}",
        common::stderr(&out)
    );
}

/// Issue 25, item 3: faults between a replica and Redis never block an honest retry. Replica A
/// reaches Redis through a loopback proxy the test stalls; B reaches it directly.
///
/// - Redis frozen (SIGSTOP) for 3 s during a keyed write on A: A answers "not run" after 2 s;
///   the request queued in Redis's socket runs when it wakes, past its deadline, so it leaves
///   no marker. The retry runs once.
/// - Replies swallowed by the proxy: A's script ran in Redis (its "running" marker is there) but
///   A never heard back and told its caller "not run". B, asked meanwhile, tells the truth (a
///   CONFLICT saying since when); once the proxy passes replies again A voids its attempt and
///   B's retry runs the write once. A's own connection recovers by itself.
///
/// In every case the upstream's call log shows each write ran exactly once, and within 5 s of
/// the fault clearing.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_writes_recover_once_from_a_paused_redis_and_a_lossy_network() {
    let w = world();
    let redis = Redis::start();
    let proxy = common::StallProxy::start(redis.port()).await;
    let via_proxy = format!("redis://127.0.0.1:{}", proxy.port);
    let a = Replica::start(&w, &["--idempotency", &via_proxy]);
    let b = Replica::start(&w, &["--idempotency", redis.url.as_str()]);
    let (ca, cb) = (a.client().await, b.client().await);
    let create = |key: &str, name: &str| {
        json!({"op": "memory.entity.create", "idempotency_key": key,
               "args": {"entities": [{"name": name, "entityType": "fault-test", "observations": ["once"]}]}})
    };
    let creates = || {
        w.calls("memory")
            .iter()
            .filter(|c| *c == "create_entities")
            .count()
    };
    // Retries `body` on `c` every 200 ms until it succeeds; the envelopes of the failures.
    async fn retry_until_ok(
        c: &RunningService<RoleClient, ()>,
        body: Value,
        within: Duration,
    ) -> (CallToolResult, Vec<Value>, Duration) {
        let started = Instant::now();
        let mut refused = Vec::new();
        loop {
            let r = call(c, "tool_exec", body.clone()).await;
            if r.is_error != Some(true) {
                return (r, refused, started.elapsed());
            }
            refused.push(envelope(&r));
            assert!(
                started.elapsed() < within,
                "no success within {within:?}: {refused:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let mut conn = redis.connection();
    // The replicas serve callers without a principal on the gateway surface: their keys live
    // in that caller's partition.
    let marker = |conn: &mut redis::Connection, key: &str| -> bool {
        let stored = toolreg::runtime::idempotency::partitioned("\u{1f}gateway.json", key);
        redis::cmd("EXISTS")
            .arg(format!("toolreg:idem:{stored}"))
            .query::<i64>(conn)
            .unwrap()
            == 1
    };

    // A warm-up write on A loads the scripts into Redis, so a frozen Redis later holds a real
    // request rather than a script lookup.
    let warm = call(&ca, "tool_exec", create("warm", "w")).await;
    assert_ne!(warm.is_error, Some(true), "{}", text(&warm));
    assert_eq!(creates(), 1);

    // 1. Redis frozen for 3 s during a keyed write.
    redis.pause();
    let frozen = Instant::now();
    let e = envelope(&call(&ca, "tool_exec", create("paused", "p")).await);
    assert_eq!(e["error"]["code"], "IDEMPOTENCY_UNAVAILABLE", "{e}");
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("was not run"));
    tokio::time::sleep(Duration::from_secs(3).saturating_sub(frozen.elapsed())).await;
    redis.resume();
    let (ran, refused, took) =
        retry_until_ok(&ca, create("paused", "p"), Duration::from_secs(5)).await;
    eprintln!(
        "paused Redis: the retry ran {took:?} after SIGCONT ({} refused first)",
        refused.len()
    );
    assert_eq!(creates(), 2, "the write ran once: {}", text(&ran));
    for c in [&ca, &cb] {
        let again = call(c, "tool_exec", create("paused", "p")).await;
        assert_eq!(again.content, ran.content, "replayed, not run again");
    }
    assert_eq!(creates(), 2);

    // 2. Replies lost on A's way to Redis: the marker lands, A hears nothing.
    proxy.stall();
    let e = envelope(&call(&ca, "tool_exec", create("lost", "l")).await);
    assert_eq!(e["error"]["code"], "IDEMPOTENCY_UNAVAILABLE", "{e}");
    assert!(marker(&mut conn, "lost"), "A's script ran in Redis");
    // B, asked while A cannot free the key, says what it knows: running since when.
    let e = envelope(&call(&cb, "tool_exec", create("lost", "l")).await);
    assert_eq!(e["error"]["code"], "CONFLICT", "{e}");
    assert!(
        e["error"]["details"]["running_for_ms"].as_u64().is_some(),
        "{e}"
    );
    assert_eq!(creates(), 2, "nothing ran");
    proxy.release();
    let (ran, refused, took) =
        retry_until_ok(&cb, create("lost", "l"), Duration::from_secs(5)).await;
    eprintln!(
        "lost replies: B's retry ran {took:?} after the proxy released ({} refused first)",
        refused.len()
    );
    assert!(
        refused.iter().all(|e| e["error"]["code"] == "CONFLICT"),
        "{refused:#?}"
    );
    assert_eq!(creates(), 3, "the write ran once: {}", text(&ran));
    let again = call(&ca, "tool_exec", create("lost", "l")).await;
    assert_eq!(again.content, ran.content, "A replays B's result");
    assert_eq!(creates(), 3);

    // A's own connection is whole again: a new keyed write there runs at its first try.
    let started = Instant::now();
    let fresh = call(&ca, "tool_exec", create("after", "f")).await;
    assert_ne!(fresh.is_error, Some(true), "{}", text(&fresh));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(creates(), 4);
    drop((ca, cb));
    assert!(a.stop().success());
    assert!(b.stop().success());
}

/// A downstream client with a model: it answers sampling requests with a fixed message.
#[derive(Clone)]
struct ModelClient;

#[allow(deprecated)] // sampling is deprecated by SEP-2577; servers in use still send it
impl rmcp::ClientHandler for ModelClient {
    fn get_info(&self) -> rmcp::model::ClientInfo {
        let mut caps = rmcp::model::ClientCapabilities::default();
        caps.sampling = Some(Default::default());
        rmcp::model::ClientInfo::new(caps, rmcp::model::Implementation::new("test-host", "1"))
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let asked = serde_json::to_string(&params.messages).unwrap();
        Ok(rmcp::model::CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text(format!(
                "sampled by the test host; asked {}",
                asked.contains("a haiku about gateways")
            )),
            "test-model".into(),
        ))
    }
}

/// Issue 21: `import mcp` declares the client capabilities toolreg honours, so the reference
/// `server-everything` lists its capability-gated tools (13 to a bare client, 17 here), and
/// `serve` honours them: roots come from `--root`, sampling goes to the stdio client whose call
/// is in progress, and a client without sampling gets an error saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capability_gated_tools_are_imported_and_honoured() {
    let m = modules();
    let tmp = tempfile::tempdir().unwrap();
    let (defs, gen, files) = (
        tmp.path().join("defs"),
        tmp.path().join("gen"),
        tmp.path().join("my files"),
    );
    std::fs::create_dir_all(&files).unwrap();
    let script = m.join("server-everything/dist/index.js");
    let script = script.to_str().unwrap();
    let import = |name: &str, extra: &[&str]| {
        let mut args = vec!["import", "mcp", name, "-d", defs.to_str().unwrap()];
        args.extend(extra);
        args.extend(["--", "node", script, "stdio"]);
        let out = toolreg(&args);
        assert!(out.status.success(), "{}", common::stderr(&out));
        let snapshot: Value =
            serde_json::from_slice(&std::fs::read(defs.join(format!("{name}.mcp.json"))).unwrap())
                .unwrap();
        tool_names(&snapshot)
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let bare = import("plain", &[]);
    let rooted = import("everything", &["--root", files.to_str().unwrap()]);
    for gated in [
        "trigger-sampling-request",
        "trigger-elicitation-request",
        "trigger-url-elicitation",
    ] {
        assert!(bare.contains(&gated.to_string()), "{gated}: {bare:?}");
    }
    assert!(!bare.iter().any(|t| t == "get-roots-list"), "{bare:?}");
    assert!(rooted.iter().any(|t| t == "get-roots-list"), "{rooted:?}");
    assert_eq!(rooted.len(), 17, "{rooted:?}");
    assert_eq!(bare.len(), 16, "{bare:?}");
    let overlay = std::fs::read_to_string(defs.join("toolreg.toml")).unwrap();
    let canonical = std::fs::canonicalize(&files).unwrap();
    assert!(
        overlay.contains(&format!("roots = [\"{}\"]", canonical.display())),
        "{overlay}"
    );
    std::fs::remove_file(defs.join("plain.mcp.json")).unwrap();
    let mut doc: toml::Table = overlay.parse().unwrap();
    doc["upstreams"].as_table_mut().unwrap().remove("plain");
    std::fs::write(defs.join("toolreg.toml"), doc.to_string()).unwrap();
    let out = build(&defs, &gen);
    assert!(out.status.success(), "build: {}", common::stderr(&out));

    let serve = || {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
        cmd.args(["serve", "--registry", gen.to_str().unwrap()])
            .args(["--surface", "direct"])
            .env("TOOLREG_APPROVALS", approvals());
        rmcp::transport::TokioChildProcess::new(cmd).unwrap()
    };
    let host = ModelClient.serve(serve()).await.unwrap();
    let listed = host.list_tools(None).await.unwrap();
    let names: Vec<String> = listed.tools.iter().map(|t| t.name.to_string()).collect();
    let by_suffix = |s: &str| {
        names
            .iter()
            .find(|n| n.ends_with(s))
            .unwrap_or_else(|| panic!("no tool ending in {s}: {names:?}"))
            .clone()
    };
    let (sampling, roots) = (
        by_suffix("trigger-sampling-request"),
        by_suffix("get-roots-list"),
    );
    let call = |c: &RunningService<RoleClient, ModelClient>, tool: &str, args: Value| {
        let Value::Object(args) = args else { panic!() };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let peer = c.peer().clone();
        async move { peer.call_tool(params).await.unwrap() }
    };
    let sampled = call(
        &host,
        &sampling,
        json!({"prompt": "a haiku about gateways", "maxTokens": 20}),
    )
    .await;
    assert_ne!(sampled.is_error, Some(true), "{}", text(&sampled));
    assert!(
        text(&sampled).contains("sampled by the test host; asked true"),
        "{}",
        text(&sampled)
    );
    let listed_roots = call(&host, &roots, json!({})).await;
    assert!(
        text(&listed_roots).contains(&format!(
            "file://{}",
            canonical.display().to_string().replace(' ', "%20")
        )),
        "{}",
        text(&listed_roots)
    );
    host.cancel().await.unwrap();

    // A client without a model: the server is told why, and says so in its result.
    let bare_client = ().serve(serve()).await.unwrap();
    let Value::Object(args) = json!({"prompt": "hi", "maxTokens": 5}) else {
        panic!()
    };
    let refused = bare_client
        .call_tool(CallToolRequestParams::new(sampling).with_arguments(args))
        .await
        .unwrap();
    assert!(
        text(&refused).contains("does not support sampling"),
        "{}",
        text(&refused)
    );
    bare_client.cancel().await.unwrap();
}

/// Issue 24, item 2: the first-five-minutes path `import mcp` -> `init --force` -> `build` ->
/// `serve` keeps the upstream (and every other table init does not draft, with its comments),
/// so an imported tool is still called, not NOT_IMPLEMENTED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_after_import_keeps_the_upstreams_and_serve_calls_them() {
    let m = modules();
    let tmp = tempfile::tempdir().unwrap();
    let (defs, gen) = (tmp.path().join("defs"), tmp.path().join("gen"));
    let script = m.join("server-memory/dist/index.js");
    let out = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args([
            "import",
            "mcp",
            "memory",
            "-d",
            defs.to_str().unwrap(),
            "--env",
            "MEMORY_FILE_PATH",
            "--",
            "node",
            script.to_str().unwrap(),
        ])
        .env("TOOLREG_APPROVALS", approvals())
        .env("MEMORY_FILE_PATH", tmp.path().join("memory.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let overlay = defs.join("toolreg.toml");
    let mut hand = std::fs::read_to_string(&overlay).unwrap();
    hand.push_str(
        "\n# Hybrid ranking, tuned by hand.\n[search]\nsemantic_weight = 0.4 # measured on our queries\n\n\
         [access.scopes.\"tools:read\"]\nops = [\"memory.*\"]\n",
    );
    std::fs::write(&overlay, &hand).unwrap();

    let out = toolreg(&["init", "--force", "-d", defs.to_str().unwrap()]);
    let said = common::stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("kept from the old overlay: [upstreams], [search], [access]"),
        "{said}"
    );
    let after = std::fs::read_to_string(&overlay).unwrap();
    for kept in [
        "[upstreams.memory]",
        "# Hybrid ranking, tuned by hand.",
        "semantic_weight = 0.4 # measured on our queries",
        "[access.scopes.\"tools:read\"]",
    ] {
        assert!(after.contains(kept), "{kept} lost:\n{after}");
    }
    assert!(after.contains("[groups."), "the draft is there:\n{after}");

    let out = build(&defs, &gen);
    assert!(out.status.success(), "build: {}", common::stderr(&out));
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
    cmd.args(["serve", "--registry", gen.to_str().unwrap()])
        .env("MEMORY_FILE_PATH", tmp.path().join("memory.jsonl"))
        .env("TOOLREG_APPROVALS", approvals());
    let c = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let graph = exec(&c, "memory.graph.read", json!({})).await;
    assert_ne!(graph.is_error, Some(true), "{}", text(&graph));
    assert!(text(&graph).contains("entities"), "{}", text(&graph));
    c.cancel().await.unwrap();

    // An overlay init cannot read is never replaced.
    std::fs::write(&overlay, "[upstreams.memory\ncommand = ").unwrap();
    let out = toolreg(&["init", "--force", "-d", defs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("nothing was written"));
    assert_eq!(
        std::fs::read_to_string(&overlay).unwrap(),
        "[upstreams.memory\ncommand = "
    );
}

/// Issue 24, item 4: `serve` after a build killed between its commit's renames finishes the
/// commit and lists the new surface (stamped with its own version); a folder that mixes two
/// builds without a journal (surfaces older than registry.json) is refused, not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_finishes_an_interrupted_build_and_refuses_a_mixed_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (a, b) = (root.join("a"), root.join("b"));
    synthetic::write_catalog(&a, 120);
    synthetic::write_catalog(&b, 60);
    let built = |defs: &Path, out: &Path| {
        let o = build(defs, out);
        assert!(o.status.success(), "{}", common::stderr(&o));
    };
    let (gen, new) = (root.join("gen"), root.join("new"));
    built(&a, &gen);
    built(&b, &new);
    common::interrupt_after_commit(&gen, &new, &["help.json", "registry.json"]);

    let options = || toolreg::serve::ServeOptions {
        approvals: Some(toolreg::trust::Approvals::allow_all()),
        ..Default::default()
    };
    let direct = toolreg::serve::SurfaceChoice::Direct;
    let refused = toolreg::serve::Server::load_with(&gen, &direct, options())
        .err()
        .expect("a half-committed folder is refused");
    assert!(refused.to_string().contains("interrupted"), "{refused}");

    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
    cmd.args(["serve", "--registry", gen.to_str().unwrap()])
        .args(["--surface", "direct"])
        .env("TOOLREG_APPROVALS", approvals());
    let c = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let listed = c.list_tools(None).await.unwrap();
    let version = listed.meta.unwrap().0["toolreg/registry_version"].clone();
    let new_reg: Value =
        serde_json::from_slice(&std::fs::read(new.join("registry.json")).unwrap()).unwrap();
    assert_eq!(version, new_reg["registry_version"]);
    assert_eq!(listed.tools.len(), 60, "the new surface, whole");
    c.cancel().await.unwrap();

    // Surfaces of the old build beside the new registry, no journal: refused with the reason.
    let old = root.join("old");
    built(&a, &old);
    std::fs::copy(
        old.join("surfaces/direct.json"),
        gen.join("surfaces/direct.json"),
    )
    .unwrap();
    let refused = toolreg::serve::Server::load_with(&gen, &direct, options())
        .err()
        .expect("a mixed folder is refused");
    assert!(
        refused.to_string().contains("mixes two builds"),
        "{refused}"
    );
    let out = toolreg(&[
        "serve",
        "--registry",
        gen.to_str().unwrap(),
        "--surface",
        "direct",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("mixes two builds"));
}

/// Issue 35, item 7: idempotency keys belong to their caller. Two principals of one server (a
/// token file, the real memory server upstream): B sending A's key with A's arguments runs the
/// op itself and never gets A's result; B sending A's key while A's call runs is not told the
/// key is in use; A's repeat still replays A's own result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_are_scoped_by_principal() {
    let w = world();
    let mut file = String::new();
    let mut tokens = Vec::new();
    for name in ["alice", "bob"] {
        let out = Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args(["token", name, "--scope", "tools"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        tokens.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        file.push_str(&common::stderr(&out));
    }
    let path = w.root.join("tokens.toml");
    std::fs::write(&path, file).unwrap();
    let server = Replica::start(&w, &["--auth-tokens", path.to_str().unwrap()]);
    let connect = |token: String| {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let config =
            StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(token);
        ().serve(rmcp::transport::StreamableHttpClientTransport::from_config(
            config,
        ))
    };
    let alice = connect(tokens[0].clone()).await.unwrap();
    let bob = connect(tokens[1].clone()).await.unwrap();
    let create = |key: &str, name: &str| {
        json!({"op": "memory.entity.create", "idempotency_key": key,
               "args": {"entities": [{"name": name, "entityType": "secret", "observations": ["alice's"]}]}})
    };
    let creates = || {
        w.calls("memory")
            .iter()
            .filter(|c| *c == "create_entities")
            .count()
    };
    // Alice's keyed write runs.
    let ra = call(&alice, "tool_exec", create("order-1", "alice-data")).await;
    assert_ne!(ra.is_error, Some(true), "{}", text(&ra));
    assert_eq!(creates(), 1);
    // Bob sends alice's key with alice's arguments: it runs for bob; no replay of alice's answer.
    let rb = call(&bob, "tool_exec", create("order-1", "alice-data")).await;
    assert_ne!(rb.is_error, Some(true), "{}", text(&rb));
    let meta = rb.meta.as_ref().unwrap().0["toolreg"].to_string();
    assert!(!meta.contains("replayed"), "bob got alice's result: {meta}");
    assert_eq!(creates(), 2, "it ran for bob");
    // Both send one key at once (the upstream holds the call 0.8 s): neither is refused, so bob
    // cannot squat alice's key or learn that it is in use.
    let (ra2, rb2) = tokio::join!(
        call(&alice, "tool_exec", create("order-2", "alice-two")),
        call(&bob, "tool_exec", create("order-2", "bob-two"))
    );
    assert_ne!(ra2.is_error, Some(true), "{}", text(&ra2));
    assert_ne!(rb2.is_error, Some(true), "bob was told: {}", text(&rb2));
    assert_eq!(creates(), 4);
    // Alice's repeat replays alice's own first result.
    let again = call(&alice, "tool_exec", create("order-1", "alice-data")).await;
    assert_eq!(again.content, ra.content);
    let meta = again.meta.as_ref().unwrap().0["toolreg"].to_string();
    assert!(meta.contains("replayed"), "{meta}");
    assert_eq!(creates(), 4);
    drop((alice, bob));
    assert!(server.stop().success());
}

/// A client that keeps the progress notifications it receives (operation events).
#[derive(Clone, Default)]
struct Progress(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

/// Issue 38 end to end: `[gateway] batch = true` offers tool_batch; a model's first use of an op
/// is one round trip (help and exec in one call, answered as the two calls alone); a failed
/// write stops the writes after it before they reach the upstream; each item is an audit line;
/// list answers say how long they hold under both lifecycles; a progress token gets the
/// operation's events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_one_round_trip_and_lists_say_how_long_they_hold() {
    use rmcp::service::ClientServiceExt;
    let w = world();
    let overlay = w.defs.join("toolreg.toml");
    let mut text_ = std::fs::read_to_string(&overlay).unwrap();
    text_.push_str("\n[gateway]\nbatch = true\n");
    std::fs::write(&overlay, text_).unwrap();
    let out = build(&w.defs, &w.gen);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let reg = toolreg::Registry::from_path(w.gen.join("registry.json")).unwrap();
    let op = |tool: &str| reg.op_by_tool_name(tool).unwrap().op.clone();
    let (create, observe, relate) = (
        op("create_entities"),
        op("add_observations"),
        op("create_relations"),
    );
    let audit = w.root.join("audit.jsonl");
    let spawn = || {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
        cmd.args(["serve", "--registry", w.gen.to_str().unwrap()])
            .args(["--audit", audit.to_str().unwrap()])
            .env("MEMORY_FILE_PATH", w.root.join("memory.jsonl"))
            .env("TOOLREG_APPROVALS", approvals());
        rmcp::transport::TokioChildProcess::new(cmd).unwrap()
    };

    // tools/list under the 2025-11-25 handshake and under 2026-07-28 (server/discover): the four
    // gateway tools, public (no [access]) and fresh for a day (stdio: the process's life).
    let progress = Progress::default();
    let c = progress.clone().serve(spawn()).await.unwrap();
    let modern = ().serve_with_lifecycle(
        spawn(),
        rmcp::service::ClientLifecycleMode::Discover {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        },
    );
    let modern = modern.await.expect("server/discover under 2026-07-28");
    for (lifecycle, client_list) in [
        ("2025-11-25", c.list_tools(None).await.unwrap()),
        ("2026-07-28", modern.list_tools(None).await.unwrap()),
    ] {
        let names: Vec<&str> = client_list.tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            ["tool_help", "tool_exec", "tool_search", "tool_batch"],
            "{lifecycle}"
        );
        assert_eq!(client_list.ttl_ms, Some(86_400_000), "{lifecycle}");
        assert_eq!(
            client_list.cache_scope,
            Some(rmcp::model::CacheScope::Public),
            "{lifecycle}"
        );
    }
    modern.cancel().await.unwrap();

    // First use of an op in one round trip: its help page and the call, answered as alone.
    let entity = json!({"entities": [{"name": "toolreg", "entityType": "project", "observations": ["compiles catalogs"]}]});
    let both = call(
        &c,
        "tool_batch",
        json!({"items": [{"help": {"path": create}}, {"exec": {"op": create, "args": entity}}]}),
    )
    .await;
    assert_ne!(both.is_error, Some(true), "{}", text(&both));
    let items = both.structured_content.as_ref().unwrap()["items"].clone();
    let help_alone = call(&c, "tool_help", json!({"path": create})).await;
    assert_eq!(items[0], help_alone.structured_content.unwrap());
    assert_eq!(items[1]["ok"], true, "{}", items[1]);
    assert!(items[1]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("toolreg"));
    assert_eq!(
        w.calls("memory").len(),
        1,
        "the exec item reached the server once"
    );

    // A failed write stops the writes after it: the third never reaches the server.
    let before = w.calls("memory").len();
    let three = call(
        &c,
        "tool_batch",
        json!({"items": [
            {"exec": {"op": create, "args": {"entities": [{"name": "gateway", "entityType": "idea", "observations": []}]}}},
            {"exec": {"op": observe, "args": {"observations": [{"entityName": "no such entity", "contents": ["x"]}]}}},
            {"exec": {"op": relate, "args": {"relations": [{"from": "toolreg", "to": "gateway", "relationType": "serves"}]}}},
        ]}),
    )
    .await;
    assert_eq!(three.is_error, Some(true));
    let items = three.structured_content.as_ref().unwrap()["items"].clone();
    assert_eq!(items[0]["ok"], true, "{}", items[0]);
    assert_eq!(items[1]["ok"], false, "{}", items[1]);
    assert_eq!(items[2]["error"]["code"], "SKIPPED", "{}", items[2]);
    let reached: Vec<String> = w.calls("memory")[before..].to_vec();
    assert_eq!(reached.len(), 2, "{reached:?}");
    assert!(
        !reached.iter().any(|c| c.contains("create_relations")),
        "{reached:?}"
    );

    // A bad batch is one envelope and runs nothing.
    let before = w.calls("memory").len();
    let nested = call(
        &c,
        "tool_batch",
        json!({"items": [{"exec": {"op": create, "args": entity}}, {"batch": {"items": []}}]}),
    )
    .await;
    assert_eq!(envelope(&nested)["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(w.calls("memory").len(), before);

    // Operation events as progress notifications, for a client that sends a progress token.
    let mut params = CallToolRequestParams::new("tool_exec").with_arguments(
        json!({"op": create, "args": {"entities": [{"name": "events", "entityType": "idea", "observations": []}]}})
            .as_object()
            .unwrap()
            .clone(),
    );
    rmcp::model::RequestParamsMeta::set_progress_token(
        &mut params,
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(7)),
    );
    let r = c.call_tool(params).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let operation = &r.meta.as_ref().unwrap().0["toolreg"]["operation"];
    assert_eq!(operation["action"], "create", "{operation}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while progress.0.lock().unwrap().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let heard = progress.0.lock().unwrap().clone();
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert!(
        heard[0].starts_with("Creating ") && heard[1].starts_with("Created "),
        "{heard:?}"
    );
    c.cancel().await.unwrap();

    // The audit log has a line per item and one for each batch.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools: Vec<&str> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools.iter().filter(|t| **t == "tool_batch").count(),
        3,
        "{tools:?}"
    );
    let execs: Vec<&Value> = lines.iter().filter(|l| l["tool"] == "tool_exec").collect();
    // 1 (first batch) + 2 run (second; the skipped one never became a call) + 1 alone
    assert_eq!(execs.len(), 4, "{lines:?}");
    assert!(lines.iter().any(|l| l["tool"] == "tool_help"));
}
