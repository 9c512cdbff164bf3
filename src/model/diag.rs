//! Diagnostics: every problem toolreg finds in its input, with a stable code, a severity, a
//! location (file, line:col, JSON pointer) and a hint saying what to do.
//!
//! Stages push into a [`Diagnostics`] list and keep going, so one run reports everything at once.
//! Rendering is rustc-style text for people and JSON lines for other tools.

use serde::Serialize;
use std::fmt;

/// How bad a finding is. Errors stop `build`; warnings are reported and the build goes on;
/// infos say what toolreg decided on its own (an inferred op), folded into one line by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

macro_rules! codes {
    ($( $variant:ident = $code:literal, $sev:ident, $title:literal; )*) => {
        /// Stable diagnostic codes. The README lists them all; never renumber one.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $( $variant, )* }

        impl Code {
            /// The printed code, e.g. `TR012`.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $code, )* }
            }
            /// The severity this code normally has.
            pub fn severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$sev, )* }
            }
            /// A one-line title, used by the README table and `--explain`-style listings.
            pub fn title(self) -> &'static str {
                match self { $( Code::$variant => $title, )* }
            }
            /// Every code, in numeric order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )* ];
        }
    };
}

codes! {
    // Reading input.
    Io = "TR001", Error, "a file or folder could not be read";
    NoDefinitions = "TR002", Error, "the definitions folder is missing or has no JSON files";
    NotUtf8 = "TR003", Error, "a definitions file is not valid UTF-8";
    EmptyFile = "TR004", Error, "a definitions file is empty";
    MalformedJson = "TR005", Error, "a definitions file is not valid JSON";
    FileShape = "TR006", Error, "a file is neither an array of tools nor an object with a `tools` array";
    EntryShape = "TR007", Error, "an entry is not an OpenAI, MCP or Anthropic tool definition";
    EntryField = "TR008", Error, "a tool's name, description or schema has the wrong type";
    DescriptionTooLong = "TR009", Warning, "a tool description is very long";
    MissingDescription = "TR010", Warning, "a tool has no description";
    // The overlay.
    OverlaySyntax = "TR011", Error, "toolreg.toml is not valid TOML or has a value of the wrong type";
    // Cross-tool checks.
    OpCollision = "TR012", Error, "two tools map to the same op";
    DuplicateToolName = "TR013", Error, "two tools have the same name";
    Unclassified = "TR014", Error, "no special case or rule classifies a tool name";
    FallbackUsed = "TR015", Warning, "a tool name was classified only by the fallback";
    UnknownEntity = "TR016", Warning, "a rule produced an entity missing from the vocabulary";
    DeadAlias = "TR017", Error, "an op alias targets an op that does not exist";
    ShadowingAlias = "TR018", Error, "an op alias shadows a real op or tool name";
    OverlayUnknownKey = "TR019", Error, "toolreg.toml has a key toolreg does not know";
    OverlayInvalid = "TR020", Error, "a rule, op or override in toolreg.toml is invalid";
    ProviderName = "TR021", Warning, "a tool name is rejected by providers; surfaces use a safe name";
    ProviderNameCollision = "TR022", Error, "two tools get the same provider-safe name";
    KindConflict = "TR023", Warning, "MCP annotations disagree with the classified kind";
    MissingGroupSummary = "TR024", Warning, "a group has no one-line summary in the overlay";
    BadArgAlias = "TR025", Error, "an argument alias targets a missing argument or shadows a real one";
    Inferred = "TR026", Info, "an op, group summary or entity was inferred from the tool names (no overlay entry)";
    InferredCollision = "TR027", Warning, "two tools were inferred to the same op; one got a qualifier";
    ControlCharacters = "TR028", Error, "a tool name contains control, bidi or invisible characters";
    StaleSpecial = "TR029", Warning, "a special case or entity in the overlay matches no tool";
    // Schema normalization (one warning per fix).
    NonStandardType = "TR030", Warning, "a non-standard type name was mapped to JSON Schema";
    Nullable = "TR031", Warning, "`nullable` was rewritten as a type union with null";
    OptionalFlag = "TR032", Warning, "a property-level `optional`/`required` flag was moved into `required`";
    DefaultMismatch = "TR033", Warning, "a `default` does not fit its schema and was dropped";
    RequiredMissing = "TR034", Warning, "`required` names a property that does not exist";
    TopLevelType = "TR035", Warning, "the parameters schema had no top-level `type: object`";
    ArrayWithoutItems = "TR036", Warning, "an array schema has no `items`";
    BadSchema = "TR037", Error, "the parameters schema is not valid JSON Schema";
    DuplicateKey = "TR038", Warning, "a JSON object in a definitions file has the same key twice";
    OlderDialect = "TR039", Warning, "a keyword of an older JSON Schema draft was rewritten in its 2020-12 form";
    // Enrichment: examples, policies, profiles.
    InvalidExample = "TR040", Error, "an example in the overlay does not validate against its op's schema";
    NoExample = "TR041", Warning, "no valid minimal call could be synthesized for an op";
    UnknownProfileOp = "TR042", Error, "a profile names an op that does not exist";
    EmptyGlob = "TR043", Warning, "a profile pattern matches no op";
    UnsafeName = "TR044", Error, "a profile name is not one safe name (letters, digits, `_`, `-`; at most 64)";
    ToolTooLarge = "TR045", Error, "a tool's description or parameters schema is over its size limit (1,000,000 characters; 8 MiB)";
    OutputSchemaIgnored = "TR046", Warning, "a tool's MCP `outputSchema` is not an object schema within the size limit; its result is left untyped";
    // Provider lints on the model-facing surfaces.
    SurfaceNotObject = "TR060", Error, "a surface tool's parameters are not `type: object` at the top";
    SurfaceCombinator = "TR061", Error, "a surface tool's parameters use a top-level enum or not";
    SurfaceName = "TR062", Error, "a surface tool name is not valid for providers";
    OpenParameters = "TR063", Warning, "a tool's parameters do not set `additionalProperties: false`";
    OverBudget = "TR064", Warning, "a tool, profile or gateway exceeds its token budget";
    GatewayRenamed = "TR065", Warning, "a team tool has a default gateway tool's name, so the gateway tool got another; or a third-party tool has a gateway tool's name, so it is offered under another";
    SurfaceProjection = "TR066", Warning, "a tool's top-level oneOf/anyOf/allOf is shown to models as one object; exec enforces the original";
    SharedToolName = "TR067", Warning, "several servers define a tool of the same name; each gets a server-qualified provider name";
    // Emitters.
    UntypedOp = "TR070", Warning, "an op's schema could not be typed in the Rust output and falls back to serde_json::Value";
    Template = "TR071", Error, "a docs template cannot be read, parsed or rendered";
    Vectors = "TR072", Error, "the ops could not be embedded for semantic search (the encoder failed to load or run)";
    // MCP upstreams.
    UpstreamInvalid = "TR080", Error, "an [upstreams] entry in toolreg.toml is invalid or has no snapshot file";
    Quarantined = "TR081", Warning, "a third-party tool could not be compiled and was left out of every surface";
    UpstreamUnapproved = "TR082", Warning, "an upstream's command or URL is not approved to run on this machine (`toolreg approve`)";
    UpstreamSecret = "TR083", Error, "an upstream URL carries a credential (user info or a key-like query parameter)";
    // The poisoning lint (rules in src/compiler/poison.toml; each finding names its rule).
    PoisonedText = "TR090", Error, "a tool's text holds what is never legitimate: tag, bidi or control characters, or mdBook directive syntax";
    SuspiciousText = "TR091", Warning, "a tool's text works on the model: an instruction, hidden text, a data link, HTML, another server's tool";
    // Writing output.
    OutputIo = "TR050", Error, "the output folder could not be written";
    OutputNotOwned = "TR051", Error, "the output folder has files toolreg did not write";
    OutputOverlapsDefinitions = "TR052", Error, "the output folder and the definitions folder nest";
    OutputLink = "TR053", Error, "a path toolreg would write or remove in the output folder is a symbolic link or not a regular file";
    OutputKept = "TR054", Warning, "a file toolreg wrote and would now remove was changed since; it was kept";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Where a finding is: a file (as the user would type it), and inside it a line:col and/or a
/// JSON pointer. Line and column are 1-based; columns count characters.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Location {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
}

