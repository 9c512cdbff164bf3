//! Command-line interface: `build`, `check`, `lint`.
//!
//! Exit codes: 0 ok; 1 `check` found stale output or `lint` found errors; 2 bad input or usage.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use toolreg::builder::{generate, generate_opts};
use toolreg::diag::Diagnostics;
use toolreg::emit::Emitter;
use toolreg::output::{self, Ownership};

#[derive(Parser)]
#[command(name = "toolreg", version, disable_help_subcommand = true, about = "Compile LLM tool catalogs into a hashed registry and the surfaces models, programs and people need", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// `lint` also writes SARIF.
#[derive(Clone, Copy, ValueEnum)]
enum LintFormat {
    Text,
    Json,
    /// SARIF 2.1.0 on stdout, for code-scanning UIs
    Sarif,
}

#[derive(clap::Args)]
struct Definitions {
    /// Folder with tool definition JSON files and toolreg.toml
    #[arg(long, short = 'd', value_name = "DIR", default_value = "definitions")]
    definitions: PathBuf,
    /// List every note (e.g. each inferred op) and every repeated warning, instead of a summary
    #[arg(long, short = 'v')]
    verbose: bool,
}

#[derive(clap::Args)]
struct Out {
    /// Output folder (toolreg owns it: stale files in it are removed)
    #[arg(long, short = 'o', value_name = "DIR", default_value = "generated")]
    out: PathBuf,
    /// Artifacts to write, comma-separated: registry, help, surfaces, report, rust, ts, docs (default: all of these); with the `semantic` feature also vectors
    #[arg(long, value_delimiter = ',', value_parser = parse_emitter, value_name = "LIST")]
    emit: Vec<Emitter>,
    /// Fail when an emitter cannot do its whole job (e.g. an op typify cannot type), and let
    /// errors in third-party tools stop the build instead of quarantining those tools
    #[arg(long)]
    strict: bool,
    /// Folder of handlebars templates replacing the built-in docs templates, file by file
    #[arg(long, value_name = "DIR")]
    templates: Option<PathBuf>,
    /// A BERT sentence-transformer folder to embed ops with for `vectors` (default: the bundled
    /// model); search must then be given the same folder
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
}

impl Out {
    fn settings(&self) -> toolreg::emit::Settings {
        toolreg::emit::Settings {
            templates: self.templates.clone(),
            // The vectors already built are the embedding cache: only changed ops are embedded.
            #[cfg(feature = "semantic")]
            previous_vectors: std::fs::read_to_string(self.out.join(toolreg::semantic::FILE)).ok(),
            #[cfg(feature = "semantic")]
            model: self.model.clone(),
        }
    }

    /// `--model` only serves the `vectors` emitter: say so instead of ignoring it.
    fn warn_unused_model(&self) {
        #[cfg(feature = "semantic")]
        if self.model.is_some() && !self.emitters().contains(&Emitter::Vectors) {
            eprintln!("warning: --model is used by the `vectors` emitter only; add it to --emit");
        }
    }

    fn emitters(&self) -> Vec<Emitter> {
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

fn parse_emitter(s: &str) -> Result<Emitter, String> {
    Emitter::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Emitter::known().map(|e| e.name()).collect();
        format!("unknown emitter `{s}`; choose from {}", names.join(", "))
    })
}

