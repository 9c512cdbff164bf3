//! toolreg: a build-time registry compiler for LLM tool catalogs, and the small runtime that
//! serves what it compiled.
//!
//! - [`registry`]: the registry IR and `registry.json` loading (always available; no compiler
//!   dependencies, so a runtime can depend on `toolreg` with `default-features = false`).
//! - [`compiler`] (feature `compiler`): definitions + `toolreg.toml` -> classified, normalized,
//!   stamped [`registry::Registry`], with [`diag`] diagnostics.
//! - [`emit`], [`output`], [`Builder`] (feature `compiler`): artifacts, all-or-nothing writing and
//!   the staleness check, and the `build.rs` API.

pub mod diag;
pub mod help;
pub mod registry;
pub mod resolve;
pub mod schema;
pub mod text;

#[cfg(feature = "runtime")]
pub mod runtime;

#[cfg(feature = "compiler")]
pub mod builder;
#[cfg(feature = "compiler")]
pub mod canonical;
#[cfg(feature = "compiler")]
pub mod compiler;
#[cfg(feature = "compiler")]
pub mod emit;
#[cfg(feature = "compiler")]
pub mod output;
#[cfg(feature = "compiler")]
pub mod report;
#[cfg(feature = "compiler")]
pub mod surfaces;

#[cfg(feature = "compiler")]
pub use builder::Builder;
pub use registry::Registry;
