//! A Redis idempotency store (`toolreg serve --idempotency redis://HOST:PORT`), shared by
//! replicas behind a load balancer: a keyed write runs once across all of them.
//!
//! One Redis hash per key, `toolreg:idem:KEY` = `op`, `args` (the digest of the arguments,
//! `idempotency::args_digest`, never the arguments), `done`, `result` (only once done, never over
//! `idempotency::MAX_STORED_RESULT`: the gateway checks), `owner` (the attempt that set it) and
//! `since` (when, on Redis's clock). Each step is one Lua script, so it is atomic:
//!
//! - `begin` reserves the key for a fresh owner token, or reports what is there. The script
//!   carries a deadline: a `begin` that reaches Redis after its caller gave up (Redis paused,
//!   a slow network) does nothing, so it cannot leave a "running" marker for a call that will
//!   never run.
//! - A `begin` whose answer did not come back (a lost reply) told its caller "not run", yet its
//!   marker may stand. Its owner token is then *voided* (`toolreg:idem:void:TOKEN`) by a repair
//!   task that keeps trying until Redis answers; a later `begin` that finds a voided owner's
//!   marker takes the key over. So an honest retry is never blocked by a call that never ran.
//! - `finish` and `abandon` act only on the caller's own marker (owner checked); when they
//!   cannot reach Redis they are retried in the background for the key's ttl.
//!
//! The connection is dropped and made anew after any timeout or I/O error: a reply lost in the
//! network would otherwise leave a multiplexed connection waiting for answers that never come.
//! Every key expires after the ttl, so a replica that dies mid-call blocks its key for at most
//! that long. Scripts touch void keys they do not declare, so Redis Cluster is not supported (a
//! single Redis, or one with replicas, is).

use super::redis_link::Link;
use crate::runtime::idempotency::{IdempotencyStore, Seen, StoreError, StoreFuture};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const PREFIX: &str = "toolreg:idem:";
const VOID_PREFIX: &str = "toolreg:idem:void:";
/// A store that does not answer within this fails the call (IDEMPOTENCY_UNAVAILABLE) rather
/// than holding it.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the repair task tries again while Redis does not answer.
const REPAIR_EVERY: Duration = Duration::from_millis(100);
/// Repairs waiting at most (each a key, an owner and perhaps a result)...
const MAX_REPAIRS: usize = 4096;
/// ...and results among them at most, in bytes; past this a result is dropped and its key
/// released instead (a repeat then runs again, as the caller's warning says).
const MAX_REPAIR_BYTES: usize = 32 << 20;

/// Reserves the key, or reports what holds it. KEYS[1] the key; ARGV: op, args digest, owner
/// token, ttl ms, deadline ms (Redis clock), void prefix.
const BEGIN: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[5]) then return {'late', tostring(now)} end
local kind = redis.call('TYPE', KEYS[1]).ok
local took_over = '0'
if kind == 'hash' then
  local e = redis.call('HMGET', KEYS[1], 'op', 'args', 'done', 'result', 'owner', 'since')
  local orphan = e[3] == '0' and e[5] and redis.call('EXISTS', ARGV[6] .. e[5]) == 1
  if not orphan then
    return {'seen', e[1] or '', e[2] or '', e[3] or '0', e[4] or '', tostring(now - (tonumber(e[6]) or now))}
  end
  redis.call('DEL', KEYS[1])
  took_over = '1'
elseif kind ~= 'none' then
  return {'foreign', kind}
end
redis.call('HSET', KEYS[1], 'op', ARGV[1], 'args', ARGV[2], 'done', '0', 'owner', ARGV[3], 'since', tostring(now))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'new', took_over}
"#;

/// Stores the result on the caller's own marker. KEYS[1]; ARGV: owner, result JSON, ttl ms.
const FINISH: &str = r#"
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'done', '1', 'result', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"#;

/// Removes the caller's own running marker; with ARGV[3] = '1' also voids the owner token, so a
/// marker that lands or stays later is taken over. KEYS[1] the key, KEYS[2] the void key;
/// ARGV: owner, ttl ms, void.
const RELEASE: &str = r#"
if ARGV[3] == '1' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
if redis.call('TYPE', KEYS[1]).ok == 'hash'
   and redis.call('HGET', KEYS[1], 'owner') == ARGV[1]
   and redis.call('HGET', KEYS[1], 'done') == '0' then
  redis.call('DEL', KEYS[1])
end
return 1
"#;

fn store_err(e: impl std::fmt::Display) -> StoreError {
    StoreError(e.to_string())
}

/// The link and the scripts.
struct Redis {
    link: Link,
    begin_script: redis::Script,
    finish_script: redis::Script,
    release_script: redis::Script,
}

