//! JWT access tokens from an OAuth 2.1 / OpenID issuer (feature `oauth`): the issuer's keys are
//! found by discovery (or `--oauth-jwks`), cached, and fetched again when a token names a key
//! the cache lacks (at most every 30 s) or the cache is 10 minutes old, so key rotation needs no
//! restart. Signature, `iss`, `aud`, `exp` and `nbf` are checked by `jsonwebtoken`; only the
//! listed algorithms are accepted (never `none`, never HMAC with a public key), and only access
//! token types (`typ` absent, `JWT` or `at+jwt`).
//!
//! The key fetch is hostile-input safe: one fetch in flight per issuer (concurrent requests
//! naming unknown keys wait for it and share its answer), every document read in a stream with
//! a 1 MiB cap (never whole first), no redirects, and https only off loopback.

use super::Principal;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tokio::sync::RwLock;

const REFRESH_AFTER: Duration = Duration::from_secs(600);
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(30);
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest JWKS or discovery document read.
const MAX_DOC_BYTES: usize = 1 << 20;
/// Leeway for `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 30;

/// The algorithms accepted when none are configured: asymmetric only.
pub const DEFAULT_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

pub struct OAuth {
    issuer: String,
    audience: String,
    jwks_uri: String,
    algorithms: Vec<Algorithm>,
    http: reqwest::Client,
    keys: RwLock<KeyCache>,
    /// Held while the keys are fetched: one fetch in flight, whoever else needs keys waits.
    fetching: tokio::sync::Mutex<()>,
    /// How soon after a fetch an unknown key may cause another.
    refetch: Duration,
}

/// Whether `url` may be fetched for keys: https, or http to a loopback host (a test issuer).
fn fetchable(url: &str) -> Result<(), String> {
    let u = url::Url::parse(url)
        .map_err(|e| format!("`{}` is not a URL: {e}", crate::trust::redact_url(url)))?;
    let loopback = match u.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    };
    match u.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "`{}` is not https (plain http is accepted only on loopback): keys fetched over it could be forged",
            crate::trust::redact_url(url)
        )),
    }
}

/// The issuer's keys and when to fetch them again.
struct KeyCache {
    set: JwkSet,
    /// After this the set is fetched again before use.
    stale_at: Instant,
    /// No fetch before this (an unknown `kid`, or a failed fetch, waits for it).
    next_fetch: Instant,
}

