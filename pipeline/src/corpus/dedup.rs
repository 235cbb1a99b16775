//! The near-duplicate decision split into processes (issue #35): the steps of
//! [`coreb_curation::duplicates::steps`] over the shard parts' sketches, each step's output a
//! part with its marker under `<out>/dedup/`:
//!
//! ```text
//! <out>/dedup/exact/part=000-of-001/exact.bin          repeated ids and exact copies
//! <out>/dedup/bands/part=III-of-TTT/candidates.bin     the candidate pairs of band range I of T
//! <out>/dedup/clusters/part=000-of-001/near.bin        the near-duplicate components
//! ```
//!
//! A part's `_SUCCESS` (the shard parts' [`PartMarker`]) holds a key made of the plan hash,
//! the step and the sha256 of every file the step read (the sketch files, the exact step's
//! file, the band tasks' files), so a part made from other inputs is refused, and a complete
//! one is not redone: a killed task leaves no part (only its `.part=….tmp` directory) and a
//! rerun redoes it alone. Each step reads only the columns of the sketch files it needs, and
//! the exact and clustering steps read them as streams ([`SketchFile`]) rather than holding
//! them: the exact step sorts 24 bytes per row (id hashes, then exact keys); a band task holds
//! the keys of its bands ([`Sketches::read_selected`]); the clustering step reads the band
//! tasks' files as streams (each on its own to learn the rows pairs name, then merged) and
//! holds, per row that a candidate pair names, where its shingle set is, a union-find slot and
//! a link; the two sets of a pair it checks come from read-ahead windows over the sketch files
//! or a ring of recent sets ([`steps::SetReader`]). The merge streams the decisions from the
//! exact and clustering steps' files and holds only the ids of the rows that drop reasons name.
//!
//! `coreb merge corpus` uses the clustering step's result when it is complete for the current
//! parts; with `--dedup-tasks T` it first runs the missing steps as processes of this binary
//! (the `T` band tasks at once), as a scheduler would run them as jobs.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_base::durable::AtomicFile;
use coreb_curation::duplicates::SketchFile;
use coreb_curation::duplicates::steps::{self, ExactDecisions};
use coreb_curation::{Selection, SketchError, Sketches};
use rayon::prelude::*;

use super::{CorpusRun, Dups};
use clap::ValueEnum;
use coreb_data::releases::FileEntry;

use crate::shard::ShardSpec;
use crate::shard::{self, PartMarker, PartWriter, part_done, part_name, read_part_marker};

/// A step of the split near-duplicate decision of `coreb corpus` (`--dedup-step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DedupStep {
    /// Repeated ids and exact copies, over the ids and exact keys of every row.
    Exact,
    /// Similar pairs through one range of bands (`--task I/T`).
    Bands,
    /// The similar pairs of every band task joined into components.
    Clusters,
}

impl DedupStep {
    /// Its name on the command line and in `<output>/dedup/`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            DedupStep::Exact => "exact",
            DedupStep::Bands => "bands",
            DedupStep::Clusters => "clusters",
        }
    }
}

/// What one dedup step process did.
#[derive(Debug, Clone)]
pub(crate) struct StepOutcome {
    /// Its part was already complete for the current inputs: nothing was done.
    pub(crate) already_done: bool,
    /// Its directory.
    pub(crate) dir: PathBuf,
    /// What it found (rows dropped, pairs, components).
    pub(crate) facts: serde_json::Map<String, serde_json::Value>,
}

/// The one task of the exact and clustering steps.
const ONE: ShardSpec = ShardSpec { index: 0, count: 1 };

/// The sha256 of a part's file, from its checked marker.
fn file_sha(dir: &Path, file: &str) -> anyhow::Result<String> {
    let marker = read_part_marker(dir)?;
    Ok(marker
        .files
        .get(file)
        .with_context(|| format!("`{}` lists no `{file}`", dir.join("_SUCCESS").display()))?
        .sha256
        .clone())
}

