//! Canonical JSON: the one way toolreg turns values into bytes.
//!
//! Artifacts are pretty-printed with 2-space indents, LF line endings and a final newline. Keys
//! are sorted, except inside subtrees whose key is listed as order-preserving (parameter schemas
//! keep the order their author wrote, for docs). The version hash sorts everything.
//!
//! Why it is one file: the registry's canonical form (header, ops, args, examples, annotations)
//! must write what the generic sorted view writes, byte for byte; its tests compare the two, so
//! both live here (over 700 lines, most of them those tests).

use serde_json::{Map, Value};

/// Bytes of `v` (a `Value` or any serializable page) as compact JSON, counted without building
/// the text.
pub fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}

/// How toolreg names a digest everywhere (registry versions, manifest hashes, the phrasing
/// data): `b3:` and the first 16 hex digits of the blake3 hash.
#[cfg(any(feature = "compiler", feature = "runtime"))]
pub fn short_digest(digest: blake3::Hash) -> String {
    format!("b3:{}", &digest.to_hex()[..16])
}

/// Feeds `value`'s compact JSON to `hasher` through a 16 KB buffer. serde_json writes a token at
/// a time, and a blake3 update per token cost more than the hashing itself. Every tool's pin
/// makes a few of these calls: a 64 KB buffer cost fresh pages each time, and an array on the
/// stack a memset; `BufWriter`'s buffer is never zeroed, and at 16 KB the allocator reuses it.
#[cfg(any(feature = "compiler", feature = "runtime"))]
pub fn hash_json<T: serde::Serialize + ?Sized>(hasher: &mut blake3::Hasher, value: &T) {
    use std::io::Write as _;
    let mut buffered = std::io::BufWriter::with_capacity(16 << 10, hasher);
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
    pub registry: &'a crate::model::registry::Registry,
    pub form: RegistryForm,
    /// Where to record each op's place in the text, when it is written through an
    /// [`OpSpans::writer`].
    pub spans: Option<&'a OpSpans>,
    /// `ops` written as an empty object, for a text whose ops are put in afterwards (after
    /// [`empty_ops_at`]; see [`op_artifact_text`] and [`hashed_frame`]).
    pub without_ops: bool,
}

