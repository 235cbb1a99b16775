//! Atomic, durable file writes: the one way coreb puts a file, or a directory of files, in
//! place.
//!
//! A file is written under a temporary name in its own directory
//! (`.<name>.<pid>.<n>.tmp`), its data flushed to disk (`fsync`), renamed over its final name,
//! and the directory fsynced so that the rename itself survives a power cut. A reader sees the
//! old file or the whole new one, never a torn one; and a completion marker written after the
//! data (a stage's `record.json`, a shard's `_SUCCESS`, a release's `MANIFEST.json`) never
//! vouches for data that is not on disk yet.
//!
//! - [`write()`]: bytes at once; [`AtomicFile`]: a streamed file (it is `Write`, so a Parquet
//!   or JSONL writer can sit on it), committed by [`AtomicFile::commit`], removed if dropped.
//! - [`replace_dir`]: a directory written under a temporary name (a stage's outputs, a
//!   release, a shard process's part) synced file by file and renamed into place.
//! - [`sync_dir`]: after a rename made elsewhere (a finished download).
//! - [`sha256_as_written`]: the sha256 of a file this process committed, hashed as it was
//!   written, so that a stage's commit need not read a table of gigabytes back to hash it.
//!
//! Every error names its path (`fs-err`). Does NOT lock: two writers of one path both
//! complete, and the last rename wins.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// A unique temporary name beside `path`: hidden, ending in `.tmp`, never another writer's.
fn temporary(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// The directory `path` lives in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Write `bytes` to `path` atomically and durably (its directory is made if missing).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// A file being written under a temporary name; it becomes `path` on [`AtomicFile::commit`]
/// and is removed if dropped before.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<fs_err::File>>,
    /// The sha256 of the bytes written so far.
    hasher: Sha256,
    /// Bytes written so far.
    written: u64,
    /// Bytes whose writeback to disk has been started.
    writeback: u64,
}

/// Bytes handed to a file before its writeback to disk is started ([`AtomicFile`]): a large
/// table goes to disk while it is being written, so the fsync in `commit` has little left to
/// wait for (a 1.5 GB table used to end `ingest` with 1–2 s of idle cores, issue #13).
const WRITEBACK_BYTES: u64 = 16 << 20;

