//! toolreg: a build-time registry compiler for LLM tool catalogs, and the small runtime that
//! serves what it compiled.
//!
//! **Map of the tree.** `src/model/` is the shared model every layer reads ([`registry`], the
//! IR; [`help`], [`resolve`], [`schema`], [`text`], [`diag`], [`canonical`]); it imports
//! nothing above it. The build runs `src/compiler/` (load -> normalize -> classify, with
//! `infer/` -> enrich -> lint and the poisoning lint -> IR -> stamp; beside it the surfaces and
//! their token report), then `src/emit/` (one module per artifact, reading only the IR), then
//! `src/write/` (all-or-nothing writing and the `build.rs` API); `src/diff/` compares two
//! registries. `src/runtime/` serves a compiled registry (exec, search, discovery)
//! and never imports the compiler; `src/upstream/` (MCP clients, import) and `src/serve/` (the
//! MCP server, its auth, limits, drift gate) sit on top of it; `src/trust/` holds what is approved
//! (launch specs, tool pins, `toolreg.lock`). `src/cli/` is the command line: `args.rs` defines
//! every flag, one module per command family. Layers, lowest first: model; semantic, trust;
//! runtime beside compiler; emit; write, diff, upstream; serve. A module imports only from a
//! lower layer and no two modules import each other (`tests/architecture.rs` checks both). The
//! guide's "Repository layout" shows the same tree, and a test keeps it true.
//!
//! Always available (serde, serde_json and strsim only):
//! - [`registry`]: the registry IR and `registry.json` loading; [`help`]: help page lookup;
//!   [`resolve`]: op names as models spell them; [`diag`]: diagnostics; [`canonical`]: sorted,
//!   pretty JSON bytes.
//!
//! Feature `runtime`:
//! - [`runtime`]: the gateway (exec with validation, scopes, idempotency; search; seed 001
//!   discovery; seed 004 selection; eval).
//!
//! Feature `compiler` (the pipeline `load -> normalize -> classify -> enrich -> lint -> IR ->
//! stamp -> emit -> write | check`):
//! - [`compiler`]: definitions + `toolreg.toml` -> classified, normalized, stamped
//!   [`registry::Registry`] with every diagnostic;
//! - [`surfaces`] and [`report`] (in `compiler/`): the model-facing tool lists and their token
//!   counts;
//! - [`emit`]: registry.json, help.json, surfaces, report, Rust, TypeScript, docs;
//! - [`output`]: all-or-nothing writing and the staleness check; [`Builder`]: the build.rs API.
//! - [`diff`]: what a registry change breaks, and what it costs the prompt caches.
//! - [`trust`]: which upstream commands this machine approved to run, the tool pins and
//!   `toolreg.lock`, and credentials kept out of URLs that are written or shown.

pub mod model;
// The model's modules keep the paths they had at the crate root.
pub use model::{canonical, diag, help, registry, resolve, schema, text};

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
pub mod compiler;
#[cfg(feature = "compiler")]
pub mod diff;
#[cfg(feature = "compiler")]
pub mod emit;
#[cfg(feature = "compiler")]
pub mod write;
#[cfg(feature = "compiler")]
pub use write::{builder, output};
// Compiler helpers that kept their crate-root paths when they moved into `compiler/`.
#[cfg(feature = "compiler")]
pub use compiler::{report, surfaces};
#[cfg(feature = "compiler")]
pub mod trust;

#[cfg(feature = "compiler")]
pub use builder::Builder;
pub use registry::Registry;
