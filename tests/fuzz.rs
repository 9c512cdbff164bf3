//! The fuzz harness (issue 12), on stable Rust: proptest generators for whole tool definitions
//! with arbitrary JSON Schema (the hostile shapes of issue 12 included), for overlays, and for
//! exec calls. Properties: no panic, no hang past a per-case limit, every diagnostic located,
//! artifacts written only inside the output folder, and exec always answers an envelope with a
//! documented code.
//!
//! CI runs a short budget. A long run:
//! `TOOLREG_FUZZ_CASES=20000 cargo test --release --test fuzz -- --nocapture`.
//! A failing input is shrunk and saved by proptest to `tests/fuzz.proptest-regressions`
//! (committed; replayed first on every run), and belongs in `tests/bad/` as a named case too.

mod common;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::sync::mpsc;
use std::time::Duration;
use toolreg::emit::Emitter;
use toolreg::runtime::{block_on, codes, ExecCall, Gateway};

fn cases(default: u32) -> u32 {
    std::env::var("TOOLREG_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `f` on its own thread and fails if it panics or takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .unwrap();
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no answer within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("panicked (see above)"),
    }
}

/// Text a hostile catalog would use: control characters, bidi overrides, path pieces, quotes,
/// very long runs, non-ASCII.
fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z_]{1,16}",
        2 => "[a-zA-Z0-9 ._/\\\\-]{0,24}",
        1 => Just("../../../../package".to_string()),
        1 => Just("zz_\u{1b}[31mred".to_string()),
        1 => Just("a\nerror[TR999]: fake".to_string()),
        1 => Just("nul\u{0}byte".to_string()),
        1 => Just("\u{202e}evil".to_string()),
        1 => Just("x".repeat(300)),
        1 => ".{0,12}",
    ]
}

/// Any JSON value, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        nasty_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(nasty_text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Schema keywords with hostile values, on top of a type.
fn schema() -> impl Strategy<Value = Value> {
    let big = prop_oneof![
        Just(json!(0)),
        Just(json!(3)),
        Just(json!(1_000_000_000_000u64)),
        Just(json!(-1)),
        Just(json!("x")),
        Just(json!(1.5)),
    ];
    let leaf = (
        prop::sample::select(vec![
            "string", "integer", "number", "boolean", "null", "array", "object", "weird",
        ]),
        prop::option::of(big.clone()),
        prop::option::of(big),
        prop::option::of(prop::collection::vec(any_json(), 0..3)),
        prop::option::of(nasty_text()),
    )
        .prop_map(|(t, min_len, min_items, enumeration, desc)| {
            let mut s = Map::new();
            s.insert("type".into(), json!(t));
            if let Some(v) = min_len {
                s.insert("minLength".into(), v);
            }
            if let Some(v) = min_items {
                s.insert("minItems".into(), v.clone());
                s.insert("minProperties".into(), v);
            }
            if let Some(e) = enumeration {
                s.insert("enum".into(), Value::Array(e));
            }
            if let Some(d) = desc {
                s.insert("description".into(), json!(d));
            }
            Value::Object(s)
        });
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            // An object with properties, a required list of any shape, open or closed.
            (
                prop::collection::btree_map(nasty_text(), inner.clone(), 0..5),
                any_json(),
                any::<bool>()
            )
                .prop_map(|(props, required, closed)| {
                    let names: Vec<Value> = props.keys().map(|k| json!(k)).collect();
                    let required = match required {
                        Value::Bool(true) => Value::Array(names),
                        other => other,
                    };
                    json!({"type": "object", "properties": props, "required": required, "additionalProperties": !closed})
                }),
            inner.clone().prop_map(|items| json!({"type": "array", "items": items})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"anyOf": v})),
            (nasty_text(), inner.clone()).prop_map(|(name, def)| {
                json!({"type": "object", "properties": {"x": {"$ref": format!("#/$defs/{name}")}}, "$defs": {name: def}})
            }),
            any_json(),
        ]
    })
}

