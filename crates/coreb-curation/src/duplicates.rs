//! Global duplicate detection of `corpus`: the same kept rows whatever the sharding.
//!
//! Two steps, as datatrove's MinHash deduplication splits them:
//! 1. [`Sketcher`]: each row on its own, wherever and in whatever batch it is read: a hash of
//!    its id, a 128-bit xxh3 of its normalised `text + "\n" + code` (the exact key), the LSH
//!    band keys of a one-permutation MinHash over its word shingles, and its shingle set (for
//!    the Jaccard check). Rows are collected in [`Sketches`] (columns; one per shard process,
//!    written to disk between processes by [`Sketches::write_to`]).
//! 2. The decision over the sketches of ALL rows, by their position in the sources (`seq`):
//!    a repeated id and an exact copy are dropped in favour of their first occurrence; then,
//!    per band, the rows are sorted by band key and each row of a bucket is a candidate of
//!    the row before it in the bucket; a candidate pair whose shingle Jaccard reaches the
//!    threshold is joined in one union-find, and each connected component keeps its first
//!    row. [`find_duplicates`] does it in one process; [`steps`] splits it into an exact
//!    step, band-range tasks and a small clustering step, so that no process holds every
//!    sketch (the engine runs them as separate processes, [`Sketches::read_selected`] reading
//!    only the columns each needs).
//!
//! The kept set is a function of the rows and their order only: not of shards, threads or
//! processes. Reads and writes nothing (the engine owns files).
//!
//! The normalisation, the parameters' check and the union-find are shared with the build's
//! `dedup` stage ([`coreb_base::minhash`]); the sketch is this module's own. Why not the
//! stage's (`coreb_stages::dedup`: 128 seeded xxh3 hashes of every shingle, 64-bit shingle hashes
//! in hash sets, every pair of a bucket a candidate), measured on the 1,048 statements of
//! `tests/ingest.rs`'s planted set (268 words each on average): its signatures take 128 hash
//! calls per shingle against one (32,464 against 253 a row), 25–127× the time (120–134 ms
//! against 1–5 ms for all 1,048, release build), which at the 11.2 M pairs of
//! `docs/corpus-scale.md` is on the order of 20 more CPU minutes at that row size; its
//! shingle sets hold 8-byte hashes in hash sets where the sketch files and band tasks hold
//! sorted 4-byte lists; and its all-pairs buckets are not datatrove's
//! neighbour pairing, which the datatrove-comparable mode reproduces. On those statements
//! both find the same 4 clusters with the same Jaccard at 4 decimals.

use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::ops::Range;

use regex::Regex;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed, xxh3_128};

use crate::pairs::{DropReason, Dropped, Pair, StepOutput};
use crate::text::{Case, normalise_into, word_spans};
use coreb_base::minhash::Params;
use coreb_base::seeded::fmix64;
use coreb_base::shard::id_hash;

pub mod steps;

/// How a text is simplified before it is cut into word shingles for near-duplicate detection
/// (the exact key always keeps case and punctuation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NearNormalisation {
    /// Lower-cased; the words are the runs of letters and digits (so punctuation separates
    /// words and is dropped; digits are kept: `obj12` and `obj45` differ).
    #[default]
    None,
    /// datatrove's `simplify_text` at its defaults, so that a datatrove-curated set can be
    /// reproduced: lower-cased, every run of digits (with one decimal part, `3.14`) folded to
    /// `0`, datatrove's punctuation set turned into spaces, whitespace folded, combining marks
    /// removed after NFD; the words are split on spaces (datatrove's spaCy tokenizer also
    /// splits a few contractions, such as `dont`, which this does not).
    Datatrove,
}

/// `[dedup]` of a corpus manifest: exact and near-duplicate removal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorpusDedupConfig {
    /// Words per shingle.
    pub shingle_words: usize,
    /// MinHash bins (signature length).
    pub num_perm: usize,
    /// LSH bands; `num_perm` must be a multiple of it.
    pub bands: usize,
    /// Shingle Jaccard at or above which two rows are near-duplicates.
    pub threshold: f64,
    /// Seed of the MinHash.
    pub seed: u64,
    /// Text simplification before shingling.
    pub normalise: NearNormalisation,
}

impl Default for CorpusDedupConfig {
    fn default() -> Self {
        let Params { shingle_words, num_perm, bands, threshold, seed } = Params::default();
        CorpusDedupConfig {
            shingle_words,
            num_perm,
            bands,
            threshold,
            seed,
            normalise: NearNormalisation::None,
        }
    }
}

impl CorpusDedupConfig {
    /// The parameters as the shared MinHash pieces take them.
    pub fn params(&self) -> Params {
        Params {
            shingle_words: self.shingle_words,
            num_perm: self.num_perm,
            bands: self.bands,
            threshold: self.threshold,
            seed: self.seed,
        }
    }

    /// Check that the parameters fit together ([`Params::validate`]).
    pub fn validate(&self) -> Result<(), String> {
        self.params().validate()
    }

    fn rows_per_band(&self) -> usize {
        (self.num_perm / self.bands.max(1)).max(1)
    }
}

/// Sketches of rows, column by column (see the module doc). Rows appear in the order they
/// were added; `seq` is each row's position in the whole input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sketches {
    bands: usize,
    /// The bands whose keys `keys` holds: all of them, unless read by [`Sketches::read_selected`]
    /// for a range of bands.
    key_bands: Range<usize>,
    /// Rows of the whole input (every shard process reads them all).
    input_rows: u64,
    seq: Vec<u64>,
    id_hash: Vec<u64>,
    exact: Vec<u128>,
    /// Index of the row's near sketch, or [`NO_NEAR`] when it was already known to be a
    /// duplicate id or an exact copy where it was sketched.
    near: Vec<u32>,
    /// `key_bands.len()` keys per near sketch.
    keys: Vec<u32>,
    /// End of each near sketch's shingles in `shingles`.
    shingle_ends: Vec<u64>,
    /// Sorted, distinct 32-bit shingle hashes.
    shingles: Vec<u32>,
    /// Where the shingle hashes start in the file they were left in ([`Sketches::read_selected`]).
    shingles_at: Option<u64>,
    id_ends: Vec<u64>,
    ids: String,
}

const NO_NEAR: u32 = u32::MAX;

