//! `coreb-eval`: evaluation of retrievers over CoREB releases, and the checks a release must
//! pass before it is published.
//!
//! - [`beir`]: BEIR folders (corpus, queries, qrels).
//! - [`bm25`]: BM25 with code-aware tokens.
//! - [`dense`]: dense retrieval and pointwise reranking through the embedding/rerank service
//!   ([`embed`], its OpenAI-compatible client).
//! - [`prompts`]: query/document prompts per model, task and subtask (the preset file).
//! - [`listwise`]: listwise LLM reranking over sliding windows through the LLM gateway.
//! - [`significance`]: bootstrap intervals and paired tests over per-query scores.
//! - [`report`]: results per task/subtask/language, JSON, Markdown and hand-written SVG plots.
//! - [`gates`]: the bounds a release's baseline numbers must meet before it is published.
//! - [`check`]: `coreb check`, a release's validity checks (polars analytics over its Parquet
//!   configs, BEIR folders scored by the evaluator).
//! - [`frames`]: Parquet tables as polars frames (the Arrow reader's batches converted), for
//!   the analytics of [`check`] and [`leaderboard`].
//! - [`leaderboard`]: the results store's records, its files ([`leaderboard::store`]), its
//!   analytics and the static site, and its Parquet table ([`leaderboard::table`]).
//! - [`run`]: the evaluation loop of `coreb eval` (datasets, retrievers, rerankers, prompts,
//!   gates, reports, recording).
//! - [`compare`]: two systems compared on the same release (`coreb compare`).
//! - [`mteb`]: MTEB's CoREB(v1) tasks and the task folders `coreb export --layout mteb` writes
//!   for them (a reranking task's fixed candidates, its main score).
//!
//! Measures come from the evaluator crate, [`coreb_trec`]. Does NOT build releases; the
//! stages that write a release are `coreb-stages`'.
#![deny(missing_docs)]

pub mod beir;
pub mod bm25;
pub mod check;
pub mod compare;
pub mod dense;
pub mod embed;
pub mod frames;
pub mod gates;
pub mod leaderboard;
pub mod listwise;
pub mod mteb;
pub mod prompts;
pub mod report;
pub mod run;
pub mod significance;

use beir::Dataset;
use bm25::{Bm25Config, Bm25Index};
use coreb_trec::Run;

/// Run BM25 over a dataset: the top `depth` documents of every query, as a run named `bm25`.
pub fn bm25_run(data: &Dataset, cfg: Bm25Config, depth: usize) -> Run {
    let texts: Vec<String> = data.corpus.iter().map(|d| d.full_text()).collect();
    let index = Bm25Index::build(cfg, texts.iter().map(String::as_str));
    let queries: Vec<&str> = data.queries.iter().map(|q| q.text.as_str()).collect();
    // One extra hit, for the query's own document that is dropped.
    let hits = index.search_all(&queries, depth + 1);
    let mut run = Run::new("bm25");
    for (q, hits) in data.queries.iter().zip(hits) {
        let own = q.source_doc_id.as_deref();
        for (d, score) in
            hits.into_iter().filter(|(d, _)| Some(data.corpus[*d].id.as_str()) != own).take(depth)
        {
            run.push(&q.id, &data.corpus[d].id, f64::from(score));
        }
    }
    run
}

/// Ids as the messages name them: each in backticks, comma-separated (`` `a`, `b` ``).
pub(crate) fn ticked<T: std::fmt::Display>(ids: impl IntoIterator<Item = T>) -> String {
    ids.into_iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")
}

/// BM25 nDCG@10 of a dataset under CoREB's convention (relevance level 2, relevance 1 as no
/// gain), the figure the release gates bound.
pub fn bm25_ndcg10(data: &Dataset) -> f64 {
    use coreb_trec::coreb::{CorebConfig, evaluate, summarize};
    let run = bm25_run(data, Bm25Config::default(), 10);
    let cfg = CorebConfig::for_qrels(&data.qrels, vec![10]);
    let results = evaluate(&data.qrels, &run, &cfg);
    summarize(&cfg.ks, &results).at_k.ndcg[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use beir::{Doc, Query};
    use coreb_trec::Qrels;

    #[test]
    fn a_code_query_is_never_ranked_for_itself() {
        let doc = |id: &str, text: &str| Doc {
            id: id.into(),
            title: String::new(),
            text: text.into(),
            problem_id: None,
        };
        let data = Dataset {
            name: "code2code".into(),
            corpus: vec![
                doc("c0", "fn sum of pairs"),
                doc("c1", "def sum of pairs"),
                doc("c2", "print hello"),
            ],
            queries: vec![Query {
                id: "q1".into(),
                text: "fn sum of pairs".into(),
                subtask: None,
                language_constraint: None,
                source_doc_id: Some("c0".into()),
            }],
            qrels: Qrels::from_triples([("q1", "c1", 2)]).unwrap(),
        };
        let run = bm25_run(&data, Bm25Config::default(), 10);
        let ranked: Vec<&str> = run.ranked("q1").iter().map(|e| run.doc(e)).collect();
        assert_eq!(ranked.first(), Some(&"c1"), "{ranked:?}");
        assert!(!ranked.contains(&"c0"));
        assert!((bm25_ndcg10(&data) - 1.0).abs() < 1e-9);
    }
}