/// One op's value as `registry.json` holds it (the artifact form, pretty), indented for its
/// place there, two objects deep: what [`CanonicalRegistry`] writes between the op's key and the
/// comma after it (a unit test compares the two on every repo catalog).
pub fn op_artifact_text(record: &crate::model::registry::OpRecord) -> String {
    let mut bytes = Vec::with_capacity(4096);
    let op = CanonicalOp {
        op: record,
        keep: ARTIFACT_KEEPS_ORDER,
        hashed: false,
    };
    write_pretty_at(&mut bytes, &op, 2);
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// The hashed form of the registry (compact JSON, what the version hashes) without its ops'
/// entries: the text up to the `{` that opens `ops`, and the text from the `}` that closes it.
/// Between them go the entries of [`write_hashed_op_entry`], in the registry's op order, so
/// the ops can be written apart (on every core) and the bytes stay those of the one-go form.
pub fn hashed_frame(reg: &crate::model::registry::Registry) -> (Vec<u8>, Vec<u8>) {
    let canonical = CanonicalRegistry {
        registry: reg,
        form: RegistryForm::Hashed,
        spans: None,
        without_ops: true,
    };
    let mut text = serde_json::to_vec(&canonical).expect("the registry always serializes");
    let after = text.split_off(empty_ops_at(&text) + 1);
    (text, after)
}

/// Where the `{` of the empty `ops` of a registry text written `without_ops` is, compact or
/// pretty: the ops are put in after it. Found as the outermost object's key, so an `ops` key
/// deeper down, or the characters inside a string, never match.
pub fn empty_ops_at(text: &[u8]) -> usize {
    let value = top_level_value(text, b"\"ops\"").expect("the header holds `ops`");
    let open = value
        + text[value..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
    assert_eq!(text.get(open..open + 2), Some(&b"{}"[..]), "`ops` is empty");
    open
}

/// Appends one op's entry in the hashed form's `ops` (its key, `:` and its value, compact),
/// after a comma unless it is the `first`.
pub fn write_hashed_op_entry(
    out: &mut Vec<u8>,
    first: bool,
    op: &str,
    record: &crate::model::registry::OpRecord,
) {
    if !first {
        out.push(b',');
    }
    serde_json::to_writer(&mut *out, op).expect("a string serializes");
    out.push(b':');
    let value = CanonicalOp {
        op: record,
        keep: &[],
        hashed: true,
    };
    serde_json::to_writer(&mut *out, &value).expect("an op always serializes");
}

/// Where the value of `key` (quoted) starts in compact JSON `text`, when it is a key of the
/// outermost object: strings are skipped whole, so a key deeper down or text inside a string
/// never matches.
fn top_level_value(text: &[u8], key: &[u8]) -> Option<usize> {
    let (mut depth, mut at) = (0usize, 0usize);
    while at < text.len() {
        match text[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                if depth == 1
                    && text[at..].starts_with(key)
                    && text.get(at + key.len()) == Some(&b':')
                {
                    return Some(at + key.len() + 1);
                }
                // Past the string: a quote ends it unless an odd run of backslashes escapes it.
                at += 1;
                while at < text.len() {
                    match text[at] {
                        b'\\' => at += 1,
                        b'"' => break,
                        _ => {}
                    }
                    at += 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// `value` as serde_json's pretty form writes it `depth` levels down (an element of an array
/// inside the top-level object is two): what goes after that array's line break and indentation,
/// so a file can be put together from values written apart.
pub fn write_pretty_at<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T, depth: usize) {
    let mut writer = serde_json::Serializer::with_formatter(out, PrettyAt::depth(depth));
    value
        .serialize(&mut writer)
        .expect("a value serializes into memory");
}

/// serde_json's `PrettyFormatter` (two spaces a level) for a value that starts `depth` levels
/// down: its own indentation is private, and re-indenting its output afterwards cost a pass
/// over every op's text.
struct PrettyAt {
    depth: usize,
    has_value: bool,
}

impl PrettyAt {
    fn depth(depth: usize) -> PrettyAt {
        PrettyAt {
            depth,
            has_value: false,
        }
    }

    fn open<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        bracket: &[u8],
    ) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(w, false)?;
        }
        w.write_all(bracket)
    }

    /// A line break (after a comma when `comma`) and the indentation of the current depth.
    fn line<W: ?Sized + std::io::Write>(&mut self, w: &mut W, comma: bool) -> std::io::Result<()> {
        w.write_all(if comma { b",\n" } else { b"\n" })?;
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for PrettyAt {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, !first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, !first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// The keys whose values keep their declared order in the artifact form.
const ARTIFACT_KEEPS_ORDER: &[&str] = &["parameters_schema", "output_schema"];

/// Where each op's value lies (start, length) in a registry text as it is written, in the
/// registry's op order: taken from the bytes the writer has passed on when the op's value
/// starts and ends (serde_json writes straight through, so the count is exact).
#[derive(Default)]
pub struct OpSpans {
    written: std::cell::Cell<u64>,
    spans: std::cell::RefCell<Vec<[u64; 2]>>,
}

impl OpSpans {
    /// A writer into `out` that counts what it writes for these spans.
    pub fn writer<'a, W: std::io::Write + 'a>(&'a self, out: W) -> impl std::io::Write + 'a {
        struct Counting<'s, W> {
            out: W,
            spans: &'s OpSpans,
        }
        impl<W: std::io::Write> std::io::Write for Counting<'_, W> {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let n = self.out.write(buf)?;
                self.spans.written.set(self.spans.written.get() + n as u64);
                Ok(n)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                self.out.flush()
            }
        }
        Counting { out, spans: self }
    }

    /// The spans recorded, one per op in the registry's order.
    pub fn into_spans(self) -> Vec<[u64; 2]> {
        self.spans.into_inner()
    }
}

/// An op's value, its place recorded in `spans` as it is written.
struct Spanned<'a, T> {
    value: T,
    spans: &'a OpSpans,
}

impl<T: serde::Serialize> serde::Serialize for Spanned<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let start = self.spans.written.get();
        let ok = self.value.serialize(s)?;
        let end = self.spans.written.get();
        self.spans.spans.borrow_mut().push([start, end - start]);
        Ok(ok)
    }
}

