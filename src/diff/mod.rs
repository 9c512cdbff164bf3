//! `toolreg diff`: what a registry change means for the programs and models that call it.
//!
//! Two registries in, findings out: every finding has a stable `TD` code, a level (breaking,
//! warning, info), the op, a JSON pointer into its record or schema and one line saying what
//! changed. Breaking means a call that worked can now fail (a required argument appeared, an enum
//! value went away, an op was renamed without an alias); a warning means the model sees other
//! text; info is an addition. [`cache`] adds what the change costs the providers' prompt caches.
//!
//! Only the IR is read: diffing is a pure function of two `Registry` values, so two output
//! folders, two files or a file from git history compare the same way.

pub mod cache;
pub mod render;
pub mod security;

use crate::registry::{Kind, OpRecord, Registry};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How much a finding matters to callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// What runs, or what a model is told, changed in a way a security review must see.
    Security,
    Breaking,
    Warning,
    Info,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Security => "security",
            Level::Breaking => "breaking",
            Level::Warning => "warning",
            Level::Info => "info",
        }
    }
}

macro_rules! diff_codes {
    ($( $variant:ident = $code:literal, $level:ident, $title:literal; )*) => {
        /// Stable diff codes. The guide lists them all; never renumber one.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum DiffCode { $( $variant, )* }

        impl DiffCode {
            pub fn as_str(self) -> &'static str {
                match self { $( DiffCode::$variant => $code, )* }
            }
            pub fn level(self) -> Level {
                match self { $( DiffCode::$variant => Level::$level, )* }
            }
            pub fn title(self) -> &'static str {
                match self { $( DiffCode::$variant => $title, )* }
            }
            pub const ALL: &'static [DiffCode] = &[ $( DiffCode::$variant, )* ];
        }
    };
}

diff_codes! {
    OpRemoved = "TD001", Breaking, "an op was removed";
    OpRenamed = "TD002", Breaking, "an op was renamed without an alias to its old name";
    NameChanged = "TD003", Breaking, "an op's tool name or provider name changed";
    RequiredAdded = "TD004", Breaking, "a required argument was added, or an argument became required";
    ArgRemoved = "TD005", Breaking, "an argument was removed or renamed";
    TypeNarrowed = "TD006", Breaking, "a type was changed or narrowed, or a union lost a member";
    EnumValueRemoved = "TD007", Breaking, "an enum value was removed, or an enum was imposed";
    ClosedProperties = "TD008", Breaking, "`additionalProperties` was closed";
    BoundTightened = "TD009", Breaking, "a bound was tightened (minimum, maximum, length, items, pattern, format)";
    BecameWrite = "TD010", Breaking, "an op changed from read to write";
    BecameDestructive = "TD011", Breaking, "an op became destructive";
    LeftProfile = "TD012", Breaking, "an op left a profile (or the profile was removed)";
    BecameHidden = "TD013", Breaking, "an op became hidden";
    AliasRemoved = "TD014", Breaking, "an op alias was removed";
    TextChanged = "TD020", Warning, "a description or summary the model sees changed";
    ExampleChanged = "TD021", Warning, "an op's examples changed";
    PolicyChanged = "TD022", Warning, "an op's policy changed";
    DefaultChanged = "TD023", Warning, "a default value changed";
    OpAdded = "TD030", Info, "an op was added";
    OptionalAdded = "TD031", Info, "an optional argument was added, or a required one became optional";
    EnumWidened = "TD032", Info, "an enum gained values, or lost its restriction";
    BoundLoosened = "TD033", Info, "a bound was loosened or removed, or a type or union widened";
    AliasAdded = "TD034", Info, "an op alias was added (a rename with its old name kept is one)";
    Relaxed = "TD035", Info, "an op became a read, not destructive, visible, or joined a profile";
    UpstreamAdded = "TD040", Security, "an upstream MCP server was added: a command or URL that `serve` and `import --check` would run";
    UpstreamChanged = "TD041", Security, "an upstream's command, arguments, environment names, URL, secret headers or roots changed";
    UpstreamRemoved = "TD042", Info, "an upstream MCP server was removed";
    PoisonedText = "TD050", Security, "text the poisoning lint flags was added or altered in what a model reads";
    Widened = "TD051", Security, "a tool can do more: read became write, it became destructive, a read op gained a free-text argument, or its arguments were opened";
    Lookalike = "TD052", Security, "an added tool's name looks like another tool's (look-alike characters, or one edit from a tool removed in the same change)";
}

