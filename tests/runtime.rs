//! The runtime gateway over the example catalog: every error code from a realistic bad call,
//! scope leaks, arbitrary input, aliases, dry runs, idempotency, search, help and selection.

mod common;

use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolreg::help::HelpRequest;
use toolreg::registry::Kind;
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::{block_on, codes, Envelope, ExecCall, Gateway, HandlerError, Scope};

fn gateway() -> Gateway {
    Gateway::from_dir(common::repo().join("generated")).expect("the committed registry loads")
}

fn exec(gw: &Gateway, call: Value) -> Envelope {
    block_on(gw.exec(ExecCall::from_value(&call)))
}

fn exec_in(gw: &Gateway, call: Value, scope: &Scope) -> Envelope {
    block_on(gw.exec_in(ExecCall::from_value(&call), scope))
}

fn err(env: &Envelope) -> &toolreg::runtime::ErrorBody {
    env.error
        .as_ref()
        .unwrap_or_else(|| panic!("expected an error: {}", env.to_json()))
}

/// A gateway whose task handlers keep tasks in a map, counting calls.
fn with_tasks() -> (Gateway, Arc<AtomicUsize>) {
    let mut gw = gateway();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    gw.handle_sync("onto.task.create", move |args| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"id": format!("task-{n}"), "title": args["title"]}))
    })
    .unwrap();
    gw.handle_sync("onto.task.get", |args| {
        Err(
            HandlerError::new("NOT_FOUND", format!("no task {}", args["task_id"]))
                .with_details(json!({"task_id": args["task_id"]})),
        )
    })
    .unwrap();
    gw.handle_sync("onto.task.delete", |_| {
        Err(HandlerError::internal("database unavailable"))
    })
    .unwrap();
    (gw, calls)
}

#[test]
fn ok_envelope_has_the_seed_shape() {
    let (gw, calls) = with_tasks();
    let env = exec(
        &gw,
        json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "Email investors"}}),
    );
    assert!(env.ok, "{}", env.to_json());
    assert_eq!(env.result.as_ref().unwrap()["title"], "Email investors");
    let v = env.to_json();
    assert!(v["meta"]["trace_id"].as_str().unwrap().starts_with("tr_"));
    assert!(v["meta"]["latency_ms"].is_u64() && v["meta"]["warnings"].is_array());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn not_found_ranks_candidates_and_points_at_the_nearest_directory() {
    let gw = gateway();
    let env = exec(&gw, json!({"op": "onto.tasks.lst", "args": {}}));
    let e = err(&env);
    assert_eq!(e.code, codes::NOT_FOUND);
    assert_eq!(e.details["did_you_mean"][0], "onto.task.list");
    assert_eq!(e.help_path, "onto.task");
    let env = exec(&gw, json!({"op": "schedule_meeting", "args": {}}));
    let e = err(&env);
    assert_eq!(e.code, codes::NOT_FOUND);
    assert_ne!(
        e.help_path, "root",
        "a ranked candidate gives a directory, never the bare root"
    );
    assert!(
        e.details["did_you_mean"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "calendar.event.create"),
        "{}",
        e.details
    );
}

/// An op outside the scope's list is one the caller cannot see: it answers exactly as an
/// invented name with the same words (issue 35, item 4: existence is information), by any
/// spelling; a write the scope shows but does not allow is FORBIDDEN.
#[test]
fn hidden_outside_the_scope_and_forbidden_for_writes_without_permission() {
    let gw = gateway();
    let global = Scope::profile(gw.registry(), "global").unwrap();
    let answer = |op: &str| {
        let env = exec_in(&gw, json!({"op": op, "args": {"task_id": "t1"}}), &global);
        let mut v = serde_json::to_value(&env).unwrap();
        v["meta"]["trace_id"] = json!("-");
        v["meta"]["latency_ms"] = json!(0);
        v.to_string().replace(op, "<OP>")
    };
    for (hidden, invented) in [
        ("onto.task.update", "onto.update.task"),
        ("update_onto_task", "update_task_onto"),
        ("onto.tasks.update", "onto.update.tasks"),
    ] {
        let (h, i) = (answer(hidden), answer(invented));
        assert!(h.contains("NOT_FOUND"), "{h}");
        assert_eq!(h, i, "{hidden} answers unlike {invented}");
        assert!(!h.contains("onto.task.update"), "{h}");
    }
    let env = exec_in(
        &gw,
        json!({"op": "onto.project.create", "args": {"project": {"name": "X"}}}),
        &global.clone().writes(false),
    );
    assert_eq!(err(&env).code, codes::FORBIDDEN);
    assert!(err(&env).message.contains("does not allow writes"));
}

