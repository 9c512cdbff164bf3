//! `toolreg serve`: the compiled gateway as an MCP server.
//!
//! `tools/list` is one generated surface (`surfaces/gateway.json`, `direct.json` or a profile),
//! tool for tool: the same names, descriptions and parameter schemas, stamped with the registry
//! version in `_meta`. Never varies per connection. `tools/call` goes through the runtime
//! [`Gateway`] (resolve, scope, aliases, validation, dry run, idempotency, envelopes); an op
//! whose tool came from an upstream MCP server is forwarded there under its own tool name, and
//! the upstream's result (its `isError` results too) is returned as it is. Failures are
//! `isError: true` results carrying the toolreg envelope; JSON-RPC errors are kept for protocol
//! faults (an unknown tool name).
//!
//! Here: loading a server (registry, surface, forwarding handlers, per-principal views) and the
//! MCP handler and stdio loop. Beside it: `surface` (which surface file, read as MCP tools),
//! `call` (one tools/call), `pool` and `drift` (upstream sessions and the drift gate), `auth`,
//! `http`, `visibility`, `observe` (audit, metrics) and the Redis stores.

pub mod auth;
mod call;
pub mod drift;
pub mod http;
mod jsonrpc;
mod limits;
mod listener;
// OAuth is one of auth's ways in; it kept the path it had.
#[cfg(feature = "oauth")]
pub use auth::oauth;
pub mod observe;
mod pool;
#[cfg(feature = "redis")]
mod redis_limits;
#[cfg(feature = "redis")]
mod redis_link;
#[cfg(feature = "redis")]
mod redis_store;
mod surface;
mod visibility;

pub use auth::{Auth, Principal};
pub use http::{run_http, HttpOptions};
pub use pool::Pool;
pub use surface::SurfaceChoice;

use call::forward;
#[cfg(feature = "redis")]
pub use redis_limits::RedisRate;
#[cfg(feature = "redis")]
pub use redis_store::RedisStore;
use surface::{read_surface, surface_file};

use crate::registry::Registry;
use crate::runtime::idempotency::IdempotencyStore;
use crate::runtime::{Gateway, Options, Scope};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// Error codes of the envelopes only the MCP server produces (beside the runtime's).
pub mod codes {
    /// The upstream could not be started or died during the call.
    pub const UPSTREAM_UNAVAILABLE: &str = "UPSTREAM_UNAVAILABLE";
    /// The upstream did not answer within its time limit.
    pub const UPSTREAM_TIMEOUT: &str = "UPSTREAM_TIMEOUT";
    /// The upstream answered with something that is not a result of the call (a malformed MCP
    /// message): its session is kept.
    pub const UPSTREAM_MALFORMED: &str = "UPSTREAM_MALFORMED";
    /// The upstream sent a message over the size limit (16 MiB): its session was ended.
    pub const UPSTREAM_TOO_LARGE: &str = "UPSTREAM_TOO_LARGE";
    /// The upstream's live definition of the tool differs from the compiled one (the drift
    /// gate): the call was not forwarded.
    pub const UPSTREAM_TOOL_CHANGED: &str = "UPSTREAM_TOOL_CHANGED";
    /// A batch item over the caller's requests per second (each item counts as one request):
    /// not run.
    pub const RATE_LIMITED: &str = "RATE_LIMITED";
}

/// Why a server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Gateway(#[from] crate::runtime::GatewayError),
    #[error("cannot read the surface `{path}`: {message}")]
    Surface { path: String, message: String },
    #[error("no profile `{name}` in the registry (profiles: {known})")]
    UnknownProfile { name: String, known: String },
    #[error("idempotency store `{spec}`: {message}")]
    Store { spec: String, message: String },
    #[error("semantic search: {0}")]
    Semantic(String),
    #[error(transparent)]
    Approval(#[from] crate::trust::ApprovalError),
    #[error(transparent)]
    Unapproved(#[from] crate::trust::Unapproved),
}

/// How [`Server::load_with`] sets the server up.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// Where idempotency keys live (shared by replicas); this process when unset.
    pub store: Option<Arc<dyn IdempotencyStore>>,
    /// Hybrid search, used when the folder holds `vectors.json` (feature `semantic`).
    #[cfg(feature = "semantic")]
    pub hybrid: crate::runtime::hybrid::HybridChoice,
    /// Which upstream launch specs may run; this machine's approvals file when unset. A
    /// registry naming any other upstream is refused before anything starts.
    pub approvals: Option<crate::trust::Approvals>,
    /// Metrics and the audit log.
    pub observer: observe::Observer,
    /// What to do with a tool an upstream changed after the build (`--drift`).
    pub drift: drift::DriftMode,
    /// How long clients may keep `tools/list` and help answers (`ttlMs`); unset: a day over
    /// stdio (the session ends with this process, and the registry cannot change before), an
    /// hour over HTTP (a deploy may bring a new registry behind the same address).
    pub list_ttl_ms: Option<u64>,
}

