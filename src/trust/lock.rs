//! `toolreg.lock`: the tool definitions a catalog was reviewed with.
//!
//! Beside the overlay, committed with it: one entry per compiled tool with its pin (a digest of
//! everything a model reads or exec forwards: see [`super::pin`]) and where it came from (the
//! definitions file and, for an imported MCP server, the upstream and the server's name and
//! version). `toolreg build` writes it; `toolreg check` fails while it is stale; `import
//! --check` compares a live server with it. Approval is the commit of the lock: a pull request
//! that changes a tool's text or schema changes a line here, in plain sight of the reviewer.
//!
//! A folder gets a lock when it has an overlay (`toolreg.toml`) or already has a lock: a
//! zero-config folder is compiled as found, and `toolreg build --lock` starts one for it.

use crate::model::registry::{Registry, ToolPin};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The lock's file name, beside `toolreg.toml`.
pub const LOCK_FILE: &str = "toolreg.lock";

/// The lock format's version.
pub const LOCK_VERSION: u32 = 1;

const HEADER: &str = "\
# toolreg.lock: the tool definitions this catalog was reviewed with. Written by `toolreg build`;
# `toolreg check` fails while it is stale. Commit it, and review a change to it as you review
# code: a changed digest is a tool whose text or schema changed (its parts say which).
";

/// The whole lock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    pub version: u32,
    /// Sorted by file, then tool name.
    #[serde(default, rename = "tool")]
    pub tools: Vec<LockedTool>,
}

/// One tool as approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockedTool {
    /// The tool's name as its source defines it.
    pub name: String,
    /// The op it compiled to.
    pub op: String,
    /// The definitions file, relative to the definitions folder.
    pub file: String,
    /// The `[upstreams]` entry whose snapshot the file is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The server's `name version`, as it reported itself when imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub digest: String,
    pub parts: BTreeMap<String, String>,
}

impl LockedTool {
    pub fn pin(&self) -> ToolPin {
        ToolPin {
            digest: self.digest.clone(),
            parts: self.parts.clone(),
        }
    }
}

/// Why a lock file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