#[test]
fn empty_args_give_the_minimal_call() {
    let gw = gateway();
    for args in [json!({}), Value::Null] {
        let env = exec(&gw, json!({"op": "onto.task.update", "args": args}));
        let e = err(&env);
        assert_eq!(e.code, codes::EMPTY_ARGS);
        assert_eq!(
            e.details["minimal_call"],
            json!({"op": "onto.task.update", "args": {"task_id": "<task_id>"}})
        );
        assert_eq!(e.help_path, "onto.task.update");
    }
    // No arguments at all is fine for an op that needs none.
    let env = exec(&gw, json!({"op": "onto.project.list"}));
    assert_eq!(env.code(), Some(codes::NOT_IMPLEMENTED));
}

#[test]
fn malformed_args_keep_the_raw_text_and_the_position() {
    let gw = gateway();
    let raw = "{\"task_id\": \"t1\",\n \"state_key\": done}";
    let env = exec(&gw, json!({"op": "onto.task.update", "args": raw}));
    let e = err(&env);
    assert_eq!(e.code, codes::MALFORMED_ARGS);
    assert_eq!(e.details["raw_args"], raw);
    assert_eq!(e.details["parse_error"]["line"], 2);
    assert!(e.details["parse_error"]["column"].as_u64().unwrap() > 0);
    // Valid JSON text is accepted, with a warning.
    let env = exec(
        &gw,
        json!({"op": "onto.task.update", "args": "{\"task_id\": \"t1\"}", "dry_run": true}),
    );
    assert!(env.ok && env.meta.warnings.iter().any(|w| w.contains("JSON string")));
}

#[test]
fn validation_reports_every_field_at_once() {
    let gw = gateway();
    let env = exec(
        &gw,
        json!({"op": "onto.task.update", "args": {"taskId": "t1", "state_key": "finished", "priority": "1"}}),
    );
    let e = err(&env);
    assert_eq!(e.code, codes::VALIDATION_ERROR);
    let fields = e.details["field_errors"].as_array().unwrap();
    let by = |f: &str| {
        fields
            .iter()
            .find(|x| x["field"] == f)
            .unwrap_or_else(|| panic!("{f}: {fields:?}"))
    };
    assert_eq!(by("taskId")["hint"], "did you mean `task_id`?");
    assert_eq!(
        by("task_id")["message"],
        "missing required argument `task_id`"
    );
    assert_eq!(
        by("state_key")["expected"]["enum"],
        json!(["todo", "in_progress", "blocked", "done"])
    );
    assert_eq!(by("state_key")["pointer"], "/state_key");
    assert_eq!(by("priority")["hint"], "send the number 1 without quotes");
    assert_eq!(e.help_path, "onto.task.update");
}

