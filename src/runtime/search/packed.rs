//! How `search.json` stores the index's posting lists: each term's list as base64 of its entries
//! packed little-endian (op index `u32`, then the value), not as JSON arrays of numbers. Parsing
//! hundreds of thousands of decimal floats was most of a cold search's time (issue 33); these
//! decode at memory speed, and the bytes are exactly the `f64` written, so a read index answers
//! exactly as a built one. Each list is decoded when a query first needs it. Lists and each op's
//! usage line ([`Strings`]) are read in place: spans of the file's bytes, never copied. Keys are
//! written in order: the file's bytes never depend on hashing.

use base64::Engine;
use foldhash::{HashMap, HashMapExt};
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A value packed after each op index.
pub(super) trait Packed: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

impl Packed for f64 {
    const SIZE: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(bytes: &[u8]) -> Self {
        f64::from_le_bytes(bytes.try_into().expect("eight bytes"))
    }
}

impl Packed for u8 {
    const SIZE: usize = 1;
    fn put(self, out: &mut Vec<u8>) {
        out.push(self);
    }
    fn get(bytes: &[u8]) -> Self {
        bytes[0]
    }
}

/// The bytes of the `search.json` a read index came from. Its lists are spans of it, not
/// copies: at 10,000 ops the lists are two thirds of the file, and copying them out was a fifth
/// of a cold search's memory (issue 33).
pub(super) type Source = std::sync::Arc<Box<[u8]>>;

/// Where `text` lies in `source`, when it was borrowed from it; anything else (a text from other
/// bytes) is refused rather than trusted.
fn span_in(text: &str, source: &Source) -> Option<Range<usize>> {
    let start = (text.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
    let end = start.checked_add(text.len())?;
    (end <= source.len()).then_some(start..end)
}

/// Term -> (op index, value) entries in op order. Lists read from a file stay packed (in the
/// file's bytes) until a query first asks for their term: a query touches a handful of terms,
/// and decoding every list was a tenth of a cold search at 10,000 ops (issue 33).
pub(super) struct Lists<V> {
    map: HashMap<String, List<V>>,
    /// How many ops the index has: a decoded entry must name one of them.
    ops: usize,
    /// The file the packed lists are spans of; empty for lists built in this process.
    source: Source,
}

impl<V> Default for Lists<V> {
    fn default() -> Self {
        Lists {
            map: HashMap::new(),
            ops: 0,
            source: Source::default(),
        }
    }
}

struct List<V> {
    /// Where the base64 text is in the source; empty for a list built in this process.
    packed: Range<usize>,
    decoded: OnceLock<Vec<(u32, V)>>,
}

impl<V: Packed> Lists<V> {
    /// Lists built in this process (already in op order, each op below `ops`).
    pub(super) fn built(map: HashMap<String, Vec<(u32, V)>>, ops: usize) -> Self {
        let map = map
            .into_iter()
            .map(|(term, list)| {
                let decoded = OnceLock::from(list);
                (
                    term,
                    List {
                        packed: 0..0,
                        decoded,
                    },
                )
            })
            .collect();
        Lists {
            map,
            ops,
            source: Source::default(),
        }
    }

    /// Lists read from `source`: `texts` (term -> base64 text) borrowed from it as parsed. A
    /// list whose length cannot be whole entries of base64 refuses the file (checked from its
    /// length alone); what only decoding shows (not base64, out of order, past the ops) is
    /// checked on first use (see [`Lists::get`]).
    pub(super) fn read(
        texts: HashMap<String, &str>,
        source: &Source,
        ops: usize,
    ) -> Result<Self, String> {
        let mut map = HashMap::with_capacity(texts.len());
        for (term, text) in texts {
            let entry = 4 + V::SIZE;
            if !decoded_len(text).is_some_and(|n| n.is_multiple_of(entry)) {
                return Err(format!(
                    "postings of `{term}`: {} base64 characters are not a whole number of entries",
                    text.len()
                ));
            }
            let packed = span_in(text, source)
                .ok_or_else(|| format!("postings of `{term}` are not in the file read"))?;
            let list = List {
                packed,
                decoded: OnceLock::new(),
            };
            map.insert(term, list);
        }
        Ok(Lists {
            map,
            ops,
            source: Source::clone(source),
        })
    }

    /// The entries of `term`, decoded on first use. A list that does not decode to entries
    /// strictly increasing by op and below the op count reads as empty: a damaged file never
    /// indexes past the ops, and its terms find nothing.
    pub(super) fn get(&self, term: &str) -> Option<&[(u32, V)]> {
        let list = self.map.get(term)?;
        Some(list.decoded.get_or_init(|| {
            decode(&self.source[list.packed.clone()], self.ops).unwrap_or_default()
        }))
    }
}

/// The entries packed in base64 `text`, when they are whole, in op order and below `ops`.
fn decode<V: Packed>(text: &[u8], ops: usize) -> Option<Vec<(u32, V)>> {
    let bytes = B64.decode(text).ok()?;
    let entry = 4 + V::SIZE;
    if !bytes.len().is_multiple_of(entry) {
        return None;
    }
    let list: Vec<(u32, V)> = bytes
        .chunks_exact(entry)
        .map(|c| {
            let op = u32::from_le_bytes(c[..4].try_into().expect("four bytes"));
            (op, V::get(&c[4..]))
        })
        .collect();
    let ordered = list.windows(2).all(|w| w[0].0 < w[1].0)
        && list.last().is_none_or(|(d, _)| (*d as usize) < ops);
    ordered.then_some(list)
}

/// How many bytes base64 `text` decodes to, when its length is one base64 can have.
fn decoded_len(text: &str) -> Option<usize> {
    let len = text.len();
    if !len.is_multiple_of(4) {
        return None;
    }
    let padding = text.bytes().rev().take(2).filter(|b| *b == b'=').count();
    (len / 4 * 3).checked_sub(padding)
}

/// Term -> base64 of its entries, terms in order.
impl<V: Packed> Serialize for Lists<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut packed: BTreeMap<&String, Cow<str>> = BTreeMap::new();
        for (term, list) in &self.map {
            let text = match list.decoded.get() {
                Some(entries) if list.packed.is_empty() => {
                    let mut bytes = Vec::with_capacity(entries.len() * (4 + V::SIZE));
                    for (op, v) in entries {
                        bytes.extend_from_slice(&op.to_le_bytes());
                        v.put(&mut bytes);
                    }
                    Cow::Owned(B64.encode(&bytes))
                }
                // A span is of a string parsed from the source: UTF-8, borrowed as is.
                _ => String::from_utf8_lossy(&self.source[list.packed.clone()]),
            };
            packed.insert(term, text);
        }
        packed.serialize(s)
    }
}

