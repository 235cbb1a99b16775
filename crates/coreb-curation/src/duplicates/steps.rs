//! The near-duplicate decision as steps that no process needs every sketch for (issue #35),
//! the way datatrove's MinHash deduplication splits it:
//! 1. [`exact_step`]: over the ids and exact keys of every row (no band keys, no shingles):
//!    repeated ids and exact copies, each dropped in favour of its first occurrence →
//!    [`ExactDecisions`].
//! 2. [`band_task`]: over the keys of a range of bands of the other rows (one task per range,
//!    any number of tasks): per band the rows are sorted by key and each row of a bucket is a
//!    candidate of the row before it → the task's [`Candidate`] pairs.
//! 3. [`cluster`]: the candidates of every task ([`merge_candidates`]), checked in
//!    `(later, earlier)` order by shingle Jaccard (the two shingle sets are fetched for a
//!    pair, not held), skipping a pair already joined, and joined in one union-find over the
//!    rows they name (only rows that have a candidate) → [`NearDecision`]s; each component
//!    keeps its first row.
//!
//! One process with one task over every band is [`super::find_duplicates`]. Any split gives
//! the same decisions: the candidates of all tasks together are those of every band, and the
//! clustering step checks them in the order, and with the skips, of one process. Each pair is
//! checked once, whatever the number of tasks.
//!
//! Each step's output has a small binary file format (`write_to`/`read_from`), which the
//! engine writes into part directories with markers. Reads and writes nothing itself.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::ops::Range;

use super::{
    CorpusDedupConfig, Decision, Duplicates, IdKey, SketchError, Sketches, band_neighbours,
    sorted_jaccard,
};
use crate::Prehashed;
use coreb_base::minhash::UnionFind;

/// `of` of a row dropped for a repeated id in [`ExactDecisions`].
const REPEATED_ID: u64 = u64::MAX;

/// What the exact step decided: the rows dropped for a repeated id or as an exact copy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExactDecisions {
    input_rows: u64,
    /// `(seq, of)` by seq; `of` is [`REPEATED_ID`] for a repeated id.
    dropped: Vec<(u64, u64)>,
}

impl ExactDecisions {
    /// Rows of the input.
    pub fn input_rows(&self) -> u64 {
        self.input_rows
    }

    /// Rows dropped.
    pub fn dropped(&self) -> usize {
        self.dropped.len()
    }

    fn is_dropped(&self, seq: u64) -> bool {
        self.dropped.binary_search_by_key(&seq, |d| d.0).is_ok()
    }

    /// Write in a small binary layout ([`ExactDecisions::read_from`]).
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        write_records(
            w,
            EXACT_MAGIC,
            self.input_rows,
            self.dropped.iter().map(|&(s, o)| [s, o]),
            self.dropped.len(),
        )
    }

    /// Read what [`ExactDecisions::write_to`] wrote; a corrupt file is an error.
    pub fn read_from(r: &mut impl Read) -> Result<ExactDecisions, SketchError> {
        let (input_rows, records) = read_records::<2>(r, EXACT_MAGIC)?;
        let dropped: Vec<(u64, u64)> = records.into_iter().map(|[s, o]| (s, o)).collect();
        let ordered = dropped.windows(2).all(|w| w[0].0 < w[1].0)
            && dropped.iter().all(|&(s, o)| s < input_rows && (o == REPEATED_ID || o < s));
        if !ordered {
            return Err(SketchError::Format("exact decisions out of order or out of range".into()));
        }
        Ok(ExactDecisions { input_rows, dropped })
    }
}

/// A candidate pair found by a band task: rows `later` > `earlier` (input positions) that
/// are neighbours in a bucket of one of its bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    /// The later row.
    pub later: u64,
    /// The earlier row.
    pub earlier: u64,
}

/// A row dropped as a near-duplicate, by [`cluster`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NearDecision {
    /// The row.
    pub seq: u64,
    /// The first row of its component (kept).
    pub of: u64,
    /// The row it was first joined with.
    pub via: u64,
    /// Their Jaccard similarity.
    pub jaccard: f64,
}

const EXACT_MAGIC: &[u8; 8] = b"CRBEXA01";
const CANDIDATE_MAGIC: &[u8; 8] = b"CRBCAN01";
const NEAR_MAGIC: &[u8; 8] = b"CRBNEA01";

/// Write `candidates` ([`read_candidates`] reads them).
pub fn write_candidates(w: &mut impl Write, candidates: &[Candidate]) -> std::io::Result<()> {
    write_records(
        w,
        CANDIDATE_MAGIC,
        0,
        candidates.iter().map(|c| [c.later, c.earlier]),
        candidates.len(),
    )
}

/// Read what [`write_candidates`] wrote.
pub fn read_candidates(r: &mut impl Read) -> Result<Vec<Candidate>, SketchError> {
    let (_, records) = read_records::<2>(r, CANDIDATE_MAGIC)?;
    let candidates: Vec<Candidate> =
        records.into_iter().map(|[later, earlier]| Candidate { later, earlier }).collect();
    if candidates.iter().any(|c| c.earlier >= c.later) {
        return Err(SketchError::Format(
            "a candidate pair does not join an earlier row to a later one".into(),
        ));
    }
    Ok(candidates)
}

/// Write the near decisions over an input of `input_rows` rows ([`read_near`] reads them).
pub fn write_near(
    w: &mut impl Write,
    input_rows: u64,
    near: &[NearDecision],
) -> std::io::Result<()> {
    write_records(
        w,
        NEAR_MAGIC,
        input_rows,
        near.iter().map(|d| [d.seq, d.of, d.via, d.jaccard.to_bits()]),
        near.len(),
    )
}

/// Read what [`write_near`] wrote: the input's rows and the decisions.
pub fn read_near(r: &mut impl Read) -> Result<(u64, Vec<NearDecision>), SketchError> {
    let (input_rows, records) = read_records::<4>(r, NEAR_MAGIC)?;
    let near: Vec<NearDecision> = records
        .into_iter()
        .map(|[seq, of, via, j]| NearDecision { seq, of, via, jaccard: f64::from_bits(j) })
        .collect();
    let ordered = near.windows(2).all(|w| w[0].seq < w[1].seq)
        && near.iter().all(|d| d.seq < input_rows && d.of < d.seq && d.via != d.seq);
    if !ordered {
        return Err(SketchError::Format("near decisions out of order or out of range".into()));
    }
    Ok((input_rows, near))
}