impl KeyCache {
    fn fetched(set: JwkSet, refetch: Duration) -> KeyCache {
        let now = Instant::now();
        KeyCache {
            set,
            stale_at: now + REFRESH_AFTER,
            next_fetch: now + refetch,
        }
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    client_id: Option<String>,
    /// Space-separated (RFC 8693 / 9068).
    scope: Option<String>,
    /// An array, as some issuers write it.
    scp: Option<Vec<String>>,
}

async fn fetch_json(http: &reqwest::Client, url: &str) -> Result<serde_json::Value, String> {
    let shown = crate::trust::redact_url(url);
    let r = http
        .get(url)
        .timeout(FETCH_TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            format!(
                "cannot fetch {shown}: {}",
                crate::trust::redact_urls_in(&e.to_string())
            )
        })?;
    if !r.status().is_success() {
        // A redirect is an answer here too: the client follows none.
        return Err(format!("{shown} answered {}", r.status()));
    }
    let too_big = || format!("{shown} sent more than {MAX_DOC_BYTES} bytes");
    if r.content_length().is_some_and(|n| n > MAX_DOC_BYTES as u64) {
        return Err(too_big());
    }
    // Read in chunks and stop at the cap: a body that never ends costs 1 MiB, not all of it.
    let mut r = r;
    let mut bytes: Vec<u8> = Vec::new();
    while let Some(chunk) = r
        .chunk()
        .await
        .map_err(|e| format!("cannot read {shown}: {e}"))?
    {
        if bytes.len() + chunk.len() > MAX_DOC_BYTES {
            return Err(too_big());
        }
        bytes.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{shown} is not JSON: {e}"))
}

impl OAuth {
    /// Sets up validation for tokens of `issuer` meant for `audience` (this server's resource
    /// URL). Fetches the keys now, so a wrong issuer fails the start, not the first call.
    pub async fn new(
        issuer: &str,
        audience: &str,
        jwks_uri: Option<&str>,
        algorithms: Vec<Algorithm>,
    ) -> Result<OAuth, String> {
        if let Some(bad) = algorithms
            .iter()
            .find(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
        {
            return Err(format!(
                "{bad:?} is a shared-secret algorithm; a resource server verifies with the issuer's public keys"
            ));
        }
        fetchable(issuer)?;
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let jwks_uri = match jwks_uri {
            Some(u) => u.to_string(),
            None => {
                let base = issuer.trim_end_matches('/');
                // OpenID discovery first; the OAuth metadata (RFC 8414) only when it fails.
                let doc =
                    match fetch_json(&http, &format!("{base}/.well-known/openid-configuration"))
                        .await
                    {
                        Ok(doc) => doc,
                        Err(_) => {
                            fetch_json(
                                &http,
                                &format!("{base}/.well-known/oauth-authorization-server"),
                            )
                            .await?
                        }
                    };
                if doc.get("issuer").and_then(|v| v.as_str()) != Some(issuer) {
                    return Err(format!(
                        "the discovery document names the issuer {:?}, not {issuer:?}",
                        doc.get("issuer")
                    ));
                }
                doc.get("jwks_uri")
                    .and_then(|v| v.as_str())
                    .ok_or("the discovery document has no `jwks_uri`")?
                    .to_string()
            }
        };
        fetchable(&jwks_uri)?;
        let keys = Self::fetch_keys(&http, &jwks_uri).await?;
        Ok(OAuth {
            issuer: issuer.to_string(),
            audience: audience.to_string(),
            jwks_uri,
            algorithms: if algorithms.is_empty() {
                DEFAULT_ALGORITHMS.to_vec()
            } else {
                algorithms
            },
            http,
            keys: RwLock::new(KeyCache::fetched(keys, REFETCH_AT_MOST_EVERY)),
            fetching: tokio::sync::Mutex::new(()),
            refetch: REFETCH_AT_MOST_EVERY,
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// How soon after a fetch a token naming an unknown key may cause another (30 s by
    /// default); counted from now.
    pub async fn set_refetch_interval(&mut self, every: Duration) {
        self.refetch = every;
        self.keys.write().await.next_fetch = Instant::now() + every;
    }

    async fn fetch_keys(http: &reqwest::Client, uri: &str) -> Result<JwkSet, String> {
        let doc = fetch_json(http, uri).await?;
        serde_json::from_value(doc).map_err(|e| format!("the JWKS does not parse: {e}"))
    }

    /// The key for `kid`, fetching the set again when it is unknown or the cache is old (at
    /// most every `REFETCH_AT_MOST_EVERY`, so tokens naming random keys cannot hammer the
    /// issuer).
    async fn key(&self, kid: Option<&str>) -> Result<jsonwebtoken::jwk::Jwk, String> {
        let pick = |set: &JwkSet| match kid {
            Some(k) => set.find(k).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let unknown = || "the token's signing key is unknown".to_string();
        {
            let cache = self.keys.read().await;
            let now = Instant::now();
            let found = pick(&cache.set);
            if found.is_some() && now < cache.stale_at {
                return found.ok_or_else(unknown);
            }
            if now < cache.next_fetch {
                return found.ok_or_else(unknown);
            }
        }
        // One fetch in flight: whoever waited here finds the answer of the fetch before it
        // (a fetch, failed or not, moves `next_fetch` on) and does not fetch again.
        let _one = self.fetching.lock().await;
        {
            let cache = self.keys.read().await;
            if Instant::now() < cache.next_fetch {
                return pick(&cache.set).ok_or_else(unknown);
            }
        }
        let fresh = Self::fetch_keys(&self.http, &self.jwks_uri).await;
        let mut cache = self.keys.write().await;
        match fresh {
            Ok(set) => *cache = KeyCache::fetched(set, self.refetch),
            // Keep the old keys, and do not try again before the wait is over.
            Err(_) => cache.next_fetch = Instant::now() + self.refetch,
        }
        pick(&cache.set).ok_or_else(unknown)
    }

    /// The principal of a valid access token; why not otherwise (said to the client, so it
    /// names what failed, never the token).
    pub async fn verify(&self, token: &str) -> Result<Principal, String> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| format!("not a signed JWT ({e})"))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(format!("the algorithm {:?} is not accepted", header.alg));
        }
        // An access token (RFC 9068 `at+jwt`, or the generic `JWT`), not an ID token, a
        // logout token or a DPoP proof signed by the same issuer.
        if let Some(typ) = header.typ.as_deref() {
            let t = typ.to_ascii_lowercase();
            if !matches!(t.as_str(), "jwt" | "at+jwt" | "application/at+jwt") {
                return Err(format!(
                    "the token type `{}` is not an access token",
                    crate::model::diag::escape_controls(crate::model::text::clip_chars(typ, 40))
                ));
            }
        }
        let jwk = self.key(header.kid.as_deref()).await?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unusable signing key: {e}"))?;
        // The header's algorithm, already checked against the allow-list (jsonwebtoken wants
        // the validation's algorithms to be of the key's family).
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.issuer]);
        v.set_audience(&[&self.audience]);
        v.leeway = LEEWAY_SECS;
        v.validate_nbf = true;
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key, &v).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::ExpiredSignature => "the token has expired".to_string(),
                K::ImmatureSignature => "the token is not valid yet (nbf)".to_string(),
                K::InvalidAudience => "the token is not meant for this server (aud)".to_string(),
                K::InvalidIssuer => "the token is from another issuer (iss)".to_string(),
                K::InvalidSignature => "the signature does not verify".to_string(),
                K::MissingRequiredClaim(c) => format!("the token lacks the claim `{c}`"),
                other => format!("the token is not valid ({other:?})"),
            }
        })?;
        let c = data.claims;
        let mut scopes: BTreeSet<String> = c
            .scope
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        scopes.extend(c.scp.unwrap_or_default());
        // Every principal has its own name (idempotency keys, limits and the audit log go by
        // it): a token naming neither subject nor client is refused, never pooled under one
        // shared name; the name is kept short and printable.
        let name = c
            .sub
            .or(c.client_id)
            .filter(|n| !n.trim().is_empty())
            .ok_or("the token names no subject (`sub`) or client (`client_id`)")?;
        let name = crate::model::diag::escape_controls(crate::model::text::clip_chars(&name, 200));
        Ok(Principal { name, scopes })
    }
}
