//! `toolreg serve --http` under a hostile upstream and hostile clients (issue 21): a 20 MB
//! result and output that never ends its line are refused at once with their own code and
//! bounded memory, a dying upstream's stderr secrets stay in the operator's log, 1,100 idle
//! connections do not keep another client out, and SIGTERM mid-request stops the server in
//! about 2 s. The upstream is tests/mcp/hostile-server.mjs, a real stdio MCP server.
#![cfg(feature = "mcp")]

mod common;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Served {
    child: std::process::Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peak_rss_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

fn start(root: &std::path::Path) -> (Served, Value) {
    start_with(root, &[])
}

/// `start`, with more `serve` flags.
fn start_with(root: &std::path::Path, extra: &[&str]) -> (Served, Value) {
    let approvals = root.join("approved.toml");
    let defs = root.join("defs");
    let gen = root.join("gen");
    let server = common::repo().join("tests/mcp/hostile-server.mjs");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args(args)
            .env("TOOLREG_APPROVALS", &approvals)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
    };
    run(&[
        "import",
        "mcp",
        "hostile",
        "-d",
        defs.to_str().unwrap(),
        "--timeout-ms",
        "30000",
        "--",
        "node",
        server.to_str().unwrap(),
    ]);
    run(&[
        "build",
        "-d",
        defs.to_str().unwrap(),
        "--out",
        gen.to_str().unwrap(),
    ]);
    let reg: Value =
        serde_json::from_slice(&std::fs::read(gen.join("registry.json")).unwrap()).unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (child, url) = common::serve_http(
        &gen,
        extra,
        &[("TOOLREG_APPROVALS", approvals.as_os_str())],
        Some(Arc::clone(&log)),
    );
    (Served { child, url, log }, reg)
}

async fn client(url: &str) -> RunningService<RoleClient, ()> {
    ().serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
        url.to_string(),
    ))
    .await
    .unwrap()
}

/// A loopback address with a port free right now (for `--metrics`).
fn free_address() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

fn op_of(reg: &Value, tool: &str) -> String {
    reg["ops"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, r)| r["tool_name"] == tool)
        .map(|(op, _)| op.clone())
        .unwrap()
}

async fn exec(c: &RunningService<RoleClient, ()>, op: &str) -> Value {
    exec_noting(c, op, "n").await
}

