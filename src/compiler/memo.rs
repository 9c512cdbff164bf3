//! A content-addressed memo of pure, costly steps (one op's Rust types, help and docs pages, one
//! text's token count), so a rebuild pays only for what changed.
//!
//! An entry is keyed by a blake3 of the step's name and its whole input, keyed in turn by a salt
//! naming the toolreg binary that computed it (its version, path, size and modification time): a
//! rebuilt or upgraded toolreg never reads another's entries. On disk every entry carries a
//! blake3 of its key and value, checked on read: an entry whose bytes changed (a torn write, a
//! disk error, a hand edit) is dropped and recomputed, never used. The check is a digest, not a
//! signature: it detects corruption, not a local user who rewrites both (that user could rewrite
//! toolreg itself).
//!
//! Only entries a build used are saved, so the file holds one build's worth and never grows
//! without bound. The saved form is sorted by key, so two builds of the same catalog save the
//! same bytes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The file's first bytes, with the format's version.
const MAGIC: &[u8] = b"toolreg-memo 1\n";

type Key = [u8; 32];

/// Entries by key. A key is already a blake3 digest, so its first eight bytes are as good a
/// hash as any: SipHashing all 32 again, three lookups an entry, was a few percent of a
/// one-tool rebuild.
type KeyMap = HashMap<Key, Arc<str>, std::hash::BuildHasherDefault<DigestHasher>>;

/// Hashes a digest by its first eight bytes (what `[u8; 32]` writes after its length).
#[derive(Default)]
struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Also called with the length prefix (`write_usize` defaults to `write`): folded in,
        // harmless, since every key has the same length.
        let mut first = [0u8; 8];
        let n = bytes.len().min(8);
        first[..n].copy_from_slice(&bytes[..n]);
        self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(first);
    }
}

/// What a build took from the memo and what it had to compute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoStats {
    /// Entries served from the memo as an earlier build left it.
    pub hits: usize,
    /// Entries this build had already computed or read (the same text counted twice, ...).
    pub repeats: usize,
    /// Entries computed (not in the memo, or dropped).
    pub misses: usize,
    /// Entries read from disk whose check did not match: dropped.
    pub rejected: usize,
}

/// The memo; shared by every thread of a build.
pub struct Memo {
    salt: Key,
    /// Read from disk, not yet used by this build.
    stored: Mutex<KeyMap>,
    /// Used (served or computed) by this build: what `to_bytes` saves.
    used: Mutex<KeyMap>,
    hits: AtomicUsize,
    repeats: AtomicUsize,
    misses: AtomicUsize,
    rejected: usize,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo")
            .field("stats", &self.stats())
            .finish()
    }
}

fn check_of(key: &Key, value: &[u8]) -> Key {
    let mut h = blake3::Hasher::new();
    h.update(key);
    h.update(value);
    *h.finalize().as_bytes()
}

impl Memo {
    /// An empty memo for the binary `salt` names.
    pub fn new(salt: &str) -> Memo {
        Memo {
            salt: *blake3::hash(salt.as_bytes()).as_bytes(),
            stored: Mutex::default(),
            used: Mutex::default(),
            hits: AtomicUsize::new(0),
            repeats: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            rejected: 0,
        }
    }

