//! The rewrite audit: how far each rewritten statement moved from its source (word n-gram
//! containment and Jaccard between the release's `full` texts and `problems.parquet`), and,
//! with `--tests`, how each problem's tests were carried over by `rewrite` (kept unchanged,
//! rewritten by the model, mapped by the letter bijection; same count as the source), read
//! from the build's rewrite artifact. Does NOT judge whether rewritten tests are still right
//! (the model audit and `execute` run programs against them).

#[cfg(feature = "clap")]
use clap::Args;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::bail;
use coreb_base::report::Report;
use coreb_data::problem::Problem;
use coreb_data::releases::release_name;
use coreb_data::rewritten::{RewrittenProblem, TestOrigin};
use coreb_data::tables::ProblemReader;
use serde::Serialize;

use super::{ReleaseBuild, month};
use crate::{ngram_hashes, words};

/// What the rewrite audit measures (the flags of `coreb audit … rewrite`).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(Args))]
pub struct RewriteOptions {
    /// Words per n-gram.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5))]
    pub ngram: usize,
    /// Also audit the tests (kept unchanged, rewritten, bijection-mapped, counts), read from
    /// the rewrite artifact of the build the release's MANIFEST names.
    #[cfg_attr(feature = "clap", arg(long))]
    pub tests: bool,
}

/// How one problem's tests were carried over.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TestsCarried {
    /// Tests of the source problem (public + private).
    pub source: usize,
    /// Tests of the rewritten problem.
    pub rewritten: usize,
    /// Kept unchanged: context-independent.
    pub kept: usize,
    /// Kept unchanged: too long for a prompt, context-independent output.
    pub kept_long: usize,
    /// Rewritten by the model.
    pub model: usize,
    /// Mapped by the letter bijection.
    pub bijection: usize,
    /// Byte-identical to the source test at the same position.
    pub identical: usize,
    /// Marked kept but not identical to the source test (should be 0).
    pub kept_but_changed: usize,
}

impl TestsCarried {
    fn of(source: &Problem, rewritten: &RewrittenProblem) -> Self {
        let src: Vec<_> = source.public_tests.iter().chain(&source.private_tests).collect();
        let new: Vec<_> = rewritten.public_tests.iter().chain(&rewritten.private_tests).collect();
        let mut t = TestsCarried { source: src.len(), rewritten: new.len(), ..Default::default() };
        for (i, origin) in rewritten.test_origins.iter().enumerate() {
            let same = src.get(i).zip(new.get(i)).is_some_and(|(a, b)| a == b);
            t.identical += usize::from(same);
            match origin {
                TestOrigin::Kept => t.kept += 1,
                TestOrigin::KeptLong => t.kept_long += 1,
                TestOrigin::Model => t.model += 1,
                TestOrigin::Bijection => t.bijection += 1,
            }
            if matches!(origin, TestOrigin::Kept | TestOrigin::KeptLong) && !same {
                t.kept_but_changed += 1;
            }
        }
        t
    }

    fn add(&mut self, o: &TestsCarried) {
        self.source += o.source;
        self.rewritten += o.rewritten;
        self.kept += o.kept;
        self.kept_long += o.kept_long;
        self.model += o.model;
        self.bijection += o.bijection;
        self.identical += o.identical;
        self.kept_but_changed += o.kept_but_changed;
    }
}

/// The tests part of the rewrite audit.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum TestsKept {
    /// Not audited, and why.
    NotAudited(&'static str),
    /// Audited from the build's rewrite artifact.
    Audited(TestsAudit),
}

/// Totals of the tests audit.
#[derive(Debug, Clone, Serialize)]
pub struct TestsAudit {
    /// Problems audited (in the release and in the rewrite artifact).
    pub problems: usize,
    /// Problems whose rewrite has as many tests as the source.
    pub same_count: usize,
    /// Problems whose test count changed.
    pub count_changed: Vec<String>,
    /// Release problems absent from the rewrite artifact (another build's artifact?).
    pub not_in_artifact: Vec<String>,
    /// Test counts over every audited problem.
    pub totals: TestsCarried,
}

