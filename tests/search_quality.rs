//! Search quality on query sets nobody tuned the scorer's structure on, with thresholds a change
//! to search must keep. Each set is compiled from its definitions with no overlay (zero-config).
//!
//! - tests/eval/metatool: the MetaTool benchmark (HowieHwong/MetaTool, MIT), 199 tools; a dev
//!   set (600 queries, used for tuning) and a held-out set (1,500, only reported), and
//!   misspelled copies of both (scripts/eval-data/typos.py).
//! - tests/eval/phrasing: everyday phrasing, abbreviations and compounds over four real MCP
//!   servers' tools (GitHub, Slack, filesystem, memory); a dev set written here for the
//!   phrasing data (src/runtime/phrasing.json).
//! - tests/eval/seed/typos.jsonl: the seed queries (../shared/eval), each with one typo.
#![cfg(all(feature = "compiler", feature = "runtime"))]

mod common;

use toolreg::runtime::eval::{self, Report};
use toolreg::runtime::Gateway;

fn gateway_for(definitions: &str) -> Gateway {
    let compiled = toolreg::compiler::compile(&common::repo().join(definitions));
    let reg = compiled
        .registry
        .unwrap_or_else(|| panic!("{definitions} compiles: {:?}", compiled.diagnostics));
    let help = toolreg::emit::help::build(&reg);
    Gateway::new(reg, help).unwrap()
}

fn run(gw: &Gateway, queries: &str) -> Report {
    let text = std::fs::read_to_string(common::repo().join(queries)).unwrap();
    eval::run(gw, &text, &[1, 5, 10]).unwrap()
}

fn at_least(report: &Report, metric: &str, floor: f64, set: &str) {
    let got = report.metric(metric);
    assert!(got >= floor, "{set}: {metric} {got} < {floor}");
}

#[test]
fn metatool_dev_and_held_out_with_and_without_typos() {
    let gw = gateway_for("tests/eval/metatool/definitions");
    // Figures measured with this scorer (README: search quality); floors just below them.
    for (set, r1, r5) in [
        ("tests/eval/metatool/dev.jsonl", 0.41, 0.63),
        ("tests/eval/metatool/heldout.jsonl", 0.41, 0.62),
        ("tests/eval/metatool/dev-typos.jsonl", 0.39, 0.62),
        ("tests/eval/metatool/heldout-typos.jsonl", 0.39, 0.60),
    ] {
        let report = run(&gw, set);
        at_least(&report, "recall@1", r1, set);
        at_least(&report, "recall@5", r5, set);
    }
}

#[test]
fn everyday_phrasing_and_typos_are_understood() {
    let gw = gateway_for("tests/eval/phrasing/definitions");
    let report = run(&gw, "tests/eval/phrasing/dev.jsonl");
    at_least(&report, "recall@1", 0.69, "phrasing dev");
    at_least(&report, "recall@5", 0.80, "phrasing dev");

    let seed = Gateway::from_dir(common::repo().join("generated")).unwrap();
    let report = run(&seed, "tests/eval/seed/typos.jsonl");
    at_least(&report, "recall@1", 0.75, "seed typos");
    at_least(&report, "recall@5", 0.92, "seed typos");
}

#[test]
fn a_misspelled_or_abbreviated_word_finds_the_catalog_word() {
    let gw = gateway_for("tests/eval/phrasing/definitions");
    let top = |q: &str| {
        let r = gw.search(&toolreg::runtime::search::SearchRequest::query(q));
        r.results
            .first()
            .map(|h| h.tool_name.clone())
            .unwrap_or_default()
    };
    // One edit from a catalog word: swapped, dropped, doubled, replaced letters.
    assert_eq!(top("fork a repostiory"), "fork_repository");
    assert_eq!(top("delte entities"), "delete_entities");
    assert_eq!(top("list the commmits"), "list_commits");
    assert_eq!(top("merge the pull requesr"), "merge_pull_request");
    // Abbreviations, a hyphenated word, a compound the catalog splits, a phrase.
    assert_eq!(top("fork a repo"), "fork_repository");
    assert_eq!(top("post a msg to a channel"), "slack_post_message");
    assert_eq!(top("show the directory-tree"), "directory_tree");
    assert_eq!(top("get rid of entities"), "delete_entities");
}
