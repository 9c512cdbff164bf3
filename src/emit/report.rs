//! `report.json`: sizes and token counts of every surface and of the help pages.

use super::FileMap;
use crate::model::canonical::{sort_keys, to_pretty};
use crate::model::registry::Registry;

pub const FILE: &str = "report.json";

pub(crate) fn emit(
    reg: &Registry,
    help: &crate::model::help::PageTexts,
    memo: Option<&crate::compiler::memo::Memo>,
    page_memo: Option<&super::page_memo::PageMemo>,
) -> FileMap {
    // Each direct tool's origin: the report finds the direct surface's size tool by tool.
    let origins: Option<Vec<_>> = page_memo.and_then(|page_memo| {
        reg.ops
            .values()
            .filter(|r| !r.hidden)
            .map(|r| page_memo.origin(super::surfaces::DIRECT_TOOL_STEP, r, &[]))
            .collect()
    });
    let report = crate::compiler::report::build_memo(reg, help, memo, origins.as_deref());
    FileMap::from([(FILE.to_string(), to_pretty(&sort_keys(&report)))])
}
