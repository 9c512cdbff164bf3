//! Per-caller limits of `serve --http`: requests running at once and a token bucket of requests
//! per second, keyed by principal (by peer address, an IPv6 /64 as one, without one), in Redis
//! when replicas share them. Batch items after the first take tokens of their own.

use super::listener::{peer_key, Peer};
use super::Principal;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A rate limit shared by replicas: takes one request's token for `who` at `rate` per second.
pub trait SharedRate: Send + Sync {
    fn take<'a>(&'a self, who: &'a str, rate: u32) -> RateFuture<'a>;
}

/// The answer of [`SharedRate::take`]: whether a token was taken; `Err` when the store did not
/// answer (the replica's own bucket decides then).
pub type RateFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + 'a>>;

/// Per-caller limits: requests running at once, and a token bucket of requests per second
/// (in Redis when replicas share it; this replica's own bucket when the store does not answer).
pub(super) struct Limits {
    max_concurrent: usize,
    rate: u32,
    callers: Mutex<HashMap<String, Caller>>,
    shared: Option<Arc<dyn SharedRate>>,
    /// Until when the shared store is skipped after it failed to answer (a circuit breaker: a
    /// stalled Redis cost every request its 500 ms timeout).
    shared_down_until: Mutex<Option<Instant>>,
}

/// How long the shared rate store is left alone after it failed to answer.
const SHARED_RATE_PAUSE: std::time::Duration = std::time::Duration::from_secs(5);

/// The most callers with a bucket in use; past it, buckets that have refilled (the same as
/// new ones) are dropped, and when none has, a new caller waits: dropping a drained bucket
/// would reset that caller's limit.
const MAX_CALLERS: usize = 100_000;

#[derive(Default)]
struct Caller {
    running: usize,
    tokens: f64,
    refilled: Option<Instant>,
}

impl Caller {
    /// Whether the bucket has refilled to the brim by now (so dropping it resets nothing).
    fn is_full(&self, rate: u32) -> bool {
        let cap = f64::from(rate);
        rate == 0
            || self
                .refilled
                .is_none_or(|t| self.tokens + t.elapsed().as_secs_f64() * cap >= cap)
    }

    /// Refills the bucket at `rate` per second (up to `rate`) and takes one token if there is.
    fn take(&mut self, rate: u32) -> bool {
        let now = Instant::now();
        let cap = f64::from(rate);
        let elapsed = self.refilled.map_or(cap, |t| (now - t).as_secs_f64() * cap);
        self.tokens = (self.tokens + elapsed).min(cap);
        self.refilled = Some(now);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

impl Limits {
    pub(super) fn new(max_concurrent: usize, rate: u32) -> Limits {
        Limits {
            max_concurrent: max_concurrent.max(1),
            rate,
            callers: Mutex::default(),
            shared: None,
            shared_down_until: Mutex::default(),
        }
    }

    /// Rates decided by `shared` (Redis) when given, shared by replicas.
    pub(super) fn with_shared(mut self, shared: Option<Arc<dyn SharedRate>>) -> Limits {
        self.shared = shared;
        self
    }

    /// The shared store's answer for `who`: `None` when there is none, it is paused, or it
    /// failed to answer (which pauses it for `SHARED_RATE_PAUSE`).
    async fn shared_take(&self, who: &str) -> Option<bool> {
        let shared = self.shared.as_ref().filter(|_| self.rate > 0)?;
        {
            let down = self
                .shared_down_until
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if down.is_some_and(|until| Instant::now() < until) {
                return None;
            }
        }
        match shared.take(who, self.rate).await {
            Ok(taken) => Some(taken),
            Err(_) => {
                *self
                    .shared_down_until
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + SHARED_RATE_PAUSE);
                None
            }
        }
    }

    /// [`Limits::enter`], with the rate decided by the shared store when there is one (this
    /// replica's bucket decides while the store is away).
    async fn admit(&self, who: &str) -> Result<(), &'static str> {
        match self.shared_take(who).await {
            Some(true) => self.enter_with(who, false),
            Some(false) => Err("rate"),
            None => self.enter(who),
        }
    }

    /// One more request token for `who` (a batch item), without a place: whether it was taken.
    async fn take_token(&self, who: &str) -> bool {
        if self.rate == 0 {
            return true;
        }
        if let Some(taken) = self.shared_take(who).await {
            return taken;
        }
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        callers.entry(who.to_string()).or_default().take(self.rate)
    }

    /// Takes a place for `who`, or says why not.
    fn enter(&self, who: &str) -> Result<(), &'static str> {
        self.enter_with(who, true)
    }

    fn enter_with(&self, who: &str, local_rate: bool) -> Result<(), &'static str> {
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        if callers.len() >= MAX_CALLERS && !callers.contains_key(who) {
            let rate = self.rate;
            callers.retain(|_, c| c.running > 0 || !c.is_full(rate));
            if callers.len() >= MAX_CALLERS {
                return Err("concurrency");
            }
        }
        let c = callers.entry(who.to_string()).or_default();
        if self.rate > 0 && local_rate && !c.take(self.rate) {
            return Err("rate");
        }
        if c.running >= self.max_concurrent {
            return Err("concurrency");
        }
        c.running += 1;
        Ok(())
    }

    fn leave(&self, who: &str) {
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = callers.get_mut(who) {
            c.running = c.running.saturating_sub(1);
        }
    }
}