/// The idempotency store `--idempotency` names: `memory` (the runtime's default, this process
/// only) or `redis://...` (shared by replicas; feature `redis`).
pub async fn idempotency_store(
    spec: &str,
) -> Result<Option<Arc<dyn IdempotencyStore>>, ServeError> {
    // A Redis URL may carry a password: messages show it redacted.
    let err = |message: String| ServeError::Store {
        spec: crate::trust::redact_url(spec),
        message,
    };
    if spec == "memory" {
        return Ok(None);
    }
    if spec.starts_with("redis://") || spec.starts_with("rediss://") {
        #[cfg(feature = "redis")]
        {
            let store = RedisStore::connect(spec, crate::runtime::idempotency::DEFAULT_TTL)
                .await
                .map_err(|e| err(e.to_string()))?;
            return Ok(Some(Arc::new(store)));
        }
        #[cfg(not(feature = "redis"))]
        return Err(err(
            "this toolreg was built without the `redis` feature; rebuild with --features redis"
                .into(),
        ));
    }
    Err(err("use `memory` or `redis://HOST:PORT[/DB]`".into()))
}

/// The MCP server over one compiled registry folder.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    /// Set at start, or by the loading thread of a deferred start ([`Server::load_with`]);
    /// read through [`Server::gateway`], which waits for it.
    gateway: Arc<std::sync::OnceLock<Gateway>>,
    /// What a caller without a principal (stdio, or HTTP without authentication) sees; its
    /// scope is the surface's (a profile's ops, or every op).
    full: Arc<View>,
    version: String,
    /// Which surface this server offers, for idempotency partitions (principal and surface).
    surface: String,
    pool: Arc<Pool>,
    observer: observe::Observer,
    /// op -> the upstream that serves it.
    upstream_of: std::collections::HashMap<String, String>,
    /// `ServeOptions::list_ttl_ms`.
    list_ttl_ms: Option<u64>,
    /// The scopes `[access]` names (none: every caller sees the whole surface).
    access_scopes: Vec<String>,
    /// One view per distinct set of `[access]` scopes seen, built on first use.
    views: std::sync::Mutex<std::collections::HashMap<Vec<String>, Arc<View>>>,
}

/// What one kind of caller sees and may call: the surface's tools it may use, the runtime
/// scope exec and search run in, and what to take out of answers.
struct View {
    tools: Vec<Tool>,
    tool_names: std::collections::HashSet<String>,
    scope: Scope,
    hide: Option<visibility::Visibility>,
    /// For a view that hides ops: a search index over only what it sees, built on its first
    /// search (an index over every op would let hidden ops' term statistics shape its scores).
    search: std::sync::OnceLock<crate::runtime::ViewIndex>,
    /// The ops this view may use (what `search` indexes).
    allowed: std::collections::BTreeSet<String>,
    /// For a view that hides ops: a gateway over only the ops it sees, whose help pages it
    /// reads (built on its first help call; `None` if it could not be built).
    help: std::sync::OnceLock<Option<Gateway>>,
}

impl Server {
    /// Loads `registry.json`, `help.json` and the chosen surface from `dir`, and registers a
    /// forwarding handler for every op an upstream owns. Idempotency keys stay in this process.
    pub fn load(dir: &Path, surface: &SurfaceChoice) -> Result<Server, ServeError> {
        Self::load_with_store(dir, surface, None)
    }

