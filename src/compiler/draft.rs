//! `toolreg init`: drafts a `toolreg.toml` from what inference made of a catalog, for a person to
//! review in minutes. Groups with their drafted summaries, the entity vocabulary with plurals, the
//! few ordered rules that reproduce most ops, special cases only for the rest, one profile per
//! group. The draft is checked before it is returned: building with it gives the same registry
//! version as building with no overlay.

use super::classify::{match_form, CompiledRule, Vocab};
use super::infer::{self, Inferred, Role};
use super::{compile_with, OverlaySource};
use crate::model::diag::Diagnostics;
use crate::model::registry::Registry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// A drafted overlay and what it holds.
#[derive(Debug)]
pub struct Draft {
    pub text: String,
    pub tools: usize,
    pub files: usize,
    pub groups: usize,
    pub entities: usize,
    pub rules: usize,
    pub special: usize,
    pub profiles: usize,
    /// How many ops the rules reproduce (the rest are special cases).
    pub by_rules: usize,
    /// The version of the registry built with no overlay, and with the draft: equal.
    pub registry_version: String,
}

/// The tables `init` drafts. Every other table of an existing overlay (`[upstreams]`, `[search]`,
/// `[access]`, `[ops]`, ... and whatever the overlay grows) is kept with its comments, and so is
/// a hand-set `[registry]`.
pub const DRAFTED: [&str; 5] = ["groups", "entities", "rules", "special", "profiles"];

/// A draft merged with what an existing overlay held beyond the drafted tables.
#[derive(Debug)]
pub struct Merged {
    pub text: String,
    /// The tables kept, as `[name]`, in file order.
    pub kept: Vec<String>,
    /// The version of the registry built with the merged overlay.
    pub registry_version: String,
}

/// Why the tables of an existing overlay could not be kept with a draft.
#[derive(Debug)]
pub enum KeepError {
    /// The existing overlay cannot be read as TOML, so its tables cannot be kept.
    Unreadable(String),
    /// The draft with the kept tables does not build (e.g. `[ops]` names ops the draft no
    /// longer makes).
    DoNotFit(Diagnostics),
}

/// Why no draft could be made.
#[derive(Debug)]
pub enum DraftError {
    /// The catalog does not build even with inference (bad JSON, duplicate names...).
    Input(Diagnostics),

    /// The draft did not reproduce the zero-config registry (a bug in toolreg: please report).
    Mismatch(String),
}

/// A candidate rule and, per tool it matches, whether it gives the right op.
struct Candidate {
    pattern: String,
    op: String,
    /// Only tools of this file (a group that came from its file, not from the names).
    file: Option<String>,
    /// Tool index -> right?
    hits: BTreeMap<usize, bool>,
}

/// Drafts the overlay for the definitions folder (its own `toolreg.toml`, if any, is ignored).
pub fn draft(definitions: &Path) -> Result<Draft, DraftError> {
    let base = compile_with(definitions, OverlaySource::Text(String::new()));
    let Some(reg) = base.registry else {
        return Err(DraftError::Input(base.diagnostics));
    };
    let records: Vec<&crate::model::registry::OpRecord> = reg.ops.values().collect();
    let inputs: Vec<infer::Input> = records
        .iter()
        .map(|r| infer::Input {
            name: &r.tool_name,
            file: &r.source.file,
            read_only: r.annotations.as_ref().and_then(|a| a.read_only_hint),
            classified: false,
            // As the zero-config build decides it (no overlay: imported snapshots).
            third_party: super::third_party(&r.source.file, None),
        })
        .collect();
    let inferred: Vec<Inferred> = infer::infer(
        &inputs,
        &Default::default(),
        &Default::default(),
        &Default::default(),
    )
    .into_iter()
    .flatten()
    .collect();
    let vocab = Vocab::new(reg.tree.values().flat_map(|g| {
        g.entities
            .iter()
            .map(|(e, n)| (e.clone(), n.plural.clone()))
    }));
    let forms: Vec<String> = records.iter().map(|r| match_form(&r.tool_name)).collect();
    let candidates = candidates(&records, &inferred, &forms, &vocab);
    let chosen = choose_rules(&candidates, records.len());

    let mut special: BTreeSet<usize> = (0..records.len())
        .filter(|&t| first_match(&chosen, &candidates, t) != Some(true))
        .collect();
    let files = base_files(&records);
    for _ in 0..3 {
        let text = render(&reg, &records, &candidates, &chosen, &special, files);
        let check = compile_with(definitions, OverlaySource::Text(text.clone()));
        let Some(again) = check.registry else {
            return Err(DraftError::Mismatch(format!(
                "the draft does not build:\n{}",
                check.diagnostics.render_text()
            )));
        };
        let op_of: BTreeMap<&str, &str> = again
            .ops
            .values()
            .map(|r| (r.tool_name.as_str(), r.op.as_str()))
            .collect();
        let wrong: Vec<usize> = (0..records.len())
            .filter(|&t| op_of.get(records[t].tool_name.as_str()) != Some(&records[t].op.as_str()))
            .collect();
        if wrong.is_empty() {
            if again.registry_version != reg.registry_version {
                return Err(DraftError::Mismatch(format!(
                    "the draft builds registry {} but the zero-config build gave {}",
                    again.registry_version, reg.registry_version
                )));
            }
            let by_rules = records.len() - special.len();
            return Ok(Draft {
                text,
                tools: records.len(),
                files,
                groups: reg.tree.len(),
                entities: vocab.singular.len(),
                rules: chosen.len(),
                special: special.len(),
                profiles: reg.profiles.len(),
                by_rules,
                registry_version: reg.registry_version.clone(),
            });
        }
        special.extend(wrong);
    }
    Err(DraftError::Mismatch(
        "the draft's rules and special cases did not settle".into(),
    ))
}