/// `magic`, `header`, the record count, then `count` records of `W` little-endian u64s.
fn write_records<const W: usize>(
    w: &mut impl Write,
    magic: &[u8; 8],
    header: u64,
    records: impl Iterator<Item = [u64; W]>,
    count: usize,
) -> std::io::Result<()> {
    w.write_all(magic)?;
    w.write_all(&header.to_le_bytes())?;
    w.write_all(&(count as u64).to_le_bytes())?;
    let mut buf = Vec::with_capacity(W * 8 * 4096);
    for r in records {
        for v in r {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        if buf.len() >= W * 8 * 4096 {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    w.write_all(&buf)
}

/// Read what [`write_records`] wrote: the header and the records; a wrong magic or a
/// truncated file is an error, and so are bytes past the last record.
fn read_records<const W: usize>(
    r: &mut impl Read,
    magic: &[u8; 8],
) -> Result<(u64, Vec<[u64; W]>), SketchError> {
    let mut records = RecordReader::<_, W>::open(r, magic)?;
    let mut out = Vec::with_capacity((records.left as usize).min(1 << 20));
    while let Some(rec) = records.next()? {
        out.push(rec);
    }
    Ok((records.header, out))
}

/// The records of a file of `write_records`, one at a time: a wrong magic or a truncated
/// file is an error, and so are bytes past the last record.
pub struct RecordReader<R, const W: usize> {
    r: R,
    header: u64,
    left: u64,
}

impl<R: Read, const W: usize> RecordReader<R, W> {
    fn open(mut r: R, magic: &[u8; 8]) -> Result<Self, SketchError> {
        let mut head = [0u8; 24];
        r.read_exact(&mut head)?;
        if &head[..8] != magic {
            return Err(SketchError::Format(format!(
                "not a `{}` file (or another format version)",
                String::from_utf8_lossy(&magic[..6])
            )));
        }
        let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
        Ok(RecordReader { header: word(8), left: word(16), r })
    }

    fn next(&mut self) -> Result<Option<[u64; W]>, SketchError> {
        let mut buf = [0u8; 8];
        if self.left == 0 {
            if self.r.read(&mut buf)? != 0 {
                return Err(SketchError::Format("bytes past the last record".into()));
            }
            return Ok(None);
        }
        // The record's words read at once.
        let mut bytes = [[0u8; 8]; W];
        self.r.read_exact(bytes.as_flattened_mut())?;
        self.left -= 1;
        Ok(Some(bytes.map(u64::from_le_bytes)))
    }
}

/// The candidates of every band task's file (each in order), as one stream in order, each
/// pair once: what [`merge_candidates`] makes of them, without holding them.
pub struct CandidateStream<R> {
    readers: Vec<RecordReader<R, 2>>,
    /// Each file's next pair as one key, `later` above `earlier` ([`ENDED`] when it has no
    /// more): the smallest key is the next pair.
    heads: Vec<u128>,
    last: Option<u128>,
}

/// The head of a [`CandidateStream`]'s file that has no more pairs (no pair's key: its
/// earlier row is before its later one).
const ENDED: u128 = u128::MAX;

impl<R: Read> CandidateStream<R> {
    /// The candidate files (of [`write_candidates`]) `files`.
    pub fn open(files: impl IntoIterator<Item = R>) -> Result<Self, SketchError> {
        let mut s = CandidateStream { readers: Vec::new(), heads: Vec::new(), last: None };
        for r in files {
            s.readers.push(RecordReader::open(r, CANDIDATE_MAGIC)?);
            s.heads.push(0);
            let i = s.readers.len() - 1;
            s.advance(i)?;
        }
        Ok(s)
    }

    fn advance(&mut self, i: usize) -> Result<(), SketchError> {
        let next = match self.readers[i].next()? {
            Some([later, earlier]) => {
                if earlier >= later {
                    return Err(SketchError::Format(
                        "a candidate pair does not join an earlier row to a later one".into(),
                    ));
                }
                u128::from(later) << 64 | u128::from(earlier)
            }
            None => ENDED,
        };
        if next != ENDED && self.heads[i] >= next {
            return Err(SketchError::Format(
                "the candidate pairs are not in order, or repeated".into(),
            ));
        }
        self.heads[i] = next;
        Ok(())
    }

    /// Feed every pair to `f`, in order, each once.
    pub fn feed(
        mut self,
        f: &mut dyn FnMut(Candidate) -> Result<(), SketchError>,
    ) -> Result<(), SketchError> {
        while let Some(c) = self.next_pair()? {
            f(c)?;
        }
        Ok(())
    }

    /// The next pair in `(later, earlier)` order, once however many files hold it.
    pub fn next_pair(&mut self) -> Result<Option<Candidate>, SketchError> {
        loop {
            // The smallest head, without a branch per file.
            let (mut i, mut min) = (0, ENDED);
            for (j, &h) in self.heads.iter().enumerate() {
                let smaller = h < min;
                i = if smaller { j } else { i };
                min = if smaller { h } else { min };
            }
            if min == ENDED {
                return Ok(None);
            }
            self.advance(i)?;
            if self.last != Some(min) {
                self.last = Some(min);
                return Ok(Some(Candidate { later: (min >> 64) as u64, earlier: min as u64 }));
            }
        }
    }
}

/// The rows that candidate pairs name, as a bit set over the input's rows: node `k` is the
/// `k`-th of them in input order (a bit per input row and a count per 64 rows, not a
/// position per pair).
pub struct Nodes {
    rows: Bits,
    /// Set bits before each word.
    before: Vec<u32>,
}

impl Nodes {
    fn new(input_rows: u64) -> Nodes {
        Nodes { rows: Bits::new(input_rows), before: Vec::new() }
    }

    fn insert(&mut self, seq: u64) {
        self.rows.set(seq);
    }

    fn freeze(&mut self) {
        let mut n = 0u32;
        self.before = self
            .rows
            .0
            .iter()
            .map(|w| {
                let before = n;
                n += w.count_ones();
                before
            })
            .collect();
    }

    /// Rows named.
    pub fn len(&self) -> usize {
        self.before
            .last()
            .map_or(0, |&b| b as usize + self.rows.0.last().map_or(0, |w| w.count_ones() as usize))
    }

    /// Whether no row is named.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The node of row `seq`, if a pair names it.
    pub fn index(&self, seq: u64) -> Option<u32> {
        let (w, bit) = ((seq / 64) as usize, seq % 64);
        let word = *self.rows.0.get(w)?;
        (word >> bit & 1 == 1).then(|| self.before[w] + (word & ((1u64 << bit) - 1)).count_ones())
    }

    /// The rows named, in input order.
    fn seqs(&self) -> impl Iterator<Item = u64> + '_ {
        self.rows.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let bit = word.trailing_zeros();
                    word &= word - 1;
                    w as u64 * 64 + u64::from(bit)
                })
            })
        })
    }
}

/// Where each row of the input is: `(part, row)`, by seq; an error when the parts were made
/// with other bands, disagree on the input's size or do not cover each seq exactly once.
fn locate_rows(
    config: &CorpusDedupConfig,
    parts: &[&Sketches],
) -> Result<Vec<(u32, u32)>, SketchError> {
    check_parts(config, parts)?;
    let total = parts.first().map_or(0, |p| p.input_rows);
    let mut at: Vec<(u32, u32)> = vec![(u32::MAX, 0); total as usize];
    for (pi, p) in parts.iter().enumerate() {
        for (ri, &s) in p.seq.iter().enumerate() {
            let slot = at
                .get_mut(s as usize)
                .ok_or(SketchError::Coverage { seq: s, what: "is out of range" })?;
            if slot.0 != u32::MAX {
                return Err(SketchError::Coverage { seq: s, what: "appears twice" });
            }
            *slot = (pi as u32, ri as u32);
        }
    }
    if let Some(seq) = at.iter().position(|a| a.0 == u32::MAX) {
        return Err(SketchError::Coverage { seq: seq as u64, what: "is missing" });
    }
    Ok(at)
}

/// The parts were made with the manifest's bands and agree on the input's size.
fn check_parts(config: &CorpusDedupConfig, parts: &[&Sketches]) -> Result<(), SketchError> {
    if let Some(p) = parts.iter().find(|p| p.bands != config.bands && !p.is_empty()) {
        return Err(SketchError::Bands { expected: config.bands, found: p.bands });
    }
    let total = parts.first().map_or(0, |p| p.input_rows);
    if let Some(p) = parts.iter().find(|p| p.input_rows != total) {
        return Err(SketchError::InputRows(total, p.input_rows));
    }
    Ok(())
}

/// Step 1: repeated ids, then exact copies, each dropped in favour of its first occurrence,
/// over the ids and exact keys of every row (`parts` read with [`super::Selection::ids`]).
pub fn exact_step(
    config: &CorpusDedupConfig,
    parts: &[&Sketches],
) -> Result<ExactDecisions, SketchError> {
    let at = locate_rows(config, parts)?;
    let mut seen: HashSet<IdKey<'_>, Prehashed> =
        HashSet::with_capacity_and_hasher(at.len(), Prehashed);
    let mut exact: HashMap<u128, u64, Prehashed> =
        HashMap::with_capacity_and_hasher(at.len(), Prehashed);
    let mut dropped = Vec::new();
    for (seq, &(pi, ri)) in at.iter().enumerate() {
        let p = parts[pi as usize];
        let ri = ri as usize;
        if !seen.insert(IdKey(p.id_hash[ri], p.id(ri))) {
            dropped.push((seq as u64, REPEATED_ID));
            continue;
        }
        match exact.entry(p.exact[ri]) {
            std::collections::hash_map::Entry::Occupied(first) => {
                dropped.push((seq as u64, *first.get()))
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(seq as u64);
                if p.near_index(ri).is_none() {
                    return Err(SketchError::Format(format!(
                        "row {seq} has no near-duplicate sketch but is no duplicate"
                    )));
                }
            }
        }
    }
    Ok(ExactDecisions { input_rows: at.len() as u64, dropped })
}

