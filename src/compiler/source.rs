//! Source files and positions: byte offsets to 1-based line:col, and JSON pointers to positions.
//!
//! serde_json gives values but no positions, so pointers are resolved against a jsonc-parser AST,
//! built only for files that need a position (entries at load time, diagnostics at the end).

use jsonc_parser::ast::Value as Ast;
use jsonc_parser::{CollectOptions, ParseOptions};

/// Start offsets of every line, and character counts at checkpoints, for offset -> line:col in
/// logarithmic time: a minified export (one line of megabytes) costs what a pretty one does.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
    /// (byte offset, characters before it), every `CHECKPOINT` bytes at a char boundary.
    checkpoints: Vec<(usize, usize)>,
}

const CHECKPOINT: usize = 4096;

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut checkpoints = vec![(0, 0)];
        let (mut at, mut chars) = (0, 0);
        while at + CHECKPOINT < text.len() {
            let mut next = at + CHECKPOINT;
            while !text.is_char_boundary(next) {
                next += 1;
            }
            chars += text[at..next].chars().count();
            checkpoints.push((next, chars));
            at = next;
        }
        LineIndex {
            starts,
            checkpoints,
        }
    }

    /// Characters in `text[..offset]` (`offset` at a char boundary).
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        let i = self.checkpoints.partition_point(|&(b, _)| b <= offset) - 1;
        let (b, c) = self.checkpoints[i];
        c + text[b..offset].chars().count()
    }

    /// 1-based line and column (in characters) of a byte offset into `text`.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let col = if text.is_char_boundary(offset) {
            self.chars_before(text, offset) - self.chars_before(text, start)
        } else {
            offset - start
        };
        (line + 1, col + 1)
    }
}

#[cfg(test)]
mod line_tests {
    use super::LineIndex;

    #[test]
    fn columns_count_characters_on_long_lines() {
        let text = format!("{}\n{}x", "é".repeat(5000), "ab".repeat(6000));
        let idx = LineIndex::new(&text);
        assert_eq!(idx.line_col(&text, 0), (1, 1));
        assert_eq!(idx.line_col(&text, 2 * 4000), (1, 4001));
        let second = 2 * 5000 + 1;
        assert_eq!(idx.line_col(&text, second), (2, 1));
        assert_eq!(idx.line_col(&text, second + 12000), (2, 12001));
        assert_eq!(idx.line_col(&text, text.len()), (2, 12002));
    }
}

/// Escapes one JSON pointer segment (RFC 6901).
pub fn pointer_segment(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn unescape_segment(s: &str) -> String {
    s.replace("~1", "/").replace("~0", "~")
}

fn strict() -> ParseOptions {
    ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        ..Default::default()
    }
}

/// A parsed position tree of one JSON text, able to resolve many pointers cheaply.
pub struct PositionTree<'a> {
    root: Option<Ast<'a>>,
}

impl<'a> PositionTree<'a> {
    pub fn parse(text: &'a str) -> Self {
        let root = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &strict())
            .ok()
            .and_then(|r| r.value);
        PositionTree { root }
    }

    /// Byte offset of the value a pointer names. When the pointer leads through a missing key,
    /// the offset of the deepest value that exists is returned, which is still the right place
    /// to look.
    pub fn offset(&self, pointer: &str) -> Option<usize> {
        let mut node = self.root.as_ref()?;
        if pointer.is_empty() {
            return Some(node.range().start);
        }
        for raw in pointer.trim_start_matches('/').split('/') {
            let seg = unescape_segment(raw);
            let next = match node {
                // The last of repeated keys: the value serde_json kept (TR038 names the repeat).
                Ast::Object(o) => o
                    .properties
                    .iter()
                    .rfind(|p| p.name.as_str() == seg)
                    .map(|p| &p.value),
                Ast::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.elements.get(i)),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        Some(node.range().start)
    }
}

trait Ranged {
    fn range(&self) -> jsonc_parser::common::Range;
}

impl Ranged for Ast<'_> {
    fn range(&self) -> jsonc_parser::common::Range {
        match self {
            Ast::StringLit(v) => v.range,
            Ast::NumberLit(v) => v.range,
            Ast::BooleanLit(v) => v.range,
            Ast::Object(v) => v.range,
            Ast::Array(v) => v.range,
            Ast::NullKeyword(v) => v.range,
        }
    }
}

