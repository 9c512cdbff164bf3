//! One `tools/call`: the caller's view (visibility, scope), the gateway tools (help, search,
//! exec) or a direct tool as an exec of its op, forwarding to the upstream that owns an op, and
//! the answer as an MCP result (envelopes, forwarded results as they came, drift warnings).

use super::{observe, Pool, Principal, Server, View};
use crate::model::help::HelpRequest;
use crate::runtime::search::SearchRequest;
use crate::runtime::{Envelope, ExecCall, HandlerError};
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::ErrorData;
use serde_json::{json, Map, Value};

impl Server {
    /// Answers one `tools/call`. `Err` only for a tool name the surface does not list.
    pub async fn call(
        &self,
        name: &str,
        args: Option<Map<String, Value>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_as(name, args, None).await
    }

    /// [`Server::call`] for `principal`: exec runs in its scope, and help, search and
    /// envelopes never name an op it may not use.
    pub async fn call_as(
        &self,
        name: &str,
        args: Option<Map<String, Value>>,
        principal: Option<&Principal>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_gated(name, args, principal, None).await
    }

    /// [`Server::call_as`], with the HTTP layer's rate gate for a batch's further items.
    pub(super) async fn call_gated(
        &self,
        name: &str,
        args: Option<Map<String, Value>>,
        principal: Option<&Principal>,
        gate: Option<&super::limits::ItemGate>,
    ) -> Result<CallToolResult, ErrorData> {
        let started = std::time::Instant::now();
        let view = self.view(principal);
        // The audit keeps a digest of the arguments, taken before the call consumes them.
        let args = Value::Object(args.unwrap_or_default());
        let args_b3 = self
            .inner
            .observer
            .audit
            .as_ref()
            .map(|_| observe::args_digest(&args));
        // Idempotency keys are the caller's own: partitioned by principal and surface.
        let caller = format!(
            "{}\u{1f}{}",
            principal.map_or("", |p| p.name.as_str()),
            self.inner.surface
        );
        let batch_tool = self.gateway().registry().gateway.batch.as_deref();
        let answer = if batch_tool == Some(name) && view.tool_names.contains(name) {
            self.batch(name, &args, principal, gate).await
        } else {
            self.answer_call(name, args, &view, &caller).await
        };
        let took = started.elapsed();
        let (op, code) = outcome(name, &answer);
        // Only ops of the registry the caller may see (or the gateway tool itself) become
        // labels and audit names: a caller cannot grow the metrics by inventing op names.
        let known = self.gateway().registry().ops.contains_key(&op) && view.scope.contains_op(&op);
        let op = if known || op == name {
            op
        } else {
            "unknown".to_string()
        };
        self.inner.observer.metrics.call(&op, &code, took);
        if let (Some(sink), Some(args_b3)) = (&self.inner.observer.audit, args_b3) {
            sink.write(
                &observe::CallRecord {
                    principal: principal.map(|p| p.name.as_str()),
                    tool: name,
                    op: &op,
                    upstream: self.inner.upstream_of.get(&op).map(String::as_str),
                    code: &code,
                    took,
                    args_b3,
                }
                .to_json(),
            );
        }
        answer
    }

