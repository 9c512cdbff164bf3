//! Write and check an output folder against a [`FileMap`].
//!
//! Writing is all-or-nothing and write-if-changed: every changed file is first staged beside its
//! target (`.NAME.toolreg-tmp`); only when all are staged are they renamed into place and the
//! orphans removed. An error while staging removes the staged files and leaves the folder as it
//! was. Unchanged files are not touched (their mtimes stay, so build tools do not rebuild).
//!
//! Ownership: toolreg only removes files it wrote. A folder holding `toolreg.manifest.json` is
//! toolreg's. In [`Ownership::Folder`] mode (the CLI) every non-hidden file in such a folder
//! belongs to toolreg, and a non-empty folder without a manifest is refused. In
//! [`Ownership::Manifest`] mode (build.rs writing into a shared `OUT_DIR`) only files the previous
//! manifest listed are toolreg's; other files are left alone.

use crate::diag::{Code, Diagnostic, Location};
use crate::emit::{FileMap, MANIFEST};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Which files in the output folder toolreg may remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// The whole folder is toolreg's (except hidden files).
    Folder,
    /// Only files the existing manifest lists.
    Manifest,
}

/// What a write did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    pub written: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
}

/// The first differing line of a changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstDiff {
    pub line: usize,
    pub expected: Option<String>,
    pub actual: Option<String>,
}

/// How an output folder differs from what build would write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub changed: Vec<(String, FirstDiff)>,
    pub missing: Vec<String>,
    pub extra: Vec<String>,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.changed.is_empty() && self.missing.is_empty() && self.extra.is_empty()
    }
}

fn io_error(path: &Path, what: &str, err: std::io::Error) -> Box<Diagnostic> {
    let shown = path.to_string_lossy().replace('\\', "/");
    Box::new(Diagnostic::new(Code::OutputIo, format!("cannot {what} `{shown}`: {err}"))
        .at(Location::file(shown))
        .help(
            "check that the output folder is writable and the disk has space; nothing was changed",
        ))
}

fn rel_path(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Files in `out` that toolreg may replace or remove, per the ownership mode. In folder mode
/// that is every non-hidden file; `check` reports the ones build would not write as extra.
fn owned_files(out: &Path, mode: Ownership) -> Result<BTreeSet<String>, Box<Diagnostic>> {
    if !out.exists() {
        return Ok(BTreeSet::new());
    }
    if !out.is_dir() {
        return Err(io_error(
            out,
            "use as an output folder (it is a file)",
            std::io::Error::other("not a folder"),
        ));
    }
    match mode {
        Ownership::Folder => {
            let mut files = BTreeSet::new();
            let walker = walkdir::WalkDir::new(out)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| {
                    e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')
                });
            for entry in walker {
                let entry = entry.map_err(|e| io_error(out, "read", e.into()))?;
                if entry.file_type().is_file() {
                    files.insert(rel_path(out, entry.path()));
                }
            }
            Ok(files)
        }
        Ownership::Manifest => {
            let Ok(text) = fs::read_to_string(out.join(MANIFEST)) else {
                return Ok(BTreeSet::new());
            };
            let listed = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| {
                    v.get("files")
                        .and_then(|f| f.as_object())
                        .map(|f| f.keys().cloned().collect::<BTreeSet<_>>())
                })
                .unwrap_or_default();
            let mut owned: BTreeSet<String> = listed
                .into_iter()
                .filter(|p| safe_rel(p) && out.join(p).is_file())
                .collect();
            owned.insert(MANIFEST.to_string());
            Ok(owned)
        }
    }
}

/// Before build removes anything in folder mode, the folder must prove it is toolreg's: it holds
/// a manifest, or every file in it is one build is about to write anyway.
fn ensure_adoptable(out: &Path, extra: &[String]) -> Result<(), Box<Diagnostic>> {
    if extra.is_empty() || out.join(MANIFEST).is_file() {
        return Ok(());
    }
    let shown = out.to_string_lossy().replace('\\', "/");
    let listed: Vec<&str> = extra.iter().take(5).map(String::as_str).collect();
    Err(Box::new(
        Diagnostic::new(
            Code::OutputNotOwned,
            format!(
                "output folder `{shown}` has files toolreg did not write and no {MANIFEST}: {}{}",
                listed.join(", "),
                if extra.len() > 5 { ", ..." } else { "" }
            ),
        )
        .at(Location::file(shown))
        .help("build removes stale files from its output folder, so it only adopts an empty folder or one with its manifest; point --out elsewhere or move these files away"),
    ))
}

/// A manifest path is only trusted if it stays inside the folder.
fn safe_rel(p: &str) -> bool {
    !p.is_empty() && !p.starts_with('/') && !p.split('/').any(|s| s == ".." || s.is_empty())
}

