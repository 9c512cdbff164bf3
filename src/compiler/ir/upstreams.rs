//! The `[upstreams]` an imported catalog's ops forward to: each spec checked (names, URLs,
//! environment and header names, credentials kept out of URLs) and tied to its ops.

use crate::compiler::overlay::LoadedOverlay;
use crate::model::diag::{Code, Diagnostic, Diagnostics};
use crate::model::registry::OpRecord;
use std::collections::BTreeMap;

/// `[upstreams.NAME]` -> the registry's upstreams. NAME is a safe name, exactly one of `command`
/// and `url` is given, and `NAME.mcp.json` defines at least one tool.
pub(super) fn upstreams(
    ops: &BTreeMap<String, OpRecord>,
    lo: &LoadedOverlay,
    diags: &mut Diagnostics,
) -> BTreeMap<String, crate::model::registry::Upstream> {
    let mut out = BTreeMap::new();
    for (name, spec) in &lo.overlay.upstreams {
        let loc = lo.loc(name.span());
        let name = name.get_ref();
        let file = format!("{name}.mcp.json");
        let shown = name.escape_debug();
        let problem = upstream_problem(name, spec).or_else(|| {
            (!ops.values().any(|r| r.source.file == file))
                .then(|| format!("has no tools: no definitions file `{file}` defines any"))
        });
        if let Some(p) = problem {
            diags.push(
                Diagnostic::new(Code::UpstreamInvalid, format!("[upstreams.{shown}] {p}"))
                    .at(loc)
                    .help("`toolreg import mcp NAME -- CMD ARGS...` writes both the snapshot and this entry"),
            );
            continue;
        }
        let secrets = spec
            .url
            .as_deref()
            .map(crate::trust::url_credentials)
            .unwrap_or_default();
        if !secrets.is_empty() {
            // The URL itself is never quoted: it holds the secret.
            diags.push(
                Diagnostic::new(
                    Code::UpstreamSecret,
                    format!(
                        "[upstreams.{shown}] `url` carries a credential ({}): it would be written into registry.json and shown in answers",
                        secrets.join(", ")
                    ),
                )
                .at(loc)
                .help("take it out of the URL, keep the secret in an environment variable and name it: `bearer_env = \"VAR\"` (sent as `Authorization: Bearer`) or `header_env = { \"X-Api-Key\" = \"VAR\" }`; rotate the credential, it was committed"),
            );
            continue;
        }
        out.insert(name.clone(), spec.to_upstream(name));
    }
    out
}

/// What makes an `[upstreams.NAME]` entry unusable on its own (its snapshot aside): TR080's
/// message, or `None` when it could run. The approval lint skips the entries this refuses.
/// An MCP root as the overlay may give it: an absolute path without control characters.
fn root_valid(root: &str) -> bool {
    std::path::Path::new(root).is_absolute() && !root.chars().any(char::is_control)
}

pub(crate) fn upstream_problem(
    name: &str,
    spec: &crate::compiler::overlay::UpstreamSpec,
) -> Option<String> {
    if !crate::compiler::enrich::provider_valid(name) {
        Some("is not one safe name (letters, digits, `_`, `-`; at most 64)".to_string())
    } else if spec.command.is_some() == spec.url.is_some() {
        Some("needs exactly one of `command` (stdio) and `url` (streamable HTTP)".to_string())
    } else if spec.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
        Some("has an empty `command`".to_string())
    } else if spec
        .url
        .as_deref()
        .is_some_and(|u| !(u.starts_with("http://") || u.starts_with("https://")))
    {
        Some("has a `url` that is not http:// or https://".to_string())
    } else if spec.timeout_ms == Some(0) {
        Some("has `timeout_ms = 0`".to_string())
    } else if let Some(bad) = spec.roots.iter().find(|r| !root_valid(r)) {
        Some(format!(
            "lists the root `{}`, which is not an absolute folder path (roots are offered to the server as file:// URIs)",
            crate::model::diag::escape_controls(bad)
        ))
    } else if spec.command.is_some() && (spec.bearer_env.is_some() || !spec.header_env.is_empty()) {
        Some("sets `bearer_env` or `header_env`, which only a `url` upstream sends (a command gets its secrets through `env`)".to_string())
    } else if let Some(bad) = spec
        .env
        .iter()
        .chain(&spec.bearer_env)
        .chain(spec.header_env.values())
        .find(|v| !env_name_valid(v))
    {
        Some(format!(
            "names the environment variable `{}`, which is not a variable name (letters, digits, `_`; not starting with a digit)",
            crate::model::diag::escape_controls(bad)
        ))
    } else {
        spec.header_env
            .keys()
            .find(|h| !header_name_valid(h))
            .map(|bad| {
                format!(
                    "names the header `{}` in `header_env`, which is not an HTTP header name",
                    crate::model::diag::escape_controls(bad)
                )
            })
    }
}

/// A POSIX environment variable name.
pub(crate) fn env_name_valid(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An HTTP header name (RFC 9110 token), at most 128 characters.
fn header_name_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}
