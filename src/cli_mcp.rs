//! The `import` and `serve` commands (feature `mcp`): argument parsing and exit codes only.

use std::path::PathBuf;
use std::process::ExitCode;
use toolreg::registry::Upstream;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ImportArgs {
    #[command(subcommand)]
    source: Option<ImportSource>,
    /// Re-list every upstream recorded in toolreg.toml and exit 1 when one differs from its snapshot
    #[arg(long)]
    check: bool,
    /// Folder with tool definition JSON files and toolreg.toml
    #[arg(long, short = 'd', value_name = "DIR", default_value = "definitions")]
    definitions: PathBuf,
}

#[derive(clap::Subcommand)]
enum ImportSource {
    /// An MCP server: over stdio `toolreg import mcp NAME -- CMD ARGS...`, or over streamable
    /// HTTP `toolreg import mcp NAME --url URL`
    Mcp {
        /// The upstream's name: the snapshot is DIR/NAME.mcp.json, the entry [upstreams.NAME]
        name: String,
        /// Folder with tool definition JSON files and toolreg.toml
        #[arg(long, short = 'd', value_name = "DIR", default_value = "definitions")]
        definitions: PathBuf,
        /// An environment variable the server needs (recorded by name, never by value); repeatable
        #[arg(long = "env", value_name = "NAME")]
        env: Vec<String>,
        /// Per-call time limit recorded for `toolreg serve`, in milliseconds
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
        /// The server's streamable HTTP endpoint (instead of a command), e.g. http://127.0.0.1:8080/mcp;
        /// never with a credential in it (use --bearer-env or --header-env)
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// With --url: the environment variable whose value is sent as `Authorization: Bearer`
        /// (recorded by name, never by value)
        #[arg(long, value_name = "VAR", requires = "url")]
        bearer_env: Option<String>,
        /// With --url: a header sent with the value of an environment variable, `HEADER=VAR`
        /// (e.g. `X-Api-Key=GW_KEY`); repeatable
        #[arg(long, value_name = "HEADER=VAR", requires = "url", value_parser = header_env)]
        header_env: Vec<(String, String)>,
        /// A folder offered to the server as an MCP root (`roots/list`), recorded as an absolute
        /// path; repeatable. Without it toolreg declares no roots and the server keeps its own
        /// configuration
        #[arg(long = "root", value_name = "DIR", value_parser = root_folder)]
        roots: Vec<String>,
        /// The command that starts the server, after `--`
        #[arg(last = true, required_unless_present = "url", value_name = "CMD")]
        command: Vec<String>,
    },
}

fn root_folder(s: &str) -> Result<String, String> {
    let path = std::fs::canonicalize(s).map_err(|e| format!("{s}: {e}"))?;
    if !path.is_dir() {
        return Err(format!("{s} is not a folder"));
    }
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{s}: the path is not UTF-8"))
}

fn header_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((h, v)) if !h.is_empty() && !v.is_empty() => Ok((h.to_string(), v.to_string())),
        _ => Err("expected HEADER=VAR, e.g. X-Api-Key=GW_KEY".into()),
    }
}

