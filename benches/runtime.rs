//! Runtime benchmark on a 2,000-tool registry: registry load, search, help lookup and exec
//! overhead (resolve + normalize + validate, no-op handler). Prints medians (p50) and p90 of
//! per-call times measured in one run.
//!
//! `cargo bench --bench runtime` for the full run; `-- --quick` for a short pass (CI).

#[path = "support/synthetic.rs"]
mod synthetic;

use serde_json::json;
use std::time::{Duration, Instant};
use toolreg::emit::Emitter;
use toolreg::help::HelpRequest;
use toolreg::registry::Registry;
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::{block_on, ExecCall, Gateway};

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[(v.len() * 9 / 10).min(v.len() - 1)])
}

fn time<T>(n: usize, mut f: impl FnMut(usize) -> T) -> (Duration, Duration) {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        std::hint::black_box(f(i));
        out.push(t.elapsed());
    }
    percentiles(out)
}

fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = if quick { 200 } else { 5000 };
    let tmp = tempfile::tempdir().unwrap();
    let defs = tmp.path().join("defs");
    synthetic::write_catalog(&defs, 2000);
    let g = toolreg::builder::generate(&defs, &[Emitter::Registry, Emitter::Help]);
    let files = g
        .files
        .unwrap_or_else(|| panic!("{}", g.compiled.diagnostics.render_text()));
    let (reg_bytes, help_bytes) = (
        files["registry.json"].as_bytes(),
        files["help.json"].as_bytes(),
    );
    println!(
        "toolreg runtime benchmark: 2,000 ops (registry.json {:.1} MB, help.json {:.1} MB), {reps} calls each",
        reg_bytes.len() as f64 / 1e6,
        help_bytes.len() as f64 / 1e6
    );

    let load_reps = if quick { 3 } else { 15 };
    let (load, _) = time(load_reps, |_| Registry::from_slice(reg_bytes).unwrap());
    let (gw_load, _) = time(load_reps, |_| {
        Gateway::from_slices(reg_bytes, help_bytes).unwrap()
    });
    println!(
        "registry load (registry.json -> Registry)        p50 {:.1} ms",
        load.as_secs_f64() * 1e3
    );
    println!(
        "gateway load (+ help.json, search index)         p50 {:.1} ms",
        gw_load.as_secs_f64() * 1e3
    );

    let mut gw = Gateway::from_slices(reg_bytes, help_bytes).unwrap();
    let ops: Vec<String> = gw.registry().ops.keys().cloned().collect();
    let queries: Vec<String> = ops
        .iter()
        .step_by(37)
        .map(|op| {
            let parts: Vec<&str> = op.split('.').collect();
            format!(
                "{} the {} {}",
                parts[2],
                parts[1].trim_end_matches(char::is_numeric),
                parts[0]
            )
        })
        .chain(
            [
                "find a contact by name",
                "delete an invoice",
                "what reports exist",
                "zzqx nothing",
                // Typo tolerance, abbreviations and phrases take their own paths.
                "get rid of the invocie",
                "send a msg about the scheduel",
                "set up a new e-mail acount",
            ]
            .map(str::to_owned),
        )
        .collect();
    let (p50, p90) = time(reps, |i| {
        gw.search(&SearchRequest::query(queries[i % queries.len()].clone()))
    });
    println!(
        "search                                           p50 {}  p90 {}",
        us(p50),
        us(p90)
    );
    // What the request caps cost (issue 21): the same queries with the caps lifted, measured
    // interleaved with the capped gateway in rounds, so drift hits both alike.
    let mut uncapped = Gateway::from_slices(reg_bytes, help_bytes).unwrap();
    uncapped.set_search_limits(toolreg::runtime::search::SearchLimits {
        max_query_chars: usize::MAX,
        max_word_chars: usize::MAX,
    });
    let (mut capped_p50, mut open_p50) = (Vec::new(), Vec::new());
    for round in 0..5 {
        let at = |i: usize| queries[(i + round * 7) % queries.len()].clone();
        capped_p50.push(time(reps / 5, |i| gw.search(&SearchRequest::query(at(i)))).0);
        open_p50.push(time(reps / 5, |i| uncapped.search(&SearchRequest::query(at(i)))).0);
    }
    capped_p50.sort();
    open_p50.sort();
    let (c, o) = (capped_p50[2], open_p50[2]);
    println!(
        "search with the caps / without (median of 5 rounds) p50 {} / {} (x{:.3})",
        us(c),
        us(o),
        c.as_secs_f64() / o.as_secs_f64()
    );
    // Hostile sizes against the capped gateway (the uncapped one would take minutes and GBs).
    let word = "abcdefghij".repeat(10_000);
    let (p50, _) = time(if quick { 3 } else { 20 }, |_| {
        gw.search(&SearchRequest::query(word.clone()))
    });
    println!(
        "search, one 100 KB word                          p50 {}",
        us(p50)
    );
    let path = "onto.".repeat(800_000);
    let (p50, _) = time(if quick { 3 } else { 20 }, |_| {
        gw.help(&HelpRequest::path(path.clone()))
    });
    println!(
        "help, a 4 MB path                                p50 {}",
        us(p50)
    );
    let (p50, _) = time(if quick { 3 } else { 20 }, |_| {
        block_on(gw.exec(ExecCall {
            op: word.clone(),
            ..Default::default()
        }))
    });
    println!(
        "exec, a 100 KB op                                p50 {}",
        us(p50)
    );
    let (p50, p90) = time(reps, |i| {
        gw.help(&HelpRequest::path(ops[(i * 7) % ops.len()].clone()))
    });
    println!(
        "help lookup (op page)                            p50 {}  p90 {}",
        us(p50),
        us(p90)
    );

    let update: Vec<String> = ops
        .iter()
        .filter(|o| o.ends_with(".update"))
        .take(50)
        .cloned()
        .collect();
    for op in &update {
        gw.handle_sync(op, |_| Ok(json!(null))).unwrap();
    }
    let calls: Vec<ExecCall> = update
        .iter()
        .map(|op| {
            let entity = op.split('.').nth(1).unwrap();
            ExecCall::new(op.clone(), json!({format!("{entity}_id"): "id-1", "title": "New title", "state": "active", "owner": {"user_id": "u1", "team": "a"}, "tags": ["x"]}))
        })
        .collect();
    for c in &calls {
        let env = block_on(gw.exec(c.clone()));
        assert!(env.ok, "{}", env.to_json());
    }
    let (p50, p90) = time(reps, |i| block_on(gw.exec(calls[i % calls.len()].clone())));
    println!(
        "exec overhead (resolve+normalize+validate, no-op) p50 {}  p90 {}",
        us(p50),
        us(p90)
    );
}
