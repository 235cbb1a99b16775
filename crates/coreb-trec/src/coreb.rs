//! CoREB's evaluation convention on top of trec_eval's ranking rules.
//!
//! - Binary measures count relevance >= 2 as relevant (`level`, default 2).
//! - nDCG uses gain = relevance for relevance >= 2 and gain 0 below (a hard negative, relevance
//!   1, earns nothing), log2 discount, ideal ranking from all judgements.
//! - Measures at each cut-off k: nDCG@k, MAP@k (trec_eval `map_cut`), Recall@k, P@k,
//!   MRR@k (reciprocal rank of the first relevant doc within k), R-cap@k (relevant retrieved in
//!   the top k over min(k, R)).
//! - Hard-negative intrusion: a query intrudes when a relevance-1 document ranks above its best
//!   relevance-2 document (or a relevance-1 document is retrieved and no relevance-2 one is);
//!   the rate is over queries that have at least one relevance-1 judgement.
//!
//! Binary qrels (no relevance above 1) are evaluated at level 1 ([`CorebConfig::for_qrels`]).
//! Every qrels query counts; a query missing from the run scores 0 (reported as `missing`).
//! Ranking is trec_eval's: score descending, then doc id descending. Does NOT read or print.

use serde::Serialize;

use super::input::{Qrels, QueryQrels, Run};

/// Cut-offs and relevance level.
#[derive(Debug, Clone)]
pub struct CorebConfig {
    /// Cut-offs k.
    pub ks: Vec<usize>,
    /// Lowest relevance counted as relevant (2 in CoREB).
    pub level: i64,
}

impl CorebConfig {
    /// CoREB's convention for graded qrels (some relevance >= 2): level 2. Binary qrels (plain
    /// BEIR sets such as CoSQA, relevance 0/1) keep level 1, so relevance 1 stays relevant.
    pub fn for_qrels(qrels: &Qrels, ks: Vec<usize>) -> CorebConfig {
        let graded = qrels.queries.values().any(|q| q.judged.iter().any(|(_, r)| *r >= 2));
        CorebConfig { ks, level: if graded { 2 } else { 1 } }
    }
}

impl Default for CorebConfig {
    fn default() -> Self {
        CorebConfig { ks: vec![1, 5, 10], level: 2 }
    }
}

/// The measures of one query (or their means), one entry per cut-off.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct AtK {
    /// nDCG@k.
    pub ndcg: Vec<f64>,
    /// MAP@k.
    pub map: Vec<f64>,
    /// Recall@k.
    pub recall: Vec<f64>,
    /// P@k.
    pub precision: Vec<f64>,
    /// MRR@k.
    pub mrr: Vec<f64>,
    /// R-cap@k.
    pub r_cap: Vec<f64>,
}

/// One query's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResult {
    /// Query id.
    pub qid: String,
    /// Measures at each k.
    pub at_k: AtK,
    /// Whether a hard negative outranks every positive (`None`: no hard negative judged).
    pub intrusion: Option<bool>,
    /// Whether the query had no results in the run.
    pub missing: bool,
}

/// Means over a set of queries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The cut-offs.
    pub ks: Vec<usize>,
    /// Number of queries averaged.
    pub num_queries: usize,
    /// Queries absent from the run (scored 0).
    pub missing: usize,
    /// Mean measures at each k.
    pub at_k: AtK,
    /// Share of queries with a hard negative whose hard negative intrudes.
    pub intrusion_rate: Option<f64>,
    /// Queries with at least one hard negative judged.
    pub with_hard_negatives: usize,
}

/// Evaluate every qrels query.
pub fn evaluate(qrels: &Qrels, run: &Run, cfg: &CorebConfig) -> Vec<QueryResult> {
    qrels
        .queries
        .iter()
        .map(|(qid, qq)| {
            let ranked: Vec<&str> = run.ranked(qid).iter().map(|e| run.doc(e)).collect();
            let missing = !run.queries.contains_key(qid);
            query_result(qid, qq, &ranked, cfg, missing)
        })
        .collect()
}

