//! `report.json`: sizes and token counts of every surface and of the help pages.

use super::FileMap;
use crate::model::canonical::{sort_keys, to_pretty};
use crate::model::registry::Registry;

pub const FILE: &str = "report.json";

pub fn emit(
    reg: &Registry,
    help: &crate::model::help::PageTexts,
    memo: Option<&crate::compiler::memo::Memo>,
) -> FileMap {
    let report = crate::compiler::report::build_memo(reg, help, memo);
    FileMap::from([(FILE.to_string(), to_pretty(&sort_keys(&report)))])
}
