//! The writer never reaches outside its output folder and never deletes what it did not write
//! (issue 24, item 1). Each case hashes the neighbourhood of the output folder (everything else
//! under the test's root: files, links and their targets) before and after, and asserts that it
//! did not change.
#![cfg(unix)]

mod common;
#[path = "../benches/support/synthetic.rs"]
mod synthetic;

use common::{stderr, toolreg};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Every entry under `root` except those under `skip`: a file by its bytes' hash, a link by its
/// target, a folder as such. Links are not followed.
fn neighbourhood(root: &Path, skip: &Path) -> BTreeMap<String, String> {
    let mut seen = BTreeMap::new();
    let walker = walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.path() != skip);
    for entry in walker {
        let entry = entry.unwrap();
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string();
        let kind = entry.file_type();
        let what = if kind.is_symlink() {
            format!("link -> {}", fs::read_link(entry.path()).unwrap().display())
        } else if kind.is_file() {
            blake3::hash(&fs::read(entry.path()).unwrap())
                .to_hex()
                .to_string()
        } else {
            "folder".into()
        };
        seen.insert(rel, what);
    }
    seen
}

/// `toolreg build -d DEFS --out OUT` in `cwd`, waited for.
fn build_into(cwd: &Path, defs: &Path, out: &Path) -> std::process::Output {
    toolreg(
        cwd,
        &[
            "build",
            "-d",
            defs.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
}

struct Scene {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    defs: PathBuf,
    out: PathBuf,
}

impl Scene {
    /// A catalog of `tools` tools (100 per file) built once into `root/gen`.
    fn built(tools: usize) -> Scene {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let (defs, out) = (root.join("defs"), root.join("gen"));
        synthetic::write_catalog(&defs, tools);
        let s = Scene {
            _tmp: tmp,
            root,
            defs,
            out,
        };
        let o = s.build();
        assert!(o.status.success(), "{}", stderr(&o));
        s
    }

    fn run(&self, cmd: &str) -> std::process::Output {
        toolreg(
            &self.root,
            &[
                cmd,
                "-d",
                self.defs.to_str().unwrap(),
                "--out",
                self.out.to_str().unwrap(),
            ],
        )
    }

    fn build(&self) -> std::process::Output {
        self.run("build")
    }

    /// Builds, expecting the refusal of a link in the output folder (TR053, exit 2); its stderr.
    fn build_refused_for_a_link(&self) -> String {
        let o = self.build();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("TR053"), "{err}");
        assert!(err.contains("is a symbolic link"), "{err}");
        err
    }

    fn around(&self) -> BTreeMap<String, String> {
        neighbourhood(&self.root, &self.out)
    }
}

/// A victim folder beside the output, holding what the build would write under `docs/`.
fn victim(root: &Path, name: &str) -> PathBuf {
    let v = root.join(name);
    fs::create_dir_all(v.join("src")).unwrap();
    fs::write(v.join("src/README.md"), "the victim's own readme\n").unwrap();
    fs::write(v.join("book.toml"), "[book]\ntitle = \"mine\"\n").unwrap();
    fs::write(v.join("precious.txt"), "do not delete\n").unwrap();
    v
}

#[test]
fn a_link_inside_the_output_folder_is_never_written_through() {
    let s = Scene::built(20);
    victim(&s.root, "victim");
    fs::remove_dir_all(s.out.join("docs")).unwrap();
    symlink("../victim", s.out.join("docs")).unwrap();
    let before = s.around();

    let err = s.build_refused_for_a_link();
    assert!(err.contains("is a symbolic link (to `../victim`)"), "{err}");
    assert_eq!(
        s.around(),
        before,
        "build changed something outside its folder"
    );
    // The link is still there, untouched; check calls the folder stale.
    assert!(fs::symlink_metadata(s.out.join("docs"))
        .unwrap()
        .file_type()
        .is_symlink());
    let o = s.run("check");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(s.around(), before);

    // Once the link is gone, build writes the whole tree again.
    fs::remove_file(s.out.join("docs")).unwrap();
    assert!(s.build().status.success());
    assert!(s.run("check").status.success());
    assert_eq!(s.around(), before);
}

#[test]
fn a_manifest_entry_under_a_linked_folder_is_never_removed() {
    let s = Scene::built(20);
    let v = victim(&s.root, "victim2");
    symlink("../victim2", s.out.join("linked")).unwrap();
    // A manifest that claims the victim's file (edited, or from a hostile checkout).
    let manifest = s.out.join("toolreg.manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
    let hash = format!("b3:{}", &blake3::hash(b"do not delete\n").to_hex()[..16]);
    m["files"]["linked/precious.txt"] = hash.into();
    fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let before = s.around();

    let o = s.build();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("TR053"), "{}", stderr(&o));
    assert_eq!(s.around(), before);
    assert_eq!(
        fs::read_to_string(v.join("precious.txt")).unwrap(),
        "do not delete\n"
    );
}

#[test]
fn removal_checks_each_file_against_the_hash_toolreg_recorded() {
    let s = Scene::built(150);
    // A user's file slipped into the manifest (a hash toolreg never wrote) and a generated file
    // edited by hand that the next build no longer produces.
    fs::write(s.out.join("notes.md"), "my notes\n").unwrap();
    let manifest = s.out.join("toolreg.manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
    m["files"]["notes.md"] = "b3:0123456789abcdef".into();
    fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();

    let before_tree = common::snapshot_dir(&s.out);
    let mut catalog: Vec<PathBuf> = fs::read_dir(&s.defs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    catalog.sort();
    fs::remove_file(catalog.pop().unwrap()).unwrap();
    // Which generated files does the smaller catalog drop? Build it elsewhere to see.
    let reference = s.root.join("reference");
    let o = build_into(&s.root, &s.defs, &reference);
    assert!(o.status.success(), "{}", stderr(&o));
    let after_names: Vec<String> = common::snapshot_dir(&reference)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let dropped: Vec<String> = before_tree
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| !after_names.contains(p) && p.ends_with(".md") && p != "notes.md")
        .collect();
    assert!(dropped.len() >= 2, "{dropped:?}");
    let edited = s.out.join(&dropped[0]);
    fs::write(&edited, "I improved this page by hand\n").unwrap();
    fs::remove_dir_all(&reference).unwrap();
    let before = s.around();

    let o = s.build();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("TR054").count(), 2, "{err}");
    assert!(err.contains("rm -- '"), "{err}");
    // Both kept with their bytes; the other dropped files are gone.
    assert_eq!(
        fs::read_to_string(&edited).unwrap(),
        "I improved this page by hand\n"
    );
    assert_eq!(
        fs::read_to_string(s.out.join("notes.md")).unwrap(),
        "my notes\n"
    );
    assert!(!s.out.join(&dropped[1]).exists());
    assert_eq!(s.around(), before);
    // They are the user's now: the next build leaves them alone and succeeds.
    let o = s.build();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.run("check").status.success());
    assert!(edited.exists() && s.out.join("notes.md").exists());
}