/// Mostly well-formed schemas with hostile corners: a valid catalog must be the common case,
/// or every case stops at the first error and the emitters are never fuzzed.
fn sane_schema() -> impl Strategy<Value = Value> {
    let leaf = (
        prop::sample::select(vec!["string", "integer", "number", "boolean", "array"]),
        prop::option::weighted(0.15, prop::sample::select(vec![0u64, 5, 1_000_000_000_000])),
        prop::option::weighted(0.2, nasty_text()),
        prop::option::weighted(0.2, prop::collection::vec("[a-z]{1,6}", 1..4)),
    )
        .prop_map(|(t, big, desc, enumeration)| {
            let mut s = Map::new();
            s.insert("type".into(), json!(t));
            if t == "array" {
                s.insert("items".into(), json!({"type": "string"}));
            }
            if let Some(n) = big {
                s.insert(
                    if t == "array" {
                        "minItems"
                    } else {
                        "minLength"
                    }
                    .into(),
                    json!(n),
                );
            }
            if let (Some(e), "string") = (enumeration, t) {
                s.insert("enum".into(), json!(e));
            }
            if let Some(d) = desc {
                s.insert("description".into(), json!(d));
            }
            Value::Object(s)
        });
    leaf.prop_recursive(3, 16, 4, |inner| {
        (prop::collection::btree_map("[a-z][a-z_]{0,8}", inner, 0..4), any::<bool>()).prop_map(
            |(props, closed)| {
                let required: Vec<&String> = props.keys().take(1).collect();
                json!({"type": "object", "properties": props, "required": required, "additionalProperties": !closed})
            },
        )
    })
}

/// One tool in one of the shapes toolreg reads, with hostile names and parameters.
fn tool() -> impl Strategy<Value = Value> {
    let name = prop_oneof![
        8 => (prop::sample::select(vec!["list", "get", "create", "delete", "search", "sync"]), "[a-z]{2,8}", "[a-z]{2,8}")
            .prop_map(|(v, a, b)| format!("{v}_{a}_{b}")),
        1 => nasty_text(),
    ];
    let params = prop_oneof![
        12 => prop::collection::btree_map("[a-z][a-z_]{0,8}", sane_schema(), 0..5).prop_map(|props| {
            json!({"type": "object", "properties": props, "additionalProperties": false})
        }),
        2 => schema(),
        1 => Just(Value::Null),
        1 => Just(json!(true)),
        1 => any_json(),
    ];
    let desc = prop_oneof![6 => "[A-Z][a-z ]{5,40}\\.", 1 => nasty_text()];
    (name, desc, params, 0..4u8).prop_map(|(name, desc, params, shape)| match shape {
        0 => json!({"type": "function", "function": {"name": name, "description": desc, "parameters": params}}),
        1 => json!({"name": name, "description": desc, "inputSchema": params, "annotations": {"readOnlyHint": true}}),
        2 => json!({"name": name, "description": desc, "parameters": params}),
        _ => json!({"type": "function", "name": name, "parameters": params}),
    })
}

