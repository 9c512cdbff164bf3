//! The per-op memo emitters share: each op's record as a digest, computed once per build, and
//! [`PageMemo`], where an emitter finds what an earlier build made for an unchanged op (a help
//! or docs page, its TypeScript, its Rust types, its search words) by that digest instead of by
//! the inputs it would make it from.

use crate::model::registry::Registry;

/// Each op's record as a digest: a blake3 of the op's text in `registry.json`
/// ([`op_artifact_text`]: every field, so anything in the record that shapes a page changes the
/// digest).
///
/// [`op_artifact_text`]: crate::model::canonical::op_artifact_text
pub(crate) struct OpDigests(std::collections::HashMap<String, [u8; 32]>);

impl OpDigests {
    /// The digests, and the texts they were taken of (in the registry's op order), which
    /// `registry.json` is then put together from instead of serializing each record again.
    pub(super) fn with_texts(reg: &Registry) -> (OpDigests, Vec<String>) {
        let ops: Vec<&crate::model::registry::OpRecord> = reg.ops.values().collect();
        let made = crate::compiler::parallel::map_in_order(&ops, |r| {
            let text = crate::model::canonical::op_artifact_text(r);
            let digest = *blake3::hash(text.as_bytes()).as_bytes();
            (digest, text)
        });
        let mut digests = std::collections::HashMap::with_capacity(ops.len());
        let mut texts = Vec::with_capacity(ops.len());
        for (r, (digest, text)) in ops.iter().zip(made) {
            digests.insert(r.op.clone(), digest);
            texts.push(text);
        }
        (OpDigests(digests), texts)
    }
}

/// Where an emitter finds an unchanged op's page from an earlier build (see
/// [`Memo::get_or_compute_stamped`](crate::compiler::memo::Memo::get_or_compute_stamped)).
pub(crate) struct PageMemo<'a> {
    pub(super) memo: &'a crate::compiler::memo::Memo,
    pub(super) digests: &'a OpDigests,
}

impl PageMemo<'_> {
    /// `step`'s text for op `r`, whose page is shaped by the op's record and by `context` (the
    /// few registry-wide things the page shows) and stamped with `version`; with its origin:
    /// a digest of what shapes it but the version (`None` for an op without a digest).
    pub(crate) fn page(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
        version: &str,
        compute: impl FnOnce() -> String,
    ) -> (String, Option<crate::model::help::PageOrigin>) {
        let Some(input) = self.input(r, context) else {
            return (compute(), None);
        };
        let origin = origin_of(step, &input);
        let text = self
            .memo
            .get_or_compute_stamped(step, &input, version, compute);
        (text, Some(origin))
    }

    /// `page` for a text that carries no registry version (a docs page of one op, its
    /// TypeScript, its tool in `direct.json`), as the memo holds it: a caller copies it into
    /// its file without a copy of its own first.
    pub(crate) fn unstamped_text(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
        compute: impl FnOnce() -> String,
    ) -> crate::compiler::memo::Text {
        match self.input(r, context) {
            Some(input) => self.memo.get_or_compute(step, &input, compute),
            None => std::sync::Arc::<str>::from(compute()).into(),
        }
    }

    /// The origin of op `r`'s text of `step` (see [`PageMemo::page`]): a digest of what shapes
    /// it, for a later step to remember what it derives from that text by (`None` for an op
    /// without a digest).
    pub(crate) fn origin(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
    ) -> Option<crate::model::help::PageOrigin> {
        self.input(r, context).map(|input| origin_of(step, &input))
    }

    /// `step`'s value for op `r` (shaped by its record and `context`) when an earlier build or
    /// this one computed it.
    pub(crate) fn get(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
    ) -> Option<crate::compiler::memo::Text> {
        self.memo.get(step, &self.input(r, context)?)
    }

    /// Remembers `step`'s value for op `r` (`value` runs unless the memo already has one).
    pub(crate) fn put(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
        value: impl FnOnce() -> String,
    ) {
        if let Some(input) = self.input(r, context) {
            self.memo.get_or_compute(step, &input, value);
        }
    }

    /// The memo input of op `r`'s page: the op's digest, then each part of `context`
    /// length-prefixed, so no two contexts read the same.
    fn input(&self, r: &crate::model::registry::OpRecord, context: &[&str]) -> Option<Vec<u8>> {
        let digest = self.digests.0.get(&r.op)?;
        let mut input = digest.to_vec();
        for part in context {
            input.extend_from_slice(&(part.len() as u64).to_le_bytes());
            input.extend_from_slice(part.as_bytes());
        }
        Some(input)
    }
}

/// The origin of a text: its step, length-prefixed, and the memo input it is made from.
fn origin_of(step: &str, input: &[u8]) -> crate::model::help::PageOrigin {
    let mut origin = blake3::Hasher::new();
    origin.update(&(step.len() as u64).to_le_bytes());
    origin.update(step.as_bytes());
    origin.update(input);
    *origin.finalize().as_bytes()
}