/// Merges `draft` with every table of the existing overlay `old` that `init` does not draft
/// (comments kept, via toml_edit), and checks that the result builds.
pub fn keep_tables(definitions: &Path, draft: &Draft, old: &str) -> Result<Merged, KeepError> {
    use toml_edit::{DocumentMut, Item, Value};
    let mut rest: DocumentMut = old
        .parse()
        .map_err(|e: toml_edit::TomlError| KeepError::Unreadable(e.to_string()))?;
    let mut doc: DocumentMut = draft
        .text
        .parse()
        .expect("a draft is TOML: it was built with");
    for key in DRAFTED {
        rest.remove(key);
    }
    // A hand-set [registry] (the catalog's name) replaces the drafted one in place, under the
    // draft's own comments.
    if let Some(Item::Table(old_registry)) = rest.remove("registry") {
        if let Some(Item::Table(drafted)) = doc.get_mut("registry") {
            let decor = drafted.decor().clone();
            let position = drafted.position();
            let mut t = old_registry;
            *t.decor_mut() = decor;
            if let Some(p) = position {
                t.set_position(Some(p));
            }
            *drafted = t;
        }
    }
    let mut kept = Vec::new();
    let keys: Vec<String> = rest.iter().map(|(k, _)| k.to_string()).collect();
    for key in &keys {
        // An inline table at the top (`synonyms = { ... }`) becomes a table, so it can follow
        // the draft's tables; anything else at the top is not an overlay key.
        if let Some(Item::Value(Value::InlineTable(t))) = rest.get(key) {
            let table = t.clone().into_table();
            rest.insert(key, Item::Table(table));
        }
        match rest.get(key) {
            Some(Item::Table(_) | Item::ArrayOfTables(_)) => kept.push(format!("[{key}]")),
            _ => {
                return Err(KeepError::Unreadable(format!(
                    "its top-level key `{key}` is not a table, so it cannot be kept after the draft"
                )))
            }
        }
    }
    let mut text = doc.to_string();
    if !kept.is_empty() {
        text.push_str(
            "\n# Kept from the previous toolreg.toml: `toolreg init` drafts [groups], [entities],\n\
             # [[rules]], [special] and [profiles], and keeps every other table as it was.\n",
        );
        text.push_str(rest.to_string().trim_start_matches('\n'));
    }
    let built = compile_with(definitions, OverlaySource::Text(text.clone()));
    match built.registry {
        Some(reg) if !built.diagnostics.has_errors() => Ok(Merged {
            text,
            kept,
            registry_version: reg.registry_version,
        }),
        _ => Err(KeepError::DoNotFit(built.diagnostics)),
    }
}

fn base_files(records: &[&crate::model::registry::OpRecord]) -> usize {
    records
        .iter()
        .map(|r| r.source.file.as_str())
        .collect::<BTreeSet<_>>()
        .len()
}