    /// A memo from a saved file: every entry whose check matches. Another binary's file (another
    /// salt), an unknown format or a torn tail yields what could be verified (maybe nothing).
    pub fn read(salt: &str, bytes: &[u8]) -> Memo {
        let mut memo = Memo::new(salt);
        let Some(rest) = bytes.strip_prefix(MAGIC) else {
            return memo;
        };
        let Some((file_salt, mut rest)) = rest.split_first_chunk::<32>() else {
            return memo;
        };
        if *file_salt != memo.salt {
            return memo;
        }
        let stored = memo.stored.get_mut().expect("not shared yet");
        while let Some((key, after)) = rest.split_first_chunk::<32>() {
            let Some((check, after)) = after.split_first_chunk::<32>() else {
                memo.rejected += 1;
                break;
            };
            let Some((len, after)) = after.split_first_chunk::<8>() else {
                memo.rejected += 1;
                break;
            };
            let len = u64::from_le_bytes(*len);
            let Some(value) = usize::try_from(len).ok().and_then(|n| after.get(..n)) else {
                memo.rejected += 1;
                break;
            };
            rest = &after[value.len()..];
            match std::str::from_utf8(value) {
                Ok(text) if check_of(key, value) == *check => {
                    stored.insert(*key, text.into());
                }
                _ => memo.rejected += 1,
            }
        }
        memo
    }

    fn key(&self, step: &str, input: &[u8]) -> Key {
        let mut h = blake3::Hasher::new_keyed(&self.salt);
        h.update(step.as_bytes());
        h.update(&[0]);
        h.update(input);
        *h.finalize().as_bytes()
    }

    /// The value of `step` on `input`: from the memo, or `compute`d and remembered. `compute`
    /// must be a pure function of `input` (and of toolreg itself, which the salt names).
    pub fn get_or_compute(
        &self,
        step: &str,
        input: &[u8],
        compute: impl FnOnce() -> String,
    ) -> Arc<str> {
        self.get_or_compute_key(self.key(step, input), compute)
    }