/// A bit per input row.
struct Bits(Vec<u64>);

impl Bits {
    fn new(rows: u64) -> Bits {
        Bits(vec![0; rows.div_ceil(64) as usize])
    }

    fn get(&self, i: u64) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    /// Set bit `i`; whether it was set already.
    fn set(&mut self, i: u64) -> bool {
        let was = self.get(i);
        self.0[(i / 64) as usize] |= 1 << (i % 64);
        was
    }
}

/// Step 1 over the sketch files of every part, read as streams: what [`exact_step`]
/// decides, holding 24 bytes per row (sorted, first the id hashes, then the exact keys)
/// and a few bits, not the ids and two hash tables. Rows with the same id hash are told
/// apart by their ids, read from the files.
#[cfg(unix)]
pub fn exact_step_files(
    config: &CorpusDedupConfig,
    parts: &[super::SketchFile],
) -> Result<ExactDecisions, SketchError> {
    if let Some(p) = parts.iter().find(|p| p.bands() != config.bands && p.rows() > 0) {
        return Err(SketchError::Bands { expected: config.bands, found: p.bands() });
    }
    let total = parts.first().map_or(0, |p| p.input_rows());
    if let Some(p) = parts.iter().find(|p| p.input_rows() != total) {
        return Err(SketchError::InputRows(total, p.input_rows()));
    }
    let (mut covered, mut no_near) = (Bits::new(total), Bits::new(total));
    // Repeated ids: (id hash, seq, part, row), sorted.
    let mut ids: Vec<(u64, u64, u32, u32)> = Vec::with_capacity(total as usize);
    for (pi, p) in parts.iter().enumerate() {
        let mut row = 0u32;
        p.for_each_key(|seq, hash, _, near| {
            if covered.set(seq) {
                return Err(SketchError::Coverage { seq, what: "appears twice" });
            }
            if !near {
                no_near.set(seq);
            }
            ids.push((hash, seq, pi as u32, row));
            row += 1;
            Ok(())
        })?;
    }
    if let Some(seq) = (0..total).find(|&s| !covered.get(s)) {
        return Err(SketchError::Coverage { seq, what: "is missing" });
    }
    drop(covered);
    ids.sort_unstable();
    let mut repeated = Bits::new(total);
    let mut dropped = Vec::new();
    for group in ids.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
        // In input order: the first row of each id is kept.
        let mut seen: Vec<String> = Vec::new();
        for &(_, seq, pi, row) in group {
            let id = parts[pi as usize].id(u64::from(row))?;
            if seen.contains(&id) {
                repeated.set(seq);
                dropped.push((seq, REPEATED_ID));
            } else {
                seen.push(id);
            }
        }
    }
    drop(ids);
    // Exact copies among the other rows: (exact key, seq), sorted; a key's first row is kept.
    let mut keys: Vec<(u64, u64, u64)> = Vec::with_capacity(total as usize - dropped.len());
    for p in parts {
        p.for_each_key(|seq, _, exact, _| {
            if !repeated.get(seq) {
                keys.push(((exact >> 64) as u64, exact as u64, seq));
            }
            Ok(())
        })?;
    }
    keys.sort_unstable();
    for group in keys.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let first = group[0].2;
        if no_near.get(first) {
            return Err(SketchError::Format(format!(
                "row {first} has no near-duplicate sketch but is no duplicate"
            )));
        }
        dropped.extend(group[1..].iter().map(|k| (k.2, first)));
    }
    drop(keys);
    dropped.sort_unstable();
    Ok(ExactDecisions { input_rows: total, dropped })
}

/// Step 2, one task: the candidate pairs among the rows that `exact` keeps, found through the
/// bands `bands` (`parts` read with at least those bands' keys), in `(later, earlier)` order.
pub fn band_task(
    config: &CorpusDedupConfig,
    parts: &[&Sketches],
    exact: &ExactDecisions,
    bands: Range<usize>,
) -> Result<Vec<Candidate>, SketchError> {
    check_parts(config, parts)?;
    if let Some(p) = parts.iter().find(|p| p.input_rows != exact.input_rows) {
        return Err(SketchError::InputRows(exact.input_rows, p.input_rows));
    }
    if let Some(p) = parts
        .iter()
        .find(|p| !p.is_empty() && (p.key_bands.start > bands.start || p.key_bands.end < bands.end))
    {
        return Err(SketchError::Format(format!(
            "the sketches hold the keys of bands {:?}, not of {bands:?}",
            p.key_bands
        )));
    }
    // The rows near-dedup compares, in input order: (seq, part, near sketch).
    let mut rows: Vec<(u64, u32, u32)> = Vec::new();
    for (pi, p) in parts.iter().enumerate() {
        // A part's rows are in input order: walk the dropped rows beside them.
        let ordered = p.seq.windows(2).all(|w| w[0] < w[1]);
        let mut dropped = exact.dropped.iter().map(|d| d.0).peekable();
        for (ri, &seq) in p.seq.iter().enumerate() {
            let is_dropped = if ordered {
                while dropped.next_if(|&d| d < seq).is_some() {}
                dropped.peek() == Some(&seq)
            } else {
                exact.is_dropped(seq)
            };
            if is_dropped {
                continue;
            }
            let near = p.near_index(ri).ok_or_else(|| {
                SketchError::Format(format!(
                    "row {seq} has no near-duplicate sketch but is no duplicate"
                ))
            })?;
            rows.push((seq, pi as u32, near));
        }
    }
    rows.sort_unstable_by_key(|r| r.0);
    if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(SketchError::Coverage { seq: w[0].0, what: "appears twice" });
    }
    if rows.len() as u64 + exact.dropped.len() as u64 != exact.input_rows {
        return Err(SketchError::Format(format!(
            "the sketches hold {} rows that are no exact duplicates; the exact step left {}",
            rows.len(),
            exact.input_rows - exact.dropped.len() as u64
        )));
    }
    let previous = band_neighbours(rows.len(), bands, |k, b| {
        let (_, pi, near) = rows[k];
        let p = parts[pi as usize];
        p.keys[near as usize * p.key_bands.len() + b - p.key_bands.start]
    });
    let mut candidates = Vec::new();
    let mut of_row: Vec<u32> = Vec::with_capacity(previous.len());
    for k in 0..rows.len() {
        of_row.clear();
        of_row.extend(previous.iter().map(|f| f[k]).filter(|&c| c as usize != k));
        of_row.sort_unstable();
        of_row.dedup();
        candidates.extend(
            of_row.iter().map(|&c| Candidate { later: rows[k].0, earlier: rows[c as usize].0 }),
        );
    }
    Ok(candidates)
}

/// The candidates of two band tasks (each in order) as one list in order, each pair once: the
/// clustering step folds the tasks' files through it one at a time, so that it never holds
/// every task's copy of a pair that several tasks found.
pub fn merge_candidates(a: Vec<Candidate>, b: Vec<Candidate>) -> Vec<Candidate> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x <= y => a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => return out,
        };
        if let Some(c) = next.filter(|c| out.last() != Some(c)) {
            out.push(c);
        }
    }
}

