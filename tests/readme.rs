//! The README stays true: every diagnostic code is documented, and the overlay example is valid.

mod common;

use toolreg::diag::{Code, Diagnostics};

fn readme() -> String {
    std::fs::read_to_string(common::repo().join("README.md")).unwrap()
}

#[test]
fn every_diagnostic_code_is_documented() {
    let text = readme();
    for code in Code::ALL {
        let sev = format!("{:?}", code.severity()).to_lowercase();
        let row = format!("| {} | {sev} | {} |", code.as_str(), code.title());
        assert!(text.contains(&row), "README lacks the row: {row}");
    }
}

#[test]
fn the_overlay_example_parses_without_unknown_keys() {
    let text = readme();
    let start = text
        .find("```toml\n[registry]")
        .expect("README has the overlay example");
    let body = &text[start + "```toml\n".len()..];
    let example = &body[..body.find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolreg.toml"), example).unwrap();
    let mut diags = Diagnostics::default();
    let lo = toolreg::compiler::overlay::load(dir.path(), "x", &mut diags);
    assert!(diags.is_empty(), "{}", diags.render_text());
    let overlay = lo.unwrap().overlay;
    assert_eq!(overlay.rules.len(), 3);
    assert_eq!(overlay.special.len(), 2);
    assert!(overlay.fallback.is_some());
    assert_eq!(overlay.profiles.len(), 1);
    let task_create = &overlay.ops["onto.task.create"];
    assert!(task_create.policy.is_some());
    assert_eq!(task_create.examples.len(), 1);
    assert_eq!(overlay.budgets.tool_tokens, Some(900));
}