impl Location {
    pub fn file(file: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            ..Default::default()
        }
    }

    pub fn at(file: impl Into<String>, line: usize, column: usize) -> Self {
        Location {
            file: file.into(),
            line: Some(line),
            column: Some(column),
            pointer: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        if let Some(p) = &self.pointer {
            write!(f, " ({})", if p.is_empty() { "/" } else { p })?;
        }
        Ok(())
    }
}

/// A secondary place that belongs to a finding (the other tool of a collision, say).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Related {
    pub location: Location,
    pub message: String,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Related>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// The poisoning lint's rule that found it (`instruction-tag`), for code-scanning tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            location: None,
            related: Vec::new(),
            help: None,
            rule: None,
        }
    }

    pub fn rule(mut self, rule: &str) -> Self {
        self.rule = Some(rule.to_string());
        self
    }

    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn related(mut self, location: Location, message: impl Into<String>) -> Self {
        self.related.push(Related {
            location,
            message: message.into(),
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// rustc-style text: a headline, the location arrow, related places and the hint. Control
    /// and bidi-override characters from the input are escaped, so a catalog cannot forge
    /// diagnostic lines or recolour a terminal (JSON output keeps the exact text).
    pub fn render_text(&self) -> String {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "note",
        };
        let e = |t: &dyn fmt::Display| escape_controls(&t.to_string());
        let mut out = format!("{sev}[{}]: {}\n", self.code, e(&self.message));
        if let Some(loc) = &self.location {
            out.push_str(&format!("  --> {}\n", e(loc)));
        }
        for r in &self.related {
            out.push_str(&format!(
                "   = note: {}: {}\n",
                e(&r.message),
                e(&r.location)
            ));
        }
        if let Some(h) = &self.help {
            out.push_str(&format!("   = help: {}\n", e(h)));
        }
        out
    }

    /// One JSON object on one line, for other tools.
    pub fn render_json(&self) -> String {
        serde_json::to_string(self).expect("diagnostics always serialize")
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render_text())
    }
}

