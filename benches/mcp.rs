//! MCP benchmark on the real reference servers (tests/mcp, installed by scripts/test):
//! tokens (o200k) of `toolreg serve`'s gateway `tools/list` versus the upstreams' combined
//! `tools/list`, and the per-call overhead of going through `toolreg serve` (validation,
//! envelope, forwarding) versus calling the upstream directly, as medians of the same call.
//!
//! `cargo bench --features mcp --bench mcp` (400 calls each); `-- --quick` for a short pass (CI).

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

type Client = RunningService<RoleClient, ()>;

async fn connect(cmd: tokio::process::Command) -> Client {
    let t = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    ().serve(t).await.unwrap()
}

fn tokens(v: &impl serde::Serialize) -> usize {
    bpe_openai::o200k_base().count(&serde_json::to_string(v).unwrap())
}

async fn median_call(c: &Client, tool: &str, args: Value, n: usize) -> Duration {
    let Value::Object(args) = args else { panic!() };
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = c
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args.clone()))
            .await
            .unwrap();
        times.push(t.elapsed());
        assert_ne!(r.is_error, Some(true));
    }
    times.sort();
    times[n / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 30 } else { 400 };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let m = repo.join("tests/mcp/node_modules/@modelcontextprotocol");
    assert!(m.is_dir(), "run `npm ci --prefix tests/mcp` first");
    let tmp = tempfile::tempdir().unwrap();
    let (defs, gen) = (tmp.path().join("defs"), tmp.path().join("gen"));
    std::fs::create_dir_all(tmp.path().join("files")).unwrap();
    let bin = env!("CARGO_BIN_EXE_toolreg");
    // `import mcp` approves what it runs; keep those approvals out of the user's own file.
    let approvals = tmp.path().join("approved-upstreams.toml");
    let memory = m.join("server-memory/dist/index.js");
    let filesystem = m.join("server-filesystem/dist/index.js");
    let files = tmp.path().join("files");
    // The memory server writes where MEMORY_FILE_PATH says: listed in its entry, since a stdio
    // upstream gets only the variables its entry lists.
    let memfile = tmp.path().join("memory.jsonl");
    for (name, env, args) in [
        (
            "memory",
            vec!["--env", "MEMORY_FILE_PATH"],
            vec![memory.to_str().unwrap()],
        ),
        (
            "filesystem",
            vec![],
            vec![filesystem.to_str().unwrap(), files.to_str().unwrap()],
        ),
    ] {
        let ok = std::process::Command::new(bin)
            .args(["import", "mcp", name, "-d", defs.to_str().unwrap()])
            .args(env)
            .args(["--", "node"])
            .args(args)
            .env("MEMORY_FILE_PATH", &memfile)
            .env("TOOLREG_APPROVALS", &approvals)
            .status()
            .unwrap()
            .success();
        assert!(ok, "import {name}");
    }
    let ok = std::process::Command::new(bin)
        .args([
            "build",
            "-d",
            defs.to_str().unwrap(),
            "--out",
            gen.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "build");

    let mut direct = tokio::process::Command::new("node");
    direct.arg(&memory).env("MEMORY_FILE_PATH", &memfile);
    let direct = connect(direct).await;
    let mut fs = tokio::process::Command::new("node");
    fs.arg(&filesystem).arg(&files);
    let fs = connect(fs).await;
    let mut serve = tokio::process::Command::new(bin);
    serve
        .args(["serve", "--registry", gen.to_str().unwrap()])
        .env("MEMORY_FILE_PATH", &memfile)
        .env("TOOLREG_APPROVALS", &approvals);
    let served = connect(serve).await;

    // Tokens of what a client puts in front of the model.
    let upstream_tools = [
        direct.list_all_tools().await.unwrap(),
        fs.list_all_tools().await.unwrap(),
    ]
    .concat();
    let gateway_tools = served.list_all_tools().await.unwrap();
    let (up, gw) = (tokens(&upstream_tools), tokens(&gateway_tools));
    println!(
        "tools/list (o200k tokens): upstreams combined {} tools {up}, toolreg serve gateway {} tools {gw} ({:.1}x fewer)",
        upstream_tools.len(),
        gateway_tools.len(),
        up as f64 / gw as f64
    );

    // Warm both paths, then the same call n times each, interleaved in one run.
    let read = json!({"names": ["nobody"]});
    let via = json!({"op": "memory.node.open", "args": read});
    median_call(&direct, "open_nodes", read.clone(), 5).await;
    median_call(&served, "tool_exec", via.clone(), 5).await;
    let d = median_call(&direct, "open_nodes", read, n).await;
    let s = median_call(&served, "tool_exec", via, n).await;
    println!(
        "open_nodes, median of {n} calls: direct {}, through toolreg serve {} (ratio {:.2}x, +{} per call)",
        ms(d),
        ms(s),
        s.as_secs_f64() / d.as_secs_f64(),
        ms(s.saturating_sub(d))
    );
    for c in [direct, fs, served] {
        let _ = c.cancel().await;
    }
}
