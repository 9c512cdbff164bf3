//! Infer: a tool name -> op, for names no special case or rule of the overlay takes, so a catalog
//! with no `toolreg.toml` still gets a structured tree (`list_onto_tasks` -> `onto.task.list`).
//!
//! Catalog-wide, because the evidence is: a group is a namespace (`math.add`), a name prefix many
//! tools share before varied words (`onto_`, `slack_`), or the file the tools came from; an entity
//! is a noun phrase the catalog uses whole elsewhere (`pull_request` in `create_pull_request`
//! makes `get_pull_request_files` -> entity `pull_request`, qualifier `files`). Verbs, fillers and
//! modifiers come from the lexicon ([`words::Lexicon`], kept as data). The result never depends on
//! file order: every statistic is a count, every tie is broken by name.
//!
//! Why it is one file: inference is one catalog-wide pass (parse -> analyze -> decide -> finish ->
//! resolve collisions) whose steps share private intermediate types (`Parsed`, `Analyzed`,
//! `Inflect`); the word level lives in `words.rs`. About 110 of its lines are tests.

pub mod words;

use crate::model::registry::valid_op;
use std::collections::{BTreeMap, BTreeSet};
use words::{split_name, Lexicon};

/// What inference needs to know about one tool.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    pub name: &'a str,
    /// The definitions file, relative to the definitions folder (`github.mcp.json`).
    pub file: &'a str,
    /// MCP `readOnlyHint`, when declared.
    pub read_only: Option<bool>,
    /// Already classified by the overlay: counts as evidence, gets no inferred op.
    pub classified: bool,
    /// From a third-party file: on a collision, the team's own tool keeps the op.
    pub third_party: bool,
}

/// An inferred op and how it was found (for notes and for drafting rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inferred {
    pub op: String,
    pub group: String,
    pub entity: Option<String>,
    pub action: String,
    /// One line: which words became what, and why.
    pub why: String,
    /// Another tool that inferred the same op first (this one got a qualifier).
    pub collided_with: Option<String>,
    /// How the name is built, for `toolreg init`'s rules.
    pub shape: Shape,
}

/// What a word of a name is, for writing a rule pattern from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The namespace, shared prefix or group word: literal in a pattern.
    Prefix,
    /// A stop word or filler (`in`, `details`): literal in a pattern, not in the op.
    Literal,
    Verb,
    Entity,
    Qualifier,
}

/// The name's words in order with their roles (namespace first), when every word has one a rule
/// pattern can express (a verb, an entity, one run of qualifier words).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shape {
    pub layout: Vec<(Role, String)>,
    /// Whether `layout` can become a rule pattern.
    pub plain: bool,
}

/// The entity vocabulary that already exists (the overlay's `[entities]`), singular -> plural.
pub type Vocabulary = BTreeMap<String, Option<String>>;

/// One tool after the word-level pass.
struct Parsed {
    namespace: Option<String>,
    /// Set when `namespace` is the server part of a fleet naming convention.
    server_form: Option<ServerForm>,
    words: Vec<String>,
    /// The word where a shared prefix would stand (first word, or the word after the verb).
    prefix_candidate: Option<usize>,
}

fn parse(name: &str, lx: &Lexicon, extra_verbs: &BTreeSet<String>) -> Parsed {
    let nw = split_name(name);
    let is_verb = |w: &str| lx.is_verb(w) || extra_verbs.contains(w);
    let verb_end = leading_verb_end(&nw.words, 0, lx, &is_verb);
    let prefix_candidate = if verb_end > 0 {
        (nw.words.len() > verb_end + 1).then_some(verb_end)
    } else {
        (nw.words.len() >= 2).then_some(0)
    };
    Parsed {
        namespace: nw.namespace,
        server_form: None,
        words: nw.words,
        prefix_candidate,
    }
}

/// Where a fleet's naming convention puts the server or provider in a tool name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerForm {
    /// ToolBench / RapidAPI: `get_all_users_for_acme_api` (provider `acme_api`).
    ForProvider,
    /// `mcp_<server>_<tool>`: `mcp_howtocook_recommendMeals` (server `howtocook`).
    McpPrefix,
}

