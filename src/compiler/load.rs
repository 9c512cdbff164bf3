//! Load: walk the definitions folder, parse every `*.json`, and recognise each entry's shape
//! (OpenAI / ChatToolDefinition, MCP, Anthropic). Nothing here interprets names or schemas.

use super::source::{pointer_segment, SourceFile};
use crate::model::diag::{Code, Diagnostic, Diagnostics, Location};
use crate::model::registry::McpAnnotations;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Descriptions longer than this get a warning: models truncate or drown in them.
pub const LONG_DESCRIPTION_CHARS: usize = 16 * 1024;

/// Which provider format an entry was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryShape {
    /// `{type: "function", function: {name, description, parameters}}`, or the flat
    /// `{type: "function", name, parameters}` / legacy `{name, parameters}` forms.
    OpenAi,
    /// `{name, description, inputSchema, annotations?}`.
    Mcp,
    /// `{name, description, input_schema}`.
    Anthropic,
}

/// One tool as found in a file, before any interpretation.
#[derive(Debug, Clone)]
pub struct RawTool {
    /// Index into [`Loaded::files`].
    pub file: usize,
    /// Position in the file's tool list.
    pub index: usize,
    /// JSON pointer of the entry, e.g. `/3` or `/tools/3`.
    pub pointer: String,
    pub shape: EntryShape,
    pub name: String,
    pub name_pointer: String,
    pub description: String,
    /// The parameters schema exactly as written (an empty object schema when absent).
    pub parameters: Value,
    pub parameters_pointer: String,
    /// MCP's `outputSchema`: what the tool's structured result looks like, when it says.
    pub output_schema: Option<Value>,
    pub output_pointer: String,
    pub annotations: Option<McpAnnotations>,
    /// The entry's pin (see [`crate::trust::pin`]), taken before anything is interpreted.
    pub pin: crate::model::registry::ToolPin,
}

/// Everything read from a definitions folder.
#[derive(Debug, Default)]
pub struct Loaded {
    pub files: Vec<SourceFile>,
    pub tools: Vec<RawTool>,
    /// Every folder walked, including the root (for `rerun-if-changed`).
    pub folders: Vec<PathBuf>,
    /// Every JSON file read (absolute or as given).
    pub paths: Vec<PathBuf>,
}

impl Loaded {
    /// A location inside a loaded file; line:col are filled in at the end of the compile.
    pub fn loc(&self, file: usize, pointer: impl Into<String>) -> Location {
        loc_in(&self.files[file].display, pointer)
    }
}

/// A location inside the file shown as `display`; line:col are filled in at the end of the
/// compile.
fn loc_in(display: &str, pointer: impl Into<String>) -> Location {
    Location {
        file: display.to_string(),
        line: None,
        column: None,
        pointer: Some(pointer.into()),
    }
}

/// How to show a path inside the definitions folder: the folder as the user gave it, plus `rel`.
pub fn display_path(root_display: &str, rel: &str) -> String {
    let root = root_display.trim_end_matches(['/', '\\']);
    if root.is_empty() || root == "." {
        rel.to_string()
    } else {
        format!("{root}/{rel}")
    }
}

