//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` beside the repo (CI puts it there); TOOLREG_SHARED overrides.
pub fn shared() -> PathBuf {
    let p = std::env::var_os("TOOLREG_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"));
    assert!(
        p.is_dir(),
        "the shared folder is missing at {} (set TOOLREG_SHARED)",
        p.display()
    );
    p
}

/// An approvals file that holds nothing, so what `lint` says of upstreams (TR082) does not
/// depend on what the machine's user approved.
pub fn no_approvals() -> PathBuf {
    std::env::temp_dir().join("toolreg-tests-no-approvals/approved-upstreams.toml")
}

/// Runs the toolreg binary in `cwd`.
pub fn toolreg(cwd: &Path, args: &[&str]) -> Output {
    toolreg_with(cwd, args, &[])
}

/// [`toolreg`] with more environment variables.
pub fn toolreg_with(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .current_dir(cwd)
        .env("TOOLREG_APPROVALS", no_approvals())
        .envs(env.iter().copied())
        .output()
        .expect("toolreg runs")
}

/// `toolreg build -d DEFS --out OUT --emit EMIT`, which must succeed.
pub fn built(defs: &Path, out: &Path, emit: &str) -> Output {
    built_with(defs, out, &["--emit", emit])
}

/// `toolreg build -d DEFS --out OUT`, then `extra` (none: the default emitters), which must
/// succeed.
pub fn built_with(defs: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "build",
        "-d",
        defs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = toolreg(&repo(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// `toolreg learn --definitions DEFS --queries QUERIES`, then `extra` (e.g. `--out-of-scope F`),
/// run in `cwd`.
pub fn learn(cwd: &Path, defs: &Path, queries: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "learn",
        "--definitions",
        defs.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
    ];
    args.extend(extra);
    toolreg(cwd, &args)
}

/// A toolreg run (no stdin) whose approvals live in `approvals`, never the user's own file.
pub fn toolreg_approved_by(approvals: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .env("TOOLREG_APPROVALS", approvals)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Copies a folder tree.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Every file below a folder with its bytes, for "nothing changed" and "same output"
/// assertions. A build's cache (`.toolreg-cache/`) is not output and is left out
/// (`tests/incremental.rs` tests it).
pub fn snapshot_dir(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    let walker = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != ".toolreg-cache");
    for entry in walker {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let rel = entry
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, std::fs::read(entry.path()).unwrap()));
        }
    }
    out
}

/// Seed 000 (the gateway spec), read from `../shared/seeds`.
pub fn seed_000() -> String {
    let dir = shared().join("seeds");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("000_"))
        .expect("seed 000 is in shared/seeds");
    std::fs::read_to_string(file).unwrap()
}

fn section<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let a = text
        .find(start)
        .unwrap_or_else(|| panic!("seed has `{start}`"));
    let b = text[a..].find(end).map_or(text.len(), |b| a + b);
    &text[a..b]
}

/// Text between the first pair of backticks in a cell.
fn code(cell: &str) -> Option<&str> {
    let mut parts = cell.split('`');
    parts.next()?;
    parts.next().filter(|s| !s.is_empty())
}

/// Seed 000's hand-written taxonomy: tool name -> op, from its section 3 tables and its
/// section 5.2 list (checked to agree, and to be complete enough that the parser works).
pub fn seed_000_mappings() -> BTreeMap<String, String> {
    let seed = seed_000();
    let mut expected: BTreeMap<String, String> = BTreeMap::new(); // tool -> op

    // Section 3 tables: | `op` | `tool` | ...
    for line in section(&seed, "## 3) Command Taxonomy", "## 4)").lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 3 {
            if let (Some(op), Some(tool)) = (code(cells[1]), code(cells[2])) {
                expected.insert(tool.to_string(), op.to_string());
            }
        }
    }
    let from_tables = expected.len();
    // Section 5.2: - `tool` → `op`
    for line in section(&seed, "### 5.2 Auto-classification rules", "### 5.3").lines() {
        if let Some((l, r)) = line.split_once('→') {
            if let (Some(tool), Some(op)) = (code(l), code(r)) {
                if let Some(prev) = expected.insert(tool.to_string(), op.to_string()) {
                    assert_eq!(prev, op, "seed sections disagree on {tool}");
                }
            }
        }
    }
    assert!(
        from_tables >= 45,
        "parsed only {from_tables} table rows: the seed parser is broken"
    );
    assert!(
        expected.len() >= 50,
        "parsed only {} mappings",
        expected.len()
    );

    expected
}

