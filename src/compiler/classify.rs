//! Classify: tool name -> op. Special cases first, then the ordered rules, then inference from
//! the name (`compiler::infer`, catalog-wide, run by `compiler::compile`), then the fallback.
//! Kind and destructive are decided here, once, by [`resolve_kind`] and [`resolve_destructive`].
//!
//! Nothing here knows any catalog: all names, entities and ops come from the overlay.
//!
//! Why it is one file: rules, special cases and kind/destructive resolution (about 645 lines),
//! then their tests.

use super::overlay::{LoadedOverlay, Overlay};
// Op-name syntax is the model's (inference and the runtime check it too); kept here by name.
use crate::model::diag::{Code, Diagnostic, Diagnostics};
pub use crate::model::registry::{valid_op, MAX_OP_LEN};
use crate::model::registry::{Kind, McpAnnotations};
use heck::ToSnakeCase;
use std::collections::{BTreeMap, BTreeSet};

/// One piece of a rule pattern or op template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Lit(String),
    Cap(String),
}

fn parse_template(s: &str) -> Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let end = rest
                    .find('}')
                    .ok_or_else(|| format!("unclosed `{{` in `{s}`"))?;
                let name = &rest[1..end];
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    return Err(format!(
                        "placeholder `{{{name}}}` in `{s}` must be lowercase letters and `_`"
                    ));
                }
                if matches!(segs.last(), Some(Seg::Cap(_))) {
                    return Err(format!(
                        "two placeholders side by side in `{s}` cannot be told apart; put a literal between them"
                    ));
                }
                segs.push(Seg::Cap(name.to_string()));
                rest = &rest[end + 1..];
            }
            Some(i) => {
                segs.push(Seg::Lit(rest[..i].to_string()));
                rest = &rest[i..];
            }
            None => {
                if rest.contains('}') {
                    return Err(format!("stray `}}` in `{s}`"));
                }
                segs.push(Seg::Lit(rest.to_string()));
                rest = "";
            }
        }
    }
    Ok(segs)
}

