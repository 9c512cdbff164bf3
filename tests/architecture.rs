//! The architecture, checked from the source: which module imports which.
//!
//! Every `crate::`, `super::` and `self::` path in the library (test modules left out) is
//! resolved to the source file it names; an edge between two files counts between the two
//! siblings under their closest common folder (`compiler::ir -> compiler::classify`,
//! `serve::pool -> runtime`). A child using its parent's items is not an edge. Then:
//! - no cycle among siblings, at any depth;
//! - the top-level modules keep their layers: each imports only from a lower layer.
//!
//! The layers are the guide's (docs/guide.md, "Repository layout"): the model at the bottom;
//! the encoder and what is approved on it; the runtime and the compiler beside each other
//! (the runtime never imports the compiler); the emitters on the compiler; writing, diff and the
//! MCP clients on those; serving on top.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Lowest first; a module may import from a layer below its own only.
const LAYERS: &[&[&str]] = &[
    &["model"],
    &["semantic", "trust"],
    &["runtime", "compiler"],
    &["emit"],
    &["write", "diff", "upstream"],
    &["serve"],
];

/// The crate-root re-exports (`crate::registry` is `crate::model::registry`): for the crate's
/// users; the library's own code names each module by its home (a test below holds it to that).
const ROOT_ALIASES: &[(&str, &str)] = &[
    ("canonical", "model::canonical"),
    ("diag", "model::diag"),
    ("help", "model::help"),
    ("registry", "model::registry"),
    ("resolve", "model::resolve"),
    ("schema", "model::schema"),
    ("text", "model::text"),
    ("Registry", "model::registry"),
    ("output", "write::output"),
    ("builder", "write::builder"),
    ("Builder", "write::builder"),
    ("report", "compiler::report"),
    ("surfaces", "compiler::surfaces"),
];

type Module = Vec<String>;

/// Every library module with its file: `src/compiler/infer/mod.rs` is `compiler::infer`.
fn modules(src: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(src).sort_by_file_name() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let mut segs: Module = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        // The binary's command line is not part of the library's layers.
        if segs == ["lib"] || segs == ["main"] || segs[0] == "cli" {
            continue;
        }
        if segs.last().is_some_and(|s| s == "mod") {
            segs.pop();
        }
        out.insert(segs, std::fs::read_to_string(path).unwrap());
    }
    out
}

/// The code of a file without its comments and its `#[cfg(test)]` module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    without_comments(text)
}

/// The text without its line comments (doc comments included).
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) if !l[..at].contains('"') => &l[..at],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path that starts with `crate::`, `super::` or `self::`, brace groups expanded one
/// level (`crate::{a::b, c}` gives `crate::a::b` and `crate::c`).
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != ':';
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let start = ["crate::", "super::", "self::"]
            .iter()
            .find(|p| rest.starts_with(**p));
        let Some(start) = start.filter(|_| boundary) else {
            i += 1;
            continue;
        };
        let mut segs = vec![start.trim_end_matches(':').to_string()];
        i += start.len();
        loop {
            if i < bytes.len() && bytes[i] == '{' {
                let close = matching_brace(&bytes, i);
                let inner: String = bytes[i + 1..close].iter().collect();
                for item in split_top(&inner) {
                    let mut full = segs.clone();
                    full.extend(
                        item.split("::")
                            .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
                            .take_while(|s| !s.is_empty() && s.chars().all(is_ident)),
                    );
                    out.push(full);
                }
                i = close + 1;
                segs.clear();
                break;
            }
            let s = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            if s == i {
                break;
            }
            segs.push(bytes[s..i].iter().collect());
            if bytes.get(i) == Some(&':') && bytes.get(i + 1) == Some(&':') {
                i += 2;
            } else {
                break;
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

fn matching_brace(bytes: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (at, c) in bytes.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return at;
                }
            }
            _ => {}
        }
    }
    bytes.len() - 1
}

fn split_top(inner: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_string());
    out.retain(|s| !s.is_empty() && s != "self");
    out
}

/// The module a path names: the longest prefix that is a module, after the root aliases.
fn target(path: &[String], me: &Module, mods: &BTreeMap<Module, String>) -> Option<Module> {
    // `self` is the module itself and `super` its parent, whether it is `x.rs` or `x/mod.rs`.
    let mut full: Module = match path[0].as_str() {
        "crate" => Vec::new(),
        "self" => me.clone(),
        _ => me[..me.len().saturating_sub(1)].to_vec(),
    };
    let mut rest = &path[1..];
    while rest.first().is_some_and(|s| s == "super") {
        full.pop();
        rest = &rest[1..];
    }
    full.extend(rest.iter().cloned());
    if path[0] == "crate" {
        if let Some((_, to)) = ROOT_ALIASES.iter().find(|(a, _)| *a == full[0]) {
            let mut aliased: Module = to.split("::").map(String::from).collect();
            aliased.extend(full[1..].iter().cloned());
            full = aliased;
        }
    }
    (1..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|m| mods.contains_key(m))
}

