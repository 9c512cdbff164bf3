//! Credentials in upstream URLs: found before they are written, hidden wherever a URL is shown.

/// Query parameter names (compared lowercase, `-` read as `_`) whose values are secrets. A name
/// that ends with one of those longer than four letters counts too (`x_api_key`, `githubtoken`);
/// short ones (`key`, `code`) count only alone, so `sort_key` is not a secret.
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
];

fn is_secret_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('-', "_");
    SECRET_PARAMS
        .iter()
        .any(|s| n == *s || (s.len() > 4 && n.ends_with(s)))
}

/// What in `url` is a credential: user info, or query parameters that look like keys. Empty
/// when none is (and when the text is no URL: the caller's other checks reject that).
pub fn url_credentials(url: &str) -> Vec<String> {
    let Ok(u) = url::Url::parse(url) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    if !u.username().is_empty() || u.password().is_some() {
        found.push("user info (`user:password@`)".to_string());
    }
    for (k, _) in u.query_pairs() {
        if is_secret_param(&k) {
            let shown = format!("the query parameter `{}`", crate::diag::escape_controls(&k));
            if !found.contains(&shown) {
                found.push(shown);
            }
        }
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
        return format!("{}{more}", crate::diag::escape_controls(&url[..cut]));
    };
    if !u.username().is_empty() || u.password().is_some() {
        let _ = u.set_username("REDACTED");
        let _ = u.set_password(None);
    }
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if is_secret_param(&k) {
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
    crate::diag::escape_controls(u.as_str())
}

/// `text` with every `http://` or `https://` URL in it redacted (error messages of HTTP
/// clients quote the URL they were given).
pub fn redact_urls_in(text: &str) -> String {
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
        out.push_str(&redact_url(&tail[..end]));
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