fn file_error(path: &Path, message: impl std::fmt::Display) -> LockError {
    LockError::File {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

impl Lock {
    /// The lock of a compiled registry. `defs` is read for the server each snapshot names.
    pub fn of(reg: &Registry, defs: &Path) -> Lock {
        let upstream_of: BTreeMap<&str, &str> = reg
            .upstreams
            .iter()
            .map(|(n, u)| (u.file.as_str(), n.as_str()))
            .collect();
        let servers: BTreeMap<&str, Option<String>> = upstream_of
            .keys()
            .map(|f| (*f, snapshot_server(&defs.join(f))))
            .collect();
        let mut tools: Vec<LockedTool> = reg
            .ops
            .values()
            .filter_map(|r| {
                let pin = r.pin.as_ref()?;
                let file = r.source.file.as_str();
                Some(LockedTool {
                    name: r.tool_name.clone(),
                    op: r.op.clone(),
                    file: file.to_string(),
                    upstream: upstream_of.get(file).map(|u| u.to_string()),
                    server: servers.get(file).cloned().flatten(),
                    digest: pin.digest.clone(),
                    parts: pin.parts.clone(),
                })
            })
            .collect();
        tools.sort_by(|a, b| (&a.file, &a.name, &a.op).cmp(&(&b.file, &b.name, &b.op)));
        Lock {
            version: LOCK_VERSION,
            tools,
        }
    }

    /// The file's bytes: a header, then TOML (deterministic: the order is the lock's).
    pub fn render(&self) -> String {
        let body = toml::to_string(self).expect("a lock always serializes");
        format!("{HEADER}{body}")
    }

    pub fn parse(text: &str, path: &Path) -> Result<Lock, LockError> {
        let lock: Lock = toml::from_str(text).map_err(|e| file_error(path, e.message()))?;
        if lock.version != LOCK_VERSION {
            return Err(file_error(
                path,
                format!(
                    "lock format version {} is not {LOCK_VERSION}; rebuild with this toolreg",
                    lock.version
                ),
            ));
        }
        Ok(lock)
    }

    /// The lock in `defs`, if there is one.
    pub fn read(defs: &Path) -> Result<Option<Lock>, LockError> {
        let path = defs.join(LOCK_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(file_error(&path, e)),
        }
    }

    /// The approved pins of one upstream's tools, by tool name.
    pub fn upstream_pins(&self, upstream: &str) -> BTreeMap<String, ToolPin> {
        self.tools
            .iter()
            .filter(|t| t.upstream.as_deref() == Some(upstream))
            .map(|t| (t.name.clone(), t.pin()))
            .collect()
    }
}

/// What [`write_text`] did.
pub enum Written {
    /// The lock already held these bytes.
    Unchanged,
    /// The lock was written; `previous` is the text it replaced (none when there was no lock or
    /// it could not be read), for saying what changed.
    Replaced { previous: Option<String> },
}

/// Writes a rendered lock ([`Lock::render`]) when its bytes differ from the file's (beside it,
/// then renamed: never half a file).
pub fn write_text(defs: &Path, text: &str) -> Result<Written, LockError> {
    let path = defs.join(LOCK_FILE);
    let previous = std::fs::read_to_string(&path).ok();
    if previous.as_deref() == Some(text) {
        return Ok(Written::Unchanged);
    }
    // A name of this process's own, so two builds of one folder never share a temporary file.
    let tmp = defs.join(format!(".{LOCK_FILE}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| file_error(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        file_error(&path, e)
    })?;
    Ok(Written::Replaced { previous })
}

/// The lock's path in `defs`.
pub fn path(defs: &Path) -> PathBuf {
    defs.join(LOCK_FILE)
}

/// A tool's name in a [`LockDiff`] (`file: name`, controls escaped): tools of one key are one
/// tool to the diff.
fn diff_key(t: &LockedTool) -> String {
    format!(
        "{}: {}",
        t.file,
        crate::model::diag::escape_controls(&t.name)
    )
}

/// How one lock differs from another, tool by tool (`file: name`).
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub struct LockDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Tool -> the parts whose digests differ.
    pub changed: BTreeMap<String, Vec<String>>,
}

impl LockDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// `approved` -> `now`.
    pub fn between(approved: &Lock, now: &Lock) -> LockDiff {
        let old: BTreeMap<String, &LockedTool> =
            approved.tools.iter().map(|t| (diff_key(t), t)).collect();
        let new: BTreeMap<String, &LockedTool> =
            now.tools.iter().map(|t| (diff_key(t), t)).collect();
        let mut d = LockDiff::default();
        for (k, t) in &new {
            match old.get(k) {
                None => d.added.push(k.clone()),
                Some(before) if before.digest != t.digest => {
                    d.changed.insert(
                        k.clone(),
                        super::pin::changed_parts(&before.pin(), &t.pin()),
                    );
                }
                Some(before) if *before != *t => {
                    // Same definition, another op or source note: not a change of text.
                    d.changed.insert(k.clone(), vec!["op or source".into()]);
                }
                Some(_) => {}
            }
        }
        d.removed = old
            .keys()
            .filter(|k| !new.contains_key(*k))
            .cloned()
            .collect();
        d
    }

    /// One line per tool, indented, for terminals.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for k in &self.added {
            out.push_str(&format!("  added    {k}\n"));
        }
        for k in &self.removed {
            out.push_str(&format!("  removed  {k}\n"));
        }
        for (k, parts) in &self.changed {
            out.push_str(&format!("  changed  {k} ({})\n", parts.join(", ")));
        }
        out
    }
}

/// Where each tool's table starts in a rendered lock (its `[tool.parts]` follows it).
const TOOL_TABLE: &str = "[[tool]]\n";