#[derive(Subcommand)]
enum Command {
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
    },
    /// Search ops in a built registry
    Search {
        query: String,
        #[command(flatten)]
        registry: RegistryFile,
        /// How many results
        #[arg(long, default_value_t = 5)]
        limit: usize,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        ranking: Ranking,
    },
    /// Dry-run an exec call: resolve, normalize and validate, then print the envelope
    Exec {
        /// The op (or tool name, alias)
        op: String,
        /// Arguments as JSON text
        #[arg(long, default_value = "{}")]
        args: String,
        #[command(flatten)]
        registry: RegistryFile,
    },
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
        #[command(flatten)]
        ranking: Ranking,
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
    /// Snapshot a live MCP server's tools into the definitions (`import mcp NAME -- CMD ARGS...`),
    /// or check every recorded server against its snapshot (`import --check`)
    #[cfg(feature = "mcp")]
    Import(crate::cli_mcp::ImportArgs),
    /// Serve the compiled gateway as an MCP server (stdio), forwarding calls of imported tools
    /// to the servers they came from
    #[cfg(feature = "mcp")]
    Serve(crate::cli_mcp::ServeArgs),
    /// Approve the upstream commands a definitions folder (or a built registry) names, after
    /// reading them: `serve` and `import --check` run no others on this machine
    #[cfg(feature = "mcp")]
    Approve(crate::cli_mcp::ApproveArgs),
    /// Make a bearer token for `serve --http --auth-tokens FILE`: the token on stdout (shown
    /// once), the file entry with its hash on stderr
    #[cfg(feature = "mcp")]
    Token(crate::cli_mcp::TokenArgs),
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
enum DiffFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Clone, Copy, ValueEnum)]
enum FailOn {
    /// Only security findings (a new or changed upstream command)
    Security,
    Breaking,
    Warning,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
enum PageFormat {
    Short,
    Full,
}

#[derive(clap::Args)]
struct RegistryFile {
    /// registry.json written by `toolreg build` (help.json is read from the same folder)
    #[arg(long, value_name = "FILE", default_value = "generated/registry.json")]
    registry: PathBuf,
}

/// How search ranks: lexical, or hybrid when vectors.json lies beside the registry (also
/// `serve`'s flags).
#[derive(clap::Args)]
pub(crate) struct Ranking {
    /// Weight of semantic similarity in search, 0..1, when vectors.json lies beside the registry
    /// (default: the overlay's `[search] semantic_weight`, else 0.3)
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "W")]
    semantic_weight: Option<f64>,
    /// The BERT sentence-transformer folder the vectors were built with (`build --model`)
    #[cfg(feature = "semantic")]
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
}

impl Ranking {
    #[cfg(feature = "semantic")]
    pub(crate) fn choice(&self) -> toolreg::runtime::hybrid::HybridChoice {
        toolreg::runtime::hybrid::HybridChoice {
            model: self.model.clone(),
            weight: self.semantic_weight,
        }
    }
}

impl RegistryFile {
    /// The gateway; with `ranking` (the commands that search), hybrid ranking when the vectors
    /// were built. Other commands never load the model.
    fn gateway_ranked(&self, ranking: &Ranking) -> Result<toolreg::runtime::Gateway, ExitCode> {
        self.load(Some(ranking))
    }

    fn gateway(&self) -> Result<toolreg::runtime::Gateway, ExitCode> {
        self.load(None)
    }

    fn load(&self, ranking: Option<&Ranking>) -> Result<toolreg::runtime::Gateway, ExitCode> {
        #[cfg(not(feature = "semantic"))]
        let _ = ranking;
        let dir = self
            .registry
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let read = |p: PathBuf| {
            std::fs::read(&p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))
        };
        let result = settle_folder(dir)
            .and_then(|()| read(self.registry.clone()))
            .and_then(|r| read(dir.join("help.json")).map(|h| (r, h)))
            .and_then(|(r, h)| {
                toolreg::runtime::Gateway::from_slices(&r, &h).map_err(|e| e.to_string())
            });
        // Hybrid search when the vectors were built; vectors from another model or registry
        // are refused, never mixed in.
        #[cfg(feature = "semantic")]
        let result = result.and_then(|gw| {
            let Some(ranking) = ranking else {
                return Ok(gw);
            };
            let choice = ranking.choice();
            match toolreg::runtime::hybrid::Hybrid::beside(dir, gw.registry(), &choice)? {
                Some(hybrid) => Ok(gw.with_hybrid(hybrid)),
                None => {
                    if choice.model.is_some() || choice.weight.is_some() {
                        eprintln!(
                            "warning: no {} beside the registry: search is lexical, --model and --semantic-weight go unused",
                            toolreg::semantic::FILE
                        );
                    }
                    Ok(gw)
                }
            }
        });
        result.map_err(|e| {
            eprintln!("error: {e}");
            eprintln!("   = help: run `toolreg build` first, or pass --registry FILE");
            ExitCode::from(2)
        })
    }
}

