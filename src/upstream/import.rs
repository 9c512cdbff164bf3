//! `toolreg import mcp`: snapshot a live server's `tools/list` into `DEFS/NAME.mcp.json` and
//! record how to reach it under `[upstreams.NAME]` in `DEFS/toolreg.toml`; `import --check`
//! compares every recorded upstream's live tools with its committed snapshot (drift).

use super::{Session, UpstreamError};
use crate::compiler::overlay::OVERLAY_FILE;
use crate::model::registry::Upstream;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Printed with the end of the server's stderr: `import` runs on the operator's terminal.
    #[error("{}", .0.with_stderr())]
    Upstream(#[from] UpstreamError),
    #[error("`{0}` is not one safe name (letters, digits, `_`, `-`; at most 64); it names the file `NAME.mcp.json` and the `[upstreams.NAME]` table")]
    BadName(String),
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error(
        "{path}: no upstreams are recorded; add one with `toolreg import mcp NAME -- CMD ARGS...`"
    )]
    NoUpstreams { path: String },
    #[error("the URL `{shown}` carries a credential ({what}); it would be written into toolreg.toml and registry.json, which are committed")]
    SecretInUrl { shown: String, what: String },
    #[error(transparent)]
    Approval(#[from] crate::trust::ApprovalError),
    #[error(transparent)]
    Unapproved(#[from] crate::trust::Unapproved),
}

/// What an import wrote.
#[derive(Debug)]
pub struct Imported {
    pub file: PathBuf,
    pub tools: usize,
    pub server: String,
    pub overlay: PathBuf,
    /// The approvals file the typed command was recorded in (see [`crate::trust::approvals`]).
    pub approvals: PathBuf,
    /// Tools the server listed under a name toolreg cannot use, left out of the snapshot.
    pub left_out: Vec<LeftOut>,
}

/// A tool the server listed under a name that cannot be used (see [`name_problem`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Where it was in the server's `tools/list` result: `/tools/N/name`.
    pub pointer: String,
    /// The name, with control and invisible characters escaped and cut to 80 characters.
    pub shown: String,
    pub why: String,
}

/// The longest tool name taken from a server (the MCP spec's limit for tool names).
pub const MAX_TOOL_NAME: usize = 128;

/// Why a listed tool's name cannot be used, if it cannot: not a string, empty, over
/// [`MAX_TOOL_NAME`] characters, a control, bidi or invisible character (it would reach files,
/// terminals and models), or a path separator or `..` (names become file names of docs pages).
pub fn name_problem(name: Option<&Value>) -> Option<String> {
    let Some(name) = name.and_then(Value::as_str) else {
        return Some("has no string `name`".into());
    };
    let chars = name.chars().count();
    if name.trim().is_empty() {
        Some("is empty".into())
    } else if chars > MAX_TOOL_NAME {
        Some(format!(
            "is {chars} characters long (MCP tool names are at most {MAX_TOOL_NAME})"
        ))
    } else if name.chars().any(crate::model::diag::is_unsafe_char) {
        Some("contains control, bidi or invisible characters".into())
    } else if name.contains('/') || name.contains('\\') || name.contains("..") {
        Some("contains a path separator or `..`".into())
    } else {
        None
    }
}

/// Splits a server's tools into those whose names toolreg can use and those it leaves out.
pub fn usable_tools(tools: Vec<Value>) -> (Vec<Value>, Vec<LeftOut>) {
    let mut usable = Vec::with_capacity(tools.len());
    let mut left_out = Vec::new();
    for (i, tool) in tools.into_iter().enumerate() {
        match name_problem(tool.get("name")) {
            None => usable.push(tool),
            Some(why) => {
                let raw = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                let escaped = crate::model::diag::escape_controls(raw);
                let mut shown: String = escaped.chars().take(80).collect();
                if shown.len() < escaped.len() {
                    shown.push_str("...");
                }
                left_out.push(LeftOut {
                    pointer: format!("/tools/{i}/name"),
                    shown,
                    why,
                });
            }
        }
    }
    (usable, left_out)
}

