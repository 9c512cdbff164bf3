//! A build's files leave memory as each emitter finishes (issue 33: a 10,000-tool build's peak
//! memory): compared with the output folder as they are made, staged at once by a claimed
//! folder, else spilled to a temporary file. What `toolreg build` writes is what the library
//! makes holding every file; a file found as it is in the folder is neither kept nor written; a
//! claim dropped unwritten leaves nothing behind; and a folder another build wrote meanwhile is
//! refused, never mixed.

mod common;

use common::{repo, stderr, toolreg};
use std::fs;
use std::path::Path;
use toolreg::builder::{generate_opts, generate_outputs};
use toolreg::emit::outputs::{Artifacts, Outputs};
use toolreg::emit::{Emitter, FileMap, Settings};
use toolreg::output::{self, Ownership};

/// Every non-hidden file under `dir`, by relative path.
fn tree(dir: &Path) -> FileMap {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap();
            let rel = rel.to_string_lossy().replace('\\', "/");
            (rel, fs::read_to_string(e.path()).unwrap())
        })
        .collect()
}

fn held(defs: &Path) -> FileMap {
    generate_opts(defs, Emitter::ALL, &Settings::default(), false)
        .files
        .expect("the catalog compiles")
}

fn against(defs: &Path, out: &Path) -> Outputs {
    generate_outputs(
        defs,
        Emitter::ALL,
        &Settings::default(),
        false,
        Outputs::spilling().against(output::baseline(out)),
    )
    .outputs
    .expect("the catalog compiles")
}

#[test]
fn the_cli_build_writes_what_the_library_makes_holding_every_file() {
    for catalog in ["definitions", "tests/catalogs/reference-servers"] {
        let defs = repo().join(catalog);
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let o = toolreg(
            tmp.path(),
            &[
                "build",
                "-q",
                "-d",
                defs.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{catalog}: {}", stderr(&o));
        let want = held(&defs);
        assert!(want.len() > 20, "{catalog}: {} files", want.len());
        assert!(tree(&out) == want, "{catalog}: the written tree differs");
    }
}

#[test]
fn a_file_found_as_it_is_is_neither_kept_nor_written_and_an_edited_one_is() {
    let defs = repo().join("definitions");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let want = held(&defs);
    output::write(&out, &want, Ownership::Folder).unwrap();
    // A hand edit of one generated file, and one file removed.
    let (edited, removed) = ("registry.json", "ts/registry.ts");
    fs::write(out.join(edited), "{}\n").unwrap();
    fs::remove_file(out.join(removed)).unwrap();

    let outputs = against(&defs, &out);
    let kept: Vec<&str> = outputs.paths().filter(|p| !outputs.unchanged(p)).collect();
    assert_eq!(
        kept,
        [edited, removed],
        "only what differs from the folder is kept"
    );
    // A file found unchanged still reads as its text (from the folder, checked by its hash).
    let manifest = toolreg::emit::MANIFEST;
    assert_eq!(outputs.text(manifest).unwrap(), want[manifest].as_str());

    let report = output::write(&out, &outputs, Ownership::Folder).unwrap();
    assert_eq!(report.written, [edited, removed]);
    assert_eq!(report.unchanged, want.len() - 2);
    assert!(tree(&out) == want, "the folder is the clean build again");

    // Edited after it was found unchanged: its text is refused, never served wrong.
    let outputs = against(&defs, &out);
    fs::write(out.join(manifest), "edited meanwhile\n").unwrap();
    let e = outputs.text(manifest).unwrap_err();
    assert!(
        e.to_string().contains("changed in the output folder"),
        "{e}"
    );
}

#[test]
fn a_folder_another_build_wrote_meanwhile_is_refused_not_mixed() {
    let defs = repo().join("definitions");
    let other = repo().join("tests/catalogs/reference-servers");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    output::write(&out, &held(&defs), Ownership::Folder).unwrap();
    let outputs = against(&defs, &out);
    // Another build writes its tree after this one compared its files with the folder.
    let theirs = held(&other);
    output::write(&out, &theirs, Ownership::Folder).unwrap();
    let d = output::write(&out, &outputs, Ownership::Folder).unwrap_err();
    assert!(
        d.message.contains("changed while this build ran"),
        "{}",
        d.message
    );
    assert!(
        tree(&out) == theirs,
        "nothing was written over the other build"
    );
    assert!(!output::check(&out, &outputs, Ownership::Folder).is_ok_and(|r| r.is_clean()));
}

#[test]
fn a_claim_stages_what_differs_and_leaves_nothing_behind_when_dropped() {
    let defs = repo().join("definitions");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let want = held(&defs);

    // Into a folder that did not exist: every file is staged as it is made; dropped unwritten,
    // the claim removes what it staged and the folder it made.
    let claim = output::claim(&out, Ownership::Folder).unwrap();
    let outputs = made_against(&defs, &claim);
    assert!(
        outputs.paths().all(|p| outputs.staged(p)),
        "every file staged"
    );
    assert!(out.join(".toolreg-staging/registry.json").is_file());
    drop((outputs, claim));
    assert!(!out.exists(), "nothing left of an unwritten build");

    // Written through the claim: the clean build, and nothing of the claim left in the folder.
    let claim = output::claim(&out, Ownership::Folder).unwrap();
    let outputs = made_against(&defs, &claim);
    let report = claim.write(&outputs).unwrap();
    assert_eq!(report.written.len(), want.len());
    // The texts of staged files are read where the commit put them.
    let manifest = toolreg::emit::MANIFEST;
    assert_eq!(outputs.text(manifest).unwrap(), want[manifest].as_str());
    drop((outputs, claim));
    assert!(tree(&out) == want, "the clean build");
    assert!(!out.join(".toolreg-staging").exists() && !out.join(".toolreg.lock").exists());

    // Again after one hand edit: only that file is staged and written; the rest is found as it is.
    fs::write(out.join("registry.json"), "{}\n").unwrap();
    let claim = output::claim(&out, Ownership::Folder).unwrap();
    let outputs = made_against(&defs, &claim);
    let staged: Vec<&str> = outputs.paths().filter(|p| outputs.staged(p)).collect();
    assert_eq!(staged, ["registry.json"]);
    assert_eq!(claim.write(&outputs).unwrap().written, ["registry.json"]);
    drop((outputs, claim));
    assert!(tree(&out) == want, "the clean build again");
}

fn made_against(defs: &Path, claim: &output::Claim) -> Outputs {
    generate_outputs(
        defs,
        Emitter::ALL,
        &Settings::default(),
        false,
        Outputs::spilling().against(Some(claim.baseline())),
    )
    .outputs
    .expect("the catalog compiles")
}
