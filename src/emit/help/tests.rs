//! The help pages' two ways of being made (as values, as text) agree to the byte.

use super::*;
use paging::compact;

use crate::compiler::compile_repo_catalog as compile;

/// `help.json` written from the pages as text is the file written from the pages as
/// values, byte for byte, and each text's compact form is the value's: on every catalog in
/// the repo (the fleet ones have paged directories), and on a registry with no pages. The
/// text path writes most op and entity pages without a `Value` (`direct.rs`), the `Value` path
/// serializes the same structs into values and pretty-prints those: the same bytes.
#[test]
fn texts_render_as_values_do() {
    let mut paged = 0;
    // Ops left to the `Value` path, then ops the text path made: all, with a policy,
    // aliases, a long enum, a range, a default, a cut description, notes, an example.
    let mut direct = [0usize; 10];
    // Entity pages (with their read and write pages) left to the `Value` path, made as text
    // without a summary, and with one.
    let mut entities = [0usize; 3];
    let fleets = [
        "tests/catalogs/fleet/livemcp",
        "tests/catalogs/fleet/toolsdk",
    ];
    for dir in crate::compiler::REPO_CATALOGS.into_iter().chain(fleets) {
        let reg = compile(dir);
        let searches = SearchOps::of(&reg);
        for r in reg.ops.values().filter(|r| !r.hidden) {
            let Some(_) = direct::op_page_texts(&reg, r, searches.get(r)) else {
                direct[0] += 1;
                continue;
            };
            let args = || r.args.iter();
            let cases = [
                true,
                r.policy.is_some(),
                !r.aliases.is_empty(),
                args().any(|a| a.enum_.as_ref().is_some_and(|e| e.len() > MAX_ENUM)),
                args().any(|a| a.range.is_some()),
                args().any(|a| a.default.is_some()),
                args().any(|a| a.description.chars().count() > FULL_ARG_CHARS),
                !notes(searches.get(r), r).is_empty(),
                !r.examples.is_empty(),
            ];
            for (n, case) in direct[1..].iter_mut().zip(cases) {
                *n += usize::from(case);
            }
        }
        for (g, node) in &reg.tree {
            for (e, en) in &node.entities {
                let path = format!("{g}.{e}");
                for kind in [None, Some(Kind::Read), Some(Kind::Write)] {
                    let made = direct::entity_page_texts(&reg, &path, e, node, kind).is_some();
                    entities[usize::from(made) + usize::from(made && en.summary.is_some())] += 1;
                }
            }
        }
        let values = build(&reg);
        let texts = build_texts(&reg, None);
        assert_eq!(values.texts(), texts, "{dir}");
        let (text, spans) = render_texts_spanned(&texts);
        assert!(render(&values) == text, "{dir}: help.json differs");
        // Where each page lies, as recorded while writing, is where reading it back finds it.
        assert!(
            spans == crate::emit::lookup::read_back::help_spans(&text),
            "{dir}: spans"
        );
        assert_eq!(
            text.len(),
            rendered_len(&texts),
            "{dir}: the size is not exact"
        );
        for (path, p) in &values.pages {
            let t = &texts.pages[path];
            assert_eq!(
                crate::model::help::compact_json(&t.short),
                compact(&p.short)
            );
            assert_eq!(crate::model::help::compact_json(&t.full), compact(&p.full));
        }
        paged += values
            .pages
            .keys()
            .filter(|k| k.contains(PAGE_MARK))
            .count();
    }
    assert!(paged > 0, "no catalog has a paged directory");
    // Both ways of making an op's pages ran above, and the text path met each optional
    // field (so the equality covers them).
    assert!(
        direct.iter().all(|n| *n > 0),
        "{direct:?}: a case the text path never met"
    );
    // No repo catalog has an op with two examples (a full page shows them all).
    let mut reg = compile("definitions");
    let r = reg
        .ops
        .values_mut()
        .find(|r| !r.hidden && !r.examples.is_empty())
        .expect("an op with an example");
    let mut second = r.examples[0].clone();
    second.description = "Another call".into();
    r.examples.push(second);
    assert_eq!(build(&reg).texts(), build_texts(&reg, None));
    let empty = PageTexts::default();
    let doc = HelpDoc::new(String::new(), String::new(), BTreeMap::new());
    assert_eq!(render_texts(&empty), render(&doc));
    assert_eq!(render_texts(&empty).len(), rendered_len(&empty));
    let (text, spans) = render_texts_spanned(&empty);
    assert_eq!(spans, crate::emit::lookup::read_back::help_spans(&text));
}

/// With a memo, every op page carries its origin (what the report finds its size by), each its
/// own, the same in a second build and another after the op changes; directory pages carry
/// none. The pages themselves are the memo-less build's.
#[test]
fn op_pages_carry_their_origin() {
    let mut reg = compile("definitions");
    let memo = crate::compiler::memo::Memo::new("test");
    let origins = |reg: &Registry| {
        let (digests, _) = crate::emit::page_memo::OpDigests::with_texts(reg);
        let pages = PageMemo {
            memo: &memo,
            digests: &digests,
        };
        let texts = build_texts(reg, Some(&pages));
        let bare = build_texts(reg, None);
        for (path, page) in &texts.pages {
            let made = &bare.pages[path];
            assert_eq!(
                (&page.short, &page.full),
                (&made.short, &made.full),
                "{path}"
            );
        }
        texts
            .pages
            .into_iter()
            .map(|(path, page)| (path, page.origins))
            .collect::<BTreeMap<_, _>>()
    };
    let first = origins(&reg);
    let op = reg
        .ops
        .keys()
        .find(|op| first.contains_key(*op))
        .unwrap()
        .clone();
    for (path, origin) in &first {
        assert_eq!(
            origin.is_some(),
            reg.ops.contains_key(path.split('@').next().unwrap()),
            "{path}"
        );
    }
    let mut all: Vec<_> = first.values().flatten().flatten().collect();
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "each page its own origin");
    assert_eq!(origins(&reg), first);
    reg.ops.get_mut(&op).unwrap().summary.push_str(" Changed.");
    let changed = origins(&reg);
    for (path, origin) in &changed {
        let of_op = path.split('@').next() == Some(op.as_str());
        assert_eq!(origin == &first[path], !of_op, "{path}");
    }
}
