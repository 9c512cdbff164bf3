//! exec: resolve the op (exact, tool name, alias, sanitized) -> scope check -> parse and
//! normalize the arguments (aliases) -> JSON Schema validation (every field at once) -> dry run,
//! idempotency -> the handler -> an envelope. Hostile arguments are measured without recursion
//! before anything walks them.

use super::envelope::{fail, fail_fields, Done, Failure};
use super::validate::{self, FieldError};
use super::{codes, idempotency, Envelope, ErrorBody, Gateway, Meta, Scope};
use crate::model::registry::{Kind, OpRecord};
use crate::model::resolve::{resolve_exec, resolve_forgiving};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::time::Instant;

/// An exec call as the model sends it. `args` may arrive as an object, as JSON text (kept raw
/// when it does not parse), or not at all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecCall {
    #[serde(default)]
    pub op: String,
    #[serde(default)]
    pub args: Option<Value>,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub dry_run: Option<bool>,
}

impl ExecCall {
    pub fn new(op: impl Into<String>, args: Value) -> Self {
        ExecCall {
            op: op.into(),
            args: Some(args),
            ..Default::default()
        }
    }

    /// Reads a call from whatever JSON the model produced; fields of the wrong type are ignored
    /// (and then reported by exec as a missing op or malformed arguments).
    pub fn from_value(v: &Value) -> Self {
        ExecCall {
            op: v
                .get("op")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            // A copy cut below the depth limit: cloning hostile nesting whole would overflow
            // the stack; the cut copy is still too deep, so exec answers MALFORMED_ARGS.
            args: v.get("args").map(|a| clone_bounded(a, MAX_ARGS_DEPTH + 1)),
            idempotency_key: v
                .get("idempotency_key")
                .and_then(Value::as_str)
                .map(str::to_owned),
            dry_run: v.get("dry_run").and_then(Value::as_bool),
        }
    }
}

impl Gateway {
    /// exec in the gateway's scope.
    pub async fn exec(&self, call: ExecCall) -> Envelope {
        self.exec_in(call, &self.scope).await
    }

    /// exec in a given scope (e.g. per conversation or per turn).
    pub async fn exec_in(&self, call: ExecCall, scope: &Scope) -> Envelope {
        self.exec_for(call, scope, "").await
    }

    /// exec in a scope for one caller: its idempotency keys live in a partition of the store
    /// named by `caller` (a server passes the principal and surface), so another caller sending
    /// the same key neither replays this one's result nor blocks it, nor learns it is in use.
    /// An empty `caller` is the shared partition `exec_in` uses.
    pub async fn exec_for(&self, call: ExecCall, scope: &Scope, caller: &str) -> Envelope {
        let started = Instant::now();
        let trace_id = self.trace_id();
        // The operation's display name as the arguments carry it, read before the call takes
        // them (only the one string is kept).
        let spec = self.operation_spec(&call.op, scope);
        let named = spec
            .as_ref()
            .map(|s| s.operation(call.args.as_ref(), None, "").entity_name);
        let mut warnings = Vec::new();
        let mut ran = false;
        let outcome = self
            .run(call, scope, caller, &trace_id, &mut ran, &mut warnings)
            .await;
        let operation = |result: Option<&Value>, status: &str| {
            let spec = spec.as_ref()?;
            let mut op = spec.operation(None, result, status);
            if let Some(Some(name)) = &named {
                op.entity_name = Some(name.clone());
            }
            Some(op)
        };
        let meta = |dry_run| Meta {
            trace_id: trace_id.clone(),
            latency_ms: started.elapsed().as_millis() as u64,
            warnings: warnings.clone(),
            dry_run,
        };
        let envelope = match outcome {
            Ok(Done {
                op,
                result,
                dry_run,
            }) => Envelope {
                operation: operation(Some(&result), if dry_run { "dry_run" } else { "success" }),
                op,
                ok: true,
                result: Some(result),
                error: None,
                meta: meta(dry_run),
            },
            Err(Failure { op, error }) => Envelope {
                operation: operation(None, "error"),
                op,
                ok: false,
                result: None,
                error: Some(*error),
                meta: meta(false),
            },
        };
        if let Some(o) = &envelope.operation {
            // Events follow calls that reached their handler: started, then success or error.
            if ran {
                self.notify(&envelope.op, &trace_id, o);
            }
        }
        envelope
    }