impl Sketches {
    /// Empty sketches for `config`.
    pub fn new(config: &CorpusDedupConfig) -> Sketches {
        Sketches { bands: config.bands, key_bands: 0..config.bands, ..Sketches::default() }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.seq.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    /// Record how many rows the whole input has (every part of one input must agree).
    pub fn set_input_rows(&mut self, rows: u64) {
        self.input_rows = rows;
    }

    /// Rows of the whole input.
    pub fn input_rows(&self) -> u64 {
        self.input_rows
    }

    /// Take these sketches as a part of an input of `rows` rows: a shard process counts the
    /// input's rows only up to where it stopped reading, and the input's count is taken from
    /// all the parts. An error when the part counted more.
    pub fn cover(&mut self, rows: u64) -> Result<(), SketchError> {
        self.input_rows = covered(self.input_rows, rows)?;
        Ok(())
    }

    /// The position in the input of row `row`.
    pub fn seq(&self, row: usize) -> u64 {
        self.seq[row]
    }

    /// The id of row `row`.
    pub fn id(&self, row: usize) -> &str {
        let start = if row == 0 { 0 } else { self.id_ends[row - 1] as usize };
        &self.ids[start..self.id_ends[row] as usize]
    }

    /// The id hash of row `row`.
    pub fn id_hash(&self, row: usize) -> u64 {
        self.id_hash[row]
    }

    /// The exact key of row `row`.
    pub fn exact(&self, row: usize) -> u128 {
        self.exact[row]
    }

    fn near_sketch(&self, row: usize) -> Option<(&[u32], &[u32])> {
        self.near_index(row).map(|n| self.near_sketch_at(n))
    }

    /// The band keys (of the bands read) and shingle set of near sketch `n`.
    fn near_sketch_at(&self, n: u32) -> (&[u32], &[u32]) {
        let n = n as usize;
        let start = if n == 0 { 0 } else { self.shingle_ends[n - 1] as usize };
        let width = self.key_bands.len();
        (
            &self.keys[n * width..(n + 1) * width],
            self.shingles.get(start..self.shingle_ends[n] as usize).unwrap_or_default(),
        )
    }

    /// Append row `row` of `other`, with its near sketch only if `near` (a row already known
    /// to be a duplicate id or exact copy needs none).
    pub fn push_from(&mut self, other: &Sketches, row: usize, near: bool) {
        self.seq.push(other.seq[row]);
        self.id_hash.push(other.id_hash[row]);
        self.exact.push(other.exact[row]);
        self.ids.push_str(other.id(row));
        self.id_ends.push(self.ids.len() as u64);
        match other.near_sketch(row).filter(|_| near) {
            Some((keys, shingles)) => {
                self.near.push((self.shingle_ends.len()) as u32);
                self.keys.extend_from_slice(keys);
                self.shingles.extend_from_slice(shingles);
                self.shingle_ends.push(self.shingles.len() as u64);
            }
            None => self.near.push(NO_NEAR),
        }
    }

    /// Write in a versioned little-endian binary layout ([`Sketches::read_from`] reads it).
    /// Only whole sketches are written (not those read in part).
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        if self.key_bands != (0..self.bands)
            || self.shingles_at.is_some()
            || self.id_ends.len() != self.seq.len()
        {
            return Err(std::io::Error::other(
                "only whole sketches can be written, not some of their columns",
            ));
        }
        w.write_all(SKETCH_MAGIC)?;
        w.write_all(&(self.bands as u64).to_le_bytes())?;
        w.write_all(&self.input_rows.to_le_bytes())?;
        fn column<T: Copy, const N: usize>(
            w: &mut impl Write,
            values: &[T],
            bytes: impl Fn(T) -> [u8; N],
        ) -> std::io::Result<()> {
            w.write_all(&(values.len() as u64).to_le_bytes())?;
            let mut buf = Vec::with_capacity(values.len().min(1 << 16) * N);
            for chunk in values.chunks(1 << 16) {
                buf.clear();
                for &v in chunk {
                    buf.extend_from_slice(&bytes(v));
                }
                w.write_all(&buf)?;
            }
            Ok(())
        }
        column(w, &self.seq, u64::to_le_bytes)?;
        column(w, &self.id_hash, u64::to_le_bytes)?;
        column(w, &self.exact, u128::to_le_bytes)?;
        column(w, &self.near, u32::to_le_bytes)?;
        column(w, &self.keys, u32::to_le_bytes)?;
        column(w, &self.shingle_ends, u64::to_le_bytes)?;
        column(w, &self.shingles, u32::to_le_bytes)?;
        column(w, &self.id_ends, u64::to_le_bytes)?;
        column(w, self.ids.as_bytes(), |b: u8| [b])?;
        Ok(())
    }

    /// Read what [`Sketches::write_to`] wrote; a wrong magic, a truncated or inconsistent file
    /// is an error.
    pub fn read_from(r: &mut impl Read) -> Result<Sketches, SketchError> {
        read_columns(r, &Selection::ALL, &mut |r, n| {
            std::io::copy(&mut r.take(n), &mut std::io::sink()).map(drop)
        })
    }

    /// Read only the columns `selection` asks for, seeking past the others: the row columns,
    /// and per [`Selection`] the ids, the keys of some bands and the shingle sets. Shingle
    /// sets left on disk are read row by row by [`Sketches::read_shingles`].
    pub fn read_selected<R: Read + Seek>(
        r: &mut R,
        selection: &Selection,
    ) -> Result<Sketches, SketchError> {
        read_columns(r, selection, &mut |r, n| r.seek_relative(n as i64))
    }

    /// Read near sketch `near`'s shingle set, left in `file` by [`Sketches::read_selected`],
    /// into `out`.
    #[cfg(unix)]
    pub fn read_shingles(
        &self,
        file: &std::fs::File,
        near: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), SketchError> {
        use std::os::unix::fs::FileExt;
        let n = near as usize;
        let (start, end) =
            (if n == 0 { 0 } else { self.shingle_ends[n - 1] }, self.shingle_ends[n]);
        let Some(at) = self.shingles_at else {
            return Err(SketchError::Format("the shingle sets were not left on disk".into()));
        };
        let mut bytes = vec![0u8; ((end - start) * 4) as usize];
        file.read_exact_at(&mut bytes, at + start * 4)?;
        out.clear();
        out.extend(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        Ok(())
    }

    /// The near sketch index of row `row` (`None` for a row that has none).
    pub(crate) fn near_index(&self, row: usize) -> Option<u32> {
        Some(self.near[row]).filter(|&n| n != NO_NEAR)
    }
}

/// Which columns [`Sketches::read_selected`] loads (the row positions and near-sketch indices
/// always).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The id hashes, exact keys and ids.
    pub ids: bool,
    /// The keys of these bands (`None`: of every band).
    pub bands: Option<Range<usize>>,
    /// The shingle sets; otherwise their place in the file is remembered.
    pub shingles: bool,
}

impl Selection {
    /// Every column.
    pub const ALL: Selection = Selection { ids: true, bands: None, shingles: true };
}

