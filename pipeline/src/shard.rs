//! Shard processes (`--shard i/N`) and their merge, shared by the corpus runner
//! ([`crate::corpus`]) and the build engine's shardable stages ([`crate::engine`]: `rewrite`,
//! `distract`, `abbreviate`, `generate`, `execute`, `queries`); neither reaches into the
//! other for them.
//!
//! One convention for all of them:
//! - a shard process keeps the items whose id hash ([`in_slice`]: [`coreb_base::shard`], xxh3
//!   of the id, the hash the corpus's scan partitions by too) falls in shard `i` of `N`, never
//!   by position;
//! - it writes its part to `…/parts/part=III-of-NNN/`, through a `.part=III-of-NNN.tmp`
//!   directory renamed into place once its `_SUCCESS` marker ([`PartMarker`]: the plan hash,
//!   `i`, `N`, counts, the sha256 and size of every file of the part) is written after its
//!   files are fsynced, so a part without the marker is incomplete and a torn or edited one
//!   is caught by its hashes;
//! - the merge ([`complete_parts`]) takes parts `0..N` of one shard count, each complete and
//!   made from the current plan, and otherwise refuses, naming every part that is not and
//!   the command that makes it.
//!
//! Processes sharing one output directory (a shared file system) serialise their writes to the
//! artifact store with [`Lock`], an exclusive `flock` on a file beside it.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use coreb_base::durable;

use crate::artifacts::hash_files;
use coreb_data::releases::FileEntry;

/// One shard of `N`, as `--shard I/N` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardSpec {
    /// `I`, from 0.
    pub(crate) index: u32,
    /// `N`, at least 1.
    pub(crate) count: u32,
}

impl ShardSpec {
    /// Parse `I/N` with `I < N`.
    pub(crate) fn parse(s: &str) -> Result<ShardSpec, String> {
        let (i, n) =
            s.split_once('/').ok_or_else(|| format!("`{s}`: expected `I/N`, e.g. `0/4`"))?;
        let index: u32 =
            i.trim().parse().map_err(|_| format!("`{s}`: `{i}` is not a shard number"))?;
        let count: u32 =
            n.trim().parse().map_err(|_| format!("`{s}`: `{n}` is not a shard count"))?;
        if count == 0 || index >= count {
            return Err(format!("`{s}`: the shard must be in 0..{count} and the count at least 1"));
        }
        Ok(ShardSpec { index, count })
    }
}

/// Whether the item `id` belongs to shard `slice` (all items belong to `0/1`).
pub(crate) fn in_slice(id: &str, slice: ShardSpec) -> bool {
    coreb_base::shard::shard_of_id(coreb_base::shard::id_hash(id), slice.count) == slice.index
}

/// The directory name of a shard process's part.
pub(crate) fn part_name(slice: ShardSpec) -> String {
    format!("part={:03}-of-{:03}", slice.index, slice.count)
}

/// `(i, N)` of a part directory's name.
pub(crate) fn parse_part_name(name: &str) -> Option<(u32, u32)> {
    let (i, n) = name.strip_prefix("part=")?.split_once("-of-")?;
    Some((i.parse().ok()?, n.parse().ok()?))
}

/// The `_SUCCESS` of a part: written last, so a part without it is incomplete. `facts`
/// holds what the stage needs to merge (counts, summaries); readers ignore what they do not
/// know.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartMarker {
    /// The plan hash (corpus) or stage key (build stages) the part was made from.
    pub(crate) plan: String,
    /// `i`.
    pub(crate) shard: u32,
    /// `N`.
    pub(crate) shards: u32,
    /// The sha256 and size of every file of the part (relative paths), filled in by
    /// [`PartWriter::finish`].
    #[serde(default)]
    pub(crate) files: BTreeMap<String, FileEntry>,
    /// Stage-specific facts.
    #[serde(flatten)]
    pub(crate) facts: serde_json::Map<String, serde_json::Value>,
}

/// Read a part's `_SUCCESS` and check that every file it lists is still the one it
/// describes; an error says which is not.
pub(crate) fn read_part_marker(dir: &Path) -> anyhow::Result<PartMarker> {
    read_marker_checking(dir, file_verified)
}