/// The findings of one run, in a stable order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    /// The same findings with every location (and related location) rewritten by `f`, which
    /// is told the finding's code.
    pub fn map_locations(mut self, f: impl Fn(Code, &mut Location)) -> Diagnostics {
        for d in &mut self.items {
            if let Some(l) = d.location.as_mut() {
                f(d.code, l);
            }
            for r in &mut d.related {
                f(d.code, &mut r.location);
            }
        }
        self
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    pub fn error_count(&self) -> usize {
        self.items.iter().filter(|d| d.is_error()).count()
    }

    pub fn warning_count(&self) -> usize {
        self.count(Severity::Warning)
    }

    pub fn info_count(&self) -> usize {
        self.count(Severity::Info)
    }

    fn count(&self, sev: Severity) -> usize {
        self.items.iter().filter(|d| d.severity == sev).count()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Sorts by file, position, then code, so output does not depend on the order stages ran in.
    pub fn sort(&mut self) {
        self.items.sort_by(|a, b| {
            let key = |d: &Diagnostic| {
                (
                    d.location.as_ref().map(|l| l.file.clone()),
                    d.location.as_ref().and_then(|l| l.line),
                    d.location.as_ref().and_then(|l| l.column),
                    d.location.as_ref().and_then(|l| l.pointer.clone()),
                    d.code,
                    d.message.clone(),
                )
            };
            key(a).cmp(&key(b))
        });
        self.items.dedup();
    }

    /// All findings as rustc-style text followed by a count line.
    pub fn render_text(&self) -> String {
        self.render(true)
    }

    /// Errors and warnings as rustc-style text; infos folded into one line per code (the
    /// default for people: a zero-config build would otherwise print a note per tool).
    pub fn render_text_brief(&self) -> String {
        self.render(false)
    }

    fn render(&self, verbose: bool) -> String {
        // Brief: infos fold into one line per code; a warning code seen more than
        // `WARNINGS_SHOWN` times shows that many, then one line for the rest.
        const WARNINGS_SHOWN: usize = 3;
        let mut per_code: std::collections::BTreeMap<Code, usize> = Default::default();
        for d in &self.items {
            *per_code.entry(d.code).or_default() += 1;
        }
        let mut shown: std::collections::BTreeMap<Code, usize> = Default::default();
        let mut out = String::new();
        for d in &self.items {
            let n = shown.entry(d.code).or_default();
            *n += 1;
            let keep = verbose
                || match d.severity {
                    Severity::Error => true,
                    Severity::Warning => {
                        per_code[&d.code] <= WARNINGS_SHOWN + 2 || *n <= WARNINGS_SHOWN
                    }
                    Severity::Info => false,
                };
            if keep {
                out.push_str(&d.render_text());
                out.push('\n');
            }
        }
        if !verbose {
            for (code, total) in per_code {
                let hidden = match code.severity() {
                    Severity::Info => total,
                    Severity::Warning if total > WARNINGS_SHOWN + 2 => total - WARNINGS_SHOWN,
                    _ => 0,
                };
                if hidden == 0 {
                    continue;
                }
                let (sev, more) = match code.severity() {
                    Severity::Info => ("note", ""),
                    _ => ("warning", " more"),
                };
                out.push_str(&format!(
                    "{sev}[{code}]: {hidden}{more} finding{} of this kind: {}\n   = help: `--verbose` lists each one{}\n\n",
                    if hidden == 1 { "" } else { "s" },
                    code.title(),
                    if code == Code::Inferred {
                        "; `toolreg init` writes what was inferred into toolreg.toml, to review and edit"
                    } else {
                        ""
                    }
                ));
            }
        }
        let (e, w, i) = (self.error_count(), self.warning_count(), self.info_count());
        if e + w + i > 0 {
            out.push_str(&format!(
                "{e} error{}, {w} warning{}",
                if e == 1 { "" } else { "s" },
                if w == 1 { "" } else { "s" }
            ));
            if i > 0 {
                out.push_str(&format!(", {i} note{}", if i == 1 { "" } else { "s" }));
            }
            out.push('\n');
        }
        out
    }

    pub fn render_json_lines(&self) -> String {
        self.items.iter().map(|d| d.render_json() + "\n").collect()
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    /// The findings as a SARIF 2.1.0 log, for code-scanning UIs: one rule per code used, one
    /// result per finding (`TR091/instruction-tag` for a poisoning-lint rule), file locations as
    /// relative URIs with line and column, the JSON pointer in the result's properties.
    pub fn render_sarif(&self, version: &str) -> String {
        use serde_json::json;
        let mut codes: Vec<Code> = self.items.iter().map(|d| d.code).collect();
        codes.sort();
        codes.dedup();
        let level = |s: Severity| match s {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "note",
        };
        let rules: Vec<serde_json::Value> = codes
            .iter()
            .map(|c| {
                json!({
                    "id": c.as_str(),
                    "shortDescription": {"text": c.title()},
                    "defaultConfiguration": {"level": level(c.severity())},
                })
            })
            .collect();
        let results: Vec<serde_json::Value> = self
            .items
            .iter()
            .map(|d| {
                let rule_id = match &d.rule {
                    Some(r) => format!("{}/{r}", d.code),
                    None => d.code.as_str().to_string(),
                };
                let mut text = escape_controls(&d.message);
                if let Some(h) = &d.help {
                    text = format!("{text}\nhelp: {}", escape_controls(h));
                }
                let mut result = json!({
                    "ruleId": rule_id,
                    "ruleIndex": codes.iter().position(|c| *c == d.code).unwrap_or(0),
                    "level": level(d.severity),
                    "message": {"text": text},
                });
                if let Some(l) = &d.location {
                    let mut physical = json!({"artifactLocation": {"uri": uri_reference(&l.file)}});
                    if let Some(line) = l.line {
                        physical["region"] = json!({"startLine": line.max(1), "startColumn": l.column.unwrap_or(1).max(1)});
                    }
                    result["locations"] = json!([{"physicalLocation": physical}]);
                    if let Some(p) = &l.pointer {
                        result["properties"] = json!({"jsonPointer": p});
                    }
                }
                result
            })
            .collect();
        let log = json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "toolreg",
                    "version": version,
                    "rules": rules,
                }},
                "results": results,
            }],
        });
        serde_json::to_string_pretty(&log).expect("a JSON value serializes") + "\n"
    }
}