impl fmt::Display for DiffCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DiffCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    pub code: DiffCode,
    pub level: Level,
    pub op: String,
    /// JSON pointer into the op's record (`/parameters_schema/properties/priority`).
    pub pointer: String,
    pub message: String,
}

fn finding(code: DiffCode, op: &str, pointer: String, message: String) -> Finding {
    Finding {
        code,
        level: code.level(),
        op: op.to_string(),
        pointer,
        message,
    }
}

/// Every finding between two registries, sorted by op, pointer and code.
pub fn findings(old: &Registry, new: &Registry) -> Vec<Finding> {
    let mut out = Vec::new();
    // Ops that moved: the same tool under another op name.
    let new_by_tool: BTreeMap<&str, &OpRecord> = new
        .ops
        .values()
        .map(|r| (r.tool_name.as_str(), r))
        .collect();
    let mut renamed_to: BTreeSet<&str> = BTreeSet::new();
    for (op, o) in &old.ops {
        if let Some(n) = new.ops.get(op) {
            compare_op(old, new, o, n, &mut out);
            continue;
        }
        match new_by_tool.get(o.tool_name.as_str()) {
            Some(n) if !old.ops.contains_key(&n.op) => {
                renamed_to.insert(&n.op);
                if n.aliases.iter().any(|a| a == op) {
                    out.push(finding(
                        DiffCode::AliasAdded,
                        &n.op,
                        "/aliases".into(),
                        format!("`{op}` was renamed `{}`; the old name stays an alias", n.op),
                    ));
                } else {
                    out.push(finding(
                        DiffCode::OpRenamed,
                        op,
                        String::new(),
                        format!(
                            "`{op}` was renamed `{}`; calls to `{op}` fail (add `aliases = [\"{op}\"]` under [ops.\"{}\"])",
                            n.op, n.op
                        ),
                    ));
                }
                compare_op(old, new, o, n, &mut out);
            }
            _ => out.push(finding(
                DiffCode::OpRemoved,
                op,
                String::new(),
                format!(
                    "`{op}` (tool `{}`) was removed; calls to it fail",
                    o.tool_name
                ),
            )),
        }
    }
    for (op, n) in &new.ops {
        if !old.ops.contains_key(op) && !renamed_to.contains(op.as_str()) {
            out.push(finding(
                DiffCode::OpAdded,
                op,
                String::new(),
                format!("`{op}` (tool `{}`) was added", n.tool_name),
            ));
        }
    }
    compare_upstreams(old, new, &mut out);
    security::findings(old, new, &mut out);
    out.sort();
    out.dedup();
    out
}

