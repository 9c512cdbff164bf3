//! Every flag of every command, in one place (clap derive types), and what the few that
//! load something mean: the registry folder a query command reads, and how search ranks.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use toolreg::emit::Emitter;

#[derive(Parser)]
#[command(name = "toolreg", version = super::version(), disable_help_subcommand = true, about = "Compile LLM tool catalogs into a hashed registry and the surfaces models, programs and people need", long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

/// `lint` also writes SARIF.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum LintFormat {
    Text,
    Json,
    /// SARIF 2.1.0 on stdout, for code-scanning UIs
    Sarif,
}

#[derive(clap::Args)]
pub(crate) struct Definitions {
    /// Folder with tool definition JSON files and toolreg.toml
    #[arg(long, short = 'd', value_name = "DIR", default_value = "definitions")]
    pub(crate) definitions: PathBuf,
    /// List every note (e.g. each inferred op) and every repeated warning, instead of a summary
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,
    /// No progress line (shown at a terminal only, once a step takes over a second)
    #[arg(long, short = 'q')]
    pub(crate) quiet: bool,
}

#[derive(clap::Args)]
pub(crate) struct Out {
    /// Output folder (toolreg owns it: stale files in it are removed)
    #[arg(long, short = 'o', value_name = "DIR", default_value = "generated")]
    pub(crate) out: PathBuf,
    /// Artifacts to write, comma-separated: registry, help, surfaces, report, rust, ts, docs, search (default: all of these); also zod, python, codemode, and with the `semantic` feature vectors
    #[arg(long, value_delimiter = ',', value_parser = parse_emitter, value_name = "LIST")]
    pub(crate) emit: Vec<Emitter>,
    /// Fail when an emitter cannot do its whole job (e.g. an op typify cannot type), and let
    /// errors in third-party tools stop the build instead of quarantining those tools
    #[arg(long)]
    pub(crate) strict: bool,
    /// Folder of handlebars templates replacing the built-in docs templates, file by file
    #[arg(long, value_name = "DIR")]
    pub(crate) templates: Option<PathBuf>,
    /// A BERT sentence-transformer folder to embed ops with for `vectors` (default: the bundled
    /// model); search must then be given the same folder
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "DIR")]
    pub(crate) model: Option<PathBuf>,
}

impl Out {
    pub(crate) fn settings(&self) -> toolreg::emit::Settings {
        toolreg::emit::Settings {
            templates: self.templates.clone(),
            memo: None,
            // The vectors already built are the embedding cache: only changed ops are embedded.
            #[cfg(feature = "semantic")]
            previous_vectors: std::fs::read_to_string(self.out.join(toolreg::semantic::FILE)).ok(),
            #[cfg(feature = "semantic")]
            model: self.model.clone(),
        }
    }

    /// `--model` only serves the `vectors` emitter: say so instead of ignoring it.
    pub(crate) fn warn_unused_model(&self) {
        #[cfg(feature = "semantic")]
        if self.model.is_some() && !self.emitters().contains(&Emitter::Vectors) {
            eprintln!("warning: --model is used by the `vectors` emitter only; add it to --emit");
        }
    }

    pub(crate) fn emitters(&self) -> Vec<Emitter> {
        if self.emit.is_empty() {
            Emitter::ALL.to_vec()
        } else {
            let mut e = self.emit.clone();
            e.sort();
            e.dedup();
            e
        }
    }
}

