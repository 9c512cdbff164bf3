//! The overlay, `toolreg.toml`: what tool definitions cannot say (name -> op rules, special
//! cases, the entity vocabulary, group summaries, per-op overrides).
//!
//! Every table rejects unknown keys; the diagnostic names the key and the nearest valid one.
//! Positions come from `toml::Spanned`, so semantic errors later point into the file too.

use crate::model::diag::{nearest, Code, Diagnostic, Diagnostics, Location};
use crate::model::registry::Kind;
use schemars08::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

/// The overlay's file name inside the definitions folder.
pub const OVERLAY_FILE: &str = "toolreg.toml";

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct Overlay {
    #[serde(default)]
    pub registry: RegistryMeta,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, GroupSpec>")]
    pub groups: BTreeMap<Spanned<String>, GroupSpec>,
    /// Singular -> plural (or a table with `plural` and `summary`).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, EntityEntry>")]
    pub entities: BTreeMap<Spanned<String>, EntityEntry>,
    /// Ordered pattern rules; the first that matches wins.
    #[serde(default)]
    #[schemars(with = "Vec<Rule>")]
    pub rules: Vec<Spanned<Rule>>,
    /// Exact tool name -> op (or a table with `op`, `kind`, `destructive`). Checked first.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, SpecialEntry>")]
    pub special: BTreeMap<Spanned<String>, SpecialEntry>,
    /// Takes names no special case or rule takes, with a warning.
    #[serde(default)]
    #[schemars(with = "Option<Fallback>")]
    pub fallback: Option<Spanned<Fallback>>,
    /// Per-op overrides, keyed by op.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, OpOverride>")]
    pub ops: BTreeMap<Spanned<String>, OpOverride>,
    /// Generic verb lists used when no rule or override says kind/destructive.
    #[serde(default)]
    pub classify: ClassifySettings,
    /// Phrases that cue policy items when drafting a policy from a description.
    #[serde(default)]
    pub policy_cues: PolicyCues,
    /// Per-context subsets of ops, emitted as typed tool lists.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, ProfileSpec>")]
    pub profiles: BTreeMap<Spanned<String>, ProfileSpec>,
    /// Size budgets (o200k tokens) for surfaces.
    #[serde(default)]
    pub budgets: BudgetSpec,
    /// Names of the gateway tools.
    #[serde(default)]
    pub gateway: GatewaySpec,
    /// Argument aliases for every op whose schema has the target (`task_title = "title"`).
    #[serde(default)]
    pub arg_aliases: BTreeMap<String, String>,
    /// Search synonyms: a word -> words it also means (`reschedule = ["update"]`).
    #[serde(default)]
    pub synonyms: BTreeMap<String, Vec<String>>,
    /// Clusters of ops for per-turn tool selection, with trigger phrases.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, ClusterSpec>")]
    pub clusters: BTreeMap<Spanned<String>, ClusterSpec>,
    /// MCP servers the catalog's `NAME.mcp.json` files were imported from (`toolreg import mcp`).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, UpstreamSpec>")]
    pub upstreams: BTreeMap<Spanned<String>, UpstreamSpec>,
    /// Search settings the runtime reads from the registry.
    #[serde(default)]
    pub search: SearchSpec,
    /// Where the definitions came from: which files are third-party.
    #[serde(default)]
    pub sources: SourcesSpec,
    /// Who may see and call which ops when `toolreg serve --http` authenticates callers.
    #[serde(default)]
    pub access: AccessSpec,
}

/// `[access]`: what each token scope grants a caller of `toolreg serve --http`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    /// Scope name (as in a token's `scope` claim or the token file) -> what it grants.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, AccessScopeSpec>")]
    pub scopes: BTreeMap<Spanned<String>, AccessScopeSpec>,
}

/// `[access.scopes."NAME"]`: ops (globs, default every op) of the given kinds (default `read`).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct AccessScopeSpec {
    #[serde(default)]
    pub ops: Vec<String>,
    /// Ops of these profiles too.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// `read`, `write` (not destructive), `destructive`; `["read"]` when not given.
    pub kinds: Option<Vec<String>>,
}

