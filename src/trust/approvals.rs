//! The upstream launch specs this machine may run, kept outside every definitions folder.
//!
//! An approval is the digest of one upstream's launch spec: its name, `command`, `args`, `env`
//! names, `url` and the names of the variables its secret headers come from. Anything that
//! changes what would run changes the digest, so a pull request that edits `[upstreams]` (or a
//! `registry.json` built from it) is not approved until a person approves it again. The store is
//! a TOML file: `$TOOLREG_APPROVALS` when set, else `$XDG_STATE_HOME/toolreg/approved-upstreams.toml`,
//! else `~/.local/state/toolreg/approved-upstreams.toml`. `toolreg import mcp NAME -- CMD` records
//! the command its user typed; `toolreg approve` records what a reviewer has read.
//!
//! A stdio upstream's approval also pins where its code comes from ([`super::launch`]): the
//! folder it runs in, the command's file and its digest, and a `node_modules/` package it would
//! take code from. The same spec in another checkout, or with a command or package a pull
//! request changed, is not approved.

use super::launch::{provenance, Provenance};
use crate::model::registry::Upstream;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment variable naming the approvals file (CI jobs and containers set it).
pub const APPROVALS_ENV: &str = "TOOLREG_APPROVALS";

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("no approvals file: set {APPROVALS_ENV} to a file path (HOME is not set either)")]
    NoPlace,
    #[error("approvals file `{path}`: {message}")]
    File { path: String, message: String },
}