    /// As [`Server::load`], with keys in `store` when given (shared by replicas).
    pub fn load_with_store(
        dir: &Path,
        surface: &SurfaceChoice,
        store: Option<Arc<dyn IdempotencyStore>>,
    ) -> Result<Server, ServeError> {
        let options = ServeOptions {
            store,
            ..ServeOptions::default()
        };
        Self::load_with(dir, surface, options)
    }

    /// As [`Server::load`], with `options`. With the `semantic` feature and `vectors.json` in
    /// `dir`, `tool_search` ranks hybrid; vectors from another model or registry stop the start.
    pub fn load_with(
        dir: &Path,
        surface: &SurfaceChoice,
        options: ServeOptions,
    ) -> Result<Server, ServeError> {
        if crate::registry::interrupted_commit(dir) {
            return Err(crate::runtime::GatewayError::Interrupted {
                dir: dir.display().to_string(),
            }
            .into());
        }
        if let Some(head) = deferrable(dir) {
            return Self::load_deferred(dir, surface, options, head);
        }
        let (reg, help) = crate::runtime::read_dir(dir)?;
        let scope = match surface {
            SurfaceChoice::Profile(name) => {
                Scope::profile(&reg, name).ok_or_else(|| ServeError::UnknownProfile {
                    name: name.clone(),
                    known: reg.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                })?
            }
            _ => Scope::all(),
        };
        if !reg.upstreams.is_empty() {
            let approvals = match options.approvals {
                Some(a) => a,
                None => crate::trust::Approvals::load_default()?,
            };
            approvals.refuse_unapproved(&reg.upstreams)?;
        }
        let surface_path = surface_file(dir, surface)?;
        let surface_name = surface_path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tools = read_surface(&surface_path, &reg.registry_version)?;
        let version = reg.registry_version.clone();
        let owned = upstream_ops(&reg);
        let mut approved: std::collections::BTreeMap<_, std::collections::BTreeMap<_, _>> =
            Default::default();
        for (op, (upstream, tool)) in &owned {
            approved
                .entry(upstream.clone())
                .or_default()
                .insert(tool.clone(), reg.ops[op].pin.clone());
        }
        let pool = Arc::new(Pool::with_metrics(
            reg.upstreams.clone(),
            drift::DriftGate::new(options.drift, approved),
            Arc::clone(&options.observer.metrics),
        ));
        let upstream_of = owned
            .iter()
            .map(|(op, (up, _))| (op.clone(), up.clone()))
            .collect();
        #[cfg(feature = "semantic")]
        let hybrid = crate::runtime::hybrid::Hybrid::beside(dir, &reg, &options.hybrid)
            .map_err(ServeError::Semantic)?;
        let gateway = Gateway::with_options(
            reg,
            help,
            Options {
                scope,
                idempotency_store: options.store,
                ..Options::default()
            },
        )?
        .with_index_file(dir.join(crate::runtime::search::INDEX_FILE));
        #[cfg(feature = "semantic")]
        let gateway = match hybrid {
            Some(h) => gateway.with_hybrid(h),
            None => gateway,
        };
        let mut gateway = gateway;
        for (op, (upstream, tool)) in owned {
            let pool = Arc::clone(&pool);
            gateway
                .handle(&op, move |args| {
                    let (pool, upstream, tool) =
                        (Arc::clone(&pool), upstream.clone(), tool.clone());
                    async move { forward(&pool, &upstream, &tool, args).await }
                })
                .map_err(ServeError::Gateway)?;
        }
        let full = Arc::new(View {
            tool_names: tools.iter().map(|t| t.name.to_string()).collect(),
            tools,
            scope: gateway.scope().clone(),
            hide: None,
            search: std::sync::OnceLock::new(),
            allowed: Default::default(),
            help: std::sync::OnceLock::new(),
        });
        Ok(Server {
            inner: Arc::new(Inner {
                access_scopes: gateway.registry().access.keys().cloned().collect(),
                gateway: Arc::new(std::sync::OnceLock::from(gateway)),
                full,
                version,
                surface: surface_name,
                pool,
                observer: options.observer,
                upstream_of,
                list_ttl_ms: options.list_ttl_ms,
                views: Default::default(),
            }),
        })
    }

