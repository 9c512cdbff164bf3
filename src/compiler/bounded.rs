//! A bounded in-process table of one thread's repeated pure results (a text part's token
//! count, a schema's validation): unlike the build [`Memo`](crate::compiler::memo::Memo), it
//! lives for one process and one thread, and is never saved.

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
