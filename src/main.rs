//! The `toolreg` command. All logic lives in the library; this only maps it to exit codes.

mod cli;
#[cfg(feature = "mcp")]
mod cli_mcp;

use std::process::ExitCode;

// See Cargo.toml (`mimalloc`): the compiler allocates heavily from several threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // A panic is a toolreg bug, never a verdict on the input: report it as an input/usage-class
    // failure (2) instead of Rust's 101, with a pointer to where to report it.
    std::panic::set_hook(Box::new(|info| {
        // `toolreg help | head`: the reader left; that is no bug, and nothing is left to say.
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            return;
        }
        eprintln!("error: toolreg hit an internal error: {info}");
        eprintln!(
            "   = help: this is a bug in toolreg; please report it with the input that caused it"
        );
    }));
    match std::panic::catch_unwind(cli::run) {
        Ok(code) => code,
        Err(_) => ExitCode::from(2),
    }
}