/// Step 3 over candidates held in memory (`pairs`: the tasks' lists through
/// [`merge_candidates`]): [`cluster_with`], with `parts` (read with their row positions and
/// near-sketch indices at least) saying where each row is, and `shingles(part, near, out)`
/// putting the shingle set of near sketch `near` of part `part` into `out` (from memory, or
/// from the file the sketches were read from).
pub fn cluster(
    config: &CorpusDedupConfig,
    parts: &[&Sketches],
    pairs: &[Candidate],
    mut shingles: impl FnMut(usize, u32, &mut Vec<u32>) -> Result<(), SketchError>,
) -> Result<Vec<NearDecision>, SketchError> {
    if pairs.windows(2).any(|w| w[0] >= w[1]) {
        return Err(SketchError::Format(
            "the candidate pairs are not in order, or repeated".into(),
        ));
    }
    let input_rows = parts.first().map_or(0, |p| p.input_rows);
    let locate =
        |nodes: &Nodes, set: &mut dyn FnMut(u64, (u32, u32)) -> Result<(), SketchError>| {
            for (pi, p) in parts.iter().enumerate() {
                for (ri, &seq) in p.seq.iter().enumerate() {
                    if nodes.index(seq).is_some() {
                        let near = p.near_index(ri).ok_or_else(|| {
                            SketchError::Format(format!(
                                "row {seq} is a candidate but has no near-duplicate sketch"
                            ))
                        })?;
                        set(seq, (pi as u32, near))?;
                    }
                }
            }
            Ok(())
        };
    let feed = |f: &mut dyn FnMut(Candidate) -> Result<(), SketchError>| {
        pairs.iter().try_for_each(|&c| f(c))
    };
    let mut set = Vec::new();
    let by_ref = |&mut (p, near): &mut (u32, u32), f: &mut dyn FnMut(&[u32])| {
        shingles(p as usize, near, &mut set)?;
        f(&set);
        Ok(())
    };
    Ok(cluster_with(config, input_rows, feed, feed, locate, by_ref)?.0)
}

/// Step 3: the candidates of every band task, checked in `(later, earlier)` order by
/// shingle Jaccard, skipping a pair already joined (which changes no component), and joined
/// in one union-find over the rows they name; every row of a component but its first is
/// dropped in favour of the first, with the row it was first joined with. Returns the
/// decisions and the number of pairs.
///
/// Nothing is held per pair: `named(f)` feeds every pair to `f` at least once, in any order,
/// to learn which rows pairs name (a bit per input row); `candidates(f)` then feeds every
/// pair once, in order, to check them (a pair `named` did not feed is an error).
/// `locate(nodes, set)` calls `set(seq, at)` with where the shingle set of each row of
/// `nodes` is; `shingles(at, f)` calls `f` with that set (lent, not copied; it may note in
/// `at` where it keeps a copy, as [`SetReader`] does), and is asked only for rows of pairs it
/// checks. Per named row it holds `at`, its union-find slot and its link.
pub fn cluster_with<L: Copy + Default>(
    config: &CorpusDedupConfig,
    input_rows: u64,
    named: impl FnOnce(&mut dyn FnMut(Candidate) -> Result<(), SketchError>) -> Result<(), SketchError>,
    candidates: impl FnOnce(
        &mut dyn FnMut(Candidate) -> Result<(), SketchError>,
    ) -> Result<(), SketchError>,
    locate: impl FnOnce(
        &Nodes,
        &mut dyn FnMut(u64, L) -> Result<(), SketchError>,
    ) -> Result<(), SketchError>,
    mut shingles: impl FnMut(&mut L, &mut dyn FnMut(&[u32])) -> Result<(), SketchError>,
) -> Result<(Vec<NearDecision>, u64), SketchError> {
    let mut nodes = Nodes::new(input_rows);
    named(&mut |c| {
        if c.earlier >= c.later {
            return Err(SketchError::Format(
                "a candidate pair does not join an earlier row to a later one".into(),
            ));
        }
        if c.later >= input_rows {
            return Err(SketchError::Coverage {
                seq: c.later,
                what: "is a candidate but is in no part",
            });
        }
        nodes.insert(c.later);
        nodes.insert(c.earlier);
        Ok(())
    })?;
    nodes.freeze();
    let n = nodes.len();
    let mut at: Vec<L> = vec![L::default(); n];
    let mut found = Bits::new(n as u64);
    locate(&nodes, &mut |seq, l| {
        let k = nodes.index(seq).ok_or(SketchError::Coverage { seq, what: "is no candidate" })?
            as usize;
        if found.set(k as u64) {
            return Err(SketchError::Coverage { seq, what: "appears twice" });
        }
        at[k] = l;
        Ok(())
    })?;
    if let Some(k) = (0..n).find(|&k| !found.get(k as u64)) {
        return Err(SketchError::Coverage {
            seq: nodes.seqs().nth(k).unwrap_or_default(),
            what: "is a candidate but is in no part",
        });
    }
    drop(found);
    let node = |seq: u64| {
        nodes
            .index(seq)
            .ok_or(SketchError::Format("the candidate pairs changed while they were read".into()))
    };
    let (mut last, mut count) = (None::<Candidate>, 0u64);
    let mut uf = UnionFind::new(n);
    // The node each node was first joined with, and their Jaccard in 1e-4.
    let mut link: Vec<(u32, u32)> = vec![(u32::MAX, 0); n];
    // The later row's set is copied once for all its pairs; the earlier row's is only lent.
    let (mut mine, mut loaded) = (Vec::<u32>::new(), None);
    candidates(&mut |p| {
        if last.is_some_and(|l| l >= p) {
            return Err(SketchError::Format(
                "the candidate pairs are not in order, or repeated".into(),
            ));
        }
        (last, count) = (Some(p), count + 1);
        let (k, c) = (node(p.later)?, node(p.earlier)?);
        if uf.find(c) == uf.find(k) {
            return Ok(());
        }
        if loaded != Some(p.later) {
            shingles(&mut at[k as usize], &mut |set| {
                mine.clear();
                mine.extend_from_slice(set);
            })?;
            loaded = Some(p.later);
        }
        let mut j = 0.0;
        shingles(&mut at[c as usize], &mut |theirs| {
            j = sorted_jaccard(&mine, theirs, config.threshold)
        })?;
        if j < config.threshold {
            return Ok(());
        }
        uf.union(c, k);
        for (x, y) in [(k, c), (c, k)] {
            if link[x as usize].0 == u32::MAX {
                link[x as usize] = (y, (j * 1e4).round() as u32);
            }
        }
        Ok(())
    })?;
    drop(at);
    // The row of each node, for the components' first rows and the links.
    let seqs: Vec<u64> = nodes.seqs().collect();
    let mut near = Vec::new();
    for (k, &seq) in seqs.iter().enumerate() {
        let root = uf.find(k as u32);
        if root as usize != k {
            let (via, j) = link[k];
            // The same value as `(j * 1e4).round() / 1e4` of the Jaccard.
            near.push(NearDecision {
                seq,
                of: seqs[root as usize],
                via: seqs[via as usize],
                jaccard: f64::from(j) / 1e4,
            });
        }
    }
    Ok((near, count))
}

/// Where a named row's shingle set is in the sketch files a [`SetReader`] reads: its part,
/// its offset and length among the part's shingles, and where the reader last copied it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetAt {
    part: u32,
    len: u32,
    start: u64,
    /// Its position in the reader's ring ([`NOWHERE`] when it was never copied there).
    ring: u64,
}

/// No position in a [`SetReader`]'s ring.
const NOWHERE: u64 = u64::MAX;

impl Default for SetAt {
    fn default() -> SetAt {
        SetAt { part: 0, len: 0, start: 0, ring: NOWHERE }
    }
}

impl SetAt {
    /// The set of `len` shingles from offset `start` of part `part`'s shingles.
    pub fn new(part: u32, start: u64, len: u32) -> SetAt {
        SetAt { part, len, start, ring: NOWHERE }
    }
}

/// The shingle sets of the sketch files of every part, lent to [`cluster_with`] (as its
/// `shingles`) without a read per set. The pairs come in input order of their later row, so
/// each part's sets are mostly asked for forward: a window of each part's shingles is read
/// ahead in chunks. Every set lent is also copied into a ring of recent sets, and its place
/// there noted in its [`SetAt`] (which the caller holds per row, so finding it again costs no
/// lookup of its own): the rest, mostly a component's first rows that are the earlier row of
/// many pairs, are found there again until the ring comes round; a set found in the older
/// half of the ring is copied to its head, so that a set still in use stays. Only a set
/// neither in the ring nor in its part's window is read from its file.
#[cfg(unix)]
pub struct SetReader<'a> {
    files: &'a [super::SketchFile],
    /// Each part's window: the offset of its first shingle, and the shingles.
    windows: Vec<(u64, Vec<u32>)>,
    window: u64,
    ring: Vec<u32>,
    /// Shingles copied into the ring so far: those at `head - ring.len()..head` are there.
    head: u64,
    scratch: Vec<u32>,
}