/// One rewritten statement against its source.
#[derive(Debug, Clone, Serialize)]
pub struct RewriteDistance {
    /// The problem.
    pub problem_id: String,
    /// Its contest month (`YYYY-MM`).
    pub month: String,
    /// Fraction of the rewrite's n-grams found in the source statement.
    pub containment: f64,
    /// Jaccard of the two n-gram sets.
    pub ngram_jaccard: f64,
    /// Jaccard of the two word sets.
    pub word_jaccard: f64,
    /// Words of the source and of the rewrite.
    pub words: (usize, usize),
    /// How its tests were carried over (when tests are audited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<TestsCarried>,
}

/// The rewrite audit.
#[derive(Debug, Clone, Serialize)]
pub struct RewriteReport {
    /// The release.
    pub release: String,
    /// Words per n-gram.
    pub ngram: usize,
    /// How the tests were carried over, or why that was not audited.
    pub tests_kept: TestsKept,
    /// Problems with a rewritten `full` text.
    pub problems: usize,
    /// Mean containment.
    pub mean_containment: f64,
    /// Largest containment (the rewrite that moved least).
    pub max_containment: f64,
    /// Mean n-gram Jaccard.
    pub mean_ngram_jaccard: f64,
    /// Per problem, least moved first.
    pub distances: Vec<RewriteDistance>,
    /// Problems of `problems.parquet` without a `full` text.
    pub missing: Vec<String>,
}

const NOT_AUDITED: &str = "not audited: a release holds the source problems' tests only; pass `--tests` (or `--build-dir`) to read the rewritten tests from the build's rewrite artifact";

fn set_jaccard(a: &BTreeSet<u64>, b: &BTreeSet<u64>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 { 1.0 } else { inter as f64 / union as f64 }
}

/// Audit the rewrites of `release`; with `options.tests`, the build `open_build` finds (called
/// only then) gives the rewritten tests.
pub fn rewrite<B: ReleaseBuild>(
    release: &Path,
    options: &RewriteOptions,
    open_build: impl FnOnce() -> anyhow::Result<B>,
    sink: &dyn Report,
) -> anyhow::Result<RewriteReport> {
    let RewriteOptions { ngram, tests } = options;
    if *ngram == 0 {
        bail!("`--ngram` must be at least 1");
    }
    let rewritten: Option<BTreeMap<String, RewrittenProblem>> = if *tests {
        let lookup = open_build()?;
        sink.status(&format!(
            "reading rewritten tests from `{}`",
            lookup.build_dir().join("artifacts/rewrite").display()
        ));
        Some(lookup.rewritten()?.into_iter().map(|r| (r.id.as_str().to_owned(), r)).collect())
    } else {
        None
    };
    let mut full: BTreeMap<String, String> = BTreeMap::new();
    coreb_data::tables::columns::for_each_row(
        &release.join("text_corpus.parquet"),
        &["problem_id", "kind", "text"],
        |_, v| {
            if v[1] == "full" {
                full.entry(v[0].clone()).or_insert_with(|| v[2].clone());
            }
        },
    )?;
    let mut distances = Vec::new();
    let mut missing = Vec::new();
    let mut audit = TestsAudit {
        problems: 0,
        same_count: 0,
        count_changed: Vec::new(),
        not_in_artifact: Vec::new(),
        totals: TestsCarried::default(),
    };
    for p in ProblemReader::open(&release.join("problems.parquet"))? {
        let p = p?;
        let tests = match rewritten.as_ref().map(|r| r.get(p.id.as_str())) {
            Some(Some(r)) => {
                let t = TestsCarried::of(&p, r);
                audit.problems += 1;
                if t.source == t.rewritten {
                    audit.same_count += 1;
                } else {
                    audit.count_changed.push(p.id.as_str().to_owned());
                }
                audit.totals.add(&t);
                Some(t)
            }
            Some(None) => {
                audit.not_in_artifact.push(p.id.as_str().to_owned());
                None
            }
            None => None,
        };
        let Some(text) = full.get(p.id.as_str()) else {
            missing.push(p.id.as_str().to_owned());
            continue;
        };
        let orig: BTreeSet<u64> = ngram_hashes(&p.question_content, *ngram).into_iter().collect();
        let new: BTreeSet<u64> = ngram_hashes(text, *ngram).into_iter().collect();
        let ow: BTreeSet<String> = words(&p.question_content).into_iter().collect();
        let nw: BTreeSet<String> = words(text).into_iter().collect();
        let winter = ow.intersection(&nw).count();
        let wunion = ow.len() + nw.len() - winter;
        distances.push(RewriteDistance {
            problem_id: p.id.as_str().to_owned(),
            month: month(&p.contest_date),
            containment: if new.is_empty() {
                0.0
            } else {
                new.intersection(&orig).count() as f64 / new.len() as f64
            },
            ngram_jaccard: set_jaccard(&orig, &new),
            word_jaccard: if wunion == 0 { 1.0 } else { winter as f64 / wunion as f64 },
            words: (words(&p.question_content).len(), words(text).len()),
            tests,
        });
    }
    distances.sort_by(|a, b| {
        b.containment.total_cmp(&a.containment).then(a.problem_id.cmp(&b.problem_id))
    });
    let n = distances.len().max(1) as f64;
    Ok(RewriteReport {
        release: release_name(release),
        ngram: *ngram,
        tests_kept: if rewritten.is_some() {
            TestsKept::Audited(audit)
        } else {
            TestsKept::NotAudited(NOT_AUDITED)
        },
        problems: distances.len(),
        mean_containment: distances.iter().map(|d| d.containment).fold(0.0, |a, b| a + b) / n,
        max_containment: distances.iter().map(|d| d.containment).fold(0.0, f64::max),
        mean_ngram_jaccard: distances.iter().map(|d| d.ngram_jaccard).fold(0.0, |a, b| a + b) / n,
        distances,
        missing,
    })
}

