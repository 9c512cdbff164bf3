//! Where a stdio upstream's code really comes from, so that an approval covers that code and
//! not only the command line that names it.
//!
//! A launch spec says `npx -y @scope/server@1.2.3`; what runs depends on the folder it runs in
//! (npx takes `node_modules/@scope/server` from the working folder or any folder above it when
//! the version matches, offline) and on what `PATH` finds. So an approval also records the
//! [`Provenance`] of the launch: the folder the upstream runs in, the command's file as the
//! process would find it with a digest of its bytes, and the package folder a package runner or
//! an in-tree command would take its code from, with a digest of every file in it. A checkout
//! elsewhere, a command that now resolves to another file, or a `node_modules/` a pull request
//! added or changed is then not approved until a person approves it there again.

use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// A package folder larger than this is not digested: the launch is refused instead (fail
/// closed), since its code cannot be pinned at a bounded cost.
pub const MAX_PACKAGE_FILES: usize = 20_000;

pub const MAX_PACKAGE_BYTES: u64 = 512 << 20;

/// What a stdio upstream would run, found the way its process would find it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Provenance {
    /// The folder the upstream runs in (the working folder of `serve` or `import`), canonical.
    pub place: String,
    /// The command's file (a name with `/` from `place`, else the first match on `PATH`),
    /// canonical; none when nothing is found (the launch would fail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `b3:` digest of the command file's bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_b3: Option<String>,
    /// A package folder the launch takes code from inside a `node_modules/`: the copy a package
    /// runner (npx, bunx, pnpm dlx, npm exec) would run instead of the registry's, or the
    /// package an in-tree command (`node_modules/.bin/x`) belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// `b3:` digest of every file under `package` (relative paths and bytes, sorted; links as
    /// their targets), or `too-large` when past [`MAX_PACKAGE_FILES`] / [`MAX_PACKAGE_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_b3: Option<String>,
}

/// The value `package_b3` takes for a package folder too large to digest; never approved.
pub const TOO_LARGE: &str = "too-large";

impl Provenance {
    /// Whether the command's file lies inside the folder the upstream runs in (the working
    /// tree), where a pull request can change it.
    pub fn command_in_tree(&self) -> bool {
        self.command
            .as_deref()
            .is_some_and(|c| Path::new(c).starts_with(&self.place))
    }

    /// Why `self` (now) is not the launch that was approved (`then`), in words for the person
    /// who must approve again; `None` when they agree.
    pub fn differs_from(&self, then: &Provenance) -> Option<String> {
        if self.place != then.place {
            return Some(format!(
                "approved to run in `{}`, and this is `{}`",
                then.place, self.place
            ));
        }
        if self.command != then.command {
            return Some(format!(
                "the command now resolves to `{}` (approved: `{}`)",
                self.command.as_deref().unwrap_or("nothing"),
                then.command.as_deref().unwrap_or("nothing")
            ));
        }
        if self.command_b3 != then.command_b3 {
            return Some(format!(
                "the command's file `{}` changed since it was approved",
                self.command.as_deref().unwrap_or("?")
            ));
        }
        if self.package != then.package {
            return Some(match &self.package {
                Some(p) => format!("the launch now takes its code from `{p}`, which was not there when it was approved"),
                None => "the package folder it was approved with is gone".into(),
            });
        }
        if self.package_b3.as_deref() == Some(TOO_LARGE) {
            return Some(format!(
                "the package folder `{}` is too large to pin (over {MAX_PACKAGE_FILES} files or {} MiB)",
                self.package.as_deref().unwrap_or("?"),
                MAX_PACKAGE_BYTES >> 20
            ));
        }
        if self.package_b3 != then.package_b3 {
            return Some(format!(
                "the files of `{}` changed since it was approved",
                self.package.as_deref().unwrap_or("?")
            ));
        }
        None
    }
}

/// The provenance of a launch of `command args` in the folder `place`.
pub fn provenance(command: &str, args: &[String], place: &Path) -> Provenance {
    let place = place.canonicalize().unwrap_or_else(|_| place.to_path_buf());
    let found = resolve_command(command, &place);
    let command_b3 = found.as_deref().and_then(file_digest);
    // A command's own package is pinned only inside the working tree, where a pull request can
    // change it; an installed tool (npx is npm's) is pinned by its file.
    let package = found
        .as_deref()
        .filter(|f| f.starts_with(&place))
        .and_then(package_of)
        .or_else(|| runner_package(command, args, &place));
    let package_b3 = package.as_deref().map(folder_digest);
    Provenance {
        place: place.display().to_string(),
        command: found.map(|p| p.display().to_string()),
        command_b3,
        package: package.map(|p| p.display().to_string()),
        package_b3,
    }
}