#[cfg(unix)]
impl<'a> SetReader<'a> {
    /// A reader of `files` with windows of `window` shingles and a ring of `ring` shingles.
    pub fn new(files: &'a [super::SketchFile], window: u64, ring: usize) -> SetReader<'a> {
        SetReader {
            files,
            windows: vec![(0, Vec::new()); files.len()],
            window: window.max(1),
            ring: vec![0; ring],
            head: 0,
            scratch: Vec::new(),
        }
    }

    /// Where in the ring the set at `pos` (`len` shingles) is, if it is still there.
    fn in_ring(&self, pos: u64, len: u32) -> Option<Range<usize>> {
        if self.head.checked_sub(pos).is_none_or(|behind| behind > self.ring.len() as u64) {
            return None;
        }
        let at = (pos % self.ring.len() as u64) as usize;
        Some(at..at + len as usize)
    }

    /// Copy `set` to the head of the ring (after the ring's end, to its start: a set is never
    /// cut in two); its position, or [`NOWHERE`] when it is larger than the ring.
    fn keep(ring: &mut [u32], head: &mut u64, set: &[u32]) -> u64 {
        let cap = ring.len() as u64;
        let len = set.len() as u64;
        if len > cap || cap == 0 {
            return NOWHERE;
        }
        if *head % cap + len > cap {
            *head += cap - *head % cap;
        }
        let (pos, at) = (*head, (*head % cap) as usize);
        ring[at..at + set.len()].copy_from_slice(set);
        *head += len;
        pos
    }

    /// Lend the set at `at` to `f`, noting in `at` where the ring holds it.
    pub fn lend(&mut self, at: &mut SetAt, f: &mut dyn FnMut(&[u32])) -> Result<(), SketchError> {
        if let Some(range) = self.in_ring(at.ring, at.len) {
            if self.head - at.ring <= self.ring.len() as u64 / 2 {
                f(&self.ring[range]);
                return Ok(());
            }
            // In the older half: copied to the head, so that it stays while it is in use.
            self.scratch.clear();
            self.scratch.extend_from_slice(&self.ring[range]);
            at.ring = Self::keep(&mut self.ring, &mut self.head, &self.scratch);
            f(&self.scratch);
            return Ok(());
        }
        let files = self.files;
        let file = files.get(at.part as usize).ok_or_else(|| {
            SketchError::Format(format!("a shingle set of part {}, which does not exist", at.part))
        })?;
        let (first, window) = &mut self.windows[at.part as usize];
        let end = at.start + u64::from(at.len);
        if at.start >= *first + window.len() as u64 {
            // Ahead of the window: move it here.
            let n = file
                .shingle_count()
                .saturating_sub(at.start)
                .min(self.window.max(u64::from(at.len)));
            file.read_shingles(at.start, n as u32, window)?;
            *first = at.start;
        }
        let set: &[u32] = if at.start >= *first && end <= *first + window.len() as u64 {
            &window[(at.start - *first) as usize..(end - *first) as usize]
        } else {
            file.read_shingles(at.start, at.len, &mut self.scratch)?;
            &self.scratch
        };
        at.ring = Self::keep(&mut self.ring, &mut self.head, set);
        f(set);
        Ok(())
    }
}

/// The rows the drop reasons name (the kept row of each exact copy and component, and each
/// near-duplicate's link), sorted.
pub fn referenced(exact: &ExactDecisions, near: &[NearDecision]) -> Vec<u64> {
    let mut seqs: Vec<u64> = exact
        .dropped
        .iter()
        .map(|d| d.1)
        .filter(|&o| o != REPEATED_ID)
        .chain(near.iter().flat_map(|d| [d.of, d.via]))
        .collect();
    seqs.sort_unstable();
    seqs.dedup();
    seqs
}

/// The ids of the rows `wanted` (sorted seqs) found in `parts` (read with their ids).
pub fn ids_of(parts: &[&Sketches], wanted: &[u64]) -> HashMap<u64, Box<str>> {
    let mut ids = HashMap::with_capacity(wanted.len());
    for p in parts {
        for (ri, &seq) in p.seq.iter().enumerate() {
            if wanted.binary_search(&seq).is_ok() {
                ids.insert(seq, p.id(ri).into());
            }
        }
    }
    ids
}

impl Duplicates {
    /// The decision of every row from the decisions of the exact step and of [`cluster`] over
    /// the same input, and the ids of the rows they name ([`ids_of`] of [`referenced`]).
    pub fn assemble(
        exact: &ExactDecisions,
        near: &[NearDecision],
        ids: HashMap<u64, Box<str>>,
    ) -> Result<Duplicates, SketchError> {
        let mut decisions = vec![Decision::Keep; exact.input_rows as usize];
        for &(seq, of) in &exact.dropped {
            decisions[seq as usize] =
                if of == REPEATED_ID { Decision::DuplicateId } else { Decision::Exact { of } };
        }
        for d in near {
            match decisions.get_mut(d.seq as usize) {
                Some(v @ Decision::Keep) => {
                    *v = Decision::Near { of: d.of, via: d.via, jaccard: d.jaccard }
                }
                Some(_) => {
                    return Err(SketchError::Format(format!(
                        "row {} is both an exact and a near duplicate: the decisions come from different inputs",
                        d.seq
                    )));
                }
                None => {
                    return Err(SketchError::Coverage { seq: d.seq, what: "is out of range" });
                }
            }
        }
        if let Some(missing) = referenced(exact, near).into_iter().find(|s| !ids.contains_key(s)) {
            return Err(SketchError::Coverage { seq: missing, what: "has no id in the sketches" });
        }
        Ok(Duplicates { decisions, ids })
    }
}

/// Input rows per block of [`DropNames`]' index.
const NAME_BLOCK: u64 = 64;

/// Where the rows of each block of [`NAME_BLOCK`] input rows start in `seqs` (sorted, fewer
/// than 2^32), and where they end after the last block.
fn name_blocks(seqs: &[u64]) -> Vec<u32> {
    let count = seqs.last().map_or(0, |&s| s / NAME_BLOCK + 1) as usize;
    let mut blocks = Vec::with_capacity(count + 1);
    for (i, &seq) in seqs.iter().enumerate() {
        while blocks.len() as u64 <= seq / NAME_BLOCK {
            blocks.push(i as u32);
        }
    }
    blocks.push(seqs.len() as u32);
    blocks
}

/// The position of row `seq` in `seqs` (sorted, indexed by `blocks` as [`DropNames`]'), if
/// it is there.
fn named_position(seqs: &[u64], blocks: &[u32], seq: u64) -> Option<usize> {
    let b = usize::try_from(seq / NAME_BLOCK).ok()?;
    let (from, to) = (*blocks.get(b)? as usize, *blocks.get(b + 1)? as usize);
    seqs[from..to].binary_search(&seq).ok().map(|i| from + i)
}

/// The ids of the rows that the drop reasons name ([`referenced`]), for a merge that reads
/// the decisions as a stream ([`SplitDecisions`]): the rows, and each one's id in one string.
#[derive(Debug, Default)]
pub struct DropNames {
    seqs: Vec<u64>,
    /// Where the rows of each block of [`NAME_BLOCK`] input rows start in `seqs` (one more
    /// than there are blocks): a row is looked for among its block's few, not all of them.
    blocks: Vec<u32>,
    /// Where each row's id is in `names` (`u32::MAX` long: not found yet).
    spans: Vec<(u64, u32)>,
    names: String,
}

impl DropNames {
    /// The rows named by the exact step's and the clustering step's files (of
    /// [`ExactDecisions::write_to`] and [`write_near`]), read once as streams; their ids are
    /// still to be found ([`DropNames::find_in`]).
    pub fn referenced(exact: impl Read, near: impl Read) -> Result<DropNames, SketchError> {
        let mut seqs = Vec::new();
        let mut exact = RecordReader::<_, 2>::open(exact, EXACT_MAGIC)?;
        while let Some([_, of]) = exact.next()? {
            if of != REPEATED_ID {
                seqs.push(of);
            }
        }
        let mut near = RecordReader::<_, 4>::open(near, NEAR_MAGIC)?;
        while let Some([_, of, via, _]) = near.next()? {
            seqs.extend([of, via]);
        }
        seqs.sort_unstable();
        seqs.dedup();
        seqs.shrink_to_fit();
        if u32::try_from(seqs.len()).is_err() {
            return Err(SketchError::Format(format!(
                "{} rows named by drop reasons: more than this step handles",
                seqs.len()
            )));
        }
        let blocks = name_blocks(&seqs);
        let spans = vec![(0, u32::MAX); seqs.len()];
        Ok(DropNames { seqs, blocks, spans, names: String::new() })
    }