/// `tool_exec` of `op` with the argument `note`.
async fn exec_noting(c: &RunningService<RoleClient, ()>, op: &str, note: &str) -> Value {
    let args = json!({"op": op, "args": {"note": note}});
    let Value::Object(args) = args else {
        unreachable!()
    };
    let r = c
        .call_tool(CallToolRequestParams::new("tool_exec").with_arguments(args))
        .await
        .unwrap();
    serde_json::to_value(r).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_endless_upstream_output_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (served, reg) = start(tmp.path());
    let c = client(&served.url).await;
    for tool in ["big", "endless"] {
        let started = Instant::now();
        let r = exec(&c, &op_of(&reg, tool)).await;
        assert_eq!(r["isError"], true, "{tool}");
        assert_eq!(
            r["structuredContent"]["error"]["code"], "UPSTREAM_TOO_LARGE",
            "{tool}: {r}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{tool}: {:?}",
            started.elapsed()
        );
        // The next call gets a fresh session.
        let ok = exec(&c, &op_of(&reg, "echo")).await;
        assert_ne!(ok["isError"], true, "{ok}");
    }
    let peak = peak_rss_mb(served.child.id());
    assert!(peak < 400, "toolreg serve peaked at {peak} MB");
    eprintln!("peak RSS after a 50 MB result and 64 MB without a newline: {peak} MB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_stderr_secrets_stay_in_the_operators_log() {
    let tmp = tempfile::tempdir().unwrap();
    let (served, reg) = start(tmp.path());
    let c = client(&served.url).await;
    let r = exec(&c, &op_of(&reg, "leak")).await;
    let text = r.to_string();
    assert_eq!(
        r["structuredContent"]["error"]["code"], "UPSTREAM_UNAVAILABLE",
        "{r}"
    );
    for secret in ["sk-live-0123456789", "hunter2", "SECRET_TOKEN"] {
        assert!(
            !text.contains(secret),
            "{secret} reached the client: {text}"
        );
    }
    let incident = r["structuredContent"]["error"]["details"]["incident"]
        .as_str()
        .expect("the envelope points at the log")
        .to_string();
    std::thread::sleep(Duration::from_millis(200));
    let log = served.log.lock().unwrap().clone();
    assert!(log.contains(&incident) && log.contains("sk-live"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_shut_others_out_and_sigterm_stops_mid_request() {
    // This test opens 1,100 sockets itself: lift its own soft limit first.
    // SAFETY: getrlimit/setrlimit on a struct owned here.
    unsafe {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max.min(8192);
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
    }
    let tmp = tempfile::tempdir().unwrap();
    // Every socket here comes from 127.0.0.1, the client's own address: the per-peer cap is
    // lifted so this case measures the global one (the per-peer cap has its own test).
    let (mut served, reg) = start_with(tmp.path(), &["--max-connections-per-peer", "5000"]);
    let addr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let idle: Vec<std::net::TcpStream> = (0..1_100)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    let started = Instant::now();
    let c = client(&served.url).await;
    let listed = c.list_tools(None).await.unwrap();
    assert_eq!(listed.tools.len(), 3);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "served after {:?} beside 1,100 idle connections",
        started.elapsed()
    );
    drop(idle);

    // SIGTERM while a call waits on a slow upstream: gone within about 2 s.
    let slow = op_of(&reg, "slow");
    let pending = tokio::spawn(async move {
        let args = json!({"op": slow, "args": {}});
        let Value::Object(args) = args else {
            unreachable!()
        };
        // The server goes away under it: an error here is the point, not a failure.
        let _ = c
            .call_tool(CallToolRequestParams::new("tool_exec").with_arguments(args))
            .await;
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let signalled = Instant::now();
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(served.child.id() as i32, libc::SIGTERM);
    }
    let status = loop {
        if let Some(s) = served.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(6),
            "still running 6 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(4), "stopped after {took:?}");
    eprintln!("stopped {took:?} after SIGTERM mid-request ({status})");
    pending.abort();
}

/// `--rate-limit` shared through Redis: two replicas allow one caller the rate together, not
/// each; with Redis gone they fall back to their own buckets and keep serving.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_rate_limits_through_redis() {
    let tmp = tempfile::tempdir().unwrap();
    let mut redis = common::RedisServer::start();
    let (token, entry) = toolreg::serve::auth::new_token("busy", &[]).unwrap();
    let tokens = tmp.path().join("tokens.toml");
    std::fs::write(&tokens, entry).unwrap();
    let gen = common::repo().join("generated");
    let args = [
        "--auth-tokens",
        tokens.to_str().unwrap(),
        "--rate-limit",
        "5",
        "--limits",
        &redis.url,
    ];
    let mut procs = common::Procs(Vec::new());
    let mut urls = Vec::new();
    for _ in 0..2 {
        let (child, url) = common::serve_http(&gen, &args, &[], None);
        procs.0.push(child);
        urls.push(url);
    }
    let http = reqwest::Client::new();
    let post = |url: String| {
        let req = http
            .post(url)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    let started = Instant::now();
    let mut statuses = Vec::new();
    for i in 0..20 {
        statuses.push(post(urls[i % 2].clone()).await);
    }
    let took = started.elapsed().as_secs_f64();
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{statuses:?}"
    );
    // One shared bucket: 5 at once plus what refills while the 20 requests run. Two buckets of
    // their own would have allowed 10.
    let most = 5 + (took * 5.0).ceil() as usize;
    assert!(
        ok >= 5 && ok <= most && ok < 10,
        "{ok} of 20 in {took:.2} s: {statuses:?}"
    );

    // Redis gone: each replica's own bucket decides, and calls go on.
    redis.stop();
    std::thread::sleep(Duration::from_millis(1200));
    let after = post(urls[0].clone()).await;
    assert_eq!(after, 200, "served without Redis");
}

/// Issue 24, item 5: a server listing tools under names no file, terminal or model should carry
/// (a path, terminal escapes, tag characters, 5,000 characters): `import mcp` leaves each out of
/// the snapshot with an error at its JSON pointer, printed escaped, keeps the usable ones, and
/// `import --check` does not call them drift.
#[test]
fn import_leaves_out_tools_with_unusable_names() {
    let tmp = tempfile::tempdir().unwrap();
    let approvals = tmp.path().join("approved.toml");
    let defs = tmp.path().join("defs");
    let server = common::repo().join("tests/mcp/hostile-server.mjs");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args(args)
            .env("TOOLREG_APPROVALS", &approvals)
            .env("HOSTILE_NAMES", "1")
            .output()
            .unwrap()
    };
    let out = run(&[
        "import",
        "mcp",
        "hostile",
        "-d",
        defs.to_str().unwrap(),
        // The server reads HOSTILE_NAMES: a stdio upstream gets only what its entry lists.
        "--env",
        "HOSTILE_NAMES",
        "--",
        "node",
        server.to_str().unwrap(),
    ]);
    let said = common::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("imported 9 tools"), "{said}");
    assert_eq!(
        said.matches("left out of the snapshot").count(),
        4,
        "{said}"
    );
    assert!(said.contains("at /tools/9/name"), "{said}");
    assert!(said.contains("clear\\u{1b}[2J"), "{said}");
    assert!(said.contains("read\\u{e0049}"), "{said}");
    assert!(said.contains("5000 characters"), "{said}");
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{E0049}'),
        "raw escapes reached the terminal"
    );
    let snapshot = std::fs::read_to_string(defs.join("hostile.mcp.json")).unwrap();
    for bad in [
        "../../outside",
        "\\u001b",
        "\u{1b}",
        "\u{E0049}",
        "nnnnnnnnnn",
    ] {
        assert!(!snapshot.contains(bad), "{bad:?} reached the snapshot");
    }
    let out = run(&["import", "--check", "-d", defs.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let out = run(&[
        "build",
        "-d",
        defs.to_str().unwrap(),
        "--out",
        tmp.path().join("gen").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
}

/// Issue 25, item 2, on a real redis-server: 100 keyed writes whose results are 3.5 MB each are
/// not kept (Redis's own `used_memory` stays flat; it grew to 1.19 GB before), while a small
/// result is kept and replayed.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_store_keeps_neither_large_results_nor_arguments() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let redis = common::RedisServer::start();
    let used = || {
        let client = redis::Client::open(redis.url.as_str()).unwrap();
        let mut conn = client.get_connection().unwrap();
        let info: String = redis::cmd("INFO").arg("memory").query(&mut conn).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap()
    };
    let store = toolreg::serve::idempotency_store(&redis.url)
        .await
        .unwrap()
        .expect("a redis store");
    let dir = common::repo().join("generated");
    let mut gw = toolreg::runtime::Gateway::with_options(
        toolreg::Registry::from_path(dir.join("registry.json")).unwrap(),
        toolreg::help::HelpDoc::from_slice(&std::fs::read(dir.join("help.json")).unwrap()).unwrap(),
        toolreg::runtime::Options {
            idempotency_store: Some(store),
            ..Default::default()
        },
    )
    .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    gw.handle_sync("onto.task.create", move |args| {
        r.fetch_add(1, Ordering::SeqCst);
        let n = if args["title"] == "big" {
            3_500_000
        } else {
            10
        };
        Ok(json!({"log": "x".repeat(n)}))
    })
    .unwrap();
    let before = used();
    for i in 0..100 {
        let call = json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "big"}, "idempotency_key": format!("k{i}")});
        let env = gw.exec(toolreg::runtime::ExecCall::from_value(&call)).await;
        assert!(env.ok, "{}", env.to_json());
        assert!(env
            .meta
            .warnings
            .iter()
            .any(|w| w.contains("was not stored")));
    }
    let after = used();
    eprintln!("redis used_memory: {before} -> {after} bytes after 100 writes of 3.5 MB");
    assert!(after < before + (4 << 20), "{before} -> {after}");
    let small = json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "small"}, "idempotency_key": "s"});
    for _ in 0..2 {
        let env = gw
            .exec(toolreg::runtime::ExecCall::from_value(&small))
            .await;
        assert!(env.ok);
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        101,
        "the small result was replayed"
    );
}

