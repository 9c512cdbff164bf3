//! The registry IR: what the compiler produces and every emitter and the runtime read.
//!
//! This module depends only on serde, so the runtime can load `registry.json` without the code
//! generators. Maps are `BTreeMap`s so iteration order, and therefore every output, is stable.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Name written into every artifact's `generator` field.
pub const GENERATOR: &str = "toolreg";

/// Version of the registry format. Part of the version hash: bump it when the shape or the
/// meaning of the IR changes, so every stamped artifact changes with it.
pub const FORMAT_VERSION: u32 = 1;

/// The longest op name. Ops become help paths, file names of docs pages and metric labels; an
/// inferred op that would be longer (a tool name of thousands of characters) gets a short, stable
/// one from the name's hash instead.
pub const MAX_OP_LEN: usize = 128;

/// Whether an op is dotted lowercase with at least two segments, at most [`MAX_OP_LEN`] long.
pub fn valid_op(op: &str) -> bool {
    if op.len() > MAX_OP_LEN {
        return false;
    }
    let segs: Vec<&str> = op.split('.').collect();
    segs.len() >= 2
        && segs.iter().all(|s| {
            let mut c = s.chars();
            c.next().is_some_and(|f| f.is_ascii_lowercase())
                && c.all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_')
        })
}

/// Read or write: one authoritative value per op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Read,
    Write,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
        }
    }
}

/// The MCP tool annotations, kept as declared (they feed kind and destructive).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl McpAnnotations {
    /// Reads the known hints from an `annotations` object; other keys are ignored.
    pub fn from_json(obj: &Map<String, Value>) -> Self {
        let flag = |k: &str| obj.get(k).and_then(Value::as_bool);
        McpAnnotations {
            title: obj.get("title").and_then(Value::as_str).map(str::to_owned),
            read_only_hint: flag("readOnlyHint"),
            destructive_hint: flag("destructiveHint"),
            idempotent_hint: flag("idempotentHint"),
            open_world_hint: flag("openWorldHint"),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == McpAnnotations::default()
    }
}

/// Where an op's definition came from. Not part of the version hash: renaming or reordering
/// files must not change the registry version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// Relative to the definitions folder, `/`-separated.
    pub file: String,
    /// Position in the file's tool list.
    pub index: usize,
    /// JSON pointer of the entry.
    pub pointer: String,
}

/// Where a piece of guidance came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Written in the overlay.
    Overlay,
    /// Derived by toolreg (a synthesized call, a drafted policy).
    Derived,
}

/// A worked call: what it does and the arguments. Every example validates against its op's
/// schema (checked at build time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    pub description: String,
    pub args: Value,
    pub origin: Origin,
}

/// Structured guidance drafted from a description or authored in the overlay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    #[serde(rename = "do")]
    pub do_: Vec<String>,
    pub dont: Vec<String>,
    pub edge_cases: Vec<String>,
    pub origin: Origin,
}

/// One top-level argument, for help pages, usage lines and docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arg {
    pub name: String,
    /// Display type: `string`, `integer`, `string|number`, `array<string>`, `object`, `any`.
    #[serde(rename = "type")]
    pub type_: String,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    pub enum_: Option<Vec<Value>>,
    /// `min..max` for numbers, when the schema bounds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// One op: a classified, normalized tool (seed 000 section 5.3 plus toolreg's fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpRecord {
    /// Dotted semantic name, `group.entity[.sub].action`.
    pub op: String,
    /// The tool's name as defined (what the underlying implementation is called).
    pub tool_name: String,
    /// A name every major provider accepts (`^[a-zA-Z0-9_-]{1,64}$`); equals `tool_name` when
    /// that is already valid.
    pub provider_name: String,
    pub description: String,
    /// First sentence of the description (or the overlay's summary).
    pub summary: String,
    /// Normalized JSON Schema of the arguments, properties in declared order.
    pub parameters_schema: Value,
    /// What the tool's structured result looks like, when its source declares it (MCP
    /// `outputSchema`), normalized like the arguments. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub group: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    pub action: String,
    pub kind: Kind,
    pub destructive: bool,
    pub dry_run_default: bool,
    pub hidden: bool,
    /// Arguments the schema does not declare reach the handler or upstream (the overlay's
    /// `pass_unknown_arguments`); by default they are dropped. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pass_unknown_arguments: bool,
    pub tags: Vec<String>,
    pub aliases: Vec<String>,
    /// The overlay's `when_to_use`: when to pick this op, in users' words (searched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_use: Option<String>,
    /// The overlay's `queries`: requests the team has seen for this op (searched).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<String>,
    /// The overlay's `display`: where an operation event reads the entity's name
    /// (`args.title`, `result.name`); see `model::operation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Top-level arguments in declared order.
    pub args: Vec<Arg>,
    /// Required arguments, in declared order.
    pub required_args: Vec<String>,
    /// Arguments that take ids of other records (`task_id`, `document_ids`).
    pub id_args: Vec<String>,
    /// Ops to call first to find the required ids, then this op; empty when none are needed.
    pub id_discovery: Vec<String>,
    /// Argument aliases the runtime renames (alias, possibly a dotted path -> argument).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arg_aliases: BTreeMap<String, String>,
    pub examples: Vec<Example>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpAnnotations>,
    pub source: Source,
    /// What the tool's source said, pinned (see `trust::pin`): `toolreg.lock` records it, and
    /// `serve` compares an upstream's live tools with it. Not part of the version hash (like
    /// `source`, it says where the op came from, not what it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<ToolPin>,
}