    async fn answer_call(
        &self,
        name: &str,
        args: Value,
        view: &View,
        caller: &str,
    ) -> Result<CallToolResult, ErrorData> {
        if !view.tool_names.contains(name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; tools/list names the tools of this server",
                    crate::model::diag::escape_controls(name)
                ),
                None,
            ));
        }
        let reg = self.gateway().registry();
        if name == reg.gateway.help {
            return Ok(match serde_json::from_value::<HelpRequest>(args) {
                Ok(req) => {
                    let page = self.help_for(view, &req);
                    let failed = page.get("error").is_some();
                    let mut r = json_result(&page, false);
                    if !failed {
                        self.stamp_cache(&mut r, true);
                    }
                    r
                }
                Err(e) => bad_gateway_args(name, e),
            });
        }
        if name == reg.gateway.search {
            return Ok(match serde_json::from_value::<SearchRequest>(args) {
                Ok(req) => {
                    let found = match &view.hide {
                        None => self.gateway().search_in(&req, &view.scope),
                        Some(_) => {
                            let index = view
                                .search
                                .get_or_init(|| self.gateway().view_index(&view.allowed));
                            self.gateway().search_view(&req, index)
                        }
                    };
                    let mut v = serde_json::to_value(&found).unwrap_or(Value::Null);
                    if let Some(h) = &view.hide {
                        // The query is echoed as sent (scrubbing it would tell a hidden name
                        // from an invented one); the rest names only ops this view sees.
                        let query = v.get("query").cloned();
                        h.scrub(&mut v);
                        if let (Some(q), Some(o)) = (query, v.as_object_mut()) {
                            o.insert("query".into(), q);
                        }
                    }
                    let mut r = json_result(&v, false);
                    self.stamp_cache(&mut r, false);
                    r
                }
                Err(e) => bad_gateway_args(name, e),
            });
        }
        let call = if name == reg.gateway.exec {
            ExecCall::from_value(&args)
        } else {
            // A typed tool of the direct or a profile surface: it is listed under the op's
            // provider name, a first-class name here (no "call ops by their op name" warning).
            let op = reg
                .op_by_tool_name(name)
                .map_or_else(|| name.to_string(), |r| r.op.clone());
            ExecCall {
                op,
                args: Some(args),
                ..Default::default()
            }
        };
        let envelope = self.gateway().exec_for(call, &view.scope, caller).await;
        Ok(self.answer(envelope, view))
    }

    /// The operation a call of tool `name` with `args` starts, as `principal` may see it:
    /// `None` for gateway help/search/batch, an op it cannot see, or one that does not resolve.
    pub(super) fn starting(
        &self,
        name: &str,
        args: Option<&Map<String, Value>>,
        principal: Option<&Principal>,
    ) -> Option<crate::model::operation::Operation> {
        let reg = self.gateway().registry();
        let view = self.view(principal);
        if !view.tool_names.contains(name) {
            return None;
        }
        let (op, op_args) = if name == reg.gateway.exec {
            let a = args?;
            (a.get("op")?.as_str()?.to_string(), a.get("args"))
        } else if reg.gateway.all().contains(&name) {
            return None;
        } else {
            (reg.op_by_tool_name(name)?.op.clone(), None)
        };
        let spec = self.gateway().operation_spec(&op, &view.scope)?;
        let op_args = match op_args {
            Some(a) => a.clone(),
            None => Value::Object(args.cloned().unwrap_or_default()),
        };
        Some(spec.operation(Some(&op_args), None, "started"))
    }

    /// A batch (seed 000 §2.3): each item goes through [`Server::call_gated`] as the single
    /// tool's call would, so scopes, idempotency, the drift gate, metrics and the audit log see
    /// it alone; the first item rides on the request's own rate token, every further item takes
    /// one of its own. Bad input is one envelope and nothing runs.
    async fn batch(
        &self,
        tool: &str,
        args: &Value,
        principal: Option<&Principal>,
        gate: Option<&super::limits::ItemGate>,
    ) -> Result<CallToolResult, ErrorData> {
        use crate::runtime::batch::{self, Batch};
        let parsed = match Batch::parse(args, tool) {
            Ok(b) => b,
            Err(refused) => return Ok(json_result(&refused.0.to_json(), true)),
        };
        let reg = self.gateway().registry();
        let mut answers = Vec::with_capacity(parsed.items.len());
        let mut failed_at: Option<usize> = None;
        for (i, (item, (kind, item_args))) in parsed.items.iter().zip(&parsed.raw).enumerate() {
            if let (crate::runtime::batch::BatchItem::Exec(call), Some(at)) = (item, failed_at) {
                if parsed.stop_on_error && self.gateway().is_write(call) {
                    answers.push(batch::skipped(&call.op, at));
                    continue;
                }
            }
            let over_rate = match gate {
                Some(g) if i > 0 => !g.take().await,
                _ => false,
            };
            let answer = if over_rate {
                rate_limited(item)
            } else {
                let single = match kind.as_str() {
                    "help" => &reg.gateway.help,
                    "search" => &reg.gateway.search,
                    _ => &reg.gateway.exec,
                };
                let result = Box::pin(self.call_gated(
                    single,
                    item_args.as_object().cloned(),
                    principal,
                    None,
                ))
                .await;
                match result {
                    Ok(r) => item_answer(r),
                    Err(e) => {
                        json!({"ok": false, "error": {"code": "PROTOCOL_ERROR", "message": e.message}})
                    }
                }
            };
            if failed_at.is_none() && !batch::item_ok(&answer) {
                failed_at = Some(i);
            }
            answers.push(answer);
        }
        let answer = batch::answer(answers);
        let failed = answer.get("ok") != Some(&Value::Bool(true));
        Ok(json_result(&answer, failed))
    }

    /// `_meta["toolreg/cache"]` of a help or search answer: the registry version a client's
    /// session cache keys on (seed 000 §8.1: `registry_version + path + format`), and for help,
    /// how long the page holds and for whom.
    fn stamp_cache(&self, r: &mut CallToolResult, holds: bool) {
        let mut cache = json!({"registry_version": self.inner.version});
        if holds {
            let (ttl, scope) = self.cache_hints(true);
            cache["ttlMs"] = json!(ttl);
            cache["cacheScope"] = serde_json::to_value(scope).unwrap_or(Value::Null);
        }
        r.meta
            .get_or_insert_with(Default::default)
            .0
            .insert("toolreg/cache".into(), cache);
    }

    /// A help page as `view` may see it: served from pages built over only the ops it may
    /// use (built on its first help call), so every page, its counts, paging and next steps
    /// read as in a catalog without the hidden ops; what visible text still names of them is
    /// scrubbed. An unknown path's answer echoes what was asked as sent (scrubbing the echo
    /// would tell a hidden name from an invented one).
    fn help_for(&self, view: &View, req: &HelpRequest) -> Value {
        let gw = self.gateway();
        let Some(hide) = &view.hide else {
            return Value::clone(&gw.help(req));
        };
        let own = view
            .help
            .get_or_init(|| super::visibility::view_gateway(gw.registry(), &view.allowed));
        let mut page = match own {
            Some(g) => Value::clone(&g.help(req)),
            None => gw.help_unknown_among(&req.path, &|p| !hide.hides_path(p)),
        };
        if page.get("error").is_some() {
            if let Some(groups) = page.get_mut("groups") {
                hide.scrub(groups);
            }
            return page;
        }
        hide.scrub(&mut page);
        page
    }

    /// An envelope as an MCP result: an upstream's own result passes through (with the
    /// envelope's op, trace and warnings in `_meta`); everything else is the envelope itself.
    fn answer(&self, envelope: Envelope, view: &View) -> CallToolResult {
        if envelope.ok && !envelope.meta.dry_run {
            if let Some(forwarded) = envelope
                .result
                .as_ref()
                .and_then(|r| r.get(FORWARDED))
                .and_then(|r| serde_json::from_value::<CallToolResult>(r.clone()).ok())
            {
                let mut result = forwarded;
                let mut meta = result.meta.take().unwrap_or_default();
                let mut warnings = envelope.meta.warnings.clone();
                if let Some(w) = envelope
                    .result
                    .as_ref()
                    .and_then(|r| r.get(DRIFT_WARNING))
                    .and_then(Value::as_str)
                {
                    warnings.push(w.to_string());
                }
                meta.0.insert(
                    "toolreg".into(),
                    json!({"op": envelope.op, "trace_id": envelope.meta.trace_id, "warnings": warnings, "registry_version": self.inner.version, "operation": envelope.operation}),
                );
                result.meta = Some(meta);
                return result;
            }
        }
        let failed = !envelope.ok;
        let not_found = envelope
            .error
            .as_ref()
            .is_some_and(|e| e.code == crate::runtime::codes::NOT_FOUND);
        let mut v = envelope.to_json();
        if let Some(h) = &view.hide {
            if not_found {
                // Its `op` and message echo what the caller sent, and the rest names only ops
                // it sees: scrubbing the echo would tell a hidden name from an invented one.
                if let Some(d) = v.pointer_mut("/error/details") {
                    h.scrub(d);
                }
            } else {
                h.scrub(&mut v);
            }
        }
        json_result(&v, failed)
    }
}

