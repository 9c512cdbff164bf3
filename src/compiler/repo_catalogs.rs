//! The repo's own catalogs, compiled for the library's unit tests (test builds only).

use super::compile;
use std::path::Path;

/// The repo's own and vendored catalogs the emitters' unit tests check their output on (every
/// schema feature, real MCP servers' tool lists); the fleets are added where a test can afford
/// them.
pub(crate) const REPO_CATALOGS: [&str; 5] = [
    "definitions",
    "examples/universal-agent/definitions",
    "tests/fixture/definitions",
    "tests/catalogs/github",
    "tests/catalogs/reference-servers",
];

/// The two vendored fleets (70 and 491 MCP servers), for the unit tests that can afford them.
pub(crate) const FLEET_CATALOGS: [&str; 2] = [
    "tests/catalogs/fleet/livemcp",
    "tests/catalogs/fleet/toolsdk",
];

/// [`REPO_CATALOGS`] and then [`FLEET_CATALOGS`].
pub(crate) fn repo_and_fleet_catalogs() -> impl Iterator<Item = &'static str> {
    REPO_CATALOGS.into_iter().chain(FLEET_CATALOGS)
}

/// A folder of this repo (`definitions`, `tests/catalogs/github`, ...), compiled: what the
/// emitters' unit tests check their output on.
pub(crate) fn compile_repo_catalog(dir: &str) -> crate::model::registry::Registry {
    let defs = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    compile(&defs)
        .registry
        .unwrap_or_else(|| panic!("{dir} compiles"))
}
