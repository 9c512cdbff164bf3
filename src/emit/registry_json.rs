//! `registry.json`: the registry IR as canonical JSON. Keys sorted everywhere except inside
//! `parameters_schema`, which keeps its declared property order for docs.

use super::FileMap;
use crate::canonical::{CanonicalRegistry, RegistryForm};
use crate::registry::Registry;

pub const FILE: &str = "registry.json";

pub fn emit(reg: &Registry) -> FileMap {
    let canonical = CanonicalRegistry {
        registry: reg,
        form: RegistryForm::Artifact,
    };
    let mut text =
        serde_json::to_string_pretty(&canonical).expect("the registry always serializes");
    text.push('\n');
    FileMap::from([(FILE.to_string(), text)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streamed form holds exactly the registry's data (order aside) and reads back.
    #[test]
    fn streamed_json_equals_the_registry() {
        let defs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("definitions");
        let reg = crate::compiler::compile(&defs).registry.unwrap();
        let text = &emit(&reg)[FILE];
        let parsed: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(parsed, serde_json::to_value(&reg).unwrap());
        assert_eq!(Registry::from_slice(text.as_bytes()).unwrap(), reg);
    }
}