    /// Take the ids of the named rows that the sketch file `file` holds.
    #[cfg(unix)]
    pub fn find_in(&mut self, file: &super::SketchFile) -> Result<(), SketchError> {
        let DropNames { seqs, blocks, spans, names } = self;
        file.for_each_id(
            |seq| named_position(seqs, blocks, seq).is_some(),
            |seq, id| {
                let k = named_position(seqs, blocks, seq)
                    .ok_or(SketchError::Coverage { seq, what: "is not named" })?;
                if spans[k].1 != u32::MAX {
                    return Err(SketchError::Coverage { seq, what: "appears twice" });
                }
                spans[k] = (names.len() as u64, id.len() as u32);
                names.push_str(id);
                Ok(())
            },
        )
    }

    /// Every named row has its id.
    pub fn check(&self) -> Result<(), SketchError> {
        match self.spans.iter().position(|s| s.1 == u32::MAX) {
            Some(k) => {
                Err(SketchError::Coverage { seq: self.seqs[k], what: "has no id in the sketches" })
            }
            None => Ok(()),
        }
    }

    /// The id of row `seq`, if it is named.
    pub fn name(&self, seq: u64) -> Option<&str> {
        let (start, len) = self.spans[named_position(&self.seqs, &self.blocks, seq)?];
        self.names.get(start as usize..start as usize + len as usize)
    }
}

/// The decisions of the exact step's and the clustering step's files, read as streams for
/// rows asked for in input order: what [`Duplicates::assemble`] decides, without a decision
/// per row in memory.
pub struct SplitDecisions<'a, R> {
    exact: RecordReader<R, 2>,
    near: RecordReader<R, 4>,
    next_exact: Option<[u64; 2]>,
    next_near: Option<[u64; 4]>,
    last: Option<u64>,
    input_rows: u64,
    names: &'a DropNames,
}

impl<'a, R: Read> SplitDecisions<'a, R> {
    /// The decisions in `exact` and `near` (over the same input), with the ids `names`.
    pub fn open(exact: R, near: R, names: &'a DropNames) -> Result<Self, SketchError> {
        let exact = RecordReader::open(exact, EXACT_MAGIC)?;
        let near = RecordReader::open(near, NEAR_MAGIC)?;
        if exact.header != near.header {
            return Err(SketchError::InputRows(exact.header, near.header));
        }
        let mut v = SplitDecisions {
            input_rows: exact.header,
            exact,
            near,
            next_exact: None,
            next_near: None,
            last: None,
            names,
        };
        v.advance_exact()?;
        v.advance_near()?;
        Ok(v)
    }

    fn advance_exact(&mut self) -> Result<(), SketchError> {
        let next = self.exact.next()?;
        if let Some([seq, of]) = next {
            let ordered = self.next_exact.is_none_or(|[before, _]| before < seq)
                && seq < self.input_rows
                && (of == REPEATED_ID || of < seq);
            if !ordered {
                return Err(SketchError::Format(
                    "exact decisions out of order or out of range".into(),
                ));
            }
        }
        self.next_exact = next;
        Ok(())
    }

    fn advance_near(&mut self) -> Result<(), SketchError> {
        let next = self.near.next()?;
        if let Some([seq, of, via, _]) = next {
            let ordered = self.next_near.is_none_or(|[before, ..]| before < seq)
                && seq < self.input_rows
                && of < seq
                && via != seq;
            if !ordered {
                return Err(SketchError::Format(
                    "near decisions out of order or out of range".into(),
                ));
            }
        }
        self.next_near = next;
        Ok(())
    }

    /// Rows of the input.
    pub fn input_rows(&self) -> u64 {
        self.input_rows
    }

    /// The decision of row `seq` (after every row asked before).
    pub fn decision(&mut self, seq: u64) -> Result<Decision, SketchError> {
        if seq >= self.input_rows {
            return Err(SketchError::Coverage { seq, what: "is out of range" });
        }
        if self.last.is_some_and(|l| l >= seq) {
            return Err(SketchError::Format(format!("row {seq} asked for after a later row")));
        }
        self.last = Some(seq);
        while self.next_exact.is_some_and(|[s, _]| s < seq) {
            self.advance_exact()?;
        }
        while self.next_near.is_some_and(|[s, ..]| s < seq) {
            self.advance_near()?;
        }
        let exact = self.next_exact.filter(|r| r[0] == seq).map(|[_, of]| {
            if of == REPEATED_ID { Decision::DuplicateId } else { Decision::Exact { of } }
        });
        let near = self.next_near.filter(|r| r[0] == seq).map(|[_, of, via, j]| Decision::Near {
            of,
            via,
            jaccard: f64::from_bits(j),
        });
        match (exact, near) {
            (Some(_), Some(_)) => Err(SketchError::Format(format!(
                "row {seq} is both an exact and a near duplicate: the decisions come from different inputs"
            ))),
            (Some(v), None) | (None, Some(v)) => Ok(v),
            (None, None) => Ok(Decision::Keep),
        }
    }
}

