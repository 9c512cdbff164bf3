//! The CLI's contract: exit codes, `check` staleness reports, write-if-changed, ownership.

mod common;

use common::{repo, stderr, toolreg};
use std::fs;

const CATALOGS: &[(&str, &str)] = &[
    ("definitions", "generated"),
    (
        "examples/universal-agent/definitions",
        "examples/universal-agent/generated",
    ),
];

#[test]
fn committed_output_is_current_for_every_catalog() {
    for (defs, out) in CATALOGS {
        let o = toolreg(
            &common::repo(),
            &["check", "--definitions", defs, "--out", out],
        );
        assert_eq!(o.status.code(), Some(0), "{out} is stale:\n{}", stderr(&o));
    }
}

#[test]
fn check_names_every_changed_missing_and_extra_file_and_build_repairs_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    let repo = common::repo();
    let defs = repo.join("definitions");
    let (d, o) = (defs.to_str().unwrap(), out.to_str().unwrap());
    assert!(toolreg(&repo, &["build", "-d", d, "-o", o])
        .status
        .success());
    assert_eq!(
        toolreg(&repo, &["check", "-d", d, "-o", o]).status.code(),
        Some(0)
    );

    // Edit one line of registry.json.
    let reg = out.join("registry.json");
    let text = fs::read_to_string(&reg).unwrap();
    fs::write(&reg, text.replacen("\"buildos\"", "\"edited\"", 1)).unwrap();
    let r = toolreg(&repo, &["check", "-d", d, "-o", o]);
    let msg = stderr(&r);
    assert_eq!(r.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("changed: ") && msg.contains("/registry.json"),
        "{msg}"
    );
    assert!(
        msg.contains("first difference at line")
            && msg.contains("- expected:")
            && msg.contains("\"edited\""),
        "{msg}"
    );
    assert!(msg.contains("toolreg build --definitions"), "{msg}");

    // Delete the manifest: reported as missing.
    fs::remove_file(out.join("toolreg.manifest.json")).unwrap();
    let msg = stderr(&toolreg(&repo, &["check", "-d", d, "-o", o]));
    assert!(
        msg.contains("missing: ") && msg.contains("/toolreg.manifest.json"),
        "{msg}"
    );

    // Add a stray file: noted as not toolreg's. Without a manifest, build refuses the folder.
    fs::write(out.join("stray.md"), "hand-written").unwrap();
    let r = toolreg(&repo, &["check", "-d", d, "-o", o]);
    let msg = stderr(&r);
    assert_eq!(r.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("/stray.md is not toolreg's") && msg.contains("left alone"),
        "{msg}"
    );
    assert!(
        msg.contains("1 changed in content, 0 only in their version stamp, 1 missing, 0 extra"),
        "{msg}"
    );
    let refused = toolreg(&repo, &["build", "-d", d, "-o", o]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("[TR051]") && stderr(&refused).contains("stray.md"));
    assert!(out.join("stray.md").exists());

    // With the manifest back, build owns the files it lists, and only those: the stray file
    // stays. A file the manifest lists and the new build does not write is removed.
    assert!(toolreg(dir.path(), &["build", "-d", d, "-o", "fresh"])
        .status
        .success());
    fs::copy(
        dir.path().join("fresh/toolreg.manifest.json"),
        out.join("toolreg.manifest.json"),
    )
    .unwrap();
    fs::remove_file(out.join("registry.json")).unwrap();
    let msg = stderr(&toolreg(&repo, &["check", "-d", d, "-o", o]));
    assert!(
        msg.contains("missing: ") && msg.contains("/registry.json"),
        "{msg}"
    );

    let mut manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("toolreg.manifest.json")).unwrap())
            .unwrap();
    // As an earlier build recorded it: the hash of the bytes it wrote.
    let wrote = format!(
        "b3:{}",
        &blake3::hash(b"from an earlier build").to_hex()[..16]
    );
    manifest["files"]["old/gone.md"] = serde_json::json!(wrote);
    fs::write(out.join("toolreg.manifest.json"), manifest.to_string()).unwrap();
    fs::create_dir_all(out.join("old")).unwrap();
    fs::write(out.join("old/gone.md"), "from an earlier build").unwrap();
    let msg = stderr(&toolreg(&repo, &["check", "-d", d, "-o", o]));
    assert!(
        msg.contains("extra:   ") && msg.contains("/old/gone.md"),
        "{msg}"
    );

    let b = toolreg(&repo, &["build", "-d", d, "-o", o]);
    assert!(b.status.success(), "{}", stderr(&b));
    assert!(stderr(&b).contains("1 removed"), "{}", stderr(&b));
    assert!(!out.join("old").exists());
    assert_eq!(
        fs::read_to_string(out.join("stray.md")).unwrap(),
        "hand-written"
    );
    assert_eq!(
        toolreg(&repo, &["check", "-d", d, "-o", o]).status.code(),
        Some(0)
    );
}