/// `[sources]`: which definitions files the team did not write. A tool of such a file that cannot
/// be compiled is quarantined (left out, reported) instead of stopping the build; imported MCP
/// snapshots (`*.mcp.json`) always count as third-party.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct SourcesSpec {
    /// Globs over file paths relative to the definitions folder (`*` matches any characters,
    /// `/` included): `third_party = ["vendor/*", "openapi-export.json"]`.
    #[serde(default)]
    pub third_party: Vec<String>,
}

/// `[search]`: how the runtime ranks.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct SearchSpec {
    /// Weight of semantic similarity in hybrid search, 0..1 (feature `semantic`).
    #[schemars(with = "Option<f64>")]
    pub semantic_weight: Option<Spanned<f64>>,
    /// `match` floors for lexical search, from `toolreg eval --calibrate` on the team's queries.
    #[schemars(with = "Option<crate::model::registry::MatchFloors>")]
    pub match_lexical: Option<Spanned<crate::model::registry::MatchFloors>>,
    /// `match` floors for hybrid search with the team's model.
    #[schemars(with = "Option<crate::model::registry::MatchFloors>")]
    pub match_hybrid: Option<Spanned<crate::model::registry::MatchFloors>>,
}

/// `[upstreams.NAME]`: how to reach the MCP server whose tools are in `NAME.mcp.json`; either a
/// command (stdio) or a streamable HTTP `url`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables the server needs, by name only (never values).
    #[serde(default)]
    pub env: Vec<String>,
    pub url: Option<String>,
    pub timeout_ms: Option<u64>,
    /// A `url` upstream's token: the environment variable sent as `Authorization: Bearer`.
    pub bearer_env: Option<String>,
    /// A `url` upstream's secret headers: header name -> environment variable name.
    #[serde(default)]
    pub header_env: BTreeMap<String, String>,
    /// Absolute folders offered to the server as MCP roots; none: roots are not declared.
    #[serde(default)]
    pub roots: Vec<String>,
}

impl UpstreamSpec {
    /// The registry's form of this entry (environment names sorted, once each): what
    /// `serve` runs, and what an approval's digest covers.
    pub fn to_upstream(&self, name: &str) -> crate::model::registry::Upstream {
        let mut env = self.env.clone();
        env.sort();
        env.dedup();
        crate::model::registry::Upstream {
            file: format!("{name}.mcp.json"),
            command: self.command.clone(),
            args: self.args.clone(),
            env,
            url: self.url.clone(),
            timeout_ms: self.timeout_ms,
            bearer_env: self.bearer_env.clone(),
            header_env: self.header_env.clone(),
            roots: self.roots.clone(),
        }
    }
}

/// A cluster: ops offered together when a trigger phrase appears in the user's message, or by
/// default in the listed contexts.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    pub description: Option<String>,
    #[serde(default)]
    pub ops: Vec<String>,
    #[serde(default)]
    pub triggers: Vec<String>,
    #[serde(default)]
    pub contexts: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct PolicyCues {
    #[serde(rename = "do", default = "default_do_cues")]
    pub do_: Vec<String>,
    #[serde(default = "default_dont_cues")]
    pub dont: Vec<String>,
    #[serde(default = "default_edge_cues")]
    pub edge_cases: Vec<String>,
}

impl Default for PolicyCues {
    fn default() -> Self {
        PolicyCues {
            do_: default_do_cues(),
            dont: default_dont_cues(),
            edge_cases: default_edge_cues(),
        }
    }
}

fn phrases(list: &str) -> Vec<String> {
    list.split('|').map(str::to_owned).collect()
}

fn default_do_cues() -> Vec<String> {
    phrases("Use when|Use this when|Use for|Use this to|Use after|Use before|Only when|Call this when|Prefer this|Start here")
}

fn default_dont_cues() -> Vec<String> {
    phrases("Do not|Don't|Never|Avoid|Must not|Should not")
}

fn default_edge_cues() -> Vec<String> {
    phrases("If ambiguous|If unsure|If unclear|If the user|If you are not sure|Edge case|Unless")
}

