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
    let mut text = serde_json::to_string_pretty(&File {
        generated: "by toolreg from the tool definitions; do not edit",
        generator: crate::model::registry::GENERATOR,
        registry_version: &reg.registry_version,
        surface,
        tools: surfaces::ChatTools(defs),
    })
    .expect("tool definitions always serialize");
    text.push('\n');
    text
}

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