fn file_error(path: &Path, message: impl std::fmt::Display) -> ImportError {
    ImportError::File {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// The snapshot file's bytes: tools sorted by name, keys sorted (schemas keep their property
/// order), a `_source` note beside them; pretty, LF, final newline.
pub fn snapshot_text(name: &str, server: &str, tools: &[Value]) -> String {
    let mut tools = tools.to_vec();
    tools.sort_by(|a, b| tool_name(a).cmp(tool_name(b)));
    let doc = json!({
        "_source": format!("tools/list of the MCP server `{name}` ({server}), written by `toolreg import mcp`; refresh with the same command, check with `toolreg import --check`"),
        "tools": tools,
    });
    crate::model::canonical::to_pretty(&crate::model::canonical::sort_keys_except(
        &doc,
        &["inputSchema", "outputSchema"],
    ))
}

fn tool_name(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// Imports one server: lists its tools, writes the snapshot and the overlay entry.
pub async fn import(name: &str, defs: &Path, spec: &Upstream) -> Result<Imported, ImportError> {
    // The same rule the compiler applies to `[upstreams.NAME]` (TR080).
    if !crate::compiler::enrich::provider_valid(name) {
        return Err(ImportError::BadName(crate::model::diag::escape_controls(
            name,
        )));
    }
    if let Some(url) = &spec.url {
        let found = crate::trust::url_credentials(url);
        if !found.is_empty() {
            return Err(ImportError::SecretInUrl {
                shown: crate::trust::redact_url(url),
                what: found.join(", "),
            });
        }
    }
    // Where the approval goes is settled before anything runs: no store, no import.
    let approvals = crate::trust::Approvals::default_path()?;
    let session = Session::start(name, spec).await?;
    let listed = session.list_tools().await;
    let server = session.server.clone();
    session.shutdown().await;
    // A name no file, terminal or model should carry never reaches the snapshot.
    let (tools, left_out) = usable_tools(listed?);
    std::fs::create_dir_all(defs).map_err(|e| file_error(defs, e))?;
    let file = defs.join(format!("{name}.mcp.json"));
    write_atomically(&file, &snapshot_text(name, &server, &tools))?;
    let overlay = defs.join(OVERLAY_FILE);
    record_upstream(&overlay, name, spec)?;
    // The person who typed the command approved it; record it as the compiler will read it
    // back (the registry's form), so `serve` and `import --check` run it on this machine.
    let recorded = recorded_upstreams(defs)?;
    if let Some(up) = recorded.get(name) {
        crate::trust::Approvals::approve(&approvals, &[(name, up)])?;
    }
    Ok(Imported {
        file,
        tools: tools.len(),
        server,
        overlay,
        approvals,
        left_out,
    })
}

/// Writes beside the target, then renames: a reader never sees half a file.
fn write_atomically(path: &Path, text: &str) -> Result<(), ImportError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".toolreg-import");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| file_error(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        file_error(path, e)
    })
}