fn compare_op(old: &Registry, new: &Registry, o: &OpRecord, n: &OpRecord, out: &mut Vec<Finding>) {
    let op = n.op.as_str();
    let mut push = |code, pointer: &str, message: String| {
        out.push(finding(code, op, pointer.to_string(), message))
    };
    if o.tool_name != n.tool_name {
        push(
            DiffCode::NameChanged,
            "/tool_name",
            format!("tool name `{}` became `{}`", o.tool_name, n.tool_name),
        );
    }
    if o.provider_name != n.provider_name {
        push(
            DiffCode::NameChanged,
            "/provider_name",
            format!(
                "provider name `{}` became `{}`: models calling the old name fail",
                o.provider_name, n.provider_name
            ),
        );
    }
    match (o.kind, n.kind) {
        (Kind::Read, Kind::Write) => push(
            DiffCode::BecameWrite,
            "/kind",
            "read became write: read-only scopes now refuse it".into(),
        ),
        (Kind::Write, Kind::Read) => push(DiffCode::Relaxed, "/kind", "write became read".into()),
        _ => {}
    }
    match (o.destructive, n.destructive) {
        (false, true) => push(
            DiffCode::BecameDestructive,
            "/destructive",
            "became destructive".into(),
        ),
        (true, false) => push(
            DiffCode::Relaxed,
            "/destructive",
            "is no longer destructive".into(),
        ),
        _ => {}
    }
    match (o.hidden, n.hidden) {
        (false, true) => push(
            DiffCode::BecameHidden,
            "/hidden",
            "became hidden: it left every surface, help page and search".into(),
        ),
        (true, false) => push(DiffCode::Relaxed, "/hidden", "became visible".into()),
        _ => {}
    }
    for a in &o.aliases {
        if !n.aliases.contains(a) && a != op {
            push(
                DiffCode::AliasRemoved,
                "/aliases",
                format!("alias `{a}` was removed; calls by it fail"),
            );
        }
    }
    for a in &n.aliases {
        if !o.aliases.contains(a) && *a != o.op {
            push(
                DiffCode::AliasAdded,
                "/aliases",
                format!("alias `{a}` was added"),
            );
        }
    }
    for (field, a, b) in [
        ("summary", &o.summary, &n.summary),
        ("description", &o.description, &n.description),
    ] {
        if a != b {
            push(
                DiffCode::TextChanged,
                &format!("/{field}"),
                format!("the {field} changed: the model sees different text"),
            );
        }
    }
    if o.examples != n.examples {
        push(
            DiffCode::ExampleChanged,
            "/examples",
            "the examples changed".into(),
        );
    }
    if o.policy != n.policy {
        push(
            DiffCode::PolicyChanged,
            "/policy",
            "the policy changed".into(),
        );
    }
    // Profiles: by name, in the old and the new registry (their op lists are sorted).
    let has = |p: &crate::registry::Profile, op: &str| {
        p.ops.binary_search_by(|x| x.as_str().cmp(op)).is_ok()
    };
    for (name, p) in &old.profiles {
        if has(p, &o.op) {
            let still = new.profiles.get(name).is_some_and(|q| has(q, op));
            if !still {
                push(
                    DiffCode::LeftProfile,
                    &format!("/profiles/{name}"),
                    format!("left the profile `{name}`: contexts using it cannot call it"),
                );
            }
        }
    }
    for (name, p) in &new.profiles {
        let was = old.profiles.get(name).is_some_and(|q| has(q, &o.op));
        if has(p, op) && !was {
            push(
                DiffCode::Relaxed,
                &format!("/profiles/{name}"),
                format!("joined the profile `{name}`"),
            );
        }
    }
    let mut schema = SchemaDiff { op, out };
    schema.walk(
        &o.parameters_schema,
        &n.parameters_schema,
        "/parameters_schema",
        0,
    );
}

/// Walks two schemas side by side.
struct SchemaDiff<'a> {
    op: &'a str,
    out: &'a mut Vec<Finding>,
}

/// Deeper than any sane schema; a deeper one is compared as a whole.
const MAX_DEPTH: usize = 64;

