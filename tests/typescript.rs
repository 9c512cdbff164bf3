//! The generated TypeScript passes a real `tsc --strict --noEmit`, together with a usage file
//! that includes one `@ts-expect-error` line with a wrong argument (which must fail to check).
//! TypeScript comes from npm with the lockfile in tests/ts; `scripts/test` runs `npm ci` there.

mod common;

use std::process::Command;

#[test]
fn generated_typescript_passes_tsc_strict() {
    let dir = common::repo().join("tests/ts");
    let tsc = dir.join("node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "TypeScript is not installed: run `npm ci --prefix tests/ts` (scripts/test does)"
    );
    let out = Command::new(&tsc)
        .args(["-p", "."])
        .current_dir(&dir)
        .output()
        .expect("tsc runs");
    assert!(
        out.status.success(),
        "tsc failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let usage = std::fs::read_to_string(dir.join("usage.ts")).unwrap();
    assert_eq!(usage.matches("// @ts-expect-error").count(), 1);
}

/// Without its directive, the wrong call is a type error: the check above can fail.
#[test]
fn the_wrong_argument_really_fails_to_type_check() {
    let dir = common::repo().join("tests/ts");
    let tsc = dir.join("node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "TypeScript is not installed: run `npm ci --prefix tests/ts` (scripts/test does)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let usage = std::fs::read_to_string(dir.join("usage.ts"))
        .unwrap()
        .replace("// @ts-expect-error\n", "");
    let repo = common::repo();
    let root = repo.to_string_lossy();
    let usage = usage
        .replace("\"../../generated/", &format!("\"{root}/generated/"))
        .replace("\"../fixture/", &format!("\"{root}/tests/fixture/"));
    std::fs::write(tmp.path().join("usage.ts"), usage).unwrap();
    let out = Command::new(&tsc)
        .args([
            "--strict",
            "--noEmit",
            "--skipLibCheck",
            "--target",
            "ES2020",
            "--moduleResolution",
            "node",
            "usage.ts",
        ])
        .current_dir(tmp.path())
        .output()
        .expect("tsc runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "the wrong argument type-checked");
    assert!(text.contains("finished"), "{text}");
}