fn read_columns<R: Read>(
    r: &mut R,
    selection: &Selection,
    skip: &mut dyn FnMut(&mut R, u64) -> std::io::Result<()>,
) -> Result<Sketches, SketchError> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != SKETCH_MAGIC {
        return Err(SketchError::Format(
            "not a coreb sketch file (or another format version)".into(),
        ));
    }
    fn u64_of(r: &mut impl Read) -> std::io::Result<u64> {
        let mut b = [0u8; 8];
        r.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    /// The values `i` of the next column for which `keep(i)`, after its length; `pos` moves
    /// past it.
    fn column<R: Read, T, const N: usize>(
        r: &mut R,
        pos: &mut u64,
        from: impl Fn([u8; N]) -> T,
        mut keep: impl FnMut(usize) -> bool,
    ) -> std::io::Result<Vec<T>> {
        let n = u64_of(r)? as usize;
        let mut out = Vec::with_capacity(n.min(1 << 24));
        let mut buf = vec![0u8; (1 << 16) * N];
        let mut done = 0;
        while done < n {
            let take = (n - done).min(1 << 16);
            r.read_exact(&mut buf[..take * N])?;
            for (i, c) in buf[..take * N].chunks_exact(N).enumerate() {
                if keep(done + i) {
                    out.push(from(c.try_into().expect("chunk of N bytes")));
                }
            }
            done += take;
        }
        *pos += 8 + (n * N) as u64;
        Ok(out)
    }
    /// The keys of bands `key_bands` from the next column (`bands` keys per near sketch), a
    /// chunk of whole sketches at a time.
    fn band_keys<R: Read>(
        r: &mut R,
        pos: &mut u64,
        bands: usize,
        key_bands: &Range<usize>,
    ) -> std::io::Result<Vec<u32>> {
        let n = u64_of(r)? as usize;
        let rows = n / bands.max(1);
        if rows * bands != n {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the band keys are not whole sketches",
            ));
        }
        let mut out = Vec::with_capacity((rows * key_bands.len()).min(1 << 24));
        let per = (1 << 16) / bands.max(1) + 1;
        let mut buf = vec![0u8; per * bands * 4];
        let mut done = 0;
        while done < rows {
            let take = (rows - done).min(per);
            r.read_exact(&mut buf[..take * bands * 4])?;
            for sketch in buf[..take * bands * 4].chunks_exact(bands * 4) {
                out.extend(
                    sketch[key_bands.start * 4..key_bands.end * 4]
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
            }
            done += take;
        }
        *pos += 8 + (n * 4) as u64;
        Ok(out)
    }
    /// Skip the next column of `width`-byte values; returns where its values start.
    fn skip_column<R: Read>(
        r: &mut R,
        pos: &mut u64,
        width: u64,
        skip: &mut dyn FnMut(&mut R, u64) -> std::io::Result<()>,
    ) -> std::io::Result<u64> {
        let n = u64_of(r)?;
        skip(r, n * width)?;
        *pos += 8 + n * width;
        Ok(*pos - n * width)
    }
    let all = |_| true;
    let bands = u64_of(r)? as usize;
    let input_rows = u64_of(r)?;
    let key_bands = selection.bands.clone().unwrap_or(0..bands);
    if key_bands.end > bands {
        return Err(SketchError::Bands { expected: key_bands.end, found: bands });
    }
    let mut pos = 24;
    let p = &mut pos;
    let seq = column(r, p, u64::from_le_bytes, all)?;
    let (id_hash, exact) = if selection.ids {
        (column(r, p, u64::from_le_bytes, all)?, column(r, p, u128::from_le_bytes, all)?)
    } else {
        skip_column(r, p, 8, skip)?;
        skip_column(r, p, 16, skip)?;
        (Vec::new(), Vec::new())
    };
    let near = column(r, p, u32::from_le_bytes, all)?;
    let keys = if key_bands == (0..bands) {
        column(r, p, u32::from_le_bytes, all)?
    } else {
        band_keys(r, p, bands, &key_bands)?
    };
    let shingle_ends = column(r, p, u64::from_le_bytes, all)?;
    let (shingles, shingles_at) = if selection.shingles {
        (column(r, p, u32::from_le_bytes, all)?, None)
    } else {
        (Vec::new(), Some(skip_column(r, p, 4, skip)?))
    };
    let (id_ends, ids) = if selection.ids {
        let ends = column(r, p, u64::from_le_bytes, all)?;
        (
            ends,
            String::from_utf8(column(r, p, |b: [u8; 1]| b[0], all)?)
                .map_err(|_| SketchError::Format("ids are not UTF-8".into()))?,
        )
    } else {
        (Vec::new(), String::new())
    };
    let s = Sketches {
        bands,
        key_bands,
        input_rows,
        seq,
        id_hash,
        exact,
        near,
        keys,
        shingle_ends,
        shingles,
        shingles_at,
        id_ends,
        ids,
    };
    let rows = s.seq.len();
    let near_rows = s.shingle_ends.len();
    let ids_fit = !selection.ids
        || ([s.id_hash.len(), s.exact.len(), s.id_ends.len()].iter().all(|&n| n == rows)
            && s.id_ends.windows(2).all(|w| w[0] <= w[1])
            && s.id_ends.last().is_none_or(|&e| e as usize == s.ids.len())
            && s.id_ends.iter().all(|&e| s.ids.is_char_boundary(e as usize)));
    let consistent = ids_fit
        && s.near.len() == rows
        && s.keys.len() == near_rows * s.key_bands.len()
        && s.near.iter().all(|&n| n == NO_NEAR || (n as usize) < near_rows)
        && s.shingle_ends.windows(2).all(|w| w[0] <= w[1])
        && (!selection.shingles
            || s.shingle_ends.last().is_none_or(|&e| e as usize == s.shingles.len()))
        && s.seq.iter().all(|&q| q < input_rows);
    if !consistent {
        return Err(SketchError::Format("its columns do not fit together".into()));
    }
    Ok(s)
}

const SKETCH_MAGIC: &[u8; 8] = b"CRBSKT01";

/// The columns of a sketch file in file order, and the bytes of one value of each.
const COLUMN_WIDTHS: [u64; 9] = [8, 8, 16, 4, 4, 8, 4, 8, 1];
const SEQ: usize = 0;
const NEAR: usize = 3;
const KEYS: usize = 4;
const SHINGLE_ENDS: usize = 5;
const SHINGLES: usize = 6;
const ID_ENDS: usize = 7;
const IDS: usize = 8;

/// A sketch file ([`Sketches::write_to`]) read as streams of its columns, so that a step
/// that walks every row (the clustering step, the merge's names of kept rows) holds none of
/// them: only where each column is.
#[cfg(unix)]
pub struct SketchFile {
    file: std::fs::File,
    bands: usize,
    input_rows: u64,
    /// Where the values of each column start and how many there are.
    columns: [(u64, u64); 9],
}

#[cfg(unix)]
impl SketchFile {
    /// Check the file's header and the lengths of its columns against its size.
    pub fn open(file: std::fs::File) -> Result<SketchFile, SketchError> {
        use std::os::unix::fs::FileExt;
        let size = file.metadata()?.len();
        let mut head = [0u8; 24];
        file.read_exact_at(&mut head, 0)?;
        if &head[..8] != SKETCH_MAGIC {
            return Err(SketchError::Format(
                "not a coreb sketch file (or another format version)".into(),
            ));
        }
        let bands = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
        let input_rows = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes"));
        let mut columns = [(0, 0); 9];
        let mut at = 24u64;
        for (c, &width) in COLUMN_WIDTHS.iter().enumerate() {
            let mut n = [0u8; 8];
            file.read_exact_at(&mut n, at)?;
            let n = u64::from_le_bytes(n);
            let end = n
                .checked_mul(width)
                .and_then(|b| b.checked_add(at + 8))
                .filter(|&e| e <= size)
                .ok_or_else(|| {
                    SketchError::Format("a column runs past the end of the file".into())
                })?;
            columns[c] = (at + 8, n);
            at = end;
        }
        if at != size {
            return Err(SketchError::Format("bytes past the last column".into()));
        }
        let rows = columns[SEQ].1;
        let fits = [1, 2, NEAR, ID_ENDS].iter().all(|&c| columns[c].1 == rows)
            && Some(columns[KEYS].1) == columns[SHINGLE_ENDS].1.checked_mul(bands);
        if !fits {
            return Err(SketchError::Format("its columns do not fit together".into()));
        }
        Ok(SketchFile { file, bands: bands as usize, input_rows, columns })
    }

