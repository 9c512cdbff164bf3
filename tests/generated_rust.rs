//! The generated Rust compiles (this file includes it for all three catalogs), every example in
//! each registry parses into its op's typed struct through `OpArgs::parse`, and a wrong argument
//! is rejected with the field named.
//!
//! Generated code is included as is; lints are the generator's business, not the includer's.

mod common;

#[allow(clippy::all, dead_code, unused_imports)]
mod buildos {
    include!("../generated/rust/registry.rs");
}

#[allow(clippy::all, dead_code, unused_imports)]
mod universal_agent {
    include!("../examples/universal-agent/generated/rust/registry.rs");
}

#[allow(clippy::all, dead_code, unused_imports)]
mod fixture {
    include!("fixture/generated/rust/registry.rs");
}

use serde_json::json;
use toolreg::registry::Registry;

fn registry(path: &str) -> Registry {
    Registry::from_path(common::repo().join(path)).unwrap()
}

macro_rules! every_example_parses {
    ($module:ident, $path:expr) => {{
        let reg = registry($path);
        assert_eq!($module::REGISTRY_VERSION, reg.registry_version);
        assert_eq!($module::Op::ALL.len(), reg.ops.len());
        let mut parsed = 0;
        for (op, rec) in &reg.ops {
            let typed: $module::Op = op.parse().unwrap();
            assert_eq!(typed.as_str(), op);
            assert_eq!(typed.tool_name(), rec.tool_name);
            assert_eq!(rec.tool_name.parse::<$module::Op>().unwrap(), typed);
            assert_eq!(typed.is_destructive(), rec.destructive);
            for ex in &rec.examples {
                let args = $module::OpArgs::parse(op, ex.args.clone())
                    .unwrap_or_else(|e| panic!("{op}: {e}"));
                assert_eq!(args.op(), typed);
                parsed += 1;
            }
        }
        parsed
    }};
}

#[test]
fn every_registry_example_parses_into_its_typed_struct() {
    assert!(every_example_parses!(buildos, "generated/registry.json") >= 56);
    assert!(
        every_example_parses!(
            universal_agent,
            "examples/universal-agent/generated/registry.json"
        ) >= 40
    );
    assert!(every_example_parses!(fixture, "tests/fixture/generated/registry.json") >= 11);
}

#[test]
fn wrong_arguments_are_rejected_with_the_field_named() {
    let err = buildos::OpArgs::parse(
        "onto.task.update",
        json!({"task_id": "t1", "priority": "high"}),
    )
    .unwrap_err();
    match &err {
        buildos::ParseError::InvalidArgs { field, .. } => assert_eq!(field, "priority"),
        other => panic!("{other}"),
    }
    assert!(
        err.to_string()
            .starts_with("onto.task.update: argument `priority`"),
        "{err}"
    );
    let err =
        buildos::OpArgs::parse("create_onto_project", json!({"project": {"name": 5}})).unwrap_err();
    assert!(err.to_string().contains("`project.name`"), "{err}");
    assert!(matches!(
        buildos::OpArgs::parse("onto.nope", json!({})),
        Err(buildos::ParseError::UnknownOp(_))
    ));
}

#[test]
fn fixture_features_become_proper_types() {
    use fixture::*;
    // Nested objects, arrays of objects, string and integer enums, defaults.
    let args = OpArgs::parse("create_widget", json!({"name": "W", "dimensions": {"width": 1.5, "height": 2}, "parts": [{"sku": "A"}], "size": 2, "label_value": 7, "note": null})).unwrap();
    let OpArgs::FxWidgetCreate(w) = args else {
        panic!()
    };
    assert_eq!(
        serde_json::to_value(&w.parts[0]).unwrap()["qty"],
        1,
        "the default applies"
    );
    assert_eq!(serde_json::to_value(&w.dimensions).unwrap()["unit"], "mm");
    assert!(OpArgs::parse(
        "create_widget",
        json!({"name": "W", "dimensions": {"width": 1, "height": 1}, "size": 4})
    )
    .is_err());
    // Same-named $defs in two tools stay distinct types.
    let a = OpArgs::parse(
        "paint_widget",
        json!({"widget_id": "w", "color": {"r": 1, "g": 2, "b": 3}}),
    )
    .unwrap();
    let b = OpArgs::parse("paint_gadget", json!({"gadget_id": "g", "color": "teal"})).unwrap();
    assert!(matches!(
        (a, b),
        (OpArgs::FxWidgetPaint(_), OpArgs::FxGadgetPaint(_))
    ));
    // Same-titled inline enums with different values: each op gets its own type (typify alone
    // would name both `Finish` and give the second op the first op's values).
    let paint = |tool: &str, id: &str, color: serde_json::Value, finish: &str| {
        OpArgs::parse(tool, json!({id: "x", "color": color, "finish": finish}))
    };
    let rgb = json!({"r": 1, "g": 2, "b": 3});
    assert!(paint("paint_widget", "widget_id", rgb.clone(), "gloss").is_ok());
    assert!(paint("paint_widget", "widget_id", rgb, "metallic").is_err());
    assert!(paint("paint_gadget", "gadget_id", json!("teal"), "metallic").is_ok());
    assert!(paint("paint_gadget", "gadget_id", json!("teal"), "gloss").is_err());
    assert_eq!(FxWidgetPaintFinish::Gloss.to_string(), "gloss");
    assert_eq!(FxGadgetPaintFinish::Chalk.to_string(), "chalk");
    // oneOf with a const discriminator, anyOf with null, no arguments, keyword names.
    assert!(OpArgs::parse(
        "ship_order",
        json!({"order_id": "o", "shipment": {"kind": "pickup", "store_id": "s"}})
    )
    .is_ok());
    assert!(OpArgs::parse(
        "ship_order",
        json!({"order_id": "o", "shipment": {"kind": "drone"}})
    )
    .is_err());
    assert!(OpArgs::parse("find_widget", json!({"filter": null})).is_ok());
    assert!(OpArgs::parse("ping", json!({})).is_ok());
    let OpArgs::FxFieldRename(r) = OpArgs::parse(
        "rename_field",
        json!({"type": "text", "self": "a", "match": true, "default": "d", "fn": "f"}),
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(serde_json::to_value(&r).unwrap()["self"], "a");
    // Names that need care in case conversion.
    assert_eq!("getPM2.5Level".parse::<Op>().unwrap(), Op::FxPm25Get);
    assert_eq!(
        "ListOAuth2Tokens".parse::<Op>().unwrap(),
        Op::FxOauth2TokenList
    );
    assert_eq!("create_task_v2".parse::<Op>().unwrap(), Op::FxTaskCreateV2);
    // The schema typify cannot take (an enum of mixed value types) is untyped, not missing.
    let OpArgs::FxWidgetTag(v) =
        OpArgs::parse("tag_widget", json!({"widget_id": "w", "tag": 7})).unwrap()
    else {
        panic!()
    };
    assert_eq!(v["tag"], 7);
}
