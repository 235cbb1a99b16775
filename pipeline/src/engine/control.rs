//! The control release (`[control] of = "<release>"`, issue 50): the same month built without
//! the counterfactual rewrite, so that a retriever's scores on the release and on its control
//! show, per query, what the rewriting changes.
//!
//! - [`rewrite`] replaces the models' rewrite in the `rewrite` stage ([`super::rewrite`]): each problem the controlled release published
//!   goes on with its original title, statement, starter code and tests (every test `kept`, no
//!   reference, no LLM request); problems the release did not publish are dropped, so both
//!   builds judge and compose the same problems. `distract`, `abbreviate`, `generate`,
//!   `execute`, `queries` and `qrels` then run on the originals as in any build (their LLM
//!   requests are new ones: the statements differ).
//! - [`controlled`](crate::release::control::controlled) reads the controlled release: it must be published, of the same version
//!   and window, and be no control itself; the control's MANIFEST records its version and
//!   MANIFEST sha256 (`controls`).
//! - [`check_queries`](crate::release::control::check_queries) holds the control's queries to the release's before it is published:
//!   query ids carry the version, problem, subtask and language, so a query of the control
//!   and its counterpart in the release have the same id; every query of the control must be
//!   a query of the release with the same problem, subtask and language, and every query of
//!   the release about a problem of the control a query of the control. `coreb compare` pairs
//!   results on the two by these ids (`coreb_eval::compare`).

use std::collections::BTreeSet;

use anyhow::Context;
use coreb_base::hashing::sha256_file;
use coreb_data::problem::ProblemId;
use coreb_data::releases::ControlOf;
use coreb_data::rewritten::{RewrittenProblem, TestOrigin, as_problem};
use coreb_data::tables::references::{ReferenceRow, write_references};
use coreb_data::tables::{ProblemReader, ProblemWriter};
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::llm::{ANSWER_KEYS, LlmLocal};
use super::stage::Done;
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, StageFacts, Summary};
use crate::artifacts::{StageRecord, input_key};
use crate::release::control::{Controlled, controlled};

/// A problem as it is, as the rewrite stage's output: original title, statement, starter
/// code and tests, every test kept.
fn unrewritten(p: coreb_data::problem::Problem) -> RewrittenProblem {
    let tests = p.public_tests.len() + p.private_tests.len();
    RewrittenProblem {
        id: p.id,
        title: p.question_title,
        statement: p.question_content,
        starter_code: p.starter_code,
        func_name: p.func_name,
        platform: p.platform,
        difficulty: p.difficulty,
        contest_date: p.contest_date,
        public_tests: p.public_tests,
        private_tests: p.private_tests,
        model: String::new(),
        test_origins: vec![TestOrigin::Kept; tests],
        reference: None,
    }
}

/// A control build's `rewrite` summary: the problems it passed on, and what it is the control
/// of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ControlSummary {
    /// Filtered problems in, problems passed on (those the release published); 0 rejected.
    #[serde(flatten)]
    pub(crate) rows: Counts,
    /// Filtered problems the release did not publish.
    not_in_release: u64,
    /// How the tests were carried over (every one kept).
    pub(crate) stats: ControlCounts,
    /// What it is the control of.
    pub(crate) parameters: ControlParameters,
    /// No model is asked: empty.
    pub(crate) models: Vec<String>,
}

/// How a control build's tests were carried over: kept, every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ControlCounts {
    /// Tests kept.
    tests_kept: u64,
    /// Tests rewritten by a model: 0.
    tests_model: u64,
    /// Tests mapped by the bijection: 0.
    tests_bijection: u64,
}

/// The parameters of a control build's `rewrite` (the release's MANIFEST records them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ControlParameters {
    /// The release it is the control of.
    control_of: ControlOf,
}

impl Summary for ControlSummary {
    fn counts(&self) -> Counts {
        self.rows
    }

    fn reasons(&self) -> Reasons {
        Reasons::Counts(vec![
            ("not_in_release", self.not_in_release),
            ("rejected", self.rows.rejected),
        ])
    }

