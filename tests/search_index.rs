//! `search.json` (issue 33): the search index a build writes answers every query exactly as the
//! index search builds for itself, is byte-identical from build to build, and is never read
//! when it is not this registry's, this toolreg's, or whole.

mod common;

use serde_json::Value;
use toolreg::runtime::search::{SearchIndex, SearchRequest, INDEX_FORMAT};
use toolreg::runtime::Gateway;

fn registry(defs: &str) -> toolreg::Registry {
    let compiled = toolreg::compiler::compile(&common::repo().join(defs));
    compiled
        .registry
        .unwrap_or_else(|| panic!("{defs}: {}", compiled.diagnostics.render_text()))
}

/// Every op's summary, its tool name with a typo, and the repo's seed queries.
fn queries(reg: &toolreg::Registry) -> Vec<String> {
    let mut q: Vec<String> = reg
        .ops
        .values()
        .flat_map(|r| {
            let mut typo = r.tool_name.clone();
            if typo.len() > 4 {
                typo.remove(2);
            }
            [r.summary.clone(), typo]
        })
        .collect();
    let seeds =
        std::fs::read_to_string(common::shared().join("eval/seed-catalog-queries.jsonl")).unwrap();
    for line in seeds.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        q.push(v["query"].as_str().unwrap().to_string());
    }
    q.push("order a pizza to my office".into());
    q
}

#[test]
fn a_written_index_answers_as_a_built_one() {
    for defs in ["definitions", "tests/catalogs/fleet/livemcp"] {
        let reg = registry(defs);
        let artifact = SearchIndex::to_artifact(&reg);
        assert_eq!(
            artifact,
            SearchIndex::to_artifact(&reg),
            "{defs}: the same bytes every time"
        );
        let index =
            SearchIndex::from_artifact(artifact.clone().into_bytes(), &reg.registry_version)
                .expect("the index of this registry is read");
        let asked = queries(&reg);
        // What a cold `toolreg search` loads: the registry as search sees it, from search.json.
        let (view, view_index) =
            SearchIndex::read_artifact(artifact.clone().into_bytes(), &reg.registry_version)
                .expect("the registry and index of this registry are read");
        assert!(view
            .ops
            .values()
            .all(|r| r.description.is_empty() && r.examples.is_empty()));
        let mut cold = Gateway::for_search(view);
        cold.set_search_index(view_index);
        // The view has no schemas: exec through it fails closed.
        let op = cold.registry().ops.keys().next().unwrap().clone();
        let refused = cold.prepare(
            &toolreg::runtime::ExecCall::new(op.clone(), serde_json::json!({})),
            &toolreg::runtime::Scope::all(),
            &mut Vec::new(),
        );
        assert!(
            refused.is_err(),
            "{defs}: exec of `{op}` through the search view ran"
        );
        let built = Gateway::for_search(reg.clone());
        let mut read = Gateway::for_search(reg);
        read.set_search_index(index);
        for q in &asked {
            let mut req = SearchRequest::query(q.clone());
            req.limit = Some(10);
            let a = serde_json::to_value(built.search(&req)).unwrap();
            let b = serde_json::to_value(read.search(&req)).unwrap();
            assert_eq!(
                a, b,
                "{defs}: `{q}` answers otherwise from the written index"
            );
            let c = serde_json::to_value(cold.search(&req)).unwrap();
            assert_eq!(
                a, c,
                "{defs}: `{q}` answers otherwise from search.json alone"
            );
        }
        assert!(asked.len() > 100, "{defs}: {} queries", asked.len());
    }
}

