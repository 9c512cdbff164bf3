//! Semantic search benchmark (feature `semantic`) on the 2,000-tool synthetic registry: model
//! load, embedding throughput at build time, the incremental rebuild after one edited op, vector
//! load, and search latency lexical against hybrid (query embedding included: every query is new
//! to the cache). Medians (p50) and p90, measured in one run. Then the same for a model folder
//! (`--model DIR`: paraphrase-MiniLM-L3-v2 in f32 safetensors): load, embedding throughput, and
//! how close its vectors are to the bundled 4-bit model's.
//!
//! `cargo bench --features semantic --bench semantic`; `-- --quick` for a short pass (CI).

#[path = "support/minilm_folder.rs"]
mod minilm_folder;
#[path = "support/synthetic.rs"]
mod synthetic;

use std::sync::Arc;
use std::time::{Duration, Instant};
use toolreg::emit::Emitter;
use toolreg::runtime::hybrid::{Hybrid, DEFAULT_WEIGHT};
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::Gateway;
use toolreg::semantic::{self, Bundled, Encoder, Folder, VectorFile};

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[(v.len() * 9 / 10).min(v.len() - 1)])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    // As toolreg's commands do before they embed (a variable set by the caller is kept).
    // SAFETY: the bench has one thread here.
    unsafe { semantic::pin_thread_count() };
    let quick = std::env::args().any(|a| a == "--quick");
    let tmp = tempfile::tempdir().unwrap();
    let defs = tmp.path().join("defs");
    let n = if quick { 200 } else { 2000 };
    synthetic::write_catalog(&defs, n);
    let g = toolreg::builder::generate(&defs, &[Emitter::Registry, Emitter::Help]);
    let reg = g
        .compiled
        .registry
        .clone()
        .expect("the synthetic catalog compiles");
    let files = g.files.expect("files");
    println!("toolreg semantic benchmark: {} ops, one run", reg.ops.len());

    let t = Instant::now();
    let encoder = Bundled::load().unwrap();
    println!(
        "model load (bundled, once per process): {}",
        ms(t.elapsed())
    );

    let t = Instant::now();
    let (text, embedded) = semantic::build(&reg, &encoder, None).unwrap();
    let cold = t.elapsed();
    println!(
        "embed every op: {} ops in {:.2} s ({:.0} ops/s), vectors.json {:.2} MB",
        embedded,
        cold.as_secs_f64(),
        embedded as f64 / cold.as_secs_f64(),
        text.len() as f64 / 1e6
    );
    let file = VectorFile::parse(&text).unwrap();
    let mut edited = reg.clone();
    let first = edited.ops.keys().next().unwrap().clone();
    edited.ops.get_mut(&first).unwrap().description = "An edited description.".into();
    let mut rebuilds = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let (_, again) = semantic::build(&edited, &encoder, Some(&file)).unwrap();
        rebuilds.push(t.elapsed());
        assert_eq!(again, 1);
    }
    println!(
        "rebuild after one edited op (1 embedded): p50 {}",
        ms(percentiles(rebuilds).0)
    );

    let loads: Vec<Duration> = (0..if quick { 3 } else { 15 })
        .map(|_| {
            let t = Instant::now();
            let f = VectorFile::parse(&text).unwrap();
            std::hint::black_box(f.for_registry(&reg, &file.model).unwrap());
            t.elapsed()
        })
        .collect();
    println!(
        "vector load (parse, check, decode): p50 {}",
        ms(percentiles(loads).0)
    );

    let lexical = Gateway::from_slices(
        files["registry.json"].as_bytes(),
        files["help.json"].as_bytes(),
    )
    .unwrap();
    let hybrid = Gateway::from_slices(
        files["registry.json"].as_bytes(),
        files["help.json"].as_bytes(),
    )
    .unwrap()
    .with_hybrid(Hybrid::new(&reg, &file, Arc::new(encoder), Some(DEFAULT_WEIGHT)).unwrap());
    // Distinct queries, so every hybrid search embeds its query (no cache hit).
    let reps = if quick { 20 } else { 200 };
    let queries: Vec<String> = (0..reps)
        .map(|i| {
            let noun = synthetic::NOUNS[i % synthetic::NOUNS.len()];
            let group = synthetic::GROUPS[(i / 3) % synthetic::GROUPS.len()];
            format!("please find the {noun} records from {group} number {i}")
        })
        .collect();
    let time = |gw: &Gateway| {
        percentiles(
            queries
                .iter()
                .map(|q| {
                    let t = Instant::now();
                    std::hint::black_box(gw.search(&SearchRequest::query(q.as_str())));
                    t.elapsed()
                })
                .collect(),
        )
    };
    let (lp50, lp90) = time(&lexical);
    let (hp50, hp90) = time(&hybrid);
    println!(
        "search, lexical: p50 {:.1} us, p90 {:.1} us",
        lp50.as_secs_f64() * 1e6,
        lp90.as_secs_f64() * 1e6
    );
    println!(
        "search, hybrid (query embedded): p50 {}, p90 {} (x{:.0} lexical)",
        ms(hp50),
        ms(hp90),
        hp50.as_secs_f64() / lp50.as_secs_f64()
    );
    let (cached, _) = time(&hybrid);
    println!(
        "search, hybrid, repeated queries (cached embedding): p50 {}",
        ms(cached)
    );

    folder_model(&reg, quick);
    // The bundled model loads once per process; this is the same model again.
    f16_storage_cost(&Bundled::load().unwrap(), quick);
}