fn types(s: &Value) -> Option<BTreeSet<String>> {
    match s.get("type")? {
        Value::String(t) => Some([t.clone()].into()),
        Value::Array(a) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

/// Whether type set `a` accepts everything `b` does (`number` accepts `integer`).
fn covers(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    b.iter()
        .all(|t| a.contains(t) || (t == "integer" && a.contains("number")))
}

fn prop_pointer(at: &str, name: &str) -> String {
    format!(
        "{at}/properties/{}",
        name.replace('~', "~0").replace('/', "~1")
    )
}

impl SchemaDiff<'_> {
    fn push(&mut self, code: DiffCode, pointer: &str, message: String) {
        self.out
            .push(finding(code, self.op, pointer.to_string(), message));
    }

    fn walk(&mut self, o: &Value, n: &Value, at: &str, depth: usize) {
        if o == n {
            return;
        }
        if depth > MAX_DEPTH {
            self.push(
                DiffCode::TypeNarrowed,
                at,
                "a deeply nested schema changed".into(),
            );
            return;
        }
        let field = field_name(at);
        self.types(o, n, at, &field);
        self.enums(o, n, at, &field);
        self.bounds(o, n, at, &field);
        if o.get("default") != n.get("default") {
            if let Some(d) = n.get("default") {
                self.push(
                    DiffCode::DefaultChanged,
                    &format!("{at}/default"),
                    format!("the default of {field} is now {d}"),
                );
            } else {
                self.push(
                    DiffCode::DefaultChanged,
                    &format!("{at}/default"),
                    format!("{field} lost its default"),
                );
            }
        }
        if o.get("description") != n.get("description") && !at.ends_with("/parameters_schema") {
            self.push(
                DiffCode::TextChanged,
                &format!("{at}/description"),
                format!("the description of {field} changed"),
            );
        }
        self.properties(o, n, at, depth);
        for key in ["items", "additionalProperties"] {
            if let (Some(a @ Value::Object(_)), Some(b @ Value::Object(_))) =
                (o.get(key), n.get(key))
            {
                self.walk(a, b, &format!("{at}/{key}"), depth + 1);
            }
        }
        self.unions(o, n, at, &field);
        for key in ["$defs", "definitions"] {
            if let (Some(a), Some(b)) = (
                o.get(key).and_then(Value::as_object),
                n.get(key).and_then(Value::as_object),
            ) {
                for (name, sa) in a {
                    if let Some(sb) = b.get(name) {
                        self.walk(sa, sb, &format!("{at}/{key}/{name}"), depth + 1);
                    }
                }
            }
        }
    }

    fn types(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        let (Some(a), Some(b)) = (types(o), types(n)) else {
            if types(o).is_none() && types(n).is_some() {
                self.push(
                    DiffCode::TypeNarrowed,
                    &format!("{at}/type"),
                    format!("{field} is now restricted to {}", n["type"]),
                );
            } else if types(o).is_some() && types(n).is_none() {
                self.push(
                    DiffCode::BoundLoosened,
                    &format!("{at}/type"),
                    format!("{field} no longer restricts its type"),
                );
            }
            return;
        };
        if a == b {
            return;
        }
        if covers(&b, &a) {
            self.push(
                DiffCode::BoundLoosened,
                &format!("{at}/type"),
                format!(
                    "the type of {field} widened: {} -> {}",
                    o["type"], n["type"]
                ),
            );
        } else {
            self.push(
                DiffCode::TypeNarrowed,
                &format!("{at}/type"),
                format!(
                    "the type of {field} changed: {} -> {}; calls sending the old type fail",
                    o["type"], n["type"]
                ),
            );
        }
    }

    fn enums(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        let (a, b) = (
            o.get("enum").and_then(Value::as_array),
            n.get("enum").and_then(Value::as_array),
        );
        let pointer = format!("{at}/enum");
        match (a, b) {
            (Some(a), Some(b)) => {
                let removed: Vec<String> = a
                    .iter()
                    .filter(|v| !b.contains(v))
                    .map(Value::to_string)
                    .collect();
                let added: Vec<String> = b
                    .iter()
                    .filter(|v| !a.contains(v))
                    .map(Value::to_string)
                    .collect();
                if !removed.is_empty() {
                    self.push(
                        DiffCode::EnumValueRemoved,
                        &pointer,
                        format!("{field} no longer accepts {}", removed.join(", ")),
                    );
                }
                if !added.is_empty() {
                    self.push(
                        DiffCode::EnumWidened,
                        &pointer,
                        format!("{field} also accepts {}", added.join(", ")),
                    );
                }
            }
            (None, Some(b)) => self.push(
                DiffCode::EnumValueRemoved,
                &pointer,
                format!(
                    "{field} is now restricted to {}",
                    b.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            (Some(_), None) => self.push(
                DiffCode::EnumWidened,
                &pointer,
                format!("{field} is no longer restricted to a list of values"),
            ),
            (None, None) => {}
        }
    }

    fn bounds(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        // (keyword, true when a larger value is tighter)
        const LOWER: [&str; 5] = [
            "minimum",
            "exclusiveMinimum",
            "minLength",
            "minItems",
            "minProperties",
        ];
        const UPPER: [&str; 5] = [
            "maximum",
            "exclusiveMaximum",
            "maxLength",
            "maxItems",
            "maxProperties",
        ];
        let keys = LOWER
            .iter()
            .map(|k| (*k, true))
            .chain(UPPER.iter().map(|k| (*k, false)));
        for (key, larger_is_tighter) in keys {
            let (a, b) = (
                o.get(key).and_then(Value::as_f64),
                n.get(key).and_then(Value::as_f64),
            );
            let pointer = format!("{at}/{key}");
            let tighter = match (a, b) {
                (None, Some(_)) => Some(true),
                (Some(_), None) => Some(false),
                (Some(x), Some(y)) if x != y => Some((y > x) == larger_is_tighter),
                _ => None,
            };
            match tighter {
                Some(true) => self.push(
                    DiffCode::BoundTightened,
                    &pointer,
                    format!(
                        "{key} of {field} tightened: {} -> {}",
                        show(o.get(key)),
                        show(n.get(key))
                    ),
                ),
                Some(false) => self.push(
                    DiffCode::BoundLoosened,
                    &pointer,
                    format!(
                        "{key} of {field} loosened: {} -> {}",
                        show(o.get(key)),
                        show(n.get(key))
                    ),
                ),
                None => {}
            }
        }
        for key in ["pattern", "format", "const"] {
            let pointer = format!("{at}/{key}");
            match (o.get(key), n.get(key)) {
                (a, Some(b)) if a != Some(b) => self.push(
                    DiffCode::BoundTightened,
                    &pointer,
                    format!("{field} now must match {key} {b}"),
                ),
                (Some(_), None) => self.push(
                    DiffCode::BoundLoosened,
                    &pointer,
                    format!("{field} no longer has a {key}"),
                ),
                _ => {}
            }
        }
    }

    fn properties(&mut self, o: &Value, n: &Value, at: &str, depth: usize) {
        let empty = serde_json::Map::new();
        let (op, np) = (
            o.get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty),
            n.get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty),
        );
        let required = |s: &Value| -> BTreeSet<String> {
            crate::schema::required(s)
                .into_iter()
                .map(str::to_owned)
                .collect()
        };
        let (or, nr) = (required(o), required(n));
        let removed: Vec<&String> = op.keys().filter(|k| !np.contains_key(*k)).collect();
        let added: Vec<&String> = np.keys().filter(|k| !op.contains_key(*k)).collect();
        for name in &removed {
            // A property with the very same schema under a new name is a rename.
            let twin = added.iter().find(|a| np[a.as_str()] == op[name.as_str()]);
            let message = match twin {
                Some(t) => {
                    format!("argument `{name}` was renamed `{t}`; calls using `{name}` fail")
                }
                None => format!("argument `{name}` was removed; calls using it fail"),
            };
            self.push(DiffCode::ArgRemoved, &prop_pointer(at, name), message);
        }
        for name in &added {
            let has_default = np[name.as_str()].get("default").is_some();
            if nr.contains(name.as_str()) && !has_default {
                self.push(
                    DiffCode::RequiredAdded,
                    &prop_pointer(at, name),
                    format!("required argument `{name}` was added; calls without it fail"),
                );
            } else {
                self.push(
                    DiffCode::OptionalAdded,
                    &prop_pointer(at, name),
                    format!("optional argument `{name}` was added"),
                );
            }
        }
        for (name, a) in op {
            let Some(b) = np.get(name) else { continue };
            let pointer = prop_pointer(at, name);
            match (or.contains(name), nr.contains(name)) {
                (false, true) if b.get("default").is_none() => self.push(
                    DiffCode::RequiredAdded,
                    &pointer,
                    format!("argument `{name}` became required"),
                ),
                (true, false) => self.push(
                    DiffCode::OptionalAdded,
                    &pointer,
                    format!("argument `{name}` became optional"),
                ),
                _ => {}
            }
            self.walk(a, b, &pointer, depth + 1);
        }
        let open = |s: &Value| s.get("additionalProperties") != Some(&Value::Bool(false));
        if o.get("properties").is_some() || n.get("properties").is_some() {
            match (open(o), open(n)) {
                (true, false) => self.push(
                    DiffCode::ClosedProperties,
                    &format!("{at}/additionalProperties"),
                    "`additionalProperties` was closed: calls with extra arguments fail".into(),
                ),
                (false, true) => self.push(
                    DiffCode::BoundLoosened,
                    &format!("{at}/additionalProperties"),
                    "`additionalProperties` was opened".into(),
                ),
                _ => {}
            }
        }
    }

    fn unions(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        for key in ["anyOf", "oneOf"] {
            let (Some(a), Some(b)) = (
                o.get(key).and_then(Value::as_array),
                n.get(key).and_then(Value::as_array),
            ) else {
                continue;
            };
            let lost = a.iter().filter(|m| !b.contains(m)).count();
            let gained = b.iter().filter(|m| !a.contains(m)).count();
            if lost > 0 {
                self.push(
                    DiffCode::TypeNarrowed,
                    &format!("{at}/{key}"),
                    format!("the union of {field} lost {lost} member(s)"),
                );
            } else if gained > 0 {
                self.push(
                    DiffCode::BoundLoosened,
                    &format!("{at}/{key}"),
                    format!("the union of {field} gained {gained} member(s)"),
                );
            }
        }
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "none".into(), Value::to_string)
}

/// `argument `priority`` for a property pointer, `the arguments` at the top.
fn field_name(at: &str) -> String {
    let path: Vec<&str> = at
        .split('/')
        .skip(2)
        .filter(|s| *s != "properties" && *s != "items")
        .collect();
    if path.is_empty() {
        "the arguments".into()
    } else {
        format!("`{}`", path.join("."))
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `[upstreams]` changes: what toolreg would start or connect to is code, so an added or
/// changed launch spec is a security finding whatever else the change does.
fn compare_upstreams(old: &Registry, new: &Registry, out: &mut Vec<Finding>) {
    use crate::trust::launch_line;
    for (name, n) in &new.upstreams {
        let at = format!("[upstreams.{}]", crate::diag::escape_controls(name));
        let pointer = format!("/upstreams/{}", name.replace('~', "~0").replace('/', "~1"));
        match old.upstreams.get(name) {
            None => out.push(finding(
                DiffCode::UpstreamAdded,
                &at,
                pointer,
                format!(
                    "new upstream runs `{}`; review it as code (`toolreg approve` lets it run)",
                    launch_line(n)
                ),
            )),
            Some(o) if crate::trust::launch_digest(name, o) != crate::trust::launch_digest(name, n) => {
                out.push(finding(
                    DiffCode::UpstreamChanged,
                    &at,
                    pointer,
                    format!(
                        "now runs `{}` (was `{}`); review it as code (`toolreg approve` lets it run)",
                        launch_line(n),
                        launch_line(o)
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    for (name, o) in &old.upstreams {
        if !new.upstreams.contains_key(name) {
            out.push(finding(
                DiffCode::UpstreamRemoved,
                &format!("[upstreams.{}]", crate::diag::escape_controls(name)),
                format!("/upstreams/{}", name.replace('~', "~0").replace('/', "~1")),
                format!("no longer runs `{}`", launch_line(o)),
            ));
        }
    }
}

/// A whole diff: findings plus what it costs the prompt caches.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub old_version: String,
    pub new_version: String,
    pub findings: Vec<Finding>,
    pub prompt_cache: Vec<cache::Impact>,
    pub summary: Summary,
}

/// Counts per level (`security` only in JSON when there are some, so older reports keep
/// their bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    #[serde(skip_serializing_if = "is_zero")]
    pub security: usize,
    pub breaking: usize,
    pub warning: usize,
    pub info: usize,
}

/// Diffs two registries: findings, and (unless `with_cache` is false) the prompt-cache impact.
pub fn diff(old: &Registry, new: &Registry, with_cache: bool) -> Report {
    let findings = findings(old, new);
    let mut summary = Summary::default();
    for f in &findings {
        match f.level {
            Level::Security => summary.security += 1,
            Level::Breaking => summary.breaking += 1,
            Level::Warning => summary.warning += 1,
            Level::Info => summary.info += 1,
        }
    }
    Report {
        old_version: old.registry_version.clone(),
        new_version: new.registry_version.clone(),
        prompt_cache: if with_cache {
            cache::impact(old, new)
        } else {
            Vec::new()
        },
        findings,
        summary,
    }
}

impl Report {
    /// Whether a finding at `level` or worse exists.
    pub fn has(&self, level: Level) -> bool {
        self.findings.iter().any(|f| f.level <= level)
    }
}