/// A lock's text cut before each `[[tool]]` line: what precedes the first, then one piece per
/// tool table.
fn tool_tables(text: &str) -> (&str, Vec<&str>) {
    let mut starts: Vec<usize> = memchr::memmem::find_iter(text.as_bytes(), TOOL_TABLE.as_bytes())
        .filter(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
        .collect();
    starts.push(text.len());
    let head = &text[..starts[0]];
    let tables = starts.windows(2).map(|w| &text[w[0]..w[1]]).collect();
    (head, tables)
}

impl LockDiff {
    /// [`LockDiff::between`] the lock text `previous` and `now` (whose rendering is
    /// `now_text`), parsing only the tool tables `now_text` does not hold word for word: at
    /// 10,000 tools, parsing the whole old lock was most of what a one-tool rebuild spent on
    /// its lock. The same diff as parsing it all: a table found in both texts is one tool,
    /// unchanged, whose key ([`diff_key`]) no other table has; a text where that cannot be shown (a key or
    /// table twice, a multi-line string, a table not rendered as toolreg renders it) is parsed
    /// whole. With the number of tools `previous` pins; `None` when it does not parse.
    pub fn between_texts(previous: &str, now: &Lock, now_text: &str) -> Option<(LockDiff, usize)> {
        Self::by_tables(previous, now, now_text).or_else(|| {
            let before = Lock::parse(previous, Path::new(LOCK_FILE)).ok()?;
            Some((LockDiff::between(&before, now), before.tools.len()))
        })
    }

    /// [`LockDiff::between_texts`] from the tables that differ; `None` when the text must be
    /// parsed whole.
    fn by_tables(previous: &str, now: &Lock, now_text: &str) -> Option<(LockDiff, usize)> {
        let (_, new_tables) = tool_tables(now_text);
        let (old_head, old_tables) = tool_tables(previous);
        let multiline = previous.contains("\"\"\"") || previous.contains("'''");
        if new_tables.len() != now.tools.len() || multiline {
            return None;
        }
        let new_set: std::collections::HashSet<&str> = new_tables.iter().copied().collect();
        let old_set: std::collections::HashSet<&str> = old_tables.iter().copied().collect();
        if new_set.len() != new_tables.len() || old_set.len() != old_tables.len() {
            return None;
        }
        let mut rest = old_head.to_string();
        for t in old_tables.iter().filter(|t| !new_set.contains(*t)) {
            rest.push_str(t);
        }
        let before = Lock::parse(&rest, Path::new(LOCK_FILE)).ok()?;
        let (same, changed): (Vec<_>, Vec<_>) = now
            .tools
            .iter()
            .zip(&new_tables)
            .partition(|(_, t)| old_set.contains(*t));
        let same_keys: std::collections::HashSet<String> =
            same.iter().map(|(t, _)| diff_key(t)).collect();
        let overlap = before
            .tools
            .iter()
            .chain(changed.iter().map(|(t, _)| *t))
            .any(|t| same_keys.contains(&diff_key(t)));
        if same_keys.len() != same.len() || overlap {
            return None;
        }
        let now_rest = Lock {
            version: now.version,
            tools: changed.into_iter().map(|(t, _)| t.clone()).collect(),
        };
        let pinned = before.tools.len() + same.len();
        Some((LockDiff::between(&before, &now_rest), pinned))
    }
}

/// The server an MCP snapshot says it was listed from (`name version`), read from its
/// `_source` note as `toolreg import mcp` writes it.
pub fn snapshot_server(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    let note = doc.get("_source")?.as_str()?;
    // "tools/list of the MCP server `NAME` (SERVER), written by `toolreg import mcp`; ..."
    let rest = note.split_once("` (")?.1;
    let server = rest.rsplit_once("), written by")?.0;
    (!server.is_empty()).then(|| crate::model::diag::escape_controls(server))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(file: &str, name: &str, desc: &str) -> LockedTool {
        let pin = super::super::pin::pin(
            serde_json::json!({"name": name, "description": desc})
                .as_object()
                .unwrap(),
        );
        LockedTool {
            name: name.into(),
            op: format!("x.{name}"),
            file: file.into(),
            upstream: None,
            server: None,
            digest: pin.digest,
            parts: pin.parts,
        }
    }

    #[test]
    fn a_lock_round_trips_and_names_what_changed() {
        let a = Lock {
            version: LOCK_VERSION,
            tools: vec![tool("a.json", "one", "d"), tool("a.json", "two", "d")],
        };
        let text = a.render();
        assert!(text.starts_with("# toolreg.lock"));
        assert_eq!(Lock::parse(&text, Path::new("x")).unwrap(), a);
        let b = Lock {
            version: LOCK_VERSION,
            tools: vec![tool("a.json", "one", "d!"), tool("a.json", "three", "d")],
        };
        let d = LockDiff::between(&a, &b);
        assert_eq!(d.added, ["a.json: three"]);
        assert_eq!(d.removed, ["a.json: two"]);
        assert_eq!(d.changed["a.json: one"], ["description"]);
        assert!(LockDiff::between(&a, &a).is_empty());
    }

    /// Parsing only the tables that differ says what parsing the whole old lock says, after
    /// each kind of change, and on texts it must parse whole.
    #[test]
    fn a_diff_of_the_changed_tables_is_the_diff_of_the_whole_lock() {
        let lock = |tools: Vec<LockedTool>| Lock {
            version: LOCK_VERSION,
            tools,
        };
        let base: Vec<LockedTool> = (0..40)
            .map(|i| {
                tool(
                    if i < 20 { "a.json" } else { "b.json" },
                    &format!("t{i}"),
                    "d",
                )
            })
            .collect();
        let old = lock(base.clone());
        let old_text = old.render();
        let mut nows: Vec<Lock> = Vec::new();
        let mut edited = base.clone();
        edited[3] = tool("a.json", "t3", "changed");
        nows.push(lock(edited));
        let mut added = base.clone();
        added.insert(5, tool("a.json", "t4b", "d"));
        nows.push(lock(added));
        let mut removed = base.clone();
        removed.remove(30);
        nows.push(lock(removed));
        let mut moved = base.clone();
        moved[7].op = "x.elsewhere".into();
        nows.push(lock(moved));
        nows.push(lock(vec![]));
        // Two names the diff reads as one (a control character, and its escape as text).
        let escaped = crate::model::diag::escape_controls("t9\u{1b}");
        assert_ne!(escaped, "t9\u{1b}");
        let mut lookalike = base.clone();
        lookalike.push(tool("a.json", "t9\u{1b}", "d"));
        lookalike.push(tool("a.json", &escaped, "d"));
        nows.push(lock(lookalike.clone()));
        let mut one_gone = lookalike.clone();
        one_gone.retain(|t| t.name != "t9\u{1b}");
        nows.push(lock(one_gone));
        nows.push(old.clone());
        let crlf = old_text.replace('\n', "\r\n");
        let commented = old_text.replacen("version = 1", "# hand note\nversion = 1", 1);
        let (_, tables) = tool_tables(&old_text);
        let doubled = format!("{old_text}{}", tables[2]);
        let multiline = old_text.replacen("name = \"t1\"", "name = \"\"\"t1\"\"\"", 1);
        let lookalike_text = lock(lookalike).render();
        for previous in [
            &old_text,
            &crlf,
            &commented,
            &doubled,
            &multiline,
            &lookalike_text,
        ] {
            let whole = Lock::parse(previous, Path::new("x"));
            for now in &nows {
                let got = LockDiff::between_texts(previous, now, &now.render());
                let want = whole
                    .as_ref()
                    .ok()
                    .map(|b| (LockDiff::between(b, now), b.tools.len()));
                assert_eq!(got, want, "{previous:.80?} -> {} tools", now.tools.len());
            }
        }
        for now in &nows {
            let fast = LockDiff::by_tables(&old_text, now, &now.render());
            assert!(fast.is_some(), "parsed whole for {} tools", now.tools.len());
        }
        assert_eq!(
            LockDiff::between_texts("version = [", &old, &old_text),
            None
        );
        let (d, _) = LockDiff::between_texts(&old_text, &nows[0], &nows[0].render()).unwrap();
        assert_eq!(d.changed["a.json: t3"], ["description"]);
    }

    #[test]
    fn a_lock_of_another_version_or_shape_is_refused_with_its_path() {
        let e = Lock::parse("version = 9\n", Path::new("defs/toolreg.lock")).unwrap_err();
        assert!(e.to_string().contains("defs/toolreg.lock"), "{e}");
        assert!(e.to_string().contains("version 9"), "{e}");
        assert!(Lock::parse("version = [", Path::new("l")).is_err());
    }
}
