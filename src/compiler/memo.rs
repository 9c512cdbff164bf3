//! A content-addressed memo of pure, costly steps (one op's Rust types, help and docs pages, one
//! text's token count), so a rebuild pays only for what changed.
//!
//! An entry is keyed by a blake3 of the step's name and its whole input, keyed in turn by a salt
//! naming the toolreg binary that computed it (its version, path, size and modification time): a
//! rebuilt or upgraded toolreg never reads another's entries. On disk the entries lie in segments
//! of about a MiB, each with a blake3 of its bytes, checked on read: the entries of a segment
//! whose bytes changed (a torn write, a disk error, a hand edit) are dropped and recomputed, never
//! used. A segment holds its entries' keys and lengths first, then their values back to back, so
//! the values are read into one string per segment and served from it as they lie ([`Text`]):
//! copying each of 140,000 values into its own allocation as the file was read was 7% of a
//! one-tool rebuild's page faults at 10,000 tools. The check is a digest, not a signature: it
//! detects corruption, not a local user who rewrites both (that user could rewrite toolreg
//! itself). One check per segment instead of one per entry lets blake3 hash many chunks at once
//! (per entry it was a twentieth of a one-tool rebuild's CPU at 10,000 tools, reading and
//! saving).
//!
//! A build that computed a few entries appends them as one segment ([`Memo::appendix`]) instead
//! of saving the whole file again; once the entries no build used outweigh the ones this build
//! used, the file is written afresh with only the used ones, sorted by key (so two such saves of
//! the same catalog are the same bytes). The file never holds more than about two builds' worth.
//!
//! A build's memo can spill ([`Memo::spilling`]): each value it computes of `SPILL_FROM` bytes or
//! more goes to an anonymous temporary file as it is made, and is read back only when served
//! again or saved. A full build computes every entry (about 85 MB at 10,000 tools), and holding
//! them all while every emitter's output is held too was a tenth of its peak. Likewise a memo
//! read in the background lets go of each large value it serves ([`LET_GO_FROM`]): the file
//! still holds it for an append, and is read again for a save that writes it afresh; a segment
//! is freed once every value it holds is served and let go.
//!
//! Why it is one file: an entry's life (read and checked by segment, served, computed, spilled,
//! appended or written afresh) is one protocol whose invariants (only checked bytes are served,
//! a saved file holds exactly what the build used) read top to bottom. About 450 of its lines
//! are tests.

use crate::compiler::spill::{SpillFile, Spilled};
use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The file's first bytes, with the format's version.
const MAGIC: &[u8] = b"toolreg-memo 3\n";

/// How many bytes open a memo file: its format, then its binary's salt (see [`is_head_of`]).
pub const HEAD_LEN: usize = MAGIC.len() + 32;

/// Whether `head`, a memo file's first [`HEAD_LEN`] bytes, opens a file of this format written
/// by the binary `salt` names: one whose entries a build by that binary can use.
pub fn is_head_of(salt: &str, head: &[u8]) -> bool {
    opens_file_of(head, blake3::hash(salt.as_bytes()).as_bytes())
}

/// [`is_head_of`] by the salt's key (what a [`Memo`] holds).
fn opens_file_of(head: &[u8], salt: &Key) -> bool {
    head.len() == HEAD_LEN && head[..MAGIC.len()] == *MAGIC && head[MAGIC.len()..] == *salt
}

/// A segment's head: how many entries it holds, its values' length and the blake3 of the rest
/// (the entries' keys and lengths, then the values).
const SEGMENT_HEAD: usize = 8 + 8 + 32;

/// About how many bytes of values one segment holds (one check each).
const SEGMENT_BYTES: usize = 1 << 20;

/// An entry's bytes on disk apart from its value: the key and the value's length.
const ENTRY_HEAD: usize = 32 + 8;

type Key = [u8; 32];

/// A memo's value: computed here, or where it lies in the values of a segment read from the
/// file (shared, never copied out; see the module's doc).
#[derive(Clone)]
pub struct Text(TextRepr);

#[derive(Clone)]
enum TextRepr {
    Owned(Arc<str>),
    /// `values[start..end]`, on character boundaries (checked when the segment was read).
    InSegment {
        values: Arc<String>,
        start: usize,
        end: usize,
    },
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        match &self.0 {
            TextRepr::Owned(text) => text,
            TextRepr::InSegment { values, start, end } => &values[*start..*end],
        }
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl From<Arc<str>> for Text {
    fn from(text: Arc<str>) -> Text {
        Text(TextRepr::Owned(text))
    }
}

impl Text {
    /// This text owning its bytes: a value held through the build must not keep its whole
    /// segment (a MiB) from being freed.
    fn owned(&self) -> Text {
        match &self.0 {
            TextRepr::Owned(_) => self.clone(),
            TextRepr::InSegment { .. } => Text(TextRepr::Owned(Arc::from(&**self))),
        }
    }
}

/// A memo file to read: its bytes, read segment by segment, and how many there are (no length
/// a damaged head claims is allocated beyond what the file holds).
pub struct MemoFile {
    reader: Box<dyn std::io::Read + Send>,
    len: u64,
}

impl MemoFile {
    pub fn new(reader: impl std::io::Read + Send + 'static, len: u64) -> MemoFile {
        MemoFile {
            reader: Box::new(reader),
            len,
        }
    }

