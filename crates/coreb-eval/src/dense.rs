//! Dense retrieval (cosine or dot similarity of embeddings, with query and document prompts)
//! and pointwise reranking of a run's top documents (`/rerank` or `/score`), through the
//! embedding service ([`crate::embed::EmbedClient`]), which is passed in.
//! Does NOT talk HTTP itself nor cache: the client does both.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use super::beir::Dataset;
use super::prompts::{Preset, PresetError, Presets, PromptOverrides, Side, TaskPrompts};
use crate::embed::{EmbedClient, EmbedError};
use coreb_trec::Run;

/// Errors of dense retrieval and pointwise reranking.
#[derive(Debug, thiserror::Error)]
pub enum DenseError {
    /// The endpoint failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// A prompt could not be resolved.
    #[error(transparent)]
    Prompt(#[from] PresetError),
}

/// The prompts of one dataset's documents and of its queries by subtask (`""`: none).
pub fn task_prompts(
    presets: &Presets,
    preset: &Preset,
    overrides: &PromptOverrides,
    data: &Dataset,
) -> Result<TaskPrompts, PresetError> {
    let document = presets.document_side(preset, &data.name, overrides)?;
    let mut queries = BTreeMap::new();
    for q in &data.queries {
        if let std::collections::btree_map::Entry::Vacant(slot) =
            queries.entry(q.subtask.clone().unwrap_or_default())
        {
            slot.insert(presets.query_side(preset, &data.name, q.subtask.as_deref(), overrides)?);
        }
    }
    Ok(TaskPrompts { document, queries })
}

/// The top `depth` documents of every query by similarity of the prompted texts, as a run
/// `embed:<model>`; `progress` counts texts settled.
pub async fn dense_run(
    client: &EmbedClient,
    model: &str,
    data: &Dataset,
    prompts: &TaskPrompts,
    depth: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Run, DenseError> {
    let docs: Vec<String> =
        data.corpus.iter().map(|d| prompts.document.render(&d.full_text())).collect();
    let doc_vecs = client.embed_with(model, &prompts.document.fields, &docs, progress).await?;
    // Queries are embedded per distinct query side (subtasks may differ in prompt and fields).
    let mut query_vecs = vec![None; data.queries.len()];
    let mut by_side: Vec<(&Side, Vec<usize>)> = Vec::new();
    for (i, q) in data.queries.iter().enumerate() {
        let side = &prompts.queries[q.subtask.as_deref().unwrap_or_default()];
        match by_side.iter_mut().find(|(s, _)| s.fields == side.fields) {
            Some((_, idx)) => idx.push(i),
            None => by_side.push((side, vec![i])),
        }
    }
    for (side, idx) in by_side {
        let texts: Vec<String> = idx
            .iter()
            .map(|&i| {
                let q = &data.queries[i];
                prompts.queries[q.subtask.as_deref().unwrap_or_default()].render(&q.text)
            })
            .collect();
        for (i, v) in
            idx.iter().zip(client.embed_with(model, &side.fields, &texts, progress).await?)
        {
            query_vecs[*i] = Some(v);
        }
    }
    let hits: Vec<Vec<(usize, f32)>> = query_vecs
        .par_iter()
        .zip(&data.queries)
        .map(|(q, query)| {
            let Some(q) = q else { return Vec::new() };
            // A code query is itself a corpus document: it is never ranked for itself.
            let own = query.source_doc_id.as_deref();
            let mut scored: Vec<(usize, f32)> = doc_vecs
                .iter()
                .enumerate()
                .filter(|(i, _)| Some(data.corpus[*i].id.as_str()) != own)
                .map(|(i, d)| (i, d.iter().zip(q.iter()).map(|(a, b)| a * b).sum()))
                .collect();
            scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            scored.truncate(depth);
            scored
        })
        .collect();
    let mut run = Run::new(format!("embed:{model}"));
    for (q, hits) in data.queries.iter().zip(hits) {
        for (d, s) in hits {
            run.push(&q.id, &data.corpus[d].id, f64::from(s));
        }
    }
    Ok(run)
}

/// Which pointwise endpoint scores (query, document) pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pointwise {
    /// `POST /rerank` (Cohere, Jina, vLLM).
    Rerank,
    /// `POST /score` (vLLM).
    Score,
}

/// Rerank the top `depth` documents of each query of `run` with `model`; the result holds
/// those documents scored by the reranker (queries without results stay absent); `progress`
/// is called once per query.
pub async fn rerank_run(
    client: &EmbedClient,
    api: Pointwise,
    model: &str,
    data: &Dataset,
    run: &Run,
    depth: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Run, EmbedError> {
    let texts: std::collections::HashMap<&str, String> =
        data.corpus.iter().map(|d| (d.id.as_str(), d.full_text())).collect();
    let label = match api {
        Pointwise::Rerank => "rerank",
        Pointwise::Score => "score",
    };
    let jobs: Vec<(&str, &str, Vec<&str>)> = data
        .queries
        .iter()
        .map(|q| {
            (
                q.id.as_str(),
                q.text.as_str(),
                run.ranked(&q.id).iter().take(depth).map(|e| run.doc(e)).collect::<Vec<&str>>(),
            )
        })
        .filter(|(_, _, top)| !top.is_empty())
        .collect();
    // Queries in parallel up to the client's concurrency; results in query order.
    let results = coreb_llm::run::ordered(jobs, client.config().concurrency, |(qid, text, top)| {
        let texts = &texts;
        async move {
            let docs: Vec<String> =
                top.iter().map(|d| texts.get(d).cloned().unwrap_or_default()).collect();
            let scored = match api {
                Pointwise::Rerank => client.rerank(model, text, &docs).await?,
                Pointwise::Score => client.score(model, text, &docs).await?,
            };
            progress(1);
            Ok::<_, EmbedError>((qid, top, scored))
        }
    })
    .await;
    let mut out = Run::new(format!("{}+{label}:{model}", run.run_id));
    for r in results {
        let (qid, top, scored) = r?;
        for (i, score) in scored {
            out.push(qid, top[i], score);
        }
    }
    Ok(out)
}
