//! The runtime gateway: serves help, exec, search and the discovery calls over a compiled
//! registry. It reads only what the compiler wrote (`registry.json`, `help.json`) and needs none
//! of the code generators (feature `runtime`, without `compiler`).
//!
//! exec = resolve the op (exact, tool name, alias, sanitized) -> scope check -> parse and
//! normalize the arguments (aliases) -> JSON Schema validation (every field at once) -> dry run,
//! idempotency -> the handler -> an envelope `{op, ok, result | error, meta}`. Every error has a
//! code, a message, details and a `help_path`.

pub mod discovery;
pub mod eval;
#[cfg(feature = "semantic")]
pub mod hybrid;
pub mod idempotency;
pub mod search;
pub mod select;
pub mod validate;

use crate::help::{HelpDoc, HelpRequest};
use crate::registry::{Kind, OpRecord, Registry};
use crate::resolve::{resolve_exec, resolve_forgiving};
use search::{SearchIndex, SearchRequest, SearchResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use validate::FieldError;

/// Error codes of exec envelopes.
pub mod codes {
    pub const NOT_FOUND: &str = "NOT_FOUND";
    pub const FORBIDDEN: &str = "FORBIDDEN";
    pub const EMPTY_ARGS: &str = "EMPTY_ARGS";
    pub const MALFORMED_ARGS: &str = "MALFORMED_ARGS";
    pub const VALIDATION_ERROR: &str = "VALIDATION_ERROR";
    pub const CONFLICT: &str = "CONFLICT";
    pub const NOT_IMPLEMENTED: &str = "NOT_IMPLEMENTED";
    pub const INTERNAL: &str = "INTERNAL";
    /// A shared idempotency store did not answer; the keyed write was not run.
    pub const IDEMPOTENCY_UNAVAILABLE: &str = "IDEMPOTENCY_UNAVAILABLE";
}

/// What a handler returns on failure. Its `code` (e.g. `NOT_FOUND` for a missing record) is
/// passed through; `INTERNAL` is the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandlerError {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl HandlerError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        HandlerError {
            code: code.into(),
            message: message.into(),
            details: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL, message)
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// The future a handler returns. Any executor can drive it: the gateway never spawns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, HandlerError>> + Send>>;
type Handler = Arc<dyn Fn(Value) -> HandlerFuture + Send + Sync>;

/// Which ops a call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub name: String,
    /// `None`: every op.
    pub ops: Option<BTreeSet<String>>,
    pub allow_writes: bool,
}

impl Scope {
    /// Every op, reads and writes.
    pub fn all() -> Scope {
        Scope {
            name: "all".into(),
            ops: None,
            allow_writes: true,
        }
    }

    /// Every op, reads only.
    pub fn read_only() -> Scope {
        Scope {
            name: "read_only".into(),
            ops: None,
            allow_writes: false,
        }
    }

    /// An explicit op list.
    pub fn ops(name: impl Into<String>, ops: impl IntoIterator<Item = impl Into<String>>) -> Scope {
        Scope {
            name: name.into(),
            ops: Some(ops.into_iter().map(Into::into).collect()),
            allow_writes: true,
        }
    }

    /// An overlay profile's ops.
    pub fn profile(reg: &Registry, name: &str) -> Option<Scope> {
        let p = reg.profiles.get(name)?;
        Some(Scope::ops(format!("profile {name}"), p.ops.iter().cloned()))
    }

    /// The same scope with writes allowed or not.
    pub fn writes(mut self, allowed: bool) -> Scope {
        self.allow_writes = allowed;
        self
    }

    /// Why the scope refuses an op, if it does.
    pub fn refuses(&self, r: &OpRecord) -> Option<String> {
        if self.ops.as_ref().is_some_and(|ops| !ops.contains(&r.op)) {
            return Some(format!(
                "`{}` is not available in scope `{}`",
                r.op, self.name
            ));
        }
        if r.kind == Kind::Write && !self.allow_writes {
            return Some(format!(
                "`{}` writes, and scope `{}` does not allow writes",
                r.op, self.name
            ));
        }
        None
    }