/// Read a part's `_SUCCESS` and check only the size of every file it lists, for a reader that
/// hashes the files as it streams them and checks the hashes ([`damaged_file`]) before it
/// commits anything made from them.
pub(crate) fn read_part_marker_sized(dir: &Path) -> anyhow::Result<PartMarker> {
    read_marker_checking(dir, |path, e| fs_err::metadata(path).is_ok_and(|m| m.len() == e.bytes))
}

fn read_marker_checking(
    dir: &Path,
    intact: impl Fn(&Path, &FileEntry) -> bool,
) -> anyhow::Result<PartMarker> {
    let path = dir.join("_SUCCESS");
    let marker: PartMarker = serde_json::from_str(&fs_err::read_to_string(&path)?)
        .with_context(|| format!("`{}`", path.display()))?;
    if let Some(rel) =
        marker.files.iter().find(|(rel, e)| !intact(&dir.join(rel), e)).map(|(rel, _)| rel)
    {
        return Err(damaged_file(&dir.join(rel)));
    }
    Ok(marker)
}

/// The error for a part's file that is not the one its `_SUCCESS` describes.
pub(crate) fn damaged_file(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "`{}` no longer matches the `_SUCCESS` of its part (torn or edited)",
        path.display()
    )
}

/// The files this process has hashed and found as their markers describe, by path, sha256 and
/// what `stat` says of them (device, inode, size, modification and change times): a part's
/// file read by several checks of one process (the merge's, each step's keys) is hashed once,
/// and a file replaced or written since is hashed again.
static VERIFIED: std::sync::Mutex<Vec<(PathBuf, String, [i64; 5])>> =
    std::sync::Mutex::new(Vec::new());

/// What `stat` says of a file that changes when it is written or replaced.
fn stat_key(path: &Path) -> Option<[i64; 5]> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some([
        m.dev() as i64,
        m.ino() as i64,
        m.size() as i64,
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
    ])
}

/// Whether the file at `path` is the one `entry` describes (its size and sha256), hashing it
/// unless this process found it so already and it has not changed since.
pub(crate) fn file_verified(path: &Path, entry: &FileEntry) -> bool {
    let Some(key) = stat_key(path) else {
        return false;
    };
    if key[2] as u64 != entry.bytes {
        return false;
    }
    let known = |v: &Vec<(PathBuf, String, [i64; 5])>| {
        v.iter().any(|(p, sha, k)| p == path && *sha == entry.sha256 && *k == key)
    };
    if known(&VERIFIED.lock().unwrap_or_else(|e| e.into_inner())) {
        return true;
    }
    let intact = crate::artifacts::file_intact(path, &entry.sha256, entry.bytes);
    // Remembered only if nothing changed it while it was hashed.
    if intact && stat_key(path) == Some(key) {
        VERIFIED.lock().unwrap_or_else(|e| e.into_inner()).push((
            path.to_owned(),
            entry.sha256.clone(),
            key,
        ));
    }
    intact
}

/// A part being written: `<parts>/.part=III-of-NNN.tmp/`, moved to `<parts>/part=III-of-NNN/`
/// by [`PartWriter::finish`].
#[derive(Debug)]
pub(crate) struct PartWriter {
    tmp: PathBuf,
    dir: PathBuf,
}

impl PartWriter {
    /// Start (or restart) part `slice` under `parts`.
    pub(crate) fn begin(parts: &Path, slice: ShardSpec) -> anyhow::Result<PartWriter> {
        let name = part_name(slice);
        let tmp = parts.join(format!(".{name}.tmp"));
        if tmp.exists() {
            fs_err::remove_dir_all(&tmp)?;
        }
        fs_err::create_dir_all(&tmp)?;
        Ok(PartWriter { tmp, dir: parts.join(name) })
    }

    /// Where to write a file of the part.
    pub(crate) fn path(&self, file: &str) -> PathBuf {
        self.tmp.join(file)
    }

