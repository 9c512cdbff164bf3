//! Sharing typify's work between ops whose schemas differ only in their stem (see
//! [`type_shared`]), and [`Typer`]: how the emitter types one op (typify, or shared token
//! text). Ops an earlier build typed never get here (the emitter serves them from the build
//! memo first).
//!
//! Why it is one file: its three ways of sharing (an op's formatted types swapped to another
//! stem, typify's token text swapped, formatting served by masked token text and stem length)
//! feed one another and rest on the same invariants (a stem never overlaps its snake_case form;
//! the masks never occur in token text or formatted Rust), which read best top to bottom beside
//! the proofs that use them. About 190 of its lines are tests.

use super::{format_op, op_types, typify_op, ImplMemo};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// One op's share of the output: its types (formatted) and the `defaults` functions they call.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OpTypes {
    pub root: String,
    pub items: String,
    /// `defaults` module functions by name, as source text (merged and formatted once at the end).
    pub defaults: Vec<(String, String)>,
}

/// An op's typing outcome as the build memo keeps it: `O` then its pieces (root, items, then
/// each `defaults` function's name and text), or `E` then the reason; a piece is its length in
/// bytes, in decimal, a colon and its text. Reading it back copies each piece once: as JSON, the
/// escaped Rust text of 10,000 ops took longer to read than every other step of this emitter in
/// a one-tool rebuild.
pub(super) fn to_memo(t: &Result<OpTypes, String>) -> String {
    use std::fmt::Write;
    match t {
        Err(why) => format!("E{why}"),
        Ok(t) => {
            let pieces = [t.root.as_str(), t.items.as_str()].into_iter().chain(
                t.defaults
                    .iter()
                    .flat_map(|(n, f)| [n.as_str(), f.as_str()]),
            );
            let mut out = String::from("O");
            for piece in pieces {
                let _ = write!(out, "{}:", piece.len());
                out.push_str(piece);
            }
            out
        }
    }
}

/// [`to_memo`] read back; `None` for text it does not write.
pub(super) fn from_memo(text: &str) -> Option<Result<OpTypes, String>> {
    if let Some(why) = text.strip_prefix('E') {
        return Some(Err(why.to_string()));
    }
    let mut rest = text.strip_prefix('O')?;
    let mut pieces = Vec::new();
    while !rest.is_empty() {
        let (len, after) = rest.split_once(':')?;
        let len: usize = len.parse().ok()?;
        pieces.push(after.get(..len)?.to_string());
        rest = after.get(len..)?;
    }
    if pieces.len() < 2 || pieces.len() % 2 != 0 {
        return None;
    }
    let mut pieces = pieces.into_iter();
    let (root, items) = (pieces.next()?, pieces.next()?);
    let mut defaults = Vec::new();
    while let (Some(name), Some(text)) = (pieces.next(), pieces.next()) {
        defaults.push((name, text));
    }
    Some(Ok(OpTypes {
        root,
        items,
        defaults,
    }))
}

/// The mask for a stem: NUL bytes, which never occur in token text or formatted Rust (literals
/// print escaped), so unmasking cannot touch anything else.
pub(super) fn mask_for(stem: &str) -> String {
    "\0".repeat(stem.len())
}