fn file_error(path: &Path, message: impl std::fmt::Display) -> ApprovalError {
    ApprovalError::File {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// The digest of what an upstream would run: `b3:` and 64 hex digits. `timeout_ms` and the
/// snapshot file name are left out: they change no code that runs.
pub fn launch_digest(name: &str, spec: &Upstream) -> String {
    let mut canonical = serde_json::json!({
        "name": name,
        "command": spec.command,
        "args": spec.args,
        "env": spec.env,
        "url": spec.url,
        "bearer_env": spec.bearer_env,
        "header_env": spec.header_env,
    });
    // Roots widen what a server may touch, so they are covered; only when set, so approvals
    // given before roots existed still match.
    if !spec.roots.is_empty() {
        canonical["roots"] = serde_json::json!(spec.roots);
    }
    format!(
        "b3:{}",
        blake3::hash(canonical.to_string().as_bytes()).to_hex()
    )
}

/// What an upstream runs, for people: the command line with each argument quoted as a POSIX
/// shell would need, or the URL (redacted) and the variables its secrets come from.
pub fn launch_line(spec: &Upstream) -> String {
    let mut line = match (&spec.command, &spec.url) {
        (Some(c), _) => std::iter::once(c)
            .chain(&spec.args)
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(u)) => super::redact_url(u),
        (None, None) => "(nothing)".into(),
    };
    let mut vars: Vec<String> = spec.env.clone();
    vars.extend(
        spec.bearer_env
            .iter()
            .map(|v| format!("{v} (bearer token)")),
    );
    vars.extend(
        spec.header_env
            .iter()
            .map(|(h, v)| format!("{v} (header {h})")),
    );
    if !vars.is_empty() {
        line.push_str(&format!(" [environment: {}]", vars.join(", ")));
    }
    if !spec.roots.is_empty() {
        line.push_str(&format!(" [roots: {}]", spec.roots.join(", ")));
    }
    crate::model::diag::escape_controls(&line)
}

fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Upstreams that are not approved on this machine: name, what each would run, and why it is
/// not approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unapproved(pub Vec<(String, String, String)>);

impl std::fmt::Display for Unapproved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "{n} upstream{} not approved to run on this machine, so nothing was started:",
            if n == 1 { " is" } else { "s are" }
        )?;
        for (name, runs, why) in &self.0 {
            write!(
                f,
                "\n  [upstreams.{}] runs `{runs}`: {}",
                crate::model::diag::escape_controls(name),
                crate::model::diag::escape_controls(why)
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Unapproved {}

/// One approved launch spec.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Approval {
    pub upstream: String,
    pub digest: String,
    /// What it runs, as [`launch_line`] showed it when it was approved (for the reader only).
    pub runs: String,
    /// For a stdio upstream: where its code came from when it was approved (the folder it runs
    /// in, the command's file, a package folder, with digests). An entry without it, made
    /// before approvals pinned these, approves nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Provenance>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    #[serde(default)]
    approved: Vec<Approval>,
}

/// The approvals of one store file.
#[derive(Debug, Clone, Default)]
pub struct Approvals {
    path: Option<PathBuf>,
    entries: Vec<Approval>,
    /// Every launch spec counts as approved (a program that vouches for its registry itself).
    all: bool,
}

impl Approvals {
    /// Where this machine keeps its approvals.
    pub fn default_path() -> Result<PathBuf, ApprovalError> {
        if let Some(p) = std::env::var_os(APPROVALS_ENV).filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        let state = std::env::var_os("XDG_STATE_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|p| !p.is_empty())
                    .map(|h| PathBuf::from(h).join(".local/state"))
            })
            .ok_or(ApprovalError::NoPlace)?;
        Ok(state.join("toolreg/approved-upstreams.toml"))
    }

    /// This machine's approvals ([`Approvals::default_path`]); none when the file is missing.
    pub fn load_default() -> Result<Approvals, ApprovalError> {
        Self::load(&Self::default_path()?)
    }

    /// The approvals in `path`; none when the file does not exist.
    pub fn load(path: &Path) -> Result<Approvals, ApprovalError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(file_error(path, e)),
        };
        let file: StoreFile = toml::from_str(&text).map_err(|e| {
            file_error(
                path,
                format!("is not an approvals file ({e}); fix or delete it, then approve again"),
            )
        })?;
        Ok(Approvals {
            path: Some(path.to_path_buf()),
            entries: file.approved,
            all: false,
        })
    }

    /// Approvals that let every upstream run: for a program that embeds the server and has
    /// checked its registry by other means. The command line never uses it.
    pub fn allow_all() -> Approvals {
        Approvals {
            all: true,
            ..Approvals::default()
        }
    }

    /// The file these approvals were read from.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn entries(&self) -> &[Approval] {
        &self.entries
    }

    pub fn is_approved(&self, name: &str, spec: &Upstream) -> bool {
        self.why_not(name, spec).is_none()
    }

    /// Why `spec` may not run here (from the working folder), or `None` when it is approved.
    pub fn why_not(&self, name: &str, spec: &Upstream) -> Option<String> {
        let place = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        self.why_not_in(name, spec, &place)
    }

    /// [`Approvals::why_not`] for an upstream that runs in the folder `place`.
    pub fn why_not_in(&self, name: &str, spec: &Upstream, place: &Path) -> Option<String> {
        if self.all {
            return None;
        }
        let d = launch_digest(name, spec);
        let mut same_spec = self
            .entries
            .iter()
            .filter(|a| a.digest == d && a.upstream == name)
            .peekable();
        if same_spec.peek().is_none() {
            return Some("no approval on this machine".into());
        }
        let Some(command) = &spec.command else {
            return None; // a URL runs no local code: the spec is all there is to approve
        };
        let now = provenance(command, &spec.args, place);
        let mut reasons = Vec::new();
        for a in same_spec {
            match &a.launch {
                None => reasons.push((2, "approved before approvals pinned the folder and the command's file: approve it again".to_string())),
                Some(then) => match now.differs_from(then) {
                    None => return None,
                    Some(why) => reasons.push((usize::from(then.place != now.place), why)),
                },
            }
        }
        // The reason for the approval made in this folder, when there is one.
        reasons.sort();
        reasons.into_iter().next().map(|(_, why)| why)
    }

    /// The upstreams of `specs` that are not approved, in order.
    pub fn unapproved<'a>(
        &self,
        specs: impl IntoIterator<Item = (&'a String, &'a Upstream)>,
    ) -> Vec<(&'a String, &'a Upstream)> {
        specs
            .into_iter()
            .filter(|(n, s)| !self.is_approved(n, s))
            .collect()
    }

    /// Why these upstreams may not run here, if any may not: each unapproved name with what it
    /// would run. `serve` and `import --check` refuse with it before anything starts.
    pub fn refuse_unapproved<'a>(
        &self,
        specs: impl IntoIterator<Item = (&'a String, &'a Upstream)>,
    ) -> Result<(), Unapproved> {
        let refused: Vec<(String, String, String)> = specs
            .into_iter()
            .filter_map(|(n, s)| {
                let why = self.why_not(n, s)?;
                Some((n.clone(), launch_line(s), why))
            })
            .collect();
        if refused.is_empty() {
            Ok(())
        } else {
            Err(Unapproved(refused))
        }
    }

    /// Records approvals for `specs` in the file at `path` (created with its folder when
    /// missing), under a lock so concurrent imports keep each other's entries. Returns how many
    /// were new.
    /// A stdio upstream is approved to run in the working folder, with its code as it is now
    /// (an earlier approval of the same spec in the same folder is replaced).
    pub fn approve(path: &Path, specs: &[(&str, &Upstream)]) -> Result<usize, ApprovalError> {
        let place = std::env::current_dir()
            .map_err(|e| file_error(path, format!("no working folder: {e}")))?;
        Self::approve_in(path, specs, &place)
    }

    /// [`Approvals::approve`] for upstreams that run in the folder `place`.
    pub fn approve_in(
        path: &Path,
        specs: &[(&str, &Upstream)],
        place: &Path,
    ) -> Result<usize, ApprovalError> {
        let approvals: Vec<Approval> = specs
            .iter()
            .map(|(name, spec)| Approval {
                upstream: name.to_string(),
                digest: launch_digest(name, spec),
                runs: launch_line(spec),
                launch: spec
                    .command
                    .as_ref()
                    .map(|c| provenance(c, &spec.args, place)),
            })
            .collect();
        Self::update(path, |entries| {
            let mut added = 0;
            for new in approvals {
                if entries.contains(&new) {
                    continue;
                }
                entries.retain(|a| {
                    !(a.upstream == new.upstream
                        && a.digest == new.digest
                        && a.launch.as_ref().map(|l| &l.place)
                            == new.launch.as_ref().map(|l| &l.place))
                });
                entries.push(new);
                added += 1;
            }
            added
        })
    }

    /// Removes every approval of the upstreams named. Returns how many were removed.
    pub fn revoke(path: &Path, names: &[&str]) -> Result<usize, ApprovalError> {
        Self::update(path, |entries| {
            let before = entries.len();
            entries.retain(|a| !names.contains(&a.upstream.as_str()));
            before - entries.len()
        })
    }

    fn update(
        path: &Path,
        change: impl FnOnce(&mut Vec<Approval>) -> usize,
    ) -> Result<usize, ApprovalError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| file_error(dir, e))?;
        }
        let mut lock_name = path.as_os_str().to_owned();
        lock_name.push(".lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_name)
            .map_err(|e| file_error(path, format!("cannot open its lock: {e}")))?;
        lock.lock()
            .map_err(|e| file_error(path, format!("cannot lock it: {e}")))?;
        let mut entries = Self::load(path)?.entries;
        let changed = change(&mut entries);
        entries.sort();
        entries.dedup();
        let body =
            toml::to_string(&StoreFile { approved: entries }).map_err(|e| file_error(path, e))?;
        let text = format!(
            "# Upstream MCP servers approved to run on this machine (toolreg approve).\n\
             # Each digest covers the command, its arguments, environment names and URL;\n\
             # `launch` pins the folder it runs in, the command's file and a node_modules\n\
             # package it takes code from. Any change needs a new approval; `runs` is for\n\
             # reading only.\n\n{body}"
        );
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, text).map_err(|e| file_error(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| file_error(path, e))?;
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(cmd: &str, args: &[&str]) -> Upstream {
        Upstream {
            command: Some(cmd.into()),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn any_change_to_what_runs_needs_a_new_approval() {
        let base = stdio(
            "npx",
            &["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
        );
        let d = launch_digest("mem", &base);
        assert!(d.starts_with("b3:") && d.len() == 67);
        let mut timeout = base.clone();
        timeout.timeout_ms = Some(5000);
        timeout.file = "other.mcp.json".into();
        assert_eq!(
            d,
            launch_digest("mem", &timeout),
            "a time limit runs no code"
        );
        let mut changes = vec![stdio("sh", &["-c", "id > /tmp/PWNED"])];
        changes.push(stdio(
            "npx",
            &["-y", "@modelcontextprotocol/server-memory@2026.9.1"],
        ));
        let mut env = base.clone();
        env.env = vec!["AWS_SECRET_ACCESS_KEY".into()];
        changes.push(env);
        for c in &changes {
            assert_ne!(d, launch_digest("mem", c), "{c:?}");
        }
        assert_ne!(d, launch_digest("other", &base));
    }

    #[test]
    fn the_store_approves_revokes_and_survives_concurrent_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/approved.toml");
        let a = stdio("node", &["server.js", "it's"]);
        let b = stdio("sh", &["-c", "id > /tmp/PWNED"]);
        assert!(!Approvals::load(&path).unwrap().is_approved("a", &a));
        std::thread::scope(|s| {
            for i in 0..8 {
                let (path, a) = (&path, &a);
                s.spawn(move || {
                    let name = format!("a{i}");
                    Approvals::approve(path, &[(name.as_str(), a)]).unwrap();
                });
            }
        });
        let store = Approvals::load(&path).unwrap();
        assert_eq!(store.entries().len(), 8, "no writer lost another's entry");
        assert!(store.is_approved("a3", &a));
        assert!(!store.is_approved("a3", &b));
        assert_eq!(Approvals::approve(&path, &[("a3", &a)]).unwrap(), 0);
        let reloaded = Approvals::load(&path).unwrap();
        assert_eq!(
            reloaded.entries()[3].runs,
            r"node server.js 'it'\''s'",
            "what it runs, quoted for a shell"
        );
        assert_eq!(Approvals::revoke(&path, &["a3"]).unwrap(), 1);
        assert!(!Approvals::load(&path).unwrap().is_approved("a3", &a));
        std::fs::write(&path, "approved = 3").unwrap();
        let err = Approvals::load(&path).unwrap_err().to_string();
        assert!(err.contains("is not an approvals file"), "{err}");
    }

    #[test]
    fn launch_lines_quote_and_redact() {
        let u = Upstream {
            url: Some("https://u:pw@h.example/mcp?token=abc".into()),
            bearer_env: Some("GW_TOKEN".into()),
            ..Default::default()
        };
        assert_eq!(
            launch_line(&u),
            "https://REDACTED@h.example/mcp?token=REDACTED [environment: GW_TOKEN (bearer token)]"
        );
        assert_eq!(
            launch_line(&stdio("sh", &["-c", "echo \u{1b}[2J"])),
            "sh -c 'echo \\u{1b}[2J'"
        );
    }
}