/// An authored policy, replacing the drafted one.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    #[serde(rename = "do", default)]
    pub do_: Vec<String>,
    #[serde(default)]
    pub dont: Vec<String>,
    #[serde(default)]
    pub edge_cases: Vec<String>,
}

/// An authored example call.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct ExampleSpec {
    pub description: String,
    pub args: serde_json::Value,
}

/// A profile: ops selected by name or glob (`onto.task.*`), optionally filtered by kind.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    pub description: Option<String>,
    #[serde(default)]
    pub ops: Vec<String>,
    /// Only ops of these kinds (default: both).
    #[serde(default)]
    pub kinds: Vec<Kind>,
    /// Ops (names or globs) that keep their full description; the rest are deferred.
    #[serde(default)]
    pub core: Vec<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    pub tool_tokens: Option<usize>,
    pub profile_tokens: Option<usize>,
    pub gateway_tokens: Option<usize>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct GatewaySpec {
    #[schemars(with = "Option<String>")]
    pub help: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub exec: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub search: Option<Spanned<String>>,
    /// Offer the batch tool (seed 000 §2.3: help, search and exec calls in one round trip).
    #[serde(default)]
    pub batch: bool,
    /// The batch tool's name (implies `batch = true`); `tool_batch` by default.
    #[schemars(with = "Option<String>")]
    pub batch_name: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct RegistryMeta {
    pub name: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    #[serde(default)]
    pub summary: String,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct EntitySpec {
    pub plural: Option<String>,
    pub summary: Option<String>,
}

impl From<String> for EntitySpec {
    fn from(plural: String) -> Self {
        EntitySpec {
            plural: Some(plural),
            summary: None,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// e.g. `list_onto_{entities}`.
    pub pattern: String,
    /// e.g. `onto.{entity}.list`.
    pub op: String,
    pub kind: Option<Kind>,
    pub destructive: Option<bool>,
    /// Only tools from this definitions file (relative path, `*` matches any run of
    /// characters): `file = "memory.mcp.json"`.
    pub file: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct SpecialCase {
    pub op: String,
    pub kind: Option<Kind>,
    pub destructive: Option<bool>,
}

impl From<String> for SpecialCase {
    fn from(op: String) -> Self {
        SpecialCase {
            op,
            kind: None,
            destructive: None,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct Fallback {
    /// e.g. `x.{name}`.
    pub op: String,
    pub kind: Option<Kind>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct OpOverride {
    pub kind: Option<Kind>,
    pub destructive: Option<bool>,
    pub dry_run_default: Option<bool>,
    pub hidden: Option<bool>,
    /// Let arguments the schema does not declare through to the handler or upstream (they are
    /// dropped otherwise): for an op whose schema is incomplete on purpose.
    pub pass_unknown_arguments: Option<bool>,
    pub summary: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub aliases: Vec<Spanned<String>>,
    /// When a model should pick this op, in the words its users use (searched, not shown to
    /// the model as policy).
    pub when_to_use: Option<String>,
    /// Requests the team has seen for this op, as people phrased them (searched).
    #[serde(default)]
    pub queries: Vec<String>,
    /// Where an operation event reads the entity's display name: `args.<argument>` (checked
    /// against the op's schema) or `result.<field>`.
    #[schemars(with = "Option<String>")]
    pub display: Option<Spanned<String>>,
    /// Replaces the policy drafted from the description.
    pub policy: Option<PolicySpec>,
    /// Replace the synthesized example.
    #[serde(default)]
    #[schemars(with = "Vec<ExampleSpec>")]
    pub examples: Vec<Spanned<ExampleSpec>>,
    /// Argument aliases for this op: alias (a dotted path for nested: `task.name`) -> argument.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub arg_aliases: BTreeMap<Spanned<String>, String>,
    /// The poisoning lint for this op: rule id -> level and reason.
    #[serde(default)]
    pub lint: BTreeMap<String, LintTuning>,
}

/// `[ops."OP".lint] RULE = { level, reason }`: a poisoning-lint warning allowed or raised to an
/// error for one op, with the reason a reviewer reads.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct LintTuning {
    pub level: LintLevel,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(rename_all = "lowercase")]
pub enum LintLevel {
    Allow,
    Warning,
    Error,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "schemars08")]
#[serde(deny_unknown_fields)]
pub struct ClassifySettings {
    /// Verbs that make an op a read when nothing else decides (matched against the action, then
    /// the first word of the tool name).
    #[serde(default = "default_read_verbs")]
    pub read_verbs: Vec<String>,
    /// Verbs that make a write op destructive.
    #[serde(default = "default_destructive_verbs")]
    pub destructive_verbs: Vec<String>,
    /// Infer ops from tool names that no special case or rule takes (before the fallback), and
    /// draft missing group summaries, entity plurals and per-group profiles. `false` keeps the
    /// strict behaviour: every name needs a rule, a special case or the fallback.
    #[serde(default = "yes")]
    pub infer: bool,
}

fn yes() -> bool {
    true
}

impl Default for ClassifySettings {
    fn default() -> Self {
        ClassifySettings {
            read_verbs: default_read_verbs(),
            destructive_verbs: default_destructive_verbs(),
            infer: true,
        }
    }
}

// The default verb lists are the lexicon's (`compiler/infer/lexicon.toml`), so inference and the
// kind decision agree on every verb.
fn default_read_verbs() -> Vec<String> {
    super::infer::words::Lexicon::get()
        .read
        .iter()
        .cloned()
        .collect()
}

fn default_destructive_verbs() -> Vec<String> {
    super::infer::words::Lexicon::get()
        .destructive
        .iter()
        .cloned()
        .collect()
}

// "A string or a table": `task = "tasks"` and `task = { plural = "tasks", summary = ".." }`,
// keeping `deny_unknown_fields` errors (an untagged enum would swallow them).
fn string_or_table<'de, T, S, D>(d: D) -> Result<T, D::Error>
where
    T: Deserialize<'de> + From<S>,
    S: Deserialize<'de>,
    D: Deserializer<'de>,
{
    struct V<T, S>(PhantomData<(T, S)>);
    impl<'de, T: Deserialize<'de> + From<S>, S: Deserialize<'de>> Visitor<'de> for V<T, S> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or a table")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            S::deserialize(de::value::StrDeserializer::<E>::new(v)).map(T::from)
        }
        fn visit_map<M: MapAccess<'de>>(self, m: M) -> Result<T, M::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(m))
        }
    }
    d.deserialize_any(V::<T, S>(PhantomData))
}

/// Entity vocabulary entry as written: `task = "tasks"` or a table.
#[derive(Debug)]
pub struct EntityEntry(pub EntitySpec);

impl std::ops::Deref for EntityEntry {
    type Target = EntitySpec;
    fn deref(&self) -> &EntitySpec {
        &self.0
    }
}

impl<'de> Deserialize<'de> for EntityEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        string_or_table::<EntitySpec, String, D>(d).map(EntityEntry)
    }
}

/// Reads `toolreg.toml` from the definitions folder. A missing file is an empty overlay (every
/// tool then needs the fallback, which is also absent: each name is reported as unclassified).
/// Returns the overlay and the file's text (for positions).
pub fn load(dir: &Path, display_dir: &str, diags: &mut Diagnostics) -> Option<LoadedOverlay> {
    let path = dir.join(OVERLAY_FILE);
    let display = super::load::display_path(display_dir, OVERLAY_FILE);
    if !path.exists() {
        return Some(LoadedOverlay {
            overlay: Overlay::default(),
            display,
            text: String::new(),
            path: None,
            lines: super::source::LineIndex::new(""),
        });
    }
    let text = match std::fs::read(&path).map(String::from_utf8) {
        Ok(Ok(t)) => t,
        Ok(Err(_)) => {
            diags.push(
                Diagnostic::new(
                    Code::OverlaySyntax,
                    format!("`{display}` is not valid UTF-8"),
                )
                .at(Location::file(display))
                .help("save the overlay as UTF-8"),
            );
            return None;
        }
        Err(err) => {
            diags.push(
                Diagnostic::new(Code::Io, format!("cannot read `{display}`: {err}"))
                    .at(Location::file(display))
                    .help("check the file's permissions"),
            );
            return None;
        }
    };
    parse(text, display, Some(path), diags)
}

/// Parses overlay text (`path` is the file it came from, if any, for `rerun-if-changed`).
pub fn parse(
    text: String,
    display: String,
    path: Option<std::path::PathBuf>,
    diags: &mut Diagnostics,
) -> Option<LoadedOverlay> {
    match toml::from_str::<Overlay>(&text) {
        Ok(overlay) => Some(LoadedOverlay {
            overlay,
            display,
            lines: super::source::LineIndex::new(&text),
            text,
            path,
        }),
        Err(err) => {
            diags.push(toml_error(&err, &display, &text));
            None
        }
    }
}

/// The overlay plus where it came from.
#[derive(Debug)]
pub struct LoadedOverlay {
    pub overlay: Overlay,
    pub display: String,
    pub text: String,
    /// The file, when one exists (for `rerun-if-changed`).
    pub path: Option<std::path::PathBuf>,
    lines: super::source::LineIndex,
}

impl LoadedOverlay {
    /// No overlay, or one that only records where imported tools came from (`[upstreams]`) and
    /// how to search (`[search]`): the catalog's taxonomy is still entirely inferred.
    pub fn has_no_taxonomy(&self) -> bool {
        self.text.trim().is_empty()
            || self.text.parse::<toml::Table>().is_ok_and(|t| {
                t.keys()
                    .all(|k| k == "upstreams" || k == "search" || k == "sources" || k == "access")
            })
    }

    /// A location from a byte span in the overlay.
    pub fn loc(&self, span: Range<usize>) -> Location {
        if self.text.is_empty() {
            return Location::file(self.display.clone());
        }
        let (line, col) = self.lines.line_col(&self.text, span.start);
        Location::at(self.display.clone(), line, col)
    }
}

/// Special case as written: `name = "op"` or a table.
#[derive(Debug)]
pub struct SpecialEntry(pub SpecialCase);

impl std::ops::Deref for SpecialEntry {
    type Target = SpecialCase;
    fn deref(&self) -> &SpecialCase {
        &self.0
    }
}

impl<'de> Deserialize<'de> for SpecialEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        string_or_table::<SpecialCase, String, D>(d).map(SpecialEntry)
    }
}

