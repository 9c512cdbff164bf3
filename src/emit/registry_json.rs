//! `registry.json`: the registry IR as canonical JSON. Keys sorted everywhere except inside
//! `parameters_schema`, which keeps its declared property order for docs.

use super::lookup::RegistrySpans;
use super::FileMap;
use crate::model::canonical::{CanonicalRegistry, OpSpans, RegistryForm};
use crate::model::registry::Registry;

pub const FILE: &str = "registry.json";

pub fn emit(reg: &Registry) -> FileMap {
    emit_spanned(reg).0
}

/// `registry.json`, and where each op lies in it (for `lookup.json`), recorded as it is written.
pub(crate) fn emit_spanned(reg: &Registry) -> (FileMap, RegistrySpans) {
    let spans = OpSpans::default();
    let canonical = CanonicalRegistry {
        registry: reg,
        form: RegistryForm::Artifact,
        spans: Some(&spans),
    };
    // Sized for the whole text up front (3-4 KB an op is typical): a buffer that doubles as
    // it grows copies the text and touches twice the pages, a tenth of a registry-only build.
    let mut bytes = Vec::with_capacity((64 << 10) + reg.ops.len() * 4096);
    serde_json::to_writer_pretty(spans.writer(&mut bytes), &canonical)
        .expect("the registry always serializes");
    bytes.push(b'\n');
    let text = String::from_utf8(bytes).expect("serde_json writes UTF-8");
    let ops = reg.ops.keys().cloned().zip(spans.into_spans()).collect();
    let spans = RegistrySpans {
        ops,
        bytes: text.len() as u64,
    };
    (FileMap::from([(FILE.to_string(), text)]), spans)
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

    /// The spans recorded while writing are those read back off the text, op for op, on every
    /// repo catalog (the example's and the fleets').
    #[test]
    fn recorded_spans_are_where_each_op_lies() {
        let fleets = [
            "tests/catalogs/fleet/livemcp",
            "tests/catalogs/fleet/toolsdk",
        ];
        for dir in crate::compiler::REPO_CATALOGS.into_iter().chain(fleets) {
            let reg = crate::compiler::compile_repo_catalog(dir);
            let (files, spans) = emit_spanned(&reg);
            let text = &files[FILE];
            assert_eq!(spans.ops.len(), reg.ops.len(), "{dir}");
            assert_eq!(
                spans,
                super::super::lookup::read_back::registry_spans(text),
                "{dir}"
            );
        }
    }
}