#[test]
fn a_folder_holding_only_dotfiles_is_not_adopted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let defs = root.join("defs");
    synthetic::write_catalog(&defs, 5);
    let home = root.join("home");
    fs::create_dir_all(home.join(".config/app")).unwrap();
    fs::write(home.join(".bashrc"), "export A=1\n").unwrap();
    fs::write(home.join(".config/app/settings"), "x\n").unwrap();
    let whole = |r: &Path| neighbourhood(r, Path::new("/nothing-skipped"));
    let before = whole(root);
    let o = build_into(root, &defs, &home);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("TR051"), "{err}");
    assert!(err.contains(".bashrc"), "{err}");
    assert_eq!(whole(root), before, "something was written into the folder");

    // A link alone is not adoptable either; an empty folder is.
    let linked = root.join("linked");
    fs::create_dir(&linked).unwrap();
    symlink("/etc", linked.join("etc")).unwrap();
    let o = build_into(root, &defs, &linked);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let empty = root.join("empty");
    fs::create_dir(&empty).unwrap();
    let o = build_into(root, &defs, &empty);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn the_output_folder_itself_may_be_a_link() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let defs = root.join("defs");
    synthetic::write_catalog(&defs, 5);
    fs::create_dir(root.join("real")).unwrap();
    symlink("real", root.join("gen")).unwrap();
    let gen = root.join("gen");
    let args = ["-d", defs.to_str().unwrap(), "--out", gen.to_str().unwrap()];
    let o = toolreg(root, &[&["build"][..], &args].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(root.join("real/registry.json").is_file());
    let o = toolreg(root, &[&["check"][..], &args].concat());
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A second catalog built elsewhere: A's descriptions reworded and its last file dropped, so
/// nearly every generated file differs and some are removed.
fn reworded(s: &Scene) -> PathBuf {
    let b = s.root.join("defs-b");
    common::copy_dir(&s.defs, &b);
    common::reword_catalog(&b);
    let out = s.root.join("built-b");
    let o = build_into(&s.root, &b, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// Issue 24, item 4: a build killed between the renames of its commit, then a command that only
/// reads the folder: it finishes the commit first (as `check` does) and reads the new tree whole;
/// a library reader refuses the folder instead of mixing two builds.
#[test]
fn readers_finish_an_interrupted_commit_before_reading() {
    let s = Scene::built(150);
    let new = reworded(&s);
    common::interrupt_after_commit(&s.out, &new, &["help.json", "registry.json"]);
    let before = s.around();

    let err = match toolreg::runtime::Gateway::from_dir(&s.out) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a half-committed folder was read"),
    };
    assert!(err.contains("interrupted after its commit"), "{err}");

    let registry = s.out.join("registry.json");
    let o = toolreg(
        &s.root,
        &[
            "search",
            "revised",
            "--registry",
            registry.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let said = stderr(&o);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("finished an interrupted build"), "{said}");
    // The folder is now exactly the new build, and nothing else changed.
    assert!(!s.out.join(".toolreg-staging").exists());
    let tree = |d: &Path| -> Vec<(String, Vec<u8>)> {
        common::snapshot_dir(d)
            .into_iter()
            .filter(|(p, _)| !p.starts_with('.'))
            .collect()
    };
    assert_eq!(tree(&s.out), tree(&new));
    assert_eq!(s.around(), before);
    assert!(toolreg::runtime::Gateway::from_dir(&s.out).is_ok());

    // help and diff settle the same way: back to A's tree, then to B's again.
    let a = s.root.join("built-a");
    let o = build_into(&s.root, &s.defs, &a);
    assert!(o.status.success(), "{}", stderr(&o));
    common::interrupt_after_commit(&s.out, &a, &["registry.json"]);
    let o = toolreg(&s.root, &["help", "--registry", registry.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("finished an interrupted build"));
    assert_eq!(tree(&s.out), tree(&a));
    common::interrupt_after_commit(&s.out, &new, &["registry.json"]);
    let o = toolreg(
        &s.root,
        &["diff", a.to_str().unwrap(), s.out.to_str().unwrap()],
    );
    assert!(
        stderr(&o).contains("finished an interrupted build"),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&s.out), tree(&new));
}

/// A folder swapped for a link after a build committed (journal written) and before its files
/// were moved is refused when the next command finishes the commit: nothing is moved through it,
/// nothing outside the output folder changes, and the staged files wait for the link to go.
#[test]
fn recovery_refuses_a_link_planted_after_the_commit() {
    let s = Scene::built(150);
    let new = reworded(&s);
    common::interrupt_after_commit(&s.out, &new, &["registry.json"]);
    // A folder of op pages deep in the docs tree, as the interrupted write will fill it.
    let group = fs::read_dir(s.out.join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .min()
        .unwrap();
    let folder = fs::read_dir(&group)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .min()
        .unwrap();
    let staged = s
        .out
        .join(".toolreg-staging")
        .join(folder.strip_prefix(&s.out).unwrap());
    assert!(staged.is_dir(), "the interrupted write changes {folder:?}");
    let v = s.root.join("victim3");
    common::copy_dir(&folder, &v);
    fs::remove_dir_all(&folder).unwrap();
    symlink(&v, &folder).unwrap();
    let before = s.around();

    s.build_refused_for_a_link();
    assert_eq!(s.around(), before, "recovery wrote through the link");
    assert!(staged.is_dir(), "the staged files were dropped");

    // Once the link is gone, the next build finishes the commit and builds A again.
    fs::remove_file(&folder).unwrap();
    let o = s.build();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.run("check").status.success());
    assert!(!s.out.join(".toolreg-staging").exists());
    assert_eq!(s.around(), before);
}
