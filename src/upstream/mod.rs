//! Sessions with the MCP servers a catalog's tools come from (its upstreams): start one, list
//! its tools, call a tool, stop it with its whole process tree. Used by `toolreg import mcp`
//! (snapshot and drift check) and by `toolreg serve` (forwarding calls).
//!
//! Every wait is bounded: starting, `tools/list` and each call have a time limit, and a server
//! that dies or prints garbage is reported with the last lines of its stderr.

mod client;
mod environment;
mod error;
pub mod import;

pub use environment::{upstream_environment, BASE_ENVIRONMENT};
pub use error::UpstreamError;

pub use client::CALLER;
use client::{GatewayClient, Relay};

use crate::model::registry::Upstream;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::ServiceExt;
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type ToolsTap = Arc<Mutex<Option<Vec<Value>>>>;

/// How long a server may take to start and answer `initialize`.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// The per-call limit when the upstream does not set `timeout_ms`.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;
/// The longest message (one line of a stdio server's stdout) read from an upstream; a longer
/// one, or output that never ends its line, fails the calls waiting on that server at once
/// (UPSTREAM_TOO_LARGE) and ends its session, with memory bounded by this.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The client side of a session with `spec`: what it declares and how it answers the server.
fn client(spec: &Upstream) -> GatewayClient {
    GatewayClient::new(&spec.roots, call_timeout(spec))
}

/// The per-call limit of `spec` (also how long its server's requests back may wait).
fn call_timeout(spec: &Upstream) -> Duration {
    spec.timeout_ms.map_or(CALL_TIMEOUT, Duration::from_millis)
}

/// A running MCP client session with one upstream server.
pub struct Session {
    name: String,
    service: RunningService<RoleClient, GatewayClient>,
    /// The downstream clients of the calls in flight (for the server's sampling/elicitation).
    relay: Arc<Relay>,
    /// The process group of a stdio server (killed whole on shutdown).
    group: Option<i32>,
    stderr: Arc<Mutex<String>>,
    /// While armed, the `tools` of every result on the wire, exactly as the server sent them
    /// (the SDK's types drop fields they do not know, e.g. `execution`).
    tools_tap: ToolsTap,
    call_timeout: Duration,
    /// Set (and notified) when the server sent a message over the size limit.
    oversize: Arc<Oversize>,
    /// Set by the server's `notifications/tools/list_changed`.
    tools_changed: Arc<std::sync::atomic::AtomicBool>,
    /// `name version` the server reported.
    pub server: String,
}

