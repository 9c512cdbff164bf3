//! Batch and operation events over the example catalog (issue 38): a batch answers item by item
//! as the single calls would, stops the writes after a failure, cannot reach past the caller's
//! scope, and refuses bad input whole; every exec envelope carries its operation, and a host
//! hears started/success/error events.

mod common;

use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use toolreg::help::HelpRequest;
use toolreg::runtime::batch::{Batch, MAX_ITEMS};
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::{block_on, codes, ExecCall, Gateway, HandlerError, Scope};

/// The committed example registry with task handlers that count their calls; `delete` fails.
fn gateway() -> (Gateway, Arc<AtomicUsize>) {
    let mut gw = Gateway::from_dir(common::repo().join("generated")).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    for op in ["onto.task.create", "onto.task.update", "onto.task.list"] {
        let c = Arc::clone(&calls);
        gw.handle_sync(op, move |args| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"id": format!("task-{n}"), "title": args.get("title")}))
        })
        .unwrap();
    }
    let c = Arc::clone(&calls);
    gw.handle_sync("onto.task.delete", move |_| {
        c.fetch_add(1, Ordering::SeqCst);
        Err(HandlerError::internal("database unavailable"))
    })
    .unwrap();
    (gw, calls)
}

/// An answer without what differs from call to call (trace ids, latency).
fn steady(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("meta").and_then(Value::as_object_mut) {
        meta.remove("trace_id");
        meta.remove("latency_ms");
    }
    v
}

fn parse(v: Value) -> Batch {
    Batch::parse(&v, "tool_batch").unwrap_or_else(|e| panic!("{:?}", e.0.to_json()))
}

const CREATE: &str = "onto.task.create";

fn create_args(title: &str) -> Value {
    json!({"project_id": "p1", "title": title})
}

#[test]
fn a_batch_answers_each_item_as_the_single_call_would() {
    let (gw, _) = gateway();
    let batch = parse(json!({"items": [
        {"help": {"path": CREATE}},
        {"exec": {"op": CREATE, "args": create_args("Ship v2")}},
        {"search": {"query": "list my tasks", "limit": 3}},
        {"exec": {"op": "onto.task.get", "args": {}}},
    ]}));
    let answer = block_on(gw.batch(&batch));
    let items = answer["items"].as_array().unwrap();
    assert_eq!(items.len(), 4);

    // The same calls alone, on a fresh gateway (the create handler counts from zero again).
    let (alone, _) = gateway();
    let help = Value::clone(&alone.help(&HelpRequest::path(CREATE)));
    let exec = block_on(alone.exec(ExecCall::new(CREATE, create_args("Ship v2")))).to_json();
    let mut req = SearchRequest::query("list my tasks");
    req.limit = Some(3);
    let search = serde_json::to_value(alone.search(&req)).unwrap();
    let empty = block_on(alone.exec(ExecCall::new("onto.task.get", json!({})))).to_json();
    assert_eq!(items[0], help);
    assert_eq!(steady(items[1].clone()), steady(exec));
    assert_eq!(items[2], search);
    assert_eq!(steady(items[3].clone()), steady(empty));
    assert_eq!(items[3]["error"]["code"], codes::EMPTY_ARGS);
    // One item failed: the batch says so, and every answer is still there.
    assert_eq!(answer["ok"], false);
}

