//! A one-line progress indicator on stderr for steps that take more than a second (a fleet
//! build, an import, an eval over thousands of queries). Only at a terminal and without
//! `--quiet`: a pipe or a CI log gets nothing, so output stays byte-identical there. The line is
//! cleared before anything else is printed.

use std::io::Write as _;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Nothing is drawn before this much time has passed: quick commands never flicker.
const DELAY: Duration = Duration::from_secs(1);

/// [`DELAY`], or `TOOLREG_PROGRESS_AFTER_MS` when set (a demo, or a test that must see the
/// line whatever the machine's speed: a build that took over a second once may not on the
/// next machine).
fn delay() -> Duration {
    std::env::var("TOOLREG_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(DELAY, Duration::from_millis)
}
const TICK: Duration = Duration::from_millis(120);
const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

struct State {
    stage: String,
    done: bool,
}

/// The indicator of one command; dropping it (or [`Progress::finish`]) clears the line.
pub(super) struct Progress {
    shared: Option<Arc<(Mutex<State>, Condvar)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts the indicator for `what` (`building definitions/`), shown only at a terminal.
    pub(super) fn start(what: &str, quiet: bool) -> Progress {
        if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return Progress {
                shared: None,
                thread: None,
            };
        }
        let shared = Arc::new((
            Mutex::new(State {
                stage: String::new(),
                done: false,
            }),
            Condvar::new(),
        ));
        let theirs = Arc::clone(&shared);
        let what = toolreg::diag::escape_controls(what);
        let delay = delay();
        let thread = std::thread::spawn(move || {
            let (lock, wake) = &*theirs;
            let started = Instant::now();
            let mut drawn = false;
            let mut frame = 0;
            let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                let wait = if drawn { TICK } else { delay };
                state = wake
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                if state.done {
                    break;
                }
                let elapsed = started.elapsed();
                if elapsed < delay {
                    continue;
                }
                let stage = if state.stage.is_empty() {
                    String::new()
                } else {
                    format!(": {}", state.stage)
                };
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{} {what}{stage} ({:.1} s)",
                    FRAMES[frame % FRAMES.len()],
                    elapsed.as_secs_f64()
                );
                let _ = err.flush();
                frame += 1;
                drawn = true;
            }
            if drawn {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
            }
        });
        Progress {
            shared: Some(shared),
            thread: Some(thread),
        }
    }

    /// What the command is doing now (`writing generated/`).
    pub(super) fn stage(&self, stage: &str) {
        if let Some(shared) = &self.shared {
            let mut state = shared.0.lock().unwrap_or_else(|p| p.into_inner());
            state.stage = toolreg::diag::escape_controls(stage);
        }
    }

    /// Clears the line (if one was drawn) and stops; call before printing anything else.
    pub(super) fn finish(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.0.lock().unwrap_or_else(|p| p.into_inner()).done = true;
            shared.1.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
