//! The README stays a front door and the guide stays true: every diagnostic code and every
//! runtime error code has its row in the guide, the guide's overlay example is valid, and every
//! link from the README into the guide lands on a heading that exists.

mod common;

use toolreg::diag::{Code, Diagnostics};

fn read(rel: &str) -> String {
    std::fs::read_to_string(common::repo().join(rel)).unwrap()
}

#[test]
fn every_diagnostic_code_is_documented() {
    let text = read("docs/guide.md");
    for code in Code::ALL {
        let sev = format!("{:?}", code.severity()).to_lowercase();
        let row = format!("| {} | {sev} | {} |", code.as_str(), code.title());
        assert!(text.contains(&row), "docs/guide.md lacks the row: {row}");
    }
}

#[test]
fn every_diff_code_is_documented() {
    let text = read("docs/guide.md");
    for code in toolreg::diff::DiffCode::ALL {
        let row = format!(
            "| {} | {} | {} |",
            code.as_str(),
            code.level().as_str(),
            code.title()
        );
        assert!(text.contains(&row), "docs/guide.md lacks the row: {row}");
    }
}

#[test]
fn every_runtime_error_code_is_documented() {
    use toolreg::runtime::codes;
    let text = read("docs/guide.md");
    for code in [
        codes::NOT_FOUND,
        codes::FORBIDDEN,
        codes::EMPTY_ARGS,
        codes::MALFORMED_ARGS,
        codes::VALIDATION_ERROR,
        codes::CONFLICT,
        codes::NOT_IMPLEMENTED,
        codes::INTERNAL,
        codes::IDEMPOTENCY_UNAVAILABLE,
    ] {
        assert!(
            text.contains(&format!("| `{code}` |")),
            "docs/guide.md lacks a row for {code}"
        );
    }
}

#[cfg(feature = "mcp")]
#[test]
fn the_mcp_server_error_codes_are_documented() {
    use toolreg::serve::codes;
    let text = read("docs/guide.md");
    for code in [
        codes::UPSTREAM_UNAVAILABLE,
        codes::UPSTREAM_TIMEOUT,
        codes::UPSTREAM_TOO_LARGE,
        codes::UPSTREAM_TOOL_CHANGED,
    ] {
        assert!(
            text.contains(&format!("| `{code}` |")),
            "docs/guide.md lacks a row for {code}"
        );
    }
}

/// The guide's TOML block starting with `first_line`, loaded as an overlay: no finding at all
/// (an unknown key would be TR019).
fn guide_overlay_block(first_line: &str) -> toolreg::compiler::overlay::Overlay {
    let text = read("docs/guide.md");
    let start = text
        .find(&format!("```toml\n{first_line}"))
        .unwrap_or_else(|| panic!("the guide has a TOML block starting with {first_line}"));
    let body = &text[start + "```toml\n".len()..];
    let example = &body[..body.find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolreg.toml"), example).unwrap();
    let mut diags = Diagnostics::default();
    let lo = toolreg::compiler::overlay::load(dir.path(), "x", &mut diags);
    assert!(diags.is_empty(), "{}", diags.render_text());
    lo.unwrap().overlay
}

#[test]
fn the_overlay_example_parses_without_unknown_keys() {
    let overlay = guide_overlay_block("[registry]");
    assert_eq!(overlay.rules.len(), 3);
    assert_eq!(
        overlay.rules[1].get_ref().file.as_deref(),
        Some("onto-*.json")
    );
    assert_eq!(overlay.special.len(), 2);
    assert!(overlay.fallback.is_some());
    assert!(overlay.classify.infer);
    assert_eq!(overlay.profiles.len(), 1);
    let task_create = &overlay.ops["onto.task.create"];
    assert!(task_create.policy.is_some());
    assert_eq!(task_create.examples.len(), 1);
    assert_eq!(overlay.budgets.tool_tokens, Some(900));
}

#[test]
fn the_runtime_overlay_keys_parse_without_unknown_keys() {
    let overlay = guide_overlay_block("[synonyms]");
    assert_eq!(overlay.synonyms["todo"], ["task"]);
    assert_eq!(overlay.clusters.len(), 1);
    let weight = overlay.search.semantic_weight.map(|w| w.into_inner());
    assert_eq!(
        weight,
        Some(0.4),
        "the default, runtime::hybrid::DEFAULT_WEIGHT"
    );
    // The floors the guide shows are the defaults they say they are.
    let lexical = overlay.search.match_lexical.map(|f| f.into_inner());
    assert_eq!(lexical, Some(toolreg::runtime::search::LEXICAL_FLOORS));
    let hybrid = overlay.search.match_hybrid.map(|f| f.into_inner());
    assert_eq!(
        hybrid,
        Some(toolreg::runtime::search::BUNDLED_HYBRID_FLOORS)
    );
}

/// GitHub's anchor for a heading: lowercase, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn readme_links_into_the_guide_resolve_and_the_readme_stays_short() {
    let readme = read("README.md");
    let guide = read("docs/guide.md");
    let anchors: Vec<String> = guide
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect();
    let mut links = 0;
    for part in readme.split("](docs/guide.md").skip(1) {
        if let Some(rest) = part.strip_prefix('#') {
            let a = &rest[..rest.find(')').unwrap()];
            assert!(
                anchors.iter().any(|x| x == a),
                "no heading for #{a} in the guide"
            );
        }
        links += 1;
    }
    assert!(links >= 5, "the README points into the guide");
    // The front door: what it is, the two commands, the first five minutes, a screen each.
    assert!(
        readme.len() < 20_000,
        "README is {} bytes: move reference material into docs/guide.md",
        readme.len()
    );
    assert!(readme.contains("cargo run --release -- build") && readme.contains("scripts/test"));
    assert!(readme.contains("## First five minutes"));
}

