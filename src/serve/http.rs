//! `toolreg serve --http ADDR`: the same server over MCP's streamable HTTP, at `/mcp`.
//!
//! Stateless: every request gets a fresh handler over the one shared [`Server`] (no MCP session
//! ids), so replicas behind a load balancer are interchangeable. The only state that must be
//! shared between them is idempotency, which `--idempotency redis://...` moves out of process.

use super::{stop_signal, Server};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";

/// Serves until SIGTERM/SIGINT, then stops every upstream. Prints the bound address on stderr
/// (`--http 127.0.0.1:0` picks a free port). `allowed_hosts` are accepted in the `Host` header
/// besides loopback (rmcp refuses other hosts, a guard against DNS rebinding).
pub async fn run_http(
    server: Server,
    addr: SocketAddr,
    eager: bool,
    allowed_hosts: Vec<String>,
) -> Result<(), String> {
    let stop = stop_signal()?;
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
    if !allowed_hosts.is_empty() {
        let mut hosts = config.allowed_hosts.clone();
        hosts.extend(allowed_hosts);
        config = config.with_allowed_hosts(hosts);
    }
    let cancel = config.cancellation_token.clone();
    let handler = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let router = axum::Router::new().route_service(ENDPOINT, service);
    eprintln!("toolreg serve: listening on http://{bound}{ENDPOINT}");
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            stop.await;
            cancel.cancel();
        })
        .await
        .map_err(|e| format!("the HTTP server failed: {e}"));
    server.pool().shutdown_all().await;
    served
}
