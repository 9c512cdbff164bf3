//! The `toolreg.lock` that `build` keeps beside the definitions and `check` verifies: made from
//! the compiled registry, written once the outputs are, and what changed in it said.

use super::shared::display;

/// The `toolreg.lock` a build keeps, made while the outputs are written (at 10,000 tools,
/// pinning, rendering and parsing the old lock to say what changed took a tenth of a second a
/// one-tool rebuild waited for), and written only once they are. (Made while the emitters ran
/// instead, it raised a full build's peak by about 17 MB and the rebuild was no faster.)
pub(super) struct LockUpdate {
    now: toolreg::trust::lock::Lock,
    text: String,
    /// The lock's text when this was made, and what changed from it, when it differs.
    previous: Option<String>,
    said: Option<String>,
}

impl LockUpdate {
    pub(super) fn prepare(defs: &std::path::Path, reg: &toolreg::Registry) -> LockUpdate {
        let now = toolreg::trust::lock::Lock::of(reg, defs);
        let text = now.render();
        let previous = std::fs::read_to_string(toolreg::trust::lock::path(defs)).ok();
        let said = (previous.as_deref() != Some(text.as_str()))
            .then(|| lock_change(defs, previous.as_deref(), &now, &text));
        LockUpdate {
            now,
            text,
            previous,
            said,
        }
    }

    /// Brings `toolreg.lock` up to date, saying what changed (its diff is what a reviewer
    /// approves). False when it could not be written (reported).
    pub(super) fn commit(&self, defs: &std::path::Path) -> bool {
        use toolreg::trust::lock::{self, Written};
        match lock::write_text(defs, &self.text) {
            Ok(Written::Unchanged) => true,
            Ok(Written::Replaced { previous }) => {
                // Said again only if the lock changed after it was prepared.
                let said = match &self.said {
                    Some(said) if previous == self.previous => said.clone(),
                    _ => lock_change(defs, previous.as_deref(), &self.now, &self.text),
                };
                eprintln!("{said}");
                true
            }
            Err(e) => {
                eprintln!("error: {e}");
                false
            }
        }
    }
}

/// What replacing the lock `previous` with `now` changes, as the build says it. The old lock is
/// parsed only for this: when a build leaves the lock as it was (most builds), parsing it was
/// 7% of a registry-only build at 10,000 tools.
fn lock_change(
    defs: &std::path::Path,
    previous: Option<&str>,
    now: &toolreg::trust::lock::Lock,
    now_text: &str,
) -> String {
    use toolreg::trust::lock::{self, LockDiff};
    let path = lock::path(defs);
    let plural = if now.tools.len() == 1 { "" } else { "s" };
    let diff = previous.and_then(|text| LockDiff::between_texts(text, now, now_text));
    match diff {
        // Else no lock to compare with: none, unreadable, or pinning no tool.
        Some((d, pinned)) if pinned > 0 => format!(
            "{}: {} tool{plural} pinned; review and commit the change:\n{}",
            display(&path),
            now.tools.len(),
            d.render().trim_end()
        ),
        _ => format!(
            "{}: {} tool{plural} pinned; review and commit it",
            display(&path),
            now.tools.len(),
        ),
    }
}

/// Whether the definitions' `toolreg.lock` pins exactly what they compile to; when not, says
/// what differs. A folder that keeps no lock (zero-config, no lock) is current.
pub(super) fn lock_is_current(defs: &std::path::Path, reg: &toolreg::Registry) -> bool {
    use toolreg::trust::lock::{self, Lock, LockDiff};
    let path = lock::path(defs);
    let fix = format!(
        "run `toolreg build --definitions {}`, review the change to the lock and commit it",
        display(defs)
    );
    let now = Lock::of(reg, defs);
    match Lock::read(defs) {
        Ok(Some(approved)) if approved == now => true,
        Ok(Some(approved)) => {
            eprint!(
                "error: `{}` is stale: the definitions differ from what was approved\n{}  help: {fix}\n",
                display(&path),
                LockDiff::between(&approved, &now).render()
            );
            false
        }
        Ok(None) if !lock_wanted(defs) => true,
        Ok(None) => {
            eprintln!("error: `{}` is missing\n  help: {fix}", display(&path));
            false
        }
        Err(e) => {
            eprintln!("error: {e}\n  help: {fix}");
            false
        }
    }
}

/// Whether `build` keeps a lock for `defs`: it has an overlay or already a lock.
pub(super) fn lock_wanted(defs: &std::path::Path) -> bool {
    defs.join(toolreg::compiler::overlay::OVERLAY_FILE)
        .is_file()
        || defs.join(toolreg::trust::lock::LOCK_FILE).is_file()
}
