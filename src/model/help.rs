//! Help lookup over the precomputed pages in `help.json` (runtime side: serde and strsim only).
//!
//! Every path has a `short` and a `full` page, written at build time. A lookup picks one, then
//! applies the request's flags: `include_examples: false` drops examples, `include_schemas: true`
//! adds the op's JSON Schema (from the registry). An unknown path never answers a bare "not
//! found": it returns the closest paths and the root's groups.

use crate::model::registry::Registry;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The path of the root page.
pub const ROOT: &str = "root";

/// `help.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelpDoc {
    pub generator: String,
    pub registry_version: String,
    pub pages: BTreeMap<String, HelpPages>,
    /// Pages not parsed yet, read from `help.json` when first asked for ([`HelpDoc::deferred`]):
    /// a server over a 10,000-op registry starts without parsing 60 MB of pages it may never
    /// serve. Never written.
    #[serde(skip)]
    deferred: Option<Arc<Deferred>>,
}

/// Where the pages of a `help.json` lie in it (from `lookup.json`), the file held open (a later
/// build replaces the file by renaming, so this one stays what was indexed), and the pages read
/// so far.
struct Deferred {
    file: std::sync::Mutex<std::fs::File>,
    at: BTreeMap<String, [u64; 4]>,
    read: std::sync::Mutex<std::collections::HashMap<String, HelpPages>>,
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Deferred({} pages)", self.at.len())
    }
}

impl PartialEq for Deferred {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The two formats of one path. Shared (`Arc`), so serving an unmodified page copies a pointer,
/// not the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelpPages {
    pub short: Arc<Value>,
    pub full: Arc<Value>,
}

/// Help pages as text: what a build holds while its emitters run. A page as a `Value` tree
/// takes several times the size of its text, and a 10,000-op build holds over 20,000 pages for
/// as long as its slowest emitter runs; `help.json` is written from these texts and the report
/// counts them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PageTexts {
    pub generator: String,
    pub registry_version: String,
    pub pages: BTreeMap<String, PageText>,
}

/// One path's pages, each as pretty JSON (two-space indent, starting at column 0), exactly as
/// `serde_json::to_string_pretty` writes the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageText {
    pub short: Box<str>,
    pub full: Box<str>,
    /// What made each page (short, full), when an earlier build's memo can answer for it: a
    /// digest of everything that shapes the page but the registry version. The report finds a
    /// page's size by it instead of hashing the page (20,000 pages, 58 MB, at 10,000 ops).
    pub origins: Option<[PageOrigin; 2]>,
}

/// See [`PageText::origins`].
pub type PageOrigin = [u8; 32];

/// The compact form of JSON text (what `serde_json::to_string` writes for the same value): every
/// space, tab and line break outside strings dropped. A JSON string holds no raw line break or
/// tab, so only the escape of a quote needs care. Strings, most of a page, are copied in runs
/// up to their closing quote.
pub fn compact_json(pretty: &str) -> String {
    let bytes = pretty.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'"' {
            if !b.is_ascii_whitespace() {
                out.push(b);
            }
            i += 1;
            continue;
        }
        // A string: through its closing quote (an escaped byte is skipped), or to the end.
        let mut end = i + 1;
        loop {
            let Some(k) = bytes
                .get(end..)
                .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
            else {
                end = bytes.len();
                break;
            };
            end += k + 1;
            if bytes[end - 1] == b'"' {
                break;
            }
            end += 1;
        }
        let end = end.min(bytes.len());
        out.extend_from_slice(&bytes[i..end]);
        i = end;
    }
    // Only ASCII whitespace was dropped, so the bytes are still the text's UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Short,
    Full,
}

/// A help call, as the gateway's help tool takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HelpRequest {
    pub path: String,
    pub format: Format,
    pub include_examples: bool,
    pub include_schemas: bool,
    /// A later page of a paged directory (`"2"`, as a page's `next_page` says: `root@2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl Default for HelpRequest {
    fn default() -> Self {
        HelpRequest {
            path: ROOT.into(),
            format: Format::Short,
            include_examples: true,
            include_schemas: false,
            cursor: None,
        }
    }
}