/// The file a process started with `command` would run: a name holding `/` from `place`, else
/// the first executable regular file of that name on `PATH` (an empty entry or `.` is `place`).
fn resolve_command(command: &str, place: &Path) -> Option<PathBuf> {
    if command.is_empty() {
        return None;
    }
    let candidate = |p: PathBuf| {
        let meta = std::fs::metadata(&p).ok()?;
        #[cfg(unix)]
        let runnable = {
            use std::os::unix::fs::PermissionsExt;
            meta.is_file() && meta.permissions().mode() & 0o111 != 0
        };
        #[cfg(not(unix))]
        let runnable = meta.is_file();
        runnable.then(|| p.canonicalize().ok()).flatten()
    };
    if command.contains('/') {
        return candidate(place.join(command));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let dir = if dir.as_os_str().is_empty() || dir == Path::new(".") {
            place.to_path_buf()
        } else if dir.is_relative() {
            place.join(dir)
        } else {
            dir
        };
        candidate(dir.join(command))
    })
}

/// `b3:` digest of a file's bytes, streamed.
fn file_digest(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = blake3::Hasher::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    Some(format!("b3:{}", hasher.finalize().to_hex()))
}

/// The package folder a file inside `node_modules/` belongs to (`node_modules/pkg` or
/// `node_modules/@scope/pkg`), the innermost one.
fn package_of(file: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = file.components().collect();
    let at = parts
        .iter()
        .rposition(|c| c.as_os_str() == "node_modules")?;
    let name = parts.get(at + 1)?.as_os_str().to_string_lossy();
    let take = if name.starts_with('@') {
        at + 3
    } else {
        at + 2
    };
    if take > parts.len() || name == ".bin" {
        return None;
    }
    Some(parts[..take].iter().collect())
}

/// The package a package runner would take from the working tree: for `npx`, `bunx`, `pnpx`,
/// `npm exec`, `pnpm dlx|exec` and `yarn dlx`, the first argument that is not an option
/// (or `--package=NAME`), its version cut off, looked up in `node_modules/` of `place` and
/// every folder above it, as npm does.
fn runner_package(command: &str, args: &[String], place: &Path) -> Option<PathBuf> {
    let program = Path::new(command)
        .file_name()?
        .to_string_lossy()
        .to_string();
    let rest: &[String] = match program.as_str() {
        "npx" | "bunx" | "pnpx" => args,
        "npm" | "pnpm" | "yarn" | "bun"
            if args
                .first()
                .is_some_and(|a| ["exec", "dlx", "x"].contains(&a.as_str())) =>
        {
            &args[1..]
        }
        _ => return None,
    };
    let spec = rest.iter().find_map(|a| {
        if let Some(p) = a
            .strip_prefix("--package=")
            .or_else(|| a.strip_prefix("-p="))
        {
            Some(p.to_string())
        } else if a.starts_with('-') {
            None
        } else {
            Some(a.clone())
        }
    })?;
    let name = package_name(&spec)?;
    place.ancestors().find_map(|dir| {
        let folder = dir.join("node_modules").join(&name);
        folder
            .join("package.json")
            .is_file()
            .then(|| folder.canonicalize().unwrap_or(folder))
    })
}

/// `@scope/name@1.2.3` -> `@scope/name`; `name@^1` -> `name`; none for a path or URL.
fn package_name(spec: &str) -> Option<String> {
    if spec.contains(':') || spec.starts_with('.') || spec.starts_with('/') {
        return None;
    }
    let (scope, rest) = match spec.strip_prefix('@') {
        Some(r) => {
            let (s, n) = r.split_once('/')?;
            (Some(s), n)
        }
        None => (None, spec),
    };
    let name = rest.split('@').next()?;
    if name.is_empty() || name.contains(['/', '\\']) || name == ".." {
        return None;
    }
    Some(match scope {
        Some(s) => format!("@{s}/{name}"),
        None => name.to_string(),
    })
}

