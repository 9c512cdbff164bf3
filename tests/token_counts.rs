//! The report counts tokens with GitHub's bpe-openai; these must be exactly tiktoken's counts
//! (the reference implementation) on every text the report measures, for every catalog in the
//! repo, the real MCP tool lists included.

mod common;

use toolreg::surfaces;

#[test]
fn bpe_openai_counts_exactly_as_tiktoken_on_every_report_text() {
    let o200k = tiktoken_rs::o200k_base().unwrap();
    let cl100k = tiktoken_rs::cl100k_base().unwrap();
    let repo = common::repo();
    let mut texts = 0;
    let mut tokens = 0;
    for defs in [
        "definitions",
        "examples/universal-agent/definitions",
        "tests/fixture/definitions",
        "tests/catalogs/github",
        "tests/catalogs/reference-servers",
        // 527 tools of 70 real MCP servers: the counts are sums of cached parts, cut between
        // JSON punctuation and letters, so real text in every shape checks the cut.
        "tests/catalogs/fleet/livemcp",
    ] {
        let g = toolreg::builder::generate(&repo.join(defs), &[]);
        let reg = g.compiled.registry.expect("the catalog builds");
        let help = toolreg::emit::help::build(&reg);
        let mut all: Vec<String> = vec![
            surfaces::tools_json(&surfaces::direct(&reg)).to_string(),
            surfaces::tools_json(&surfaces::gateway(&reg)).to_string(),
        ];
        all.extend(
            reg.profiles
                .keys()
                .map(|p| surfaces::tools_json(&surfaces::profile(&reg, p)).to_string()),
        );
        for page in help.pages.values() {
            all.push(page.short.to_string());
            all.push(page.full.to_string());
        }
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let sizes = toolreg::report::sizes_of(&refs);
        for (text, size) in all.iter().zip(&sizes) {
            let want = (
                o200k.encode_ordinary(text).len(),
                cl100k.encode_ordinary(text).len(),
            );
            assert_eq!(
                (size.o200k, size.cl100k),
                want,
                "{defs}: {}",
                &text[..text.len().min(120)]
            );
            tokens += want.0;
        }
        texts += all.len();
    }
    // Text that tokenizers find hard: every script, emoji, long digit runs, odd whitespace.
    let hard = "naïve café 東京 🤖🤖 12345678901234 \t\n\n  x\u{200b}y Ελληνικά العربية 'll 're";
    let size = toolreg::report::sizes_of(&[hard])[0];
    assert_eq!(
        (size.o200k, size.cl100k),
        (
            o200k.encode_ordinary(hard).len(),
            cl100k.encode_ordinary(hard).len()
        )
    );
    eprintln!("{texts} texts, {tokens} o200k tokens: identical counts");
    assert!(texts > 300, "the comparison covered {texts} texts");
}

/// An incremental build counts a help page as the sum of its parts around the registry version
/// (`split_at_stamps`), so pages whose only change is the version are not counted again. The
/// sum must be tiktoken's count of the whole page: on every page of the repo's catalogs (real
/// MCP servers included), and on stamps in contexts where a pre-tokenizer would not cut.
#[test]
fn a_page_counts_as_the_sum_of_its_parts_around_the_registry_version() {
    let o200k = tiktoken_rs::o200k_base().unwrap();
    let cl100k = tiktoken_rs::cl100k_base().unwrap();
    let sum = |text: &str, stamp: &str, enc: &tiktoken_rs::CoreBPE| -> (usize, usize) {
        let (parts, stamps) = toolreg::report::split_at_stamps(text, stamp);
        let n = parts
            .iter()
            .map(|p| enc.encode_ordinary(p).len())
            .sum::<usize>()
            + stamps * enc.encode_ordinary(stamp).len();
        (n, stamps)
    };
    let repo = common::repo();
    let mut cut = 0;
    let mut parts = 0;
    for defs in [
        "definitions",
        "tests/fixture/definitions",
        "tests/catalogs/github",
        "tests/catalogs/fleet/livemcp",
    ] {
        let g = toolreg::builder::generate(&repo.join(defs), &[]);
        let reg = g.compiled.registry.expect("the catalog builds");
        let help = toolreg::emit::help::build(&reg);
        let mut texts: Vec<String> = vec![
            surfaces::tools_json(&surfaces::direct(&reg)).to_string(),
            surfaces::tools_json(&surfaces::gateway(&reg)).to_string(),
        ];
        for page in help.pages.values() {
            texts.push(page.short.to_string());
            texts.push(page.full.to_string());
        }
        for text in texts {
            for enc in [&o200k, &cl100k] {
                let (n, stamps) = sum(&text, &reg.registry_version, enc);
                assert_eq!(n, enc.encode_ordinary(&text).len(), "{defs}: {text}");
                cut += stamps;
            }
            parts += toolreg::report::split_at_stamps(&text, &reg.registry_version)
                .0
                .len();
        }
    }
    assert!(cut > 1000, "pages were cut at their stamps {cut} times");
    assert!(
        parts > cut + 1000,
        "tool lists were cut between tools: {parts} parts"
    );
    // Contexts where a cut would change the count are left whole (a letter, digit, space or
    // one quote before; a letter, digit, quote or accent after), and every sum stays exact.
    let stamp = "b3:7a83f8852108f82f";
    for (text, cuts) in [
        (format!("{{\"v\":\"{stamp}\",\"x\":1}}"), 1),
        (stamp.to_string(), 0),
        (format!("x\"{stamp}\""), 0),
        (format!("x {stamp}."), 0),
        (format!("::{stamp}s"), 0),
        (format!("::{stamp}'s"), 0),
        (format!("::{stamp}é"), 0),
        (format!("::{stamp}::{stamp}\n"), 2),
        (format!("'s:{stamp}'d"), 0),
        (format!("\n:/{stamp}/\n"), 1),
        (
            format!("[{{\"a\":1}},{{\"type\":\"{stamp}\"}},{{\"b\":'s}},{{\"c\"}}]"),
            1,
        ),
        ("x},{\"ét\"},{\"'ll\"},{\"9\"}".to_string(), 0),
    ] {
        for enc in [&o200k, &cl100k] {
            let (n, stamps) = sum(&text, stamp, enc);
            assert_eq!(stamps, cuts, "{text:?}");
            assert_eq!(n, enc.encode_ordinary(&text).len(), "{text:?}");
        }
    }
}
