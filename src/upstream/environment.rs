//! What a stdio upstream inherits from toolreg's environment: only what a program needs to run
//! and what its `[upstreams.NAME] env` lists (issue 35, item 9).

use crate::model::registry::Upstream;

/// Variables every stdio upstream gets from toolreg's environment, when set: what a program
/// needs to find its tools, its home and its locale. Everything else must be listed in the
/// upstream's `env`.
pub const BASE_ENVIRONMENT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TZ",
    "LANG",
    "LANGUAGE",
    "SYSTEMROOT",
];

/// The environment a stdio upstream starts with: [`BASE_ENVIRONMENT`], the locale's `LC_*`
/// variables, and the variables its `env` lists; nothing else.
pub fn upstream_environment(spec: &Upstream) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            BASE_ENVIRONMENT.contains(&k.as_ref())
                || k.starts_with("LC_")
                || spec.env.iter().any(|e| *e == k)
        })
        .collect()
}
