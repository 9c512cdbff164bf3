//! Operation events (seed 002 §6.4): what a product's UI shows for each call an agent makes,
//! "Updated task “Ship v2”", without raw ids. Every op's action and entity are known at build
//! time, so the table is derived from the registry, and the runtime fills in the display name
//! from the call's arguments or result and the status.

use crate::model::registry::{Kind, OpRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An op's entry in the operation table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationSpec {
    /// list, search, read, create, update, delete or other.
    pub action: String,
    /// The entity in words (`task`, `calendar event`); the group when the op has no entity.
    pub entity_type: String,
    /// Where the display name lives: `args.<path>` or `result.<path>` (dotted), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
}

/// One operation as an event or on an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    pub action: String,
    pub entity_type: String,
    /// The entity's display name, when the call's arguments or result carry one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_name: Option<String>,
    /// started, success, error or dry_run.
    pub status: String,
}

/// The verbs of each action (the op's own action word, or its last `_` part).
const ACTIONS: &[(&str, &[&str])] = &[
    ("list", &["list", "browse", "enumerate", "all"]),
    (
        "search",
        &["search", "find", "query", "lookup", "filter", "match"],
    ),
    (
        "read",
        &[
            "get", "read", "fetch", "show", "view", "describe", "retrieve", "load", "inspect",
            "open", "download", "export", "count", "check", "status", "visit",
        ],
    ),
    (
        "create",
        &[
            "create", "add", "new", "insert", "post", "make", "register", "upload", "import",
            "schedule", "send", "invite", "write", "start",
        ],
    ),
    (
        "update",
        &[
            "update",
            "set",
            "edit",
            "patch",
            "modify",
            "rename",
            "move",
            "change",
            "assign",
            "complete",
            "close",
            "reopen",
            "link",
            "unlink",
            "mark",
            "toggle",
            "reorder",
            "reschedule",
            "reorganize",
            "upsert",
            "replace",
            "archive",
            "restore",
            "enable",
            "disable",
            "approve",
            "reject",
            "merge",
        ],
    ),
    (
        "delete",
        &[
            "delete", "remove", "destroy", "purge", "drop", "erase", "clear", "revoke",
        ],
    ),
];

/// The action of an op: from its action word, else `read` for a read op and `other`.
pub fn action_of(action: &str, kind: Kind) -> &'static str {
    let lower = action.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(['_', '-', '.']).collect();
    for word in std::iter::once(lower.as_str()).chain(words.iter().copied()) {
        if let Some((a, _)) = ACTIONS.iter().find(|(_, verbs)| verbs.contains(&word)) {
            return a;
        }
    }
    match kind {
        Kind::Read => "read",
        Kind::Write => "other",
    }
}

/// The argument names a display name is read from when the overlay names none, in order.
const NAME_ARGS: &[&str] = &[
    "title",
    "name",
    "display_name",
    "label",
    "subject",
    "summary",
];

/// An op's operation: its action, its entity in words and where its display name lives (the
/// overlay's `display`, else a `title`/`name`-like string argument).
pub fn spec(r: &OpRecord) -> OperationSpec {
    let entity = r.entity.as_deref().unwrap_or(&r.group);
    let display = r.display.clone().or_else(|| {
        NAME_ARGS.iter().find_map(|name| {
            r.args
                .iter()
                .find(|a| a.name == *name && a.type_ == "string")
                .map(|a| format!("args.{}", a.name))
        })
    });
    OperationSpec {
        action: action_of(&r.action, r.kind).to_string(),
        entity_type: entity.replace(['_', '-'], " "),
        display,
    }
}

/// The longest display name kept (characters).
const MAX_NAME_CHARS: usize = 80;

