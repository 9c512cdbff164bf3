//! The JSON Schema of toolreg.toml (issue 36, item 3): generated from the overlay's own types,
//! committed as `toolreg.schema.json`, kept current, and in agreement with the compiler on every
//! overlay the repository holds (the bad-input corpus included): an overlay the compiler reads
//! validates, one it refuses for its shape does not.
#![cfg(feature = "compiler")]

mod common;

use toolreg::compiler::overlay::Overlay;
use toolreg::compiler::overlay_schema::json_schema;

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn the_committed_schema_is_current() {
    let committed = std::fs::read_to_string(common::repo().join("toolreg.schema.json")).unwrap();
    assert!(
        committed == json_schema(),
        "toolreg.schema.json is stale: run `cargo run -- schema > toolreg.schema.json`"
    );
}

#[test]
fn every_overlay_in_the_repository_agrees_with_the_compiler() {
    let validator = validator();
    let (mut checked, mut refused) = (0, 0);
    for entry in walkdir::WalkDir::new(common::repo())
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !matches!(name.as_ref(), "target" | "node_modules" | ".git")
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "toolreg.toml")
    {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        // Files that are not TOML at all are the parser's cases, not the schema's.
        let Ok(value) = toml::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let read = toml::from_str::<Overlay>(&text);
        let valid = validator.is_valid(&value);
        assert_eq!(
            read.is_ok(),
            valid,
            "{}: the compiler {} it, the schema {} it ({:?})",
            entry.path().display(),
            if read.is_ok() { "reads" } else { "refuses" },
            if valid { "accepts" } else { "refuses" },
            read.err()
        );
        checked += 1;
        refused += usize::from(!valid);
    }
    assert!(checked >= 60, "{checked} overlays checked");
    assert!(refused >= 1, "the corpus has overlays the schema refuses");
}

#[test]
fn a_misspelt_key_or_a_wrong_kind_fails_it() {
    let validator = validator();
    let good: serde_json::Value = toml::from_str(
        "[search]\nsemantic_weight = 0.5\nmatch_hybrid = { none_below = 0.3, strong_from = 0.7 }\n\n[ops.\"a.b.list\"]\nqueries = [\"show every b\"]\nkind = \"read\"\n\n[entities]\ntask = \"tasks\"\nrisk = { plural = \"risks\", summary = \"What may go wrong.\" }\n",
    )
    .unwrap();
    assert!(validator.is_valid(&good));
    for bad in [
        "[search]\nsemantic_wieght = 0.5\n",
        "[ops.\"a.b.list\"]\nquerys = [\"x\"]\n",
        "[ops.\"a.b.list\"]\nkind = \"delete\"\n",
        "[search]\nmatch_hybrid = { none_below = 0.3 }\n",
        "[entities]\ntask = { plurall = \"tasks\" }\n",
    ] {
        let value: serde_json::Value = toml::from_str(bad).unwrap();
        assert!(!validator.is_valid(&value), "{bad}");
        assert!(toml::from_str::<Overlay>(bad).is_err(), "{bad}");
    }
}