/// A stdio server's message over [`MAX_MESSAGE_BYTES`]: seen once, then the session is over.
#[derive(Default)]
struct Oversize {
    seen: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Oversize {
    fn mark(&self) {
        self.seen.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.seen.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// The most pages one `tools/list` listing reads.
pub const MAX_LIST_PAGES: usize = 64;

/// The most tools one listing takes.
pub const MAX_LIST_TOOLS: usize = 10_000;

/// The most bytes of tool definitions one listing takes.
pub const MAX_LIST_BYTES: usize = 32 << 20;

impl Session {
    /// Starts the upstream (a stdio `command`, or connects to a streamable HTTP `url`) and
    /// completes the MCP handshake within `START_TIMEOUT`.
    pub async fn start(name: &str, spec: &Upstream) -> Result<Session, UpstreamError> {
        for var in spec
            .env
            .iter()
            .chain(&spec.bearer_env)
            .chain(spec.header_env.values())
        {
            if std::env::var_os(var).is_none() {
                return Err(UpstreamError::MissingEnv {
                    name: name.into(),
                    var: var.clone(),
                });
            }
        }
        match (spec.command.as_deref(), spec.url.as_deref()) {
            (Some(command), _) => Self::start_stdio(name, command, spec).await,
            (None, Some(url)) => Self::start_http(name, url, spec).await,
            (None, None) => Err(UpstreamError::NoTransport { name: name.into() }),
        }
    }

    /// Connects to a streamable HTTP server. Its tools come back through the SDK's types (no
    /// wire tap over HTTP), so fields the SDK does not model are not kept in a snapshot.
    async fn start_http(name: &str, url: &str, spec: &Upstream) -> Result<Session, UpstreamError> {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        use rmcp::transport::StreamableHttpClientTransport;
        // Every message names the URL redacted: it may carry what a hand-edited registry put
        // there, and errors of the HTTP client quote it whole.
        let shown = crate::trust::redact_url(url);
        let failed = |reason: String| UpstreamError::Failed {
            name: name.into(),
            what: format!("initialize ({shown})"),
            reason: crate::trust::redact_urls_in(&reason),
            stderr: String::new(),
        };
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
        if let Some(var) = &spec.bearer_env {
            config = config.auth_header(std::env::var(var).unwrap_or_default());
        }
        let mut headers = std::collections::HashMap::new();
        for (header, var) in &spec.header_env {
            let value = std::env::var(var).unwrap_or_default();
            let (Ok(h), Ok(mut v)) = (
                axum::http::HeaderName::try_from(header.as_str()),
                axum::http::HeaderValue::try_from(value),
            ) else {
                return Err(failed(format!(
                    "the header `{header}` or the value of `{var}` is not valid in HTTP"
                )));
            };
            v.set_sensitive(true);
            headers.insert(h, v);
        }
        if !headers.is_empty() {
            config = config.custom_headers(headers);
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let service = match tokio::time::timeout(START_TIMEOUT, client(spec).serve(transport)).await
        {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => return Err(failed(e.to_string())),
            Err(_) => {
                return Err(UpstreamError::Timeout {
                    name: name.into(),
                    what: format!("initialize ({shown})"),
                    limit: START_TIMEOUT,
                    stderr: String::new(),
                })
            }
        };
        Ok(Session::running(
            name,
            service,
            None,
            Arc::default(),
            Arc::default(),
            Arc::default(),
            spec,
        ))
    }

    fn running(
        name: &str,
        service: RunningService<RoleClient, GatewayClient>,
        group: Option<i32>,
        stderr: Arc<Mutex<String>>,
        tools_tap: ToolsTap,
        oversize: Arc<Oversize>,
        spec: &Upstream,
    ) -> Session {
        let server = service
            .peer_info()
            .and_then(|i| {
                i.server_info
                    .as_ref()
                    .map(|s| format!("{} {}", s.name, s.version))
            })
            .unwrap_or_else(|| "server version unknown".into());
        Session {
            name: name.into(),
            relay: Arc::clone(&service.service().relay),
            tools_changed: Arc::clone(&service.service().tools_changed),
            service,
            group,
            stderr,
            tools_tap,
            call_timeout: call_timeout(spec),
            oversize,
            server,
        }
    }

    async fn start_stdio(
        name: &str,
        command: &str,
        spec: &Upstream,
    ) -> Result<Session, UpstreamError> {
        let mut cmd = tokio::process::Command::new(command);
        // A server gets what it runs with and what its entry lists, never the rest of our
        // environment (other upstreams' tokens, CI secrets).
        cmd.env_clear().envs(upstream_environment(spec));
        cmd.args(&spec.args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so shutdown reaches grandchildren (npx -> node) too.
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|source| UpstreamError::Spawn {
            name: name.into(),
            command: command.into(),
            source,
        })?;
        let group = child.id().map(|pid| pid as i32);
        let (Some(stdin), Some(stdout), Some(err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three streams were piped");
        };
        let stderr = Arc::new(Mutex::new(String::new()));
        keep_tail(err, Arc::clone(&stderr));
        // Lines that are not JSON never reach the MCP session: the first one is kept, and during
        // the handshake it fails the start at once (instead of waiting out the time limit).
        let garbage = Arc::new(tokio::sync::Notify::new());
        let first_garbage = Arc::new(Mutex::new(None::<String>));
        let (json_lines, session_input) = tokio::io::duplex(1 << 16);
        let tools_tap = Arc::new(Mutex::new(None));
        let oversize = Arc::new(Oversize::default());
        tokio::spawn(filter_json_lines(
            name.to_string(),
            stdout,
            json_lines,
            Arc::clone(&garbage),
            Arc::clone(&first_garbage),
            Arc::clone(&tools_tap),
            Arc::clone(&oversize),
        ));
        let tail = |s: &Arc<Mutex<String>>| s.lock().map(|t| t.clone()).unwrap_or_default();
        let failed = |reason: String, stderr: &Arc<Mutex<String>>| UpstreamError::Failed {
            name: name.into(),
            what: "initialize".into(),
            reason,
            stderr: tail(stderr),
        };
        let handshake = client(spec).serve((session_input, stdin));
        let started = tokio::select! {
            r = tokio::time::timeout(START_TIMEOUT, handshake) => r,
            _ = garbage.notified() => {
                kill_group(group);
                let line = first_garbage.lock().ok().and_then(|g| g.clone()).unwrap_or_default();
                return Err(failed(
                    format!(
                        "it printed a line that is not JSON-RPC on stdout: `{}` (an MCP server over stdio may print only protocol messages there; logs belong on stderr)",
                        crate::model::diag::escape_controls(&line)
                    ),
                    &stderr,
                ));
            }
        };
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                kill_group(group);
                // Give the stderr reader a moment to collect the server's last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return Err(failed(e.to_string(), &stderr));
            }
            Err(_) => {
                kill_group(group);
                return Err(UpstreamError::Timeout {
                    name: name.into(),
                    what: "initialize".into(),
                    limit: START_TIMEOUT,
                    stderr: tail(&stderr),
                });
            }
        };
        // The child is owned by a task that reaps it when it exits (no zombies).
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        Ok(Session::running(
            name, service, group, stderr, tools_tap, oversize, spec,
        ))
    }

    fn stderr_tail(&self) -> String {
        self.stderr.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Whether the connection is gone (the server exited or closed its output).
    pub fn is_closed(&self) -> bool {
        self.service.is_transport_closed() || self.service.is_closed()
    }

    fn failed(&self, what: &str, e: ServiceError) -> UpstreamError {
        // The server answered, with something that is no result of the request: it is alive
        // (its session is kept); the answer is what is wrong.
        if matches!(e, ServiceError::UnexpectedResponse) {
            return UpstreamError::Malformed {
                name: self.name.clone(),
                what: what.into(),
            };
        }
        UpstreamError::Failed {
            name: self.name.clone(),
            what: what.into(),
            reason: crate::trust::redact_urls_in(&e.to_string()),
            stderr: self.stderr_tail(),
        }
    }

    fn timeout(&self, what: &str, limit: Duration) -> UpstreamError {
        UpstreamError::Timeout {
            name: self.name.clone(),
            what: what.into(),
            limit,
            stderr: self.stderr_tail(),
        }
    }

    /// Whether the server said its tool list changed since the last call of this (which
    /// clears it).
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// Every tool the server lists (all pages), as the JSON the server sent. A listing is
    /// bounded: at most [`MAX_LIST_PAGES`] pages, [`MAX_LIST_TOOLS`] tools and
    /// [`MAX_LIST_BYTES`] of definitions, no cursor twice, all within the start time limit; a
    /// server past any of them fails the listing (and so nothing is forwarded to it).
    pub async fn list_tools(&self) -> Result<Vec<Value>, UpstreamError> {
        let what = "tools/list";
        *self.tools_tap.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
        let listed = tokio::time::timeout(START_TIMEOUT, self.list_pages()).await;
        let raw = self
            .tools_tap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default();
        let typed = listed.map_err(|_| self.timeout(what, START_TIMEOUT))??;
        if raw.len() == typed.len() {
            Ok(raw)
        } else {
            Ok(typed
                .iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect())
        }
    }

    /// The pages of a listing, within the bounds of [`Session::list_tools`].
    async fn list_pages(&self) -> Result<Vec<rmcp::model::Tool>, UpstreamError> {
        let what = "tools/list";
        let bound = |reason: String| {
            // What was read so far is dropped at once.
            *self.tools_tap.lock().unwrap_or_else(|e| e.into_inner()) = None;
            UpstreamError::Failed {
                name: self.name.clone(),
                what: what.into(),
                reason,
                stderr: self.stderr_tail(),
            }
        };
        let mut tools = Vec::new();
        let mut bytes = 0usize;
        let mut cursors = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let page = self
                .service
                .list_tools(Some(
                    rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.take()),
                ))
                .await
                .map_err(|e| self.failed(what, e))?;
            bytes += page
                .tools
                .iter()
                .map(|t| serde_json::to_vec(t).map_or(0, |v| v.len()))
                .sum::<usize>();
            tools.extend(page.tools);
            if tools.len() > MAX_LIST_TOOLS {
                return Err(bound(format!("it lists more than {MAX_LIST_TOOLS} tools")));
            }
            if bytes > MAX_LIST_BYTES {
                return Err(bound(format!(
                    "its tool definitions pass {} MiB",
                    MAX_LIST_BYTES >> 20
                )));
            }
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) => {
                    if next.len() > 1024 || !cursors.insert(next.clone()) {
                        return Err(bound("it sent a cursor it sent before (or one over 1 KiB): the listing would not end".into()));
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(bound(format!("it lists more than {MAX_LIST_PAGES} pages")))
    }

    /// Calls a tool by its own name; the server's `isError` results come back as they are.
    pub async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<CallToolResult, UpstreamError> {
        let what = format!("tools/call `{tool}`");
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        // The server may ask this call's client for sampling or elicitation meanwhile.
        let _in_flight = self.relay.enter();
        let called = tokio::time::timeout(self.call_timeout, self.service.call_tool(params));
        let too_large = |what: String| UpstreamError::TooLarge {
            name: self.name.clone(),
            what,
        };
        let result = tokio::select! {
            r = called => r
                .map_err(|_| self.timeout(&what, self.call_timeout))
                .and_then(|r| r.map_err(|e| self.failed(&what, e))),
            _ = self.oversize.wait() => return Err(too_large(what)),
        };
        // The session may see its input close before the oversize note is read: say why.
        match result {
            Err(_) if self.oversize.seen.load(std::sync::atomic::Ordering::SeqCst) => {
                Err(too_large(what))
            }
            other => other,
        }
    }

    /// Closes the session and stops the server's whole process group.
    pub async fn shutdown(self) {
        self.service.cancellation_token().cancel();
        // Drop stops the process group.
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        kill_group(self.group);
    }
}

/// Keeps the last `STDERR_TAIL` bytes of a server's stderr.
fn keep_tail(err: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    use tokio::io::AsyncReadExt;
    // Read in chunks, not lines: a server that never ends a line must not grow memory.
    tokio::spawn(async move {
        let mut err = err;
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = err.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > STDERR_TAIL {
                let mut cut = t.len() - STDERR_TAIL;
                while !t.is_char_boundary(cut) {
                    cut += 1;
                }
                t.drain(..cut);
            }
        }
    });
}

/// Copies the server's stdout to the session, line by line, dropping lines that are not JSON.
/// A line over [`MAX_MESSAGE_BYTES`] (or output that never ends its line) is not buffered
/// further: the session ends and the calls waiting on it fail at once.
async fn filter_json_lines(
    name: String,
    stdout: tokio::process::ChildStdout,
    mut to_session: tokio::io::DuplexStream,
    garbage: Arc<tokio::sync::Notify>,
    first_garbage: Arc<Mutex<Option<String>>>,
    tools_tap: ToolsTap,
    oversize: Arc<Oversize>,
) {
    use tokio::io::AsyncWriteExt;
    let mut reader = tokio::io::BufReader::with_capacity(1 << 16, stdout);
    let mut line: Vec<u8> = Vec::new();
    let mut dropped: u64 = 0;
    loop {
        line.clear();
        match read_bounded_line(&mut reader, &mut line, MAX_MESSAGE_BYTES).await {
            Ok(Line::Done) => {}
            Ok(Line::End) => break,
            Ok(Line::TooLong) => {
                oversize.mark();
                break;
            }
            Err(_) => break,
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            continue;
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        let tapping = tools_tap.lock().is_ok_and(|t| t.is_some());
        let parsed = if tapping {
            serde_json::from_str::<Value>(trimmed).map(Some)
        } else {
            serde_json::from_str::<serde::de::IgnoredAny>(trimmed).map(|_| None)
        };
        if let Ok(Some(msg)) = &parsed {
            if let Some(tools) = msg.pointer("/result/tools").and_then(Value::as_array) {
                if let Ok(mut tap) = tools_tap.lock() {
                    if let Some(t) = tap.as_mut() {
                        t.extend(tools.iter().cloned());
                    }
                }
            }
        }
        if parsed.is_err() {
            if let Ok(mut g) = first_garbage.lock() {
                if g.is_none() {
                    *g = Some(trimmed.chars().take(200).collect());
                    garbage.notify_one();
                }
            }
            // Dropped, and said: the operator's log names it (the first five, then every
            // thousandth, so a server printing in a loop cannot flood the log).
            dropped += 1;
            if dropped <= 5 || dropped.is_multiple_of(1000) {
                eprintln!(
                    "toolreg: upstream `{}` wrote a line that is not JSON-RPC ({} bytes; dropped, {dropped} so far): {}",
                    crate::model::diag::escape_controls(&name),
                    trimmed.len(),
                    crate::model::diag::escape_controls(crate::model::text::clip_chars(trimmed, 120))
                );
            }
            continue;
        }
        if to_session.write_all(trimmed.as_bytes()).await.is_err()
            || to_session.write_all(b"\n").await.is_err()
        {
            break;
        }
    }
    // EOF or an oversized message: dropping `to_session` closes the session's input, so it
    // sees the server is gone.
}

enum Line {
    /// A whole line (without its newline) is in the buffer.
    Done,
    /// The output ended with nothing more.
    End,
    /// The line passed the limit before it ended.
    TooLong,
}

/// Reads up to the next newline into `line`, never holding more than `max` bytes of it.
async fn read_bounded_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    use tokio::io::AsyncBufReadExt;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if line.is_empty() {
                Line::End
            } else {
                Line::Done
            });
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if line.len() + take > max {
            return Ok(Line::TooLong);
        }
        line.extend_from_slice(&chunk[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            return Ok(Line::Done);
        }
    }
}

/// SIGTERM, then SIGKILL, to a process group (no-op without one).
fn kill_group(group: Option<i32>) {
    #[cfg(unix)]
    if let Some(pgid) = group.filter(|g| *g > 1) {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is shared.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: as above.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        });
    }
    #[cfg(not(unix))]
    let _ = group;
}
