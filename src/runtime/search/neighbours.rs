//! The words near a query word, from a table a sentence encoder wrote once
//! (`word_neighbours.txt`, made by `examples/word_neighbours.rs`): "hiking" -> wilderness,
//! trail; "usd" -> currency, dollar; "doctor" -> physician. Search adds the nearest its catalog
//! holds, so a request in words no tool uses still reaches the tool, with no model at query
//! time.

use foldhash::{HashMap, HashMapExt};
use std::sync::OnceLock;

/// The table: words as typed, each with its nearest words as search stems them and their
/// cosines in hundredths.
const TABLE: &str = include_str!("word_neighbours.txt");

/// Each word's row of the table, found on first use (splitting lines, not parsing them: under
/// a millisecond, once per process).
fn rows() -> &'static HashMap<&'static str, &'static str> {
    static ROWS: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let mut rows = HashMap::with_capacity(15_000);
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            if let Some((word, near)) = line.split_once(' ') {
                rows.insert(word, near);
            }
        }
        rows
    })
}

/// The words nearest `word` (lowercase, as typed), nearest first, with their cosine.
pub(super) fn near(word: &str) -> impl Iterator<Item = (&'static str, f64)> {
    let mut parts = rows().get(word).copied().unwrap_or("").split(' ');
    std::iter::from_fn(move || {
        let near = parts.next().filter(|w| !w.is_empty())?;
        let cosine: u32 = parts.next()?.parse().ok()?;
        Some((near, f64::from(cosine) / 100.0))
    })
}

#[cfg(test)]
mod tests {
    use super::{near, rows, TABLE};
    use crate::runtime::search::stem;

    /// Every row is a word with its neighbours, nearest first, at a cosine from 0.65 to 1,
    /// never the word itself, at most ten; rows are unique.
    #[test]
    fn the_table_is_well_formed() {
        let mut words = 0;
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let (word, _) = line.split_once(' ').expect("a word and its neighbours");
            let near: Vec<(&str, f64)> = near(word).collect();
            assert!(!near.is_empty() && near.len() <= 10, "{line}");
            assert!(
                near.windows(2).all(|w| w[0].1 >= w[1].1),
                "nearest first: {line}"
            );
            for (n, c) in &near {
                assert!((0.65..=1.0).contains(c), "{line}");
                assert_ne!(*n, stem(word), "{line}");
                assert!(n.bytes().all(|b| b.is_ascii_lowercase()), "{line}");
            }
            assert!(word.bytes().all(|b| b.is_ascii_lowercase()), "{line}");
            words += 1;
        }
        assert_eq!(rows().len(), words, "one row per word");
        assert!(words > 10_000, "{words} rows");
    }

    #[test]
    fn a_word_reaches_the_words_it_means() {
        let near_of = |w: &str| near(w).map(|(n, _)| n).collect::<Vec<_>>();
        assert!(near_of("hiking").contains(&"trail"));
        assert!(near_of("usd").contains(&"currency"));
        assert!(near_of("rental").contains(&"rent"));
        // Looked up as typed: "plan" and "plane" stem alike but mean apart.
        assert!(near_of("plane").contains(&"aircraft"));
        assert!(!near_of("plan").contains(&"aircraft"));
        assert!(near("zzzq").next().is_none());
        // Neighbours are stems, as a catalog's words are indexed; never the word's own.
        for (word, near) in [("film", near_of("film")), ("movie", near_of("movie"))] {
            assert!(!near.contains(&stem(word).as_str()), "{word}: {near:?}");
        }
    }
}
