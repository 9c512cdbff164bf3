//! An anonymous temporary file a build writes large texts to instead of holding them, reading
//! each back by its offset and length when it is needed again. A build of 10,000 tools makes
//! about 230 MB of artifacts and 85 MB of memo values; holding them all until the output folder
//! is swapped was most of its peak memory. The file lives in `TMPDIR` and is gone when the
//! process ends, even if it is killed: it never has a name. Its pages are the kernel's page
//! cache, which a disk-backed `TMPDIR` can write out and drop under pressure (a build's heap
//! cannot be, on a machine without swap).

use std::io::{Seek, SeekFrom, Write};

/// Where one spilled text lies in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spilled {
    pub at: u64,
    pub len: usize,
}

/// The spill file: texts appended, read back by place. Texts are gathered into chunks of about
/// `CHUNK` bytes before they are written (a build spills some 20,000 texts, most a few KB: one
/// write each was a tenth of a build's time in system calls).
pub struct SpillFile {
    file: std::fs::File,
    /// Bytes written to the file so far; the pending chunk starts here.
    written: u64,
    pending: Vec<u8>,
}

const CHUNK: usize = 1 << 20;

impl SpillFile {
    /// A new, empty spill file; `None` when no temporary file can be made (the caller then holds
    /// its texts, as it would without one).
    pub fn new() -> Option<SpillFile> {
        tempfile::tempfile().ok().map(|file| SpillFile {
            file,
            written: 0,
            pending: Vec::new(),
        })
    }

    /// Appends `text`; where it lies, or the error of writing the pending chunk (the caller then
    /// holds `text`; texts put before it stay readable).
    pub fn put(&mut self, text: &str) -> std::io::Result<Spilled> {
        if self.pending.len() + text.len() > CHUNK {
            self.flush()?;
        }
        let place = Spilled {
            at: self.written + self.pending.len() as u64,
            len: text.len(),
        };
        if text.len() >= CHUNK {
            // A text of a chunk or more is written as it is: never copied, and never growing
            // the pending chunk's buffer beyond a chunk for the rest of the build.
            self.write_at_end(text.as_bytes())?;
        } else {
            if self.pending.capacity() == 0 {
                self.pending.reserve_exact(CHUNK);
            }
            self.pending.extend_from_slice(text.as_bytes());
        }
        Ok(place)
    }

    /// Puts `pieces` one after another, as one text: where it lies (`put` places consecutive
    /// texts end to end).
    pub fn put_pieces(&mut self, pieces: &[String]) -> std::io::Result<Spilled> {
        let mut whole: Option<Spilled> = None;
        for piece in pieces {
            let place = self.put(piece)?;
            whole = Some(match whole {
                None => place,
                Some(w) => {
                    // Never otherwise; a place that does not follow would read back wrong.
                    if place.at != w.at + w.len as u64 {
                        return Err(std::io::Error::other("spilled pieces are not contiguous"));
                    }
                    Spilled {
                        at: w.at,
                        len: w.len + place.len,
                    }
                }
            });
        }
        match whole {
            // `get` reads a place from the file or from the pending chunk, never from both: a
            // text that began in the file and goes on in the chunk is written out with it.
            Some(w) if w.at < self.written && w.at + w.len as u64 > self.written => {
                self.flush()?;
                Ok(w)
            }
            Some(w) => Ok(w),
            None => self.put(""),
        }
    }

    fn write_at_end(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(self.written))?;
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Writes the pending chunk. On failure nothing is lost: the chunk stays pending (and
    /// readable) and a later put tries again.
    fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let written = self.write_at_end(&pending);
        // Kept on failure (a later put tries again); the buffer is reused either way.
        self.pending = pending;
        written?;
        self.pending.clear();
        Ok(())
    }

    /// The text put at `place`; `None` when reading it back fails.
    pub fn get(&mut self, place: Spilled) -> Option<String> {
        let end = place.at.checked_add(place.len as u64)?;
        let bytes = if place.at >= self.written {
            let from = usize::try_from(place.at - self.written).ok()?;
            self.pending.get(from..from + place.len)?.to_vec()
        } else if end <= self.written {
            let mut bytes = vec![0; place.len];
            read_at(&mut self.file, &mut bytes, place.at).ok()?;
            bytes
        } else {
            return None; // never a place `put` returned: it would straddle the chunk
        };
        String::from_utf8(bytes).ok()
    }
}

/// Reads `bytes.len()` bytes at `at`: one positioned read where the platform has one.
#[cfg(unix)]
fn read_at(file: &mut std::fs::File, bytes: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, bytes, at)
}

#[cfg(not(unix))]
fn read_at(file: &mut std::fs::File, bytes: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::io::Read;
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_come_back_as_they_were_put_in_any_order() {
        let mut spill = SpillFile::new().expect("a temporary file");
        let big = "x".repeat(CHUNK / 3);
        let huge = "y".repeat(CHUNK * 2);
        let texts = ["", "first", "ünïcödé ✓", &big, &big, &big, &huge, "last"];
        let places: Vec<Spilled> = texts.iter().map(|t| spill.put(t).unwrap()).collect();
        assert_eq!(places[1].at, 0, "an empty text takes no room");
        assert!(
            spill.written > 0 && !spill.pending.is_empty(),
            "some written, some pending"
        );
        assert_eq!(
            spill.pending.capacity(),
            CHUNK,
            "a huge text never grew the buffer"
        );
        for (i, t) in texts.iter().enumerate().rev() {
            assert_eq!(spill.get(places[i]).as_deref(), Some(*t), "text {i}");
        }
        // A place past the end is refused, not invented.
        let past = Spilled {
            at: places[7].at + 1,
            len: 4,
        };
        assert_eq!(spill.get(past), None);
        let straddling = Spilled {
            at: spill.written - 2,
            len: 4,
        };
        assert_eq!(spill.get(straddling), None);
    }

    /// Pieces come back as one text, whether they stay in the pending chunk, cross into the
    /// file, or are larger than a chunk; texts put before and after are untouched.
    #[test]
    fn pieces_come_back_as_one_text() {
        let mut spill = SpillFile::new().expect("a temporary file");
        let third = "ä".repeat(CHUNK / 6);
        let sets: [Vec<String>; 5] = [
            vec![],
            vec!["one".into()],
            vec!["a".into(), String::new(), "b ✓".into()],
            vec![third.clone(), third.clone(), third.clone(), "tail".into()],
            vec!["head".into(), "z".repeat(CHUNK * 2), third.clone()],
        ];
        let mut placed = Vec::new();
        for (k, pieces) in sets.iter().enumerate() {
            let before = spill.put(&format!("before {k}")).unwrap();
            let place = spill.put_pieces(pieces).unwrap();
            placed.push((before, place, format!("before {k}"), pieces.concat()));
        }
        assert!(spill.written > 0, "some pieces reached the file");
        for (before, place, before_text, whole) in placed.iter().rev() {
            assert!(
                spill.get(*place).as_deref() == Some(whole.as_str()),
                "{place:?}"
            );
            assert_eq!(spill.get(*before).as_deref(), Some(before_text.as_str()));
        }
    }
}