#[derive(clap::Args)]
pub struct ApproveArgs {
    /// Folder with toolreg.toml, whose [upstreams] are approved
    #[arg(long, short = 'd', value_name = "DIR", default_value = "definitions")]
    definitions: PathBuf,
    /// A folder `toolreg build` wrote: approve the upstreams of its registry.json instead
    #[arg(long, value_name = "DIR")]
    registry: Option<PathBuf>,
    /// Only this upstream (repeatable); all of them when not given
    #[arg(long = "upstream", value_name = "NAME")]
    upstreams: Vec<String>,
    /// Show each upstream, what it runs and whether it is approved; change nothing (exit 1
    /// when one is not approved)
    #[arg(long)]
    list: bool,
    /// Withdraw the approvals instead
    #[arg(long, conflicts_with = "list")]
    revoke: bool,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Folder `toolreg build` wrote (registry.json, help.json, surfaces/)
    #[arg(long, value_name = "DIR", default_value = "generated")]
    registry: PathBuf,
    /// What tools/list shows: gateway (help, exec, search), direct (one tool per op) or profile:NAME
    #[arg(long, default_value = "gateway")]
    surface: toolreg::serve::SurfaceChoice,
    /// Start every upstream now instead of on its first call
    #[arg(long)]
    eager: bool,
    /// Serve streamable HTTP at ADDR (e.g. 127.0.0.1:8080, endpoint /mcp) instead of stdio;
    /// port 0 picks a free port (the address is printed on stderr)
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// A Host header the HTTP server accepts besides loopback (DNS-rebinding guard); repeatable
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    allowed_hosts: Vec<String>,
    /// Admit callers by bearer token: a token file of `[[principal]]` entries (name, token
    /// hash, scopes), made with `toolreg token`
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_tokens: Option<PathBuf>,
    /// This server's public URL, e.g. https://tools.example/mcp: the audience its OAuth tokens
    /// must name and the resource of its metadata (default: http://ADDR/mcp)
    #[arg(long, value_name = "URL", requires = "http")]
    resource_url: Option<String>,
    /// Admit callers with JWT access tokens of this OAuth 2.1 / OpenID issuer (feature `oauth`;
    /// needs --resource-url)
    #[arg(long, value_name = "URL", requires = "resource_url")]
    oauth_issuer: Option<String>,
    /// The issuer's JWKS URL (default: from its discovery document)
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_jwks: Option<String>,
    /// Signing algorithms accepted, comma-separated (default: RS*, PS*, ES256, ES384, EdDSA)
    #[arg(
        long,
        value_name = "LIST",
        requires = "oauth_issuer",
        value_delimiter = ','
    )]
    oauth_algorithms: Vec<String>,
    /// Listen beyond loopback without authentication (a warning is printed at start)
    #[arg(long, requires = "http")]
    allow_unauthenticated: bool,
    /// Open connections at most; more are closed at once
    #[arg(long, value_name = "N", default_value_t = 4096, requires = "http")]
    max_connections: usize,
    /// Close a connection that sends nothing for this long, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 60_000, requires = "http")]
    idle_timeout_ms: u64,
    /// Requests one caller may have running at once
    #[arg(long, value_name = "N", default_value_t = 32, requires = "http")]
    max_concurrent: usize,
    /// Requests per second one caller may make (0: no limit)
    #[arg(long, value_name = "N", default_value_t = 0, requires = "http")]
    rate_limit: u32,
    /// Where replicas share the --rate-limit buckets: `redis://HOST:PORT[/DB]` (feature
    /// `redis`; default: the --idempotency Redis when there is one, else this replica)
    #[arg(long, value_name = "STORE", requires = "rate_limit")]
    limits: Option<String>,
    /// Write one JSON line per tools/call (who, op, upstream, outcome, latency, a digest of
    /// the arguments, never their values) to FILE, or to stderr with `-`
    #[arg(long, value_name = "FILE")]
    audit: Option<String>,
    /// What to do with a tool an upstream changed since the build (checked when it starts and
    /// when it announces a new tool list): `refuse` its calls (UPSTREAM_TOOL_CHANGED), or
    /// `warn` and forward them
    #[arg(long, value_name = "MODE", default_value = "refuse")]
    drift: toolreg::serve::drift::DriftMode,
    /// Serve Prometheus metrics at http://ADDR/metrics (a listener of its own)
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// Where idempotency keys live: `memory` (this process) or `redis://HOST:PORT[/DB]`, shared
    /// by replicas so a keyed write runs once across them (needs the `redis` feature)
    #[arg(long, value_name = "STORE", default_value = "memory")]
    idempotency: String,
    #[command(flatten)]
    ranking: crate::cli::Ranking,
}

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
    match (args.source, args.check) {
        (None, true) => rt.block_on(async {
            match toolreg::upstream::import::check(&args.definitions).await {
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
                match toolreg::upstream::import::import(&name, &definitions, &spec).await {
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
    };
    if let Err(e) = crate::cli::settle_folder(&args.registry) {
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
                auth,
                allow_unauthenticated: args.allow_unauthenticated,
                max_connections: args.max_connections,
                idle_timeout: std::time::Duration::from_millis(args.idle_timeout_ms.max(1)),
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
            let file = crate::cli::registry_file(dir);
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
            let ok = store.is_approved(n, u);
            missing += usize::from(!ok);
            println!(
                "{}  [upstreams.{}] runs `{}`",
                if ok { "approved    " } else { "NOT approved" },
                toolreg::diag::escape_controls(n),
                launch_line(u)
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
    for (n, u) in &chosen {
        eprintln!(
            "approve [upstreams.{}]: runs `{}`",
            toolreg::diag::escape_controls(n),
            launch_line(u)
        );
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

#[derive(clap::Args)]
pub struct TokenArgs {
    /// The principal's name (audit lines and limits use it)
    name: String,
    /// A scope the token carries (see [access] in toolreg.toml); repeatable
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
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