/// Ops whose prepared schemas differ only in their stem (the same parameters: fleets repeat
/// `{id}`, `{query, limit}` and whole API families) share typify's work: each op's schema with
/// its stem masked, and the stem's shape (upper, lower, digit, character by character), is its
/// key. The ops with the least and the greatest stem of a key are typed (by [`type_many`], which
/// shares typify's token text across stems of other lengths too); when the second's types are
/// the first's with the stem (and its snake_case form) swapped, the rest of the key take that
/// swap too, else every op of the key is typed alone. Why that pair: one shape means one length
/// (a swap never moves a line break) and one way to split words (case conversions agree); and
/// typify sorts its types by name, so a name that does not start with the stem sorts the same
/// way against every stem between the two ends once it does against both. The groups and pairs
/// follow op order and stem order, never which thread ran first.
pub(super) fn type_shared(
    stems: &[String],
    typer: &Typer,
) -> (Vec<Result<OpTypes, String>>, Sharing) {
    let n = stems.len();
    let mut sharing = Sharing::default();
    let mut verdicts = HashMap::new();
    // The ops of each key, in op order.
    let mut key_slot: HashMap<ShareKey, usize> = HashMap::new();
    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, group) in group_of.iter_mut().enumerate() {
        let Some(key) = typer.key(i, Shape::Exact) else {
            continue;
        };
        let slot = *key_slot.entry(key).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[slot].push(i);
        *group = Some(slot);
    }
    let swap = |t: &Result<OpTypes, String>, from: usize, to: usize| {
        map_texts(t, stem_swap(&stems[from], &stems[to]))
    };
    // Each key's pair: its least and greatest stem.
    let ends: Vec<(usize, usize)> = members
        .iter()
        .map(|m| {
            let by_stem = |&&i: &&usize| stems[i].as_str();
            let least = *m.iter().min_by_key(by_stem).expect("a key has an op");
            let greatest = *m.iter().max_by_key(by_stem).expect("a key has an op");
            (least, greatest)
        })
        .collect();
    let mut out: Vec<Option<Result<OpTypes, String>>> = vec![None; n];
    let mut type_into = |list: &[usize], out: &mut Vec<Option<Result<OpTypes, String>>>| {
        for (i, t) in list
            .iter()
            .zip(type_many(list, stems, typer, &mut verdicts, &mut sharing))
        {
            out[*i] = Some(t);
        }
    };
    // Round one: every op that is alone or one end of its key.
    let first: Vec<usize> = (0..n)
        .filter(|&i| {
            group_of[i].is_none_or(|g| members[g].len() <= 2 || ends[g].0 == i || ends[g].1 == i)
        })
        .collect();
    type_into(&first, &mut out);
    // Round two: the rest of each key, swapped when its pair proved the swap, else typed.
    let mut rest = Vec::new();
    let mut swapped = 0;
    for (m, &(a, b)) in members.iter().zip(&ends).filter(|(m, _)| m.len() > 2) {
        let proved = out[a]
            .as_ref()
            .zip(out[b].as_ref())
            .is_some_and(|(ta, tb)| &swap(ta, a, b) == tb);
        for &i in m.iter().filter(|&&i| i != a && i != b) {
            if proved {
                let t = swap(out[a].as_ref().expect("typed in round one"), a, i);
                out[i] = Some(t);
                swapped += 1;
            } else {
                rest.push(i);
            }
        }
    }
    rest.sort_unstable();
    type_into(&rest, &mut out);
    sharing.swapped = swapped;
    sharing.formatted_once = typer
        .formats
        .hits
        .load(std::sync::atomic::Ordering::Relaxed);
    let out = out
        .into_iter()
        .map(|t| t.expect("every op is typed or swapped"))
        .collect();
    (out, sharing)
}

/// A sharing key, as a digest: a fleet's keys would otherwise hold a copy of every schema.
type ShareKey = [u8; 32];

/// How much of a stem's shape a key keeps.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// Every character's class: stems of one length (formatted output is shared).
    Exact,
    /// Runs of lower-case letters and of digits counted once (typify's output is shared; each
    /// op is formatted on its own).
    Runs,
}

/// The key under which ops share work: the schema's JSON with the stem masked (by NULs as long
/// as the stem for an exact shape, by one NUL otherwise; JSON text never holds a raw NUL) and
/// the stem's shape, so words split the same way for every stem of a key. `None` for a stem that
/// does not start with an upper-case letter or is not all letters and digits: only such a stem
/// never overlaps its snake_case form, so one pass swaps both.
fn share_key(json: &str, stem: &str, shape: Shape) -> Option<ShareKey> {
    if !apart_from_snake(stem) {
        return None;
    }
    let mask = match shape {
        Shape::Exact => mask_for(stem),
        Shape::Runs => "\0".to_string(),
    };
    let mut key = blake3::Hasher::new();
    key.update(json.replace(stem, &mask).as_bytes());
    key.update(b"\0");
    let mut last = ' ';
    for c in stem.chars() {
        let class = match c {
            'A'..='Z' => 'U',
            'a'..='z' => 'l',
            _ => 'd',
        };
        if shape == Shape::Exact || class == 'U' || class != last {
            key.update(&[class as u8]);
        }
        last = class;
    }
    Some(*key.finalize().as_bytes())
}

