//! An agent's side of the gateway: the repo's registry embedded at build time, a few in-memory
//! handlers (tasks and documents kept in maps), and a scripted conversation of help, search and
//! exec calls, including the error cases a model runs into. Every answer is printed.
//!
//! Run: `cargo run --example chat_gateway`

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use toolreg::help::HelpRequest;
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::{block_on, ExecCall, Gateway, HandlerError, Scope};

// Compiled by `toolreg build`, embedded at build time: the agent needs no files at run time.
const REGISTRY: &[u8] = include_bytes!("../generated/registry.json");
const HELP: &[u8] = include_bytes!("../generated/help.json");

#[derive(Default)]
struct Store {
    tasks: BTreeMap<String, Value>,
    docs: BTreeMap<String, Value>,
    next: u32,
}

fn id(store: &mut Store, prefix: &str) -> String {
    store.next += 1;
    format!("{prefix}-{}", store.next)
}

fn register(gw: &mut Gateway, store: Arc<Mutex<Store>>) -> Result<(), Box<dyn std::error::Error>> {
    let s = Arc::clone(&store);
    gw.handle_sync("onto.task.create", move |args| {
        let mut st = s.lock().unwrap();
        let id = id(&mut st, "task");
        let task = json!({"id": id, "project_id": args["project_id"], "title": args["title"], "state_key": args.get("state_key").cloned().unwrap_or(json!("todo"))});
        st.tasks.insert(id, task.clone());
        Ok(task)
    })?;
    let s = Arc::clone(&store);
    gw.handle_sync("onto.task.list", move |args| {
        let st = s.lock().unwrap();
        let tasks: Vec<&Value> = st
            .tasks
            .values()
            .filter(|t| args.get("state_key").is_none_or(|k| t["state_key"] == *k))
            .collect();
        Ok(json!({"tasks": tasks}))
    })?;
    let s = Arc::clone(&store);
    gw.handle_sync("onto.task.search", move |args| {
        let st = s.lock().unwrap();
        let words = args["search"].as_str().unwrap_or_default().to_lowercase();
        let hits: Vec<&Value> = st
            .tasks
            .values()
            .filter(|t| {
                t["title"]
                    .as_str()
                    .is_some_and(|x| x.to_lowercase().contains(&words))
            })
            .collect();
        Ok(json!({"tasks": hits}))
    })?;
    let s = Arc::clone(&store);
    gw.handle_sync("onto.task.update", move |args| {
        let mut st = s.lock().unwrap();
        let id = args["task_id"].as_str().unwrap_or_default().to_string();
        let task = st.tasks.get_mut(&id).ok_or_else(|| {
            HandlerError::new(
                "NOT_FOUND",
                format!("no task `{id}`; find it with onto.task.search"),
            )
        })?;
        for (k, v) in args.as_object().unwrap() {
            if k != "task_id" {
                task[k] = v.clone();
            }
        }
        Ok(task.clone())
    })?;
    let s = Arc::clone(&store);
    gw.handle_sync("onto.document.create", move |args| {
        let mut st = s.lock().unwrap();
        let id = id(&mut st, "doc");
        let doc = json!({"id": id, "title": args["title"], "content": args.get("content").cloned().unwrap_or(json!(""))});
        st.docs.insert(id, doc.clone());
        Ok(doc)
    })?;
    let s = Arc::clone(&store);
    gw.handle_sync("onto.document.get", move |args| {
        let st = s.lock().unwrap();
        let id = args["document_id"].as_str().unwrap_or_default();
        st.docs
            .get(id)
            .cloned()
            .ok_or_else(|| HandlerError::new("NOT_FOUND", format!("no document `{id}`")))
    })?;
    Ok(())
}

fn show(label: &str, v: &impl serde::Serialize) {
    println!("--- {label}");
    println!("{}", serde_json::to_string_pretty(v).unwrap());
}

fn exec(gw: &Gateway, label: &str, call: Value) -> Value {
    let env = block_on(gw.exec(ExecCall::from_value(&call)));
    let mut v = env.to_json();
    // Latency and trace ids change every run; keep the transcript stable.
    v["meta"]["latency_ms"] = json!(0);
    v["meta"]["trace_id"] = json!("tr_example");
    show(&format!("exec {label}: {}", call), &v);
    v
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut gw = Gateway::from_slices(REGISTRY, HELP)?;
    let store = Arc::new(Mutex::new(Store::default()));
    register(&mut gw, Arc::clone(&store))?;
    println!(
        "registry {} ({} ops)",
        gw.registry().registry_version,
        gw.registry().counts.ops
    );

    // The model starts at the root: groups and the call contract.
    show("help root", &gw.help(&HelpRequest::default()));
    // It searches for what the user asked ("add a todo ...").
    let found = gw.search(&SearchRequest::query("add a todo to email the investors"));
    show("search \"add a todo to email the investors\"", &found);
    // It reads the op page it found.
    show(
        "help onto.task.create",
        &gw.help(&HelpRequest::path(found.results[0].op.clone())),
    );

    // The calls, good and bad, as models make them.
    exec(
        &gw,
        "empty args",
        json!({"op": "onto.task.create", "args": {}}),
    );
    exec(
        &gw,
        "malformed args",
        json!({"op": "onto.task.create", "args": "{\"project_id\": \"p1\", \"title\": "}),
    );
    exec(
        &gw,
        "wrong names and types",
        json!({"op": "onto.task.create", "args": {"projectId": "p1", "title": "Email investors", "priority": "high"}}),
    );
    let created = exec(
        &gw,
        "alias + idempotency",
        json!({"op": "create_onto_task", "args": {"project_id": "p1", "task": {"name": "Email investors the Q3 update"}}, "idempotency_key": "turn-7"}),
    );
    exec(
        &gw,
        "the same call again (replayed, not re-run)",
        json!({"op": "create_onto_task", "args": {"project_id": "p1", "task": {"name": "Email investors the Q3 update"}}, "idempotency_key": "turn-7"}),
    );
    exec(
        &gw,
        "same key, other args",
        json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "Something else"}, "idempotency_key": "turn-7"}),
    );
    exec(
        &gw,
        "unknown op",
        json!({"op": "onto.tasks.finish", "args": {"task_id": "x"}}),
    );
    let id = created["result"]["id"].clone();
    exec(
        &gw,
        "tool-call markup around the op",
        json!({"op": "<tool_call>onto.task.update</tool_call>", "args": {"task_id": id, "state_key": "done"}}),
    );
    exec(
        &gw,
        "handler error",
        json!({"op": "onto.task.update", "args": {"task_id": "task-404", "state_key": "done"}}),
    );
    exec(
        &gw,
        "dry run by default",
        json!({"op": "onto.project.graph.reorganize", "args": {"project_id": "p1", "operations": [{"op": "reparent", "entity_id": "task-1", "new_parent_id": "plan-1"}]}}),
    );
    exec(
        &gw,
        "no handler registered",
        json!({"op": "onto.goal.list", "args": {}}),
    );
    exec(
        &gw,
        "list",
        json!({"op": "onto.task.list", "args": {"state_key": "done"}}),
    );

    // A read-only conversation cannot write, by any spelling.
    let read_only = Scope::read_only();
    let env = block_on(gw.exec_in(
        ExecCall::new(
            "create_onto_task",
            json!({"project_id": "p1", "title": "x"}),
        ),
        &read_only,
    ));
    show("exec in a read-only scope", &env.error);
    Ok(())
}