/// Every way a pattern matches a name (bounded), each as placeholder -> captured text.
fn match_all(segs: &[Seg], name: &str) -> Vec<BTreeMap<String, String>> {
    fn go(
        segs: &[Seg],
        name: &str,
        pos: usize,
        caps: &mut BTreeMap<String, String>,
        out: &mut Vec<BTreeMap<String, String>>,
    ) {
        if out.len() >= 32 {
            return;
        }
        let Some((first, rest)) = segs.split_first() else {
            if pos == name.len() {
                out.push(caps.clone());
            }
            return;
        };
        match first {
            Seg::Lit(l) => {
                if name[pos..].starts_with(l.as_str()) {
                    go(rest, name, pos + l.len(), caps, out);
                }
            }
            Seg::Cap(c) => {
                for end in pos + 1..=name.len() {
                    if !name.is_char_boundary(end) {
                        continue;
                    }
                    let text = &name[pos..end];
                    if let Some(prev) = caps.get(c) {
                        if prev != text {
                            continue;
                        }
                    }
                    let fresh = !caps.contains_key(c);
                    caps.insert(c.clone(), text.to_string());
                    go(rest, name, end, caps, out);
                    if fresh {
                        caps.remove(c);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    go(segs, name, 0, &mut BTreeMap::new(), &mut out);
    out
}

/// The form of a tool name that rules match against: snake_case, lowercase, with spaces, dots and
/// dashes as `_` (`getPM2.5Level` -> `get_pm2_5level`, `Summarize Detection` ->
/// `summarize_detection`).
pub fn match_form(name: &str) -> String {
    name.to_snake_case()
}

/// How a name was classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Special,
    Rule(usize),
    /// Inferred from the name: no special case or rule took it.
    Inferred,
    Fallback,
}

/// The result for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub op: String,
    pub group: String,
    pub entity: Option<String>,
    pub action: String,
    pub via: Via,
    /// Kind stated by the special case, rule or fallback, if any.
    pub stated_kind: Option<Kind>,
    pub stated_destructive: Option<bool>,
    /// A rule-captured entity that is not in the vocabulary.
    pub unknown_entity: Option<String>,
}

/// The entity vocabulary, both ways.
#[derive(Debug, Default, Clone)]
pub struct Vocab {
    /// singular -> plural.
    pub singular: BTreeMap<String, Option<String>>,
    plural_to_singular: BTreeMap<String, String>,
}

impl Vocab {
    pub fn new(entries: impl IntoIterator<Item = (String, Option<String>)>) -> Self {
        let mut v = Vocab::default();
        for (s, p) in entries {
            if let Some(p) = &p {
                v.plural_to_singular.insert(p.clone(), s.clone());
            }
            v.singular.insert(s, p);
        }
        v
    }

    fn known_entity(&self, cap: &str, text: &str) -> Option<String> {
        if cap == "entities" {
            if let Some(s) = self.plural_to_singular.get(text) {
                return Some(s.clone());
            }
        }
        if self.singular.contains_key(text) {
            return Some(text.to_string());
        }
        self.plural_to_singular.get(text).cloned()
    }
}

/// A rule pattern and op template, parsed and checked (`toolreg init` probes drafts with it).
pub struct CompiledRule {
    pattern: Vec<Seg>,
    template: Vec<Seg>,
    kind: Option<Kind>,
    destructive: Option<bool>,
    source: String,
    /// Only tools from files matching this glob.
    file: Option<String>,
}

impl CompiledRule {
    /// Parses a rule; the error says what is wrong with it.
    pub fn parse(pattern: &str, op: &str) -> Result<CompiledRule, String> {
        let (p, t) = (parse_template(pattern)?, parse_template(op)?);
        let caps: BTreeSet<&str> = p
            .iter()
            .filter_map(|s| match s {
                Seg::Cap(c) => Some(c.as_str()),
                _ => None,
            })
            .collect();
        let has_entity = caps.iter().any(|c| ENTITY_CAPS.contains(c));
        let missing: Vec<&str> = t
            .iter()
            .filter_map(|s| match s {
                Seg::Cap(c) if c == "name" => None,
                Seg::Cap(c) if c == "entity" && has_entity => None,
                Seg::Cap(c) if !caps.contains(c.as_str()) => Some(c.as_str()),
                _ => None,
            })
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "op `{op}` uses {} that the pattern `{pattern}` does not capture",
                missing
                    .iter()
                    .map(|m| format!("`{{{m}}}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        // With every placeholder filled by a plain word the op must be valid; if it is not, no
        // name can ever make it valid (`../../zz{entity}.list`).
        let sample: String = t
            .iter()
            .map(|s| match s {
                Seg::Lit(l) => l.as_str(),
                Seg::Cap(_) => "x",
            })
            .collect();
        if !valid_op(&sample) {
            return Err(format!("`{op}` is not a valid op"));
        }
        Ok(CompiledRule {
            pattern: p,
            template: t,
            kind: None,
            destructive: None,
            source: pattern.to_string(),
            file: None,
        })
    }

    /// Limits the rule to tools from files matching `glob` (relative to the definitions folder).
    pub fn only_file(mut self, glob: Option<String>) -> Self {
        self.file = glob;
        self
    }

    /// Whether the rule looks at tools from this file at all.
    pub fn covers(&self, file: &str) -> bool {
        self.file.as_deref().is_none_or(|g| glob_match(g, file))
    }

    /// The op this rule gives a name in match form, with its entity and, when the captured
    /// entity is not in the vocabulary, that guess; `None` when the pattern does not match or
    /// the op would be invalid.
    pub fn apply(&self, form: &str, vocab: &Vocab) -> Option<RuleMatch> {
        let matches = match_all(&self.pattern, form);
        if matches.is_empty() {
            return None;
        }
        // Prefer a split whose entity placeholders are all vocabulary words.
        let resolved = matches.iter().find_map(|caps| {
            let mut entity = None;
            for c in ENTITY_CAPS {
                if let Some(text) = caps.get(c) {
                    entity = Some(vocab.known_entity(c, text)?);
                }
            }
            Some((caps, entity, None))
        });
        let (caps, entity, unknown_entity) = match resolved {
            Some(r) => r,
            None => {
                let caps = &matches[0];
                let guess = caps
                    .get("entity")
                    .cloned()
                    .or_else(|| caps.get("entities").map(|p| singularize(p)));
                (caps, guess.clone(), guess)
            }
        };
        let op = render(&self.template, caps, entity.as_deref(), form);
        valid_op(&op).then_some(RuleMatch {
            op,
            entity,
            unknown_entity,
        })
    }
}

/// What a rule made of a name.
pub struct RuleMatch {
    pub op: String,
    pub entity: Option<String>,
    pub unknown_entity: Option<String>,
}

/// The overlay's classification part, compiled and checked.
pub struct Classifier<'o> {
    overlay: &'o Overlay,
    rules: Vec<CompiledRule>,
    fallback: Option<Vec<Seg>>,
    vocab: Vocab,
}

const ENTITY_CAPS: [&str; 2] = ["entity", "entities"];

impl<'o> Classifier<'o> {
    /// Compiles rules and checks ops and templates, reporting TR020 at the overlay position.
    pub fn new(lo: &'o LoadedOverlay, diags: &mut Diagnostics) -> Self {
        let overlay = &lo.overlay;
        let mut rules = Vec::new();
        for (i, rule) in overlay.rules.iter().enumerate() {
            let r = rule.get_ref();
            match CompiledRule::parse(&r.pattern, &r.op) {
                Ok(mut c) => {
                    c.kind = r.kind;
                    c.destructive = r.destructive;
                    rules.push(c.only_file(r.file.clone()));
                }
                Err(e) => {
                    let help = if e.contains("is not a valid op") {
                        OP_HELP
                    } else {
                        "placeholders look like `{entity}`, `{entities}` or `{name}`; every placeholder in `op` must appear in `pattern` (`{entity}` may come from `{entities}`)"
                    };
                    diags.push(
                        Diagnostic::new(
                            Code::OverlayInvalid,
                            format!("rule {} is invalid: {e}", i + 1),
                        )
                        .at(lo.loc(rule.span()))
                        .help(help),
                    );
                }
            }
        }
        for (name, special) in &overlay.special {
            if !valid_op(&special.op) {
                diags.push(
                    Diagnostic::new(
                        Code::OverlayInvalid,
                        format!(
                            "special case `{}` maps to `{}`, which is not a valid op",
                            name.get_ref(),
                            special.op
                        ),
                    )
                    .at(lo.loc(name.span()))
                    .help(OP_HELP),
                );
            }
        }
        let fallback =
            overlay
                .fallback
                .as_ref()
                .and_then(|f| match parse_template(&f.get_ref().op) {
                    Ok(t)
                        if t.iter().all(|s| match s {
                            Seg::Cap(c) => c == "name",
                            Seg::Lit(_) => true,
                        }) =>
                    {
                        Some(t)
                    }
                    Ok(_) => {
                        diags.push(
                            Diagnostic::new(
                                Code::OverlayInvalid,
                                format!("fallback op `{}` may only use `{{name}}`", f.get_ref().op),
                            )
                            .at(lo.loc(f.span()))
                            .help("write the fallback like `op = \"x.{name}\"`"),
                        );
                        None
                    }
                    Err(e) => {
                        diags.push(
                            Diagnostic::new(
                                Code::OverlayInvalid,
                                format!("fallback is invalid: {e}"),
                            )
                            .at(lo.loc(f.span()))
                            .help("write the fallback like `op = \"x.{name}\"`"),
                        );
                        None
                    }
                });
        let vocab = Vocab::new(
            overlay
                .entities
                .iter()
                .map(|(s, spec)| (s.get_ref().clone(), spec.plural.clone())),
        );
        Classifier {
            overlay,
            rules,
            fallback,
            vocab,
        }
    }

    /// The rule patterns, for "closest rules" hints.
    pub fn rule_patterns(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.source.as_str()).collect()
    }

    /// The entity vocabulary: singular -> plural.
    pub fn vocabulary(&self) -> &BTreeMap<String, Option<String>> {
        &self.vocab.singular
    }

    /// Classifies one tool name by the overlay alone (special cases, then rules); `None` when
    /// neither takes it. `file` is the tool's definitions file, relative (for scoped rules).
    pub fn classify(&self, tool_name: &str, file: &str) -> Option<Classification> {
        let form = match_form(tool_name);
        let special = self
            .overlay
            .special
            .get(tool_name)
            .or_else(|| self.overlay.special.get(form.as_str()));
        if let Some(sc) = special {
            let op = sc.op.clone();
            if !valid_op(&op) {
                return None;
            }
            return Some(shape(op, None, Via::Special, sc.kind, sc.destructive, None));
        }
        for (i, rule) in self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.covers(file))
        {
            let Some(RuleMatch {
                op,
                entity,
                unknown_entity,
            }) = rule.apply(&form, &self.vocab)
            else {
                continue;
            };
            return Some(shape(
                op,
                entity,
                Via::Rule(i),
                rule.kind,
                rule.destructive,
                unknown_entity,
            ));
        }
        None
    }

    /// The fallback's op for a name no special case, rule or inference took.
    pub fn classify_fallback(&self, tool_name: &str) -> Option<Classification> {
        let form = match_form(tool_name);
        let fallback = self.fallback.as_ref()?;
        let op = render(fallback, &BTreeMap::new(), None, &form);
        if !valid_op(&op) {
            return None;
        }
        let kind = self
            .overlay
            .fallback
            .as_ref()
            .and_then(|f| f.get_ref().kind);
        Some(shape(op, None, Via::Fallback, kind, None, None))
    }
}

const OP_HELP: &str = "ops are dotted lowercase with at least two segments, like `onto.task.list` (`group.entity[.sub].action`), at most 128 characters";

fn render(
    template: &[Seg],
    caps: &BTreeMap<String, String>,
    entity: Option<&str>,
    form: &str,
) -> String {
    template
        .iter()
        .map(|s| match s {
            Seg::Lit(l) => l.clone(),
            Seg::Cap(c) if c == "entity" => entity
                .map(str::to_owned)
                .or_else(|| caps.get(c).cloned())
                .unwrap_or_default(),
            Seg::Cap(c) if c == "name" => caps.get(c).cloned().unwrap_or_else(|| form.to_string()),
            Seg::Cap(c) => caps.get(c).cloned().unwrap_or_default(),
        })
        .collect()
}

/// A classification from an inferred op.
pub fn inferred(inf: &super::infer::Inferred) -> Classification {
    Classification {
        op: inf.op.clone(),
        group: inf.group.clone(),
        entity: inf.entity.clone(),
        action: inf.action.clone(),
        via: Via::Inferred,
        stated_kind: None,
        stated_destructive: None,
        unknown_entity: None,
    }
}

fn shape(
    op: String,
    entity: Option<String>,
    via: Via,
    stated_kind: Option<Kind>,
    stated_destructive: Option<bool>,
    unknown_entity: Option<String>,
) -> Classification {
    let segs: Vec<&str> = op.split('.').collect();
    let group = segs[0].to_string();
    let action = segs[segs.len() - 1].to_string();
    let entity = entity.or_else(|| (segs.len() >= 3).then(|| segs[1].to_string()));
    Classification {
        op,
        group,
        entity,
        action,
        via,
        stated_kind,
        stated_destructive,
        unknown_entity,
    }
}

/// English plural -> singular for entities the vocabulary does not list.
pub fn singularize(p: &str) -> String {
    if let Some(s) = p.strip_suffix("ies") {
        format!("{s}y")
    } else if p.ends_with("sses")
        || p.ends_with("xes")
        || p.ends_with("ches")
        || p.ends_with("shes")
    {
        p[..p.len() - 2].to_string()
    } else if p.ends_with('s') && !p.ends_with("ss") {
        p[..p.len() - 1].to_string()
    } else {
        p.to_string()
    }
}

/// The verb that decides kind/destructive when nothing states them: the action if it is a known
/// verb, else the first word of the tool name.
fn verb<'a>(action: &'a str, tool_form: &'a str, lists: &[&[String]]) -> &'a str {
    let first_action_word = action.split('_').next().unwrap_or(action);
    if lists
        .iter()
        .any(|l| l.iter().any(|v| v == action || v == first_action_word))
    {
        return first_action_word;
    }
    tool_form.split('_').next().unwrap_or(tool_form)
}

/// The one place an op's kind is decided. Order: per-op override, the special case / rule /
/// fallback, MCP `readOnlyHint`, then the verb lists (unknown verbs count as writes: safer).
pub fn resolve_kind(
    class: &Classification,
    tool_name: &str,
    override_kind: Option<Kind>,
    annotations: Option<&McpAnnotations>,
    overlay: &Overlay,
) -> Kind {
    if let Some(k) = override_kind.or(class.stated_kind) {
        return k;
    }
    if let Some(ro) = annotations.and_then(|a| a.read_only_hint) {
        return if ro { Kind::Read } else { Kind::Write };
    }
    let form = match_form(tool_name);
    let lists = [
        &overlay.classify.read_verbs[..],
        &overlay.classify.destructive_verbs[..],
    ];
    let v = verb(&class.action, &form, &lists);
    if overlay.classify.read_verbs.iter().any(|r| r == v) {
        Kind::Read
    } else {
        Kind::Write
    }
}

/// The one place destructive is decided. Reads are never destructive unless an override says so.
pub fn resolve_destructive(
    class: &Classification,
    tool_name: &str,
    kind: Kind,
    override_destructive: Option<bool>,
    annotations: Option<&McpAnnotations>,
    overlay: &Overlay,
) -> bool {
    if let Some(d) = override_destructive {
        return d;
    }
    if kind == Kind::Read {
        return false;
    }
    if let Some(d) = annotations.and_then(|a| a.destructive_hint) {
        return d;
    }
    if let Some(d) = class.stated_destructive {
        return d;
    }
    let form = match_form(tool_name);
    let lists = [
        &overlay.classify.read_verbs[..],
        &overlay.classify.destructive_verbs[..],
    ];
    let v = verb(&class.action, &form, &lists);
    overlay.classify.destructive_verbs.iter().any(|d| d == v)
}

/// Whether `op` matches a pattern: an exact op or a glob with `*` (any characters). Profiles,
/// rule file filters and `[sources] third_party` all select with it.
pub fn glob_match(pattern: &str, op: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == op;
    }
    let mut rest = op;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_and_reject_adjacent_placeholders() {
        assert_eq!(
            parse_template("list_onto_{entities}").unwrap(),
            vec![Seg::Lit("list_onto_".into()), Seg::Cap("entities".into())]
        );
        assert!(parse_template("{a}{b}").is_err());
        assert!(parse_template("x_{Bad}").is_err());
        assert!(parse_template("x_{open").is_err());
        assert!(CompiledRule::parse("list_{entities}", "../../zz{entity}.list").is_err());
        assert!(CompiledRule::parse("list_{entities}", "Shop.{entity}.list").is_err());
        assert!(CompiledRule::parse("{action}_{entity}", "shop.{entity}.{action}").is_ok());
    }

    #[test]
    fn match_all_enumerates_splits() {
        let segs = parse_template("get_{entity}_{action}").unwrap();
        let m = match_all(&segs, "get_document_outline_text");
        assert_eq!(m.len(), 2);
        assert_eq!(m[0]["entity"], "document");
        assert_eq!(m[1]["entity"], "document_outline");
    }

    #[test]
    fn names_are_matched_in_snake_form() {
        assert_eq!(match_form("getPM2.5Level"), "get_pm2_5level");
        assert_eq!(match_form("Summarize Detection"), "summarize_detection");
        assert_eq!(match_form("list_onto_tasks"), "list_onto_tasks");
    }

    #[test]
    fn op_validity() {
        assert!(valid_op("onto.task.list"));
        let long = format!("onto.{}", "a".repeat(MAX_OP_LEN - 5));
        assert!(valid_op(&long));
        assert!(!valid_op(&format!("{long}b")));
        assert!(valid_op("onto.task.doc.create_or_attach"));
        assert!(!valid_op("onto"));
        assert!(!valid_op("Onto.task"));
        assert!(!valid_op("onto..task"));
    }

    #[test]
    fn singular_forms() {
        assert_eq!(singularize("entities"), "entity");
        assert_eq!(singularize("tasks"), "task");
        assert_eq!(singularize("boxes"), "box");
        assert_eq!(singularize("address"), "address");
    }

    #[test]
    fn globs() {
        assert!(glob_match("onto.task.*", "onto.task.list"));
        assert!(glob_match("onto.*.get", "onto.task.get"));
        assert!(!glob_match("onto.*.get", "onto.task.list"));
        assert!(glob_match("*", "x.y"));
        assert!(glob_match("onto.task.list", "onto.task.list"));
        assert!(!glob_match("onto.task", "onto.task.list"));
    }
}