/// Rule candidates written from each tool's shape: the verb as `{action}` or literal, the
/// entity as `{entity}`, the qualifier as `{qualifier}` or literal, the prefix literal.
fn candidates(
    records: &[&crate::model::registry::OpRecord],
    inferred: &[Inferred],
    forms: &[String],
    vocab: &Vocab,
) -> Vec<Candidate> {
    let mut keys: BTreeSet<(String, String, Option<String>)> = BTreeSet::new();
    for ((inf, form), rec) in inferred.iter().zip(forms).zip(records) {
        for (pattern, op) in patterns_of(inf, form) {
            // Unscoped, and scoped to the tool's file: names alone cannot tell two servers'
            // `create_{entity}` apart.
            keys.insert((pattern.clone(), op.clone(), Some(rec.source.file.clone())));
            keys.insert((pattern, op, None));
        }
    }
    let mut out = Vec::new();
    for (pattern, op, file) in keys {
        let Ok(rule) = CompiledRule::parse(&pattern, &op) else {
            continue;
        };
        let rule = rule.only_file(file.clone());
        let literals: Vec<&str> = pattern
            .split(['{', '}'])
            .enumerate()
            .filter(|(i, s)| i % 2 == 0 && !s.is_empty())
            .map(|(_, s)| s)
            .collect();
        let mut hits = BTreeMap::new();
        for (t, form) in forms.iter().enumerate() {
            if !rule.covers(&records[t].source.file) || !literals.iter().all(|l| form.contains(l)) {
                continue;
            }
            if let Some(m) = rule.apply(form, vocab) {
                hits.insert(t, m.op == records[t].op);
            }
        }
        if hits.values().filter(|r| **r).count() >= 2 {
            out.push(Candidate {
                pattern,
                op,
                file,
                hits,
            });
        }
    }
    out
}

/// The (pattern, op template) pairs one tool suggests, when its words line up with its name:
/// prefixes and stop words literal, the entity `{entity}`, the verb and the qualifier either
/// captured (`{action}`, `{qualifier}`) or literal.
fn patterns_of(inf: &Inferred, form: &str) -> Vec<(String, String)> {
    let s = &inf.shape;
    if !s.plain {
        return Vec::new();
    }
    let form_words: Vec<&str> = form.split('_').collect();
    if s.layout.len() != form_words.len()
        || s.layout.iter().zip(&form_words).any(|((_, w), f)| w != f)
    {
        return Vec::new();
    }
    let words_of = |r: Role| {
        s.layout
            .iter()
            .filter(|(role, _)| *role == r)
            .map(|(_, w)| w.as_str())
            .collect::<Vec<_>>()
            .join("_")
    };
    let (action, qualifier) = (words_of(Role::Verb), words_of(Role::Qualifier));
    let mut out = Vec::new();
    for generic_verb in [true, false] {
        for generic_qualifier in [true, false] {
            if qualifier.is_empty() && !generic_qualifier {
                continue;
            }
            let mut pieces: Vec<String> = Vec::new();
            let mut prev: Option<Role> = None;
            for (role, word) in &s.layout {
                let placeholder = match role {
                    Role::Verb if generic_verb => Some("{action}"),
                    Role::Entity => Some("{entity}"),
                    Role::Qualifier if generic_qualifier => Some("{qualifier}"),
                    _ => None,
                };
                match placeholder {
                    // One placeholder per run of words of the same role.
                    Some(_) if prev == Some(*role) => {}
                    Some(p) => pieces.push(p.to_string()),
                    None => pieces.push(word.clone()),
                }
                prev = Some(*role);
            }
            let mut op = vec![inf.group.clone(), "{entity}".to_string()];
            if !qualifier.is_empty() {
                op.push(if generic_qualifier {
                    "{qualifier}".into()
                } else {
                    qualifier.clone()
                });
            }
            op.push(if generic_verb {
                "{action}".into()
            } else {
                action.clone()
            });
            out.push((pieces.join("_"), op.join(".")));
        }
    }
    out
}

/// Whether the first chosen rule that matches tool `t` gets it right (`None`: none matches).
fn first_match(chosen: &[usize], candidates: &[Candidate], t: usize) -> Option<bool> {
    chosen
        .iter()
        .find_map(|&c| candidates[c].hits.get(&t).copied())
}

/// Greedy: repeatedly insert, at its best position, the candidate that makes the most tools
/// right (minus the ones it would take from a rule that had them right), while that gains at
/// least two tools over writing special cases. Ties go to the earlier candidate (sorted keys).
fn choose_rules(candidates: &[Candidate], tools: usize) -> Vec<usize> {
    const MAX_RULES: usize = 40;
    let mut chosen: Vec<usize> = Vec::new();
    while chosen.len() < MAX_RULES {
        // Per tool: the position of the rule that takes it now, and whether it is right.
        let current: Vec<Option<(usize, bool)>> = (0..tools)
            .map(|t| {
                chosen
                    .iter()
                    .enumerate()
                    .find_map(|(pos, &c)| candidates[c].hits.get(&t).map(|r| (pos, *r)))
            })
            .collect();
        let mut best: Option<(i64, usize, usize)> = None;
        for (ci, cand) in candidates.iter().enumerate() {
            if chosen.contains(&ci) {
                continue;
            }
            for pos in 0..=chosen.len() {
                let gain: i64 = cand
                    .hits
                    .iter()
                    .filter(|(t, _)| current[**t].is_none_or(|(p, _)| p >= pos))
                    .map(|(t, right)| {
                        let was = current[*t].is_some_and(|(_, r)| r);
                        i64::from(*right) - i64::from(was)
                    })
                    .sum();
                if best.is_none_or(|(g, _, _)| gain > g) {
                    best = Some((gain, ci, pos));
                }
            }
        }
        match best {
            Some((gain, ci, pos)) if gain >= 2 => chosen.insert(pos, ci),
            _ => break,
        }
    }
    chosen
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn key(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        s.to_string()
    } else {
        quote(s)
    }
}