/// Whether a stem never overlaps its snake_case form anywhere in a text: it starts upper-case
/// (the snake_case form starts lower-case) and is all letters and digits. Only such stems are
/// swapped or masked.
fn apart_from_snake(stem: &str) -> bool {
    stem.starts_with(|c: char| c.is_ascii_uppercase())
        && stem.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Text written for stem `from` rewritten for stem `to`: the stem and its snake_case form.
fn stem_swap<'a>(from: &'a str, to: &'a str) -> impl Fn(&str) -> String + 'a {
    use heck::ToSnakeCase;
    let (snake_from, snake_to) = (from.to_snake_case(), to.to_snake_case());
    move |text| swap_both(text, [(from, to), (&snake_from, &snake_to)])
}

/// How the emitter types one op: typed, or formatted from token text (its own typify output,
/// or another op's with the stem swapped).
pub(super) struct Typer<'a> {
    /// Op `k`'s schema as typify reads it, made afresh each time it is asked for: the prepared
    /// schemas of every op, held through the typing, were 54 MB of a 10,000-tool build's peak
    /// (and their JSON text another 6), against two preparations of the ops that are typed.
    schema: &'a (dyn Fn(usize) -> Value + Sync),
    stems: &'a [String],
    /// Each op's sharing keys ([`Shape::Exact`], then [`Shape::Runs`]).
    keys: Vec<[Option<ShareKey>; 2]>,
    impls: Option<&'a ImplMemo>,
    formats: FormatMemo,
}

impl<'a> Typer<'a> {
    /// A typer of `stems.len()` ops; `schema(k)` makes op `k`'s schema.
    pub fn new(
        schema: &'a (dyn Fn(usize) -> Value + Sync),
        stems: &'a [String],
        impls: Option<&'a ImplMemo>,
    ) -> Typer<'a> {
        let all: Vec<usize> = (0..stems.len()).collect();
        let keys = crate::compiler::parallel::map_in_order(&all, |&k| {
            let json = serde_json::to_string(&schema(k)).expect("a Value serializes");
            [Shape::Exact, Shape::Runs].map(|shape| share_key(&json, &stems[k], shape))
        });
        Typer {
            schema,
            stems,
            keys,
            impls,
            formats: FormatMemo::default(),
        }
    }

    /// Op `op`'s sharing key for `shape`.
    fn key(&self, op: usize, shape: Shape) -> Option<ShareKey> {
        self.keys[op][usize::from(shape == Shape::Runs)]
    }

    /// typify's output for the op: root type name and token text.
    fn typify(&self, op: usize) -> Result<(String, String), String> {
        typify_op(&(self.schema)(op))
    }

    /// The op's types: formatted from `tokens` when given, else typed from its schema.
    pub fn types(&self, op: usize, tokens: Option<(String, String)>) -> Result<OpTypes, String> {
        let stem = self.stems[op].as_str();
        match tokens {
            Some((root, text)) => self.formats.format(&root, &text, stem, self.impls),
            None => op_types(&(self.schema)(op), stem, self.impls),
        }
    }
}

/// What sharing saved, for the test and the curious.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Sharing {
    /// Ops whose formatted types were another op's, swapped.
    pub swapped: usize,
    /// Ops formatted from another op's typify output, swapped (typify not run for them).
    pub from_tokens: usize,
    /// Ops whose formatted types were those of another op's token text of the same lengths
    /// ([`FormatMemo`]).
    pub formatted_once: usize,
}

/// Formatted types by the token text they were formatted from, with the stem and its
/// snake_case form masked (one character each), and by the stem's length: ops whose token
/// texts differ only in their stems format alike up to the stem's length, since the formatter
/// sees only token kinds and widths. Only token text, never a schema, reaches it (so typify's
/// choices are already made), and only stems that start upper-case and are letters and digits,
/// so the stem and its snake_case form (which starts lower-case) never overlap. Token text and
/// formatted Rust never hold a raw NUL or U+0001 (literals print them escaped), so unmasking
/// touches nothing else.
///
/// A stem of a length not formatted yet takes the formatting of the nearest lengths below and
/// above it when those two are alike once masked. Why that is sound: the key holds how much
/// longer the snake_case form is than the stem, so every token's width grows by a fixed amount
/// per character of stem; the formatter breaks a line where what follows does not fit in what
/// is left of it, and both grow with the stem; so a break made at both lengths, or at neither,
/// is made the same way at every length between (`formatting_is_alike_between_lengths` checks
/// it on 40 of LiveMCPBench's schemas, stems of 2 to 61 characters). A family's stems have
/// several lengths: formatting each once, the memo of a 10,000-tool catalog formatted 2,300 of
/// the 4,400 ops it was asked for; now 1,300 (with the lengths asked for by bisection).
#[derive(Default)]
struct FormatMemo {
    /// Masked formatting by key, then by stem length.
    formatted: std::sync::Mutex<HashMap<ShareKey, BTreeMap<usize, Masked>>>,
    hits: std::sync::atomic::AtomicUsize,
}

