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

use super::{CorpusDedupConfig, Duplicates, IdKey, SketchError, Sketches, UnionFind, Verdict, band_neighbours, sorted_jaccard};
use crate::Prehashed;

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
        write_records(w, EXACT_MAGIC, self.input_rows, self.dropped.iter().map(|&(s, o)| [s, o]), self.dropped.len())
    }

    /// Read what [`ExactDecisions::write_to`] wrote; a corrupt file is an error.
    pub fn read_from(r: &mut impl Read) -> Result<ExactDecisions, SketchError> {
        let (input_rows, records) = read_records::<2>(r, EXACT_MAGIC)?;
        let dropped: Vec<(u64, u64)> = records.into_iter().map(|[s, o]| (s, o)).collect();
        let ordered = dropped.windows(2).all(|w| w[0].0 < w[1].0) && dropped.iter().all(|&(s, o)| s < input_rows && (o == REPEATED_ID || o < s));
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
    write_records(w, CANDIDATE_MAGIC, 0, candidates.iter().map(|c| [c.later, c.earlier]), candidates.len())
}

/// Read what [`write_candidates`] wrote.
pub fn read_candidates(r: &mut impl Read) -> Result<Vec<Candidate>, SketchError> {
    let (_, records) = read_records::<2>(r, CANDIDATE_MAGIC)?;
    let candidates: Vec<Candidate> = records.into_iter().map(|[later, earlier]| Candidate { later, earlier }).collect();
    if candidates.iter().any(|c| c.earlier >= c.later) {
        return Err(SketchError::Format("a candidate pair does not join an earlier row to a later one".into()));
    }
    Ok(candidates)
}

/// Write the near decisions over an input of `input_rows` rows ([`read_near`] reads them).
pub fn write_near(w: &mut impl Write, input_rows: u64, near: &[NearDecision]) -> std::io::Result<()> {
    write_records(w, NEAR_MAGIC, input_rows, near.iter().map(|d| [d.seq, d.of, d.via, d.jaccard.to_bits()]), near.len())
}

/// Read what [`write_near`] wrote: the input's rows and the decisions.
pub fn read_near(r: &mut impl Read) -> Result<(u64, Vec<NearDecision>), SketchError> {
    let (input_rows, records) = read_records::<4>(r, NEAR_MAGIC)?;
    let near: Vec<NearDecision> = records.into_iter().map(|[seq, of, via, j]| NearDecision { seq, of, via, jaccard: f64::from_bits(j) }).collect();
    let ordered = near.windows(2).all(|w| w[0].seq < w[1].seq) && near.iter().all(|d| d.seq < input_rows && d.of < d.seq && d.via != d.seq);
    if !ordered {
        return Err(SketchError::Format("near decisions out of order or out of range".into()));
    }
    Ok((input_rows, near))
}

