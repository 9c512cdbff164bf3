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
    Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(args)
        .current_dir(cwd)
        .env("TOOLREG_APPROVALS", no_approvals())
        .output()
        .expect("toolreg runs")
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

/// Every file below a folder with its bytes, for "nothing changed" assertions.
pub fn snapshot_dir(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
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
