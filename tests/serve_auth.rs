//! `toolreg serve --http` as an OAuth 2.1 resource server (issue 21), against a real, certified
//! OpenID provider on loopback (panva/oidc-provider, pinned in tests/oidc/package-lock.json,
//! installed by scripts/test) issuing client-credentials JWT access tokens, and with a static
//! token file: who may call, what each caller may see, and the answers the spec requires.
#![cfg(feature = "oauth")]

mod common;

use common::Procs;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const RESOURCE: &str = "http://tools.test/mcp";

fn provider(procs: &mut Procs) -> String {
    let (child, issuer) = common::oidc_provider(RESOURCE);
    procs.0.push(child);
    issuer
}

/// The example catalog with `[access]`: `tools:read` grants reads, `tools:write` everything.
fn registry(root: &Path) -> PathBuf {
    registry_without(root, None)
}

/// `registry`, with the write tool `removed` (of onto-write.json) left out of the catalog.
fn registry_without(root: &Path, removed: Option<&str>) -> PathBuf {
    registry_with(root, removed, "")
}

/// The example catalog with `[access]` and `extra` overlay text, without the tool `removed`.
fn registry_with(root: &Path, removed: Option<&str>, extra: &str) -> PathBuf {
    let defs = root.join("defs");
    common::copy_dir(&common::repo().join("definitions"), &defs);
    if let Some(name) = removed {
        let file = defs.join("onto-write.json");
        let mut tools: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let list = tools.as_array_mut().unwrap();
        let before = list.len();
        list.retain(|t| t["function"]["name"] != name);
        assert_eq!(list.len() + 1, before, "{name} is in onto-write.json");
        std::fs::write(&file, tools.to_string()).unwrap();
    }
    let overlay = defs.join("toolreg.toml");
    let mut text = std::fs::read_to_string(&overlay).unwrap();
    text.push_str(
        "\n[access.scopes.\"tools:read\"]\nkinds = [\"read\"]\n\n[access.scopes.\"tools:write\"]\nkinds = [\"read\", \"write\", \"destructive\"]\n",
    );
    text.push_str(extra);
    std::fs::write(&overlay, text).unwrap();
    let gen = root.join("gen");
    let out = common::toolreg(
        root,
        &[
            "build",
            "-d",
            defs.to_str().unwrap(),
            "--out",
            gen.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", common::stderr(&out));
    gen
}

fn serve(procs: &mut Procs, gen: &Path, extra: &[&str]) -> String {
    let (child, url) = common::serve_http(gen, extra, &[], None);
    procs.0.push(child);
    url
}

async fn minted(issuer: &str, case: &str) -> String {
    let r = reqwest::get(format!("{issuer}/test/mint?case={case}"))
        .await
        .unwrap();
    String::from_utf8(r.bytes().await.unwrap().to_vec()).unwrap()
}

/// A raw MCP `tools/list` POST: the status and the `WWW-Authenticate` header.
async fn raw_list(url: &str, token: Option<&str>) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let r = req.send().await.unwrap();
    let header = r
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (r.status().as_u16(), header)
}

async fn client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    ().serve(rmcp::transport::StreamableHttpClientTransport::from_config(
        config,
    ))
    .await
    .expect("an authenticated MCP client connects")
}

