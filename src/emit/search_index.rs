//! `search.json` (feature `runtime`): the search index of the registry, built at build time so
//! a cold `toolreg search` or `eval` reads it instead of building it (issue 33). Its header names
//! the registry version, toolreg's version and the index format; an index that does not match
//! is never read (search builds its own, as without the file).

use super::FileMap;
use crate::model::registry::Registry;
use crate::runtime::search::{SearchIndex, INDEX_FILE};

pub fn emit(reg: &Registry) -> FileMap {
    FileMap::from([(INDEX_FILE.to_string(), SearchIndex::to_artifact(reg))])
}
