//! How `search.json` stores the index's posting lists: each term's list as base64 of its entries
//! packed little-endian (op index `u32`, then the value), not as JSON arrays of numbers. Parsing
//! hundreds of thousands of decimal floats was most of a cold search's time (issue 33); these
//! decode at memory speed, and the bytes are exactly the `f64` written, so a read index answers
//! exactly as a built one. Keys are written in order: the file's bytes never depend on hashing.

use base64::Engine;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Term -> (op index, value) entries in op order.
type Lists<V> = HashMap<String, Vec<(u32, V)>>;

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

/// `serialize_with`: term -> base64 of its entries, terms in order.
pub(super) fn serialize<S: Serializer, V: Packed>(map: &Lists<V>, s: S) -> Result<S::Ok, S::Error> {
    let mut packed: BTreeMap<&String, String> = BTreeMap::new();
    for (term, list) in map {
        let mut bytes = Vec::with_capacity(list.len() * (4 + V::SIZE));
        for (op, v) in list {
            bytes.extend_from_slice(&op.to_le_bytes());
            v.put(&mut bytes);
        }
        packed.insert(term, B64.encode(&bytes));
    }
    packed.serialize(s)
}

/// `deserialize_with`: the inverse of [`serialize`]; a list whose length is not a whole number
/// of entries, or that is not base64, refuses the file.
pub(super) fn deserialize<'de, D: Deserializer<'de>, V: Packed>(
    d: D,
) -> Result<Lists<V>, D::Error> {
    /// Borrowed where the text allows (base64 has no escapes): no copy of each list's text.
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    let packed: HashMap<String, Text<'de>> = HashMap::deserialize(d)?;
    let mut map = HashMap::with_capacity(packed.len());
    let mut bytes = Vec::new();
    for (term, Text(text)) in packed {
        bytes.clear();
        B64.decode_vec(text.as_bytes(), &mut bytes)
            .map_err(|e| D::Error::custom(format!("postings of `{term}`: {e}")))?;
        let entry = 4 + V::SIZE;
        if bytes.len() % entry != 0 {
            return Err(D::Error::custom(format!(
                "postings of `{term}`: {} bytes is not a whole number of entries",
                bytes.len()
            )));
        }
        let list = bytes
            .chunks_exact(entry)
            .map(|c| {
                let op = u32::from_le_bytes(c[..4].try_into().expect("four bytes"));
                (op, V::get(&c[4..]))
            })
            .collect();
        map.insert(term, list);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Both {
        #[serde(serialize_with = "serialize", deserialize_with = "deserialize")]
        weights: HashMap<String, Vec<(u32, f64)>>,
        #[serde(serialize_with = "serialize", deserialize_with = "deserialize")]
        bits: HashMap<String, Vec<(u32, u8)>>,
    }

    #[test]
    fn round_trips_exactly_and_refuses_torn_lists() {
        let lists = Both {
            weights: HashMap::from([
                ("task".into(), vec![(0, 0.1 + 0.2), (7, f64::MIN_POSITIVE)]),
                ("list".into(), vec![(u32::MAX, 1e300)]),
            ]),
            bits: HashMap::from([("task".into(), vec![(3, 5u8)])]),
        };
        let text = serde_json::to_string(&lists).unwrap();
        // Keys in order, whatever the hash map's order.
        assert!(text.find("\"list\"").unwrap() < text.find("\"task\"").unwrap());
        let back: Both = serde_json::from_str(&text).unwrap();
        assert_eq!(back, lists);
        // One byte short of a whole entry, or not base64 at all: refused.
        let short = B64.encode([1u8, 0, 0, 0, 9]);
        let torn = format!(r#"{{"weights":{{"a":"{short}"}},"bits":{{}}}}"#);
        let err = serde_json::from_str::<Both>(&torn).unwrap_err().to_string();
        assert!(err.contains("not a whole number of entries"), "{err}");
        let garbage = r#"{"weights":{"a":"*not base64*"},"bits":{}}"#;
        assert!(serde_json::from_str::<Both>(garbage).is_err());
    }
}