/// One input file as read: its path relative to the definitions folder, how to show it to the
/// user, and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative to the definitions folder, `/`-separated: what the registry records.
    pub rel: String,
    /// As the user would type it (the definitions folder as given, joined with `rel`).
    pub display: String,
    pub text: String,
    /// Built on the first position asked for: a build with nothing to report in a file never
    /// needs one.
    lines: std::sync::OnceLock<LineIndex>,
}

impl SourceFile {
    pub fn new(rel: String, display: String, text: String) -> Self {
        SourceFile {
            rel,
            display,
            text,
            lines: std::sync::OnceLock::new(),
        }
    }

    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        self.lines
            .get_or_init(|| LineIndex::new(&self.text))
            .line_col(&self.text, offset)
    }

    /// Resolves several pointers with one parse.
    pub fn locate_all(&self, pointers: &[&str]) -> Vec<Option<(usize, usize)>> {
        let tree = PositionTree::parse(&self.text);
        pointers
            .iter()
            .map(|p| tree.offset(p).map(|o| self.line_col(o)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_from_one() {
        let text = "ab\ncé d\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_col(text, 0), (1, 1));
        assert_eq!(idx.line_col(text, 3), (2, 1));
        // 'd' is after a two-byte é: byte 7, character column 4.
        assert_eq!(idx.line_col(text, 7), (2, 4));
    }

    #[test]
    fn pointers_resolve_to_value_positions() {
        let text = "[\n  {\"a\": {\"b/c\": [10, 20]}}\n]";
        let file = SourceFile::new("x.json".into(), "x.json".into(), text.into());
        let got = file.locate_all(&["/0", "/0/a/b~1c/1", "/0/missing"]);
        assert_eq!(got[0], Some((2, 3)));
        assert_eq!(got[1], Some((2, 22)));
        // A missing key falls back to the deepest existing value.
        assert_eq!(got[2], Some((2, 3)));
    }
}

/// Parses JSON like `serde_json::from_str::<Value>`, and returns the JSON pointer of every key
/// that repeats one earlier in its object (serde_json silently keeps the last; providers'
/// parsers may keep either, so the catalog would mean two things). Nesting is bounded by
/// serde_json's own recursion limit.
pub fn parse_json_checked(
    text: &str,
) -> Result<(serde_json::Value, Vec<String>), serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut dups = Vec::new();
    let mut path = String::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Checked {
        path: &mut path,
        dups: &mut dups,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, dups))
}

/// Builds a `Value` while recording repeated keys. `path` is the JSON pointer of the value
/// being read, one buffer extended and cut back as the reader descends (no string per value).
struct Checked<'a> {
    path: &'a mut String,
    dups: &'a mut Vec<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Checked<'_> {
    type Value = serde_json::Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Checked<'_> {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use std::fmt::Write;
        let mut items = Vec::new();
        let base = self.path.len();
        loop {
            let _ = write!(self.path, "/{}", items.len());
            let next = seq.next_element_seed(Checked {
                path: &mut *self.path,
                dups: &mut *self.dups,
            })?;
            self.path.truncate(base);
            match next {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(serde_json::Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut obj = serde_json::Map::new();
        let base = self.path.len();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push('/');
            if key.contains(['~', '/']) {
                self.path.push_str(&pointer_segment(&key));
            } else {
                self.path.push_str(&key);
            }
            if obj.contains_key(&key) {
                self.dups.push(self.path.clone());
            }
            let value = map.next_value_seed(Checked {
                path: &mut *self.path,
                dups: &mut *self.dups,
            })?;
            self.path.truncate(base);
            obj.insert(key, value);
        }
        Ok(serde_json::Value::Object(obj))
    }
}

#[cfg(test)]
mod checked_tests {
    use super::parse_json_checked;

    #[test]
    fn repeated_keys_are_found_at_every_depth_and_the_value_matches_serde_json() {
        let text =
            r#"[{"a": 1, "b": {"x": 1, "x": 2}, "a": 3}, {"c/d": [1, {"k": 0, "k": 1}]}, 1.5e3]"#;
        let (value, dups) = parse_json_checked(text).unwrap();
        assert_eq!(
            value,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        assert_eq!(dups, ["/0/b/x", "/0/a", "/1/c~1d/1/k"]);
        assert!(parse_json_checked("{\"a\": 1} x").is_err());
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(
            parse_json_checked(&deep).is_err(),
            "recursion limit applies"
        );
    }
}
