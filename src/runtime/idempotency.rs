//! The idempotency store for write ops: a repeat with the same key and arguments returns the
//! first result without running again; the same key with other arguments is a conflict.
//!
//! [`IdempotencyStore`] is what the gateway calls; [`MemoryStore`] (the default) keeps keys in
//! this process, bounded: at most `capacity` keys (the oldest is evicted first) and each kept
//! for `ttl`. Replicas behind a load balancer share one store instead (the Redis store of
//! `toolreg serve`). A key whose first call is still running answers `CONFLICT` to a concurrent
//! repeat. Failed calls are not remembered, so they can be retried with the same key.

use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Defaults: 1,024 keys for 10 minutes.
pub const DEFAULT_CAPACITY: usize = 1024;
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
/// The longest idempotency key taken (bytes); a longer one is a validation error, never stored.
pub const MAX_KEY_LEN: usize = 200;
/// The largest result a key keeps (bytes of JSON). A larger one is not stored: the envelope says
/// a repeat with the key runs the op again.
pub const MAX_STORED_RESULT: usize = 1 << 20;
/// What the in-memory store keeps at most, all results together (bytes of JSON); the oldest
/// keys go first.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

use crate::model::canonical::json_len;

/// The key a store holds for `key` sent by `caller`: the caller's partition (a digest of its
/// name, so the store never holds principal names) and the key. An empty caller is the shared
/// partition, the key as sent.
pub fn partitioned(caller: &str, key: &str) -> String {
    if caller.is_empty() {
        return key.to_string();
    }
    let h = blake3::hash(caller.as_bytes()).to_hex();
    format!("p{}:{key}", &h[..32])
}

/// The digest of a call's arguments that a store keeps instead of the arguments: blake3 of the
/// JSON with object keys sorted, so key order does not matter.
pub fn args_digest(args: &Value) -> String {
    fn feed(h: &mut blake3::Hasher, v: &Value) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                h.update(b"{");
                for k in keys {
                    feed(h, &Value::String(k.clone()));
                    h.update(b":");
                    feed(h, &m[k]);
                    h.update(b",");
                }
                h.update(b"}");
            }
            Value::Array(a) => {
                h.update(b"[");
                for x in a {
                    feed(h, x);
                    h.update(b",");
                }
                h.update(b"]");
            }
            other => {
                h.update(other.to_string().as_bytes());
            }
        }
    }
    let mut h = blake3::Hasher::new();
    feed(&mut h, args);
    format!("b3:{}", h.finalize().to_hex())
}

enum State {
    Running,
    Done(Value),
}

struct Entry {
    op: String,
    /// The caller passes [`args_digest`], never the arguments.
    args: Value,
    at: Instant,
    state: State,
    /// Bytes of the stored result's JSON.
    size: usize,
}

/// What a key's lookup found.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// First use: the caller runs the op and then calls `finish` or `abandon`.
    New,
    /// Same op and arguments, already done: the stored result.
    Replay(Value),
    /// Same key, other op or arguments.
    Mismatch { op: String },
    /// Same key and call, still running (for this long, when the store knows).
    InFlight { running_for: Option<Duration> },
    /// First use as far as a run goes: the key held the marker of an attempt whose caller was
    /// told it did not run, and this call took the key over. The caller runs the op.
    TakenOver,
}

/// A store could not answer (a shared store unreachable): the write is not run, since running it
/// could run it twice.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// What a store method returns: boxed, so the trait stays object-safe without an async-trait
/// dependency in the runtime.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Where the gateway keeps idempotency keys.
///
/// `begin` must be atomic: of two concurrent `begin`s with one key, exactly one sees
/// [`Seen::New`]. After `New` (or `TakenOver`) the gateway calls `finish` (success) or
/// `abandon` (failure). A store that fails to answer `begin` must make sure that what it may
/// have reserved does not block a retry: the caller is told the call did not run.
pub trait IdempotencyStore: Send + Sync {
    fn begin<'a>(&'a self, key: &'a str, op: &'a str, args: &'a Value) -> StoreFuture<'a, Seen>;
    fn finish<'a>(&'a self, key: &'a str, result: &'a Value) -> StoreFuture<'a, ()>;
    fn abandon<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()>;
}

/// The in-process store (the default).
pub struct MemoryStore(Mutex<Store>);

impl MemoryStore {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        MemoryStore(Mutex::new(Store::new(capacity, ttl)))
    }

    fn with<T>(&self, f: impl FnOnce(&mut Store) -> T) -> T {
        // A poisoned lock only means a panic elsewhere mid-update; the map is still usable.
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl IdempotencyStore for MemoryStore {
    fn begin<'a>(&'a self, key: &'a str, op: &'a str, args: &'a Value) -> StoreFuture<'a, Seen> {
        let seen = self.with(|s| s.begin(key, op, args));
        Box::pin(std::future::ready(Ok(seen)))
    }

    fn finish<'a>(&'a self, key: &'a str, result: &'a Value) -> StoreFuture<'a, ()> {
        self.with(|s| s.finish(key, result.clone()));
        Box::pin(std::future::ready(Ok(())))
    }

    fn abandon<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        self.with(|s| s.abandon(key));
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The bounded map behind [`MemoryStore`].
pub struct Store {
    capacity: usize,
    ttl: Duration,
    max_bytes: usize,
    /// Bytes of all stored results.
    bytes: usize,
    entries: HashMap<String, Entry>,
    order: VecDeque<String>,
}

