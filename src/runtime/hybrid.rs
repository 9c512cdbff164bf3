//! Hybrid ranking (feature `semantic`): the query is embedded with the model the op vectors were
//! built with, and its cosine to each op is fused with the lexical score (see
//! `SearchIndex::rank_fused`). Query embeddings are kept in a small LRU cache: a model asks the
//! same question again after a failed call.

use crate::model::registry::Registry;
use crate::semantic::{Encoder, OpVectors, VectorFile};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The default weight of the semantic score in the fusion (0 = lexical only, 1 = semantic only)
/// for a query the catalog's words cover; search raises it for one they barely cover
/// (`search::fusion_weight`). Chosen on the dev sets (docs/guide.md, semantic search), never on
/// the held-out split.
pub const DEFAULT_WEIGHT: f64 = 0.4;

/// Query embeddings kept: 1.5 MiB of vectors at 384 dimensions. `eval` embeds half as many at
/// a time ahead of searching them (see [`Hybrid::warm`]), so none is dropped before its search.
const CACHE: usize = 1024;

pub struct Hybrid {
    encoder: Arc<dyn Encoder>,
    vectors: OpVectors,
    weight: f64,
    cache: Mutex<lru::LruCache<String, Arc<Vec<f32>>>>,
}

/// What a program serving a registry folder chose for hybrid search.
#[derive(Debug, Clone, Default)]
pub struct HybridChoice {
    /// The sentence-transformer folder the vectors were built with (`--model`); the bundled
    /// model when unset.
    pub model: Option<PathBuf>,
    /// Overrides the registry's `[search] semantic_weight`.
    pub weight: Option<f64>,
}

impl Hybrid {
    /// Hybrid ranking from the `vectors.json` in `dir` (the folder `toolreg build` wrote), or
    /// `None` when there is none: search stays lexical. A file that cannot be read or that was
    /// made by another model or for another registry is an error naming it, never ignored.
    pub fn beside(
        dir: &Path,
        reg: &Registry,
        choice: &HybridChoice,
    ) -> Result<Option<Hybrid>, String> {
        let path = dir.join(crate::semantic::FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
        };
        let at = |e: String| format!("`{}`: {e}", path.display());
        let file = VectorFile::parse(&text).map_err(at)?;
        let encoder = crate::semantic::load_encoder(choice.model.as_deref()).map_err(|e| {
            match &choice.model {
                Some(_) => format!("the model folder did not load: {e}"),
                None => format!("the bundled encoder did not load: {e}"),
            }
        })?;
        Hybrid::new(reg, &file, encoder, choice.weight)
            .map(Some)
            .map_err(|e| {
                // The usual causes: `--model` given to build and not here, or the reverse.
                let bundled_vectors = file.model.name.starts_with("pocket-encoder/");
                match (&choice.model, bundled_vectors) {
                    (None, false) => at(format!(
                        "{e}; they were built with --model: pass the same --model DIR here"
                    )),
                    (Some(_), true) => at(format!(
                        "{e}; they were built with the bundled model: leave out --model, or rebuild with it"
                    )),
                    _ => at(e),
                }
            })
    }

    /// Hybrid ranking over `reg` with the vectors of `file`, refused unless they were made by
    /// `encoder`'s model for this registry. The weight is `weight` when given (a command-line
    /// flag), else the overlay's `[search] semantic_weight`, else `DEFAULT_WEIGHT`.
    pub fn new(
        reg: &Registry,
        file: &VectorFile,
        encoder: Arc<dyn Encoder>,
        weight: Option<f64>,
    ) -> Result<Hybrid, String> {
        let weight = weight
            .or(reg.search.semantic_weight)
            .unwrap_or(DEFAULT_WEIGHT);
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

    /// The encoder's model name, as its vectors record it.
    pub fn model_name(&self) -> &str {
        &self.encoder.identity().name
    }

    /// The hybrid `match` floors measured for this encoder, when it is one toolreg knows
    /// ([`super::search::known_hybrid_floors`]).
    pub fn known_floors(&self) -> Option<crate::model::registry::MatchFloors> {
        let identity = self.encoder.identity();
        super::search::known_hybrid_floors(&identity.name, &identity.weights)
    }

    /// Embeds the queries not cached yet in one call and caches them, so searching them next
    /// reads their vectors (an encoder embeds many texts at once far faster than one by one).
    /// At most the cache's size are kept; a batch that cannot be embedded is left to search,
    /// which embeds each query alone as it always does.
    pub fn warm(&self, queries: &[&str]) {
        let Ok(cache) = self.cache.lock() else {
            return;
        };
        let mut missing: Vec<&str> = queries
            .iter()
            .map(|q| q.trim())
            .filter(|q| !q.is_empty() && !cache.contains(*q))
            .collect();
        drop(cache);
        missing.sort_unstable();
        missing.dedup();
        missing.truncate(CACHE);
        let Ok(vectors) = self.encoder.embed(&missing) else {
            return;
        };
        if let Ok(mut cache) = self.cache.lock() {
            for (q, v) in missing.into_iter().zip(vectors) {
                cache.put(q.to_string(), Arc::new(v));
            }
        }
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
