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
    crate::model::diag::nearest(unknown, names)
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

/// An argument the schema does not name, at a level whose schema does not forbid extras (there
/// the validator reports it already): most real schemas leave `additionalProperties` open, so
/// `taskId` for `task_id` would otherwise pass silently or surface only as "missing `task_id`".
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownArgument {
    /// JSON pointer of the unknown key.
    pub pointer: String,
    pub name: String,
    /// The closest argument name at that level, if any is close.
    pub closest: Option<String>,
    /// Whether `closest` is required there and was not given: the call cannot be right.
    pub closest_missing: bool,
}

/// At most this many unknown arguments are reported, each name cut to `MAX_NAME_CHARS`: an
/// envelope never echoes megabytes of what a caller sent.
pub const MAX_UNKNOWN_REPORTED: usize = 20;
const MAX_NAME_CHARS: usize = 64;

/// Unknown arguments at every object level the schema describes with `properties` (at most
/// `MAX_UNKNOWN_REPORTED`).
pub fn unknown_arguments(schema: &Value, args: &Value) -> Vec<UnknownArgument> {
    let mut out = Vec::new();
    // Arguments of a top-level anyOf/oneOf/allOf's alternatives are known arguments too.
    let projected = crate::model::schema::provider_projection(schema);
    walk_unknown(
        projected.as_ref().unwrap_or(schema),
        args,
        String::new(),
        0,
        &mut out,
    );
    out
}

/// Removes, at every object level the schema describes with `properties`, the arguments it
/// does not declare when it does not open the object on purpose (no `additionalProperties`
/// and no `patternProperties`): what a handler or an upstream would otherwise receive
/// unchecked. Returns the pointers removed, in the form [`unknown_arguments`] reports them.
pub fn strip_undeclared(schema: &Value, args: &mut Value) -> std::collections::BTreeSet<String> {
    let projected = crate::model::schema::provider_projection(schema);
    let mut out = std::collections::BTreeSet::new();
    strip_walk(
        projected.as_ref().unwrap_or(schema),
        args,
        String::new(),
        0,
        &mut out,
    );
    out
}

fn strip_walk(
    schema: &Value,
    args: &mut Value,
    at: String,
    depth: usize,
    out: &mut std::collections::BTreeSet<String>,
) {
    const MAX_DEPTH: usize = 32;
    let (Some(obj), Some(props)) = (
        args.as_object_mut(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    let open_on_purpose =
        schema.get("additionalProperties").is_some() || schema.get("patternProperties").is_some();
    if !open_on_purpose {
        obj.retain(|key, _| {
            let keep = props.contains_key(key);
            if !keep {
                out.insert(child_pointer(&at, key));
            }
            keep
        });
    }
    for (key, value) in obj.iter_mut() {
        if let Some(sub) = props.get(key) {
            strip_walk(sub, value, child_pointer(&at, key), depth + 1, out);
        }
    }
}

/// At most this many field errors are reported for one call (a closed schema sent 200,000
/// unknown keys answers with 20), and no message or pointer quotes more than a bounded prefix
/// of what the caller sent.
pub const MAX_FIELD_ERRORS: usize = 20;
const MAX_MESSAGE_CHARS: usize = 300;
const MAX_POINTER_CHARS: usize = 256;

/// `text` cut to `max` characters, saying how much was left out.
pub fn clip(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        text.to_string()
    } else {
        format!(
            "{}… ({} more characters)",
            text.chars().take(max).collect::<String>(),
            n - max
        )
    }
}

/// A name from the caller, cut short for messages.
fn shown(name: &str) -> String {
    if name.chars().count() <= MAX_NAME_CHARS {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(MAX_NAME_CHARS).collect::<String>())
    }
}

/// The pointer of argument `key` below `at`, its name cut as messages show it.
fn child_pointer(at: &str, key: &str) -> String {
    format!("{at}/{}", shown(key).replace('~', "~0").replace('/', "~1"))
}

