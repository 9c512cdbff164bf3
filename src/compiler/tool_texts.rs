//! Every text of a tool that a model or person reads (its description, title, argument names,
//! and the descriptions, titles, enum values, examples, defaults and constants anywhere in its
//! schemas), in a fixed order, with where each is and what it is: what the poisoning lint
//! (`poison.rs`) checks and places its findings by.

use super::load::RawTool;
use serde_json::Value;

/// A text of a tool that a model or person reads, and where it is.
pub(super) struct Text<'a> {
    pub(super) pointer: String,
    /// What it is, for messages: "description", "argument `path`: description".
    pub(super) what: String,
    pub(super) text: &'a str,
    /// The tool's own description (the anomaly rule looks at these only).
    pub(super) is_description: bool,
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The pointer of a field beside the tool's `name` (`/tools/3/name` -> `/tools/3/description`).
fn sibling(name_pointer: &str, field: &str) -> String {
    let base = name_pointer.rsplit_once('/').map_or("", |(b, _)| b);
    format!("{base}/{field}")
}

/// The tool's texts in a fixed order. With `placed`, each with its pointer and what it is; else
/// with neither (empty): the rules need only the text, and most tools have no finding to place,
/// so the pointers and labels are made only for a tool that has one (a tenth of the lint's time
/// at 10,000 tools went to making them).
pub(super) fn texts(t: &RawTool, placed: bool) -> Vec<Text<'_>> {
    let mut out = Vec::new();
    let place = |s: &dyn Fn() -> String| if placed { s() } else { String::new() };
    if !t.description.is_empty() {
        out.push(Text {
            pointer: place(&|| sibling(&t.name_pointer, "description")),
            what: place(&|| "description".into()),
            text: &t.description,
            is_description: true,
        });
    }
    if let Some(title) = t.annotations.as_ref().and_then(|a| a.title.as_deref()) {
        out.push(Text {
            pointer: place(&|| sibling(&t.name_pointer, "annotations/title")),
            what: place(&|| "title".into()),
            text: title,
            is_description: false,
        });
    }
    let mut walk = Walk { placed, out };
    walk.schema(&t.parameters, &t.parameters_pointer, "");
    // A declared result's texts reach the typed clients and the code-mode tree a model reads.
    if let Some(output) = &t.output_schema {
        walk.schema(output, &t.output_pointer, "result");
    }
    walk.out
}

/// Collects a schema's texts, placed or not (see [`texts`]).
pub(super) struct Walk<'a> {
    pub(super) placed: bool,
    pub(super) out: Vec<Text<'a>>,
}

impl<'a> Walk<'a> {
    /// Descriptions, titles, enum values, examples, defaults and constants anywhere in a
    /// schema, and argument names. Unplaced, the pointers and argument paths stay empty.
    pub(super) fn schema(&mut self, v: &'a Value, pointer: &str, arg: &str) {
        let placed = self.placed;
        let is_result = pointer.contains("/outputSchema") || pointer.contains("/output_schema");
        // A declared result's texts are walked with `result` as their root name.
        let label = |field: &str| match arg.strip_prefix("result") {
            _ if !placed => String::new(),
            _ if arg.is_empty() => format!("parameters: {field}"),
            Some("") if is_result => format!("result: {field}"),
            Some(rest) if is_result => {
                format!("result field `{}`: {field}", rest.trim_start_matches('.'))
            }
            _ => format!("argument `{arg}`: {field}"),
        };
        let join = |base: &str, key: &str| {
            if placed {
                format!("{base}/{}", escape_pointer(key))
            } else {
                String::new()
            }
        };
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    let here = join(pointer, k);
                    match (k.as_str(), x) {
                        ("description" | "title" | "default" | "const", Value::String(s)) => {
                            self.out.push(Text {
                                pointer: here,
                                what: label(k),
                                text: s,
                                is_description: false,
                            })
                        }
                        ("enum" | "examples", Value::Array(items)) => {
                            for (i, item) in items.iter().enumerate() {
                                if let Value::String(s) = item {
                                    self.out.push(Text {
                                        pointer: join(&here, &i.to_string()),
                                        what: label(&format!("{k} value")),
                                        text: s,
                                        is_description: false,
                                    });
                                }
                            }
                        }
                        ("properties", Value::Object(props)) => {
                            for (name, sub) in props {
                                let path = match () {
                                    _ if !placed => String::new(),
                                    _ if arg.is_empty() => name.clone(),
                                    _ => format!("{arg}.{name}"),
                                };
                                let p = join(&here, name);
                                // The name itself: models read it, code generators write it.
                                self.out.push(Text {
                                    pointer: p.clone(),
                                    what: if placed {
                                        format!(
                                            "argument name `{}`",
                                            crate::model::diag::escape_controls(&path)
                                        )
                                    } else {
                                        String::new()
                                    },
                                    text: name,
                                    is_description: false,
                                });
                                self.schema(sub, &p, &path);
                            }
                        }
                        (_, Value::Object(_) | Value::Array(_)) => self.schema(x, &here, arg),
                        _ => {}
                    }
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    self.schema(x, &join(pointer, &i.to_string()), arg);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_texts_are_found_with_their_pointers() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "a/b": {"type": "string", "description": "d1", "enum": ["x", 1, "y"]},
                "n": {"type": "object", "properties": {"m": {"title": "t", "examples": ["e"]}}},
            },
        });
        let walked = |placed| {
            let mut walk = Walk {
                placed,
                out: Vec::new(),
            };
            walk.schema(&schema, "/tools/0/inputSchema", "");
            walk.out
        };
        let out = walked(true);
        // Unplaced, the same texts in the same order (a finding is placed by its index), with
        // no pointer or label made.
        let bare = walked(false);
        assert_eq!(
            bare.iter().map(|t| t.text).collect::<Vec<_>>(),
            out.iter().map(|t| t.text).collect::<Vec<_>>()
        );
        assert!(bare
            .iter()
            .all(|t| t.pointer.is_empty() && t.what.is_empty()));
        let got: Vec<(String, String, &str)> = out
            .iter()
            .map(|t| (t.pointer.clone(), t.what.clone(), t.text))
            .collect();
        assert!(got.contains(&(
            "/tools/0/inputSchema/properties/a~1b/description".into(),
            "argument `a/b`: description".into(),
            "d1"
        )));
        assert!(got.contains(&(
            "/tools/0/inputSchema/properties/a~1b/enum/2".into(),
            "argument `a/b`: enum value".into(),
            "y"
        )));
        assert!(got.contains(&(
            "/tools/0/inputSchema/properties/n/properties/m/examples/0".into(),
            "argument `n.m`: examples value".into(),
            "e"
        )));
        assert_eq!(got.len(), 8, "{got:?} (5 texts and 3 argument names)");
    }
}
