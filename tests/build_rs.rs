//! The build.rs API, proven with a real throwaway crate: its build.rs compiles a copy of the
//! example definitions with `toolreg::Builder`, and its main embeds and reads the registry with
//! only the runtime part of toolreg (`default-features = false`). Editing or adding a definition
//! file reruns the build script; a broken definition fails the build with the diagnostics.

mod common;

use std::path::Path;
use std::process::Command;

fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO"))
        .args(args)
        .arg("--quiet")
        .current_dir(dir)
        // A target folder of its own, kept under ours so CI caches it.
        .env(
            "CARGO_TARGET_DIR",
            common::repo().join("target/consumer-crate"),
        )
        .env_remove("RUSTFLAGS")
        // No debug info: this folder is a second copy of the dependencies, disk CI may not have.
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .output()
        .expect("cargo runs")
}

fn write_crate(dir: &Path) {
    let repo = common::repo();
    let repo = repo.to_string_lossy().replace('\\', "/");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "toolreg-consumer"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
toolreg = {{ path = "{repo}", default-features = false }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
serde_path_to_error = "0.1"

[build-dependencies]
toolreg = {{ path = "{repo}", default-features = false, features = ["compiler"] }}

[workspace]
"#
        ),
    )
    .unwrap();
    std::fs::copy(common::repo().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    toolreg::Builder::new().definitions(\"definitions\").compile().unwrap();\n}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        r#"const REGISTRY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/registry.json"));

/// The typed arguments toolreg generated into OUT_DIR.
#[allow(clippy::all, dead_code)]
mod tools {
    include!(concat!(env!("OUT_DIR"), "/rust/registry.rs"));
}

fn main() {
    let reg = toolreg::Registry::from_slice(REGISTRY).expect("embedded registry loads");
    let op = reg.op_by_tool_name("list_onto_tasks").map(|r| r.op.as_str()).unwrap_or("-");
    let typed = tools::OpArgs::parse("update_onto_task", serde_json::json!({"task_id": "t1", "state_key": "done"}));
    assert!(matches!(typed, Ok(tools::OpArgs::OntoTaskUpdate(_))));
    assert_eq!(tools::REGISTRY_VERSION, reg.registry_version);
    println!("{} {} {} {}", reg.name, tools::Op::ALL.len(), op, reg.registry_version);
}
"#,
    )
    .unwrap();
    common::copy_dir(
        &common::repo().join("definitions"),
        &dir.join("definitions"),
    );
}

#[test]
fn a_real_crate_builds_with_the_builder_and_reads_the_result() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_crate(dir);
    let run = |what: &str| {
        let o = cargo(dir, &["run", "--offline"]);
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let committed: toolreg::Registry =
        toolreg::Registry::from_path(common::repo().join("generated/registry.json")).unwrap();
    assert_eq!(
        run("first build"),
        format!("buildos 56 onto.task.list {}", committed.registry_version)
    );

    // Editing a definition file reruns build.rs: drop one calendar tool.
    let cal = dir.join("definitions/calendar.json");
    let mut tools: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    let dropped = tools.pop().unwrap();
    std::fs::write(&cal, serde_json::to_string_pretty(&tools).unwrap()).unwrap();
    assert!(run("after edit").starts_with("buildos 55 "));

    // A new file in a new subfolder is picked up too.
    std::fs::create_dir(dir.join("definitions/more")).unwrap();
    std::fs::write(
        dir.join("definitions/more/extra.json"),
        serde_json::to_string(&vec![dropped]).unwrap(),
    )
    .unwrap();
    assert_eq!(
        run("after adding a file"),
        format!("buildos 56 onto.task.list {}", committed.registry_version)
    );

    // A broken definition fails the build, with the diagnostic and its place.
    std::fs::write(dir.join("definitions/more/extra.json"), "[{\"name\": }]").unwrap();
    let o = cargo(dir, &["build", "--offline"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("error[TR005]") && err.contains("definitions/more/extra.json:1:11"),
        "{err}"
    );
}

#[test]
fn builder_reports_every_input_and_only_existing_paths() {
    let out = tempfile::tempdir().unwrap();
    let built = toolreg::Builder::new()
        .definitions(common::repo().join("definitions"))
        .out_dir(out.path())
        .cargo_metadata(false)
        .compile()
        .unwrap();
    assert_eq!(built.registry.counts.ops, 56);
    assert!(built.inputs.iter().all(|p| p.exists()));
    let names: Vec<String> = built
        .inputs
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "definitions",
        "toolreg.toml",
        "onto-read.json",
        "onto-write.json",
        "utility.json",
        "calendar.json",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    assert!(out.path().join("registry.json").is_file());
    // The output folder is shared in build.rs: files toolreg did not write are left alone.
    std::fs::write(out.path().join("mine.rs"), "// user file").unwrap();
    toolreg::Builder::new()
        .definitions(common::repo().join("definitions"))
        .out_dir(out.path())
        .cargo_metadata(false)
        .compile()
        .unwrap();
    assert!(out.path().join("mine.rs").exists());

    let err = toolreg::Builder::new()
        .definitions(common::repo().join("tests/bad/op_collision"))
        .out_dir(out.path())
        .cargo_metadata(false)
        .compile()
        .unwrap_err();
    assert!(err
        .diagnostics
        .iter()
        .any(|d| d.code == toolreg::diag::Code::OpCollision));
    assert!(err.to_string().contains("1 error(s)"));
}
