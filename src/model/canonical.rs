//! Canonical JSON: the one way toolreg turns values into bytes.
//!
//! Artifacts are pretty-printed with 2-space indents, LF line endings and a final newline. Keys
//! are sorted, except inside subtrees whose key is listed as order-preserving (parameter schemas
//! keep the order their author wrote, for docs). The version hash sorts everything.

use serde_json::{Map, Value};

/// Feeds `value`'s compact JSON to `hasher` through a 64 KB buffer. serde_json writes a token at
/// a time, and a blake3 update per token cost more than the hashing itself.
#[cfg(any(feature = "compiler", feature = "runtime"))]
pub fn hash_json<T: serde::Serialize + ?Sized>(hasher: &mut blake3::Hasher, value: &T) {
    use std::io::Write as _;
    let mut buffered = std::io::BufWriter::with_capacity(64 << 10, hasher);
    serde_json::to_writer(&mut buffered, value).expect("hashing cannot fail");
    buffered.flush().expect("hashing cannot fail");
}

/// A copy of `v` with every object's keys sorted, except the values of keys in `keep_order`,
/// which are copied as they are.
pub fn sort_keys_except(v: &Value, keep_order: &[&str]) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for k in keys {
                let child = &map[k];
                let child = if keep_order.contains(&k.as_str()) {
                    child.clone()
                } else {
                    sort_keys_except(child, keep_order)
                };
                out.insert(k.clone(), child);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| sort_keys_except(i, keep_order))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A copy of `v` with every object's keys sorted.
pub fn sort_keys(v: &Value) -> Value {
    sort_keys_except(v, &[])
}

/// `v` serialized as [`sort_keys_except`] would copy it, without the copy: a 10,000-op registry
/// is serialized twice per build (hashed, then written), and the copies were a tenth of it.
pub struct Sorted<'a> {
    pub value: &'a Value,
    /// Keys whose values keep their order (as in [`sort_keys_except`]).
    pub keep: &'a [&'a str],
    /// Keys of the top-level object left out (the hashed form drops `source` and `pin`).
    pub skip: &'a [&'a str],
}

impl<'a> Sorted<'a> {
    /// Every key sorted.
    pub fn all(value: &'a Value) -> Sorted<'a> {
        Sorted {
            value,
            keep: &[],
            skip: &[],
        }
    }
}

impl serde::Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.value {
            Value::Object(map) => {
                // Entries sorted by key, not keys then looked up: a lookup hashes each key again.
                let mut entries: Vec<(&String, &Value)> = map
                    .iter()
                    .filter(|(k, _)| !self.skip.contains(&k.as_str()))
                    .collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut out = s.serialize_map(Some(entries.len()))?;
                for (k, child) in entries {
                    if self.keep.contains(&k.as_str()) {
                        out.serialize_entry(k, child)?;
                    } else {
                        out.serialize_entry(
                            k,
                            &Sorted {
                                value: child,
                                keep: self.keep,
                                skip: &[],
                            },
                        )?;
                    }
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Sorted {
                        value: item,
                        keep: self.keep,
                        skip: &[],
                    })?;
                }
                out.end()
            }
            other => other.serialize(s),
        }
    }
}

/// Pretty JSON text: 2-space indent, LF, final newline.
pub fn to_pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON values always serialize");
    s.push('\n');
    s
}

/// The registry as canonical JSON, serialized one op at a time so a 10,000-op registry is never
/// held twice as a `serde_json::Value`. `Hashed` drops `registry_version` and every op's `source` and `pin`
/// and sorts keys everywhere; `Artifact` keeps them and keeps parameter schemas in declared order.
pub enum RegistryForm {
    Hashed,
    Artifact,
}

pub struct CanonicalRegistry<'a> {
    pub registry: &'a crate::registry::Registry,
    pub form: RegistryForm,
}

impl serde::Serialize for CanonicalRegistry<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let hashed = matches!(self.form, RegistryForm::Hashed);
        let keep: &[&str] = if hashed {
            &[]
        } else {
            &["parameters_schema", "output_schema"]
        };
        // Every top-level field but `ops`, as small values.
        let mut top = serde_json::to_value(HeaderOf(self.registry)).map_err(S::Error::custom)?;
        let top = top.as_object_mut().expect("the header is an object");
        if hashed {
            top.remove("registry_version");
        }
        let mut keys: Vec<String> = top.keys().cloned().chain(["ops".to_string()]).collect();
        keys.sort();
        let mut map = s.serialize_map(Some(keys.len()))?;
        for k in &keys {
            if k == "ops" {
                map.serialize_entry(
                    "ops",
                    &Ops {
                        registry: self.registry,
                        keep,
                        hashed,
                    },
                )?;
            } else {
                map.serialize_entry(k, &Sorted::all(&top[k]))?;
            }
        }
        map.end()
    }
}