/// `eval --compare`: lexical, then hybrid, over the same queries.
fn eval_compare(
    gw: &toolreg::runtime::Gateway,
    text: &str,
    k: &[usize],
    format: Format,
) -> ExitCode {
    if !gw.has_hybrid() {
        eprintln!("error: --compare needs hybrid search: vectors.json beside the registry (`toolreg build` with the `semantic` feature)");
        return ExitCode::from(2);
    }
    let runs = toolreg::runtime::eval::run_ranked(gw, text, k, true).and_then(|lexical| {
        let hybrid = toolreg::runtime::eval::run_ranked(gw, text, k, false)?;
        toolreg::runtime::eval::compare(&lexical, &hybrid, k, 2000)
    });
    match runs {
        Ok(v) => {
            match format {
                Format::Json => print_json(&v),
                Format::Text => {
                    for (metric, m) in v.as_object().into_iter().flatten() {
                        match m.get("difference") {
                            Some(d) => println!(
                                "{metric:<10} lexical {}  hybrid {}  difference {:+} (95% interval {} .. {})",
                                m["lexical"], m["hybrid"], d.as_f64().unwrap_or(0.0), m["interval95"][0], m["interval95"][1]
                            ),
                            None => println!("{metric:<10} {m}"),
                        }
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Pretty JSON on stdout with every character a terminal could act on or hide (DEL, C1
/// controls, bidi, zero-width and tag characters; serde_json escapes the C0 ones) written as a
/// `\uXXXX` escape: the same JSON, safe to print.
fn print_json(v: &impl serde::Serialize) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    println!("{}", toolreg::diag::escape_json_text(&text));
}

fn show(diags: &Diagnostics, format: Format, verbose: bool) {
    match format {
        Format::Text if verbose => eprint!("{}", diags.render_text()),
        Format::Text => eprint!("{}", diags.render_text_brief()),
        Format::Json => eprint!("{}", diags.render_json_lines()),
    }
}

/// Under `--strict`, emitter fallbacks are failures.
fn strict_failure(diags: &Diagnostics) -> bool {
    diags
        .iter()
        .any(|d| d.code == toolreg::diag::Code::UntypedOp)
}

/// The build summary's line for third-party tools that were left out (at most ten named).
fn say_quarantined(reg: &toolreg::Registry) {
    let q = &reg.quarantined;
    if q.is_empty() {
        return;
    }
    let named: Vec<String> = q
        .iter()
        .take(10)
        .map(|t| {
            format!(
                "`{}` ({}, {})",
                toolreg::diag::escape_controls(&t.tool_name),
                t.file,
                t.codes.join("+")
            )
        })
        .collect();
    let more = q.len().saturating_sub(named.len());
    eprintln!(
        "quarantined {} third-party tool{} (in no surface; TR081 above says why; --strict makes them errors): {}{}",
        q.len(),
        if q.len() == 1 { "" } else { "s" },
        named.join(", "),
        if more > 0 { format!(", and {more} more") } else { String::new() }
    );
}

/// Brings `toolreg.lock` up to date after a build, saying what changed (its diff is what a
/// reviewer approves). False when it could not be written (reported).
fn update_lock(defs: &std::path::Path, reg: &toolreg::Registry) -> bool {
    use toolreg::trust::lock::{self, Lock, LockDiff};
    let now = Lock::of(reg, defs);
    let before = lock::Lock::read(defs).ok().flatten().unwrap_or_default();
    match lock::write(defs, &now) {
        Ok(false) => true,
        Ok(true) if before.tools.is_empty() => {
            eprintln!(
                "{}: {} tool{} pinned; review and commit it",
                display(&lock::path(defs)),
                now.tools.len(),
                if now.tools.len() == 1 { "" } else { "s" },
            );
            true
        }
        Ok(true) => {
            let d = LockDiff::between(&before, &now);
            eprintln!(
                "{}: {} tool{} pinned; review and commit the change:\n{}",
                display(&lock::path(defs)),
                now.tools.len(),
                if now.tools.len() == 1 { "" } else { "s" },
                d.render().trim_end()
            );
            true
        }
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

/// Whether the definitions' `toolreg.lock` pins exactly what they compile to; when not, says
/// what differs. A folder that keeps no lock (zero-config, no lock) is current.
fn lock_is_current(defs: &std::path::Path, reg: &toolreg::Registry) -> bool {
    use toolreg::trust::lock::{self, Lock, LockDiff};
    let path = lock::path(defs);
    let fix = format!(
        "run `toolreg build --definitions {}`, review the change to the lock and commit it",
        display(defs)
    );
    let now = Lock::of(reg, defs);
    match Lock::read(defs) {
        Ok(Some(approved)) if approved == now => true,
        Ok(Some(approved)) => {
            eprint!(
                "error: `{}` is stale: the definitions differ from what was approved\n{}  help: {fix}\n",
                display(&path),
                LockDiff::between(&approved, &now).render()
            );
            false
        }
        Ok(None) if !lock::wanted(defs) => true,
        Ok(None) => {
            eprintln!("error: `{}` is missing\n  help: {fix}", display(&path));
            false
        }
        Err(e) => {
            eprintln!("error: {e}\n  help: {fix}");
            false
        }
    }
}

fn display(p: &std::path::Path) -> String {
    p.to_string_lossy()
        .replace('\\', "/")
        .trim_end_matches('/')
        .to_string()
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(feature = "mcp")]
    let long_running = matches!(cli.command, Command::Serve(_));
    #[cfg(not(feature = "mcp"))]
    let long_running = false;
    if !long_running {
        crate::batch_allocator();
    }
    match cli.command {
        Command::Build {
            defs,
            out,
            format,
            lock,
        } => {
            out.warn_unused_model();
            let g = generate_opts(
                &defs.definitions,
                &out.emitters(),
                &out.settings(),
                out.strict,
            );
            show(&g.compiled.diagnostics, format, defs.verbose);
            if out.strict && strict_failure(&g.compiled.diagnostics) {
                eprintln!(
                    "error: --strict: an emitter could not do its whole job; `{}` was not changed",
                    display(&out.out)
                );
                return ExitCode::from(2);
            }
            let Some(files) = g.files else {
                eprintln!(
                    "error: build stopped; `{}` was not changed",
                    display(&out.out)
                );
                return ExitCode::from(2);
            };
            if let Err(d) = output::ensure_apart(&defs.definitions, &out.out) {
                show(&vec![*d].into(), format, true);
                return ExitCode::from(2);
            }
            match output::write(&out.out, &files, Ownership::Folder) {
                Ok(r) => {
                    let reg = g
                        .compiled
                        .registry
                        .as_ref()
                        .expect("files imply a registry");
                    eprintln!(
                        "built {} op{} in {} group{} ({}): {} written, {} removed, {} unchanged in `{}`",
                        reg.counts.ops,
                        if reg.counts.ops == 1 { "" } else { "s" },
                        reg.counts.groups,
                        if reg.counts.groups == 1 { "" } else { "s" },
                        reg.registry_version,
                        r.written.len(),
                        r.removed.len(),
                        r.unchanged,
                        display(&out.out)
                    );
                    say_quarantined(reg);
                    if (lock || toolreg::trust::lock::wanted(&defs.definitions))
                        && !update_lock(&defs.definitions, reg)
                    {
                        return ExitCode::from(2);
                    }
                    if r.kept.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        show(&output::kept_diagnostics(&out.out, &r).into(), format, true);
                        ExitCode::from(1)
                    }
                }
                Err(d) => {
                    show(&vec![*d].into(), format, true);
                    ExitCode::from(2)
                }
            }
        }
        Command::Check { defs, out, format } => {
            out.warn_unused_model();
            let g = generate_opts(
                &defs.definitions,
                &out.emitters(),
                &out.settings(),
                out.strict,
            );
            if out.strict && strict_failure(&g.compiled.diagnostics) {
                show(&g.compiled.diagnostics, format, defs.verbose);
                return ExitCode::from(2);
            }
            let Some(files) = g.files else {
                show(&g.compiled.diagnostics, format, defs.verbose);
                eprintln!(
                    "error: cannot check `{}`: the definitions have errors",
                    display(&out.out)
                );
                return ExitCode::from(2);
            };
            if let Err(d) = output::ensure_apart(&defs.definitions, &out.out) {
                show(&vec![*d].into(), format, true);
                return ExitCode::from(2);
            }
            let lock_current = match &g.compiled.registry {
                Some(reg) => lock_is_current(&defs.definitions, reg),
                None => true,
            };
            match output::check(&out.out, &files, Ownership::Folder) {
                Ok(report) if report.is_clean() && !lock_current => ExitCode::from(1),
                Ok(report) if report.is_clean() => {
                    eprintln!(
                        "`{}` is up to date ({} files)",
                        display(&out.out),
                        files.len()
                    );
                    if let Some(reg) = &g.compiled.registry {
                        say_quarantined(reg);
                    }
                    ExitCode::SUCCESS
                }
                Ok(report) => {
                    let fix = format!(
                        "toolreg build --definitions {} --out {}",
                        display(&defs.definitions),
                        display(&out.out)
                    );
                    eprint!(
                        "{}",
                        output::render_check(&display(&out.out), &report, &fix)
                    );
                    ExitCode::from(1)
                }
                Err(d) => {
                    show(&vec![*d].into(), format, true);
                    ExitCode::from(2)
                }
            }
        }
        Command::Report { defs, format } => {
            let g = generate(&defs.definitions, &[]);
            let Some(reg) = g.compiled.registry else {
                show(&g.compiled.diagnostics, Format::Text, defs.verbose);
                return ExitCode::from(2);
            };
            let help = toolreg::emit::help::build(&reg);
            let report = toolreg::report::build(&reg, &help);
            match format {
                Format::Text => print!("{}", toolreg::report::render_text(&report)),
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                ),
            }
            ExitCode::SUCCESS
        }
        Command::Policy { defs, draft } => {
            let g = generate(&defs.definitions, &[]);
            let Some(reg) = g.compiled.registry else {
                show(&g.compiled.diagnostics, Format::Text, defs.verbose);
                return ExitCode::from(2);
            };
            let record = reg.ops.get(&draft).or_else(|| reg.op_by_tool_name(&draft));
            let Some(record) = record else {
                let near = toolreg::diag::nearest(&draft, reg.ops.keys().map(String::as_str));
                eprintln!("error: `{draft}` is not an op or tool name");
                if let Some(n) = near {
                    eprintln!("   = help: did you mean `{n}`?");
                }
                return ExitCode::from(2);
            };
            let display = defs.definitions.to_string_lossy();
            let mut diags = Diagnostics::default();
            let cues = toolreg::compiler::overlay::load(&defs.definitions, &display, &mut diags)
                .map(|lo| lo.overlay.policy_cues)
                .unwrap_or_default();
            match toolreg::compiler::policy::draft(&record.description, &cues) {
                Some(spec) => {
                    print!(
                        "{}",
                        toolreg::compiler::policy::as_overlay_toml(&record.op, &spec)
                    );
                    ExitCode::SUCCESS
                }
                None => {
                    eprintln!("no policy cues found in the description of `{}`", record.op);
                    eprintln!("   = help: write [ops.\"{}\".policy] by hand, or add cue phrases under [policy_cues]", record.op);
                    ExitCode::SUCCESS
                }
            }
        }
        Command::Help {
            path,
            registry,
            format,
            include_schemas,
            no_examples,
        } => {
            let gw = match registry.gateway() {
                Ok(g) => g,
                Err(code) => return code,
            };
            let req = toolreg::help::HelpRequest {
                path,
                format: match format {
                    PageFormat::Short => toolreg::help::Format::Short,
                    PageFormat::Full => toolreg::help::Format::Full,
                },
                include_examples: !no_examples,
                include_schemas,
            };
            let page = gw.help(&req);
            print_json(&page);
            if page.get("error").is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Command::Search {
            query,
            registry,
            limit,
            format,
            ranking,
        } => {
            let gw = match registry.gateway_ranked(&ranking) {
                Ok(g) => g,
                Err(code) => return code,
            };
            let mut req = toolreg::runtime::search::SearchRequest::query(query);
            req.limit = Some(limit);
            let res = gw.search(&req);
            match format {
                Format::Json => print_json(&res),
                Format::Text => {
                    for (i, h) in res.results.iter().enumerate() {
                        // Catalog text reaches a terminal: escaped (`\u{1b}`), never raw.
                        let esc = toolreg::diag::escape_controls;
                        println!(
                            "{:>2}. {:<36} {:<5} {:.2}  {}",
                            i + 1,
                            esc(&h.op),
                            h.kind.as_str(),
                            h.confidence,
                            esc(&h.summary)
                        );
                        if let Some(u) = &h.usage {
                            println!("      {}", esc(u));
                        }
                    }
                    if let Some(s) = &res.suggestion {
                        println!("{}", toolreg::diag::escape_controls(s));
                        print_json(&res.directory);
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Command::Exec { op, args, registry } => {
            let gw = match registry.gateway() {
                Ok(g) => g,
                Err(code) => return code,
            };
            let call = toolreg::runtime::ExecCall {
                op,
                // An object goes as an object (what a model's tool call carries); anything else
                // as text, so the envelope can say what is wrong with it.
                args: Some(match serde_json::from_str::<serde_json::Value>(&args) {
                    Ok(v @ serde_json::Value::Object(_)) => v,
                    _ => serde_json::Value::String(args),
                }),
                idempotency_key: None,
                dry_run: Some(true),
            };
            let env = toolreg::runtime::block_on(gw.exec(call));
            print_json(&env);
            if env.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Command::Eval {
            queries,
            registry,
            k,
            format,
            compare,
            ranking,
        } => {
            let gw = match registry.gateway_ranked(&ranking) {
                Ok(g) => g,
                Err(code) => return code,
            };
            let text = match std::fs::read_to_string(&queries) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("error: cannot read `{}`: {e}", queries.display());
                    return ExitCode::from(2);
                }
            };
            if compare {
                return eval_compare(&gw, &text, &k, format);
            }
            match toolreg::runtime::eval::run(&gw, &text, &k) {
                Ok(report) => {
                    match format {
                        Format::Json => print_json(&report.to_json()),
                        Format::Text => print!("{}", report.render_text()),
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {}: {e}", queries.display());
                    ExitCode::from(2)
                }
            }
        }
        Command::Init {
            defs,
            force,
            stdout,
        } => init(&defs, force, stdout),
        Command::Diff {
            old,
            new,
            base,
            format,
            fail_on,
            no_cache,
        } => diff(old, new, base, format, fail_on, no_cache),
        #[cfg(feature = "mcp")]
        Command::Import(args) => crate::cli_mcp::import(args),
        #[cfg(feature = "mcp")]
        Command::Serve(args) => crate::cli_mcp::serve(args),
        #[cfg(feature = "mcp")]
        Command::Approve(args) => crate::cli_mcp::approve(args),
        #[cfg(feature = "mcp")]
        Command::Token(args) => crate::cli_mcp::token(args),
        Command::Lint { defs, format } => {
            let g = generate(&defs.definitions, &[]);
            let mut diags = g.compiled.diagnostics.clone();
            // An upstream is code: flag every one this machine has not approved to run (a store
            // that cannot be read approves nothing).
            let approvals = toolreg::trust::Approvals::load_default().unwrap_or_default();
            for d in toolreg::compiler::unapproved_upstreams(&defs.definitions, &approvals) {
                diags.push(d);
            }
            diags.sort();
            let diags = &diags;
            match format {
                LintFormat::Text => show(diags, Format::Text, defs.verbose),
                LintFormat::Json => show(diags, Format::Json, defs.verbose),
                // A file for code-scanning uploads: on stdout, so `> toolreg.sarif` keeps it whole.
                LintFormat::Sarif => print!("{}", diags.render_sarif(env!("CARGO_PKG_VERSION"))),
            }
            if !defs.definitions.is_dir() {
                return ExitCode::from(2);
            }
            if diags.has_errors() {
                ExitCode::from(1)
            } else {
                if matches!(format, LintFormat::Text) && diags.is_empty() {
                    eprintln!("no errors or warnings");
                }
                ExitCode::SUCCESS
            }
        }
    }
}

/// `toolreg init`: draft the overlay, check it reproduces the zero-config registry, write it.
fn init(defs: &Definitions, force: bool, stdout: bool) -> ExitCode {
    use toolreg::compiler::draft::{draft, keep_tables, DraftError, KeepError};
    let path = defs
        .definitions
        .join(toolreg::compiler::overlay::OVERLAY_FILE);
    let shown = display(&path);
    if path.exists() && !force && !stdout {
        eprintln!("error: `{shown}` exists; toolreg init does not replace an overlay");
        eprintln!(
            "   = help: `--force` replaces it (the draft ignores it), `--stdout` prints the draft"
        );
        return ExitCode::from(2);
    }
    let d = match draft(&defs.definitions) {
        Ok(d) => d,
        Err(DraftError::Input(diags)) => {
            show(&diags, Format::Text, defs.verbose);
            eprintln!("error: no draft: the definitions have errors that inference cannot fix");
            return ExitCode::from(2);
        }
        Err(DraftError::Mismatch(why)) => {
            eprintln!("error: the draft did not reproduce the zero-config registry: {why}");
            eprintln!("   = help: this is a bug in toolreg; please report it with the definitions");
            return ExitCode::from(2);
        }
    };
    if stdout {
        print!("{}", d.text);
        return ExitCode::SUCCESS;
    }
    // What the old overlay holds beyond the drafted tables is kept (with --force), never lost.
    let old = match std::fs::read_to_string(&path) {
        Ok(old) => Some(old),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            eprintln!(
                "error[TR050]: cannot read `{shown}` to keep its tables: {e}; nothing was written"
            );
            return ExitCode::from(2);
        }
    };
    let merged = match old
        .as_deref()
        .map(|o| keep_tables(&defs.definitions, &d, o))
    {
        None => None,
        Some(Ok(m)) => Some(m),
        Some(Err(KeepError::Unreadable(why))) => {
            eprintln!("error: cannot keep the tables of `{shown}`: {why}; nothing was written");
            eprintln!("   = help: fix it, or move it away to start over; `--stdout` prints the draft alone");
            return ExitCode::from(2);
        }
        Some(Err(KeepError::DoNotFit(diags))) => {
            show(&diags, Format::Text, defs.verbose);
            eprintln!("error: the draft with the tables kept from `{shown}` does not build; nothing was written");
            eprintln!("   = help: `--stdout` prints the draft alone: merge by hand what still fits (e.g. [ops] entries of ops the draft renamed)");
            return ExitCode::from(2);
        }
    };
    let text = merged.as_ref().map_or(&d.text, |m| &m.text);
    // Beside the target, then renamed: a reader never sees half a file.
    let tmp = path.with_extension("toml.toolreg-tmp");
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        eprintln!("error[TR050]: cannot write `{shown}`: {e}");
        return ExitCode::from(2);
    }
    eprintln!(
        "wrote `{shown}` for {} tools in {} file{}: {} group{}, {} entities, {} rule{} ({} ops) and {} special case{}, {} profile{}",
        d.tools,
        d.files,
        if d.files == 1 { "" } else { "s" },
        d.groups,
        if d.groups == 1 { "" } else { "s" },
        d.entities,
        d.rules,
        if d.rules == 1 { "" } else { "s" },
        d.by_rules,
        d.special,
        if d.special == 1 { "" } else { "s" },
        d.profiles,
        if d.profiles == 1 { "" } else { "s" },
    );
    match &merged {
        Some(m) if !m.kept.is_empty() => eprintln!(
            "kept from the old overlay: {}; the draft alone gives registry {}, the same as with no overlay, and with the kept tables {}; review it, then `toolreg build`",
            m.kept.join(", "),
            d.registry_version,
            m.registry_version
        ),
        _ => eprintln!(
            "building with it gives registry {}, the same as with no overlay; review it, then `toolreg build`",
            d.registry_version
        ),
    }
    ExitCode::SUCCESS
}

/// Before a command reads an output folder: finishes a build that was killed after its commit
/// (as `check` does), so the command sees one whole tree, and says so.
pub(crate) fn settle_folder(dir: &std::path::Path) -> Result<(), String> {
    let dir = if dir.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        dir
    };
    match output::settle(dir) {
        Ok(true) => {
            eprintln!(
                "note: finished an interrupted build in `{}` before reading it",
                display(dir)
            );
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(d) => Err(format!(
            "{}{}",
            d.message,
            d.help
                .map(|h| format!("\n   = help: {h}"))
                .unwrap_or_default()
        )),
    }
}

/// A registry file, or the `registry.json` in an output folder.
pub(crate) fn registry_file(p: &std::path::Path) -> PathBuf {
    if p.is_dir() {
        p.join("registry.json")
    } else {
        p.to_path_buf()
    }
}

/// The registry at `file` as it was in git revision `rev` (read with `git show`, no checkout).
fn registry_at_rev(file: &std::path::Path, rev: &str) -> Result<toolreg::Registry, String> {
    let shown = display(file);
    // A revision only: never something git would read as an option (`--output=FILE` made git
    // write a file) and never empty (git would read the index).
    if rev.trim().is_empty() {
        return Err("--base needs a git revision, e.g. `--base origin/main`".into());
    }
    if rev.starts_with('-') || rev.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "--base `{}` is not a git revision (a revision does not start with `-` or hold spaces or control characters)",
            toolreg::diag::escape_controls(rev)
        ));
    }
    let abs = file
        .canonicalize()
        .map_err(|e| format!("cannot find `{shown}`: {e}"))?;
    let dir = abs.parent().unwrap_or(std::path::Path::new("."));
    let git = |args: &[&str]| -> Result<Vec<u8>, String> {
        let o = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if o.status.success() {
            Ok(o.stdout)
        } else {
            Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
        }
    };
    let top = git(&["rev-parse", "--show-toplevel"])
        .map_err(|e| format!("`{shown}` is not in a git repository: {e}"))?;
    let top = PathBuf::from(String::from_utf8_lossy(&top).trim())
        .canonicalize()
        .map_err(|e| e.to_string())?;
    let rel = abs
        .strip_prefix(&top)
        .map_err(|_| format!("`{shown}` is outside the repository at `{}`", top.display()))?;
    let commit = git(&[
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &format!("{rev}^{{commit}}"),
    ])
    .map_err(|_| {
        format!(
            "--base `{rev}` names no commit in the repository at `{}`",
            top.display()
        )
    })?;
    let commit = String::from_utf8_lossy(&commit).trim().to_string();
    eprintln!(
        "diff: the old registry is `{shown}` at `{rev}` (commit {})",
        &commit[..commit.len().min(12)]
    );
    let spec = format!("{commit}:{}", rel.to_string_lossy().replace('\\', "/"));
    let bytes = git(&["show", "--end-of-options", &spec])
        .map_err(|e| format!("cannot read `{shown}` at `{rev}`: {e}"))?;
    toolreg::Registry::from_slice(&bytes).map_err(|e| format!("`{shown}` at `{rev}`: {e}"))
}

/// `toolreg diff`: findings and the prompt-cache cost; exit 1 when `--fail-on` says so.
fn diff(
    old: Option<PathBuf>,
    new: Option<PathBuf>,
    base: Option<String>,
    format: DiffFormat,
    fail_on: FailOn,
    no_cache: bool,
) -> ExitCode {
    use toolreg::diff::{render, Level};
    let load = |p: &std::path::Path| {
        let f = registry_file(p);
        settle_folder(f.parent().unwrap_or(std::path::Path::new(".")))?;
        toolreg::Registry::from_path(&f).map_err(|e| e.to_string())
    };
    let pair = match (&base, old, new) {
        (Some(rev), one, None) | (Some(rev), None, one) => {
            let new_path = registry_file(&one.unwrap_or_else(|| PathBuf::from("generated")));
            registry_at_rev(&new_path, rev).and_then(|o| load(&new_path).map(|n| (o, n)))
        }
        (Some(_), Some(_), Some(_)) => Err("with --base, give only the new registry".into()),
        (None, Some(o), Some(n)) => load(&o).and_then(|o| load(&n).map(|n| (o, n))),
        (None, _, _) => {
            Err("give OLD and NEW (registry files or output folders), or --base GIT_REF".into())
        }
    };
    let (old, new) = match pair {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("   = help: `toolreg diff OLD NEW`, or `toolreg diff --base origin/main [generated]`");
            return ExitCode::from(2);
        }
    };
    let report = toolreg::diff::diff(&old, &new, !no_cache);
    print!(
        "{}",
        match format {
            DiffFormat::Text => render::text(&report),
            DiffFormat::Json => render::json(&report),
            DiffFormat::Markdown => render::markdown(&report),
        }
    );
    let fail = match fail_on {
        FailOn::Security => report.has(Level::Security),
        FailOn::Breaking => report.has(Level::Breaking),
        FailOn::Warning => report.has(Level::Warning),
        FailOn::Never => false,
    };
    if fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
