//! One connection to Redis shared by a store's calls, made anew after a timeout or an I/O
//! error. A reply lost in the network (a stalled proxy, a paused server) would otherwise leave
//! a multiplexed connection waiting for answers that never come, failing every later call:
//! redis-rs's `ConnectionManager` reconnects only when the socket closes, not on a timeout.

use redis::aio::MultiplexedConnection;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub struct Link {
    client: redis::Client,
    /// The URL with any password taken out, for messages.
    shown: String,
    timeout: Duration,
    /// The live connection and its generation (so a failure drops only the one it happened on).
    conn: tokio::sync::Mutex<Option<(u64, MultiplexedConnection)>>,
    generation: AtomicU64,
    /// Redis's clock minus ours, in ms, measured at each connect.
    clock_offset_ms: AtomicI64,
}

/// Milliseconds since the Unix epoch on this machine's clock.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Link {
    /// Connects to `url`; each connect and each answer may take up to `timeout`.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Link, String> {
        let link = Link {
            client: redis::Client::open(url).map_err(|e| link_err(url, e))?,
            shown: crate::trust::redact_url(url),
            timeout,
            conn: tokio::sync::Mutex::new(None),
            generation: AtomicU64::new(0),
            clock_offset_ms: AtomicI64::new(0),
        };
        link.connection().await?;
        Ok(link)
    }

    fn err(&self, e: impl std::fmt::Display) -> String {
        format!("redis: {e}")
    }

    fn no_answer(&self) -> String {
        format!(
            "redis: no answer from {} within {} ms (the connection is made anew)",
            self.shown,
            self.timeout.as_millis()
        )
    }

    async fn connection(&self) -> Result<(u64, MultiplexedConnection), String> {
        let mut slot = self.conn.lock().await;
        if let Some((generation, conn)) = slot.as_ref() {
            return Ok((*generation, conn.clone()));
        }
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let mut conn = tokio::time::timeout(
            self.timeout,
            self.client
                .get_multiplexed_async_connection_with_config(&config),
        )
        .await
        .map_err(|_| self.no_answer())?
        .map_err(|e| self.err(e))?;
        self.measure_clock(&mut conn).await?;
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        *slot = Some((generation, conn.clone()));
        Ok((generation, conn))
    }

    /// Learns Redis's clock (TIME) against ours, halfway through the round trip.
    async fn measure_clock(&self, conn: &mut MultiplexedConnection) -> Result<(), String> {
        let before = unix_ms();
        let (secs, micros): (i64, i64) =
            tokio::time::timeout(self.timeout, redis::cmd("TIME").query_async(conn))
                .await
                .map_err(|_| self.no_answer())?
                .map_err(|e| self.err(e))?;
        let after = unix_ms();
        let redis_ms = secs.saturating_mul(1000).saturating_add(micros / 1000);
        self.clock_offset_ms
            .store(redis_ms - (before + after) / 2, Ordering::Relaxed);
        Ok(())
    }

    /// Measures the clocks again (a deadline came out wrong).
    pub async fn remeasure_clock(&self) -> Result<(), String> {
        let (_, mut conn) = self.connection().await?;
        self.measure_clock(&mut conn).await
    }

    /// Now on Redis's clock, as far as the last measure tells (ms since the epoch).
    pub fn redis_now_ms(&self) -> i64 {
        unix_ms() + self.clock_offset_ms.load(Ordering::Relaxed)
    }

    /// Drops connection `generation` if it is still the live one; the next call reconnects.
    async fn drop_connection(&self, generation: u64) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|(g, _)| *g == generation) {
            *slot = None;
        }
    }

    /// Runs a script within the link's timeout; a timeout or a broken connection drops the
    /// connection, so the next call starts on a fresh one.
    pub async fn invoke<T: redis::FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T, String> {
        let (generation, mut conn) = self.connection().await?;
        match tokio::time::timeout(self.timeout, invocation.invoke_async(&mut conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                if e.is_timeout()
                    || e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_unrecoverable_error()
                {
                    self.drop_connection(generation).await;
                }
                Err(self.err(e))
            }
            Err(_) => {
                self.drop_connection(generation).await;
                Err(self.no_answer())
            }
        }
    }
}

fn link_err(url: &str, e: impl std::fmt::Display) -> String {
    format!("redis: {e} ({})", crate::trust::redact_url(url))
}