/// The guide's "Repository layout" names only what exists, and names every folder of `src/`.
#[test]
fn the_repository_layout_matches_the_tree() {
    let guide = read("docs/guide.md");
    let section = &guide[guide.find("## Repository layout").expect("the section")..];
    let block = &section[section.find("```text\n").unwrap() + 8..];
    let block = &block[..block.find("```").unwrap()];
    let root = common_repo();
    // (indent, folder) of the open folders: an entry belongs to the last folder less indented.
    let mut open: Vec<(usize, String)> = Vec::new();
    let mut named = Vec::new();
    for line in block.lines() {
        let indent = line.len() - line.trim_start().len();
        let entry = line.trim_start();
        // A continuation of the previous entry's description.
        if entry.is_empty() || indent >= 20 {
            continue;
        }
        let first = entry.split("  ").next().unwrap().trim();
        open.retain(|(i, _)| *i < indent);
        let parent = open.last().map(|(_, p)| p.clone()).unwrap_or_default();
        for name in first.split(", ") {
            let path = format!("{parent}{name}");
            assert!(
                root.join(&path).exists(),
                "docs/guide.md's layout names `{path}`, which does not exist"
            );
            named.push(path.trim_end_matches('/').to_string());
        }
        if first.ends_with('/') {
            open.push((indent, format!("{parent}{first}")));
        }
    }
    // Every folder under src/ is named, and nothing but lib.rs and main.rs sits loose beside them.
    let mut folders = vec![root.join("src")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                assert!(
                    named.contains(&rel),
                    "the layout does not name the folder `{rel}`"
                );
                folders.push(path);
            } else if dir == root.join("src") {
                assert!(
                    rel == "src/lib.rs" || rel == "src/main.rs",
                    "`{rel}` sits loose at src/: give it a folder"
                );
            }
        }
    }
}

fn common_repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README's "First five minutes" transcript is what the commands print: each `$ toolreg`
/// line is run on a copy of the GitHub MCP server's tools, and every line shown under it must
/// be a line of what it printed (stderr and stdout; search as at a terminal, `--format text`).
#[test]
fn the_first_five_minutes_transcript_is_what_toolreg_prints() {
    let readme = read("README.md");
    let start = readme
        .find("```text\n$ toolreg build --definitions github/")
        .expect("the README's transcript");
    let block = &readme[start + 8..];
    let block = &block[..block.find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(
        &common::repo().join("tests/catalogs/github"),
        &dir.path().join("github"),
    );
    let mut checked = 0;
    for part in block.split("$ toolreg ").filter(|p| !p.trim().is_empty()) {
        let mut lines = part.lines();
        let command = lines.next().unwrap();
        let mut args: Vec<String> = Vec::new();
        // Quoted words stay one argument.
        for (i, piece) in command.split('"').enumerate() {
            if i % 2 == 1 {
                args.push(piece.to_string());
            } else {
                args.extend(piece.split_whitespace().map(str::to_owned));
            }
        }
        if args[0] == "search" {
            args.extend(["--format".into(), "text".into()]);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = common::toolreg(dir.path(), &refs);
        assert!(o.status.success(), "{command}: {}", common::stderr(&o));
        let printed = format!(
            "{}{}",
            common::stderr(&o),
            String::from_utf8_lossy(&o.stdout)
        );
        for shown in lines.filter(|l| !l.trim().is_empty()) {
            assert!(
                printed.lines().any(|l| l == shown),
                "README shows a line `toolreg {command}` does not print:\n{shown}\n--- it printed:\n{printed}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked} lines checked");
}