fn normalize_eol(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\r') {
        std::borrow::Cow::Owned(s.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

fn first_diff(expected: &str, actual: &str) -> FirstDiff {
    let mut e = expected.lines();
    let mut a = actual.lines();
    let mut line = 1;
    loop {
        match (e.next(), a.next()) {
            (Some(x), Some(y)) if x == y => line += 1,
            (None, None) => {
                return FirstDiff {
                    line,
                    expected: None,
                    actual: None,
                };
            }
            (x, y) => {
                return FirstDiff {
                    line,
                    expected: x.map(str::to_owned),
                    actual: y.map(str::to_owned),
                }
            }
        }
    }
}

/// Every artifact path must stay inside the output folder: plain relative components only (no
/// `..`, no root, no drive). Emitters build paths from validated names; this is the last line.
fn ensure_inside(out: &Path, files: &FileMap) -> Result<(), Box<Diagnostic>> {
    use std::path::Component;
    for rel in files.keys() {
        let p = Path::new(rel);
        let plain = !rel.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain {
            let shown = out.to_string_lossy().replace('\\', "/");
            return Err(Box::new(
                Diagnostic::new(
                    Code::OutputIo,
                    format!("refusing to write `{}`: it would leave the output folder `{shown}`", rel.escape_debug()),
                )
                .at(Location::file(shown))
                .help("a name in the overlay became a path; nothing was written (this is a toolreg bug if no diagnostic named the name)"),
            ));
        }
    }
    Ok(())
}

/// Compares `out` with `files`. Line endings are normalized before comparing.
pub fn check(out: &Path, files: &FileMap, mode: Ownership) -> Result<CheckReport, Box<Diagnostic>> {
    ensure_inside(out, files)?;
    let owned = owned_files(out, mode)?;
    let mut report = CheckReport::default();
    for (rel, want) in files {
        let path = out.join(rel);
        match fs::read(&path) {
            Ok(bytes) => {
                let have = String::from_utf8_lossy(&bytes);
                if normalize_eol(&have) != want.as_str() {
                    report
                        .changed
                        .push((rel.clone(), first_diff(want, &normalize_eol(&have))));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => report.missing.push(rel.clone()),
            Err(e) => return Err(io_error(&path, "read", e)),
        }
    }
    report.extra = owned
        .into_iter()
        .filter(|p| !files.contains_key(p))
        .collect();
    Ok(report)
}

/// Writes `files` into `out`, all-or-nothing; see the module docs.
pub fn write(out: &Path, files: &FileMap, mode: Ownership) -> Result<WriteReport, Box<Diagnostic>> {
    let status = check(out, files, mode)?;
    if mode == Ownership::Folder {
        ensure_adoptable(out, &status.extra)?;
    }
    let mut report = WriteReport {
        unchanged: files.len() - status.changed.len() - status.missing.len(),
        ..Default::default()
    };
    if status.is_clean() {
        return Ok(report);
    }
    let mut to_write: Vec<&String> = status
        .changed
        .iter()
        .map(|(p, _)| p)
        .chain(status.missing.iter())
        .collect();
    to_write.sort();
    // The manifest goes last, so an interrupted run never leaves a manifest that claims files
    // that were not written yet.
    to_write.sort_by_key(|p| p.as_str() == MANIFEST);

    // Stage.
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let stage =
        |rel: &String, staged: &mut Vec<(PathBuf, PathBuf)>| -> Result<(), Box<Diagnostic>> {
            let target = out.join(rel);
            let dir = target.parent().unwrap_or(out);
            fs::create_dir_all(dir).map_err(|e| io_error(dir, "create", e))?;
            let name = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let tmp = dir.join(format!(".{name}.toolreg-tmp"));
            fs::write(&tmp, files[rel].as_bytes()).map_err(|e| io_error(&tmp, "write", e))?;
            staged.push((tmp, target));
            Ok(())
        };
    for rel in &to_write {
        if let Err(d) = stage(rel, &mut staged) {
            for (tmp, _) in &staged {
                let _ = fs::remove_file(tmp);
            }
            return Err(d);
        }
    }
    // Swap.
    for (tmp, target) in &staged {
        if let Err(e) = fs::rename(tmp, target) {
            for (t, _) in &staged {
                let _ = fs::remove_file(t);
            }
            return Err(io_error(target, "replace", e));
        }
    }
    report.written = to_write.into_iter().cloned().collect();
    for rel in &status.extra {
        let path = out.join(rel);
        fs::remove_file(&path).map_err(|e| io_error(&path, "remove", e))?;
        report.removed.push(rel.clone());
        // Drop folders the removal left empty (never the output folder itself).
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == out || fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    Ok(report)
}

/// Prints a check report the way `toolreg check` shows it.
pub fn render_check(out_display: &str, report: &CheckReport, fix: &str) -> String {
    let mut s = format!(
        "error: `{out_display}` is not what build would write ({} changed, {} missing, {} extra)\n",
        report.changed.len(),
        report.missing.len(),
        report.extra.len()
    );
    for (p, d) in &report.changed {
        s.push_str(&format!("  changed: {out_display}/{p}\n"));
        s.push_str(&format!("     first difference at line {}:\n", d.line));
        s.push_str(&format!(
            "     - expected: {}\n",
            d.expected.as_deref().unwrap_or("<end of file>")
        ));
        s.push_str(&format!(
            "     + on disk:  {}\n",
            d.actual.as_deref().unwrap_or("<end of file>")
        ));
    }
    for p in &report.missing {
        s.push_str(&format!("  missing: {out_display}/{p}\n"));
    }
    for p in &report.extra {
        s.push_str(&format!("  extra:   {out_display}/{p}\n"));
    }
    s.push_str(&format!("  = help: run `{fix}` and commit the result\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, &str)]) -> FileMap {
        entries
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn nothing_is_written_outside_the_output_folder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b/gen");
        for bad in [
            "surfaces/profiles/../../../../package.json",
            "/etc/x.json",
            "../x.json",
            "",
        ] {
            let files = map(&[("ok.json", "1\n"), (bad, "evil\n"), (MANIFEST, "m\n")]);
            let err = write(&out, &files, Ownership::Folder).unwrap_err();
            assert_eq!(err.code, Code::OutputIo, "{bad}");
            assert!(
                err.message.contains("would leave the output folder"),
                "{}",
                err.message
            );
            assert!(check(&out, &files, Ownership::Folder).is_err());
        }
        assert!(!out.exists(), "not even the good files were written");
        assert!(!dir.path().join("package.json").exists());
    }

    #[test]
    fn write_then_check_then_noop_then_orphan_removal() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("gen");
        let v1 = map(&[("a.json", "1\n"), ("sub/b.md", "b\n"), (MANIFEST, "m\n")]);
        let r = write(&out, &v1, Ownership::Folder).unwrap();
        assert_eq!(r.written.len(), 3);
        assert_eq!(r.written.last().unwrap(), MANIFEST);
        assert!(check(&out, &v1, Ownership::Folder).unwrap().is_clean());
        assert_eq!(
            write(&out, &v1, Ownership::Folder).unwrap(),
            WriteReport {
                unchanged: 3,
                ..Default::default()
            }
        );
        let v2 = map(&[("a.json", "2\n"), (MANIFEST, "m2\n")]);
        let r = write(&out, &v2, Ownership::Folder).unwrap();
        assert_eq!(r.written, vec!["a.json".to_string(), MANIFEST.to_string()]);
        assert_eq!(r.removed, vec!["sub/b.md".to_string()]);
        assert!(!out.join("sub").exists());
        // No staging leftovers.
        let names: Vec<_> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn crlf_on_disk_is_not_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let files = map(&[("a.txt", "x\ny\n"), (MANIFEST, "m\n")]);
        write(dir.path(), &files, Ownership::Folder).unwrap();
        fs::write(dir.path().join("a.txt"), "x\r\ny\r\n").unwrap();
        assert!(check(dir.path(), &files, Ownership::Folder)
            .unwrap()
            .is_clean());
    }

    #[test]
    fn foreign_folder_is_refused_and_untouched() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("mine.txt"), "keep").unwrap();
        let err = write(dir.path(), &map(&[("a", "1")]), Ownership::Folder).unwrap_err();
        assert_eq!(err.code, Code::OutputNotOwned);
        assert_eq!(
            fs::read_to_string(dir.path().join("mine.txt")).unwrap(),
            "keep"
        );
        assert!(!dir.path().join("a").exists());
    }

    #[test]
    fn manifest_mode_leaves_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("other.rs"), "user").unwrap();
        let v1 = map(&[("a", "1"), (MANIFEST, r#"{"files":{"a":"x","old":"y"}}"#)]);
        write(dir.path(), &v1, Ownership::Manifest).unwrap();
        fs::write(dir.path().join("old"), "stale").unwrap();
        let v2 = map(&[("a", "1"), (MANIFEST, r#"{"files":{"a":"x"}}"#)]);
        let r = write(dir.path(), &v2, Ownership::Manifest).unwrap();
        assert_eq!(r.removed, vec!["old".to_string()]);
        assert!(dir.path().join("other.rs").exists());
    }

    #[test]
    fn first_diff_names_the_line() {
        let d = first_diff("a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(
            (d.line, d.expected.as_deref(), d.actual.as_deref()),
            (2, Some("b"), Some("B"))
        );
        let d = first_diff("a\n", "a\nextra\n");
        assert_eq!(
            (d.line, d.expected, d.actual.as_deref()),
            (2, None, Some("extra"))
        );
    }
}
