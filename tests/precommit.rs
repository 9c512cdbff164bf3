//! The pre-commit hooks (issue 36, item 2): `.pre-commit-hooks.yaml` run through the real
//! `pre-commit try-repo` (PyPI, which scripts/test installs into target/ci-tools) on a copy of the
//! example catalog: `toolreg-check` passes on a current build and fails on a stale one, and
//! `toolreg-lint` passes on a clean catalog.
#![cfg(feature = "cli")]

mod common;

use common::git;
use std::path::{Path, PathBuf};
use std::process::Command;

/// pre-commit as scripts/test installs it; `TOOLREG_PRE_COMMIT` names another.
fn pre_commit() -> PathBuf {
    let path = std::env::var_os("TOOLREG_PRE_COMMIT")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/ci-tools/venv/bin/pre-commit"));
    assert!(
        path.is_file(),
        "{} is missing: scripts/test installs pre-commit (python3 -m venv target/ci-tools/venv, then pip install pre-commit)",
        path.display()
    );
    path
}

#[test]
fn the_hooks_gate_a_stale_build() {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("catalog");
    for folder in ["definitions", "generated"] {
        common::copy_dir(&common::repo().join(folder), &repo.join(folder));
    }
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "catalog"]);
    let toolreg_dir = Path::new(env!("CARGO_BIN_EXE_toolreg")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(toolreg_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let hook = |id: &str| {
        Command::new(pre_commit())
            .args(["try-repo"])
            .arg(common::repo())
            .args([id, "--all-files"])
            .current_dir(&repo)
            .env("PATH", &path)
            .env("PRE_COMMIT_HOME", work.path().join("pre-commit-home"))
            // try-repo commits a checkout with uncommitted changes to a shadow repository.
            .envs([
                ("GIT_AUTHOR_NAME", "ci"),
                ("GIT_AUTHOR_EMAIL", "ci@toolreg.test"),
                ("GIT_COMMITTER_NAME", "ci"),
                ("GIT_COMMITTER_EMAIL", "ci@toolreg.test"),
            ])
            .output()
            .unwrap()
    };
    let stdout = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).to_string();
    for id in ["toolreg-check", "toolreg-lint"] {
        let run = hook(id);
        assert!(
            run.status.success(),
            "{id}: {}{}",
            stdout(&run),
            common::stderr(&run)
        );
        assert!(stdout(&run).contains("Passed"), "{}", stdout(&run));
    }
    // One edited description: the build is stale and the hook says which files and how to fix.
    let file = repo.join("definitions/calendar.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen("\"description\": \"", "\"description\": \"Edited. ", 1),
    )
    .unwrap();
    let run = hook("toolreg-check");
    assert_eq!(run.status.code(), Some(1), "{}", stdout(&run));
    assert!(
        stdout(&run).contains("Failed") && stdout(&run).contains("toolreg build"),
        "{}",
        stdout(&run)
    );
}