/// The registry without its ops, for the header.
struct HeaderOf<'a>(&'a crate::registry::Registry);

impl serde::Serialize for HeaderOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        // Destructured so a new Registry field fails to compile here until it is serialized.
        let crate::registry::Registry {
            name,
            description,
            generator,
            format_version,
            registry_version,
            counts,
            tree,
            ops: _,
            profiles,
            gateway,
            budgets,
            synonyms,
            clusters,
            upstreams,
            search,
            access,
            quarantined,
        } = r;
        let mut m = s.serialize_map(None)?;
        // Only catalogs with `[access]` carry the key, so other registries keep their bytes.
        if !access.is_empty() {
            m.serialize_entry("access", access)?;
        }
        m.serialize_entry("budgets", budgets)?;
        m.serialize_entry("clusters", clusters)?;
        m.serialize_entry("counts", counts)?;
        if let Some(d) = description {
            m.serialize_entry("description", d)?;
        }
        m.serialize_entry("format_version", format_version)?;
        m.serialize_entry("gateway", gateway)?;
        m.serialize_entry("generator", generator)?;
        m.serialize_entry("name", name)?;
        m.serialize_entry("profiles", profiles)?;
        // Only a build that left third-party tools out carries the key.
        if !quarantined.is_empty() {
            m.serialize_entry("quarantined", quarantined)?;
        }
        m.serialize_entry("registry_version", registry_version)?;
        // Like upstreams: only catalogs that set `[search]` carry the key.
        if !search.is_unset() {
            m.serialize_entry("search", search)?;
        }
        m.serialize_entry("synonyms", synonyms)?;
        m.serialize_entry("tree", tree)?;
        // Only catalogs with upstreams carry the key, so other registries keep their bytes.
        if !upstreams.is_empty() {
            m.serialize_entry("upstreams", upstreams)?;
        }
        m.end()
    }
}

struct Ops<'a> {
    registry: &'a crate::registry::Registry,
    keep: &'a [&'a str],
    hashed: bool,
}

impl serde::Serialize for Ops<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let mut map = s.serialize_map(Some(self.registry.ops.len()))?;
        for (op, record) in &self.registry.ops {
            let v = serde_json::to_value(record).map_err(S::Error::custom)?;
            let skip: &[&str] = if self.hashed { &["source", "pin"] } else { &[] };
            map.serialize_entry(
                op,
                &Sorted {
                    value: &v,
                    keep: self.keep,
                    skip,
                },
            )?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_all_but_kept_subtrees() {
        let v = json!({"b": 1, "a": {"z": 1, "y": 2}, "schema": {"z": 1, "y": 2}});
        let s = to_pretty(&sort_keys_except(&v, &["schema"]));
        assert_eq!(
            s,
            "{\n  \"a\": {\n    \"y\": 2,\n    \"z\": 1\n  },\n  \"b\": 1,\n  \"schema\": {\n    \"z\": 1,\n    \"y\": 2\n  }\n}\n"
        );
        assert_eq!(
            serde_json::to_vec(&sort_keys(&v)).unwrap(),
            br#"{"a":{"y":2,"z":1},"b":1,"schema":{"y":2,"z":1}}"#
        );
    }

    /// The borrowing view writes the bytes the sorted copy does, with kept and skipped keys.
    #[test]
    fn sorted_view_writes_what_the_copy_does() {
        let v = json!({"b": [{"z": 1, "a": null}], "source": "x", "schema": {"z": 1, "y": {"d": 1, "c": 2}}, "a": "é"});
        for keep in [&[][..], &["schema"][..]] {
            let copy = serde_json::to_string_pretty(&sort_keys_except(&v, keep)).unwrap();
            let view = Sorted {
                value: &v,
                keep,
                skip: &[],
            };
            assert_eq!(serde_json::to_string_pretty(&view).unwrap(), copy);
        }
        let mut without = v.clone();
        without.as_object_mut().unwrap().remove("source");
        let view = Sorted {
            value: &v,
            keep: &[],
            skip: &["source"],
        };
        assert_eq!(
            serde_json::to_string(&view).unwrap(),
            sort_keys(&without).to_string()
        );
    }
}
