//! Search evaluation: recall@k, MRR@10 and nDCG@10 of the search scorer over a query set, each
//! line `{"query": "...", "expected": ["tool name or op", ...], "tier": "colloquial"?}`; a hit is
//! any expected name in the top k. Every query's `match` (strong / weak / none) is counted too,
//! and queries no op can serve (an out-of-scope file, lines with no `expected`) measure
//! abstention: how many are answered `strong` (wrongly confident) and how many `none`.

use super::search::Match;
use super::Gateway;
use serde::Deserialize;
use serde_json::{json, Map, Value};

#[derive(Deserialize)]
struct Line {
    query: String,
    #[serde(default)]
    expected: Vec<String>,
    /// How the query is phrased (`terse`, `colloquial`, `specified`, ...): figures per tier.
    #[serde(default)]
    tier: Option<String>,
}

/// One query's outcome.
pub struct Outcome {
    pub query: String,
    pub expected: Vec<String>,
    /// 1-based rank of the first expected op, if in the top 10 (or the largest k).
    pub rank: Option<usize>,
    /// 1-based ranks of every expected op found in the top 10 (for nDCG).
    pub ranks: Vec<usize>,
    pub top: Vec<String>,
    pub tier: Option<String>,
    /// The search answer's `match`, and the best op's coverage of the query.
    pub fit: Match,
    pub coverage: Option<f64>,
}

impl Outcome {
    /// nDCG@10 with binary relevance: every expected op is relevant.
    pub fn ndcg10(&self) -> f64 {
        let dcg: f64 = self
            .ranks
            .iter()
            .filter(|r| **r <= 10)
            .map(|r| 1.0 / ((*r as f64) + 1.0).log2())
            .sum();
        let ideal: f64 = (1..=self.expected.len().clamp(1, 10))
            .map(|i| 1.0 / ((i as f64) + 1.0).log2())
            .sum();
        dcg / ideal
    }
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
                       "top": &o.top[..o.top.len().min(3)], "match": o.fit.as_str(),
                       "coverage": o.coverage.map(round4)})
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
    let all = lines(jsonl)?;
    for (n, (i, l)) in all.iter().enumerate() {
        warm_ahead(gw, &all, n);
        if l.expected.is_empty() {
            return Err(format!(
                "line {i}: no `expected` ops (queries no op serves go in the --out-of-scope file)"
            ));
        }
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
                "line {i}: expected `{bad}` is not an op or tool name in this registry"
            ));
        }
        let visible = |r: &crate::model::registry::OpRecord| !r.hidden;
        let ranked = if lexical {
            gw.rank_lexical(&l.query, &visible)
        } else {
            gw.rank(&l.query, &visible)
        };
        let ranked: Vec<String> = ranked.into_iter().take(depth).map(|(op, _)| op).collect();
        let ranks: Vec<usize> = ranked
            .iter()
            .enumerate()
            .filter(|(_, op)| expected_ops.contains(op))
            .map(|(p, _)| p + 1)
            .collect();
        let (fit, coverage) = gw.assess(&l.query);
        outcomes.push(Outcome {
            query: l.query.clone(),
            expected: l.expected.clone(),
            rank: ranks.first().copied(),
            ranks,
            top: ranked,
            tier: l.tier.clone(),
            fit,
            coverage,
        });
    }
    if outcomes.is_empty() {
        return Err("no queries".into());
    }
    let mut ks = ks.to_vec();
    ks.sort();
    ks.dedup();
    let mut m = figures(&outcomes.iter().collect::<Vec<_>>(), &ks);
    let mut tiers: std::collections::BTreeMap<&str, Vec<&Outcome>> = Default::default();
    for o in &outcomes {
        if let Some(t) = &o.tier {
            tiers.entry(t).or_default().push(o);
        }
    }
    if !tiers.is_empty() {
        let per: Map<String, Value> = tiers
            .iter()
            .map(|(t, os)| (t.to_string(), Value::Object(figures(os, &ks))))
            .collect();
        m.insert("tiers".into(), Value::Object(per));
    }
    Ok(Report {
        metrics: Value::Object(m),
        outcomes,
    })
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The non-empty lines of a query file, numbered from 1, parsed.
fn lines(jsonl: &str) -> Result<Vec<(usize, Line)>, String> {
    jsonl
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map(|l| (i + 1, l))
                .map_err(|e| format!("line {}: {e}", i + 1))
        })
        .collect()
}