/// Sibling edges: parent module -> (from child -> to children).
fn sibling_edges() -> BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    let mut edges: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (me, text) in &mods {
        for path in paths(&code(text)) {
            let Some(to) = target(&path, me, &mods) else {
                continue;
            };
            let common = me.iter().zip(&to).take_while(|(a, b)| a == b).count();
            // The same module, an ancestor's items, or a child of ours: not an edge.
            if common == me.len() || common == to.len() {
                continue;
            }
            edges
                .entry(me[..common].to_vec())
                .or_default()
                .entry(me[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    edges
}

/// A cycle in `graph`, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut c = stack[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        stack.push(n.to_string());
        for next in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_in_a_cycle_or_from_a_layer_above() {
    let edges = sibling_edges();
    // The scan sees what it must: known edges of the pipeline are there.
    let root: Module = Vec::new();
    let top = &edges[&root];
    assert!(top["serve"].contains("runtime"), "{top:?}");
    assert!(top["emit"].contains("compiler"), "{top:?}");
    assert!(edges[&vec!["compiler".to_string()]]["ir"].contains("classify"));

    for (parent, graph) in &edges {
        if let Some(c) = cycle(graph) {
            panic!(
                "an import cycle in `{}`: {}",
                if parent.is_empty() {
                    "src".to_string()
                } else {
                    parent.join("::")
                },
                c.join(" -> ")
            );
        }
    }
    let layer = |m: &str| {
        LAYERS
            .iter()
            .position(|l| l.contains(&m))
            .unwrap_or_else(|| panic!("`src/{m}` has no layer: add it to LAYERS and the guide"))
    };
    let mut wrong = Vec::new();
    for (from, tos) in top {
        for to in tos {
            if layer(to) >= layer(from) {
                wrong.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that go sideways or up a layer: {wrong:?}"
    );
}

/// The `crate::` paths of `text` that go through a crate-root re-export, as written.
fn through_root_aliases(text: &str) -> Vec<String> {
    paths(&without_comments(text))
        .into_iter()
        .filter(|p| {
            p[0] == "crate"
                && p.get(1)
                    .is_some_and(|s| ROOT_ALIASES.iter().any(|(a, _)| s == a))
        })
        .map(|p| p.join("::"))
        .collect()
}

/// The guide's rule: library code (its test modules too) names `crate::model::registry`, never
/// the re-export `crate::registry`, so where a module lives is read off every path to it.
#[test]
fn library_code_names_each_module_by_its_home_not_a_root_reexport() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for (me, text) in modules(&src) {
        for path in through_root_aliases(&text) {
            wrong.push(format!("{}: {path}", me.join("::")));
        }
    }
    assert!(
        wrong.is_empty(),
        "paths through a crate-root re-export (write `crate::model::...`, `crate::write::...`, `crate::compiler::...`): {wrong:?}"
    );
    // The check can fail: a planted path is caught, in braces too, and the home is not.
    assert_eq!(
        through_root_aliases(
            "use crate::{diag::Diagnostics, model::text};\nlet r: crate::Registry;"
        ),
        vec!["crate::diag::Diagnostics", "crate::Registry"]
    );
    assert!(
        through_root_aliases("use crate::model::registry::OpRecord; // crate::registry").is_empty()
    );
}

#[test]
fn the_scan_finds_a_planted_cycle_and_an_upward_import() {
    // The checks above can fail: a graph with a cycle is caught, one without is not.
    let graph = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert_eq!(
        cycle(&graph(&[("classify", "infer"), ("infer", "classify")])),
        Some(vec!["classify".into(), "infer".into(), "classify".into()])
    );
    assert_eq!(
        cycle(&graph(&[("ir", "classify"), ("classify", "infer")])),
        None
    );
    // Paths are read as the compiler reads them, braces and `super` included.
    let found =
        paths("use super::{overlay::Overlay, infer};\nlet x = crate::registry::valid_op(y);");
    assert_eq!(
        found,
        vec![
            vec!["super", "overlay", "Overlay"],
            vec!["super", "infer"],
            vec!["crate", "registry", "valid_op"],
        ]
    );
    assert_eq!(
        code("use crate::a; // crate::b\n#[cfg(test)]\nmod tests { crate::c }"),
        "use crate::a; "
    );
}

/// A file past this many lines reads as several rooms: split it, or say in its header why not.
const LONG_FILE_LINES: usize = 700;

#[test]
fn a_long_source_file_says_why_it_is_one_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut unexplained = Vec::new();
    for entry in walkdir::WalkDir::new(&src).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.path().extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let header: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
        if text.lines().count() > LONG_FILE_LINES
            && !header
                .iter()
                .any(|l| l.starts_with("//! Why it is one file: "))
        {
            unexplained.push(
                entry
                    .path()
                    .strip_prefix(&src)
                    .unwrap()
                    .display()
                    .to_string(),
            );
        }
    }
    assert!(
        unexplained.is_empty(),
        "over {LONG_FILE_LINES} lines with no `//! Why it is one file: ` in the header: {unexplained:?}"
    );
}

/// `unify-deps` (Cargo.toml) only sets dependency features for CI's feature-combination checks:
/// no code may be compiled by it (`cfg(feature = "unify-deps")` would be checked there alone) or
/// name one of its crates, all renamed `unify-*` (the check of every target, which does not
/// enable the feature, would refuse that code too).
#[test]
fn the_unify_deps_feature_reaches_no_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let feature = manifest
        .lines()
        .find(|l| l.starts_with("unify-deps = ["))
        .expect("Cargo.toml declares unify-deps");
    for dep in feature.split('"').filter(|s| s.starts_with("dep:")) {
        assert!(
            dep.starts_with("dep:unify-"),
            "{dep} is not renamed unify-*"
        );
    }
    let mut found = Vec::new();
    for dir in ["src", "tests", "benches", "examples"] {
        for entry in walkdir::WalkDir::new(root.join(dir)).sort_by_file_name() {
            let entry = entry.unwrap();
            if entry.path().extension().is_none_or(|e| e != "rs")
                || entry.path().ends_with("tests/architecture.rs")
            {
                continue;
            }
            let text = without_comments(&std::fs::read_to_string(entry.path()).unwrap());
            if text.contains("unify_") || text.contains("unify-deps") {
                found.push(entry.path().display().to_string());
            }
        }
    }
    assert!(
        found.is_empty(),
        "code names unify-deps or its crates: {found:?}"
    );
}
