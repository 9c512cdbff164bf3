//! A team's own model: any BERT-family sentence-transformer folder (`config.json`,
//! `tokenizer.json`, `model.safetensors`, and the sentence-transformers `modules.json` /
//! `1_Pooling/config.json` when present), run with candle on the CPU.
//!
//! The folder is checked before a weight is read, and every refusal names the file and what to
//! do: another architecture, a Dense head, a pooling mode other than mean / CLS / max, PyTorch
//! pickles instead of safetensors, or a Git LFS pointer in place of the weights.
//!
//! A model folder comes from a hub: it is input, like a catalog. Only regular files are read
//! (links are followed, as the Hugging Face cache links to its blobs; a FIFO or a device is
//! refused), each under a size limit; the safetensors header is checked against the file's real
//! size, tensor by tensor, before the weights are mapped (never read whole); every `config.json`
//! field the model needs is checked for a sane value; and a panic or backtrace inside candle
//! becomes a one-line refusal.
//!
//! Why it is one file: every check on an untrusted model folder in one place (about 575 lines),
//! then its tests.

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

/// The largest `model.safetensors` loaded, in MiB, unless `TOOLREG_MODEL_MAX_MB` sets another.
pub const DEFAULT_MAX_WEIGHTS_MB: u64 = 2048;
/// The largest JSON file of a model folder (configs, `tokenizer.json`).
const MAX_SMALL_FILE: u64 = 64 << 20;
/// The largest safetensors header (a JSON index of the tensors).
const MAX_HEADER: u64 = 100 << 20;

fn max_weights() -> u64 {
    std::env::var("TOOLREG_MODEL_MAX_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_MAX_WEIGHTS_MB)
        .saturating_mul(1 << 20)
}

/// The size of `path`, a regular file (after links) of at most `limit` bytes.
fn regular_file(path: &Path, limit: u64, over: &str) -> Result<u64, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "`{}` is not a regular file (a folder, a FIFO or a device); a model folder holds the model's files themselves",
            path.display()
        ));
    }
    if meta.len() > limit {
        return Err(format!(
            "`{}` is {} MiB, over the limit of {} MiB; {over}",
            path.display(),
            meta.len() >> 20,
            limit >> 20
        ));
    }
    Ok(meta.len())
}

/// A JSON or tokenizer file of the folder, read whole after the checks of [`regular_file`].
fn read(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    regular_file(
        path,
        MAX_SMALL_FILE,
        "no config or tokenizer file is that large",
    )?;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SMALL_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    Ok(bytes)
}

/// A candle or tokenizers error in one line: no backtrace, at most 300 characters.
fn short(e: impl std::fmt::Display) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let mut cut: String = first.chars().take(300).collect();
    if cut.len() < first.len() {
        cut.push_str("...");
    }
    cut
}

/// Runs `f`, turning a panic inside it (candle asserts shapes by panicking) into an error.
fn no_panic<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        Err(format!(
            "{what} failed inside the model library: {}",
            short(why)
        ))
    })
}

/// Checks the `config.json` fields a BERT model is built from, so no absurd value reaches
/// candle (a zero head count divides by zero there; huge sizes allocate without bound).
fn check_config(raw: &serde_json::Value, path: &Path) -> Result<(), String> {
    let shown = path.display();
    let bounded = |k: &str, max: u64| -> Result<Option<u64>, String> {
        match raw.get(k) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
                _ => Err(format!(
                    "`{shown}`: `{k}` is {v}; it must be a whole number from 1 to {max}; fix the file or re-export the model"
                )),
            },
        }
    };
    let hidden = bounded("hidden_size", 16_384)?;
    let heads = bounded("num_attention_heads", 1_024)?;
    bounded("num_hidden_layers", 256)?;
    bounded("intermediate_size", 65_536)?;
    bounded("vocab_size", 1_000_000)?;
    bounded("max_position_embeddings", 65_536)?;
    bounded("type_vocab_size", 1_024)?;
    if let (Some(h), Some(n)) = (hidden, heads) {
        if h % n != 0 {
            return Err(format!(
                "`{shown}`: `num_attention_heads` ({n}) does not divide `hidden_size` ({h}); each head takes an equal share; fix the file or re-export the model"
            ));
        }
    }
    Ok(())
}

