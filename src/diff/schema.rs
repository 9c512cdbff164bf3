//! Two parameter schemas walked side by side: types narrowed or widened, enum values removed
//! or added, arguments removed, made required or added, constraints tightened, `const` and
//! defaults changed. Each difference is a finding at a JSON pointer into the op's schema.

use super::{finding, DiffCode, Finding};
use serde_json::Value;
use std::collections::BTreeSet;

/// The findings between two versions of an op's parameter schema.
pub(super) fn compare(op: &str, old: &Value, new: &Value, out: &mut Vec<Finding>) {
    SchemaDiff { op, out }.walk(old, new, "/parameters_schema", 0);
}

/// Walks two schemas side by side.
struct SchemaDiff<'a> {
    op: &'a str,
    out: &'a mut Vec<Finding>,
}

/// Deeper than any sane schema; a deeper one is compared as a whole.
const MAX_DEPTH: usize = 64;

fn types(s: &Value) -> Option<BTreeSet<String>> {
    match s.get("type")? {
        Value::String(t) => Some([t.clone()].into()),
        Value::Array(a) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

/// Whether type set `a` accepts everything `b` does (`number` accepts `integer`).
fn covers(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    b.iter()
        .all(|t| a.contains(t) || (t == "integer" && a.contains("number")))
}

fn prop_pointer(at: &str, name: &str) -> String {
    format!(
        "{at}/properties/{}",
        name.replace('~', "~0").replace('/', "~1")
    )
}

impl SchemaDiff<'_> {
    fn push(&mut self, code: DiffCode, pointer: &str, message: String) {
        self.out
            .push(finding(code, self.op, pointer.to_string(), message));
    }

    fn walk(&mut self, o: &Value, n: &Value, at: &str, depth: usize) {
        if o == n {
            return;
        }
        if depth > MAX_DEPTH {
            self.push(
                DiffCode::TypeNarrowed,
                at,
                "a deeply nested schema changed".into(),
            );
            return;
        }
        let field = field_name(at);
        self.types(o, n, at, &field);
        self.enums(o, n, at, &field);
        self.bounds(o, n, at, &field);
        if o.get("default") != n.get("default") {
            if let Some(d) = n.get("default") {
                self.push(
                    DiffCode::DefaultChanged,
                    &format!("{at}/default"),
                    format!("the default of {field} is now {d}"),
                );
            } else {
                self.push(
                    DiffCode::DefaultChanged,
                    &format!("{at}/default"),
                    format!("{field} lost its default"),
                );
            }
        }
        if o.get("description") != n.get("description") && !at.ends_with("/parameters_schema") {
            self.push(
                DiffCode::TextChanged,
                &format!("{at}/description"),
                format!("the description of {field} changed"),
            );
        }
        self.properties(o, n, at, depth);
        for key in ["items", "additionalProperties"] {
            if let (Some(a @ Value::Object(_)), Some(b @ Value::Object(_))) =
                (o.get(key), n.get(key))
            {
                self.walk(a, b, &format!("{at}/{key}"), depth + 1);
            }
        }
        self.unions(o, n, at, &field);
        for key in ["$defs", "definitions"] {
            if let (Some(a), Some(b)) = (
                o.get(key).and_then(Value::as_object),
                n.get(key).and_then(Value::as_object),
            ) {
                for (name, sa) in a {
                    if let Some(sb) = b.get(name) {
                        self.walk(sa, sb, &format!("{at}/{key}/{name}"), depth + 1);
                    }
                }
            }
        }
    }

    fn types(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        let (Some(a), Some(b)) = (types(o), types(n)) else {
            if types(o).is_none() && types(n).is_some() {
                self.push(
                    DiffCode::TypeNarrowed,
                    &format!("{at}/type"),
                    format!("{field} is now restricted to {}", n["type"]),
                );
            } else if types(o).is_some() && types(n).is_none() {
                self.push(
                    DiffCode::BoundLoosened,
                    &format!("{at}/type"),
                    format!("{field} no longer restricts its type"),
                );
            }
            return;
        };
        if a == b {
            return;
        }
        if covers(&b, &a) {
            self.push(
                DiffCode::BoundLoosened,
                &format!("{at}/type"),
                format!(
                    "the type of {field} widened: {} -> {}",
                    o["type"], n["type"]
                ),
            );
        } else {
            self.push(
                DiffCode::TypeNarrowed,
                &format!("{at}/type"),
                format!(
                    "the type of {field} changed: {} -> {}; calls sending the old type fail",
                    o["type"], n["type"]
                ),
            );
        }
    }

    fn enums(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        let (a, b) = (
            o.get("enum").and_then(Value::as_array),
            n.get("enum").and_then(Value::as_array),
        );
        let pointer = format!("{at}/enum");
        match (a, b) {
            (Some(a), Some(b)) => {
                let removed: Vec<String> = a
                    .iter()
                    .filter(|v| !b.contains(v))
                    .map(Value::to_string)
                    .collect();
                let added: Vec<String> = b
                    .iter()
                    .filter(|v| !a.contains(v))
                    .map(Value::to_string)
                    .collect();
                if !removed.is_empty() {
                    self.push(
                        DiffCode::EnumValueRemoved,
                        &pointer,
                        format!("{field} no longer accepts {}", removed.join(", ")),
                    );
                }
                if !added.is_empty() {
                    self.push(
                        DiffCode::EnumWidened,
                        &pointer,
                        format!("{field} also accepts {}", added.join(", ")),
                    );
                }
            }
            (None, Some(b)) => self.push(
                DiffCode::EnumValueRemoved,
                &pointer,
                format!(
                    "{field} is now restricted to {}",
                    b.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            (Some(_), None) => self.push(
                DiffCode::EnumWidened,
                &pointer,
                format!("{field} is no longer restricted to a list of values"),
            ),
            (None, None) => {}
        }
    }

    fn bounds(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        // (keyword, true when a larger value is tighter)
        const LOWER: [&str; 5] = [
            "minimum",
            "exclusiveMinimum",
            "minLength",
            "minItems",
            "minProperties",
        ];
        const UPPER: [&str; 5] = [
            "maximum",
            "exclusiveMaximum",
            "maxLength",
            "maxItems",
            "maxProperties",
        ];
        let keys = LOWER
            .iter()
            .map(|k| (*k, true))
            .chain(UPPER.iter().map(|k| (*k, false)));
        for (key, larger_is_tighter) in keys {
            let (a, b) = (
                o.get(key).and_then(Value::as_f64),
                n.get(key).and_then(Value::as_f64),
            );
            let pointer = format!("{at}/{key}");
            let tighter = match (a, b) {
                (None, Some(_)) => Some(true),
                (Some(_), None) => Some(false),
                (Some(x), Some(y)) if x != y => Some((y > x) == larger_is_tighter),
                _ => None,
            };
            match tighter {
                Some(true) => self.push(
                    DiffCode::BoundTightened,
                    &pointer,
                    format!(
                        "{key} of {field} tightened: {} -> {}",
                        show(o.get(key)),
                        show(n.get(key))
                    ),
                ),
                Some(false) => self.push(
                    DiffCode::BoundLoosened,
                    &pointer,
                    format!(
                        "{key} of {field} loosened: {} -> {}",
                        show(o.get(key)),
                        show(n.get(key))
                    ),
                ),
                None => {}
            }
        }
        for key in ["pattern", "format", "const"] {
            let pointer = format!("{at}/{key}");
            match (o.get(key), n.get(key)) {
                (a, Some(b)) if a != Some(b) => self.push(
                    DiffCode::BoundTightened,
                    &pointer,
                    format!("{field} now must match {key} {b}"),
                ),
                (Some(_), None) => self.push(
                    DiffCode::BoundLoosened,
                    &pointer,
                    format!("{field} no longer has a {key}"),
                ),
                _ => {}
            }
        }
    }

    fn properties(&mut self, o: &Value, n: &Value, at: &str, depth: usize) {
        let empty = serde_json::Map::new();
        let (op, np) = (
            o.get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty),
            n.get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty),
        );
        let required = |s: &Value| -> BTreeSet<String> {
            crate::model::schema::required(s)
                .into_iter()
                .map(str::to_owned)
                .collect()
        };
        let (or, nr) = (required(o), required(n));
        let removed: Vec<&String> = op.keys().filter(|k| !np.contains_key(*k)).collect();
        let added: Vec<&String> = np.keys().filter(|k| !op.contains_key(*k)).collect();
        for name in &removed {
            // A property with the very same schema under a new name is a rename.
            let twin = added.iter().find(|a| np[a.as_str()] == op[name.as_str()]);
            let message = match twin {
                Some(t) => {
                    format!("argument `{name}` was renamed `{t}`; calls using `{name}` fail")
                }
                None => format!("argument `{name}` was removed; calls using it fail"),
            };
            self.push(DiffCode::ArgRemoved, &prop_pointer(at, name), message);
        }
        for name in &added {
            let has_default = np[name.as_str()].get("default").is_some();
            if nr.contains(name.as_str()) && !has_default {
                self.push(
                    DiffCode::RequiredAdded,
                    &prop_pointer(at, name),
                    format!("required argument `{name}` was added; calls without it fail"),
                );
            } else {
                self.push(
                    DiffCode::OptionalAdded,
                    &prop_pointer(at, name),
                    format!("optional argument `{name}` was added"),
                );
            }
        }
        for (name, a) in op {
            let Some(b) = np.get(name) else { continue };
            let pointer = prop_pointer(at, name);
            match (or.contains(name), nr.contains(name)) {
                (false, true) if b.get("default").is_none() => self.push(
                    DiffCode::RequiredAdded,
                    &pointer,
                    format!("argument `{name}` became required"),
                ),
                (true, false) => self.push(
                    DiffCode::OptionalAdded,
                    &pointer,
                    format!("argument `{name}` became optional"),
                ),
                _ => {}
            }
            self.walk(a, b, &pointer, depth + 1);
        }
        let open = |s: &Value| s.get("additionalProperties") != Some(&Value::Bool(false));
        if o.get("properties").is_some() || n.get("properties").is_some() {
            match (open(o), open(n)) {
                (true, false) => self.push(
                    DiffCode::ClosedProperties,
                    &format!("{at}/additionalProperties"),
                    "`additionalProperties` was closed: calls with extra arguments fail".into(),
                ),
                (false, true) => self.push(
                    DiffCode::BoundLoosened,
                    &format!("{at}/additionalProperties"),
                    "`additionalProperties` was opened".into(),
                ),
                _ => {}
            }
        }
    }

    fn unions(&mut self, o: &Value, n: &Value, at: &str, field: &str) {
        for key in ["anyOf", "oneOf"] {
            let (Some(a), Some(b)) = (
                o.get(key).and_then(Value::as_array),
                n.get(key).and_then(Value::as_array),
            ) else {
                continue;
            };
            let lost = a.iter().filter(|m| !b.contains(m)).count();
            let gained = b.iter().filter(|m| !a.contains(m)).count();
            if lost > 0 {
                self.push(
                    DiffCode::TypeNarrowed,
                    &format!("{at}/{key}"),
                    format!("the union of {field} lost {lost} member(s)"),
                );
            } else if gained > 0 {
                self.push(
                    DiffCode::BoundLoosened,
                    &format!("{at}/{key}"),
                    format!("the union of {field} gained {gained} member(s)"),
                );
            }
        }
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "none".into(), Value::to_string)
}

/// `argument `priority`` for a property pointer, `the arguments` at the top.
fn field_name(at: &str) -> String {
    let path: Vec<&str> = at
        .split('/')
        .skip(2)
        .filter(|s| *s != "properties" && *s != "items")
        .collect();
    if path.is_empty() {
        "the arguments".into()
    } else {
        format!("`{}`", path.join("."))
    }
}
