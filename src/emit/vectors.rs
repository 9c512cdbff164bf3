//! `vectors.json` (feature `semantic`): every op embedded, with the bundled encoder or the
//! sentence-transformer folder given by `--model`, for hybrid search. The previous build's file is the cache: ops whose text and model are unchanged keep
//! their vectors, so a rebuild after one edit embeds one op.

use super::FileMap;
use crate::model::diag::{Code, Diagnostic, Diagnostics};
use crate::model::registry::Registry;
use crate::semantic::{self, VectorFile};
use std::path::Path;

pub fn emit(
    reg: &Registry,
    previous: Option<&str>,
    model: Option<&Path>,
    diags: &mut Diagnostics,
) -> FileMap {
    let encoder = match semantic::load_encoder(model) {
        Ok(e) => e,
        Err(e) => {
            let which = match model {
                Some(_) => "the model folder",
                None => "the bundled encoder",
            };
            diags.push(Diagnostic::new(
                Code::Vectors,
                format!("{which} did not load: {e}"),
            ));
            return FileMap::new();
        }
    };
    // An unreadable or foreign previous file is only a cold cache.
    let previous = previous.and_then(|t| VectorFile::parse(t).ok());
    match semantic::build(reg, encoder.as_ref(), previous.as_ref()) {
        Ok((text, _embedded)) => FileMap::from([(semantic::FILE.to_string(), text)]),
        Err(e) => {
            diags.push(Diagnostic::new(
                Code::Vectors,
                format!("embedding the ops failed: {e}"),
            ));
            FileMap::new()
        }
    }
}