    /// The file at `path`. Segments are read in three parts, the head a few bytes: buffered
    /// (the two large parts bypass the buffer, as any read larger than it does).
    pub fn open(path: &std::path::Path) -> Option<MemoFile> {
        let file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        let reader = std::io::BufReader::with_capacity(64 << 10, file);
        Some(MemoFile::new(reader, len))
    }

    pub fn from_bytes(bytes: Vec<u8>) -> MemoFile {
        let len = bytes.len() as u64;
        MemoFile::new(std::io::Cursor::new(bytes), len)
    }
}

/// The smallest value a spilling memo writes to its spill file instead of holding: most entries
/// below it are token counts and screens, whose reading back would cost more than they hold.
const SPILL_FROM: usize = 512;

/// The smallest value a build lets go of once it has served it from the memo's file, when it
/// can read that file again: saved by appending, such an entry stays where it is in the file
/// (written afresh, the file is read again for it). Holding every value served until the save
/// kept the whole memo (120 MB at 10,000 tools) in memory through a one-tool rebuild, which
/// made its peak higher than a full build's. Small values (token counts) are held: they are
/// asked for again within a build, and cost little.
const LET_GO_FROM: usize = 512;

/// Entries by key. A key is mostly a blake3 digest, so its last eight bytes are as good a
/// hash as any: SipHashing all 32 again, three lookups an entry, was a few percent of a
/// one-tool rebuild.
type KeyMap<V> = HashMap<Key, V, std::hash::BuildHasherDefault<DigestHasher>>;

/// An entry this build used: held, in the spill file, or served from the memo's file and not
/// held (`Served`, its length; see [`LET_GO_FROM`]).
enum Used {
    Held(Text),
    Spilled(Spilled),
    Served(usize),
}

impl Used {
    fn len(&self) -> usize {
        match self {
            Used::Held(v) => v.len(),
            Used::Spilled(place) => place.len,
            Used::Served(len) => *len,
        }
    }
}

/// Hashes a digest by its first eight bytes (what `[u8; 32]` writes after its length).
#[derive(Default)]
struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Also called with the length prefix (`write_usize` defaults to `write`): folded in,
        // harmless, since every key has the same length. The last eight bytes: a key's first
        // four are its step's tag ([`keyed`]), the same for every entry of a step.
        let mut last = [0u8; 8];
        let n = bytes.len().min(8);
        last[..n].copy_from_slice(&bytes[bytes.len() - n..]);
        self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(last);
    }
}

