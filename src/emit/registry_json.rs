//! `registry.json`: the registry IR as canonical JSON. Keys sorted everywhere except inside
//! `parameters_schema`, which keeps its declared property order for docs.

use super::FileMap;
use crate::model::canonical::{CanonicalRegistry, RegistryForm};
use crate::model::registry::Registry;

pub const FILE: &str = "registry.json";

pub fn emit(reg: &Registry) -> FileMap {
    let canonical = CanonicalRegistry {
        registry: reg,
        form: RegistryForm::Artifact,
    };
    // Sized for the whole text up front (3-4 KB an op is typical): a buffer that doubles as
    // it grows copies the text and touches twice the pages, a tenth of a registry-only build.
    let mut bytes = Vec::with_capacity((64 << 10) + reg.ops.len() * 4096);
    serde_json::to_writer_pretty(&mut bytes, &canonical).expect("the registry always serializes");
    bytes.push(b'\n');
    let text = String::from_utf8(bytes).expect("serde_json writes UTF-8");
    FileMap::from([(FILE.to_string(), text)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streamed form holds exactly the registry's data (order aside) and reads back.
    #[test]
    fn streamed_json_equals_the_registry() {
        let reg = crate::compiler::compile_repo_catalog("definitions");
        let text = &emit(&reg)[FILE];
        let parsed: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(parsed, serde_json::to_value(&reg).unwrap());
        assert_eq!(Registry::from_slice(text.as_bytes()).unwrap(), reg);
    }
}
