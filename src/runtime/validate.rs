//! Argument validation against an op's schema, reporting every failing field at once with its
//! JSON pointer, what was expected (type, enum values, bounds) and a hint; an unknown property
//! gets the closest real name (`taskId` -> did you mean `task_id`?).

use jsonschema::error::ValidationErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One failing field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldError {
    /// Dotted path for people and models: `state_key`, `owner.user_id`, `lines.0.sku`.
    pub field: String,
    /// JSON pointer into the arguments.
    pub pointer: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

fn field_of(pointer: &str) -> String {
    pointer
        .trim_start_matches('/')
        .replace('/', ".")
        .replace("~1", "/")
        .replace("~0", "~")
}

/// The subschema that validates the value at `pointer` (following properties and items).
fn schema_at<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut s = schema;
    for seg in pointer
        .trim_start_matches('/')
        .split('/')
        .filter(|x| !x.is_empty())
    {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        s = match s.get("properties").and_then(|p| p.get(&seg)) {
            Some(sub) => sub,
            None => s.get("items").filter(|i| i.is_object())?,
        };
    }
    Some(s)
}

/// `taskId`, `task-id`, `TaskID` and `task_id` compare equal.
fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The closest property name to an unknown one.
pub fn closest_property<'a>(
    unknown: &str,
    names: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<&'a str> {
    let sq = squash(unknown);
    if let Some(same) = names.clone().into_iter().find(|n| squash(n) == sq) {
        return Some(same);
    }
    crate::diag::nearest(unknown, names)
}

fn type_hint(value: Option<&Value>, expected: &Value) -> Option<String> {
    let v = value?;
    let wants = |t: &str| {
        expected == t
            || expected
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == t))
    };
    match v {
        Value::String(s)
            if (wants("integer") || wants("number")) && s.trim().parse::<f64>().is_ok() =>
        {
            Some(format!("send the number {s} without quotes"))
        }
        Value::String(s) if wants("boolean") && (s == "true" || s == "false") => {
            Some(format!("send {s} without quotes"))
        }
        Value::String(s) if wants("array") => {
            Some(format!("send a list, e.g. [{}]", Value::String(s.clone())))
        }
        Value::Number(n) if wants("string") => Some(format!("send \"{n}\" as a string")),
        _ => None,
    }
}