    /// A start that answers `initialize` and `tools/list` from the registry's head (its
    /// settings, profiles and access, from `lookup.json`) and the surface file, while a thread
    /// loads the registry and builds the gateway; the first call that needs it waits for it.
    /// Only for a folder whose ops no upstream serves (see [`deferrable`]): everything that can
    /// refuse a start (an interrupted build, an unknown profile, a surface of another registry)
    /// is still checked before serving. A registry that then fails to load leaves a gateway
    /// with no ops, which answers every call as unknown, and says why on stderr: it fails closed.
    fn load_deferred(
        dir: &Path,
        surface: &SurfaceChoice,
        options: ServeOptions,
        head: Registry,
    ) -> Result<Server, ServeError> {
        let scope = match surface {
            SurfaceChoice::Profile(name) => {
                Scope::profile(&head, name).ok_or_else(|| ServeError::UnknownProfile {
                    name: name.clone(),
                    known: head.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                })?
            }
            _ => Scope::all(),
        };
        let surface_path = surface_file(dir, surface)?;
        let surface_name = surface_path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tools = read_surface(&surface_path, &head.registry_version)?;
        let registry_version = head.registry_version.clone();
        let access_scopes = head.access.keys().cloned().collect();
        let pool = Arc::new(Pool::with_metrics(
            Default::default(),
            drift::DriftGate::new(options.drift, Default::default()),
            Arc::clone(&options.observer.metrics),
        ));
        let gateway: Arc<std::sync::OnceLock<Gateway>> = Default::default();
        let (slot, folder, start_scope) = (Arc::clone(&gateway), dir.to_path_buf(), scope.clone());
        let (store, version) = (options.store, head.registry_version.clone());
        let load = move || {
            let options = || Options {
                scope: start_scope.clone(),
                idempotency_store: store.clone(),
                ..Options::default()
            };
            let loaded = crate::runtime::read_dir(&folder)
                .map_err(|e| e.to_string())
                .and_then(|(reg, help)| {
                    if reg.registry_version != version {
                        return Err(format!(
                            "registry.json is {} now, not the {version} this server started with",
                            reg.registry_version
                        ));
                    }
                    Gateway::with_options(reg, help, options()).map_err(|e| e.to_string())
                });
            let gw = loaded
                .map(|gw| gw.with_index_file(folder.join(crate::runtime::search::INDEX_FILE)))
                .unwrap_or_else(|e| {
                    eprintln!(
                        "error: `{}` did not load ({e}); every call is answered as an unknown op",
                        folder.display()
                    );
                    let empty = crate::help::HelpDoc::new(
                        head.generator.clone(),
                        head.registry_version.clone(),
                        Default::default(),
                    );
                    Gateway::with_options(head, empty, options())
                        .expect("the head and its empty pages share a version")
                });
            let _ = slot.set(gw);
        };
        std::thread::Builder::new()
            .name("toolreg-load".into())
            .spawn(load)
            .map_err(|e| crate::runtime::GatewayError::Io {
                path: dir.display().to_string(),
                source: e,
            })?;
        let full = Arc::new(View {
            tool_names: tools.iter().map(|t| t.name.to_string()).collect(),
            tools,
            scope,
            hide: None,
            search: std::sync::OnceLock::new(),
            allowed: Default::default(),
            help: std::sync::OnceLock::new(),
        });
        Ok(Server {
            inner: Arc::new(Inner {
                access_scopes,
                gateway,
                full,
                version: registry_version,
                surface: surface_name,
                pool,
                observer: options.observer,
                upstream_of: Default::default(),
                list_ttl_ms: options.list_ttl_ms,
                views: Default::default(),
            }),
        })
    }

    /// The gateway, once loaded (at once, unless the start was deferred and the loading thread
    /// has not finished).
    pub(super) fn gateway(&self) -> &Gateway {
        self.inner.gateway.wait()
    }

    /// Every scope `[access]` names (for the metadata document and 403 answers).
    pub fn scopes_supported(&self) -> Vec<String> {
        self.inner.access_scopes.clone()
    }