/// What storing vectors as f16 costs: on MetaTool (199 real tools) and its held-out queries,
/// how often the nearest op by cosine differs between the f32 vectors and their f16 copies.
fn f16_storage_cost(encoder: &Bundled, quick: bool) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let reg = toolreg::compiler::compile(&repo.join("tests/eval/metatool/definitions"))
        .registry
        .expect("MetaTool compiles");
    let texts: Vec<String> = reg.ops.values().map(semantic::op_text).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let full = encoder.embed(&texts).unwrap();
    let half: Vec<Vec<f32>> = full
        .iter()
        .map(|v| v.iter().map(|x| half::f16::from_f32(*x).to_f32()).collect())
        .collect();
    let queries = std::fs::read_to_string(repo.join("tests/eval/metatool/heldout.jsonl")).unwrap();
    let queries: Vec<String> = queries
        .lines()
        .take(if quick { 50 } else { usize::MAX })
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["query"].as_str().unwrap().to_string()
        })
        .collect();
    let nearest = |ops: &[Vec<f32>], q: &[f32]| {
        let scores: Vec<f32> = ops.iter().map(|o| semantic::cosine(o, q)).collect();
        let best = (0..scores.len())
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
            .unwrap();
        (best, scores)
    };
    let (mut differ, mut worst) = (0, 0f32);
    for q in &queries {
        let q = encoder.embed(&[q.as_str()]).unwrap().pop().unwrap();
        let (a, sa) = nearest(&full, &q);
        let (b, sb) = nearest(&half, &q);
        differ += usize::from(a != b);
        for (x, y) in sa.iter().zip(&sb) {
            worst = worst.max((x - y).abs());
        }
    }
    println!(
        "f16 storage on MetaTool held-out: nearest op differs from f32 on {differ} of {} queries; largest cosine error {worst:.5}",
        queries.len()
    );
}

/// The second encoder: a sentence-transformer folder loaded with candle.
fn folder_model(reg: &toolreg::registry::Registry, quick: bool) {
    let dir = tempfile::tempdir().unwrap();
    minilm_folder::write(dir.path());
    let t = Instant::now();
    let folder = Folder::load(dir.path()).unwrap();
    println!(
        "model load (folder, f32 safetensors, hashed): {}",
        ms(t.elapsed())
    );
    let texts: Vec<String> = reg
        .ops
        .values()
        .take(if quick { 20 } else { 200 })
        .map(semantic::op_text)
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let vectors = folder.embed(&texts).unwrap();
    let took = t.elapsed();
    let bundled = Bundled::load().unwrap().embed(&texts).unwrap();
    let worst = vectors
        .iter()
        .zip(&bundled)
        .map(|(a, b)| semantic::cosine(a, b))
        .fold(f32::MAX, f32::min);
    println!(
        "embed with the folder: {} ops in {:.2} s ({:.0} ops/s); lowest cosine to the bundled model's vectors {worst:.4}",
        texts.len(),
        took.as_secs_f64(),
        texts.len() as f64 / took.as_secs_f64()
    );

    // Queries as `eval` embeds them (one call, texts of one token count batched) against one
    // call per query (as `serve` embeds them); the vectors are the same to the bit.
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = std::fs::read_to_string(repo.join("tests/eval/metatool/heldout.jsonl")).unwrap();
    let queries = toolreg::runtime::eval::queries(&file).unwrap();
    let queries: Vec<&str> = queries
        .iter()
        .take(if quick { 100 } else { usize::MAX })
        .map(String::as_str)
        .collect();
    let t = Instant::now();
    let alone: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| folder.embed(&[q]).unwrap().pop().unwrap())
        .collect();
    let one_by_one = t.elapsed();
    let t = Instant::now();
    let batched = folder.embed(&queries).unwrap();
    let together = t.elapsed();
    assert_eq!(alone, batched, "a batch changed a vector");
    println!(
        "embed {} MetaTool queries with the folder: one call each {:.2} s, one call for all {:.2} s ({:.1}x); same vectors",
        queries.len(),
        one_by_one.as_secs_f64(),
        together.as_secs_f64(),
        one_by_one.as_secs_f64() / together.as_secs_f64()
    );
}