/// The digests of a tool definition as its source wrote it: the whole (`b3:` and 64 hex
/// digits) and each part (`description`, `inputSchema`, ...: `b3:` and 16 hex digits).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPin {
    pub digest: String,
    pub parts: BTreeMap<String, String>,
}

impl Arg {
    /// The placeholder shown in usage lines: enum values joined by `|`, else `<type>` (with the
    /// range for bounded numbers: `<integer 1..5>`). Long enums show their first values and a
    /// count (`a|b|...|+96 more`).
    pub fn placeholder(&self) -> String {
        let mut out = String::new();
        self.write_placeholder(&mut out);
        out
    }

    /// [`Arg::placeholder`], appended to `out` (a usage line is built in one buffer).
    fn write_placeholder(&self, out: &mut String) {
        use std::fmt::Write as _;
        if let Some(values) = &self.enum_ {
            for (k, v) in values.iter().take(USAGE_MAX_VALUES).enumerate() {
                if k > 0 {
                    out.push('|');
                }
                match v.as_str() {
                    Some(s) => out.push_str(s),
                    None => {
                        let _ = write!(out, "{v}");
                    }
                }
            }
            if values.len() > USAGE_MAX_VALUES {
                let _ = write!(out, "|+{} more", values.len() - USAGE_MAX_VALUES);
            }
            return;
        }
        let _ = match &self.range {
            Some(r) => write!(out, "<{} {r}>", self.type_),
            None => write!(out, "<{}>", self.type_),
        };
    }
}

impl OpRecord {
    /// A CLI-like call shape:
    /// `onto.task.update task_id=<string> [state_key=todo|in_progress|blocked|done] ...`.
    pub fn usage(&self) -> String {
        // Every required argument first, then optional ones, up to the cap; shown in order.
        let required = self.args.iter().filter(|a| a.required).count();
        let optional_room = USAGE_MAX_ARGS.saturating_sub(required);
        let mut optional_seen = 0;
        let mut shown = 0;
        // One buffer: a usage line is made for every op page and listing.
        let mut line = self.op.clone();
        for a in &self.args {
            if !a.required {
                optional_seen += 1;
                if optional_seen > optional_room {
                    continue;
                }
            }
            if shown == USAGE_MAX_ARGS {
                continue;
            }
            shown += 1;
            line.push(' ');
            if !a.required {
                line.push('[');
            }
            line.push_str(&a.name);
            line.push('=');
            a.write_placeholder(&mut line);
            if !a.required {
                line.push(']');
            }
        }
        let hidden = self.args.len() - shown;
        if hidden > 0 {
            use std::fmt::Write as _;
            let _ = write!(line, " ... ({hidden} more arguments: see the op's help)");
        }
        line
    }
}

/// Arguments a usage line shows; the rest are counted (`... (N more arguments ...)`). A usage
/// line is a synopsis for directory pages and error envelopes: a schema with 100,000 properties
/// made each of them megabytes.
pub const USAGE_MAX_ARGS: usize = 32;

/// Enum values an argument's placeholder shows.
pub const USAGE_MAX_VALUES: usize = 16;

/// An entity's node in the op tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityNode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plural: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Ops of this entity, sorted.
    pub ops: Vec<String>,
}