    /// The value under `key`: served, or `compute`d and remembered.
    fn get_or_compute_key(&self, key: Key, compute: impl FnOnce() -> String) -> Arc<str> {
        if let Some(v) = self.served(&key) {
            return v;
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let value: Arc<str> = compute().into();
        self.used
            .lock()
            .expect("memo lock")
            .entry(key)
            .or_insert(value)
            .clone()
    }

    /// `get_or_compute` with the input given in pieces, each length-prefixed in the key (so no
    /// two lists of pieces read the same), hashed where they lie instead of copied into one.
    pub fn get_or_compute_pieces(
        &self,
        step: &str,
        pieces: &[&[u8]],
        compute: impl FnOnce() -> String,
    ) -> Arc<str> {
        let mut h = blake3::Hasher::new_keyed(&self.salt);
        h.update(step.as_bytes());
        h.update(&[1]);
        for piece in pieces {
            h.update(&(piece.len() as u64).to_le_bytes());
            h.update(piece);
        }
        self.get_or_compute_key(*h.finalize().as_bytes(), compute)
    }

    /// `get_or_compute` for a text stamped with the registry version (every generated page
    /// carries it), so that one changed op does not make every other op's page new: the entry
    /// keeps the text with the version it was computed under, and a later build puts its own
    /// version in its place. The swap is exact: an op's page holds that version nowhere else,
    /// since the op would have to hold the hash of a registry made from itself (a blake3 fixed
    /// point). `input` must be everything that shapes the text but the version.
    pub fn get_or_compute_stamped(
        &self,
        step: &str,
        input: &[u8],
        version: &str,
        compute: impl FnOnce() -> String,
    ) -> String {
        let key = self.key(step, input);
        if let Some(entry) = self.served(&key) {
            let restamped = match entry.split_once('\n') {
                Some((was, text)) if was == version => Some(text.to_string()),
                Some((was, text)) if !was.is_empty() => Some(replace_all(text, was, version)),
                // Not an entry this step writes: computed afresh below.
                _ => None,
            };
            if let Some(text) = restamped {
                return text;
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let text = compute();
        let mut entry = String::with_capacity(version.len() + 1 + text.len());
        entry.push_str(version);
        entry.push('\n');
        entry.push_str(&text);
        self.used
            .lock()
            .expect("memo lock")
            .insert(key, entry.into());
        text
    }

    /// The entry for `key` when this build already used it or an earlier one left it (then
    /// marked used), counted as a repeat or a hit.
    fn served(&self, key: &Key) -> Option<Arc<str>> {
        if let Some(v) = self.used.lock().expect("memo lock").get(key) {
            self.repeats.fetch_add(1, Ordering::Relaxed);
            return Some(v.clone());
        }
        let v = self.stored.lock().expect("memo lock").remove(key)?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        self.used.lock().expect("memo lock").insert(*key, v.clone());
        Some(v)
    }

    /// Whether `step` on `input` would be served without computing (used by this build, or
    /// read from disk and not yet used). Counts nothing.
    pub fn has(&self, step: &str, input: &[u8]) -> bool {
        let key = self.key(step, input);
        self.used.lock().expect("memo lock").contains_key(&key)
            || self.stored.lock().expect("memo lock").contains_key(&key)
    }

    pub fn stats(&self) -> MemoStats {
        MemoStats {
            hits: self.hits.load(Ordering::Relaxed),
            repeats: self.repeats.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            rejected: self.rejected,
        }
    }

    /// The entries this build used, sorted by key, each with its check.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out)
            .expect("writing to memory cannot fail");
        out
    }

    /// `to_bytes`, written as it is made (the memo runs to tens of MB: no copy of it is held).
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let used = self.used.lock().expect("memo lock");
        let mut keys: Vec<&Key> = used.keys().collect();
        keys.sort();
        out.write_all(MAGIC)?;
        out.write_all(&self.salt)?;
        for key in keys {
            let value = used[key].as_bytes();
            out.write_all(key)?;
            out.write_all(&check_of(key, value))?;
            out.write_all(&(value.len() as u64).to_le_bytes())?;
            out.write_all(value)?;
        }
        Ok(())
    }
}

/// `text` with every `from` replaced by `to`, as `str::replace` does, found with memchr's SIMD
/// search (a rebuild restamps every page it takes from the memo).
fn replace_all(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(text.as_bytes(), from.as_bytes()) {
        out.push_str(&text[last..at]);
        out.push_str(to);
        last = at + from.len();
    }
    out.push_str(&text[last..]);
    out
}

/// An in-process table of results keyed by text, for one thread's repeated pure steps (a part's
/// token count, a schema's validation): it starts over once its keys hold `max_bytes`, and keys
/// longer than `max_key` are never kept, so hostile input bounds its memory. Keys are hashed by
/// foldhash, seeded at random per table (a catalog cannot be written to collide in advance):
/// SipHash, most of it here, was about 3% of a 10,000-tool build's sampled CPU.
pub(crate) struct Bounded<V> {
    values: foldhash::HashMap<Box<str>, V>,
    bytes: usize,
    max_key: usize,
    max_bytes: usize,
}

impl<V: Clone> Bounded<V> {
    pub fn new(max_key: usize, max_bytes: usize) -> Bounded<V> {
        Bounded {
            values: foldhash::HashMap::default(),
            bytes: 0,
            max_key,
            max_bytes,
        }
    }