/// Reads every `*.json` below `root` in sorted order. Hidden files and folders are skipped.
pub fn load(root: &Path, diags: &mut Diagnostics) -> Loaded {
    let root_display = root.to_string_lossy().replace('\\', "/");
    let mut loaded = Loaded::default();
    if !root.is_dir() {
        diags.push(
            Diagnostic::new(
                Code::NoDefinitions,
                format!("definitions folder `{root_display}` does not exist or is not a folder"),
            )
            .at(Location::file(root_display.clone()))
            .help("pass the folder holding your tool definition JSON files with --definitions DIR"),
        );
        return loaded;
    }
    // The JSON files found, in walk order: path, relative path, display path, size.
    let mut found: Vec<(std::path::PathBuf, String, String, u64)> = Vec::new();
    // Symbolic links are followed (a linked file or folder is part of the catalog); walkdir
    // reports a loop instead of walking it forever.
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                let path = err
                    .path()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|| root_display.clone());
                let help = if let Some(ancestor) = err.loop_ancestor() {
                    format!(
                        "a symbolic link loops back to `{}`; remove the link",
                        ancestor.to_string_lossy()
                    )
                } else if err.io_error().map(std::io::Error::kind)
                    == Some(std::io::ErrorKind::NotFound)
                {
                    "a symbolic link points to nothing; fix or remove it".into()
                } else {
                    "check the file's permissions".into()
                };
                diags.push(
                    Diagnostic::new(Code::Io, format!("cannot read `{path}`: {err}"))
                        .at(Location::file(path))
                        .help(help),
                );
                continue;
            }
        };
        if entry.file_type().is_dir() {
            loaded.folders.push(entry.path().to_path_buf());
            continue;
        }
        let is_json = entry
            .path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if !entry.file_type().is_file() || !is_json {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let display = display_path(&root_display, &rel);
        loaded.paths.push(entry.path().to_path_buf());
        let size = entry.metadata().map_or(0, |m| m.len());
        found.push((entry.path().to_path_buf(), rel, display, size));
    }
    // Reading and parsing, most of loading a fleet catalog, runs on every core, a batch of
    // files at a time; each batch's tools are taken in walk order, so the result is the same as
    // one file at a time. A batch holds at most `BATCH_BYTES` of files (or one larger file):
    // parsed JSON takes several times its text, and a hostile catalog's files must not all be
    // parsed at once before the tools' limits drop what is too large.
    for batch in crate::compiler::parallel::batches(&found, |f| f.3, BATCH_BYTES) {
        // Each file's tools are taken in its job too (pinning each is a hash of its JSON).
        let read = crate::compiler::parallel::map_in_order(batch, |(path, rel, display, _)| {
            let (file, parsed, mut file_diags) = read_and_parse(path, rel, display);
            let tools = match (&file, parsed) {
                (Some(file), Some(parsed)) => take_tools(file, parsed, &mut file_diags),
                _ => Vec::new(),
            };
            (file, tools, file_diags)
        });
        for (file, tools, file_diags) in read {
            diags.extend(file_diags);
            if let Some(file) = file {
                let idx = loaded.files.len();
                loaded.files.push(file);
                loaded
                    .tools
                    .extend(tools.into_iter().map(|tool| RawTool { file: idx, ..tool }));
            }
        }
    }
    if loaded.paths.is_empty() && !diags.has_errors() {
        diags.push(
            Diagnostic::new(
                Code::NoDefinitions,
                format!("no `*.json` files found in `{root_display}`"),
            )
            .at(Location::file(root_display))
            .help("export your tool definitions as JSON (an array of tools, or an object with a `tools` array) into this folder"),
        );
    }
    loaded
}

/// Bytes to text, or a diagnostic pointing at the first bad byte.
fn decode(
    bytes: Vec<u8>,
    rel: String,
    display: String,
    diags: &mut Diagnostics,
) -> Option<SourceFile> {
    match String::from_utf8(bytes) {
        Ok(text) => {
            let text = text
                .strip_prefix('\u{feff}')
                .map(str::to_owned)
                .unwrap_or(text);
            if text.trim().is_empty() {
                diags.push(
                    Diagnostic::new(Code::EmptyFile, format!("`{display}` is empty"))
                        .at(Location::at(display, 1, 1))
                        .help("write `[]` for a file with no tools, or delete the file (a failed export often leaves an empty file)"),
                );
                return None;
            }
            Some(SourceFile::new(rel, display, text))
        }
        Err(err) => {
            let bad = err.utf8_error().valid_up_to();
            let bytes = err.into_bytes();
            let prefix = String::from_utf8_lossy(&bytes[..bad]).into_owned();
            let idx = super::source::LineIndex::new(&prefix);
            let (line, col) = idx.line_col(&prefix, prefix.len());
            diags.push(
                Diagnostic::new(
                    Code::NotUtf8,
                    format!(
                        "`{display}` is not valid UTF-8 (byte 0x{:02x} at offset {bad})",
                        bytes[bad]
                    ),
                )
                .at(Location::at(display, line, col))
                .help("re-export the file as UTF-8 (JSON text must be UTF-8)"),
            );
            None
        }
    }
}

/// How many bytes of definition files are parsed at once, at most (one larger file is parsed
/// alone).
const BATCH_BYTES: u64 = 32 << 20;

/// A file read, decoded and parsed (a job of its own: files are read in parallel): the file
/// when it decodes, its JSON and repeated keys when it parses, and what went wrong.
type ReadFile = (
    Option<SourceFile>,
    Option<(Value, Vec<String>)>,
    Diagnostics,
);

