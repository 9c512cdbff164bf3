//! The `import` and `serve` commands (feature `mcp`): argument parsing and exit codes only.

use super::args::{ApproveArgs, ImportArgs, ImportSource, ServeArgs, TokenArgs};
use std::process::ExitCode;
use toolreg::registry::Upstream;

const APPROVE_HELP: &str = "   = help: an upstream is code: read what it runs, then `toolreg approve` (-d DEFS or --registry DIR); in CI, approve only in jobs that never run a pull request's changes";

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::from(2)
        })
}

pub fn import(args: ImportArgs) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let quiet = args.quiet;
    match (args.source, args.check) {
        (None, true) => rt.block_on(async {
            let mut progress = super::progress::Progress::start(
                &format!("re-listing the upstreams of {}", args.definitions.display()),
                quiet,
            );
            let checked = toolreg::upstream::import::check(&args.definitions).await;
            progress.finish();
            match checked {
                Ok(drifts) => {
                    for d in &drifts {
                        print!("{d}");
                    }
                    if drifts.iter().all(|d| d.is_empty()) {
                        ExitCode::SUCCESS
                    } else {
                        eprintln!("   = help: re-run `toolreg import mcp NAME -- CMD...` to take the new tools, then rebuild");
                        ExitCode::from(1)
                    }
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    if matches!(e, toolreg::upstream::import::ImportError::Unapproved(_)) {
                        eprintln!("{APPROVE_HELP}");
                    }
                    ExitCode::from(2)
                }
            }
        }),
        (
            Some(ImportSource::Mcp {
                name,
                definitions,
                env,
                timeout_ms,
                url,
                bearer_env,
                header_env,
                roots,
                command,
            }),
            false,
        ) => {
            let mut parts = command.into_iter();
            let spec = Upstream {
                file: format!("{name}.mcp.json"),
                command: parts.next(),
                args: parts.collect(),
                env,
                url,
                timeout_ms,
                bearer_env,
                header_env: header_env.into_iter().collect(),
                roots,
            };
            rt.block_on(async {
                let mut progress =
                    super::progress::Progress::start(&format!("importing `{name}`"), quiet);
                let imported = toolreg::upstream::import::import(&name, &definitions, &spec).await;
                progress.finish();
                match imported {
                    Ok(done) => {
                        eprintln!(
                            "imported {} tools from `{name}` ({}) into {}; recorded [upstreams.{name}] in {}",
                            done.tools,
                            done.server,
                            done.file.display(),
                            done.overlay.display()
                        );
                        eprintln!(
                            "approved what it runs on this machine (in {}); other machines run it after `toolreg approve`",
                            done.approvals.display()
                        );
                        for t in &done.left_out {
                            eprintln!(
                                "error: tools/list of `{name}` at {}: the tool name `{}` {}; left out of the snapshot",
                                t.pointer, t.shown, t.why
                            );
                        }
                        if done.left_out.is_empty() {
                            ExitCode::SUCCESS
                        } else {
                            eprintln!("   = help: toolreg cannot serve a tool under such a name (it reaches files, terminals and models); ask the server's maintainers to rename it");
                            ExitCode::from(1)
                        }
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        if matches!(e, toolreg::upstream::import::ImportError::SecretInUrl { .. }) {
                            eprintln!("   = help: keep the secret in an environment variable and pass its name: `--bearer-env VAR` (sent as `Authorization: Bearer`) or `--header-env X-Api-Key=VAR`");
                        }
                        ExitCode::from(2)
                    }
                }
            })
        }
        _ => {
            eprintln!(
                "error: give either `mcp NAME -- CMD ARGS...`, `mcp NAME --url URL` or `--check`"
            );
            ExitCode::from(2)
        }
    }
}