/// Element sizes of the safetensors dtypes.
fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2" => 1,
        "U16" | "I16" | "F16" | "BF16" => 2,
        "U32" | "I32" | "F32" => 4,
        "U64" | "I64" | "F64" => 8,
        _ => return None,
    })
}

/// Checks a safetensors file against its real `size` before any weight is read: the header's
/// length, then every tensor's dtype, shape and byte range.
fn check_safetensors(
    path: &Path,
    size: u64,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    use std::io::Read;
    let shown = path.display();
    let bad = |why: String| format!("`{shown}` is not a usable safetensors file: {why}");
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    let mut head = [0u8; 8];
    f.read_exact(&mut head)
        .map_err(|_| bad(format!("it has {size} bytes, fewer than a header")))?;
    if &head == b"version " {
        return Err(format!(
            "`{shown}` is a Git LFS pointer, not the weights; run `git lfs pull` in the model's repository"
        ));
    }
    let n = u64::from_le_bytes(head);
    if n > MAX_HEADER || n.saturating_add(8) > size {
        return Err(bad(format!(
            "its header claims {n} bytes, but the file has {size} (a truncated or foreign file)"
        )));
    }
    let mut header = Vec::new();
    f.take(n)
        .read_to_end(&mut header)
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    let index: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&header)
        .map_err(|e| bad(format!("its header is not a JSON object: {}", short(e))))?;
    let data = size - 8 - n;
    for (name, t) in index.iter().filter(|(k, _)| *k != "__metadata__") {
        let dtype = t
            .get("dtype")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?");
        let elem = dtype_size(dtype)
            .ok_or_else(|| bad(format!("tensor `{name}` has the unknown dtype `{dtype}`")))?;
        let shape: Option<Vec<u64>> = t
            .get("shape")
            .and_then(serde_json::Value::as_array)
            .and_then(|a| a.iter().map(serde_json::Value::as_u64).collect());
        let offsets: Option<Vec<u64>> = t
            .get("data_offsets")
            .and_then(serde_json::Value::as_array)
            .and_then(|a| a.iter().map(serde_json::Value::as_u64).collect());
        let (Some(shape), Some(offsets)) = (shape, offsets) else {
            return Err(bad(format!("tensor `{name}` has no shape or data_offsets")));
        };
        let [start, end] = offsets[..] else {
            return Err(bad(format!(
                "tensor `{name}` has no [start, end] data_offsets"
            )));
        };
        let bytes = shape
            .iter()
            .try_fold(elem, |acc, d| acc.checked_mul(*d))
            .ok_or_else(|| bad(format!("tensor `{name}` has an impossible shape {shape:?}")))?;
        if start > end || end > data || end - start != bytes {
            return Err(bad(format!(
                "tensor `{name}` ({dtype} {shape:?}, {bytes} bytes) claims bytes {start}..{end}, but the data holds {data}"
            )));
        }
    }
    Ok(index)
}

/// The word embeddings must be `[vocab_size, hidden_size]` as config.json says: checked on the
/// header, so a config for another model is refused before candle builds anything.
fn check_shapes(
    index: &serde_json::Map<String, serde_json::Value>,
    config: &serde_json::Value,
    weights: &Path,
) -> Result<(), String> {
    let Some((name, t)) = index
        .iter()
        .find(|(k, _)| k.ends_with("embeddings.word_embeddings.weight"))
    else {
        return Err(format!(
            "`{}` has no `embeddings.word_embeddings.weight` tensor: it is not a BERT model's weights",
            weights.display()
        ));
    };
    let shape: Vec<u64> = t["shape"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect())
        .unwrap_or_default();
    let want = [
        config["vocab_size"].as_u64().unwrap_or(0),
        config["hidden_size"].as_u64().unwrap_or(0),
    ];
    if shape != want {
        return Err(format!(
            "the weights in `{}` do not fit the BERT model config.json describes: `{name}` is {shape:?}, but config.json says vocab_size {} and hidden_size {}; use the config.json that came with these weights",
            weights.display(),
            want[0],
            want[1]
        ));
    }
    Ok(())
}

