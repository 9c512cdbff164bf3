//! Semantic search (feature `semantic`) on a catalog nobody here wrote (MetaTool's 199 tools):
//! the vectors artifact, its cache, refusal of vectors from another registry or model, hybrid
//! ranking through the command line, and `eval --compare`.

mod common;

use common::{stderr, toolreg};
use std::sync::Arc;
use toolreg::runtime::hybrid::Hybrid;
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::Gateway;
use toolreg::semantic::{self, Bundled, Encoder, ModelIdentity, VectorFile};

fn metatool() -> std::path::PathBuf {
    common::repo().join("tests/eval/metatool/definitions")
}

/// A test encoder with another identity (the bundled one's vectors, relabeled).
struct Relabeled(Bundled, ModelIdentity);

impl Encoder for Relabeled {
    fn identity(&self) -> &ModelIdentity {
        &self.1
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.0.embed(texts)
    }
}

#[test]
fn vectors_are_cached_checked_and_fused_into_search() {
    let reg = toolreg::compiler::compile(&metatool()).registry.unwrap();
    let encoder = Bundled::load().unwrap();
    let (text, embedded) = semantic::build(&reg, &encoder, None).unwrap();
    assert_eq!(embedded, reg.ops.len());
    let file = VectorFile::parse(&text).unwrap();
    assert_eq!(file.model, *encoder.identity());
    assert_eq!(file.registry_version, reg.registry_version);

    // A rebuild reuses every vector; after one op's description changes, only it is embedded.
    let (again, embedded) = semantic::build(&reg, &encoder, Some(&file)).unwrap();
    assert_eq!((embedded, &again), (0, &text));
    let mut edited = reg.clone();
    let first = edited.ops.keys().next().unwrap().clone();
    edited.ops.get_mut(&first).unwrap().description = "Something else entirely.".into();
    let (_, embedded) = semantic::build(&edited, &encoder, Some(&file)).unwrap();
    assert_eq!(embedded, 1);

    // Vectors of another model or registry are refused, with what to do.
    let other = Relabeled(
        Bundled::load().unwrap(),
        ModelIdentity {
            name: "someone/else".into(),
            dimensions: 384,
            weights: "sha256:0".into(),
        },
    );
    let err = file.for_registry(&reg, other.identity()).unwrap_err();
    assert!(
        err.contains("someone/else") && err.contains("rebuild"),
        "{err}"
    );
    let mut moved = reg.clone();
    moved.registry_version = "b3:0000000000000000".into();
    let err = file.for_registry(&moved, encoder.identity()).unwrap_err();
    assert!(err.contains("registry"), "{err}");

    // Hybrid search finds a paraphrase lexical search ranks low: a MetaTool dev query.
    let help = toolreg::emit::help::build(&reg);
    let lexical = Gateway::new(reg.clone(), help.clone()).unwrap();
    let hybrid = Gateway::new(reg.clone(), help)
        .unwrap()
        .with_hybrid(Hybrid::new(&reg, &file, Arc::new(encoder), 0.3).unwrap());
    let rank = |gw: &Gateway, q: &str, tool: &str| {
        gw.search(&SearchRequest::query(q))
            .results
            .iter()
            .position(|h| h.tool_name == tool)
    };
    let dev =
        std::fs::read_to_string(common::repo().join("tests/eval/metatool/dev.jsonl")).unwrap();
    let mut improved = 0;
    for line in dev.lines().take(200) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (q, tool) = (
            v["query"].as_str().unwrap(),
            v["expected"][0].as_str().unwrap(),
        );
        if rank(&hybrid, q, tool) == Some(0) && rank(&lexical, q, tool) != Some(0) {
            improved += 1;
        }
    }
    assert!(improved >= 10, "hybrid put {improved} more queries first");
    // An exact op name still ranks first.
    let op = reg.ops.keys().nth(7).unwrap();
    assert_eq!(
        hybrid.search(&SearchRequest::query(op.as_str())).results[0].op,
        *op
    );
}

#[test]
fn the_command_builds_vectors_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let defs = metatool();
    // Build, then check with the same emitters: the vectors are the cache, nothing is stale.
    for command in ["build", "check"] {
        let run = toolreg(
            dir.path(),
            &[
                command,
                "--definitions",
                defs.to_str().unwrap(),
                "--out",
                "out",
                "--emit",
                "registry,help,vectors",
            ],
        );
        assert!(run.status.success(), "{command}: {}", stderr(&run));
    }
    let queries = common::repo().join("tests/eval/metatool/dev.jsonl");
    let eval = toolreg(
        dir.path(),
        &[
            "eval",
            "--queries",
            queries.to_str().unwrap(),
            "--registry",
            "out/registry.json",
            "--compare",
            "--format",
            "json",
        ],
    );
    assert!(eval.status.success(), "{}", stderr(&eval));
    let v: serde_json::Value = serde_json::from_slice(&eval.stdout).unwrap();
    for k in ["recall@1", "recall@5"] {
        let low = v[k]["interval95"][0].as_f64().unwrap();
        assert!(low > 0.0, "{k}: {}", v[k]);
    }
    // Vectors from another registry are refused, not mixed in.
    let vectors = dir.path().join("out/vectors.json");
    let text = std::fs::read_to_string(&vectors).unwrap();
    let mut file: serde_json::Value = serde_json::from_str(&text).unwrap();
    file["registry_version"] = "b3:0000000000000000".into();
    std::fs::write(&vectors, file.to_string()).unwrap();
    let search = toolreg(
        dir.path(),
        &["search", "send an email", "--registry", "out/registry.json"],
    );
    assert_eq!(search.status.code(), Some(2));
    assert!(
        stderr(&search).contains("rebuild both"),
        "{}",
        stderr(&search)
    );
}
