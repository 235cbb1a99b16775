//! Resume inside `execute`: judged problems are committed durably as their window finishes,
//! so that a run stopped part-way (SIGINT, SIGTERM, `kill -9`, a preempted Slurm task, an OOM
//! kill) is resumed by the next run of the same inputs, which judges only what was not
//! committed.
//!
//! The unit of a commit is a problem, as the judge hands it back ([`JudgedProblem`]): its
//! re-check ([`coreb_judge::recheck::ProblemCheck`], when it has changed tests) and the
//! result of every one of its solutions, with what judging each cost (the stage's counts are made from those, so a resumed run counts exactly what an uninterrupted
//! one does). A problem is committed only whole: one whose solutions were not all judged
//! before a signal is judged again by the next run.
//!
//! [`DirJournal`] keeps the commits as files in a directory of their own, one file per commit
//! written through [`coreb_base::durable`] (a torn file is never seen under its name), beside
//! a `key` file holding the stage key they were judged under. A journal of another key (the
//! inputs, the configuration, the toolchains or the binary changed) is removed when opened;
//! an unreadable commit file is removed and its problems judged again: the journal is a
//! cache of finished work, never taken for the stage's output. The engine removes the
//! journal once the stage is committed.
//!
//! What it does NOT do: decide when to stop (the judge reads
//! [`coreb_base::interrupt::requested`] between units), or keep results of a problem still
//! being judged.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use coreb_judge::{ExecuteError, JudgedProblem};

/// Where a run of `execute` commits judged problems and finds those an earlier run of the
/// same inputs committed.
pub trait Journal: Sync {
    /// The problems committed by earlier runs of the same inputs.
    fn committed(&self) -> Result<Vec<JudgedProblem>, ExecuteError>;
    /// Commit `problems` durably (nothing to do for none).
    fn commit(&self, problems: &[JudgedProblem]) -> Result<(), ExecuteError>;
}

/// No journal: nothing committed before, nothing kept (library callers, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJournal;

impl Journal for NoJournal {
    fn committed(&self) -> Result<Vec<JudgedProblem>, ExecuteError> {
        Ok(Vec::new())
    }

    fn commit(&self, _: &[JudgedProblem]) -> Result<(), ExecuteError> {
        Ok(())
    }
}

/// The file naming the key a journal's commits were judged under.
const KEY_FILE: &str = "key";

/// A journal in a directory: `key`, then `commit-000001.json`, `commit-000002.json`, …
#[derive(Debug)]
pub struct DirJournal {
    dir: PathBuf,
    /// The number of the last commit file.
    last: Mutex<u64>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExecuteError + '_ {
    move |source| ExecuteError::Io { path: path.to_owned(), source }
}

