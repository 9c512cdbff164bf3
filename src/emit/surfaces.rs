//! `surfaces/`: the model-facing tool lists as provider-ready JSON. Each file is stamped and holds
//! a `tools` array to send as is: `gateway.json`, `direct.json`, `profiles/NAME.json`.

use super::page_memo::PageMemo;
use super::FileMap;
use crate::compiler::surfaces::{self, ToolDef};
use crate::model::registry::Registry;

fn file(reg: &Registry, surface: &str, defs: &[ToolDef]) -> String {
    // Key order is written out on purpose: the stamp first, the tools last, each tool as a
    // provider expects it (type, function{name, description, parameters}).
    #[derive(serde::Serialize)]
    struct File<'a> {
        #[serde(rename = "_generated")]
        generated: &'static str,
        generator: &'static str,
        registry_version: &'a str,
        surface: &'a str,
        tools: surfaces::ChatTools<'a>,
    }
    // Sized up front (about 1.8 KB a tool on the synthetic fleet catalog): a buffer that doubles
    // as it grows copies the file and faults in twice its pages. Room not used is never touched.
    let mut bytes = Vec::with_capacity((16 << 10) + defs.len() * BYTES_PER_TOOL);
    serde_json::to_writer_pretty(
        &mut bytes,
        &File {
            generated: "by toolreg from the tool definitions; do not edit",
            generator: crate::model::registry::GENERATOR,
            registry_version: &reg.registry_version,
            surface,
            tools: surfaces::ChatTools(defs),
        },
    )
    .expect("tool definitions always serialize");
    bytes.push(b'\n');
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// What a tool of a surface file is given up front; a larger one grows the buffer.
const BYTES_PER_TOOL: usize = 4 << 10;

/// The memo step of one op's tool in `direct.json`, as the file holds it.
pub(crate) const DIRECT_TOOL_STEP: &str = "surfaces direct tool 1";

/// One visible op's tool as `direct.json` holds it: pretty, two levels down (an element of the
/// `tools` array), between the line break and indentation before it and the comma after it.
fn direct_tool_text(r: &crate::model::registry::OpRecord) -> String {
    let def = surfaces::direct_def_full(r);
    let mut bytes = Vec::with_capacity(BYTES_PER_TOOL);
    crate::model::canonical::write_pretty_at(&mut bytes, &surfaces::ChatTool(&def), 2);
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// `direct.json`: the file of every visible op, put together from each op's tool text, which a
/// build with a memo takes from an earlier one for an unchanged op (serializing every tool was
/// most of this emitter's cost in a rebuild). The same bytes as [`file`] of [`surfaces::direct`]
/// (a test compares them).
fn direct_file(reg: &Registry, memo: Option<&PageMemo>) -> String {
    let frame = file(reg, "direct", &[]);
    // The tools are the file's last key: its empty array is the frame's last `[]`.
    let at = frame
        .rfind("[]")
        .expect("the frame ends with its empty tools array");
    let visible = || reg.ops.values().filter(|r| !r.hidden);
    let mut out = String::with_capacity(frame.len() + visible().count() * BYTES_PER_TOOL / 2);
    out.push_str(&frame[..=at]);
    let mut any = false;
    for r in visible() {
        out.push_str(if any { ",\n    " } else { "\n    " });
        any = true;
        match memo {
            Some(memo) => {
                out.push_str(&memo.unstamped_text(DIRECT_TOOL_STEP, r, &[], || direct_tool_text(r)))
            }
            None => out.push_str(&direct_tool_text(r)),
        }
    }
    if any {
        out.push_str("\n  ");
    }
    out.push_str(&frame[at + 1..]);
    out
}

pub(crate) fn emit(reg: &Registry, memo: Option<&PageMemo>) -> FileMap {
    let mut files = FileMap::new();
    files.insert(
        "surfaces/gateway.json".into(),
        file(reg, "gateway", &surfaces::gateway(reg)),
    );
    files.insert("surfaces/direct.json".into(), direct_file(reg, memo));
    for name in reg.profiles.keys() {
        let defs = surfaces::profile(reg, name);
        files.insert(
            format!("surfaces/profiles/{}.json", super::path_segment(name)),
            file(reg, &format!("profile {name}"), &defs),
        );
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `direct.json` put together tool by tool is the file serialized in one go, with a memo
    /// and without, on every repo catalog, on a catalog of one op and of none.
    #[test]
    fn the_direct_file_is_the_one_go_file() {
        let mut regs: Vec<(String, Registry)> = crate::compiler::REPO_CATALOGS
            .into_iter()
            .map(|dir| (dir.to_string(), crate::compiler::compile_repo_catalog(dir)))
            .collect();
        let mut one = regs[0].1.clone();
        let first = one.ops.keys().next().cloned().expect("an op");
        one.ops.retain(|op, _| *op == first);
        let mut none = one.clone();
        none.ops.clear();
        regs.push(("one op".into(), one));
        regs.push(("no op".into(), none));
        for (name, reg) in &regs {
            let one_go = file(reg, "direct", &surfaces::direct(reg));
            assert_eq!(direct_file(reg, None), one_go, "{name}");
            let memo = crate::compiler::memo::Memo::new("test");
            let (digests, _) = super::super::page_memo::OpDigests::with_texts(reg);
            let page_memo = PageMemo {
                memo: &memo,
                digests: &digests,
            };
            // Computed, then served.
            assert_eq!(direct_file(reg, Some(&page_memo)), one_go, "{name}");
            assert_eq!(direct_file(reg, Some(&page_memo)), one_go, "{name}");
        }
    }
}
