//! Who is calling `toolreg serve --http`: bearer tokens checked before any MCP message is read.
//!
//! Two ways, usable together:
//! - a token file for small teams (`--auth-tokens FILE`): one entry per principal with the
//!   blake3 hash of its token (never the token), its name and scopes. Tokens are 256 random
//!   bits (`toolreg token NAME`), so a fast hash is enough; hashes compare in constant time.
//! - an OAuth 2.1 resource server (feature `oauth`, `--oauth-issuer`): JWT access tokens signed
//!   by the issuer's keys (JWKS, fetched and cached), with `iss`, `aud` = this server's resource
//!   URL, `exp`/`nbf` (30 s leeway) and an algorithm allow-list checked by `jsonwebtoken`.
//!
//! A request without a valid token is answered 401 with the `WWW-Authenticate` header of RFC
//! 6750 naming the Protected Resource Metadata (RFC 9728) served at
//! `/.well-known/oauth-protected-resource`. The client's token is removed from the request
//! before the MCP service sees it, so nothing downstream can forward it. Tokens are never logged.

#[cfg(feature = "oauth")]
pub mod oauth;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// Who made a request, and the scopes its token carries. Put in the request's extensions by
/// [`authenticate`]; the server reads it to choose what the caller may see and do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub scopes: BTreeSet<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("token file `{path}`: {message}")]
    TokenFile { path: String, message: String },
    #[error("OAuth: {0}")]
    OAuth(String),
}

/// The prefix of tokens `toolreg token` makes (so a leaked one is recognisable in a scan).
pub const TOKEN_PREFIX: &str = "trk_";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFileDoc {
    #[serde(default)]
    principal: Vec<TokenEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    name: String,
    /// `b3:` and the 64 hex digits of blake3 over the token.
    token_b3: String,
    #[serde(default)]
    scopes: Vec<String>,
}

/// The principals of a token file.
#[derive(Debug)]
pub struct TokenFile {
    entries: Vec<(blake3::Hash, Principal)>,
}

impl TokenFile {
    pub fn load(path: &Path) -> Result<TokenFile, AuthError> {
        let err = |message: String| AuthError::TokenFile {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let doc: TokenFileDoc = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
        if doc.principal.is_empty() {
            return Err(err(
                "has no [[principal]] entries; `toolreg token NAME --scope S` makes one".into(),
            ));
        }
        let mut entries = Vec::new();
        let mut names = BTreeSet::new();
        for e in doc.principal {
            let hash = e
                .token_b3
                .strip_prefix("b3:")
                .and_then(|h| blake3::Hash::from_hex(h).ok())
                .ok_or_else(|| {
                    err(format!(
                        "principal `{}`: `token_b3` is not `b3:` and 64 hex digits (store the hash `toolreg token` prints, never the token)",
                        crate::model::diag::escape_controls(&e.name)
                    ))
                })?;
            if !names.insert(e.name.clone()) {
                return Err(err(format!(
                    "the principal `{}` is listed twice",
                    crate::model::diag::escape_controls(&e.name)
                )));
            }
            entries.push((
                hash,
                Principal {
                    name: e.name,
                    scopes: e.scopes.into_iter().collect(),
                },
            ));
        }
        Ok(TokenFile { entries })
    }

    /// The principal whose token this is. Every entry is compared (blake3's `Hash` equality is
    /// constant-time), so the time taken says nothing about which entry nearly matched.
    pub fn verify(&self, token: &str) -> Option<Principal> {
        let presented = blake3::hash(token.as_bytes());
        let mut found = None;
        for (hash, principal) in &self.entries {
            if *hash == presented && found.is_none() {
                found = Some(principal.clone());
            }
        }
        found
    }
}

/// A new random token and the token-file entry that admits it.
pub fn new_token(name: &str, scopes: &[String]) -> Result<(String, String), String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness from the OS: {e}"))?;
    let token = format!(
        "{TOKEN_PREFIX}{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let scopes = scopes
        .iter()
        .map(|s| serde_json::to_string(s).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(", ");
    let entry = format!(
        "[[principal]]\nname = {}\ntoken_b3 = \"b3:{}\"\nscopes = [{scopes}]\n",
        serde_json::to_string(name).unwrap_or_default(),
        blake3::hash(token.as_bytes()).to_hex()
    );
    Ok((token, entry))
}

/// How `serve --http` authenticates, and what its metadata document says.
pub struct Auth {
    pub tokens: Option<TokenFile>,
    #[cfg(feature = "oauth")]
    pub oauth: Option<oauth::OAuth>,
    /// This server's resource URL (the `aud` its tokens must carry), e.g.
    /// `https://tools.example/mcp`.
    pub resource: String,
    /// Every scope `[access]` knows, for the metadata and 403 answers.
    pub scopes_supported: Vec<String>,
}

impl Auth {
    /// The URL of the Protected Resource Metadata for [`Auth::resource`] (RFC 9728 section 3:
    /// the well-known path inserted between the origin and the resource's path).
    pub fn metadata_url(&self) -> String {
        match url::Url::parse(&self.resource) {
            Ok(u) => {
                let path = u.path().trim_end_matches('/');
                format!(
                    "{}{}{}",
                    u.origin().ascii_serialization(),
                    METADATA_PATH,
                    path
                )
            }
            Err(_) => METADATA_PATH.to_string(),
        }
    }

    /// The metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
            "resource_name": "toolreg serve",
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        }
        #[cfg(feature = "oauth")]
        if let Some(o) = &self.oauth {
            doc["authorization_servers"] = json!([o.issuer()]);
        }
        doc
    }