    /// Rows of the whole input.
    pub fn input_rows(&self) -> u64 {
        self.input_rows
    }

    /// Take these sketches as a part of an input of `rows` rows: a shard process counts the
    /// input's rows only up to where it stopped reading, and the input's count is taken from
    /// all the parts. An error when the part counted more.
    pub fn cover(&mut self, rows: u64) -> Result<(), SketchError> {
        self.input_rows = covered(self.input_rows, rows)?;
        Ok(())
    }

    /// Rows held.
    pub fn rows(&self) -> u64 {
        self.columns[SEQ].1
    }

    /// Shingles held (of every near sketch together).
    pub fn shingle_count(&self) -> u64 {
        self.columns[SHINGLES].1
    }

    /// The bands the sketches were made with.
    pub fn bands(&self) -> usize {
        self.bands
    }

    /// Each row's position in the input, id hash, exact key and whether it has a near
    /// sketch, in row order.
    pub fn for_each_key(
        &self,
        mut f: impl FnMut(u64, u64, u128, bool) -> Result<(), SketchError>,
    ) -> Result<(), SketchError> {
        let (mut seqs, mut hashes, mut exact, mut nears) =
            (self.stream(SEQ), self.stream(1), self.stream(2), self.stream(NEAR));
        while let Some(seq) = seqs.next()? {
            let fits = |v: Option<u64>| {
                v.ok_or_else(|| SketchError::Format("its columns do not fit together".into()))
            };
            let (hash, near) = (fits(hashes.next()?)?, fits(nears.next()?)?);
            let (lo, hi) = (fits(exact.next()?)?, fits(exact.next()?)?);
            if seq >= self.input_rows {
                return Err(SketchError::Coverage { seq, what: "is out of range" });
            }
            f(seq, hash, u128::from(lo) | u128::from(hi) << 64, near != u64::from(NO_NEAR))?;
        }
        Ok(())
    }

    /// The id of row `row`.
    pub fn id(&self, row: u64) -> Result<String, SketchError> {
        use std::os::unix::fs::FileExt;
        let (ends, n) = self.columns[ID_ENDS];
        if row >= n {
            return Err(SketchError::Format(format!("no row {row}")));
        }
        let mut b = [0u8; 16];
        let (at, bytes) =
            if row == 0 { (ends, &mut b[8..]) } else { (ends + (row - 1) * 8, &mut b[..]) };
        self.file.read_exact_at(bytes, at)?;
        let (start, end) = (
            u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
            u64::from_le_bytes(b[8..].try_into().expect("8 bytes")),
        );
        if start > end || end > self.columns[IDS].1 {
            return Err(SketchError::Format("its ids do not fit together".into()));
        }
        let mut id = vec![0u8; (end - start) as usize];
        self.file.read_exact_at(&mut id, self.columns[IDS].0 + start)?;
        String::from_utf8(id).map_err(|_| SketchError::Format("ids are not UTF-8".into()))
    }

    fn stream(&self, column: usize) -> ColumnStream<'_> {
        let (at, n) = self.columns[column];
        ColumnStream {
            file: &self.file,
            at,
            left: n,
            width: COLUMN_WIDTHS[column] as usize,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Each row's position in the input and where its shingle set is (`(start, len)` in
    /// shingles; `None` for a row without a near sketch), in row order.
    pub fn for_each_near(
        &self,
        mut f: impl FnMut(u64, Option<(u64, u32)>) -> Result<(), SketchError>,
    ) -> Result<(), SketchError> {
        let (mut seqs, mut nears, mut ends) =
            (self.stream(SEQ), self.stream(NEAR), self.stream(SHINGLE_ENDS));
        let (mut next_near, mut start) = (0u64, 0u64);
        while let Some(seq) = seqs.next()? {
            let near = nears
                .next()?
                .ok_or_else(|| SketchError::Format("its columns do not fit together".into()))?;
            if seq >= self.input_rows {
                return Err(SketchError::Coverage { seq, what: "is out of range" });
            }
            if near == u64::from(NO_NEAR) {
                f(seq, None)?;
                continue;
            }
            let end = ends
                .next()?
                .filter(|&e| near == next_near && e >= start && e <= self.columns[SHINGLES].1);
            let end = end.ok_or_else(|| {
                SketchError::Format("the near sketches are not in row order".into())
            })?;
            f(seq, Some((start, (end - start) as u32)))?;
            (next_near, start) = (next_near + 1, end);
        }
        Ok(())
    }

    /// The position in the input and the id of each row for which `wanted(seq)`, in row order.
    pub fn for_each_id(
        &self,
        wanted: impl Fn(u64) -> bool,
        mut f: impl FnMut(u64, &str) -> Result<(), SketchError>,
    ) -> Result<(), SketchError> {
        let (mut seqs, mut ends, mut ids) =
            (self.stream(SEQ), self.stream(ID_ENDS), self.stream(IDS));
        let (mut start, mut id) = (0u64, Vec::new());
        while let Some(seq) = seqs.next()? {
            let end = ends
                .next()?
                .filter(|&e| e >= start && e <= self.columns[IDS].1)
                .ok_or_else(|| SketchError::Format("its ids do not fit together".into()))?;
            let want = wanted(seq);
            ids.bytes(end - start, want.then_some(&mut id))?;
            if want {
                f(
                    seq,
                    std::str::from_utf8(&id)
                        .map_err(|_| SketchError::Format("ids are not UTF-8".into()))?,
                )?;
            }
            start = end;
        }
        Ok(())
    }

    /// The `len` shingles from shingle `start` (of [`SketchFile::for_each_near`]) into `out`.
    pub fn read_shingles(
        &self,
        start: u64,
        len: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), SketchError> {
        use std::os::unix::fs::FileExt;
        if start + u64::from(len) > self.columns[SHINGLES].1 {
            return Err(SketchError::Format("a shingle set runs past its column".into()));
        }
        let mut bytes = vec![0u8; len as usize * 4];
        self.file.read_exact_at(&mut bytes, self.columns[SHINGLES].0 + start * 4)?;
        out.clear();
        out.extend(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        Ok(())
    }
}

/// The values of one column of a [`SketchFile`], read in chunks.
#[cfg(unix)]
struct ColumnStream<'a> {
    file: &'a std::fs::File,
    at: u64,
    left: u64,
    width: usize,
    buf: Vec<u8>,
    pos: usize,
}

#[cfg(unix)]
impl ColumnStream<'_> {
    fn fill(&mut self) -> Result<bool, SketchError> {
        use std::os::unix::fs::FileExt;
        if self.pos < self.buf.len() {
            return Ok(true);
        }
        if self.left == 0 {
            return Ok(false);
        }
        let take = self.left.min((1 << 16) / self.width as u64);
        self.buf.resize(take as usize * self.width, 0);
        self.file.read_exact_at(&mut self.buf, self.at)?;
        self.at += self.buf.len() as u64;
        self.left -= take;
        self.pos = 0;
        Ok(true)
    }