impl HelpRequest {
    pub fn path(path: impl Into<String>) -> Self {
        HelpRequest {
            path: path.into(),
            ..Default::default()
        }
    }
}

impl HelpDoc {
    pub fn from_slice(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// Pages built in memory (as the help emitter builds them).
    pub fn new(
        generator: String,
        registry_version: String,
        pages: BTreeMap<String, HelpPages>,
    ) -> Self {
        HelpDoc {
            generator,
            registry_version,
            pages,
            deferred: None,
        }
    }

    /// The pages of the `help.json` in `dir`, each read and parsed when first asked for, where
    /// they lie by `lookup` (that folder's `lookup.json`, opened with [`Lookup::open`], which
    /// checks it against both files' sizes). A page that does not read back as a page of this
    /// registry version answers as an unknown path: the file is never trusted past what it
    /// proves.
    ///
    /// [`Lookup::open`]: crate::model::lookup::Lookup::open
    pub fn deferred(
        dir: &std::path::Path,
        lookup: crate::model::lookup::Lookup,
    ) -> std::io::Result<Self> {
        let file = std::fs::File::open(dir.join("help.json"))?;
        Ok(HelpDoc {
            generator: lookup.generator,
            registry_version: lookup.registry_version,
            pages: BTreeMap::new(),
            deferred: Some(Arc::new(Deferred {
                file: std::sync::Mutex::new(file),
                at: lookup.pages,
                read: Default::default(),
            })),
        })
    }

    /// The pages held in memory as text (a build's pages; deferred pages are not read).
    pub fn texts(&self) -> PageTexts {
        let pretty = |v: &Value| {
            serde_json::to_string_pretty(v)
                .unwrap_or_default()
                .into_boxed_str()
        };
        PageTexts {
            generator: self.generator.clone(),
            registry_version: self.registry_version.clone(),
            pages: self
                .pages
                .iter()
                .map(|(path, p)| {
                    let text = PageText {
                        short: pretty(&p.short),
                        full: pretty(&p.full),
                        origins: None,
                    };
                    (path.clone(), text)
                })
                .collect(),
        }
    }

    /// Whether there is a page at exactly `path`.
    pub fn has(&self, path: &str) -> bool {
        self.pages.contains_key(path)
            || self
                .deferred
                .as_ref()
                .is_some_and(|d| d.at.contains_key(path))
    }

    /// Every page path, in order.
    pub fn paths(&self) -> Box<dyn Iterator<Item = &String> + '_> {
        match &self.deferred {
            Some(d) => Box::new(self.pages.keys().chain(d.at.keys())),
            None => Box::new(self.pages.keys()),
        }
    }

    /// The pages at exactly `path`, read now if they were deferred.
    pub fn get(&self, path: &str) -> Option<HelpPages> {
        if let Some(p) = self.pages.get(path) {
            return Some(p.clone());
        }
        let d = self.deferred.as_ref()?;
        if let Some(p) = d.read.lock().ok()?.get(path) {
            return Some(p.clone());
        }
        let [s, sl, f, fl] = *d.at.get(path)?;
        let page = |start: u64, len: u64| {
            let mut file = d.file.lock().ok()?;
            let page =
                crate::model::lookup::read_page(&mut *file, start, len, &self.registry_version);
            page.map(Arc::new)
        };
        let pages = HelpPages {
            short: page(s, sl)?,
            full: page(f, fl)?,
        };
        d.read.lock().ok()?.insert(path.to_string(), pages.clone());
        Some(pages)
    }