    pub fn contains(&self, r: &OpRecord) -> bool {
        self.ops.as_ref().is_none_or(|ops| ops.contains(&r.op))
    }

    /// Whether the scope lists `op` (every name when it lists none).
    pub fn contains_op(&self, op: &str) -> bool {
        self.ops.as_ref().is_none_or(|ops| ops.contains(op))
    }
}

/// An exec call as the model sends it. `args` may arrive as an object, as JSON text (kept raw
/// when it does not parse), or not at all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecCall {
    #[serde(default)]
    pub op: String,
    #[serde(default)]
    pub args: Option<Value>,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub dry_run: Option<bool>,
}

impl ExecCall {
    pub fn new(op: impl Into<String>, args: Value) -> Self {
        ExecCall {
            op: op.into(),
            args: Some(args),
            ..Default::default()
        }
    }

    /// Reads a call from whatever JSON the model produced; fields of the wrong type are ignored
    /// (and then reported by exec as a missing op or malformed arguments).
    pub fn from_value(v: &Value) -> Self {
        ExecCall {
            op: v
                .get("op")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            // A copy cut below the depth limit: cloning hostile nesting whole would overflow
            // the stack; the cut copy is still too deep, so exec answers MALFORMED_ARGS.
            args: v.get("args").map(|a| clone_bounded(a, MAX_ARGS_DEPTH + 1)),
            idempotency_key: v
                .get("idempotency_key")
                .and_then(Value::as_str)
                .map(str::to_owned),
            dry_run: v.get("dry_run").and_then(Value::as_bool),
        }
    }
}

/// The error part of an envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    /// Always an object; `field_errors` is always present (possibly empty).
    pub details: Value,
    pub help_path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub trace_id: String,
    pub latency_ms: u64,
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// seed 000's envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub op: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    pub meta: Meta,
}

