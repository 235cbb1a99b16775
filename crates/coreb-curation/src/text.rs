//! What the steps share about text: the normalised text without allocating on ASCII
//! (`normalise_into`, the definition being [`coreb_base::minhash::normalise`]), its words, and
//! [`Prehashed`], the hasher of tables whose keys are already hashes. Reads and writes nothing.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use coreb_base::minhash::normalise;
use coreb_base::seeded::fmix64;

/// A `BuildHasher` for keys that are already uniform hashes (xxh3 outputs): the key is its own
/// hash, which spares SipHash on every lookup of the dedup and n-gram tables.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prehashed;

/// The [`std::hash::Hasher`] of [`Prehashed`].
#[derive(Debug, Default)]
pub struct PrehashedHasher(u64);

impl std::hash::Hasher for PrehashedHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by the u64/u128 keys; a correct fallback all the same.
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
    fn write_u128(&mut self, v: u128) {
        self.0 ^= (v as u64) ^ ((v >> 64) as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.0 ^= fmix64(u64::from(v));
    }
}

impl std::hash::BuildHasher for Prehashed {
    type Hasher = PrehashedHasher;
    fn build_hasher(&self) -> PrehashedHasher {
        PrehashedHasher(0)
    }
}

/// `char::is_whitespace` for an ASCII byte (note: includes the vertical tab, unlike
/// `u8::is_ascii_whitespace`).
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// Case of a normalised text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    /// As written.
    Kept,
    /// Lower-cased.
    Lower,
}

/// `normalise(parts.concat())` (lower-cased if asked) into `out`, without allocating when
/// every part is ASCII (NFC and Unicode lower-casing are then the identity and ASCII folding).
pub(crate) fn normalise_into(parts: &[&str], case: Case, out: &mut String) {
    out.clear();
    if !parts.iter().all(|p| p.is_ascii()) {
        let n = normalise(&parts.concat());
        out.push_str(&match case {
            Case::Kept => n,
            Case::Lower => n.to_lowercase(),
        });
        return;
    }
    // ASCII: whole runs of non-space bytes are copied at once.
    let mut pending = false;
    for p in parts {
        let b = p.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if is_space(b[i]) {
                pending |= !out.is_empty();
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && !is_space(b[i]) {
                i += 1;
            }
            if pending {
                out.push(' ');
                pending = false;
            }
            let from = out.len();
            out.push_str(&p[start..i]);
            if case == Case::Lower {
                out[from..].make_ascii_lowercase();
            }
        }
    }
}

/// The alphanumeric words of `text` (split as [`crate::words`] splits).
pub(crate) fn word_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Texts that exercise the ASCII fast paths and the Unicode fallbacks.
    pub(crate) const TEXTS: &[&str] = &[
        "",
        "   ",
        "Read A JSON   config\tfile in Python\x0b\x0c\r\n",
        "  leading and trailing  ",
        "def f(x):\n    return x['a'] + x.b  # see WWW.Example.org",
        "Größe ändern: ÄPFEL und Ǆ   café\u{0301} ΣΟΦΟΣ",
        "HTTPS://EXAMPLE.ORG/path?x=1",
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen",
        "one  two,three__four five\u{00a0}six",
    ];

    #[test]
    fn normalise_into_agrees_with_normalise() {
        for t in TEXTS {
            let mut buf = String::new();
            normalise_into(&[t, "\n", "X  y"], Case::Kept, &mut buf);
            assert_eq!(buf, normalise(&format!("{t}\nX  y")), "{t:?}");
        }
    }
}
