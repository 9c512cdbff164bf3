//! The shared model: what every layer reads and nothing in it reads from a layer above.
//!
//! [`registry`] is the IR and `registry.json` loading; [`help`] looks pages up in `help.json`;
//! [`resolve`] turns op names as models spell them into ops; [`schema`] reads JSON Schema
//! shapes; [`text`] holds the small text helpers; [`diag`] is the diagnostics every command
//! prints; [`canonical`] is the one way values become bytes (sorted keys, the hashed form). It needs serde, serde_json and strsim only, so an agent that depends on the registry
//! alone pulls in nothing else. Each module is re-exported at the crate root
//! (`toolreg::registry`, ...), the paths it had before the move.

pub mod canonical;
pub mod diag;
pub mod help;
pub mod lookup;
pub mod operation;
pub mod registry;
pub mod resolve;
pub mod schema;
pub mod text;
