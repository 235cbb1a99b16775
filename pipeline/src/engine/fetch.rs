//! Runs `fetch`: every source downloaded (or hashed in place). Always runs, because a local
//! file may have changed; downstream stages skip when the hashes are the same. On a first
//! build of local files, `ingest` hashes them as it reads them and records this stage
//! ([`super::ingest::run_with_fetch`]).

use anyhow::Context;
use stages::fetch::{Fetched, fetch_source};

use super::{Engine, StageReport};
use crate::artifacts::input_key;
use crate::engine::stage::StageName;

pub(super) fn run(engine: &Engine) -> anyhow::Result<StageReport> {
    let plan = &engine.plan;
    let config = &plan.stages.fetch;
    let downloads = plan.output_dir.join("downloads");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut fetched: Vec<Fetched> = Vec::with_capacity(plan.sources.len());
    for source in &plan.sources {
        let bar = engine.printer.progress(None, &source.name, true);
        let f = runtime.block_on(fetch_source(config, source, &downloads, &bar)).with_context(|| format!("fetching source `{}`", source.name))?;
        bar.finish_and_clear();
        fetched.push(f);
    }
    commit(engine, fetched)
}

/// Record what was fetched as the `fetch` stage (also called by `ingest`, which hashes local
/// sources itself on a first build).
pub(super) fn commit(engine: &Engine, fetched: Vec<Fetched>) -> anyhow::Result<StageReport> {
    let plan = &engine.plan;
    let config = &plan.stages.fetch;
    let downloaded: u64 = fetched.iter().map(|f| f.downloaded).sum();
    if downloaded > 0 {
        engine.printer.status(format!("{:>10}: downloaded {downloaded} bytes", "fetch"));
    }
    // The summary feeds downstream keys: it holds what was fetched (names, hashes, sizes),
    // not how or where; the local paths go outside the fingerprint.
    let pins: Vec<serde_json::Value> = fetched.iter().map(|f| serde_json::json!({"name": f.name, "sha256": f.sha256, "bytes": f.bytes})).collect();
    let summary = serde_json::json!({
        "rows_in": plan.sources.len(),
        "rows_out": fetched.len(),
        "rejected": 0,
        "bytes": fetched.iter().map(|f| f.bytes).sum::<u64>(),
        "sources": pins,
    });
    let local: Vec<Fetched> = fetched.into_iter().map(|f| Fetched { downloaded: 0, ..f }).collect();
    let key = input_key(StageName::Fetch.as_str(), &(&plan.sources, config), &[])?;
    let writer = engine.store.begin(StageName::Fetch.as_str())?;
    let record = writer.commit_with_local(&key, &[], summary, serde_json::json!({ "sources": local }))?;
    Ok(StageReport { stage: StageName::Fetch, skipped: false, record })
}

/// The fetched files a fetch record lists, in manifest order.
pub(super) fn files(record: &crate::artifacts::StageRecord) -> anyhow::Result<Vec<Fetched>> {
    let sources = record.local.get("sources").cloned().unwrap_or_default();
    serde_json::from_value(sources).context("the fetch record lists no sources")
}
