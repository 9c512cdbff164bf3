//! `toolreg serve --http ADDR`: the same server over MCP's streamable HTTP, at `/mcp`.
//!
//! Stateless: every request gets a fresh handler over the one shared [`Server`] (no MCP session
//! ids), so replicas behind a load balancer are interchangeable. The only state that must be
//! shared between them is idempotency, which `--idempotency redis://...` moves out of process.
//!
//! Safe on a network: bearer authentication in front of `/mcp` ([`super::auth`]), a refusal to
//! listen beyond loopback without it, a cap on open connections (new ones beyond it are closed
//! at once), idle connections closed, request bodies capped (rmcp, 4 MiB), per-principal
//! concurrency and rate limits, and a stop that takes at most 2 s after SIGTERM.

use super::auth::{self, Auth};
use super::limits::{limit, Limits};
pub use super::limits::{RateFuture, SharedRate};
use super::listener::{Bounded, Peer};
use super::{stop_signal, Server};
use axum::response::IntoResponse;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";

/// How long in-flight requests may run after SIGTERM before the server stops anyway.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// How `serve --http` guards itself.
pub struct HttpOptions {
    /// `Host` headers accepted besides loopback (a guard against DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted; a request carrying any other `Origin` is refused (the MCP
    /// spec asks servers to validate it: DNS rebinding from a web page). Empty: only requests
    /// without an `Origin` (every non-browser client) pass.
    pub allowed_origins: Vec<String>,
    /// Who may call; `None` serves anyone who reaches the port.
    pub auth: Option<Auth>,
    /// Listen beyond loopback without `auth` (printed as a warning at start).
    pub allow_unauthenticated: bool,
    /// Open connections at most; a connection beyond it is closed at once.
    pub max_connections: usize,
    /// A connection that sends nothing for this long is closed.
    pub idle_timeout: Duration,
    /// Open connections one peer (an IPv4 address, or an IPv6 /64) may hold; more are closed at
    /// once, so one slow client cannot take every place.
    pub max_connections_per_peer: usize,
    /// A new connection must have sent its first request head (up to its blank line) within
    /// this long, however slowly it trickles bytes (a per-read idle timeout alone lets a client
    /// that sends a byte a minute hold a place for ever).
    pub head_timeout: Duration,
    /// Requests one principal (or, unauthenticated, one peer address) may have running at once.
    pub max_concurrent: usize,
    /// Requests per second one principal may make (a token bucket of one second's burst);
    /// 0 for no limit.
    pub rate_per_sec: u32,
    /// Where the rate buckets live when replicas share them (Redis); this replica otherwise.
    pub shared_rate: Option<std::sync::Arc<dyn SharedRate>>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            auth: None,
            allow_unauthenticated: false,
            max_connections: 4096,
            idle_timeout: Duration::from_secs(60),
            max_connections_per_peer: 64,
            head_timeout: Duration::from_secs(10),
            max_concurrent: 32,
            rate_per_sec: 0,
            shared_rate: None,
        }
    }
}

/// Why `serve --http` would not start: a setting that would leave it open or unguarded.
pub fn check_options(addr: SocketAddr, options: &HttpOptions) -> Result<(), String> {
    if let Some(h) = options.allowed_hosts.iter().find(|h| {
        h.contains('*')
            || h.trim().is_empty()
            || h.contains("://")
            || h.contains(['/', '@', '?', '#', ' '])
    }) {
        return Err(format!(
            "--allowed-host `{}` is not a host name: name each host clients use as it appears in a Host header (`tools.example.com` or `tools.example.com:8080`; no scheme, path or wildcard)",
            crate::model::diag::escape_controls(h)
        ));
    }
    if let Some(o) = options.allowed_origins.iter().find(|o| {
        !(o.starts_with("http://") || o.starts_with("https://") || o.as_str() == "null")
            || o.trim_end_matches('/').matches('/').count() > 2
    }) {
        return Err(format!(
            "--allowed-origin `{}` is not an origin: write scheme, host and port, as a browser sends it (`https://app.example.com:443`)",
            crate::model::diag::escape_controls(o)
        ));
    }
    if !addr.ip().is_loopback() && options.auth.is_none() && !options.allow_unauthenticated {
        return Err(format!(
            "{addr} is reachable beyond this machine and no authentication is set: pass --auth-tokens FILE (`toolreg token NAME --scope S` makes an entry) or --oauth-issuer URL --resource-url URL, or --allow-unauthenticated to serve anyone who reaches the port"
        ));
    }
    Ok(())
}

