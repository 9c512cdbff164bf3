//! `tool_search` through `toolreg serve` (a real MCP client, rmcp's, over stdio) never answers
//! with nothing: not for an empty query, not for punctuation, not for a query of 10,000 random
//! words, not for hundreds of random-word queries. Needs no upstream server: search is the
//! gateway's own.
#![cfg(feature = "mcp")]

mod common;

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_search_through_mcp_never_answers_with_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("generated");
    let o = common::toolreg(
        &common::repo(),
        &[
            "build",
            "--definitions",
            "tests/catalogs/reference-servers",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));

    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolreg"));
    cmd.args(["serve", "--registry", out.to_str().unwrap()]);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let client = ().serve(transport).await.expect("handshake");

    let mut queries: Vec<String> = vec![
        String::new(),
        " ".into(),
        "?!...;:--".into(),
        "(){}[]<>".into(),
        common::random_words(7, 10_000).join(" "),
        "remember that Alice is a software engineer at Acme".into(),
        "which people in my notes mention Python".into(),
    ];
    for seed in 1..=300u64 {
        let n = 1 + (seed % 5) as usize;
        queries.push(common::random_words(seed * 7919, n).join(" "));
    }
    for q in &queries {
        let Value::Object(args) = json!({"query": q}) else {
            unreachable!()
        };
        let r = client
            .call_tool(CallToolRequestParams::new("tool_search".to_string()).with_arguments(args))
            .await
            .unwrap();
        let text: String = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "not JSON for {:?}: {e}: {text}",
                q.chars().take(40).collect::<String>()
            )
        });
        let results = answer["results"].as_array().map_or(0, Vec::len);
        assert!(
            results > 0,
            "no results for {:?}: {answer}",
            q.chars().take(40).collect::<String>()
        );
    }
    client.cancel().await.unwrap();
}