#[test]
fn idempotency_replays_and_conflicts() {
    let (gw, calls) = with_tasks();
    let call = json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "A"}, "idempotency_key": "k1"});
    let first = exec(&gw, call.clone());
    let again = exec(&gw, call);
    assert!(first.ok && again.ok);
    assert_eq!(first.result, again.result);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the repeat did not run");
    assert!(again.meta.warnings.iter().any(|w| w.contains("replayed")));
    let other = exec(
        &gw,
        json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "B"}, "idempotency_key": "k1"}),
    );
    assert_eq!(err(&other).code, codes::CONFLICT);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Issue 25, item 2: keys are bounded, a result too large to keep is not kept (and the envelope
/// says a repeat runs again), and a store is handed a digest of the arguments, never them.
#[test]
fn idempotency_keeps_bounded_keys_results_and_only_a_digest() {
    use toolreg::runtime::idempotency::{
        IdempotencyStore, MemoryStore, Seen, StoreFuture, MAX_KEY_LEN, MAX_STORED_RESULT,
    };
    let (gw, calls) = with_tasks();
    let long_key = "k".repeat(MAX_KEY_LEN + 1);
    let env = exec(
        &gw,
        json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "A"}, "idempotency_key": long_key}),
    );
    assert_eq!(err(&env).code, codes::VALIDATION_ERROR);
    assert!(
        err(&env).message.contains("at most 200"),
        "{}",
        err(&env).message
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "never run");

    // A handler whose result is over what a key keeps.
    let mut gw = gateway();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    gw.handle_sync("onto.task.create", move |_| {
        r.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"log": "x".repeat(MAX_STORED_RESULT + 10)}))
    })
    .unwrap();
    let call = json!({"op": "onto.task.create", "args": {"project_id": "p1", "title": "A"}, "idempotency_key": "big"});
    let first = exec(&gw, call.clone());
    assert!(first.ok);
    assert!(
        first
            .meta
            .warnings
            .iter()
            .any(|w| w.contains("was not stored") && w.contains("runs the op again")),
        "{:?}",
        first.meta.warnings
    );
    let again = exec(&gw, call);
    assert!(again.ok);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the repeat ran: nothing was kept"
    );

    /// Records what the gateway hands the store.
    struct Recording(MemoryStore, std::sync::Mutex<Vec<Value>>);
    impl IdempotencyStore for Recording {
        fn begin<'a>(
            &'a self,
            key: &'a str,
            op: &'a str,
            args: &'a Value,
        ) -> StoreFuture<'a, Seen> {
            self.1.lock().unwrap().push(args.clone());
            self.0.begin(key, op, args)
        }
        fn finish<'a>(&'a self, key: &'a str, result: &'a Value) -> StoreFuture<'a, ()> {
            self.0.finish(key, result)
        }
        fn abandon<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
            self.0.abandon(key)
        }
    }
    let store = Arc::new(Recording(
        MemoryStore::new(16, std::time::Duration::from_secs(60)),
        Default::default(),
    ));
    let dir = common::repo().join("generated");
    let reg = toolreg::Registry::from_path(dir.join("registry.json")).unwrap();
    let help =
        toolreg::help::HelpDoc::from_slice(&std::fs::read(dir.join("help.json")).unwrap()).unwrap();
    let mut gw = Gateway::with_options(
        reg,
        help,
        toolreg::runtime::Options {
            idempotency_store: Some(store.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    gw.handle_sync("onto.task.create", |_| Ok(json!({"id": "t"})))
        .unwrap();
    let secret = "the project's secret plan";
    for args in [
        json!({"project_id": "p1", "title": secret}),
        json!({"title": secret, "project_id": "p1"}),
    ] {
        let env = exec(
            &gw,
            json!({"op": "onto.task.create", "args": args, "idempotency_key": "same"}),
        );
        assert!(env.ok, "{}", env.to_json());
    }
    let seen = store.1.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], seen[1], "key order does not change the digest");
    let digest = seen[0].as_str().unwrap();
    assert!(digest.starts_with("b3:") && digest.len() == 67, "{digest}");
    assert!(!digest.contains(secret));
}

#[test]
fn handler_failures_keep_their_code_or_become_internal() {
    let (gw, _) = with_tasks();
    let env = exec(
        &gw,
        json!({"op": "onto.task.get", "args": {"task_id": "t9"}}),
    );
    assert_eq!(err(&env).code, "NOT_FOUND");
    assert_eq!(err(&env).details["task_id"], "t9");
    assert_eq!(err(&env).help_path, "onto.task.get");
    let env = exec(
        &gw,
        json!({"op": "onto.task.delete", "args": {"task_id": "t9"}}),
    );
    assert_eq!(err(&env).code, codes::INTERNAL);
    assert_eq!(err(&env).help_path, "onto.task.delete");
    let env = exec(&gw, json!({"op": "onto.goal.list", "args": {}}));
    assert_eq!(err(&env).code, codes::NOT_IMPLEMENTED);
}

#[test]
fn every_spelling_resolves_and_says_so() {
    let gw = gateway();
    for (spelling, warning) in [
        ("list_onto_tasks", "tool name"),
        ("tasks.list", "alias"),
        ("  <tool_call>onto.task.list</tool_call> ", "read as"),
        ("`LIST_ONTO_TASKS`", "read as"),
    ] {
        let env = exec(&gw, json!({"op": spelling, "args": {}, "dry_run": true}));
        assert!(env.ok, "{spelling}: {}", env.to_json());
        assert_eq!(env.op, "onto.task.list");
        assert!(
            env.meta.warnings.iter().any(|w| w.contains(warning)),
            "{spelling}: {:?}",
            env.meta.warnings
        );
    }
}

