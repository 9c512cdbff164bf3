//! `registry.json`: the registry IR as canonical JSON. Keys sorted everywhere except inside
//! `parameters_schema`, which keeps its declared property order for docs.

use super::FileMap;
use crate::canonical::{sort_keys_except, to_pretty};
use crate::registry::Registry;

pub const FILE: &str = "registry.json";

pub fn emit(reg: &Registry) -> FileMap {
    let value = serde_json::to_value(reg).expect("the registry always serializes");
    let text = to_pretty(&sort_keys_except(&value, &["parameters_schema"]));
    FileMap::from([(FILE.to_string(), text)])
}