#[test]
fn a_no_change_rebuild_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let repo = common::repo();
    let out = dir.path().join("gen");
    let args = ["build", "--out", out.to_str().unwrap()];
    assert!(toolreg(&repo, &args).status.success());
    let mtime = |p: &str| fs::metadata(out.join(p)).unwrap().modified().unwrap();
    let before = (mtime("registry.json"), mtime("toolreg.manifest.json"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let again = toolreg(&repo, &args);
    assert!(
        stderr(&again).contains("0 written, 0 removed"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        (mtime("registry.json"), mtime("toolreg.manifest.json")),
        before
    );
}

#[test]
fn a_folder_with_foreign_files_is_never_adopted() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let defs = common::repo().join("definitions");
    let r = toolreg(
        dir.path(),
        &["build", "-d", defs.to_str().unwrap(), "-o", "."],
    );
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("[TR051]"), "{}", stderr(&r));
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("notes.txt")]);
}

#[test]
fn every_command_has_help_and_usage_errors_exit_2() {
    let repo = common::repo();
    for cmd in [
        &["--help"][..],
        &["build", "--help"],
        &["check", "--help"],
        &["lint", "--help"],
    ] {
        let o = toolreg(&repo, cmd);
        assert_eq!(o.status.code(), Some(0), "{cmd:?}");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("Usage:"), "{cmd:?}: {text}");
    }
    assert!(
        String::from_utf8_lossy(&toolreg(&repo, &["build", "--help"]).stdout)
            .contains("--definitions <DIR>")
    );
    // `--emit` names the default set as the build writes it, then every opt-in emitter.
    let help = String::from_utf8_lossy(&toolreg(&repo, &["build", "--help"]).stdout).into_owned();
    let emit = help
        .split("--emit <LIST>")
        .nth(1)
        .and_then(|t| t.split("\n      --").next())
        .expect("build --help describes --emit")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let (defaults, rest) = emit.split_once("(default").expect("names the defaults");
    let names =
        |set: &[toolreg::emit::Emitter]| -> Vec<&str> { set.iter().map(|e| e.name()).collect() };
    assert!(
        defaults.ends_with(&format!(
            "{} ",
            names(toolreg::emit::Emitter::ALL).join(", ")
        )),
        "{emit}"
    );
    for name in names(toolreg::emit::Emitter::OPT_IN) {
        assert!(rest.contains(name), "--emit does not name `{name}`: {emit}");
    }
    assert_eq!(toolreg(&repo, &["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        toolreg(&repo, &["lint", "--format", "yaml"]).status.code(),
        Some(2)
    );
}

#[test]
fn report_and_policy_print_from_a_catalog_and_refuse_a_broken_one() {
    let repo = repo();
    let out = toolreg(&repo, &["report", "-d", "definitions"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    // The example catalog: 56 tools on the direct surface, 3 gateway tools.
    assert!(
        table.contains("full catalog (direct.json)       56"),
        "{table}"
    );
    assert!(
        table.contains("gateway                           3"),
        "{table}"
    );
    let out = toolreg(&repo, &["report", "-d", "definitions", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["full_catalog"]["tools"], 56, "{json}");
    assert_eq!(json["gateway"]["tools"], 3, "{json}");

    // A drafted policy is overlay TOML that parses, for the op asked.
    let out = toolreg(
        &repo,
        &["policy", "-d", "definitions", "--draft", "onto.task.create"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let drafted: toml::Table = String::from_utf8_lossy(&out.stdout).parse().unwrap();
    assert!(drafted["ops"]["onto.task.create"]["policy"]["do"]
        .as_array()
        .is_some_and(|d| !d.is_empty()));

    // A catalog that does not compile: its diagnostics, exit 2, nothing on stdout.
    for args in [
        &["report", "-d", "tests/bad/malformed_json"][..],
        &["policy", "-d", "tests/bad/malformed_json", "--draft", "x.y"][..],
    ] {
        let out = toolreg(&repo, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("error[TR005]"), "{}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Issue 36 (in part): `--version` names the features built in, and `toolreg help build`
/// (a command name, not a help path) says how to get the command's own help.
#[test]
fn version_names_features_and_help_of_a_command_points_at_its_help() {
    let o = common::toolreg(&common::repo(), &["--version"]);
    assert!(o.status.success());
    #[cfg(feature = "mcp")]
    {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains("features: ") && text.contains("mcp"),
            "{text}"
        );
    }
    let o = common::toolreg(&common::repo(), &["help", "build"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        common::stderr(&o).contains("`toolreg build --help` explains it"),
        "{}",
        common::stderr(&o)
    );
}

/// The CLI's allocator reserves 64 MiB arenas (src/main.rs, `SMALL_ARENAS`): set before
/// mimalloc starts, which its verbose start-up lists (a setting made later would list 1 GiB),
/// and a reserve set in the environment still wins.
#[cfg(target_os = "linux")]
#[test]
fn the_allocator_reserves_small_arenas_unless_told_otherwise() {
    let run = |env: &[(&str, &str)]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_toolreg"))
            .arg("--version")
            .env("MIMALLOC_VERBOSE", "1")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let said = run(&[]);
    assert!(said.contains("option 'arena_reserve': 65536 KiB"), "{said}");
    let said = run(&[("MIMALLOC_ARENA_RESERVE", "256MiB")]);
    assert!(
        said.contains("option 'arena_reserve': 262144 KiB"),
        "{said}"
    );
}

/// Issue 36 (in part): after a one-word edit, `check` names the files whose content changed,
/// with their first difference, before the many that differ only in the version stamp they
/// carry (named briefly, not one diff each).
#[test]
fn check_tells_content_changes_from_version_stamps() {
    let dir = tempfile::tempdir().unwrap();
    let defs = dir.path().join("defs");
    common::copy_dir(&common::repo().join("definitions"), &defs);
    let (d, o) = (defs.to_str().unwrap(), dir.path().join("out"));
    let o = o.to_str().unwrap();
    assert!(toolreg(dir.path(), &["build", "-d", d, "-o", o])
        .status
        .success());
    let file = defs.join("calendar.json");
    let text = fs::read_to_string(&file).unwrap();
    let edited = text.replacen("List events", "List calendar events", 1);
    assert_ne!(edited, text, "the edit applies");
    fs::write(&file, edited).unwrap();
    let r = toolreg(dir.path(), &["check", "-d", d, "-o", o]);
    let msg = stderr(&r);
    assert_eq!(r.status.code(), Some(1), "{msg}");
    let content: Vec<&str> = msg
        .lines()
        .filter(|l| l.trim_start().starts_with("changed: "))
        .collect();
    assert!(
        content.iter().any(|l| l.ends_with("/registry.json")),
        "{msg}"
    );
    assert!(content.len() < 15, "content changes only: {msg}");
    let stamps = msg
        .lines()
        .find(|l| l.trim_start().starts_with("version stamp only: "))
        .unwrap_or_else(|| panic!("{msg}"));
    assert!(stamps.contains(" more"), "{stamps}");
    // Content first: every `changed:` line comes before the stamp-only line.
    let stamp_at = msg.find("version stamp only").unwrap();
    assert!(msg.rfind("changed: ").unwrap() < stamp_at, "{msg}");
    assert!(msg.contains("only in their version stamp"), "{msg}");
}

/// Issue 36 (in part): shell completions and a man page come from the clap definitions, so
/// they name every command; the bash script parses, and the man page is roff with a NAME.
#[test]
fn completions_and_man_page_name_every_command() {
    let repo = repo();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = toolreg(&repo, &["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = String::from_utf8_lossy(&o.stdout);
        for cmd in ["build", "check", "search", "completions"] {
            assert!(script.contains(cmd), "{shell} lacks {cmd}");
        }
    }
    let bash = toolreg(&repo, &["completions", "bash"]).stdout;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("toolreg.bash");
    fs::write(&file, &bash).unwrap();
    let parsed = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .status()
        .unwrap();
    assert!(
        parsed.success(),
        "the bash completion script does not parse"
    );
    let man = toolreg(&repo, &["man"]);
    assert!(man.status.success(), "{}", stderr(&man));
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(
        page.contains(".TH toolreg 1") && page.contains(".SH NAME"),
        "{page}"
    );
    assert!(page.contains("build") && page.contains("serve"), "{page}");
    assert_eq!(
        toolreg(&repo, &["completions", "tcsh"]).status.code(),
        Some(2)
    );
}

/// Runs `toolreg ARGS` under a pseudo-terminal (util-linux `script`), as a person would: what
/// it printed, stdout and stderr together.
fn at_a_terminal(cwd: &std::path::Path, args: &[&str]) -> String {
    at_a_terminal_with(cwd, args, &[])
}

/// [`at_a_terminal`] with more environment variables.
fn at_a_terminal_with(cwd: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let command = std::iter::once(env!("CARGO_BIN_EXE_toolreg").to_string())
        .chain(
            args.iter()
                .map(|a| format!("'{}'", a.replace('\'', "'\\''"))),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let o = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(cwd)
        .env("TOOLREG_APPROVALS", common::no_approvals())
        .envs(env.iter().copied())
        .output()
        .expect("util-linux `script` runs");
    assert!(
        o.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Issue 36: answers meant for people read as text at a terminal and as JSON when piped (or
/// with `--json` / `--format json`); a build that takes over a second shows a progress line at a
/// terminal, none with `--quiet` and none when its output is not a terminal.
#[test]
fn text_and_progress_at_a_terminal_json_and_silence_when_piped() {
    let repo = repo();
    let page = at_a_terminal(&repo, &["help", "onto.task.update"]);
    assert!(
        page.starts_with("onto.task.update (write)") && page.contains("\narguments:"),
        "{page}"
    );
    let piped = toolreg(&repo, &["help", "onto.task.update"]);
    let v: serde_json::Value = serde_json::from_slice(&piped.stdout).expect("JSON when piped");
    assert_eq!(v["path"], "onto.task.update");
    let forced = at_a_terminal(&repo, &["help", "onto.task.update", "--json"]);
    assert!(forced.trim_start().starts_with('{'), "{forced}");
    let found = at_a_terminal(&repo, &["search", "mark a task done", "--limit", "1"]);
    assert!(found.contains(" 1. onto.task.update"), "{found}");
    let piped = toolreg(&repo, &["search", "mark a task done", "--limit", "1"]);
    let v: serde_json::Value = serde_json::from_slice(&piped.stdout).expect("JSON when piped");
    assert_eq!(v["results"][0]["op"], "onto.task.update");

    // A fleet catalog (8,010 tools) takes seconds to build.
    let out = tempfile::tempdir().unwrap();
    let fleet = repo.join("tests/catalogs/fleet/toolsdk");
    let build = |extra: &[&str]| {
        let mut args = vec![
            "build",
            "--definitions",
            fleet.to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
            "--emit",
            "registry",
        ];
        args.extend_from_slice(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    // Drawn from 0.2 s rather than 1 s: an optimized build of it takes under a second here.
    let soon = [("TOOLREG_PROGRESS_AFTER_MS", "200")];
    let shown = at_a_terminal_with(
        &repo,
        &build(&[]).iter().map(String::as_str).collect::<Vec<_>>(),
        &soon,
    );
    let progress = format!("building {}: compiling and emitting (", fleet.display());
    assert!(
        shown.contains(&progress),
        "no progress line at a terminal:\n{shown}"
    );
    assert!(shown.contains("\x1b[2K"), "the progress line is cleared");
    assert!(shown.contains("built 8010 ops"), "{shown}");
    let quiet = at_a_terminal_with(
        &repo,
        &build(&["--quiet"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &soon,
    );
    assert!(!quiet.contains("compiling and emitting"), "{quiet}");
    let piped = common::toolreg_with(
        &repo,
        &build(&[]).iter().map(String::as_str).collect::<Vec<_>>(),
        &soon,
    );
    assert!(piped.status.success());
    assert!(!stderr(&piped).contains("compiling and emitting") && !stderr(&piped).contains('\x1b'));
}

/// A search over a large registry built without its search index says, on stderr, that the
/// index is being built on every search and how to have `build` write it; one with the index,
/// or a small registry, says nothing. StableToolBench's 2,479 RapidAPI endpoints, real names.
#[test]
fn a_large_search_without_its_index_says_so() {
    let repo = repo();
    let work = tempfile::tempdir().unwrap();
    let defs = repo.join("tests/catalogs/fleet/toolbench");
    let out = work.path().join("out");
    let build = |emit: &str| common::built(&defs, &out, emit);
    let registry = out.join("registry.json");
    let search = |registry: &std::path::Path| {
        let o = toolreg(
            work.path(),
            &[
                "search",
                "weather forecast for tomorrow",
                "--registry",
                registry.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!o.stdout.is_empty());
        stderr(&o)
    };
    build("registry,help");
    let said = search(&registry);
    assert!(
        said.contains("there is no `") && said.contains("search.json`"),
        "{said}"
    );
    assert!(
        said.contains("these 2479 ops") && said.contains("includes `search`"),
        "{said}"
    );

    build("registry,help,search");
    assert_eq!(search(&registry), "");
    // Another registry's index (a stale copy) is not used, and the note says why.
    fs::write(
        out.join("search.json"),
        b"{\"registry_version\": \"b3:0000\"}",
    )
    .unwrap();
    let said = search(&registry);
    assert!(said.contains("is not this registry's"), "{said}");

    // The repo's example catalog (56 ops) builds its index in a blink: no note.
    let small = work.path().join("small");
    common::built(&repo.join("definitions"), &small, "registry,help");
    assert_eq!(search(&small.join("registry.json")), "");
}

/// `--registry` takes the output folder as well as its `registry.json`: help, search, exec and
/// eval answer the same either way, and a folder without a registry is named in the error.
#[test]
fn the_output_folder_stands_for_its_registry() {
    let repo = repo();
    let queries = repo.join("../shared/eval/seed-catalog-queries.jsonl");
    let queries = queries.to_str().unwrap();
    // Trace ids and timings differ between any two runs.
    let volatile = regex::Regex::new(r#""(trace_id|latency_ms|[a-z_]*_ms)": [^,\n}]+"#).unwrap();
    let commands: [&[&str]; 4] = [
        &["help", "onto.task.list"],
        &["search", "show me every finished to-do"],
        &["exec", "onto.task.list", "--args", "{}"],
        &["eval", "--queries", queries, "--format", "json"],
    ];
    for command in commands {
        let answer = |registry: &str| {
            let mut args = command.to_vec();
            args.extend(["--registry", registry]);
            let o = toolreg(&repo, &args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            volatile.replace_all(&text, "").into_owned()
        };
        let by_file = answer("generated/registry.json");
        assert!(!by_file.is_empty(), "{command:?}");
        assert_eq!(answer("generated"), by_file, "{command:?}");
        assert_eq!(answer("generated/"), by_file, "{command:?}");
    }
    let empty = tempfile::tempdir().unwrap();
    let o = toolreg(
        &repo,
        &["search", "x", "--registry", empty.path().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    let said = stderr(&o);
    assert!(said.contains("registry.json`"), "{said}");
}