/// Sets `[upstreams.NAME]` in the overlay (created when missing), keeping everything else in
/// the file as it was (comments, order, formatting); a `timeout_ms` already there is kept.
pub fn record_upstream(overlay: &Path, name: &str, spec: &Upstream) -> Result<(), ImportError> {
    use toml_edit::{value, Array, DocumentMut, Item, Table};
    let text = match std::fs::read_to_string(overlay) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(file_error(overlay, e)),
    };
    let mut doc: DocumentMut = text.parse().map_err(|e| {
        file_error(
            overlay,
            format!("is not valid TOML, so the upstream could not be recorded: {e}"),
        )
    })?;
    let upstreams = doc
        .entry("upstreams")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| file_error(overlay, "`upstreams` is not a table"))?;
    let old_timeout = upstreams
        .get(name)
        .and_then(|t| t.get("timeout_ms"))
        .and_then(Item::as_integer);
    let mut entry = Table::new();
    let strings = |items: &[String]| {
        let mut a = Array::new();
        for i in items {
            a.push(i.as_str());
        }
        value(a)
    };
    if let Some(c) = &spec.command {
        entry.insert("command", value(c.as_str()));
        entry.insert("args", strings(&spec.args));
    }
    if let Some(u) = &spec.url {
        entry.insert("url", value(u.as_str()));
    }
    if !spec.env.is_empty() {
        entry.insert("env", strings(&spec.env));
    }
    if let Some(b) = &spec.bearer_env {
        entry.insert("bearer_env", value(b.as_str()));
    }
    if !spec.header_env.is_empty() {
        let mut t = toml_edit::InlineTable::new();
        for (h, v) in &spec.header_env {
            t.insert(h, v.as_str().into());
        }
        entry.insert("header_env", value(t));
    }
    if !spec.roots.is_empty() {
        entry.insert("roots", strings(&spec.roots));
    }
    if let Some(t) = spec.timeout_ms.map(|t| t as i64).or(old_timeout) {
        entry.insert("timeout_ms", value(t));
    }
    upstreams.insert(name, Item::Table(entry));
    write_atomically(overlay, &doc.to_string())
}

/// The upstreams recorded in the overlay (read leniently: only `[upstreams]` matters here; the
/// compiler checks the rest).
pub fn recorded_upstreams(defs: &Path) -> Result<BTreeMap<String, Upstream>, ImportError> {
    let path = defs.join(OVERLAY_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| file_error(&path, e))?;
    let table: toml::Table = text.parse().map_err(|e| file_error(&path, e))?;
    let Some(ups) = table.get("upstreams") else {
        return Err(ImportError::NoUpstreams {
            path: path.display().to_string(),
        });
    };
    let ups: BTreeMap<String, crate::compiler::overlay::UpstreamSpec> = ups
        .clone()
        .try_into()
        .map_err(|e| file_error(&path, format!("[upstreams]: {e}")))?;
    // The registry's form (the compiler's own conversion), so approval digests match what
    // `serve` will check.
    Ok(ups
        .into_iter()
        .map(|(name, u)| {
            let up = u.to_upstream(&name);
            (name, up)
        })
        .collect())
}

/// How one upstream's live tools differ from its snapshot.
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Drift {
    pub upstream: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Tool name -> the parts that changed (`description`, `inputSchema`, `annotations`, ...).
    pub changed: BTreeMap<String, Vec<String>>,
    /// The live tools as `toolreg.lock` sees them: every tool whose live definition is not the
    /// approved one (`None`: the folder has no lock, so nothing was approved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against_lock: Option<Vec<LockFinding>>,
}

/// A live tool whose definition is not the one `toolreg.lock` approved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LockFinding {
    pub tool: String,
    /// `changed` (with `parts`), `unapproved` (not in the lock) or `removed` (locked, no longer
    /// listed).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// The lock's digest and the live one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
}

impl Drift {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.against_lock.as_ref().is_none_or(Vec::is_empty)
    }
}

/// Compares live tools with the pins `toolreg.lock` holds for their upstream.
pub fn against_lock(
    approved: &BTreeMap<String, crate::model::registry::ToolPin>,
    live: &[Value],
) -> Vec<LockFinding> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for t in live {
        let name = tool_name(t).to_string();
        let now = crate::trust::pin::pin_value(t).unwrap_or_default();
        seen.insert(name.clone());
        match approved.get(&name) {
            Some(p) if p.digest == now.digest => {}
            Some(p) => out.push(LockFinding {
                parts: crate::trust::pin::changed_parts(p, &now),
                tool: name,
                status: "changed",
                approved: Some(p.digest.clone()),
                live: Some(now.digest),
            }),
            None => out.push(LockFinding {
                tool: name,
                status: "unapproved",
                parts: Vec::new(),
                approved: None,
                live: Some(now.digest),
            }),
        }
    }
    for (name, p) in approved {
        if !seen.contains(name) {
            out.push(LockFinding {
                tool: name.clone(),
                status: "removed",
                parts: Vec::new(),
                approved: Some(p.digest.clone()),
                live: None,
            });
        }
    }
    out
}