impl serde::Serialize for CanonicalRegistry<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let hashed = matches!(self.form, RegistryForm::Hashed);
        let keep: &[&str] = if hashed { &[] } else { ARTIFACT_KEEPS_ORDER };
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
            if k == "ops" && self.without_ops {
                map.serialize_entry("ops", &serde_json::Map::new())?;
            } else if k == "ops" {
                map.serialize_entry(
                    "ops",
                    &Ops {
                        registry: self.registry,
                        keep,
                        hashed,
                        spans: self.spans,
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
struct HeaderOf<'a>(&'a crate::model::registry::Registry);

impl serde::Serialize for HeaderOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        // Destructured so a new Registry field fails to compile here until it is serialized.
        let crate::model::registry::Registry {
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
    registry: &'a crate::model::registry::Registry,
    keep: &'a [&'a str],
    hashed: bool,
    spans: Option<&'a OpSpans>,
}

impl serde::Serialize for Ops<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.registry.ops.len()))?;
        for (op, record) in &self.registry.ops {
            let value = CanonicalOp {
                op: record,
                keep: self.keep,
                hashed: self.hashed,
            };
            match self.spans {
                Some(spans) => map.serialize_entry(op, &Spanned { value, spans })?,
                None => map.serialize_entry(op, &value)?,
            }
        }
        map.end()
    }
}

/// One op record as [`Sorted`] would write its `serde_json::Value`, field by field in sorted
/// key order, without building the value: the copy was a third of a registry-only build at
/// 10,000 ops. `hashed` leaves out `source` and `pin`. Every JSON value inside goes through
/// [`Sorted`] with the same `keep`. A unit test proves the bytes equal the value's for every op
/// of the repo's catalogs and for a record with every field set.
struct CanonicalOp<'a> {
    op: &'a crate::model::registry::OpRecord,
    keep: &'a [&'a str],
    hashed: bool,
}

impl CanonicalOp<'_> {
    /// The JSON value under `key`: written as it is when the key is kept, else sorted, exactly
    /// as `Sorted` treats an object's children.
    fn value<'v>(&'v self, value: &'v Value, key: &str) -> Either<'v> {
        if self.keep.contains(&key) {
            Either::AsIs(value)
        } else {
            Either::Sorted(Sorted {
                value,
                keep: self.keep,
                skip: &[],
            })
        }
    }
}

/// A value written as it is (a kept subtree) or sorted.
enum Either<'a> {
    AsIs(&'a Value),
    Sorted(Sorted<'a>),
}

impl serde::Serialize for Either<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Either::AsIs(v) => v.serialize(s),
            Either::Sorted(v) => v.serialize(s),
        }
    }
}