/// Turns a toml/serde error into a diagnostic; unknown keys and values get the nearest valid one.
fn toml_error(err: &toml::de::Error, display: &str, text: &str) -> Diagnostic {
    let loc = match err.span() {
        Some(span) => {
            let idx = super::source::LineIndex::new(text);
            let (line, col) = idx.line_col(text, span.start);
            Location::at(display.to_string(), line, col)
        }
        None => Location::file(display.to_string()),
    };
    let msg = err.message().trim().to_string();
    // serde's wording: "unknown field `x`, expected one of `a`, `b`" / "unknown variant ...".
    for (prefix, what) in [("unknown field", "key"), ("unknown variant", "value")] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            let quoted: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
            if let Some((bad, valid)) = quoted.split_first() {
                let code = if what == "key" {
                    Code::OverlayUnknownKey
                } else {
                    Code::OverlaySyntax
                };
                let help = match nearest(bad, valid.iter().copied()) {
                    Some(n) => format!(
                        "did you mean `{n}`? valid {what}s here: {}",
                        valid.join(", ")
                    ),
                    None if valid.is_empty() => format!("this table takes no {what}s"),
                    None => format!("valid {what}s here: {}", valid.join(", ")),
                };
                return Diagnostic::new(code, format!("unknown {what} `{bad}` in {OVERLAY_FILE}"))
                    .at(loc)
                    .help(help);
            }
        }
    }
    Diagnostic::new(Code::OverlaySyntax, format!("{OVERLAY_FILE}: {msg}"))
        .at(loc)
        .help("see the overlay format in the README")
}
