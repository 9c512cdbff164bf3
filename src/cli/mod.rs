//! The `toolreg` command line: [`args`] defines every flag; one module per command family
//! ([`build`]: build, check, lint, init, report, policy; [`query`]: help, search, exec, eval;
//! [`diff`]; [`mcp`]: import, serve, approve, token) and [`shared`] for what they all print.
//!
//! Exit codes: 0 ok; 1 `check` found stale output or `lint` found errors; 2 bad input or usage.

mod args;
mod build;
mod diff;
mod learn;
mod lock_file;
#[cfg(feature = "mcp")]
mod mcp;
mod page_text;
mod progress;
mod query;
mod shared;

use args::{Cli, Command, Format};

/// The optional features this binary was built with.
fn features() -> String {
    let on: Vec<&str> = [
        ("mcp", cfg!(feature = "mcp")),
        ("oauth", cfg!(feature = "oauth")),
        ("redis", cfg!(feature = "redis")),
        ("semantic", cfg!(feature = "semantic")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    if on.is_empty() {
        "none beyond the compiler and runtime".to_string()
    } else {
        on.join(", ")
    }
}

/// `--version`: the version and the features this binary was built with (what it can do).
fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| format!("{} (features: {})", env!("CARGO_PKG_VERSION"), features()))
}

/// The commands a feature brings, with it.
const FEATURE_COMMANDS: &[(&str, &str)] = &[
    ("serve", "mcp"),
    ("import", "mcp"),
    ("approve", "mcp"),
    ("token", "mcp"),
];

/// The command `asked` names and the feature it needs, when `built` says that feature is not
/// in this binary.
fn missing_feature(
    asked: &str,
    built: &dyn Fn(&str) -> bool,
) -> Option<(&'static str, &'static str)> {
    FEATURE_COMMANDS
        .iter()
        .find(|(c, f)| *c == asked && !built(f))
        .copied()
}

/// A command this binary was built without says which feature it needs, instead of clap's
/// "a similar subcommand exists: 'search'" for `serve`. Exit 2, as for any usage error.
fn refuse_missing_feature() -> Option<ExitCode> {
    let asked = std::env::args().nth(1)?;
    let (command, feature) = missing_feature(&asked, &|f| f != "mcp" || cfg!(feature = "mcp"))?;
    eprintln!(
        "error: `toolreg {command}` needs the `{feature}` feature, and this toolreg was built without it (its features: {})",
        features()
    );
    eprintln!(
        "   = help: install one with it: cargo install --path . --locked --features {feature}"
    );
    Some(ExitCode::from(2))
}
use clap::Parser;
use std::process::ExitCode;

