//! What exec answers: seed 000's envelope `{op, ok, result | error, meta}`, its error codes,
//! and the errors handlers return. Every error has a code, a message, details (an object that
//! always holds `field_errors`) and a `help_path`.

use super::validate::FieldError;
use crate::model::registry::OpRecord;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Error codes of exec envelopes.
pub mod codes {
    pub const NOT_FOUND: &str = "NOT_FOUND";
    pub const FORBIDDEN: &str = "FORBIDDEN";
    pub const EMPTY_ARGS: &str = "EMPTY_ARGS";
    pub const MALFORMED_ARGS: &str = "MALFORMED_ARGS";
    pub const VALIDATION_ERROR: &str = "VALIDATION_ERROR";
    pub const CONFLICT: &str = "CONFLICT";
    pub const NOT_IMPLEMENTED: &str = "NOT_IMPLEMENTED";
    pub const INTERNAL: &str = "INTERNAL";
    /// A shared idempotency store did not answer; the keyed write was not run.
    pub const IDEMPOTENCY_UNAVAILABLE: &str = "IDEMPOTENCY_UNAVAILABLE";
    /// A batch item that was not run: an earlier item failed and `stop_on_error` is on.
    pub const SKIPPED: &str = "SKIPPED";
}

/// What a handler returns on failure. Its `code` (e.g. `NOT_FOUND` for a missing record) is
/// passed through; `INTERNAL` is the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandlerError {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl HandlerError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        HandlerError {
            code: code.into(),
            message: message.into(),
            details: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL, message)
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// The error part of an envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    /// Always an object; `field_errors` is always present (possibly empty).
    pub details: Value,
    pub help_path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub trace_id: String,
    pub latency_ms: u64,
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// seed 000's envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub op: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// What a UI shows for the call (seed 002 §6.4): action, entity, display name, status.
    /// Absent when the op is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<crate::model::operation::Operation>,
    pub meta: Meta,
}

impl Envelope {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("envelopes serialize")
    }

    /// The error code, if any.
    pub fn code(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.code.as_str())
    }
}

/// A call that ran (or was a dry run).
pub(super) struct Done {
    pub(super) op: String,
    pub(super) result: Value,
    pub(super) dry_run: bool,
}

/// A call that was refused or failed: the op as asked and the envelope's error.
pub(super) struct Failure {
    pub(super) op: String,
    pub(super) error: Box<ErrorBody>,
}

/// A failure with `details` made an object that always has `field_errors`.
pub(super) fn fail(
    op: &str,
    code: &str,
    message: impl Into<String>,
    mut details: Value,
    help_path: &str,
) -> Failure {
    if let Some(d) = details.as_object_mut() {
        d.entry("field_errors").or_insert_with(|| json!([]));
    }
    Failure {
        op: op.to_string(),
        error: Box::new(ErrorBody {
            code: code.to_string(),
            message: message.into(),
            details,
            help_path: help_path.to_string(),
        }),
    }
}

/// VALIDATION_ERROR with every field's problem and the op's usage.
pub(super) fn fail_fields(
    op: &str,
    message: String,
    errors: Vec<FieldError>,
    record: &OpRecord,
) -> Failure {
    let details = json!({"field_errors": errors, "usage": record.usage()});
    fail(op, codes::VALIDATION_ERROR, message, details, op)
}
