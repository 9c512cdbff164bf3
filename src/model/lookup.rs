//! `lookup.json`: where each op and help page lies in `registry.json` and `help.json`, so a cold
//! process that needs one op or one page reads a small index and that slice, not two files
//! that grow with the catalog (a 10,000-op registry is 80 MB of JSON; parsing it whole cost a
//! cold `toolreg help` most of its time and memory).
//!
//! Never trusted blindly: the index names the registry version and both files' sizes, and each
//! slice must parse as the op or page it was asked for, carrying that version where pages do;
//! anything else answers `None` and the caller loads the files whole.

use crate::model::registry::{OpRecord, Registry};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The index's file name in an output folder.
pub const FILE: &str = "lookup.json";

/// `lookup.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lookup {
    pub generator: String,
    pub registry_version: String,
    /// Byte lengths of `registry.json` and `help.json` as written with this index.
    pub registry_bytes: u64,
    pub help_bytes: u64,
    /// The registry without its ops and tree: what an exec of one op needs besides the op.
    pub head: Registry,
    /// op -> [start, length] of its record in `registry.json`.
    pub ops: BTreeMap<String, [u64; 2]>,
    /// A tool's name (provider name or own name) -> its op, as `Registry::op_by_tool_name`
    /// resolves it, where that differs from the op.
    pub tools: BTreeMap<String, String>,
    /// Help path -> [short start, short length, full start, full length] in `help.json`.
    pub pages: BTreeMap<String, [u64; 4]>,
}

/// The longest slice read for one op or page (a bound on what a damaged index can cost).
const MAX_SLICE: u64 = 64 << 20;

impl Lookup {
    /// The index of an output folder, if it is there and matches both files' sizes.
    pub fn open(dir: &Path) -> Option<Lookup> {
        let lookup: Lookup = serde_json::from_slice(&std::fs::read(dir.join(FILE)).ok()?).ok()?;
        let size = |name: &str| std::fs::metadata(dir.join(name)).ok().map(|m| m.len());
        (size("registry.json")? == lookup.registry_bytes && size("help.json")? == lookup.help_bytes)
            .then_some(lookup)
    }

    /// The op `asked` names exactly (an op, or a tool's name), read alone.
    pub fn op(&self, dir: &Path, asked: &str) -> Option<OpRecord> {
        let op = match self.ops.contains_key(asked) {
            true => asked,
            false => self.tools.get(asked)?.as_str(),
        };
        let [start, len] = *self.ops.get(op)?;
        let record: OpRecord =
            serde_json::from_slice(&slice(&dir.join("registry.json"), start, len)?).ok()?;
        (record.op == op).then_some(record)
    }

    /// The registry holding only the op `asked` names (head and that op), for exec.
    pub fn registry_of(&self, dir: &Path, asked: &str) -> Option<Registry> {
        let record = self.op(dir, asked)?;
        let mut reg = self.head.clone();
        reg.ops.insert(record.op.clone(), record);
        Some(reg)
    }

    /// The help page at exactly `path` (`full` or short), read alone.
    pub fn page(&self, dir: &Path, path: &str, full: bool) -> Option<Value> {
        let [s, sl, f, fl] = *self.pages.get(path)?;
        let (start, len) = if full { (f, fl) } else { (s, sl) };
        let mut file = std::fs::File::open(dir.join("help.json")).ok()?;
        read_page(&mut file, start, len, &self.registry_version)
    }
}

/// The help page at `start`, `len` bytes long, in `help` (a `help.json`), if it reads back as a
/// page of `registry_version`.
pub fn read_page(
    help: &mut (impl Read + Seek),
    start: u64,
    len: u64,
    registry_version: &str,
) -> Option<Value> {
    let page: Value = serde_json::from_slice(&read_slice(help, start, len)?).ok()?;
    let version = page.get("registry_version").and_then(Value::as_str);
    (version == Some(registry_version)).then_some(page)
}

fn slice(file: &Path, start: u64, len: u64) -> Option<Vec<u8>> {
    read_slice(&mut std::fs::File::open(file).ok()?, start, len)
}

fn read_slice(f: &mut (impl Read + Seek), start: u64, len: u64) -> Option<Vec<u8>> {
    if len > MAX_SLICE {
        return None;
    }
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = vec![0; usize::try_from(len).ok()?];
    f.read_exact(&mut buf).ok()?;
    Some(buf)
}
