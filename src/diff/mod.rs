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
mod schema;
pub mod security;

use crate::model::registry::{Kind, OpRecord, Registry};
use serde::Serialize;
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
    GatewayRenamed = "TD015", Breaking, "a gateway tool (help, exec or search) was renamed: clients, prompts and examples that call it by name fail";
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
    for (role, was, now) in [
        ("help", &old.gateway.help, &new.gateway.help),
        ("exec", &old.gateway.exec, &new.gateway.exec),
        ("search", &old.gateway.search, &new.gateway.search),
    ] {
        if was != now {
            out.push(finding(
                DiffCode::GatewayRenamed,
                was,
                format!("/gateway/{role}"),
                format!("the {role} gateway tool `{was}` is now `{now}`; calls to `{was}` fail (set `{role} = \"{was}\"` under [gateway] to keep it)"),
            ));
        }
    }
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
    let has = |p: &crate::model::registry::Profile, op: &str| {
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
    schema::compare(op, &o.parameters_schema, &n.parameters_schema, out);
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `[upstreams]` changes: what toolreg would start or connect to is code, so an added or
/// changed launch spec is a security finding whatever else the change does.
fn compare_upstreams(old: &Registry, new: &Registry, out: &mut Vec<Finding>) {
    use crate::trust::launch_line;
    for (name, n) in &new.upstreams {
        let at = format!("[upstreams.{}]", crate::model::diag::escape_controls(name));
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
                &format!("[upstreams.{}]", crate::model::diag::escape_controls(name)),
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
