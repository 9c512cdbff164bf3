//! toolreg: a build-time registry compiler for LLM tool catalogs, and the small runtime that
//! serves what it compiled.
//!
//! Always available (serde, serde_json and strsim only):
//! - [`registry`]: the registry IR and `registry.json` loading; [`help`]: help page lookup;
//!   [`resolve`]: op names as models spell them; [`diag`]: diagnostics.
//!
//! Feature `runtime`:
//! - [`runtime`]: the gateway (exec with validation, scopes, idempotency; search; seed 001
//!   discovery; seed 004 selection; eval).
//!
//! Feature `compiler` (the pipeline `load -> normalize -> classify -> enrich -> lint -> IR ->
//! stamp -> emit -> write | check`):
//! - [`compiler`]: definitions + `toolreg.toml` -> classified, normalized, stamped
//!   [`registry::Registry`] with every diagnostic;
//! - [`surfaces`] and [`report`]: the model-facing tool lists and their token counts;
//! - [`emit`]: registry.json, help.json, surfaces, report, Rust, TypeScript, docs;
//! - [`output`]: all-or-nothing writing and the staleness check; [`Builder`]: the build.rs API.
//! - [`diff`]: what a registry change breaks, and what it costs the prompt caches.
//! - [`trust`]: which upstream commands this machine approved to run, and credentials kept out
//!   of URLs that are written or shown.

pub mod diag;
pub mod help;
pub mod registry;
pub mod resolve;
pub mod schema;
pub mod text;

/// The compiled gateway as an MCP server (feature `mcp`).
#[cfg(feature = "mcp")]
pub mod serve;
/// MCP clients of upstream servers: import and forwarding (feature `mcp`).
#[cfg(feature = "mcp")]
pub mod upstream;

#[cfg(feature = "runtime")]
pub mod runtime;

#[cfg(feature = "semantic")]
pub mod semantic;

#[cfg(feature = "compiler")]
pub mod builder;
#[cfg(feature = "compiler")]
pub mod canonical;
#[cfg(feature = "compiler")]
pub mod compiler;
#[cfg(feature = "compiler")]
pub mod diff;
#[cfg(feature = "compiler")]
pub mod emit;
#[cfg(feature = "compiler")]
pub mod output;
#[cfg(feature = "compiler")]
mod parallel;
#[cfg(feature = "compiler")]
pub mod report;
#[cfg(feature = "compiler")]
pub mod surfaces;
#[cfg(feature = "compiler")]
pub mod trust;

#[cfg(feature = "compiler")]
pub use builder::Builder;
pub use registry::Registry;