/// The key of an entry of `step` whose input `h` hashed: a tag of the step's name, then the
/// digest. Saved sorted by key, a step's entries lie in segments of their own, and a segment is
/// freed once its values are served and let go: with the steps mixed, nearly every segment
/// waited for the last emitter, and a one-tool rebuild at 10,000 tools peaked 33 MiB higher.
fn keyed(step: &str, h: &blake3::Hasher) -> Key {
    // FNV-1a: the tag only groups, the digest (224 bits of it) is what tells entries apart.
    let tag = step.bytes().fold(0x811c_9dc5_u32, |t, b| {
        (t ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let mut key = [0u8; 32];
    key[..4].copy_from_slice(&tag.to_be_bytes());
    key[4..].copy_from_slice(&h.finalize().as_bytes()[..28]);
    key
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
    /// Read from disk, not yet used by this build; made at first use, waiting for the read
    /// when it runs in the background ([`Memo::read_in_background`]).
    stored: OnceLock<Mutex<Stored>>,
    /// The background read of the memo's file, until the first use takes it.
    pending: Mutex<Option<std::thread::JoinHandle<Stored>>>,
    /// Used (served or computed) by this build: what `to_bytes` saves.
    used: Mutex<KeyMap<Used>>,
    /// Where computed values of `SPILL_FROM` bytes or more go, when the memo spills.
    spill: Mutex<Option<SpillFile>>,
    /// Keys this build computed (in `used`, not on disk yet): what an appendix holds.
    fresh: Mutex<Vec<Key>>,
    /// Reads the memo's file again (a memo read in the background has it): what lets a served
    /// value go ([`LET_GO_FROM`]).
    source: Option<Arc<FileSource>>,
    hits: AtomicUsize,
    repeats: AtomicUsize,
    misses: AtomicUsize,
}

/// Opens a memo's file; `None` when there is none.
type FileSource = dyn Fn() -> Option<MemoFile> + Send + Sync;

/// What a memo read from its file: the entries, and how the file checked.
#[derive(Default)]
struct Stored {
    entries: KeyMap<Text>,
    /// Entries (or torn segments) dropped because their check failed.
    rejected: usize,
    /// Read from a file of this binary with every segment intact: new entries may be appended.
    appendable: bool,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Memo {
    /// An empty memo for the binary `salt` names.
    pub fn new(salt: &str) -> Memo {
        Memo {
            salt: *blake3::hash(salt.as_bytes()).as_bytes(),
            stored: OnceLock::new(),
            pending: Mutex::new(None),
            used: Mutex::default(),
            spill: Mutex::new(None),
            fresh: Mutex::default(),
            source: None,
            hits: AtomicUsize::new(0),
            repeats: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
        }
    }

    /// A memo from a saved file: the entries of every segment whose check matches. Another
    /// binary's file (another salt), an unknown format or a torn tail yields what could be
    /// verified (maybe nothing).
    pub fn read(salt: &str, bytes: &[u8]) -> Memo {
        let memo = Memo::new(salt);
        let stored = stored_from(&memo.salt, MemoFile::from_bytes(bytes.to_vec()));
        memo.stored
            .set(Mutex::new(stored))
            .unwrap_or_else(|_| unreachable!("a new memo has read nothing"));
        memo
    }

    /// [`Memo::read`] of the bytes `file` returns (`None`: no file), read and checked on
    /// another thread while the build goes on; the first use of the memo waits for it. At
    /// 10,000 tools the file is about 90 MB, and reading and checking it took a twentieth of a
    /// one-tool rebuild before the compile could start, on a core the compile leaves idle.
    pub fn read_in_background(
        salt: &str,
        file: impl Fn() -> Option<MemoFile> + Send + Sync + 'static,
    ) -> Memo {
        let mut memo = Memo::new(salt);
        let key = memo.salt;
        let source: Arc<FileSource> = Arc::new(file);
        memo.source = Some(source.clone());
        let reading = std::thread::Builder::new()
            .name("memo-read".into())
            .spawn(move || source().map_or_else(Stored::default, |f| stored_from(&key, f)));
        // With no thread to read on, the memo starts empty: every entry is computed (slower,
        // the same output).
        if let Ok(handle) = reading {
            *memo.pending.lock().expect("memo lock") = Some(handle);
        }
        memo
    }

    /// The entries read from disk, waiting for a background read to finish (one that panicked
    /// leaves none: the build computes them).
    fn stored(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.stored
            .get_or_init(|| {
                let pending = self.pending.lock().expect("memo lock").take();
                Mutex::new(pending.and_then(|h| h.join().ok()).unwrap_or_default())
            })
            .lock()
            .expect("memo lock")
    }

    /// This memo, writing the values it computes of `SPILL_FROM` bytes or more to an anonymous
    /// temporary file instead of holding them (a build's memo; nothing of it outlives the
    /// process). Without a temporary folder to write in, it holds them as before.
    pub fn spilling(self) -> Memo {
        *self.spill.lock().expect("memo lock") = SpillFile::new();
        self
    }

    /// `value` as this build keeps it: spilled when large and the memo spills (held when the
    /// spill file fails: a full disk costs memory, never the entry).
    fn keep(&self, value: &Arc<str>) -> Used {
        if value.len() >= SPILL_FROM {
            if let Some(spill) = self.spill.lock().expect("memo lock").as_mut() {
                if let Ok(place) = spill.put(value) {
                    return Used::Spilled(place);
                }
            }
        }
        Used::Held(value.clone().into())
    }

    /// A used entry's value: held, or read back from the spill file (`None` when that fails).
    fn value(&self, used: &Used) -> Option<Text> {
        match used {
            Used::Held(v) => Some(v.clone()),
            Used::Spilled(place) => self
                .spill
                .lock()
                .expect("memo lock")
                .as_mut()?
                .get(*place)
                .map(|text| Arc::<str>::from(text).into()),
            Used::Served(_) => None,
        }
    }

    fn key(&self, step: &str, input: &[u8]) -> Key {
        let mut h = blake3::Hasher::new_keyed(&self.salt);
        h.update(step.as_bytes());
        h.update(&[0]);
        h.update(input);
        keyed(step, &h)
    }

    /// The value of `step` on `input`: from the memo, or `compute`d and remembered. `compute`
    /// must be a pure function of `input` (and of toolreg itself, which the salt names).
    pub fn get_or_compute(
        &self,
        step: &str,
        input: &[u8],
        compute: impl FnOnce() -> String,
    ) -> Text {
        self.get_or_compute_key(self.key(step, input), compute)
    }

    /// The value under `key`: served, or `compute`d and remembered.
    fn get_or_compute_key(&self, key: Key, compute: impl FnOnce() -> String) -> Text {
        if let Some(v) = self.served(&key) {
            return v;
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let value: Arc<str> = compute().into();
        if self.used.lock().expect("memo lock").contains_key(&key) {
            // Another thread computed it meanwhile: theirs is kept (the same text).
            return value.into();
        }
        let kept = self.keep(&value);
        let mut used = self.used.lock().expect("memo lock");
        if let std::collections::hash_map::Entry::Vacant(e) = used.entry(key) {
            self.fresh.lock().expect("memo lock").push(key);
            e.insert(kept);
        }
        value.into()
    }

    /// `get_or_compute` with the input given in pieces, each length-prefixed in the key (so no
    /// two lists of pieces read the same), hashed where they lie instead of copied into one.
    pub fn get_or_compute_pieces(
        &self,
        step: &str,
        pieces: &[&[u8]],
        compute: impl FnOnce() -> String,
    ) -> Text {
        let mut h = blake3::Hasher::new_keyed(&self.salt);
        h.update(step.as_bytes());
        h.update(&[1]);
        for piece in pieces {
            h.update(&(piece.len() as u64).to_le_bytes());
            h.update(piece);
        }
        self.get_or_compute_key(keyed(step, &h), compute)
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
        let kept = self.keep(&entry.into());
        self.used.lock().expect("memo lock").insert(key, kept);
        // Also when it replaced an entry it could not restamp: the appended one wins on read.
        self.fresh.lock().expect("memo lock").push(key);
        text
    }

    /// The entry for `key` when this build already used it or an earlier one left it (then
    /// marked used), counted as a repeat or a hit.
    fn served(&self, key: &Key) -> Option<Text> {
        let spilled = match self.used.lock().expect("memo lock").get(key) {
            Some(Used::Held(v)) => {
                self.repeats.fetch_add(1, Ordering::Relaxed);
                return Some(v.clone());
            }
            Some(Used::Spilled(place)) => Some(*place),
            // Let go of once served: computed again, like an entry not in the memo.
            Some(Used::Served(_)) | None => None,
        };
        if let Some(place) = spilled {
            // Read back outside the map's lock; a failed read is computed again (and kept).
            let v = self.value(&Used::Spilled(place));
            if v.is_some() {
                self.repeats.fetch_add(1, Ordering::Relaxed);
            } else {
                self.used.lock().expect("memo lock").remove(key);
            }
            return v;
        }
        let (v, let_go) = {
            let mut stored = self.stored();
            let v = stored.entries.remove(key)?;
            let let_go = v.len() >= LET_GO_FROM && stored.appendable && self.source.is_some();
            (v, let_go)
        };
        self.hits.fetch_add(1, Ordering::Relaxed);
        // A value held is copied out of its segment, so the segment can be freed.
        let (kept, v) = match let_go {
            true => (Used::Served(v.len()), v),
            false => {
                let v = v.owned();
                (Used::Held(v.clone()), v)
            }
        };
        self.used.lock().expect("memo lock").insert(*key, kept);
        Some(v)
    }

    /// The value of `step` on `input` when this build or an earlier one computed it (then it is
    /// used, as by [`Memo::get_or_compute`]); `None` computes nothing.
    pub fn get(&self, step: &str, input: &[u8]) -> Option<Text> {
        self.served(&self.key(step, input))
    }

    pub fn stats(&self) -> MemoStats {
        MemoStats {
            hits: self.hits.load(Ordering::Relaxed),
            repeats: self.repeats.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            rejected: self.stored().rejected,
        }
    }

    /// The entries this build used, sorted by key, in checked segments.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out)
            .expect("writing to memory cannot fail");
        out
    }

    /// `to_bytes`, written as it is made (the memo runs to tens of MB: no copy of it is held).
    pub fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        self.write_segments(out, SEGMENT_BYTES)
    }

    fn write_segments(
        &self,
        out: &mut impl std::io::Write,
        segment_bytes: usize,
    ) -> std::io::Result<()> {
        let used = self.used.lock().expect("memo lock");
        let mut keys: Vec<&Key> = used.keys().collect();
        keys.sort();
        // Values served and let go are read from the file again, checked as on the first read.
        let again = used
            .values()
            .any(|u| matches!(u, Used::Served(_)))
            .then(|| self.source.as_ref().and_then(|read| read()))
            .flatten()
            .map(|file| stored_from(&self.salt, file))
            .unwrap_or_default();
        out.write_all(MAGIC)?;
        out.write_all(&self.salt)?;
        // A value that cannot be read back (from the spill file, or from a memo file changed
        // since) is left out: a cache entry fewer.
        let entries = keys.into_iter().filter_map(|k| {
            let value = match &used[k] {
                Used::Served(_) => again.entries.get(k).cloned(),
                kept => self.value(kept),
            };
            Some((k, value?))
        });
        write_entries(out, entries, segment_bytes)
    }

    /// What to add to the file this memo was read from for it to hold every entry this build
    /// used: one segment of the entries computed here (empty when there were none). `None` when
    /// the file must be written afresh ([`Memo::write_to`]): there was none, it was another
    /// binary's or damaged, or the entries no build used outweigh the ones this build used.
    pub fn appendix(&self) -> Option<Vec<u8>> {
        let dead: usize = {
            let stored = self.stored();
            if !stored.appendable {
                return None;
            }
            stored.entries.values().map(|v| ENTRY_HEAD + v.len()).sum()
        };
        let used = self.used.lock().expect("memo lock");
        let live: usize = used.values().map(|v| ENTRY_HEAD + v.len()).sum();
        if dead > live {
            return None;
        }
        let mut fresh = self.fresh.lock().expect("memo lock").clone();
        fresh.sort();
        fresh.dedup();
        let mut out = Vec::new();
        write_entries(
            &mut out,
            fresh
                .iter()
                .filter_map(|k| Some((k, self.value(used.get(k)?)?))),
            SEGMENT_BYTES,
        )
        .expect("writing to memory cannot fail");
        Some(out)
    }
}

/// The entries of a memo file for the binary `salt` names: those of every segment whose check
/// matches (another binary's file, an unknown format or a torn tail yields what could be
/// verified, maybe nothing). Read segment by segment, each segment's values into one string.
fn stored_from(salt: &Key, file: MemoFile) -> Stored {
    let MemoFile {
        mut reader,
        len: mut left,
    } = file;
    let mut stored = Stored::default();
    let mut head = [0u8; HEAD_LEN];
    if left < head.len() as u64 || reader.read_exact(&mut head).is_err() {
        return stored;
    }
    left -= head.len() as u64;
    if !opens_file_of(&head, salt) {
        return stored;
    }
    let mut rejected = 0;
    while left > 0 {
        match read_segment(&mut reader, &mut left) {
            Segment::Read(entries) => {
                for entry in entries {
                    match entry {
                        Some((key, text)) => {
                            stored.entries.insert(key, text);
                        }
                        None => rejected += 1,
                    }
                }
            }
            // The segment's entries are dropped (counted one each, at least one).
            Segment::Dropped(n) => rejected += n.max(1),
            // Torn: the rest is lost (counted as one).
            Segment::Torn => {
                rejected += 1;
                break;
            }
        }
    }
    stored.rejected = rejected;
    stored.appendable = rejected == 0;
    stored
}

/// One segment as read: its entries (`None` for one that does not read), or how many entries
/// a segment whose check failed held, or a tail too short for what its head claims.
enum Segment {
    Read(Vec<Option<(Key, Text)>>),
    Dropped(usize),
    Torn,
}

/// Reads the segment at `reader`, `left` bytes from the file's end (counted down).
fn read_segment(reader: &mut dyn std::io::Read, left: &mut u64) -> Segment {
    let mut head = [0u8; SEGMENT_HEAD];
    if *left < SEGMENT_HEAD as u64 || reader.read_exact(&mut head).is_err() {
        return Segment::Torn;
    }
    *left -= SEGMENT_HEAD as u64;
    let (count, rest) = head.split_at(8);
    let (values_len, check) = rest.split_at(8);
    let count = u64::from_le_bytes(count.try_into().expect("8 bytes"));
    let values_len = u64::from_le_bytes(values_len.try_into().expect("8 bytes"));
    // Lengths a damaged head claims are checked against the file before anything is allocated.
    let index_len = count.checked_mul(ENTRY_HEAD as u64);
    let Some(body_len) = index_len.and_then(|i| i.checked_add(values_len)) else {
        return Segment::Torn;
    };
    if body_len > *left {
        return Segment::Torn;
    }
    *left -= body_len;
    let read = |len: u64, reader: &mut dyn std::io::Read| -> Option<Vec<u8>> {
        let mut bytes = vec![0; usize::try_from(len).ok()?];
        reader.read_exact(&mut bytes).ok()?;
        Some(bytes)
    };
    let (Some(index), Some(values)) = (
        read(body_len - values_len, reader),
        read(values_len, reader),
    ) else {
        return Segment::Torn;
    };
    let count = index.len() / ENTRY_HEAD;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&index);
    hasher.update(&values);
    if hasher.finalize().as_bytes() != check {
        return Segment::Dropped(count);
    }
    // The check matched, so a segment that does not read was written so: dropped.
    let Ok(values) = String::from_utf8(values) else {
        return Segment::Dropped(count);
    };
    // The values' lengths must add up to the values read, or which value is whose cannot be
    // told: the segment is dropped (written so, since its check matched).
    let total = index.chunks_exact(ENTRY_HEAD).try_fold(0u64, |sum, entry| {
        sum.checked_add(u64::from_le_bytes(entry[32..].try_into().expect("8 bytes")))
    });
    if total != Some(values_len) {
        return Segment::Dropped(count);
    }
    let values = Arc::new(values);
    let mut start = 0usize;
    let entries = index
        .chunks_exact(ENTRY_HEAD)
        .map(|entry| {
            let (key, len) = entry.split_at(32);
            // Within the values: the lengths add up to theirs.
            let end = start + u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
            let (from, to) = (start, end);
            start = end;
            (values.is_char_boundary(from) && values.is_char_boundary(to)).then(|| {
                let text = TextRepr::InSegment {
                    values: values.clone(),
                    start: from,
                    end: to,
                };
                (key.try_into().expect("32 bytes"), Text(text))
            })
        })
        .collect();
    Segment::Read(entries)
}

/// Entries as segments of about `segment_bytes` of values each (see [`SEGMENT_HEAD`]): the head,
/// then each entry's key and value length, then the values.
fn write_entries<'a>(
    out: &mut impl std::io::Write,
    entries: impl Iterator<Item = (&'a Key, Text)>,
    segment_bytes: usize,
) -> std::io::Result<()> {
    let mut index = Vec::new();
    let mut values = String::with_capacity(segment_bytes + (64 << 10));
    let flush = |out: &mut dyn std::io::Write,
                 index: &mut Vec<u8>,
                 values: &mut String|
     -> std::io::Result<()> {
        if index.is_empty() {
            return Ok(());
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(index);
        hasher.update(values.as_bytes());
        out.write_all(&((index.len() / ENTRY_HEAD) as u64).to_le_bytes())?;
        out.write_all(&(values.len() as u64).to_le_bytes())?;
        out.write_all(hasher.finalize().as_bytes())?;
        out.write_all(index)?;
        out.write_all(values.as_bytes())?;
        index.clear();
        values.clear();
        Ok(())
    };
    for (key, value) in entries {
        index.extend_from_slice(key);
        index.extend_from_slice(&(value.len() as u64).to_le_bytes());
        values.push_str(&value);
        if values.len() >= segment_bytes {
            flush(out, &mut index, &mut values)?;
        }
    }
    flush(out, &mut index, &mut values)
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

    /// A memo read in the background lets go of the large values it serves, and still saves
    /// them: appended (they stay in the file), or written afresh (read from the file again,
    /// checked; left out, never wrong, when the file changed meanwhile). A value asked for again
    /// after it was let go is computed again.
    #[test]
    fn served_values_are_let_go_and_still_saved() {
        let big = |n: usize| format!("{n} {}", "page text ".repeat(LET_GO_FROM / 5));
        let first = Memo::new("salt");
        for n in 0..10 {
            first.get_or_compute("page", &[n], || big(n.into()));
            first.get_or_compute("count", &[n], || n.to_string());
        }
        let file = first.to_bytes();
        let on_disk = std::sync::Arc::new(Mutex::new(file.clone()));
        let disk = on_disk.clone();
        let read = Memo::read_in_background("salt", move || {
            Some(MemoFile::from_bytes(disk.lock().unwrap().clone()))
        });
        // Half the pages and every count served: the pages let go, the counts held.
        for n in 0..5 {
            assert_eq!(
                *read.get_or_compute("page", &[n], || unreachable!()),
                big(n.into())
            );
        }
        for n in 0..10 {
            read.get_or_compute("count", &[n], || unreachable!());
        }
        {
            let used = read.used.lock().unwrap();
            let let_go = used
                .values()
                .filter(|u| matches!(u, Used::Served(_)))
                .count();
            assert_eq!(let_go, 5, "the five pages served");
        }
        // Asked again: computed (the same text), and the entry stays let go.
        assert_eq!(*read.get_or_compute("page", &[0], || big(0)), big(0));
        assert_eq!(read.stats().misses, 1);
        read.get_or_compute("page", &[99], || big(99));
        // Appended: the file as it was plus the new page.
        let mut appended = file.clone();
        appended.extend(read.appendix().expect("the live entries outweigh the dead"));
        let later = Memo::read("salt", &appended);
        for n in [0u8, 4, 9, 99] {
            assert_eq!(
                *later.get_or_compute("page", &[n], || unreachable!()),
                big(n.into())
            );
        }
        // Written afresh: exactly the used entries, the let-go pages read from the file again.
        let afresh = Memo::read("salt", &read.to_bytes());
        for n in [0u8, 4, 99] {
            assert_eq!(
                *afresh.get_or_compute("page", &[n], || unreachable!()),
                big(n.into())
            );
        }
        assert_eq!(
            *afresh.get_or_compute("page", &[9], || "unused".into()),
            *"unused"
        );
        // The file damaged since it was read: the let-go pages are left out, the rest saved.
        let len = on_disk.lock().unwrap().len();
        on_disk.lock().unwrap()[len - 10] ^= 1;
        let partial = Memo::read("salt", &read.to_bytes());
        assert_eq!(
            *partial.get_or_compute("page", &[99], || unreachable!()),
            big(99)
        );
        assert_eq!(
            *partial.get_or_compute("count", &[3], || unreachable!()),
            *"3"
        );
        let missing = (1..5u8)
            .filter(|&n| *partial.get_or_compute("page", &[n], || "again".into()) == *"again")
            .count();
        assert!(missing > 0, "a page from the damaged segment was saved");
        // A memo read at once (no file to read again) holds what it serves.
        let held = Memo::read("salt", &file);
        held.get_or_compute("page", &[1], || unreachable!());
        assert!(matches!(
            held.used.lock().unwrap().values().next(),
            Some(Used::Held(_))
        ));
    }

    /// A large value served from a background read is the segment's own bytes, not a copy; a
    /// small one held through the build is copied out; once every value of a segment is served
    /// and let go, the segment is freed.
    #[test]
    fn served_values_lie_in_their_segment_until_it_is_freed() {
        let big = |n: u8| format!("{n} {}", "page text ".repeat(LET_GO_FROM / 5));
        let first = Memo::new("salt");
        for n in 0..3 {
            first.get_or_compute("page", &[n], || big(n));
        }
        first.get_or_compute("count", b"x", || "7".into());
        let file = first.to_bytes();
        let read =
            Memo::read_in_background("salt", move || Some(MemoFile::from_bytes(file.clone())));
        let page = read.get_or_compute("page", &[0], || unreachable!());
        let TextRepr::InSegment { values, .. } = &page.0 else {
            panic!("a served page is read in place");
        };
        let segment = Arc::downgrade(values);
        let count = read.get_or_compute("count", b"x", || unreachable!());
        assert!(
            matches!(count.0, TextRepr::Owned(_)),
            "a held value is copied"
        );
        drop(page);
        for n in 1..3 {
            assert_eq!(
                *read.get_or_compute("page", &[n], || unreachable!()),
                big(n)
            );
        }
        assert!(segment.upgrade().is_none(), "every value served and let go");
        // And the pages are still saved, read from the file again.
        let afresh = Memo::read("salt", &read.to_bytes());
        assert_eq!(
            *afresh.get_or_compute("page", &[2], || unreachable!()),
            big(2)
        );
    }

    /// Saved sorted by key, each step's entries lie together, whatever order they were made
    /// in: a segment holds one step's values (but where two steps meet).
    #[test]
    fn a_steps_entries_lie_together() {
        let m = Memo::new("salt");
        for n in 0..50u8 {
            for step in ["help page", "rust types", "tokens"] {
                m.get_or_compute(step, &[n], || format!("{step} {n}"));
            }
        }
        let mut keys: Vec<Key> = m.used.lock().unwrap().keys().copied().collect();
        keys.sort();
        let steps: Vec<String> = keys
            .iter()
            .map(|k| {
                let value = m.value(&m.used.lock().unwrap()[k]).unwrap();
                value.split(' ').next().unwrap().to_string()
            })
            .collect();
        let runs = 1 + steps.windows(2).filter(|w| w[0] != w[1]).count();
        assert_eq!(runs, 3, "one run of keys per step: {steps:?}");
    }

    /// A segment whose values are not UTF-8, or whose lengths do not add up to its values (its
    /// check recomputed, as if written so), is dropped and the others kept; a head claiming
    /// more than the file holds is a torn tail, and nothing of its claimed size is allocated.
    #[test]
    fn a_segment_that_does_not_read_is_dropped() {
        let whole = one_per_segment(&filled());
        let first = MAGIC.len() + 32;
        // The first segment (one entry, value "5"): its value made invalid, its check redone.
        let value_at = first + SEGMENT_HEAD + ENTRY_HEAD;
        let mut bytes = whole.clone();
        bytes[value_at] = 0xff;
        let check = {
            let mut h = blake3::Hasher::new();
            h.update(&bytes[first + SEGMENT_HEAD..value_at + 1]);
            *h.finalize().as_bytes()
        };
        bytes[first + 16..first + SEGMENT_HEAD].copy_from_slice(&check);
        let read = Memo::read("salt", &bytes);
        assert_eq!(read.stats().rejected, 1);
        assert_eq!(read.stored().entries.len(), 1);
        assert!(read.appendix().is_none());
        // Lengths that do not add up to the values (the check redone): the whole segment is
        // dropped, never a value served as another's.
        let mut bytes = filled().to_bytes();
        let len_at = first + SEGMENT_HEAD + 32;
        let len = u64::from_le_bytes(bytes[len_at..len_at + 8].try_into().unwrap());
        bytes[len_at..len_at + 8].copy_from_slice(&(len + 1).to_le_bytes());
        let check = *blake3::hash(&bytes[first + SEGMENT_HEAD..]).as_bytes();
        bytes[first + 16..first + SEGMENT_HEAD].copy_from_slice(&check);
        let read = Memo::read("salt", &bytes);
        assert_eq!(read.stats().rejected, 2);
        assert!(read.stored().entries.is_empty());
        // A head claiming u64::MAX entries, or values beyond the file's end: torn.
        for (at, claim) in [(first, u64::MAX), (first + 8, 1 << 40)] {
            let mut bytes = whole.clone();
            bytes[at..at + 8].copy_from_slice(&claim.to_le_bytes());
            let read = Memo::read("salt", &bytes);
            assert_eq!(read.stats().rejected, 1);
            assert!(read.stored().entries.is_empty());
        }
    }

    /// A spilling memo holds no large value it computed, serves each again from the spill
    /// file, and saves and appends the same bytes as a memo that holds them all.
    #[test]
    fn a_spilling_memo_serves_and_saves_what_a_holding_one_does() {
        let big = |n: usize| format!("{n} {}", "page text ".repeat(SPILL_FROM / 5));
        let run = |m: &Memo| {
            for n in 0..40 {
                m.get_or_compute("page", &[n as u8], || big(n));
                m.get_or_compute("count", &[n as u8], || n.to_string());
            }
            m.get_or_compute_stamped("help", b"op", "b3:0123456789abcdef", || big(99));
        };
        let (held, spilling) = (Memo::new("salt"), Memo::new("salt").spilling());
        run(&held);
        run(&spilling);
        let spilled = spilling
            .used
            .lock()
            .unwrap()
            .values()
            .filter(|v| matches!(v, Used::Spilled(_)))
            .count();
        assert_eq!(spilled, 41, "every large value spilled, no small one");
        assert_eq!(
            &*spilling.get_or_compute("page", &[7], || unreachable!()),
            big(7)
        );
        assert_eq!(
            spilling.stats(),
            MemoStats {
                repeats: 1,
                misses: 81,
                ..held.stats()
            }
        );
        assert_eq!(spilling.to_bytes(), held.to_bytes());

        // Read back and extended: the appendix of new spilled entries is the held one's.
        let (held2, spilling2) = (
            Memo::read("salt", &held.to_bytes()),
            Memo::read("salt", &held.to_bytes()).spilling(),
        );
        for m in [&held2, &spilling2] {
            run(m);
            m.get_or_compute("page", b"new", || big(1000));
        }
        assert_eq!(spilling2.appendix(), held2.appendix());
        assert!(spilling2.appendix().is_some_and(|a| a.len() > SPILL_FROM));
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
    fn a_background_read_serves_as_a_read_and_an_appendix_extends_it() {
        let m = filled();
        let bytes = m.to_bytes();
        let given = bytes.clone();
        let read =
            Memo::read_in_background("salt", move || Some(MemoFile::from_bytes(given.clone())));
        // Used from two threads at once: both wait for the read, neither computes.
        std::thread::scope(|s| {
            let a = s.spawn(|| read.get_or_compute("count", b"hi", || unreachable!()));
            let b = read.get_or_compute("count", b"hello", || unreachable!());
            assert_eq!((&*a.join().unwrap(), &*b), ("2", "5"));
        });
        assert_eq!(read.stats().hits, 2);
        assert_eq!(read.stats().rejected, 0);
        // Intact, so what it computes is appended, as for a memo read at once.
        read.get_or_compute("count", b"new", || "3".into());
        let mut file = bytes.clone();
        file.extend(read.appendix().expect("appendable"));
        let later = Memo::read("salt", &file);
        assert_eq!(
            &*later.get_or_compute("count", b"new", || unreachable!()),
            "3"
        );
        // No file, a damaged one and a read that panics: an empty memo that computes.
        let none = Memo::read_in_background("salt", || None);
        assert_eq!(&*none.get_or_compute("count", b"hi", || "c".into()), "c");
        let mut torn = bytes.clone();
        torn.truncate(torn.len() - 3);
        let damaged =
            Memo::read_in_background("salt", move || Some(MemoFile::from_bytes(torn.clone())));
        assert!(damaged.stats().rejected > 0);
        assert!(damaged.appendix().is_none());
        let failed = Memo::read_in_background("salt", || panic!("a disk error"));
        assert_eq!(&*failed.get_or_compute("count", b"hi", || "d".into()), "d");
        assert_eq!(failed.stats().misses, 1);
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

    /// `filled`'s entries saved one to a segment, as a large memo's segments lie.
    fn one_per_segment(m: &Memo) -> Vec<u8> {
        let mut out = Vec::new();
        m.write_segments(&mut out, 1).unwrap();
        out
    }

    #[test]
    fn a_changed_or_torn_segment_is_dropped_and_recomputed() {
        let mut bytes = one_per_segment(&filled());
        // Flip the last byte of the last value: its segment's check no longer matches.
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let read = Memo::read("salt", &bytes);
        assert_eq!(read.stats().rejected, 1);
        let hello = read.get_or_compute("count", b"hello", || "5".into());
        let hi = read.get_or_compute("count", b"hi", || "2".into());
        assert_eq!((&*hello, &*hi), ("5", "2"));
        assert_eq!(read.stats().hits + read.stats().misses, 2);
        assert_eq!(read.stats().misses, 1, "one segment was intact");
        // A damaged file is written afresh, never appended to.
        assert!(read.appendix().is_none());
        // A tail cut anywhere loses at most the segment it cuts, and is never appended to.
        let whole = one_per_segment(&filled());
        for cut in MAGIC.len() + 32..whole.len() {
            let read = Memo::read("salt", &whole[..cut]);
            assert!(read.stored().entries.len() <= 2);
            if read.stats().rejected > 0 {
                assert!(read.appendix().is_none(), "cut at {cut}");
            }
        }
        // Both entries in one segment (the usual case): one damaged byte drops both.
        let mut bytes = filled().to_bytes();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let read = Memo::read("salt", &bytes);
        assert_eq!(read.stats().rejected, 2);
        assert!(read.stored().entries.is_empty());
    }

    #[test]
    fn new_entries_are_appended_until_unused_ones_outweigh_used_ones() {
        let first = filled();
        let mut file = first.to_bytes();
        // A second build uses both entries and computes a third: the appendix holds the third.
        let second = Memo::read("salt", &file);
        second.get_or_compute("count", b"hello", || unreachable!());
        second.get_or_compute("count", b"hi", || unreachable!());
        second.get_or_compute("count", b"hey", || "3".into());
        let tail = second.appendix().expect("appendable");
        assert!(!tail.is_empty() && tail.len() < file.len());
        file.extend_from_slice(&tail);
        // The file with its appendix reads as the second build's whole save does.
        let third = Memo::read("salt", &file);
        assert_eq!(third.stats().rejected, 0);
        for (input, value) in [(&b"hello"[..], "5"), (b"hi", "2"), (b"hey", "3")] {
            assert_eq!(
                &*third.get_or_compute("count", input, || unreachable!()),
                value
            );
        }
        assert_eq!(third.to_bytes(), second.to_bytes());
        // A build that uses one entry of three leaves more unused than used: written afresh.
        let fourth = Memo::read("salt", &file);
        fourth.get_or_compute("count", b"hey", || unreachable!());
        assert!(fourth.appendix().is_none());
        // Nothing computed, nothing left unused: an empty appendix.
        let fifth = Memo::read("salt", &file);
        for input in [&b"hello"[..], b"hi", b"hey"] {
            fifth.get_or_compute("count", input, || unreachable!());
        }
        assert_eq!(fifth.appendix(), Some(Vec::new()));
        // Another binary's file, or none, is never appended to.
        assert!(Memo::read("other salt", &file).appendix().is_none());
        assert!(Memo::new("salt").appendix().is_none());
    }
}
