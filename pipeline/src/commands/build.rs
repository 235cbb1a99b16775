//! `coreb build` and the single-stage commands (`coreb ingest <manifest>` …): both resolve
//! the manifest and run the engine; a stage command runs the stages it needs up to itself.

use std::process::ExitCode;

use crate::cli::{BuildArgs, MergeArgs, PlainStageArgs, StageCommand};
use crate::engine::stage_name::StageName;
use crate::engine::{Engine, PlanOverrides, ReleaseSummary};
use crate::printer::Printer;

/// Run `coreb build`.
pub(crate) fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let BuildArgs {
        manifest,
        until,
        jobs,
        show_plan,
        check,
        quiet,
        json,
        output_dir,
        publish_dir,
        replace,
    } = args;
    let mut plan = PlanOverrides { output_dir, publish_dir }.load(&manifest, jobs)?;
    plan.replace = replace;
    let printer = Printer::new(json).quiet(quiet);
    if show_plan {
        printer.out(serde_json::to_string_pretty(&plan)?);
        return Ok(ExitCode::SUCCESS);
    }
    let until = until.unwrap_or(StageName::Release);
    if check {
        let engine = Engine::new(plan, printer, false)?;
        for line in engine.check(until)? {
            printer.out(line);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let engine = Engine::new(plan, printer, true)?;
    let reports = engine.run_until(until)?;
    if let Some(release) = reports.iter().find(|r| r.stage == StageName::Release) {
        headline(&printer, &engine.plan().publish_dir, release.summary_as::<ReleaseSummary>()?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Run one stage command, `coreb <stage> MANIFEST` (with `--shard i/N`: one shard process of
/// it; `release --replace` may replace a published release).
pub(crate) fn stage(args: StageCommand) -> anyhow::Result<ExitCode> {
    let StageCommand {
        stage,
        common: PlainStageArgs { manifest, jobs, json, quiet, output_dir },
        shard,
        replace,
    } = args;
    let mut plan = PlanOverrides { output_dir, publish_dir: None }.load(&manifest, jobs)?;
    plan.replace = replace;
    let printer = Printer::new(json).quiet(quiet);
    let engine = Engine::new(plan, printer, false)?.with_shard(shard);
    let reports = engine.run_until(stage)?;
    if let Some(last) = reports.last() {
        let mut line = last.to_json(engine.store());
        if let (Some(slice), Some(obj)) = (shard, line.as_object_mut()) {
            obj.insert("shard".into(), serde_json::json!(slice.index));
            obj.insert("shards".into(), serde_json::json!(slice.count));
            obj.insert(
                "outputs".into(),
                serde_json::json!([engine.parts_dir(stage).join(crate::shard::part_name(slice))]),
            );
        }
        printer.json_line(&line);
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `coreb merge <stage>` for a build stage: the stages up to it, where it combines the
/// complete parts of its shard processes (refusing while one is missing or stale).
pub(crate) fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let MergeArgs { stage, manifest, json, output_dir, jobs, dedup_tasks } = args;
    let stage = stage
        .build_stage()
        .ok_or_else(|| anyhow::anyhow!("`coreb merge corpus` is not a build stage"))?;
    if dedup_tasks.is_some() {
        anyhow::bail!("`--dedup-tasks` is for `coreb merge corpus`");
    }
    let plan = PlanOverrides { output_dir, publish_dir: None }.load(&manifest, jobs)?;
    let printer = Printer::new(json);
    let engine = Engine::new(plan, printer, false)?.merging(stage);
    let reports = engine.run_until(stage)?;
    if let Some(last) = reports.last() {
        printer.json_line(&last.to_json(engine.store()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the release is and its headline numbers.
fn headline(printer: &Printer, dir: &std::path::Path, summary: &ReleaseSummary) {
    let counts = &summary.counts;
    let queries: u64 = counts.queries.values().sum();
    printer.status(format!(
        "\nrelease `{}` published in {}\n  {} problems, {} code documents, {} text documents, {queries} queries",
        summary.release,
        dir.display(),
        counts.problems,
        counts.code_docs,
        counts.text_docs,
    ));
    for (k, v) in &counts.queries {
        printer.status(format!("    {k:<22} {v}"));
    }
    let line: Vec<String> =
        summary.bm25_ndcg10.iter().map(|(k, v)| format!("{k} {}", serde_json::json!(v))).collect();
    printer.status(format!("  BM25 nDCG@10: {}  (all release gates passed)", line.join(", ")));
}