/// An op's types with its stem and snake_case form masked.
type Masked = Result<OpTypes, String>;

impl FormatMemo {
    /// `format_op`, or another op's result of the same masked token text with this stem put
    /// back (an op of this stem's length, or of lengths on either side of it formatted alike).
    fn format(
        &self,
        root: &str,
        text: &str,
        stem: &str,
        impls: Option<&ImplMemo>,
    ) -> Result<OpTypes, String> {
        let fresh = || format_op(root.to_string(), text, stem, impls);
        let Some(masks) = Masks::new(stem) else {
            return fresh();
        };
        let mut key = blake3::Hasher::new();
        key.update(&(masks.snake.len() as i64 - masks.stem.len() as i64).to_le_bytes());
        key.update(masks.hide(root).as_bytes());
        key.update(b"\0");
        key.update(masks.hide(text).as_bytes());
        let key = *key.finalize().as_bytes();
        let len = stem.len();
        let hit = self
            .formatted
            .lock()
            .expect("format memo")
            .get(&key)
            .and_then(|by_len| alike_at(by_len, len).cloned());
        if let Some(masked) = hit {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return masks.show_types(&masked);
        }
        let types = fresh();
        let masked = masks.hide_types(&types);
        self.formatted
            .lock()
            .expect("format memo")
            .entry(key)
            .or_default()
            .insert(len, masked);
        types
    }
}

/// The formatting of stem length `len`: formatted at that length, or alike at the nearest
/// lengths below and above it (see [`FormatMemo`]).
fn alike_at(by_len: &BTreeMap<usize, Masked>, len: usize) -> Option<&Masked> {
    if let Some(masked) = by_len.get(&len) {
        return Some(masked);
    }
    let (_, below) = by_len.range(..len).next_back()?;
    let (_, above) = by_len.range(len + 1..).next()?;
    (below == above).then_some(below)
}

/// A stem and its snake_case form, and the masks that hide them: NUL for the stem and U+0001
/// for the snake_case form.
struct Masks {
    stem: String,
    snake: String,
    stem_mask: &'static str,
    snake_mask: &'static str,
}

impl Masks {
    /// `None` for a stem that could overlap its snake_case form (see [`FormatMemo`]).
    fn new(stem: &str) -> Option<Masks> {
        use heck::ToSnakeCase;
        if !apart_from_snake(stem) {
            return None;
        }
        Some(Masks {
            stem_mask: "\0",
            snake_mask: "\u{1}",
            stem: stem.to_string(),
            snake: stem.to_snake_case(),
        })
    }

    fn hide(&self, text: &str) -> String {
        swap_both(
            text,
            [(&self.stem, self.stem_mask), (&self.snake, self.snake_mask)],
        )
    }

    fn show(&self, text: &str) -> String {
        swap_both(
            text,
            [(self.stem_mask, &self.stem), (self.snake_mask, &self.snake)],
        )
    }

    fn hide_types(&self, t: &Result<OpTypes, String>) -> Result<OpTypes, String> {
        map_texts(t, |s| self.hide(s))
    }

    fn show_types(&self, t: &Result<OpTypes, String>) -> Result<OpTypes, String> {
        map_texts(t, |s| self.show(s))
    }
}

/// An op's types (or why it has none) with `f` applied to every text: names, items, the
/// `defaults` functions and the reason.
fn map_texts(t: &Result<OpTypes, String>, f: impl Fn(&str) -> String) -> Result<OpTypes, String> {
    match t {
        Ok(t) => Ok(OpTypes {
            root: f(&t.root),
            items: f(&t.items),
            defaults: t
                .defaults
                .iter()
                .map(|(name, body)| (f(name), f(body)))
                .collect(),
        }),
        Err(why) => Err(f(why)),
    }
}

