//! `search.json` (feature `runtime`): the search index of the registry and the registry as search
//! sees it, written at build time so a cold `toolreg search` or `eval` reads this file alone
//! instead of parsing the registry and building the index (issue 33). Its header names the
//! registry version, toolreg's version, the index format and the built-in phrasing data's
//! digest; a file that does not match is never read (search builds its own, as without the
//! file).

use super::FileMap;
use crate::model::registry::Registry;
use crate::runtime::search::{SearchIndex, INDEX_FILE};

pub fn emit(reg: &Registry) -> FileMap {
    FileMap::from([(INDEX_FILE.to_string(), SearchIndex::to_artifact(reg))])
}