/// A group's node in the op tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupNode {
    pub summary: String,
    pub entities: BTreeMap<String, EntityNode>,
    /// Ops directly under the group (no entity), sorted.
    pub ops: Vec<String>,
}

/// Totals, for reports and quick sanity checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub ops: usize,
    pub groups: usize,
    pub entities: usize,
    pub read: usize,
    pub write: usize,
    pub destructive: usize,
    pub hidden: usize,
}

/// A per-context subset of ops (a "profile"): the direct tool definitions a model gets for one
/// kind of conversation. `core` ops keep their full description; the rest are deferred (one-line
/// summary plus a pointer to their help path).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Selected ops, sorted.
    pub ops: Vec<String>,
    /// The subset of `ops` that keeps full descriptions, sorted.
    pub core: Vec<String>,
}

/// Ops offered together for per-turn tool selection (seed 004).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Resolved ops, sorted.
    pub ops: Vec<String>,
    /// Phrases that select the cluster when they appear in a message (lowercase).
    pub triggers: Vec<String>,
    /// Contexts in which the cluster is offered by default.
    pub contexts: Vec<String>,
}

/// The most groups the gateway tools name (the help tool's description, the search tool's
/// `group` enum) and the help root lists in its own order; past it, help root is one call away
/// and is paged, largest groups first, so the gateway's cost stays flat at any catalog size.
pub const MAX_LISTED_GROUPS: usize = 12;

/// The most items one batch call may hold (`tool_batch`).
pub const MAX_BATCH_ITEMS: usize = 16;

/// Names of the gateway tools the model sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayNames {
    pub help: String,
    pub exec: String,
    pub search: String,
    /// The batch tool, when the overlay offers it (`[gateway] batch = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
}

impl GatewayNames {
    /// Every gateway tool's name, the batch tool's when offered.
    pub fn all(&self) -> Vec<&str> {
        let mut names = vec![self.help.as_str(), self.exec.as_str(), self.search.as_str()];
        names.extend(self.batch.as_deref());
        names
    }
}

impl Default for GatewayNames {
    fn default() -> Self {
        GatewayNames {
            help: "tool_help".into(),
            exec: "tool_exec".into(),
            search: "tool_search".into(),
            batch: None,
        }
    }
}

/// Size budgets in o200k tokens; exceeding one is a warning.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_tokens: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_tokens: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_tokens: Option<usize>,
}

/// The whole registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    /// The catalog's name, from the overlay.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub generator: String,
    pub format_version: u32,
    /// `b3:` + 16 hex digits of blake3 over the canonical IR; see `compiler::stamp`.
    pub registry_version: String,
    pub counts: Counts,
    /// group -> entity -> ops.
    pub tree: BTreeMap<String, GroupNode>,
    pub ops: BTreeMap<String, OpRecord>,
    pub profiles: BTreeMap<String, Profile>,
    pub gateway: GatewayNames,
    pub budgets: Budgets,
    /// Search synonyms (lowercase word -> words it also means).
    #[serde(default)]
    pub synonyms: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub clusters: BTreeMap<String, Cluster>,
    /// MCP servers whose tools this catalog imported (`toolreg import mcp`), by name; `toolreg
    /// serve` forwards calls of their ops to them. Absent when there are none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub upstreams: BTreeMap<String, Upstream>,
    /// How the runtime ranks search results (`[search]` in the overlay). Absent when unset.
    #[serde(default, skip_serializing_if = "SearchSettings::is_unset")]
    pub search: SearchSettings,
    /// What each token scope grants a caller of `toolreg serve --http` (`[access]`), with globs
    /// and kinds resolved to op lists. Absent when the overlay has no `[access]`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub access: BTreeMap<String, AccessScope>,
    /// Third-party tools that could not be compiled and were left out of every surface, with
    /// why. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quarantined: Vec<QuarantinedTool>,
}

/// A tool of a third-party file (an imported MCP snapshot, or a file `[sources] third_party`
/// names) that could not be compiled: it is in no surface and no op; the build goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantinedTool {
    pub tool_name: String,
    /// The definitions file, relative to the definitions folder.
    pub file: String,
    /// JSON pointer of the tool's entry in the file.
    pub pointer: String,
    /// The codes of the errors that quarantined it (`TR037`, ...).
    pub codes: Vec<String>,
    /// The first error's message.
    pub reason: String,
}

