//! Hybrid ranking (feature `semantic`): the query is embedded with the model the op vectors were
//! built with, and its cosine to each op is fused with the lexical score (see
//! `SearchIndex::rank_fused`). Query embeddings are kept in a small LRU cache: a model asks the
//! same question again after a failed call.

use crate::registry::Registry;
use crate::semantic::{Encoder, OpVectors, VectorFile};
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

/// The default weight of the semantic score in the fusion (0 = lexical only, 1 = semantic only),
/// chosen on the dev sets (docs/guide.md, semantic search), never on the held-out split.
pub const DEFAULT_WEIGHT: f64 = 0.3;

/// Query embeddings kept.
const CACHE: usize = 256;

pub struct Hybrid {
    encoder: Arc<dyn Encoder>,
    vectors: OpVectors,
    weight: f64,
    cache: Mutex<lru::LruCache<String, Arc<Vec<f32>>>>,
}

impl Hybrid {
    /// Hybrid ranking over `reg` with the vectors of `file`, refused unless they were made by
    /// `encoder`'s model for this registry.
    pub fn new(
        reg: &Registry,
        file: &VectorFile,
        encoder: Arc<dyn Encoder>,
        weight: f64,
    ) -> Result<Hybrid, String> {
        if !(0.0..=1.0).contains(&weight) {
            return Err(format!("semantic weight {weight} is not within 0..1"));
        }
        let vectors = file.for_registry(reg, encoder.identity())?;
        Ok(Hybrid {
            encoder,
            vectors,
            weight,
            cache: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(CACHE).expect("a positive size"),
            )),
        })
    }

    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// The query's cosine to every op, in registry order; `None` when the query cannot be
    /// embedded (blank), so search stays lexical.
    pub fn similarities(&self, query: &str) -> Option<Vec<f32>> {
        let q = query.trim();
        if q.is_empty() {
            return None;
        }
        let cached = self.cache.lock().ok()?.get(q).cloned();
        let v = match cached {
            Some(v) => v,
            None => {
                let v = Arc::new(self.encoder.embed(&[q]).ok()?.pop()?);
                if let Ok(mut c) = self.cache.lock() {
                    c.put(q.to_string(), v.clone());
                }
                v
            }
        };
        Some(
            self.vectors
                .vectors
                .iter()
                .map(|op| crate::semantic::cosine(op, &v))
                .collect(),
        )
    }
}