fn read_and_parse(path: &Path, rel: &str, display: &str) -> ReadFile {
    let mut diags = Diagnostics::default();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(err) => {
            diags.push(
                Diagnostic::new(Code::Io, format!("cannot read `{display}`: {err}"))
                    .at(Location::file(display.to_string()))
                    .help("check the file's permissions"),
            );
            return (None, None, diags);
        }
    };
    let Some(file) = decode(bytes, rel.to_string(), display.to_string(), &mut diags) else {
        return (None, None, diags);
    };
    let parsed = match super::source::parse_json_checked(&file.text) {
        Ok(v) => Some(v),
        Err(err) => {
            diags.push(
                Diagnostic::new(
                    Code::MalformedJson,
                    format!(
                        "`{}` is not valid JSON: {}",
                        file.display,
                        strip_position(&err)
                    ),
                )
                .at(Location::at(file.display.clone(), err.line(), err.column()))
                .help("fix the JSON syntax at this position; nothing from this file was used"),
            );
            None
        }
    };
    (Some(file), parsed, diags)
}

/// The tools of `file`, parsed: each entry read, and what is wrong with the file's shape. The
/// tools' `file` is 0 until the caller knows the file's index.
fn take_tools(
    file: &SourceFile,
    (value, repeated): (Value, Vec<String>),
    diags: &mut Diagnostics,
) -> Vec<RawTool> {
    let display = file.display.as_str();
    for pointer in repeated {
        let key = pointer.rsplit('/').next().unwrap_or_default().to_string();
        diags.push(
            Diagnostic::new(
                Code::DuplicateKey,
                format!(
                    "key `{}` appears twice in one object; the last value is used",
                    crate::model::diag::escape_controls(&key.replace("~1", "/").replace("~0", "~"))
                ),
            )
            .at(loc_in(display, &pointer))
            .help("delete one of the two: JSON parsers differ on which they keep, so a provider may see the other"),
        );
    }
    let (entries, base): (Vec<Value>, &str) = match value {
        Value::Array(items) => (items, ""),
        Value::Object(mut obj) => match obj.remove("tools") {
            Some(Value::Array(items)) => (items, "/tools"),
            Some(_) => {
                diags.push(
                    Diagnostic::new(Code::FileShape, "`tools` is not an array")
                        .at(loc_in(display, "/tools"))
                        .help("write `\"tools\": [ ... ]` with one tool definition per element"),
                );
                return Vec::new();
            }
            None if looks_like_tool(&obj) => (vec![Value::Object(obj)], ""),
            None => {
                diags.push(
                    Diagnostic::new(
                        Code::FileShape,
                        "the file is an object without a `tools` array",
                    )
                    .at(loc_in(display, ""))
                    .help("a definitions file is an array of tools, an object with a `tools` array, or a single tool definition"),
                );
                return Vec::new();
            }
        },
        other => {
            diags.push(
                Diagnostic::new(
                    Code::FileShape,
                    format!(
                        "the file holds a JSON {}, not tool definitions",
                        kind_of(&other)
                    ),
                )
                .at(loc_in(display, ""))
                .help("a definitions file is an array of tools or an object with a `tools` array"),
            );
            return Vec::new();
        }
    };
    let single = base.is_empty() && !file.text.trim_start().starts_with('[');
    let pointers: Vec<String> = (0..entries.len())
        .map(|i| {
            if single {
                String::new()
            } else {
                format!("{base}/{i}")
            }
        })
        .collect();
    // Positions are resolved only for what a diagnostic points at, at the end of the compile.
    entries
        .into_iter()
        .zip(pointers)
        .enumerate()
        .filter_map(|(i, (entry, pointer))| read_entry(display, i, pointer, entry, diags))
        .collect()
}