impl serde::Serialize for CanonicalOp<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // Destructured so a new field fails to compile here until it is written (and the unit
        // test then checks its place in the order).
        let crate::model::registry::OpRecord {
            op,
            tool_name,
            provider_name,
            description,
            summary,
            parameters_schema,
            output_schema,
            group,
            entity,
            action,
            kind,
            destructive,
            dry_run_default,
            hidden,
            pass_unknown_arguments,
            tags,
            aliases,
            when_to_use,
            queries,
            display,
            args,
            required_args,
            id_args,
            id_discovery,
            arg_aliases,
            examples,
            policy,
            annotations,
            source,
            pin,
        } = self.op;
        let sorted_args: Vec<CanonicalArg> = args
            .iter()
            .map(|arg| CanonicalArg { arg, op: self })
            .collect();
        let sorted_examples: Vec<CanonicalExample> = examples
            .iter()
            .map(|example| CanonicalExample { example, op: self })
            .collect();
        // Keys in byte order, as `Sorted` orders them.
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("action", action)?;
        m.serialize_entry("aliases", aliases)?;
        if let Some(a) = annotations {
            m.serialize_entry("annotations", &CanonicalAnnotations(a))?;
        }
        if !arg_aliases.is_empty() {
            m.serialize_entry("arg_aliases", arg_aliases)?;
        }
        m.serialize_entry("args", &sorted_args)?;
        m.serialize_entry("description", description)?;
        m.serialize_entry("destructive", destructive)?;
        if let Some(d) = display {
            m.serialize_entry("display", d)?;
        }
        m.serialize_entry("dry_run_default", dry_run_default)?;
        if let Some(e) = entity {
            m.serialize_entry("entity", e)?;
        }
        m.serialize_entry("examples", &sorted_examples)?;
        m.serialize_entry("group", group)?;
        m.serialize_entry("hidden", hidden)?;
        m.serialize_entry("id_args", id_args)?;
        m.serialize_entry("id_discovery", id_discovery)?;
        m.serialize_entry("kind", kind)?;
        m.serialize_entry("op", op)?;
        if let Some(o) = output_schema {
            m.serialize_entry("output_schema", &self.value(o, "output_schema"))?;
        }
        m.serialize_entry(
            "parameters_schema",
            &self.value(parameters_schema, "parameters_schema"),
        )?;
        if *pass_unknown_arguments {
            m.serialize_entry("pass_unknown_arguments", pass_unknown_arguments)?;
        }
        if !self.hashed {
            if let Some(p) = pin {
                m.serialize_entry("pin", p)?;
            }
        }
        if let Some(p) = policy {
            m.serialize_entry("policy", p)?;
        }
        m.serialize_entry("provider_name", provider_name)?;
        if !queries.is_empty() {
            m.serialize_entry("queries", queries)?;
        }
        m.serialize_entry("required_args", required_args)?;
        if !self.hashed {
            m.serialize_entry("source", source)?;
        }
        m.serialize_entry("summary", summary)?;
        m.serialize_entry("tags", tags)?;
        m.serialize_entry("tool_name", tool_name)?;
        if let Some(w) = when_to_use {
            m.serialize_entry("when_to_use", w)?;
        }
        m.end()
    }
}

struct CanonicalArg<'a> {
    arg: &'a crate::model::registry::Arg,
    op: &'a CanonicalOp<'a>,
}

impl serde::Serialize for CanonicalArg<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let crate::model::registry::Arg {
            name,
            type_,
            required,
            default,
            enum_,
            range,
            description,
        } = self.arg;
        let mut m = s.serialize_map(None)?;
        if let Some(d) = default {
            m.serialize_entry("default", &self.op.value(d, "default"))?;
        }
        if !description.is_empty() {
            m.serialize_entry("description", description)?;
        }
        if let Some(values) = enum_ {
            let values: Vec<Either> = values.iter().map(|v| self.op.value(v, "enum")).collect();
            m.serialize_entry("enum", &values)?;
        }
        m.serialize_entry("name", name)?;
        if let Some(r) = range {
            m.serialize_entry("range", r)?;
        }
        m.serialize_entry("required", required)?;
        m.serialize_entry("type", type_)?;
        m.end()
    }
}

struct CanonicalExample<'a> {
    example: &'a crate::model::registry::Example,
    op: &'a CanonicalOp<'a>,
}

impl serde::Serialize for CanonicalExample<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let crate::model::registry::Example {
            description,
            args,
            origin,
        } = self.example;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("args", &self.op.value(args, "args"))?;
        m.serialize_entry("description", description)?;
        m.serialize_entry("origin", origin)?;
        m.end()
    }
}

struct CanonicalAnnotations<'a>(&'a crate::model::registry::McpAnnotations);