/// One query from its ranked document ids.
pub fn query_result(
    qid: &str,
    qq: &QueryQrels,
    ranked: &[&str],
    cfg: &CorebConfig,
    missing: bool,
) -> QueryResult {
    let rels: Vec<i64> = ranked.iter().map(|d| qq.relevance(d).unwrap_or(0)).collect();
    let gain = |r: i64| if r >= cfg.level { r as f64 } else { 0.0 };
    let num_rel = qq.judged.iter().filter(|(_, r)| *r >= cfg.level).count();
    let mut ideal: Vec<f64> =
        qq.judged.iter().map(|(_, r)| gain(*r)).filter(|g| *g > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let disc = |i: usize| ((i + 2) as f64).log2();
    let mut at_k = AtK::default();
    for &k in &cfg.ks {
        let top = &rels[..k.min(rels.len())];
        // Folded from +0.0: `Sum` of no floats is -0.0, which would print as `-0.0000`.
        let dcg: f64 =
            top.iter().enumerate().map(|(i, &r)| gain(r) / disc(i)).fold(0.0, |a, b| a + b);
        let idcg: f64 =
            ideal.iter().take(k).enumerate().map(|(i, g)| g / disc(i)).fold(0.0, |a, b| a + b);
        at_k.ndcg.push(if idcg > 0.0 { dcg / idcg } else { 0.0 });
        let (mut hits, mut ap) = (0usize, 0.0);
        for (i, &r) in top.iter().enumerate() {
            if r >= cfg.level {
                hits += 1;
                ap += hits as f64 / (i + 1) as f64;
            }
        }
        at_k.map.push(if num_rel > 0 { ap / num_rel as f64 } else { 0.0 });
        at_k.recall.push(if num_rel > 0 { hits as f64 / num_rel as f64 } else { 0.0 });
        at_k.precision.push(if k > 0 { hits as f64 / k as f64 } else { 0.0 });
        at_k.mrr
            .push(top.iter().position(|&r| r >= cfg.level).map_or(0.0, |i| 1.0 / (i + 1) as f64));
        let cap = k.min(num_rel);
        at_k.r_cap.push(if cap > 0 { hits as f64 / cap as f64 } else { 0.0 });
    }
    let has_hard = qq.judged.iter().any(|(_, r)| *r >= 1 && *r < cfg.level);
    let intrusion = has_hard.then(|| {
        let first_pos = rels.iter().position(|&r| r >= cfg.level).unwrap_or(rels.len());
        rels[..first_pos].iter().any(|&r| r >= 1 && r < cfg.level)
    });
    QueryResult { qid: qid.to_owned(), at_k, intrusion, missing }
}

/// Means over `results` (an empty set gives zeros).
pub fn summarize<'a>(ks: &[usize], results: impl IntoIterator<Item = &'a QueryResult>) -> Summary {
    let results: Vec<&QueryResult> = results.into_iter().collect();
    let n = results.len().max(1) as f64;
    let mean = |f: &dyn Fn(&AtK) -> &Vec<f64>| -> Vec<f64> {
        (0..ks.len())
            .map(|i| results.iter().map(|q| f(&q.at_k)[i]).fold(0.0, |a, b| a + b) / n)
            .collect()
    };
    let at_k = AtK {
        ndcg: mean(&|a| &a.ndcg),
        map: mean(&|a| &a.map),
        recall: mean(&|a| &a.recall),
        precision: mean(&|a| &a.precision),
        mrr: mean(&|a| &a.mrr),
        r_cap: mean(&|a| &a.r_cap),
    };
    let with_hard: Vec<bool> = results.iter().filter_map(|q| q.intrusion).collect();
    Summary {
        ks: ks.to_vec(),
        num_queries: results.len(),
        missing: results.iter().filter(|q| q.missing).count(),
        at_k,
        intrusion_rate: (!with_hard.is_empty())
            .then(|| with_hard.iter().filter(|b| **b).count() as f64 / with_hard.len() as f64),
        with_hard_negatives: with_hard.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convention_gain_and_intrusion() {
        let qrels =
            Qrels::from_triples([("q", "pos", 2), ("q", "hard", 1), ("q", "neg", 0)]).unwrap();
        let mut run = Run::new("t");
        run.push("q", "hard", 3.0);
        run.push("q", "pos", 2.0);
        run.push("q", "neg", 1.0);
        let cfg = CorebConfig { ks: vec![1, 2], level: 2 };
        let r = &evaluate(&qrels, &run, &cfg)[0];
        assert_eq!(r.at_k.ndcg[0], 0.0, "a hard negative earns no gain");
        assert!((r.at_k.ndcg[1] - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(r.at_k.mrr, vec![0.0, 0.5]);
        assert_eq!(r.at_k.r_cap, vec![0.0, 1.0]);
        assert_eq!(r.intrusion, Some(true));
        let s = summarize(&cfg.ks, [r]);
        assert_eq!(s.intrusion_rate, Some(1.0));
        let mut good = Run::new("t");
        good.push("q", "pos", 3.0);
        good.push("q", "hard", 2.0);
        let r = &evaluate(&qrels, &good, &cfg)[0];
        assert_eq!(r.intrusion, Some(false));
        assert_eq!(r.at_k.ndcg[0], 1.0);
    }

    #[test]
    fn missing_queries_score_zero() {
        let qrels = Qrels::from_triples([("a", "d", 2), ("b", "d", 2)]).unwrap();
        let mut run = Run::new("t");
        run.push("a", "d", 1.0);
        let cfg = CorebConfig::default();
        let res = evaluate(&qrels, &run, &cfg);
        let s = summarize(&cfg.ks, &res);
        assert_eq!(s.missing, 1);
        assert_eq!(s.at_k.ndcg[0], 0.5);
        assert_eq!(CorebConfig::for_qrels(&qrels, vec![1]).level, 2);
        let binary = Qrels::from_triples([("a", "d", 1)]).unwrap();
        assert_eq!(CorebConfig::for_qrels(&binary, vec![1]).level, 1);
    }
}
