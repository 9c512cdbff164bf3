//! What `serve --http` answers a POST body that is not one JSON-RPC message: the JSON-RPC error
//! the spec names (parse error -32700, invalid request -32600) with HTTP 400, where the MCP
//! SDK answered every such body "415 Unsupported Media Type" (a client could not tell a typo
//! from a wrong header). Batches are refused by name: MCP removed them (2025-06-18).

use axum::http::{header, Method, StatusCode};
use axum::response::IntoResponse;
use serde_json::{json, Value};

/// The largest body read (the SDK's own limit): a longer one is 413.
pub(super) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long a request body may take to arrive.
pub(super) const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// The middleware: a JSON POST is read whole (bounded) and checked before the SDK sees it.
pub(super) async fn guard(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let json_post = req.method() == Method::POST
        && req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
            });
    if !json_post {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    // A body has a deadline as the head does: one trickled a byte at a time would hold its
    // connection (and a caller's place) for as long as it likes.
    let read = tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, MAX_BODY_BYTES));
    let bytes = match read.await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is over {MAX_BODY_BYTES} bytes"),
            )
                .into_response()
        }
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} s",
                    BODY_DEADLINE.as_secs()
                ),
            )
                .into_response()
        }
    };
    if let Some(refusal) = check(&bytes) {
        return refusal;
    }
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// `None` when the body is one JSON-RPC message the SDK can take; else the error answer.
fn check(bytes: &[u8]) -> Option<axum::response::Response> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        // Syntax errors and nesting past serde_json's depth limit (128) alike.
        Err(e) => return Some(error(Value::Null, -32700, &format!("Parse error: {e}"))),
    };
    if value.is_array() {
        return Some(error(
            Value::Null,
            -32600,
            "Invalid Request: JSON-RPC batches are not supported (MCP removed them); send one message per request",
        ));
    }
    // An id the answer may echo: a number or a short string, never what else was sent.
    let id = match value.get("id") {
        Some(v @ Value::Number(_)) => v.clone(),
        Some(Value::String(s)) if s.len() <= 128 => Value::String(s.clone()),
        _ => Value::Null,
    };
    match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value) {
        Ok(_) => None,
        Err(e) => Some(error(
            id,
            -32600,
            &format!(
                "Invalid Request: not a JSON-RPC 2.0 request, notification or response of MCP: {}",
                crate::model::text::clip_chars(&e.to_string(), 300)
            ),
        )),
    }
}

fn error(id: Value, code: i64, message: &str) -> axum::response::Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &str) -> Option<(u16, Value)> {
        let r = check(body.as_bytes())?;
        let status = r.status().as_u16();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let bytes = rt
            .block_on(axum::body::to_bytes(r.into_body(), 1 << 20))
            .unwrap();
        Some((status, serde_json::from_slice(&bytes).unwrap()))
    }

    #[test]
    fn bodies_that_are_not_one_message_get_json_rpc_errors() {
        let (status, v) = answer("{\"jsonrpc\": \"2.0\", \"id\": 1, ").unwrap();
        assert_eq!((status, v["error"]["code"].as_i64()), (400, Some(-32700)));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let (_, v) = answer(&deep).unwrap();
        assert_eq!(v["error"]["code"], -32700, "{v}");
        let (_, v) = answer(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).unwrap();
        assert_eq!(v["error"]["code"], -32600);
        assert!(v["error"]["message"].as_str().unwrap().contains("batches"));
        let (_, v) = answer(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(
            (v["error"]["code"].as_i64(), v["id"].as_i64()),
            (Some(-32600), Some(7))
        );
        // One good message passes to the SDK untouched.
        assert!(answer(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
        assert!(answer(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_none());
    }
}
