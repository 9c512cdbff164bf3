//! toolreg as the MCP client of an upstream: the capabilities it declares at `initialize`, and
//! how it answers the requests a server may send back (roots, sampling, elicitation).
//!
//! Servers gate tools on these capabilities (the reference `server-everything` lists 17 tools to
//! a client that declares them, 13 otherwise), so declaring none hides tools from `import`. Only
//! what can be honoured is declared:
//! - `roots` when the upstream lists `roots` in its `[upstreams.NAME]` entry (they are answered
//!   as `file://` URIs); without them the server keeps its own configuration.
//! - `sampling` and `elicitation` (form and URL): during a `tools/call` that `serve` forwards
//!   from a stdio client, the request is put to that client, which alone has a model and a
//!   user. With no such client (an HTTP caller, several calls in flight on the same server, or
//!   a client that lacks the capability) the server gets an error saying why: never an answer
//!   made up here.

// Roots and sampling are deprecated by SEP-2577 (protocol 2026-07-28 replaces server-to-client
// requests), yet servers in use still gate tools on them.
#![allow(deprecated)]

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorData, FormElicitationCapability,
    Implementation, ListRootsResult, Root, RootsCapabilities, SamplingCapability,
    UrlElicitationCapability,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use rmcp::ClientHandler;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

tokio::task_local! {
    /// The downstream client whose `tools/call` is being answered, set by `serve` around a call
    /// from a stdio client: a server's sampling or elicitation request during the call goes to it.
    pub static CALLER: Peer<RoleServer>;
}

/// The downstream clients of the calls in flight on one upstream session.
#[derive(Default)]
pub(crate) struct Relay {
    next: AtomicU64,
    in_flight: Mutex<Vec<(u64, Option<Peer<RoleServer>>)>>,
}

/// Holds a call's place in its session's [`Relay`] until the call ends (or is dropped).
pub(crate) struct InFlight<'a> {
    relay: &'a Relay,
    id: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut calls = self
            .relay
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        calls.retain(|(id, _)| *id != self.id);
    }
}

impl Relay {
    /// Records a call starting now, with the caller `serve` set for this task, if any.
    pub(crate) fn enter(&self) -> InFlight<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let caller = CALLER.try_with(Peer::clone).ok();
        self.in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, caller));
        InFlight { relay: self, id }
    }

    /// The one downstream client a server's request can be put to, or why there is none.
    fn caller(&self, what: &str) -> Result<Peer<RoleServer>, ErrorData> {
        let calls = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        match calls.as_slice() {
            [] => Err(refused(format!(
                "toolreg forwards {what} only during a tools/call it is forwarding, and none is in progress"
            ))),
            [(_, None)] => Err(refused(format!(
                "the call came from a client toolreg cannot send {what} to (over HTTP, or from a library caller); only a stdio client is asked"
            ))),
            [(_, Some(peer))] => Ok(peer.clone()),
            _ => Err(refused(format!(
                "{} calls are in flight on this server, so toolreg cannot tell which client to ask for {what}",
                calls.len()
            ))),
        }
    }
}

fn refused(message: String) -> ErrorData {
    ErrorData::invalid_request(message, None)
}

/// The client handler of one upstream session.
pub(crate) struct GatewayClient {
    roots: Vec<Root>,
    pub(crate) relay: Arc<Relay>,
    /// Set when the server sends `notifications/tools/list_changed`; `serve` lists its tools
    /// again before the next call (the drift gate).
    pub(crate) tools_changed: Arc<std::sync::atomic::AtomicBool>,
    /// How long the downstream client may take to answer a forwarded request.
    answer_within: Duration,
}

impl GatewayClient {
    pub(crate) fn new(roots: &[String], answer_within: Duration) -> GatewayClient {
        GatewayClient {
            roots: roots
                .iter()
                .map(|r| {
                    let mut root = Root::new(file_uri(r));
                    root.name = std::path::Path::new(r)
                        .file_name()
                        .and_then(|n| n.to_str())
                        .map(str::to_string);
                    root
                })
                .collect(),
            relay: Arc::default(),
            tools_changed: Arc::default(),
            answer_within,
        }
    }

    async fn ask<T>(
        &self,
        what: &str,
        request: impl std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, ErrorData> {
        match tokio::time::timeout(self.answer_within, request).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(rmcp::ServiceError::McpError(e))) => Err(e),
            Ok(Err(e)) => Err(refused(format!(
                "toolreg's client did not answer {what}: {e}"
            ))),
            Err(_) => Err(refused(format!(
                "toolreg's client did not answer {what} within {} ms",
                self.answer_within.as_millis()
            ))),
        }
    }
}

/// `file://` URI of an absolute path (percent-encoded by the `url` crate).
fn file_uri(path: &str) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{path}"))
}

impl ClientHandler for GatewayClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if !self.roots.is_empty() {
            let mut roots = RootsCapabilities::default();
            roots.list_changed = Some(false);
            capabilities.roots = Some(roots);
        }
        capabilities.sampling = Some(SamplingCapability::default());
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::default());
        elicitation.url = Some(UrlElicitationCapability::default());
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(
            capabilities,
            Implementation::new("toolreg", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(self.roots.clone()))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let what = "sampling (sampling/createMessage)";
        let caller = self.relay.caller(what)?;
        if caller
            .peer_info()
            .is_none_or(|i| i.capabilities.sampling.is_none())
        {
            return Err(refused(format!("toolreg's client does not support {what}")));
        }
        self.ask(what, caller.create_message(params)).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let what = "elicitation (elicitation/create)";
        let caller = self.relay.caller(what)?;
        let supported = caller
            .peer_info()
            .and_then(|i| i.capabilities.elicitation.clone())
            .is_some_and(|e| match &request {
                // A client declaring `elicitation: {}` supports forms (the spec's default).
                ElicitRequestParams::UrlElicitationParams { .. } => e.url.is_some(),
                _ => e.form.is_some() || e.url.is_none(),
            });
        if !supported {
            return Err(refused(format!(
                "toolreg's client does not support this kind of {what}"
            )));
        }
        self.ask(what, caller.create_elicitation(request)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_encode_what_a_uri_cannot_hold() {
        assert_eq!(file_uri("/srv/data"), "file:///srv/data");
        assert_eq!(file_uri("/a b/%c"), "file:///a%20b/%25c");
        assert_eq!(file_uri("/é"), "file:///%C3%A9");
    }

    #[test]
    fn roots_are_declared_only_when_configured() {
        let none = GatewayClient::new(&[], Duration::from_secs(1)).get_info();
        assert!(none.capabilities.roots.is_none());
        assert!(none.capabilities.sampling.is_some());
        let some = GatewayClient::new(&["/srv/data".into()], Duration::from_secs(1)).get_info();
        let roots = some.capabilities.roots.expect("roots declared");
        assert_eq!(roots.list_changed, Some(false));
    }

    #[test]
    fn a_request_outside_a_call_is_refused_with_the_reason() {
        let relay = Relay::default();
        let e = relay.caller("sampling").unwrap_err();
        assert!(e.message.contains("none is in progress"), "{}", e.message);
        let _one = relay.enter();
        let e = relay.caller("sampling").unwrap_err();
        assert!(e.message.contains("only a stdio client"), "{}", e.message);
        let _two = relay.enter();
        let e = relay.caller("sampling").unwrap_err();
        assert!(e.message.contains("2 calls are in flight"), "{}", e.message);
        drop(_two);
        drop(_one);
        assert!(relay.in_flight.lock().unwrap().is_empty());
    }
}