impl serde::Serialize for CanonicalAnnotations<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let crate::model::registry::McpAnnotations {
            title,
            read_only_hint,
            destructive_hint,
            idempotent_hint,
            open_world_hint,
        } = self.0;
        let mut m = s.serialize_map(None)?;
        for (key, hint) in [
            ("destructiveHint", destructive_hint),
            ("idempotentHint", idempotent_hint),
            ("openWorldHint", open_world_hint),
            ("readOnlyHint", read_only_hint),
        ] {
            if let Some(h) = hint {
                m.serialize_entry(key, h)?;
            }
        }
        if let Some(t) = title {
            m.serialize_entry("title", t)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The buffered hash is the hash of the whole text, for texts shorter and longer than the
    /// buffer and with single writes larger than it.
    #[cfg(any(feature = "compiler", feature = "runtime"))]
    #[test]
    fn buffered_hash_is_the_hash_of_the_text() {
        let long = "x".repeat(40 << 10);
        for v in [
            json!({"a": 1}),
            json!({"big": long, "after": [1, 2, 3]}),
            json!((0..5000).map(|i| format!("item {i}")).collect::<Vec<_>>()),
        ] {
            let mut h = blake3::Hasher::new();
            hash_json(&mut h, &v);
            assert_eq!(h.finalize(), blake3::hash(&serde_json::to_vec(&v).unwrap()));
        }
    }

    /// An op written field by field is byte for byte the op turned into a value and sorted, in
    /// both forms, for every op of the repo's catalogs and for one with every field set.
    #[cfg(feature = "compiler")]
    #[test]
    fn canonical_op_writes_what_the_sorted_value_does() {
        use crate::model::registry::{McpAnnotations, Origin, Policy, ToolPin};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut ops = Vec::new();
        for dir in [
            "definitions",
            "examples/universal-agent/definitions",
            "tests/fixture/definitions",
        ] {
            let reg = crate::compiler::compile(&root.join(dir)).registry.unwrap();
            ops.extend(reg.ops.into_values());
        }
        let mut full = ops[0].clone();
        full.output_schema = Some(
            json!({"type": "object", "properties": {"z": {"b": 1, "a": 2}, "parameters_schema": {"y": 1, "x": 2}}}),
        );
        full.entity = Some("thing".into());
        full.pass_unknown_arguments = true;
        full.when_to_use = Some("when".into());
        full.queries = vec!["q".into()];
        full.display = Some("args.title".into());
        full.arg_aliases = [("b".to_string(), "a".to_string())].into();
        full.policy = Some(Policy {
            do_: vec!["d".into()],
            dont: vec!["n".into()],
            edge_cases: vec!["e".into()],
            origin: Origin::Overlay,
        });
        full.annotations = Some(McpAnnotations {
            title: Some("T".into()),
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        });
        full.pin = Some(ToolPin {
            digest: "b3:x".into(),
            parts: [("name".to_string(), "b3:y".to_string())].into(),
        });
        full.args.push(crate::model::registry::Arg {
            name: "n".into(),
            type_: "object".into(),
            required: false,
            default: Some(json!({"b": 1, "a": {"d": 1, "c": 2}})),
            enum_: Some(vec![json!({"z": 1, "y": 2}), json!("s")]),
            range: Some("1..5".into()),
            description: "an argument".into(),
        });
        full.examples.push(crate::model::registry::Example {
            description: "x".into(),
            args: json!({"z": 1, "output_schema": {"b": 1, "a": 2}, "a": [{"y": 1, "x": 2}]}),
            origin: Origin::Derived,
        });
        ops.push(full);
        let artifact_keep: &[&str] = &["parameters_schema", "output_schema"];
        for op in &ops {
            let value = serde_json::to_value(op).unwrap();
            let hashed = CanonicalOp {
                op,
                keep: &[],
                hashed: true,
            };
            let want = Sorted {
                value: &value,
                keep: &[],
                skip: &["source", "pin"],
            };
            assert_eq!(
                serde_json::to_string(&hashed).unwrap(),
                serde_json::to_string(&want).unwrap(),
                "{}",
                op.op
            );
            let artifact = CanonicalOp {
                op,
                keep: artifact_keep,
                hashed: false,
            };
            let want = Sorted {
                value: &value,
                keep: artifact_keep,
                skip: &[],
            };
            assert_eq!(
                serde_json::to_string_pretty(&artifact).unwrap(),
                serde_json::to_string_pretty(&want).unwrap(),
                "{}",
                op.op
            );
        }
        assert!(ops.len() > 100, "{}", ops.len());
    }

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
