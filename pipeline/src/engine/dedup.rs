//! `dedup`: reads the ingested problems and every earlier release's problems, calls
//! [`coreb_stages::dedup::dedup`], writes the kept problems and the duplicates report.

use coreb_data::problem::Problem;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::problems::copy_rows;
use coreb_stages::dedup::{DedupConfig, DedupOutput, DedupStats, Item, Origin, dedup};

use super::context::{StageContext, StageOutput};
use super::stage::{Done, Stage, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Kept, Reasons, Summary};
use crate::artifacts::input_key;
use crate::release::layout::{EarlierRelease, earlier_releases};
use coreb_base::durable;

fn item(p: Problem, origin: Origin) -> Item {
    Item { id: p.id, contest_date: p.contest_date, statement: p.question_content, origin }
}

/// The `dedup` stage.
pub(crate) struct Dedup;

/// What `dedup` kept and dropped, and with what parameters.
pub(crate) type DedupSummary = Kept<DedupStats, DedupConfig, ()>;

impl Summary for DedupSummary {
    fn counts(&self) -> Counts {
        self.kept()
    }

    fn reasons(&self) -> Reasons {
        let s = &self.stats;
        Reasons::Counts(vec![
            ("candidate_pairs", s.candidate_pairs),
            ("clusters", s.clusters),
            ("duplicate_ids", s.duplicate_ids),
            ("exact_duplicates", s.exact_duplicates),
            ("in_earlier_release", s.in_earlier_release),
            ("near_duplicates", s.near_duplicates),
            ("rejected", self.rejected),
        ])
    }
}

impl Stage for Dedup {
    const NAME: StageName = StageName::Dedup;
    type Summary = DedupSummary;
    type Local = ();
    /// The earlier releases' problems.
    type Prepared = Vec<EarlierRelease>;

    fn key(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
    ) -> anyhow::Result<(String, Vec<EarlierRelease>)> {
        let published = earlier_releases(cx.plan())?;
        let key = input_key(
            StageName::Dedup.as_str(),
            &(&cx.plan().stages.dedup, &published),
            &[up.record(StageName::Ingest)?],
        )?;
        Ok((key, published))
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        published: Vec<EarlierRelease>,
        out: &StageOutput,
    ) -> anyhow::Result<Done<DedupSummary, ()>> {
        let config = &cx.plan().stages.dedup;
        let input = cx.output(up.record(StageName::Ingest)?, "problems")?;
        // Statements only: the tests are copied with the kept rows, never decoded here.
        let current: Vec<Item> = ProblemReader::open_without_test_bodies(&input)?
            .map(|p| p.map(|p| item(p, Origin::Current)))
            .collect::<Result<_, _>>()?;
        let mut earlier = Vec::new();
        for release in &published {
            for p in ProblemReader::open_without_test_bodies(&release.path)? {
                earlier.push(item(p?, Origin::Release(release.version.clone())));
            }
        }
        let DedupOutput { kept_rows, clusters, stats } =
            cx.pool().install(|| dedup(config, &current, &earlier));
        drop(current);

        copy_rows(&input, &out.path("problems.parquet"), |row| {
            kept_rows.binary_search(&row).is_ok()
        })?;
        let report = serde_json::json!({
            "parameters": config,
            "earlier_releases": published,
            "stats": stats,
            "clusters": clusters,
        });
        durable::write(
            &out.path("duplicates.json"),
            serde_json::to_string_pretty(&report)?.as_bytes(),
        )?;
        let summary = DedupSummary::new(stats, config.clone(), ());
        Ok(Done::new(
            &[("problems", "problems.parquet"), ("duplicates", "duplicates.json")],
            summary,
            (),
        ))
    }
}