/// The ops one token scope grants (sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessScope {
    pub ops: Vec<String>,
}

/// `[search]`: settings the runtime reads when it ranks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// Weight of semantic similarity in hybrid search, 0..1 (feature `semantic`); unset means
    /// the runtime's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_weight: Option<f64>,
    /// `match` floors chosen on the team's own queries (`toolreg eval --calibrate`) for lexical
    /// search (the signal is the best op's coverage of the query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_lexical: Option<MatchFloors>,
    /// The same for hybrid search (the nearest op's cosine plus half the coverage), with the
    /// model the team calibrated on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_hybrid: Option<MatchFloors>,
}

/// Where `match` changes: below `none_below` no op does what was asked; from `strong_from` the
/// best op does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchFloors {
    pub none_below: f64,
    pub strong_from: f64,
}

impl SearchSettings {
    pub fn is_unset(&self) -> bool {
        self.semantic_weight.is_none()
            && self.match_lexical.is_none()
            && self.match_hybrid.is_none()
    }
}

/// An MCP server a catalog's tools came from: a command to start (stdio) or a URL (streamable
/// HTTP). Its ops are those defined in `file` (`NAME.mcp.json`); calls keep the tool's name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upstream {
    /// The definitions file holding its tools/list snapshot.
    #[serde(default)]
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Names of environment variables the server needs (values come from the environment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Per-call time limit in milliseconds (default 30,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A `url` upstream's token: the name of the environment variable whose value is sent as
    /// `Authorization: Bearer ...` (the value never enters a file or an answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_env: Option<String>,
    /// A `url` upstream's other secret headers: header name -> environment variable name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub header_env: BTreeMap<String, String>,
    /// Absolute folders offered to the server as MCP roots (`roots/list`). Empty: the client
    /// does not declare roots, and the server keeps its own configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
}

/// The journal of a committed but unfinished write in an output folder (see `output`): while
/// it exists, the folder may mix two builds. `build` and `check` finish it; readers refuse.
pub const COMMIT_JOURNAL: &str = ".toolreg-staging/.journal.json";

/// Whether `dir` holds a build that was interrupted after its commit.
pub fn interrupted_commit(dir: &std::path::Path) -> bool {
    dir.join(COMMIT_JOURNAL).exists()
}

/// Why a registry could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read registry `{path}`: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("registry is not valid: {0}")]
    Json(#[from] serde_json::Error),
    #[error("registry format {found} is not supported by this toolreg (expects {FORMAT_VERSION}); rebuild it")]
    Format { found: u32 },
}

impl Registry {
    /// The registry's top level without its ops and tree (cloned; the ops are most of a
    /// registry): what an artifact that reads ops elsewhere keeps of it.
    pub fn head(&self) -> Registry {
        Registry {
            name: self.name.clone(),
            description: self.description.clone(),
            generator: self.generator.clone(),
            format_version: self.format_version,
            registry_version: self.registry_version.clone(),
            counts: self.counts.clone(),
            tree: BTreeMap::new(),
            ops: BTreeMap::new(),
            profiles: self.profiles.clone(),
            gateway: self.gateway.clone(),
            budgets: self.budgets.clone(),
            synonyms: self.synonyms.clone(),
            clusters: self.clusters.clone(),
            upstreams: self.upstreams.clone(),
            search: self.search.clone(),
            access: self.access.clone(),
            quarantined: self.quarantined.clone(),
        }
    }

    /// Parses `registry.json` bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, LoadError> {
        let reg: Registry = serde_json::from_slice(bytes)?;
        if reg.format_version != FORMAT_VERSION {
            return Err(LoadError::Format {
                found: reg.format_version,
            });
        }
        Ok(reg)
    }

    /// Reads and parses a `registry.json` file.
    pub fn from_path(path: impl AsRef<std::path::Path>) -> Result<Self, LoadError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_slice(&bytes)
    }

    /// The op a tool name maps to: the tool whose provider name it is (unique in a registry),
    /// else the first tool, by op, of that name (two servers of a fleet may share one).
    pub fn op_by_tool_name(&self, tool_name: &str) -> Option<&OpRecord> {
        self.ops
            .values()
            .find(|r| r.provider_name == tool_name)
            .or_else(|| self.ops.values().find(|r| r.tool_name == tool_name))
    }
}