/// The server and the rest of a name in `form`, when the name has that form.
fn server_part(name: &str, form: ServerForm) -> Option<(String, &str)> {
    let (server, rest) = match form {
        ServerForm::ForProvider => {
            let at = name.rfind("_for_")?;
            (&name[at + 5..], &name[..at])
        }
        ServerForm::McpPrefix => {
            let tail = name.strip_prefix("mcp_")?;
            let at = tail.find('_')?;
            (&tail[..at], &tail[at + 1..])
        }
    };
    let server = segment(&words::split_words(server).join("_"));
    let plain = |s: &str| s.chars().any(|c| c.is_ascii_alphabetic());
    (plain(&server) && plain(rest)).then_some((server, rest))
}

/// The server form most tools of a file follow (more than half of them), if any: a convention
/// of the file, never a guess from one name (`search_for_files` alone is not a provider).
fn file_server_form<'a>(inputs: &[Input<'a>]) -> BTreeMap<&'a str, ServerForm> {
    let mut counts: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for inp in inputs {
        let c = counts.entry(inp.file).or_default();
        c[0] += 1;
        if server_part(inp.name, ServerForm::ForProvider).is_some() {
            c[1] += 1;
        }
        if server_part(inp.name, ServerForm::McpPrefix).is_some() {
            c[2] += 1;
        }
    }
    counts
        .into_iter()
        .filter_map(|(file, [n, for_, mcp])| {
            let form = if for_ * 2 > n && for_ >= 2 {
                ServerForm::ForProvider
            } else if mcp * 2 > n && mcp >= 2 {
                ServerForm::McpPrefix
            } else {
                return None;
            };
            Some((file, form))
        })
        .collect()
}

/// End of a verb starting at `at` (`create or update` counts as one), or `at` when none.
fn leading_verb_end(
    words: &[String],
    at: usize,
    lx: &Lexicon,
    is_verb: &dyn Fn(&str) -> bool,
) -> usize {
    if !words.get(at).is_some_and(|w| is_verb(w)) {
        return at;
    }
    let mut end = at + 1;
    while end + 1 < words.len() && lx.verb_joiners.contains(&words[end]) && is_verb(&words[end + 1])
    {
        end += 2;
    }
    end
}

/// A group name from a file: `github.mcp.json` -> `github`, `onto-read.json` -> `onto_read`;
/// generic names (`tools.json`) fall back to the parent folder, then to `tools`.
pub fn file_group(file: &str) -> String {
    const GENERIC: &[&str] = &[
        "tools",
        "tool",
        "definitions",
        "definition",
        "functions",
        "function",
        "export",
        "exports",
        "index",
        "all",
        "catalog",
        "schema",
        "schemas",
        "api",
        "mcp",
        "openai",
        "anthropic",
        "main",
        "default",
        "list",
    ];
    let lx = Lexicon::get();
    let mut parts: Vec<&str> = file.split('/').collect();
    while let Some(last) = parts.pop() {
        let stem = last.split('.').next().unwrap_or(last);
        let mut words = words::split_words(stem);
        // `github-mcp-server` is the `github` server.
        if words.iter().any(|w| !lx.server_noise.contains(w)) {
            words.retain(|w| !lx.server_noise.contains(w));
        }
        if words.is_empty()
            || (words.len() == 1
                && (GENERIC.contains(&words[0].as_str()) || lx.is_not_noun(&words[0])))
        {
            continue;
        }
        return segment(&words.join("_"));
    }
    "tools".into()
}

/// Makes text a valid op segment: lowercase ASCII letters, digits and `_`, starting with a letter.
fn segment(text: &str) -> String {
    let mut s: String = text
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    while s.contains("__") {
        s = s.replace("__", "_");
    }
    let s = s.trim_matches('_').to_string();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("n{s}")
    } else {
        s
    }
}

/// The lexicon plus the catalog's own words, for singulars English rules get wrong on names.
struct Inflect<'a> {
    lx: &'a Lexicon,
    words: BTreeSet<&'a str>,
}

impl Inflect<'_> {
    /// `todos` -> `todo` when the catalog says `todo` somewhere; `buildos`, `macos` stay.
    fn singular(&self, w: &str) -> String {
        let s = self.lx.singular(w);
        if s != w && s.ends_with('o') && !self.words.contains(s.as_str()) {
            return w.to_string();
        }
        s
    }

    /// The entity key of noun words: joined with `_`, last word singular (`pull requests` ->
    /// `pull_request`).
    fn entity_key(&self, words: &[String]) -> String {
        let mut w: Vec<String> = words.to_vec();
        if let Some(last) = w.last_mut() {
            *last = self.singular(last);
        }
        segment(&w.join("_"))
    }
}