impl Redis {
    async fn release(
        &self,
        key: &str,
        owner: &str,
        ttl_ms: u64,
        void: bool,
    ) -> Result<(), StoreError> {
        self.link
            .invoke::<i64>(
                self.release_script
                    .key(redis_key(key))
                    .key(format!("{VOID_PREFIX}{owner}"))
                    .arg(owner)
                    .arg(ttl_ms)
                    .arg(if void { "1" } else { "0" }),
            )
            .await
            .map(drop)
            .map_err(StoreError)
    }

    async fn finish(
        &self,
        key: &str,
        owner: &str,
        result: &str,
        ttl_ms: u64,
    ) -> Result<(), StoreError> {
        self.link
            .invoke::<i64>(
                self.finish_script
                    .key(redis_key(key))
                    .arg(owner)
                    .arg(result)
                    .arg(ttl_ms),
            )
            .await
            .map(drop)
            .map_err(StoreError)
    }
}

fn redis_key(key: &str) -> String {
    format!("{PREFIX}{key}")
}

/// Work the store could not do when asked, retried until Redis answers or the key expires.
enum Repair {
    /// Void an owner token (its caller was told "not run") and drop its marker.
    Void { key: String, owner: String },
    /// Store a finished call's result on its marker.
    Finish {
        key: String,
        owner: String,
        result: String,
    },
}

pub struct RedisStore {
    redis: Arc<Redis>,
    ttl: Duration,
    /// This replica's prefix for owner tokens (pid and a random part; never shown to callers).
    replica: String,
    attempts: AtomicU64,
    /// Keys this replica reserved, with their owner token, until finished or abandoned.
    owned: Mutex<HashMap<String, (String, Instant)>>,
    repairs: mpsc::Sender<Repair>,
    repair_bytes: Arc<AtomicUsize>,
}