    /// Everything up to the handler, without running it: resolve, scope, arguments, validation.
    /// The CLI's `exec` and dry runs use this.
    pub fn prepare(
        &self,
        call: &ExecCall,
        scope: &Scope,
        warnings: &mut Vec<String>,
    ) -> Result<(String, Value), Box<ErrorBody>> {
        self.prepare_inner(call, scope, warnings)
            .map_err(|f| f.error)
    }

    fn prepare_inner(
        &self,
        call: &ExecCall,
        scope: &Scope,
        warnings: &mut Vec<String>,
    ) -> Result<(String, Value), Failure> {
        let reg = &self.registry;
        // 1. Resolve (a name longer than any op is unknown without further work).
        let resolved = if crate::model::text::over_name_limit(&call.op) {
            None
        } else {
            resolve_exec(reg, &call.op)
        };
        let Some((op, how)) = resolved else {
            return Err(self.not_found(&call.op, scope));
        };
        let record = &reg.ops[op];
        // 2. Scope: every spelling got here, so every spelling is checked. An op outside the
        // scope's list is one the caller cannot see: it answers exactly as an unknown name
        // would, with no warning about how it was spelled (existence is information).
        // FORBIDDEN is for an op the caller sees but may not run (a write in a read-only scope).
        if !scope.contains(record) {
            return Err(self.not_found(&call.op, scope));
        }
        if let Some(w) = how.warning(&call.op, op) {
            warnings.push(w);
        }
        if let Some(why) = scope.refuses(record) {
            return Err(fail(
                op,
                codes::FORBIDDEN,
                why,
                json!({"scope": scope.name, "kind": record.kind.as_str()}),
                op,
            ));
        }
        // 3. Arguments.
        let mut args = parse_args(op, call.args.as_ref(), warnings)?;
        // 4. Aliases the model tends to use for real argument names.
        apply_arg_aliases(record, &mut args, warnings);
        // 5. Empty arguments for an op that needs some.
        if args.as_object().is_some_and(|a| a.is_empty()) && !record.required_args.is_empty() {
            let minimal = record
                .examples
                .first()
                .map(|e| json!({"op": op, "args": e.args}));
            return Err(fail(
                op,
                codes::EMPTY_ARGS,
                format!(
                    "`{op}` needs arguments: {}",
                    record.required_args.join(", ")
                ),
                json!({"required_args": record.required_args, "minimal_call": minimal, "usage": record.usage()}),
                op,
            ));
        }
        // 6. Validation, every field at once; unknown names under open schemas too.
        let errors = self.check_arguments(record, &mut args, warnings);
        if !errors.is_empty() {
            let n = errors.len();
            return Err(fail_fields(
                op,
                format!(
                    "{n} argument problem{} in `{op}`",
                    if n == 1 { "" } else { "s" }
                ),
                errors,
                record,
            ));
        }
        Ok((op.to_string(), args))
    }

    /// Step 6 of exec: every field's problem at once, with names the schema does not declare
    /// dropped (unless the op opens its schema on purpose), so neither a handler nor an upstream
    /// receives a field nobody validated. A near-miss of a missing required name is an error
    /// that says what to rename; other unknown names are warnings.
    fn check_arguments(
        &self,
        record: &OpRecord,
        args: &mut Value,
        warnings: &mut Vec<String>,
    ) -> Vec<FieldError> {
        let unknown = validate::unknown_arguments(&record.parameters_schema, args);
        let dropped = if record.pass_unknown_arguments {
            Default::default()
        } else {
            validate::strip_undeclared(&record.parameters_schema, args)
        };
        let mut errors = self.validate(record, args);
        for u in unknown {
            let fate = if dropped.contains(&u.pointer) {
                "the schema does not declare it, so it was dropped before the call"
            } else {
                "the schema lets it through, so it is passed on unchecked"
            };
            let field = u.pointer.trim_start_matches('/').replace('/', ".");
            match (&u.closest, u.closest_missing) {
                (Some(c), true) => {
                    let message = format!(
                        "`{}` is not an argument of this op; did you mean `{c}`?",
                        u.name
                    );
                    // The missing-required error for `c` says what was probably meant.
                    for e in errors
                        .iter_mut()
                        .filter(|e| e.field.rsplit('.').next() == Some(c.as_str()))
                    {
                        e.hint = Some(format!("you sent `{}`: rename it to `{c}`", u.name));
                    }
                    errors.push(FieldError {
                        field,
                        pointer: u.pointer,
                        message,
                        expected: None,
                        hint: Some(format!("rename `{}` to `{c}`", u.name)),
                    });
                }
                (Some(c), false) => warnings.push(format!(
                    "`{field}` is not an argument of this op; did you mean `{c}`? ({fate})"
                )),
                (None, _) => {
                    warnings.push(format!("`{field}` is not an argument of this op ({fate})"))
                }
            }
        }
        errors
    }