    /// The next value (of a column of 4- or 8-byte values; half of a 16-byte one).
    fn next(&mut self) -> Result<Option<u64>, SketchError> {
        if !self.fill()? {
            return Ok(None);
        }
        // A 16-byte value comes as two calls, its low half first.
        let step = self.width.min(8);
        let b = &self.buf[self.pos..self.pos + step];
        self.pos += step;
        Ok(Some(match b.len() {
            4 => u64::from(u32::from_le_bytes(b.try_into().expect("4 bytes"))),
            _ => u64::from_le_bytes(b.try_into().expect("8 bytes")),
        }))
    }

    /// Move past the next `n` bytes (of a column of bytes), copying them into `out` if given.
    fn bytes(&mut self, mut n: u64, mut out: Option<&mut Vec<u8>>) -> Result<(), SketchError> {
        if let Some(o) = out.as_deref_mut() {
            o.clear();
        }
        while n > 0 {
            if !self.fill()? {
                return Err(SketchError::Format("its ids run past their column".into()));
            }
            let k = (self.buf.len() - self.pos).min(n as usize);
            if let Some(o) = out.as_deref_mut() {
                o.extend_from_slice(&self.buf[self.pos..self.pos + k]);
            }
            self.pos += k;
            n -= k as u64;
        }
        Ok(())
    }
}

/// Why sketches cannot be read or deduplicated.
#[derive(Debug, thiserror::Error)]
pub enum SketchError {
    /// Reading failed.
    #[error("reading sketches: {0}")]
    Io(#[from] std::io::Error),
    /// Not a sketch file of this version, or a corrupt one.
    #[error("corrupt sketches: {0}")]
    Format(String),
    /// The sketches do not cover every row of the input exactly once.
    #[error("row {seq} of the input {what}")]
    Coverage {
        /// The row's position in the input.
        seq: u64,
        /// `is missing`, `appears twice`, `is out of range`.
        what: &'static str,
    },
    /// Parts that read inputs of different sizes.
    #[error("the sketches disagree on the number of input rows: {0} and {1}")]
    InputRows(u64, u64),
    /// Sketches made with other parameters.
    #[error("sketches made with {found} bands, the manifest asks for {expected}")]
    Bands {
        /// In the manifest.
        expected: usize,
        /// In the sketches.
        found: usize,
    },
}

/// Computes [`Sketches`] row by row; reuses its buffers (no allocation per ASCII row).
#[derive(Debug)]
pub struct Sketcher {
    config: CorpusDedupConfig,
    probes: Vec<u32>,
    text: String,
    simple: String,
    words: Vec<u8>,
    shingles: Vec<u64>,
    short: Vec<u32>,
    sig: Vec<u32>,
    filled: Vec<bool>,
}

impl Sketcher {
    /// A sketcher for `config` (assumed valid).
    pub fn new(config: &CorpusDedupConfig) -> Sketcher {
        Sketcher {
            probes: (0..config.num_perm)
                .flat_map(|i| {
                    (0..PROBES)
                        .map(move |t| probe(config.seed, config.num_perm, i, t as u64) as u32)
                })
                .collect(),
            config: config.clone(),
            text: String::new(),
            simple: String::new(),
            words: Vec::new(),
            shingles: Vec::new(),
            short: Vec::new(),
            sig: Vec::new(),
            filled: Vec::new(),
        }
    }