impl OperationSpec {
    /// The operation of one call: the display name read from `args` or `result` (a string,
    /// cut to 80 characters; nothing when absent or not text), with `status`.
    pub fn operation(
        &self,
        args: Option<&Value>,
        result: Option<&Value>,
        status: &str,
    ) -> Operation {
        let entity_name = self.display.as_deref().and_then(|d| {
            let (root, path) = match d.split_once('.') {
                Some(("args", p)) => (args?, p),
                Some(("result", p)) => (result?, p),
                _ => return None,
            };
            let mut at = root;
            for part in path.split('.') {
                at = match at {
                    Value::Object(o) => o.get(part)?,
                    Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
                    _ => return None,
                };
            }
            let text = at.as_str()?.trim();
            (!text.is_empty())
                .then(|| crate::model::text::clip_chars(text, MAX_NAME_CHARS).to_string())
        });
        Operation {
            action: self.action.clone(),
            entity_type: self.entity_type.clone(),
            entity_name,
            status: status.to_string(),
        }
    }
}

impl Operation {
    /// The event as a person reads it: "Updating task “Ship v2”", "Listed tasks",
    /// "Could not delete task".
    pub fn describe(&self) -> String {
        let (ing, ed, base) = match self.action.as_str() {
            "list" => ("Listing", "Listed", "list"),
            "search" => ("Searching", "Searched", "search"),
            "read" => ("Reading", "Read", "read"),
            "create" => ("Creating", "Created", "create"),
            "update" => ("Updating", "Updated", "update"),
            "delete" => ("Deleting", "Deleted", "delete"),
            _ => ("Working on", "Worked on", "work on"),
        };
        let what = match (&self.entity_name, self.action.as_str()) {
            (Some(n), _) => format!("{} “{n}”", self.entity_type),
            (None, "list" | "search") => format!("{}s", self.entity_type),
            (None, _) => self.entity_type.clone(),
        };
        match self.status.as_str() {
            "started" => format!("{ing} {what}"),
            "error" => format!("Could not {base} {what}"),
            "dry_run" => format!("Checked (dry run): {base} {what}"),
            _ => format!("{ed} {what}"),
        }
    }
}

/// Checks an overlay `display` path: `args.<property path>` must name a property of the op's
/// schema; `result.<path>` is taken as given (results have no schema here). `Err` says why.
pub fn check_display(display: &str, schema: &Value) -> Result<(), String> {
    match display.split_once('.') {
        Some(("args", path)) if !path.is_empty() => {
            let mut at = schema;
            for part in path.split('.') {
                at = at
                    .get("properties")
                    .and_then(|p| p.get(part))
                    .ok_or_else(|| format!("the op's arguments have no `{path}`"))?;
            }
            Ok(())
        }
        Some(("result", path)) if !path.is_empty() => Ok(()),
        _ => Err("use `args.<argument>` or `result.<field>` (dotted paths)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actions_come_from_the_verb_then_the_kind() {
        assert_eq!(action_of("list", Kind::Read), "list");
        assert_eq!(action_of("get", Kind::Read), "read");
        assert_eq!(action_of("bulk_update", Kind::Write), "update");
        assert_eq!(action_of("remove", Kind::Write), "delete");
        assert_eq!(action_of("ping", Kind::Read), "read");
        assert_eq!(action_of("ping", Kind::Write), "other");
    }

    #[test]
    fn names_are_read_from_args_or_results_and_described() {
        let spec = OperationSpec {
            action: "update".into(),
            entity_type: "task".into(),
            display: Some("args.title".into()),
        };
        let op = spec.operation(Some(&json!({"title": "Ship v2"})), None, "success");
        assert_eq!(op.describe(), "Updated task “Ship v2”");
        let none = spec.operation(Some(&json!({"title": 7})), None, "error");
        assert_eq!(none.entity_name, None);
        assert_eq!(none.describe(), "Could not update task");
        let from_result = OperationSpec {
            display: Some("result.task.name".into()),
            ..spec
        };
        let op = from_result.operation(None, Some(&json!({"task": {"name": "A"}})), "started");
        assert_eq!(op.describe(), "Updating task “A”");
        assert!(check_display("args.title", &json!({"properties": {"title": {}}})).is_ok());
        assert!(check_display("args.nope", &json!({"properties": {}})).is_err());
        assert!(check_display("title", &json!({})).is_err());
    }
}