/// blake3 of a file, streamed (the weights are never held in memory whole).
fn hash_file(path: &Path) -> Result<String, String> {
    let mut hasher = blake3::Hasher::new();
    std::fs::File::open(path)
        .and_then(|f| hasher.update_reader(f).map(|_| ()))
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    Ok(short_hash(hasher.finalize()))
}

fn json(path: &Path) -> Result<serde_json::Value, String> {
    serde_json::from_slice(&read(path)?)
        .map_err(|e| format!("`{}` is not valid JSON: {e}", path.display()))
}

fn hash(bytes: &[u8]) -> String {
    short_hash(blake3::hash(bytes))
}

/// How the identity names a blake3 hash.
fn short_hash(h: blake3::Hash) -> String {
    format!("blake3:{}", &h.to_hex()[..16])
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
            let path = module_path(dir, module["path"].as_str().unwrap_or_default())
                .map_err(|why| format!("`{}`: {why}", modules.display()))?;
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
        if model_type == "bert" {
            check_config(&raw, &at("config.json"))?;
        }
        if model_type != "bert" {
            return Err(format!(
                "`{}` is a `{model_type}` model; toolreg loads BERT-family folders (model_type \"bert\"); other architectures need an Encoder of your own",
                at("config.json").display()
            ));
        }
        let config: Config = serde_json::from_value(raw.clone()).map_err(|e| {
            format!(
                "`{}` is not a BERT config: {}",
                at("config.json").display(),
                short(e)
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
        let size = regular_file(
            &weights_path,
            max_weights(),
            "set TOOLREG_MODEL_MAX_MB to load a larger model",
        )?;
        let index = check_safetensors(&weights_path, size)?;
        check_shapes(&index, &raw, &weights_path)?;
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
                hash_file(&weights_path)?,
                hash(&tokenizer_bytes),
                hash(&config_bytes),
                layout.pooling.name()
            ),
        };
        // Mapped, not read: the OS pages in what the model touches. Safety: the map is only read,
        // and a file changed under a running server is the operator's to avoid (as for any
        // mapped model file); the header was checked against the file's size above.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(&[&weights_path], DType::F32, &Device::Cpu)
        }
        .map_err(|e| format!("`{}`: {}", weights_path.display(), short(e)))?;
        let model = no_panic("loading the weights", || {
            BertModel::load(vb, &config).map_err(|e| {
                format!(
                    "the weights in `{}` do not fit the BERT model config.json describes: {}",
                    weights_path.display(),
                    short(e)
                )
            })
        })?;
        Ok(Folder {
            model,
            tokenizer,
            pooling: layout.pooling,
            identity,
        })
    }

    fn tokens(&self, text: &str) -> Result<tokenizers::Encoding, String> {
        let encoded = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| format!("tokenizing: {e}"))?;
        if encoded.get_ids().is_empty() {
            return Err("the text has no tokens".into());
        }
        Ok(encoded)
    }

    /// The vectors of texts that have the same number of tokens, in one pass of the model: no
    /// token is padding, and each row's arithmetic is the one a pass of that text alone does,
    /// so a text's vector does not depend on what it was batched with (a test checks it).
    fn forward(&self, batch: &[&tokenizers::Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let cpu = &Device::Cpu;
        let stack = |part: fn(&tokenizers::Encoding) -> &[u32]| {
            let rows: Vec<Tensor> = batch
                .iter()
                .map(|e| Tensor::new(part(e), cpu))
                .collect::<candle_core::Result<_>>()?;
            Tensor::stack(&rows, 0)
        };
        let ids = stack(tokenizers::Encoding::get_ids)?;
        let types = stack(tokenizers::Encoding::get_type_ids)?;
        let mask = stack(tokenizers::Encoding::get_attention_mask)?;
        // (texts, tokens, hidden), pooled over the tokens.
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let pooled = match self.pooling {
            Pooling::Mean => hidden.sum(1)?,
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Max => hidden.max(1)?,
        };
        pooled.to_vec2::<f32>()
    }
}