pub fn serve(args: ServeArgs) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let store = match rt.block_on(toolreg::serve::idempotency_store(&args.idempotency)) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let audit = match args
        .audit
        .as_deref()
        .map(toolreg::serve::observe::AuditSink::open)
    {
        Some(Ok(sink)) => Some(std::sync::Arc::new(sink)),
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        None => None,
    };
    let observer = toolreg::serve::observe::Observer {
        metrics: std::sync::Arc::default(),
        audit,
    };
    if let Some(addr) = args.metrics {
        // The metrics listener has no authentication and names every op: loopback unless the
        // operator says otherwise, like `serve --http` without authentication.
        if !addr.ip().is_loopback() && !args.metrics_beyond_loopback {
            eprintln!("error: --metrics {addr} is reachable beyond this machine, and its answers name every op with no authentication: listen on loopback (127.0.0.1:PORT) behind your scraper, or pass --metrics-beyond-loopback");
            return ExitCode::from(2);
        }
        let metrics = std::sync::Arc::clone(&observer.metrics);
        match rt.block_on(toolreg::serve::observe::serve_metrics(addr, metrics)) {
            Ok(bound) => eprintln!("toolreg serve: metrics on http://{bound}/metrics"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let options = toolreg::serve::ServeOptions {
        store,
        #[cfg(feature = "semantic")]
        hybrid: args.ranking.choice(),
        approvals: None,
        observer,
        drift: args.drift,
        list_ttl_ms: args.list_ttl_ms,
    };
    if let Err(e) = super::shared::settle_folder(&args.registry) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let server = match toolreg::serve::Server::load_with(&args.registry, &args.surface, options) {
        Ok(s) => s,
        Err(e @ toolreg::serve::ServeError::Unapproved(_)) => {
            eprintln!("error: {e}");
            eprintln!("{APPROVE_HELP}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("   = help: run `toolreg build` first, or pass --registry DIR");
            return ExitCode::from(2);
        }
    };
    let served = match args.http {
        Some(addr) => {
            let auth = match rt.block_on(http_auth(&args, addr, &server)) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let shared_rate = match rt.block_on(shared_rate(&args)) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let options = toolreg::serve::HttpOptions {
                shared_rate,
                allowed_hosts: args.allowed_hosts,
                allowed_origins: args.allowed_origins,
                auth,
                allow_unauthenticated: args.allow_unauthenticated,
                max_connections: args.max_connections,
                idle_timeout: std::time::Duration::from_millis(args.idle_timeout_ms.max(1)),
                max_connections_per_peer: args.max_connections_per_peer,
                head_timeout: std::time::Duration::from_millis(args.head_timeout_ms.max(1)),
                max_concurrent: args.max_concurrent,
                rate_per_sec: args.rate_limit,
            };
            if let Err(e) = toolreg::serve::http::check_options(addr, &options) {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            rt.block_on(toolreg::serve::run_http(server, addr, args.eager, options))
        }
        None => rt.block_on(toolreg::serve::run_stdio(server, args.eager)),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `toolreg approve`: record (or list, or withdraw) this machine's approval of upstream commands.
pub fn approve(args: ApproveArgs) -> ExitCode {
    use toolreg::trust::{launch_line, Approvals};
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let all = match &args.registry {
        Some(dir) => {
            let file = super::shared::registry_file(dir);
            match toolreg::Registry::from_path(&file) {
                Ok(r) => r.upstreams,
                Err(e) => return fail(&e),
            }
        }
        None => match toolreg::upstream::import::recorded_upstreams(&args.definitions) {
            Ok(u) => u,
            Err(toolreg::upstream::import::ImportError::NoUpstreams { .. }) => Default::default(),
            Err(e) => return fail(&e),
        },
    };
    if let Some(missing) = args.upstreams.iter().find(|n| !all.contains_key(*n)) {
        return fail(&format!(
            "no upstream `{}` (upstreams: {})",
            toolreg::diag::escape_controls(missing),
            all.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let chosen: Vec<(&str, &Upstream)> = all
        .iter()
        .filter(|(n, _)| args.upstreams.is_empty() || args.upstreams.contains(n))
        .map(|(n, u)| (n.as_str(), u))
        .collect();
    let path = match Approvals::default_path() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    if chosen.is_empty() {
        eprintln!("no upstreams to approve");
        return ExitCode::SUCCESS;
    }
    if args.list {
        let store = match Approvals::load(&path) {
            Ok(s) => s,
            Err(e) => return fail(&e),
        };
        let mut missing = 0;
        for (n, u) in &chosen {
            let why = store.why_not(n, u);
            missing += usize::from(why.is_some());
            println!(
                "{}  [upstreams.{}] runs `{}`{}",
                if why.is_none() {
                    "approved    "
                } else {
                    "NOT approved"
                },
                toolreg::diag::escape_controls(n),
                launch_line(u),
                why.map(|w| format!(": {}", toolreg::diag::escape_controls(&w)))
                    .unwrap_or_default()
            );
        }
        eprintln!("approvals: {}", path.display());
        return if missing > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        };
    }
    if args.revoke {
        let names: Vec<&str> = chosen.iter().map(|(n, _)| *n).collect();
        return match Approvals::revoke(&path, &names) {
            Ok(n) => {
                eprintln!("withdrew {n} approval(s) in {}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        };
    }
    let here = std::env::current_dir().unwrap_or_default();
    for (n, u) in &chosen {
        eprintln!(
            "approve [upstreams.{}]: runs `{}`",
            toolreg::diag::escape_controls(n),
            launch_line(u)
        );
        if let Some(c) = &u.command {
            let p = toolreg::trust::provenance(c, &u.args, &here);
            eprintln!(
                "  in `{}`; command file `{}`{}",
                toolreg::diag::escape_controls(&p.place),
                toolreg::diag::escape_controls(p.command.as_deref().unwrap_or("(not found)")),
                p.package
                    .map(|pk| format!(
                        "; takes code from `{}` (pinned by digest)",
                        toolreg::diag::escape_controls(&pk)
                    ))
                    .unwrap_or_default()
            );
        }
    }
    match Approvals::approve(&path, &chosen) {
        Ok(added) => {
            eprintln!(
                "{added} new approval(s), {} already approved, in {}",
                chosen.len() - added,
                path.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// The authentication `serve --http` was asked for, set up (the issuer's keys fetched).
async fn http_auth(
    args: &ServeArgs,
    addr: std::net::SocketAddr,
    server: &toolreg::serve::Server,
) -> Result<Option<toolreg::serve::Auth>, String> {
    if args.auth_tokens.is_none() && args.oauth_issuer.is_none() {
        return Ok(None);
    }
    let tokens = match &args.auth_tokens {
        Some(f) => Some(toolreg::serve::auth::TokenFile::load(f).map_err(|e| e.to_string())?),
        None => None,
    };
    let resource = args
        .resource_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}{}", toolreg::serve::http::ENDPOINT));
    #[cfg(feature = "oauth")]
    let oauth = match &args.oauth_issuer {
        Some(issuer) => {
            let algorithms = args
                .oauth_algorithms
                .iter()
                .map(|a| {
                    a.trim()
                        .parse::<jsonwebtoken::Algorithm>()
                        .map_err(|_| format!("--oauth-algorithms: `{a}` is not a JWS algorithm"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Some(
                toolreg::serve::oauth::OAuth::new(
                    issuer,
                    &resource,
                    args.oauth_jwks.as_deref(),
                    algorithms,
                )
                .await
                .map_err(|e| format!("--oauth-issuer {issuer}: {e}"))?,
            )
        }
        None => None,
    };
    #[cfg(not(feature = "oauth"))]
    if args.oauth_issuer.is_some() {
        return Err(
            "--oauth-issuer needs the `oauth` feature: rebuild with --features oauth".into(),
        );
    }
    Ok(Some(toolreg::serve::Auth {
        tokens,
        #[cfg(feature = "oauth")]
        oauth,
        resource,
        scopes_supported: server.scopes_supported(),
    }))
}

/// `toolreg token NAME --scope S`: a new bearer token on stdout, once, and its token-file entry
/// (the hash, never the token) on stderr.
pub fn token(args: TokenArgs) -> ExitCode {
    match toolreg::serve::auth::new_token(&args.name, &args.scopes) {
        Ok((token, entry)) => {
            println!("{token}");
            eprintln!(
                "# add to the --auth-tokens file; the token above is shown only now:\n{entry}"
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The store replicas share rate buckets in: `--limits`, else the `--idempotency` Redis.
async fn shared_rate(
    args: &ServeArgs,
) -> Result<Option<std::sync::Arc<dyn toolreg::serve::http::SharedRate>>, String> {
    let url = match (&args.limits, &args.idempotency) {
        (Some(l), _) => l.clone(),
        (None, i) if args.rate_limit > 0 && i.starts_with("redis") => i.clone(),
        _ => return Ok(None),
    };
    if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
        return Err(format!(
            "--limits `{}`: use redis://HOST:PORT[/DB]",
            toolreg::trust::redact_url(&url)
        ));
    }
    #[cfg(feature = "redis")]
    {
        let store = toolreg::serve::RedisRate::connect(&url).await?;
        Ok(Some(std::sync::Arc::new(store)))
    }
    #[cfg(not(feature = "redis"))]
    Err("--limits redis://... needs the `redis` feature: rebuild with --features redis".into())
}
