//! `coreb build` and the single-stage commands (`coreb ingest <manifest>` …): both resolve
//! the manifest and run the engine; a stage command runs the stages it needs up to itself.

use std::process::ExitCode;

use crate::cli::{BuildArgs, StageArgs, StageName};
use crate::engine::Engine;
use crate::manifest::RunPlan;
use crate::printer::Printer;

/// Run `coreb build`.
pub fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let BuildArgs { manifest, until, jobs, show_plan, json, output_dir, publish_dir } = args;
    let mut plan = RunPlan::load(&manifest, jobs)?;
    if let Some(dir) = output_dir {
        plan.output_dir = std::path::absolute(dir)?;
    }
    if let Some(dir) = publish_dir {
        plan.publish_dir = std::path::absolute(dir)?;
    }
    let printer = Printer::new(json);
    if show_plan {
        printer.out(serde_json::to_string_pretty(&plan)?);
        return Ok(ExitCode::SUCCESS);
    }
    let until = until.unwrap_or(StageName::Release);
    let engine = Engine::new(plan, printer, true)?;
    let reports = engine.run_until(until)?;
    if let Some(release) = reports.iter().find(|r| r.stage == StageName::Release) {
        headline(&printer, &engine.plan().publish_dir, &release.record.summary);
    }
    Ok(ExitCode::SUCCESS)
}

/// Run one stage command.
pub fn stage(stage: StageName, args: StageArgs) -> anyhow::Result<ExitCode> {
    let StageArgs { manifest, jobs, json } = args;
    let plan = RunPlan::load(&manifest, jobs)?;
    let printer = Printer::new(json);
    let engine = Engine::new(plan, printer, false)?;
    let reports = engine.run_until(stage)?;
    if let Some(last) = reports.last() {
        printer.json_line(&last.to_json(engine.store()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the release is and its headline numbers.
fn headline(printer: &Printer, dir: &std::path::Path, summary: &serde_json::Value) {
    let counts = &summary["counts"];
    let queries = counts["queries"].as_object().map(|q| q.values().filter_map(serde_json::Value::as_u64).sum::<u64>()).unwrap_or(0);
    printer.status(format!(
        "\nrelease `{}` published in {}\n  {} problems, {} code documents, {} text documents, {queries} queries",
        summary["release"].as_str().unwrap_or("?"),
        dir.display(),
        counts["problems"],
        counts["code_docs"],
        counts["text_docs"],
    ));
    if let Some(per) = counts["queries"].as_object() {
        for (k, v) in per {
            printer.status(format!("    {k:<22} {v}"));
        }
    }
    if let Some(bm25) = summary["bm25_ndcg10"].as_object() {
        let line: Vec<String> = bm25.iter().map(|(k, v)| format!("{k} {v}")).collect();
        printer.status(format!("  BM25 nDCG@10: {}  (all release gates passed)", line.join(", ")));
    }
}