/// How many same-length texts one pass embeds: the attention scores take texts x tokens^2
/// floats a head, so long texts go a few at a time and short queries many.
fn batch_size(tokens: usize) -> usize {
    const SCORES: usize = 1 << 16;
    (SCORES / (tokens * tokens).max(1)).clamp(1, 64)
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

    /// Texts of one token count are embedded together (a pass over many short queries costs
    /// little more than over one: the weights are read once), each group in slices of
    /// [`batch_size`].
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let encoded: Vec<tokenizers::Encoding> = texts
            .iter()
            .map(|t| no_panic("tokenizing", || self.tokens(t)))
            .collect::<Result<_, _>>()?;
        let lengths: Vec<usize> = encoded.iter().map(|e| e.get_ids().len()).collect();
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in batches(&lengths) {
            let rows = no_panic("embedding", || {
                let encodings: Vec<&tokenizers::Encoding> =
                    batch.iter().map(|&i| &encoded[i]).collect();
                self.forward(&encodings)
                    .map_err(|e| format!("the model failed: {}", short(e)))
            })?;
            for (&i, row) in batch.iter().zip(rows) {
                vectors[i] = normalize(row)?;
            }
        }
        Ok(vectors)
    }
}

/// The passes that embed texts of these token counts: the indices of texts of one count, in
/// order, at most [`batch_size`] a pass.
fn batches(lengths: &[usize]) -> Vec<Vec<usize>> {
    let mut by_length: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (i, &n) in lengths.iter().enumerate() {
        by_length.entry(n).or_default().push(i);
    }
    by_length
        .into_iter()
        .flat_map(|(n, group)| {
            group
                .chunks(batch_size(n))
                .map(<[usize]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A module's folder as `modules.json` names it: a relative path inside the model folder. A
/// path with `..`, a root or a link out of the folder is refused: a downloaded model's listing
/// must not make the encoder read files elsewhere.
fn module_path(dir: &Path, rel: &str) -> Result<PathBuf, String> {
    let inside = Path::new(rel).components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    let refuse = || {
        format!(
            "the module path `{}` reaches outside the model folder",
            crate::model::diag::escape_controls(rel)
        )
    };
    if !inside {
        return Err(refuse());
    }
    let path = dir.join(rel);
    if let (Ok(real), Ok(base)) = (path.canonicalize(), dir.canonicalize()) {
        if !real.starts_with(&base) {
            return Err(refuse());
        }
    }
    Ok(path)
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

    /// Texts share a pass only with texts of their token count (no padding), short queries
    /// many at a time, long texts few, each text in exactly one pass.
    #[test]
    fn texts_are_batched_by_token_count() {
        assert_eq!(
            batches(&[5, 7, 5, 5, 7, 1]),
            vec![vec![5], vec![0, 2, 3], vec![1, 4]]
        );
        assert_eq!(
            (batch_size(8), batch_size(64), batch_size(512)),
            (64, 16, 1)
        );
        let lengths: Vec<usize> = (0..1000).map(|i| [12, 40, 300][i % 3]).collect();
        let passes = batches(&lengths);
        let mut seen: Vec<usize> = passes.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        for pass in &passes {
            let n = lengths[pass[0]];
            assert!(pass.iter().all(|&i| lengths[i] == n));
            assert!(pass.len() <= batch_size(n));
        }
        assert_eq!(passes.len(), 6 + 9 + 333);
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
        // Issue 35 (left from before): module paths stay inside the model folder.
        for outside in ["../elsewhere", "/etc", "1_Pooling/../../x"] {
            write(
                dir,
                "modules.json",
                &format!(
                    r#"[{{"path":"","type":"sentence_transformers.models.Transformer"}},
                        {{"path":"{outside}","type":"sentence_transformers.models.Pooling"}}]"#
                ),
            );
            assert!(
                error(dir).contains("reaches outside the model folder"),
                "{outside}"
            );
        }
        #[cfg(unix)]
        {
            let out = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(out.path(), dir.join("linked")).unwrap();
            write(
                dir,
                "modules.json",
                r#"[{"path":"","type":"sentence_transformers.models.Transformer"},
                    {"path":"linked","type":"sentence_transformers.models.Pooling"}]"#,
            );
            assert!(error(dir).contains("reaches outside the model folder"));
        }
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