/// `magic`, `header`, the record count, then `count` records of `W` little-endian u64s.
fn write_records<const W: usize>(w: &mut impl Write, magic: &[u8; 8], header: u64, records: impl Iterator<Item = [u64; W]>, count: usize) -> std::io::Result<()> {
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
fn read_records<const W: usize>(r: &mut impl Read, magic: &[u8; 8]) -> Result<(u64, Vec<[u64; W]>), SketchError> {
    let mut head = [0u8; 24];
    r.read_exact(&mut head)?;
    if &head[..8] != magic {
        return Err(SketchError::Format(format!("not a `{}` file (or another format version)", String::from_utf8_lossy(&magic[..6]))));
    }
    let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    let (header, count) = (word(8), word(16));
    let mut out = Vec::with_capacity((count as usize).min(1 << 20));
    let mut buf = [0u8; 8];
    for _ in 0..count {
        let mut rec = [0u64; W];
        for v in &mut rec {
            r.read_exact(&mut buf)?;
            *v = u64::from_le_bytes(buf);
        }
        out.push(rec);
    }
    if r.read(&mut buf)? != 0 {
        return Err(SketchError::Format("bytes past the last record".into()));
    }
    Ok((header, out))
}

/// Where each row of the input is: `(part, row)`, by seq; an error when the parts were made
/// with other bands, disagree on the input's size or do not cover each seq exactly once.
fn locate_rows(config: &CorpusDedupConfig, parts: &[&Sketches]) -> Result<Vec<(u32, u32)>, SketchError> {
    check_parts(config, parts)?;
    let total = parts.first().map_or(0, |p| p.input_rows);
    let mut at: Vec<(u32, u32)> = vec![(u32::MAX, 0); total as usize];
    for (pi, p) in parts.iter().enumerate() {
        for (ri, &s) in p.seq.iter().enumerate() {
            let slot = at.get_mut(s as usize).ok_or(SketchError::Coverage { seq: s, what: "is out of range" })?;
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
pub fn exact_step(config: &CorpusDedupConfig, parts: &[&Sketches]) -> Result<ExactDecisions, SketchError> {
    let at = locate_rows(config, parts)?;
    let mut seen: HashSet<IdKey<'_>, Prehashed> = HashSet::with_capacity_and_hasher(at.len(), Prehashed);
    let mut exact: HashMap<u128, u64, Prehashed> = HashMap::with_capacity_and_hasher(at.len(), Prehashed);
    let mut dropped = Vec::new();
    for (seq, &(pi, ri)) in at.iter().enumerate() {
        let p = parts[pi as usize];
        let ri = ri as usize;
        if !seen.insert(IdKey(p.id_hash[ri], p.id(ri))) {
            dropped.push((seq as u64, REPEATED_ID));
            continue;
        }
        match exact.entry(p.exact[ri]) {
            std::collections::hash_map::Entry::Occupied(first) => dropped.push((seq as u64, *first.get())),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(seq as u64);
                if p.near_index(ri).is_none() {
                    return Err(SketchError::Format(format!("row {seq} has no near-duplicate sketch but is no duplicate")));
                }
            }
        }
    }
    Ok(ExactDecisions { input_rows: at.len() as u64, dropped })
}

/// Step 2, one task: the candidate pairs among the rows that `exact` keeps, found through the
/// bands `bands` (`parts` read with at least those bands' keys), in `(later, earlier)` order.
pub fn band_task(config: &CorpusDedupConfig, parts: &[&Sketches], exact: &ExactDecisions, bands: Range<usize>) -> Result<Vec<Candidate>, SketchError> {
    check_parts(config, parts)?;
    if let Some(p) = parts.iter().find(|p| p.input_rows != exact.input_rows) {
        return Err(SketchError::InputRows(exact.input_rows, p.input_rows));
    }
    if let Some(p) = parts.iter().find(|p| !p.is_empty() && (p.key_bands.start > bands.start || p.key_bands.end < bands.end)) {
        return Err(SketchError::Format(format!("the sketches hold the keys of bands {:?}, not of {bands:?}", p.key_bands)));
    }
    // The rows near-dedup compares, in input order: (seq, part, near sketch).
    let mut rows: Vec<(u64, u32, u32)> = Vec::new();
    for (pi, p) in parts.iter().enumerate() {
        for (ri, &seq) in p.seq.iter().enumerate() {
            if exact.is_dropped(seq) {
                continue;
            }
            let near = p.near_index(ri).ok_or_else(|| SketchError::Format(format!("row {seq} has no near-duplicate sketch but is no duplicate")))?;
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
        candidates.extend(of_row.iter().map(|&c| Candidate { later: rows[k].0, earlier: rows[c as usize].0 }));
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

/// Step 3: the candidates of every band task (`pairs`: their lists through
/// [`merge_candidates`]), checked in `(later, earlier)` order by shingle Jaccard, skipping a
/// pair already joined (which changes no component), and joined in one union-find over the
/// rows they name; every row of a component but its first is dropped in favour of the first,
/// with the row it was first joined with. `parts` (read with their row positions and
/// near-sketch indices at least) say where each row is; `shingles(part, near, out)` puts the
/// shingle set of near sketch `near` of part `part` into `out` (from memory, or from the file
/// the sketches were read from); it is asked only for rows of pairs it checks.
pub fn cluster(
    config: &CorpusDedupConfig,
    parts: &[&Sketches],
    pairs: &[Candidate],
    mut shingles: impl FnMut(usize, u32, &mut Vec<u32>) -> Result<(), SketchError>,
) -> Result<Vec<NearDecision>, SketchError> {
    if pairs.windows(2).any(|w| w[0] >= w[1]) {
        return Err(SketchError::Format("the candidate pairs are not in order, or repeated".into()));
    }
    let mut nodes: Vec<u64> = pairs.iter().flat_map(|p| [p.later, p.earlier]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    // Where each node's near sketch is: (part, near sketch).
    let mut at: Vec<(u32, u32)> = vec![(u32::MAX, 0); nodes.len()];
    for (pi, p) in parts.iter().enumerate() {
        for (ri, &seq) in p.seq.iter().enumerate() {
            if let Ok(i) = nodes.binary_search(&seq) {
                let near = p.near_index(ri).ok_or_else(|| SketchError::Format(format!("row {seq} is a candidate but has no near-duplicate sketch")))?;
                at[i] = (pi as u32, near);
            }
        }
    }
    if let Some(i) = at.iter().position(|a| a.0 == u32::MAX) {
        return Err(SketchError::Coverage { seq: nodes[i], what: "is a candidate but is in no part" });
    }
    let mut shingles = |seq: u64, out: &mut Vec<u32>| {
        let (p, n) = at[nodes.binary_search(&seq).expect("every candidate's rows are nodes")];
        shingles(p as usize, n, out)
    };
    let node = |seq: u64| nodes.binary_search(&seq).expect("every candidate's rows are nodes") as u32;
    let mut uf = UnionFind((0..nodes.len() as u32).collect());
    let mut link: Vec<(u32, f64)> = vec![(u32::MAX, 0.0); nodes.len()];
    let (mut mine, mut theirs, mut loaded) = (Vec::new(), Vec::new(), None);
    for p in pairs {
        let (k, c) = (node(p.later), node(p.earlier));
        if uf.find(c) == uf.find(k) {
            continue;
        }
        if loaded != Some(p.later) {
            shingles(p.later, &mut mine)?;
            loaded = Some(p.later);
        }
        shingles(p.earlier, &mut theirs)?;
        let j = sorted_jaccard(&mine, &theirs, config.threshold);
        if j < config.threshold {
            continue;
        }
        uf.union(c, k);
        for (x, y) in [(k, c), (c, k)] {
            if link[x as usize].0 == u32::MAX {
                link[x as usize] = (y, (j * 1e4).round() / 1e4);
            }
        }
    }
    let mut near = Vec::new();
    for k in 0..nodes.len() {
        let root = uf.find(k as u32);
        if root as usize != k {
            near.push(NearDecision { seq: nodes[k], of: nodes[root as usize], via: nodes[link[k].0 as usize], jaccard: link[k].1 });
        }
    }
    Ok(near)
}

/// The rows the drop reasons name (the kept row of each exact copy and component, and each
/// near-duplicate's link), sorted.
pub fn referenced(exact: &ExactDecisions, near: &[NearDecision]) -> Vec<u64> {
    let mut seqs: Vec<u64> = exact.dropped.iter().map(|d| d.1).filter(|&o| o != REPEATED_ID).chain(near.iter().flat_map(|d| [d.of, d.via])).collect();
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
    /// The verdict of every row from the decisions of the exact step and of [`cluster`] over
    /// the same input, and the ids of the rows they name ([`ids_of`] of [`referenced`]).
    pub fn assemble(exact: &ExactDecisions, near: &[NearDecision], ids: HashMap<u64, Box<str>>) -> Result<Duplicates, SketchError> {
        let mut verdicts = vec![Verdict::Keep; exact.input_rows as usize];
        for &(seq, of) in &exact.dropped {
            verdicts[seq as usize] = if of == REPEATED_ID { Verdict::DuplicateId } else { Verdict::Exact { of } };
        }
        for d in near {
            match verdicts.get_mut(d.seq as usize) {
                Some(v @ Verdict::Keep) => *v = Verdict::Near { of: d.of, via: d.via, jaccard: d.jaccard },
                Some(_) => {
                    return Err(SketchError::Format(format!("row {} is both an exact and a near duplicate: the decisions come from different inputs", d.seq)));
                }
                None => {
                    return Err(SketchError::Coverage { seq: d.seq, what: "is out of range" });
                }
            }
        }
        if let Some(missing) = referenced(exact, near).into_iter().find(|s| !ids.contains_key(s)) {
            return Err(SketchError::Coverage { seq: missing, what: "has no id in the sketches" });
        }
        Ok(Duplicates { verdicts, ids })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Selection, Sketcher};
    use super::*;

    /// The decision as one process made it before the split: exact duplicates, then every
    /// candidate pair (a row and the row before it in a bucket of any band) checked in input
    /// order against one union-find over all rows.
    fn one_process(config: &CorpusDedupConfig, s: &Sketches) -> Vec<Verdict> {
        let mut verdicts = vec![Verdict::Keep; s.len()];
        let (mut ids, mut exact) = (HashSet::new(), HashMap::new());
        let mut rows = Vec::new();
        for (r, verdict) in verdicts.iter_mut().enumerate() {
            if !ids.insert(s.id(r)) {
                *verdict = Verdict::DuplicateId;
            } else if let Some(&of) = exact.get(&s.exact(r)) {
                *verdict = Verdict::Exact { of };
            } else {
                exact.insert(s.exact(r), r as u64);
                rows.push(r);
            }
        }
        let sketch = |k: usize| s.near_sketch(rows[k]).unwrap();
        let mut uf = UnionFind((0..rows.len() as u32).collect());
        let mut link = vec![(u32::MAX, 0.0); rows.len()];
        let previous = band_neighbours(rows.len(), 0..config.bands, |k, b| sketch(k).0[b]);
        for k in 0..rows.len() {
            let mut candidates: Vec<u32> = previous.iter().map(|p| p[k]).filter(|&c| c as usize != k).collect();
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
                verdicts[rows[k]] = Verdict::Near { of: rows[root] as u64, via: rows[link[k].0 as usize] as u64, jaccard: link[k].1 };
            }
        }
        verdicts
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
            rows.push(if i % 2 == 0 { (format!("{id}x{i}"), text, code) } else { (id, format!("other {i}"), code) });
        }
        for i in (1..rows.len()).rev() {
            rows.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        // Bridges: two rows unlike each other (Jaccard ~0.47), then a row like both (~0.70),
        // which joins their components through the first of them it is checked against.
        for b in 0..10 {
            let words = |from: usize| (from..from + 60).map(|i| format!("b{b}x{i}")).collect::<Vec<_>>().join(" ");
            for (k, from) in [0, 20, 10].into_iter().enumerate() {
                rows.push((format!("bridge{b}r{k}"), words(from), String::new()));
            }
        }
        rows
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
        let near = expected.iter().filter(|v| matches!(v, Verdict::Near { via, of, .. } if via != of)).count();
        let exact = expected.iter().filter(|v| matches!(v, Verdict::Exact { .. } | Verdict::DuplicateId)).count();
        assert!(near > 20 && exact > 30, "a test set with chains ({near}) and exact copies ({exact})");
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
            files.iter().map(|f| Sketches::read_selected(&mut std::io::BufReader::new(std::fs::File::open(f).unwrap()), sel).unwrap()).collect()
        };
        let with_ids = read(&Selection { ids: true, bands: Some(0..0), shingles: false });
        let id_refs: Vec<&Sketches> = with_ids.iter().collect();
        let decisions = exact_step(&config, &id_refs).unwrap();
        let mut bytes = Vec::new();
        decisions.write_to(&mut bytes).unwrap();
        let decisions = ExactDecisions::read_from(&mut bytes.as_slice()).unwrap();
        let whole = super::super::find_duplicates(&config, &[&all]).unwrap();
        let open: Vec<std::fs::File> = files.iter().map(|f| std::fs::File::open(f).unwrap()).collect();
        for tasks in [1usize, 2, 3, 8, 32] {
            let mut outputs = Vec::new();
            for t in 0..tasks {
                let bands = t * config.bands / tasks..(t + 1) * config.bands / tasks;
                let parts = read(&Selection { ids: false, bands: Some(bands.clone()), shingles: false });
                let refs: Vec<&Sketches> = parts.iter().collect();
                let candidates = band_task(&config, &refs, &decisions, bands).unwrap();
                let mut bytes = Vec::new();
                write_candidates(&mut bytes, &candidates).unwrap();
                outputs.push(read_candidates(&mut bytes.as_slice()).unwrap());
            }
            let pairs = outputs.into_iter().fold(Vec::new(), merge_candidates);
            // The clustering step's view: positions and shingle-set offsets, the sets on disk.
            let parts = read(&Selection { ids: false, bands: Some(0..0), shingles: false });
            let part_refs: Vec<&Sketches> = parts.iter().collect();
            let near = cluster(&config, &part_refs, &pairs, |p, n, out| parts[p].read_shingles(&open[p], n, out)).unwrap();
            let mut bytes = Vec::new();
            write_near(&mut bytes, rows.len() as u64, &near).unwrap();
            let (_, near) = read_near(&mut bytes.as_slice()).unwrap();
            let got = Duplicates::assemble(&decisions, &near, ids_of(&id_refs, &referenced(&decisions, &near))).unwrap();
            for (seq, want) in expected.iter().enumerate() {
                assert_eq!(got.verdict(seq as u64), *want, "row {seq} with {tasks} band tasks");
                assert_eq!(got.reason(seq as u64, &rows[seq].0), whole.reason(seq as u64, &rows[seq].0));
            }
        }
        // A band task over the rows of other exact decisions, or keys it was not given, is refused.
        let parts = read(&Selection { ids: false, bands: Some(0..4), shingles: false });
        let refs: Vec<&Sketches> = parts.iter().collect();
        let e = band_task(&config, &refs, &decisions, 4..8).unwrap_err().to_string();
        assert!(e.contains("hold the keys of bands 0..4, not of 4..8"), "{e}");
        let other = ExactDecisions { input_rows: rows.len() as u64 + 1, dropped: decisions.dropped.clone() };
        let e = band_task(&config, &refs, &other, 0..4).unwrap_err().to_string();
        assert!(e.contains("disagree on the number of input rows"), "{e}");
        let e = band_task(&config, &refs[..2], &decisions, 0..4).unwrap_err().to_string();
        assert!(e.contains("the exact step left"), "{e}");
        // A candidate in none of the parts, and corrupt step files, are errors, not panics.
        let far = [Candidate { later: rows.len() as u64 + 5, earlier: 0 }];
        let e = cluster(&config, &refs, &far, |_, _, _| Ok(())).unwrap_err().to_string();
        assert!(e.contains("is a candidate but is in no part"), "{e}");
        let e = cluster(&config, &refs, &[far[0], far[0]], |_, _, _| Ok(())).unwrap_err().to_string();
        assert!(e.contains("not in order, or repeated"), "{e}");
        let pair = |later, earlier| Candidate { later, earlier };
        assert_eq!(
            merge_candidates(vec![pair(2, 1), pair(5, 0), pair(5, 3)], vec![pair(2, 0), pair(5, 3), pair(9, 8)]),
            [pair(2, 0), pair(2, 1), pair(5, 0), pair(5, 3), pair(9, 8)]
        );
        let mut bytes = Vec::new();
        write_candidates(&mut bytes, &[Candidate { later: 1, earlier: 3 }]).unwrap();
        assert!(read_candidates(&mut bytes.as_slice()).unwrap_err().to_string().contains("does not join an earlier row"));
        assert!(read_candidates(&mut &bytes[..bytes.len() - 1]).is_err());
        assert!(ExactDecisions::read_from(&mut bytes.as_slice()).unwrap_err().to_string().contains("not a `CRBEXA` file"));
    }
}
