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
        /// The server's streamable HTTP endpoint (instead of a command), e.g. http://127.0.0.1:8080/mcp
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// The command that starts the server, after `--`
        #[arg(last = true, required_unless_present = "url", value_name = "CMD")]
        command: Vec<String>,
    },
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
    /// Where idempotency keys live: `memory` (this process) or `redis://HOST:PORT[/DB]`, shared
    /// by replicas so a keyed write runs once across them (needs the `redis` feature)
    #[arg(long, value_name = "STORE", default_value = "memory")]
    idempotency: String,
    #[command(flatten)]
    ranking: crate::cli::Ranking,
}

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
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
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
    let options = toolreg::serve::ServeOptions {
        store,
        #[cfg(feature = "semantic")]
        hybrid: args.ranking.choice(),
    };
    let server = match toolreg::serve::Server::load_with(&args.registry, &args.surface, options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("   = help: run `toolreg build` first, or pass --registry DIR");
            return ExitCode::from(2);
        }
    };
    let served = match args.http {
        Some(addr) => rt.block_on(toolreg::serve::run_http(
            server,
            addr,
            args.eager,
            args.allowed_hosts,
        )),
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
