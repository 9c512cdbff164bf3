//! The per-op memo emitters share: each op's record as a digest, computed once per build, and
//! [`PageMemo`], where an emitter finds what an earlier build made for an unchanged op (a help
//! or docs page, its TypeScript, its Rust types, its search words) by that digest instead of by
//! the inputs it would make it from.

use crate::model::registry::Registry;

/// Each op's record as a digest: a blake3 of the whole record as serialized (every field, so
/// anything in it that shapes a page changes the digest).
pub(crate) struct OpDigests(std::collections::HashMap<String, [u8; 32]>);

impl OpDigests {
    pub(super) fn of(reg: &Registry) -> OpDigests {
        let digest = |r: &crate::model::registry::OpRecord| {
            let mut h = blake3::Hasher::new();
            crate::model::canonical::hash_json(&mut h, r);
            *h.finalize().as_bytes()
        };
        let ops: Vec<&crate::model::registry::OpRecord> = reg.ops.values().collect();
        let digests = crate::compiler::parallel::map_in_order(&ops, |r| digest(r));
        OpDigests(
            ops.iter()
                .zip(digests)
                .map(|(r, d)| (r.op.clone(), d))
                .collect(),
        )
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
    /// few registry-wide things the page shows) and stamped with `version`.
    pub(crate) fn page(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
        version: &str,
        compute: impl FnOnce() -> String,
    ) -> String {
        match self.input(r, context) {
            Some(input) => self
                .memo
                .get_or_compute_stamped(step, &input, version, compute),
            None => compute(),
        }
    }

    /// `page` for a page that carries no registry version (a docs page of one op).
    pub(crate) fn unstamped_page(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
        compute: impl FnOnce() -> String,
    ) -> String {
        match self.input(r, context) {
            Some(input) => self.memo.get_or_compute(step, &input, compute).to_string(),
            None => compute(),
        }
    }

    /// `step`'s value for op `r` (shaped by its record and `context`) when an earlier build or
    /// this one computed it.
    pub(crate) fn get(
        &self,
        step: &str,
        r: &crate::model::registry::OpRecord,
        context: &[&str],
    ) -> Option<std::sync::Arc<str>> {
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