/// Deterministic pseudo-random lowercase words (xorshift), for queries nobody chose.
pub fn random_words(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = 2 + (x % 10) as usize;
            (0..len)
                .map(|i| (b'a' + ((x >> (i * 5)) % 26) as u8) as char)
                .collect()
        })
        .collect()
}

/// Children killed (and reaped) when dropped: a failed assertion must not leave servers running.
pub struct Procs(pub Vec<std::process::Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Reads a child's stdout (or stderr) until a line starts with `prefix` and returns the rest of
/// that line; the stream is drained from then on (into `keep` when given), so the child never
/// blocks on a full pipe.
pub fn line_after(
    child: &mut std::process::Child,
    prefix: &str,
    stderr: bool,
    keep: Option<std::sync::Arc<std::sync::Mutex<String>>>,
) -> String {
    use std::io::BufRead;
    let stream: Box<dyn std::io::Read + Send> = if stderr {
        Box::new(child.stderr.take().expect("stderr is piped"))
    } else {
        Box::new(child.stdout.take().expect("stdout is piped"))
    };
    let mut lines = std::io::BufReader::new(stream).lines();
    let mut seen = String::new();
    let found = loop {
        match lines.next() {
            Some(Ok(l)) => match l.strip_prefix(prefix) {
                Some(rest) => break rest.to_string(),
                None => seen.push_str(&format!("{l}\n")),
            },
            _ => panic!("no line `{prefix}`; the child said:\n{seen}"),
        }
    };
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            if let Some(k) = &keep {
                let mut k = k.lock().unwrap();
                k.push_str(&l);
                k.push('\n');
            }
        }
    });
    found
}

/// `toolreg serve --registry GEN --http 127.0.0.1:0 EXTRA...` with `env`; the child and its
/// MCP URL (read from its stderr, which is drained into `keep` when given).
pub fn serve_http(
    gen: &Path,
    extra: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
    keep: Option<std::sync::Arc<std::sync::Mutex<String>>>,
) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(["serve", "--registry"])
        .arg(gen)
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("toolreg serve starts");
    let url = line_after(&mut child, "toolreg serve: listening on ", true, keep);
    (child, url)
}

/// The certified OpenID provider of tests/oidc (panva/oidc-provider) on a free loopback port,
/// issuing access tokens for `resource`; the child and its issuer URL.
pub fn oidc_provider(resource: &str) -> (std::process::Child, String) {
    let dir = repo().join("tests/oidc");
    assert!(
        dir.join("node_modules/oidc-provider").is_dir(),
        "oidc-provider is not installed: run `npm ci --prefix tests/oidc` (scripts/test does)"
    );
    let mut child = Command::new("node")
        .arg(dir.join("provider.mjs"))
        .env("RESOURCE", resource)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("node runs the provider");
    let issuer = line_after(&mut child, "issuer ", false, None);
    (child, issuer)
}

/// A loopback redis-server on a free port (Debian's package; scripts/test installs it),
/// stopped on drop.
pub struct RedisServer {
    child: std::process::Child,
    pub url: String,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect(
                "redis-server is not installed: `apt-get install redis-server` (scripts/test does)",
            );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        RedisServer {
            child,
            url: format!("redis://127.0.0.1:{port}"),
        }
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing is answered.
    pub fn pause(&self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGSTOP) };
    }

    /// Lets a paused server go on (SIGCONT): it then works through what queued up.
    pub fn resume(&self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGCONT) };
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// A plain connection, to look at what the stores keep.
    #[cfg(feature = "redis")]
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

