//! Incremental builds: a build into a folder that holds an earlier build's cache
//! (`.toolreg-cache/`) writes exactly what a clean build writes, after every kind of change
//! (tool edited, added, removed, overlay changed, another toolreg binary), a damaged cache entry
//! is dropped and recomputed, and a build with nothing changed writes nothing and says what a
//! full build would say.

mod common;
use common::{copy_dir, repo, stderr, toolreg};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file below `out` but the cache, with its bytes.
fn tree(out: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(out)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != ".toolreg-cache")
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(out)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    /// A copy of the repo's example catalog (56 ops).
    fn new() -> Case {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&repo().join("definitions"), &dir.path().join("defs"));
        Case { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `toolreg build -v` into `out` with `bin` (the test's toolreg by default).
    fn build_with(&self, bin: &Path, out: &str) -> String {
        let o = Command::new(bin)
            .args(["build", "-v", "-q", "--definitions", "defs", "--out", out])
            .current_dir(self.dir.path())
            .env("TOOLREG_APPROVALS", common::no_approvals())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    }

    fn build(&self, out: &str) -> String {
        self.build_with(Path::new(env!("CARGO_BIN_EXE_toolreg")), out)
    }

    /// Builds incrementally into `inc` and cleanly into a fresh folder; the trees must match.
    /// Returns the incremental build's cache line.
    fn same_as_clean(&self, what: &str) -> String {
        let said = self.build("inc");
        let clean = self.path("clean");
        let _ = std::fs::remove_dir_all(&clean);
        self.build("clean");
        assert_eq!(
            tree(&self.path("inc")),
            tree(&clean),
            "after {what}: the incremental build differs from a clean one"
        );
        cache_line(&said)
    }

    fn edit(&self, rel: &str, f: impl FnOnce(&mut serde_json::Value)) {
        let p = self.path("defs").join(rel);
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }
}

/// What a build said, but its cache line (which says how the cache served it).
fn said(s: &str) -> Vec<String> {
    s.lines()
        .filter(|l| !l.starts_with("cache: "))
        .map(str::to_owned)
        .collect()
}

fn cache_line(said: &str) -> String {
    said.lines()
        .find(|l| l.starts_with("cache: "))
        .unwrap_or_else(|| panic!("no cache line in:\n{said}"))
        .to_string()
}

/// (reused, computed, dropped) from a cache line.
fn counts(line: &str) -> (usize, usize, usize) {
    let n: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect();
    (n[0], n[1], n[2])
}

/// The tool list of an export (`{"tools": [...]}` or a bare list).
fn tools(v: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
    if v.is_array() {
        return v.as_array_mut().unwrap();
    }
    v["tools"].as_array_mut().unwrap()
}

#[test]
fn an_incremental_build_is_byte_identical_to_a_clean_one_after_every_kind_of_change() {
    let case = Case::new();
    let first = case.same_as_clean("a first build");
    let (reused, computed, _) = counts(&first);
    assert_eq!(reused, 0, "{first}");
    assert!(
        computed > 56,
        "every op's types and every text's count: {first}"
    );

    // A tool edited: its types and texts are computed again, the rest reused, and the memo
    // grows by what was computed (appended: the file's earlier bytes are kept as they were).
    let memo_before = std::fs::read(case.path("inc/.toolreg-cache/memo.bin")).unwrap();
    let docs_before = tree(&case.path("inc/docs"));
    case.edit("utility.json", |v| {
        let d = &mut tools(v)[0]["function"]["description"];
        *d = format!("{} Edited for the incremental test.", d.as_str().unwrap()).into();
    });
    let (reused, computed, dropped) = counts(&case.same_as_clean("a tool edited"));
    // Op, entity and group pages carry no registry version: only the edited op's page and the
    // book's own pages (which carry the version) change.
    let docs_after = tree(&case.path("inc/docs"));
    let changed: Vec<&String> = docs_after
        .iter()
        .filter(|(path, bytes)| docs_before.get(*path) != Some(*bytes))
        .map(|(path, _)| path)
        .collect();
    assert!(docs_after.len() > 56, "a page per op and more");
    assert_eq!(changed.len(), 4, "{changed:?}");
    for book_page in ["book.toml", "src/README.md", "src/SUMMARY.md"] {
        assert!(changed.contains(&&book_page.to_string()), "{changed:?}");
    }
    let memo_after = std::fs::read(case.path("inc/.toolreg-cache/memo.bin")).unwrap();
    assert!(
        memo_after.len() > memo_before.len() && memo_after.starts_with(&memo_before),
        "the memo was appended to: {} -> {} bytes",
        memo_before.len(),
        memo_after.len()
    );
    assert!(
        reused > 0 && computed > 0 && dropped == 0,
        "{reused} {computed}"
    );
    assert!(
        computed < reused,
        "most steps are reused: {reused} {computed}"
    );

    // A tool edited in its schema (new typed field), then one added, then one removed.
    case.edit("utility.json", |v| {
        tools(v)[0]["function"]["parameters"]["properties"]["incremental_note"] =
            serde_json::json!({"type": "string", "description": "A field the test added."});
    });
    case.same_as_clean("a schema edited");
    case.edit("utility.json", |v| {
        let mut t = tools(v)[0].clone();
        t["function"]["name"] = "get_incremental_probe".into();
        t["function"]["description"] = "Get the incremental probe: a tool the test added.".into();
        tools(v).push(t);
    });
    case.same_as_clean("a tool added");
    case.edit("calendar.json", |v| {
        tools(v).pop();
    });
    case.same_as_clean("a tool removed");

    // The overlay changed: a group's summary.
    let overlay = case.path("defs/toolreg.toml");
    let text = std::fs::read_to_string(&overlay).unwrap();
    let changed = text.replacen(
        "[groups.util]\n",
        "[groups.util]\n# edited by the test\n",
        1,
    );
    assert_ne!(text, changed);
    std::fs::write(
        &overlay,
        changed.replacen("summary = \"", "summary = \"Edited: ", 1),
    )
    .unwrap();
    case.same_as_clean("the overlay changed");

    // Another toolreg binary (as after an upgrade): nothing of the cache is reused.
    let other = case.path("toolreg-other");
    std::fs::copy(env!("CARGO_BIN_EXE_toolreg"), &other).unwrap();
    let said = case.build_with(&other, "inc");
    let (reused, _, _) = counts(&cache_line(&said));
    assert_eq!(reused, 0, "another binary's cache is not read: {said}");
    case.same_as_clean("another binary built the folder");
}

#[test]
fn a_damaged_cache_entry_is_dropped_and_recomputed() {
    let case = Case::new();
    case.build("inc");
    let memo = case.path("inc/.toolreg-cache/memo.bin");
    let mut bytes = std::fs::read(&memo).unwrap();
    // Damage the last entry's value (the file ends with it) without fixing its check.
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'x' { b'y' } else { b'x' };
    std::fs::write(&memo, &bytes).unwrap();
    // Touch an input so the build runs (a no-change build would not read the memo).
    case.edit("utility.json", |v| {
        tools(v)[0]["function"]["description"] = "Get the fields an entity kind has.".into();
    });
    let line = case.same_as_clean("a damaged cache entry");
    // The entries of the damaged segment (this small memo is one segment) are dropped.
    let (_, _, dropped) = counts(&line);
    assert!(dropped >= 1, "{line}");
    // The damaged file was written afresh: the next build reads it whole.
    case.edit("utility.json", |v| {
        tools(v)[0]["function"]["description"] = "Get the fields of an entity kind.".into();
    });
    let line = case.same_as_clean("a cache written afresh after damage");
    let (reused, _, dropped) = counts(&line);
    assert!(reused > 0 && dropped == 0, "{line}");

    // A cache that is a file, not a folder, is ignored and left alone.
    std::fs::remove_dir_all(case.path("inc/.toolreg-cache")).unwrap();
    std::fs::write(case.path("inc/.toolreg-cache"), "not a folder").unwrap();
    case.same_as_clean("a cache that is a file");
    assert_eq!(
        std::fs::read_to_string(case.path("inc/.toolreg-cache")).unwrap(),
        "not a folder"
    );
}

#[test]
fn a_settled_folder_is_known_by_its_files_identity_and_an_edit_is_still_seen() {
    let case = Case::new();
    case.build("inc");
    let before = tree(&case.path("inc"));
    // Just written: every file is read (their times cannot yet tell an edit of the same tick).
    let replayed = case.build("inc");
    assert!(replayed.contains("every file read"), "{replayed}");
    // Settled: read once more, found as written, and the record keeps their identity.
    std::thread::sleep(toolreg::write::cache::SETTLED + std::time::Duration::from_millis(200));
    let replayed = case.build("inc");
    assert!(replayed.contains("every file read"), "{replayed}");
    let record = std::fs::read_to_string(case.path("inc/.toolreg-cache/build.json")).unwrap();
    assert!(record.contains("\"seen\": \"b3:"), "{record}");
    // From then on no file is read, and the build says what it said.
    let known = case.build("inc");
    assert!(known.contains("none read"), "{known}");
    assert_eq!(said(&known), said(&replayed));
    assert_eq!(tree(&case.path("inc")), before);

    // A hand edit of the same length, its modification time put back: still rebuilt.
    let page = case.path("inc/registry.json");
    let text = std::fs::read_to_string(&page).unwrap();
    let modified = std::fs::metadata(&page).unwrap().modified().unwrap();
    std::fs::write(&page, text.replacen("\"ops\"", "\"opz\"", 1)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&page)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let rebuilt = case.build("inc");
    assert!(rebuilt.contains(" 1 written, "), "{rebuilt}");
    assert_eq!(std::fs::read_to_string(&page).unwrap(), text);
}

#[test]
fn a_build_with_nothing_changed_writes_nothing_and_says_what_a_full_build_says() {
    let case = Case::new();
    case.build("inc");
    let before = tree(&case.path("inc"));
    let replayed = case.build("inc");
    assert!(replayed.contains("nothing was compiled"), "{replayed}");
    assert_eq!(tree(&case.path("inc")), before);
    // The same build without its record runs in full: it says the same (but the cache line).
    std::fs::remove_file(case.path("inc/.toolreg-cache/build.json")).unwrap();
    let full = case.build("inc");
    assert_eq!(said(&replayed), said(&full));
    assert!(full.contains(" 0 written, 0 removed, "), "{full}");

    // A generated file edited by hand is not "nothing changed": build puts it back.
    let page = case.path("inc/registry.json");
    let text = std::fs::read_to_string(&page).unwrap();
    std::fs::write(&page, text.replacen('{', "{ ", 1)).unwrap();
    let rebuilt = case.build("inc");
    assert!(rebuilt.contains(" 1 written, "), "{rebuilt}");
    assert_eq!(std::fs::read_to_string(&page).unwrap(), text);

    // The cache is never committed, and `check` does not count it as output.
    let ignore = std::fs::read_to_string(case.path("inc/.toolreg-cache/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "*"));
    let o = toolreg(
        case.dir.path(),
        &["check", "--definitions", "defs", "--out", "inc"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}
