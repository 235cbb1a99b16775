//! Runs `filter`: streams the deduplicated problems, without their test bodies, through
//! [`stages::filter::filter_problem`], copies the kept rows whole and writes a rejections
//! report (one JSON object per rejected problem).

use std::io::Write;

use coreb_data::tables::ProblemReader;
use coreb_data::tables::problems::copy_rows;
use stages::filter::{FilterStats, filter_problem};

use super::{Engine, StageReport};
use crate::artifacts::{StageRecord, input_key};
use crate::engine::stage::StageName;

pub(super) fn run(engine: &Engine, dedup: &StageRecord) -> anyhow::Result<StageReport> {
    let config = &engine.plan.stages.filter;
    let key = input_key(StageName::Filter.as_str(), config, &[dedup])?;
    if let Some(hit) = engine.cached(StageName::Filter, &key)? {
        return Ok(hit);
    }
    let input = engine.output(dedup, "problems")?;
    let writer = engine.store.begin(StageName::Filter.as_str())?;
    let mut rejections = fs_err::File::create(writer.path("rejections.jsonl"))?;
    let mut stats = FilterStats::default();
    let mut kept = Vec::new();
    for problem in ProblemReader::open_without_test_bodies(&input)? {
        let problem = problem?;
        let decision = filter_problem(config, &problem);
        stats.record(&decision);
        kept.push(decision.is_ok());
        if let Err(reason) = decision {
            let line = serde_json::json!({ "id": problem.id, "rejection": reason });
            writeln!(rejections, "{line}")?;
        }
    }
    copy_rows(&input, &writer.path("problems.parquet"), |row| kept.get(row).copied().unwrap_or(false))?;
    rejections.sync_all()?;
    drop(rejections);
    let mut summary = serde_json::to_value(stats)?;
    if let Some(obj) = summary.as_object_mut() {
        obj.insert("rejected".into(), serde_json::json!(stats.rows_in - stats.rows_out));
        obj.insert("parameters".into(), serde_json::to_value(config)?);
    }
    let record = writer.commit(&key, &[("problems", "problems.parquet"), ("rejections", "rejections.jsonl")], summary)?;
    Ok(StageReport { stage: StageName::Filter, skipped: false, record })
}