/// A file path as a relative URI reference: every byte outside the unreserved set and `/`
/// percent-encoded (spaces, `#`, `?`, `%`, non-ASCII).
fn uri_reference(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.replace('\\', "/").bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl From<Vec<Diagnostic>> for Diagnostics {
    fn from(items: Vec<Diagnostic>) -> Self {
        Diagnostics { items }
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

/// Whether a character must not reach a terminal as it is: C0 and C1 controls, DEL, the bidi
/// controls that reorder what a reader sees, the invisible characters that hide text, and the
/// separators that break a line without looking like it.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || is_bidi_control(c)
        || is_invisible(c)
        || is_tag_char(c)
        || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Bidi embeddings, overrides, isolates and marks (text that reads otherwise than it is).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// Zero-width characters, word joiners and invisible operators, and the supplementary
/// variation selectors (used to smuggle bytes).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{180E}'
            | '\u{E0100}'..='\u{E01EF}'
            // Default-ignorable code points that hide inside words: soft hyphen, combining
            // grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian variation
            // selectors, deprecated format characters, shorthand format controls.
            | '\u{00AD}' | '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180D}' | '\u{180F}' | '\u{206A}'..='\u{206F}' | '\u{3164}'
            | '\u{FFA0}' | '\u{1BCA0}'..='\u{1BCA3}'
    )
}

/// Tag characters: invisible ASCII, used to hide instructions.
pub fn is_tag_char(c: char) -> bool {
    matches!(c, '\u{E0000}'..='\u{E007F}')
}

/// JSON text with every unsafe character that is not already escaped (DEL, C1, bidi,
/// zero-width, tag characters) written as a JSON `\uXXXX` escape (a surrogate pair above
/// U+FFFF). Such characters only occur inside JSON strings, so the value is unchanged.
pub fn escape_json_text(json: &str) -> String {
    if !json.chars().any(is_unsafe_char) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_unsafe_char(c) && !matches!(c, '\n' | '\t' | '\r') {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One field of a diagnostic with every unsafe character (newlines included) written as an
/// escape (`\u{1b}`), so it stays on its line.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(is_unsafe_char) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if is_unsafe_char(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The closest candidate to `word`, if any is close enough to be a plausible typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    ranked(word, candidates, 1, TYPO_SIMILARITY)
        .into_iter()
        .next()
}

/// Jaro-Winkler similarity above which a candidate is offered as "did you mean".
pub const TYPO_SIMILARITY: f64 = 0.7;

/// Up to `n` candidates at least `min_similarity` like `word`, best first (Jaro-Winkler, ties by
/// name).
pub fn ranked<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
    min_similarity: f64,
) -> Vec<&'a str> {
    let lw = word.to_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&lw, &c.to_lowercase()), c))
        .filter(|(s, _)| *s >= min_similarity)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}