#[test]
fn a_failed_write_stops_the_writes_after_it_but_not_the_reads() {
    let (gw, calls) = gateway();
    let items = json!([
        {"exec": {"op": CREATE, "args": create_args("first")}},
        {"exec": {"op": "onto.task.delete", "args": {"task_id": "t1"}}},
        {"exec": {"op": CREATE, "args": create_args("third")}},
        {"exec": {"op": "onto.task.list", "args": {"project_id": "p1"}}},
        {"help": {"path": "onto.task"}},
    ]);
    let answer = block_on(gw.batch(&parse(json!({ "items": items }))));
    let got = answer["items"].as_array().unwrap();
    assert_eq!(got[0]["ok"], true);
    assert_eq!(got[1]["error"]["code"], codes::INTERNAL);
    assert_eq!(got[2]["error"]["code"], codes::SKIPPED, "{}", got[2]);
    assert_eq!(got[2]["error"]["details"]["failed_item"], 1);
    assert_eq!(got[3]["ok"], true, "a read after the failure still runs");
    assert!(got[4].get("error").is_none());
    // create, delete (failed), list: the third item never reached its handler.
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // With stop_on_error off, the third write runs.
    let (gw, calls) = gateway();
    let answer = block_on(gw.batch(&parse(json!({"items": items, "stop_on_error": false}))));
    assert_eq!(answer["items"][2]["ok"], true);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[test]
fn a_read_scoped_batch_reaches_no_write_by_any_item() {
    let (gw, calls) = gateway();
    let read_only = Scope::read_only();
    let only_list = Scope::ops("list only", ["onto.task.list"]);
    for (scope, code) in [
        (&read_only, codes::FORBIDDEN),
        (&only_list, codes::NOT_FOUND),
    ] {
        let batch = parse(json!({"items": [
            {"exec": {"op": CREATE, "args": create_args("x")}},
            {"exec": {"op": "create_onto_task", "args": create_args("by tool name")}},
            {"exec": {"op": "onto.tasks.create", "args": create_args("misspelt")}},
            {"exec": {"op": CREATE, "args": create_args("dry"), "dry_run": true}},
        ], "stop_on_error": false}));
        let answer = block_on(gw.batch_for(&batch, scope, "reader"));
        let items = answer["items"].as_array().unwrap();
        // By op and by tool name: refused by the scope; misspelt: unknown; a dry run of a write
        // is still a write the scope refuses.
        for item in [&items[0], &items[1], &items[3]] {
            assert_eq!(item["error"]["code"], code, "{item}");
        }
        assert_eq!(items[2]["error"]["code"], codes::NOT_FOUND, "{}", items[2]);
        // What the scope hides reads as unknown in help too.
        if code == codes::NOT_FOUND {
            let help = block_on(gw.batch_for(
                &parse(json!([{"help": {"path": CREATE}}])),
                scope,
                "reader",
            ));
            assert_eq!(help["items"][0]["error"]["code"], "UNKNOWN_PATH", "{help}");
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn bad_batches_are_one_envelope_and_nothing_runs() {
    let (_gw, calls) = gateway();
    let write = json!({"exec": {"op": CREATE, "args": create_args("never")}});
    let too_many: Vec<Value> = (0..=MAX_ITEMS).map(|_| write.clone()).collect();
    for (input, says, pointer) in [
        (json!("help me"), "a batch is", ""),
        (json!({"items": {"help": {}}}), "must be a list", "/items"),
        (json!({"items": []}), "no items", "/items"),
        (json!({ "items": too_many }), "at most 16", "/items"),
        (json!([write, {"fly": {}}]), "not a call kind", "/1"),
        (
            json!([write, {"batch": {"items": [write]}}]),
            "do not nest",
            "/1",
        ),
        (json!([write, {"help": {}, "exec": {}}]), "one call", "/1"),
        (
            json!([write, {"help": "root"}]),
            "must be an object",
            "/1/help",
        ),
        (
            json!([write, {"search": {"limit": "five"}}]),
            "do not fit",
            "/1/search",
        ),
        (
            json!({"items": [write], "stop": true}),
            "not a batch field",
            "/stop",
        ),
    ] {
        let refused = Batch::parse(&input, "tool_batch").expect_err(&input.to_string());
        let env = refused.0.to_json();
        assert_eq!(env["ok"], false);
        assert_eq!(env["error"]["code"], codes::VALIDATION_ERROR);
        let message = env["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{input}: {message}");
        assert_eq!(
            env["error"]["details"]["field_errors"][0]["pointer"], pointer,
            "{input}"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn every_exec_envelope_carries_its_operation_and_hosts_hear_events() {
    let (mut gw, _) = gateway();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = Arc::clone(&heard);
    gw.on_operation(move |e| {
        h.lock().unwrap().push((
            e.op.clone(),
            e.operation.status.clone(),
            e.operation.describe(),
        ))
    });
    let ok = block_on(gw.exec(ExecCall::new(CREATE, create_args("Ship v2"))));
    let op = ok.operation.as_ref().unwrap();
    assert_eq!(
        (
            op.action.as_str(),
            op.entity_type.as_str(),
            op.status.as_str()
        ),
        ("create", "task", "success")
    );
    assert_eq!(op.entity_name.as_deref(), Some("Ship v2"));
    let failed = block_on(gw.exec(ExecCall::new("onto.task.delete", json!({"task_id": "t1"}))));
    assert_eq!(failed.operation.as_ref().unwrap().status, "error");
    // Refused before the handler: the envelope says what it was, no event is sent.
    let refused = block_on(gw.exec(ExecCall::new(CREATE, json!({"title": 5}))));
    assert_eq!(refused.operation.as_ref().unwrap().status, "error");
    // An unknown op has no operation (it is nothing a UI could name).
    let unknown = block_on(gw.exec(ExecCall::new("onto.pizza.order", json!({}))));
    assert!(unknown.operation.is_none());
    assert_eq!(
        *heard.lock().unwrap(),
        vec![
            (
                CREATE.into(),
                "started".into(),
                "Creating task “Ship v2”".into()
            ),
            (
                CREATE.into(),
                "success".into(),
                "Created task “Ship v2”".into()
            ),
            (
                "onto.task.delete".into(),
                "started".into(),
                "Deleting task".into()
            ),
            (
                "onto.task.delete".into(),
                "error".into(),
                "Could not delete task".into()
            ),
        ]
    );
}

#[test]
fn the_operation_table_of_the_example_catalog() {
    let reg = toolreg::Registry::from_path(common::repo().join("generated/registry.json")).unwrap();
    let table: String = reg
        .ops
        .values()
        .map(|r| {
            let spec = toolreg::model::operation::spec(r);
            let sample = spec.operation(r.examples.first().map(|e| &e.args), None, "success");
            format!(
                "{:<36} {:<7} {:<22} {:<14} {}\n",
                r.op,
                spec.action,
                spec.entity_type,
                spec.display.as_deref().unwrap_or("-"),
                sample.describe()
            )
        })
        .collect();
    insta::assert_snapshot!(table);
}

#[test]
fn the_cli_runs_a_batch_file_with_exec_items_as_dry_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("batch.json");
    std::fs::write(
        &file,
        json!({"items": [
            {"help": {"path": CREATE}},
            {"exec": {"op": CREATE, "args": create_args("Ship v2")}},
        ]})
        .to_string(),
    )
    .unwrap();
    let run = |file: &std::path::Path| {
        common::toolreg(
            &common::repo(),
            &["exec", "--batch", file.to_str().unwrap()],
        )
    };
    let o = run(&file);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let answer: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(answer["items"][0]["path"], CREATE);
    assert_eq!(answer["items"][1]["meta"]["dry_run"], true);
    assert_eq!(answer["items"][1]["operation"]["status"], "dry_run");

    // A refused batch: the envelope on stdout, exit 1; a file that is not JSON: exit 2.
    std::fs::write(&file, r#"{"items": [{"batch": {}}]}"#).unwrap();
    let o = run(&file);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("do not nest"));
    std::fs::write(&file, "{\"items\": [").unwrap();
    let o = run(&file);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::stderr(&o).contains("line 1"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn a_display_path_the_schema_lacks_stops_the_build_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let defs = tmp.path().join("defs");
    common::copy_dir(&common::repo().join("definitions"), &defs);
    let overlay = defs.join("toolreg.toml");
    let mut text = std::fs::read_to_string(&overlay).unwrap();
    text.push_str(
        "\n[ops.\"onto.goal.create\"]\ndisplay = \"args.headline\"\n\n[gateway]\nbatch = true\n",
    );
    std::fs::write(&overlay, text).unwrap();
    let out = tmp.path().join("out");
    let build = || {
        let (d, o) = (defs.to_str().unwrap(), out.to_str().unwrap());
        common::toolreg(tmp.path(), &["build", "-d", d, "--out", o])
    };
    let o = build();
    let err = common::stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("error[TR020]") && err.contains("args.headline"),
        "{err}"
    );
    assert!(err.contains("toolreg.toml:"), "{err}");
    assert!(!out.exists(), "nothing is written");

    // Named where it is: the op's events read it, and the batch tool is offered.
    let text = std::fs::read_to_string(&overlay)
        .unwrap()
        .replace("args.headline", "result.goal.name");
    std::fs::write(&overlay, text).unwrap();
    let o = build();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let reg = toolreg::Registry::from_path(out.join("registry.json")).unwrap();
    let spec = toolreg::model::operation::spec(&reg.ops["onto.goal.create"]);
    let op = spec.operation(None, Some(&json!({"goal": {"name": "Launch"}})), "success");
    assert_eq!(op.describe(), "Created goal “Launch”");
    let gateway: Value =
        serde_json::from_slice(&std::fs::read(out.join("surfaces/gateway.json")).unwrap()).unwrap();
    let names: Vec<&str> = gateway["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["tool_help", "tool_exec", "tool_search", "tool_batch"]
    );
    // The docs name it beside the other gateway tools.
    let index = std::fs::read_to_string(out.join("docs/src/README.md")).unwrap();
    assert!(index.contains("- `tool_batch` `{\"items\""), "{index}");
    let committed =
        toolreg::Registry::from_path(common::repo().join("generated/registry.json")).unwrap();
    assert_ne!(reg.registry_version, committed.registry_version);
}
