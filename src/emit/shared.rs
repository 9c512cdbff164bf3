//! What several emitters need, built once per build by whichever asks first: the help pages
//! (they feed `help.json`, the report's page sizes and code mode's disclosure) and the memo's
//! op digests, with each op's `registry.json` text they are taken of.

use super::{help, Emitter, OpDigests, PageMemo, Settings};
use crate::model::registry::Registry;

/// What several emitters need, built once by whichever asks first (see the module's note).
pub(super) struct Shared<'a> {
    pub(super) settings: &'a Settings,
    /// The help pages as text, built by the first emitter that asks, and let go once the last
    /// one that reads them is done (`readers`): at 10,000 ops they are about 50 MB that the other
    /// emitters' outputs would otherwise pile on top of.
    help: std::sync::Mutex<HelpPages>,
    op_digests: std::sync::OnceLock<OpDigests>,
    /// Each op's text in `registry.json`, made with the digests when the registry emitter runs
    /// and taken by it (see [`super::registry_json::pieces_from_texts`]).
    op_texts: std::sync::Mutex<Option<Vec<String>>>,
    keep_op_texts: bool,
}

/// The help pages' state in [`Shared`].
enum HelpPages {
    /// Not built yet; this many emitters of the run will read them.
    Unbuilt { readers: usize },
    Built {
        pages: std::sync::Arc<crate::model::help::PageTexts>,
        readers: usize,
    },
    /// Every reader is done (a late `help` call builds them again).
    Released,
}

impl Shared<'_> {
    pub(super) fn new<'a>(settings: &'a Settings, emitters: &[Emitter]) -> Shared<'a> {
        // `emit_with` itself reads them after every emitter when codemode's disclosure is made.
        let keep = emitters.contains(&Emitter::Codemode);
        let readers = emitters
            .iter()
            .filter(|e| matches!(e, Emitter::Help | Emitter::Report))
            .count()
            + usize::from(keep);
        Shared {
            settings,
            help: std::sync::Mutex::new(HelpPages::Unbuilt { readers }),
            op_digests: std::sync::OnceLock::new(),
            op_texts: std::sync::Mutex::new(None),
            // Only when another emitter reads the memo's digests: a registry alone is written
            // in one go (making the texts apart costs it time and memory).
            keep_op_texts: emitters.contains(&Emitter::Registry)
                && emitters.iter().any(|e| e.reads_op_digests()),
        }
    }

    /// The help pages (built under the lock: a second emitter that asks meanwhile waits for
    /// them rather than building them too).
    pub(super) fn help(&self, reg: &Registry) -> std::sync::Arc<crate::model::help::PageTexts> {
        let mut state = self.help.lock().expect("help pages lock");
        match &*state {
            HelpPages::Built { pages, .. } => pages.clone(),
            HelpPages::Unbuilt { readers } => {
                let readers = *readers;
                let pages =
                    std::sync::Arc::new(help::build_texts(reg, self.page_memo(reg).as_ref()));
                *state = HelpPages::Built {
                    pages: pages.clone(),
                    readers,
                };
                pages
            }
            HelpPages::Released => {
                std::sync::Arc::new(help::build_texts(reg, self.page_memo(reg).as_ref()))
            }
        }
    }

    /// One reader of the help pages is done; the last one lets them go.
    pub(super) fn done_with_help(&self) {
        let mut state = self.help.lock().expect("help pages lock");
        if let HelpPages::Built { readers, .. } = &mut *state {
            *readers = readers.saturating_sub(1);
            if *readers == 0 {
                *state = HelpPages::Released;
            }
        }
    }

    /// The memo of per-op pages, when the build keeps one.
    pub(super) fn page_memo(&self, reg: &Registry) -> Option<PageMemo<'_>> {
        let memo = self.settings.memo.as_deref()?;
        let digests = self.op_digests.get_or_init(|| {
            let (digests, texts) = OpDigests::with_texts(reg);
            if self.keep_op_texts {
                *self.op_texts.lock().expect("op texts lock") = Some(texts);
            }
            digests
        });
        Some(PageMemo { memo, digests })
    }

    /// Each op's text in `registry.json`, when the build keeps a memo (whose digests are taken
    /// of them); `None` otherwise, or once taken.
    pub(super) fn take_op_texts(&self, reg: &Registry) -> Option<Vec<String>> {
        if !self.keep_op_texts {
            return None;
        }
        self.page_memo(reg)?;
        self.op_texts.lock().expect("op texts lock").take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The help pages are let go once every emitter of the run that reads them is done, and
    /// kept when `emit_with` reads them afterwards (codemode's disclosure).
    #[test]
    fn the_help_pages_are_released_after_their_last_reader() {
        let reg = crate::compiler::compile_repo_catalog("definitions");
        let settings = Settings::default();
        let released =
            |shared: &Shared| matches!(*shared.help.lock().unwrap(), HelpPages::Released);
        let shared = Shared::new(
            &settings,
            &[Emitter::Registry, Emitter::Help, Emitter::Report],
        );
        let pages = shared.help(&reg);
        shared.done_with_help();
        assert!(!released(&shared), "the report still reads them");
        let again = shared.help(&reg);
        assert!(std::sync::Arc::ptr_eq(&pages, &again), "built once");
        shared.done_with_help();
        assert!(released(&shared));
        // A late reader still gets the same pages, built again.
        assert_eq!(*shared.help(&reg), *pages);

        let shared = Shared::new(&settings, &[Emitter::Help, Emitter::Codemode]);
        shared.help(&reg);
        shared.done_with_help();
        assert!(!released(&shared), "emit_with reads them for codemode");
    }
}