/// The report in Markdown.
pub fn markdown(r: &RewriteReport) -> String {
    let tests_line = match &r.tests_kept {
        TestsKept::NotAudited(why) => format!("Tests kept: {why}."),
        TestsKept::Audited(a) => {
            let t = &a.totals;
            let mut line = format!(
                "Tests kept: {} of {} problems keep their source's test count; of {} rewritten tests, {} kept unchanged ({} long), {} rewritten by the model, {} mapped by the letter bijection; {} identical to the source test.",
                a.same_count,
                a.problems,
                t.rewritten,
                t.kept + t.kept_long,
                t.kept_long,
                t.model,
                t.bijection,
                t.identical
            );
            if t.kept_but_changed > 0 {
                line.push_str(&format!(
                    " **{} tests marked kept differ from the source.**",
                    t.kept_but_changed
                ));
            }
            if !a.count_changed.is_empty() {
                line.push_str(&format!(" Test count changed: {}.", a.count_changed.join(", ")));
            }
            if !a.not_in_artifact.is_empty() {
                line.push_str(&format!(
                    " Not in the rewrite artifact: {}.",
                    a.not_in_artifact.join(", ")
                ));
            }
            line
        }
    };
    let audited = matches!(r.tests_kept, TestsKept::Audited(_));
    let mut md = format!(
        "# Rewrite audit: `{}`\n\n{} rewritten statements; mean {}-gram containment in the source {:.3} (max {:.3}); mean {}-gram Jaccard {:.3}.\n{tests_line}\n\n| problem | month | containment | n-gram Jaccard | word Jaccard | words (source → rewrite) |{}\n|---|---|---:|---:|---:|---|{}\n",
        r.release,
        r.problems,
        r.ngram,
        r.mean_containment,
        r.max_containment,
        r.ngram,
        r.mean_ngram_jaccard,
        if audited {
            " tests (source → rewrite) | kept | model | bijection | identical |"
        } else {
            ""
        },
        if audited { "---|---:|---:|---:|---:|" } else { "" },
    );
    for d in &r.distances {
        md.push_str(&format!(
            "| `{}` | {} | {:.3} | {:.3} | {:.3} | {} → {} |",
            d.problem_id,
            d.month,
            d.containment,
            d.ngram_jaccard,
            d.word_jaccard,
            d.words.0,
            d.words.1
        ));
        match (&d.tests, audited) {
            (Some(t), _) => md.push_str(&format!(
                " {} → {} | {} | {} | {} | {} |",
                t.source,
                t.rewritten,
                t.kept + t.kept_long,
                t.model,
                t.bijection,
                t.identical
            )),
            (None, true) => md.push_str(" – | – | – | – | – |"),
            (None, false) => {}
        }
        md.push('\n');
    }
    if !r.missing.is_empty() {
        md.push_str(&format!("\nNo `full` text for: {}\n", r.missing.join(", ")));
    }
    md
}