    /// Sketch one row (at position `seq` of the input) into `out`.
    pub fn sketch(&mut self, seq: u64, id: &str, text: &str, code: &str, out: &mut Sketches) {
        normalise_into(&[text, "\n", code], Case::Kept, &mut self.text);
        out.seq.push(seq);
        out.id_hash.push(id_hash(id));
        out.exact.push(xxh3_128(self.text.as_bytes()));
        out.ids.push_str(id);
        out.id_ends.push(out.ids.len() as u64);
        match self.config.normalise {
            NearNormalisation::None => {
                if self.text.is_ascii() {
                    self.text.make_ascii_lowercase();
                } else {
                    self.text = self.text.to_lowercase();
                }
                if self.text.is_ascii() {
                    // The same words as `word_spans`, split on bytes.
                    let words = self
                        .text
                        .as_bytes()
                        .split(|b| !b.is_ascii_alphanumeric())
                        .filter(|w| !w.is_empty());
                    shingle_hashes(
                        words,
                        self.config.shingle_words,
                        &mut self.words,
                        &mut self.shingles,
                    );
                } else {
                    shingle_hashes(
                        word_spans(&self.text).map(str::as_bytes),
                        self.config.shingle_words,
                        &mut self.words,
                        &mut self.shingles,
                    );
                }
            }
            NearNormalisation::Datatrove => {
                simplify_like_datatrove(&self.text, &mut self.simple);
                shingle_hashes(
                    self.simple.split(' ').filter(|w| !w.is_empty()).map(str::as_bytes),
                    self.config.shingle_words,
                    &mut self.words,
                    &mut self.shingles,
                );
            }
        }
        one_permutation_signature(
            &self.shingles,
            self.config.num_perm,
            self.config.seed,
            &self.probes,
            &mut self.sig,
            &mut self.filled,
        );
        self.short.clear();
        self.short.extend(self.shingles.iter().map(|&h| h as u32));
        self.short.sort_unstable();
        self.short.dedup();
        out.near.push(out.shingle_ends.len() as u32);
        for (b, band) in self.sig.chunks(self.config.rows_per_band()).enumerate() {
            let key = band.iter().fold(
                fmix64(self.config.seed ^ (b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                |h, &v| fmix64(h ^ u64::from(v)),
            );
            out.keys.push(key as u32);
        }
        out.shingles.extend_from_slice(&self.short);
        out.shingle_ends.push(out.shingles.len() as u64);
    }
}

/// datatrove's punctuation (`datatrove.utils.text.PUNCTUATION`, turned into spaces by
/// `simplify_text`) beyond ASCII punctuation and control characters.
const DATATROVE_PUNCTUATION: &str = "—”％１〈、━【「」，】；“《„’∶´．（–？！：～«〉》）。…►»";

fn datatrove_punctuation(c: char) -> bool {
    let u = c as u32;
    c.is_ascii_punctuation()
        || (u < 32 && c != '\t' && c != '\n')
        || (127..160).contains(&u)
        || (u > 127 && DATATROVE_PUNCTUATION.contains(c))
}

/// `datatrove.utils.text.simplify_text(text)` at its default `TextNormConfig` into `out`:
/// lower-case; `\p{Nd}+([.,،٫⎖⎗⎘]\p{Nd}+)?` → `0`; punctuation → space; whitespace runs → one
/// space, trimmed; NFD with nonspacing marks removed. ASCII text takes a fast path (checked
/// against the general one in the tests).
fn simplify_like_datatrove(text: &str, out: &mut String) {
    out.clear();
    if !text.is_ascii() {
        simplify_general(text, out);
        return;
    }
    fn push(out: &mut String, c: char, pending: &mut bool) {
        if *pending && !out.is_empty() {
            out.push(' ');
        }
        *pending = false;
        out.push(c);
    }
    let b = text.as_bytes();
    let mut pending = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < b.len() && (b[i] == b'.' || b[i] == b',') && b[i + 1].is_ascii_digit() {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            push(out, '0', &mut pending);
            continue;
        }
        if c.is_ascii_alphabetic() {
            push(out, char::from(c.to_ascii_lowercase()), &mut pending);
        } else if c == b' ' || c.is_ascii_punctuation() || c.is_ascii_control() {
            // ASCII controls (tab and newline included) are whitespace or punctuation here.
            pending = true;
        }
        i += 1;
    }
}

fn simplify_general(text: &str, out: &mut String) {
    static NUMBERS: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    static MARKS: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let numbers =
        NUMBERS.get_or_init(|| Regex::new(r"\p{Nd}+([.,،٫⎖⎗⎘]\p{Nd}+)?").expect("valid pattern"));
    let marks = MARKS.get_or_init(|| Regex::new(r"\p{Mn}").expect("valid pattern"));
    let lower = text.to_lowercase();
    let folded = numbers.replace_all(&lower, "0");
    let spaced: String =
        folded.chars().map(|c| if datatrove_punctuation(c) { ' ' } else { c }).collect();
    let words = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    let nfd: String = words.nfd().collect();
    out.push_str(marks.replace_all(&nfd, "").trim());
}

/// Hashes of the `k`-word shingles of `words` (one shingle of all words when there are at
/// most `k`). A shingle hashes the xxh3 hashes of its words, so no shingle string is built.
fn shingle_hashes<'a>(
    words: impl Iterator<Item = &'a [u8]>,
    k: usize,
    buf: &mut Vec<u8>,
    out: &mut Vec<u64>,
) {
    buf.clear();
    for w in words {
        buf.extend_from_slice(&xxh3_64(w).to_le_bytes());
    }
    out.clear();
    let n = buf.len() / 8;
    let k = k.max(1);
    if n <= k {
        out.push(xxh3_64_with_seed(buf, n as u64));
    } else {
        out.extend(buf.windows(8 * k).step_by(8).map(|w| xxh3_64_with_seed(w, k as u64)));
    }
}

/// One-permutation MinHash with optimal densification (Shrivastava, ICML 2017): each shingle
/// hash is mixed once, its high bits choose one of `bins` bins and its low 32 bits compete for
/// that bin's minimum; an empty bin `i` takes the value of the first filled bin of a probe
/// sequence that depends only on `(seed, i, attempt)` ([`probe`]; the first [`PROBES`] of each
/// bin come precomputed in `probes` when given), so two sets agree on bin `i` with probability
/// ≈ their Jaccard similarity. (Densification by rotation is cheaper but lost about 1 % of
/// the near-duplicates of the benchmark corpus.)
fn one_permutation_signature(
    shingles: &[u64],
    bins: usize,
    seed: u64,
    probes: &[u32],
    sig: &mut Vec<u32>,
    filled: &mut Vec<bool>,
) {
    sig.clear();
    sig.resize(bins, u32::MAX);
    filled.clear();
    filled.resize(bins, false);
    for &s in shingles {
        let x = fmix64(s ^ seed);
        let bin = ((u128::from(x) * bins as u128) >> 64) as usize;
        sig[bin] = sig[bin].min(x as u32);
        filled[bin] = true;
    }
    if shingles.is_empty() {
        return;
    }
    for i in 0..bins {
        if filled[i] {
            continue;
        }
        let mut attempt = 0usize;
        let j = loop {
            let j = if attempt < PROBES && probes.len() == bins * PROBES {
                probes[i * PROBES + attempt] as usize
            } else {
                probe(seed, bins, i, attempt as u64)
            };
            if filled[j] {
                break j;
            }
            attempt += 1;
        };
        sig[i] = sig[j];
    }
}

/// Densification probes precomputed per bin; later ones are computed when needed.
const PROBES: usize = 8;

/// The bin that empty bin `i` looks at on its `attempt`-th probe.
fn probe(seed: u64, bins: usize, i: usize, attempt: u64) -> usize {
    let x = fmix64(seed ^ ((i as u64) << 32 | attempt).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    ((u128::from(x) * bins as u128) >> 64) as usize
}

/// Jaccard similarity of two sorted, distinct hash lists, or 0 as soon as it is certain to
/// stay below `threshold` (from the sizes, or from what is left to merge).
fn sorted_jaccard(a: &[u32], b: &[u32], threshold: f64) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    if (a.len().min(b.len()) as f64) < threshold * a.len().max(b.len()) as f64 {
        return 0.0;
    }
    // J >= t needs an intersection of at least t (|a| + |b|) / (1 + t).
    let need = (threshold * (a.len() + b.len()) as f64 / (1.0 + threshold) - 1e-9).ceil() as usize;
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        if inter + (a.len() - i).min(b.len() - j) < need {
            return 0.0;
        }
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// The row count of an input of `rows` rows, for a part that counted `counted` of them (up to
/// where its shard process stopped reading); an error when it counted more.
fn covered(counted: u64, rows: u64) -> Result<u64, SketchError> {
    if rows < counted {
        return Err(SketchError::Format(format!(
            "counted {counted} input rows, more than the input's {rows}"
        )));
    }
    Ok(rows)
}

/// What [`find_duplicates`] decided for one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Not a duplicate.
    Keep,
    /// Its id appeared before.
    DuplicateId,
    /// An exact copy of row `of` (the first with its exact key).
    Exact {
        /// `seq` of the kept row.
        of: u64,
    },
    /// In the near-duplicate component whose first row, `of`, is kept; it was linked to the
    /// component through row `via` with shingle Jaccard `jaccard`.
    Near {
        /// `seq` of the kept row.
        of: u64,
        /// `seq` of the row it matched (often `of`).
        via: u64,
        /// Their Jaccard, rounded to 4 decimals.
        jaccard: f64,
    },
}

/// The decision of every row of the input (by `seq`), and the ids that the drop reasons name.
#[derive(Debug, Clone, Default)]
pub struct Duplicates {
    decisions: Vec<Decision>,
    ids: HashMap<u64, Box<str>>,
}

impl Duplicates {
    /// Rows covered.
    pub fn len(&self) -> usize {
        self.decisions.len()
    }

    /// Whether no row is covered.
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
    }

    /// The decision of row `seq`.
    pub fn decision(&self, seq: u64) -> Decision {
        self.decisions[seq as usize]
    }

    /// Why row `seq` (whose id is `id`) is dropped, if it is.
    pub fn reason(&self, seq: u64, id: &str) -> Option<DropReason> {
        self.decision(seq).reason(id, |s| self.name(s))
    }