impl Store {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        Store {
            capacity: capacity.max(1),
            ttl,
            max_bytes: DEFAULT_MAX_BYTES,
            bytes: 0,
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Sets the bound on all stored results together.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Bytes of all stored results (JSON).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn expire(&mut self, now: Instant) {
        while let Some(k) = self.order.front() {
            let stale = self
                .entries
                .get(k)
                .is_none_or(|e| now.duration_since(e.at) > self.ttl);
            if !stale && self.order.len() <= self.capacity && self.bytes <= self.max_bytes {
                break;
            }
            let k = self.order.pop_front().expect("front exists");
            if let Some(e) = self.entries.remove(&k) {
                self.bytes -= e.size;
            }
        }
    }

    /// Looks a key up; on first use reserves it as running.
    pub fn begin(&mut self, key: &str, op: &str, args: &Value) -> Seen {
        let now = Instant::now();
        self.expire(now);
        if let Some(e) = self.entries.get(key) {
            if e.op != op || e.args != *args {
                return Seen::Mismatch { op: e.op.clone() };
            }
            return match &e.state {
                State::Running => Seen::InFlight {
                    running_for: Some(now.duration_since(e.at)),
                },
                State::Done(v) => Seen::Replay(v.clone()),
            };
        }
        self.entries.insert(
            key.to_string(),
            Entry {
                op: op.to_string(),
                args: args.clone(),
                at: now,
                state: State::Running,
                size: 0,
            },
        );
        self.order.push_back(key.to_string());
        self.expire(now);
        Seen::New
    }

    /// Stores the result of a successful first call.
    pub fn finish(&mut self, key: &str, result: Value) {
        let size = json_len(&result);
        if size > MAX_STORED_RESULT {
            self.abandon(key);
            return;
        }
        if let Some(e) = self.entries.get_mut(key) {
            self.bytes = self.bytes - e.size + size;
            e.size = size;
            e.state = State::Done(result);
        }
        self.expire(Instant::now());
    }

    /// Forgets a key whose first call failed, so it can be retried.
    pub fn abandon(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.bytes -= e.size;
        }
        self.order.retain(|k| k != key);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replay_conflict_abandon_capacity_ttl() {
        let mut s = Store::new(2, DEFAULT_TTL);
        let a = json!({"x": 1});
        assert_eq!(s.begin("k", "op", &a), Seen::New);
        assert!(matches!(
            s.begin("k", "op", &a),
            Seen::InFlight {
                running_for: Some(_)
            }
        ));
        s.finish("k", json!("r"));
        assert_eq!(s.begin("k", "op", &a), Seen::Replay(json!("r")));
        assert_eq!(
            s.begin("k", "op", &json!({"x": 2})),
            Seen::Mismatch { op: "op".into() }
        );
        assert_eq!(s.begin("j", "op", &a), Seen::New);
        s.abandon("j");
        assert_eq!(s.begin("j", "op", &a), Seen::New);
        assert_eq!(s.begin("third", "op", &a), Seen::New);
        assert_eq!(s.len(), 2, "capacity evicts the oldest");
        assert_eq!(s.begin("k", "op", &a), Seen::New, "k was evicted");

        // All results together stay under the byte bound; the oldest go first; a result over
        // the per-key limit is not kept at all.
        let mut b = Store::new(100, DEFAULT_TTL).with_max_bytes(10_000);
        for i in 0..50 {
            let k = format!("k{i}");
            assert_eq!(b.begin(&k, "op", &a), Seen::New);
            b.finish(&k, json!("x".repeat(1_000)));
            assert!(b.bytes() <= 10_000, "{} bytes kept", b.bytes());
        }
        assert!(b.len() <= 10 && b.len() >= 9, "{}", b.len());
        assert_eq!(
            b.begin("k49", "op", &a),
            Seen::Replay(json!("x".repeat(1_000)))
        );
        assert_eq!(b.begin("huge", "op", &a), Seen::New);
        b.finish("huge", json!("y".repeat(MAX_STORED_RESULT)));
        assert_eq!(b.begin("huge", "op", &a), Seen::New, "not kept");
        assert_eq!(
            args_digest(&json!({"a": 1, "b": [1, {"c": 2, "d": 3}]})),
            args_digest(&json!({"b": [1, {"d": 3, "c": 2}], "a": 1}))
        );
        assert_ne!(
            args_digest(&json!({"a": 1})),
            args_digest(&json!({"a": "1"}))
        );

        let mut t = Store::new(10, Duration::from_millis(0));
        assert_eq!(t.begin("k", "op", &a), Seen::New);
        t.finish("k", json!(1));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(t.begin("k", "op", &a), Seen::New, "expired after the ttl");
    }
}