/// Strings read in place: each a span of the source, or owned where the file wrote it with
/// escapes (a JSON string with escapes is not its own bytes). Built ones are owned.
#[derive(Default)]
pub(super) struct Strings {
    items: Vec<Item>,
    source: Source,
}

enum Item {
    At(u32, u32),
    Owned(Box<str>),
}

/// A string as parsed from the source: borrowed when the text allowed it.
#[derive(serde::Deserialize)]
pub(super) struct Text<'a>(#[serde(borrow)] pub(super) Cow<'a, str>);

impl Strings {
    pub(super) fn built(items: Vec<String>) -> Self {
        let items = items
            .into_iter()
            .map(|s| Item::Owned(s.into_boxed_str()))
            .collect();
        Strings {
            items,
            source: Source::default(),
        }
    }

    /// The strings of `texts`, parsed from `source`: a borrowed one is kept as its span. `None`
    /// when a borrowed text is not in the source (never trusted), or the source passes 4 GiB.
    pub(super) fn read(texts: Vec<Text<'_>>, source: &Source) -> Option<Self> {
        let items = texts
            .into_iter()
            .map(|Text(text)| match text {
                Cow::Borrowed(s) => {
                    let span = span_in(s, source)?;
                    Some(Item::At(
                        u32::try_from(span.start).ok()?,
                        u32::try_from(span.len()).ok()?,
                    ))
                }
                Cow::Owned(s) => Some(Item::Owned(s.into_boxed_str())),
            })
            .collect::<Option<Vec<Item>>>()?;
        Some(Strings {
            items,
            source: Source::clone(source),
        })
    }

    /// String `i`; a span is of a string parsed from the source, so it is UTF-8.
    pub(super) fn get(&self, i: usize) -> &str {
        match &self.items[i] {
            Item::At(start, len) => {
                let (start, len) = (*start as usize, *len as usize);
                std::str::from_utf8(&self.source[start..start + len]).unwrap_or_default()
            }
            Item::Owned(s) => s,
        }
    }
}