    /// The id of row `seq`, when a drop reason names it.
    pub fn name(&self, seq: u64) -> String {
        self.ids.get(&seq).map_or_else(String::new, |i| i.to_string())
    }
}

impl Decision {
    /// Why a row (whose id is `id`) with this decision is dropped, if it is; `name(seq)` is the
    /// id of row `seq`.
    pub fn reason(self, id: &str, name: impl Fn(u64) -> String) -> Option<DropReason> {
        match self {
            Decision::Keep => None,
            Decision::DuplicateId => Some(DropReason::DuplicateId { of: id.to_owned() }),
            Decision::Exact { of } => Some(DropReason::ExactDuplicate { of: name(of) }),
            Decision::Near { of, via, jaccard } => Some(DropReason::NearDuplicate {
                of: name(of),
                jaccard,
                via: (via != of).then(|| name(via)),
            }),
        }
    }
}

impl super::curate::Decisions for &Duplicates {
    type Error = SketchError;

    fn decisions(
        &mut self,
        rows: &[(u64, super::Pair)],
        out: &mut Vec<Decision>,
    ) -> Result<(), SketchError> {
        out.extend(rows.iter().map(|(seq, _)| self.decision(*seq)));
        Ok(())
    }

    fn name(&self, seq: u64) -> String {
        Duplicates::name(self, seq)
    }
}

/// A pair id with its precomputed hash, for a set of ids that hashes each id once.
struct IdKey<'a>(u64, &'a str);

impl PartialEq for IdKey<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0 && self.1 == o.1
    }
}
impl Eq for IdKey<'_> {}
impl std::hash::Hash for IdKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(self.0);
    }
}

/// Decide over the sketches of every row of the input (`parts`: one per shard process, in any
/// order, together covering each `seq` from 0 exactly once) which rows are duplicates (see the
/// module doc): the steps of [`steps`] in one process, the band step over every band.
/// Parallel over bands (rayon); the result does not depend on the split into parts or on the
/// thread count.
pub fn find_duplicates(
    config: &CorpusDedupConfig,
    parts: &[&Sketches],
) -> Result<Duplicates, SketchError> {
    let exact = steps::exact_step(config, parts)?;
    let candidates = steps::band_task(config, parts, &exact, 0..config.bands)?;
    let near = steps::cluster(config, parts, &candidates, |part, near, out| {
        let (_, shingles) = parts[part].near_sketch_at(near);
        out.clear();
        out.extend_from_slice(shingles);
        Ok(())
    })?;
    let ids = steps::ids_of(parts, &steps::referenced(&exact, &near));
    Duplicates::assemble(&exact, &near, ids)
}

/// Per band (in parallel), for the rows whose keys `key(row, band)` gives: sort the rows by
/// band key; the members of a bucket are then consecutive, in input order, and each is a
/// candidate of the member before it (as datatrove's bucket stage pairs neighbours in sorted
/// order). `[band][row]` is that neighbour (the row itself when it has none).
fn band_neighbours(
    rows: usize,
    bands: Range<usize>,
    key: impl Fn(usize, usize) -> u32 + Sync,
) -> Vec<Vec<u32>> {
    use rayon::prelude::*;
    bands
        .into_par_iter()
        .map(|b| {
            let mut v: Vec<u64> =
                (0..rows).map(|k| (u64::from(key(k, b)) << 32) | k as u64).collect();
            v.sort_unstable();
            let mut prev: Vec<u32> = (0..rows as u32).collect();
            for w in v.windows(2) {
                if w[0] >> 32 == w[1] >> 32 {
                    prev[w[1] as u32 as usize] = w[0] as u32;
                }
            }
            prev
        })
        .collect()
}

