//! `surfaces/`: the model-facing tool lists as provider-ready JSON. Each file is stamped and holds
//! a `tools` array to send as is: `gateway.json`, `direct.json`, `profiles/NAME.json`.

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

pub fn emit(reg: &Registry) -> FileMap {
    let mut files = FileMap::new();
    files.insert(
        "surfaces/gateway.json".into(),
        file(reg, "gateway", &surfaces::gateway(reg)),
    );
    files.insert(
        "surfaces/direct.json".into(),
        file(reg, "direct", &surfaces::direct(reg)),
    );
    for name in reg.profiles.keys() {
        let defs = surfaces::profile(reg, name);
        files.insert(
            format!("surfaces/profiles/{}.json", super::path_segment(name)),
            file(reg, &format!("profile {name}"), &defs),
        );
    }
    files
}