/// Compares two tool lists by name and by each field of a tool.
pub fn drift(upstream: &str, committed: &[Value], live: &[Value]) -> Drift {
    let by_name = |tools: &[Value]| -> BTreeMap<String, Value> {
        tools
            .iter()
            .map(|t| {
                (
                    tool_name(t).to_string(),
                    crate::model::canonical::sort_keys(t),
                )
            })
            .collect()
    };
    let (old, new) = (by_name(committed), by_name(live));
    let mut d = Drift {
        upstream: upstream.into(),
        ..Default::default()
    };
    // (`against_lock` is filled by `check`, which reads the lock.)
    for (name, tool) in &new {
        match old.get(name) {
            None => d.added.push(name.clone()),
            Some(before) if before != tool => {
                let keys: std::collections::BTreeSet<&String> = before
                    .as_object()
                    .into_iter()
                    .chain(tool.as_object())
                    .flat_map(|o| o.keys())
                    .collect();
                let parts = keys
                    .into_iter()
                    .filter(|k| before.get(k.as_str()) != tool.get(k.as_str()))
                    .cloned()
                    .collect();
                d.changed.insert(name.clone(), parts);
            }
            Some(_) => {}
        }
    }
    d.removed = old
        .keys()
        .filter(|n| !new.contains_key(*n))
        .cloned()
        .collect();
    d
}

/// Reads the tools of a committed snapshot.
pub fn committed_tools(defs: &Path, upstream: &Upstream) -> Result<Vec<Value>, ImportError> {
    let path = defs.join(&upstream.file);
    let text = std::fs::read_to_string(&path).map_err(|e| file_error(&path, e))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| file_error(&path, e))?;
    doc.get("tools")
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| file_error(&path, "has no `tools` array"))
}

