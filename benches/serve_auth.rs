//! What authentication costs a call of `toolreg serve --http`: the same `tool_search` call, as
//! raw HTTP POSTs on loopback, against three servers started in this run over the example
//! catalog: no authentication, a token file (blake3 + constant-time compare) and OAuth (a JWT
//! from the certified OpenID provider in tests/oidc, signature and claims checked per request).
//! Medians and ratios of one run.
//!
//! `cargo bench --features oauth --bench serve_auth` (500 calls each); `-- --quick` for CI.

#[path = "../tests/common/mod.rs"]
mod common;

use common::Procs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const RESOURCE: &str = "http://tools.test/mcp";

fn serve(procs: &mut Procs, gen: &Path, extra: &[&str]) -> String {
    let (child, url) = common::serve_http(gen, extra, &[], None);
    procs.0.push(child);
    url
}

async fn median(http: &reqwest::Client, url: &str, token: Option<&str>, n: usize) -> Duration {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"list tasks of a project"}}}"#;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let mut req = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let t = Instant::now();
        let r = req.send().await.unwrap();
        let status = r.status();
        let _ = r.bytes().await.unwrap();
        times.push(t.elapsed());
        assert!(status.is_success(), "{status}");
    }
    times.sort();
    times[n / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 30 } else { 500 };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut procs = Procs(Vec::new());
    let (provider, issuer) = common::oidc_provider(RESOURCE);
    procs.0.push(provider);

    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(["token", "bench", "--scope", "tools:read"])
        .output()
        .unwrap();
    let file_token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let tokens = tmp.path().join("tokens.toml");
    std::fs::write(&tokens, String::from_utf8_lossy(&out.stderr).as_bytes()).unwrap();
    let gen = repo.join("generated");
    let http = reqwest::Client::new();
    let jwt = common::oidc_token(&issuer, "reader", "tools:read", RESOURCE).await;

    let open = serve(&mut procs, &gen, &[]);
    let file = serve(
        &mut procs,
        &gen,
        &["--auth-tokens", tokens.to_str().unwrap()],
    );
    let oauth = serve(
        &mut procs,
        &gen,
        &["--oauth-issuer", &issuer, "--resource-url", RESOURCE],
    );
    // Warm up each, then measure them interleaved in rounds, so drift hits all three alike.
    for (url, t) in [
        (&open, None),
        (&file, Some(&file_token)),
        (&oauth, Some(&jwt)),
    ] {
        median(&http, url, t.map(String::as_str), 10).await;
    }
    let rounds = 5;
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(median(&http, &open, None, n / rounds).await);
        b.push(median(&http, &file, Some(&file_token), n / rounds).await);
        c.push(median(&http, &oauth, Some(&jwt), n / rounds).await);
    }
    let mid = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (a, b, c) = (mid(a), mid(b), mid(c));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "tool_search over HTTP, median of {rounds} round medians ({n} calls each): no auth {:.3} ms, token file {:.3} ms (x{:.2}, +{:.3} ms), OAuth JWT {:.3} ms (x{:.2}, +{:.3} ms)",
        ms(a),
        ms(b),
        ms(b) / ms(a),
        ms(b) - ms(a),
        ms(c),
        ms(c) / ms(a),
        ms(c) - ms(a)
    );
}