    /// Hash every file of the part into the marker, write the marker last and move the
    /// part into place (every file fsynced first); returns its directory.
    pub(crate) fn finish(self, marker: &PartMarker) -> anyhow::Result<PathBuf> {
        let mut marker = marker.clone();
        marker.files = hash_files(&self.tmp, |rel| rel != "_SUCCESS")?;
        durable::write(&self.tmp.join("_SUCCESS"), &serde_json::to_vec_pretty(&marker)?)?;
        durable::replace_dir(&self.tmp, &self.dir)?;
        Ok(self.dir)
    }
}

/// Whether part `slice` under `parts` is complete for `plan`.
pub(crate) fn part_done(parts: &Path, slice: ShardSpec, plan: &str) -> bool {
    read_part_marker(&parts.join(part_name(slice)))
        .is_ok_and(|m| m.plan == plan && m.shard == slice.index && m.shards == slice.count)
}

/// The directories of parts `0..N` of one shard count under `parts_dir`, each complete and
/// made from `plan`; otherwise an error (`cannot merge the <what> shards yet`) naming every
/// part that is not, with `rerun(i, N)`, the command that makes it.
pub(crate) fn complete_parts(
    parts_dir: &Path,
    plan: &str,
    what: &str,
    rerun: impl Fn(u32, u32) -> String,
) -> anyhow::Result<Vec<(PathBuf, PartMarker)>> {
    complete_parts_with(parts_dir, plan, what, rerun, read_part_marker)
}

