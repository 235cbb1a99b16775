//! The trec_eval driver: which queries are evaluated, how values are averaged, and trec_eval's
//! text output (`%-22s\t%s\t%6.4f`).
//!
//! Queries are those of the qrels (in query-id byte order) that also have results; with
//! `complete` (`-c`) every qrels query counts, a missing one being scored on a one-document
//! ranking of an unjudged document (trec_eval's own device), so missing queries add 0.
//! `max_retrieved` (`-M`) keeps the top N after ranking; `level` (`-l`) is the lowest relevance
//! that counts as relevant for binary measures. Ranking ignores the rank column: score
//! descending, then document id descending. Does NOT read files or print.

use std::fmt::Write as _;

use rayon::prelude::*;

use super::input::{FnvBuild, Qrels, QueryQrels, Run, RunEntry};
use super::measures::{Combine, Kind, Measure, NONPOOL, Ranked, UNJUDGED};
use super::EvalError;

/// trec_eval's options.
#[derive(Debug, Clone)]
pub struct TrecOptions {
    /// Requested measures in trec_eval order (see [`TrecOptions::from_args`]).
    pub measures: Vec<Measure>,
    /// `-l`: lowest relevance counted as relevant (default 1).
    pub level: i64,
    /// `-M`: at most this many retrieved docs per query.
    pub max_retrieved: Option<usize>,
    /// `-c`: average over every qrels query.
    pub complete: bool,
}

impl TrecOptions {
    /// Resolve `-m` arguments (measure names, nicknames, `name.params`); no argument means
    /// `official`, as in trec_eval. The first parameters given for a measure win.
    pub fn from_args(args: &[String]) -> Result<TrecOptions, EvalError> {
        let mut marked: Vec<Kind> = Vec::new();
        let mut params: Vec<(Kind, String)> = Vec::new();
        let default = ["official".to_owned()];
        let args = if args.is_empty() { &default[..] } else { args };
        for arg in args {
            let (name, p) = match arg.split_once('.') {
                Some((n, p)) => (n, Some(p)),
                None => (arg.as_str(), None),
            };
            if p == Some("") {
                return Err(EvalError::Measure { measure: arg.clone(), why: "empty parameters".into() });
            }
            let kinds: Vec<Kind> = match super::measures::nickname(name) {
                Some(list) => list.iter().filter_map(|n| Kind::from_name(n)).collect(),
                None => match Kind::from_name(name) {
                    Some(k) => vec![k],
                    None => {
                        return Err(EvalError::Measure { measure: arg.clone(), why: "unknown measure".into() });
                    }
                },
            };
            if let (Some(p), Some(&k)) = (p, kinds.first())
                && kinds.len() == 1
                && !params.iter().any(|(pk, _)| *pk == k)
            {
                params.push((k, p.to_owned()));
            }
            marked.extend(kinds);
        }
        let mut measures = Vec::new();
        for &k in Kind::all() {
            if marked.contains(&k) {
                let p = params.iter().find(|(pk, _)| *pk == k).map(|(_, p)| p.as_str());
                measures.push(Measure::new(k, p)?);
            }
        }
        Ok(TrecOptions { measures, level: 1, max_retrieved: None, complete: false })
    }

    /// Options for the given `-m` arguments and trec_eval's defaults otherwise.
    pub fn with_measures(args: &[&str]) -> Result<TrecOptions, EvalError> {
        TrecOptions::from_args(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }
}

/// The values of one query (or of the summary), aligned with the measures' names.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryValues {
    /// Query id (`all` for the summary).
    pub qid: String,
    /// One vector per measure, one value per name.
    pub values: Vec<Vec<f64>>,
    /// The `relstring` text, if requested.
    pub relstring: Option<String>,
}

