//! Sharing typify's work between ops whose schemas differ only in their stem (see
//! [`type_shared`]).

use serde_json::Value;

/// One op's share of the output: its types (formatted) and the `defaults` functions they call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct OpTypes {
    pub root: String,
    pub items: String,
    /// `defaults` module functions by name, as source text (merged and formatted once at the end).
    pub defaults: Vec<(String, String)>,
}

/// The mask for a stem: NUL bytes, which never occur in token text or formatted Rust (literals
/// print escaped), so unmasking cannot touch anything else.
pub(super) fn mask_for(stem: &str) -> String {
    "\0".repeat(stem.len())
}

/// Ops whose prepared schemas differ only in their stem (the same parameters: fleets repeat
/// `{id}`, `{query, limit}` and whole API families) share typify's work: each op's schema with
/// its stem masked, and the stem's shape (upper, lower, digit, character by character), is its
/// key. The ops with the least and the greatest stem of a key are typed; when the second's
/// types are the first's with the stem (and its snake_case form) swapped, the rest of the key
/// take that swap too, else every op of the key is typed alone. Why that pair: one shape means
/// one length (a swap never moves a line break) and one way to split words (case conversions
/// agree); and typify sorts its types by name, so a name that does not start with the stem
/// sorts the same way against every stem between the two ends once it does against both. The
/// groups and pairs follow op order and stem order, never which thread ran first.
pub(super) fn type_shared(
    schemas: &[Value],
    stems: &[String],
    type_op: impl Fn(&usize) -> Result<OpTypes, String> + Sync,
) -> (Vec<Result<OpTypes, String>>, usize) {
    use heck::ToSnakeCase;
    let n = schemas.len();
    // The ops of each key, in op order. A stem that starts with an upper-case letter and is all
    // letters and digits never overlaps its snake_case form, so one pass swaps both.
    let mut key_slot: std::collections::HashMap<String, usize> = Default::default();
    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        let stem = &stems[i];
        if !stem.starts_with(|c: char| c.is_ascii_uppercase())
            || !stem.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            continue;
        }
        let mut key = serde_json::to_string(&schemas[i])
            .expect("a Value serializes")
            .replace(stem.as_str(), &mask_for(stem));
        key.push('\0');
        key.extend(stem.chars().map(|c| match c {
            'A'..='Z' => 'U',
            'a'..='z' => 'l',
            _ => 'd',
        }));
        let slot = *key_slot.entry(key).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[slot].push(i);
        group_of[i] = Some(slot);
    }
    let swap = |t: &Result<OpTypes, String>, from: usize, to: usize| {
        let (a, b) = (stems[from].as_str(), stems[to].as_str());
        let (sa, sb) = (a.to_snake_case(), b.to_snake_case());
        let text = |s: &str| swap_both(s, [(a, b), (&sa, &sb)]);
        match t {
            Ok(t) => Ok(OpTypes {
                root: text(&t.root),
                items: text(&t.items),
                defaults: t
                    .defaults
                    .iter()
                    .map(|(name, body)| (text(name), text(body)))
                    .collect(),
            }),
            Err(why) => Err(text(why)),
        }
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
    // Round one: every op that is alone or one end of its key.
    let first: Vec<usize> = (0..n)
        .filter(|&i| {
            group_of[i].is_none_or(|g| members[g].len() <= 2 || ends[g].0 == i || ends[g].1 == i)
        })
        .collect();
    let mut out: Vec<Option<Result<OpTypes, String>>> = vec![None; n];
    for (i, t) in first
        .iter()
        .zip(crate::compiler::parallel::map_in_order(&first, &type_op))
    {
        out[*i] = Some(t);
    }
    // Round two: the rest of each key, swapped when its pair proved the swap, else typed.
    let mut rest = Vec::new();
    let mut shared = 0;
    for (m, &(a, b)) in members.iter().zip(&ends).filter(|(m, _)| m.len() > 2) {
        let proved = out[a]
            .as_ref()
            .zip(out[b].as_ref())
            .is_some_and(|(ta, tb)| &swap(ta, a, b) == tb);
        for &i in m.iter().filter(|&&i| i != a && i != b) {
            if proved {
                let t = swap(out[a].as_ref().expect("typed in round one"), a, i);
                out[i] = Some(t);
                shared += 1;
            } else {
                rest.push(i);
            }
        }
    }
    for (i, t) in rest
        .iter()
        .zip(crate::compiler::parallel::map_in_order(&rest, &type_op))
    {
        out[*i] = Some(t);
    }
    let out = out
        .into_iter()
        .map(|t| t.expect("every op is typed or swapped"))
        .collect();
    (out, shared)
}

/// `text` with every occurrence of either pattern replaced, in one pass (the patterns never
/// start at the same place: one starts upper-case, the other lower-case).
fn swap_both(text: &str, pairs: [(&str, &str); 2]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    // The next occurrence of each pattern at or after `done`.
    let find = |k: usize, from: usize| text[from..].find(pairs[k].0).map(|at| from + at);
    let mut next = [find(0, 0), find(1, 0)];
    loop {
        let k = match next {
            [Some(a), Some(b)] => usize::from(b < a),
            [Some(_), None] => 0,
            [None, Some(_)] => 1,
            [None, None] => break,
        };
        let at = next[k].expect("chosen because it is found");
        out.push_str(&text[done..at]);
        out.push_str(pairs[k].1);
        done = at + pairs[k].0.len();
        for (j, slot) in next.iter_mut().enumerate() {
            if slot.is_some_and(|p| p < done) {
                *slot = find(j, done);
            }
        }
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

    /// Keys whose swap is not a plain rename: a property spelled like one op's stem in
    /// snake_case (typed alone when that op is in the proving pair, swapped correctly when it
    /// is not), a default (typify names its function after the type), a title repeating the
    /// stem, a `$ref`. Every op's types equal the ones typed alone.
    #[test]
    fn shared_types_survive_stem_lookalikes() {
        let stems: Vec<String> = ["AbcGet", "XyzGet", "QrsGet", "MnoGet"]
            .map(String::from)
            .to_vec();
        let orders: [&[usize]; 2] = [&[0, 1, 2, 3], &[1, 2, 0, 3]];
        let mut swapped = 0;
        for props in [
            serde_json::json!({"abc_get": {"type": "string"}}),
            serde_json::json!({"mno_get": {"type": "string"}}),
            serde_json::json!({"limit": {"type": "integer", "default": 20}}),
            serde_json::json!({"mode": {"title": "Mode", "type": "string", "enum": ["a", "b"]}}),
            serde_json::json!({"owner": {"$ref": "#/definitions/Owner"}}),
        ] {
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
                let (got, n) = type_shared(&schemas, &picked, |&i| {
                    op_types(&schemas[i], &picked[i], None)
                });
                swapped += n;
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
    }
}
