//! How `search.json` stores the index's posting lists: each term's list as base64 of its entries
//! packed little-endian (op index `u32`, then the value), not as JSON arrays of numbers. Parsing
//! hundreds of thousands of decimal floats was most of a cold search's time (issue 33); these
//! decode at memory speed, and the bytes are exactly the `f64` written, so a read index answers
//! exactly as a built one. Each list is decoded when a query first needs it. Keys are written in order: the file's bytes never depend on hashing.

use base64::Engine;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
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

/// Term -> (op index, value) entries in op order. Lists read from a file stay packed until a
/// query first asks for their term: a query touches a handful of terms, and decoding every
/// list was a tenth of a cold search at 10,000 ops (issue 33).
pub(super) struct Lists<V> {
    map: HashMap<String, List<V>>,
    /// How many ops the index has: a decoded entry must name one of them.
    ops: usize,
}

struct List<V> {
    /// The base64 text as read; empty for a list built in this process.
    packed: Box<str>,
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
                        packed: Box::default(),
                        decoded,
                    },
                )
            })
            .collect();
        Lists { map, ops }
    }

    /// Sets how many ops the index has (after reading it: entries must name one of them).
    pub(super) fn bound(&mut self, ops: usize) {
        self.ops = ops;
    }

    /// The entries of `term`, decoded on first use. A list that does not decode to entries
    /// strictly increasing by op and below the op count reads as empty: a damaged file never
    /// indexes past the ops, and its terms find nothing.
    pub(super) fn get(&self, term: &str) -> Option<&[(u32, V)]> {
        let list = self.map.get(term)?;
        Some(
            list.decoded
                .get_or_init(|| decode(&list.packed, self.ops).unwrap_or_default()),
        )
    }
}

/// The entries packed in `text`, when they are whole, in op order and below `ops`.
fn decode<V: Packed>(text: &str, ops: usize) -> Option<Vec<(u32, V)>> {
    let bytes = B64.decode(text.as_bytes()).ok()?;
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

/// `serialize_with`: term -> base64 of its entries, terms in order.
pub(super) fn serialize<S: Serializer, V: Packed>(
    lists: &Lists<V>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut packed: BTreeMap<&String, Cow<str>> = BTreeMap::new();
    for (term, list) in &lists.map {
        let text = match list.decoded.get() {
            Some(entries) if list.packed.is_empty() => {
                let mut bytes = Vec::with_capacity(entries.len() * (4 + V::SIZE));
                for (op, v) in entries {
                    bytes.extend_from_slice(&op.to_le_bytes());
                    v.put(&mut bytes);
                }
                Cow::Owned(B64.encode(&bytes))
            }
            _ => Cow::Borrowed(&*list.packed),
        };
        packed.insert(term, text);
    }
    packed.serialize(s)
}

/// `deserialize_with`: the inverse of [`serialize`], each list kept packed. A list whose length
/// cannot be whole entries of base64 refuses the file (checked from its length alone); what
/// only decoding shows (not base64, out of order, past the ops) is checked on first use.
pub(super) fn deserialize<'de, D: Deserializer<'de>, V: Packed>(
    d: D,
) -> Result<Lists<V>, D::Error> {
    /// Borrowed where the text allows (base64 has no escapes): one copy of each list's text.
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    let packed: HashMap<String, Text<'de>> = HashMap::deserialize(d)?;
    let mut map = HashMap::with_capacity(packed.len());
    for (term, Text(text)) in packed {
        let entry = 4 + V::SIZE;
        match decoded_len(&text) {
            Some(n) if n.is_multiple_of(entry) => {}
            _ => {
                return Err(D::Error::custom(format!(
                    "postings of `{term}`: {} base64 characters are not a whole number of entries",
                    text.len()
                )))
            }
        }
        let packed = text.into_owned().into_boxed_str();
        map.insert(
            term,
            List {
                packed,
                decoded: OnceLock::new(),
            },
        );
    }
    Ok(Lists { map, ops: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Both {
        #[serde(serialize_with = "serialize", deserialize_with = "deserialize")]
        weights: Lists<f64>,
        #[serde(serialize_with = "serialize", deserialize_with = "deserialize")]
        bits: Lists<u8>,
    }

    fn read(text: &str, ops: usize) -> Both {
        let mut both: Both = serde_json::from_str(text).unwrap();
        both.weights.bound(ops);
        both.bits.bound(ops);
        both
    }

    #[test]
    fn round_trips_exactly_and_fails_closed_on_damage() {
        let weights = HashMap::from([
            ("task".into(), vec![(0, 0.1 + 0.2), (7, f64::MIN_POSITIVE)]),
            ("list".into(), vec![(8, 1e300)]),
        ]);
        let lists = Both {
            weights: Lists::built(weights.clone(), 9),
            bits: Lists::built(HashMap::from([("task".into(), vec![(3, 5u8)])]), 9),
        };
        let text = serde_json::to_string(&lists).unwrap();
        // Keys in order, whatever the hash map's order.
        assert!(text.find("\"list\"").unwrap() < text.find("\"task\"").unwrap());
        let back = read(&text, 9);
        for (term, list) in &weights {
            assert_eq!(back.weights.get(term), Some(&list[..]), "{term}");
        }
        assert_eq!(back.bits.get("task"), Some(&[(3, 5u8)][..]));
        assert_eq!(back.weights.get("absent"), None);
        // Read lists are written back as read.
        assert_eq!(serde_json::to_string(&back).unwrap(), text);

        // One byte short of a whole entry: refused from the length alone.
        let short = B64.encode([1u8, 0, 0, 0, 9]);
        let torn = format!(r#"{{"weights":{{"a":"{short}"}},"bits":{{}}}}"#);
        let err = serde_json::from_str::<Both>(&torn)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("not a whole number of entries"), "{err}");
        // Not base64, out of order, or past the ops: found on first use, and read as empty.
        let pack = |entries: &[(u32, u8)]| {
            let mut bytes = Vec::new();
            for (op, v) in entries {
                bytes.extend_from_slice(&op.to_le_bytes());
                bytes.push(*v);
            }
            B64.encode(bytes)
        };
        for damaged in [
            "*not*base64*====".to_string(),
            pack(&[(4, 1), (2, 1)]),
            pack(&[(2, 1), (2, 1)]),
            pack(&[(1, 1), (9, 1)]),
        ] {
            let file = format!(r#"{{"weights":{{}},"bits":{{"a":"{damaged}"}}}}"#);
            let Ok(mut both) = serde_json::from_str::<Both>(&file) else {
                continue;
            };
            both.bits.bound(9);
            assert_eq!(both.bits.get("a"), Some(&[][..]), "{damaged}");
        }
        assert_eq!(
            read(
                &format!(
                    r#"{{"weights":{{}},"bits":{{"a":"{}"}}}}"#,
                    pack(&[(1, 1), (8, 2)])
                ),
                9
            )
            .bits
            .get("a"),
            Some(&[(1, 1), (8, 2)][..])
        );
    }
}
