//! The runtime gateway: serves help, exec, search and the discovery calls over a compiled
//! registry. It reads only what the compiler wrote (`registry.json`, `help.json`) and needs none
//! of the code generators (feature `runtime`, without `compiler`).
//!
//! This file holds the [`Gateway`] itself (loading, options, help, search, ranking). Beside it:
//! `exec` (resolve -> scope -> arguments -> validation -> dry run, idempotency -> handler),
//! `envelope` (the envelope, its error codes, handler errors), `handlers` (registering the
//! code an op runs), `scope` (which ops a call may run), and the modules named below: search,
//! discovery (seed 001), selection (seed 004), idempotency stores, validation, eval.

pub mod batch;
pub mod discovery;
mod envelope;
pub mod eval;
mod exec;
mod handlers;
#[cfg(feature = "semantic")]
pub mod hybrid;
pub mod idempotency;
mod scope;
pub mod search;
pub mod select;
pub mod validate;

pub use envelope::{codes, Envelope, ErrorBody, HandlerError, Meta};
pub use exec::{ExecCall, MAX_ARGS_DEPTH};
pub use handlers::HandlerFuture;
pub use scope::Scope;

use crate::model::help::{HelpDoc, HelpRequest};
use crate::model::registry::{OpRecord, Registry};
use crate::model::resolve::resolve_forgiving;
use search::{SearchIndex, SearchRequest, SearchResponse};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Runtime settings.
#[derive(Clone)]
pub struct Options {
    /// Bounds of the default in-memory store (unused when `idempotency_store` is set).
    pub idempotency_capacity: usize,
    pub idempotency_ttl: Duration,
    /// A shared store (several replicas); `None` keeps keys in this process.
    pub idempotency_store: Option<Arc<dyn idempotency::IdempotencyStore>>,
    /// The scope for calls that do not give one.
    pub scope: Scope,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("idempotency_capacity", &self.idempotency_capacity)
            .field("idempotency_ttl", &self.idempotency_ttl)
            .field(
                "shared_idempotency_store",
                &self.idempotency_store.is_some(),
            )
            .field("scope", &self.scope)
            .finish()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            idempotency_capacity: idempotency::DEFAULT_CAPACITY,
            idempotency_ttl: idempotency::DEFAULT_TTL,
            idempotency_store: None,
            scope: Scope::all(),
        }
    }
}

/// Why a gateway could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    Registry(#[from] crate::model::registry::LoadError),
    #[error("help.json is not valid: {0}")]
    Help(serde_json::Error),
    #[error(
        "help.json was built for registry {help}, but the registry is {registry}; rebuild both"
    )]
    VersionMismatch { help: String, registry: String },
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("no op `{0}` in the registry")]
    UnknownOp(String),
    #[error("`{dir}` holds a build that was interrupted after its commit, so its files may come from two builds; `toolreg check --out {dir}` (or `toolreg build`) finishes it")]
    Interrupted { dir: String },
}

/// The registry and help pages of a folder `toolreg build` wrote. With the folder's
/// `lookup.json` (checked against both files) the help pages are read when first asked for,
/// not parsed at start: `help.json` is the largest file of a build.
pub fn read_dir(dir: &std::path::Path) -> Result<(Registry, HelpDoc), GatewayError> {
    read_dir_with(dir, crate::model::lookup::Lookup::open(dir))
}

/// [`read_dir`] with the folder's `lookup.json` already read (or `None` without one).
pub fn read_dir_with(
    dir: &std::path::Path,
    lookup: Option<crate::model::lookup::Lookup>,
) -> Result<(Registry, HelpDoc), GatewayError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| GatewayError::Io {
            path: path.display().to_string(),
            source,
        })
    };
    let registry = Registry::from_slice(&read("registry.json")?)?;
    let deferred = lookup
        .filter(|l| l.registry_version == registry.registry_version)
        .and_then(|l| HelpDoc::deferred(dir, l).ok());
    let help = match deferred {
        Some(help) => help,
        None => HelpDoc::from_slice(&read("help.json")?).map_err(GatewayError::Help)?,
    };
    Ok((registry, help))
}

