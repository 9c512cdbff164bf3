//! A real BERT sentence-transformer folder for tests and benchmarks, written from the files the
//! bundled model ships with (no download): paraphrase-MiniLM-L3-v2's config and tokenizer, and
//! its weights as f32 safetensors.

/// The bundled model's own files, found through cargo (pocket-encoder is a dependency; only
/// the host's packages, so nothing needs downloading).
fn pocket_encoder_assets() -> std::path::PathBuf {
    let run = |program: String, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = run(rustc, &["-vV"]);
    let host = version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .to_string();
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let meta = run(
        cargo,
        &[
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--features",
            "semantic",
            "--filter-platform",
            &host,
            "--manifest-path",
            manifest.to_str().unwrap(),
        ],
    );
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    let package = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "pocket-encoder")
        .expect("pocket-encoder in the dependency graph");
    std::path::Path::new(package["manifest_path"].as_str().unwrap())
        .parent()
        .unwrap()
        .join("assets")
}

/// A real sentence-transformer folder, as `save_pretrained` + sentence-transformers write it:
/// paraphrase-MiniLM-L3-v2's config and tokenizer, and its weights in f32 safetensors
/// (dequantized from the bundled 4-bit copy, the format provenance.json documents:
/// symmetric 4-bit, groups of 32, f16 scales, low nibble first).
pub fn write(dir: &std::path::Path) {
    use candle_core::{Device, Tensor};
    let assets = pocket_encoder_assets();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(assets.join(f), dir.join(f)).unwrap();
    }
    let packed =
        candle_core::safetensors::load(assets.join("model.safetensors"), &Device::Cpu).unwrap();
    let shapes: std::collections::BTreeMap<String, Vec<usize>> =
        serde_json::from_slice(&std::fs::read(assets.join("shapes.json")).unwrap()).unwrap();
    let mut tensors = std::collections::HashMap::new();
    for (name, shape) in shapes {
        let count: usize = shape.iter().product();
        let data: Vec<f32> = if shape.len() < 2 {
            packed[&name].to_vec1::<f32>().unwrap()
        } else {
            let nibbles = packed[&format!("{name}.q4")].to_vec1::<u8>().unwrap();
            let scales = packed[&format!("{name}.scales")]
                .to_vec1::<half::f16>()
                .unwrap();
            (0..count)
                .map(|i| {
                    let q = (nibbles[i / 2] >> ((i % 2) * 4)) & 15;
                    f32::from(q as i8 - 8) * scales[i / 32].to_f32()
                })
                .collect()
        };
        let t = Tensor::from_vec(data, shape, &Device::Cpu).unwrap();
        tensors.insert(name, t);
    }
    candle_core::safetensors::save(&tensors, dir.join("model.safetensors")).unwrap();
    std::fs::write(
        dir.join("modules.json"),
        r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
            {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]"#,
    )
    .unwrap();
    std::fs::create_dir(dir.join("1_Pooling")).unwrap();
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 384, "pooling_mode_mean_tokens": true}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("sentence_bert_config.json"),
        r#"{"max_seq_length": 128, "do_lower_case": false}"#,
    )
    .unwrap();
}