/// Whether one schema's typify output carries over to every stem of its relaxed key.
enum Verdict {
    /// Proved on the key's first two ops: the first's root and token text.
    Proved {
        from: usize,
        root: String,
        text: String,
    },
    Refused,
}

/// The names of the types typify defines at the top level (`pub struct`, `pub enum`, `pub type`),
/// or `None` when the text does not read as tokens.
fn type_names(text: &str) -> Option<Vec<String>> {
    use proc_macro2::TokenTree;
    let tokens: proc_macro2::TokenStream = text.parse().ok()?;
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let word = |t: &TokenTree| match t {
        TokenTree::Ident(i) => Some(i.to_string()),
        _ => None,
    };
    Some(
        trees
            .windows(3)
            .filter(|w| {
                word(&w[0]).as_deref() == Some("pub")
                    && matches!(word(&w[1]).as_deref(), Some("struct" | "enum" | "type"))
            })
            .filter_map(|w| word(&w[2]))
            .collect(),
    )
}

/// Types `list` (ops in op order). The first two of each key with a shape of runs
/// ([`Shape::Runs`]) and three or more ops are typed, and when every type the first defines
/// starts with its stem (so typify's order by name is the same for every stem) and the second's
/// output is the first's with the stem and its snake_case form swapped, the rest of the key are
/// formatted from the first's output, swapped, without running typify; else typed alone.
/// Verdicts carry over between calls.
fn type_many(
    list: &[usize],
    stems: &[String],
    typer: &Typer,
    verdicts: &mut HashMap<ShareKey, Verdict>,
    sharing: &mut Sharing,
) -> Vec<Result<OpTypes, String>> {
    let keys: Vec<Option<ShareKey>> = list.iter().map(|&i| typer.key(i, Shape::Runs)).collect();
    let mut members: HashMap<ShareKey, Vec<usize>> = HashMap::new();
    let mut order: Vec<ShareKey> = Vec::new();
    for (&i, key) in list.iter().zip(&keys) {
        if let Some(key) = key {
            let m = members.entry(*key).or_insert_with(|| {
                order.push(*key);
                Vec::new()
            });
            m.push(i);
        }
    }
    let swap = |root: &str, text: &str, from: usize, to: usize| {
        let swap = stem_swap(&stems[from], &stems[to]);
        (swap(root), swap(text))
    };
    // The pairs to prove: keys without a verdict and with three or more ops to type.
    let pairs: Vec<(ShareKey, usize, usize)> = order
        .iter()
        .filter(|k| !verdicts.contains_key(*k) && members[*k].len() >= 3)
        .map(|k| (*k, members[k][0], members[k][1]))
        .collect();
    let proving: Vec<usize> = pairs.iter().flat_map(|&(_, a, b)| [a, b]).collect();
    let typified = crate::compiler::parallel::map_in_order(&proving, |&i| typer.typify(i));
    let mut own: HashMap<usize, (String, String)> = HashMap::new();
    for (k, &(key, a, b)) in pairs.iter().enumerate() {
        let (ta, tb) = (&typified[2 * k], &typified[2 * k + 1]);
        let verdict = match (ta, tb) {
            (Ok((root_a, text_a)), Ok((root_b, text_b)))
                if root_a.starts_with(stems[a].as_str())
                    && type_names(text_a).is_some_and(|names| {
                        names.iter().all(|n| n.starts_with(stems[a].as_str()))
                    })
                    && swap(root_a, text_a, a, b) == (root_b.clone(), text_b.clone()) =>
            {
                Verdict::Proved {
                    from: a,
                    root: root_a.clone(),
                    text: text_a.clone(),
                }
            }
            _ => Verdict::Refused,
        };
        verdicts.insert(key, verdict);
        for (i, t) in [(a, ta), (b, tb)] {
            if let Ok(t) = t {
                own.insert(i, t.clone());
            }
        }
    }
    let verdicts = &*verdicts;
    let sources: Vec<Option<(String, String)>> = list
        .iter()
        .zip(&keys)
        .map(|(&i, key)| {
            if let Some(t) = own.remove(&i) {
                return Some(t);
            }
            match key.as_ref().and_then(|k| verdicts.get(k)) {
                Some(Verdict::Proved { from, root, text }) => {
                    sharing.from_tokens += 1;
                    Some(swap(root, text, *from, i))
                }
                _ => None,
            }
        })
        .collect();
    let jobs: Vec<(usize, Option<(String, String)>)> = list.iter().copied().zip(sources).collect();
    // Each key's stem lengths are formatted by bisection: the shortest and the longest first,
    // then the length halfway between, and so on, one round after another; then every other
    // op. A length between two formatted alike is then served by the format memo (see
    // [`FormatMemo`]) instead of being formatted before its neighbours are. Within one key,
    // which lengths an op's result comes from does not depend on thread timing: a round's
    // length lies strictly inside an interval whose ends earlier rounds formatted, while the
    // round's other lengths lie outside it, so its nearest formatted neighbours are those ends;
    // by the last phase every length of the key has been formatted once. (Ops of another key
    // whose masked token text is the same share the memo's entry and may add neighbours
    // meanwhile; the result is the same by the memo's own argument.)
    let mut lengths: HashMap<ShareKey, BTreeMap<usize, usize>> = HashMap::new();
    for (k, (key, (i, tokens))) in keys.iter().zip(&jobs).enumerate() {
        if let (Some(key), Some(_)) = (key, tokens) {
            lengths
                .entry(*key)
                .or_default()
                .entry(stems[*i].len())
                .or_insert(k);
        }
    }
    let mut round_of: Vec<Option<usize>> = vec![None; jobs.len()];
    for first in lengths.values() {
        let first: Vec<usize> = first.values().copied().collect();
        let last = first.len() - 1;
        round_of[first[0]] = Some(0);
        round_of[first[last]] = Some(0);
        let mut halves = vec![(0, last, 1)];
        while let Some((lo, hi, round)) = halves.pop() {
            if hi - lo >= 2 {
                let mid = (lo + hi) / 2;
                round_of[first[mid]] = Some(round);
                halves.extend([(lo, mid, round + 1), (mid, hi, round + 1)]);
            }
        }
    }
    let rounds = round_of.iter().flatten().max().map_or(0, |r| r + 1);
    let mut phases: Vec<Vec<usize>> = vec![Vec::new(); rounds + 1];
    for (k, round) in round_of.iter().enumerate() {
        phases[round.unwrap_or(rounds)].push(k);
    }
    let mut out: Vec<Option<Result<OpTypes, String>>> = vec![None; jobs.len()];
    for phase in phases {
        let done = crate::compiler::parallel::map_in_order(&phase, |&k| {
            let (i, tokens) = &jobs[k];
            typer.types(*i, tokens.clone())
        });
        for (k, t) in phase.into_iter().zip(done) {
            out[k] = Some(t);
        }
    }
    out.into_iter()
        .map(|t| t.expect("every job runs in one phase"))
        .collect()
}