/// Step 1: duplicate ids, exact copies and near-duplicates over `text + "\n" + code` (see
/// the module doc): every pair is sketched, then [`find_duplicates`] decides over all of them;
/// the first pair of each group, in input order, is kept.
pub fn dedup_pairs(config: &CorpusDedupConfig, pairs: Vec<Pair>) -> StepOutput {
    let mut sketches = Sketches::new(config);
    sketches.set_input_rows(pairs.len() as u64);
    let mut sketcher = Sketcher::new(config);
    for (i, p) in pairs.iter().enumerate() {
        sketcher.sketch(i as u64, &p.id, &p.text, &p.code, &mut sketches);
    }
    let found =
        find_duplicates(config, &[&sketches]).expect("the sketches of every pair, each once");
    let mut result = StepOutput::default();
    for (i, p) in pairs.into_iter().enumerate() {
        match found.reason(i as u64, &p.id) {
            Some(reason) => result.dropped.push(Dropped { id: p.id, reason }),
            None => result.kept.push(p),
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::pair;

    #[test]
    fn datatrove_simplification_fast_path_matches_the_general_one() {
        let texts = [
            "Read A JSON   config\tfile in Python 3.11, version 1.2.3 or v2,5!",
            "obj12 and obj45 are one word; x[0] = y.z(1,000) - 42%",
            "  trailing  \n\r\x0b\x0c spaces  and_under_scores__ ",
            "",
            "....",
            "a.b 7. .8 9,a",
        ];
        for t in texts {
            let (mut fast, mut general) = (String::new(), String::new());
            simplify_like_datatrove(t, &mut fast);
            simplify_general(t, &mut general);
            assert_eq!(fast, general, "{t:?}");
        }
        let mut out = String::new();
        simplify_like_datatrove("obj12 and obj45, version 3.14", &mut out);
        assert_eq!(out, "obj0 and obj0 version 0");
        simplify_like_datatrove("Größe ändern: café\u{0301} — ２３ items", &mut out);
        assert_eq!(out, "große andern cafe 0 items");
    }

    fn sketches(
        config: &CorpusDedupConfig,
        rows: &[(&str, &str, &str)],
        seqs: impl Iterator<Item = usize>,
    ) -> Sketches {
        let mut s = Sketches::new(config);
        s.set_input_rows(rows.len() as u64);
        let mut sk = Sketcher::new(config);
        for i in seqs {
            let (id, text, code) = rows[i];
            sk.sketch(i as u64, id, text, code, &mut s);
        }
        s
    }

    #[test]
    fn components_are_the_same_however_the_rows_are_split() {
        let config = CorpusDedupConfig::default();
        let base = "def read_config(path):\n    with open(path) as handle:\n        data = json.load(handle)\n    return data['settings']['values'] if 'settings' in data else {}";
        let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
        let long = words.join(" ");
        let rows = [
            ("a", "read a json config file", base),
            ("b", "read a json config file", base), // exact copy of a
            ("c", "Read A JSON config file", base), // near a
            ("a", "another text entirely, with a reused id", "pass"), // duplicate id
            ("d", long.as_str(), "x"),              // kept
            ("e", "something else", "def f(x):\n    return x"), // kept
        ];
        let all = sketches(&config, &rows, 0..rows.len());
        let one = find_duplicates(&config, &[&all]).unwrap();
        let evens = sketches(&config, &rows, (0..rows.len()).filter(|i| i % 2 == 0));
        let odds = sketches(&config, &rows, (0..rows.len()).filter(|i| i % 2 == 1));
        let two = find_duplicates(&config, &[&odds, &evens]).unwrap();
        for seq in 0..rows.len() as u64 {
            assert_eq!(one.decision(seq), two.decision(seq), "row {seq}");
        }
        assert_eq!(one.decision(0), Decision::Keep);
        assert_eq!(one.reason(1, "b"), Some(DropReason::ExactDuplicate { of: "a".into() }));
        assert!(
            matches!(one.reason(2, "c"), Some(DropReason::NearDuplicate { ref of, via: None, .. }) if of == "a")
        );
        assert_eq!(one.reason(3, "a"), Some(DropReason::DuplicateId { of: "a".into() }));
        assert_eq!(one.decision(4), Decision::Keep);
        assert_eq!(one.decision(5), Decision::Keep);
        // A missing part is an error naming the first missing row; a part given twice too.
        assert_eq!(
            find_duplicates(&config, &[&evens]).unwrap_err().to_string(),
            "row 1 of the input is missing"
        );
        assert_eq!(
            find_duplicates(&config, &[&evens, &odds, &evens]).unwrap_err().to_string(),
            "row 0 of the input appears twice"
        );
    }

    #[test]
    fn a_chain_of_near_copies_is_one_component_kept_at_its_first_row() {
        // Each row drops one word of the previous one and adds another: neighbours are near
        // copies, the ends of the chain are not; the whole chain is one component.
        let config = CorpusDedupConfig { threshold: 0.8, ..CorpusDedupConfig::default() };
        let words: Vec<String> = (0..200).map(|i| format!("t{i}")).collect();
        let texts: Vec<String> = (0..12).map(|s| words[s * 4..s * 4 + 100].join(" ")).collect();
        let ids: Vec<String> = (0..texts.len()).map(|i| format!("r{i}")).collect();
        let rows: Vec<(&str, &str, &str)> =
            ids.iter().zip(&texts).map(|(i, t)| (i.as_str(), t.as_str(), "")).collect();
        let all = sketches(&config, &rows, 0..rows.len());
        let d = find_duplicates(&config, &[&all]).unwrap();
        assert_eq!(d.decision(0), Decision::Keep);
        let last = d.reason(rows.len() as u64 - 1, "r11").unwrap();
        // The last row is far from the first, and joined through a neighbour.
        assert!(
            matches!(last, DropReason::NearDuplicate { ref of, via: Some(_), jaccard } if of == "r0" && jaccard >= 0.8),
            "{last:?}"
        );
    }

    #[test]
    fn datatrove_normalisation_folds_digits_and_punctuation() {
        // The same code with other numbers in every identifier and other punctuation: a
        // different text for `none`, the same one for `datatrove`.
        let a: String = (0..30).map(|i| format!("obj{i}.value = obj{}[{i}];\n", i + 1)).collect();
        let b: String = (0..30)
            .map(|i| format!("obj{}.value := obj{}({});\n", i + 50, i + 77, i * 3))
            .collect();
        let rows = [("a", "copy the values", a.as_str()), ("b", "copy the values!", b.as_str())];
        for (normalise, dropped) in
            [(NearNormalisation::None, false), (NearNormalisation::Datatrove, true)]
        {
            let config = CorpusDedupConfig { normalise, ..CorpusDedupConfig::default() };
            let d = find_duplicates(&config, &[&sketches(&config, &rows, 0..2)]).unwrap();
            assert_eq!(
                d.decision(1) != Decision::Keep,
                dropped,
                "{normalise:?}: {:?}",
                d.decision(1)
            );
        }
    }

    #[test]
    fn sketches_round_trip_and_corruption_is_caught() {
        let config = CorpusDedupConfig::default();
        let rows = [("x:1", "read a file", "open(p).read()"), ("x:2", "Größe ändern", "resize()")];
        let s = sketches(&config, &rows, 0..2);
        let mut bytes = Vec::new();
        s.write_to(&mut bytes).unwrap();
        assert_eq!(Sketches::read_from(&mut bytes.as_slice()).unwrap(), s);
        assert!(Sketches::read_from(&mut &bytes[..bytes.len() - 3]).is_err());
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(
            Sketches::read_from(&mut bad.as_slice())
                .unwrap_err()
                .to_string()
                .contains("not a coreb sketch file")
        );
    }

    #[test]
    fn one_permutation_minhash_tracks_jaccard() {
        // Two sets with Jaccard 0.6: the fraction of equal bins over many seeds is close to it.
        let a: Vec<u64> = (0..80).map(|i| xxh3_64(&[i as u8])).collect();
        let b: Vec<u64> = (20..100).map(|i| xxh3_64(&[i as u8])).collect();
        let j = 60.0 / 100.0;
        let (mut equal, mut total) = (0, 0);
        let (mut sa, mut sb, mut filled) = (Vec::new(), Vec::new(), Vec::new());
        for seed in 0..50u64 {
            one_permutation_signature(&a, 128, seed, &[], &mut sa, &mut filled);
            one_permutation_signature(&b, 128, seed, &[], &mut sb, &mut filled);
            equal += sa.iter().zip(&sb).filter(|(x, y)| x == y).count();
            total += 128;
        }
        let est = equal as f64 / total as f64;
        assert!((est - j).abs() < 0.05, "estimate {est} vs {j}");
        // The precomputed probes give the same signature as computing them.
        let s = Sketcher::new(&CorpusDedupConfig { seed: 5, ..CorpusDedupConfig::default() });
        let mut with = Vec::new();
        one_permutation_signature(&a[..9], 128, 5, &s.probes, &mut with, &mut filled);
        one_permutation_signature(&a[..9], 128, 5, &[], &mut sa, &mut filled);
        assert_eq!(with, sa);
        // A tiny set still fills every bin (densification).
        one_permutation_signature(&a[..3], 128, 1, &[], &mut sa, &mut filled);
        assert!(sa.iter().all(|&v| v != u32::MAX));
    }

    const CODE: &str = "def read_config(path):\n    with open(path) as handle:\n        data = json.load(handle)\n    return data['settings']['values'] if 'settings' in data else {}";

    #[test]
    fn dedup_catches_exact_case_and_whitespace_copies() {
        let pairs = vec![
            pair("a", "read a json config file in python", CODE),
            pair("b", "read a json config file in python", CODE),
            pair("c", "Read A JSON   config file in Python", &CODE.replace("    ", "  ")),
            pair(
                "d",
                "sort a list of tuples by second element",
                "def f(xs):\n    return sorted(xs, key=lambda t: t[1])",
            ),
        ];
        let out = dedup_pairs(&CorpusDedupConfig::default(), pairs);
        let ids: Vec<&str> = out.kept.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["a", "d"]);
        assert_eq!(out.dropped[0].reason, DropReason::ExactDuplicate { of: "a".into() });
        assert!(
            matches!(out.dropped[1].reason, DropReason::NearDuplicate { ref of, .. } if of == "a")
        );
    }
}
