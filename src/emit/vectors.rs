//! `vectors.json` (feature `semantic`): every op embedded with the bundled encoder, for hybrid
//! search. The previous build's file is the cache: ops whose text and model are unchanged keep
//! their vectors, so a rebuild after one edit embeds one op.

use super::FileMap;
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::registry::Registry;
use crate::semantic::{self, Bundled, VectorFile};

pub fn emit(reg: &Registry, previous: Option<&str>, diags: &mut Diagnostics) -> FileMap {
    let encoder = match Bundled::load() {
        Ok(e) => e,
        Err(e) => {
            diags.push(Diagnostic::new(
                Code::Vectors,
                format!("the bundled encoder did not load: {e}"),
            ));
            return FileMap::new();
        }
    };
    // An unreadable or foreign previous file is only a cold cache.
    let previous = previous.and_then(|t| VectorFile::parse(t).ok());
    match semantic::build(reg, &encoder, previous.as_ref()) {
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