#[test]
fn an_index_not_of_this_registry_or_toolreg_is_not_read() {
    let reg = registry("definitions");
    let artifact = SearchIndex::to_artifact(&reg);
    assert!(
        SearchIndex::from_artifact(artifact.clone().into_bytes(), "b3:0000000000000000").is_none()
    );
    let format = format!("\"index_format\":{INDEX_FORMAT}");
    for (from, to) in [
        (format.as_str(), "\"index_format\":999"),
        ("\"toolreg_version\":\"", "\"toolreg_version\":\"0.0.0-"),
        // Built by a toolreg of the same version whose phrasing data (synonyms, topics)
        // differed: its synonyms are not this build's.
        ("\"phrasing\":\"b3:", "\"phrasing\":\"b3:0"),
    ] {
        let edited = artifact.replacen(from, to, 1);
        assert_ne!(edited, artifact);
        assert!(
            SearchIndex::from_artifact(edited.into_bytes(), &reg.registry_version).is_none(),
            "{to}"
        );
    }
    let cut = &artifact.as_bytes()[..artifact.len() / 2];
    assert!(SearchIndex::from_artifact(cut.to_vec(), &reg.registry_version).is_none());
    assert!(SearchIndex::read_artifact(cut.to_vec(), &reg.registry_version).is_none());
    assert!(
        SearchIndex::read_artifact(artifact.clone().into_bytes(), "b3:0000000000000000").is_none()
    );
    assert!(SearchIndex::from_artifact(b"{}".to_vec(), &reg.registry_version).is_none());

    // Posting lists are packed (base64 of little-endian op index and weight), read as spans of
    // the file, and decoded when a query first reads their term. A list written with escapes
    // (which the writer never does) refuses the file: it could not be a span of it. A list that is not whole entries refuses the file; one
    // that names an op past the last one is found on first use and finds nothing: it never
    // indexes out of bounds, and the other terms answer as before.
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let file: Value = serde_json::from_str(&artifact).unwrap();
    let postings = file["postings"].as_object().unwrap();
    let (term, list) = postings
        .iter()
        .max_by_key(|(_, l)| l.as_str().unwrap().len())
        .unwrap();
    let list = list.as_str().unwrap();
    let mut bytes = b64.decode(list).unwrap();
    let last = bytes.len() - 12;
    bytes[last..last + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let edit = |damaged: String| {
        let edited = artifact.replacen(
            &format!("\"{term}\":\"{list}\""),
            &format!("\"{term}\":\"{damaged}\""),
            1,
        );
        assert_ne!(edited, artifact);
        edited
    };
    let torn = edit(b64.encode(&bytes[..bytes.len() - 1]));
    assert!(SearchIndex::from_artifact(torn.clone().into_bytes(), &reg.registry_version).is_none());
    assert!(SearchIndex::read_artifact(torn.into_bytes(), &reg.registry_version).is_none());
    let escaped = artifact.replacen(
        &format!("\"{term}\":\"{}", &list[..4]),
        &format!("\"{term}\":\"\\u{:04x}{}", list.as_bytes()[0], &list[1..4]),
        1,
    );
    assert_ne!(escaped, artifact);
    assert!(
        SearchIndex::from_artifact(escaped.clone().into_bytes(), &reg.registry_version).is_none()
    );
    assert!(SearchIndex::read_artifact(escaped.into_bytes(), &reg.registry_version).is_none());
    let past = edit(b64.encode(&bytes));
    let (view, index) = SearchIndex::read_artifact(past.into_bytes(), &reg.registry_version)
        .expect("whole entries are read; what they name is checked on use");
    let mut damaged = Gateway::for_search(view);
    damaged.set_search_index(index);
    let mut whole = Gateway::for_search(reg.clone());
    whole.set_search_index(
        SearchIndex::from_artifact(artifact.clone().into_bytes(), &reg.registry_version).unwrap(),
    );
    let other = postings.keys().find(|t| *t != term).unwrap();
    let hits = |gw: &Gateway, q: &str| {
        serde_json::to_value(gw.search(&SearchRequest::query(q.to_string()))).unwrap()["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["op"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    // Asked for, the damaged term answers (never past the ops) without its list.
    assert!(
        !hits(&whole, term).is_empty(),
        "`{term}` finds ops in the whole index"
    );
    assert_ne!(hits(&damaged, term), hits(&whole, term), "`{term}`");
    assert_eq!(hits(&damaged, other), hits(&whole, other), "`{other}`");
}

/// The CLI reads the build's index and, when the file is torn or stale, answers exactly as
/// without it (it builds its own), never fails.
#[test]
fn toolreg_search_answers_the_same_with_a_broken_index() {
    let repo = common::repo();
    let dir = tempfile::tempdir().unwrap();
    for name in ["registry.json", "search.json"] {
        std::fs::copy(repo.join("generated").join(name), dir.path().join(name)).unwrap();
    }
    let registry = dir.path().join("registry.json");
    let search = || {
        let o = common::toolreg(
            &repo,
            &[
                "search",
                "remind me what's left before launch",
                "--registry",
                registry.to_str().unwrap(),
                "--format",
                "json",
            ],
        );
        assert!(o.status.success(), "{}", common::stderr(&o));
        o.stdout
    };
    let with_index = search();
    let text = std::fs::read_to_string(dir.path().join("search.json")).unwrap();
    std::fs::write(dir.path().join("search.json"), &text[..text.len() / 3]).unwrap();
    assert_eq!(search(), with_index, "a torn index");
    std::fs::write(
        dir.path().join("search.json"),
        text.replacen(
            "\"registry_version\":\"b3:",
            "\"registry_version\":\"b3:0",
            1,
        ),
    )
    .unwrap();
    assert_eq!(search(), with_index, "a stale index");
    std::fs::remove_file(dir.path().join("search.json")).unwrap();
    assert_eq!(search(), with_index, "no index");
    // A search.json of another registry (the catalog changed since it was written): not read.
    std::fs::copy(
        repo.join("examples/universal-agent/generated/search.json"),
        dir.path().join("search.json"),
    )
    .unwrap();
    assert_eq!(search(), with_index, "another registry's index");
}