/// A gateway over one compiled registry.
pub struct Gateway {
    registry: Arc<Registry>,
    help: HelpDoc,
    /// Built on the first search: help and exec never pay for it (a cold `toolreg help` on a
    /// 10,000-op registry spent half its time building an index it never used).
    index: OnceLock<SearchIndex>,
    /// The build's `search.json`, when the gateway came from a folder: the first search reads
    /// it (if it is this registry's) instead of building the index.
    index_file: Option<std::path::PathBuf>,
    search_limits: search::SearchLimits,
    /// The hybrid `match` floors measured for the fused encoder, when it is one toolreg knows.
    dense_floors: Option<crate::model::registry::MatchFloors>,
    handlers: HashMap<String, handlers::Handler>,
    /// Each op's compiled schema, compiled on the op's first exec. The map itself is made on
    /// the first exec: a process that only searches (a cold `toolreg search` over 10,000 ops)
    /// never pays for it.
    validators: OnceLock<Validators>,
    idempotency: Arc<dyn idempotency::IdempotencyStore>,
    scope: Scope,
    trace_base: u64,
    trace_seq: AtomicU64,
    /// Who hears operation events ([`Gateway::on_operation`]).
    listeners: Vec<OperationListener>,
    /// Semantic ranking fused into search, when vectors were loaded.
    #[cfg(feature = "semantic")]
    hybrid: Option<hybrid::Hybrid>,
}

impl Gateway {
    /// Fuses semantic ranking into every search of this gateway.
    #[cfg(feature = "semantic")]
    pub fn with_hybrid(mut self, hybrid: hybrid::Hybrid) -> Gateway {
        self.dense_floors = hybrid.known_floors();
        if let Some(index) = self.index.get_mut() {
            index.set_dense_floors(self.dense_floors);
        }
        self.hybrid = Some(hybrid);
        self
    }

    /// Whether semantic ranking is fused into search.
    pub fn has_hybrid(&self) -> bool {
        #[cfg(feature = "semantic")]
        return self.hybrid.is_some();
        #[cfg(not(feature = "semantic"))]
        false
    }

    /// Embeds queries about to be searched in one batch, when hybrid ranking is on (what
    /// `toolreg eval` and `learn` do before each slice of a query file); a no-op otherwise.
    pub fn warm_queries(&self, queries: &[&str]) {
        #[cfg(feature = "semantic")]
        if let Some(h) = &self.hybrid {
            h.warm(queries);
        }
        let _ = queries;
    }

    /// The query's similarities and the fusion weight, when hybrid ranking is on.
    fn semantic(&self, query: &str) -> Option<(Vec<f32>, f64)> {
        #[cfg(feature = "semantic")]
        if let Some(h) = &self.hybrid {
            return h.similarities(query).map(|s| (s, h.weight()));
        }
        let _ = query;
        None
    }

    /// Ops for a query, best first (lexical, or hybrid when vectors are loaded).
    pub fn rank(&self, query: &str, allowed: &dyn Fn(&OpRecord) -> bool) -> Vec<(String, f64)> {
        let semantic = self.semantic(query);
        self.index().rank_fused(
            &self.registry,
            query,
            allowed,
            semantic.as_ref().map(|(s, w)| (s.as_slice(), *w)),
        )
    }

    /// `match` (strong / weak / none) of a query over the ops `allowed` lets through.
    pub fn fit(&self, query: &str, allowed: &dyn Fn(&OpRecord) -> bool) -> search::Match {
        let semantic = self.semantic(query);
        self.index().assess(
            &self.registry,
            query,
            allowed,
            semantic.as_ref().map(|(s, w)| (s.as_slice(), *w)),
        )
    }

    /// Lexical ranking only, whatever is loaded (`toolreg eval --compare`).
    pub fn rank_lexical(
        &self,
        query: &str,
        allowed: &dyn Fn(&OpRecord) -> bool,
    ) -> Vec<(String, f64)> {
        self.index().rank(&self.registry, query, allowed)
    }
    /// A gateway over a registry and its help pages (built from the same registry).
    pub fn new(registry: Registry, help: HelpDoc) -> Result<Gateway, GatewayError> {
        Self::with_options(registry, help, Options::default())
    }

