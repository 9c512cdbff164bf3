//! What toolreg will run and what it keeps to itself, for the upstream MCP servers a catalog
//! names in `[upstreams]`.
//!
//! An upstream entry is code: `command` and `args` start a program, `url` sends requests. A
//! definitions folder arrives in pull requests, so toolreg never runs an upstream just because
//! the folder says so: [`approvals`] keeps, outside any reviewed folder, the digests of the
//! launch specs a person on this machine approved, and `serve` and `import --check` run nothing
//! else. [`secrets`] keeps credentials out of committed files and answers: a URL carrying one is
//! refused, and every URL toolreg prints is redacted.

pub mod approvals;
pub mod launch;
pub mod lock;
pub mod pin;
pub mod secrets;

pub use approvals::{launch_digest, launch_line, ApprovalError, Approvals, Unapproved};
pub use launch::{provenance, Provenance};
pub use secrets::{looks_like_secret, redact_url, redact_urls_in, strip_urls_in, url_credentials};
