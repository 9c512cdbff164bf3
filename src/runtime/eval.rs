//! Search evaluation: recall@k and MRR@10 of the search scorer over a query set, each line
//! `{"query": "...", "expected": ["tool name or op", ...]}`; a hit is any expected name in the
//! top k.

use super::Gateway;
use serde::Deserialize;
use serde_json::{json, Map, Value};

#[derive(Deserialize)]
struct Line {
    query: String,
    expected: Vec<String>,
}

/// One query's outcome.
pub struct Outcome {
    pub query: String,
    pub expected: Vec<String>,
    /// 1-based rank of the first expected op, if in the top 10 (or the largest k).
    pub rank: Option<usize>,
    pub top: Vec<String>,
}

pub struct Report {
    /// `{"recall@1": .., "recall@5": .., "recall@10": .., "mrr@10": .., "queries": n}`
    pub metrics: Value,
    pub outcomes: Vec<Outcome>,
}

impl Report {
    pub fn metric(&self, name: &str) -> f64 {
        self.metrics[name].as_f64().unwrap_or(0.0)
    }

    /// The metrics and, under `misses`, every query whose expected op was not first: its
    /// query, expected names, rank (null beyond the top 10) and the top three ops.
    pub fn to_json(&self) -> Value {
        let mut out = self.metrics.as_object().cloned().unwrap_or_default();
        let misses: Vec<Value> = self
            .outcomes
            .iter()
            .filter(|o| o.rank != Some(1))
            .map(|o| {
                json!({"query": o.query, "expected": o.expected, "rank": o.rank,
                       "top": &o.top[..o.top.len().min(3)]})
            })
            .collect();
        out.insert("misses".into(), Value::Array(misses));
        Value::Object(out)
    }

    /// Metrics, then the queries that missed rank 1 (what to look at when tuning synonyms).
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        if let Some(m) = self.metrics.as_object() {
            for (k, v) in m {
                out.push_str(&format!("{k:<10} {v}\n"));
            }
        }
        let misses: Vec<&Outcome> = self.outcomes.iter().filter(|o| o.rank != Some(1)).collect();
        if !misses.is_empty() {
            out.push_str("\nnot first:\n");
            for o in misses {
                let rank = o.rank.map_or("-".to_string(), |r| r.to_string());
                out.push_str(&format!(
                    "  rank {rank:>2}  {:?} expected {:?}, got {:?}\n",
                    o.query,
                    o.expected,
                    &o.top[..o.top.len().min(3)]
                ));
            }
        }
        out
    }
}

/// Runs a query set (JSON lines) through the gateway's search scorer.
pub fn run(gw: &Gateway, jsonl: &str, ks: &[usize]) -> Result<Report, String> {
    run_ranked(gw, jsonl, ks, false)
}

