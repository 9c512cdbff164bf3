//! Issue 33: `toolreg serve` over a folder with `lookup.json` and no upstreams starts from the
//! registry's head and the surface file, answers `tools/list` at once, and loads the registry on
//! a thread; its answers are exactly those of a server that loaded everything before serving.
//! A registry that does not load fails closed: tools are listed, every call is refused.
#![cfg(feature = "mcp")]

mod common;

use serde_json::{json, Value};
use std::path::Path;
use toolreg::serve::{Server, SurfaceChoice};

/// A copy of the example's output folder (what serve reads), with or without `lookup.json`.
fn folder(with_lookup: bool) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let gen = common::repo().join("generated");
    let mut names = vec!["registry.json", "help.json", "search.json"];
    if with_lookup {
        names.push("lookup.json");
    }
    for name in names {
        std::fs::copy(gen.join(name), tmp.path().join(name)).unwrap();
    }
    std::fs::create_dir(tmp.path().join("surfaces")).unwrap();
    std::fs::copy(
        gen.join("surfaces/gateway.json"),
        tmp.path().join("surfaces/gateway.json"),
    )
    .unwrap();
    tmp
}

/// A call's answer with what differs per run (trace ids, latency) blanked.
async fn answer(server: &Server, tool: &str, args: Value) -> String {
    let r = server
        .call(tool, args.as_object().cloned())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e:?}"));
    let text = serde_json::to_string(&r).unwrap();
    let trace = regex::Regex::new(r#"tr_[0-9a-f]+"#).unwrap();
    let latency = regex::Regex::new(r#"latency_ms[\\"]*: ?[0-9]+"#).unwrap();
    let text = trace.replace_all(&text, "");
    latency.replace_all(&text, "").into_owned()
}

fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("tool_help", json!({"path": "root"})),
        (
            "tool_help",
            json!({"path": "onto.task.list", "format": "full"}),
        ),
        ("tool_help", json!({"path": "onto.tasks.list"})),
        ("tool_help", json!({"path": "no.such.path"})),
        (
            "tool_search",
            json!({"query": "show me every finished to-do"}),
        ),
        (
            "tool_search",
            json!({"query": "order a pizza to my office"}),
        ),
        ("tool_exec", json!({"op": "onto.task.list", "args": {}})),
        (
            "tool_exec",
            json!({"op": "onto.task.update", "args": {"task_id": "t1"}, "dry_run": true}),
        ),
        ("tool_exec", json!({"op": "no.such.op", "args": {}})),
    ]
}

fn load(dir: &Path) -> Server {
    Server::load(dir, &SurfaceChoice::Gateway).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_start_answers_as_a_full_one() {
    let (deferred_dir, eager_dir) = (folder(true), folder(false));
    let (deferred, eager) = (load(deferred_dir.path()), load(eager_dir.path()));
    assert_eq!(deferred.tools(), eager.tools());
    assert!(!deferred.tools().is_empty());
    for (tool, args) in calls() {
        assert_eq!(
            answer(&deferred, tool, args.clone()).await,
            answer(&eager, tool, args.clone()).await,
            "{tool} {args}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_does_not_load_after_a_deferred_start_fails_closed() {
    let dir = folder(true);
    // Damaged in place, same size, so lookup.json still matches the file: it no longer parses.
    let path = dir.path().join("registry.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replacen("\"ops\": {", "\"ops\": [", 1);
    assert_ne!(damaged, text);
    assert_eq!(damaged.len(), text.len());
    std::fs::write(&path, damaged).unwrap();
    let server = load(dir.path());
    // The surface is listed (it was checked against the head's version at start) ...
    assert!(!server.tools().is_empty());
    // ... and no op runs: the gateway that stands in has none.
    let exec = answer(
        &server,
        "tool_exec",
        json!({"op": "onto.task.list", "args": {}}),
    )
    .await;
    assert!(exec.contains("NOT_FOUND"), "{exec}");
    assert!(!exec.contains("\\\"ok\\\":true"), "{exec}");
}