    /// Validates arguments against the op's schema (validator compiled once, on first use).
    pub fn validate(&self, record: &OpRecord, args: &Value) -> Vec<FieldError> {
        let validators = self.validators.get_or_init(|| {
            let ops = self.registry.ops.keys();
            ops.map(|op| (op.clone(), std::sync::OnceLock::new()))
                .collect()
        });
        let compiled = validators[&record.op].get_or_init(|| {
            jsonschema::validator_for(&record.parameters_schema).map_err(|e| e.to_string())
        });
        match compiled {
            Ok(v) => validate::field_errors(v, &record.parameters_schema, args),
            Err(e) => vec![FieldError {
                field: "(schema)".into(),
                pointer: String::new(),
                message: format!("the op's schema cannot be compiled: {e}"),
                expected: None,
                hint: None,
            }],
        }
    }

    async fn run(
        &self,
        mut call: ExecCall,
        scope: &Scope,
        caller: &str,
        trace_id: &str,
        ran: &mut bool,
        warnings: &mut Vec<String>,
    ) -> Result<Done, Failure> {
        let prepared = self.prepare_inner(&call, scope, warnings);
        // Refused arguments may be hostile nesting: take them apart without recursion
        // (serde_json drops nested values recursively).
        if prepared.is_err() {
            drop_iteratively(call.args.take());
        }
        let (op, args) = prepared?;
        let record = &self.registry.ops[&op];
        let dry_run = call.dry_run.unwrap_or(record.dry_run_default);
        if dry_run {
            if call.dry_run.is_none() {
                warnings.push(format!(
                    "`{op}` runs as a dry run by default; pass dry_run: false to apply"
                ));
            }
            let result = json!({
                "dry_run": true,
                "would_run": {"op": op, "tool_name": record.tool_name, "args": args},
                "kind": record.kind.as_str(),
                "destructive": record.destructive,
            });
            return Ok(Done {
                op,
                result,
                dry_run: true,
            });
        }
        let key = usable_key(&op, call.idempotency_key, record.kind, warnings)?;
        // What the store holds: the caller's key inside the caller's partition (messages
        // name the key as the caller sent it).
        let stored = key.as_deref().map(|k| idempotency::partitioned(caller, k));
        if let (Some(k), Some(sk)) = (&key, &stored) {
            if let Some(result) = self.claim_key(&op, k, sk, &args, warnings).await? {
                return Ok(Done {
                    op,
                    result,
                    dry_run: false,
                });
            }
        }
        let Some(handler) = self.handlers.get(&op).cloned() else {
            if let Some(sk) = &stored {
                self.forget(sk).await;
            }
            return Err(fail(
                &op,
                codes::NOT_IMPLEMENTED,
                format!("no handler is registered for `{op}`"),
                json!({}),
                &op,
            ));
        };
        *ran = true;
        if let Some(spec) = self.operation_spec(&op, scope) {
            self.notify(&op, trace_id, &spec.operation(Some(&args), None, "started"));
        }
        match handler(args).await {
            Ok(result) => {
                if let (Some(k), Some(sk)) = (&key, &stored) {
                    let size = crate::model::canonical::json_len(&result);
                    if size > idempotency::MAX_STORED_RESULT {
                        self.forget(sk).await;
                        warnings.push(format!("the result is {size} bytes, over the {} an idempotency key keeps, so it was not stored: a repeat with idempotency_key `{k}` runs the op again", idempotency::MAX_STORED_RESULT));
                    } else if let Err(e) = self.idempotency.finish(sk, &result).await {
                        warnings.push(format!("the result was not stored for idempotency_key `{k}` ({e}); a repeat may run the op again"));
                    }
                }
                Ok(Done {
                    op,
                    result,
                    dry_run: false,
                })
            }
            Err(e) => {
                if let Some(sk) = &stored {
                    self.forget(sk).await;
                }
                let mut details = e.details.unwrap_or_else(|| json!({}));
                if !details.is_object() {
                    details = json!({"detail": details});
                }
                Err(fail(&op, &e.code, e.message, details, &op))
            }
        }
    }