/// A loopback TCP proxy in front of `target` whose replies the test can swallow: while stalled,
/// what the server sends back is read and dropped (a network that loses answers), what clients
/// send still goes through.
#[cfg(feature = "mcp")]
pub struct StallProxy {
    pub port: u16,
    stalled: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[cfg(feature = "mcp")]
impl StallProxy {
    pub async fn start(target: u16) -> StallProxy {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let stalled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stalled);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                    let _ = server_write.shutdown().await;
                });
                let flag = std::sync::Arc::clone(&flag);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    while let Ok(n) = server_read.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        if flag.load(Ordering::SeqCst) {
                            continue; // swallowed
                        }
                        if client_write.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        StallProxy { port, stalled }
    }

    pub fn stall(&self) {
        self.stalled
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn release(&self) {
        self.stalled
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A client-credentials access token from the [`oidc_provider`] (client `<id>`, secret
/// `<id>-secret`) for `scope` and `resource`.
pub async fn oidc_token(issuer: &str, client: &str, scope: &str, resource: &str) -> String {
    let r = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .basic_auth(client, Some(format!("{client}-secret")))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=client_credentials&scope={scope}&resource={resource}"
        ))
        .send()
        .await
        .expect("the provider answers");
    let body: serde_json::Value =
        serde_json::from_slice(&r.bytes().await.expect("a body")).expect("JSON");
    body["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {body}"))
        .to_string()
}

/// Leaves `out` as a build of `new` (a finished build of the new catalog, elsewhere) that was
/// killed after its commit: every file that differs staged under `.toolreg-staging/` with the
/// journal, and `renamed` already moved into place. So readers find the new `registry.json` beside
/// old surfaces, exactly what a kill between the commit's renames leaves.
pub fn interrupt_after_commit(out: &Path, new: &Path, renamed: &[&str]) {
    let staging = out.join(".toolreg-staging");
    let old: BTreeMap<String, Vec<u8>> = snapshot_dir(out).into_iter().collect();
    let want: BTreeMap<String, Vec<u8>> = snapshot_dir(new).into_iter().collect();
    let mut replace: Vec<String> = want
        .iter()
        .filter(|(p, bytes)| old.get(*p) != Some(bytes))
        .map(|(p, _)| p.clone())
        .collect();
    replace.sort_by_key(|p| p == "toolreg.manifest.json");
    let remove: Vec<&String> = old.keys().filter(|p| !want.contains_key(*p)).collect();
    for p in &replace {
        let to = staging.join(p);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, &want[p]).unwrap();
    }
    let journal = serde_json::json!({"replace": replace, "remove": remove});
    std::fs::write(staging.join(".journal.json"), journal.to_string()).unwrap();
    for p in renamed {
        assert!(replace.iter().any(|r| r == p), "{p} does not change");
        std::fs::rename(staging.join(p), out.join(p)).unwrap();
    }
}

/// Turns a synthetic catalog (100 tools per file) into its successor: the last file dropped and
/// every description reworded, so nearly every generated file differs and some are removed.
pub fn reword_catalog(dir: &Path) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    std::fs::remove_file(files.pop().unwrap()).unwrap();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        std::fs::write(
            f,
            text.replace("\"description\": \"", "\"description\": \"Revised. "),
        )
        .unwrap();
    }
}

#[cfg(target_os = "linux")]
/// Runs toolreg in `cwd`, sampling its peak memory (VmHWM): the output, peak MB, wall ms.
pub fn run_measured(cwd: &std::path::Path, args: &[&str]) -> (std::process::Output, u64, u128) {
    let started = std::time::Instant::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .current_dir(cwd)
        .env("TOOLREG_APPROVALS", no_approvals())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let peak = std::sync::Arc::clone(&peak);
        std::thread::spawn(move || {
            while let Ok(s) = std::fs::read_to_string(&status) {
                if let Some(kb) = s
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                {
                    peak.fetch_max(kb, std::sync::atomic::Ordering::Relaxed);
                }
                if s.contains("State:\tZ") {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed().as_millis();
    sampler.join().unwrap();
    (
        out,
        peak.load(std::sync::atomic::Ordering::Relaxed) / 1024,
        took,
    )
}

/// Runs git in `dir` as a throwaway identity (no signing), failing the test when git fails.
pub fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