/// `run`, with lexical ranking only when `lexical` (what `--compare` sets against hybrid).
pub fn run_ranked(
    gw: &Gateway,
    jsonl: &str,
    ks: &[usize],
    lexical: bool,
) -> Result<Report, String> {
    let reg = gw.registry();
    let depth = ks.iter().copied().chain([10]).max().unwrap_or(10);
    let mut outcomes = Vec::new();
    for (i, line) in jsonl
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let l: Line = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let expected_ops: Vec<String> = l
            .expected
            .iter()
            .map(|e| {
                reg.op_by_tool_name(e)
                    .map(|r| r.op.clone())
                    .unwrap_or_else(|| e.clone())
            })
            .collect();
        if let Some(bad) = expected_ops.iter().find(|o| !reg.ops.contains_key(*o)) {
            return Err(format!(
                "line {}: expected `{bad}` is not an op or tool name in this registry",
                i + 1
            ));
        }
        let visible = |r: &crate::registry::OpRecord| !r.hidden;
        let ranked = if lexical {
            gw.rank_lexical(&l.query, &visible)
        } else {
            gw.rank(&l.query, &visible)
        };
        let ranked: Vec<String> = ranked.into_iter().take(depth).map(|(op, _)| op).collect();
        let rank = ranked
            .iter()
            .position(|op| expected_ops.contains(op))
            .map(|p| p + 1);
        outcomes.push(Outcome {
            query: l.query,
            expected: l.expected,
            rank,
            top: ranked,
        });
    }
    if outcomes.is_empty() {
        return Err("no queries".into());
    }
    let n = outcomes.len() as f64;
    let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
    let mut m = Map::new();
    let mut ks = ks.to_vec();
    ks.sort();
    ks.dedup();
    for k in ks {
        let hits = outcomes
            .iter()
            .filter(|o| o.rank.is_some_and(|r| r <= k))
            .count() as f64;
        m.insert(format!("recall@{k}"), json!(round(hits / n)));
    }
    let mrr: f64 = outcomes
        .iter()
        .map(|o| o.rank.filter(|r| *r <= 10).map_or(0.0, |r| 1.0 / r as f64))
        .sum::<f64>()
        / n;
    m.insert("mrr@10".into(), json!(round(mrr)));
    m.insert("queries".into(), json!(outcomes.len()));
    Ok(Report {
        metrics: Value::Object(m),
        outcomes,
    })
}

/// Paired comparison of two runs over the same queries (`base`, then `other`): for recall@k and
/// MRR@10, both values, the difference, and a 95% paired bootstrap interval of the difference
/// (queries resampled with replacement, `resamples` times, a fixed seed: the same input gives the
/// same interval).
pub fn compare(
    base: &Report,
    other: &Report,
    ks: &[usize],
    resamples: usize,
) -> Result<Value, String> {
    if base.outcomes.len() != other.outcomes.len()
        || base
            .outcomes
            .iter()
            .zip(&other.outcomes)
            .any(|(a, b)| a.query != b.query)
    {
        return Err("the two runs did not score the same queries".into());
    }
    let n = base.outcomes.len();
    let mut metrics: Vec<(String, PerQuery)> = ks
        .iter()
        .map(|&k| {
            let f: PerQuery =
                Box::new(move |o: &Outcome| f64::from(u8::from(o.rank.is_some_and(|r| r <= k))));
            (format!("recall@{k}"), f)
        })
        .collect();
    metrics.push((
        "mrr@10".into(),
        Box::new(|o: &Outcome| o.rank.filter(|r| *r <= 10).map_or(0.0, |r| 1.0 / r as f64)),
    ));
    let mut out = Map::new();
    let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
    for (name, f) in &metrics {
        let diffs: Vec<f64> = base
            .outcomes
            .iter()
            .zip(&other.outcomes)
            .map(|(a, b)| f(b) - f(a))
            .collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let a = base.outcomes.iter().map(f).sum::<f64>() / n.max(1) as f64;
        let b = other.outcomes.iter().map(f).sum::<f64>() / n.max(1) as f64;
        let mut rng = SplitMix64(0x7007_1e6d);
        let mut boot: Vec<f64> = (0..resamples)
            .map(|_| {
                (0..n)
                    .map(|_| diffs[(rng.next() % n as u64) as usize])
                    .sum::<f64>()
                    / n as f64
            })
            .collect();
        boot.sort_by(f64::total_cmp);
        let pick = |q: f64| boot[((q * resamples as f64) as usize).min(resamples - 1)];
        out.insert(
            name.clone(),
            json!({"lexical": round(a), "hybrid": round(b), "difference": round(mean(&diffs)),
                   "interval95": [round(pick(0.025)), round(pick(0.975))]}),
        );
    }
    out.insert("queries".into(), json!(n));
    out.insert("resamples".into(), json!(resamples));
    Ok(Value::Object(out))
}

/// One query's value of a metric (1/0 for a recall, the reciprocal rank for MRR).
type PerQuery = Box<dyn Fn(&Outcome) -> f64>;

/// A small deterministic generator for resampling (SplitMix64).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
