//! Batch (seed 000 §2.3, §11): several help, search and exec calls in one round trip, so a
//! model's first use of an op is `[help(op), exec(op)]` and a plan of independent reads is one
//! turn. Each item is the single tool's arguments under its kind (`{"help": {...}}`,
//! `{"search": {...}}`, `{"exec": {...}}`) and gets the single tool's answer, in order.
//!
//! Bad input (not a list, too many items, an unknown or nested kind) is one envelope and nothing
//! runs. Once an item fails, the writes after it are not run (`stop_on_error`, default true):
//! they answer `SKIPPED`; reads still run. The checks of each item are the single call's.

use super::envelope::fail;
use super::{codes, Envelope, ExecCall, Gateway, Meta, Scope};
use crate::model::help::HelpRequest;
use crate::model::registry::Kind;
use crate::model::resolve::resolve_exec;
use serde_json::{json, Value};

/// The most items one batch may hold.
pub use crate::model::registry::MAX_BATCH_ITEMS as MAX_ITEMS;

/// One item of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchItem {
    Help(HelpRequest),
    Search(super::search::SearchRequest),
    Exec(ExecCall),
}

impl BatchItem {
    /// `help`, `search` or `exec`.
    pub fn kind(&self) -> &'static str {
        match self {
            BatchItem::Help(_) => "help",
            BatchItem::Search(_) => "search",
            BatchItem::Exec(_) => "exec",
        }
    }
}

/// A parsed batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub items: Vec<BatchItem>,
    /// Once an item fails, skip the writes after it (default true).
    pub stop_on_error: bool,
    /// Each item's arguments as sent (what a server passes to the single tool).
    pub raw: Vec<(String, Value)>,
}

/// Why a batch was refused before anything ran: the envelope to answer with.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRefused(pub Box<Envelope>);

impl Batch {
    /// Reads `{"items": [...], "stop_on_error": bool}` (or a bare list of items). `tool` names
    /// the batch tool in the refusal.
    pub fn parse(v: &Value, tool: &str) -> Result<Batch, BatchRefused> {
        let refuse = |message: String, pointer: &str| {
            let failure = fail(
                tool,
                codes::VALIDATION_ERROR,
                message.clone(),
                json!({"field_errors": [{
                    "field": pointer.trim_start_matches('/').replace('/', "."),
                    "pointer": pointer,
                    "message": message,
                }], "max_items": MAX_ITEMS}),
                crate::model::help::ROOT,
            );
            BatchRefused(Box::new(Envelope {
                op: failure.op,
                ok: false,
                result: None,
                error: Some(*failure.error),
                operation: None,
                meta: Meta {
                    trace_id: String::new(),
                    latency_ms: 0,
                    warnings: Vec::new(),
                    dry_run: false,
                },
            }))
        };
        let (list, stop_on_error, base) = match v {
            Value::Array(list) => (list, true, ""),
            Value::Object(o) => {
                if let Some(k) = o.keys().find(|k| *k != "items" && *k != "stop_on_error") {
                    return Err(refuse(
                        format!(
                            "`{}` is not a batch field; send {{\"items\": [...], \"stop_on_error\": true}}",
                            crate::model::diag::escape_controls(crate::model::text::clip_chars(k, 64))
                        ),
                        &format!("/{}", crate::model::text::clip_chars(k, 64)),
                    ));
                }
                let stop = match o.get("stop_on_error") {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(refuse(
                            "`stop_on_error` must be true or false".into(),
                            "/stop_on_error",
                        ))
                    }
                };
                match o.get("items") {
                    Some(Value::Array(list)) => (list, stop, "/items"),
                    _ => {
                        return Err(refuse(
                            "`items` must be a list of calls, e.g. [{\"help\": {\"path\": \"OP\"}}, {\"exec\": {\"op\": \"OP\", \"args\": {}}}]".into(),
                            "/items",
                        ))
                    }
                }
            }
            _ => {
                return Err(refuse(
                    "a batch is {\"items\": [...]}: a list of {\"help\": ...}, {\"search\": ...} or {\"exec\": ...} calls".into(),
                    "",
                ))
            }
        };
        if list.is_empty() {
            return Err(refuse(
                "the batch has no items; send at least one call".into(),
                base,
            ));
        }
        if list.len() > MAX_ITEMS {
            return Err(refuse(
                format!(
                    "the batch has {} items; at most {MAX_ITEMS} are taken (split it)",
                    list.len()
                ),
                base,
            ));
        }
        let mut items = Vec::with_capacity(list.len());
        let mut raw = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let at = format!("{base}/{i}");
            let Some(obj) = item.as_object().filter(|o| o.len() == 1) else {
                return Err(refuse(
                    format!("item {i} must be one call: {{\"help\": {{...}}}}, {{\"search\": {{...}}}} or {{\"exec\": {{...}}}}"),
                    &at,
                ));
            };
            let (kind, args) = obj.iter().next().expect("one entry");
            let args_obj = match args {
                Value::Object(a) => a.clone(),
                _ => {
                    return Err(refuse(
                        format!(
                            "item {i}: the arguments of `{}` must be an object",
                            kind_label(kind)
                        ),
                        &format!("{at}/{}", kind_label(kind)),
                    ))
                }
            };
            let bad_args = |e: serde_json::Error| {
                refuse(
                    format!("item {i}: the arguments of `{kind}` do not fit its schema: {e}"),
                    &format!("{at}/{kind}"),
                )
            };
            let parsed = match kind.as_str() {
                "help" => BatchItem::Help(
                    serde_json::from_value(Value::Object(args_obj.clone())).map_err(bad_args)?,
                ),
                "search" => BatchItem::Search(
                    serde_json::from_value(Value::Object(args_obj.clone())).map_err(bad_args)?,
                ),
                "exec" => BatchItem::Exec(ExecCall::from_value(&Value::Object(args_obj.clone()))),
                "batch" => {
                    return Err(refuse(
                        format!(
                            "item {i} is a batch; batches do not nest (put its items in this one)"
                        ),
                        &at,
                    ))
                }
                other => {
                    return Err(refuse(
                        format!(
                            "item {i}: `{}` is not a call kind; use help, search or exec",
                            kind_label(other)
                        ),
                        &at,
                    ))
                }
            };
            raw.push((kind.clone(), Value::Object(args_obj)));
            items.push(parsed);
        }
        Ok(Batch {
            items,
            stop_on_error,
            raw,
        })
    }
}