/// Parses the command line and runs the command; `batch` is called first by every command
/// that runs once and exits (not by the long-running `serve`), told whether the command is one
/// that compiles a catalog at once (hundreds of MB, unlike a query's few; `build` is told no,
/// and prepares itself once it knows its outputs are not current).
pub fn run(batch: impl FnOnce(bool)) -> ExitCode {
    if let Some(code) = refuse_missing_feature() {
        return code;
    }
    let cli = Cli::parse();
    #[cfg(feature = "mcp")]
    let long_running = matches!(cli.command, Command::Serve(_));
    #[cfg(not(feature = "mcp"))]
    let long_running = false;
    // The commands that may embed texts (a query, or ops with `vectors`; `serve` is the one that
    // runs long) pin the encoder's thread count first (see its comment); the others skip its one
    // read of /proc/cpuinfo.
    #[cfg(feature = "semantic")]
    if long_running
        || matches!(
            cli.command,
            Command::Build { .. }
                | Command::Check { .. }
                | Command::Search { .. }
                | Command::Eval { .. }
                | Command::Learn { .. }
        )
    {
        // SAFETY: no thread has started yet: only arguments were parsed.
        unsafe { toolreg::semantic::pin_thread_count() };
    }
    if !long_running {
        // `build` opts in itself, once it knows it compiles (not when nothing changed).
        let compiles = matches!(
            cli.command,
            Command::Check { .. }
                | Command::Lint { .. }
                | Command::Report { .. }
                | Command::Policy { .. }
                | Command::Init { .. }
        );
        batch(compiles);
    }
    match cli.command {
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            // Into memory first: clap_complete panics on a failed write (`| head`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "toolreg", &mut script);
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: cannot write the completion script: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Man => {
            use clap::CommandFactory;
            let page = clap_mangen::Man::new(Cli::command());
            match page.render(&mut std::io::stdout()) {
                Ok(()) => ExitCode::SUCCESS,
                // `toolreg man | head`: the reader left; nothing is wrong.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: cannot write the man page: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Build {
            defs,
            out,
            format,
            lock,
        } => build::build(defs, out, format, lock),
        Command::Check { defs, out, format } => build::check(defs, out, format),
        Command::Lint { defs, format } => build::lint(defs, format),
        Command::Report { defs, format } => build::report(defs, format),
        Command::Policy { defs, draft } => build::policy(defs, draft),
        Command::Help {
            path,
            registry,
            format,
            include_schemas,
            no_examples,
            search_text,
            json,
            text,
        } => {
            if search_text {
                query::search_text(path, registry)
            } else {
                let as_text = text || (!json && shared::stdout_is_terminal());
                query::help(
                    path,
                    registry,
                    format,
                    include_schemas,
                    no_examples,
                    as_text,
                )
            }
        }
        Command::Search {
            query,
            registry,
            limit,
            format,
            ranking,
        } => {
            let format = format.unwrap_or(if shared::stdout_is_terminal() {
                Format::Text
            } else {
                Format::Json
            });
            query::search(query, registry, limit, format, ranking)
        }
        Command::Exec {
            op,
            args,
            batch,
            registry,
        } => match batch {
            Some(file) => query::exec_batch(file, registry),
            None => query::exec(op.unwrap_or_default(), args, registry),
        },
        Command::Eval {
            queries,
            registry,
            k,
            format,
            compare,
            out_of_scope,
            calibrate,
            ranking,
            quiet,
        } => match out_of_scope {
            // clap requires --out-of-scope with --calibrate.
            Some(oos) if calibrate => {
                query::calibrate(queries, oos, registry, format, ranking, quiet)
            }
            _ => query::eval(query::EvalRun {
                queries,
                registry,
                k,
                format,
                compare,
                out_of_scope,
                ranking,
                quiet,
            }),
        },
        Command::Init {
            defs,
            force,
            stdout,
        } => build::init(&defs, force, stdout),
        Command::Learn {
            defs,
            queries,
            out_of_scope,
            folds,
            #[cfg(feature = "semantic")]
            hybrid,
            #[cfg(feature = "semantic")]
            model,
        } => {
            #[cfg(feature = "semantic")]
            let encoder = if hybrid || model.is_some() {
                match toolreg::semantic::load_encoder(model.as_deref()) {
                    Ok(e) => Some(e),
                    Err(e) => {
                        eprintln!("error[TR072]: the model did not load: {e}; nothing was written");
                        return ExitCode::from(2);
                    }
                }
            } else {
                None
            };
            let calibration = out_of_scope.map(|out_of_scope| learn::Calibration {
                out_of_scope,
                folds: usize::from(folds),
                #[cfg(feature = "semantic")]
                encoder,
            });
            learn::learn(&defs, &queries, calibration)
        }
        Command::Schema => {
            print!("{}", toolreg::compiler::overlay_schema::json_schema());
            ExitCode::SUCCESS
        }
        Command::Diff {
            old,
            new,
            base,
            format,
            fail_on,
            no_cache,
        } => diff::diff(old, new, base, format, fail_on, no_cache),
        #[cfg(feature = "mcp")]
        Command::Import(args) => mcp::import(args),
        #[cfg(feature = "mcp")]
        Command::Serve(args) => mcp::serve(*args),
        #[cfg(feature = "mcp")]
        Command::Approve(args) => mcp::approve(args),
        #[cfg(feature = "mcp")]
        Command::Token(args) => mcp::token(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_of_a_missing_feature_is_named_with_it() {
        let without = |_: &str| false;
        assert_eq!(missing_feature("serve", &without), Some(("serve", "mcp")));
        assert_eq!(missing_feature("search", &without), None);
        assert_eq!(missing_feature("serve", &|_: &str| true), None);
        assert!(version().starts_with(env!("CARGO_PKG_VERSION")));
        assert!(args::is_command("build") && args::is_command("serve"));
        assert!(!args::is_command("onto.task.list"));
    }
}