    /// Claims `k` for this call in the idempotency store: `Some(result)` replays a finished
    /// call, `None` means run it; a key taken by another call or still running is CONFLICT, and
    /// a store that does not answer refuses the call (running it could run it twice).
    async fn claim_key(
        &self,
        op: &str,
        k: &str,
        stored: &str,
        args: &Value,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Value>, Failure> {
        // Stores keep a digest of the arguments, never the arguments themselves.
        let digest = Value::String(idempotency::args_digest(args));
        let seen = match self.idempotency.begin(stored, op, &digest).await {
            Ok(seen) => seen,
            Err(e) => {
                return Err(fail(
                    op,
                    codes::IDEMPOTENCY_UNAVAILABLE,
                    format!("the idempotency store did not answer, so `{op}` was not run (running it could run it twice): {e}; retry with the same key"),
                    json!({"idempotency_key": k}),
                    op,
                ))
            }
        };
        match seen {
            idempotency::Seen::New => {}
            idempotency::Seen::TakenOver => warnings.push(format!("idempotency_key `{k}` was held by an earlier attempt that was reported not run; this call took it over and ran")),
            idempotency::Seen::Replay(result) => {
                warnings.push(format!("replayed the first result for idempotency_key `{k}`; the op did not run again"));
                return Ok(Some(result));
            }
            idempotency::Seen::Mismatch { op: first } => {
                return Err(fail(
                    op,
                    codes::CONFLICT,
                    format!("idempotency_key `{k}` was used for a different call (`{first}` with other arguments)"),
                    json!({"idempotency_key": k, "first_op": first}),
                    op,
                ));
            }
            idempotency::Seen::InFlight { running_for } => {
                let (since, details) = match running_for {
                    Some(d) => (
                        format!(" (started {:.1} s ago)", d.as_secs_f64()),
                        json!({"idempotency_key": k, "running_for_ms": u64::try_from(d.as_millis()).unwrap_or(u64::MAX)}),
                    ),
                    None => (String::new(), json!({"idempotency_key": k})),
                };
                return Err(fail(
                    op,
                    codes::CONFLICT,
                    format!(
                        "a call with idempotency_key `{k}` is still running{since}; retry shortly (an attempt that was reported not run frees its key as soon as the store answers again)"
                    ),
                    details,
                    op,
                ));
            }
        }
        Ok(None)
    }

    /// Releases a key whose call did not run or failed, so it can be retried. If the store does
    /// not answer, the key expires with its ttl.
    async fn forget(&self, key: &str) {
        let _ = self.idempotency.abandon(key).await;
    }

    /// NOT_FOUND with did-you-mean candidates (in scope) and the nearest directory's help path.
    fn not_found(&self, input: &str, scope: &Scope) -> Failure {
        let reg = &self.registry;
        // Suggestions and the echo work on a bounded prefix of what the caller sent.
        let input = crate::model::text::clip_chars(input, crate::model::text::MAX_NAME_INPUT_CHARS);
        let in_scope = |r: &OpRecord| scope.contains(r) && !r.hidden;
        let mut candidates: Vec<String> = Vec::new();
        if let Some((op, _)) =
            resolve_forgiving(reg, input).filter(|(op, _)| in_scope(&reg.ops[*op]))
        {
            candidates.push(op.to_string());
        }
        let words = input.replace(['.', '_', '-', '/'], " ");
        for (op, _) in self.rank(&words, &in_scope) {
            if !candidates.contains(&op) {
                candidates.push(op);
            }
            if candidates.len() >= 3 {
                break;
            }
        }
        let help_path = candidates
            .first()
            .and_then(|c| reg.ops.get(c))
            .map(|r| match &r.entity {
                Some(e) => format!("{}.{e}", r.group),
                None => r.group.clone(),
            })
            .unwrap_or_else(|| crate::model::help::ROOT.to_string());
        let message = if input.trim().is_empty() {
            "no op given; pass `op`, e.g. one from search or help".to_string()
        } else {
            format!("unknown op `{}`", input.trim())
        };
        Failure {
            op: input.trim().to_string(),
            error: Box::new(ErrorBody {
                code: codes::NOT_FOUND.into(),
                message,
                details: json!({"field_errors": [], "did_you_mean": candidates}),
                help_path,
            }),
        }
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The idempotency key a call may use: only writes keep one (a read's is ignored, with a
/// warning), and one longer than a store keeps is a VALIDATION_ERROR.
fn usable_key(
    op: &str,
    key: Option<String>,
    kind: Kind,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, Failure> {
    let key = match (key.filter(|k| !k.is_empty()), kind) {
        (Some(k), Kind::Write) => Some(k),
        (Some(_), Kind::Read) => {
            warnings.push("`idempotency_key` is ignored for reads".into());
            None
        }
        (None, _) => None,
    };
    if let Some(k) = key.as_ref().filter(|k| k.len() > idempotency::MAX_KEY_LEN) {
        return Err(fail(
            op,
            codes::VALIDATION_ERROR,
            format!(
                "`idempotency_key` is {} bytes; keys are at most {} (a UUID or a short hash fits)",
                k.len(),
                idempotency::MAX_KEY_LEN
            ),
            json!({"pointer": "/idempotency_key"}),
            op,
        ));
    }
    Ok(key)
}

/// The call's `args` as an object: absent or null is `{}`, JSON text is parsed (and said so),
/// anything else is MALFORMED_ARGS quoting a bounded part of it. Depth is checked first, before
/// anything walks them recursively (a clone, a serialization into an error, a validator).
fn parse_args(op: &str, raw: Option<&Value>, warnings: &mut Vec<String>) -> Result<Value, Failure> {
    if let Some(depth) = raw.and_then(|a| nesting_beyond(a, MAX_ARGS_DEPTH)) {
        return Err(fail(
            op,
            codes::MALFORMED_ARGS,
            format!("`args` nest more than {MAX_ARGS_DEPTH} levels deep (at least {depth})"),
            json!({"max_depth": MAX_ARGS_DEPTH}),
            op,
        ));
    }
    Ok(match raw {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => {
                warnings.push("`args` was a JSON string; parsed it as an object".into());
                v
            }
            Ok(other) => {
                return Err(fail(
                    op,
                    codes::MALFORMED_ARGS,
                    format!("`args` must be a JSON object, got {}", kind_name(&other)),
                    json!({"raw_args": validate::clip(raw, MAX_RAW_ECHO_CHARS)}),
                    op,
                ));
            }
            Err(e) => {
                return Err(fail(
                    op,
                    codes::MALFORMED_ARGS,
                    format!("`args` is not valid JSON: {e}"),
                    json!({"raw_args": validate::clip(raw, MAX_RAW_ECHO_CHARS), "parse_error": {"message": e.to_string(), "line": e.line(), "column": e.column()}}),
                    op,
                ));
            }
        },
        Some(v @ Value::Object(_)) => v.clone(),
        Some(other) => {
            return Err(fail(
                op,
                codes::MALFORMED_ARGS,
                format!("`args` must be a JSON object, got {}", kind_name(other)),
                json!({"raw_args": validate::clip(&other.to_string(), MAX_RAW_ECHO_CHARS)}),
                op,
            ));
        }
    })
}

/// Arguments nest at most this deep (serde_json's own parser stops at 128).
pub const MAX_ARGS_DEPTH: usize = 128;
/// An error envelope quotes at most this much of malformed input.
const MAX_RAW_ECHO_CHARS: usize = 200;

/// Drops a value of any depth with an explicit stack.
fn drop_iteratively(v: Option<Value>) {
    let mut stack: Vec<Value> = v.into_iter().collect();
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// `v` with everything deeper than `depth` levels replaced by `null`.
fn clone_bounded(v: &Value, depth: usize) -> Value {
    match v {
        _ if depth == 0 => Value::Null,
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| clone_bounded(i, depth - 1)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, i)| (k.clone(), clone_bounded(i, depth - 1)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `Some(depth)` when `v` nests deeper than `max`; iterative, so any depth is safe to measure.
fn nesting_beyond(v: &Value, max: usize) -> Option<usize> {
    let mut stack = vec![(v, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > max {
            return Some(depth);
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    None
}

/// Renames aliased arguments (`name` -> `title`, nested `task.name` -> `title`) and reports each.
fn apply_arg_aliases(record: &OpRecord, args: &mut Value, warnings: &mut Vec<String>) {
    let Some(obj) = args.as_object_mut() else {
        return;
    };
    for (alias, target) in &record.arg_aliases {
        let (taken, shown) = match alias.split_once('.') {
            Some((outer, inner)) => {
                let v = obj
                    .get_mut(outer)
                    .and_then(Value::as_object_mut)
                    .and_then(|o| o.remove(inner));
                if obj
                    .get(outer)
                    .and_then(Value::as_object)
                    .is_some_and(|o| o.is_empty())
                {
                    obj.remove(outer);
                }
                (v, alias.clone())
            }
            None => (obj.remove(alias), alias.clone()),
        };
        let Some(v) = taken else { continue };
        if obj.contains_key(target) {
            warnings.push(format!("dropped `{shown}`: `{target}` was also given"));
        } else {
            obj.insert(target.clone(), v);
            warnings.push(format!("renamed argument `{shown}` to `{target}`"));
        }
    }
}