/// A caller's kind name, bounded and escaped for a message.
fn kind_label(kind: &str) -> String {
    crate::model::diag::escape_controls(crate::model::text::clip_chars(kind, 64))
}

/// What a batch answers: each item's answer in order, and whether all succeeded.
pub fn answer(items: Vec<Value>) -> Value {
    let ok = items.iter().all(item_ok);
    json!({"ok": ok, "items": items})
}

/// Whether one item's answer is a success (an envelope's `ok`; a help page without `error`).
pub fn item_ok(answer: &Value) -> bool {
    match answer.get("ok").and_then(Value::as_bool) {
        Some(ok) => ok,
        None => answer.get("error").is_none() && answer.get("isError") != Some(&json!(true)),
    }
}

/// The answer of an item that was not run because an earlier one failed.
pub fn skipped(op: &str, failed_at: usize) -> Value {
    let failure = fail(
        op,
        codes::SKIPPED,
        format!("not run: item {failed_at} failed and stop_on_error is on"),
        json!({"failed_item": failed_at}),
        op,
    );
    json!({"op": failure.op, "ok": false, "error": *failure.error})
}

impl Gateway {
    /// Whether an exec item could change anything: a write that is not a dry run (a name that
    /// does not resolve counts as one; it fails anyway).
    pub fn is_write(&self, call: &ExecCall) -> bool {
        if call.dry_run == Some(true) {
            return false;
        }
        match resolve_exec(&self.registry, &call.op) {
            Some((op, _)) => self.registry.ops[op].kind == Kind::Write,
            None => true,
        }
    }

    /// Runs a batch in `scope` for `caller` (see [`Gateway::exec_for`]): items in order, each
    /// answered as alone, the writes after a failure skipped when `stop_on_error`.
    pub async fn batch_for(&self, batch: &Batch, scope: &Scope, caller: &str) -> Value {
        let mut answers = Vec::with_capacity(batch.items.len());
        let mut failed_at: Option<usize> = None;
        for (i, item) in batch.items.iter().enumerate() {
            let answer = match item {
                BatchItem::Help(req) => Value::clone(&self.help_in(req, scope)),
                BatchItem::Search(req) => {
                    serde_json::to_value(self.search_in(req, scope)).unwrap_or(Value::Null)
                }
                BatchItem::Exec(call) => match failed_at {
                    Some(at) if batch.stop_on_error && self.is_write(call) => skipped(&call.op, at),
                    _ => self.exec_for(call.clone(), scope, caller).await.to_json(),
                },
            };
            if failed_at.is_none() && !item_ok(&answer) {
                failed_at = Some(i);
            }
            answers.push(answer);
        }
        answer(answers)
    }

    /// Runs a batch in the gateway's scope.
    pub async fn batch(&self, batch: &Batch) -> Value {
        self.batch_for(batch, &self.scope, "").await
    }

    /// help as a caller of `scope` sees it: an op outside the scope's list is an unknown path.
    pub fn help_in(&self, req: &HelpRequest, scope: &Scope) -> std::sync::Arc<Value> {
        let page = self.help(req);
        let served = page.get("path").and_then(Value::as_str).unwrap_or_default();
        match self.registry.ops.get(served) {
            Some(r) if !scope.contains(r) => {
                std::sync::Arc::new(self.help_unknown_among(&req.path, &|p| {
                    self.registry.ops.get(p).is_none_or(|r| scope.contains(r))
                }))
            }
            _ => page,
        }
    }
}