impl<R: Read + Sync> crate::curate::Decisions for SplitDecisions<'_, R> {
    type Error = SketchError;

    fn decisions(
        &mut self,
        rows: &[(u64, crate::Pair)],
        out: &mut Vec<Decision>,
    ) -> Result<(), SketchError> {
        for (seq, _) in rows {
            out.push(self.decision(*seq)?);
        }
        Ok(())
    }

    fn name(&self, seq: u64) -> String {
        self.names.name(seq).unwrap_or_default().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Selection, SketchFile, Sketcher};
    use super::*;

    /// The decision as one process made it before the split: exact duplicates, then every
    /// candidate pair (a row and the row before it in a bucket of any band) checked in input
    /// order against one union-find over all rows.
    fn one_process(config: &CorpusDedupConfig, s: &Sketches) -> Vec<Decision> {
        let mut decisions = vec![Decision::Keep; s.len()];
        let (mut ids, mut exact) = (HashSet::new(), HashMap::new());
        let mut rows = Vec::new();
        for (r, decision) in decisions.iter_mut().enumerate() {
            if !ids.insert(s.id(r)) {
                *decision = Decision::DuplicateId;
            } else if let Some(&of) = exact.get(&s.exact(r)) {
                *decision = Decision::Exact { of };
            } else {
                exact.insert(s.exact(r), r as u64);
                rows.push(r);
            }
        }
        let sketch = |k: usize| s.near_sketch(rows[k]).unwrap();
        let mut uf = UnionFind::new(rows.len());
        let mut link = vec![(u32::MAX, 0.0); rows.len()];
        let previous = band_neighbours(rows.len(), 0..config.bands, |k, b| sketch(k).0[b]);
        for k in 0..rows.len() {
            let mut candidates: Vec<u32> =
                previous.iter().map(|p| p[k]).filter(|&c| c as usize != k).collect();
            candidates.sort_unstable();
            candidates.dedup();
            for c in candidates {
                if uf.find(c) == uf.find(k as u32) {
                    continue;
                }
                let j = sorted_jaccard(sketch(k).1, sketch(c as usize).1, config.threshold);
                if j >= config.threshold {
                    uf.union(c, k as u32);
                    for (x, y) in [(k, c), (c as usize, k as u32)] {
                        if link[x].0 == u32::MAX {
                            link[x] = (y, (j * 1e4).round() / 1e4);
                        }
                    }
                }
            }
        }
        for k in 0..rows.len() {
            let root = uf.find(k as u32) as usize;
            if root != k {
                decisions[rows[k]] = Decision::Near {
                    of: rows[root] as u64,
                    via: rows[link[k].0 as usize] as u64,
                    jaccard: link[k].1,
                };
            }
        }
        decisions
    }

    /// Rows with chains of near copies (each a few words from the one before), near copies
    /// of near copies out of order, exact copies and repeated ids.
    fn rows() -> Vec<(String, String, String)> {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut rows: Vec<(String, String, String)> = Vec::new();
        for g in 0..60 {
            let mut words: Vec<String> = (0..60).map(|_| format!("w{}", next() % 400)).collect();
            for step in 0..(1 + next() % 6) {
                rows.push((format!("g{g}s{step}"), words.join(" "), format!("def f{g}(): pass")));
                for _ in 0..(1 + next() % 2) {
                    let i = (next() % 60) as usize;
                    words[i] = format!("v{}", next() % 400);
                }
            }
        }
        for i in 0..40 {
            let (id, text, code) = rows[(next() % rows.len() as u64) as usize].clone();
            // An exact copy under a new id, or the same id again with other content.
            rows.push(if i % 2 == 0 {
                (format!("{id}x{i}"), text, code)
            } else {
                (id, format!("other {i}"), code)
            });
        }
        for i in (1..rows.len()).rev() {
            rows.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        // Bridges: two rows unlike each other (Jaccard ~0.47), then a row like both (~0.70),
        // which joins their components through the first of them it is checked against.
        for b in 0..10 {
            let words = |from: usize| {
                (from..from + 60).map(|i| format!("b{b}x{i}")).collect::<Vec<_>>().join(" ")
            };
            for (k, from) in [0, 20, 10].into_iter().enumerate() {
                rows.push((format!("bridge{b}r{k}"), words(from), String::new()));
            }
        }
        rows
    }

    /// A named row is found among its block's rows, whatever block it falls in: the first and
    /// last row of a block, blocks with no named row between named ones, past the last one.
    #[test]
    fn named_rows_are_found_by_block() {
        let seqs: Vec<u64> = vec![0, 1, 63, 64, 65, 127, 640, 641, 10_000, 10_047];
        let blocks = name_blocks(&seqs);
        assert_eq!(blocks.len() as u64, 10_047 / NAME_BLOCK + 2);
        for seq in 0..10_200u64 {
            assert_eq!(
                named_position(&seqs, &blocks, seq),
                seqs.binary_search(&seq).ok(),
                "row {seq}"
            );
        }
        assert_eq!(named_position(&seqs, &blocks, u64::MAX), None);
        assert_eq!(named_position(&[], &name_blocks(&[]), 0), None);
    }

    /// The clustering step's reader lends every set as its file holds it, in any order of
    /// asking, whatever the sizes of its window and ring; a set asked for again while it is in
    /// the younger half of the ring stays where it is, one found in the older half moves to
    /// the head, and one the ring has come round over is read again.
    #[test]
    fn set_reader_lends_the_files_sets_through_its_window_and_ring() {
        let config = CorpusDedupConfig::default();
        let rows = rows();
        let mut sketcher = Sketcher::new(&config);
        let mut parts: Vec<Sketches> = (0..2).map(|_| Sketches::new(&config)).collect();
        for (i, (id, text, code)) in rows.iter().enumerate() {
            sketcher.sketch(i as u64, id, text, code, &mut parts[i % 2]);
        }
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<SketchFile> = parts
            .iter_mut()
            .enumerate()
            .map(|(i, p)| {
                p.set_input_rows(rows.len() as u64);
                let path = dir.path().join(format!("{i}.bin"));
                let mut bytes = Vec::new();
                p.write_to(&mut bytes).unwrap();
                std::fs::write(&path, bytes).unwrap();
                SketchFile::open(std::fs::File::open(&path).unwrap()).unwrap()
            })
            .collect();
        let mut sets = Vec::new();
        for (p, file) in files.iter().enumerate() {
            file.for_each_near(|_, at| {
                if let Some((start, len)) = at {
                    let mut want = Vec::new();
                    file.read_shingles(start, len, &mut want)?;
                    sets.push((SetAt::new(p as u32, start, len), want));
                }
                Ok(())
            })
            .unwrap();
        }
        let longest = sets.iter().map(|s| s.1.len()).max().unwrap();
        assert!(sets.len() > 50 && longest > 4, "{} sets, the longest of {longest}", sets.len());
        // Forward, backward, and a stride that jumps between parts and back.
        let n = sets.len();
        let order: Vec<usize> =
            (0..n).chain((0..n).rev()).chain((0..3 * n).map(|i| i * 7 % n)).collect();
        for (window, ring) in [(1, 0), (3, 2 * longest), (16, 4 * longest), (1 << 15, 1 << 20)] {
            let mut reader = SetReader::new(&files, window, ring);
            let mut sets = sets.clone();
            for &i in &order {
                let (at, want) = &mut sets[i];
                let mut got = Vec::new();
                reader.lend(at, &mut |s| got = s.to_vec()).unwrap();
                assert_eq!(&got, want, "set {i}, window {window}, ring {ring}");
                if ring == 0 {
                    assert_eq!(at.ring, NOWHERE);
                    continue;
                }
                // Asked again at once: found where it is, in the younger half.
                let kept = at.ring;
                assert_ne!(kept, NOWHERE, "set {i} of {} shingles, ring {ring}", want.len());
                reader.lend(at, &mut |s| got = s.to_vec()).unwrap();
                assert_eq!(
                    (&got, at.ring),
                    (&*want, kept),
                    "set {i}, window {window}, ring {ring}"
                );
            }
        }
        // A set found in the older half of the ring moves to its head; once the ring has come
        // round over it, it is read again.
        let mut reader = SetReader::new(&files, 1, 4 * longest);
        let mut first = sets[0].0;
        reader.lend(&mut first, &mut |_| ()).unwrap();
        let mut k = 1;
        while reader.head - first.ring <= reader.ring.len() as u64 / 2 {
            reader.lend(&mut sets[k].0, &mut |_| ()).unwrap();
            k += 1;
        }
        let old = first.ring;
        reader.lend(&mut first, &mut |_| ()).unwrap();
        assert!(first.ring > old, "moved to the head");
        while reader.head - first.ring <= reader.ring.len() as u64 {
            reader.lend(&mut sets[k].0, &mut |_| ()).unwrap();
            k += 1;
        }
        assert!(reader.in_ring(first.ring, first.len).is_none(), "come round over");
        let mut got = Vec::new();
        reader.lend(&mut first, &mut |s| got = s.to_vec()).unwrap();
        assert_eq!(got, sets[0].1);
    }

    #[test]
    fn any_band_split_and_part_split_decides_as_one_process() {
        let config = CorpusDedupConfig { threshold: 0.6, ..CorpusDedupConfig::default() };
        let rows = rows();
        let mut sketcher = Sketcher::new(&config);
        let mut parts: Vec<Sketches> = (0..3).map(|_| Sketches::new(&config)).collect();
        let mut all = Sketches::new(&config);
        for (i, (id, text, code)) in rows.iter().enumerate() {
            sketcher.sketch(i as u64, id, text, code, &mut all);
            sketcher.sketch(i as u64, id, text, code, &mut parts[i % 3]);
        }
        for p in parts.iter_mut().chain([&mut all]) {
            p.set_input_rows(rows.len() as u64);
        }
        let expected = one_process(&config, &all);
        let near = expected
            .iter()
            .filter(|v| matches!(v, Decision::Near { via, of, .. } if via != of))
            .count();
        let exact = expected
            .iter()
            .filter(|v| matches!(v, Decision::Exact { .. } | Decision::DuplicateId))
            .count();
        assert!(
            near > 20 && exact > 30,
            "a test set with chains ({near}) and exact copies ({exact})"
        );
        // The parts as files, read back as a band task reads them: some bands' keys, the
        // shingle sets left in the file.
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<std::path::PathBuf> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let path = dir.path().join(format!("{i}.bin"));
                let mut bytes = Vec::new();
                p.write_to(&mut bytes).unwrap();
                std::fs::write(&path, bytes).unwrap();
                path
            })
            .collect();
        let read = |sel: &Selection| -> Vec<Sketches> {
            files
                .iter()
                .map(|f| {
                    Sketches::read_selected(
                        &mut std::io::BufReader::new(std::fs::File::open(f).unwrap()),
                        sel,
                    )
                    .unwrap()
                })
                .collect()
        };
        let with_ids = read(&Selection { ids: true, bands: Some(0..0), shingles: false });
        let id_refs: Vec<&Sketches> = with_ids.iter().collect();
        let decisions = exact_step(&config, &id_refs).unwrap();
        let mut bytes = Vec::new();
        decisions.write_to(&mut bytes).unwrap();
        let decisions = ExactDecisions::read_from(&mut bytes.as_slice()).unwrap();
        let whole = super::super::find_duplicates(&config, &[&all]).unwrap();
        let open: Vec<std::fs::File> =
            files.iter().map(|f| std::fs::File::open(f).unwrap()).collect();
        // The steps over the files read as streams decide the same.
        let streamed: Vec<SketchFile> = files
            .iter()
            .map(|f| SketchFile::open(std::fs::File::open(f).unwrap()).unwrap())
            .collect();
        assert_eq!(exact_step_files(&config, &streamed).unwrap(), decisions);
        assert!(
            exact_step_files(&config, &streamed[..2])
                .unwrap_err()
                .to_string()
                .contains("is missing")
        );
        for tasks in [1usize, 2, 3, 8, 32] {
            let (mut outputs, mut task_files) = (Vec::new(), Vec::new());
            for t in 0..tasks {
                let bands = t * config.bands / tasks..(t + 1) * config.bands / tasks;
                let parts =
                    read(&Selection { ids: false, bands: Some(bands.clone()), shingles: false });
                let refs: Vec<&Sketches> = parts.iter().collect();
                let candidates = band_task(&config, &refs, &decisions, bands).unwrap();
                let mut bytes = Vec::new();
                write_candidates(&mut bytes, &candidates).unwrap();
                outputs.push(read_candidates(&mut bytes.as_slice()).unwrap());
                task_files.push(bytes);
            }
            let pairs = outputs.into_iter().fold(Vec::new(), merge_candidates);
            // The clustering step's view: positions and shingle-set offsets, the sets on disk.
            let parts = read(&Selection { ids: false, bands: Some(0..0), shingles: false });
            let part_refs: Vec<&Sketches> = parts.iter().collect();
            let near = cluster(&config, &part_refs, &pairs, |p, n, out| {
                parts[p].read_shingles(&open[p], n, out)
            })
            .unwrap();
            // The clustering step's streams: the tasks' files merged, the parts' offsets.
            let feed = |f: &mut dyn FnMut(Candidate) -> Result<(), SketchError>| {
                CandidateStream::open(task_files.iter().map(Vec::as_slice))?.feed(f)
            };
            let locate =
                |nodes: &Nodes, set: &mut dyn FnMut(u64, SetAt) -> Result<(), SketchError>| {
                    for (p, file) in streamed.iter().enumerate() {
                        file.for_each_near(|seq, at| match (nodes.index(seq), at) {
                            (Some(_), Some((start, len))) => {
                                set(seq, SetAt::new(p as u32, start, len))
                            }
                            _ => Ok(()),
                        })?;
                    }
                    Ok(())
                };
            let mut set = Vec::new();
            let read = |at: &mut SetAt, f: &mut dyn FnMut(&[u32])| {
                streamed[at.part as usize].read_shingles(at.start, at.len, &mut set)?;
                f(&set);
                Ok(())
            };
            let (from_files, count) =
                cluster_with(&config, rows.len() as u64, feed, feed, locate, read).unwrap();
            assert_eq!(
                (from_files, count),
                (near.clone(), pairs.len() as u64),
                "{tasks} band tasks, streamed"
            );
            // Through the clustering step's reader: no ring, a ring that comes round many
            // times (sets copied to its head, found, lost), and one that holds every set.
            for (window, ring) in [(1, 0), (7, 64), (64, 300), (1 << 15, 1 << 20)] {
                let mut reader = SetReader::new(&streamed, window, ring);
                let lend = |at: &mut SetAt, f: &mut dyn FnMut(&[u32])| reader.lend(at, f);
                // The rows named learnt from each task's file on its own, as the step does.
                let named = |f: &mut dyn FnMut(Candidate) -> Result<(), SketchError>| {
                    task_files
                        .iter()
                        .rev()
                        .try_for_each(|file| CandidateStream::open([file.as_slice()])?.feed(f))
                };
                let got =
                    cluster_with(&config, rows.len() as u64, named, feed, locate, lend).unwrap();
                assert_eq!(
                    got,
                    (near.clone(), pairs.len() as u64),
                    "{tasks} band tasks, window {window}, ring {ring}"
                );
            }
            let mut bytes = Vec::new();
            write_near(&mut bytes, rows.len() as u64, &near).unwrap();
            let (_, near) = read_near(&mut bytes.as_slice()).unwrap();
            let got = Duplicates::assemble(
                &decisions,
                &near,
                ids_of(&id_refs, &referenced(&decisions, &near)),
            )
            .unwrap();
            for (seq, want) in expected.iter().enumerate() {
                assert_eq!(got.decision(seq as u64), *want, "row {seq} with {tasks} band tasks");
                assert_eq!(
                    got.reason(seq as u64, &rows[seq].0),
                    whole.reason(seq as u64, &rows[seq].0)
                );
            }
        }
        // A band task over the rows of other exact decisions, or keys it was not given, is refused.
        let parts = read(&Selection { ids: false, bands: Some(0..4), shingles: false });
        let refs: Vec<&Sketches> = parts.iter().collect();
        let e = band_task(&config, &refs, &decisions, 4..8).unwrap_err().to_string();
        assert!(e.contains("hold the keys of bands 0..4, not of 4..8"), "{e}");
        let other = ExactDecisions {
            input_rows: rows.len() as u64 + 1,
            dropped: decisions.dropped.clone(),
        };
        let e = band_task(&config, &refs, &other, 0..4).unwrap_err().to_string();
        assert!(e.contains("disagree on the number of input rows"), "{e}");
        let e = band_task(&config, &refs[..2], &decisions, 0..4).unwrap_err().to_string();
        assert!(e.contains("the exact step left"), "{e}");
        // A candidate in none of the parts, and corrupt step files, are errors, not panics.
        let far = [Candidate { later: rows.len() as u64 + 5, earlier: 0 }];
        let e = cluster(&config, &refs, &far, |_, _, _| Ok(())).unwrap_err().to_string();
        assert!(e.contains("is a candidate but is in no part"), "{e}");
        let e =
            cluster(&config, &refs, &[far[0], far[0]], |_, _, _| Ok(())).unwrap_err().to_string();
        assert!(e.contains("not in order, or repeated"), "{e}");
        let pair = |later, earlier| Candidate { later, earlier };
        assert_eq!(
            merge_candidates(
                vec![pair(2, 1), pair(5, 0), pair(5, 3)],
                vec![pair(2, 0), pair(5, 3), pair(9, 8)]
            ),
            [pair(2, 0), pair(2, 1), pair(5, 0), pair(5, 3), pair(9, 8)]
        );
        let mut bytes = Vec::new();
        write_candidates(&mut bytes, &[Candidate { later: 1, earlier: 3 }]).unwrap();
        assert!(
            read_candidates(&mut bytes.as_slice())
                .unwrap_err()
                .to_string()
                .contains("does not join an earlier row")
        );
        assert!(read_candidates(&mut &bytes[..bytes.len() - 1]).is_err());
        assert!(
            ExactDecisions::read_from(&mut bytes.as_slice())
                .unwrap_err()
                .to_string()
                .contains("not a `CRBEXA` file")
        );
    }
}
