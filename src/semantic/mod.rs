//! Semantic ranking's shared parts (feature `semantic`): the `Encoder` trait and its two
//! implementations (the bundled model, and any BERT sentence-transformer folder), the text each op is embedded from, and the vector artifact (`vectors.json`) that
//! `toolreg build` writes and the runtime loads.
//!
//! Below both the compiler and the runtime: the compiler embeds ops, the runtime embeds queries,
//! and both must use the same model. The artifact records the model's identity, the registry
//! version and a hash of each op's text; a file from another model or registry is refused, and a
//! rebuild re-embeds only ops whose text changed.

mod bundled;
mod file;
mod folder;

pub use bundled::Bundled;
pub use file::{build, OpVectors, VectorEntry, VectorFile, FILE};
pub use folder::Folder;

use crate::model::registry::OpRecord;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// What a vector space is: two vectors compare only if their identities are equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelIdentity {
    /// The model and its preprocessing contract.
    pub name: String,
    pub dimensions: usize,
    /// A hash of the weights (and tokenizer) the vectors came from.
    pub weights: String,
}

/// A sentence encoder: unit-length vectors, one per text, in order.
pub trait Encoder: Send + Sync {
    fn identity(&self) -> &ModelIdentity;
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
}

/// The encoder to embed with: the sentence-transformer folder `model` when given, else the
/// bundled model. The compiler and the runtime call this with the same choice.
pub fn load_encoder(model: Option<&Path>) -> Result<Arc<dyn Encoder>, String> {
    Ok(match model {
        Some(dir) => Arc::new(Folder::load(dir)?),
        None => Arc::new(Bundled::load()?),
    })
}

/// The text an op is embedded from: its name as words, then its summary and description
/// (the model reads 128 word pieces; what comes first counts).
pub fn op_text(r: &OpRecord) -> String {
    let name = r.op.replace(['.', '_', '-'], " ");
    let tool = r.tool_name.replace(['.', '_', '-'], " ");
    let mut text = format!("{name}. {tool}. {}", r.summary.trim());
    let description = r.description.trim();
    if !description.is_empty() && description != r.summary.trim() {
        text.push(' ');
        text.push_str(description);
    }
    // Inputs are capped (64 KiB per text in the bundled model); 2 KB is far past 128 pieces.
    let mut cut = text.len().min(2048);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text
}

/// The most phrasings of one op that are embedded (the overlay is the team's, but a generated
/// one can be long: the build's cost stays bounded).
pub const MAX_PHRASINGS: usize = 64;

/// The overlay's phrasings of an op (`when_to_use`, then `queries`), embedded beside its text:
/// its vector is their mean with the text's.
pub fn op_phrasings(r: &OpRecord) -> Vec<String> {
    r.when_to_use
        .iter()
        .chain(&r.queries)
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .take(MAX_PHRASINGS)
        .map(|t| crate::model::text::clip_chars(t, 2048).to_string())
        .collect()
}

/// Sets `RAYON_NUM_THREADS`, when it is unset, to the thread count candle would choose, so
/// that candle stops reading /proc/cpuinfo at every matrix product.
///
/// candle 0.11 asks `utils::get_num_threads()` at each matmul on the CPU, and with no
/// `RAYON_NUM_THREADS` that is `num_cpus::get_physical()`, which opens and parses
/// /proc/cpuinfo: the kernel formats a block per CPU, 80 us a read on this 2-core machine, 24
/// reads in one hybrid search with the bundled encoder. Set once to the same count, every later
/// call reads the environment instead; the encoders' threads and results are unchanged.
/// `benches/semantic.rs --quick` (three interleaved runs): hybrid search p50 with the query
/// embedded 9.7-13.5 ms -> 7.3-8.1 ms. A variable the caller set is left as it is.
///
/// # Safety
///
/// Setting an environment variable races with any other thread that reads or writes the
/// environment: call it while the process has one thread (toolreg's commands that embed call it
/// once their arguments are parsed). A program that embeds toolreg can call it first thing in
/// its `main`, or set the variable itself.
pub unsafe fn pin_thread_count() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let threads = candle_core::utils::get_num_threads();
        std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    }
}

/// Cosine of unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