/// recall@k, MRR@10, nDCG@10 and the shares answered `none` / `strong` of some outcomes.
fn figures(outcomes: &[&Outcome], ks: &[usize]) -> Map<String, Value> {
    let n = outcomes.len().max(1) as f64;
    let mut m = Map::new();
    for &k in ks {
        let hits = outcomes
            .iter()
            .filter(|o| o.rank.is_some_and(|r| r <= k))
            .count() as f64;
        m.insert(format!("recall@{k}"), json!(round4(hits / n)));
    }
    let mrr: f64 = outcomes
        .iter()
        .map(|o| o.rank.filter(|r| *r <= 10).map_or(0.0, |r| 1.0 / r as f64))
        .sum::<f64>()
        / n;
    m.insert("mrr@10".into(), json!(round4(mrr)));
    let ndcg: f64 = outcomes.iter().map(|o| o.ndcg10()).sum::<f64>() / n;
    m.insert("ndcg@10".into(), json!(round4(ndcg)));
    let share = |f: Match| outcomes.iter().filter(|o| o.fit == f).count() as f64 / n;
    m.insert("answered_none".into(), json!(round4(share(Match::None))));
    m.insert(
        "answered_strong".into(),
        json!(round4(share(Match::Strong))),
    );
    m.insert("queries".into(), json!(outcomes.len()));
    m
}

/// Abstention on queries no op serves (`{"query": ...}` lines; `expected`, if present, must be
/// empty): the shares answered `strong` (confidently wrong: lower is better) and `none` (the
/// answer says nothing fits: higher is better), and each query's answer.
pub fn out_of_scope(gw: &Gateway, jsonl: &str) -> Result<Value, String> {
    let mut answers = Vec::new();
    let all = lines(jsonl)?;
    for (n, (i, l)) in all.iter().enumerate() {
        warm_ahead(gw, &all, n);
        if !l.expected.is_empty() {
            return Err(format!(
                "line {i}: an out-of-scope query names expected ops; it belongs in --queries"
            ));
        }
        let (fit, coverage) = gw.assess(&l.query);
        answers.push((l.query.clone(), fit, coverage));
    }
    if answers.is_empty() {
        return Err("no queries".into());
    }
    let n = answers.len() as f64;
    let share = |f: Match| answers.iter().filter(|a| a.1 == f).count() as f64 / n;
    Ok(json!({
        "answered_strong": round4(share(Match::Strong)),
        "answered_weak": round4(share(Match::Weak)),
        "answered_none": round4(share(Match::None)),
        "queries": answers.len(),
        "answers": answers.iter().map(|(q, f, c)| json!({"query": q, "match": f.as_str(), "coverage": c.map(round4)})).collect::<Vec<_>>(),
    }))
}

/// The share of in-scope queries `--calibrate` lets be answered `none`: half a point under the
/// 5% a team can live with, since a floor fit to exactly 5% of the queries it was chosen on
/// answers more than 5% of unseen ones `none` about half the time (MetaTool held out, floors
/// learned on its dev split: 5.0% and 5.3% at a 5% aim, 4.7% at 4.5%).
pub const CALIBRATE_IN_SCOPE_NONE: f64 = 0.045;

/// The share of out-of-scope queries `--calibrate` lets be answered `strong`.
pub const CALIBRATE_OUT_OF_SCOPE_STRONG: f64 = 0.02;

/// `match` floors chosen on a team's own queries (`eval --calibrate`): `none_below` the highest
/// floor under which at most 4.5% of the in-scope queries fall, `strong_from` the lowest from which
/// at most 2% of the out-of-scope ones are `strong` (and never below `none_below`). For the
/// signal this gateway decides on: hybrid (cosine plus half the coverage) when a model is fused,
/// else lexical (coverage). Returns the TOML to put under `[search]` and the shares it gives on
/// these queries. Exact names and queries no op matched are left out: their `match` is fixed.
pub fn calibrate(gw: &Gateway, in_scope: &str, out_of_scope: &str) -> Result<Value, String> {
    floors(
        match_signals(gw, in_scope)?,
        match_signals(gw, out_of_scope)?,
        gw.has_hybrid(),
    )
}

