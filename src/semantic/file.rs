//! `vectors.json`: the artifact `toolreg build --emit vectors` writes and the runtime loads. The
//! header says which model made the vectors and for which registry; each op carries a hash of
//! the text its vector came from, so the previous file is the cache of the next build.

use super::{op_phrasings, op_text, Encoder, ModelIdentity};
use crate::model::registry::Registry;
use serde::{Deserialize, Serialize};

fn text_hash(text: &str) -> String {
    // FNV-1a, 64 bits: a change detector for the cache, not a security boundary, and the
    // runtime (which checks it) must not need the compiler's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The file name inside the output folder.
pub const FILE: &str = "vectors.json";
const FORMAT: &str = "toolreg-vectors/1";

/// One op's entry: which op, and a hash of the text its vector came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorEntry {
    pub op: String,
    pub text: String,
}

/// `vectors.json`: the header, and every op's vector as f16 (little-endian), base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorFile {
    pub format: String,
    pub model: ModelIdentity,
    pub registry_version: String,
    /// Ops in registry order (the order of `data`).
    pub ops: Vec<VectorEntry>,
    pub encoding: String,
    pub data: String,
}

/// Vectors ready for scoring: one unit vector per op, in registry order.
#[derive(Debug, Clone)]
pub struct OpVectors {
    pub model: ModelIdentity,
    pub vectors: Vec<Vec<f32>>,
}

impl VectorFile {
    pub fn parse(text: &str) -> Result<VectorFile, String> {
        let file: VectorFile =
            serde_json::from_str(text).map_err(|e| format!("not a vectors file: {e}"))?;
        if file.format != FORMAT || file.encoding != "f16le-base64" {
            return Err(format!(
                "vectors file format `{}` / `{}`; this toolreg reads {FORMAT} / f16le-base64",
                file.format, file.encoding
            ));
        }
        Ok(file)
    }

    fn decode(&self) -> Result<Vec<Vec<f32>>, String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .map_err(|e| format!("vectors data: {e}"))?;
        let dims = self.model.dimensions;
        if dims == 0 || bytes.len() != self.ops.len() * dims * 2 {
            return Err(format!(
                "vectors data holds {} bytes; {} ops of {dims} dimensions need {}",
                bytes.len(),
                self.ops.len(),
                self.ops.len() * dims * 2
            ));
        }
        Ok(bytes
            .chunks_exact(dims * 2)
            .map(|v| {
                v.chunks_exact(2)
                    .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect()
            })
            .collect())
    }

    /// The vectors for `reg`, after checking they were made for it by `model`: the same model,
    /// the same registry version, the same ops in the same order.
    pub fn for_registry(&self, reg: &Registry, model: &ModelIdentity) -> Result<OpVectors, String> {
        if &self.model != model {
            return Err(format!(
                "the vectors were made by `{}` ({} dimensions, {}), but search embeds queries with `{}` ({} dimensions, {}); rebuild the vectors with this model",
                self.model.name, self.model.dimensions, self.model.weights, model.name, model.dimensions, model.weights
            ));
        }
        if self.registry_version != reg.registry_version {
            return Err(format!(
                "the vectors were built for registry {}, but the registry is {}; rebuild both",
                self.registry_version, reg.registry_version
            ));
        }
        let same_ops = self.ops.len() == reg.ops.len()
            && self
                .ops
                .iter()
                .zip(reg.ops.keys())
                .all(|(e, op)| &e.op == op);
        if !same_ops {
            return Err("the vectors list other ops than the registry; rebuild both".into());
        }
        Ok(OpVectors {
            model: self.model.clone(),
            vectors: self.decode()?,
        })
    }
}

/// Embeds every op of `reg` with `encoder`, reusing the vectors of `previous` for ops whose text
/// and model are unchanged. Returns the file's text and how many ops were embedded anew.
pub fn build(
    reg: &Registry,
    encoder: &dyn Encoder,
    previous: Option<&VectorFile>,
) -> Result<(String, usize), String> {
    let model = encoder.identity();
    let reusable: std::collections::HashMap<&str, Vec<f32>> = previous
        .filter(|p| &p.model == model)
        .and_then(|p| p.decode().ok().map(|v| (p, v)))
        .map(|(p, vectors)| {
            p.ops
                .iter()
                .zip(vectors)
                .map(|(e, v)| (e.text.as_str(), v))
                .collect()
        })
        .unwrap_or_default();
    // Each op's texts: its own, then the overlay's phrasings (when_to_use, queries). Its vector
    // is their normalized mean, so an op is found near the way its users ask for it (usage
    // embeddings, as Tool2Vec measured); an op with no phrasings keeps its text's vector.
    let texts: Vec<Vec<String>> = reg
        .ops
        .values()
        .map(|r| {
            let mut t = vec![op_text(r)];
            t.extend(op_phrasings(r));
            t
        })
        .collect();
    // An op without phrasings keeps its text's hash (earlier files stay a valid cache); with
    // them, NUL separates the texts (a control character the poisoning lint refuses in
    // catalog text), so moving a line between description and phrasings changes the hash.
    let hashes: Vec<String> = texts.iter().map(|t| text_hash(&t.join("\0"))).collect();
    let missing: Vec<usize> = (0..texts.len())
        .filter(|&i| !reusable.contains_key(hashes[i].as_str()))
        .collect();
    let flat: Vec<&str> = missing
        .iter()
        .flat_map(|&i| texts[i].iter().map(String::as_str))
        .collect();
    let mut embedded = encoder.embed(&flat)?.into_iter();
    let mut fresh: std::collections::HashMap<usize, Vec<f32>> = Default::default();
    for &i in &missing {
        let parts: Vec<Vec<f32>> = embedded.by_ref().take(texts[i].len()).collect();
        if parts.len() != texts[i].len() {
            return Err("the encoder returned fewer vectors than texts".into());
        }
        fresh.insert(i, mean_unit(&parts, model.dimensions));
    }
    let mut bytes = Vec::with_capacity(texts.len() * model.dimensions * 2);
    for (i, hash) in hashes.iter().enumerate() {
        let v = match fresh.remove(&i) {
            Some(v) => v,
            None => reusable[hash.as_str()].clone(),
        };
        if v.len() != model.dimensions {
            return Err(format!(
                "the encoder returned {} dimensions, not {}",
                v.len(),
                model.dimensions
            ));
        }
        for x in v {
            bytes.extend_from_slice(&half::f16::from_f32(x).to_le_bytes());
        }
    }
    use base64::Engine;
    let file = VectorFile {
        format: FORMAT.into(),
        model: model.clone(),
        registry_version: reg.registry_version.clone(),
        ops: reg
            .ops
            .keys()
            .zip(&hashes)
            .map(|(op, h)| VectorEntry {
                op: op.clone(),
                text: h.clone(),
            })
            .collect(),
        encoding: "f16le-base64".into(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    };
    let mut text = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok((text, missing.len()))
}

/// The normalized mean of unit vectors (one vector is returned as it is).
fn mean_unit(parts: &[Vec<f32>], dims: usize) -> Vec<f32> {
    if parts.len() == 1 {
        return parts[0].clone();
    }
    let mut sum = vec![0.0f32; dims];
    for p in parts {
        for (s, x) in sum.iter_mut().zip(p) {
            *s += x;
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        sum.iter_mut().for_each(|x| *x /= norm);
    }
    sum
}
