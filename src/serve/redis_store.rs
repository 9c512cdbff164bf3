//! A Redis idempotency store (`toolreg serve --idempotency redis://HOST:PORT`), shared by
//! replicas behind a load balancer: a keyed write runs once across all of them.
//!
//! One Redis string per key, `toolreg:idem:KEY` = `{"op", "args", "done", "result"}` as JSON, where
//! `args` is the digest of the arguments (`idempotency::args_digest`), never the arguments, and a
//! result over `idempotency::MAX_STORED_RESULT` is never written (the gateway checks both).
//! `begin` is `SET NX PX` (atomic set-if-absent with expiry): the replica whose SET succeeds
//! runs the op; the others read the entry and answer replay, in flight or mismatch exactly as
//! the in-memory store does. Every key expires after the ttl, so a replica that dies mid-call
//! blocks its key for at most that long.

use crate::runtime::idempotency::{IdempotencyStore, Seen, StoreError, StoreFuture};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde_json::{json, Value};
use std::time::Duration;

const PREFIX: &str = "toolreg:idem:";
/// A store that does not answer within this fails the call (IDEMPOTENCY_UNAVAILABLE) rather
/// than holding it.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

pub struct RedisStore {
    conn: ConnectionManager,
    ttl: Duration,
}

fn store_err(e: impl std::fmt::Display) -> StoreError {
    StoreError(format!("redis: {e}"))
}

impl RedisStore {
    /// Connects (once, within two seconds; reconnects by itself later) to `url`.
    pub async fn connect(url: &str, ttl: Duration) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(store_err)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(ANSWER_TIMEOUT))
            .set_response_timeout(Some(ANSWER_TIMEOUT))
            .set_number_of_retries(1);
        let conn = tokio::time::timeout(
            ANSWER_TIMEOUT * 2,
            ConnectionManager::new_with_config(client, config),
        )
        .await
        .map_err(|_| store_err(format!("no answer from {url}")))?
        .map_err(store_err)?;
        Ok(RedisStore { conn, ttl })
    }

    fn redis_key(key: &str) -> String {
        format!("{PREFIX}{key}")
    }

    /// The entry under a Redis key, if any; `None` when it expired.
    async fn entry(
        conn: &mut ConnectionManager,
        redis_key: &str,
    ) -> Result<Option<Value>, StoreError> {
        let found: Option<String> = redis::cmd("GET")
            .arg(redis_key)
            .query_async(conn)
            .await
            .map_err(store_err)?;
        found
            .map(|f| {
                serde_json::from_str(&f).map_err(|e| {
                    store_err(format!("`{redis_key}` does not hold a toolreg entry: {e}"))
                })
            })
            .transpose()
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    async fn begin_async(&self, key: &str, op: &str, args: &Value) -> Result<Seen, StoreError> {
        let mut conn = self.conn.clone();
        let redis_key = Self::redis_key(key);
        let running = json!({"op": op, "args": args, "done": false}).to_string();
        // Set-if-absent, then read what is there; a key that expired between the two is tried again.
        for _ in 0..3 {
            let set: Option<String> = redis::cmd("SET")
                .arg(&redis_key)
                .arg(&running)
                .arg("NX")
                .arg("PX")
                .arg(self.ttl_ms())
                .query_async(&mut conn)
                .await
                .map_err(store_err)?;
            if set.is_some() {
                return Ok(Seen::New);
            }
            let Some(entry) = Self::entry(&mut conn, &redis_key).await? else {
                continue;
            };
            let first_op = entry.get("op").and_then(Value::as_str).unwrap_or_default();
            if first_op != op || entry.get("args") != Some(args) {
                return Ok(Seen::Mismatch {
                    op: first_op.to_string(),
                });
            }
            return Ok(if entry.get("done") == Some(&Value::Bool(true)) {
                Seen::Replay(entry.get("result").cloned().unwrap_or(Value::Null))
            } else {
                Seen::InFlight
            });
        }
        Err(store_err(format!("`{redis_key}` kept changing; retry")))
    }

    async fn finish_async(&self, key: &str, result: &Value) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        let redis_key = Self::redis_key(key);
        let Some(mut entry) = Self::entry(&mut conn, &redis_key).await? else {
            return Ok(()); // expired meanwhile: nothing to keep
        };
        entry["done"] = Value::Bool(true);
        entry["result"] = result.clone();
        let _: Option<String> = redis::cmd("SET")
            .arg(&redis_key)
            .arg(entry.to_string())
            .arg("XX")
            .arg("PX")
            .arg(self.ttl_ms())
            .query_async(&mut conn)
            .await
            .map_err(store_err)?;
        Ok(())
    }

    async fn abandon_async(&self, key: &str) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("DEL")
            .arg(Self::redis_key(key))
            .query_async(&mut conn)
            .await
            .map_err(store_err)?;
        Ok(())
    }
}

impl IdempotencyStore for RedisStore {
    fn begin<'a>(&'a self, key: &'a str, op: &'a str, args: &'a Value) -> StoreFuture<'a, Seen> {
        Box::pin(self.begin_async(key, op, args))
    }

    fn finish<'a>(&'a self, key: &'a str, result: &'a Value) -> StoreFuture<'a, ()> {
        Box::pin(self.finish_async(key, result))
    }

    fn abandon<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.abandon_async(key))
    }
}
