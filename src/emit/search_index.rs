//! `search.json` (feature `runtime`): the search index of the registry and the registry as search
//! sees it, written at build time so a cold `toolreg search` or `eval` reads this file alone
//! instead of parsing the registry and building the index (issue 33). Its header names the
//! registry version, toolreg's version, the index format and the built-in phrasing data's
//! digest; a file that does not match is never read (search builds its own, as without the
//! file).
//!
//! An op an earlier build indexed takes its words from the build's memo, by its record's digest
//! and its entity's plural (all its words read).

use super::{FileMap, PageMemo};
use crate::model::registry::Registry;
use crate::runtime::search::{OpWords, SearchIndex, INDEX_FILE};

/// The memo step of one op's words ([`OpWords::as_text`]).
const WORDS_STEP: &str = "search.op_words";

pub(crate) fn emit(reg: &Registry, memo: Option<&PageMemo>) -> FileMap {
    // Op by op on this emitter's thread: the emitters already share every core.
    let words = reg.ops.values().map(|r| {
        let Some(m) = memo else {
            return OpWords::of(reg, r);
        };
        let plural = OpWords::plural(reg, r).unwrap_or_default();
        // An entry that passed the memo's check but does not read is made again.
        if let Some(w) = m
            .get(WORDS_STEP, r, &[plural])
            .and_then(|text| OpWords::from_text(&text))
        {
            return w;
        }
        let w = OpWords::of(reg, r);
        m.put(WORDS_STEP, r, &[plural], || w.as_text().to_string());
        w
    });
    FileMap::from([(
        INDEX_FILE.to_string(),
        SearchIndex::to_artifact_of(reg, words.collect()),
    )])
}