    /// The value for `key`: remembered, or `compute`d (and remembered if the key is short
    /// enough).
    pub fn get_or(&mut self, key: &str, compute: impl FnOnce() -> V) -> V {
        if let Some(v) = self.values.get(key) {
            return v.clone();
        }
        let v = compute();
        if key.len() <= self.max_key {
            if self.bytes + key.len() > self.max_bytes {
                self.values.clear();
                self.bytes = 0;
            }
            self.bytes += key.len();
            self.values.insert(key.into(), v.clone());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `replace_all` is `str::replace`, overlapping and multi-byte cases included.
    #[test]
    fn replace_all_replaces_as_str_does() {
        for (text, from, to) in [
            ("b3:aa x b3:aa", "b3:aa", "b3:bbbb"),
            ("aaaa", "aa", "b"),
            ("aaa", "aa", "xyz"),
            ("no stamp", "b3:aa", "b3:bb"),
            ("é b3:aa ü b3:aa", "b3:aa", "ä"),
            ("", "x", "y"),
        ] {
            assert_eq!(
                replace_all(text, from, to),
                text.replace(from, to),
                "{text:?}"
            );
        }
    }

    fn filled() -> Memo {
        let m = Memo::new("salt");
        m.get_or_compute("count", b"hello", || "5".into());
        m.get_or_compute("count", b"hi", || "2".into());
        m
    }

    #[test]
    fn serves_what_it_computed_and_saves_only_what_was_used() {
        let m = filled();
        let again = m.get_or_compute("count", b"hello", || unreachable!());
        assert_eq!(&*again, "5");
        assert_eq!(
            m.stats(),
            MemoStats {
                hits: 0,
                repeats: 1,
                misses: 2,
                rejected: 0
            }
        );
        // Same input under another step name is another entry.
        assert_eq!(&*m.get_or_compute("len", b"hello", || "x".into()), "x");

        let read = Memo::read("salt", &m.to_bytes());
        assert_eq!(
            &*read.get_or_compute("count", b"hi", || unreachable!()),
            "2"
        );
        assert!(read.to_bytes().len() < m.to_bytes().len());
        // Saved bytes do not depend on the order entries were computed in.
        let other = Memo::new("salt");
        other.get_or_compute("len", b"hello", || "x".into());
        other.get_or_compute("count", b"hi", || "2".into());
        other.get_or_compute("count", b"hello", || "5".into());
        assert_eq!(other.to_bytes(), m.to_bytes());
    }

    #[test]
    fn a_stamped_text_takes_the_new_version() {
        let m = Memo::new("salt");
        let page = |v: &str| format!("page of op a, registry {v}; again {v}");
        let first = m.get_or_compute_stamped("page", b"op a", "b3:1111", || page("b3:1111"));
        assert_eq!(first, page("b3:1111"));
        let read = Memo::read("salt", &m.to_bytes());
        let later = read.get_or_compute_stamped("page", b"op a", "b3:2222", || unreachable!());
        assert_eq!(later, page("b3:2222"));
        assert_eq!(read.stats().hits, 1);
        // The entry keeps the version it was computed under; a third build swaps again.
        let third = Memo::read("salt", &read.to_bytes());
        let again = third.get_or_compute_stamped("page", b"op a", "b3:3333", || unreachable!());
        assert_eq!(again, page("b3:3333"));
        // An entry another step wrote (no version line) is not trusted as a stamped text.
        let plain = Memo::new("salt");
        plain.get_or_compute("page", b"op b", || "no version line".into());
        let fresh = plain.get_or_compute_stamped("page", b"op b", "b3:4444", || page("b3:4444"));
        assert_eq!(fresh, page("b3:4444"));
    }

    #[test]
    fn another_binary_reads_nothing() {
        let read = Memo::read("other salt", &filled().to_bytes());
        assert_eq!(
            &*read.get_or_compute("count", b"hi", || "computed".into()),
            "computed"
        );
        assert_eq!(read.stats().misses, 1);
    }

    #[test]
    fn a_changed_or_torn_entry_is_dropped_and_recomputed() {
        let mut bytes = filled().to_bytes();
        // Flip the last byte of the last value: its check no longer matches.
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let read = Memo::read("salt", &bytes);
        assert_eq!(read.stats().rejected, 1);
        let hello = read.get_or_compute("count", b"hello", || "5".into());
        let hi = read.get_or_compute("count", b"hi", || "2".into());
        assert_eq!((&*hello, &*hi), ("5", "2"));
        assert_eq!(read.stats().hits + read.stats().misses, 2);
        assert_eq!(read.stats().misses, 1, "one entry was intact");
        // A tail cut anywhere loses at most the entry it cuts.
        let whole = filled().to_bytes();
        for cut in 0..whole.len() {
            let read = Memo::read("salt", &whole[..cut]);
            assert!(read.stored.lock().unwrap().len() <= 2);
        }
    }
}
