//! Rate limits shared by replicas (`serve --limits redis://...`, or the `--idempotency` Redis):
//! one token bucket per caller in Redis, refilled and taken in one Lua script on Redis's own
//! clock, so the replicas of a deployment allow a caller `--rate-limit` requests per second
//! together, not each.

use super::limits::{RateFuture, SharedRate};
use super::redis_link::Link;
use std::time::Duration;

const PREFIX: &str = "toolreg:rate:";
const ANSWER_TIMEOUT: Duration = Duration::from_millis(500);

/// KEYS[1] the caller's bucket; ARGV[1] the rate (tokens per second, also the burst).
/// Returns 1 when a token was taken.
const TAKE: &str = r#"
local rate = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 't', 'v')
local last = tonumber(b[1]) or now
local tokens = tonumber(b[2]) or rate
tokens = math.min(rate, tokens + (now - last) * rate / 1000)
local ok = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
end
redis.call('HSET', KEYS[1], 't', now, 'v', tostring(tokens))
redis.call('PEXPIRE', KEYS[1], 2000)
return ok
"#;

pub struct RedisRate {
    link: Link,
    take: redis::Script,
}

impl RedisRate {
    pub async fn connect(url: &str) -> Result<RedisRate, String> {
        Ok(RedisRate {
            link: Link::connect(url, ANSWER_TIMEOUT).await?,
            take: redis::Script::new(TAKE),
        })
    }
}

impl SharedRate for RedisRate {
    fn take<'a>(&'a self, who: &'a str, rate: u32) -> RateFuture<'a> {
        Box::pin(async move {
            // Callers' names can be long: the key holds a digest of them.
            let key = format!("{PREFIX}{}", blake3::hash(who.as_bytes()).to_hex());
            let taken: i64 = self.link.invoke(self.take.key(key).arg(rate)).await?;
            Ok(taken == 1)
        })
    }
}
