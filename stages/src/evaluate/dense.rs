//! Dense retrieval (cosine similarity of embeddings) and reranking of a run's top documents,
//! through the embedding service ([`crate::services::embed::EmbedClient`]), which is passed in.
//! Does NOT talk HTTP itself nor cache: the client does both.

use rayon::prelude::*;

use super::beir::Dataset;
use crate::services::embed::{EmbedClient, EmbedError};
use crate::services::evaluator::Run;

fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// The top `depth` documents of every query by cosine similarity, as a run `embed:<model>`.
pub async fn dense_run(client: &EmbedClient, model: &str, data: &Dataset, depth: usize) -> Result<Run, EmbedError> {
    let docs: Vec<String> = data.corpus.iter().map(|d| d.full_text()).collect();
    let queries: Vec<String> = data.queries.iter().map(|q| q.text.clone()).collect();
    let mut doc_vecs = client.embed(model, &docs).await?;
    let mut query_vecs = client.embed(model, &queries).await?;
    doc_vecs.iter_mut().for_each(|v| normalize(v));
    query_vecs.iter_mut().for_each(|v| normalize(v));
    let hits: Vec<Vec<(usize, f32)>> = query_vecs
        .par_iter()
        .zip(&data.queries)
        .map(|(q, query)| {
            // A code query is itself a corpus document: it is never ranked for itself.
            let own = query.source_doc_id.as_deref();
            let mut scored: Vec<(usize, f32)> = doc_vecs
                .iter()
                .enumerate()
                .filter(|(i, _)| Some(data.corpus[*i].id.as_str()) != own)
                .map(|(i, d)| (i, d.iter().zip(q).map(|(a, b)| a * b).sum()))
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

/// Rerank the top `depth` documents of each query of `run` with `model`; the result holds
/// those documents scored by the reranker (queries without results stay absent).
pub async fn rerank_run(client: &EmbedClient, model: &str, data: &Dataset, run: &Run, depth: usize) -> Result<Run, EmbedError> {
    let texts: std::collections::HashMap<&str, String> = data.corpus.iter().map(|d| (d.id.as_str(), d.full_text())).collect();
    let mut out = Run::new(format!("{}+rerank:{model}", run.run_id));
    for q in &data.queries {
        let top: Vec<&str> = run.ranked(&q.id).iter().take(depth).map(|e| run.doc(e)).collect();
        if top.is_empty() {
            continue;
        }
        let docs: Vec<String> = top.iter().map(|d| texts.get(d).cloned().unwrap_or_default()).collect();
        for (i, score) in client.rerank(model, &q.text, &docs).await? {
            out.push(&q.id, top[i], score);
        }
    }
    Ok(out)
}