/// The middleware that applies [`Limits`] per principal (per peer address without one): 429
/// with `Retry-After` when over.
pub(super) async fn limit(
    axum::extract::State(limits): axum::extract::State<Arc<Limits>>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let who = match req.extensions().get::<Principal>() {
        Some(p) => format!("principal:{}", p.name),
        None => req
            .extensions()
            .get::<axum::extract::ConnectInfo<Peer>>()
            // An IPv6 host holds a whole /64: keyed per address it would have no limit.
            .map_or_else(
                || "anonymous".into(),
                |c| format!("peer:{}", peer_key(&c.0.addr)),
            ),
    };
    if let Err(which) = limits.admit(&who).await {
        let message = if which == "rate" {
            "too many requests per second for this caller; retry after a second"
        } else {
            "too many requests at once for this caller; wait for one to finish"
        };
        let mut r = (
            StatusCode::TOO_MANY_REQUESTS,
            axum::Json(serde_json::json!({"error": "rate_limited", "message": message})),
        )
            .into_response();
        r.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("1"),
        );
        return r;
    }
    // Given back when the request ends, also when it is dropped mid-way (the client went away):
    // otherwise each cancelled request would keep a place for good.
    // A batch's further items each take a token of this caller's bucket, as calls of their own.
    let gate = {
        let (limits, who) = (Arc::clone(&limits), who.clone());
        ItemGate::new(move || {
            let (limits, who) = (Arc::clone(&limits), who.clone());
            Box::pin(async move { limits.take_token(&who).await })
        })
    };
    req.extensions_mut().insert(gate);
    let _place = Place {
        limits: &limits,
        who,
    };
    next.run(req).await
}

/// A caller's place under its concurrency limit.
struct Place<'a> {
    limits: &'a Limits,
    who: String,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.limits.leave(&self.who);
    }
}

/// Takes one more request token for the caller of an HTTP request (a batch's further items);
/// the HTTP layer puts it in the request.
#[derive(Clone)]
pub struct ItemGate {
    #[allow(clippy::type_complexity)]
    take: std::sync::Arc<
        dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>> + Send + Sync,
    >,
}

impl ItemGate {
    pub(super) fn new(
        take: impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>
            + Send
            + Sync
            + 'static,
    ) -> ItemGate {
        ItemGate {
            take: std::sync::Arc::new(take),
        }
    }

    /// Whether a token was taken.
    pub async fn take(&self) -> bool {
        (self.take)().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_count_running_requests_and_refill_tokens() {
        let l = Limits::new(2, 0);
        assert!(l.enter("a").is_ok() && l.enter("a").is_ok());
        assert_eq!(l.enter("a"), Err("concurrency"));
        assert!(l.enter("b").is_ok(), "another caller is not held up");
        l.leave("a");
        assert!(l.enter("a").is_ok());
        // A place held by a request that is dropped (cancelled) is given back.
        let held = Place {
            limits: &l,
            who: "a".into(),
        };
        assert_eq!(l.enter("a"), Err("concurrency"));
        drop(held);
        assert!(l.enter("a").is_ok());
        let r = Limits::new(100, 3);
        for _ in 0..3 {
            assert!(r.enter("c").is_ok());
            r.leave("c");
        }
        assert_eq!(r.enter("c"), Err("rate"));
    }

    /// A shared store that never answers in time: counts its calls.
    struct Stalled(std::sync::atomic::AtomicUsize);

    impl SharedRate for Stalled {
        fn take<'a>(&'a self, _who: &'a str, _rate: u32) -> RateFuture<'a> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                Err("timed out".to_string())
            })
        }
    }

    #[test]
    fn a_stalled_shared_store_is_asked_once_then_left_alone() {
        let stalled = Arc::new(Stalled(Default::default()));
        let limits = Limits::new(100, 1000).with_shared(Some(stalled.clone()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let started = Instant::now();
        for _ in 0..20 {
            assert!(rt.block_on(limits.admit("a")).is_ok());
            limits.leave("a");
            assert!(rt.block_on(limits.take_token("a")));
        }
        // One timeout paid, not forty: this replica's bucket decided the rest.
        assert_eq!(stalled.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_full_caller_table_never_resets_a_drained_bucket() {
        let limits = Limits::new(100, 1);
        for i in 0..MAX_CALLERS {
            let who = format!("peer:{i}");
            assert!(limits.enter(&who).is_ok());
            limits.leave(&who);
        }
        // Every bucket is drained: a new caller waits, and an old one is still limited.
        assert_eq!(limits.enter("peer:new"), Err("concurrency"));
        assert_eq!(limits.enter("peer:0"), Err("rate"));
        // Once they have refilled (one second at 1/s), they are the same as new ones.
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        assert!(limits.enter("peer:new").is_ok());
    }

    #[test]
    fn an_ipv6_host_is_one_caller_per_64() {
        let a: std::net::SocketAddr = "[2001:db8:1:2::1]:5000".parse().unwrap();
        let b: std::net::SocketAddr = "[2001:db8:1:2:ffff::9]:6000".parse().unwrap();
        let c: std::net::SocketAddr = "[2001:db8:1:3::1]:5000".parse().unwrap();
        assert_eq!(peer_key(&a), peer_key(&b));
        assert_ne!(peer_key(&a), peer_key(&c));
    }
}
