//! A team's own model: any BERT-family sentence-transformer folder (`config.json`,
//! `tokenizer.json`, `model.safetensors`, and the sentence-transformers `modules.json` /
//! `1_Pooling/config.json` when present), run with candle on the CPU.
//!
//! The folder is checked before a weight is read, and every refusal names the file and what to
//! do: another architecture, a Dense head, a pooling mode other than mean / CLS / max, PyTorch
//! pickles instead of safetensors, or a Git LFS pointer in place of the weights.

use super::{Encoder, ModelIdentity};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::{Path, PathBuf};
use tokenizers::{Tokenizer, TruncationParams};

/// How token vectors become one sentence vector (sentence-transformers' Pooling module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    /// Mean over the tokens (also `mean_sqrt_len`: the same direction, and vectors are
    /// normalized).
    Mean,
    /// The first token's vector.
    Cls,
    /// The maximum of each dimension over the tokens.
    Max,
}

impl Pooling {
    fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::Max => "max",
        }
    }
}

/// Where the folder's parts are, found from `modules.json` (or the usual names without one).
#[derive(Debug)]
struct Layout {
    /// The folder holding config.json, tokenizer.json and model.safetensors.
    transformer: PathBuf,
    pooling: Pooling,
    /// `max_seq_length` from sentence_bert_config.json.
    max_tokens: Option<usize>,
}

/// A BERT sentence-transformer loaded from a folder.
pub struct Folder {
    model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    identity: ModelIdentity,
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))
}

fn json(path: &Path) -> Result<serde_json::Value, String> {
    serde_json::from_slice(&read(path)?)
        .map_err(|e| format!("`{}` is not valid JSON: {e}", path.display()))
}

fn hash(bytes: &[u8]) -> String {
    format!("blake3:{}", &blake3::hash(bytes).to_hex()[..16])
}

fn layout(dir: &Path) -> Result<Layout, String> {
    if !dir.is_dir() {
        return Err(format!(
            "`{}` is not a folder; give the folder of a BERT sentence-transformer (config.json, tokenizer.json, model.safetensors)",
            dir.display()
        ));
    }
    let mut transformer = None;
    let mut pooling_dir = None;
    let modules = dir.join("modules.json");
    if modules.exists() {
        let list = json(&modules)?;
        let list = list
            .as_array()
            .ok_or_else(|| format!("`{}` is not a list of modules", modules.display()))?;
        for module in list {
            let kind = module["type"].as_str().unwrap_or_default();
            let path = dir.join(module["path"].as_str().unwrap_or_default());
            match kind.rsplit('.').next().unwrap_or_default() {
                "Transformer" if transformer.is_none() => transformer = Some(path),
                // A second Pooling module writes another output (e.g. `query_embedding`);
                // `sentence_embedding` comes from the first.
                "Pooling" => {
                    pooling_dir.get_or_insert(path);
                }
                // Vectors are normalized anyway.
                "Normalize" => {}
                _ => {
                    return Err(format!(
                        "`{}` lists a `{kind}` module; toolreg runs Transformer, Pooling and Normalize modules only (a Dense head or another module needs an Encoder of your own)",
                        modules.display()
                    ))
                }
            }
        }
    }
    let transformer = match transformer {
        Some(t) => t,
        // Older exports keep the transformer in 0_Transformer/.
        None if !dir.join("config.json").exists() && dir.join("0_Transformer").is_dir() => {
            dir.join("0_Transformer")
        }
        None => dir.to_path_buf(),
    };
    if !transformer.join("config.json").exists() {
        return Err(format!(
            "`{}` has no config.json; give the folder of a BERT sentence-transformer (config.json, tokenizer.json, model.safetensors)",
            transformer.display()
        ));
    }
    let pooling_dir = pooling_dir.or_else(|| {
        let p = dir.join("1_Pooling");
        p.is_dir().then_some(p)
    });
    let pooling = match pooling_dir {
        Some(p) => pooling_mode(&p.join("config.json"))?,
        None => Pooling::Mean,
    };
    let max_tokens = [dir, transformer.as_path()]
        .iter()
        .map(|d| d.join("sentence_bert_config.json"))
        .find(|p| p.exists())
        .map(|p| json(&p))
        .transpose()?
        .and_then(|v| v["max_seq_length"].as_u64())
        .map(|n| n as usize);
    Ok(Layout {
        transformer,
        pooling,
        max_tokens,
    })
}