/// Serves until SIGTERM/SIGINT, then stops every upstream. Prints the bound address on stderr
/// (`--http 127.0.0.1:0` picks a free port).
pub async fn run_http(
    server: Server,
    addr: SocketAddr,
    eager: bool,
    options: HttpOptions,
) -> Result<(), String> {
    check_options(addr, &options)?;
    let stop = stop_signal()?;
    raise_open_file_limit();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    if eager {
        server.pool().start_all().await;
    }
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    config.sse_keep_alive = None;
    let mut hosts = config.allowed_hosts.clone();
    hosts.extend(options.allowed_hosts.iter().cloned());
    if let Some(a) = &options.auth {
        // The resource URL's own host is where clients reach us.
        if let Some(h) = url::Url::parse(&a.resource)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
        {
            hosts.push(h);
        }
    }
    config = config
        .with_allowed_hosts(hosts)
        .with_allowed_origins(options.allowed_origins.iter().cloned())
        .enforce_origin_validation();
    let cancel = config.cancellation_token.clone();
    let handler = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let limits = Arc::new(
        Limits::new(options.max_concurrent, options.rate_per_sec)
            .with_shared(options.shared_rate.clone()),
    );
    fn mcp_routes<S: Clone + Send + Sync + 'static>(
        service: StreamableHttpService<Server, NeverSessionManager>,
        limits: Arc<Limits>,
    ) -> axum::Router<S> {
        axum::Router::new()
            .route_service(ENDPOINT, service)
            .layer(axum::middleware::from_fn(super::jsonrpc::guard))
            .layer(axum::middleware::from_fn_with_state(limits, limit))
            .layer(axum::middleware::from_fn(one_plain_host))
    }
    let authenticated = options.auth.is_some();
    let router = match options.auth {
        Some(a) => {
            // RFC 9728 §3.1: the metadata lives at the well-known path with the resource's own
            // path appended (`/.well-known/oauth-protected-resource/gw/mcp` for a resource
            // published at `https://host/gw/mcp` by a proxy), which is what the 401's
            // `resource_metadata` names; also at the bare path and under this server's path.
            let mut paths = vec![
                auth::METADATA_PATH.to_string(),
                format!("{}{ENDPOINT}", auth::METADATA_PATH),
            ];
            let named = a.metadata_url();
            if let Some(path) = url::Url::parse(&named).ok().map(|u| u.path().to_string()) {
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
            let state = Arc::new((a, server.clone()));
            let metadata = axum::routing::get(auth::metadata);
            // Layers wrap the routes before them: authentication runs first, then the limits
            // (per principal); the metadata routes come after, unauthenticated.
            let mut router = mcp_routes(service, limits).layer(
                axum::middleware::from_fn_with_state(Arc::clone(&state), auth::authenticate),
            );
            for path in &paths {
                router = router.route(path, metadata.clone());
            }
            router.with_state(state)
        }
        None => {
            if !addr.ip().is_loopback() {
                eprintln!("warning: serving {bound} without authentication (--allow-unauthenticated): anyone who reaches the port can list and call every tool");
            }
            mcp_routes(service, limits)
        }
    };
    let listener = Bounded::new(
        listener,
        options.max_connections,
        options.max_connections_per_peer,
        options.idle_timeout,
        options.head_timeout,
    );
    // With authentication, a quarter of the places is kept for connections that authenticated.
    let listener = if authenticated {
        listener.keep_for_authenticated(options.max_connections, options.max_connections / 4)
    } else {
        listener
    };
    eprintln!("toolreg serve: listening on http://{bound}{ENDPOINT}");
    let stopped = Arc::new(tokio::sync::Notify::new());
    let on_stop = Arc::clone(&stopped);
    let serving = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<Peer>(),
    )
    .with_graceful_shutdown(async move {
        stop.await;
        on_stop.notify_one();
        cancel.cancel();
    });
    let served = tokio::select! {
        r = std::future::IntoFuture::into_future(serving) => r.map_err(|e| format!("the HTTP server failed: {e}")),
        // In-flight requests get STOP_GRACE after the signal, then the server stops anyway.
        _ = async { stopped.notified().await; tokio::time::sleep(STOP_GRACE).await } => Ok(()),
    };
    tokio::time::timeout(STOP_GRACE, server.pool().shutdown_all())
        .await
        .ok();
    served
}

/// Refuses a request with two `Host` headers, or a Host with user info (`a@127.0.0.1`): which
/// host it names would be a proxy's guess, and the allow-list would check the wrong one.
async fn one_plain_host(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let hosts = req.headers().get_all(axum::http::header::HOST);
    let count = hosts.iter().count();
    let with_user = hosts
        .iter()
        .any(|h| h.to_str().map_or(true, |h| h.contains('@')));
    if count > 1 || with_user {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            "one Host header, naming a host without user info",
        )
            .into_response();
    }
    next.run(req).await
}

/// Lifts the soft limit on open files to the hard one (at most 65,536), so the connection cap,
/// not the process's file table, decides how many clients are served.
fn raise_open_file_limit() {
    #[cfg(unix)]
    // SAFETY: getrlimit/setrlimit read and write a plain struct owned here.
    unsafe {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 {
            let want = l.rlim_max.min(65_536);
            if l.rlim_cur < want {
                l.rlim_cur = want;
                libc::setrlimit(libc::RLIMIT_NOFILE, &l);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_listening_needs_authentication_or_an_explicit_flag() {
        let open: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(check_options(local, &HttpOptions::default()).is_ok());
        let e = check_options(open, &HttpOptions::default()).unwrap_err();
        assert!(
            e.contains("--auth-tokens") && e.contains("--allow-unauthenticated"),
            "{e}"
        );
        let flagged = HttpOptions {
            allow_unauthenticated: true,
            ..HttpOptions::default()
        };
        assert!(check_options(open, &flagged).is_ok());
        let star = HttpOptions {
            allowed_hosts: vec!["*".into()],
            ..HttpOptions::default()
        };
        assert!(check_options(local, &star)
            .unwrap_err()
            .contains("wildcard"));
        // Values that could never match a Host header or an Origin stop the start.
        for (hosts, origins) in [
            (vec!["http://tools.example"], vec![]),
            (vec!["tools.example/mcp"], vec![]),
            (vec!["bot@tools.example"], vec![]),
            (vec![], vec!["tools.example"]),
            (vec![], vec!["https://app.example/path"]),
        ] {
            let bad = HttpOptions {
                allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
                allowed_origins: origins.iter().map(|o| o.to_string()).collect(),
                ..HttpOptions::default()
            };
            assert!(check_options(local, &bad).is_err(), "{hosts:?} {origins:?}");
        }
        let good = HttpOptions {
            allowed_hosts: vec!["tools.example:8080".into()],
            allowed_origins: vec!["https://app.example.com:443".into(), "null".into()],
            ..HttpOptions::default()
        };
        assert!(check_options(local, &good).is_ok());
    }
}