impl Serialize for Strings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((0..self.items.len()).map(|i| self.get(i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize)]
    struct Both<'a> {
        weights: &'a Lists<f64>,
        bits: &'a Lists<u8>,
    }

    /// As `search.json` is read: the texts borrowed from the file's bytes.
    #[derive(Deserialize)]
    struct Texts<'a> {
        #[serde(borrow)]
        weights: HashMap<String, &'a str>,
        #[serde(borrow)]
        bits: HashMap<String, &'a str>,
    }

    struct Read {
        weights: Lists<f64>,
        bits: Lists<u8>,
    }

    fn read(text: &str, ops: usize) -> Result<Read, String> {
        let source: Source = Source::new(text.as_bytes().into());
        let texts: Texts = serde_json::from_slice(&source).map_err(|e| e.to_string())?;
        Ok(Read {
            weights: Lists::read(texts.weights, &source, ops)?,
            bits: Lists::read(texts.bits, &source, ops)?,
        })
    }

    fn pack(entries: &[(u32, u8)]) -> String {
        let mut bytes = Vec::new();
        for (op, v) in entries {
            bytes.extend_from_slice(&op.to_le_bytes());
            bytes.push(*v);
        }
        B64.encode(bytes)
    }

    #[test]
    fn round_trips_exactly_and_fails_closed_on_damage() {
        let weights: HashMap<String, _> = [
            ("task".into(), vec![(0, 0.1 + 0.2), (7, f64::MIN_POSITIVE)]),
            ("list".into(), vec![(8, 1e300)]),
        ]
        .into_iter()
        .collect();
        let built = (
            Lists::built(weights.clone(), 9),
            Lists::built([("task".into(), vec![(3, 5u8)])].into_iter().collect(), 9),
        );
        let text = serde_json::to_string(&Both {
            weights: &built.0,
            bits: &built.1,
        })
        .unwrap();
        // Keys in order, whatever the hash map's order.
        assert!(text.find("\"list\"").unwrap() < text.find("\"task\"").unwrap());
        let back = read(&text, 9).unwrap();
        for (term, list) in &weights {
            assert_eq!(back.weights.get(term), Some(&list[..]), "{term}");
        }
        assert_eq!(back.bits.get("task"), Some(&[(3, 5u8)][..]));
        assert_eq!(back.weights.get("absent"), None);
        // Read lists are written back as read.
        let again = Both {
            weights: &back.weights,
            bits: &back.bits,
        };
        assert_eq!(serde_json::to_string(&again).unwrap(), text);

        // One byte short of a whole entry: refused from the length alone.
        let short = B64.encode([1u8, 0, 0, 0, 9]);
        let torn = format!(r#"{{"weights":{{"a":"{short}"}},"bits":{{}}}}"#);
        let err = read(&torn, 9).err().unwrap();
        assert!(err.contains("not a whole number of entries"), "{err}");
        // A text with escapes cannot be a span of the file (the writer never escapes base64):
        // refused as the file is parsed.
        let escaped = r#"{"weights":{},"bits":{"a":"AQAAAAE\u003d"}}"#;
        assert!(read(escaped, 9).is_err());
        // A text that is not in the source given is refused, never read.
        let elsewhere = pack(&[(1, 1)]);
        let source: Source = Source::new(b"{}".as_slice().into());
        let stray: HashMap<String, &str> = [("a".to_string(), elsewhere.as_str())]
            .into_iter()
            .collect();
        assert!(Lists::<u8>::read(stray, &source, 9).is_err());
        // Not base64, out of order, or past the ops: found on first use, and read as empty.
        for damaged in [
            "*not*base64*====".to_string(),
            pack(&[(4, 1), (2, 1)]),
            pack(&[(2, 1), (2, 1)]),
            pack(&[(1, 1), (9, 1)]),
        ] {
            let file = format!(r#"{{"weights":{{}},"bits":{{"a":"{damaged}"}}}}"#);
            let back = read(&file, 9).unwrap();
            assert_eq!(back.bits.get("a"), Some(&[][..]), "{damaged}");
        }
        let file = format!(
            r#"{{"weights":{{}},"bits":{{"a":"{}"}}}}"#,
            pack(&[(1, 1), (8, 2)])
        );
        assert_eq!(
            read(&file, 9).unwrap().bits.get("a"),
            Some(&[(1, 1), (8, 2)][..])
        );
    }

    #[test]
    fn strings_are_read_in_place_or_owned_when_escaped() {
        let built = Strings::built(vec!["a.b.list [--id ID]".into(), "say \"hi\"\n".into()]);
        let text = serde_json::to_string(&built).unwrap();
        let source: Source = Source::new(text.as_bytes().into());
        let texts: Vec<Text> = serde_json::from_slice(&source).unwrap();
        let read = Strings::read(texts, &source).unwrap();
        assert!(
            matches!(read.items[0], Item::At(..)),
            "a plain string is a span"
        );
        assert!(
            matches!(read.items[1], Item::Owned(_)),
            "an escaped one is owned"
        );
        assert_eq!(read.get(0), "a.b.list [--id ID]");
        assert_eq!(read.get(1), "say \"hi\"\n");
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        // A borrowed text that is not in the source given is refused.
        let elsewhere = String::from("x");
        let stray = vec![Text(Cow::Borrowed(elsewhere.as_str()))];
        assert!(Strings::read(stray, &source).is_none());
    }
}
