//! What the index makes of one op's text ([`OpWords`]): each field's words and the words of the
//! op's structure. Made op by op, so the search emitter finds an unchanged op's words in its
//! build's memo instead of tokenizing every op's text again (most of the index's build time).
//! Kept as one text per op, not a list of words: a fleet's ops' words held at once as separate
//! strings were tens of megabytes.

use super::{field_texts, FIELDS};
use crate::model::registry::{OpRecord, Registry};
use crate::runtime::search::tokenize;

/// The lists an op's words have: the fields ([`field_texts`]'s order), then the entity's words
/// (singular, then plural), the action's, and the segments' between them (`tree` in
/// `onto.document.tree.get`).
const LISTS: usize = FIELDS + 3;

/// One op's words, as the index reads them: one line per list, words apart by single spaces.
/// `tokenize` makes words of letters and digits only, so no word holds a space or a line break.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpWords {
    text: String,
}

impl OpWords {
    /// The words of op `r` of `reg`. Besides the op's record they depend only on its entity's
    /// plural ([`OpWords::plural`]).
    pub fn of(reg: &Registry, r: &OpRecord) -> OpWords {
        let mut entity = r.entity.as_deref().map(tokenize).unwrap_or_default();
        if let Some(plural) = Self::plural(reg, r) {
            entity.extend(tokenize(plural));
        }
        let segs: Vec<&str> = r.op.split('.').collect();
        let skip = if r.entity.is_some() { 2 } else { 1 };
        let qualifier: Vec<String> = segs[skip.min(segs.len())..segs.len().saturating_sub(1)]
            .iter()
            .flat_map(|s| tokenize(s))
            .collect();
        let lists = field_texts(r)
            .into_iter()
            .map(|(_, text)| tokenize(&text))
            .chain([entity, tokenize(&r.action), qualifier]);
        let mut text = String::new();
        for (k, list) in lists.enumerate() {
            if k > 0 {
                text.push('\n');
            }
            for (i, w) in list.iter().enumerate() {
                debug_assert!(!w.is_empty() && !w.contains([' ', '\n']), "{w:?}");
                if i > 0 {
                    text.push(' ');
                }
                text.push_str(w);
            }
        }
        OpWords { text }
    }

    /// The plural of op `r`'s entity, as its group names it: all of the registry an op's words
    /// read besides the op's own record.
    pub fn plural<'r>(reg: &'r Registry, r: &OpRecord) -> Option<&'r str> {
        let e = r.entity.as_ref()?;
        reg.tree.get(&r.group)?.entities.get(e)?.plural.as_deref()
    }

    /// The words as text (what the memo keeps).
    pub fn as_text(&self) -> &str {
        &self.text
    }

    /// Words kept as [`OpWords::as_text`] gave them; `None` for text it never gives (another
    /// number of lines, an empty word).
    pub fn from_text(text: &str) -> Option<OpWords> {
        let lines: Vec<&str> = text.split('\n').collect();
        let whole = lines.len() == LISTS
            && lines
                .iter()
                .all(|l| l.is_empty() || l.split(' ').all(|w| !w.is_empty()));
        whole.then(|| OpWords {
            text: text.to_string(),
        })
    }

    /// Each list's words, in order.
    pub(super) fn lists(&self) -> impl Iterator<Item = impl Iterator<Item = &str>> {
        self.text
            .split('\n')
            .map(|line| line.split(' ').filter(|w| !w.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every op's words of the repo's generated registries read back as made, list by list as
    /// `tokenize` makes them, and text the form never takes is refused.
    #[test]
    fn words_read_back_as_made_and_other_text_is_refused() {
        let mut ops = 0;
        for dir in [
            "generated",
            "tests/fixture/generated",
            "examples/universal-agent/generated",
        ] {
            let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(dir)
                .join("registry.json");
            let reg = Registry::from_slice(&std::fs::read(file).unwrap()).unwrap();
            for r in reg.ops.values() {
                let w = OpWords::of(&reg, r);
                assert_eq!(OpWords::from_text(w.as_text()).as_ref(), Some(&w));
                let lists: Vec<Vec<&str>> = w.lists().map(Iterator::collect).collect();
                assert_eq!(lists.len(), LISTS);
                for (f, (_, text)) in field_texts(r).iter().enumerate() {
                    assert_eq!(lists[f], tokenize(text), "{} field {f}", r.op);
                }
                assert_eq!(lists[FIELDS + 1], tokenize(&r.action), "{}", r.op);
                ops += 1;
            }
        }
        assert!(ops > 100, "{ops} ops");
        let good = ["a b"; LISTS].join("\n");
        assert!(OpWords::from_text(&good).is_some());
        for bad in [
            String::new(),
            format!("{good}\nmore"),
            good.rsplit_once('\n').unwrap().0.to_string(),
            good.replacen("a b", "a  b", 1),
            good.replacen("a b", " a", 1),
        ] {
            assert_eq!(OpWords::from_text(&bad), None, "{bad:?}");
        }
    }
}