    fn facts(&self) -> Option<StageFacts> {
        Some(StageFacts { models: Some(self.models.clone()), ..StageFacts::of(&self.parameters) })
    }
}

/// What a control build's `rewrite` reads before its key: the release, and the problems it
/// published.
pub(crate) struct Prepared {
    controlled: Controlled,
    keep: BTreeSet<ProblemId>,
}

/// The key of a control build's `rewrite` (after `filter`): the release's version and the
/// sha256 of the problems it published.
pub(super) fn key(cx: &StageContext, filter: &StageRecord) -> anyhow::Result<(String, Prepared)> {
    let controlled = controlled(cx.plan())?.context("not a control build")?;
    let published = controlled.dir.join("problems.parquet");
    let keep: BTreeSet<ProblemId> = ProblemReader::open(&published)?
        .map(|p| p.map(|p| p.id))
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading `{}`", published.display()))?;
    let key = input_key(
        StageName::Rewrite.as_str(),
        &("control", &controlled.of.version, sha256_file(&published)?),
        &[filter],
    )?;
    Ok((key, Prepared { controlled, keep }))
}

/// `rewrite` of a control build: the filtered problems the controlled release published, not
/// rewritten (the same outputs as the rewrite stage's, so the later stages read them alike).
pub(super) fn rewrite(
    cx: &StageContext,
    filter: &StageRecord,
    prepared: Prepared,
    out: &StageOutput,
) -> anyhow::Result<Done<ControlSummary, LlmLocal>> {
    let stage = StageName::Rewrite;
    let Prepared { controlled, keep } = prepared;
    let mut jsonl = coreb_base::durable::AtomicFile::create(&out.path("rewritten.jsonl"))?;
    let mut table = ProblemWriter::create(&out.path("problems.parquet"))?;
    let mut references = Vec::new();
    let (mut rows_in, mut tests_kept) = (0u64, 0u64);
    for p in ProblemReader::open(&cx.output(filter, "problems")?)? {
        let p = p?;
        rows_in += 1;
        if !keep.contains(&p.id) {
            continue;
        }
        let r = unrewritten(p);
        tests_kept += r.test_origins.len() as u64;
        serde_json::to_writer(&mut jsonl, &r)?;
        std::io::Write::write_all(&mut jsonl, b"\n")?;
        references.push(ReferenceRow::of(&r));
        table.write(as_problem(&r))?;
    }
    jsonl.commit()?;
    table.finish()?;
    let kept = references.len() as u64;
    let missing: Vec<&str> = keep
        .iter()
        .filter(|id| !references.iter().any(|r| &r.problem_id == *id))
        .map(ProblemId::as_str)
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "the control of release `{}` lacks problem(s) {} that the release published: its `filter` stage did not keep them (are the manifests' sources, window, dedup and filter the release's?)",
            controlled.of.version,
            missing.join(", ")
        );
    }
    write_references(&out.path("references.parquet"), &references)?;
    coreb_base::jsonl::write::<()>(&out.path("reference_failures.jsonl"), &[])?;
    coreb_base::jsonl::write::<()>(&out.path("rejections.jsonl"), &[])?;
    fs_err::write(out.path(ANSWER_KEYS), "")?;
    let summary = ControlSummary {
        rows: Counts { rows_in, rows_out: kept, rejected: 0 },
        not_in_release: rows_in - kept,
        stats: ControlCounts { tests_kept, tests_model: 0, tests_bijection: 0 },
        parameters: ControlParameters { control_of: controlled.of.clone() },
        models: Vec::new(),
    };
    let outputs = [
        ("rewritten", "rewritten.jsonl"),
        ("problems", "problems.parquet"),
        ("references", "references.parquet"),
        ("reference_failures", "reference_failures.jsonl"),
        ("rejections", "rejections.jsonl"),
        ("answer_keys", ANSWER_KEYS),
    ];
    cx.printer().status(format!(
        "{:>10}: control of `{}`: {kept} problems kept as they are (not rewritten), {} not in the release",
        stage.as_str(),
        controlled.of.version,
        rows_in - kept
    ));
    Ok(Done::new(&outputs, summary, LlmLocal::default()))
}
