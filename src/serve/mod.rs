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
//! Here: the server, its per-principal views, the MCP handler and the stdio loop. Beside it:
//! `start` (loading a server: registry, surface, forwarding handlers, the deferred start),
//! `surface` (which surface file, read as MCP tools),
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
mod start;
mod surface;
mod visibility;

pub use auth::{Auth, Principal};
pub use http::{run_http, HttpOptions};
pub use pool::Pool;
pub use surface::SurfaceChoice;

#[cfg(feature = "redis")]
pub use redis_limits::RedisRate;
#[cfg(feature = "redis")]
pub use redis_store::RedisStore;

use crate::runtime::idempotency::IdempotencyStore;
use crate::runtime::{Gateway, Scope};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;
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
