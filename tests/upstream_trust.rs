//! Upstream settings are code and secrets (issue 26): a definitions folder that names a hostile
//! command gets it flagged by `lint` and `diff` and run by neither `import --check` nor `serve`
//! until someone approves it on this machine; a URL with a credential is refused, and a token
//! an upstream needs travels from an environment variable without entering a file or answer.
#![cfg(feature = "mcp")]

mod common;

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::toolreg_approved_by as toolreg;

fn err(o: &Output) -> String {
    common::stderr(o)
}

const SNAPSHOT: &str = r#"{"tools": [{"name": "read_note", "description": "Read one note by its id.",
  "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}]}"#;

/// A definitions folder whose `[upstreams.notes]` runs `sh -c 'touch MARKER'`.
fn hostile(root: &Path, marker: &Path) -> PathBuf {
    let defs = root.join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(defs.join("notes.mcp.json"), SNAPSHOT).unwrap();
    std::fs::write(
        defs.join("toolreg.toml"),
        format!(
            "[upstreams.notes]\ncommand = \"sh\"\nargs = [\"-c\", \"touch '{}'\"]\n",
            marker.display()
        ),
    )
    .unwrap();
    defs
}

#[test]
fn a_hostile_upstream_command_is_flagged_and_runs_only_once_approved() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let approvals = root.join("state/approved.toml");
    let marker = root.join("PWNED");
    let defs = hostile(root, &marker);
    let d = defs.to_str().unwrap();

    // lint: a located TR082 warning that shows what would run.
    let out = toolreg(&approvals, &["lint", "-d", d]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let e = err(&out);
    assert!(e.contains("warning[TR082]"), "{e}");
    assert!(e.contains("toolreg.toml:1:"), "located at the table: {e}");
    assert!(e.contains("runs `sh -c 'touch "), "{e}");

    // diff: the upstream arriving is a security finding, gated by --fail-on security.
    let gen = root.join("gen");
    let g = gen.to_str().unwrap();
    let out = toolreg(&approvals, &["build", "-d", d, "--out", g]);
    assert!(out.status.success(), "{}", err(&out));
    let before = root.join("before.json");
    let mut reg: Value =
        serde_json::from_slice(&std::fs::read(gen.join("registry.json")).unwrap()).unwrap();
    reg.as_object_mut().unwrap().remove("upstreams");
    std::fs::write(&before, reg.to_string()).unwrap();
    let diff = |extra: &[&str]| {
        let mut args = vec!["diff", before.to_str().unwrap(), g, "--no-cache"];
        args.extend(extra);
        toolreg(&approvals, &args)
    };
    let out = diff(&["--fail-on", "security"]);
    assert_eq!(out.status.code(), Some(1), "{}", err(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("security[TD040] [upstreams.notes]"), "{text}");
    let out = diff(&["--format", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    let first_row = md
        .lines()
        .find(|l| l.starts_with("| security") || l.starts_with("| info"));
    assert!(
        first_row.is_some_and(|l| l.starts_with("| security")),
        "security first: {md}"
    );

    // import --check and serve refuse by default, before anything starts.
    let out = toolreg(&approvals, &["import", "--check", "-d", d]);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    assert!(
        err(&out).contains("not approved to run on this machine"),
        "{}",
        err(&out)
    );
    let out = toolreg(&approvals, &["serve", "--registry", g, "--eager"]);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    assert!(
        err(&out).contains("[upstreams.notes] runs `sh -c"),
        "{}",
        err(&out)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "an unapproved command ran");

    // approve --list says so and exits 1; approve records it; a changed command needs a new one.
    let out = toolreg(&approvals, &["approve", "-d", d, "--list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("NOT approved  [upstreams.notes]"));
    let out = toolreg(&approvals, &["approve", "-d", d]);
    assert!(out.status.success(), "{}", err(&out));
    assert!(err(&out).contains("1 new approval(s)"), "{}", err(&out));
    let out = toolreg(&approvals, &["lint", "-d", d]);
    assert!(!err(&out).contains("TR082"), "approved: {}", err(&out));

    // The approved path runs it (it is no MCP server, so the check then fails: exit 2).
    let out = toolreg(&approvals, &["import", "--check", "-d", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        marker.exists(),
        "the approved command did not run: {}",
        err(&out)
    );
    std::fs::remove_file(&marker).unwrap();

    // A pull request that edits the approved command is not approved.
    let overlay = defs.join("toolreg.toml");
    let edited = std::fs::read_to_string(&overlay)
        .unwrap()
        .replace("touch ", "touch /dev/null ");
    std::fs::write(&overlay, edited).unwrap();
    let out = toolreg(&approvals, &["import", "--check", "-d", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(err(&out).contains("not approved"), "{}", err(&out));
    assert!(!marker.exists());
    // ... nor is the registry built from it, which serve reads.
    let out = toolreg(&approvals, &["build", "-d", d, "--out", g]);
    assert!(out.status.success(), "{}", err(&out));
    let out = toolreg(&approvals, &["serve", "--registry", g, "--eager"]);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "an edited command ran");
}

#[test]
fn credentials_in_upstream_urls_are_refused_and_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let approvals = root.join("approved.toml");
    let defs = root.join("defs");
    let d = defs.to_str().unwrap();
    for url in [
        "http://admin:PASSWORD123@127.0.0.1:9/mcp",
        "http://127.0.0.1:9/mcp?api_key=KEY456",
        "http://127.0.0.1:9/mcp?access_token=KEY456&page=1",
        // Hosted MCP URL shapes (issue 35, item 8).
        "http://127.0.0.1:9/mcp?jwt=KEY456",
        "http://127.0.0.1:9/mcp?x_auth=KEY456",
        "http://127.0.0.1:9/mcp?sig2=KEY456",
        "http://127.0.0.1:9/s/KEY456a8Fk29sLq0Zx7Yt4Vb3/mcp",
    ] {
        let out = toolreg(&approvals, &["import", "mcp", "gw", "--url", url, "-d", d]);
        assert_eq!(out.status.code(), Some(2), "{url}");
        let e = err(&out);
        assert!(e.contains("carries a credential"), "{e}");
        assert!(e.contains("--bearer-env"), "says what to do instead: {e}");
        assert!(!e.contains("PASSWORD123") && !e.contains("KEY456"), "{e}");
        assert!(!defs.exists(), "nothing was written");
    }
    // Written by hand into the overlay: TR083, an error, and the secret is not quoted.
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(defs.join("gw.mcp.json"), SNAPSHOT).unwrap();
    std::fs::write(
        defs.join("toolreg.toml"),
        "[upstreams.gw]\nurl = \"https://bot:PASSWORD123@tools.example/mcp?token=KEY456\"\n",
    )
    .unwrap();
    let out = toolreg(
        &approvals,
        &[
            "build",
            "-d",
            d,
            "--out",
            root.join("gen").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let e = err(&out);
    assert!(
        e.contains("error[TR083]") && e.contains("bearer_env"),
        "{e}"
    );
    assert!(!e.contains("PASSWORD123") && !e.contains("KEY456"), "{e}");
    assert!(!root.join("gen/registry.json").exists());
}

/// A `toolreg serve --http` of the repo's own catalog (an MCP server over HTTP), behind
/// tests/mcp/require-token.mjs, which admits only `Bearer $TOKEN`.
struct Gate {
    children: Vec<std::process::Child>,
    url: String,
    auth_log: PathBuf,
}

impl Drop for Gate {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn gate(root: &Path, token: &str) -> Gate {
    let (target, target_url) =
        common::serve_http(&common::repo().join("generated"), &[], &[], None);
    let prefix = root.join("gate");
    let mut proxy = Command::new("node")
        .arg(common::repo().join("tests/mcp/require-token.mjs"))
        .arg(&target_url)
        .arg(&prefix)
        .env("TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let url = format!(
        "http://{}",
        common::line_after(&mut proxy, "listening on http://", false, None)
    );
    Gate {
        children: vec![target, proxy],
        url,
        auth_log: root.join("gate.auth"),
    }
}

/// Every file below `dir` that contains `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    common::snapshot_dir(dir)
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(needle))
        .map(|(name, _)| name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_token_comes_from_the_environment_and_is_written_nowhere() {
    const TOKEN: &str = "tok-3c1f9e7d-SECRET";
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let approvals = root.join("approved.toml");
    let g = gate(root, TOKEN);
    let defs = root.join("defs");
    let d = defs.to_str().unwrap();

    // Without the token the upstream refuses the import.
    let out = toolreg(
        &approvals,
        &["import", "mcp", "gw", "--url", &g.url, "-d", d],
    );
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    // With --bearer-env it goes through; the name is recorded, the value nowhere.
    let out = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args([
            "import",
            "mcp",
            "gw",
            "--url",
            &g.url,
            "--bearer-env",
            "GW_TOKEN",
            "-d",
            d,
        ])
        .env("TOOLREG_APPROVALS", &approvals)
        .env("GW_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", err(&out));
    let overlay = std::fs::read_to_string(defs.join("toolreg.toml")).unwrap();
    assert!(overlay.contains("bearer_env = \"GW_TOKEN\""), "{overlay}");
    let gen = root.join("gen");
    let out = toolreg(
        &approvals,
        &["build", "-d", d, "--out", gen.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", err(&out));

    // serve forwards with the token from its environment.
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
    cmd.args(["serve", "--registry", gen.to_str().unwrap()])
        .env("TOOLREG_APPROVALS", &approvals)
        .env("GW_TOKEN", TOKEN);
    let client = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let reg: Value =
        serde_json::from_slice(&std::fs::read(gen.join("registry.json")).unwrap()).unwrap();
    let search_op = reg["ops"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, r)| r["tool_name"] == "tool_search")
        .map(|(op, _)| op.clone())
        .expect("the upstream's search tool became an op");
    // The upstream is itself a toolreg gateway, so ours stepped aside (TR065): ask its name.
    let exec_tool = reg["gateway"]["exec"].as_str().unwrap().to_string();
    let call = |args: Value| {
        let Value::Object(args) = args else {
            unreachable!()
        };
        CallToolRequestParams::new(exec_tool.clone()).with_arguments(args)
    };
    let r = client
        .call_tool(call(
            json!({"op": search_op, "args": {"query": "list tasks"}}),
        ))
        .await
        .unwrap();
    let answer = serde_json::to_string(&r).unwrap();
    assert_ne!(r.is_error, Some(true), "{answer}");
    assert!(
        answer.contains("onto."),
        "the upstream's search answered: {answer}"
    );
    let log = std::fs::read_to_string(&g.auth_log).unwrap();
    assert!(log.lines().filter(|l| *l == "ok").count() >= 2, "{log}");

    // A client of `serve --http` with its own bearer token: the upstream sees the upstream's
    // token only, never the client's (issue 21).
    let (client_token, entry) = toolreg::serve::auth::new_token("client", &[]).unwrap();
    let tokens = root.join("tokens.toml");
    std::fs::write(&tokens, entry).unwrap();
    let (mut http, http_url) = common::serve_http(
        &gen,
        &["--auth-tokens", tokens.to_str().unwrap()],
        &[
            ("TOOLREG_APPROVALS", approvals.as_os_str()),
            ("GW_TOKEN", std::ffi::OsStr::new(TOKEN)),
        ],
        None,
    );
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            http_url,
        )
        .auth_header(client_token.clone());
    let remote = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_config(
            config,
        ))
        .await
        .unwrap();
    let r = remote
        .call_tool(call(json!({"op": search_op, "args": {"query": "goals"}})))
        .await
        .unwrap();
    assert_ne!(
        r.is_error,
        Some(true),
        "{}",
        serde_json::to_string(&r).unwrap()
    );
    drop(remote);
    let _ = http.kill();
    let _ = http.wait();
    let seen = std::fs::read_to_string(root.join("gate.seen")).unwrap();
    assert!(
        !seen.contains(&client_token),
        "the client's token reached the upstream"
    );
    assert!(
        seen.lines().any(|l| l == format!("Bearer {TOKEN}")),
        "{seen}"
    );

    // The upstream goes away: the envelope names it without secrets.
    drop(g);
    let started = Instant::now();
    let r = client
        .call_tool(call(json!({"op": search_op, "args": {"query": "tasks"}})))
        .await
        .unwrap();
    let failed = serde_json::to_string(&r).unwrap();
    assert_eq!(r.is_error, Some(true), "{failed}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(!failed.contains(TOKEN), "{failed}");
    drop(client);

    for dir in [&defs, &gen] {
        assert_eq!(
            files_containing(dir, TOKEN),
            Vec::<String>::new(),
            "{}",
            dir.display()
        );
    }
    assert!(!std::fs::read_to_string(&approvals).unwrap().contains(TOKEN));

    // A registry edited by hand to carry credentials in the URL: approving it, and every
    // answer about it, shows the URL redacted.
    let path = gen.join("registry.json");
    let mut reg = reg;
    // The shapes of hosted MCP URLs (issue 35, item 8): a secret path segment, `jwt`,
    // `x_auth`, `sig2`.
    reg["upstreams"]["gw"]["url"] = json!(
        "http://user:PASSWORD123@127.0.0.1:9/s/a8Fk29sLq0Zx7Yt4Vb3Nw1Pe/mcp?api_key=KEY456&jwt=JWT789&x_auth=XAUTH1&sig2=SIGVAL2"
    );
    std::fs::write(&path, serde_json::to_string_pretty(&reg).unwrap()).unwrap();
    let out = toolreg(
        &approvals,
        &["approve", "--registry", gen.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", err(&out));
    assert!(
        err(&out).contains("http://REDACTED@127.0.0.1:9/s/REDACTED/mcp?api_key=REDACTED&jwt=REDACTED&x_auth=REDACTED&sig2=REDACTED"),
        "{}",
        err(&out)
    );
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
    cmd.args(["serve", "--registry", gen.to_str().unwrap()])
        .env("TOOLREG_APPROVALS", &approvals)
        .env("GW_TOKEN", TOKEN);
    let client = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let r = client
        .call_tool(call(json!({"op": search_op, "args": {"query": "tasks"}})))
        .await
        .unwrap();
    let failed = serde_json::to_string(&r).unwrap();
    assert_eq!(r.is_error, Some(true), "{failed}");
    assert!(failed.contains("UPSTREAM_UNAVAILABLE"), "{failed}");
    // No URL at all in what a client reads, not even redacted; the operator's log has it.
    assert!(
        failed.contains("the upstream's URL") && failed.contains("incident"),
        "{failed}"
    );
    for secret in [
        "PASSWORD123",
        "KEY456",
        "JWT789",
        "XAUTH1",
        "SIGVAL2",
        "a8Fk29",
        "127.0.0.1:9",
        TOKEN,
    ] {
        assert!(!failed.contains(secret), "{secret} in {failed}");
    }
}

/// A toolreg run in the folder `cwd`, with its approvals in `approvals`.
fn toolreg_in(cwd: &Path, approvals: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .current_dir(cwd)
        .env("TOOLREG_APPROVALS", approvals)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Approves `defs` with `run`, then runs `import --check` (the upstream is no MCP server: exit
/// 2) and waits up to `secs` seconds for the file its command writes. Both outputs.
fn approve_and_wait_for(
    run: &dyn Fn(&[&str]) -> Output,
    file: &Path,
    secs: u64,
) -> (Output, Output) {
    let approved = run(&["approve", "-d", "defs"]);
    assert!(approved.status.success(), "{}", err(&approved));
    let out = run(&["import", "--check", "-d", "defs"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "not an MCP server: {}",
        err(&out)
    );
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    (approved, out)
}

/// A checkout whose `[upstreams.notes]` is the form the guide used to recommend,
/// `npx -y @acme/notes-server@1.2.3`.
fn npx_checkout(root: &Path) -> PathBuf {
    let defs = root.join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(defs.join("notes.mcp.json"), SNAPSHOT).unwrap();
    std::fs::write(
        defs.join("toolreg.toml"),
        "[upstreams.notes]\ncommand = \"npx\"\nargs = [\"-y\", \"@acme/notes-server@1.2.3\"]\n",
    )
    .unwrap();
    defs
}

/// What a pull request commits: `node_modules/@acme/notes-server` at the pinned version, whose
/// bin touches `marker` (npx runs it offline, since the version matches).
fn plant_package(checkout: &Path, marker: &Path) {
    let pkg = checkout.join("node_modules/@acme/notes-server");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name": "@acme/notes-server", "version": "1.2.3", "bin": {"notes-server": "cli.js"}}"#,
    )
    .unwrap();
    std::fs::write(
        pkg.join("cli.js"),
        format!(
            "#!/usr/bin/env node\nrequire('fs').writeFileSync({:?}, 'ran');\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(pkg.join("cli.js"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let bin = checkout.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink("../@acme/notes-server/cli.js", bin.join("notes-server"))
            .unwrap();
    }
}

/// Issue 35, item 2: an approval made in one folder never runs another folder's code. The same
/// `[upstreams]` lines in a second checkout that carries a committed `node_modules/` copy of the
/// pinned package are refused before anything starts, and so is a copy a pull request adds to
/// the approved checkout itself; after a person approves that copy where it is, it runs (which
/// shows npx really takes it, offline).
#[test]
fn an_approval_covers_the_folder_and_the_code_a_package_runner_would_take() {
    if Command::new("npx").arg("--version").output().is_err() {
        panic!("npx is needed (scripts/test installs Node with the MCP reference servers)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let approvals = root.join("state/approved.toml");
    let marker = root.join("PWNED");
    let a = root.join("a");
    let b = root.join("b");
    npx_checkout(&a);
    npx_checkout(&b);
    plant_package(&b, &marker);

    // A developer approves the spec in checkout a (no node_modules there).
    let out = toolreg_in(&a, &approvals, &["approve", "-d", "defs"]);
    assert!(out.status.success(), "{}", err(&out));
    let stored = std::fs::read_to_string(&approvals).unwrap();
    assert!(
        stored.contains(&format!("place = {:?}", a.display().to_string())),
        "{stored}"
    );
    let out = toolreg_in(&a, &approvals, &["lint", "-d", "defs"]);
    assert!(!err(&out).contains("TR082"), "approved in a: {}", err(&out));

    // Checkout b: same toolreg.toml, same lock, plus the planted package: refused, nothing ran.
    for args in [
        vec!["import", "--check", "-d", "defs"],
        vec!["approve", "-d", "defs", "--list"],
    ] {
        let out = toolreg_in(&b, &approvals, &args);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {}", err(&out));
        let said = format!("{}{}", err(&out), String::from_utf8_lossy(&out.stdout));
        assert!(said.contains("approved to run in"), "{args:?}: {said}");
    }
    let out = toolreg_in(&b, &approvals, &["lint", "-d", "defs"]);
    assert!(
        err(&out).contains("TR082") && err(&out).contains("approved to run in"),
        "lint names it: {}",
        err(&out)
    );
    let out = toolreg_in(&b, &approvals, &["build", "-d", "defs", "--out", "gen"]);
    assert!(out.status.success(), "{}", err(&out));
    let out = toolreg_in(&b, &approvals, &["serve", "--registry", "gen", "--eager"]);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "checkout b's code ran on a's approval");

    // A pull request that only adds node_modules/ to the approved checkout a: refused too.
    plant_package(&a, &marker);
    let out = toolreg_in(&a, &approvals, &["import", "--check", "-d", "defs"]);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    assert!(
        err(&out).contains("node_modules/@acme/notes-server"),
        "names the copy: {}",
        err(&out)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "the planted copy ran");

    // Approved where it is, after reading it: it runs, and npx took the local copy offline.
    let (approved, out) =
        approve_and_wait_for(&|args| toolreg_in(&b, &approvals, args), &marker, 20);
    assert!(
        err(&approved).contains("takes code from"),
        "{}",
        err(&approved)
    );
    assert!(marker.exists(), "npx ran the local copy: {}", err(&out));
    std::fs::remove_file(&marker).unwrap();

    // An edit to one file of the approved copy is a new launch.
    let cli = b.join("node_modules/@acme/notes-server/cli.js");
    let text = std::fs::read_to_string(&cli).unwrap();
    std::fs::write(&cli, text.replace("'ran'", "'ran again'")).unwrap();
    let out = toolreg_in(&b, &approvals, &["import", "--check", "-d", "defs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err(&out).contains("changed since it was approved"),
        "{}",
        err(&out)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "an edited copy ran");
}

/// Issue 35, item 9: a stdio upstream starts with PATH, HOME, the locale and the variables its
/// `env` lists, never the rest of toolreg's environment (other upstreams' tokens, CI secrets).
#[test]
fn a_stdio_upstream_gets_only_its_listed_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let approvals = root.join("state/approved.toml");
    let dump = root.join("env.txt");
    let defs = root.join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(defs.join("notes.mcp.json"), SNAPSHOT).unwrap();
    std::fs::write(
        defs.join("toolreg.toml"),
        format!(
            "[upstreams.notes]\ncommand = \"sh\"\nargs = [\"-c\", \"env > '{}'\"]\nenv = [\"NOTES_TOKEN\"]\n",
            dump.display()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .args(args)
            .current_dir(&root)
            .env("TOOLREG_APPROVALS", &approvals)
            .env("NOTES_TOKEN", "notes-value")
            .env("OTHER_UPSTREAM_TOKEN", "must-not-leak")
            .env("AWS_SECRET_ACCESS_KEY", "must-not-leak-either")
            .env("LC_TIME", "C")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    approve_and_wait_for(&run, &dump, 10);
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(env.contains("NOTES_TOKEN=notes-value"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    assert!(env.contains("LC_TIME=C"), "{env}");
    assert!(!env.contains("must-not-leak"), "{env}");
    assert!(!env.contains("TOOLREG_APPROVALS"), "{env}");
}
