//! Credentials in upstream URLs: found before they are written, hidden wherever a URL is shown.

/// Query parameter names (compared lowercase, `-` and `.` read as `_`) whose values are secrets.
/// A name that ends with one of those longer than four letters counts too (`x_api_key`,
/// `githubtoken`); short ones (`key`, `code`) count only alone, so `sort_key` is not a secret.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "apikey",
    "api_key",
    "token",
    "access_token",
    "auth",
    "authorization",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "pwd",
    "sig",
    "signature",
    "session",
    "sessionid",
    "credential",
    "credentials",
    "code",
    "jwt",
    "bearer",
];

/// Words that make a parameter a secret wherever they stand as a part of its name (`x_auth`,
/// `sig2`, `my-jwt`): digits after a part are ignored.
const SECRET_PARTS: &[&str] = &[
    "auth",
    "token",
    "jwt",
    "secret",
    "sig",
    "signature",
    "password",
    "passwd",
    "pwd",
    "apikey",
    "credential",
    "credentials",
    "bearer",
    "session",
    "sessionid",
];

fn is_secret_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace(['-', '.'], "_");
    SECRET_PARAMS
        .iter()
        .any(|s| n == *s || (s.len() > 4 && n.ends_with(s)))
        || n.split('_')
            .map(|p| p.trim_end_matches(|c: char| c.is_ascii_digit()))
            .any(|p| SECRET_PARTS.contains(&p))
}

/// Whether a value (a query value or a path segment) has the shape of a credential, whatever it
/// is called: a JWT (`eyJ...` in three dot-separated parts), a key with a known prefix
/// (`sk-`, `ghp_`, `xox?-`, ...), or 24 or more characters of a token alphabet mixing letters and
/// digits with no word-like run (what hosted MCP URLs put in their path). A UUID counts: it is
/// how many of those servers spell an account secret.
pub fn looks_like_secret(value: &str) -> bool {
    let v = value.trim();
    if v.starts_with("eyJ") && v.split('.').count() == 3 && v.len() > 20 {
        return true;
    }
    const PREFIXES: &[&str] = &[
        "sk-",
        "sk_",
        "pk_live",
        "rk_live",
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "glpat-",
        "AKIA",
        "AIza",
        "ya29.",
    ];
    if v.len() >= 16 && PREFIXES.iter().any(|p| v.starts_with(p)) {
        return true;
    }
    if v.len() < 24
        || !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.~+/=".contains(c))
    {
        return false;
    }
    let digits = v.chars().filter(char::is_ascii_digit).count();
    let letters = v.chars().filter(char::is_ascii_alphabetic).count();
    // A long run of letters only is a word or a slug (`my-long-project-name`), not a key.
    let longest_letters = v
        .split(|c: char| !c.is_ascii_alphabetic())
        .map(str::len)
        .max()
        .unwrap_or(0);
    digits >= 4 && letters >= 4 && longest_letters < 12
}

/// What in `url` is a credential: user info, query parameters that look like keys or whose
/// values look like credentials, and path segments shaped like credentials. Empty when none is
/// (and when the text is no URL: the caller's other checks reject that).
pub fn url_credentials(url: &str) -> Vec<String> {
    let Ok(u) = url::Url::parse(url) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    if !u.username().is_empty() || u.password().is_some() {
        found.push("user info (`user:password@`)".to_string());
    }
    for (k, v) in u.query_pairs() {
        if is_secret_param(&k) || looks_like_secret(&v) {
            let shown = format!(
                "the query parameter `{}`",
                crate::model::diag::escape_controls(&k)
            );
            if !found.contains(&shown) {
                found.push(shown);
            }
        }
    }
    if u.path_segments()
        .into_iter()
        .flatten()
        .any(looks_like_secret)
    {
        found.push("a path segment shaped like a key or token".to_string());
    }
    found
}

