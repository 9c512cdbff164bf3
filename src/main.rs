//! The `toolreg` command. All logic lives in the library; this only maps it to exit codes.

mod cli;

use std::process::ExitCode;

// See Cargo.toml (`mimalloc`): the compiler allocates heavily from several threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc reserves its memory in arenas, the first 1 GiB by default, and asks for transparent
/// huge pages on them, so a process that uses a few dozen MB touches more 2 MiB pages than it
/// fills. Arenas of 64 MiB (more are reserved as needed, growing from the eighth) measured, at
/// 10,000 ops, a cold search at 52 MiB instead of 58 and a full build at 479 MiB instead of 499,
/// in the same time (guide: runtime and build performance). mimalloc reserves its first arena
/// at the first allocation, which Rust's runtime makes before `main`, so this runs from the ELF
/// initializers, before any allocation (it allocates nothing: `getenv`, then a store into
/// mimalloc's option table). `MIMALLOC_ARENA_RESERVE` set in the environment is left to
/// mimalloc. The option's number is checked by `tests/cli.rs`, which reads mimalloc's verbose
/// start-up.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array.00090"]
static SMALL_ARENAS: extern "C" fn() = {
    extern "C" fn small_arenas() {
        // `mi_option_arena_reserve` in mimalloc's `mi_option_e` (see MI_OPTION_PURGE_DELAY); in
        // KiB.
        const MI_OPTION_ARENA_RESERVE: libmimalloc_sys::mi_option_t = 23;
        // SAFETY: `getenv` with a NUL-terminated name, before any thread exists; setting an
        // option only stores into mimalloc's static option table.
        unsafe {
            if libc::getenv(c"MIMALLOC_ARENA_RESERVE".as_ptr()).is_null() {
                libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_RESERVE, 64 * 1024);
            }
        }
    }
    small_arenas
};

/// For a command that runs once and exits: freed memory is returned to the OS only once it has
/// lain unused for 100 ms (mimalloc's default is 10 ms). At 10 ms, memory freed and soon reused
/// was returned and faulted back in over and over (on a 10,000-tool build that churn was a
/// tenth of the time, all of it in the kernel); never returning it cost that build about 140 MB
/// of peak, against under 5% more CPU for returning it (the guide's build performance). A cold
/// query (7-24 ms at 10,000 ops) ends before any memory is returned. `MIMALLOC_PURGE_DELAY` set
/// in the environment is left to mimalloc (`-1`: never). The long-running `serve` keeps the
/// default.
fn batch_allocator(compiles: bool) {
    set_purge_delay(100);
    if compiles {
        no_huge_pages();
    }
}

/// Sets how long freed memory lies unused before mimalloc returns it to the OS (milliseconds;
/// -1: never), unless `MIMALLOC_PURGE_DELAY` in the environment says it.
fn set_purge_delay(ms: std::ffi::c_long) {
    // `mi_option_purge_delay` in mimalloc's `mi_option_e`; mimalloc keeps option numbers stable
    // (retired ones stay as `deprecated_` placeholders).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide option in mimalloc's option table, which it reads at
        // each later purge.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
    }
}

/// For a rebuild, one that finds a memo this binary saved (after an upgrade a build recomputes
/// everything, as a full build does): freed memory is never returned to the OS until the
/// process ends. Such a build runs about a second and frees much of what it took
/// (the definitions' parsed text, the memo's read buffers) just before it takes as much again
/// for the outputs; returned after 100 ms (`batch_allocator`), that memory was faulted back in:
/// at 10,000 tools, one tool changed, 189,000 faults against 136,000 and 1.84 s of CPU against
/// 1.72 s (wall 1.04 s against 0.96 s), for a peak of 600 MB instead of 530 (the guide's build
/// performance). A full build keeps returning it: kept, its peak passed 500 MiB (480 -> 580 MB)
/// for 5% of CPU. `MIMALLOC_PURGE_DELAY` set in the environment is left to mimalloc.
pub(crate) fn keep_freed_memory() {
    set_purge_delay(-1);
}

/// mimalloc asks the kernel for transparent huge pages on its arenas. On the virtual machines
/// CI runs on, a fresh 2 MiB page of a compile's hundreds of MB costs far more than 512 small
/// ones (host memory is handed back while free and faulted in again): a 10,000-tool build spent
/// 3.5 s of CPU in the kernel zeroing pages with them and 1.6 s without, in the same run, its
/// user time unchanged. A query keeps them: a cold search of the same registry took 40 ms with
/// them and 66 ms without (its few MB fault 512 times as often), and so does a `build` that finds
/// nothing changed (it reads its outputs to prove it; it calls this only once it must compile).
/// `MIMALLOC_ALLOW_THP=1` keeps them for a compile too (where they are cheap, as on most bare
/// metal).
pub(crate) fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: sets this process's THP flag (checked at each later page fault); no memory is
        // touched. Failure (an old kernel) leaves huge pages as they were, which is harmless.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
}

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
    match std::panic::catch_unwind(|| cli::run(batch_allocator)) {
        Ok(code) => code,
        Err(_) => ExitCode::from(2),
    }
}