pub(crate) fn parse_emitter(s: &str) -> Result<Emitter, String> {
    Emitter::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Emitter::known().map(|e| e.name()).collect();
        format!("unknown emitter `{s}`; choose from {}", names.join(", "))
    })
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Compile the definitions and write every artifact (all-or-nothing, only changed files)
    Build {
        #[command(flatten)]
        defs: Definitions,
        #[command(flatten)]
        out: Out,
        /// Diagnostics format on stderr
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Start a `toolreg.lock` in a folder without an overlay (one with `toolreg.toml` or a
        /// lock always keeps its lock current)
        #[arg(long)]
        lock: bool,
    },
    /// Exit 1 unless the output folder is exactly what `build` would write
    Check {
        #[command(flatten)]
        defs: Definitions,
        #[command(flatten)]
        out: Out,
        /// Diagnostics format on stderr
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Print the policy drafted from an op's description, as overlay TOML to review and paste
    Policy {
        #[command(flatten)]
        defs: Definitions,
        /// The op (or tool name) whose description to draft from
        #[arg(long, value_name = "OP")]
        draft: String,
    },
    /// Print sizes and token counts of every surface and of the help pages
    Report {
        #[command(flatten)]
        defs: Definitions,
        /// `text` (a table) or `json` (report.json's content)
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Show a help page from a built registry (root, a group, an entity or an op)
    Help {
        /// Help path: root, a group, group.entity, group.entity.read|write, an op or a tool name
        #[arg(default_value = "root")]
        path: String,
        #[command(flatten)]
        registry: RegistryFile,
        /// Page format
        #[arg(long, value_enum, default_value = "short")]
        format: PageFormat,
        /// Add the JSON Schemas of the ops shown
        #[arg(long)]
        include_schemas: bool,
        /// Leave examples out
        #[arg(long)]
        no_examples: bool,
        /// Show what search finds the op by instead: each field's weight, text and words
        #[arg(long)]
        search_text: bool,
        /// Print the page as JSON (the default when the output is not a terminal)
        #[arg(long, conflicts_with = "text")]
        json: bool,
        /// Print the page as text (the default at a terminal)
        #[arg(long)]
        text: bool,
    },
    /// Search ops in a built registry
    Search {
        query: String,
        #[command(flatten)]
        registry: RegistryFile,
        /// How many results
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// text or json [default: text at a terminal, json when piped]
        #[arg(long, value_enum)]
        format: Option<Format>,
        #[command(flatten)]
        ranking: Ranking,
    },
    /// Dry-run an exec call: resolve, normalize and validate, then print the envelope
    Exec {
        /// The op (or tool name, alias)
        #[arg(required_unless_present = "batch")]
        op: Option<String>,
        /// Arguments as JSON text
        #[arg(long, default_value = "{}", conflicts_with = "batch")]
        args: String,
        /// A batch of help, search and exec calls (JSON: {"items": [...]}; `-` reads stdin),
        /// answered in order as `tool_batch` answers them; exec items are dry runs
        #[arg(long, value_name = "FILE")]
        batch: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryFile,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout: `toolreg man > toolreg.1`
    Man,
    /// Measure search against a query set: recall@k and MRR@10
    Eval {
        /// JSON lines: {"query": "...", "expected": ["tool name or op", ...]}
        #[arg(long, value_name = "FILE")]
        queries: PathBuf,
        #[command(flatten)]
        registry: RegistryFile,
        /// The k values for recall@k
        #[arg(long, value_delimiter = ',', default_value = "1,5,10")]
        k: Vec<usize>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Lexical against hybrid on the same queries, with paired 95% bootstrap intervals of
        /// the differences (needs vectors.json beside the registry; feature `semantic`)
        #[arg(long)]
        compare: bool,
        /// JSON lines of queries no op serves ({"query": "..."}): the shares answered
        /// `strong` (confidently wrong) and `none` (abstained)
        #[arg(long, value_name = "FILE")]
        out_of_scope: Option<PathBuf>,
        /// Choose `match` floors on these queries (--queries in scope, --out-of-scope not): at
        /// most 4.5% of in-scope queries `none` (a margin under 5% for queries not seen), at most
        /// 2% of out-of-scope ones `strong`; prints the `[search]` lines to put in toolreg.toml
        #[arg(long, requires = "out_of_scope")]
        calibrate: bool,
        #[command(flatten)]
        ranking: Ranking,
        /// No progress line (shown at a terminal only, once a step takes over a second)
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Compare two registries: breaking changes, warnings, additions, and the prompt-cache cost
    Diff {
        /// The old registry: a registry.json or an output folder (with --base: the new one)
        old: Option<PathBuf>,
        /// The new registry: a registry.json or an output folder (default: generated)
        new: Option<PathBuf>,
        /// Read the old registry from this git revision of the new one's file (no checkout)
        #[arg(long, value_name = "GIT_REF")]
        base: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: DiffFormat,
        /// Exit 1 when a finding of this level (or worse) exists
        #[arg(long, value_enum, default_value = "never")]
        fail_on: FailOn,
        /// Leave out the prompt-cache impact (which counts tokens)
        #[arg(long)]
        no_cache: bool,
    },
    /// Draft toolreg.toml from what inference makes of the definitions, to review and edit
    Init {
        #[command(flatten)]
        defs: Definitions,
        /// Replace an existing toolreg.toml
        #[arg(long)]
        force: bool,
        /// Print the draft on stdout instead of writing it
        #[arg(long)]
        stdout: bool,
    },
    /// Add requests your users made to the overlay: each op's `queries` (searched as words and,
    /// with the vectors emitter, embedded with the op), from JSON lines {"query": "...",
    /// "expected": ["op or tool name", ...]}, e.g. a log of which op served which request
    Learn {
        #[command(flatten)]
        defs: Definitions,
        /// The requests, as JSON lines
        #[arg(long, value_name = "FILE")]
        queries: PathBuf,
        /// Requests no op serves, as JSON lines {"query": "..."}: with them, learn also sets
        /// `[search] match_lexical` (and with --hybrid or --model, `match_hybrid`), the `match`
        /// floors, chosen on the requests cross-fitted over --folds folds (at most 4.5% of them
        /// answered `none`, at most 2% of these `strong`)
        #[arg(long, value_name = "FILE")]
        out_of_scope: Option<PathBuf>,
        /// Folds of the cross-fitted calibration: each fold's requests are scored on the overlay
        /// learned from the others
        #[arg(long, value_name = "K", default_value_t = 10, value_parser = clap::value_parser!(u8).range(2..=20), requires = "out_of_scope")]
        folds: u8,
        /// Also calibrate the hybrid floors, with the bundled encoder (or --model)
        #[cfg(feature = "semantic")]
        #[arg(long, requires = "out_of_scope")]
        hybrid: bool,
        /// The BERT sentence-transformer folder the vectors are built with (`build --model`),
        /// for the hybrid floors
        #[cfg(feature = "semantic")]
        #[arg(long, value_name = "DIR", requires = "out_of_scope")]
        model: Option<PathBuf>,
    },
    /// Print the JSON Schema of toolreg.toml, for editors (`#:schema ./toolreg.schema.json` at
    /// the top of the file, read by taplo and Even Better TOML)
    Schema,
    /// Snapshot a live MCP server's tools into the definitions (`import mcp NAME -- CMD ARGS...`),
    /// or check every recorded server against its snapshot (`import --check`)
    #[cfg(feature = "mcp")]
    Import(ImportArgs),
    /// Serve the compiled gateway as an MCP server (stdio), forwarding calls of imported tools
    /// to the servers they came from
    #[cfg(feature = "mcp")]
    Serve(Box<ServeArgs>),
    /// Approve the upstream commands a definitions folder (or a built registry) names, after
    /// reading them: `serve` and `import --check` run no others on this machine
    #[cfg(feature = "mcp")]
    Approve(ApproveArgs),
    /// Make a bearer token for `serve --http --auth-tokens FILE`: the token on stdout (shown
    /// once), the file entry with its hash on stderr
    #[cfg(feature = "mcp")]
    Token(TokenArgs),
    /// Report diagnostics only; exit 1 when any is an error
    Lint {
        #[command(flatten)]
        defs: Definitions,
        /// `text` (rustc style), `json` (one object per line) or `sarif` (SARIF 2.1.0 on stdout)
        #[arg(long, value_enum, default_value = "text")]
        format: LintFormat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum DiffFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum FailOn {
    /// Only security findings (a new or changed upstream command)
    Security,
    Breaking,
    Warning,
    Never,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PageFormat {
    Short,
    Full,
}

#[derive(clap::Args)]
pub(crate) struct RegistryFile {
    /// registry.json written by `toolreg build`, or the output folder that holds it (help.json
    /// is read from the same folder)
    #[arg(long, value_name = "FILE", default_value = "generated/registry.json", value_parser = registry_path)]
    pub(crate) registry: PathBuf,
}

/// `--registry`: a folder stands for the `registry.json` in it, as for `diff` and `serve`.
fn registry_path(arg: &str) -> Result<PathBuf, std::convert::Infallible> {
    Ok(super::shared::registry_file(std::path::Path::new(arg)))
}

/// How search ranks: lexical, or hybrid when vectors.json lies beside the registry (also
/// `serve`'s flags).
#[derive(clap::Args)]
pub(crate) struct Ranking {
    /// Weight of semantic similarity in search, 0..1, when vectors.json lies beside the registry
    /// (default: the overlay's `[search] semantic_weight`, else 0.4)
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "W")]
    pub(crate) semantic_weight: Option<f64>,
    /// The BERT sentence-transformer folder the vectors were built with (`build --model`)
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "DIR")]
    pub(crate) model: Option<PathBuf>,
}

#[cfg(feature = "mcp")]
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct ImportArgs {
    #[command(subcommand)]
    pub(crate) source: Option<ImportSource>,
    /// Re-list every upstream recorded in toolreg.toml and exit 1 when one differs from its snapshot
    #[arg(long)]
    pub(crate) check: bool,
    /// Folder with tool definition JSON files and toolreg.toml
    #[arg(long, short = 'd', value_name = "DIR", default_value = "definitions")]
    pub(crate) definitions: PathBuf,
    /// No progress line (shown at a terminal only, once a step takes over a second)
    #[arg(long, short = 'q', global = true)]
    pub(crate) quiet: bool,
}

#[cfg(feature = "mcp")]
#[derive(clap::Subcommand)]
pub(crate) enum ImportSource {
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

#[cfg(feature = "mcp")]
pub(crate) fn root_folder(s: &str) -> Result<String, String> {
    let path = std::fs::canonicalize(s).map_err(|e| format!("{s}: {e}"))?;
    if !path.is_dir() {
        return Err(format!("{s} is not a folder"));
    }
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{s}: the path is not UTF-8"))
}

#[cfg(feature = "mcp")]
pub(crate) fn header_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((h, v)) if !h.is_empty() && !v.is_empty() => Ok((h.to_string(), v.to_string())),
        _ => Err("expected HEADER=VAR, e.g. X-Api-Key=GW_KEY".into()),
    }
}

#[cfg(feature = "mcp")]
#[derive(clap::Args)]
pub(crate) struct ApproveArgs {
    /// Folder with toolreg.toml, whose [upstreams] are approved
    #[arg(long, short = 'd', value_name = "DIR", default_value = "definitions")]
    pub(crate) definitions: PathBuf,
    /// A folder `toolreg build` wrote: approve the upstreams of its registry.json instead
    #[arg(long, value_name = "DIR")]
    pub(crate) registry: Option<PathBuf>,
    /// Only this upstream (repeatable); all of them when not given
    #[arg(long = "upstream", value_name = "NAME")]
    pub(crate) upstreams: Vec<String>,
    /// Show each upstream, what it runs and whether it is approved; change nothing (exit 1
    /// when one is not approved)
    #[arg(long)]
    pub(crate) list: bool,
    /// Withdraw the approvals instead
    #[arg(long, conflicts_with = "list")]
    pub(crate) revoke: bool,
}

#[cfg(feature = "mcp")]
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Folder `toolreg build` wrote (registry.json, help.json, surfaces/)
    #[arg(long, value_name = "DIR", default_value = "generated")]
    pub(crate) registry: PathBuf,
    /// What tools/list shows: gateway (help, exec, search), direct (one tool per op) or profile:NAME
    #[arg(long, default_value = "gateway")]
    pub(crate) surface: toolreg::serve::SurfaceChoice,
    /// Start every upstream now instead of on its first call
    #[arg(long)]
    pub(crate) eager: bool,
    /// Serve streamable HTTP at ADDR (e.g. 127.0.0.1:8080, endpoint /mcp) instead of stdio;
    /// port 0 picks a free port (the address is printed on stderr)
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// A Host header the HTTP server accepts besides loopback (DNS-rebinding guard); repeatable
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub(crate) allowed_hosts: Vec<String>,
    /// A browser Origin the HTTP server accepts (`https://app.example.com:443`); requests that
    /// carry any other Origin are refused (DNS-rebinding guard); repeatable
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub(crate) allowed_origins: Vec<String>,
    /// Admit callers by bearer token: a token file of `[[principal]]` entries (name, token
    /// hash, scopes), made with `toolreg token`
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) auth_tokens: Option<PathBuf>,
    /// This server's public URL, e.g. https://tools.example/mcp: the audience its OAuth tokens
    /// must name and the resource of its metadata (default: http://ADDR/mcp)
    #[arg(long, value_name = "URL", requires = "http")]
    pub(crate) resource_url: Option<String>,
    /// Admit callers with JWT access tokens of this OAuth 2.1 / OpenID issuer (feature `oauth`;
    /// needs --resource-url)
    #[arg(long, value_name = "URL", requires = "resource_url")]
    pub(crate) oauth_issuer: Option<String>,
    /// The issuer's JWKS URL (default: from its discovery document)
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub(crate) oauth_jwks: Option<String>,
    /// Signing algorithms accepted, comma-separated (default: RS*, PS*, ES256, ES384, EdDSA)
    #[arg(
        long,
        value_name = "LIST",
        requires = "oauth_issuer",
        value_delimiter = ','
    )]
    pub(crate) oauth_algorithms: Vec<String>,
    /// Listen beyond loopback without authentication (a warning is printed at start)
    #[arg(long, requires = "http")]
    pub(crate) allow_unauthenticated: bool,
    /// Open connections at most; more are closed at once
    #[arg(long, value_name = "N", default_value_t = 4096, requires = "http")]
    pub(crate) max_connections: usize,
    /// Close a connection that sends nothing for this long, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 60_000, requires = "http")]
    pub(crate) idle_timeout_ms: u64,
    /// Open connections one peer may hold (an IPv4 address, or an IPv6 /64); more are closed at once
    #[arg(long, value_name = "N", default_value_t = 64, requires = "http")]
    pub(crate) max_connections_per_peer: usize,
    /// A new connection must have sent its first request head within this many milliseconds
    #[arg(long, value_name = "MS", default_value_t = 10_000, requires = "http")]
    pub(crate) head_timeout_ms: u64,
    /// Requests one caller may have running at once
    #[arg(long, value_name = "N", default_value_t = 32, requires = "http")]
    pub(crate) max_concurrent: usize,
    /// Requests per second one caller may make (0: no limit)
    #[arg(long, value_name = "N", default_value_t = 0, requires = "http")]
    pub(crate) rate_limit: u32,
    /// Where replicas share the --rate-limit buckets: `redis://HOST:PORT[/DB]` (feature
    /// `redis`; default: the --idempotency Redis when there is one, else this replica)
    #[arg(long, value_name = "STORE", requires = "rate_limit")]
    pub(crate) limits: Option<String>,
    /// Write one JSON line per tools/call (who, op, upstream, outcome, latency, a digest of
    /// the arguments, never their values) to FILE, or to stderr with `-`
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<String>,
    /// What to do with a tool an upstream changed since the build (checked when it starts and
    /// when it announces a new tool list): `refuse` its calls (UPSTREAM_TOOL_CHANGED), or
    /// `warn` and forward them
    #[arg(long, value_name = "MODE", default_value = "refuse")]
    pub(crate) drift: toolreg::serve::drift::DriftMode,
    /// How long clients may keep tools/list and help answers (`ttlMs`, milliseconds);
    /// default a day over stdio, an hour over HTTP
    #[arg(long, value_name = "MS")]
    pub(crate) list_ttl_ms: Option<u64>,
    /// Serve Prometheus metrics at http://ADDR/metrics (a listener of its own, unauthenticated:
    /// loopback only unless --metrics-beyond-loopback)
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<std::net::SocketAddr>,
    /// Let --metrics listen beyond loopback (its answers name ops and carry no authentication:
    /// put it behind a firewall or a scraper-only network)
    #[arg(long, requires = "metrics")]
    pub(crate) metrics_beyond_loopback: bool,
    /// Where idempotency keys live: `memory` (this process) or `redis://HOST:PORT[/DB]`, shared
    /// by replicas so a keyed write runs once across them (needs the `redis` feature)
    #[arg(long, value_name = "STORE", default_value = "memory")]
    pub(crate) idempotency: String,
    #[command(flatten)]
    pub(crate) ranking: Ranking,
}

#[cfg(feature = "mcp")]
#[derive(clap::Args)]
pub(crate) struct TokenArgs {
    /// The principal's name (audit lines and limits use it)
    pub(crate) name: String,
    /// A scope the token carries (see [access] in toolreg.toml); repeatable
    #[arg(long = "scope", value_name = "SCOPE")]
    pub(crate) scopes: Vec<String>,
}

/// Whether `name` is one of toolreg's own commands (as `toolreg help NAME` might mean).
pub(crate) fn is_command(name: &str) -> bool {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .any(|c| c.get_name() == name)
        || super::FEATURE_COMMANDS.iter().any(|(c, _)| *c == name)
}