/// `url` with its user info and the values of secret-looking query parameters replaced by
/// `REDACTED`. Text that does not parse as a URL is cut to its scheme and host at most.
pub fn redact_url(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        // Not a URL we can take apart: show the part before any `@`, `?` or `#` only.
        let cut = url.find(['@', '?', '#']).unwrap_or(url.len());
        let more = if cut < url.len() { "…(redacted)" } else { "" };
        return format!("{}{more}", crate::model::diag::escape_controls(&url[..cut]));
    };
    if !u.username().is_empty() || u.password().is_some() {
        let _ = u.set_username("REDACTED");
        let _ = u.set_password(None);
    }
    let segments: Option<Vec<String>> = u.path_segments().map(|segs| {
        segs.map(|s| {
            if looks_like_secret(s) {
                "REDACTED".to_string()
            } else {
                s.to_string()
            }
        })
        .collect()
    });
    if let Some(segs) = segments {
        if let Ok(mut path) = u.path_segments_mut() {
            path.clear().extend(segs.iter().map(String::as_str));
        }
    }
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if is_secret_param(&k) || looks_like_secret(&v) {
                    "REDACTED".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.set_fragment(None);
    crate::model::diag::escape_controls(u.as_str())
}

/// `text` with every `http://` or `https://` URL in it replaced by "(the upstream's URL)": for
/// what a client reads, where not even a redacted URL belongs.
pub fn strip_urls_in(text: &str) -> String {
    replace_urls(text, |_| "(the upstream's URL)".to_string())
}

/// `text` with every `http://` or `https://` URL in it redacted (error messages of HTTP
/// clients quote the URL they were given).
pub fn redact_urls_in(text: &str) -> String {
    replace_urls(text, redact_url)
}

fn replace_urls(text: &str, with: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = ["http://", "https://"]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()
    {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | ')'))
            .unwrap_or(tail.len());
        out.push_str(&with(&tail[..end]));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_user_info_and_key_like_parameters() {
        assert!(url_credentials("https://host.example/mcp").is_empty());
        assert!(url_credentials("https://host.example/mcp?page=2&mode=fast").is_empty());
        let found = url_credentials("http://admin:PASS@host/mcp?api_key=k1&x-auth-token=t&q=1");
        assert_eq!(
            found,
            [
                "user info (`user:password@`)",
                "the query parameter `api_key`",
                "the query parameter `x-auth-token`"
            ]
        );
        assert_eq!(
            url_credentials("https://u@host/").len(),
            1,
            "a user alone is a credential"
        );
        assert_eq!(url_credentials("https://h/?GithubToken=x").len(), 1);
        assert!(url_credentials("https://h/?sort_key=name&barcode=1").is_empty());
    }

    #[test]
    fn hosted_mcp_url_shapes_are_credentials() {
        for url in [
            "https://h.example/mcp?jwt=abc",
            "https://h.example/mcp?x_auth=abc",
            "https://h.example/mcp?sig2=abc",
            "https://h.example/mcp?q=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "https://mcp.example.com/s/a8Fk29sLq0Zx7Yt4Vb3Nw1Pe/mcp",
            "https://mcp.example.com/u/123e4567-e89b-12d3-a456-426614174000/sse",
            "https://h.example/sk-live-0123456789abcdef/mcp",
        ] {
            assert!(!url_credentials(url).is_empty(), "{url}");
            let shown = redact_url(url);
            for secret in ["abc", "eyJhbGci", "a8Fk29", "123e4567", "sk-live"] {
                assert!(!shown.contains(secret), "{url} -> {shown}");
            }
        }
        for url in [
            "https://h.example/mcp",
            "https://api.example.com/v1/projects/my-long-project-name/mcp?page=2&sort_key=name",
            "https://h.example/mcp/2024-06-18/tools",
        ] {
            assert!(url_credentials(url).is_empty(), "{url}");
        }
    }

    #[test]
    fn redaction_keeps_the_address_and_hides_the_secrets() {
        let r = redact_url("http://admin:PASS@host:8080/mcp?api_key=SECRETKEY&page=2#frag");
        assert_eq!(r, "http://REDACTED@host:8080/mcp?api_key=REDACTED&page=2");
        assert!(!r.contains("PASS") && !r.contains("SECRETKEY"));
        assert_eq!(redact_url("https://h.example/mcp"), "https://h.example/mcp");
        let odd = redact_url("not a url user:pw@x?token=1");
        assert!(!odd.contains("pw@") && !odd.contains("token=1"), "{odd}");
    }

    #[test]
    fn urls_inside_messages_are_redacted() {
        let msg = "error sending request for url (http://u:SECRET@h/mcp?token=T0K): refused";
        let r = redact_urls_in(msg);
        assert_eq!(
            r,
            "error sending request for url (http://REDACTED@h/mcp?token=REDACTED): refused"
        );
        assert_eq!(redact_urls_in("no url here"), "no url here");
    }
}