/// serde_json appends " at line L column C"; the location is shown separately.
fn strip_position(err: &serde_json::Error) -> String {
    let msg = err.to_string();
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn looks_like_tool(obj: &Map<String, Value>) -> bool {
    obj.contains_key("function")
        || obj.contains_key("inputSchema")
        || obj.contains_key("input_schema")
        || (obj.contains_key("name") && obj.contains_key("parameters"))
}

const SHAPES_HELP: &str = "accepted shapes: OpenAI `{\"type\":\"function\",\"function\":{\"name\",\"description\",\"parameters\"}}`, MCP `{\"name\",\"description\",\"inputSchema\"}`, Anthropic `{\"name\",\"description\",\"input_schema\"}`";

/// The longest description a tool may have (characters).
pub const MAX_DESCRIPTION_CHARS: usize = 1_000_000;

/// The largest parameters schema a tool may have (bytes of compact JSON).
pub const MAX_SCHEMA_BYTES: usize = 8 << 20;

fn read_entry(
    display: &str,
    index: usize,
    pointer: String,
    entry: Value,
    diags: &mut Diagnostics,
) -> Option<RawTool> {
    let at = |p: &str| loc_in(display, p);
    let Value::Object(mut obj) = entry else {
        diags.push(
            Diagnostic::new(
                Code::EntryShape,
                format!(
                    "entry {index} is a JSON {}, not a tool definition",
                    kind_of(&entry)
                ),
            )
            .at(at(&pointer))
            .help(SHAPES_HELP),
        );
        return None;
    };
    // Pick the shape and the object that holds name/description/schema.
    let (shape, mut body, body_ptr, schema_key) = if let Some(func) = obj.remove("function") {
        if obj
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "function")
        {
            diags.push(
                Diagnostic::new(
                    Code::EntryShape,
                    format!(
                        "entry {index} has `type: {}`; only function tools are supported",
                        obj["type"]
                    ),
                )
                .at(at(&format!("{pointer}/type")))
                .help(SHAPES_HELP),
            );
            return None;
        }
        match func {
            Value::Object(f) => (
                EntryShape::OpenAi,
                f,
                format!("{pointer}/function"),
                "parameters",
            ),
            other => {
                diags.push(
                    Diagnostic::new(
                        Code::EntryShape,
                        format!(
                            "`function` of entry {index} is a {}, not an object",
                            kind_of(&other)
                        ),
                    )
                    .at(at(&format!("{pointer}/function")))
                    .help(SHAPES_HELP),
                );
                return None;
            }
        }
    } else if obj.contains_key("inputSchema") {
        (EntryShape::Mcp, obj, pointer.clone(), "inputSchema")
    } else if obj.contains_key("input_schema") {
        (EntryShape::Anthropic, obj, pointer.clone(), "input_schema")
    } else if obj.contains_key("name")
        && (obj.contains_key("parameters")
            || obj.get("type").and_then(Value::as_str) == Some("function"))
    {
        (EntryShape::OpenAi, obj, pointer.clone(), "parameters")
    } else {
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        diags.push(
            Diagnostic::new(
                Code::EntryShape,
                format!(
                    "entry {index} is not a recognised tool definition (keys: {})",
                    if keys.is_empty() {
                        "none".to_string()
                    } else {
                        keys.join(", ")
                    }
                ),
            )
            .at(at(&pointer))
            .help(SHAPES_HELP),
        );
        return None;
    };

    // Pinned as written, before anything below takes the entry apart.
    let pin = crate::trust::pin::pin(&body);
    let name_pointer = format!("{body_ptr}/name");
    let name = match body.remove("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(other) => {
            diags.push(
                Diagnostic::new(
                    Code::EntryField,
                    format!(
                        "tool name of entry {index} must be a non-empty string, found {}",
                        short_json(&other)
                    ),
                )
                .at(at(&name_pointer))
                .help("give every tool a unique `name`"),
            );
            return None;
        }
        None => {
            diags.push(
                Diagnostic::new(Code::EntryField, format!("entry {index} has no `name`"))
                    .at(at(&body_ptr))
                    .help("give every tool a unique `name`"),
            );
            return None;
        }
    };
    let description = match body.remove("description") {
        Some(Value::String(s)) => s,
        None | Some(Value::Null) => String::new(),
        Some(other) => {
            diags.push(
                Diagnostic::new(
                    Code::EntryField,
                    format!(
                        "description of tool `{name}` must be a string, found a {}",
                        kind_of(&other)
                    ),
                )
                .at(at(&format!("{body_ptr}/description")))
                .help("write the description as one string"),
            );
            return None;
        }
    };
    // Text past these sizes is no tool a model could read: refused, and cut here so nothing
    // after this (lint, summaries, token counts) pays for it (a 100 MB description took a build
    // to 27 s and 1.7 GB).
    let chars = description.chars().count();
    let description = if chars > MAX_DESCRIPTION_CHARS {
        diags.push(
            Diagnostic::new(
                Code::ToolTooLarge,
                format!(
                    "description of tool `{name}` is {chars} characters, over the limit of {MAX_DESCRIPTION_CHARS}"
                ),
            )
            .at(at(&format!("{body_ptr}/description")))
            .help("no model reads that much: shorten it; a third-party tool is quarantined"),
        );
        crate::model::text::clip_chars(&description, LONG_DESCRIPTION_CHARS).to_string()
    } else {
        description
    };
    if description.trim().is_empty() {
        diags.push(
            Diagnostic::new(Code::MissingDescription, format!("tool `{name}` has no description"))
                .at(at(&name_pointer))
                .help("models choose tools by their descriptions: say in one sentence what it does and when to use it"),
        );
    } else if description.chars().count() > LONG_DESCRIPTION_CHARS {
        diags.push(
            Diagnostic::new(
                Code::DescriptionTooLong,
                format!(
                    "description of tool `{name}` is {} characters (over {LONG_DESCRIPTION_CHARS})",
                    description.chars().count()
                ),
            )
            .at(at(&format!("{body_ptr}/description")))
            .help("move long guidance into the overlay's policy and examples; the model pays for every character on every request"),
        );
    }
    let parameters_pointer = format!("{body_ptr}/{}", pointer_segment(schema_key));
    let parameters = match body.remove(schema_key) {
        None => serde_json::json!({"type": "object", "properties": {}}),
        Some(v @ (Value::Null | Value::Bool(true))) => {
            diags.push(
                Diagnostic::new(
                    Code::TopLevelType,
                    format!(
                        "`{schema_key}` of tool `{name}` is `{v}`; read as an object with no declared arguments"
                    ),
                )
                .at(at(&parameters_pointer))
                .help("write `{\"type\": \"object\", \"properties\": {}}` (or leave the key out) for a tool without arguments"),
            );
            serde_json::json!({"type": "object", "properties": {}})
        }
        Some(v @ Value::Object(_)) => {
            let bytes = serde_json::to_string(&v).map_or(0, |t| t.len());
            if bytes > MAX_SCHEMA_BYTES {
                diags.push(
                    Diagnostic::new(
                        Code::ToolTooLarge,
                        format!(
                            "`{schema_key}` of tool `{name}` is {bytes} bytes of JSON, over the limit of {MAX_SCHEMA_BYTES}"
                        ),
                    )
                    .at(at(&parameters_pointer))
                    .help("no model reads that much: shorten its descriptions and enums; a third-party tool is quarantined"),
                );
                serde_json::json!({"type": "object", "properties": {}})
            } else {
                v
            }
        }
        Some(other) => {
            diags.push(
                Diagnostic::new(
                    Code::EntryField,
                    format!(
                        "`{schema_key}` of tool `{name}` must be a JSON Schema object, found {}",
                        short_json(&other)
                    ),
                )
                .at(at(&parameters_pointer))
                .help("write the arguments as a JSON Schema: {\"type\": \"object\", \"properties\": {...}}"),
            );
            return None;
        }
    };
    // MCP's declared result (`outputSchema`, also spelt `output_schema`): kept when it is an
    // object schema of sane size, else left out with a warning (the tool still builds).
    let (output_key, output) = match body.remove("outputSchema") {
        Some(v) => ("outputSchema", Some(v)),
        None => ("output_schema", body.remove("output_schema")),
    };
    let output_pointer = format!("{body_ptr}/{output_key}");
    let output_schema = match output {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_))
            if serde_json::to_string(&v).map_or(0, |t| t.len()) <= MAX_SCHEMA_BYTES =>
        {
            Some(v)
        }
        Some(other) => {
            diags.push(
                Diagnostic::new(
                    Code::OutputSchemaIgnored,
                    format!(
                        "`{output_key}` of tool `{name}` is not a JSON Schema object of at most {MAX_SCHEMA_BYTES} bytes (found {}); its result is left untyped",
                        short_json(&other)
                    ),
                )
                .at(at(&output_pointer))
                .help("write the result as a JSON Schema object (MCP: {\"type\": \"object\", \"properties\": {...}}), or leave the key out"),
            );
            None
        }
    };
    let annotations = match body.remove("annotations") {
        Some(Value::Object(a)) => Some(McpAnnotations::from_json(&a)),
        _ => None,
    };
    Some(RawTool {
        file: 0,
        index,
        pointer,
        shape,
        name,
        name_pointer,
        description,
        parameters,
        parameters_pointer,
        output_schema,
        output_pointer,
        annotations,
        pin,
    })
}

/// A value shown in a message: short JSON, cut at 60 characters.
pub fn short_json(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}