impl Envelope {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("envelopes serialize")
    }

    /// The error code, if any.
    pub fn code(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.code.as_str())
    }
}

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
    Registry(#[from] crate::registry::LoadError),
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

/// A gateway over one compiled registry.
pub struct Gateway {
    registry: Arc<Registry>,
    help: HelpDoc,
    index: SearchIndex,
    handlers: HashMap<String, Handler>,
    validators: HashMap<String, OnceLock<Result<jsonschema::Validator, String>>>,
    idempotency: Arc<dyn idempotency::IdempotencyStore>,
    scope: Scope,
    trace_base: u64,
    trace_seq: AtomicU64,
    /// Semantic ranking fused into search, when vectors were loaded.
    #[cfg(feature = "semantic")]
    hybrid: Option<hybrid::Hybrid>,
}

impl Gateway {
    /// Fuses semantic ranking into every search of this gateway.
    #[cfg(feature = "semantic")]
    pub fn with_hybrid(mut self, hybrid: hybrid::Hybrid) -> Gateway {
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
        self.index.rank_fused(
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
        self.index.rank(&self.registry, query, allowed)
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
        let index = SearchIndex::new(&registry);
        let validators = registry
            .ops
            .keys()
            .map(|op| (op.clone(), OnceLock::new()))
            .collect();
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
            index,
            handlers: HashMap::new(),
            validators,
            idempotency: options.idempotency_store.unwrap_or_else(|| {
                Arc::new(idempotency::MemoryStore::new(
                    options.idempotency_capacity,
                    options.idempotency_ttl,
                ))
            }),
            scope: options.scope,
            trace_base,
            trace_seq: AtomicU64::new(0),
            #[cfg(feature = "semantic")]
            hybrid: None,
        })
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
        if crate::registry::interrupted_commit(dir.as_ref()) {
            return Err(GatewayError::Interrupted {
                dir: dir.as_ref().display().to_string(),
            });
        }
        let read = |name: &str| {
            let path = dir.as_ref().join(name);
            std::fs::read(&path).map_err(|source| GatewayError::Io {
                path: path.display().to_string(),
                source,
            })
        };
        Self::from_slices(&read("registry.json")?, &read("help.json")?)
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Sets how much of a search query is read ([`search::SearchLimits`]; the defaults bound
    /// any query's work).
    pub fn set_search_limits(&mut self, limits: search::SearchLimits) {
        self.index.set_limits(limits);
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Registers an async handler for an op (by op or tool name).
    pub fn handle<F, Fut>(&mut self, op: &str, f: F) -> Result<&mut Self, GatewayError>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        let op = self.op_name(op)?;
        self.handlers
            .insert(op, Arc::new(move |args| Box::pin(f(args)) as HandlerFuture));
        Ok(self)
    }

    /// Registers a synchronous handler.
    pub fn handle_sync<F>(&mut self, op: &str, f: F) -> Result<&mut Self, GatewayError>
    where
        F: Fn(Value) -> Result<Value, HandlerError> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        self.handle(op, move |args| {
            let f = Arc::clone(&f);
            async move { f(args) }
        })
    }

    /// Registers a synchronous handler that takes typed arguments (e.g. a generated args
    /// struct); arguments are already validated, so a deserialization failure is INTERNAL.
    pub fn handle_typed<T, F>(&mut self, op: &str, f: F) -> Result<&mut Self, GatewayError>
    where
        T: serde::de::DeserializeOwned + 'static,
        F: Fn(T) -> Result<Value, HandlerError> + Send + Sync + 'static,
    {
        self.handle_sync(op, move |args| {
            let typed: T = serde_json::from_value(args).map_err(|e| {
                HandlerError::internal(format!("arguments did not fit the typed handler: {e}"))
            })?;
            f(typed)
        })
    }

    fn op_name(&self, op: &str) -> Result<String, GatewayError> {
        resolve_exec(&self.registry, op)
            .map(|(o, _)| o.to_string())
            .ok_or_else(|| GatewayError::UnknownOp(op.to_string()))
    }

    fn trace_id(&self) -> String {
        let n = self.trace_seq.fetch_add(1, Ordering::Relaxed);
        format!("tr_{:08x}{:06}", (self.trace_base >> 32) as u32, n)
    }

    /// help: precomputed pages by lookup. Ops, tool names and common misspellings
    /// (`onto.tasks.list`, `task.list`) resolve; the answer says which path it served.
    pub fn help(&self, req: &HelpRequest) -> Arc<Value> {
        let page = self.help.lookup(&self.registry, req);
        if page.get("error").is_none() || crate::text::over_name_limit(&req.path) {
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

    /// search in the gateway's scope.
    pub fn search(&self, req: &SearchRequest) -> SearchResponse {
        self.search_in(req, &self.scope)
    }

    pub fn search_in(&self, req: &SearchRequest, scope: &Scope) -> SearchResponse {
        let cut = self.index.limits().max_query_chars;
        let semantic = self.semantic(crate::text::clip_chars(&req.query, cut));
        self.index.search_fused(
            &self.registry,
            req,
            &|r| scope.refuses(r).is_none(),
            semantic.as_ref().map(|(s, w)| (s.as_slice(), *w)),
        )
    }

    /// exec in the gateway's scope.
    pub async fn exec(&self, call: ExecCall) -> Envelope {
        self.exec_in(call, &self.scope).await
    }

    /// exec in a given scope (e.g. per conversation or per turn).
    pub async fn exec_in(&self, call: ExecCall, scope: &Scope) -> Envelope {
        let started = Instant::now();
        let mut warnings = Vec::new();
        let outcome = self.run(call, scope, &mut warnings).await;
        let meta = |dry_run| Meta {
            trace_id: self.trace_id(),
            latency_ms: started.elapsed().as_millis() as u64,
            warnings: warnings.clone(),
            dry_run,
        };
        match outcome {
            Ok(Done {
                op,
                result,
                dry_run,
            }) => Envelope {
                op,
                ok: true,
                result: Some(result),
                error: None,
                meta: meta(dry_run),
            },
            Err(Failure { op, error }) => Envelope {
                op,
                ok: false,
                result: None,
                error: Some(*error),
                meta: meta(false),
            },
        }
    }

    /// Everything up to the handler, without running it: resolve, scope, arguments, validation.
    /// The CLI's `exec` and dry runs use this.
    pub fn prepare(
        &self,
        call: &ExecCall,
        scope: &Scope,
        warnings: &mut Vec<String>,
    ) -> Result<(String, Value), Box<ErrorBody>> {
        self.prepare_inner(call, scope, warnings)
            .map_err(|f| f.error)
    }

    fn prepare_inner(
        &self,
        call: &ExecCall,
        scope: &Scope,
        warnings: &mut Vec<String>,
    ) -> Result<(String, Value), Failure> {
        let reg = &self.registry;
        // 1. Resolve (a name longer than any op is unknown without further work).
        let resolved = if crate::text::over_name_limit(&call.op) {
            None
        } else {
            resolve_exec(reg, &call.op)
        };
        let Some((op, how)) = resolved else {
            return Err(self.not_found(&call.op, scope));
        };
        if let Some(w) = how.warning(&call.op, op) {
            warnings.push(w);
        }
        let record = &reg.ops[op];
        // 2. Scope: every spelling got here, so every spelling is checked.
        if let Some(why) = scope.refuses(record) {
            return Err(fail(
                op,
                codes::FORBIDDEN,
                why,
                json!({"scope": scope.name, "kind": record.kind.as_str()}),
                op,
            ));
        }
        // 3. Arguments. Depth first, before anything walks them recursively (a clone, a
        // serialization into an error, a validator).
        if let Some(depth) = call
            .args
            .as_ref()
            .and_then(|a| nesting_beyond(a, MAX_ARGS_DEPTH))
        {
            return Err(fail(
                op,
                codes::MALFORMED_ARGS,
                format!("`args` nest more than {MAX_ARGS_DEPTH} levels deep (at least {depth})"),
                json!({"max_depth": MAX_ARGS_DEPTH}),
                op,
            ));
        }
        let mut args = match &call.args {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
                Ok(v @ Value::Object(_)) => {
                    warnings.push("`args` was a JSON string; parsed it as an object".into());
                    v
                }
                Ok(other) => {
                    return Err(fail(
                        op,
                        codes::MALFORMED_ARGS,
                        format!("`args` must be a JSON object, got {}", kind_name(&other)),
                        json!({"raw_args": validate::clip(raw, MAX_RAW_ECHO_CHARS)}),
                        op,
                    ));
                }
                Err(e) => {
                    return Err(fail(
                        op,
                        codes::MALFORMED_ARGS,
                        format!("`args` is not valid JSON: {e}"),
                        json!({"raw_args": validate::clip(raw, MAX_RAW_ECHO_CHARS), "parse_error": {"message": e.to_string(), "line": e.line(), "column": e.column()}}),
                        op,
                    ));
                }
            },
            Some(v @ Value::Object(_)) => v.clone(),
            Some(other) => {
                return Err(fail(
                    op,
                    codes::MALFORMED_ARGS,
                    format!("`args` must be a JSON object, got {}", kind_name(other)),
                    json!({"raw_args": validate::clip(&other.to_string(), MAX_RAW_ECHO_CHARS)}),
                    op,
                ));
            }
        };
        // 4. Aliases the model tends to use for real argument names.
        apply_arg_aliases(record, &mut args, warnings);
        // 5. Empty arguments for an op that needs some.
        if args.as_object().is_some_and(|a| a.is_empty()) && !record.required_args.is_empty() {
            let minimal = record
                .examples
                .first()
                .map(|e| json!({"op": op, "args": e.args}));
            return Err(fail(
                op,
                codes::EMPTY_ARGS,
                format!(
                    "`{op}` needs arguments: {}",
                    record.required_args.join(", ")
                ),
                json!({"required_args": record.required_args, "minimal_call": minimal, "usage": record.usage()}),
                op,
            ));
        }
        // 6. Validation, every field at once; unknown names under open schemas too. Names a
        // schema does not declare (and does not open on purpose) are dropped, so neither a
        // handler nor an upstream receives a field nobody validated.
        let unknown = validate::unknown_arguments(&record.parameters_schema, &args);
        let dropped = if record.pass_unknown_arguments {
            Default::default()
        } else {
            validate::strip_undeclared(&record.parameters_schema, &mut args)
        };
        let mut errors = self.validate(record, &args);
        for u in unknown {
            let fate = if dropped.contains(&u.pointer) {
                "the schema does not declare it, so it was dropped before the call"
            } else {
                "the schema lets it through, so it is passed on unchecked"
            };
            let field = u.pointer.trim_start_matches('/').replace('/', ".");
            match (&u.closest, u.closest_missing) {
                (Some(c), true) => {
                    let message = format!(
                        "`{}` is not an argument of this op; did you mean `{c}`?",
                        u.name
                    );
                    // The missing-required error for `c` says what was probably meant.
                    for e in errors
                        .iter_mut()
                        .filter(|e| e.field.rsplit('.').next() == Some(c.as_str()))
                    {
                        e.hint = Some(format!("you sent `{}`: rename it to `{c}`", u.name));
                    }
                    errors.push(FieldError {
                        field,
                        pointer: u.pointer,
                        message,
                        expected: None,
                        hint: Some(format!("rename `{}` to `{c}`", u.name)),
                    });
                }
                (Some(c), false) => warnings.push(format!(
                    "`{field}` is not an argument of this op; did you mean `{c}`? ({fate})"
                )),
                (None, _) => {
                    warnings.push(format!("`{field}` is not an argument of this op ({fate})"))
                }
            }
        }
        if !errors.is_empty() {
            let n = errors.len();
            return Err(fail_fields(
                op,
                format!(
                    "{n} argument problem{} in `{op}`",
                    if n == 1 { "" } else { "s" }
                ),
                errors,
                record,
            ));
        }
        Ok((op.to_string(), args))
    }

    /// Validates arguments against the op's schema (validator compiled once, on first use).
    pub fn validate(&self, record: &OpRecord, args: &Value) -> Vec<FieldError> {
        let compiled = self.validators[&record.op].get_or_init(|| {
            jsonschema::validator_for(&record.parameters_schema).map_err(|e| e.to_string())
        });
        match compiled {
            Ok(v) => validate::field_errors(v, &record.parameters_schema, args),
            Err(e) => vec![FieldError {
                field: "(schema)".into(),
                pointer: String::new(),
                message: format!("the op's schema cannot be compiled: {e}"),
                expected: None,
                hint: None,
            }],
        }
    }

    async fn run(
        &self,
        mut call: ExecCall,
        scope: &Scope,
        warnings: &mut Vec<String>,
    ) -> Result<Done, Failure> {
        let prepared = self.prepare_inner(&call, scope, warnings);
        // Refused arguments may be hostile nesting: take them apart without recursion
        // (serde_json drops nested values recursively).
        if prepared.is_err() {
            drop_iteratively(call.args.take());
        }
        let (op, args) = prepared?;
        let record = &self.registry.ops[&op];
        let dry_run = call.dry_run.unwrap_or(record.dry_run_default);
        if dry_run {
            if call.dry_run.is_none() {
                warnings.push(format!(
                    "`{op}` runs as a dry run by default; pass dry_run: false to apply"
                ));
            }
            let result = json!({
                "dry_run": true,
                "would_run": {"op": op, "tool_name": record.tool_name, "args": args},
                "kind": record.kind.as_str(),
                "destructive": record.destructive,
            });
            return Ok(Done {
                op,
                result,
                dry_run: true,
            });
        }
        let key = call.idempotency_key.filter(|k| !k.is_empty());
        let key = match (key, record.kind) {
            (Some(k), Kind::Write) => Some(k),
            (Some(_), Kind::Read) => {
                warnings.push("`idempotency_key` is ignored for reads".into());
                None
            }
            (None, _) => None,
        };
        if let Some(k) = key.as_ref().filter(|k| k.len() > idempotency::MAX_KEY_LEN) {
            return Err(fail(
                &op,
                codes::VALIDATION_ERROR,
                format!(
                    "`idempotency_key` is {} bytes; keys are at most {} (a UUID or a short hash fits)",
                    k.len(),
                    idempotency::MAX_KEY_LEN
                ),
                json!({"pointer": "/idempotency_key"}),
                &op,
            ));
        }
        if let Some(k) = &key {
            // Stores keep a digest of the arguments, never the arguments themselves.
            let digest = Value::String(idempotency::args_digest(&args));
            let seen = match self.idempotency.begin(k, &op, &digest).await {
                Ok(seen) => seen,
                Err(e) => {
                    return Err(fail(
                        &op,
                        codes::IDEMPOTENCY_UNAVAILABLE,
                        format!("the idempotency store did not answer, so `{op}` was not run (running it could run it twice): {e}; retry with the same key"),
                        json!({"idempotency_key": k}),
                        &op,
                    ))
                }
            };
            match seen {
                idempotency::Seen::New => {}
                idempotency::Seen::TakenOver => warnings.push(format!("idempotency_key `{k}` was held by an earlier attempt that was reported not run; this call took it over and ran")),
                idempotency::Seen::Replay(result) => {
                    warnings.push(format!("replayed the first result for idempotency_key `{k}`; the op did not run again"));
                    return Ok(Done {
                        op,
                        result,
                        dry_run: false,
                    });
                }
                idempotency::Seen::Mismatch { op: first } => {
                    return Err(fail(
                        &op,
                        codes::CONFLICT,
                        format!("idempotency_key `{k}` was used for a different call (`{first}` with other arguments)"),
                        json!({"idempotency_key": k, "first_op": first}),
                        &op,
                    ));
                }
                idempotency::Seen::InFlight { running_for } => {
                    let (since, details) = match running_for {
                        Some(d) => (
                            format!(" (started {:.1} s ago)", d.as_secs_f64()),
                            json!({"idempotency_key": k, "running_for_ms": u64::try_from(d.as_millis()).unwrap_or(u64::MAX)}),
                        ),
                        None => (String::new(), json!({"idempotency_key": k})),
                    };
                    return Err(fail(
                        &op,
                        codes::CONFLICT,
                        format!(
                            "a call with idempotency_key `{k}` is still running{since}; retry shortly (an attempt that was reported not run frees its key as soon as the store answers again)"
                        ),
                        details,
                        &op,
                    ));
                }
            }
        }
        let Some(handler) = self.handlers.get(&op).cloned() else {
            if let Some(k) = &key {
                self.forget(k).await;
            }
            return Err(fail(
                &op,
                codes::NOT_IMPLEMENTED,
                format!("no handler is registered for `{op}`"),
                json!({}),
                &op,
            ));
        };
        match handler(args).await {
            Ok(result) => {
                if let Some(k) = &key {
                    let size = idempotency::json_len(&result);
                    if size > idempotency::MAX_STORED_RESULT {
                        self.forget(k).await;
                        warnings.push(format!("the result is {size} bytes, over the {} an idempotency key keeps, so it was not stored: a repeat with idempotency_key `{k}` runs the op again", idempotency::MAX_STORED_RESULT));
                    } else if let Err(e) = self.idempotency.finish(k, &result).await {
                        warnings.push(format!("the result was not stored for idempotency_key `{k}` ({e}); a repeat may run the op again"));
                    }
                }
                Ok(Done {
                    op,
                    result,
                    dry_run: false,
                })
            }
            Err(e) => {
                if let Some(k) = &key {
                    self.forget(k).await;
                }
                let mut details = e.details.unwrap_or_else(|| json!({}));
                if !details.is_object() {
                    details = json!({"detail": details});
                }
                Err(fail(&op, &e.code, e.message, details, &op))
            }
        }
    }

    /// Releases a key whose call did not run or failed, so it can be retried. If the store does
    /// not answer, the key expires with its ttl.
    async fn forget(&self, key: &str) {
        let _ = self.idempotency.abandon(key).await;
    }

    /// NOT_FOUND with did-you-mean candidates (in scope) and the nearest directory's help path.
    fn not_found(&self, input: &str, scope: &Scope) -> Failure {
        let reg = &self.registry;
        // Suggestions and the echo work on a bounded prefix of what the caller sent.
        let input = crate::text::clip_chars(input, crate::text::MAX_NAME_INPUT_CHARS);
        let in_scope = |r: &OpRecord| scope.contains(r) && !r.hidden;
        let mut candidates: Vec<String> = Vec::new();
        if let Some((op, _)) =
            resolve_forgiving(reg, input).filter(|(op, _)| in_scope(&reg.ops[*op]))
        {
            candidates.push(op.to_string());
        }
        let words = input.replace(['.', '_', '-', '/'], " ");
        for (op, _) in self.rank(&words, &in_scope) {
            if !candidates.contains(&op) {
                candidates.push(op);
            }
            if candidates.len() >= 3 {
                break;
            }
        }
        let help_path = candidates
            .first()
            .and_then(|c| reg.ops.get(c))
            .map(|r| match &r.entity {
                Some(e) => format!("{}.{e}", r.group),
                None => r.group.clone(),
            })
            .unwrap_or_else(|| crate::help::ROOT.to_string());
        let message = if input.trim().is_empty() {
            "no op given; pass `op`, e.g. one from search or help".to_string()
        } else {
            format!("unknown op `{}`", input.trim())
        };
        Failure {
            op: input.trim().to_string(),
            error: Box::new(ErrorBody {
                code: codes::NOT_FOUND.into(),
                message,
                details: json!({"field_errors": [], "did_you_mean": candidates}),
                help_path,
            }),
        }
    }
}

struct Done {
    op: String,
    result: Value,
    dry_run: bool,
}

struct Failure {
    op: String,
    error: Box<ErrorBody>,
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Arguments nest at most this deep (serde_json's own parser stops at 128).
pub const MAX_ARGS_DEPTH: usize = 128;
/// An error envelope quotes at most this much of malformed input.
const MAX_RAW_ECHO_CHARS: usize = 200;

/// Drops a value of any depth with an explicit stack.
fn drop_iteratively(v: Option<Value>) {
    let mut stack: Vec<Value> = v.into_iter().collect();
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// `v` with everything deeper than `depth` levels replaced by `null`.
fn clone_bounded(v: &Value, depth: usize) -> Value {
    match v {
        _ if depth == 0 => Value::Null,
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| clone_bounded(i, depth - 1)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, i)| (k.clone(), clone_bounded(i, depth - 1)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `Some(depth)` when `v` nests deeper than `max`; iterative, so any depth is safe to measure.
fn nesting_beyond(v: &Value, max: usize) -> Option<usize> {
    let mut stack = vec![(v, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > max {
            return Some(depth);
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    None
}

fn fail(
    op: &str,
    code: &str,
    message: impl Into<String>,
    mut details: Value,
    help_path: &str,
) -> Failure {
    if let Some(d) = details.as_object_mut() {
        d.entry("field_errors").or_insert_with(|| json!([]));
    }
    Failure {
        op: op.to_string(),
        error: Box::new(ErrorBody {
            code: code.to_string(),
            message: message.into(),
            details,
            help_path: help_path.to_string(),
        }),
    }
}

fn fail_fields(op: &str, message: String, errors: Vec<FieldError>, record: &OpRecord) -> Failure {
    let details = json!({"field_errors": errors, "usage": record.usage()});
    fail(op, codes::VALIDATION_ERROR, message, details, op)
}

/// Renames aliased arguments (`name` -> `title`, nested `task.name` -> `title`) and reports each.
fn apply_arg_aliases(record: &OpRecord, args: &mut Value, warnings: &mut Vec<String>) {
    let Some(obj) = args.as_object_mut() else {
        return;
    };
    for (alias, target) in &record.arg_aliases {
        let (taken, shown) = match alias.split_once('.') {
            Some((outer, inner)) => {
                let v = obj
                    .get_mut(outer)
                    .and_then(Value::as_object_mut)
                    .and_then(|o| o.remove(inner));
                if obj
                    .get(outer)
                    .and_then(Value::as_object)
                    .is_some_and(|o| o.is_empty())
                {
                    obj.remove(outer);
                }
                (v, alias.clone())
            }
            None => (obj.remove(alias), alias.clone()),
        };
        let Some(v) = taken else { continue };
        if obj.contains_key(target) {
            warnings.push(format!("dropped `{shown}`: `{target}` was also given"));
        } else {
            obj.insert(target.clone(), v);
            warnings.push(format!("renamed argument `{shown}` to `{target}`"));
        }
    }
}

/// Drives a future to completion on the current thread (for the CLI and tests; in a server,
/// `.await` exec on your own runtime instead).
pub fn block_on<F: Future>(f: F) -> F::Output {
    pollster::block_on(f)
}