    /// The page for a request. Paths are matched exactly, then as a tool name (the answer says
    /// which path it served); anything else gets an `UNKNOWN_PATH` answer with the closest paths.
    pub fn lookup(&self, reg: &Registry, req: &HelpRequest) -> Arc<Value> {
        if crate::model::text::over_name_limit(&req.path) {
            // Longer than any page name: unknown at once, without a closest search.
            return Arc::new(self.unknown_without_suggestions(reg, &req.path));
        }
        let with_cursor;
        let asked = match req.cursor.as_deref().map(str::trim) {
            // A cursor names a page of the path (`2`, or the whole `root@2` a page gave).
            Some(c) if !c.is_empty() && !crate::model::text::over_name_limit(c) => {
                let c = c.rsplit('@').next().unwrap_or(c);
                let base = req.path.trim();
                let base = if base.is_empty() { ROOT } else { base };
                with_cursor = format!("{}@{c}", base.split('@').next().unwrap_or(base));
                with_cursor.as_str()
            }
            _ => req.path.trim(),
        };
        let (path, resolved_from) = if asked.is_empty() {
            (ROOT.to_string(), None)
        } else if self.has(asked) {
            (asked.to_string(), None)
        } else if let Some(r) = reg.op_by_tool_name(asked) {
            (r.op.clone(), Some(asked))
        } else if self.has(&asked.to_lowercase()) {
            (asked.to_lowercase(), Some(asked))
        } else {
            return Arc::new(self.unknown(reg, asked));
        };
        let Some(pages) = self.get(&path) else {
            return Arc::new(self.unknown(reg, asked));
        };
        let shared = match req.format {
            Format::Short => &pages.short,
            Format::Full => &pages.full,
        };
        let untouched = resolved_from.is_none() && req.include_examples && !req.include_schemas;
        if untouched {
            return Arc::clone(shared);
        }
        let mut page = Value::clone(shared);
        if let Some(obj) = page.as_object_mut() {
            if let Some(from) = resolved_from {
                obj.insert("resolved_from".into(), json!(from));
            }
            if !req.include_examples {
                obj.remove("examples");
            }
            if req.include_schemas {
                if let Some(r) = reg.ops.get(&path) {
                    obj.insert("schema".into(), r.parameters_schema.clone());
                } else if let Some(ops) = obj.get("ops").and_then(Value::as_array) {
                    let schemas: serde_json::Map<String, Value> = ops
                        .iter()
                        .filter_map(|o| o.get("op").and_then(Value::as_str))
                        .filter_map(|op| {
                            reg.ops
                                .get(op)
                                .map(|r| (op.to_string(), r.parameters_schema.clone()))
                        })
                        .collect();
                    obj.insert("schemas".into(), Value::Object(schemas));
                }
            }
        }
        Arc::new(page)
    }

