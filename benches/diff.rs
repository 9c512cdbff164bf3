//! `toolreg diff` on two 10,000-op registries: the synthetic catalog of the build benchmark, and
//! a copy with a realistic spread of edits (ops removed and added, descriptions reworded,
//! required arguments added, enum values removed). Prints the median of 5 for the findings alone
//! and with the prompt-cache impact (which regenerates every surface and counts tokens).
//!
//! `cargo bench --bench diff` (`-- --quick`: 1,000 ops, one run; what CI runs).

use serde_json::json;
use std::time::Instant;
use toolreg::diff::diff;

#[path = "support/synthetic.rs"]
mod synthetic;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (n, reps) = if quick { (1_000, 1) } else { (10_000, 5) };
    let tmp = tempfile::tempdir().unwrap();
    synthetic::write_catalog(tmp.path(), n);
    let old = toolreg::compiler::compile(tmp.path())
        .registry
        .expect("the synthetic catalog builds");

    // The edits: every 100th op removed and re-added under another name, every 50th description
    // reworded, every 200th gets a required argument, every 300th loses an enum value.
    let mut new = old.clone();
    let ops: Vec<String> = new.ops.keys().cloned().collect();
    for (i, op) in ops.iter().enumerate() {
        if i % 100 == 0 {
            let mut rec = new.ops.remove(op).unwrap();
            rec.op = format!("{op}_v2");
            rec.tool_name = format!("{}_v2", rec.tool_name);
            new.ops.insert(rec.op.clone(), rec);
            continue;
        }
        let rec = new.ops.get_mut(op).unwrap();
        if i % 50 == 0 {
            rec.description.push_str(" Reworded.");
        }
        if i % 200 == 1 {
            let s = &mut rec.parameters_schema;
            s["properties"]["reason"] = json!({"type": "string"});
            s["required"].as_array_mut().unwrap().push(json!("reason"));
        }
        if i % 300 == 2 {
            if let Some(props) = rec.parameters_schema["properties"].as_object_mut() {
                for p in props.values_mut() {
                    if let Some(e) = p.get_mut("enum").and_then(|e| e.as_array_mut()) {
                        e.pop();
                        break;
                    }
                }
            }
        }
    }
    new.registry_version = "b3:edited".into();

    let mut plain = Vec::new();
    let mut full = Vec::new();
    let mut found = 0;
    for _ in 0..reps {
        let t = Instant::now();
        found = diff(&old, &new, false).findings.len();
        plain.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let r = diff(&old, &new, true);
        full.push(t.elapsed().as_secs_f64());
        assert_eq!(r.findings.len(), found);
    }
    println!("toolreg diff benchmark: {n} ops each side, {found} findings, median of {reps}");
    println!("findings only:            {:.3} s", median(plain));
    println!("with prompt-cache impact: {:.3} s", median(full));
}
