//! One long-lived session per upstream, started on first use (or all at once with `--eager`).
//! A session that dies is reported as UPSTREAM_UNAVAILABLE on the call that saw it and started
//! again for the next call; repeated start failures back off (0.25 s doubling, at most 10 s).
//! Every session's tools pass the drift gate ([`super::drift`]) before any call is forwarded.

use super::codes::{
    UPSTREAM_MALFORMED, UPSTREAM_TIMEOUT, UPSTREAM_TOO_LARGE, UPSTREAM_UNAVAILABLE,
};
use super::drift::{DriftGate, Verdicts};
use crate::model::registry::Upstream;
use crate::runtime::HandlerError;
use crate::upstream::{Session, UpstreamError};
use rmcp::model::CallToolResult;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Slot {
    session: Option<Arc<Session>>,
    /// What the drift gate found in the session's latest tool listing.
    verdicts: Arc<Verdicts>,
    /// Start failures in a row.
    failures: u32,
    /// No new start before this moment.
    not_before: Option<Instant>,
    /// When the session's tools were last listed (a server that says its tools changed is
    /// listed again at most every `MIN_RELIST`).
    listed_at: Option<Instant>,
}

/// How soon after a listing a server's `list_changed` may cause another: a server that sends
/// it in a loop gets one listing per second, and its calls wait for the next one.
const MIN_RELIST: Duration = Duration::from_secs(1);

pub struct Pool {
    specs: BTreeMap<String, Upstream>,
    slots: BTreeMap<String, Mutex<Slot>>,
    metrics: Arc<super::observe::Metrics>,
    gate: DriftGate,
}

impl Pool {
    pub fn new(specs: BTreeMap<String, Upstream>, gate: DriftGate) -> Pool {
        Self::with_metrics(specs, gate, Arc::default())
    }

    /// A pool that counts its session starts in `metrics`.
    pub fn with_metrics(
        specs: BTreeMap<String, Upstream>,
        gate: DriftGate,
        metrics: Arc<super::observe::Metrics>,
    ) -> Pool {
        let slots = specs
            .keys()
            .map(|k| (k.clone(), Mutex::default()))
            .collect();
        Pool {
            specs,
            slots,
            metrics,
            gate,
        }
    }

    /// Starts every upstream now; failures are printed and retried on first use.
    pub async fn start_all(&self) {
        for name in self.specs.keys() {
            if let Err(e) = self.session(name).await {
                eprintln!("warning: {}", e.message);
            }
        }
    }

    /// The running session of `name` (started when there is none) and what the drift gate
    /// found in its tools, listed again first when the server said they changed.
    async fn session(&self, name: &str) -> Result<(Arc<Session>, Arc<Verdicts>), HandlerError> {
        let (Some(spec), Some(slot)) = (self.specs.get(name), self.slots.get(name)) else {
            return Err(HandlerError::new(
                UPSTREAM_UNAVAILABLE,
                format!("no upstream `{name}` in the registry"),
            ));
        };
        let mut slot = slot.lock().await;
        if let Some(s) = slot.session.clone() {
            if !s.is_closed() {
                if s.take_tools_changed() {
                    // At most one listing per MIN_RELIST: a call that comes sooner waits for it
                    // (holding the slot, so other calls wait too); nothing is forwarded until
                    // the new listing is judged.
                    if let Some(wait) = slot
                        .listed_at
                        .map(|t| MIN_RELIST.saturating_sub(t.elapsed()))
                        .filter(|w| !w.is_zero())
                    {
                        tokio::time::sleep(wait).await;
                    }
                    // Changes the server announced while this call waited are in this listing.
                    let _ = s.take_tools_changed();
                    slot.listed_at = Some(Instant::now());
                    match self.list_and_judge(name, &s).await {
                        Ok(v) => slot.verdicts = v,
                        Err(e) => {
                            // Unverifiable: nothing is forwarded until a listing succeeds.
                            slot.session = None;
                            return Err(e);
                        }
                    }
                }
                return Ok((s, Arc::clone(&slot.verdicts)));
            }
            // It died while idle: nothing of this call reached it, so it is started again now
            // (with a fresh listing) and the call goes on.
            slot.session = None;
        }
        if let Some(t) = slot.not_before {
            let now = Instant::now();
            if t > now {
                return Err(unavailable(
                    name,
                    format!(
                        "it failed to start {} time(s); next try in {} ms",
                        slot.failures,
                        (t - now).as_millis()
                    ),
                ));
            }
        }
        let started = match Session::start(name, spec).await {
            Ok(s) => {
                self.metrics.upstream_started(name);
                let s = Arc::new(s);
                // A listing that fails leaves the tools unverified: the start fails.
                self.list_and_judge(name, &s).await.map(|v| (s, v))
            }
            Err(e) => Err(from_upstream(name, e)),
        };
        match started {
            Ok((s, verdicts)) => {
                slot.session = Some(Arc::clone(&s));
                slot.verdicts = Arc::clone(&verdicts);
                slot.listed_at = Some(Instant::now());
                slot.failures = 0;
                slot.not_before = None;
                Ok((s, verdicts))
            }
            Err(e) => {
                slot.failures += 1;
                let backoff = FIRST_BACKOFF
                    .saturating_mul(1 << (slot.failures - 1).min(6))
                    .min(MAX_BACKOFF);
                slot.not_before = Some(Instant::now() + backoff);
                Err(e)
            }
        }
    }