impl AtomicFile {
    /// Start writing `path` (its directory is made if missing).
    pub fn create(path: &Path) -> std::io::Result<AtomicFile> {
        fs_err::create_dir_all(parent(path))?;
        let tmp = temporary(path);
        let file = fs_err::File::create(&tmp)?;
        Ok(AtomicFile {
            path: path.to_owned(),
            tmp,
            writer: Some(BufWriter::with_capacity(1 << 16, file)),
            hasher: Sha256::new(),
            written: 0,
            writeback: 0,
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush, fsync, rename into place, fsync the directory; remember the file's sha256 for
    /// [`sha256_as_written`].
    pub fn commit(mut self) -> std::io::Result<()> {
        let writer = self.writer.take().expect("an uncommitted AtomicFile holds its writer");
        let file = writer.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        file.sync_all()?;
        let identity = Identity::of(&file.metadata()?);
        drop(file);
        fs_err::rename(&self.tmp, &self.path)?;
        if identity.bytes >= REMEMBER_BYTES {
            let sha256 = hex::encode(std::mem::take(&mut self.hasher).finalize());
            written().insert(self.path.clone(), (identity, sha256));
        }
        sync_dir(parent(&self.path))
    }

    fn writer(&mut self) -> &mut BufWriter<fs_err::File> {
        self.writer.as_mut().expect("an uncommitted AtomicFile holds its writer")
    }

    /// Hash `bytes`, just written; once [`WRITEBACK_BYTES`] more have reached the file, start
    /// their writeback without waiting for it (Linux; elsewhere `commit`'s fsync does it all).
    fn wrote(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        let writer = self.writer.as_ref().expect("an uncommitted AtomicFile holds its writer");
        let in_file = self.written - writer.buffer().len() as u64;
        if in_file - self.writeback < WRITEBACK_BYTES {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (from, len) =
                (self.writeback as libc::off64_t, (in_file - self.writeback) as libc::off64_t);
            // SAFETY: the descriptor is the open file this writer owns; the call only starts
            // writeback of the range. Its result is a hint's: `commit`'s fsync reports errors.
            let _ = unsafe {
                libc::sync_file_range(
                    writer.get_ref().file().as_raw_fd(),
                    from,
                    len,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
        }
        self.writeback = in_file;
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.writer().write(buf)?;
        self.wrote(&buf[..n]);
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.writer().write_all(buf)?;
        self.wrote(buf);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

/// What tells one version of a file from another without reading it: length, inode and
/// modification time (as `git` tells a changed file in its index).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    bytes: u64,
    inode: u64,
    modified: Option<std::time::SystemTime>,
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Identity {
        use std::os::unix::fs::MetadataExt;
        Identity { bytes: meta.len(), inode: meta.ino(), modified: meta.modified().ok() }
    }
}

/// Committed files this long or longer are remembered by [`sha256_as_written`]; shorter ones
/// are as quick to hash again.
const REMEMBER_BYTES: u64 = 1 << 20;

/// The files committed by this process: where, which version, and its sha256.
fn written() -> std::sync::MutexGuard<'static, BTreeMap<PathBuf, (Identity, String)>> {
    static WRITTEN: Mutex<BTreeMap<PathBuf, (Identity, String)>> = Mutex::new(BTreeMap::new());
    WRITTEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The sha256 of the file at `path`, if this process committed it as an [`AtomicFile`] (of
/// at least a MiB) and it is still that file (same length, inode and modification time);
/// `None` otherwise, and the caller hashes the file itself. Each commit is answered once: the entry is taken.
pub fn sha256_as_written(path: &Path) -> Option<String> {
    let (identity, sha256) = written().remove(path)?;
    let now = Identity::of(&std::fs::metadata(path).ok()?);
    (now == identity).then_some(sha256)
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// fsync a directory, so that the names made or renamed in it are on disk.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    fs_err::File::open(dir)?.sync_all()
}

/// fsync every file and directory under `dir` (itself included), deepest first.
pub fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            sync_tree(&path)?;
        } else {
            fs_err::File::open(&path)?.sync_all()?;
        }
    }
    sync_dir(dir)
}

/// Put the directory `tmp` (fully written) in place of `dir`: sync everything in it, move any
/// old `dir` aside, rename, remove the old one and sync the parent. A crash leaves either
/// the old directory or the new one under `dir` (or, between the two renames, neither, which
/// reads as "not built"), never a mix.
pub fn replace_dir(tmp: &Path, dir: &Path) -> std::io::Result<()> {
    sync_tree(tmp)?;
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let old = dir.with_file_name(format!(".{name}.old"));
    if old.exists() {
        fs_err::remove_dir_all(&old)?;
    }
    let had_old = dir.exists();
    if had_old {
        fs_err::rename(dir, &old)?;
    }
    fs_err::rename(tmp, dir)?;
    sync_dir(parent(dir))?;
    if had_old {
        fs_err::remove_dir_all(&old)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Writes of any size, past several writeback starts, land whole and hashed as written.
    #[test]
    fn a_file_written_past_its_writeback_starts_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.bin");
        let data: Vec<u8> = (0..(3 * WRITEBACK_BYTES + 12_345)).map(|i| (i % 253) as u8).collect();
        let mut file = AtomicFile::create(&path).unwrap();
        let (mut at, mut step) = (0, 1usize);
        while at < data.len() {
            let end = (at + step).min(data.len());
            if step % 2 == 0 {
                file.write_all(&data[at..end]).unwrap();
                at = end;
            } else {
                at += file.write(&data[at..end]).unwrap();
            }
            step = step * 7 % 3_000_017 + 1;
        }
        assert_eq!(file.written, data.len() as u64);
        assert!(file.writeback >= 2 * WRITEBACK_BYTES, "writeback started at {}", file.writeback);
        file.commit().unwrap();
        assert!(fs_err::read(&path).unwrap() == data);
        assert_eq!(sha256_as_written(&path), Some(crate::hashing::sha256_hex(&data)));
    }

    #[test]
    fn a_committed_file_is_hashed_as_written_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("table.parquet");
        let body: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut f = AtomicFile::create(&path).unwrap();
        for chunk in body.chunks(70_001) {
            f.write_all(chunk).unwrap();
        }
        assert_eq!(sha256_as_written(&path), None, "not committed yet");
        f.commit().unwrap();
        let on_disk = crate::hashing::sha256_file(&path).unwrap();
        assert_eq!(sha256_as_written(&path).as_deref(), Some(on_disk.as_str()));
        assert_eq!(sha256_as_written(&path), None, "each commit is answered once");

        // Changed after its commit (another length, then the same length in place): the
        // caller must hash it again.
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(&body).unwrap();
        f.commit().unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"x").unwrap();
        assert_eq!(sha256_as_written(&path), None);
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(&body).unwrap();
        f.commit().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, vec![0u8; body.len()]).unwrap();
        assert_eq!(sha256_as_written(&path), None);

        // A short file is not remembered.
        write(&path, b"short").unwrap();
        assert_eq!(sha256_as_written(&path), None);
    }

    #[test]
    fn files_appear_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/out.json");
        write(&path, b"one").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");

        // A streamed file is invisible until committed, and leaves nothing when dropped.
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"three, half").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(&dir.path().join("sub")).len(), 2, "the temporary sits beside it");
        drop(f);
        assert_eq!(names(&dir.path().join("sub")), ["out.json"]);
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"three").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"three");
        assert_eq!(names(&dir.path().join("sub")), ["out.json"]);

        // Two writers of one path at once never share a temporary.
        assert_ne!(temporary(&path), temporary(&path));
        assert!(temporary(&path).file_name().unwrap().to_string_lossy().starts_with(".out.json."));
    }

    #[test]
    fn a_directory_is_replaced_whole() {
        let root = tempfile::tempdir().unwrap();
        let (tmp, dir) = (root.path().join(".stage.tmp"), root.path().join("stage"));
        for (content, n) in [("first", 2), ("second", 1)] {
            std::fs::create_dir_all(tmp.join("nested")).unwrap();
            std::fs::write(tmp.join("nested/a"), content).unwrap();
            if n == 2 {
                std::fs::write(tmp.join("b"), content).unwrap();
            }
            replace_dir(&tmp, &dir).unwrap();
            assert_eq!(std::fs::read_to_string(dir.join("nested/a")).unwrap(), content);
            assert_eq!(names(&dir).len(), n, "nothing of the old directory is left");
            assert_eq!(names(root.path()), ["stage"]);
        }
    }
}