/// [`complete_parts`], reading (and checking) each part's marker with `read`.
pub(crate) fn complete_parts_with(
    parts_dir: &Path,
    plan: &str,
    what: &str,
    rerun: impl Fn(u32, u32) -> String,
    read: impl Fn(&Path) -> anyhow::Result<PartMarker>,
) -> anyhow::Result<Vec<(PathBuf, PartMarker)>> {
    let mut counts = std::collections::BTreeSet::new();
    if parts_dir.exists() {
        for e in fs_err::read_dir(parts_dir)? {
            if let Some((_, n)) = e?.file_name().to_str().and_then(parse_part_name) {
                counts.insert(n);
            }
        }
    }
    let n = match counts.len() {
        0 => bail!(
            "no shard parts in `{}`: {} for every i in 0..N first",
            parts_dir.display(),
            rerun(0, 1).replace("0/1", "i/N")
        ),
        1 => *counts.first().expect("one count"),
        _ => bail!(
            "`{}` holds parts of different shard counts ({}): remove the stale ones",
            parts_dir.display(),
            counts.iter().map(|n| format!("of {n}")).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut problems = Vec::new();
    let mut parts = Vec::new();
    for i in 0..n {
        let dir = parts_dir.join(part_name(ShardSpec { index: i, count: n }));
        match read(&dir) {
            Ok(m) if m.plan == plan && m.shard == i && m.shards == n => parts.push((dir, m)),
            Ok(_) => problems.push(format!("shard {i}/{n} was made from another plan (the manifest or an upstream stage changed since): {}", rerun(i, n))),
            Err(e) if dir.join("_SUCCESS").exists() => problems.push(damaged_part(i, n, &e, &rerun(i, n))),
            Err(_) if dir.exists() => problems.push(format!("shard {i}/{n} is incomplete (no `_SUCCESS` in `{}`): {}", dir.display(), rerun(i, n))),
            Err(_) => problems.push(format!("shard {i}/{n} is missing (no `{}`): {}", dir.display(), rerun(i, n))),
        }
    }
    if !problems.is_empty() {
        return Err(cannot_merge(what, &problems));
    }
    Ok(parts)
}

/// The problem line of part `i` of `n` that is damaged (`e` says how).
pub(crate) fn damaged_part(i: u32, n: u32, e: &anyhow::Error, rerun: &str) -> String {
    format!("shard {i}/{n} is damaged ({e:#}): {rerun}")
}

/// The merge's refusal, one line per problem.
pub(crate) fn cannot_merge(what: &str, problems: &[String]) -> anyhow::Error {
    anyhow::anyhow!("cannot merge the {what} shards yet:\n  {}", problems.join("\n  "))
}

/// An exclusive `flock` on a file, held until dropped. Processes of one build on a shared
/// file system take it around their writes to the artifact store (`flock` works across NFS
/// v4 and Lustre/GPFS mounted with locking; see docs/scale-out.md, "Shared storage").
#[derive(Debug)]
pub(crate) struct Lock {
    _file: std::fs::File,
}

impl Lock {
    /// Take the lock on `path` (made if missing). When another process holds it, call
    /// `waiting` once with what the holder wrote of itself (its pid and command line), then
    /// wait. The holder's line is written into the lock file once it is taken.
    pub(crate) fn exclusive(path: &Path, waiting: impl FnOnce(&str)) -> anyhow::Result<Lock> {
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("opening the lock `{}`", path.display()))?;
        let flock = |file: &std::fs::File, how: i32| loop {
            // SAFETY: `flock` on a file descriptor this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
                return Ok(true);
            }
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock => return Ok(false),
                _ => return Err(e).with_context(|| format!("locking `{}`", path.display())),
            }
        };
        if !flock(&file, libc::LOCK_EX | libc::LOCK_NB)? {
            let holder = std::fs::read_to_string(path).unwrap_or_default();
            let holder = holder.trim();
            waiting(if holder.is_empty() { "another coreb process" } else { holder });
            flock(&file, libc::LOCK_EX)?;
        }
        // Who holds it now, for the next one to wait.
        use std::io::{Seek, Write};
        let me = format!(
            "pid {} (`{}`)",
            std::process::id(),
            std::env::args().collect::<Vec<_>>().join(" ")
        );
        let _ = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(me.as_bytes()));
        Ok(Lock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_every_id_once() {
        let ids: Vec<String> = (0..500).map(|i| format!("lcb_{i}")).collect();
        for n in [1, 2, 3, 7] {
            for id in &ids {
                let owners =
                    (0..n).filter(|&i| in_slice(id, ShardSpec { index: i, count: n })).count();
                assert_eq!(owners, 1, "{id} of {n}");
            }
        }
        // Not by position: the shard of an id does not depend on the others.
        let three =
            |id: &str| (0..3).find(|&i| in_slice(id, ShardSpec { index: i, count: 3 })).unwrap();
        let counts = ids.iter().fold([0; 3], |mut c, id| {
            c[three(id) as usize] += 1;
            c
        });
        assert!(counts.iter().all(|&c| c > 100), "{counts:?}");
    }

    #[test]
    fn a_verified_file_is_hashed_again_once_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, b"abcd").unwrap();
        let entry = crate::artifacts::file_entry(&path).unwrap();
        assert!(file_verified(&path, &entry) && file_verified(&path, &entry));
        // The same size, written later: no longer the file the entry describes.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::io::Write::write_all(&mut &file, b"abce").unwrap();
        file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        drop(file);
        assert!(!file_verified(&path, &entry));
    }

    #[test]
    fn merge_names_missing_incomplete_and_stale_parts() {
        let dir = tempfile::tempdir().unwrap();
        let parts = dir.path();
        let marker = |plan: &str, i: u32| PartMarker {
            plan: plan.into(),
            shard: i,
            shards: 4,
            files: Default::default(),
            facts: Default::default(),
        };
        for (i, plan) in [(0, "p"), (1, "old")] {
            PartWriter::begin(parts, ShardSpec { index: i, count: 4 })
                .unwrap()
                .finish(&marker(plan, i))
                .unwrap();
        }
        fs_err::create_dir_all(parts.join("part=002-of-004")).unwrap();
        let rerun = |i: u32, n: u32| format!("run `x --shard {i}/{n}`");
        let e = complete_parts(parts, "p", "test", rerun).unwrap_err().to_string();
        assert!(
            e.contains("shard 1/4 was made from another plan") && e.contains("run `x --shard 1/4`"),
            "{e}"
        );
        assert!(e.contains("shard 2/4 is incomplete") && e.contains("shard 3/4 is missing"), "{e}");
        assert!(!e.contains("shard 0/4"), "{e}");
        assert!(
            part_done(parts, ShardSpec { index: 0, count: 4 }, "p")
                && !part_done(parts, ShardSpec { index: 1, count: 4 }, "p")
        );
    }
}