/// The key of a step's parts: the plan hash, the step and the sha256 of each file it reads.
fn step_key(plan: &str, step: DedupStep, inputs: &[String]) -> String {
    coreb_base::hashing::sha256_hex(
        serde_json::json!({"plan": plan, "step": step.name(), "inputs": inputs})
            .to_string()
            .as_bytes(),
    )
}

/// Read the sketch file of each shard part of `chain`, only the columns `selection` names, as
/// sketches of the whole input.
pub(super) fn read_sketches(chain: &Chain, selection: &Selection) -> anyhow::Result<Vec<Sketches>> {
    chain
        .parts
        .par_iter()
        .map(|dir| {
            let path = dir.join("sketches.bin");
            let mut r = BufReader::with_capacity(1 << 20, fs_err::File::open(&path)?);
            let mut s = Sketches::read_selected(&mut r, selection)
                .with_context(|| format!("reading `{}`", path.display()))?;
            s.cover(chain.input_rows).with_context(|| format!("reading `{}`", path.display()))?;
            Ok(s)
        })
        .collect()
}

/// The sketch file of each shard part of `chain`, opened as column streams over the whole
/// input; its row count must be `input_rows` when given (the exact step's).
fn sketch_files(chain: &Chain, input_rows: Option<u64>) -> anyhow::Result<Vec<SketchFile>> {
    if let Some(rows) = input_rows.filter(|&r| r != chain.input_rows) {
        bail!(
            "the shard parts in `{}` cover {} input rows, the exact step {rows}",
            chain.parts.first().and_then(|p| p.parent()).unwrap_or(Path::new("")).display(),
            chain.input_rows
        );
    }
    chain
        .parts
        .iter()
        .map(|dir| {
            let path = dir.join("sketches.bin");
            let mut file = SketchFile::open(
                std::fs::File::open(&path)
                    .with_context(|| format!("opening `{}`", path.display()))?,
            )
            .with_context(|| format!("reading `{}`", path.display()))?;
            file.cover(chain.input_rows)
                .with_context(|| format!("reading `{}`", path.display()))?;
            Ok(file)
        })
        .collect()
}

