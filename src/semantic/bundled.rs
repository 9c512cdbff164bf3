//! The bundled encoder: paraphrase-MiniLM-L3-v2 compiled into the binary by pocket-encoder.

use super::{Encoder, ModelIdentity};

/// The bundled model: paraphrase-MiniLM-L3-v2 in 4-bit weights (pocket-encoder; offline).
pub struct Bundled {
    encoder: pocket_encoder::Encoder,
    identity: ModelIdentity,
}

impl Bundled {
    pub fn load() -> Result<Bundled, String> {
        let info = pocket_encoder::model_info();
        let encoder = pocket_encoder::Encoder::new().map_err(|e| e.to_string())?;
        Ok(Bundled {
            encoder,
            identity: ModelIdentity {
                name: info.id,
                dimensions: info.dimensions,
                weights: format!("{}+tokenizer:{}", info.revision, info.tokenizer_sha256),
            },
        })
    }
}

impl Encoder for Bundled {
    fn identity(&self) -> &ModelIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        // pocket-encoder takes at most 4096 texts (4 MiB) per call.
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(1024) {
            out.extend(self.encoder.embed(chunk).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }
}