    /// Whether a principal may use any op of this server at all (the HTTP layer answers 403
    /// otherwise).
    pub fn grants_anything(&self, principal: &Principal) -> bool {
        self.view(Some(principal))
            .scope
            .ops
            .as_ref()
            .is_none_or(|ops| !ops.is_empty())
    }

    /// What `principal` sees: everything the surface offers when there is none or the registry
    /// has no `[access]`, else the ops its `[access]` scopes grant within the surface. Built
    /// once per distinct set of known scopes and kept (a scope `[access]` does not name changes
    /// nothing, so it cannot grow the cache).
    fn view(&self, principal: Option<&Principal>) -> Arc<View> {
        // Known without the registry, so a deferred start answers `tools/list` at once.
        let Some(p) = principal.filter(|_| !self.inner.access_scopes.is_empty()) else {
            return Arc::clone(&self.inner.full);
        };
        let reg = self.gateway().registry();
        let key: Vec<String> = p
            .scopes
            .iter()
            .filter(|s| reg.access.contains_key(*s))
            .cloned()
            .collect();
        let mut views = self.inner.views.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = views.get(&key) {
            return Arc::clone(v);
        }
        let surface = &self.inner.full.scope;
        let allowed: std::collections::BTreeSet<String> = key
            .iter()
            .flat_map(|s| reg.access[s].ops.iter())
            .filter(|op| reg.ops.get(*op).is_some_and(|r| surface.contains(r)))
            .cloned()
            .collect();
        let hide = visibility::Visibility::new(reg, &allowed);
        let gateway_tools = reg.gateway.all();
        let tools: Vec<Tool> = self
            .inner
            .full
            .tools
            .iter()
            .filter(|t| {
                let name = t.name.as_ref();
                gateway_tools.contains(&name)
                    || reg
                        .op_by_tool_name(name)
                        .is_some_and(|r| allowed.contains(&r.op))
            })
            .map(|t| {
                let mut t = t.clone();
                if let (Some(h), Some(d)) = (&hide, &t.description) {
                    t.description = Some(h.scrub_text(d).into());
                }
                t
            })
            .collect();
        let view = Arc::new(View {
            tool_names: tools.iter().map(|t| t.name.to_string()).collect(),
            tools,
            scope: Scope::ops(format!("scopes {}", key.join(" ")), allowed.iter().cloned()),
            hide,
            search: std::sync::OnceLock::new(),
            allowed,
            help: std::sync::OnceLock::new(),
        });
        views.insert(key, Arc::clone(&view));
        view
    }

    /// How long a list or help answer holds, and whether it varies by caller: a compiled
    /// registry cannot change while this process runs; answers are `public` unless `[access]`
    /// makes them depend on who asks.
    pub fn cache_hints(&self, over_http: bool) -> (u64, rmcp::model::CacheScope) {
        let ttl = self
            .inner
            .list_ttl_ms
            .unwrap_or(if over_http { 3_600_000 } else { 86_400_000 });
        let scope = if self.inner.access_scopes.is_empty() {
            rmcp::model::CacheScope::Public
        } else {
            rmcp::model::CacheScope::Private
        };
        (ttl, scope)
    }

    /// The upstream sessions (to start them eagerly or stop them all).
    pub fn pool(&self) -> &Arc<Pool> {
        &self.inner.pool
    }

    /// The tools `tools/list` answers a caller without a principal.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.full.tools
    }

    /// The tools `tools/list` answers `principal`: the surface's tools it may use, in the
    /// surface's order, the same on every request.
    pub fn tools_for(&self, principal: Option<&Principal>) -> Vec<Tool> {
        self.view(principal).tools.clone()
    }
}

/// The registry's head (all but its ops and tree, from `lookup.json`) when `dir` can be served
/// before its registry is loaded ([`Server::load_with`]): the lookup index matches its files, no
/// upstream serves its ops (their pins and sessions are set up at start) and no vectors lie
/// beside it (their check against the registry can refuse a start).
fn deferrable(dir: &Path) -> Option<Registry> {
    let lookup = crate::model::lookup::Lookup::open(dir)?;
    #[cfg(feature = "semantic")]
    if dir.join(crate::semantic::FILE).exists() {
        return None;
    }
    lookup.head.upstreams.is_empty().then_some(lookup.head)
}