fn pooling_mode(path: &Path) -> Result<Pooling, String> {
    let config = json(path)?;
    let on = |key: &str| config[key].as_bool().unwrap_or(false);
    let modes = [
        ("pooling_mode_mean_tokens", Some(Pooling::Mean)),
        ("pooling_mode_mean_sqrt_len_tokens", Some(Pooling::Mean)),
        ("pooling_mode_cls_token", Some(Pooling::Cls)),
        ("pooling_mode_max_tokens", Some(Pooling::Max)),
        ("pooling_mode_weightedmean_tokens", None),
        ("pooling_mode_lasttoken", None),
    ];
    let chosen: Vec<_> = modes.iter().filter(|(key, _)| on(key)).collect();
    match chosen.as_slice() {
        [(_, Some(mode))] => Ok(*mode),
        [(key, None)] => Err(format!(
            "`{}` sets `{key}`; toolreg pools by mean, CLS token or max",
            path.display()
        )),
        [] => Err(format!(
            "`{}` sets no pooling mode (pooling_mode_mean_tokens, pooling_mode_cls_token or pooling_mode_max_tokens)",
            path.display()
        )),
        _ => Err(format!(
            "`{}` sets several pooling modes (concatenated); toolreg pools by exactly one",
            path.display()
        )),
    }
}

impl Folder {
    /// Loads the sentence-transformer in `dir`: checks its layout, config and files first, then
    /// reads the weights (any float type; computed in f32).
    pub fn load(dir: &Path) -> Result<Folder, String> {
        let layout = layout(dir)?;
        let at = |name: &str| layout.transformer.join(name);
        let config_bytes = read(&at("config.json"))?;
        let raw: serde_json::Value = serde_json::from_slice(&config_bytes)
            .map_err(|e| format!("`{}` is not valid JSON: {e}", at("config.json").display()))?;
        let model_type = raw["model_type"].as_str().unwrap_or("bert");
        if model_type != "bert" {
            return Err(format!(
                "`{}` is a `{model_type}` model; toolreg loads BERT-family folders (model_type \"bert\"); other architectures need an Encoder of your own",
                at("config.json").display()
            ));
        }
        let config: Config = serde_json::from_value(raw.clone()).map_err(|e| {
            format!(
                "`{}` is not a BERT config: {e}",
                at("config.json").display()
            )
        })?;
        let weights_path = at("model.safetensors");
        if !weights_path.exists() {
            let hint = if at("pytorch_model.bin").exists() {
                "it has only pytorch_model.bin: save the model with safetensors (transformers: `save_pretrained(dir, safe_serialization=True)`)"
            } else {
                "the weights must be in model.safetensors"
            };
            return Err(format!(
                "`{}` has no model.safetensors; {hint}",
                layout.transformer.display()
            ));
        }
        let weights = read(&weights_path)?;
        if weights.starts_with(b"version https://git-lfs") {
            return Err(format!(
                "`{}` is a Git LFS pointer, not the weights; run `git lfs pull` in the model's repository",
                weights_path.display()
            ));
        }
        let tokenizer_bytes = read(&at("tokenizer.json"))?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| {
            format!(
                "`{}` is not a tokenizers file: {e}",
                at("tokenizer.json").display()
            )
        })?;
        let max_tokens = layout
            .max_tokens
            .unwrap_or(512)
            .min(config.max_position_embeddings);
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| format!("tokenizer truncation: {e}"))?;
        let name = raw["_name_or_path"]
            .as_str()
            .filter(|n| !n.trim().is_empty())
            .map(str::to_string)
            .or_else(|| {
                std::fs::canonicalize(dir)
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            })
            .unwrap_or_else(|| "model".into());
        // What fixes the vector space: weights, tokenizer, config, pooling and truncation.
        let identity = ModelIdentity {
            name,
            dimensions: config.hidden_size,
            weights: format!(
                "{}+tokenizer:{}+config:{}+pooling:{}+max_tokens:{max_tokens}",
                hash(&weights),
                hash(&tokenizer_bytes),
                hash(&config_bytes),
                layout.pooling.name()
            ),
        };
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| format!("`{}`: {e}", weights_path.display()))?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            format!(
                "the weights in `{}` do not fit the BERT model config.json describes: {e}",
                weights_path.display()
            )
        })?;
        Ok(Folder {
            model,
            tokenizer,
            pooling: layout.pooling,
            identity,
        })
    }

    fn one(&self, text: &str) -> Result<Vec<f32>, String> {
        let encoded = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| format!("tokenizing: {e}"))?;
        if encoded.get_ids().is_empty() {
            return Err("the text has no tokens".into());
        }
        self.forward(
            encoded.get_ids(),
            encoded.get_type_ids(),
            encoded.get_attention_mask(),
        )
        .map_err(|e| format!("the model failed: {e}"))
        .and_then(normalize)
    }

    fn forward(&self, ids: &[u32], types: &[u32], mask: &[u32]) -> candle_core::Result<Vec<f32>> {
        let cpu = &Device::Cpu;
        let ids = Tensor::new(ids, cpu)?.unsqueeze(0)?;
        let types = Tensor::new(types, cpu)?.unsqueeze(0)?;
        let mask = Tensor::new(mask, cpu)?.unsqueeze(0)?;
        // (1, tokens, hidden); one text at a time, so no token is padding.
        let hidden = self.model.forward(&ids, &types, Some(&mask))?.squeeze(0)?;
        let pooled = match self.pooling {
            Pooling::Mean => hidden.sum(0)?,
            Pooling::Cls => hidden.get(0)?,
            Pooling::Max => hidden.max(0)?,
        };
        pooled.to_vec1::<f32>()
    }
}