/// Issue 25, item 3, the Redis store's own rules on a real redis-server: a "running" marker
/// whose owner was voided (its caller was told "not run") is taken over, once; one whose owner
/// was not is reported running, with its age; a key holding something toolreg did not write is
/// refused by name; abandon removes only the caller's own marker.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_store_takes_over_only_voided_markers() {
    use toolreg::runtime::idempotency::Seen;
    let redis = common::RedisServer::start();
    let mut conn = redis.connection();
    let store = toolreg::serve::idempotency_store(&redis.url)
        .await
        .unwrap()
        .expect("a redis store");
    let digest = Value::String(toolreg::runtime::idempotency::args_digest(&json!({"a": 1})));
    let plant = |conn: &mut redis::Connection, key: &str, owner: &str| {
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query(conn).unwrap();
        let since = secs * 1000 + micros / 1000 - 1500;
        let _: () = redis::cmd("HSET")
            .arg(format!("toolreg:idem:{key}"))
            .arg(&["op", "x.create", "args", &digest.to_string(), "done", "0"])
            .arg(&["owner", owner, "since", &since.to_string()])
            .query(conn)
            .unwrap();
    };

    plant(&mut conn, "orphan", "ghost-1");
    let _: () = redis::cmd("SET")
        .arg("toolreg:idem:void:ghost-1")
        .arg("1")
        .query(&mut conn)
        .unwrap();
    assert_eq!(
        store.begin("orphan", "x.create", &digest).await,
        Ok(Seen::TakenOver)
    );
    assert!(
        matches!(
            store.begin("orphan", "x.create", &digest).await,
            Ok(Seen::InFlight { .. })
        ),
        "taken over once: now it is this call's"
    );
    store.finish("orphan", &json!({"n": 5})).await.unwrap();
    assert_eq!(
        store.begin("orphan", "x.create", &digest).await,
        Ok(Seen::Replay(json!({"n": 5})))
    );

    plant(&mut conn, "busy", "alive-1");
    match store.begin("busy", "x.create", &digest).await {
        Ok(Seen::InFlight {
            running_for: Some(d),
        }) => assert!(
            d >= Duration::from_millis(1500) && d < Duration::from_secs(60),
            "{d:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.begin("busy", "x.other", &digest).await,
        Ok(Seen::Mismatch {
            op: "x.create".into()
        })
    );
    store.abandon("busy").await.unwrap();
    let kept: i64 = redis::cmd("EXISTS")
        .arg("toolreg:idem:busy")
        .query(&mut conn)
        .unwrap();
    assert_eq!(kept, 1, "abandon leaves another owner's marker alone");

    let _: () = redis::cmd("SET")
        .arg("toolreg:idem:foreign")
        .arg("hello")
        .query(&mut conn)
        .unwrap();
    let e = store
        .begin("foreign", "x.create", &digest)
        .await
        .unwrap_err();
    assert!(
        e.0.contains("toolreg:idem:foreign") && e.0.contains("string"),
        "{e}"
    );
}