    /// The closest known paths to `asked`: paths it is a suffix or prefix of first, then by
    /// similarity.
    pub fn closest(&self, asked: &str, n: usize) -> Vec<String> {
        let lower = asked.to_lowercase();
        let mut scored: Vec<(f64, &String)> = self
            .paths()
            .filter(|p| p.as_str() != ROOT && !p.contains('@'))
            .map(|p| {
                let mut score = strsim::jaro_winkler(&lower, p);
                if p.ends_with(&format!(".{lower}")) || p.starts_with(&format!("{lower}.")) {
                    score += 1.0;
                }
                // Shared segments in any order ("tasks.list" vs "onto.task.list").
                let segs: Vec<&str> = p.split('.').collect();
                let hits = lower
                    .split(['.', '_', ' '])
                    .filter(|s| {
                        segs.iter()
                            .any(|g| g == s || g.trim_end_matches('s') == s.trim_end_matches('s'))
                    })
                    .count();
                score += 0.25 * hits as f64;
                (score, p)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored.into_iter().take(n).map(|(_, p)| p.clone()).collect()
    }

    /// The unknown-path answer for `asked` with no suggestions, `asked` echoed cut to 64
    /// characters: for a name too long to look up, or one the caller may not see.
    pub fn unknown_without_suggestions(&self, reg: &Registry, asked: &str) -> Value {
        let asked = asked.trim();
        let cut = crate::model::text::clip_chars(asked, 64);
        let shown = if cut.len() < asked.len() {
            format!("{cut}…")
        } else {
            cut.to_string()
        };
        self.unknown_page(reg, &shown, Vec::new())
    }

    fn unknown(&self, reg: &Registry, asked: &str) -> Value {
        self.unknown_page(reg, asked, self.closest(asked, 5))
    }

    /// The unknown-path answer for a caller who sees only the paths `visible` lets through:
    /// the closest paths come from those alone, so a hidden path and an invented one with the
    /// same words answer alike.
    pub fn unknown_among(
        &self,
        reg: &Registry,
        asked: &str,
        visible: &dyn Fn(&str) -> bool,
    ) -> Value {
        if crate::model::text::over_name_limit(asked) {
            return self.unknown_without_suggestions(reg, asked);
        }
        let asked = asked.trim();
        let closest: Vec<String> = self
            .closest(asked, usize::MAX)
            .into_iter()
            .filter(|p| visible(p))
            .take(5)
            .collect();
        self.unknown_page(reg, asked, closest)
    }

    fn unknown_page(&self, reg: &Registry, asked: &str, closest: Vec<String>) -> Value {
        let help = &reg.gateway.help;
        let groups = self
            .get(ROOT)
            .and_then(|p| p.short.get("groups").cloned())
            .unwrap_or(Value::Array(Vec::new()));
        let next = match closest.first() {
            Some(c) => format!("Call {help} with {{\"path\": \"{c}\"}}, or with {{\"path\": \"root\"}} to see every group."),
            None => format!("Call {help} with {{\"path\": \"root\"}} to see every group."),
        };
        json!({
            "path": asked,
            "error": {
                "code": "UNKNOWN_PATH",
                "message": format!("`{asked}` is not a help path, op or tool name."),
                "closest": closest,
                "next_action": next,
            },
            "groups": groups,
            "registry_version": self.registry_version,
        })
    }
}

#[cfg(test)]
mod text_tests {
    use super::*;

    /// Whitespace inside strings, escaped quotes and backslashes, and non-ASCII text survive;
    /// whitespace between tokens goes.
    #[test]
    fn compact_json_is_what_serde_writes_compact() {
        let v = json!({
            "a b": " two  spaces ",
            "quote": "say \"hi\" \\ then",
            "ends in backslash": "C:\\",
            "lines": "one\ntwo\tthree",
            "uni": "Привет, 世界 — ok",
            "empty": {}, "list": [], "nested": [1, 2.5, {"x": [null, true]}],
        });
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        assert_ne!(pretty, serde_json::to_string(&v).unwrap());
        assert_eq!(compact_json(&pretty), serde_json::to_string(&v).unwrap());
    }

    /// On text that is not JSON (an unterminated string, a backslash at the very end, stray
    /// quotes) the run-copying scan drops what a byte-by-byte scan drops.
    #[test]
    fn compact_json_matches_a_byte_scan_on_any_text() {
        fn byte_scan(pretty: &str) -> String {
            let mut out = Vec::new();
            let (mut in_string, mut escaped) = (false, false);
            for &b in pretty.as_bytes() {
                if in_string {
                    out.push(b);
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                    }
                } else if !b.is_ascii_whitespace() {
                    in_string = b == b'"';
                    out.push(b);
                }
            }
            String::from_utf8(out).unwrap()
        }
        let parts = ["\"", "\\", " ", "\n", "a", "é", "{", ": ", "\\\"", "世"];
        // Every string of up to five parts.
        let mut texts = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| parts.iter().map(move |p| format!("{t}{p}")))
                .collect();
            texts.extend(longer);
            texts.dedup();
        }
        assert!(texts.len() > 10_000);
        for t in &texts {
            assert_eq!(compact_json(t), byte_scan(t), "{t:?}");
        }
    }
}