    /// Lists a session's tools and has the drift gate judge them.
    async fn list_and_judge(
        &self,
        name: &str,
        session: &Session,
    ) -> Result<Arc<Verdicts>, HandlerError> {
        // A notification that arrives while this listing runs is seen by the next call.
        session.take_tools_changed();
        let listed = session.list_tools().await.map_err(|e| {
            let mut err = from_upstream(name, e);
            err.message = format!(
                "{}; its tools could not be listed to check them against the build, so nothing is forwarded to it",
                err.message
            );
            err
        })?;
        Ok(Arc::new(self.gate.judge(name, &session.server, &listed)))
    }

    /// Calls `tool` on `upstream` if the drift gate admits it (with its warning, if any). A
    /// dead session is dropped so the next call starts a new one.
    pub async fn call(
        &self,
        upstream: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<(CallToolResult, Option<String>), HandlerError> {
        let (session, verdicts) = self.session(upstream).await?;
        let warning = self.gate.admit(upstream, tool, &verdicts)?;
        match session.call(tool, args).await {
            Ok(r) => Ok((r, warning)),
            Err(e) => {
                // A timeout or a malformed answer leaves a live session: kept (unless it closed).
                if !(e.is_timeout() || e.is_malformed()) || session.is_closed() {
                    let mut slot = self.slots[upstream].lock().await;
                    if slot
                        .session
                        .as_ref()
                        .is_some_and(|s| Arc::ptr_eq(s, &session))
                    {
                        slot.session = None;
                    }
                }
                Err(from_upstream(upstream, e))
            }
        }
    }

    /// Stops every session and its process group.
    pub async fn shutdown_all(&self) {
        for slot in self.slots.values() {
            let session = slot.lock().await.session.take();
            if let Some(s) = session {
                match Arc::try_unwrap(s) {
                    Ok(s) => s.shutdown().await,
                    Err(shared) => drop(shared),
                }
            }
        }
    }
}

fn unavailable(name: &str, why: String) -> HandlerError {
    HandlerError::new(
        UPSTREAM_UNAVAILABLE,
        format!("the upstream MCP server `{name}` is unavailable: {why}"),
    )
    .with_details(json!({"upstream": name}))
}

/// Numbers the upstream failures this process logged, so an envelope can point at its log line.
static INCIDENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The envelope of an upstream failure. The server's stderr never goes into it (it may hold
/// secrets); it is logged on this process's stderr, bounded, under an incident number the
/// envelope names.
fn from_upstream(name: &str, e: UpstreamError) -> HandlerError {
    let code = if e.is_timeout() {
        UPSTREAM_TIMEOUT
    } else if e.is_too_large() {
        UPSTREAM_TOO_LARGE
    } else if e.is_malformed() {
        UPSTREAM_MALFORMED
    } else {
        UPSTREAM_UNAVAILABLE
    };
    // An upstream's URL never reaches a client, not even redacted (a path can be the secret):
    // the envelope says "(the upstream's URL)" and the operator's log has the redacted URL.
    let full = e.to_string();
    let mut message = crate::trust::strip_urls_in(&full);
    let mut details = json!({"upstream": name});
    if !e.stderr().is_empty() || message != full {
        let n = INCIDENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let incident = format!("upstream-{}-{n}", std::process::id());
        // The tail is bounded where it is kept (2 KiB) and escaped in `with_stderr`.
        eprintln!(
            "toolreg serve: {incident}: {}",
            crate::trust::redact_urls_in(&e.with_stderr())
        );
        message.push_str(&format!(
            " (details in the toolreg serve log under `{incident}`)"
        ));
        details["incident"] = json!(incident);
    }
    HandlerError::new(code, message).with_details(details)
}
