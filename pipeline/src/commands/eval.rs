//! `coreb eval`: the evaluation loop of [`coreb_eval::run`] over its flags
//! ([`EvalOptions`]), the `[eval]` and `[gates]` of `--manifest` read with the build
//! manifest's loader.

use std::path::Path;
use std::process::ExitCode;

use coreb_eval::run::{EvalOptions, ManifestSettings};

use crate::manifest::RunPlan;
use crate::printer::Printer;

/// Run `coreb eval`.
pub(crate) fn eval(options: EvalOptions) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(options.json);
    // The results name the release by its MANIFEST: its files must be the MANIFEST's.
    crate::ops::intact::refuse_damaged(&options.dir)?;
    if let Some(line) = stopped_line(&options) {
        coreb_base::interrupt::say_when_stopped(line);
    }
    let runtime = super::runtime()?;
    coreb_eval::run::evaluate(&options, &load_manifest, &printer, runtime.handle())?;
    Ok(ExitCode::SUCCESS)
}

/// What `coreb eval` reads of a build manifest.
fn load_manifest(path: &Path) -> anyhow::Result<ManifestSettings> {
    let plan = RunPlan::load(path, None)?;
    Ok(ManifestSettings {
        gates: plan.gates,
        prompts_file: plan.eval.prompts_file,
        prompts: plan.eval.prompts,
    })
}

/// What `coreb eval` with a model (embeddings, a reranker) says when a signal stops it: the
/// answers received are kept where a rerun finds them; nothing was written or recorded.
fn stopped_line(options: &coreb_eval::run::EvalOptions) -> Option<impl Fn(&str) -> String + use<>> {
    let embeds = options.retriever.starts_with("embed:") && options.run.is_none();
    if !embeds && options.rerank.is_none() {
        return None;
    }
    let mut kept = Vec::new();
    if embeds && !options.no_cache {
        let cache = options.cache.clone().unwrap_or_else(|| ".coreb-cache/embeddings".into());
        kept.push(format!("the embeddings received are kept in `{}`", cache.display()));
    }
    if options.rerank.is_some() && options.rerank_api == coreb_eval::run::RerankApi::Listwise {
        kept.push(format!(
            "the listwise reranker's answers received are kept in `{}`",
            options.client.store.display()
        ));
    }
    let kept = if kept.is_empty() {
        "the scores received were not kept".to_owned()
    } else {
        format!("{}, so a rerun asks only for the others", kept.join("; "))
    };
    Some(move |signal: &str| {
        format!(
            "coreb eval stopped by {signal}: no result was written or recorded; {kept}; run the same command again"
        )
    })
}