/// `b3:` digest of every file under `dir` (relative path and bytes, in sorted order; a link is
/// its target text, never followed), or [`TOO_LARGE`].
fn folder_digest(dir: &Path) -> String {
    let mut hasher = blake3::Hasher::new();
    let mut files = 0usize;
    let mut bytes = 0u64;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(read) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        // Folders are pushed in reverse so they pop in sorted order.
        let mut folders = Vec::new();
        for e in entries {
            let rel = rel.join(e.file_name());
            let Ok(kind) = e.file_type() else { continue };
            files += 1;
            if files > MAX_PACKAGE_FILES {
                return TOO_LARGE.into();
            }
            hasher.update(rel.to_string_lossy().as_bytes());
            hasher.update(&[0]);
            if kind.is_symlink() {
                let target = std::fs::read_link(e.path()).unwrap_or_default();
                hasher.update(b"link:");
                hasher.update(target.to_string_lossy().as_bytes());
            } else if kind.is_dir() {
                hasher.update(b"dir");
                folders.push(rel);
            } else if let Ok(mut f) = std::fs::File::open(e.path()) {
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                bytes += len;
                if bytes > MAX_PACKAGE_BYTES {
                    return TOO_LARGE.into();
                }
                hasher.update(&len.to_le_bytes());
                let mut buf = [0u8; 1 << 16];
                loop {
                    match f.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            hasher.update(&buf[..n]);
                        }
                    }
                }
            }
            hasher.update(&[0]);
        }
        stack.extend(folders.into_iter().rev());
    }
    format!("b3:{}", hasher.finalize().to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_from_runner_specs() {
        assert_eq!(
            package_name("@scope/server@1.2.3").as_deref(),
            Some("@scope/server")
        );
        assert_eq!(package_name("cowsay@^1").as_deref(), Some("cowsay"));
        assert_eq!(package_name("cowsay").as_deref(), Some("cowsay"));
        assert_eq!(package_name("./local"), None);
        assert_eq!(package_name("git+https://x/y"), None);
        assert_eq!(package_name("@scope"), None);
        assert_eq!(package_name("@scope/../x"), None);
    }

    #[test]
    fn the_package_of_an_in_tree_file() {
        assert_eq!(
            package_of(Path::new("/r/node_modules/@s/p/bin/cli.js")),
            Some(PathBuf::from("/r/node_modules/@s/p"))
        );
        assert_eq!(
            package_of(Path::new("/r/node_modules/a/node_modules/b/x.js")),
            Some(PathBuf::from("/r/node_modules/a/node_modules/b"))
        );
        assert_eq!(package_of(Path::new("/usr/bin/node")), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_local_copy_an_npx_spec_would_run_is_found_and_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let sub = root.join("repo/defs");
        std::fs::create_dir_all(&sub).unwrap();
        let args: Vec<String> = ["-y", "@scope/server@1.2.3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let before = provenance("npx", &args, &sub);
        assert_eq!(before.package, None);
        // npm looks in every folder above the working one.
        let pkg = root.join("repo/node_modules/@scope/server");
        std::fs::create_dir_all(pkg.join("dist")).unwrap();
        std::fs::write(pkg.join("package.json"), r#"{"version":"1.2.3"}"#).unwrap();
        std::fs::write(pkg.join("dist/index.js"), "console.log(1)").unwrap();
        let after = provenance("npx", &args, &sub);
        assert_eq!(after.package.as_deref(), Some(pkg.to_str().unwrap()));
        assert!(after.differs_from(&before).is_some());
        let again = provenance("npx", &args, &sub);
        assert_eq!(again.differs_from(&after), None, "same files, same pin");
        std::fs::write(pkg.join("dist/index.js"), "require('child_process')").unwrap();
        let changed = provenance("npx", &args, &sub);
        let why = changed.differs_from(&after).unwrap();
        assert!(why.contains("files of"), "{why}");
        // Another folder is another approval.
        let other = provenance("npx", &args, &root);
        assert!(other
            .differs_from(&changed)
            .unwrap()
            .contains("approved to run in"));
    }

    #[cfg(unix)]
    #[test]
    fn a_command_is_pinned_by_its_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let bin = root.join("node_modules/.bin");
        let pkg = root.join("node_modules/srv");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("cli.js"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(pkg.join("cli.js"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("../srv/cli.js", bin.join("srv")).unwrap();
        let p = provenance("node_modules/.bin/srv", &[], &root);
        assert_eq!(
            p.command.as_deref(),
            Some(pkg.join("cli.js").to_str().unwrap())
        );
        assert!(p.command_in_tree());
        assert_eq!(p.package.as_deref(), Some(pkg.to_str().unwrap()));
        assert!(p.command_b3.as_deref().unwrap().starts_with("b3:"));
        std::fs::write(pkg.join("lib.js"), "evil").unwrap();
        let q = provenance("node_modules/.bin/srv", &[], &root);
        assert!(q.differs_from(&p).unwrap().contains("files of"));
        let sh = provenance("sh", &[], &root);
        assert!(sh.command.is_some() && !sh.command_in_tree());
        assert_eq!(provenance("no-such-command-xyz", &[], &root).command, None);
    }
}