#[test]
fn argument_aliases_are_applied_and_reported() {
    let (gw, _) = with_tasks();
    let env = exec(
        &gw,
        json!({"op": "onto.task.create", "args": {"project_id": "p1", "task": {"name": "Call Sam"}}}),
    );
    assert!(env.ok, "{}", env.to_json());
    assert_eq!(env.result.as_ref().unwrap()["title"], "Call Sam");
    assert!(
        env.meta
            .warnings
            .iter()
            .any(|w| w == "renamed argument `task.name` to `title`"),
        "{:?}",
        env.meta.warnings
    );
    let env = exec(
        &gw,
        json!({"op": "onto.task.create", "args": {"project_id": "p1", "task_title": "X"}}),
    );
    assert!(
        env.ok
            && env
                .meta
                .warnings
                .iter()
                .any(|w| w.contains("`task_title` to `title`"))
    );
    let env = exec(
        &gw,
        json!({"op": "onto.edge.link", "dry_run": true, "args": {"from": "t1", "src_kind": "task", "to": "g1", "dst_kind": "goal", "relationship": "supports"}}),
    );
    assert!(env.ok, "{}", env.to_json());
    assert_eq!(
        env.result.unwrap()["would_run"]["args"],
        json!({"src_kind": "task", "dst_kind": "goal", "src_id": "t1", "dst_id": "g1", "rel": "supports"})
    );
}

#[test]
fn dry_runs_by_request_and_by_default() {
    let gw = gateway();
    let env = exec(
        &gw,
        json!({"op": "onto.project.graph.reorganize", "args": {"project_id": "p1", "operations": [{"op": "reparent", "entity_id": "t1"}]}}),
    );
    assert!(env.ok && env.meta.dry_run, "{}", env.to_json());
    assert!(env
        .meta
        .warnings
        .iter()
        .any(|w| w.contains("dry run by default")));
    let env = exec(
        &gw,
        json!({"op": "onto.project.graph.reorganize", "dry_run": false, "args": {"project_id": "p1", "operations": [{"op": "reparent", "entity_id": "t1"}]}}),
    );
    assert_eq!(
        env.code(),
        Some(codes::NOT_IMPLEMENTED),
        "dry_run: false runs it"
    );
}

