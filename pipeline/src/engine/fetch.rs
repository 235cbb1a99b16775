//! `fetch`: every source downloaded (or hashed in place). Always runs, because a local file
//! may have changed; downstream stages skip when the hashes are the same. On a first build of
//! local files that goes on to `ingest`, the sources are hashed as `ingest` decodes them, in
//! one pass ([`super::ingest::decode_with_hashes`]): `ingest`'s table is then written ahead of
//! its turn and handed to it through the context ([`super::fused::FusedIngest`]). A build
//! that goes on to `ingest` is refused here when no source has a problem in the window
//! ([`super::window`]).

use anyhow::Context as _;
use coreb_base::report::Report as _;
use coreb_data::releases::SourcePin;
use coreb_stages::fetch::{Fetched, Location, fetch_source};
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::ingest::{self, FetchLocal};
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Summary};
use crate::artifacts::input_key;

/// The `fetch` stage.
pub(super) struct Fetch;

/// What `fetch` fetched: names, hashes and sizes (downstream keys hold them), never how or
/// where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FetchSummary {
    /// The sources of the manifest, those fetched; 0 rejected.
    #[serde(flatten)]
    pub(crate) rows: Counts,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// Each source's name, sha256 and size, in manifest order (the release MANIFEST's pins).
    pub(crate) sources: Vec<SourcePin>,
}

impl Summary for FetchSummary {
    fn counts(&self) -> Counts {
        self.rows
    }
}

impl Stage for Fetch {
    const NAME: StageName = StageName::Fetch;
    type Summary = FetchSummary;
    type Local = FetchLocal;
    type Prepared = ();

    fn key(&self, cx: &StageContext, _up: &Upstream<'_>) -> anyhow::Result<(String, ())> {
        let plan = cx.plan();
        Ok((input_key(StageName::Fetch.as_str(), &(&plan.sources, &plan.stages.fetch), &[])?, ()))
    }

    /// A record is never reused: a local file may have changed since.
    fn reuse(&self, _cx: &StageContext, _hit: &StageReport) -> anyhow::Result<bool> {
        Ok(false)
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        (): (),
        _out: &StageOutput,
    ) -> anyhow::Result<Done<FetchSummary, FetchLocal>> {
        if up.until() >= StageName::Ingest && ingest::reads_sources_once(cx)? {
            return fetch_with_ingest(cx);
        }
        let files = fetch(cx)?;
        if up.until() >= StageName::Ingest {
            nothing_new(cx, &files)?;
        }
        fetched(cx, files)
    }
}

/// Refuse a window none of the fetched sources has a problem in ([`super::window`]), before
/// anything is decoded.
fn nothing_new(cx: &StageContext, files: &[Fetched]) -> anyhow::Result<()> {
    let plan = cx.plan();
    let named: Vec<(String, std::path::PathBuf)> =
        files.iter().map(|f| (f.name.clone(), f.path.clone())).collect();
    super::window::check_files(&plan.window, &named, plan.stages.ingest.max_line_bytes)
}

/// Download (or hash) every source.
fn fetch(cx: &StageContext) -> anyhow::Result<Vec<Fetched>> {
    let plan = cx.plan();
    let downloads = plan.output_dir.join("downloads");
    let runtime = cx.runtime()?;
    let mut fetched: Vec<Fetched> = Vec::with_capacity(plan.sources.len());
    for source in &plan.sources {
        let bar = cx.printer().meter(None, &source.name, true);
        let f = runtime
            .block_on(fetch_source(&plan.stages.fetch, source, &downloads, bar.as_ref()))
            .with_context(|| format!("fetching source `{}`", source.name))?;
        drop(bar);
        fetched.push(f);
    }
    Ok(fetched)
}

/// `fetch` and `ingest` in one pass over local sources, each file read once: hashed as it is
/// decoded, instead of hashed whole before decoding starts (at 2 GB that first pass was 1.5 s
/// with one core idle, issue #13). `fetch` is recorded from the hashes, with the time until
/// the last byte was read; `ingest`'s table waits in the context for `ingest`'s turn. Any
/// failure is reported as a build that fetches first would: `fetch`'s error (a missing file, a
/// wrong checksum) before a bad row's, which `ingest` reports at its turn.
fn fetch_with_ingest(cx: &StageContext) -> anyhow::Result<Done<FetchSummary, FetchLocal>> {
    let started = std::time::Instant::now();
    let sources = &cx.plan().sources;
    let decoded = sources
        .iter()
        .map(|s| match &s.location {
            Location::Local(path) => {
                Ok(ingest::Input { bytes: fs_err::metadata(path)?.len(), path: path.clone() })
            }
            Location::Http(_) => anyhow::bail!("source `{}` is not a local file", s.name),
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .and_then(|inputs| ingest::decode_with_hashes(cx, &inputs, started));
    let (hashes, read, kept) = match decoded {
        Ok(ingest::Hashed { hashes, read, kept }) if hashes.len() == sources.len() => {
            (hashes, read, kept)
        }
        Ok(_) => anyhow::bail!(
            "ingest stopped before the end of its input without an error (a bug in coreb)"
        ),
        Err(e) => {
            let done = fetched(cx, fetch(cx)?)?;
            cx.put_fused_ingest(Err(e));
            return Ok(done);
        }
    };
    let mut fetched_files = Vec::with_capacity(sources.len());
    for (source, (sha256, bytes)) in sources.iter().zip(hashes) {
        let f = coreb_stages::fetch::hashed_in_place(source, sha256, bytes)
            .context("a local source")?
            .with_context(|| format!("fetching source `{}`", source.name))?;
        fetched_files.push(f);
    }
    if kept == 0 {
        // Nothing kept: either nothing is in the window (refused here, naming the sources'
        // latest contest) or every row there was bad (`ingest` says which at its turn).
        nothing_new(cx, &fetched_files)?;
    }
    let mut done = fetched(cx, fetched_files)?;
    done.wall = Some(read);
    Ok(done)
}

/// What was fetched, as the stage's summary and local facts.
fn fetched(
    cx: &StageContext,
    fetched: Vec<Fetched>,
) -> anyhow::Result<Done<FetchSummary, FetchLocal>> {
    let plan = cx.plan();
    let downloaded: u64 = fetched.iter().map(|f| f.downloaded).sum();
    if downloaded > 0 {
        cx.printer().status(format!("{:>10}: downloaded {downloaded} bytes", "fetch"));
    }
    let summary = FetchSummary {
        rows: Counts {
            rows_in: plan.sources.len() as u64,
            rows_out: fetched.len() as u64,
            rejected: 0,
        },
        bytes: fetched.iter().map(|f| f.bytes).sum(),
        sources: fetched
            .iter()
            .map(|f| SourcePin { name: f.name.clone(), sha256: f.sha256.clone(), bytes: f.bytes })
            .collect(),
    };
    let local = FetchLocal {
        sources: fetched.into_iter().map(|f| Fetched { downloaded: 0, ..f }).collect(),
    };
    Ok(Done::new(&[], summary, local))
}