/// Re-lists every recorded upstream and compares it with its snapshot.
/// Runs only upstreams this machine approved: when any is not, nothing starts at all.
pub async fn check(defs: &Path) -> Result<Vec<Drift>, ImportError> {
    let recorded = recorded_upstreams(defs)?;
    crate::trust::Approvals::load_default()?.refuse_unapproved(&recorded)?;
    let lock = crate::trust::lock::Lock::read(defs).map_err(|e| ImportError::File {
        path: crate::trust::lock::path(defs).display().to_string(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for (name, spec) in recorded {
        let committed = committed_tools(defs, &spec)?;
        let session = Session::start(&name, &spec).await?;
        let live = session.list_tools().await;
        session.shutdown().await;
        // Tools the import leaves out are not drift.
        let (live, _) = usable_tools(live?);
        let mut d = drift(&name, &committed, &live);
        d.against_lock = lock
            .as_ref()
            .map(|l| against_lock(&l.upstream_pins(&name), &live));
        out.push(d);
    }
    Ok(out)
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return writeln!(f, "{}: up to date", self.upstream);
        }
        let snapshot_drift =
            !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty());
        writeln!(
            f,
            "{}: {}",
            self.upstream,
            if snapshot_drift {
                "the live server differs from its snapshot"
            } else {
                "the snapshot is current"
            }
        )?;
        for n in &self.added {
            writeln!(f, "  added    {}", crate::model::diag::escape_controls(n))?;
        }
        for n in &self.removed {
            writeln!(f, "  removed  {}", crate::model::diag::escape_controls(n))?;
        }
        for (n, parts) in &self.changed {
            writeln!(
                f,
                "  changed  {} ({})",
                crate::model::diag::escape_controls(n),
                parts.join(", ")
            )?;
        }
        match &self.against_lock {
            None => writeln!(
                f,
                "  toolreg.lock: none, so no tool of this server was approved; build and commit the lock"
            )?,
            Some(found) if found.is_empty() => {
                writeln!(f, "  toolreg.lock: every live tool is the approved one")?
            }
            Some(found) => {
                writeln!(f, "  toolreg.lock: {} live tool(s) are not what was approved", found.len())?;
                for l in found {
                    let short = |d: &Option<String>| {
                        d.as_deref().map_or("-".to_string(), |d| d.chars().take(19).collect())
                    };
                    writeln!(
                        f,
                        "    {:<10} {}{}  approved {}  live {}",
                        l.status,
                        crate::model::diag::escape_controls(&l.tool),
                        if l.parts.is_empty() { String::new() } else { format!(" ({})", l.parts.join(", ")) },
                        short(&l.approved),
                        short(&l.live)
                    )?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_names_are_left_out_and_shown_escaped() {
        let tools = vec![
            json!({"name": "read_graph"}),
            json!({"name": "../../etc/passwd"}),
            json!({"name": "clear\u{1b}[2Jscreen"}),
            json!({"name": "x".repeat(5000)}),
            json!({"name": "tag\u{E0041}ged"}),
            json!({"name": 7}),
            json!({"name": "search nodes"}),
        ];
        let (usable, left) = usable_tools(tools);
        assert_eq!(
            usable.iter().map(tool_name).collect::<Vec<_>>(),
            ["read_graph", "search nodes"]
        );
        assert_eq!(left.len(), 5);
        assert_eq!(left[0].pointer, "/tools/1/name");
        assert!(left[0].why.contains("path separator"));
        assert_eq!(left[1].shown, "clear\\u{1b}[2Jscreen");
        assert!(left[2].why.contains("5000 characters"));
        assert!(left[2].shown.len() <= 83);
        assert_eq!(left[3].shown, "tag\\u{e0041}ged");
        assert!(left[4].why.contains("no string"));
    }

    #[test]
    fn drift_names_added_removed_and_changed_parts() {
        let a = vec![
            json!({"name": "a", "description": "x", "inputSchema": {"type": "object"}}),
            json!({"name": "b", "description": "y", "inputSchema": {"type": "object"}}),
        ];
        let b = vec![
            json!({"name": "b", "description": "y2", "inputSchema": {"type": "object", "properties": {}}}),
            json!({"name": "c", "description": "z", "inputSchema": {"type": "object"}}),
        ];
        let d = drift("s", &a, &b);
        assert_eq!(d.added, ["c"]);
        assert_eq!(d.removed, ["a"]);
        assert_eq!(d.changed["b"], ["description", "inputSchema"]);
        assert!(drift("s", &a, &a).is_empty());
        // Key order is not drift.
        let reordered = vec![
            json!({"inputSchema": {"type": "object"}, "description": "x", "name": "a"}),
            a[1].clone(),
        ];
        assert!(drift("s", &a, &reordered).is_empty());
    }

    #[test]
    fn recording_an_upstream_keeps_the_rest_of_the_overlay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(OVERLAY_FILE);
        std::fs::write(
            &path,
            "# my catalog\n[registry]\nname = \"x\" # keep me\n\n[upstreams.mem]\ncommand = \"old\"\ntimeout_ms = 5000\n",
        )
        .unwrap();
        let spec = Upstream {
            command: Some("node".into()),
            args: vec!["server.js".into(), "--flag".into()],
            env: vec!["TOKEN".into()],
            ..Default::default()
        };
        record_upstream(&path, "mem", &spec).unwrap();
        record_upstream(&path, "fs", &spec).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# my catalog\n[registry]\nname = \"x\" # keep me\n"),
            "{text}"
        );
        let ups = recorded_upstreams(dir.path()).unwrap();
        assert_eq!(ups["mem"].command.as_deref(), Some("node"));
        assert_eq!(ups["mem"].args, ["server.js", "--flag"]);
        assert_eq!(
            ups["mem"].timeout_ms,
            Some(5000),
            "an existing timeout is kept"
        );
        assert_eq!(ups["fs"].file, "fs.mcp.json");
        assert_eq!(ups["fs"].env, ["TOKEN"]);
    }
}