impl RedisStore {
    /// Connects (once, within two seconds; reconnects by itself later) to `url`, and starts the
    /// repair task on the current tokio runtime.
    pub async fn connect(url: &str, ttl: Duration) -> Result<RedisStore, StoreError> {
        let redis = Arc::new(Redis {
            link: Link::connect(url, ANSWER_TIMEOUT)
                .await
                .map_err(StoreError)?,
            begin_script: redis::Script::new(BEGIN),
            finish_script: redis::Script::new(FINISH),
            release_script: redis::Script::new(RELEASE),
        });
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(store_err)?;
        let replica = format!(
            "{}-{}",
            std::process::id(),
            nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        let (repairs, queue) = mpsc::channel(MAX_REPAIRS);
        let repair_bytes = Arc::new(AtomicUsize::new(0));
        let ttl_ms = ttl_ms(ttl);
        tokio::spawn(repair_loop(
            Arc::clone(&redis),
            queue,
            Arc::clone(&repair_bytes),
            ttl,
            ttl_ms,
        ));
        Ok(RedisStore {
            redis,
            ttl,
            replica,
            attempts: AtomicU64::new(0),
            owned: Mutex::new(HashMap::new()),
            repairs,
            repair_bytes,
        })
    }

    fn owned(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.owned.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands `repair` to the repair task; `false` when its queue is full.
    fn queue(&self, repair: Repair) -> bool {
        self.repairs.try_send(repair).is_ok()
    }

    async fn begin_async(&self, key: &str, op: &str, args: &Value) -> Result<Seen, StoreError> {
        let owner = format!(
            "{}-{}",
            self.replica,
            self.attempts.fetch_add(1, Ordering::Relaxed)
        );
        let args = args.to_string();
        let mut clock_checked = false;
        loop {
            let sent = Instant::now();
            let deadline = self.redis.link.redis_now_ms()
                + i64::try_from(ANSWER_TIMEOUT.as_millis()).unwrap_or(i64::MAX);
            let answer: Result<Vec<String>, StoreError> = self
                .redis
                .link
                .invoke(
                    self.redis
                        .begin_script
                        .key(redis_key(key))
                        .arg(op)
                        .arg(&args)
                        .arg(&owner)
                        .arg(ttl_ms(self.ttl))
                        .arg(deadline)
                        .arg(VOID_PREFIX),
                )
                .await
                .map_err(StoreError);
            let answer = match answer {
                Ok(a) => a,
                Err(e) => {
                    // The caller is told "not run", so this attempt's marker, should it stand,
                    // must not block a retry.
                    self.queue(Repair::Void {
                        key: key.to_string(),
                        owner,
                    });
                    return Err(e);
                }
            };
            return match answer.first().map(String::as_str) {
                Some("new") => {
                    let mut owned = self.owned();
                    let ttl = self.ttl;
                    owned.retain(|_, (_, at)| at.elapsed() < ttl);
                    owned.insert(key.to_string(), (owner, Instant::now()));
                    Ok(if answer.get(1).map(String::as_str) == Some("1") {
                        Seen::TakenOver
                    } else {
                        Seen::New
                    })
                }
                Some("seen") => Ok(seen(&answer, op, &args)),
                Some("late") if !clock_checked && sent.elapsed() < ANSWER_TIMEOUT => {
                    // Answered in time but called late: our idea of Redis's clock is off.
                    clock_checked = true;
                    self.redis
                        .link
                        .remeasure_clock()
                        .await
                        .map_err(StoreError)?;
                    continue;
                }
                Some("late") => Err(store_err(
                    "the request reached Redis after its deadline and was not applied",
                )),
                Some("foreign") => Err(store_err(format!(
                    "`{}` holds a {} that toolreg did not write; delete it or use another key",
                    redis_key(key),
                    answer.get(1).map_or("value", String::as_str)
                ))),
                _ => Err(store_err(format!("unexpected answer {answer:?}"))),
            };
        }
    }

    async fn finish_async(&self, key: &str, result: &Value) -> Result<(), StoreError> {
        let Some((owner, _)) = self.owned().remove(key) else {
            return Ok(()); // not reserved here (expired and pruned): nothing to keep
        };
        let result = result.to_string();
        let Err(e) = self
            .redis
            .finish(key, &owner, &result, ttl_ms(self.ttl))
            .await
        else {
            return Ok(());
        };
        let size = result.len();
        let kept = self.repair_bytes.fetch_add(size, Ordering::Relaxed) + size <= MAX_REPAIR_BYTES
            && self.queue(Repair::Finish {
                key: key.to_string(),
                owner: owner.clone(),
                result,
            });
        if kept {
            return Err(StoreError(format!(
                "{e}; toolreg keeps trying to store it while the key lives"
            )));
        }
        self.repair_bytes.fetch_sub(size, Ordering::Relaxed);
        self.queue(Repair::Void {
            key: key.to_string(),
            owner,
        });
        Err(e)
    }

    async fn abandon_async(&self, key: &str) -> Result<(), StoreError> {
        let Some((owner, _)) = self.owned().remove(key) else {
            return Ok(());
        };
        if let Err(e) = self
            .redis
            .release(key, &owner, ttl_ms(self.ttl), false)
            .await
        {
            self.queue(Repair::Void {
                key: key.to_string(),
                owner,
            });
            return Err(e);
        }
        Ok(())
    }
}

fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// What a `seen` answer of the begin script (`seen, op, args, done, result, age ms`) means for
/// a call of `op` with `args`.
fn seen(answer: &[String], op: &str, args: &str) -> Seen {
    let field = |i: usize| answer.get(i).map_or("", String::as_str);
    if field(1) != op || field(2) != args {
        return Seen::Mismatch {
            op: field(1).to_string(),
        };
    }
    if field(3) == "1" {
        return Seen::Replay(serde_json::from_str(field(4)).unwrap_or(Value::Null));
    }
    Seen::InFlight {
        running_for: field(5).parse().ok().map(Duration::from_millis),
    }
}

/// Retries what the store could not do when asked, in order, until Redis answers or the key's
/// ttl has passed (the marker is gone by then anyway).
async fn repair_loop(
    link: Arc<Redis>,
    mut queue: mpsc::Receiver<Repair>,
    bytes: Arc<AtomicUsize>,
    ttl: Duration,
    ttl_ms: u64,
) {
    let mut pending: VecDeque<(Repair, Instant)> = VecDeque::new();
    loop {
        if pending.is_empty() {
            match queue.recv().await {
                Some(r) => pending.push_back((r, Instant::now() + ttl)),
                None => return,
            }
        }
        while let Ok(r) = queue.try_recv() {
            pending.push_back((r, Instant::now() + ttl));
        }
        // Oldest first; the first failure ends the round (Redis is still away).
        while let Some((repair, until)) = pending.pop_front() {
            let done = match &repair {
                Repair::Void { key, owner } => link.release(key, owner, ttl_ms, true).await,
                Repair::Finish { key, owner, result } => {
                    link.finish(key, owner, result, ttl_ms).await
                }
            };
            if done.is_ok() || Instant::now() >= until {
                if let Repair::Finish { result, .. } = &repair {
                    bytes.fetch_sub(result.len(), Ordering::Relaxed);
                }
                continue;
            }
            pending.push_front((repair, until));
            break;
        }
        if !pending.is_empty() {
            tokio::time::sleep(REPAIR_EVERY).await;
        }
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