/// The result of an evaluation.
#[derive(Debug, Clone)]
pub struct TrecReport {
    /// The measures evaluated.
    pub measures: Vec<Measure>,
    /// Per query, in evaluation order.
    pub queries: Vec<QueryValues>,
    /// Averages (or sums / counts, as trec_eval combines each measure).
    pub summary: QueryValues,
    /// The run tag.
    pub run_id: String,
}

impl TrecReport {
    /// A summary value by printed name (`P_10`, `ndcg_cut_5`, `map` ...).
    pub fn summary_value(&self, name: &str) -> Option<f64> {
        value_by_name(&self.measures, &self.summary, name)
    }

    /// A per-query value by printed name.
    pub fn query_value(&self, qid: &str, name: &str) -> Option<f64> {
        let q = self.queries.iter().find(|q| q.qid == qid)?;
        value_by_name(&self.measures, q, name)
    }

    /// trec_eval's text output; per-query lines first when `per_query`.
    pub fn to_text(&self, per_query: bool) -> String {
        let mut out = String::new();
        if per_query {
            let blocks: Vec<String> = self.queries.par_iter().map(|q| self.query_text(q)).collect();
            out.extend(blocks);
        }
        for (m, vals) in self.measures.iter().zip(&self.summary.values) {
            match m.combine() {
                Combine::None => {}
                Combine::RunId => {
                    let _ = writeln!(out, "{:<22}\tall\t{}", m.names[0], self.run_id);
                }
                Combine::Count | Combine::SumLong => line_long(&mut out, &m.names[0], "all", vals[0]),
                Combine::Mean | Combine::Geometric => {
                    for (n, v) in m.names.iter().zip(vals) {
                        line_float(&mut out, n, "all", *v);
                    }
                }
            }
        }
        out
    }
}

impl TrecReport {
    fn query_text(&self, q: &QueryValues) -> String {
        let mut out = String::new();
        for (m, vals) in self.measures.iter().zip(&q.values) {
            match m.combine() {
                Combine::RunId | Combine::Count | Combine::Geometric => {}
                Combine::None => {
                    let _ = writeln!(out, "{:<22}\t{}\t'{}'", m.names[0], q.qid, q.relstring.as_deref().unwrap_or(""));
                }
                Combine::SumLong => line_long(&mut out, &m.names[0], &q.qid, vals[0]),
                Combine::Mean => {
                    for (n, v) in m.names.iter().zip(vals) {
                        line_float(&mut out, n, &q.qid, *v);
                    }
                }
            }
        }
        out
    }
}

fn value_by_name(measures: &[Measure], q: &QueryValues, name: &str) -> Option<f64> {
    for (m, vals) in measures.iter().zip(&q.values) {
        if let Some(i) = m.names.iter().position(|n| n == name) {
            return vals.get(i).copied();
        }
    }
    None
}

fn line_long(out: &mut String, name: &str, qid: &str, v: f64) {
    let _ = writeln!(out, "{name:<22}\t{qid}\t{}", v as i64);
}

/// C's `%6.4f`, including its spelling of NaN.
fn line_float(out: &mut String, name: &str, qid: &str, v: f64) {
    if v.is_nan() {
        let s = if v.is_sign_negative() { "-nan" } else { "nan" };
        let _ = writeln!(out, "{name:<22}\t{qid}\t{s:>6}");
    } else {
        let _ = writeln!(out, "{name:<22}\t{qid}\t{v:6.4}");
    }
}