async fn call(c: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        unreachable!()
    };
    let r = c
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap();
    serde_json::to_value(&r).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_tokens_from_a_real_provider_decide_who_sees_and_runs_what() {
    let tmp = tempfile::tempdir().unwrap();
    let mut procs = Procs(Vec::new());
    let issuer = provider(&mut procs);
    let gen = registry(tmp.path());
    let url = serve(
        &mut procs,
        &gen,
        &["--oauth-issuer", &issuer, "--resource-url", RESOURCE],
    );
    let base = url.trim_end_matches("/mcp");

    // No token: 401 naming the metadata (RFC 9728), which says who issues tokens.
    let (status, header) = raw_list(&url, None).await;
    assert_eq!(status, 401);
    assert_eq!(
        header,
        "Bearer resource_metadata=\"http://tools.test/.well-known/oauth-protected-resource/mcp\""
    );
    let meta: Value = serde_json::from_slice(
        &reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["resource"], RESOURCE);
    assert_eq!(meta["authorization_servers"], json!([issuer]));
    // Published under another path by a proxy: the metadata is where the 401 says (RFC 9728
    // §3.1, the resource's path after the well-known one), not only at the default path.
    let proxied = "http://tools.test/gw/mcp";
    let behind = serve(
        &mut procs,
        &gen,
        &["--oauth-issuer", &issuer, "--resource-url", proxied],
    );
    let (status, header) = raw_list(&behind, None).await;
    assert_eq!(status, 401);
    assert!(
        header.contains("/.well-known/oauth-protected-resource/gw/mcp\""),
        "{header}"
    );
    let at = format!(
        "{}/.well-known/oauth-protected-resource/gw/mcp",
        behind.trim_end_matches("/mcp")
    );
    let moved: Value =
        serde_json::from_slice(&reqwest::get(&at).await.unwrap().bytes().await.unwrap()).unwrap();
    assert_eq!(moved["resource"], proxied);
    assert_eq!(
        meta["scopes_supported"],
        json!(["tools:read", "tools:write"])
    );

    // Tokens that must not pass, each with the spec's header.
    let good = common::oidc_token(&issuer, "writer", "tools:read tools:write", RESOURCE).await;
    let (status, _) = raw_list(&url, Some(&minted(&issuer, "valid").await)).await;
    assert_eq!(
        status, 200,
        "the minting key is the provider's: a good minted token passes"
    );
    let mut tampered: Vec<String> = good.split('.').map(str::to_owned).collect();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = String::from_utf8(b64.decode(&tampered[1]).unwrap())
        .unwrap()
        .replace("writer", "admin");
    tampered[1] = b64.encode(payload.as_bytes());
    let bad = [
        ("expired", minted(&issuer, "expired").await, "expired"),
        (
            "wrong issuer",
            minted(&issuer, "wrong_issuer").await,
            "issuer",
        ),
        (
            "unsigned (alg none)",
            minted(&issuer, "none").await,
            "not a signed JWT",
        ),
        (
            "wrong audience",
            common::oidc_token(&issuer, "writer", "tools:read", "http://other.test/mcp").await,
            "aud",
        ),
        ("tampered", tampered.join("."), "signature"),
        ("garbage", "trk_not-a-token".to_string(), "not a signed JWT"),
    ];
    for (case, t, why) in &bad {
        let (status, header) = raw_list(&url, Some(t)).await;
        assert_eq!(status, 401, "{case}");
        assert!(
            header.starts_with("Bearer resource_metadata=\"http://tools.test/")
                && header.contains("error=\"invalid_token\"")
                && header.contains(why),
            "{case}: {header}"
        );
    }
    // A valid token whose scopes grant nothing: 403 insufficient_scope.
    let nobody = common::oidc_token(&issuer, "nobody", "tools:none", RESOURCE).await;
    let (status, header) = raw_list(&url, Some(&nobody)).await;
    assert_eq!(status, 403);
    assert!(
        header.contains("error=\"insufficient_scope\"")
            && header.contains("scope=\"tools:read tools:write\""),
        "{header}"
    );

    // The reader: works, sees and runs reads only, and learns no write op's name anywhere.
    let reg: Value =
        serde_json::from_slice(&std::fs::read(gen.join("registry.json")).unwrap()).unwrap();
    let writes: Vec<String> = reg["ops"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["kind"] == "write")
        .map(|(op, _)| op.clone())
        .collect();
    assert!(writes.iter().any(|w| w == "onto.task.update"));
    let reader = client(
        &url,
        &common::oidc_token(&issuer, "reader", "tools:read", RESOURCE).await,
    )
    .await;
    let listed = reader.list_tools(None).await.unwrap();
    let mut seen = vec![serde_json::to_string(&listed).unwrap()];
    for (tool, args) in [
        ("tool_search", json!({"query": "update a task"})),
        ("tool_search", json!({"query": "delete"})),
        ("tool_search", json!({"query": "zzzz qqqq"})),
        ("tool_help", json!({"path": "root"})),
        ("tool_help", json!({"path": "onto"})),
        ("tool_help", json!({"path": "onto.task"})),
        ("tool_help", json!({"path": "onto.task.update"})),
        ("tool_help", json!({"path": "onto.task.updat"})),
        ("tool_exec", json!({"op": "onto.task.updat", "args": {}})),
        (
            "tool_exec",
            json!({"op": "onto.task.list", "args": {"bogus": 1}}),
        ),
    ] {
        // What the reader typed comes back as typed (an invented name would too): only names
        // it did not give must stay out.
        let asked = args["path"].as_str().map(str::to_owned);
        let answer = call(&reader, tool, args).await.to_string();
        seen.push(match asked {
            Some(a) => answer
                .replace(&format!("\"{a}\""), "\"<ASKED>\"")
                .replace(&format!("`{a}`"), "`<ASKED>`"),
            None => answer,
        });
    }
    let all = seen.join("\n");
    for w in &writes {
        let shown = format!("\"{w}\"");
        let inside = format!("{w} ");
        assert!(
            !all.contains(&shown) && !all.contains(&inside) && !all.contains(&format!("`{w}`")),
            "the reader learned `{w}`"
        );
    }
    assert!(all.contains("onto.task.list"), "reads stay visible");
    // Running or reading a write it guessed answers exactly as a name that does not exist
    // (issue 35, item 4): the same envelope and help page as an invented name with the same
    // words, names swapped, trace ids aside; the handler never runs.
    let same = |v: Value, name: &str| {
        let mut v = v;
        if let Some(meta) = v.pointer_mut("/structuredContent/meta") {
            meta["trace_id"] = json!("-");
            meta["latency_ms"] = json!(0);
        }
        let text = v.to_string().replace(name, "<NAME>");
        let trace = regex::Regex::new(r"tr_[0-9a-f]+").unwrap();
        // The text content repeats the envelope: its latency depends on the machine's load.
        let latency = regex::Regex::new(r#"latency_ms\\": [0-9]+"#).unwrap();
        let text = trace.replace_all(&text, "tr_");
        latency
            .replace_all(&text, r#"latency_ms\": 0"#)
            .into_owned()
    };
    for (hidden, invented) in [
        ("onto.task.update", "onto.update.task"),
        ("update_onto_task", "update_task_onto"),
    ] {
        let exec = |op: &str| json!({"op": op, "args": {"task_id": "t1"}});
        let (h, i) = (
            call(&reader, "tool_exec", exec(hidden)).await,
            call(&reader, "tool_exec", exec(invented)).await,
        );
        assert_eq!(h["structuredContent"]["error"]["code"], "NOT_FOUND", "{h}");
        assert_eq!(same(h, hidden), same(i, invented));
    }
    // The writer may run it (the example catalog has no handler: NOT_IMPLEMENTED, past scope).
    let writer = client(&url, &good).await;
    let ran = call(
        &writer,
        "tool_exec",
        json!({"op": "onto.task.update", "args": {"task_id": "t1", "title": "x"}}),
    )
    .await;
    assert_eq!(
        ran["structuredContent"]["error"]["code"], "NOT_IMPLEMENTED",
        "{ran}"
    );
    let writer_tools = writer.list_tools(None).await.unwrap();
    assert_eq!(
        writer_tools.tools.len(),
        listed.tools.len(),
        "the gateway lists its three tools to both"
    );
    drop((reader, writer));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_admits_its_principals_and_the_direct_surface_varies_by_scope() {
    let tmp = tempfile::tempdir().unwrap();
    let mut procs = Procs(Vec::new());
    let gen = registry(tmp.path());
    let mut file = String::new();
    let mut tokens = Vec::new();
    for (name, scope) in [("ro", "tools:read"), ("rw", "tools:write")] {
        let out = common::toolreg(tmp.path(), &["token", name, "--scope", scope]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let entry = common::stderr(&out);
        assert!(!entry.contains(&token), "the entry holds the hash only");
        file.push_str(&entry);
        tokens.push(token);
    }
    let path = tmp.path().join("tokens.toml");
    std::fs::write(&path, file).unwrap();
    let audit = tmp.path().join("audit.jsonl");
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let url = serve(
        &mut procs,
        &gen,
        &[
            "--auth-tokens",
            path.to_str().unwrap(),
            "--surface",
            "direct",
            "--audit",
            audit.to_str().unwrap(),
            "--metrics",
            &metrics_addr,
        ],
    );
    assert_eq!(raw_list(&url, None).await.0, 401);
    assert_eq!(raw_list(&url, Some("trk_0000")).await.0, 401);
    // Two Authorization headers, a valid one first: neither counts (issue 35, a low).
    let twice = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {}", tokens[1]))
        .header("authorization", "Bearer trk_0000")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status().as_u16(), 401);
    let said = twice.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(said.contains("invalid_request"), "{said}");
    let ro = client(&url, &tokens[0]).await;
    let rw = client(&url, &tokens[1]).await;
    let names = |l: &rmcp::model::ListToolsResult| -> Vec<String> {
        l.tools.iter().map(|t| t.name.to_string()).collect()
    };
    let (a, b) = (
        names(&ro.list_tools(None).await.unwrap()),
        names(&rw.list_tools(None).await.unwrap()),
    );
    assert!(
        a.len() < b.len() && a.iter().all(|n| b.contains(n)),
        "{a:?} vs {b:?}"
    );
    assert!(
        !a.iter().any(|n| n == "update_onto_task") && b.iter().any(|n| n == "update_onto_task")
    );
    assert_eq!(
        a,
        names(&ro.list_tools(None).await.unwrap()),
        "stable per principal"
    );
    // Audit: one line per tools/call, with the principal and never an argument's value.
    let secret = "do-not-log-4711";
    call(&ro, "list_onto_tasks", json!({"project_id": secret})).await;
    call(&rw, "update_onto_task", json!({"task_id": secret})).await;
    drop((ro, rw));
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["principal"], "ro");
    assert_eq!(lines[0]["op"], "onto.task.list");
    assert_eq!(lines[1]["principal"], "rw");
    assert_eq!(lines[1]["code"], "NOT_IMPLEMENTED");
    assert!(lines
        .iter()
        .all(|l| l["args_b3"].as_str().unwrap().starts_with("b3k:")));
    assert!(!std::fs::read_to_string(&audit).unwrap().contains(secret));
    // Metrics: what was counted, in a text Debian's promtool accepts.
    let text = String::from_utf8(
        reqwest::get(format!("http://{metrics_addr}/metrics"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(
        text.contains("toolreg_calls_total{code=\"NOT_IMPLEMENTED\",op=\"onto.task.update\"} 1"),
        "{text}"
    );
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian's prometheus package; scripts/test installs it)");
    use std::io::Write;
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    // Listening beyond loopback without authentication is refused, with what to do.
    let out = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args([
            "serve",
            "--registry",
            gen.to_str().unwrap(),
            "--http",
            "0.0.0.0:0",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("--auth-tokens"),
        "{}",
        common::stderr(&out)
    );
}

/// Issue 35, item 4, byte for byte: a reader asking for a write op it may not see gets exactly
/// what it gets where that op does not exist at all (the same catalog built without it): help
/// pages, exec envelopes and search answers, by every spelling, registry versions and trace ids
/// aside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_op_answers_exactly_as_one_that_does_not_exist() {
    use toolreg::serve::{Principal, ServeOptions, Server, SurfaceChoice};
    let tmp = tempfile::tempdir().unwrap();
    let with = registry(&tmp.path().join("with"));
    // The same catalog with update_onto_risk removed from its definitions.
    let without = registry_without(&tmp.path().join("without"), Some("update_onto_risk"));

    let load = |dir: &Path| {
        Server::load_with(
            dir,
            &SurfaceChoice::Gateway,
            ServeOptions {
                approvals: Some(toolreg::trust::Approvals::allow_all()),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let (a, b) = (load(&with), load(&without));
    let reader = Principal {
        name: "reader".into(),
        scopes: ["tools:read".to_string()].into_iter().collect(),
    };
    let version = |dir: &Path| {
        let reg: Value =
            serde_json::from_slice(&std::fs::read(dir.join("registry.json")).unwrap()).unwrap();
        reg["registry_version"].as_str().unwrap().to_string()
    };
    let (va, vb) = (version(&with), version(&without));
    let norm = |v: Value, version: &str| {
        let text = v.to_string().replace(version, "<VERSION>");
        let text = regex::Regex::new(r"tr_[0-9a-f]+")
            .unwrap()
            .replace_all(&text, "tr_")
            .into_owned();
        regex::Regex::new(r#"latency_ms(\\)?"\s*:\s*[0-9]+"#)
            .unwrap()
            .replace_all(&text, "latency_ms")
            .into_owned()
    };
    let mut compared = 0;
    for name in [
        "onto.risk.update",
        "update_onto_risk",
        "onto.risks.update",
        "ONTO.RISK.UPDATE",
        "onto.risk.updat",
        // The directories it would be listed in, and their next steps.
        "onto.risk.write",
        "onto.risk",
        "onto",
        "root",
    ] {
        for (tool, args) in [
            ("tool_help", json!({"path": name})),
            ("tool_help", json!({"path": name, "format": "full"})),
            (
                "tool_exec",
                json!({"op": name, "args": {"task_id": "t1", "title": "x"}}),
            ),
            (
                "tool_exec",
                json!({"op": name, "args": {"task_id": "t1"}, "dry_run": true}),
            ),
            ("tool_search", json!({"query": name})),
        ] {
            let Value::Object(args) = args else {
                unreachable!()
            };
            let (ra, rb) = (
                a.call_as(tool, Some(args.clone()), Some(&reader))
                    .await
                    .unwrap(),
                b.call_as(tool, Some(args.clone()), Some(&reader))
                    .await
                    .unwrap(),
            );
            let (ra, rb) = (
                norm(serde_json::to_value(ra).unwrap(), &va),
                norm(serde_json::to_value(rb).unwrap(), &vb),
            );
            assert_eq!(ra, rb, "{tool} {name}");
            compared += 1;
        }
    }
    assert_eq!(compared, 45);
}

/// A loopback issuer for the key-fetch tests: discovery, an empty JWKS (each fetch counted), a
/// JWKS body that never ends (chunked, bounded at 64 MiB so the thread stops by itself) and a
/// redirect. One request per connection.
fn hostile_issuer() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let (issuer, counter) = (base.clone(), std::sync::Arc::clone(&hits));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (issuer, counter) = (issuer.clone(), std::sync::Arc::clone(&counter));
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let mut out = stream;
                let json = |body: String| {
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let reply = match path.as_str() {
                    "/.well-known/openid-configuration" => json(format!(
                        r#"{{"issuer": "{issuer}", "jwks_uri": "{issuer}/jwks"}}"#
                    )),
                    "/jwks" => {
                        counter.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        json(r#"{"keys": []}"#.into())
                    }
                    "/redirect" => format!(
                        "HTTP/1.1 302 Found\r\nlocation: {issuer}/jwks\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    ),
                    "/endless" => {
                        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n");
                        let chunk = format!("{:x}\r\n{}\r\n", 1 << 16, "[".repeat(1 << 16));
                        for _ in 0..1024 {
                            if out.write_all(chunk.as_bytes()).is_err() {
                                return;
                            }
                        }
                        return;
                    }
                    _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into(),
                };
                let _ = out.write_all(reply.as_bytes());
            });
        }
    });
    (base, hits)
}

/// A signed-looking JWT with this header (the signature is never reached).
fn unsigned_jwt(header: Value) -> String {
    use base64::Engine;
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.c2ln",
        b64(&header),
        b64(&json!({"sub": "x", "aud": RESOURCE, "exp": 4_000_000_000u64}))
    )
}

/// Issue 35, item 12: tokens naming unknown keys cause one JWKS fetch in flight, not one per
/// request; a JWKS that never ends is cut at 1 MiB; a redirect is not followed; an issuer over
/// plain http off loopback is refused before anything is fetched; a token whose `typ` is not an
/// access token's is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_fetch_is_single_flight_bounded_and_https_only() {
    use std::sync::atomic::Ordering;
    use toolreg::serve::oauth::OAuth;
    let (issuer, hits) = hostile_issuer();
    let mut oauth = OAuth::new(&issuer, RESOURCE, None, Vec::new())
        .await
        .unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the start fetched the keys");
    // Let an unknown key cause a fetch one second from now (30 s by default), and wait for it.
    oauth
        .set_refetch_interval(std::time::Duration::from_secs(1))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let oauth = std::sync::Arc::new(oauth);
    // 50 concurrent requests, each naming a key nobody has.
    let mut calls = Vec::new();
    for i in 0..50 {
        let oauth = std::sync::Arc::clone(&oauth);
        let token =
            unsigned_jwt(json!({"alg": "RS256", "kid": format!("unknown-{i}"), "typ": "JWT"}));
        calls.push(tokio::spawn(async move { oauth.verify(&token).await }));
    }
    for c in calls {
        let e = c.await.unwrap().unwrap_err();
        assert!(e.contains("signing key is unknown"), "{e}");
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        2,
        "one fetch for all 50 (was one each)"
    );

    // typ: an ID token or a DPoP proof of the same issuer is not an access token.
    for typ in ["id+jwt", "dpop+jwt", "logout+jwt"] {
        let e = oauth
            .verify(&unsigned_jwt(
                json!({"alg": "RS256", "kid": "k", "typ": typ}),
            ))
            .await
            .unwrap_err();
        assert!(e.contains("not an access token"), "{typ}: {e}");
    }

    // Why a server with these keys would not start (it must not).
    let refused = |iss: String, jwks: Option<String>| async move {
        match OAuth::new(&iss, RESOURCE, jwks.as_deref(), Vec::new()).await {
            Ok(_) => panic!("{iss} {jwks:?} was accepted"),
            Err(e) => e,
        }
    };
    // A JWKS body that never ends: refused at the cap, fast.
    let started = std::time::Instant::now();
    let e = refused(issuer.clone(), Some(format!("{issuer}/endless"))).await;
    assert!(e.contains("more than"), "{e}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A redirect is an answer, not a hop.
    let e = refused(issuer.clone(), Some(format!("{issuer}/redirect"))).await;
    assert!(e.contains("302"), "{e}");
    // Plain http off loopback: refused before any request.
    for (iss, jwks) in [
        ("http://issuer.example", None),
        ("https://issuer.example", Some("http://keys.example/jwks")),
    ] {
        let e = refused(iss.to_string(), jwks.map(str::to_string)).await;
        assert!(e.contains("not https"), "{e}");
    }
}

/// `registry`, with the batch tool offered (`[gateway] batch = true`).
fn registry_with_batch(root: &Path) -> PathBuf {
    registry_with(root, None, "\n[gateway]\nbatch = true\n")
}

/// Over HTTP each batch item after the first takes a token of the caller's bucket: past the
/// rate, items answer RATE_LIMITED and do not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_items_count_against_the_rate_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let gen = registry_with_batch(tmp.path());
    let mut procs = Procs(Vec::new());
    let url = serve(&mut procs, &gen, &["--rate-limit", "2"]);
    let c = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            url,
        ))
        .await
        .unwrap();
    // The handshake took tokens; a full bucket again after a second.
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let read = json!({"exec": {"op": "onto.task.list", "args": {}, "dry_run": true}});
    let r = call(
        &c,
        "tool_batch",
        json!({"items": [read, read, read, read], "stop_on_error": false}),
    )
    .await;
    let items = r["structuredContent"]["items"].as_array().unwrap().clone();
    let codes: Vec<&str> = items
        .iter()
        .map(|i| i["error"]["code"].as_str().unwrap_or("ok"))
        .collect();
    assert_eq!(
        codes,
        ["ok", "ok", "RATE_LIMITED", "RATE_LIMITED"],
        "{items:?}"
    );
}

/// Issue 38: a read-scoped caller's batch reaches no write by any item (by op, tool name or
/// dry run), each item answers as the single call would for that caller, and the batch tool is
/// in its list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_scoped_batch_reaches_no_write() {
    use toolreg::serve::{Principal, ServeOptions, Server, SurfaceChoice};
    let tmp = tempfile::tempdir().unwrap();
    let gen = registry_with_batch(tmp.path());
    let server = Server::load_with(
        &gen,
        &SurfaceChoice::Gateway,
        ServeOptions {
            approvals: Some(toolreg::trust::Approvals::allow_all()),
            ..Default::default()
        },
    )
    .unwrap();
    let reader = Principal {
        name: "reader".into(),
        scopes: ["tools:read".to_string()].into_iter().collect(),
    };
    let listed: Vec<String> = server
        .tools_for(Some(&reader))
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(listed.contains(&"tool_batch".to_string()), "{listed:?}");
    let items = json!([
        {"exec": {"op": "onto.task.create", "args": {"project_id": "p", "title": "t"}}},
        {"exec": {"op": "create_onto_task", "args": {"project_id": "p", "title": "t"}}},
        {"exec": {"op": "onto.task.update", "args": {"task_id": "t1"}, "dry_run": true}},
        {"help": {"path": "onto.task.create"}},
        {"exec": {"op": "onto.task.list", "args": {}}},
    ]);
    let args = json!({"items": items, "stop_on_error": false});
    let batch = server
        .call_as("tool_batch", args.as_object().cloned(), Some(&reader))
        .await
        .unwrap();
    let answers = batch.structured_content.unwrap()["items"].clone();
    let (trace, latency) = (
        regex::Regex::new(r#""trace_id":"tr_[0-9a-f]+""#).unwrap(),
        regex::Regex::new(r#""latency_ms":[0-9]+"#).unwrap(),
    );
    let steady = |v: &Value| {
        let text = v.to_string();
        let text = trace.replace_all(&text, "");
        latency.replace_all(&text, "").into_owned()
    };
    for (i, item) in items.as_array().unwrap().iter().enumerate() {
        let (kind, item_args) = item.as_object().unwrap().iter().next().unwrap();
        let alone = server
            .call_as(
                &format!("tool_{kind}"),
                item_args.as_object().cloned(),
                Some(&reader),
            )
            .await
            .unwrap()
            .structured_content
            .unwrap();
        assert_eq!(steady(&answers[i]), steady(&alone), "item {i}");
    }
    // The writes are unknown to a reader (hidden ops read as unknown), never run.
    for i in 0..3 {
        assert_eq!(answers[i]["error"]["code"], "NOT_FOUND", "{}", answers[i]);
    }
    assert_eq!(answers[3]["error"]["code"], "UNKNOWN_PATH");
    // The read reaches the runtime (no handler here: NOT_IMPLEMENTED, past every check).
    assert_eq!(answers[4]["error"]["code"], "NOT_IMPLEMENTED");
}

/// Issue 35, item 3's last part: with authentication, a quarter of the connection places is
/// kept for connections that authenticated. Connections that never authenticate fill only the
/// rest (the next is closed at once), and a client that authenticated keeps being served on its
/// connection; a body trickled past its deadline is 408.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn places_are_kept_for_authenticated_connections() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let mut procs = Procs(Vec::new());
    let gen = registry(tmp.path());
    let out = common::toolreg(tmp.path(), &["token", "ci", "--scope", "tools:read"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let tokens = tmp.path().join("tokens.toml");
    std::fs::write(&tokens, common::stderr(&out)).unwrap();
    let url = serve(
        &mut procs,
        &gen,
        &[
            "--auth-tokens",
            tokens.to_str().unwrap(),
            "--max-connections",
            "8",
            "--head-timeout-ms",
            "60000",
        ],
    );
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    // One raw connection that authenticates and stays open (keep-alive).
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut proven = std::net::TcpStream::connect(&addr).unwrap();
    proven
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let answer = |s: &mut std::net::TcpStream| {
        s.write_all(request.as_bytes()).unwrap();
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).to_string()
    };
    assert!(answer(&mut proven).starts_with("HTTP/1.1 200"));
    // Six connections that never authenticate fill the unproven places (8 less 2 kept)...
    let mut idle: Vec<std::net::TcpStream> = (0..6)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    idle.iter_mut().for_each(|s| s.write_all(b"P").unwrap());
    std::thread::sleep(std::time::Duration::from_millis(200));
    // ...so the next is closed at once, though the cap itself is not reached.
    let mut over = std::net::TcpStream::connect(&addr).unwrap();
    over.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    let mut byte = [0u8; 1];
    // Closed (end of stream or a reset), not merely silent until the read timeout.
    let closed = match over.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    assert!(closed, "a connection past the unproven places was kept");
    // The authenticated connection is still served.
    assert!(answer(&mut proven).starts_with("HTTP/1.1 200"));
    drop(idle);

    // A body that trickles in past its deadline (10 s) is 408. The idle connections' places
    // are free once the server has seen them close; until then a new connection may still be
    // turned away at once (closed with no answer), so that case is tried again, briefly.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut slow = std::net::TcpStream::connect(&addr).unwrap();
        slow.set_read_timeout(Some(std::time::Duration::from_secs(15)))
            .unwrap();
        let started = std::time::Instant::now();
        // Turned away at once, the connection may already be reset when the request is sent.
        let sent = write!(
            slow,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{{"
        );
        let mut buf = [0u8; 1024];
        let n = match sent {
            Ok(()) => slow.read(&mut buf).unwrap_or(0),
            Err(_) => 0,
        };
        let turned_away = n == 0 && started.elapsed() < std::time::Duration::from_secs(1);
        if turned_away && std::time::Instant::now() < give_up {
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        }
        let out = String::from_utf8_lossy(&buf[..n]);
        assert!(out.starts_with("HTTP/1.1 408"), "{out}");
        assert!(started.elapsed() < std::time::Duration::from_secs(15));
        break;
    }
}