/// `text` with every occurrence of either pattern replaced, in one pass (the patterns never
/// start at the same place: one starts upper-case, the other lower-case).
fn swap_both(text: &str, pairs: [(&str, &str); 2]) -> String {
    // Where each replacement goes, found first: the result is then allocated at its exact size
    // (a buffer sized to the input grew, copying and faulting in fresh pages, whenever the
    // replacements were longer than what they replace).
    let mut found: Vec<(usize, usize)> = Vec::new();
    let mut len = text.len();
    // The next occurrence of each pattern at or after the last replaced span (memchr's
    // searchers: `str::find` built a searcher at every call, and this swap runs over every op's
    // types several times).
    let finders = pairs.map(|(from, _)| memchr::memmem::Finder::new(from.as_bytes()));
    let find = |k: usize, from: usize| {
        finders[k]
            .find(&text.as_bytes()[from..])
            .map(|at| from + at)
    };
    let mut next = [find(0, 0), find(1, 0)];
    loop {
        let k = match next {
            [Some(a), Some(b)] => usize::from(b < a),
            [Some(_), None] => 0,
            [None, Some(_)] => 1,
            [None, None] => break,
        };
        let at = next[k].expect("chosen because it is found");
        found.push((at, k));
        // Never below zero: the replaced span lies inside the text.
        len = len - pairs[k].0.len() + pairs[k].1.len();
        let end = at + pairs[k].0.len();
        for (j, slot) in next.iter_mut().enumerate() {
            if slot.is_some_and(|p| p < end) {
                *slot = find(j, end);
            }
        }
    }
    let mut out = String::with_capacity(len);
    let mut done = 0;
    for (at, k) in found {
        out.push_str(&text[done..at]);
        out.push_str(pairs[k].1);
        done = at + pairs[k].0.len();
    }
    out.push_str(&text[done..]);
    out
}

