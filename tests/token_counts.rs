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