/// Under `read_only`, no write op runs by any spelling: op, tool name, alias, sanitized markup.
#[test]
fn no_write_leaks_out_of_a_read_only_scope() {
    let mut gw = gateway();
    let ran = Arc::new(AtomicUsize::new(0));
    let writes: Vec<_> = gw
        .registry()
        .ops
        .values()
        .filter(|r| r.kind == Kind::Write)
        .cloned()
        .collect();
    assert!(writes.len() > 20);
    for r in &writes {
        let ran = Arc::clone(&ran);
        gw.handle_sync(&r.op, move |_| {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(json!({}))
        })
        .unwrap();
    }
    let scope = Scope::read_only();
    let mut tried = 0;
    for r in &writes {
        let args = r
            .examples
            .first()
            .map(|e| e.args.clone())
            .unwrap_or(json!({}));
        let mut spellings = vec![
            r.op.clone(),
            r.tool_name.clone(),
            format!("<tool_call>{}</tool_call>", r.op),
            format!("\"{}\"", r.tool_name),
            r.op.to_uppercase(),
        ];
        spellings.extend(r.aliases.iter().cloned());
        for s in spellings {
            for dry_run in [None, Some(false), Some(true)] {
                let env = block_on(gw.exec_in(
                    ExecCall {
                        op: s.clone(),
                        args: Some(args.clone()),
                        idempotency_key: Some("k".into()),
                        dry_run,
                    },
                    &scope,
                ));
                assert_eq!(env.code(), Some(codes::FORBIDDEN), "{s}: {}", env.to_json());
                tried += 1;
            }
        }
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(tried > 200);
    // The same scope reads fine.
    assert!(
        exec_in(
            &gw,
            json!({"op": "onto.task.list", "args": {}, "dry_run": true}),
            &scope
        )
        .ok
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,20}".prop_map(Value::String),
        prop::sample::select(vec![
            "task_id",
            "title",
            "<task_id>",
            "done",
            "",
            "onto.task.list"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "task_id",
                    "title",
                    "state_key",
                    "priority",
                    "project_id",
                    "x",
                    "task",
                    "name"
                ])
                .prop_map(str::to_owned),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Arbitrary JSON as a whole call, as arguments, and arbitrary strings never panic exec.
    #[test]
    fn exec_never_panics(call in arb_json(), args in arb_json(), op in prop::sample::select(vec!["onto.task.update", "onto.task.create", "onto.edge.link", "util.web.search", "calendar.event.create", "nope"]), raw in ".{0,40}") {
        static GW: std::sync::OnceLock<Gateway> = std::sync::OnceLock::new();
        let gw = GW.get_or_init(gateway);
        let _ = block_on(gw.exec(ExecCall::from_value(&call)));
        let env = block_on(gw.exec(ExecCall { op: op.into(), args: Some(args), idempotency_key: None, dry_run: Some(true) }));
        prop_assert!(env.ok || env.error.as_ref().is_some_and(|e| !e.help_path.is_empty()));
        let env = block_on(gw.exec(ExecCall { op: raw.clone(), args: Some(Value::String(raw)), idempotency_key: Some(String::new()), dry_run: None }));
        prop_assert!(!env.meta.trace_id.is_empty());
    }
}

#[test]
fn search_exact_names_first_never_empty_and_paged() {
    let gw = gateway();
    let res = gw.search(&SearchRequest::query("update_onto_task"));
    assert_eq!(res.results[0].op, "onto.task.update");
    assert_eq!(res.results[0].confidence, 1.0);
    assert!(res.results[0]
        .usage
        .as_deref()
        .unwrap()
        .starts_with("onto.task.update task_id=<string>"));
    let res = gw.search(&SearchRequest::query("reschedule meeting"));
    assert!(!res.results.is_empty(), "synonyms make this findable");
    // Nothing matches: the nearest ops by spelling, marked as such, and the directory.
    let res = gw.search(&SearchRequest::query("zzqx flurb"));
    assert!(res.nearest && !res.results.is_empty());
    assert!(res.results.iter().all(|h| h.confidence < 0.3));
    assert!(
        res.directory.as_ref().unwrap().as_array().unwrap().len() == 3 && res.suggestion.is_some()
    );
    let mut req = SearchRequest::query("task");
    req.limit = Some(3);
    let page1 = gw.search(&req);
    req.cursor = page1.next_cursor.clone();
    let page2 = gw.search(&req);
    assert_eq!(page1.results.len(), 3);
    assert!(!page2.results.is_empty());
    assert!(page2
        .results
        .iter()
        .all(|h| !page1.results.iter().any(|p| p.op == h.op)));
    assert!(
        page2.results.iter().all(|h| h.usage.is_none()),
        "argument summaries only for the top three"
    );
    let mut req = SearchRequest::query("create");
    req.kind = Some(Kind::Read);
    req.path = Some("onto.task".into());
    assert!(gw
        .search(&req)
        .results
        .iter()
        .all(|h| h.kind == Kind::Read && h.op.starts_with("onto.task.")));
}

/// Calls shaped exactly like the gateway tools' schemas deserialize into the runtime's requests:
/// no parameter the surface advertises is silently ignored.
#[test]
fn gateway_tool_parameters_are_the_runtime_parameters() {
    let gw = gateway();
    for tool in toolreg::surfaces::gateway(gw.registry()) {
        let props: Vec<String> = tool.parameters["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let known: &[&str] = match tool.name.as_str() {
            "tool_help" => &["path", "format", "include_examples", "include_schemas"],
            "tool_exec" => &["op", "args", "idempotency_key", "dry_run"],
            "tool_search" => &["query", "group", "kind", "limit"],
            other => panic!("unexpected gateway tool {other}"),
        };
        assert_eq!(props, known, "{}", tool.name);
    }
    let req: SearchRequest = serde_json::from_value(
        json!({"query": "create", "group": "calendar", "kind": "write", "limit": 3}),
    )
    .unwrap();
    let res = gw.search(&req);
    assert!(
        !res.results.is_empty()
            && res
                .results
                .iter()
                .all(|h| h.op.starts_with("calendar.") && h.kind == Kind::Write)
    );
    let help: HelpRequest = serde_json::from_value(json!({"path": "onto.task.update", "format": "full", "include_examples": false, "include_schemas": true})).unwrap();
    let page = gw.help(&help);
    assert!(
        page.get("examples").is_none()
            && page.get("schema").is_some()
            && page.get("description").is_some()
    );
}

#[test]
fn write_verbs_break_ties_toward_writes() {
    let gw = gateway();
    // "add" means create: among ops scored alike, writes rank first for a write verb.
    let res = gw.search(&SearchRequest::query("add a goal"));
    assert_eq!(res.results[0].op, "onto.goal.create");
}

#[test]
fn help_forgives_misspellings_and_says_what_it_served() {
    let gw = gateway();
    for (asked, served) in [
        ("onto.tasks.list", "onto.task.list"),
        ("task.list", "onto.task.list"),
        ("list_onto_tasks", "onto.task.list"),
        ("onto_task_update", "onto.task.update"),
    ] {
        let page = gw.help(&HelpRequest::path(asked));
        assert_eq!(page["path"], served, "{asked}: {page}");
        assert_eq!(page["resolved_from"], asked);
    }
    let page = gw.help(&HelpRequest::path("nothing.like.this"));
    assert_eq!(page["error"]["code"], "UNKNOWN_PATH");
}

#[test]
fn discovery_calls_and_their_error_codes() {
    use toolreg::runtime::discovery::{CategorySearch, ListRequest, NodePath};
    let gw = gateway();
    let all = Scope::all();
    let root = gw.list(&ListRequest::default(), &all);
    assert_eq!(root["nodes"].as_array().unwrap().len(), 3);
    assert!(root["next_action"].is_string());
    let task = gw.list(
        &ListRequest {
            path: NodePath::Segments(vec!["onto".into(), "task".into()]),
            ..Default::default()
        },
        &all,
    );
    assert!(task["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["tool_id"] == "onto.task.list"));
    // Tags name tools across the tree (the example overlay tags three ops `graph`): from the
    // root they list every tagged tool and only the groups that hold one, and a query ranks
    // only tagged tools.
    let tagged = |path: NodePath, query: Option<&str>| {
        gw.list(
            &ListRequest {
                path,
                tags: vec!["graph".into()],
                query: query.map(str::to_string),
                ..Default::default()
            },
            &all,
        )
    };
    let ids = |page: &serde_json::Value| -> Vec<String> {
        let mut ids: Vec<String> = page["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tool_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let graph = [
        "onto.edge.link",
        "onto.edge.unlink",
        "onto.project.graph.reorganize",
    ];
    let root = tagged(NodePath::default(), None);
    assert_eq!(ids(&root), graph, "{root}");
    let groups: Vec<&serde_json::Value> = root["nodes"].as_array().unwrap().iter().collect();
    assert_eq!(groups.len(), 1, "{root}");
    assert_eq!(groups[0]["name"], "onto");
    assert_eq!(groups[0]["tools"], 3);
    // A node shows its tools' tags (seed 001's node `tags`), so a model sees what to narrow by.
    assert_eq!(groups[0]["tags"], serde_json::json!(["bulk", "graph"]));
    let untagged = gw.list(&ListRequest::default(), &all);
    let tags_of = |name: &str| {
        untagged["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .map(|n| n["tags"].clone())
    };
    assert_eq!(tags_of("onto"), Some(serde_json::json!(["bulk", "graph"])));
    assert_eq!(tags_of("calendar"), Some(serde_json::json!([])));
    let asked = tagged(NodePath::Dotted("onto".into()), Some("link two entities"));
    assert!(
        ids(&asked).iter().all(|id| graph.contains(&id.as_str())),
        "{asked}"
    );
    assert!(!ids(&asked).is_empty(), "{asked}");
    let bad = gw.list(
        &ListRequest {
            path: NodePath::Dotted("onto.tsk".into()),
            ..Default::default()
        },
        &all,
    );
    assert_eq!(bad["error"]["code"], "UNKNOWN_PATH");
    assert_eq!(bad["error"]["hints"][0], "onto.task");
    assert!(bad["error"]["next_action"].is_string());
    let nodes = gw.search_nodes("calendar meetings", None, &all);
    assert_eq!(nodes["results"][0]["path"][0], "calendar");
    let miss = gw.search_tool_by_category(
        &CategorySearch {
            query: "visit a url".into(),
            category_path: NodePath::Dotted("onto.task".into()),
            ..Default::default()
        },
        &all,
    );
    assert_eq!(miss["error"]["code"], "NO_MATCH_IN_CATEGORY");
    assert!(
        miss["error"]["hints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "util.web"),
        "{miss}"
    );
    let hit = gw.search_tool_by_category(
        &CategorySearch {
            query: "mark done".into(),
            category_path: NodePath::Dotted("onto.task".into()),
            ..Default::default()
        },
        &all,
    );
    assert_eq!(hit["results"][0]["tool_id"], "onto.task.update");
    let expanded = gw.expand_tool("onto.task.update", &all);
    assert_eq!(
        expanded["args_schema"],
        gw.registry().ops["onto.task.update"].parameters_schema
    );
    assert_eq!(
        gw.expand_tool("onto.task.updat", &all)["error"]["code"],
        "TOOL_NOT_FOUND"
    );
    assert_eq!(
        gw.expand_tool("onto.task.update", &Scope::read_only())["error"]["code"],
        "NOT_AUTHORIZED"
    );
}

#[test]
fn selection_by_triggers_context_and_search_with_telemetry() {
    use toolreg::runtime::select::{Reason, SelectContext, TurnTelemetry};
    let gw = gateway();
    let all = Scope::all();
    let sel = gw.select(
        "remind me to send the spec doc",
        &SelectContext::default(),
        &all,
    );
    let names: Vec<&str> = sel.clusters.iter().map(|c| c.cluster.as_str()).collect();
    assert_eq!(names, ["documents", "tasks"]);
    assert!(sel.clusters[1].reasons.contains(&Reason::Trigger {
        phrase: "remind me".into()
    }));
    assert!(sel.ops.contains(&"onto.task.create".to_string()) && sel.searched.is_empty());
    let ctx = SelectContext {
        context: Some("project".into()),
        ..Default::default()
    };
    let sel = gw.select("what should I focus on", &ctx, &all);
    assert!(sel
        .clusters
        .iter()
        .all(|c| matches!(c.reasons[0], Reason::Context { .. })));
    let sel = gw.select(
        "open this URL and read the page",
        &SelectContext::default(),
        &all,
    );
    assert!(sel.clusters.is_empty());
    assert_eq!(sel.searched[0], "util.web.visit");
    let t = TurnTelemetry::record(
        "turn-1",
        &gw.registry().registry_version,
        None,
        &sel,
        &["util.web.visit".into(), "onto.task.list".into()],
    );
    assert_eq!(t.missed, ["onto.task.list"]);
    assert_eq!(t.unused, sel.ops.len() - 1);
    let read_only = gw.select(
        "delete the task",
        &SelectContext::default(),
        &Scope::read_only(),
    );
    assert!(read_only
        .ops
        .iter()
        .all(|o| gw.registry().ops[o].kind == Kind::Read));
}

#[test]
fn eval_meets_the_recall_targets_on_the_seed_queries() {
    let gw = gateway();
    let queries =
        std::fs::read_to_string(common::shared().join("eval/seed-catalog-queries.jsonl")).unwrap();
    let report = toolreg::runtime::eval::run(&gw, &queries, &[1, 5, 10]).unwrap();
    assert!(
        report.metric("recall@1") >= 0.85,
        "{}",
        report.render_text()
    );
    assert!(
        report.metric("recall@5") >= 0.97,
        "{}",
        report.render_text()
    );
    assert_eq!(report.metrics["queries"], 61);
}

#[test]
fn typed_handlers_and_registration_errors() {
    #[derive(serde::Deserialize)]
    struct UpdateArgs {
        task_id: String,
        state_key: Option<String>,
    }
    let mut gw = gateway();
    gw.handle_typed("update_onto_task", |a: UpdateArgs| {
        Ok(json!({"id": a.task_id, "state": a.state_key}))
    })
    .unwrap();
    let env = exec(
        &gw,
        json!({"op": "onto.task.update", "args": {"task_id": "t1", "state_key": "done"}}),
    );
    assert_eq!(env.result, Some(json!({"id": "t1", "state": "done"})));
    assert!(gw.handle_sync("onto.nothing", |_| Ok(json!(null))).is_err());
}

/// Builds `{"a": {"a": ... }}` `depth` levels deep without recursion.
fn nested(depth: usize) -> Value {
    let mut v = json!("leaf");
    for _ in 0..depth {
        // Not json!: it would serialize `v` recursively.
        let mut map = serde_json::Map::new();
        map.insert("a".into(), v);
        v = Value::Object(map);
    }
    v
}

/// Hostile calls through the library answer a bounded envelope with a documented code: a value
/// nested 20,000 deep (used to overflow the stack), 200,000 unknown keys under a closed schema
/// and a 10 MB key (used to echo 30-56 MB), and 10 MB of malformed text.
#[test]
fn hostile_calls_answer_bounded_envelopes() {
    let gw = gateway();
    let small = |env: &Envelope| {
        let n = env.to_json().to_string().len();
        assert!(n < 32_000, "the envelope is {n} bytes");
    };
    // Nested 20,000 deep: handed over directly (exec owns and drops it), and through from_value.
    let mut args = json!({"task_id": "t1"});
    args["x"] = nested(20_000);
    let mut call_value = json!({"op": "onto.task.update"});
    call_value["args"] = args;
    let env = block_on(gw.exec(ExecCall::from_value(&call_value)));
    assert_eq!(err(&env).code, codes::MALFORMED_ARGS, "{}", env.to_json());
    assert!(
        err(&env).message.contains("nest more than 128"),
        "{}",
        err(&env).message
    );
    small(&env);
    let direct = ExecCall {
        op: "onto.task.update".into(),
        args: call_value.get_mut("args").map(Value::take),
        idempotency_key: None,
        dry_run: Some(true),
    };
    let env = block_on(gw.exec(direct));
    assert_eq!(err(&env).code, codes::MALFORMED_ARGS, "{}", env.to_json());
    small(&env);

    // 200,000 unknown keys, and one 10 MB key, under a closed schema.
    let mut many = serde_json::Map::new();
    many.insert("task_id".into(), json!("t1"));
    for i in 0..200_000 {
        many.insert(format!("unknown_{i}"), json!(i));
    }
    let env = exec(
        &gw,
        json!({"op": "onto.task.update", "args": many, "dry_run": true}),
    );
    assert_eq!(err(&env).code, codes::VALIDATION_ERROR);
    assert_eq!(
        err(&env).details["field_errors"].as_array().unwrap().len(),
        toolreg::runtime::validate::MAX_FIELD_ERRORS
    );
    small(&env);
    let huge_key = "k".repeat(10_000_000);
    let env = exec(
        &gw,
        json!({"op": "onto.task.update", "args": {"task_id": "t1", huge_key: 1}, "dry_run": true}),
    );
    assert_eq!(err(&env).code, codes::VALIDATION_ERROR);
    small(&env);
    let huge_text = format!("{{\"task_id\": {}", "9".repeat(10_000_000));
    let env = exec(&gw, json!({"op": "onto.task.update", "args": huge_text}));
    assert_eq!(err(&env).code, codes::MALFORMED_ARGS);
    small(&env);
}

/// One hostile request must not take the server down (issue 21): a 100 KB one-word search, a
/// 100 KB op, a 4 MB help path. Each answers at once with a small answer; the caps live in the
/// runtime, so the CLI, stdio, HTTP and library callers all get them. (Figures for the same
/// requests are in the runtime bench; the time bound here is loose on purpose.)
#[test]
fn hostile_sizes_are_answered_small_and_fast() {
    let gw = gateway();
    let word: String = "abcdefghij".repeat(10_000);
    let started = std::time::Instant::now();
    let found = gw.search(&SearchRequest::query(word.clone()));
    let answer = serde_json::to_string(&found).unwrap();
    assert!(
        answer.len() < 20_000,
        "search answered {} bytes",
        answer.len()
    );
    assert_eq!(
        found.query.chars().count(),
        toolreg::runtime::search::MAX_QUERY_CHARS
    );
    let words = "schedule meeting tomorrow ".repeat(4_000);
    let found = gw.search(&SearchRequest::query(words));
    assert!(
        !found.results.is_empty(),
        "the first 1,000 characters still search"
    );

    let env = exec(&gw, json!({"op": word, "args": {}}));
    assert_eq!(err(&env).code, codes::NOT_FOUND);
    assert!(env.to_json().to_string().len() < 20_000);

    let path = "onto.".repeat(800_000);
    let page = gw.help(&HelpRequest {
        path,
        ..Default::default()
    });
    let text = page.to_string();
    assert!(
        text.contains("UNKNOWN_PATH") && text.len() < 20_000,
        "{}",
        text.len()
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// `match_floors` says which floors `match` reads and where they come from (`eval` prints it):
/// the defaults, or the registry's own.
#[test]
fn match_floors_say_where_they_come_from() {
    use toolreg::runtime::search::LEXICAL_FLOORS;
    let defaults = gateway().match_floors();
    assert_eq!(defaults.signal, "lexical");
    assert_eq!(defaults.floors, LEXICAL_FLOORS);
    assert_eq!(defaults.source, "the defaults");
    let mut reg = gateway().registry().clone();
    let own = toolreg::model::registry::MatchFloors {
        none_below: 0.1,
        strong_from: 0.6,
    };
    reg.search.match_lexical = Some(own);
    let help = toolreg::emit::help::build(&reg);
    let floors = Gateway::new(reg, help).unwrap().match_floors();
    assert_eq!(floors.floors, own);
    assert_eq!(floors.source, "the registry's [search] match_lexical");
}