impl DirJournal {
    /// Open the journal of `key` in `dir`: keep it when it was made for `key`, start it anew
    /// otherwise (a journal of other inputs is removed).
    pub fn open(dir: &Path, key: &str) -> Result<DirJournal, ExecuteError> {
        let key_file = dir.join(KEY_FILE);
        let same = std::fs::read_to_string(&key_file).is_ok_and(|k| k == key);
        if !same {
            if dir.exists() {
                fs_err::remove_dir_all(dir)
                    .map_err(|e| ExecuteError::Io { path: dir.to_owned(), source: e })?;
            }
            fs_err::create_dir_all(dir)
                .map_err(|e| ExecuteError::Io { path: dir.to_owned(), source: e })?;
            coreb_base::durable::write(&key_file, key.as_bytes()).map_err(io(&key_file))?;
        }
        let last = Self::files(dir)?.last().map_or(0, |(n, _)| *n);
        Ok(DirJournal { dir: dir.to_owned(), last: Mutex::new(last) })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The commit files, by number.
    fn files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, ExecuteError> {
        let mut files = Vec::new();
        for entry in fs_err::read_dir(dir)
            .map_err(|e| ExecuteError::Io { path: dir.to_owned(), source: e })?
        {
            let entry = entry.map_err(io(dir))?;
            let name = entry.file_name();
            let Some(n) = name
                .to_str()
                .and_then(|n| n.strip_prefix("commit-"))
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            files.push((n, entry.path()));
        }
        files.sort();
        Ok(files)
    }

    /// Remove the journal (after the stage is committed).
    pub fn remove(self) -> Result<(), ExecuteError> {
        fs_err::remove_dir_all(&self.dir)
            .map_err(|e| ExecuteError::Io { path: self.dir.clone(), source: e })
    }
}

impl Journal for DirJournal {
    fn committed(&self) -> Result<Vec<JudgedProblem>, ExecuteError> {
        let mut problems = Vec::new();
        for (_, path) in Self::files(&self.dir)? {
            let read =
                fs_err::read(&path).map_err(|e| ExecuteError::Io { path: path.clone(), source: e });
            match read.map(|bytes| serde_json::from_slice::<Vec<JudgedProblem>>(&bytes)) {
                Ok(Ok(committed)) => problems.extend(committed),
                // Written whole or not at all (durable), so only damage gets here: judge its
                // problems again rather than trust it.
                Ok(Err(e)) => {
                    tracing::warn!(
                        "`{}`: unreadable ({e}); its problems are judged again",
                        path.display()
                    );
                    fs_err::remove_file(&path)
                        .map_err(|e| ExecuteError::Io { path: path.clone(), source: e })?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(problems)
    }

    fn commit(&self, problems: &[JudgedProblem]) -> Result<(), ExecuteError> {
        if problems.is_empty() {
            return Ok(());
        }
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = self.dir.join(format!("commit-{:06}.json", *last + 1));
        let bytes = serde_json::to_vec(problems)
            .map_err(|e| ExecuteError::Recheck(format!("encoding the journal: {e}")))?;
        coreb_base::durable::write(&path, &bytes).map_err(io(&path))?;
        *last += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::problem::ProblemId;
    use coreb_data::solution::{Language, SolutionId};
    use coreb_data::verdict::{TestResult, Verdict};
    use coreb_judge::{Cost, SolutionResult};

    fn judged(problem: &str, solution: &str) -> JudgedProblem {
        let result = SolutionResult {
            solution_id: SolutionId::from_raw(solution.into()),
            problem_id: ProblemId::from_raw(problem.into()),
            model: "m".into(),
            language: Language::Go,
            passed: true,
            pass_rate: 1.0,
            tests: vec![TestResult {
                index: 0,
                verdict: Verdict::Passed,
                wall_ms: 3,
                cpu_ms: 2,
                peak_memory_kb: 1,
                wrong_output: None,
            }],
            message: String::new(),
            memory_bound: coreb_data::verdict::MemoryBound::Rlimit,
            comparison: Default::default(),
            stopped: None,
        };
        JudgedProblem {
            problem_id: ProblemId::from_raw(problem.into()),
            check: None,
            solutions: vec![(result, Cost { cpu_ms: 2, ..Cost::default() })],
        }
    }

    #[test]
    fn commits_come_back_to_the_same_key_and_are_dropped_for_another() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        let journal = DirJournal::open(&dir, "k1").unwrap();
        assert!(journal.committed().unwrap().is_empty());
        journal.commit(&[judged("p1", "s1")]).unwrap();
        journal.commit(&[]).unwrap();
        journal.commit(&[judged("p2", "s2"), judged("p3", "s3")]).unwrap();
        let again = DirJournal::open(&dir, "k1").unwrap();
        let ids: Vec<String> =
            again.committed().unwrap().iter().map(|p| p.problem_id.to_string()).collect();
        assert_eq!(ids, ["p1", "p2", "p3"]);
        // A later commit does not overwrite an earlier one.
        again.commit(&[judged("p4", "s4")]).unwrap();
        assert_eq!(DirJournal::open(&dir, "k1").unwrap().committed().unwrap().len(), 4);
        assert_eq!(
            DirJournal::open(&dir, "k1").unwrap().committed().unwrap()[0],
            judged("p1", "s1")
        );
        // Other inputs: the journal starts anew.
        assert!(DirJournal::open(&dir, "k2").unwrap().committed().unwrap().is_empty());
        assert!(DirJournal::open(&dir, "k1").unwrap().committed().unwrap().is_empty());
    }

    #[test]
    fn a_damaged_commit_is_judged_again_not_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let journal = DirJournal::open(tmp.path(), "k").unwrap();
        journal.commit(&[judged("p1", "s1")]).unwrap();
        journal.commit(&[judged("p2", "s2")]).unwrap();
        let second = tmp.path().join("commit-000002.json");
        let bytes = std::fs::read(&second).unwrap();
        std::fs::write(&second, &bytes[..bytes.len() / 2]).unwrap();
        let kept = DirJournal::open(tmp.path(), "k").unwrap().committed().unwrap();
        assert_eq!(kept, vec![judged("p1", "s1")]);
        assert!(!second.exists(), "the damaged commit is removed");
    }
}