/// Write one file of a part through the durable writer.
fn write_file(
    part: &PartWriter,
    name: &str,
    write: impl FnOnce(&mut BufWriter<AtomicFile>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let path = part.path(name);
    let mut w = BufWriter::with_capacity(1 << 20, AtomicFile::create(&path)?);
    write(&mut w)
        .and_then(|()| w.into_inner().map_err(|e| e.into_error())?.commit())
        .with_context(|| format!("writing `{}`", path.display()))
}

/// Read one file of a part.
fn read_file<T>(
    path: &Path,
    read: impl FnOnce(&mut BufReader<fs_err::File>) -> Result<T, coreb_curation::SketchError>,
) -> anyhow::Result<T> {
    let mut r = BufReader::with_capacity(1 << 20, fs_err::File::open(path)?);
    read(&mut r).with_context(|| format!("reading `{}`", path.display()))
}

/// The complete shard parts the steps read, and the exact step's key (from their sketch
/// files' hashes).
pub(super) struct Chain {
    /// The shard parts' directories.
    parts: Vec<PathBuf>,
    /// The files each part's marker lists (only when read with `full`: empty otherwise).
    files: Vec<BTreeMap<String, FileEntry>>,
    /// The sha256 of each part's sketch file, from its marker.
    shas: Vec<String>,
    /// The input's row count ([`input_rows`]); each part's sketch file gives the rows it
    /// counted, up to where it stopped reading.
    input_rows: u64,
    exact_key: String,
}

/// The input's row count, from the shard parts' markers: a shard process counts the rows of
/// the input up to where it stopped reading (the end of its range, or of the last source it
/// reads whole), and the last one reads to the end. The parts must divide the input between
/// them: every part's count within the last one's, and their rows adding up to it (each
/// input row in exactly one part); otherwise they were made from different inputs.
fn input_rows(parts_dir: &Path, parts: &[(PathBuf, PartMarker)]) -> anyhow::Result<u64> {
    let fact = |m: &PartMarker, name: &str| {
        m.facts
            .get(name)
            .and_then(serde_json::Value::as_u64)
            .with_context(|| format!("a corpus part's `_SUCCESS` without `{name}`"))
    };
    let counts = parts
        .iter()
        .map(|(_, m)| Ok((fact(m, "input_rows")?, fact(m, "rows")?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let total = counts.last().map_or(0, |c| c.0);
    let rows: u64 = counts.iter().map(|c| c.1).sum();
    if let Some(i) = counts.iter().position(|c| c.0 > total) {
        bail!(
            "the shard parts in `{}` were made from different inputs: part {i} counted {} input rows, the last part {total}",
            parts_dir.display(),
            counts[i].0
        );
    }
    if rows != total {
        bail!(
            "the shard parts in `{}` were made from different inputs: they hold {rows} rows of an input of {total}",
            parts_dir.display()
        );
    }
    Ok(total)
}

/// The shard parts of one count under `parts_dir`, all complete for `plan` by their markers,
/// with their sketch file's sha256, checked by size only (the merge and the exact step hash
/// every file); `None` at the first doubt.
fn parts_by_marker(parts_dir: &Path, plan: &str) -> Option<Vec<(PathBuf, PartMarker)>> {
    let mut names: Vec<(u32, u32)> = fs_err::read_dir(parts_dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str().and_then(shard::parse_part_name))
        .collect();
    names.sort_unstable();
    let n = names.first()?.1;
    if names.iter().enumerate().any(|(i, &(index, count))| index as usize != i || count != n)
        || names.len() != n as usize
    {
        return None;
    }
    names
        .into_iter()
        .map(|(index, count)| {
            let dir = parts_dir.join(part_name(ShardSpec { index, count }));
            let marker: PartMarker =
                serde_json::from_str(&fs_err::read_to_string(dir.join("_SUCCESS")).ok()?).ok()?;
            let entry = marker.files.get("sketches.bin")?;
            let fits = marker.plan == plan
                && marker.shard == index
                && marker.shards == count
                && fs_err::metadata(dir.join("sketches.bin")).ok()?.len() == entry.bytes;
            fits.then_some((dir, marker))
        })
        .collect()
}

impl Chain {
    /// The shard parts' directories.
    pub(super) fn parts(&self) -> &[PathBuf] {
        &self.parts
    }

    /// The file `rel` of part `p` as its marker describes it (when read with `full`).
    pub(super) fn file(&self, p: usize, rel: &str) -> Option<&FileEntry> {
        self.files.get(p)?.get(rel)
    }
}

impl CorpusRun {
    fn dedup_dir(&self, step: DedupStep) -> PathBuf {
        self.out().join("dedup").join(step.name())
    }

    /// The complete shard parts and the exact step's key. With `full` (the merge), every
    /// part's marker is read and every file's size checked, not its hash: the merge hashes the
    /// sketch files up front ([`CorpusRun::check_sketches`]) and each spool file as it streams
    /// it, checked before anything made from it is committed ([`Chain::file`]).
    /// Otherwise the markers are trusted and sizes checked, the files hashed at the first doubt.
    pub(super) fn chain(&self, full: bool) -> anyhow::Result<Chain> {
        let parts_dir = self.out().join("parts");
        let found = if full { None } else { parts_by_marker(&parts_dir, &self.plan_hash) };
        let found = match found {
            Some(found) => found,
            None => {
                let rerun = |i: u32, n: u32| self.part_rerun(i, n);
                if full {
                    shard::complete_parts_with(
                        &parts_dir,
                        &self.plan_hash,
                        "corpus",
                        rerun,
                        shard::read_part_marker_sized,
                    )?
                } else {
                    shard::complete_parts(&parts_dir, &self.plan_hash, "corpus", rerun)?
                }
            }
        };
        let input_rows = input_rows(&parts_dir, &found)?;
        let shas = found
            .iter()
            .map(|(_, m)| {
                Ok(m.files
                    .get("sketches.bin")
                    .context("a corpus part without `sketches.bin`")?
                    .sha256
                    .clone())
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let (parts, files) = found
            .into_iter()
            .map(|(dir, m)| (dir, if full { m.files } else { BTreeMap::new() }))
            .unzip();
        Ok(Chain {
            exact_key: step_key(&self.plan_hash, DedupStep::Exact, &shas),
            parts,
            files,
            shas,
            input_rows,
        })
    }

    /// The command that redoes shard part `i` of `n`.
    fn part_rerun(&self, i: u32, n: u32) -> String {
        format!("run `coreb corpus {} --shard {i}/{n}`", self.manifest.display())
    }

    /// The merge's refusal of shard part `dir` because its file `path` is not the one its
    /// marker describes: the words of [`shard::complete_parts`].
    pub(super) fn damaged_part(&self, dir: &Path, path: &Path) -> anyhow::Error {
        let (i, n) = part_of(dir);
        shard::cannot_merge(
            "corpus",
            &[shard::damaged_part(i, n, &shard::damaged_file(path), &self.part_rerun(i, n))],
        )
    }

    /// Every part's sketch file is still the one its marker describes; an error naming the
    /// command that redoes a part otherwise (in the merge's words when `merging`).
    pub(super) fn check_sketches(&self, chain: &Chain, merging: bool) -> anyhow::Result<()> {
        chain.parts.par_iter().zip(&chain.shas).try_for_each(|(dir, sha)| {
            let path = dir.join("sketches.bin");
            if coreb_base::hashing::sha256_file(&path)? != *sha {
                if merging {
                    return Err(self.damaged_part(dir, &path));
                }
                let (i, n) = part_of(dir);
                bail!("{}: {}", shard::damaged_file(&path), self.part_rerun(i, n));
            }
            Ok(())
        })
    }

    /// The exact step's part, complete for `chain`, and the band tasks' key; an error naming
    /// the command that makes it otherwise.
    fn bands_key(&self, chain: &Chain) -> anyhow::Result<(PathBuf, String)> {
        let dir = self.dedup_dir(DedupStep::Exact).join(part_name(ONE));
        if !part_done(&self.dedup_dir(DedupStep::Exact), ONE, &chain.exact_key) {
            bail!(
                "the exact step is missing, incomplete or was made from other parts (`{}`): run `coreb corpus {} --dedup-step exact`",
                dir.display(),
                self.manifest.display()
            );
        }
        let key = step_key(&self.plan_hash, DedupStep::Bands, &[file_sha(&dir, "exact.bin")?]);
        Ok((dir, key))
    }

    /// The band tasks' complete parts (one task count) and the clustering step's key.
    fn clusters_key(&self, bands_key: &str) -> anyhow::Result<(Vec<PathBuf>, String)> {
        let rerun = |i: u32, n: u32| {
            format!(
                "run `coreb corpus {} --dedup-step bands --task {i}/{n}`",
                self.manifest.display()
            )
        };
        let parts: Vec<PathBuf> = shard::complete_parts(
            &self.dedup_dir(DedupStep::Bands),
            bands_key,
            "dedup band",
            rerun,
        )?
        .into_iter()
        .map(|(d, _)| d)
        .collect();
        let mut shas = parts
            .iter()
            .map(|d| file_sha(d, "candidates.bin"))
            .collect::<anyhow::Result<Vec<_>>>()?;
        shas.push(bands_key.to_owned());
        Ok((parts, step_key(&self.plan_hash, DedupStep::Clusters, &shas)))
    }

    /// Run one step (`task`: the band task, `0/1` for the other steps) as this process.
    pub(crate) fn dedup_step(
        &self,
        step: DedupStep,
        task: ShardSpec,
    ) -> anyhow::Result<StepOutcome> {
        let f = self.file();
        let chain = self.chain(false)?;
        if step == DedupStep::Exact {
            // The files this step reads are hashed (the merge hashes every file of the parts).
            self.check_sketches(&chain, false)?;
        }
        let (key, inputs) = match step {
            DedupStep::Exact => (chain.exact_key.clone(), Vec::new()),
            DedupStep::Bands => {
                if task.count as usize > f.dedup.bands {
                    bail!(
                        "{} band tasks for {} bands: give at most one task per band",
                        task.count,
                        f.dedup.bands
                    );
                }
                let (dir, key) = self.bands_key(&chain)?;
                (key, vec![dir])
            }
            DedupStep::Clusters => {
                self.clusters_key(&self.bands_key(&chain)?.1).map(|(parts, key)| (key, parts))?
            }
        };
        if step != DedupStep::Bands && task != ONE {
            bail!("`--task` is for `--dedup-step bands`");
        }
        let steps_dir = self.dedup_dir(step);
        if part_done(&steps_dir, task, &key) {
            return Ok(StepOutcome {
                already_done: true,
                dir: steps_dir.join(part_name(task)),
                facts: Default::default(),
            });
        }
        let part = PartWriter::begin(&steps_dir, task)?;
        let facts = match step {
            DedupStep::Exact => {
                // Streamed: 24 bytes per row held, not the ids and exact keys of every row.
                let files = sketch_files(&chain, None)?;
                let exact = steps::exact_step_files(&f.dedup, &files).with_context(|| {
                    format!(
                        "the exact step over the sketches of `{}`",
                        self.out().join("parts").display()
                    )
                })?;
                write_file(&part, "exact.bin", |w| exact.write_to(w))?;
                serde_json::json!({"input_rows": exact.input_rows(), "dropped": exact.dropped()})
            }
            DedupStep::Bands => {
                let exact = read_file(&inputs[0].join("exact.bin"), ExactDecisions::read_from)?;
                let bands = band_range(f.dedup.bands, task);
                let sketches = read_sketches(
                    &chain,
                    &Selection { ids: false, bands: Some(bands.clone()), shingles: false },
                )?;
                let refs: Vec<&Sketches> = sketches.iter().collect();
                let candidates = steps::band_task(&f.dedup, &refs, &exact, bands.clone())
                    .with_context(|| format!("band task {}/{}", task.index, task.count))?;
                write_file(&part, "candidates.bin", |w| steps::write_candidates(w, &candidates))?;
                serde_json::json!({"bands": [bands.start, bands.end], "candidates": candidates.len()})
            }
            DedupStep::Clusters => {
                let exact = read_file(
                    &self.dedup_dir(DedupStep::Exact).join(part_name(ONE)).join("exact.bin"),
                    ExactDecisions::read_from,
                )?;
                // Nothing per pair is held: the band tasks' files are read as streams (twice),
                // each part's row positions and shingle offsets streamed once, and the two
                // shingle sets of a pair checked lent by a `SetReader` (windows over the
                // sketch files and a ring of recent sets).
                let files = sketch_files(&chain, Some(exact.input_rows()))?;
                let bands_dir = self.dedup_dir(DedupStep::Bands);
                let open = |d: &PathBuf| -> Result<_, SketchError> {
                    Ok(BufReader::with_capacity(
                        1 << 16,
                        std::fs::File::open(d.join("candidates.bin"))?,
                    ))
                };
                // The rows pairs name: each task's file on its own, unmerged.
                let named = |feed: &mut dyn FnMut(steps::Candidate) -> Result<(), SketchError>| {
                    inputs
                        .iter()
                        .try_for_each(|d| steps::CandidateStream::open([open(d)?])?.feed(feed))
                };
                // The pairs in order: the tasks' files merged.
                let candidates =
                    |feed: &mut dyn FnMut(steps::Candidate) -> Result<(), SketchError>| {
                        steps::CandidateStream::open(inputs.iter().map(open).collect::<Result<
                            Vec<_>,
                            SketchError,
                        >>(
                        )?)?
                        .feed(feed)
                    };
                let locate = |nodes: &steps::Nodes, set: &mut dyn FnMut(u64, steps::SetAt) -> Result<(), SketchError>| {
                    for (p, (dir, file)) in chain.parts.iter().zip(&files).enumerate() {
                        file.for_each_near(|seq, at| match (nodes.index(seq), at) {
                            (None, _) => Ok(()),
                            (Some(_), Some((start, len))) => set(seq, steps::SetAt::new(p as u32, start, len)),
                            (Some(_), None) => Err(SketchError::Format(format!("row {seq} is a candidate but has no near-duplicate sketch in `{}`", dir.display()))),
                        })?;
                    }
                    Ok(())
                };
                // Windows of 2^15 shingles per part; a ring of 8 shingles per input row, at
                // least 2^16 and at most 2^26 (256 MiB).
                let ring = (exact.input_rows().saturating_mul(8)).clamp(1 << 16, 1 << 26) as usize;
                let mut reader = steps::SetReader::new(&files, 1 << 15, ring);
                let shingles =
                    |at: &mut steps::SetAt, lend: &mut dyn FnMut(&[u32])| reader.lend(at, lend);
                let (near, pairs) = steps::cluster_with(
                    &f.dedup,
                    exact.input_rows(),
                    named,
                    candidates,
                    locate,
                    shingles,
                )
                .with_context(|| {
                    format!(
                        "clustering the candidates of `{}` over the sketches of `{}`",
                        bands_dir.display(),
                        self.out().join("parts").display()
                    )
                })?;
                write_file(&part, "near.bin", |w| steps::write_near(w, exact.input_rows(), &near))?;
                serde_json::json!({"band_tasks": inputs.len(), "candidates": pairs, "near_duplicates": near.len()})
            }
        };
        let facts = facts.as_object().cloned().unwrap_or_default();
        let marker = PartMarker {
            plan: key,
            shard: task.index,
            shards: task.count,
            files: Default::default(),
            facts: facts.clone(),
        };
        let dir = part.finish(&marker)?;
        Ok(StepOutcome { already_done: false, dir, facts })
    }

    /// The duplicates decided by the split steps, when the clustering step is complete for
    /// the current shard parts; `None` when it is not. The decisions stay in the steps' files
    /// (each output shard reads them as a stream); only the ids of the rows that drop reasons
    /// name are read, from the sketch files.
    pub(super) fn split_duplicates(&self, chain: &Chain) -> anyhow::Result<Option<Dups>> {
        let Ok((exact_dir, bands_key)) = self.bands_key(chain) else {
            return Ok(None);
        };
        let Ok((_, clusters_key)) = self.clusters_key(&bands_key) else {
            return Ok(None);
        };
        if !part_done(&self.dedup_dir(DedupStep::Clusters), ONE, &clusters_key) {
            return Ok(None);
        }
        let exact = exact_dir.join("exact.bin");
        let near = self.dedup_dir(DedupStep::Clusters).join(part_name(ONE)).join("near.bin");
        let open = |p: &Path| fs_err::File::open(p).map(|f| BufReader::with_capacity(1 << 16, f));
        let mut names = steps::DropNames::referenced(open(&exact)?, open(&near)?)
            .with_context(|| format!("reading `{}` and `{}`", exact.display(), near.display()))?;
        // Both files cover the same input (checked again as each shard streams them).
        let rows = steps::SplitDecisions::open(open(&exact)?, open(&near)?, &names)
            .with_context(|| format!("reading `{}` and `{}`", exact.display(), near.display()))?
            .input_rows();
        let files = sketch_files(chain, Some(rows))?;
        for (dir, file) in chain.parts.iter().zip(&files) {
            names
                .find_in(file)
                .with_context(|| format!("reading `{}`", dir.join("sketches.bin").display()))?;
        }
        names.check().with_context(|| {
            format!("the drop reasons of `{}` and `{}`", exact.display(), near.display())
        })?;
        Ok(Some(Dups::Split { exact, near, names }))
    }

    /// Run the steps not yet complete as processes of this binary: the exact step, the `tasks`
    /// band tasks at once, the clustering step. Band parts of another task count are removed.
    pub(super) fn run_dedup_tasks(&self, chain: &Chain, tasks: u32) -> anyhow::Result<()> {
        if tasks as usize > self.file().dedup.bands {
            bail!(
                "{tasks} band tasks for {} bands: give at most one task per band",
                self.file().dedup.bands
            );
        }
        if !part_done(&self.dedup_dir(DedupStep::Exact), ONE, &chain.exact_key) {
            self.spawn_steps(DedupStep::Exact, &[ONE])?;
        }
        let (_, bands_key) = self.bands_key(chain)?;
        let bands_dir = self.dedup_dir(DedupStep::Bands);
        if bands_dir.exists() {
            for e in fs_err::read_dir(&bands_dir)? {
                let e = e?;
                let other = e
                    .file_name()
                    .to_str()
                    .and_then(shard::parse_part_name)
                    .is_some_and(|(_, n)| n != tasks);
                if other {
                    fs_err::remove_dir_all(e.path())?;
                }
            }
        }
        let todo: Vec<ShardSpec> = (0..tasks)
            .map(|index| ShardSpec { index, count: tasks })
            .filter(|&t| !part_done(&bands_dir, t, &bands_key))
            .collect();
        self.printer.status(format!(
            "near-duplicates in {tasks} band tasks: {} to run, {} complete",
            todo.len(),
            tasks as usize - todo.len()
        ));
        self.spawn_steps(DedupStep::Bands, &todo)?;
        let (_, clusters_key) = self.clusters_key(&bands_key)?;
        if !part_done(&self.dedup_dir(DedupStep::Clusters), ONE, &clusters_key) {
            self.spawn_steps(DedupStep::Clusters, &[ONE])?;
        }
        Ok(())
    }

    /// Start `coreb corpus <manifest> --dedup-step <step> --task I/T` for every task at once
    /// and wait for all; an error names each failed task with the end of its stderr.
    fn spawn_steps(&self, step: DedupStep, tasks: &[ShardSpec]) -> anyhow::Result<()> {
        let exe = std::env::current_exe().context("finding the coreb binary")?;
        // Share the cores among the tasks unless the caller chose a thread count.
        let threads = (rayon::current_num_threads() / tasks.len().max(1)).max(1);
        let children = tasks
            .iter()
            .map(|t| {
                let mut cmd = std::process::Command::new(&exe);
                cmd.arg("corpus").arg(&self.manifest).args(["--dedup-step", step.name(), "--json"]);
                if step == DedupStep::Bands {
                    cmd.args(["--task", &format!("{}/{}", t.index, t.count)]);
                }
                if std::env::var_os("RAYON_NUM_THREADS").is_none() {
                    cmd.env("RAYON_NUM_THREADS", threads.to_string());
                }
                let child = cmd
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .with_context(|| format!("starting `{}`", exe.display()))?;
                Ok((*t, child))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut failed = Vec::new();
        for (t, child) in children {
            let out = child.wait_with_output()?;
            let what = format!("dedup {} {}/{}", step.name(), t.index, t.count);
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                failed.push(format!(
                    "{what} failed ({}): {}",
                    out.status,
                    err.trim().lines().last().unwrap_or_default()
                ));
                continue;
            }
            let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            self.printer.status(format!("{what}: {}", line));
        }
        if !failed.is_empty() {
            bail!("{}", failed.join("\n"));
        }
        Ok(())
    }
}

/// `(i, N)` of the shard part directory `dir` (`(0, 0)` for a name that is not a part's).
fn part_of(dir: &Path) -> (u32, u32) {
    dir.file_name().and_then(|n| n.to_str()).and_then(shard::parse_part_name).unwrap_or((0, 0))
}

/// The bands of task `task`: `T` contiguous ranges, as equal as they can be.
fn band_range(bands: usize, task: ShardSpec) -> std::ops::Range<usize> {
    let (i, n) = (task.index as usize, task.count as usize);
    i * bands / n..(i + 1) * bands / n
}

/// This process's peak resident memory so far, in MiB.
pub(crate) fn peak_rss_mib() -> f64 {
    // SAFETY: `getrusage` fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    usage.ru_maxrss as f64 / 1024.0
}
