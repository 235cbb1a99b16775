//! `filter`: streams the deduplicated problems, without their test bodies, through
//! [`coreb_stages::filter::filter_problem`], copies the kept rows whole and writes a rejections
//! report (one JSON object per rejected problem), and the kind of answer of each kept problem
//! that is not exact (`answers.jsonl`: id, `answer`, the `phrase` of its statement that decided
//! it), which `execute` judges by. The lists of errata applied are recorded,
//! each with its sha256, for the release MANIFEST (`stages.filter.errata`).

use std::io::Write;

use coreb_data::problem::AnswerKind;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::problems::copy_rows;
use coreb_stages::errata::{self, ErrataKind, ErrataPin};
use coreb_stages::filter::{FilterConfig, FilterStats, decide_problem};
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::stage::{Done, Stage, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Kept, Reasons, StageFacts, Summary};
use crate::artifacts::input_key;

/// The `filter` stage.
pub(super) struct Filter;

/// What `filter` kept and why it rejected the others (its counts, rejections by reason
/// among them), and with what parameters and errata.
pub(super) type FilterSummary = Kept<FilterStats, FilterConfig, Errata>;

/// The errata `filter` applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Errata {
    /// The lists of errata applied.
    #[serde(default)]
    pub(crate) errata: Vec<ErrataPin>,
}

impl Summary for FilterSummary {
    fn counts(&self) -> Counts {
        self.kept()
    }

    fn reasons(&self) -> Reasons {
        let s = &self.stats;
        let mut counts: Vec<(&'static str, u64)> =
            ErrataKind::ALL.into_iter().map(|k| (k.reason(), s.errata(k))).collect();
        counts.extend([
            ("any_answer", s.any_answer),
            ("language", s.language),
            ("rejected", self.rejected),
            ("too_few_tests", s.too_few_tests),
            ("too_short", s.too_short),
            ("unsupported_signature", s.unsupported_signature),
            ("unordered", s.unordered),
            ("any_case", s.any_case),
        ]);
        Reasons::Counts(counts)
    }

    fn facts(&self) -> Option<StageFacts> {
        Some(StageFacts {
            errata: (!self.more.errata.is_empty()).then(|| self.more.errata.clone()),
            ..StageFacts::of(&self.parameters)
        })
    }
}

impl Stage for Filter {
    const NAME: StageName = StageName::Filter;
    type Summary = FilterSummary;
    type Local = ();
    type Prepared = ();

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, ())> {
        Ok((
            input_key(
                StageName::Filter.as_str(),
                &cx.plan().stages.filter,
                &[up.record(StageName::Dedup)?],
            )?,
            (),
        ))
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        (): (),
        out: &StageOutput,
    ) -> anyhow::Result<Done<FilterSummary, ()>> {
        let config = &cx.plan().stages.filter;
        let input = cx.output(up.record(StageName::Dedup)?, "problems")?;
        let mut rejections = fs_err::File::create(out.path("rejections.jsonl"))?;
        let mut answers = fs_err::File::create(out.path("answers.jsonl"))?;
        let mut stats = FilterStats::default();
        let mut kept = Vec::new();
        for problem in ProblemReader::open_without_test_bodies(&input)? {
            let problem = problem?;
            let decision = decide_problem(config, &problem);
            stats.record(&decision);
            kept.push(decision.is_ok());
            match decision {
                Ok(d) if d.answer.is_exact() => {}
                Ok(d) => {
                    match d.answer {
                        AnswerKind::AnyCase => stats.any_case += 1,
                        _ => stats.unordered += 1,
                    }
                    let line = serde_json::json!({ "id": problem.id, "answer": d.answer, "phrase": d.phrase });
                    writeln!(answers, "{line}")?;
                }
                Err(reason) => {
                    let line = serde_json::json!({ "id": problem.id, "rejection": reason });
                    writeln!(rejections, "{line}")?;
                }
            }
        }
        copy_rows(&input, &out.path("problems.parquet"), |row| {
            kept.get(row).copied().unwrap_or(false)
        })?;
        rejections.sync_all()?;
        drop(rejections);
        answers.sync_all()?;
        drop(answers);
        let errata =
            Errata { errata: errata::applied(config.livecodebench_errata, &config.errata) };
        let summary = FilterSummary::new(stats, config.clone(), errata);
        Ok(Done::new(
            &[
                ("problems", "problems.parquet"),
                ("rejections", "rejections.jsonl"),
                ("answers", "answers.jsonl"),
            ],
            summary,
            (),
        ))
    }
}