/// Every failing field of `args`, in the order the validator found them.
pub fn field_errors(
    validator: &jsonschema::Validator,
    schema: &Value,
    args: &Value,
) -> Vec<FieldError> {
    let mut out = Vec::new();
    for e in validator.iter_errors(args) {
        let at = e.instance_path().as_str().to_string();
        let here = schema_at(schema, &at);
        let value = args.pointer(&at);
        match e.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let names: Vec<&str> = here
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object)
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                for u in unexpected {
                    let pointer = format!("{at}/{}", u.replace('~', "~0").replace('/', "~1"));
                    let hint = match closest_property(u, names.iter().copied()) {
                        Some(n) => format!("did you mean `{n}`?"),
                        None => format!("remove it; known arguments: {}", names.join(", ")),
                    };
                    out.push(FieldError {
                        field: field_of(&pointer),
                        pointer,
                        message: format!("unknown argument `{u}`"),
                        expected: Some(json!({"one_of": names})),
                        hint: Some(hint),
                    });
                }
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let pointer = format!("{at}/{name}");
                let sub = here
                    .and_then(|s| s.get("properties"))
                    .and_then(|p| p.get(name));
                let expected = sub.and_then(|s| s.get("type")).map(|t| json!({"type": t}));
                let desc = sub
                    .and_then(|s| s.get("description"))
                    .and_then(Value::as_str);
                out.push(FieldError {
                    field: field_of(&pointer),
                    pointer,
                    message: format!("missing required argument `{name}`"),
                    expected,
                    hint: Some(match desc {
                        Some(d) => format!("add `{name}`: {d}"),
                        None => format!("add `{name}`"),
                    }),
                });
            }
            kind => {
                let (expected, hint) = match kind {
                    ValidationErrorKind::Type { .. } => {
                        let t = here
                            .and_then(|s| s.get("type"))
                            .cloned()
                            .unwrap_or(Value::Null);
                        (Some(json!({"type": t})), type_hint(value, &t))
                    }
                    ValidationErrorKind::Enum { options } => {
                        let opts: Vec<&str> = options
                            .as_array()
                            .map(|a| a.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        let hint = value
                            .and_then(Value::as_str)
                            .and_then(|v| closest_property(v, opts.iter().copied()))
                            .map(|c| format!("did you mean `{c}`?"))
                            .or_else(|| Some("use one of the listed values".into()));
                        (Some(json!({"enum": options.as_ref()})), hint)
                    }
                    ValidationErrorKind::Minimum { limit } => {
                        (Some(json!({"minimum": limit})), None)
                    }
                    ValidationErrorKind::Maximum { limit } => {
                        (Some(json!({"maximum": limit})), None)
                    }
                    ValidationErrorKind::ExclusiveMinimum { limit } => {
                        (Some(json!({"exclusive_minimum": limit})), None)
                    }
                    ValidationErrorKind::ExclusiveMaximum { limit } => {
                        (Some(json!({"exclusive_maximum": limit})), None)
                    }
                    ValidationErrorKind::MinLength { limit } => {
                        (Some(json!({"min_length": limit})), None)
                    }
                    ValidationErrorKind::MaxLength { limit } => (
                        Some(json!({"max_length": limit})),
                        Some("shorten it".into()),
                    ),
                    ValidationErrorKind::MinItems { limit } => {
                        (Some(json!({"min_items": limit})), None)
                    }
                    ValidationErrorKind::MaxItems { limit } => {
                        (Some(json!({"max_items": limit})), None)
                    }
                    ValidationErrorKind::Pattern { pattern } => {
                        (Some(json!({"pattern": pattern})), None)
                    }
                    ValidationErrorKind::Format { format } => {
                        (Some(json!({"format": format})), None)
                    }
                    _ => (None, None),
                };
                out.push(FieldError {
                    field: if at.is_empty() {
                        "(arguments)".into()
                    } else {
                        field_of(&at)
                    },
                    pointer: at.clone(),
                    message: e.to_string(),
                    expected,
                    hint,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_at_once_with_hints() {
        let schema = json!({"type": "object", "properties": {
            "task_id": {"type": "string", "description": "Task ID."},
            "state_key": {"type": "string", "enum": ["todo", "in_progress", "done"]},
            "priority": {"type": "integer", "minimum": 1, "maximum": 5},
            "owner": {"type": "object", "properties": {"user_id": {"type": "string"}}, "required": ["user_id"], "additionalProperties": false}
        }, "required": ["task_id"], "additionalProperties": false});
        let v = jsonschema::validator_for(&schema).unwrap();
        let errs = field_errors(
            &v,
            &schema,
            &json!({"taskId": "t1", "state_key": "dne", "priority": "3", "owner": {}}),
        );
        let by = |f: &str| {
            errs.iter()
                .find(|e| e.field == f)
                .unwrap_or_else(|| panic!("{f} in {errs:?}"))
        };
        assert_eq!(
            by("taskId").hint.as_deref(),
            Some("did you mean `task_id`?")
        );
        assert_eq!(by("task_id").message, "missing required argument `task_id`");
        assert_eq!(
            by("state_key").hint.as_deref(),
            Some("did you mean `done`?")
        );
        assert_eq!(
            by("state_key").expected,
            Some(json!({"enum": ["todo", "in_progress", "done"]}))
        );
        assert_eq!(
            by("priority").hint.as_deref(),
            Some("send the number 3 without quotes")
        );
        assert_eq!(by("owner.user_id").pointer, "/owner/user_id");
        assert_eq!(errs.len(), 5);
    }
}