/// Reduce one query's ranked results to relevance values (trec_eval `form_res_rels`).
pub fn form_ranked(qrels: &QueryQrels, ranked: &[(&str, f64)], level: i64) -> Ranked {
    let max_level = qrels.judged.iter().map(|(_, r)| *r).max().unwrap_or(0).max(0) as usize;
    let mut rel_levels = vec![0i64; max_level + 1];
    for (_, r) in &qrels.judged {
        if *r >= 0 {
            rel_levels[*r as usize] += 1;
        }
    }
    let mut r = Ranked { rels: Vec::with_capacity(ranked.len()), ..Ranked::default() };
    let judged: std::collections::HashMap<&str, i64, FnvBuild> =
        qrels.judged.iter().map(|(d, rel)| (d.as_str(), *rel)).collect();
    for (doc, _) in ranked {
        let rel = match judged.get(doc).copied() {
            None => NONPOOL,
            Some(x) if x < 0 => UNJUDGED,
            Some(x) => x,
        };
        match rel {
            NONPOOL => r.num_nonpool += 1,
            UNJUDGED => r.num_unjudged += 1,
            x if x >= level => r.num_rel_ret += 1,
            _ => {}
        }
        r.rels.push(rel);
    }
    r.num_rel_levels = rel_levels.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    r.num_rel = rel_levels.iter().enumerate().filter(|(i, _)| *i as i64 >= level).map(|(_, c)| c).sum();
    r.rel_levels = rel_levels;
    r
}

const BOGUS_DOC: &str = "ceci_nest_pas_un_docno";

/// Evaluate `run` against `qrels` the way trec_eval does.
pub fn evaluate(qrels: &Qrels, run: &Run, opts: &TrecOptions) -> Result<TrecReport, EvalError> {
    let jobs: Vec<(&String, &QueryQrels, Option<&Vec<RunEntry>>)> = qrels
        .queries
        .iter()
        .filter_map(|(qid, qq)| {
            let res = run.queries.get(qid);
            (res.is_some() || opts.complete).then_some((qid, qq, res))
        })
        .collect();
    if jobs.is_empty() {
        return Err(EvalError::NoQueries);
    }
    let queries: Vec<QueryValues> = jobs
        .par_iter()
        .map(|(qid, qq, res)| {
            let (ranked_owned, bogus);
            let ranked: Vec<(&str, f64)> = match res {
                Some(entries) => {
                    let mut v: Vec<RunEntry> = entries.to_vec();
                    run.sort_ranked(&mut v);
                    if let Some(m) = opts.max_retrieved {
                        v.truncate(m);
                    }
                    ranked_owned = v;
                    bogus = false;
                    ranked_owned.iter().map(|e| (run.doc(e), e.score)).collect()
                }
                None => {
                    bogus = true;
                    vec![(BOGUS_DOC, 1.0)]
                }
            };
            let r = form_ranked(qq, &ranked, opts.level);
            let mut values = Vec::with_capacity(opts.measures.len());
            let mut relstring = None;
            for m in &opts.measures {
                let mut out = Vec::with_capacity(m.names.len());
                m.compute(&r, opts.level, &mut out, &mut relstring);
                if bogus {
                    // trec_eval's clean-up of a missing query's leftovers, by value name.
                    for (n, v) in m.names.iter().zip(out.iter_mut()) {
                        if n == "num_ret" || n == "utility" || n.starts_with("unj") || n == "rbp_resid" {
                            *v = 0.0;
                        }
                        if n == "relstring" {
                            relstring = Some(String::new());
                        }
                    }
                }
                values.push(out);
            }
            QueryValues { qid: (*qid).clone(), values, relstring }
        })
        .collect();
    let n = queries.len() as f64;
    let mut summary = Vec::with_capacity(opts.measures.len());
    for (i, m) in opts.measures.iter().enumerate() {
        let mut acc = vec![0.0; m.names.len()];
        for q in &queries {
            for (a, v) in acc.iter_mut().zip(&q.values[i]) {
                *a += v;
            }
        }
        match m.combine() {
            Combine::Mean => acc.iter_mut().for_each(|a| *a /= n),
            Combine::Geometric => acc.iter_mut().for_each(|a| *a = (*a / n).exp()),
            Combine::Count => acc = vec![n],
            Combine::SumLong | Combine::None | Combine::RunId => {}
        }
        summary.push(acc);
    }
    Ok(TrecReport {
        measures: opts.measures.clone(),
        queries,
        summary: QueryValues { qid: "all".into(), values: summary, relstring: None },
        run_id: run.run_id.clone(),
    })
}