/// op -> (upstream, the tool's own name), for every op defined in an upstream's snapshot file.
fn upstream_ops(reg: &Registry) -> Vec<(String, (String, String))> {
    let by_file: std::collections::HashMap<&str, &str> = reg
        .upstreams
        .iter()
        .map(|(name, u)| (u.file.as_str(), name.as_str()))
        .collect();
    reg.ops
        .values()
        .filter_map(|r| {
            by_file
                .get(r.source.file.as_str())
                .map(|up| (r.op.clone(), (up.to_string(), r.tool_name.clone())))
        })
        .collect()
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("toolreg", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let principal = principal_of(&context);
        let mut result = ListToolsResult::with_all_items(self.tools_for(principal.as_ref()));
        let mut meta = MetaObject::default();
        meta.0
            .insert("toolreg/registry_version".into(), json!(self.inner.version));
        result.meta = Some(meta);
        let (ttl_ms, scope) = self.cache_hints(over_http(&context));
        result.ttl_ms = Some(ttl_ms);
        result.cache_scope = Some(scope);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = principal_of(&context);
        // Operation events as progress notifications, when the client sent a progress token.
        let progress = context.meta.get_progress_token();
        if let Some(token) = &progress {
            if let Some(op) = self.starting(
                &request.name,
                request.arguments.as_ref(),
                principal.as_ref(),
            ) {
                let note = ProgressNotificationParam::new(token.clone(), 0.0)
                    .with_total(1.0)
                    .with_message(op.describe());
                let _ = context.peer.notify_progress(note).await;
            }
        }
        let gate = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<limits::ItemGate>())
            .cloned();
        let call = self.call_gated(
            &request.name,
            request.arguments,
            principal.as_ref(),
            gate.as_ref(),
        );
        // A stdio client can be asked, during its call, what an upstream asks back (sampling,
        // elicitation); the HTTP transport answers with JSON only and has no way back.
        let answer = if over_http(&context) {
            call.await
        } else {
            crate::upstream::CALLER
                .scope(context.peer.clone(), call)
                .await
        };
        if let (Some(token), Ok(r)) = (&progress, &answer) {
            if let Some(op) = call::operation_of(r) {
                let note = ProgressNotificationParam::new(token.clone(), 1.0)
                    .with_total(1.0)
                    .with_message(op.describe());
                let _ = context.peer.notify_progress(note).await;
            }
        }
        answer.map(CallToolResponse::from)
    }
}

/// Whether this request came over HTTP (the transport puts the request's parts in).
fn over_http(context: &RequestContext<RoleServer>) -> bool {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .is_some()
}

/// The principal the HTTP layer authenticated for this request, if any.
fn principal_of(context: &RequestContext<RoleServer>) -> Option<Principal> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<Principal>())
        .cloned()
}

/// Resolves on SIGTERM or Ctrl-C. Installed before anything starts, so a signal during start-up
/// or the handshake also stops the upstreams.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    Ok(async move {
        #[cfg(unix)]
        let terminated = term.recv();
        #[cfg(not(unix))]
        let terminated = std::future::pending::<Option<()>>();
        tokio::select! {
            _ = terminated => {},
            _ = tokio::signal::ctrl_c() => {},
        }
    })
}

/// Serves over stdin/stdout until the client disconnects or SIGTERM/SIGINT arrives, then stops
/// every upstream (no orphans).
pub async fn run_stdio(server: Server, eager: bool) -> Result<(), String> {
    let stop = stop_signal()?;
    let serving = async {
        if eager {
            server.pool().start_all().await;
        }
        let running =
            match rmcp::service::serve_server(server.clone(), rmcp::transport::stdio()).await {
                Ok(running) => running,
                // The client went away before it said hello (a supervisor closing our stdin as
                // it stops us, a probe): a clean end, like a disconnect after the handshake.
                Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
                Err(e) => return Err(format!("the MCP handshake failed: {e}")),
            };
        let _ = running.waiting().await;
        Ok(())
    };
    let outcome = tokio::select! {
        // A signal that arrived with the client's hang-up is the reason we stop: say so first.
        biased;
        _ = stop => Ok(()),
        r = serving => r,
    };
    server.pool().shutdown_all().await;
    outcome
}
