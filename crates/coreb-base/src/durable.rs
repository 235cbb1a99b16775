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
//! - [`write`]: bytes at once; [`AtomicFile`]: a streamed file (it is `Write`, so a Parquet
//!   or JSONL writer can sit on it), committed by [`AtomicFile::commit`], removed if dropped.
//! - [`replace_dir`]: a directory written under a temporary name (a stage's outputs, a
//!   release, a shard process's part) synced file by file and renamed into place.
//! - [`sync_dir`]: after a rename made elsewhere (a finished download).
//!
//! Every error names its path (`fs-err`). Does NOT lock: two writers of one path both
//! complete, and the last rename wins.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
}

impl AtomicFile {
    /// Start writing `path` (its directory is made if missing).
    pub fn create(path: &Path) -> std::io::Result<AtomicFile> {
        fs_err::create_dir_all(parent(path))?;
        let tmp = temporary(path);
        let file = fs_err::File::create(&tmp)?;
        Ok(AtomicFile { path: path.to_owned(), tmp, writer: Some(BufWriter::with_capacity(1 << 16, file)) })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush, fsync, rename into place, fsync the directory.
    pub fn commit(mut self) -> std::io::Result<()> {
        let writer = self.writer.take().expect("an uncommitted AtomicFile holds its writer");
        let file = writer.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        file.sync_all()?;
        drop(file);
        fs_err::rename(&self.tmp, &self.path)?;
        sync_dir(parent(&self.path))
    }

    fn writer(&mut self) -> &mut BufWriter<fs_err::File> {
        self.writer.as_mut().expect("an uncommitted AtomicFile holds its writer")
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
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
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
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