fn walk_unknown(
    schema: &Value,
    args: &Value,
    at: String,
    depth: usize,
    out: &mut Vec<UnknownArgument>,
) {
    // Bounded: arguments nested deeper than any sane schema are not inspected.
    const MAX_DEPTH: usize = 32;
    let (Some(obj), Some(props)) = (
        args.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let required = crate::model::schema::required(schema);
    for (key, value) in obj {
        if out.len() >= MAX_UNKNOWN_REPORTED {
            return;
        }
        let pointer = child_pointer(&at, key);
        match props.get(key) {
            Some(sub) => walk_unknown(sub, value, pointer, depth + 1, out),
            None if closed => {}
            None => {
                let missing_required = required.iter().copied().filter(|r| !obj.contains_key(*r));
                // A missing required name first: `taskId` when `task_id` is missing, or one
                // inside the other (`filePath` when `path` is missing).
                let closest = closest_property(key, missing_required.clone())
                    .or_else(|| {
                        let k = squash(key);
                        let mut inside = missing_required.filter(|r| {
                            let r = squash(r);
                            r.len() >= 3 && (k.contains(&r) || r.contains(&k))
                        });
                        match (inside.next(), inside.next()) {
                            (Some(only), None) => Some(only),
                            _ => None,
                        }
                    })
                    .or_else(|| closest_property(key, props.keys().map(String::as_str)))
                    .map(str::to_owned);
                let closest_missing = closest
                    .as_deref()
                    .is_some_and(|c| required.contains(&c) && !obj.contains_key(c));
                out.push(UnknownArgument {
                    pointer,
                    name: shown(key),
                    closest,
                    closest_missing,
                });
            }
        }
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
        if out.len() >= MAX_FIELD_ERRORS {
            break;
        }
        let at = clip(e.instance_path().as_str(), MAX_POINTER_CHARS);
        let here = schema_at(schema, &at);
        let value = args.pointer(&at);
        match e.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let names: Vec<&str> = here
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object)
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                for u in unexpected
                    .iter()
                    .take(MAX_FIELD_ERRORS - out.len().min(MAX_FIELD_ERRORS))
                {
                    let u = shown(u);
                    let pointer = format!("{at}/{}", u.replace('~', "~0").replace('/', "~1"));
                    let hint = match closest_property(&u, names.iter().copied()) {
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
                    // The validator's message quotes the offending value whole.
                    message: clip(&e.to_string(), MAX_MESSAGE_CHARS),
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

    #[test]
    fn unknown_arguments_under_open_schemas() {
        let schema = json!({"type": "object", "properties": {
            "task_id": {"type": "string"},
            "title": {"type": "string"},
            "owner": {"type": "object", "properties": {"user_id": {"type": "string"}}}
        }, "required": ["task_id"]});
        let found = unknown_arguments(
            &schema,
            &json!({"taskId": "t1", "titel": "x", "zzz": 1, "owner": {"userId": "u"}}),
        );
        let by = |n: &str| found.iter().find(|u| u.name == n).unwrap();
        assert_eq!(by("taskId").closest.as_deref(), Some("task_id"));
        assert!(by("taskId").closest_missing);
        assert_eq!(by("titel").closest.as_deref(), Some("title"));
        assert!(!by("titel").closest_missing);
        assert_eq!(by("zzz").closest, None);
        assert_eq!(by("userId").pointer, "/owner/userId");
        assert_eq!(by("userId").closest.as_deref(), Some("user_id"));
        let path = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        let found = unknown_arguments(&path, &json!({"filePath": "/x"}));
        assert_eq!(found[0].closest.as_deref(), Some("path"));
        assert!(found[0].closest_missing);
        // A closed level is the validator's job: nothing reported twice.
        let closed =
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false});
        assert!(unknown_arguments(&closed, &json!({"b": 1})).is_empty());
        // Bounded: 10,000 unknown keys and a 1 MB name give 20 short reports.
        let mut many = serde_json::Map::new();
        many.insert("k".repeat(1 << 20), json!(1));
        for i in 0..10_000 {
            many.insert(format!("zz{i}"), json!(i));
        }
        let found = unknown_arguments(&schema, &Value::Object(many));
        assert_eq!(found.len(), MAX_UNKNOWN_REPORTED);
        assert!(found
            .iter()
            .all(|u| u.name.chars().count() <= 65 && u.pointer.len() < 200));
    }
}
