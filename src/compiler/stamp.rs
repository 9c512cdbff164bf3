//! Stamp: the registry version, a content hash that changes with any semantic change and with
//! nothing else (not file names, file order or formatting).

use crate::model::canonical::{CanonicalRegistry, RegistryForm};
use crate::model::registry::{Registry, FORMAT_VERSION, GENERATOR};

/// `b3:` + the first 16 hex digits of blake3 over the generator, its format version and the
/// fully sorted compact JSON of the registry without its version and without `source` fields.
pub fn registry_version(reg: &Registry) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(format!("{GENERATOR}\0format {FORMAT_VERSION}\0").as_bytes());
    let canonical = CanonicalRegistry {
        registry: reg,
        form: RegistryForm::Hashed,
        spans: None,
        without_ops: false,
    };
    crate::model::canonical::hash_json(&mut hasher, &canonical);
    crate::model::canonical::short_digest(hasher.finalize())
}