/// Issue 35, item 10: an upstream names any error code it likes in its structuredContent; the
/// metrics and the audit log count it as UPSTREAM_ERROR, so 60 calls with 60 invented codes
/// add one series, and no upstream text reaches a label or an audit line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_error_codes_never_become_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let metrics = free_address();
    let audit = tmp.path().join("audit.jsonl");
    let (served, reg) = start_with(
        tmp.path(),
        &["--metrics", &metrics, "--audit", audit.to_str().unwrap()],
    );
    let c = client(&served.url).await;
    let op = op_of(&reg, "fail");
    for i in 0..60 {
        let r = exec_noting(&c, &op, &format!("invented_{i}")).await;
        assert_eq!(r["isError"], true, "{r}");
    }
    let text = reqwest::get(format!("http://{metrics}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("toolreg_calls_total{") && l.contains(&op))
        .collect();
    assert_eq!(
        series,
        [format!(
            "toolreg_calls_total{{code=\"UPSTREAM_ERROR\",op=\"{op}\"}} 60"
        )],
        "{text}"
    );
    assert!(!text.contains("invented_"), "{text}");
    // A client's own tool name reaches the audit log escaped and cut, never raw.
    let hostile = "\u{1b}[2J\u{202e}x".repeat(500);
    let r = c
        .call_tool(CallToolRequestParams::new(hostile.clone()))
        .await;
    assert!(r.is_err(), "an unknown tool is a protocol error");
    let log = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(
        log.lines().count(),
        61,
        "the unknown tool's call is audited too"
    );
    let last = log.lines().last().unwrap();
    assert!(last.contains("PROTOCOL_ERROR"), "{last}");
    assert!(
        !last.contains('\u{1b}') && !last.contains('\u{202e}'),
        "{last}"
    );
    assert!(last.len() < 2_000, "{} bytes", last.len());
    let log: String = log.lines().take(60).collect::<Vec<_>>().join("\n");
    assert_eq!(log.lines().count(), 60);
    assert!(!log.contains("invented_"), "{log}");
    assert!(
        log.lines()
            .all(|l| l.contains("\"code\":\"UPSTREAM_ERROR\"")),
        "{log}"
    );
}

/// Issue 35, item 3: one peer holds at most its share of connections (the rest are closed at
/// once), and a connection that trickles its request head a byte at a time is closed when the
/// head deadline passes, however often it sends; then a real client is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_heads_and_one_peers_flood_are_cut_off() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (served, _reg) = start_with(
        tmp.path(),
        &[
            "--max-connections-per-peer",
            "4",
            "--head-timeout-ms",
            "1500",
        ],
    );
    let addr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    // Four slow clients trickle a request head, a byte every 200 ms (the 60 s idle timeout
    // alone would keep them for ever).
    let mut slow: Vec<std::net::TcpStream> = (0..4)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    // A fifth from the same peer: closed at once (EOF, or a reset).
    let mut fifth = std::net::TcpStream::connect(&addr).unwrap();
    fifth
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut byte = [0u8; 1];
    let closed = matches!(fifth.read(&mut byte), Ok(0) | Err(_));
    assert!(closed, "a fifth connection from one peer was kept");
    let head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    let started = Instant::now();
    let mut cut = vec![false; slow.len()];
    for i in 0.. {
        for (k, s) in slow.iter_mut().enumerate() {
            if !cut[k] && s.write_all(&[head[i % head.len()]]).is_err() {
                cut[k] = true;
            }
        }
        if cut.iter().all(|c| *c) || started.elapsed() > Duration::from_secs(8) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        cut.iter().all(|c| *c),
        "trickling heads were still open after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    // Their places are free again: a real client is served.
    let c = client(&served.url).await;
    assert_eq!(c.list_tools(None).await.unwrap().tools.len(), 3);
}

/// Issue 35, left from before: the MCP endpoint refuses a browser Origin it was not told to
/// accept (DNS rebinding), two Host headers and a Host with user info; `--allowed-host` and
/// `--allowed-origin` values that could never match are refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origin_and_host_headers_are_checked() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (served, _reg) = start_with(tmp.path(), &["--allowed-origin", "http://localhost:6274"]);
    let addr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let status = |headers: &str| {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\n{headers}content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.split_whitespace().nth(1).unwrap_or("").to_string()
    };
    let host = format!("Host: {addr}\r\n");
    assert_eq!(status(&host), "200", "a plain request is served");
    assert_eq!(
        status(&format!("{host}Origin: http://localhost:6274\r\n")),
        "200",
        "an allowed origin"
    );
    let evil = status(&format!("{host}Origin: http://evil.example\r\n"));
    assert!(evil.starts_with('4'), "a foreign Origin got {evil}");
    assert_eq!(status(&format!("{host}{host}")), "400", "two Host headers");
    assert_eq!(
        status(&format!("Host: attacker@{addr}\r\n")),
        "400",
        "user info in Host"
    );
    // Settings that could never match, and the unauthenticated metrics listener beyond
    // loopback without its own flag, stop the start.
    for (extra, says) in [
        (["--metrics", "0.0.0.0:0"], "--metrics-beyond-loopback"),
        (["--allowed-host", "http://tools.example"], "--allowed-host"),
        (["--allowed-host", "tools.example/mcp"], "--allowed-host"),
        (["--allowed-origin", "tools.example"], "--allowed-origin"),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args(["serve", "--registry", "generated", "--http", "127.0.0.1:0"])
            .args(extra)
            .current_dir(common::repo())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{extra:?}: {}",
            common::stderr(&o)
        );
        assert!(
            common::stderr(&o).contains(says),
            "{extra:?}: {}",
            common::stderr(&o)
        );
    }
}

