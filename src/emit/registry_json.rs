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
        without_ops: false,
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

/// [`emit_spanned`] from each op's text already made ([`op_artifact_text`], in the registry's
/// op order): the header is written with `ops` empty and the texts are put in its place, as
/// serde_json's pretty writer would have put them. The build makes the texts once for two uses:
/// each op's digest ([`super::page_memo::OpDigests`]) and this file, instead of serializing every
/// record twice. The file is handed over as pieces, the texts among them as they are (see
/// [`Outputs::prepare_pieces`](super::outputs::Outputs::prepare_pieces)): put together, it was
/// a 40 MB copy at 10,000 ops.
///
/// [`op_artifact_text`]: crate::model::canonical::op_artifact_text
pub(crate) fn pieces_from_texts(
    reg: &Registry,
    texts: Vec<String>,
) -> (Vec<String>, RegistrySpans) {
    assert_eq!(texts.len(), reg.ops.len(), "one text per op");
    let canonical = CanonicalRegistry {
        registry: reg,
        form: RegistryForm::Artifact,
        spans: None,
        without_ops: true,
    };
    let mut header =
        serde_json::to_string_pretty(&canonical).expect("the registry always serializes");
    header.push('\n');
    // The `}` of the empty `ops`: the texts go before it.
    let at = crate::model::canonical::empty_ops_at(header.as_bytes()) + 1;
    let mut pieces = Vec::with_capacity(2 * texts.len() + 2);
    // The text between two ops' values (a comma, the next key), and the length before it.
    let mut glue = header[..at].to_string();
    let mut len = 0;
    let mut ops = std::collections::BTreeMap::new();
    if reg.ops.is_empty() {
        glue.push('}');
    }
    for (k, (op, value)) in reg.ops.keys().zip(texts).enumerate() {
        glue.push_str(if k == 0 { "\n    " } else { ",\n    " });
        glue.push_str(&serde_json::to_string(op).expect("a string serializes"));
        glue.push_str(": ");
        len += glue.len();
        pieces.push(std::mem::take(&mut glue));
        ops.insert(op.clone(), [len as u64, value.len() as u64]);
        len += value.len();
        pieces.push(value);
    }
    if !reg.ops.is_empty() {
        glue.push_str("\n  }");
    }
    glue.push_str(&header[at + 1..]);
    len += glue.len();
    pieces.push(glue);
    let spans = RegistrySpans {
        ops,
        bytes: len as u64,
    };
    (pieces, spans)
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

    /// Put together from each op's text, the file and its spans are those written in one go,
    /// byte for byte, on every repo catalog and on a registry of no op, with a description that
    /// holds `"ops": {}`.
    #[test]
    fn the_file_from_op_texts_is_the_file_written_whole() {
        for dir in crate::compiler::repo_and_fleet_catalogs() {
            let mut reg = crate::compiler::compile_repo_catalog(dir);
            // The header's text holds the characters of an empty `ops` elsewhere too.
            reg.description = Some("a header with \"ops\": {} in it".into());
            for _ in 0..2 {
                let texts = reg
                    .ops
                    .values()
                    .map(crate::model::canonical::op_artifact_text)
                    .collect();
                let (whole, whole_spans) = emit_spanned(&reg);
                let (pieces, spans) = pieces_from_texts(&reg, texts);
                assert_eq!(pieces.concat(), whole[FILE], "{dir}");
                assert_eq!(spans, whole_spans, "{dir}");
                reg.ops.clear();
            }
        }
    }

    /// The spans recorded while writing are those read back off the text, op for op, on every
    /// repo catalog (the example's and the fleets').
    #[test]
    fn recorded_spans_are_where_each_op_lies() {
        for dir in crate::compiler::repo_and_fleet_catalogs() {
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