#[cfg(test)]
mod tests {
    use super::super::op_types;
    use super::*;

    /// The swap replaces both patterns wherever they start, never inside a replacement.
    #[test]
    fn the_memo_form_reads_back_as_written_and_refuses_other_text() {
        let ok = |defaults: Vec<(String, String)>| {
            Ok(OpTypes {
                root: "ShopItemGetArgs".into(),
                items: "pub struct X { a: u8 }\n/// 12:34 \"ü\" 語\n".into(),
                defaults,
            })
        };
        for t in [
            ok(vec![]),
            ok(vec![
                ("d1".into(), "fn d1() -> u8 { 3 }".into()),
                ("".into(), "".into()),
            ]),
            Err("typify: enum of mixed types: 3:4".to_string()),
            Err(String::new()),
        ] {
            assert_eq!(from_memo(&to_memo(&t)), Some(t.clone()), "{t:?}");
        }
        let written = to_memo(&ok(vec![("d".into(), "fn d() {}".into())]));
        for bad in [
            "",
            "X",
            "O",
            "O3:abc",
            "O3:abc2",
            "Ox:abc",
            "O9:abc",
            &written[..written.len() - 1],
            "O2:\u{e9}x0:",
        ] {
            assert_eq!(from_memo(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn swap_replaces_both_forms_in_one_pass() {
        assert_eq!(
            swap_both("FooArgs foo_x Foo foo", [("Foo", "Bfoo"), ("foo", "bfoo")]),
            "BfooArgs bfoo_x Bfoo bfoo"
        );
        assert_eq!(
            swap_both("none here", [("Foo", "Bar"), ("foo", "bar")]),
            "none here"
        );
    }

    /// The premise of [`FormatMemo`]'s lengths, on real schemas: formatted with stems of 2 to
    /// 61 characters, each schema's masked formatting changes only at a few lengths and never
    /// comes back (lengths formatted alike are one run), and the memo, asked for the lengths in
    /// a scattered order, gives every length what formatting it afresh gives.
    #[test]
    fn formatting_is_alike_between_lengths() {
        use super::super::{format_op, prepare, stems, typify_op};
        let reg = crate::compiler::compile_repo_catalog("tests/catalogs/fleet/livemcp");
        let ops: Vec<&crate::model::registry::OpRecord> = reg.ops.values().collect();
        let names = stems(&ops);
        let lengths: Vec<usize> = (1..=60).collect();
        // A scattered order (38, 15, 52, 29, ...): 37 is prime to 60, so each length once.
        let order: Vec<usize> = lengths.iter().map(|k| (k * 37) % 60 + 1).collect();
        let mut each = order.clone();
        each.sort_unstable();
        assert_eq!(each, lengths);
        let (mut schemas, mut changes, mut hits) = (0, 0, 0);
        let mut seen = std::collections::HashSet::new();
        for (op, stem0) in ops.iter().zip(&names) {
            if schemas == 40 {
                break;
            }
            let Ok((root, text)) = typify_op(&prepare(op, stem0)) else {
                continue;
            };
            if !apart_from_snake(stem0) || !seen.insert(text.replace(stem0.as_str(), "")) {
                continue;
            }
            schemas += 1;
            let stem_of = |k: usize| format!("Q{}", "x".repeat(k));
            let tokens = |k: usize| {
                let stem = stem_of(k);
                let swap = stem_swap(stem0, &stem);
                (swap(&root), swap(&text))
            };
            let fresh: BTreeMap<usize, Result<OpTypes, String>> = lengths
                .iter()
                .map(|&k| {
                    let (root, text) = tokens(k);
                    (k, format_op(root, &text, &stem_of(k), None))
                })
                .collect();
            let mut runs: Vec<Masked> = Vec::new();
            for (&k, t) in &fresh {
                let masked = Masks::new(&stem_of(k)).expect("a plain stem").hide_types(t);
                if runs.last() != Some(&masked) {
                    assert!(!runs.contains(&masked), "{}: formatting came back", op.op);
                    runs.push(masked);
                }
            }
            changes += runs.len() - 1;
            let memo = FormatMemo::default();
            for &k in &order {
                let (root, text) = tokens(k);
                let got = memo.format(&root, &text, &stem_of(k), None);
                assert_eq!(got, fresh[&k], "{}: stem length {}", op.op, k + 1);
            }
            hits += memo.hits.load(std::sync::atomic::Ordering::Relaxed);
        }
        assert_eq!(schemas, 40);
        // Some formatting changes with the stem's length (else the test proves nothing about
        // lengths), and the memo served most lengths.
        assert!(changes >= 10, "only {changes} changes of formatting");
        assert!(hits >= 40 * 30, "only {hits} of 2,400 lengths served");
    }

    /// Keys whose swap is not a plain rename: a property spelled like one op's stem in
    /// snake_case (typed alone when that op is in the proving pair, swapped correctly when it
    /// is not), a default (typify names its function after the type), a title repeating the
    /// stem, a `$ref`. Every op's types equal the ones typed alone.
    #[test]
    fn shared_types_survive_stem_lookalikes() {
        // One length (formatted output swapped), then four lengths of one shape (typify's
        // output swapped, each op formatted on its own), then stems of one length in two shapes
        // (typify's output swapped, formatted once per length).
        let stem_sets: [Vec<String>; 3] = [
            ["AbcGet", "XyzGet", "QrsGet", "MnoGet"]
                .map(String::from)
                .to_vec(),
            ["AbGet", "XyzwGet", "QrsGet", "MnopqGet"]
                .map(String::from)
                .to_vec(),
            ["XyzwGet", "AbGetxy", "MnopGet", "QrGetst"]
                .map(String::from)
                .to_vec(),
        ];
        let orders: [&[usize]; 2] = [&[0, 1, 2, 3], &[1, 2, 0, 3]];
        let (mut swapped, mut from_tokens, mut formatted_once) = (0, 0, 0);
        for (stems, props) in stem_sets.iter().flat_map(|stems| {
            [
                serde_json::json!({"abc_get": {"type": "string"}}),
                serde_json::json!({"mno_get": {"type": "string"}}),
                serde_json::json!({"mnopq_get": {"type": "string"}}),
                serde_json::json!({"limit": {"type": "integer", "default": 20}}),
                serde_json::json!({"mode": {"title": "Mode", "type": "string", "enum": ["a", "b"]}}),
                serde_json::json!({"owner": {"$ref": "#/definitions/Owner"}}),
            ]
            .map(|p| (stems, p))
        }) {
            for order in orders {
                let picked: Vec<String> = order.iter().map(|&k| stems[k].clone()).collect();
                let schemas: Vec<Value> = picked
                    .iter()
                    .map(|stem| {
                        let mut p = props.clone();
                        let text = p.to_string().replace("#/definitions/Owner", &format!("#/definitions/{stem}Owner"));
                        p = serde_json::from_str(&text).unwrap();
                        serde_json::json!({
                            "title": format!("{stem}Args"), "type": "object", "properties": p,
                            "definitions": {format!("{stem}Owner"): {"type": "object", "properties": {"id": {"type": "string"}}}}
                        })
                    })
                    .collect();
                let schema = |k: usize| schemas[k].clone();
                let typer = Typer::new(&schema, &picked, None);
                let (got, n) = type_shared(&picked, &typer);
                swapped += n.swapped;
                from_tokens += n.from_tokens;
                formatted_once += n.formatted_once;
                for (i, t) in got.iter().enumerate() {
                    assert_eq!(
                        t,
                        &op_types(&schemas[i], &picked[i], None),
                        "{props} {order:?}: op {i}"
                    );
                }
            }
        }
        assert!(swapped >= 8, "only {swapped} ops were swapped");
        assert!(
            from_tokens >= 4,
            "only {from_tokens} ops were formatted from shared tokens"
        );
        assert!(
            formatted_once >= 4,
            "only {formatted_once} ops took another's formatting"
        );
    }
}