/// Issue 35, left from before: a line that is not JSON-RPC from an upstream mid-session is
/// dropped, the call is still answered, and the operator's log says so (escaped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_json_lines_from_an_upstream_are_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let (served, reg) = start(tmp.path());
    let c = client(&served.url).await;
    let r = exec(&c, &op_of(&reg, "noise")).await;
    assert_ne!(r["isError"], true, "{r}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = served.log.lock().unwrap().clone();
        if log.contains("not JSON-RPC") {
            assert!(
                log.contains("`hostile`") && log.contains("DEBUG: not json"),
                "{log}"
            );
            assert!(!log.contains('\u{1b}'), "raw escapes in the log: {log}");
            break;
        }
        assert!(Instant::now() < deadline, "no log line: {log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Issue 35, a low and one left from before: the metrics listener is bounded like the MCP one
/// (a peer's fifth connection is closed at once), and a body that is not one JSON-RPC message
/// gets the JSON-RPC error with HTTP 400, not the SDK's "415 Unsupported Media Type".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_bounded_and_bad_bodies_get_json_rpc_errors() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let metrics = free_address();
    let (served, _reg) = start_with(tmp.path(), &["--metrics", &metrics]);
    let held: Vec<std::net::TcpStream> = (0..4)
        .map(|_| std::net::TcpStream::connect(&metrics).unwrap())
        .collect();
    let mut fifth = std::net::TcpStream::connect(&metrics).unwrap();
    fifth
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(
        matches!(fifth.read(&mut byte), Ok(0) | Err(_)),
        "a fifth metrics connection from one peer was kept"
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let scraped = reqwest::get(format!("http://{metrics}/metrics"))
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);

    let http = reqwest::Client::new();
    let post = |body: String| {
        http.post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
    for (body, code) in [
        ("{\"jsonrpc\": \"2.0\", \"id\": 1,".to_string(), -32700),
        (deep, -32700),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#.to_string(),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"nothing":true}"#.to_string(),
            -32600,
        ),
    ] {
        let r = post(body.clone()).await.unwrap();
        assert_eq!(r.status(), 400, "{}", &body[..body.len().min(60)]);
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["error"]["code"], code, "{v}");
    }
    // A good request still goes through.
    let c = client(&served.url).await;
    assert_eq!(c.list_tools(None).await.unwrap().tools.len(), 3);
}

/// Issue 35, left from before: an upstream that answers a call with something that is no tool
/// result is reported as such (UPSTREAM_MALFORMED), and its session, which is alive, is kept:
/// it was reported UPSTREAM_UNAVAILABLE and torn down, so the next call started a new process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_result_is_named_and_the_session_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let (served, reg) = start_with(tmp.path(), &[]);
    let c = client(&served.url).await;
    let count = op_of(&reg, "count");
    let first = exec(&c, &count).await;
    assert_eq!(first["content"][0]["text"], "1", "{first}");
    let bad = exec(&c, &op_of(&reg, "malformed")).await;
    assert_eq!(bad["isError"], true, "{bad}");
    assert_eq!(
        bad["structuredContent"]["error"]["code"], "UPSTREAM_MALFORMED",
        "{bad}"
    );
    // The same process answers the next call: its third.
    let again = exec(&c, &count).await;
    assert_eq!(again["content"][0]["text"], "3", "{again}");
}