fn render(
    reg: &Registry,
    records: &[&crate::model::registry::OpRecord],
    candidates: &[Candidate],
    chosen: &[usize],
    special: &BTreeSet<usize>,
    files: usize,
) -> String {
    let mut t = String::new();
    let by_rules = records.len() - special.len();
    let _ = writeln!(
        t,
        "# toolreg.toml drafted by `toolreg init` from {} tools in {files} file{}.\n#\n\
         # Everything here was inferred from the tool names (and MCP annotations); building with it\n\
         # gives exactly the registry the build gave with no overlay. Review it in this order:\n\
         #   1. [groups]: does each summary say what the group is for? The model reads them first.\n\
         #   2. [entities]: are these the nouns of your domain, with the right plurals?\n\
         #   3. [[rules]] and [special]: the ops. Special cases are names no rule reproduces.\n\
         #   4. [profiles]: one typed tool list per group; shape them into your agent's contexts.\n\
         # Then `toolreg build`, and commit this file with the generated folder.",
        records.len(),
        if files == 1 { "" } else { "s" },
    );
    let _ = writeln!(
        t,
        "\n[registry]\n# name = \"my-catalog\"  # the catalog's name in every artifact (default \"registry\")\n\
         # description = \"What these tools are for.\""
    );
    t.push_str("\n# Groups: a one-line summary each, drafted from its entities.\n");
    for (name, g) in &reg.tree {
        let _ = writeln!(
            t,
            "[groups.{}]\nsummary = {}\n",
            key(name),
            quote(&g.summary)
        );
    }
    let mut entities: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    for g in reg.tree.values() {
        for (e, n) in &g.entities {
            entities.insert(e, n.plural.as_deref());
        }
    }
    if !entities.is_empty() {
        t.push_str(
            "# Entity vocabulary: singular = plural. Rules match either form.\n[entities]\n",
        );
        for (e, p) in &entities {
            let _ = writeln!(t, "{} = {}", key(e), quote(p.unwrap_or(e)));
        }
        t.push('\n');
    }
    if !chosen.is_empty() {
        let _ = writeln!(
            t,
            "# Ordered rules: the first that matches a name (in snake_case) wins. These {} reproduce\n\
             # {by_rules} of the {} ops; `{{action}}` and `{{qualifier}}` capture words of the name.",
            chosen.len(),
            records.len()
        );
        for &c in chosen {
            let c = &candidates[c];
            let _ = write!(
                t,
                "[[rules]]\npattern = {}\nop = {}\n",
                quote(&c.pattern),
                quote(&c.op)
            );
            if let Some(f) = &c.file {
                let _ = writeln!(t, "file = {}", quote(f));
            }
            t.push('\n');
        }
    }
    if !special.is_empty() {
        let _ = writeln!(
            t,
            "# Special cases, checked before the rules: the {} name{} no rule above reproduces.\n\
             # Check these first: an odd name often means an odd op.\n[special]",
            special.len(),
            if special.len() == 1 { "" } else { "s" }
        );
        let mut rows: Vec<(&str, &str)> = special
            .iter()
            .map(|&i| (records[i].tool_name.as_str(), records[i].op.as_str()))
            .collect();
        rows.sort();
        for (name, op) in rows {
            let _ = writeln!(t, "{} = {}", key(name), quote(op));
        }
        t.push('\n');
    }
    if !reg.profiles.is_empty() {
        t.push_str(
            "# Profiles: one per group, every op of it (the same as the build makes with no\n\
             # [profiles]). `core` ops keep their full description; the rest are deferred to help.\n",
        );
        for (name, p) in &reg.profiles {
            let _ = writeln!(
                t,
                "[profiles.{}]\ndescription = {}\nops = [{}]\n",
                key(name),
                quote(p.description.as_deref().unwrap_or_default()),
                quote(&format!("{name}.*"))
            );
        }
    }
    while t.ends_with("\n\n") {
        t.pop();
    }
    t
}