    async fn principal(&self, token: &str) -> Result<Principal, String> {
        if let Some(p) = self.tokens.as_ref().and_then(|t| t.verify(token)) {
            return Ok(p);
        }
        #[cfg(feature = "oauth")]
        if let Some(o) = &self.oauth {
            return o.verify(token).await;
        }
        Err("the token is not valid".into())
    }

    fn challenge(&self, status: StatusCode, error: Option<(&str, &str)>) -> Response {
        let mut value = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        if let Some((code, description)) = error {
            // Quoted-string safe: no quotes, backslashes or control characters.
            let description: String = description
                .chars()
                .filter(|c| !c.is_control() && *c != '"' && *c != '\\')
                .take(200)
                .collect();
            value.push_str(&format!(
                ", error=\"{code}\", error_description=\"{description}\""
            ));
            if code == "insufficient_scope" && !self.scopes_supported.is_empty() {
                value.push_str(&format!(", scope=\"{}\"", self.scopes_supported.join(" ")));
            }
        }
        let mut r = (
            status,
            axum::Json(json!({"error": error.map_or("unauthorized", |e| e.0)})),
        )
            .into_response();
        if let Ok(v) = HeaderValue::from_str(&value) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }
}

/// The well-known path of the Protected Resource Metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The middleware in front of `/mcp`: no valid token, no MCP. `granted` says whether a
/// principal may do anything at all under `[access]` (403 when not).
pub async fn authenticate(
    axum::extract::State(state): axum::extract::State<Arc<(Auth, super::Server)>>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (auth, server) = (&state.0, &state.1);
    // Two credentials in one request: which one counts would be a proxy's guess, so neither.
    if req.headers().get_all(header::AUTHORIZATION).iter().count() > 1 {
        return auth.challenge(
            StatusCode::UNAUTHORIZED,
            Some(("invalid_request", "more than one Authorization header")),
        );
    }
    let Some(token) = bearer(req.headers()).map(str::to_owned) else {
        return auth.challenge(StatusCode::UNAUTHORIZED, None);
    };
    let principal = match auth.principal(&token).await {
        Ok(p) => p,
        Err(why) => {
            return auth.challenge(StatusCode::UNAUTHORIZED, Some(("invalid_token", &why)));
        }
    };
    if !server.grants_anything(&principal) {
        return auth.challenge(
            StatusCode::FORBIDDEN,
            Some((
                "insufficient_scope",
                "no scope of this token grants any op of this server",
            )),
        );
    }
    // The token stops here: nothing behind this point can forward it.
    req.headers_mut().remove(header::AUTHORIZATION);
    req.extensions_mut().insert(principal);
    // This connection has authenticated: it may hold a kept place from now on.
    if let Some(peer) = req
        .extensions()
        .get::<axum::extract::ConnectInfo<super::listener::Peer>>()
    {
        peer.0.proven();
    }
    next.run(req).await
}

/// `GET /.well-known/oauth-protected-resource[/path]`.
pub async fn metadata(
    axum::extract::State(state): axum::extract::State<Arc<(Auth, super::Server)>>,
) -> Response {
    axum::Json(state.0.metadata()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_admit_their_tokens_only() {
        let (token, entry) = new_token("ci-bot", &["tools:read".into()]).unwrap();
        let (other, other_entry) = new_token("admin", &["tools:write".into()]).unwrap();
        assert!(token.starts_with(TOKEN_PREFIX) && token.len() == 4 + 64);
        assert!(
            !entry.contains(&token),
            "the file holds the hash, never the token"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        std::fs::write(&path, format!("{entry}\n{other_entry}")).unwrap();
        let file = TokenFile::load(&path).unwrap();
        let p = file.verify(&token).unwrap();
        assert_eq!(p.name, "ci-bot");
        assert_eq!(p.scopes, BTreeSet::from(["tools:read".to_string()]));
        assert_eq!(file.verify(&other).unwrap().name, "admin");
        assert!(file.verify("trk_00").is_none());
        assert!(file.verify(&token[..token.len() - 1]).is_none());
        std::fs::write(&path, format!("{entry}\n{entry}")).unwrap();
        assert!(TokenFile::load(&path)
            .unwrap_err()
            .to_string()
            .contains("twice"));
        std::fs::write(&path, entry.replace("b3:", "")).unwrap();
        assert!(TokenFile::load(&path)
            .unwrap_err()
            .to_string()
            .contains("b3:"));
    }

    #[test]
    fn the_metadata_url_follows_rfc_9728() {
        let auth = Auth {
            tokens: None,
            #[cfg(feature = "oauth")]
            oauth: None,
            resource: "https://tools.example/mcp".into(),
            scopes_supported: vec!["tools:read".into()],
        };
        assert_eq!(
            auth.metadata_url(),
            "https://tools.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(auth.metadata()["resource"], "https://tools.example/mcp");
    }
}