/// The `match` signal of each query of `jsonl` (eval's JSON lines; `expected` may be absent) as
/// `gw` decides it: hybrid (cosine plus half the coverage) when a model is fused, else lexical
/// (coverage). Exact names and queries no op matched are left out: their `match` is fixed.
pub fn match_signals(gw: &Gateway, jsonl: &str) -> Result<Vec<f64>, String> {
    let all = lines(jsonl)?;
    Ok((0..all.len())
        .filter_map(|n| {
            warm_ahead(gw, &all, n);
            match_signal(gw, &all[n].1.query)
        })
        .collect())
}

/// How many queries eval embeds in one batch ahead of searching them, when a model is fused:
/// half what the gateway's query cache keeps (1,024), so none is dropped before its search.
const WARM: usize = 512;

/// Before the `n`th line, once every [`WARM`]: the next queries embedded in one batch.
fn warm_ahead(gw: &Gateway, all: &[(usize, Line)], n: usize) {
    if n.is_multiple_of(WARM) && gw.has_hybrid() {
        let next: Vec<&str> = all[n..]
            .iter()
            .take(WARM)
            .map(|(_, l)| l.query.as_str())
            .collect();
        gw.warm_queries(&next);
    }
}

/// The queries of eval's JSON lines (`expected` may be absent), in order.
pub fn queries(jsonl: &str) -> Result<Vec<String>, String> {
    Ok(lines(jsonl)?.into_iter().map(|(_, l)| l.query).collect())
}

/// The `match` signal of one query (see [`match_signals`]); `None` for an exact name or when
/// no op matched.
pub fn match_signal(gw: &Gateway, query: &str) -> Option<f64> {
    let (coverage, cosine) = gw.match_signals(query)?;
    match (gw.has_hybrid(), cosine) {
        (true, Some(c)) => Some(super::search::hybrid_signal(coverage, c)),
        (true, None) => None,
        (false, _) => Some(coverage),
    }
}

/// `match` floors from the signals of in-scope and out-of-scope queries (see [`calibrate`]);
/// `hybrid` names the signal (`match_hybrid` or `match_lexical` in the TOML). `toolreg learn`
/// gives it signals cross-fitted over its folds.
pub fn floors(mut inside: Vec<f64>, mut outside: Vec<f64>, hybrid: bool) -> Result<Value, String> {
    if inside.len() < 20 || outside.len() < 20 {
        return Err(format!(
            "calibration needs at least 20 scored queries of each kind; got {} in scope and {} out of scope",
            inside.len(),
            outside.len()
        ));
    }
    inside.sort_by(f64::total_cmp);
    outside.sort_by(f64::total_cmp);
    // At most this many in-scope queries may fall below `none_below`: the floor is the next one.
    let none_below = inside[(CALIBRATE_IN_SCOPE_NONE * inside.len() as f64).floor() as usize];
    let allowed_strong = (CALIBRATE_OUT_OF_SCOPE_STRONG * outside.len() as f64).floor() as usize;
    let above = outside[outside.len() - 1 - allowed_strong];
    // Just above that out-of-scope signal (a floor is `>=`), rounded up to the fourth decimal.
    let strong_from = (((above * 10_000.0).floor() + 1.0) / 10_000.0).max(none_below);
    let none_below = (none_below * 10_000.0).floor() / 10_000.0;
    let share = |v: &[f64], f: &dyn Fn(f64) -> bool| {
        round4(v.iter().filter(|x| f(**x)).count() as f64 / v.len() as f64)
    };
    let key = if hybrid {
        "match_hybrid"
    } else {
        "match_lexical"
    };
    Ok(json!({
        "signal": if hybrid { "hybrid" } else { "lexical" },
        "key": key,
        "none_below": none_below,
        "strong_from": strong_from,
        "toml": format!("[search]\n{key} = {{ none_below = {none_below}, strong_from = {strong_from} }}\n"),
        "in_scope": {"queries": inside.len(), "none": share(&inside, &|x| x < none_below), "strong": share(&inside, &|x| x >= strong_from)},
        "out_of_scope": {"queries": outside.len(), "none": share(&outside, &|x| x < none_below), "strong": share(&outside, &|x| x >= strong_from)},
    }))
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