fn normalize(v: Vec<f32>) -> Result<Vec<f32>, String> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if !norm.is_finite() || norm <= 0.0 {
        return Err("the model returned a zero or non-finite vector".into());
    }
    Ok(v.into_iter()
        .map(|x| (f64::from(x) / norm) as f32)
        .collect())
}

impl Encoder for Folder {
    fn identity(&self) -> &ModelIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        texts.iter().map(|t| self.one(t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn pooling_config(modes: &[&str]) -> String {
        let mut v = serde_json::json!({"word_embedding_dimension": 8});
        for m in modes {
            v[m] = true.into();
        }
        v.to_string()
    }

    fn error(dir: &Path) -> String {
        Folder::load(dir).err().expect("refused")
    }

    #[test]
    fn layouts_and_pooling_modes_are_read_from_sentence_transformers_files() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        write(dir, "config.json", "{}");
        // No modules.json and no pooling folder: the transformer at the top, mean pooling.
        let l = layout(dir).unwrap();
        assert_eq!((l.transformer.as_path(), l.pooling), (dir, Pooling::Mean));
        assert_eq!(l.max_tokens, None);
        // A real multi-pooling export (NoInstruct-small-Embedding-v0's modules.json): the first
        // Pooling module gives `sentence_embedding`.
        write(
            dir,
            "modules.json",
            r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
                {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
                {"idx":2,"name":"2","path":"2_Pooling","type":"sentence_transformers.models.Pooling"},
                {"idx":3,"name":"3","path":"3_Normalize","type":"sentence_transformers.models.Normalize"}]"#,
        );
        write(
            dir,
            "1_Pooling/config.json",
            &pooling_config(&["pooling_mode_cls_token"]),
        );
        write(
            dir,
            "2_Pooling/config.json",
            &pooling_config(&["pooling_mode_mean_tokens"]),
        );
        write(
            dir,
            "sentence_bert_config.json",
            r#"{"max_seq_length": 128}"#,
        );
        let l = layout(dir).unwrap();
        assert_eq!((l.pooling, l.max_tokens), (Pooling::Cls, Some(128)));
        write(
            dir,
            "1_Pooling/config.json",
            &pooling_config(&["pooling_mode_mean_sqrt_len_tokens"]),
        );
        assert_eq!(layout(dir).unwrap().pooling, Pooling::Mean);
        write(
            dir,
            "1_Pooling/config.json",
            &pooling_config(&["pooling_mode_max_tokens"]),
        );
        assert_eq!(layout(dir).unwrap().pooling, Pooling::Max);

        // An older export: the transformer in 0_Transformer/.
        let old = tempfile::tempdir().unwrap();
        write(old.path(), "0_Transformer/config.json", "{}");
        assert_eq!(
            layout(old.path()).unwrap().transformer,
            old.path().join("0_Transformer")
        );
    }

    #[test]
    fn unsupported_folders_are_refused_with_the_file_and_what_to_do() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        assert!(error(&dir.join("missing")).contains("is not a folder"));
        assert!(error(dir).contains("has no config.json"));

        write(dir, "config.json", r#"{"model_type": "mpnet"}"#);
        let e = error(dir);
        assert!(
            e.contains("`mpnet` model") && e.contains("config.json"),
            "{e}"
        );

        write(dir, "config.json", r#"{"model_type": "bert"}"#);
        assert!(error(dir).contains("is not a BERT config"));

        let bert = serde_json::to_string(&serde_json::json!({
            "model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "max_position_embeddings": 16, "type_vocab_size": 2,
            "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0
        }))
        .unwrap();
        write(dir, "config.json", &bert);
        assert!(error(dir).contains("the weights must be in model.safetensors"));
        write(dir, "pytorch_model.bin", "pickle");
        assert!(error(dir).contains("safe_serialization=True"));
        // What a clone without `git lfs pull` holds (NoInstruct-small-Embedding-v0's file).
        write(
            dir,
            "model.safetensors",
            "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 133462128\n",
        );
        assert!(error(dir).contains("Git LFS pointer"));

        write(
            dir,
            "modules.json",
            r#"[{"path":"","type":"sentence_transformers.models.Transformer"},
                {"path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#,
        );
        assert!(error(dir).contains("`sentence_transformers.models.Dense` module"));
        write(
            dir,
            "modules.json",
            r#"[{"path":"","type":"sentence_transformers.models.Transformer"},
                {"path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]"#,
        );
        write(
            dir,
            "1_Pooling/config.json",
            &pooling_config(&["pooling_mode_lasttoken"]),
        );
        assert!(error(dir).contains("`pooling_mode_lasttoken`"));
        write(
            dir,
            "1_Pooling/config.json",
            &pooling_config(&["pooling_mode_mean_tokens", "pooling_mode_max_tokens"]),
        );
        assert!(error(dir).contains("several pooling modes"));
        write(dir, "1_Pooling/config.json", &pooling_config(&[]));
        assert!(error(dir).contains("no pooling mode"));
    }
}
