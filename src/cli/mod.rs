//! The `toolreg` command line: [`args`] defines every flag; one module per command family
//! ([`build`]: build, check, lint, init, report, policy; [`query`]: help, search, exec, eval;
//! [`diff`]; [`mcp`]: import, serve, approve, token) and [`shared`] for what they all print.
//!
//! Exit codes: 0 ok; 1 `check` found stale output or `lint` found errors; 2 bad input or usage.

mod args;
mod build;
mod diff;
#[cfg(feature = "mcp")]
mod mcp;
mod query;
mod shared;

use args::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

/// Parses the command line and runs the command; `batch` is called first by every command
/// that runs once and exits (not by the long-running `serve`).
pub fn run(batch: impl FnOnce()) -> ExitCode {
    let cli = Cli::parse();
    #[cfg(feature = "mcp")]
    let long_running = matches!(cli.command, Command::Serve(_));
    #[cfg(not(feature = "mcp"))]
    let long_running = false;
    if !long_running {
        batch();
    }
    match cli.command {
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
        } => {
            if search_text {
                query::search_text(path, registry)
            } else {
                query::help(path, registry, format, include_schemas, no_examples)
            }
        }
        Command::Search {
            query,
            registry,
            limit,
            format,
            ranking,
        } => query::search(query, registry, limit, format, ranking),
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
            ranking,
        } => query::eval(queries, registry, k, format, compare, out_of_scope, ranking),
        Command::Init {
            defs,
            force,
            stdout,
        } => build::init(&defs, force, stdout),
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