/// An overlay: absent, built from fragments with hostile values, or any text at all.
fn overlay() -> impl Strategy<Value = Option<String>> {
    let fragment = prop_oneof![
        (nasty_text(), nasty_text())
            .prop_map(|(p, op)| format!("[[rules]]\npattern = {p:?}\nop = {op:?}\n")),
        Just(
            "[[rules]]\npattern = \"{verb}_{group}_{entity}\"\nop = \"{group}.{entity}.{verb}\"\n"
                .to_string()
        ),
        (nasty_text(), nasty_text())
            .prop_map(|(name, op)| format!("[profiles.{name:?}]\nops = [{op:?}]\n")),
        (nasty_text(), nasty_text())
            .prop_map(|(tool, op)| format!("[special]\n{tool:?} = {op:?}\n")),
        (nasty_text(), nasty_text(), nasty_text()).prop_map(|(h, e, s)| format!(
            "[gateway]\nhelp = {h:?}\nexec = {e:?}\nsearch = {s:?}\n"
        )),
        nasty_text().prop_map(|e| format!("[entities]\n{e:?} = \"\"\n")),
        Just("[classify]\ninfer = false\n".to_string()),
        ".{0,40}",
    ];
    prop_oneof![
        3 => Just(None),
        1 => prop::collection::vec(fragment, 0..3).prop_map(|f| Some(f.join("\n"))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(800), ..ProptestConfig::default() })]

    /// A whole catalog (1-4 files of tools, maybe an overlay) through every emitter and the
    /// writer: no panic, no hang, every diagnostic located, nothing outside the output folder.
    #[test]
    fn catalogs_compile_or_explain(
        files in prop::collection::vec(prop::collection::vec(tool(), 0..4), 1..4),
        overlay in overlay(),
        raw in prop::option::weighted(0.05, ".{0,30}"),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let defs = root.join("defs");
        std::fs::create_dir_all(&defs).unwrap();
        for (i, tools) in files.iter().enumerate() {
            std::fs::write(defs.join(format!("t{i}.json")), serde_json::to_string_pretty(tools).unwrap()).unwrap();
        }
        if let Some(text) = raw {
            std::fs::write(defs.join("raw.json"), text).unwrap();
        }
        if let Some(text) = overlay {
            std::fs::write(defs.join("toolreg.toml"), text).unwrap();
        }
        let (defs2, out) = (defs.clone(), root.join("sub/out"));
        let out2 = out.clone();
        let unlocated = within(Duration::from_secs(60), move || {
            let g = toolreg::builder::generate(&defs2, Emitter::ALL);
            let unlocated: Vec<String> = g
                .compiled
                .diagnostics
                .iter()
                .filter(|d| d.location.is_none())
                .map(|d| format!("{}: {}", d.code, d.message))
                .collect();
            if let Some(files) = g.files {
                toolreg::output::write(&out2, &files, toolreg::output::Ownership::Folder)
                    .map_err(|d| d.message)
                    .expect("a compiled catalog writes");
            }
            unlocated
        });
        prop_assert!(unlocated.is_empty(), "diagnostics without a location: {unlocated:?}");
        // Nothing was written beside the output folder.
        let mut top: Vec<String> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        top.sort();
        prop_assert!(top == ["defs"] || top == ["defs", "sub"], "{top:?}");
        if root.join("sub").exists() {
            let sub: Vec<_> = std::fs::read_dir(root.join("sub")).unwrap().map(|e| e.unwrap().file_name()).collect();
            prop_assert_eq!(sub.len(), 1);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(3000), ..ProptestConfig::default() })]

    /// Any call (op as any text, args as any JSON or text, whole calls as any JSON) answers an
    /// envelope whose code is one of the documented ones, within a second.
    #[test]
    fn exec_always_answers_a_documented_code(
        call in any_json(),
        op in prop_oneof![
            Just("onto.task.update".to_string()),
            Just("onto.task.create".to_string()),
            Just("calendar.event.create".to_string()),
            Just("list_onto_tasks".to_string()),
            nasty_text(),
        ],
        args in prop_oneof![any_json(), nasty_text().prop_map(Value::String)],
        dry_run in prop::option::of(any::<bool>()),
    ) {
        static GW: std::sync::OnceLock<Gateway> = std::sync::OnceLock::new();
        let documented = [
            codes::NOT_FOUND, codes::FORBIDDEN, codes::EMPTY_ARGS, codes::MALFORMED_ARGS,
            codes::VALIDATION_ERROR, codes::CONFLICT, codes::NOT_IMPLEMENTED, codes::INTERNAL,
        ];
        let envs = within(Duration::from_secs(10), move || {
            let gw = GW.get_or_init(|| {
                Gateway::from_dir(common::repo().join("generated")).expect("the committed registry loads")
            });
            vec![
                block_on(gw.exec(ExecCall::from_value(&call))),
                block_on(gw.exec(ExecCall { op, args: Some(args), idempotency_key: None, dry_run })),
            ]
        });
        for env in envs {
            match &env.error {
                None => prop_assert!(env.ok),
                Some(e) => {
                    prop_assert!(!env.ok);
                    prop_assert!(documented.contains(&e.code.as_str()), "undocumented code {}", e.code);
                    prop_assert!(!e.message.is_empty() && !e.help_path.is_empty());
                }
            }
        }
    }
}