/// Per tool after group, verb and noun analysis (before entity choice).
struct Analyzed {
    group: String,
    group_why: String,
    /// The namespace (`math` of `math.add`), if any.
    namespace: Option<String>,
    /// Set when the namespace is a fleet convention's server part (it stands at the end of a
    /// `_for_` name, so no rule pattern written namespace-first can match it).
    server_form: Option<ServerForm>,
    /// Every word of the name (without the namespace) with its role so far: prefix, literal or
    /// verb; nouns and modifiers are decided later.
    roles: Vec<Role>,
    words: Vec<String>,
    verb: Vec<String>,
    /// Noun words in order (indices into `words`), modifiers and fillers out.
    noun_at: Vec<usize>,
    nouns: Vec<String>,
    modifier_at: Vec<usize>,
    modifiers: Vec<String>,
    /// The action when no verb was found (`get` from readOnlyHint).
    action_override: Option<(String, &'static str)>,
}

/// Infers ops for every tool with `classified == false`; the others only count as evidence.
/// `reserved` are ops the overlay already gave; inferred ops never take them.
pub fn infer(
    inputs: &[Input],
    vocabulary: &Vocabulary,
    extra_verbs: &BTreeSet<String>,
    reserved: &BTreeSet<String>,
) -> Vec<Option<Inferred>> {
    let lx = Lexicon::get();
    let forms = file_server_form(inputs);
    // In a catalog of several files (a fleet of servers), the group is the file's server unless
    // a namespace or the name's own server part says otherwise; catalog-wide shared words
    // (`all`, `user`) are not groups there.
    let multi_file = inputs.iter().map(|i| i.file).collect::<BTreeSet<_>>().len() >= 2;
    let parsed: Vec<Parsed> = inputs
        .iter()
        .map(|i| {
            let split = forms
                .get(i.file)
                .and_then(|&f| server_part(i.name, f).map(|(server, rest)| (f, server, rest)));
            match split {
                Some((form, server, rest)) => {
                    let mut p = parse(rest, lx, extra_verbs);
                    p.namespace = Some(server);
                    p.server_form = Some(form);
                    p
                }
                None => parse(i.name, lx, extra_verbs),
            }
        })
        .collect();
    let is_verb = |w: &str| lx.is_verb(w) || extra_verbs.contains(w);
    let inflect = Inflect {
        lx,
        words: parsed
            .iter()
            .flat_map(|p| p.words.iter().map(String::as_str))
            .collect(),
    };

    // Shared prefixes: a word at least three tools have in the prefix slot (first, or right
    // after the verb), followed by at least three different words, and never a head noun.
    let mut slot: BTreeMap<&str, (usize, BTreeSet<String>)> = BTreeMap::new();
    // Head nouns (the last word of a name that does not end in a verb) are entities, never
    // prefixes: `document` in `create_onto_document`.
    let mut heads: BTreeSet<String> = BTreeSet::new();
    for p in &parsed {
        if let Some(i) = p.prefix_candidate {
            let e = slot.entry(p.words[i].as_str()).or_default();
            e.0 += 1;
            if let Some(next) = p.words[i + 1..].iter().find(|w| !lx.stop.contains(*w)) {
                e.1.insert(inflect.singular(next));
            }
        }
        if let Some(last) = p.words.last().filter(|w| !is_verb(w)) {
            heads.insert(inflect.singular(last));
        }
    }
    let prefixes: BTreeSet<&str> = slot
        .iter()
        .filter(|(w, (n, next))| {
            *n >= 3
                && next.len() >= 3
                && !is_verb(w)
                && !heads.contains(&inflect.singular(w))
                && !lx.is_not_noun(w)
                && w.chars().all(|c| c.is_ascii_alphanumeric())
        })
        .map(|(w, _)| *w)
        .collect();

    // A file's group: the prefix most of its tools share, else its name.
    let mut per_file: BTreeMap<&str, (usize, BTreeMap<&str, usize>)> = BTreeMap::new();
    for (inp, p) in inputs.iter().zip(&parsed) {
        let e = per_file.entry(inp.file).or_default();
        e.0 += 1;
        if let Some(i) = p.prefix_candidate {
            if prefixes.contains(p.words[i].as_str()) {
                *e.1.entry(p.words[i].as_str()).or_default() += 1;
            }
        }
    }
    let file_groups: BTreeMap<&str, (String, String)> = per_file
        .iter()
        .map(|(file, (total, counts))| {
            let best = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
            let g = match best {
                Some((w, n)) if n * 2 > *total => (
                    segment(w),
                    format!(
                        "group `{}`: the prefix most tools of `{file}` share",
                        segment(w)
                    ),
                ),
                _ => {
                    let g = file_group(file);
                    (g.clone(), format!("group `{g}`: from the file `{file}`"))
                }
            };
            (*file, g)
        })
        .collect();

    let analyzed: Vec<Analyzed> = inputs
        .iter()
        .zip(&parsed)
        .map(|(inp, p)| analyze(inp, p, &prefixes, &file_groups, multi_file, lx, &is_verb))
        .collect();

    // Whole noun phrases per entity key: which tools use the phrase whole.
    let mut whole: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for (i, a) in analyzed.iter().enumerate() {
        if !a.nouns.is_empty() {
            whole
                .entry(inflect.entity_key(&a.nouns))
                .or_default()
                .insert(i);
        }
    }
    // How many tools' phrases strictly extend each leading run of words (`pull request` is
    // extended by `pull request files`): counted once, so the entity choice stays linear.
    let mut extended: BTreeMap<String, usize> = BTreeMap::new();
    for a in &analyzed {
        for j in 1..a.nouns.len() {
            *extended.entry(a.nouns[..j].join(" ")).or_default() += 1;
        }
    }

    let mut out: Vec<Option<Inferred>> = Vec::with_capacity(inputs.len());
    for (i, (inp, a)) in inputs.iter().zip(&analyzed).enumerate() {
        if inp.classified {
            out.push(None);
            continue;
        }
        out.push(Some(decide(
            i, inp, a, &whole, &extended, vocabulary, &inflect,
        )));
    }
    resolve_collisions(inputs, &mut out, reserved);
    out
}

fn analyze(
    inp: &Input,
    p: &Parsed,
    prefixes: &BTreeSet<&str>,
    file_groups: &BTreeMap<&str, (String, String)>,
    multi_file: bool,
    lx: &Lexicon,
    is_verb: &dyn Fn(&str) -> bool,
) -> Analyzed {
    let words = p.words.clone();
    let mut roles = vec![Role::Literal; words.len()];
    // Indices of the words still to be read as verb or nouns.
    let mut live: Vec<usize> = (0..words.len()).collect();
    let (group, group_why) = if let Some(ns) = &p.namespace {
        let what = match p.server_form {
            Some(ServerForm::ForProvider) => "the provider after `_for_` in the name",
            Some(ServerForm::McpPrefix) => "the server after `mcp_` in the name",
            None => "the namespace",
        };
        (segment(ns), format!("group `{}`: {what}", segment(ns)))
    } else if let Some(i) = p.prefix_candidate.filter(|i| {
        prefixes.contains(p.words[*i].as_str())
            && (!multi_file || segment(&p.words[*i]) == file_groups[inp.file].0)
    }) {
        roles[i] = Role::Prefix;
        live.retain(|&x| x != i);
        (
            segment(&words[i]),
            format!("group `{}`: a prefix many tools share", segment(&words[i])),
        )
    } else {
        file_groups[inp.file].clone()
    };
    let live_words =
        |live: &[usize]| -> Vec<String> { live.iter().map(|&i| words[i].clone()).collect() };
    // A word naming the group again is not part of the entity: `list_calendar_events`.
    if !roles.contains(&Role::Prefix) && p.namespace.is_none() {
        let lw = live_words(&live);
        let slot = leading_verb_end(&lw, 0, lx, is_verb);
        let names_group = lw.get(slot).is_some_and(|w| {
            let w = segment(w);
            w == group || lx.singular(&w) == group || lx.plural(&group) == w
        });
        if names_group && lw.len() > slot + 1 {
            roles[live[slot]] = Role::Prefix;
            live.remove(slot);
        }
    }

    let lw = live_words(&live);
    let verb_end = leading_verb_end(&lw, 0, lx, is_verb);
    let (verb_at, rest_at): (Vec<usize>, Vec<usize>) = if verb_end > 0 {
        (live[..verb_end].to_vec(), live[verb_end..].to_vec())
    } else if lw.len() >= 2 && is_verb(&lw[lw.len() - 1]) {
        let last = live.len() - 1;
        (vec![live[last]], live[..last].to_vec())
    } else {
        (Vec::new(), live.clone())
    };
    for &i in &verb_at {
        roles[i] = Role::Verb;
    }

    let mut noun_at = Vec::new();
    let mut modifier_at = Vec::new();
    for &i in &rest_at {
        let w = &words[i];
        if lx.stop.contains(w) || lx.fillers.contains(w) {
            continue;
        } else if lx.is_modifier(w) && noun_at.is_empty() {
            modifier_at.push(i);
        } else {
            noun_at.push(i);
        }
    }
    if noun_at.is_empty() {
        // Nothing but modifiers or fillers: keep the words as they are.
        noun_at = rest_at
            .iter()
            .copied()
            .filter(|&i| !lx.stop.contains(&words[i]))
            .collect();
        modifier_at.clear();
    }
    let action_override = (verb_at.is_empty() && inp.read_only == Some(true)).then(|| {
        (
            "get".to_string(),
            "no verb in the name; MCP readOnlyHint says it reads",
        )
    });
    let pick = |at: &[usize]| at.iter().map(|&i| words[i].clone()).collect::<Vec<_>>();
    Analyzed {
        group,
        group_why,
        namespace: p.namespace.clone(),
        server_form: p.server_form,
        verb: pick(&verb_at),
        nouns: pick(&noun_at),
        modifiers: pick(&modifier_at),
        noun_at,
        modifier_at,
        roles,
        words,
        action_override,
    }
}

fn decide(
    me: usize,
    inp: &Input,
    a: &Analyzed,
    whole: &BTreeMap<String, BTreeSet<usize>>,
    extended: &BTreeMap<String, usize>,
    vocabulary: &Vocabulary,
    inflect: &Inflect,
) -> Inferred {
    let used_elsewhere = |key: &str| whole.get(key).is_some_and(|s| s.iter().any(|&i| i != me));
    let known = |key: &str| vocabulary.contains_key(key) || used_elsewhere(key);

    let mut nouns = a.nouns.clone();
    let mut noun_at = a.noun_at.clone();
    let mut roles = a.roles.clone();
    let mut why = vec![a.group_why.clone()];
    // Whether a rule pattern can be written from the roles (the verb is a word of the name).
    let mut patternable = true;
    // The action: the verb; else readOnlyHint's `get`; else a word of the name.
    let action = if !a.verb.is_empty() {
        why.push(format!("action `{}`: a verb", a.verb.join("_")));
        segment(&a.verb.join("_"))
    } else if let Some((act, reason)) = &a.action_override {
        why.push(format!("action `{act}`: {reason}"));
        patternable = false;
        act.clone()
    } else if nouns.len() >= 2 && !known(&inflect.entity_key(&nouns[..1])) {
        // `paint_widget`: most names start with their verb; an unknown first word is one.
        let w = nouns.remove(0);
        roles[noun_at.remove(0)] = Role::Verb;
        why.push(format!("action `{w}`: first word (not in the lexicon)"));
        segment(&w)
    } else if nouns.len() >= 2 {
        // `directory_tree`: the first word is an entity, so the last one says what it does.
        let w = nouns.pop().unwrap_or_default();
        noun_at.pop();
        why.push(format!("action `{w}`: last word (the first is an entity)"));
        patternable = false;
        segment(&w)
    } else {
        // One word: an op of the group itself (`echo`, `ping`).
        let w = nouns.pop().unwrap_or_else(|| inp.name.to_string());
        why.push(format!("action `{w}`: the whole name"));
        return finish(inp, a, None, &[], segment(&w), why, Shape::default());
    };

    // A single noun that names the group itself is an op of the group: `search_ontology`.
    let names_group = nouns.len() == 1 && {
        let n = segment(&nouns[0]);
        a.group.len() >= 3 && n.starts_with(&a.group)
    };
    if nouns.is_empty() || names_group {
        if names_group {
            why.push(format!("`{}` names the group itself", nouns[0]));
        }
        return finish(inp, a, None, &[], action, why, Shape::default());
    }

    // The entity: the shortest leading phrase the vocabulary or another tool uses whole (so
    // `task documents` is entity `task`, qualifier `documents`, when `task` is an entity, while
    // `pull request files` keeps `pull_request` whole); else the whole phrase when other tools
    // extend it; else the leading words a sibling shares; else all of it.
    let k = nouns.len();
    let keys: Vec<String> = (1..=k).map(|j| inflect.entity_key(&nouns[..j])).collect();
    // Whether another tool's phrase is longer and starts with our first `j` words (our own
    // phrase counts itself there when it is longer than `j`).
    let extends = |j: usize| {
        let own = usize::from(a.nouns.len() > j && a.nouns[..j] == nouns[..j]);
        extended.get(&nouns[..j].join(" ")).copied().unwrap_or(0) > own
    };
    let split = if let Some(j) = (1..=k).find(|&j| known(&keys[j - 1])) {
        why.push(format!(
            "entity `{}`: {}",
            keys[j - 1],
            if vocabulary.contains_key(&keys[j - 1]) {
                "in the vocabulary"
            } else {
                "another tool names it whole"
            }
        ));
        j
    } else if extends(k) {
        why.push(format!(
            "entity `{}`: other tools name more of it",
            keys[k - 1]
        ));
        k
    } else if let Some(j) = (1..k).rev().find(|&j| extends(j)) {
        why.push(format!(
            "entity `{}`: shared with a sibling tool",
            keys[j - 1]
        ));
        j
    } else {
        why.push(format!("entity `{}`: the noun phrase", keys[k - 1]));
        k
    };
    // A verb, quantifier or adjective never names an entity (`get_all`, `list_top`): such words
    // join the action of a group-level op.
    let lx = Lexicon::get();
    let not_noun = |w: &String| lx.is_not_noun(w) || lx.is_not_noun(&lx.singular(w));
    if nouns[..split].iter().all(not_noun) {
        let mut qualifier: Vec<String> = a.modifiers.clone();
        qualifier.extend(nouns.iter().cloned());
        // Joined to the action (`get_all`): an op `group.all.get` would read as entity `all`.
        let action = segment(&format!("{action}_{}", qualifier.join("_")));
        why.push(format!(
            "no entity: `{}` is not a noun (lexicon), so the action is `{action}`",
            nouns[..split].join(" ")
        ));
        return finish(inp, a, None, &[], action, why, Shape::default());
    }
    let entity = keys[split - 1].clone();
    let mut qualifier: Vec<String> = a.modifiers.clone();
    qualifier.extend(nouns[split..].iter().cloned());
    if !qualifier.is_empty() {
        why.push(format!("qualifier `{}`", qualifier.join("_")));
    }
    for &i in &noun_at[..split] {
        roles[i] = Role::Entity;
    }
    for &i in a.modifier_at.iter().chain(&noun_at[split..]) {
        roles[i] = Role::Qualifier;
    }
    let shape = shape_of(a, &roles, patternable);
    finish(inp, a, Some(entity), &qualifier, action, why, shape)
}

/// The name's layout for `toolreg init`; plain when a pattern can say it: a verb and an entity,
/// and the qualifier words (if any) side by side, in the order the op joins them.
fn shape_of(a: &Analyzed, roles: &[Role], patternable: bool) -> Shape {
    let mut layout: Vec<(Role, String)> = Vec::new();
    if let Some(ns) = &a.namespace {
        layout.extend(
            words::split_words(ns)
                .into_iter()
                .map(|w| (Role::Prefix, w)),
        );
    }
    layout.extend(roles.iter().copied().zip(a.words.iter().cloned()));
    let runs = |r: Role| {
        let mut n = 0;
        let mut prev = None;
        for (role, _) in &layout {
            if *role == r && prev != Some(r) {
                n += 1;
            }
            prev = Some(*role);
        }
        n
    };
    let plain = patternable
        && a.server_form.is_none()
        && runs(Role::Verb) == 1
        && runs(Role::Entity) == 1
        && runs(Role::Qualifier) <= 1;
    Shape { layout, plain }
}

fn finish(
    inp: &Input,
    a: &Analyzed,
    entity: Option<String>,
    qualifier: &[String],
    action: String,
    why: Vec<String>,
    shape: Shape,
) -> Inferred {
    let mut segs = vec![a.group.clone()];
    segs.extend(entity.iter().cloned());
    if !qualifier.is_empty() {
        segs.push(segment(&qualifier.join("_")));
    }
    segs.push(action.clone());
    let mut op = segs.join(".");
    let mut group = a.group.clone();
    let mut entity = entity;
    let mut action = action;
    if !valid_op(&op) {
        // Names with no ASCII words at all (`工具`): a stable op from the name's hash.
        group = if valid_op(&format!("{}.x", a.group)) {
            a.group.clone()
        } else {
            "tools".into()
        };
        action = format!("tool_{}", &blake3::hash(inp.name.as_bytes()).to_hex()[..8]);
        entity = None;
        op = format!("{group}.{action}");
    }
    Inferred {
        op,
        group,
        entity,
        action,
        why: why.join("; "),
        collided_with: None,
        shape,
    }
}

/// Two tools inferred to one op: the first by name keeps it (unless the overlay owns it); each
/// other gets a qualifier from the words of its name the op lacks, else its whole name.
fn resolve_collisions(inputs: &[Input], out: &mut [Option<Inferred>], reserved: &BTreeSet<String>) {
    let mut taken: BTreeMap<String, String> = reserved
        .iter()
        .map(|op| (op.clone(), String::from("(the overlay)")))
        .collect();
    let mut order: Vec<usize> = (0..inputs.len()).filter(|&i| out[i].is_some()).collect();
    // The team's own tools first: a vendor's tool never takes a team tool's op, whatever the
    // names' order; then by name.
    order.sort_by(|&a, &b| {
        (inputs[a].third_party, inputs[a].name)
            .cmp(&(inputs[b].third_party, inputs[b].name))
            .then(a.cmp(&b))
    });
    for i in order {
        let Some(inf) = out[i].as_mut() else { continue };
        let Some(owner) = taken.get(&inf.op).cloned() else {
            taken.insert(inf.op.clone(), inputs[i].name.to_string());
            continue;
        };
        let in_op: BTreeSet<&str> = inf.op.split(['.', '_']).collect();
        let extra: Vec<String> = split_name(inputs[i].name)
            .words
            .into_iter()
            .filter(|w| !in_op.contains(w.as_str()))
            .collect();
        let mut candidates = Vec::new();
        if !extra.is_empty() {
            candidates.push(segment(&extra.join("_")));
        }
        candidates.push(segment(&words::split_words(inputs[i].name).join("_")));
        let (head, action) = inf.op.rsplit_once('.').unwrap_or(("", &inf.op));
        // A group-level op (no entity) takes the qualifier into its action: `g.q.action` would
        // read as entity `q` to anyone (and to a rule or special case) parsing the op.
        let group_level = inf.entity.is_none();
        let form = |q: &str| {
            if group_level {
                format!("{head}.{action}_{q}")
            } else {
                format!("{head}.{q}.{action}")
            }
        };
        let mut new_op = None;
        for q in candidates.iter().filter(|q| !q.is_empty()) {
            let op = form(q);
            if valid_op(&op) && !taken.contains_key(&op) {
                new_op = Some(op);
                break;
            }
        }
        let new_op = new_op.unwrap_or_else(|| {
            (2..)
                .map(|n| form(&format!("v{n}")))
                .find(|op| !taken.contains_key(op))
                .unwrap_or_default()
        });
        if group_level {
            if let Some((_, a)) = new_op.rsplit_once('.') {
                inf.action = a.to_string();
            }
        }
        taken.insert(new_op.clone(), inputs[i].name.to_string());
        inf.why
            .push_str(&format!("; `{}` was taken by `{owner}`", inf.op));
        inf.op = new_op;
        inf.collided_with = Some(owner);
        inf.shape.plain = false;
    }
}

/// A one-line summary of a group drafted from its ops: what its entities are.
pub fn group_summary(
    group: &str,
    entities: &[(String, usize)],
    plural_of: &dyn Fn(&str) -> String,
    ops: usize,
) -> String {
    let mut ents: Vec<&(String, usize)> = entities.iter().collect();
    ents.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let names: Vec<String> = ents
        .iter()
        .take(5)
        .map(|(e, _)| plural_of(e).replace('_', " "))
        .collect();
    let tools = format!("{ops} tool{}", if ops == 1 { "" } else { "s" });
    match names.len() {
        0 => format!("{}: {tools}.", group.replace('_', " ")),
        _ => {
            let more = ents.len().saturating_sub(names.len());
            let list = if more > 0 {
                format!("{} and {more} more", names.join(", "))
            } else if names.len() == 1 {
                names[0].clone()
            } else {
                format!(
                    "{} and {}",
                    names[..names.len() - 1].join(", "),
                    names[names.len() - 1]
                )
            };
            format!(
                "{}: {list} ({tools}).",
                capitalize(&group.replace('_', " "))
            )
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The plural of an entity key (`pull_request` -> `pull_requests`; a key that already reads
/// as a plural, like `buildos`, stays as it is).
pub fn entity_plural(entity: &str) -> String {
    let lx = Lexicon::get();
    let (head, last) = match entity.rsplit_once('_') {
        Some((h, l)) => (format!("{h}_"), l),
        None => (String::new(), entity),
    };
    if lx.singular(last) != last {
        return entity.to_string();
    }
    format!("{head}{}", lx.plural(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(names: &[(&str, &str)]) -> BTreeMap<String, String> {
        let inputs: Vec<Input> = names
            .iter()
            .map(|(n, f)| Input {
                third_party: false,
                name: n,
                file: f,
                read_only: None,
                classified: false,
            })
            .collect();
        infer(
            &inputs,
            &Vocabulary::new(),
            &BTreeSet::new(),
            &BTreeSet::new(),
        )
        .into_iter()
        .zip(names)
        .map(|(i, (n, _))| (n.to_string(), i.unwrap().op))
        .collect()
    }

    #[test]
    fn groups_entities_qualifiers_and_actions() {
        let ops = run(&[
            ("list_onto_tasks", "a.json"),
            ("get_onto_task_details", "a.json"),
            ("create_onto_goal", "a.json"),
            ("list_onto_goals", "a.json"),
            ("get_document_tree", "a.json"),
            ("update_onto_document", "a.json"),
            ("search_ontology", "a.json"),
            ("web_search", "utility.json"),
            ("create_pull_request", "github.mcp.json"),
            ("list_pull_requests", "github.mcp.json"),
            ("get_pull_request_files", "github.mcp.json"),
            ("create_or_update_file", "github.mcp.json"),
            ("issue_create", "github.mcp.json"),
            ("math.add", "x.json"),
            ("getPM2.5Level", "x.json"),
            ("ListOAuth2Tokens", "x.json"),
            ("read_multiple_files", "fs.json"),
            ("echo", "everything.json"),
        ]);
        let want = [
            ("list_onto_tasks", "onto.task.list"),
            ("get_onto_task_details", "onto.task.get"),
            ("get_document_tree", "onto.document.tree.get"),
            ("search_ontology", "onto.search"),
            ("web_search", "utility.web.search"),
            ("create_pull_request", "github.pull_request.create"),
            ("get_pull_request_files", "github.pull_request.files.get"),
            ("create_or_update_file", "github.file.create_or_update"),
            ("issue_create", "github.issue.create"),
            ("math.add", "math.add"),
            ("getPM2.5Level", "x.pm2_5_level.get"),
            ("ListOAuth2Tokens", "x.oauth2_token.list"),
            ("read_multiple_files", "fs.file.multiple.read"),
            ("echo", "everything.echo"),
        ];
        for (name, op) in want {
            assert_eq!(ops[name], op, "{name}");
        }
    }

    #[test]
    fn collisions_get_a_qualifier_from_the_name() {
        let ops = run(&[("get_issue", "g.json"), ("issue_get", "g.json")]);
        assert_eq!(ops["get_issue"], "g.issue.get");
        assert_eq!(ops["issue_get"], "g.issue.issue_get.get");
    }

    #[test]
    fn file_order_does_not_matter() {
        let a = [
            ("list_todos", "t.json"),
            ("add_todo", "t.json"),
            ("get_todo", "u.json"),
            ("todo_get", "u.json"),
        ];
        let mut b = a;
        b.reverse();
        assert_eq!(run(&a), run(&b));
    }

    #[test]
    fn groups_from_files() {
        assert_eq!(file_group("github.mcp.json"), "github");
        assert_eq!(file_group("onto-read.json"), "onto_read");
        assert_eq!(file_group("servers/github/tools.json"), "github");
        assert_eq!(file_group("tools.json"), "tools");
        assert_eq!(file_group("2024.json"), "n2024");
    }

    #[test]
    fn summaries_name_the_entities() {
        let s = group_summary(
            "github",
            &[("issue".into(), 3), ("pull_request".into(), 5)],
            &|e| entity_plural(e),
            8,
        );
        assert_eq!(s, "Github: pull requests and issues (8 tools).");
    }
}
