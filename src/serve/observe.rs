//! What `toolreg serve` tells its operator: one audit line per `tools/call` and Prometheus
//! metrics (`--metrics ADDR`, Prometheus text at `/metrics` on a listener of its own, so
//! scraping needs no MCP credentials and the MCP port shows no op names).
//!
//! An audit line carries who called, which tool and op, the upstream, the outcome code, the
//! latency and a blake3 digest of the arguments: never their values (they may hold anything a
//! user typed).

use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server's counters and histograms.
pub struct Metrics {
    registry: Registry,
    calls: IntCounterVec,
    latency: HistogramVec,
    starts: IntCounterVec,
}

impl Default for Metrics {
    fn default() -> Self {
        let registry = Registry::new();
        let calls = IntCounterVec::new(
            Opts::new(
                "toolreg_calls_total",
                "tools/call requests by op and outcome code (ok or the envelope's error code).",
            ),
            &["op", "code"],
        )
        .expect("a valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new("toolreg_call_duration_seconds", "tools/call latency by op.")
                // 0.1 ms .. ~13 s.
                .buckets(prometheus::exponential_buckets(0.0001, 2.0, 18).expect("valid buckets")),
            &["op"],
        )
        .expect("a valid metric");
        let starts = IntCounterVec::new(
            Opts::new(
                "toolreg_upstream_starts_total",
                "Upstream MCP server sessions started (a start after the first is a restart).",
            ),
            &["upstream"],
        )
        .expect("a valid metric");
        for m in [
            Box::new(calls.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(latency.clone()),
            Box::new(starts.clone()),
        ] {
            registry.register(m).expect("registered once");
        }
        Metrics {
            registry,
            calls,
            latency,
            starts,
        }
    }
}

impl Metrics {
    pub fn call(&self, op: &str, code: &str, took: Duration) {
        self.calls.with_label_values(&[op, code]).inc();
        self.latency
            .with_label_values(&[op])
            .observe(took.as_secs_f64());
    }

    pub fn upstream_started(&self, upstream: &str) {
        self.starts.with_label_values(&[upstream]).inc();
    }

    /// Every metric in Prometheus' text format (0.0.4).
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let _ = prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Where audit lines go.
pub enum AuditSink {
    Stderr,
    File(Mutex<std::fs::File>),
}

impl AuditSink {
    /// `-` for stderr, else a file appended to (created when missing).
    pub fn open(spec: &str) -> Result<AuditSink, String> {
        if spec == "-" {
            return Ok(AuditSink::Stderr);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(spec)
            .map(|f| AuditSink::File(Mutex::new(f)))
            .map_err(|e| format!("--audit {spec}: {e}"))
    }

    pub fn write(&self, line: &Value) {
        let mut text = line.to_string();
        text.push('\n');
        match self {
            AuditSink::Stderr => eprint!("{text}"),
            AuditSink::File(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = f.write_all(text.as_bytes());
                }
            }
        }
    }
}

/// One `tools/call` as the audit log records it.
pub struct CallRecord<'a> {
    pub principal: Option<&'a str>,
    pub tool: &'a str,
    pub op: &'a str,
    pub upstream: Option<&'a str>,
    pub code: &'a str,
    pub took: Duration,
    /// [`args_digest`] of the arguments.
    pub args_b3: String,
}

/// `b3k:` and the blake3 of the arguments in canonical form (keys sorted), keyed with a random
/// key of this process: what the audit log keeps instead of their values. Keyed, so a reader of
/// the log can tell repeated calls apart within one run but cannot recover a guessable value
/// (`{"user": "alice"}`) by hashing candidates, nor correlate callers across servers or runs.
pub fn args_digest(args: &Value) -> String {
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        // Without OS randomness the key is still process-unique (time and pid), never fixed.
        if getrandom::fill(&mut k).is_err() {
            let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
            k = *blake3::hash(seed.as_bytes()).as_bytes();
        }
        k
    });
    let canonical = crate::model::canonical::sort_keys(args).to_string();
    format!(
        "b3k:{}",
        blake3::keyed_hash(key, canonical.as_bytes()).to_hex()
    )
}

impl CallRecord<'_> {
    pub fn to_json(&self) -> Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        json!({
            "ts_ms": now as u64,
            // The caller's own text: escaped and cut, like every name a log line carries.
            "tool": crate::model::diag::escape_controls(crate::model::text::clip_chars(self.tool, 128)),
            "principal": self.principal.map(|p| crate::model::diag::escape_controls(crate::model::text::clip_chars(p, 200))),
            "op": self.op,
            "upstream": self.upstream,
            "code": self.code,
            "latency_ms": (self.took.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
            "args_b3": self.args_b3,
        })
    }
}

/// Observation shared by the server's handlers.
#[derive(Default, Clone)]
pub struct Observer {
    pub metrics: Arc<Metrics>,
    pub audit: Option<Arc<AuditSink>>,
}

/// Serves `/metrics` on `addr` until the process stops.
/// The most connections the metrics listener holds at once.
const METRICS_MAX_CONNECTIONS: usize = 32;

pub async fn serve_metrics(
    addr: std::net::SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<std::net::SocketAddr, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--metrics {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = Arc::clone(&metrics);
            async move {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    m.render(),
                )
            }
        }),
    );
    // Bounded like the MCP listener (a scraper needs one connection): slow or piled-up
    // connections cannot hold the port or the process.
    let listener = super::listener::Bounded::new(
        listener,
        METRICS_MAX_CONNECTIONS,
        4,
        Duration::from_secs(10),
        Duration::from_secs(5),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_and_audited_without_argument_values() {
        let m = Metrics::default();
        m.call("onto.task.list", "ok", Duration::from_millis(3));
        m.call(
            "onto.task.list",
            "VALIDATION_ERROR",
            Duration::from_millis(1),
        );
        m.upstream_started("memory");
        let text = m.render();
        assert!(
            text.contains("toolreg_calls_total{code=\"ok\",op=\"onto.task.list\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("toolreg_call_duration_seconds_count{op=\"onto.task.list\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("toolreg_upstream_starts_total{upstream=\"memory\"} 1"),
            "{text}"
        );
        let args = json!({"password": "hunter2", "title": "x"});
        let line = CallRecord {
            principal: Some("ci-bot"),
            tool: "tool_exec",
            op: "onto.task.create",
            upstream: None,
            code: "ok",
            took: Duration::from_micros(1500),
            args_b3: args_digest(&args),
        }
        .to_json();
        assert!(!line.to_string().contains("hunter2"));
        assert_eq!(line["latency_ms"], 1.5);
        assert_eq!(line["principal"], "ci-bot");
        assert!(line["args_b3"].as_str().unwrap().starts_with("b3k:"));
        // Keyed: the same arguments digest alike within a run, unlike a plain blake3.
        assert_eq!(
            args_digest(&json!({"b": 1, "a": 2})),
            args_digest(&json!({"a": 2, "b": 1}))
        );
        let plain = blake3::hash(
            crate::model::canonical::sort_keys(&json!({"a": 2, "b": 1}))
                .to_string()
                .as_bytes(),
        )
        .to_hex();
        assert!(!args_digest(&json!({"a": 2, "b": 1})).contains(plain.as_str()));
    }
}