    pub fn with_options(
        registry: Registry,
        help: HelpDoc,
        options: Options,
    ) -> Result<Gateway, GatewayError> {
        if help.registry_version != registry.registry_version {
            return Err(GatewayError::VersionMismatch {
                help: help.registry_version,
                registry: registry.registry_version,
            });
        }
        let trace_base = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0),
            );
            h.finish()
        };
        Ok(Gateway {
            registry: Arc::new(registry),
            help,
            index: OnceLock::new(),
            index_file: None,
            search_limits: search::SearchLimits::default(),
            dense_floors: None,
            handlers: HashMap::new(),
            validators: OnceLock::new(),
            idempotency: options.idempotency_store.unwrap_or_else(|| {
                Arc::new(idempotency::MemoryStore::new(
                    options.idempotency_capacity,
                    options.idempotency_ttl,
                ))
            }),
            scope: options.scope,
            trace_base,
            trace_seq: AtomicU64::new(0),
            listeners: Vec::new(),
            #[cfg(feature = "semantic")]
            hybrid: None,
        })
    }

    /// A gateway for search, without help pages: what `toolreg search` and `eval` load, since
    /// a cold process otherwise parses `help.json` (larger than the registry) for nothing. Its
    /// `help` answers every path `UNKNOWN_PATH`. Over a whole registry exec works as usual; over
    /// the registry view of a `search.json` every exec is refused (its schemas are `false`), and
    /// its ops carry no argument lists (search takes usage lines from its index).
    pub fn for_search(registry: Registry) -> Gateway {
        let help = HelpDoc::new(
            registry.generator.clone(),
            registry.registry_version.clone(),
            Default::default(),
        );
        Self::new(registry, help).expect("the help pages carry the registry's version")
    }

    /// From `registry.json` and `help.json` bytes (e.g. embedded with `include_bytes!`).
    pub fn from_slices(registry: &[u8], help: &[u8]) -> Result<Gateway, GatewayError> {
        let reg = Registry::from_slice(registry)?;
        let help = HelpDoc::from_slice(help).map_err(GatewayError::Help)?;
        Gateway::new(reg, help)
    }

    /// From a folder `toolreg build` wrote (`registry.json` and `help.json`).
    /// A folder holding an interrupted build is refused ([`GatewayError::Interrupted`]).
    pub fn from_dir(dir: impl AsRef<std::path::Path>) -> Result<Gateway, GatewayError> {
        if crate::model::registry::interrupted_commit(dir.as_ref()) {
            return Err(GatewayError::Interrupted {
                dir: dir.as_ref().display().to_string(),
            });
        }
        let (registry, help) = read_dir(dir.as_ref())?;
        let mut gw = Gateway::new(registry, help)?;
        gw.index_file = Some(dir.as_ref().join(search::INDEX_FILE));
        Ok(gw)
    }

    /// Reads the search index from `file` (a build's `search.json`) on the first search, when
    /// it is this registry's; otherwise that search builds it.
    pub fn with_index_file(mut self, file: std::path::PathBuf) -> Self {
        self.index_file = Some(file);
        self
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The floors `match` reads and where they come from ([`SearchIndex::floors_in_use`]; the
    /// search index is read or built, as a search would).
    pub fn match_floors(&self) -> search::FloorsInUse {
        #[cfg(feature = "semantic")]
        let fused = self.hybrid.as_ref().map(|h| h.model_name());
        #[cfg(not(feature = "semantic"))]
        let fused = None;
        self.index().floors_in_use(fused)
    }

    /// Sets how much of a search query is read ([`search::SearchLimits`]; the defaults bound
    /// any query's work).
    pub fn set_search_limits(&mut self, limits: search::SearchLimits) {
        self.search_limits = limits;
        if let Some(index) = self.index.get_mut() {
            index.set_limits(limits);
        }
    }

    /// Uses a prebuilt search index (a build's `search.json`, read with
    /// [`SearchIndex::from_artifact`]) instead of building one on first search.
    pub fn set_search_index(&mut self, mut index: SearchIndex) {
        index.set_limits(self.search_limits);
        index.set_dense_floors(self.dense_floors);
        self.index = OnceLock::from(index);
    }

    /// The search index, read or built on first use.
    fn index(&self) -> &SearchIndex {
        self.index.get_or_init(|| {
            let written = self.index_file.as_ref().and_then(|f| {
                SearchIndex::from_artifact(std::fs::read(f).ok()?, &self.registry.registry_version)
                    .filter(|index| index.indexes(&self.registry))
            });
            let mut index = written.unwrap_or_else(|| SearchIndex::new(&self.registry));
            index.set_limits(self.search_limits);
            index.set_dense_floors(self.dense_floors);
            index
        })
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    fn trace_id(&self) -> String {
        let n = self.trace_seq.fetch_add(1, Ordering::Relaxed);
        format!("tr_{:08x}{:06}", (self.trace_base >> 32) as u32, n)
    }

    /// help: precomputed pages by lookup. Ops, tool names and common misspellings
    /// (`onto.tasks.list`, `task.list`) resolve; the answer says which path it served.
    pub fn help(&self, req: &HelpRequest) -> Arc<Value> {
        let page = self.help.lookup(&self.registry, req);
        if page.get("error").is_none() || crate::model::text::over_name_limit(&req.path) {
            return page;
        }
        match resolve_forgiving(&self.registry, &req.path) {
            Some((op, how)) => {
                let fixed = HelpRequest {
                    path: op.to_string(),
                    ..req.clone()
                };
                let mut page = Value::clone(&self.help.lookup(&self.registry, &fixed));
                if let (Some(obj), Some(w)) = (page.as_object_mut(), how.warning(&req.path, op)) {
                    obj.insert("resolved_from".into(), json!(req.path.trim()));
                    obj.insert("note".into(), json!(w));
                }
                Arc::new(page)
            }
            None => page,
        }
    }

    /// The unknown-path help answer for `asked`, with no suggestions (for a path a caller may
    /// not see: it reads exactly as one that does not exist).
    pub fn help_unknown(&self, asked: &str) -> Value {
        self.help.unknown_without_suggestions(&self.registry, asked)
    }

    /// The unknown-path help answer for `asked` as a caller who sees only the paths `visible`
    /// lets through: suggestions from those alone.
    pub fn help_unknown_among(&self, asked: &str, visible: &dyn Fn(&str) -> bool) -> Value {
        self.help.unknown_among(&self.registry, asked, visible)
    }

    /// How well a query's best op fits (`match` of its search answer) and the coverage of the
    /// query that `match` was decided on (`None` for an exact name or when no op matched a
    /// word): what `eval` measures abstention with.
    pub fn assess(&self, query: &str) -> (search::Match, Option<f64>) {
        let mut req = SearchRequest::query(query);
        req.limit = Some(1);
        let fit = self.search(&req).match_;
        (fit, self.signals(query).map(|s| s.deciding_coverage()))
    }

    /// The signals floors are calibrated on for a query, as this gateway searches: the
    /// coverage the hybrid signal uses (with a model fused) or the lexical one, and with hybrid
    /// ranking the nearest op's cosine (`eval --calibrate`).
    pub fn match_signals(&self, query: &str) -> Option<(f64, Option<f32>)> {
        self.signals(query)
            .map(|s| (s.calibration_coverage(), s.cosine))
    }

    fn signals(&self, query: &str) -> Option<search::MatchSignals> {
        let semantic = self.semantic(query);
        self.index().match_signals(
            &self.registry,
            query,
            &|r| !r.hidden && self.scope.refuses(r).is_none(),
            semantic.as_ref().map(|(s, w)| (s.as_slice(), *w)),
        )
    }

    /// An index over only the ops `visible` names, for a caller who may see no others: its
    /// term statistics (and so its scores, confidences and `match`) are what a registry of
    /// just those ops would give, so nothing in a search answer depends on what is hidden.
    pub fn view_index(&self, visible: &std::collections::BTreeSet<String>) -> ViewIndex {
        let mut registry = Registry::clone(&self.registry);
        registry.ops.retain(|op, _| visible.contains(op));
        let positions: Vec<usize> = self
            .registry
            .ops
            .keys()
            .enumerate()
            .filter(|(_, op)| visible.contains(*op))
            .map(|(i, _)| i)
            .collect();
        let mut index = SearchIndex::new(&registry);
        index.set_limits(self.search_limits);
        index.set_dense_floors(self.dense_floors);
        ViewIndex {
            registry,
            index,
            positions,
        }
    }

    /// search over a [`ViewIndex`] (semantic similarities, when loaded, taken for its ops).
    pub fn search_view(&self, req: &SearchRequest, view: &ViewIndex) -> SearchResponse {
        let cut = self.search_limits.max_query_chars;
        let semantic = self
            .semantic(crate::model::text::clip_chars(&req.query, cut))
            .map(|(sims, w)| {
                let picked: Vec<f32> = view
                    .positions
                    .iter()
                    .filter_map(|i| sims.get(*i).copied())
                    .collect();
                (picked, w)
            });
        view.index.search_fused(
            &view.registry,
            req,
            &|_| true,
            semantic.as_ref().map(|(s, w)| (s.as_slice(), *w)),
        )
    }

    /// search in the gateway's scope.
    pub fn search(&self, req: &SearchRequest) -> SearchResponse {
        self.search_in(req, &self.scope)
    }

    pub fn search_in(&self, req: &SearchRequest, scope: &Scope) -> SearchResponse {
        let cut = self.index().limits().max_query_chars;
        let semantic = self.semantic(crate::model::text::clip_chars(&req.query, cut));
        self.index().search_fused(
            &self.registry,
            req,
            &|r| scope.refuses(r).is_none(),
            semantic.as_ref().map(|(s, w)| (s.as_slice(), *w)),
        )
    }
}

/// An operation event (seed 002 §6.4): a call of `op` started, succeeded or failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OperationEvent {
    pub op: String,
    pub trace_id: String,
    pub operation: crate::model::operation::Operation,
}

type OperationListener = Arc<dyn Fn(&OperationEvent) + Send + Sync>;

/// Op -> its schema's validator, compiled on first use (or why it cannot be).
type Validators = HashMap<String, OnceLock<Result<jsonschema::Validator, String>>>;

impl Gateway {
    /// Calls `listener` for every operation event: `started` when a call reaches its handler,
    /// then `success` or `error` (a UI's activity feed: `event.operation.describe()` reads
    /// "Updated task “Ship v2”"). Refused calls, dry runs and replays run no handler and send
    /// none; their envelopes still carry `operation`.
    pub fn on_operation(&mut self, listener: impl Fn(&OperationEvent) + Send + Sync + 'static) {
        self.listeners.push(Arc::new(listener));
    }

    fn notify(&self, op: &str, trace_id: &str, operation: &crate::model::operation::Operation) {
        if self.listeners.is_empty() {
            return;
        }
        let event = OperationEvent {
            op: op.to_string(),
            trace_id: trace_id.to_string(),
            operation: operation.clone(),
        };
        for l in &self.listeners {
            l(&event);
        }
    }

    /// The operation table entry of the op `asked` names, when the caller of `scope` may see it.
    pub fn operation_spec(
        &self,
        asked: &str,
        scope: &Scope,
    ) -> Option<crate::model::operation::OperationSpec> {
        if crate::model::text::over_name_limit(asked) {
            return None;
        }
        let (op, _) = crate::model::resolve::resolve_exec(&self.registry, asked)?;
        let r = &self.registry.ops[op];
        scope.contains(r).then(|| crate::model::operation::spec(r))
    }
}

/// A search index over the ops one kind of caller may see ([`Gateway::view_index`]).
pub struct ViewIndex {
    registry: Registry,
    index: SearchIndex,
    /// Each visible op's position in the full registry (for semantic similarities).
    positions: Vec<usize>,
}

/// Drives a future to completion on the current thread (for the CLI and tests; in a server,
/// `.await` exec on your own runtime instead).
pub fn block_on<F: Future>(f: F) -> F::Output {
    pollster::block_on(f)
}
