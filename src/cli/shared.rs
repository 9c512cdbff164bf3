//! What every command family shares: printing diagnostics and JSON, paths as shown, and
//! the output folder made whole before it is read.

use super::args::Format;
use std::path::PathBuf;
use toolreg::diag::Diagnostics;
use toolreg::output;

/// Pretty JSON on stdout with every character a terminal could act on or hide (DEL, C1
/// controls, bidi, zero-width and tag characters; serde_json escapes the C0 ones) written as a
/// `\uXXXX` escape: the same JSON, safe to print.
pub(super) fn print_json(v: &impl serde::Serialize) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    println!("{}", toolreg::diag::escape_json_text(&text));
}

pub(super) fn show(diags: &Diagnostics, format: Format, verbose: bool) {
    match format {
        Format::Text if verbose => eprint!("{}", diags.render_text()),
        Format::Text => eprint!("{}", diags.render_text_brief()),
        Format::Json => eprint!("{}", diags.render_json_lines()),
    }
}

pub(super) fn display(p: &std::path::Path) -> String {
    p.to_string_lossy()
        .replace('\\', "/")
        .trim_end_matches('/')
        .to_string()
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
