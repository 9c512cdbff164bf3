//! Cold CLI benchmark (issue 33): `toolreg help OP`, `toolreg exec OP` and `toolreg search Q` as a
//! fresh process on registries of 2,500 and 10,000 synthetic ops, with the build's index and
//! without it, interleaved in one run: for help and exec `lookup.json` (a command that needs one
//! op or page reads only that; without it the whole registry is parsed), for search
//! `search.json` (without it search builds its index). With the `mcp` feature, `toolreg serve`
//! from start to its first `tools/list` answer, with `lookup.json` (a deferred start: the list
//! comes from the registry's head and the surface while a thread loads the registry; help pages
//! are read when asked) and without it (registry.json and help.json parsed before serving), and
//! to the answer of its first call (help at the root), which after a deferred start waits for
//! the registry. Prints the median wall time and peak RSS of each.
//!
//! Each command runs in a child of this binary (`--child`), so its peak is its own.
//! `cargo bench --bench cold`; `-- --quick` runs 1,000 ops, three rounds (CI).

use std::process::Command;
use std::time::Instant;

#[path = "support/synthetic.rs"]
mod synthetic;

/// Peak resident set size of this process's largest finished child (Linux: KiB).
fn children_peak_kib() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0;
    }
    usage.ru_maxrss.max(0) as u64
}

/// Child mode: run toolreg with `args`, print `peak_kib <k>`. `serve ...` is started over
/// stdio, asked `initialize` and `tools/list`, and stopped once it has answered.
fn child(args: &[String]) {
    if args.first().map(String::as_str) == Some("serve") {
        serve_child(args);
        return;
    }
    let o = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .output()
        .unwrap();
    // An answer either way: exit 1 is an envelope with an error (`{}` for an op that needs
    // arguments), as measured as a success.
    assert!(
        matches!(o.status.code(), Some(0 | 1)) && !o.stdout.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    println!("peak_kib {}", children_peak_kib());
}

/// `toolreg serve` over stdio until its first `tools/list` answer (the time reported: start to
/// that answer); then its stdin closes and it exits.
fn serve_child(args: &[String]) {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let start = Instant::now();
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    for message in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cold-bench","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let answer = |lines: &mut dyn Iterator<Item = std::io::Result<String>>, id: &str| {
        let id = format!(r#""id":{id}"#);
        lines.map(Result::unwrap).find(|l| l.contains(&id))
    };
    let list = answer(&mut lines, "2").expect("serve answered no tools/list");
    let listed = start.elapsed().as_secs_f64();
    // Then the first call (help at the root): after a deferred start it waits for the registry.
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let help = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|n| n.ends_with("help"))
        .expect("a help tool")
        .to_string();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": help, "arguments": {"path": "root"}}});
    writeln!(stdin, "{call}").unwrap();
    answer(&mut lines, "3").expect("serve answered no tools/call");
    let called = start.elapsed().as_secs_f64();
    drop(stdin);
    server.wait().unwrap();
    println!(
        "peak_kib {} answered_secs {listed} first_call_secs {called}",
        children_peak_kib()
    );
}

/// One cold command: wall seconds (process start included) and peak MiB; for serve, seconds to
/// its first `tools/list` answer, and to its first call's answer.
fn run(args: &[&str]) -> (f64, f64, Option<f64>) {
    let start = Instant::now();
    let o = Command::new(std::env::current_exe().unwrap())
        .arg("--child")
        .args(args)
        .output()
        .unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let words: Vec<&str> = text.split_whitespace().collect();
    let kib: f64 = words[1].parse().unwrap();
    // serve's own figure is start to answer, not to exit.
    let secs = words.get(3).map_or(secs, |s| s.parse().unwrap());
    let first_call = words.get(5).map(|s| s.parse().unwrap());
    (secs, kib / 1024.0, first_call)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..]);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (sizes, rounds): (&[usize], usize) = if quick {
        (&[1_000], 3)
    } else {
        (&[2_500, 10_000], 7)
    };
    println!("toolreg cold CLI benchmark: median of {rounds} runs each, wall ms / peak MiB");
    println!(
        "{:>7} {:<8} {:>22} {:>22} {:>8}",
        "ops", "command", "without the index", "with it", "ratio"
    );
    for &n in sizes {
        let tmp = tempfile::tempdir().unwrap();
        let (defs, out) = (tmp.path().join("defs"), tmp.path().join("out"));
        synthetic::write_catalog(&defs, n);
        let built = Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args([
                "build",
                "--emit",
                "registry,help,search,surfaces",
                "--definitions",
            ])
            .arg(&defs)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let reg = toolreg::Registry::from_path(out.join("registry.json")).unwrap();
        let op = reg.ops.keys().nth(n / 2).unwrap().clone();
        let registry = out.join("registry.json");
        let registry = registry.to_str().unwrap();
        let index = out.join("lookup.json");
        let kept = tmp.path().join("lookup.json");
        #[cfg(feature = "mcp")]
        let out_dir = out.to_str().unwrap();
        #[allow(unused_mut)]
        let mut commands: Vec<(&str, Vec<&str>)> = vec![
            ("help", vec!["help", &op, "--registry", registry]),
            (
                "exec",
                vec!["exec", &op, "--args", "{}", "--registry", registry],
            ),
            (
                "search",
                vec!["search", "list the tasks", "--registry", registry],
            ),
        ];
        // Start to the first tools/list answer; serve reads help pages through lookup.json.
        #[cfg(feature = "mcp")]
        commands.push(("serve", vec!["serve", "--registry", out_dir]));
        let search_index = out.join("search.json");
        let search_kept = tmp.path().join("search.json");
        for (name, cmd) in &commands {
            // help, exec and serve read lookup.json; search reads search.json.
            let (index, kept) = if *name == "search" {
                (&search_index, &search_kept)
            } else {
                (&index, &kept)
            };
            let (mut before, mut after) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                // Interleaved: without the index, then with it.
                std::fs::rename(index, kept).unwrap();
                before.push(run(cmd));
                std::fs::rename(kept, index).unwrap();
                after.push(run(cmd));
            }
            type Run = (f64, f64, Option<f64>);
            let ms = |v: &[Run]| median(v.iter().map(|r| r.0 * 1e3).collect());
            let mib = |v: &[Run]| median(v.iter().map(|r| r.1).collect());
            println!(
                "{n:>7} {name:<8} {:>10.1} ms {:>6.1} MiB {:>10.1} ms {:>6.1} MiB {:>7.1}x",
                ms(&before),
                mib(&before),
                ms(&after),
                mib(&after),
                ms(&before) / ms(&after),
            );
            let call = |v: &[Run]| median(v.iter().filter_map(|r| r.2).map(|s| s * 1e3).collect());
            if before.iter().all(|r| r.2.is_some()) {
                println!(
                    "{n:>7} {:<8} {:>10.1} ms {:>17.1} ms",
                    "1st call",
                    call(&before),
                    call(&after)
                );
            }
        }
    }
}
