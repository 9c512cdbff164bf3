//! Stamp: the registry version, a content hash that changes with any semantic change and with
//! nothing else (not file names, file order or formatting).

use crate::canonical::to_hash_bytes;
use crate::registry::{Registry, FORMAT_VERSION, GENERATOR};

/// `b3:` + the first 16 hex digits of blake3 over the generator, its format version and the
/// fully sorted compact JSON of the registry without its version and without `source` fields.
pub fn registry_version(reg: &Registry) -> String {
    let mut value = serde_json::to_value(reg).expect("the registry always serializes");
    if let Some(top) = value.as_object_mut() {
        top.remove("registry_version");
        if let Some(ops) = top.get_mut("ops").and_then(|o| o.as_object_mut()) {
            for rec in ops.values_mut() {
                if let Some(r) = rec.as_object_mut() {
                    r.remove("source");
                }
            }
        }
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(format!("{GENERATOR}\0format {FORMAT_VERSION}\0").as_bytes());
    hasher.update(&to_hash_bytes(&value));
    format!("b3:{}", &hasher.finalize().to_hex()[..16])
}