/// The operation (seed 002 §6.4) an answer carries: on the envelope, or in `_meta` beside an
/// upstream's own result.
pub(super) fn operation_of(r: &CallToolResult) -> Option<crate::model::operation::Operation> {
    let on_meta = r
        .meta
        .as_ref()
        .and_then(|m| m.0.get("toolreg"))
        .and_then(|t| t.get("operation"));
    let on_envelope = r
        .structured_content
        .as_ref()
        .and_then(|v| v.get("operation"));
    on_meta
        .or(on_envelope)
        .and_then(|o| serde_json::from_value(o.clone()).ok())
}

/// A batch item's answer from the single call's result: the envelope or page it carried, or an
/// upstream's own result as it came (its `isError` read as the item's `ok`).
fn item_answer(r: CallToolResult) -> Value {
    let forwarded = r.meta.as_ref().is_some_and(|m| m.0.contains_key("toolreg"));
    match r.structured_content.clone() {
        Some(v) if !forwarded => v,
        _ => {
            let ok = r.is_error != Some(true);
            let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("ok".into(), Value::Bool(ok));
            }
            v
        }
    }
}

/// The answer of a batch item over the caller's rate: not run.
fn rate_limited(item: &crate::runtime::batch::BatchItem) -> Value {
    let op = match item {
        crate::runtime::batch::BatchItem::Exec(c) => c.op.clone(),
        other => other.kind().to_string(),
    };
    json!({"op": op, "ok": false, "error": {
        "code": super::codes::RATE_LIMITED,
        "message": "not run: this item is over the caller's requests per second (each batch item counts as one request)",
        "details": {"field_errors": []},
        "help_path": crate::model::help::ROOT,
    }})
}

