//! `toolreg diff`: two registries, from files, folders or git history.

use super::args::{DiffFormat, FailOn};
use super::shared::{display, registry_file, settle_folder};
use std::path::PathBuf;
use std::process::ExitCode;

/// The registry at `file` as it was in git revision `rev` (read with `git show`, no checkout).
fn registry_at_rev(file: &std::path::Path, rev: &str) -> Result<toolreg::Registry, String> {
    let shown = display(file);
    // A revision only: never something git would read as an option (`--output=FILE` made git
    // write a file) and never empty (git would read the index).
    if rev.trim().is_empty() {
        return Err("--base needs a git revision, e.g. `--base origin/main`".into());
    }
    if rev.starts_with('-') || rev.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "--base `{}` is not a git revision (a revision does not start with `-` or hold spaces or control characters)",
            toolreg::diag::escape_controls(rev)
        ));
    }
    let abs = file
        .canonicalize()
        .map_err(|e| format!("cannot find `{shown}`: {e}"))?;
    let dir = abs.parent().unwrap_or(std::path::Path::new("."));
    let git = |args: &[&str]| -> Result<Vec<u8>, String> {
        let o = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if o.status.success() {
            Ok(o.stdout)
        } else {
            Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
        }
    };
    let top = git(&["rev-parse", "--show-toplevel"])
        .map_err(|e| format!("`{shown}` is not in a git repository: {e}"))?;
    let top = PathBuf::from(String::from_utf8_lossy(&top).trim())
        .canonicalize()
        .map_err(|e| e.to_string())?;
    let rel = abs
        .strip_prefix(&top)
        .map_err(|_| format!("`{shown}` is outside the repository at `{}`", top.display()))?;
    let commit = git(&[
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &format!("{rev}^{{commit}}"),
    ])
    .map_err(|_| {
        format!(
            "--base `{rev}` names no commit in the repository at `{}`",
            top.display()
        )
    })?;
    let commit = String::from_utf8_lossy(&commit).trim().to_string();
    eprintln!(
        "diff: the old registry is `{shown}` at `{rev}` (commit {})",
        &commit[..commit.len().min(12)]
    );
    let spec = format!("{commit}:{}", rel.to_string_lossy().replace('\\', "/"));
    let bytes = git(&["show", "--end-of-options", &spec])
        .map_err(|e| format!("cannot read `{shown}` at `{rev}`: {e}"))?;
    toolreg::Registry::from_slice(&bytes).map_err(|e| format!("`{shown}` at `{rev}`: {e}"))
}

/// `toolreg diff`: findings and the prompt-cache cost; exit 1 when `--fail-on` says so.
pub(super) fn diff(
    old: Option<PathBuf>,
    new: Option<PathBuf>,
    base: Option<String>,
    format: DiffFormat,
    fail_on: FailOn,
    no_cache: bool,
) -> ExitCode {
    use toolreg::diff::{render, Level};
    let load = |p: &std::path::Path| {
        let f = registry_file(p);
        settle_folder(f.parent().unwrap_or(std::path::Path::new(".")))?;
        toolreg::Registry::from_path(&f).map_err(|e| e.to_string())
    };
    let pair = match (&base, old, new) {
        (Some(rev), one, None) | (Some(rev), None, one) => {
            let new_path = registry_file(&one.unwrap_or_else(|| PathBuf::from("generated")));
            registry_at_rev(&new_path, rev).and_then(|o| load(&new_path).map(|n| (o, n)))
        }
        (Some(_), Some(_), Some(_)) => Err("with --base, give only the new registry".into()),
        (None, Some(o), Some(n)) => load(&o).and_then(|o| load(&n).map(|n| (o, n))),
        (None, _, _) => {
            Err("give OLD and NEW (registry files or output folders), or --base GIT_REF".into())
        }
    };
    let (old, new) = match pair {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("   = help: `toolreg diff OLD NEW`, or `toolreg diff --base origin/main [generated]`");
            return ExitCode::from(2);
        }
    };
    let report = toolreg::diff::diff(&old, &new, !no_cache);
    print!(
        "{}",
        match format {
            DiffFormat::Text => render::text(&report),
            DiffFormat::Json => render::json(&report),
            DiffFormat::Markdown => render::markdown(&report),
        }
    );
    let fail = match fail_on {
        FailOn::Security => report.has(Level::Security),
        FailOn::Breaking => report.has(Level::Breaking),
        FailOn::Warning => report.has(Level::Warning),
        FailOn::Never => false,
    };
    if fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