/// The op and outcome code of an answer: `ok`, the envelope's error code, `UPSTREAM_ERROR` for an
/// upstream's own `isError` result, or `PROTOCOL_ERROR` for a JSON-RPC error.
fn outcome(tool: &str, answer: &Result<CallToolResult, ErrorData>) -> (String, String) {
    let Ok(r) = answer else {
        return ("unknown".into(), "PROTOCOL_ERROR".into());
    };
    let meta_op = r
        .meta
        .as_ref()
        .and_then(|m| m.0.get("toolreg"))
        .and_then(|t| t.get("op"))
        .and_then(Value::as_str);
    let envelope = r.structured_content.as_ref();
    let op = meta_op
        .or_else(|| envelope.and_then(|e| e.get("op")).and_then(Value::as_str))
        .unwrap_or(tool)
        .to_string();
    let code = if r.is_error != Some(true) {
        "ok".to_string()
    } else {
        // A forwarded result's structuredContent is the upstream's own: a code toolreg does not
        // define is the upstream's error, whatever it says (a label never comes from upstream
        // or caller data, so neither can grow the metrics or write into the audit log).
        envelope
            .and_then(|e| e.pointer("/error/code"))
            .and_then(Value::as_str)
            .and_then(|c| KNOWN_CODES.iter().find(|k| **k == c))
            .map_or_else(|| "UPSTREAM_ERROR".to_string(), |c| (*c).to_string())
    };
    (op, code)
}

/// Every envelope code toolreg itself answers with: the only codes a metric label or an audit
/// line may carry (besides `ok`, `UPSTREAM_ERROR` and `PROTOCOL_ERROR`).
const KNOWN_CODES: &[&str] = &[
    crate::runtime::codes::NOT_FOUND,
    crate::runtime::codes::FORBIDDEN,
    crate::runtime::codes::EMPTY_ARGS,
    crate::runtime::codes::MALFORMED_ARGS,
    crate::runtime::codes::VALIDATION_ERROR,
    crate::runtime::codes::CONFLICT,
    crate::runtime::codes::NOT_IMPLEMENTED,
    crate::runtime::codes::INTERNAL,
    crate::runtime::codes::IDEMPOTENCY_UNAVAILABLE,
    super::codes::UPSTREAM_UNAVAILABLE,
    super::codes::UPSTREAM_TIMEOUT,
    super::codes::UPSTREAM_TOO_LARGE,
    super::codes::UPSTREAM_MALFORMED,
    super::codes::UPSTREAM_TOOL_CHANGED,
    super::codes::RATE_LIMITED,
    crate::runtime::codes::SKIPPED,
];

/// The key under which a forwarding handler returns the upstream's result.
const FORWARDED: &str = "mcp_result";
/// The key of the drift gate's warning beside it (`--drift warn`).
const DRIFT_WARNING: &str = "drift_warning";

pub(super) async fn forward(
    pool: &Pool,
    upstream: &str,
    tool: &str,
    args: Value,
) -> Result<Value, HandlerError> {
    let args = match args {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let (result, drift_warning) = pool.call(upstream, tool, args).await?;
    let value = serde_json::to_value(&result).map_err(|e| {
        HandlerError::internal(format!("the upstream's result did not serialize: {e}"))
    })?;
    Ok(match drift_warning {
        Some(w) => json!({ FORWARDED: value, DRIFT_WARNING: w }),
        None => json!({ FORWARDED: value }),
    })
}

fn json_result(v: &impl serde::Serialize, is_error: bool) -> CallToolResult {
    let value = serde_json::to_value(v).unwrap_or(Value::Null);
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut r = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    r.structured_content = Some(value);
    r
}

/// A help or search call whose arguments do not fit: an envelope like exec's.
fn bad_gateway_args(tool: &str, e: serde_json::Error) -> CallToolResult {
    let envelope = json!({
        "op": tool,
        "ok": false,
        "error": {
            "code": crate::runtime::codes::VALIDATION_ERROR,
            "message": format!("the arguments of `{tool}` do not fit its schema: {e}"),
            "details": {"field_errors": []},
            "help_path": "root",
        },
    });
    json_result(&envelope, true)
}
